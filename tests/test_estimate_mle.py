"""The MLE on the simplex by EM (pramkit.estimate.mle).

Checked against: the moment estimator (equal inside the simplex); SciPy's
SLSQP on the simplex (boundary cases); the concavity bound used as the
stopping rule, against the converged optimum.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import xlogy

from pramkit import PramMatrix
from pramkit.design.classic import randomized_response
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.estimate import EstimationWarning, mle_estimate, moment_estimate


def loglik(p: np.ndarray, m: np.ndarray, u: np.ndarray) -> float:
    return float(xlogy(u, p @ m).sum())


@pytest.mark.parametrize("seed", range(4))
def test_mle_equals_moment_inside_the_simplex(seed):
    rng = np.random.default_rng(seed)
    shape = (3, 4)
    mats = [randomized_response(list(range(3)), 1.5), PramMatrix(0.7 * np.eye(4) + 0.3 * rng.dirichlet(np.ones(4), 4))]
    p = rng.dirichlet(5 * np.ones(12)).reshape(shape)
    u = np.round(5000 * mats[0].matrix.T @ p @ mats[1].matrix)  # released counts near their expectation
    mom = moment_estimate(u, mats)
    assert np.all(mom.counts > 0)
    mle = mle_estimate(u, mats, start="uniform", tol=1e-10)
    assert mle.converged and mle.iterations > 10
    assert mle.counts == pytest.approx(mom.counts, rel=1e-5, abs=1e-3)
    assert mle.se == pytest.approx(mom.se, rel=1e-5)


def test_mle_on_the_boundary_matches_scipy():
    m = randomized_response(list(range(4)), 1.0).matrix
    u = np.array([120.0, 60.0, 5.0, 15.0])  # few released 2s and 3s: the moment estimate goes negative
    assert moment_estimate(u, [PramMatrix(m)]).counts.min() < 0
    est = mle_estimate(u, [PramMatrix(m)], start="uniform", tol=1e-9)
    assert est.converged and est.method == "mle"
    assert np.all(est.counts >= 0) and est.counts.sum() == pytest.approx(u.sum())
    p = est.counts / u.sum()
    ref = minimize(lambda x: -loglik(x, m, u), np.full(4, 0.25), jac=lambda x: -m @ (u / (x @ m)),
                   method="SLSQP", bounds=[(0, 1)] * 4, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}])
    assert ref.success
    assert loglik(p, m, u) >= -ref.fun - 1e-7
    assert p == pytest.approx(ref.x, abs=1e-4)
    assert est.loglik == pytest.approx(loglik(p, m, u), rel=1e-12)


@pytest.mark.parametrize("accelerate", [False, True])
def test_stopping_rule_bounds_the_remaining_loglikelihood(accelerate):
    """After a few updates, the reported gap bounds max log-likelihood - log-likelihood."""
    m = randomized_response(list(range(5)), 0.8)
    u = np.array([400.0, 100.0, 50.0, 30.0, 20.0])
    with pytest.warns(EstimationWarning, match="raise max_iter"):
        early = mle_estimate(u, [m], start="uniform", max_iter=5, accelerate=accelerate)
    assert early.converged is False and early.iterations == 5
    best = mle_estimate(u, [m], start="uniform", tol=1e-10)
    assert best.converged and best.loglik_gap <= 1e-10
    lost = best.loglik - early.loglik
    assert 0 < lost <= early.loglik_gap + 1e-9


def test_acceleration_reaches_the_same_maximum_faster():
    m = randomized_response(list(range(6)), 0.7)
    u = np.array([300.0, 150.0, 80.0, 40.0, 20.0, 10.0])  # a boundary case: moment estimate negative
    assert moment_estimate(u, [m]).counts.min() < 0
    plain = mle_estimate(u, [m], start="uniform", accelerate=False, tol=1e-8)
    fast = mle_estimate(u, [m], start="uniform", tol=1e-8)
    assert plain.converged and fast.converged and fast.iterations < plain.iterations / 3
    assert fast.loglik == pytest.approx(plain.loglik, abs=2e-8)
    assert fast.counts == pytest.approx(plain.counts, abs=0.05)


def test_singular_matrix_mle_has_no_standard_errors_where_not_identifiable():
    m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])
    est = mle_estimate(np.array([30.0, 38.0, 32.0]), [m])
    assert est.converged and np.all(np.isnan(est.se[:2])) and np.isinf(est.condition_number)
    fitted = est.counts @ m.matrix
    assert fitted == pytest.approx([30.0, 38.0, 32.0], rel=1e-6)  # the saturated fit is reachable here
    # the third count is identifiable: with the saturated fit its MLE solves
    # 0.8 t_3 = 32, and its standard error is the one of the merged two-category
    # model (pi = share of the first two): n / sum_j (row_a - row_c)_j^2 / lam_j
    assert est.counts[2] == pytest.approx(40.0, rel=1e-6)
    lam = np.array([30.0, 38.0, 32.0]) / 100
    diff = np.array([0.5, 0.5, 0.0]) - np.array([0.0, 0.2, 0.8])
    assert est.se[2] == pytest.approx(np.sqrt(100 / np.sum(diff**2 / lam)), rel=1e-6)
    assert "not identifiable" in est.note and "identical rows" in est.note


def test_bad_options():
    m = randomized_response([0, 1], 1.0)
    for kwargs in ({"tol": 0.0}, {"max_iter": -1}, {"start": "random"}):
        with pytest.raises(PramkitError):
            mle_estimate(np.array([1.0, 2.0]), [m], **kwargs)


@pytest.mark.parametrize("seed", range(3))
def test_structural_zeros_match_scipy(seed):
    """EM with structural zeros maximises the likelihood over the tables that are zero there (SLSQP,
    with the zeros' bounds fixed at 0), keeps them exactly 0, and refuses zeros no record can come from."""
    rng = np.random.default_rng(seed)
    mats = [randomized_response(list(range(3)), 1.0), randomized_response(list(range(3)), 1.5)]
    zeros = np.zeros((3, 3), dtype=bool)
    zeros[0, 2] = zeros[2, 0] = True                      # two forbidden combinations
    p = np.where(zeros, 0.0, rng.dirichlet(np.ones(9)).reshape(3, 3))
    p /= p.sum()
    big = np.kron(mats[0].matrix, mats[1].matrix)
    u = rng.multinomial(400, big.T @ p.ravel()).astype(float)
    est = mle_estimate(u.reshape(3, 3), mats, zeros=zeros, tol=1e-9)
    assert est.converged and np.all(est.counts[zeros] == 0.0)
    free = ~zeros.ravel()
    ref = minimize(lambda x: -float(xlogy(u, x @ big).sum()), np.where(free, 1 / free.sum(), 0.0),
                   jac=lambda x: -big @ (u / (x @ big)), method="SLSQP",
                   bounds=[(0, 1) if f else (0, 0) for f in free],
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}], options={"ftol": 1e-14, "maxiter": 500})
    assert -ref.fun <= est.loglik + 1e-6                  # EM is at least as high as SciPy's optimum
    assert est.counts.ravel() / 400 == pytest.approx(ref.x, abs=2e-3)
    with pytest.raises(ParameterError, match="shape"):
        mle_estimate(u.reshape(3, 3), mats, zeros=zeros[:2])
    with pytest.raises(DataError, match="structural zeros"):
        mle_estimate([[5.0, 0.0], [0.0, 5.0]], [None, None], zeros=np.array([[True, False], [False, False]]))


def _squarem_one_step_at_a_time(em, p0: np.ndarray, p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """The SQUAREM step of Varadhan and Roland (scheme S3), halved towards a = -1 one step at a time until
    every entry outside the structural zeros is positive: the reference for the steps taken at once."""
    d1 = p1 - p0
    d2 = p2 - p1 - d1
    if not np.any(d2):
        return p2
    a = min(-float(np.sqrt(np.sum(d1 * d1))) / float(np.sqrt(np.sum(d2 * d2))), -1.0)
    while a < -1.0:
        q = p0 - 2.0 * a * d1 + a * a * d2
        if q[em.support].min() > 0:
            q = q / q.sum()
            return q if em.loglik(q) >= em.loglik(p2) else p2
        a = (a - 1.0) / 2.0 if a < -1.01 else -1.0
    return p2


@pytest.mark.parametrize("block", [1, 3, 1 << 16])
@pytest.mark.parametrize("seed", range(6))
def test_the_steps_taken_at_once_are_the_steps_taken_one_at_a_time(seed, block, monkeypatch):
    """EM near the boundary of the simplex (a strong perturbation, cells nearly empty), every extrapolation
    compared with the one-at-a-time halving, in blocks of one, three and many candidate steps."""
    from pramkit.estimate import mle

    monkeypatch.setattr(mle, "STEP_CELLS", block * 12)
    rng = np.random.default_rng(seed)
    mats = [randomized_response(list(range(3)), 0.8), randomized_response(list(range(4)), 0.5)]
    truth = rng.dirichlet(0.3 * np.ones(12))
    u = rng.multinomial(2000, (mats[0].matrix.T @ truth.reshape(3, 4) @ mats[1].matrix).ravel()).reshape(3, 4)
    support = np.ones((3, 4), dtype=bool)
    support[2, 3] = seed % 2 == 0
    em = mle._EM([m.matrix for m in mats], u / u.sum(), support)
    p = np.where(support, 1.0, 0.0) / support.sum()
    halved = 0
    for _ in range(200):
        p1 = p * em.evaluate(p)[1]
        p2 = p1 * em.evaluate(p1)[1]
        got, want = em.extrapolate(p, p1, p2), _squarem_one_step_at_a_time(em, p, p1, p2)
        assert np.array_equal(got, want)
        halved += not np.array_equal(got, p2)
        p = got
    assert halved > 0


@pytest.mark.parametrize("seed", range(8))
def test_contract_multiplies_as_moveaxis_does_bit_for_bit(seed):
    """Keyed draws from an estimate (resample) depend on its last bits: each axis's product is the one of the
    axis moved last with np.moveaxis, in the same order."""
    from pramkit.estimate.axes import contract

    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng.integers(1, 7, rng.integers(1, 5)))
    table = rng.random(shape)
    factors = [None if rng.random() < 0.3 else rng.random((s, s)) for s in shape]
    want = table
    for axis, b in enumerate(factors):
        if b is not None:
            want = np.moveaxis(np.moveaxis(want, axis, -1) @ b, -1, axis)
    assert np.array_equal(contract(table, factors), want)
