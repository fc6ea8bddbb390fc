"""The result of estimating a table of original counts, and the checks of its inputs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import DataError, PramkitError
from pramkit.estimate.covariance import CountCovariance
from pramkit.matrix import PramMatrix


class EstimationWarning(UserWarning):
    """The requested estimator could not be used as asked (e.g. the moment
    estimator on a singular matrix), or the MLE did not converge."""


@dataclass(frozen=True, eq=False)
class TableEstimate:
    """Estimated original counts of a (possibly one-axis) table.

    counts: estimated original counts, one per cell (sum n)
    se: their standard errors (NaN when the counts are not identifiable)
    released: the released counts the estimate was computed from
    n: number of records
    method: ``"moment"`` or ``"mle"``
    variance: ``"multinomial"`` or ``"pram"`` (see :mod:`pramkit.estimate.covariance`)
    covariance: the covariance in factored form (``None`` if not identifiable)
    condition_number: 2-norm condition number of the table's transition matrix
        (the product of the variables' condition numbers; ``inf`` if singular)
    iterations: EM updates (MLE only; extrapolation steps are not counted)
    converged: whether EM met its stopping rule (MLE only)
    loglik: log-likelihood of the released counts at the estimate, in nats (MLE only)
    loglik_gap: upper bound on how far the log-likelihood is below its
        maximum, in nats (MLE only; the stopping rule)
    note: why the estimator differs from the one asked for, or "" if it does not
    """

    counts: np.ndarray
    se: np.ndarray
    released: np.ndarray
    n: int
    method: str
    variance: str
    covariance: CountCovariance | None
    condition_number: float
    iterations: int | None = None
    converged: bool | None = None
    loglik: float | None = None
    loglik_gap: float | None = None
    note: str = ""

    @property
    def proportions(self) -> np.ndarray:
        """Estimated original proportions (counts / n)."""
        return self.counts / self.n

    @property
    def proportion_se(self) -> np.ndarray:
        return self.se / self.n


def table_inputs(
    released: ArrayLike, matrices: Sequence[PramMatrix | None]
) -> tuple[np.ndarray, list[np.ndarray | None], int]:
    """Validated released counts, the per-axis matrices as arrays, and n."""
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
            raise PramkitError(f"axis {axis}: expected a PramMatrix or None, got {type(m).__name__}")
        if m.size != u.shape[axis]:
            raise DataError(f"axis {axis} has {u.shape[axis]} categories but its matrix is {m.size} x {m.size}")
        mats.append(m.matrix)
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        raise DataError("released counts must be finite and non-negative")
    total = float(u.sum())
    if total <= 0:
        raise DataError("the released table is empty (no records to estimate from)")
    for axis, m in enumerate(mats):
        if m is None:
            continue
        margin = u.sum(axis=tuple(a for a in range(u.ndim) if a != axis))
        impossible = np.flatnonzero((m.max(axis=0) == 0) & (margin > 0))
        if impossible.size:
            raise DataError(
                f"axis {axis}: released category {int(impossible[0])} occurs {margin[impossible[0]]:g} times "
                "but the matrix never releases it; the released data do not match the manifest"
            )
    return u, mats, int(round(total))


def condition_number(mats: Sequence[np.ndarray | None]) -> float:
    """2-norm condition number of ``M_1 ⊗ M_2 ⊗ ...`` (singular values multiply)."""
    cond = 1.0
    for m in mats:
        if m is None:
            continue
        s = np.linalg.svd(m, compute_uv=False)
        if s[-1] <= s[0] * np.finfo(float).eps:
            return math.inf
        cond *= float(s[0] / s[-1])
    return cond
