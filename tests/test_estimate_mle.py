"""The MLE on the simplex by EM and the interior-point method (pramkit.estimate.mle).

Checked against: the moment estimator (equal inside the simplex); SciPy's
SLSQP on the simplex (boundary cases, singular matrices, structural zeros),
on a likelihood written out here with the dense Kronecker product; the
concavity bound used as the stopping rule, against the converged optimum and
recomputed here from the estimate; the Newton matrix against its dense
product; real releases (the sdcMicro test data, the NIST benchmark's release
in two steps) whose MLE accelerated EM alone does not reach in 100 000 updates.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import sdnist_benchmark
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import xlogy

import pramkit
from pramkit import PramMatrix
from pramkit.design.classic import randomized_response
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.estimate import EstimationWarning, mle, mle_estimate, moment_estimate
from pramkit.estimate.chain import ManifestChain
from pramkit.kernel.rng import SecretKey

ROOT = Path(__file__).resolve().parents[1]
NIST = ROOT.parent / "shared" / "data" / "nist-crc"


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


# ------------------------------------------------------------------------------------------------
# The interior-point method: checked against SciPy, the dense Newton matrix and real releases

def _dense(mats: list, shape: tuple[int, ...]) -> np.ndarray:
    """The table's transition matrix ``M_1 ⊗ M_2 ⊗ ...`` (rows original cells, columns released), the identity
    for an unperturbed axis (``None``), written out here."""
    big = np.ones((1, 1))
    for m, s in zip(mats, shape):
        big = np.kron(big, np.eye(s) if m is None else m if isinstance(m, np.ndarray) else m.matrix)
    return big


def _certified_gap(u: np.ndarray, big: np.ndarray, counts: np.ndarray, free: np.ndarray) -> float:
    """``n (max_k r_k - 1)`` over the allowed cells, ``r = M (lam_hat / M^T p)``: by concavity, how far the
    log-likelihood at ``counts`` is at most below its maximum (recomputed here, not read from the estimate)."""
    n = u.sum()
    lam = counts.ravel() @ big / n
    seen = u.ravel() > 0
    r = big[:, seen] @ (u.ravel()[seen] / n / lam[seen])
    return float(n * (r[free.ravel()].max() - 1.0))


def _best_slsqp(u: np.ndarray, big: np.ndarray, free: np.ndarray) -> float:
    """The largest log-likelihood SLSQP finds on the simplex (the cells outside ``free`` fixed at 0), from the
    uniform distribution and from every allowed vertex; each at SLSQP's point made positive and summing to 1
    (SLSQP meets the constraints only to its tolerance, and a sum above 1 would raise the likelihood)."""
    flat_u, flat_free = u.ravel(), free.ravel()
    k = flat_free.sum()
    starts = [np.where(flat_free, 1.0 / k, 0.0)] + [np.where(np.arange(flat_u.size) == i, 1.0, 0.0)
                                                      for i in np.flatnonzero(flat_free)]
    best = -np.inf
    for x0 in starts:
        with np.errstate(divide="ignore", invalid="ignore"):  # SLSQP tries points with a released cell at 0
            ref = minimize(lambda x: -float(xlogy(flat_u, x @ big).sum()), x0,
                           jac=lambda x: -big @ (flat_u / (x @ big)),
                           method="SLSQP", bounds=[(0, 1) if f else (0, 0) for f in flat_free],
                           constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                           options={"ftol": 1e-15, "maxiter": 1000})
        x = np.maximum(ref.x, 0.0)
        best = max(best, float(xlogy(flat_u, (x / x.sum()) @ big).sum()))
    return best


@st.composite
def _small_tables(draw: st.DrawFn) -> tuple[np.ndarray, list, np.ndarray]:
    """A released table of 2 to 6 cells, its matrices (dense rows, some with two identical rows: singular; the
    first of two axes sometimes unperturbed) and its allowed cells (sometimes structural zeros)."""
    shape = draw(st.sampled_from([(2,), (3,), (4,), (2, 2), (2, 3), (3, 2)]))
    mats: list = []
    for axis, s in enumerate(shape):
        if axis == 0 and len(shape) == 2 and draw(st.booleans()):
            mats.append(None)
            continue
        rows = np.array(draw(st.lists(st.lists(st.floats(0.02, 1.0), min_size=s, max_size=s), min_size=s, max_size=s)))
        if draw(st.booleans()):
            rows[1] = rows[0]
        mats.append(PramMatrix(rows / rows.sum(axis=1, keepdims=True)))
    size = int(np.prod(shape))
    u = np.array(draw(st.lists(st.integers(0, 40), min_size=size, max_size=size).filter(sum)), float).reshape(shape)
    free = np.ones(shape, dtype=bool)
    if draw(st.booleans()):
        free = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(shape)
        free.flat[draw(st.integers(0, size - 1))] = True
    return u, mats, free


@settings(max_examples=60, deadline=None)
@given(_small_tables())
def test_the_maximum_matches_scipy_on_small_singular_and_boundary_tables(table):
    """Whether EM finishes alone or the interior-point method takes over at once (no EM update), the estimate's
    log-likelihood, computed here, is within the tolerance of the best SLSQP finds, and the concavity bound
    recomputed here at the estimate meets the tolerance."""
    u, mats, free = table
    big = _dense(mats, u.shape)
    assume(np.all((free.ravel() @ big)[u.ravel() > 0] > 0))  # else the zeros are refused (tested above)
    reference = _best_slsqp(u, big, free)
    tol = 1e-6
    for em_updates in (mle.EM_UPDATES, 0):
        with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
            patch.setattr(mle, "EM_UPDATES", em_updates)
            warnings.simplefilter("error", EstimationWarning)
            est = mle_estimate(u, mats, tol=tol, zeros=None if free.all() else ~free)
        assert est.converged and est.iterations <= em_updates + mle.NEWTON_STEPS
        assert np.all(est.counts >= 0) and np.all(est.counts[~free] == 0) and est.counts.sum() == pytest.approx(u.sum())
        loglik = float(xlogy(u.ravel(), est.counts.ravel() @ big / u.sum()).sum())
        assert reference <= loglik + tol + 1e-9
        assert _certified_gap(u, big, est.counts, free) <= tol + 1e-9


@pytest.mark.parametrize("plain", [[], [0], [1], [0, 2], [1, 2]])
def test_the_newton_matrix_is_the_dense_product_block_by_block(plain):
    """``M diag(w) M^T`` built axis by axis, one block per cell of the unperturbed axes, equals the dense
    product of the Kronecker matrix, whose entries between two blocks are zero."""
    rng = np.random.default_rng(len(plain) + sum(plain))
    shape = (3, 2, 4)
    mats = [None if a in plain else rng.dirichlet(np.ones(s), s) for a, s in enumerate(shape)]
    u = rng.integers(0, 5, shape).astype(float)
    lam = rng.dirichlet(np.ones(u.size)).reshape(shape)
    em = mle._EM(mats, u / u.sum())
    got = mle._InteriorPoint(em).hessian(lam)
    big = _dense(mats, shape)
    want = (big * (u / u.sum() / lam ** 2).ravel()) @ big.T
    order = plain + [a for a in range(3) if a not in plain]
    blocks, size = int(np.prod([shape[a] for a in plain])), int(np.prod([shape[a] for a in order[len(plain):]]))
    want = want.reshape(shape + shape).transpose(order + [3 + a for a in order]).reshape(blocks, size, blocks, size)
    assert got.shape == (blocks, size, size)
    for b in range(blocks):
        assert np.allclose(got[b], want[b, :, b, :], rtol=1e-12, atol=0)
        assert not np.any(np.delete(want[b], b, axis=1))


def test_em_takes_over_when_the_newton_matrix_cannot_be_factored(monkeypatch):
    """A block rounding leaves singular stops the Newton steps at once; EM goes on to the same maximum
    (SLSQP's, on the likelihood written out here)."""
    def singular(w):
        raise np.linalg.LinAlgError("singular")

    monkeypatch.setattr(mle, "_block_solver", singular)
    strata = PramMatrix(np.kron(np.eye(2), [[0.6, 0.4], [0.4, 0.6]]))
    u = np.array([[30.0, 5, 0, 0], [12, 3, 0, 0], [0, 0, 20, 1], [0, 0, 9, 20]])
    est = mle_estimate(u, [strata, strata])
    assert est.converged and est.iterations > mle.EM_UPDATES  # EM alone, past its first EM_UPDATES updates
    big = _dense([strata, strata], u.shape)
    free = np.ones(u.shape, dtype=bool)
    assert _best_slsqp(u, big, free) <= float(xlogy(u.ravel(), est.counts.ravel() @ big / u.sum()).sum()) + mle.TOL


@pytest.fixture(scope="module")
def stratified_release() -> tuple[pd.DataFrame, pramkit.Manifest]:
    """The sdcMicro test data (4 580 persons), water and roof released by randomized response at epsilon 1
    within the urban/rural strata (a fixed key): the (stratum, water) x (stratum, roof) table has an original
    cell for every two strata, empty whenever they differ."""
    from conftest import SDC_DATA

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str)
    key = SecretKey(bytes(range(32)), "test key")
    plan = pramkit.plan_release(["water", "roof"], method="rr", epsilon=1.0, strata="urbrur")
    manifest = pramkit.design_planned(data, plan, key=key).manifest
    return pramkit.perturb_frame(data, manifest, key=key).data, manifest


def test_a_real_table_with_many_empty_cells_converges_in_few_iterations(stratified_release):
    """Accelerated EM alone stops at 100 000 updates above the tolerance on this table; with the
    interior-point method the MLE meets it within EM_UPDATES + NEWTON_STEPS iterations, checked by the bound
    recomputed here, and EM alone (``newton=False``, or a table too large for Newton) does not within that
    budget."""
    released, manifest = stratified_release
    with warnings.catch_warnings():
        warnings.simplefilter("error", EstimationWarning)
        res = pramkit.estimate_table(released, manifest, ["water", "roof"], estimator="mle")
    mats = [manifest[v].release_matrix for v in ("water", "roof")]
    assert [tuple(c) for c in res.categories] == [tuple(m.categories) for m in mats]
    u = res.table.released
    assert res.table.converged and res.table.iterations <= mle.EM_UPDATES + mle.NEWTON_STEPS
    free = np.ones(u.shape, dtype=bool)
    assert _certified_gap(u, _dense(mats, u.shape), res.table.counts, free) <= mle.TOL + 1e-9
    budget = mle.EM_UPDATES + mle.NEWTON_STEPS
    est = mle_estimate(u, mats, max_iter=budget)
    assert est.converged and _certified_gap(u, _dense(mats, u.shape), est.counts, free) <= mle.TOL + 1e-9
    with pytest.warns(EstimationWarning, match="raise max_iter"):
        alone = mle_estimate(u, mats, max_iter=budget, newton=False)  # accelerated EM alone, as before
    assert not alone.converged and _certified_gap(u, _dense(mats, u.shape), alone.counts, free) > mle.TOL
    with pytest.MonkeyPatch.context() as patch, pytest.warns(EstimationWarning, match="raise max_iter"):
        patch.setattr(mle, "NEWTON_ENTRIES", 0)  # a table too large for Newton's matrix keeps EM alone
        large = mle_estimate(u, mats, max_iter=budget)
    assert large.counts.tolist() == alone.counts.tolist()



@pytest.mark.slow
def test_the_nist_release_in_two_steps_converges_where_em_did_not(tmp_path):
    """The three two-way tables of the NIST benchmark's release in two steps (dp-rules, epsilon 10) where
    accelerated EM stopped at 100 000 updates above the tolerance (a singular EDU matrix, every cell
    crossing two age classes empty): no warning, at most EM_UPDATES + NEWTON_STEPS iterations, and the bound
    recomputed here meets the tolerance."""
    data = NIST / "national" / "national2019.csv"
    if not data.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    bench = sdnist_benchmark()
    setup = bench.prepare(data, bench.FEATURES, bench.PUBLIC, 1, tmp_path, NIST / "data_dictionary.json")
    release = bench._dp_rules(setup, 10)
    manifests = [m for _, m in release.steps]
    chain = ManifestChain.of(manifests)
    for pair in (["MSP", "EDU"], ["RAC1P", "EDU"], ["EDU", "PINCP_DECILE"]):
        with warnings.catch_warnings():
            warnings.simplefilter("error", EstimationWarning)
            res = pramkit.estimate_table(release.released, manifests, pair, na_values=(), estimator="mle")
        mats = [chain[v].release_matrix for v in pair]
        assert [tuple(c) for c in res.categories] == [tuple(m.categories) for m in mats]
        assert np.isinf(res.table.condition_number)  # singular: p is not identifiable
        assert res.table.converged and res.table.iterations <= mle.EM_UPDATES + mle.NEWTON_STEPS
        u = res.table.released
        free = np.ones(u.shape, dtype=bool)
        assert _certified_gap(u, _dense(mats, u.shape), res.table.counts, free) <= mle.TOL + 1e-9
