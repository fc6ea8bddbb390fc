"""Spontaneous-recognition design (Cator, Hensbergen and Rozenholc): the loss, its gradient,
condition (C1), the uniform baseline, the reductions and the design, each against an
independent computation."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from pramkit.errors import DataError, PramkitError
from pramkit.matrix import PramMatrix
from pramkit.recognition import reductions as red
from pramkit.recognition.design import (
    RecognitionDesign,
    check_alpha,
    combinations_of,
    key_space,
    l2_and_gradient,
    recognition_design,
    recognition_design_from_data,
    uniform_loss,
    uniform_noise_baseline,
    uniform_worst_posterior,
)
from pramkit.risk.posterior import worst_posterior
from pramkit.utility import l2_loss


def random_stochastic(k: int, rng: np.random.Generator, spread: float = 0.2) -> np.ndarray:
    p = np.eye(k) + spread * rng.random((k, k))
    return p / p.sum(axis=1, keepdims=True)


def brute_worst(counts: np.ndarray, p: np.ndarray, combos) -> float:
    """Equation (1) looped over occurring m, pi and k0, straight from the definition."""
    shape = counts.shape
    cells = list(itertools.product(*[range(s) for s in shape]))
    u0 = counts.reshape(-1)
    worst = 0.0
    for combo in combos:
        for k0 in itertools.product(*[range(shape[a]) for a in combo]):
            fibre = [j for j, c in enumerate(cells) if tuple(c[a] for a in combo) == k0]
            den = sum(u0[l] * sum(p[l, k] for k in fibre) for l in range(len(cells)))
            for m in range(len(cells)):
                if u0[m] > 0:
                    num = sum(p[m, k] for k in fibre)
                    if den > 0:
                        worst = max(worst, num / den)
    return worst


def small_counts(seed: int = 1, n: int = 300, shape=(2, 2, 3)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(int(np.prod(shape)), 0.6))
    return rng.multinomial(n, probs).reshape(shape).astype(float)


# -- the loss and its gradient ---------------------------------------------------------


def test_l2_value_matches_utility_and_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    u0 = rng.integers(0, 30, size=7).astype(float)
    p = random_stochastic(7, rng)
    value, grad = l2_and_gradient(p, u0)
    assert value == pytest.approx(l2_loss(u0, PramMatrix(p)), rel=1e-12)
    h = 1e-6
    for a, b in [(0, 0), (1, 3), (6, 2), (4, 4), (2, 5)]:
        e = np.zeros_like(p)
        e[a, b] = h
        fd = (l2_and_gradient(p + e, u0)[0] - l2_and_gradient(p - e, u0)[0]) / (2 * h)
        assert grad[a, b] == pytest.approx(fd, rel=1e-6, abs=1e-14)


def test_l2_matches_monte_carlo_squared_error_of_estimator_4():
    rng = np.random.default_rng(3)
    u0 = np.array([40, 25, 10, 3, 0, 22], dtype=float)
    p = random_stochastic(6, rng, spread=0.3)
    n, reps = u0.sum(), 40_000
    released = sum(rng.multinomial(int(c), p[m], size=reps) for m, c in enumerate(u0) if c > 0)
    mu_hat = released @ np.linalg.inv(p) / n                       # estimator (4)
    errors = ((mu_hat - u0 / n) ** 2).sum(axis=1)
    se = errors.std() / np.sqrt(reps)
    assert abs(errors.mean() - l2_loss(u0, PramMatrix(p))) < 4 * se


def test_restricted_closed_form_l2_matches_the_inverse():
    space = key_space(small_counts())
    rng = np.random.default_rng(5)
    p = np.eye(space.cells)
    sources, targets = space.occurring[:4], np.setdiff1d(np.arange(space.cells), space.occurring[:4])[:3]
    for f in sources:
        e = 0.05 * rng.random(targets.size)
        p[f, targets] = e
        p[f, f] = 1 - e.sum()
    assert red.restricted_l2(space, sp.csr_matrix(p)) == pytest.approx(l2_loss(space.counts, PramMatrix(p)), rel=1e-10)


def test_group_objective_gradient_and_hessian_against_finite_differences():
    rng = np.random.default_rng(7)
    e = 0.05 * rng.random((3, 4))
    w = np.array([50.0, 20.0, 7.0])
    value, grad = red.group_objective(e, w)
    hess = red.group_hessian(e, w).toarray()
    h = 1e-6
    flat = e.ravel()
    for i in range(flat.size):
        d = np.zeros_like(flat)
        d[i] = h
        up, down = red.group_objective((flat + d).reshape(e.shape), w), red.group_objective((flat - d).reshape(e.shape), w)
        assert grad.ravel()[i] == pytest.approx((up[0] - down[0]) / (2 * h), rel=1e-6)
        np.testing.assert_allclose(hess[i], (up[1] - down[1]).ravel() / (2 * h), rtol=1e-5, atol=1e-6)
    # the value is n^2 l2 of the matrix it describes (one source per group, four targets)
    assert value >= 2 * (w * e.sum(axis=1)).sum()


# -- condition (C1) --------------------------------------------------------------------


def test_worst_posterior_matches_equation_1_by_brute_force():
    counts = small_counts(seed=2, n=60)
    space = key_space(counts)
    combos = combinations_of(space.keys, 2)
    rng = np.random.default_rng(11)
    for p in (np.eye(space.cells), random_stochastic(space.cells, rng, 0.05)):
        got = worst_posterior(space, p, combos)
        assert got.value == pytest.approx(brute_worst(counts, p, combos), rel=1e-12)
    # identity: 1 / U_pi(k0) for the rarest occurring margin cell (section 2)
    smallest = min(u[u > 0].min() for u in (space.margin(c)[1] for c in combos))
    assert worst_posterior(space, np.eye(space.cells), combos).value == pytest.approx(1 / smallest)


def test_uniform_noise_structured_formulas_and_bisection():
    counts = small_counts(seed=4, n=200)
    space = key_space(counts)
    combos = combinations_of(space.keys, 2)
    k, n, alpha = space.cells, space.n, 0.1
    for lam in (0.0, 0.01, 0.3):
        p = (1 - lam) * np.eye(k) + lam / k
        assert uniform_worst_posterior(space, combos, lam) == pytest.approx(brute_worst(counts, p, combos), rel=1e-12)
        if lam < 1:
            assert uniform_loss(space, lam) == pytest.approx(l2_loss(counts, [None] * 2 + [None])
                                                             if lam == 0 else l2_loss(space.counts, PramMatrix(p)),
                                                             rel=1e-9, abs=1e-15)
    # closed form threshold: (1 - lam + lam/d) = alpha ((1 - lam) U + lam n / d), worst combination
    need = []
    for c in combos:
        u = space.margin(c)[1]
        d = u.size
        for uu in u[(u > 0) & (u * alpha < 1)]:
            need.append((1 - alpha * uu) / (1 - 1 / d - alpha * uu + alpha * n / d))
    base = uniform_noise_baseline(space, combos, alpha=alpha)
    assert base.weight == pytest.approx(max(need), rel=1e-9)
    assert base.worst_posterior <= alpha


# -- the design ------------------------------------------------------------------------


def test_restricted_design_meets_c1_beats_uniform_noise_and_is_certified():
    counts = small_counts(seed=8, n=400, shape=(2, 3, 2, 3))
    d = recognition_design(counts, alpha=0.1, combinations=3)
    combos = combinations_of(d.space.keys, 3)
    p = d.transitions.toarray()
    assert brute_worst(counts, p, combos) <= 0.1 * (1 + 1e-9)
    assert d.worst_posterior == pytest.approx(brute_worst(counts, p, combos), rel=1e-9)
    assert d.loss == pytest.approx(l2_loss(d.space.counts, PramMatrix(p)), rel=1e-9)
    assert d.expected_changes == pytest.approx(float(d.space.counts @ (1 - np.diag(p))))
    assert d.loss < d.baseline.loss
    assert d.baseline.worst_posterior <= 0.1
    assert d.diagnostics.gap is not None and d.diagnostics.gap < 1e-3 * d.loss * d.space.n**2
    # per moving row (1 + |e|^2)/(1 - s) + s - 1 lies in [2 s, 2 s / (1 - s)]: n^2 l2 ~ 2 E[changes]
    ratio = d.loss * d.space.n**2 / d.expected_changes
    assert 2.0 <= ratio <= 2.0 / (1 - d.change_probability.max())
    m = d.matrix
    assert m.provenance.method == "recognition"
    assert m.provenance.certificate["worst_posterior"] == d.worst_posterior
    assert m.categories[0] == (0, 0, 0, 0)


def test_restricted_lower_bound_against_a_brute_force_optimum():
    """A tiny key space whose restricted problem has one variable (one group of sources moving
    into one target with probability e).  (C1) is linear in e, so its feasible e form an interval;
    bisection with the brute-force check of equation (1) finds its lower end, where the loss
    (pramkit.utility.l2_loss of the dense matrix, increasing in e) is smallest.  The certified
    lower bound must not exceed the loss of any brute-force feasible matrix, and is tight."""
    counts = small_counts(seed=14, n=150, shape=(2, 2, 3))
    d = recognition_design(counts, alpha=0.1, combinations=2)
    diag = d.diagnostics
    assert diag.variables == 1 and diag.solver == "trust-constr"
    p = d.transitions.toarray()
    off = p - np.diag(np.diag(p))
    sources, (target,) = np.flatnonzero(off.sum(axis=1) > 0), np.flatnonzero(off.sum(axis=0) > 0)
    combos = combinations_of(d.space.keys, 2)
    n = counts.sum()

    def moved(e: float) -> np.ndarray:
        m = np.eye(p.shape[0])
        m[sources, sources] = 1.0 - e
        m[sources, target] = e
        return m

    def records(e: float) -> float:
        return l2_loss(counts.reshape(-1), PramMatrix(moved(e))) * n**2

    lo, hi = 0.0, float(off[sources[0]].sum())          # P = I breaks (C1); the design meets it
    assert brute_worst(counts, moved(lo), combos) > 0.1 >= brute_worst(counts, moved(hi), combos)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if brute_worst(counts, moved(mid), combos) <= 0.1 else (mid, hi)
    assert diag.certified and diag.lower_bound is not None
    assert diag.lower_bound <= records(hi)                             # valid: below a feasible matrix
    assert records(lo) - diag.lower_bound <= 1e-8 * records(lo)        # and tight
    assert diag.lower_bound + diag.gap >= d.loss * n**2 * (1 - 1e-12)    # the gap covers the design
    cert = d.matrix.provenance.certificate
    assert cert["certified"] is True and cert["lower_bound_records"] == diag.lower_bound
    assert cert["gap_records"] == diag.gap


@pytest.mark.xdist_group("recognition full design")
def test_full_method_is_not_certified(full_reduced):
    d = full_reduced
    cert = d.matrix.provenance.certificate
    assert cert["certified"] is False and cert["lower_bound_records"] is None and cert["gap_records"] is None
    from pramkit.design.matrix_design import matrix_json

    assert matrix_json(d.matrix)["optimal"] is False


def test_no_problem_combination_gives_the_identity():
    counts = np.full((2, 2, 2), 50.0)
    d = recognition_design(counts, alpha=0.1)
    assert d.expected_changes == 0 and d.loss == pytest.approx(0.0, abs=1e-15)
    assert d.diagnostics.solver == "none"
    assert d.diagnostics.certified and d.diagnostics.lower_bound == 0.0 == d.diagnostics.gap


@pytest.fixture(scope="module")
def full_reduced() -> RecognitionDesign:
    """The full method's design (reduced C1 triples) of a small table: two tests read it, computed once."""
    return recognition_design(small_counts(seed=14, n=150, shape=(2, 2, 3)), alpha=0.1, combinations=2,
                              method="full", reduce=True)


@pytest.mark.xdist_group("recognition full design")
def test_reductions_are_exact_and_restricted_support_costs_little(full_reduced):
    counts = small_counts(seed=14, n=150, shape=(2, 2, 3))
    combos = 2
    full_all = recognition_design(counts, alpha=0.1, combinations=combos, method="full", reduce=False)
    full_red = full_reduced
    restricted = recognition_design(counts, alpha=0.1, combinations=combos, method="restricted")
    assert full_red.diagnostics.constraints < full_all.diagnostics.constraints
    assert full_red.loss == pytest.approx(full_all.loss, rel=1e-3)
    assert full_red.loss <= restricted.loss * (1 + 1e-4)
    assert restricted.loss <= full_red.loss * 1.05
    for d in (full_all, full_red, restricted):
        assert brute_worst(counts, d.transitions.toarray(), combinations_of(d.space.keys, combos)) <= 0.1 * (1 + 1e-9)


def test_gamma_restart_when_the_diagonal_falls_below_gamma():
    counts = small_counts(seed=8, n=400, shape=(2, 3, 2, 3))
    d = recognition_design(counts, alpha=0.1, gamma=0.99999)
    assert d.diagnostics.restarts >= 1
    assert d.diagnostics.gamma < 0.99999
    assert 1 - d.change_probability[d.space.occurring].max() >= d.diagnostics.gamma
    assert d.worst_posterior <= 0.1 and d.loss < d.baseline.loss


def test_c1_triples_keep_only_rare_types_and_rare_combinations():
    space = key_space(small_counts(seed=8, n=400, shape=(2, 3, 2, 3)))
    combos = combinations_of(space.keys, 3)
    every = red.c1_triples(space, combos, alpha=0.1, gamma=0.9, reduce=False)
    cut = red.c1_triples(space, combos, alpha=0.1, gamma=0.9, reduce=True)
    rare = set(red.rare_types(space, 0.1).tolist())
    assert len(cut) < len(every)
    for m, ci, k0 in cut:
        assert m in rare
        assert space.margin(combos[ci])[1][k0] * 0.9 * 0.1 < 1


def test_the_risk_check_reads_the_design_back_from_records():
    mod = pytest.importorskip("pramkit.risk.recognition")
    counts = small_counts(seed=8, n=400, shape=(2, 3, 2, 3))
    d = recognition_design(counts, alpha=0.1)
    names = list(d.space.keys)
    coords = np.array(list(itertools.product(*[range(s) for s in counts.shape])))
    data = pd.DataFrame(np.repeat(coords, counts.reshape(-1).astype(int), axis=0), columns=names)
    check = mod.recognition_risk(data, names, alpha=0.1, joint=d.matrix, reduce=False, size=3)
    assert check.satisfied
    assert check.max_posterior == pytest.approx(d.worst_posterior, rel=1e-9)
    before = mod.recognition_risk(data, names, alpha=0.1, joint=PramMatrix.identity(d.matrix.categories), size=3)
    assert not before.satisfied


def test_from_data_builds_a_joint_variable_over_the_keys():
    from pramkit.datasets import census

    data = census(20_000, seed=3)
    keys = ["ownership", "sex", "race"]
    d = recognition_design_from_data(data, keys, alpha=0.05, combinations=[keys[:2], keys[1:]])
    assert d.combinations == (("ownership", "sex"), ("sex", "race"))
    assert all(isinstance(c, tuple) and len(c) == 3 for c in d.matrix.categories)
    var = d.perturbed_variable()
    assert var.columns == tuple(keys) and var.name == "ownership*sex*race"
    with pytest.raises(DataError, match="missing values"):
        recognition_design_from_data(data.assign(sex=data["sex"].where(data.index > 0)), keys, alpha=0.05)


def test_user_errors_say_what_to_change():
    counts = small_counts()
    with pytest.raises(PramkitError, match="between 0 and 1"):
        recognition_design(counts, alpha=1.5)
    with pytest.raises(PramkitError, match="n > 1/alpha"):
        check_alpha(0.001, 100)
    with pytest.raises(PramkitError, match="not one of the keys"):
        recognition_design(counts, alpha=0.1, combinations=[["x1", "nope"]])
    with pytest.raises(PramkitError, match="choose 'restricted' or 'full'"):
        recognition_design(counts, alpha=0.1, method="other")
    with pytest.raises(PramkitError, match="limited to"):
        recognition_design(np.ones((6, 6, 6)), alpha=0.1, method="full")


def test_gamma_one_with_nothing_to_move_returns_the_identity():
    """gamma = 1 is accepted; when (C1) already holds, the identity meets it and the restarts stop."""
    d = recognition_design(np.array([[30.0, 40.0], [40.0, 20.0]]), alpha=0.3, combinations=2, gamma=1.0)
    assert d.matrix.min_diagonal == 1.0 and d.worst_posterior <= 0.3
