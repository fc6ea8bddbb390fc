"""Utility of a release, by what each part measures.

* :mod:`~pramkit.utility.divergence`: distances between two distributions on the same cells
  (Kullback-Leibler divergence in nats, Hellinger and total-variation distances);
* :mod:`~pramkit.utility.loss`: what PRAM costs an estimate (the L2 loss of Cator, Hensbergen
  and Rozenholc; the variance inflation of the moment estimator);
* :mod:`~pramkit.utility.curve`: the privacy-utility curve over a grid of epsilon, and its plot.
"""

from pramkit.utility.curve import PrivacyUtilityCurve, plot_privacy_utility, privacy_utility_curve
from pramkit.utility.divergence import TableDistances, distances, hellinger, kl_divergence, total_variation
from pramkit.utility.loss import VarianceInflation, l2_loss, variance_inflation

#: The former name of :class:`TableDistances`, kept so that code written for it still runs
#: (:class:`pramkit.distances.Distances` is the distances between categories).
Distances = TableDistances

__all__ = [
    "PrivacyUtilityCurve", "TableDistances", "VarianceInflation", "distances", "hellinger", "kl_divergence",
    "l2_loss", "plot_privacy_utility", "privacy_utility_curve", "total_variation", "variance_inflation",
]
