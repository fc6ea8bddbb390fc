"""The privacy ledger covers everything published (docs/privacy.md).

Neighbouring datasets (one record changed) go through every design method; the public
files must not depend on the change except through a DP mechanism, and must not
contain a variable's original counts or proportions.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pramkit import Manifest
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.registry import FAMILIES
from pramkit.errors import ParameterError
from pramkit.ledger import Ledger, split_within
from pramkit.privacy.epsilon import matrix_epsilon
from pramkit.release.pipeline import design_planned, design_release
from pramkit.release.plan import plan_release

VARS = ["age", "sex", "marital_status"]
CODEBOOK = {v: CENSUS_VARIABLES[v] for v in VARS}

#: Options that make each family's design well defined on these variables.
OPTIONS = {
    "dp": {}, "rr": {}, "invariant": {"seed": 1}, "keep": {"keep": 0.8}, "kanon": {"k": 2, "gamma": 0.01},
    "tridiagonal": {"alpha": 0.2, "gamma": 0.01}, "circulant": {"keep": 0.6},
    "bistochastic-beta": {"beta": 0.5}, "metric": {"metric_epsilon": 0.5, "distances": "ordinal"},
}


def _neighbours(n: int = 4_000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two files that differ in one record's values (replace-one neighbours)."""
    a = census(n, seed=7)
    b = a.copy()
    row = int(np.flatnonzero(a["age"].astype(str) == "75+")[0])
    b.loc[row, "age"] = "0-9"
    b.loc[row, "marital_status"] = "never married"
    return a, b


def _public(manifest: Manifest) -> dict:
    d = manifest.to_dict()
    d.pop("created")
    for v in d["variables"]:
        v["design"]["seconds"] = None
    return d


def _exact_vectors(data: pd.DataFrame) -> dict[str, tuple[list[int], list[float]]]:
    out = {}
    for v in VARS:
        counts = data[v].value_counts().reindex(list(CENSUS_VARIABLES[v]), fill_value=0)
        out[v] = (counts.tolist(), (counts / counts.sum()).tolist())
    return out


def _contains_vector(text: str, values: list[float], integer: bool) -> bool:
    """Whether every value of the vector appears in the text (to 6 significant digits)."""
    numbers = {float(f"{float(x):.6g}") for x in __import__("re").findall(r"-?\d+\.?\d*(?:e-?\d+)?", text)}
    wanted = [float(f"{x:.6g}") for x in values if (x != 0 if not integer else True)]
    return all(w in numbers for w in wanted)


def test_split_within_never_exceeds_the_budget_exactly() -> None:
    rng = random.Random(3)
    for _ in range(500):
        budget = rng.uniform(0.01, 20)
        spent = rng.uniform(0, budget * 0.5)
        weights = [rng.uniform(0.01, 1) for _ in range(rng.randint(1, 7))]
        eps = split_within(budget, spent, weights)
        assert sum((Fraction(e) for e in [spent, *eps]), Fraction(0)) <= Fraction(budget)


@pytest.mark.parametrize("method", sorted(FAMILIES))
def test_prior_or_data_free_design_publishes_nothing_of_the_data(method: str, tmp_path: Path) -> None:
    a, b = _neighbours()
    prior = tmp_path / "prior.csv"
    rows = [(v, c, 1 + i) for v in VARS for i, c in enumerate(CENSUS_VARIABLES[v])]
    pd.DataFrame(rows, columns=["variable", "category", "frequency"]).to_csv(prior, index=False)
    budget = 30.0 if method in ("keep", "kanon", "tridiagonal", "circulant", "invariant", "bistochastic-beta",
                                "metric") else 3.0
    ma, mb = (design_release(d, VARS, epsilon=budget, method=method, prior=prior, options=OPTIONS[method])
              for d in (a, b))
    assert _public(ma) == _public(mb)
    assert ma.ledger.frequencies in ("prior", "none") and ma.ledger.design_epsilon == 0
    assert ma.record_epsilon <= budget


@pytest.mark.parametrize("split", ["equal", "optimal", "joint"])
def test_dp_counts_design_keeps_original_vectors_out_of_public_files(split: str) -> None:
    a, _ = _neighbours(20_000)
    m, private = design_planned(a, plan_release(VARS, epsilon=2.0, split=split, categories=CODEBOOK),
                                rng=random.Random(5))
    text = m.to_json()
    assert m.ledger.frequencies == "dp_counts" and m.ledger.covers_everything
    for v, (counts, shares) in _exact_vectors(a).items():
        assert not _contains_vector(text, counts, integer=True), v
        assert not _contains_vector(text, shares, integer=False), v
    # the private record keeps them
    record = json.dumps(private.to_dict())
    if split != "joint":
        assert all(_contains_vector(record, c, integer=True) for c, _ in _exact_vectors(a).values())


def test_exact_frequencies_are_kept_out_of_the_manifest_and_said_in_the_ledger() -> None:
    a, _ = _neighbours()
    m = design_release(a, VARS, epsilon=2.0, categories=CODEBOOK, exact_frequencies=True)
    text = m.to_json()
    for v, (counts, shares) in _exact_vectors(a).items():
        assert not _contains_vector(text, shares, integer=False), v
    assert not m.ledger.covers_everything and "exact frequencies" in m.guarantee
    assert "does not cover the manifest" in m.guarantee


def test_categories_read_from_the_data_are_marked() -> None:
    a, _ = _neighbours()
    m = design_release(a, ["sex"], epsilon=1.0, rng=random.Random(0))
    assert m.ledger.categories == {"sex": "data"} and "read from the original file" in m.guarantee


@pytest.mark.parametrize("method", ["dp", "rr"])
@pytest.mark.parametrize("budget", [0.3, 1.0, 2.0, 6.0])
def test_record_epsilon_never_exceeds_the_budget(method: str, budget: float) -> None:
    a, _ = _neighbours(3_000)
    for split in (("equal", "optimal") if method == "dp" else ("equal",)):
        m = design_release(a, VARS, epsilon=budget, method=method, split=split, categories=CODEBOOK,
                           rng=random.Random(1))
        exact = [matrix_epsilon(v.matrix.matrix) for v in m.variables]
        total = sum((Fraction(e) for e in [m.ledger.design_epsilon, *exact]), Fraction(0))
        assert total <= Fraction(budget) and m.record_epsilon <= budget


def test_per_variable_budgets_and_their_sum() -> None:
    a, _ = _neighbours(3_000)
    m = design_release(a, VARS, epsilon_per_variable={"age": 1.0, "sex": 0.5, "marital_status": 1.0},
                       categories=CODEBOOK, design_epsilon=0.2, rng=random.Random(2))
    assert {v.name: round(v.epsilon, 9) for v in m.variables} == {"age": 1.0, "sex": 0.5, "marital_status": 1.0}
    assert m.record_epsilon == pytest.approx(2.7, abs=1e-9)
    with pytest.raises(ParameterError, match="more than the record budget"):
        design_release(a, VARS, epsilon=2.0, epsilon_per_variable={"age": 1, "sex": 0.5, "marital_status": 1},
                       categories=CODEBOOK, design_epsilon=0.2)


def test_manifest_round_trip_and_a_manifest_without_ledger(tmp_path: Path) -> None:
    a, _ = _neighbours(3_000)
    m = design_release(a, VARS, epsilon=2.0, categories=CODEBOOK, rng=random.Random(4))
    path = m.write(tmp_path / "m.json")
    back = Manifest.read(path)
    assert back.ledger == m.ledger and back.record_epsilon == m.record_epsilon and not hasattr(back, "design_record")
    bare = json.loads(path.read_text())       # matrices published without the design's ledger
    bare.pop("ledger")
    bare["record_epsilon"] = bare["perturbation_epsilon"]
    unrecorded = Manifest.from_dict(bare)
    assert unrecorded.ledger is None and "no privacy ledger" in unrecorded.guarantee
    tampered = json.loads(path.read_text())
    tampered["ledger"]["design_epsilon"] = 0.0
    with pytest.raises(Exception, match="record_epsilon"):
        Manifest.from_dict(tampered)


def test_ledger_statement_is_plain_and_bounded() -> None:
    led = Ledger(design_epsilon=0.2, frequencies="dp_counts")
    text = led.statement(split_within(2.0, 0.2, [1.0, 1.0]))
    assert "e^2 = 7.389" in text and "noisy counts (epsilon 0.2)" in text
    assert "no differential-privacy guarantee" in led.statement([math.inf])


def test_demo_public_folder_holds_nothing_computed_from_the_original(tmp_path: Path) -> None:
    from pramkit.demo import run_demo
    from pramkit.io import sha256_of

    run_demo(tmp_path / "d", rows=5_000)
    original = pd.read_csv(tmp_path / "d" / "private" / "census.csv", dtype=str)
    digest = sha256_of(tmp_path / "d" / "private" / "census.csv")
    vectors = {v: (original[v].value_counts().reindex(list(CENSUS_VARIABLES[v]), fill_value=0))
               for v in VARS}
    for f in (tmp_path / "d" / "public").iterdir():
        if f.name == "released.csv":
            continue
        text = f.read_text(encoding="utf-8")
        assert digest not in text, f.name
        for v, counts in vectors.items():
            assert not _contains_vector(text, counts.tolist(), integer=True), (f.name, v)
            assert not _contains_vector(text, (counts / counts.sum()).tolist(), integer=False), (f.name, v)


BAD_INPUT = [
    (["--design-epsilon", "-1"], "design epsilon"),
    (["--design-epsilon", "nan"], "design epsilon"),
    (["--design-epsilon", "5"], "smaller than the record budget"),
    (["--prior", "MISSING"], "does not exist"),
    (["--prior", "PRIOR:variable,category,frequency\nsex,male,0\nsex,female,1\n"], "positive"),
    (["--prior", "PRIOR:variable,category,frequency\nsex,male,-3\nsex,female,1\n"], "positive"),
    (["--prior", "PRIOR:variable,category,frequency\nsex,male,0.5\nsex,female,0.4\n"], "sum to"),
    (["--prior", "PRIOR:variable,category,frequency\nsex,man,0.5\nsex,woman,0.5\n"], "sex"),
    (["--prior", "PRIOR:variable,category,frequency\nage,0-9,1\n"], "no entry for"),
    (["--epsilon-per-variable", "sex=abc"], "epsilon-per-variable"),
    (["--method", "keep", "--keep", "0.1"], "more than the budget"),
]


@pytest.mark.parametrize("extra, message", BAD_INPUT)
def test_design_bad_input_is_one_line(extra: list[str], message: str, tmp_path: Path, capsys) -> None:
    data = tmp_path / "data.csv"
    census(500).to_csv(data, index=False)
    args = []
    for x in extra:
        if x.startswith("PRIOR:"):
            path = tmp_path / "prior.csv"
            path.write_text(x[len("PRIOR:"):])
            x = str(path)
        elif x == "MISSING":
            x = str(tmp_path / "absent.csv")
        args.append(x)
    before = data.read_bytes()
    code = main(["design", str(data), "--vars", "sex", "--epsilon", "2", "--out", str(tmp_path / "m.json"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["data.csv"] + (["prior.csv"] if any(x.startswith("PRIOR:") for x in extra) else []))


#: The families that read frequencies, with their options and a record budget (None: the best
#: bistochastic fit may release some values exactly, epsilon infinite, so no budget can hold it).
READS_FREQUENCIES = [("dp", {}, 3.0), ("invariant", {"seed": 1}, 40.0),
                     ("bistochastic-beta", {"beta": 0.5, "family": "best"}, None)]


@pytest.mark.parametrize("method, options, budget", READS_FREQUENCIES)
def test_every_family_that_reads_frequencies_keeps_them_out_of_the_manifest(method: str, options: dict,
                                                                            budget: float | None) -> None:
    a, _ = _neighbours(20_000)
    m = design_release(a, VARS, epsilon=budget, design_epsilon=0.5, method=method, options=options,
                       categories=CODEBOOK, rng=random.Random(8))
    assert m.ledger.frequencies == "dp_counts" and m.ledger.design_epsilon == 0.5 and m.ledger.covers_everything
    text = m.to_json()
    for v, (counts, shares) in _exact_vectors(a).items():
        assert not _contains_vector(text, counts, integer=True), (method, v)
        assert not _contains_vector(text, shares, integer=False), (method, v)


def test_the_noise_design_release_adds_is_geometric_at_its_stated_scale() -> None:
    """The design step's noise, read off the ledger (noisy counts) against the private record
    (exact counts), fits the discrete Laplace law at the ledger's epsilon, and the same test
    rejects a scale 10 % off either way (the sample is large enough to tell)."""
    from test_geometric import ALPHA, two_sided_pvalue

    size = 400
    data = pd.DataFrame({"x": np.random.default_rng(1).integers(0, size, 20_000).astype(str)})
    noise, stated = [], set()
    for seed in range(100):
        m, private = design_planned(data, plan_release(["x"], epsilon=1.0, design_epsilon=0.8),
                                    rng=random.Random(seed))
        out = m.ledger.dp_counts["x"]
        stated.add((out["epsilon"], out["sensitivity"]))
        noise.append(np.asarray(out["noisy"]) - np.asarray(private.variables["x"]["counts"]))
    ((epsilon, sensitivity),) = stated
    assert epsilon <= 0.8 and sensitivity == 2
    sample = np.concatenate(noise)
    gamma = epsilon / sensitivity
    assert two_sided_pvalue(sample, gamma) > ALPHA
    for wrong in (gamma * 1.1, gamma / 1.1):
        assert two_sided_pvalue(sample, wrong) < ALPHA


def test_default_design_epsilon_reads_only_public_sizes_and_is_capped() -> None:
    from pramkit.ledger import DEFAULT_DESIGN_SHARE, DEFAULT_NOISE_SHARE, default_design_epsilon

    # the noise it buys: standard deviation 1 / (sqrt(2) sinh(eps_h / 4)) of each histogram
    rows, cells = 953_076, [9, 2, 6]
    total = default_design_epsilon(6.0, rows, cells)
    for k in cells:
        eps_h = total * k / sum(cells)
        sd = 1.0 / (math.sqrt(2.0) * math.sinh(eps_h / 4.0))
        assert sd <= DEFAULT_NOISE_SHARE * rows / k * (1 + 1e-9)
    assert default_design_epsilon(1.0, 500, cells) == DEFAULT_DESIGN_SHARE * 1.0
    a, b = _neighbours(4_000)
    ma, mb = (design_release(d, VARS, epsilon=2.0, categories=CODEBOOK, rng=random.Random(1)) for d in (a, b))
    assert ma.ledger.design_epsilon == mb.ledger.design_epsilon == default_design_epsilon(2.0, 4_000, [9, 2, 6])


@pytest.mark.parametrize("extra", [
    ["--method", "rr"],
    ["--prior", "PRIOR"],
])
def test_design_epsilon_above_the_budget_is_refused_even_when_unspent(extra: list[str], tmp_path: Path,
                                                                     capsys) -> None:
    csv = tmp_path / "d.csv"
    census(500, seed=1)[VARS].to_csv(csv, index=False)
    prior = tmp_path / "prior.csv"
    pd.DataFrame([(v, c, 1 + i) for v in VARS for i, c in enumerate(CENSUS_VARIABLES[v])],
                 columns=["variable", "category", "frequency"]).to_csv(prior, index=False)
    extra = [str(prior) if x == "PRIOR" else x for x in extra]
    out = tmp_path / "m.json"
    code = main(["design", str(csv), "--vars", ",".join(VARS), "--epsilon", "2", "--design-epsilon", "5",
                 "--out", str(out), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "smaller than the record budget" in err[0]
    assert not out.exists() and not list(tmp_path.glob("*.design-record.json"))


def test_value_labels_of_a_spss_file_declare_the_categories(tmp_path: Path) -> None:
    import pyreadstat

    path = tmp_path / "d.sav"
    frame = pd.DataFrame({"sex": [1.0, 2.0] * 500, "region": [1.0, 2.0, 3.0, 1.0] * 250, "x": [1.0, 5.0] * 500})
    pyreadstat.write_sav(frame, str(path), missing_ranges={"sex": [9]}, variable_value_labels={
        "sex": {1: "male", 2: "female", 9: "unknown"}, "region": {1: "n", 2: "s", 3: "e", 4: "w"},
        "x": {1: "a", 2: "b"}})
    m = design_release(path, ["sex", "region", "x"], epsilon=3.0, rng=random.Random(2))
    # sex: the user-missing code 9 is not a category; region: 4 is declared though no record holds it;
    # x: its labels do not list 5, so its categories come from the data and the ledger says so
    assert m["sex"].matrix.categories == (1, 2) and m["region"].matrix.categories == (1, 2, 3, 4)
    assert m.ledger.categories == {"sex": "declared", "region": "declared", "x": "data"}
    assert not m.ledger.covers_everything and "x" in m.ledger.data_dependent[0]


def test_inspect_shows_the_ledger_and_the_guarantee(tmp_path: Path, capsys) -> None:
    a, _ = _neighbours(4_000)
    m = design_release(a, VARS, epsilon=2.0, categories=CODEBOOK, rng=random.Random(3))
    path = m.write(tmp_path / "m.json")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "design epsilon" in out and "record epsilon: 2 (design step plus the perturbation)" in out
    assert m.guarantee in out
    assert main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["design_epsilon"] == m.ledger.design_epsilon and info["guarantee"] == m.guarantee
    assert info["record_epsilon"] == m.record_epsilon <= 2.0
    assert [v["name"] for v in info["variables"]] == VARS


def test_recognition_manifest_publishes_no_figure_of_the_exact_counts() -> None:
    from pramkit.release.recognition import design_recognition

    m, private = design_recognition(census(3_000, seed=4), ["sex", "marital_status"], alpha=0.5, combinations=2)
    design = m.to_dict()["variables"][0]["design"]
    assert design["objective"] is None and design["certificate"] is None
    assert "worst_posterior" in private.to_dict()


def test_noisy_counts_never_leave_a_category_with_probability_zero():
    """On a tiny file the design step's noise is large; a category whose noisy count falls below
    one still gets one record's weight, so no design sends every record of it elsewhere."""
    import random

    data = pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20, "sex": ["m", "f"] * 50})
    for seed in range(30):
        plan = plan_release(["region", "sex"], epsilon=2.0, design_epsilon=0.05)
        record = design_planned(data, plan, rng=random.Random(seed)).record.variables
        for name, v in record.items():
            assert min(v["design_p"]) > 0, (seed, name, v["design_p"])
            assert v["epsilon"] > 0.5, (seed, name, v["epsilon"])


@pytest.mark.parametrize("kind", ["stratum", "kept_code", "missing", "joint_missing", "stratum_missing",
                                  "rule_breaker", "household"])
def test_every_fact_changes_the_sentence(kind: str) -> None:
    """The sentence is written from the facts: no kind of value released exactly can leave it as it was."""
    from pramkit.ledger import ExactFact

    led = Ledger(design_epsilon=0.1, frequencies="dp_counts")
    fact = ExactFact(kind, ("age",), f"the {kind} words", column="hid" if kind == "household" else None,
                     covered=kind not in ("stratum_missing", "rule_breaker"))
    plain, with_fact = led.statement([0.9]), led.statement([0.9], facts=[fact])
    assert with_fact != plain
    if kind == "household":
        assert "perturbed once per household (hid, released as it is)" in with_fact
    elif fact.covered:
        assert with_fact.startswith(f"The released file shows exactly, as the original does: the {kind} words; ")
        assert "keeping what is shown exactly" in with_fact
    else:
        assert with_fact.endswith(f"The {kind} words: no epsilon covers them.")
    d = led.to_dict([0.9], facts=[fact])
    assert d["statement"] == with_fact and ExactFact.from_dict(d["released_exactly_facts"][0]) == fact
