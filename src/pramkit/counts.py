"""Frequency tables of categorical columns, streamed from files of any size.

The designs, the risk measures and the estimators need counts, not records.
:func:`count_file` reads a file chunk by chunk (memory: one chunk plus the
table) and returns a dense contingency table over the columns' categories.
When the categories are not declared, a first pass collects each column's
distinct values (:func:`pramkit.codebook.sort_labels` order) and a second
pass counts.  :class:`CountTable` is pramkit's one contingency-table type;
:func:`count_codes` counts it from records already encoded, which is how every
table is counted (the chunks of a file, a DataFrame, the key variables of the
risk measures).  :func:`count_groups` counts the tables of several groups of
columns in one pass (:class:`CountTables`: a design's margins and joint groups),
so that memory is the sum of the groups' cells, not the product of every
column's categories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from pramkit.codebook import MISSING, canonical, encode, first_row, sort_labels, spelling_clash, spelling_error
from pramkit.errors import DataError, ParameterError
from pramkit.frames import pandas_table
from pramkit.io import CHUNK_ROWS, CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES, csv_numbers
from pramkit.labels import Label
from pramkit.progress import progress
from pramkit.source import Source

#: Largest dense table :func:`count_file` builds (cells).
MAX_CELLS = 200_000_000

#: The bytes a counting pass may hold for one chunk of records (:func:`chunk_rows_for`).
CHUNK_BYTES = 32 << 20
#: Bytes a chunk holds per record and column read, its text and codes and the CSV reader's blocks
#: (measured: a pass over five text columns of a CSV census in chunks of 2**20 rows added about 400
#: MiB to the process's peak, about 80 bytes per value).
CHUNK_BYTES_PER_VALUE = 80


def chunk_rows_for(columns: int, *, budget: int | None = None, most: int = CHUNK_ROWS) -> int:
    """Rows per chunk for a pass over ``columns`` columns that holds about ``budget`` bytes per chunk.

    A streamed pass holds one chunk at a time, about :data:`CHUNK_BYTES_PER_VALUE` bytes per record
    and column read; a fixed number of rows would make the chunk (not the file) the pass's peak.
    The counts of a pass do not depend on its chunk, only its peak and the number of chunks do.

    Parameters
    ----------
    columns : int
        The columns the pass reads.
    budget : int, optional
        The bytes per chunk (default :data:`CHUNK_BYTES`, read when called).
    most : int
        The most rows per chunk (default :data:`pramkit.defaults.CHUNK_ROWS`).

    Returns
    -------
    int
        Between 1 and ``most``.

    Examples
    --------
    >>> chunk_rows_for(5), chunk_rows_for(1), chunk_rows_for(40, budget=1 << 10), chunk_rows_for(1, most=1000)
    (83886, 419430, 1, 1000)
    """
    per_row = CHUNK_BYTES_PER_VALUE * max(1, int(columns))
    return max(1, min(int(most), (CHUNK_BYTES if budget is None else int(budget)) // per_row))


@dataclass(frozen=True)
class CountTable:
    """A contingency table: the counts of every combination of some columns' categories.

    The one table type of pramkit: :func:`count_file` and :func:`count_frame` count it,
    :meth:`pramkit.risk.frequencies.KeyTable.count` counts it from records already encoded,
    :func:`pramkit.design.dp.multivariate.joint_table` reads it as a joint distribution and
    :class:`pramkit.risk.space.KeySpace` as the key space of the recognition design.

    Parameters
    ----------
    columns : tuple of str
        The counted columns, one axis each.
    categories : tuple of tuples
        Each column's categories, in axis order.
    counts : numpy.ndarray
        Integer array of shape ``(S_1, ..., S_d)``: the records in each cell.
    rows : int
        Records read.
    missing : int
        Records left out because a column was missing.
    weight_sums : numpy.ndarray or None
        With weights, the sum of the records' weights in each cell (same shape as ``counts``).

    Examples
    --------
    >>> t = count_codes(["x", "y"], [("a", "b"), (0, 1, 2)], [[0, 1, 0], [2, 0, 2]])
    >>> t.shape, t.cells, t.margin("y").tolist()
    ((2, 3), 6, [1, 0, 2])
    """

    columns: tuple[str, ...]
    categories: tuple[tuple[Label, ...], ...]
    counts: np.ndarray
    rows: int
    missing: int
    weight_sums: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The number of categories of each column: the shape of ``counts``.

        Examples
        --------
        >>> CountTable(("x",), ((1, 3),), np.array([4, 2]), rows=6, missing=0).shape
        (2,)
        """
        return tuple(self.counts.shape)

    @property
    def cells(self) -> int:
        """K, the number of cells (category combinations) of the table.

        Examples
        --------
        >>> CountTable(("x", "y"), ((1, 3), ("u", "v", "w")), np.ones((2, 3), int), rows=6, missing=0).cells
        6
        """
        return int(self.counts.size)

    def _other_axes(self, *columns: str) -> tuple[int, ...]:
        """The axes of every column but ``columns``: those a margin of ``columns`` sums over."""
        axes = {self.columns.index(c) for c in columns}
        return tuple(i for i in range(len(self.columns)) if i not in axes)

    def margin(self, *columns: str) -> np.ndarray:
        """Counts of one column's categories, or of the combinations of several columns'
        categories (one axis each, in the order given): the table summed over the others.

        Parameters
        ----------
        *columns : str
            Counted columns, distinct.

        Returns
        -------
        numpy.ndarray
            The margin, one axis per column in the order given (the table
            itself, transposed as asked, when every column is given).

        Examples
        --------
        >>> t = CountTable(("x", "y"), ((1, 3), ("u", "v")), np.array([[4, 1], [2, 0]]), rows=7, missing=0)
        >>> t.margin("x").tolist(), t.margin("y").tolist(), t.margin("y", "x").tolist()
        ([5, 2], [6, 1], [[4, 2], [1, 0]])
        """
        summed = self.counts.sum(axis=self._other_axes(*columns))
        kept = sorted(self.columns.index(c) for c in columns)
        return np.transpose(summed, [kept.index(self.columns.index(c)) for c in columns])

    def margin_codes(self, axes: Sequence[int]) -> tuple[np.ndarray, int]:
        """The cell of the margin over ``axes`` that every cell of the table falls in.

        Parameters
        ----------
        axes : sequence of int
            Distinct axes (column positions); the margin's cells are numbered in C order
            over them, in the order given.

        Returns
        -------
        codes : numpy.ndarray
            For every cell of the table (flat, C order), its cell of the margin.
        size : int
            The number of cells of the margin.

        Examples
        --------
        >>> t = CountTable(("x", "y"), ((0, 1), (0, 1, 2)), np.zeros((2, 3), int), rows=0, missing=0)
        >>> codes, size = t.margin_codes([1])
        >>> codes.tolist(), size
        ([0, 1, 2, 0, 1, 2], 3)
        >>> t.margin_codes([1, 0])[0].tolist()
        [0, 2, 4, 1, 3, 5]
        """
        shape = self.shape
        sub = tuple(shape[a] for a in axes)
        # strides of the margin's own C-order index, broadcast over the full table
        codes = np.zeros(shape, dtype=np.int64)
        stride = 1
        for a, size in zip(reversed(axes), reversed(sub)):
            index = [1] * len(shape)
            index[a] = size
            codes = codes + stride * np.arange(size).reshape(index)
            stride *= size
        return codes.reshape(-1), math.prod(sub)

    def labels(self, cells: ArrayLike, axes: Sequence[int] | None = None) -> list[tuple[Label, ...]]:
        """The categories of each flat (C-order) cell: of the table, or of its margin over ``axes``.

        Parameters
        ----------
        cells : array of int
            Flat cell indices (C order over the table, or over ``axes``).
        axes : sequence of int, optional
            Axes of the margin the cells belong to (in its order); default the table's.

        Returns
        -------
        list of tuples
            One tuple of category labels per cell.

        Examples
        --------
        >>> t = CountTable(("x", "y"), ((1, 3), ("u", "v", "w")), np.ones((2, 3), int), rows=6, missing=0)
        >>> t.labels([0, 5])
        [(1, 'u'), (3, 'w')]
        >>> t.labels([2], axes=[1, 0])
        [('v', 1)]
        """
        axes = range(len(self.columns)) if axes is None else axes
        coords = np.unravel_index(np.asarray(cells, dtype=np.int64), tuple(self.shape[a] for a in axes))
        return [tuple(self.categories[a][int(c[i])] for a, c in zip(axes, coords)) for i in range(len(coords[0]))]

    def extended(self, column: str, categories: Sequence[Label]) -> CountTable:
        """The table with ``column``'s categories replaced by ``categories``, a superset of them
        (cells of the new categories count 0); :class:`DataError` if a counted category is not listed.

        Parameters
        ----------
        column : str
            A counted column.
        categories : sequence
            Its declared categories, in the order wanted; they match the
            table's by :func:`pramkit.codebook.canonical` (``"1"`` is ``1``).

        Returns
        -------
        CountTable
            A new table (weight sums spread alike); ``rows`` and ``missing`` unchanged.

        Raises
        ------
        DataError
            A category of the table is not among ``categories``.

        Examples
        --------
        >>> t = CountTable(("x",), ((1, 3),), np.array([4, 2]), rows=6, missing=0)
        >>> t.extended("x", [1, 2, 3]).counts.tolist()
        [4, 0, 2]
        >>> t.extended("x", ["3", "1"]).counts.tolist()  # reordered, matched by text form
        [2, 4]
        >>> t.extended("x", [1, 2])
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'x' holds [3], which its declared categories do not list
        """
        axis = self.columns.index(column)
        where = {canonical(c): i for i, c in enumerate(categories)}
        found = [where.get(canonical(c)) for c in self.categories[axis]]
        if None in found:
            absent = [c for c, i in zip(self.categories[axis], found) if i is None]
            raise DataError(f"column {column!r} holds {absent}, which its declared categories do not list")
        shape = list(self.counts.shape)
        shape[axis] = len(categories)
        index: list[Any] = [slice(None)] * self.counts.ndim
        index[axis] = np.asarray(found, dtype=np.intp)

        def spread(a: np.ndarray) -> np.ndarray:
            out = np.zeros(shape, dtype=a.dtype)
            out[tuple(index)] = a
            return out

        cats = list(self.categories)
        cats[axis] = tuple(categories)
        return CountTable(self.columns, tuple(cats), spread(self.counts), self.rows, self.missing,
                          None if self.weight_sums is None else spread(self.weight_sums))

    def proportions(self, column: str) -> np.ndarray:
        """The proportions of one column's categories among the counted records;
        :class:`DataError` if none was counted.

        Parameters
        ----------
        column : str
            A counted column.

        Returns
        -------
        numpy.ndarray
            Its margin divided by its total: non-negative, summing to 1.

        Raises
        ------
        DataError
            No record was counted.

        Examples
        --------
        >>> t = CountTable(("x", "y"), ((1, 3), ("u", "v")), np.array([[2, 1], [1, 0]]), rows=4, missing=0)
        >>> t.proportions("x").tolist(), float(t.proportions("y").sum())
        ([0.75, 0.25], 1.0)
        """
        m = self.margin(column).astype(float)
        total = m.sum()
        if total == 0:
            raise DataError(f"column {column!r} has no non-missing values")
        return m / total


@dataclass(frozen=True)
class CountTables:
    """The tables of several groups of columns, counted in one pass over the same records.

    A design whose matrices each read a few columns (a variable's margin, a joint group, a
    variable with its strata) needs each group's table, not the table of every column:
    :func:`count_groups` counts one :class:`CountTable` per group, so that memory is the sum
    of the groups' cells (:attr:`cells`), never the product of every column's categories.
    It reads like one table for what the groups agree on: the columns, their categories,
    the records read, and the margin of columns that one group holds.

    Parameters
    ----------
    columns : tuple of str
        Every counted column, each in one group at least.
    tables : tuple of CountTable
        One per group.
    rows : int
        Records read.
    missing : int
        Records with a missing value (:data:`pramkit.codebook.MISSING`, not a declared
        ``None`` category) in some column: each group leaves out those missing in its own columns.
    complete_rows : int
        Records with a value in every column (neither missing nor the category ``None``).

    Examples
    --------
    >>> t = count_groups(pd.DataFrame({"x": ["a", "b", "a"], "y": [1, 2, 2], "z": [0, 0, 1]}), [["x", "y"], ["z"]])
    >>> t.columns, t.cells, t.margin("y").tolist(), t.group("z").counts.tolist(), t.complete_rows
    (('x', 'y', 'z'), 6, [1, 2], [2, 1], 3)
    """

    columns: tuple[str, ...]
    tables: tuple[CountTable, ...]
    rows: int
    missing: int
    complete_rows: int

    @property
    def categories(self) -> tuple[tuple[Label, ...], ...]:
        """Each column's categories (as every group holding it counts them), in the order of :attr:`columns`."""
        found = {c: cats for t in self.tables for c, cats in zip(t.columns, t.categories)}
        return tuple(found[c] for c in self.columns)

    @property
    def cells(self) -> int:
        """The cells counted: the sum of the groups' cells (the memory of the counts, 8 bytes a cell).

        Examples
        --------
        >>> count_groups(pd.DataFrame({"x": [1, 2], "y": ["a", "b"]}), [["x"], ["y"]]).cells  # 2 + 2, not 2 * 2
        4
        """
        return sum(t.cells for t in self.tables)

    def group(self, *columns: str) -> CountTable:
        """The table of one group, its columns given in the group's order; :class:`KeyError` if none is.

        Examples
        --------
        >>> t = count_groups(pd.DataFrame({"x": [1, 2], "y": ["a", "b"]}), [["x", "y"]])
        >>> t.group("x", "y").counts.tolist()
        [[1, 0], [0, 1]]
        """
        for t in self.tables:
            if t.columns == columns:
                return t
        raise KeyError(f"no group counts exactly {list(columns)}")

    def margin(self, *columns: str) -> np.ndarray:
        """:meth:`CountTable.margin` of the smallest group holding every one of ``columns``.

        Raises
        ------
        KeyError
            No group holds them all.

        Examples
        --------
        >>> t = count_groups(pd.DataFrame({"x": [1, 2, 2], "y": ["a", "b", "b"]}), [["x", "y"]])
        >>> t.margin("y", "x").tolist(), t.margin("x").tolist()
        ([[1, 0], [0, 2]], [1, 2])
        """
        holding = [t for t in self.tables if set(columns) <= set(t.columns)]
        if not holding:
            raise KeyError(f"no group counts {list(columns)} together")
        return min(holding, key=lambda t: t.cells).margin(*columns)

    def each(self, change: Callable[[CountTable], CountTable]) -> CountTables:
        """The tables with ``change`` (a function of a :class:`CountTable`) made to each group's.

        Examples
        --------
        >>> t = count_groups(pd.DataFrame({"x": [1, 2]}), [["x"]])
        >>> t.each(lambda g: g.extended("x", [1, 2, 3])).categories
        ((1, 2, 3),)
        """
        return CountTables(self.columns, tuple(change(t) for t in self.tables), self.rows, self.missing,
                           self.complete_rows)

    def extended(self, column: str, categories: Sequence[Label]) -> CountTables:
        """:meth:`CountTable.extended` in every group counting ``column``.

        Examples
        --------
        >>> t = count_groups(pd.DataFrame({"x": [1, 2], "y": [0, 0]}), [["x", "y"], ["x"]])
        >>> [g.shape for g in t.extended("x", [1, 2, 3]).tables]
        [(3, 1), (3,)]
        """
        return self.each(lambda t: t.extended(column, categories) if column in t.columns else t)


def cell_index(codes: ArrayLike, shape: Sequence[int], columns: Sequence[str]) -> np.ndarray:
    """The flat (C-order) cell of each record of a table of ``shape``.

    Parameters
    ----------
    codes : array of int, shape (d, n)
        The category codes of ``n`` records, one row per column (none missing).
    shape : sequence of int
        The number of categories of each column.
    columns : sequence of str
        The columns' names, for the error when the table has too many cells to index.

    Returns
    -------
    numpy.ndarray
        ``n`` cell indices.

    Raises
    ------
    DataError
        The table has ``2**62`` cells or more.

    Examples
    --------
    >>> cell_index([[0, 1], [2, 0]], (2, 3), ["x", "y"]).tolist()  # 0 * 3 + 2, 1 * 3 + 0
    [2, 3]
    >>> cell_index([[0], [0]], (2**40, 2**40), ["a", "b"])
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: the keys ['a', 'b'] have 1.21e+24 combinations, too many to index; use fewer keys
    """
    cells = math.prod(shape)
    if cells >= 2**62:
        raise DataError(
            f"the keys {list(columns)} have {cells:.3g} combinations, too many to index; use fewer keys"
        )
    return np.ravel_multi_index(tuple(np.asarray(codes)), tuple(shape))


def count_codes(
    columns: Sequence[str],
    categories: Sequence[Sequence[Label]],
    codes: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    times: ArrayLike | None = None,
) -> CountTable:
    """The contingency table of records already encoded (:func:`pramkit.codebook.encode`).

    Parameters
    ----------
    columns : sequence of str
        The counted columns, one axis each.
    categories : sequence of sequences
        Each column's categories.
    codes : array of int, shape (d, n)
        The records' positions in each column's categories, one row per column; a
        record with a missing code (:data:`pramkit.codebook.MISSING`) in any column
        is left out of the table and counted in ``missing``.
    weights : array of float, shape (n,), optional
        Each record's weight; their sums per cell are returned as ``weight_sums``.
    times : array of int, shape (n,), optional
        How many records each column of ``codes`` stands for (a table of distinct records and
        their counts; ``weights`` are then their weights' sums); default one each.

    Returns
    -------
    CountTable
        ``rows`` is ``n`` (the sum of ``times``).

    Raises
    ------
    DataError
        The table has ``2**62`` cells or more (:func:`cell_index`).

    Examples
    --------
    >>> t = count_codes(["x", "y"], [("a", "b"), (0, 1, 2)], [[0, 1, 0, -1], [2, 0, 2, 1]],
    ...                 weights=[1.0, 2.0, 3.0, 4.0])
    >>> t.counts.tolist(), t.weight_sums.tolist(), t.rows, t.missing
    ([[0, 0, 2], [1, 0, 0]], [[0.0, 0.0, 4.0], [2.0, 0.0, 0.0]], 4, 1)

    The same records as distinct rows with their counts:

    >>> d = count_codes(["x", "y"], [("a", "b"), (0, 1, 2)], [[0, 1, -1], [2, 0, 1]], times=[2, 1, 1])
    >>> d.counts.tolist() == [[0, 0, 2], [1, 0, 0]], d.rows, d.missing
    (True, 4, 1)
    """
    codes = np.asarray(codes).reshape(len(columns), -1)
    shape = tuple(len(c) for c in categories)
    cells = math.prod(shape)
    absent = (codes == MISSING).any(axis=0)
    flat = cell_index(codes[:, ~absent], shape, columns)
    sums = None
    if weights is not None:
        sums = np.bincount(flat, weights=np.asarray(weights, dtype=float)[~absent], minlength=cells).reshape(shape)
    if times is None:
        return CountTable(tuple(columns), tuple(tuple(c) for c in categories),
                          np.bincount(flat, minlength=cells).reshape(shape), codes.shape[1], int(absent.sum()), sums)
    each = np.asarray(times, dtype=np.int64)
    counts = np.zeros(cells, dtype=np.int64)
    np.add.at(counts, flat, each[~absent])  # exact in integers
    return CountTable(tuple(columns), tuple(tuple(c) for c in categories), counts.reshape(shape),
                      int(each.sum()), int(each[absent].sum()), sums)


def _distinct(batches: Any, columns: Sequence[str], quiet: bool, total: int | None,
              missing_category: bool) -> dict[str, list[Label]]:
    """Each column's distinct values: in dictionary order for dictionary-encoded
    (categorical) columns, in :func:`sort_labels` order otherwise; ``None`` last
    for a column with missing values when ``missing_category``."""
    seen: dict[str, dict[str | None, Any]] = {c: {} for c in columns}
    has_missing: set[str] = set()
    ordered: set[str] = set()
    with progress(total=total, desc="categories", unit="rows", quiet=quiet) as bar:
        for table in batches:
            for c in columns:
                col = table.column(c)
                if pa.types.is_dictionary(col.type):
                    ordered.add(c)
                    values = [v for chunk in col.chunks for v in chunk.dictionary.to_pylist()]
                else:
                    values = pc.unique(col).to_pylist()
                for v in values:
                    key = canonical(v)
                    if key is not None:
                        seen[c].setdefault(key, v)
                if missing_category and pc.any(pc.is_null(col, nan_is_null=True)).as_py():
                    has_missing.add(c)
            bar.update(table.num_rows)
    cats = {c: list(seen[c].values()) if c in ordered else sort_labels(seen[c].values()) for c in columns}
    for c in has_missing:
        cats[c].append(None)
    return cats


def _first_rows(source: Source, column: str, values: Sequence[Any], chunk_rows: int) -> tuple[int | None, ...]:
    """The first row (counted from 1) of the file holding each of ``values`` in ``column``: a further pass,
    on the way to an error only."""
    rows: list[int | None] = [None] * len(values)
    offset = 0
    _, batches = source.batches([column], chunk_rows=chunk_rows)
    for table in batches:
        for i, value in enumerate(values):
            if rows[i] is None and (row := first_row(table.column(column), value)) is not None:
                rows[i] = offset + row
        if None not in rows:
            break
        offset += table.num_rows
    return tuple(rows)


def _weights_of(table: pa.Table, name: str, first_row: int, decimal: str = CSV_DECIMAL, where: str = "") -> np.ndarray:
    """A chunk's survey weights: finite and positive, else :class:`DataError` naming the row (texts read with the
    file's decimal mark: :func:`pramkit.io.csv_numbers`; ``where``: the file, for its message)."""
    w = csv_numbers(table.column(name), name, decimal=decimal, first_row=first_row, where=where)
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"weight column {name!r}: row {first_row + i + 1} has weight {float(w[i])!r}; "
                        "weights must be finite and positive")
    return w


def chunk_codes(table: pa.Table, columns: Sequence[str], cats: Mapping[str, Sequence[Label]],
                first_row: int) -> np.ndarray:
    """The category codes of a chunk's records, one row per column (:data:`MISSING` for a missing value
    left out of the table; a declared ``None`` category counts missing values).

    Parameters
    ----------
    table : pyarrow.Table
        The chunk.
    columns : sequence of str
        The columns, one axis each.
    cats : mapping
        Each column's categories.
    first_row : int
        The 0-based row number of the chunk's first record (for errors naming a row).

    Returns
    -------
    numpy.ndarray
        Shape ``(len(columns), table.num_rows)``.

    Examples
    --------
    >>> chunk = pa.table({"sex": ["m", None, "f"]})
    >>> chunk_codes(chunk, ["sex"], {"sex": ("f", "m")}, 0).tolist() == [[1, MISSING, 0]]
    True
    """
    return np.stack([
        encode(table.column(c), cats[c], column=c, first_row=first_row,
               missing="category" if None in cats[c] else "keep")
        for c in columns
    ]).reshape(len(columns), table.num_rows)


def _cells_bound(groups: Sequence[Sequence[str]], cats: Mapping[str, Sequence[Label]], max_cells: int) -> None:
    """:class:`ParameterError` when the groups' tables hold more than ``max_cells`` cells in all."""
    cells = sum(math.prod(len(cats[c]) for c in g) for g in groups)
    if cells <= max_cells:
        return
    what = f"the table over {list(groups[0])} has" if len(groups) == 1 else \
        f"the tables over {[list(g) for g in groups]} have"
    raise ParameterError(f"{what} {cells:,} cells ({8 * cells / 1e9:,.1f} GB as counts), more than {max_cells:,}; "
                         "count fewer columns")


def _count_groups(tables: Any, columns: Sequence[str], groups: Sequence[Sequence[str]],
                  cats: Mapping[str, Sequence[Label]], quiet: bool, total: int | None, weights: str | None = None,
                  max_cells: int = MAX_CELLS, frequency: str | None = None,
                  decimal: str = CSV_DECIMAL, named: str = "") -> CountTables:
    """The tables of ``groups`` (each a few of ``columns``), summed over Arrow tables (chunks) encoded
    once each (:func:`chunk_codes`) and counted one by one (:func:`count_codes`).  With ``frequency``,
    each row of a table stands for that column's number of records (and ``weights`` holds their sum);
    ``decimal``: the decimal mark of weights written as text (``named``: their file, for a message)."""
    _cells_bound(groups, cats, max_cells)
    where = {c: i for i, c in enumerate(columns)}
    shapes = [tuple(len(cats[c]) for c in g) for g in groups]
    counts = [np.zeros(s, dtype=np.int64) for s in shapes]
    sums = None if weights is None else [np.zeros(s) for s in shapes]
    left_out = [0] * len(groups)
    none = np.array([list(cats[c]).index(None) if None in cats[c] else MISSING for c in columns])[:, None]
    rows = missing = whole = 0
    with progress(total=total, desc="counting", unit="rows", quiet=quiet) as bar:
        for table in tables:
            codes = chunk_codes(table, columns, cats, rows)
            times = None if frequency is None else table.column(frequency).to_numpy().astype(np.int64)
            w = None if weights is None else (
                _weights_of(table, weights, rows, decimal, named) if times is None else table.column(weights).to_numpy())
            for i, g in enumerate(groups):
                part = count_codes(g, [cats[c] for c in g], codes[[where[c] for c in g]], weights=w, times=times)
                counts[i] += part.counts
                if sums is not None and part.weight_sums is not None:
                    sums[i] += part.weight_sums
                left_out[i] += part.missing
            absent = (codes == MISSING).any(axis=0)
            each = np.ones(table.num_rows, dtype=np.int64) if times is None else times
            missing += int(each[absent].sum())
            whole += int(each[~absent & ~(codes == none).any(axis=0)].sum())
            rows += int(each.sum())
            bar.update(table.num_rows)
    if rows == 0:
        raise DataError("there are no data rows to count")
    made = tuple(CountTable(tuple(g), tuple(tuple(cats[c]) for c in g), counts[i], rows, left_out[i],
                            None if sums is None else sums[i]) for i, g in enumerate(groups))
    return CountTables(tuple(columns), made, rows, missing, whole)


def _count_tables(tables: Any, columns: Sequence[str], cats: Mapping[str, Sequence[Label]],
                  quiet: bool, total: int | None, weights: str | None = None,
                  max_cells: int = MAX_CELLS, decimal: str = CSV_DECIMAL, where: str = "") -> CountTable:
    """The sum of the tables of Arrow tables (chunks) counted one by one (:func:`count_codes`)."""
    return _count_groups(tables, columns, [columns], cats, quiet, total, weights, max_cells,
                         decimal=decimal, named=where).tables[0]


def _groups(groups: Sequence[Sequence[str]], columns: Sequence[str] | None) -> tuple[list[str], list[tuple[str, ...]]]:
    """Every counted column (``columns`` first, in order) and the groups, each once (a column in no group
    counted alone); :class:`ParameterError` for an empty or repeated group, or a group naming a column twice."""
    made = [tuple(g) for g in groups]
    if not made or not all(made) or any(len(set(g)) != len(g) for g in made):
        raise ParameterError(f"groups must be non-empty lists of distinct columns, got {[list(g) for g in made]}")
    every = list(dict.fromkeys([*(columns or ()), *(c for g in made for c in g)]))
    made = list(dict.fromkeys(made))
    held = {c for g in made for c in g}
    return every, made + [(c,) for c in every if c not in held]


def _file_categories(source: Source, columns: Sequence[str], declared: Mapping[str, Sequence[Label]], missing: str,
                     chunk_rows: int, quiet: bool, total: int | None,
                     unread: Iterator[pa.Table] | None = None) -> dict[str, Sequence[Label]]:
    """Every column's categories: the declared ones, the others found in a first pass over the file
    (a :func:`pramkit.codebook.spelling_error` naming two rows when two spell one value).  ``unread``:
    the batches of ``columns`` already opened, read for this pass when no column is declared."""
    out = dict(declared)
    todo = [c for c in columns if c not in declared]
    if todo:
        batches = unread if unread is not None and todo == list(columns) else source.batches(todo, chunk_rows=chunk_rows)[1]
        found = _distinct(batches, todo, quiet, total, missing == "category")
        for c in todo:
            clash = spelling_clash(found[c])
            if clash is not None:
                a, b = _first_rows(source, c, clash[:2], chunk_rows)
                raise spelling_error(c, clash, (a, b))
        out.update(found)
    return out


def count_file(
    path: str | Path,
    columns: Sequence[str],
    *,
    categories: Mapping[str, Sequence[Label]] | None = None,
    weights: str | None = None,
    missing: str = "exclude",
    chunk_rows: int | None = None,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    max_cells: int = MAX_CELLS,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    decimal: str = CSV_DECIMAL,
) -> CountTable:
    """Counts of every combination of ``columns`` in a file, streamed chunk by chunk.

    ``categories`` may declare some or all columns' categories (then a value
    outside them is an error naming it; a ``None`` category counts the
    missing values); the others are found in a first pass.  Records with a
    missing value in any other column are counted in ``missing`` and left out
    of the table; with ``missing="category"`` a column whose categories are
    found in the data gets a ``None`` category for its missing values instead.
    ``weights`` names a column of survey weights whose sums per cell are
    returned as ``weight_sums``.  ``na_values``: the texts that mean missing in
    a CSV file besides the empty field (:func:`pramkit.io.iter_batches`).

    Parameters
    ----------
    path : str or pathlib.Path
        A CSV, Parquet, Stata or SPSS file.
    columns : sequence of str
        The columns to count, one axis each.
    categories : mapping, optional
        Declared categories of some columns, in axis order.
    weights : str, optional
        A column of survey weights (finite and positive).
    missing : {"exclude", "category"}
        What a missing value of a column whose categories are found does.
    chunk_rows : int, optional
        Rows per chunk; default :func:`chunk_rows_for` the columns read (a fixed
        :data:`pramkit.defaults.CHUNK_ROWS` with ``weights``, whose sums per cell are added chunk by
        chunk: the same chunks, the same sums to the last bit).
    quiet : bool
        No progress bars.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    max_cells : int
        The largest table counted (default :data:`MAX_CELLS`); checked before the table is made.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).
    decimal : str
        The decimal mark of a CSV file's weights, ``"."`` or ``","`` (:func:`pramkit.io.csv_numbers`).

    Returns
    -------
    CountTable
        ``rows`` is the records read, ``missing`` those left out.

    Raises
    ------
    ParameterError
        No column named, an unknown ``missing``, or more than ``max_cells`` cells.
    DataError
        The file cannot be read, lacks a column, has no data rows, holds a
        value outside declared categories, or a weight that is not positive.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("sex,region,w\\nm,1,10\\nf,2,10\\nf,NA,20\\nm,1,40\\nf,1,10\\n")
    ...     t = count_file(f, ["sex", "region"])
    ...     c = count_file(f, ["sex", "region"], missing="category", weights="w", chunk_rows=2)
    >>> t.categories, t.counts.tolist(), t.rows, t.missing  # the NA record is left out
    ((('f', 'm'), (1, 2)), [[1, 1], [2, 0]], 5, 1)
    >>> c.categories[1], c.counts.tolist(), c.weight_sums.tolist()  # missing as a category
    ((1, 2, None), [[1, 1, 1], [2, 0, 0]], [[10.0, 10.0, 20.0], [50.0, 0.0, 0.0]])
    """
    columns = list(columns)
    if not columns:
        raise ParameterError("name at least one column to count")
    if missing not in ("exclude", "category"):
        raise ParameterError(f"missing must be 'exclude' or 'category', not {missing!r}")
    read = columns + ([weights] if weights is not None and weights not in columns else [])
    if chunk_rows is None:
        chunk_rows = CHUNK_ROWS if weights is not None else chunk_rows_for(len(read))
    source = Source.open(path, na_values=na_values, sep=sep, encoding=encoding, decimal=decimal)
    meta, unread = source.batches(read, chunk_rows=chunk_rows)
    cats = _file_categories(source, columns, categories or {}, missing, chunk_rows, quiet, meta.rows,
                            unread if read == columns else None)
    _, batches = source.batches(read, chunk_rows=chunk_rows)
    return _count_tables(batches, columns, cats, quiet, meta.rows, weights, max_cells, decimal=meta.decimal,
                         where=repr(source.described))


def count_frame(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    categories: Mapping[str, Sequence[Label]] | None = None,
) -> CountTable:
    """:func:`count_file` for a DataFrame in memory (categoricals keep their categories).

    Records with a missing value in a column are left out (counted in
    ``missing``), unless that column's declared categories include ``None``.

    Parameters
    ----------
    data : pandas.DataFrame
        The records.
    columns : sequence of str
        The columns to count, one axis each.
    categories : mapping, optional
        Declared categories of some columns; the others are
        :func:`pramkit.codebook.categories_of` the column.

    Returns
    -------
    CountTable

    Raises
    ------
    DataError
        A column is not in the data, a value is not one of the declared
        categories, or the frame has no rows.
    ParameterError
        The table would have more than :data:`MAX_CELLS` cells.

    Examples
    --------
    A categorical keeps its unused categories, so the table has their cells:

    >>> data = pd.DataFrame({"sex": pd.Categorical(["m", "f", "m"], categories=["m", "f", "x"]),
    ...                      "age": [30, 40, None]})
    >>> t = count_frame(data, ["sex", "age"])
    >>> t.categories, t.counts.tolist(), t.missing
    ((('m', 'f', 'x'), (30, 40)), [[1, 0], [0, 1], [0, 0]], 1)
    """
    return count_groups(data, [columns], categories=categories).tables[0]


def _frame_slices(data: pd.DataFrame, columns: list[str], chunk_rows: int | None) -> Iterator[pa.Table]:
    """The columns of a DataFrame as Arrow tables of ``chunk_rows`` rows (default :func:`chunk_rows_for`
    them): encoding the whole frame at once would hold its codes, eight bytes per record and column, and
    more to count them.  A frame of one chunk is one table, as it always was."""
    rows = chunk_rows_for(len(columns)) if chunk_rows is None else max(1, int(chunk_rows))
    if len(data) <= rows:
        yield pandas_table(data[columns])
        return
    for start in range(0, len(data), rows):
        yield pandas_table(data.iloc[start:start + rows][columns])


def count_groups(
    data: Any,
    groups: Sequence[Sequence[str]],
    *,
    columns: Sequence[str] | None = None,
    categories: Mapping[str, Sequence[Label]] | None = None,
    missing: str = "exclude",
    chunk_rows: int | None = None,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    max_cells: int = MAX_CELLS,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> CountTables:
    """The table of each group of columns, counted in one pass over the data.

    :func:`count_file` (or :func:`count_frame`) of each group, with the records read once (a
    file, a polars frame or an Arrow table streamed chunk by chunk; a pandas DataFrame in
    memory) and each chunk encoded once: memory is one chunk plus the groups' tables, the sum
    of their cells, never the product of every column's categories.  Categories are declared
    or found as :func:`count_file` finds them (one further pass over a file for those not
    declared), the same in every group.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame, polars.DataFrame, polars.LazyFrame, pyarrow.Table or pramkit.source.Source
        The records (a :class:`pramkit.source.Source` is read with its own ``na_values``, ``sep`` and
        ``encoding``).
    groups : sequence of sequences of str
        The groups of columns, one table each (axes in the order given); a group given twice
        is counted once.
    columns : sequence of str, optional
        Every column counted, in the order of the result's :attr:`CountTables.columns` (default:
        the groups' columns as they first appear); a column in no group is counted alone.
    categories : mapping, optional
        Declared categories of some columns (a ``None`` category counts the missing values).
    missing : {"exclude", "category"}
        What a missing value of a column whose categories are found in a file does (:func:`count_file`);
        a DataFrame's undeclared columns leave their missing values out.
    chunk_rows, quiet, na_values, sep, encoding
        How a file is read, as :func:`count_file`; the chunk is :func:`chunk_rows_for` the columns
        counted unless given, and a DataFrame is encoded in slices of that many rows too.
    max_cells : int
        The most cells of all the groups' tables together; checked before any table is made.

    Returns
    -------
    CountTables
        ``tables`` in the order of ``groups`` (repeats dropped), then the columns counted alone.

    Raises
    ------
    ParameterError
        An empty or malformed group, an unknown ``missing``, or more than ``max_cells`` cells.
    DataError
        As :func:`count_file` and :func:`count_frame`.

    Examples
    --------
    Thirteen variables of ten categories: the margins take 130 cells, the joint table 10**13.

    >>> rng = np.random.default_rng(1)
    >>> frame = pd.DataFrame({f"v{i}": rng.integers(0, 10, 1_000) for i in range(13)})
    >>> t = count_groups(frame, [[c] for c in frame.columns])
    >>> t.cells, t.margin("v3").tolist() == frame["v3"].value_counts().sort_index().tolist()
    (130, True)
    """
    from pramkit.codebook import categories_of

    if missing not in ("exclude", "category"):
        raise ParameterError(f"missing must be 'exclude' or 'category', not {missing!r}")
    every, made = _groups(groups, columns)
    if isinstance(data, pd.DataFrame):
        absent = [c for c in every if c not in data.columns]
        if absent:
            raise DataError(f"column(s) {absent} are not in the data; its columns are {list(data.columns)}")
        cats = {c: (categories or {}).get(c) or categories_of(data[c], column=c) for c in every}
        return _count_groups(_frame_slices(data, every, chunk_rows), every, made, cats, True, len(data),
                             max_cells=max_cells)
    if chunk_rows is None:
        chunk_rows = chunk_rows_for(len(every))
    source = Source.open(data, na_values=na_values, sep=sep, encoding=encoding)
    meta, unread = source.batches(every, chunk_rows=chunk_rows)
    cats = _file_categories(source, every, categories or {}, missing, chunk_rows, quiet, meta.rows, unread)
    _, batches = source.batches(every, chunk_rows=chunk_rows)
    return _count_groups(batches, every, made, cats, quiet, meta.rows, max_cells=max_cells)


def count_distinct(
    table: pa.Table,
    groups: Sequence[Sequence[str]],
    *,
    times: str,
    columns: Sequence[str] | None = None,
    categories: Mapping[str, Sequence[Label]] | None = None,
    missing: str = "exclude",
    weights: str | None = None,
    max_cells: int = MAX_CELLS,
) -> CountTables:
    """:func:`count_groups` of records given as their distinct combinations and how many records each holds.

    The tables are those :func:`count_groups` counts from the records themselves: a combination
    of values stands for ``times`` records, its categories are found (or checked against the
    declared ones) as in a file, and ``weights`` holds the sum of its records' weights.  This is
    how the Spark engine counts: Spark aggregates the records into their combinations
    (:func:`pramkit.engine.spark.counts.combinations`), this counts them on one machine.  An error
    naming a value names no row (the rows are not at hand).

    Parameters
    ----------
    table : pyarrow.Table
        One row per combination of the counted columns.
    groups : sequence of sequences of str
        The groups of columns, as :func:`count_groups`.
    times : str
        The column of ``table`` holding each combination's number of records.
    columns, categories, missing, max_cells
        As :func:`count_groups`.
    weights : str, optional
        The column of ``table`` holding each combination's sum of weights (returned as ``weight_sums``).

    Returns
    -------
    CountTables

    Examples
    --------
    The records ``(a, 1), (b, 2), (a, 1), (missing, 2)`` of a CSV file, as their combinations:

    >>> distinct = pa.table({"x": ["a", "b", None], "y": ["1", "2", "2"], "n": [2, 1, 1]})
    >>> d = count_distinct(distinct, [["x", "y"]], times="n", missing="category")
    >>> d.categories, d.group("x", "y").counts.tolist(), d.rows, d.complete_rows
    ((('a', 'b', None), (1, 2)), [[2, 0], [0, 1], [0, 1]], 4, 3)
    """
    if missing not in ("exclude", "category"):
        raise ParameterError(f"missing must be 'exclude' or 'category', not {missing!r}")
    every, made = _groups(groups, columns)
    require = [c for c in [*every, times, *([weights] if weights else [])] if c not in table.column_names]
    if require:
        raise DataError(f"column(s) {require} are not in the table; its columns are {table.column_names}")
    cats: dict[str, Sequence[Label]] = {c: v for c, v in (categories or {}).items() if c in every}
    todo = [c for c in every if c not in cats]
    if todo:
        found = _distinct([table.select(todo)], todo, True, None, missing == "category")
        for c in todo:
            clash = spelling_clash(found[c])
            if clash is not None:
                raise spelling_error(c, clash)
        cats.update(found)
    return _count_groups([table], every, made, cats, True, None, weights, max_cells, frequency=times)
