"""Bistochastic matrices over individuals for a numerical attribute (section 3.2)."""

from __future__ import annotations

import numpy as np
import pytest

from pramkit.design.bistochastic.families import k_anonymity, tridiagonal
from pramkit.design.bistochastic.numeric import bistochastic_numeric
from pramkit.errors import DataError, PramkitError
from pramkit.privacy.bistochastic import bistochastic_privacy


def dense_expected(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """P x over individuals ranked by value (stable), returned in file order."""
    order = np.argsort(x, kind="stable")
    y = np.empty_like(x)
    y[order] = m @ x[order]
    return y


@pytest.mark.parametrize("n,k", [(11, 3), (12, 4), (30, 7), (5, 5)])
def test_blocks_are_microaggregation_and_equal_the_dense_matrix(n, k):
    rng = np.random.default_rng(n)
    x = np.round(rng.lognormal(size=n), 1)  # ties included
    rel = bistochastic_numeric(x, family="blocks", k=k)
    dense = k_anonymity(range(n), k)
    assert rel.values == pytest.approx(dense_expected(x, dense.matrix), rel=1e-12)
    assert rel.released_mean == pytest.approx(rel.original_mean, rel=1e-13)
    assert rel.beta == pytest.approx(bistochastic_privacy(dense).beta, rel=1e-12)
    # Microaggregation by hand: sort, cut into groups of at least k, replace by group means.
    order = np.argsort(x, kind="stable")
    for c in dense.provenance.parameters["classes"]:
        members = order[c]
        assert len(members) >= k
        assert rel.values[members] == pytest.approx(np.full(len(c), x[members].mean()))


@pytest.mark.parametrize("n,alpha", [(2, 0.7), (9, 0.25), (20, 0.5)])
def test_tridiagonal_expected_release_equals_the_dense_matrix(n, alpha):
    x = np.random.default_rng(1).normal(10, 3, size=n)
    rel = bistochastic_numeric(x, family="tridiagonal", alpha=alpha)
    dense = tridiagonal(range(n), alpha)
    assert rel.values == pytest.approx(dense_expected(x, dense.matrix), rel=1e-12)
    assert rel.released_mean == pytest.approx(rel.original_mean, rel=1e-13)
    assert rel.entropy_rate_bits == pytest.approx(bistochastic_privacy(dense).entropy_rate_bits, rel=1e-12)


@pytest.mark.parametrize("family,opts", [("blocks", {"k": 5}), ("tridiagonal", {"alpha": 0.3})])
def test_random_release_preserves_the_mean_in_expectation(key, family, opts):
    n = 200_000
    x = np.random.default_rng(2).lognormal(size=n)
    rel = bistochastic_numeric(x, family=family, key=key, variable="income", **opts)
    assert rel.randomised and np.isin(rel.values, x).all()  # each draw is a value of the data
    # Var(mean of Y) = sum_u Var(Y_u) / n^2, with Var(Y_u) = (P x^2)_u - ((P x)_u)^2.
    ex = bistochastic_numeric(x, family=family, **opts).values
    ex2 = bistochastic_numeric(x ** 2, family=family, **opts).values
    se = np.sqrt(np.sum(ex2 - ex ** 2)) / n
    assert abs(rel.released_mean - x.mean()) <= 4.5 * se
    assert se > 0


def test_random_release_is_reproducible_and_per_individual_unbiased(key):
    x = np.array([3.0, 1.0, 4.0, 1.5, 9.0, 2.6])
    expected = bistochastic_numeric(x, family="tridiagonal", alpha=0.2).values
    draws = np.array([bistochastic_numeric(x, family="tridiagonal", alpha=0.2, key=key, variable=f"v{i}").values
                      for i in range(3000)])
    sq = bistochastic_numeric(x ** 2, family="tridiagonal", alpha=0.2).values
    se = np.sqrt((sq - expected ** 2) / len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 4.5 * se + 1e-12)
    again = bistochastic_numeric(x, family="tridiagonal", alpha=0.2, key=key, variable="v0").values
    assert np.array_equal(again, draws[0])


def test_bad_input(key):
    with pytest.raises(DataError):
        bistochastic_numeric([1.0, np.nan, 2.0], family="blocks", k=2)
    with pytest.raises(DataError):
        bistochastic_numeric([1.0], family="blocks", k=1)
    with pytest.raises(PramkitError):
        bistochastic_numeric([1.0, 2.0, 3.0], family="blocks", alpha=0.2)
    with pytest.raises(PramkitError):
        bistochastic_numeric([1.0, 2.0, 3.0], family="tridiagonal", alpha=0.6)
    with pytest.raises(PramkitError):
        bistochastic_numeric([1.0, 2.0, 3.0], family="swap", k=2)
    with pytest.raises(PramkitError):
        bistochastic_numeric([1.0, 2.0, 3.0], family="blocks", k=2, key=key)
