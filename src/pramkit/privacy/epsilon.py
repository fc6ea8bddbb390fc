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
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike


def matrix_epsilon(matrix: ArrayLike) -> float:
    """Exact epsilon of a row-stochastic matrix (rows: original categories).

    Returns ``math.inf`` when a column mixes zeros and positive entries and
    ``0.0`` for a matrix whose columns are constant (no information released).
    Computed in log space, so tiny entries do not overflow the ratio.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.size == 0:
        raise ValueError("matrix_epsilon needs a non-empty 2-D array")
    col_max = m.max(axis=0)
    col_min = m.min(axis=0)
    released = col_max > 0
    if np.any(col_min[released] == 0):
        return math.inf
    if not np.any(released):
        return 0.0
    gap = np.log(col_max[released]) - np.log(col_min[released])
    return float(max(gap.max(), 0.0))


def record_epsilon(epsilons: "list[float] | tuple[float, ...]") -> float:
    """Epsilon of a record whose variables are perturbed independently.

    Sequential composition: the record's epsilon is the sum of the variables'
    epsilons (infinite if any is infinite).
    """
    return float(math.fsum(epsilons)) if all(math.isfinite(e) for e in epsilons) else math.inf
