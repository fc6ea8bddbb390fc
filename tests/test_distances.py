"""Distances between categories: constructors, CSV readers and validation failures.

Expected values come from independent formulas (Pythagoras, the spherical law
of cosines, Manhattan distance on a grid, Floyd-Warshall), not from the code
under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pramkit.distances import (
    EARTH_RADIUS_KM,
    Distances,
    euclidean_distances,
    graph_distances,
    great_circle_distances,
    ordinal_distances,
    read_distances,
    table_distances,
)
from pramkit.errors import ParameterError


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


# -- ordinal -------------------------------------------------------------------

def test_ordinal_steps_and_edges() -> None:
    d = ordinal_distances(["a", "b", "c", "d"])
    assert d.matrix.tolist() == [[abs(i - j) for j in range(4)] for i in range(4)]
    assert d.kind == "ordinal" and d.unit == "step"
    assert d.edges.tolist() == [[0, 1], [1, 2], [2, 3]]


def test_ordinal_midpoints() -> None:
    d = ordinal_distances(["0-9", "10-19", "20-39", "40+"], [5, 15, 30, 50], unit="years")
    assert d.matrix[0].tolist() == [0, 10, 25, 45]
    assert d.unit == "years" and d.edges is None


def test_ordinal_midpoints_must_increase() -> None:
    with pytest.raises(ParameterError, match="'b' has 5.*'c' has 5"):
        ordinal_distances(["a", "b", "c"], [1, 5, 5])
    with pytest.raises(ParameterError, match="2 midpoints given for 3"):
        ordinal_distances(["a", "b", "c"], [1, 5])


# -- validation ---------------------------------------------------------------

@pytest.mark.parametrize("matrix, message", [
    ([[0, 1, 2], [1, 0, 1], [2, 3, 0]], r"not symmetric: d\('b', 'c'\) = 1 but d\('c', 'b'\) = 3"),
    ([[0, -1, 2], [-1, 0, 1], [2, 1, 0]], r"d\('a', 'b'\) = -1.0 is negative"),
    ([[0, 1, 2], [1, 0.5, 1], [2, 1, 0]], r"d\('b', 'b'\) = 0.5; the distance of a category to itself"),
    ([[0, 0, 2], [0, 0, 1], [2, 1, 0]], r"d\('a', 'b'\) = 0; different categories"),
    ([[0, np.nan, 2], [np.nan, 0, 1], [2, 1, 0]], r"d\('a', 'b'\) = nan is not finite"),
    ([[0, np.inf, 2], [np.inf, 0, 1], [2, 1, 0]], r"d\('a', 'b'\) = inf is not finite"),
    ([[0, 1], [1, 0]], r"shape \(2, 2\), but there are 3 categories"),
])
def test_validation_failures(matrix, message) -> None:
    with pytest.raises(ParameterError, match=message):
        Distances(["a", "b", "c"], matrix)


def test_stored_read_only() -> None:
    d = Distances(["a", "b"], [[0, 1], [1, 0]])
    with pytest.raises(ValueError):
        d.matrix[0, 1] = 5


# -- centroids ----------------------------------------------------------------

def test_euclidean_csv_against_pythagoras(tmp_path) -> None:
    pts = {"n1": (0.0, 0.0), "n2": (3.0, 4.0), "n3": (-2.5, 7.25), "n4": (10.0, -1.0)}
    text = "category,x,y,population\n" + "".join(f"{k},{x},{y},100\n" for k, (x, y) in pts.items())
    cats = ["n4", "n1", "n3", "n2"]                           # a different order than the file's
    d = read_distances(write(tmp_path, "c.csv", text), cats, unit="km")
    for (i, a), (j, b) in itertools.product(enumerate(cats), repeat=2):
        (xa, ya), (xb, yb) = pts[a], pts[b]
        assert d.matrix[i, j] == pytest.approx(math.sqrt((xa - xb) ** 2 + (ya - yb) ** 2), rel=1e-15)
    assert d.kind == "euclidean" and d.unit == "km"


def test_haversine_against_law_of_cosines(tmp_path) -> None:
    places = {"london": (51.5074, -0.1278), "paris": (48.8566, 2.3522), "madrid": (40.4168, -3.7038),
              "equator0": (0.0, 0.0), "equator1": (0.0, 1.0)}
    text = "category,lat,lon\n" + "".join(f"{k},{la},{lo}\n" for k, (la, lo) in places.items())
    cats = list(places)
    d = read_distances(write(tmp_path, "ll.csv", text), cats)
    assert d.unit == "km" and d.kind == "haversine"
    for (i, a), (j, b) in itertools.product(enumerate(cats), repeat=2):
        if i == j:
            continue
        p1, l1 = map(math.radians, places[a])
        p2, l2 = map(math.radians, places[b])
        central = math.acos(min(1.0, math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(l2 - l1)))
        assert d.matrix[i, j] == pytest.approx(EARTH_RADIUS_KM * central, rel=1e-9)
    # one degree of longitude on the equator: 2 pi R / 360
    assert d.matrix[3, 4] == pytest.approx(2 * math.pi * 6371.0088 / 360, rel=1e-12)


def test_centroid_failures(tmp_path) -> None:
    with pytest.raises(ParameterError, match="category 'a' appears more than once"):
        read_distances(write(tmp_path, "dup.csv", "category,x,y\na,0,0\na,1,1\nb,2,2\n"), ["a", "b"])
    with pytest.raises(ParameterError, match=r"no entry for categories \['c'\]"):
        read_distances(write(tmp_path, "miss.csv", "category,x,y\na,0,0\nb,1,1\n"), ["a", "b", "c"])
    with pytest.raises(ParameterError, match=r"categories \['z'\].*not categories of the variable"):
        read_distances(write(tmp_path, "extra.csv", "category,x,y\na,0,0\nb,1,1\nz,3,3\n"), ["a", "b"])
    with pytest.raises(ParameterError, match="line 3: y = 'north' is not a number"):
        read_distances(write(tmp_path, "text.csv", "category,x,y\na,0,0\nb,1,north\n"), ["a", "b"])
    with pytest.raises(ParameterError, match=r"d\('a', 'b'\) = 0; different categories"):
        read_distances(write(tmp_path, "same.csv", "category,x,y\na,1,1\nb,1,1\n"), ["a", "b"])
    with pytest.raises(ParameterError, match="lat = 91 is outside"):
        read_distances(write(tmp_path, "lat.csv", "category,lat,lon\na,91,0\nb,0,0\n"), ["a", "b"])
    with pytest.raises(ParameterError, match="needs the columns of one of"):
        read_distances(write(tmp_path, "bad.csv", "area,east,north\na,0,0\n"), ["a"])
    with pytest.raises(ParameterError, match="does not exist"):
        read_distances(tmp_path / "nowhere.csv", ["a"])


def test_categories_matched_by_text(tmp_path) -> None:
    d = read_distances(write(tmp_path, "int.csv", "category,x,y\n2,0,1\n1,0,0\n"), [1, 2])
    assert d.categories == (1, 2) and d.matrix[0, 1] == 1.0


# -- adjacency ----------------------------------------------------------------

def floyd_warshall(s: int, edges: list[tuple[int, int]], weight: np.ndarray | None = None) -> np.ndarray:
    d = np.full((s, s), np.inf)
    np.fill_diagonal(d, 0)
    for a, b in edges:
        w = 1.0 if weight is None else weight[a, b]
        d[a, b] = d[b, a] = min(d[a, b], w)
    for k in range(s):
        d = np.minimum(d, d[:, [k]] + d[[k], :])
    return d


def test_grid_adjacency_is_manhattan(tmp_path) -> None:
    n = 4
    name = {(r, c): f"r{r}c{c}" for r in range(n) for c in range(n)}
    lines = ["category,neighbour"]
    for (r, c), v in name.items():
        if c + 1 < n:
            lines.append(f"{v},{name[(r, c + 1)]}")
        if r + 1 < n:
            lines.append(f"{name[(r + 1, c)]},{v}")        # either direction
    lines.append(f"{name[(0, 0)]},{name[(0, 1)]}")         # repeated, in reverse too
    cats = list(name.values())
    d = read_distances(write(tmp_path, "adj.csv", "\n".join(lines) + "\n"), cats)
    assert d.kind == "graph" and d.unit == "hops"
    for (i, (ri, ci)), (j, (rj, cj)) in itertools.product(enumerate(name), repeat=2):
        assert d.matrix[i, j] == abs(ri - rj) + abs(ci - cj)
    # the edges generate every distance along paths
    assert np.array_equal(floyd_warshall(len(cats), [tuple(e) for e in d.edges.tolist()]), d.matrix)


def test_adjacency_failures(tmp_path) -> None:
    with pytest.raises(ParameterError, match="2 separate parts"):
        graph_distances(["a", "b", "c", "d"], [("a", "b"), ("c", "d")])
    with pytest.raises(ParameterError, match="'a' is listed as its own neighbour"):
        graph_distances(["a", "b"], [("a", "a"), ("a", "b")])
    with pytest.raises(ParameterError, match=r"\['c'\] have no neighbour"):
        graph_distances(["a", "b", "c"], [("a", "b")])
    with pytest.raises(ParameterError, match="pair 1: 'x' is not a category"):
        graph_distances(["a", "b"], [("a", "x")])


# -- table --------------------------------------------------------------------

def test_table_csv(tmp_path) -> None:
    text = "from,to,distance\na,b,1.5\nb,c,2\nc,a,3\nb,a,1.5\na,a,0\n"
    d = read_distances(write(tmp_path, "t.csv", text), ["a", "b", "c"])
    assert d.matrix.tolist() == [[0, 1.5, 3], [1.5, 0, 2], [3, 2, 0]] and d.kind == "table"


def test_table_failures() -> None:
    with pytest.raises(ParameterError, match=r"no distance for the pair \('a', 'c'\)"):
        table_distances(["a", "b", "c"], [("a", "b", 1), ("b", "c", 1)])
    with pytest.raises(ParameterError, match=r"not symmetric: d\('b', 'a'\) = 2 but d\('a', 'b'\) = 1"):
        table_distances(["a", "b"], [("a", "b", 1), ("b", "a", 2)])
    with pytest.raises(ParameterError, match=r"row 2: the pair \('a', 'b'\) appears more than once"):
        table_distances(["a", "b"], [("a", "b", 1), ("a", "b", 1)])
    with pytest.raises(ParameterError, match="row 1: distance 'far' is not a number"):
        table_distances(["a", "b"], [("a", "b", "far")])
    with pytest.raises(ParameterError, match=r"d\('a', 'a'\) = 1.0; the distance of a category to itself"):
        table_distances(["a", "b"], [("a", "b", 1), ("a", "a", 1)])
    with pytest.raises(ParameterError, match=r"d\('a', 'b'\) = -1.0 is negative"):
        table_distances(["a", "b"], [("a", "b", -1)])


# -- specs --------------------------------------------------------------------

def test_read_distances_specs() -> None:
    assert read_distances("ordinal", ["x", "y", "z"]).matrix[0].tolist() == [0, 1, 2]
    d = euclidean_distances(["a", "b", "c"], [[0, 0], [1, 0], [0, 2]])
    r = read_distances(d, ["c", "a", "b"])
    assert r.categories == ("c", "a", "b") and r.matrix[0].tolist() == [0, 2, math.sqrt(5)]
    g = read_distances(graph_distances(["a", "b", "c"], [("a", "b"), ("b", "c")]), ["c", "b", "a"])
    assert np.array_equal(floyd_warshall(3, [tuple(e) for e in g.edges.tolist()]), g.matrix)
    with pytest.raises(ParameterError, match="'ordinal', 'discrete', a CSV path or a Distances"):
        read_distances(3.5, ["a"])


def test_summary_and_symmetric_great_circle() -> None:
    d = great_circle_distances(["a", "b", "c"], [[10.1, 20.2], [-33.3, 151.2], [64.1, -21.9]])
    assert np.array_equal(d.matrix, d.matrix.T)
    info = d.to_dict()
    assert info["kind"] == "haversine" and info["categories"] == 3 and len(info["sha256"]) == 64


def test_typical_neighbour_distance() -> None:
    """The median over categories of the nearest other category's distance (scipy's k-d tree)."""
    from scipy.spatial import cKDTree

    xy = np.random.default_rng(4).random((41, 2)) * 30
    nearest = cKDTree(xy).query(xy, k=2)[0][:, 1]
    assert euclidean_distances(range(41), xy).neighbour == pytest.approx(float(np.median(nearest)), rel=1e-12)
    assert ordinal_distances(list("abcde")).neighbour == 1.0
    assert graph_distances(list("abc"), [("a", "b"), ("b", "c")]).neighbour == 1.0
    assert ordinal_distances(["a"]).neighbour == 0.0
