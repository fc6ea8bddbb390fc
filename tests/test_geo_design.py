"""Distance-optimal epsilon-DP PRAM, metric-DP mechanisms, utility and the synthetic geography.

Independent checks: a second LP written with the full pairwise DP constraints
(S^3 rows, solved by both HiGHS methods), exhaustive search over a grid for
S = 2, exact rational arithmetic (fractions) for epsilon, metric DP and the
objective of the stored doubles, and the optimality structure that the KKT
conditions predict -- no expected number comes from the code under test.
"""

from __future__ import annotations

import itertools
import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from pramkit.datasets import CENSUS_AREAS, census, census_areas
from pramkit.design.classic import randomized_response
from pramkit.design.dp import distance as dp_distance
from pramkit.design.dp.distance import (
    distance_dual_bound,
    distance_information_path,
    dp_distance_information,
    dp_min_distance,
    greedy_spanner,
    metric_dual_bound,
    metric_min_distance,
)
from pramkit.design.metric import mechanisms as geo
from pramkit.design.metric.mechanisms import (
    build_distance,
    build_metric,
    compare_with_rr,
    exponential_mechanism,
    geo_utility,
    rr_utility,
    truncated_geometric,
)
from pramkit.design.registry import FAMILIES
from pramkit.distances import (
    Distances,
    euclidean_distances,
    graph_distances,
    ordinal_distances,
    table_distances,
)
from pramkit.errors import ParameterError, PramkitError
from pramkit.information import mutual_information
from pramkit.matrix import PramMatrix
from pramkit.privacy.metric import metric_epsilon

# -- independent references ----------------------------------------------------------------------

def exp_lower(x: Fraction) -> Fraction:
    """A rational lower bound on e^x (60-digit decimal exp, less a relative 1e-50)."""
    ctx = Context(prec=60)
    value = ctx.exp(ctx.divide(Decimal(x.numerator), Decimal(x.denominator)))
    return Fraction(value) * (1 - Fraction(1, 10 ** 50))


def exactly_epsilon_dp(m: np.ndarray, epsilon: float) -> bool:
    """max_x M[x, z] <= e^epsilon min_x M[x, z] for every released column, in rationals."""
    bound = exp_lower(Fraction(epsilon))
    for z in range(m.shape[1]):
        col = [Fraction(float(v)) for v in m[:, z]]
        if max(col) > 0 and max(col) > bound * min(col):
            return False
    return True


def exactly_metric_dp(m: np.ndarray, d: np.ndarray, eps_d: float) -> bool:
    """M[x, z] <= e^(eps_d d(x, x')) M[x', z] for every triple, in rationals."""
    s = m.shape[0]
    cache = {}
    for x, x2 in itertools.permutations(range(s), 2):
        key = float(d[x, x2])
        if key not in cache:
            cache[key] = exp_lower(Fraction(eps_d) * Fraction(key))
        for z in range(s):
            if Fraction(float(m[x, z])) > cache[key] * Fraction(float(m[x2, z])):
                return False
    return True


def exact_objective(p, m: np.ndarray, d: np.ndarray) -> Fraction:
    return sum(Fraction(float(p[x])) * Fraction(float(m[x, z])) * Fraction(float(d[x, z]))
               for x in range(m.shape[0]) for z in range(m.shape[1]))


def pairwise_lp(p, d: np.ndarray, epsilon: float, method: str, *, worst: bool = False,
                metric: bool = False) -> float:
    """The design as a second LP: variables M[x, z], every pairwise constraint
    M[x, z] - e^eps M[x', z] <= 0 written out (S^2 (S - 1) rows); ``metric``: with
    e^(eps d(x, x')) instead (metric DP on all pairs).  ``worst``: minimise t with one more
    row per x, sum_z M[x, z] d(x, z) - t <= 0 (p unused)."""
    s = len(d)
    var = lambda x, z: x * s + z  # noqa: E731
    n = s * s + int(worst)
    rows, cols, vals = [], [], []
    r = 0
    for z in range(s):
        for x, x2 in itertools.permutations(range(s), 2):
            rows += [r, r]
            cols += [var(x, z), var(x2, z)]
            vals += [1.0, -math.exp(epsilon * (d[x, x2] if metric else 1.0))]
            r += 1
    if worst:
        for x in range(s):
            rows += [r] * (s + 1)
            cols += [var(x, z) for z in range(s)] + [s * s]
            vals += list(d[x]) + [-1.0]
            r += 1
    a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(r, n))
    a_eq = sp.csr_matrix((np.ones(s * s), (np.repeat(np.arange(s), s), np.arange(s * s))), shape=(s, n))
    cost = np.zeros(n)
    if worst:
        cost[-1] = 1.0
    else:
        cost[:] = (np.asarray(p)[:, None] * d).ravel()
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(r), A_eq=a_eq, b_eq=np.ones(s), bounds=(0, None), method=method)
    assert res.status == 0
    return float(res.fun)


def grid_points(n: int) -> np.ndarray:
    return np.array([(i, j) for i in range(n) for j in range(n)], dtype=float)


# -- the LP design -------------------------------------------------------------------------------

def test_two_categories_against_exhaustive_grid() -> None:
    p, eps, dist = [0.3, 0.7], 0.8, 2.5
    d = Distances(["a", "b"], [[0, dist], [dist, 0]], unit="km")
    m = dp_min_distance(p, eps, d)
    t = math.exp(eps)
    grid = np.linspace(0.0, 1.0, 2001)
    a, b = np.meshgrid(grid, grid, indexing="ij")          # a = M[a, b], b = M[b, a]
    feasible = (1 - a <= t * b) & (b <= t * (1 - a)) & (a <= t * (1 - b)) & (1 - b <= t * a)
    values = (p[0] * a + p[1] * b) * dist
    best_grid = values[feasible].min()
    cert = m.provenance.certificate
    assert cert["optimal"]
    assert m.provenance.objective <= best_grid + 1e-12          # no feasible grid point does better
    assert best_grid - m.provenance.objective < 1e-3 * dist       # and the grid comes close
    assert cert["lower_bound"] <= best_grid
    # skewed p: releasing the common category always (epsilon 0) beats any symmetric design here
    assert m.provenance.objective == pytest.approx(p[0] * dist, rel=1e-12)
    # uniform p: summing the two binding constraints, M[a, b] + M[b, a] >= 2 / (1 + e^eps)
    u = dp_min_distance([0.5, 0.5], eps, d)
    assert u.provenance.objective == pytest.approx(dist / (1 + t), rel=1e-12)


@pytest.mark.parametrize("method", ["highs-ds", "highs-ipm"])
@pytest.mark.parametrize("case", ["ordinal3", "ordinal4", "grid3", "line5"])
def test_lp_against_pairwise_formulation(case, method) -> None:
    rng = np.random.default_rng(len(case))
    if case.startswith("ordinal"):
        s = int(case[-1])
        d = ordinal_distances([f"c{i}" for i in range(s)])
    elif case == "grid3":
        d = euclidean_distances(range(9), grid_points(3), unit="km")
    else:
        d = euclidean_distances(range(5), np.column_stack([[0, 1, 2.5, 3, 7], np.zeros(5)]))
    s = d.size
    p = rng.dirichlet(np.ones(s))
    for eps in (0.3, 1.0, 2.5):
        m = dp_min_distance(p, eps, d)
        other = pairwise_lp(p, d.matrix, eps, method)
        cert = m.provenance.certificate
        assert cert["optimal"], (case, eps)
        assert cert["lower_bound"] <= other + 1e-9 * d.max
        assert m.provenance.objective == pytest.approx(other, rel=1e-7, abs=1e-9)
        assert exactly_epsilon_dp(m.matrix, eps)
        exact = exact_objective(p, m.matrix, d.matrix)
        assert Fraction(cert["lower_bound"]) <= exact <= Fraction(cert["upper_bound"])


@pytest.mark.parametrize("case", ["ordinal4", "grid3", "line5"])
def test_worst_case_against_pairwise_formulation(case) -> None:
    if case == "ordinal4":
        d = ordinal_distances([f"c{i}" for i in range(4)])
    elif case == "grid3":
        d = euclidean_distances(range(9), grid_points(3), unit="km")
    else:
        d = euclidean_distances(range(5), np.column_stack([[0, 1, 2.5, 3, 7], np.zeros(5)]))
    for eps in (0.3, 1.0, 2.5):
        m = dp_min_distance(None, eps, d, objective="worst")
        other = pairwise_lp(None, d.matrix, eps, "highs-ds", worst=True)
        cert = m.provenance.certificate
        assert cert["optimal"] and m.provenance.objective_name == "worst_case_distance", (case, eps)
        assert m.provenance.objective == pytest.approx(other, rel=1e-7, abs=1e-9)
        assert cert["lower_bound"] <= other + 1e-9 * d.max
        assert exactly_epsilon_dp(m.matrix, eps)
        rows = [sum(Fraction(float(m.matrix[x, z])) * Fraction(float(d.matrix[x, z])) for z in range(d.size))
                for x in range(d.size)]
        assert Fraction(cert["lower_bound"]) <= max(rows) <= Fraction(cert["upper_bound"])
        # minimax (LP duality): the worst case is the average at the least favourable weights,
        # and no other weights do worse
        w = np.array(cert["least_favourable_weights"])
        assert pairwise_lp(w / w.sum(), d.matrix, eps, "highs-ds") == pytest.approx(other, rel=1e-6, abs=1e-9)
        rng = np.random.default_rng(len(case))
        for _ in range(3):
            assert pairwise_lp(rng.dirichlet(np.ones(d.size)), d.matrix, eps, "highs-ds") <= other + 1e-9


def test_worst_case_solvers_agree() -> None:
    rng = np.random.default_rng(13)
    d = euclidean_distances(range(40), rng.random((40, 2)) * 10, unit="km")
    full = dp_min_distance(None, 2.0, d, objective="worst", solver="full")
    cols = dp_min_distance(None, 2.0, d, objective="worst", solver="columns")
    assert full.provenance.certificate["optimal"] and cols.provenance.certificate["optimal"]
    assert full.provenance.objective == pytest.approx(cols.provenance.objective, rel=1e-9)
    with pytest.raises(ParameterError, match="reads no frequencies"):
        dp_min_distance(np.full(40, 1 / 40), 2.0, d, objective="worst")
    with pytest.raises(ParameterError, match="objective must be one of"):
        dp_min_distance(None, 2.0, d, objective="median")


def test_certificate_lower_bound_is_a_bound() -> None:
    """Any y gives a valid bound: check it against the pairwise LP for random y, near and far."""
    d = ordinal_distances(list("abcd"))
    p = np.array([0.1, 0.4, 0.3, 0.2])
    best = pairwise_lp(p, d.matrix, 1.2, "highs-ds")
    rng = np.random.default_rng(5)
    m = dp_min_distance(p, 1.2, d)
    y0 = np.array(m.provenance.certificate["dual_y"])
    for scale in (0.0, 1e-9, 1e-3, 0.5):
        y = y0 + scale * rng.normal(size=4)
        bound, _ = distance_dual_bound(p, d.matrix, 1.2, y)
        assert bound <= best + 1e-12


def test_solvers_agree_and_certify() -> None:
    rng = np.random.default_rng(11)
    d = euclidean_distances(range(45), rng.random((45, 2)) * 10, unit="km")
    p = rng.dirichlet(np.ones(45))
    for eps in (0.5, 2.0, 6.0):
        full = dp_min_distance(p, eps, d, solver="full")
        cols = dp_min_distance(p, eps, d, solver="columns")
        assert full.provenance.certificate["optimal"] and cols.provenance.certificate["optimal"]
        assert cols.provenance.certificate["solver"] == "column_generation"
        assert full.provenance.objective == pytest.approx(cols.provenance.objective, rel=1e-10)
        assert full.epsilon <= eps and cols.epsilon <= eps


def test_kkt_structure_moves_to_nearest_outputs() -> None:
    """Given the column floors, a row puts its excess on the nearest released outputs first:
    an entry above its floor is never farther than an entry below its cap."""
    rng = np.random.default_rng(3)
    xy = rng.random((30, 2))
    d = euclidean_distances(range(30), xy)
    eps = 2.0
    m = dp_min_distance(rng.dirichlet(np.ones(30)), eps, d).matrix
    t = math.exp(eps)
    lo = m.min(axis=0)
    used = lo > 0
    for x in range(30):
        above = used & (m[x] > lo * (1 + 1e-9))
        below = used & (m[x] < t * lo * (1 - 1e-9))
        if above.any() and below.any():
            assert d.matrix[x, above].max() <= d.matrix[x, below].min() + 1e-12


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_ordinal_beats_randomized_response(eps) -> None:
    d = ordinal_distances([f"band{i}" for i in range(8)])
    p = np.array([0.05, 0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.05])
    m = dp_min_distance(p, eps, d)
    rr = randomized_response(d.categories, eps).matrix
    rr_distance = float(exact_objective(p, rr, d.matrix))
    assert float(exact_objective(p, m.matrix, d.matrix)) < rr_distance
    cmp = compare_with_rr(m, d, p, within=1)
    assert cmp["distance_ratio"] < 1.0


def test_two_dimensional_grid_beats_randomized_response() -> None:
    d = euclidean_distances([f"g{i}" for i in range(25)], grid_points(5), unit="km")
    for eps in (1.0, 3.0):
        m = dp_min_distance(None, eps, d)
        assert m.provenance.parameters["weights"] == "uniform" and m.provenance.parameters["p"] is None
        mine = geo_utility(m, d)
        rr = geo_utility(randomized_response(d.categories, eps), d)
        assert mine.expected_distance < rr.expected_distance
        # the independent pairwise LP agrees
        assert mine.expected_distance == pytest.approx(pairwise_lp(np.full(25, 0.04), d.matrix, eps, "highs-ds"),
                                                       rel=1e-7)


def test_frequencies_change_the_design_and_large_epsilon_keeps() -> None:
    d = ordinal_distances(list("abcde"))
    flat = dp_min_distance(None, 1.0, d).matrix
    skew = dp_min_distance([0.6, 0.1, 0.1, 0.1, 0.1], 1.0, d).matrix
    assert not np.allclose(flat, skew)
    near_identity = dp_min_distance([0.2] * 5, 20.0, d)
    assert geo_utility(near_identity, d).share_kept > 0.999
    assert near_identity.epsilon <= 20.0
    with pytest.raises(ParameterError, match="above 20"):
        dp_min_distance([0.2] * 5, 25.0, d)


def test_exact_bounds_close_the_certificate_at_large_epsilon() -> None:
    """At epsilon 17 the objective is ~e^-17 of the diameter, below the floating bounds' rounding
    allowance: the certificate is recomputed in rationals and still brackets the independent optimum."""
    d = ordinal_distances(list("abcdef"))
    p = np.array([0.3, 0.2, 0.2, 0.1, 0.1, 0.1])
    m = dp_min_distance(p, 17.0, d)
    cert = m.provenance.certificate
    other = pairwise_lp(p, d.matrix, 17.0, "highs-ds")
    assert cert["arithmetic"] == "exact rationals" and cert["optimal"]
    assert cert["lower_bound"] <= other * (1 + 1e-6)
    exact = exact_objective(p, m.matrix, d.matrix)
    assert Fraction(cert["lower_bound"]) <= exact <= Fraction(cert["upper_bound"])
    float_lower, _ = distance_dual_bound(p, d.matrix, 17.0, cert["dual_y"])
    lower, upper = dp_distance.exact_bounds(p, d.matrix, 17.0, cert["dual_y"], m.matrix)
    assert float_lower <= lower and (lower, upper) == (cert["lower_bound"], cert["upper_bound"])


def test_certificate_at_two_hundred_areas() -> None:
    areas = census_areas(200)
    d = euclidean_distances(areas["category"], areas[["x", "y"]].to_numpy(), unit="km")
    m = dp_min_distance(areas["share"].to_numpy() / areas["share"].sum(), 2.0, d)
    cert = m.provenance.certificate
    assert cert["optimal"] and cert["solver"] == "column_generation"
    assert cert["certified_gap"] <= cert["tolerance"]
    assert m.epsilon <= 2.0
    assert cert["mutual_information_nats"] == pytest.approx(
        mutual_information(areas["share"].to_numpy() / areas["share"].sum(), m.matrix), rel=1e-12)


def test_design_errors() -> None:
    d = ordinal_distances(list("abc"))
    with pytest.raises(ParameterError, match="2 probabilities given for 3"):
        dp_min_distance([0.5, 0.5], 1.0, d)
    with pytest.raises(ParameterError, match="solver must be"):
        dp_min_distance(None, 1.0, d, solver="simplex")
    with pytest.raises(ParameterError, match="epsilon"):
        dp_min_distance(None, -1.0, d)
    with pytest.raises(ParameterError, match="give the categories"):
        dp_min_distance(None, 1.0, "ordinal")
    m = dp_min_distance(None, 1.0, "ordinal", categories=["x", "y", "z"])
    assert m.categories == ("x", "y", "z")


# -- trade-off with information ------------------------------------------------------------------

def test_information_path_and_constrained_design() -> None:
    d = ordinal_distances([f"c{i}" for i in range(6)])
    p = np.array([0.1, 0.2, 0.3, 0.2, 0.1, 0.1])
    path = distance_information_path(p, 1.5, d, points=5)
    dist = [r["expected_distance"] for r in path]
    info = [r["mutual_information_nats"] for r in path]
    assert all(a >= b - 1e-12 for a, b in zip(dist, dist[1:]))          # D falls towards the distance design
    # I is convex along the segment: midpoints lie below the chords
    assert all(info[i] <= (info[i - 1] + info[i + 1]) / 2 + 1e-12 for i in range(1, len(info) - 1))
    target = (info[0] + info[-1]) / 2
    m = dp_distance_information(p, 1.5, d, min_information=target)
    assert mutual_information(p, m.matrix) >= target - 1e-12
    assert exactly_epsilon_dp(m.matrix, 1.5)
    assert dist[-1] - 1e-12 <= m.provenance.objective <= dist[0] + 1e-12
    with pytest.raises(ParameterError, match="less than"):
        dp_distance_information(p, 1.5, d, min_information=10.0)


# -- metric DP -----------------------------------------------------------------------------------

def test_geometric_mechanism_formula_and_exact_metric_dp() -> None:
    cats = [f"b{i}" for i in range(7)]
    eps_d = 0.7
    m = truncated_geometric(cats, eps_d)
    a = math.exp(-eps_d)
    for x, z in itertools.product(range(7), repeat=2):
        if z == 0:
            ref = a ** x / (1 + a)
        elif z == 6:
            ref = a ** (6 - x) / (1 + a)
        else:
            ref = (1 - a) / (1 + a) * a ** abs(z - x)
        assert m.matrix[x, z] == pytest.approx(ref, rel=1e-12)
    # stored by its rate and sampled exactly: the guarantee is the formula's, checked here in 50 digits
    from decimal import Context, Decimal

    from pramkit.engine import realised_law

    assert m.geometric_rate == eps_d and realised_law(m).exact
    ctx = Context(prec=50)
    al = ctx.exp(Decimal(-eps_d))
    exact = [[ctx.divide(ctx.power(al, x if z == 0 else 6 - x), ctx.add(1, al)) if z in (0, 6)
              else ctx.divide(ctx.multiply(ctx.subtract(1, al), ctx.power(al, abs(z - x))), ctx.add(1, al))
              for z in range(7)] for x in range(7)]
    bound = ctx.multiply(ctx.exp(Decimal(eps_d)), ctx.add(1, Decimal("1e-45")))
    assert all(exact[x][z] <= ctx.multiply(bound, exact[x + 1][z]) and exact[x + 1][z] <= ctx.multiply(bound, exact[x][z])
               for x in range(6) for z in range(7))
    cert = m.provenance.certificate
    assert cert["metric_dp_verified"] and cert["metric_check"] == "closed form"
    assert m.provenance.parameters["metric_epsilon"] == eps_d
    assert exactly_epsilon_dp(m.matrix, m.epsilon)
    assert m.epsilon == pytest.approx(eps_d * 6, rel=1e-9)


def test_exponential_mechanism_exact_metric_dp() -> None:
    rng = np.random.default_rng(2)
    d = euclidean_distances([f"a{i}" for i in range(8)], rng.random((8, 2)) * 20, unit="km")
    eps_d = 0.3
    m = exponential_mechanism(d, eps_d)
    w = np.exp(-eps_d * d.matrix / 2)
    assert np.allclose(m.matrix, w / w.sum(axis=1, keepdims=True), rtol=1e-9)
    assert exactly_metric_dp(m.matrix, d.matrix, eps_d)
    assert m.provenance.certificate["metric_dp_verified"]
    assert m.provenance.certificate["metric_check"] == "all pairs"
    assert exactly_epsilon_dp(m.matrix, m.epsilon)
    assert m.epsilon <= eps_d * d.max


def test_exponential_mechanism_on_a_graph_and_a_non_metric_table() -> None:
    g = graph_distances(list("abcde"), [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"), ("a", "c")])
    m = exponential_mechanism(g, 1.0)
    assert m.provenance.certificate["metric_check"] == "edges"
    assert exactly_metric_dp(m.matrix, g.matrix, 1.0)
    # d(a, c) = 5 > d(a, b) + d(b, c) = 2: not a metric; the rate is lowered until the check passes
    t = table_distances(list("abc"), [("a", "b", 1), ("b", "c", 1), ("a", "c", 5)])
    m2 = exponential_mechanism(t, 1.0)
    assert exactly_metric_dp(m2.matrix, t.matrix, 1.0)
    assert m2.provenance.certificate["rate_used"] < 1.0


def test_metric_epsilon_matches_brute_force_and_detects_violations() -> None:
    rng = np.random.default_rng(8)
    d = euclidean_distances(range(6), rng.random((6, 2)))
    m = rng.dirichlet(np.ones(6), size=6)
    brute = max(math.log(m[x, z] / m[x2, z]) / d.matrix[x, x2]
                for x, x2 in itertools.permutations(range(6), 2) for z in range(6))
    r = metric_epsilon(m, d)
    assert r.exact and r.value >= brute and r.value == pytest.approx(brute, rel=1e-13)
    assert exactly_metric_dp(m, d.matrix, r.value)
    assert not exactly_metric_dp(m, d.matrix, brute * (1 - 1e-9))
    zero = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert metric_epsilon(zero, ordinal_distances("ab")).value == math.inf


def test_metric_mechanism_errors() -> None:
    # stored by its rate and sampled exactly at every size: no entry to fall below double precision
    assert truncated_geometric(list(range(2000)), 1.0).geometric_rate == 1.0
    with pytest.raises(ParameterError, match="below double precision"):
        exponential_mechanism(ordinal_distances(list(range(2000))), 1.0)
    with pytest.raises(ParameterError, match="metric epsilon must be a positive"):
        exponential_mechanism(ordinal_distances("abc"), 0.0)
    metric = FAMILIES["metric"]
    with pytest.raises(ParameterError, match="needs metric_epsilon"):
        metric.check({"distances": "ordinal"})
    with pytest.raises(ParameterError, match="does not take colour"):
        metric.check({"metric_epsilon": 1.0, "colour": "red"})
    with pytest.raises(ParameterError, match="mechanism must be one of"):
        metric.check({"metric_epsilon": 1.0, "mechanism": "laplace"})


# -- the least-distance metric-DP matrix (LP with the spanner reduction) ---------------------------

def grid_graph(n: int):
    names = [f"{i},{j}" for i in range(n) for j in range(n)]
    pairs = ([(f"{i},{j}", f"{i + 1},{j}") for i in range(n - 1) for j in range(n)]
             + [(f"{i},{j}", f"{i},{j + 1}") for i in range(n) for j in range(n - 1)])
    return graph_distances(names, pairs)


@pytest.mark.parametrize("case", ["grid3", "ring6", "ordinal5"])
def test_metric_lp_on_a_path_metric_equals_the_full_formulation(case) -> None:
    """Edges only (the reduction) against every pair written out: the same optimum."""
    if case == "grid3":
        d = grid_graph(3)
    elif case == "ring6":
        d = graph_distances(list("abcdef"), [(a, b) for a, b in zip("abcdef", "bcdefa")])
    else:
        d = ordinal_distances([f"c{i}" for i in range(5)])
    p = np.random.default_rng(len(case)).dirichlet(np.ones(d.size))
    for eps_d in (0.3, 1.0):
        m = metric_min_distance(p, eps_d, d)
        full = pairwise_lp(p, d.matrix, eps_d, "highs-ds", metric=True)
        cert = m.provenance.certificate
        assert cert["reduction"] == "path metric: the edges (exact)" and cert["metric_dp_verified"]
        assert cert["optimal"], (case, eps_d)
        assert m.provenance.objective == pytest.approx(full, rel=1e-7)
        assert cert["lower_bound"] <= full + 1e-9 * d.max
        assert exactly_metric_dp(m.matrix, d.matrix, eps_d)             # every pair, in rationals
        exact = exact_objective(p, m.matrix, d.matrix)
        assert Fraction(cert["lower_bound"]) <= exact <= Fraction(cert["upper_bound"])


@pytest.mark.parametrize("dilation", [1.05, 1.3])
def test_metric_lp_with_a_spanner_is_between_the_full_optima(dilation) -> None:
    """Planar distances: eps_d-metric-DP on every pair (rationals), at least the full optimum at
    eps_d and at most the full optimum at eps_d / dilation (that design satisfies the spanner's
    constraints); the certificate's lower bound is below the full optimum."""
    d = euclidean_distances(range(16), grid_points(4), unit="km")
    p = np.random.default_rng(3).dirichlet(np.ones(16))
    eps_d = 0.8
    m = metric_min_distance(p, eps_d, d, dilation=dilation)
    cert = m.provenance.certificate
    assert cert["reduction"] == f"greedy spanner, dilation {dilation:g}" and cert["metric_dp_verified"]
    assert exactly_metric_dp(m.matrix, d.matrix, eps_d)
    best = pairwise_lp(p, d.matrix, eps_d, "highs-ds", metric=True)
    slower = pairwise_lp(p, d.matrix, eps_d / dilation, "highs-ds", metric=True)
    assert best - 1e-9 <= m.provenance.objective <= slower * (1 + 1e-6)
    assert cert["lower_bound"] <= best + 1e-9
    assert cert["constraint_edges"] < 16 * 15 // 2


def test_greedy_spanner_dilation_by_floyd_warshall() -> None:
    rng = np.random.default_rng(9)
    d = euclidean_distances(range(25), rng.random((25, 2)) * 10, unit="km")
    for dilation in (1.0, 1.1, 1.5, 2.0):
        edges, _ = greedy_spanner(d, dilation)
        g = np.full((25, 25), np.inf)
        np.fill_diagonal(g, 0.0)
        for x, y in edges:
            g[x, y] = g[y, x] = d.matrix[x, y]
        for k in range(25):                                      # Floyd-Warshall, by hand
            g = np.minimum(g, g[:, [k]] + g[[k], :])
        assert np.all(g <= dilation * d.matrix * (1 + 1e-12))
    assert len(greedy_spanner(d, 2.0)[0]) < len(greedy_spanner(d, 1.1)[0]) <= 25 * 24 // 2
    line = euclidean_distances(range(5), np.column_stack([np.arange(5.0), np.zeros(5)]))
    assert greedy_spanner(line, 1.0)[0].tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]   # collinear: a path


def test_metric_lp_ordinal_is_the_remapped_geometric_mechanism() -> None:
    """Ghosh, Roughgarden and Sundararajan (2009): for ordered categories the optimal mechanism for
    any prior and loss |x - z| is the truncated geometric mechanism followed by the Bayes remap, so
    the LP's optimum is sum_z min_j sum_x p_x G[x, z] |x - j| (G built here from its formula)."""
    s, eps_d = 7, 0.6
    a = math.exp(-eps_d)
    g = np.array([[(a ** x if z == 0 else a ** (s - 1 - x) if z == s - 1 else (1 - a) * a ** abs(z - x)) / (1 + a)
                   for z in range(s)] for x in range(s)])
    steps = np.abs(np.subtract.outer(np.arange(s), np.arange(s)))
    for seed in range(3):
        p = np.random.default_rng(seed).dirichlet(np.ones(s))
        remapped = sum(min(float(p @ (g[:, z] * steps[:, j])) for j in range(s)) for z in range(s))
        m = metric_min_distance(p, eps_d, ordinal_distances(range(s)))
        assert m.provenance.certificate["optimal"]
        assert m.provenance.objective == pytest.approx(remapped, rel=1e-7)


def test_metric_dual_bound_is_the_dual_function_rounded_down() -> None:
    """For any y and mu >= 0 the bound is the Lagrangian dual function
    sum_x (y_x + min_z r[x, z]) -- evaluated here in rationals -- less a rounding allowance, and
    never above the full formulation's optimum."""
    d = grid_graph(3)
    p = np.random.default_rng(1).dirichlet(np.ones(9))
    best = pairwise_lp(p, d.matrix, 0.5, "highs-ds", metric=True)
    edges = np.concatenate([d.edges, d.edges[:, ::-1]])
    c = exp_lower(Fraction(0.5)) * (1 + Fraction(1, 10 ** 40))      # above e^0.5 (all edges weigh 1)
    rng = np.random.default_rng(2)
    for _ in range(12):
        y = rng.normal(size=9) * rng.choice([1e-3, 0.1])
        mu = rng.random((len(edges), 9)) * rng.choice([0.001, 0.05])
        bound = metric_dual_bound(p, d.matrix, edges, np.ones(len(edges)), 0.5, y, mu)
        r = [[Fraction(float(p[x])) * Fraction(float(d.matrix[x, z])) - Fraction(float(y[x])) for z in range(9)]
             for x in range(9)]
        for (x, x2), row in zip(edges, mu):
            for z in range(9):
                r[x][z] += Fraction(float(row[z]))
                r[x2][z] -= c * Fraction(float(row[z]))
        dual = sum(Fraction(float(y[x])) + min(r[x]) for x in range(9))
        assert dual - Fraction(1, 10 ** 12) <= Fraction(bound) <= dual
        assert bound <= best + 1e-12


def test_metric_lp_errors_and_builder() -> None:
    d = grid_graph(2)
    with pytest.raises(ParameterError, match="dilation"):
        metric_min_distance(None, 1.0, euclidean_distances(range(3), grid_points(2)[:3]), dilation=0.9)
    with pytest.raises(PramkitError, match="above"):
        metric_min_distance(None, 1.0, ordinal_distances(range(dp_distance.METRIC_LP_MAX + 1)))
    m = build_metric(list(d.categories), None, {"metric_epsilon": 0.5, "mechanism": "optimal", "distances": d})
    assert m.provenance.method == "metric_min_distance" and m.provenance.parameters["weights"] == "uniform"
    with pytest.raises(ParameterError, match="dilation applies"):
        build_metric(list(d.categories), None, {"metric_epsilon": 0.5, "dilation": 1.2, "distances": d})


# -- utility -------------------------------------------------------------------------------------

def test_utility_by_hand() -> None:
    d = ordinal_distances(list("abc"))
    m = PramMatrix([[0.7, 0.2, 0.1], [0.25, 0.5, 0.25], [0.0, 0.4, 0.6]])
    p = [0.2, 0.5, 0.3]
    u = geo_utility(m, d, p, within=1)
    assert u.expected_distance == pytest.approx(0.2 * (0.2 + 0.2) + 0.5 * 0.5 + 0.3 * 0.4, rel=1e-14)
    assert u.share_kept == pytest.approx(0.2 * 0.7 + 0.5 * 0.5 + 0.3 * 0.6, rel=1e-14)
    assert u.share_within == pytest.approx(0.2 * 0.9 + 0.5 * 1.0 + 0.3 * 1.0, rel=1e-14)


def test_rr_closed_form_equals_dense(monkeypatch) -> None:
    rng = np.random.default_rng(4)
    d = euclidean_distances(range(7), rng.random((7, 2)), unit="km")
    p = rng.dirichlet(np.ones(7))
    dense = rr_utility(d, 1.3, p, within=0.4)
    monkeypatch.setattr(geo, "RR_DENSE_MAX", 1)
    closed = rr_utility(d, 1.3, p, within=0.4)
    assert closed.expected_distance == pytest.approx(dense.expected_distance, rel=1e-12)
    assert closed.share_kept == pytest.approx(dense.share_kept, rel=1e-12)
    assert closed.share_within == pytest.approx(dense.share_within, rel=1e-12)


# -- the design-family builders ------------------------------------------------------------------

def test_builders() -> None:
    cats = ["low", "mid", "high", "top"]
    m = build_distance(cats, np.array([0.4, 0.3, 0.2, 0.1]), 1.0, {"distances": "ordinal"})
    assert m.provenance.method == "dp_min_distance" and m.categories == tuple(cats) and m.epsilon <= 1.0
    with pytest.raises(ParameterError, match="needs distances"):
        build_distance(cats, None, 1.0, {})
    g = build_metric(cats, None, {"metric_epsilon": 0.5, "mechanism": "geometric"})
    assert g.provenance.method == "truncated_geometric"
    e = build_metric(cats, None, {"metric_epsilon": 0.5, "distances": "ordinal"})
    assert e.provenance.method == "exponential_mechanism"
    with pytest.raises(ParameterError, match="takes no share of the budget"):
        FAMILIES["metric"].build(cats, None, 1.0, {"metric_epsilon": 0.5, "distances": "ordinal"})


# -- synthetic geography ---------------------------------------------------------------------------

def test_census_areas_geography() -> None:
    a = census_areas()
    assert len(a) == CENSUS_AREAS and a["category"].is_unique
    assert a["share"].sum() == pytest.approx(1.0, abs=1e-12)
    assert a[["x", "y"]].min().min() >= 0 and a[["x", "y"]].max().max() <= 100
    assert a["x"].is_monotonic_increasing                              # named west to east
    pd.testing.assert_frame_equal(a, census_areas())
    assert not census_areas(seed=1).equals(a)
    # clustered: town areas are much closer to their nearest neighbour than rural ones
    xy = a[["x", "y"]].to_numpy()
    d = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d, np.inf)
    nearest = d.min(axis=1)
    town = a["town"].to_numpy() >= 0
    assert np.median(nearest[town]) < 0.5 * np.median(nearest[~town])
    assert nearest.min() > 0
    # usable as a centroid file
    euclidean_distances(a["category"], xy, unit="km")


def test_census_with_areas_keeps_other_columns() -> None:
    plain = census(5000)
    with_areas = census(5000, areas=True)
    pd.testing.assert_frame_equal(plain, with_areas.drop(columns="area"))
    assert list(with_areas["area"].cat.categories) == list(census_areas()["category"])
    pd.testing.assert_frame_equal(with_areas, census(5000, areas=True))
    small = census(2000, areas=50)
    assert small["area"].cat.categories.size == 50
    # renters live in towns more often than owners
    towns = census_areas()["town"].to_numpy() >= 0
    big = census(40_000, areas=True)
    in_town = towns[big["area"].cat.codes.to_numpy()]
    assert in_town[big["ownership"] == "rented"].mean() > in_town[big["ownership"] == "owned"].mean()


def test_a_distribution_the_user_gives_weighs_the_least_distance_mechanism() -> None:
    """``pramkit design --probs ... --method metric --mechanism optimal``: the distribution is public,
    so the least-distance mechanism minimises the distance expected under it, not under the uniform."""
    from pramkit.design.matrix_design import design_matrix

    p = [0.7, 0.2, 0.05, 0.05]
    d = ordinal_distances("abcd")
    result = design_matrix(p, method="metric", options={"metric_epsilon": 0.8, "mechanism": "optimal",
                                                        "distances": "ordinal"}, categories=list("abcd"))
    direct = metric_min_distance(p, 0.8, d)
    uniform = metric_min_distance(None, 0.8, d)
    moved = lambda m: float(np.asarray(p) @ (m.matrix * d.matrix).sum(axis=1))  # noqa: E731
    assert moved(result.matrix) == pytest.approx(moved(direct), abs=1e-9)
    assert moved(result.matrix) < moved(uniform) - 1e-6
