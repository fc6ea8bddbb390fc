"""The built-in census-like data.

:func:`census` generates, deterministically, a file with the structure of the
New York 2000 census sample used by Ayed, Battiston and Camerlenghi (953 076
persons; ten categorical variables with 3, 4, 9, 2, 6, 5, 11, 4, 3 and 3
levels).  It is not real data: every record is drawn from a chain of
conditional distributions chosen to give census-like margins and the
dependence an analyst would expect:

* ``sex`` ~ (0.48, 0.52); ``age`` | sex (women live longer); ``race`` marginal;
* ``ownership`` | age, race (owning rises with age; group quarters for the
  young and the very old);
* ``mortgage`` | ownership, age ("n/a" unless owned; free and clear rises with age);
* ``marital_status`` | age, sex (children never married; widowhood rises with
  age, more among women);
* ``education`` | age, race (children in school grades; adults shift to
  higher levels in younger cohorts);
* ``employment`` | age, sex, education ("n/a" under 16; participation peaks
  at 25-54 and rises with education);
* ``disability`` | age; ``veteran`` | age, sex.

The full cross-classification has 2 566 080 cells, most of them empty or
sparse, as in a real census.  The generator is documented in
``docs/data.md``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pramkit.defaults import NY_ROWS
from pramkit.errors import ParameterError

#: Variables and their categories, in file order.
CENSUS_VARIABLES: dict[str, tuple[str, ...]] = {
    "ownership": ("owned", "rented", "n/a"),
    "mortgage": ("n/a", "free and clear", "mortgage", "second mortgage"),
    "age": ("0-9", "10-17", "18-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75+"),
    "sex": ("male", "female"),
    "marital_status": (
        "married, spouse present", "married, spouse absent", "separated",
        "divorced", "widowed", "never married",
    ),
    "race": ("white", "black", "asian", "other", "two or more"),
    "education": (
        "n/a", "none", "grades 1-4", "grades 5-8", "grade 9", "grade 10", "grade 11",
        "grade 12, no diploma", "high school", "some college", "bachelor or higher",
    ),
    "employment": ("n/a", "employed", "unemployed", "not in labor force"),
    "disability": ("n/a", "no", "yes"),
    "veteran": ("n/a", "no", "yes"),
}


def _normalise(t: np.ndarray) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    return t / t.sum(axis=-1, keepdims=True)


def _draw(rng: np.random.Generator, table: np.ndarray, parent: np.ndarray | None, n: int) -> np.ndarray:
    """Codes drawn row by row from ``table[parent[i]]`` (a single row if ``parent`` is None).

    A record's code is the number of its row's cumulative probabilities at or below its uniform draw,
    counted one category boundary at a time: a few arrays of ``n`` values, never one of ``n`` by the
    number of categories."""
    table = _normalise(np.atleast_2d(table))
    cdf = np.cumsum(table, axis=1)[:, :-1]
    u = rng.random(n)
    codes = np.zeros(n, dtype=np.int8)
    for bound in cdf.T:
        codes += u >= (bound[parent] if parent is not None else bound[0])
    return codes


def _age_table() -> np.ndarray:
    male = [13.5, 11.5, 10.0, 14.5, 16.0, 13.5, 9.0, 6.5, 4.5]
    female = [12.5, 10.5, 9.5, 14.0, 15.5, 13.5, 9.5, 7.5, 8.0]
    return np.array([male, female])


def _ownership_table() -> np.ndarray:
    # P(owned) by age and a race factor; group quarters by age.
    own_by_age = np.array([0.55, 0.56, 0.30, 0.38, 0.52, 0.60, 0.66, 0.68, 0.62])
    gq_by_age = np.array([0.005, 0.01, 0.07, 0.012, 0.01, 0.01, 0.012, 0.02, 0.09])
    race_factor = np.array([1.15, 0.65, 0.85, 0.55, 0.75])
    t = np.empty((9, 5, 3))
    for a in range(9):
        for r in range(5):
            own = min(own_by_age[a] * race_factor[r], 0.9)
            gq = gq_by_age[a]
            t[a, r] = [own * (1 - gq), (1 - own) * (1 - gq), gq]
    return t.reshape(45, 3)


def _mortgage_table() -> np.ndarray:
    free_by_age = np.array([0.25, 0.27, 0.30, 0.15, 0.18, 0.25, 0.40, 0.65, 0.80])
    t = np.zeros((3, 9, 4))
    for a in range(9):
        f = free_by_age[a]
        t[0, a] = [0.0, f, (1 - f) * 0.86, (1 - f) * 0.14]
        t[1, a] = [1.0, 0, 0, 0]
        t[2, a] = [1.0, 0, 0, 0]
    return t.reshape(27, 4)


def _marital_table() -> np.ndarray:
    # columns: married present, married absent, separated, divorced, widowed, never married
    base = {
        0: [0, 0, 0, 0, 0, 1],
        1: [0.002, 0.001, 0.001, 0.0, 0.0, 0.996],
        2: [0.12, 0.02, 0.015, 0.01, 0.002, 0.833],
        3: [0.45, 0.04, 0.035, 0.05, 0.003, 0.422],
        4: [0.58, 0.04, 0.04, 0.11, 0.01, 0.22],
        5: [0.60, 0.035, 0.035, 0.15, 0.03, 0.15],
        6: [0.60, 0.03, 0.03, 0.15, 0.08, 0.11],
        7: [0.56, 0.025, 0.02, 0.11, 0.20, 0.085],
        8: [0.35, 0.02, 0.01, 0.06, 0.50, 0.06],
    }
    t = np.empty((9, 2, 6))
    for a in range(9):
        row = np.array(base[a], dtype=float)
        t[a, 0] = row
        female = row.copy()
        female[4] *= 2.6 if a >= 5 else 1.0
        female[0] *= 0.9 if a >= 6 else 1.0
        t[a, 1] = female
    return t.reshape(18, 6)


def _education_table() -> np.ndarray:
    # columns: n/a, none, 1-4, 5-8, 9, 10, 11, 12 no dipl., high school, some college, bachelor+
    child = [
        [0.30, 0.30, 0.40, 0, 0, 0, 0, 0, 0, 0, 0],  # 0-9
        [0, 0.004, 0.006, 0.40, 0.16, 0.15, 0.14, 0.09, 0.03, 0.02, 0],  # 10-17
    ]
    adult_young = [0, 0.01, 0.005, 0.03, 0.02, 0.025, 0.03, 0.03, 0.26, 0.34, 0.25]
    adult_old = [0, 0.03, 0.02, 0.12, 0.04, 0.04, 0.04, 0.04, 0.34, 0.16, 0.15]
    race_shift = np.array([1.0, 0.75, 1.35, 0.6, 0.9])  # factor on "some college" and "bachelor+"
    t = np.empty((9, 5, 11))
    for a in range(9):
        for r in range(5):
            if a < 2:
                row = np.array(child[a], dtype=float)
            else:
                w = (a - 2) / 6.0
                row = (1 - w) * np.array(adult_young) + w * np.array(adult_old)
                row[9:] *= race_shift[r]
                row[1:8] *= 1.0 / race_shift[r] ** 0.5
            t[a, r] = row
    return t.reshape(45, 11)


def _employment_table() -> np.ndarray:
    # columns: n/a, employed, unemployed, not in labor force
    emp_by_age = np.array([0, 0.10, 0.55, 0.76, 0.78, 0.77, 0.62, 0.20, 0.05])
    na_by_age = np.array([1.0, 0.75, 0, 0, 0, 0, 0, 0, 0])
    edu_factor = np.array([1, 0.55, 0.6, 0.7, 0.75, 0.8, 0.8, 0.85, 1.0, 1.05, 1.15])
    t = np.empty((9, 2, 11, 4))
    for a in range(9):
        for s in range(2):
            for e in range(11):
                emp = min(emp_by_age[a] * edu_factor[e] * (0.88 if s == 1 else 1.0), 0.95)
                unemp = 0.06 * (1.0 if a > 1 else 0.0) * (1.3 if e < 8 else 0.8)
                na = na_by_age[a]
                rest = 1 - na
                t[a, s, e] = [na, rest * emp, rest * unemp, rest * max(1 - emp - unemp, 0.01)]
    return t.reshape(9 * 2 * 11, 4)


def _disability_table() -> np.ndarray:
    yes_by_age = np.array([0, 0.05, 0.07, 0.08, 0.10, 0.13, 0.20, 0.30, 0.48])
    t = np.empty((9, 3))
    for a in range(9):
        t[a] = [1, 0, 0] if a == 0 else [0, 1 - yes_by_age[a], yes_by_age[a]]
    return t


def _veteran_table() -> np.ndarray:
    vet_male = np.array([0, 0, 0.02, 0.04, 0.07, 0.10, 0.20, 0.38, 0.30])
    t = np.empty((9, 2, 3))
    for a in range(9):
        for s in range(2):
            if a < 2:
                t[a, s] = [1, 0, 0]
            else:
                v = vet_male[a] * (1.0 if s == 0 else 0.06)
                t[a, s] = [0, 1 - v, v]
    return t.reshape(18, 3)


def census(n_rows: int = NY_ROWS, *, seed: int = 2000, areas: bool | int = False) -> pd.DataFrame:
    """A census-like file of ``n_rows`` persons (deterministic for a given seed).

    Returns a DataFrame whose ten columns are pandas categoricals with the
    categories of :data:`CENSUS_VARIABLES`, in that order.  With ``areas``
    (``True``: :data:`CENSUS_AREAS` areas, or a number of areas) an eleventh
    column ``area`` gives each person's area of residence in the synthetic
    geography of :func:`census_areas` (same seed); the ten columns are then
    unchanged (the areas are drawn afterwards, from a stream of their own).

    Parameters
    ----------
    n_rows : int
        Persons to generate (default :data:`pramkit.defaults.NY_ROWS`, the size
        of the NY 2000 sample of Ayed, Battiston and Camerlenghi).
    seed : int
        The seed; the same seed gives the same file.
    areas : bool or int
        Add the ``area`` column: ``True`` for :data:`CENSUS_AREAS` areas, or a number of areas.

    Returns
    -------
    pandas.DataFrame
        ``n_rows`` records; categorical columns in the order of :data:`CENSUS_VARIABLES`.

    Raises
    ------
    ValueError
        ``n_rows`` is below 1, or the number of areas below 2.

    Examples
    --------
    >>> data = census(2_000)
    >>> data.shape, list(data.columns) == list(CENSUS_VARIABLES)
    ((2000, 10), True)
    >>> data.equals(census(2_000)), data.equals(census(2_000, seed=1))  # deterministic for a seed
    (True, False)

    The dependence is built in: children are never married and have no employment status,
    and areas are drawn apart from the ten variables:

    >>> kids = data[data["age"] == "0-9"]
    >>> kids["marital_status"].unique().tolist(), kids["employment"].unique().tolist()
    (['never married'], ['n/a'])
    >>> with_areas = census(2_000, areas=20)
    >>> with_areas.drop(columns="area").equals(data), len(with_areas["area"].cat.categories)
    (True, 20)
    """
    if n_rows < 1:
        raise ParameterError("n_rows must be at least 1")
    rng = np.random.default_rng(seed)
    n = n_rows
    sex = _draw(rng, np.array([0.48, 0.52]), None, n)
    age = _draw(rng, _age_table(), sex, n)
    race = _draw(rng, np.array([0.62, 0.16, 0.07, 0.12, 0.03]), None, n)
    ownership = _draw(rng, _ownership_table(), age * 5 + race, n)
    mortgage = _draw(rng, _mortgage_table(), ownership * 9 + age, n)
    marital = _draw(rng, _marital_table(), age * 2 + sex, n)
    education = _draw(rng, _education_table(), age * 5 + race, n)
    # the row of (age, sex, education) passes 127: computed in intp, not in the codes' int8
    employment = _draw(rng, _employment_table(), (age.astype(np.intp) * 2 + sex) * 11 + education, n)
    disability = _draw(rng, _disability_table(), age, n)
    veteran = _draw(rng, _veteran_table(), age * 2 + sex, n)
    codes = {
        "ownership": ownership, "mortgage": mortgage, "age": age, "sex": sex,
        "marital_status": marital, "race": race, "education": education,
        "employment": employment, "disability": disability, "veteran": veteran,
    }
    frame = pd.DataFrame({
        name: pd.Categorical.from_codes(codes[name], categories=pd.Index(cats))
        for name, cats in CENSUS_VARIABLES.items()
    })
    if areas is not False:
        count = CENSUS_AREAS if areas is True else int(areas)
        frame["area"] = _draw_areas(census_areas(count, seed=seed), ownership, seed)
    return frame


# ---------------------------------------------------------------------------
# Synthetic geography
# ---------------------------------------------------------------------------

#: Areas of the synthetic geography (:func:`census_areas`).
CENSUS_AREAS = 300
#: Side of the square region, km (projected coordinates).
REGION_KM = 100.0
#: Towns: (share of the areas, spread of their areas in km); largest first.
TOWNS = ((0.34, 6.0), (0.16, 4.0), (0.10, 3.0), (0.07, 2.5), (0.05, 2.0))
#: Relative population of a rural area against a town area.
RURAL_WEIGHT = 0.35
#: P(area | ownership): renters live in towns more often (factor on town areas by ownership).
TOWN_FACTOR = (0.8, 1.6, 1.2)


def census_areas(n_areas: int = CENSUS_AREAS, *, seed: int = 2000) -> pd.DataFrame:
    """The synthetic geography: ``n_areas`` areas on a 100 km x 100 km plane.

    A deterministic (for a seed) stand-in for census tracts, with clustered
    population: five towns of decreasing size (:data:`TOWNS`) hold 72 % of the
    areas, scattered around each town centre (normal, spread 2-6 km) so that
    town areas are small and dense; the other areas are rural, uniform over
    the region, with :data:`RURAL_WEIGHT` of a town area's population.  Areas
    are named ``A001``, ``A002``, ... from west to east.

    Parameters
    ----------
    n_areas : int
        The number of areas, at least 2.
    seed : int
        The seed; the same seed gives the same geography.

    Returns
    -------
    pandas.DataFrame
        Columns ``category`` (the area's name), ``x``, ``y`` (centroid, km,
        projected: Euclidean distances are km), ``town`` (0-4, or -1 for
        rural) and ``share`` (expected share of persons; sums to 1).
        ``frame[["category", "x", "y"]].to_csv(path, index=False)`` is a
        centroid file for :func:`pramkit.distances.read_distances`.

    Raises
    ------
    ValueError
        ``n_areas`` is not an integer of at least 2.

    Examples
    --------
    >>> a = census_areas()
    >>> len(a), list(a.columns), a["category"].iloc[0], bool(a["share"].sum().round(12) == 1)
    (300, ['category', 'x', 'y', 'town', 'share'], 'A001', True)
    >>> census_areas().equals(a)
    True
    """
    if isinstance(n_areas, bool) or not isinstance(n_areas, (int, np.integer)) or n_areas < 2:
        raise ParameterError(f"n_areas must be an integer of at least 2, got {n_areas!r}")
    rng = np.random.default_rng([seed, 3535])
    n = int(n_areas)
    centres = rng.uniform(0.15 * REGION_KM, 0.85 * REGION_KM, size=(len(TOWNS), 2))
    counts = [round(share * n) for share, _ in TOWNS]
    rural = max(n - sum(counts), 0)
    points, town = [], []
    for k, ((_, spread), c) in enumerate(zip(TOWNS, counts)):
        points.append(centres[k] + rng.normal(0.0, spread, size=(c, 2)))
        town += [k] * c
    points.append(rng.uniform(0.0, REGION_KM, size=(rural, 2)))
    town += [-1] * rural
    xy = np.clip(np.vstack(points)[:n], 0.0, REGION_KM).round(3)
    town_arr = np.array(town[:n])
    # no two centroids in the same place (a distance must be positive)
    _, first = np.unique(xy, axis=0, return_index=True)
    while first.size < n:  # pragma: no cover - a tie at 1 m resolution is very unlikely
        dup = np.setdiff1d(np.arange(n), first)
        xy[dup] += 0.001
        _, first = np.unique(xy, axis=0, return_index=True)
    weight = np.where(town_arr >= 0, 1.0, RURAL_WEIGHT) * rng.lognormal(0.0, 0.3, size=n)
    order = np.lexsort((xy[:, 1], xy[:, 0]))
    xy, town_arr, weight = xy[order], town_arr[order], weight[order]
    return pd.DataFrame({
        "category": [f"A{i + 1:03d}" for i in range(n)],
        "x": xy[:, 0], "y": xy[:, 1], "town": town_arr, "share": weight / weight.sum(),
    })


def _draw_areas(geo: pd.DataFrame, ownership: np.ndarray, seed: int) -> pd.Categorical:
    """Each person's area given ownership: ``share`` times :data:`TOWN_FACTOR` for town areas."""
    rng = np.random.default_rng([seed, 3536])
    share = geo["share"].to_numpy()
    in_town = geo["town"].to_numpy() >= 0
    table = np.array([share * np.where(in_town, f, 1.0) for f in TOWN_FACTOR])
    cdf = np.cumsum(table / table.sum(axis=1, keepdims=True), axis=1)
    u = rng.random(ownership.size)
    codes = np.empty(ownership.size, dtype=np.int32)
    for k in range(len(TOWN_FACTOR)):
        rows = ownership == k
        codes[rows] = np.minimum(np.searchsorted(cdf[k], u[rows], side="right"), len(share) - 1)
    return pd.Categorical.from_codes(codes, categories=pd.Index(geo["category"]))
