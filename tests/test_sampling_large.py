"""The sampler of large dense matrices (bisection of cumulative units) against the rows it draws from."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from pramkit import PramMatrix
from pramkit.engine.sampling import MAX_ALIAS, AliasSampler, CumulativeSampler, sampler_for


def _random_matrix(s: int, seed: int, zeros: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.random((s, s)) * (rng.random((s, s)) > zeros)
    np.fill_diagonal(m, rng.random(s) * s)
    return m / m.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("row", [0, 3, 7])
def test_each_row_is_drawn_with_its_probabilities_and_zeros_never(row):
    m = _random_matrix(8, row)
    n = 300_000
    out = np.empty(n, dtype=np.intp)
    CumulativeSampler(m).draw(np.full(n, row), np.random.default_rng(10 + row).bit_generator.random_raw(n), out)
    observed = np.bincount(out, minlength=8)
    assert not observed[m[row] == 0].any()
    positive = m[row] > 0
    assert chisquare(observed[positive], n * m[row][positive]).pvalue > 1e-4
    shifted = m[row].copy()  # power: moving 5 % of the mass between two categories is rejected
    i, j = np.flatnonzero(positive)[:2]
    shifted[i], shifted[j] = shifted[i] - 0.05, shifted[j] + 0.05
    if shifted[i] > 0:
        assert chisquare(observed[positive], n * shifted[positive]).pvalue < 1e-6


def test_it_agrees_in_law_with_the_alias_sampler():
    """Same matrix, independent uniforms: the two samplers' released frequencies agree."""
    m = _random_matrix(50, 5)
    n = 400_000
    codes = np.random.default_rng(6).integers(0, 50, n)
    a, c = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    AliasSampler(m).draw(codes, np.random.default_rng(7).bit_generator.random_raw(n), a)
    CumulativeSampler(m).draw(codes, np.random.default_rng(8).bit_generator.random_raw(n), c)
    table_a = np.bincount(codes * 50 + a, minlength=2500)
    table_c = np.bincount(codes * 50 + c, minlength=2500)
    used = (table_a + table_c) > 20
    stat = ((table_a - table_c)[used] ** 2 / (table_a + table_c)[used]).sum()
    assert stat < used.sum() + 6 * np.sqrt(2 * used.sum())  # chi-square of two samples, about its df


def test_large_dense_matrices_use_it():
    s = MAX_ALIAS + 1
    m = PramMatrix(_random_matrix(s, 9, zeros=0.9))
    sampler = sampler_for(m)
    assert isinstance(sampler, CumulativeSampler)
    codes = np.random.default_rng(1).integers(0, s, 200_000)
    out = np.empty_like(codes)
    sampler.draw(codes, np.random.default_rng(2).bit_generator.random_raw(codes.size), out)
    assert (m.matrix[codes, out] > 0).all()  # never a zero entry
