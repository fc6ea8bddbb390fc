"""Branch and bound over the arrangements of a vertex pattern, in the mean off-diagonal mass W.

A vertex pattern ``(A, B, ..., B, b, ..., b, a)`` of the DP polytope
(``docs/design-dp.md``, Lemmas 2 and 3) leaves to choose which category takes
the singleton A, which takes a, and which of the others take B rather than
b; every such arrangement is feasible.  This module finds the best
arrangement and proves it -- no arrangement beats the value returned (or a
given incumbent, reached elsewhere) by more than a tolerance -- for every
placement of the singletons at once.

**The bound.**  Each category z takes a level l_z among K at most four
values, with ``w_l = (1 - q_l)/(S - 1)``, ``sigma_l = q_l - w_l``,
``h_l = q_l log q_l + (1 - q_l) log w_l`` and ``eta(x) = x log x``; equation (9) is

    f = sum_z [p_z h_(l_z) - eta(W + p_z sigma_(l_z))],      W = sum_z p_z w_(l_z).

Take the arrangements whose W lies in a window ``[W_1, W_2]``.  For each
category and level, ``-eta(W + p_z sigma_l)`` is concave in W, so it lies
below its tangent at ``W_1`` and below its tangent at ``W_2`` (a tangent at
any positive mass bounds ``-eta`` on all masses ``>= 0``, which is all that a
real arrangement has), hence below their average: a line ``L_zl(W)``.  For
any multiplier lambda, since ``sum_z p_z w_(l_z) = W``,

    f <= lambda W + sum_z [p_z h_(l_z) + L_(z l_z)(W) - lambda p_z w_(l_z)]
      <= lambda W + V(W),   V(W) = max over arrangements of the same sum,

and V, a maximum of affine functions of W, is convex: so is ``lambda W + V(W)``,
whose maximum over the window is at ``W_1`` or ``W_2``.  At a given W the
maximum over arrangements is separable: each category takes its best middle
level, and each singleton level the category with the largest gain over
its middle level (the best pair of distinct categories when there are two
singleton levels), in O(S).  The node's bound is the larger of the two ends,
at the lambda that minimises it (the function is convex and piecewise linear
in lambda; a cutting-plane search finds its minimum).  The bound is exact up
to the curvature of ``eta`` over the window (second order in its width) and
the one category that the relaxation splits (the duality gap of a knapsack
with one equality), so the search halves windows and, once a window is
narrower than what the split category moves W by, branches on that
category's level.  The singleton's placement needs no branching of its own:
different placements move W by different amounts, so the windows separate
them.

**Filters.**  Before the bound, a node's window is cut to the W its
arrangements can have (the sum of each category's smallest and largest
``p_z w_l``) and to ``W >= -p_z sigma_l`` (no released mass is negative); a
level that cannot put W in the window, or whose released mass is negative on
the whole window, is dropped for that category; so is a singleton level
that puts W outside the window whatever levels other than it the other
categories take; a category left with one singleton level and no middle
level is that singleton.

**Categories with p = 0.**  Such a category adds nothing to W nor to the
rows of f, and its released mass is W whatever its level, so its level does
not change f.  Of those that share the same allowed levels, only as many as
there are singleton levels stay rows (they may hold the singletons); the
others are one row at the first middle level whose line is that of any of
them times their number (rounding of the product included), and take that
level in the arrangements returned.

**The multiplier.**  Any lambda gives a valid bound; when the search for the
best one finds no bracket (the slope it follows may be rounding, at a
window within rounding of a fixed arrangement), the bound at the starting
lambda and at 0 are taken too, and the least kept.

**Rounding.**  The bound a node reports is valid for the exact f of the
stored doubles.  Each tangent is taken at the computed mass ``x`` (any
positive point gives a valid tangent); its value at the two ends carries the
error of the exact mass against ``x`` times its slope; every constant
(``w``, ``sigma``, ``h`` and their products with p) carries a bound on its
rounding (:func:`pramkit.privacy.exact.rounding_bound`); the node's terms are
raised by their allowances before the maximum, and the S-term sums are
pairwise (:func:`pramkit.privacy.exact.pairwise_sum`).  Windows are widened
by the rounding of an S-term sum of W, so that no arrangement falls out of
its window.  A node whose bound is within twice its allowance of the best
value known is closed as well: floating point cannot separate them, and the
search reports the allowance in its upper bound.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from pramkit.errors import ParameterError
from pramkit.information import form8_objective, form8_row_terms
from pramkit.privacy.exact import UNIT, pairwise_sum, pairwise_terms, rounding_bound

#: Nodes explored per search before giving up (the bound is then reported).
MAX_NODES = 20_000
#: Steps of the search for the multiplier lambda of one node (bracketing, then cutting).
_LAMBDA_STEPS = 60


@dataclass(frozen=True)
class SplitBound:
    """Outcome of :func:`bound_split`.

    Attributes
    ----------
    upper_bound : float
        No arrangement (with these singletons) has an exact f, equation (9) of Ayed,
        Battiston and Camerlenghi, above this (nats), rounding included.
    best_value : float
        The best f of the arrangements scored (-inf if none).
    best_q : numpy.ndarray or None
        That arrangement's keep probabilities (None if none).
    nodes : int
        Nodes bounded.
    scored : int
        Arrangements scored exactly.
    closed : bool
        The search finished, not stopped at its node limit.

    Examples
    --------
    A singleton level 0.9 on any one of four categories, the others at 0.5 or 0.2: the
    search scores 5 of the 32 arrangements and proves that none beats the best of them.

    >>> import itertools
    >>> p = np.array([0.4, 0.3, 0.2, 0.1])
    >>> res = bound_split(p, [(None, 0.9)], np.arange(4), 0.5, 0.2, -math.inf, 1e-12)
    >>> res.closed, res.best_q.tolist(), res.scored
    (True, [0.9, 0.5, 0.5, 0.5], 5)
    >>> every = np.array([q for q in itertools.product([0.9, 0.5, 0.2], repeat=4) if q.count(0.9) == 1])
    >>> len(every), res.best_value == float(form8_objective(p, every).max())
    (32, True)
    >>> 0 <= res.upper_bound - res.best_value < 1e-12                   # the gap is closed
    True

    With an incumbent that no arrangement can reach, the root's bound closes the search:

    >>> root = bound_split(p, [(None, 0.9)], np.arange(4), 0.5, 0.2, 1.0, 1e-12)
    >>> root.nodes, root.closed, res.best_value <= root.upper_bound <= 1.0
    (1, True, True)
    """

    upper_bound: float
    best_value: float
    best_q: np.ndarray | None
    nodes: int
    scored: int
    closed: bool


@dataclass(frozen=True)
class _Node:
    """Outcome of bounding one node."""

    bound: float
    allowance: float            # the part of the bound that is rounding allowance
    branch: tuple | None        # ("item", z), ("window",) or None
    candidates: list[np.ndarray]
    lo: float
    hi: float
    lam: float | None           # None for a node with no allowed arrangement, as given


def _best_singles(bonus: list[np.ndarray], forced: np.ndarray) -> tuple[float, list[int]]:
    """Largest total gain of the singleton levels: ``bonus[s][z]`` is what
    category z adds by taking singleton level s (``-inf`` where it may not);
    distinct categories, and every ``forced`` category (one with no middle
    level) among them.  Returns (-inf, []) when no choice is valid."""
    if not bonus:
        return (0.0, []) if not forced.any() else (-math.inf, [])
    must = np.flatnonzero(forced)
    lists = []
    for b in bonus:
        top = np.argpartition(-b, min(1, b.size - 1))[:2] if b.size > 1 else np.arange(b.size)
        lists.append(sorted(set(top.tolist()) | set(must.tolist())))
    best, picks = -math.inf, []
    for combo in itertools.product(*lists):
        if len(set(combo)) < len(combo) or not set(must.tolist()) <= set(combo):
            continue
        total = sum(float(b[z]) for b, z in zip(bonus, combo))
        if total > best:
            best, picks = total, list(combo)
    return best, picks


def _relax(e_val: np.ndarray, pw: np.ndarray, allowed: np.ndarray, mid: np.ndarray, singles: np.ndarray,
           want: bool, certified: bool = False) -> tuple[float, float, float, np.ndarray | None]:
    """Best arrangement of the separable relaxation with item values ``e_val``
    (S', K; ``-inf`` where not allowed): each category at its best middle
    level (one or two of them), each of the ``singles`` levels on the
    category that gains most by taking it (:func:`_best_singles`).  Returns
    its value (``-inf`` if no choice is valid), its W (``sum p_z w_l`` from
    ``pw``), and its levels (if ``want``); if ``certified``, the value is
    summed pairwise and comes with a bound on the magnitudes its rounding
    scales with (else 0)."""
    first = e_val[:, mid[0]]
    if mid.size == 2:
        second = e_val[:, mid[1]]
        take = second > first
        best_mid = np.where(take, second, first)
        mid_level = np.where(take, mid[1], mid[0])
        pw_mid = np.where(take, pw[:, mid[1]], pw[:, mid[0]])
    else:
        best_mid, mid_level, pw_mid = first, np.full(first.size, mid[0]), pw[:, mid[0]]
    forced = best_mid == -math.inf            # no middle level allowed: must hold a singleton
    if forced.any():
        best_mid = np.where(forced, 0.0, best_mid)
        pw_mid = np.where(forced, 0.0, pw_mid)
    gain, picks = 0.0, list[int]()
    if singles.size or forced.any():
        bonus = [np.where(allowed[:, s], e_val[:, s] - best_mid, -math.inf) for s in singles]
        gain, picks = _best_singles(bonus, forced)
    w = float(pw_mid.sum()) + sum(float(pw[z, s] - pw_mid[z]) for z, s in zip(picks, singles))
    levels = None
    if want:
        levels = mid_level.astype(np.int8)
        for z, s in zip(picks, singles):
            levels[z] = s
    if not math.isfinite(gain):
        return -math.inf, w, 0.0, levels
    if not certified:
        return float(best_mid.sum()) + gain, w, 0.0, levels
    size = float(np.abs(best_mid).sum()) + abs(gain)
    for s in singles:   # the rounding of any gain, chosen or not
        size += float(np.where(allowed[:, s], np.abs(e_val[:, s]) + np.abs(best_mid), 0.0).max(initial=0.0))
    return float(pairwise_sum(best_mid)) + gain, w, size, levels


def _silent_group(p: np.ndarray, allowed: np.ndarray, mid_bits: np.ndarray,
                  single_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Module docstring, "Categories with p = 0": the categories kept as rows (every one
    with p > 0 or no middle level; of those with p = 0 that share a mask, as many as
    it has singleton levels), the level of every category (the kept ones' overwritten
    by the search; the others at their mask's first middle level) and how many are
    left out (the silent group)."""
    fill = np.zeros(p.size, dtype=np.intp)
    keep = np.ones(p.size, dtype=bool)
    mid_mask = int(np.bitwise_or.reduce(mid_bits))
    zero = np.flatnonzero((p == 0.0) & ((allowed & mid_mask) != 0))
    for mask in np.unique(allowed[zero]):
        same = zero[allowed[zero] == mask]
        spare = same[int(np.count_nonzero(single_bits & mask)):]
        keep[spare] = False
        low = int(mask) & mid_mask
        fill[spare] = (low & -low).bit_length() - 1
    return np.flatnonzero(keep), fill, int(p.size - keep.sum())


class _Problem:
    """The arrangements of one pattern: levels ``q`` (K of them, decreasing),
    which of them are singletons (exactly one category each), and for each
    category the levels it may take (a bit mask).  With ``group``, the
    categories with p = 0 that no singleton needs are one row (module
    docstring); the rows are then no longer the categories.

    Every constant comes with a bound on its rounding error (``d_*``): the
    exact problem is that of the doubles p and q."""

    def __init__(self, p: np.ndarray, levels: np.ndarray, single: np.ndarray, allowed: np.ndarray,
                 group: bool = False) -> None:
        s = p.size
        self.q = levels
        self.k = levels.size
        self.single = single
        self.mid = np.flatnonzero(~single)
        self.singles = np.flatnonzero(single)
        self.bits = 1 << np.arange(self.k)
        self.p_all = p
        if group:   # module docstring, "Categories with p = 0"
            self.rows, self.fill, self.silent = _silent_group(p, allowed, self.bits[self.mid], self.bits[self.singles])
        else:
            self.rows, self.fill, self.silent = np.arange(s), np.zeros(s, dtype=np.intp), 0
        p = np.append(p[self.rows], 0.0) if self.silent else p[self.rows]
        self.p = p
        self.base = np.append(allowed[self.rows], self.bits[self.mid[0]]) if self.silent else allowed[self.rows]
        w, sigma, h = form8_row_terms(levels, s)
        d_w = rounding_bound(w)
        d_sigma = d_w + rounding_bound(levels + w)
        d_h = rounding_bound(np.abs(xlogy(levels, levels)) + np.abs(xlogy(1.0 - levels, w)) + 1.0)
        col = p[:, None]
        self.pw = col * w
        self.d_pw = col * d_w + rounding_bound(self.pw)
        self.psig = col * sigma
        self.d_psig = col * d_sigma + rounding_bound(np.abs(self.psig))
        self.ph = col * h
        self.d_ph = col * d_h + rounding_bound(np.abs(self.ph))
        # rounding of an S-term sum of W (in any order) plus the errors of its terms
        self.slack = float(rounding_bound(float(self.pw.max(axis=1).sum()), s) + self.d_pw.max(axis=1).sum())

    # -- arrangements -----------------------------------------------------------------------

    def value(self, levels: np.ndarray) -> tuple[float, np.ndarray]:
        """Exact f (to rounding) of the arrangement with these level indices (one per
        row), and its keep probabilities for all S categories (the silent group's
        categories at their fill level)."""
        full = self.fill.copy()
        full[self.rows] = levels[:self.rows.size]
        q = self.q[full]
        return float(form8_objective(self.p_all, q[None])[0]), q

    def allowed(self, fixes: tuple[tuple[int, int], ...]) -> np.ndarray:
        """(S, K) levels allowed at a node: the initial masks with its fixes applied."""
        mask = self.base.copy()
        if fixes:
            z, l = np.array(fixes, dtype=np.intp).T
            mask[z] = self.bits[l]
        return (mask[:, None] & self.bits[None, :]) != 0

    def _filter(self, allowed: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, float, float] | None:
        """Module docstring, "Filters"; None if no arrangement is left."""
        slack = self.slack
        for _ in range(8):
            if not allowed.any(axis=1).all():
                return None
            pw_min = np.where(allowed, self.pw, math.inf).min(axis=1)
            pw_max = np.where(allowed, self.pw, -math.inf).max(axis=1)
            w_min, w_max = float(pw_min.sum()), float(pw_max.sum())
            # the exact range of W, singleton counts included (W is separable)
            low = _relax(np.where(allowed, -self.pw, -math.inf), self.pw, allowed, self.mid, self.singles, False)
            high = _relax(np.where(allowed, self.pw, -math.inf), self.pw, allowed, self.mid, self.singles, False)
            if not math.isfinite(low[0]):
                return None
            lo, hi = max(lo, low[1] - slack), min(hi, high[1] + slack)
            # a real arrangement has every released mass W + p_z sigma_(l_z) >= 0
            reach = np.where(allowed, self.psig + self.d_psig, -math.inf).max(axis=1)
            lo = max(lo, float((-reach).max()))
            if lo > hi:
                return None
            feasible = ((self.pw + (w_min - pw_min)[:, None] <= hi + 2.0 * slack)
                        & (self.pw + (w_max - pw_max)[:, None] >= lo - 2.0 * slack)
                        & (hi + self.psig + self.d_psig + rounding_bound(abs(hi) + np.abs(self.psig)) >= 0.0))
            new = self._single_reach(allowed & feasible, lo - 2.0 * slack, hi + 2.0 * slack)
            forced = ~new[:, self.mid].any(axis=1)
            if forced.sum() > self.singles.size:
                return None
            for s in self.singles:
                if not new[:, s].any():
                    return None
                only = forced & new[:, s] & (new.sum(axis=1) == 1)
                if only.sum() > 1:
                    return None
                if only.any():
                    new[~only, s] = False
            if np.array_equal(new, allowed):
                break
            allowed = new
        return (allowed, lo, hi) if allowed.any(axis=1).all() else None

    def _single_reach(self, allowed: np.ndarray, lo: float, hi: float) -> np.ndarray:
        """``allowed`` without the singleton levels that cannot put W in ``[lo, hi]``: a
        category holding singleton level s leaves every other category a level other
        than s, so W lies between its ``p_z w_s`` plus the others' smallest such
        ``p_y w_l`` and the same with their largest (a category with no other level
        left must hold s itself)."""
        for s in self.singles:
            others = allowed.copy()
            others[:, s] = False
            low = np.where(others, self.pw, math.inf).min(axis=1)
            high = np.where(others, self.pw, -math.inf).max(axis=1)
            open_ = np.isfinite(low)
            stuck = int(np.count_nonzero(~open_))
            low_sum, high_sum = float(low[open_].sum()), float(high[open_].sum())
            reach = ((self.pw[:, s] + low_sum - np.where(open_, low, 0.0) <= hi)
                     & (self.pw[:, s] + high_sum - np.where(open_, high, 0.0) >= lo)
                     & ((stuck == 0) | ((stuck == 1) & ~open_)))
            allowed[:, s] &= reach
        return allowed

    # -- the bound --------------------------------------------------------------------------

    def _lines(self, allowed: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """``p_z h_l + L_zl(W_e)`` at the two ends (shape (2, S, K), ``-inf``
        where not allowed) and a bound on its rounding error."""
        ends = np.array([lo, hi])
        width = hi - lo
        d_width = UNIT * width
        m = ends[:, None, None] + self.psig[None]
        dm = self.d_psig[None] + rounding_bound(np.abs(ends)[:, None, None] + np.abs(self.psig)[None])
        valid = m > 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_m = np.where(valid, np.log(np.where(valid, m, 1.0)), 0.0)
        eta = np.where(valid, m * log_m, 0.0)
        size = 1.0 + np.abs(log_m)                      # bounds |eta'(m)| = |1 + log m|
        own = -eta                                      # tangent at an end, at that end
        own_err = size * dm + rounding_bound(np.abs(eta))
        # tangent at the lower end, at the upper end; and the other way round
        up = -eta[0] - (1.0 + log_m[0]) * width
        up_err = size[0] * (dm[0] + d_width) + rounding_bound(np.abs(eta[0]) + size[0] * width)
        down = -eta[1] + (1.0 + log_m[1]) * width
        down_err = size[1] * (dm[1] + d_width) + rounding_bound(np.abs(eta[1]) + size[1] * width)
        both = valid[0]
        line = np.where(both, 0.5 * np.stack([own[0] + down, up + own[1]]), np.stack([down, own[1]]))
        err = np.where(both, 0.5 * np.stack([own_err[0] + down_err, up_err + own_err[1]]),
                       np.stack([down_err, own_err[1]]))
        # no positive mass at either end: the masses this level can have lie in [0, m_2 + dm_2],
        # where -eta is at most -eta(min(m_2 + dm_2, 1/e)) (it increases up to 1/e)
        top = np.minimum(np.maximum(m[1] + dm[1], 0.0), math.exp(-1.0))
        flat = -xlogy(top, top)
        line = np.where(valid[1], line, flat[None])
        err = np.where(valid[1], err, np.asarray(rounding_bound(np.abs(flat)))[None])
        value = self.ph[None] + line
        err = err + self.d_ph[None] + rounding_bound(np.abs(self.ph)[None] + np.abs(line))
        if self.silent:   # the last row stands for the silent group: its line times their number
            value[:, -1] *= self.silent
            err[:, -1] = err[:, -1] * self.silent + rounding_bound(np.abs(value[:, -1]))
        return np.where(allowed[None], value, -math.inf), err

    def node(self, lo: float, hi: float, fixes: tuple[tuple[int, int], ...], lam0: float | None) -> _Node:
        """Bound of the node: window ``[lo, hi]`` on W, levels fixed by ``fixes``
        (module docstring), multiplier search from ``lam0`` (None: from the
        mean slope of the lines).  Returns the bound (valid for the exact f,
        rounding included), its rounding allowance, the branching, the
        arrangements to score (the relaxation on either side of its split),
        the narrowed window and the multiplier used."""
        out = self._filter(self.allowed(fixes), lo, hi)
        if out is None:
            return _Node(-math.inf, 0.0, None, [], lo, hi, lam0)
        allowed, lo, hi = out
        c_val, c_err = self._lines(allowed, lo, hi)
        ends = (lo, hi)
        free = allowed.sum(axis=1) > 1
        fixed_level = np.argmax(allowed, axis=1)
        rows = np.flatnonzero(~free)
        fixed_c = [float(c_val[e, rows, fixed_level[rows]].sum()) for e in (0, 1)]
        fixed_w = float(self.pw[rows, fixed_level[rows]].sum())
        pw_free = self.pw[free]
        c_free = c_val[:, free]
        allowed_free = allowed[free]
        # singleton levels taken by a fixed category need no choice
        taken = fixed_level[rows][self.single[fixed_level[rows]]]
        open_singles = np.setdiff1d(self.singles, taken)

        def evaluate(lam: float) -> tuple[float, float, int]:
            best = (-math.inf, 0.0, 0)
            for e in (0, 1):
                val, w, _, _ = _relax(c_free[e] - lam * pw_free, pw_free, allowed_free, self.mid, open_singles, False)
                total = lam * (ends[e] - fixed_w) + fixed_c[e] + val
                if e == 0 or total > best[0]:
                    best = (total, ends[e] - fixed_w - w, e)
            return best

        if lam0 is None:   # the multiplier that makes the lines of the middle levels flat on average
            first = self.mid[np.argmax(allowed[:, self.mid], axis=1)]
            rows_mid = np.flatnonzero(allowed[:, self.mid].any(axis=1))
            rise = c_val[1, rows_mid, first[rows_mid]] - c_val[0, rows_mid, first[rows_mid]]
            lam0 = -float(rise.sum()) / (hi - lo) if hi > lo else 0.0
        if not math.isfinite(evaluate(lam0)[0]):
            return _Node(-math.inf, 0.0, None, [], lo, hi, lam0)
        lam, left, right = _minimise(evaluate, lam0)
        bound, allowance = self._certified(lam, c_val, c_err, allowed, ends)
        if left == right:   # no bracket: the search may have run off along a slope that is rounding
            for other in (lam0, 0.0):   # every multiplier gives a valid bound; keep the least
                alt = self._certified(other, c_val, c_err, allowed, ends)
                if alt[0] < bound:
                    lam, bound, allowance = other, *alt
        # the relaxation just left and right of lam: its two roundings
        arrangements = []
        for point in (left, right):
            e = evaluate(point)[2]
            _, _, _, levels = _relax(c_free[e] - point * pw_free, pw_free, allowed_free, self.mid, open_singles, True)
            full = fixed_level.astype(np.int8)
            full[free] = levels
            arrangements.append(full)
        split = np.flatnonzero(arrangements[0] != arrangements[1])
        moves = np.abs(self.pw[split, arrangements[0][split]] - self.pw[split, arrangements[1][split]])
        width = hi - lo
        branch: tuple | None = None
        item = int(split[np.argmax(moves)]) if split.size else None
        if item is not None and width <= float(moves.max()):
            branch = ("item", item)
        elif width > 4.0 * self.slack:
            branch = ("window",)
        elif item is not None:
            branch = ("item", item)
        return _Node(bound, allowance, branch, arrangements, lo, hi, lam)

    def _certified(self, lam: float, c_val: np.ndarray, c_err: np.ndarray, allowed: np.ndarray,
                   ends: tuple[float, float]) -> tuple[float, float]:
        """The node's bound at multiplier ``lam``, valid for the exact f: every
        item value raised by its rounding allowance before the relaxation,
        and the relaxation's sums raised by theirs.  Returns the bound and
        the total allowance in it."""
        bound, allowance = -math.inf, 0.0
        for e in (0, 1):
            lin = lam * self.pw
            err = np.where(allowed, c_err[e] + abs(lam) * self.d_pw
                           + rounding_bound(np.abs(c_val[e]) + np.abs(lin)), 0.0)
            raised = np.where(allowed, c_val[e] - lin + err, -math.inf)
            val, _, size, _ = _relax(raised, self.pw, allowed, self.mid, self.singles, False, True)
            lam_w = lam * ends[e]
            sums = float(rounding_bound(size + abs(lam_w) + abs(val), pairwise_terms(allowed.shape[0]) + 2))
            total = lam_w + val + sums
            if total > bound:
                bound, allowance = total, sums + float(err.max(axis=1).sum())
        return bound, allowance


def _minimise(evaluate: Callable[[float], tuple[float, float, int]],
              lam0: float) -> tuple[float, float, float]:
    """Minimise a convex piecewise-linear function of lambda given its value
    and a subgradient: bracket the minimum, then cut with the two supporting
    lines (Kelley's method in one dimension), bisecting when a cut stalls.
    Returns the best lambda found and the ends of the last bracket (the
    pieces on either side of the minimum)."""
    fa, ga, _ = evaluate(lam0)
    best = (fa, lam0)
    if ga == 0.0:
        return lam0, lam0, lam0
    direction = 1.0 if ga < 0 else -1.0
    step = 1e-3 * abs(lam0) + 1e-3
    a = lam0
    b, steps = a + direction * step, 0
    fb, gb, _ = evaluate(b)
    while gb * direction < 0.0 and steps < _LAMBDA_STEPS:
        a, fa, ga = b, fb, gb
        best = min(best, (fa, a))
        step *= 8.0
        b = a + direction * step
        fb, gb, _ = evaluate(b)
        steps += 1
    best = min(best, (fb, b))
    if gb * direction < 0.0:     # no minimum in reach (the function only decreases): best point found
        return best[1], best[1], best[1]
    if direction < 0:
        a, fa, ga, b, fb, gb = b, fb, gb, a, fa, ga
    for _ in range(_LAMBDA_STEPS):
        if ga >= 0.0 or gb <= 0.0:
            break
        c = (fb - fa + ga * a - gb * b) / (ga - gb)
        if not a < c < b:
            c = 0.5 * (a + b)
            if not a < c < b:
                break
        fc, gc, _ = evaluate(c)
        best = min(best, (fc, c))
        support = fa + ga * (c - a)
        if fc <= support + 4.0 * UNIT * (abs(support) + abs(ga * (c - a)) + abs(fa)):
            return c, a, b
        if gc < 0.0:
            a, fa, ga = c, fc, gc
        elif gc > 0.0:
            b, fb, gb = c, fc, gc
        else:
            return c, c, c
    return best[1], a, b


def _cuts(lo: float, hi: float, excess: float, target: float, centre: float | None) -> list[float]:
    """Where to split a window whose bound exceeds the best value known by
    ``excess``.  That excess shrinks with the square of the width (the
    curvature of the tangents) around an arrangement that reaches the best
    value, while the bound of windows away from it falls with their
    distance: so when that arrangement's W (``centre``) lies in the window,
    the window is cut at a distance from it that should bring the excess
    under ``target`` (between 1/64 and 1/2 of the width); otherwise in the
    middle."""
    width = hi - lo
    if centre is None or not lo <= centre <= hi or excess <= 0.0:
        return [lo + 0.5 * width]
    near = min(max(0.5 * math.sqrt(target / excess), 1.0 / 64.0), 0.5) * width
    cuts = sorted({x for x in (centre - near, centre + near) if lo < x < hi})
    return cuts or [lo + 0.5 * width]


def bound_split(p: np.ndarray, singles: list[tuple[int | None, float]], rest: np.ndarray, big_b: float,
                small_b: float, incumbent: float, tol: float | Callable[[float], float], *,
                max_nodes: int = MAX_NODES) -> SplitBound:
    """Branch and bound over every arrangement of a pattern (module docstring).

    ``singles`` are the singleton levels as ``(category, level)``: a category
    of None places that singleton on any category of ``rest`` (every
    placement at once).  Every category of ``rest`` not holding a singleton
    takes ``big_b`` or ``small_b`` (one middle level if they are equal).  A
    node is closed when its bound is at most the larger of ``incumbent`` (a
    value known to be reachable, e.g. from another pattern; ``-inf`` for
    none) and the best arrangement found, plus ``tol`` (a number, or a
    function of that best value) -- or plus twice its own rounding
    allowance, if that is larger.

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        The original proportions.
    singles : list of (int or None, float)
        The singleton levels and where they go (above).
    rest : numpy.ndarray of int
        The categories that take a middle level (or a free singleton).
    big_b, small_b : float
        The middle levels B >= b.
    incumbent : float
        A value known to be reachable (``-inf`` for none).
    tol : float or callable
        How far above the best value known a bound may be and still close its node.
    max_nodes : int
        Nodes explored before the search stops (then ``closed`` is False).

    Returns
    -------
    SplitBound
        The best arrangement found, its value, and the proven upper bound.

    Raises
    ------
    ParameterError
        If ``big_b < small_b``, if singleton levels coincide with each other
        or with a middle level, or if a category is neither in ``rest`` nor
        holding a singleton (or is both).

    Examples
    --------
    >>> p = np.array([0.4, 0.3, 0.2, 0.1])
    >>> res = bound_split(p, [], np.arange(4), 0.6, 0.1, -math.inf, 1e-12)
    >>> bits = (np.arange(16)[:, None] >> np.arange(4)) & 1
    >>> best = float(form8_objective(p, np.where(bits == 1, 0.6, 0.1)).max())
    >>> res.closed, res.best_value == best, res.upper_bound >= best
    (True, True, True)
    """
    s = p.size
    mids = [big_b] if big_b == small_b else [big_b, small_b]
    fixed = [z for z, _ in singles if z is not None]
    covered = np.zeros(s, dtype=int)
    np.add.at(covered, np.concatenate([np.asarray(rest, dtype=np.intp), np.array(fixed, dtype=np.intp)]), 1)
    if big_b < small_b or np.any(covered != 1) or len({level for _, level in singles} | set(mids)) != \
            len(singles) + len(mids):
        raise ParameterError("bound_split needs big_b >= small_b, singleton levels distinct from each other and "
                             "from the middle ones, and every category either in rest or holding a singleton, once")
    levels = np.array(sorted({level for _, level in singles} | set(mids), reverse=True))
    single = np.isin(levels, [level for _, level in singles])
    index = {float(level): i for i, level in enumerate(levels)}
    mid_mask = sum(1 << index[float(m)] for m in mids)
    free_mask = mid_mask + sum(1 << index[float(level)] for z, level in singles if z is None)
    allowed = np.zeros(s, dtype=np.int64)
    allowed[rest] = free_mask
    for z, level in singles:
        if z is not None:
            allowed[z] = 1 << index[float(level)]
    prob = _Problem(p, levels, single, allowed, group=True)
    return _search(prob, incumbent, tol, max_nodes)


def _search(prob: _Problem, incumbent: float, tol: float | Callable[[float], float], max_nodes: int) -> SplitBound:
    """Best-first branch and bound (module docstring)."""
    found_value, found_q, found_w = -math.inf, None, 0.0
    heap: list[tuple] = []
    closed_bound = -math.inf
    unresolved: list[tuple[float, float]] = []   # (bound, allowance) of nodes with nothing left to split
    evaluated = scored = 0
    seen: set[int] = set()   # hashes of the arrangements scored (a collision only skips a score)

    def threshold(err: float) -> tuple[float, float]:
        """The best value known, and how far above it a bound with rounding allowance ``err`` closes."""
        known = max(incumbent, found_value)
        slack = tol(known) if callable(tol) else tol
        return known, max(slack, 2.0 * err) if math.isfinite(err) else slack

    def closes(bound: float, err: float) -> bool:
        known, allowance = threshold(err)
        return bound <= known + allowance

    def push(lo: float, hi: float, fixes: tuple[tuple[int, int], ...], lam: float | None) -> None:
        nonlocal found_value, found_q, found_w, closed_bound, evaluated, scored
        res = prob.node(lo, hi, fixes, lam)
        bound, err = res.bound, res.allowance
        if math.isnan(bound):   # never seen; an undefined bound proves nothing
            bound = err = math.inf
        evaluated += 1
        for levels in res.candidates:
            key = hash(levels.tobytes())
            if key in seen:
                continue
            seen.add(key)
            val, q = prob.value(levels)
            scored += 1
            if val > found_value:
                found_value, found_q = val, q
                found_w = float(prob.pw[np.arange(levels.size), levels].sum())
        if closes(bound, err):
            closed_bound = max(closed_bound, bound)
        elif res.branch is None:
            unresolved.append((bound, err))
        else:
            heapq.heappush(heap, (-bound, evaluated, err, res.branch, res.lo, res.hi, fixes, res.lam))

    push(-math.inf, math.inf, (), None)
    while heap and evaluated < max_nodes:
        neg_bound, _, err, branch, lo, hi, fixes, lam = heapq.heappop(heap)
        if closes(-neg_bound, err):
            closed_bound = max(closed_bound, -neg_bound)
            continue
        if branch[0] == "item":
            z = branch[1]
            for level in np.flatnonzero(prob.allowed(fixes)[z]):
                push(lo, hi, (*fixes, (z, int(level))), lam)
        else:
            known, target = threshold(err)
            centre = found_w if found_value >= known - target else None   # it reaches the best value known
            points = [lo, *_cuts(lo, hi, -neg_bound - known, target, centre), hi]
            for left, right in itertools.pairwise(points):
                push(left, right, fixes, lam)
    open_bound = max((-b for b, *_ in heap), default=-math.inf)
    upper = max(found_value, closed_bound, open_bound, *(b for b, _ in unresolved))
    closed = not heap and all(closes(b, e) for b, e in unresolved)
    return SplitBound(upper, found_value, found_q, evaluated, scored, closed)
