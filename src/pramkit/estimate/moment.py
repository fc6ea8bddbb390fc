"""The unbiased moment estimator of original counts from released counts.

One perturbed variable (Ruiz and Domingo-Ferrer, appendix A.1): the released
proportions satisfy ``lam = M^T p``, so ``p_hat = (M^T)^{-1} lam_hat`` is
unbiased.  A table crossing perturbed variables x with unperturbed ones y
(Cator, Hensbergen and Rozenholc, section 3, estimator (4)):

    mu_hat(k; y) = (1/n) sum_l (P^{-1})_{lk} U(l; y),

that is, the inverse is applied along the perturbed axes and the identity
along the others.  Several independently perturbed variables have the
transition matrix ``M_1 ⊗ M_2 ⊗ ...``, whose inverse is applied axis by axis
(:mod:`pramkit.estimate.axes`); no ``K x K`` matrix is formed.

When the matrix is singular or badly conditioned the estimator does not exist
or is useless; :func:`moment_estimate` then warns and returns the
maximum-likelihood estimate (:mod:`pramkit.estimate.mle`) instead, which for
a singular matrix estimates the identifiable quantities only
(:mod:`pramkit.estimate.singular`).

The estimator is unbiased, not constrained: an estimated count can be
negative or exceed n (``TableEstimate.out_of_range``); the consistent
estimators of :mod:`pramkit.estimate.consistent` and the MLE are not.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.estimate.axes import contract, inverses
from pramkit.estimate.covariance import CountCovariance, VarianceKind, check_variance_kind
from pramkit.estimate.identifiability import MAX_CONDITION
from pramkit.estimate.mle import mle_estimate
from pramkit.estimate.result import EstimationWarning, TableEstimate, condition_number, table_inputs
from pramkit.matrix import PramMatrix

__all__ = ["MAX_CONDITION", "moment_estimate"]


def moment_estimate(
    released: ArrayLike,
    matrices: Sequence[PramMatrix | None],
    *,
    variance: VarianceKind = "multinomial",
    max_condition: float = MAX_CONDITION,
) -> TableEstimate:
    """Unbiased estimate of the original counts of a table, with standard errors.

    ``mu_hat(k; y) = (1/n) sum_l (P^{-1})_{lk} U(l; y)`` (Cator, Hensbergen
    and Rozenholc, estimator (4)): the inverse of each perturbed variable's
    matrix applied along its axis, the identity along the others.

    Parameters
    ----------
    released : array-like, one axis per variable
        Released counts ``U`` (a 1-D array for one variable).
    matrices : sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable.
    variance : {"multinomial", "pram"}, default "multinomial"
        ``"multinomial"`` (records sampled from a population; the covariance
        ``n (diag(lam) - lam lam^T)`` of the released counts pushed through
        the inverse) or ``"pram"`` (the original file fixed; PRAM the only
        randomness).  See :mod:`pramkit.estimate.covariance`.
    max_condition : float, default MAX_CONDITION
        Above this condition number (or for a singular matrix) an
        :class:`EstimationWarning` is issued and the MLE is returned, its
        ``note`` saying why (and, for a singular matrix, what cannot be estimated).

    Returns
    -------
    TableEstimate
        Counts summing to n (possibly negative or above n: ``out_of_range``),
        standard errors and the covariance; method ``"moment"``, estimator
        ``"unbiased"`` (or the MLE's result after the warning).

    Raises
    ------
    ParameterError
        For an unknown ``variance``, or an axis given something other than a
        PramMatrix or None.
    DataError
        If the released counts are invalid or do not match the matrices.

    Warns
    -----
    EstimationWarning
        When the matrix is singular or its condition number exceeds
        ``max_condition`` (the MLE is returned).

    Examples
    --------
    Keep the answer with probability 3/4 (S = 2): ``p_hat = (lam_hat - 1/4) / (1/2)``,
    so 90 "yes" of 100 released give 130 "yes" and -30 "no":

    >>> import numpy as np
    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> est = moment_estimate(np.array([90.0, 10.0]), [m])
    >>> est.estimator, est.counts.round(6).tolist(), est.out_of_range.tolist()
    ('unbiased', [130.0, -30.0], [True, True])

    The estimator is unbiased: applied to the expected released counts
    ``n M^T p`` it returns ``n p`` exactly, here for a table whose second
    variable is not perturbed:

    >>> p = np.array([[0.4, 0.1], [0.2, 0.3]])
    >>> expected = 100 * np.einsum("kj,ky->jy", m.matrix, p)
    >>> np.allclose(moment_estimate(expected, [m, None]).counts, 100 * p)
    True

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 3, estimator (4).
    Ruiz and Domingo-Ferrer, appendix A.1.
    """
    check_variance_kind(variance)
    u, mats, n = table_inputs(released, matrices)
    cond = condition_number(mats)
    if not cond <= max_condition:
        what = "singular" if math.isinf(cond) else (
            f"badly conditioned (condition number {cond:.3g} > {max_condition:g})"
        )
        note = (f"the transition matrix is {what}, so the moment estimator (M^T)^-1 lambda "
                "cannot be used; the maximum-likelihood estimate (EM) is given instead")
        warnings.warn(note, EstimationWarning, stacklevel=2)
        mle = mle_estimate(released, matrices, variance=variance)
        return dataclasses.replace(mle, note=note + (f". {mle.note}" if mle.note else ""))
    factors = inverses(mats)
    t = contract(u, factors)
    cov = CountCovariance(factors, u, t, n, variance)
    return TableEstimate(
        counts=t, se=np.sqrt(cov.cell_variances()), released=u, n=n, method="moment",
        variance=variance, covariance=cov, condition_number=cond, estimator="unbiased",
    )
