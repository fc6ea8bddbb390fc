"""Distances between the categories of a variable.

A :class:`Distances` holds the categories, a validated S x S matrix ``d``,
its kind and its unit.  The geographic and ordinal designs
(:mod:`pramkit.design.dp.distance`, :mod:`pramkit.design.metric.mechanisms`) read it: the
expected distance a record's value moves, ``sum_x p_x sum_z M[x, z] d(x, z)``,
is their utility loss, and metric differential privacy (Chatzikokolakis,
Andres, Bordenabe and Palamidessi 2013) bounds ``M[x, z] / M[x', z]`` by
``exp(eps_d d(x, x'))``.

Sources (:func:`read_distances` picks one from a spec):

* ``"ordinal"`` -- the declared category order, ``d(i, j) = |i - j|`` (unit
  ``"step"``), or ``|m_i - m_j|`` for band mid-points ``m`` (a CSV
  ``category,midpoint``, or :func:`ordinal_distances` with ``midpoints=``);
* a CSV of centroids ``category,x,y`` -- projected coordinates, Euclidean
  distance (unit ``"coordinate unit"``, or as given);
* a CSV of centroids ``category,lat,lon`` -- degrees, great-circle distance
  by the haversine formula on a sphere of radius :data:`EARTH_RADIUS_KM`
  (the IUGG mean radius), unit ``"km"``;
* a CSV ``category,neighbour`` -- an adjacency list (undirected), the number
  of borders crossed on a shortest path (:func:`scipy.sparse.csgraph.shortest_path`),
  unit ``"hops"``;
* a CSV ``from,to,distance`` -- a full table (each unordered pair at least
  once; both directions, if given, equal).

The order of ordinal distances is declared, never guessed (:func:`require_order`):
it is the order of a codebook or a prior, the numeric order of labels that
are all numbers, or the order of midpoints.  Text labels read from the data
(``5-9``, ``10-14``, ``100+``) have no order pramkit can trust: ``"ordinal"``
on them is an error that asks for the order.

Columns beyond the required ones are ignored.  Categories are matched by
their text (``str(label)``): every category of the variable must appear
exactly once (for an adjacency list: at least once, as an area or a
neighbour, and connected to the others), and no other category may appear.

Validation: a matrix is finite, non-negative, symmetric, zero on the
diagonal and positive off the diagonal (two categories at distance 0 could
not be told apart by a distance-based design); every failure is a
:class:`pramkit.errors.ParameterError` naming the row or the categories.

Path metrics.  For ordinal distances on the category order and for
adjacency graphs every distance is an integer and is the sum of the
distances along a path of *edges* (adjacent categories; bordering areas),
so a ratio bound checked on the edges holds for every pair by chaining
(:attr:`Distances.edges`, used by :func:`pramkit.design.metric.mechanisms.metric_epsilon`).

Examples
--------
>>> d = ordinal_distances(["low", "mid", "high"])
>>> d.matrix.tolist(), d.kind, d.unit
([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]], 'ordinal', 'step')
>>> round(haversine_km(51.5074, -0.1278, 48.8566, 2.3522), 1)   # London - Paris
343.6
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import FrozenInstanceError
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError
from pramkit.labels import Label

#: Mean Earth radius (IUGG), km: the sphere of the haversine distance.
EARTH_RADIUS_KM = 6371.0088
#: Kinds of :class:`Distances`.
KINDS = ("ordinal", "euclidean", "haversine", "graph", "table")
#: Column sets that identify a distance CSV (first match wins).
CSV_LAYOUTS: dict[str, tuple[str, ...]] = {
    "haversine": ("category", "lat", "lon"),
    "euclidean": ("category", "x", "y"),
    "graph": ("category", "neighbour"),
    "table": ("from", "to", "distance"),
    "ordinal": ("category", "midpoint"),
}


#: Kinds whose distances are computed from one point per category (:attr:`Distances.points`), row by
#: row on demand: no S x S array is stored.
POINT_KINDS = ("ordinal", "euclidean", "haversine")
#: Rows computed at a time by the O(S^2)-time passes over distances stored by their points.
ROWS_PER_PASS = 64


class Distances:
    """Validated distances between the categories of one variable.

    Either a stored matrix (``matrix``), or one point per category (``points``): a
    number on a line (``"ordinal"``, ``d = |m_i - m_j|``), projected coordinates
    (``"euclidean"``) or latitude and longitude in degrees (``"haversine"``).
    Distances stored by their points keep O(S) memory: a row is computed on demand
    (:meth:`rows`, O(S) each), :attr:`max`, :attr:`min_positive` and :attr:`neighbour`
    in one O(S^2)-time, O(S)-memory pass (O(S) for ordinal points), and :attr:`matrix`
    builds the dense array only when asked, from the same rows (so it is the same bits).

    Parameters
    ----------
    categories : sequence of labels
        The categories, in the order of the rows and columns.
    matrix : array-like, shape (S, S), optional
        ``matrix[i, j] = d(category i, category j)``: finite, non-negative,
        symmetric, 0 on the diagonal and positive elsewhere.  Not given with ``points``.
    kind : str
        One of :data:`KINDS` (where the distances came from).
    unit : str
        The unit of the distances (``"km"``, ``"step"``, ``"hops"``, ...).
    edges : array of shape (E, 2), optional
        For a path metric (module docstring): the pairs whose distances
        generate all others along paths.  Given only when every distance is
        an integer equal to a shortest-path sum over these edges.
    source : str
        Where the distances were read from (for the provenance).
    points : array-like, shape (S,) or (S, 2), optional
        One point per category, for the kinds of :data:`POINT_KINDS` (shape (S,) for
        ``"ordinal"``, strictly increasing); the distances are computed from them.

    The matrix (or the points) is stored as a read-only float64 copy.

    Examples
    --------
    >>> d = Distances(["a", "b"], [[0, 2.5], [2.5, 0]], kind="table", unit="km")
    >>> d.size, d.max, d.min_positive, d.points is None
    (2, 2.5, 2.5, True)
    >>> Distances(["a", "b"], [[0, 1], [2, 0]])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: distances are not symmetric: d('a', 'b') = 1 but d('b', 'a') = 2
    >>> e = Distances("abc", kind="euclidean", points=[[0, 0], [3, 4], [6, 8]])
    >>> e.rows([1]).tolist(), e.max, e.matrix[2].tolist()
    ([[5.0, 0.0, 5.0]], 10.0, [10.0, 5.0, 0.0])
    """

    categories: tuple[Label, ...]
    kind: str
    unit: str
    edges: np.ndarray | None
    source: str
    points: np.ndarray | None

    def __init__(self, categories: Sequence[Label], matrix: ArrayLike | None = None, kind: str = "table",
                 unit: str = "unit", edges: ArrayLike | None = None, source: str = "matrix", *,
                 points: ArrayLike | None = None) -> None:
        cats = tuple(categories)
        if kind not in KINDS:
            raise ParameterError(f"distance kind must be one of {', '.join(KINDS)}, got {kind!r}")
        state = self.__dict__
        if (matrix is None) == (points is None):
            raise ParameterError("distances are given by a matrix or by points, one of the two")
        if points is not None:
            if kind not in POINT_KINDS:
                raise ParameterError(f"distances of kind {kind!r} are not computed from points")
            pts = _validated_points(cats, points, kind)
            pts.setflags(write=False)
            state["points"], state["_matrix"] = pts, None
        else:
            assert matrix is not None  # one of matrix and points (checked above)
            m = validate_matrix(matrix, cats)
            m.setflags(write=False)
            state["points"], state["_matrix"] = None, m
        if edges is not None:
            edges = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
            edges.setflags(write=False)
        state.update(categories=cats, kind=kind, unit=unit, edges=edges, source=source)
        if points is not None and kind != "ordinal":
            self._stats  # noqa: B018 (the property validates: two centroids at distance 0 cannot be told apart

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        """What pickling keeps: the stored distances (not the caches)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_dense", "_stats", "_digest")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (f"Distances(S={self.size}, kind={self.kind!r}, unit={self.unit!r}, source={self.source!r}, "
                f"{'points' if self.points is not None else 'matrix'})")

    @property
    def matrix(self) -> np.ndarray:
        """The S x S distances (read-only); for distances stored by their points built on first
        access from :meth:`rows` (O(S^2) memory: 800 MB at S = 10 000)."""
        m = self.__dict__["_matrix"]
        if m is None:
            m = self.__dict__.get("_dense")
            if m is None:
                m = self.rows(np.arange(self.size))
                m.setflags(write=False)
                self.__dict__["_dense"] = m
        return m

    def rows(self, index: ArrayLike) -> np.ndarray:
        """Rows ``index`` of the distances, shape (len(index), S): O(S) time and memory per row.

        Parameters
        ----------
        index : array-like of int
            Category positions.

        Returns
        -------
        numpy.ndarray
            ``d(category index[r], category j)``; the same bits as :attr:`matrix`'s rows.

        Examples
        --------
        >>> ordinal_distances("abcd").rows([0, 3]).tolist()
        [[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]]
        """
        idx = np.asarray(index, dtype=np.intp).ravel()
        if self.points is None:
            return np.array(self.__dict__["_matrix"][idx])
        p = self.points
        if self.kind == "ordinal":
            return np.abs(p[idx][:, None] - p[None, :])
        if self.kind == "euclidean":
            return np.hypot(p[idx, 0][:, None] - p[None, :, 0], p[idx, 1][:, None] - p[None, :, 1])
        lat, lon = p[idx, 0][:, None], p[idx, 1][:, None]
        out = np.maximum(haversine_km(lat, lon, p[None, :, 0], p[None, :, 1]),
                         haversine_km(p[None, :, 0], p[None, :, 1], lat, lon))   # exactly symmetric
        out[np.arange(idx.size), idx] = 0.0
        return out

    def passes(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The rows in blocks of :data:`ROWS_PER_PASS`: ``(index, rows(index))``, O(S) memory each.

        Examples
        --------
        >>> [(i.tolist(), r.shape) for i, r in ordinal_distances("abc").passes()]
        [([0, 1, 2], (3, 3))]
        """
        for start in range(0, self.size, ROWS_PER_PASS):
            idx = np.arange(start, min(start + ROWS_PER_PASS, self.size))
            yield idx, self.rows(idx)

    @cached_property
    def _stats(self) -> tuple[float, float, float]:
        """The largest distance, the smallest positive one and the median nearest-other distance;
        for points, in one pass over the rows (O(S) for ordinal points), refusing two categories
        at distance 0."""
        s = self.size
        if s < 2:
            return 0.0, math.inf, 0.0
        if self.points is not None and self.kind == "ordinal":
            p = self.points
            gaps = p[1:] - p[:-1]                      # the nearest pairs of an increasing line
            nearest = np.minimum(np.append(gaps, np.inf), np.append(np.inf, gaps))
            return float(p[-1] - p[0]), float(gaps.min()), float(np.median(nearest))
        largest, smallest, nearest = 0.0, math.inf, np.empty(s)
        for idx, block in self.passes():
            largest = max(largest, float(block.max()))
            block[np.arange(idx.size), idx] = np.inf
            near = block.min(axis=1)
            nearest[idx] = near
            smallest = min(smallest, float(near.min()))
            if smallest == 0.0:
                r = int(np.flatnonzero(near == 0)[0])
                i, j = int(idx[r]), int(np.flatnonzero(block[r] == 0)[0])
                raise ParameterError(f"distances: d({_name(self.categories[i])}, {_name(self.categories[j])}) = 0; "
                                     "different categories must be at a positive distance")
        return largest, smallest, float(np.median(nearest))

    @property
    def size(self) -> int:
        """Number of categories S."""
        return len(self.categories)

    @property
    def max(self) -> float:
        """The largest distance (the diameter)."""
        if self.points is not None:
            return self._stats[0]
        return float(self.__dict__["_matrix"].max())

    @property
    def min_positive(self) -> float:
        """The smallest distance between two different categories."""
        s = self.size
        if s < 2:
            return math.inf
        if self.points is not None:
            return self._stats[1]
        return float(self.__dict__["_matrix"][~np.eye(s, dtype=bool)].min())

    @property
    def neighbour(self) -> float:
        """The median over categories of the distance to the nearest other category: a
        typical step between neighbours (1 for ordinal steps and adjacency graphs; 0 for S = 1).

        Examples
        --------
        >>> euclidean_distances("abcd", [[0, 0], [1, 0], [5, 0], [9, 0]]).neighbour   # nearest: 1, 1, 4, 4
        2.5
        """
        if self.size < 2:
            return 0.0
        if self.points is not None:
            return self._stats[2]
        off = self.matrix + np.diag(np.full(self.size, np.inf))
        return float(np.median(off.min(axis=1)))

    @property
    def digest(self) -> str:
        """SHA-256 of the matrix's bytes (row after row): identifies the distances in a provenance;
        for points, hashed row by row without building the matrix."""
        cached = self.__dict__.get("_digest")
        if cached is None:
            h = hashlib.sha256()
            if self.points is None:
                h.update(self.__dict__["_matrix"].tobytes())
            else:
                for _, block in self.passes():
                    h.update(np.ascontiguousarray(block).tobytes())
            cached = self.__dict__["_digest"] = h.hexdigest()
        return cached

    @property
    def metric_error(self) -> float | None:
        """A bound ``a`` on ``|d~(i, j) - d(i, j)|`` for a metric d, where d~ are the stored
        (computed) distances: so ``d~(x, z) <= d~(x, y) + d~(y, z) + 3a`` (docs/perturbation.md).
        0 for integer steps and hops (exact); one rounding of each difference of increasing midpoints;
        for centroids, 4 roundings of the largest distance (the differences of coordinates and
        ``hypot``), and for the haversine formula 64 roundings of half the circumference (its angles
        are computed to a few ulps of pi), or ``2 R sqrt(64 u)`` when two areas are more than a quarter
        of the circumference apart (``arcsin`` near 1).  ``None`` for a table, which need not be a metric.

        Examples
        --------
        >>> ordinal_distances("abc").metric_error, Distances("ab", [[0, 1], [1, 0]]).metric_error is None
        (0.0, True)
        """
        u = 2.0 ** -53
        if self.kind == "table":
            return None
        if self.kind == "graph" or (self.kind == "ordinal" and self.edges is not None):
            return 0.0
        if self.kind == "ordinal":
            return u * self.max
        if self.kind == "euclidean":
            return 4.0 * u * self.max
        if self.max > EARTH_RADIUS_KM * math.pi / 2.0:
            return 2.0 * EARTH_RADIUS_KM * math.sqrt(64.0 * u)
        return 64.0 * u * math.pi * EARTH_RADIUS_KM

    def same(self, other: Distances) -> bool:
        """The same distances: categories, kind, unit and every distance (points compared as points).

        Examples
        --------
        >>> ordinal_distances("ab").same(ordinal_distances("ab")), ordinal_distances("ab").same(ordinal_distances("ba"))
        (True, False)
        """
        if not isinstance(other, Distances) or (self.categories, self.kind, self.unit) != (
                other.categories, other.kind, other.unit):
            return False
        if self.points is not None and other.points is not None:
            return bool(np.array_equal(self.points, other.points))
        return self.digest == other.digest

    def reorder(self, categories: Sequence[Label]) -> Distances:
        """The same distances with rows and columns in the order of ``categories``
        (matched by their text, as the readers do).

        Parameters
        ----------
        categories : sequence of labels
            The new order: the same categories (by text), each once.

        Returns
        -------
        Distances
            The permuted distances; the edges of a path metric follow the categories.

        Raises
        ------
        ParameterError
            If ``categories`` are not exactly the distances' categories (:func:`match_categories`).

        Examples
        --------
        >>> d = ordinal_distances(["a", "b", "c"])
        >>> r = d.reorder(["c", "a", "b"])
        >>> r.categories, r.matrix[0].tolist()                   # c is 2 steps from a, 1 from b
        (('c', 'a', 'b'), [0.0, 2.0, 1.0])
        >>> bool((r.matrix == r.matrix.T).all()), r.matrix.diagonal().tolist()
        (True, [0.0, 0.0, 0.0])
        >>> r.edges.tolist()                                      # a-b and b-c, in the new positions
        [[1, 2], [2, 0]]
        """
        index = match_categories(self.categories, categories, f"distances ({self.source})")
        if np.array_equal(index, np.arange(self.size)) and tuple(categories) == self.categories:
            return self
        edges = None
        if self.edges is not None:
            inverse = np.empty(self.size, dtype=np.intp)
            inverse[index] = np.arange(self.size)
            edges = inverse[self.edges]
        if self.points is not None and not (self.kind == "ordinal" and np.any(np.diff(index) < 0)):
            return Distances(tuple(categories), None, self.kind, self.unit, edges, self.source,
                             points=self.points[index])
        return Distances(tuple(categories), self.matrix[np.ix_(index, index)], self.kind, self.unit, edges,
                         self.source)

    def to_dict(self) -> dict[str, Any]:
        """A JSON summary for a provenance (not the matrix).

        Returns
        -------
        dict
            ``kind``, ``unit``, ``categories`` (S), ``source``, ``max``, ``min_positive``,
            ``sha256`` (:attr:`digest`, which identifies the matrix) and ``path_metric``.

        Examples
        --------
        >>> summary = ordinal_distances(["low", "mid", "high"]).to_dict()
        >>> {k: summary[k] for k in ("kind", "unit", "categories", "max", "min_positive", "path_metric")}
        {'kind': 'ordinal', 'unit': 'step', 'categories': 3, 'max': 2.0, 'min_positive': 1.0, 'path_metric': True}
        >>> summary["sha256"] == ordinal_distances(["x", "y", "z"]).digest      # the same matrix
        True
        """
        return {"kind": self.kind, "unit": self.unit, "categories": self.size, "source": self.source,
                "max": self.max, "min_positive": self.min_positive, "sha256": self.digest,
                "path_metric": self.edges is not None}


def _validated_points(categories: tuple, points: ArrayLike, kind: str) -> np.ndarray:
    """Points as a float64 copy of shape (S,) (ordinal: finite, strictly increasing) or (S, 2) (finite;
    haversine: latitude within 90 and longitude within 180 degrees)."""
    s = len(categories)
    if s == 0:
        raise ParameterError("distances need at least one category")
    try:
        pts = np.array(points, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ParameterError(f"the points of {kind} distances must be numbers") from None
    if pts.shape != ((s,) if kind == "ordinal" else (s, 2)):
        raise ParameterError(f"{kind} distances need {'one number' if kind == 'ordinal' else 'two coordinates'} "
                             f"per category ({s}), got shape {pts.shape}")
    bad = np.flatnonzero(~np.isfinite(pts).reshape(s, -1).all(axis=1))
    if bad.size:
        raise ParameterError(f"the point of category {categories[int(bad[0])]!r} is not finite")
    if kind == "ordinal" and np.any(np.diff(pts) <= 0):
        i = int(np.flatnonzero(np.diff(pts) <= 0)[0])
        raise ParameterError(f"midpoints must increase along the category order: {categories[i]!r} has "
                             f"{pts[i]:g}, the next category {categories[i + 1]!r} has {pts[i + 1]:g}")
    return pts


def _name(label: Label) -> str:
    return repr(label)


def validate_matrix(matrix: ArrayLike, categories: Sequence[Label]) -> np.ndarray:
    """A distance matrix as a float array, after checking it (module docstring).

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        The distances.
    categories : sequence of labels
        The S categories, for the messages.

    Returns
    -------
    numpy.ndarray
        A float64 copy: finite, non-negative, symmetric, 0 on the diagonal and positive elsewhere.

    Raises
    ------
    ParameterError
        Naming the first offending entry by its categories.

    Examples
    --------
    >>> validate_matrix([[0, 1], [1, 0]], ["a", "b"]).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> validate_matrix([[0, 0], [0, 0]], ["a", "b"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: distances: d('a', 'b') = 0; different categories must be at a positive distance
    """
    cats = list(categories)
    try:
        m = np.array(matrix, dtype=float, copy=True)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"the distance matrix is not numeric: {exc}") from None
    s = len(cats)
    if m.shape != (s, s):
        raise ParameterError(f"the distance matrix has shape {m.shape}, but there are {s} categories")
    if s == 0:
        raise ParameterError("distances need at least one category")
    bad = ~np.isfinite(m)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ParameterError(f"distances: d({_name(cats[i])}, {_name(cats[j])}) = {m[i, j]} is not finite")
    if (m < 0).any():
        i, j = np.argwhere(m < 0)[0]
        raise ParameterError(f"distances: d({_name(cats[i])}, {_name(cats[j])}) = {float(m[i, j])!r} is negative")
    diag = np.flatnonzero(np.diagonal(m) != 0)
    if diag.size:
        i = int(diag[0])
        raise ParameterError(f"distances: d({_name(cats[i])}, {_name(cats[i])}) = {float(m[i, i])!r}; "
                             "the distance of a category to itself must be 0")
    asym = m != m.T
    if asym.any():
        i, j = np.argwhere(asym)[0]
        raise ParameterError(f"distances are not symmetric: d({_name(cats[i])}, {_name(cats[j])}) = {m[i, j]:g} "
                             f"but d({_name(cats[j])}, {_name(cats[i])}) = {m[j, i]:g}")
    zero = (m == 0) & ~np.eye(s, dtype=bool)
    if zero.any():
        i, j = np.argwhere(zero)[0]
        raise ParameterError(f"distances: d({_name(cats[i])}, {_name(cats[j])}) = 0; different categories must be "
                             "at a positive distance")
    return m


def match_categories(found: Sequence[Any], categories: Sequence[Label], what: str) -> np.ndarray:
    """Positions in ``found`` of each of ``categories``, matched by text.

    Every category must occur exactly once in ``found`` and ``found`` may hold
    nothing else; the error names the missing, repeated or unknown ones.

    Parameters
    ----------
    found : sequence
        The categories as a source lists them (e.g. the rows of a CSV).
    categories : sequence of labels
        The variable's categories.
    what : str
        The source, for the messages.

    Returns
    -------
    numpy.ndarray of int
        ``found[index[i]]`` is ``categories[i]`` (as text).

    Raises
    ------
    ParameterError
        If two categories have the same text, or a category is missing, repeated or unknown.

    Examples
    --------
    >>> match_categories(["b", "a", "c"], ["a", "b", "c"], "areas.csv").tolist()
    [1, 0, 2]
    >>> match_categories([1, 2], ["2", "1"], "areas.csv").tolist()           # by text
    [1, 0]
    >>> match_categories(["a", "b", "z"], ["a", "b"], "areas.csv")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: areas.csv: categories ['z'] are not categories of the variable
    """
    texts = [str(c) for c in categories]
    if len(set(texts)) != len(texts):
        dup = sorted({t for t in texts if texts.count(t) > 1})
        raise ParameterError(f"{what}: categories {dup} have the same text; distances match categories by text")
    where: dict[str, int] = {}
    repeated = []
    for i, f in enumerate(found):
        key = str(f)
        if key in where:
            repeated.append(key)
        where[key] = i
    if repeated:
        raise ParameterError(f"{what}: category {repeated[0]!r} appears more than once")
    missing = [t for t in texts if t not in where]
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise ParameterError(f"{what}: no entry for categories {missing[:5]}{more}")
    unknown = sorted(set(where) - set(texts))
    if unknown:
        more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
        raise ParameterError(f"{what}: categories {unknown[:5]}{more} are not categories of the variable")
    return np.array([where[t] for t in texts], dtype=np.intp)


def numeric_order(categories: Sequence[Label]) -> bool:
    """Whether the categories (missing aside) are all numbers or numeric text, in increasing order of value.

    Parameters
    ----------
    categories : sequence of labels
        The categories, in their order.

    Returns
    -------
    bool

    Examples
    --------
    >>> numeric_order([1, 2, 10]), numeric_order(["05", "10", "100"]), numeric_order(["10", "5"])
    (True, True, False)
    >>> numeric_order(["5-9", "10-14"])
    False
    """
    from pramkit.codebook import label_key, numeric_labels

    labels = [c for c in categories if c is not None]
    if not numeric_labels(labels):
        return False
    values = [Decimal(str(label_key(c, numeric=True))) for c in labels]  # a numeric label's key is its text
    return all(a < b for a, b in itertools.pairwise(values))


def require_order(variable: str | None, categories: Sequence[Label], *, declared: bool,
                  needs: str = "ordinal distances") -> None:
    """:class:`ParameterError` unless the categories' order is declared (a codebook, a prior) or numeric.

    Ordinal distances and the geometric mechanism read the order of the
    categories.  Text labels read from the data are sorted as text, which is
    no order of the values they stand for (``"10-14"`` sorts before ``"5-9"``):
    pramkit does not guess it.

    Parameters
    ----------
    variable : str or None
        The variable's name, for the message.
    categories : sequence of labels
        Its categories, in their order.
    declared : bool
        Whether the order was declared (a codebook, a prior, an ordered categorical).
    needs : str
        What reads the order, for the message.

    Raises
    ------
    ParameterError
        The order was read from the data and the labels are not numbers in increasing order.

    Examples
    --------
    >>> require_order("age", [0, 5, 10], declared=False)  # numbers: their order
    >>> require_order("age", ["5-9", "10-14", "100+"], declared=True)  # declared: as declared
    >>> require_order("age", ["10-14", "100+", "5-9"], declared=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: variable 'age': ordinal distances need the order of its categories, and text labels read from the data ('10-14', '100+', '5-9') have none pramkit can trust; declare it: a codebook ...
    """
    if declared or numeric_order(categories):
        return
    labels = [c for c in categories if c is not None]
    shown = ", ".join(repr(c) for c in labels[:8]) + (", ..." if len(labels) > 8 else "")
    where = "the variable" if variable is None else f"variable {variable!r}"
    raise ParameterError(f"{where}: {needs} need the order of its categories, and text "
                         f"labels read from the data ({shown}) have none pramkit can trust; declare it: a codebook "
                         "(--categories FILE, columns variable,category, one row per category in order)"
                         + (", a prior (--prior) listing them in order, or midpoints (--distances FILE, columns "
                            "category,midpoint)" if needs == "ordinal distances" else
                            " or a prior (--prior) listing them in order"))


# ---------------------------------------------------------------------------
# Constructors
# ---------------------------------------------------------------------------

def ordinal_distances(categories: Sequence[Label], midpoints: ArrayLike | None = None, *,
                      unit: str | None = None) -> Distances:
    """Distances along the declared order of the categories.

    Without ``midpoints``: ``d(i, j) = |i - j|`` (unit ``"step"``), a path
    metric whose edges are the adjacent categories.  With ``midpoints``
    (e.g. the middle of each age band): ``d(i, j) = |m_i - m_j|``, which
    must increase strictly along the order.

    Parameters
    ----------
    categories : sequence of labels
        The categories, in their order.
    midpoints : array-like, optional
        One number per category, strictly increasing.
    unit : str, optional
        The unit (default ``"step"``, or ``"unit"`` with midpoints).

    Returns
    -------
    Distances
        Kind ``"ordinal"``; a path metric (with edges) without midpoints.

    Raises
    ------
    ParameterError
        If there is no category, or the midpoints are not finite numbers, one per
        category, increasing along the order.

    Examples
    --------
    >>> ordinal_distances(["0-9", "10-19", "20-39"], [5, 15, 30], unit="years").matrix[0].tolist()
    [0.0, 10.0, 25.0]
    >>> ordinal_distances(["a", "b", "c"]).edges.tolist()
    [[0, 1], [1, 2]]
    """
    cats = tuple(categories)
    s = len(cats)
    if s < 1:
        raise ParameterError("ordinal distances need at least one category")
    if midpoints is None:
        idx = np.arange(s, dtype=float)
        edges = np.column_stack([np.arange(s - 1), np.arange(1, s)])
        return Distances(cats, None, "ordinal", unit or "step", edges, "ordinal", points=idx)
    try:
        m = np.asarray(midpoints, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError(f"midpoints must be numbers, got {midpoints!r}") from None
    if m.size != s:
        raise ParameterError(f"{m.size} midpoints given for {s} categories")
    if not np.all(np.isfinite(m)):
        i = int(np.flatnonzero(~np.isfinite(m))[0])
        raise ParameterError(f"the midpoint of category {cats[i]!r} is {m[i]}; midpoints must be finite")
    steps = np.diff(m)
    if np.any(steps <= 0):
        i = int(np.flatnonzero(steps <= 0)[0])
        raise ParameterError(f"midpoints must increase along the category order: {cats[i]!r} has {m[i]:g}, "
                             f"the next category {cats[i + 1]!r} has {m[i + 1]:g}")
    return Distances(cats, None, "ordinal", unit or "unit", None, "ordinal midpoints", points=m)


def euclidean_distances(categories: Sequence[Label], xy: ArrayLike, *, unit: str = "coordinate unit",
                        source: str = "centroids") -> Distances:
    """Euclidean distances between projected centroids ``xy`` (shape (S, 2)).

    Parameters
    ----------
    categories : sequence of labels
        The categories.
    xy : array-like, shape (S, 2)
        Their projected coordinates.
    unit : str
        The coordinates' unit.
    source : str
        Where they were read from (for the provenance).

    Returns
    -------
    Distances
        Kind ``"euclidean"``.

    Raises
    ------
    ParameterError
        If the centroids are not finite numbers of shape (S, 2), or two coincide.

    Examples
    --------
    >>> float(euclidean_distances(["a", "b"], [[0, 0], [3, 4]], unit="km").matrix[0, 1])
    5.0
    """
    pts = _points(categories, xy, "x, y")
    return Distances(tuple(categories), None, "euclidean", unit, None, source, points=pts)


def haversine_km(lat1: ArrayLike, lon1: ArrayLike, lat2: ArrayLike, lon2: ArrayLike) -> np.ndarray | float:
    """Great-circle distance in km on a sphere of radius :data:`EARTH_RADIUS_KM`
    (haversine formula; degrees in, broadcasting).

    Parameters
    ----------
    lat1, lon1, lat2, lon2 : array-like
        Latitudes and longitudes in degrees.

    Returns
    -------
    float or numpy.ndarray
        The distances in km (a float for scalar inputs).

    Examples
    --------
    >>> round(float(haversine_km(0.0, 0.0, 0.0, 1.0)), 4)        # one degree on the equator
    111.1951
    """
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dlat = p2 - p1
    dlon = np.radians(np.asarray(lon2, dtype=float) - np.asarray(lon1, dtype=float))
    h = np.sin(dlat / 2.0) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dlon / 2.0) ** 2
    out = 2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))
    return float(out) if np.ndim(out) == 0 else out


def great_circle_distances(categories: Sequence[Label], latlon: ArrayLike, *,
                           source: str = "centroids") -> Distances:
    """Great-circle distances (km) between centroids given as (lat, lon) degrees.

    Parameters
    ----------
    categories : sequence of labels
        The categories.
    latlon : array-like, shape (S, 2)
        Their centroids, latitude then longitude, in degrees.
    source : str
        Where they were read from (for the provenance).

    Returns
    -------
    Distances
        Kind ``"haversine"``, unit ``"km"`` (:func:`haversine_km`, made exactly symmetric).

    Raises
    ------
    ParameterError
        If a centroid is not finite or out of range (latitude beyond 90, longitude beyond
        180 degrees), or two coincide.

    Examples
    --------
    >>> d = great_circle_distances(["a", "b"], [[0, 0], [0, 1]])
    >>> round(float(d.matrix[0, 1]), 4), d.unit
    (111.1951, 'km')
    """
    pts = _points(categories, latlon, "lat, lon")
    cats = tuple(categories)
    for col, name, limit in ((0, "lat", 90.0), (1, "lon", 180.0)):
        bad = np.flatnonzero(np.abs(pts[:, col]) > limit)
        if bad.size:
            i = int(bad[0])
            raise ParameterError(f"centroid of category {cats[i]!r}: {name} = {pts[i, col]:g} is outside "
                                 f"[-{limit:g}, {limit:g}] degrees")
    return Distances(cats, None, "haversine", "km", None, source, points=pts)  # rows made exactly symmetric


def graph_distances(categories: Sequence[Label], pairs: Iterable[tuple[Any, Any]], *,
                    source: str = "adjacency") -> Distances:
    """Shortest-path distances (number of borders crossed) on an undirected graph.

    ``pairs`` are (category, neighbour) texts or labels; each pair is an
    undirected edge (listing it in both directions is allowed).

    Parameters
    ----------
    categories : sequence of labels
        The areas.
    pairs : iterable of (label, label)
        The borders.
    source : str
        Where they were read from (for the messages and the provenance).

    Returns
    -------
    Distances
        Kind ``"graph"``, unit ``"hops"``, a path metric whose edges are the borders.

    Raises
    ------
    ParameterError
        If a pair names an unknown category or a category as its own neighbour, a category
        has no neighbour, or the graph is not connected.

    Examples
    --------
    >>> graph_distances(["a", "b", "c"], [("a", "b"), ("b", "c")]).matrix[0].tolist()
    [0.0, 1.0, 2.0]
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components, shortest_path

    cats = tuple(categories)
    s = len(cats)
    index = {str(c): i for i, c in enumerate(cats)}
    if len(index) != s:
        raise ParameterError("categories with the same text cannot be told apart in an adjacency list")
    rows, cols = [], []
    seen_nodes: set[int] = set()
    for n, (a, b) in enumerate(pairs, start=1):
        ka, kb = str(a), str(b)
        for key in (ka, kb):
            if key not in index:
                raise ParameterError(f"{source}, pair {n}: {key!r} is not a category of the variable")
        if ka == kb:
            raise ParameterError(f"{source}, pair {n}: category {ka!r} is listed as its own neighbour")
        i, j = index[ka], index[kb]
        rows += [i, j]
        cols += [j, i]
        seen_nodes.update((i, j))
    if s > 1:
        lonely = [cats[i] for i in range(s) if i not in seen_nodes]
        if lonely:
            raise ParameterError(f"{source}: categories {[str(c) for c in lonely[:5]]} have no neighbour")
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(s, s)).tocsr()
    graph.data[:] = 1.0                                   # duplicates summed by tocsr: back to 1
    count, label = connected_components(graph, directed=False)
    if count > 1:
        first = [str(cats[int(np.flatnonzero(label == k)[0])]) for k in range(min(count, 4))]
        raise ParameterError(f"{source}: the adjacency graph has {count} separate parts (e.g. around "
                             f"{', '.join(repr(f) for f in first)}); every area must be reachable from every other")
    d = shortest_path(graph, method="D", directed=False, unweighted=True)
    coo = graph.tocoo()
    keep = coo.row < coo.col
    edges = np.column_stack([coo.row[keep], coo.col[keep]])
    return Distances(cats, d, "graph", "hops", edges, source)


def table_distances(categories: Sequence[Label], rows: Iterable[tuple[Any, Any, Any]], *,
                    unit: str = "unit", source: str = "table") -> Distances:
    """Distances from ``(from, to, distance)`` rows covering every unordered pair.

    Parameters
    ----------
    categories : sequence of labels
        The categories.
    rows : iterable of (label, label, number)
        One row per pair (both directions allowed, if equal).
    unit : str
        The distances' unit.
    source : str
        Where they were read from (for the messages and the provenance).

    Returns
    -------
    Distances
        Kind ``"table"``.

    Raises
    ------
    ParameterError
        If a row names an unknown category, a distance is not a number, a pair is repeated
        or given two different values, a pair is missing, or the matrix is invalid
        (:func:`validate_matrix`).

    Examples
    --------
    >>> table_distances(["a", "b", "c"], [("a", "b", 1), ("a", "c", 2), ("b", "c", 1.5)]).matrix[2].tolist()
    [2.0, 1.5, 0.0]
    """
    cats = tuple(categories)
    s = len(cats)
    index = {str(c): i for i, c in enumerate(cats)}
    d = np.full((s, s), np.nan)
    np.fill_diagonal(d, 0.0)
    given = np.zeros((s, s), dtype=bool)
    for n, (a, b, value) in enumerate(rows, start=1):
        ka, kb = str(a), str(b)
        for key in (ka, kb):
            if key not in index:
                raise ParameterError(f"{source}, row {n}: {key!r} is not a category of the variable")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{source}, row {n}: distance {value!r} is not a number") from None
        i, j = index[ka], index[kb]
        if given[i, j]:
            raise ParameterError(f"{source}, row {n}: the pair ({ka!r}, {kb!r}) appears more than once")
        given[i, j] = True
        if i == j:
            d[i, i] = x
            continue
        if given[j, i] and d[j, i] != x:
            raise ParameterError(f"{source}: distances are not symmetric: d({ka!r}, {kb!r}) = {x:g} but "
                                 f"d({kb!r}, {ka!r}) = {d[j, i]:g}")
        d[i, j] = d[j, i] = x
    missing = np.argwhere(np.isnan(d))
    if missing.size:
        i, j = missing[0]
        raise ParameterError(f"{source}: no distance for the pair ({str(cats[i])!r}, {str(cats[j])!r}) "
                             f"({len(missing) // 2} pairs missing)")
    return Distances(cats, d, "table", unit, None, source)


def _points(categories: Sequence[Label], xy: ArrayLike, names: str) -> np.ndarray:
    try:
        pts = np.asarray(xy, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"centroids ({names}) must be numbers") from None
    cats = list(categories)
    if pts.shape != (len(cats), 2):
        raise ParameterError(f"centroids must have shape ({len(cats)}, 2) ({names}), got {pts.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(pts), axis=1))
    if bad.size:
        raise ParameterError(f"the centroid of category {cats[int(bad[0])]!r} is not finite: {pts[bad[0]].tolist()}")
    return pts


# ---------------------------------------------------------------------------
# CSV readers
# ---------------------------------------------------------------------------

def _read_csv(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in (reader.fieldnames or [])]
            rows = []
            for line, row in enumerate(reader, start=2):
                clean = {(k or "").strip(): (v or "").strip() for k, v in row.items() if k is not None}
                if not any(clean.values()):
                    continue
                clean["_line"] = str(line)
                rows.append(clean)
    except FileNotFoundError:
        raise ParameterError(f"distance file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ParameterError(f"cannot read distance file {str(path)!r}: {exc}") from None
    return header, rows


def csv_layout(header: Sequence[str]) -> str:
    """The kind of distance CSV its header describes (:data:`CSV_LAYOUTS`).

    Parameters
    ----------
    header : sequence of str
        The CSV's column names (case and surrounding spaces ignored; extra columns allowed).

    Returns
    -------
    str
        The first kind of :data:`CSV_LAYOUTS` whose columns are all present.

    Raises
    ------
    ParameterError
        If no layout matches.

    Examples
    --------
    >>> csv_layout(["Category", "Lat", "Lon", "population"]), csv_layout(["from", "to", "distance"])
    ('haversine', 'table')
    >>> csv_layout(["area", "x"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: a distance CSV needs the columns of one of: category,lat,lon; category,x,y; category,neighbour; from,to,distance; category,midpoint; got area, x
    """
    cols = {h.strip().lower() for h in header}
    for kind, needed in CSV_LAYOUTS.items():
        if set(needed) <= cols:
            return kind
    layouts = "; ".join(",".join(v) for v in CSV_LAYOUTS.values())
    raise ParameterError(f"a distance CSV needs the columns of one of: {layouts}; got {', '.join(header)}")


def read_distance_csv(path: str | Path, categories: Sequence[Label], *, unit: str | None = None,
                      declared_order: bool = True) -> Distances:
    """Read a distance CSV of any layout of :data:`CSV_LAYOUTS` (module docstring).

    Parameters
    ----------
    path : str or Path
        The CSV (UTF-8, a byte-order mark allowed).
    categories : sequence of labels
        The variable's categories, matched by text.
    unit : str, optional
        The distances' unit (centroids ``x, y``, tables and midpoints; latitude and
        longitude give km, adjacency lists hops).
    declared_order : bool
        Whether the order of ``categories`` is declared (:func:`require_order`).  Midpoints
        must increase along a declared order; otherwise they declare the order themselves.

    Returns
    -------
    Distances
        In the order of ``categories``.

    Raises
    ------
    ParameterError
        If the file is missing, unreadable or empty, its header matches no layout, a value
        is not a number, its categories do not match (:func:`match_categories`), or midpoints
        do not increase along a declared order (or two are equal).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     f = Path(folder, "areas.csv")
    ...     _ = f.write_text("category,x,y\\nA,0,0\\nB,3,4\\nC,6,8\\n")
    ...     d = read_distance_csv(f, ["A", "B", "C"], unit="km")
    >>> d.kind, d.unit, d.matrix[0].tolist()
    ('euclidean', 'km', [0.0, 5.0, 10.0])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     f = Path(folder, "borders.csv")
    ...     _ = f.write_text("category,neighbour\\nA,B\\nB,C\\n")
    ...     d = read_distance_csv(f, ["A", "B", "C"])
    >>> d.kind, d.unit, d.matrix[0].tolist()                      # A to C crosses two borders
    ('graph', 'hops', [0.0, 1.0, 2.0])
    """
    header, rows = _read_csv(path)
    kind = csv_layout(header)
    name = Path(path).name
    lower = [{k.lower(): v for k, v in r.items()} for r in rows]
    if not lower:
        raise ParameterError(f"distance file {str(path)!r} has no rows")
    if kind == "graph":
        return graph_distances(categories, [(r["category"], r["neighbour"]) for r in lower], source=name)
    if kind == "table":
        return table_distances(categories, [(r["from"], r["to"], r["distance"]) for r in lower],
                               unit=unit or "unit", source=name)
    found = [r["category"] for r in lower]
    order = match_categories(found, categories, f"distance file {name!r}")
    columns = {"haversine": ("lat", "lon"), "euclidean": ("x", "y"), "ordinal": ("midpoint",)}[kind]
    values = np.empty((len(lower), len(columns)))
    for i, r in enumerate(lower):
        for j, c in enumerate(columns):
            try:
                values[i, j] = float(r[c])
            except ValueError:
                raise ParameterError(f"distance file {name!r}, line {r['_line']}: {c} = {r[c]!r} is not a "
                                     "number") from None
    values = values[order]
    if kind == "haversine":
        return great_circle_distances(categories, values, source=name)
    if kind == "euclidean":
        return euclidean_distances(categories, values, unit=unit or "coordinate unit", source=name)
    if declared_order or numeric_order(categories):
        return ordinal_distances(categories, values[:, 0], unit=unit)
    by_midpoint = np.argsort(values[:, 0], kind="stable")
    ranked = ordinal_distances([categories[i] for i in by_midpoint], values[by_midpoint, 0], unit=unit)
    return ranked.reorder(categories)


def read_distances(spec: str | Path | Distances, categories: Sequence[Label], *,
                   unit: str | None = None, declared_order: bool = True, variable: str | None = None) -> Distances:
    """Distances for a variable from a spec: ``"ordinal"``, ``"discrete"`` (every two categories
    at distance 1, unit ``"change"``: for a nominal variable, the expected distance moved is the
    probability of a change), a CSV path, or a :class:`Distances` (reordered to ``categories``).

    Parameters
    ----------
    spec : str, Path or Distances
        Where the distances come from.
    categories : sequence of labels
        The variable's categories.
    unit : str, optional
        The distances' unit (:func:`read_distance_csv`, :func:`ordinal_distances`).
    declared_order : bool
        Whether the order of ``categories`` is declared; ``"ordinal"`` on an order that is
        neither declared nor numeric is an error (:func:`require_order`).
    variable : str, optional
        The variable's name, for messages.

    Returns
    -------
    Distances
        In the order of ``categories``.

    Raises
    ------
    ParameterError
        If the spec is none of those, the distances cannot be read or matched, or the
        order of ``"ordinal"`` is not declared.

    Examples
    --------
    >>> read_distances("ordinal", ["a", "b"]).matrix.tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> d = read_distances("discrete", ["married", "single", "widowed"])
    >>> d.matrix.tolist()[0], d.unit
    ([0.0, 1.0, 1.0], 'change')
    >>> read_distances("ordinal", ["0-4", "10-14", "5-9"], declared_order=False, variable="age")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: variable 'age': ordinal distances need the order of its categories, ...
    """
    if isinstance(spec, Distances):
        return spec if [str(c) for c in spec.categories] == [str(c) for c in categories] \
            else spec.reorder(categories)
    if isinstance(spec, str) and spec.strip().lower() == "ordinal":
        require_order(variable, categories, declared=declared_order)
        return ordinal_distances(categories, unit=unit)
    if isinstance(spec, str) and spec.strip().lower() == "discrete":
        s = len(categories)
        return Distances(categories, 1.0 - np.eye(s), kind="table", unit=unit or "change", source="discrete")
    if isinstance(spec, (str, Path)):
        return read_distance_csv(spec, categories, unit=unit, declared_order=declared_order)
    raise ParameterError(f"distances must be 'ordinal', 'discrete', a CSV path or a Distances object, got {spec!r}")


def distances_for(options: Mapping[str, Any], categories: Sequence[Label]) -> Distances:
    """The ``distances`` option of a design (required), resolved for ``categories``.

    Parameters
    ----------
    options : mapping
        A design's options: ``distances`` (a spec for :func:`read_distances`) and ``unit``.
    categories : sequence of labels
        The variable's categories.

    Returns
    -------
    Distances
        In the order of ``categories``.

    Raises
    ------
    ParameterError
        If ``options`` has no distances, or they cannot be read.

    Examples
    --------
    >>> d = distances_for({"distances": "ordinal", "unit": "band"}, ["0-17", "18-64", "65+"])
    >>> d.kind, d.unit, d.max
    ('ordinal', 'band', 2.0)
    >>> distances_for({"metric_epsilon": 0.5}, ["a", "b"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: a distance-based design needs distances: 'ordinal', a CSV file ...
    """
    spec = options.get("distances")
    if spec is None:
        raise ParameterError("a distance-based design needs distances: 'ordinal', a CSV file (category,x,y; "
                             "category,lat,lon; category,neighbour; from,to,distance; category,midpoint) or a "
                             "Distances object")
    return read_distances(spec, categories, unit=options.get("unit"))
