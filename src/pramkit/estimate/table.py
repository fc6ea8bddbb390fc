"""Tables of original frequencies estimated from a released file and its manifest.

The analyst's entry point: cross-classify some columns of the released file
(perturbed ones as declared in the manifest, unperturbed ones as found in the
data), estimate the original counts with the moment estimator or the MLE,
and report every cell with its standard error and confidence interval, as a
count and as a proportion.  Cator, Hensbergen and Rozenholc, section 3,
estimator (4) (unperturbed variables enter with the identity); Ruiz and
Domingo-Ferrer, appendix A.1; Ayed, Battiston and Camerlenghi, section 4.1.

The estimator is chosen by name (:data:`pramkit.estimate.ESTIMATORS`): the
unbiased one (the default), or one whose estimates lie in ``[0, n]`` (the MLE,
Norm-Sub, the closed-form MLE for randomized response).  A cell estimated
outside ``[0, n]`` (or a share outside ``[0, 1]``) is flagged
(``out_of_range``).  With a singular matrix the cells that cannot be told
apart are flagged (``identifiable`` false, no standard error) and the totals
of their groups are estimated instead (:meth:`EstimateResult.groups`).

Proportions are shares of all n records, or, with ``by``, shares within each
group of the ``by`` variables (delta method; the group totals are themselves
estimated when a ``by`` variable is perturbed).  Rows with a missing value
(not declared a category) in any tabulated column are left out; ``n`` counts
the rows used.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast

import numpy as np
import pandas as pd
from scipy.special import ndtri

from pramkit.counts import CountTable, count_file, count_frame
from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.engine.receipt import ReceiptWarning, check_chain
from pramkit.errors import DataError, ParameterError
from pramkit.estimate.cells import cell_positions
from pramkit.estimate.chain import ManifestChain
from pramkit.estimate.covariance import VarianceKind, check_variance_kind
from pramkit.estimate.estimators import CONSISTENT, estimate_counts, estimator_name
from pramkit.estimate.result import RANGE_SLACK, TableEstimate
from pramkit.estimate.spec import EstimateSpec, check_confidence, check_decimal
from pramkit.estimate.survey import SurveyDesign
from pramkit.estimate.weighted import Replicates
from pramkit.frames import pandas_table, streamed
from pramkit.labels import Label, joint_cell
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.settings import check_values, checked, only_spec
from pramkit.validate import SPARK_MASTER, engine_name

#: Largest table (number of cells) estimate_table builds.
MAX_CELLS = 50_000_000
#: Most memory the dense matrices of an estimate may take: the estimators hold a variable's S x S
#: matrix dense, in about :data:`DENSE_COPIES` copies (the matrix, its inverse or factors, a product).
MAX_MATRIX_BYTES = 4_000_000_000
DENSE_COPIES = 4


def check_matrix_memory(axes: Sequence[str], matrices: Sequence[PramMatrix | None]) -> None:
    """Refuse, before any allocation, an estimate whose dense matrices would not fit in
    :data:`MAX_MATRIX_BYTES` (a joint variable over many cells), with the figure.

    Parameters
    ----------
    axes : sequence of str
        The variables tabulated.
    matrices : sequence of PramMatrix or None
        Their matrices (``None`` for a column that is not perturbed).

    Raises
    ------
    ParameterError
        The matrices would need more than :data:`MAX_MATRIX_BYTES`; the message gives the size.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> check_matrix_memory(["sex"], [randomized_response(["f", "m"], 1.0)])     # 2 x 2: fine
    >>> big = randomized_response(list(range(30_000)), 1.0)                     # compact: no 30 000^2 array yet
    >>> check_matrix_memory(["cell"], [big])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: estimating 'cell' needs its 30,000 x 30,000 matrix dense, about 28.8 GB (4 copies of 7.2 GB), more than the 4 GB this estimate may take; tabulate a variable of fewer categories (a joint variable over fewer or coarser columns)
    """
    sizes = [(name, len(m.categories)) for name, m in zip(axes, matrices) if m is not None]
    need = sum(DENSE_COPIES * 8 * s * s for _, s in sizes)
    if need <= MAX_MATRIX_BYTES:
        return
    name, s = max(sizes, key=lambda item: item[1])
    raise ParameterError(
        f"estimating {name!r} needs its {s:,} x {s:,} matrix dense, about {need / 1e9:.3g} GB ({DENSE_COPIES} copies "
        f"of {8 * s * s / 1e9:.3g} GB), more than the {MAX_MATRIX_BYTES / 1e9:g} GB this estimate may take; "
        "tabulate a variable of fewer categories (a joint variable over fewer or coarser columns)")

#: A selection of cells: variable -> one label or a list of labels (other variables: all).
Selection = Mapping[str, Any]

#: A category's label as printed: a text or a whole number.
PrintedLabel = int | str


class EstimatedCell(TypedDict):
    """One cell of :meth:`EstimateResult.cells`: its label (one variable) or labels (several), the
    estimated count and proportion with their intervals, the released count and the flags."""

    category: PrintedLabel | list[PrintedLabel]
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    proportion: float
    proportion_se: float
    proportion_ci_low: float
    proportion_ci_high: float
    released: float
    out_of_range: bool
    identifiable: bool
    pram_se: NotRequired[float]


class EstimatedGroup(TypedDict):
    """One group of cells told apart by their total only (:meth:`EstimateResult.groups`)."""

    category: list[PrintedLabel] | list[list[PrintedLabel]]
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    pram_se: NotRequired[float]


class EstimateJSON(TypedDict):
    """What :meth:`EstimateResult.to_dict` returns (``pramkit estimate --json`` adds the released file's
    name; the JSON Schema of ``pramkit.estimate.result`` is made from it, :mod:`pramkit.outputs`)."""

    method: str
    estimator: str
    estimator_requested: str
    consistent: bool
    variance: str
    n: float
    dropped: int
    variables: list[str]
    by: list[str]
    perturbed: dict[str, bool]
    confidence: float
    units: dict[str, str]
    condition_number: float
    iterations: int | None
    converged: bool | None
    loglik_gap_nats: float
    note: str
    out_of_range_cells: int
    identifiability: dict[str, dict[str, Any]]
    groups: list[EstimatedGroup]
    cells: list[EstimatedCell]


@dataclass(frozen=True)
class Derived:
    """A quantity derived from the table, with its standard error and normal interval.

    estimate: the value (a proportion, or a difference of proportions)
    se: standard error (exact for a share of all records, delta method for a ratio)
    ci_low, ci_high: the interval ``estimate -/+ z se`` at level ``confidence``
    confidence: the level of the interval

    Examples
    --------
    The share of "yes" among all records of a released table
    (:meth:`EstimateResult.share`), with its 95% interval ``0.5 -/+ 1.96 * 0.1``:

    >>> from pramkit import Manifest, PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
    ...                          "sex": ["f"] * 60 + ["m"] * 40})
    >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
    >>> d = res.share({"answer": "yes"})
    >>> round(d.estimate, 12), round(d.se, 12), round(d.ci_low, 3), round(d.ci_high, 3), d.confidence
    (0.5, 0.1, 0.304, 0.696, 0.95)
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    confidence: float


@dataclass(frozen=True, eq=False)
class EstimateResult:
    """An estimated table of original frequencies.

    variables: the table's axes, the ``vars`` then the ``by`` variables
    by: the grouping variables (proportions are shares within their groups)
    categories: the labels of every axis
    perturbed: whether each axis is perturbed (in the manifest)
    table: counts, standard errors, method and diagnostics
    proportion: estimated share of each cell (of n, or within its ``by`` group)
    proportion_se: standard errors of the shares
    confidence: level of the intervals
    dropped: rows left out because of a missing value
    requested_estimator: the estimator asked for (``table.estimator`` is the
        one used; they differ when a singular or badly conditioned matrix
        forces the MLE, and ``table.note`` then says why)
    weights: the sampling weight column when the table holds weighted totals
        (``table.covariance`` is then a :class:`pramkit.estimate.weighted.SurveyCovariance`)

    Examples
    --------
    A yes/no answer released by randomized response (keep with 3/4), by an
    unperturbed sex.  Among the 60 women 35 "yes" were released, so the
    unbiased estimate is ``(1.5 * 35 - 0.5 * 25, -0.5 * 35 + 1.5 * 25) = (40, 20)``:

    >>> from pramkit import Manifest, PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
    ...                          "sex": ["f"] * 60 + ["m"] * 40})
    >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
    >>> res.variables, res.by, res.perturbed, res.n
    (('answer', 'sex'), ('sex',), (True, False), 100)
    >>> res.table.counts.tolist()
    [[40.0, 10.0], [20.0, 30.0]]
    >>> res.proportion.round(4).tolist()           # shares within each sex
    [[0.6667, 0.25], [0.3333, 0.75]]
    """

    variables: tuple[str, ...]
    by: tuple[str, ...]
    categories: tuple[tuple[Label, ...], ...]
    perturbed: tuple[bool, ...]
    table: TableEstimate
    proportion: np.ndarray
    proportion_se: np.ndarray
    confidence: float
    dropped: int
    requested_estimator: str = ""
    weights: str | None = None

    @property
    def n(self) -> float:
        return self.table.n

    @property
    def method(self) -> str:
        return self.table.method

    @property
    def estimator(self) -> str:
        """The estimator that produced the counts (see :data:`pramkit.estimate.ESTIMATORS`)."""
        return self.table.estimator

    @property
    def out_of_range(self) -> np.ndarray:
        """Per cell: the estimated count is outside ``[0, n]`` or the share outside ``[0, 1]``."""
        r = np.nan_to_num(self.proportion, nan=0.5)
        return self.table.out_of_range | (r < -RANGE_SLACK) | (r > 1 + RANGE_SLACK)

    @property
    def z(self) -> float:
        return float(ndtri(0.5 + self.confidence / 2.0))

    def cells(self) -> list[dict[str, Any]]:
        """One record per cell: category (a label, or a list of labels for
        several variables), estimate (count), se, ci_low, ci_high, proportion,
        proportion_se, proportion_ci_low, proportion_ci_high, released (count),
        out_of_range (the count is outside [0, n] or the share outside [0, 1]),
        identifiable (false for a cell of a group that a singular matrix cannot
        tell apart: its estimate is one maximiser of the likelihood among many).

        Returns
        -------
        list of dict
            One dict per cell, in C order of the table's axes.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
        ...                          "sex": ["f"] * 60 + ["m"] * 40})
        >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
        >>> first = res.cells()[0]
        >>> first["category"], first["estimate"], first["released"], round(first["proportion"], 4)
        (['yes', 'f'], 40.0, 35.0, 0.6667)
        >>> math.isclose(first["ci_high"] - first["estimate"], res.z * first["se"])
        True
        """
        z = self.z
        t, se = self.table.counts, self.table.se
        r, rse = self.proportion, self.proportion_se
        flagged, ident = self.out_of_range, self.table.identifiable
        pram = getattr(self.table.covariance, "pram_cell_variances", None)
        pram_se = None if self.weights is None or pram is None else np.sqrt(pram())
        out = []
        for idx in np.ndindex(t.shape):
            labels = [self.categories[a][i] for a, i in enumerate(idx)]
            out.append({
                "category": labels[0] if len(labels) == 1 else labels,
                "estimate": float(t[idx]), "se": float(se[idx]),
                "ci_low": float(t[idx] - z * se[idx]), "ci_high": float(t[idx] + z * se[idx]),
                "proportion": float(r[idx]), "proportion_se": float(rse[idx]),
                "proportion_ci_low": float(r[idx] - z * rse[idx]),
                "proportion_ci_high": float(r[idx] + z * rse[idx]),
                "released": float(self.table.released[idx]),
                "out_of_range": bool(flagged[idx]),
                "identifiable": bool(ident[idx]),
                **({} if pram_se is None else {"pram_se": float(pram_se[idx])}),
            })
        return out

    def groups(self) -> list[dict[str, Any]]:
        """For a singular matrix: the estimated totals of the groups of cells
        that cannot be told apart (identifiable), one record each: category (per
        variable, the list of its categories in the group; a single variable:
        just that list), estimate, se, ci_low, ci_high (records; weighted, as the cells', for a
        weighted estimate, which adds pram_se: the part of se due to PRAM).  Empty otherwise.

        Returns
        -------
        list of dict
            One dict per group (and per combination of the other variables'
            categories).

        Examples
        --------
        Categories a and b are released identically: only their total (the
        60 records released as a or b, since c is kept) is estimated:

        >>> import warnings
        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], ("a", "b", "c"))
        >>> released = pd.DataFrame({"x": ["a"] * 40 + ["b"] * 20 + ["c"] * 40})
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")      # the moment estimator falls back to the MLE
        ...     res = estimate_table(released, Manifest.of({"x": m}), "x")
        >>> [(g["category"], round(g["estimate"], 6), round(g["se"], 4)) for g in res.groups()]
        [(['a', 'b'], 60.0, 4.899)]
        >>> [(c["category"], c["identifiable"]) for c in res.cells()]
        [('a', False), ('b', False), ('c', True)]
        """
        ident = self.table.identifiability
        if ident is None:
            return []
        z = self.z
        out = []
        for g in ident.groups:
            labels = [[self.categories[a][i] for i in members] for a, members in enumerate(g.members)]
            out.append({
                "category": labels[0] if len(labels) == 1 else labels,
                "estimate": g.estimate, "se": g.se,
                "ci_low": g.estimate - z * g.se, "ci_high": g.estimate + z * g.se,
                **({} if g.pram_se is None else {"pram_se": g.pram_se}),
            })
        return out

    def to_frame(self) -> pd.DataFrame:
        """The cells as a DataFrame: one column per variable, then the fields of :meth:`cells`.

        Returns
        -------
        pandas.DataFrame
            One row per cell; ``category`` holds a tuple of labels for several variables.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
        ...                          "sex": ["f"] * 60 + ["m"] * 40})
        >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
        >>> frame = res.to_frame()
        >>> frame[["answer", "sex", "estimate", "released"]].values.tolist()
        [['yes', 'f', 40.0, 35.0], ['yes', 'm', 10.0, 15.0], ['no', 'f', 20.0, 25.0], ['no', 'm', 30.0, 25.0]]
        >>> math.isclose(frame["estimate"].sum(), res.n)
        True
        """
        cells = self.cells()
        frame = pd.DataFrame(cells)
        for a, name in reversed(list(enumerate(self.variables))):
            col = [c["category"] if len(self.variables) == 1 else c["category"][a] for c in cells]
            frame.insert(0, name, col)
        if len(self.variables) > 1:
            frame["category"] = [tuple(c) for c in frame["category"]]
        return frame

    def to_dict(self) -> dict[str, Any]:
        """Everything the command line prints with ``--json``.

        Returns
        -------
        dict
            Plain JSON values: the method and estimator, n, the variables,
            diagnostics, the groups (:meth:`groups`) and the cells (:meth:`cells`).

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
        ...                          "sex": ["f"] * 60 + ["m"] * 40})
        >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
        >>> import json
        >>> d = json.loads(json.dumps(res.to_dict()))
        >>> d["estimator"], d["n"], d["perturbed"], d["out_of_range_cells"], len(d["cells"])
        ('unbiased', 100, {'answer': True, 'sex': False}, 0, 4)
        >>> d["units"]["proportion"]
        "share of the records in the cell's by-group"
        """
        t = self.table
        ident = t.identifiability
        return {
            "method": t.method,
            "estimator": t.estimator,
            "estimator_requested": self.requested_estimator or t.estimator,
            "consistent": t.estimator in CONSISTENT,
            "variance": t.variance,
            "n": t.n,
            "dropped": self.dropped,
            "variables": list(self.variables),
            "by": list(self.by),
            "perturbed": dict(zip(self.variables, self.perturbed)),
            "confidence": self.confidence,
            "units": {
                "estimate": "records (estimated original count)",
                "proportion": "share of the records in the cell's by-group" if self.by else "share of all n records",
            },
            "condition_number": t.condition_number,
            "iterations": t.iterations,
            "converged": t.converged,
            "loglik_gap_nats": t.loglik_gap,
            "note": t.note,
            "out_of_range_cells": int(self.out_of_range.sum()),
            "identifiability": {} if ident is None else {
                name: res.to_dict() for name, res in zip(self.variables, ident.axes) if res is not None
            },
            "groups": self.groups(),
            "cells": self.cells(),
        }

    # -- derived quantities ----------------------------------------------
    def mask(self, select: Selection | None) -> np.ndarray:
        """Boolean table of the cells matching ``select`` (all cells for ``None``).

        Parameters
        ----------
        select : mapping or None
            Variable name -> one label or a list of labels; variables not
            named match every category.

        Returns
        -------
        numpy.ndarray of bool
            In the shape of the table.

        Raises
        ------
        ParameterError
            If a name is not a variable of the table, or a label not one of its categories.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
        ...                          "sex": ["f"] * 60 + ["m"] * 40})
        >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
        >>> res.mask({"answer": "yes"}).tolist()
        [[True, True], [False, False]]
        >>> res.mask({"answer": "yes", "sex": ["m"]}).tolist(), bool(res.mask(None).all())
        ([[False, True], [False, False]], True)
        """
        m = np.ones(self.table.counts.shape, dtype=bool)
        for name, wanted in (select or {}).items():
            if name not in self.variables:
                raise ParameterError(f"{name!r} is not a variable of this table; it has {list(self.variables)}")
            a = self.variables.index(name)
            labels = list(wanted) if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
            cats = self.categories[a]
            unknown = [x for x in labels if x not in cats]
            if unknown:
                raise ParameterError(f"{name!r} has no category {unknown[0]!r}; its categories are {list(cats)}")
            keep = np.isin(np.arange(len(cats)), [cats.index(x) for x in labels])
            shape = [1] * m.ndim
            shape[a] = len(cats)
            m = m & keep.reshape(shape)
        return m

    def _share_gradient(self, select: Selection, within: Selection | None) -> tuple[float, np.ndarray]:
        b = self.mask(within).astype(float)
        a = self.mask(select) * b
        t = self.table.counts
        denom = float(np.sum(b * t))
        if denom <= 0:
            raise DataError(f"the estimated number of records in {dict(within or {})} is {denom:g}; "
                            "no share can be formed")
        r = float(np.sum(a * t)) / denom
        return r, (a - r * b) / denom

    def _derived(self, value: float, gradient: np.ndarray) -> Derived:
        se = math.sqrt(self.table.linear_variance(gradient))
        z = self.z
        return Derived(value, se, value - z * se, value + z * se, self.confidence)

    def share(self, select: Selection, *, within: Selection | None = None) -> Derived:
        """Estimated share of the records in ``select`` among those in ``within``
        (all records if ``None``), e.g. ``share({"age": ["65-74", "75+"]}, within={"sex": "female"})``.

        The standard error is exact for a share of all records and comes from
        the delta method for a share within a subgroup (a ratio of estimated counts).

        Parameters
        ----------
        select : mapping
            The cells counted (see :meth:`mask`).
        within : mapping, optional
            The cells of the denominator; all records if ``None``.

        Returns
        -------
        Derived
            The share, its standard error and normal interval.

        Raises
        ------
        ParameterError
            For an unknown variable or category.
        DataError
            For a denominator estimated at zero or below.

        Examples
        --------
        The share of "yes" among women is the table's proportion for that
        cell, with the same standard error:

        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
        ...                          "sex": ["f"] * 60 + ["m"] * 40})
        >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
        >>> women = res.share({"answer": "yes"}, within={"sex": "f"})
        >>> round(women.estimate, 4), math.isclose(women.se, res.proportion_se[0, 0])
        (0.6667, True)

        Over all 100 records the share of "yes" is 1/2, with a standard error
        of 0.1: twice the 0.05 of a direct answer (variance inflation 4):

        >>> everyone = res.share({"answer": "yes"})
        >>> round(everyone.estimate, 12), round(everyone.se, 12)
        (0.5, 0.1)
        """
        return self._derived(*self._share_gradient(select, within))

    def difference(
        self, first: Selection, second: Selection, *,
        within_first: Selection | None = None, within_second: Selection | None = None,
    ) -> Derived:
        """``share(first, within=within_first) - share(second, within=within_second)``,
        with the delta-method standard error (the two shares are correlated).

        Parameters
        ----------
        first, second : mapping
            The cells of the two shares (see :meth:`mask`).
        within_first, within_second : mapping, optional
            Their denominators; all records if ``None``.

        Returns
        -------
        Derived
            The difference, its standard error and normal interval.

        Raises
        ------
        ParameterError, DataError
            As :meth:`share`.

        Examples
        --------
        The gap between women and men in the share of "yes".  Sex is not
        perturbed, so the two groups' estimates are independent and the
        variances add:

        >>> from pramkit import Manifest, PramMatrix
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
        >>> released = pd.DataFrame({"answer": ["yes"] * 35 + ["no"] * 25 + ["yes"] * 15 + ["no"] * 25,
        ...                          "sex": ["f"] * 60 + ["m"] * 40})
        >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer", by="sex")
        >>> gap = res.difference({"answer": "yes"}, {"answer": "yes"},
        ...                      within_first={"sex": "f"}, within_second={"sex": "m"})
        >>> round(gap.estimate, 4), round(gap.se, 4)
        (0.4167, 0.1991)
        >>> math.isclose(gap.se ** 2, res.proportion_se[0, 0] ** 2 + res.proportion_se[0, 1] ** 2)
        True
        """
        r1, g1 = self._share_gradient(first, within_first)
        r2, g2 = self._share_gradient(second, within_second)
        return self._derived(r1 - r2, g1 - g2)


def estimate_table(
    data: Any,
    manifest: Manifest | Sequence[Manifest],
    vars: str | Sequence[str],
    *,
    by: str | Sequence[str] | None = None,
    method: Literal["moment", "mle"] | None = None,
    variance: VarianceKind = "multinomial",
    confidence: float = 0.95,
    estimator: str | None = None,
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    weights: str | None = None,
    survey: SurveyDesign | None = None,
    replicates: Replicates | None = None,
    spec: EstimateSpec | None = None,
    decimal: str = CSV_DECIMAL,
    engine: str = "local",
    spark_master: str = SPARK_MASTER,
) -> EstimateResult:
    """Estimate the original frequency table of ``vars`` (crossed with ``by``) from released data.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, polars.LazyFrame, pyarrow.Table, str or pathlib.Path
        The released file, in memory or as a path (then streamed chunk by
        chunk: memory is bounded by the chunk and the table, not the file;
        a polars frame or an Arrow table streams the same way).
    manifest : Manifest, or sequence of Manifest
        Its manifest; a column it lists is perturbed with its matrix, any
        other column is taken as unperturbed (identity).  For a release made by
        manifests applied one after the other, all of them in the order applied
        (:mod:`pramkit.estimate.chain`): each column with the matrix of the step
        that perturbed it, variables of different steps crossed by the Kronecker
        product of their matrices; the release's receipt must record that chain
        (:func:`pramkit.engine.receipt.check_chain`).
    vars : str or sequence of str
        The column(s) to tabulate.
    by : str or sequence of str, optional
        Grouping column(s): added as the last axes of the table, and
        proportions become shares within each group.
    method : {"moment", "mle"}, optional
        ``"moment"`` (unbiased; falls back to the MLE with a warning for a
        singular or badly conditioned matrix) or ``"mle"`` (EM on the simplex);
        the same as ``estimator="unbiased"`` or ``"mle"`` (the default when
        neither is given is ``"moment"``).
    variance : {"multinomial", "pram"}, default "multinomial"
        ``"multinomial"`` (inference on the population the file was sampled
        from) or ``"pram"`` (on the original file itself); see
        :mod:`pramkit.estimate.covariance`.
    confidence : float, default 0.95
        Level of the normal intervals ``estimate -/+ z se``.
    estimator : str, optional
        A name of :data:`pramkit.estimate.ESTIMATORS`: ``"unbiased"``
        (``"moment"``), ``"mle"``, ``"norm-sub"`` or ``"rr-mle"``; the three
        last give counts in ``[0, n]`` (see :mod:`pramkit.estimate.consistent`).
        Giving both ``method`` and a different ``estimator`` is an error.
    na_values : sequence of str, default NA_VALUES
        Texts that mean missing in a CSV file besides the empty field
        (default ``("NA",)``, as ``pramkit apply`` reads it).
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).
    weights : str, optional
        A column of sampling weights: the table holds weighted totals (estimates of the
        population's counts) and the standard errors are design-based, with the PRAM
        variance given the sample (:mod:`pramkit.estimate.weighted`); records as PSUs.
    survey : pramkit.estimate.survey.SurveyDesign, optional
        The whole design instead: weights, strata, PSUs, finite-population correction,
        the single-PSU rule (Taylor linearisation).
    replicates : pramkit.estimate.weighted.Replicates, optional
        Replicate weight columns and their method: the variance from the replicates
        (the PRAM correction applied inside each), instead of linearisation.
    spec : pramkit.estimate.spec.EstimateSpec, optional
        Every setting above in one value, as ``pramkit estimate`` takes them (its survey design
        and replicate weights built from their columns), instead of the keywords: give one or the other.
    engine : {"local", "spark"}
        ``"spark"``: the counts and the sufficient statistics of a weighted estimate (per-cell weighted
        sums by stratum, PSU and fpc, squared weights, replicate sums) of a CSV or Parquet file aggregated
        by Spark (:mod:`pramkit.engine.spark.counts`, master ``spark_master``), the estimator run here;
        a Spark DataFrame as ``data`` implies it.  The same estimates (to about 1e-15 relative: weights
        added in another order).
    spark_master : str
        Spark's master URL.
    decimal : {".", ","}
        The decimal mark of the numbers a weighted estimate reads (weights, fpc, replicate weights) when they
        are texts (a CSV file's columns, or texts in a frame): ``","`` reads ``12,5`` as 12.5 and refuses a
        value not so written naming its column and row (:func:`pramkit.io.csv_numbers`), the file streamed as
        with ``"."``; categories stay text.  Weights with a decimal comma are not read by the Spark engine.

    Returns
    -------
    EstimateResult
        The estimated table, its shares and their standard errors.

    Raises
    ------
    ParameterError
        For a variable named twice, an unknown method or estimator (or two
        that disagree), a confidence outside (0, 1), a column read twice or
        perturbed jointly with others, data of another type, or a table of
        more than :data:`MAX_CELLS` cells, or matrices too large to hold dense
        (:func:`check_matrix_memory`); a variable whose law across manifests applied
        one after the other is no product of their matrices (a stratum perturbed by
        another step, a column perturbed by two steps over other columns).
    DataError
        If the data have no rows, a column has no non-missing value, every
        row has a missing value, or the released values do not match the manifest;
        or the release's receipt records another chain of manifests.

    Warns
    -----
    EstimationWarning
        When the unbiased estimator is asked for on a singular or badly
        conditioned matrix (the MLE is returned).
    pramkit.engine.receipt.ReceiptWarning
        A file whose receipt cannot say which manifest made it (none, or the file
        changed since); a release whose receipt names another manifest (a file's,
        or a frame's from :func:`pramkit.perturb_frame`) is refused
        (:func:`pramkit.engine.receipt.check_release`).

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> released = pd.DataFrame({"answer": ["yes"] * 90 + ["no"] * 10})
    >>> res = estimate_table(released, Manifest.of({"answer": m}), "answer")
    >>> res.estimator, res.table.counts.tolist(), res.out_of_range.tolist()
    ('unbiased', [130.0, -30.0], [True, True])
    >>> estimate_table(released, Manifest.of({"answer": m}), "answer", estimator="norm-sub").table.counts.tolist()
    [100.0, 0.0]

    Two manifests applied one after the other (a second one perturbing ``sex``): the table of
    ``answer`` by ``sex`` inverts the Kronecker product of their matrices:

    >>> second = Manifest.of({"sex": PramMatrix([[0.9, 0.1], [0.2, 0.8]], ("f", "m"))})
    >>> both = released.assign(sex=["f"] * 50 + ["m"] * 50)
    >>> res = estimate_table(both, [Manifest.of({"answer": m}), second], ["answer", "sex"])
    >>> res.perturbed, round(float(res.table.counts.sum()), 6)
    ((True, True), 100.0)

    The settings as one specification (the command line's):

    >>> from pramkit.estimate.spec import EstimateSpec, check_confidence
    >>> estimate_table(released, Manifest.of({"answer": m}), "answer",
    ...                spec=EstimateSpec(estimator="norm-sub")).table.counts.tolist()
    [100.0, 0.0]
    """
    if spec is not None:
        given = {"method": method, "variance": variance, "confidence": confidence, "estimator": estimator,
                 "na_values": na_values, "sep": sep, "encoding": encoding, "weights": weights, "survey": survey,
                 "replicates": replicates, "decimal": decimal, "engine": engine, "spark_master": spark_master}
        only_spec(_ESTIMATE_TABLE, given, spec)  # its own signature, even where estimate_table is wrapped
        with checked(spec):  # checked first, by the specification's rules: a setting its rule refuses is refused so
            built = spec.keywords(data)  # its survey design and replicate weights (named by the data's header)
            return _estimate(data, manifest, vars, by, spec, survey=built.get("survey"),
                             replicates=built.get("replicates"))
    made = EstimateSpec(method=method, estimator=estimator, variance=variance, confidence=confidence,
                        weights=weights, na_values=na_values, sep=sep, encoding=encoding,  # type: ignore[arg-type]
                        decimal=decimal, engine=engine, spark_master=spark_master)

    def keywords_checked() -> None:  # the keywords' own rules and messages, in place of EstimateSpec.check
        check_values(EstimateSpec, method=method, estimator=estimator, variance=variance, confidence=confidence)

    with checked(made, by=keywords_checked):
        return _estimate(data, manifest, vars, by, made, survey=survey, replicates=replicates)


#: :func:`estimate_table` itself, whose signature holds the keywords' defaults (:func:`pramkit.settings.only_spec`).
_ESTIMATE_TABLE = estimate_table


def _estimate(data: Any, manifest: Manifest | Sequence[Manifest], vars: str | Sequence[str],
              by: str | Sequence[str] | None, settings: EstimateSpec, *, survey: SurveyDesign | None,
              replicates: Replicates | None) -> EstimateResult:
    """:func:`estimate_table`'s one door: the table of ``vars`` by ``by`` estimated from ``data`` by ``settings``
    (checked: its rules are not run again here), the survey design and the replicate weights given beside them
    (built from a specification's columns, or given as they are with the keywords)."""
    method, estimator = settings.method, settings.estimator
    variance, confidence = cast(VarianceKind, settings.variance), settings.confidence
    na_values, sep, encoding, decimal = settings.na_values, settings.sep, settings.encoding, settings.decimal
    engine, spark_master, weights = settings.engine, settings.spark_master, settings.weights
    names = _names(vars, "vars")
    groups = _names(by, "by") if by is not None else []
    axes = names + groups
    if len(set(axes)) != len(axes):
        raise ParameterError(f"a variable appears twice in vars/by: {axes}")
    chosen = _estimator(method, estimator, confidence)
    weighted = weights is not None or survey is not None or replicates is not None
    check_variance_kind(variance, weighted=weighted)
    chain = ManifestChain.of(manifest)
    read = _read_columns(chain, axes)
    raw = [c for a in axes for c in read[a]]
    shared = _shared_strata(chain, axes, read)
    if shared and weighted:
        raise ParameterError(f"{', '.join(axes)} share the stratum {shared[0]!r}: their table is estimated without "
                             "weights or a survey design (tabulate one of them with the weights)")
    declared = {c: levels for a in axes if a in chain.names for c, levels in _levels(chain[a]).items()}
    unchecked = check_chain(data, chain.manifests)  # a release of other manifests gives wrong estimates: refused
    if unchecked:
        warnings.warn(unchecked, ReceiptWarning, stacklevel=3)  # the caller of estimate_table
    on_spark = _on_spark(data, engine)
    check_decimal(decimal, sep if isinstance(data, (str, Path)) else None, weighted=weighted,
                  engine="spark" if on_spark else "local")  # before any record is read
    reading: dict[str, Any] = {"na_values": na_values, "sep": sep, "encoding": encoding}
    if on_spark:
        reading["master"] = spark_master  # the survey's sums are Spark's too
    else:
        reading["decimal"] = decimal  # the design's numbers read with the file's decimal mark
    counted = _count(data, list(dict.fromkeys(raw)), declared, reading)
    raw_categories = counted.categories
    if shared:
        counted = _repeat_strata(counted, raw)
    kept: dict[str, list[tuple]] = {}
    if raw != axes:
        counted, kept = _cells_table(counted, chain, axes, read)
    matrices = _matrices(chain, axes, kept)
    check_matrix_memory(axes, matrices)
    categories = counted.categories
    _check_table(counted, axes)
    if weighted:
        design = _design(weights, survey, replicates)
        table = _survey_estimate(data, chain, axes, read, raw_categories, design, replicates, chosen, reading, kept)
    else:
        table = estimate_counts(counted.counts.astype(float), matrices, estimator=chosen, variance=variance)
    if table.identifiability is not None:  # name the variables rather than the axes
        ident = table.identifiability
        table = dataclasses.replace(table, note=table.note.replace(ident.message, ident.message_for(axes)))
    proportion, proportion_se = _shares(table, len(names), len(axes))
    return EstimateResult(
        variables=tuple(axes), by=tuple(groups), categories=tuple(categories),
        perturbed=tuple(m is not None for m in matrices), table=table,
        proportion=proportion, proportion_se=proportion_se, confidence=confidence,
        dropped=counted.missing, requested_estimator=chosen,
        weights=survey.weights if survey is not None else weights,
    )


def _count(data: Any, columns: list[str], declared: Mapping[str, Any], reading: Mapping[str, Any]) -> CountTable:
    """The released data's counts of ``columns`` (a pandas frame in memory; a file, a polars frame or an Arrow
    table streamed; Spark's aggregation with ``master`` in ``reading``), ``reading``: how a CSV file is read."""
    if "master" in reading:
        from pramkit.engine.spark.counts import count_file as spark_count

        return spark_count(data, columns, categories=declared, **reading)
    if isinstance(data, pd.DataFrame):
        if len(data) == 0:
            raise DataError("the data have no rows")
        return count_frame(data, columns, categories=declared)
    if isinstance(data, (str, Path)) or streamed(data):  # a polars frame or an Arrow table streams like a file
        return count_file(data, columns, categories=declared, **reading)
    raise ParameterError(f"data must be a pandas or polars DataFrame, a polars LazyFrame, an Arrow table or a "
                         f"file path, not {type(data).__name__}")


def _check_table(counted: CountTable, axes: Sequence[str]) -> None:
    """Refuse a table with an empty axis, too many cells, or no record without a missing value."""
    for name, cats in zip(axes, counted.categories):
        if not cats:
            raise DataError(f"column {name!r} has no non-missing value")
    shape = tuple(len(c) for c in counted.categories)
    if math.prod(shape) > MAX_CELLS:
        raise ParameterError(
            f"the table would have {math.prod(shape)} cells (more than {MAX_CELLS}); tabulate fewer variables"
        )
    if counted.counts.sum() == 0:
        raise DataError(f"every row has a missing value in {axes}; nothing to estimate")


def _on_spark(data: Any, engine: str) -> bool:
    """Whether the data is counted by Spark: ``engine="spark"`` (a CSV or Parquet file), or a Spark DataFrame."""
    from pramkit.engine.spark.counts import is_spark_frame

    if is_spark_frame(data):
        return True
    if engine_name(engine) == "spark" and not isinstance(data, (str, Path)):
        raise ParameterError(f"the Spark engine estimates from a CSV or Parquet file or a Spark DataFrame, "
                             f"not {type(data).__name__}")
    return engine == "spark"


def _estimator(method: str | None, estimator: str | None, confidence: float) -> str:
    """The estimator asked for (``method`` and ``estimator`` agreeing), the confidence level checked."""
    if method is not None and method not in ("moment", "mle"):
        raise ParameterError(f"method must be 'moment' or 'mle', not {method!r}")
    chosen = estimator_name(estimator if estimator is not None else method or "moment")
    if method is not None and estimator is not None and estimator_name(method) != chosen:
        raise ParameterError(f"method {method!r} and estimator {estimator!r} disagree; give one of them")
    check_confidence(confidence)
    return chosen


def _shares(table: TableEstimate, within: int, axes: int) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's share of its group (the last ``axes - within`` axes define the groups) and its standard error."""
    group_axes = tuple(range(within, axes))
    if table.covariance is not None:
        proportion, share_var = table.covariance.share_variances(group_axes)
        return proportion, np.sqrt(share_var)
    if table.identifiability is not None:
        proportion, share_var = table.identifiability.covariance.share_variances(
            group_axes, table.identifiability.identifiable)
        return proportion, np.sqrt(share_var)
    with np.errstate(invalid="ignore", divide="ignore"):
        proportion = table.counts / table.counts.sum(axis=tuple(range(within)), keepdims=True)
    return proportion, np.full(table.counts.shape, np.nan)


def _design(weights: str | None, survey: SurveyDesign | None, replicates: Replicates | None) -> SurveyDesign:
    """The survey design of the call: ``survey``, or records as PSUs with ``weights``."""
    if survey is not None:
        if weights is not None and weights != survey.weights:
            raise ParameterError(f"weights {weights!r} and the survey design's weights {survey.weights!r} differ; "
                                 "give one of them")
        return survey
    if weights is None:
        raise ParameterError("replicate weights need the full-sample weights too: give weights= (or survey=)")
    return SurveyDesign(weights)


def _survey_estimate(data: pd.DataFrame | str | Path, manifest: ManifestChain, axes: Sequence[str],
                     read: Mapping[str, tuple[str, ...]], raw_categories: Sequence[Sequence[Label]],
                     design: SurveyDesign, replicates: Replicates | None, estimator: str,
                     reading: Mapping[str, Any], kept: Mapping[str, Sequence[tuple]]) -> TableEstimate:
    """Weighted totals from one pass over the released file and their design-based covariance
    (:mod:`pramkit.estimate.weighted`); ``reading``: how a file is read (``na_values``, ``sep``, ``encoding``,
    ``decimal``: the weights', fpc's and replicates' texts read with it); ``kept``: each axis's combinations
    released exactly (rule breakers)."""
    from pramkit.estimate.weighted import design_covariance, layout_of, survey_counts

    _check_household_psus(manifest, axes, design, replicates)
    raw = [c for a in axes for c in read[a]]
    layout = layout_of(raw, raw_categories, [read[a] for a in axes],
                       [[*manifest[a].matrix.categories, *kept.get(a, ())] if len(read[a]) > 1 else None
                        for a in axes])
    extra = [c for c in dict.fromkeys(design.columns + list(replicates.columns if replicates else ())) if c not in raw]
    if "master" in reading:  # the Spark engine: its groups of records, summed
        from pramkit.engine.spark.counts import SQUARES, TIMES, survey_combinations

        labels = [c for c in design.columns if c != design.weights]
        grouped = survey_combinations(data, raw, weights=design.weights, design=labels,
                                      replicates=replicates.columns if replicates else (), **reading)
        totals = survey_counts([grouped], layout, design, replicates, times=TIMES, squares=SQUARES)
    else:
        batches, rows = _batches(data, raw + extra, reading, "the survey design")
        totals = survey_counts(batches, layout, design, replicates, total_rows=rows,
                               decimal=reading.get("decimal", CSV_DECIMAL),
                               where=repr(str(data)) if isinstance(data, (str, Path)) else "")
    matrices = _matrices(manifest, axes, kept)
    table = estimate_counts(totals.total.reshape(layout.shape), matrices, estimator=estimator, variance="pram")
    cov = design_covariance(totals, matrices, layout.shape, table.counts, replicates)
    se = np.full(layout.shape, np.nan) if table.estimator == "norm-sub" else np.sqrt(cov.cell_variances())
    ident = table.identifiability
    if ident is not None:  # the groups' totals: their design-based variance, as the cells'
        ident = ident.with_variances(cov)
    return dataclasses.replace(table, se=se, covariance=None if table.estimator == "norm-sub" else cov,
                               variance=cov.kind, identifiability=ident)


def _check_household_psus(manifest: ManifestChain, axes: Sequence[str], design: SurveyDesign,
                          replicates: Replicates | None) -> None:
    """A variable drawn once per household shares its draw among the members: records as PSUs are refused."""
    drawn = [a for a in axes if a in manifest.names and manifest[a].unit]
    if drawn and design.psu is None and replicates is None:
        units = sorted({unit for a in drawn if (unit := manifest[a].unit) is not None})
        raise ParameterError(f"{', '.join(drawn)} is perturbed once per household ({', '.join(units)}), so a "
                             "household's members share their draw: give the PSUs (--psu: the households or a unit "
                             "that holds whole households)")


def _batches(data: pd.DataFrame | str | Path, columns: list[str], reading: Mapping[str, Any],
             what: str) -> tuple[Any, int | None]:
    """The chunks of ``columns`` of a DataFrame (one chunk) or a file (streamed), and the rows expected."""
    from pramkit.io import iter_batches

    if isinstance(data, pd.DataFrame):
        absent = [c for c in columns if c not in data.columns]
        if absent:
            raise DataError(f"column(s) {absent} of {what} are not in the data")
        return [pandas_table(data[columns])], len(data)
    meta, batches = iter_batches(data, columns=columns, **reading)
    return batches, meta.rows


def _read_columns(manifest: ManifestChain, axes: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The columns each axis reads: its own, or, for a variable over several columns (joint, or
    with strata), all of them; a column perturbed jointly with others is refused by its name."""
    out: dict[str, tuple[str, ...]] = {}
    for a in axes:
        if a in manifest.names:
            out[a] = manifest[a].read_columns
            continue
        owner = next((v.name for v in manifest.variables if a in v.columns and v.name != a), None)
        if owner is not None:
            raise ParameterError(f"column {a!r} is perturbed jointly with others; tabulate its variable {owner!r} "
                                 "(its categories are the cells)")
        out[a] = (a,)
    return out


def _shared_strata(manifest: ManifestChain, axes: Sequence[str], read: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The columns several axes read, each a stratum of every variable that reads it (their table is then
    estimated on the variables' cells, records of one stratum falling in cells of one stratum); a column
    read twice otherwise (named in vars or by beside a variable whose cells give it, or perturbed jointly)
    is refused."""
    raw = [c for a in axes for c in read[a]]
    twice = [c for c in dict.fromkeys(raw) if raw.count(c) > 1]
    for column in twice:
        owners = [a for a in axes if column in read[a]]
        if not all(a in manifest.names and column in manifest[a].given for a in owners):
            owner = next(a for a in owners if len(read[a]) > 1)
            raise ParameterError(f"{column!r} is part of the cells of {owner!r} (a stratum, or a column perturbed "
                                 f"jointly), whose estimates already give it: leave {column!r} out of vars and by")
    return twice


def _repeat_strata(counted: Any, raw: Sequence[str]) -> Any:
    """The counts over ``raw``, whose repeated columns (shared strata) are repeated axes: a record's count
    sits where every copy of a stratum column holds its value, and every other cell is 0 (no record lies in
    two strata).  The product of the variables' block matrices then maps the table exactly as the release
    did: each block keeps its stratum, so a cell of mismatched strata holds 0 before and after."""
    from pramkit.counts import CountTable

    at = [counted.columns.index(c) for c in raw]
    sizes = [counted.counts.shape[i] for i in at]
    out = np.zeros(sizes, dtype=counted.counts.dtype)
    where = np.indices(counted.counts.shape)
    out[tuple(where[i] for i in at)] = counted.counts
    return CountTable(tuple(raw), tuple(counted.categories[i] for i in at), out, counted.rows, counted.missing)


def _levels(variable: Any) -> dict[str, list[Label]]:
    """Each read column's categories: the variable's own, or the values its cells take in that column."""
    cats = variable.matrix.categories
    if not variable.is_joint:
        return {variable.name: list(cats)}
    return dict(zip(variable.read_columns, variable.joint_levels()))  # the engine's own reading, column by column


def _cells_table(counted: Any, manifest: ManifestChain, axes: Sequence[str],
                 read: Mapping[str, tuple[str, ...]]) -> tuple[Any, dict[str, list[tuple]]]:
    """The counts with each multi-column variable's columns merged into one axis over its cells
    (its matrix's categories), and each such axis's combinations released exactly.

    A combination outside the cells (forbidden, or out of its stratum) in the released file is an
    error, since the manifest never releases one, unless the design kept the records that break a
    rule (:attr:`pramkit.Manifest.keeps_rule_breakers`): the engine released those unperturbed, so
    each such combination that occurs becomes a cell of its own after the variable's cells, which
    the release maps to itself (:func:`released_exactly`)."""
    from pramkit.counts import CountTable

    sizes = dict(zip(counted.columns, (len(c) for c in counted.categories)))
    levels = dict(zip(counted.columns, counted.categories))
    merged = counted.counts.reshape([math.prod(sizes[c] for c in read[a]) for a in axes])
    categories: list[tuple] = []
    kept: dict[str, list[tuple]] = {}
    for axis, a in enumerate(axes):
        if len(read[a]) == 1:
            categories.append(levels[a])
            continue
        cells = manifest[a].matrix.categories
        index = cell_positions([joint_cell(c) for c in cells], [levels[c] for c in read[a]])
        others = tuple(i for i in range(merged.ndim) if i != axis)
        seen = np.flatnonzero(merged.sum(axis=others) if others else merged)
        outside = np.setdiff1d(seen, index)
        if outside.size and not manifest.keeps_rule_breakers(a):
            count = int(np.take(merged, outside, axis=axis).sum())
            raise DataError(f"the released file holds {count} record(s) in combinations of "
                            f"{', '.join(read[a])} that {a!r} never releases; was it released with this manifest?")
        combos = np.unravel_index(outside, [sizes[c] for c in read[a]])
        kept[a] = [tuple(levels[c][int(i[k])] for c, i in zip(read[a], combos)) for k in range(outside.size)]
        merged = np.take(merged, np.concatenate([index, outside]), axis=axis)
        categories.append((*cells, *kept[a]))
    return CountTable(tuple(axes), tuple(categories), merged, counted.rows, counted.missing), kept


def _matrices(manifest: ManifestChain, axes: Sequence[str],
              kept: Mapping[str, Sequence[tuple]]) -> list[PramMatrix | None]:
    """Each axis's matrix (``None`` for a column not perturbed), extended by the combinations it
    released exactly (:func:`released_exactly`)."""
    return [None if a not in manifest.names else released_exactly(manifest[a].release_matrix, kept.get(a, ()))
            for a in axes]


def released_exactly(matrix: PramMatrix, extra: Sequence[Label]) -> PramMatrix:
    """The law of a variable whose records in the combinations ``extra`` (outside its cells: they break
    an edit rule, and the design kept them) are released unperturbed: ``blockdiag(M, I)``.

    A record in a cell is released through ``M``, which never leaves the cells; a record outside is
    released as it is.  So the released table ``z = (z_A, z_B)`` of a table ``x = (x_A, x_B)`` has
    ``E[z_A] = M^T x_A`` and ``z_B = x_B``, the PRAM of ``x`` by ``blockdiag(M, I)``: the unbiased
    estimate is ``(M^-T z_A, z_B)``, the released counts of the kept combinations being the original
    ones, and every estimator and variance of :mod:`pramkit.estimate` applies to the extended matrix
    as it is (docs/estimation.md, *Records released exactly*).

    Parameters
    ----------
    matrix : PramMatrix
        The variable's law over its cells.
    extra : sequence of labels
        The kept combinations, none of them a cell.

    Returns
    -------
    PramMatrix
        ``matrix`` itself without ``extra``; else the dense block-diagonal law over the cells, then
        ``extra``.

    Examples
    --------
    >>> m = PramMatrix([[0.8, 0.2], [0.3, 0.7]], [("child", "none"), ("adult", "work")])
    >>> released_exactly(m, [("child", "work")]).matrix.tolist()
    [[0.8, 0.2, 0.0], [0.3, 0.7, 0.0], [0.0, 0.0, 1.0]]
    """
    if not extra:
        return matrix
    s, k = matrix.size, len(extra)
    dense = np.zeros((s + k, s + k))
    dense[:s, :s] = matrix.matrix
    dense[s:, s:] = np.eye(k)
    return PramMatrix(dense, [*matrix.categories, *extra], matrix.provenance)


def _names(value: str | Sequence[str], what: str) -> list[str]:
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ParameterError(f"{what} must name at least one column")
    return names
