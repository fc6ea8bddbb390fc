"""Log-linear fitting by accelerated IPF (risk/loglinear.py) against an independent Newton-Raphson GLM fit."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from pramkit.errors import PramkitError
from pramkit.risk.identification import identification_risk
from pramkit.risk.loglinear import (
    Watch,
    fit_loglinear,
    fit_loglinear_misclassified,
    geometric_tail,
    parse_model,
    pull,
    push,
)
from pramkit.risk.misclassified import cell_risk


def _design(shape, terms):
    """Dummy-coded design matrix (reference category 0) of a hierarchical model, one row per cell (C order)."""
    closure = sorted({s for t in terms for r in range(len(t) + 1) for s in itertools.combinations(t, r)})
    coords = [c.ravel() for c in np.indices(shape)]
    cols = []
    for s in closure:
        for levels in itertools.product(*[range(1, shape[a]) for a in s]):
            col = np.ones(coords[0].size)
            for a, level in zip(s, levels):
                col = col * (coords[a] == level)
            cols.append(col)
    return np.column_stack(cols)


def _glm_poisson(f, x, offset=None):
    """Poisson GLM with log link, ``log mu = offset + x beta``, by Newton-Raphson (IRLS;
    least-squares steps, so a rank-deficient design still gives the unique fitted values),
    written independently of the code under test.  Stops when the fitted means settle."""
    offset = np.zeros(f.size) if offset is None else offset
    beta = np.zeros(x.shape[1])
    beta[0] = np.log(f.sum() / np.exp(offset).sum())
    mu = np.exp(offset + x @ beta)
    for _ in range(200):
        root = np.sqrt(mu)
        step = np.linalg.lstsq(root[:, None] * x, (f - mu) / root, rcond=None)[0]  # minimum-norm step
        beta += step
        new = np.exp(offset + x @ beta)
        if np.max(np.abs(new - mu) / np.maximum(new, 1e-300)) < 1e-13:
            return new
        mu = new
    return mu


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


def _taus(mu, pi):
    """tau1, tau2 from the means of the sample-unique cells, written out: P(F = 1 | f = 1) and
    E(1/F | f = 1) with F - 1 ~ Poisson(lambda (1 - pi)), lambda = mu / pi."""
    rest = mu / pi * (1 - pi)
    return np.exp(-rest).sum(), ((1 - np.exp(-rest)) / rest).sum()


@pytest.mark.parametrize("model", ["independence", "a*b + c", "2way"])
def test_offset_matches_glm_with_offset(model):
    # per-cell known factors (sampling fractions varying with a and c): a Poisson GLM with offset log(pi)
    rng = np.random.default_rng(7)
    shape = (3, 4, 2)
    names = ["a", "b", "c"]
    f = rng.poisson(rng.uniform(1, 25, size=shape)).astype(float)
    pi = rng.uniform(0.01, 0.2, size=(3, 1, 2))
    fit = fit_loglinear(f, names, model=model, tol=1e-12, offset=pi)
    mu = _glm_poisson(f.ravel(), _design(shape, parse_model(model, names)),
                      np.log(np.broadcast_to(pi, shape)).ravel()).reshape(shape)
    np.testing.assert_allclose(fit.fitted, mu, rtol=1e-8)
    assert fit.converged
    if model == "independence":  # a*c is not in the model: the offset changes the fit
        plain = fit_loglinear(f, names, model=model, tol=1e-12)
        assert np.abs(plain.fitted / fit.fitted - 1).max() > 1e-3


def test_offset_errors():
    f = np.ones((2, 3))
    with pytest.raises(PramkitError, match="broadcastable"):
        fit_loglinear(f, ["a", "b"], offset=np.ones(2))
    with pytest.raises(PramkitError, match="positive"):
        fit_loglinear(f, ["a", "b"], offset=np.array([[0.5], [0.0]]))


def test_per_cell_fractions_risk_matches_glm():
    # weights constant within the classes of (a, c), a term the independence model lacks:
    # the fractions enter the fit as an offset and the risk through lambda = mu / pi
    rng = np.random.default_rng(8)
    n = 200
    data = pd.DataFrame({"a": rng.choice(3, n, p=[0.5, 0.3, 0.2]), "b": rng.choice(12, n, p=rng.dirichlet(np.ones(12))),
                         "c": rng.choice(2, n, p=[0.7, 0.3])})
    inverse = np.array([[20.0, 80.0], [50.0, 10.0], [200.0, 40.0]])  # weight of class (a, c)
    data["w"] = inverse[data.a, data.c]
    res = identification_risk(data, ["a", "b", "c"], weights="w", model="independence")
    assert res.fractions == "cell" and res.fraction_strata == ("a", "c")
    f = np.zeros((3, 12, 2))
    np.add.at(f, (data.a, data.b, data.c), 1)
    pi = np.broadcast_to((1 / inverse)[:, None, :], f.shape)
    mu = _glm_poisson(f.ravel(), _design(f.shape, parse_model("independence", ["a", "b", "c"])),
                      np.log(pi).ravel()).reshape(f.shape)
    tau1, tau2 = _taus(mu[f == 1], pi[f == 1])
    assert res.tau1 == pytest.approx(tau1, rel=1e-6)
    assert res.tau2 == pytest.approx(tau2, rel=1e-6)
    assert res.sample_uniques == int((f == 1).sum()) > 0


TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def test_two_way_risk_on_testdata_matches_a_poisson_glm(sdc_data):
    # sdcMicro's testdata (constant weight 100: pi = 0.01), all two-way interactions: tau1 and
    # tau2 against a Newton-Raphson GLM on the cells whose two-way margins are positive
    data = pd.read_csv(sdc_data / "testdata.csv")
    res = identification_risk(data, TESTDATA_KEYS, weights="sampling_weight")
    codes = [np.unique(data[k], return_inverse=True)[1].ravel() for k in TESTDATA_KEYS]
    shape = tuple(int(c.max()) + 1 for c in codes)
    f = np.zeros(shape)
    np.add.at(f, tuple(codes), 1)
    terms = parse_model("2way", TESTDATA_KEYS)
    keep = np.ones(shape, dtype=bool)
    for a, b in terms:
        keep &= f.sum(axis=tuple(i for i in range(f.ndim) if i not in (a, b)), keepdims=True) > 0
    x = _design(shape, terms)[keep.ravel()]
    x = x[:, np.abs(x).sum(axis=0) > 0]
    mu = np.zeros(shape)
    mu[keep] = _glm_poisson(f[keep], x)
    tau1, tau2 = _taus(mu[f == 1], 0.01)
    assert res.tau1 == pytest.approx(tau1, rel=1e-6)
    assert res.tau2 == pytest.approx(tau2, rel=1e-6)
    assert res.model.converged and res.model.watched_distance <= 1e-6


def test_watch_stops_when_the_summaries_settle():
    rng = np.random.default_rng(9)
    f = rng.poisson(0.4, size=(4, 5, 3, 4)).astype(float)  # sparse: slow plain IPF
    names = ["a", "b", "c", "d"]
    cells = np.flatnonzero(f.ravel() == 1)

    def taus(mu):
        risk = cell_risk(mu, 0.05, [None])
        return [risk.r1.sum(), risk.r2.sum()]

    limit = fit_loglinear(f, names, tol=1e-13, max_iter=100000)
    loose = fit_loglinear(f, names, tol=1e-2)
    watched = fit_loglinear(f, names, tol=1e-2, watch=Watch(cells, taus, rtol=1e-7))
    exact = np.array(taus(limit.fitted.ravel()[cells]))
    np.testing.assert_allclose(watched.watched, taus(watched.fitted.ravel()[cells]), rtol=1e-15)
    assert np.abs(np.array(watched.watched) / exact - 1).max() <= 1e-7
    assert watched.converged and watched.watched_distance <= 1e-7 and watched.iterations > loose.iterations
    assert loose.watched == () and loose.watched_distance is None


def test_geometric_tail():
    # a sequence shrinking by q per step: the tail after a step d is d q / (1 - q), the series' sum
    q, d = 0.9, 1e-3
    assert geometric_tail([d], q)[0] == pytest.approx(sum(d * q**k for k in range(1, 2000)), rel=1e-12)
    with pytest.raises(PramkitError, match="rate"):
        geometric_tail([1.0], 1.0)


def test_module_doctests():
    import doctest

    import pramkit.risk.loglinear as module

    assert doctest.testmod(module).failed == 0
