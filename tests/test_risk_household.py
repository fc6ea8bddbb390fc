"""Household risk (risk/household.py) against a plain per-household product, Boole's
inclusion-exclusion, a simulation of independent members, and on sdcMicro's testdata."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pramkit.cli import main
from pramkit.errors import DataError, PramkitError
from pramkit.risk.household import combine_households, household_risk
from pramkit.risk.individual import benedetti_franconi

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def _plain(risk: list[float], members: list[int]) -> list[float]:
    """1 - product of (1 - r) over the household, one loop per record."""
    out = []
    for h in members:
        keep = 1.0
        for r, g in zip(risk, members):
            if g == h and not math.isnan(r):
                keep *= 1.0 - r
        out.append(1.0 - keep)
    return out


def _boole(risk: list[float]) -> float:
    """P(at least one member) by inclusion-exclusion over every non-empty subset (Boole's formula)."""
    return sum((-1) ** (k + 1) * math.prod(s)
               for k in range(1, len(risk) + 1) for s in itertools.combinations(risk, k))


def test_against_plain_product():
    rng = np.random.default_rng(11)
    members = rng.integers(0, 40, 300)
    members = np.unique(members, return_inverse=True)[1]
    risk = rng.uniform(0, 0.6, 300) ** 2
    risk[rng.random(300) < 0.05] = np.nan
    got = combine_households(risk, members)
    np.testing.assert_allclose(got, _plain(risk.tolist(), members.tolist()), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_against_inclusion_exclusion(size):
    risk = np.random.default_rng(size).uniform(0, 0.9, size)
    got = combine_households(risk, np.zeros(size, dtype=int))
    np.testing.assert_allclose(got, _boole(risk.tolist()), rtol=1e-12)


def test_against_simulated_households():
    """Members re-identified independently with their r_i: how often is some member of a household re-identified?"""
    rng = np.random.default_rng(5)
    households = [[0.3], [0.05, 0.02], [0.5, 0.5, 0.5], [0.01] * 12, [0.2, 0.9, 0.001, 0.1]]
    risk = np.concatenate([np.asarray(h) for h in households])
    members = np.repeat(np.arange(len(households)), [len(h) for h in households])
    expected = combine_households(risk, members)[np.searchsorted(members, np.arange(len(households)))]
    draws = 200_000
    for h, r in enumerate(households):
        hit = (rng.random((draws, len(r))) < np.asarray(r)).any(axis=1).mean()
        se = math.sqrt(expected[h] * (1 - expected[h]) / draws)
        assert abs(hit - expected[h]) < 5 * se, (h, hit, expected[h])


def test_small_risks_in_a_large_household():
    # 1 - (1 - r)^m = m r - C(m, 2) r^2 + ...: exact to 1e-12 relative; the naive product loses ~4 digits.
    m, r = 1000, 1e-12
    got = combine_households(np.full(m, r), np.zeros(m, dtype=int))
    np.testing.assert_allclose(got, m * r - m * (m - 1) / 2 * r**2, rtol=1e-12)


def test_certain_member():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = combine_households(np.array([1.0, 0.2, 0.3]), np.array([0, 0, 1]))
    assert got.tolist() == [1.0, 1.0, pytest.approx(0.3)]


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    n = 400
    hh = np.repeat(np.arange(150), rng.integers(1, 6, 150))[:n]
    return pd.DataFrame({
        "region": rng.integers(1, 5, len(hh)), "sex": rng.choice(["m", "f"], len(hh)),
        "age": rng.choice(["young", "mid", "old"], len(hh), p=[0.5, 0.4, 0.1]),
        "hh": [f"h{i}" for i in hh], "w": np.round(rng.uniform(20, 80, len(hh)), 1),
    })


def test_summaries_as_sdcmicro_defines_them():
    """Per-record risk from groupby counts, household risk by a plain product; then
    hier_risk_ER = sum over records, hier_risk = that over the records, hier_risk_pct = 100 times it."""
    data = _frame()
    keys = ["region", "sex", "age"]
    res = household_risk(data, keys, "hh", weights="w")
    f = data.groupby(keys)["w"].transform("size").to_numpy()
    F = data.groupby(keys)["w"].transform("sum").to_numpy()
    r = benedetti_franconi(f, F)
    hier = np.array(_plain(r.tolist(), pd.factorize(data["hh"])[0].tolist()))
    np.testing.assert_allclose(res.per_record["individual_risk"], r, rtol=1e-12)
    np.testing.assert_allclose(res.per_record["household_risk"], hier, rtol=1e-12)
    assert res.household_expected_reidentifications == pytest.approx(hier.sum(), rel=1e-12)
    assert res.household_risk_mean == pytest.approx(hier.sum() / len(data), rel=1e-12)
    assert res.household_risk_pct == pytest.approx(100 * hier.sum() / len(data), rel=1e-12)
    assert res.household_risk_max == pytest.approx(hier.max(), rel=1e-12)
    assert res.expected_reidentifications == pytest.approx(r.sum(), rel=1e-12)
    assert res.households == data["hh"].nunique()
    assert res.largest_household == data["hh"].value_counts().max()
    # a household of one has its member's risk; a household's risk is at least its largest member's
    # and at most the sum of its members' (Boole's inequality)
    by = pd.DataFrame({"hh": data["hh"], "r": r, "R": hier}).groupby("hh")
    single = by["r"].transform("size").to_numpy() == 1
    np.testing.assert_allclose(hier[single], r[single], rtol=1e-12)
    assert (hier >= by["r"].transform("max").to_numpy() - 1e-15).all()
    assert (hier <= by["r"].transform("sum").to_numpy() + 1e-15).all()


def test_sampling_fraction_is_constant_weights():
    data = _frame()
    by_fraction = household_risk(data, ["region", "sex"], "hh", sampling_fraction=0.05)
    by_weights = household_risk(data.assign(w=20.0), ["region", "sex"], "hh", weights="w")
    np.testing.assert_allclose(by_fraction.per_record["household_risk"], by_weights.per_record["household_risk"],
                               rtol=1e-12)
    assert by_fraction.sampling_fraction == by_weights.sampling_fraction == pytest.approx(0.05)


def test_excluded_records_belong_to_their_household():
    data = pd.DataFrame({"sex": ["m", None, "f", "f"], "hh": [1, 1, 2, 2]})
    res = household_risk(data, ["sex"], "hh", sampling_fraction=0.5, missing="exclude")
    assert res.n == 3 and res.excluded == 1
    rec = res.per_record
    assert math.isnan(rec["individual_risk"][1])
    assert rec["household_risk"][1] == rec["household_risk"][0] == pytest.approx(math.log(2))
    assert res.household_risk_mean == pytest.approx(rec["household_risk"].sum() / 4)


def test_errors():
    data = pd.DataFrame({"sex": ["m", "f", "f"], "hh": ["a", None, "b"]})
    with pytest.raises(DataError, match="row 2 has no household id"):
        household_risk(data, ["sex"], "hh", sampling_fraction=0.1)
    with pytest.raises(DataError, match="house"):
        household_risk(data, ["sex"], "house", sampling_fraction=0.1)
    with pytest.raises(PramkitError, match="exactly one"):
        household_risk(data.fillna("c"), ["sex"], "hh")


def test_sdcmicro_testdata(sdc_data):
    """testdata, keys urbrur, roof, walls, water, electcon, relat, sex, weight sampling_weight,
    households ori_hid (sdcMicro's measure_risk(..., hid="ori_hid")).  No published sdcMicro
    output for this setting was found; the figures are checked against a plain per-household
    product of the per-record risks, and kept as regression values."""
    path = sdc_data / "testdata.csv"
    data = pd.read_csv(path, dtype={k: str for k in TESTDATA_KEYS})  # keys are categories
    res = household_risk(data, TESTDATA_KEYS, "ori_hid", weights="sampling_weight")
    assert res.households == 1000 and res.largest_household == 12 and res.n == 4580
    r = res.per_record["individual_risk"].to_numpy()
    hier = pd.Series(r).groupby(data["ori_hid"].to_numpy()).transform(lambda x: 1 - np.prod(1 - x)).to_numpy()
    np.testing.assert_allclose(res.per_record["household_risk"], hier, rtol=1e-12)
    assert res.expected_reidentifications == pytest.approx(10.775525, abs=1e-6)
    assert res.household_expected_reidentifications == pytest.approx(51.799591, abs=1e-6)
    assert res.household_risk_pct == pytest.approx(1.1309954, abs=1e-7)
    assert res.household_risk_max == pytest.approx(0.2270364, abs=1e-7)
    # the file read directly (CSV columns as text) gives the same
    assert household_risk(path, TESTDATA_KEYS, "ori_hid", weights="sampling_weight").to_dict() == res.to_dict()
    # sdcMicro's indivRisk (method "approx", its default) has closed forms for f = 1 and f = 2, which the
    # exact risk matches, and p / (f - (1 - p)) for f >= 3 in place of E(1/F | f); with the latter the
    # household figures move by about 0.03% (docs/risk.md)
    f = res.per_record["f"].to_numpy()
    p = f / res.per_record["F"].to_numpy()
    odds = p / (1 - p)
    closed = np.where(f == 1, odds * np.log(1 / p), odds - odds**2 * np.log(1 / p))
    np.testing.assert_allclose(r[f <= 2], closed[f <= 2], rtol=1e-12)
    approx = np.where(f <= 2, closed, p / (f - (1 - p)))
    approx_hier = combine_households(approx, pd.factorize(data["ori_hid"])[0])
    assert approx.sum() == pytest.approx(10.778299, abs=1e-6)
    assert approx_hier.sum() == pytest.approx(51.812927, abs=1e-6)


def test_cli_prints_the_result(tmp_path, capsys):
    data = _frame()
    data.to_csv(tmp_path / "d.csv", index=False)
    assert main(["risk", str(tmp_path / "d.csv"), "--keys", "region,sex,age", "--weights", "w",
                 "--household", "hh", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = household_risk(tmp_path / "d.csv", ["region", "sex", "age"], "hh", weights="w").to_dict()
    assert (printed.pop("format"), printed.pop("version")) == ("pramkit.risk.household", 1)
    assert printed.keys() == expected.keys()
    for name, value in expected.items():
        assert printed[name] == (pytest.approx(value, rel=1e-15) if isinstance(value, float) else value), name
    assert main(["risk", str(tmp_path / "d.csv"), "--keys", "region,sex,age", "--weights", "w",
                 "--household", "hh"]) == 0
    assert "persons in re-identified households" in capsys.readouterr().out


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("household_bad")
    data = _frame()
    data.to_csv(d / "data.csv", index=False)
    data.assign(hh=data["hh"].where(data.index != 6)).to_csv(d / "no_id.csv", index=False)
    data.assign(w=data["w"].where(data.index != 3, -1.0)).to_csv(d / "neg_w.csv", index=False)
    (d / "m.json").write_text("{}")
    return d


def _bad_cases(d: Path) -> list[tuple[list, str]]:
    base = ["risk", d / "data.csv", "--keys", "region,sex", "--weights", "w", "--household"]
    return [
        (base + ["house"], "house"),
        (base + [""], "are not in"),
        (["risk", d / "no_id.csv", "--keys", "region,sex", "--weights", "w", "--household", "hh"],
         "row 7 has no household id"),
        (["risk", d / "data.csv", "--keys", "region,height", "--weights", "w", "--household", "hh"], "height"),
        (["risk", d / "neg_w.csv", "--keys", "region,sex", "--weights", "w", "--household", "hh"],
         "weights must be finite and positive"),
        (["risk", d / "data.csv", "--keys", "region,sex", "--sampling-fraction", "0", "--household", "hh"],
         "sampling fraction"),
        (["risk", d / "data.csv", "--keys", "region,sex", "--household", "hh"], "required"),
        (["risk", d / "absent.csv", "--keys", "region,sex", "--weights", "w", "--household", "hh"], "does not exist"),
        (base + ["hh", "--manifest", d / "m.json"], "field 'format'"),  # read: the risk after PRAM
        (base + ["hh", "--original", d / "data.csv"], "does not take --original"),
        (base + ["hh", "--plot", d / "fit.png"], "does not take --plot"),
        (base + ["hh", "--model", "independence"], "does not take --model"),
        (base + ["hh", "--fractions", "file"], "does not take --fractions"),
        (base + ["hh", "--missing", "drop"], "invalid choice"),
    ]


@pytest.mark.parametrize("index", range(len(_bad_cases(Path("/x")))))
def test_bad_input(bad: Path, capsys, index: int) -> None:
    args, message = _bad_cases(bad)[index]
    before = _digests(bad)
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (args, err)
    assert len(lines) == 1 and "Traceback" not in err, (args, err)
    assert lines[0].startswith("pramkit") and message in lines[0], (args, lines[0])
    assert out == ""
    assert _digests(bad) == before and not (bad / "fit.png").exists()
