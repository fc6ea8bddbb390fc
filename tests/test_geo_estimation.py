"""Per-area estimates from a released area variable: coverage of the 95 % intervals by simulation.

An area variable of the synthetic geography (:func:`pramkit.datasets.census_areas`) is
perturbed many times -- by the model of PRAM drawn with numpy's generator (each original
category's records released by one multinomial draw from its row), and by pramkit's own
sampler -- and the per-area counts are estimated with standard errors by the unbiased
estimator and the iterative Bayesian update (EM, the MLE).  The nominal 95 % intervals must
cover the true counts at a rate consistent with 0.95: pooled over areas (the replicates'
coverage fractions are independent, so their mean is within a few standard errors of 0.95)
and area by area (a binomial test, Bonferroni over the areas).  The same check must reject
deliberately wrong standard errors (power).  Nothing expected comes from the code under test:
the truth is the simulated file.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from pramkit import SecretKey
from pramkit.datasets import census_areas
from pramkit.design.dp.distance import dp_min_distance
from pramkit.design.metric.mechanisms import exponential_mechanism, row_measures
from pramkit.distances import Distances, euclidean_distances
from pramkit.engine.perturb import perturb_codes, sampler_for
from pramkit.estimate import TableEstimate, mle_estimate, moment_estimate
from pramkit.matrix import PramMatrix
from pramkit.report.build import Weights

AREAS = 25
RECORDS = 50_000
REPLICATES = 300
#: Metric epsilon (per km) of the exponential mechanism: pure epsilon about 10; the unbiased
#: estimate stays inside the simplex in most replicates, where the MLE equals it.
METRIC_EPSILON = 0.2
#: Pure epsilon of the distance-optimal LP: it releases 23 of the 25 areas (a singular matrix).
LP_EPSILON = 6.0
Z = float(norm.ppf(0.975))
#: Size of the coverage tests (each: pooled, and per quantity with Bonferroni).
ALPHA = 1e-3


def coverage_ok(covered: np.ndarray, level: float = 0.95, *, conservative: bool = False) -> bool:
    """Whether ``covered`` (replicates x quantities, booleans) is consistent with coverage ``level``
    (``conservative``: with coverage at least ``level``; one-sided tests).

    Pooled: the replicates are independent, so the mean of their coverage fractions is
    asymptotically normal with the standard error of the fractions; it must lie within the
    ``ALPHA`` quantile of ``level``.  Per quantity: an exact binomial test at
    ``ALPHA`` / number of quantities.
    """
    fractions = covered.mean(axis=1)
    se = fractions.std(ddof=1) / np.sqrt(fractions.size)
    gap = level - fractions.mean() if conservative else abs(fractions.mean() - level)
    if gap > norm.ppf(1 - ALPHA / (1 if conservative else 2)) * se:
        return False
    k = covered.shape[1]
    side = "less" if conservative else "two-sided"
    return all(binomtest(int(c), covered.shape[0], level, alternative=side).pvalue >= ALPHA / k
               for c in covered.sum(axis=0))


def within_interval(estimate: np.ndarray, se: np.ndarray, truth: np.ndarray, scale: float = 1.0) -> np.ndarray:
    return np.abs(estimate - truth) <= Z * scale * se


@pytest.fixture(scope="module")
def geography() -> tuple[Distances, np.ndarray, np.ndarray]:
    """Distances (km), the population shares and one fixed original file's counts."""
    areas = census_areas(AREAS)
    d = euclidean_distances(areas["category"], areas[["x", "y"]].to_numpy(), unit="km")
    p = areas["share"].to_numpy() / areas["share"].sum()
    counts = np.random.default_rng(11).multinomial(RECORDS, p)
    return d, p, counts


def released(rng: np.random.Generator, counts: np.ndarray, m: PramMatrix) -> np.ndarray:
    """Released counts of a file with original ``counts``: PRAM's model, drawn by numpy."""
    return rng.multinomial(counts, m.matrix).sum(axis=0).astype(float)


def simulate(counts: np.ndarray, m: PramMatrix, estimator: Callable[..., TableEstimate],
             seed: int) -> list[TableEstimate]:
    rng = np.random.default_rng(seed)
    return [estimator(released(rng, counts, m), [m], variance="pram") for _ in range(REPLICATES)]


@pytest.fixture(scope="module")
def exponential(geography) -> PramMatrix:
    return exponential_mechanism(geography[0], METRIC_EPSILON)


@pytest.fixture(scope="module")
def unbiased_runs(geography, exponential) -> list[TableEstimate]:
    return simulate(geography[2], exponential, moment_estimate, seed=1)


def test_unbiased_estimator_covers_every_area(geography, unbiased_runs) -> None:
    counts = geography[2]
    assert all(e.estimator == "unbiased" for e in unbiased_runs)
    covered = np.array([within_interval(e.counts, e.se, counts) for e in unbiased_runs])
    assert coverage_ok(covered)
    # unbiased: the mean estimate is within a few standard errors of the truth, area by area
    est = np.array([e.counts for e in unbiased_runs])
    assert np.all(np.abs(est.mean(axis=0) - counts) <= 4.5 * est.std(axis=0, ddof=1) / np.sqrt(REPLICATES))


@pytest.mark.parametrize("scale", [0.8, 1.25])
def test_coverage_check_rejects_wrong_standard_errors(geography, unbiased_runs, scale) -> None:
    covered = np.array([within_interval(e.counts, e.se, geography[2], scale) for e in unbiased_runs])
    assert not coverage_ok(covered)


def test_iterative_bayesian_update_covers_every_area(geography, exponential) -> None:
    """At least 95 %: where the unbiased estimate leaves the simplex (in about 15 % of the
    replicates here) the MLE sits on its boundary, less variable than its inverse-information
    standard errors say, so its intervals are conservative (measured: 95.1-95.9 % pooled over
    20 files, median 95.3 %); in the interior it equals the unbiased estimate."""
    counts = geography[2]
    runs = simulate(counts, exponential, mle_estimate, seed=2)
    assert all(e.estimator == "mle" and e.converged for e in runs)
    covered = np.array([within_interval(e.counts, e.se, counts) for e in runs])
    assert coverage_ok(covered, conservative=True)
    wrong = np.array([within_interval(e.counts, e.se, counts, 0.8) for e in runs])
    assert not coverage_ok(wrong, conservative=True)


def test_multinomial_variance_covers_the_population(geography, exponential) -> None:
    """A new file from the population in every replicate: the multinomial variance covers n p."""
    _, p, _ = geography
    rng = np.random.default_rng(3)
    covered = []
    for _ in range(REPLICATES):
        est = moment_estimate(released(rng, rng.multinomial(RECORDS, p), exponential), [exponential])
        covered.append(within_interval(est.counts, est.se, RECORDS * p))
    assert coverage_ok(np.array(covered))


def test_pramkit_sampler_gives_the_same_coverage(geography, exponential) -> None:
    """The released files drawn by pramkit's own sampler (a new key per replicate)."""
    counts = geography[2]
    codes = np.repeat(np.arange(AREAS), counts)
    sampler = sampler_for(exponential)
    covered = []
    for r in range(REPLICATES):
        out = perturb_codes(codes, sampler, key=SecretKey(r.to_bytes(32, "big"), "test"), variable="area")
        est = moment_estimate(np.bincount(out, minlength=AREAS).astype(float), [exponential], variance="pram")
        covered.append(within_interval(est.counts, est.se, counts))
    assert coverage_ok(np.array(covered))


def test_singular_distance_design_covers_what_is_identifiable(geography) -> None:
    """The distance-optimal LP leaves some areas unreleased: the IBU's identifiable areas and
    the totals of the groups it cannot tell apart must be covered."""
    d, p, counts = geography
    m = dp_min_distance(p, LP_EPSILON, d)
    assert np.linalg.matrix_rank(m.matrix) < AREAS
    runs = simulate(counts, m, mle_estimate, seed=4)
    first = runs[0].identifiability
    assert first is not None and first.groups
    cells = np.isfinite(runs[0].se)
    assert 0 < cells.sum() < AREAS
    covered, groups = [], []
    for e in runs:
        assert np.array_equal(np.isfinite(e.se), cells)
        covered.append(within_interval(e.counts[cells], e.se[cells], counts[cells]))
        groups.append([abs(g.estimate - counts[list(g.members[0])].sum()) <= Z * g.se
                       for g in e.identifiability.groups])
    assert coverage_ok(np.array(covered))
    assert coverage_ok(np.array(groups))


def test_public_locality_intervals_cover(geography, exponential, unbiased_runs) -> None:
    """The public report's locality figures estimated from the released file (expected distance
    moved, share kept, share within 5 km) and their intervals, against the file's true figures."""
    d, _, counts = geography
    rows = row_measures(exponential, d, within=5.0)
    truth = {name: float(counts @ getattr(rows, name)) / RECORDS for name in ("distance", "kept", "within")}
    covered = []
    for e in unbiased_runs:
        w = Weights("estimated", table=e)
        hits = []
        for name, value in truth.items():
            est, se = w.figure(getattr(rows, name))
            hits.append(abs(est - value) <= Z * se)
        covered.append(hits)
    assert coverage_ok(np.array(covered))
