"""Stata, SPSS and SAS files through pyreadstat: extended missing codes, labels and formats kept.

Statistical packages have several missing values besides the plain one, and
pramkit keeps each exactly, as the code it is, never perturbed, and writes it
back (the ledger names it: :func:`missing_code_words`):

* Stata's extended missing values ``.a``-``.z``;
* SAS's special missing values ``.A``-``.Z`` and ``._`` (``.sas7bdat`` through
  pyreadstat; ``.xpt`` through :mod:`pramkit.io_sas`);
* SPSS's user-missing values and ranges (declared per variable).

A numeric column holding extended or special missing values is read as text:
each number as its one text (:func:`pramkit.codebook.canonical`: ``3``,
``2.5``), each code as Stata or SAS writes it (``.a``, ``.A``, ``._``), and
:class:`pramkit.codebook.MissingCodes` names the codes, so that readers
that do not keep them see missing values.  A writer of the same format turns
the column back into numbers and codes; a writer of another format keeps what
it can of them (:mod:`pramkit.io_codes`).  An empty text is these formats'
missing text, read as missing.

Variable and value labels, display formats (Stata ``%9.0g``, SPSS ``F8.2``,
SAS ``BEST12``), SPSS display widths and measures, the file label and the SAS
member name are read into :attr:`pramkit.io.TableMeta.labels` and written back
by a writer of the same format.  pramkit reads ``.sas7bdat`` and reads and
writes ``.xpt`` (SAS transport): no open writer of ``.sas7bdat`` exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit.codebook import MissingCodes, canonical
from pramkit.errors import DataError, ParameterError, PramkitError, WriteError
from pramkit.io_codes import check_string_widths, numbers_and_codes
from pramkit.io_formats import file_format, format_of_path, format_of_suffix, formats

#: File suffix -> format, for the files read through pyreadstat (:data:`pramkit.io.FORMATS` holds them all):
#: derived from the table of formats (:data:`pramkit.io_formats.FILE_FORMATS`).
STAT_FORMATS = {s: f.name for f in formats() if f.reader == "stat" for s in f.suffixes}
#: What each format calls the missing values it keeps as codes, for the ledger and messages (the table's).
CODE_SYSTEMS = {f.name: f.codes for f in formats() if f.codes}
#: The metadata pyreadstat reads that a writer of the same format gives back, by format:
#: (name in pyreadstat's metadata, name of the writer's argument).
KEPT_META = {
    "stata": (("original_variable_types", "variable_format"),),
    "spss": (("original_variable_types", "variable_format"), ("variable_display_width", "variable_display_width"),
             ("variable_measure", "variable_measure")),
    "sas": (("original_variable_types", "variable_format"),),
}


def _reader(suffix: str) -> tuple[Any, dict[str, Any]]:
    """pyreadstat's reader of a Stata, SPSS or SAS file (by its suffix) and the options that keep its missing codes."""
    import pyreadstat

    suffix = suffix.lower()
    entry = format_of_suffix(suffix)
    name = None if entry is None else entry.name
    if name == "stata":
        return pyreadstat.read_dta, {"user_missing": True}
    if name == "spss":
        return pyreadstat.read_sav, {"user_missing": True}
    if suffix == ".sas7bdat":
        return pyreadstat.read_sas7bdat, {"user_missing": True}
    return pyreadstat.read_xport, {}


#: The longest labels each format holds, as (limit, unit): the writers cut longer ones short
#: (Stata value labels, SPSS labels) or fail with a message naming no column (Stata variable labels).
LABEL_LIMITS = {
    "stata": {"column": (80, "characters"), "value": (32_000, "bytes")},
    "spss": {"column": (256, "bytes"), "value": (120, "bytes")},
}


def check_labels(fmt: str, column_labels: dict[str, Any], value_labels: dict[str, Any], where: str) -> None:
    """:class:`WriteError` for a variable or value label longer than a Stata or SPSS file holds
    (:data:`LABEL_LIMITS`), naming the column: never a label cut short or a file left unwritten
    without saying which label.

    Parameters
    ----------
    fmt : str
        ``"stata"`` or ``"spss"`` (other formats hold any label).
    column_labels : dict
        Column -> its label (or None).
    value_labels : dict
        Column -> {value: label}.
    where : str
        The output, for the message.

    Raises
    ------
    WriteError
        A label is too long; the message names the column, the length and the limit.

    Examples
    --------
    >>> check_labels("spss", {"roof": "Main roof material"}, {"roof": {2: "tiles"}}, "'out.sav'")
    >>> check_labels("spss", {}, {"roof": {2: "é" * 61}}, "'out.sav'")
    Traceback (most recent call last):
    ...
    pramkit.errors.WriteError: cannot write 'out.sav': the label of value 2 of column 'roof' has 122 bytes; an SPSS file holds at most 120: shorten it, or write .parquet or .csv
    """
    limits = LABEL_LIMITS.get(fmt)
    if limits is None:
        return
    found = [("column", f"the label of column {c!r}", text) for c, text in column_labels.items() if text]
    found += [("value", f"the label of value {v!r} of column {c!r}", text)
              for c, labels in value_labels.items() for v, text in (labels or {}).items() if text]
    name = "a Stata" if fmt == "stata" else "an SPSS"
    for kind, what, text in found:
        limit, unit = limits[kind]
        size = len(str(text)) if unit == "characters" else len(str(text).encode("utf-8"))
        if size > limit:
            raise WriteError(f"cannot write {where}: {what} has {size} {unit}; {name} file holds at most {limit}: "
                             "shorten it, or write .parquet or .csv")


def check_stat_output(path: str | Path) -> None:
    """:class:`ParameterError` for an output pramkit cannot write: a ``.sas7bdat`` file (the table of formats'
    :attr:`pramkit.io_formats.FileFormat.written`; :func:`pramkit.io.check_written` asks it of every format).

    Parameters
    ----------
    path : str or pathlib.Path
        The output.

    Raises
    ------
    ParameterError
        The output is a ``.sas7bdat`` file.

    Examples
    --------
    >>> check_stat_output("released.xpt")
    >>> check_stat_output("released.sas7bdat")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: pramkit cannot write 'released.sas7bdat': no open writer of .sas7bdat files exists; write .xpt (SAS transport, which SAS reads with PROC CIMPORT or LIBNAME XPORT) or .parquet
    """
    entry = format_of_path(path)
    if entry is not None and entry.reader == "stat" and not entry.writes(Path(path).suffix):
        raise ParameterError(f"pramkit cannot write {str(path)!r}: {entry.unwritable}")


def stat_columns(path: Path, fmt: str) -> list[str]:
    """The columns of a Stata, SPSS or SAS file, from its metadata.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    fmt : str
        Its format, for messages.

    Returns
    -------
    list of str

    Raises
    ------
    DataError
        The file cannot be read.

    Examples
    --------
    >>> import pathlib, tempfile, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.xpt"
    ...     pyreadstat.write_xport(pd.DataFrame({"x": [1.0], "y": ["a"]}), str(f))
    ...     stat_columns(f, "sas")
    ['x', 'y']
    """
    reader, _ = _reader(path.suffix)
    try:
        return list(reader(str(path), metadataonly=True)[1].column_names)
    except Exception as exc:  # pyreadstat raises its own ReadstatError and others
        raise DataError(f"cannot read {fmt} file {str(path)!r}: {exc}") from None


def read_stat(path: Path, fmt: str,
              columns: Sequence[str] | None) -> tuple[pd.DataFrame, dict[str, Any], MissingCodes]:
    """Read a Stata, SPSS or SAS file whole, its missing codes kept as they are.

    Parameters
    ----------
    path : pathlib.Path
        The file (``.dta``, ``.sav``, ``.zsav``, ``.sas7bdat``, ``.xpt``).
    fmt : str
        ``"stata"``, ``"spss"`` or ``"sas"`` (:func:`pramkit.io.table_format`).
    columns : sequence of str, optional
        The columns to read; default all of them.

    Returns
    -------
    frame : pandas.DataFrame
        The records; a numeric column with extended or special missing values as text.
    labels : dict
        ``column_labels``, ``variable_value_labels``, the formats of :data:`KEPT_META`,
        ``file_label``, ``table_name`` (SAS), ``storage`` (each column's storage type) and
        ``coded``: the columns turned into text.
    missing : pramkit.codebook.MissingCodes
        The codes of each column (SPSS user-missing ranges; the extended codes found).

    Raises
    ------
    DataError
        The file cannot be read (check ``columns`` first: :func:`stat_columns`).

    Examples
    --------
    >>> import pathlib, tempfile, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.dta"
    ...     frame = pd.DataFrame({"age": pd.Series([31.0, "a", 45.5, "z"], dtype=object)})
    ...     pyreadstat.write_dta(frame, str(f), missing_user_values={"age": ["a", "z"]})
    ...     back, labels, missing = read_stat(f, "stata", None)
    >>> back["age"].tolist(), missing.ranges["age"], labels["coded"]
    (['31', '.a', '45.5', '.z'], (('.a', '.a'), ('.z', '.z')), {'age': 'stata'})
    """
    reader, extra = _reader(path.suffix)
    try:
        _, head = reader(str(path), metadataonly=True)
        frame, meta = reader(str(path), usecols=list(columns) if columns is not None else None, **extra)
        special = {}
        if path.suffix.lower() == ".xpt":
            from pramkit.io_sas import read_special_missing

            special = read_special_missing(path, head.column_names, len(frame))
    except PramkitError:
        raise
    except Exception as exc:  # pyreadstat raises its own ReadstatError and others
        raise DataError(f"cannot read {fmt} file {str(path)!r}: {exc}") from None
    labels = _labels_of(meta, fmt)
    ranges: dict[str, tuple[tuple[Any, Any], ...]] = {
        name: tuple((r["lo"], r["hi"]) for r in declared)
        for name, declared in (getattr(meta, "missing_ranges", None) or {}).items()
        if name in frame.columns and declared
    }
    labels["coded"] = _read_codes(frame, fmt, labels["storage"], special, ranges)
    source = "; ".join(sorted({_code_system(fmt)} if ranges else set()))
    return frame, labels, MissingCodes(ranges=ranges, source=source) if ranges else MissingCodes()


def _split_codes(column: pd.Series, special: np.ndarray | None) -> tuple[pd.Series, np.ndarray | None]:
    """A numeric column as pyreadstat reads it (numbers, and Stata's or SAS's codes as letters) split into
    its numbers (codes missing) and its codes in pramkit's text (``".a"``; ``None`` elsewhere).  ``special``:
    the codes read apart (a transport file).  The codes are ``None`` when the column holds none."""
    numbers = pd.to_numeric(column, errors="coerce") if column.dtype == object else column
    if special is not None:
        return numbers, special
    letters = column.notna().to_numpy() & numbers.isna().to_numpy()
    if not letters.any():
        return numbers, None
    codes = np.full(len(column), None, dtype=object)
    codes[letters] = ["." + str(v) for v in column.to_numpy()[letters]]
    return numbers, codes


def _as_text(numbers: pd.Series, codes: np.ndarray) -> pd.Series:
    """Numbers as their one text (:func:`pramkit.codebook.canonical`), codes as they are, missing as None."""
    texts = {v: canonical(v) for v in pd.unique(numbers.dropna())}
    out = np.array(numbers.map(texts), dtype=object)
    out[pd.isna(out)] = None
    where = pd.notna(codes)
    out[where] = codes[where]
    return pd.Series(out, index=numbers.index, dtype=object)


#: Storage types (pyreadstat's ``readstat_variable_types``) a writer chooses from a column's NumPy type.
_STORAGE = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "float": np.float32}


def _stored_as(frame: pd.DataFrame, storage: Mapping[str, str]) -> None:
    """Give each numeric column of ``frame`` (in place) the NumPy type of the storage it had in the file
    read (an ``int32`` column comes back from Arrow as ``int64``, which the writers store as double)."""
    for name, kind in storage.items():
        target = _STORAGE.get(kind)
        if target is None or name not in frame.columns or not pd.api.types.is_numeric_dtype(frame[name].dtype):
            continue
        column = frame[name]
        if np.issubdtype(target, np.integer) and not pd.api.types.is_integer_dtype(column.dtype):
            continue  # missing values: the column cannot be integers
        frame[name] = column.astype(target)


def _labels_of(meta: Any, fmt: str) -> dict[str, Any]:
    """What a file of ``fmt`` says besides its records (pyreadstat's ``meta``): column and value labels,
    the file's label and table name, each column's storage and the metadata kept for writing."""
    labels: dict[str, Any] = {
        "column_labels": dict(zip(meta.column_names, meta.column_labels)),
        "variable_value_labels": meta.variable_value_labels,
        "file_label": meta.file_label, "table_name": getattr(meta, "table_name", None),
        "storage": dict(getattr(meta, "readstat_variable_types", None) or {}),
    }
    for source, _ in KEPT_META.get(fmt, ()):
        labels[source] = {k: v for k, v in (getattr(meta, source, None) or {}).items() if v is not None}
    return labels


def _read_codes(frame: pd.DataFrame, fmt: str, storage: Mapping[str, Any], special: Mapping[str, Any],
                ranges: dict[str, tuple[tuple[Any, Any], ...]]) -> dict[str, str]:
    """Empty texts as missing; a numeric column of Stata or SAS that holds missing codes as text (its
    numbers and codes), each code declared missing in ``ranges``.  Returns ``{column: fmt}`` of those
    columns (``frame`` and ``ranges`` are changed in place)."""
    coded: dict[str, str] = {}
    entry = file_format(fmt)
    letters = entry is not None and entry.letter_codes  # Stata's and SAS's codes (io_formats)
    for name in frame.columns:
        if storage.get(name) == "string" and (frame[name] == "").any():  # the formats' missing text
            frame[name] = frame[name].astype(object).where(frame[name] != "", None)
        if not letters or storage.get(name) == "string":
            continue
        numbers, codes = _split_codes(frame[name], special.get(name))
        if codes is None:
            continue
        frame[name] = _as_text(numbers, codes)
        ranges[name] = tuple((c, c) for c in sorted(set(codes[pd.notna(codes)])))
        coded[name] = fmt
    return coded


def write_stat(frame: pd.DataFrame, tmp: Path, target: Path, fmt: str, labels: Mapping[str, Any]) -> None:
    """Write a Stata, SPSS or SAS transport file with the labels, formats and codes of a file of its format.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records.
    tmp : pathlib.Path
        Where to write (the atomic writer's temporary).
    target : pathlib.Path
        The output's name, for messages.
    fmt : str
        ``"stata"``, ``"spss"`` or ``"sas"``.
    labels : mapping
        :func:`read_stat`'s labels of a file of the same format (``{}``: none), with
        ``missing_ranges`` for SPSS user-missing declarations.

    Raises
    ------
    WriteError
        A label is too long for the format, a coded column holds a value that is neither a
        number nor a missing code, or pyreadstat cannot write the file.

    Examples
    --------
    >>> import pathlib, tempfile, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.dta"
    ...     write_stat(pd.DataFrame({"age": ["31", ".a", None]}), f, f, "stata",
    ...                {"coded": {"age": "stata"}, "original_variable_types": {"age": "%9.2f"}})
    ...     back, meta = pyreadstat.read_dta(str(f), user_missing=True)
    >>> back["age"].tolist()[:2], meta.original_variable_types["age"]
    ([31.0, 'a'], '%9.2f')
    """
    import pyreadstat

    where = repr(str(target))
    frame = frame.copy()
    options: dict[str, Any] = {}
    special = _write_codes(frame, fmt, labels, where, options)
    check_string_widths(frame, fmt, where)
    if fmt == "stata":  # Stata's missing text is "" (and pyreadstat fails on a None beside a long text)
        _stata_missing_text(frame, labels.get("coded") or {})
    _stored_as(frame, labels.get("storage") or {})
    col_labels = labels.get("column_labels") or {}
    value_labels = {k: v for k, v in (labels.get("variable_value_labels") or {}).items() if k in frame.columns}
    check_labels(fmt, {c: col_labels.get(c) for c in frame.columns} if col_labels else {}, value_labels, where)
    options.update(_kept_options(frame, fmt, labels))
    column_labels = [col_labels.get(c) or "" for c in frame.columns] if col_labels else None
    try:
        if fmt == "sas":
            if labels.get("table_name"):
                options["table_name"] = labels["table_name"]
            pyreadstat.write_xport(frame, str(tmp), column_labels=column_labels, **options)
            if special:
                from pramkit.io_sas import write_special_missing

                write_special_missing(tmp, special, len(frame))
        else:
            writer = pyreadstat.write_dta if fmt == "stata" else pyreadstat.write_sav
            writer(frame, str(tmp), column_labels=column_labels, variable_value_labels=value_labels or None, **options)
    except (OSError, PramkitError):
        raise
    except Exception as exc:
        raise WriteError(f"cannot write {where}: {exc}") from None


def _write_codes(frame: pd.DataFrame, fmt: str, labels: Mapping[str, Any], where: str,
                 options: dict[str, Any]) -> dict[str, np.ndarray]:
    """The coded columns of ``fmt`` (``labels["coded"]``) as the format writes them, in ``frame``: Stata's
    numbers and tags (declared in ``options["missing_user_values"]``), the numbers alone otherwise.
    Returns the SAS special missing codes, ``{column: codes}``, written after the file."""
    special: dict[str, np.ndarray] = {}
    for name, kind in (labels.get("coded") or {}).items():
        if name not in frame.columns or kind != fmt:
            continue
        numbers, codes = numbers_and_codes(frame[name], name, where)
        present = pd.notna(codes)
        if fmt == "stata":  # numbers (whole ones as integers when the file stored integers) and tags
            whole = str((labels.get("storage") or {}).get(name, "")).startswith("int")
            out = np.array(numbers, dtype=object)
            if whole:
                ints = numbers.notna().to_numpy() & (numbers.to_numpy() % 1 == 0)
                out[ints] = [int(v) for v in numbers.to_numpy()[ints]]  # Python ints: pyreadstat's integer type
            out[present] = [c[1:] for c in codes[present]]
            frame[name] = pd.Series(out, dtype=object, index=frame.index)
            options.setdefault("missing_user_values", {})[name] = sorted({c[1:] for c in codes[present]})
        else:
            frame[name] = numbers
            if present.any():
                special[name] = codes
    return special


def _stata_missing_text(frame: pd.DataFrame, coded: Mapping[str, Any]) -> None:
    """A missing text written as Stata's missing text, "", in the text columns not coded."""
    for name in frame.columns:
        text = frame[name].dtype == object or pd.api.types.is_string_dtype(frame[name].dtype)
        if text and name not in coded and frame[name].isna().any():
            frame[name] = frame[name].astype(object).where(frame[name].notna(), "")


def _kept_options(frame: pd.DataFrame, fmt: str, labels: Mapping[str, Any]) -> dict[str, Any]:
    """The writer's options from the metadata kept of a file of ``fmt``: its formats and widths, SPSS's
    missing ranges and the file's label."""
    options: dict[str, Any] = {}
    for source, argument in KEPT_META.get(fmt, ()):
        kept = {k: v for k, v in (labels.get(source) or {}).items() if k in frame.columns}
        if kept:
            options[argument] = kept
    if labels.get("missing_ranges"):
        options["missing_ranges"] = labels["missing_ranges"]
    if labels.get("file_label"):
        options["file_label"] = labels["file_label"]
    return options


def rows_written(path: Path, suffix: str) -> int:
    """The row count a Stata, SPSS or SAS transport file declares (to check a writer's output).

    Parameters
    ----------
    path : pathlib.Path
        The file written.
    suffix : str
        The suffix of its format (``.dta``, ``.sav``, ``.zsav``, ``.xpt``): ``path`` may be a temporary.

    Returns
    -------
    int
        The rows; negative when the file does not say (a transport file, which does not
        declare them, is read whole to count them).

    Examples
    --------
    >>> import pathlib, tempfile, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.xpt"
    ...     pyreadstat.write_xport(pd.DataFrame({"x": [1.0, 2.0]}), str(f))
    ...     rows_written(f, ".xpt")
    2
    """
    reader, _ = _reader(suffix)
    if suffix.lower() == ".xpt":
        return len(reader(str(path))[0])
    return reader(str(path), metadataonly=True)[1].number_rows


def missing_code_words(path: str | Path) -> str | None:
    """The missing codes a Stata, SPSS or SAS file may hold, in words (``None`` for another format):
    a property of the format, not of the data.

    Parameters
    ----------
    path : str or pathlib.Path
        A data file (it need not exist).

    Returns
    -------
    str or None

    Examples
    --------
    >>> missing_code_words("survey.dta"), missing_code_words("survey.csv")
    ("Stata's extended missing values .a-.z", None)
    """
    entry = format_of_path(path)
    return None if entry is None else entry.codes


def check_codes_named(manifest: Any, missing: MissingCodes, labels: Mapping[str, Any], where: str) -> None:
    """:class:`DataError` when a perturbed column of a file holds extended missing codes that the
    manifest's ledger does not name (it was designed from data of another format).

    The release keeps the codes exactly, so the guarantee sentence must say so; a manifest
    designed from a Stata, SPSS or SAS file names them (``input.missing_codes``).

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        The manifest applied.
    missing : pramkit.codebook.MissingCodes
        The file's codes (:func:`read_stat`).
    labels : mapping
        The file's labels (``coded``: the columns with extended codes).
    where : str
        The file, for the message.

    Raises
    ------
    DataError
        Naming the column and the codes, and how to design a manifest that names them.

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> m = Manifest.of({"age": PramMatrix.form8([0.8, 0.8], categories=[31, 45])})
    >>> codes = MissingCodes(ranges={"age": ((".a", ".a"),)})
    >>> check_codes_named(m, codes, {"coded": {}}, "'a.dta'")  # no extended code in the file
    >>> labelled = Manifest.of({"age": PramMatrix.form8([0.8, 0.8], categories=[31, "a"])},
    ...                        input={"missing_codes": "Stata's extended missing values .a-.z"})
    >>> check_codes_named(labelled, codes, {"coded": {"age": "stata"}}, "'a.dta'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'age' of 'a.dta' holds numbers and missing codes, but the manifest's category 'a' is neither (a label of a missing code taken for a category?): design the manifest again from 'a.dta'
    >>> check_codes_named(m, codes, {"coded": {"age": "stata"}}, "'a.dta'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'age' of 'a.dta' holds the missing codes .a, which the release keeps exactly, but the manifest's ledger does not name them (it was designed from data of another format): design it from the Stata file (pramkit design 'a.dta' ...)
    """
    named = manifest.input.get("missing_codes") if isinstance(manifest.input, Mapping) else None
    coded = labels.get("coded") or {}
    for variable in manifest.variables:  # a column of numbers and codes: a text category can never be written
        if len(variable.columns) == 1 and variable.columns[0] in coded:
            text = [c for c in variable.matrix.categories if isinstance(c, str) and _number(c) is None
                    and not missing.holds(variable.columns[0], c)]  # a code as a category: refused where applied
            if text:
                raise DataError(f"column {variable.columns[0]!r} of {where} holds numbers and missing codes, but the "
                                f"manifest's category {text[0]!r} is neither (a label of a missing code taken for a "
                                f"category?): design the manifest again from {where}")
    if named:
        return
    for column in manifest.read_columns:
        if column in coded:
            shown = ", ".join(lo for lo, _ in missing.ranges.get(column, ()))
            kind = {"stata": "Stata", "sas": "SAS"}[coded[column]]
            raise DataError(f"column {column!r} of {where} holds the missing codes {shown}, which the release keeps "
                            "exactly, but the manifest's ledger does not name them (it was designed from data of "
                            f"another format): design it from the {kind} file (pramkit design {where} ...)")


def _parquet_code_words(path: Path) -> str | None:
    """The missing codes a Parquet file written by pramkit from a Stata, SPSS or SAS file keeps, in words."""
    import pyarrow.parquet as pq

    from pramkit.io_codes import read_parquet_codes

    try:
        raw = pq.read_metadata(path).metadata
    except Exception:  # not readable here: the reader of the data says why
        return None
    labels, missing, _ = read_parquet_codes(raw, repr(str(path)))
    entry = file_format(str(labels.get("origin")))
    return entry.codes if missing and entry is not None else None


def _code_words(path: Path) -> str | None:
    """:func:`missing_code_words` of a file, or of the Stata, SPSS or SAS file a Parquet file pramkit wrote
    came from (its metadata read)."""
    words = missing_code_words(path)
    entry = format_of_path(path)
    if words is None and entry is not None and entry.reader == "parquet":
        words = _parquet_code_words(path)
    return words


def _code_system(fmt: str) -> str:
    """The missing codes of the format ``fmt`` in words (its entry's :attr:`~pramkit.io_formats.FileFormat.codes`)."""
    entry = file_format(fmt)
    assert entry is not None and entry.codes is not None, fmt  # read_stat reads the formats that keep codes
    return entry.codes


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def name_missing_codes(manifest: Any, data: Any) -> Any:
    """``manifest`` with the missing codes of the design's data file named in its ``input``
    (``missing_codes``: :func:`missing_code_words`), so that the ledger names them
    (:attr:`pramkit.manifest.Manifest.exact_facts`); unchanged for data of another kind.

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        A designed manifest.
    data : Any
        What it was designed from (a path, or a frame in memory).

    Returns
    -------
    pramkit.manifest.Manifest

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> m = Manifest.of({"age": PramMatrix.form8([0.8, 0.8], categories=[31, 45])})
    >>> [f.kind for f in name_missing_codes(m, "survey.dta").exact_facts]
    ['missing', 'missing_code']
    >>> name_missing_codes(m, "survey.csv") is m
    True
    """
    import dataclasses

    words = _code_words(Path(data)) if isinstance(data, (str, Path)) else None
    if words is None:
        return manifest
    return dataclasses.replace(manifest, input={**manifest.input, "missing_codes": words})
