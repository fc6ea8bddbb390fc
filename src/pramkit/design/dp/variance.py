"""Epsilon-DP PRAM of form (8) with the smallest variance of the unbiased estimator.

A design that maximises mutual information (:mod:`pramkit.design.dp.optimal`)
can be singular, and then the unbiased moment estimator of the frequencies
does not exist.  This module minimises instead the total variance of that
estimator over the same feasible set: matrices of form (8) of Ayed,
Battiston and Camerlenghi (keep category k with probability ``q_k``, else
release one of the other ``S - 1`` uniformly) that are epsilon-DP, i.e. that
satisfy the pairwise constraints (10), written linearly as (12)-(17) (with the
sign of (15) corrected: ``1 - q_l <= e^eps (S - 1) q_k``).

The objective is the L2 loss of Cator, Hensbergen and Rozenholc (section 3)
of the unbiased estimator (4), ``mu_hat = (P^T)^{-1} lambda_hat``, for a file
of n records whose category proportions are p:

    l2(M) = (1/n) sum_k p_k psi_k(M),
    psi_k(M) = sum_j M[k, j] ||(M^{-1})[j, :]||^2 - 1,

the trace of the covariance of the estimated proportions (PRAM the only
randomness); ``psi_k`` is the variance that one record of category k adds.
With sampling as well (multinomial records) the trace is
``(1/n)(sum_k p_k psi_k + 1 - sum_k p_k^2)``, the same function of M plus a
constant.

Closed form (``docs/design-variance.md``).  With ``d_k = (S q_k - 1)/(S - 1)``
the matrix is ``M = D P + J/S`` (``P = I - J/S``), the estimator's covariance
lives on the sum-zero space V, where ``X = P D P`` acts, and

    psi_k = tr(Sigma_k X^{-2}),  Sigma_k = ((1 - d_k)/S) (I + (S - 1) d_k u u^T)

on V (u the unit vector along ``e_k - 1/S``), computed for all k in O(S) by
:func:`form8_variances`.

The optimum.  For every p, every S >= 2 and every epsilon the minimum is
randomized response, ``q_k = e^eps / (e^eps + S - 1)`` for all k, with

    psi_k = (S - 1)(2 e^eps + S - 2)/(e^eps - 1)^2  for every k,

so **the optimal design does not depend on p at all**, nor does its
PRAM-only loss; with sampling the loss depends on p only through
``sum_k p_k^2``.  (For S = 2 the mirror image ``q = 1 - v`` ties; the
truthful one is returned.)

The certificate (proof in ``docs/design-variance.md``).  Since
``l2 = (1/n) sum_k p_k psi_k``, a lower bound on ``min_M psi_k(M)`` (the same
for every k by symmetry) is a lower bound for every p.  It is proved:

* S = 2: in closed form (Lemma 4: ``|d_1 + d_2| <= 2 delta``).
* S >= 3, X positive definite and ``d_k < 0``: ``psi_k >= S / delta^2`` in
  closed form (Lemma 5; delta is the d of randomized response).
* S >= 3, X positive definite and ``d_k >= 0`` (this contains the whole
  truthful set): a Schur-complement bound that depends on ``d_k`` only,
  minimised by a one-dimensional branch and bound (Lemma 6).
* S >= 4, X with a negative eigenvalue: bounds on the spectrum of X from
  interlacing and from the structure of the DP polytope (Lemmas 2, 3) give a
  bound that depends on ``d_k`` and on the largest, second largest and
  smallest d only; a branch and bound over boxes of these order statistics,
  pruned by the constraints (12)-(17) between them, minimises it (Lemma 7).
* S = 3 (without ``truthful``): X is 2 x 2 and ``psi_k`` a rational function
  of the three d, bounded everywhere by a branch and bound with interval
  arithmetic (Lemma 8).

Every bound is evaluated in interval arithmetic with outward rounding: each
IEEE operation (``+ - * /``, correctly rounded) is followed by a step of one
ulp in the safe direction (:func:`_up`, :func:`_dn`), and ``e^eps`` and
``e^eps - 1`` are enclosed with :mod:`decimal` (:func:`_exp_enclosure`); so
every bound is at most its exact value, whatever the cancellation.
``optimal`` is true when every search closed and the proved lower bound is
within ``VARIANCE_RTOL`` (relative) of the objective, plus the objective's own
rounding (absolute).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.design.dp.optimal import _check_size, check_epsilon
from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.exact import UNIT, float_up, form8_within_budget
from pramkit.validate import probabilities

#: Relative tolerance of the optimality certificate.
VARIANCE_RTOL = 1e-8
#: Significant digits of the decimal enclosures of ``e^eps`` and ``e^eps - 1``
#: (beyond the leading zeros of epsilon).
_DIGITS = 45
#: Largest number of boxes one branch and bound may evaluate.
MAX_NODES = 4_000_000
#: Boxes evaluated at once.
_CHUNK = 1 << 15


# ---------------------------------------------------------------------------
# Randomized response and the variance of a form (8) matrix
# ---------------------------------------------------------------------------

def _up(x: Any) -> Any:
    """The next double up: after a correctly rounded operation (error at most
    half an ulp, also for subnormal results and overflow), a bound from above
    on the exact result."""
    return np.nextafter(x, math.inf)


def _dn(x: Any) -> Any:
    """The next double down: a bound from below on the exact result of the
    correctly rounded operation that gave ``x``."""
    return np.nextafter(x, -math.inf)


def _float_down(value: Decimal) -> float:
    """The largest double not above ``value``."""
    return -float_up(-value)


def _exp_enclosure(epsilon: float) -> tuple[float, float, float, float]:
    """Doubles ``t_lo <= e^eps <= t_hi`` and ``m_lo <= e^eps - 1 <= m_hi``.

    :mod:`decimal`'s ``exp`` is correctly rounded (half an ulp at its
    precision, here ``_DIGITS`` digits beyond the leading zeros of epsilon, so
    that ``e^eps - 1`` keeps them for a tiny epsilon); one ulp either side
    encloses the truth, the subtraction of 1 is exact at twice the
    precision, and the enclosure is rounded outward to doubles.

    Examples
    --------
    >>> t_lo, t_hi, m_lo, m_hi = _exp_enclosure(1e-300)
    >>> m_lo <= 1e-300 <= m_hi and t_lo <= 1.0 <= t_hi
    True
    """
    prec = _DIGITS + max(0, -math.floor(math.log10(epsilon)))
    ex = Decimal(epsilon).exp(Context(prec=prec, Emin=-10**6, Emax=10**6))
    ulp = Decimal(10) ** (ex.adjusted() - prec + 1)
    wide = Context(prec=2 * prec + 10, Emin=-10**6, Emax=10**6)
    lo, hi = wide.subtract(ex, ulp), wide.add(ex, ulp)
    return (_float_down(lo), float_up(hi), _float_down(wide.subtract(lo, 1)), float_up(wide.subtract(hi, 1)))


@dataclass(frozen=True)
class _Constants:
    """Constants of the DP polytope at (S, epsilon), computed without overflow.

    t: e^eps; em1: e^eps - 1; delta: d of randomized response,
    ``(t - 1)/(t + S - 1)``; nu: ``(t - 1)/(1 + (S - 1) t)`` (minus the d of the symmetric design at
    ``v_-eps``); psi: the per-record variance of randomized response (all to
    rounding); and the enclosures used by the proof: ``t_lo <= e^eps <= t_hi``,
    ``delta <= delta_hi``, ``nu <= nu_hi``, ``psi_lo <= psi`` (exact values).
    """

    s: int
    t: float
    em1: float
    delta: float
    nu: float
    psi: float
    t_lo: float
    t_hi: float
    delta_hi: float
    nu_hi: float
    psi_lo: float

    @classmethod
    def of(cls, s: int, epsilon: float) -> _Constants:
        em1 = math.expm1(epsilon)
        t_lo, t_hi, _, m_hi = _exp_enclosure(epsilon)
        # delta, nu increase and psi decreases with e^eps - 1: its upper end bounds them
        with np.errstate(over="ignore"):
            delta_hi = _up(m_hi / _dn(m_hi + s))
            nu_hi = _up(m_hi / _dn(s + _dn((s - 1) * m_hi)))
            psi_lo = _dn((s - 1) * _dn(_dn(2.0 / m_hi) + _dn(_dn(s / m_hi) / m_hi)))
        return cls(
            s=s, t=t_lo, em1=em1,
            delta=em1 / (em1 + s),
            nu=em1 / (s + (s - 1) * em1),
            psi=(s - 1) * (2.0 / em1 + (s / em1) / em1),
            t_lo=t_lo, t_hi=t_hi, delta_hi=float(delta_hi), nu_hi=float(nu_hi), psi_lo=max(float(psi_lo), 0.0),
        )


def rr_keep_probability(s: int, epsilon: float) -> float:
    """Keep probability of randomized response, ``e^eps / (e^eps + S - 1)``,
    the optimal q of every category (module docstring).

    Parameters
    ----------
    s : int
        The number of categories S >= 2.
    epsilon : float
        The privacy budget, natural log units.

    Returns
    -------
    float
        q, computed as ``1 / (1 + (S - 1) e^-eps)`` (no overflow at large epsilon).

    Raises
    ------
    ParameterError
        If S is not an integer >= 2 or epsilon is not a valid budget.

    References
    ----------
    Ayed, Battiston and Camerlenghi, ``v_alpha`` of Proposition 3.2 (the
    symmetric optimum of form (8)).

    Examples
    --------
    >>> round(rr_keep_probability(3, math.log(2)), 12)
    0.5
    """
    s, e = _check_size(s), check_epsilon(epsilon)
    return 1.0 / (1.0 + (s - 1) * math.exp(-e))


def per_record_variance(s: int, epsilon: float) -> float:
    """``psi`` of randomized response: the variance that one record adds to the
    summed squared error of the estimated proportions (any category),
    ``(S - 1)(2 e^eps + S - 2)/(e^eps - 1)^2``; the optimal value of the
    per-record loss ``sum_k p_k psi_k`` for every p.

    Parameters
    ----------
    s : int
        The number of categories S >= 2.
    epsilon : float
        The privacy budget, natural log units.

    Returns
    -------
    float
        psi, per record.

    Raises
    ------
    ParameterError
        If S is not an integer >= 2 or epsilon is not a valid budget.

    Examples
    --------
    >>> per_record_variance(4, math.log(2))
    18.0
    >>> per_record_variance(2, 1.0) == 2 * math.e / (math.e - 1) ** 2
    True
    """
    return _Constants.of(_check_size(s), check_epsilon(epsilon)).psi


def form8_variances(q: ArrayLike) -> np.ndarray:
    """``psi_k`` for every category of the form (8) matrix with diagonal q, in O(S).

    ``psi_k = sum_j M[k, j] ||(M^{-1})[j, :]||^2 - 1`` is the variance a record
    of category k adds to the summed squared error of the unbiased estimator
    (4) of Cator, Hensbergen and Rozenholc; ``l2 = (1/n) sum_k p_k psi_k``.
    With ``d = (S q - 1)/(S - 1)``, ``a = 1/d``, ``sigma = sum a``,
    ``B = diag(a) - a a^T / sigma`` (the inverse of ``P D P`` on the sum-zero
    space) and ``g_k = (B^2)_kk = a_k^2 (sigma_-k^2 + tau_-k) / sigma^2``
    (``sigma_-k``, ``tau_-k``: sum of the other a and of their squares),

        psi_k = (1 - d_k) (d_k g_k + (sum_j g_j) / S).

    A single ``d_m = 0`` is the limit ``a_m -> inf`` (``B_mm = sigma_-m``,
    ``B_mj = -a_j``); ``inf`` where the matrix is singular (two zeros, or
    ``sigma = 0``).  Proof in ``docs/design-variance.md``.

    Parameters
    ----------
    q : array_like, shape (S,)
        The keep probabilities of form (8), in [0, 1], S >= 2.

    Returns
    -------
    numpy.ndarray, shape (S,)
        psi_k of every category (``inf`` where the matrix is singular).

    Raises
    ------
    ParameterError
        If q is not a 1-D array of at least two probabilities.

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 3 (estimator (4)); Ayed,
    Battiston and Camerlenghi, form (8).

    Examples
    --------
    >>> q = np.full(4, 0.4)                    # randomized response, S = 4, eps = log 2
    >>> form8_variances(q).round(9).tolist()
    [18.0, 18.0, 18.0, 18.0]
    >>> form8_variances([1/3, 1/3, 0.8]).tolist()   # two uniform rows: singular
    [inf, inf, inf]
    """
    qv = np.asarray(q, dtype=float)
    if qv.ndim != 1 or qv.size < 2 or not np.all(np.isfinite(qv)) or np.any(qv < 0) or np.any(qv > 1):
        raise ParameterError("q must be a 1-D array of at least two keep probabilities in [0, 1]")
    s = qv.size
    d = (s * qv - 1.0) / (s - 1)
    zero = d == 0
    if zero.sum() >= 2:
        return np.full(s, math.inf)
    if zero.any():
        m = int(np.flatnonzero(zero)[0])
        others = np.delete(np.arange(s), m)
        a = 1.0 / d[others]
        sig, tau = math.fsum(a.tolist()), math.fsum((a * a).tolist())
        g = np.empty(s)
        g[others] = 2.0 * a * a
        g[m] = sig * sig + tau
    else:
        a = 1.0 / d
        a2 = a * a
        sig, tau = math.fsum(a.tolist()), math.fsum(a2.tolist())
        if sig == 0.0:
            return np.full(s, math.inf)
        big = int(np.argmax(np.abs(a)))
        sig_minus = sig - a
        sig_minus[big] = math.fsum(np.delete(a, big).tolist())
        tau_minus = tau - a2
        tau_minus[big] = math.fsum(np.delete(a2, big).tolist())
        g = a2 * (sig_minus * sig_minus + np.maximum(tau_minus, 0.0)) / (sig * sig)
    trace = math.fsum(g.tolist())
    psi = (1.0 - d) * (d * g + trace / s)
    return np.where(np.isfinite(psi), np.maximum(psi, 0.0), math.inf)


def form8_l2_loss(p: ArrayLike, q: ArrayLike, n: int = 1) -> float:
    """Cator's L2 loss ``(1/n) sum_k p_k psi_k`` of the form (8) matrix with
    diagonal q for a file of n records with proportions p (PRAM the only
    randomness); ``inf`` if the matrix is singular.  O(S).

    Parameters
    ----------
    p : array_like, shape (S,)
        Proportions of the categories.
    q : array_like, shape (S,)
        The keep probabilities of form (8).
    n : int
        Number of records (default 1: the loss per record).

    Returns
    -------
    float
        l2, proportion squared.

    Raises
    ------
    ParameterError
        If p or q is invalid, they differ in length, or n is not a positive integer.

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 3: the L2 loss of estimator (4).

    Examples
    --------
    >>> form8_l2_loss([0.2, 0.3, 0.5], [0.5, 0.5, 0.5], n=10)   # psi = (S-1)(2t+S-2)/(t-1)^2 = 10
    1.0
    """
    pv = probabilities(p)
    psi = form8_variances(q)
    if psi.size != pv.size:
        raise ParameterError(f"q has {psi.size} entries but p has {pv.size}")
    used = pv > 0
    return float(math.fsum((pv[used] * psi[used]).tolist())) / _check_n(n)


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError(f"n (the number of records) must be a positive integer, got {n!r}")
    return int(n)


# ---------------------------------------------------------------------------
# The lower bound: branch and bound over boxes
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SearchResult:
    """One branch and bound of the certificate (:func:`variance_lower_bound`).

    Attributes
    ----------
    region : str
        Which part of the feasible set it covers (one of :data:`REGIONS`).
    lower_bound : float
        No matrix in that part has a smaller ``psi_k`` (per record).
    nodes : int
        Boxes evaluated.
    closed : bool
        Every box was bounded at or above the target (else ``lower_bound``
        is the smallest bound of the boxes left open).

    Examples
    --------
    For S = 4 the positive definite part is searched first; its bound reaches
    randomized response's ``psi = 18`` to within the tolerance:

    >>> first = variance_lower_bound(4, math.log(2)).searches[0]
    >>> first.region, first.closed, math.isclose(first.lower_bound, 18.0, rel_tol=1e-8)
    ('positive_definite', True, True)
    """

    region: str
    lower_bound: float
    nodes: int
    closed: bool


Evaluate = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _branch_and_bound(region: str, lo: np.ndarray, hi: np.ndarray, evaluate: Evaluate,
                      target: float, max_nodes: int, split: Callable[[np.ndarray, np.ndarray], np.ndarray]
                      ) -> SearchResult:
    """Minimise a box bound: ``evaluate(lo, hi)`` returns the boxes shrunk to
    their feasible part (infeasible ones dropped) and a lower bound on each.
    Boxes bounded at or above ``target`` are closed; the others are split in
    two along the dimension ``split`` chooses, at the point it returns.  A box
    that floating point cannot split stays open.  Depth first, in chunks."""
    stack: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(lo, hi, np.full(len(lo), -math.inf))]
    nodes, lowest, exhausted = 0, math.inf, False
    while stack:
        L, H, parent = stack.pop()
        if len(L) > _CHUNK:
            stack.append((L[_CHUNK:], H[_CHUNK:], parent[_CHUNK:]))
            L, H, parent = L[:_CHUNK], H[:_CHUNK], parent[:_CHUNK]
        if nodes >= max_nodes:
            exhausted = True
            lowest = min(lowest, float(parent.min()))
            continue
        L, H, bound = evaluate(L, H)
        nodes += len(parent)
        done = bound >= target
        if done.any():
            lowest = min(lowest, float(bound[done].min()))
        L, H, bound = L[~done], H[~done], bound[~done]
        if not len(L):
            continue
        dim = np.argmax(_relative_width(L, H), axis=1)
        rows = np.arange(len(L))
        mid = split(L[rows, dim], H[rows, dim])
        stuck = ~((L[rows, dim] < mid) & (mid < H[rows, dim]))
        if stuck.any():
            exhausted = True
            lowest = min(lowest, float(bound[stuck].min()))
            keep = ~stuck
            L, H, bound, dim, mid = L[keep], H[keep], bound[keep], dim[keep], mid[keep]
            rows = np.arange(len(L))
        L2, H2 = L.copy(), H.copy()
        H[rows, dim] = mid
        L2[rows, dim] = mid
        stack.append((np.concatenate([L, L2]), np.concatenate([H, H2]), np.concatenate([bound, bound])))
    return SearchResult(region, lowest, nodes, not exhausted)


def _relative_width(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How wide a side of a box is relative to its position, so that a range
    of ``s = 1 - d`` near 0 (randomized response at large epsilon has
    ``s = S/(e^eps + S - 1)``) is refined as readily as one near 1."""
    return (hi - lo) / np.maximum(np.maximum(np.abs(hi), np.abs(lo)), 1e-300)


def _split_point(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Where a side is split: the geometric mean when it spans more than a
    factor 4 above 0, else the middle."""
    with np.errstate(invalid="ignore"):
        geo = np.sqrt(np.maximum(lo, 0.0)) * np.sqrt(hi)
    return np.where((lo > 0) & (hi > 4.0 * lo), geo, 0.5 * (lo + hi))


def _defined(b: np.ndarray) -> np.ndarray:
    """An undefined bound (NaN) bounds nothing (-inf), so that its box is split rather than closed."""
    return np.where(np.isnan(b), -math.inf, b)


def _times(factor: np.ndarray, value: np.ndarray) -> np.ndarray:
    """A lower bound on ``factor * value`` for lower bounds ``factor`` and
    ``value >= 0`` of non-negative quantities, with ``0 * inf = 0`` (a factor
    at most 0 removes the term)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(factor > 0, _dn(factor * value), 0.0)


def _div_dn(num: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A lower bound on ``n / t`` for every ``n >= num`` and ``t`` in ``[lo, hi]``, ``lo > 0``."""
    return np.where(num >= 0, _dn(num / hi), _dn(num / lo))


def _inverse_sqrt12() -> tuple[float, float]:
    """Doubles ``lo < 1/sqrt(12) < hi`` (one ulp apart or two), checked in
    rational arithmetic: ``12 lo^2 < 1 < 12 hi^2`` (equality is impossible)."""
    lo = hi = 1.0 / math.sqrt(12.0)
    while 12 * Fraction(lo) ** 2 > 1:
        lo = math.nextafter(lo, 0.0)
    while 12 * Fraction(hi) ** 2 < 1:
        hi = math.nextafter(hi, math.inf)
    return lo, hi


def _mul_iv(al: np.ndarray, ah: np.ndarray, bl: np.ndarray | float, bh: np.ndarray | float
            ) -> tuple[np.ndarray, np.ndarray]:
    """The product of the intervals ``[al, ah]`` and ``[bl, bh]`` (finite), rounded outward."""
    prods = [al * bl, al * bh, ah * bl, ah * bh]
    return _dn(np.minimum.reduce(prods)), _up(np.maximum.reduce(prods))


def _sqr_iv(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The square of the interval ``[lo, hi]``, rounded outward (never below 0)."""
    small = np.where((lo <= 0) & (hi >= 0), 0.0, np.maximum(_dn(np.minimum(lo * lo, hi * hi)), 0.0))
    return small, _up(np.maximum(lo * lo, hi * hi))


def _pair_rows(c: _Constants) -> list[tuple[float, float, float]]:
    """The pairwise constraints (12)-(17) in ``s = 1 - d = S (1 - q)/(S - 1)``,
    each ``alpha s_u + beta s_v <= gamma`` for an ordered pair (u, v) of
    different categories, divided by t so that nothing overflows:

    - (12)/(13) ``q_u <= t (1 - q_v)/(S - 1)``: ``-((S-1)/t) s_u - s_v <= -S/t``;
    - (14)/(15) ``1 - q_u <= t (S - 1) q_v``: ``s_u/t + (S - 1) s_v <= S``;
    - (16)/(17) ``1 - q_u <= t (1 - q_v)``: ``s_u/t - s_v <= 0``.
    """
    s = c.s
    rows = [(-(s - 1) / c.t, -1.0, -s / c.t), (1.0 / c.t, float(s - 1), float(s))]
    if s >= 3:
        rows.append((1.0 / c.t, -1.0, 0.0))
    return rows


def _propagate(L: np.ndarray, H: np.ndarray, pairs: Sequence[tuple[int, int]],
               rows: Sequence[tuple[float, float, float]], order: Sequence[tuple[int, int]],
               passes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Shrink boxes to the part that can satisfy ``s_i <= s_j`` for (i, j) in
    ``order`` and every row of ``rows`` for both orders of every pair; rounded
    outward, so no feasible point is lost.  Each new end
    ``(gamma - other) / coef`` is four correctly rounded operations on doubles
    whose coefficients (from ``t = t_lo``, within one ulp of ``e^eps``) are
    within 3 ulps of the exact ones: its error is below ``12 UNIT`` (about
    1.4e-15) of ``(|gamma| + |other|) / |coef|``, and the slack is 1e-13 of
    that (plus 1e-320 for subnormal ends)."""
    L, H = L.copy(), H.copy()
    for _ in range(passes):
        for i, j in order:
            np.maximum(L[:, j], L[:, i], out=L[:, j])
            np.minimum(H[:, i], H[:, j], out=H[:, i])
        for i, j in pairs:
            for u, v in ((i, j), (j, i)):
                for a, b, g in rows:
                    # a s_u + b s_v <= g
                    v_min = b * L[:, v] if b > 0 else b * H[:, v]
                    u_min = a * L[:, u] if a > 0 else a * H[:, u]
                    for var, coef, other in ((u, a, v_min), (v, b, u_min)):
                        if coef == 0:
                            continue
                        val = (g - other) / coef
                        slack = 1e-13 * (abs(g) + np.abs(other)) / abs(coef) + 1e-320
                        if coef > 0:
                            np.minimum(H[:, var], val + slack, out=H[:, var])
                        else:
                            np.maximum(L[:, var], val - slack, out=L[:, var])
    return L, H


#: The regions of the certificate: which part of the feasible set each box bound covers.
REGIONS = ("positive_definite", "indefinite_top", "indefinite_bottom", "indefinite_middle", "three_categories")


def _evaluator(c: _Constants, region: str) -> tuple[np.ndarray, np.ndarray, Evaluate]:
    """The initial box and the box bound of one region of the certificate
    (``docs/design-variance.md``).  A box bound takes boxes ``lo, hi`` of
    shape (B, dim), returns them shrunk to their part that can satisfy the
    DP constraints (infeasible boxes dropped), and a lower bound on
    ``psi_k`` (per record) over the matrices of that region in each box.

    ``positive_definite`` (X > 0, ``d_k >= 0``; Lemma 6), one coordinate
    ``s = 1 - d_k`` in [0, 1]:

        L = s [S (S - (S-1) s) / ((S-1)(1 - s) + m)^2 + (S - 2)/(S m^2)],

    ``m = min(delta, (t s - 1)/(S-1), 1 - (S - (S-1) s)/t, 1 - s/t)``, a bound on
    the mean of the other d; on a box, sl in the factor s, sh elsewhere and
    the largest m of the box (where ``m <= 0`` the region is empty).

    ``indefinite_top``, ``_bottom``, ``_middle`` (X has a negative eigenvalue,
    S >= 4; Lemma 7), boxes of ``s = 1 - d`` of the largest d (s1), the second
    largest (s2), the smallest (sS) and, in the middle case, of ``d_k`` (sx),
    k being the largest, the smallest, or neither:

        psi_k >= (1 - d_k) [(S-3)/(S rho^2) + W/mu^2 + V/(S nu'^2)],

    ``nu' = min(nu, -d_(S))``, ``rho = max(d_(2), nu')``,
    ``mu = max(rho, ((S-1) d_(1) + d_(2))/S)``; ``W = q_k``, ``V = 1`` for
    ``d_k >= 0``, ``W = 1/S``, ``V = 1 + (S-1) d_k`` below.

    ``three_categories`` (S = 3, every matrix; Lemma 8): X is 2 x 2; in the
    orthonormal basis ``(2, -1, -1)/sqrt 6``, ``(0, 1, -1)/sqrt 2`` of V
    (k = category 1) it is ``[[a, b], [b, c]]`` with
    ``a = 1 - (4 s_k + s_2 + s_3)/6``, ``c = 1 - (s_2 + s_3)/2``,
    ``b = (s_2 - s_3)/sqrt 12``, and

        psi_k = (s_k / 3) (a^2 + (4 - 2 s_k) b^2 + (3 - 2 s_k) c^2) / (a c - b^2)^2,

    bounded on a box by interval arithmetic, with two bounds free of 0/0 where
    the quotient has it; boxes of ``(s_k, s_2, s_3)``, ``s_2 <= s_3``.
    """
    s_, cm1 = c.s, float(c.s - 1)
    rows = _pair_rows(c)
    if region == "positive_definite":
        def evaluate(L: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            sl, sh = L[:, 0], H[:, 0]                      # 0 <= sl <= sh <= 1
            rest = _dn(s_ - _up(cm1 * sh))                  # S - (S-1) s >= 1, from below
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                # the largest m of the box, from above (each term is monotone in s)
                m = np.minimum.reduce([np.full_like(sh, c.delta_hi), _up(_up(_up(c.t_hi * sh) - 1.0) / cm1),
                                       _up(1.0 - _div_dn(rest, c.t_lo, c.t_hi)),
                                       _up(1.0 - _div_dn(sl, c.t_lo, c.t_hi))])
                den = _up(_up(cm1 * _up(1.0 - sl)) + m)
                first = _dn(_dn(s_ * rest) / _up(den * den))
                second = _dn((s_ - 2) / _up(s_ * _up(m * m)))
                bound = _times(sl, _dn(first + second))
            return L, H, np.where(m > 0, _defined(bound), math.inf)

        return np.array([[0.0]]), np.array([[1.0]]), evaluate

    if region.startswith("indefinite_"):
        case = region[len("indefinite_"):]
        middle = case == "middle"
        n_var = 4 if middle else 3
        pairs = [(0, 1), (0, 2), (1, 2)] + ([(3, 0), (3, 2)] if middle else [])
        order = [(0, 1), (1, 2)] + ([(1, 3), (3, 2)] if middle else [])
        own = {"top": 0, "bottom": 2, "middle": 3}[case]

        def evaluate(L: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            L, H = _propagate(L, H, pairs, rows, order)
            L[:, 2] = np.maximum(L[:, 2], 1.0)           # d_(S) < 0: the largest s above 1
            ok = np.all(L <= H, axis=1)
            L, H = L[ok], H[ok]
            # nu', rho and mu from above (the bound decreases in each), W and V from below
            nu_p = np.minimum(c.nu_hi, _up(H[:, 2] - 1.0))
            rho = np.maximum(_up(1.0 - L[:, 1]), nu_p)
            mu = np.maximum(rho, _up(1.0 - _dn(_dn(_dn(cm1 * L[:, 0]) + L[:, 1]) / s_)))
            sl, sh = L[:, own], H[:, own]
            w = _dn(_dn(s_ - _up(cm1 * np.minimum(sh, 1.0))) / s_)
            v = np.maximum(_dn(s_ - _up(cm1 * np.maximum(sh, 1.0))), 0.0)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                inner = _dn(_dn(_dn((s_ - 3) / _up(s_ * _up(rho * rho))) + _dn(w / _up(mu * mu)))
                            + _times(v, _dn(1.0 / _up(s_ * _up(nu_p * nu_p)))))
                bound = _times(sl, inner)
            return L, H, np.where(nu_p > 0, _defined(bound), math.inf)

        top = s_ / (s_ - 1)
        return np.array([[0.0, 0.0, 1.0, 0.0][:n_var]]), np.array([[top] * n_var]), evaluate

    if region == "three_categories":
        r12_lo, r12_hi = _inverse_sqrt12()

        def evaluate(L: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            L, H = _propagate(L, H, [(0, 1), (0, 2), (1, 2)], rows, [(1, 2)])
            ok = np.all(L <= H, axis=1)
            L, H = L[ok], H[ok]
            # a = 1 - (4 s_k + s_2 + s_3)/6, c = 1 - (s_2 + s_3)/2, b = (s_2 - s_3)/sqrt 12, outward
            al = _dn(1.0 - _up(_up(_up(4.0 * H[:, 0] + H[:, 1]) + H[:, 2]) / 6.0))
            ah = _up(1.0 - _dn(_dn(_dn(4.0 * L[:, 0] + L[:, 1]) + L[:, 2]) / 6.0))
            cl = _dn(1.0 - _up(_up(H[:, 1] + H[:, 2]) * 0.5))
            ch = _up(1.0 - _dn(_dn(L[:, 1] + L[:, 2]) * 0.5))
            bl, bh = _mul_iv(_dn(L[:, 1] - H[:, 2]), _up(H[:, 1] - L[:, 2]), r12_lo, r12_hi)
            a2, b2, c2 = _sqr_iv(al, ah), _sqr_iv(bl, bh), _sqr_iv(cl, ch)
            sl, sh = L[:, 0], H[:, 0]
            third = _dn(sl / 3.0)
            num = _dn(_dn(a2[0] + _dn(_dn(4.0 - 2.0 * sh) * b2[0]))
                      + _dn(np.maximum(_dn(3.0 - 2.0 * sh), 0.0) * c2[0]))
            ac_lo, ac_hi = _mul_iv(al, ah, cl, ch)
            p_lo, p_hi = _dn(ac_lo - b2[1]), _up(ac_hi - b2[0])
            den = _up(np.maximum(p_lo * p_lo, p_hi * p_hi))
            # Where the quotient is 0/0 on a box, two bounds without cancellation:
            # near d = 0 (rows close to uniform), psi_k >= lambda_min(Sigma_k) tr(X^-2)
            # >= (s_k/3) min(1, 3 - 2 s_k) 2 / max_i d_i^2 (||X|| <= max |d_i|: X compresses D);
            # and since the weights are >= 1, >= 0 and |a c - b^2| <= sqrt(a^2 + b^2) (|c| + |b|),
            # psi_k >= (s_k/3) (a^2 + b^2)/(a c - b^2)^2 >= (s_k/3) / (|c| + |b|)^2.
            big_d = np.max(np.maximum(_up(1.0 - L), _up(H - 1.0)), axis=1)     # |d_i| <= max(1 - L, H - 1)
            cb = _up(np.maximum(np.abs(cl), np.abs(ch)) + np.maximum(np.abs(bl), np.abs(bh)))
            weight = np.maximum(np.minimum(1.0, _dn(3.0 - 2.0 * sh)), 0.0)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                candidates = [_times(third, _dn(num / den)),
                              _times(_times(third, weight), _dn(2.0 / _up(big_d * big_d))),
                              _times(third, _dn(1.0 / _up(cb * cb)))]
            return L, H, np.fmax.reduce([_defined(x) for x in candidates])

        return np.array([[0.0, 0.0, 0.0]]), np.array([[1.5, 1.5, 1.5]]), evaluate

    raise ParameterError(f"unknown region {region!r}; regions are {list(REGIONS)}")


def _search(c: _Constants, region: str, target: float, max_nodes: int) -> SearchResult:
    lo, hi, evaluate = _evaluator(c, region)
    return _branch_and_bound(region, lo, hi, evaluate, target, max_nodes, _split_point)


@dataclass(frozen=True)
class VarianceBound:
    """A proved lower bound on ``min_M psi_k(M)`` over the epsilon-DP matrices
    of form (8) (the same for every k), hence on ``min_M sum_k p_k psi_k`` for
    every p.

    Attributes
    ----------
    s, epsilon, truthful : int, float, bool
        The problem (``truthful``: ``q_k >= 1/S`` required).
    optimum : float
        ``psi`` of randomized response (the per-record loss it attains).
    lower_bound : float
        The proved bound (per record).
    searches : tuple of SearchResult
        The branch and bounds run (empty when the proof is closed form).
    closed_form : dict of str to float
        The parts bounded in closed form, with their bounds.

    Examples
    --------
    For S = 2 the proof is closed form (Lemma 4), no search is needed:

    >>> b = variance_lower_bound(2, 1.0)
    >>> b.searches, list(b.closed_form), b.proved
    ((), ['two_categories'], True)
    >>> b.gap <= b.tolerance, math.isclose(b.optimum, 2 * math.e / (math.e - 1) ** 2)
    (True, True)

    With too few nodes the searches stay open: the bound is still valid, but
    not tight enough to prove optimality:

    >>> weak = variance_lower_bound(4, math.log(2), max_nodes=3)
    >>> weak.proved, weak.lower_bound < weak.optimum, any(r.closed for r in weak.searches)
    (False, True, False)
    """

    s: int
    epsilon: float
    truthful: bool
    optimum: float
    lower_bound: float
    searches: tuple[SearchResult, ...]
    closed_form: dict[str, float]

    @property
    def gap(self) -> float:
        """``optimum - lower_bound`` (never negative)."""
        return max(self.optimum - self.lower_bound, 0.0)

    @property
    def tolerance(self) -> float:
        """What ``optimal`` allows: ``VARIANCE_RTOL`` relative, plus the rounding
        of the optimum (16 units in the last place)."""
        return VARIANCE_RTOL * self.optimum + 16 * UNIT * self.optimum

    @property
    def proved(self) -> bool:
        """Every search closed and the bound is within :attr:`tolerance` of the optimum."""
        return all(r.closed for r in self.searches) and self.gap <= self.tolerance


def variance_lower_bound(s: int, epsilon: float, *, truthful: bool = False,
                         max_nodes: int = MAX_NODES) -> VarianceBound:
    """Prove that no epsilon-DP matrix of form (8) beats randomized response.

    See the module docstring for the parts of the feasible set and how each
    is bounded; ``docs/design-variance.md`` for the proofs.  The searches stop
    at ``target = psi (1 - VARIANCE_RTOL / 2)``: a box whose bound reaches it
    is closed.  With ``max_nodes`` too small a search stays open and the bound
    is the smallest over its open boxes (still valid).  The default closes
    every case measured except very small budgets at S = 4 and 5 (about
    ``epsilon <= 0.002``, where the indefinite part comes within ``O(epsilon)``
    of the optimum and needs some 10^7 boxes; ``docs/design-variance.md``).

    Parameters
    ----------
    s : int
        The number of categories S >= 2.
    epsilon : float
        The privacy budget, natural log units.
    truthful : bool
        Bound over the truthful matrices (``q_k >= 1/S``) only.
    max_nodes : int
        Boxes each search may evaluate.

    Returns
    -------
    VarianceBound
        The optimum, the proved bound, and how each part was bounded.

    Raises
    ------
    ParameterError
        If S is not an integer >= 2, epsilon is not a valid budget, or max_nodes is not a
        positive integer.

    References
    ----------
    Ayed, Battiston and Camerlenghi, form (8) and constraints (10),
    (12)-(17); Cator, Hensbergen and Rozenholc, section 3.

    Examples
    --------
    >>> b = variance_lower_bound(4, math.log(2))
    >>> b.optimum, b.proved, b.lower_bound <= b.optimum
    (18.0, True, True)
    """
    s_, e = _check_size(s), check_epsilon(epsilon)
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1:
        raise ParameterError(f"max_nodes must be a positive integer, got {max_nodes!r}")
    c = _Constants.of(s_, e)
    target = c.psi * (1.0 - 0.5 * VARIANCE_RTOL)
    closed: dict[str, float] = {}
    searches: list[SearchResult] = []
    if s_ == 2:
        # |d_1 + d_2| <= 2 delta and psi_k = (1 - d_k^2) / (2 ((d_1 + d_2)/2)^2) (Lemma 4)
        closed["two_categories"] = c.psi_lo
    elif s_ == 3 and not truthful:
        searches.append(_search(c, "three_categories", target, max_nodes))
    else:
        searches.append(_search(c, "positive_definite", target, max_nodes))
        if not truthful:
            # X > 0 and d_k < 0: psi_k >= S / delta^2 (Lemma 5)
            closed["positive_definite_negative_d"] = float(_dn(s_ / _up(c.delta_hi * c.delta_hi)))
            searches.extend(_search(c, f"indefinite_{case}", target, max_nodes)
                            for case in ("top", "bottom", "middle"))
    bounds = [r.lower_bound for r in searches] + list(closed.values())
    lower = min(min(bounds), c.psi_lo)
    return VarianceBound(s_, e, bool(truthful), c.psi, lower, tuple(searches), closed)


# ---------------------------------------------------------------------------
# The design
# ---------------------------------------------------------------------------

def _rr_form8(s: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Randomized response as form (8) vectors: ``q = 1/(1 + (S-1) e^-eps)`` on the diagonal and
    ``e^-eps q`` off it (no ``1 - q`` cancellation at large epsilon)."""
    q = 1.0 / (1.0 + (s - 1) * math.exp(-epsilon))
    return np.full(s, q), np.full(s, math.exp(-epsilon) * q)


def dp_min_variance(
    p: ArrayLike | None,
    epsilon: float,
    *,
    categories: Sequence[Label] | None = None,
    n: int | None = None,
    truthful: bool = False,
) -> PramMatrix:
    """The epsilon-DP matrix of form (8) whose unbiased estimator has the least variance.

    Minimises Cator, Hensbergen and Rozenholc's L2 loss of the unbiased
    estimator (4) of the frequency vector, ``l2 = (1/n) sum_k p_k psi_k`` (the
    trace of the covariance of the estimated proportions of n records; module
    docstring), over the matrices of form (8) of Ayed, Battiston and
    Camerlenghi that satisfy their epsilon-DP constraints (10), i.e.
    (12)-(17) with the sign of (15) corrected -- the feasible set of
    :func:`pramkit.design.dp.optimal.dp_optimal`.  The optimum is randomized
    response, ``q_k = e^eps/(e^eps + S - 1)``, **for every p**: the design
    depends on S and epsilon only, and its loss
    ``(S - 1)(2 e^eps + S - 2) / (n (e^eps - 1)^2)`` does not depend on p
    (with sampling as well, the loss adds ``(1 - sum p^2)/n``: p enters
    through ``sum p^2`` only).  The matrix is always invertible, unlike the
    information-optimal design.

    Parameters
    ----------
    p : array-like, shape (S,), or None
        Proportions of the categories (recorded; the design does not depend on
        them).  ``None``: a data-free design, S is the number of
        ``categories``, and the certificate omits the loss with sampling
        (the only quantity that depends on p).
    epsilon : float
        Privacy budget per record, natural log units (``0 < epsilon <= 700``).
    categories : sequence of labels, optional
        Labels of the S categories (default ``0 .. S-1``).
    n : int, optional
        Number of records; the objective is the L2 loss of a file of n
        records (default 1: the loss per record, ``sum_k p_k psi_k``).
    truthful : bool
        Also require ``q_k >= 1/S`` (as in ``dp_optimal``); the optimum is the same.

    Returns
    -------
    PramMatrix
        Randomized response, stored compactly (form (8)), with provenance: method ``"dp_min_variance"``,
        the parameters, the objective (``"l2_loss"``) and a certificate: the
        proved lower bound (:func:`variance_lower_bound`) on the same scale,
        the gap, the tolerance, the searches, and ``optimal``.  The stored
        entries below the budget by rounding are raised
        (:func:`pramkit.privacy.exact.form8_within_budget`), so the matrix's
        epsilon is at most ``epsilon``.

    Raises
    ------
    ParameterError
        For an invalid p, epsilon, n or category list (or neither p nor categories).

    References
    ----------
    Ayed, Battiston and Camerlenghi, form (8) and constraints (10), (12)-(17).
    Cator, Hensbergen and Rozenholc, section 3: estimator (4) and the L2 loss.

    Examples
    --------
    >>> m = dp_min_variance([0.7, 0.2, 0.1], math.log(2), n=100)
    >>> m.diagonal.round(12).tolist()
    [0.5, 0.5, 0.5]
    >>> m.provenance.objective_name, round(m.provenance.objective, 12)
    ('l2_loss', 0.1)
    >>> m.provenance.certificate["optimal"], m.epsilon <= math.log(2)
    (True, True)
    >>> dp_min_variance(None, math.log(2), categories="abc").diagonal.round(12).tolist()   # data-free
    [0.5, 0.5, 0.5]
    """
    start = time.perf_counter()
    if p is None:
        if categories is None:
            raise ParameterError("give p or the categories (the design depends on S and epsilon only)")
        pv = None
        cats = tuple(categories)
        s = len(cats)
    else:
        pv = probabilities(p)
        s = pv.size
        cats = tuple(range(s)) if categories is None else tuple(categories)
        if len(cats) != s:
            raise ParameterError(f"{len(cats)} categories given for {s} probabilities")
    e = check_epsilon(epsilon)
    if s < 2:
        raise ParameterError("a DP design needs at least two categories")
    records = 1 if n is None else _check_n(n)
    if not isinstance(truthful, bool):
        raise ParameterError(f"truthful must be True or False, got {truthful!r}")
    bound = variance_lower_bound(s, e, truthful=truthful)
    q, w = _rr_form8(s, e)
    q_stored, w_stored = form8_within_budget(q, w, e)
    adjustment = float(np.max((q_stored - q) + (s - 1) * (w_stored - w)))
    sum_p2 = None if pv is None else math.fsum((pv * pv).tolist())
    certificate: dict[str, Any] = {
        "optimal": bound.proved,
        "closed": all(r.closed for r in bound.searches),
        "lower_bound": bound.lower_bound / records,
        "certified_gap": bound.gap / records,
        "tolerance": bound.tolerance / records,
        "relative_tolerance": VARIANCE_RTOL,
        "per_record_loss": bound.optimum,
        "per_record_lower_bound": bound.lower_bound,
        "depends_on_p": False,
        "sampling_and_pram_loss": None if sum_p2 is None else (bound.optimum + 1.0 - sum_p2) / records,
        "searches": [{"region": r.region, "lower_bound": r.lower_bound, "nodes": r.nodes, "closed": r.closed}
                     for r in bound.searches],
        "closed_form_bounds": dict(bound.closed_form),
        "nodes": int(sum(r.nodes for r in bound.searches)),
        "ties": "the mirror image q = 1 - q_rr" if s == 2 and not truthful else None,
        "truthful_required": truthful,
        "is_truthful": True,
        "budget_adjustment": adjustment,
        "proof": "docs/design-variance.md",
    }
    provenance = Provenance(
        method="dp_min_variance",
        parameters={"epsilon": e, "p": None if pv is None else pv.tolist(), "n": records, "truthful": truthful},
        objective=bound.optimum / records,
        objective_name="l2_loss",
        certificate=certificate,
        seconds=time.perf_counter() - start,
    )
    return PramMatrix.form8(q_stored, w_stored, cats, provenance)
