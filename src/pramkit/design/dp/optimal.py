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
   Otherwise a branch and bound over every placement of the singletons and
   every split at once (:mod:`pramkit.design.dp.split_bound`: a bound on
   equation (9) for all arrangements whose mean off-diagonal mass W lies in a
   window) finds the best one and proves it (``search = "branch_and_bound"``).
   Either way every vertex of the polytope is covered, so the result is the
   global optimum.

The closed forms of section 3.2 (S = 2; symmetric M) are
:func:`binary_optimal_q` and :func:`symmetric_optimal_q`.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import xlogy

from pramkit.counts import count_frame
from pramkit.design.dp.split_bound import bound_split
from pramkit.errors import DataError, ParameterError
from pramkit.information import form8_objective, form8_row_terms
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.epsilon import form8_matrix_epsilon
from pramkit.privacy.exact import (
    certificate_tolerance,
    eta_error,
    form8_within_budget,
    pairwise_sum,
    pairwise_terms,
    rounding_bound,
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
EXHAUSTIVE_BUDGET = 300_000
#: Objectives this close (relative) are ties, broken towards keeping the true value.
TIE_TOL = 1e-12
#: Entries of a candidate block evaluated at once (memory bound).
_CHUNK = 1 << 21


def check_epsilon(epsilon: Any) -> float:
    """epsilon as a float after checking it (:func:`pramkit.validate.epsilon`, at most :data:`MAX_EPSILON`).

    Parameters
    ----------
    epsilon : number
        The privacy parameter alpha of Ayed, Battiston and Camerlenghi (nats per record).

    Returns
    -------
    float
        ``epsilon``, positive and at most :data:`MAX_EPSILON` (``e^epsilon`` is a finite double).

    Raises
    ------
    ParameterError
        If epsilon is not a positive finite number, or exceeds :data:`MAX_EPSILON`.

    Examples
    --------
    >>> check_epsilon(1)
    1.0
    >>> check_epsilon(800)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: epsilon = 800 is too large (at most 700); beyond a few dozen nats it protects nothing (a PRAM matrix is then the identity, a noisy count the count)
    """
    return valid_epsilon(epsilon, maximum=MAX_EPSILON)


def _check_size(s: Any) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 2:
        raise ParameterError(f"the number of categories S must be an integer >= 2, got {s!r}")
    return int(s)


# ---------------------------------------------------------------------------
# Closed forms (section 3.2)
# ---------------------------------------------------------------------------

def v(x: float, s: int) -> float:
    """``v_x = e^x / (e^x + S - 1)`` of Proposition 3.2 (``v_alpha``, ``v_-alpha``).

    ``v_alpha`` is the keep probability of randomized response at epsilon alpha: then
    ``q / ((1 - q) / (S - 1)) = e^alpha`` exactly.

    Parameters
    ----------
    x : float
        The exponent (alpha or -alpha).
    s : int
        The number of categories S.

    Returns
    -------
    float
        ``v_x``, in (0, 1).

    Examples
    --------
    >>> v(math.log(3), 2), v(0.0, 4)                      # keep 3/4 at log 3; 1/S at 0
    (0.75, 0.25)
    >>> q = v(1.0, 5)
    >>> math.isclose(q / ((1 - q) / 4), math.e)           # keep / move odds = e^alpha
    True
    """
    return 1.0 / (1.0 + (s - 1) * math.exp(-x))


def binary_optimal_q(epsilon: float) -> float:
    """Section 3.2.1-3.2.2: for S = 2 the optimum over *all* 2 x 2 matrices
    (every one has form (8)) is the symmetric ``q = e^a / (1 + e^a)``, for
    every p (``1 - q`` is the other optimum, its mirror image).

    Parameters
    ----------
    epsilon : float
        alpha (nats), checked by :func:`check_epsilon`.

    Returns
    -------
    float
        The keep probability q = ``v(alpha, 2)``.

    Raises
    ------
    ParameterError
        If epsilon is out of range.

    Examples
    --------
    The optimum uses the whole budget, and no 2 x 2 design found by the exact search
    does better for a skewed p:

    >>> from pramkit import PramMatrix
    >>> q = binary_optimal_q(math.log(3))
    >>> q, math.isclose(PramMatrix([[q, 1 - q], [1 - q, q]]).epsilon, math.log(3))
    (0.75, True)
    >>> math.isclose(dp_optimal([0.9, 0.1], math.log(3)).diagonal[0], q)
    True
    """
    return v(check_epsilon(epsilon), 2)


def symmetric_interval(s: int, epsilon: float) -> tuple[float, float]:
    """Section 3.2.3: the symmetric q (all equal) is alpha-DP iff
    ``q`` lies in ``[v_-a, v_a]``, ``v_x = e^x / (S - 1 + e^x)``.

    Parameters
    ----------
    s : int
        The number of categories S, at least 2.
    epsilon : float
        alpha (nats).

    Returns
    -------
    tuple of float
        ``(v_-a, v_a)``.

    Raises
    ------
    ParameterError
        If S is not an integer >= 2 or epsilon is out of range.

    Examples
    --------
    >>> symmetric_interval(3, math.log(2))                 # 0.5 / 2.5 and 2 / 4
    (0.2, 0.5)
    >>> lo, hi = symmetric_interval(4, 1.0)
    >>> is_dp_feasible(np.full(4, lo), 1.0), is_dp_feasible(np.full(4, hi), 1.0)
    (True, True)
    >>> is_dp_feasible(np.full(4, hi + 0.01), 1.0)
    False
    """
    s, e = _check_size(s), check_epsilon(epsilon)
    return v(-e, s), v(e, s)


def symmetric_optimal_q(p: ArrayLike, epsilon: float) -> float:
    """Section 3.2.3: the best symmetric q is an end of :func:`symmetric_interval`.

    ``v_a`` is randomized response (:func:`pramkit.design.classic.randomized_response`);
    it is at least as good as ``v_-a`` for every p (both give the same I for S = 2).

    Parameters
    ----------
    p : array-like, shape (S,)
        The original proportions.
    epsilon : float
        alpha (nats).

    Returns
    -------
    float
        The end of :func:`symmetric_interval` with the larger I(X; Z), equation (9).

    Raises
    ------
    ParameterError
        If p is not a probability vector or epsilon is out of range.

    Examples
    --------
    >>> q = symmetric_optimal_q([0.5, 0.3, 0.2], 1.0)
    >>> q == symmetric_interval(3, 1.0)[1] == v(1.0, 3), round(q, 4)
    (True, 0.5761)
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

    Parameters
    ----------
    s : int
        The number of categories S, at least 2.
    epsilon : float
        alpha (nats).
    truthful : bool
        Add ``q_k >= 1/S``.

    Returns
    -------
    tuple of numpy.ndarray
        ``C`` of shape (rows, S) and ``b`` of shape (rows,).

    Raises
    ------
    ParameterError
        If S is not an integer >= 2 or epsilon is out of range.

    Examples
    --------
    >>> c, b = dp_constraints(3, 1.0)
    >>> c.shape, b.shape                                   # 3 S (S - 1) + 2 S rows
    ((24, 3), (24,))
    >>> rr = np.full(3, v(1.0, 3))                         # randomized response: feasible
    >>> bool(np.all(c @ rr <= b + 1e-12)), bool(np.all(c @ np.array([0.99, 0.01, 0.01]) <= b))
    (True, False)
    >>> dp_constraints(3, 1.0, truthful=True)[0].shape      # and S rows q_k >= 1/S
    (27, 3)
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


def _sorted_violation(hi1: float, hi2: float, lo2: float, lo1: float, s: int, r: float, truthful: bool) -> float:
    """Largest normalised violation of the constraints, from the two largest
    (hi1 >= hi2) and the two smallest (lo1 <= lo2) keep probabilities: by the
    sorted reduction no other pair can bind (``docs/design-dp.md``, Lemma 1).
    ``r = e^-alpha``: each constraint is divided by its largest coefficient
    without forming ``(S - 1) e^alpha``, which overflows."""
    c = s - 1
    viol = [
        (c * r * hi1 + hi2 - 1.0) / max(c * r, 1.0),     # (12)/(13), larger q first
        (hi1 + c * r * hi2 - 1.0) / max(c * r, 1.0),
        r / c - lo1 - lo2 * r / c,                       # (14)/(15)
        r / c - lo2 - lo1 * r / c,
        hi1 - 1.0,
        -lo1,
    ]
    if s >= 3:
        viol.append(r * (1.0 - lo1) - (1.0 - hi1))      # (16)/(17)
    if truthful:
        viol.append(1.0 / s - lo1)
    return float(max(viol))


def is_dp_feasible(q: ArrayLike, epsilon: float, *, truthful: bool = False, tol: float = FEASIBILITY_TOL) -> bool:
    """Whether form (8) with keep probabilities q is epsilon-DP, in O(S).

    Constraints (10) for all pairs are checked through the sorted reduction:
    only the two largest and the two smallest q, and the pair (largest,
    smallest), can be binding.  ``tol`` is the slack allowed on each
    constraint divided by its largest coefficient.

    Parameters
    ----------
    q : array-like, shape (S,)
        The keep probabilities (the diagonal of form (8)).
    epsilon : float
        alpha (nats).
    truthful : bool
        Also require ``q_k >= 1/S``.
    tol : float
        Slack allowed on each normalised constraint.

    Returns
    -------
    bool
        Whether every pairwise constraint (12)-(17) holds.

    Raises
    ------
    ParameterError
        If q is not a 1-D array of at least two finite numbers, or epsilon is
        out of range (:func:`check_epsilon`).

    Examples
    --------
    >>> s, e = 4, 1.0
    >>> is_dp_feasible(np.full(s, v(e, s)), e)          # randomized response, on the boundary
    True
    >>> is_dp_feasible(np.array([0.99, 0.01, 0.01, 0.01]), e)
    False
    """
    qv = np.asarray(q, dtype=float)
    if qv.ndim != 1 or qv.size < 2 or not np.all(np.isfinite(qv)):
        raise ParameterError("q must be a 1-D array of at least two finite keep probabilities")
    e = check_epsilon(epsilon)
    hi = -np.partition(-qv, 1)[:2]
    lo = np.partition(qv, 1)[:2]
    return _sorted_violation(hi[0], hi[1], lo[1], lo[0], qv.size, math.exp(-e), truthful) <= tol


# ---------------------------------------------------------------------------
# Vertices of the sorted reduction
# ---------------------------------------------------------------------------

def _reduced_system(s: int, r: float, truthful: bool) -> tuple[np.ndarray, np.ndarray]:
    """Constraints on the block values (A, B, b, a) of a sorted q (fewer
    variables for S < 4): ordering, top pair, bottom pair, spread, box;
    ``r = e^-alpha``, each of (12)-(17) divided by ``e^alpha`` or
    ``(S - 1) e^alpha`` (no overflow)."""
    n = min(s, 4)
    c = s - 1
    e = np.eye(n)
    rows: list[tuple[np.ndarray, float]] = [(e[i + 1] - e[i], 0.0) for i in range(n - 1)]
    rows += [(c * r * e[0] + e[1], 1.0), (e[0] + c * r * e[1], 1.0)]                   # (12), (13)
    rows += [(-e[n - 1] - r / c * e[n - 2], -r / c), (-e[n - 2] - r / c * e[n - 1], -r / c)]  # (14), (15)
    if s >= 3:
        rows.append((e[0] - r * e[n - 1], 1.0 - r))                                     # (16)/(17)
    rows += [(e[0], 1.0), (-e[n - 1], 0.0)]
    if truthful:
        rows.append((-e[n - 1], -1.0 / s))
    a = np.array([row for row, _ in rows])
    b = np.array([rhs for _, rhs in rows])
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

    Parameters
    ----------
    s : int
        The number of categories S, at least 2.
    epsilon : float
        alpha (nats).
    truthful : bool
        Add ``q_k >= 1/S`` to the polytope.

    Returns
    -------
    numpy.ndarray, shape (K, min(S, 4))
        The patterns, each sorted decreasingly, rows in increasing lexicographic order.

    Raises
    ------
    ParameterError
        If S is not an integer >= 2 or epsilon is out of range.

    Examples
    --------
    >>> rows = vertex_patterns(10, 1.0)         # Proposition 3.2 holds: its five types
    >>> rows.shape, bool(np.any(np.all(np.isclose(rows, v(1.0, 10)), axis=1)))
    ((5, 4), True)
    >>> len(vertex_patterns(10, math.log(8) + 1.0))   # beyond it: patterns with singletons
    8
    """
    s, e = _check_size(s), check_epsilon(epsilon)
    a, b = _reduced_system(s, math.exp(-e), truthful)
    n = a.shape[1]
    # Every square subsystem at once (LAPACK factorises each matrix of the stack as it would one alone).
    rows = np.array(list(itertools.combinations(range(len(a)), n)))
    subs = a[rows]
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):   # subnormal coefficients at large alpha
        dets = np.linalg.det(subs)
    regular = np.abs(dets) >= 1e-13
    xs = np.linalg.solve(subs[regular], b[rows[regular]][:, :, None])[:, :, 0]
    feasible = np.all(xs @ a.T - b <= 1e-11, axis=1)
    found = np.clip(xs[feasible], 0.0, 1.0)
    if not len(found):  # the polytope is never empty: v_-a, ..., v_-a is feasible
        raise AssertionError("no vertex found")  # pragma: no cover
    # a vertex found again (within 1e-10 of one kept before it) is kept once, the first time
    apart = np.abs(found[:, None, :] - found[None, :, :]).max(axis=2) > 1e-10
    kept: list[int] = []
    for i in range(len(found)):
        if apart[i, kept].all():
            kept.append(i)
    return np.array(sorted(found[kept], key=tuple))


# ---------------------------------------------------------------------------
# Assignment of a pattern to categories
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PatternSearch:
    """Best assignment of one vertex pattern.

    Attributes
    ----------
    values : tuple of float
        The pattern's sorted values (a row of :func:`vertex_patterns`).
    best_q : numpy.ndarray, shape (S,)
        Best keep-probability vector with these values.
    objective : float
        f(best_q), equation (9), in nats.
    candidates : int
        Number of assignments scored.
    exhaustive : bool
        Every assignment was scored.
    upper_bound : float or None
        No arrangement of the pattern has an exact f above this (nats): the best
        score plus its rounding allowance if exhaustive, else the branch and bound's bound.
    bound_nodes : int
        Branch-and-bound nodes explored (0 if exhaustive).
    closed : bool
        The bound is proved (False only if the branch and bound hit its node limit).

    Examples
    --------
    For S = 3 every permutation of each pattern is scored:

    >>> opt = solve_form8([0.5, 0.3, 0.2], 1.0)
    >>> best = opt.patterns[0]
    >>> best.exhaustive, best.closed, best.candidates, best.bound_nodes
    (True, True, 6, 0)
    >>> best.objective <= best.upper_bound < best.objective + 1e-12
    True
    >>> sorted(best.best_q.tolist(), reverse=True) == [float(x) for x in best.values]
    True
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


def _scores(p: np.ndarray, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f of equation (9) for each row of ``qs`` and a bound on its rounding
    error: the formula of :func:`pramkit.information.form8_objective` with every
    sum over S terms pairwise (:func:`pramkit.privacy.exact.pairwise_sum`, so
    the bound grows with log S, not S); the released masses carry the error
    of W, and :func:`pramkit.privacy.exact.eta_error` carries that through
    ``m log m``."""
    terms = pairwise_terms(p.size)
    w, sigma, h = form8_row_terms(qs, p.size)
    big_w = pairwise_sum(p * w)[..., None]
    m = np.maximum(big_w + p * sigma, 0.0)
    dm = rounding_bound(big_w + p * (qs + w) + m, terms)
    eta = xlogy(m, m)
    values = np.maximum(pairwise_sum(p * h) - pairwise_sum(eta), 0.0)
    size = (p * (np.abs(h) + 1.0 - qs)).sum(axis=-1) + np.abs(eta).sum(axis=-1)
    return values, rounding_bound(size, terms) + eta_error(m, dm).sum(axis=-1)


def verified_objective(p: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    """f(q) of equation (9) and a bound on its rounding error, for one q.

    The same formula as :func:`pramkit.information.form8_objective`, with every
    sum over S terms taken by :func:`math.fsum` (correctly rounded), so the
    error bound (:func:`pramkit.privacy.exact.rounding_bound`) does not grow
    with S: the exact f of the doubles p and q lies within ``value +- error``.

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        The original proportions.
    q : numpy.ndarray, shape (S,)
        The keep probabilities of form (8).

    Returns
    -------
    tuple of float
        ``(value, error)``: I(X; Z) in nats and a bound on its rounding error.

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
        vals, errs = _scores(p, qs)
        upper = max(upper, float((vals + errs).max()))
        i = int(np.argmax(vals))
        if vals[i] > best:
            best, best_q = float(vals[i]), qs[i]
    return best, best_q, upper


def _shape(values: np.ndarray) -> tuple[bool, bool, bool]:
    """Which blocks of a pattern ``(A, B, b, a)`` are distinct: a top singleton,
    two middle levels, a bottom singleton."""
    return (bool(values[0] - values[1] > LEVEL_TOL), bool(values[1] - values[2] > LEVEL_TOL),
            bool(values[2] - values[3] > LEVEL_TOL))


def _search_pattern(p: np.ndarray, values: np.ndarray, order: np.ndarray) -> PatternSearch:
    """Best assignment of one pattern, every arrangement scored."""
    s = p.size
    if s <= 3:
        perms = np.array(sorted(set(itertools.permutations(range(s)))), dtype=np.intp)
        best, q, upper = _score_codes(p, values, perms)
        return PatternSearch(tuple(values), q, best, len(perms), True, upper_bound=upper)
    top, two, bottom = _shape(values)
    if not (top or two or bottom):
        value, err = verified_objective(p, values[[0] * s])
        return PatternSearch(tuple(values), values[[0] * s], value, 1, True, upper_bound=value + err)
    blocks = []
    for singles, rest in _placements(p, values, order):
        bits = (np.arange(2 ** rest.size if two else 1)[:, None] >> np.arange(rest.size)[None, :]) & 1
        codes = np.empty((len(bits), s), dtype=np.intp)
        for z, l in singles:
            codes[:, z] = l
        codes[:, rest] = 2 - bits if two else 1          # bit 1 -> level B (code 1), 0 -> b (code 2)
        blocks.append(codes)
    codes = np.concatenate(blocks)
    best, best_q, upper = _score_codes(p, values, codes)
    return PatternSearch(tuple(values), best_q, best, len(codes), True, upper_bound=upper)


def _arrangements(p: np.ndarray, values: np.ndarray) -> int:
    """At least as many arrangements as exhaustive scoring of a pattern visits
    (singletons on one category per distinct p, every split of the others)."""
    top, two, bottom = _shape(values)
    distinct = np.unique(p).size
    return (distinct if top else 1) * (distinct if bottom else 1) * (2 ** (p.size - top - bottom) if two else 1)


def _needs_bound(p: np.ndarray, values: np.ndarray, force: str | None) -> bool:
    """Whether a pattern is searched by branch and bound: it has more than one
    arrangement and (unless forced) more than EXHAUSTIVE_BUDGET / S of them."""
    if p.size <= 3 or not any(_shape(values)) or force == "exhaustive":
        return False
    return force == "branch_and_bound" or _arrangements(p, values) * p.size > EXHAUSTIVE_BUDGET


def _placements(p: np.ndarray, values: np.ndarray,
                order: np.ndarray) -> list[tuple[list[tuple[int, int]], np.ndarray]]:
    """Every placement of a pattern's singletons A (level 0) and a (level 3),
    one representative per distinct p, with the other categories in p-order:
    pairs ``(singles as (category, level), rest)``."""
    top, _, bottom = _shape(values)
    out = []
    for i in (_representatives(p) if top else [None]):
        for j in (_representatives(p, i) if bottom else [None]):
            singles = [(z, l) for z, l in ((i, 0), (j, 3)) if z is not None]
            rest = np.ones(order.size, dtype=bool)
            for z, _ in singles:
                rest &= order != z
            out.append((singles, order[rest]))
    return out


def _bound_pattern(p: np.ndarray, values: np.ndarray, incumbent: float) -> PatternSearch:
    """Best assignment of a pattern by branch and bound over every placement
    of its singletons and every split of the others at once
    (:mod:`pramkit.design.dp.split_bound`); ``incumbent`` is the best f of the
    patterns searched before (the search is closed when it proves that
    nothing beats the larger of it and its own best by more than half the
    certificate tolerance, :func:`pramkit.privacy.exact.certificate_tolerance`;
    the other half is left for the rounding of the objective)."""
    top, two, bottom = _shape(values)
    singles: list[tuple[int | None, float]] = [(None, float(values[l])) for l, present in ((0, top), (3, bottom))
                                                if present]
    res = bound_split(p, singles, np.arange(p.size), float(values[1]), float(values[2 if two else 1]), incumbent,
                      lambda known: 0.5 * certificate_tolerance(known))
    best_q = values[[1] * p.size] if res.best_q is None else res.best_q
    return PatternSearch(tuple(values), best_q, res.best_value, res.scored, False,
                         upper_bound=max(res.upper_bound, res.best_value), bound_nodes=res.nodes, closed=res.closed)


# ---------------------------------------------------------------------------
# Program (7)
# ---------------------------------------------------------------------------

def prop32_holds(s: int, epsilon: float) -> bool:
    """Proposition 3.2's condition: S >= 4 and ``alpha <= log(S + sqrt(S(S-4)) - 2) - log 2``.

    Under it every vertex of the DP polytope is one of Proposition 3.2's five types
    (:func:`vertex_patterns`).

    Parameters
    ----------
    s : int
        The number of categories S.
    epsilon : float
        alpha (nats).

    Returns
    -------
    bool
        Whether the condition holds.

    Examples
    --------
    For S = 10 the bound is ``log(8 + sqrt(60)) - log 2``, about 2.063:

    >>> prop32_holds(10, 2.0), prop32_holds(10, 2.1), prop32_holds(3, 0.1)
    (True, False, False)
    >>> len(vertex_patterns(10, 2.0)), len(vertex_patterns(10, 2.1))
    (5, 8)
    """
    return s >= 4 and epsilon <= math.log(s + math.sqrt(s * (s - 4)) - 2) - math.log(2)


@dataclass(frozen=True)
class Form8Optimum:
    """Global maximiser of program (7) over form (8).

    Attributes
    ----------
    q : numpy.ndarray, shape (S,)
        Optimal keep probabilities.
    mutual_information_nats : float
        f(q), equation (9), in nats.
    patterns : tuple of PatternSearch
        The search of every vertex pattern (best first).
    exhaustive : bool
        Every vertex of the feasible polytope was scored.

    Examples
    --------
    >>> opt = solve_form8([0.5, 0.3, 0.2], 1.0)
    >>> opt.exhaustive, opt.proved, len(opt.patterns) == len(vertex_patterns(3, 1.0))
    (True, True, True)
    >>> opt.mutual_information_nats == max(r.objective for r in opt.patterns) <= opt.upper_bound
    True
    >>> opt.q.round(4).tolist(), round(v(1.0, 3), 4)       # here: randomized response
    ([0.5761, 0.5761, 0.5761], 0.5761)
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

    Parameters
    ----------
    p : array-like, shape (S,)
        The original proportions.
    epsilon : float
        alpha (nats).
    truthful : bool
        Add ``q_k >= 1/S``.
    search : str, optional
        As above.

    Returns
    -------
    Form8Optimum
        The maximiser, every pattern's search, and whether the optimum is proved.

    Raises
    ------
    ParameterError
        If ``search`` is none of those, or p or epsilon is invalid.

    Examples
    --------
    >>> p, alpha = np.linspace(1.0, 2.0, 20) / 30.0, math.log(18) + 1.0   # beyond Proposition 3.2
    >>> opt = solve_form8(p, alpha)
    >>> opt.proved, bool(opt.upper_bound - opt.mutual_information_nats < 1e-12), is_dp_feasible(opt.q, alpha)
    (True, True, True)
    """
    pv = probabilities(p)
    e = check_epsilon(epsilon)
    if search not in (None, "exhaustive", "branch_and_bound"):
        raise ParameterError(f"search must be 'exhaustive' or 'branch_and_bound', got {search!r}")
    s = pv.size
    if s == 1:
        return Form8Optimum(np.ones(1), 0.0, (), True)
    order = np.argsort(-pv, kind="stable")
    patterns = vertex_patterns(s, e, truthful=truthful)
    bounded = [_needs_bound(pv, vals, search) for vals in patterns]
    results = [_search_pattern(pv, vals, order) for vals, b in zip(patterns, bounded) if not b]
    incumbent = max((r.objective for r in results), default=-math.inf)
    for vals in (vals for vals, b in zip(patterns, bounded) if b):
        results.append(_bound_pattern(pv, vals, incumbent))
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

    Parameters
    ----------
    q : array-like, shape (S,)
        The keep probabilities.

    Returns
    -------
    float
        The matrix's epsilon (nats), not below the exact value.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> form8_epsilon([0.75, 0.75]) >= math.log(3)
    True
    >>> q = [0.6, 0.3, 0.1]           # worst column: w_1 = (1 - 0.3) / 2 = 0.35 against q_2 = 0.1
    >>> form8_epsilon(q) == PramMatrix.from_diagonal(q).epsilon, math.isclose(form8_epsilon(q), math.log(3.5))
    (True, True)
    >>> is_dp_feasible(np.array(q), form8_epsilon(q))        # its own epsilon is a valid budget
    True
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
    so its epsilon is at most ``epsilon`` exactly (entries that rounding made
    0, at large epsilon, included); ``budget_adjustment`` is the most a row
    gained, and the gap allows for its effect on the information.

    Parameters
    ----------
    p : array-like, shape (S,)
        The original proportions (S >= 2).
    epsilon : float
        The budget alpha (nats).
    categories : sequence, optional
        Labels of the categories (default ``0 .. S-1``).
    truthful : bool
        Require ``q_k >= 1/S``.

    Returns
    -------
    PramMatrix
        Form (8), compact, with its provenance and certificate.

    Raises
    ------
    ParameterError
        If epsilon is out of range, p is not a probability vector of at least
        two categories, or ``categories`` has the wrong length.

    Examples
    --------
    >>> m = dp_optimal([0.6, 0.3, 0.1], 1.0, categories=["a", "b", "c"])
    >>> m.epsilon <= 1.0, m.provenance.certificate["optimal"], m.categories
    (True, True, ('a', 'b', 'c'))
    """
    start = time.perf_counter()
    pv = probabilities(p)
    e = check_epsilon(epsilon)
    s = pv.size
    cats = tuple(range(s)) if categories is None else tuple(categories)
    if len(cats) != s:
        raise ParameterError(f"{len(cats)} categories given for {s} probabilities")
    if s < 2:
        raise ParameterError("a DP design needs at least two categories")
    opt = solve_form8(pv, e, truthful=truthful)
    q = opt.q
    w = (1.0 - q) / (s - 1)
    # every entry of an alpha-DP matrix is positive; one that rounding made 0 (a level within
    # rounding of 1 or of 0, at large alpha) gets the least positive double, which the budget
    # then raises to what it needs
    tiny = math.ulp(0.0)
    q_stored, w_stored = form8_within_budget(np.maximum(q, tiny), np.maximum(w, tiny), e)
    adjustment = float(np.max((q_stored - q) + (s - 1) * (w_stored - w)))   # the largest row shift
    value, rounding = verified_objective(pv, q)
    upper = float(max(opt.upper_bound, value + rounding))
    # raising entries by at most `adjustment` per row moves I by at most epsilon times it (each
    # d I / d M[x, z] = p_x log(M[x, z] / m_z) is at most epsilon in size); doubled for curvature
    gap = float(max(upper - (value - rounding - 2.0 * e * adjustment), 0.0))
    tolerance = certificate_tolerance(value)
    certificate: dict[str, Any] = {
        "optimal": bool(opt.proved and gap <= tolerance),
        "search": "exhaustive" if opt.exhaustive else "branch_and_bound",
        "closed": opt.proved,
        "candidates": int(sum(r.candidates for r in opt.patterns)),
        "vertex_patterns": [[float(x) for x in r.values] for r in opt.patterns],
        "pattern_best_nats": [float(r.objective) for r in opt.patterns],
        "runner_up_nats": float(opt.patterns[1].objective) if len(opt.patterns) > 1 else None,
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
    left out of p and kept missing when perturbing).

    The design reads the column's exact frequencies: it is data-dependent, so its
    matrix leaks p unless p is published (:func:`pramkit.design_release`
    spends part of the budget on noisy counts instead).

    Parameters
    ----------
    values : array-like or pandas.Series
        The column.
    epsilon : float
        The budget alpha (nats).
    column : str
        Its name, for messages.
    truthful : bool
        Require ``q_k >= 1/S``.

    Returns
    -------
    PramMatrix
        As :func:`dp_optimal`, labelled with the column's categories.

    Raises
    ------
    DataError
        If the column has no non-missing value or a single category.
    ParameterError
        If epsilon is out of range.

    Examples
    --------
    >>> import pandas as pd
    >>> tenure = pd.Series(["owned", "rented", "owned", None, "owned", "rented", "n/a"] * 10)
    >>> m = dp_optimal_for_column(tenure, 1.0, column="tenure")
    >>> m.categories, m.epsilon <= 1.0, m.provenance.certificate["optimal"]
    (('n/a', 'owned', 'rented'), True, True)
    >>> np.round(m.provenance.parameters["p"], 4).tolist()       # 10, 30 and 20 of 60: missing left out
    [0.1667, 0.5, 0.3333]
    >>> dp_optimal_for_column(["a", "a", None], 1.0, column="x")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'x' has a single category ('a'); nothing to perturb
    """
    table = count_frame(pd.DataFrame({column: values}), [column])
    cats = list(table.categories[0])
    if not cats:
        raise DataError(f"column {column!r} has no non-missing value")
    if len(cats) < 2:
        raise DataError(f"column {column!r} has a single category ({cats[0]!r}); nothing to perturb")
    return dp_optimal(table.proportions(column), epsilon, categories=cats, truthful=truthful)
