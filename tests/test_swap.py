"""Record swapping (pramkit.swap) against its rules, checked from the outside: counts from the
vignette's rule, households whole, similarity and hierarchy for every pair (pandas, not the engine's
arrays), the risky households found by a plain groupby, the epsilon formula against the exact code,
the realised transition table against the expected matrix (simulation), and chunk invariance on files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.errors import DataError, ManifestError, ParameterError
from pramkit.io import read_table, sha256_of
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest
from pramkit.privacy.epsilon import matrix_epsilon
from pramkit.swap import (
    plan_swap,
    random_swap_epsilon,
    random_swap_matrix,
    swap_file,
    swap_frame,
    swap_manifest,
    transition_table,
)
from pramkit.swap.census import census_households
from pramkit.swap.core import draw_swaps


def households(n: int, areas: int, regions: int, seed: int = 1) -> pd.DataFrame:
    """``n`` households of 1-4 persons; area ``a`` lies in region ``a % regions``; sizes as ``hsize``."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 5, n)
    area = rng.integers(0, areas, n)
    hid = np.repeat(np.arange(n), size)
    return pd.DataFrame({
        "hid": hid, "region": [f"R{a % regions}" for a in area[hid]], "area": [f"A{a:03d}" for a in area[hid]],
        "hsize": size[hid], "sex": rng.choice(["f", "m"], hid.size), "age": rng.integers(0, 9, hid.size),
    })


def test_rate_swaps_exactly_rate_times_households():
    """sdcMicro's rule: a swap moves two households, so rate 0.05 on 100 000 households swaps 5 000."""
    data = households(100_000, areas=300, regions=1)
    result = swap_frame(data, plan_swap("hid", ["area"], similar=[["hsize"]], rate=0.05), key=bytes(32))
    assert result.households == 100_000
    assert result.swapped_households == 5_000
    changed = data.groupby("hid")["area"].first() != result.frame.groupby("hid")["area"].first()
    assert int(changed.sum()) == 5_000


def test_households_move_whole_within_their_region_and_profile():
    data = households(3_000, areas=40, regions=4, seed=7)
    plan = plan_swap("hid", ["region", "area"], risk_vars=["sex", "age"], k=3, similar=[["hsize"]], rate=0.2)
    result = swap_frame(data, plan, key=bytes(range(32)))
    out = result.frame
    assert (out.groupby("hid")[["region", "area"]].nunique() == 1).all().all()  # whole households
    before = data.groupby("hid")[["region", "area", "hsize"]].first()
    after = out.groupby("hid")[["region", "area"]].first()
    moved = before.index[before["area"] != after["area"]]
    assert len(moved) == result.swapped_households > 0
    # every swapped household received the geography of a household of the same size and region
    for h in moved:
        senders = before.index[(before["area"] == after.loc[h, "area"]) & (before["hsize"] == before.loc[h, "hsize"])
                               & (after["area"] == before.loc[h, "area"])]
        assert len(senders) >= 1, h
    assert (before.loc[moved, "region"] == after.loc[moved, "region"]).all()  # donors share the level above
    assert (out.drop(columns=["region", "area"]) == data.drop(columns=["region", "area"])).all().all()


def test_similarity_profiles_fall_back_in_order():
    """Three risky households of size 7 have no donor of their size; the second profile (sex of the
    first member) finds one."""
    data = households(2_000, areas=10, regions=1, seed=3)
    data.loc[data["hid"] < 3, "hsize"] = 7
    data["flag"] = (data["hid"] < 3).astype(int)
    plan = plan_swap("hid", ["area"], risk_vars=["flag"], k=100, similar=[["hsize"], ["sex"]], rate=0.0)
    result = swap_frame(data, plan, key=bytes(32))
    assert result.unswappable == 0 and result.targeted == [3] and result.swapped_households == 6
    first = data.groupby("hid").first()
    after = result.frame.groupby("hid")["area"].first()
    for h in range(3):
        partner = first.index[(first["area"] == after[h]) & (after == first.loc[h, "area"])
                              & (first["sex"] == first.loc[h, "sex"]) & (first.index >= 3)]
        assert len(partner) >= 1


def test_unswappable_households_are_counted():
    """A similarity variable unique to each household leaves every selected household without a donor."""
    data = households(500, areas=5, regions=1)
    data["unique"] = data["hid"]
    result = swap_frame(data, plan_swap("hid", ["area"], similar=[["unique"]], rate=0.4), key=bytes(32))
    assert result.swapped_households == 0
    assert result.unswappable == result.quota == round(0.4 * 500 / 2)


def test_risky_households_found_by_a_plain_groupby_are_swapped_across_their_level():
    data = households(4_000, areas=60, regions=3, seed=11)
    plan = plan_swap("hid", ["region", "area"], risk_vars=["sex", "age"], k=4, rate=0.0)
    result = swap_frame(data, plan, key=bytes(32))
    # risky at region level: some member's (region, sex, age) cell has fewer than 4 persons
    region_count = data.groupby(["region", "sex", "age"])["hid"].transform("size")
    area_count = data.groupby(["area", "sex", "age"])["hid"].transform("size")
    risky_region = set(data.loc[region_count < 4, "hid"])
    risky_area = set(data.loc[area_count < 4, "hid"]) - risky_region
    before = data.groupby("hid")[["region", "area"]].first()
    after = result.frame.groupby("hid")[["region", "area"]].first()
    moved_region = set(before.index[before["region"] != after["region"]])
    moved_area = set(before.index[before["area"] != after["area"]])
    assert risky_region <= moved_region  # rate 0: only the risky (and their donors) move
    assert risky_area <= moved_area
    assert result.targeted[0] <= len(risky_region) and sum(result.targeted) == len(risky_region | risky_area)
    assert result.swapped_households == 2 * sum(result.targeted)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-6, 1 - 1e-6), st.integers(2, 2_000))
def test_random_swap_formula_equals_the_exact_epsilon(rate: float, areas: int):
    exact = random_swap_matrix(rate, [f"a{i}" for i in range(areas)]).epsilon
    closed = random_swap_epsilon(rate, areas)
    # outward: the exact epsilon is never below the closed form, up to the closed form's own rounding in doubles
    # (a few units of 1e-16 absolute, which is most of it near epsilon 0, where (1 - s)(A - 1)/s is near 1)
    assert exact >= closed * (1 - 1e-15) - 1e-15
    assert math.isclose(exact, closed, rel_tol=1e-12, abs_tol=1e-12)


def test_formula_against_the_dense_matrix_and_blocks():
    dense = np.full((5, 5), 0.1 / 4) + np.eye(5) * (0.9 - 0.1 / 4)
    assert math.isclose(matrix_epsilon(dense), math.log(0.9 * 4 / 0.1), rel_tol=1e-14)
    blocks = random_swap_matrix(0.1, list("abcde"), parents=list("xxxyy"))
    assert blocks.epsilon == math.inf
    assert math.isclose(blocks.block_epsilon, random_swap_epsilon(0.1, 3), rel_tol=1e-14)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [[4_000] * 8, [1_000, 2_000, 3_000, 4_000, 6_000, 8_000]], ids=["equal", "unequal"])
def test_realised_transitions_match_the_expected_matrix(sizes: list[int]):
    """One person per household: the realised table of a few runs, row-normalised, is the expected matrix
    (form (8) for equal areas; the first-order formula otherwise), and the area counts are kept exactly."""
    rate, areas = 0.1, len(sizes)
    area = np.repeat(np.arange(areas), sizes)
    data = pd.DataFrame({"hid": np.arange(area.size), "area": area, "one": 1})
    table = np.zeros((areas, areas))
    for seed in range(3):
        r = swap_frame(data, plan_swap("hid", ["area"], similar=[["one"]], rate=rate), key=bytes([seed]) * 32)
        assert (np.bincount(r.frame["area"], minlength=areas) == sizes).all()
        table += transition_table(area, r.frame["area"].to_numpy(), areas)
    realised = table / table.sum(axis=1, keepdims=True)
    expected = random_swap_matrix(rate, list(range(areas)), households=sizes).matrix
    assert np.abs(realised - expected).max() < 0.006


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 5_000), min_size=2, max_size=7),
       st.one_of(st.floats(0.0, 1.0), st.sampled_from([1.0, 1.0 - 1e-12, 0.999999, 0.99, 0.0])),
       st.sampled_from(["same-parent", "any-area"]))
def test_the_expected_matrix_is_a_matrix_at_every_rate(sizes: list[int], rate: float, donors: str) -> None:
    """Any areas, any rate in [0, 1] (1 and next to it included), both donor rules: the expected matrix
    is valid (no negative entry: the first-order formula's diagonal went below 0 at high rates), its rows
    sum to 1, the households per area are stationary (a swap exchanges households), and the flows keep
    their budgets: no area pairs more households than it selects, nor gives more donors than it has."""
    from pramkit.swap.implied import swap_flows

    m = random_swap_matrix(rate, list(range(len(sizes))), households=sizes, donors=donors).matrix
    n = np.asarray(sizes, dtype=float)
    assert (m >= 0).all() and np.allclose(m.sum(axis=1), 1.0, atol=1e-12)
    assert np.allclose(n @ m, n, rtol=1e-9, atol=1e-9)
    g = swap_flows(rate, sizes, donors=donors)
    assert (np.diag(g) == 0).all() and (g >= 0).all()
    assert (g.sum(axis=1) <= rate * n / 2 * (1 + 1e-9) + 1e-9).all()
    assert (g.sum(axis=0) <= n * (1 + 1e-9)).all()


@settings(max_examples=10, deadline=None)
@given(st.lists(st.lists(st.integers(1, 60), min_size=2, max_size=4), min_size=2, max_size=5),
       st.floats(0.0, 1.0))
def test_parents_of_one_size_give_each_parents_own_matrix_to_the_bit(parents: list[list[int]], rate: float) -> None:
    """Parents with as many areas step through the fluid limit together: each block of the whole matrix is,
    bit for bit, the matrix of that parent's areas alone (one parent, its own flows)."""
    labels = [f"{p}-{i}" for p, sizes in enumerate(parents) for i in range(len(sizes))]
    above = [p for p, sizes in enumerate(parents) for _ in sizes]
    whole = random_swap_matrix(rate, labels, parents=above, households=[n for sizes in parents for n in sizes])
    start = 0
    for p, sizes in enumerate(parents):
        alone = random_swap_matrix(rate, labels[start:start + len(sizes)], households=sizes)
        block = whole.matrix[start:start + len(sizes), start:start + len(sizes)]
        assert np.array_equal(block, alone.matrix), (p, sizes)
        start += len(sizes)


def test_equal_labels_of_other_types_are_other_matrices() -> None:
    """The matrix is made once for the same arguments, and 1, 1.0 and True are the same key to Python:
    areas labelled 1 and 0, 1.0 and 0.0, True and False each keep their own labels."""
    made = [random_swap_matrix(0.2, areas) for areas in ([1, 0], [1.0, 0.0], [True, False], [1, 0])]
    assert [m.categories for m in made] == [(1, 0), (1.0, 0.0), (True, False), (1, 0)]
    assert [type(m.categories[0]) for m in made] == [int, float, bool, int]


@pytest.mark.parametrize("donors", ["same-parent", "any-area"])
def test_rate_one_between_unequal_areas_against_the_count_by_hand(donors: str) -> None:
    """300 and 100 one-person households at rate 1: area B selects 50, all find donors in A; A selects
    150, and only B's 50 others are left to be their donors (under any-area, B's households are donors
    whether or not B's turn came first), so 100 of A's 300 move and all of B's 100: whatever the key, the
    realised table is the matrix's, exactly."""
    m = random_swap_matrix(1.0, ["A", "B"], households=[300, 100], donors=donors).matrix
    assert np.allclose(m, [[2 / 3, 1 / 3], [1.0, 0.0]], atol=1e-6)  # the fluid limit integrated: O(steps^-2)
    area = np.repeat([0, 1], [300, 100])
    data = pd.DataFrame({"hid": np.arange(400), "area": np.where(area == 0, "A", "B"), "one": 1})
    for seed in range(3):
        r = swap_frame(data, plan_swap("hid", ["area"], similar=[["one"]], rate=1.0, donors=donors),
                       key=bytes([seed]) * 32)
        released = (r.frame["area"] == "B").astype(int).to_numpy()
        assert transition_table(area, released, 2).tolist() == [[200, 100], [100, 0]]


@pytest.mark.slow
@pytest.mark.parametrize("donors,tolerance", [("same-parent", 0.02), ("any-area", 0.03)])
@pytest.mark.parametrize("rate", [0.5, 0.9, 0.99, 1.0])
def test_realised_transitions_match_the_expected_matrix_at_high_rates(rate: float, donors: str,
                                                                      tolerance: float) -> None:
    """Up to rate 1, the realised table over 12 keys (six unequal areas of one-person households) lies
    within the tolerance of the expected matrix; the first-order formula it replaces is off by more than
    0.03 from rate 0.9 on (and has a negative diagonal at rate 1)."""
    sizes = [1_000, 2_000, 3_000, 4_000, 6_000, 8_000]
    areas = len(sizes)
    area = np.repeat(np.arange(areas), sizes)
    data = pd.DataFrame({"hid": np.arange(area.size), "area": area, "one": 1})
    table = np.zeros((areas, areas))
    for seed in range(12):
        r = swap_frame(data, plan_swap("hid", ["area"], similar=[["one"]], rate=rate, donors=donors),
                       key=bytes([seed + 7]) * 32)
        table += transition_table(area, r.frame["area"].to_numpy(), areas)
    realised = table / table.sum(axis=1, keepdims=True)
    expected = random_swap_matrix(rate, list(range(areas)), households=sizes, donors=donors).matrix
    assert np.abs(realised - expected).max() < tolerance
    n = np.asarray(sizes, dtype=float)
    first = rate / 2 * n[None, :] / (n.sum() - n[:, None]) + rate / 2 * (n / (n.sum() - n))[None, :]
    np.fill_diagonal(first, 0.0)
    np.fill_diagonal(first, 1.0 - first.sum(axis=1))
    if rate >= 0.9:
        assert np.abs(realised - first).max() > 0.03


def test_same_key_same_release_and_another_key_another():
    data = census_households(20_000)
    plan = plan_swap("hid", ["region", "area"], risk_vars=["age", "sex"], similar=[["hsize"]], rate=0.1)
    a = swap_frame(data, plan, key=bytes(32)).frame
    assert a.equals(swap_frame(data, plan, key=bytes(32), chunk_rows=999).frame)
    assert not a.equals(swap_frame(data, plan, key=bytes([1]) * 32).frame)
    assert a["area"].dtype == data["area"].dtype  # categorical stays categorical


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_file_is_the_same_across_chunk_sizes_and_households_need_not_be_adjacent(tmp_path: Path, fmt: str):
    data = census_households(6_000).sample(frac=1.0, random_state=5)  # members scattered over the file
    src = tmp_path / f"data.{fmt}"
    data.to_csv(src, index=False) if fmt == "csv" else data.to_parquet(src, index=False)
    plan = plan_swap("hid", ["region", "area"], risk_vars=["age", "sex"], similar=[["hsize"]], rate=0.1)
    outs = []
    for chunk in (1 << 20, 777, 50):
        out = tmp_path / f"out{chunk}.{fmt}"
        swap_file(src, plan, out, key=bytes(32), chunk_rows=chunk)
        outs.append(sha256_of(out) if fmt == "csv" else read_table(out))  # Parquet: row groups follow the chunks
    released = read_table(tmp_path / f"out50.{fmt}")
    assert len(set(outs)) == 1 if fmt == "csv" else all(o.equals(released) for o in outs)
    assert not released["area"].equals(data["area"].astype(str).reset_index(drop=True))
    assert (released.groupby("hid")["area"].nunique() == 1).all()


def test_real_file_keeps_every_other_value(sdc_data: Path, tmp_path: Path):
    """eusilc: missing values, weights and the other columns come out as they went in."""
    src = sdc_data / "eusilc_laeken.csv"
    out = tmp_path / "released.csv"
    plan = plan_swap("db030", ["db040"], risk_vars=["age", "rb090"], similar=[["hsize"]], rate=0.05)
    result = swap_file(src, plan, out, key=bytes(32))
    before, after = read_table(src, na_values=()), read_table(out, na_values=())
    assert before.drop(columns="db040").equals(after.drop(columns="db040"))
    assert (before["pl030"] == "NA").any() or before["pl030"].isna().any()
    assert (before["db040"] != after["db040"]).sum() == result.swapped_records > 0
    assert (after.groupby("db030")["db040"].nunique() == 1).all()
    assert result.section["epsilon"] == "inf" and not result.section["matrix_known"]


def test_labels_are_written_back_exactly():
    """Areas spelled with blanks or decomposed accents (one spelling each) come back byte for byte."""
    names = ["Wien\u00a0", "Graz ", "Li\u0301nz", "Salzburg", " Innsbruck"]
    hid = np.arange(500)
    data = pd.DataFrame({"hid": hid, "area": [names[i % 5] for i in hid], "one": 1})
    out = swap_frame(data, plan_swap("hid", ["area"], similar=[["one"]], rate=0.5), key=bytes(32)).frame
    assert set(out["area"]) == set(names)
    assert sorted(out["area"].value_counts().tolist()) == sorted(data["area"].value_counts().tolist())


@pytest.mark.parametrize("first, second, how", [("Wien", "Wien\u00a0", "surrounding whitespace"),
                                                ("L\u00ednz", "Li\u0301nz", "NFC and NFD"),
                                                ("3", "3.0", "numeric spelling")])
def test_one_area_spelled_two_ways_is_refused(first, second, how):
    """The spelling rule of design and risk: two spellings of one area are not two areas."""
    hid = np.arange(40)
    data = pd.DataFrame({"hid": hid, "area": [first] * 20 + [second] * 20, "one": 1})
    with pytest.raises(DataError, match=rf"column 'area': {first!r} \(row 1\) and .* \(row 21\) are one value "
                                        rf"spelled two ways \(.*{how}"):
        swap_frame(data, plan_swap("hid", ["area"], similar=[["one"]], rate=0.5), key=bytes(32))


def test_a_manifest_only_for_random_swapping():
    plan = plan_swap("hid", ["region", "area"], rate=0.1)
    m = swap_manifest(plan, ["a", "b", "c"], parents=["x", "x", "y"])
    assert m["area"].matrix.epsilon == math.inf and m.swapping["matrix_known"]
    with pytest.raises(ParameterError, match="no matrix is known"):
        swap_manifest(plan_swap("hid", ["area"], risk_vars=["age"]), ["a", "b"])


@pytest.mark.parametrize("change, message", [
    ({"region": lambda d: d["region"].where((d["area"] != "A001") | (d["hid"] % 2 == 0), "R9")}, "not nested"),
    ({"area": lambda d: d["area"].where(d.index != 1, "A999")}, "lives in more than one area"),
    ({"area": lambda d: d["area"].where(d.index != 2, None)}, "missing on row 3"),
    ({"hid": lambda d: d["hid"].astype(object).where(d.index != 4, None)}, "household id 'hid' is missing"),
])
def test_bad_data(change, message):
    data = households(300, areas=10, regions=2)
    data = data.assign(**{k: f(data) for k, f in change.items()})
    with pytest.raises(DataError, match=message):
        swap_frame(data, plan_swap("hid", ["region", "area"], risk_vars=["age"]), key=bytes(32))


@pytest.mark.parametrize("kwargs, message", [
    ({"rate": -0.1}, "rate must lie in"), ({"rate": 1.01}, "rate must lie in"), ({"rate": float("nan")}, "rate"),
    ({"k": 0}, "at least 1"), ({"k": 2.5}, "integer"), ({"geo": []}, "at least one level"),
    ({"geo": ["hid"]}, "named twice"), ({"risk_vars": ["area"]}, "cannot be a risk"),
    ({"similar": [[]]}, "at least one column"),
])
def test_bad_parameters(kwargs, message):
    args = {"geo": ["area"], **kwargs}
    with pytest.raises(ParameterError, match=message):
        plan_swap("hid", args.pop("geo"), **args)


def test_manifest_section_round_trip_and_bad_section():
    m = swap_manifest(plan_swap("hid", ["area"], rate=0.1), ["a", "b", "c"], households=[5, 10, 20])
    back = Manifest.from_dict(json.loads(m.to_json()))
    assert back == m and back.swapping["guarantee"] == m.swapping["guarantee"]
    assert back.describe()["swapping"]["method"] == "random record swapping"
    bad = json.loads(m.to_json())
    bad["swapping"] = ["not", "an", "object"]
    with pytest.raises(ManifestError, match="'swapping' must be an object"):
        Manifest.from_dict(bad)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 60), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2), st.floats(0.0, 1.0),
       st.integers(0, 2**32 - 1))
def test_every_pair_respects_the_rules(n: int, areas: int, regions: int, sizes: int, rate: float, seed: int):
    """Any small file: partners are mutual, lie in another area of the same region, share the first
    profile that gives a donor, and the swapped households are twice the pairs."""
    rng = np.random.default_rng(seed)
    area = rng.integers(0, areas * regions, n)
    geo = np.vstack([area % regions, area])
    profiles = [rng.integers(0, sizes + 1, n), rng.integers(0, 2, n)]
    risky = rng.choice([0, 1, 2], n, p=[0.1, 0.2, 0.7])
    draw = draw_swaps(geo, profiles, risky, rng.uniform(0.1, 1.0, n), rate, SecretKey(bytes([seed % 256]) * 32, "t"))
    p = draw.partner
    assert (p[p] == np.arange(n)).all()
    moved = np.flatnonzero(p != np.arange(n))
    assert moved.size == draw.swapped and moved.size % 2 == 0
    across = moved[geo[0, moved] != geo[0, p[moved]]]  # only swaps of households risky at the region level
    assert ((risky[across] == 0) | (risky[p[across]] == 0)).all()
    assert (geo[1, moved] != geo[1, p[moved]]).all()
    assert all((profiles[0][i] == profiles[0][p[i]]) or (profiles[1][i] == profiles[1][p[i]]) for i in moved)


def test_transition_table_of_a_run():
    """The realised table counts every household once; its diagonal holds the households not swapped."""
    data = households(2_000, areas=12, regions=3, seed=5)
    r = swap_frame(data, plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.3), key=bytes(32))
    t = r.transitions
    assert t["households"].sum() == r.households
    assert t.loc[t["original"] == t["released"], "households"].sum() == r.households - r.swapped_households
    before = data.groupby("hid")["area"].first()
    after = r.frame.groupby("hid")["area"].first()
    expected = pd.crosstab(before, after).stack()
    got = t.set_index(["original", "released"])["households"]
    assert expected[expected > 0].sort_index().tolist() == got.sort_index().tolist()
