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

from __future__ import annotations

from pramkit._lazy import lazy_exports

# The function shares its name with its module, which would otherwise shadow it as soon as
# any module imports pramkit.estimate.identifiability (NumPy only: cheap to load now).
from pramkit.estimate.identifiability import identifiability  # noqa: F401  (exported)

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
__getattr__, __dir__ = lazy_exports(__name__, {k: f"{__name__}.{m}" for k, m in _EXPORTS.items()}, globals())
