"""Metric differential privacy of a stored matrix: measured exactly, bounded in closed form.

Metric differential privacy (d-privacy; Chatzikokolakis, Andres, Bordenabe and
Palamidessi 2013) asks, for distances d between the categories and a rate
``eps_d`` per unit of distance, ``M[x, z] <= exp(eps_d d(x, x')) M[x', z]`` for
all x, x', z.  This module measures it; the mechanisms that achieve it live in
:mod:`pramkit.design.metric.mechanisms` and :mod:`pramkit.design.dp.distance`.

:func:`metric_epsilon` is the smallest ``eps_d`` the stored doubles satisfy,
exactly: screened in floating point with a rigorous error bound, the
near-maximal triples decided in :mod:`decimal`, rounded up.  Over a path
metric (ordinal steps, adjacency graphs) only the edges are checked, and the
bound extends to every pair by chaining: O(S^2).  Otherwise every triple is
screened, O(S^3), up to :data:`EXHAUSTIVE_LIMIT` triples.  A matrix stored by
its parameters (the truncated geometric and the exponential mechanism) has a
closed form (:func:`exponential_metric_bound`), and
:func:`realised_metric_epsilon` measures the law the engine actually draws.

References
----------
Chatzikokolakis, Andres, Bordenabe and Palamidessi (2013), Broadening the scope of differential privacy using metrics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.distances import Distances, ordinal_distances
from pramkit.errors import ParameterError
from pramkit.matrix import PramMatrix
from pramkit.privacy.exact import UNIT, float_up, log_ratio_upper
from pramkit.privacy.law import realised_law
from pramkit.validate import positive

#: Largest number of (x, x', z) triples screened by :func:`metric_epsilon` over all pairs.
EXHAUSTIVE_LIMIT = 2_000_000_000


#: Largest number of near-maximal triples decided exactly; beyond, the rigorous floating bound is used.
EXACT_CANDIDATES = 20_000


#: Largest ``eps_d * d`` accepted: ``exp(-700)`` is still a normal double.
MAX_EXPONENT = 700.0


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

    >>> from pramkit.distances import ordinal_distances
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
    >>> from pramkit.distances import ordinal_distances
    >>> a = math.exp(-1.0)
    >>> w = np.array([[1, a, a * a], [a, 1, a], [a * a, a, 1]])
    >>> m = w / w.sum(axis=1, keepdims=True)
    >>> r = metric_epsilon(m, ordinal_distances("abc"))    # worst: column a, rows a and b
    >>> r.scope, r.exact, math.isclose(r.value, 1 + math.log((1 + 2 * a) / (1 + a + a * a)), rel_tol=1e-14)
    ('edges', True, True)
    """
    if isinstance(matrix, PramMatrix) and matrix.geometric_rate is not None and category_steps(distances, matrix):
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
    if np.any(m[:, released] <= 0):
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


def category_steps(distances: Distances, matrix: PramMatrix) -> bool:
    """Whether the distances are the category steps of the matrix's own order (what the truncated
    geometric mechanism is defined on).

    Parameters
    ----------
    distances : Distances
        The distances.
    matrix : PramMatrix
        The matrix.

    Returns
    -------
    bool
        Ordinal distances with unit steps along the matrix's categories.

    Examples
    --------
    >>> from pramkit.distances import euclidean_distances
    >>> m = PramMatrix([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], ["a", "b", "c"])
    >>> category_steps(ordinal_distances("abc"), m), category_steps(euclidean_distances("abc", [[0, 0], [1, 0], [3, 0]]), m)
    (True, False)
    """
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
    :attr:`~pramkit.distances.Distances.metric_error` (docs/perturbation.md); ``None`` for a
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
    if rate is None:
        raise ParameterError("the matrix is not an exponential mechanism stored by its parameters "
                             "(PramMatrix.exponential)")
    closed = exponential_metric_bound(rate, dist)
    if closed is not None:
        return MetricEpsilon(closed, "closed form", True, 0, 0)
    if dist.size ** 3 > limit:
        return MetricEpsilon(None, "not checked", False, 0, 0)
    check = metric_epsilon(matrix.matrix, dist, limit=limit)
    widened = widened_metric_epsilon(check.value, rate, dist)
    return check if widened is None else MetricEpsilon(widened, check.scope, check.exact, check.triples,
                                                       check.candidates)


def widened_metric_epsilon(value: float | None, rate: float, dist: Distances) -> float | None:
    """The metric epsilon of the doubles of an exponential mechanism's rows widened to the formula's law:
    ``+ 2.01 e / d_min`` for their relative error e (:func:`_entry_error`), rounded up.

    Parameters
    ----------
    value : float or None
        The metric epsilon of the stored doubles (:func:`metric_epsilon`).
    rate : float
        The mechanism's rate.
    dist : Distances
        Its distances.

    Returns
    -------
    float or None
        The bound for the formula's law; ``None`` when ``value`` is ``None`` or infinite.

    Examples
    --------
    >>> w = widened_metric_epsilon(0.5, 0.5, ordinal_distances("abc"))
    >>> 0.5 < w < 0.5 + 1e-13
    True
    """
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
    >>> from pramkit.distances import ordinal_distances
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
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
    >>> from pramkit.distances import ordinal_distances
    >>> rr = PramMatrix([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> math.isclose(realised_metric_epsilon(rr, ordinal_distances("abc")), math.log(8))
    True
    """
    law = realised_law(matrix)
    if law.exact:  # the formula itself: its closed form (or, for a table, its doubles widened to it)
        return metric_epsilon(matrix, distances).value
    units = law.unit_matrix()
    value = metric_epsilon(units.astype(float), distances).value
    if value is None or not math.isfinite(value):
        return value
    return math.nextafter(value + 2.3e-16 / distances.min_positive, math.inf)
