"""The geometric (discrete Laplace) mechanism, sampled exactly.

The discrete Laplace distribution with parameter ``gamma > 0`` puts mass

    P(k) = (1 - q) / (1 + q) * q**|k|,   q = exp(-gamma),   k in Z,

on the integers; it is the two-sided geometric distribution.  Adding it with
``gamma = epsilon / sensitivity`` to an integer query of L1 sensitivity
``sensitivity`` is epsilon-differentially private (Ghosh, Roughgarden and
Sundararajan 2012).  A histogram changes in two cells by one each when one
record is replaced by another, so its sensitivity under replace-one
neighbouring is 2, the default here.

Floating-point Laplace noise is not safe: the set of doubles a textbook
sampler can return depends on the true value, and that leaks it (Mironov
2012).  The noise here is drawn exactly, with integer arithmetic on uniform
random bits from the operating system's CSPRNG (:class:`secrets.SystemRandom`),
by the algorithms of Canonne, Kamath and Steinke (2020, section 5):

1. Bernoulli(exp(-gamma)) for a rational ``gamma`` in [0, 1]: let K be the
   first k >= 1 at which a Bernoulli(gamma / k) trial fails; then
   ``P(K odd) = sum_j (-gamma)**j / j! = exp(-gamma)``.  Only such ``gamma``
   are needed below.
2. Geometric with ratio ``exp(-s / t)`` (integers s, t >= 1): U uniform on
   {0, ..., t - 1} kept with probability exp(-U / t), and V with
   ``P(V = v) ∝ exp(-v)`` (count the successes of Bernoulli(exp(-1)) before
   the first failure), give ``X = U + t V`` with ``P(X = x) ∝ exp(-x / t)``;
   then ``floor(X / s)`` has ``P(y) ∝ exp(-y s / t)``.
3. Discrete Laplace: a geometric Y and a fair sign B; (B = minus, Y = 0) is
   rejected so that zero is not counted twice, and ``(-1)**B Y`` is returned.

The expected number of random integers per draw is bounded for every
``gamma`` (about ten below ``gamma = 1``, under twenty above); big
denominators only widen the integers.  A float epsilon is
a dyadic rational, converted exactly by :class:`fractions.Fraction`, so the
noise has exactly the stated distribution for the float given.  Random bits
are fetched from the generator in blocks and used one integer at a time by
rejection, which keeps every draw exact.

References
----------
Canonne, C. L., Kamath, G. and Steinke, T. (2020), The discrete Gaussian for
differential privacy, NeurIPS 2020, section 5, Algorithms 1 and 2.
Ghosh, A., Roughgarden, T. and Sundararajan, M. (2012), Universally
utility-maximizing privacy mechanisms, SIAM Journal on Computing 41(6).
Mironov, I. (2012), On significance of the least significant bits for
differential privacy, ACM CCS 2012.
"""

from __future__ import annotations

import numbers
import operator
import random
import secrets
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import DataError, ParameterError
from pramkit.validate import positive

#: Smallest ``epsilon / sensitivity`` accepted.  Noise of that scale stays far
#: inside int64: ``P(|noise| >= 2**62) <= exp(-2**22)``.
MIN_GAMMA = Fraction(1, 2**40)

#: Bits fetched from the generator at a time (one system call for SystemRandom).
_BLOCK_BITS = 1024


class _Bits:
    """Uniform random integers from a block-buffered stream of random bits."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._word = 0
        self._nbits = 0

    def below(self, n: int) -> int:
        """Uniform on {0, ..., n - 1} (n >= 1), by rejection of ``bit_length(n - 1)`` bits."""
        k = (n - 1).bit_length()
        while True:
            while self._nbits < k:
                self._word |= self._rng.getrandbits(_BLOCK_BITS) << self._nbits
                self._nbits += _BLOCK_BITS
            r = self._word & ((1 << k) - 1)
            self._word >>= k
            self._nbits -= k
            if r < n:
                return r


def _bernoulli_exp(a: int, b: int, bits: _Bits) -> bool:
    """Bernoulli(exp(-a / b)) for integers ``0 <= a <= b``, ``b >= 1``."""
    k = 1
    while bits.below(b * k) < a:
        k += 1
    return k % 2 == 1


def _geometric(s: int, t: int, bits: _Bits) -> int:
    """Y >= 0 with ``P(Y = y) = (1 - q) q**y``, ``q = exp(-s / t)`` (integers s, t >= 1)."""
    u = bits.below(t)
    while not _bernoulli_exp(u, t, bits):
        u = bits.below(t)
    v = 0
    while _bernoulli_exp(1, 1, bits):
        v += 1
    return (u + t * v) // s


def _discrete_laplace(s: int, t: int, bits: _Bits) -> int:
    """Z in Z with ``P(Z = z) ∝ exp(-|z| s / t)`` (integers s, t >= 1)."""
    while True:
        y = _geometric(s, t, bits)
        negative = bits.below(2) == 1
        if not (negative and y == 0):
            return -y if negative else y


def _check_epsilon(epsilon: float) -> Fraction:
    """Epsilon as the exact fraction it stands for (a float is a dyadic rational)."""
    positive(epsilon, "epsilon")
    if isinstance(epsilon, (numbers.Rational, float)):
        return Fraction(epsilon)
    return Fraction(*epsilon.as_integer_ratio())


def _check_int(value: int, name: str, minimum: int) -> int:
    """``value`` as a Python int, checked to be an integer (not a bool) >= ``minimum``."""
    what = "a positive" if minimum == 1 else "a non-negative"
    if isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be {what} integer, not {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise ParameterError(f"{name} must be {what} integer, not {value!r}") from None
    if out < minimum:
        raise ParameterError(f"{name} must be {what} integer, not {out}")
    return out


def _gamma(epsilon: float, sensitivity: int) -> Fraction:
    """``epsilon / sensitivity`` as an exact fraction, validated."""
    gamma = _check_epsilon(epsilon) / _check_int(sensitivity, "sensitivity", 1)
    if gamma < MIN_GAMMA:
        raise ParameterError(
            f"epsilon / sensitivity = {float(gamma):.3g} is below {float(MIN_GAMMA):.3g}: "
            "the noise would not fit in 64-bit integers"
        )
    return gamma


def discrete_laplace(
    size: int,
    epsilon: float,
    *,
    sensitivity: int = 2,
    rng: random.Random | None = None,
) -> np.ndarray:
    """Exact i.i.d. draws of discrete Laplace noise.

    ``P(k) ∝ exp(-epsilon |k| / sensitivity)`` for every integer k, with
    ``epsilon`` read as the exact rational value of the float given.

    Parameters
    ----------
    size : int
        Number of draws (>= 0).
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : int, default 2
        L1 sensitivity of the integer query, a positive integer (2: a
        histogram under replace-one neighbouring).
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
        For a negative or non-integer ``size``, an epsilon that is not finite
        and positive, a sensitivity that is not a positive integer, or
        ``epsilon / sensitivity`` below :data:`MIN_GAMMA`.

    References
    ----------
    Canonne, Kamath and Steinke (2020), Algorithms 1 and 2.

    Examples
    --------
    >>> import random
    >>> noise = discrete_laplace(5, 1.0, rng=random.Random(7))
    >>> noise.dtype, noise.shape
    (dtype('int64'), (5,))
    >>> noise.tolist()
    [-2, -3, -8, 0, 1]
    """
    n = _check_int(size, "size", 0)
    gamma = _gamma(epsilon, sensitivity)
    bits = _Bits(secrets.SystemRandom() if rng is None else rng)
    s, t = gamma.numerator, gamma.denominator
    return np.array([_discrete_laplace(s, t, bits) for _ in range(n)], dtype=np.int64)


@dataclass(frozen=True, eq=False)
class DPCounts:
    """Counts released by the geometric mechanism.

    noisy: the noisy counts, int64, in the shape of the input (the
        differentially private output; may be negative)
    epsilon: the privacy parameter spent
    sensitivity: the L1 sensitivity the noise was calibrated to

    Examples
    --------
    A 2 x 2 contingency table released at epsilon 2; the noisy table keeps
    its shape (a seeded generator only to make the example reproducible):

    >>> import random
    >>> released = dp_counts([[40, 3], [12, 0]], 2.0, rng=random.Random(11))
    >>> released.noisy.tolist(), released.epsilon, released.sensitivity
    ([[40, 0], [12, 2]], 2.0, 2)
    """

    noisy: np.ndarray
    epsilon: float
    sensitivity: int

    def proportions(self, floor: float = 0.0) -> np.ndarray:
        """Post-processed probability vector (or table) in the shape of ``noisy``.

        Counts below ``floor`` are raised to it (negative ones to 0 by default) and
        the rest normalised to sum 1; when no count is positive, the uniform
        distribution.  Post-processing spends no further privacy.

        Parameters
        ----------
        floor : float
            The least count a cell is given (non-negative): a design step uses 1, so
            that noise never gives a category probability 0 (a design for such a p may
            send every record of it elsewhere).

        Returns
        -------
        numpy.ndarray
            Non-negative floats in the shape of ``noisy``, summing to 1.

        Examples
        --------
        >>> DPCounts(np.array([6, -2, 2]), 1.0, 2).proportions().tolist()
        [0.75, 0.0, 0.25]
        >>> DPCounts(np.array([-3, 0]), 1.0, 2).proportions().tolist()    # nothing positive: uniform
        [0.5, 0.5]
        >>> DPCounts(np.array([79, -2]), 1.0, 2).proportions(floor=1.0).tolist()    # every cell at least one
        [0.9875, 0.0125]
        """
        clamped = np.maximum(self.noisy, floor).astype(float)
        total = clamped.sum()
        if total == 0:
            return np.full(self.noisy.shape, 1.0 / self.noisy.size)
        return clamped / total

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: the noisy counts, epsilon, sensitivity and the mechanism.

        Returns
        -------
        dict
            ``mechanism`` (``"geometric"``), ``noisy`` (nested lists of int),
            ``epsilon`` and ``sensitivity``.

        Examples
        --------
        >>> import json
        >>> json.dumps(DPCounts(np.array([118, 42, -5, 0]), 1.0, 2).to_dict())
        '{"mechanism": "geometric", "noisy": [118, 42, -5, 0], "epsilon": 1.0, "sensitivity": 2}'
        """
        return {
            "mechanism": "geometric",
            "noisy": self.noisy.tolist(),
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
        }


def _check_counts(counts: ArrayLike) -> np.ndarray:
    """Counts as int64, checked to be whole, non-negative and below 2**62."""
    arr = np.asarray(counts)
    if arr.size == 0:
        raise DataError("counts is empty; give at least one cell")
    if arr.dtype.kind not in "iuf":
        raise DataError(f"counts must be non-negative integers, not an array of {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise DataError("counts must be non-negative integers; some are fractional, NaN or infinite")
    if arr.min() < 0:
        raise DataError(f"counts must be non-negative integers; the smallest is {arr.min()}")
    if arr.max() >= 2**62:
        raise DataError(f"counts must be below 2**62; the largest is {arr.max()}")
    return arr.astype(np.int64)


def dp_counts(
    counts: ArrayLike,
    epsilon: float,
    *,
    sensitivity: int = 2,
    rng: random.Random | None = None,
) -> DPCounts:
    """Release integer counts with epsilon-DP by adding discrete Laplace noise.

    Each cell gets independent noise from :func:`discrete_laplace` with
    ``P(k) ∝ exp(-epsilon |k| / sensitivity)``.  For counts whose L1 distance
    between neighbouring data sets is at most ``sensitivity``, the release is
    epsilon-differentially private: the probabilities of any output under two
    neighbouring data sets differ by a factor of at most ``exp(epsilon)``.

    Parameters
    ----------
    counts : array-like of int, any shape
        Non-negative integer counts (a histogram or a contingency table).
        Whole-number floats are accepted.
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : int, default 2
        L1 sensitivity of the counts; 2 for a histogram of records under
        replace-one neighbouring (use 1 for add-or-remove-one).
    rng : random.Random, optional
        As in :func:`discrete_laplace`; default the operating system's CSPRNG.

    Returns
    -------
    DPCounts
        The noisy counts with epsilon and sensitivity;
        :meth:`DPCounts.proportions` gives category frequencies.

    Raises
    ------
    DataError
        For counts that are empty, negative, fractional or not numbers.
    ParameterError
        For a bad epsilon or sensitivity (see :func:`discrete_laplace`).

    References
    ----------
    Ghosh, Roughgarden and Sundararajan (2012); Canonne, Kamath and Steinke
    (2020), section 5.

    Examples
    --------
    >>> import random
    >>> released = dp_counts([120, 45, 3, 0], 1.0, rng=random.Random(7))
    >>> released.noisy.tolist()
    [118, 42, -5, 0]
    >>> released.proportions().round(3).tolist()
    [0.738, 0.262, 0.0, 0.0]
    """
    arr = _check_counts(counts)
    noise = discrete_laplace(arr.size, epsilon, sensitivity=sensitivity, rng=rng)
    return DPCounts(
        noisy=arr + noise.reshape(arr.shape),
        epsilon=float(epsilon),
        sensitivity=operator.index(sensitivity),
    )
