"""``pramkit swap``: bad input, table-driven (exit 2, one line, inputs unchanged, nothing written), writes
that fail at every step (nothing left behind), and the released file read back by ``estimate``."""

from __future__ import annotations

import errno
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit import atomic
from pramkit import io as pio
from pramkit.cli import main
from pramkit.manifest import Manifest
from pramkit.swap.census import census_households


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    """The census with households, a missing value and a not-applicable code in other columns; bad files."""
    d = tmp_path_factory.mktemp("swap")
    data = census_households(3_000)
    data["income"] = np.where(np.arange(len(data)) % 7 == 0, np.nan, 1000.0)
    data.to_csv(d / "data.csv", index=False)
    data = data.astype({"region": str, "area": str})
    bad = data.copy()
    bad.loc[bad["area"] == bad["area"].iloc[0], "region"] = np.where(
        bad.loc[bad["area"] == bad["area"].iloc[0], "hid"] % 2 == 0, "T1", "T9")
    bad.to_csv(d / "not_nested.csv", index=False)
    moved = data.copy()
    moved.loc[1, "area"] = data["area"].iloc[-1]
    moved.to_csv(d / "moved.csv", index=False)
    assert main(["keygen", str(d / "key")]) == 0
    return d


def swap_args(d: Path, *extra: str, data: str = "data.csv", out: str = "out.csv") -> list[str]:
    return ["swap", str(d / data), "--hid", "hid", "--geo", "region,area", "--similar", "hsize",
            "--out", str(d / out), "--key-file", str(d / "key"), *extra]


CASES = [
    (["--rate", "1.5"], "rate must lie in [0, 1]"),
    (["--rate", "-0.01"], "rate must lie in [0, 1]"),
    (["--rate", "abc"], "invalid float value"),
    (["--risk-vars", "age", "--k", "0"], "at least 1"),
    (["--k", "two"], "invalid int value"),
    (["--risk-vars", "area"], "cannot be a risk"),
    (["--risk-vars", "nope"], "nope"),
    (["--risk-vars", "age", "--manifest", "m.json"], "no matrix is known"),
    (["--chunk-rows", "0"], "chunk_rows"),
]


@pytest.mark.parametrize("extra, message", CASES)
def test_bad_flags(d: Path, capsys, extra: list[str], message: str) -> None:
    before = digests(d)
    extra = [str(d / e) if e.endswith(".json") else e for e in extra]
    code = main(swap_args(d, *extra))
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert digests(d) == before


@pytest.mark.parametrize("argv, message", [
    (lambda d: swap_args(d, data="not_nested.csv"), "is not nested in 'region'"),
    (lambda d: swap_args(d, data="moved.csv"), "lives in more than one area"),
    (lambda d: swap_args(d, data="missing.csv"), "does not exist"),
    (lambda d: swap_args(d, "--force", out="data.csv"), "data.csv"),
    (lambda d: ["swap", str(d / "data.csv"), "--hid", "hid", "--geo", " , ", "--out", str(d / "o.csv")], "at least one level"),
    (lambda d: ["swap", str(d / "data.csv"), "--hid", "hid", "--geo", "region,area", "--similar", "hsize,",
                "--out", str(d / "o.csv"), "--similar", ""], "at least one column"),
])
def test_bad_files(d: Path, capsys, argv, message: str) -> None:
    before = digests(d)
    code = main(argv(d))
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert digests(d) == before


def test_existing_output_needs_force(d: Path, capsys, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("keep me\n")
    code = main([*swap_args(d)[:-4], "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "exists" in err and out.read_text() == "keep me\n"


@pytest.mark.parametrize("point", ["first chunk", "later chunk", "receipt", "manifest", "rename of the release",
                                   "rename of the receipt"])
def test_a_failed_write_leaves_nothing(d: Path, capsys, monkeypatch, tmp_path: Path, point: str) -> None:
    out, manifest = tmp_path / "out.csv", tmp_path / "m.json"
    if point in ("first chunk", "later chunk"):
        n = {"first chunk": 1, "later chunk": 2}[point]
        original, calls = pio.TableWriter._write_chunk, []

        def write_chunk(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == n:
                enospc()
            return original(self, *args, **kwargs)

        monkeypatch.setattr(pio.TableWriter, "_write_chunk", write_chunk)
    elif point in ("receipt", "manifest"):
        original_write = atomic._write_file
        name = "out.csv.receipt.json" if point == "receipt" else "m.json"

        def write_file(path: Path, data: bytes) -> None:
            if path.name.startswith(f".{name}"):
                enospc()
            original_write(path, data)

        monkeypatch.setattr(atomic, "_write_file", write_file)
    else:
        original_commit = atomic._commit
        name = "out.csv" if point == "rename of the release" else "out.csv.receipt.json"

        def commit(tmp: Path, target: Path, **kwargs) -> None:
            if target.name == name:
                enospc()
            original_commit(tmp, target, **kwargs)

        monkeypatch.setattr(atomic, "_commit", commit)
    code = main([*swap_args(d, "--chunk-rows", "100"), "--force", "--out", str(out), "--manifest", str(manifest)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot write" in err, err
    if point == "rename of the receipt":  # the release is renamed first, as for `pramkit apply`
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    else:
        assert list(tmp_path.iterdir()) == []


def test_random_swap_then_estimate_corrects_the_areas(d: Path, capsys, tmp_path: Path) -> None:
    """The manifest's expected matrix, read by `pramkit estimate`: the corrected area counts lie near the
    original counts (within 4.5 standard errors: the errors are per record, the swaps per household), and the
    receipt holds the description of the swap."""
    out, manifest = tmp_path / "out.csv", tmp_path / "m.json"
    assert main([*swap_args(d, "--rate", "0.3", "--json"), "--out", str(out), "--manifest", str(manifest)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["swapped_households"] == 2 * (summary["quota"] - summary["unswappable"]) > 0
    receipt = json.loads((tmp_path / "out.csv.receipt.json").read_text())
    assert receipt["swapping"]["method"] == "random record swapping" and receipt["swapping"]["matrix_known"]
    statement = Manifest.read(manifest).ledger.statement([v.epsilon for v in Manifest.read(manifest).variables])
    assert "did not read the data" not in statement and "households per area" in statement  # the counts it read
    assert main(["estimate", str(out), "--manifest", str(manifest), "--vars", "area", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    est = pd.DataFrame(result["cells"]).set_index("category")
    original = pd.read_csv(d / "data.csv")["area"].value_counts()
    z = (est["estimate"] - original.reindex(est.index).fillna(0)) / est["se"]
    assert np.abs(z).max() < 4.5


def test_targeted_swap_of_the_real_file(capsys, tmp_path: Path) -> None:
    """eusilc (db030 households in db040 regions): the text and JSON summaries, with its ledger words."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    out = tmp_path / "eusilc.parquet"
    code = main(["swap", str(SDC_DATA / "eusilc_laeken.csv"), "--hid", "db030", "--geo", "db040", "--risk-vars",
                 "age,rb090", "--similar", "hsize", "--rate", "0.05", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "targeted record swapping" in text and "no epsilon bounds" in text
    released = pd.read_parquet(out)
    assert released["rb050"].astype(float).equals(pd.read_csv(SDC_DATA / "eusilc_laeken.csv")["rb050"])  # CSV text kept
