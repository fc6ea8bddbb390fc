"""Branch and bound over the split between the two middle levels of a vertex pattern.

A vertex pattern ``(A, B, ..., B, b, ..., b, a)`` of the DP polytope with two
middle levels ``B > b`` leaves, once the singletons are placed, the choice of
which of the remaining categories R take B: ``2^|R|`` arrangements, every one
feasible (``docs/design-dp.md``, Lemmas 2 and 3).  This module finds the best
of them and proves it: no arrangement beats the value returned (or a given
incumbent, reached elsewhere) by more than a tolerance.

**The bound.**  Let T be the categories of R at level B and ``P = sum_T p_k``.
Every quantity of f(q) (equation (9)) depends on T through P alone, except
one term per category of T:

    f = G(P) + sum_{k in T} g_k(W(P)),

    W(P)   = W_0 - kappa P                    (kappa = w(b) - w(B) > 0)
    G(P)   = const + (h(B) - h(b)) P - sum_z eta(W(P) + p_z sigma_z)
    g_k(W) = eta(W + p_k sigma(b)) - eta(W + p_k sigma(B))

with ``w(q) = (1 - q)/(S - 1)``, ``sigma(q) = q - w(q)``, ``eta(x) = x log x``
and, in G, ``sigma_z = sigma(b)`` for every category of R (the singletons
with their own levels).  G is concave in P (a sum of ``-eta`` of affine
functions); each ``g_k(W(P))`` is convex and increasing in P (``g_k' < 0`` and
``g_k'' > 0`` in W, and W falls with P).  For all T with P in a window
``[P_1, P_2]``, f is therefore at most the sum of

* the lower of G's tangents at ``P_1`` and ``P_2``;
* ``sum_T g_k(W(P_1))`` plus the chords' rise ``sum_T b_k (P - P_1)``, itself at
  most ``b_max (P - P_1)(P - P_fixed)`` with ``b_max = max_k b_k / p_k``, a
  convex quadratic below its own chord;
* for ``sum_T g_k(W(P_1))`` at a given free mass, the linear relaxation of
  the knapsack (greedy by ``g_k / p_k``, concave and piecewise linear in P).

That sum is concave and piecewise linear in P; its largest value over the
window, found among its breakpoints, bounds the node.  It is exact up to the
window's width and one fractional category, so the search halves windows
and, when a window is narrower than the fractional category's probability,
fixes that category to B or to b (fixed categories enter G with their exact
terms).  Best-first; a node is closed when its bound is at most the best
value known plus ``tol``.  Every node's relaxation, rounded down and up, is
scored exactly, which is how the search finds its arrangements.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from pramkit.information import form8_objective, form8_row_terms

#: Nodes explored per placement of the singletons before giving up (the bound is then reported).
MAX_NODES = 20_000


@dataclass(frozen=True)
class SplitBound:
    """Outcome of :func:`bound_split`.

    upper_bound: no arrangement of the pattern (with these singletons) has f
        above this (nats) -- or above the incumbent plus tol, whichever is larger
    best_value: the best f of the arrangements scored (-inf if none)
    best_q: that arrangement's keep probabilities (None if none)
    nodes: nodes bounded
    scored: arrangements scored exactly
    closed: the search finished, not stopped at MAX_NODES nodes
    """

    upper_bound: float
    best_value: float
    best_q: np.ndarray | None
    nodes: int
    scored: int
    closed: bool


def _eta(x: np.ndarray) -> np.ndarray:
    """``eta(x) = x log x`` (0 at 0)."""
    return xlogy(x, x)


def _d_eta(x: np.ndarray) -> np.ndarray:
    """``eta'(x) = 1 + log x`` (``-inf`` at 0)."""
    with np.errstate(divide="ignore"):
        return 1.0 + np.log(x)


def _tangent_envelope(x: np.ndarray, lo: float, hi: float, g1: float, d1: float, g2: float,
                      d2: float) -> np.ndarray:
    """The lower of the tangents at ``lo`` and ``hi`` of a concave function
    with values ``g1, g2`` and slopes ``d1 >= d2`` there (possibly infinite),
    at the points ``x`` of ``[lo, hi]``: an upper bound on the function, concave
    and piecewise linear.  A vertical tangent gives no bound beyond its end,
    so there the other tangent is used up to the end (its limit)."""
    with np.errstate(invalid="ignore"):
        t1 = np.full(x.shape, math.inf) if math.isinf(d1) else g1 + d1 * (x - lo)
        t2 = np.full(x.shape, math.inf) if math.isinf(d2) else g2 + d2 * (x - hi)
    return np.minimum(t1, t2)


class _Split:
    """The split problem of one pattern and one placement of its singletons."""

    def __init__(self, p: np.ndarray, singles: list[tuple[int, float]], rest: np.ndarray,
                 big_b: float, small_b: float) -> None:
        s = p.size
        self.p, self.rest, self.big_b, self.small_b = p, rest, big_b, small_b
        self.q0 = np.empty(s)
        for z, level in singles:
            self.q0[z] = level
        self.q0[rest] = small_b
        (w_bb, w_b), (self.sig_big, self.sig_small), (h_bb, h_b) = form8_row_terms([big_b, small_b], s)
        self.kappa = float(w_b - w_bb)
        self.beta = float(h_bb - h_b)
        self.pr = p[rest]
        self.total = float(self.pr.sum())
        #: rounding allowance on P (a sum of at most S terms): windows are widened
        #: by it, so that no arrangement falls out of its window by rounding
        self.slack = (s + 4) * np.finfo(float).eps * max(self.total, 1e-300)
        zs = np.array([z for z, _ in singles], dtype=np.intp)
        w_s, sig_s, h_s = form8_row_terms([level for _, level in singles], s)
        self.lin0 = float(p[zs] @ h_s) + float(h_b) * self.total
        self.w0 = float(p[zs] @ w_s) + float(w_b) * self.total
        self.single_off = p[zs] * sig_s

    def _gain_ratio(self, w: float, pf: np.ndarray) -> np.ndarray:
        """``g_k(W) / p_k`` for ``p_k > 0``, without cancellation: with
        ``u = W + p sigma(b)`` and ``delta = sigma(B) - sigma(b)``,
        ``eta(u) - eta(u + p delta) = -p delta log(u + p delta) - u log1p(p delta / u)``."""
        delta = self.sig_big - self.sig_small
        u = w + pf * self.sig_small
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = np.where(u > 0, u * np.log1p(pf * delta / np.where(u > 0, u, 1.0)) / pf, 0.0)
            return -delta * np.log(u + pf * delta) - tail

    def value(self, status: np.ndarray) -> tuple[float, np.ndarray]:
        """Exact f of the arrangement with ``status`` (1: B) on R."""
        q = self.q0.copy()
        q[self.rest[status == 1]] = self.big_b
        return float(form8_objective(self.p, q)), q

    def node(self, lo: float, hi: float,
             status: np.ndarray) -> tuple[float, tuple | None, list[np.ndarray], float, float]:
        """Bound of the node: window ``[lo, hi]`` on P, ``status`` 1 (at B),
        -1 (at b) or 0 (free) per category of R.  Returns the bound, the
        branching (``("item", k)``, ``("window", mid)`` or None: nothing left
        to split), arrangements to score (the relaxation rounded down and up)
        and the window narrowed to the P that the node's arrangements can have."""
        pr = self.pr
        fixed_in = status == 1
        free = (status == 0) & (pr > 0)
        p_in = float(pr[fixed_in].sum())
        p_free = float(pr[free].sum())
        slack = self.slack
        lo, hi = max(lo, p_in - slack), min(hi, p_in + p_free + slack)
        if lo > hi:
            return -math.inf, None, [], lo, hi
        off = np.concatenate([self.single_off, np.where(fixed_in, pr * self.sig_big, pr * self.sig_small)])
        # released masses of the singletons and fixed categories are >= 0: W(P) >= -their offset
        real = np.concatenate([self.single_off, off[self.single_off.size:][~free]])
        if real.size:
            hi = min(hi, (self.w0 + float(real.min())) / self.kappa + slack)
        if lo > hi:
            return -math.inf, None, [], lo, hi
        w_lo = self.w0 - self.kappa * hi          # the smallest W of the window
        idx = np.flatnonzero(free)
        pf = pr[idx]
        arg_big, arg_small = w_lo + pf * self.sig_big, w_lo + pf * self.sig_small
        negative = np.minimum(arg_big, arg_small)
        if negative.size and negative.min() <= 0.0:
            # the relaxation's concavity needs every free term defined (and positive) on the window
            return math.inf, ("item", int(idx[np.argmin(negative)])), [], lo, hi
        ends = []
        for x in (lo, hi):
            m = np.maximum(self.w0 - self.kappa * x + off, 0.0)
            ends.append((self.lin0 + self.beta * x - float(_eta(m).sum()),
                         self.beta + self.kappa * float(_d_eta(m).sum())))
        if ends[0][1] == -math.inf:
            # a real released mass (the free ones are positive) is 0 at lo and falls with P:
            # no arrangement of the node lies beyond lo
            hi, ends = lo, [(ends[0][0], 0.0), (ends[0][0], 0.0)]
        # g_k(W(P)) is convex and increasing in P: below its chord a_k + b_k (P - lo)
        ratio = self._gain_ratio(self.w0 - self.kappa * lo, pf)
        gain = ratio * pf
        width = hi - lo
        # sum_T b_k (P - lo) <= b_max (P - lo) (P - p_in), b_max = max b_k / p_k; the
        # quadratic is convex in P, so below its chord, of slope `rise` over the window
        if width > 0 and pf.size:
            b_max = float((self._gain_ratio(w_lo, pf) - ratio).max()) / width
        else:
            b_max = 0.0
        rise = max(b_max, 0.0) * max(hi - p_in, 0.0)
        # linear relaxation of max sum_{T free} gain_k at free mass X = P - p_in: greedy by
        # gain/p, concave and piecewise linear in X; the whole bound is concave and
        # piecewise linear in P, so its maximum is at a breakpoint
        order = np.argsort(-ratio, kind="stable")
        cum = np.concatenate([[0.0], np.cumsum(pf[order])])
        cum_gain = np.concatenate([[0.0], np.cumsum(gain[order])])
        (g1, d1), (g2, d2) = ends
        points = [lo, hi]
        if math.isfinite(d1) and math.isfinite(d2) and d1 > d2:
            points.append(min(max((g2 - g1 + d1 * lo - d2 * hi) / (d1 - d2), lo), hi))
        inner = cum[(cum > lo - p_in) & (cum < hi - p_in)] + p_in
        x = np.clip(np.concatenate([points, inner]), lo, hi)
        free_mass = np.clip(x - p_in, 0.0, cum[-1])
        if order.size:
            k = np.clip(np.searchsorted(cum, free_mass, side="right") - 1, 0, order.size - 1)
            relax = cum_gain[k] + (free_mass - cum[k]) * ratio[order][k]
        else:
            k, relax = np.zeros(x.size, dtype=np.intp), np.zeros(x.size)
        total = _tangent_envelope(x, lo, hi, g1, d1, g2, d2) + rise * (x - lo) + relax
        best = int(np.argmax(total))
        bound = float(total[best])
        k_best = int(k[best])
        full = order[:k_best]
        frac_item = None
        if order.size and free_mass[best] - cum[k_best] > 0.0:
            frac_item = int(order[k_best])
        down = status.copy()
        down[idx[full]] = 1
        candidates = [down]
        if frac_item is not None:
            up = down.copy()
            up[idx[frac_item]] = 1
            candidates.append(up)
        if frac_item is not None and hi - lo <= pf[frac_item]:
            return bound, ("item", int(idx[frac_item])), candidates, lo, hi
        if hi - lo > 4.0 * self.slack:
            return bound, ("window", 0.5 * (lo + hi)), candidates, lo, hi
        return bound, None, candidates, lo, hi


def bound_split(p: np.ndarray, singles: list[tuple[int, float]], rest: np.ndarray, big_b: float,
                small_b: float, incumbent: float, tol: float, *, max_nodes: int = MAX_NODES) -> SplitBound:
    """Branch and bound over every split of ``rest`` between the levels
    ``big_b > small_b``, the singletons ``(category, level)`` fixed (module
    docstring).  A node is closed when its bound is at most the larger of
    ``incumbent`` (a value known to be reachable, e.g. from another pattern;
    ``-inf`` for none) and the best arrangement found, plus ``tol``."""
    prob = _Split(p, singles, rest, big_b, small_b)
    found_value, found_q = -math.inf, None
    heap: list[tuple] = []
    closed_bound = unresolved = -math.inf
    evaluated = scored = 0

    def target() -> float:
        return max(incumbent, found_value) + tol

    def push(lo: float, hi: float, status: np.ndarray) -> None:
        nonlocal found_value, found_q, closed_bound, unresolved, evaluated, scored
        bound, branch, candidates, lo, hi = prob.node(lo, hi, status)
        if math.isnan(bound):   # never seen; an undefined bound proves nothing
            bound = math.inf
        evaluated += 1
        for cand in candidates:
            val, q = prob.value(cand)
            scored += 1
            if val > found_value:
                found_value, found_q = val, q
        if bound <= target():
            closed_bound = max(closed_bound, bound)
        elif branch is None:
            unresolved = max(unresolved, bound)
        else:
            heapq.heappush(heap, (-bound, evaluated, branch, lo, hi, status))

    push(0.0, prob.total, np.zeros(rest.size, dtype=np.int8))
    while heap and evaluated < max_nodes:
        neg_bound, _, branch, lo, hi, status = heapq.heappop(heap)
        if -neg_bound <= target():
            closed_bound = max(closed_bound, -neg_bound)
            continue
        if branch[0] == "item":
            for side in (1, -1):
                child = status.copy()
                child[branch[1]] = side
                push(lo, hi, child)
        else:
            push(lo, branch[1], status)
            push(branch[1], hi, status)
    open_bound = max((-b for b, *_ in heap), default=-math.inf)
    upper = max(found_value, closed_bound, open_bound, unresolved)
    closed = not heap and unresolved <= target()
    return SplitBound(upper, found_value, found_q, evaluated, scored, closed)
