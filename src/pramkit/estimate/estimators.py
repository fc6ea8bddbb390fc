"""The estimators of a table of original counts, by name.

======== ============================================================== =========================
name     what                                                           range
======== ============================================================== =========================
unbiased ``(M^T)^{-1} lam_hat`` (:mod:`pramkit.estimate.moment`)          any real; sums to n
mle      maximum likelihood by EM (:mod:`pramkit.estimate.mle`)         ``[0, n]``; sums to n
norm-sub projection of the unbiased estimate (:mod:`.consistent`)        ``[0, n]``; sums to n
rr-mle   the MLE in closed form, randomized response (:mod:`.consistent`) ``[0, n]``; sums to n
======== ============================================================== =========================

``moment`` is accepted for ``unbiased`` (the name of the ``method`` option).
"""

from __future__ import annotations

from typing import Callable, Sequence

from numpy.typing import ArrayLike

from pramkit.errors import PramkitError
from pramkit.estimate.consistent import norm_sub_estimate, rr_mle_estimate
from pramkit.estimate.covariance import VarianceKind
from pramkit.estimate.mle import mle_estimate
from pramkit.estimate.moment import moment_estimate
from pramkit.estimate.result import TableEstimate
from pramkit.matrix import PramMatrix

#: Estimator name -> (function of (released, matrices, variance=...), one-line description).
ESTIMATORS: dict[str, tuple[Callable[..., TableEstimate], str]] = {
    "unbiased": (moment_estimate, "unbiased moment estimator (M^T)^-1 lambda; can leave [0, n]"),
    "mle": (mle_estimate, "maximum likelihood by EM (iterative Bayesian update); in [0, n]"),
    "norm-sub": (norm_sub_estimate, "unbiased estimate projected onto counts >= 0 summing to n; no standard errors"),
    "rr-mle": (rr_mle_estimate, "maximum likelihood in closed form, one randomized-response variable"),
}

#: Other accepted names.
ALIASES = {"moment": "unbiased"}

#: The estimators whose estimates always lie in [0, n].
CONSISTENT = ("mle", "norm-sub", "rr-mle")


def estimator_name(name: str) -> str:
    """The canonical name of an estimator (``"moment"`` -> ``"unbiased"``); a clear error if unknown."""
    key = ALIASES.get(name, name) if isinstance(name, str) else name
    if key not in ESTIMATORS:
        raise PramkitError(f"estimator must be one of {list(ESTIMATORS)}, not {name!r}")
    return key


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
    function, _ = ESTIMATORS[estimator_name(estimator)]
    return function(released, matrices, variance=variance)
