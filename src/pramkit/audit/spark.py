"""The release audit's passes over records as Spark jobs (:func:`pramkit.audit.release.release_audit`
with ``backend="spark"``): the same checks, figures and messages as the local engine's.

Spark numbers the records of both files in file order (:func:`numbered`: a folder's part files in
the order :func:`pramkit.io.dataset_parts` reads them), pairs the original's and the released file's
records by row, and aggregates what the checks need into small tables:

* the columns no variable perturbs: how many rows differ, in which columns, and the first rows;
* for each perturbed variable, its distinct pairs (original values, released values; with households,
  the values of the household's first member too) and how many records hold each.

The local code then decides on these tables (:meth:`pramkit.audit.records._Variable.add_patterns`):
the categories, the zero cells of M, the transition table, the goodness-of-fit tests and every verdict
are the local engine's, computed by one implementation.  The rows a finding lists (the first
:data:`~pramkit.audit.records.SHOWN`) are fetched by one more job, only when something was found.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from pramkit.audit.records import (
    SHOWN,
    Patterns,
    _columns_check,
    _FileChecks,
    _holm_family,
    _Variable,
    encoded,
)
from pramkit.audit.result import Check
from pramkit.engine.spark.files import _check_format, read
from pramkit.engine.spark.session import _one_line_errors, _quoted, _require_pyspark, session
from pramkit.errors import DataError, ParameterError
from pramkit.io import CSV_ENCODING, CSV_SEP, csv_missing_codes
from pramkit.manifest import Manifest
from pramkit.validate import SPARK_MASTER

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: The column of :func:`numbered` holding each record's row, from 0 in file order.
ROW = "__pramkit_row"
_FILE, _BLOCK, _MONO, _SHIFT = "__pramkit_file", "__pramkit_block", "__pramkit_mono", "__pramkit_shift"
_TIMES, _ENTRY, _UNIT, _FIRST, _LEAD = "__pramkit_times", "__pramkit_entry", "__pramkit_unit", "__pramkit_first", \
    "__pramkit_lead"


def numbered(spark: SparkSession, path: str | Path, *, sep: str = CSV_SEP,
             encoding: str = CSV_ENCODING) -> tuple[DataFrame, list[str], int]:
    """A CSV or Parquet file (or folder of part files) read by Spark, with its rows numbered from 0 in file
    order (column :data:`ROW`), its columns and its number of rows.

    The records of one piece of one file are read in order, each piece within one partition, so a row's number
    is where its piece begins plus its place in it: one job finds the pieces (their file, where in the file
    they begin, their first ``monotonically_increasing_id`` and their records), whatever the partitioning.

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "data.csv")
    ...     _ = open(path, "w").write("sex\\n" + "m\\nf\\n" * 3)
    ...     df, columns, rows = numbered(session("local[1]"), path)
    ...     got = [(r[ROW], r["sex"]) for r in df.orderBy(ROW).collect()]
    >>> columns, rows, got[:3]
    (['sex'], 6, [(0, 'm'), (1, 'f'), (2, 'm')])
    """
    from pramkit.io import dataset_parts

    F = _require_pyspark()
    p = Path(path)
    _check_format(p, "reads")
    df = read(spark, p, sep=sep, encoding=encoding)
    columns = list(df.columns)
    parts = dataset_parts(p)[1] if p.is_dir() else [p]
    order = {q.name: i for i, q in enumerate(parts)}
    tagged = df.select("*", F.input_file_name().alias(_FILE), F.input_file_block_start().alias(_BLOCK),
                       F.monotonically_increasing_id().alias(_MONO))
    pieces = tagged.groupBy(_FILE, _BLOCK).agg(F.min(_MONO).alias("lo"), F.count(F.lit(1)).alias("n")).collect()

    def place(row: Any) -> tuple[int, int]:
        name = unquote(str(row[_FILE]).rsplit("/", 1)[-1])
        if name not in order:
            raise DataError(f"{str(p)!r}: Spark read a file pramkit does not read as a part ({name!r})")
        return order[name], int(row[_BLOCK])

    shifts, total = [], 0
    for row in sorted(pieces, key=place):
        shifts.append((row[_FILE], int(row[_BLOCK]), total - int(row["lo"])))
        total += int(row["n"])
    table = spark.createDataFrame(shifts, f"{_FILE} string, {_BLOCK} long, {_SHIFT} long")
    out = tagged.join(F.broadcast(table), [_FILE, _BLOCK]).select(
        *(F.col(_quoted(c)) for c in columns), (F.col(_MONO) + F.col(_SHIFT)).alias(ROW))
    return out, columns, total


def _text(table: pa.Table) -> pa.Table:
    """Spark's text columns as the local reader gives them (``string``, not ``large_string``)."""
    return pa.table({n: c.cast(pa.string()) if pa.types.is_large_string(c.type) else c
                     for n, c in zip(table.column_names, table.columns, strict=True)})


class _Pairs:
    """The paired records of the two files (columns ``o0, o1, ...`` and ``r0, r1, ...``: the files' columns by
    position, and :data:`ROW`)."""

    def __init__(self, spark: SparkSession, original: DataFrame, released: DataFrame, columns: Sequence[str]) -> None:
        F = _require_pyspark()
        self.spark, self.columns = spark, list(columns)
        self.index = {c: i for i, c in enumerate(columns)}
        left = original.select(F.col(ROW), *(F.col(_quoted(c)).alias(f"o{i}") for i, c in enumerate(columns)))
        right = released.select(F.col(ROW), *(F.col(_quoted(c)).alias(f"r{i}") for i, c in enumerate(columns)))
        self.df = left.join(right, ROW)
        self.types = {c: (original.schema[c].dataType, released.schema[c].dataType) for c in columns}

    def differs(self, column: str) -> Any:
        """Whether a record's value of ``column`` differs between the files (as text when their types differ)."""
        F = _require_pyspark()
        i = self.index[column]
        a, b = F.col(f"o{i}"), F.col(f"r{i}")
        if self.types[column][0] != self.types[column][1]:
            a, b = a.cast("string"), b.cast("string")
        return ~a.eqNullSafe(b)

    def first_rows(self, df: DataFrame, keys: Sequence[str], entries: pa.Table) -> tuple[list[int], list[int]]:
        """The first :data:`SHOWN` rows of ``df`` whose ``keys`` are one of the rows of ``entries`` (null equal to
        null), and for each, which."""
        F = _require_pyspark()
        from pyspark.sql.types import LongType, StructField, StructType

        schema = StructType([*(StructField(f"k{i}", df.schema[k].dataType) for i, k in enumerate(keys)),
                             StructField(_ENTRY, LongType())])
        rows = [(*(entries.column(k)[j].as_py() for k in keys), int(entries.column(_ENTRY)[j].as_py()))
                for j in range(entries.num_rows)]
        wanted = self.spark.createDataFrame(rows, schema)
        same = reduce(lambda x, y: x & y, (F.col(_quoted(k)).eqNullSafe(wanted[f"k{i}"]) for i, k in enumerate(keys)))
        found = df.join(F.broadcast(wanted), same).select(ROW, _ENTRY).orderBy(ROW).limit(SHOWN).collect()
        return [int(r[ROW]) for r in found], [int(r[_ENTRY]) for r in found]


def _file_findings(pairs: _Pairs, state: _FileChecks) -> None:
    """The columns no variable perturbs, compared row for row: which differ, how many rows, the first rows."""
    F = _require_pyspark()
    if not state.kept:
        return
    diffs = [pairs.differs(c) for c in state.kept]
    anywhere = reduce(lambda x, y: x | y, diffs)
    got = pairs.df.agg(*(F.max(d.cast("int")).alias(f"d{i}") for i, d in enumerate(diffs)),
                       F.sum(anywhere.cast("long")).alias("rows")).collect()[0]
    state.bad = {c for i, c in enumerate(state.kept) if got[f"d{i}"]}
    state.differ.total = int(got["rows"] or 0)
    if state.differ.total:
        rows = pairs.df.filter(anywhere).select(ROW).orderBy(ROW).limit(SHOWN).collect()
        state.differ.rows = [int(r[ROW]) + 1 for r in rows]


def _variable_findings(pairs: _Pairs, found: _Variable, chunk_rows: int) -> None:
    """One variable's distinct pairs of records, aggregated by Spark and decided by the local code."""
    F = _require_pyspark()
    v = found.variable
    read_columns = list(v.read_columns)
    own = [f"o{pairs.index[c]}" for c in read_columns]
    theirs = [f"r{pairs.index[c]}" for c in read_columns]
    keys = [*own, *theirs]
    df = pairs.df
    if v.unit is not None:  # the household's first member, in the original's order
        unit = F.coalesce(F.col(f"o{pairs.index[v.unit]}").cast("string"), F.lit(""))
        df = df.withColumn(_UNIT, unit)
        lead = df.groupBy(_UNIT).agg(F.min_by(F.struct(*(F.col(k).alias(f"l{k}") for k in keys)), F.col(ROW))
                                     .alias(_LEAD), F.min(ROW).alias(_FIRST))
        df = df.join(lead, _UNIT).select(ROW, *keys, *(F.col(f"{_LEAD}.l{k}").alias(f"l{k}") for k in keys),
                                         (F.col(ROW) == F.col(_FIRST)).alias(_FIRST))
        keys += [*(f"l{k}" for k in keys), _FIRST]
    table = _text(df.groupBy(*keys).agg(F.count(F.lit(1)).alias(_TIMES)).toArrow())
    table = table.append_column(_ENTRY, pa.array(np.arange(table.num_rows, dtype=np.int64)))

    def side(names: Sequence[str]) -> pa.Table:
        return pa.table({c: table.column(n) for c, n in zip(read_columns, names, strict=True)})

    original, released = side(own), side(theirs)
    leads = None
    if v.unit is not None:
        leads = (side([f"l{k}" for k in own]), side([f"l{k}" for k in theirs]),
                 table.column(_FIRST).to_numpy(zero_copy_only=False))
    patterns = Patterns(table.column(_TIMES).to_numpy())
    if not found.add_patterns(original, released, patterns, leads):
        _undecodable(pairs, df, keys, table, found, original, released, chunk_rows)
        return
    found.resolve(lambda mask: pairs.first_rows(df, keys, table.filter(pa.array(mask))))


def _undecodable(pairs: _Pairs, df: DataFrame, keys: Sequence[str], table: pa.Table, found: _Variable,
                 original: pa.Table, released: pa.Table, chunk_rows: int) -> None:
    """The local engine's error for a value outside the variable's categories: the first such row of the
    original, unless the released file holds one in an earlier chunk (the local engine reads both files
    ``chunk_rows`` rows at a time, :data:`~pramkit.audit.release.AUDIT_CHUNK_ROWS`, the original's chunk
    first)."""
    first: list[tuple[int, int, int, pa.Table]] = []   # chunk, file, row, the record's values
    for order, side in enumerate((original, released)):
        bad = found.undecodable(side)
        if bad.any():
            rows, entries = pairs.first_rows(df, keys, table.filter(pa.array(bad)))
            first.append((rows[0] // chunk_rows, order, rows[0], side.slice(entries[0], 1)))
    _, _, row, record = min(first, key=lambda x: x[:2])
    try:
        encoded(found.variable, record, found.codes, first_row=row)
    except DataError as exc:
        found.fail("categories", str(exc))
    else:  # pragma: no cover - undecodable found it
        raise AssertionError("a record outside the categories was decoded")


@_one_line_errors
def audit_files_spark(manifest: Manifest, original: str | Path, released: str | Path, *, alpha: float,
                      na: Any, chunk_rows: int, shuffled: bool = False, master: str = SPARK_MASTER,
                      sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> list[Check]:
    """The file and variable checks of the release audit, the passes over records run by Spark: the checks of
    :func:`pramkit.audit.release.release_audit`'s local engine, the same figures and messages.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    original, released : str or pathlib.Path
        The original and released files (CSV or Parquet, or folders of part files).
    alpha : float
        Family-wise error rate of the goodness-of-fit tests (Holm).
    na : sequence of str
        The texts the design read as missing.
    chunk_rows : int
        The rows of each file the local engine reads at a time (:data:`pramkit.audit.release.AUDIT_CHUNK_ROWS`):
        of values outside a variable's categories in both files, it reports the one in the earlier chunk.
    shuffled : bool
        The release is shuffled: refused (a shuffled release is audited by the local engine).
    master, sep, encoding : str
        Spark's master URL; how the CSV files are written.

    Returns
    -------
    list of Check

    Raises
    ------
    ParameterError
        A shuffled release, or a file neither CSV nor Parquet.
    DataError
        A file without data rows.

    Examples
    --------
    >>> import pytest, tempfile, pathlib
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.engine.perturb import apply_file
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     _ = (d / "o.csv").write_text("id,sex\\n" + "".join(f"{i},{'fm'[i % 2]}\\n" for i in range(200)))
    ...     _ = apply_file(d / "o.csv", m, d / "r.csv", key=bytes(range(32)))
    ...     checks = audit_files_spark(m, d / "o.csv", d / "r.csv", alpha=1e-3, na=(), chunk_rows=1 << 18,
    ...                                master="local[1]")
    >>> [(c.field, c.passed) for c in checks][:3]
    [('columns', True), ('row count and order', True), ('forbidden combinations', True)]
    """
    if shuffled:
        raise ParameterError("a shuffled release is audited on this machine: use the local backend (--backend local)")
    for path in (original, released):
        _check_format(path, "reads")
    spark = session(master)
    orig, columns_o, rows_o = numbered(spark, original, sep=sep, encoding=encoding)
    rel, columns_r, rows_r = numbered(spark, released, sep=sep, encoding=encoding)
    differ = _columns_check(columns_o, columns_r)
    if differ is not None:
        return [differ]
    for path, rows in ((original, rows_o), (released, rows_r)):
        if not rows:
            raise DataError(f"file {str(path)!r} has no data rows")
    codes = csv_missing_codes(na)
    state = _FileChecks(manifest, columns_o, shuffled=False, codes=codes)
    state.rows = [rows_o, rows_r]
    found = [_Variable(v, columns_o, codes) for v in manifest.variables]
    if rows_o == rows_r:
        pairs = _Pairs(spark, orig, rel, columns_o)
        _file_findings(pairs, state)
        for f in found:
            if not f.failed:
                _variable_findings(pairs, f, chunk_rows)
    checks = state.checks(columns_o)
    if all(c.passed for c in checks if c.field in ("columns", "row count")):
        checks += _holm_family(found, alpha)
    return checks
