"""Perturbation of Spark DataFrames with the same keyed counter-based draws as the local engine.

The draw for row ``i`` of variable ``v`` is ``U(K, v, i)`` (:mod:`pramkit.kernel.rng`),
where ``K`` is the release key, derived once on the driver from the secret key, the
manifest and the release's label (:func:`pramkit.engine.perturb.release_key`), so a
Spark job releases exactly what :func:`pramkit.apply_file` releases for the same key,
manifest and label, whatever the number of partitions, provided both agree on the row
numbers ``i``:

* with ``row_number="col"``, an integer column holds each record's row number
  (0-based position in the original file): any partitioning and any shuffle
  give the same result;
* without it, row numbers follow the DataFrame's current order, computed
  from ``monotonically_increasing_id`` and per-partition counts.  This is
  the file order for a DataFrame read from a single CSV or Parquet file
  without a shuffle in between.

Perturbation runs in a scalar Arrow UDF (``arrow_udf``, pyspark 4.1 or later)
with :class:`pramkit.engine.perturb.TablePerturber`, the code path of the local
engine.  Only the row numbers and the columns perturbation reads go to the
Python workers, and only the perturbed columns come back: the other columns
stay in the JVM.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from pramkit.codebook import MissingCodes
from pramkit.engine.perturb import TablePerturber
from pramkit.engine.spark.session import SparkEngineError, _one_line_errors, _quoted, _require_pyspark
from pramkit.errors import DataError
from pramkit.io import require_columns
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


#: Bits of ``monotonically_increasing_id`` that number rows within a partition.
_ROW_BITS = 33
_MONO = "__pramkit_mono"
_OUT = "__pramkit_released"
_ORDER = "__pramkit_order"


def _with_row_numbers(df: DataFrame, row_number: str | None) -> tuple[DataFrame, Any, dict[int, int] | None,
                                                                     int | None]:
    """The DataFrame (with a helper column when rows are numbered by order), the column of row numbers
    or of ``monotonically_increasing_id``, and in the latter case the offset of each partition and the number
    of rows (one job)."""
    F = _require_pyspark()
    if row_number is not None:
        require_columns([row_number], df.columns, "the DataFrame")
        return df, F.col(_quoted(row_number)).cast("long"), None, None
    numbered, numbers = _numbered(df)
    sizes = numbered.groupBy(F.shiftright(numbers, _ROW_BITS).alias("p")).count().collect()
    offsets, total = {}, 0
    for row in sorted(sizes, key=lambda r: r["p"]):
        offsets[int(row["p"])] = total
        total += int(row["count"])
    return numbered, numbers, offsets, total


def _numbered(df: DataFrame) -> tuple[DataFrame, Any]:
    """``df`` with its ``monotonically_increasing_id`` in the helper column :data:`_MONO`, and that column.

    The id holds the partition's index above :data:`_ROW_BITS` and the row's place in the partition below:
    every plan over ``df`` that keeps its partitions (no shuffle) gives each record the same id.
    """
    F = _require_pyspark()
    return df.withColumn(_MONO, F.monotonically_increasing_id()), F.col(_MONO)


def _offsets(mono: pa.Array | pa.ChunkedArray) -> dict[int, int]:
    """The offset of each partition (the rows of the partitions before it), from the ``monotonically_increasing_id``
    of every record (:func:`_numbered`) collected to the driver.

    Examples
    --------
    >>> _offsets(pa.array([0, 1, 2, 1 << _ROW_BITS, (3 << _ROW_BITS) + 0, (3 << _ROW_BITS) + 1], pa.int64()))
    {0: 0, 1: 3, 3: 4}
    """
    parts, sizes = np.unique(np.asarray(mono, dtype=np.int64) >> _ROW_BITS, return_counts=True)
    return {int(p): int(start) for p, start in zip(parts, np.cumsum(sizes) - sizes, strict=True)}


def _row_numbers_of(numbers: pa.Array, offsets: dict[int, int] | None) -> np.ndarray:
    """Row numbers from the row-number column, or from ``monotonically_increasing_id`` and the partitions' offsets."""
    if offsets is None:
        if numbers.null_count:
            raise DataError("the row-number column has missing values")
        return numbers.to_numpy().astype(np.int64)
    mono = numbers.to_numpy().astype(np.int64)
    part = mono >> _ROW_BITS
    within = mono & ((1 << _ROW_BITS) - 1)
    base = np.fromiter((offsets[int(p)] for p in part), dtype=np.int64, count=part.size) \
        if np.unique(part).size > 1 else np.full(part.size, offsets[int(part[0])], dtype=np.int64)
    return base + within


@_one_line_errors
def perturb(
    df: DataFrame,
    manifest: Manifest,
    *,
    key: SecretKey,
    row_number: str | None = None,
    missing_codes: MissingCodes | None = None,
    release: str = "",
) -> DataFrame:
    """The released DataFrame: the manifest's columns perturbed, all others unchanged.

    Rows keep their order within partitions; ``row_number`` names a column of
    0-based row numbers (see the module docstring for the default).
    ``missing_codes`` are values that mean missing although they are not null
    (e.g. ``NA`` in a CSV file): they are not perturbed and stay as they are.
    The perturbed columns come back nullable, whatever they were.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The original records.
    manifest : Manifest
        The release's manifest.
    key : SecretKey
        The secret key.
    row_number : str, optional
        A column of 0-based row numbers.
    missing_codes : MissingCodes, optional
        Values declared missing.
    release : str
        The release's label (``""``: none), as :func:`pramkit.perturb_frame`'s.

    Returns
    -------
    pyspark.sql.DataFrame

    Raises
    ------
    SparkEngineError
        pyspark is older than 4.1 (it has no Arrow UDFs)
    ParameterError
        ``release`` is not a label, or ``key`` was derived for another release.

    Examples
    --------
    The same release as the local engine, row by row:

    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix, perturb_frame
    >>> data = pd.DataFrame({"row": range(6), "sex": ["m", "f", "f", "m", "m", "f"]})
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.6, 0.6], ["f", "m"])})
    >>> key = SecretKey(bytes(32), "zeros")
    >>> released = perturb(session("local[1]").createDataFrame(data), manifest, key=key, row_number="row")
    >>> released.toPandas().sort_values("row")["sex"].tolist() == perturb_frame(data, manifest, key=key).data["sex"].tolist()
    True
    """
    return perturbed_rows(df, manifest, key=key, row_number=row_number, missing_codes=missing_codes,
                          release=release)[0]


@_one_line_errors
def perturbed_rows(df: DataFrame, manifest: Manifest, *, key: SecretKey, row_number: str | None = None,
                   missing_codes: MissingCodes | None = None, release: str = "") -> tuple[DataFrame, int | None]:
    """:func:`perturb`'s released DataFrame, and its number of rows when they are numbered in order (the job
    that numbers them counts them), else ``None``.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> from pramkit import Manifest, PramMatrix
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.6, 0.6], ["f", "m"])})
    >>> df = session("local[1]").createDataFrame([("m",), ("f",), ("f",)], "sex string")
    >>> released, rows = perturbed_rows(df, manifest, key=SecretKey(bytes(32), "zeros"))
    >>> rows, released.columns
    (3, ['sex'])
    """
    released, _, counted = _perturbed(df, manifest, key=key, row_number=row_number, missing_codes=missing_codes,
                                      release=release)
    return released, counted


def _perturbed(df: DataFrame, manifest: Manifest, *, key: SecretKey, row_number: str | None = None,
               missing_codes: MissingCodes | None = None,
               release: str = "") -> tuple[DataFrame, dict[int, int] | None, int | None]:
    """:func:`perturbed_rows`, with the offsets of the partitions when rows are numbered in order (else ``None``):
    a plan over the released DataFrame that keeps its partitions numbers its rows from them again, without a
    job of its own (:func:`pramkit.engine.spark.shuffle.shuffle_rows`)."""
    if not hasattr(_require_pyspark(), "arrow_udf"):
        raise SparkEngineError("the Spark engine perturbs in Arrow UDFs, which need pyspark 4.1 or later")
    require_columns(manifest.read_columns, df.columns, "the DataFrame")
    # the release key, derived here on the driver; it refuses a missing code among the categories here too
    stream = TablePerturber(manifest, key, missing_codes, release=release).key
    numbered, numbers, offsets, counted = _with_row_numbers(df, row_number)

    def perturbed(batches: Iterator[tuple[pa.Array, pa.Table]]) -> Iterator[pa.Table]:
        perturber = TablePerturber(manifest, stream, missing_codes, release=release)
        for row_numbers, table in batches:
            if not len(row_numbers):
                yield table
                continue
            rows = _row_numbers_of(row_numbers, offsets)
            if np.all(np.diff(rows) == 1):  # one run of consecutive rows: the sequential stream
                yield perturber(table, int(rows[0]))
            else:
                yield perturber(table, rows=rows)

    return _through_python(numbered, df.columns, numbers, manifest.read_columns, manifest.columns, perturbed), \
        offsets, counted


def _through_python(df: DataFrame, columns: Sequence[str], numbers: Any, read: Sequence[str],
                    written: Sequence[str], function: Callable[[Iterator[tuple[pa.Array, pa.Table]]],
                                                                Iterator[pa.Table]]) -> DataFrame:
    """The ``columns`` of ``df``, those of ``written`` replaced by what ``function`` computes in the Python workers.

    ``function`` receives each partition's batches as pairs (the column ``numbers``, a table of
    the columns ``read``) and yields, for each, a table with the columns ``written``.  It runs
    in a scalar Arrow UDF: only those columns go to Python and back, the others stay in the JVM.
    """
    F = _require_pyspark()
    from pyspark.sql.types import StructType

    def run(batches: Iterator[tuple[pa.Array, ...]]) -> Iterator[pa.Array]:
        tables = ((first, pa.table(dict(zip(read, values)))) for first, *values in batches)
        for table in function(tables):
            yield pa.StructArray.from_arrays([table.column(name).combine_chunks() for name in written],
                                             names=list(written))

    udf = F.arrow_udf(run, StructType([df.schema[name] for name in written]))  # batches in, by the type hints
    out = udf(numbers, *(F.col(_quoted(name)) for name in read)).alias(_OUT)
    return df.select(*(F.col(_quoted(name)) for name in columns), out).select(
        *(F.col(_OUT).getField(name).alias(name) if name in written else F.col(_quoted(name)) for name in columns))
