"""One rule per parameter: the checks of the numbers a user gives pramkit.

Every design, measure and command checks its parameters here, so that one
parameter has one rule and one wording of its error, a
:class:`pramkit.errors.ParameterError` (a ``ValueError`` too) whose message
names the parameter and says what to change:

* :func:`positive`: a finite number above 0 (budgets, scales);
* :func:`epsilon`: a privacy budget in nats (positive, finite, at most a given maximum);
* :func:`probabilities`: a probability vector (finite, non-negative, summing to 1);
* :func:`probability`: a probability strictly between 0 and 1 (alpha of condition C1).

Missing columns are :func:`pramkit.io.require_columns` (a data error, not a parameter's).

Examples
--------
>>> epsilon(0.5), positive(3, "rows")
(0.5, 3.0)
>>> epsilon(float("nan"))
Traceback (most recent call last):
...
pramkit.errors.ParameterError: epsilon must be a positive finite number, got nan
>>> probabilities([0.25, 0.75]).tolist()
[0.25, 0.75]
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError

#: How far the sum of a probability vector may miss 1.
PROBABILITY_SUM_TOL = 1e-9


def positive(value: Any, name: str) -> float:
    """``value`` as a float after checking that it is a finite number above 0 (not a bool).

    >>> positive(2, "k")
    2.0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def epsilon(value: Any, name: str = "epsilon", *, maximum: float | None = None) -> float:
    """A privacy budget in nats: :func:`positive`, and at most ``maximum`` when given.

    >>> epsilon(1, maximum=700.0)
    1.0
    """
    e = positive(value, name)
    if maximum is not None and e > maximum:
        raise ParameterError(f"{name} = {e:g} is too large (at most {maximum:g}); beyond a few dozen the "
                             "optimal matrix is the identity anyway")
    return e


def probabilities(p: ArrayLike, *, name: str = "p") -> np.ndarray:
    """``p`` as a float array after checking that it is a probability vector
    (1-D, non-empty, finite, non-negative, summing to 1 within :data:`PROBABILITY_SUM_TOL`).

    >>> probabilities([1, 0]).tolist()
    [1.0, 0.0]
    """
    try:
        pv = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a list of numbers, got {p!r}") from None
    if pv.ndim != 1 or pv.size == 0:
        raise ParameterError(f"{name} must be a non-empty 1-D list of probabilities, got shape {pv.shape}")
    if not np.all(np.isfinite(pv)):
        raise ParameterError(f"{name} contains {pv[~np.isfinite(pv)][0]!r}; probabilities must be finite")
    if np.any(pv < 0):
        raise ParameterError(f"{name} contains a negative probability ({pv[pv < 0][0]!r})")
    total = float(pv.sum())
    if abs(total - 1.0) > PROBABILITY_SUM_TOL:
        raise ParameterError(f"{name} sums to {total!r}, not 1; pass probabilities (or normalise counts first)")
    return pv


def probability(value: Any, name: str) -> float:
    """A probability strictly between 0 and 1 (the posterior bound alpha of condition C1).

    >>> probability(0.1, "alpha")
    0.1
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not (math.isfinite(value) and 0 < value < 1):
        raise ParameterError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return float(value)
