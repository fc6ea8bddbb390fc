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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from pramkit.codebook import MISSING, categories_of, encode
from pramkit.counts import CountTable, cell_index, count_codes
from pramkit.errors import DataError
from pramkit.frames import column, eager, frame_columns
from pramkit.io import CSV_DECIMAL, csv_numbers
from pramkit.labels import Label

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

        Returns
        -------
        numpy.ndarray
            One index per included record, in data order.

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

        Returns
        -------
        numpy.ndarray
            Of shape :attr:`shape`; it sums to :attr:`n`.

        Examples
        --------
        >>> key_table(pd.DataFrame({"a": [1, 1, 2]}), ["a"]).dense_counts().tolist()
        [2.0, 1.0]
        """
        return self.count().counts.astype(float)


def _found_categories(series: Any, key: str) -> list[Label]:
    """:func:`categories_of` a key column; an Arrow dictionary column (text read as codes) from the entries
    its records use, without decoding the column (a spelling clash is then looked up in the column, for
    the rows its message names)."""
    if isinstance(series, (pa.Array, pa.ChunkedArray)) and pa.types.is_dictionary(series.type):
        chunks = series.chunks if isinstance(series, pa.ChunkedArray) else [series]
        used = [c.dictionary.take(pc.drop_null(pc.unique(c.indices))) for c in chunks]
        try:
            return categories_of(pa.chunked_array(used, type=series.type.value_type), column=key)
        except DataError:
            pass
    return categories_of(series, column=key)


#: Why a key table is refused when ``missing="exclude"`` leaves no record.
_NONE_COUNTED = "every record has a missing key value; use missing='category' to count them"


def _checked(data: Any, keys: Sequence[str], missing: str) -> tuple[Any, tuple[str, ...]]:
    """The data (a polars frame read as Arrow) and the keys, refused as :func:`key_table` says."""
    data = eager(data)
    present = frame_columns(data)
    keys = tuple(keys)
    if not keys:
        raise DataError("give at least one key variable")
    if len(set(keys)) != len(keys):
        raise DataError(f"a key variable is listed twice: {list(keys)}")
    unknown = [k for k in keys if k not in present]
    if unknown:
        raise DataError(f"unknown key column(s) {unknown}; the data have {present}")
    if len(data) == 0:
        raise DataError("the data have no rows")
    if missing not in _POLICIES:
        raise DataError(f"missing must be one of {_POLICIES}, not {missing!r}")
    return data, keys


def _missing_values(series: Any) -> np.ndarray:
    """Which values of a key column (a pandas Series or an Arrow array) are missing."""
    if isinstance(series, pd.Series):
        return series.isna().to_numpy()
    return np.asarray(pc.is_null(series, nan_is_null=True), dtype=bool)


def _categories(series: Any, key: str, missing: MissingKeys, given: Sequence[Label] | None) -> list[Label]:
    """A key's categories: ``given``, or those found in its column and, with ``missing="category"``, ``None``
    for its missing values; refused when there is none."""
    c = list(given) if given is not None else _found_categories(series, key)
    if given is None and missing == "category" and None not in c and _missing_values(series).any():
        c.append(None)
    if not c:
        raise DataError(f"key column {key!r} has no non-missing value")
    return c


def key_categories(data: Any, keys: Sequence[str], *,
                   missing: MissingKeys = "category") -> tuple[tuple[Label, ...], ...]:
    """The categories :func:`key_table` finds for each key, without encoding the records: what a table over
    the declared categories of some keys takes for the others.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records.
    keys : sequence of str
        The key variables, distinct.
    missing : {"category", "exclude"}
        As :func:`key_table`.

    Returns
    -------
    tuple of tuples
        ``key_table(data, keys, missing=missing).categories``.

    Raises
    ------
    DataError
        As :func:`key_table` without ``categories``.

    Examples
    --------
    >>> data = pd.DataFrame({"sex": ["m", "f", None], "age": ["20", "30", "20"]})
    >>> key_categories(data, ["sex", "age"])
    (('f', 'm', None), (20, 30))
    >>> key_categories(data, ["sex", "age"], missing="exclude")
    (('f', 'm'), (20, 30))
    """
    data, keys = _checked(data, keys, missing)
    found = []
    counted = np.ones(len(data), dtype=bool)
    for key in keys:
        series = column(data, key)
        found.append(tuple(_categories(series, key, missing, None)))
        if missing == "exclude":
            counted &= ~_missing_values(series)
    if not counted.any():
        raise DataError(_NONE_COUNTED)
    return tuple(found)


def key_table(
    data: Any,
    keys: Sequence[str],
    *,
    missing: MissingKeys = "category",
    categories: Sequence[Sequence[Label]] | None = None,
) -> KeyTable:
    """Encode the key variables of ``data`` (categories from the data unless given).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records.
    keys : sequence of str
        The key variables, distinct.
    missing : {"category", "exclude"}
        A key with missing values gets a ``None`` category (when its
        categories are found in the data), or its records are excluded.
    categories : sequence of sequences, optional
        Each key's categories (then a ``None`` category counts the missing
        values; without one they are excluded).

    Returns
    -------
    KeyTable

    Raises
    ------
    DataError
        ``data`` is not a DataFrame or has no rows, no key, a key twice, an
        unknown key, a key with no value, a value outside given categories,
        an unknown policy, or every record has a missing key.

    Examples
    --------
    >>> data = pd.DataFrame({"sex": ["m", "f", None], "age": ["20", "30", "20"]})
    >>> t = key_table(data, ["sex", "age"])
    >>> t.categories, t.n  # missing sex is a category
    ((('f', 'm', None), (20, 30)), 3)
    >>> t = key_table(data, ["sex", "age"], missing="exclude", categories=[["f", "m"], ["20", "30", "40"]])
    >>> t.shape, t.n, t.included.tolist()
    ((2, 3), 2, [True, True, False])
    """
    data, keys = _checked(data, keys, missing)
    if categories is not None and len(categories) != len(keys):
        raise DataError(f"{len(categories)} category lists given for {len(keys)} keys")
    cats: list[tuple[Label, ...]] = []
    codes = np.empty((len(data), len(keys)), dtype=np.intp)  # filled column by column: no second copy
    for i, key in enumerate(keys):
        series = column(data, key)
        c = _categories(series, key, missing, None if categories is None else categories[i])
        policy: Literal["keep", "category"] = "category" if (missing == "category" and None in c) else "keep"
        codes[:, i] = encode(series, c, column=key, missing=policy)
        cats.append(tuple(c))
    included = (codes != MISSING).all(axis=1)
    if not included.any():
        raise DataError(_NONE_COUNTED)
    return KeyTable(keys, tuple(cats), codes, included, missing)


@dataclass(frozen=True, eq=False)
class Frequencies:
    """Sample (and estimated population) frequencies of the key combinations.

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    n : int
        Records counted (excluded records left out).
    excluded : int
        Records left out because a key is missing (``missing="exclude"``).
    missing : {"category", "exclude"}
        The missing-value policy.
    combinations : int
        Distinct key combinations in the sample (non-empty cells).
    sample_uniques, sample_doubles : int
        Records whose combination occurs once, twice.
    f : numpy.ndarray
        Per-record sample count of its combination (0 for an excluded record).
    F : numpy.ndarray or None
        Per-record estimated population count (sum of weights; ``None`` without weights;
        NaN for an excluded record).

    Examples
    --------
    >>> data = pd.DataFrame({"sex": ["m", "f", "f", "m"], "age": ["20", "20", "30", "20"]})
    >>> fr = frequencies(data, ["sex", "age"])
    >>> fr.combinations, fr.sample_uniques, fr.sample_doubles, fr.f.tolist()
    (3, 2, 2, [2, 1, 1, 2])
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


def record_weights(data: Any, weights: str | Sequence[float] | np.ndarray, *, decimal: str = CSV_DECIMAL) -> np.ndarray:
    """Survey weights as a float array: a column name or one value per record;
    finite and positive, else :class:`DataError`.  A column of texts (a CSV file's) is read with the decimal
    mark ``decimal`` (:func:`pramkit.io.csv_numbers`).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records.
    weights : str or sequence of float
        A column of ``data`` (values that are not numbers are invalid), or one weight per record.
    decimal : {".", ","}
        The decimal mark of a column of texts (``","``: a text not so written is refused naming its row).

    Returns
    -------
    numpy.ndarray
        One float weight per record.

    Raises
    ------
    DataError
        An unknown column, a wrong number of weights, or a weight that is
        not finite and positive (naming its row, counted from 1).

    Examples
    --------
    >>> data = pd.DataFrame({"sex": ["m", "f"], "w": ["10", "12.5"]})
    >>> record_weights(data, "w").tolist(), record_weights(data, [1, 2]).tolist()
    ([10.0, 12.5], [1.0, 2.0])
    >>> record_weights(data, [1])
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: the weights must have one value per record (2), got shape (1,)
    """
    data = eager(data)  # a polars frame is read as Arrow
    if isinstance(weights, str):
        present = frame_columns(data)
        if weights not in present:
            raise DataError(f"unknown weight column {weights!r}; the data have {present}")
        values = column(data, weights)
        raw: Any = csv_numbers(values if isinstance(values, pd.Series) else values.to_numpy(), weights,
                               decimal=decimal)
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
        raise DataError(f"{what}: row {i + 1} has weight {float(w[i])!r}; weights must be finite and positive")
    return w


def frequencies(
    data: Any,
    keys: Sequence[str],
    *,
    weights: str | Sequence[float] | np.ndarray | None = None,
    missing: MissingKeys = "category",
) -> Frequencies:
    """Per-record f_j (and F_j = sum of weights) on the key variables ``keys``.

    Shlomo and Skinner (2012), sec. 2.1: ``f_j`` is the sample count of the
    record's cell ``j``; with survey weights the sum of the weights in the cell
    estimates its population count ``F_j``.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records.
    keys : sequence of str
        The key variables.
    weights : str or sequence of float, optional
        A weight column or one weight per record.
    missing : {"category", "exclude"}
        The missing-value policy (module docstring).

    Returns
    -------
    Frequencies

    Raises
    ------
    DataError
        As :func:`key_table` and :func:`record_weights`.

    Examples
    --------
    The record with a missing key is its own cell, or is left out:

    >>> data = pd.DataFrame({"sex": ["m", "f", "f", "m", "f", None], "age": ["20", "20", "30", "20", "20", "30"],
    ...                      "w": [10.0, 10.0, 20.0, 10.0, 40.0, 5.0]})
    >>> fr = frequencies(data, ["sex", "age"], weights="w")
    >>> fr.f.tolist(), fr.F.tolist(), fr.sample_uniques
    ([2, 2, 1, 2, 2, 1], [20.0, 50.0, 20.0, 20.0, 50.0, 5.0], 2)
    >>> fr = frequencies(data, ["sex", "age"], missing="exclude")
    >>> fr.n, fr.excluded, fr.f.tolist(), fr.F is None
    (5, 1, [2, 2, 1, 2, 2, 0], True)
    """
    table = key_table(data, keys, missing=missing)
    w = None if weights is None else record_weights(data, weights)
    return frequencies_of(table, w)


def frequencies_of(table: KeyTable, weights: np.ndarray | None) -> Frequencies:
    """:func:`frequencies` of records already encoded.

    Parameters
    ----------
    table : KeyTable
        The records encoded on the keys (:func:`key_table`).
    weights : numpy.ndarray or None
        One weight per record of the data (:func:`record_weights`).

    Returns
    -------
    Frequencies

    Examples
    --------
    The sample counts of the records sum, over the included records, to the
    squares of the cell counts:

    >>> data = pd.DataFrame({"sex": ["m", "f", "f", "m", "m"]})
    >>> fr = frequencies_of(key_table(data, ["sex"]), np.array([3.0, 2.0, 2.0, 3.0, 4.0]))
    >>> fr.f.tolist(), fr.F.tolist(), int(fr.f.sum()) == 2**2 + 3**2
    ([3, 2, 2, 3, 3], [10.0, 4.0, 4.0, 10.0, 10.0], True)
    """
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
