"""Households and a two-level geography for the built-in census-like data.

:func:`pramkit.datasets.census` gives persons and their area (300 areas in five
towns and the countryside) but no households.  :func:`census_households` groups
the persons of each area, in file order, into households whose sizes follow a
census-like distribution (:data:`HOUSEHOLD_SIZES`), and adds the level above the
area: its town (``T1`` .. ``T5``) or, for a rural area, the quarter of the region
it lies in (``R-NW`` .. ``R-SE``).  The result is deterministic for a seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pramkit.datasets import CENSUS_AREAS, REGION_KM, census, census_areas

#: Shares of households of 1, 2, ..., 7 persons.
HOUSEHOLD_SIZES = (0.29, 0.33, 0.16, 0.13, 0.06, 0.02, 0.01)


def area_regions(areas: pd.DataFrame) -> pd.Series:
    """The region of each area of :func:`pramkit.datasets.census_areas`: its town, or a rural quarter.

    Parameters
    ----------
    areas : pandas.DataFrame
        :func:`pramkit.datasets.census_areas`.

    Returns
    -------
    pandas.Series
        One label per area (``T1`` .. ``T5``, ``R-NW``, ``R-NE``, ``R-SW``, ``R-SE``).

    Examples
    --------
    >>> sorted(area_regions(census_areas()).unique())
    ['R-NE', 'R-NW', 'R-SE', 'R-SW', 'T1', 'T2', 'T3', 'T4', 'T5']
    """
    half = REGION_KM / 2
    quarter = np.where(areas["y"] >= half, "R-N", "R-S").astype(object) + np.where(areas["x"] >= half, "E", "W")
    town = "T" + (areas["town"] + 1).astype(str)
    return pd.Series(np.where(areas["town"] >= 0, town, quarter), index=areas.index, name="region")


def census_households(n_rows: int = 100_000, *, seed: int = 2000, n_areas: int = CENSUS_AREAS) -> pd.DataFrame:
    """The census-like file with households: columns ``hid``, ``hsize``, ``region`` and ``area`` added.

    Parameters
    ----------
    n_rows : int
        Persons.
    seed : int
        The seed of :func:`pramkit.datasets.census` and of the household sizes.
    n_areas : int
        Areas of the geography.

    Returns
    -------
    pandas.DataFrame
        The persons sorted by area (stable), each household's members adjacent; ``hid`` an
        integer id, ``hsize`` its size, ``region`` and ``area`` categorical.

    Examples
    --------
    >>> data = census_households(5_000)
    >>> data.columns[:3].tolist(), data.columns[-1], len(data)
    (['hid', 'hsize', 'region'], 'area', 5000)
    >>> bool((data.groupby("hid")["area"].nunique() == 1).all()), bool(data["hsize"].max() <= 7)
    (True, True)
    """
    frame = census(n_rows, seed=seed, areas=n_areas)
    frame = frame.iloc[np.argsort(frame["area"].cat.codes.to_numpy(), kind="stable")].reset_index(drop=True)
    rng = np.random.default_rng([seed, 3537])
    area = frame["area"].cat.codes.to_numpy()
    starts = np.flatnonzero(np.r_[True, area[1:] != area[:-1]])
    ends = np.r_[starts[1:], area.size]
    hid = np.empty(area.size, dtype=np.int64)
    size = np.empty(area.size, dtype=np.int64)
    next_id = 0
    sizes = np.arange(1, len(HOUSEHOLD_SIZES) + 1)
    for lo, hi in zip(starts, ends):
        draws = rng.choice(sizes, size=hi - lo, p=HOUSEHOLD_SIZES)
        cut = np.minimum(np.cumsum(draws), hi - lo)
        cut = cut[: np.searchsorted(cut, hi - lo) + 1]
        bounds = np.r_[0, cut]
        counts = np.diff(bounds)
        hid[lo:hi] = np.repeat(np.arange(next_id, next_id + counts.size), counts)
        size[lo:hi] = np.repeat(counts, counts)
        next_id += counts.size
    geo = census_areas(n_areas, seed=seed)
    regions = area_regions(geo)
    region_of = dict(zip(geo["category"], regions))
    frame.insert(0, "hid", hid + 1)
    frame.insert(1, "hsize", size)
    frame.insert(2, "region", frame["area"].map(region_of).astype(str).astype("category"))
    return frame
