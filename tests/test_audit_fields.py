"""Every published field is declared and checked (issue 61): each field of every public file pramkit writes,
forged in turn, fails the audit with its name; a field no declaration names fails; every correct release
passes, with missing codes; docs/audit.md lists the declarations.

The data: EU-SILC (the shared sdcMicro file), economic status and citizenship with ``-9`` written for
missing, released by PRAM (plain, shuffled with a central epsilon, stratified, joint, derived from the
release, resampled), by synthesis and by local suppression; sdcMicro's testdata households for a random
swap.  The releases are made once for the module (through the command line, in this process) and every
forgery is audited by the library function; a few command-line runs check the exit codes.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.audit import audit
from pramkit.audit.fields import FILES, PublicField, path_text, walk
from pramkit.cli import main
from pramkit.io import sha256_of
from pramkit.methods import field_table

KEY = bytes(range(32))
ROWS = 2_000


def _cli(*args: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _ok(*args: Any) -> None:
    code, out, err = _cli(*args, "--quiet")
    assert code == 0, out + err


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Any]:
    """One release of every kind, each with its public files, made once."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("fields")
    raw = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str).head(ROWS)
    frame = raw[["db040", "rb090", "hsize", "pl030", "pb220a"]].copy()
    frame["age"] = pd.cut(raw["age"].astype(int), [-1, 17, 34, 54, 74, 200],
                          labels=["0-17", "18-34", "35-54", "55-74", "75+"]).astype(str)
    frame["pl030"] = frame["pl030"].fillna("-9")
    frame["pb220a"] = frame["pb220a"].fillna("-9")
    frame.to_csv(d / "o.csv", index=False)
    key = d / "k.key"
    key.write_text(KEY.hex())
    key.chmod(0o600)
    na = ("--na-values", "-9")
    design = ("--method", "dp", "--key-file", key, *na)
    _ok("design", d / "o.csv", "--vars", "pl030,pb220a,age", "--epsilon", "3", *design, "--out", d / "m.json")
    _ok("apply", d / "o.csv", "--manifest", d / "m.json", "--out", d / "r.csv", "--key-file", key, *na)
    _ok("apply", d / "o.csv", "--manifest", d / "m.json", "--out", d / "s.csv", "--key-file", key, *na, "--shuffle",
        "--public-columns", "db040,rb090,hsize")
    _ok("design", d / "o.csv", "--vars", "pl030,age", "--strata", "rb090", "--epsilon", "3", *design,
        "--out", d / "st.json")
    _ok("apply", d / "o.csv", "--manifest", d / "st.json", "--out", d / "str.csv", "--key-file", key, *na)
    _ok("design", d / "o.csv", "--vars", "pl030,age", "--split", "joint", "--epsilon", "3", *design,
        "--out", d / "j.json")
    _ok("apply", d / "o.csv", "--manifest", d / "j.json", "--out", d / "jr.csv", "--key-file", key, *na)
    _ok("design", "--derive-from", d / "m.json", "--epsilon", "1", "--out", d / "d.json")
    _ok("apply", d / "r.csv", "--manifest", d / "d.json", "--out", d / "dr.csv", "--key-file", key, *na)
    _ok("resample", d / "r.csv", "--manifest", d / "m.json", "--out", d / "rs.csv", "--key-file", key, *na)
    _ok("synthesize", d / "o.csv", "--vars", "pl030,age", "--public", "db040,rb090", "--epsilon", "2",
        "--out", d / "syn.parquet", "--key-file", key, *na)
    households = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)
    households["area"] = households["urbrur"] + "-" + households["roof"]  # nested in urbrur
    households.to_csv(d / "households.csv", index=False)
    code, out, err = _cli("swap", d / "households.csv", "--hid", "ori_hid", "--geo", "urbrur,area", "--rate", "0.1",
                          "--out", d / "sw.csv", "--manifest", d / "sw.json", "--key-file", key)
    assert code == 0, out + err
    _ok("suppress", d / "o.csv", "--keys", "db040,rb090,age", "--k", "3", "--out", d / "sup.csv", *na)
    _ok("new-ids", d / "households.csv", "--id", "ori_hid", "--key-file", key, "--out", d / "ni.csv")
    _ok("design", d / "sup.csv", "--vars", "age,pl030", "--epsilon", "3", *design, "--suppressed-by",
        d / "sup.csv.suppression.json", "--out", d / "supm.json")
    _ok("apply", d / "sup.csv", "--manifest", d / "supm.json", "--out", d / "supr.csv", "--key-file", key, *na)
    return {"dir": d, "key": key}


#: Each release: (its public file forged, its kind, the audit's inputs as names of files in the folder).
CASES = {
    "plain manifest": ("m.json", "manifest", {"manifest": "m.json", "released": "r.csv", "original": "o.csv"}),
    "receipt": ("r.csv.receipt.json", "receipt", {"manifest": "m.json", "released": "r.csv", "original": "o.csv"}),
    "shuffled receipt": ("s.csv.receipt.json", "receipt",
                         {"manifest": "m.json", "released": "s.csv", "original": "o.csv"}),
    "stratified manifest": ("st.json", "manifest", {"manifest": "st.json", "released": "str.csv", "original": "o.csv"}),
    "joint manifest": ("j.json", "manifest", {"manifest": "j.json", "released": "jr.csv", "original": "o.csv"}),
    "derived manifest": ("d.json", "manifest", {"manifest": "d.json", "released": "dr.csv", "original": "r.csv"}),
    "derived receipt": ("dr.csv.receipt.json", "receipt",
                        {"manifest": "d.json", "released": "dr.csv", "original": "r.csv"}),
    "resample receipt": ("rs.csv.receipt.json", "resample receipt",
                         {"manifest": "m.json", "released": "rs.csv", "original": "o.csv"}),
    "synthesis manifest": ("syn.synthesis.json", "synthesis manifest",
                           {"manifest": "syn.synthesis.json", "released": "syn.parquet", "original": "o.csv"}),
    "swap manifest": ("sw.json", "manifest", {"manifest": "sw.json", "released": "sw.csv", "original": "households.csv"}),
    "swap receipt": ("sw.csv.receipt.json", "receipt",
                     {"manifest": "sw.json", "released": "sw.csv", "original": "households.csv"}),
    "suppressed manifest": ("supm.json", "manifest",
                            {"manifest": "supm.json", "released": "supr.csv", "original": "sup.csv"}),
    "new-ids receipt": ("ni.csv.new-ids.json", "new-ids receipt",
                        {"manifest": "ni.csv.new-ids.json", "released": "ni.csv", "original": "households.csv"}),
    "suppression receipt": ("sup.csv.suppression.json", "suppression receipt",
                            {"manifest": "sup.csv.suppression.json", "released": "sup.csv", "original": "o.csv"}),
}


def _inputs(releases: dict[str, Any], case: str, rederived: bool = True) -> dict[str, Any]:
    d = releases["dir"]
    files = {k: d / v for k, v in CASES[case][2].items()}
    if not rederived:
        files.pop("original")
        return files
    return {**files, "key": releases["key"]}


# ------------------------------------------------------------------ forging a field

_HEX = re.compile(r"[0-9a-f]{64}")
#: Fields whose generic forgery would be another true statement: forged by a value that is not.
SPECIFIC = {
    "dual_y": lambda v: [0.0] * len(v),                 # any feasible dual proves the bound: zeros do not
    "data_dependent": lambda v: [],                     # the issue's forgery: emptied
    "statement": lambda v: "Changing one person's record changes the probability by at most e^1 = 54.6.",
    "guarantee": lambda v: "Post-processing: e^1 = 54.6.",
    "na_values": lambda v: [] if v else ["-9"],
}


def forged(value: Any, name: str | int) -> Any:
    """A plausible other value of the same type (a number halved or moved, a text or list changed, a
    digest zeroed), or the field's specific forgery."""
    if isinstance(name, str) and name in SPECIFIC:
        return SPECIFIC[name](value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 3
    if isinstance(value, float):
        return value * 0.5 if abs(value) > 1e-6 else (0.0 if value else 0.25)
    if isinstance(value, str):
        return "0" * 64 if _HEX.fullmatch(value) else (1.0 if value == "inf" else value + "x")
    if value is None:
        return 0.5
    if isinstance(value, list):
        if not value:
            return ["x"]
        if len(value) > 1 and not isinstance(value[0], (list, dict)) and value[0] != value[1]:
            return [value[1], value[0], *value[2:]]
        return [forged(value[0], 0), *value[1:]]
    first = next(iter(value), None)
    return {"x": 1} if first is None else {**value, first: forged(value[first], first)}


def _put(doc: Any, at: tuple, value: Any) -> None:
    for c in at[:-1]:
        doc = doc[c]
    doc[at[-1]] = value


_REFUSED = re.compile(r"refuses this manifest \(Manifest.read\): field '([^']+)'")


def named(path: str, text: str) -> bool:
    """The forged field is named: by its path, or, when every reader refuses the manifest, the field the
    refusal names is it, the object holding it, or another field of the same variable (two fields that
    disagree: the reader cannot know which was forged)."""
    if path in text:
        return True
    owner = re.match(r"variables\[\d+\]", path)
    return any(path.startswith(q) or (owner is not None and q.startswith(owner.group(0)))
               for q in _REFUSED.findall(text))


def _one_per_pattern(raw: Any, kind: str, seen: set[str] | None = None) -> list[tuple[PublicField, tuple, Any]]:
    """Every declared field of a file that is not free text, the first instance of each pattern not ``seen``
    (``seen`` is updated)."""
    seen = set() if seen is None else seen
    out = []
    for field, at, value in walk(raw, FILES[kind])[0]:
        if field.kind != "free_text" and field.path not in seen:
            seen.add(field.path)
            out.append((field, at, value))
    return out


def forgeries_escaping(manifest: Path, inputs: dict[str, Any], kind: str = "synthesis manifest",
                       extra: Sequence[tuple] = (), with_all: Sequence[tuple] = ()) -> tuple[list[str], list[str]]:
    """Each recomputed field of the file at ``manifest`` forged in turn (one per pattern, then the paths
    ``extra``), the file audited with ``inputs`` (its manifest and released file only; all of ``inputs`` for the
    paths ``with_all``), and restored: the paths tried, and those whose forgery passed or was not named."""
    kept = manifest.read_bytes()
    plain = {"manifest": manifest, "released": inputs["released"]}
    targets = [at for field, at, _ in _one_per_pattern(json.loads(kept), kind) if field.kind == "recomputed"]
    escaped, tried = [], []
    try:
        for at in [*targets, *extra]:
            raw = json.loads(kept)
            value: Any = raw
            for step in at:
                value = value[step]
            _put(raw, at, forged(value, at[-1]))
            manifest.write_text(json.dumps(raw, indent=1))
            result = audit(**(inputs if at in with_all else plain))
            tried.append(path_text(at))
            if result.passed or not named(path_text(at), "\n".join(c.line() for c in result.checks)):
                escaped.append(path_text(at))
    finally:
        manifest.write_bytes(kept)
    return tried, escaped


@pytest.fixture(scope="module")
def assigned(releases) -> dict[str, list[tuple[PublicField, tuple, Any]]]:
    """Each declared pattern forged once per kind of file: in the first release (in :data:`CASES` order) that
    writes it, so that the releases together forge every pattern any of them writes."""
    seen: dict[str, set[str]] = {}
    return {case: _one_per_pattern(json.loads((releases["dir"] / target).read_text()), kind,
                                   seen.setdefault(kind, set()))
            for case, (target, kind, _) in CASES.items()}


def _forged_audit(releases: dict[str, Any], case: str, field: PublicField, at: tuple, value: Any) -> tuple[bool, str]:
    """Audit the release with one field forged (the manifest forged with its receipt rewritten to name it,
    as a forger holding both would); the files are restored afterwards."""
    target_name, kind, files = CASES[case]
    d = releases["dir"]
    target = d / target_name
    receipt = d / (files["released"] + ".receipt.json")
    kept = {p: p.read_bytes() for p in (target, receipt) if p.exists()}
    try:
        raw = json.loads(kept[target])
        _put(raw, at, forged(value, at[-1]))
        target.write_text(json.dumps(raw, indent=1))
        if kind == "manifest" and receipt.exists():
            stated = json.loads(kept[receipt])
            stated["manifest_sha256"] = stated["manifest_content_sha256"] = sha256_of(target)
            receipt.write_text(json.dumps(stated, indent=1))
        result = audit(**_inputs(releases, case, rederived=field.kind == "rederived"))
        return result.passed, "\n".join(c.line() for c in result.checks)
    finally:
        for p, b in kept.items():
            p.write_bytes(b)


#: Forgeries that change nothing the release depends on, so that no audit can see them: a random swap
#: reads missing codes only in its household and geography columns, and testdata has none.
UNDETECTABLE = {("swap manifest", "input.na_values")}


@pytest.mark.parametrize("case", list(CASES))
def test_every_forged_field_fails_with_its_name(releases, assigned, case):
    escaped = []
    for field, at, value in assigned[case]:
        if (case, field.path) in UNDETECTABLE:
            continue
        passed, text = _forged_audit(releases, case, field, at, value)
        if passed or not named(path_text(at), text):
            escaped.append(f"{path_text(at)} ({field.check}): {'passed' if passed else 'not named'}")
    assert not escaped, escaped


def test_a_forged_field_of_no_consequence_is_listed(releases):
    """The one forgery left out above is one the release does not depend on: the release made again with the
    forged missing codes is the released file (so that the exception is what it says)."""
    (case, path), = UNDETECTABLE
    raw = json.loads((releases["dir"] / CASES[case][0]).read_text())
    field, at, value = next(x for x in _one_per_pattern(raw, CASES[case][1]) if x[0].path == path)
    assert (field, at, value) in _assigned_somewhere(releases, field.path)
    passed, text = _forged_audit(releases, case, field, at, value)
    assert passed and "the key reproduces the swap byte for byte" in text


def _assigned_somewhere(releases: dict[str, Any], path: str) -> list[tuple[PublicField, tuple, Any]]:
    return [x for case, (target, kind, _) in CASES.items()
            for x in _one_per_pattern(json.loads((releases["dir"] / target).read_text()), kind) if x[0].path == path]


def test_every_pattern_written_is_forged(releases, assigned):
    """The forgery loop covers every declared pattern that some release writes, per kind of file."""
    for kind in FILES:
        written = {f.path for case, (target, k, _) in CASES.items() if k == kind
                   for f, _, _ in _one_per_pattern(json.loads((releases["dir"] / target).read_text()), kind)}
        forged_paths = {f.path for case, (_, k, _) in CASES.items() if k == kind for f, _, _ in assigned[case]}
        assert written == forged_paths and written, kind


# ------------------------------------------------------------------ every field the writers emit is declared

@pytest.mark.parametrize("case", list(CASES))
def test_every_field_written_is_declared(releases, case):
    target, kind, _ = CASES[case]
    found, undeclared = walk(json.loads((releases["dir"] / target).read_text()), FILES[kind])
    assert undeclared == [] and found


@pytest.mark.parametrize("case", list(CASES))
def test_every_public_file_validates_against_its_installed_schema(releases, case):
    """The schemas made from the declarations (pramkit/schemas/public) hold every file of every release kind, and
    refuse a field no declaration names, at the top and inside."""
    jsonschema = pytest.importorskip("jsonschema")
    from pramkit.methods import installed_schema

    target, kind, _ = CASES[case]
    raw = json.loads((releases["dir"] / target).read_text())
    schema = installed_schema(kind)
    jsonschema.validate(raw, schema)
    with pytest.raises(jsonschema.ValidationError, match="'note' was unexpected"):
        jsonschema.validate({**raw, "note": 1}, schema)
    inner = next((k for k, v in raw.items() if isinstance(v, dict) and v  # an object whose fields are named
                  and {p.parts[1] for p in FILES[kind] if p.parts[0] == k and len(p.parts) > 1} - {"*", "[*]"}
                  and not any(p.parts[:2] == (k, "*") for p in FILES[kind])), None)
    if inner is not None:
        with pytest.raises(jsonschema.ValidationError, match="'note' was unexpected"):
            jsonschema.validate({**raw, inner: {**raw[inner], "note": 1}}, schema)


def test_an_undeclared_field_fails_named(releases, tmp_path):
    d = releases["dir"]
    raw = json.loads((d / "m.json").read_text())
    raw["ledger"]["note"] = "epsilon 0.1"
    (tmp_path / "m.json").write_text(json.dumps(raw))
    code, out, err = _cli("audit", "--manifest", tmp_path / "m.json")
    assert code == 1 and err == "" and "FAIL  manifest  manifest: ledger.note: a field no declaration" in out


def test_each_declaration_names_a_check_and_a_kind():
    from pramkit.audit.declared import CHECKS

    fields = [f for fs in FILES.values() for f in fs]
    assert {f.kind for f in fields} == {"recomputed", "rederived", "free_text"}
    assert all(f.check in CHECKS for f in fields if f.kind != "free_text")
    for fs in FILES.values():  # declared once per file
        assert len({f.path for f in fs}) == len(fs)


# ------------------------------------------------------------------ correct releases pass

@pytest.mark.parametrize("case", sorted({c for c in CASES if "receipt" not in c or c == "resample receipt"}))
def test_a_correct_release_passes(releases, case):
    result = audit(**_inputs(releases, case))
    assert result.passed, [c.line() for c in result.failures]
    assert any(c.field == "declared fields" for c in result.checks)


def test_the_command_line_passes_a_derived_release_of_a_file_with_missing_codes(releases):
    """design --derive-from records no missing codes: the audit reads its parent's (and takes --na-values)."""
    d = releases["dir"]
    for extra in ((), ("--na-values", "-9")):
        code, out, err = _cli("audit", "--manifest", d / "d.json", "--released", d / "dr.csv", "--original",
                              d / "r.csv", "--key-file", releases["key"], *extra)
        assert code == 0 and err == "", out + err


def test_a_resampled_file_is_audited_as_post_processing(releases):
    d = releases["dir"]
    code, out, err = _cli("audit", "--manifest", d / "m.json", "--released", d / "rs.csv", "--original", d / "o.csv")
    assert code == 0, out + err
    assert "rs.csv is post-processing (resample) of the release r.csv" in out
    assert "transition table" in out  # of the release, r.csv
    # the release it names, changed: the chain breaks
    kept = (d / "r.csv").read_bytes()
    try:
        (d / "r.csv").write_bytes(kept.replace(b"Tyrol", b"Tirol", 1))
        code, out, _ = _cli("audit", "--manifest", d / "m.json", "--released", d / "rs.csv")
        assert code == 1 and "post_processing.release_sha256" in out
    finally:
        (d / "r.csv").write_bytes(kept)


def test_the_synthesis_manifest_records_its_missing_codes(releases):
    raw = json.loads((releases["dir"] / "syn.synthesis.json").read_text())
    assert raw["na_values"] == ["-9"]
    assert None in raw["variables"]["pl030"]["categories"]  # -9 read as missing: a category of its own


# ------------------------------------------------------------------ the issue's forgeries, through the command line

def _synthesis_exact_table(d: Path, raw: dict) -> list[list[int]]:
    """The exact table pl030 x age of the original, in the manifest's categories (missing: None), by pandas."""
    frame = pd.read_csv(d / "o.csv", dtype=str, na_values=["-9"], keep_default_na=False)
    rows, cols = (raw["variables"][v]["categories"] for v in ("pl030", "age"))
    counts = frame.groupby(["pl030", "age"], dropna=False).size()
    key = {(None if pd.isna(a) else a, None if pd.isna(b) else b): n for (a, b), n in counts.items()}
    return [[int(key.get((a, b), 0)) for b in cols] for a in rows]


def _issue_forgeries(d: Path) -> dict[str, tuple[str, Any, str, bool]]:
    """Each forgery: (file, how, the field named, with the original and key)."""
    def shuffled(r: dict) -> None:
        r["guarantees"]["shuffled_epsilon"] = 0.1

    def exact(r: dict) -> None:
        r["measurements"][2]["noisy"] = _synthesis_exact_table(d, r)

    def plus(n: int) -> Any:
        def f(r: dict) -> None:
            r["measurements"][0]["noisy"][0][0] += n
        return f

    return {
        "central epsilon": ("s.csv.receipt.json", shuffled, "guarantees.shuffled_epsilon", False),
        "exact table": ("syn.synthesis.json", exact, "measurements[2].noisy", True),
        "noisy cell +3": ("syn.synthesis.json", plus(3), "measurements[0].noisy", True),
        "noisy cell +40": ("syn.synthesis.json", plus(40), "measurements[0].noisy", True),
        "table epsilon halved": ("syn.synthesis.json", lambda r: r["measurements"][1].update(
            epsilon=r["measurements"][1]["epsilon"] / 2), "measurements[1].epsilon", False),
        "resample guarantee": ("rs.csv.receipt.json", lambda r: r["post_processing"].update(
            guarantee="e^1 = 54.6"), "post_processing.guarantee", False),
        "resample epsilon": ("rs.csv.receipt.json", lambda r: r["post_processing"].update(record_epsilon=1.0),
                             "post_processing.record_epsilon", False),
        "ledger sentence": ("m.json", lambda r: r["ledger"].update(statement="e^1 = 54.6"), "ledger.statement",
                            False),
        "data_dependent emptied": ("m.json", lambda r: r["ledger"].update(data_dependent=[]),
                                   "ledger.data_dependent", False),
        "covers everything": ("m.json", lambda r: r["ledger"].update(covers_everything_published=True),
                              "ledger.covers_everything_published", False),
        "facts": ("m.json", lambda r: r["ledger"].update(released_exactly_facts=[]),
                  "ledger.released_exactly_facts", False),
        "min_diagonal": ("m.json", lambda r: r["variables"][0].update(min_diagonal=0.9), "variables[0].min_diagonal",
                         False),
        "bistochastic": ("j.json", lambda r: r["variables"][0].update(bistochastic=not r["variables"][0]["bistochastic"]),
                         "variables[0].bistochastic", False),
        "manifest digest": ("r.csv.receipt.json", lambda r: r.update(manifest_content_sha256="0" * 64),
                            "manifest_content_sha256", False),
        "public columns": ("syn.synthesis.json", lambda r: r["public"].update(columns=["rb090"]), "public.columns",
                           True),
        "rows": ("syn.synthesis.json", lambda r: r.update(rows=r["rows"] + 1), "rows", False),
        "version": ("syn.synthesis.json", lambda r: r.update(version=2), "version", False),
        "swap rate": ("sw.json", lambda r: r["swapping"].update(rate=0.05), "swapping.rate", True),
    }


ISSUE = ["central epsilon", "exact table", "noisy cell +3", "noisy cell +40", "table epsilon halved",
         "resample guarantee", "resample epsilon", "ledger sentence", "data_dependent emptied", "covers everything",
         "facts", "min_diagonal", "bistochastic", "manifest digest", "public columns", "rows", "version", "swap rate"]


@pytest.mark.parametrize("name", ISSUE)
def test_the_issue_forgeries_fail_through_the_command_line(releases, name):
    d = releases["dir"]
    target, forge, field, keyed = _issue_forgeries(d)[name]
    case = next(c for c, (t, _, _) in CASES.items() if t == target)
    files = _inputs(releases, case, rederived=keyed)
    kept = (d / target).read_bytes()
    try:
        raw = json.loads(kept)
        forge(raw)
        (d / target).write_text(json.dumps(raw, indent=1))
        args = [x for k, v in files.items() for x in (f"--{k.replace('key', 'key-file')}", v)]
        code, out, err = _cli("audit", *args)
    finally:
        (d / target).write_bytes(kept)
    assert code == 1 and err == "", out + err
    assert field in out


def test_a_forged_field_the_reader_refuses_exits_1_with_or_without_the_original(releases, tmp_path):
    """q no longer beside its w (rows that do not sum to one): every other command refuses the manifest;
    the audit fails it, naming the field, exit 1 (it was 2 with --original)."""
    d = releases["dir"]
    raw = json.loads((d / "m.json").read_text())
    raw["variables"][0]["q"][0] = 0.9
    (tmp_path / "m.json").write_text(json.dumps(raw))
    for extra in ((), ("--released", d / "r.csv", "--original", d / "o.csv", "--key-file", releases["key"])):
        code, out, err = _cli("audit", "--manifest", tmp_path / "m.json", *extra)
        assert code == 1 and err == "", out + err
        assert "variables[0]" in out


def test_a_receipt_no_reader_takes_fails_named(releases, tmp_path):
    d = releases["dir"]
    (tmp_path / "r.csv").write_bytes((d / "r.csv").read_bytes())
    raw = json.loads((d / "r.csv.receipt.json").read_text())
    raw["format"] = "pramkit-release-receiptx"
    (tmp_path / "r.csv.receipt.json").write_text(json.dumps(raw))
    code, out, err = _cli("audit", "--manifest", d / "m.json", "--released", tmp_path / "r.csv")
    assert code == 1 and err == "" and "receipt: format:" in out


# ------------------------------------------------------------------ the documentation

def test_docs_list_every_declared_field():
    """docs/audit.md holds the table the declarations render (so it cannot drift from them)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text(encoding="utf-8")
    table = field_table()
    assert table in text
    assert all(f"`{f.path}`" in table for fs in FILES.values() for f in fs)


def test_the_forgery_changes_the_value():
    """The forgery used above changes every kind of JSON value (a test that forged nothing would pass)."""
    for value in (True, 3, 0.5, 1e-14, 0.0, "abc", "0" * 63 + "1", "inf", None, [], [1, 2], [[1, 2]], {"a": 1},
                  {}, ["only sentence here"]):
        assert forged(copy.deepcopy(value), "x") != value


# ------------------------------------------------------------------ the walk, against a scan of every pattern

def _scan(raw: Any, declared: tuple[PublicField, ...]) -> tuple[list, list[str]]:
    """The walk's rule by brute force: at each path, every pattern is tried in turn (a pattern covers a path when
    it has as many segments and each is the key, ``*`` for a key, ``[*]`` for an index)."""
    def covers(parts: tuple[str, ...], at: tuple) -> bool:
        return len(parts) == len(at) and all(
            (p == "[*]" and isinstance(c, int)) or (p == "*" and isinstance(c, str)) or p == c
            for p, c in zip(parts, at))

    def inside(at: tuple, index: bool = False) -> bool:
        return any(len(f.parts) > len(at) and covers(f.parts[:len(at)], at)
                   and (not index or f.parts[len(at)] == "[*]") for f in declared)

    found: list = []
    undeclared: list[str] = []

    def visit(value: Any, at: tuple) -> None:
        hits = [f for f in declared if covers(f.parts, at)]
        if hits and not (isinstance(value, dict) and value and inside(at)):
            found.append((hits[0], at, value))
        elif isinstance(value, dict) and value:
            for k, v in value.items():
                visit(v, (*at, str(k)))
        elif isinstance(value, list) and value and inside(at, index=True):
            for i, v in enumerate(value):
                visit(v, (*at, i))
        elif not (isinstance(value, (dict, list)) and not value and inside(at)):
            undeclared.append(path_text(at))

    for k, v in raw.items():
        visit(v, (str(k),))
    return found, undeclared


@pytest.mark.parametrize("case", list(CASES))
def test_the_walk_finds_what_a_scan_of_every_pattern_finds(releases, case):
    """The walk over the tree of patterns gives the fields, values and undeclared paths that trying every
    pattern at every path gives, on each kind of real release, and with its declarations in reverse order
    (where two patterns cover a path, the first declared wins in both)."""
    target, kind, _ = CASES[case]
    raw = json.loads((releases["dir"] / target).read_text())
    for declared in (tuple(FILES[kind]), tuple(reversed(FILES[kind])), tuple(FILES[kind])[::3]):
        assert walk(raw, declared) == _scan(raw, declared), (case, len(declared))


_SEGMENTS = st.sampled_from(["a", "b", "*", "[*]", "0"])
_JSON = st.recursive(st.none() | st.integers(-3, 3) | st.text("ab", max_size=2),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(["a", "b", "0", "*", "[*]"]), inner, max_size=3),
                     max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(st.lists(_SEGMENTS, min_size=1, max_size=4), max_size=6),
       raw=st.dictionaries(st.sampled_from(["a", "b", "0", "*"]), _JSON, max_size=3))
def test_the_walk_agrees_with_the_scan_on_any_document(patterns, raw):
    """Any patterns (keys, ``*``, ``[*]``, keys that look like either) over any document: the same fields in the
    same order, the same values and the same undeclared paths as the scan."""
    declared = tuple(PublicField(".".join(p).replace(".[*]", "[*]"), "recomputed", f"check {i}", "")
                     for i, p in enumerate(patterns) if p[0] != "[*]")  # the same pattern twice: two fields
    assert walk(raw, declared) == _scan(raw, declared)
