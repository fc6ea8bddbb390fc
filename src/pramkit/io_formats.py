"""The file formats pramkit reads and writes: one table, one entry per format.

Every fact about a format that the readers, writers, the Spark engine, the receipts, the audit and the app
ask of it stands in its :class:`FileFormat` entry of :data:`FILE_FORMATS`: its suffixes (those read, those
written), how it is read (in batches or whole, and by which of :mod:`pramkit.io`'s readers), whether it
declares value labels, which missing-code system it keeps, whether the Spark engine reads it, whether a
dataset folder's part files may be of it, whether its files record when they were written.  The lists the
modules kept by hand are derived from it (:data:`pramkit.io.FORMATS`, :data:`pramkit.io_stat.STAT_FORMATS`,
:data:`pramkit.io_stat.CODE_SYSTEMS`, :data:`pramkit.source.READ_WHOLE`, :data:`pramkit.audit.release.STAMPED`,
:data:`pramkit.app.ui.DATA_FILES`), and the code asks the table when it runs (:func:`file_format`,
:func:`format_of_suffix`): a format added here is read, written, offered by the app and accepted by the
command line, with no other list to keep in step.

This module reads no file and imports no data library (a command's ``--help`` starts light).

Examples
--------
>>> file_format("spss").suffixes, file_format("spss").whole, file_format("csv").whole
(('.sav', '.zsav'), True, False)
>>> format_of_suffix(".XPT").name, format_of_suffix(".xlsx") is None
('sas', True)
>>> [f.name for f in FILE_FORMATS.values() if f.spark]
['csv', 'parquet']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: The readers of :mod:`pramkit.io` an entry may name (:attr:`FileFormat.reader`).
READERS = ("csv", "parquet", "stat", "feather")


@dataclass(frozen=True)
class FileFormat:
    """One file format: what pramkit knows of it.

    Parameters
    ----------
    name : str
        The format's name, as :func:`pramkit.io.table_format` returns it and messages print it.
    suffixes : tuple of str
        Every suffix of its files (lower case, with the dot); the first is the one pramkit names a file with.
    title : str
        Its name in prose (``"SPSS"``).
    called : str
        How a message names one of its files, article included (``"an SPSS"``: "an SPSS file holds ...").
    reader : str
        The reader of :mod:`pramkit.io` that reads it (one of :data:`READERS`), which is also its writer.
    written : tuple of str, optional
        The suffixes pramkit writes (default: every suffix); ``()``: none.
    unwritable : str
        Why a suffix read but not written cannot be written, and what to write instead (the message's tail).
    whole : bool
        Read (and written) whole, not in batches: a :class:`pramkit.source.Source` keeps what it read of it.
    value_labels : bool
        Its files declare value labels, whose codes are categories (:func:`pramkit.io.value_label_categories`).
    codes : str, optional
        The missing values it keeps as codes, in words (the ledger names them); ``None``: none but null.
    letter_codes : bool
        Its missing codes are letters in a column of numbers (Stata's ``.a``, SAS's ``.A``), read as text.
    string_limit : int, optional
        The longest text value, in bytes, its files hold.
    spark : bool
        The Spark engine reads and writes it.
    parts : bool
        A dataset folder's part files may be of it (:func:`pramkit.io.dataset_parts`).
    stamped : bool
        Its files record when they were written: two files of the same records differ in their bytes (the
        audit compares them by content).
    dialect : bool
        Text read with the CSV reading settings (``sep``, ``encoding``, ``decimal``, ``na_values``).
    declares_rows : bool
        A file declares its number of rows before its records are read.

    Examples
    --------
    >>> f = file_format("sas")
    >>> f.suffixes, f.written, f.writes(".sas7bdat"), f.writes(".xpt"), f.stamped
    (('.sas7bdat', '.xpt'), ('.xpt',), False, True, True)
    """

    name: str
    suffixes: tuple[str, ...]
    title: str
    called: str
    reader: str
    written: tuple[str, ...] | None = None
    unwritable: str = ""
    whole: bool = False
    value_labels: bool = False
    codes: str | None = None
    letter_codes: bool = False
    string_limit: int | None = None
    spark: bool = False
    parts: bool = False
    stamped: bool = False
    dialect: bool = False
    declares_rows: bool = True

    def __post_init__(self) -> None:
        if self.written is None:
            object.__setattr__(self, "written", self.suffixes)

    def writes(self, suffix: str) -> bool:
        """Whether pramkit writes files of this format with ``suffix`` (letter case does not matter)."""
        return suffix.lower() in (self.written or ())


#: The file formats, by name: the one table every list of formats and suffixes is derived from.
FILE_FORMATS: dict[str, FileFormat] = {f.name: f for f in (
    FileFormat("csv", (".csv", ".tsv", ".txt"), "CSV", "a CSV", "csv", parts=True, spark=True, dialect=True,
               declares_rows=False),
    FileFormat("parquet", (".parquet", ".pq"), "Parquet", "a Parquet", "parquet", parts=True, spark=True),
    FileFormat("stata", (".dta",), "Stata", "a Stata", "stat", whole=True, value_labels=True, stamped=True,
               codes="Stata's extended missing values .a-.z", letter_codes=True),
    FileFormat("spss", (".sav", ".zsav"), "SPSS", "an SPSS", "stat", whole=True, value_labels=True, stamped=True,
               codes="SPSS's user-missing values", string_limit=32_767),
    FileFormat("sas", (".sas7bdat", ".xpt"), "SAS", "a SAS transport", "stat", written=(".xpt",),
               unwritable="no open writer of .sas7bdat files exists; write .xpt (SAS transport, which SAS reads "
                          "with PROC CIMPORT or LIBNAME XPORT) or .parquet",
               whole=True, stamped=True, codes="SAS's special missing values .A-.Z and ._", letter_codes=True,
               string_limit=32_767),
    FileFormat("feather", (".arrow", ".feather"), "Arrow IPC (Feather)", "an Arrow IPC", "feather"),
)}


def formats() -> Iterator[FileFormat]:
    """The entries of :data:`FILE_FORMATS`, in its order (read when called: a format added to the table counts).

    Examples
    --------
    >>> [f.name for f in formats()][:2]
    ['csv', 'parquet']
    """
    return iter(list(FILE_FORMATS.values()))


def file_format(name: str) -> FileFormat | None:
    """The entry of the format ``name``, or ``None`` (a frame's kind, such as ``"pandas"``, is no file format).

    Examples
    --------
    >>> file_format("stata").title, file_format("pandas")
    ('Stata', None)
    """
    return FILE_FORMATS.get(name)


def format_of_suffix(suffix: str) -> FileFormat | None:
    """The entry of the format whose files end in ``suffix`` (letter case does not matter), or ``None``.

    Examples
    --------
    >>> format_of_suffix(".Parquet").name, format_of_suffix(".gz")
    ('parquet', None)
    """
    wanted = suffix.lower()
    return next((f for f in formats() if wanted in f.suffixes), None)


def format_of_path(path: str | Path) -> FileFormat | None:
    """:func:`format_of_suffix` of a file's name.

    Examples
    --------
    >>> format_of_path("out/survey.zsav").name
    'spss'
    """
    return format_of_suffix(Path(path).suffix)


def suffix_formats() -> dict[str, str]:
    """Every suffix pramkit reads and its format's name, in the table's order (:data:`pramkit.io.FORMATS`).

    Examples
    --------
    >>> suffix_formats()[".tsv"], suffix_formats()[".sav"]
    ('csv', 'spss')
    """
    return {s: f.name for f in formats() for s in f.suffixes}


def names_where(fact: str) -> tuple[str, ...]:
    """The names of the formats whose attribute ``fact`` is true, in the table's order.

    Examples
    --------
    >>> names_where("whole"), names_where("spark")
    (('stata', 'spss', 'sas'), ('csv', 'parquet'))
    """
    return tuple(f.name for f in formats() if getattr(f, fact))


def titles_where(fact: str, joined: str = " and ") -> str:
    """The titles of the formats whose attribute ``fact`` is true, joined (``"CSV and Parquet"``), for messages.

    Examples
    --------
    >>> titles_where("spark"), titles_where("parts", " or ")
    ('CSV and Parquet', 'CSV or Parquet')
    """
    return joined.join(f.title for f in formats() if getattr(f, fact))


def whole(name: str) -> bool:
    """Whether the format ``name`` is read whole (``False`` for a frame's kind).

    Examples
    --------
    >>> whole("stata"), whole("parquet"), whole("polars")
    (True, False, False)
    """
    f = file_format(name)
    return f is not None and f.whole


__all__ = ["FILE_FORMATS", "READERS", "FileFormat", "file_format", "format_of_path", "format_of_suffix", "formats",
           "names_where", "suffix_formats", "titles_where", "whole"]
