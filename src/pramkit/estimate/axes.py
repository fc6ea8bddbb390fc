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

from collections.abc import Sequence

import numpy as np

#: One factor per axis: a square matrix, or ``None`` for the identity.
Factors = Sequence[np.ndarray | None]


def contract(table: np.ndarray, factors: Factors) -> np.ndarray:
    """``out[k_1, k_2, ...] = sum_l table[l_1, l_2, ...] * prod_a B_a[l_a, k_a]``.

    In vector form ``vec(out) = (B_1 ⊗ B_2 ⊗ ...)^T vec(table)``; a ``None``
    factor leaves its axis unchanged.  With the transition matrices as
    factors this is the expected released table ``lam = M^T p``; with their
    inverses, the moment estimator (4) of Cator, Hensbergen and Rozenholc.

    Parameters
    ----------
    table : numpy.ndarray
        A table with one axis per factor.
    factors : sequence of numpy.ndarray or None
        Per axis a square matrix of the axis's size, or ``None`` (identity).

    Returns
    -------
    numpy.ndarray
        A float table of the same shape (for square factors).

    Raises
    ------
    ValueError
        If the number of factors is not the number of axes.

    Examples
    --------
    Expected released counts of a 2 x 2 table whose first variable is
    perturbed (the second is released as is), and the same with both
    perturbed, which is the Kronecker product applied to the flattened table:

    >>> t = np.array([[40.0, 10.0], [20.0, 30.0]])
    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> contract(t, [rr, None]).tolist()
    [[35.0, 15.0], [25.0, 25.0]]
    >>> both = contract(t, [rr, rr])
    >>> np.allclose(both.ravel(), np.kron(rr, rr).T @ t.ravel())
    True

    The inverses undo it (the unbiased estimator recovers the table):

    >>> np.allclose(contract(both, inverses([rr, rr])), t)
    True
    """
    out = np.asarray(table, dtype=float)
    if len(factors) != out.ndim:
        raise ValueError(f"{len(factors)} factors for a table with {out.ndim} axes")
    for axis, b in enumerate(factors):
        if b is None:
            continue
        # The axis moved last, multiplied, moved back: np.moveaxis's transposes, their orders built here (EM
        # contracts twice an update, on small tables, where moveaxis's checks cost more than the product).
        # The same products in the same order as ever: keyed draws from an estimate (resample) depend on its bits.
        last = [i for i in range(out.ndim) if i != axis] + [axis]
        back = [*range(axis), out.ndim - 1, *range(axis, out.ndim - 1)]
        out = (out.transpose(last) @ b).transpose(back)
    return out


def transposed(factors: Factors) -> list[np.ndarray | None]:
    """The factors of the transposed Kronecker product.

    ``(B_1 ⊗ B_2)^T = B_1^T ⊗ B_2^T``, so ``contract(g, transposed(W))``
    computes ``(⊗ W_a) vec(g)``, e.g. ``v = A^T g`` of
    :mod:`pramkit.estimate.covariance`.

    Parameters
    ----------
    factors : sequence of numpy.ndarray or None
        One square matrix (or ``None``, the identity) per axis.

    Returns
    -------
    list of numpy.ndarray or None
        The transposes, ``None`` kept.

    Examples
    --------
    >>> b = np.array([[0.9, 0.1], [0.3, 0.7]])
    >>> [None if f is None else f.tolist() for f in transposed([b, None])]
    [[[0.9, 0.3], [0.1, 0.7]], None]
    >>> t = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> np.allclose(contract(t, transposed([b, b])).ravel(), np.kron(b, b) @ t.ravel())
    True
    """
    return [None if b is None else b.T for b in factors]


def squared(factors: Factors) -> list[np.ndarray | None]:
    """Element-wise squares: ``(B_1 ⊗ B_2)∘(B_1 ⊗ B_2) = (B_1∘B_1) ⊗ (B_2∘B_2)``.

    Used for the cell variances ``sum_d A[c, d]^2 u_d`` without forming A.

    Parameters
    ----------
    factors : sequence of numpy.ndarray or None
        One matrix (or ``None``, the identity) per axis.

    Returns
    -------
    list of numpy.ndarray or None
        The element-wise squares, ``None`` kept (the identity is its own square).

    Examples
    --------
    >>> w = np.array([[1.5, -0.5], [-0.5, 1.5]])
    >>> squared([w, None])[0].tolist(), squared([w, None])[1] is None
    ([[2.25, 0.25], [0.25, 2.25]], True)
    >>> np.allclose(np.kron(*squared([w, w])), np.kron(w, w) ** 2)
    True
    """
    return [None if b is None else b * b for b in factors]


def inverses(factors: Factors) -> tuple[np.ndarray | None, ...]:
    """``B_a^{-1}`` per axis: the factors of ``(B_1 ⊗ B_2 ⊗ ...)^{-1}``.

    Parameters
    ----------
    factors : sequence of numpy.ndarray or None
        One invertible square matrix (or ``None``, the identity) per axis.

    Returns
    -------
    tuple of numpy.ndarray or None
        The inverses, ``None`` kept.

    Raises
    ------
    numpy.linalg.LinAlgError
        If a factor is exactly singular (check the condition number first:
        :func:`pramkit.estimate.result.condition_number`).

    Examples
    --------
    Randomized response keeping with 3/4, ``M = I/2 + J/4`` (J all ones), has ``M^{-1} = 2 I - J/2``:

    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> w, none = inverses([rr, None])
    >>> w.round(12).tolist(), none
    ([[1.5, -0.5], [-0.5, 1.5]], None)
    >>> np.allclose(w @ rr, np.eye(2)) and np.allclose(w.sum(axis=1), 1.0)     # W 1 = 1
    True
    """
    return tuple(None if b is None else np.linalg.inv(b) for b in factors)
