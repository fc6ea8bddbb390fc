"""Randomized response fitted to a target beta: closed form, compact, O(S) memory.

The reference is computed here, independently of the package: the dense r x r
matrix of form (8) and beta from its entries by equation (4) of Ruiz and
Domingo-Ferrer (``H(P) = -(1/r) sum P log2 P`` over ``log2 r``), fitted by
bisection.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.design.bistochastic.families import BetaUnreachableError, fit_family
from pramkit.design.registry import FAMILIES
from pramkit.matrix import PramMatrix
from pramkit.privacy.bistochastic import NotBistochasticError


def dense_beta(q: float, r: int) -> float:
    """beta of the dense form (8) matrix with keep q, from its entries (equation (4))."""
    m = np.full((r, r), (1.0 - q) / (r - 1))
    np.fill_diagonal(m, q)
    positive = m[m > 0]
    return float(-(positive * np.log2(positive)).sum() / r / math.log2(r))


def dense_fit_q(r: int, beta: float) -> float:
    """The q in [1/r, 1] with dense_beta = beta, by bisection (beta falls in q)."""
    lo, hi = 1.0 / r, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if dense_beta(mid, r) > beta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15:
            break
    return 0.5 * (lo + hi)


def fitted_q(fit) -> float:
    m = fit.matrix
    assert m.is_compact
    q = m.form8_q
    assert np.ptp(q) == 0.0
    return float(q[0])


@pytest.mark.parametrize("r", [2, 3, 4, 5, 7, 12, 20, 33, 50])
@pytest.mark.parametrize("beta", [0.05, 0.3, 0.6, 0.9])
def test_compact_fit_matches_dense_reference(r: int, beta: float) -> None:
    fit = fit_family("rr", range(r), beta)
    q_ref = dense_fit_q(r, beta)
    assert fitted_q(fit) == pytest.approx(q_ref, rel=1e-9, abs=1e-9)
    assert fit.beta == pytest.approx(beta, abs=1e-9)
    assert dense_beta(fitted_q(fit), r) == pytest.approx(beta, abs=1e-9)
    # the parameter is epsilon = log(q (r - 1) / (1 - q)), equation (2)
    assert fit.parameter == pytest.approx(math.log(q_ref * (r - 1) / (1.0 - q_ref)), rel=1e-7)


@settings(max_examples=60, deadline=None)
@given(r=st.integers(2, 50), beta=st.floats(0.01, 0.99))
def test_compact_fit_hypothesis(r: int, beta: float) -> None:
    fit = fit_family("rr", range(r), beta)
    q = fitted_q(fit)
    assert fit.beta == pytest.approx(beta, abs=1e-9)
    assert dense_beta(q, r) == pytest.approx(beta, abs=1e-9)
    assert q == pytest.approx(dense_fit_q(r, beta), rel=1e-8, abs=1e-8)
    assert fit.matrix.is_bistochastic


def test_beta_of_the_returned_matrix_is_read_from_its_entries() -> None:
    fit = fit_family("rr", range(9), 0.4)
    assert fit.beta == pytest.approx(dense_beta(fitted_q(fit), 9), abs=1e-12)
    assert fit.matrix.provenance.objective == fit.beta


def test_mutual_information_matches_the_dense_formula() -> None:
    p = np.array([0.4, 0.3, 0.2, 0.1])
    fit = fit_family("rr", range(4), 0.5, p=p)
    m = fit.matrix.matrix
    out = p @ m
    dense = float(sum(p[k] * m[k, j] * math.log(m[k, j] / out[j]) for k in range(4) for j in range(4)))
    assert fit.mutual_information_nats == pytest.approx(dense, rel=1e-10)


def test_registry_rr_with_beta_is_compact() -> None:
    m = FAMILIES["rr"].build(list("abcdef"), None, None, {"beta": 0.35})
    assert m.is_compact
    assert m.provenance.method == "randomized_response"
    assert dense_beta(float(m.form8_q[0]), 6) == pytest.approx(0.35, abs=1e-9)


def test_twenty_thousand_categories_without_a_square_array() -> None:
    s = 20_000
    cats = list(range(s))
    tracemalloc.start()
    try:
        m = FAMILIES["rr"].build(cats, None, None, {"beta": 0.5})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.is_compact and m.size == s
    assert peak < 200 * s * 8  # an S x S float array would be S * S * 8 bytes = 3.2 GB
    q = float(m.form8_q[0])
    bits = -(q * math.log2(q) + (1 - q) * math.log2((1 - q) / (s - 1)))
    assert bits / math.log2(s) == pytest.approx(0.5, abs=1e-9)


def test_beta_unreachable_at_the_ends() -> None:
    with pytest.raises(BetaUnreachableError):
        fit_family("rr", range(5), 1 - 1e-16)
    with pytest.raises(BetaUnreachableError):
        fit_family("rr", range(5), 1e-300)


def test_beta_refuses_a_compact_matrix_that_is_not_bistochastic() -> None:
    from pramkit.design.bistochastic.families import _beta

    with pytest.raises(NotBistochasticError):
        _beta(PramMatrix.form8([0.9, 0.5, 0.7]))
    # a compact bistochastic matrix: beta from its entries
    q = 0.7
    assert _beta(PramMatrix.form8([q] * 4)) == pytest.approx(dense_beta(q, 4), abs=1e-14)
