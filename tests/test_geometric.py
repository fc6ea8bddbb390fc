"""Exact discrete Laplace noise and the geometric mechanism for counts.

The distribution checks are chi-square goodness-of-fit tests against pmfs
written out here from their formulas, with seeded generators so that every
run draws the same numbers.  Tests reject at ALPHA = 1e-6; the sample sizes
make the power against a 10 % error in the scale at least 1 - 1e-20 (the
noncentrality of the chi-square statistic is over 340 for 42 degrees of
freedom).
"""

from __future__ import annotations

import doctest
import itertools
import json
import math
import random
import secrets
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import pramkit.privacy.geometric as geometric
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.privacy.geometric import (
    MIN_GAMMA,
    DPCounts,
    _bernoulli_exp,
    _Bits,
    _gamma,
    _geometric,
    discrete_laplace,
    dp_counts,
)

ALPHA = 1e-6


def chi2_pvalue(observed: np.ndarray, probs: np.ndarray) -> float:
    """P-value of the chi-square goodness-of-fit test of counts against cell probabilities."""
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-12)
    expected = observed.sum() * probs
    assert expected.min() >= 5, "merge cells: some expected counts are below 5"
    return float(stats.chisquare(observed, expected).pvalue)


def geometric_cells(q: float, n: int) -> tuple[np.ndarray, int]:
    """Probabilities of y = 0, ..., m - 1 and of y >= m for P(y) = (1 - q) q**y.

    m is as large as keeps every expected count of n draws at 5 or more.
    """
    m = 1
    while n * min((1 - q) * q**m, q ** (m + 1)) >= 5:  # cell y = m and tail y >= m + 1
        m += 1
    y = np.arange(m)
    return np.append((1 - q) * q**y, q**m), m


def two_sided_cells(gamma: float, n: int) -> tuple[np.ndarray, int]:
    """Probabilities of k <= -m - 1, k = -m, ..., m and k >= m + 1 for P(k) ∝ exp(-gamma |k|).

    P(k) = (1 - q) / (1 + q) q**|k| with q = exp(-gamma), so P(k >= j) = q**j / (1 + q)
    for j >= 1; m is as large as keeps every expected count of n draws at 5 or more.
    """
    q = math.exp(-gamma)
    m = 0
    while n * min((1 - q) * q ** (m + 1), q ** (m + 2)) / (1 + q) >= 5:
        m += 1
    k = np.arange(-m, m + 1)
    tail = q ** (m + 1) / (1 + q)
    return np.concatenate([[tail], (1 - q) / (1 + q) * q ** np.abs(k), [tail]]), m


def two_sided_pvalue(sample: np.ndarray, gamma: float) -> float:
    probs, m = two_sided_cells(gamma, sample.size)
    observed = np.bincount(np.clip(sample, -m - 1, m + 1) + m + 1, minlength=probs.size)
    return chi2_pvalue(observed, probs)


# --- the sub-samplers --------------------------------------------------------


@pytest.mark.parametrize(
    "gamma",
    [Fraction(1, 3), Fraction(5, 7), Fraction(1), Fraction(0.7) / 2, Fraction(1, 2**60)],
)
def test_bernoulli_exp_is_exact(gamma: Fraction) -> None:
    n = 20_000
    bits = _Bits(random.Random(11))
    hits = sum(_bernoulli_exp(gamma.numerator, gamma.denominator, bits) for _ in range(n))
    p = math.exp(-gamma)
    if n * (1 - p) < 5:
        # Fewer than 5 expected failures: count them against the binomial directly.
        assert stats.binomtest(n - hits, n, 1 - p).pvalue > ALPHA
    else:
        assert chi2_pvalue(np.array([hits, n - hits]), np.array([p, 1 - p])) > ALPHA


def test_bernoulli_exp_of_zero_always_succeeds() -> None:
    bits = _Bits(random.Random(1))
    assert all(_bernoulli_exp(0, b, bits) for b in (1, 2, 3, 2**70) for _ in range(200))


@pytest.mark.parametrize(
    "gamma",
    [Fraction(3, 7), Fraction(0.7) / 2, Fraction(5), Fraction(1, 40), Fraction(9, 4)],
)
def test_geometric_is_exact(gamma: Fraction) -> None:
    n = 20_000
    bits = _Bits(random.Random(12))
    draws = np.array([_geometric(gamma.numerator, gamma.denominator, bits) for _ in range(n)])
    probs, m = geometric_cells(math.exp(-gamma), n)
    observed = np.bincount(np.minimum(draws, m), minlength=m + 1)
    assert chi2_pvalue(observed, probs) > ALPHA


def test_bits_are_uniform_below_any_bound() -> None:
    bits = _Bits(random.Random(13))
    assert {bits.below(1) for _ in range(100)} == {0}
    cells = 5
    for n in (2, 3, 7, 2**20 + 1, 2**64 + 3):
        draws = [bits.below(n) for _ in range(5_000)]
        assert 0 <= min(draws) and max(draws) < n
        # x in class c = floor(x cells / n) for exactly ceil((c + 1) n / cells) - ceil(c n / cells) values
        edges = [-(-c * n // cells) for c in range(cells + 1)]
        probs = np.array([(hi - lo) / n for lo, hi in itertools.pairwise(edges)])
        observed = np.bincount([x * cells // n for x in draws], minlength=cells)
        keep = probs > 0
        assert np.all(observed[~keep] == 0)
        assert chi2_pvalue(observed[keep], probs[keep]) > ALPHA


# --- discrete Laplace ------------------------------------------------------------


def test_discrete_laplace_fits_and_rejects_a_scale_10_percent_off() -> None:
    epsilon, n = 0.7, 40_000
    gamma = epsilon / 2
    right = discrete_laplace(n, epsilon, rng=random.Random(21))
    assert two_sided_pvalue(right, gamma) > ALPHA
    for wrong in (epsilon * 1.1, epsilon / 1.1):
        sample = discrete_laplace(n, wrong, rng=random.Random(22))
        assert two_sided_pvalue(sample, gamma) < ALPHA


@pytest.mark.parametrize(
    "epsilon, sensitivity",
    [(0.1, 2), (0.3, 1), (0.9, 3), (8.0, 2), (1.0, 2), (2.5, 5)],
)
def test_discrete_laplace_fits(epsilon: float, sensitivity: int) -> None:
    sample = discrete_laplace(15_000, epsilon, sensitivity=sensitivity, rng=random.Random(23))
    assert sample.dtype == np.int64
    assert two_sided_pvalue(sample, epsilon / sensitivity) > ALPHA


def test_epsilon_is_read_exactly() -> None:
    assert _gamma(0.1, 2) == Fraction(3602879701896397, 2**56)
    assert _gamma(np.float32(0.5), 3) == Fraction(1, 6)
    assert _gamma(Fraction(2, 3), 2) == Fraction(1, 3)
    assert _gamma(np.int64(3), 2) == Fraction(3, 2)


def test_seeded_draws_repeat_and_default_source_is_the_system() -> None:
    a = discrete_laplace(50, 0.5, rng=random.Random(5))
    assert np.array_equal(a, discrete_laplace(50, 0.5, rng=random.Random(5)))
    assert discrete_laplace(0, 0.5).shape == (0,)
    assert discrete_laplace(10, 0.5, rng=secrets.SystemRandom()).dtype == np.int64
    assert discrete_laplace(10, 0.5).shape == (10,)


def test_module_doctests() -> None:
    assert doctest.testmod(geometric).failed == 0


# --- the mechanism ----------------------------------------------------------------


def log_pmf(k: np.ndarray, gamma: float) -> np.ndarray:
    """Log of P(k) = (1 - q) / (1 + q) q**|k|, q = exp(-gamma)."""
    q = math.exp(-gamma)
    return math.log((1 - q) / (1 + q)) - gamma * np.abs(k)


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 1.0, 3.0])
def test_neighbouring_histograms_are_epsilon_indistinguishable(epsilon: float) -> None:
    # One record of cell 0 replaced by one of cell 1: the counts differ by 1 in two cells.
    counts = np.array([5, 3, 0])
    neighbour = np.array([4, 4, 0])
    grid = np.array(list(itertools.product(range(-30, 40), range(-30, 40), range(-5, 6))))
    for sensitivity, bound in ((2, epsilon), (1, 2 * epsilon)):
        gamma = epsilon / sensitivity
        log_p = log_pmf(grid - counts, gamma).sum(axis=1)
        log_p_neighbour = log_pmf(grid - neighbour, gamma).sum(axis=1)
        log_ratio = np.abs(log_p - log_p_neighbour)
        # sensitivity 2 meets exp(epsilon) exactly; 1 would double the loss on a histogram
        assert log_ratio.max() <= bound * (1 + 1e-12)
        assert log_ratio.max() >= bound * (1 - 1e-12)
    # The pmf formula sums to one (checked on a wide window).
    k = np.arange(-2_000, 2_001)
    assert math.isclose(np.exp(log_pmf(k, epsilon / 2)).sum(), 1.0, rel_tol=1e-12)


def test_dp_counts_adds_the_noise_and_keeps_the_shape() -> None:
    counts = np.array([[10, 0, 3], [7, 2, 0]])
    released = dp_counts(counts, 0.8, rng=random.Random(31))
    noise = discrete_laplace(counts.size, 0.8, rng=random.Random(31))
    assert released.noisy.dtype == np.int64
    assert np.array_equal(released.noisy, counts + noise.reshape(counts.shape))
    assert (released.epsilon, released.sensitivity) == (0.8, 2)
    assert dp_counts([3.0, 4.0], 1.0, sensitivity=1, rng=random.Random(1)).sensitivity == 1


def test_proportions_clamp_normalise_or_fall_back_to_uniform() -> None:
    released = DPCounts(noisy=np.array([6, -2, 2, 0]), epsilon=1.0, sensitivity=2)
    assert released.proportions().tolist() == [0.75, 0.0, 0.25, 0.0]
    none_positive = DPCounts(noisy=np.array([-1, 0, -3, 0]), epsilon=1.0, sensitivity=2)
    assert none_positive.proportions().tolist() == [0.25] * 4
    table = DPCounts(noisy=np.array([[1, 1], [-1, 2]]), epsilon=1.0, sensitivity=2)
    assert table.proportions().tolist() == [[0.25, 0.25], [0.0, 0.5]]


def test_to_dict_is_json() -> None:
    released = dp_counts([4, 9, 1], 0.5, rng=random.Random(2))
    out = json.loads(json.dumps(released.to_dict()))
    assert out == {
        "mechanism": "geometric",
        "noisy": released.noisy.tolist(),
        "epsilon": 0.5,
        "sensitivity": 2,
    }


# --- validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "epsilon",
    [0, 0.0, -1.0, math.inf, -math.inf, math.nan, "1", None, True, 1j, float(MIN_GAMMA)],
)
def test_bad_epsilon(epsilon: object) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        discrete_laplace(3, epsilon)
    with pytest.raises(ParameterError, match="epsilon"):
        dp_counts([1, 2], epsilon)


@pytest.mark.parametrize("sensitivity", [0, -2, 1.0, 2.5, True, "2", None])
def test_bad_sensitivity(sensitivity: object) -> None:
    with pytest.raises(ParameterError, match="sensitivity"):
        discrete_laplace(3, 1.0, sensitivity=sensitivity)
    with pytest.raises(ParameterError, match="sensitivity"):
        dp_counts([1, 2], 1.0, sensitivity=sensitivity)


@pytest.mark.parametrize("size", [-1, 2.0, False, "3", None])
def test_bad_size(size: object) -> None:
    with pytest.raises(ParameterError, match="size"):
        discrete_laplace(size, 1.0)


@pytest.mark.parametrize(
    "counts",
    [[], [3, -1], [1.5, 2], [np.nan, 1], [np.inf], ["a", "b"], [True, False], [2**62], [{"a": 1}]],
)
def test_bad_counts(counts: object) -> None:
    with pytest.raises(DataError, match="counts"):
        dp_counts(counts, 1.0)


def test_errors_are_pramkit_errors_with_one_line_messages() -> None:
    for call in (lambda: discrete_laplace(3, -1.0), lambda: dp_counts([-1], 1.0)):
        with pytest.raises(PramkitError) as info:
            call()
        assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
