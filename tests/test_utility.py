"""Utility measures (pramkit.utility).

Checked against: exact enumeration of every released outcome (L2 loss); the
Monte Carlo mean squared error of the estimator over independent keys; SciPy
(KL divergence); the subset definition of total variation; dense Kronecker
covariances and Monte Carlo sampling (variance inflation).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import entropy

from pramkit import PramMatrix, SecretKey, perturb_codes
from pramkit.design.classic import randomized_response
from pramkit.errors import MatrixError, OutputExistsError, PramkitError
from pramkit.estimate import moment_estimate
from pramkit.information import mutual_information
from pramkit.utility import (
    distances,
    hellinger,
    kl_divergence,
    l2_loss,
    plot_privacy_utility,
    privacy_utility_curve,
    total_variation,
    variance_inflation,
)


def generic(s: int, seed: int) -> PramMatrix:
    rng = np.random.default_rng(seed)
    return PramMatrix(0.6 * np.eye(s) + 0.4 * rng.dirichlet(np.ones(s), size=s))


def test_l2_loss_exact_enumeration():
    """E sum_c (mu_hat_c - mu_c)^2 over every released outcome of a 4-record file
    crossing a perturbed 3-category variable with an unperturbed 2-category one."""
    m = generic(3, 1)
    cells = [(0, 0), (0, 1), (2, 1), (1, 0)]  # (x, y)
    n = len(cells)
    original = np.zeros((3, 2))
    for x, y in cells:
        original[x, y] += 1
    expected = 0.0
    for z in itertools.product(range(3), repeat=n):
        prob = np.prod([m.matrix[x, j] for (x, _), j in zip(cells, z)])
        u = np.zeros((3, 2))
        for (_, y), j in zip(cells, z):
            u[j, y] += 1
        mu_hat = moment_estimate(u, [m, None]).counts / n
        expected += prob * np.sum((mu_hat - original / n) ** 2)
    assert l2_loss(original, [m, None]) == pytest.approx(expected, rel=1e-10)
    # the unperturbed axis does not change the loss (Cator et al.: l2 depends on xi only)
    assert l2_loss(original.sum(axis=1), m) == pytest.approx(expected, rel=1e-10)


def test_l2_loss_equals_sum_of_pram_variances():
    """Two derivations: Cator's closed form and the PRAM-only covariance of the estimator."""
    mats = [generic(3, 2), generic(4, 3)]
    original = np.random.default_rng(0).integers(0, 40, size=(3, 4)).astype(float)
    n = original.sum()
    expected_released = mats[0].matrix.T @ original @ mats[1].matrix
    est = moment_estimate(expected_released, mats, variance="pram")
    # at u = E[U], t = the original counts and the plug-in is the exact variance
    assert est.counts == pytest.approx(original)
    assert l2_loss(original, mats) == pytest.approx(est.covariance.cell_variances(clip=False).sum() / n**2, rel=1e-10)


@pytest.mark.slow
def test_l2_loss_monte_carlo():
    rng = np.random.default_rng(8)
    x = rng.choice(5, 2000, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    truth = np.bincount(x, minlength=5) / x.size
    m = randomized_response(list(range(5)), 1.0)
    reps = 1000
    sq = np.array([
        np.sum((moment_estimate(np.bincount(perturb_codes(x, m, key=SecretKey(r.to_bytes(32, "little"), "mc"),
                                                          variable="x"), minlength=5), [m]).proportions - truth) ** 2)
        for r in range(reps)
    ])
    assert abs(sq.mean() - l2_loss(np.bincount(x, minlength=5), m)) < 4 * sq.std(ddof=1) / np.sqrt(reps)


def test_l2_loss_identity_is_zero_and_singular_is_an_error():
    assert l2_loss(np.array([5.0, 3.0, 2.0]), PramMatrix.identity([0, 1, 2])) == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(PramkitError, match="singular"):
        l2_loss(np.array([5.0, 3.0]), PramMatrix([[0.5, 0.5], [0.5, 0.5]]))


def test_distances_against_definitions():
    rng = np.random.default_rng(4)
    p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    assert kl_divergence(p, q) == pytest.approx(entropy(p, q))
    # total variation = the largest difference of probabilities over all events
    events = itertools.chain.from_iterable(itertools.combinations(range(5), r) for r in range(6))
    assert total_variation(p, q) == pytest.approx(max(abs(p[list(a)].sum() - q[list(a)].sum()) for a in events))
    assert hellinger(p, q) == pytest.approx(np.linalg.norm(np.sqrt(p) - np.sqrt(q)) / np.sqrt(2))
    assert kl_divergence(10 * p, 3 * q) == pytest.approx(entropy(p, q))  # counts are normalised
    d = distances(p, p)
    assert d.kl_nats == pytest.approx(0, abs=1e-15) and d.hellinger == pytest.approx(0, abs=1e-7)
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == np.inf
    with pytest.raises(PramkitError, match="negative"):
        hellinger([0.5, -0.1, 0.6], p[:3])
    with pytest.raises(PramkitError, match="shapes"):
        total_variation(p, p[:4])


def test_variance_inflation_dense():
    mats = [generic(2, 5), None, generic(3, 6)]
    p = np.random.default_rng(1).dirichlet(np.ones(12)).reshape(2, 2, 3)
    vi = variance_inflation(p, mats)
    big = np.kron(np.kron(mats[0].matrix, np.eye(2)), mats[2].matrix)
    a = np.linalg.inv(big.T)
    lam = big.T @ p.ravel()
    pram = np.diag(a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T)
    none = p.ravel() * (1 - p.ravel())
    assert vi.per_cell.ravel() == pytest.approx(pram / none)
    assert vi.overall == pytest.approx(pram.sum() / none.sum())
    assert np.all(vi.per_cell > 1)
    ident = variance_inflation(p, [None, None, None])
    assert ident.per_cell == pytest.approx(np.ones((2, 2, 3))) and ident.overall == pytest.approx(1.0)
    with pytest.raises(PramkitError, match="all its mass"):
        variance_inflation(np.array([0.0, 1.0]), randomized_response([0, 1], 1.0))


@pytest.mark.slow
def test_variance_inflation_monte_carlo():
    """Variance of the moment estimate over fresh samples + perturbations, relative to the
    variance of the plain sample proportions, against the formula."""
    p = np.array([0.6, 0.3, 0.1])
    m = randomized_response([0, 1, 2], 1.5)
    n, reps = 500, 2000
    with_pram, without = [], []
    for r in range(reps):
        x = np.random.default_rng(r).choice(3, n, p=p)
        without.append(np.bincount(x, minlength=3) / n)
        z = perturb_codes(x, m, key=SecretKey(r.to_bytes(32, "little"), "mc"), variable="x")
        with_pram.append(moment_estimate(np.bincount(z, minlength=3), [m]).proportions)
    ratio = np.var(with_pram, axis=0) / np.var(without, axis=0)
    # relative standard error of a variance ratio from R draws is about sqrt(2/R) each: 0.045
    assert ratio == pytest.approx(variance_inflation(p, m).per_cell, rel=0.2)


def _dense_utility(p: np.ndarray, m: np.ndarray, n: int) -> tuple[float, float, float]:
    """I(X; Z), Cator's l2 and the overall variance inflation straight from their definitions."""
    joint = p[:, None] * m
    r = p @ m
    information = float(np.sum(joint[joint > 0] * np.log((m / r[None, :])[joint > 0])))
    w = np.linalg.inv(m)
    loss = float(np.sum(n * p * (m @ (w * w).sum(axis=1)))) / n**2 - 1.0 / n
    a = np.linalg.inv(m.T)
    lam = m.T @ p
    pram = np.diag(a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T)
    return information, loss, float(pram.sum() / (p * (1 - p)).sum())


@pytest.mark.parametrize("size", [2, 5, 300])
def test_privacy_utility_curve_closed_form_against_definitions(size):
    """Randomized response's points (closed form, O(S)) agree with the definitions on its dense matrix,
    and with the curve of the same matrices stored densely (one SVD and one inverse a point)."""
    rng = np.random.default_rng(size)
    p = rng.dirichlet(np.ones(size))
    if size > 2:
        p[0] = 0.0  # a category absent from the file
        p /= p.sum()
    eps = np.array([0.05, 0.3, 1.0, 3.0, 10.0, 30.0])
    curve = privacy_utility_curve(p, eps, n=5000)
    dense = privacy_utility_curve(p, eps, n=5000, design=lambda e: PramMatrix(randomized_response(range(size), e).matrix))
    for i, e in enumerate(eps):
        information, loss, inflation = _dense_utility(p, randomized_response(range(size), e).matrix, 5000)
        for got in (curve, dense):
            assert got.mutual_information_nats[i] == pytest.approx(information, rel=1e-9, abs=1e-15)
            assert got.l2_loss[i] == pytest.approx(loss, rel=1e-9)
            assert got.variance_inflation[i] == pytest.approx(inflation, rel=1e-9)
    assert curve.matrix_epsilon == pytest.approx(dense.matrix_epsilon, rel=1e-12)
    # a symmetric form (8) matrix that is singular fails as its dense copy does
    uniform = PramMatrix.form8(np.full(size, 1 / size), np.full(size, 1 / size))
    for design in (uniform, PramMatrix(uniform.matrix)):
        with pytest.raises(PramkitError, match="singular"):
            privacy_utility_curve(p, [1.0], n=10, design=lambda _, d=design: d)


def test_privacy_utility_curve(tmp_path):
    p = np.array([0.5, 0.3, 0.15, 0.05])
    eps = np.linspace(0.25, 5, 12)
    curve = privacy_utility_curve(p, eps, n=1000, chosen=1.0)
    assert curve.matrix_epsilon == pytest.approx(eps)
    assert np.all(np.diff(curve.mutual_information_nats) > 0)
    assert np.all(np.diff(curve.l2_loss) < 0) and np.all(np.diff(curve.variance_inflation) < 0)
    assert curve.chosen_values["mutual_information_nats"] == pytest.approx(
        mutual_information(p, randomized_response(range(4), 1.0).matrix))
    # any design callable; here a one-parameter keep probability
    custom = privacy_utility_curve(p, eps, n=1000, design=lambda e: PramMatrix.from_diagonal(
        np.full(4, np.exp(e) / (np.exp(e) + 3))))
    assert custom.mutual_information_nats == pytest.approx(curve.mutual_information_nats)
    png = plot_privacy_utility(curve, tmp_path / "curve.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(OutputExistsError):
        plot_privacy_utility(curve, png)
    with pytest.raises(PramkitError, match="epsilons"):
        privacy_utility_curve(p, [0.0, 1.0], n=10)
    # a matrix that never releases the last category is singular, whatever the file's counts of it
    never = PramMatrix([[0.8, 0.1, 0.1, 0.0], [0.1, 0.8, 0.1, 0.0], [0.1, 0.1, 0.8, 0.0], [0.3, 0.3, 0.4, 0.0]])
    with pytest.raises(MatrixError, match="singular"):
        privacy_utility_curve(p, [1.0], n=1000, design=lambda _: never)
