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
:func:`pramkit.design.dp_distance.metric_min_distance`.

Both are returned as a :class:`pramkit.matrix.PramMatrix`: its pure epsilon
(``PramMatrix.epsilon``, Shlomo and Skinner 2012, section 4) is computed from
the stored matrix -- at most ``eps_d`` times the largest distance -- and the
metric guarantee is *verified on the stored doubles* by
:func:`metric_epsilon`: the smallest ``eps_d`` they satisfy, exactly
(screened in floating point with a rigorous error bound, the near-maximal
triples decided in :mod:`decimal`, rounded up).  Over a path metric
(ordinal steps, adjacency graphs) only the edges are checked, and the bound
extends to every pair by chaining: O(S^2).  Otherwise every triple is
screened, O(S^3), up to :data:`EXHAUSTIVE_LIMIT` triples; above, the
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
from dataclasses import asdict, dataclass
from decimal import ROUND_CEILING, Context, Decimal
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.design.distances import Distances, distances_for, ordinal_distances
from pramkit.engine.law import realised_law
from pramkit.errors import ParameterError, PramkitError
from pramkit.matrix import Label, PramMatrix, Provenance
from pramkit.privacy.exact import UNIT, float_up, log_ratio_upper
from pramkit.validate import positive, probabilities

#: Largest number of (x, x', z) triples screened by :func:`metric_epsilon` over all pairs.
EXHAUSTIVE_LIMIT = 2_000_000_000
#: Largest number of near-maximal triples decided exactly; beyond, the rigorous floating bound is used.
EXACT_CANDIDATES = 20_000
#: Most triples of the all-pairs check of an exponential mechanism's doubles beside its closed form
#: (S = 464: about a second); a table, which has no closed form, is checked up to :data:`EXHAUSTIVE_LIMIT`.
CROSS_CHECK_TRIPLES = 100_000_000
#: Largest S of a path metric whose exponential mechanism's doubles are also checked edge by edge
#: (:func:`metric_epsilon` builds the S x S array: 32 MB here).
VERIFY_EDGES_MAX = 2048
#: Largest ``eps_d * d`` accepted: ``exp(-700)`` is still a normal double.
MAX_EXPONENT = 700.0
#: Largest S for which the comparison builds randomized response as a dense matrix
#: (:func:`pramkit.design.classic.randomized_response`); above, its closed form.
RR_DENSE_MAX = 3000
#: Mechanisms of the ``metric`` design family: the two closed forms, and the least-distance LP
#: (:func:`pramkit.design.dp_distance.metric_min_distance`).
MECHANISMS = ("exponential", "geometric", "optimal")
#: Options of the ``metric`` design family.
METRIC_OPTIONS = ("distances", "metric_epsilon", "mechanism", "unit", "dilation")


@dataclass(frozen=True)
class MetricEpsilon:
    """The metric epsilon of a stored matrix.

    Attributes
    ----------
    value : float or None
        The smallest eps_d with ``M[x, z] <= exp(eps_d d(x, x')) M[x', z]`` for every
        x, x', z, rounded up (``inf`` if a column mixes zeros and positive entries);
        ``None`` when it was not computed (too many triples).
    scope : str
        ``"edges"`` (path metric, chained), ``"all pairs"``, ``"closed form"`` (a matrix
        stored by its rate) or ``"not checked"``.
    exact : bool
        The maximum was decided in exact arithmetic (else: a rigorous floating bound).
    triples : int
        How many (x, x', z) triples were screened.
    candidates : int
        How many near-maximal triples were decided exactly.

    Examples
    --------
    Randomized response keeping 0.8 on three ordered bands: adjacent bands differ by a
    factor 8 in their own column, so eps_d is log 8 per step, rounded up:

    >>> from pramkit.design.distances import ordinal_distances
    >>> rr = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
    >>> r = metric_epsilon(rr, ordinal_distances("abc"))
    >>> r.scope, r.exact, r.triples, r.value >= math.log(8), math.isclose(r.value, math.log(8))
    ('edges', True, 12, True, True)
    >>> metric_epsilon([[1, 0], [0, 1]], ordinal_distances("ab")).value    # a value ruled out
    inf
    """

    value: float | None
    scope: str
    exact: bool
    triples: int
    candidates: int


def _chunks(n: int, width: int) -> list[slice]:
    step = max(1, int(2 ** 24 // max(width, 1)))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def metric_epsilon(matrix: ArrayLike | PramMatrix, distances: Distances, *,
                   limit: int = EXHAUSTIVE_LIMIT) -> MetricEpsilon:
    """The metric epsilon of the stored doubles, rounded up (module docstring).

    ``max over x != x', z of log(M[x, z] / M[x', z]) / d(x, x')``.  Screening:
    the logarithms are computed in floating point, each quotient with a bound E
    on its error; every triple within 2E of the largest computed quotient is a
    candidate for the true maximum, and each candidate is decided with
    :func:`pramkit.privacy.exact.log_ratio_upper` (an upper bound on the exact
    logarithm) divided by the distance in a rounding-up decimal context.  Over
    a path metric (``distances.edges``) only the edges are screened: every
    distance is a sum of edge distances along a path, so the edge bound chains
    to all pairs exactly.

    Parameters
    ----------
    matrix : array-like or PramMatrix, shape (S, S)
        The stored matrix.
    distances : Distances
        Distances between its categories (same order).
    limit : int
        Most triples screened over all pairs; above, the result is ``"not checked"``.

    Returns
    -------
    MetricEpsilon
        The value (rounded up), how it was checked and how many triples it took.

    Raises
    ------
    ParameterError
        If the matrix and the distances have different shapes.

    Examples
    --------
    >>> from pramkit.design.distances import ordinal_distances
    >>> a = math.exp(-1.0)
    >>> w = np.array([[1, a, a * a], [a, 1, a], [a * a, a, 1]])
    >>> m = w / w.sum(axis=1, keepdims=True)
    >>> r = metric_epsilon(m, ordinal_distances("abc"))    # worst: column a, rows a and b
    >>> r.scope, r.exact, math.isclose(r.value, 1 + math.log((1 + 2 * a) / (1 + a + a * a)), rel_tol=1e-14)
    ('edges', True, True)
    """
    if isinstance(matrix, PramMatrix) and matrix.geometric_rate is not None and _steps(distances, matrix):
        return MetricEpsilon(matrix.geometric_rate, "closed form", True, 0, 0)  # sampled exactly: the formula's
    if isinstance(matrix, PramMatrix) and matrix.exponential_rate is not None \
            and matrix.exponential_distances.same(distances):
        return exponential_metric_epsilon(matrix, limit=limit)
    m = np.asarray(matrix.matrix if isinstance(matrix, PramMatrix) else matrix, dtype=float)
    s = m.shape[0]
    if m.shape != (distances.size, distances.size):
        raise ParameterError(f"the matrix is {m.shape} but the distances are {(distances.size, distances.size)}")
    if distances.points is not None and distances.edges is None and s * s * s > limit:  # before an S x S array
        return MetricEpsilon(None, "not checked", False, 0, 0)
    d = distances.matrix
    if m.shape != d.shape:
        raise ParameterError(f"the matrix is {m.shape} but the distances are {d.shape}")
    released = m.max(axis=0) > 0
    if np.any((m[:, released] <= 0)):
        return MetricEpsilon(math.inf, "all pairs", True, 0, 0)
    m = m[:, released]
    if s < 2 or m.shape[1] == 0:
        return MetricEpsilon(0.0, "all pairs", True, 0, 0)
    logm = np.log(m)
    if distances.edges is not None and len(distances.edges):
        e = np.asarray(distances.edges)
        first = np.concatenate([e[:, 0], e[:, 1]])
        second = np.concatenate([e[:, 1], e[:, 0]])
        scope = "edges"
    else:
        if s * s * m.shape[1] > limit:
            return MetricEpsilon(None, "not checked", False, 0, 0)
        first, second = np.nonzero(~np.eye(s, dtype=bool))
        scope = "all pairs"
    dist = d[first, second]
    # pass 1: the largest quotient of each ordered pair
    best = np.empty(first.size)
    for sl in _chunks(first.size, m.shape[1]):
        best[sl] = (logm[first[sl]] - logm[second[sl]]).max(axis=1) / dist[sl]
    triples = int(first.size) * int(m.shape[1])
    top = float(best.max())
    size = float(np.abs(logm).max())
    # |log| within 4 ulps, the difference and the division one rounding each
    err = 16.0 * UNIT * (2.0 * size / float(dist.min()) + abs(top)) + 4.0 * UNIT * abs(top)
    if top + 2.0 * err <= 0.0:
        return MetricEpsilon(0.0, scope, True, triples, 0)
    near = np.flatnonzero(best >= top - 2.0 * err)
    cands: list[tuple[int, int, int]] = []
    for i in near.tolist():
        q = (logm[first[i]] - logm[second[i]]) / dist[i]
        for z in np.flatnonzero(q >= top - 2.0 * err).tolist():
            cands.append((int(first[i]), int(second[i]), z))
            if len(cands) > EXACT_CANDIDATES:
                break
        if len(cands) > EXACT_CANDIDATES:
            break
    if len(cands) > EXACT_CANDIDATES:
        return MetricEpsilon(float_up(Decimal(top) + Decimal(err)), scope, False, triples, 0)
    ctx = Context(prec=60, rounding=ROUND_CEILING)
    value = Decimal(0)
    for x, x2, z in cands:
        hi, lo = float(m[x, z]), float(m[x2, z])
        if hi <= lo:
            continue
        value = max(value, ctx.divide(log_ratio_upper(hi, lo), Decimal(float(d[x, x2]))))
    return MetricEpsilon(float_up(value), scope, True, triples, len(cands))


def _steps(distances: Distances, matrix: PramMatrix) -> bool:
    """The distances are the category steps of the matrix's own order (what the geometric mechanism is on)."""
    if distances.size != matrix.size or distances.kind != "ordinal" or distances.edges is None:
        return False
    if distances.points is not None:
        return bool(np.array_equal(distances.points, np.arange(distances.size)))
    return bool(np.array_equal(distances.matrix, ordinal_distances(matrix.categories).matrix))


def _ulp_bound(value: Fraction) -> float:
    up = float(value)
    return up if Fraction(up) >= value else math.nextafter(up, math.inf)


def exponential_metric_bound(rate: float, distances: Distances) -> float | None:
    """The closed-form metric epsilon of the exponential mechanism ``exp(-rate d / 2)`` over the stored
    distances, rounded up: ``rate (1 + 3 a / d_min)`` with ``a`` their
    :attr:`~pramkit.design.distances.Distances.metric_error` (docs/perturbation.md); ``None`` for a
    table, which need not be a metric.

    Parameters
    ----------
    rate : float
        The mechanism's rate.
    distances : Distances
        The distances.

    Returns
    -------
    float or None
        The bound.

    Examples
    --------
    >>> exponential_metric_bound(0.5, ordinal_distances("abc"))     # integer steps are exact
    0.5
    """
    a = distances.metric_error
    if a is None:
        return None
    return _ulp_bound(Fraction(rate) * (1 + 3 * Fraction(a) / Fraction(distances.min_positive)))


def _entry_error(rate: float, distances: Distances) -> float:
    """A bound on the relative error of the doubles of an exponential mechanism's rows against the
    formula's real entries (the exponent rounded once, ``exp`` within 4 ulps, the row's sum and the
    division), with room to spare."""
    return 2.0 * (rate * distances.max / 2.0 + 8.0 + 1.1 * distances.size) * UNIT


def exponential_metric_epsilon(matrix: PramMatrix, *, limit: int = EXHAUSTIVE_LIMIT) -> MetricEpsilon:
    """The metric epsilon of an exponential mechanism stored by its parameters (the law the engine
    samples exactly), rounded up: the closed form :func:`exponential_metric_bound` when the distances
    are a metric; for a table, :func:`metric_epsilon` of the doubles plus ``2.01 e / d_min`` for their
    relative error e against the formula (:func:`_entry_error`), where the triples are few enough.

    Parameters
    ----------
    matrix : PramMatrix
        :meth:`pramkit.PramMatrix.exponential`.
    limit : int
        Most triples screened for a table.

    Returns
    -------
    MetricEpsilon
        ``"closed form"``, or the check of the doubles widened to the formula's law.

    Examples
    --------
    >>> m = PramMatrix.exponential(0.5, Distances("abc", [[0, 1, 2], [1, 0, 1.5], [2, 1.5, 0]]))
    >>> r = exponential_metric_epsilon(m)
    >>> r.scope, r.value > 0.5, r.value < 0.5 + 1e-12
    ('all pairs', False, True)
    """
    rate, dist = matrix.exponential_rate, matrix.exponential_distances
    closed = exponential_metric_bound(rate, dist)
    if closed is not None:
        return MetricEpsilon(closed, "closed form", True, 0, 0)
    if dist.size ** 3 > limit:
        return MetricEpsilon(None, "not checked", False, 0, 0)
    check = metric_epsilon(matrix.matrix, dist, limit=limit)
    widened = _widened(check.value, rate, dist)
    return check if widened is None else MetricEpsilon(widened, check.scope, check.exact, check.triples,
                                                       check.candidates)


def _widened(value: float | None, rate: float, dist: Distances) -> float | None:
    """The metric epsilon of the doubles of an exponential mechanism's rows widened to the formula's law:
    ``+ 2.01 e / d_min`` for their relative error e (:func:`_entry_error`), rounded up."""
    if value is None or not math.isfinite(value):
        return None
    return _ulp_bound(Fraction(value) + Fraction(2.01 * _entry_error(rate, dist)) / Fraction(dist.min_positive))


def verify_metric_dp(matrix: ArrayLike | PramMatrix, distances: Distances, eps_d: float) -> bool | None:
    """Whether the stored matrix is ``eps_d``-metric-DP (proved by :func:`metric_epsilon`);
    ``None`` when the check was not run (too many triples).

    Parameters
    ----------
    matrix : array-like or PramMatrix, shape (S, S)
        The stored matrix.
    distances : Distances
        Distances between its categories (same order).
    eps_d : float
        The rate per unit of distance to check.

    Returns
    -------
    bool or None
        ``M[x, z] <= exp(eps_d d(x, x')) M[x', z]`` for every x, x', z.

    Raises
    ------
    ParameterError
        If the matrix and the distances have different shapes.

    Examples
    --------
    >>> from pramkit.design.distances import ordinal_distances
    >>> m = truncated_geometric(list("abcd"), 0.5)
    >>> verify_metric_dp(m, ordinal_distances("abcd"), 0.5), verify_metric_dp(m, ordinal_distances("abcd"), 0.4)
    (True, False)
    """
    r = metric_epsilon(matrix, distances)
    return None if r.value is None else bool(r.value <= eps_d)


def check_metric(eps_d: Any, spread: float, what: str) -> float:
    """``eps_d`` as a float, checked positive and with ``eps_d * spread`` at most
    :data:`MAX_EXPONENT` (the far entries ``exp(-eps_d spread)`` stay normal doubles).

    Parameters
    ----------
    eps_d : number
        The metric epsilon (per unit of distance).
    spread : float
        The largest distance the mechanism's exponent multiplies it by.
    what : str
        What ``spread`` is, for the message.

    Returns
    -------
    float
        ``eps_d``.

    Raises
    ------
    ParameterError
        If ``eps_d`` is not positive, or ``eps_d * spread`` exceeds :data:`MAX_EXPONENT`.

    Examples
    --------
    >>> check_metric(0.5, 10.0, "diameter")
    0.5
    >>> check_metric(10, 100.0, "diameter")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: metric epsilon 10 times the diameter 100 is 1000: the far entries would be exp(-1000), below double precision (at most 700); use a smaller metric epsilon or coarser categories
    """
    e = positive(eps_d, "metric epsilon")
    if e * spread > MAX_EXPONENT:
        raise ParameterError(f"metric epsilon {e:g} times the {what} {spread:g} is {e * spread:g}: the far entries "
                             f"would be exp(-{e * spread:.4g}), below double precision (at most {MAX_EXPONENT:g}); "
                             "use a smaller metric epsilon or coarser categories")
    return e


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
    :func:`metric_epsilon` and, if it still exceeded ``eps_d`` (a distance
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
        (:func:`metric_certificate`).

    Raises
    ------
    PramkitError
        If there are fewer than two categories.
    ParameterError
        If ``eps_d`` is out of range (:func:`check_metric`), or a distance table is too
        large to verify.

    Examples
    --------
    >>> from pramkit.design.distances import euclidean_distances
    >>> d = euclidean_distances(["a", "b", "c"], [[0, 0], [1, 0], [3, 0]], unit="km")
    >>> m = exponential_mechanism(d, 0.5)
    >>> cert = m.provenance.certificate
    >>> cert["metric_dp_verified"], cert["metric_epsilon_stored"] <= 0.5, m.epsilon <= 0.5 * 3
    (True, True, True)
    """
    start = time.perf_counter()
    dist = distances if categories is None else distances.reorder(categories)
    if dist.size < 2:
        raise PramkitError("a mechanism needs at least two categories")
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
        raise PramkitError(f"could not bring the exponential mechanism within metric epsilon {target:g}")
    if verified is None:
        raise ParameterError(f"a distance table need not be a metric and S = {dist.size} is too large to verify "
                             "the exponential mechanism triple by triple; give centroids or an adjacency list")
    closed = check.value if check.scope == "closed form" else None
    if closed is not None and (dist.size ** 3 <= CROSS_CHECK_TRIPLES or (
            dist.edges is not None and dist.size <= VERIFY_EDGES_MAX)):
        doubles = metric_epsilon(matrix.matrix, dist)   # the exact check, where it is cheap, widened to the law
        widened = _widened(doubles.value, rate, dist)
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
    adjacent pairs exactly (:func:`metric_epsilon`) and chains to all pairs.
    Pure epsilon: ``eps_d (S - 1)`` (the end columns).  The matrix is stored by
    its rate (no S x S array): the formula in exact arithmetic, whose adjacent
    rows differ by exactly ``e^eps_d``, so no margin is needed, and the engine
    samples it exactly (:class:`pramkit.sampling.GeometricSampler`), so the law
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
    PramkitError
        If there are fewer than two categories.
    ParameterError
        If ``eps_d`` is out of range (:func:`check_metric`).

    Examples
    --------
    >>> m = truncated_geometric(["0-17", "18-34", "35-64", "65+"], 1.0)
    >>> m.provenance.certificate["metric_dp_verified"], round(m.epsilon, 6)
    (True, 3.0)
    """
    start = time.perf_counter()
    s = len(categories)
    if s < 2:
        raise PramkitError("a mechanism needs at least two categories")
    target = positive(metric_epsilon_, "metric epsilon")  # no entry is stored, so none can underflow
    check = MetricEpsilon(target, "closed form", True, 0, 0)
    certificate = {**metric_certificate(check, target, "step", "Ghosh, Roughgarden and Sundararajan (2009)"),
                   "rate_used": target}
    prov = Provenance(method="truncated_geometric",
                      parameters={"metric_epsilon": target, "unit": "step", "categories": s},
                      certificate=certificate, seconds=time.perf_counter() - start)
    return PramMatrix.truncated_geometric(target, categories, prov)


def metric_certificate(check: MetricEpsilon, target: float, unit: str, reference: str) -> dict[str, Any]:
    """The metric-DP fields of a design's certificate: whether the stored matrix was verified
    to be ``target``-metric-DP (by :func:`metric_epsilon`, whose result ``check`` is), how, and
    the stored matrix's own metric epsilon.

    Parameters
    ----------
    check : MetricEpsilon
        The check of the stored matrix.
    target : float
        The eps_d the design was asked for.
    unit : str
        The distances' unit.
    reference : str
        The mechanism's source.

    Returns
    -------
    dict
        ``metric_dp_verified`` (None when not checked), ``metric_epsilon_stored``, how it was
        checked, the unit and the reference (and a note when not verified).

    Examples
    --------
    >>> c = metric_certificate(MetricEpsilon(0.49, "edges", True, 12, 1), 0.5, "step", "Ghosh et al. (2009)")
    >>> c["metric_dp_verified"], c["metric_check"]
    (True, 'edges')
    """
    certificate = {
        "metric_dp_verified": None if check.value is None else bool(check.value <= target),
        "metric_epsilon_stored": check.value,
        "metric_check": check.scope,
        "metric_check_exact": check.exact,
        "metric_check_triples": check.triples,
        "metric_check_candidates": check.candidates,
        "unit": unit,
        "reference": reference,
    }
    if check.value is None:
        certificate["metric_note"] = ("not verified triple by triple (S^3 above the limit); guaranteed by the "
                                      "construction's margin for a metric (docs/geography.md)")
    return certificate


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


def realised_metric_epsilon(matrix: PramMatrix, distances: Distances) -> float | None:
    """The metric epsilon of the law the engine realises (:func:`pramkit.engine.realised_law`), rounded up.

    A law sampled exactly has its matrix's (:func:`metric_epsilon`).  Otherwise the check runs on the
    realised integer units as doubles; each is within a relative ``2^-53`` of its integer, so the bound adds
    ``log((1 + 2^-53) / (1 - 2^-53)) <= 2.3e-16`` over the smallest distance, rounded up.  Entries far
    below ``2^-62`` are realised as a unit or a few, so in the far tails of a mechanism the realised metric
    epsilon can exceed the stored matrix's.

    Parameters
    ----------
    matrix : PramMatrix
        The matrix.
    distances : Distances
        Distances between its categories (same order).

    Returns
    -------
    float or None
        The realised metric epsilon (``None`` when :func:`metric_epsilon` does not check that many triples).

    Examples
    --------
    >>> from pramkit.design.distances import ordinal_distances
    >>> rr = PramMatrix([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> math.isclose(realised_metric_epsilon(rr, ordinal_distances("abc")), math.log(8))
    True
    """
    law = realised_law(matrix)
    if law.exact:  # the formula itself: its closed form (or, for a table, its doubles widened to it)
        return metric_epsilon(matrix, distances).value
    units = law.units if law.form == "dense" else np.array([law.weights(k) for k in range(matrix.size)])
    value = metric_epsilon(units.astype(float), distances).value
    if value is None or not math.isfinite(value):
        return value
    return math.nextafter(value + 2.3e-16 / distances.min_positive, math.inf)


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
    >>> from pramkit.design.distances import ordinal_distances
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

    >>> from pramkit.design.distances import ordinal_distances
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
        >>> from pramkit.design.distances import ordinal_distances
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
    >>> from pramkit.design.distances import ordinal_distances
    >>> r = row_measures([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.2, 0.8]], ordinal_distances("abc"), within=1)
    >>> r.distance.round(12).tolist(), r.kept.tolist(), r.within.round(12).tolist()
    ([0.2, 0.2, 0.2], [0.8, 0.8, 0.8], [1.0, 1.0, 1.0])
    """
    r = _radius(within)
    if isinstance(matrix, PramMatrix) and matrix.size == distances.size:
        if matrix.geometric_rate is not None and matrix.geometric_rate >= 1e-3 and _steps(distances, matrix):
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
    a, inner, end = matrix._geometric_parts()
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
    >>> from pramkit.design.distances import ordinal_distances
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
    >>> from pramkit.design.distances import ordinal_distances
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
    >>> from pramkit.design.distances import ordinal_distances
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
    >>> from pramkit.design.distances import ordinal_distances
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
    if within is not None and rr.share_within:
        out["within_ratio"] = mine.share_within / rr.share_within
    return out


# ---------------------------------------------------------------------------
# Design families (the registry signature: build(categories, p, epsilon, options))
# ---------------------------------------------------------------------------

def build_distance(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
                   options: Mapping[str, Any]) -> PramMatrix:
    """``dp`` with ``objective="distance"``: :func:`pramkit.design.dp_distance.dp_min_distance`
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
        ``distances`` (required), ``unit``, ``weights``.

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
    from pramkit.design.dp_distance import dp_min_distance

    if epsilon is None:
        raise ParameterError("the distance design is built to a budget: give epsilon")
    objective = "worst" if options.get("weights") == "worst" else "average"
    return dp_min_distance(p, epsilon, distances_for(options, categories), objective=objective)


def metric_options(options: Mapping[str, Any]) -> tuple[str, float]:
    """The ``metric`` family's ``(mechanism, metric_epsilon)``, validated.

    Parameters
    ----------
    options : mapping
        The family's options (:data:`METRIC_OPTIONS`).

    Returns
    -------
    tuple of (str, float)
        The mechanism (default ``"exponential"``) and eps_d.

    Raises
    ------
    ParameterError
        If an option is unknown, the mechanism is not one of :data:`MECHANISMS`, or
        ``metric_epsilon`` is missing or not positive.

    Examples
    --------
    >>> metric_options({"metric_epsilon": 0.5, "distances": "ordinal"})
    ('exponential', 0.5)
    >>> metric_options({"metric_epsilon": 0.5, "mechanism": "laplace"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: mechanism must be one of exponential, geometric, optimal, got 'laplace'
    """
    unknown = sorted(set(options) - set(METRIC_OPTIONS))
    if unknown:
        raise ParameterError(f"method 'metric' does not take {', '.join(unknown)}; its options are "
                             f"{', '.join(METRIC_OPTIONS)}")
    mechanism = options.get("mechanism") or MECHANISMS[0]
    if mechanism not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if options.get("metric_epsilon") is None:
        raise ParameterError("method 'metric' needs metric_epsilon (the budget per unit of distance)")
    return mechanism, positive(options["metric_epsilon"], "metric epsilon")


def build_metric(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
                 options: Mapping[str, Any]) -> PramMatrix:
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
    epsilon : None
        Must be None: the family takes no share of the budget.
    options : mapping
        :data:`METRIC_OPTIONS`.

    Returns
    -------
    PramMatrix
        The mechanism, its metric epsilon verified in its certificate.

    Raises
    ------
    ParameterError
        If the options are invalid (:func:`metric_options`), ``epsilon`` is given,
        ``dilation`` is given for another mechanism than ``"optimal"``, or the geometric
        mechanism is asked for on distances other than the category order.

    Examples
    --------
    On four ordered bands at eps_d = 0.5 per step: the pure epsilon is at most eps_d times
    the largest distance (3 steps), and the geometric mechanism reaches it.

    >>> options = {"distances": "ordinal", "metric_epsilon": 0.5}
    >>> bands = ["0-17", "18-34", "35-64", "65+"]
    >>> expo = build_metric(bands, None, None, options)
    >>> geom = build_metric(bands, None, None, {**options, "mechanism": "geometric"})
    >>> expo.provenance.method, expo.provenance.certificate["metric_dp_verified"], expo.epsilon <= 0.5 * 3
    ('exponential_mechanism', True, True)
    >>> geom.provenance.method, round(geom.epsilon, 9)
    ('truncated_geometric', 1.5)
    >>> build_metric(bands, None, 1.0, options)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: method 'metric' fixes its epsilon by metric_epsilon and the distances; it takes no share of the budget
    """
    mechanism, eps_d = metric_options(options)
    if options.get("dilation") is not None and mechanism != "optimal":
        raise ParameterError("dilation applies to mechanism 'optimal'")
    if epsilon is not None:
        raise ParameterError("method 'metric' fixes its epsilon by metric_epsilon and the distances; "
                             "it takes no share of the budget")
    if mechanism == "geometric":
        spec = options.get("distances")
        steps = isinstance(spec, Distances) and spec.kind == "ordinal" and spec.unit == "step"
        if not (spec is None or spec == "ordinal" or steps):
            raise ParameterError("the geometric mechanism works on the category order: distances 'ordinal'")
        return truncated_geometric(categories, eps_d)
    if mechanism == "optimal":
        from pramkit.design.dp_distance import SPANNER_DILATION, metric_min_distance

        dilation = options.get("dilation")
        return metric_min_distance(p, eps_d, distances_for(options, categories),
                                   dilation=SPANNER_DILATION if dilation is None else dilation)
    return exponential_mechanism(distances_for(options, categories), eps_d)
