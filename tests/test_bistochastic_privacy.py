"""beta-bistochastic privacy (Ruiz and Domingo-Ferrer, sec. 3): entropy rate, Definitions 1-3,
Theorem 2, sides of the die.  Checked against hand loops, closed forms and identities."""

from __future__ import annotations

import math
from functools import reduce

import numpy as np
import pytest

from pramkit.design.bistochastic.families import k_anonymity, tridiagonal, with_floor
from pramkit.design.classic import keep_probability, randomized_response
from pramkit.errors import PramkitError
from pramkit.privacy.bistochastic import (
    NotBistochasticError,
    bistochastic_privacy,
    conservative_privacy,
    die_sides,
    entropy_rate,
    is_bistochastic,
    joint_privacy,
    majorizes,
    released_distribution,
    require_bistochastic,
)


def loop_rate(m: np.ndarray) -> float:
    """Equation (4) by a double loop, 0 log 0 = 0."""
    r = m.shape[0]
    return -sum(m[u, v] * math.log2(m[u, v]) for u in range(r) for v in range(r) if m[u, v] > 0) / r


def random_bistochastic(rng: np.random.Generator, r: int, terms: int) -> np.ndarray:
    """A convex combination of random permutation matrices."""
    m = np.zeros((r, r))
    for w in rng.dirichlet(np.ones(terms)):
        m[np.arange(r), rng.permutation(r)] += w
    return m


def test_entropy_rate_matches_the_loop_and_the_rr_closed_form():
    rng = np.random.default_rng(7)
    for r in (2, 3, 7, 12):
        m = random_bistochastic(rng, r, 2 * r)
        assert entropy_rate(m) == pytest.approx(loop_rate(m), rel=1e-12, abs=1e-14)
    # Randomized response: every row is (q, (1-q)/(r-1), ...): H = h(q) + (1-q) log2(r-1).
    r, eps = 12, 3.0
    q = math.exp(eps) / (r - 1 + math.exp(eps))
    closed = -q * math.log2(q) - (1 - q) * math.log2((1 - q) / (r - 1))
    assert entropy_rate(randomized_response(range(r), eps)) == pytest.approx(closed, rel=1e-12)


def test_extremes_perfect_secrecy_identity_and_permutations():
    r = 12
    star = bistochastic_privacy(np.full((r, r), 1 / r))
    assert star.beta == pytest.approx(1.0, abs=1e-12)
    assert star.max_entropy_rate_bits == pytest.approx(math.log2(12))
    assert star.epsilon == 0.0 and star.strictly_positive
    assert bistochastic_privacy(np.eye(r)).beta == 0.0
    perm = np.eye(r)[np.random.default_rng(1).permutation(r)]
    assert bistochastic_privacy(perm).beta == 0.0


def test_k_anonymity_blocks_inject_log2_of_the_class_size():
    # Equation (3): each row is uniform on its class, so H(P) = mean log2 n_l.
    for r, k in ((12, 2), (12, 3), (12, 6), (10, 3)):
        m = k_anonymity(range(r), k)
        sizes = [len(c) for c in m.provenance.parameters["classes"]]
        expected = sum(n * math.log2(n) for n in sizes) / r
        got = bistochastic_privacy(m)
        assert got.entropy_rate_bits == pytest.approx(expected, rel=1e-12)
        assert got.beta == pytest.approx(expected / math.log2(r), rel=1e-12)
        assert not got.strictly_positive and got.epsilon == math.inf


def test_zeros_super_doubly_stochastic_limit_and_strict_reading():
    m = tridiagonal(range(12), 0.3)
    exact = entropy_rate(m)
    gaps = []
    for gamma in (1e-4, 1e-6, 1e-9):
        sup = np.where(m.matrix > 0, m.matrix, gamma)  # zeros -> gamma, rest unadjusted (section 4)
        assert not is_bistochastic(sup)  # rows sum above one
        gaps.append(entropy_rate(sup, strict=False) - exact)
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[2] < 1e-6
    # Strictly: epsilon infinite while a column has a zero; the floored variant is finite.
    assert bistochastic_privacy(m).epsilon == math.inf
    floored = bistochastic_privacy(with_floor(m, 1e-3))
    assert floored.strictly_positive and math.isfinite(floored.epsilon)
    assert floored.beta > bistochastic_privacy(m).beta


def test_non_bistochastic_is_refused_with_a_message():
    m = keep_probability(range(6), 0.7, bandwidth=1)  # edge columns do not sum to 1
    assert m.matrix.sum(axis=1) == pytest.approx(np.ones(6))
    assert not is_bistochastic(m)
    with pytest.raises(NotBistochasticError, match="column"):
        bistochastic_privacy(m)
    with pytest.raises(PramkitError):
        require_bistochastic(np.ones((2, 3)) / 3)
    with pytest.raises(PramkitError, match="two categories"):
        bistochastic_privacy(np.eye(1))


def test_definition_3_of_a_kronecker_product_equals_definition_2():
    rng = np.random.default_rng(3)
    mats = [random_bistochastic(rng, n, 4) for n in (2, 3, 4)]
    joint = reduce(np.kron, mats)
    cons = conservative_privacy(mats)
    jp = joint_privacy(joint, sizes=(2, 3, 4))
    assert jp.entropy_rate_bits == pytest.approx(loop_rate(joint), rel=1e-12)
    assert jp.entropy_rate_bits == pytest.approx(sum(loop_rate(m) for m in mats), rel=1e-12)
    assert jp.beta == pytest.approx(cons.beta, rel=1e-12)
    assert cons.max_entropy_rate_bits == pytest.approx(math.log2(24))
    assert cons.definition == "conservative" and jp.definition == "joint"
    with pytest.raises(PramkitError, match="product"):
        joint_privacy(joint, sizes=(2, 3, 5))


def test_conservative_epsilon_composes_by_sum():
    a, b = randomized_response(range(3), 1.0), randomized_response(range(5), 0.5)
    assert conservative_privacy([a, b]).epsilon == pytest.approx(1.5)
    assert conservative_privacy([a, k_anonymity(range(4), 2)]).epsilon == math.inf


def majorizes_by_thresholds(x: np.ndarray, y: np.ndarray) -> bool:
    """x > y iff sum (x_i - t)+ >= sum (y_i - t)+ for every t (equal totals); t over all entries suffices."""
    return all(np.maximum(x - t, 0).sum() >= np.maximum(y - t, 0).sum() - 1e-12 for t in np.concatenate([x, y]))


def test_majorizes_agrees_with_the_threshold_characterisation():
    rng = np.random.default_rng(11)
    agree = 0
    for _ in range(300):
        n = int(rng.integers(2, 7))
        x, y = rng.dirichlet(np.ones(n) * 0.5), rng.dirichlet(np.ones(n) * 0.5)
        assert majorizes(x, y) == majorizes_by_thresholds(x, y)
        agree += majorizes(x, y)
    assert 0 < agree < 300  # both outcomes were exercised


def test_theorem_2_bistochastic_releases_are_majorized_and_more_uncertain():
    rng = np.random.default_rng(5)
    for _ in range(100):
        r = int(rng.integers(2, 9))
        p = rng.dirichlet(np.ones(r) * 0.3)
        m = random_bistochastic(rng, r, 3)
        rel = released_distribution(p, m)
        assert rel.bistochastic and rel.majorized
        assert rel.released == pytest.approx([sum(p[u] * m[u, v] for u in range(r)) for v in range(r)])
        assert rel.entropy_released_bits >= rel.entropy_original_bits - 1e-12
        assert rel.die_sides_released >= rel.die_sides_original - 1e-9
    # A row-stochastic matrix that is not bistochastic can concentrate the distribution.
    collapse = np.zeros((4, 4))
    collapse[:, 0] = 1
    rel = released_distribution(np.full(4, 0.25), collapse)
    assert not rel.bistochastic and not rel.majorized
    assert rel.die_sides_released == pytest.approx(1.0)


def test_die_sides():
    assert die_sides(np.full(12, 1 / 12)) == pytest.approx(12)
    assert die_sides([0.5, 0.25, 0.25]) == pytest.approx(2 ** 1.5)
    assert die_sides([5, 0, 0]) == pytest.approx(1.0)
    with pytest.raises(PramkitError):
        die_sides([0, 0])
