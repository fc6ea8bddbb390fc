"""The discrete Gaussian mechanism, sampled exactly.

The discrete Gaussian distribution with variance parameter ``sigma2 > 0`` puts mass

    P(x) = exp(-x**2 / (2 sigma2)) / sum_{y in Z} exp(-y**2 / (2 sigma2)),   x in Z,

on the integers (Canonne, Kamath and Steinke 2020, Definition 1).  Adding it to an
integer vector query whose L2 sensitivity squared is ``sensitivity2`` satisfies
``sensitivity2 / (2 sigma2)``-zero-concentrated DP (their Theorem 4, with the
zCDP of a vector summed over its independent coordinates), the same as the
continuous Gaussian; :func:`gaussian_sigma2` gives the variance parameter of a
zCDP budget rho, and :mod:`pramkit.privacy.zcdp` converts rho to (epsilon, delta).
A histogram changes by one in one cell when one record is added or removed
(``sensitivity2 = 1``), and by one in each of two cells when one record is
replaced by another (``sensitivity2 = 2``).

The draws are exact, by Algorithm 3 of Canonne, Kamath and Steinke (2020):
with ``t = floor(sigma) + 1``,

1. draw Y from the discrete Laplace law ``P(y) ∝ exp(-|y| / t)``;
2. accept Y with probability ``exp(-(|Y| - sigma2 / t)**2 / (2 sigma2))``,
   otherwise start again.

Every step is integer arithmetic on uniform random bits: ``sigma2`` is read as
the exact rational of the number given (a float is a dyadic rational, and
:class:`fractions.Fraction` converts it exactly), ``floor(sigma)`` is
``math.isqrt(floor(sigma2))`` (``floor(sqrt(x)) = floor(sqrt(floor(x)))``), the
proposal is :func:`pramkit.privacy.geometric._discrete_laplace`, and the
acceptance ``Bernoulli(exp(-g))`` for a rational ``g = n / d`` is a product of
``floor(g)`` Bernoulli(exp(-1)) trials (stopped at the first failure) and one
Bernoulli(exp(-(n mod d) / d)) trial, each by
:func:`pramkit.privacy.geometric._bernoulli_exp` (their Algorithm 1).  The
expected number of proposals per draw is below 2.5 for every ``sigma2``, and the
acceptance exponents are kept per ``|Y|`` so that a table of many cells does
the rational arithmetic of each value once.

References
----------
Canonne, C. L., Kamath, G. and Steinke, T. (2020), The discrete Gaussian for
differential privacy, NeurIPS 2020, Definition 1, Theorem 4, section 5,
Algorithms 1 to 3.
"""

from __future__ import annotations

import math
import numbers
import random
import secrets
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError
from pramkit.privacy.geometric import _bernoulli_exp, _Bits, _check_counts, _check_int, _discrete_laplace

#: Largest ``sigma2`` accepted: sigma at most 2**40, the scale of the widest
#: discrete Laplace noise (:data:`pramkit.privacy.geometric.MIN_GAMMA`).  The noise
#: stays far inside int64: ``P(|noise| >= 2**62) <= 2 exp(-2**43)``.
MAX_SIGMA2 = Fraction(2**80)


def _exact(value: Any, name: str) -> Fraction:
    """The exact rational a finite positive real number stands for, checked (not a bool).

    A float is a dyadic rational, converted exactly; a fraction is never rounded
    through a float, however large or small.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    if isinstance(value, numbers.Rational):
        out = Fraction(int(value.numerator), int(value.denominator))
    elif math.isfinite(value):
        out = Fraction(*float(value).as_integer_ratio())
    else:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    if out <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return out


def _check_sigma2(sigma2: Fraction | float | int) -> Fraction:
    """``sigma2`` as the exact fraction it stands for, checked finite, positive and at most :data:`MAX_SIGMA2`."""
    value = _exact(sigma2, "sigma2")
    if value > MAX_SIGMA2:
        raise ParameterError("sigma2 must be at most 2**80 (sigma at most 2**40): the noise would not fit "
                             "in 64-bit integers")
    return value


def _bernoulli_exp_rational(num: int, den: int, bits: _Bits) -> bool:
    """Bernoulli(exp(-num / den)) for integers ``num >= 0``, ``den >= 1`` (any size of ``num / den``)."""
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp(1, 1, bits):
            return False
    return _bernoulli_exp(rest, den, bits)


def _sampler(sigma2: Fraction, bits: _Bits):
    """A function of no argument returning one exact discrete Gaussian draw (Algorithm 3).

    With ``sigma2 = p / q`` and ``t = floor(sigma) + 1`` the exponent of the
    acceptance of ``|Y| = y`` is ``(y q t - p)**2 / (2 p q t**2)``; its integer
    numerator is kept per ``y``.
    """
    p, q = sigma2.numerator, sigma2.denominator
    t = math.isqrt(p // q) + 1
    den = 2 * p * q * t * t
    qt = q * t
    numerators: dict[int, int] = {}

    def draw() -> int:
        while True:
            y = _discrete_laplace(1, t, bits)
            a = -y if y < 0 else y
            num = numerators.get(a)
            if num is None:
                num = numerators[a] = (a * qt - p) ** 2
            if _bernoulli_exp_rational(num, den, bits):
                return y

    return draw


def discrete_gaussian(
    size: int,
    sigma2: Fraction | float | int,
    *,
    rng: random.Random | None = None,
) -> np.ndarray:
    """Exact i.i.d. draws from the discrete Gaussian ``N_Z(0, sigma2)``.

    ``P(x) ∝ exp(-x**2 / (2 sigma2))`` for every integer x, with ``sigma2`` read
    as the exact rational value of the number given.  Its variance is slightly
    below ``sigma2`` (Canonne, Kamath and Steinke 2020, Proposition 19).

    Parameters
    ----------
    size : int
        Number of draws (>= 0).
    sigma2 : Fraction, float or int
        The variance parameter, finite, > 0 and at most :data:`MAX_SIGMA2`
        (:func:`gaussian_sigma2` gives it for a zCDP budget).
    rng : random.Random, optional
        Source of random bits; default a new :class:`secrets.SystemRandom`
        (the operating system's CSPRNG).  Pass a seeded :class:`random.Random`
        only for reproducible tests: its output is predictable and must not
        protect real data.

    Returns
    -------
    numpy.ndarray
        ``size`` int64 draws.

    Raises
    ------
    ParameterError
        For a negative or non-integer ``size``, or a ``sigma2`` that is not a
        finite positive number (a bool is not one) or is above :data:`MAX_SIGMA2`.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Algorithm 3.

    Examples
    --------
    >>> import random
    >>> noise = discrete_gaussian(6, 4, rng=random.Random(7))
    >>> noise.dtype, noise.shape
    (dtype('int64'), (6,))
    >>> noise.tolist()
    [0, -1, 0, 3, 5, 1]
    >>> discrete_gaussian(3, Fraction(1, 3), rng=random.Random(1)).tolist()
    [0, 0, 0]
    """
    n = _check_int(size, "size", 0)
    value = _check_sigma2(sigma2)
    draw = _sampler(value, _Bits(secrets.SystemRandom() if rng is None else rng))
    return np.array([draw() for _ in range(n)], dtype=np.int64)


def gaussian_sigma2(rho: Fraction | float, sensitivity2: int = 1) -> Fraction:
    """The variance parameter of the Gaussian mechanism at ``rho``-zCDP, as an exact fraction.

    Adding ``N_Z(0, sigma2)`` (or the continuous Gaussian) to each coordinate of a
    query whose squared L2 sensitivity is ``sensitivity2`` is
    ``sensitivity2 / (2 sigma2)``-zCDP, so ``sigma2 = sensitivity2 / (2 rho)``.

    Parameters
    ----------
    rho : Fraction or float
        The zCDP budget, finite and > 0 (a float read as its exact rational).
    sensitivity2 : int, default 1
        The squared L2 sensitivity, a positive integer: 1 for a histogram under
        add-or-remove-one neighbours, 2 under replace-one.

    Returns
    -------
    fractions.Fraction
        ``sensitivity2 / (2 rho)``.

    Raises
    ------
    ParameterError
        For a rho that is not finite and positive, or a ``sensitivity2`` that is
        not a positive integer.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Theorem 4.

    Examples
    --------
    >>> gaussian_sigma2(0.5)
    Fraction(1, 1)
    >>> gaussian_sigma2(Fraction(1, 100), sensitivity2=2)
    Fraction(100, 1)
    >>> gaussian_sigma2(0.1)      # the float 0.1 exactly: a little above 1/10
    Fraction(18014398509481984, 3602879701896397)
    """
    return Fraction(_check_int(sensitivity2, "sensitivity2", 1)) / (2 * _exact(rho, "rho"))


def gaussian_rho(sigma2: Fraction | float | int, sensitivity2: int = 1) -> Fraction:
    """The zCDP of Gaussian noise of variance ``sigma2`` on a query of squared L2 sensitivity ``sensitivity2``:
    ``sensitivity2 / (2 sigma2)``, exactly (the inverse of :func:`gaussian_sigma2`).

    Examples
    --------
    >>> gaussian_rho(100.0), gaussian_rho(100, sensitivity2=2)
    (Fraction(1, 200), Fraction(1, 100))
    >>> gaussian_rho(gaussian_sigma2(0.1)) == Fraction(0.1)
    True
    """
    return Fraction(_check_int(sensitivity2, "sensitivity2", 1)) / (2 * _check_sigma2(sigma2))


def dg_counts(
    counts: ArrayLike,
    sigma2: Fraction | float | int,
    *,
    rng: random.Random | None = None,
) -> np.ndarray:
    """Integer counts plus independent discrete Gaussian noise ``N_Z(0, sigma2)`` in each cell.

    For counts whose squared L2 distance between neighbouring data sets is at
    most ``sensitivity2``, the release is ``sensitivity2 / (2 sigma2)``-zCDP
    (:func:`gaussian_sigma2` gives ``sigma2`` from rho;
    :func:`pramkit.privacy.zcdp.delta_of` the (epsilon, delta) it implies).

    Parameters
    ----------
    counts : array-like of int, any shape
        Non-negative integer counts (a histogram or a contingency table), checked
        as :func:`pramkit.privacy.geometric.dp_counts` checks them.  Whole-number
        floats are accepted.
    sigma2 : Fraction, float or int
        The variance parameter, as in :func:`discrete_gaussian`.
    rng : random.Random, optional
        As in :func:`discrete_gaussian`; default the operating system's CSPRNG.

    Returns
    -------
    numpy.ndarray
        The noisy counts, int64, in the shape of ``counts`` (may be negative).

    Raises
    ------
    DataError
        For counts that are empty, negative, fractional or not numbers.
    ParameterError
        For a bad ``sigma2`` (see :func:`discrete_gaussian`).

    References
    ----------
    Canonne, Kamath and Steinke (2020), Theorem 4 and Algorithm 3.

    Examples
    --------
    >>> import random
    >>> dg_counts([[120, 45], [3, 0]], gaussian_sigma2(0.5), rng=random.Random(7)).tolist()
    [[120, 46], [2, 0]]
    """
    arr = _check_counts(counts)
    noise = discrete_gaussian(arr.size, sigma2, rng=rng)
    return arr + noise.reshape(arr.shape)
