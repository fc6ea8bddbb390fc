"""The file a release starts from: its variables, value labels, missing codes and a preview.

:func:`describe_file` streams the file once (memory bounded by a chunk and the
distinct values kept per column, at most :data:`DISTINCT_SHOWN`), so a file
larger than memory can be opened; only :data:`PREVIEW_ROWS` rows are kept to
be shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.io import iter_batches
from pramkit.io_formats import file_format
from pramkit.progress import progress
from pramkit.recode import code_text as _text
from pramkit.source import Source as OpenedSource

#: Rows of the file kept to be shown.
PREVIEW_ROWS = 20

#: Distinct values counted per column; beyond it a column is shown as having more.
DISTINCT_SHOWN = 1_000


@dataclass(frozen=True)
class VariableInfo:
    """One column of the file as the workbench shows it.

    Parameters
    ----------
    name : str
        The column.
    dtype : str
        Its type as read (Arrow's name: ``string``, ``int64``, ...).
    distinct : int
        Distinct non-missing values (at most :data:`DISTINCT_SHOWN`; see ``more``).
    missing : int
        Missing values (empty fields, missing markers, SPSS user-missing codes).
    value_labels : mapping or None
        Stata or SPSS value labels (code -> label), if the file declares them.
    more : bool
        More than :data:`DISTINCT_SHOWN` distinct values (``distinct`` is then a lower bound).

    Examples
    --------
    >>> VariableInfo("sex", "string", 2, 1).summary()
    '2 values, 1 missing'
    """

    name: str
    dtype: str
    distinct: int
    missing: int
    value_labels: Mapping[Any, str] | None = None
    more: bool = False

    def summary(self) -> str:
        """Its values and missing values in words.

        Examples
        --------
        >>> VariableInfo("id", "int64", DISTINCT_SHOWN, 0, more=True).summary()
        'more than 1,000 values, 0 missing'
        """
        values = f"more than {self.distinct:,}" if self.more else f"{self.distinct:,}"
        return f"{values} values, {self.missing:,} missing"


@dataclass(frozen=True)
class Source(OpenedSource):
    """An opened file: where it is, what it holds, a preview.

    A :class:`pramkit.source.Source` (the file opened once: its digest, value labels and records are
    read when first asked for, then kept) with what the workbench shows of it; a workflow given it
    reads the file as it says (``na_values``, ``sep``, ``encoding``).

    Parameters
    ----------
    path : pathlib.Path
        The file (the workbench's copy for an upload or the built-in census).
    label : str
        How to name it to the user.
    format : str
        ``csv``, ``parquet``, ``dta`` or ``sav``.
    rows : int
        Records.
    variables : tuple of VariableInfo
        Its columns, in file order.
    preview : pandas.DataFrame
        The first :data:`PREVIEW_ROWS` rows.
    missing_codes : tuple of str
        The texts (CSV) or codes (SPSS user-missing) the file uses for missing.
    na_values : tuple of str
        The texts read as missing in a CSV file besides the empty field.
    categories : pathlib.Path or None
        A codebook that comes with the file (the built-in census declares its categories).
    sep, encoding : str
        How a CSV file is read.
    preview_codes : pandas.DataFrame or None
        The same first rows of a Stata or SPSS file with its missing codes as they are in the file
        (read as missing in ``preview``), to show which code each missing value had.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("sex,age\\nm,31\\nNA,45\\nf,\\n")
    ...     src = describe_file(f)
    ...     opened = src.kind, src.described == str(f), src.columns  # a pramkit.source.Source
    >>> src.rows, [v.summary() for v in src.variables], src.missing_codes
    (3, ['2 values, 1 missing', '2 values, 1 missing'], ('NA',))
    >>> list(src.variables_frame().columns)
    ['variable', 'type', 'values', 'missing', 'value labels']
    >>> opened
    ('file', True, ['sex', 'age'])
    """

    path: Path = field()  # field(): not the cached answers of pramkit.source.Source, which it holds here
    label: str = field()
    format: str = field()
    rows: int
    variables: tuple[VariableInfo, ...]
    preview: pd.DataFrame = field(repr=False)
    missing_codes: tuple[str, ...] = ()
    na_values: tuple[str, ...] = NA_VALUES
    categories: Path | None = None
    sep: str = CSV_SEP
    encoding: str = CSV_ENCODING
    preview_codes: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def data(self) -> Path:
        """What was opened: the file."""
        return self.path

    @property
    def reading(self) -> dict[str, Any]:
        """How every step reads the file: ``na_values``, ``sep`` and ``encoding``, as keyword arguments."""
        return {"na_values": self.na_values, "sep": self.sep, "encoding": self.encoding}

    @property
    def names(self) -> list[str]:
        """The column names, in file order."""
        return [v.name for v in self.variables]

    def labels(self, column: str) -> Mapping[Any, str] | None:
        """The value labels of ``column`` (code -> label), or None."""
        for v in self.variables:
            if v.name == column:
                return v.value_labels or None
        return None

    def shown(self, column: str, value: Any, code: Any = None) -> str:
        """A value of ``column`` as the page shows it (:func:`shown_value` with the column's labels)."""
        return shown_value(value, self.labels(column), code)

    def shown_preview(self) -> pd.DataFrame:
        """The first rows as the page shows them: value labels instead of codes, and each missing value as
        "(missing)", with the file's missing code and its label when it has one.

        Examples
        --------
        >>> import pathlib, tempfile, pyreadstat
        >>> with tempfile.TemporaryDirectory() as d:
        ...     f = str(pathlib.Path(d) / "a.sav")
        ...     pyreadstat.write_sav(pd.DataFrame({"sex": [1.0, 2.0, 9.0, None, 3.0]}), f, missing_ranges={"sex": [9]},
        ...                          variable_value_labels={"sex": {1: "male", 2: "female", 9: "refused"}})
        ...     describe_file(f).shown_preview()["sex"].tolist()
        ['male', 'female', '(missing: 9 refused)', '(missing)', '3']
        """
        out = {}
        for name in self.preview.columns:
            codes = (self.preview_codes[name].tolist() if self.preview_codes is not None
                     and name in self.preview_codes.columns and len(self.preview_codes) == len(self.preview)
                     else [None] * len(self.preview))
            out[name] = [self.shown(name, x, c) for x, c in zip(self.preview[name].tolist(), codes)]
        return pd.DataFrame(out, columns=self.preview.columns)

    def variables_frame(self) -> pd.DataFrame:
        """One row per variable: name, type, distinct values, missing values, value labels."""
        return pd.DataFrame({
            "variable": [v.name for v in self.variables],
            "type": [v.dtype for v in self.variables],
            "values": [f"> {v.distinct:,}" if v.more else f"{v.distinct:,}" for v in self.variables],
            "missing": [f"{v.missing:,}" for v in self.variables],
            "value labels": ["" if not v.value_labels else
                             "; ".join(f"{_text(k)} = {lab}" for k, lab in list(v.value_labels.items())[:8])
                             + (" ..." if len(v.value_labels) > 8 else "") for v in self.variables],
        })


class _Column:
    """Distinct values (up to :data:`DISTINCT_SHOWN`) and missing values of one column, chunk by chunk."""

    def __init__(self) -> None:
        self.values: set[Any] = set()
        self.more = False
        self.missing = 0

    def add(self, column: pa.ChunkedArray) -> None:
        self.missing += column.null_count
        if self.more:
            return
        self.values.update(pc.unique(column.drop_null()).to_pylist())
        if len(self.values) > DISTINCT_SHOWN:
            self.values = set(list(self.values)[:DISTINCT_SHOWN])
            self.more = True


def describe_file(path: str | Path, *, label: str | None = None, na_values: Sequence[str] = NA_VALUES,
                  categories: Path | None = None, quiet: bool = True, sep: str = CSV_SEP,
                  encoding: str = CSV_ENCODING) -> Source:
    """Read a file once: its columns, their distinct and missing values, labels, and a preview.

    Parameters
    ----------
    path : str or pathlib.Path
        A CSV, Parquet, Stata or SPSS file.
    label : str, optional
        How to name it (default: its file name).
    na_values : sequence of str
        Texts that mean missing in a CSV file besides the empty field.
    categories : pathlib.Path, optional
        A codebook that comes with the file.
    quiet : bool
        No progress bar (progress still reaches a :func:`pramkit.progress.watching` callback).
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`); every
        later step reads the file the same way (:attr:`Source.reading`).

    Returns
    -------
    Source

    Raises
    ------
    DataError
        The file is missing, empty, or not readable as its format.

    Examples
    --------
    See :class:`Source`.
    """
    p = Path(path)
    meta, tables = iter_batches(p, na_values=tuple(na_values), sep=sep, encoding=encoding)
    columns: dict[str, _Column] = {name: _Column() for name in meta.columns}
    dtypes: dict[str, str] = {}
    preview: list[pd.DataFrame] = []
    rows = 0
    entry = file_format(meta.format)
    counted = entry is not None and not entry.declares_rows  # a CSV file's rows: its lines, before it is parsed
    total = meta.rows if meta.rows is not None or not counted else lines_in(p) - 1
    with progress(total=total, desc="reading", unit="rows", quiet=quiet) as bar:
        for table in tables:
            if rows < PREVIEW_ROWS:
                preview.append(table.slice(0, PREVIEW_ROWS - rows).to_pandas())
            for name in meta.columns:
                columns[name].add(table.column(name))
                dtypes.setdefault(name, str(table.schema.field(name).type))
            rows += table.num_rows
            bar.update(table.num_rows)
    value_labels = meta.labels.get("variable_value_labels", {}) or {}
    variables = tuple(
        VariableInfo(name, dtypes.get(name, "null"), len(col.values), col.missing, value_labels.get(name), col.more)
        for name, col in columns.items()
    )
    frame = pd.concat(preview, ignore_index=True) if preview else pd.DataFrame(columns=meta.columns)
    return Source(p, label or p.name, meta.format, rows, variables, frame, _codes(meta.missing), tuple(na_values),
                  categories, sep, encoding, _raw_preview(p, meta.format))


def is_missing(value: Any) -> bool:
    """A missing value as pandas and Arrow give it: None, NaN or pandas' NA.

    Examples
    --------
    >>> is_missing(None), is_missing(float("nan")), is_missing(pd.NA), is_missing(""), is_missing(0)
    (True, True, True, False, False)
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def shown_value(value: Any, labels: Mapping[Any, str] | None = None, code: Any = None) -> str:
    """A value as the page shows it: its value label when the file declares one, else the value (a whole
    number without ``.0``); a missing value as "(missing)", with the file's missing ``code`` (and its
    label) when it is known.

    Parameters
    ----------
    value : object
        The value as read (a missing code is read as missing).
    labels : mapping, optional
        The column's value labels, code -> label.
    code : object, optional
        The value as it is in the file (an SPSS user-missing or Stata extended missing code).

    Returns
    -------
    str

    Examples
    --------
    >>> labels = {1: "male", 2: "female", -9: "refused"}
    >>> shown_value(1.0, labels), shown_value(3.0, labels), shown_value(float("nan"), labels)
    ('male', '3', '(missing)')
    >>> shown_value(None, labels, -9.0), shown_value(None, labels, "a"), shown_value("0-9, child")
    ('(missing: -9 refused)', '(missing: a)', '0-9, child')
    >>> shown_value("2", labels)             # a Stata column of codes and .a-.z codes is read as text
    'female'

    """
    if is_missing(value):
        if code is None or is_missing(code):
            return "(missing)"
        label = (labels or {}).get(code)
        return f"(missing: {_text(code)}{'' if label is None else ' ' + label})"
    if labels:
        label = labels.get(value)
        if label is None and isinstance(value, str):  # a Stata column of codes and extended missing codes
            label = labels.get(_number(value))        # is read as text
        if label is not None:
            return str(label)
    return _text(value)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _raw_preview(path: Path, fmt: str) -> pd.DataFrame | None:
    """The first rows of a Stata or SPSS file with its missing codes as they are in the file (None for
    other formats, or when the file cannot be read so)."""
    entry = file_format(fmt)
    if entry is None or not entry.value_labels:  # the formats of value labels and their codes (io_formats)
        return None
    import pyreadstat

    reader = pyreadstat.read_dta if fmt == "stata" else pyreadstat.read_sav
    try:
        frame, _ = reader(str(path), user_missing=True, row_limit=PREVIEW_ROWS)
    except Exception:  # pyreadstat's own errors: the preview then shows "(missing)" alone
        return None
    return frame


def lines_in(path: Path, block: int = 1 << 23) -> int:
    """The lines of a file (its line breaks, and a last line without one), counted in blocks of ``block`` bytes:
    a CSV file's rows for a progress bar before it is parsed (a field holding a line break counts twice).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = Path(d) / "a.csv"
    ...     _ = f.write_text("a\\n1\\n2")
    ...     lines_in(f), lines_in(f, block=1)
    (3, 3)
    """
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def _codes(missing: Any) -> tuple[str, ...]:
    """The missing markers of a file in words: CSV texts and SPSS user-missing values and ranges."""
    ranges = [f"{column}: {lo}..{hi}" if lo != hi else f"{column}: {lo}"
              for column, spans in sorted(missing.ranges.items()) for lo, hi in spans]
    return tuple(missing.texts) + tuple(ranges)
