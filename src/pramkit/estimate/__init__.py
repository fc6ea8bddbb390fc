"""Estimation of original frequencies from released data and the manifest.

* :func:`moment_estimate` -- the unbiased moment estimator ``(M^T)^{-1} lambda``
  for one variable or a table (Kronecker structure, identity on unperturbed
  axes; Cator, Hensbergen and Rozenholc, section 3, estimator (4)), with
  standard errors;
* :func:`mle_estimate` -- the maximum-likelihood estimate on the simplex by EM;
* :func:`norm_sub_estimate`, :func:`rr_mle_estimate` -- consistent estimators
  (counts in ``[0, n]`` summing to n): Norm-Sub, and the MLE in closed form
  for randomized response (:mod:`pramkit.estimate.consistent`);
* :func:`estimate_counts` and :data:`ESTIMATORS` -- any of them by name;
* :func:`identifiability` -- whether a matrix is singular or ill-conditioned,
  and which categories cannot be told apart;
* :func:`estimate_table` -- the analyst's entry point on a released DataFrame.

See ``docs/estimation.md``.
"""

from pramkit.estimate.consistent import norm_sub, norm_sub_estimate, rr_mle_estimate
from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.estimators import ESTIMATORS, estimate_counts
from pramkit.estimate.identifiability import CategoryGroup, IdentifiabilityResult, identifiability
from pramkit.estimate.mle import mle_estimate
from pramkit.estimate.moment import MAX_CONDITION, moment_estimate
from pramkit.estimate.result import EstimationWarning, TableEstimate
from pramkit.estimate.singular import GroupEstimate, TableIdentifiability
from pramkit.estimate.table import Derived, EstimateResult, estimate_table

__all__ = [
    "CategoryGroup", "CountCovariance", "Derived", "ESTIMATORS", "EstimateResult", "EstimationWarning",
    "GroupEstimate", "IdentifiabilityResult", "MAX_CONDITION", "TableEstimate", "TableIdentifiability",
    "estimate_counts", "estimate_table", "identifiability", "mle_estimate", "moment_estimate", "norm_sub",
    "norm_sub_estimate", "rr_mle_estimate",
]
