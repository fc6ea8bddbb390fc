"""Outward rounding for the guarantees pramkit states.

Floating point rounds to nearest, so a number computed for a guarantee can
fall one unit in the last place (ulp) on the wrong side of the truth: a
design for a budget of 2 stored a matrix whose exact epsilon was
``2 + 1.3e-16``.  Every epsilon and every bound that pramkit states is
therefore rounded outward here:

* :func:`log_ratio_upper` -- an upper bound on ``log(hi / lo)`` for two
  doubles, from :mod:`decimal`, whose ``ln`` is correctly rounded, at 40
  significant digits beyond those of ``hi / lo - 1``;
* :func:`column_epsilon` -- the epsilon of a matrix (Shlomo and Skinner 2012,
  section 4: the largest log-ratio within a column) from its column maxima
  and minima: the smallest double not below the exact epsilon of the stored
  doubles;
* :func:`sum_up` -- a sum rounded upward (sequential composition of epsilons);
* :func:`within_budget` -- raises the entries that rounding put out of a
  budget, so that the exact epsilon of the stored matrix is at most it
  (:func:`exp_lower` for the screening);
* :func:`form8_column_extremes` and :func:`form8_within_budget` -- the same
  for a matrix of form (8) stored as its diagonal q and off-diagonal entries
  w, in O(S);
* :func:`fit_sum` -- epsilons lowered by ulps until their upward sum fits a budget;
* :func:`certificate_tolerance` -- what an optimality certificate allows for;
* :func:`rounding_bound`, :func:`eta_error`, :func:`log_error`,
  :func:`pairwise_sum` -- how much rounding a bound must absorb;
* :func:`information_bounds` -- I(X; Z) of a matrix with a bound on its error.

Arithmetic model.  IEEE 754 double precision with rounding to nearest (unit
roundoff :data:`UNIT`); elementary functions (``log``, ``log1p``, ``exp``,
``expm1``) accurate to a few ulps.  The epsilon functions rely on the first
only (and on :mod:`decimal`'s correct rounding); the certificates' rounding
allowances on both.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from decimal import ROUND_CEILING, Context, Decimal
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError

#: Unit roundoff of IEEE double precision: every correctly rounded operation
#: has a relative error of at most this.
UNIT = 2.0 ** -53
#: Significant digits that :func:`log_ratio_upper` keeps beyond those of ``hi / lo - 1``.
DIGITS = 40
#: Relative tolerance of an optimality certificate.
CERTIFICATE_RTOL = 1e-8
#: Absolute tolerance of an optimality certificate, nats.
CERTIFICATE_ATOL = 1e-12
#: Largest change of a row sum that :func:`within_budget` accepts: rounding, not redesign.
MAX_ROW_SHIFT = 1e-12


def sum_up(values: Iterable[float]) -> float:
    """The smallest double not below the exact sum of ``values``.

    :func:`math.fsum` rounds the exact sum to nearest; the sign of the exact
    remainder (another ``fsum``, exact in sign) says whether that was below
    the sum, in which case the result moves up one ulp.

    Parameters
    ----------
    values : iterable of float
        Finite or infinite numbers.

    Returns
    -------
    float
        The sum rounded upward (``inf`` if any value is ``inf``).

    Examples
    --------
    >>> sum_up([0.1, 0.2]) >= 0.30000000000000004
    True
    >>> sum_up([0.5, 0.25])
    0.75
    """
    vals = [float(v) for v in values]
    total = math.fsum(vals)
    if not math.isfinite(total):
        return total
    return math.nextafter(total, math.inf) if math.fsum([*vals, -total]) > 0 else total


def float_up(value: Decimal) -> float:
    """The smallest double not below ``value`` (``float`` rounds to nearest;
    one step up when that was below).

    Parameters
    ----------
    value : decimal.Decimal
        The number to round upward.

    Returns
    -------
    float
        The smallest double ``>= value`` (``value`` itself when it is a double).

    Examples
    --------
    ``float`` rounds 1/3 down to the double ``1 / 3``; the bound is the next double up:

    >>> third = Decimal(1) / Decimal(3)
    >>> Decimal(1 / 3) < third < Decimal(float_up(third)), float_up(third) == math.nextafter(1 / 3, 1)
    (True, True)
    >>> float_up(Decimal("0.5"))
    0.5
    """
    out = float(value)
    return math.nextafter(out, math.inf) if Decimal(out) < value else out


def log_ratio_upper(hi: float, lo: float) -> Decimal:
    """An upper bound on ``log(hi / lo)`` for doubles ``hi >= lo > 0``.

    ``hi / lo`` is rounded up at ``DIGITS`` significant digits beyond the
    leading zeros of ``hi / lo - 1``; its natural logarithm is correctly
    rounded by :mod:`decimal`, so the next decimal up bounds it.  The bound
    exceeds the truth by a relative ``10**-(DIGITS - 1)`` at most, and is
    exactly 0 when ``hi == lo``.

    Parameters
    ----------
    hi, lo : float
        Two positive finite doubles, ``hi >= lo``.

    Returns
    -------
    decimal.Decimal
        The upper bound.

    Raises
    ------
    ParameterError
        Unless ``hi`` is finite and ``hi >= lo > 0``.

    Examples
    --------
    >>> b = log_ratio_upper(2.0, 1.0)
    >>> Decimal("0.6931471805599453094172321214581765680") < b < Decimal("0.69314718055994530941723212145817656808")
    True
    >>> log_ratio_upper(0.25, 0.25)
    Decimal('0')
    """
    if not (math.isfinite(hi) and 0.0 < lo <= hi):
        raise ParameterError(f"log_ratio_upper needs finite doubles hi >= lo > 0, got {hi!r} and {lo!r}")
    if hi == lo:
        return Decimal(0)
    gap = (hi - lo) / lo            # only for the number of leading zeros of hi / lo - 1
    zeros = max(0, -math.floor(math.log10(gap))) if gap < 1.0 else 0
    ctx = Context(prec=DIGITS + zeros + 2, rounding=ROUND_CEILING, Emin=-10**6, Emax=10**6)
    ratio = ctx.divide(Decimal(hi), Decimal(lo))      # >= hi / lo
    return ctx.next_plus(ratio.ln(ctx))              # ln is correctly rounded: one step up bounds it


def column_epsilon(col_max: ArrayLike, col_min: ArrayLike) -> float:
    """Epsilon of a matrix from the maximum and minimum of each column, rounded outward.

    Shlomo and Skinner (2012), section 4: epsilon is the largest
    ``log(max_k M[k, j] / min_k M[k, j])`` over the columns j that can be
    released (``max > 0``); it is infinite when such a column has a zero.  The
    result is the smallest double not below the exact value for the given
    doubles (up to the ``10**-39`` relative slack of :func:`log_ratio_upper`).

    Cost: O(S) array operations.  The column with the largest exact ratio is
    found without logarithms: ``hi = a 2**e``, ``lo = b 2**f`` with mantissas
    in [1/2, 1), so ``hi / lo = (a / b) 2**(e - f)``, and ``a / b`` is one
    correctly rounded division (relative error at most :data:`UNIT`).  The
    columns within that error of the largest are compared exactly (fractions
    of the doubles), and one logarithm is taken with :func:`log_ratio_upper`.

    Parameters
    ----------
    col_max, col_min : array-like, shape (S,)
        ``max_k M[k, j]`` and ``min_k M[k, j]`` for each column j.

    Returns
    -------
    float
        The epsilon, ``inf`` or ``0.0`` (constant columns only).

    Examples
    --------
    >>> column_epsilon([0.6, 0.3], [0.3, 0.3])  # log 2, rounded up
    0.6931471805599454
    >>> column_epsilon([0.5, 0.5], [0.0, 0.5])
    inf
    """
    hi = np.asarray(col_max, dtype=float).ravel()
    lo = np.asarray(col_min, dtype=float).ravel()
    released = hi > 0
    if np.any(lo[released] <= 0):
        return math.inf
    hi, lo = hi[released], lo[released]
    moving = hi > lo
    if not np.any(moving):
        return 0.0
    hi, lo = hi[moving], lo[moving]
    mh, eh = np.frexp(hi)
    ml, el = np.frexp(lo)
    shift = eh - el
    scaled = np.ldexp(mh / ml, shift - shift.max())       # (hi / lo) / 2**max shift, to rounding
    near = scaled >= scaled.max() * (1.0 - 4.0 * UNIT)
    pairs = set(zip(hi[near].tolist(), lo[near].tolist()))
    h, lw = max(pairs, key=lambda hl: Fraction(hl[0]) / Fraction(hl[1]))
    return float_up(log_ratio_upper(h, lw))


def exp_lower(epsilon: float) -> float:
    """A double not above ``e**epsilon``, within two units in the last place of it
    (``decimal`` exp at 40 digits, stepped down once and rounded down: safe where the
    exact value is a double, as ``exp_lower(0.0)`` is 1 - 2^-53; the largest double
    beyond its range).

    Used by :func:`within_budget` to screen columns with one rounded product:
    ``hi <= lo exp_lower(epsilon)`` implies ``log(hi / lo) <= epsilon``.

    Parameters
    ----------
    epsilon : float
        A finite exponent.

    Returns
    -------
    float
        A double ``t <= e**epsilon`` (``sys.float_info.max`` when
        ``e**epsilon`` overflows).

    Examples
    --------
    >>> t = exp_lower(1.0)
    >>> Decimal(t) <= Decimal(1).exp(Context(prec=50)) and t == math.exp(1.0)
    True
    >>> exp_lower(1000.0) == sys.float_info.max
    True
    """
    if epsilon >= math.log(sys.float_info.max):
        return sys.float_info.max
    ctx = Context(prec=DIGITS)
    bound = ctx.next_minus(Decimal(epsilon).exp(ctx))
    out = float(bound)
    return math.nextafter(out, 0.0) if Decimal(out) > bound else out


def _within(hi: float, lo: float, budget: Decimal) -> bool:
    """``log(hi / lo) <= budget`` proved."""
    return log_ratio_upper(hi, lo) <= budget


def within_budget(matrix: ArrayLike, epsilon: float) -> np.ndarray:
    """The matrix with the entries that rounding put below its budget raised.

    A design that targets epsilon computes its entries in floating point, so
    a column's ratio ``max / min`` can exceed ``e**epsilon`` by a few ulps.
    Each such column keeps its maximum ``hi``; its entries below
    ``f = hi e**-epsilon`` are raised to f, the smallest double for which
    ``log(hi / f) <= epsilon`` is proved by :func:`log_ratio_upper`.  Then the
    exact epsilon of the stored doubles (Shlomo and Skinner 2012, section 4) is
    at most ``epsilon``, and :func:`column_epsilon` states at most ``epsilon``.
    Raising the smallest entries (rather than lowering the largest) moves the
    row sums least, and keeps the off-diagonal entries of a row of form (8)
    equal to rounding.

    Columns are screened in O(S^2) array operations: ``hi <= lo t`` with
    ``t <= e**epsilon`` (:func:`exp_lower`) is decided by one rounded product
    and a margin of two roundings; only the others are checked with
    :mod:`decimal`, once per distinct pair ``(max, min)``.

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        A row-stochastic matrix whose columns have no zero among positive entries.
    epsilon : float
        The budget, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        A new array; equal to ``matrix`` when it is already within the budget.

    Raises
    ------
    ParameterError
        If a column mixes zeros and positive entries (epsilon infinite), or if
        meeting the budget would move a row sum by more than
        :data:`MAX_ROW_SHIFT` (the matrix is not within rounding of it).

    Examples
    --------
    >>> import numpy as np
    >>> q = 1.0 / (1.0 + 2.0 * np.exp(-1.0))      # randomized response, S = 3, epsilon 1
    >>> m = within_budget(np.array([[q, (1 - q) / 2, (1 - q) / 2], [(1 - q) / 2, q, (1 - q) / 2],
    ...                             [(1 - q) / 2, (1 - q) / 2, q]]), 1.0)
    >>> column_epsilon(m.max(axis=0), m.min(axis=0)) <= 1.0
    True
    """
    m = np.array(matrix, dtype=float)
    e = float(epsilon)
    if m.ndim != 2 or not (math.isfinite(e) and e >= 0.0):
        raise ParameterError(f"within_budget needs a 2-D matrix and a finite epsilon >= 0, got epsilon {epsilon!r}")
    hi, lo = m.max(axis=0), m.min(axis=0)
    t = exp_lower(e)
    doubtful = np.flatnonzero(~_screen(hi, lo, t, e))
    if doubtful.size == 0:
        return m
    budget = Decimal(e)
    floors: dict[tuple[float, float], float | None] = {}
    raised = np.zeros(m.shape[0])
    for j in doubtful:
        key = (float(hi[j]), float(lo[j]))
        if key not in floors:
            floors[key] = None if _within(*key, budget) else _floor(key[0], t, budget)
        floor = floors[key]
        if floor is not None:
            raised += np.maximum(floor - m[:, j], 0.0)
            np.maximum(m[:, j], floor, out=m[:, j])
    shift = float(raised.max())
    if shift > MAX_ROW_SHIFT:
        raise ParameterError(f"meeting epsilon = {e!r} would move a row sum by {shift:.3g}; the matrix is not "
                             "within rounding of that budget")
    return m


def _screen(hi: np.ndarray, lo: np.ndarray, t: float, epsilon: float) -> np.ndarray:
    """Columns (maxima ``hi``, minima ``lo``) proved within the budget by one
    rounded product, ``t <= e**epsilon`` (:func:`exp_lower`); the others must
    be checked with :func:`_within`.  Raises :class:`ParameterError` when a
    column mixes zeros and positive entries (its epsilon is infinite)."""
    released = hi > 0
    if np.any(lo[released] <= 0):
        j = int(np.flatnonzero(released & (lo <= 0))[0])
        raise ParameterError(f"column {j} mixes zeros and positive entries: its epsilon is infinite, "
                             f"no rounding brings it within {epsilon:g}")
    product = lo * t
    # hi <= fl(fl(lo t) (1 - 2^-51)) implies hi <= lo t (two roundings of relative UNIT each)
    # when fl(lo t) is a normal double
    return ~released | (hi <= lo) | ((hi <= product * (1.0 - 4.0 * UNIT)) & (product >= 2.0 ** -1000))


def _others(values: np.ndarray, largest: bool) -> np.ndarray:
    """For each j, the largest (or smallest) of ``values[k]`` over ``k != j``, in O(S):
    the extreme of all, except at its own position, where it is the runner-up."""
    order = np.argpartition(-values if largest else values, 1)[:2]
    out = np.full(values.size, values[order[0]])
    out[order[0]] = values[order[1]]
    return out


def form8_column_extremes(q: ArrayLike, w: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Maximum and minimum of every column of a matrix of form (8), in O(S).

    Row k holds ``q[k]`` on the diagonal and ``w[k]`` in every other column,
    so column j holds ``q[j]`` and ``w[k]`` for ``k != j``: its maximum is
    ``max(q[j], max_{k != j} w[k])``, and the largest w over ``k != j`` is the
    largest w, or the second largest at its own position (the same for the
    minimum).  With S = 1 the only column holds q.

    Parameters
    ----------
    q, w : array-like, shape (S,)
        Diagonal and off-diagonal entries.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The column maxima and minima, the inputs of :func:`column_epsilon`.

    Raises
    ------
    ParameterError
        If q and w are empty or differ in length.

    Examples
    --------
    >>> hi, lo = form8_column_extremes([0.8, 0.6, 0.4], [0.1, 0.2, 0.3])
    >>> hi.tolist(), lo.tolist()
    ([0.8, 0.6, 0.4], [0.2, 0.1, 0.1])
    """
    qv = np.asarray(q, dtype=float).ravel()
    wv = np.asarray(w, dtype=float).ravel()
    if qv.size != wv.size or qv.size == 0:
        raise ParameterError(f"q and w must have the same positive length, got {qv.size} and {wv.size}")
    if qv.size == 1:
        return qv.copy(), qv.copy()
    return np.maximum(qv, _others(wv, largest=True)), np.minimum(qv, _others(wv, largest=False))


#: Rounds of raising that :func:`form8_within_budget` allows before giving up (one or two suffice).
MAX_ROUNDS = 64


def form8_within_budget(q: ArrayLike, w: ArrayLike, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """q and w of a form (8) matrix with the entries that rounding put below its budget raised, in O(S).

    The compact counterpart of :func:`within_budget`.  Row k of the matrix
    holds ``q[k]`` on the diagonal and ``w[k]`` elsewhere (column j holds
    ``q[j]`` and every ``w[k]``, ``k != j``).  Each column j whose exact
    ``log(max / min)`` (Shlomo and Skinner 2012, section 4) is not proved
    within ``epsilon`` gets the floor ``f_j``, the smallest double with
    ``log(max_j / f_j) <= epsilon`` proved by :func:`log_ratio_upper`; then
    ``q[j]`` is raised to ``f_j`` and every ``w[k]`` to the largest floor of
    the columns it lies in (``k != j``), so each row keeps one off-diagonal
    value.  A raised ``w[k]`` can become the maximum of a column with a
    smaller floor, so the round is repeated until every column is proved
    (entries only rise and the largest entry never does, so this ends; in
    practice after one round).  The loop stops only when every column's pair
    (maximum, minimum) is proved, by the screening of :func:`within_budget`
    (one rounded product against :func:`exp_lower`) or exactly with
    :mod:`decimal` (:func:`_within`, once per distinct pair): the exact
    epsilon of the returned doubles is then at most ``epsilon``, and
    :func:`column_epsilon` states at most ``epsilon``.

    Cost: O(S) array operations per round (column extremes from q and the two
    largest and two smallest w, :func:`form8_column_extremes`) and one
    :mod:`decimal` logarithm per distinct doubtful pair.

    Parameters
    ----------
    q, w : array-like, shape (S,)
        Diagonal and off-diagonal entries of a row-stochastic form (8) matrix
        (``q[k] + (S - 1) w[k] = 1``), no column mixing zeros and positive entries.
    epsilon : float
        The budget, ``>= 0``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        New arrays q and w; equal to the inputs when they are already within the budget.

    Raises
    ------
    ParameterError
        If a column mixes zeros and positive entries (epsilon infinite), or if
        meeting the budget would move a row sum ``q[k] + (S - 1) w[k]`` by more
        than :data:`MAX_ROW_SHIFT` (the matrix is not within rounding of it).

    Examples
    --------
    >>> s, e = 4, 1.0
    >>> q = np.full(s, 1.0 / (1.0 + (s - 1) * math.exp(-e)))     # randomized response
    >>> q2, w2 = form8_within_budget(q, (1.0 - q) / (s - 1), e)
    >>> column_epsilon(*form8_column_extremes(q2, w2)) <= e
    True
    >>> bool(np.all(q2 == q)), float(np.max(np.abs(q2 + (s - 1) * w2 - 1.0))) < 1e-15
    (True, True)
    """
    qv = np.array(q, dtype=float).ravel()
    wv = np.array(w, dtype=float).ravel()
    e = float(epsilon)
    if qv.size != wv.size or qv.size == 0 or not (math.isfinite(e) and e >= 0.0):
        raise ParameterError(f"form8_within_budget needs q and w of the same positive length and a finite "
                             f"epsilon >= 0, got lengths {qv.size}, {wv.size} and epsilon {epsilon!r}")
    s = qv.size
    if s == 1:          # one column, holding q only: epsilon 0
        return qv, wv
    q0, w0 = qv.copy(), wv.copy()
    t = exp_lower(e)
    budget = Decimal(e)
    proved: dict[tuple[float, float], bool] = {}
    floors: dict[float, float] = {}
    for _ in range(MAX_ROUNDS):
        hi, lo = form8_column_extremes(qv, wv)
        doubtful = np.flatnonzero(~_screen(hi, lo, t, e))
        floor = np.full(s, -math.inf)
        for j, key in zip(doubtful.tolist(), zip(hi[doubtful].tolist(), lo[doubtful].tolist())):
            if key not in proved:
                proved[key] = _within(*key, budget)
            if not proved[key]:
                if key[0] not in floors:
                    floors[key[0]] = _floor(key[0], t, budget)
                floor[j] = floors[key[0]]
        if not np.isfinite(floor).any():
            return qv, wv
        np.maximum(qv, floor, out=qv)
        np.maximum(wv, _others(floor, largest=True), out=wv)
        shift = float(np.max((qv - q0) + (s - 1) * (wv - w0)))
        if shift > MAX_ROW_SHIFT:
            raise ParameterError(f"meeting epsilon = {e!r} would move a row sum by {shift:.3g}; the matrix is not "
                                 "within rounding of that budget")
    raise ParameterError(f"form8_within_budget: the budget epsilon = {e!r} was not met after "
                         f"{MAX_ROUNDS} rounds")  # pragma: no cover


def _floor(hi: float, t: float, budget: Decimal) -> float:
    """The smallest double f <= hi with ``log(hi / f) <= budget`` proved, from
    ``fl(hi / t)`` (within an ulp or two of it) stepping up."""
    floor = min(hi / t, hi)
    while floor < hi and not _within(hi, floor, budget):
        floor = math.nextafter(floor, math.inf)
    return floor


def certificate_tolerance(value: float) -> float:
    """Slack an optimality certificate allows at objective ``value`` (nats):
    ``min(CERTIFICATE_ATOL, CERTIFICATE_RTOL |value|)``, relative *and*
    absolute, so that a tiny optimum is not certified by an absolute slack
    larger than a share of it.

    Parameters
    ----------
    value : float
        The objective value being certified, nats.

    Returns
    -------
    float
        The allowed slack, nats.

    Examples
    --------
    >>> certificate_tolerance(2.0), certificate_tolerance(1e-11)
    (1e-12, 1e-19)
    """
    return min(CERTIFICATE_ATOL, CERTIFICATE_RTOL * abs(value))


def rounding_bound(magnitude: float | np.ndarray, terms: int = 1) -> float | np.ndarray:
    """A bound on the rounding error of a value computed in double precision
    as a sum of ``terms`` summands, each from a short chain (a few correctly
    rounded operations and elementary functions accurate to a few ulps), when
    ``magnitude`` bounds the sum of the absolute values of the summands and of
    the intermediate quantities whose errors propagate into them:
    ``(terms + 32) UNIT magnitude``.  Recursive summation contributes
    ``(terms - 1) UNIT`` per unit of magnitude in any order; a chain such as
    ``q log q + (1 - q) log((1 - q) / c)`` stays within ``12 UNIT`` of its
    magnitude when logarithms are within 2 ulps, and 32 leaves room for
    functions within 8 ulps.  Use ``terms = 1`` for a sum taken with
    :func:`math.fsum`.

    Parameters
    ----------
    magnitude : float or numpy.ndarray
        A bound on the sum of the absolute values involved.
    terms : int, default 1
        The number of summands (:func:`pairwise_terms` for :func:`pairwise_sum`).

    Returns
    -------
    float or numpy.ndarray
        The error bound, in the units of ``magnitude``.

    Examples
    --------
    >>> rounding_bound(1.0) == 33 * UNIT
    True
    """
    return (terms + 32) * UNIT * magnitude


def eta_error(m: ArrayLike, dm: ArrayLike, log_m: ArrayLike | None = None) -> np.ndarray:
    """A bound on ``|eta(x) - eta(m)|``, ``eta(x) = x log x``, over every x
    with ``|x - m| <= dm`` and ``x >= 0``, elementwise (``0 <= m <= 1``;
    ``log_m``, if given, is ``log m`` already computed).

    Where ``m > dm`` the mean value theorem gives ``dm`` times the largest
    ``|1 + log x|`` on the interval, at most ``|1 + log m| + dm / (m - dm)``;
    otherwise both values lie in ``[0, a]``, ``a = m + dm``, and differ by at
    most ``int_0^a |1 + log x| dx <= a (2 + |log a|)``.  Zero where ``dm == 0``.

    Parameters
    ----------
    m : array-like
        Computed values, in [0, 1].
    dm : array-like
        Bounds on their errors, ``>= 0`` (broadcast against ``m``).
    log_m : array-like, optional
        ``log m``, when already computed.

    Returns
    -------
    numpy.ndarray
        The elementwise bounds, nats.

    Examples
    --------
    >>> float(eta_error(0.5, 1e-16)[()]) < 1e-16
    True
    """
    mv, dv = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(dm, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        lm = np.log(mv) if log_m is None else np.broadcast_to(np.asarray(log_m, dtype=float), mv.shape)
        out = dv * (np.abs(1.0 + lm) + dv / (mv - dv))
        edge = (dv > 0) & (mv <= dv)
        if np.any(edge):
            high = mv[edge] + dv[edge]
            out = np.array(out, dtype=float)
            out[edge] = high * (2.0 + np.abs(np.log(high)))
    return np.where(dv == 0, 0.0, out)


def log_error(m: ArrayLike, dm: ArrayLike) -> np.ndarray:
    """A bound on ``|log x - log m|`` over ``|x - m| <= dm``, elementwise:
    ``-log(1 - dm/m)``, infinite where ``dm >= m`` and zero where ``dm == 0``.

    Parameters
    ----------
    m : array-like
        Computed positive values.
    dm : array-like
        Bounds on their errors, ``>= 0`` (broadcast against ``m``).

    Returns
    -------
    numpy.ndarray
        The elementwise bounds on the error of the logarithm.

    Examples
    --------
    >>> float(log_error(2.0, 1.0)[()]) == math.log(2.0)
    True
    """
    mv, dv = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(dm, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(dv < mv, -np.log1p(-dv / np.where(mv > 0, mv, 1.0)), math.inf)
    return np.where(dv == 0, 0.0, out)


def pairwise_sum(x: ArrayLike) -> np.ndarray:
    """Sum along the last axis by pairwise addition.

    The last axis is padded with zeros to a power of two and halved
    ``ceil(log2 n)`` times, so each summand goes through at most that many
    additions and the rounding error is at most ``ceil(log2 n) UNIT sum |x|``
    (:func:`rounding_bound` with ``terms = pairwise_terms(n)``), instead of
    ``(n - 1) UNIT`` for a sum in unspecified order.

    Parameters
    ----------
    x : array-like
        The numbers to sum along the last axis.

    Returns
    -------
    numpy.ndarray
        The sums, with the shape of ``x`` without its last axis (zeros for
        an empty last axis).

    Examples
    --------
    >>> pairwise_sum(np.array([[1.0, 2.0, 3.0], [0.5, 0.25, 0.25]])).tolist()
    [6.0, 1.0]
    """
    out = np.asarray(x, dtype=float)
    n = out.shape[-1]
    if n == 0:
        return np.zeros(out.shape[:-1])
    size = 1 << (n - 1).bit_length()
    if size > n:
        out = np.concatenate([out, np.zeros((*out.shape[:-1], size - n))], axis=-1)
    while size > 1:
        size //= 2
        out = out[..., :size] + out[..., size:]
    return out[..., 0]


def pairwise_terms(n: int) -> int:
    """The ``terms`` argument of :func:`rounding_bound` for :func:`pairwise_sum` of n numbers.

    ``ceil(log2 n) + 1`` (at least 1): the number of additions a summand goes
    through in :func:`pairwise_sum`, plus one.

    Parameters
    ----------
    n : int
        The number of summands.

    Returns
    -------
    int
        The ``terms`` to pass to :func:`rounding_bound`.

    Examples
    --------
    >>> [pairwise_terms(n) for n in (1, 2, 4, 5, 1024)]
    [1, 2, 3, 4, 11]
    >>> x = np.full(10, 0.1)
    >>> abs(float(pairwise_sum(x)) - math.fsum(x)) <= rounding_bound(float(np.abs(x).sum()), pairwise_terms(x.size))
    True
    """
    return max(1, math.ceil(math.log2(max(n, 1))) + 1)


def fit_sum(values: Iterable[float], budget: float) -> list[float]:
    """The values, each lowered by as few ulps as needed (all by the same
    number of steps) so that their upward-rounded sum (:func:`sum_up`) is at
    most ``budget``; zeros stay zero.

    Parameters
    ----------
    values : iterable of float
        Non-negative epsilons (or any non-negative parts of a budget).
    budget : float
        The total they must fit, ``>= 0``.

    Returns
    -------
    list of float
        The lowered values (unchanged when they already fit).

    Raises
    ------
    ParameterError
        If the budget or a value is negative.

    Examples
    --------
    >>> parts = fit_sum([0.7 / 3] * 3, 0.7)
    >>> sum_up(parts) <= 0.7
    True
    """
    out = [float(v) for v in values]
    if not (budget >= 0 and all(v >= 0 for v in out)):
        raise ParameterError(f"fit_sum needs a budget >= 0 and values >= 0, got {budget!r}")
    while sum_up(out) > budget:
        out = [math.nextafter(v, 0.0) if v > 0 else v for v in out]
    return out


def information_bounds(p: ArrayLike, matrix: ArrayLike) -> tuple[float, float]:
    """``I(X; Z)`` (nats) for X ~ p and Z | X = x ~ M[x, :], with a bound on the
    error of the computed value: the exact I of the doubles p and M lies within
    ``value +- error``.

    With released masses ``m`` (``p M`` as computed) and
    ``phi(d) = (1 + d) log(1 + d) - d >= 0``,

        sum_x p_x sum_z m_z phi(M[x, z] / m_z - 1) - (sum_x p_x - 1) sum_z m_z
          = I + sum_z m_z phi(r_z / m_z - 1),

    ``r`` the exact released masses.  Every term on the left is non-negative,
    so it has no cancellation, and the rounding of m enters only through the
    last sum, which is second order (at most ``sum_z m_z delta_z**2`` for a
    relative error delta_z of m_z).  Sums by :func:`math.fsum`; O(S^2).

    Parameters
    ----------
    p : array-like, shape (S,)
        Probabilities of the original categories.
    matrix : array-like, shape (S, S)
        ``M[x, z] = P(Z = z | X = x)``.

    Returns
    -------
    (float, float)
        The computed I(X; Z) (nats) and a bound on its error.

    Examples
    --------
    >>> value, error = information_bounds([0.5, 0.5], [[0.75, 0.25], [0.25, 0.75]])
    >>> abs(value - (math.log(2) + 0.75 * math.log(0.75) + 0.25 * math.log(0.25))) <= error < 1e-14
    True
    """
    pv = np.asarray(p, dtype=float)
    m = np.asarray(matrix, dtype=float)
    released = pv @ m
    cols = released > 0
    m, mass = m[:, cols], released[cols]
    d = (m - mass) / mass
    with np.errstate(divide="ignore", invalid="ignore"):
        log1p = np.where(d > -1.0, np.log1p(d), 0.0)
    outer = (1.0 + d) * log1p
    phi = np.where(d > -1.0, outer - d, 1.0)
    weight = pv[:, None] * mass[None, :]
    excess_weight = math.fsum([*pv.tolist(), -1.0])
    total_mass = math.fsum(mass.tolist())
    value = math.fsum((weight * phi).ravel().tolist()) - excess_weight * total_mass
    size = float((weight * (np.abs(outer) + np.abs(d) * (1.0 + np.abs(log1p)))).sum())
    delta = float(rounding_bound(1.0, pv.size))              # relative error of each released mass
    error = float(rounding_bound(size + abs(excess_weight) * total_mass)) + 2.0 * delta * delta * total_mass
    return value, error
