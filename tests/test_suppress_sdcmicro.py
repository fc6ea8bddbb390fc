"""Local suppression beside sdcMicro's own test of ``localSuppression`` (its ``tests/testthat/test_localSuppression.R``):
on sdcMicro's ``testdata2`` (93 records, seven key variables urbrur, roof, walls, water, electcon, relat, sex, k = 2,
its rule that a missing value matches any value) sdcMicro's test expects 97 new suppressions, and 109 with the
strata ``ageG = cut(age, 5)`` (its ``kAnon``).  pramkit's greedy heuristic must do no worse, and its file must be
2-anonymous by sdcMicro's rule, counted here pair by pair in plain Python (not by pramkit's counting)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import SDC_DATA
from conftest import run_cli as cli

KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
#: sdcMicro's expected new suppressions (test_localSuppression.R): without strata, and with ageG.
SDCMICRO = {"none": 97, "ageG": 109}
needs_data = pytest.mark.skipif(not (SDC_DATA / "testdata2.csv").is_file(), reason="../shared/data/sdcmicro is absent")



def _with_age_groups(folder: Path) -> Path:
    """testdata2 with ``ageG``: R's ``cut(age, 5)`` (five intervals of equal width, the range widened by 0.1 %), as
    pandas' ``cut`` with five bins makes it."""
    frame = pd.read_csv(SDC_DATA / "testdata2.csv", dtype=str)
    frame["ageG"] = pd.cut(frame["age"].astype(float), 5, labels=[f"AG{i}" for i in range(1, 6)]).astype(str)
    path = folder / "testdata2.csv"
    frame.to_csv(path, index=False)
    return path


def _least_frequency_any(path: Path, strata: str | None) -> int:
    """The smallest number of records agreeing with a record (itself included) where both hold a value, within its
    stratum: sdcMicro's frequency with a missing value matching any value, pair by pair."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows = frame[KEYS].to_numpy().tolist()
    groups = frame[strata].tolist() if strata else [""] * len(rows)
    least = len(rows)
    for i, a in enumerate(rows):
        agree = sum(1 for j, b in enumerate(rows) if groups[j] == groups[i]
                    and all(x == "" or y == "" or x == y for x, y in zip(a, b)))
        least = min(least, agree)
    return least


@needs_data
@pytest.mark.parametrize("strata", ["none", "ageG"])
def test_the_heuristic_suppresses_no_more_than_sdcmicro_and_is_2_anonymous(tmp_path, strata) -> None:
    data = _with_age_groups(tmp_path)
    extra = [] if strata == "none" else ["--strata", strata]
    code, out, err = cli("suppress", data, "--keys", ",".join(KEYS), "--k", 2, "--missing", "any", "--method",
                         "heuristic", *extra, "--out", tmp_path / "out.csv", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert 0 < result["total"] <= SDCMICRO[strata]
    assert result["lower_bound"] <= result["total"]
    assert _least_frequency_any(tmp_path / "out.csv", None if strata == "none" else strata) >= 2
    assert _least_frequency_any(data, None if strata == "none" else strata) < 2  # there was something to do


@needs_data
def test_the_exact_program_under_the_intruders_rule_is_proven_and_2_anonymous(tmp_path) -> None:
    """With a missing value a value of its own (the stricter rule) the exact program proves its count: each record's
    combination of the seven keys, missing values as values, is shared by another."""
    data = _with_age_groups(tmp_path)
    code, out, err = cli("suppress", data, "--keys", ",".join(KEYS), "--k", 2, "--missing", "own", "--method",
                         "exact", "--out", tmp_path / "out.csv", "--json")
    result = json.loads(out)
    assert code == 0 and result["optimal"] and result["total"] == result["lower_bound"], err
    released = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)[KEYS]
    assert released.value_counts().min() >= 2
