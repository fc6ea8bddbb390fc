"""Reading and writing tables: CSV, Parquet, Stata, SPSS, SAS and Arrow IPC (Feather).

Every format is one entry of the table of formats (:data:`pramkit.io_formats.FILE_FORMATS`): its
suffixes, the reader and writer here that read and write it, whether it is read whole; the
readers and writers ask it (:func:`table_format`, :func:`path_format`).

* CSV is read with every column as text, so that columns pramkit does not
  perturb are written back exactly as they were read.  An empty field is
  missing, and so is a field whose whole text is one of the missing markers
  (``na_values``, default :data:`NA_VALUES`: R's ``NA``).  Rows stream in
  blocks (memory O(block)); a ragged row is an error naming its line.
* A CSV file is comma-separated UTF-8 unless told otherwise: ``sep`` and
  ``encoding`` (``--sep``, ``--encoding``) read the semicolon-separated,
  Latin-1 files many European offices export (:func:`csv_dialect`).  A
  file that is not in its encoding is an error naming the line and byte.
  A CSV file written from a CSV file keeps its separator and encoding.
* Where a CSV column is read as numbers (survey weights, numeric covariates,
  breaks) its texts are read by :func:`csv_numbers` with the file's decimal
  mark: ``decimal=","`` (``--decimal ,``) reads ``12,5`` as 12.5 and refuses
  ``12.5`` in one line.  A column read as categories stays text.
* Parquet streams by record batches and keeps every column's type.
* A folder of part files (a Parquet dataset written by pyarrow or Spark, or
  Spark's CSV output) is read as one table, its parts in the order of their
  names (:func:`dataset_parts`); Spark's ``_SUCCESS`` and checksum files are
  not parts.
* Stata (``.dta``) and SPSS (``.sav``, ``.zsav``) go through pyreadstat,
  keeping variable and value labels; these formats are read whole.  Codes an
  SPSS file declares user-missing are missing; the declaration is kept when
  an SPSS file is written from an SPSS file.
* SAS: ``.sas7bdat`` is read, ``.xpt`` (transport) read and written.  Stata's
  extended missing values (``.a``-``.z``) and SAS's special ones (``.A``-``.Z``,
  ``._``) are kept as codes, and labels and display formats survive a round
  trip (:mod:`pramkit.io_stat`).
* Arrow IPC files (``.arrow``, ``.feather``: Feather version 2) are read
  memory-mapped, batch by batch, and written batch by batch, uncompressed;
  every column keeps its type.  They hold no labels: a missing code of a
  Stata, SPSS or SAS input is null in them, as in a CSV file.

Readers return missing markers and user-missing codes as nulls, unless asked
to keep them (``keep_missing_codes=True``, for writers that must give them
back unchanged; :attr:`TableMeta.missing` then says which values they are).
A writer of another format than the input's keeps what it can of the codes
and labels and refuses what it cannot hold (:mod:`pramkit.io_codes`); a
Parquet file keeps them in its key-value metadata, which its reader reads.

Writers are atomic (:mod:`pramkit.atomic`): the file appears complete under
its name or not at all, the row count of what was written is checked, and an
existing file is never replaced unless asked to.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pramkit.atomic import PathLike, atomic_path, check_writable, file_error
from pramkit.codebook import MissingCodes
from pramkit.defaults import CHUNK_ROWS, CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError, WriteError
from pramkit.frames import pandas_table
from pramkit.io_formats import FILE_FORMATS, FileFormat, file_format, format_of_suffix, suffix_formats, titles_where
from pramkit.validate import csv_separator, decimal_mark, text_encoding

#: File suffix -> format: derived from the table of formats (:data:`pramkit.io_formats.FILE_FORMATS`), which
#: the readers and writers ask when they run.
FORMATS = suffix_formats()


def table_format(path: str | Path) -> str:
    """The format of a file, from its suffix (:data:`FORMATS`; letter case does not matter).

    Parameters
    ----------
    path : str or pathlib.Path
        The file's name or path; the file need not exist.

    Returns
    -------
    str
        ``"csv"``, ``"parquet"``, ``"stata"``, ``"spss"``, ``"sas"`` or ``"feather"``: the name of its entry in
        the table of formats (:data:`pramkit.io_formats.FILE_FORMATS`).

    Raises
    ------
    ParameterError
        The suffix is not one of the table's (:data:`FORMATS`).

    Examples
    --------
    >>> table_format("census.CSV"), table_format("out/released.parquet"), table_format("survey.zsav")
    ('csv', 'parquet', 'spss')
    >>> table_format("survey.xlsx")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: cannot tell the format of 'survey.xlsx' from its suffix; use one of ['.arrow', '.csv', '.dta', '.feather', '.parquet', '.pq', '.sas7bdat', '.sav', '.tsv', '.txt', '.xpt', '.zsav']
    """
    found = format_of_suffix(Path(path).suffix)
    if found is None:
        raise ParameterError(
            f"cannot tell the format of {str(path)!r} from its suffix; use one of {sorted(suffix_formats())}"
        )
    return found.name


def path_format(path: str | Path) -> FileFormat:
    """The entry of the table of formats (:class:`pramkit.io_formats.FileFormat`) of a file, from its suffix.

    Raises
    ------
    ParameterError
        As :func:`table_format`.

    Examples
    --------
    >>> path_format("survey.sav").whole, path_format("out.csv").dialect
    (True, True)
    """
    entry = file_format(table_format(path))
    assert entry is not None  # table_format returns the name of an entry
    return entry


def check_written(path: str | Path) -> None:
    """:class:`ParameterError` for an output pramkit cannot write: a suffix its format's entry reads but does not
    write (:attr:`pramkit.io_formats.FileFormat.written`: a ``.sas7bdat`` file), or one of no format.

    Examples
    --------
    >>> check_written("released.xpt")
    >>> check_written("released.sas7bdat")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: pramkit cannot write 'released.sas7bdat': no open writer of .sas7bdat files exists; write .xpt (SAS transport, which SAS reads with PROC CIMPORT or LIBNAME XPORT) or .parquet
    """
    entry = path_format(path)
    if not entry.writes(Path(path).suffix):
        raise ParameterError(f"pramkit cannot write {str(path)!r}: {entry.unwritable}")


@dataclass
class TableMeta:
    """What a reader learnt about a file that a writer of the same format can keep.

    Parameters
    ----------
    format : str
        The file's format (:func:`table_format`).
    columns : list of str
        The columns read, in file order.
    rows : int, optional
        The row count when the file declares it (Parquet, Stata, SPSS, SAS); ``None`` for CSV.
    labels : dict
        Stata, SPSS and SAS variable and value labels (``column_labels``,
        ``variable_value_labels``), formats and the columns holding extended missing
        codes (:func:`pramkit.io_stat.read_stat`), empty for other formats.
    missing : pramkit.codebook.MissingCodes
        The values the file uses for missing although they are not null
        (CSV markers such as ``NA``, SPSS user-missing codes, Stata's ``.a``-``.z``,
        SAS's ``.A``-``.Z`` and ``._``).
    sep : str
        The field separator of a CSV file (``","`` for other formats).
    encoding : str
        The character encoding of a CSV file, as Python names it (``"utf-8"`` for other formats).
    newline : str
        How a CSV file ends its lines: ``"\\n"``, or ``"\\r\\n"`` for a file whose header line ends so (as many
        Windows programs write them); a CSV file written from it ends its lines the same way.
    decimal : str
        The decimal mark of a CSV file's numbers (``"."``, or ``","``: :func:`csv_numbers` reads a column of
        them); ``"."`` for other formats, whose numbers are numbers.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("sex,age\\nm,31\\nNA,45\\n")
    ...     meta, _ = iter_batches(f)
    >>> meta.format, meta.columns, meta.rows, meta.missing.texts, meta.newline
    ('csv', ['sex', 'age'], None, ('NA',), '\\n')
    """

    format: str
    columns: list[str]
    rows: int | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    missing: MissingCodes = field(default_factory=MissingCodes)
    sep: str = CSV_SEP
    encoding: str = CSV_ENCODING
    newline: str = "\n"
    decimal: str = CSV_DECIMAL


@dataclass(frozen=True)
class CsvDialect:
    """How a CSV file is written: its field separator, its character encoding and its numbers' decimal mark
    (:func:`csv_dialect`).

    Parameters
    ----------
    sep : str
        One character between fields.
    encoding : str
        The encoding as Python's codecs name it (``"utf-8"``, ``"iso8859-1"``, ``"cp1252"``).
    given : str
        The encoding as the user wrote it, for messages.
    decimal : str
        The decimal mark of its numbers, ``"."`` or ``","`` (:func:`csv_numbers`).

    Examples
    --------
    >>> CsvDialect().utf8, csv_dialect(";", "latin-1").utf8
    (True, False)
    """

    sep: str = CSV_SEP
    encoding: str = CSV_ENCODING
    given: str = CSV_ENCODING
    decimal: str = CSV_DECIMAL

    @property
    def utf8(self) -> bool:
        """Whether the encoding is UTF-8 (read without transcoding; a byte-order mark is skipped)."""
        return self.encoding in ("utf-8", "utf-8-sig")

    @property
    def text_encoding(self) -> str:
        """The codec Python opens the file with (``utf-8-sig`` for UTF-8: a byte-order mark is not text)."""
        return "utf-8-sig" if self.utf8 else self.encoding


def csv_dialect(sep: str = CSV_SEP, encoding: str = CSV_ENCODING, decimal: str = CSV_DECIMAL) -> CsvDialect:
    """The separator, encoding and decimal mark of CSV files, checked.

    Parameters
    ----------
    sep : str
        One character (not a quote or a line break), or one of the names of
        :data:`pramkit.validate.SEP_NAMES` (``tab``, ``semicolon``, ...; :func:`pramkit.validate.csv_separator`).
    encoding : str
        A text encoding Python knows (``utf-8``, ``latin-1``, ``cp1252``, ...; letter case and
        ``-``/``_`` do not matter).
    decimal : str
        The decimal mark of the numbers, ``"."`` or ``","`` (:func:`pramkit.validate.decimal_mark`).

    Returns
    -------
    CsvDialect

    Raises
    ------
    ParameterError
        ``sep`` is not one usable character, ``encoding`` is not a text encoding Python knows, or
        ``decimal`` is not ``"."`` or ``","``, or is ``","`` in a comma-separated file.

    Examples
    --------
    >>> csv_dialect(";", "Latin-1")
    CsvDialect(sep=';', encoding='iso8859-1', given='Latin-1', decimal='.')
    >>> csv_dialect(";", "latin-1", ",").decimal
    ','
    >>> csv_dialect("tab").sep
    '\\t'
    >>> csv_dialect(";;")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the separator (--sep) must be one character, such as ';' or tab, not ';;'
    >>> csv_dialect(encoding="latin-9x")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: unknown encoding 'latin-9x' (--encoding): give a text encoding Python knows, such as utf-8, latin-1 or cp1252
    """
    return CsvDialect(csv_separator(sep), text_encoding(encoding), str(encoding), decimal_mark(decimal, sep))


def _decoding_error(path: Path, dialect: CsvDialect) -> DataError:
    """The one-line error for a file that is not text in ``dialect``'s encoding: the first line and byte that
    cannot be decoded (error path only; the file is read again, line by line)."""
    given = dialect.given
    hint = ("give the file's encoding with --encoding (such as latin-1 or cp1252, as many offices export)"
            if dialect.utf8 else "give the file's encoding with --encoding (utf-8 is the default)")
    try:
        if dialect.encoding.startswith(("utf-16", "utf-32")):  # line breaks are more than one byte
            try:
                path.read_bytes().decode(dialect.text_encoding)
            except UnicodeError as exc:
                at = f"the bytes at offset {exc.start}" if isinstance(exc, UnicodeDecodeError) else "its first bytes"
                return DataError(f"file {str(path)!r} is not {given} text: {at} cannot be read in {given}; {hint}")
        else:
            offset = 0
            with open(path, "rb") as fh:
                for number, line in enumerate(fh, start=1):
                    try:
                        line.decode(dialect.text_encoding if number == 1 else dialect.encoding)
                    except UnicodeError as exc:
                        start = exc.start if isinstance(exc, UnicodeDecodeError) else 0
                        byte = line[start:start + 1]
                        return DataError(f"file {str(path)!r} is not {given} text: line {number}, byte offset "
                                         f"{offset + start} ({byte!r}) cannot be read in {given}; {hint}")
                    offset += len(line)
    except OSError as exc:
        return DataError(file_error(exc, path, "read"))
    return DataError(f"file {str(path)!r} cannot be read in {given}; {hint}")


def _undecodable(exc: BaseException) -> bool:
    """Whether a reader's error says the bytes are not text in the encoding asked for."""
    text = str(exc)
    return isinstance(exc, UnicodeError) or any(w in text for w in ("UTF8", "UTF-8", "decode", "codec"))


#: A part file of a dataset folder: not hidden (``.``) and not written beside the parts (``_SUCCESS``).
_PART_SKIPPED = (".", "_")
_DIGITS = re.compile(r"(\d+)")


def _natural(path: Path) -> tuple:
    """Sort key of a part file's name: numbers by value (``part-2`` before ``part-10``)."""
    return tuple((0, int(t), t) if t.isdigit() else (1, 0, t) for t in _DIGITS.split(path.name))


def dataset_parts(path: str | Path) -> tuple[str, list[Path]]:
    """The format and the part files of a dataset folder, in the order they are read.

    A folder written by ``pyarrow.dataset.write_dataset`` or by Spark holds part files
    (``part-0.parquet``, ``part-00000-....snappy.parquet``, ``part-00000-....csv``) and,
    from Spark, ``_SUCCESS`` and ``.crc`` checksum files.  The parts are the files whose
    names begin with neither ``.`` nor ``_``, all CSV or all Parquet (:func:`table_format`),
    ordered by name with numbers by value; empty files (Spark's empty partitions) are
    left out.

    Parameters
    ----------
    path : str or pathlib.Path
        The folder.

    Returns
    -------
    format : str
        ``"csv"`` or ``"parquet"``.
    parts : list of pathlib.Path
        The part files, in reading order.

    Raises
    ------
    DataError
        The folder does not exist, holds no part file, holds a subfolder (a partitioned
        dataset) or a file that is not a part, or parts of two formats, or its name's
        suffix names another format than its parts.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = pathlib.Path(d) / "released.parquet"
    ...     out.mkdir()
    ...     for name in ("part-10.parquet", "part-2.parquet", "_SUCCESS", ".part-2.parquet.crc"):
    ...         _ = (out / name).write_bytes(b"PAR1")
    ...     fmt, parts = dataset_parts(out)
    >>> fmt, [p.name for p in parts]
    ('parquet', ['part-2.parquet', 'part-10.parquet'])
    """
    p = Path(path)
    where = repr(str(p))
    if not p.is_dir():
        raise DataError(f"folder {where} does not exist")
    try:
        entries = sorted(p.iterdir(), key=_natural)
    except OSError as exc:
        raise DataError(file_error(exc, p, "read")) from None
    parts: list[Path] = []
    formats: dict[str, str] = {}
    for entry in entries:
        if entry.name.startswith(_PART_SKIPPED):
            continue
        if entry.is_dir():
            raise DataError(f"folder {where} holds the folder {entry.name!r}: a partitioned dataset is not read; "
                            "give a folder whose part files lie in it directly")
        suffixes = [format_of_suffix(s) for s in entry.suffixes]
        kind = format_of_suffix(entry.suffix)
        if kind is None or not kind.parts:  # the formats a part may be of: the table's (io_formats)
            parted = titles_where("parts", " or ")
            shown = parted if not any(suffixes) else f"a {parted} part, but {kind.name if kind else 'compressed'}"
            raise DataError(f"folder {where} holds {entry.name!r}, which is not {shown}: a dataset folder holds its "
                            "part files (and files whose names begin with '_' or '.'); move the other files out")
        formats.setdefault(kind.name, entry.name)
        if entry.stat().st_size > 0:
            parts.append(entry)
    if len(formats) > 1:
        held = [f for f in FILE_FORMATS.values() if f.name in formats]
        raise DataError(f"folder {where} holds {' and '.join(f.title for f in held)} part files "
                        f"({', '.join(repr(formats[f.name]) for f in held)}): a dataset's parts are of one format")
    if not parts:
        raise DataError(f"folder {where} holds no part files (non-empty .parquet or .csv files whose names begin "
                        "with neither '_' nor '.'): is it the right folder?")
    fmt = next(iter(formats))
    named_as = format_of_suffix(p.suffix)
    named = None if named_as is None else named_as.name
    if named is not None and named != fmt:
        raise DataError(f"folder {where} is named as {named} but its part files are {fmt}")
    return fmt, parts


def _existing(path: str | Path, *, folder: bool = False) -> Path:
    p = Path(path)
    if not p.exists():
        raise DataError(f"file {str(p)!r} does not exist")
    if p.is_dir():
        if folder:
            return p
        raise DataError(f"{str(p)!r} is a folder, not a data file")
    if p.stat().st_size == 0:
        raise DataError(f"file {str(p)!r} is empty")
    return p


def require_columns(wanted: Sequence[str] | None, present: Sequence[str], where: str) -> None:
    """:class:`DataError` naming the columns of ``wanted`` that ``where`` does not have.

    Parameters
    ----------
    wanted : sequence of str, optional
        The columns needed; ``None`` needs none.
    present : sequence of str
        The columns there are.
    where : str
        What holds ``present``, for the message (a file's name, ``"the data"``).

    Raises
    ------
    DataError
        Some of ``wanted`` are not in ``present``; the message lists them
        and the columns there are.

    Examples
    --------
    >>> require_columns(["sex"], ["sex", "age"], "the data")  # present: nothing happens
    >>> require_columns(["sex", "region"], ["sex", "age"], "'census.csv'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column(s) ['region'] are not in 'census.csv'; its columns are ['sex', 'age']
    """
    if wanted is None:
        return
    unknown = [c for c in wanted if c not in present]
    if unknown:
        raise DataError(f"column(s) {unknown} are not in {where}; its columns are {list(present)}")


def check_schema(schema: pa.Schema, flat: Sequence[str] | None, where: str) -> None:
    """:class:`DataError` for a file whose columns cannot be told apart (a name twice) or whose
    columns ``flat`` hold lists, structs or maps instead of single values.

    Parameters
    ----------
    schema : pyarrow.Schema
        The file's columns and their types.
    flat : sequence of str, optional
        The columns read as variables (keys, weights, strata); ``None``: none.
    where : str
        What holds them, for the message (a file's name).

    Raises
    ------
    DataError
        A column name occurs twice, or a column of ``flat`` is nested; the message names it.

    Examples
    --------
    >>> schema = pa.schema([("sex", pa.string()), ("visits", pa.list_(pa.int64()))])
    >>> check_schema(schema, ["sex"], "'a.parquet'")                 # a nested column not used: fine
    >>> check_schema(schema, ["sex", "visits"], "'a.parquet'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'visits' of 'a.parquet' holds list<item: int64> values, not one value per record: a variable must be a plain column (text, numbers, categories); flatten it first
    >>> check_schema(pa.schema([("sex", pa.string()), ("sex", pa.int64())]), None, "'a.parquet'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: 'a.parquet' has duplicate column names ['sex']; rename them so that every column has a name of its own
    """
    names = schema.names
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{where} has duplicate column names {dup}; rename them so that every column has a name "
                        "of its own")
    for name in flat or ():
        if name in names and pa.types.is_nested(schema.field(name).type):
            raise DataError(f"column {name!r} of {where} holds {schema.field(name).type} values, not one value per "
                            "record: a variable must be a plain column (text, numbers, categories); flatten it first")


def _csv_header(path: Path, dialect: CsvDialect = CsvDialect()) -> list[str]:
    try:
        with open(path, newline="", encoding=dialect.text_encoding) as fh:
            header = next(csv.reader(fh, delimiter=dialect.sep))
    except StopIteration:
        raise DataError(f"file {str(path)!r} is empty") from None
    except UnicodeError:
        raise _decoding_error(path, dialect) from None
    except csv.Error as exc:
        raise DataError(f"cannot read the header of {str(path)!r}: {exc}") from None
    except OSError as exc:
        raise DataError(file_error(exc, path, "read")) from None
    if not header or all(h == "" for h in header):
        raise DataError(f"file {str(path)!r} has no header line")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise DataError(f"file {str(path)!r} has duplicate column names {dup}")
    return header


def _csv_newline(path: Path) -> str:
    """How a CSV file ends its lines, from its header line: ``"\\r\\n"`` or ``"\\n"`` (an encoding that is not
    ASCII-compatible in CR and LF, such as UTF-16, is not a CSV encoding pramkit reads).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_bytes(b"sex,age\\r\\nm,31\\r\\n")
    ...     print(repr(_csv_newline(f)))
    '\\r\\n'
    """
    with open(path, "rb") as fh:
        first = fh.readline(1 << 20)
    return "\r\n" if first.endswith(b"\r\n") else "\n"


def _ragged_row_message(path: Path, width: int, dialect: CsvDialect = CsvDialect()) -> str | None:
    """Describe the first row whose field count differs from the header's (error path only)."""
    with open(path, newline="", encoding=dialect.text_encoding, errors="replace") as fh:
        reader = csv.reader(fh, delimiter=dialect.sep)
        for row in reader:
            if len(row) != width and row:
                return (
                    f"file {str(path)!r}, line {reader.line_num}: expected {width} fields "
                    f"(as in the header), found {len(row)}"
                )
    return None


def _csv_batches(path: Path, columns: Sequence[str] | None, block_bytes: int,
                 dialect: CsvDialect = CsvDialect()) -> Iterator[pa.RecordBatch]:
    """Record batches of a CSV file, every column as text, empty fields null (markers are handled later)."""
    header = _csv_header(path, dialect)
    require_columns(columns, header, _named(path, header))
    convert = pacsv.ConvertOptions(
        column_types={h: pa.string() for h in header},
        null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True,
        include_columns=list(columns) if columns is not None else None,
    )
    read = pacsv.ReadOptions(block_size=block_bytes, use_threads=True,
                             **({} if dialect.utf8 else {"encoding": dialect.encoding}))
    parse = pacsv.ParseOptions(delimiter=dialect.sep)
    try:
        reader = pacsv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert)
        yield from reader
    except (pa.ArrowInvalid, OSError, UnicodeError) as exc:
        if _undecodable(exc):
            raise _decoding_error(path, dialect) from None
        if "Expected" in str(exc) and (message := _ragged_row_message(path, len(header), dialect)):
            raise DataError(message) from None
        raise DataError(f"cannot read CSV file {str(path)!r}: {exc}") from None


def _named(path: Path, header: Sequence[str]) -> str:
    """How a missing column's message names a CSV file: with a hint when its one column looks like several
    joined by another separator (a semicolon-separated file read with commas)."""
    if len(header) == 1:
        joined = [sep for sep in (";", "\t", "|", ",") if sep in header[0]]
        if joined:
            return (f"{str(path)!r} (read as one column: are its fields separated by {joined[0]!r}? "
                    f"give --sep {SEP_NAMES_SHOWN.get(joined[0], repr(joined[0]))})")
    return repr(str(path))


#: How a message shows the option that gives a separator.
SEP_NAMES_SHOWN = {";": "';'", "\t": "tab", "|": "'|'", ",": "','"}


#: Bytes per CSV row assumed when sizing the blocks the CSV reader reads.
CSV_ROW_BYTES = 64
#: CSV blocks per chunk: pyarrow's reader reads about 16 blocks ahead, so small blocks keep that
#: read-ahead (not the file) a fraction of a chunk, at no cost in speed.
CSV_BLOCKS_PER_CHUNK = 8


def csv_block_bytes(chunk_rows: int) -> int:
    """The block size in which a CSV file is read for chunks of about ``chunk_rows`` rows.

    Parameters
    ----------
    chunk_rows : int
        The rows per chunk the caller wants.

    Returns
    -------
    int
        Bytes per block: an eighth of the chunk at :data:`CSV_ROW_BYTES` bytes
        per row, between 64 KiB and 1 GiB.

    Examples
    --------
    >>> csv_block_bytes(1 << 20) == 8 << 20, csv_block_bytes(100)
    (True, 65536)
    """
    return max(1 << 16, min(chunk_rows * CSV_ROW_BYTES // CSV_BLOCKS_PER_CHUNK, 1 << 30))


def _regrouped(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Tables of consecutive record batches, each of at least ``rows`` rows (the last one may have fewer)."""
    group: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        group.append(batch)
        size += batch.num_rows
        if size >= rows:
            yield pa.Table.from_batches(group)
            group, size = [], 0
    if group:
        yield pa.Table.from_batches(group)


def csv_missing_codes(na_values: Sequence[str] | str = NA_VALUES) -> MissingCodes:
    """The texts that mean missing in a CSV file (besides the empty field, which always does).

    Parameters
    ----------
    na_values : sequence of str, or str
        The missing markers (one text, or several); empty texts are dropped,
        as the empty field is always missing.

    Returns
    -------
    pramkit.codebook.MissingCodes
        The markers as ``texts``, with a ``source`` that says how to change them.

    Examples
    --------
    >>> csv_missing_codes().texts, csv_missing_codes(["NA", "", "-9"]).texts, csv_missing_codes(()).texts
    (('NA',), ('NA', '-9'), ())
    """
    markers = (na_values,) if isinstance(na_values, str) else tuple(na_values)
    texts = tuple(str(v) for v in markers if str(v) != "")
    shown = ",".join(texts)
    return MissingCodes(texts=texts, source=f"--na-values {shown} reads it as missing; --na-values '' would not")


def csv_numbers(values: Any, column: str, *, decimal: str = CSV_DECIMAL, first_row: int = 0,
                where: str = "", strict: bool = True) -> np.ndarray:
    """A column's values as numbers (float64, missing as NaN), a text read with the decimal mark ``decimal``:
    the one place where a field of a CSV file is read as a number (weights, numeric covariates, breaks).

    With the decimal point (``"."``, the default) a text that is not a number becomes NaN, as
    :func:`pandas.to_numeric` reads it (the caller refuses it with its own message: a weight that is not
    positive, ...).  With the decimal comma (``","``, ``--decimal ,``), ``12,5`` is 12.5, and a text that is not
    a number so written (``12.5``, ``1.234,5``, ``n/a``) is refused in one line naming the column, the row
    and the value: a number written with a point in a file of decimal commas is never misread.  Values that
    are numbers already (a Parquet column) are numbers whatever ``decimal`` says.

    Parameters
    ----------
    values : pyarrow.Array, pyarrow.ChunkedArray, pandas.Series or sequence
        The column's values (a chunk of them).
    column : str
        Its name, for the message.
    decimal : {".", ","}
        The file's decimal mark (:attr:`TableMeta.decimal`).
    first_row : int
        The rows of the file before these values (the message counts rows from 1).
    where : str
        The file, for the message (``"'survey.csv'"``); empty: not named.
    strict : bool
        With the decimal comma, refuse a text that is not a number (default); ``False``: it becomes NaN, as with
        the decimal point (what asks whether a column holds numbers, such as the binning of a public column).

    Returns
    -------
    numpy.ndarray
        float64.

    Raises
    ------
    DataError
        With ``decimal=","``, a value that is not a number written with a decimal comma.

    Examples
    --------
    >>> csv_numbers(pa.array(["12.5", None, "x"]), "w").tolist()
    [12.5, nan, nan]
    >>> csv_numbers(pa.array(["12,5", None, "-3", "1e3"]), "w", decimal=",").tolist()
    [12.5, nan, -3.0, 1000.0]
    >>> csv_numbers(pa.array(["12,5", "7.25", "x"]), "w", decimal=",", strict=False).tolist()
    [12.5, nan, nan]
    >>> csv_numbers(pa.array(["12,5", "7.25"]), "rb050", decimal=",", first_row=10, where="'eu.csv'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'rb050' of 'eu.csv', row 12: '7.25' is not a number written with a decimal comma (--decimal ,): write it 7,25, or read the file with --decimal .
    """
    series = _as_series(values)
    if pd.api.types.is_bool_dtype(series.dtype) or pd.api.types.is_numeric_dtype(series.dtype):
        return series.to_numpy(dtype=float, na_value=np.nan)
    if decimal_mark(decimal) == ".":
        return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    values = series.astype(object)
    is_text = values.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)  # a number among texts is a number
    texts = values.where(is_text, None)
    numbers = pd.to_numeric(texts.str.replace(",", ".", regex=False), errors="coerce").to_numpy(dtype=float)
    if not is_text.all():
        numbers = np.where(is_text, numbers, pd.to_numeric(values.where(~is_text, None), errors="coerce"))
    pointed = texts.str.contains(".", regex=False).fillna(False).to_numpy(dtype=bool)
    bad = is_text & (pointed | (texts.str.count(",").fillna(0).to_numpy() > 1) | np.isnan(numbers))
    if bad.any() and not strict:
        return np.where(bad, np.nan, numbers)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = texts.iloc[i]
        if isinstance(value, str) and pointed[i] and value.count(".") == 1 and "," not in value:
            hint = f"write it {value.replace('.', ',')}, or read the file with --decimal ."
        elif isinstance(value, str) and pointed[i]:
            hint = "write the numbers without a thousands separator, such as 1234,5"
        else:
            hint = "a column read as numbers holds numbers such as 12,5 (a text meaning missing: --na-values)"
        named = f"column {column!r}" + (f" of {where}" if where else "")
        raise DataError(f"{named}, row {first_row + i + 1}: {value!r} is not a number written with a decimal comma "
                        f"(--decimal ,): {hint}")
    return numbers


def _as_series(values: Any) -> pd.Series:
    """Values of an Arrow array, a pandas Series or a sequence as a pandas Series (a category as its label)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        return pd.Series(values.to_pandas(), copy=False)
    series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values) if isinstance(
        values, np.ndarray) else list(values)).infer_objects()
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    return series.reset_index(drop=True)


def iter_batches(
    path: str | Path | Any,
    *,
    columns: Sequence[str] | None = None,
    chunk_rows: int = CHUNK_ROWS,
    na_values: Sequence[str] = NA_VALUES,
    keep_missing_codes: bool = False,
    flat: Sequence[str] | None = None,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    decimal: str = CSV_DECIMAL,
) -> tuple[TableMeta, Iterator[pa.Table]]:
    """Stream a file as Arrow tables of about ``chunk_rows`` rows.

    Returns the file's metadata and an iterator of tables.  A CSV file is
    read in blocks of about an eighth of a chunk (:func:`csv_block_bytes`;
    64 bytes per row assumed), regrouped into tables of at least
    ``chunk_rows`` rows; Parquet uses record batches; Stata, SPSS and SAS files
    come as one table.

    ``na_values`` are the texts that are missing in a CSV file besides the
    empty field (default :data:`NA_VALUES`; ``()`` for none).  Missing
    markers and SPSS user-missing codes come back as nulls, or as they are in
    the file with ``keep_missing_codes=True`` (then ``meta.missing`` tells
    which values they are).  ``sep``, ``encoding`` and ``decimal`` say how a CSV
    file is written (:func:`csv_dialect`); they are checked whatever the format.
    A CSV column stays text whatever ``decimal`` says: a column read as numbers
    is read by :func:`csv_numbers` with ``meta.decimal``.

    Parameters
    ----------
    path : str or pathlib.Path, or a polars DataFrame or LazyFrame or an Arrow table
        A CSV, Parquet, Stata, SPSS or SAS file (:func:`table_format`), a folder of
        CSV or Parquet part files read as one table (:func:`dataset_parts`), or a frame in
        memory, read by :func:`pramkit.frames.arrow_batches` (a ``LazyFrame`` batch
        by batch; ``meta.rows`` is then ``None``).
    columns : sequence of str, optional
        The columns to read, in this order; default all of them.
    chunk_rows : int
        The rows per table wanted (the last table may have fewer).
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    keep_missing_codes : bool
        Return missing markers and user-missing codes as they are in the file.
    flat : sequence of str, optional
        Columns that must hold one plain value per record (:func:`check_schema`); default
        ``columns``, the columns read.
    sep : str
        The field separator of a CSV file (default ``","``).
    encoding : str
        The character encoding of a CSV file (default ``"utf-8"``).
    decimal : str
        The decimal mark of a CSV file's numbers, ``"."`` (default) or ``","``: kept in ``meta.decimal``.

    Returns
    -------
    meta : TableMeta
        The file's format, columns, row count (when declared), labels and missing codes.
    tables : iterator of pyarrow.Table
        The rows, chunk by chunk; a CSV column is text.

    Raises
    ------
    DataError
        The file does not exist or is empty, lacks one of ``columns``, has a
        column name twice or a nested column among ``flat``, is not text in
        ``encoding`` (the line and byte are named), or cannot be read (a ragged
        CSV row is named by its line); a folder holds no part files, or parts
        of different columns.
    ParameterError
        The format cannot be told from the suffix, ``sep`` is not one character
        or ``encoding`` is unknown.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("x,y\\n1,NA\\n,b\\n")
    ...     meta, batches = iter_batches(f)
    ...     print(next(batches).to_pydict())
    ...     meta, batches = iter_batches(f, keep_missing_codes=True)
    ...     print(next(batches).to_pydict(), meta.missing.texts)
    {'x': ['1', None], 'y': [None, 'b']}
    {'x': ['1', None], 'y': ['NA', 'b']} ('NA',)

    The tables do not depend on the chunk size, only their number does:

    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "b.parquet"
    ...     pq.write_table(pa.table({"x": list(range(10))}), f)
    ...     meta, batches = iter_batches(f, chunk_rows=4)
    ...     sizes = [t.num_rows for t in batches]
    >>> meta.rows, sizes
    (10, [4, 4, 2])

    A semicolon-separated Latin-1 file, and a folder of Parquet parts read as one table:

    >>> import pyarrow.dataset as ds
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "eu.csv"
    ...     _ = f.write_bytes("area;sex\\nZ\\u00fcrich;f\\n".encode("latin-1"))
    ...     meta, batches = iter_batches(f, sep=";", encoding="latin-1")
    ...     print(next(batches).to_pydict(), meta.sep, meta.encoding)
    ...     ds.write_dataset(pa.table({"x": list(range(10))}), pathlib.Path(d) / "parts", format="parquet",
    ...                      max_rows_per_file=4, max_rows_per_group=4)
    ...     meta, batches = iter_batches(pathlib.Path(d) / "parts", chunk_rows=5)
    ...     print(meta.format, meta.rows, pa.concat_tables(batches).column("x").to_pylist())
    {'area': ['Zürich'], 'sex': ['f']} ; iso8859-1
    parquet 10 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    from pramkit.frames import arrow_batches, describe, frame_columns, frame_kind, streamed

    dialect = csv_dialect(sep, encoding, decimal)
    if streamed(path):  # a polars frame or an Arrow table in memory: its Arrow batches (format: its kind)
        where = describe(path)
        names = frame_columns(path)
        require_columns(columns, names, where)
        wanted = list(columns) if columns is not None else names
        schema, rows, tables = arrow_batches(path, wanted, chunk_rows)
        check_schema(schema, wanted if flat is None else flat, where)
        return TableMeta(str(frame_kind(path)), wanted, rows=rows), tables
    p = _existing(path, folder=True)
    if p.is_dir():
        meta, tables = _dataset(p, columns, chunk_rows, na_values, flat, dialect)
    else:
        meta, tables = _file(p, columns, chunk_rows, na_values, flat, dialect, keep_missing_codes)
    # a Parquet file pramkit wrote with its codes' metadata holds each code as a null: nothing to blank
    if keep_missing_codes or not meta.missing or (meta.format == "parquet" and meta.labels):
        return meta, tables
    return meta, (blank_missing_codes(t, meta.missing) for t in tables)


def _file(p: Path, columns: Sequence[str] | None, chunk_rows: int, na_values: Sequence[str],
          flat: Sequence[str] | None, dialect: CsvDialect,
          keep_missing_codes: bool) -> tuple[TableMeta, Iterator[pa.Table]]:
    """:func:`iter_batches` of one file (missing codes not yet blanked; a Parquet file's codes restored
    from pramkit's metadata with ``keep_missing_codes``), by the reader its format's entry names
    (:attr:`pramkit.io_formats.FileFormat.reader`)."""
    entry = path_format(p)
    return _READERS[entry.reader](p, entry.name, columns, chunk_rows, na_values, flat, dialect, keep_missing_codes)


def _read_csv(p: Path, fmt: str, columns: Sequence[str] | None, chunk_rows: int, na_values: Sequence[str],
              flat: Sequence[str] | None, dialect: CsvDialect,
              keep_missing_codes: bool) -> tuple[TableMeta, Iterator[pa.Table]]:
    """A CSV file: every column as text, in blocks regrouped into chunks."""
    header = _csv_header(p, dialect)
    require_columns(columns, header, _named(p, header))
    meta = TableMeta(fmt, list(columns) if columns is not None else header, missing=csv_missing_codes(na_values),
                     sep=dialect.sep, encoding=dialect.encoding, newline=_csv_newline(p), decimal=dialect.decimal)
    return meta, _regrouped(_csv_batches(p, columns, csv_block_bytes(chunk_rows), dialect), chunk_rows)


def _read_parquet(p: Path, fmt: str, columns: Sequence[str] | None, chunk_rows: int, na_values: Sequence[str],
                  flat: Sequence[str] | None, dialect: CsvDialect,
                  keep_missing_codes: bool) -> tuple[TableMeta, Iterator[pa.Table]]:
    """A Parquet file, by record batches; the codes pramkit's metadata keeps restored with ``keep_missing_codes``."""
    try:
        pf = pq.ParquetFile(p, pre_buffer=False)  # pre-buffering keeps read pages alive: memory grew with the file
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read Parquet file {str(p)!r}: {exc}") from None
    from pramkit.io_codes import read_parquet_codes

    names = pf.schema_arrow.names
    check_schema(pf.schema_arrow, columns if flat is None else flat, repr(str(p)))
    require_columns(columns, names, repr(str(p)))
    labels, missing, positions = read_parquet_codes(pf.metadata.metadata, repr(str(p)))
    meta = TableMeta(fmt, list(columns) if columns is not None else names, rows=pf.metadata.num_rows,
                     labels=labels, missing=missing)
    tables = _parquet_tables(p, pf, chunk_rows, columns)
    if positions and keep_missing_codes:
        tables = _with_codes(tables, labels, positions)
    return meta, tables


def _read_stat(p: Path, fmt: str, columns: Sequence[str] | None, chunk_rows: int, na_values: Sequence[str],
               flat: Sequence[str] | None, dialect: CsvDialect,
               keep_missing_codes: bool) -> tuple[TableMeta, Iterator[pa.Table]]:
    """A Stata, SPSS or SAS file through pyreadstat, whole, with its labels and missing codes."""
    from pramkit.io_stat import read_stat, stat_columns

    require_columns(columns, stat_columns(p, fmt), repr(str(p)))
    frame, labels, missing = read_stat(p, fmt, columns)
    meta = TableMeta(fmt, list(frame.columns), rows=len(frame), labels=labels, missing=missing)
    return meta, iter([pandas_table(frame)])


def _feather_reader(p: Path) -> pa.ipc.RecordBatchFileReader:
    """The reader of an Arrow IPC (Feather version 2) file, memory-mapped: a batch is read when asked for."""
    try:
        return pa.ipc.open_file(pa.memory_map(str(p), "r"))
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read Arrow IPC file {str(p)!r}: {exc} (a Feather file of version 1 is read by "
                        "no reader of pramkit: write it again with pyarrow.feather.write_feather)") from None


def _read_feather(p: Path, fmt: str, columns: Sequence[str] | None, chunk_rows: int, na_values: Sequence[str],
                  flat: Sequence[str] | None, dialect: CsvDialect,
                  keep_missing_codes: bool) -> tuple[TableMeta, Iterator[pa.Table]]:
    """An Arrow IPC file (``.arrow``, ``.feather``): its record batches, memory-mapped, cut into chunks."""
    reader = _feather_reader(p)
    names = reader.schema.names
    check_schema(reader.schema, columns if flat is None else flat, repr(str(p)))
    require_columns(columns, names, repr(str(p)))
    meta = TableMeta(fmt, list(columns) if columns is not None else names, rows=reader.count_rows())
    return meta, _regrouped(_feather_batches(p, reader, columns, chunk_rows), chunk_rows)


def _feather_batches(p: Path, reader: pa.ipc.RecordBatchFileReader, columns: Sequence[str] | None,
                     chunk_rows: int) -> Iterator[pa.RecordBatch]:
    """The record batches of an Arrow IPC file, ``columns`` selected, none longer than ``chunk_rows``."""
    try:
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            if columns is not None:
                batch = batch.select(list(columns))
            for start in range(0, batch.num_rows, chunk_rows):
                yield batch.slice(start, chunk_rows)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read Arrow IPC file {str(p)!r}: {exc}") from None


#: The readers of :attr:`pramkit.io_formats.FileFormat.reader`: a file's format's entry names the one that reads it.
_READERS = {"csv": _read_csv, "parquet": _read_parquet, "stat": _read_stat, "feather": _read_feather}


def _dataset(p: Path, columns: Sequence[str] | None, chunk_rows: int, na_values: Sequence[str],
             flat: Sequence[str] | None, dialect: CsvDialect) -> tuple[TableMeta, Iterator[pa.Table]]:
    """:func:`iter_batches` of a folder of part files (:func:`dataset_parts`), read as one table."""
    fmt, parts = dataset_parts(p)
    where = repr(str(p))
    if fmt == "csv":
        headers = [_csv_header(part, dialect) for part in parts]
        _same_columns(p, parts, [[(h, "text") for h in header] for header in headers])
        require_columns(columns, headers[0], _named(p, headers[0]))
        meta = TableMeta("csv", list(columns) if columns is not None else headers[0],
                         missing=csv_missing_codes(na_values), sep=dialect.sep, encoding=dialect.encoding,
                         newline=_csv_newline(parts[0]), decimal=dialect.decimal)
        block = csv_block_bytes(chunk_rows)
        batches = itertools.chain.from_iterable(_csv_batches(part, columns, block, dialect) for part in parts)
        return meta, _regrouped(batches, chunk_rows)
    try:
        schemas = [pq.read_schema(part) for part in parts]
        rows = sum(pq.read_metadata(part).num_rows for part in parts)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read the Parquet part files of folder {where}: {exc}") from None
    _same_columns(p, parts, [[(f.name, str(f.type)) for f in schema] for schema in schemas])
    check_schema(schemas[0], columns if flat is None else flat, where)
    require_columns(columns, schemas[0].names, where)
    meta = TableMeta("parquet", list(columns) if columns is not None else schemas[0].names, rows=rows)
    return meta, _regrouped(_parts_batches(parts, chunk_rows, columns), chunk_rows)


def _parts_batches(parts: Sequence[Path], chunk_rows: int, columns: Sequence[str] | None) -> Iterator[pa.RecordBatch]:
    """The record batches of Parquet part files, one file open at a time, cast to the first part's schema."""
    schema = None
    for part in parts:
        try:
            pf = pq.ParquetFile(part, pre_buffer=False)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DataError(f"cannot read Parquet file {str(part)!r}: {exc}") from None
        for table in _parquet_tables(part, pf, chunk_rows, columns):
            schema = schema or table.schema
            yield from table.cast(schema).to_batches()


def _same_columns(folder: Path, parts: Sequence[Path], schemas: Sequence[Sequence[tuple[str, str]]]) -> None:
    """:class:`DataError` naming the first part whose columns (names, order and types) differ from the first's."""
    first = list(schemas[0])
    for part, schema in zip(parts[1:], schemas[1:]):
        other = list(schema)
        if other == first:
            continue
        names_a, names_b = [n for n, _ in first], [n for n, _ in other]
        if set(names_a) != set(names_b):
            only_a = [n for n in names_a if n not in names_b]
            only_b = [n for n in names_b if n not in names_a]
            how = (f"{parts[0].name!r} has column(s) {only_a} that {part.name!r} lacks" if only_a else
                   f"{part.name!r} has column(s) {only_b} that {parts[0].name!r} lacks")
        elif names_a != names_b:
            how = f"{parts[0].name!r} and {part.name!r} hold their columns in another order"
        else:
            name, kind = next((n, t) for (n, t), (_, u) in zip(first, other) if t != u)
            how = (f"column {name!r} is {kind} in {parts[0].name!r} but {dict(other)[name]} in {part.name!r}")
        raise DataError(f"the part files of folder {str(folder)!r} differ: {how}; a dataset's parts must share "
                        "one schema (write them again together, or read them apart)")


def _with_codes(tables: Iterator[pa.Table], labels: dict[str, Any], positions: dict[str, Any]) -> Iterator[pa.Table]:
    """The chunks of a Parquet file written by pramkit with its missing codes back in place."""
    from pramkit.io_codes import restore_codes

    start = 0
    for table in tables:
        yield restore_codes(table, start, labels, positions)
        start += table.num_rows


def _parquet_tables(path: Path, pf: pq.ParquetFile, chunk_rows: int,
                    columns: Sequence[str] | None) -> Iterator[pa.Table]:
    try:
        for b in pf.iter_batches(batch_size=chunk_rows, columns=columns):
            yield pa.Table.from_batches([b])
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read Parquet file {str(path)!r}: {exc}") from None


def blank_missing_codes(table: pa.Table, missing: MissingCodes) -> pa.Table:
    """``table`` with the values that ``missing`` declares missing replaced by nulls.

    Parameters
    ----------
    table : pyarrow.Table
        A chunk of a file.
    missing : pramkit.codebook.MissingCodes
        The file's missing markers and user-missing codes.

    Returns
    -------
    pyarrow.Table
        The same columns and types; a column without missing codes is left as it is.

    Examples
    --------
    >>> t = pa.table({"x": ["1", "NA", "2"]})
    >>> blank_missing_codes(t, MissingCodes(texts=("NA",))).column("x").to_pylist()
    ['1', None, '2']
    """
    for i, name in enumerate(table.column_names):
        mask = missing.found(name, table.column(i))
        if mask is not None:
            column = table.column(i)
            table = table.set_column(i, table.field(i), pc.if_else(pa.array(mask), pa.scalar(None, column.type), column))
    return table


def value_label_categories(path: str | Path, columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """The categories a Stata or SPSS file declares for ``columns``: the codes of their value labels.

    Value labels are the file's codebook, written by its producer, not counted from its records;
    codes declared user-missing (SPSS) and labels of Stata's extended missing values (``.a "Refused"``,
    which pyreadstat reads as the key ``"a"``) are left out: a missing code is never a category.
    CSV and Parquet files declare none (``{}``).

    Parameters
    ----------
    path : str or pathlib.Path
        The data file.
    columns : sequence of str
        The columns whose categories are wanted.

    Returns
    -------
    dict
        ``{column: codes}``, the codes in :func:`pramkit.codebook.sort_labels`
        order, for the columns that have value labels.

    Raises
    ------
    DataError
        The file does not exist, is empty, or cannot be read.
    ParameterError
        The format cannot be told from the suffix.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = str(pathlib.Path(d) / "a.sav")
    ...     pyreadstat.write_sav(pd.DataFrame({"sex": [1.0, 2.0]}), f, missing_ranges={"sex": [9]},
    ...                          variable_value_labels={"sex": {1: "male", 2: "female", 9: "unknown"}})
    ...     value_label_categories(f, ["sex"])
    {'sex': (1, 2)}

    A Stata file's labels of its extended missing values are not categories either:

    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = str(pathlib.Path(d) / "a.dta")
    ...     pyreadstat.write_dta(pd.DataFrame({"sex": pd.Series([1, 2, "a"], dtype=object)}), f,
    ...                          missing_user_values={"sex": ["a"]},
    ...                          variable_value_labels={"sex": {1: "male", 2: "female", "a": "Refused"}})
    ...     value_label_categories(f, ["sex"])
    {'sex': (1, 2)}
    """
    from pramkit.codebook import sort_labels

    p = _existing(path, folder=True)
    if p.is_dir():  # a dataset folder: CSV or Parquet parts, which declare no value labels
        return {}
    entry = path_format(p)
    if not entry.value_labels:  # the formats that declare value labels: the table's (io_formats)
        return {}
    fmt = entry.name
    import pyreadstat

    reader = pyreadstat.read_dta if fmt == "stata" else pyreadstat.read_sav
    extra: dict[str, Any] = {"user_missing": True} if fmt == "spss" else {}
    try:
        _, meta = reader(str(p), metadataonly=True, **extra)
    except Exception as exc:  # pyreadstat raises its own ReadstatError and others
        raise DataError(f"cannot read {fmt} file {str(p)!r}: {exc}") from None
    labels = meta.variable_value_labels or {}
    ranges = getattr(meta, "missing_ranges", None) or {}
    out: dict[str, tuple[Any, ...]] = {}
    for name in columns:
        if not labels.get(name):
            continue
        missing = [(r["lo"], r["hi"]) for r in ranges.get(name, [])]
        codes = [c for c in labels[name] if not any(_between(c, lo, hi) for lo, hi in missing)
                 and not (fmt == "stata" and isinstance(c, str))]  # Stata: a text key labels a code .a-.z
        if codes:
            out[name] = tuple(sort_labels(codes))
    return out


def _between(value: Any, lo: Any, hi: Any) -> bool:
    try:
        return bool(lo <= value <= hi)
    except TypeError:
        return False


def file_columns(path: str | Path, *, sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> list[str]:
    """The columns of a file, read from its header or schema alone (a folder of part files: its first part's),
    by the reader its format's entry names.

    Parameters
    ----------
    path : str or pathlib.Path
        A file or a folder of part files.
    sep, encoding : str
        How a CSV file is written (:func:`csv_dialect`).

    Returns
    -------
    list of str

    Raises
    ------
    DataError
        The file cannot be read.
    ParameterError
        Its format cannot be told from its suffix.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "r.csv").write_text("sex;age\\nm;31\\n")
    ...     file_columns(pathlib.Path(d) / "r.csv", sep=";")
    ['sex', 'age']
    """
    p = Path(path)
    if p.is_dir():  # part files: each has the table's columns
        p = dataset_parts(p)[1][0]
    entry = path_format(p)
    if entry.reader == "csv":
        return _csv_header(p, csv_dialect(sep, encoding))
    if entry.reader == "parquet":
        return list(pq.read_schema(p).names)
    if entry.reader == "feather":
        return list(_feather_reader(p).schema.names)
    from pramkit.io_stat import stat_columns

    return stat_columns(p, entry.name)


def read_table(
    path: str | Path, *, columns: Sequence[str] | None = None, na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP, encoding: str = CSV_ENCODING, decimal: str = CSV_DECIMAL,
) -> pd.DataFrame:
    """Read a whole file into a pandas DataFrame (CSV columns as text; missing as in :func:`iter_batches`).

    Parameters
    ----------
    path : str or pathlib.Path
        A CSV, Parquet, Stata, SPSS or SAS file, or a folder of part files (:func:`dataset_parts`).
    columns : sequence of str, optional
        The columns to read; default all of them.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    sep, encoding, decimal : str
        The field separator, character encoding and decimal mark of a CSV file (:func:`csv_dialect`; the
        columns stay text: :func:`csv_numbers` reads numbers).

    Returns
    -------
    pandas.DataFrame
        The records; missing markers and user-missing codes are missing.

    Raises
    ------
    DataError
        A missing or empty file, a file with no data rows, a ragged CSV row
        or an unknown column.

    Examples
    --------
    CSV columns stay text, so ``007`` is not the number 7:

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("id,sex\\n007,m\\n008,NA\\n")
    ...     frame = read_table(f)
    >>> frame["id"].tolist(), frame["sex"].isna().tolist()
    (['007', '008'], [False, True])
    """
    return read_arrow(path, columns=columns, na_values=na_values, sep=sep, encoding=encoding,
                      decimal=decimal).to_pandas()


def read_arrow(
    path: str | Path, *, columns: Sequence[str] | None = None, na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP, encoding: str = CSV_ENCODING, compact: bool | Sequence[str] = False,
    decimal: str = CSV_DECIMAL,
) -> pa.Table:
    """Read a whole file into one Arrow table (what :func:`read_table` converts to pandas).

    With ``compact=True`` every text column is dictionary-encoded chunk by chunk as it is read,
    one dictionary for the whole column at the end: a record then holds four bytes per text
    column instead of its text and an offset, and the whole text is never in memory at once.
    What reads the key columns of a large file whole (the household risk, SUDA) reads them so.

    Parameters
    ----------
    path : str or pathlib.Path
        A CSV, Parquet, Stata, SPSS or SAS file, or a folder of part files (:func:`dataset_parts`).
    columns : sequence of str, optional
        The columns to read; default all of them.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`csv_dialect`).
    compact : bool or sequence of str
        Text columns dictionary-encoded (their values and missing values unchanged): every one
        (``True``) or those named.
    decimal : str
        The decimal mark of a CSV file's numbers (checked; the columns stay text).

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    DataError
        As :func:`read_table`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("id,sex\\n007,m\\n008,NA\\n009,m\\n")
    ...     table = read_arrow(f, compact=True)
    >>> table.column("sex").to_pylist(), str(table.schema.field("sex").type)
    (['m', None, 'm'], 'dictionary<values=string, indices=int32, ordered=0>')
    """
    _, batches = iter_batches(path, columns=columns, na_values=na_values, sep=sep, encoding=encoding,
                              decimal=decimal)
    names = None if isinstance(compact, bool) else set(compact)
    tables = [compact_text(t, names) if compact else t for t in batches]
    if not tables or sum(t.num_rows for t in tables) == 0:
        raise DataError(f"file {str(path)!r} has no data rows")
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return table.unify_dictionaries() if compact else table


def compact_text(table: pa.Table, names: Iterable[str] | None = None) -> pa.Table:
    """``table`` with its text columns (those in ``names``, or all) dictionary-encoded.

    What :func:`read_arrow` (``compact``) does to each chunk it reads: a value becomes a four-byte
    index into the chunk's distinct texts, instead of its text and offset.

    Parameters
    ----------
    table : pyarrow.Table
        A chunk of records.
    names : iterable of str, optional
        The columns to encode (those of them that hold text); default every text column.

    Returns
    -------
    pyarrow.Table
        The same columns and values; the text columns named as dictionaries of one chunk each.

    Examples
    --------
    >>> t = compact_text(pa.table({"sex": ["m", None, "m"], "age": [1, 2, 3], "x": ["a", "b", "a"]}), ["sex", "age"])
    >>> [str(f.type) for f in t.schema], t.column("sex").to_pylist()
    (['dictionary<values=string, indices=int32, ordered=0>', 'int64', 'string'], ['m', None, 'm'])
    """
    names = None if names is None else set(names)
    for i, f in enumerate(table.schema):
        text = pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type)
        if text and (names is None or f.name in names):
            table = table.set_column(i, f.name, pc.dictionary_encode(table.column(i)).combine_chunks())
    return table


class TableWriter:
    """Write Arrow tables chunk by chunk to a CSV, Parquet, Stata, SPSS, SAS transport or Arrow IPC file, atomically.

    Use as a context manager; the target appears only if the block completes
    and the file written holds every row (:mod:`pramkit.atomic`).  ``inputs``
    are the files the caller reads, which the target may never be.  With the
    ``meta`` of a file of the same format, variable and value labels and SPSS
    user-missing declarations are written too, and a CSV file is written with
    the separator and encoding of the CSV file read (``meta.sep``, ``meta.encoding``).

    Parameters
    ----------
    path : str or pathlib.Path
        The output; its suffix gives the format (:func:`table_format`).
    force : bool
        Replace an existing output.
    meta : TableMeta, optional
        What a reader learnt about the input, to keep its labels.
    inputs : iterable of paths
        The files the caller reads (``None`` entries are skipped).

    Raises
    ------
    ParameterError
        The output is one of ``inputs``.
    OutputExistsError
        The output exists and ``force`` is false (checked on construction, before any work).
    WriteError
        The output is a folder or in a folder that does not exist, the file cannot be
        written, what was written does not hold every row, or a value has a character
        the CSV file's encoding cannot write.

    Examples
    --------
    Two chunks make one file, which appears only when the block ends:

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = pathlib.Path(d) / "out.parquet"
    ...     with TableWriter(out) as writer:
    ...         writer.write(pa.table({"sex": ["m", "f"]}))
    ...         writer.write(pa.table({"sex": ["f"]}))
    ...         print(out.exists())
    ...     back = pq.read_table(out)
    ...     print(writer.rows, back.column("sex").to_pylist())
    ...     print(sorted(p.name for p in pathlib.Path(d).iterdir()))  # no temporary left
    False
    3 ['m', 'f', 'f']
    ['out.parquet']

    A CSV file read with ``sep=";"`` and ``encoding="latin-1"`` is written back the same way:

    >>> with tempfile.TemporaryDirectory() as d:
    ...     src, out = pathlib.Path(d) / "eu.csv", pathlib.Path(d) / "out.csv"
    ...     _ = src.write_bytes("area;n\\nZ\\u00fcrich;1\\n".encode("latin-1"))
    ...     meta, tables = iter_batches(src, sep=";", encoding="latin-1")
    ...     with TableWriter(out, meta=meta) as writer:
    ...         writer.write(next(tables))
    ...     print(out.read_bytes())
    b'area;n\\nZ\\xfcrich;1\\n'
    """

    def __init__(self, path: str | Path, *, force: bool = False, meta: TableMeta | None = None,
                 inputs: Iterable[PathLike | None] = ()) -> None:
        from pramkit.io_codes import CodeCarrier, carries

        self.inputs = list(inputs)
        self.path = check_writable(path, force=force, inputs=self.inputs)
        #: The output's entry in the table of formats: how it is written (streamed or whole, by which writer).
        self.kind = path_format(self.path)
        self.format = self.kind.name
        check_written(self.path)
        self.force = force
        self.meta = meta
        #: What turns the input's missing codes and labels into the output's (another format).
        self._carrier = CodeCarrier(meta, self.format, repr(str(self.path))) if carries(meta, self.format) else None
        self.rows = 0
        self._frames: list[pd.DataFrame] = []
        self._writer: Any = None
        self._ctx: Any = None
        self._tmp: Path | None = None
        self._schema: pa.Schema | None = None
        self._sink: _DigestingFile | None = None
        self._text: _Transcoding | None = None
        self._background: ThreadPoolExecutor | None = None
        self._pending: Future | None = None
        self._closed = False
        #: SHA-256 of the file written, once :meth:`close` has run.
        self.sha256: str | None = None

    def __enter__(self) -> TableWriter:
        self._ctx = atomic_path(self.path, force=self.force, inputs=self.inputs, verify=self._check)
        self._tmp = self._ctx.__enter__()
        return self

    def close(self) -> None:
        """Finish and check the file (still under its temporary name) and compute :attr:`sha256`.

        Call it inside the block to learn the digest of what will appear under
        the target's name; calling it again does nothing.  Without this call
        the end of the ``with`` block finishes and checks the file, but
        :attr:`sha256` stays ``None``: only this method sets it.

        Raises
        ------
        WriteError
            What was written cannot be read back or does not hold every row.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = pathlib.Path(d) / "out.csv"
        ...     with TableWriter(out) as writer:
        ...         writer.write(pa.table({"x": [1, 2]}))
        ...         writer.close()
        ...         digest = writer.sha256  # known before the file is in place
        ...     print(digest == sha256_of(out), out.read_text().splitlines())
        True ['x', '1', '2']
        """
        if self._closed:
            return
        assert self._tmp is not None, "use TableWriter as a context manager"
        self._finish()
        self._verify(self._tmp)
        self.sha256 = self._sink.hexdigest() if self._sink is not None else sha256_of(self._tmp)
        self._closed = True

    def _check(self, tmp: Path) -> None:
        if not self._closed:
            self._verify(tmp)

    def write(self, table: pa.Table) -> None:
        """Append the rows of ``table`` (CSV and Parquet in the background, one chunk in flight at most).

        Parameters
        ----------
        table : pyarrow.Table
            The next rows; a table whose schema differs from the first one's
            is cast to it.

        Raises
        ------
        ValueError
            ``table`` has other columns than the first one, or cannot be cast to its types.
        OSError
            Writing the previous chunk failed (the end of the ``with`` block
            reports it as a :class:`~pramkit.errors.WriteError`, and no file appears).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     with TableWriter(pathlib.Path(d) / "out.parquet") as writer:
        ...         writer.write(pa.table({"x": pa.array([1, 2], pa.int64())}))
        ...         writer.write(pa.table({"x": pa.array([3], pa.int32())}))  # cast to int64
        ...     print(writer.rows, pq.read_table(pathlib.Path(d) / "out.parquet").schema.field("x").type)
        3 int64
        """
        assert self._tmp is not None, "use TableWriter as a context manager"
        if self._carrier is not None and not self.kind.whole:
            table = self._carrier.stream(table, self.rows)
        if self._schema is None:
            self._schema = table.schema
        elif table.schema != self._schema:
            table = table.cast(self._schema)
        if not self.kind.whole:  # streamed: CSV, Parquet, Arrow IPC
            if self._writer is None:
                self._writer = self._open(table.schema)
                self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pramkit-writer")
            self._wait()  # one chunk in flight at most: memory stays O(chunk)
            assert self._background is not None  # started with the writer
            self._pending = self._background.submit(self._write_chunk, table)
        else:
            self._frames.append(table.to_pandas())
        self.rows += table.num_rows

    def _wait(self) -> None:
        """Wait until the chunk being written in the background is written (raising what writing it raised)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _open(self, schema: pa.Schema) -> Any:
        """The streaming writer of a CSV, Parquet or Arrow IPC temporary (the writer the format's entry names).

        It writes through a :class:`_DigestingFile`, so that the digest of
        the file is known when it is closed, without reading it again; and
        :meth:`write` hands the chunks to a background thread, so that writing
        one chunk overlaps with reading and perturbing the next.
        """
        assert self._tmp is not None, "use TableWriter as a context manager"
        self._sink = _DigestingFile(self._tmp)
        if self.kind.reader == "csv":
            same = self.meta if self.meta is not None and self.meta.format == "csv" else TableMeta("csv", [])
            dialect = csv_dialect(same.sep, same.encoding)
            if not dialect.utf8:
                self._text = _Transcoding(self._sink, dialect.encoding, self.path)
            return _CsvWriter(self._sink if self._text is None else self._text, schema, dialect.sep, same.newline)
        if self.kind.reader == "feather":
            return _FeatherWriter(self._sink, schema)
        return pq.ParquetWriter(self._sink, schema)

    def _write_chunk(self, table: pa.Table) -> None:
        """Write one chunk (the low-level write of CSV and Parquet)."""
        with self._encoding_errors():
            self._writer.write_table(table)

    @contextlib.contextmanager
    def _encoding_errors(self) -> Iterator[None]:
        """A character the CSV file's encoding cannot write: the :class:`WriteError` that names it, however
        pyarrow passes on the error of the file object it writes to."""
        try:
            yield
        except Exception:
            if self._text is not None and self._text.failed is not None:
                raise self._text.failed from None
            raise

    def _finish(self) -> None:
        """Close the streaming writer, or write a Stata, SPSS or SAS transport file whole."""
        try:
            self._wait()
        finally:
            self._stop_background()
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                with self._encoding_errors():
                    try:
                        if self._carrier is not None and self.format == "parquet" and (
                                kept := self._carrier.parquet_metadata()):
                            writer.add_key_value_metadata(kept)
                    finally:
                        writer.close()
                    if self._text is not None:
                        self._text.finish()
            finally:
                if self._sink is not None:  # opened with the writer (_open)
                    self._sink.close()
        if self.kind.whole:
            self._write_stat()

    def _stop_background(self) -> None:
        if self._background is not None:
            self._background.shutdown(wait=True)
            self._background = None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is None:
            try:
                if not self._closed:
                    self._finish()
            except BaseException as err:
                if not self._ctx.__exit__(type(err), err, err.__traceback__):
                    raise
                return False
            return bool(self._ctx.__exit__(None, None, None))
        with contextlib.suppress(Exception):  # release the temporary; the error that stopped us matters
            self._wait()
        self._stop_background()
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
        return bool(self._ctx.__exit__(exc_type, exc, tb))

    def _verify(self, tmp: Path) -> None:
        """Check what the writer produced: a file holding every row, readable back."""
        size = tmp.stat().st_size
        if size == 0:
            raise OSError(errno.ENOSPC, "the writer left an empty file")
        try:
            if self.kind.reader == "parquet":
                written = pq.read_metadata(tmp).num_rows
            elif self.kind.reader == "stat":
                from pramkit.io_stat import rows_written

                written = rows_written(tmp, self.path.suffix)
            elif self.kind.reader == "feather":
                with pa.memory_map(str(tmp), "r") as mapped:
                    written = pa.ipc.open_file(mapped).count_rows()
            else:
                return
        except OSError:
            raise
        except Exception as exc:  # a truncated file cannot be read back
            raise WriteError(f"cannot write {str(self.path)!r}: the file written cannot be read back "
                             f"({exc}); is the disk full?") from None
        if written is not None and written >= 0 and written != self.rows:
            raise WriteError(f"cannot write {str(self.path)!r}: the file written holds {written} rows "
                             f"instead of {self.rows}; is the disk full?")

    def _write_stat(self) -> None:
        from pramkit.io_stat import write_stat

        assert self._tmp is not None, "use TableWriter as a context manager"
        frame = pd.concat(self._frames, ignore_index=True) if self._frames else pd.DataFrame()
        if self._carrier is not None:  # an input of another format: its codes and labels in this one's terms
            frame, labels = self._carrier.stat(frame)
            write_stat(frame, self._tmp, self.path, self.format, labels)
            return
        from pramkit.io_codes import origin

        same = self.meta if self.meta is not None and origin(self.meta) == self.format else None
        labels = dict(same.labels) if same is not None else {}
        if same is not None and self.format == "spss" and same.missing.ranges:
            labels["missing_ranges"] = {
                name: [{"lo": lo, "hi": hi} for lo, hi in ranges]
                for name, ranges in same.missing.ranges.items() if name in frame.columns
            }
        write_stat(frame, self._tmp, self.path, self.format, labels)


def csv_field(text: str, sep: str = CSV_SEP) -> str:
    """A text as a field of a CSV file: quoted (its quotes doubled) only where a reader needs it.

    A field is quoted if it holds the separator, a quote or a line break, or
    is empty: an empty field is a missing value, so an empty text is written
    ``""``.  Spaces are kept as they are, unquoted (pramkit's reader, pandas
    and pyarrow keep a field's spaces).

    Parameters
    ----------
    text : str
        The value.
    sep : str
        The field separator.

    Returns
    -------
    str

    Examples
    --------
    >>> csv_field("Zürich"), csv_field("married, spouse present"), csv_field('5" disk'), csv_field("")
    ('Zürich', '"married, spouse present"', '"5"" disk"', '""')
    >>> csv_field("a;b", sep=";"), csv_field("a,b", sep=";"), csv_field(" padded ")
    ('"a;b"', 'a,b', ' padded ')
    """
    if text and not any(c in text for c in (sep, '"', "\n", "\r")):
        return text
    return '"' + text.replace('"', '""') + '"'


def _csv_text(array: pa.Array) -> pa.Array:
    """The text (UTF-8 or bytes) of an Arrow array as a CSV writer writes it: text as it is, a category as its
    label, other types as Arrow casts them to text (as pyarrow's CSV writer does)."""
    if pa.types.is_dictionary(array.type):
        return _csv_text(array.dictionary_decode())
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
            or pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)):
        array = pc.cast(array, pa.string())
    return array


def csv_rows(table: pa.Table | pa.RecordBatch, sep: str = CSV_SEP, newline: str = "\n") -> bytes:
    """The rows of a table as CSV text (UTF-8, each row ended by ``newline``, no header).

    A missing value is an empty field; a value is quoted only where a reader
    needs it (:func:`csv_field`), in one compiled pass
    (:func:`pramkit.kernel._kernels.csv_rows`): a released file is no larger
    than its input when that was written with as few quotes.  Numbers, dates
    and the like are written as pyarrow's CSV writer writes them; a category
    as its label.

    Parameters
    ----------
    table : pyarrow.Table or pyarrow.RecordBatch
        The rows; at least one column.
    sep : str
        The field separator, one byte in UTF-8.
    newline : {"\\n", "\\r\\n"}
        The end of each row (a value holding CR or LF is quoted, so these are the only unquoted ones).

    Returns
    -------
    bytes

    Examples
    --------
    >>> csv_rows(pa.table({"x": ["a", "b,c", None, ""], "n": [1, None, 3, 4]}))
    b'a,1\\n"b,c",\\n,3\\n"",4\\n'
    >>> csv_rows(pa.table({"x": ["a", "b\\nc"], "n": [1, 2]}), newline="\\r\\n")
    b'a,1\\r\\n"b\\nc",2\\r\\n'
    """
    from pramkit.kernel import _kernels

    sep_byte = sep.encode()
    if len(sep_byte) != 1 or table.num_columns == 0:
        raise ValueError(f"csv_rows needs a one-byte separator and a column, not {sep!r} and "
                         f"{table.num_columns} columns")
    batches = table.to_batches() if isinstance(table, pa.Table) else [table]
    parts = []
    for batch in batches:
        columns = []
        for array in batch.columns:
            text = _csv_text(array)
            valid, offsets, data = text.buffers()[:3]
            width = 8 if pa.types.is_large_string(text.type) or pa.types.is_large_binary(text.type) else 4
            columns.append((offsets if offsets is not None else bytes(width), width,
                            data if data is not None else b"", valid if text.null_count else None, text.offset))
        parts.append(_kernels.csv_rows(columns, batch.num_rows, sep_byte[0], newline == "\r\n"))
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _FeatherWriter:
    """The streaming Arrow IPC writer of :class:`TableWriter`: each record batch written with buffers that hold
    its values and nothing else (:func:`exact_array`), so that the same release is the same bytes."""

    def __init__(self, sink: Any, schema: pa.Schema) -> None:
        self._writer = pa.ipc.new_file(sink, schema)

    def write_table(self, table: pa.Table) -> None:
        for batch in table.to_batches():
            if batch.num_rows:
                self._writer.write_batch(pa.RecordBatch.from_arrays([exact_array(c) for c in batch.columns],
                                                                    schema=batch.schema))

    def close(self) -> None:  # the sink is closed by TableWriter
        self._writer.close()


def _packed(valid: pa.Array) -> pa.Buffer:
    """A validity bitmap of ``valid`` (booleans) whose bits past its length are zero."""
    return pa.py_buffer(np.packbits(valid.to_numpy(zero_copy_only=False), bitorder="little").tobytes())


def exact_array(array: pa.Array) -> pa.Array:
    """``array`` with buffers that hold its values and nothing else: a text's bytes past its last value (what a
    kernel allocated and did not use), a bitmap's bits past its length and the values under its nulls are
    not copied or are zero.  An Arrow IPC file writes buffers as they are in memory, so that what memory held
    there would otherwise make the same release different bytes.  Nested types are returned as they are.

    Examples
    --------
    >>> a = pa.array(["ab", None, "c"]).slice(1)
    >>> b = exact_array(a)
    >>> b.to_pylist(), b.offset, b.buffers()[2].size
    ([None, 'c'], 0, 1)
    >>> exact_array(pa.array([1.5, None])).to_pylist()
    [1.5, None]
    """
    kind = array.type
    if pa.types.is_dictionary(kind):
        return pa.DictionaryArray.from_arrays(exact_array(array.indices), exact_array(array.dictionary),
                                             ordered=kind.ordered)
    valid = _packed(array.is_valid()) if array.null_count else None
    n = len(array)
    if pa.types.is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_string(kind) \
            or pa.types.is_large_binary(kind):
        wide = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
        _, offsets_buffer, data = array.buffers()[:3]
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)[array.offset:array.offset + n + 1]
        start, end = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
        values = b"" if data is None else data.slice(start, end - start).to_pybytes()  # a copy of the values alone
        return pa.Array.from_buffers(kind, n, [valid, pa.py_buffer((offsets - start).tobytes()), pa.py_buffer(values)],
                                     null_count=array.null_count)
    if pa.types.is_boolean(kind):
        values = _packed(pc.fill_null(array, False))
        return pa.Array.from_buffers(kind, n, [valid, values], null_count=array.null_count)
    if pa.types.is_primitive(kind) and array.null_count:  # numbers, dates, times: zero under the nulls
        storage = pa.int64() if kind.bit_width == 64 else pa.int32() if kind.bit_width == 32 else None
        if storage is None or pa.types.is_floating(kind):
            filled = pc.fill_null(array, pa.scalar(0, kind)) if pa.types.is_floating(kind) else None
        else:
            filled = pc.fill_null(array.view(storage), 0).view(kind)
        if filled is not None:
            return pa.Array.from_buffers(kind, n, [valid, filled.buffers()[1]], null_count=array.null_count)
    if array.offset or (array.null_count == 0 and array.buffers()[0] is not None):
        return pa.concat_arrays([array])
    return array


class _CsvWriter:
    """The streaming CSV writer of :class:`TableWriter`: the header, then :func:`csv_rows` of each table.

    pyarrow's CSV writer quotes every text value (``quoting_style="needed"``),
    which made a released file a quarter larger than its input.
    """

    def __init__(self, sink: Any, schema: pa.Schema, sep: str, newline: str = "\n") -> None:
        self._sink = sink
        self._sep = sep
        self._newline = newline
        sink.write((sep.join(csv_field(name, sep) for name in schema.names) + newline).encode())

    def write_table(self, table: pa.Table) -> None:
        if not table.num_columns:
            self._sink.write(self._newline.encode() * table.num_rows)
            return
        for batch in table.to_batches():  # each written as it is made: no copy of the whole chunk's text
            if batch.num_rows:
                self._sink.write(csv_rows(batch, self._sep, self._newline))

    def close(self) -> None:  # the sink is closed by TableWriter
        pass


class _Transcoding:
    """A file-like object that takes the UTF-8 bytes pyarrow's CSV writer writes and passes them on to ``sink``
    in another encoding (a CSV file written in the encoding of the CSV file read)."""

    def __init__(self, sink: _DigestingFile, encoding: str, path: Path) -> None:
        self._sink = sink
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._encoder = codecs.getincrementalencoder(encoding)()
        self._encoding = encoding
        self._path = path
        self._taken = 0
        #: The error of a value the encoding cannot write (raised by the writer's caller: pyarrow would wrap it).
        self.failed: WriteError | None = None

    def _put(self, text: str, final: bool = False) -> None:
        try:
            self._sink.write(self._encoder.encode(text, final))
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start:exc.end]
            self.failed = WriteError(
                f"cannot write {str(self._path)!r} in {self._encoding}: the character {bad!r} of the value near "
                f"{exc.object[max(exc.start - 20, 0):exc.end + 20]!r} has no {self._encoding} byte; write the "
                "release as UTF-8 or Parquet (another suffix or an input read in another encoding)")
            raise OSError(errno.EILSEQ, str(self.failed)) from None

    def write(self, data: Any) -> int:
        block = bytes(data)
        self._put(self._decoder.decode(block))
        self._taken += len(block)
        return len(block)

    def finish(self) -> None:
        """Write what the decoder and encoder still hold."""
        self._put(self._decoder.decode(b"", final=True), final=True)

    def tell(self) -> int:
        return self._taken

    def flush(self) -> None:
        self._sink.flush()

    def close(self) -> None:  # the sink is closed by TableWriter
        pass

    @property
    def closed(self) -> bool:
        return self._sink.closed

    def writable(self) -> bool:
        return True


class _DigestingFile:
    """A new binary file that computes the SHA-256 of what is written to it (the file-like object pyarrow's
    writers need)."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "wb")  # noqa: SIM115 (closed by the writer's close or abort)
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data: Any) -> int:
        self._hash.update(data)
        written = self._fh.write(data)
        self._size += written
        return written

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def writable(self) -> bool:
        return True

    def hexdigest(self) -> str:
        """SHA-256 of everything written, in hexadecimal."""
        return self._hash.hexdigest()


def write_table(table: pa.Table | pd.DataFrame, path: str | Path, *, force: bool = False,
                inputs: Iterable[PathLike | None] = ()) -> Path:
    """Write a whole table (Arrow or pandas) atomically.

    Parameters
    ----------
    table : pyarrow.Table or pandas.DataFrame
        The rows (a DataFrame's index is not written).
    path : str or pathlib.Path
        The output; its suffix gives the format.
    force : bool
        Replace an existing output.
    inputs : iterable of paths
        Files the output may never be.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    OutputExistsError
        The output exists and ``force`` is false.
    WriteError
        The file cannot be written.

    Examples
    --------
    A round trip through a file keeps the values:

    >>> import pathlib, tempfile
    >>> frame = pd.DataFrame({"sex": ["m", "f"], "age": [31, 45]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = write_table(frame, pathlib.Path(d) / "out.parquet")
    ...     read_table(out).equals(frame)
    True
    """
    if isinstance(table, pd.DataFrame):
        table = pandas_table(table)
    with TableWriter(path, force=force, inputs=inputs) as w:
        w.write(table)
    return Path(path)


def write_with_receipt(out: str | Path, receipt: str | Path, table: pa.Table, doc: dict[str, Any], *,
                       meta: Any = None, inputs: Sequence[PathLike] = (), force: bool = False) -> str:
    """Write a released file and its JSON receipt, both or neither: the file is renamed into place first, then the
    receipt, whose ``released`` entry names the file (its name, rows and SHA-256); on any failure neither is left.

    Parameters
    ----------
    out, receipt : str or pathlib.Path
        The released file (its suffix gives its format) and its receipt.
    table : pyarrow.Table
        The released records.
    doc : dict
        The receipt's other fields (its ``released`` entry is added here).
    meta : TableMeta, optional
        The file read (its format's metadata carried over, :class:`TableWriter`).
    inputs : sequence of paths
        Files neither output may replace.
    force : bool
        Replace existing outputs.

    Returns
    -------
    str
        The released file's SHA-256.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out, receipt = pathlib.Path(d, "r.csv"), pathlib.Path(d, "r.csv.note.json")
    ...     digest = write_with_receipt(out, receipt, pa.table({"a": ["x", "y"]}), {"format": "note"})
    ...     print(json.loads(receipt.read_text())["released"]["rows"], digest == sha256_of(out))
    2 True
    """
    out, receipt = Path(out), Path(receipt)
    placed = False
    try:
        with atomic_path(receipt, force=force, inputs=[*inputs, out]) as tmp:
            with TableWriter(out, force=force, inputs=[*inputs, receipt], meta=meta) as writer:
                writer.write(table)
                writer.close()
                sha = str(writer.sha256)
                doc = {**doc, "released": {"file": out.name, "rows": table.num_rows, "sha256": sha}}
            placed = True
            tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    except BaseException:
        if placed:  # the released file without its receipt (or beside an earlier one) is not left behind
            for path in (out, receipt):
                path.unlink(missing_ok=True)
        raise
    return sha


def sha256_of(path: str | Path) -> str:
    """SHA-256 of a file, to record which input a release came from.

    Parameters
    ----------
    path : str or pathlib.Path
        The file, read in blocks of 1 MiB, or a folder of part files
        (:func:`dataset_parts`): the SHA-256 of its parts' names and digests, in order.

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    DataError
        The file cannot be read.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.txt"
    ...     _ = f.write_bytes(b"abc")
    ...     sha256_of(f) == hashlib.sha256(b"abc").hexdigest()
    True
    """
    h = hashlib.sha256()
    if Path(path).is_dir():
        for part in dataset_parts(path)[1]:
            h.update(part.name.encode() + b"\0" + bytes.fromhex(sha256_of(part)))
        return h.hexdigest()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise DataError(file_error(exc, path, "read")) from None
    return h.hexdigest()


def paired_chunks(original: Iterator[pa.Table], released: Iterator[pa.Table],
                   rows: list[int]) -> Iterator[tuple[pa.Table, pa.Table]]:
    """Chunks of the same rows of two files read chunk by chunk, while both have rows.

    The two files' chunks need not end at the same rows: each pair is cut to the rows both hold.

    Parameters
    ----------
    original, released : iterator of pyarrow.Table
        The chunks of each file, in row order.
    rows : list of int
        Two counters: the rows of each file are added to them, to the end of both files (so a
        difference in the number of records is seen once the pairs are spent).

    Yields
    ------
    tuple of pyarrow.Table
        A chunk of each file, of the same rows.

    Examples
    --------
    >>> a = iter([pa.table({"x": [1, 2, 3]}), pa.table({"x": [4]})])
    >>> b = iter([pa.table({"y": [5]}), pa.table({"y": [6, 7, 8, 9]})])
    >>> rows = [0, 0]
    >>> [(p.column("x").to_pylist(), q.column("y").to_pylist()) for p, q in paired_chunks(a, b, rows)]
    [([1], [5]), ([2, 3], [6, 7]), ([4], [8])]
    >>> rows
    [4, 5]
    """
    sources = (original, released)
    empty = pa.table({})
    pending = [empty, empty]
    while True:
        for i in (0, 1):
            while not pending[i].num_rows:
                nxt = next(sources[i], None)
                if nxt is None:
                    break
                rows[i] += nxt.num_rows
                pending[i] = nxt
        a, b = pending
        if not a.num_rows or not b.num_rows:
            for i in (0, 1):      # count what is left
                for rest in sources[i]:
                    rows[i] += rest.num_rows
            return
        n = min(a.num_rows, b.num_rows)
        yield a.slice(0, n), b.slice(0, n)
        pending = [a.slice(n), b.slice(n)]
