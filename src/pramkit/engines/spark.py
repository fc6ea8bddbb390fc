"""Spark adapter: frequency tables with Spark aggregations, and perturbation of
Spark DataFrames with the same keyed counter-based draws as the local engine.

The draw for row ``i`` of variable ``v`` is ``U(key, v, i)``
(:mod:`pramkit.rng`), so a Spark job releases exactly what
:func:`pramkit.apply_file` releases for the same key, whatever the number of
partitions, provided both agree on the row numbers ``i``:

* with ``row_number="col"``, an integer column holds each record's row number
  (0-based position in the original file): any partitioning and any shuffle
  give the same result;
* without it, row numbers follow the DataFrame's current order, computed
  from ``monotonically_increasing_id`` and per-partition counts.  This is
  the file order for a DataFrame read from a single CSV or Parquet file
  without a shuffle in between.

Perturbation runs in ``mapInArrow`` on Arrow record batches with
:class:`pramkit.perturb.TablePerturber`, the code path of the local engine.
pyspark is an optional dependency (``pip install pramkit[spark]``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit.atomic import atomic_path, check_writable
from pramkit.codebook import MissingCodes
from pramkit.errors import DataError, PramkitError
from pramkit.io import NA_VALUES, csv_missing_codes, require_columns
from pramkit.manifest import Manifest
from pramkit.perturb import ApplyResult, TablePerturber
from pramkit.rng import SecretKey, resolve_key

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: Bits of ``monotonically_increasing_id`` that number rows within a partition.
_ROW_BITS = 33
_MONO = "__pramkit_mono"
_ROW = "__pramkit_row"


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
    except ImportError:
        raise PramkitError("the Spark engine needs pyspark: pip install 'pramkit[spark]'") from None
    return F


def session(master: str = "local[2]", *, app_name: str = "pramkit") -> "SparkSession":
    """A Spark session (an existing one is reused) with Arrow transfers enabled."""
    _require_pyspark()
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(master).appName(app_name)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")  # 10^4 (default) doubles the time
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


def read(spark: "SparkSession", path: str | Path) -> "DataFrame":
    """Read a CSV (header line, every column as text, empty = null) or Parquet file."""
    from pramkit.io import table_format

    p = Path(path)
    if not p.exists():
        raise DataError(f"file {str(p)!r} does not exist")
    fmt = table_format(p)
    if fmt == "csv":
        return spark.read.option("header", True).option("inferSchema", False).csv(str(p))
    if fmt == "parquet":
        return spark.read.parquet(str(p))
    raise PramkitError(f"the Spark engine reads CSV and Parquet, not {fmt}")


def table_counts(df: "DataFrame", columns: Sequence[str]) -> pd.DataFrame:
    """Counts of every observed combination of ``columns`` (nulls included), as pandas."""
    require_columns(columns, df.columns, "the DataFrame")
    return df.groupBy(*columns).count().toPandas()


def category_counts(df: "DataFrame", column: str) -> dict:
    """Counts of each value of one column (``None`` for missing)."""
    counts = table_counts(df, [column])
    return {(None if pd.isna(v) else v): int(c) for v, c in zip(counts[column], counts["count"])}


def _with_row_numbers(df: "DataFrame", row_number: str | None) -> tuple["DataFrame", dict[int, int] | None]:
    """The DataFrame with a helper column, and per-partition offsets when rows are numbered by order."""
    F = _require_pyspark()
    if row_number is not None:
        require_columns([row_number], df.columns, "the DataFrame")
        return df.withColumn(_ROW, F.col(row_number).cast("long")), None
    numbered = df.withColumn(_MONO, F.monotonically_increasing_id())
    sizes = (
        numbered.groupBy(F.shiftright(F.col(_MONO), _ROW_BITS).alias("p")).count().collect()
    )
    offsets, total = {}, 0
    for row in sorted(sizes, key=lambda r: r["p"]):
        offsets[int(row["p"])] = total
        total += int(row["count"])
    return numbered, offsets


def _row_numbers_of(batch: pa.RecordBatch, offsets: dict[int, int] | None) -> np.ndarray:
    if offsets is None:
        rows = batch.column(_ROW).to_numpy(zero_copy_only=False)
        if pd.isna(rows).any():
            raise DataError("the row-number column has missing values")
        return rows.astype(np.int64)
    mono = batch.column(_MONO).to_numpy().astype(np.int64)
    part = mono >> _ROW_BITS
    within = mono & ((1 << _ROW_BITS) - 1)
    base = np.fromiter((offsets[int(p)] for p in part), dtype=np.int64, count=part.size) \
        if np.unique(part).size > 1 else np.full(part.size, offsets[int(part[0])], dtype=np.int64)
    return base + within


def perturb(
    df: "DataFrame",
    manifest: Manifest,
    *,
    key: SecretKey,
    row_number: str | None = None,
    missing_codes: MissingCodes | None = None,
) -> "DataFrame":
    """The released DataFrame: the manifest's columns perturbed, all others unchanged.

    Rows keep their order within partitions; ``row_number`` names a column of
    0-based row numbers (see the module docstring for the default).
    ``missing_codes`` are values that mean missing although they are not null
    (e.g. ``NA`` in a CSV file): they are not perturbed and stay as they are.
    """
    _require_pyspark()
    require_columns(manifest.columns, df.columns, "the DataFrame")
    TablePerturber(manifest, key, missing_codes)  # refuses a missing code among the categories, here on the driver
    schema = df.schema
    numbered, offsets = _with_row_numbers(df, row_number)
    helper = _ROW if offsets is None else _MONO

    def release(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        perturber = TablePerturber(manifest, key, missing_codes)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            rows = _row_numbers_of(batch, offsets)
            table = pa.Table.from_batches([batch]).drop_columns([helper])
            if np.all(np.diff(rows) == 1):  # one run of consecutive rows: the sequential stream
                yield from perturber(table, int(rows[0])).to_batches()
            else:
                yield from perturber(table, rows=rows).to_batches()

    return numbered.mapInArrow(release, schema)


def write(df: "DataFrame", path: str | Path, *, force: bool = False,
          inputs: Sequence[str | Path | None] = ()) -> Path:
    """Write a Spark DataFrame as a folder of CSV (with header) or Parquet part files.

    The folder is written as a temporary folder beside the target and renamed
    when the job has succeeded (:func:`pramkit.atomic.atomic_path`): a failed
    job leaves an existing target as it was.  An existing target needs
    ``force``; it is never one of ``inputs``.
    """
    from pramkit.io import table_format

    p = Path(path)
    fmt = table_format(p)
    if fmt not in ("csv", "parquet"):
        raise PramkitError(f"the Spark engine writes CSV and Parquet, not {fmt}")
    with atomic_path(p, force=force, inputs=inputs, folder=True) as tmp:
        writer = df.write.mode("overwrite")
        if fmt == "csv":
            writer.option("header", True).csv(str(tmp))
        else:
            writer.parquet(str(tmp))
    return p


def apply_file_spark(
    data: str | Path,
    manifest: Manifest | str | Path,
    out: str | Path,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    force: bool = False,
    master: str = "local[2]",
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    receipt: bool = True,
) -> ApplyResult:
    """:func:`pramkit.apply_file` as a Spark job: same release, written as a folder of part files.

    Row numbers follow the file order (one input file, no shuffle).  Changed
    values are not counted (that would need a second pass over the data).
    ``na_values`` and the release receipt are as in :func:`pramkit.apply_file`
    (the receipt of a folder records no digest of its content).
    """
    from pramkit.io import table_format
    from pramkit.receipt import receipt_path, write_receipt

    t0 = time.perf_counter()
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    secret = resolve_key(key)
    dst = Path(out)
    inputs = [data, None if isinstance(manifest, Manifest) else manifest, secret.path]
    for path, verb in ((data, "reads"), (dst, "writes")):  # before Spark starts
        if table_format(path) not in ("csv", "parquet"):
            raise PramkitError(f"the Spark engine {verb} CSV and Parquet, not {table_format(path)} ({str(path)!r})")
    check_writable(dst, force=force, inputs=inputs, folder=True)
    if receipt:
        check_writable(receipt_path(dst), force=True, inputs=inputs)
    codes = csv_missing_codes(na_values) if table_format(data) == "csv" else None
    spark = session(master)
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    df = read(spark, data)
    released = perturb(df, man, key=secret, missing_codes=codes)
    write(released, dst, force=force, inputs=inputs)
    rows = spark.read.parquet(str(dst)).count() if dst.suffix.lower() in (".parquet", ".pq") else df.count()
    written = write_receipt(dst, manifest, rows=rows, inputs=inputs) if receipt else None
    return ApplyResult(
        rows=rows, variables=(), key_source=secret.source, record_epsilon=man.record_epsilon,
        output=str(dst), seconds=time.perf_counter() - t0, perturbed=tuple(man.names),
        key_fingerprint=secret.fingerprint, receipt=None if written is None else str(written),
    )
