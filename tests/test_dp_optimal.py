"""DP-optimal form (8): feasible set, closed forms, and the global optimum of
program (7) against exhaustive vertex enumeration (Ayed, Battiston and
Camerlenghi, sections 3-4 and appendix)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog
from scipy.spatial import HalfspaceIntersection

from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.design.dp.optimal import (
    binary_optimal_q,
    dp_constraints,
    dp_optimal,
    dp_optimal_for_column,
    is_dp_feasible,
    prop32_holds,
    solve_form8,
    symmetric_interval,
    symmetric_optimal_q,
    v,
    vertex_patterns,
)
from pramkit.errors import PramkitError
from pramkit.information import form8_objective, mutual_information_form8
from pramkit.matrix import PramMatrix

# -- independent reference: every vertex of {C q <= b} by brute force -------------------------

def enumerate_vertices(c_mat: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All vertices of {q : C q <= b}: every set of S linearly independent
    constraints taken as equalities, solved, kept if feasible."""
    s = c_mat.shape[1]
    subsets = np.array(list(itertools.combinations(range(len(c_mat)), s)))
    a = c_mat[subsets]
    rhs = b[subsets]
    ok = np.abs(np.linalg.det(a)) > 1e-12
    x = np.linalg.solve(a[ok], rhs[ok][..., None])[..., 0]
    feasible = np.all(x @ c_mat.T - b <= 1e-9, axis=1)
    return np.clip(x[feasible], 0.0, 1.0)


def qhull_vertices(c_mat: np.ndarray, b: np.ndarray, interior: np.ndarray) -> np.ndarray:
    h = HalfspaceIntersection(np.hstack([c_mat, -b[:, None]]), interior, qhull_options="Q12")
    return np.clip(h.intersections, 0.0, 1.0)


def random_p(rng, s, *, zeros=False, ties=False):
    p = rng.dirichlet(np.full(s, rng.choice([0.2, 1.0, 4.0])))
    if zeros:
        p[rng.integers(s)] = 0.0
    if ties:
        p[: 2] = p[: 2].mean()
    return p / p.sum()


def random_alpha(rng):
    return float(np.exp(rng.uniform(np.log(0.01), np.log(8.0))))


# -- the feasible set --------------------------------------------------------------------------

@pytest.mark.parametrize("s", [2, 3, 4, 7])
def test_constraints_are_exactly_epsilon_dp(s):
    """C q <= b  <=>  exact epsilon of the matrix (Shlomo and Skinner) <= alpha."""
    rng = np.random.default_rng(s)
    c_mat, b = dp_constraints(s, 0.7)
    assert c_mat.shape == ((3 if s >= 3 else 2) * s * (s - 1) + 2 * s, s)
    agree = 0
    for _ in range(400):
        # near the feasible region: around v_a / v_-a, with noise
        q = np.clip(rng.choice([v(0.7, s), v(-0.7, s)], size=s) + rng.normal(0, 0.05, s), 0, 1)
        by_c = bool(np.all(c_mat @ q <= b + 1e-12))
        eps = PramMatrix.from_diagonal(q).epsilon
        if abs(eps - 0.7) < 1e-9:
            continue
        assert by_c == (eps <= 0.7), (q, eps)
        assert is_dp_feasible(q, 0.7) == by_c
        agree += 1
    assert agree > 300


def test_corrected_inequality_15_is_active_at_its_boundary():
    """(15) reads 1 - q_l <= e^a (S-1) q_k (the extracted text has a wrong sign):
    on its boundary the matrix has epsilon exactly alpha."""
    s, a, ql = 5, 0.9, 0.2
    qk = (1 - ql) / (math.exp(a) * (s - 1))
    q = np.array([qk, ql, ql, ql, ql])
    assert PramMatrix.from_diagonal(q).epsilon == pytest.approx(a, abs=1e-12)
    assert is_dp_feasible(q, a) and not is_dp_feasible(q * [0.999, 1, 1, 1, 1], a)


# -- closed forms (section 3.2) -------------------------------------------------------------

def test_binary_any_matrix_optimum_is_symmetric_for_every_p():
    rng = np.random.default_rng(1)
    grid = np.linspace(0, 1, 401)
    q1, q2 = np.meshgrid(grid, grid)
    qs = np.stack([q1.ravel(), q2.ravel()], axis=1)
    for a in (0.05, 0.5, 2.0):
        c_mat, b = dp_constraints(2, a)
        feasible = np.all(qs @ c_mat.T <= b + 1e-12, axis=1)
        for _ in range(3):
            p = rng.dirichlet([1, 1])
            best_grid = form8_objective(p, qs[feasible]).max()
            qstar = binary_optimal_q(a)
            fstar = mutual_information_form8(p, [qstar, qstar])
            assert best_grid <= fstar + 1e-12
            assert dp_optimal(p, a).provenance.objective == pytest.approx(fstar, abs=1e-12)
            # f(q) = f(1 - q): the mirror image is optimal too (section 3.2.1)
            assert mutual_information_form8(p, [1 - qstar, 1 - qstar]) == pytest.approx(fstar, abs=1e-12)


@pytest.mark.parametrize("s", [2, 3, 10])
def test_symmetric_optimum_is_randomized_response(s):
    rng = np.random.default_rng(s)
    for a in (0.1, 1.0, 3.0):
        lo, hi = symmetric_interval(s, a)
        assert PramMatrix.from_diagonal(np.full(s, hi)).epsilon == pytest.approx(a, abs=1e-12)
        assert PramMatrix.from_diagonal(np.full(s, lo)).epsilon == pytest.approx(a, abs=1e-12)
        p = rng.dirichlet(np.ones(s))
        q = symmetric_optimal_q(p, a)
        rr = randomized_response(list(range(s)), a)
        assert q == pytest.approx(rr.diagonal[0], abs=1e-15)
        inside = np.linspace(lo, hi, 101)
        assert max(mutual_information_form8(p, np.full(s, x)) for x in inside) <= (
            mutual_information_form8(p, np.full(s, q)) + 1e-15)


def test_prop32_vertex_list_when_its_condition_holds():
    s, a = 10, 1.0
    assert prop32_holds(s, a)
    t, c = math.exp(a), s - 1
    va, vma = v(a, s), v(-a, s)
    vmin, vmax = math.exp(-a) / (t + c), t / (math.exp(-a) + c)
    expected = {(vma,) * 4, (va, va, vma, vma), (va, va, va, vmin), (va,) * 4, (vmax, vma, vma, vma)}
    got = {tuple(r) for r in vertex_patterns(s, a)}
    assert len(got) == len(expected)
    for e in expected:
        assert any(np.allclose(e, g, atol=1e-12) for g in got)


# -- the global optimum ----------------------------------------------------------------------

def _case(rng, i, smax):
    s = int(rng.integers(2, smax + 1))
    return s, random_p(rng, s, zeros=i % 4 == 0, ties=i % 5 == 0), random_alpha(rng), i % 6 == 0


def test_optimum_equals_brute_force_vertex_enumeration_small_s():
    """S = 2..4: every subset of S active constraints among C q <= b."""
    rng = np.random.default_rng(2024)
    for i in range(36):
        s, p, a, truthful = _case(rng, i, 4)
        c_mat, b = dp_constraints(s, a, truthful=truthful)
        best = form8_objective(p, enumerate_vertices(c_mat, b)).max()
        opt = solve_form8(p, a, truthful=truthful)
        assert opt.mutual_information_nats == pytest.approx(best, abs=1e-11), (s, p, a, truthful)


def test_optimum_equals_qhull_vertex_enumeration():
    """S = 5..7 against the vertices Qhull finds (an independent library);
    Qhull's precision fails on some large-alpha cases, which are skipped."""
    rng = np.random.default_rng(99)
    checked = 0
    for i in range(40):
        s = int(rng.integers(5, 8))
        p, a = random_p(rng, s, zeros=i % 4 == 0, ties=i % 5 == 0), float(np.exp(rng.uniform(np.log(0.01), np.log(3))))
        c_mat, b = dp_constraints(s, a)
        try:
            verts = qhull_vertices(c_mat, b, np.full(s, 1.0 / s))
        except Exception:  # QhullError: precision
            continue
        best = form8_objective(p, verts).max()
        assert solve_form8(p, a).mutual_information_nats == pytest.approx(best, abs=1e-9), (p, a)
        checked += 1
    assert checked >= 30


def test_no_lp_vertex_beats_the_optimum_at_large_alpha():
    """Vertices reached by HiGHS from random objective directions (any alpha up to 8)."""
    rng = np.random.default_rng(5)
    for i in range(12):
        s = int(rng.integers(5, 9))
        p, a = random_p(rng, s, zeros=i % 3 == 0), float(rng.uniform(2.0, 8.0))
        c_mat, b = dp_constraints(s, a)
        fstar = solve_form8(p, a).mutual_information_nats
        for _ in range(40):
            res = linprog(rng.normal(size=s), A_ub=c_mat, b_ub=b, bounds=(0, 1), method="highs")
            assert mutual_information_form8(p, np.clip(res.x, 0, 1)) <= fstar + 1e-9


def assert_branch_and_bound_matches_exhaustive(p, a, *, truthful=False):
    """The branch and bound's optimum equals scoring every arrangement, and
    its bound on each pattern holds (no pattern's true best lies above both
    that bound and the optimum plus the tolerance)."""
    ex = solve_form8(p, a, search="exhaustive", truthful=truthful)
    bb = solve_form8(p, a, search="branch_and_bound", truthful=truthful)
    assert bb.proved
    assert bb.mutual_information_nats == pytest.approx(ex.mutual_information_nats, abs=1e-12)
    assert bb.upper_bound >= ex.mutual_information_nats - 1e-12
    best = {x.values: x.objective for x in ex.patterns}
    for y in bb.patterns:
        assert y.objective <= best[y.values] + 1e-12      # a real arrangement of the pattern
        assert best[y.values] <= max(y.objective if y.upper_bound is None else y.upper_bound,
                                     bb.mutual_information_nats + 1e-12) + 1e-12


def test_branch_and_bound_matches_exhaustive_search():
    """The branch and bound over every placement and split (docs/design-dp.md)
    against scoring every arrangement, S up to 9, ties and zeros, some
    truthful, alpha up to log(S - 2) + 5 (beyond Proposition 3.2)."""
    rng = np.random.default_rng(77)
    beyond = 0
    for i in range(40):
        s = int(rng.integers(4, 10))
        p = random_p(rng, s, zeros=i % 4 == 0, ties=i % 3 == 0)
        a = random_alpha(rng) if i % 2 else float(rng.uniform(0.5, math.log(s - 2) + 5.0))
        beyond += not prop32_holds(s, a)
        assert_branch_and_bound_matches_exhaustive(p, a, truthful=i % 5 == 0)
    assert beyond >= 10


def every_arrangement(s: int, values: np.ndarray) -> np.ndarray:
    """Every arrangement of a vertex pattern (A, B, b, a): the singletons on
    every category (distinct), every split of the others between B and b."""
    top, two, bottom = (values[0] - values[1] > 1e-12, values[1] - values[2] > 1e-12,
                        values[2] - values[3] > 1e-12)
    rows = []
    for i in range(s) if top else [None]:
        for j in range(s) if bottom else [None]:
            if i is not None and i == j:
                continue
            rest = [z for z in range(s) if z not in (i, j)]
            for bits in itertools.product((1, 0), repeat=len(rest) if two else 0):
                q = np.full(s, values[1])
                if two:
                    q[rest] = np.where(np.array(bits) == 1, values[1], values[2])
                if top:
                    q[i] = values[0]
                if bottom:
                    q[j] = values[3]
                rows.append(q)
    return np.array(rows)


def test_optimum_equals_every_arrangement_of_every_pattern():
    """S = 4..12: every placement of the singletons and every split of every
    vertex pattern, enumerated here, against the optimiser (its default
    search and the branch and bound forced), alpha from 0.01 to far beyond
    Proposition 3.2's condition, extreme alpha included."""
    rng = np.random.default_rng(78)
    beyond = 0
    for i in range(30):
        s = 4 + i % 9
        p = random_p(rng, s, zeros=i % 4 == 0, ties=i % 3 == 0)
        a = float(rng.choice([random_alpha(rng), rng.uniform(math.log(s - 2), math.log(s - 2) + 6.0),
                              rng.choice([30.0, 700.0])], p=[0.45, 0.45, 0.1]))
        truthful = i % 5 == 0
        beyond += not prop32_holds(s, a)
        best = max(float(form8_objective(p, every_arrangement(s, vals)).max())
                   for vals in vertex_patterns(s, a, truthful=truthful))
        for search in (None, "branch_and_bound"):
            opt = solve_form8(p, a, truthful=truthful, search=search)
            assert opt.proved
            assert opt.mutual_information_nats == pytest.approx(best, abs=1e-12), (p, a, truthful, search)
            assert opt.upper_bound >= best - 1e-15
    assert beyond >= 12


def test_returned_matrix_is_within_epsilon_and_consistent():
    rng = np.random.default_rng(3)
    for i in range(40):
        s = int(rng.integers(2, 40))
        p, a = random_p(rng, s, zeros=i % 2 == 0, ties=i % 3 == 0), random_alpha(rng)
        m = dp_optimal(p, a, truthful=i % 5 == 0)
        assert m.epsilon <= a + 1e-12
        assert m.form8_q is not None
        assert m.provenance.objective == pytest.approx(mutual_information_form8(p, m.diagonal), abs=1e-13)
        assert m.provenance.objective >= mutual_information_form8(p, randomized_response(list(range(s)), a).diagonal) - 1e-13


def test_truthful_option():
    rng = np.random.default_rng(8)
    found_untruthful = False
    for _ in range(30):
        s = int(rng.integers(2, 8))
        p, a = random_p(rng, s), random_alpha(rng)
        free = dp_optimal(p, a)
        tr = dp_optimal(p, a, truthful=True)
        assert np.all(tr.diagonal >= 1.0 / s - 1e-15)
        assert tr.provenance.objective <= free.provenance.objective + 1e-13
        found_untruthful |= not free.provenance.certificate["is_truthful"]
        assert free.provenance.certificate["is_truthful"] == bool(np.all(free.diagonal >= 1 / s - 1e-15))
    assert found_untruthful  # the free optimum is sometimes not truthful (v_-a < 1/S)


@pytest.mark.parametrize("alpha", [1.0, math.log(998) + 1.0, 30.0])
def test_large_s_is_proved_and_feasible(alpha):
    """S = 1000 in Proposition 3.2's regime and beyond it: proved, within epsilon."""
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(1000))
    m = dp_optimal(p, alpha)
    assert m.epsilon <= alpha
    assert m.provenance.certificate["search"] == "branch_and_bound"
    assert m.provenance.certificate["optimal"] is True


@pytest.mark.parametrize("s", [4, 10, 300])
def test_extreme_epsilon_designs_are_within_budget(s):
    """At large epsilon some levels are within rounding of 1 or 0, so their
    computed entries are 0 next to positive ones in a column; the stored
    matrix must still be finite-epsilon, within the budget, and proved."""
    p = np.random.default_rng(s).dirichlet(np.ones(s))
    for alpha in (40.0, 100.0, 700.0):
        m = dp_optimal(p, alpha)
        assert m.epsilon <= alpha
        assert m.provenance.certificate["optimal"] is True
        assert m.provenance.certificate["budget_adjustment"] <= 1e-12


def test_vertex_patterns_and_feasibility_do_not_overflow():
    """(S - 1) e^alpha overflows at S = 100 000, alpha = 700: the patterns and
    the O(S) feasibility check must not depend on it."""
    s, alpha = 100_000, 700.0
    patterns = vertex_patterns(s, alpha)
    assert len(patterns) >= 4 and np.all(np.isfinite(patterns))
    for big_a, big_b, small_b, small_a in patterns:
        q = np.full(s, small_b)
        q[: s // 2] = big_b
        q[0], q[-1] = big_a, small_a
        assert is_dp_feasible(q, alpha, tol=1e-10)
    assert not is_dp_feasible(np.r_[1.0, np.zeros(s - 1)], alpha, tol=0.0)


def test_provenance_and_categories():
    m = dp_optimal([0.3, 0.1, 0.6], 0.5, categories=["a", "b", "c"])
    prov = m.provenance
    assert prov.method == "dp_optimal"
    assert prov.objective_name == "mutual_information_nats"
    assert prov.parameters["epsilon"] == 0.5 and prov.parameters["truthful"] is False
    assert prov.certificate["optimal"] is True and prov.certificate["search"] == "exhaustive"
    assert m.categories == ("a", "b", "c")


def test_for_column_uses_observed_distribution():
    df = census(2000, seed=1)
    m = dp_optimal_for_column(df["marital_status"], 1.0, column="marital_status")
    counts = df["marital_status"].value_counts()
    p = np.array([counts.get(c, 0) for c in m.categories], dtype=float)
    assert m.provenance.parameters["p"] == pytest.approx((p / p.sum()).tolist())
    with pytest.raises(PramkitError):
        dp_optimal_for_column(pd.Series(["x", "x", None]), 1.0)


@pytest.mark.parametrize("p, eps", [
    ([0.5, 0.5], 0.0), ([0.5, 0.5], -1), ([0.5, 0.5], float("nan")), ([0.5, 0.5], float("inf")),
    ([0.5, 0.5], "1"), ([0.7, 0.7], 1.0), ([1.0], 1.0), ([0.5, float("nan")], 1.0),
])
def test_bad_input(p, eps):
    with pytest.raises(PramkitError):
        dp_optimal(p, eps)


def test_categories_length_mismatch():
    with pytest.raises(PramkitError, match="categories"):
        dp_optimal([0.5, 0.5], 1.0, categories=["a"])


# -- the design command ----------------------------------------------------------------------

def _cli(capsys, *argv):
    from pramkit.cli import main

    code = main(["design", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_probs_json(capsys):
    import json

    code, out, _ = _cli(capsys, "--probs", "0.5,0.3,0.2", "--epsilon", "0.5", "--json")
    assert code == 0
    res = json.loads(out)
    for key in ("q", "matrix", "mutual_information_nats", "epsilon", "optimal", "certificate", "seconds"):
        assert key in res
    m = dp_optimal([0.5, 0.3, 0.2], 0.5)
    assert res["q"] == pytest.approx(m.diagonal.tolist()) and res["optimal"] is True
    assert res["mutual_information_nats"] == pytest.approx(m.provenance.objective)
    assert res["epsilon"] <= 0.5 + 1e-12


def test_cli_general_family_and_truthful_warning(capsys):
    import json

    code, out, _ = _cli(capsys, "--counts", "3538,246,242,668,778,4528", "--epsilon", "1", "--json")
    res = json.loads(out)
    assert code == 0 and res["certificate"]["is_truthful"] is False and "not truthful" in res["warnings"][0]
    code, out, _ = _cli(capsys, "--counts", "3538,246,242,668,778,4528", "--epsilon", "1", "--truthful", "--json")
    assert json.loads(out)["warnings"] == [] and min(json.loads(out)["q"]) >= 1 / 6 - 1e-15
    code, out, _ = _cli(capsys, "--probs", "0.6,0.3,0.1", "--epsilon", "1", "--family", "general", "--json")
    res = json.loads(out)
    assert res["method"] == "dp_general" and res["certificate"]["form8_gap_nats"] >= -1e-9


def test_cli_normalises_probs_within_tolerance_and_rejects_others(capsys):
    import json

    code, out, _ = _cli(capsys, "--probs", "0.5,0.3,0.2000001", "--epsilon", "1", "--json")
    assert code == 0 and "normalised" in json.loads(out)["notes"][0]
    for argv in (["--probs", "0.3,0.1,0.2", "--epsilon", "1"], ["--probs", "0.5,0.5", "--epsilon", "0"],
                 ["--probs", "0.5,x", "--epsilon", "1"], ["--probs", "0.5,0.5"],
                 ["--probs", "0.5,0.5", "--counts", "1,1", "--epsilon", "1"],
                 ["--probs", "0.5,0.5", "--epsilon", "nan"]):
        code, out, err = _cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "error" in err, argv


# -- the lemmas of docs/design-dp.md ---------------------------------------------------------

def _is_expansion(vertex: np.ndarray, patterns: np.ndarray) -> bool:
    """vertex sorted is (A, B..B, b..b, a) for a pattern row (A, B, b, a)."""
    q = np.sort(vertex)[::-1]
    for row in patterns:
        if q.size < 4:
            if np.allclose(q, row, atol=1e-9):
                return True
            continue
        big_a, big_b, small_b, small_a = row
        if abs(q[0] - big_a) > 1e-9 or abs(q[-1] - small_a) > 1e-9:
            continue
        mid = q[1:-1]
        if np.all(np.minimum(np.abs(mid - big_b), np.abs(mid - small_b)) <= 1e-9) and np.all(np.diff(mid) <= 1e-12):
            return True
    return False


def test_lemma2_every_vertex_is_an_expansion_of_a_pattern():
    rng = np.random.default_rng(12)
    for i in range(24):
        s = int(rng.integers(2, 7))
        a = random_alpha(rng) if s <= 4 else float(np.exp(rng.uniform(np.log(0.01), np.log(3))))
        truthful = s <= 4 and i % 3 == 0
        c_mat, b = dp_constraints(s, a, truthful=truthful)
        if s <= 4:
            verts = enumerate_vertices(c_mat, b)
        else:
            try:
                verts = qhull_vertices(c_mat, b, np.full(s, 1.0 / s))
            except Exception:
                continue
        patterns = vertex_patterns(s, a, truthful=truthful)
        for vert in verts:
            assert _is_expansion(vert, patterns), (s, a, vert)


def test_lemma3_every_arrangement_of_a_pattern_is_feasible():
    rng = np.random.default_rng(13)
    for _ in range(30):
        s = int(rng.integers(4, 12))
        a = random_alpha(rng)
        c_mat, b = dp_constraints(s, a)
        for big_a, big_b, small_b, small_a in vertex_patterns(s, a):
            for _ in range(10):
                q = rng.choice([big_b, small_b], size=s)
                i, j = rng.choice(s, size=2, replace=False)
                q[i], q[j] = big_a, small_a
                assert np.all(c_mat @ q <= b + 1e-9 * np.maximum(1, np.abs(b)))
                assert is_dp_feasible(q, a, tol=1e-10)


@pytest.mark.slow
def test_branch_and_bound_on_larger_and_adversarial_cases():
    """The branch and bound against exhaustive search, S = 10..12, skewed,
    geometric and tied p."""
    rng = np.random.default_rng(2718)
    for i in range(24):
        s = int(rng.integers(10, 13))
        kind = i % 4
        if kind == 0:
            p = rng.dirichlet(np.full(s, 0.1))
        elif kind == 1:
            p = rng.uniform(0.5, 0.95) ** np.arange(s)
        elif kind == 2:
            p = np.concatenate([[rng.uniform(5, 50)], np.ones(s - 1) + rng.normal(0, 0.2, s - 1)])
        else:
            p = rng.integers(1, 4, size=s).astype(float)
        p = np.abs(p) / np.abs(p).sum()
        assert_branch_and_bound_matches_exhaustive(p, random_alpha(rng))


def test_form8_epsilon_equals_dense_epsilon():
    from pramkit.design.dp.optimal import form8_epsilon

    rng = np.random.default_rng(21)
    for _ in range(200):
        s = int(rng.integers(2, 9))
        q = rng.choice([0.0, 1.0, rng.uniform(), rng.uniform(), 1.0 / s], size=s)
        assert form8_epsilon(q) == PramMatrix.from_diagonal(q).epsilon
