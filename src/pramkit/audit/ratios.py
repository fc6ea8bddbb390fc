"""Exact epsilons of stated figures: the ratios of a matrix's columns as fractions, and whether a stated
epsilon covers them (the primitives of :mod:`pramkit.audit.manifest` and :mod:`pramkit.audit.stated`)."""

from __future__ import annotations

import math
from decimal import Context, Decimal, DivisionByZero, InvalidOperation
from fractions import Fraction
from typing import Any

import numpy as np

from pramkit.audit.result import Check
from pramkit.matrix import PramMatrix
from pramkit.privacy.law import realised_law

#: Largest matrix whose epsilon is recomputed entry by entry (S x S fractions of its column extremes).
DENSE_CATEGORIES = 3000
#: Largest derived variable whose composed law is recomputed (an S x S x S product of integers).
COMPOSED_CATEGORIES = 200
#: A stated epsilon above the exact one by more than this (relative) is called conservative.
TIGHT_RTOL = 1e-9
#: 60 digits; an exponent beyond Decimal's range gives an infinity rather than raising Overflow.
_CTX = Context(prec=60, traps=[InvalidOperation, DivisionByZero])


def stated_epsilon(value: Any) -> float | None:
    """A stated epsilon as a float (``"inf"`` is infinite), ``None`` when it is not a number.

    Examples
    --------
    >>> stated_epsilon(1.5), stated_epsilon("inf"), stated_epsilon("one")
    (1.5, inf, None)
    """
    if value == "inf":
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def largest_ratio(col_max: np.ndarray, col_min: np.ndarray) -> Fraction | float:
    """The largest ``max / min`` over the columns that can be released, as an exact fraction of the
    stored numbers; ``math.inf`` when such a column has a zero, 1 when none moves.

    Examples
    --------
    >>> largest_ratio(np.array([0.75, 0.75]), np.array([0.25, 0.25]))
    Fraction(3, 1)
    >>> largest_ratio(np.array([0.5, 0.5]), np.array([0.0, 0.5]))
    inf
    """
    released = col_max > 0
    if np.any(col_min[released] <= 0):
        return math.inf
    hi, lo = col_max[released], col_min[released]
    approx = hi.astype(float) / lo.astype(float)
    near = np.flatnonzero(approx >= approx.max() * (1 - 1e-9))
    return max((Fraction(_plain(hi[i])) / Fraction(_plain(lo[i])) for i in near), default=Fraction(1))


def _plain(x: Any) -> int | float:
    """A NumPy scalar or a Python number as a Python number (exact)."""
    return x.item() if isinstance(x, np.generic) else x


def _extremes(units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return units.max(axis=0), units.min(axis=0)


def exact_ratio(matrix: PramMatrix) -> Fraction | float | None:
    """``e^epsilon`` of a matrix exactly: the larger of the stored doubles' largest column ratio
    and the integer law's the engine realises; ``None`` when the matrix is too large to recompute.

    Examples
    --------
    >>> exact_ratio(PramMatrix([[0.75, 0.25], [0.25, 0.75]]))
    Fraction(3, 1)
    """
    if matrix.size > DENSE_CATEGORIES:
        return None
    ratio = largest_ratio(*_extremes(matrix.matrix))
    law = realised_law(matrix)
    if not law.exact:
        ratio = max(ratio, largest_ratio(*_extremes(law.unit_matrix().astype(object))))
    return ratio


def composed_ratio(first: PramMatrix, second: PramMatrix) -> Fraction | float | None:
    """``e^epsilon`` of a derived variable exactly: of the law that the engine's draws through ``first``
    and then ``second`` realise (the product of their integer laws); ``None`` when it is not recomputed
    (more than :data:`COMPOSED_CATEGORIES` categories).  A manifest whose steps are not integer laws
    is not read (:func:`pramkit.privacy.law.composed_epsilon` refuses it).

    Examples
    --------
    Randomized response keeping 3/4, twice, keeps 5/8:

    >>> rr = PramMatrix.form8([0.75, 0.75], categories=["f", "m"])
    >>> composed_ratio(rr, rr)
    Fraction(5, 3)
    """
    if first.size > COMPOSED_CATEGORIES:
        return None
    product = realised_law(first).unit_matrix().astype(object) @ realised_law(second).unit_matrix().astype(object)
    return largest_ratio(*_extremes(product))


def block_ratio(matrix: PramMatrix) -> Fraction | float | None:
    """``e^epsilon`` given the block: the largest :func:`exact_ratio` of the matrix's blocks.

    Examples
    --------
    >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.75, 0.75]), PramMatrix.identity(["n/a"])])
    >>> block_ratio(m)
    Fraction(3, 1)
    """
    if matrix.blocks is None:
        return exact_ratio(matrix)
    ratios = [exact_ratio(part) for _, part in matrix.blocks]
    known = [r for r in ratios if r is not None]
    return None if len(known) < len(ratios) else max(known)


def holds(stated: float, ratio: Fraction | float) -> tuple[bool, bool]:
    """Whether ``stated >= log(ratio)`` is proved, and whether it is tight (within :data:`TIGHT_RTOL`).

    ``e^stated`` is computed at 60 digits (correctly rounded) and stepped down once: a lower bound.

    Examples
    --------
    >>> holds(math.log(3), Fraction(3)), holds(1.09, Fraction(3)), holds(2.0, Fraction(3))
    ((True, True), (False, False), (True, False))
    >>> holds(math.inf, math.inf), holds(5.0, math.inf)
    ((True, True), (False, False))
    >>> holds(1e20, Fraction(3))                     # e^1e20 is beyond Decimal's range: above any ratio
    (True, False)
    >>> holds(0.0, Fraction(1)), holds(0.0, Fraction(3, 2))    # e^0 is 1 exactly: no step down
    ((True, True), (False, False))
    """
    if math.isinf(ratio):
        return math.isinf(stated), math.isinf(stated)
    if math.isinf(stated):
        return True, False
    if stated == 0.0:  # e^0 = 1 exactly: the identity's ratio 1 is epsilon 0, proved without a rounding step
        return ratio <= 1, ratio <= 1
    power = Decimal(stated).exp(_CTX)
    # e^stated beyond Decimal's range is above any ratio of doubles (at most 2^2098): proved
    proved = power.is_infinite() or Fraction(_CTX.next_minus(power)) >= ratio
    exact = _log(ratio)
    return proved, proved and stated <= exact + TIGHT_RTOL * max(1.0, exact)


def _log(ratio: Fraction | float) -> float:
    """``log(ratio)`` at 60 digits, as the nearest double."""
    if not isinstance(ratio, Fraction):
        return math.inf
    return float(_CTX.subtract(Decimal(ratio.numerator).ln(_CTX), Decimal(ratio.denominator).ln(_CTX)))


def _epsilon_check(subject: str, field: str, value: Any, ratio: Fraction | float | None,
                   limit: int = DENSE_CATEGORIES, of: str = "the stored matrix") -> Check:
    stated = stated_epsilon(value)
    if stated is None:
        return Check("manifest", subject, field, False, f"stated {value!r} is not an epsilon")
    if ratio is None:
        return Check("manifest", subject, field, True,
                     f"stated {stated:.17g}; not recomputed (more than {limit} categories)")
    proved, tight = holds(stated, ratio)
    exact = _log(ratio)
    if not proved:
        return Check("manifest", subject, field, False,
                     f"stated {stated:.17g} is below the exact epsilon {exact:.17g} of {of}",
                     {"stated": value, "exact": _json_float(exact)})
    how = "the exact epsilon" if tight else "conservative: above the exact epsilon"
    return Check("manifest", subject, field, True, f"stated {stated:.17g} >= {how} {exact:.17g}",
                 {"stated": value, "exact": _json_float(exact)})


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else x
