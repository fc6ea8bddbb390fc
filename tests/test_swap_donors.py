"""The donor rules of ``pramkit swap``: ``same-parent`` (the default) and ``any-area`` (sdcMicro recordSwap's),
measured on real households; the partners file; the expected matrix of an any-area swap against a simulation.

Every reference here is recomputed with pandas from the original file, apart from the code under test:
who is risky (a plain groupby of the cells), which region an area lies in, who received whose geography.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit import atomic
from pramkit.cli import main
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest
from pramkit.swap import (
    partners_table,
    plan_swap,
    random_swap_matrix,
    swap_file,
    swap_frame,
    swap_manifest,
    transition_table,
)
from pramkit.swap.census import census_households
from pramkit.swap.core import draw_swaps

#: NUTS 1 of Austria, the level above eusilc's regions (db040): East, South and West Austria.
NUTS1 = {"Burgenland": "AT1", "Lower Austria": "AT1", "Vienna": "AT1", "Carinthia": "AT2", "Styria": "AT2",
         "Upper Austria": "AT3", "Salzburg": "AT3", "Tyrol": "AT3", "Vorarlberg": "AT3"}


def eusilc() -> pd.DataFrame:
    """eusilc with its NUTS 1 level (households db030 in regions db040), missing values kept."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv")
    assert set(data["db040"]) == set(NUTS1)
    return data.assign(nuts1=data["db040"].map(NUTS1))


def risky_households(data: pd.DataFrame, hid: str, area: str, keys: list[str], k: int) -> set:
    """Households with a member whose cell (lowest area x keys) holds fewer than k persons: risky at some level
    (a cell of the lowest level is never larger than the same cell of a level above)."""
    count = data.groupby([area, *keys], observed=True, dropna=False)[hid].transform("size")
    return set(data.loc[count < k, hid])


CASES = {
    "census": (lambda: census_households(60_000), "hid", ["region", "area"], ["age", "sex", "race"]),
    "eusilc": (eusilc, "db030", ["nuts1", "db040"], ["age", "rb090"]),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request) -> dict:
    make, hid, geo, keys = CASES[request.param]
    data = make()
    runs = {}
    for donors in ("same-parent", "any-area"):
        for targeted in (False, True):
            plan = plan_swap(hid, geo, risk_vars=keys if targeted else [], similar=[["hsize"]], rate=0.05, k=3,
                             donors=donors)
            runs[donors, targeted] = swap_frame(data, plan, key=bytes(range(32)))
    return {"data": data, "hid": hid, "geo": geo, "keys": keys, "runs": runs,
            "risky": risky_households(data, hid, geo[-1], keys, 3)}


def lowest_level_swaps(case: dict, donors: str, targeted: bool) -> pd.DataFrame:
    """The selected side of every pair swapped across the lowest level."""
    pairs = partners_table(case["runs"][donors, targeted])
    return pairs[(pairs["role"] == "selected") & (pairs["level"] == case["geo"][-1])]


@pytest.mark.parametrize("targeted", [False, True], ids=["random", "targeted"])
def test_any_area_donors_cross_the_parent_region_and_same_parent_never(case: dict, targeted: bool) -> None:
    """Regions recomputed from the original file: under same-parent no swap of the lowest level leaves its region;
    under any-area most do (sdcMicro's recordSwap: 80 % on the census), about the share of households outside
    the household's own region."""
    data, hid, (region, area) = case["data"], case["hid"], case["geo"]
    region_of = data.groupby(area, observed=True)[region].first().astype(str)
    for donors in ("same-parent", "any-area"):
        swaps = lowest_level_swaps(case, donors, targeted)
        assert len(swaps) > 50
        before = swaps[f"{area}_before"].astype(str).map(region_of)
        after = swaps[f"{area}_after"].astype(str).map(region_of)
        assert (before == swaps[f"{region}_before"].astype(str)).all() and (after == swaps[f"{region}_after"].astype(str)).all()
        crossed = float((before != after).mean())
        if donors == "same-parent":
            assert crossed == 0.0
        else:
            households = data.groupby(hid)[region].first().astype(str)
            outside = 1.0 - float((households.value_counts(normalize=True) ** 2).sum())  # a random pair's chance
            assert crossed > 0.5 and abs(crossed - outside) < 0.2, (crossed, outside)


def test_any_area_prefers_risky_donors(case: dict) -> None:
    """Risk recomputed by a plain groupby.  The donors of the lowest level are drawn among the households never
    selected; under any-area (recordSwap's risk weights) risky households are at least twice as common among
    them as among all households never selected, and more common than in the file (census 0.53 against 0.20 and
    0.41; eusilc 0.08 against 0.005 and 0.05); same-parent never takes a household risky at the lowest level as
    its donor there; any-area pairs risky households together, same-parent hardly ever."""
    risky = case["risky"]
    households = set(case["data"][case["hid"]])
    share = len(risky) / len(households)
    assert 0.01 < share < 0.5
    paired = {}
    for donors in ("same-parent", "any-area"):
        pairs = partners_table(case["runs"][donors, True])
        selected = pairs[pairs["role"] == "selected"]
        never_selected = households - set(selected["household_id"])
        pool_share = len(risky & never_selected) / len(never_selected)
        lowest = pairs[(pairs["role"] == "donor") & (pairs["level"] == case["geo"][-1])]
        donor_share = float(lowest["household_id"].isin(risky).mean())
        paired[donors] = float((selected["household_id"].isin(risky) & selected["partner_id"].isin(risky)).mean())
        if donors == "any-area":
            assert donor_share > 2 * pool_share and donor_share > share, (donor_share, pool_share, share)
        else:
            assert donor_share == 0.0
    assert paired["any-area"] > 0.05 and paired["same-parent"] < paired["any-area"] / 2, paired


@pytest.mark.parametrize("donors", ["same-parent", "any-area"])
def test_every_risky_household_is_swapped_or_counted(case: dict, donors: str) -> None:
    """Every risky household leaves its lowest area (its partners file row says so) or is counted unswappable;
    any-area, with donors anywhere, finds one for all of them here."""
    result = case["runs"][donors, True]
    moved = set(partners_table(result)["household_id"])
    assert len(case["risky"] - moved) <= result.unswappable
    if donors == "any-area":
        assert result.unswappable == 0 and case["risky"] <= moved


def test_the_receipt_names_the_rule_and_claims_no_sdcmicro_semantics_for_same_parent(case: dict) -> None:
    geo = case["geo"]
    same = case["runs"]["same-parent", False].section
    anywhere = case["runs"]["any-area", False].section
    assert same["donors"] == "same-parent" and anywhere["donors"] == "any-area"
    assert "same-parent" in same["semantics"] and "not sdcMicro" in same["donor_rule"]
    assert "sdcMicro recordSwap's donor pool" in anywhere["semantics"] and "fresh keyed draw" in anywhere["semantics"]
    assert f"same {geo[0]}" in same["guarantee"] and "any other area" in anywhere["guarantee"]
    # same-parent keeps the region (released exactly, epsilon given it); any-area does not: one block
    assert same["epsilon"] == "inf" and f"epsilon_given_{geo[0]}" in same
    assert f"epsilon_given_{geo[0]}" not in anywhere and f"{geo[0]} is released exactly" not in anywhere["guarantee"]
    data, area = case["data"], geo[-1]
    counts = data.groupby(area, observed=True)[case["hid"]].nunique()
    expected = random_swap_matrix(0.05, [str(a) for a in counts.index], households=counts.tolist(),
                                  donors="any-area").epsilon
    assert anywhere["epsilon"] == pytest.approx(expected, rel=1e-12) and np.isfinite(anywhere["epsilon"])


def check_partners(data: pd.DataFrame, released: pd.DataFrame, pairs: pd.DataFrame, hid: str, geo: list[str]) -> None:
    """The pairs are symmetric and are exactly the released file's changes."""
    pairs = pairs.astype({"household_id": str, "partner_id": str})
    back = pairs.set_index("household_id")["partner_id"]
    assert back.index.is_unique and (back.reindex(back.to_numpy()).to_numpy() == back.index.to_numpy()).all()
    assert (pairs.groupby("level").size() % 2 == 0).all() and (pairs["role"].value_counts() == len(pairs) // 2).all()
    before = data.astype({hid: str}).groupby(hid)[geo].first().astype(str)
    after = released.astype({hid: str}).groupby(hid)[geo].first().astype(str)
    changed = before.index[(before != after).any(axis=1)]
    assert set(changed) == set(pairs["household_id"])
    for level in geo:
        # each swapped household received its partner's original geography, and the file says so
        assert (after.loc[pairs["household_id"], level].to_numpy() == before.loc[pairs["partner_id"], level].to_numpy()).all()
        assert (pairs[f"{level}_before"].astype(str).to_numpy() == before.loc[pairs["household_id"], level].to_numpy()).all()
        assert (pairs[f"{level}_after"].astype(str).to_numpy() == after.loc[pairs["household_id"], level].to_numpy()).all()
    levels = pairs.groupby("household_id")["level"].first()
    for level in geo:  # a pair swapped across a level lies in two areas of it
        rows = pairs[pairs["level"] == level]
        assert (rows[f"{level}_before"] != rows[f"{level}_after"]).all()
    assert set(levels) <= set(geo)


@pytest.mark.parametrize("donors, suffix", [("any-area", ".csv"), ("same-parent", ".parquet")])
def test_partners_file_pairs_are_symmetric_and_match_the_release(tmp_path: Path, capsys, donors: str,
                                                                 suffix: str) -> None:
    """eusilc through the CLI (missing values in other columns; region labels with a no-break space and a
    combining accent, which are other regions): the partners file, private (mode 0600), is the release's changes."""
    data = eusilc()
    data.loc[data["db040"] == "Tyrol", "db040"] = "Tyrol\u00a0"
    data.loc[data["db040"] == "Salzburg", "db040"] = "Salzbu\u0301rg"
    src = tmp_path / "data.csv"
    data.to_csv(src, index=False)
    out, pairs_file = tmp_path / "out.csv", tmp_path / "private" / f"pairs{suffix}"
    pairs_file.parent.mkdir()
    code = main(["swap", str(src), "--hid", "db030", "--geo", "nuts1,db040", "--risk-vars", "age,rb090",
                 "--similar", "hsize", "--donors", donors, "--out", str(out), "--partners", str(pairs_file),
                 "--key-file", str(write_key(tmp_path))])
    text = capsys.readouterr().out
    assert code == 0 and "PRIVATE" in text and f"donors: {donors}" in text
    assert stat.S_IMODE(os.stat(pairs_file).st_mode) == 0o600
    pairs = pd.read_csv(pairs_file, keep_default_na=False) if suffix == ".csv" else pd.read_parquet(pairs_file)
    released = pd.read_csv(out, keep_default_na=False)
    original = pd.read_csv(src, keep_default_na=False)
    assert {"Tyrol\u00a0", "Salzbu\u0301rg"} <= set(pairs["db040_before"]) | set(pairs["db040_after"])
    check_partners(original, released, pairs, "db030", ["nuts1", "db040"])
    assert released.drop(columns=["nuts1", "db040"]).equals(original.drop(columns=["nuts1", "db040"]))
    receipt = json.loads((tmp_path / "out.csv.receipt.json").read_text())
    assert receipt["swapping"]["donors"] == donors
    assert "pairs" not in json.dumps(receipt)  # the receipt never names the private file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "key", "out.csv", "out.csv.receipt.json",
                                                          "private"]


def write_key(folder: Path) -> Path:
    key = folder / "key"
    if not key.exists():
        assert main(["keygen", str(key)]) == 0
    return key


def test_partners_of_the_census_frame_match_the_released_frame() -> None:
    data = census_households(20_000)
    for donors in ("same-parent", "any-area"):
        plan = plan_swap("hid", ["region", "area"], risk_vars=["age", "sex"], similar=[["hsize"]], rate=0.1,
                         donors=donors)
        result = swap_frame(data, plan, key=bytes(32))
        pairs = partners_table(result)
        assert len(pairs) == result.swapped_households
        check_partners(data, result.frame, pairs, "hid", ["region", "area"])


def test_the_default_rule_is_same_parent_and_unchanged() -> None:
    """No flag, no keyword: same-parent, and the release is the one an explicit same-parent makes."""
    data = census_households(5_000)
    plain = swap_frame(data, plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.2), key=bytes(32))
    explicit = swap_frame(data, plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.2,
                                          donors="same-parent"), key=bytes(32))
    assert plain.section["donors"] == "same-parent" and plain.frame.equals(explicit.frame)
    anywhere = swap_frame(data, plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.2,
                                          donors="any-area"), key=bytes(32))
    assert not anywhere.frame.equals(plain.frame)


def test_manifest_of_an_any_area_swap_has_one_block_and_says_how_it_is_computed() -> None:
    plan = plan_swap("hid", ["region", "area"], rate=0.1, donors="any-area")
    m = swap_manifest(plan, ["a", "b", "c"], parents=["x", "x", "y"], households=[10, 20, 30])
    matrix = m["area"].matrix.matrix
    assert (matrix > 0).all() and np.allclose(matrix.sum(axis=1), 1.0)
    same = swap_manifest(plan_swap("hid", ["region", "area"], rate=0.1), ["a", "b", "c"], parents=["x", "x", "y"],
                         households=[10, 20, 30])
    assert same["area"].matrix.matrix[0, 2] == 0.0 and same["area"].matrix.matrix[2, 2] == 1.0
    rule = m.ledger.data_dependent[-1]
    assert "donor rule any-area" in rule and "any other area of area" in rule
    assert "donor rule same-parent" in same.ledger.data_dependent[-1]
    back = Manifest.from_dict(json.loads(m.to_json()))
    assert back == m and back.swapping["donors"] == "any-area"


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.05, 0.2])
def test_any_area_transitions_match_the_expected_matrix_over_keys(rate: float) -> None:
    """Monte Carlo over 24 keys: one person per household, six areas of unequal size in two regions. The
    realised table of any-area swaps, row-normalised, is the first-order matrix without blocks (donors from
    any other area), within 0.003; the block matrix of same-parent is far from it across regions."""
    sizes = [1_000, 2_000, 3_000, 4_000, 6_000, 8_000]
    areas = len(sizes)
    area = np.repeat(np.arange(areas), sizes)
    data = pd.DataFrame({"hid": np.arange(area.size), "region": area // 3, "area": area, "one": 1})
    plan = plan_swap("hid", ["region", "area"], similar=[["one"]], rate=rate, donors="any-area")
    table = np.zeros((areas, areas))
    for seed in range(24):
        r = swap_frame(data, plan, key=hashlib.sha256(bytes([seed])).digest())
        assert (np.bincount(r.frame["area"], minlength=areas) == sizes).all()
        table += transition_table(area, r.frame["area"].to_numpy(), areas)
    realised = table / table.sum(axis=1, keepdims=True)
    expected = random_swap_matrix(rate, list(range(areas)), households=sizes, donors="any-area").matrix
    assert np.abs(realised - expected).max() < 0.003
    blocks = random_swap_matrix(rate, list(range(areas)), parents=[a // 3 for a in range(areas)], households=sizes)
    assert realised[0, 5] > 0.3 * rate and blocks.matrix[0, 5] == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 80), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2), st.floats(0.0, 1.0),
       st.integers(0, 2**32 - 1))
def test_every_any_area_pair_respects_the_rules(n: int, areas: int, regions: int, sizes: int, rate: float,
                                                seed: int) -> None:
    """Any small file: partners are mutual, lie in two areas of the level their swap crossed (any region),
    share the first or the second profile, each pair has one selected side and one donor, and households risky
    at a level that were swapped as selected crossed that level."""
    rng = np.random.default_rng(seed)
    area = rng.integers(0, areas * regions, n)
    geo = np.vstack([area % regions, area])
    profiles = [rng.integers(0, sizes + 1, n), rng.integers(0, 2, n)]
    risky = rng.choice([0, 1, 2], n, p=[0.1, 0.2, 0.7])
    weight = rng.uniform(0.1, 1.0, (2, n))
    draw = draw_swaps(geo, profiles, risky, weight[1], rate, SecretKey(bytes([seed % 256]) * 32, "t"),
                      donors="any-area", level_weight=weight)
    p = draw.partner
    assert (p[p] == np.arange(n)).all()
    moved = np.flatnonzero(p != np.arange(n))
    assert moved.size == draw.swapped and moved.size % 2 == 0
    assert (draw.level[moved] >= 0).all() and (draw.level[p[moved]] == draw.level[moved]).all()
    assert (draw.donor[moved] != draw.donor[p[moved]]).all()
    assert (geo[draw.level[moved], moved] != geo[draw.level[moved], p[moved]]).all()
    assert all((profiles[0][i] == profiles[0][p[i]]) or (profiles[1][i] == profiles[1][p[i]]) for i in moved)
    selected = moved[~draw.donor[moved]]
    assert (draw.level[selected][risky[selected] < 2] == risky[selected][risky[selected] < 2]).all()
    assert draw.targeted.sum() <= (risky < 2).sum()


BAD = [
    (["--donors", "anywhere"], "invalid choice: 'anywhere'"),
    (["--donors", ""], "invalid choice"),
    (["--partners", "{d}/pairs.txt"], "must end in .csv or .parquet"),
    (["--partners", "{d}/data.csv"], "data.csv"),
    (["--partners", "{d}/out.csv"], "out.csv"),
    (["--partners", "{d}/key.csv"], "key.csv"),
    (["--partners", "{d}/exists.csv"], "exists"),
    (["--partners", "{d}/missing-folder/pairs.csv"], "missing-folder"),
]


@pytest.mark.parametrize("extra, message", BAD)
def test_bad_input_for_the_new_flags(tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    """Exit 2, one line naming the flag or file, nothing written, the inputs unchanged."""
    census_households(2_000).to_csv(tmp_path / "data.csv", index=False)
    assert main(["keygen", str(tmp_path / "key.csv")]) == 0
    (tmp_path / "exists.csv").write_text("keep me\n")
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code = main(["swap", str(tmp_path / "data.csv"), "--hid", "hid", "--geo", "region,area", "--similar", "hsize",
                 "--out", str(tmp_path / "out.csv"), "--key-file", str(tmp_path / "key.csv"),
                 *[e.format(d=tmp_path) for e in extra]])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_bad_donor_rule_in_the_library() -> None:
    with pytest.raises(ParameterError, match="unknown donor rule 'sdcmicro': use same-parent or any-area"):
        plan_swap("hid", ["area"], donors="sdcmicro")
    with pytest.raises(ValueError, match="unknown donor rule"):
        draw_swaps(np.zeros((1, 2), dtype=np.int64), [], np.ones(2, dtype=np.int64), np.ones(2), 0.5,
                   SecretKey(bytes(32), "t"), donors="nearest")


@pytest.mark.parametrize("point", ["write", "rename"])
def test_a_failed_write_of_the_partners_file(tmp_path: Path, capsys, monkeypatch, point: str) -> None:
    """The partners file cannot be written: exit 2, one line, no partners file, no temporary; a failed write
    leaves nothing at all (it is written before anything is renamed into place), a failed rename (the
    partners file is renamed last) leaves the release and its receipt, complete."""
    src = tmp_path / "in" / "data.csv"
    src.parent.mkdir()
    census_households(2_000).to_csv(src, index=False)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if point == "write":
        original_write = atomic._write_file

        def write_file(path: Path, data: bytes) -> None:
            if path.name.startswith(".pairs.csv"):
                raise OSError(28, "No space left on device")
            original_write(path, data)

        monkeypatch.setattr(atomic, "_write_file", write_file)
    else:
        original_commit = atomic._commit

        def commit(tmp: Path, target: Path, **kwargs) -> None:
            if target.name == "pairs.csv":
                raise OSError(28, "No space left on device")
            original_commit(tmp, target, **kwargs)

        monkeypatch.setattr(atomic, "_commit", commit)
    code = main(["swap", str(src), "--hid", "hid", "--geo", "region,area", "--similar", "hsize", "--donors",
                 "any-area", "--out", str(out_dir / "out.csv"), "--partners", str(out_dir / "pairs.csv")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot write" in err, err
    left = sorted(p.name for p in out_dir.iterdir())
    assert left == ([] if point == "write" else ["out.csv", "out.csv.receipt.json"])
    assert sorted(p.name for p in src.parent.iterdir()) == ["data.csv"]


def test_library_partners_file_and_result(tmp_path: Path) -> None:
    """swap_file writes the partners file only when asked, and the result holds the same pairs."""
    src = tmp_path / "data.parquet"
    data = census_households(3_000)
    data.to_parquet(src)
    plan = plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.2, donors="any-area")
    plain = swap_file(src, plan, tmp_path / "a.parquet", key=bytes(32))
    assert plain.partners is None and sorted(p.name for p in tmp_path.iterdir()) == [
        "a.parquet", "a.parquet.receipt.json", "data.parquet"]
    result = swap_file(src, plan, tmp_path / "b.parquet", key=bytes(32), partners=tmp_path / "pairs.parquet")
    pairs = pd.read_parquet(tmp_path / "pairs.parquet")
    assert result.partners == str(tmp_path / "pairs.parquet") and "pairs" not in result.to_dict()
    assert pairs.equals(partners_table(result)) and len(pairs) == result.swapped_households
    check_partners(data, pd.read_parquet(tmp_path / "b.parquet"), pairs, "hid", ["region", "area"])
    with pytest.raises(ParameterError, match=r"must end in \.csv or \.parquet"):
        swap_file(src, plan, tmp_path / "c.parquet", key=bytes(32), partners=tmp_path / "pairs.json")


def test_compare_takes_the_donor_rule(capsys, tmp_path: Path) -> None:
    """`pramkit compare --donors any-area` swaps with that rule (the shared plan flags): its swap changes other
    records than the default's, and a bad rule is one line, exit 2."""
    data = census_households(4_000)
    data.to_csv(tmp_path / "data.csv", index=False)
    argv = ["compare", str(tmp_path / "data.csv"), "--hid", "hid", "--geo", "region,area", "--risk-vars", "age,sex",
            "--similar", "hsize", "--rate", "0.1", "--json"]
    shares = []
    for extra in ([], ["--donors", "any-area"]):
        assert main([*argv, *extra]) == 0
        methods = json.loads(capsys.readouterr().out)["methods"]
        assert methods[1]["method"] == "targeted record swapping"
        shares.append(methods[1]["share_records_changed"])
    assert shares[0] != shares[1]
    assert main([*argv, "--donors", "nearest"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "invalid choice: 'nearest'" in err
