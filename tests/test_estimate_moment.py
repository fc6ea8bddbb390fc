"""The moment estimator and its covariance (pramkit.estimate.moment, .covariance, .axes).

Checked against: a hand computation for S = 2; exact enumeration of every
released outcome of tiny files; dense Kronecker products (np.kron); the
Monte Carlo mean over independent perturbations; the coverage of the
intervals.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binom, norm

from pramkit import PramMatrix, SecretKey, perturb_codes
from pramkit.design.classic import randomized_response
from pramkit.errors import DataError, PramkitError
from pramkit.estimate import EstimationWarning, moment_estimate
from pramkit.estimate.axes import contract


def random_matrix(s: int, rng: np.random.Generator, keep: float = 0.6) -> PramMatrix:
    """A generic (asymmetric, invertible) PRAM matrix."""
    m = rng.dirichlet(np.ones(s), size=s) * (1 - keep) + keep * np.eye(s)
    return PramMatrix(m)


def dense(mats, shape) -> np.ndarray:
    """The K x K transition matrix of the table, built with np.kron."""
    out = np.ones((1, 1))
    for m, s in zip(mats, shape):
        out = np.kron(out, np.eye(s) if m is None else m.matrix)
    return out


def test_two_categories_by_hand():
    q, n, a = 0.8, 1000, 380.0
    m = PramMatrix([[q, 1 - q], [1 - q, q]])
    est = moment_estimate(np.array([a, n - a]), [m])
    # u_1 = q t_1 + (1 - q)(n - t_1)  =>  t_1 = (u_1 - (1 - q) n) / (2q - 1)
    t1 = (a - (1 - q) * n) / (2 * q - 1)
    assert est.counts == pytest.approx([t1, n - t1], rel=1e-12)
    lam = a / n
    se = np.sqrt(n * lam * (1 - lam)) / (2 * q - 1)
    assert est.se == pytest.approx([se, se], rel=1e-12)
    assert est.proportions == pytest.approx([t1 / n, 1 - t1 / n])
    assert est.method == "moment" and est.note == ""


def _outcomes(original_cells, mats, shape):
    """Every released file of a fixed original file: (released table, probability)."""
    big = dense(mats, shape)
    k = big.shape[0]
    for z in itertools.product(range(k), repeat=len(original_cells)):
        prob = np.prod([big[x, j] for x, j in zip(original_cells, z)])
        yield np.bincount(z, minlength=k).reshape(shape), prob


CASES = {
    "one variable": ([3], [0, 0, 1, 2]),
    "two perturbed": ([2, 3], [1, 5, 0]),
    "perturbed x unperturbed": ([3, 2], [0, 3, 5]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_exact_enumeration_fixed_file(case):
    """PRAM only: E[t] = original counts exactly, and the "pram" variance
    estimate is unbiased for the exact variance (every outcome enumerated)."""
    shape, cells = CASES[case]
    rng = np.random.default_rng(7)
    mats = [random_matrix(s, rng) for s in shape]
    if case == "perturbed x unperturbed":
        mats[1] = None
    truth = np.bincount(cells, minlength=int(np.prod(shape))).reshape(shape).astype(float)
    mean = np.zeros(shape)
    second = np.zeros(shape)
    mean_var_hat = np.zeros(shape)
    total = 0.0
    for u, prob in _outcomes(cells, mats, shape):
        est = moment_estimate(u, mats, variance="pram")
        mean += prob * est.counts
        second += prob * est.counts**2
        mean_var_hat += prob * est.covariance.cell_variances(clip=False)
        total += prob
    assert total == pytest.approx(1.0, abs=1e-12)
    assert mean == pytest.approx(truth, abs=1e-10)
    exact_var = second - mean**2
    assert mean_var_hat == pytest.approx(exact_var, abs=1e-9)
    # and the closed form A [sum_i diag(M_i) - M_i^T M_i] A^T, densely
    big = dense(mats, shape)
    a = np.linalg.inv(big.T)
    inner = sum(np.diag(big[x]) - np.outer(big[x], big[x]) for x in cells)
    assert np.diag(a @ inner @ a.T).reshape(shape) == pytest.approx(exact_var, abs=1e-9)


@pytest.mark.parametrize("case", list(CASES))
def test_exact_enumeration_superpopulation(case):
    """Records drawn from p: Var(t) = n (A diag(lam) A^T - p p^T) exactly, and the
    plug-in multinomial estimate has expectation (n - 1)/n times it."""
    shape, cells = CASES[case]
    n = len(cells)
    rng = np.random.default_rng(11)
    mats = [random_matrix(s, rng) for s in shape]
    if case == "perturbed x unperturbed":
        mats[1] = None
    p = rng.dirichlet(np.ones(int(np.prod(shape))))
    lam = dense(mats, shape).T @ p
    mean = np.zeros(shape)
    second = np.zeros(shape)
    mean_var_hat = np.zeros(shape)
    for z in itertools.product(range(lam.size), repeat=n):
        prob = np.prod(lam[list(z)])
        u = np.bincount(z, minlength=lam.size).reshape(shape)
        est = moment_estimate(u, mats)
        mean += prob * est.counts
        second += prob * est.counts**2
        mean_var_hat += prob * est.covariance.cell_variances(clip=False)
    exact_var = second - mean**2
    assert mean == pytest.approx(n * p.reshape(shape), abs=1e-10)
    a = np.linalg.inv(dense(mats, shape).T)
    closed = n * np.diag(a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T).reshape(shape)
    assert closed == pytest.approx(exact_var, abs=1e-9)
    assert mean_var_hat == pytest.approx((n - 1) / n * exact_var, abs=1e-9)


@pytest.mark.parametrize("kind", ["multinomial", "pram"])
def test_kronecker_matches_dense(kind):
    rng = np.random.default_rng(3)
    shape = (3, 4, 2)
    mats = [random_matrix(3, rng), None, random_matrix(2, rng)]
    u = rng.integers(5, 60, size=shape).astype(float)
    est = moment_estimate(u, mats, variance=kind)
    big = dense(mats, shape)
    a = np.linalg.inv(big.T)
    t = a @ u.ravel()
    assert est.counts.ravel() == pytest.approx(t, rel=1e-10)
    n = u.sum()
    if kind == "multinomial":
        lam = u.ravel() / n
        cov = n * a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T
    else:
        inner = sum(tk * (np.diag(big[k]) - np.outer(big[k], big[k])) for k, tk in enumerate(t))
        cov = a @ inner @ a.T
    assert est.se.ravel() ** 2 == pytest.approx(np.diag(cov), rel=1e-9)
    g = rng.normal(size=shape)
    assert est.covariance.variance(g) == pytest.approx(g.ravel() @ cov @ g.ravel(), rel=1e-9)


@pytest.mark.parametrize("kind", ["multinomial", "pram"])
@pytest.mark.parametrize("group_axes", [(), (2,), (1, 2)])
def test_share_variances_match_dense_delta_method(kind, group_axes):
    """Shares within groups: the factored formula against the dense covariance and a
    numerically differentiated ratio."""
    rng = np.random.default_rng(5)
    shape = (3, 2, 3)
    mats = [random_matrix(3, rng), random_matrix(2, rng), random_matrix(3, rng)]
    if group_axes == (2,):
        mats[2] = None  # an unperturbed grouping variable
    u = rng.integers(20, 80, size=shape).astype(float)
    est = moment_estimate(u, mats, variance=kind)
    r, var = est.covariance.share_variances(group_axes)
    big = dense(mats, shape)
    a = np.linalg.inv(big.T)
    t = est.counts.ravel()
    n = u.sum()
    if kind == "multinomial":
        lam = u.ravel() / n
        cov = n * a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T
    else:
        cov = a @ sum(tk * (np.diag(big[k]) - np.outer(big[k], big[k])) for k, tk in enumerate(t)) @ a.T
    inner = tuple(ax for ax in range(3) if ax not in group_axes)

    def shares(x):
        x = x.reshape(shape)
        return (x / x.sum(axis=inner, keepdims=True)).ravel()

    h = 1e-4
    jac = np.empty((t.size, t.size))
    for j in range(t.size):
        e = np.zeros(t.size)
        e[j] = h
        jac[:, j] = (shares(t + e) - shares(t - e)) / (2 * h)
    assert r.ravel() == pytest.approx(shares(t), rel=1e-12)
    assert var.ravel() == pytest.approx(np.einsum("ij,jk,ik->i", jac, cov, jac), rel=1e-6)


def _perturbed_table(codes, mats, key, shape):
    released = [perturb_codes(c, m, key=key, variable=f"v{i}") for i, (c, m) in enumerate(zip(codes, mats))]
    return np.bincount(np.ravel_multi_index(released, shape), minlength=int(np.prod(shape))).reshape(shape)


@pytest.mark.slow
def test_unbiased_monte_carlo():
    """The mean estimate over R independent perturbations of one file converges to the
    original counts (Bonferroni bound over the K cells, 0.1% family-wise)."""
    rng = np.random.default_rng(2024)
    shape = (2, 5)
    n, reps = 3000, 300
    codes = [rng.choice(2, n, p=[0.45, 0.55]), rng.choice(5, n, p=[0.4, 0.25, 0.2, 0.1, 0.05])]
    truth = np.bincount(np.ravel_multi_index(codes, shape), minlength=10).reshape(shape)
    mats = [randomized_response([0, 1], 1.0), randomized_response(list(range(5)), 1.5)]
    ests = np.array([
        moment_estimate(_perturbed_table(codes, mats, SecretKey(rep.to_bytes(32, "little"), "mc"), shape), mats).counts
        for rep in range(reps)
    ])
    z = norm.ppf(1 - 0.001 / (2 * truth.size))
    sd = ests.std(axis=0, ddof=1)
    assert np.all(np.abs(ests.mean(axis=0) - truth) < z * sd / np.sqrt(reps))
    # the "pram" variance is the right one for a fixed file: compare it with the spread
    pram_se = moment_estimate(_perturbed_table(codes, mats, SecretKey(b"x" * 32, "mc"), shape), mats,
                              variance="pram").se
    assert np.all(np.abs(sd / pram_se - 1) < 0.25)


def _coverage_bounds(reps, cells, level=0.95):
    """Acceptance region for the number of covered (replicate, cell) pairs, per cell,
    at 0.1% family-wise error (each cell's count is Binomial(reps, level))."""
    alpha = 0.001 / cells
    return binom.ppf(alpha / 2, reps, level), binom.isf(alpha / 2, reps, level)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.2, 3.0])
def test_coverage(epsilon):
    """95% intervals, R replicates, each with a fresh key:

    * files drawn afresh from p, multinomial covariance: cover n p (the
      population proportions scaled to n) 95% of the time;
    * one fixed file, PRAM-only covariance: cover the file's own counts 95% of
      the time.

    With little perturbation (epsilon = 3) sampling dominates, and using the
    wrong variance for either target visibly fails.
    """
    p = np.array([0.5, 0.25, 0.15, 0.1])
    n, reps = 1500, 1000
    m = randomized_response(list(range(4)), epsilon)
    fixed = np.random.default_rng(99).choice(4, n, p=p)
    truth = np.bincount(fixed, minlength=4)
    z = norm.ppf(0.975)
    tallies = {name: np.zeros(4) for name in ("population", "file", "population_pram", "file_multinomial")}
    for rep in range(reps):
        key = SecretKey(rep.to_bytes(32, "little"), "mc")
        drawn = np.random.default_rng(rep).choice(4, n, p=p)
        for x, target, right, wrong in ((drawn, n * p, "multinomial", "pram"), (fixed, truth, "pram", "multinomial")):
            u = np.bincount(perturb_codes(x, m, key=key, variable="x"), minlength=4)
            name = "population" if x is drawn else "file"
            for kind, tally in ((right, name), (wrong, f"{name}_{wrong}")):
                est = moment_estimate(u, [m], variance=kind)
                tallies[tally] += np.abs(est.counts - target) <= z * est.se
    lo, hi = _coverage_bounds(reps, 4)
    for name in ("population", "file"):
        assert np.all((tallies[name] >= lo) & (tallies[name] <= hi)), (name, tallies[name] / reps)
    if epsilon == 3.0:
        assert np.all(tallies["population_pram"] < lo)  # too narrow for n p
        assert np.all(tallies["file_multinomial"] > hi)  # conservative for the file's counts


def test_singular_matrix_falls_back_to_mle():
    m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.1, 0.1, 0.8]])
    with pytest.warns(EstimationWarning, match="singular"):
        est = moment_estimate(np.array([40.0, 35.0, 25.0]), [m])
    assert est.method == "mle" and "singular" in est.note
    assert np.all(est.counts >= 0) and est.counts.sum() == pytest.approx(100)
    assert est.covariance is None
    # a and b have identical rows: their counts are not identifiable (no standard error) ...
    assert np.all(np.isnan(est.se[:2])) and est.identifiable.tolist() == [False, False, True]
    # ... but c's count and the total of a and b are: the merged model has released
    # probabilities lam = pi * row_a + (1 - pi) * row_c, whose MLE here puts lam_3 at
    # its observed share (lam_1 = lam_2 always), and whose Fisher information for pi
    # is n sum_j (row_a - row_c)_j^2 / lam_j.
    n, row_a, row_c = 100.0, np.array([0.5, 0.5, 0.0]), np.array([0.1, 0.1, 0.8])
    pi = 1 - 0.25 / 0.8
    lam = pi * row_a + (1 - pi) * row_c
    se = np.sqrt(n / np.sum((row_a - row_c) ** 2 / lam))
    assert est.counts[2] == pytest.approx(n * (1 - pi), rel=1e-6) and est.se[2] == pytest.approx(se, rel=1e-6)
    (group,) = est.identifiability.groups
    assert group.members == ((0, 1),) and group.estimate == pytest.approx(n * pi, rel=1e-6)
    assert group.se == pytest.approx(se, rel=1e-6)


def test_badly_conditioned_matrix_falls_back_to_mle():
    m = randomized_response([0, 1, 2], 1e-11)
    with pytest.warns(EstimationWarning, match="badly conditioned"):
        est = moment_estimate(np.array([40.0, 35.0, 25.0]), [m])
    assert est.method == "mle" and est.condition_number > 1e10
    # threshold is adjustable
    assert moment_estimate(np.array([40.0, 35.0, 25.0]), [m], max_condition=np.inf).method == "moment"


def test_contract_is_kronecker_transpose():
    rng = np.random.default_rng(1)
    b1, b3 = rng.normal(size=(3, 3)), rng.normal(size=(2, 2))
    x = rng.normal(size=(3, 4, 2))
    expected = np.kron(np.kron(b1, np.eye(4)), b3).T @ x.ravel()
    assert contract(x, [b1, None, b3]).ravel() == pytest.approx(expected)


@pytest.mark.parametrize(
    "released, matrices, message",
    [
        (np.array([1.0, 2.0]), [randomized_response([0, 1, 2], 1.0)], "categories"),
        (np.array([1.0, -2.0, 3.0]), [randomized_response([0, 1, 2], 1.0)], "non-negative"),
        (np.zeros(3), [randomized_response([0, 1, 2], 1.0)], "empty"),
        (np.ones((2, 2)), [randomized_response([0, 1], 1.0)], "2 axes"),
        (np.array([5.0, 1.0]), [PramMatrix([[1.0, 0.0], [1.0, 0.0]])], "never releases"),
    ],
)
def test_bad_input_raises_a_clear_error(released, matrices, message):
    with pytest.raises(DataError, match=message):
        moment_estimate(released, matrices)


def test_unknown_variance_kind():
    with pytest.raises(PramkitError, match="variance must be one of"):
        moment_estimate(np.array([1.0, 2.0]), [randomized_response([0, 1], 1.0)], variance="bootstrap")
