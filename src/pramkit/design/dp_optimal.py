"""Epsilon-DP PRAM of form (8) with maximal mutual information.

Ayed, Battiston and Camerlenghi, *An information theoretic approach to post
randomization methods under differential privacy* (sections 3-4 and appendix).
A matrix of form (8) keeps category k with probability ``q_k`` and otherwise
releases one of the other S - 1 categories uniformly.  It is alpha-DP iff the
pairwise constraints (10), written linearly as (12)-(17) (appendix 5.2, with
the sign of (15) corrected: ``1 - q_l <= e^a (S-1) q_k``), hold for every pair
of categories.  Program (7) maximises the convex f(q) = I(X; Z) over that
polytope, so the maximum is at a vertex (Proposition 3.1).

The exact method (proof in ``docs/design-dp.md``):

1. *Sorted reduction.*  For q sorted decreasingly the pairwise constraints
   reduce to the two largest values (12)-(13), the two smallest (14)-(15) and
   the largest against the smallest (16)-(17), plus ``0 <= q <= 1``.  Hence
   every vertex takes at most four values, in blocks ``(A, B..B, b..b, a)``
   with A and a single, and ``(A, B, b, a)`` is a vertex of a polytope in four
   variables whose vertices we enumerate exactly (:func:`vertex_patterns`).
   Proposition 3.2's list is the special case of small alpha.
2. *Assignment.*  Each pattern leaves to choose which category takes A, which
   takes a, and which of the others take B rather than b.  When that choice
   is small enough every assignment is evaluated (``search = "exhaustive"``).
   Otherwise (two middle levels, many categories) a branch and bound over
   every split (:mod:`pramkit.design.dp_split_bound`) finds the best one and
   proves it (``search = "branch_and_bound"``).  Either way every vertex of the
   polytope is covered, so the result is the global optimum.

The closed forms of section 3.2 (S = 2; symmetric M) are
:func:`binary_optimal_q` and :func:`symmetric_optimal_q`.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import xlogy

from pramkit.counts import count_frame
from pramkit.design.dp_split_bound import bound_split
from pramkit.errors import PramkitError
from pramkit.information import form8_objective, form8_row_terms
from pramkit.matrix import Label, PramMatrix, Provenance
from pramkit.privacy.epsilon import form8_matrix_epsilon
from pramkit.privacy.exact import (
    certificate_tolerance, eta_error, form8_within_budget, log_error, pairwise_sum, pairwise_terms, rounding_bound,
)
from pramkit.validate import epsilon as valid_epsilon
from pramkit.validate import probabilities

#: Largest epsilon accepted (e^epsilon must be a finite double).
MAX_EPSILON = 700.0
#: Values of a vertex pattern closer than this are the same level.
LEVEL_TOL = 1e-12
#: Feasibility tolerance on each normalised constraint.
FEASIBILITY_TOL = 1e-12
#: A pattern is searched exhaustively when (assignments x S) is at most this.
EXHAUSTIVE_BUDGET = 4_000_000
#: Objectives this close (relative) are ties, broken towards keeping the true value.
TIE_TOL = 1e-12
#: Entries of a candidate block evaluated at once (memory bound).
_CHUNK = 1 << 21


def check_epsilon(epsilon: Any) -> float:
    """epsilon as a float after checking it (:func:`pramkit.validate.epsilon`, at most :data:`MAX_EPSILON`)."""
    return valid_epsilon(epsilon, maximum=MAX_EPSILON)


def _check_size(s: Any) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 2:
        raise PramkitError(f"the number of categories S must be an integer >= 2, got {s!r}")
    return int(s)


# ---------------------------------------------------------------------------
# Closed forms (section 3.2)
# ---------------------------------------------------------------------------

def v(x: float, s: int) -> float:
    """``v_x = e^x / (e^x + S - 1)`` of Proposition 3.2 (``v_alpha``, ``v_-alpha``)."""
    return 1.0 / (1.0 + (s - 1) * math.exp(-x))


def binary_optimal_q(epsilon: float) -> float:
    """Section 3.2.1-3.2.2: for S = 2 the optimum over *all* 2 x 2 matrices
    (every one has form (8)) is the symmetric ``q = e^a / (1 + e^a)``, for
    every p (``1 - q`` is the other optimum, its mirror image)."""
    return v(check_epsilon(epsilon), 2)


def symmetric_interval(s: int, epsilon: float) -> tuple[float, float]:
    """Section 3.2.3: the symmetric q (all equal) is alpha-DP iff
    ``q`` lies in ``[v_-a, v_a]``, ``v_x = e^x / (S - 1 + e^x)``."""
    s, e = _check_size(s), check_epsilon(epsilon)
    return v(-e, s), v(e, s)


def symmetric_optimal_q(p: ArrayLike, epsilon: float) -> float:
    """Section 3.2.3: the best symmetric q is an end of :func:`symmetric_interval`.

    ``v_a`` is randomized response (:func:`pramkit.design.classic.randomized_response`);
    it is at least as good as ``v_-a`` for every p (both give the same I for S = 2).
    """
    pv = probabilities(p)
    lo, hi = symmetric_interval(pv.size, epsilon)
    f = form8_objective(pv, np.array([[hi] * pv.size, [lo] * pv.size]))
    return hi if f[0] >= f[1] else lo


# ---------------------------------------------------------------------------
# The feasible set (Fact 1, appendix 5.2)
# ---------------------------------------------------------------------------

def dp_constraints(s: int, epsilon: float, *, truthful: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The alpha-DP set of form (8) as explicit linear constraints ``C q <= b``.

    Fact 1 and appendix 5.2: for every pair k < l, with ``x = q_k``, ``y = q_l``,
    ``c = S - 1``, ``t = e^alpha``:

    - (12) ``c x + t y <= t``          and (13) ``c y + t x <= t``;
    - (14) ``-c t y - x <= -1``        and (15) ``-c t x - y <= -1``;
    - (16) ``t y - x <= t - 1``        and (17) ``t x - y <= t - 1`` (only for S >= 3);

    followed by the box ``0 <= q_k <= 1`` (2S rows) and, if ``truthful``, the
    rows ``-q_k <= -1/S``.  Hence ``3 S (S - 1) + 2 S`` rows for S >= 3.
    """
    s, e = _check_size(s), check_epsilon(epsilon)
    t, c = math.exp(e), s - 1
    pairs = np.array(list(itertools.combinations(range(s), 2)), dtype=np.intp).reshape(-1, 2)
    # coefficients of (x, y) and right-hand side of (12)-(17)
    pair_rows = [((c, t), t), ((t, c), t), ((-1.0, -c * t), -1.0), ((-c * t, -1.0), -1.0)]
    if s >= 3:
        pair_rows += [((-1.0, t), t - 1.0), ((t, -1.0), t - 1.0)]
    blocks, rhs = [], []
    for (ax, ay), r in pair_rows:
        block = np.zeros((len(pairs), s))
        block[np.arange(len(pairs)), pairs[:, 0]] = ax
        block[np.arange(len(pairs)), pairs[:, 1]] = ay
        blocks.append(block)
        rhs.append(np.full(len(pairs), r))
    blocks += [np.eye(s), -np.eye(s)]
    rhs += [np.ones(s), np.zeros(s)]
    if truthful:
        blocks.append(-np.eye(s))
        rhs.append(np.full(s, -1.0 / s))
    return np.vstack(blocks), np.concatenate(rhs)


def _sorted_violation(hi1: float, hi2: float, lo2: float, lo1: float, s: int, t: float, truthful: bool) -> float:
    """Largest normalised violation of the constraints, from the two largest
    (hi1 >= hi2) and the two smallest (lo1 <= lo2) keep probabilities: by the
    sorted reduction no other pair can bind (``docs/design-dp.md``, Lemma 1)."""
    c = s - 1
    viol = [
        (c * hi1 + t * hi2 - t) / max(c, t),     # (12)/(13), larger q first
        (t * hi1 + c * hi2 - t) / max(c, t),
        (1.0 - c * t * lo1 - lo2) / (c * t),     # (14)/(15)
        (1.0 - c * t * lo2 - lo1) / (c * t),
        hi1 - 1.0,
        -lo1,
    ]
    if s >= 3:
        viol.append((1.0 - lo1 - t * (1.0 - hi1)) / t)   # (16)/(17)
    if truthful:
        viol.append(1.0 / s - lo1)
    return float(max(viol))


def is_dp_feasible(q: ArrayLike, epsilon: float, *, truthful: bool = False, tol: float = FEASIBILITY_TOL) -> bool:
    """Whether form (8) with keep probabilities q is epsilon-DP, in O(S).

    Constraints (10) for all pairs are checked through the sorted reduction:
    only the two largest and the two smallest q, and the pair (largest,
    smallest), can be binding.  ``tol`` is the slack allowed on each
    constraint divided by its largest coefficient.
    """
    qv = np.asarray(q, dtype=float)
    if qv.ndim != 1 or qv.size < 2 or not np.all(np.isfinite(qv)):
        raise PramkitError("q must be a 1-D array of at least two finite keep probabilities")
    e = check_epsilon(epsilon)
    hi = -np.partition(-qv, 1)[:2]
    lo = np.partition(qv, 1)[:2]
    return _sorted_violation(hi[0], hi[1], lo[1], lo[0], qv.size, math.exp(e), truthful) <= tol


# ---------------------------------------------------------------------------
# Vertices of the sorted reduction
# ---------------------------------------------------------------------------

def _reduced_system(s: int, t: float, truthful: bool) -> tuple[np.ndarray, np.ndarray]:
    """Constraints on the block values (A, B, b, a) of a sorted q (fewer
    variables for S < 4): ordering, top pair, bottom pair, spread, box."""
    n = min(s, 4)
    c = s - 1
    e = np.eye(n)
    rows: list[tuple[np.ndarray, float]] = [(e[i + 1] - e[i], 0.0) for i in range(n - 1)]
    rows += [(c * e[0] + t * e[1], t), (t * e[0] + c * e[1], t)]                       # (12), (13)
    rows += [(-c * t * e[n - 1] - e[n - 2], -1.0), (-c * t * e[n - 2] - e[n - 1], -1.0)]  # (14), (15)
    if s >= 3:
        rows.append((t * e[0] - e[n - 1], t - 1.0))                                     # (16)/(17)
    rows += [(e[0], 1.0), (-e[n - 1], 0.0)]
    if truthful:
        rows.append((-e[n - 1], -1.0 / s))
    a = np.array([r[0] for r in rows])
    b = np.array([r[1] for r in rows])
    scale = np.maximum(np.abs(a).max(axis=1), np.abs(b))
    return a / scale[:, None], b / scale


def vertex_patterns(s: int, epsilon: float, *, truthful: bool = False) -> np.ndarray:
    """Every vertex of the DP polytope, sorted decreasingly, up to block sizes.

    Returns an array of shape (K, min(S, 4)): rows ``(A, B, b, a)`` for S >= 4
    (``(A, B, a)`` for S = 3, ``(A, a)`` for S = 2).  Every vertex of the
    feasible set is a permutation of ``(A, B, ..., B, b, ..., b, a)`` for one of
    these rows and some block sizes (``docs/design-dp.md``, Lemma 2); found by
    solving every square subsystem of active constraints of the reduced
    polytope and keeping the feasible solutions.
    """
    s, e = _check_size(s), check_epsilon(epsilon)
    a, b = _reduced_system(s, math.exp(e), truthful)
    n = a.shape[1]
    found = []
    for rows in itertools.combinations(range(len(a)), n):
        sub = a[list(rows)]
        if abs(np.linalg.det(sub)) < 1e-13:
            continue
        x = np.linalg.solve(sub, b[list(rows)])
        if np.all(a @ x - b <= 1e-11):
            found.append(np.clip(x, 0.0, 1.0))
    if not found:  # the polytope is never empty: v_-a, ..., v_-a is feasible
        raise AssertionError("no vertex found")  # pragma: no cover
    unique: list[np.ndarray] = []
    for x in found:
        if all(np.max(np.abs(x - u)) > 1e-10 for u in unique):
            unique.append(x)
    return np.array(sorted(unique, key=tuple))


# ---------------------------------------------------------------------------
# Assignment of a pattern to categories
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PatternSearch:
    """Best assignment of one vertex pattern.

    values: the pattern's sorted values
    best_q: best keep-probability vector with these values
    objective: f(best_q) in nats
    candidates: number of assignments scored
    exhaustive: every assignment was scored
    upper_bound: no arrangement of the pattern has an exact f above this
        (nats): the best score plus its rounding allowance if exhaustive, else
        the branch and bound's bound
    bound_nodes: branch-and-bound nodes explored (0 if exhaustive)
    closed: the bound is proved (False only if the branch and bound hit its node limit)
    """

    values: tuple[float, ...]
    best_q: np.ndarray
    objective: float
    candidates: int
    exhaustive: bool
    upper_bound: float | None = None
    bound_nodes: int = 0
    closed: bool = True


def _representatives(p: np.ndarray, exclude: int | None = None) -> np.ndarray:
    """One index per distinct value of p (categories with equal p are interchangeable)."""
    idx = np.arange(p.size) if exclude is None else np.delete(np.arange(p.size), exclude)
    _, first = np.unique(p[idx], return_index=True)
    return idx[np.sort(first)]


def _score_errors(p: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """A bound on the rounding error of ``form8_objective(p, qs)`` for each row
    of ``qs``: its sums over S terms are taken in unspecified order (``S - 1``
    roundings each), its released masses carry the error of W, and
    :func:`pramkit.privacy.exact.eta_error` carries that through ``m log m``."""
    s = p.size
    w, sigma, h = form8_row_terms(qs, s)
    big_w = (p * w).sum(axis=-1, keepdims=True)
    m = np.maximum(big_w + p * sigma, 0.0)
    dm = rounding_bound(big_w + p * (qs + w) + m, s)
    eta = xlogy(m, m)
    size = (p * (np.abs(h) + 1.0 - qs)).sum(axis=-1) + np.abs(eta).sum(axis=-1)
    return rounding_bound(size, s) + eta_error(m, dm).sum(axis=-1)


def verified_objective(p: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    """f(q) of equation (9) and a bound on its rounding error, for one q.

    The same formula as :func:`pramkit.information.form8_objective`, with every
    sum over S terms taken by :func:`math.fsum` (correctly rounded), so the
    error bound (:func:`pramkit.privacy.exact.rounding_bound`) does not grow
    with S: the exact f of the doubles p and q lies within ``value +- error``.

    Examples
    --------
    >>> value, error = verified_objective(np.array([0.5, 0.5]), np.array([0.75, 0.75]))
    >>> abs(value - (math.log(2) - 0.75 * math.log(4 / 3) - 0.25 * math.log(4))) <= error < 1e-13
    True
    """
    s = p.size
    w, sigma, h = form8_row_terms(q, s)
    big_w = math.fsum(p * w)
    m = np.maximum(big_w + p * sigma, 0.0)
    dm = rounding_bound(big_w + p * (q + w) + m)
    eta = xlogy(m, m)
    value = max(math.fsum(p * h) - math.fsum(eta), 0.0)
    size = float((p * (np.abs(h) + 1.0 - q)).sum() + np.abs(eta).sum())
    return value, float(rounding_bound(size)) + float(eta_error(m, dm).sum())


def _score_codes(p: np.ndarray, levels: np.ndarray, codes: np.ndarray) -> tuple[float, np.ndarray, float]:
    """Best of the candidates ``levels[codes[r]]`` (one row per candidate), and
    an upper bound on the exact f of every candidate (score plus rounding)."""
    best, best_q, upper = -math.inf, levels[codes[0]], -math.inf
    step = max(1, _CHUNK // p.size)
    for start in range(0, len(codes), step):
        qs = levels[codes[start:start + step]]
        vals = form8_objective(p, qs)
        upper = max(upper, float((vals + _score_errors(p, qs)).max()))
        i = int(np.argmax(vals))
        if vals[i] > best:
            best, best_q = float(vals[i]), qs[i]
    return best, best_q, upper


class _Levels:
    """Per-level constants of f for a pattern (section 3.1): with
    ``W = sum_z p_z w(q_z)``, ``f = sum_z p_z h(q_z) - sum_z eta(W + p_z sigma(q_z))``,
    ``w(q) = (1-q)/(S-1)``, ``sigma(q) = q - w(q)``, ``h(q) = q log q + (1-q) log w(q)``,
    ``eta(x) = x log x``."""

    def __init__(self, values: np.ndarray, s: int) -> None:
        self.q = values
        self.w, self.sigma, self.h = form8_row_terms(values, s)


def _eta_sum(m: np.ndarray) -> np.ndarray:
    """``sum_z m_z log m_z`` along the last axis, pairwise
    (:func:`pramkit.privacy.exact.pairwise_sum`); m >= 0 up to rounding."""
    m = np.maximum(m, 0.0)
    return pairwise_sum(xlogy(m, m))


def _singles_family(p: np.ndarray, lv: _Levels, fixed: list[tuple[int, int]], var: np.ndarray,
                    level: int, total: float) -> tuple[float, np.ndarray, float]:
    """Best of: the singletons ``fixed`` as given, one more singleton at
    ``level`` on each category of ``var`` in turn, every other category at
    level 1; and an upper bound on the exact f of all of them.

    Candidate j's f is ``lin_j - Phi(W_j) - corr_j`` with
    ``Phi(W) = sum_z eta(W + p_z sigma_1)`` (every category at level 1) and
    ``corr_j`` the exact change of the singletons' terms.  Phi is convex, so
    its tangent at the mean W bounds it from below and gives an upper bound on
    every candidate's f in O(1); candidates are scored exactly, in blocks, in
    decreasing order of that bound until the bound falls below the best
    score.  Bounds and scores are raised by their rounding allowances
    (``total`` is the exact sum of p, to rounding), so the upper bound holds
    for the exact f.  O(len(var) S) in the worst case, usually O(S)."""
    fixed_p = math.fsum(p[z] for z, _ in fixed)
    lin0 = math.fsum(lv.h[l] * p[z] for z, l in fixed)
    w0 = math.fsum(lv.w[l] * p[z] for z, l in fixed)
    pv = p[var]
    others = total - fixed_p - pv
    lin = lin0 + lv.h[level] * pv + lv.h[1] * others
    wv = w0 + lv.w[level] * pv + lv.w[1] * others
    d_others = rounding_bound(total + fixed_p + pv)
    d_lin = (rounding_bound(math.fsum(p[z] * (abs(lv.h[l]) + 1.0 - lv.q[l]) for z, l in fixed)
                            + (abs(lv.h[level]) + 1.0 - lv.q[level]) * pv + (abs(lv.h[1]) + 1.0 - lv.q[1]) * others
                            + np.abs(lin))
             + abs(lv.h[1]) * d_others)
    d_w = rounding_bound(wv + w0) + lv.w[1] * d_others
    base = p * lv.sigma[1]
    scale = p * (lv.q.max() + lv.w.max())          # rounding scale of every offset p_z sigma_z
    w_ref = float(wv.mean())
    arg = w_ref + base
    if np.all(arg > 0):
        d_arg = rounding_bound(abs(w_ref) + scale + arg)
        eta_ref = xlogy(arg, arg)
        slope_terms = 1.0 + np.log(arg)
        slope = math.fsum(slope_terms)
        err_phi = float(eta_error(arg, d_arg).sum() + rounding_bound(np.abs(eta_ref).sum()))
        err_slope = float(log_error(arg, d_arg).sum() + rounding_bound(np.abs(slope_terms).sum() + p.size))
        tangent = math.fsum(eta_ref) + slope * (wv - w_ref)
        err = (d_lin + err_phi + err_slope * np.abs(wv - w_ref) + abs(slope) * d_w
               + rounding_bound(np.abs(lin) + np.abs(tangent) + abs(slope) * np.abs(wv - w_ref)))
        corr = np.zeros(var.size)
        for z, offset in [(var, pv * lv.sigma[level]), *((z, p[z] * lv.sigma[l]) for z, l in fixed)]:
            for a, sign in ((wv + offset, 1.0), (wv + base[z], -1.0)):
                da = d_w + rounding_bound(np.abs(wv) + scale[z] + np.abs(a))
                corr = corr + sign * xlogy(a, a)
                err = err + eta_error(np.maximum(a, 0.0), da) + rounding_bound(np.abs(xlogy(a, a)))
        bound = lin - tangent - corr + err
        # Phi is defined (and convex) between w_ref and W_j only if every term is:
        # where W_j + p_z sigma_1 < 0 for some z, the candidate has no bound
        bound[(wv - d_w + base.min() <= 0) | np.isnan(bound)] = math.inf
    else:   # a released mass is 0 at the mean W: no tangent, score everything
        bound = np.full(var.size, math.inf)
    ranked = np.argsort(-bound, kind="stable")
    best, best_k, upper = -math.inf, int(ranked[0]), -math.inf
    start, step = 0, 1
    terms = pairwise_terms(p.size)
    while start < var.size and bound[ranked[start]] >= best:
        rows = ranked[start:start + step]
        start, step = start + rows.size, min(2 * step, max(1, _CHUNK // p.size))
        offsets = np.broadcast_to(base, (rows.size, p.size)).copy()
        for z, l in fixed:
            offsets[:, z] = p[z] * lv.sigma[l]
        offsets[np.arange(rows.size), var[rows]] = pv[rows] * lv.sigma[level]
        m = np.maximum(wv[rows, None] + offsets, 0.0)
        dm = d_w[rows, None] + rounding_bound(np.abs(wv[rows, None]) + scale + m)
        eta_sum = _eta_sum(m)
        vals = lin[rows] - eta_sum
        errs = (d_lin[rows] + rounding_bound(np.abs(xlogy(m, m)).sum(axis=-1) + np.abs(vals), terms)
                + eta_error(m, dm).sum(axis=-1))
        upper = max(upper, float((vals + errs).max()))
        i = int(np.argmax(vals))
        if vals[i] > best:
            best, best_k = float(vals[i]), int(rows[i])
    q = np.full(p.size, lv.q[1])
    for z, l in fixed:
        q[z] = lv.q[l]
    q[var[best_k]] = lv.q[level]
    return best, q, upper


def _search_pattern(p: np.ndarray, values: np.ndarray, order: np.ndarray) -> PatternSearch:
    """Best assignment of one pattern, every arrangement scored."""
    s = p.size
    if s <= 3:
        perms = np.array(sorted(set(itertools.permutations(range(s)))), dtype=np.intp)
        best, q, upper = _score_codes(p, values, perms)
        return PatternSearch(tuple(values), q, best, len(perms), True, upper_bound=upper)
    top = bool(values[0] - values[1] > LEVEL_TOL)
    bottom = bool(values[2] - values[3] > LEVEL_TOL)
    two = bool(values[1] - values[2] > LEVEL_TOL)
    lv = _Levels(values, s)
    if not two:   # singletons only: O(S) placements of each, vectorised over the last one
        if not (top or bottom):
            value, err = verified_objective(p, values[[0] * s])
            return PatternSearch(tuple(values), values[[0] * s], value, 1, True, upper_bound=value + err)
        if top and bottom:
            runs = [([(i, 0)], _representatives(p, i), 3) for i in _representatives(p)]
        else:
            runs = [([], _representatives(p), 0 if top else 3)]
        total = math.fsum(p)
        found = [_singles_family(p, lv, fixed, var, level, total) for fixed, var, level in runs]
        best, best_q, _ = max(found, key=lambda r: r[0])
        return PatternSearch(tuple(values), best_q, best, sum(len(r[1]) for r in runs), True,
                             upper_bound=max(r[2] for r in found))
    best, best_q, count, upper = -math.inf, values[[0] * s], 0, -math.inf
    for singles, rest in _placements(p, values, order):
        bits = (np.arange(2 ** rest.size)[:, None] >> np.arange(rest.size)[None, :]) & 1
        codes = np.empty((len(bits), s), dtype=np.intp)
        for z, l in singles:
            codes[:, z] = l
        codes[:, rest] = 2 - bits          # bit 1 -> level B (code 1), 0 -> b (code 2)
        val, q, bound = _score_codes(p, values, codes)
        count += len(codes)
        upper = max(upper, bound)
        if val > best:
            best, best_q = val, q
    return PatternSearch(tuple(values), best_q, best, count, True, upper_bound=upper)


def _needs_bound(p: np.ndarray, values: np.ndarray, order: np.ndarray, force: str | None) -> bool:
    """Whether a pattern is searched by branch and bound: it has two middle
    levels and (unless forced) more than EXHAUSTIVE_BUDGET / S splits."""
    if p.size <= 3 or values[1] - values[2] <= LEVEL_TOL or force == "exhaustive":
        return False
    if force == "branch_and_bound":
        return True
    singles = int(values[0] - values[1] > LEVEL_TOL) + int(values[2] - values[3] > LEVEL_TOL)
    if 2 ** (p.size - singles) * p.size > EXHAUSTIVE_BUDGET:
        return True
    return len(_placements(p, values, order)) * 2 ** (p.size - singles) * p.size > EXHAUSTIVE_BUDGET


def _placements(p: np.ndarray, values: np.ndarray,
                order: np.ndarray) -> list[tuple[list[tuple[int, int]], np.ndarray]]:
    """Every placement of a pattern's singletons A (level 0) and a (level 3),
    one representative per distinct p, with the other categories in p-order:
    pairs ``(singles as (category, level), rest)``."""
    top = bool(values[0] - values[1] > LEVEL_TOL)
    bottom = bool(values[2] - values[3] > LEVEL_TOL)
    out = []
    for i in (_representatives(p) if top else [None]):
        for j in (_representatives(p, i) if bottom else [None]):
            singles = [(z, l) for z, l in ((i, 0), (j, 3)) if z is not None]
            out.append((singles, order[~np.isin(order, [z for z, _ in singles])]))
    return out


def _bound_pattern(p: np.ndarray, values: np.ndarray, order: np.ndarray, incumbent: float) -> PatternSearch:
    """Best assignment of a pattern with two middle levels by branch and bound
    (:mod:`pramkit.design.dp_split_bound`) over every split, for every
    placement of its singletons; ``incumbent`` is the best f of the patterns
    searched before (a search is closed when it proves that nothing beats the
    larger of it and its own best by more than half the certificate tolerance,
    :func:`pramkit.privacy.exact.certificate_tolerance`; the other half is left
    for the rounding of the objective)."""
    best, best_q = -math.inf, values[[1] * p.size]
    upper, nodes, scored, closed = -math.inf, 0, 0, True
    for singles, rest in _placements(p, values, order):
        target = max(incumbent, best)
        res = bound_split(p, [(z, float(values[l])) for z, l in singles], rest, float(values[1]),
                          float(values[2]), target, 0.5 * certificate_tolerance(target))
        nodes += res.nodes
        scored += res.scored
        closed &= res.closed
        upper = max(upper, res.upper_bound)
        if res.best_q is not None and res.best_value > best:
            best, best_q = res.best_value, res.best_q
    return PatternSearch(tuple(values), best_q, best, scored, False, upper_bound=max(upper, best),
                         bound_nodes=nodes, closed=closed)


# ---------------------------------------------------------------------------
# Program (7)
# ---------------------------------------------------------------------------

def prop32_holds(s: int, epsilon: float) -> bool:
    """Proposition 3.2's condition: S >= 4 and ``alpha <= log(S + sqrt(S(S-4)) - 2) - log 2``."""
    return s >= 4 and epsilon <= math.log(s + math.sqrt(s * (s - 4)) - 2) - math.log(2)


@dataclass(frozen=True)
class Form8Optimum:
    """Global maximiser of program (7) over form (8).

    q: optimal keep probabilities
    mutual_information_nats: f(q), nats
    patterns: the search of every vertex pattern (best first)
    exhaustive: every vertex of the feasible polytope was scored
    """

    q: np.ndarray
    mutual_information_nats: float
    patterns: tuple[PatternSearch, ...]
    exhaustive: bool

    @property
    def upper_bound(self) -> float:
        """No alpha-DP matrix of form (8) has more mutual information (exact, for
        the doubles p) than this (nats): the largest bound over the patterns."""
        return max((r.upper_bound for r in self.patterns if r.upper_bound is not None),
                   default=self.mutual_information_nats)

    @property
    def proved(self) -> bool:
        """The optimum is proved: exhaustive, or every branch and bound closed."""
        return all(r.closed for r in self.patterns)


def solve_form8(p: ArrayLike, epsilon: float, *, truthful: bool = False, search: str | None = None) -> Form8Optimum:
    """Maximise I(X; Z) over alpha-DP matrices of form (8) (program (7)).

    ``search``: ``None`` (every arrangement scored where cheap, elsewhere
    branch and bound), ``"exhaustive"`` or ``"branch_and_bound"`` (forced;
    for tests and benchmarks).  The patterns scored exhaustively go first:
    their best is the branch and bound's first incumbent.
    """
    pv = probabilities(p)
    e = check_epsilon(epsilon)
    if search not in (None, "exhaustive", "branch_and_bound"):
        raise PramkitError(f"search must be 'exhaustive' or 'branch_and_bound', got {search!r}")
    s = pv.size
    if s == 1:
        return Form8Optimum(np.ones(1), 0.0, (), True)
    order = np.argsort(-pv, kind="stable")
    patterns = vertex_patterns(s, e, truthful=truthful)
    bounded = [_needs_bound(pv, vals, order, search) for vals in patterns]
    results = [_search_pattern(pv, vals, order) for vals, b in zip(patterns, bounded) if not b]
    incumbent = max((r.objective for r in results), default=-math.inf)
    for vals in (vals for vals, b in zip(patterns, bounded) if b):
        results.append(_bound_pattern(pv, vals, order, incumbent))
        incumbent = max(incumbent, results[-1].objective)
    results.sort(key=lambda r: -r.objective)
    # among ties (S = 2: q and 1 - q are equally informative) keep the one that
    # releases the true value most often
    top = results[0].objective
    tied = [r for r in results if r.objective >= top - TIE_TOL * max(1.0, top)]
    best = max(tied, key=lambda r: float(pv @ r.best_q))
    results.remove(best)
    results.insert(0, best)
    if not math.isfinite(best.objective) or not is_dp_feasible(best.best_q, e, truthful=truthful, tol=1e-9):
        raise AssertionError(f"search failed for p={pv.tolist()}, epsilon={e}")  # pragma: no cover
    return Form8Optimum(best.best_q.copy(), best.objective, tuple(results), all(r.exhaustive for r in results))


def form8_epsilon(q: ArrayLike) -> float:
    """Epsilon of the form (8) matrix with diagonal q, in O(S), rounded outward.

    Same value as ``PramMatrix.from_diagonal(q).epsilon`` (the largest
    log-ratio within a column, Shlomo and Skinner, section 4, as the smallest
    double not below the exact value) of the compact matrix with
    ``w_k = (1 - q_k) / (S - 1)`` (:func:`pramkit.privacy.epsilon.form8_matrix_epsilon`).
    """
    qv = np.asarray(q, dtype=float)
    return form8_matrix_epsilon(qv, (1.0 - qv) / (qv.size - 1))


def dp_optimal(
    p: ArrayLike,
    epsilon: float,
    *,
    categories: Sequence[Label] | None = None,
    truthful: bool = False,
) -> PramMatrix:
    """The epsilon-DP matrix of form (8) with the most mutual information for p.

    Program (7) of Ayed, Battiston and Camerlenghi, solved exactly (module
    docstring; proof in ``docs/design-dp.md``).  ``truthful=True`` adds
    ``q_k >= 1/S`` (every category is released as itself at least as often as
    as any other).  The provenance holds I(X; Z) in nats and a certificate:
    the vertex patterns, the best value of each, how they were searched, an
    upper bound valid for the exact optimum (rounding included), and whether
    the unconstrained optimum is truthful.  ``optimal`` is true only when
    every search closed and that bound is within
    :func:`pramkit.privacy.exact.certificate_tolerance` of the optimum's
    information (less its rounding).  The stored matrix is form (8) at the
    optimum, kept compact (its diagonal q and off-diagonal w: O(S) memory,
    :meth:`pramkit.matrix.PramMatrix.form8`), with the entries that rounding put
    below the budget raised (:func:`pramkit.privacy.exact.form8_within_budget`),
    so its epsilon is at most ``epsilon`` exactly; ``budget_adjustment`` is the
    most a row gained, and the gap allows for its effect on the information.
    """
    start = time.perf_counter()
    pv = probabilities(p)
    e = check_epsilon(epsilon)
    s = pv.size
    cats = tuple(range(s)) if categories is None else tuple(categories)
    if len(cats) != s:
        raise PramkitError(f"{len(cats)} categories given for {s} probabilities")
    if s < 2:
        raise PramkitError("a DP design needs at least two categories")
    opt = solve_form8(pv, e, truthful=truthful)
    q = opt.q
    w = (1.0 - q) / (s - 1)
    q_stored, w_stored = form8_within_budget(q, w, e)
    adjustment = float(np.max((q_stored - q) + (s - 1) * (w_stored - w)))   # the largest row shift
    value, rounding = verified_objective(pv, q)
    upper = max(opt.upper_bound, value + rounding)
    # raising entries by at most `adjustment` per row moves I by at most epsilon times it (each
    # d I / d M[x, z] = p_x log(M[x, z] / m_z) is at most epsilon in size); doubled for curvature
    gap = max(upper - (value - rounding - 2.0 * e * adjustment), 0.0)
    tolerance = certificate_tolerance(value)
    certificate: dict[str, Any] = {
        "optimal": opt.proved and gap <= tolerance,
        "search": "exhaustive" if opt.exhaustive else "branch_and_bound",
        "closed": opt.proved,
        "candidates": int(sum(r.candidates for r in opt.patterns)),
        "vertex_patterns": [[float(x) for x in r.values] for r in opt.patterns],
        "pattern_best_nats": [r.objective for r in opt.patterns],
        "runner_up_nats": opt.patterns[1].objective if len(opt.patterns) > 1 else None,
        "upper_bound_nats": upper,
        "certified_gap_nats": gap,
        "tolerance_nats": tolerance,
        "objective_rounding_nats": rounding,
        "bound_nodes": int(sum(r.bound_nodes for r in opt.patterns)),
        "prop32_condition": prop32_holds(s, e),
        "truthful_required": truthful,
        "is_truthful": bool(np.all(q >= 1.0 / s - 1e-15)),
        "budget_adjustment": adjustment,
        "proof": "docs/design-dp.md",
    }
    provenance = Provenance(
        method="dp_optimal",
        parameters={"epsilon": e, "p": pv.tolist(), "truthful": truthful},
        objective=value,
        objective_name="mutual_information_nats",
        certificate=certificate,
        seconds=time.perf_counter() - start,
    )
    return PramMatrix.form8(q_stored, w_stored, cats, provenance)


def dp_optimal_for_column(values: Any, epsilon: float, *, column: str = "column", truthful: bool = False) -> PramMatrix:
    """:func:`dp_optimal` for the observed distribution of a data column
    (categories from :func:`pramkit.codebook.categories_of`, missing values
    left out of p and kept missing when perturbing)."""
    table = count_frame(pd.DataFrame({column: values}), [column])
    cats = list(table.categories[0])
    if not cats:
        raise PramkitError(f"column {column!r} has no non-missing value")
    if len(cats) < 2:
        raise PramkitError(f"column {column!r} has a single category ({cats[0]!r}); nothing to perturb")
    return dp_optimal(table.proportions(column), epsilon, categories=cats, truthful=truthful)
