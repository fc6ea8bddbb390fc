"""The result of estimating a table of original counts, and the checks of its inputs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import DataError, ParameterError
from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.identifiability import condition_number as condition_number
from pramkit.matrix import PramMatrix

if TYPE_CHECKING:
    from pramkit.estimate.singular import TableIdentifiability
    from pramkit.estimate.weighted import SurveyCovariance


class EstimationWarning(UserWarning):
    """The requested estimator could not be used as asked (e.g. the moment
    estimator on a singular matrix), or the MLE did not converge.

    Examples
    --------
    Two categories with identical rows make the matrix singular: the moment
    estimator warns and returns the MLE, whose ``note`` says why.

    >>> import warnings
    >>> from pramkit import PramMatrix
    >>> from pramkit.estimate.moment import moment_estimate
    >>> m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], ("a", "b", "c"))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     est = moment_estimate(np.array([40.0, 20.0, 40.0]), [m])
    >>> [w.category.__name__ for w in caught], est.method
    (['EstimationWarning'], 'mle')
    """


#: Estimates this far (relative to n) outside [0, n] are flagged: rounding is not.
RANGE_SLACK = 1e-9


@dataclass(frozen=True, eq=False)
class TableEstimate:
    """Estimated original counts of a (possibly one-axis) table.

    counts: estimated original counts, one per cell (sum n)
    se: their standard errors (NaN for a cell whose count is not identifiable,
        and for an estimator without standard errors, ``"norm-sub"``)
    released: the released counts the estimate was computed from
    n: number of records
    method: ``"moment"``, ``"mle"`` or ``"norm-sub"``
    variance: ``"multinomial"`` or ``"pram"`` (see :mod:`pramkit.estimate.covariance`)
    covariance: the covariance in factored form (``None`` if not identifiable)
    condition_number: 2-norm condition number of the table's transition matrix
        (the product of the variables' condition numbers; ``inf`` if singular)
    iterations: EM updates and interior-point Newton steps (MLE only; SQUAREM's
        extrapolations are not counted)
    converged: whether the MLE met its stopping rule (MLE only)
    loglik: log-likelihood of the released counts at the estimate, in nats (MLE only)
    loglik_gap: upper bound on how far the log-likelihood is below its
        maximum, in nats (MLE only; the stopping rule)
    note: why the estimator differs from the one asked for, what cannot be
        estimated, or "" if nothing needs saying
    estimator: the estimator that produced the counts (``"unbiased"``,
        ``"mle"``, ``"norm-sub"``, ``"rr-mle"``; see :data:`pramkit.estimate.ESTIMATORS`)
    identifiability: for a singular matrix, which cells are identifiable and the
        estimated totals of the groups of cells that cannot be told apart
        (:mod:`pramkit.estimate.singular`); ``None`` otherwise

    Examples
    --------
    Randomized response keeping with 3/4 (condition number 2), 70 "yes" and
    30 "no" released:

    >>> from pramkit import PramMatrix
    >>> from pramkit.estimate.moment import moment_estimate
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> est = moment_estimate(np.array([70.0, 30.0]), [m])
    >>> est.counts.tolist(), est.proportions.tolist(), est.se.round(4).tolist()
    ([90.0, 10.0], [0.9, 0.1], [9.1652, 9.1652])
    >>> est.n, est.method, est.variance, round(est.condition_number, 12)
    (100, 'moment', 'multinomial', 2.0)
    >>> est.identifiable.tolist(), est.out_of_range.tolist()
    ([True, True], [False, False])
    """

    counts: np.ndarray
    se: np.ndarray
    released: np.ndarray
    n: int | float
    method: str
    variance: str
    covariance: CountCovariance | SurveyCovariance | None
    condition_number: float
    iterations: int | None = None
    converged: bool | None = None
    loglik: float | None = None
    loglik_gap: float | None = None
    note: str = ""
    estimator: str = ""
    identifiability: TableIdentifiability | None = None

    @property
    def proportions(self) -> np.ndarray:
        """Estimated original proportions (counts / n)."""
        return self.counts / self.n

    @property
    def proportion_se(self) -> np.ndarray:
        """Standard errors of the estimated proportions (se / n)."""
        return self.se / self.n

    @property
    def identifiable(self) -> np.ndarray:
        """Per cell, whether its count is identifiable (all cells unless a matrix is singular)."""
        if self.identifiability is None:
            return np.ones(self.counts.shape, dtype=bool)
        return self.identifiability.identifiable

    @property
    def out_of_range(self) -> np.ndarray:
        """Per cell, whether the estimate lies outside ``[0, n]`` (possible for
        the unbiased estimator only)."""
        slack = RANGE_SLACK * self.n
        return (self.counts < -slack) | (self.counts > self.n + slack)

    def linear_variance(self, gradient: np.ndarray) -> float:
        """Variance of ``gradient . counts`` (delta method for a smooth function);
        NaN when it is not identifiable or the estimator has no covariance.

        Parameters
        ----------
        gradient : numpy.ndarray
            The coefficients, in the shape of ``counts``.

        Returns
        -------
        float
            The variance (records squared for counts), or NaN.

        Examples
        --------
        The difference "yes" - "no" of a binary variable has four times the
        variance of one count:

        >>> from pramkit import PramMatrix
        >>> from pramkit.estimate.moment import moment_estimate
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> est = moment_estimate(np.array([70.0, 30.0]), [m])
        >>> est.linear_variance(np.array([1.0, -1.0])), math.isclose(4 * est.se[0] ** 2, 336.0)
        (336.0, True)

        With a singular matrix only identifiable quantities have one: the
        total of two categories that cannot be told apart does, either of
        them alone does not:

        >>> import warnings
        >>> s = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], ("a", "b", "c"))
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     est = moment_estimate(np.array([40.0, 20.0, 40.0]), [s])
        >>> round(est.linear_variance(np.array([1.0, 1.0, 0.0])), 9), est.linear_variance(np.array([1.0, 0.0, 0.0]))
        (24.0, nan)
        """
        if self.covariance is not None:
            return self.covariance.variance(gradient)
        if self.identifiability is not None:
            return self.identifiability.covariance.variance(gradient)
        return math.nan


def table_inputs(
    released: ArrayLike, matrices: Sequence[PramMatrix | None]
) -> tuple[np.ndarray, list[np.ndarray | None], int | float]:
    """Validated released counts, the per-axis matrices as arrays, and n.

    Parameters
    ----------
    released : array-like, one axis per variable
        The released counts (finite, non-negative, not all zero).
    matrices : sequence of PramMatrix or None
        One per axis, ``None`` for an unperturbed variable.

    Returns
    -------
    (numpy.ndarray, list of numpy.ndarray or None, int)
        The counts as floats, the matrices' arrays, and n (the total, rounded).

    Raises
    ------
    DataError
        If the counts are not an array with one axis per matrix, are
        negative, non-finite or all zero, an axis's size differs from its
        matrix's, or a released category occurs that its matrix never releases.
    ParameterError
        If an axis is given something other than a PramMatrix or None.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> u, mats, n = table_inputs([[30, 20], [15, 35]], [m, None])
    >>> u.dtype, mats[0].tolist(), mats[1], n
    (dtype('float64'), [[0.75, 0.25], [0.25, 0.75]], None, 100)
    >>> table_inputs([30, 20, 5], [m])
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: axis 0 has 3 categories but its matrix is 2 x 2
    """
    u = np.asarray(released, dtype=float)
    if u.ndim == 0:
        raise DataError("released counts must be an array with one axis per variable")
    if len(matrices) != u.ndim:
        raise DataError(f"{len(matrices)} matrices given for a table with {u.ndim} axes (give None for an unperturbed axis)")
    mats: list[np.ndarray | None] = []
    for axis, m in enumerate(matrices):
        if m is None:
            mats.append(None)
            continue
        if not isinstance(m, PramMatrix):
            raise ParameterError(f"axis {axis}: expected a PramMatrix or None, got {type(m).__name__}")
        if m.size != u.shape[axis]:
            raise DataError(f"axis {axis} has {u.shape[axis]} categories but its matrix is {m.size} x {m.size}")
        mats.append(m.matrix)
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        raise DataError("released counts must be finite and non-negative")
    total = float(u.sum())
    if total < 0.5:  # n is a count of records: rounded, it must be at least one
        raise DataError("the released table is empty (it totals less than one record: nothing to estimate from)")
    for axis, entries in enumerate(mats):
        if entries is None:
            continue
        margin = u.sum(axis=tuple(a for a in range(u.ndim) if a != axis))
        impossible = np.flatnonzero((entries.max(axis=0) == 0) & (margin > 0))
        if impossible.size:
            raise DataError(
                f"axis {axis}: released category {int(impossible[0])} occurs {margin[impossible[0]]:g} times "
                "but the matrix never releases it; the released data do not match the manifest"
            )
    return u, mats, round(total) if math.isclose(total, round(total), rel_tol=0, abs_tol=1e-9) else float(total)


