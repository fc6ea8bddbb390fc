"""Birkhoff-von Neumann decomposition (Theorem 1, equation (1)) and the permutation sampler."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pramkit.design.bistochastic.birkhoff import birkhoff_decomposition, perturb_by_permutation
from pramkit.design.bistochastic.families import k_anonymity, tridiagonal
from pramkit.design.classic import keep_probability, randomized_response
from pramkit.errors import DataError, PramkitError
from pramkit.kernel.rng import SecretKey


def sinkhorn(a: np.ndarray, sweeps: int = 5000) -> np.ndarray:
    """A dense bistochastic matrix by alternate row and column scaling."""
    m = a.copy()
    for _ in range(sweeps):
        m /= m.sum(axis=1, keepdims=True)
        m /= m.sum(axis=0, keepdims=True)
    return m


def check(d, m: np.ndarray) -> None:
    r = m.shape[0]
    rebuilt = np.zeros((r, r))
    for w, perm in zip(d.weights, d.permutations):
        assert sorted(perm) == list(range(r))  # a permutation
        rebuilt[np.arange(r), perm] += w
    assert np.abs(rebuilt - m).max() < 1e-9
    assert d.max_abs_error < 1e-9
    assert np.all(d.weights > 0) and d.weights.sum() == pytest.approx(1.0, abs=1e-9)
    assert d.count <= r * r - 2 * r + 2 == d.bound


@pytest.mark.parametrize("r", [2, 3, 5, 8, 12, 20])
def test_reconstruction_and_count_bound_on_dense_matrices(r):
    rng = np.random.default_rng(r)
    m = sinkhorn(rng.random((r, r)) + 0.01)
    check(birkhoff_decomposition(m), m)


def test_sparse_families_and_random_permutation_mixtures():
    rng = np.random.default_rng(2)
    for m in (tridiagonal(range(12), 0.3).matrix, k_anonymity(range(12), 5).matrix,
              randomized_response(range(9), 1.0).matrix):
        check(birkhoff_decomposition(m), m)
    for _ in range(20):
        r = int(rng.integers(2, 10))
        m = np.zeros((r, r))
        for w in rng.dirichlet(np.ones(r * r)):
            m[np.arange(r), rng.permutation(r)] += w
        check(birkhoff_decomposition(m), m)


def test_paper_examples_of_section_2_2():
    star = birkhoff_decomposition(np.full((3, 3), 1 / 3))
    assert star.count == 3 and star.weights == pytest.approx([1 / 3] * 3)
    d = birkhoff_decomposition(randomized_response(range(3), 2.0))
    e = math.exp(2)
    assert sorted(d.weights) == pytest.approx(sorted([e / (2 + e), 1 / (2 + e), 1 / (2 + e)]))
    ident = [w for w, perm in zip(d.weights, d.permutations) if list(perm) == [0, 1, 2]]
    assert ident == pytest.approx([e / (2 + e)])


def test_non_bistochastic_is_refused():
    with pytest.raises(PramkitError, match="column"):
        birkhoff_decomposition(keep_probability(range(5), 0.6, bandwidth=1))


def test_sampler_marginal_transition_is_p_by_monte_carlo():
    m = tridiagonal(range(5), [0.2, 0.35, 0.1, 0.4]).matrix
    d = birkhoff_decomposition(m)
    key = SecretKey(bytes(range(32)), "test")
    n = 4000
    counts = np.zeros_like(m)
    codes = np.arange(5)
    for i in range(n):
        out = perturb_by_permutation(codes, d, key=key, variable=f"v{i}").codes
        counts[codes, out] += 1
    freq = counts / n
    sd = np.sqrt(m * (1 - m) / n)
    assert np.all(np.abs(freq - m) <= 4.5 * sd + 1e-12)


def test_one_permutation_for_every_record_unlike_independent_pram(key):
    d = birkhoff_decomposition(randomized_response(range(4), 0.5))
    codes = np.array([2] * 500 + [0] * 300 + [1] * 200 + [-1] * 7)
    draw = perturb_by_permutation(codes, d, key=key, variable="x")
    assert len(set(draw.codes[:500])) == 1  # equal originals -> equal releases
    assert np.all(draw.codes[-7:] == -1)
    released_counts = sorted(np.bincount(draw.codes[draw.codes >= 0], minlength=4))
    assert released_counts == sorted(np.bincount(codes[codes >= 0], minlength=4))  # counts permuted
    assert np.array_equal(draw.codes[codes >= 0], draw.permutation[codes[codes >= 0]])
    assert draw.weight == d.weights[draw.index]
    again = perturb_by_permutation(codes[:10], d, key=key, variable="x")  # a chunk: same permutation
    assert again.index == draw.index
    with pytest.raises(DataError):
        perturb_by_permutation(np.array([0, 4]), d, key=key, variable="x")
    with pytest.raises(DataError):
        perturb_by_permutation(np.array([0.5]), d, key=key, variable="x")
