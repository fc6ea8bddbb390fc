"""Structure-aware PRAM: edit rules, strata, kept codes and households.

Every property is checked on the engine's actual output (a million rows and more),
and every epsilon against a brute-force computation in exact arithmetic.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from pramkit import Manifest, PramMatrix
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.engine.perturb import perturb_frame
from pramkit.errors import DataError, ParameterError
from pramkit.information import mutual_information
from pramkit.release.pipeline import design_planned, design_release
from pramkit.release.plan import plan_release
from pramkit.structure import Rules, cells_and_blocks, read_rules

KEY = b"structure-test-key-0123456789abcdef"
NOT_SINGLE = "married, spouse present|married, spouse absent|separated|divorced|widowed"
CHILD_RULE = [{"age": "0-9", "marital_status": NOT_SINGLE}]


def _released(data: pd.DataFrame, manifest: Manifest) -> pd.DataFrame:
    out = perturb_frame(data, manifest, key=KEY)
    return out[0] if isinstance(out, tuple) else out.data


@pytest.fixture(scope="module")
def big() -> pd.DataFrame:
    """1.2 million census-like records with a household id and a household-level region."""
    d = census(1_200_000, seed=7)
    d["hid"] = np.arange(len(d)) // 3
    d["region"] = np.array(["north", "south", "east", "west", "centre"])[(d["hid"].to_numpy() * 7919) % 5]
    return d


def _exact_epsilon_given_block(m: PramMatrix) -> Fraction:
    """max over rows x, x' of one block and outputs z of M[x, z] / M[x', z], in exact arithmetic."""
    dense = m.matrix
    worst = Fraction(1)
    for idx, _ in m.blocks or [(np.arange(m.size), m)]:
        for x, y in itertools.permutations(idx.tolist(), 2):
            for z in idx.tolist():
                a, b = Fraction(float(dense[x, z])), Fraction(float(dense[y, z]))
                if a > 0:
                    assert b > 0, "a column of a block mixes zero and positive entries"
                    worst = max(worst, a / b)
    return worst


# -- the cells and the blocks ---------------------------------------------------------------------------

def test_cells_are_the_product_minus_what_a_rule_forbids():
    cats = [["0-9", "10-17", "18+"], ["single", "married", "widowed"], ["yes", "no"]]
    rules = Rules.of([{"age": "0-9|10-17", "marital": "married|widowed"}, {"age": "0-9", "works": "yes"}])
    got = cells_and_blocks(["age", "marital", "works"], cats, rules=rules)
    expected = []
    for a, m, w in itertools.product(*cats):  # written out plainly
        if a in ("0-9", "10-17") and m in ("married", "widowed"):
            continue
        if a == "0-9" and w == "yes":
            continue
        expected.append((a, m, w))
    assert got.cells == expected and len(got.blocks) == 1


def test_blocks_are_strata_and_kept_codes():
    cats = [["f", "m"], ["a", "b", "n/a"]]
    got = cells_and_blocks(["sex", "x"], cats, strata=1, keep={"x": frozenset({"n/a"})})
    blocks = sorted(sorted(got.cells[i] for i in b) for b in got.blocks)
    assert blocks == [[("f", "a"), ("f", "b")], [("f", "n/a")], [("m", "a"), ("m", "b")], [("m", "n/a")]]


@pytest.mark.parametrize("rules, strata, message", [
    ([{"x": "a|b"}], 0, "forbid every combination"),
    ([{"sex": "f", "x": "a|b"}], 1, "forbid every value of x in the stratum sex=f"),
])
def test_rules_that_forbid_everything_are_refused(rules, strata, message):
    cats = [["f", "m"], ["a", "b"]] if strata else [["a", "b"]]
    cols = ["sex", "x"] if strata else ["x"]
    with pytest.raises(ParameterError, match=message):
        cells_and_blocks(cols, cats, strata=strata, rules=Rules.of(rules))


@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ("age,age\n0-9,1\n", "distinct variables"),
    ("age,sex\n0-9,f,extra\n", "line 2 .* has 3 fields"),
    ("age,sex\n,\n", "would forbid every record"),
    ("age,sex\n", "has no rules"),
])
def test_bad_rules_files(tmp_path, text, message):
    path = tmp_path / "rules.csv"
    path.write_text(text)
    with pytest.raises((DataError, ParameterError), match=message):
        read_rules(path)


# -- the engine's output ---------------------------------------------------------------------------------

def test_no_released_record_holds_a_forbidden_combination(big):
    m = design_release(big, ["age", "marital_status"], epsilon=3.0, split="joint", forbid=CHILD_RULE,
                       categories=CENSUS_VARIABLES, rng=random.Random(1))
    out = _released(big, m)
    children = out["age"] == "0-9"
    assert children.sum() > 50_000
    assert (out.loc[children, "marital_status"] == "never married").all()
    assert (out["age"] != big["age"]).mean() > 0.05  # values do move
    cells = m.variables[0].matrix.categories
    assert ("0-9", "married, spouse present") not in cells and len(cells) == 9 * 6 - 5


def test_values_never_leave_their_stratum_and_kept_codes_never_move(big):
    rules = [{"sex": "male", "marital_status": "widowed"}]  # a stratum that allows fewer values
    data = big[~((big["sex"] == "male") & (big["marital_status"] == "widowed"))]
    m = design_release(data, ["age", "marital_status"], epsilon=3.0, strata="sex", forbid=rules,
                       keep_codes={"age": "0-9|75+"}, categories=CENSUS_VARIABLES, rng=random.Random(2))
    out = _released(data, m)
    assert (out["sex"].to_numpy() == data["sex"].to_numpy()).all()
    assert not ((out["sex"] == "male") & (out["marital_status"] == "widowed")).any()
    for code in ("0-9", "75+"):  # never entered, never left
        assert ((out["age"] == code).to_numpy() == (data["age"] == code).to_numpy()).all()
    moved = out["age"] != data["age"]
    assert 0.05 < moved.mean() < 0.9


def test_household_members_share_the_released_household_values(big):
    plan = plan_release(["region", "age"], epsilon=2.0, household="hid", household_vars="region",
                        categories={**CENSUS_VARIABLES, "region": ("north", "south", "east", "west", "centre")})
    m, record = design_planned(big, plan, rng=random.Random(3))
    assert m["region"].unit == "hid" and m["age"].unit is None
    assert record.extra["households"] == 400_000
    out = _released(big, m)
    assert out.groupby("hid")["region"].nunique().max() == 1
    changed = out.groupby("hid")["region"].first() != big.groupby("hid")["region"].first()
    # the household-level change rate is 1 - q of the design, within 5 standard errors
    q = m["region"].matrix.diagonal
    shares = big.groupby("hid")["region"].first().map(dict(zip(m["region"].matrix.categories, 1 - q)))
    expected = shares.mean()
    assert abs(changed.mean() - expected) < 5 * math.sqrt(expected * (1 - expected) / len(changed))
    # the draw follows the household, not the row: the same households in another order get the same values
    shuffled = big.sample(frac=1.0, random_state=4)
    again = _released(shuffled, m)
    assert (again.groupby("hid")["region"].first() == out.groupby("hid")["region"].first()).all()


def test_strata_apply_to_person_variables_beside_household_variables(big):
    d = big.iloc[:300_000]
    m = design_release(d, ["region", "age"], epsilon=2.0, household="hid", household_vars="region", strata="sex",
                       categories={**CENSUS_VARIABLES, "region": ("north", "south", "east", "west", "centre")},
                       rng=random.Random(21))
    assert m["region"].given == () and m["region"].unit == "hid" and m["age"].given == ("sex",)
    out = _released(d, m)
    assert (out["sex"].to_numpy() == d["sex"].to_numpy()).all()
    assert out.groupby("hid")["region"].nunique().max() == 1
    assert (out["age"] != d["age"]).mean() > 0.05


def test_a_household_variable_that_varies_within_a_household_is_refused():
    d = pd.DataFrame({"hid": [1, 1, 2, 2], "region": ["a", "b", "a", "a"], "age": ["x", "y", "x", "y"]})
    with pytest.raises(DataError, match="household 1 has several values of 'region'"):
        design_release(d, ["region", "age"], epsilon=2.0, household="hid", household_vars="region",
                       exact_frequencies=True)
    ok = d.assign(region=["a", "a", "b", "b"])
    m = design_release(ok, ["region", "age"], epsilon=2.0, household="hid", household_vars="region",
                       exact_frequencies=True)
    with pytest.raises(DataError, match="household 1 has several values of region"):
        _released(d, m)
    with pytest.raises(DataError, match="row 2 has no household id"):
        _released(ok.assign(hid=[1, None, 2, 2]), m)


def test_a_record_breaking_a_rule_is_an_error_naming_its_row_or_is_kept():
    d = census(3_000, seed=5)
    d.loc[17, ["age", "marital_status"]] = ["0-9", "widowed"]
    with pytest.raises(DataError, match=r"row 18 breaks rule 1 .*age=0-9 and marital_status="):
        design_release(d, ["age", "marital_status"], epsilon=2.0, split="joint", forbid=CHILD_RULE,
                       categories=CENSUS_VARIABLES)
    plan = plan_release(["age", "marital_status"], epsilon=2.0, split="joint", forbid=CHILD_RULE,
                        categories=CENSUS_VARIABLES, rule_breaking="keep")
    assert any("break a rule" in n for n in design_planned(d, plan).record.notes)


# -- the guarantees -----------------------------------------------------------------------------------

def test_epsilon_given_the_block_against_brute_force():
    d = census(20_000, seed=6)
    m = design_release(d, ["marital_status"], epsilon=2.0, strata="sex", keep_codes={"marital_status": "widowed"},
                       categories=CENSUS_VARIABLES, exact_frequencies=True)
    v = m["marital_status"]
    assert math.isinf(v.epsilon) and math.isinf(m.record_epsilon)  # strata and kept codes are released exactly
    exact = _exact_epsilon_given_block(v.matrix)
    assert math.exp(v.block_epsilon) >= exact  # the stated epsilon covers every pair
    assert math.log(exact) == pytest.approx(v.block_epsilon, rel=1e-9)  # and is attained
    assert m.record_epsilon_given_structure <= 2.0
    assert "the strata (sex, released unperturbed)" in m.guarantee
    assert "whether marital_status is one of the values it never changes ('widowed')" in m.guarantee


def test_the_joint_design_over_allowed_cells_is_dp_with_the_stated_epsilon():
    d = census(20_000, seed=8)
    m = design_release(d, ["age", "marital_status"], epsilon=2.0, split="joint", forbid=CHILD_RULE,
                       categories=CENSUS_VARIABLES, exact_frequencies=True)
    v = m.variables[0]
    assert math.log(_exact_epsilon_given_block(v.matrix)) <= v.epsilon * (1 + 1e-12)
    assert m.record_epsilon <= 2.0 and not m.is_structured


def test_the_restricted_design_is_the_best_form8_design_on_a_grid():
    """Three allowed cells: every form (8) matrix on a grid of q, kept if epsilon-DP; none beats the design."""
    d = pd.DataFrame({"a": ["x"] * 50 + ["y"] * 30 + ["y"] * 20, "b": ["u"] * 50 + ["u"] * 30 + ["v"] * 20})
    rules = [{"a": "x", "b": "v"}]
    eps = 1.0
    m = design_release(d, ["a", "b"], epsilon=eps, split="joint", forbid=rules, exact_frequencies=True)
    v = m.variables[0]
    assert v.matrix.size == 3
    p = np.array([50, 30, 20]) / 100.0  # cells (x,u), (y,u), (y,v)
    got = mutual_information(p, v.matrix.matrix)
    grid = np.linspace(0.0, 1.0, 121)
    q = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), -1).reshape(-1, 3)
    mats = np.repeat(((1 - q) / 2)[:, :, None], 3, axis=2)  # every form (8) matrix of the grid, vectorised
    mats[:, [0, 1, 2], [0, 1, 2]] = q
    col_max, col_min = mats.max(axis=1), mats.min(axis=1)
    ok = np.all(col_min > 0, axis=1) & np.all(col_max <= math.exp(eps) * col_min * (1 + 1e-12), axis=1)
    mats = mats[ok]
    pz = np.einsum("x,nxz->nz", p, mats)
    info = np.einsum("x,nxz->n", p, mats * np.log(mats / pz[:, None, :]))
    best = float(info.max())
    assert got >= best - 1e-9  # no grid point beats it
    assert got <= best + 0.02  # and the grid comes close (resolution 1/120)


def test_a_rule_coupling_independent_variables_is_refused():
    with pytest.raises(ParameterError, match="couples age and marital_status.*use split joint"):
        design_release(census(2_000), ["age", "marital_status"], epsilon=2.0, forbid=CHILD_RULE,
                       categories=CENSUS_VARIABLES)


@pytest.mark.parametrize("kwargs, message", [
    ({"strata": "age"}, "age is perturbed, so it cannot also be a stratum"),
    ({"forbid": [{"education": "n/a", "age": "0-9"}], "split": "joint"}, "names 'education', which is neither"),
    ({"forbid": [{"age": "0-7"}], "split": "joint"}, "'0-7' is not a category of 'age'"),
    ({"keep_codes": {"age": "100+"}}, "kept code '100\\+' is not a category of 'age'"),
    ({"keep_codes": {"race": "white"}}, "kept codes name 'race'"),
    ({"household_vars": "age"}, "need the household id"),
    ({"household": "age", "household_vars": "age"}, "cannot be perturbed or a stratum"),
    ({"rule_breaking": "ignore"}, "rule breaking must be one of"),
])
def test_bad_structure_is_one_clear_error(kwargs, message):
    with pytest.raises((ParameterError, DataError), match=message):
        design_release(census(2_000), ["age", "marital_status"], epsilon=2.0, categories=CENSUS_VARIABLES,
                       **kwargs)


def test_a_structured_manifest_round_trips(tmp_path):
    m = design_release(census(5_000), ["age"], epsilon=2.0, strata="sex", keep_codes={"age": "0-9"},
                       categories=CENSUS_VARIABLES, rng=random.Random(9))
    path = m.write(tmp_path / "m.json")
    data = json.loads(path.read_text())
    assert data["version"] == 5 and data["record_epsilon"] == "inf"
    assert data["variables"][0]["form"] == "blocks" and data["variables"][0]["given"] == ["sex"]
    assert data["input"]["structure"]["keep_codes"] == {"age": ["0-9"]}
    again = Manifest.read(path)
    assert again["age"].matrix == m["age"].matrix
    assert again.record_epsilon_given_structure == m.record_epsilon_given_structure


# -- estimation from the released file --------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, variable", [
    ({"strata": "sex", "keep_codes": {"age": "0-9"}}, "age"),
    ({"split": "joint", "forbid": [{"age": "0-9|10-17", "sex": "female"}]}, "age*sex"),
])
def test_estimates_over_the_cells_are_unbiased(kwargs, variable):
    """Monte Carlo over 60 keys: the mean estimate of every cell is its true count within 4.5 standard
    errors of the mean; forbidden cells are not estimated (they are not cells)."""
    from pramkit.estimate.table import estimate_table

    d = census(20_000, seed=11)
    if "forbid" in kwargs:
        d = d[~(d["age"].isin(["0-9", "10-17"]) & (d["sex"] == "female"))].reset_index(drop=True)
    names = ["age"] if "strata" in kwargs else ["age", "sex"]
    m = design_release(d, names, epsilon=3.0, categories=CENSUS_VARIABLES, exact_frequencies=True, **kwargs)
    cells = m[variable].matrix.categories
    columns = m[variable].read_columns
    truth = np.array([((d[list(columns)] == pd.Series(dict(zip(columns, c)))).all(axis=1)).sum() for c in cells])
    runs = []
    for i in range(60):
        out = perturb_frame(d, m, key=f"estimation-key-{i:02d}-0123456789abcdef".encode())
        released = out[0] if isinstance(out, tuple) else out.data
        res = estimate_table(released, m, variable)
        assert list(res.categories[0]) == list(cells)
        runs.append(res.table.counts)
    runs = np.array(runs)
    sem = runs.std(axis=0, ddof=1) / math.sqrt(len(runs))
    assert np.all(np.abs(runs.mean(axis=0) - truth) <= 4.5 * sem + 1e-6)
    if "forbid" in kwargs:
        assert ("0-9", "female") not in cells


def test_a_released_file_with_a_combination_outside_the_cells_is_refused():
    from pramkit.estimate.table import estimate_table

    d = census(3_000, seed=12)
    m = design_release(d, ["age", "marital_status"], epsilon=2.0, split="joint", forbid=CHILD_RULE,
                       categories=CENSUS_VARIABLES, exact_frequencies=True)
    bad = d.copy()
    bad.loc[0, ["age", "marital_status"]] = ["0-9", "widowed"]
    with pytest.raises(DataError, match="never releases"):
        estimate_table(bad, m, "age*marital_status")
    with pytest.raises(Exception, match="tabulate its variable 'age\\*marital_status'"):
        estimate_table(d, m, "age")
    stratified = design_release(d, ["age"], epsilon=2.0, strata="sex", categories=CENSUS_VARIABLES,
                                exact_frequencies=True)
    with pytest.raises(Exception, match="'sex' is part of the cells of 'age'"):
        estimate_table(d, stratified, "age", by="sex")


def test_a_record_missing_one_variable_still_counts_in_the_others_designs():
    d = census(20_000, seed=13)
    d["marital_status"] = d["marital_status"].where(d["age"] != "0-9")
    record = design_planned(d, plan_release(["age", "marital_status"], epsilon=4.0, categories=CENSUS_VARIABLES,
                                            exact_frequencies=True)).record
    rec = record.variables
    assert rec["age"]["counts"] == [int((d["age"] == c).sum()) for c in CENSUS_VARIABLES["age"]]
    assert rec["marital_status"]["counts"] == [int((d["marital_status"] == c).sum())
                                               for c in CENSUS_VARIABLES["marital_status"]]
    assert record.missing == int(d["marital_status"].isna().sum())


def test_the_general_lp_over_allowed_cells_keeps_at_least_the_form8_information():
    d = census(5_000, seed=14)
    kw = dict(epsilon=2.0, split="joint", categories={"sex": CENSUS_VARIABLES["sex"],
                                                     "ownership": CENSUS_VARIABLES["ownership"]},
              forbid=[{"sex": "female", "ownership": "n/a"}], exact_frequencies=True)
    d = d[~((d["sex"] == "female") & (d["ownership"] == "n/a"))]
    form8, form8_record = design_planned(d, plan_release(["sex", "ownership"], **kw))
    general, general_record = design_planned(d, plan_release(["sex", "ownership"], options={"form": "general"}, **kw))
    g = general.variables[0]
    assert g.matrix.size == 5 and ("female", "n/a") not in g.matrix.categories
    assert math.log(_exact_epsilon_given_block(g.matrix)) <= g.epsilon * (1 + 1e-12) and general.record_epsilon <= 2.0
    info = {k: r.variables["sex*ownership"]["information_nats"] for k, r in
            (("form8", form8_record), ("general", general_record))}
    assert info["general"] >= info["form8"] - 1e-9


def test_kept_rule_breaking_records_are_released_unperturbed_and_counted():
    d = census(20_000, seed=15)
    broken = (d["age"] == "10-17") & (d["marital_status"] == "married, spouse present")
    assert broken.sum() > 0
    rules = [{"age": "10-17", "marital_status": "married, spouse present"}]
    kw = dict(epsilon=3.0, split="joint", forbid=rules, categories=CENSUS_VARIABLES, rng=random.Random(16))
    with pytest.raises(DataError, match="breaks rule 1"):
        design_release(d, ["age", "marital_status"], **kw)
    m = design_release(d, ["age", "marital_status"], rule_breaking="keep", **kw)
    assert "Records that break an edit rule are released unperturbed" in m.guarantee
    out = perturb_frame(d, m, key=KEY)
    same = (out.data["age"] == d["age"]) & (out.data["marital_status"] == d["marital_status"])
    assert same[broken].all()
    assert out.result.variables[0].outside == int(broken.sum())
    assert out.result.to_dict()["variables"][0]["outside_kept"] == int(broken.sum())
    # the other records never take the forbidden combination
    released_broken = (out.data["age"] == "10-17") & (out.data["marital_status"] == "married, spouse present")
    assert (released_broken == broken).all()
    strict = Manifest.from_dict({**json.loads(m.to_json()), "input": {**m.input, "structure": {
        **m.input["structure"], "rule_breaking": "error"}}})
    with pytest.raises(DataError, match="breaks an edit rule, or leaves its stratum"):
        perturb_frame(d, strict, key=KEY)


def test_both_reports_show_the_structure(tmp_path):
    from pramkit.report import build_public_report, build_report, write_report

    d = census(8_000, seed=17)
    d["hid"] = np.arange(len(d)) // 2
    d["region"] = np.array(["n", "s"])[d["hid"].to_numpy() % 2]
    cats = {**CENSUS_VARIABLES, "region": ("n", "s")}
    m = design_release(d, ["age", "region"], epsilon=3.0, categories=cats, keep_codes={"age": "0-9"},
                       household="hid", household_vars="region", rng=random.Random(18))
    released = _released(d, m)
    public = build_public_report(m, released)
    internal = build_report(d, m, released, keys=["age", "region"])
    for report in (public, internal):
        facts = {v["name"]: v for v in report.structure["variables"]}
        assert facts["age"]["unchanged"] == ["0-9"] and facts["region"]["household"] == "hid"
        html = write_report(report, tmp_path / f"{report.public}.html").read_text()
        assert "Structure of the microdata" in html and "values never changed" in html and "hid" in html


@pytest.mark.parametrize("field", ["perturbation_epsilon", "record_epsilon_given_structure", "ledger.record_epsilon"])
def test_an_edited_derived_epsilon_is_refused_on_reading(field):
    from pramkit.errors import ManifestError

    m = design_release(census(3_000), ["age"], epsilon=2.0, strata="sex", categories=CENSUS_VARIABLES,
                       rng=random.Random(19))
    data = json.loads(m.to_json())
    if field.startswith("ledger."):
        data["ledger"][field.split(".")[1]] = 0.001
    else:
        data[field] = 0.001
    with pytest.raises(ManifestError, match=field.replace(".", r"\.")):
        Manifest.from_dict(data)


def test_the_provenance_names_the_method_of_the_designed_blocks():
    m = design_release(census(3_000), ["marital_status"], epsilon=2.0, categories=CENSUS_VARIABLES,
                       rng=random.Random(20), keep_codes={"marital_status": "never married"})
    assert m["marital_status"].matrix.provenance.parameters["block_method"] == "dp_optimal"


def test_blocks_designed_on_exact_frequencies_publish_neither_p_nor_a_certificate():
    m, record = design_planned(census(3_000), plan_release(["age"], epsilon=2.0, strata="sex",
                                                           keep_codes={"age": "0-9"}, categories=CENSUS_VARIABLES,
                                                           exact_frequencies=True))
    for block in json.loads(m.to_json())["variables"][0]["blocks"]:
        assert "p" not in block["design"]["parameters"]
        assert block["design"]["certificate"] is None and block["design"]["objective"] is None
    private = record.matrices["age"].blocks  # the holder's record keeps them
    assert any("p" in part.provenance.parameters for _, part in private)
