"""The expected risk and utility of a design (pramkit.risk.expected), checked against what it does not
compute itself: every released outcome enumerated, releases simulated and assessed as
identification_risk assesses them (the first of each simulation by it), and the spread of simulated
estimates."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit import Manifest, PramMatrix, perturb_frame
from pramkit.errors import DataError, ParameterError
from pramkit.io import read_table
from pramkit.kernel.rng import SecretKey
from pramkit.release.choices import DesignChoices
from pramkit.risk.expected import ProblemSet, expected_release, released_unique_probability
from pramkit.risk.folding import axis_categories, fold, perturbation
from pramkit.risk.frequencies import key_categories, key_table, record_weights
from pramkit.risk.household import household_risk
from pramkit.risk.identification import identification_risk
from pramkit.risk.individual import individual_risk

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


def _three_cells(stay: float, share: float) -> np.ndarray:
    """A 3 x 3 matrix with a zero entry, of the given diagonal."""
    return np.array([[stay, (1 - stay) * share, (1 - stay) * (1 - share)],
                     [(1 - stay) / 2, stay, (1 - stay) / 2], [0.0, 1 - stay, stay]])


class _Outcomes(NamedTuple):
    """Every released outcome of the records of some counts, one row each (:func:`_releases`)."""

    prob: np.ndarray  # of each outcome
    cells: np.ndarray  # each record's cell
    released: np.ndarray  # outcome x record: its released cell
    counts: np.ndarray  # outcome x cell: the released count


def _releases(counts: list[int], m: np.ndarray) -> _Outcomes:
    """Every released outcome of the records of ``counts`` (3^9 at most here), as arrays."""
    cells = np.repeat(np.arange(len(counts)), counts)
    released = np.array(list(itertools.product(range(len(counts)), repeat=len(cells))), dtype=int)
    released = released.reshape(len(counts) ** len(cells), len(cells))
    prob = m[cells, released].prod(axis=1)
    return _Outcomes(prob, cells, released, (released[:, :, None] == np.arange(len(counts))).sum(axis=1))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=3, max_size=3), st.floats(0.05, 0.95), st.floats(0.0, 1.0))
def test_released_unique_probability_by_enumeration(counts: list[int], stay: float, share: float) -> None:
    m = _three_cells(stay, share)
    outcomes = _releases(counts, m)
    brute = outcomes.prob @ (outcomes.counts == 1)
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


class _Releases:
    """Releases of ``data`` drawn by perturb_frame, a new key each, and their cells counted as
    identification_risk counts them (the manifest's categories for the perturbed keys, the data's for the
    others, a record with a missing perturbed key left out, joint and stratified variables folded), but
    without fitting its model again: it fits it to the original, the same for every release.  The keys
    are encoded once, then a release's perturbed keys only."""

    def __init__(self, data: pd.DataFrame, keys: list[str], manifest: Manifest, *, sampling_fraction: float | None = None,
                 weights: str | None = None) -> None:
        self.data, self.keys, self.manifest = data, tuple(keys), manifest
        singles, self.joints = perturbation(manifest, self.keys)
        declared = axis_categories(manifest, self.keys, singles, self.joints)
        found = key_categories(data, keys)
        self.categories = [declared.get(k, found[i]) for i, k in enumerate(keys)]
        self.codes = key_table(data, keys, categories=self.categories).codes
        self.moving = [i for i, k in enumerate(keys) if k in manifest.columns]
        self.shape = tuple(len(c) for c in self.categories)
        self.weights = None if weights is None else record_weights(data, weights)
        self.fraction = sampling_fraction

    def draw(self, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
        """A release, and its records' codes on the keys."""
        released = perturb_frame(self.data, self.manifest, key=SecretKey(rng.bytes(32), "mc")).data
        codes = self.codes.copy()
        codes[:, self.moving] = key_table(released, [self.keys[i] for i in self.moving],
                                          categories=[self.categories[i] for i in self.moving]).codes
        return released, codes

    def cells(self, codes: np.ndarray) -> np.ndarray:
        """Every record's cell of the keys' table (-1: left out)."""
        cell = np.full(len(codes), -1, dtype=np.int64)
        counted = (codes >= 0).all(axis=1)
        cell[counted] = np.ravel_multi_index(codes[counted].T, self.shape)
        return cell

    def counts(self, codes: np.ndarray) -> np.ndarray:
        """The released counts on the folded table, the table of identification_risk's ``cell_risk``."""
        cell = self.cells(codes)
        dense = np.bincount(cell[cell >= 0], minlength=math.prod(self.shape)).astype(float).reshape(self.shape)
        folded = fold(dense, self.keys, self.joints)
        assert folded is not None
        return folded

    def kept_risks(self, codes: np.ndarray) -> np.ndarray:
        """Each record's risk in the release (as :func:`_kept_risks`): its released cell's Benedetti-Franconi
        risk if its released keys are its true ones, else 0 (NaN: left out); folding moves a cell's records
        together, so their counts are those of the folded table."""
        cell = self.cells(codes)
        counted = cell >= 0
        f = np.bincount(cell[counted], minlength=math.prod(self.shape)).astype(float)
        population = (f / self.fraction if self.weights is None
                      else np.bincount(cell[counted], weights=self.weights[counted], minlength=f.size))
        occupied = f > 0
        individual = np.full(f.size, np.nan)
        individual[occupied] = individual_risk(f[occupied], population[occupied]).risk
        risk = np.where(counted, individual[np.maximum(cell, 0)], np.nan)
        return np.where((codes == self.codes).all(axis=1), risk, 0.0)


def _simulated(data: pd.DataFrame, keys: list[str], manifest: Manifest, releases: int,
               **risk: object) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of the mean of (tau1, tau2, sample uniques) over releases with many keys: the
    first assessed by identification_risk, every release by its released sample uniques and the per-cell
    risks r1, r2 that identification_risk fits to the original (equal on the first)."""
    rng = np.random.default_rng(45)
    draws = _Releases(data, keys, manifest, **risk)  # type: ignore[arg-type]
    released, codes = draws.draw(rng)
    first = identification_risk(released, keys, manifest=manifest, original=data, **risk)  # type: ignore[arg-type]
    cell = first.cell_risk

    def figures(codes: np.ndarray) -> tuple[float, float, int]:
        unique = draws.counts(codes) == 1
        return float(cell.r1[unique].sum()), float(cell.r2[unique].sum()), int(unique.sum())

    taus = [figures(codes)]
    assert taus[0] == pytest.approx((first.tau1, first.tau2, first.sample_uniques), rel=1e-12, abs=0.0)
    taus += [figures(draws.draw(rng)[1]) for _ in range(releases - 1)]
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


# -- the individual and household risk after PRAM: exact expectations -------------------------------------------

def _kept_risks(original: pd.DataFrame, released: pd.DataFrame, keys: list[str], manifest: Manifest,
                **risk: object) -> np.ndarray:
    """Each record's risk in one released file: its released cell's Benedetti-Franconi risk as
    identification_risk computes it on the release, if its released keys are its true ones, else 0."""
    res = identification_risk(released, keys, manifest=manifest, original=original, tol=1e-10, **risk)  # type: ignore[arg-type]
    same = np.ones(len(original), dtype=bool)
    for k in keys:
        same &= (original[k].astype(object).fillna("\0").to_numpy() == released[k].astype(object).fillna("\0").to_numpy())
    return np.where(same, res.per_record["individual_risk"].to_numpy(), 0.0)


def _enumerated_kept(data: pd.DataFrame, keys: list[str], manifest: Manifest, column: str,
                     household: str | None = None, **risk: object) -> tuple[float, float]:
    """E(sum of the records' risks after PRAM) and E(persons in re-identified households), every release enumerated."""
    from pramkit.risk.household import combine_households

    m = manifest[column].matrix
    cats = list(m.categories)
    rows = [cats.index(v) for v in data[column]]
    members = pd.factorize(data[household])[0] if household else None
    individual = households = 0.0
    for outcome in itertools.product(range(len(cats)), repeat=len(data)):
        prob = math.prod(m.matrix[r, o] for r, o in zip(rows, outcome))
        if prob == 0:
            continue
        released = data.assign(**{column: [cats[o] for o in outcome]})
        r = _kept_risks(data, released, keys, manifest, **risk)
        individual += prob * float(np.nansum(r))
        if members is not None:
            households += prob * float(combine_households(r, members).sum())
    return individual, households


AGE = PramMatrix([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]], ["20", "30", "40"])


@pytest.mark.parametrize("fraction", [1.0, 0.5, 0.01])
def test_individual_risk_after_pram_is_the_enumerated_expectation(fraction: float) -> None:
    manifest = Manifest.of({"age": AGE})
    e = expected_release(ProblemSet.of(SMALL, ["sex", "age"], sampling_fraction=fraction), manifest)
    individual, _ = _enumerated_kept(SMALL, ["sex", "age"], manifest, "age", sampling_fraction=fraction)
    assert e.individual_exact
    assert e.individual == pytest.approx(individual, rel=1e-9)
    assert e.individual < e.individual_before


def test_certain_categories_and_uniform_weights_are_exact() -> None:
    """Weights that vary only with a key that is not perturbed: F~ = w f~ in every released cell."""
    data = SMALL.assign(w=np.where(SMALL["sex"] == "m", 4.0, 10.0))
    manifest = Manifest.of({"age": PramMatrix([[1.0, 0.0, 0.0], [0.1, 0.8, 0.1], [0.0, 0.5, 0.5]], ["20", "30", "40"])})
    e = expected_release(ProblemSet.of(data, ["sex", "age"], weights="w"), manifest)
    individual, _ = _enumerated_kept(data, ["sex", "age"], manifest, "age", weights="w")
    assert e.individual_exact
    assert e.individual == pytest.approx(individual, rel=1e-9)


def test_weights_that_differ_within_a_released_cell_are_not_exact() -> None:
    data = SMALL.assign(w=[4.0, 10.0, 6.0, 10.0, 4.0])
    manifest = Manifest.of({"age": AGE})
    e = expected_release(ProblemSet.of(data, ["sex", "age"], weights="w"), manifest)
    individual, _ = _enumerated_kept(data, ["sex", "age"], manifest, "age", weights="w")
    assert not e.individual_exact and e.exact
    # alone in its cell a record's F~ is its weight (exact); with others, f~ / F~ is the ratio of expectations:
    # 0.9427 against the enumerated 0.9441
    assert e.individual == pytest.approx(individual, rel=0.01)


@pytest.mark.parametrize("sex, households, rel", [
    # members in different combinations of the unperturbed keys: their risks are independent, exact
    (list("mfmfmf"), ["a", "a", "b", "b", "c", "d"], 1e-9),
    # three members alike on sex, in two cells: every outcome of the three and the joint distribution of
    # the others' counts (members combined as independent events: 3.385 against the enumerated 3.474)
    (list("mmmfff"), ["a", "a", "a", "b", "b", "c"], 1e-9),
], ids=["members-apart", "members-together"])
def test_household_risk_against_enumeration(sex: list[str], households: list[str], rel: float) -> None:
    data = pd.DataFrame({"sex": sex, "age": ["20", "20", "30", "40", "40", "30"], "hh": households})
    manifest = Manifest.of({"age": AGE})
    e = expected_release(ProblemSet.of(data, ["sex", "age"], sampling_fraction=0.5, household="hh"), manifest)
    individual, enumerated = _enumerated_kept(data, ["sex", "age"], manifest, "age", household="hh",
                                              sampling_fraction=0.5)
    assert e.individual == pytest.approx(individual, rel=1e-9)
    assert e.household_exact
    assert e.household == pytest.approx(enumerated, rel=rel)
    assert e.household_before is not None and e.household < e.household_before


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=3, max_size=3), st.floats(0.05, 0.95), st.floats(0.0, 1.0),
       st.sampled_from([1.0, 0.3, 0.02, 1e-4]))
def test_expected_kept_risk_by_enumeration(counts: list[int], stay: float, share: float, fraction: float) -> None:
    from pramkit.risk.expected import expected_kept_risk
    from pramkit.risk.individual import benedetti_franconi

    m = _three_cells(stay, share)
    outcomes = _releases(counts, m)
    here = np.take_along_axis(outcomes.counts, outcomes.released, axis=1)  # each record's released count
    kept = outcomes.released == outcomes.cells
    risk = outcomes.prob @ np.where(kept, benedetti_franconi(here, here / fraction), 0.0)
    brute = np.bincount(outcomes.cells, weights=risk, minlength=3) / np.maximum(counts, 1)
    lone = np.bincount(outcomes.cells, weights=outcomes.prob @ (kept & (here == 1)), minlength=3) / np.maximum(counts, 1)
    risk, alone, exact = expected_kept_risk(np.array(counts, dtype=float), [m], fraction)
    assert exact
    assert np.allclose(risk, brute, rtol=1e-10, atol=1e-15)
    assert np.allclose(alone, lone, rtol=1e-10, atol=1e-15)


def test_expected_kept_risk_of_large_counts_against_the_exact_distribution() -> None:
    """Thousands of records: the count's distribution by convolving binomials (scipy), summed."""
    from scipy.stats import binom

    from pramkit.risk.expected import expected_kept_risk
    from pramkit.risk.individual import benedetti_franconi

    counts = np.array([20_000.0, 700.0, 3.0])
    m = np.array([[0.8, 0.15, 0.05], [0.1, 0.85, 0.05], [0.3, 0.3, 0.4]])
    for fraction in (1.0, 0.05, 0.001):
        risk, _, _ = expected_kept_risk(counts, [m], fraction)
        for k in range(3):
            pmf = np.array([1.0])
            for j in range(3):
                n = int(counts[j]) - (j == k)
                pmf = np.convolve(pmf, binom.pmf(np.arange(n + 1), n, m[j, k]))
            s = np.flatnonzero(pmf > 1e-300)
            direct = m[k, k] * float(np.sum(pmf[s] * benedetti_franconi(1 + s, (1 + s) / fraction)))
            assert risk[k] == pytest.approx(direct, rel=1e-10)


def _simulated_kept(data: pd.DataFrame, keys: list[str], manifest: Manifest, household: str, releases: int,
                    **risk: object) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of (sum of the records' risks, persons in re-identified households) over
    releases, each record's risk from its release's counts (on the first also by :func:`_kept_risks`: equal)."""
    from pramkit.risk.household import combine_households

    rng = np.random.default_rng(46)
    members = pd.factorize(data[household])[0]
    draws = _Releases(data, keys, manifest, **risk)  # type: ignore[arg-type]
    released, codes = draws.draw(rng)
    first = draws.kept_risks(codes)
    np.testing.assert_allclose(first, _kept_risks(data, released, keys, manifest, **risk), rtol=1e-12, atol=0.0)
    risks = itertools.chain([first], (draws.kept_risks(draws.draw(rng)[1]) for _ in range(releases - 1)))
    a = np.array([(float(np.nansum(r)), float(combine_households(r, members).sum())) for r in risks])
    return a.mean(axis=0), a.std(axis=0, ddof=1) / math.sqrt(releases)


@pytest.mark.slow
@pytest.mark.parametrize("risk", [{"sampling_fraction": 0.01}, {"weights": "rb050"}], ids=["fraction", "weights"])
def test_monte_carlo_of_the_individual_and_household_risk(sdc_data: Path, risk: dict[str, object]) -> None:
    """EU-SILC: the age band perturbed (its records all have one), households of up to 9 persons."""
    data = read_table(sdc_data / "eusilc_laeken.csv")
    data["ageband"] = pd.cut(pd.to_numeric(data["age"]), [-2, 15, 24, 34, 44, 54, 64, 74, 120]).astype(str)
    keys = ["db040", "rb090", "ageband", "hsize"]
    manifest = _design(sdc_data / "eusilc_laeken.csv", ("hsize",), DesignChoices(epsilon=4.0))
    e = expected_release(ProblemSet.of(data, keys, household="db030", **risk), manifest)  # type: ignore[arg-type]
    mean, se = _simulated_kept(data, keys, manifest, "db030", 200, **risk)
    assert e.individual_exact == ("weights" not in risk)
    # weights that differ within a released cell: f~ / F~ the ratio of expectations where the record is not
    # alone, measured at 0.2 % (individual) and 0.3 % (households) below 400 releases' means; exact otherwise
    slack = 0.01 if "weights" in risk else 0.0
    assert abs(e.individual - mean[0]) <= 4 * se[0] + slack * mean[0]
    assert e.household is not None and abs(e.household - mean[1]) <= 4 * se[1] + slack * mean[1]
    assert e.individual < e.individual_before


def test_beyond_the_work_limit_the_count_is_taken_as_poisson(monkeypatch: pytest.MonkeyPatch) -> None:
    import pramkit.risk.expected as expected

    counts = np.array([2000.0, 300.0, 1.0])
    m = np.full((3, 3), 0.005) + np.eye(3) * 0.985
    exact = expected.expected_kept_risk(counts, [m], 0.05)
    monkeypatch.setattr(expected, "KEPT_EXACT_MAX_WORK", 10)
    poisson = expected.expected_kept_risk(counts, [m], 0.05)
    assert exact.exact and not poisson.exact
    assert np.allclose(poisson.risk, exact.risk, rtol=0.02)
    assert np.allclose(poisson.alone, exact.alone, rtol=0.05)
