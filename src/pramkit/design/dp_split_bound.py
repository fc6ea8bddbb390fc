"""Certified bound on the split between the two middle levels of a vertex pattern.

A vertex pattern ``(A, B, ..., B, b, ..., b, a)`` of the DP polytope with two
middle levels ``B > b`` leaves, once the singletons are placed, the choice of
which of the remaining categories R take B: ``2^|R|`` arrangements, every one
feasible (``docs/design-dp.md``, Lemmas 2 and 3).  The threshold search scores
only O(|R|) of them; this module proves, by branch and bound, that none of the
others does better than a given incumbent value (or finds one that does).

**The bound.**  Let T be the categories of R at level B and ``P = sum_T p_k``.
Every other quantity of f(q) (equation (9)) depends on T through P alone,
except one term per category of T:

    f = G(P) + sum_{k in T} g_k(W(P)),

    W(P)   = W_0 - kappa P                    (kappa = w(b) - w(B) > 0)
    G(P)   = const + (h(B) - h(b)) P - sum_z eta(W(P) + p_z sigma_z)
    g_k(W) = eta(W + p_k sigma(b)) - eta(W + p_k sigma(B))

with ``w(q) = (1 - q)/(S - 1)``, ``sigma(q) = q - w(q)``, ``eta(x) = x log x``
and, in G, ``sigma_z = sigma(b)`` for every category of R (plus the
singletons' own levels).  G is concave in P (a sum of ``-eta`` of affine
functions) and every ``g_k`` decreases in W (its derivative is
``log((W + p_k sigma(b)) / (W + p_k sigma(B))) < 0``), hence increases in P.
So for all T with P in a window ``[P_1, P_2]``:

    f <= max_{[P_1, P_2]} G  +  max { sum_{k in T} g_k(W(P_2)) : P_1 <= P <= P_2 },

the first term bounded by the tangents of G at both ends, the second by its
linear relaxation (a knapsack with one constraint: greedy by ``g_k / p_k``).
The bound is exact for the window's own sets up to the window's width and one
fractional category, so the search bisects windows and, when a window is
narrower than the fractional category's probability, fixes that category to B
or to b.  Categories whose level is fixed contribute their exact terms to G.
Best-first; a node is closed when its bound is at most the incumbent plus
``tol``.  Every arrangement reached on the way (the relaxation rounded down and
up) is scored exactly and replaces the incumbent if it is better.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from pramkit.information import form8_objective

#: Nodes explored per placement of the singletons before giving up (the bound is then reported).
MAX_NODES = 20_000


@dataclass(frozen=True)
class SplitBound:
    """Outcome of :func:`bound_split`.

    upper_bound: no arrangement of the pattern (with these singletons) has f above this, nats
    best_value: the best f seen (the incumbent, or better)
    best_q: the arrangement achieving ``best_value`` if it beats the incumbent, else None
    nodes: nodes explored
    closed: the search finished (``upper_bound <= incumbent + tol``), not stopped at MAX_NODES
    """

    upper_bound: float
    best_value: float
    best_q: np.ndarray | None
    nodes: int
    closed: bool


def _eta(x: np.ndarray) -> np.ndarray:
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
    env = np.minimum(t1, t2)
    if math.isinf(d1) and math.isinf(d2):
        env[:] = math.inf
    return env


class _Split:
    """The split problem of one pattern and one placement of its singletons."""

    def __init__(self, p: np.ndarray, singles: list[tuple[int, float]], rest: np.ndarray,
                 big_b: float, small_b: float) -> None:
        s = p.size
        c = s - 1
        self.p, self.rest, self.big_b, self.small_b = p, rest, big_b, small_b
        self.q0 = np.empty(s)
        for z, level in singles:
            self.q0[z] = level
        self.q0[rest] = small_b
        w_b, w_bb = (1.0 - small_b) / c, (1.0 - big_b) / c
        h = lambda q: float(xlogy(q, q) + xlogy(1.0 - q, (1.0 - q) / c))  # noqa: E731
        self.kappa = w_b - w_bb
        self.beta = h(big_b) - h(small_b)
        self.sig_big, self.sig_small = big_b - w_bb, small_b - w_b
        self.pr = p[rest]
        self.total = float(self.pr.sum())
        #: rounding allowance on P (a sum of at most S terms): windows are widened
        #: by it, so that no arrangement falls out of its window by rounding
        self.slack = (s + 4) * np.finfo(float).eps * max(self.total, 1e-300)
        self.lin0 = sum(p[z] * h(level) for z, level in singles) + h(small_b) * self.total
        self.w0 = sum(p[z] * (1.0 - level) / c for z, level in singles) + w_b * self.total
        self.single_off = np.array([p[z] * (level - (1.0 - level) / c) for z, level in singles])

    def value(self, status: np.ndarray) -> tuple[float, np.ndarray]:
        """Exact f of the arrangement with ``status`` (1: B) on R."""
        q = self.q0.copy()
        q[self.rest[status == 1]] = self.big_b
        return float(form8_objective(self.p, q)), q

    def node(self, lo: float, hi: float, status: np.ndarray):
        """Bound of the node (window ``[lo, hi]`` on P, ``status`` 1 in, -1 out,
        0 free); returns (bound, branching, candidates) where branching is
        ``("item", k)``, ``("window", mid)`` or None (nothing left to split),
        and the window narrowed to the P that its arrangements can have."""
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
        if negative.size and negative.min() < 0.0:
            # the relaxation's concavity needs every free term defined on the window
            return math.inf, ("item", int(idx[np.argmin(negative)])), [], lo, hi
        ends = []
        for x in (lo, hi):
            m = np.maximum(self.w0 - self.kappa * x + off, 0.0)
            ends.append((self.lin0 + self.beta * x - float(_eta(m).sum()),
                         self.beta + self.kappa * float(_d_eta(m).sum())))
        # g_k(W(P)) is convex and increasing in P: below its chord a_k + b_k (P - lo)
        w_hi = self.w0 - self.kappa * lo
        gain_lo = _eta(w_hi + pf * self.sig_small) - _eta(w_hi + pf * self.sig_big)
        gain_hi = _eta(arg_small) - _eta(arg_big)
        width = hi - lo
        # sum_T b_k (P - lo) <= b_max (P - lo) (P - p_in), b_max = max b_k / p_k; the
        # quadratic is convex in P, so below its chord, of slope `rise` over the window
        b_max = float(((gain_hi - gain_lo) / pf).max(initial=0.0)) / width if width > 0 else 0.0
        rise = max(b_max, 0.0) * max(hi - p_in, 0.0)
        gain = gain_lo
        # linear relaxation of max sum_{T free} gain_k at free mass X = P - p_in: greedy by
        # gain/p, concave and piecewise linear in X; the whole bound is concave and
        # piecewise linear in P, so its maximum is at a breakpoint
        order = np.argsort(-gain / pf, kind="stable")
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
            relax = cum_gain[k] + (free_mass - cum[k]) * (gain[order] / pf[order])[k]
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
    docstring).  Closes when no open node's bound exceeds the best value
    (``incumbent`` or better) plus ``tol``."""
    prob = _Split(p, singles, rest, big_b, small_b)
    best_value, best_q = incumbent, None
    heap: list[tuple] = []
    unresolved = -math.inf
    counter = 0

    def push(lo: float, hi: float, status: np.ndarray) -> None:
        nonlocal counter, best_value, best_q, unresolved
        bound, branch, candidates, lo, hi = prob.node(lo, hi, status)
        for cand in candidates:
            val, q = prob.value(cand)
            if val > best_value:
                best_value, best_q = val, q
        if bound <= best_value + tol:
            return
        if branch is None:
            unresolved = max(unresolved, bound)
            return
        counter += 1
        heapq.heappush(heap, (-bound, counter, branch, lo, hi, status))

    push(0.0, prob.total, np.zeros(rest.size, dtype=np.int8))
    nodes = 1
    while heap and nodes < max_nodes:
        neg_bound, _, branch, lo, hi, status = heapq.heappop(heap)
        if -neg_bound <= best_value + tol:
            continue
        nodes += 1
        if branch[0] == "item":
            for side in (1, -1):
                child = status.copy()
                child[branch[1]] = side
                push(lo, hi, child)
        else:
            mid = branch[1]
            push(lo, mid, status)
            push(mid, hi, status)
    open_bound = max((-b for b, *_ in heap), default=-math.inf)
    upper = max(best_value, open_bound, unresolved)
    closed = not heap and unresolved <= best_value + tol
    return SplitBound(upper, best_value, best_q, nodes, closed)
