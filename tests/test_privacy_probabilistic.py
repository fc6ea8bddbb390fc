"""Probabilistic DP of sampling and misclassification (privacy/probabilistic.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pramkit.errors import MatrixError, PramkitError
from pramkit.matrix import PramMatrix
from pramkit.privacy.probabilistic import (
    bad_outcome_probability,
    population_unique_probability,
    rare_cell_threshold,
    recoding_matrix,
    swapping_matrix,
)


def test_threshold_of_the_numerical_example():
    # sec. 3: 2 eps^-1 log(2k/delta) = 77.3 for k = 2^16, eps = delta = 1/3
    assert round(rare_cell_threshold(2**16, epsilon=1 / 3, delta=1 / 3), 1) == 77.3
    with pytest.raises(PramkitError):
        rare_cell_threshold(10, epsilon=0.0, delta=0.1)


def test_population_unique_probability_by_simulation():
    rng = np.random.default_rng(0)
    lam, pi = 3.0, 0.2
    F = rng.poisson(lam, 400_000)
    f = rng.binomial(F, pi)
    share = np.mean(F[f == 1] == 1)
    se = math.sqrt(share * (1 - share) / np.sum(f == 1))
    assert abs(share - population_unique_probability(lam, pi)) < 4 * se


def test_recoding_is_not_dp():
    m = recoding_matrix(["a", "b", "c", "d"], [["a", "b", "c"]])
    np.testing.assert_array_equal(m.matrix[:, 0], [1, 1, 1, 0])
    np.testing.assert_array_equal(m.matrix[3], [0, 0, 0, 1])
    assert math.isinf(m.epsilon)
    with pytest.raises(MatrixError):
        recoding_matrix(["a", "b"], [["a", "z"]])


def test_swapping_matrix_by_simulation():
    # one random pair of records is swapped: the empirical P(new value j | old value k)
    values = np.array([0] * 3 + [1] * 5 + [2] * 2)
    counts = np.bincount(values)
    m = swapping_matrix(counts)
    rng = np.random.default_rng(1)
    reps = 60_000
    tally = np.zeros((3, 3))
    for _ in range(reps):
        i, j = rng.choice(values.size, 2, replace=False)
        new = values.copy()
        new[i], new[j] = values[j], values[i]
        np.add.at(tally, (values, new), 1)
    empirical = tally / tally.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(empirical, m.matrix, atol=0.004)
    assert math.isfinite(m.epsilon)


def _enumerate_bad(m: np.ndarray, codes: np.ndarray) -> float:
    """Probability of a bad table by enumerating every released file (tiny n)."""
    n, s = codes.size, m.shape[0]
    f = np.bincount(codes, minlength=s)
    bad_p = 0.0
    for released in itertools.product(range(s), repeat=n):
        p = math.prod(m[c, r] for c, r in zip(codes, released))
        if p == 0:
            continue
        ft = np.bincount(released, minlength=s)
        bad = any(
            np.any(m[:, j] == 0) and ft[j] == n - f[m[:, j] == 0].sum() for j in range(s)
        )
        bad_p += p * bad
    return bad_p


@pytest.mark.parametrize("matrix, codes", [
    (np.array([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]]), np.array([0, 0, 1, 2, 2, 1, 0])),
    (np.array([[0.6, 0.4, 0.0, 0.0], [0.0, 0.7, 0.3, 0.0], [0.0, 0.0, 0.5, 0.5], [0.2, 0.0, 0.0, 0.8]]),
     np.array([0, 1, 2, 3, 3, 0])),
])
def test_bad_outcome_probability_by_enumeration(matrix, codes):
    res = bad_outcome_probability(PramMatrix(matrix), np.bincount(codes, minlength=matrix.shape[0]))
    exact = _enumerate_bad(matrix, codes)
    assert res.delta == pytest.approx(exact, rel=1e-12)
    assert res.delta_lower <= exact + 1e-15 <= res.delta_upper + 2e-15


def test_no_zeros_no_bad_outcome():
    res = bad_outcome_probability(PramMatrix(np.full((3, 3), 1 / 3)), [4, 5, 6])
    assert res.columns == () and res.delta == 0.0 and res.delta_upper == 0.0
