"""The cost of PRAM to an estimate: the L2 loss and the variance inflation of the moment estimator.

* The L2 loss of Cator, Hensbergen and Rozenholc (section 3), the expected
  squared error of the moment estimator (4) summed over the cells, given the
  original counts ``U_0`` (PRAM the only randomness):

      l2(P) = (1/n^2) sum_i sum_{k,l} (P^{-1}_{lk})^2 P_{xi(i) l} - 1/n
            = (1/n^2) sum_m U_0(m) h(m) - 1/n,   h = P (row sums of (P^{-1})∘(P^{-1})).

  For independently perturbed variables ``h`` factorises, ``h(m) = prod_a h_a(m_a)``
  (``h_a = 1`` on an unperturbed axis), so the loss costs ``O(K sum_a S_a)``.
* The variance inflation of the moment estimator relative to no perturbation,
  for a file of n records sampled from p: per cell,
  ``Var_PRAM(p_hat_c) / Var_none(p_hat_c)`` with
  ``n Var_PRAM = sum_d A[c, d]^2 lam_d - p_c^2`` (``A = (M^T)^{-1}``,
  ``lam = M^T p``) and ``n Var_none = p_c (1 - p_c)``; overall, the ratio of
  the sums.  Neither depends on n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import MatrixError, ParameterError
from pramkit.estimate.axes import contract, inverses
from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.result import condition_number, table_inputs
from pramkit.matrix import PramMatrix

#: What a singular matrix's loss and variance inflation raise (a :class:`MatrixError`).
SINGULAR = "the transition matrix is singular: the moment estimator, its loss and variance do not exist"


def _axis_matrices(matrices: PramMatrix | Sequence[PramMatrix | None]) -> list[PramMatrix | None]:
    return [matrices] if isinstance(matrices, PramMatrix) else list(matrices)


def invertible(mats: Sequence[np.ndarray | None]) -> tuple[np.ndarray | None, ...]:
    """The matrices' inverses, after checking (one SVD each) that none is numerically singular.

    Parameters
    ----------
    mats : sequence of numpy.ndarray or None
        One square matrix per axis, ``None`` for an unperturbed axis.

    Returns
    -------
    tuple of numpy.ndarray or None
        The inverses (:func:`pramkit.estimate.axes.inverses`).

    Raises
    ------
    MatrixError
        If a matrix is singular (:func:`pramkit.estimate.result.condition_number` is infinite).

    Examples
    --------
    >>> invertible([np.array([[0.75, 0.25], [0.25, 0.75]]), None])[0].round(12).tolist()
    [[1.5, -0.5], [-0.5, 1.5]]
    """
    if math.isinf(condition_number(mats)):
        raise MatrixError(SINGULAR)
    return inverses(mats)


def l2_loss(counts: ArrayLike, matrices: PramMatrix | Sequence[PramMatrix | None]) -> float:
    """Cator's L2 loss l2(P): expected sum over cells of the squared error of the
    estimated proportions, given the original counts (a table, one axis per
    variable; ``None`` for an unperturbed axis).  Units: proportion squared.

    Cator, Hensbergen and Rozenholc, section 3 (module docstring):
    ``l2(P) = (1/n^2) sum_m U_0(m) h(m) - 1/n`` with ``h = P (row sums of
    (P^{-1})∘(P^{-1}))``, factorised over the axes.

    Parameters
    ----------
    counts : array-like, one axis per variable
        The original counts ``U_0`` (non-negative; n is their total).
    matrices : PramMatrix, or a sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable (a single
        matrix for a 1-D table).

    Returns
    -------
    float
        The expected squared error of the moment estimator (4), summed over cells.

    Raises
    ------
    MatrixError
        If a matrix is singular (the estimator does not exist).
    ParameterError
        If an axis is given something other than a PramMatrix or None.
    DataError
        If the counts are invalid or do not match the matrices.

    Examples
    --------
    Randomized response keeping with 3/4 on two categories has
    ``P^{-1} = [[1.5, -0.5], [-0.5, 1.5]]``, so ``h = 2.5`` for every
    category and ``l2 = 2.5/n - 1/n = 1.5/n`` whatever the counts:

    >>> from pramkit import PramMatrix
    >>> rr = PramMatrix([[0.75, 0.25], [0.25, 0.75]])
    >>> math.isclose(l2_loss([90, 10], rr), 1.5 / 100), math.isclose(l2_loss([50, 50], rr), 1.5 / 100)
    (True, True)

    On a table, an unperturbed axis adds no loss; perturbing both axes
    multiplies the ``h`` (``2.5^2 = 6.25``):

    >>> table = [[40, 10], [20, 30]]
    >>> math.isclose(l2_loss(table, [rr, None]), 1.5 / 100), math.isclose(l2_loss(table, [rr, rr]), 5.25 / 100)
    (True, True)
    """
    u0, mats, n = table_inputs(counts, _axis_matrices(matrices))
    return l2_loss_of(u0, mats, invertible(mats), n)


def l2_loss_of(u0: np.ndarray, mats: Sequence[np.ndarray | None], factors: Sequence[np.ndarray | None],
               n: int | float) -> float:
    """:func:`l2_loss` from validated inputs and the matrices' inverses, computed once by the caller.

    Parameters
    ----------
    u0 : numpy.ndarray
        The original counts, one axis per variable (from :func:`pramkit.estimate.result.table_inputs`).
    mats : sequence of numpy.ndarray or None
        The matrices as arrays, ``None`` for an unperturbed axis.
    factors : sequence of numpy.ndarray or None
        Their inverses (:func:`pramkit.estimate.axes.inverses`).
    n : int or float
        The counts' total.

    Returns
    -------
    float
        Cator's l2(P), as :func:`l2_loss` returns it.

    Examples
    --------
    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> math.isclose(l2_loss_of(np.array([90.0, 10.0]), [rr], [np.linalg.inv(rr)], 100), 1.5 / 100)
    True
    """
    h = [None if m is None or w is None else (m @ (w * w).sum(axis=1))[:, None] for m, w in zip(mats, factors)]
    return float(contract(u0, h).sum()) / n**2 - 1.0 / n


@dataclass(frozen=True)
class VarianceInflation:
    """Variance of the moment estimator relative to no perturbation.

    per_cell: ``Var_PRAM / Var_none`` for each cell (NaN where p_c is 0 or 1)
    overall: ratio of the summed variances over all cells

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> vi = variance_inflation([0.9, 0.1], PramMatrix([[0.75, 0.25], [0.25, 0.75]]))
    >>> vi.per_cell.round(4).tolist(), round(vi.overall, 4)
    ([9.3333, 9.3333], 9.3333)
    """

    per_cell: np.ndarray
    overall: float


def variance_inflation(p: ArrayLike, matrices: PramMatrix | Sequence[PramMatrix | None]) -> VarianceInflation:
    """Variance inflation of the moment estimator of a table with cell probabilities ``p``.

    Per cell ``Var_PRAM(p_hat_c) / Var_none(p_hat_c)`` with
    ``n Var_PRAM = sum_d A[c, d]^2 lam_d - p_c^2`` (``A = (M^T)^{-1}``,
    ``lam = M^T p``) and ``n Var_none = p_c (1 - p_c)`` (module docstring);
    neither depends on n.

    Parameters
    ----------
    p : array-like, one axis per variable
        Cell probabilities (or counts: they are normalised).
    matrices : PramMatrix, or a sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable.

    Returns
    -------
    VarianceInflation
        The ratio per cell and overall.

    Raises
    ------
    MatrixError
        If a matrix is singular.
    ParameterError
        If p puts all its mass on one cell.
    DataError
        If p is invalid or does not match the matrices.

    Examples
    --------
    For two categories and randomized response keeping with probability q,
    ``Var_PRAM = lam (1 - lam) / (2q - 1)^2``; at ``p = (1/2, 1/2)`` and
    ``q = 3/4`` the variance is four times that without perturbation:

    >>> from pramkit import PramMatrix
    >>> rr = PramMatrix([[0.75, 0.25], [0.25, 0.75]])
    >>> variance_inflation([0.5, 0.5], rr).overall
    4.0
    >>> vi = variance_inflation([0.9, 0.1], rr)         # lam = (0.7, 0.3)
    >>> math.isclose(vi.overall, 0.7 * 0.3 / 0.25 / (0.9 * 0.1))
    True
    """
    return inflation_of(*moment_variances(p, matrices))


def inflation_of(pram: np.ndarray, none: np.ndarray) -> VarianceInflation:
    """The variance inflation from the variances with PRAM and without (:func:`moment_variances`).

    Parameters
    ----------
    pram, none : numpy.ndarray
        ``n Var_PRAM`` and ``n Var_none`` of every cell.

    Returns
    -------
    VarianceInflation
        Their ratio per cell (NaN where ``none`` is 0) and the ratio of their sums.

    Raises
    ------
    ParameterError
        If every ``none`` is 0 (p puts all its mass on one cell).

    Examples
    --------
    >>> inflation_of(np.array([1.0, 1.0]), np.array([0.25, 0.25])).overall
    4.0
    """
    if none.sum() <= 0:
        raise ParameterError("p puts all its mass on one cell: "
                             "without perturbation there is no variance to compare with")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_cell = np.where(none > 0, pram / none, np.nan)
    return VarianceInflation(per_cell, float(pram.sum() / none.sum()))


def moment_variances(p: ArrayLike, matrices: PramMatrix | Sequence[PramMatrix | None]) -> tuple[np.ndarray, np.ndarray]:
    """``n Var`` of each cell's share estimated by the moment estimator, with PRAM and without.

    A file of n records drawn from ``p`` (multinomial), released through the matrices:
    ``n Var_PRAM(p_hat_c) = sum_d A[c, d]^2 lam_d - p_c^2`` (``A = (M^T)^{-1}``, ``lam = M^T p``),
    and ``n Var_none(p_hat_c) = p_c (1 - p_c)`` (module docstring).  Their difference
    ``sum_d A[c, d]^2 lam_d - p_c`` is what PRAM adds to a fixed file's estimate.

    Parameters
    ----------
    p : array-like, one axis per variable
        Cell probabilities (or counts: they are normalised).
    matrices : PramMatrix, or a sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n Var_PRAM, n Var_none)``, each in the shape of ``p``; divide by n and take the
        root for the standard errors at n records.

    Raises
    ------
    MatrixError
        If a matrix is singular.
    DataError
        If p is invalid or does not match the matrices.

    Examples
    --------
    Randomized response keeping with 3/4 at ``p = (1/2, 1/2)``: ``lam = p`` and
    ``A = [[1.5, -0.5], [-0.5, 1.5]]``, so ``n Var_PRAM = 2.5 / 2 - 1/4 = 1``:

    >>> from pramkit import PramMatrix
    >>> pram, none = moment_variances([0.5, 0.5], PramMatrix([[0.75, 0.25], [0.25, 0.75]]))
    >>> pram.tolist(), none.tolist()
    ([1.0, 1.0], [0.25, 0.25])
    """
    pv, mats, _ = table_inputs(p, _axis_matrices(matrices))
    return moment_variances_of(pv, mats, invertible(mats))


def moment_variances_of(p: np.ndarray, mats: Sequence[np.ndarray | None],
                        factors: tuple[np.ndarray | None, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`moment_variances` from validated inputs and the matrices' inverses, computed once by the caller.

    Parameters
    ----------
    p : numpy.ndarray
        Cell probabilities or counts, one axis per variable (normalised here).
    mats : sequence of numpy.ndarray or None
        The matrices as arrays, ``None`` for an unperturbed axis.
    factors : tuple of numpy.ndarray or None
        Their inverses (:func:`pramkit.estimate.axes.inverses`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(n Var_PRAM, n Var_none)``, as :func:`moment_variances` returns them.

    Examples
    --------
    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> pram, none = moment_variances_of(np.array([0.5, 0.5]), [rr], (np.linalg.inv(rr),))
    >>> pram.round(12).tolist(), none.tolist()
    ([1.0, 1.0], [0.25, 0.25])
    """
    pv = p / p.sum()
    lam = contract(pv, mats)
    pram = CountCovariance(factors, lam, pv, 1, "multinomial").cell_variances()
    none = CountCovariance((None,) * pv.ndim, pv, pv, 1, "multinomial").cell_variances()
    return pram, none
