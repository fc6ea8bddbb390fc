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

**Rounding.**  The bound a node reports is valid for the exact f of the
stored doubles, not only for its floating-point evaluation.  The knapsack
relaxation enters through its dual: for any multiplier lambda,
``max sum_T g_k <= lambda X + sum_k max(0, g_k - lambda p_k)`` (weak duality
of the fractional knapsack), with lambda the greedy ratio at the relaxation's
best point, where the dual is tight; the lower of the two tangents enters as
a convex combination of them (at most their minimum), with weights that make
the sum flat.  What is left is linear in P, so its maximum is at an end of
the window, and every sum over S terms is pairwise
(:func:`pramkit.privacy.exact.pairwise_sum`: ``ceil(log2 S)`` roundings per term).  Each
quantity carries a bound on its rounding error
(:func:`pramkit.privacy.exact.rounding_bound`, propagated through
``x log x`` by :func:`pramkit.privacy.exact.eta_error` and through ``log x``
by ``|log x - log m| <= dm / (m - dm)``), and the node's bound is raised by
their total.  A node whose bound is within twice that allowance of the best
value known is closed as well: floating point cannot separate them, and the
search reports the allowance in its upper bound.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from pramkit.information import form8_objective, form8_row_terms
from pramkit.privacy.exact import eta_error, pairwise_sum, pairwise_terms, rounding_bound

#: Nodes explored per placement of the singletons before giving up (the bound is then reported).
MAX_NODES = 20_000


@dataclass(frozen=True)
class SplitBound:
    """Outcome of :func:`bound_split`.

    upper_bound: no arrangement of the pattern (with these singletons) has an
        exact f above this (nats), rounding included
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
    """The split problem of one pattern and one placement of its singletons.

    Every constant comes with a bound on its rounding error (``d_*``): the
    exact problem is that of the doubles p, the singletons' levels, B and b."""

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
        self.delta = float(self.sig_big - self.sig_small)
        self.d_kappa = float(rounding_bound(w_b + w_bb))
        self.d_beta = float(rounding_bound(abs(h_bb) + abs(h_b) + 2.0 - big_b - small_b))
        self.d_sigma = float(rounding_bound(big_b + small_b + w_bb + w_b))
        self.pr = p[rest]
        self.total = math.fsum(self.pr)
        #: rounding allowance on P (a sum of at most S terms): windows are widened
        #: by it, so that no arrangement falls out of its window by rounding
        self.slack = (s + 4) * np.finfo(float).eps * max(self.total, 1e-300)
        zs = np.array([z for z, _ in singles], dtype=np.intp)
        levels = np.array([level for _, level in singles], dtype=float)
        w_s, sig_s, h_s = form8_row_terms(levels, s)
        self.lin0 = float(p[zs] @ h_s) + float(h_b) * self.total
        self.d_lin0 = float(rounding_bound(float(p[zs] @ (np.abs(h_s) + 1.0 - levels))
                                           + self.total * (abs(h_b) + 1.0 - small_b)))
        self.w0 = float(p[zs] @ w_s) + float(w_b) * self.total
        self.d_w0 = float(rounding_bound(self.w0))
        self.single_off = p[zs] * sig_s
        #: scale of the rounding of each released mass's offset p_z sigma_z
        self.single_scale = p[zs] * (levels + w_s)
        self.scale_big = self.pr * (big_b + w_bb)
        self.scale_small = self.pr * (small_b + w_b)

    def _w(self, x: float) -> tuple[float, float]:
        """``W(x) = W_0 - kappa x`` and a bound on its rounding error."""
        w = self.w0 - self.kappa * x
        return w, self.d_w0 + self.d_kappa * x + float(rounding_bound(abs(self.w0) + self.kappa * x))

    def _gain_ratio(self, w: float, pf: np.ndarray) -> np.ndarray:
        """``g_k(W) / p_k`` for ``p_k > 0``, without cancellation: with
        ``u = W + p sigma(b)`` and ``delta = sigma(B) - sigma(b)``,
        ``eta(u) - eta(u + p delta) = -p delta log(u + p delta) - u log1p(p delta / u)``."""
        delta = self.delta
        u = w + pf * self.sig_small
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = np.where(u > 0, u * np.log1p(pf * delta / np.where(u > 0, u, 1.0)) / pf, 0.0)
            return -delta * np.log(u + pf * delta) - tail

    def _gain_ratio_error(self, w: float, dw: float, pf: np.ndarray) -> np.ndarray:
        """A bound on the rounding error of :meth:`_gain_ratio` at a W computed
        with error ``dw`` (every released mass positive): the exact ratio moves
        by at most ``|delta| / min(u, v)`` per unit of W, ``p |delta| / min(u, v)``
        per unit of sigma(b) and ``|1 + log v|`` per unit of delta
        (``v = u + p delta``), doubled for the curvature over an interval of a
        few ulps; plus the evaluation's own rounding."""
        delta = abs(self.delta)
        u = w + pf * self.sig_small
        v = u + pf * self.delta
        low = np.minimum(u, v)
        drift = (delta / low * (dw + rounding_bound(np.abs(u)))
                 + (pf * delta / low + 2.0 * np.abs(1.0 + np.log(v))) * self.d_sigma)
        return 2.0 * drift + rounding_bound(delta * (np.abs(np.log(v)) + 1.0) + np.abs(u) * delta / low)

    def value(self, status: np.ndarray) -> tuple[float, np.ndarray]:
        """Exact f of the arrangement with ``status`` (1: B) on R."""
        q = self.q0.copy()
        q[self.rest[status == 1]] = self.big_b
        return float(form8_objective(self.p, q)), q

    def _end(self, x: float, off: np.ndarray, scale: np.ndarray) -> tuple[float, float, float, float, float]:
        """G and G' at x (a window's end): ``G(x) = lin0 + beta x - sum_z eta(W(x) + off_z)``,
        ``G'(x) = beta + kappa sum_z (1 + log m_z)``.  Returns G, G', a bound on
        G's rounding error, and an upper and a lower bound on the exact G' (the
        tangent at the left end needs the first, at the right end the second;
        a released mass within rounding of 0 makes the lower one ``-inf``).
        Sums over S terms are pairwise (:func:`pramkit.privacy.exact.pairwise_sum`)."""
        w, dw = self._w(x)
        raw = w + off
        m = np.maximum(raw, 0.0)
        dm = dw + rounding_bound(abs(w) + scale + np.abs(raw))
        with np.errstate(divide="ignore", invalid="ignore"):
            log_m = np.log(m)
            eta = np.where(m > 0, m * log_m, 0.0)
        terms = pairwise_terms(m.size)
        g = self.lin0 + self.beta * x - float(pairwise_sum(eta))
        err_g = (self.d_lin0 + self.d_beta * x + float(eta_error(m, dm, log_m).sum())
                 + float(rounding_bound(abs(self.lin0) + abs(self.beta) * x + float(np.abs(eta).sum()), terms)))
        slope_terms = 1.0 + log_m
        total = float(pairwise_sum(slope_terms))
        d = self.beta + self.kappa * total
        # bounds on sum_z (1 + log x_z) over |x_z - m_z| <= dm_z: |log x - log m| <= dm / (m - dm)
        # where m > dm; where m <= dm only log x <= log(m + dm) (no lower bound)
        if np.any((m == 0) & (dm == 0)):        # an exactly empty released value: G' is -inf there
            return g, d, err_g, -math.inf, -math.inf
        near = m <= dm
        with np.errstate(divide="ignore", invalid="ignore"):
            drift = float(np.where(near, 0.0, dm / (m - dm)).sum()) * (1.0 + 1e-9)
            size = float(rounding_bound(float(np.abs(slope_terms[~near]).sum()) + m.size, terms))
            if np.any(near):
                top = float(pairwise_sum(np.where(near, 1.0 + np.log(m + dm), slope_terms)))
                size += float(rounding_bound(float(np.abs(1.0 + np.log(m[near] + dm[near])).sum()), terms))
                moves = (top + drift + size, -math.inf)
            else:
                moves = (total + drift + size, total - drift - size)
        slopes = []
        for sign, moved in zip((1.0, -1.0), moves):
            if not math.isfinite(moved):
                slopes.append(moved)
                continue
            kappa = self.kappa + sign * self.d_kappa * (1.0 if moved >= 0 else -1.0)
            slopes.append(self.beta + kappa * moved
                          + sign * (self.d_beta + float(rounding_bound(abs(self.beta) + abs(kappa * moved)))))
        return g, d, err_g, slopes[0], slopes[1]

    def node(self, lo: float, hi: float,
             status: np.ndarray) -> tuple[float, float, tuple | None, list[np.ndarray], float, float]:
        """Bound of the node: window ``[lo, hi]`` on P, ``status`` 1 (at B),
        -1 (at b) or 0 (free) per category of R.  Returns the bound (valid for
        the exact f, rounding included), the part of it that is rounding
        allowance, the branching (``("item", k)``, ``("window", mid)`` or None:
        nothing left to split), arrangements to score (the relaxation rounded
        down and up) and the window narrowed to the P that the node's
        arrangements can have."""
        pr = self.pr
        fixed_in = status == 1
        free = (status == 0) & (pr > 0)
        p_in = float(pr[fixed_in].sum())
        p_free = float(pr[free].sum())
        slack = self.slack
        lo, hi = max(lo, p_in - slack), min(hi, p_in + p_free + slack)
        if lo > hi:
            return -math.inf, 0.0, None, [], lo, hi
        off = np.concatenate([self.single_off, np.where(fixed_in, pr * self.sig_big, pr * self.sig_small)])
        scale = np.concatenate([self.single_scale, np.where(fixed_in, self.scale_big, self.scale_small)])
        # released masses of the singletons and fixed categories are >= 0: W(P) >= -their offset
        real = np.concatenate([self.single_off, off[self.single_off.size:][~free]])
        if real.size:
            hi = min(hi, (self.w0 + float(real.min())) / self.kappa + slack)
        if lo > hi:
            return -math.inf, 0.0, None, [], lo, hi
        w_lo = self.w0 - self.kappa * hi          # the smallest W of the window
        idx = np.flatnonzero(free)
        pf = pr[idx]
        arg_big, arg_small = w_lo + pf * self.sig_big, w_lo + pf * self.sig_small
        negative = np.minimum(arg_big, arg_small)
        if negative.size and negative.min() <= 0.0:
            # the relaxation's concavity needs every free term defined (and positive) on the window
            return math.inf, math.inf, ("item", int(idx[np.argmin(negative)])), [], lo, hi
        ends = [self._end(x, off, scale) for x in (lo, hi)]
        if ends[0][1] == -math.inf:
            # a real released mass (the free ones are positive) is 0 at lo and falls with P:
            # no arrangement of the node lies beyond lo
            hi = lo
            ends = [(ends[0][0], 0.0, ends[0][2], 0.0, 0.0)] * 2
        # g_k(W(P)) is convex and increasing in P: below its chord a_k + b_k (P - lo)
        w_at_lo, dw_lo = self._w(lo)
        ratio = self._gain_ratio(w_at_lo, pf)
        gain = ratio * pf
        width = hi - lo
        w_at_hi, dw_hi = self._w(hi)
        ratio_hi = self._gain_ratio(w_at_hi, pf)
        # sum_T b_k (P - lo) <= b_max (P - lo) (P - p_in), b_max = max b_k / p_k; the
        # quadratic is convex in P, so below its chord, of slope `rise` over the window
        if width > 0 and pf.size:
            b_max = float((ratio_hi - ratio).max()) / width
        else:
            b_max = 0.0
        rise = max(b_max, 0.0) * max(hi - p_in, 0.0)
        # linear relaxation of max sum_{T free} gain_k at free mass X = P - p_in: greedy by
        # gain/p, concave and piecewise linear in X; the whole bound is concave and
        # piecewise linear in P, so its maximum is at a breakpoint
        order = np.argsort(-ratio, kind="stable")
        cum = np.concatenate([[0.0], np.cumsum(pf[order])])
        cum_gain = np.concatenate([[0.0], np.cumsum(gain[order])])
        (g1, d1, *_), (g2, d2, *_) = ends
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
        k_best = int(k[best])
        # the greedy ratios on either side of the best point: the dual multipliers of the relaxation
        multipliers = sorted({float(ratio[order][j]) for j in (k_best - 1, k_best) if 0 <= j < order.size}) or [0.0]
        err_gain = pf * self._gain_ratio_error(w_at_lo, dw_lo, pf)
        err_slope = (float((self._gain_ratio_error(w_at_hi, dw_hi, pf) + err_gain / pf).max()) * max(hi - p_in, 0.0)
                     if pf.size else 0.0)
        bound, err = min((self._dual_bound(lo, hi, p_in, ends, rise, lam, gain, pf, err_gain, err_slope)
                          for lam in multipliers), key=lambda r: r[0])
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
            return bound, err, ("item", int(idx[frac_item])), candidates, lo, hi
        if hi - lo > 4.0 * self.slack:
            return bound, err, ("window", 0.5 * (lo + hi)), candidates, lo, hi
        return bound, err, None, candidates, lo, hi

    @staticmethod
    def _dual_bound(lo: float, hi: float, p_in: float, ends: list[tuple[float, ...]], rise: float,
                    lam: float, gain: np.ndarray, pf: np.ndarray, err_gain: np.ndarray,
                    err_slope: float) -> tuple[float, float]:
        """The node's bound with the relaxation replaced by its dual at multiplier
        ``lam`` and the envelope by a convex combination of its tangents (module
        docstring), raised by its rounding allowance; returns (bound, allowance)."""
        width = hi - lo
        excess = np.maximum(gain - lam * pf, 0.0)
        dual = float(pairwise_sum(excess))
        err_dual = float(err_gain.sum()) + float(rounding_bound(float(np.abs(gain).sum()) + abs(lam) * float(pf.sum()),
                                                                pairwise_terms(excess.size)))
        # (value at lo, value at hi, allowance, size) of each usable tangent plus the rise: the tangent
        # at lo with an upper bound on the slope there, at hi with a lower bound (each stays above G)
        lines = []
        for (g, _, err_g, *_), at, d in zip(ends, (lo, hi), (ends[0][3], ends[1][4])):
            if math.isfinite(d):
                start = g + d * (lo - at)
                lines.append((start, start + (d + rise) * width, err_g, abs(g) + abs(d) * width))
        if not lines:
            return math.inf, math.inf
        linear_lo, linear_hi = lam * (lo - p_in), lam * (hi - p_in)
        weights = [1.0] if len(lines) == 1 else [0.0, 1.0]
        if len(lines) == 2:
            s1 = lines[0][1] - lines[0][0] + lam * width
            s2 = lines[1][1] - lines[1][0] + lam * width
            if s1 != s2:
                weights.append(min(max(s2 / (s2 - s1), 0.0), 1.0))   # the flat combination
        best = math.inf
        for a in weights:
            mix = [(a * l1 + (1.0 - a) * l2) for l1, l2 in zip(lines[0][:2], lines[-1][:2])] if len(lines) == 2 \
                else list(lines[0][:2])
            best = min(best, max(mix[0] + linear_lo, mix[1] + linear_hi) + dual)
        err_env = max(line[2] for line in lines)
        size = max(line[3] for line in lines) + abs(rise) * width + abs(lam) * max(abs(linear_lo), abs(linear_hi)) \
            + abs(lam) * width + abs(dual)
        err = err_env + err_dual + err_slope + float(rounding_bound(2.0 * size))
        return best + err, err


def bound_split(p: np.ndarray, singles: list[tuple[int, float]], rest: np.ndarray, big_b: float,
                small_b: float, incumbent: float, tol: float, *, max_nodes: int = MAX_NODES) -> SplitBound:
    """Branch and bound over every split of ``rest`` between the levels
    ``big_b > small_b``, the singletons ``(category, level)`` fixed (module
    docstring).  A node is closed when its bound is at most the larger of
    ``incumbent`` (a value known to be reachable, e.g. from another pattern;
    ``-inf`` for none) and the best arrangement found, plus ``tol`` -- or plus
    twice its own rounding allowance, if that is larger."""
    prob = _Split(p, singles, rest, big_b, small_b)
    found_value, found_q = -math.inf, None
    heap: list[tuple] = []
    closed_bound = -math.inf
    unresolved: list[tuple[float, float]] = []   # (bound, allowance) of nodes with nothing left to split
    evaluated = scored = 0

    def closes(bound: float, err: float) -> bool:
        allowance = max(tol, 2.0 * err) if math.isfinite(err) else tol
        return bound <= max(incumbent, found_value) + allowance

    def push(lo: float, hi: float, status: np.ndarray) -> None:
        nonlocal found_value, found_q, closed_bound, evaluated, scored
        bound, err, branch, candidates, lo, hi = prob.node(lo, hi, status)
        if math.isnan(bound):   # never seen; an undefined bound proves nothing
            bound = err = math.inf
        evaluated += 1
        for cand in candidates:
            val, q = prob.value(cand)
            scored += 1
            if val > found_value:
                found_value, found_q = val, q
        if closes(bound, err):
            closed_bound = max(closed_bound, bound)
        elif branch is None:
            unresolved.append((bound, err))
        else:
            heapq.heappush(heap, (-bound, evaluated, err, branch, lo, hi, status))

    push(0.0, prob.total, np.zeros(rest.size, dtype=np.int8))
    while heap and evaluated < max_nodes:
        neg_bound, _, err, branch, lo, hi, status = heapq.heappop(heap)
        if closes(-neg_bound, err):
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
    upper = max(found_value, closed_bound, open_bound, *(b for b, _ in unresolved))
    closed = not heap and all(closes(b, e) for b, e in unresolved)
    return SplitBound(upper, found_value, found_q, evaluated, scored, closed)
