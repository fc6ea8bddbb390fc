"""Classic designs: mu-ARGUS keep-probability PRAM, Bayes inversion, invariant PRAM (sdcMicro)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from pramkit.design.classic import (
    bayes_inverse,
    invariant_pram,
    keep_probability,
    randomized_response,
    sdcmicro_pram,
)
from pramkit.errors import PramkitError
from pramkit.matrix import PramMatrix


def test_randomized_response_has_exactly_its_epsilon():
    for s, eps in ((2, 0.1), (5, 1.0), (12, 3.0)):
        assert randomized_response(range(s), eps).epsilon == pytest.approx(eps, rel=1e-12)
    with pytest.raises(PramkitError):
        randomized_response(range(3), 0)


def test_keep_probability_without_and_with_bandwidth():
    m = keep_probability("abcd", 0.7).matrix
    assert np.allclose(m, PramMatrix.from_diagonal([0.7] * 4).matrix)
    s, b, q = 7, 2, np.linspace(0.5, 0.9, 7)
    m = keep_probability(range(s), q, bandwidth=b).matrix
    for k in range(s):
        near = [j for j in range(s) if 1 <= abs(j - k) <= b]
        for j in range(s):
            want = q[k] if j == k else ((1 - q[k]) / len(near) if j in near else 0.0)
            assert m[k, j] == pytest.approx(want)
    assert keep_probability(range(4), 0.5, bandwidth=10).matrix == pytest.approx(
        keep_probability(range(4), 0.5).matrix)
    for bad in (dict(keep=1.2), dict(keep=[0.5, 0.5]), dict(keep=0.5, bandwidth=0), dict(keep=0.5, bandwidth=1.5)):
        with pytest.raises(PramkitError):
            keep_probability(range(4), **bad)


def exact_invariant(p: list[Fraction], m: list[list[Fraction]]) -> list[list[Fraction]]:
    """R = P Q in exact arithmetic, Q[j][k] = P(X = k | Z = j) from the joint table."""
    s = len(p)
    joint = [[p[k] * m[k][j] for j in range(s)] for k in range(s)]
    col = [sum(joint[k][j] for k in range(s)) for j in range(s)]
    q = [[joint[k][j] / col[j] for k in range(s)] for j in range(s)]
    return [[sum(m[i][j] * q[j][k] for j in range(s)) for k in range(s)] for i in range(s)]


def test_invariant_pram_is_exactly_invariant_in_rational_arithmetic():
    p = [Fraction(50), Fraction(3), Fraction(20), Fraction(7)]
    p = [x / sum(p) for x in p]
    m = [[Fraction(7, 10), Fraction(1, 10), Fraction(1, 10), Fraction(1, 10)],
         [Fraction(1, 5), Fraction(3, 5), Fraction(1, 5), Fraction(0)],
         [Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)],
         [Fraction(1, 3), Fraction(1, 3), Fraction(0), Fraction(1, 3)]]
    r = exact_invariant(p, m)
    assert [sum(p[i] * r[i][k] for i in range(4)) for k in range(4)] == p  # p R = p, exactly
    got = invariant_pram([float(x) for x in p], PramMatrix([[float(x) for x in row] for row in m]))
    assert got.matrix == pytest.approx(np.array([[float(x) for x in row] for row in r]), abs=1e-14)
    pf = np.array([float(x) for x in p])
    assert np.abs(pf @ got.matrix - pf).max() < 1e-15
    for alpha in (0.0, 0.3, 1.0):
        mixed = invariant_pram(pf, PramMatrix([[float(x) for x in row] for row in m]), alpha=alpha).matrix
        assert mixed == pytest.approx(alpha * got.matrix + (1 - alpha) * np.eye(4), abs=1e-14)
        assert np.abs(pf @ mixed - pf).max() < 1e-15


def test_bayes_inverse_matches_a_simulation():
    rng = np.random.default_rng(4)
    p = np.array([0.6, 0.25, 0.1, 0.05])
    m = PramMatrix(rng.dirichlet(np.ones(4), size=4))
    q = bayes_inverse(p, m).matrix
    n = 400_000
    x = rng.choice(4, size=n, p=p)
    z = (rng.random(n)[:, None] > np.cumsum(m.matrix, axis=1)[x]).sum(axis=1)  # inverse-CDF draw
    for j in range(4):
        xs = x[z == j]
        freq = np.bincount(xs, minlength=4) / xs.size
        assert np.all(np.abs(freq - q[j]) <= 4.5 * np.sqrt(q[j] * (1 - q[j]) / xs.size) + 1e-12)


def test_bayes_inverse_of_an_unreleased_category():
    q = bayes_inverse([0.5, 0.5, 0.0], PramMatrix.identity("abc")).matrix
    assert q[2] == pytest.approx([0, 0, 1])


def test_sdcmicro_pram_diagonal_seed_and_invariance():
    p = np.array([400, 250, 200, 100, 50], float)
    a = sdcmicro_pram("abcde", p, pd=0.7, alpha=0.5, seed=3)
    b = sdcmicro_pram("abcde", p, pd=0.7, alpha=0.5, seed=3)
    assert a == b
    drawn = np.array(a.provenance.parameters["base_diagonal"])
    assert np.all((drawn >= 0.7) & (drawn <= 1))
    base = PramMatrix.from_diagonal(drawn)
    assert a.matrix == pytest.approx(invariant_pram(p, base, alpha=0.5).matrix, abs=1e-15)
    pn = p / p.sum()
    assert np.abs(pn @ a.matrix - pn).max() < 1e-15
    fixed = sdcmicro_pram("abcde", p, pd=0.7, alpha=1.0, diagonal="fixed")
    assert fixed.provenance.parameters["base_diagonal"] == [0.7] * 5
    with pytest.raises(PramkitError):
        sdcmicro_pram("abcde", p, pd=0.7, diagonal="normal")
    with pytest.raises(PramkitError):
        sdcmicro_pram("abcde", p[:3])


def test_pd_does_not_bound_the_final_diagonal():
    # A rare category: P keeps it with 0.8, yet R = P Q keeps it with far less.
    p = [Fraction(98, 100), Fraction(1, 100), Fraction(1, 100)]
    off = Fraction(1, 10)
    m = [[Fraction(4, 5) if i == j else off for j in range(3)] for i in range(3)]
    exact = exact_invariant(p, m)
    got = sdcmicro_pram("abc", [float(x) for x in p], pd=0.8, alpha=1.0, diagonal="fixed")
    assert got.diagonal == pytest.approx([float(exact[i][i]) for i in range(3)], rel=1e-12)
    assert got.diagonal[1] < 0.1 < 0.8
    half = sdcmicro_pram("abc", [float(x) for x in p], pd=0.8, alpha=0.5, diagonal="fixed")
    assert half.diagonal[1] == pytest.approx(0.5 * float(exact[1][1]) + 0.5)
    assert half.diagonal[1] < 0.8
    assert math.isfinite(got.epsilon)


def test_sdcmicro_defaults_on_real_data_are_invariant_but_not_floored_by_pd(sdc_data):
    import pandas as pd

    counts = pd.read_csv(sdc_data / "testdata.csv")["roof"].value_counts().sort_index()
    p = counts.to_numpy(float) / counts.sum()
    m = sdcmicro_pram(list(counts.index), counts.to_numpy(), pd=0.8, alpha=0.5, diagonal="fixed")
    assert np.abs(p @ m.matrix - p).max() < 1e-12
    rare = int(np.argmin(p))
    assert m.diagonal[rare] < 0.8  # roof = 9 (16 of 4580 records) is kept far less often than pd
