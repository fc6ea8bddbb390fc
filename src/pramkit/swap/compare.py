"""Swapping beside PRAM on the same file, at the same share of records changed.

:func:`compare_swap` runs the swap of a :class:`~pramkit.swap.SwapPlan`, then
perturbs the lowest level of the geography by two PRAM designs tuned to change the
same share of records (households drawn whole, ``unit`` = the household id):

* **DP-PRAM**: randomized response over the areas, keeping a value with probability
  ``1 - c`` (``c`` the swap's share of records changed), epsilon
  ``ln((1 - c)(A - 1) / c)``;
* **metric PRAM** (with centroids): the exponential mechanism over the distances between
  areas (:func:`pramkit.design.metric.mechanisms.exponential_mechanism`), its rate found by
  bisection so that the expected share changed is ``c``.

The levels above the lowest follow from the released area (they are nested).  For each
method: the share of records and households changed, the guarantee (epsilon of the
geography's matrix; infinite for targeted swapping), the risk before and after on the
key ``risk variables x area`` (records in cells of fewer than k whose released area is
their own; sample uniques whose released area is their own; households holding one; the
expected number of correct matches, the sum of 1 / f over records whose released key is
true, f the released cell's count) and the utility (total variation distance of the
area margin, naive and corrected by the matrix where it is known; of the table area x the
first risk variable; mean distance moved with centroids).  Everything here is computed
from the original file: the comparison is private (an internal report).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np
import pandas as pd

from pramkit.codebook import categories_of
from pramkit.engine.perturb import perturb_frame
from pramkit.errors import DataError, ParameterError
from pramkit.estimate.identifiability import condition_number
from pramkit.io import require_columns
from pramkit.kernel.rng import SecretKey, resolve_key
from pramkit.ledger import fmt_epsilon
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.swap.implied import random_swap_matrix
from pramkit.swap.run import SwapPlan, swap_frame


class MethodFigures(TypedDict):
    """One method of :class:`CompareResult` (:func:`_measures`): its risk and utility; the table of the area
    by the first risk variable is also printed as ``area_by_<that variable>_tvd``."""

    method: str
    share_records_changed: float
    epsilon: str
    exposed_records_k: int
    exposed_uniques: int
    households_exposed: int
    expected_correct_matches: float
    area_tvd: float
    area_tvd_corrected: float | None
    risk_var: str
    area_by_risk_var_tvd: float
    mean_km_moved: NotRequired[float]


@dataclass(frozen=True)
class CompareResult:
    """The methods side by side (private: every figure is computed from the original file).

    Parameters
    ----------
    rows, households : int
        The file's records and households.
    keys : list of str
        The key of the risk measures (risk variables and the lowest level).
    k : int
        The threshold of the risk measures.
    methods : list of dict
        One entry per method (``method``, ``share_records_changed``, ``epsilon``, the risk and
        utility figures named in :mod:`pramkit.swap.compare`).
    notes : list of str
        What was left out and why.
    """

    rows: int
    households: int
    keys: list[str]
    k: int
    methods: list[dict[str, Any]]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values."""
        return dict(self.__dict__)


def compare_swap(data: pd.DataFrame, plan: SwapPlan, *, key: SecretKey | bytes | str | Path | None = None,
                 centroids: pd.DataFrame | None = None) -> CompareResult:
    """Swap, DP-PRAM and metric PRAM of the geography at the same share of records changed.

    Parameters
    ----------
    data : pandas.DataFrame
        The original records.
    plan : SwapPlan
        The swap; its risk variables (at least one) and k define the risk measures.
    key : SecretKey, bytes, str, pathlib.Path or None
        The secret key (each method draws from its own streams).
    centroids : pandas.DataFrame, optional
        Columns ``category``, ``x``, ``y`` (km) of the lowest level's areas: metric PRAM and
        the distance moved.

    Returns
    -------
    CompareResult

    Raises
    ------
    ParameterError
        No risk variable, or centroids that miss an area.
    DataError
        A level of the geography is missing on a record, or a level or a risk variable holds one value
        spelled two ways (:func:`pramkit.codebook.spelling_clash`, as design and risk refuse it).

    Examples
    --------
    >>> from pramkit.swap import plan_swap
    >>> from pramkit.swap.census import census_households
    >>> from pramkit.datasets import census_areas
    >>> data = census_households(20_000)
    >>> plan = plan_swap("hid", ["region", "area"], risk_vars=["age", "sex"], similar=[["hsize"]], rate=0.1)
    >>> r = compare_swap(data, plan, key=bytes(32), centroids=census_areas())
    >>> [m["method"] for m in r.methods]
    ['original', 'targeted record swapping', 'DP-PRAM (randomized response)', 'metric PRAM (exponential)']
    >>> r.methods[1]["epsilon"], r.methods[2]["share_records_changed"] > 0
    ('inf', True)
    """
    if not plan.risk_vars:
        raise ParameterError("the comparison measures risk on the risk variables: give at least one (--risk-vars)")
    secret = resolve_key(key)
    area_col = plan.geo[-1]
    require_columns([plan.hid, *plan.geo], list(map(str, data.columns)), "the data")
    frame = data.copy()
    for c in plan.geo:
        absent = np.flatnonzero(frame[c].isna().to_numpy())
        if absent.size:  # as pramkit swap says it
            raise DataError(f"geography column {c!r} is missing on row {int(absent[0]) + 1}")
        frame[c] = frame[c].astype(str)
    for c in (*plan.geo, *plan.risk_vars):  # one value spelled two ways is refused, as design and risk refuse it
        categories_of(frame[c], column=c)
    areas = sorted(frame[area_col].unique())
    if len(areas) < 2:
        raise ParameterError(f"the comparison needs at least two areas of {area_col!r}, not {len(areas)}")
    upper = frame.groupby(area_col)[list(plan.geo[:-1])].first() if len(plan.geo) > 1 else None
    xy = _centroids(centroids, areas)
    swapped = swap_frame(frame, plan, key=secret)
    changed = swapped.swapped_records / len(frame)
    keys = [*plan.risk_vars, area_col]
    rows = [_measures("original", frame, frame, plan.hid, keys, plan.k, xy, None, 0.0)]
    swap_matrix = None
    if not plan.targeted:
        counts = frame.groupby(area_col)[plan.hid].nunique().reindex(areas).tolist()
        parents = None if upper is None else upper[plan.geo[-2]].reindex(areas).tolist()
        swap_matrix = random_swap_matrix(plan.rate, areas, plan.donor_parents(parents), counts, donors=plan.donors)
    assert swapped.frame is not None  # swap_frame returns the released frame
    rows.append(_measures(swapped.section["method"], frame, swapped.frame, plan.hid, keys, plan.k, xy, swap_matrix,
                          swapped.section["epsilon"]))
    designs = [("DP-PRAM (randomized response)", _rr(changed, areas))]
    notes = []
    if xy is not None:
        designs.append(("metric PRAM (exponential)", _metric(changed, areas, xy, frame[area_col])))
    else:
        notes.append("metric PRAM and the distance moved need the areas' centroids (--centroids)")
    notes.append("SUDA and tau1/tau2 after swapping are not computed: no model of the swap's released file yet")
    for name, matrix in designs:
        manifest = Manifest((PerturbedVariable(area_col, matrix, unit=plan.hid),))
        released = perturb_frame(frame, manifest, key=secret).data
        if upper is not None:
            for c in plan.geo[:-1]:
                released[c] = released[area_col].map(upper[c]).astype(str)
        rows.append(_measures(name, frame, released, plan.hid, keys, plan.k, xy, matrix, matrix.epsilon))
        if not math.isfinite(condition_number([matrix.matrix])):
            notes.append(f"{name}: its matrix is singular at this rate (it changes as many records as the swap), so "
                         "the area margin cannot be corrected: no corrected TVD")
    return CompareResult(rows=len(frame), households=swapped.households, keys=keys, k=plan.k, methods=rows,
                         notes=notes)


def _centroids(centroids: pd.DataFrame | None, areas: list[str]) -> np.ndarray | None:
    if centroids is None:
        return None
    require_columns(["category", "x", "y"], list(map(str, centroids.columns)), "the centroids")
    table = centroids.assign(category=centroids["category"].astype(str)).set_index("category")
    missing = sorted(set(areas) - set(table.index))
    if missing:
        raise ParameterError(f"the centroids miss {len(missing)} area(s), such as {missing[0]!r}")
    xy = table.loc[areas, ["x", "y"]].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(xy).all(axis=1))
    if bad.size:
        raise ParameterError(f"the centroid of area {areas[int(bad[0])]!r} is not two numbers x, y (km)")
    return xy


def _rr(changed: float, areas: list[str]) -> PramMatrix:
    """Randomized response changing a share ``changed`` of values."""
    a = len(areas)
    q = min(max(1.0 - changed, 1.0 / a), 1.0)
    return PramMatrix.form8(np.full(a, q), np.full(a, (1.0 - q) / (a - 1)), categories=areas)


def _metric(changed: float, areas: list[str], xy: np.ndarray, values: pd.Series) -> PramMatrix:
    """The exponential mechanism whose expected share changed (under the areas' shares) is ``changed``."""
    from pramkit.design.metric.mechanisms import exponential_mechanism
    from pramkit.distances import euclidean_distances

    d = euclidean_distances(areas, xy, unit="km", source="centroids")
    p = values.value_counts(normalize=True).reindex(areas).fillna(0.0).to_numpy()
    dist = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
    # per km: lo changes almost every value; hi is the largest rate whose far entries stay within double
    # precision (exp(-700)), so a share below what hi gives is not reached (the result says what is)
    lo, hi = 1e-4, 1300.0 / max(float(dist.max()), 1e-12)
    for _ in range(50):  # the diagonal of the mechanism: 1 / sum_z exp(-eps d(x, z) / 2)
        mid = (lo * hi) ** 0.5
        share = float(p @ (1.0 - 1.0 / np.exp(-mid * dist / 2.0).sum(axis=1)))
        lo, hi = (mid, hi) if share > changed else (lo, mid)
    return exponential_mechanism(d, (lo * hi) ** 0.5, categories=areas)


def _tvd(a: pd.Series, b: pd.Series) -> float:
    both = pd.concat([a, b], axis=1).fillna(0.0)
    return float(0.5 * np.abs(both.iloc[:, 0] / both.iloc[:, 0].sum() - both.iloc[:, 1] / both.iloc[:, 1].sum()).sum())


def _measures(name: str, original: pd.DataFrame, released: pd.DataFrame, hid: str, keys: list[str], k: int,
              xy: np.ndarray | None, matrix: PramMatrix | None, epsilon: Any) -> dict[str, Any]:
    """Risk and utility of one released frame against the original."""
    area = keys[-1]
    true = (released[area].astype(str).to_numpy() == original[area].astype(str).to_numpy())
    cell = released[keys].astype(str).groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    f = np.bincount(cell)[cell]
    orig_margin = original[area].astype(str).value_counts()
    rel_margin = released[area].astype(str).value_counts()
    out: dict[str, Any] = {
        "method": name,
        "share_records_changed": float(1.0 - true.mean()),
        "epsilon": epsilon if isinstance(epsilon, str) else fmt_epsilon(float(epsilon)),
        "exposed_records_k": int(((f < k) & true).sum()),
        "exposed_uniques": int(((f == 1) & true).sum()),
        "households_exposed": int(original.loc[(f == 1) & true, hid].nunique()),
        "expected_correct_matches": float((true / f).sum()),
        "area_tvd": _tvd(orig_margin, rel_margin),
        "area_tvd_corrected": None,
        "risk_var": keys[0],  # the first risk variable, which the next TVD crosses with the area
        "area_by_risk_var_tvd": _tvd(original[[area, keys[0]]].astype(str).value_counts(),
                                     released[[area, keys[0]]].astype(str).value_counts()),
    }
    out["area_by_" + keys[0] + "_tvd"] = out["area_by_risk_var_tvd"]  # its first name, named after the variable
    if matrix is not None and math.isfinite(condition_number([matrix.matrix])):  # a singular matrix: no correction
        labels = [str(c) for c in matrix.categories]
        lam = rel_margin.reindex(labels).fillna(0.0).to_numpy()
        est = pd.Series(np.linalg.solve(matrix.matrix.T, lam), index=labels)
        out["area_tvd_corrected"] = _tvd(orig_margin, est.clip(lower=0.0))
    if xy is not None:
        index = {a: i for i, a in enumerate(sorted(original[area].astype(str).unique()))}
        i = original[area].astype(str).map(index).to_numpy()
        j = released[area].astype(str).map(index).to_numpy()
        out["mean_km_moved"] = float(np.hypot(*(xy[i] - xy[j]).T).mean())
    return out
