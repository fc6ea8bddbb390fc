"""Contributions of key variables and levels (pramkit.risk.contributions), before and after PRAM.

Checked against plain counting (at pi = 1, tau1 = tau2 = the number of sample
uniques and the individual risk = the number of occupied cells), a brute-force
MSU enumeration (tests/test_suda.py), epsilons given by hand, a hand enumeration
of every released file, and the identity perturbation.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_suda import brute_msus

from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_frame
from pramkit.errors import DataError, ParameterError
from pramkit.ledger import Ledger
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.risk import suda
from pramkit.risk.contributions import (
    expected_suda,
    release_contributions,
    risk_contributions,
)

KEYS3 = ["a", "b", "c"]


def counted(rows: list[tuple]) -> tuple[int, int]:
    """Sample uniques and occupied cells, missing (None) a value of its own."""
    freq = Counter(rows)
    return sum(1 for r in rows if freq[r] == 1), len(freq)


def percent(change: float, total: float) -> float:
    return 100.0 * change / total if total > 0 else math.nan


def same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)


def modal_other(values: list, level: object) -> object:
    """The most frequent other non-missing value; ties: the smallest."""
    freq = Counter(v for v in values if v is not None and v != level)
    if not freq:
        return None
    top = max(freq.values())
    return min(v for v, c in freq.items() if c == top)


@st.composite
def small_files(draw: st.DrawFn) -> pd.DataFrame:
    att = draw(st.integers(1, 4))
    n = draw(st.integers(2, 30))
    value = st.one_of(st.integers(0, 2), st.none()) if draw(st.booleans()) else st.integers(0, 3)
    cols = {f"k{j}": draw(st.lists(value, min_size=n, max_size=n)) for j in range(att)}
    return pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in cols.items()})


@given(small_files())
@settings(max_examples=20, deadline=None)
def test_left_out_and_merged_equal_plain_counting(frame: pd.DataFrame) -> None:
    keys = list(frame.columns)
    rows = [tuple(None if pd.isna(x) else x for x in r) for r in frame.itertuples(index=False)]
    res = risk_contributions(frame, keys, sampling_fraction=1.0, model="independence")
    uniques, cells = counted(rows)
    assert same(res.totals["tau1"], uniques) and same(res.totals["tau2"], uniques)
    assert same(res.totals["individual"], cells)
    by_var = res.variables.set_index("variable")
    for j, key in enumerate(keys):
        u, c = counted([r[:j] + r[j + 1:] for r in rows])
        assert same(by_var.loc[key, "tau1"], percent(uniques - u, uniques))
        assert same(by_var.loc[key, "tau2"], percent(uniques - u, uniques))
        assert same(by_var.loc[key, "individual"], percent(cells - c, cells))
    for row in res.levels.itertuples(index=False):
        j = keys.index(row.variable)
        column = [r[j] for r in rows]
        into = None if pd.isna(row.merged_into) else row.merged_into
        assert into == modal_other(column, row.level)
        assert row.records == column.count(row.level)
        if into is None:
            assert row.tau1 == row.individual == 0.0
            continue
        merged = [r[:j] + ((into,) if r[j] == row.level else (r[j],)) + r[j + 1:] for r in rows]
        u, c = counted(merged)
        assert same(row.tau1, percent(uniques - u, uniques))
        assert same(row.individual, percent(cells - c, cells))
    for name in ("tau1", "tau2", "individual"):  # the documented sum: variables + interaction = 100
        if res.totals[name] > 0:
            assert math.isclose(by_var[name].sum() + res.interaction[name], 100.0)


@given(small_files())
@settings(max_examples=20, deadline=None)
def test_suda_contributions_add_up_as_documented(frame: pd.DataFrame) -> None:
    keys = list(frame.columns)
    rows = [tuple(None if pd.isna(x) else x for x in r) for r in frame.itertuples(index=False)]
    att = len(keys)
    msus = [m for record in brute_msus(rows, att) for m in record]
    total = sum(math.factorial(att - len(m)) for m in msus)
    res = risk_contributions(frame, keys, sampling_fraction=0.5, model="independence")
    assert res.totals["suda"] == total
    by_var = res.variables.set_index("variable")["suda"]
    if total == 0:
        assert by_var.isna().all()
        return
    weighted_size = sum(math.factorial(att - len(m)) * len(m) for m in msus) / total
    assert math.isclose(by_var.sum(), 100.0 * weighted_size)  # at least 100: an MSU counts per variable
    for key in keys:
        levels = res.levels.query("variable == @key")["suda"]
        assert math.isclose(levels.sum(), by_var[key], abs_tol=1e-9)


def test_issue_275_levels_by_hand() -> None:
    """Scores 2, 4, 2: record 1's MSU {a} (2) at a = 2, record 3's {a, b} and {a, c} (1 each) at a = 1."""
    data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    res = risk_contributions(data, KEYS3, sampling_fraction=0.5, model="independence")
    levels = res.levels.set_index(["variable", "level"])["suda"]
    assert levels[("a", 2)] == 25.0 and levels[("a", 1)] == 25.0
    assert levels[("b", 3)] == 25.0 and levels[("b", 0)] == 12.5


def test_epsilon_shares_are_the_given_epsilons() -> None:
    manifest = Manifest.of({"a": randomized_response([1, 2], 0.75), "b": randomized_response([0, 3], 0.25)},
                           ledger=Ledger(design_epsilon=0.5, frequencies="dp_counts"))
    data = pd.DataFrame({"a": [2, 1, 1, 2, 1], "b": [0, 3, 0, 0, 3], "c": [0, 6, 0, 1, 1]})
    released = perturb_frame(data, manifest, key=bytes(32)).data
    res = risk_contributions(released, KEYS3, sampling_fraction=0.5, model="independence", manifest=manifest,
                             original=data)
    eps = res.epsilon.set_index("variable")
    assert np.allclose(eps["epsilon"].to_numpy(), [0.75, 0.25, 0.5])
    assert np.allclose(eps["percent"].to_numpy(), [50.0, 50.0 / 3, 100.0 / 3])
    assert math.isclose(eps["percent"].sum(), 100.0)


def test_identity_perturbation_changes_nothing() -> None:
    data = pd.DataFrame({"a": [2, 1, 1, 3, 1, 2, 3], "b": [0, 3, 0, 0, 3, 0, 1], "c": [0, 6, 0, 6, 6, 1, 1]})
    manifest = Manifest.of({"a": PramMatrix.identity([1, 2, 3]), "b": PramMatrix.identity([0, 1, 3])})
    released = perturb_frame(data, manifest, key=bytes(32)).data
    before = risk_contributions(data, KEYS3, sampling_fraction=0.2, model="independence")
    after = risk_contributions(released, KEYS3, sampling_fraction=0.2, model="independence", manifest=manifest,
                               original=data)
    assert np.array_equal(after.suda.scores, before.suda.scores)
    for name in before.totals:
        assert math.isclose(after.totals[name], before.totals[name], rel_tol=1e-6)
    pd.testing.assert_frame_equal(after.variables, before.variables, rtol=1e-5)
    pd.testing.assert_frame_equal(after.levels.drop(columns="merged_into"), before.levels.drop(columns="merged_into"),
                                  rtol=1e-5, check_dtype=False)
    scores = suda(data, KEYS3).scores
    exact = expected_suda(data, KEYS3, manifest)
    drawn = expected_suda(data, KEYS3, manifest, exact_limit=0, replicates=3, key=bytes(32))
    assert (exact.method, exact.outcomes, drawn.method) == ("exact", 1, "monte carlo")
    assert np.array_equal(exact.scores, scores) and np.array_equal(drawn.scores, scores)
    assert np.allclose(drawn.variables["se"], 0, atol=1e-12) and np.allclose(drawn.levels["se"], 0, atol=1e-12)


def hand_expectation(rows: list[tuple], m: np.ndarray, cats: list) -> np.ndarray:
    """E[score] over every released file when the first key is perturbed by ``m``: brute force."""
    att = len(rows[0])
    expected = np.zeros(len(rows))
    for released in itertools.product(range(len(cats)), repeat=len(rows)):
        p = math.prod(m[cats.index(r[0]), z] for r, z in zip(rows, released))
        if p == 0:
            continue
        file = [(cats[z],) + r[1:] for r, z in zip(rows, released)]
        scores = [sum(math.factorial(att - len(s)) for s in ms) for ms in brute_msus(file, att)]
        expected += p * np.array(scores)
    return expected


def test_exact_expectation_against_hand_enumeration() -> None:
    rows = [(2, 0, 0), (1, 3, 6), (1, 0, 0), (2, 3, 0), (1, 0, 6)]
    m = np.array([[0.7, 0.3], [0.2, 0.8]])
    manifest = Manifest.of({"a": PramMatrix(m, [1, 2])})
    data = pd.DataFrame(rows, columns=KEYS3)
    res = expected_suda(data, KEYS3, manifest)
    assert (res.method, res.outcomes) == ("exact", 32)
    assert np.allclose(res.scores, hand_expectation(rows, m, [1, 2]))


@pytest.mark.slow
def test_monte_carlo_within_its_error_of_the_exact_expectation() -> None:
    data = pd.DataFrame({"a": [2, 1, 1, 2, 1, 3], "b": [0, 3, 0, 3, 0, 0], "c": [0, 6, 0, 0, 6, 6]})
    manifest = Manifest.of({"a": randomized_response([1, 2, 3], 1.5)})
    exact = expected_suda(data, KEYS3, manifest)
    drawn = expected_suda(data, KEYS3, manifest, exact_limit=0, replicates=300, key=bytes(range(32)))
    assert exact.method == "exact" and drawn.method == "monte carlo"
    merged = exact.variables.merge(drawn.variables, on="variable", suffixes=("_exact", "_mc"))
    gap = (merged["suda_exact"] - merged["suda_mc"]).abs()
    assert (gap <= 4.5 * merged["se_mc"] + 1e-9).all()


def test_release_contributions_on_real_data(sdc_data) -> None:
    """eusilc: missing citizenship, numeric household sizes (an undeclared order), weights rb050,
    region names with whitespace variants."""
    data = pd.read_csv(sdc_data / "eusilc_laeken.csv", usecols=["db040", "rb090", "pb220a", "hsize", "rb050"])
    data = data.iloc[:1500].copy()
    keys = ["db040", "rb090", "pb220a", "hsize"]
    assert data["pb220a"].isna().any()
    spaced = data.assign(db040=data["db040"].where(data.index % 7 != 0, " " + data["db040"] + " "))
    with pytest.raises(DataError, match="spelled two ways"):  # one value written two ways: refused, not guessed
        risk_contributions(spaced, keys, weights="rb050", model="independence")
    manifest = Manifest.of({"rb090": randomized_response(["female", "male"], 1.0)})
    released = perturb_frame(data, manifest, key=bytes(32)).data
    res = release_contributions(data, keys, released=released, manifest=manifest, weights="rb050",
                                model="independence", max_size=3, exact_limit=0, replicates=2, key=bytes(32))
    for c in (res.before, res.after):
        by_var = c.variables.set_index("variable")
        for name, share in c.interaction.items():
            assert math.isclose(by_var[name].sum() + share, 100.0)
        for key in keys:
            assert math.isclose(c.levels.query("variable == @key")["suda"].sum(), by_var.loc[key, "suda"])
        assert c.levels["level"].notna().all()  # missing is never a level (as in sdcMicro)
    assert res.after.perturbed == ("rb090",) and res.expected.method == "monte carlo"
    assert res.sentences and all(s.endswith(".") for s in res.sentences)


@pytest.mark.parametrize("call, error", [
    (lambda d, m: risk_contributions(d, [], sampling_fraction=0.5), ParameterError),
    (lambda d, m: risk_contributions(d, KEYS3, sampling_fraction=0.5, max_size=0), ParameterError),
    (lambda d, m: risk_contributions(d, KEYS3, sampling_fraction=0.5, max_size=4), ParameterError),
    (lambda d, m: risk_contributions(d, KEYS3, sampling_fraction=1.5), ParameterError),
    (lambda d, m: risk_contributions(d.iloc[:1], KEYS3, sampling_fraction=0.5), DataError),
    (lambda d, m: risk_contributions(d, KEYS3, sampling_fraction=0.5, original=d), ParameterError),
    (lambda d, m: risk_contributions(d, KEYS3, sampling_fraction=0.5, manifest=m), ParameterError),
    (lambda d, m: expected_suda(d, KEYS3, m, replicates=1), ParameterError),
    (lambda d, m: risk_contributions(d, ["a", "z"], sampling_fraction=0.5), DataError),
    (lambda d, m: risk_contributions(d, KEYS3, weights="w"), DataError),
    (lambda d, m: expected_suda(d.assign(a=[2, 1, 7]), KEYS3, m), DataError),
    (lambda d, m: release_contributions(d, KEYS3, manifest=m, sampling_fraction=0.5), ParameterError),
])
def test_bad_input(call, error) -> None:
    data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    manifest = Manifest.of({"a": randomized_response([1, 2], 1.0)})
    with pytest.raises(error) as info:
        call(data, manifest)
    assert "\n" not in str(info.value)


def test_numeric_categories_read_as_text_compare_as_the_same_levels() -> None:
    """eusilc's household size (categories 1 to 9 as integers in the manifest) read from a CSV as text,
    with missing sizes: the contributions and the expected SUDA equal those of the integer columns, and a
    size that is not a category is one DataError line."""
    from conftest import SDC_DATA

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    frame = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["hsize", "rb090", "db040"]).head(400)
    frame["hsize"] = frame["hsize"].astype("Int64")
    frame.loc[frame.index[::37], "hsize"] = pd.NA
    sizes = sorted(int(s) for s in frame["hsize"].dropna().unique())
    manifest = Manifest.of({"hsize": randomized_response(sizes, 2.0)})
    released = perturb_frame(frame, manifest, key=bytes(32)).data
    text = {name: f.astype(object).where(f.notna(), None).map(lambda v: v if v is None else str(v))
            for name, f in (("original", frame), ("released", released))}
    keys = ["hsize", "rb090", "db040"]
    as_int = risk_contributions(released, keys, sampling_fraction=0.1, manifest=manifest, original=frame)
    as_text = risk_contributions(text["released"], keys, sampling_fraction=0.1, manifest=manifest,
                                 original=text["original"])
    pd.testing.assert_frame_equal(as_int.levels, as_text.levels, check_dtype=False)
    assert as_int.totals == pytest.approx(as_text.totals)
    exact_int = expected_suda(frame.head(12), keys, manifest, exact_limit=0, replicates=2, key=bytes(32))
    exact_text = expected_suda(text["original"].head(12), keys, manifest, exact_limit=0, replicates=2,
                               key=bytes(32))
    assert exact_int.scores.tolist() == exact_text.scores.tolist()
    bad = text["released"].assign(hsize=text["released"]["hsize"].replace("3", "33"))
    with pytest.raises(DataError, match="33"):
        risk_contributions(bad, keys, sampling_fraction=0.1, manifest=manifest, original=text["original"])
