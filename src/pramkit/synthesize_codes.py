"""A file's records as category codes, read one record batch at a time, and a release written from drawn codes.

The model pgm (:mod:`pramkit.synthesize_pgm`) reads nothing of the records but each variable's category code,
and writes every synthesized value from a drawn code.  :func:`read_codes` reads a file of any size that way,
batch by batch (:func:`pramkit.io.iter_batches`), each value turned into the smallest unsigned integer that
holds its variable's categories (:func:`code_dtype`); :func:`released_tables` writes the release batch by
batch the same way.  What is held is the codes, not the records' text: 18 million records of 12 variables
are 0.43 GB of codes, against about 11 GB as text in a data frame.

The codes are those of the frame path (:func:`pramkit.synthesize.synthesize_release` on a data frame): the same
categories in the same order (declared, or the values read, sorted), the same checks in the same words (a
value spelled two ways, a value outside the declared categories), so that a key gives the same release
whichever path read the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.codebook import canonical, sort_labels, spelling_clash, spelling_error
from pramkit.errors import DataError

#: Records a released batch holds (and a digest reads at a time).
CHUNK_ROWS = 1 << 20


def code_dtype(sizes: Sequence[int]) -> np.dtype:
    """The smallest unsigned integer type that holds a code of every variable (sizes: categories each).

    Examples
    --------
    >>> code_dtype([3, 9, 300]), code_dtype([2, 256]), code_dtype([70_000])
    (dtype('uint16'), dtype('uint8'), dtype('uint32'))
    """
    most = max(sizes, default=1)
    for dtype in (np.uint8, np.uint16, np.uint32):
        if most <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def code_chunks(codes: np.ndarray, rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """The codes' canonical bytes, little-endian int64 record by record, in pieces of ``rows`` records: what a
    digest of the records reads, whatever their integer type, without an int64 copy of the whole file.

    Examples
    --------
    >>> codes = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.uint8)
    >>> b"".join(code_chunks(codes, rows=2)) == codes.astype("<i8").tobytes()
    True
    """
    for start in range(0, len(codes), rows):
        yield np.ascontiguousarray(codes[start:start + rows], dtype="<i8").tobytes()


def cell_index(columns: Sequence[np.ndarray], shape: Sequence[int]) -> np.ndarray:
    """Each record's cell of a table of ``shape`` (the C order of :func:`numpy.ravel_multi_index`), as int64,
    from columns of codes of any integer type, with one temporary column at most.

    Examples
    --------
    >>> a, b = np.array([0, 1, 2], dtype=np.uint8), np.array([3, 0, 1], dtype=np.uint16)
    >>> cell_index([a, b], (3, 4)).tolist() == np.ravel_multi_index((a, b), (3, 4)).tolist()
    True
    """
    out = np.array(columns[0], dtype=np.int64)
    for column, size in zip(columns[1:], shape[1:]):
        out *= size
        out += column
    return out


def count_cells(codes: np.ndarray, at: Sequence[int], shape: Sequence[int], rows: int | None = None) -> np.ndarray:
    """The table of ``shape`` of the columns ``at`` of ``codes`` (records by variables): how many records fall in
    each cell, counted ``rows`` records at a time (default :data:`CHUNK_ROWS`), so that a table of a large file
    holds no per-record array of its own.

    Examples
    --------
    >>> codes = np.array([[0, 1], [1, 1], [0, 1], [1, 0]], dtype=np.uint8)
    >>> count_cells(codes, [0, 1], (2, 2), rows=3).tolist()
    [[0, 2], [1, 1]]
    """
    rows = CHUNK_ROWS if rows is None else rows
    cells = int(np.prod(shape))
    table = np.zeros(cells, dtype=np.int64)
    for start in range(0, len(codes), rows):
        part = codes[start:start + rows]
        table += np.bincount(cell_index([part[:, i] for i in at], shape), minlength=cells)
    return table.reshape(tuple(shape))


def absent_columns(absent: Sequence[str], columns: Sequence[Any]) -> DataError:
    """The error of variables the data lacks (the frame path's and the batch path's)."""
    return DataError(f"no column {', '.join(map(repr, absent))} in the data (columns: {', '.join(map(str, columns))})")


def missing_values(name: str) -> DataError:
    """The error of a variable with a missing value, which the model pgm never draws."""
    return DataError(f"the model pgm draws no missing value, and {name} has missing values: declare them as a "
                     "category (na_values) or use the model margins")


def outside_categories(name: str, text: str | None) -> DataError:
    """The error of a value (its canonical text) outside a variable's declared categories."""
    return DataError(f"{name}: the value {text!r} is not one of its declared categories")


def uncastable(name: str, kind: Any) -> DataError:
    """The error of a drawn category that the released file's column type cannot hold."""
    return DataError(f"{name}: a drawn category cannot be written as the file's {kind} values: declare categories "
                     "of the column's type")


def category_index(cats: Sequence[Any]) -> dict[str | None, int]:
    """Each category's code by its canonical text (a missing value, ``None``, by ``None``).

    Examples
    --------
    >>> category_index(["1", 2.0, None])
    {'1': 0, '2': 1, None: 2}
    """
    return {canonical(c) if c is not None else None: i for i, c in enumerate(cats)}


@dataclass
class _Seen:
    """One variable's distinct values as read (in order of first appearance), the row of each's first, and
    whether a value is missing."""

    index: dict[Any, int] = field(default_factory=dict)
    first: list[int] = field(default_factory=list)
    parts: list[np.ndarray] = field(default_factory=list)
    holes: bool = False

    def add(self, column: pa.Array | pa.ChunkedArray, offset: int) -> None:
        """Encode one batch's column as codes of first appearance (a missing value, null or NaN, as 0: the
        caller refuses a variable with one, after the checks of its values)."""
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if pa.types.is_floating(column.type):
            column = pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
        self.holes = self.holes or column.null_count > 0
        encoded = pc.dictionary_encode(column)
        values = encoded.dictionary.to_pandas().tolist()  # a frame's values: what the frame path reads
        before = len(self.index)
        lookup = np.fromiter((self.index.setdefault(x, len(self.index)) for x in values), dtype=np.int64,
                             count=len(values))
        indices = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        if len(self.index) > before:  # the first row of each new value
            found, at = np.unique(indices, return_index=True)
            first = dict(zip(found.tolist(), at.tolist()))
            self.first.extend(offset + first[i] for i in np.flatnonzero(lookup >= before).tolist())
        self.parts.append(np.append(lookup, 0).astype(code_dtype([len(self.index)]))[indices])

    def values(self) -> list[Any]:
        return list(self.index)


@dataclass
class CodedFile:
    """A file read as codes (:func:`read_codes`).

    Attributes
    ----------
    codes : numpy.ndarray
        Records by variables, of :func:`code_dtype` of the categories.
    cats : dict
        Each variable's categories, in code order.
    sources : dict
        Each variable's ``"declared"`` or ``"data"``.
    meta : pramkit.io.TableMeta
        What the reader learnt of the file (format, columns, labels, missing codes, CSV dialect).
    schema : pyarrow.Schema
        The file's columns and types as read (missing codes kept).
    """

    codes: np.ndarray
    cats: dict[str, list[Any]]
    sources: dict[str, Any]
    meta: Any
    schema: pa.Schema

    @property
    def rows(self) -> int:
        return len(self.codes)


def read_codes(path: Path, variables: Sequence[str], declared: Mapping[str, Sequence[Any]] | None, *,
               na_values: Sequence[str], sep: str, encoding: str, decimal: str, quiet: bool = True) -> CodedFile:
    """Read ``variables`` of the file at ``path`` as category codes, one record batch at a time.

    Parameters
    ----------
    path : pathlib.Path
        The original (CSV, Parquet, Stata, SPSS, SAS).
    variables : sequence of str
        The variables to read.
    declared : mapping, optional
        Variable -> its declared categories; a variable not named takes the values read, sorted.
    na_values, sep, encoding, decimal
        How the file is written (:func:`pramkit.io.iter_batches`).
    quiet : bool
        No progress bar (the records read).

    Returns
    -------
    CodedFile

    Raises
    ------
    DataError
        A variable that is not in the file, fewer than 2 records, a value spelled two ways in a variable
        whose categories are read from the data, a value outside the declared categories, or a missing value
        (the model pgm draws none), in one line.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = Path(d) / "a.csv"
    ...     _ = f.write_text("sex,age\\nm,1\\nf,2\\nf,1\\n")
    ...     coded = read_codes(f, ["age", "sex"], {"sex": ["m", "f"]}, na_values=(), sep=",", encoding="utf-8",
    ...                        decimal=".")
    >>> coded.codes.tolist(), coded.cats, coded.sources
    ([[0, 0], [1, 1], [0, 1]], {'age': ['1', '2'], 'sex': ['m', 'f']}, {'age': 'data', 'sex': 'declared'})
    """
    from pramkit.io import blank_missing_codes, iter_batches
    from pramkit.progress import progress

    meta, batches = iter_batches(path, na_values=tuple(na_values), sep=sep, encoding=encoding, keep_missing_codes=True,
                                 decimal=decimal, chunk_rows=CHUNK_ROWS)
    absent = [v for v in variables if v not in meta.columns]
    if absent:
        raise absent_columns(absent, meta.columns)
    seen = {v: _Seen() for v in variables}
    rows, schema = 0, None
    with progress(total=meta.rows, desc="reading", unit="rows", quiet=quiet) as bar:
        for batch in batches:
            schema = batch.schema if schema is None else schema
            blank = blank_missing_codes(batch.select(list(variables)), meta.missing)
            for v in variables:
                seen[v].add(blank.column(v), rows)
            rows += batch.num_rows
            bar.update(batch.num_rows)
    if rows == 0 or schema is None:
        raise DataError(f"file {str(path)!r} has no data rows")
    if rows < 2:
        raise DataError("the data has fewer than 2 records: nothing to synthesize")
    for v in variables:
        if declared is None or v not in declared:
            _check_spelling(v, seen[v])
    cats, sources = {}, {}
    for v in variables:
        cats[v], sources[v] = ((list(dict.fromkeys(c for c in declared[v] if c is not None)), "declared")
                               if declared is not None and v in declared
                               else (sorted(seen[v].values(), key=lambda x: (str(type(x)), x)), "data"))
    holes = [v for v in variables if seen[v].holes]
    if holes:
        raise missing_values(holes[0])
    codes = np.empty((rows, len(variables)), dtype=code_dtype([len(cats[v]) for v in variables]))
    for j, v in enumerate(variables):
        codes[:, j] = _final_codes(v, seen[v], cats[v])[np.concatenate(seen[v].parts)]
        seen[v].parts.clear()
    pa.default_memory_pool().release_unused()  # the batches' buffers, which the pool would keep
    return CodedFile(codes, cats, sources, meta, schema)


def _check_spelling(name: str, seen: _Seen) -> None:
    """Refuse a value spelled two ways (:func:`pramkit.codebook.spelling_clash`, on the values in design's
    order), naming the first row of each spelling, as the frame path does."""
    values = seen.values()
    clash = spelling_clash(sort_labels(values))
    if clash is not None:
        rows = [min(seen.first[i] for i, x in enumerate(values) if canonical(x) == canonical(c)) + 1
                for c in clash[:2]]
        raise spelling_error(name, clash, (rows[0], rows[1]))


def _final_codes(name: str, seen: _Seen, cats: Sequence[Any]) -> np.ndarray:
    """Each value of first appearance's code among the categories (matched by their canonical text); a value
    outside the declared categories is refused, the first in the file named."""
    index = category_index(cats)
    values = seen.values()
    coded = [index.get(canonical(x)) for x in values]
    outside = [i for i, c in enumerate(coded) if c is None]
    if outside:
        first = min(outside, key=lambda i: seen.first[i])
        raise outside_categories(name, canonical(values[first]))
    return np.asarray(coded, dtype=np.int64)


def _labels(cats: Sequence[Any], kind: pa.DataType) -> tuple[pa.Array, bool]:
    """The categories as an Arrow array of the file's type (``True``), or as read (``False``) when one of them
    is not of that type: each drawn batch is then cast alone, so that only a drawn value can fail."""
    labels = pa.array(np.asarray(list(cats), dtype=object), from_pandas=True)
    try:
        return labels.cast(kind), True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return labels, False


def _column(labels: tuple[pa.Array, bool], codes: np.ndarray, name: str, kind: pa.DataType) -> pa.Array:
    """One batch's drawn values of one variable, in the file's type."""
    values = labels[0].take(pa.array(codes))
    if labels[1]:
        return values
    try:
        return values.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise uncastable(name, kind) from None


def released_tables(coded: CodedFile, drawn: np.ndarray, variables: Sequence[str], src: Path, *,
                    every_column: bool, na_values: Sequence[str], sep: str, encoding: str, decimal: str,
                    chunk_rows: int | None = None) -> Iterator[pa.Table]:
    """The released file, batch by batch: every column drawn (``every_column``: as many records as ``drawn``,
    the file's columns and types), or the file read again with the synthesized variables replaced record by
    record (every other column, and its missing codes, as it was).

    Raises
    ------
    DataError
        A drawn category that cannot be written as the column's type.
    """
    from pramkit.io import iter_batches

    chunk_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows
    kinds = {v: coded.schema.field(v).type for v in variables}
    labels = {v: _labels(coded.cats[v], kinds[v]) for v in variables}
    if every_column:
        schema = pa.schema([coded.schema.field(c) for c in coded.meta.columns], metadata=coded.schema.metadata)
        at = {v: j for j, v in enumerate(variables)}
        for start in range(0, len(drawn), chunk_rows):
            part = drawn[start:start + chunk_rows]
            yield pa.Table.from_arrays([_column(labels[c], part[:, at[c]], c, kinds[c]) for c in schema.names],
                                       schema=schema)
        return
    _, batches = iter_batches(src, na_values=tuple(na_values), sep=sep, encoding=encoding, keep_missing_codes=True,
                              decimal=decimal, chunk_rows=chunk_rows)
    start = 0
    for batch in batches:
        part = drawn[start:start + batch.num_rows]
        for j, v in enumerate(variables):
            i = batch.column_names.index(v)
            batch = batch.set_column(i, batch.field(i), _column(labels[v], part[:, j], v, kinds[v]))
        start += batch.num_rows
        yield batch
