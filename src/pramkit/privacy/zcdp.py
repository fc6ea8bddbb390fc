"""Zero-concentrated differential privacy (zCDP): budgets in rho, converted to (epsilon, delta).

A mechanism is rho-zCDP when the Renyi divergence of order alpha between its
outputs on neighbouring data sets is at most ``alpha rho`` for every alpha > 1
(Bun and Steinke 2016).  zCDP composes by adding the rhos, which is why AIM and
MST account their measurements in it: the Gaussian mechanism of variance
``sigma2`` on a query of squared L2 sensitivity ``sensitivity2`` is
``sensitivity2 / (2 sigma2)``-zCDP (:func:`pramkit.privacy.gaussian.gaussian_sigma2`),
and the exponential mechanism at pure epsilon is ``epsilon**2 / 8``-zCDP (it has
bounded range: Cesar and Rogers 2021; :func:`exponential_rho`).

The total rho is converted to (epsilon, delta)-DP by Corollary 13 of Canonne,
Kamath and Steinke (2020): rho-zCDP implies (epsilon, delta)-DP for

    delta = exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)**alpha

at every alpha > 1 (:func:`delta_at`, computed in logs with ``log1p`` and capped
at 1).  The logarithm of this bound is convex in alpha with derivative
``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)``, increasing from minus
infinity at alpha = 1 to plus infinity, so its minimiser is the root of the
derivative, found by bisection (:func:`best_alpha`).  Any alpha gives a valid
bound; the best one only makes it tight.  The conversion is tighter than the
classical ``epsilon = rho + 2 sqrt(rho log(1/delta))`` of Bun and Steinke
(2016, Proposition 1.3).  :func:`rho_for` inverts it: the largest rho whose
conversion meets a target (epsilon, delta).

References
----------
Bun, M. and Steinke, T. (2016), Concentrated differential privacy:
simplifications, extensions, and lower bounds, TCC 2016, Proposition 1.3.
Canonne, C. L., Kamath, G. and Steinke, T. (2020), The discrete Gaussian for
differential privacy, NeurIPS 2020, Proposition 12 and Corollary 13.
Cesar, M. and Rogers, R. (2021), Bounding, concentrating, and truncating:
unifying privacy loss composition for data analytics, ALT 2021.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from pramkit.errors import ParameterError
from pramkit.privacy.gaussian import _exact
from pramkit.validate import positive

#: The largest alpha :func:`best_alpha` looks at: beyond it the bound is 0 in floats
#: for any rho and epsilon that are not themselves near the smallest floats.
_ALPHA_MAX = 1e300


def _alpha(alpha: float) -> float:
    """``alpha`` as a float, checked finite and above 1."""
    a = positive(alpha, "alpha")
    if not a > 1:
        raise ParameterError(f"alpha must be a finite number above 1, got {alpha!r}")
    return a


def _log_delta(rho: float, epsilon: float, alpha: float) -> float:
    """The logarithm of the bound of Corollary 13 (unchecked floats, ``alpha > 1``).

    ``(alpha - 1)(alpha rho - epsilon) + alpha log(1 - 1/alpha) - log(alpha - 1)``.  Below alpha = 2,
    where ``1 - 1/alpha`` would lose digits, ``log(1 - 1/alpha) = log(alpha - 1) - log(alpha)`` (``alpha - 1``
    is exact there) and the two ``log(alpha - 1)`` terms are gathered into ``(alpha - 1) log(alpha - 1)``.
    """
    if alpha < 2.0:
        x = alpha - 1.0
        return x * (alpha * rho - epsilon + math.log(x)) - alpha * math.log1p(x)
    return (alpha - 1.0) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)


def _slope(rho: float, epsilon: float, alpha: float) -> float:
    """The derivative in alpha of :func:`_log_delta`: ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)``."""
    log_ratio = math.log(alpha - 1.0) - math.log1p(alpha - 1.0) if alpha < 2.0 else math.log1p(-1.0 / alpha)
    return (2.0 * alpha - 1.0) * rho - epsilon + log_ratio


def delta_at(rho: float, epsilon: float, alpha: float) -> float:
    """The delta at which rho-zCDP implies (epsilon, delta)-DP, by the bound of order ``alpha``.

    ``delta = exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)**alpha``
    (Canonne, Kamath and Steinke 2020, Corollary 13), valid for every alpha > 1,
    computed in logs (``log1p``) and capped at 1.

    Parameters
    ----------
    rho : float
        The zCDP budget, finite and > 0.
    epsilon : float
        The target epsilon, finite and > 0.
    alpha : float
        The Renyi order, finite and > 1.

    Returns
    -------
    float
        delta in [0, 1].

    Raises
    ------
    ParameterError
        For a rho or epsilon that is not finite and positive, or an alpha that is
        not finite and above 1.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Corollary 13.

    Examples
    --------
    >>> round(delta_at(0.1, 1.0, 6.0), 6)
    0.009065
    >>> delta_at(5.0, 0.1, 2.0)          # a loose order: the bound says nothing
    1.0
    """
    r, e, a = positive(rho, "rho"), positive(epsilon, "epsilon"), _alpha(alpha)
    log_delta = _log_delta(r, e, a)
    return 1.0 if log_delta >= 0 else math.exp(log_delta)


def best_alpha(rho: float, epsilon: float) -> float:
    """The alpha > 1 at which :func:`delta_at` is least, by bisection on the derivative of its log.

    ``log delta`` is convex in alpha with derivative
    ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)``; its root is bracketed
    (the derivative is negative near 1 and positive at
    ``alpha = (epsilon + 1) / (2 rho) + 1``) and the bracket halved until its ends
    are adjacent floats.  The upper end is returned (at most 1e300).

    Parameters
    ----------
    rho : float
        The zCDP budget, finite and > 0.
    epsilon : float
        The target epsilon, finite and > 0.

    Returns
    -------
    float
        The minimising alpha, > 1.

    Raises
    ------
    ParameterError
        For a rho or epsilon that is not finite and positive.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Corollary 13.

    Examples
    --------
    >>> round(best_alpha(0.1, 1.0), 4)
    6.3559
    >>> round(best_alpha(1e-6, 1.0) / 1e6, 3)     # about epsilon / (2 rho) for small rho
    0.5
    """
    r, e = positive(rho, "rho"), positive(epsilon, "epsilon")
    hi = min(max(2.0, (e + 1.0) / (2.0 * r) + 1.0), _ALPHA_MAX)
    if _slope(r, e, hi) < 0:
        return hi
    lo = 1.5
    while lo > 1.0 and _slope(r, e, lo) >= 0:
        lo = 1.0 + (lo - 1.0) / 2.0
    while True:
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            return hi
        if _slope(r, e, mid) < 0:
            lo = mid
        else:
            hi = mid


def delta_of(rho: float, epsilon: float) -> tuple[float, float]:
    """The least delta of Corollary 13 at which rho-zCDP implies (epsilon, delta)-DP, and its alpha.

    Parameters
    ----------
    rho : float
        The zCDP budget, finite and > 0.
    epsilon : float
        The target epsilon, finite and > 0.

    Returns
    -------
    tuple of float
        ``(delta, alpha)``: :func:`delta_at` at :func:`best_alpha`.

    Raises
    ------
    ParameterError
        For a rho or epsilon that is not finite and positive.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Corollary 13.

    Examples
    --------
    >>> delta, alpha = delta_of(0.1, 1.0)
    >>> f"{delta:.4e}", round(alpha, 4)
    ('8.9332e-03', 6.3559)
    """
    alpha = best_alpha(rho, epsilon)
    return delta_at(rho, epsilon, alpha), alpha


def _delta(rho: float, epsilon: float) -> float:
    """:func:`delta_of`'s delta, unchecked."""
    return delta_at(rho, epsilon, best_alpha(rho, epsilon))


def rho_for(epsilon: float, delta: float) -> float:
    """The largest rho such that rho-zCDP implies (epsilon, delta)-DP by Corollary 13.

    The delta of :func:`delta_of` increases with rho; rho is bracketed by
    doubling and halving from ``epsilon``, bisected until the bracket's ends are
    adjacent floats, then stepped down with :func:`math.nextafter` until
    ``delta_at(rho, epsilon, best_alpha(rho, epsilon)) <= delta`` holds in floats.

    Parameters
    ----------
    epsilon : float
        The target epsilon, finite and > 0.
    delta : float
        The target delta, strictly between 0 and 1.

    Returns
    -------
    float
        rho > 0.

    Raises
    ------
    ParameterError
        For an epsilon that is not finite and positive, a delta outside (0, 1),
        or an epsilon so small that no positive float rho meets the target.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Corollary 13.

    Examples
    --------
    >>> rho = rho_for(1.0, 1e-6)
    >>> round(rho, 6)
    0.024356
    >>> delta_of(rho, 1.0)[0] <= 1e-6
    True
    >>> classical = (math.sqrt(math.log(1e6) + 1.0) - math.sqrt(math.log(1e6))) ** 2
    >>> round(classical, 6)           # eps = rho + 2 sqrt(rho log(1/delta)) gives less
    0.017469
    """
    e = positive(epsilon, "epsilon")
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Real) \
            or not 0.0 < float(delta) < 1.0:
        raise ParameterError(f"delta must be a number strictly between 0 and 1, got {delta!r}")
    d = float(delta)
    hi = e
    while _delta(hi, e) <= d:
        hi *= 2.0
    lo = hi / 2.0
    while _delta(lo, e) > d:
        lo /= 2.0
        if lo == 0.0:
            raise ParameterError(f"epsilon = {e!r} is too small: no positive rho meets delta = {d!r} in floats")
    while True:
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            break
        if _delta(mid, e) <= d:
            lo = mid
        else:
            hi = mid
    rho = lo
    while _delta(rho, e) > d:
        rho = math.nextafter(rho, 0.0)
    return rho


def exponential_rho(epsilon: float) -> Fraction:
    """The zCDP of the exponential mechanism at pure ``epsilon``: ``epsilon**2 / 8``, exactly.

    An epsilon-DP exponential mechanism has bounded range, and so is
    ``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021), as AIM accounts its
    selection steps.

    Parameters
    ----------
    epsilon : float
        The exponential mechanism's epsilon, finite and > 0 (read as the exact
        rational of the float).

    Returns
    -------
    fractions.Fraction
        ``Fraction(epsilon)**2 / 8``.

    Raises
    ------
    ParameterError
        For an epsilon that is not finite and positive.

    References
    ----------
    Cesar and Rogers (2021), bounded range and zCDP.

    Examples
    --------
    >>> exponential_rho(2.0)
    Fraction(1, 2)
    >>> exponential_rho(0.5)
    Fraction(1, 32)
    """
    exact = _exact(epsilon, "epsilon")
    return exact * exact / 8


def _sqrt_estimate(x: Fraction) -> float:
    """A float within an ulp or two of ``sqrt(x)`` for a positive fraction (integer square roots), or inf."""
    n, d = x.numerator, x.denominator
    k = max(0, (130 - n.bit_length() + d.bit_length()) // 2)
    try:
        return float(Fraction(math.isqrt((n << (2 * k)) // d), 1 << k))
    except OverflowError:
        return math.inf


def exponential_epsilon(rho: Fraction | float) -> float:
    """The largest float epsilon whose exponential mechanism is at most ``rho``-zCDP.

    The largest float ``epsilon`` with ``Fraction(epsilon)**2 / 8 <= rho``, checked
    exactly with fractions (stepped with :func:`math.nextafter` from an integer
    square root): the inverse of :func:`exponential_rho`, which it undoes exactly.

    Parameters
    ----------
    rho : Fraction or float
        The zCDP budget of one selection, finite and > 0.

    Returns
    -------
    float
        epsilon > 0.

    Raises
    ------
    ParameterError
        For a rho that is not finite and positive, or so small or so large that
        its epsilon is not a positive float.

    References
    ----------
    Cesar and Rogers (2021), bounded range and zCDP.

    Examples
    --------
    >>> exponential_epsilon(Fraction(1, 2))
    2.0
    >>> exponential_epsilon(0.01)
    0.282842712474619
    >>> exponential_epsilon(exponential_rho(0.3)) == 0.3
    True
    """
    exact = _exact(rho, "rho")
    eps = _sqrt_estimate(8 * exact)
    if math.isinf(eps):
        raise ParameterError("rho is too large: its epsilon would be above the largest float")
    while eps > 0 and Fraction(eps) ** 2 / 8 > exact:
        eps = math.nextafter(eps, 0.0)
    while True:
        up = math.nextafter(eps, math.inf)
        if math.isinf(up) or Fraction(up) ** 2 / 8 > exact:
            break
        eps = up
    if eps <= 0:
        raise ParameterError("rho is too small: its epsilon would be below the smallest positive float")
    return eps
