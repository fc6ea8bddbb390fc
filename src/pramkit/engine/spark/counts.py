"""Frequency tables of Spark DataFrames: Spark aggregations collected to the driver.

Every count the local engine makes from records (the design's tables, the risk measures' key
tables and weight sums, the estimators' sufficient statistics) is a function of the records'
distinct combinations of the columns it reads and how many records each holds (with their
weights' sum).  :func:`combinations` has Spark aggregate the records into those combinations,
one pass over the data; :func:`count_groups` then counts them on the driver with the local
engine's own code (:func:`pramkit.counts.count_distinct`), so the categories, their order, the
missing values and the errors are the local engine's, and the counts equal its counts.  What
reaches the driver is one row per combination observed, at most the records' number and in
practice the product of a few columns' categories.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.counts import MAX_CELLS, CountTable, CountTables, count_distinct
from pramkit.engine.spark.files import _dialected, _input_format, read
from pramkit.engine.spark.session import _one_line_errors, _quoted, _require_pyspark, session
from pramkit.errors import DataError, ParameterError
from pramkit.io import CSV_ENCODING, CSV_SEP, NA_VALUES, csv_missing_codes, require_columns
from pramkit.labels import Label
from pramkit.validate import SPARK_MASTER

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

#: The column of :func:`combinations` holding each combination's number of records.
TIMES = "__pramkit_times"
#: The column of :func:`combinations` holding each combination's sum of weights.
WEIGHT_SUM = "__pramkit_weight_sum"
#: The column of :func:`combinations` counting the records whose weight is not finite and positive.
BAD_WEIGHTS = "__pramkit_bad_weights"
#: The column of :func:`survey_combinations` holding each group's sum of squared weights.
SQUARES = "__pramkit_squares"
#: The most rows of an aggregation collected to the driver in one piece (:func:`collected`).
COLLECT_ROWS = 1 << 20


@_one_line_errors
def table_counts(df: DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Counts of every observed combination of ``columns`` (nulls included), as pandas.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    columns : sequence of str
        The columns to cross-classify.

    Returns
    -------
    pandas.DataFrame
        One row per observed combination, with its ``count``.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> df = session("local[1]").createDataFrame([("m", "a"), ("m", "a"), ("f", "b")], ["sex", "g"])
    >>> table_counts(df, ["sex", "g"]).sort_values("sex").to_dict("records")
    [{'sex': 'f', 'g': 'b', 'count': 1}, {'sex': 'm', 'g': 'a', 'count': 2}]
    """
    require_columns(columns, df.columns, "the DataFrame")
    return df.groupBy(*columns).count().toPandas()


@_one_line_errors
def category_counts(df: DataFrame, column: str) -> dict:
    """Counts of each value of one column (``None`` for missing).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    column : str
        The column.

    Returns
    -------
    dict
        Value -> count.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> df = session("local[1]").createDataFrame([("m",), ("m",), (None,)], "sex string")
    >>> sorted(category_counts(df, "sex").items(), key=str)
    [('m', 2), (None, 1)]
    """
    counts = table_counts(df, [column])
    return {(None if pd.isna(v) else v): int(c) for v, c in zip(counts[column], counts["count"])}


def _value(df: DataFrame, column: str, markers: Sequence[str]) -> Column:
    """A column with the texts that mean missing (``markers``) as nulls, when it holds text."""
    F = _require_pyspark()
    col = F.col(_quoted(column))
    if markers and df.schema[column].dataType.typeName() == "string":
        col = F.when(col.isin(list(markers)), F.lit(None)).otherwise(col)
    return col.alias(column)


@_one_line_errors
def combinations(df: DataFrame, columns: Sequence[str], *, weights: str | None = None,
                 markers: Sequence[str] = ()) -> pa.Table:
    """The distinct combinations of ``columns`` in ``df`` and their records, aggregated by Spark.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    columns : sequence of str
        The columns.
    weights : str, optional
        A column of survey weights: each combination's sum (:data:`WEIGHT_SUM`, as doubles), and
        the records whose weight is missing, not a number, infinite or not positive
        (:data:`BAD_WEIGHTS`; the local engine refuses them).
    markers : sequence of str
        Texts that mean missing (a CSV file's ``na_values``): counted as nulls.

    Returns
    -------
    pyarrow.Table
        One row per combination: ``columns``, :data:`TIMES` (records), and with ``weights``
        :data:`WEIGHT_SUM` and :data:`BAD_WEIGHTS`.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> df = session("local[1]").createDataFrame([("m", "2"), ("m", "3"), ("NA", "1")], "sex string, w string")
    >>> t = combinations(df, ["sex"], weights="w", markers=["NA"]).sort_by("sex")
    >>> t.column("sex").to_pylist(), t.column(TIMES).to_pylist(), t.column(WEIGHT_SUM).to_pylist()
    (['m', None], [2, 1], [5.0, 1.0])
    """
    F = _require_pyspark()
    require_columns([*columns, *([weights] if weights else [])], df.columns, "the data")
    aggregates = [F.count(F.lit(1)).alias(TIMES)]
    if weights is not None:
        w = _value(df, weights, markers).try_cast("double")
        bad = w.isNull() | F.isnan(w) | (w <= 0) | (w == float("inf"))
        aggregates += [F.sum(F.when(bad, F.lit(0.0)).otherwise(w)).alias(WEIGHT_SUM),
                       F.sum(F.when(bad, F.lit(1)).otherwise(F.lit(0))).cast("long").alias(BAD_WEIGHTS)]
    keys = [_value(df, c, markers) for c in columns]
    grouped = df.groupBy(*keys).agg(*aggregates) if keys else df.agg(*aggregates)
    return grouped.toArrow()


def records(data: Any, master: str = SPARK_MASTER, *, na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
            encoding: str = CSV_ENCODING) -> tuple[DataFrame, list[str]]:
    """The records of a CSV or Parquet file read by Spark, or a Spark DataFrame as it is, and the texts that
    mean missing in its text columns: ``na_values``, as the local engine reads a CSV file (a Parquet file's
    values are what they are).

    Examples
    --------
    >>> records([1, 2])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the Spark engine reads a CSV or Parquet file or a Spark DataFrame, not list
    """
    markers = list(csv_missing_codes(na_values).texts)
    if isinstance(data, (str, Path)):
        csv = Path(data).exists() and _dialected(_input_format(Path(data)))
        return read(session(master), data, sep=sep, encoding=encoding), markers if csv else []
    if not is_spark_frame(data):
        raise ParameterError(f"the Spark engine reads a CSV or Parquet file or a Spark DataFrame, not {type(data).__name__}")
    return data, markers


def _check_weights(table: pa.Table, weights: str | None) -> None:
    """:class:`DataError` when a record's weight is not finite and positive (the local engine refuses it too)."""
    if weights is None:
        return
    bad = int(pc.sum(table.column(BAD_WEIGHTS)).as_py() or 0)
    if bad:
        raise DataError(f"weight column {weights!r}: {bad:,} record(s) have a weight that is missing, not a number "
                        "or not positive; weights must be finite and positive")


@_one_line_errors
def count_groups(
    data: Any,
    groups: Sequence[Sequence[str]],
    *,
    columns: Sequence[str] | None = None,
    categories: Mapping[str, Sequence[Label]] | None = None,
    missing: str = "exclude",
    weights: str | None = None,
    master: str = SPARK_MASTER,
    na_values: Sequence[str] = NA_VALUES,
    max_cells: int = MAX_CELLS,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> CountTables:
    """:func:`pramkit.counts.count_groups` of a file or a Spark DataFrame, aggregated by Spark.

    The same tables as the local engine's for the same file (the tests check it across
    partitionings): one Spark job aggregates the records into their combinations of the counted
    columns (:func:`combinations`), which :func:`pramkit.counts.count_distinct` counts on the
    driver.  ``weights`` adds each cell's sum of weights (``weight_sums``, every group).

    Parameters
    ----------
    data : str, Path or pyspark.sql.DataFrame
        A CSV or Parquet file or folder of part files (read by Spark, :func:`pramkit.engine.spark.read`),
        or a Spark DataFrame; ``na_values`` are missing in text columns (:func:`records`).
    groups, columns, categories, missing, max_cells, na_values, sep, encoding
        As :func:`pramkit.counts.count_groups`.
    weights : str, optional
        A column of survey weights (finite and positive).
    master : str
        Spark's master URL, when ``data`` is a file.

    Returns
    -------
    pramkit.counts.CountTables

    Raises
    ------
    DataError
        As the local engine's (a column that is not in the data, a value outside declared
        categories, a weight that is not positive); an error naming a value names no row.
    SparkEngineError
        Spark failed, in one line.

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit import counts
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "data.csv")
    ...     _ = open(path, "w").write("sex,region\\nm,1\\nf,2\\nf,NA\\nm,1\\n")
    ...     spark = count_groups(path, [["sex", "region"]], master="local[1]")
    ...     local = counts.count_groups(path, [["sex", "region"]])
    >>> spark.categories == local.categories, spark.margin("sex", "region").tolist() == local.margin("sex", "region").tolist()
    (True, True)
    """
    from pramkit.counts import _groups

    every, _ = _groups(groups, columns)
    df, markers = records(data, master, na_values=na_values, sep=sep, encoding=encoding)
    table = combinations(df, every, weights=weights, markers=markers)
    _check_weights(table, weights)
    return count_distinct(table, groups, times=TIMES, columns=columns, categories=categories, missing=missing,
                          weights=None if weights is None else WEIGHT_SUM, max_cells=max_cells)


def count_file(path: Any, columns: Sequence[str], *, categories: Mapping[str, Sequence[Label]] | None = None,
               weights: str | None = None, missing: str = "exclude", master: str = SPARK_MASTER,
               na_values: Sequence[str] = NA_VALUES, max_cells: int = MAX_CELLS, sep: str = CSV_SEP,
               encoding: str = CSV_ENCODING) -> CountTable:
    """:func:`pramkit.counts.count_file` aggregated by Spark: the table of ``columns`` (:func:`count_groups`).

    Examples
    --------
    A Spark DataFrame's text ``NA`` is missing, as in a CSV file; with ``missing="category"`` it is a category:

    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> df = session("local[1]").createDataFrame([("m", 2.5), ("f", 1.0), ("NA", 4.0), ("m", 1.0)], "sex string, w double")
    >>> t = count_file(df, ["sex"], weights="w", missing="category")
    >>> t.categories, t.counts.tolist(), t.weight_sums.tolist()
    ((('f', 'm', None),), [1, 2, 1], [1.0, 3.5, 4.0])
    """
    return count_groups(path, [list(columns)], categories=categories, weights=weights, missing=missing,
                        master=master, na_values=na_values, max_cells=max_cells, sep=sep, encoding=encoding).tables[0]


def is_spark_frame(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame (without importing pyspark).

    Examples
    --------
    >>> is_spark_frame("data.csv")
    False
    """
    return type(data).__module__.split(".", 1)[0] == "pyspark" and type(data).__name__ == "DataFrame"


def _bad_number(df: DataFrame, column: str, markers: Sequence[str]) -> Column:
    """1 for a record whose ``column`` is missing, not a number, infinite or negative, else 0."""
    F = _require_pyspark()
    value = _value(df, column, markers)
    number = value.try_cast("double")
    bad = number.isNull() | F.isnan(number) | (number < 0) | (F.abs(number) == float("inf"))
    return F.when(bad, F.lit(1)).otherwise(F.lit(0))


@_one_line_errors
def survey_combinations(data: Any, columns: Sequence[str], *, weights: str, design: Sequence[str] = (),
                        replicates: Sequence[str] = (), master: str = SPARK_MASTER,
                        na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
                        encoding: str = CSV_ENCODING, rows: int | None = None) -> pa.Table:
    """The sufficient statistics of a weighted estimate, aggregated by Spark: one row per combination of the
    table's ``columns`` and the ``design``'s labels (strata, PSU, fpc), with the sum of the records' weights
    (in the column ``weights``), of their squared weights (:data:`SQUARES`), of each replicate weight (in its
    own column) and their number (:data:`TIMES`).

    What :func:`pramkit.estimate.weighted.survey_counts` reads with ``times`` and ``squares``: the same
    totals as from the records.  A weight or replicate weight that is missing, not a number, negative or
    infinite is refused, as the local engine refuses it (without its row).

    Parameters
    ----------
    data : str, Path or pyspark.sql.DataFrame
        The released file (CSV or Parquet) or a Spark DataFrame (:func:`records`).
    columns : sequence of str
        The table's columns.
    weights : str
        The sampling weights.
    design : sequence of str
        The strata, PSU and fpc columns (grouped by, as they are).
    replicates : sequence of str
        Replicate weight columns.
    master, na_values, sep, encoding
        As :func:`count_groups`.
    rows : int, optional
        The most rows collected to the driver at a time (:func:`collected`; default :data:`COLLECT_ROWS`).

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    DataError
        A weight that is not a finite number >= 0.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> df = session("local[1]").createDataFrame([("m", "a", 2.0), ("m", "a", 3.0), ("f", "b", 1.0)],
    ...                                          "sex string, s string, w double")
    >>> t = survey_combinations(df, ["sex"], weights="w", design=["s"]).sort_by("sex")
    >>> t.column("w").to_pylist(), t.column(SQUARES).to_pylist(), t.column(TIMES).to_pylist()
    ([1.0, 5.0], [1.0, 13.0], [1, 2])
    """
    F = _require_pyspark()
    df, markers = records(data, master, na_values=na_values, sep=sep, encoding=encoding)
    keys = list(dict.fromkeys([*columns, *design]))
    numbers = list(dict.fromkeys([weights, *replicates]))
    require_columns([*keys, *numbers], df.columns, "the data")
    if set(keys) & set(numbers):
        raise DataError(f"the weight column(s) {sorted(set(keys) & set(numbers))} are also grouped by")

    def number(c: str) -> Column:
        return _value(df, c, markers).try_cast("double")

    w = number(weights)
    aggregates = [F.count(F.lit(1)).alias(TIMES), F.sum(w).alias(weights), F.sum(w * w).alias(SQUARES),
                  *(F.sum(number(c)).alias(c) for c in numbers[1:]),
                  *(F.sum(_bad_number(df, c, markers)).cast("long").alias(f"__pramkit_bad_{i}")
                    for i, c in enumerate(numbers))]
    grouped = df.groupBy(*(_value(df, c, markers) for c in keys)).agg(*aggregates)
    tables = []
    for table in collected(grouped, COLLECT_ROWS if rows is None else rows):
        for i, c in enumerate(numbers):
            bad = int(pc.sum(table.column(f"__pramkit_bad_{i}")).as_py() or 0)
            if bad:
                raise DataError(f"column {c!r} must hold finite values >= 0; {bad:,} record(s) hold a missing, "
                                "non-numeric, negative or infinite value")
        tables.append(table.select([*keys, *numbers, SQUARES, TIMES]))
    return pa.concat_tables(tables) if tables else grouped.limit(0).toArrow()


def collected(df: DataFrame, rows: int | None = None) -> Iterator[pa.Table]:
    """The rows of ``df`` (an aggregation) on the driver, in pieces of about ``rows`` rows.

    ``toArrow`` would hold the whole result in the JVM at once (a weighted estimate with households as
    PSUs has a row per household and cell: at 5 million persons, more than Spark's default 1 GB heap
    of a local session holds); here the result is kept by Spark (memory and disk), split into pieces of
    at most about ``rows`` rows, and collected one piece at a time.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> df = session("local[1]").range(10)
    >>> sorted(x for t in collected(df, rows=3) for x in t.column("id").to_pylist())
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    F = _require_pyspark()
    from pyspark import StorageLevel

    kept = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        n = kept.count()
        pieces = max(1, -(-n // (COLLECT_ROWS if rows is None else rows)))
        if pieces == 1:
            yield kept.toArrow()
            return
        split = kept.repartition(pieces).withColumn("__pramkit_piece", F.spark_partition_id()) \
            .persist(StorageLevel.MEMORY_AND_DISK)
        try:
            for piece in range(pieces):
                yield split.where(F.col("__pramkit_piece") == piece).drop("__pramkit_piece").toArrow()
        finally:
            split.unpersist()
    finally:
        kept.unpersist()
