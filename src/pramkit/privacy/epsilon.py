"""Epsilon-differential privacy of a misclassification matrix.

Shlomo and Skinner (2012), section 4: a misclassification mechanism with
``M[k, j] = P(Z = j | X = k)`` is epsilon-differentially private (per record)
for

    epsilon(M) = max_j max_{k1, k2} log(M[k1, j] / M[k2, j]),

the largest log-ratio within a column of M.  A column that mixes zeros and
positive entries makes epsilon infinite (one released value rules an original
category out); a column of zeros is a value that is never released and
contributes nothing.  Hence M is epsilon-DP for a finite epsilon if and only
if it has no zero entry in any column it can release.

Every epsilon stated here is rounded outward (:mod:`pramkit.privacy.exact`):
it is never below the exact epsilon of the stored doubles, and a sum over
variables is never below the exact sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.privacy.exact import column_epsilon, form8_column_extremes, sum_up

#: Relative share of each variable's budget left for the engine's integer units: the law the engine
#: realises can exceed a design's epsilon by a relative 1e-15 or so where a matrix's doubles do not
#: add up to 1 exactly (:func:`pramkit.privacy.law.within_realised_budget` keeps it within half of
#: this), and the manifest states the larger (:func:`pramkit.ledger.split_within` leaves this share).
REALISED_SLACK = 1e-12


def matrix_epsilon(matrix: ArrayLike) -> float:
    """Epsilon of a row-stochastic matrix (rows: original categories), rounded outward.

    The smallest double not below the exact epsilon of the stored entries
    (:func:`pramkit.privacy.exact.column_epsilon`): ``math.inf`` when a column
    mixes zeros and positive entries, ``0.0`` when every column is constant
    (no information released).  O(S^2) array operations and one logarithm in
    high precision.

    Shlomo and Skinner (2012), section 4:
    ``epsilon(M) = max_j max_{k1, k2} log(M[k1, j] / M[k2, j])``.

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        ``M[k, j] = P(Z = j | X = k)``.

    Returns
    -------
    float
        The epsilon, rounded outward; ``inf`` or ``0.0`` as above.

    Raises
    ------
    ValueError
        If the matrix is not a non-empty 2-D array.

    Examples
    --------
    Randomized response keeping with probability 3/4 on two categories is
    ``log 3``-DP; a zero among positive entries of a column rules a category
    out (epsilon infinite), while a column of zeros is never released:

    >>> math.isclose(matrix_epsilon([[0.75, 0.25], [0.25, 0.75]]), math.log(3))
    True
    >>> matrix_epsilon([[1.0, 0.0], [0.5, 0.5]])
    inf
    >>> matrix_epsilon([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    0.0
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.size == 0:
        raise ValueError("matrix_epsilon needs a non-empty 2-D array")
    return column_epsilon(m.max(axis=0), m.min(axis=0))


def form8_matrix_epsilon(q: ArrayLike, w: ArrayLike) -> float:
    """Epsilon of the form (8) matrix with diagonal q and off-diagonal entries w, in O(S).

    Row k of the matrix is ``q[k]`` on the diagonal and ``w[k]`` elsewhere, so
    column j holds ``q[j]`` and ``w[k]`` for every ``k != j``; its extremes
    (:func:`pramkit.privacy.exact.form8_column_extremes`) come from ``q[j]``
    and the two largest and two smallest w.  The result is the same double as
    :func:`matrix_epsilon` of the dense matrix: the smallest double not below
    the exact epsilon of the stored entries
    (:func:`pramkit.privacy.exact.column_epsilon`).

    Parameters
    ----------
    q, w : array-like, shape (S,)
        Non-negative diagonal and off-diagonal entries.

    Returns
    -------
    float
        The epsilon, rounded outward; ``inf`` when a column mixes zeros and
        positive entries.

    Examples
    --------
    >>> form8_matrix_epsilon([0.75, 0.75], [0.25, 0.25]) == matrix_epsilon([[0.75, 0.25], [0.25, 0.75]])
    True
    >>> form8_matrix_epsilon([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    inf
    """
    return column_epsilon(*form8_column_extremes(q, w))


def record_epsilon(epsilons: Sequence[float]) -> float:
    """Epsilon of a record whose variables are perturbed independently.

    Sequential composition: the record's epsilon is the sum of the variables'
    epsilons (infinite if any is infinite), rounded upward
    (:func:`pramkit.privacy.exact.sum_up`), so it is never below the exact sum.

    Parameters
    ----------
    epsilons : sequence of float
        The epsilon of each variable's matrix (:func:`matrix_epsilon`).

    Returns
    -------
    float
        The record's epsilon (``0.0`` for no variable, ``inf`` if any is infinite).

    Examples
    --------
    Two variables each perturbed by ``log 3``-DP randomized response cost
    ``log 9`` per record:

    >>> math.isclose(record_epsilon([math.log(3), math.log(3)]), math.log(9))
    True
    >>> record_epsilon([0.1, 0.2]) >= 0.1 + 0.2        # rounded upward, never below
    True
    >>> record_epsilon([1.0, math.inf])
    inf
    """
    return sum_up(epsilons) if all(math.isfinite(e) for e in epsilons) else math.inf
