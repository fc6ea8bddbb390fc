"""Reading and writing files with Spark: CSV (every column as text) and Parquet, as folders of part files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.atomic import atomic_path
from pramkit.engine.spark.session import _one_line_errors
from pramkit.errors import DataError, ParameterError
from pramkit.io import CSV_ENCODING, CSV_SEP, csv_dialect

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


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
    >>> from pramkit.engine.spark import session
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


def _dialected(fmt: str) -> bool:
    """Whether files of the format ``fmt`` are read with the CSV settings (separator, encoding, missing markers):
    the table's :attr:`pramkit.io_formats.FileFormat.dialect`.

    Examples
    --------
    >>> _dialected("csv"), _dialected("parquet")
    (True, False)
    """
    from pramkit.io_formats import file_format

    entry = file_format(fmt)
    return entry is not None and entry.dialect


def _check_format(path: str | Path, verb: str) -> str:
    """The format of a file the Spark engine reads or writes (CSV or Parquet; else a one-line error)."""
    from pramkit.io import table_format
    from pramkit.io_formats import file_format, titles_where

    fmt = _input_format(Path(path)) if verb == "reads" else table_format(path)
    entry = file_format(fmt)
    if entry is None or not entry.spark:  # the formats Spark reads and writes: the table's (io_formats)
        raise ParameterError(f"the Spark engine {verb} {titles_where('spark')}, not {fmt} ({str(path)!r})")
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
    >>> from pramkit.engine.spark import session
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
