"""Geographic and ordinal PRAM: metric-DP mechanisms, their exact check, and utility.

Metric differential privacy (d-privacy; Chatzikokolakis, Andres, Bordenabe
and Palamidessi 2013; geo-indistinguishability, Andres, Bordenabe,
Chatzikokolakis and Palamidessi 2013) asks, for distances d between the
categories and a rate ``eps_d`` per unit of distance,

    M[x, z] <= exp(eps_d d(x, x')) M[x', z]   for all x, x', z:

nearby values are hard to tell apart, distant ones less so.  Two mechanisms
need no optimisation:

* :func:`exponential_mechanism` -- ``M[x, z]`` proportional to
  ``exp(-eps_d d(x, z) / 2)`` (McSherry and Talwar's exponential mechanism
  with the distance as score); eps_d-metric-DP for any metric d;
* :func:`truncated_geometric` -- for ordinal variables, the truncated
  geometric mechanism of Ghosh, Roughgarden and Sundararajan (2009):
  ``M[x, z]`` proportional to ``alpha^|z - x|`` with ``alpha = e^-eps_d``,
  the mass beyond the ends lumped on them; eps_d-metric-DP per category step.

The least-distance metric-DP matrix (Bordenabe, Chatzikokolakis and
Palamidessi 2014) is an LP with the spanner reduction:
:func:`pramkit.design.dp.distance.metric_min_distance`.

Both are returned as a :class:`pramkit.matrix.PramMatrix`: its pure epsilon
(``PramMatrix.epsilon``, Shlomo and Skinner 2012, section 4) is computed from
the stored matrix -- at most ``eps_d`` times the largest distance -- and the
metric guarantee is *verified on the stored doubles* by
:func:`pramkit.privacy.metric.metric_epsilon`: the smallest ``eps_d`` they satisfy, exactly
(screened in floating point with a rigorous error bound, the near-maximal
triples decided in :mod:`decimal`, rounded up).  Over a path metric
(ordinal steps, adjacency graphs) only the edges are checked, and the bound
extends to every pair by chaining: O(S^2).  Otherwise every triple is
screened, O(S^3), up to :data:`pramkit.privacy.metric.EXHAUSTIVE_LIMIT` triples; above, the
guarantee rests on the construction's margin (derived in
``docs/geography.md``) and the provenance says it was not verified.

:func:`geo_utility` measures a matrix: expected distance moved, share of
records kept in their own category, share moved at most a given distance;
:func:`compare_with_rr` puts randomized response at the same (pure) epsilon
beside it.  Each is ``p @ row`` for the per-category rows of
:func:`row_measures`, which the release reports weigh by published figures.

References
----------
Andres, Bordenabe, Chatzikokolakis and Palamidessi (2013), Geo-indistinguishability.
Chatzikokolakis, Andres, Bordenabe and Palamidessi (2013), Broadening the scope of differential privacy using metrics.
Bordenabe, Chatzikokolakis and Palamidessi (2014), Optimal geo-indistinguishable mechanisms.
Ghosh, Roughgarden and Sundararajan (2009), Universally utility-maximizing privacy mechanisms.
Ayed, Battiston and Camerlenghi, An information theoretic approach to post randomization methods under
differential privacy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.distances import Distances, distances_for
from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.exact import UNIT
from pramkit.privacy.metric import (
    MetricEpsilon,
    category_steps,
    check_metric,
    exponential_metric_epsilon,
    metric_certificate,
    metric_epsilon,
    realised_metric_epsilon,
    widened_metric_epsilon,
)
from pramkit.validate import positive, probabilities

#: Most triples of the all-pairs check of an exponential mechanism's doubles beside its closed form
#: (S = 464: about a second); a table, which has no closed form, is checked up to :data:`pramkit.privacy.metric.EXHAUSTIVE_LIMIT`.
CROSS_CHECK_TRIPLES = 100_000_000
#: Largest S of a path metric whose exponential mechanism's doubles are also checked edge by edge
#: (:func:`pramkit.privacy.metric.metric_epsilon` builds the S x S array: 32 MB here).
VERIFY_EDGES_MAX = 2048
#: Largest S for which the comparison builds randomized response as a dense matrix
#: (:func:`pramkit.design.classic.randomized_response`); above, its closed form.
RR_DENSE_MAX = 3000


def _margin(distances: Distances, eps_d: float) -> float:
    """The rate the construction uses so that rounding cannot push the stored matrix above
    ``eps_d`` (docs/geography.md): rounding of the exponents, the normalising sums and, for
    computed distances, of the triangle inequality."""
    s = distances.size
    dmax, dmin = distances.max, distances.min_positive
    slack = (8.0 * eps_d * dmax + 2.0 * math.log2(max(s, 2)) + 24.0) * UNIT * 4.0
    return eps_d - slack / dmin


def exponential_mechanism(distances: Distances, metric_epsilon_: float, *,
                          categories: Sequence[Label] | None = None) -> PramMatrix:
    """``M[x, z]`` proportional to ``exp(-eps_d d(x, z) / 2)``: eps_d-metric-DP.

    For a metric d, ``M[x, z] / M[x', z] = exp(eps_d (d(x', z) - d(x, z)) / 2) Z_x' / Z_x``
    with both factors at most ``exp(eps_d d(x, x') / 2)`` by the triangle
    inequality (Chatzikokolakis et al. 2013; the exponential mechanism of
    McSherry and Talwar).  The rate is lowered by a margin for rounding
    (:func:`_margin`); the stored matrix is then checked by
    :func:`pramkit.privacy.metric.metric_epsilon` and, if it still exceeded ``eps_d`` (a distance
    table that is not a metric), the rate is lowered in proportion and the
    matrix rebuilt (at most five times).  Pure epsilon: at most ``eps_d``
    times the largest distance, computed from the stored matrix.

    Parameters
    ----------
    distances : Distances
        Distances between the categories.
    metric_epsilon_ : float
        eps_d, per unit of distance.
    categories : sequence, optional
        The order of the rows (default: the distances' own).

    Returns
    -------
    PramMatrix
        The mechanism, with a certificate of its verified metric epsilon
        (:func:`pramkit.privacy.metric.metric_certificate`).

    Raises
    ------
    ParameterError
        If there are fewer than two categories, ``eps_d`` is out of range
        (:func:`pramkit.privacy.metric.check_metric`), or a distance table is too large to verify.

    Examples
    --------
    >>> from pramkit.distances import euclidean_distances
    >>> d = euclidean_distances(["a", "b", "c"], [[0, 0], [1, 0], [3, 0]], unit="km")
    >>> m = exponential_mechanism(d, 0.5)
    >>> cert = m.provenance.certificate
    >>> cert["metric_dp_verified"], cert["metric_epsilon_stored"] <= 0.5, m.epsilon <= 0.5 * 3
    (True, True, True)
    """
    start = time.perf_counter()
    dist = distances if categories is None else distances.reorder(categories)
    if dist.size < 2:
        raise ParameterError("a mechanism needs at least two categories")
    target = check_metric(metric_epsilon_, dist.max / 2.0, "half diameter")
    a = dist.metric_error
    if a is not None:  # the closed form rate (1 + 3 a / d_min) <= target
        rate = target / (1.0 + 3.0 * a / dist.min_positive) * (1.0 - 4.0 * UNIT)
    else:
        rate = _margin(dist, target)
    check = None
    for _ in range(6):
        matrix = PramMatrix.exponential(rate, dist)
        check = exponential_metric_epsilon(matrix)
        if check.value is None or check.value <= target:
            break
        rate = rate * target / check.value * (1.0 - 1e-12)
    assert check is not None
    verified = None if check.value is None else bool(check.value <= target)
    if verified is False:  # pragma: no cover - five proportional reductions always suffice in practice
        raise ParameterError(f"could not bring the exponential mechanism within metric epsilon {target:g}")
    if verified is None:
        raise ParameterError(f"a distance table need not be a metric and S = {dist.size} is too large to verify "
                             "the exponential mechanism triple by triple; give centroids or an adjacency list")
    closed = check.value if check.scope == "closed form" else None
    if closed is not None and (dist.size ** 3 <= CROSS_CHECK_TRIPLES or (
            dist.edges is not None and dist.size <= VERIFY_EDGES_MAX)):
        doubles = metric_epsilon(matrix.matrix, dist)   # the exact check, where it is cheap, widened to the law
        widened = widened_metric_epsilon(doubles.value, rate, dist)
        if widened is not None and widened < closed:
            check = MetricEpsilon(widened, doubles.scope, doubles.exact, doubles.triples, doubles.candidates)
    return _metric_matrix(matrix, dist, "exponential_mechanism", target, rate, check, start,
                          "McSherry and Talwar (2007); Chatzikokolakis, Andres, Bordenabe and Palamidessi (2013)",
                          closed)


def truncated_geometric(categories: Sequence[Label], metric_epsilon_: float) -> PramMatrix:
    """The truncated geometric mechanism (Ghosh, Roughgarden and Sundararajan 2009)
    on the category order: eps_d-metric-DP per category step.

    With ``alpha = e^-eps_d``: ``M[x, z] = (1 - alpha) / (1 + alpha) alpha^|z - x|``
    for the inner categories, ``alpha^x / (1 + alpha)`` for the first and
    ``alpha^(S-1-x) / (1 + alpha)`` for the last (the two-sided geometric noise
    beyond the ends lumped on them).  Adjacent rows differ by a factor of at
    most ``1 / alpha`` in every column, so the guarantee is checked on the S - 1
    adjacent pairs exactly (:func:`pramkit.privacy.metric.metric_epsilon`) and chains to all pairs.
    Pure epsilon: ``eps_d (S - 1)`` (the end columns).  The matrix is stored by
    its rate (no S x S array): the formula in exact arithmetic, whose adjacent
    rows differ by exactly ``e^eps_d``, so no margin is needed, and the engine
    samples it exactly (:class:`pramkit.engine.sampling.GeometricSampler`), so the law
    it releases with is the formula itself, tails included.

    Parameters
    ----------
    categories : sequence
        The categories, in their order (at least two).
    metric_epsilon_ : float
        eps_d, per category step.

    Returns
    -------
    PramMatrix
        The mechanism, with a certificate of its verified metric epsilon.

    Raises
    ------
    ParameterError
        If there are fewer than two categories, or ``eps_d`` is out of range
        (:func:`pramkit.privacy.metric.check_metric`).

    Examples
    --------
    >>> m = truncated_geometric(["0-17", "18-34", "35-64", "65+"], 1.0)
    >>> m.provenance.certificate["metric_dp_verified"], round(m.epsilon, 6)
    (True, 3.0)
    """
    start = time.perf_counter()
    s = len(categories)
    if s < 2:
        raise ParameterError("a mechanism needs at least two categories")
    target = positive(metric_epsilon_, "metric epsilon")  # no entry is stored, so none can underflow
    check = MetricEpsilon(target, "closed form", True, 0, 0)
    certificate = {**metric_certificate(check, target, "step", "Ghosh, Roughgarden and Sundararajan (2009)"),
                   "rate_used": target}
    prov = Provenance(method="truncated_geometric",
                      parameters={"metric_epsilon": target, "unit": "step", "categories": s},
                      certificate=certificate, seconds=time.perf_counter() - start)
    return PramMatrix.truncated_geometric(target, categories, prov)


def _metric_matrix(matrix: np.ndarray | PramMatrix, dist: Distances, method: str, target: float, rate: float,
                   check: MetricEpsilon, start: float, reference: str,
                   closed: float | None = None) -> PramMatrix:
    m = matrix if isinstance(matrix, PramMatrix) else PramMatrix(matrix, dist.categories)
    realised = realised_metric_epsilon(m, dist)
    certificate = {**metric_certificate(check, target, dist.unit, reference), "rate_used": rate,
                   "metric_epsilon_realised": realised,
                   "metric_dp_verified_realised": None if realised is None else bool(realised <= target)}
    if closed is not None:  # the bound that holds at any size; metric_check says which one the guarantee used
        certificate["metric_epsilon_closed_form"] = closed
    prov = Provenance(method=method,
                      parameters={"metric_epsilon": target, "unit": dist.unit, "distances": dist.to_dict()},
                      certificate=certificate, seconds=time.perf_counter() - start)
    return m.with_provenance(prov)  # keeps the realised law computed above


# ---------------------------------------------------------------------------
# Utility
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GeoUtility:
    """How far a matrix moves values.

    Attributes
    ----------
    expected_distance : float
        ``sum_x p_x sum_z M[x, z] d(x, z)`` in ``unit``.
    share_kept : float
        ``sum_x p_x M[x, x]``, records released as their own category.
    share_within : float or None
        Records moved at most ``within`` (``None`` without it).
    within : float or None
        The radius of ``share_within``.
    epsilon : float
        The matrix's pure epsilon (Shlomo and Skinner 2012, section 4).
    unit : str
        The distances' unit.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> m = PramMatrix([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.2, 0.8]])
    >>> u = geo_utility(m, ordinal_distances([0, 1, 2]), [0.5, 0.3, 0.2], within=0)
    >>> round(u.expected_distance, 12), round(u.share_kept, 12), round(u.share_within, 12), u.unit
    (0.2, 0.8, 0.8, 'step')
    >>> u.epsilon                                              # zeros beside positives in a column
    inf
    """

    expected_distance: float
    share_kept: float
    share_within: float | None
    within: float | None
    epsilon: float
    unit: str

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (for JSON output).

        Returns
        -------
        dict
            One entry per field.

        Examples
        --------
        >>> GeoUtility(0.25, 0.8, None, None, 1.0, "km").to_dict()
        {'expected_distance': 0.25, 'share_kept': 0.8, 'share_within': None, 'within': None, 'epsilon': 1.0, 'unit': 'km'}
        """
        return asdict(self)


def _p(p: ArrayLike | None, s: int) -> np.ndarray:
    if p is None:
        return np.full(s, 1.0 / s)
    pv = probabilities(p)
    if pv.size != s:
        raise ParameterError(f"{pv.size} probabilities given for {s} categories")
    return pv


@dataclass(frozen=True, eq=False)
class RowMeasures:
    """What a matrix does to a record of each original category x (arrays of shape (S,)).

    distance: ``sum_z M[x, z] d(x, z)``, the expected distance moved
    kept: ``M[x, x]``, the probability of being released as itself
    within: ``sum_{z: d(x, z) <= r} M[x, z]``, of moving at most ``r`` (``None`` without a radius)

    Each measure of a file is the frequency-weighted sum ``p @ row``: linear in p,
    so it can be estimated from a released file with a standard error
    (:meth:`pramkit.estimate.TableEstimate.linear_variance`).

    Attributes
    ----------
    distance : numpy.ndarray
        ``sum_z M[x, z] d(x, z)``.
    kept : numpy.ndarray
        ``M[x, x]``.
    within : numpy.ndarray or None
        ``sum_{z: d(x, z) <= r} M[x, z]``.

    Examples
    --------
    An end band moves further than the middle one:

    >>> from pramkit.distances import ordinal_distances
    >>> rows = row_measures([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], ordinal_distances("abc"))
    >>> rows.distance.round(12).tolist(), rows.kept.tolist(), rows.within is None
    ([0.3, 0.2, 0.3], [0.8, 0.8, 0.8], True)
    """

    distance: np.ndarray
    kept: np.ndarray
    within: np.ndarray | None

    def utility(self, p: ArrayLike | None, radius: float | None, epsilon: float, unit: str) -> GeoUtility:
        """The measures weighted by ``p`` (``None``: uniform over the categories).

        Parameters
        ----------
        p : array-like, shape (S,), or None
            The weights (proportions of the original categories).
        radius : float or None
            The radius the ``within`` row was computed for.
        epsilon : float
            The matrix's pure epsilon, to record.
        unit : str
            The distances' unit.

        Returns
        -------
        GeoUtility
            ``p @ distance``, ``p @ kept`` and ``p @ within``.

        Raises
        ------
        ParameterError
            If p is not a probability vector over the S categories.

        Examples
        --------
        >>> from pramkit.distances import ordinal_distances
        >>> rr = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
        >>> rows = row_measures(rr, ordinal_distances("abc"), within=1)
        >>> u = rows.utility([0.5, 0.3, 0.2], 1, math.log(8), "step")
        >>> round(u.expected_distance, 12), round(u.share_within, 12)   # 0.5 0.3 + 0.3 0.2 + 0.2 0.3
        (0.27, 0.93)
        >>> round(rows.utility(None, 1, math.log(8), "step").expected_distance, 12)    # uniform
        0.266666666667
        """
        pv = _p(p, self.distance.size)
        share = None if self.within is None else float(pv @ self.within)
        return GeoUtility(float(pv @ self.distance), float(pv @ self.kept), share,
                          None if radius is None else float(radius), float(epsilon), unit)


def _radius(within: float | None) -> float | None:
    if within is None:
        return None
    return 0.0 if within == 0 else positive(within, "within")


def row_measures(matrix: PramMatrix | ArrayLike, distances: Distances, *,
                 within: float | None = None) -> RowMeasures:
    """Per original category: expected distance moved, keep probability and probability of
    moving at most ``within`` (in the distances' unit).

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (S, S)
        The matrix.
    distances : Distances
        Distances between its categories (same order).
    within : float, optional
        The radius of the ``within`` row (non-negative).

    Returns
    -------
    RowMeasures
        One entry per original category.

    Raises
    ------
    ParameterError
        If the shapes differ or ``within`` is negative.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> r = row_measures([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.2, 0.8]], ordinal_distances("abc"), within=1)
    >>> r.distance.round(12).tolist(), r.kept.tolist(), r.within.round(12).tolist()
    ([0.2, 0.2, 0.2], [0.8, 0.8, 0.8], [1.0, 1.0, 1.0])
    """
    r = _radius(within)
    if isinstance(matrix, PramMatrix) and matrix.size == distances.size:
        if matrix.geometric_rate is not None and matrix.geometric_rate >= 1e-3 and category_steps(distances, matrix):
            # the series' cancellation costs u / (1 - a)^2: 1e-10 relative at rate 1e-3
            return _geometric_row_measures(matrix, r)
        if matrix.exponential_rate is not None or matrix.geometric_rate is not None or distances.points is not None:
            return _row_measures_by_rows(matrix, distances, r)
    d = distances.matrix
    m = np.asarray(matrix.matrix if isinstance(matrix, PramMatrix) else matrix, dtype=float)
    if m.shape != d.shape:
        raise ParameterError(f"the matrix is {m.shape} but the distances are {d.shape}")
    return RowMeasures((m * d).sum(axis=1), np.diagonal(m).copy(),
                       None if r is None else np.where(d <= r, m, 0.0).sum(axis=1))


def _matrix_rows(matrix: PramMatrix, index: np.ndarray) -> np.ndarray:
    """Rows ``index`` of a matrix, O(S) memory each for the forms stored by their parameters."""
    if matrix.exponential_rate is not None:
        return matrix.exponential_rows(index)
    if matrix.geometric_rate is not None:  # the formula of PramMatrix.matrix, for these rows
        rate, (_, inner, end), n = matrix.geometric_rate, matrix._geometric_parts(), matrix.size
        x, z = index[:, None], np.arange(n)[None, :]
        rows = inner * np.exp(-rate * np.abs(z - x).astype(float))
        rows[:, 0] = end * np.exp(-rate * index)
        rows[:, n - 1] = end * np.exp(-rate * (n - 1 - index))
        return rows
    return np.asarray(matrix.matrix[index], dtype=float)


def _row_measures_by_rows(matrix: PramMatrix, distances: Distances, radius: float | None) -> RowMeasures:
    """:func:`row_measures` in one O(S^2)-time pass over blocks of rows (O(S) memory per row)."""
    s = matrix.size
    dist, kept = np.empty(s), np.empty(s)
    within = None if radius is None else np.empty(s)
    for idx, d in distances.passes():
        m = _matrix_rows(matrix, idx)
        dist[idx] = (m * d).sum(axis=1)
        kept[idx] = m[np.arange(idx.size), idx]
        if within is not None:
            within[idx] = np.where(d <= radius, m, 0.0).sum(axis=1)
    return RowMeasures(dist, kept, within)


def _geometric_row_measures(matrix: PramMatrix, radius: float | None) -> RowMeasures:
    """:func:`row_measures` of the truncated geometric mechanism on its own steps, in closed form, O(S).

    With ``a = e^-rate``, ``c = (1 - a) / (1 + a)``, ``L`` steps to an end: the moves towards it
    contribute ``sum_{k < L} k c a^k + L a^L / (1 + a)`` to the expected distance, and a move beyond
    ``r < L`` steps has probability ``a^(r + 1) / (1 + a)``."""
    a, inner, _end = matrix._geometric_parts()
    n = matrix.size
    x = np.arange(n, dtype=float)

    def towards(steps: np.ndarray) -> np.ndarray:
        m = np.maximum(steps - 1.0, 0.0)   # sum_{k=1}^{m} k a^k = a (1 - (m + 1) a^m + m a^(m + 1)) / (1 - a)^2
        series = a * (1.0 - (m + 1.0) * a ** m + m * a ** (m + 1.0)) / (1.0 - a) ** 2
        return inner * series + steps * a ** steps / (1.0 + a)

    distance = towards(x) + towards(n - 1.0 - x)
    within = None
    if radius is not None:
        r = math.floor(radius)
        beyond = a ** (r + 1.0) / (1.0 + a)
        within = 1.0 - np.where(r < x, beyond, 0.0) - np.where(r < n - 1.0 - x, beyond, 0.0)
    return RowMeasures(distance, np.array(matrix.diagonal), within)


def rr_row_measures(distances: Distances, epsilon: float, *, within: float | None = None) -> RowMeasures:
    """:func:`row_measures` of randomized response at ``epsilon`` on the distances' categories
    (:func:`pramkit.design.classic.randomized_response` up to :data:`RR_DENSE_MAX` categories;
    above, its closed form: keep ``q = 1 / (1 + (S - 1) e^-eps)``, each other category ``w = e^-eps q``).

    Parameters
    ----------
    distances : Distances
        Distances between the categories.
    epsilon : float
        Randomized response's epsilon (nats).
    within : float, optional
        The radius of the ``within`` row.

    Returns
    -------
    RowMeasures
        One entry per category.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> rr_row_measures(ordinal_distances("abc"), math.log(2)).kept.round(12).tolist()   # q = 2 / (2 + 2)
    [0.5, 0.5, 0.5]
    """
    from pramkit.design.classic import randomized_response

    s = distances.size
    if s <= RR_DENSE_MAX:
        return row_measures(randomized_response(distances.categories, epsilon), distances, within=within)
    d = distances.matrix
    shrink = math.exp(-epsilon)
    q = 1.0 / (1.0 + (s - 1) * shrink)
    w = shrink * q
    r = _radius(within)
    return RowMeasures(w * d.sum(axis=1), np.full(s, q),
                       None if r is None else q + w * ((d <= r).sum(axis=1) - 1))


def geo_utility(matrix: PramMatrix, distances: Distances, p: ArrayLike | None = None, *,
                within: float | None = None) -> GeoUtility:
    """Expected distance moved, share kept and share within ``within`` (p ``None``: uniform).

    Parameters
    ----------
    matrix : PramMatrix
        The matrix.
    distances : Distances
        Distances between its categories (same order).
    p : array-like, optional
        Proportions of the original categories (default: uniform).
    within : float, optional
        The radius of ``share_within``.

    Returns
    -------
    GeoUtility
        The measures weighted by p, with the matrix's pure epsilon.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> m = PramMatrix([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.2, 0.8]])
    >>> u = geo_utility(m, ordinal_distances([0, 1, 2]), within=1)
    >>> round(u.expected_distance, 12), round(u.share_kept, 12), u.share_within
    (0.2, 0.8, 1.0)
    """
    rows = row_measures(matrix, distances, within=within)
    return rows.utility(p, within, matrix.epsilon, distances.unit)


def rr_utility(distances: Distances, epsilon: float, p: ArrayLike | None = None, *,
               within: float | None = None) -> GeoUtility:
    """:func:`geo_utility` of randomized response at ``epsilon`` (:func:`rr_row_measures`).

    Parameters
    ----------
    distances : Distances
        Distances between the categories.
    epsilon : float
        Randomized response's epsilon (nats).
    p : array-like, optional
        Proportions of the original categories (default: uniform).
    within : float, optional
        The radius of ``share_within``.

    Returns
    -------
    GeoUtility
        The measures of randomized response weighted by p.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> round(rr_utility(ordinal_distances("abc"), math.log(2)).share_kept, 12)   # q = 2 / (2 + 2)
    0.5
    """
    return rr_row_measures(distances, epsilon, within=within).utility(p, within, epsilon, distances.unit)


def compare_with_rr(matrix: PramMatrix, distances: Distances, p: ArrayLike | None = None, *,
                    within: float | None = None) -> dict[str, Any]:
    """The matrix's utility beside randomized response's at the same pure epsilon, with ratios
    (design / randomized response; below 1 is less distance moved).

    Parameters
    ----------
    matrix : PramMatrix
        The design.
    distances : Distances
        Distances between its categories (same order).
    p : array-like, optional
        Proportions of the original categories (default: uniform).
    within : float, optional
        The radius of ``share_within``.

    Returns
    -------
    dict
        ``design`` and ``randomized_response`` (:meth:`GeoUtility.to_dict`), ``distance_ratio``,
        ``kept_ratio`` and, with ``within``, ``within_ratio``.

    Raises
    ------
    ParameterError
        If the matrix's epsilon is infinite.

    Examples
    --------
    >>> from pramkit.distances import ordinal_distances
    >>> m = truncated_geometric(list("abcde"), 0.5)               # pure epsilon 0.5 * 4 = 2
    >>> c = compare_with_rr(m, ordinal_distances(list("abcde")))
    >>> round(c["design"]["expected_distance"], 4), round(c["randomized_response"]["expected_distance"], 4)
    (1.0237, 0.7024)
    """
    eps = matrix.epsilon
    if not math.isfinite(eps):
        raise ParameterError("the matrix has infinite epsilon: no randomized response to compare with")
    mine = geo_utility(matrix, distances, p, within=within)
    rr = rr_utility(distances, eps, p, within=within)
    out = {"design": mine.to_dict(), "randomized_response": rr.to_dict(),
           "distance_ratio": mine.expected_distance / rr.expected_distance if rr.expected_distance > 0 else math.nan,
           "kept_ratio": mine.share_kept / rr.share_kept if rr.share_kept > 0 else math.nan}
    if within is not None and rr.share_within and mine.share_within is not None:
        out["within_ratio"] = mine.share_within / rr.share_within
    return out


# ---------------------------------------------------------------------------
# Design families (the registry signature: build(categories, p, epsilon, options))
# ---------------------------------------------------------------------------

def build_distance(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
                   options: Mapping[str, Any]) -> PramMatrix:
    """``dp`` with ``objective="distance"``: :func:`pramkit.design.dp.distance.dp_min_distance`
    at the variable's budget, with ``options["distances"]`` (``"ordinal"``, a CSV path or
    a :class:`Distances`); ``p`` ``None``: the uniform average, or with ``weights="worst"``
    the largest expected distance from any one category.

    Parameters
    ----------
    categories : sequence
        The variable's categories.
    p : numpy.ndarray or None
        Their proportions (None: no frequencies are read).
    epsilon : float or None
        The variable's budget (nats); required.
    options : mapping
        ``distances`` (required), ``unit``, ``weights``, ``invariant``.

    Returns
    -------
    PramMatrix
        The least-distance epsilon-DP matrix with its certificate.

    Raises
    ------
    ParameterError
        If epsilon or the distances are missing or invalid.

    Examples
    --------
    Without frequencies the design minimises the uniform average distance moved; its
    certificate proves the optimum (dual bound against the stored matrix):

    >>> m = build_distance(["0-17", "18-34", "35-64", "65+"], None, 1.0, {"distances": "ordinal"})
    >>> m.provenance.method, m.epsilon <= 1.0, m.provenance.certificate["optimal"]
    ('dp_min_distance', True, True)
    >>> cert = m.provenance.certificate
    >>> cert["lower_bound"] <= cert["expected_distance"] <= cert["upper_bound"]
    True
    >>> build_distance(["a", "b"], None, None, {"distances": "ordinal"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the distance design is built to a budget: give epsilon
    """
    from pramkit.design.dp.distance import dp_min_distance

    if epsilon is None:
        raise ParameterError("the distance design is built to a budget: give epsilon")
    objective = "worst" if options.get("weights") == "worst" else "average"
    return dp_min_distance(p, epsilon, distances_for(options, categories), objective=objective,
                           invariant=bool(options.get("invariant")))


def build_metric(categories: Sequence[Label], p: np.ndarray | None, options: Mapping[str, Any]) -> PramMatrix:
    """The ``metric`` family: the exponential mechanism over ``options["distances"]``, the
    truncated geometric mechanism on the category order (``mechanism="geometric"``), or the
    least-distance metric-DP matrix by LP (``mechanism="optimal"``, with ``dilation`` for
    distances that are not a path metric; p ``None``: the uniform average); the pure epsilon
    follows from ``metric_epsilon`` and the distances.

    Parameters
    ----------
    categories : sequence
        The variable's categories.
    p : numpy.ndarray or None
        Their proportions (used by ``mechanism="optimal"`` only).
    options : mapping
        The family's options, checked by their rules
        (:data:`pramkit.design.registry.METRIC_OPTIONS`): ``metric_epsilon``, ``mechanism``
        (default ``"exponential"``), ``distances``, ``unit``, ``dilation``.

    Returns
    -------
    PramMatrix
        The mechanism, its metric epsilon verified in its certificate.

    Raises
    ------
    ParameterError
        If ``dilation`` is given for another mechanism than ``"optimal"``, or the geometric
        mechanism is asked for on distances other than the category order.

    Examples
    --------
    On four ordered bands at eps_d = 0.5 per step: the pure epsilon is at most eps_d times
    the largest distance (3 steps), and the geometric mechanism reaches it.

    >>> options = {"distances": "ordinal", "metric_epsilon": 0.5}
    >>> bands = ["0-17", "18-34", "35-64", "65+"]
    >>> expo = build_metric(bands, None, options)
    >>> geom = build_metric(bands, None, {**options, "mechanism": "geometric"})
    >>> expo.provenance.method, expo.provenance.certificate["metric_dp_verified"], expo.epsilon <= 0.5 * 3
    ('exponential_mechanism', True, True)
    >>> geom.provenance.method, round(geom.epsilon, 9)
    ('truncated_geometric', 1.5)
    >>> build_metric(bands, None, {**options, "dilation": 1.5})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: dilation applies to mechanism 'optimal'
    """
    mechanism, eps_d = options.get("mechanism") or "exponential", float(options["metric_epsilon"])
    if options.get("dilation") is not None and mechanism != "optimal":
        raise ParameterError("dilation applies to mechanism 'optimal'")
    if mechanism == "geometric":
        spec = options.get("distances")
        steps = isinstance(spec, Distances) and spec.kind == "ordinal" and spec.unit == "step"
        if not (spec is None or spec == "ordinal" or steps):
            raise ParameterError("the geometric mechanism works on the category order: distances 'ordinal'")
        return truncated_geometric(categories, eps_d)
    if mechanism == "optimal":
        from pramkit.design.dp.distance import SPANNER_DILATION, metric_min_distance

        dilation = options.get("dilation")
        return metric_min_distance(p, eps_d, distances_for(options, categories),
                                   dilation=SPANNER_DILATION if dilation is None else dilation)
    return exponential_mechanism(distances_for(options, categories), eps_d)
