"""Frequency tables of categorical columns, streamed from files of any size.

The designs, the risk measures and the estimators need counts, not records.
:func:`count_file` reads a file chunk by chunk (memory: one chunk plus the
table) and returns a dense contingency table over the columns' categories.
When the categories are not declared, a first pass collects each column's
distinct values (:func:`pramkit.codebook.sort_labels` order) and a second
pass counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.codebook import MISSING, canonical, encode, sort_labels
from pramkit.errors import DataError, PramkitError
from pramkit.io import CHUNK_ROWS, NA_VALUES, iter_batches
from pramkit.matrix import Label
from pramkit.progress import progress

#: Largest dense table :func:`count_file` builds (cells).
MAX_CELLS = 200_000_000


@dataclass(frozen=True)
class CountTable:
    """A contingency table.

    columns: the counted columns, one axis each
    categories: each column's categories, in axis order
    counts: integer array of shape ``(S_1, ..., S_d)``
    rows: records read; missing: records left out because a column was missing
    weight_sums: with weights, the sum of the records' weights in each cell (same shape)
    """

    columns: tuple[str, ...]
    categories: tuple[tuple[Label, ...], ...]
    counts: np.ndarray
    rows: int
    missing: int
    weight_sums: np.ndarray | None = None

    def margin(self, column: str) -> np.ndarray:
        """Counts of one column's categories."""
        axis = self.columns.index(column)
        return self.counts.sum(axis=tuple(i for i in range(self.counts.ndim) if i != axis))

    def extended(self, column: str, categories: Sequence[Label]) -> "CountTable":
        """The table with ``column``'s categories replaced by ``categories``, a superset of them
        (cells of the new categories count 0); :class:`DataError` if a counted category is not listed.

        Examples
        --------
        >>> t = CountTable(("x",), ((1, 3),), np.array([4, 2]), rows=6, missing=0)
        >>> t.extended("x", [1, 2, 3]).counts.tolist()
        [4, 0, 2]
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
        m = self.margin(column).astype(float)
        total = m.sum()
        if total == 0:
            raise DataError(f"column {column!r} has no non-missing values")
        return m / total


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


def _weights_of(table: pa.Table, name: str, first_row: int) -> np.ndarray:
    """A chunk's survey weights: finite and positive, else :class:`DataError` naming the row."""
    w = pd.to_numeric(pd.Series(table.column(name).to_pandas()), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"weight column {name!r}: row {first_row + i + 1} has weight {w[i]!r}; "
                        "weights must be finite and positive")
    return w


def _count_tables(tables: Any, columns: Sequence[str], cats: Mapping[str, Sequence[Label]],
                  quiet: bool, total: int | None, weights: str | None = None) -> CountTable:
    shape = tuple(len(cats[c]) for c in columns)
    cells = int(np.prod(shape, dtype=np.float64))
    if cells > MAX_CELLS:
        raise PramkitError(
            f"the table over {list(columns)} has {cells:,} cells, more than {MAX_CELLS:,}; count fewer columns"
        )
    counts = np.zeros(cells, dtype=np.int64)
    sums = None if weights is None else np.zeros(cells)
    rows = missing = 0
    with progress(total=total, desc="counting", unit="rows", quiet=quiet) as bar:
        for table in tables:
            codes = np.stack([
                encode(table.column(c), cats[c], column=c, first_row=rows,
                       missing="category" if None in cats[c] else "keep")
                for c in columns
            ])
            absent = (codes == MISSING).any(axis=0)
            flat = np.ravel_multi_index(codes[:, ~absent], shape)
            counts += np.bincount(flat, minlength=cells)
            if sums is not None:
                sums += np.bincount(flat, weights=_weights_of(table, weights, rows)[~absent], minlength=cells)
            rows += table.num_rows
            missing += int(absent.sum())
            bar.update(table.num_rows)
    if rows == 0:
        raise DataError("there are no data rows to count")
    return CountTable(tuple(columns), tuple(tuple(cats[c]) for c in columns), counts.reshape(shape), rows, missing,
                      None if sums is None else sums.reshape(shape))


def count_file(
    path: str | Path,
    columns: Sequence[str],
    *,
    categories: Mapping[str, Sequence[Label]] | None = None,
    weights: str | None = None,
    missing: str = "exclude",
    chunk_rows: int = CHUNK_ROWS,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
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
    """
    columns = list(columns)
    if not columns:
        raise PramkitError("name at least one column to count")
    if missing not in ("exclude", "category"):
        raise PramkitError(f"missing must be 'exclude' or 'category', not {missing!r}")
    declared = dict(categories or {})
    read = columns + ([weights] if weights is not None and weights not in columns else [])
    meta, _ = iter_batches(path, columns=read, chunk_rows=chunk_rows, na_values=na_values)
    todo = [c for c in columns if c not in declared]
    if todo:
        _, batches = iter_batches(path, columns=todo, chunk_rows=chunk_rows, na_values=na_values)
        declared.update(_distinct(batches, todo, quiet, meta.rows, missing == "category"))
    _, batches = iter_batches(path, columns=read, chunk_rows=chunk_rows, na_values=na_values)
    return _count_tables(batches, columns, declared, quiet, meta.rows, weights)


def count_frame(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    categories: Mapping[str, Sequence[Label]] | None = None,
) -> CountTable:
    """:func:`count_file` for a DataFrame in memory (categoricals keep their categories)."""
    from pramkit.codebook import categories_of

    absent = [c for c in columns if c not in data.columns]
    if absent:
        raise DataError(f"column(s) {absent} are not in the data; its columns are {list(data.columns)}")
    cats = {c: (categories or {}).get(c) or categories_of(data[c]) for c in columns}
    table = pa.Table.from_pandas(data[list(columns)], preserve_index=False)
    return _count_tables([table], list(columns), cats, True, len(data))
