"""The estimators of a table of original counts, by name.

======== ============================================================== =========================
name     what                                                           range
======== ============================================================== =========================
unbiased ``(M^T)^{-1} lam_hat`` (:mod:`pramkit.estimate.moment`)          any real; sums to n
mle      maximum likelihood: EM, then Newton (:mod:`.mle`)              ``[0, n]``; sums to n
norm-sub projection of the unbiased estimate (:mod:`.consistent`)        ``[0, n]``; sums to n
rr-mle   the MLE in closed form, randomized response (:mod:`.consistent`) ``[0, n]``; sums to n
======== ============================================================== =========================

``moment`` is accepted for ``unbiased`` (the name of the ``method`` option).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pramkit.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike

    from pramkit.estimate.covariance import VarianceKind
    from pramkit.estimate.result import TableEstimate
    from pramkit.matrix import PramMatrix

#: Estimator name -> one-line description.  The functions are imported when an estimator
#: runs (:func:`estimate_counts`), so that listing them imports neither SciPy nor pandas.
ESTIMATORS: dict[str, str] = {
    "unbiased": "unbiased moment estimator (M^T)^-1 lambda; can leave [0, n]",
    "mle": "maximum likelihood by EM (iterative Bayesian update) finished by Newton steps; in [0, n]",
    "norm-sub": "unbiased estimate projected onto counts >= 0 summing to n; no standard errors",
    "rr-mle": "maximum likelihood in closed form, one randomized-response variable",
}

#: Other accepted names.
ALIASES = {"moment": "unbiased"}

#: The estimators whose estimates always lie in [0, n].
CONSISTENT = ("mle", "norm-sub", "rr-mle")


def estimator_name(name: str) -> str:
    """The canonical name of an estimator (``"moment"`` -> ``"unbiased"``); a clear error if unknown.

    Parameters
    ----------
    name : str
        A name of :data:`ESTIMATORS` or an alias.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        For an unknown name, listing the estimators.

    Examples
    --------
    >>> estimator_name("moment"), estimator_name("norm-sub")
    ('unbiased', 'norm-sub')
    """
    key = ALIASES.get(name, name) if isinstance(name, str) else name
    if key not in ESTIMATORS:
        raise ParameterError(f"estimator must be one of {list(ESTIMATORS)}, not {name!r}")
    return key


def estimator_function(name: str) -> Callable[..., TableEstimate]:
    """The function of ``(released, matrices, variance=...)`` that computes the named estimator.

    Parameters
    ----------
    name : a name of :data:`ESTIMATORS` (or an alias)

    Returns
    -------
    The estimator's function, imported on this first use (it needs SciPy).

    Raises
    ------
    ParameterError
        ``name`` is not an estimator.

    Examples
    --------
    >>> estimator_function("moment").__name__
    'moment_estimate'
    """
    from pramkit.estimate.consistent import norm_sub_estimate, rr_mle_estimate
    from pramkit.estimate.mle import mle_estimate
    from pramkit.estimate.moment import moment_estimate

    functions: dict[str, Callable[..., TableEstimate]] = {"unbiased": moment_estimate, "mle": mle_estimate, "norm-sub": norm_sub_estimate,
                 "rr-mle": rr_mle_estimate}
    return functions[estimator_name(name)]


def estimate_counts(
    released: ArrayLike,
    matrices: Sequence[PramMatrix | None],
    *,
    estimator: str = "unbiased",
    variance: VarianceKind = "multinomial",
) -> TableEstimate:
    """Estimate the original counts of a table with the named estimator.

    Parameters
    ----------
    released : released counts, one axis per variable
    matrices : one :class:`PramMatrix` per axis, ``None`` for an unperturbed variable
    estimator : a name of :data:`ESTIMATORS` (or an alias)
    variance : ``"multinomial"`` or ``"pram"`` (see :mod:`pramkit.estimate.covariance`)

    Examples
    --------
    >>> import numpy as np
    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> for name in ESTIMATORS:
    ...     est = estimate_counts(np.array([90.0, 10.0]), [m], estimator=name)
    ...     print(name, est.counts.round(1).tolist())
    unbiased [130.0, -30.0]
    mle [100.0, 0.0]
    norm-sub [100.0, 0.0]
    rr-mle [100.0, 0.0]
    """
    return estimator_function(estimator)(released, matrices, variance=variance)
