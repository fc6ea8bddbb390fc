"""Estimation of original frequencies from released data and the manifest.

* :func:`moment_estimate` -- the unbiased moment estimator ``(M^T)^{-1} lambda``
  for one variable or a table (Kronecker structure, identity on unperturbed
  axes; Cator, Hensbergen and Rozenholc, section 3, estimator (4)), with
  standard errors;
* :func:`mle_estimate` -- the maximum-likelihood estimate on the simplex by EM;
* :func:`estimate_table` -- the analyst's entry point on a released DataFrame.

See ``docs/estimation.md``.
"""

from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.mle import mle_estimate
from pramkit.estimate.moment import MAX_CONDITION, moment_estimate
from pramkit.estimate.result import EstimationWarning, TableEstimate
from pramkit.estimate.table import Derived, EstimateResult, estimate_table

__all__ = [
    "CountCovariance", "Derived", "EstimateResult", "EstimationWarning", "MAX_CONDITION",
    "TableEstimate", "estimate_table", "mle_estimate", "moment_estimate",
]
