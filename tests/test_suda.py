"""SUDA2 (pramkit.risk.suda) against sdcMicro's worked issues and a brute-force MSU enumeration."""

from __future__ import annotations

import importlib
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.errors import DataError, ParameterError
from pramkit.risk import suda

suda_module = importlib.import_module("pramkit.risk.suda")  # the attribute pramkit.risk.suda is the function


def brute_msus(rows: list[tuple], max_size: int) -> list[list[tuple[int, ...]]]:
    """Every record's MSUs by plain enumeration (None = missing: never in an MSU, matches nothing)."""
    att = len(rows[0])

    def unique(r: int, subset: tuple[int, ...]) -> bool:
        if any(rows[r][v] is None for v in subset):
            return False
        same = [s for s in range(len(rows)) if all(rows[s][v] == rows[r][v] for v in subset)]
        return same == [r]

    out = []
    for r in range(len(rows)):
        msus = []
        for size in range(1, max_size + 1):
            for subset in itertools.combinations(range(att), size):
                proper = [t for k in range(1, size) for t in itertools.combinations(subset, k)]
                if unique(r, subset) and not any(unique(r, t) for t in proper):
                    msus.append(subset)
        out.append(msus)
    return out


def brute_dis(rows: list[tuple], scores: list[float], fraction: float) -> list[float]:
    """DIS-SUDA as sdcMicro writes it: Dis from the uniques and pairs on all keys, then per record."""
    if not any(scores):
        return [0.0] * len(scores)
    freq = [sum(other == row for other in rows) for row in rows]  # missing compared as a value
    uniques, pairs = freq.count(1), freq.count(2)
    dis = uniques * fraction / (uniques * fraction + pairs * (1 - fraction))
    q = 1 + (8 - len(rows[0])) / 20
    adjust = sum(s ** -q for s in scores if s > 0)
    return [1 / (1 + (uniques / dis - uniques) / (s ** q * adjust)) if s > 0 else 0.0 for s in scores]


def test_issue_275() -> None:
    data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    res = suda(data, ["a", "b", "c"])
    assert res.scores.tolist() == [2, 4, 2]
    assert res.attribute_contributions == {"a": 50.0, "b": 37.5, "c": 37.5}
    reordered = suda(data, ["a", "c", "b"])
    assert reordered.attribute_contributions == {"a": 50.0, "c": 37.5, "b": 37.5}


def test_issue_356() -> None:
    data = pd.DataFrame({"Var1": list("ABACBAB"), "Var2": list("XXYZYXZ"), "Var3": list("PQQRRPQ")})
    res = suda(data, ["Var1", "Var2", "Var3"])
    assert res.scores.tolist() == [0, 2, 3, 3, 3, 0, 2]
    got = {k: round(v, 2) for k, v in res.attribute_contributions.items()}
    assert got == {"Var1": 61.54, "Var2": 69.23, "Var3": 53.85}
    assert res.dis_scores is None


def test_normalised_scores_match_sdcmicro_issue_227() -> None:
    # sdcMicro's original_scores=FALSE on the IHSN guide's example: 1.75, 3.25, 1.75, 2.75 for the uniques
    data = pd.DataFrame([
        ("Urban", "Female", "Secondary_incomplete", "Employed"),
        ("Urban", "Female", "Secondary_incomplete", "Employed"),
        ("Urban", "Female", "Primary_incomplete", "Non-LF"),
        ("Urban", "Male", "Secondary_complete", "Employed"),
        ("Rural", "Female", "Secondary_complete", "Unemployed"),
        ("Urban", "Male", "Secondary_complete", "Employed"),
        ("Urban", "Female", "Primary_complete", "Non-LF"),
        ("Urban", "Male", "Post-secondary", "Unemployed"),
        ("Urban", "Female", "Secondary_incomplete", "Non-LF"),
        ("Urban", "Female", "Secondary_incomplete", "Non-LF"),
    ], columns=["residence", "gender", "education", "labour"])
    res = suda(data, list(data.columns))
    assert res.normalised_scores.tolist() == [0, 0, 1.75, 0, 3.25, 0, 1.75, 2.75, 0, 0]
    assert res.scores.tolist() == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]  # the guide's Table 4.5


rows_strategy = st.integers(1, 6).flatmap(
    lambda d: st.lists(st.tuples(*[st.sampled_from([0, 1, 2, None]) for _ in range(d)]), min_size=2, max_size=40)
)


@settings(max_examples=150, deadline=None)
@given(rows_strategy, st.data())
def test_against_brute_force(rows: list[tuple], draw: st.DataObject) -> None:
    att = len(rows[0])
    max_size = draw.draw(st.integers(1, att))
    frame = pd.DataFrame([[np.nan if v is None else v for v in row] for row in rows],
                         columns=[f"v{j}" for j in range(att)])
    res = suda(frame, list(frame.columns), max_size=max_size, sampling_fraction=0.1)
    msus = brute_msus(rows, max_size)
    expected_counts = [[sum(len(m) == k for m in ms) for k in range(1, max_size + 1)] for ms in msus]
    assert res.msu_counts.tolist() == expected_counts
    scores = [sum(math.factorial(att - len(m)) for m in ms) for ms in msus]
    assert res.scores.tolist() == scores
    normalised = [sum((2 ** (att - len(m)) - 1) / math.comb(att, len(m)) for m in ms) for ms in msus]
    np.testing.assert_allclose(res.normalised_scores, normalised, rtol=1e-12, atol=1e-12)
    per_var = np.array([[sum(math.factorial(att - len(m)) for m in ms if j in m) for j in range(att)] for ms in msus])
    total = sum(scores)
    for j, key in enumerate(frame.columns):
        if total:
            assert res.attribute_contributions[key] == pytest.approx(100 * per_var[:, j].sum() / total)
            assert res.attribute_contributions[key] >= 0
        else:
            assert math.isnan(res.attribute_contributions[key])
    if total:
        assert sum(res.attribute_contributions.values()) >= 100 - 1e-9
    levels = res.level_contributions
    for j, key in enumerate(frame.columns):
        mine = levels[levels.variable == key]
        present = sorted({row[j] for row in rows if row[j] is not None})
        assert mine.level.tolist() == present
        if per_var[:, j].sum():
            want = [100 * sum(per_var[r, j] for r in range(len(rows)) if rows[r][j] == x) / per_var[:, j].sum()
                    for x in present]
            np.testing.assert_allclose(mine.contribution, want, rtol=1e-12)
            assert mine.contribution.sum() == pytest.approx(100)
    np.testing.assert_allclose(res.dis_scores, brute_dis(rows, scores, 0.1), rtol=1e-9)


def test_missing_code_is_missing() -> None:
    data = pd.DataFrame({"a": [1, 1, 2, -999], "b": [0, 1, 0, 1], "c": [5, 5, 5, 6]})
    coded = suda(data, ["a", "b", "c"], missing=-999)
    as_na = suda(data.replace(-999, np.nan), ["a", "b", "c"])
    assert coded.msu_counts.tolist() == as_na.msu_counts.tolist()
    # record 4's {a} would be unique if -999 were a value; as missing it is not an MSU
    assert coded.msu_counts[3].tolist() == [1, 0, 0]
    assert suda(data, ["a", "b", "c"]).msu_counts[3].tolist() == [2, 0, 0]


def test_path_input(tmp_path) -> None:
    data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0], "w": [1, 2, 3]})
    path = tmp_path / "file.csv"
    data.to_csv(path, index=False)
    assert suda(path, ["a", "b", "c"]).scores.tolist() == [2, 4, 2]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"keys": []}, ParameterError, "at least one key"),
    ({"keys": ["a", "a"]}, ParameterError, "listed twice"),
    ({"max_size": 0}, ParameterError, "max_size"),
    ({"max_size": 3}, ParameterError, "max_size"),
    ({"sampling_fraction": 0.0}, ParameterError, "sampling_fraction"),
    ({"sampling_fraction": 1.5}, ParameterError, "sampling_fraction"),
    ({"keys": ["z"]}, DataError, "unknown key"),
])
def test_bad_input(kwargs: dict, error: type, message: str) -> None:
    data = pd.DataFrame({"a": [1, 2, 2], "b": [1, 1, 2]})
    args = {"keys": ["a", "b"], **kwargs}
    with pytest.raises(error, match=message) as info:
        suda(data, **args)
    assert "\n" not in str(info.value)


def test_one_row_refused() -> None:
    with pytest.raises(DataError, match="at least 2 records"):
        suda(pd.DataFrame({"a": [1], "b": [2]}), ["a", "b"])


@pytest.mark.parametrize("dense_limit", [None, 1])
def test_many_levels_against_brute_force(dense_limit: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # keys whose combinations outnumber the dense counting limit are compressed; limit 1 counts by np.unique
    if dense_limit is not None:
        monkeypatch.setattr(suda_module, "_DENSE_LIMIT", dense_limit)
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"a": rng.integers(0, 10**4, 60), "b": rng.integers(0, 10**4, 60),
                          "c": rng.integers(0, 10**4, 60), "d": rng.integers(0, 2, 60)})
    frame.loc[:20, ["a", "b", "c"]] = frame.loc[21:41, ["a", "b", "c"]].to_numpy()  # some shared values
    rows = [tuple(int(v) for v in row) for row in frame.itertuples(index=False)]
    res = suda(frame, list(frame.columns))
    msus = brute_msus(rows, 4)
    assert res.msu_counts.tolist() == [[sum(len(m) == k for m in ms) for k in range(1, 5)] for ms in msus]


def subset_brute(rows: list[tuple], keys: int) -> list[list[int]]:
    """Every record's MSU counts by size: each subset of keys counted over the records by definition."""
    from collections import Counter

    unique: dict[tuple[int, ...], set[int]] = {}
    for size in range(1, keys + 1):
        for subset in itertools.combinations(range(keys), size):
            seen = Counter(tuple(row[v] for v in subset) for row in rows
                           if all(row[v] is not None for v in subset))
            unique[subset] = {r for r, row in enumerate(rows) if all(row[v] is not None for v in subset)
                              and seen[tuple(row[v] for v in subset)] == 1}
    counts = [[0] * keys for _ in rows]
    for subset, records in unique.items():
        below = [subset[:i] + subset[i + 1:] for i in range(len(subset))] if len(subset) > 1 else []
        for r in records:
            if not any(r in unique[t] for t in below):
                counts[r][len(subset) - 1] += 1
    return counts


@pytest.mark.parametrize("method", ["levels", "transversals"])
@settings(max_examples=100, deadline=None)
@given(rows=rows_strategy, draw=st.data())
def test_both_searches_against_brute_force(method: str, rows: list[tuple], draw: st.DataObject) -> None:
    att = len(rows[0])
    max_size = draw.draw(st.integers(1, att))
    frame = pd.DataFrame([[np.nan if v is None else v for v in row] for row in rows],
                         columns=[f"v{j}" for j in range(att)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suda_module, "_METHOD", method)
        res = suda(frame, list(frame.columns), max_size=max_size)
    msus = brute_msus(rows, max_size)
    assert res.msu_counts.tolist() == [[sum(len(m) == k for m in ms) for k in range(1, max_size + 1)] for ms in msus]
    per_var = [[sum(math.factorial(att - len(m)) for m in ms if j in m) for j in range(att)] for ms in msus]
    total = sum(map(sum, res.msu_counts @ np.array([math.factorial(att - k) for k in range(1, max_size + 1)])[:, None]))
    if total:
        for j, key in enumerate(frame.columns):
            assert res.attribute_contributions[key] == pytest.approx(100 * sum(p[j] for p in per_var) / total)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 2 ** 7 - 1), min_size=1, max_size=12), st.integers(1, 7))
def test_minimal_transversals_against_brute_force(edges: list[int], max_size: int) -> None:
    def hits(s: int) -> bool:
        return all(s & e for e in edges)

    want = [s for s in range(1, 2 ** 7) if s.bit_count() <= max_size and hits(s)
            and not any(hits(s & ~(1 << v)) for v in range(7) if s >> v & 1)]
    got = suda_module.minimal_transversals(edges, max_size)
    assert sorted(got) == want and len(got) == len(set(got))


def test_twenty_keys_on_real_rows(silc20: pd.DataFrame) -> None:
    # 20 keys: a million subsets; the search compares the 300 records instead, and agrees with counting
    # every subset by definition on subsets of the keys and with the level-wise search up to size 3
    keys = list(silc20.columns)
    cost = suda_module.suda_cost(silc20, keys)
    assert (cost.keys, cost.records, cost.subsets, cost.method) == (20, 300, 2 ** 20 - 1, "transversals")
    assert cost.steps == cost.candidates * cost.distinct * 20
    full = suda(silc20, keys)
    assert full.msu_counts.shape == (300, 20) and full.msu_counts.sum() > 0
    rows = [tuple(None if pd.isna(v) else v for v in row) for row in silc20.itertuples(index=False)]
    for picked in (keys[:7], keys[6:14], keys[::3]):
        sub = [tuple(row[keys.index(k)] for k in picked) for row in rows]
        assert suda(silc20, picked).msu_counts.tolist() == subset_brute(sub, len(picked)), picked
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suda_module, "_METHOD", "levels")
        levels = suda(silc20, keys, max_size=3)
    assert suda(silc20, keys, max_size=3).msu_counts.tolist() == levels.msu_counts.tolist()
    assert full.msu_counts[:, :3].tolist() == levels.msu_counts.tolist()


def test_cost_refused_with_its_figure() -> None:
    data = pd.DataFrame(np.random.default_rng(3).integers(0, 3, (50, 12)), columns=[f"k{j}" for j in range(12)])
    cost = suda_module.suda_cost(data, list(data.columns))
    with pytest.raises(ParameterError) as info:
        suda(data, list(data.columns), max_steps=cost.steps - 1)
    message = str(info.value)
    assert "\n" not in message and f"{cost.steps:,} steps" in message and "--max-size" in message
    assert f"more than the limit of {cost.steps - 1:,} steps" in message
    fitting = int(message.split("(max_size; ")[1].split(" fits")[0])
    assert suda_module.suda_cost(data, list(data.columns), max_size=fitting).steps <= cost.steps - 1
    assert suda(data, list(data.columns), max_steps=cost.steps).scores.shape == (50,)
