"""The release audit's passes over records as Spark jobs (:func:`pramkit.audit.release.release_audit`
with ``backend="spark"``): the same checks, figures and messages as the local engine's.

Spark numbers the records of both files in file order (:func:`numbered`: a folder's part files in
the order :func:`pramkit.io.dataset_parts` reads them; one job for both files), pairs the original's and
the released file's records by row, and aggregates what the checks need into small tables, all in one
aggregation over the paired records (:func:`grouped`):

* the columns no variable perturbs: which differ, in how many rows (the first rows by one more job,
  only when some differ);
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
_SIDE, _TIMES, _ENTRY, _SET = "__pramkit_side", "__pramkit_times", "__pramkit_entry", "__pramkit_set"


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
    return numbered_files(spark, [path], sep=sep, encoding=encoding)[0]


def numbered_files(spark: SparkSession, paths: Sequence[str | Path], *, sep: str = CSV_SEP,
                   encoding: str = CSV_ENCODING) -> list[tuple[DataFrame, list[str], int]]:
    """:func:`numbered` of several files, whose pieces one job finds.

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name, text in (("a.csv", "x\\n1\\n2\\n"), ("b.csv", "y\\n3\\n")):
    ...         _ = open(os.path.join(d, name), "w").write(text)
    ...     files = numbered_files(session("local[1]"), [os.path.join(d, "a.csv"), os.path.join(d, "b.csv")])
    >>> [(columns, rows) for _, columns, rows in files]
    [(['x'], 2), (['y'], 1)]
    """
    F = _require_pyspark()
    tagged = []
    for path in paths:
        _check_format(path, "reads")
        df = read(spark, path, sep=sep, encoding=encoding)
        tagged.append(df.select("*", F.input_file_name().alias(_FILE), F.input_file_block_start().alias(_BLOCK),
                                F.monotonically_increasing_id().alias(_MONO)))
    sides = (t.select(F.lit(i).alias(_SIDE), _FILE, _BLOCK, _MONO) for i, t in enumerate(tagged))
    pieces = reduce(lambda a, b: a.unionByName(b), sides).groupBy(_SIDE, _FILE, _BLOCK).agg(
        F.min(_MONO).alias("lo"), F.count(F.lit(1)).alias("n")).collect()
    return [_shifted(spark, Path(path), t, [r for r in pieces if r[_SIDE] == i])
            for i, (path, t) in enumerate(zip(paths, tagged, strict=True))]


def _shifted(spark: SparkSession, path: Path, tagged: DataFrame, pieces: Sequence[Any]) -> tuple[DataFrame, list[str],
                                                                                                  int]:
    """One file's records (``tagged`` with its pieces' columns) numbered from its ``pieces`` (:func:`numbered`)."""
    from pramkit.io import dataset_parts

    F = _require_pyspark()
    columns = [c for c in tagged.columns if c not in (_FILE, _BLOCK, _MONO)]
    parts = dataset_parts(path)[1] if path.is_dir() else [path]
    order = {q.name: i for i, q in enumerate(parts)}

    def place(row: Any) -> tuple[int, int]:
        name = unquote(str(row[_FILE]).rsplit("/", 1)[-1])
        if name not in order:
            raise DataError(f"{str(path)!r}: Spark read a file pramkit does not read as a part ({name!r})")
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


def grouped(df: DataFrame, groups: Sequence[Sequence[str]]) -> list[pa.Table]:
    """The distinct combinations of each group of columns of ``df`` and how many records hold each (column
    ``__pramkit_times``): one aggregation (grouping sets), one pass over the records.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    groups : sequence of sequences of str
        The columns of each table (not empty).

    Returns
    -------
    list of pyarrow.Table
        One per group, its columns (text as ``string``) and the count, in no particular order of rows.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> df = session("local[1]").createDataFrame([("m", "a"), ("m", "b"), ("f", "b")], "sex string, g string")
    >>> [t.sort_by(t.column_names[0]).to_pydict() for t in grouped(df, [["sex"], ["g"]])]
    [{'sex': ['f', 'm'], '__pramkit_times': [1, 2]}, {'g': ['a', 'b'], '__pramkit_times': [1, 2]}]
    """
    F = _require_pyspark()
    import pyarrow.compute as pc

    names = list(dict.fromkeys(c for group in groups for c in group))
    sets = list(dict.fromkeys(tuple(group) for group in groups))
    table = _text(df.groupingSets([list(s) for s in sets], *names).agg(
        F.count(F.lit(1)).alias(_TIMES), F.grouping_id().alias(_SET)).toArrow())

    def set_id(group: Sequence[str]) -> int:  # a bit for each column not grouped by, the first column's highest
        return sum(1 << (len(names) - 1 - i) for i, c in enumerate(names) if c not in group)

    return [table.filter(pc.equal(table.column(_SET), set_id(group))).select([*group, _TIMES]) for group in groups]


class _Pairs:
    """The paired records of the two files (columns ``o0, o1, ...`` and ``r0, r1, ...``: the files' columns by
    position, and :data:`ROW`), with the columns the findings group by (:meth:`flags`, :meth:`keys`)."""

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

    def flags(self, columns: Sequence[str]) -> list[str]:
        """Columns added to :attr:`df`: whether each of ``columns`` differs in a record (:meth:`differs`)."""
        names = [f"d{self.index[c]}" for c in columns]
        self.df = self.df.select("*", *(self.differs(c).alias(n) for c, n in zip(columns, names, strict=True)))
        return names

    def keys(self, number: int, variable: Any) -> list[str]:
        """The columns grouping a variable's records: its values in both files, and with households, the values
        of the household's first member (in the original's order) and whether the record is it, added to
        :attr:`df` (names numbered by ``number``)."""
        F = _require_pyspark()
        from pyspark.sql import Window

        keys = [*(f"{side}{self.index[c]}" for side in "or" for c in variable.read_columns)]
        if variable.unit is None:
            return keys
        unit = F.coalesce(F.col(f"o{self.index[variable.unit]}").cast("string"), F.lit(""))
        household = Window.partitionBy(unit).orderBy(ROW)
        leads = [f"l{number}_{k}" for k in keys]
        self.df = self.df.select("*", *(F.first(k).over(household).alias(lead) for k, lead in zip(keys, leads,
                                                                                                  strict=True)),
                                 (F.row_number().over(household) == 1).alias(f"f{number}"))
        return [*keys, *leads, f"f{number}"]

    def first_rows(self, keys: Sequence[str], entries: pa.Table) -> tuple[list[int], list[int]]:
        """The first :data:`SHOWN` rows whose ``keys`` are one of the rows of ``entries`` (null equal to null),
        and for each, which."""
        F = _require_pyspark()
        from pyspark.sql.types import LongType, StructField, StructType

        schema = StructType([*(StructField(f"k{i}", self.df.schema[k].dataType) for i, k in enumerate(keys)),
                             StructField(_ENTRY, LongType())])
        rows = [(*(entries.column(k)[j].as_py() for k in keys), int(entries.column(_ENTRY)[j].as_py()))
                for j in range(entries.num_rows)]
        wanted = self.spark.createDataFrame(rows, schema)
        same = reduce(lambda x, y: x & y, (F.col(_quoted(k)).eqNullSafe(wanted[f"k{i}"]) for i, k in enumerate(keys)))
        found = self.df.join(F.broadcast(wanted), same).select(ROW, _ENTRY).orderBy(ROW).limit(SHOWN).collect()
        return [int(r[ROW]) for r in found], [int(r[_ENTRY]) for r in found]


def _findings(pairs: _Pairs, state: _FileChecks, found: Sequence[_Variable], chunk_rows: int) -> None:
    """The findings of the file's unperturbed columns and of each variable not yet failed, from one aggregation
    of the paired records (:func:`grouped`)."""
    live = [f for f in found if not f.failed]
    flags = pairs.flags(state.kept)
    keys = [pairs.keys(i, f.variable) for i, f in enumerate(live)]
    groups = [*([flags] if flags else []), *keys]
    if not groups:
        return
    tables = grouped(pairs.df, groups)
    if flags:
        _file_findings(pairs, state, flags, tables.pop(0))
    for f, k, table in zip(live, keys, tables, strict=True):
        _variable_findings(pairs, f, k, table, chunk_rows)


def _file_findings(pairs: _Pairs, state: _FileChecks, flags: Sequence[str], table: pa.Table) -> None:
    """The columns no variable perturbs, compared row for row (``table``: the distinct ``flags`` of
    :meth:`_Pairs.flags` and their records): which differ, how many rows, the first rows."""
    F = _require_pyspark()
    differ = np.column_stack([table.column(f).to_numpy(zero_copy_only=False) for f in flags]).astype(bool)
    state.bad = {state.kept[i] for i in np.flatnonzero(differ.any(axis=0))}
    state.differ.total = int(table.column(_TIMES).to_numpy()[differ.any(axis=1)].sum())
    if state.differ.total:
        anywhere = reduce(lambda x, y: x | y, (F.col(f) for f in flags))
        rows = pairs.df.filter(anywhere).select(ROW).orderBy(ROW).limit(SHOWN).collect()
        state.differ.rows = [int(r[ROW]) + 1 for r in rows]


def _variable_findings(pairs: _Pairs, found: _Variable, keys: Sequence[str], table: pa.Table,
                       chunk_rows: int) -> None:
    """One variable's distinct pairs of records (``table``, grouped by :meth:`_Pairs.keys`), decided by the local
    code."""
    v = found.variable
    read_columns = list(v.read_columns)
    n = len(read_columns)
    table = table.append_column(_ENTRY, pa.array(np.arange(table.num_rows, dtype=np.int64)))

    def side(names: Sequence[str]) -> pa.Table:
        return pa.table({c: table.column(name) for c, name in zip(read_columns, names, strict=True)})

    original, released = side(keys[:n]), side(keys[n:2 * n])
    leads = None
    if v.unit is not None:
        leads = (side(keys[2 * n:3 * n]), side(keys[3 * n:4 * n]),
                 table.column(keys[4 * n]).to_numpy(zero_copy_only=False))
    patterns = Patterns(table.column(_TIMES).to_numpy())
    if not found.add_patterns(original, released, patterns, leads):
        _undecodable(pairs, keys, table, found, original, released, chunk_rows)
        return
    found.resolve(lambda mask: pairs.first_rows(keys, table.filter(pa.array(mask))))


def _undecodable(pairs: _Pairs, keys: Sequence[str], table: pa.Table, found: _Variable, original: pa.Table,
                 released: pa.Table, chunk_rows: int) -> None:
    """The local engine's error for a value outside the variable's categories: the first such row of the
    original, unless the released file holds one in an earlier chunk (the local engine reads both files
    ``chunk_rows`` rows at a time, :data:`~pramkit.audit.release.AUDIT_CHUNK_ROWS`, the original's chunk
    first)."""
    first: list[tuple[int, int, int, pa.Table]] = []   # chunk, file, row, the record's values
    for order, side in enumerate((original, released)):
        bad = found.undecodable(side)
        if bad.any():
            rows, entries = pairs.first_rows(keys, table.filter(pa.array(bad)))
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
    (orig, columns_o, rows_o), (rel, columns_r, rows_r) = numbered_files(spark, [original, released], sep=sep,
                                                                         encoding=encoding)
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
        _findings(_Pairs(spark, orig, rel, columns_o), state, found, chunk_rows)
    checks = state.checks(columns_o)
    if all(c.passed for c in checks if c.field in ("columns", "row count")):
        checks += _holm_family(found, alpha)
    return checks
