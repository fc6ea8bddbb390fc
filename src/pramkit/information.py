"""Information measures of a distribution p pushed through a PRAM matrix M.

Mutual information is in nats (natural logarithms) throughout pramkit; divide
by ``log(2)`` for bits.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import xlogy


def entropy(p: ArrayLike) -> float:
    """Shannon entropy H(p) in nats (``0 log 0 = 0``)."""
    pv = np.asarray(p, dtype=float)
    return float(-xlogy(pv, pv).sum())


def mutual_information(p: ArrayLike, matrix: ArrayLike) -> float:
    """I(X; Z) in nats for X ~ p and Z | X = k ~ M[k, :]; O(S^2).

    I(X; Z) = sum_k p_k sum_j M[k, j] log(M[k, j] / r_j),  r = p M.
    """
    pv = np.asarray(p, dtype=float)
    m = np.asarray(matrix, dtype=float)
    r = pv @ m
    joint = pv[:, None] * m
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(joint > 0, m / np.where(r > 0, r, 1.0)[None, :], 1.0)
    return float(max(xlogy(joint, ratio).sum(), 0.0))
