"""Log-linear fitting by IPF (risk/loglinear.py) against an independent Newton-Raphson GLM fit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pramkit.errors import PramkitError
from pramkit.risk.loglinear import fit_loglinear, fit_loglinear_misclassified, parse_model, pull, push


def _design(shape, terms):
    """Dummy-coded design matrix (reference category 0) of a hierarchical model, one row per cell."""
    closure = sorted({s for t in terms for r in range(len(t) + 1) for s in itertools.combinations(t, r)})
    cells = list(itertools.product(*[range(n) for n in shape]))
    cols = []
    for s in closure:
        for levels in itertools.product(*[range(1, shape[a]) for a in s]):
            cols.append([float(all(c[a] == l for a, l in zip(s, levels))) for c in cells])
    return np.array(cols).T


def _glm_poisson(f, x):
    """Poisson GLM with log link by Newton-Raphson (IRLS; least-squares steps, so a
    rank-deficient design still gives the unique fitted values), written independently
    of the code under test."""
    beta = np.zeros(x.shape[1])
    beta[0] = np.log(f.mean())
    for _ in range(100):
        mu = np.exp(x @ beta)
        root = np.sqrt(mu)
        step = np.linalg.lstsq(root[:, None] * x, (f - mu) / root, rcond=None)[0]  # minimum-norm step
        beta += step
        if np.abs(step).max() < 1e-12:
            break
    return np.exp(x @ beta)


@pytest.mark.parametrize("model", ["independence", "2way", "a*b + c", [["a", "b", "c"]]])
def test_ipf_matches_glm(model):
    rng = np.random.default_rng(1)
    shape = (3, 4, 2)
    f = rng.poisson(rng.uniform(2, 30, size=shape)).astype(float)
    names = ["a", "b", "c"]
    fit = fit_loglinear(f, names, model=model, tol=1e-12)
    terms = parse_model(model, names)
    mu = _glm_poisson(f.ravel(), _design(shape, terms)).reshape(shape)
    np.testing.assert_allclose(fit.fitted, mu, rtol=1e-8)
    assert fit.converged
    # deviance and df against their definitions
    dev = 2 * np.sum(np.where(f > 0, f * np.log(np.where(f > 0, f, 1) / mu), 0) - (f - mu))
    assert fit.deviance == pytest.approx(dev, rel=1e-7)
    assert fit.df == f.size - _design(shape, terms).shape[1]


def test_empty_cells_and_zero_margins():
    # zeros in the table, including a zero two-way margin: the fitted cells under it are zero
    rng = np.random.default_rng(2)
    f = rng.poisson(3.0, size=(3, 3, 3)).astype(float)
    f[0, 0, :] = 0
    f[1, 2, 1] = 0
    fit = fit_loglinear(f, ["a", "b", "c"], model="2way", tol=1e-11)
    assert np.all(fit.fitted[0, 0, :] == 0)
    np.testing.assert_allclose(fit.fitted.sum(axis=2), f.sum(axis=2), atol=1e-8)
    np.testing.assert_allclose(fit.fitted.sum(axis=0), f.sum(axis=0), atol=1e-8)
    # the score equations on the other margins hold too: compare with the GLM on the non-structural cells
    keep = np.ones(f.shape, dtype=bool)
    keep[0, 0, :] = False
    x = _design(f.shape, parse_model("2way", ["a", "b", "c"]))[keep.ravel()]
    x = x[:, np.abs(x).sum(axis=0) > 0]
    mu = _glm_poisson(f[keep], x)
    np.testing.assert_allclose(fit.fitted[keep], mu, rtol=1e-7)


def test_parse_model():
    names = ["a", "b", "c", "d"]
    assert parse_model("independence", names) == ((0,), (1,), (2,), (3,))
    assert parse_model("a*b + b:c", names) == ((0, 1), (1, 2), (3,))
    assert parse_model("a*b*c + a*b", names) == ((0, 1, 2), (3,))
    assert len(parse_model("2way", names)) == 6
    with pytest.raises(PramkitError, match="not key variables"):
        parse_model("a*z", names)
    with pytest.raises(PramkitError, match="empty term"):
        parse_model("a* + b", names)


def test_push_is_kronecker_product():
    rng = np.random.default_rng(4)
    t = rng.uniform(size=(2, 3, 2))
    m0 = rng.dirichlet(np.ones(2), size=2)
    m2 = rng.dirichlet(np.ones(2), size=2)
    joint = np.kron(np.kron(m0, np.eye(3)), m2)
    np.testing.assert_allclose(push(t, [m0, None, m2]).ravel(), t.ravel() @ joint)
    np.testing.assert_allclose(pull(t, [m0, None, m2]).ravel(), joint @ t.ravel())


def test_em_recovers_model_from_expected_released_counts():
    # Noise-free released counts E f~ = mu M: the MLE of the true-cell model is mu itself.
    rng = np.random.default_rng(5)
    pa, pb, pc = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(2))
    mu = 5000 * pa[:, None, None] * pb[None, :, None] * pc[None, None, :]
    ma = 0.7 * np.eye(3) + 0.1
    mc = np.array([[0.8, 0.2], [0.3, 0.7]])
    released = push(mu, [ma, None, mc])
    fit = fit_loglinear_misclassified(released, ["a", "b", "c"], [ma, None, mc], model="independence", tol=1e-10)
    assert fit.converged
    np.testing.assert_allclose(fit.fitted, mu, rtol=1e-6)
    # identity matrices: the plain fit
    plain = fit_loglinear(released, ["a", "b", "c"], model="2way", tol=1e-10)
    em = fit_loglinear_misclassified(released, ["a", "b", "c"], [np.eye(3), None, None], model="2way", tol=1e-10)
    np.testing.assert_allclose(em.fitted, plain.fitted, rtol=1e-8)


def test_table_errors():
    with pytest.raises(PramkitError, match="empty"):
        fit_loglinear(np.zeros((2, 2)), ["a", "b"])
    with pytest.raises(PramkitError, match="non-negative"):
        fit_loglinear(np.array([[1.0, -1.0], [2.0, 3.0]]), ["a", "b"])


def test_em_matches_direct_maximisation_of_the_misclassified_likelihood():
    # Noisy released counts: the ECM fit against scipy's BFGS on log L(beta) = sum f~ log mu~ - mu~,
    # mu~ = (exp(X beta)) M, with M applied as the explicit Kronecker product.
    from scipy.optimize import minimize

    rng = np.random.default_rng(6)
    shape = (3, 2, 3)
    names = ["a", "b", "c"]
    ma = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
    mc = np.array([[0.9, 0.1, 0.0], [0.1, 0.8, 0.1], [0.0, 0.2, 0.8]])
    truth = rng.uniform(5, 40, size=shape)
    released = rng.poisson(push(truth, [ma, None, mc])).astype(float)
    fit = fit_loglinear_misclassified(released, names, [ma, None, mc], model="a*b + c", tol=1e-11, max_iter=20000)
    x = _design(shape, parse_model("a*b + c", names))
    kron = np.kron(np.kron(ma, np.eye(2)), mc)
    f = released.ravel()

    def negloglik(beta):
        mu_t = np.exp(x @ beta) @ kron
        return -(f * np.log(mu_t) - mu_t).sum()

    def grad(beta):
        mu = np.exp(x @ beta)
        mu_t = mu @ kron
        return -x.T @ (mu * (kron @ (f / mu_t - 1.0)))

    beta0 = np.zeros(x.shape[1])
    beta0[0] = np.log(f.mean())
    best = minimize(negloglik, beta0, jac=grad, method="BFGS", options={"gtol": 1e-10, "maxiter": 10000})
    np.testing.assert_allclose(fit.fitted.ravel(), np.exp(x @ best.x), rtol=1e-5)
