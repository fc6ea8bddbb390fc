"""Per-axis linear maps on contingency tables (Kronecker structure without the Kronecker product).

When the variables of a table are perturbed independently, the transition
matrix of the cross-classification is ``M_1 ⊗ M_2 ⊗ ...`` (identity for an
unperturbed variable), and so is every matrix derived from it axis by axis:
its inverse, the element-wise square of its inverse.  Applying such a
``K x K`` matrix to a table of ``K = S_1 S_2 ...`` cells costs
``O(K (S_1 + S_2 + ...))`` when it is done one axis at a time, and needs no
``K x K`` array.  Cator, Hensbergen and Rozenholc, section 3, estimator (4):
an unperturbed variable y contributes the identity.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: One factor per axis: a square matrix, or ``None`` for the identity.
Factors = Sequence[np.ndarray | None]


def contract(table: np.ndarray, factors: Factors) -> np.ndarray:
    """``out[k_1, k_2, ...] = sum_l table[l_1, l_2, ...] * prod_a B_a[l_a, k_a]``.

    In vector form ``vec(out) = (B_1 ⊗ B_2 ⊗ ...)^T vec(table)``; a ``None``
    factor leaves its axis unchanged.
    """
    out = np.asarray(table, dtype=float)
    if len(factors) != out.ndim:
        raise ValueError(f"{len(factors)} factors for a table with {out.ndim} axes")
    for axis, b in enumerate(factors):
        if b is None:
            continue
        out = np.moveaxis(np.moveaxis(out, axis, -1) @ b, -1, axis)
    return out


def transposed(factors: Factors) -> list[np.ndarray | None]:
    """The factors of the transposed Kronecker product."""
    return [None if b is None else b.T for b in factors]


def squared(factors: Factors) -> list[np.ndarray | None]:
    """Element-wise squares: ``(B_1 ⊗ B_2)∘(B_1 ⊗ B_2) = (B_1∘B_1) ⊗ (B_2∘B_2)``."""
    return [None if b is None else b * b for b in factors]


def inverses(factors: Factors) -> tuple[np.ndarray | None, ...]:
    """``B_a^{-1}`` per axis: the factors of ``(B_1 ⊗ B_2 ⊗ ...)^{-1}``."""
    return tuple(None if b is None else np.linalg.inv(b) for b in factors)
