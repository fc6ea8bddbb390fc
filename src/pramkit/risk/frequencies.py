"""Frequencies of key-variable combinations (Shlomo and Skinner 2012, sec. 2.1).

The key variables cross-classify the records into the cells ``j = 1..k`` of a
contingency table.  For each record this module gives the sample count
``f_j`` of its cell and, with survey weights, the estimated population count
``F_j = sum of the weights in the cell``; sample uniques (``f_j = 1``) and
doubles (``f_j = 2``) are the records at risk of identification.

Missing key values are handled as the user declares: ``missing="category"``
makes "missing" a category of its own (labelled ``None``, the convention of
:mod:`pramkit.codebook`), ``missing="exclude"`` leaves every record with a
missing key out of all counts.  The policy is part of every result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from pramkit.codebook import MISSING, categories_of, encode
from pramkit.counts import CountTable, cell_index, count_codes
from pramkit.errors import DataError
from pramkit.matrix import Label

MissingKeys = Literal["category", "exclude"]
_POLICIES = ("category", "exclude")


@dataclass(frozen=True, eq=False)
class KeyTable:
    """Records encoded on the key variables: the records behind a :class:`pramkit.counts.CountTable`.

    What the records add to their table is each record's cell, for the per-record
    figures (:func:`frequencies_of`), which need no dense table; :meth:`count`
    counts the table (over every key or some of them) when it is wanted.

    Parameters
    ----------
    keys : tuple of str
        The key variables, in table-axis order.
    categories : tuple of tuples
        The categories of each key (``None`` = missing when declared a category).
    codes : numpy.ndarray
        ``(n, d)`` codes of every record (``-1`` only in excluded rows).
    included : numpy.ndarray
        Which records enter the counts (all of them with ``missing="category"``).
    missing : {"category", "exclude"}
        The missing-value policy.

    Examples
    --------
    >>> data = pd.DataFrame({"a": [1, 1, 2, None], "b": ["u", "v", "v", "v"]})
    >>> t = key_table(data, ["a", "b"], missing="exclude")
    >>> t.shape, t.n, t.cell_index().tolist()
    ((2, 2), 3, [0, 1, 3])
    >>> t.count().counts.tolist()
    [[1, 1], [0, 1]]
    """

    keys: tuple[str, ...]
    categories: tuple[tuple[Label, ...], ...]
    codes: np.ndarray
    included: np.ndarray
    missing: MissingKeys

    @property
    def shape(self) -> tuple[int, ...]:
        """Levels of each key: the shape of the full contingency table."""
        return tuple(len(c) for c in self.categories)

    @property
    def cells(self) -> int:
        """Number k of cells of the full cross-classification."""
        return math.prod(self.shape)

    @property
    def n(self) -> int:
        """Number of records that enter the counts."""
        return int(self.included.sum())

    def cell_index(self) -> np.ndarray:
        """Flat (C-order) cell index of every included record (:func:`pramkit.counts.cell_index`).

        Examples
        --------
        >>> key_table(pd.DataFrame({"a": [2, 1, 2], "b": [0, 1, 1]}), ["a", "b"]).cell_index().tolist()
        [2, 1, 3]
        """
        return cell_index(self.codes[self.included].T, self.shape, self.keys)

    def count(self, axes: Sequence[int] | None = None, *, weights: ArrayLike | None = None) -> CountTable:
        """The contingency table of the included records: over every key, or over the keys at ``axes``.

        Parameters
        ----------
        axes : sequence of int, optional
            Positions of the keys to count over (in the order given); default all of them.
        weights : array of float, optional
            One weight per record of the data; their sums per cell are the table's ``weight_sums``.

        Returns
        -------
        pramkit.counts.CountTable
            ``rows`` is the number of records, ``missing`` the records excluded.

        Examples
        --------
        >>> data = pd.DataFrame({"a": [1, 1, 2, None], "b": ["u", "v", "v", "v"]})
        >>> t = key_table(data, ["a", "b"], missing="exclude").count([1], weights=[1.0, 2.0, 4.0, 8.0])
        >>> t.columns, t.counts.tolist(), t.weight_sums.tolist(), t.missing
        (('b',), [1, 2], [1.0, 6.0], 1)
        """
        axes = range(len(self.keys)) if axes is None else axes
        codes = np.where(self.included, self.codes[:, list(axes)].T, MISSING)
        return count_codes([self.keys[a] for a in axes], [self.categories[a] for a in axes], codes, weights=weights)

    def dense_counts(self) -> np.ndarray:
        """The full table of sample counts f_j, empty cells included (float).

        Examples
        --------
        >>> key_table(pd.DataFrame({"a": [1, 1, 2]}), ["a"]).dense_counts().tolist()
        [2.0, 1.0]
        """
        return self.count().counts.astype(float)


def key_table(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    missing: MissingKeys = "category",
    categories: Sequence[Sequence[Label]] | None = None,
) -> KeyTable:
    """Encode the key variables of ``data`` (categories from the data unless given)."""
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, not {type(data).__name__}")
    keys = tuple(keys)
    if not keys:
        raise DataError("give at least one key variable")
    if len(set(keys)) != len(keys):
        raise DataError(f"a key variable is listed twice: {list(keys)}")
    unknown = [k for k in keys if k not in data.columns]
    if unknown:
        raise DataError(f"unknown key column(s) {unknown}; the data have {list(map(str, data.columns))}")
    if len(data) == 0:
        raise DataError("the data have no rows")
    if missing not in _POLICIES:
        raise DataError(f"missing must be one of {_POLICIES}, not {missing!r}")
    if categories is not None and len(categories) != len(keys):
        raise DataError(f"{len(categories)} category lists given for {len(keys)} keys")
    cats: list[tuple[Label, ...]] = []
    cols: list[np.ndarray] = []
    for i, key in enumerate(keys):
        series = data[key]
        c = list(categories[i]) if categories is not None else categories_of(series)
        has_missing = bool(series.isna().any())
        as_category = categories is None and missing == "category" and has_missing and None not in c
        if as_category:
            c.append(None)
        if not c:
            raise DataError(f"key column {key!r} has no non-missing value")
        policy = "category" if (missing == "category" and None in c) else "keep"
        cols.append(encode(series, c, column=key, missing=policy))
        cats.append(tuple(c))
    codes = np.column_stack(cols)
    included = (codes != MISSING).all(axis=1)
    if not included.any():
        raise DataError("every record has a missing key value; use missing='category' to count them")
    return KeyTable(keys, tuple(cats), codes, included, missing)


@dataclass(frozen=True, eq=False)
class Frequencies:
    """Sample (and estimated population) frequencies of the key combinations.

    n: records counted (excluded records left out)
    excluded: records left out because a key is missing (``missing="exclude"``)
    missing: the missing-value policy
    combinations: distinct key combinations in the sample (non-empty cells)
    sample_uniques, sample_doubles: records whose combination occurs once, twice
    f: per-record sample count of its combination (0 for an excluded record)
    F: per-record estimated population count (sum of weights; ``None`` without weights;
        NaN for an excluded record)
    """

    keys: tuple[str, ...]
    n: int
    excluded: int
    missing: MissingKeys
    combinations: int
    sample_uniques: int
    sample_doubles: int
    f: np.ndarray
    F: np.ndarray | None


def record_weights(data: pd.DataFrame, weights: str | Sequence[float] | np.ndarray) -> np.ndarray:
    """Survey weights as a float array: a column name or one value per record;
    finite and positive, else :class:`DataError`."""
    if isinstance(weights, str):
        if weights not in data.columns:
            raise DataError(f"unknown weight column {weights!r}; the data have {list(map(str, data.columns))}")
        raw: Any = pd.to_numeric(data[weights], errors="coerce")
        what = f"weight column {weights!r}"
    else:
        raw = weights
        what = "the weights"
    w = np.asarray(raw, dtype=float)
    if w.shape != (len(data),):
        raise DataError(f"{what} must have one value per record ({len(data)}), got shape {w.shape}")
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{what}: row {i + 1} has weight {w[i]!r}; weights must be finite and positive")
    return w


def frequencies(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    weights: str | Sequence[float] | np.ndarray | None = None,
    missing: MissingKeys = "category",
) -> Frequencies:
    """Per-record f_j (and F_j = sum of weights) on the key variables ``keys``."""
    table = key_table(data, keys, missing=missing)
    w = None if weights is None else record_weights(data, weights)
    return frequencies_of(table, w)


def frequencies_of(table: KeyTable, weights: np.ndarray | None) -> Frequencies:
    """:func:`frequencies` of records already encoded."""
    n_all = table.codes.shape[0]
    _, inverse, counts = np.unique(table.cell_index(), return_inverse=True, return_counts=True)
    f = np.zeros(n_all, dtype=np.int64)
    f[table.included] = counts[inverse]
    F = None
    if weights is not None:
        sums = np.bincount(inverse, weights=weights[table.included], minlength=counts.size)
        F = np.full(n_all, np.nan)
        F[table.included] = sums[inverse]
    return Frequencies(
        keys=table.keys,
        n=table.n,
        excluded=n_all - table.n,
        missing=table.missing,
        combinations=int(counts.size),
        sample_uniques=int((counts == 1).sum()),
        sample_doubles=int((counts == 2).sum()) * 2,
        f=f,
        F=F,
    )
