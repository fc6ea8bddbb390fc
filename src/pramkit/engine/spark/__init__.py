"""Spark adapter: frequency tables with Spark aggregations, and perturbation of
Spark DataFrames with the same keyed counter-based draws as the local engine.

The draw for row ``i`` of variable ``v`` is ``U(K, v, i)`` (:mod:`pramkit.engine.rng`),
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
stay in the JVM.  pyspark is an optional dependency (``pip install pramkit[spark]``).

Failures of Spark and Py4J never escape as such: the public functions here
turn them into one-line errors (:func:`engine_error`), a value that a worker
refuses (an unknown category) into the :class:`~pramkit.errors.DataError`
the local engine raises, with its column and value.  The console output of
the Java process (log4j lines, Java stack traces, the workers' tracebacks)
goes to a temporary log (:func:`jvm_log`), not to the terminal.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit import errors
from pramkit.atomic import atomic_path, check_writable
from pramkit.engine.codebook import MissingCodes
from pramkit.engine.perturb import ApplyResult, TablePerturber, release_key
from pramkit.engine.rng import SecretKey, resolve_key
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.io import CSV_ENCODING, CSV_SEP, NA_VALUES, csv_dialect, csv_missing_codes, require_columns
from pramkit.manifest import Manifest
from pramkit.privacy.amplification import DEFAULT_DELTA

__all__ = ["SparkEngineError", "engine_error", "from_spark", "jvm_log", "session", "read", "table_counts", "category_counts", "perturb", "shuffle_rows", "smallest_group", "SPARK_CHARSETS", "spark_charset", "write", "apply_file_spark"]

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: Bits of ``monotonically_increasing_id`` that number rows within a partition.
_ROW_BITS = 33
_MONO = "__pramkit_mono"
_OUT = "__pramkit_released"
_ORDER = "__pramkit_order"

#: Settings of every session pramkit starts.
_SETTINGS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",  # 10^4 (default) doubles the time
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

#: Bytes of the end of the Java process's log searched for the reason of a failure to start.
_LOG_TAIL = 64_000


class SparkEngineError(PramkitError):
    """Spark or Py4J failed (Spark could not start, a job failed); the message is one line.

    Examples
    --------
    >>> issubclass(SparkEngineError, PramkitError), str(SparkEngineError("cannot start Spark: no Java"))
    (True, 'cannot start Spark: no Java')
    """


#: A pramkit error raised in a Python worker, as its traceback prints it.
_PRAMKIT_ERROR = re.compile(r"^pramkit\.errors\.(\w+): (.+)$", re.M)
#: An exception line of a Java or Python traceback: ``[Exception in thread "main"] NAME: message``.
_EXCEPTION = re.compile(r'^(?:Exception in thread "[^"]*" )?(?:[\w$]+\.)*([\w$]*(?:Exception|Error)): (.+)$', re.M)
#: What Py4J puts before the Java exception.
_PY4J_PREFIX = re.compile(r"^An error occurred while calling [\w.]+\.\s*:?\s*", re.S)


def engine_error(exc: BaseException, context: str = "the Spark job failed") -> PramkitError:
    """A one-line :class:`~pramkit.errors.PramkitError` for a failure of Spark or Py4J.

    A pramkit error raised in a Python worker (e.g. an unknown category)
    comes back as that error, with its message (column, row and value);
    any other failure as a :class:`SparkEngineError`, ``CONTEXT: reason``,
    where the reason is the message of the innermost exception the text names
    (Python workers) or its first (Java).

    Examples
    --------
    >>> text = ("An exception was thrown from the Python worker:\\nTraceback (most recent call last):\\n"
    ...         "  File ...\\npramkit.errors.DataError: column 'region', row 2: value '7' is not one of ...")
    >>> engine_error(RuntimeError(text))
    DataError("column 'region', row 2: value '7' is not one of ...")
    >>> str(engine_error(RuntimeError("An error occurred while calling o42.parquet.\\n: "
    ...                               "org.apache.spark.SparkException: Job aborted.\\n\\tat org...")))
    'the Spark job failed: Job aborted.'
    """
    text = str(exc) or type(exc).__name__
    own = _PRAMKIT_ERROR.findall(text)
    if own:
        name, message = own[-1]
        cls = getattr(errors, name, None)
        if not (isinstance(cls, type) and issubclass(cls, PramkitError)):
            cls = SparkEngineError
        return cls(message.strip())
    return SparkEngineError(f"{context}: {_reason(text)}")


def _reason(text: str) -> str:
    """The message of the exception a Spark, Py4J or JVM text reports (one line)."""
    text = _PY4J_PREFIX.sub("", text.strip())
    found = _EXCEPTION.findall(text)
    if found:
        # a Python worker's traceback ends with its exception; a Java one starts with it
        _name, message = found[-1] if "Traceback (most recent call last)" in text else found[0]
        return message.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "no reason given"


_Func = TypeVar("_Func", bound=Callable[..., Any])


def from_spark(exc: BaseException) -> bool:
    """Whether an exception comes from pyspark or py4j (not from pramkit or Python itself).

    Examples
    --------
    >>> from_spark(ValueError("x")), from_spark(DataError("x"))
    (False, False)
    """
    return type(exc).__module__.split(".", 1)[0] in ("pyspark", "py4j")


def _one_line_errors(func: _Func) -> _Func:
    """Turn Spark and Py4J exceptions raised by ``func`` into one-line pramkit errors (:func:`engine_error`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if not from_spark(exc):
                raise
            raise engine_error(exc) from None

    return wrapper  # type: ignore[return-value]


_log: IO[bytes] | None = None


def jvm_log() -> IO[bytes]:
    """The temporary file (already unlinked) that receives the console output of Spark's Java process.

    Returns
    -------
    file object
        Opened for binary writing and reading; one per process.

    Examples
    --------
    >>> jvm_log() is jvm_log()
    True
    """
    global _log
    if _log is None:
        _log = tempfile.TemporaryFile(prefix="pramkit-spark-")  # noqa: SIM115 (kept open for the session)
    return _log


def _log_tail() -> str:
    """The end of the Java process's console output (read without moving the file's offset)."""
    fd = jvm_log().fileno()
    size = os.fstat(fd).st_size
    start = max(0, size - _LOG_TAIL)
    return os.pread(fd, size - start, start).decode("utf-8", errors="replace")


def _start_java(conf: Any) -> None:
    """Start Spark's Java process with its console output in :func:`jvm_log` (pyspark starts one per process)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stdout": jvm_log(), "stderr": jvm_log()})
    SparkContext(conf=conf, gateway=gateway)


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
    except ImportError:
        raise SparkEngineError('the Spark engine needs pyspark: pip install "pramkit[spark]"') from None
    return F


def session(master: str = "local[2]", *, app_name: str = "pramkit") -> SparkSession:
    """A Spark session (an existing one is reused) with Arrow transfers enabled.

    The first session of a process starts Spark's Java process with its
    console output in :func:`jvm_log` (Spark logs errors only).

    Parameters
    ----------
    master : str
        The master URL (``local[N]`` runs Spark in this machine's processes).
    app_name : str
        The application's name.

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    SparkEngineError
        Spark cannot start (e.g. a master URL it rejects), in one line

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> spark = session("local[1]")
    >>> session("local[1]") is spark, spark.conf.get("spark.sql.execution.arrow.pyspark.enabled")
    (True, 'true')
    """
    _require_pyspark()
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(_SETTINGS.items()))
    try:
        if SparkContext._gateway is None:  # no Java process yet
            _start_java(conf)
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    except Exception as exc:
        if not from_spark(exc):
            raise
        # a Java process that did not start said why on its console only
        reason = _reason(_log_tail() if SparkContext._gateway is None else str(exc))
        raise SparkEngineError(f"cannot start Spark with master {master!r}: {reason}") from None
    return spark


@_one_line_errors
def read(spark: SparkSession, path: str | Path, *, sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> DataFrame:
    """Read a CSV (header line, every column as text, empty = null) or Parquet file, or a folder of
    CSV or Parquet part files (:func:`pramkit.io.dataset_parts`).

    Parameters
    ----------
    spark : SparkSession
        From :func:`session`.
    path : str or Path
        The file or folder.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    pyspark.sql.DataFrame

    Raises
    ------
    DataError
        The file does not exist.
    ParameterError
        It is neither CSV nor Parquet.

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "data.csv")
    ...     _ = open(path, "w").write("sex,age\\nm,31\\nf,\\n")
    ...     df = read(session("local[1]"), path)
    ...     df.columns, [tuple(r) for r in df.collect()]
    (['sex', 'age'], [('m', '31'), ('f', None)])
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"file {str(p)!r} does not exist")
    dialect = csv_dialect(sep, encoding)
    fmt = _input_format(p)
    if fmt == "csv":
        return (spark.read.option("header", True).option("inferSchema", False).option("sep", dialect.sep)
                .option("encoding", spark_charset(dialect.encoding)).csv(str(p)))
    if fmt == "parquet":
        return spark.read.parquet(str(p))
    raise ParameterError(f"the Spark engine reads CSV and Parquet, not {fmt}")


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
    >>> df = session("local[1]").createDataFrame([("m",), ("m",), (None,)], "sex string")
    >>> sorted(category_counts(df, "sex").items(), key=str)
    [('m', 2), (None, 1)]
    """
    counts = table_counts(df, [column])
    return {(None if pd.isna(v) else v): int(c) for v, c in zip(counts[column], counts["count"])}


def _quoted(name: str) -> str:
    """A column name as Spark reads it literally (no nested field, no wildcard)."""
    return "`" + name.replace("`", "``") + "`"


def _with_row_numbers(df: DataFrame, row_number: str | None) -> tuple[DataFrame, Any, dict[int, int] | None]:
    """The DataFrame (with a helper column when rows are numbered by order), the column of row numbers
    or of ``monotonically_increasing_id``, and in the latter case the offset of each partition."""
    F = _require_pyspark()
    if row_number is not None:
        require_columns([row_number], df.columns, "the DataFrame")
        return df, F.col(_quoted(row_number)).cast("long"), None
    numbered = df.withColumn(_MONO, F.monotonically_increasing_id())
    sizes = (
        numbered.groupBy(F.shiftright(F.col(_MONO), _ROW_BITS).alias("p")).count().collect()
    )
    offsets, total = {}, 0
    for row in sorted(sizes, key=lambda r: r["p"]):
        offsets[int(row["p"])] = total
        total += int(row["count"])
    return numbered, F.col(_MONO), offsets


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
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix, perturb_frame
    >>> data = pd.DataFrame({"row": range(6), "sex": ["m", "f", "f", "m", "m", "f"]})
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.6, 0.6], ["f", "m"])})
    >>> key = SecretKey(bytes(32), "zeros")
    >>> released = perturb(session("local[1]").createDataFrame(data), manifest, key=key, row_number="row")
    >>> released.toPandas().sort_values("row")["sex"].tolist() == perturb_frame(data, manifest, key=key).data["sex"].tolist()
    True
    """
    if not hasattr(_require_pyspark(), "arrow_udf"):
        raise SparkEngineError("the Spark engine perturbs in Arrow UDFs, which need pyspark 4.1 or later")
    require_columns(manifest.read_columns, df.columns, "the DataFrame")
    # the release key, derived here on the driver; it refuses a missing code among the categories here too
    stream = TablePerturber(manifest, key, missing_codes, release=release).key
    numbered, numbers, offsets = _with_row_numbers(df, row_number)

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

    return _through_python(numbered, df.columns, numbers, manifest.read_columns, manifest.columns, perturbed)


@_one_line_errors
def shuffle_rows(df: DataFrame, key: SecretKey, *, row_number: str | None = None) -> DataFrame:
    """The rows of ``df`` in the key's order: the order of :func:`pramkit.engine.shuffle.permutation`.

    ``key`` is used as it is: for a release, pass its release key (:func:`pramkit.engine.perturb.release_key`),
    as :func:`apply_file_spark` does.

    Each row's sort word comes from its row number (``row_number``, or the file order as in
    :func:`perturb`) in an Arrow UDF; Spark sorts by the word, then by the row number.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records (typically :func:`perturb`'s release).
    key : SecretKey
        The secret key.
    row_number : str, optional
        A column of 0-based row numbers.

    Returns
    -------
    pyspark.sql.DataFrame
        Sorted by a range partitioning: the part files, read in order, hold the rows in the key's order.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.shuffle import permutation
    >>> key = SecretKey(bytes(32), "zeros")
    >>> df = session("local[1]").createDataFrame(pd.DataFrame({"row": range(8)}))
    >>> shuffle_rows(df, key, row_number="row").toPandas()["row"].tolist() == permutation(key, 8).tolist()
    True
    """
    from pramkit.engine.shuffle import order_words

    F = _require_pyspark()
    from pyspark.sql.types import LongType

    numbered, numbers, offsets = _with_row_numbers(df, row_number)

    def order(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        for values in batches:
            words = order_words(key, _row_numbers_of(values, offsets))
            yield pa.array((words ^ np.uint64(1 << 63)).view(np.int64))  # signed, in the same order

    udf = F.arrow_udf(order, LongType())
    ordered = numbered.withColumn(_ORDER, udf(numbers)).orderBy(F.col(_ORDER), numbers)
    return ordered.select(*(F.col(_quoted(name)) for name in df.columns))


def smallest_group(df: DataFrame, public: Sequence[str], perturbed: Sequence[str],
                   missing_codes: MissingCodes | None = None) -> int:
    """:attr:`pramkit.engine.shuffle.CloneGroups.smallest` of a Spark DataFrame: the fewest rows that agree
    on the public columns and on which perturbed columns are missing.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> df = session("local[1]").createDataFrame(pd.DataFrame({"r": ["a", "a", "b"], "x": ["1", None, "2"]}))
    >>> smallest_group(df, ["r"], ["x"]), smallest_group(df, [], [])
    (1, 3)
    """
    F = _require_pyspark()
    texts = list(missing_codes.texts) if missing_codes else []
    keys = [F.col(_quoted(c)) for c in public]
    for c in perturbed:
        missing = F.col(_quoted(c)).isNull()
        if texts:
            missing = missing | F.col(_quoted(c)).cast("string").isin(texts)
        keys.append(missing.alias(f"__pramkit_missing_{len(keys)}"))
    if not keys:
        return int(df.count())
    return int(df.groupBy(*keys).count().agg(F.min("count")).collect()[0][0])


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


#: The encodings Spark's CSV reader and writer take (Python's codecs name -> Spark's name).
SPARK_CHARSETS = {"utf-8": "utf-8", "utf-8-sig": "utf-8", "iso8859-1": "iso-8859-1", "ascii": "us-ascii",
                  "utf-16": "utf-16", "utf-16-be": "utf-16be", "utf-16-le": "utf-16le", "utf-32": "utf-32"}


def spark_charset(encoding: str) -> str:
    """The name Spark's CSV options give an encoding (:data:`SPARK_CHARSETS`), or a one-line error.

    Examples
    --------
    >>> spark_charset("iso8859-1"), spark_charset("utf-8")
    ('iso-8859-1', 'utf-8')
    >>> spark_charset("cp1252")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the Spark engine reads and writes CSV files in UTF-8, Latin-1 (ISO-8859-1), US-ASCII, UTF-16 or UTF-32, not cp1252: use --engine local, or convert the file
    """
    try:
        return SPARK_CHARSETS[encoding]
    except KeyError:
        raise ParameterError(f"the Spark engine reads and writes CSV files in UTF-8, Latin-1 (ISO-8859-1), US-ASCII, "
                             f"UTF-16 or UTF-32, not {encoding}: use --engine local, or convert the file") from None


def _input_format(path: Path) -> str:
    """The format of a file, or of the part files of a folder (:func:`pramkit.io.dataset_parts`)."""
    from pramkit.io import dataset_parts, table_format

    return dataset_parts(path)[0] if path.is_dir() else table_format(path)


def _check_format(path: str | Path, verb: str) -> str:
    """The format of a file the Spark engine reads or writes (CSV or Parquet; else a one-line error)."""
    from pramkit.io import table_format

    fmt = _input_format(Path(path)) if verb == "reads" else table_format(path)
    if fmt not in ("csv", "parquet"):
        raise ParameterError(f"the Spark engine {verb} CSV and Parquet, not {fmt} ({str(path)!r})")
    return fmt


def _save(df: DataFrame, folder: Path, fmt: str, dialect: Any = None) -> None:
    """Run the job writing ``df`` into ``folder`` as CSV (with header; ``dialect``: the separator and encoding of
    the CSV file read, :func:`pramkit.io.csv_dialect`) or Parquet part files."""
    writer = df.write.mode("overwrite")
    if fmt == "csv":
        if dialect is not None:
            writer = writer.option("sep", dialect.sep).option("encoding", spark_charset(dialect.encoding))
        writer.option("header", True).csv(str(folder))
    else:
        writer.parquet(str(folder))


@_one_line_errors
def write(df: DataFrame, path: str | Path, *, force: bool = False,
          inputs: Sequence[str | Path | None] = ()) -> Path:
    """Write a Spark DataFrame as a folder of CSV (with header) or Parquet part files.

    The folder is written as a temporary folder beside the target and renamed
    when the job has succeeded (:func:`pramkit.atomic.atomic_path`): a failed
    job leaves an existing target as it was.  An existing target needs
    ``force``; it is never one of ``inputs``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    path : str or Path
        The folder to write (``.csv`` or ``.parquet``).
    force : bool
        Replace an existing folder.
    inputs : sequence of paths
        Files the output may never be.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = write(session("local[1]").createDataFrame([("m",), ("f",)], "sex string"), os.path.join(d, "o.parquet"))
    ...     sorted(read(session("local[1]"), out).toPandas()["sex"]), sorted(os.listdir(d))
    (['f', 'm'], ['o.parquet'])
    """
    p = Path(path)
    fmt = _check_format(p, "writes")
    with atomic_path(p, force=force, inputs=inputs, folder=True) as tmp:
        _save(df, tmp, fmt)
    return p


@_one_line_errors
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
    shuffle: bool = False,
    public_columns: Sequence[str] = (),
    delta: float = DEFAULT_DELTA,
    release: str = "",
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> ApplyResult:
    """:func:`pramkit.apply_file` as a Spark job: same release, written as a folder of part files.

    Row numbers follow the file order (one input file, no shuffle).  Changed
    values are not counted (that would need a second pass over the data).
    ``na_values`` and the release receipt are as in :func:`pramkit.apply_file`
    (the receipt of a folder records no digest of its content); the receipt
    is renamed into place right after the folder, never before.  A failure
    of Spark is one :class:`SparkEngineError` line; a value a worker refuses
    (an unknown category) the :class:`~pramkit.errors.DataError` of the local
    engine.  ``quiet`` is accepted for the local engine's signature: Spark's
    console output always goes to :func:`jvm_log`.

    Parameters
    ----------
    data : str or Path
        The original file (CSV or Parquet).
    manifest : Manifest or path
        The release's manifest.
    out : str or Path
        The folder to write.
    key, force, master, quiet, na_values, receipt, shuffle, public_columns, delta, release, sep, encoding
        As :func:`pramkit.apply_file`; ``master`` is Spark's.  A CSV release of a CSV file is written with
        its separator and encoding.  With ``shuffle`` the part
        files, read in order, hold the local engine's shuffled release row for row
        (:func:`shuffle_rows`).

    Returns
    -------
    ApplyResult

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit import Manifest, PramMatrix
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.6, 0.6], ["f", "m"])})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data = os.path.join(d, "in.csv")
    ...     _ = open(data, "w").write("sex,age\\n" + "m,31\\nf,40\\n" * 50)
    ...     result = apply_file_spark(data, manifest, os.path.join(d, "out.csv"), key=bytes(32), master="local[1]")
    ...     result.rows, sorted(os.listdir(d))
    (100, ['in.csv', 'out.csv', 'out.csv.receipt.json'])
    """
    from pramkit.engine.receipt import receipt_after, receipt_path
    from pramkit.privacy.amplification import check_shuffle, release_guarantees, stated_sampling
    from pramkit.release.derive import check_derived_input

    t0 = time.perf_counter()
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    secret = resolve_key(key)
    stream = release_key(secret, man, release)  # every draw of the release, its order included
    label = stream.release[1] if stream.release else ""
    dst = Path(out)
    inputs = [data, None if isinstance(manifest, Manifest) else manifest, secret.path]
    named = "the manifest" if isinstance(manifest, Manifest) else f"manifest {str(manifest)!r}"
    check_derived_input(man, Path(data), named)  # before Spark starts
    source = _check_format(data, "reads")
    fmt = _check_format(dst, "writes")
    dialect = csv_dialect(sep, encoding)
    if source == "csv":
        spark_charset(dialect.encoding)  # before Spark starts
    check_writable(dst, force=force, inputs=inputs, folder=True)
    codes = csv_missing_codes(na_values) if source == "csv" else None
    # exits in reverse order: the folder is renamed into place first, then its receipt
    with receipt_after(dst, manifest, inputs=inputs, enabled=receipt, release=label) as pending, \
            atomic_path(dst, force=force, inputs=inputs, folder=True) as tmp:
        spark = session(master)
        df = read(spark, data, sep=sep, encoding=encoding)
        check_shuffle(man, df.columns, public_columns, shuffle=shuffle)
        released = perturb(df, man, key=stream, missing_codes=codes, release=label)
        _save(shuffle_rows(released, stream) if shuffle else released, tmp, fmt, dialect if source == "csv" else None)
        rows = spark.read.parquet(str(tmp)).count() if fmt == "parquet" else df.count()
        stated_sampling(man, rows, repr(str(data)), named)  # before the folder is renamed into place
        guarantees = release_guarantees(
            man, columns=df.columns, public_columns=public_columns, shuffled=True, delta=delta,
            clones=smallest_group(released, public_columns, man.columns, codes)) if shuffle else None
        if pending is not None:
            pending.fill(rows=rows, folder=True, guarantees=None if guarantees is None else guarantees.to_dict())
    return ApplyResult(
        rows=rows, variables=(), key_source=secret.source, record_epsilon=man.record_epsilon,
        output=str(dst), seconds=time.perf_counter() - t0, perturbed=tuple(man.names),
        key_fingerprint=secret.fingerprint, receipt=str(receipt_path(dst)) if receipt else None,
        guarantees=guarantees, release=label,
    )
