"""Estimation of original frequencies from released data and the manifest.

* :func:`moment_estimate` -- the unbiased moment estimator ``(M^T)^{-1} lambda``
  for one variable or a table (Kronecker structure, identity on unperturbed
  axes; Cator, Hensbergen and Rozenholc, section 3, estimator (4)), with
  standard errors;
* :func:`mle_estimate` -- the maximum-likelihood estimate on the simplex by EM,
  finished by an interior-point method;
* :func:`norm_sub_estimate`, :func:`rr_mle_estimate` -- consistent estimators
  (counts in ``[0, n]`` summing to n): Norm-Sub, and the MLE in closed form
  for randomized response (:mod:`pramkit.estimate.consistent`);
* :func:`estimate_counts` and :data:`ESTIMATORS` -- any of them by name;
* :func:`identifiability` -- whether a matrix is singular or ill-conditioned,
  and which categories cannot be told apart;
* :func:`estimate_table` -- the analyst's entry point on a released DataFrame.

See ``docs/estimation.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pramkit._lazy import lazy_exports

# The function shares its name with its module, which would otherwise shadow it as soon as
# any module imports pramkit.estimate.identifiability (NumPy only: cheap to load now).
from pramkit.estimate.identifiability import identifiability as identifiability

#: Public name -> the module of this package that defines it.  The names are loaded on
#: first use, so that listing the estimators (``pramkit estimate --help``) imports neither
#: SciPy nor pandas.
_EXPORTS = {
    "norm_sub": "consistent", "norm_sub_estimate": "consistent", "rr_mle_estimate": "consistent",
    "CountCovariance": "covariance",
    "ESTIMATORS": "estimators", "estimate_counts": "estimators",
    "CategoryGroup": "identifiability", "IdentifiabilityResult": "identifiability", "identifiability": "identifiability",
    "MAX_CONDITION": "identifiability", "Estimability": "identifiability", "estimability": "identifiability",
    "largest_dense_part": "identifiability",
    "mle_estimate": "mle",
    "moment_estimate": "moment",
    "EstimationWarning": "result", "TableEstimate": "result",
    "GroupEstimate": "singular", "TableIdentifiability": "singular",
    "Derived": "table", "EstimateResult": "table", "estimate_table": "table",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # what type checkers read: the names below, with their types (the lazy loader is not seen)
    from pramkit.estimate.consistent import norm_sub as norm_sub
    from pramkit.estimate.consistent import norm_sub_estimate as norm_sub_estimate
    from pramkit.estimate.consistent import rr_mle_estimate as rr_mle_estimate
    from pramkit.estimate.covariance import CountCovariance as CountCovariance
    from pramkit.estimate.estimators import ESTIMATORS as ESTIMATORS
    from pramkit.estimate.estimators import estimate_counts as estimate_counts
    from pramkit.estimate.identifiability import MAX_CONDITION as MAX_CONDITION
    from pramkit.estimate.identifiability import CategoryGroup as CategoryGroup
    from pramkit.estimate.identifiability import Estimability as Estimability
    from pramkit.estimate.identifiability import IdentifiabilityResult as IdentifiabilityResult
    from pramkit.estimate.identifiability import estimability as estimability
    from pramkit.estimate.identifiability import largest_dense_part as largest_dense_part
    from pramkit.estimate.mle import mle_estimate as mle_estimate
    from pramkit.estimate.moment import moment_estimate as moment_estimate
    from pramkit.estimate.result import EstimationWarning as EstimationWarning
    from pramkit.estimate.result import TableEstimate as TableEstimate
    from pramkit.estimate.singular import GroupEstimate as GroupEstimate
    from pramkit.estimate.singular import TableIdentifiability as TableIdentifiability
    from pramkit.estimate.table import Derived as Derived
    from pramkit.estimate.table import EstimateResult as EstimateResult
    from pramkit.estimate.table import estimate_table as estimate_table
else:
    __getattr__, __dir__ = lazy_exports(__name__, {k: f"{__name__}.{m}" for k, m in _EXPORTS.items()}, globals())
