"""The release audit reads the two files in chunks side by side: its findings do not depend on the chunks.

Each release below is audited with chunks of 7 and of 1 000 rows and as one chunk; the checks (their
verdicts, rows, messages and data) must be the same.  The faults are placed so that chunks cut through
them: a household whose first member is in one chunk and the member who disagrees in the next, rows
reordered and moves into zero cells on both sides of chunk boundaries, more faulty rows than a check
lists.  Both Parquet (chunks of exactly the rows asked) and CSV (chunks cut by bytes, not aligned
between the two files) are read.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pramkit.audit.release as private
from pramkit.audit.release import SHOWN, release_audit
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

AGES = ["0-9", "10-17", "18-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75+"]
WORK = ["employed", "unemployed", "not in labor force"]


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame.astype(object).where(frame.notna(), None).astype("string").to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def _read(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path).astype(object)
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _census_release(folder: Path, suffix: str, shuffle: bool = False) -> tuple[Path, Path, Path]:
    """Sex (randomized response, missing values kept), age, employment (with zero cells); unless shuffled
    (a shuffled release keeps no household id), households of three whose ownership is one draw."""
    data = census(3_000, seed=11).astype(object)
    data.loc[::41, "sex"] = None
    variables = [
        PerturbedVariable("sex", randomized_response(["female", "male"], 1.0)),
        PerturbedVariable("age", PramMatrix.form8([0.6] * 9, categories=AGES)),
        PerturbedVariable("employment", PramMatrix.block_diagonal(
            [PramMatrix.form8([0.8] * 3, categories=WORK), PramMatrix.identity(["n/a"])])),
    ]
    if not shuffle:
        data["hid"] = [f"h{i // 3:05d}" for i in range(len(data))]
        data["ownership"] = data.groupby("hid")["ownership"].transform("first")
        variables.append(PerturbedVariable("ownership", PramMatrix.form8([0.8] * 3, categories=["owned", "rented", "n/a"]),
                                           unit="hid"))
    original = _write(data, folder / f"original{suffix}")
    manifest = Manifest(tuple(variables)).write(folder / "m.json")
    released = folder / f"released{suffix}"
    apply_file(original, manifest, released, key=bytes(32), shuffle=shuffle)
    return manifest, original, released


def _faulty(released: Path, out: Path) -> Path:
    frame = _read(released)
    # a household cut by a 7-row chunk (rows 6, 7, 8): its last member disagrees with its first
    if "hid" in frame.columns:
        frame.loc[8, "ownership"] = "rented" if frame.loc[8, "ownership"] != "rented" else "owned"
    # rows reordered in an unperturbed column, around the 1000-row boundary
    frame.loc[[998, 1001], "race"] = frame.loc[[1001, 998], "race"].to_numpy()
    # more moves into a zero cell ('n/a' is kept) than a check lists, in many chunks
    na = np.flatnonzero((frame["employment"] == "n/a").to_numpy())[: SHOWN + 5]
    frame.loc[na, "employment"] = "employed"
    # a missing value released as present
    frame.loc[41 * 30, "sex"] = "male"
    return _write(frame, out)


def _rule_release(folder: Path, suffix: str) -> tuple[Path, Path, Path]:
    """Age and marital status jointly under an edit rule, rule breakers kept; one of them changed."""
    from pramkit.release.pipeline import design_release

    data = census(3_000, seed=9).astype(object)
    children = np.flatnonzero(data["age"].isin(["0-9"]).to_numpy())
    data.loc[children, "marital_status"] = "never married"
    data.loc[children[:30], "marital_status"] = "divorced"          # rule breakers
    original = _write(data, folder / f"original{suffix}")
    (folder / "rules.csv").write_text(
        'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n')
    manifest = design_release(data, ["age", "marital_status"], epsilon=3.0, split="joint",
                              forbid=folder / "rules.csv", rule_breaking="keep", rng=random.Random(2))
    path = manifest.write(folder / "m.json")
    released = folder / f"released{suffix}"
    apply_file(original, path, released, key=bytes(32))
    frame = _read(released)
    frame.loc[children[1:25], "marital_status"] = "widowed"
    return path, original, _write(frame, folder / f"bad{suffix}")


def _audit(monkeypatch, rows: int, manifest: Path, original: Path, released: Path) -> list[tuple]:
    monkeypatch.setattr(private, "AUDIT_CHUNK_ROWS", rows)
    return [(c.subject, c.field, c.passed, c.detail, c.data) for c in release_audit(manifest, original, released)]


CASES = ["clean", "faults", "shuffled", "shuffled, faults", "rule breakers", "other rows"]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("case", CASES)
def test_the_findings_do_not_depend_on_the_chunks(tmp_path, monkeypatch, case, suffix) -> None:
    if case == "rule breakers":
        manifest, original, released = _rule_release(tmp_path, suffix)
    else:
        manifest, original, released = _census_release(tmp_path, suffix, shuffle=case.startswith("shuffled"))
        if "faults" in case:
            released = _faulty(released, tmp_path / f"bad{suffix}")
        if case == "other rows":
            released = _write(_read(released).iloc[:-5], tmp_path / f"short{suffix}")
    whole = _audit(monkeypatch, 1 << 30, manifest, original, released)
    failed = {field for _, field, passed, _, _ in whole if not passed}
    expected = {"clean": set(), "shuffled": set(), "other rows": {"row count"},
                "faults": {"household members agree", "row count and order", "impossible transitions",
                           "missing kept missing"},
                "shuffled, faults": {"row count and order", "missing kept missing"},
                "rule breakers": {"rule breakers unchanged"}}[case]
    assert expected <= failed
    if case in ("clean", "shuffled"):
        assert not failed
    for rows in (7, 1000):
        assert _audit(monkeypatch, rows, manifest, original, released) == whole
