"""The expected risk and utility of a design (pramkit.risk.expected), checked against what it does not
compute itself: every released outcome enumerated, releases simulated and assessed by
identification_risk, and the spread of simulated estimates."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit import Manifest, PramMatrix, perturb_frame
from pramkit.engine.rng import SecretKey
from pramkit.errors import DataError, ParameterError
from pramkit.io import read_table
from pramkit.release.choices import DesignChoices
from pramkit.risk.expected import ProblemSet, expected_release, released_unique_probability
from pramkit.risk.household import household_risk
from pramkit.risk.identification import identification_risk

SMALL = pd.DataFrame({"sex": ["m", "f", "m", "f", "m"], "age": ["20", "20", "30", "40", "40"]})


def _enumerated(data: pd.DataFrame, keys: list[str], manifest: Manifest, column: str) -> tuple[float, float, float]:
    """E(tau1), E(tau2), E(sample uniques) by enumerating every released value of ``column`` of every record,
    each released file assessed by identification_risk with the original."""
    m = manifest[column].matrix
    cats = list(m.categories)
    rows = [cats.index(v) for v in data[column]]
    out = np.zeros(3)
    for outcome in itertools.product(range(len(cats)), repeat=len(data)):
        prob = math.prod(m.matrix[r, o] for r, o in zip(rows, outcome))
        if prob == 0:
            continue
        released = data.assign(**{column: [cats[o] for o in outcome]})
        res = identification_risk(released, keys, sampling_fraction=0.5, manifest=manifest, original=data)
        out += prob * np.array([res.tau1, res.tau2, res.sample_uniques])
    return float(out[0]), float(out[1]), float(out[2])


def test_enumeration_of_every_release_of_a_tiny_file() -> None:
    manifest = Manifest.of({"age": PramMatrix([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]],
                                              ["20", "30", "40"])})
    expected = expected_release(ProblemSet.of(SMALL, ["sex", "age"], sampling_fraction=0.5), manifest)
    tau1, tau2, uniques = _enumerated(SMALL, ["sex", "age"], manifest, "age")
    assert expected.exact
    assert expected.tau1 == pytest.approx(tau1, rel=1e-9)
    assert expected.tau2 == pytest.approx(tau2, rel=1e-9)
    assert expected.sample_uniques == pytest.approx(uniques, rel=1e-9)


def test_a_category_kept_with_certainty_is_enumerated_too() -> None:
    manifest = Manifest.of({"sex": PramMatrix([[1.0, 0.0], [0.3, 0.7]], ["f", "m"])})
    expected = expected_release(ProblemSet.of(SMALL, ["sex", "age"], sampling_fraction=0.5), manifest)
    tau1, tau2, uniques = _enumerated(SMALL, ["sex", "age"], manifest, "sex")
    assert (expected.tau1, expected.tau2, expected.sample_uniques) == pytest.approx((tau1, tau2, uniques), rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=3, max_size=3), st.floats(0.05, 0.95), st.floats(0.0, 1.0))
def test_released_unique_probability_by_enumeration(counts: list[int], stay: float, share: float) -> None:
    m = np.array([[stay, (1 - stay) * share, (1 - stay) * (1 - share)],
                  [(1 - stay) / 2, stay, (1 - stay) / 2], [0.0, 1 - stay, stay]])
    cells = [k for k, c in enumerate(counts) for _ in range(c)]
    brute = np.zeros(3)
    for outcome in itertools.product(range(3), repeat=len(cells)):
        prob = math.prod(m[k, j] for k, j in zip(cells, outcome))
        brute += prob * (np.bincount(np.array(outcome, dtype=int), minlength=3) == 1)
    assert np.allclose(released_unique_probability(np.array(counts, dtype=float), [m]), brute, atol=1e-12)


def test_without_perturbation_the_figures_are_the_original_ones() -> None:
    manifest = Manifest.of({"sex": PramMatrix([[1.0, 0.0], [0.0, 1.0]], ["f", "m"])})
    e = expected_release(ProblemSet.of(SMALL, ["sex", "age"], sampling_fraction=0.5), manifest)
    before = identification_risk(SMALL, ["sex", "age"], sampling_fraction=0.5, tol=1e-10)
    assert (e.tau1, e.tau2) == pytest.approx((e.tau1_before, e.tau2_before))
    assert e.sample_uniques == e.sample_uniques_before == before.sample_uniques
    assert e.individual == pytest.approx(before.expected_reidentifications)
    assert e.tau2_before == pytest.approx(before.tau2, rel=1e-3)


def test_bad_problem_sets_are_refused() -> None:
    with pytest.raises(ParameterError, match="exactly one"):
        ProblemSet.of(SMALL, ["sex"])
    with pytest.raises(DataError, match="household"):
        ProblemSet.of(SMALL, ["sex"], sampling_fraction=0.5, household="hh")
    other = Manifest.of({"age": PramMatrix([[0.9, 0.1], [0.1, 0.9]], ["20", "30"])})
    with pytest.raises(DataError, match="not categories of the manifest"):
        expected_release(ProblemSet.of(SMALL, ["sex", "age"], sampling_fraction=0.5), other)


# -- real data: sdcMicro's testdata (its PRAM example within strata) and EU-SILC (missing values) --------------

def _design(path: Path, variables: tuple[str, ...], choices: DesignChoices) -> Manifest:
    return choices.release(path, variables, key=SecretKey(bytes(32), "design")).manifest


def _simulated(data: pd.DataFrame, keys: list[str], manifest: Manifest, releases: int,
               **risk: object) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of the mean of (tau1, tau2, sample uniques) over releases with many keys."""
    rng = np.random.default_rng(45)
    taus = []
    for _ in range(releases):
        released = perturb_frame(data, manifest, key=SecretKey(rng.bytes(32), "mc")).data
        res = identification_risk(released, keys, manifest=manifest, original=data, **risk)  # type: ignore[arg-type]
        taus.append((res.tau1, res.tau2, res.sample_uniques))
    a = np.array(taus)
    return a.mean(axis=0), a.std(axis=0, ddof=1) / math.sqrt(releases)


@pytest.mark.slow
@pytest.mark.parametrize("variables, choices", [
    (("roof",), DesignChoices(epsilon=2.0, strata="urbrur")),  # sdcMicro's pram example, within strata
    (("walls", "water"), DesignChoices(epsilon=2.0, split="joint")),
    (("roof", "walls"), DesignChoices(epsilon=1.0)),
], ids=["stratified", "joint", "per-variable"])
def test_monte_carlo_of_released_files_agrees(sdc_data: Path, variables: tuple[str, ...],
                                              choices: DesignChoices) -> None:
    path = sdc_data / "testdata.csv"
    data = read_table(path)
    keys = ["urbrur", "roof", "walls", "water", "sex"]
    manifest = _design(path, variables, choices)
    e = expected_release(ProblemSet.of(data, keys, weights="sampling_weight"), manifest)
    mean, se = _simulated(data, keys, manifest, 150, weights="sampling_weight")
    assert e.exact and e.tau2 < e.tau2_before
    for claimed, got, err in zip((e.tau1, e.tau2, e.sample_uniques), mean, se):
        assert abs(claimed - got) <= 4 * err + 1e-12 * max(1.0, abs(claimed))


@pytest.mark.slow
def test_monte_carlo_with_missing_values_weights_and_households(sdc_data: Path, tmp_path: Path) -> None:
    """EU-SILC: pl030 (economic status) has missing values, released as they are; weights vary by cell."""
    data = read_table(sdc_data / "eusilc_laeken.csv")
    assert data["pl030"].isna().sum() > 0
    keys = ["db040", "rb090", "age", "pl030"]
    manifest = _design(sdc_data / "eusilc_laeken.csv", ("pl030",), DesignChoices(epsilon=3.0))
    problem = ProblemSet.of(data, keys, weights="rb050", household="db030")
    e = expected_release(problem, manifest)
    mean, se = _simulated(data, keys, manifest, 150, weights="rb050")
    for claimed, got, err in zip((e.tau1, e.tau2, e.sample_uniques), mean, se):
        assert abs(claimed - got) <= 4 * err + 1e-12
    before = household_risk(data, keys, "db030", weights="rb050", missing="exclude")
    assert e.household_before is not None and e.household is not None
    assert e.household < e.household_before
    # the records with a missing pl030 are left out of the counts, as identification_risk leaves them out
    assert e.n == int(data["pl030"].notna().sum())
    assert before.households == int(problem.household.max()) + 1  # type: ignore[union-attr]


def test_standard_errors_against_simulated_estimates(sdc_data: Path) -> None:
    """The standard error of a corrected share against the spread over simulated samples and releases."""
    data = read_table(sdc_data / "testdata.csv")
    manifest = _design(sdc_data / "testdata.csv", ("walls",), DesignChoices(epsilon=1.5))
    e = expected_release(ProblemSet.of(data, ["walls", "sex"], sampling_fraction=0.01), manifest)
    walls = next(u for u in e.utility if u.name == "walls")
    m = manifest["walls"].matrix.matrix
    p = walls.per_category["share"].to_numpy()
    n, rng, runs = e.n, np.random.default_rng(7), 4000
    sample = rng.multinomial(n, p, size=runs)  # a new file of n records each time, then PRAM
    released = np.stack([sum(rng.multinomial(c, m[k]) for k, c in enumerate(row)) for row in sample])
    estimates = np.linalg.solve(m.T, (released / n).T).T
    empirical = estimates.std(axis=0, ddof=1)
    se = walls.per_category["standard_error"].to_numpy()
    # the SD of a sample SD over 4000 runs is about SD / sqrt(8000): 1.1 %; allow 5 %
    assert np.allclose(empirical, se, rtol=0.05)
    assert np.allclose(walls.per_category["standard_error_without"], np.sqrt(p * (1 - p) / n))
    assert walls.ratio > 1 and 0 < walls.information_kept < 1
