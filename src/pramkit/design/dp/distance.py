"""Epsilon-DP PRAM that moves values the least distance: a certified linear program.

For a variable with distances ``d`` between its categories (areas, ordered
bands: :class:`pramkit.distances.Distances`) the design minimises the
expected distance a record's value moves,

    D(M) = sum_x p_x sum_z M[x, z] d(x, z),

over every row-stochastic matrix that is epsilon-DP (Shlomo and Skinner
2012, section 4: ``M[x, z] <= e^eps M[x', z]`` for all x, x', z).  This is the
local-privacy analogue of the optimal geo-indistinguishable mechanisms of
Bordenabe, Chatzikokolakis and Palamidessi (2014), with pure epsilon-DP in
place of metric privacy (Andres et al. 2013; Chatzikokolakis et al. 2013).

**The linear program.**  With per-column floors ``lo_z = min_x M[x, z]`` and
the excess ``u[x, z] = M[x, z] - lo_z``, epsilon-DP is
``0 <= u[x, z] <= (e^eps - 1) lo_z``: O(S^2) variables and constraints
instead of the S^3 pairwise ones,

    minimise  sum_z c_z lo_z + sum_{x,z} a[x, z] u[x, z]     (a = p_x d(x, z), c_z = sum_x a[x, z])
    s.t.      sum_z lo_z + sum_z u[x, z] = 1   for every x,
              u[x, z] <= (e^eps - 1) lo_z,     lo, u >= 0,

solved by HiGHS (:func:`scipy.optimize.linprog`, sparse matrices, costs
scaled to a largest coefficient of 1 and feasibility tolerances of 1e-10).

**Structure.**  Eliminating the multipliers of the bounds, the dual is

    maximise sum_x y_x   s.t.  g_z(y) = sum_x h(y_x - a[x, z]) <= 0 for every z,
                               h(v) = v + (e^eps - 1) max(v, 0),

and complementary slackness says that row x puts ``e^eps lo_z`` on the
outputs z with ``d(x, z) < y_x / p_x`` (a ball around x) and ``lo_z`` on the
others: the optimum moves values to nearby released categories.  Few
outputs are used for small epsilon (the optimum "remaps" to a few central
categories, as in Chatzikokolakis, Elsalamouny and Palamidessi's remapping):
the share kept can fall below randomized response's while the distance moved
is far smaller.  Without a privacy constraint the optimum is the identity;
the rows depend on p, and with ``p=None`` the design minimises the
*uniform average* over categories of the distance moved (reading no
frequencies).

**Solver.**  For ``S <= FULL_LP_MAX`` the whole LP is solved at once.  Above,
by column and constraint generation: a restricted LP keeps the floors of a
set of candidate outputs and the excess of a set of (x, z) pairs; the dual
y prices every output z by ``g_z(y)`` (O(S^2) array operations); outputs
with ``g_z > 0`` and the pairs with ``y_x > a[x, z]`` join, until no output
is priced positive.  Measured (``benchmarks/bench_geo.py``): S = 1000 in
6-15 s on the benchmark geography, where the whole LP (10^6 variables) took
7 minutes.

**The certificate** is a proof, from the doubles as given:

* lower bound -- any y gives one: ``y - (G / S) 1`` is dual feasible when
  ``G >= max_z g_z(y)`` (h has slope at least 1), so every epsilon-DP matrix
  has ``D(M) >= sum(y) - max(G, 0)`` (:func:`distance_dual_bound`, which
  evaluates g with a bound on its rounding and ``e^eps - 1`` rounded up);
* upper bound -- the expected distance of the stored matrix, rounded up
  (:func:`expected_distance_bounds`), whose exact epsilon is at most the
  budget, as is the law the engine realises from it (:func:`pramkit.privacy.law.within_realised_budget`,
  which calls :func:`pramkit.privacy.exact.within_budget` for the doubles; an output the LP leaves at
  a mass of 1e-15 is a few thousand units of 2^-62, whose rounding would otherwise exceed it);
* ``optimal`` is true only if ``upper - lower`` is at most
  ``d_max * certificate_tolerance(D / d_max)`` (the tolerance of
  :func:`pramkit.privacy.exact.certificate_tolerance` on the objective
  measured in units of the largest distance).

**The worst case.**  ``objective="worst"`` minimises the largest expected
distance from one category instead (:func:`dp_min_distance`); its certificate
uses the LP's multipliers of the row bounds as the least favourable weights.

**Metric DP.**  :func:`metric_min_distance` is the least-distance
eps_d-metric-DP matrix (Bordenabe, Chatzikokolakis and Palamidessi 2014), an
LP over the edges of a graph whose shortest paths give the distances (exact
for a path metric) or approximate them (a greedy spanner,
:func:`greedy_spanner`), certified by :func:`metric_dual_bound`.

**Trade-off with information.**  Mutual information is *convex* in M for a
fixed p (Cover and Thomas, Theorem 2.7.4), so neither "most information
subject to D(M) <= D0" nor "least distance subject to I >= I0" is a convex
program: both maximise a convex function or keep a convex function above a
level, NP-hard in general.  :func:`distance_information_path` and
:func:`dp_distance_information` therefore use the segment between the
distance-optimal and the information-optimal designs (every mixture is
epsilon-DP): along it D is linear and I convex, so the least-distance
mixture with ``I >= I0`` is found exactly by bisection -- an achievable
design, not a proven optimum over all matrices.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from decimal import ROUND_CEILING, Context, Decimal
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from pramkit.design.dp.optimal import check_epsilon
from pramkit.distances import Distances, read_distances
from pramkit.errors import ParameterError
from pramkit.information import float_above, float_below, mutual_information
from pramkit.labels import Label
from pramkit.matrix import JSONValue, PramMatrix, Provenance
from pramkit.privacy.exact import (
    UNIT,
    certificate_tolerance,
    float_up,
    information_bounds,
    pairwise_sum,
    pairwise_terms,
    rounding_bound,
    sum_up,
)
from pramkit.privacy.law import within_realised_budget
from pramkit.privacy.metric import check_metric, metric_certificate, metric_epsilon
from pramkit.validate import probabilities

#: Largest S solved as one LP; above, by column and constraint generation.
FULL_LP_MAX = 120
#: ... for the worst-case objective, whose multipliers move the priced outputs from round to
#: round (column generation took 348 s at S = 300, epsilon 1, where the whole LP takes 29 s).
WORST_FULL_LP_MAX = 300
#: Primal and dual feasibility tolerances given to HiGHS (scaled LP).
LP_TOLERANCE = 1e-10
#: Candidate outputs of the first restricted LP (spread by farthest-point sampling).
INITIAL_OUTPUTS = 16
#: Nearest candidate outputs of each row given an excess variable in every restricted LP.
NEAREST = 8
#: Fewest new outputs a round of column generation adds (the most positively priced first).
MIN_BATCH = 1
#: ... and, beyond that, this many per output the current restricted optimum uses.
BATCH_PER_USED = 0.25
#: Rounds of column generation allowed.
MAX_ROUNDS = 2000
#: Largest S accepted by the LP design (memory: a few S^2 doubles).
MAX_CATEGORIES = 3000
#: Largest epsilon of the LP design: ``e^eps`` spreads the LP's coefficients over 9 orders of
#: magnitude at 20 (HiGHS refuses coefficients above 1e20, at about 46, and its duals degrade well
#: before), and the optimum is within about ``e^-eps`` of keeping every value.  Certificates close
#: up to about 15-20 (docs/geography.md).
MAX_LP_EPSILON = 20.0
#: Largest S of the invariant distance LP (solved whole: S^2 variables, S^2 + 2 S rows).
INVARIANT_MAX = 300
#: Largest S for which a certificate the floating bounds cannot close is recomputed in rationals.
EXACT_CERTIFICATE_MAX = 300
#: Objectives of :func:`dp_min_distance`: the (weighted) average, or the largest from one category.
DISTANCE_OBJECTIVES = ("average", "worst")
#: References of the metric-DP LP's provenance.
METRIC_REFERENCES = ("Bordenabe, Chatzikokolakis and Palamidessi (2014), Optimal geo-indistinguishable mechanisms; "
                     "Chatzikokolakis, Andres, Bordenabe and Palamidessi (2013)")
#: Largest S of the metric-DP LP (:func:`metric_min_distance`: S^2 variables, 2 E S rows for E edges).
METRIC_LP_MAX = 300
#: Default dilation of the spanner for distances that are not a path metric.
SPANNER_DILATION = 1.1
#: References for the provenance.
REFERENCES = ("Bordenabe, Chatzikokolakis and Palamidessi (2014), Optimal geo-indistinguishable mechanisms; "
              "Shlomo and Skinner (2012), section 4")


def expm1_upper(epsilon: float) -> float:
    """A double not below ``e^epsilon - 1`` (decimal exp at 40 digits, rounded up).

    Parameters
    ----------
    epsilon : float
        The exponent.

    Returns
    -------
    float
        An upper bound on ``e^epsilon - 1`` (the slope of h in the dual, module docstring).

    Examples
    --------
    >>> expm1_upper(1.0) >= math.e - 1
    True
    """
    ctx = Context(prec=40, rounding=ROUND_CEILING)
    return float_up(ctx.subtract(ctx.next_plus(Decimal(float(epsilon)).exp(ctx)), 1))


def _at_most_one(w: np.ndarray) -> np.ndarray:
    """Non-negative weights scaled to sum at most 1 (in exact arithmetic on the doubles)."""
    w = np.maximum(np.asarray(w, dtype=float), 0.0)
    total = math.fsum(w.tolist())
    if not total > 0:   # pragma: no cover - the multipliers of the row bounds sum to 1
        raise ParameterError("the worst-case LP returned no multipliers")
    w = w / total
    while sum_up(w.tolist()) > 1.0:
        w = w * (1.0 - 4.0 * UNIT)
    return w


def _weights(p: ArrayLike | None, s: int) -> tuple[np.ndarray, str]:
    if p is None:
        return np.full(s, 1.0 / s), "uniform"
    pv = probabilities(p)
    if pv.size != s:
        raise ParameterError(f"{pv.size} probabilities given for {s} categories (distances)")
    return pv, "frequencies"


def expected_distance_bounds(p: ArrayLike, matrix: ArrayLike, d: ArrayLike) -> tuple[float, float]:
    """``sum_x p_x sum_z M[x, z] d(x, z)`` for the doubles given, with a bound on
    the error of the computed value (pairwise sums by row, then :func:`math.fsum`).

    Parameters
    ----------
    p : array-like, shape (S,)
        Weights of the original categories.
    matrix : array-like, shape (S, S)
        The matrix M.
    d : array-like, shape (S, S)
        The distances.

    Returns
    -------
    tuple of float
        ``(value, error)``: D(M) and a bound on its rounding error.

    Examples
    --------
    >>> value, error = expected_distance_bounds([0.5, 0.5], [[0.75, 0.25], [0.25, 0.75]], [[0, 2.0], [2.0, 0]])
    >>> value, error < 1e-14
    (0.5, True)
    """
    pv = np.asarray(p, dtype=float)
    terms = (pv[:, None] * np.asarray(matrix, dtype=float)) * np.asarray(d, dtype=float)
    rows = pairwise_sum(terms)
    value = math.fsum(rows.tolist())
    size = float(np.abs(terms).sum())
    return value, float(rounding_bound(size, pairwise_terms(terms.shape[1]) + 2))


def invariance_error(p: ArrayLike, matrix: ArrayLike) -> float:
    """``max_z |sum_x p_x M[x, z] - p_z|``: how far the stored doubles are from keeping p
    (each column's sum exact to rounding, :func:`math.fsum`).

    Parameters
    ----------
    p : array-like, shape (S,)
        The frequencies the design keeps.
    matrix : array-like, shape (S, S)
        The matrix M.

    Returns
    -------
    float
        The largest deviation of a released frequency from p.

    Examples
    --------
    >>> invariance_error([0.5, 0.5], [[0.75, 0.25], [0.25, 0.75]])
    0.0
    >>> round(invariance_error([0.8, 0.2], [[0.75, 0.25], [0.25, 0.75]]), 12)
    0.15
    """
    pv = np.asarray(p, dtype=float)
    terms = pv[:, None] * np.asarray(matrix, dtype=float)
    return max(abs(math.fsum([*terms[:, z].tolist(), -float(pv[z])])) for z in range(pv.size))


def worst_distance_bounds(matrix: ArrayLike, d: ArrayLike) -> tuple[float, float]:
    """``max_x sum_z M[x, z] d(x, z)`` (the largest expected distance from one category) for
    the doubles given, with a bound on the error of the computed value.

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        The matrix M.
    d : array-like, shape (S, S)
        The distances.

    Returns
    -------
    tuple of float
        ``(value, error)``: the largest row's expected distance and a bound on its rounding error.

    Examples
    --------
    >>> value, error = worst_distance_bounds([[0.75, 0.25], [0.5, 0.5]], [[0, 2.0], [2.0, 0]])
    >>> value, error < 1e-14
    (1.0, True)
    """
    terms = np.asarray(matrix, dtype=float) * np.asarray(d, dtype=float)
    rows = pairwise_sum(terms)
    errors = rounding_bound(np.abs(terms).sum(axis=1), pairwise_terms(terms.shape[1]))
    return float(rows.max()), float(np.max(errors))


def exact_bounds(p: ArrayLike, d: ArrayLike, epsilon: float, y: ArrayLike,
                 matrix: ArrayLike, worst: bool = False, v: ArrayLike | None = None) -> tuple[float, float]:
    """The dual lower bound of :func:`distance_dual_bound` and the expected distance of
    ``matrix`` (``worst``: its largest expected distance from one category), both in exact
    rational arithmetic on the doubles (rounded outward to doubles).

    For large epsilon the objective is of the order ``e^-eps d_max`` while the
    floating bounds carry a rounding allowance of about ``1e-15 d_max`` (the
    column sums ``g_z`` cancel terms of the size of ``p_x d(x, z)``), so only
    exact sums can certify a relative gap.  O(S^2) rational operations.

    Parameters
    ----------
    p : array-like, shape (S,)
        Weights of the original categories.
    d : array-like, shape (S, S)
        The distances.
    epsilon : float
        The budget.
    y : array-like, shape (S,)
        Any vector (e.g. the LP's dual values).
    matrix : array-like, shape (S, S)
        The stored matrix.
    worst : bool
        Bound the largest expected distance from one category instead of the average.
    v : array-like, shape (S,), optional
        The invariance constraints' multipliers (:func:`distance_dual_bound`): the lower bound
        then covers the invariant matrices only.

    Returns
    -------
    tuple of float
        ``(lower, upper)``: the dual bound rounded down, the matrix's distance rounded up.

    Examples
    --------
    >>> exact_bounds([0.5, 0.5], [[0, 1.0], [1.0, 0]], 1.0, [0.1, 0.1], [[0.75, 0.25], [0.25, 0.75]])
    (0.2, 0.25)
    """
    pv = [Fraction(float(x)) for x in np.asarray(p, dtype=float)]
    yv = [Fraction(float(x)) for x in np.asarray(y, dtype=float)]
    vv = [Fraction(0)] * len(pv) if v is None else [Fraction(float(x)) for x in np.asarray(v, dtype=float)]
    dm = np.asarray(d, dtype=float)
    mm = np.asarray(matrix, dtype=float)
    s = len(pv)
    t1 = Fraction(expm1_upper(epsilon))
    top: Fraction | None = None
    moved = [Fraction(0)] * s
    for z in range(s):
        g = Fraction(0)
        for x in range(s):
            dxz = Fraction(float(dm[x, z]))
            t = yv[x] + pv[x] * vv[z] - pv[x] * dxz
            g += t + t1 * t if t > 0 else t
            if mm[x, z]:
                moved[x] += Fraction(float(mm[x, z])) * dxz
        top = g if top is None or g > top else top
    assert top is not None  # every output's g was computed (s >= 1)
    lower = sum(yv, Fraction(0)) + sum((pz * vz for pz, vz in zip(pv, vv)), Fraction(0)) - max(top, Fraction(0))
    upper = max(moved) if worst else sum((px * mx for px, mx in zip(pv, moved)), Fraction(0))
    return float_below(lower), float_above(upper)


def distance_dual_bound(p: ArrayLike, d: ArrayLike, epsilon: float, y: ArrayLike,
                        v: ArrayLike | None = None) -> tuple[float, float]:
    """A lower bound on the expected distance of every epsilon-DP matrix, from any y.

    With ``G`` an upper bound on ``max_z g_z(y)``, ``g_z(y) = sum_x h(y_x - p_x d(x, z))``
    and ``h(v) = v + (e^eps - 1) max(v, 0)`` (module docstring), ``y - (G / S) 1``
    is dual feasible (h has slope >= 1), so for every epsilon-DP M,
    ``D(M) >= sum(y) - max(G, 0)``.  Each ``g_z`` is evaluated with a bound on
    its rounding, with ``e^eps - 1`` rounded up; the sum is rounded down.

    Proof of the bound, for any epsilon-DP M with rows summing to 1 and column
    floors ``lo_z``:  ``D(M) - sum(y) = -sum_z sum_x M[x, z] v[x, z]`` with
    ``v = y_x - a[x, z]``, and ``sum_x M[x, z] v[x, z] <= lo_z g_z(y)`` because
    ``lo_z <= M[x, z] <= e^eps lo_z``.

    With ``v`` (multipliers of the invariance constraints ``sum_x p_x M[x, z] = p_z``), the
    bound holds for every epsilon-DP matrix that is *invariant* (``p M = p``):
    ``g_z`` sums ``h(y_x + p_x v_z - a[x, z])`` and the bound is ``sum(y) + sum(p v) - max(G, 0)``.
    Proof: for such an M, ``sum(y) + sum_z p_z v_z - D(M) = sum_{x, z} M[x, z] t[x, z]`` with
    ``t = y_x + p_x v_z - a[x, z]`` (rows sum to 1, and ``p_z = sum_x p_x M[x, z]``), and
    ``sum_x M[x, z] t[x, z] <= lo_z g_z <= lo_z max(G, 0)`` as above, with ``sum_z lo_z <= 1``.

    Parameters
    ----------
    p : array-like, shape (S,)
        Weights (probabilities, as given).
    d : array-like, shape (S, S)
        Distances.
    epsilon : float
        The budget.
    y : array-like, shape (S,)
        Any vector (e.g. an LP's dual values).
    v : array-like, shape (S,), optional
        Any vector (the invariance constraints' dual values): the bound then covers the
        invariant matrices only.

    Returns
    -------
    bound : float
        ``D(M) >= bound`` for every epsilon-DP M (invariant, with ``v``).
    violation : float
        ``max_z g_z(y)`` as computed (positive: y was not dual feasible).

    Examples
    --------
    >>> d = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> bound, _ = distance_dual_bound([0.5, 0.5], d, 1.0, [0.0, 0.0])
    >>> bound == 0.0
    True
    >>> q = 1 / (1 + math.e)                       # S = 2: the optimum moves with probability 1/(1 + e)
    >>> bound, _ = distance_dual_bound([0.5, 0.5], d, 1.0, [q / 2, q / 2])
    >>> bound <= q
    True

    An invariant matrix of S = 2 with p = (1/2, 1/2) is symmetric; the bound covers it:

    >>> bound, _ = distance_dual_bound([0.5, 0.5], d, 1.0, [q / 2, q / 2], [0.0, 0.0])
    >>> bound <= q
    True
    """
    pv = np.asarray(p, dtype=float)
    dm = np.asarray(d, dtype=float)
    yv = np.asarray(y, dtype=float)
    s = pv.size
    t1 = expm1_upper(epsilon)
    a = pv[:, None] * dm
    t = yv[:, None] - a
    size = np.abs(yv)[:, None] + a
    shift: list[float] = []
    if v is not None:
        pvz = pv[:, None] * np.asarray(v, dtype=float)[None, :]     # p_x v_z, one rounding each
        t = t + pvz
        size = size + 2.0 * np.abs(pvz)
        products = pv * np.asarray(v, dtype=float)                  # p_z v_z, one rounding each
        shift = [*(-products).tolist(), float(np.abs(products).sum()) * 4.0 * UNIT]
    near = t > -4.0 * UNIT * size                  # positive, or within its rounding of 0
    h = t + t1 * np.maximum(t, 0.0)
    g = pairwise_sum(h.T)
    mag = pairwise_sum((size * (1.0 + t1 * near)).T)
    worst = float(np.max(g + rounding_bound(mag, pairwise_terms(s))))
    bound = -sum_up([*(-yv).tolist(), *shift, max(worst, 0.0)])
    return bound, float(g.max())


# ---------------------------------------------------------------------------
# The LP
# ---------------------------------------------------------------------------

def _restricted_lp(a: np.ndarray, t1: float, cols: np.ndarray, xs: np.ndarray, zs: np.ndarray,
                   worst: bool = False, invariant: np.ndarray | None = None) -> Any:
    """The LP with floors for the outputs ``cols`` and excesses for the pairs (xs, zs).

    ``worst``: ``a`` holds each row's distances, and the LP minimises a bound ``t`` on every
    row's expected distance ``sum_z M[x, z] a[x, z]`` (one more variable, S more rows).
    ``invariant``: the frequencies p that the released law keeps, ``sum_x p_x M[x, z] = p_z``
    for every output z (``lo_z + sum_x p_x u[x, z] = p_z``: one more equality per output; every
    output must be a candidate)."""
    s = a.shape[0]
    m, k = cols.size, xs.size
    extra = int(worst)
    pos = np.full(s, -1, dtype=np.intp)
    pos[cols] = np.arange(m)
    if worst:
        cost = np.concatenate([np.zeros(m + k), [1.0]])
    else:
        cost = np.concatenate([a[:, cols].sum(axis=0), a[xs, zs]])
    eq_rows = np.concatenate([np.repeat(np.arange(s), m), xs])
    eq_cols = np.concatenate([np.tile(np.arange(m), s), m + np.arange(k)])
    eq_vals = np.ones(s * m + k)
    b_eq = np.ones(s)
    if invariant is not None:
        eq_rows = np.concatenate([eq_rows, s + np.arange(m), s + pos[zs]])
        eq_cols = np.concatenate([eq_cols, np.arange(m), m + np.arange(k)])
        eq_vals = np.concatenate([eq_vals, np.ones(m), invariant[xs]])
        b_eq = np.concatenate([b_eq, invariant[cols]])
    a_eq = sp.csr_matrix((eq_vals, (eq_rows, eq_cols)), shape=(b_eq.size, m + k + extra))
    idx = np.arange(k)
    ub_rows = [idx, idx]
    ub_cols = [m + idx, pos[zs]]
    ub_vals = [np.ones(k), np.full(k, -t1)]
    if worst:                   # sum_z a[x, z] (lo_z + u[x, z]) - t <= 0, one row per x
        ub_rows += [k + np.repeat(np.arange(s), m), k + xs, k + np.arange(s)]
        ub_cols += [np.tile(np.arange(m), s), m + idx, np.full(s, m + k)]
        ub_vals += [a[:, cols].ravel(), a[xs, zs], -np.ones(s)]
    a_ub = sp.csr_matrix((np.concatenate(ub_vals), (np.concatenate(ub_rows), np.concatenate(ub_cols))),
                         shape=(k + extra * s, m + k + extra))
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(k + extra * s), A_eq=a_eq, b_eq=b_eq, bounds=(0, None),
                  method="highs", options={"primal_feasibility_tolerance": LP_TOLERANCE,
                                           "dual_feasibility_tolerance": LP_TOLERANCE})
    if res.status != 0:  # pragma: no cover - the LP is feasible (lo = 1/m, or lo = p when invariant) and bounded
        raise ParameterError(f"the distance LP failed: {res.message}")
    return res


def _spread(d: np.ndarray, count: int) -> np.ndarray:
    """``count`` outputs spread over the categories: the medoid, then farthest-point sampling."""
    first = int(np.argmin(d.sum(axis=1)))
    chosen = [first]
    gap = d[first].copy()
    for _ in range(count - 1):
        nxt = int(np.argmax(gap))
        if gap[nxt] <= 0:
            break
        chosen.append(nxt)
        np.minimum(gap, d[nxt], out=gap)
    return np.array(chosen, dtype=np.intp)


def _solve(a: np.ndarray, d: np.ndarray, t1: float, full: bool, worst: bool = False,
           invariant: np.ndarray | None = None) -> tuple[np.ndarray, tuple, np.ndarray, np.ndarray | None, dict]:
    """Solve the (scaled) LP; returns the floors (S,), the pairs and their excesses, the duals
    (y, followed for an ``invariant`` LP by the invariance constraints' v), the weights the dual
    prices the outputs with (p; for ``worst``, the multipliers of the rows' bounds) and statistics."""
    s = a.shape[0]
    incol = np.zeros(s, dtype=bool)
    pair = np.zeros((s, s), dtype=bool)
    if full:
        incol[:] = True
        pair[:] = True
    else:
        incol[_spread(d, min(INITIAL_OUTPUTS, s))] = True
    rounds = solves = 0
    simplex = 0
    while True:
        cols = np.flatnonzero(incol)
        if not full:
            k = min(NEAREST, cols.size)
            near = np.argpartition(d[:, cols], k - 1, axis=1)[:, :k]
            pair[np.arange(s)[:, None], cols[near]] = True
        xs, zs = np.nonzero(pair)
        res = _restricted_lp(a, t1, cols, xs, zs, worst, invariant)
        solves += 1
        simplex += int(res.nit)
        y = np.asarray(res.eqlin.marginals, dtype=float)
        weights = np.maximum(-np.asarray(res.ineqlin.marginals[xs.size:], dtype=float), 0.0) if worst else None
        if full:
            break
        v = y[:, None] - (a if weights is None else weights[:, None] * a)  # (never invariant: that LP is full)
        g = (v + t1 * np.maximum(v, 0.0)).sum(axis=0)
        violated = g > 1e-13 * (1.0 + np.abs(y).sum())
        fresh = violated & ~incol
        if fresh.any():
            used = int(np.count_nonzero(res.x[: cols.size] > 0))
            batch = max(MIN_BATCH, math.ceil(BATCH_PER_USED * used))
            cand = np.flatnonzero(fresh)
            if cand.size > batch:
                cand = cand[np.argsort(-g[cand], kind="stable")[:batch]]
            fresh = np.zeros(s, dtype=bool)
            fresh[cand] = True
        new_pairs = (v > 0) & ~pair & (violated & (incol | fresh))[None, :]
        rounds += 1
        if not (fresh.any() or new_pairs.any()) or rounds >= MAX_ROUNDS:
            break
        incol |= fresh
        pair |= new_pairs
    m = cols.size
    lo = np.zeros(s)
    lo[cols] = np.maximum(res.x[:m], 0.0)
    u = np.clip(res.x[m:m + xs.size], 0.0, t1 * lo[zs])
    stats = {"solver": "full" if full else "column_generation", "lp_solves": solves, "simplex_iterations": simplex,
             "candidate_outputs": int(m), "excess_pairs": int(xs.size)}
    return lo, (xs, zs, u), y, weights, stats


def _assemble(lo: np.ndarray, pairs: tuple, t1: float, d: np.ndarray) -> np.ndarray:
    """The matrix from floors and excesses, each row brought to sum 1 within its bounds
    (deficits filled nearest-first up to ``e^eps lo``, surpluses taken farthest-first down to ``lo``)."""
    xs, zs, u = pairs
    s = lo.size
    m = np.repeat(lo[None, :], s, axis=0)
    m[xs, zs] += u
    used = lo > 0
    cap = lo + t1 * lo
    for x in np.flatnonzero(m.sum(axis=1) != 1.0):
        r = 1.0 - math.fsum(m[x].tolist())
        if r == 0.0:
            continue
        order = np.argsort(d[x] if r > 0 else -d[x], kind="stable")
        order = order[used[order]]
        room = (cap[order] - m[x, order]) if r > 0 else (m[x, order] - lo[order])
        room = np.maximum(room, 0.0)
        take = np.minimum(room, np.maximum(abs(r) - np.concatenate([[0.0], np.cumsum(room)[:-1]]), 0.0))
        m[x, order] += take if r > 0 else -take
    return m


def within_engine_law(matrix: np.ndarray, epsilon: float, p: np.ndarray) -> np.ndarray:
    """The matrix, mixed if need be with a little of the matrix whose rows are all ``p``, so that the law
    the engine realises from it (:func:`pramkit.privacy.law.realised_law`, in the form the engine will
    draw it: a matrix whose rows have equal off-diagonal entries, every 2 x 2 one among them, is drawn
    as form (8), whose units :func:`within_realised_budget` does not model) is within the budget.

    Rows equal to p are 0-DP and keep p invariant, so each mixture moves every column's ratio toward 1
    and keeps ``p M = p``; the share mixed in (at most 1e-7) is the smallest of a few that suffices.

    Parameters
    ----------
    matrix : numpy.ndarray
        A design's matrix, within the budget in its doubles.
    epsilon : float
        The budget.
    p : numpy.ndarray
        The weights (p, or uniform).

    Returns
    -------
    numpy.ndarray
        ``matrix`` itself when its realised law is within the budget, else the first mixture that is.

    Examples
    --------
    >>> m = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> within_engine_law(m, math.log(3), np.array([0.5, 0.5])) is m
    True
    """
    from pramkit.privacy.epsilon import REALISED_SLACK
    from pramkit.privacy.law import realised_law

    allowed = epsilon * (1.0 + REALISED_SLACK / 2.0)
    labels = tuple(range(matrix.shape[0]))
    candidate = matrix
    for share in (0.0, 1e-13, 1e-11, 1e-9, 1e-7):
        if share:
            candidate = (1.0 - share) * matrix + share * p[None, :]
            candidate /= candidate.sum(axis=1, keepdims=True)
        if realised_law(PramMatrix(candidate, labels)).epsilon <= allowed:
            return candidate
    return candidate  # the design's check of its realised epsilon refuses it


def dp_min_distance(p: ArrayLike | None, epsilon: float, distances: Distances | str, *,
                    categories: Sequence[Label] | None = None, solver: str = "auto",
                    objective: str = "average", invariant: bool = False) -> PramMatrix:
    """The epsilon-DP matrix that moves values the least expected distance.

    Solves the LP of the module docstring to a certified optimum (Bordenabe,
    Chatzikokolakis and Palamidessi 2014, with pure epsilon-DP, Shlomo and
    Skinner 2012, as the constraint).  ``objective="worst"`` minimises instead
    the largest expected distance from any one category, ``max_x sum_z M[x, z] d(x, z)``
    (one more variable bounding every row's; reads no frequencies).  By LP
    duality (a minimax over the simplex) its optimum is the average objective's
    at the least favourable weights, which the LP's multipliers of the row bounds
    are: the certificate's lower bound is :func:`distance_dual_bound` at those
    weights (normalised to sum at most 1), valid because
    ``max_x D_x(M) >= sum_x w_x D_x(M)``.

    ``invariant=True`` adds ``p M = p``: the released law of the variable is p itself, so
    that the released file's counts estimate the original's as they are (invariant PRAM,
    Gouweleeuw et al. 1998, here with an epsilon-DP matrix and p read through the ledger).
    Every output keeps its share of the records, so the design cannot collapse onto a few
    central categories as the plain optimum does for small epsilon: an ordinal variable of
    many values keeps them all, each record moving to a nearby one.  The constraint is
    feasible for every p and epsilon (every row equal to p is 0-DP and invariant); the whole
    LP is solved at once (S at most :data:`INVARIANT_MAX`), its certificate bounds the
    invariant epsilon-DP matrices (:func:`distance_dual_bound` with the invariance
    constraints' multipliers), and ``invariance_error`` states ``max_z |(p M)_z - p_z|``
    for the stored doubles.

    Parameters
    ----------
    p : array-like of shape (S,), or None
        The frequencies of the categories.  ``None``: minimise the average over
        categories of the distance moved (uniform weights; no frequencies read).
    epsilon : float
        The budget; the stored matrix's exact epsilon is at most this.
    distances : Distances or str
        Distances between the categories (``"ordinal"`` or a CSV path are read
        by :func:`pramkit.distances.read_distances` for ``categories``).
    categories : sequence of labels, optional
        The variable's categories (default: those of ``distances``); the
        distances are reordered to them.
    solver : {"auto", "full", "columns"}
        One LP, column generation, or the first for ``S <= FULL_LP_MAX``
        (``WORST_FULL_LP_MAX`` for the worst case).
    objective : {"average", "worst"}
        The expected distance under p (or the uniform average), or the largest
        expected distance from one category (``p`` must be ``None``).
    invariant : bool
        Keep the released law equal to p (``p M = p``; p required, objective ``"average"``).

    Returns
    -------
    PramMatrix
        Provenance: objective ``expected_distance`` or ``worst_case_distance``
        (in ``distances.unit``), and a certificate with the dual lower bound,
        the upper bound, the certified gap and tolerance, ``optimal``, both
        distances, the mutual information (nats) and which outputs are used.

    Raises
    ------
    ParameterError
        If epsilon is out of range or above :data:`MAX_LP_EPSILON`, ``solver`` or
        ``objective`` is unknown, p is given with ``objective="worst"``, a distance spec
        comes without ``categories``, p does not match the distances, there are fewer
        than two categories or more than :data:`MAX_CATEGORIES`, or the LP fails.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> d = ordinal_distances(["0-17", "18-34", "35-64", "65+"])
    >>> m = dp_min_distance([0.2, 0.3, 0.35, 0.15], 1.0, d)
    >>> m.epsilon <= 1.0, m.provenance.certificate["optimal"]
    (True, True)
    >>> cert = m.provenance.certificate
    >>> cert["lower_bound"] <= m.provenance.objective <= cert["upper_bound"]
    True
    >>> w = dp_min_distance(None, 1.0, d, objective="worst").provenance     # least largest distance
    >>> u = dp_min_distance(None, 1.0, d).provenance                        # least uniform average
    >>> w.certificate["optimal"], u.objective <= w.objective <= u.certificate["worst_case_distance"]
    (True, True)

    The invariant design keeps p as the released law, at a larger distance moved:

    >>> p = np.array([0.2, 0.3, 0.35, 0.15])
    >>> inv = dp_min_distance(p, 1.0, d, invariant=True)
    >>> bool(np.allclose(p @ inv.matrix, p, atol=1e-9)), inv.provenance.certificate["optimal"]
    (True, True)
    >>> inv.provenance.objective >= m.provenance.objective
    True
    """
    start = time.perf_counter()
    e = check_epsilon(epsilon)
    dist = _design_distances(distances, categories)
    s = dist.size
    _check_distance_request(s, e, solver, objective, p is not None, invariant)
    worst = objective == "worst"
    pv, weights = _weights(p, s)
    d = dist.matrix
    a = d if worst else pv[:, None] * d
    scale = float(a.max())
    if not scale > 0:   # pragma: no cover - S >= 2 with positive distances and some p > 0
        raise ParameterError("every weighted distance is 0")
    t1 = math.expm1(e)
    full = invariant or solver == "full" or (solver == "auto" and s <= (WORST_FULL_LP_MAX if worst else FULL_LP_MAX))
    lo, pairs, duals, multipliers, stats = _solve(a / scale, d, t1, full, worst, pv if invariant else None)
    design = _assemble(lo, pairs, t1, d)
    matrix = within_engine_law(within_realised_budget(design, e), e, pv)
    bound_p = pv if multipliers is None else _at_most_one(multipliers)
    y = duals[:s] * scale
    v = duals[s:] * scale if invariant else None
    certified = _certify_distance(pv, bound_p, d, e, y, v, matrix, worst, dist.max)
    certificate = _distance_certificate(certified, objective, dist.unit, pv, matrix, design, y,
                                        bound_p if worst else None, v, stats)
    provenance = Provenance(
        method="dp_min_distance",
        parameters={"epsilon": e, "p": None if p is None else pv.tolist(), "weights": weights,
                    "objective": objective, "distances": dist.to_dict(), **({"invariant": True} if invariant else {})},
        objective=certified.value,
        objective_name="worst_case_distance" if worst else "expected_distance",
        certificate=certificate,
        seconds=time.perf_counter() - start,
    )
    return PramMatrix(matrix, dist.categories, provenance)


def _design_distances(distances: Distances | str, categories: Sequence[Label] | None) -> Distances:
    """The distances of :func:`dp_min_distance`: ``distances`` itself, or the spec read for ``categories``.

    Parameters
    ----------
    distances : Distances or str
        A :class:`~pramkit.distances.Distances`, or a spec (``"ordinal"``, a CSV path).
    categories : sequence of labels, optional
        The variable's categories; required with a spec, and a :class:`~pramkit.distances.Distances`
        given with them is reordered to them.

    Returns
    -------
    Distances

    Raises
    ------
    ParameterError
        A spec comes without ``categories`` (and as :func:`pramkit.distances.read_distances`).
    """
    if isinstance(distances, Distances) and categories is None:
        return distances
    if categories is None:
        raise ParameterError("give the categories with a distance spec (or pass a Distances object)")
    return read_distances(distances, categories)


def _check_distance_request(s: int, e: float, solver: str, objective: str, p_given: bool, invariant: bool) -> None:
    """Refuse a request :func:`dp_min_distance` does not solve, in the order it checks them.

    Parameters
    ----------
    s : int
        The number of categories.
    e : float
        The budget, already checked by :func:`pramkit.design.dp.optimal.check_epsilon`.
    solver, objective : str
        As :func:`dp_min_distance`.
    p_given : bool
        Whether frequencies p were given.
    invariant : bool
        As :func:`dp_min_distance`.

    Raises
    ------
    ParameterError
        As :func:`dp_min_distance` (every check but epsilon's range and p's values).
    """
    if s < 2:
        raise ParameterError("a DP design needs at least two categories")
    if s > MAX_CATEGORIES:
        raise ParameterError(f"the distance LP has S^2 = {s * s} variables; S = {s} is above {MAX_CATEGORIES}: use "
                             "a metric-DP mechanism (pramkit.design.metric.mechanisms) or group the categories")
    if e > MAX_LP_EPSILON:
        raise ParameterError(f"epsilon {e:g} is above {MAX_LP_EPSILON:g} for the distance LP: e^epsilon makes it "
                             "ill-conditioned, and the optimum is within e^-epsilon of keeping every value")
    if solver not in ("auto", "full", "columns"):
        raise ParameterError(f"solver must be 'auto', 'full' or 'columns', got {solver!r}")
    if objective not in DISTANCE_OBJECTIVES:
        raise ParameterError(f"objective must be one of {', '.join(DISTANCE_OBJECTIVES)}, got {objective!r}")
    if objective == "worst" and p_given:
        raise ParameterError("the worst-case objective reads no frequencies: give p=None")
    if invariant and not p_given:
        raise ParameterError("an invariant design keeps the frequencies p as the released law: give p "
                             "(distance weights 'frequencies')")
    if invariant and s > INVARIANT_MAX:
        raise ParameterError(f"the invariant distance LP is solved whole: S = {s} is above {INVARIANT_MAX}; "
                             "group the categories or leave out invariant")


class _Certified(NamedTuple):
    """The certified bounds of a design of :func:`dp_min_distance` (its certificate's numbers)."""

    value: float
    average: float
    largest: float
    lower: float
    upper: float
    gap: float
    tolerance: float
    violation: float
    arithmetic: str


def _certify_distance(pv: np.ndarray, bound_p: np.ndarray, d: np.ndarray, e: float, y: np.ndarray,
                      v: np.ndarray | None, matrix: np.ndarray, worst: bool, unit_scale: float) -> _Certified:
    """The stored matrix's objective bounded from above, the dual bound from below, and their gap.

    The bounds are computed in floating point with rounding bounds, and again in exact rationals
    when the gap exceeds the tolerance and S is at most :data:`EXACT_CERTIFICATE_MAX`.

    Parameters
    ----------
    pv : numpy.ndarray
        The weights of the average objective (p, or uniform).
    bound_p : numpy.ndarray
        The weights of the lower bound (``pv``, or the least favourable weights of the worst case).
    d : numpy.ndarray
        The distances (S x S).
    e : float
        The budget.
    y, v : numpy.ndarray
        The LP's duals, rescaled (``v`` of the invariance constraints, or None).
    matrix : numpy.ndarray
        The stored matrix.
    worst : bool
        The objective is the largest expected distance from one category.
    unit_scale : float
        The largest distance (the tolerance is measured in its units).

    Returns
    -------
    _Certified
    """
    average, average_rounding = expected_distance_bounds(pv, matrix, d)
    largest, largest_rounding = worst_distance_bounds(matrix, d)
    value, rounding = (largest, largest_rounding) if worst else (average, average_rounding)
    upper = value + rounding
    lower, violation = distance_dual_bound(bound_p, d, e, y, v)
    gap = max(upper - lower, 0.0)
    tolerance = unit_scale * certificate_tolerance(value / unit_scale)
    arithmetic = "floating point with rounding bounds"
    if gap > tolerance and len(d) <= EXACT_CERTIFICATE_MAX:
        lower, upper = exact_bounds(bound_p, d, e, y, matrix, worst, v)
        gap = max(upper - lower, 0.0)
        arithmetic = "exact rationals"
    return _Certified(value, average, largest, lower, upper, gap, tolerance, violation, arithmetic)


def _distance_certificate(certified: _Certified, objective: str, unit: str, pv: np.ndarray, matrix: np.ndarray,
                          design: np.ndarray, y: np.ndarray, least_favourable: np.ndarray | None,
                          v: np.ndarray | None, stats: dict[str, Any]) -> dict[str, Any]:
    """The certificate of a design of :func:`dp_min_distance` (its provenance's ``certificate``).

    Parameters
    ----------
    certified : _Certified
        The bounds (:func:`_certify_distance`).
    objective, unit : str
        The objective's name and the distances' unit.
    pv : numpy.ndarray
        The weights (p, or uniform).
    matrix, design : numpy.ndarray
        The stored matrix and the LP's, before it was brought within the budget.
    y : numpy.ndarray
        The dual of the rows.
    least_favourable : numpy.ndarray or None
        The worst case's least favourable weights; None for the average objective.
    v : numpy.ndarray or None
        The dual of the invariance constraints; None for a design that is not invariant.
    stats : dict
        The solver's statistics.

    Returns
    -------
    dict
        The certificate, its keys in the order written.
    """
    mi, mi_error = information_bounds(pv, matrix)
    used = np.flatnonzero(matrix.max(axis=0) > 0)
    return {
        "optimal": certified.gap <= certified.tolerance,
        "objective": objective,
        "expected_distance": certified.average,
        "worst_case_distance": certified.largest,
        "unit": unit,
        "lower_bound": certified.lower,
        "upper_bound": certified.upper,
        "certified_gap": certified.gap,
        "tolerance": certified.tolerance,
        "max_dual_violation": certified.violation,
        "arithmetic": certified.arithmetic,
        "dual_y": y.tolist(),
        **({"least_favourable_weights": least_favourable.tolist()} if least_favourable is not None else {}),
        **({"invariant": True, "dual_v": v.tolist(), "invariance_error": invariance_error(pv, matrix)}
           if v is not None else {}),
        "mutual_information_nats": mutual_information(pv, matrix),
        "information_lower_nats": mi - mi_error,
        "share_kept": float(pv @ np.diagonal(matrix)),
        "outputs_used": int(used.size),
        "budget_adjustment": float(np.abs(matrix - design).sum(axis=1).max()),
        **stats,
        "reference": REFERENCES,
    }


# ---------------------------------------------------------------------------
# Trade-off with information
# ---------------------------------------------------------------------------

def information_design(p: ArrayLike, epsilon: float, categories: Sequence[Label]) -> PramMatrix:
    """The information-optimal epsilon-DP design: over all matrices
    (:func:`pramkit.design.dp.general.dp_general`) for S up to its limit, form (8)
    (:func:`pramkit.design.dp.optimal.dp_optimal`) above.

    Program (7) of Ayed, Battiston and Camerlenghi: the end of the segment of
    :func:`distance_information_path` with weight 0.

    Parameters
    ----------
    p : array-like, shape (S,)
        The original proportions.
    epsilon : float
        The budget (nats).
    categories : sequence of labels
        The categories.

    Returns
    -------
    PramMatrix
        The design, its provenance holding I(X; Z) in nats and its certificate.

    Raises
    ------
    ParameterError
        If p or epsilon is invalid, or p and the categories differ in length.

    Examples
    --------
    Over all 4 x 4 matrices the optimum keeps more information than the best of form (8),
    and more than the least-distance design at the same budget:

    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> from pramkit.distances import ordinal_distances
    >>> p = [0.4, 0.3, 0.2, 0.1]
    >>> m = information_design(p, 1.0, ["a", "b", "c", "d"])
    >>> m.provenance.method, m.categories, m.epsilon <= 1.0, m.provenance.certificate["optimal"]
    ('dp_general', ('a', 'b', 'c', 'd'), True, True)
    >>> info = m.provenance.objective
    >>> info >= dp_optimal(p, 1.0).provenance.objective, round(info, 4)
    (True, 0.122)
    >>> info >= mutual_information(p, dp_min_distance(p, 1.0, ordinal_distances("abcd")).matrix)
    True
    """
    from pramkit.design.dp.general import MAX_CATEGORIES as GENERAL_MAX
    from pramkit.design.dp.general import dp_general
    from pramkit.design.dp.optimal import dp_optimal

    if len(categories) <= GENERAL_MAX:
        return dp_general(p, epsilon, categories=categories)
    return dp_optimal(p, epsilon, categories=categories)


def _mix(a: np.ndarray, b: np.ndarray, lam: float, epsilon: float) -> np.ndarray:
    """``(1 - lam) a + lam b`` (epsilon-DP when both are: each column constraint is linear),
    with the entries rounding (of the doubles, of the engine's units) put out of the budget raised."""
    return within_realised_budget((1.0 - lam) * a + lam * b, epsilon)


def distance_information_path(p: ArrayLike | None, epsilon: float, distances: Distances, *,
                              points: int = 11) -> list[dict[str, float]]:
    """Expected distance and information along the mixtures of the information-optimal
    (``weight 0``) and the distance-optimal (``weight 1``) epsilon-DP designs.

    Every mixture is epsilon-DP; D is linear and I convex in the weight (module
    docstring).  An achievable frontier, not a proven optimal one.

    Parameters
    ----------
    p : array-like, shape (S,), or None
        The original proportions (None: uniform weights for the distance design).
    epsilon : float
        The budget (nats).
    distances : Distances
        Distances between the categories.
    points : int
        Number of weights, evenly spaced from 0 to 1 (at least 2).

    Returns
    -------
    list of dict
        One per weight: ``weight``, ``expected_distance`` (the distances' unit) and
        ``mutual_information_nats``.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> path = distance_information_path([0.25] * 4, 1.0, ordinal_distances("abcd"), points=3)
    >>> [round(r["weight"], 1) for r in path], path[0]["expected_distance"] >= path[-1]["expected_distance"]
    ([0.0, 0.5, 1.0], True)
    """
    e = check_epsilon(epsilon)
    pv, _ = _weights(p, distances.size)
    near = dp_min_distance(p, e, distances).matrix
    info = information_design(pv, e, distances.categories).matrix
    out = []
    for lam in np.linspace(0.0, 1.0, max(int(points), 2)):
        m = _mix(info, near, float(lam), e)
        out.append({"weight": float(lam), "expected_distance": expected_distance_bounds(pv, m, distances.matrix)[0],
                    "mutual_information_nats": mutual_information(pv, m)})
    return out


def dp_distance_information(p: ArrayLike | None, epsilon: float, distances: Distances, *,
                            min_information: float) -> PramMatrix:
    """The mixture of the information- and distance-optimal designs with the least
    expected distance and at least ``min_information`` nats.

    Along the segment I is convex in the weight, so the set where it is at
    least ``min_information`` ends where I crosses it once (when the distance
    design itself has less); the crossing is found by bisection to 1e-12.  The
    result is epsilon-DP exactly; it is the best *mixture*, not a certified
    optimum over all matrices (module docstring).

    Parameters
    ----------
    p : array-like, shape (S,), or None
        The original proportions (None: uniform weights).
    epsilon : float
        The budget (nats).
    distances : Distances
        Distances between the categories.
    min_information : float
        The information to keep (nats).

    Returns
    -------
    PramMatrix
        The mixture, its certificate giving the weight, the information and the distance
        (``optimal`` False: a best mixture, not a proven optimum).

    Raises
    ------
    ParameterError
        If even the information-optimal design has less than ``min_information``.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> m = dp_distance_information([0.25] * 4, 2.0, ordinal_distances("abcd"), min_information=0.3)
    >>> m.provenance.certificate["mutual_information_nats"] >= 0.3, m.epsilon <= 2.0
    (True, True)
    """
    start = time.perf_counter()
    e = check_epsilon(epsilon)
    pv, weights = _weights(p, distances.size)
    near_m = dp_min_distance(p, e, distances)
    info_m = information_design(pv, e, distances.categories)
    near, info = near_m.matrix, info_m.matrix
    target = float(min_information)

    def info_at(lam: float) -> float:
        return mutual_information(pv, _mix(info, near, lam, e))

    top = info_at(0.0)
    if top < target:
        raise ParameterError(f"the information-optimal design ({info_m.provenance.method}) gives {top:.6g} nats "
                             f"at epsilon {e:g}, less than the {target:g} asked for")
    if info_at(1.0) >= target:
        lam = 1.0
    else:
        lo_w, hi_w = 0.0, 1.0
        while hi_w - lo_w > 1e-12:
            mid = 0.5 * (lo_w + hi_w)
            lo_w, hi_w = (mid, hi_w) if info_at(mid) >= target else (lo_w, mid)
        lam = lo_w
    matrix = _mix(info, near, lam, e)
    value, _ = expected_distance_bounds(pv, matrix, distances.matrix)
    certificate: dict[str, JSONValue] = {
        "optimal": False,
        "scope": "best mixture of the information- and distance-optimal designs",
        "weight_distance_design": lam,
        "mutual_information_nats": mutual_information(pv, matrix),
        "min_information_nats": target,
        "expected_distance": value,
        "unit": distances.unit,
        "distance_optimum": near_m.provenance.objective,
        "information_optimum_nats": top,
        "information_method": info_m.provenance.method,
    }
    provenance = Provenance(
        method="dp_distance_information",
        parameters={"epsilon": e, "p": None if p is None else pv.tolist(), "weights": weights,
                    "min_information_nats": target, "distances": distances.to_dict()},
        objective=value, objective_name="expected_distance", certificate=certificate,
        seconds=time.perf_counter() - start,
    )
    return PramMatrix(matrix, distances.categories, provenance)


# ---------------------------------------------------------------------------
# Metric DP: the optimal mechanism, with the spanner reduction
# ---------------------------------------------------------------------------

def greedy_spanner(distances: Distances, dilation: float) -> tuple[np.ndarray, np.ndarray]:
    """The greedy spanner of the categories: its edges (E, 2) and its shortest-path distances.

    Pairs are taken in increasing distance; a pair becomes an edge (weighted by its distance)
    when the graph so far joins it only by paths longer than ``dilation`` times its distance
    (Althöfer, Das, Dobkin, Joseph and Soares 1993; the construction of Bordenabe,
    Chatzikokolakis and Palamidessi 2014).  Every pair then has ``d_G(x, x') <= dilation d(x, x')``.
    O(S^2 log S) for the order, O(S^2) per edge to keep ``d_G``.

    Parameters
    ----------
    distances : Distances
        Distances between the categories.
    dilation : float
        The stretch allowed (at least 1).

    Returns
    -------
    tuple of numpy.ndarray
        The edges, shape (E, 2) with ``x < x'``, and the spanner's shortest-path
        distances d_G, shape (S, S).

    Examples
    --------
    >>> from pramkit.distances import euclidean_distances
    >>> d = euclidean_distances("abc", [[0, 0], [1, 0], [2, 0.1]])
    >>> edges, dg = greedy_spanner(d, 1.1)
    >>> edges.tolist(), bool(dg[0, 2] <= 1.1 * d.matrix[0, 2])        # a-c goes through b
    ([[0, 1], [1, 2]], True)
    """
    d = distances.matrix
    s = d.shape[0]
    dg = np.full((s, s), np.inf)
    np.fill_diagonal(dg, 0.0)
    first, second = np.triu_indices(s, 1)
    edges = []
    for k in np.argsort(d[first, second], kind="stable").tolist():
        x, y = int(first[k]), int(second[k])
        w = d[x, y]
        if dg[x, y] <= dilation * w:
            continue
        edges.append((x, y))
        np.minimum(dg, np.minimum(dg[:, [x]] + w + dg[[y], :], dg[:, [y]] + w + dg[[x], :]), out=dg)
    return np.array(edges, dtype=np.intp).reshape(-1, 2), dg


def _exp_up(values: np.ndarray) -> np.ndarray:
    """Doubles not below ``e^v`` for each v (decimal exp at 40 digits, one step up)."""
    ctx = Context(prec=40, rounding=ROUND_CEILING)
    cache: dict[float, float] = {}
    for v in set(values.tolist()):
        cache[v] = float_up(ctx.next_plus(Decimal(v).exp(ctx)))
    return np.array([cache[v] for v in values.tolist()])


def _metric_lp(a: np.ndarray, src: np.ndarray, dst: np.ndarray, factor: np.ndarray) -> Any:
    """min sum a[x, z] M[x, z] over row-stochastic M >= 0 with M[src, z] <= factor M[dst, z] for
    every directed edge and every z (variables M flattened by rows); HiGHS's interior point
    method with crossover (4 times faster than its dual simplex on a 10 x 10 grid)."""
    s = a.shape[0]
    k = src.size
    rows = np.repeat(np.arange(k * s), 2)
    z = np.tile(np.arange(s), k)
    cols = np.column_stack([np.repeat(src, s) * s + z, np.repeat(dst, s) * s + z]).ravel()
    vals = np.column_stack([np.ones(k * s), -np.repeat(factor, s)]).ravel()
    a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(k * s, s * s))
    a_eq = sp.csr_matrix((np.ones(s * s), (np.repeat(np.arange(s), s), np.arange(s * s))), shape=(s, s * s))
    res = linprog(a.ravel(), A_ub=a_ub, b_ub=np.zeros(k * s), A_eq=a_eq, b_eq=np.ones(s), bounds=(0, None),
                  method="highs-ipm", options={"primal_feasibility_tolerance": LP_TOLERANCE,
                                           "dual_feasibility_tolerance": LP_TOLERANCE})
    if res.status != 0:  # pragma: no cover - feasible (every row uniform) and bounded
        raise ParameterError(f"the metric-DP LP failed: {res.message}")
    return res


def metric_dual_bound(p: ArrayLike, d: ArrayLike, edges: np.ndarray, weights: ArrayLike, metric_epsilon: float,
                      y: ArrayLike, mu: ArrayLike) -> float:
    """A lower bound on the expected distance of every matrix with
    ``M[x, z] <= e^(eps_d w) M[x', z]`` on the directed ``edges`` (x, x') of weights w, from any
    y and any ``mu >= 0`` (shape (E, S); negative entries count as 0).

    Lagrangian duality: for such an M with rows summing to 1,
    ``D(M) >= D(M) + sum mu (M[x, z] - c M[x', z]) = sum_x y_x + sum M[x, z] r[x, z]
    >= sum_x (y_x + min_z r[x, z])``, with the reduced costs
    ``r = p_x d(x, z) - y_x + sum_{edges out of x} mu - sum_{edges into x} c mu``; c is rounded
    up (a larger c only lowers the bound), r is bounded below with its rounding and the sum
    rounded down.  With w the distances of the edges, every eps_d-metric-DP matrix qualifies.

    Parameters
    ----------
    p : array-like, shape (S,)
        Weights of the original categories.
    d : array-like, shape (S, S)
        The distances.
    edges : numpy.ndarray, shape (E, 2)
        The directed edges (x, x').
    weights : array-like, shape (E,)
        The edges' distances.
    metric_epsilon : float
        eps_d.
    y : array-like, shape (S,)
        Multipliers of the rows (any).
    mu : array-like, shape (E, S)
        Multipliers of the edge constraints.

    Returns
    -------
    float
        ``D(M) >= bound`` for every matrix satisfying the edge constraints.

    Examples
    --------
    >>> d = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> edges = np.array([[0, 1], [1, 0]])
    >>> a = 1 / (1 + math.e)                     # the optimum at eps_d = 1: M[x, x] = e / (1 + e)
    >>> bound = metric_dual_bound([0.5, 0.5], d, edges, [1.0, 1.0], 1.0, [a / 2, a / 2], np.zeros((2, 2)))
    >>> bound <= a / 2 * 2
    True
    """
    pv = np.asarray(p, dtype=float)
    dm = np.asarray(d, dtype=float)
    yv = np.asarray(y, dtype=float)
    m = np.maximum(np.asarray(mu, dtype=float), 0.0)
    e = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    factor = _exp_up(float(metric_epsilon) * np.asarray(weights, dtype=float))
    a = pv[:, None] * dm
    r = a - yv[:, None]
    size = a + np.abs(yv)[:, None]
    np.add.at(r, e[:, 0], m)
    np.add.at(r, e[:, 1], -factor[:, None] * m)
    np.add.at(size, e[:, 0], m)
    np.add.at(size, e[:, 1], factor[:, None] * m)
    degree = np.bincount(e.ravel(), minlength=pv.size)
    low = r - rounding_bound(size, int(degree.max(initial=0)) + 2) * 1.0000001
    return -sum_up([*(-yv).tolist(), *(-low.min(axis=1)).tolist()])


def _envelope(m: np.ndarray, dg: np.ndarray, rate: float) -> np.ndarray:
    """``E[x', z] = max_x e^(-rate d_G(x, x')) M[x, z]``, rows then brought to sum 1: every column
    of E is rate-Lipschitz in log over the metric d_G (triangle inequality), up to the
    normalisation."""
    s = m.shape[0]
    with np.errstate(divide="ignore"):
        logm = np.log(m)
    out = np.empty_like(m)
    for sl in [slice(i, min(i + 64, s)) for i in range(0, s, 64)]:
        out[sl] = (logm[None, :, :] - rate * dg[:, sl].T[:, :, None]).max(axis=1)
    out = np.exp(out)
    return out / out.sum(axis=1, keepdims=True)


def metric_min_distance(p: ArrayLike | None, metric_epsilon_: float, distances: Distances, *,
                        dilation: float = SPANNER_DILATION,
                        categories: Sequence[Label] | None = None) -> PramMatrix:
    """The eps_d-metric-DP matrix that moves values the least expected distance (Bordenabe,
    Chatzikokolakis and Palamidessi 2014), by LP with the spanner reduction.

    Metric DP asks ``M[x, z] <= e^(eps_d d(x, x')) M[x', z]`` for all x, x', z: S^3 rows.
    The reduction imposes it only on the edges of a graph G whose shortest paths give d
    (or approximate it), each edge at its own distance:

    * a path metric (ordinal steps, adjacency graphs: ``distances.edges``): d is G's
      shortest-path distance, so chaining the edge constraints along a shortest path
      gives every pair exactly -- the reduction loses nothing (2 E S rows);
    * other distances (centroids, tables): a greedy spanner (:func:`greedy_spanner`) with
      ``d_G <= dilation d``; the edge constraints at rate ``eps_d / dilation`` chain to
      ``e^(eps_d d_G / dilation) <= e^(eps_d d)``: eps_d-metric-DP, and optimal among the
      mechanisms that are (eps_d / dilation)-private for d_G -- an approximation.

    The stored matrix is then made exactly eps_d-metric-DP: the LP's solution, whose
    constraints hold only to the solver's tolerance, is raised to its envelope over d_G at a
    rate lowered by a margin that covers the renormalisation of the rows
    (:func:`_envelope`), and :func:`pramkit.privacy.metric.metric_epsilon` checks the stored
    doubles (exactly; over the edges for a path metric, over all pairs otherwise).

    Certificate: the expected distance of the stored matrix (upper bound, rounded up) and a
    lower bound on that of *every* eps_d-metric-DP matrix, :func:`metric_dual_bound` with the
    duals of the edge LP at rate eps_d (for a spanner, a second LP: the edge constraints at
    eps_d are implied by metric DP); ``optimal`` when their gap is within the tolerance of
    :func:`dp_min_distance`, and the ratio of the two.

    Parameters
    ----------
    p : array-like of shape (S,), or None
        Frequencies of the categories (``None``: the uniform average; no frequencies read).
    metric_epsilon_ : float
        eps_d, per unit of distance.
    distances : Distances
        Distances between the categories (a metric).
    dilation : float
        Dilation of the spanner (at least 1) for distances that are not a path metric.
    categories : sequence of labels, optional
        The variable's categories; the distances are reordered to them.

    Returns
    -------
    PramMatrix
        The mechanism, with a certificate: its verified metric epsilon
        (:func:`pramkit.privacy.metric.metric_certificate`), the bounds, the gap and ``optimal``.

    Raises
    ------
    ParameterError
        If there are fewer than two categories or more than :data:`METRIC_LP_MAX`, eps_d is out
        of range (:func:`pramkit.privacy.metric.check_metric`), the dilation is below 1, p does
        not match the distances, or the LP fails.

    Examples
    --------
    >>> from pramkit.distances import graph_distances
    >>> d = graph_distances("abcd", [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")])   # a ring
    >>> m = metric_min_distance(None, 0.7, d)
    >>> c = m.provenance.certificate
    >>> c["metric_dp_verified"], c["optimal"], c["reduction"]
    (True, True, 'path metric: the edges (exact)')
    """

    start = time.perf_counter()
    dist = distances if categories is None else distances.reorder(categories)
    s = dist.size
    if s < 2:
        raise ParameterError("a mechanism needs at least two categories")
    if s > METRIC_LP_MAX:
        raise ParameterError(f"the metric-DP LP has S^2 = {s * s} variables; S = {s} is above {METRIC_LP_MAX}: use the "
                             "exponential mechanism (pramkit.design.metric.mechanisms) or group the categories")
    eps_d = check_metric(metric_epsilon_, dist.max, "diameter")
    if not (isinstance(dilation, (int, float)) and math.isfinite(dilation) and dilation >= 1):
        raise ParameterError(f"dilation must be a number at least 1, got {dilation!r}")
    pv, weights = _weights(p, s)
    d = dist.matrix
    if dist.edges is not None:
        pairs, dg, rate = dist.edges, d, eps_d
        reduction = "path metric: the edges (exact)"
    else:
        pairs, dg = greedy_spanner(dist, float(dilation))
        rate = eps_d / float(dilation)
        reduction = f"greedy spanner, dilation {float(dilation):g}"
    src = np.concatenate([pairs[:, 0], pairs[:, 1]])
    dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
    w = d[src, dst]
    a = pv[:, None] * d
    scale = float(a.max())
    res = _metric_lp(a / scale, src, dst, np.exp(rate * w))
    solves = [res]
    if rate < eps_d:                         # the bound needs the edge LP at eps_d itself
        solves.append(_metric_lp(a / scale, src, dst, np.exp(eps_d * w)))
    bounded = solves[-1]
    lower = metric_dual_bound(pv, d, np.column_stack([src, dst]), w, eps_d, bounded.eqlin.marginals * scale,
                              -bounded.ineqlin.marginals.reshape(src.size, s) * scale)
    raw = np.clip(res.x.reshape(s, s), 0.0, None)
    raw[:, raw.max(axis=0) <= LP_TOLERANCE] = 0.0
    margin = 1e-12
    for _ in range(8):
        matrix = _envelope(raw, dg, rate * (1.0 - margin))
        check = metric_epsilon(matrix, dist)
        if check.value is None or check.value <= eps_d:
            break
        margin *= 16.0
    if check.value is None or check.value > eps_d:  # pragma: no cover - the margin grows to 3e-4
        raise ParameterError(f"could not bring the LP's matrix within metric epsilon {eps_d:g}")
    value, rounding = expected_distance_bounds(pv, matrix, d)
    upper = value + rounding
    gap = max(upper - lower, 0.0)
    tolerance = dist.max * certificate_tolerance(value / dist.max)
    certificate = {
        **metric_certificate(check, eps_d, dist.unit, METRIC_REFERENCES),
        "optimal": gap <= tolerance,
        "expected_distance": value,
        "lower_bound": lower,
        "upper_bound": upper,
        "certified_gap": gap,
        "tolerance": tolerance,
        "ratio_to_lower_bound": upper / lower if lower > 0 else math.inf,
        "lp_objective": float(res.fun) * scale,
        "reduction": reduction,
        "constraint_edges": int(pairs.shape[0]),
        "lp_rows": int(src.size * s),
        "lp_solves": len(solves),
        "rate_margin": margin,
        "share_kept": float(pv @ np.diagonal(matrix)),
        "outputs_used": int(np.count_nonzero(matrix.max(axis=0) > 0)),
        "pure_epsilon_bound": eps_d * dist.max,
    }
    provenance = Provenance(
        method="metric_min_distance",
        parameters={"metric_epsilon": eps_d, "p": None if p is None else pv.tolist(), "weights": weights,
                    "dilation": None if dist.edges is not None else float(dilation), "distances": dist.to_dict()},
        objective=value, objective_name="expected_distance", certificate=certificate,
        seconds=time.perf_counter() - start,
    )
    return PramMatrix(matrix, dist.categories, provenance)
