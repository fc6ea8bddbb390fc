"""The guarantee on real survey files: no input is ever an output, every crash is one line, mismatches are caught.

Every case runs the command on the sdcMicro files (testdata: integer codes, a household id
``ori_hid``, constant weights; eusilc: missing values, text labels) and checks the same things:
exit status 2, exactly one line on stderr without a traceback, every file of the folder
byte-identical before and after, and no temporary left.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SDC_DATA

import pramkit
from pramkit import _json, atomic
from pramkit import io as pio
from pramkit.cli import build_parser, main
from pramkit.design.classic import randomized_response
from pramkit.engine.receipt import receipt_path
from pramkit.errors import PramkitError, WriteError
from pramkit.estimate import table as etable
from pramkit.manifest import Manifest
from pramkit.risk.household import household_risk, kept_posterior


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def run(args: list, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, folder: Path, before: dict[str, str], message: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("pramkit ") and message in lines[0], lines[0]
    assert digests(folder) == before, "a file was written, changed or removed"
    assert not [p for p in folder.rglob("*") if atomic.TMP_TAG in p.name]


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """testdata with a release, its manifest, a key, a prior, a codebook, rules and a distance file."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("guarantee")
    (d / "data.csv").write_bytes((SDC_DATA / "testdata.csv").read_bytes())
    (d / "eusilc.csv").write_bytes((SDC_DATA / "eusilc_laeken.csv").read_bytes())
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["design", str(d / "data.csv"), "--vars", "roof,walls", "--epsilon", "3", "--method", "rr",
                 "--out", str(d / "m.json"), "--quiet"]) == 0
    assert main(["apply", str(d / "data.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "rel.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    roof = [2, 4, 5, 6, 9]
    pd.DataFrame({"category": roof, "x": roof, "y": 0}).to_csv(d / "dist.csv", index=False)
    pd.DataFrame({"variable": "roof", "category": roof}).to_csv(d / "codebook.csv", index=False)
    pd.DataFrame({"variable": "roof", "category": roof, "frequency": 0.2}).to_csv(d / "prior.csv", index=False)
    pd.DataFrame({"roof": [9], "walls": [9]}).to_csv(d / "rules.csv", index=False)
    data = pd.read_csv(d / "data.csv")
    pq.write_table(pa.table({"roof": data["roof"], "sex": data["sex"],
                             "visits": pa.array([[1, 2]] * len(data)), "address": pa.array([{"n": 1}] * len(data))}),
                   d / "nested.parquet")
    pq.write_table(pa.Table.from_arrays([pa.array(data["roof"]), pa.array(data["walls"]), pa.array(data["sex"])],
                                        names=["roof", "roof", "sex"]), d / "dup.parquet")
    Manifest.of({"visits": randomized_response(["1", "2"], 1.0)}).write(d / "m_visits.json")
    Manifest.of({"address": randomized_response(["1", "2"], 1.0)}).write(d / "m_address.json")
    return d


# ------------------------------------------------------------------ 4. no input is ever an output

def _links(d: Path, target: str) -> list[Path]:
    """The input itself, a symbolic link to it and a hard link to it."""
    sym, hard = d / f"sym-{target}", d / f"hard-{target}"
    if not sym.is_symlink():
        os.symlink(d / target, sym)
    if not hard.exists():
        os.link(d / target, hard)
    return [d / target, sym, hard]


def over_inputs(d: Path) -> list[list]:
    """Every command with an output on each of its inputs (itself, a symlink, a hard link), all with --force."""
    report = ["report", d / "data.csv", "--manifest", d / "m.json", "--released", d / "rel.csv", "--keys",
              "roof,walls,sex", "--sampling-fraction", "0.1", "--distances", "roof=" + str(d / "dist.csv"), "--quiet",
              "--force"]
    design = ["design", d / "data.csv", "--vars", "roof", "--epsilon", "3", "--method", "metric", "--metric-epsilon",
              "0.3", "--distances", d / "dist.csv", "--categories", d / "codebook.csv", "--quiet", "--force"]
    prior = ["design", d / "data.csv", "--vars", "roof", "--epsilon", "3", "--prior", d / "prior.csv",
             "--forbid", d / "rules.csv", "--quiet", "--force"]
    cases = []
    for target in ("data.csv", "m.json", "key"):
        for out in _links(d, target):
            cases.append(["apply", d / "data.csv", "--manifest", d / "m.json", "--key-file", d / "key", "--out", out,
                          "--force", "--quiet"])
    for target in ("data.csv", "dist.csv", "codebook.csv"):
        for out in _links(d, target):
            cases += [design + ["--out", out], design + ["--out", d / "new.json", "--design-record", out]]
    for target in ("prior.csv", "rules.csv"):
        for out in _links(d, target):
            cases.append(prior + ["--out", out])
    for target in ("data.csv", "m.json", "rel.csv", "rel.csv.receipt.json", "dist.csv"):
        for out in _links(d, target):
            cases += [report + ["--out", out], report + ["--public", out]]
    for out in _links(d, "rel.csv"):
        cases.append(["risk", d / "rel.csv", "--keys", "roof,walls", "--sampling-fraction", "0.1", "--manifest",
                      d / "m.json", "--original", d / "data.csv", "--plot", out, "--force"])
    for out in _links(d, "key"):
        cases.append(["demo", "--rows", "1000", "--out", out, "--key-file", d / "key", "--force", "--quiet"])
    return cases


def test_no_output_is_an_input_even_with_force(ws: Path, capsys) -> None:
    cases = over_inputs(ws)
    assert len(cases) > 60
    before = digests(ws)
    for args in cases:
        code, _, err = run(args, capsys)
        assert_refused(code, err, ws, before, "would overwrite the input")


def test_two_outputs_are_never_one_file(ws: Path, capsys) -> None:
    d = ws / "two"
    d.mkdir()
    os.symlink(d / "r.html", d / "r-link.html")
    before = digests(ws)
    for args, message in (
        (["report", ws / "data.csv", "--manifest", ws / "m.json", "--released", ws / "rel.csv", "--keys", "roof",
          "--sampling-fraction", "0.1", "--out", d / "r.html", "--public", d / "r-link.html"], "the same file"),
        (["design", ws / "data.csv", "--vars", "roof", "--epsilon", "3", "--method", "rr", "--out", d / "r.html",
          "--design-record", d / "r-link.html"], "must be different files"),
    ):
        code, _, err = run(args, capsys)
        assert_refused(code, err, ws, before, message)


def test_every_command_that_writes_declares_its_files() -> None:
    parser = build_parser(None)
    for argv in (["apply", "d.csv", "--manifest", "m.json", "--out", "o.csv"], ["design", "d.csv"],
                 ["report", "--manifest", "m.json", "--released", "r.csv"], ["risk", "d.csv", "--keys", "a",
                 "--sampling-fraction", "0.1"], ["demo"], ["keygen", "k"]):
        assert callable(getattr(parser.parse_args(argv), "files", None)), argv[0]


def test_demo_force_removes_only_what_a_demo_wrote(tmp_path: Path, capsys) -> None:
    out = tmp_path / "demo"
    assert run(["demo", "--rows", "1000", "--out", out, "--quiet"], capsys)[0] == 0
    assert run(["demo", "--rows", "1000", "--out", out, "--quiet", "--force"], capsys)[0] == 0  # its own: replaced
    mine = out / "private" / "notes.txt"
    mine.write_text("my notes")
    (out / "public" / "extra").mkdir()
    (out / "mine.csv").write_text("a\n1\n")  # beside the demo's folders: never touched
    before = digests(tmp_path)
    code, _, err = run(["demo", "--rows", "1000", "--out", out, "--quiet", "--force"], capsys)
    assert_refused(code, err, tmp_path, before, "is in the way")
    mine.unlink()
    (out / "public" / "extra").rmdir()
    (out / "private" / "summary.json").unlink()  # no record of what the earlier demo wrote: refused too
    before = digests(tmp_path)
    code, _, err = run(["demo", "--rows", "1000", "--out", out, "--quiet", "--force"], capsys)
    assert_refused(code, err, tmp_path, before, "no earlier demo's private/summary.json")


# ------------------------------------------------------------------ 5. every remaining crash is one line

def crash_cases(d: Path) -> list[tuple[list, str]]:
    """(command line, words of the one line) on the files of ``ws``."""
    m = Manifest.read(d / "m.json").to_json()

    def stated(number: str) -> str:  # the manifest with its record epsilon written as ``number``
        text, n = re.subn(r'"record_epsilon": [0-9.e+-]+', f'"record_epsilon": {number}', m, count=1)
        assert n == 1
        return text

    for name, text in {"big.json": stated("1e999"),
                       "long.json": stated("1" + "0" * 400),
                       "huge.json": stated("1" + "0" * 5000),
                       "deep.json": "[" * 100_000 + "]" * 100_000,
                       "deep2.json": '{"a": ' * 70 + "1" + "}" * 70}.items():
        (d / name).write_text(text)
    cases: list[tuple[list, str]] = []
    for name, words in (("big.json", "too large for a float"), ("long.json", "401 digits"),
                        ("huge.json", "5001 digits"), ("deep.json", "nested more than 64"),
                        ("deep2.json", "nested more than 64")):
        cases += [(["inspect", d / name], words),
                  (["apply", d / "data.csv", "--manifest", d / name, "--out", d / "o.csv"], words),
                  (["estimate", d / "rel.csv", "--manifest", d / name, "--vars", "roof"], words)]
    for column, manifest in (("visits", "m_visits.json"), ("address", "m_address.json")):
        cases += [
            (["design", d / "nested.parquet", "--vars", column, "--epsilon", "2", "--method", "rr",
              "--out", d / "o.json"], f"column {column!r} of"),
            (["apply", d / "nested.parquet", "--manifest", d / manifest, "--out", d / "o.parquet"], "flatten it"),
            (["estimate", d / "nested.parquet", "--manifest", d / manifest, "--vars", column], "flatten it"),
            (["risk", d / "nested.parquet", "--keys", f"roof,{column}", "--sampling-fraction", "0.1"], "flatten it"),
        ]
    cases += [
        (["design", d / "dup.parquet", "--vars", "sex", "--epsilon", "2", "--method", "rr", "--out", d / "o.json"],
         "duplicate column names ['roof']"),
        (["risk", d / "dup.parquet", "--keys", "roof,sex", "--sampling-fraction", "0.1"], "duplicate column names"),
        (["estimate", d / "dup.parquet", "--manifest", d / "m.json", "--vars", "sex"], "duplicate column names"),
        (["apply", d / "dup.parquet", "--manifest", d / "m.json", "--out", d / "o.parquet"], "duplicate column names"),
        (["apply", d / "data.csv", "--manifest", d / "m.json", "--out", d / "o.csv", "--key-file", "/dev/zero"],
         "longer than 64 KiB (or never ends)"),
        (["demo", "--rows", "1000", "--out", d / "demo", "--key-file", "/dev/urandom"], "longer than 64 KiB"),
        (["inspect", "/dev/zero"], "(or never ends)"),
    ]
    return cases


@pytest.mark.parametrize("index", range(30))
def test_every_crash_is_one_line(ws: Path, capsys, monkeypatch, index: int) -> None:
    cases = crash_cases(ws)
    assert len(cases) == 30
    monkeypatch.setattr(_json, "MAX_JSON_BYTES", 2**20)  # /dev/zero: refused after 1 MiB, not 256
    args, words = cases[index]
    before = digests(ws)
    code, _, err = run(args, capsys)
    assert_refused(code, err, ws, before, words)


def test_estimate_refuses_matrices_too_large_for_memory_with_the_figure(ws: Path, capsys, monkeypatch) -> None:
    # roof has 5 categories: 4 copies of a 5 x 5 matrix of 8-byte numbers are 800 bytes
    monkeypatch.setattr(etable, "MAX_MATRIX_BYTES", 799)
    before = digests(ws)
    code, _, err = run(["estimate", ws / "rel.csv", "--manifest", ws / "m.json", "--vars", "roof"], capsys)
    assert_refused(code, err, ws, before, "needs its 5 x 5 matrix dense, about 8e-07 GB (4 copies of 2e-07 GB)")
    monkeypatch.setattr(etable, "MAX_MATRIX_BYTES", 800)
    assert run(["estimate", ws / "rel.csv", "--manifest", ws / "m.json", "--vars", "roof"], capsys)[0] == 0


def test_recognition_design_prints_its_text(ws: Path, capsys) -> None:
    out = ws / "recognition"
    out.mkdir()
    code, text, err = run(["design", ws / "data.csv", "--keys", "roof,walls,water", "--recognition", "0.9",
                           "--out", out / "m.json", "--quiet"], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert text.splitlines()[0].startswith("roof*walls*water: epsilon = inf")
    assert sorted(p.name for p in out.iterdir()) == ["m.design-record.json", "m.json"]


@pytest.mark.parametrize("fmt, labels, words", [
    ("spss", {"column_labels": {"roof": "R" * 257}}, "has 257 bytes; an SPSS file holds at most 256"),
    ("spss", {"variable_value_labels": {"roof": {2: "é" * 61}}}, "has 122 bytes; an SPSS file holds at most 120"),
    ("stata", {"column_labels": {"roof": "é" * 81}}, "has 81 characters; a Stata file holds at most 80"),
    ("stata", {"variable_value_labels": {"roof": {2: "x" * 32_001}}}, "at most 32000"),
])
def test_stata_and_spss_labels_too_long_are_an_error(ws: Path, fmt: str, labels: dict, words: str) -> None:
    """The writers cut such labels short (SPSS, Stata value labels) or fail naming no column: refused first."""
    out = ws / ("labels.sav" if fmt == "spss" else "labels.dta")
    frame = pd.read_csv(ws / "data.csv")[["roof", "walls"]]
    before = digests(ws)
    with pytest.raises(WriteError, match=words):
        with pio.TableWriter(out, meta=pio.TableMeta(fmt, ["roof", "walls"], labels=labels)) as writer:
            writer.write(pa.Table.from_pandas(frame, preserve_index=False))
    assert digests(ws) == before and not out.exists()
    shorter = {k: {c: (v[:10] if isinstance(v, str) else {x: t[:10] for x, t in v.items()}) for c, v in d.items()}
               for k, d in labels.items()}
    with pio.TableWriter(out, meta=pio.TableMeta(fmt, ["roof", "walls"], labels=shorter)) as writer:
        writer.write(pa.Table.from_pandas(frame, preserve_index=False))
    assert pio.read_table(out)["roof"].tolist() == frame["roof"].tolist()  # a full column, not an empty one
    out.unlink()


# ------------------------------------------------------------------ 6. mismatches caught

def test_public_report_refuses_the_original_as_the_release(ws: Path, capsys) -> None:
    before = digests(ws)
    code, _, err = run(["report", "--manifest", ws / "m.json", "--released", ws / "data.csv", "--public",
                        ws / "p.html"], capsys)
    assert_refused(code, err, ws, before, f"cannot tell that {str(ws / 'data.csv')!r} is a release")
    copy = ws / "copy" / "rel.csv"  # the release's receipt beside the original: its digest tells them apart
    copy.parent.mkdir()
    copy.write_bytes((ws / "data.csv").read_bytes())
    receipt_path(copy).write_bytes(receipt_path(ws / "rel.csv").read_bytes())
    before = digests(ws)
    code, _, err = run(["report", "--manifest", ws / "m.json", "--released", copy, "--public", ws / "p.html"], capsys)
    assert_refused(code, err, ws, before, "has changed since its receipt")
    code, out, _ = run(["report", "--manifest", ws / "m.json", "--released", ws / "rel.csv", "--public",
                        ws / "copy" / "p.html", "--quiet"], capsys)
    assert code == 0 and out.strip().endswith("(public: may be published)")


def test_estimate_table_checks_the_manifest_of_a_frame_and_of_a_file(ws: Path) -> None:
    eusilc = pd.read_csv(ws / "eusilc.csv")
    manifest = Manifest.of({"db040": randomized_response(sorted(eusilc["db040"].unique()), 2.0)})
    other = Manifest.of({"db040": randomized_response(sorted(eusilc["db040"].unique()), 3.0)})
    released = pramkit.perturb_frame(eusilc, manifest, key=bytes(32)).data
    right = pramkit.estimate_table(released[["db040", "rb090"]], manifest, "db040", by="rb090")
    assert right.table.n == len(eusilc)
    with pytest.raises(PramkitError, match="released with another manifest"):
        pramkit.estimate_table(released, other, "db040")
    with pytest.raises(PramkitError, match="released with another manifest"):  # a file, by its receipt
        pramkit.estimate_table(ws / "rel.csv", Manifest.of({"roof": randomized_response([2, 4, 5, 6, 9], 1.0)}),
                               "roof")
    with pytest.warns(pramkit.engine.receipt.ReceiptWarning, match="no release receipt"):
        pramkit.estimate_table(ws / "data.csv", Manifest.read(ws / "m.json"), "roof")


def test_kept_posterior_against_the_perturbation(ws: Path) -> None:
    """P(X = j | Z = j) from the release alone, against the share of released j that are j in a real perturbation."""
    eusilc = pd.read_csv(ws / "eusilc.csv")
    regions = sorted(eusilc["db040"].unique())
    manifest = Manifest.of({"db040": randomized_response(regions, 2.0)})
    released = pramkit.perturb_frame(eusilc, manifest, key=bytes(range(32))).data["db040"]
    counts = released.value_counts().reindex(regions).to_numpy(float)
    post = kept_posterior(manifest["db040"].matrix, counts)
    truth = [(eusilc["db040"][released == r] == r).mean() for r in regions]
    n = counts
    se = np.sqrt(np.array(truth) * (1 - np.array(truth)) / n)
    assert np.all(np.abs(post - truth) < 4 * se + 0.03), (post, truth)


def test_household_risk_after_pram(ws: Path, capsys) -> None:
    data = pd.read_csv(ws / "rel.csv")
    keys = ["roof", "walls", "sex", "urbrur"]
    before = household_risk(data, keys, "ori_hid", sampling_fraction=0.1)
    identity = Manifest.of({"roof": pramkit.PramMatrix(np.eye(5), (2, 4, 5, 6, 9))})
    same = household_risk(data, keys, "ori_hid", sampling_fraction=0.1, manifest=identity)
    np.testing.assert_allclose(same.per_record["household_risk"], before.per_record["household_risk"], rtol=1e-12)
    after = household_risk(ws / "rel.csv", keys, "ori_hid", sampling_fraction=0.1, manifest=Manifest.read(ws / "m.json"))
    assert after.perturbed == ("roof", "walls")
    assert (after.per_record["individual_risk"] <= before.per_record["individual_risk"] + 1e-15).all()
    assert after.household_expected_reidentifications < before.household_expected_reidentifications
    code, out, err = run(["risk", ws / "rel.csv", "--keys", ",".join(keys), "--sampling-fraction", "0.1",
                          "--household", "ori_hid", "--manifest", ws / "m.json"], capsys)
    assert code == 0 and err == "", err
    assert "perturbed keys: roof, walls (risks after PRAM" in out
    assert f"{after.household_expected_reidentifications:.4f}" in out
