"""Distances between two distributions on the same cells: Kullback-Leibler divergence (nats),
Hellinger distance and total-variation distance."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import rel_entr

from pramkit.errors import ParameterError


def _distribution(x: ArrayLike, what: str) -> np.ndarray:
    v = np.asarray(x, dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ParameterError(f"{what} must be a non-empty array of finite numbers")
    if np.any(v < 0):
        raise ParameterError(
            f"{what} has a negative entry ({v.min():g}); distances need a distribution "
            "(use the MLE, which stays on the simplex, rather than the moment estimate)"
        )
    total = v.sum()
    if total <= 0:
        raise ParameterError(f"{what} sums to zero")
    return v / total


def _pair(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    pv, qv = _distribution(p, "the first table"), _distribution(q, "the second table")
    if pv.shape != qv.shape:
        raise ParameterError(f"the tables have different shapes {pv.shape} and {qv.shape}")
    return pv, qv


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """KL(p || q) = sum p log(p / q) in nats (tables of counts are normalised); ``inf``
    when q is zero where p is not.

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells.

    Returns
    -------
    float
        The divergence in nats, ``>= 0`` up to rounding (0 iff the normalised
        tables are equal; the sum is not clamped, so equal tables can give
        a value of order -1e-16).

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    Original counts against an estimate (not symmetric in its arguments):

    >>> round(kl_divergence([60, 30, 10], [50, 30, 20]), 6), round(kl_divergence([50, 30, 20], [60, 30, 10]), 6)
    (0.040078, 0.047469)
    >>> abs(kl_divergence([60, 30, 10], [0.6, 0.3, 0.1])) < 1e-15, kl_divergence([1, 1], [1, 0])
    (True, inf)
    """
    pv, qv = _pair(p, q)
    return float(rel_entr(pv, qv).sum())


def hellinger(p: ArrayLike, q: ArrayLike) -> float:
    """Hellinger distance ``sqrt(1 - sum sqrt(p q))``, in [0, 1].

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells.

    Returns
    -------
    float
        0 for equal distributions, 1 for disjoint supports.

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    >>> round(hellinger([60, 30, 10], [50, 30, 20]), 6)
    0.104193
    >>> hellinger([1, 0], [0, 1]), hellinger([2, 2], [0.5, 0.5])
    (1.0, 0.0)
    """
    pv, qv = _pair(p, q)
    return math.sqrt(max(1.0 - float(np.sqrt(pv * qv).sum()), 0.0))


def total_variation(p: ArrayLike, q: ArrayLike) -> float:
    """Total-variation distance ``(1/2) sum |p - q|``, in [0, 1].

    The largest difference between the two distributions' probabilities of
    any set of cells.

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells.

    Returns
    -------
    float
        0 for equal distributions, 1 for disjoint supports.

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    Moving 10% of the records from the first cell to the last:

    >>> round(total_variation([60, 30, 10], [50, 30, 20]), 12)
    0.1
    >>> total_variation([[1, 0], [0, 0]], [[0, 0], [0, 1]])    # tables of any shape
    1.0
    """
    pv, qv = _pair(p, q)
    return 0.5 * float(np.abs(pv - qv).sum())


@dataclass(frozen=True)
class TableDistances:
    """Distances between two tables (each normalised to a distribution).

    kl_nats: KL(first || second) in nats
    hellinger: Hellinger distance (unitless, in [0, 1])
    total_variation: total-variation distance (unitless, in [0, 1])

    Examples
    --------
    The two distances bound each other, ``H^2 <= TV <= sqrt(2) H``:

    >>> d = distances([60, 30, 10], [50, 30, 20])
    >>> d.hellinger ** 2 <= d.total_variation <= math.sqrt(2) * d.hellinger
    True
    """

    kl_nats: float
    hellinger: float
    total_variation: float


def distances(p: ArrayLike, q: ArrayLike) -> TableDistances:
    """KL divergence, Hellinger and total-variation distance between two tables.

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells (e.g. the
        original table and an estimate from the released file).

    Returns
    -------
    TableDistances
        :func:`kl_divergence` (first against second), :func:`hellinger` and
        :func:`total_variation`.

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    >>> d = distances([60, 30, 10], [50, 30, 20])
    >>> round(d.kl_nats, 6), round(d.hellinger, 6), round(d.total_variation, 6)
    (0.040078, 0.104193, 0.1)
    """
    return TableDistances(kl_divergence(p, q), hellinger(p, q), total_variation(p, q))
