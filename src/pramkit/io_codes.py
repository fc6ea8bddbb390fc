"""Missing codes and labels carried from one file format to another.

A file read with its missing codes kept (:func:`pramkit.io.iter_batches` with
``keep_missing_codes=True``) holds them as values: Stata's ``.a``-``.z`` and SAS's
``.A``-``.Z``, ``._`` as text in a column of numbers, SPSS's user-missing values as
the numbers or texts they are, CSV's missing markers (``NA``) as text.  A writer of
the same format writes them back as they were (:mod:`pramkit.io_stat`).  A writer
of another format keeps what that format can hold, never a code as an ordinary
value, and refuses in one line what it cannot write:

=========  ==================================================================
output     a missing code, and the labels
=========  ==================================================================
Parquet    a null; the schema's key-value metadata ``pramkit.codes`` (JSON) says
           which code each null held, with the variable and value labels, so
           that pramkit reads the codes back (:data:`PARQUET_KEY`)
CSV        an empty field (a CSV file's own markers stay as they were); a CSV
           file holds no labels
Stata      Stata's extended missing value: SAS's ``.A`` becomes ``.a``, SPSS's
           user-missing numbers become ``.a``, ``.b``, ... in increasing order
           (when every one is among ``-1``-``-26``, ``-k`` becomes the k-th letter,
           undoing the SPSS writer's numbers), their value labels with them;
           SAS's ``._`` has no Stata equivalent
           (refused); a text code becomes ``""``, Stata's missing text
SPSS       a user-missing value: ``.a``-``.z`` (``.A``-``.Z``) become ``-1``-``-26``
           and SAS's ``._`` ``-27``, declared missing (up to three values, or
           their range), their value labels with them; a value of the data among
           those numbers is refused; CSV markers in a text column are declared
           missing texts (at most three, of at most 8 bytes)
SAS        a special missing value: ``.a`` becomes ``.A``, SPSS's user-missing
           numbers ``.A``, ``.B``, ... as for Stata (``-27`` is ``._``); a text code becomes
           blank, SAS's missing text; a transport file holds no value labels
=========  ==================================================================

Variable labels travel to every format that holds them (Stata, SPSS, SAS,
Parquet); display formats, storage types and SPSS measures only to a file of
the format they came from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit.codebook import MissingCodes, canonical
from pramkit.errors import DataError, WriteError
from pramkit.io_formats import formats

#: The key of the Parquet key-value metadata that holds the missing codes and labels.
PARQUET_KEY = b"pramkit.codes"
#: The version of what :data:`PARQUET_KEY` holds.
PARQUET_VERSION = 1
#: The labels (:attr:`pramkit.io.TableMeta.labels`) a Parquet file keeps for a writer of their format.
PARQUET_LABELS = ("column_labels", "variable_value_labels", "file_label", "table_name", "storage", "coded",
                  "original_variable_types", "variable_display_width", "variable_measure")
#: The longest text value, in bytes, each format holds (longer ones come back cut short or empty): the table's
#: (:attr:`pramkit.io_formats.FileFormat.string_limit`).
STRING_LIMITS = {f.name: f.string_limit for f in formats() if f.string_limit is not None}
#: The number each letter code becomes in an SPSS file: ``.a``/``.A`` -1 ... ``.z``/``.Z`` -26, ``._`` -27.
SPSS_NUMBERS = {**{c: -(i + 1) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}, "_": -27}
#: How a message names a file of each format (:attr:`pramkit.io_formats.FileFormat.called`).
_NAMES = {f.name: f.called for f in formats()}


def _letter_codes(fmt: str) -> bool:
    """Whether the format ``fmt`` holds its missing codes as letters in a column of numbers (the table's
    :attr:`pramkit.io_formats.FileFormat.letter_codes`: Stata, SAS)."""
    return any(f.name == fmt and f.letter_codes for f in formats())


def origin(meta: Any) -> str:
    """The format a table's codes and labels were written in: the file's own, or the one a Parquet file
    written by pramkit names (:data:`PARQUET_KEY`).

    Parameters
    ----------
    meta : pramkit.io.TableMeta
        What the reader learnt.

    Returns
    -------
    str

    Examples
    --------
    >>> from pramkit.io import TableMeta
    >>> origin(TableMeta("parquet", ["q"], labels={"origin": "stata"})), origin(TableMeta("csv", ["q"]))
    ('stata', 'csv')
    """
    return str(meta.labels.get("origin") or meta.format)


def carries(meta: Any, target: str) -> bool:
    """Whether writing ``meta``'s table as ``target`` changes its codes or labels (:class:`CodeCarrier`).

    Parameters
    ----------
    meta : pramkit.io.TableMeta, optional
        What the reader learnt about the input (``None``: nothing to carry).
    target : str
        The output's format.

    Returns
    -------
    bool

    Examples
    --------
    >>> from pramkit.io import TableMeta
    >>> codes = MissingCodes(ranges={"q": ((".a", ".a"),)})
    >>> carries(TableMeta("stata", ["q"], missing=codes), "stata"), carries(TableMeta("stata", ["q"], missing=codes), "csv")
    (False, True)
    >>> carries(TableMeta("csv", ["q"], missing=MissingCodes(texts=("NA",))), "csv")
    False
    """
    if meta is None:
        return False
    source = origin(meta)
    if target == "parquet":
        return bool(meta.missing) or any(meta.labels.get(k) for k in ("column_labels", "variable_value_labels"))
    return source != target and (bool(meta.missing) or bool(meta.labels))


def code_mask(meta: Any, name: str, values: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """Which ``values`` of column ``name`` are missing codes of the input (``None``: none is).

    Parameters
    ----------
    meta : pramkit.io.TableMeta
        The input's metadata.
    name : str
        The column.
    values : pyarrow.Array or pyarrow.ChunkedArray
        Its values, codes kept.

    Returns
    -------
    numpy.ndarray or None

    Examples
    --------
    >>> from pramkit.io import TableMeta
    >>> meta = TableMeta("stata", ["q"], missing=MissingCodes(ranges={"q": ((".a", ".a"),)}))
    >>> code_mask(meta, "q", pa.array(["1", ".a", None])).tolist()
    [False, True, False]
    """
    return meta.missing.found(name, values)


class CodeCarrier:
    """Turn the missing codes and labels of a table read in one format into those of another.

    Parameters
    ----------
    meta : pramkit.io.TableMeta
        What the reader learnt about the input, codes kept (``keep_missing_codes=True``).
    target : str
        The output's format (:func:`pramkit.io.table_format`).
    where : str
        The output, for messages.

    Examples
    --------
    A Stata column with extended missing values, to Parquet: nulls, and the codes in the metadata.

    >>> from pramkit.io import TableMeta
    >>> meta = TableMeta("stata", ["q"], labels={"coded": {"q": "stata"}, "storage": {"q": "int8"},
    ...                  "variable_value_labels": {"q": {1: "yes", "a": "Refused"}}},
    ...                  missing=MissingCodes(ranges={"q": ((".a", ".a"),)}))
    >>> carrier = CodeCarrier(meta, "parquet", "'out.parquet'")
    >>> carrier.stream(pa.table({"q": ["1", ".a", "2"]}), 0).column("q").to_pylist()
    [1, None, 2]
    >>> json.loads(carrier.parquet_metadata()[PARQUET_KEY])["codes"]
    {'q': [['.a', [1]]]}
    """

    def __init__(self, meta: Any, target: str, where: str) -> None:
        self.meta = meta
        self.target = target
        self.where = where
        self.source = origin(meta)
        self.coded: dict[str, str] = dict(meta.labels.get("coded") or {})
        self._positions: dict[str, dict[Any, list[int]]] = {}

    # -------------------------------------------------------------- CSV and Parquet (streamed)

    def stream(self, table: pa.Table, start: int) -> pa.Table:
        """A chunk of rows for a CSV or Parquet output: each missing code a null (a CSV file's own markers
        kept in a CSV output); a column of numbers and letter codes as numbers in a Parquet output.

        Parameters
        ----------
        table : pyarrow.Table
            The chunk, codes kept.
        start : int
            The row number of its first row in the output (the codes' positions, for Parquet).

        Returns
        -------
        pyarrow.Table
        """
        for i, name in enumerate(table.column_names):
            column = table.column(i)
            mask = code_mask(self.meta, name, column)
            if mask is not None and not (self.target == "csv" and self.source == "csv"):
                values = column.to_numpy(zero_copy_only=False)
                if self.target == "parquet" and self.source != "csv":  # a CSV marker is only missing
                    book = self._positions.setdefault(name, {})
                    for code in pd.unique(values[mask]):
                        rows = np.flatnonzero(mask & (values == code))
                        book.setdefault(_plain(code), []).extend((rows + start).tolist())
                column = pa.chunked_array([pa.array(np.where(mask, None, values), type=column.type)])
            if self.target == "parquet" and name in self.coded:
                column = self._as_numbers(name, column)
            table = table.set_column(i, pa.field(name, column.type), column)
        if table.schema.metadata and b"pandas" in table.schema.metadata:  # pandas' record of the input's types
            table = table.replace_schema_metadata({k: v for k, v in table.schema.metadata.items() if k != b"pandas"})
        return table

    def _as_numbers(self, name: str, column: pa.ChunkedArray) -> pa.ChunkedArray:
        """A text column of numbers (its codes already null) as integers (the file stored whole numbers) or floats."""
        numbers, _ = numbers_and_codes(pd.Series(column.to_pylist(), dtype=object), name, self.where)
        if str((self.meta.labels.get("storage") or {}).get(name, "")).startswith("int"):  # the same type every chunk
            return pa.chunked_array([pa.array(numbers.astype("Int64"), type=pa.int64())])
        return pa.chunked_array([pa.array(numbers.to_numpy(), type=pa.float64(), from_pandas=True)])

    def parquet_metadata(self) -> dict[bytes, bytes]:
        """The key-value metadata of a Parquet output: the codes each null held and the labels.

        Returns
        -------
        dict
            ``{PARQUET_KEY: JSON}`` (``{}`` for a CSV input, whose markers are only missing): ``version``, ``origin`` (the format the codes came from), ``codes``
            (column -> ``[[code, [row, ...]], ...]``), ``texts`` (CSV markers), ``ranges`` (the declared
            codes, as :class:`pramkit.codebook.MissingCodes` holds them) and the labels of
            :data:`PARQUET_LABELS`.
        """
        if self.source == "csv":
            return {}
        labels = {k: _json_labels(k, self.meta.labels[k]) for k in PARQUET_LABELS if self.meta.labels.get(k)}
        body = {
            "version": PARQUET_VERSION, "origin": self.source,
            "codes": {name: [[code, rows] for code, rows in book.items()] for name, book in self._positions.items()},
            "texts": list(self.meta.missing.texts),
            "ranges": {k: [list(r) for r in v] for k, v in self.meta.missing.ranges.items() if v},
            "source": self.meta.missing.source, "labels": labels,
        }
        return {PARQUET_KEY: json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")}

    # -------------------------------------------------------------- Stata, SPSS and SAS (whole)

    def stat(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The frame and the labels (:func:`pramkit.io_stat.write_stat`) of a Stata, SPSS or SAS output
        from an input of another format.

        Parameters
        ----------
        frame : pandas.DataFrame
            All the rows, codes kept.

        Returns
        -------
        frame : pandas.DataFrame
        labels : dict

        Raises
        ------
        WriteError
            A code the output cannot hold (SAS's ``._`` in Stata, more than 26 codes, a value of the
            data among the numbers of the codes in SPSS); the message names the column and the code.
        """
        src = self.meta.labels
        frame = frame.copy()
        value_labels: dict[str, dict[Any, Any]] = {}
        labels: dict[str, Any] = {"column_labels": dict(src.get("column_labels") or {}),
                                  "file_label": src.get("file_label"), "coded": {}}
        if self.target == "sas" and self.source == "sas" and src.get("table_name"):
            labels["table_name"] = src["table_name"]
        ranges: dict[str, list[Any]] = {}
        for name in frame.columns:
            own = dict((src.get("variable_value_labels") or {}).get(name) or {})
            column = frame[name]
            mask = code_mask(self.meta, name, pa.array(column, from_pandas=True)) if len(column) else None
            if name in self.coded:
                mapping = self._letter_map(name, column, mask, own)
            elif mask is not None and pd.api.types.is_numeric_dtype(column.dtype):
                mapping = self._value_map(name, column, mask, own)
            else:  # text: a code is missing text; labels of text only where the format holds them
                if mask is not None:
                    if self.target == "spss":
                        ranges[name] = self._spss_texts(name, column, mask)
                    else:
                        frame[name] = column.where(~mask, None)
                if own and self.target == "spss":
                    value_labels[name] = own
                continue
            frame[name], declared = self._apply(name, column, mask, mapping)
            if _letter_codes(self.target):
                labels["coded"][name] = self.target
            if declared:
                ranges[name] = declared
            relabelled = {mapping.get(_label_code(k, self.source), k): v for k, v in own.items()}
            if self.target == "stata":
                relabelled = {(k[1:] if isinstance(k, str) else k): v for k, v in relabelled.items()}
            if self.target != "sas" and relabelled:
                value_labels[name] = relabelled
        labels["variable_value_labels"] = value_labels
        if ranges:
            labels["missing_ranges"] = ranges
        return frame, labels

    def _letter_map(self, name: str, column: pd.Series, mask: np.ndarray | None,
                    own: Mapping[Any, Any]) -> dict[Any, Any]:
        """Letter code (``.a``, ``.A``, ``._``) -> the output's code, for the codes of a column and its labels."""
        present = set(column[mask].tolist()) if mask is not None else set()
        present |= {_label_code(k, self.source) for k in own if isinstance(k, str)}
        mapping: dict[Any, Any] = {}
        for code in sorted(present):
            letter = code[1:]
            if self.target == "stata":
                if letter == "_":
                    row = _first_row(column, code)
                    raise WriteError(f"cannot write {self.where}: column {name!r}{row} holds SAS's missing code ._, "
                                     "which a Stata file cannot hold: write .xpt, .sav or .parquet")
                mapping[code] = "." + letter.lower()
            elif self.target == "sas":
                mapping[code] = "." + letter.upper()
            elif self.target == "spss":
                mapping[code] = float(SPSS_NUMBERS[letter.lower()])
            else:
                mapping[code] = None
        return mapping

    def _value_map(self, name: str, column: pd.Series, mask: np.ndarray,
                   own: Mapping[Any, Any]) -> dict[Any, Any]:
        """User-missing number -> the output's letter code (``.a``/``.A`` upward, in increasing order)."""
        present = set(column[mask].tolist())
        present |= {k for k in own if not isinstance(k, str) and self.meta.missing.holds(name, k)}
        codes = sorted(present)
        if len(codes) > 26:
            raise WriteError(f"cannot write {self.where}: column {name!r} holds {len(codes)} different missing codes; "
                             f"{_NAMES[self.target]} file holds at most 26 (.a-.z): write .sav or .parquet")
        upper = self.target == "sas"
        by_number = {float(v): k for k, v in SPSS_NUMBERS.items() if k != "_" or upper}
        if all(float(c) in by_number for c in codes):  # pramkit's own numbers (-1 is .a): back to their letters
            chosen = [by_number[float(c)] for c in codes]
        else:
            chosen = list("abcdefghijklmnopqrstuvwxyz"[:len(codes)])
        return {c: "." + (letter.upper() if upper else letter) for c, letter in zip(codes, chosen)}

    def _apply(self, name: str, column: pd.Series, mask: np.ndarray | None,
               mapping: Mapping[Any, Any]) -> tuple[pd.Series, list[Any]]:
        """The column in the output's terms, and the SPSS declaration of its codes."""
        codes = np.full(len(column), None, dtype=object)
        if mask is not None:
            codes[mask] = [mapping[v] for v in column[mask].tolist()]
        if name in self.coded:
            numbers, _ = numbers_and_codes(column.where(~mask, None) if mask is not None else column, name, self.where)
        else:  # a column of numbers with user-missing numbers (the caller found some)
            hit = mask if mask is not None else np.zeros(len(column), dtype=bool)
            numbers = pd.Series(np.where(hit, np.nan, column.to_numpy(dtype=float)), index=column.index)
        if self.target == "spss":
            used = sorted({v for v in mapping.values() if v is not None})
            if not used:
                return numbers, []
            lo, hi = used[0], used[-1]
            clash = numbers.between(lo, hi) if len(used) > 3 else numbers.isin(used)
            if clash.any():
                row = int(np.flatnonzero(clash.to_numpy())[0])
                raise WriteError(f"cannot write {self.where}: column {name!r}, row {row + 1} holds the value "
                                 f"{canonical(numbers.iloc[row])}, which an SPSS file would read as a missing code "
                                 f"(pramkit writes .a-.z as -1 to -26): write .dta or .parquet")
            out = numbers.to_numpy(dtype=float).copy()
            where = pd.notna(codes)
            out[where] = codes[where].astype(float)
            declared = used if len(used) <= 3 else [{"lo": lo, "hi": hi}]
            return pd.Series(out, index=column.index), declared
        out = np.array([canonical(v) if pd.notna(v) else None for v in numbers], dtype=object)
        where = pd.notna(codes)
        out[where] = codes[where]
        return pd.Series(out, index=column.index, dtype=object), []

    def _spss_texts(self, name: str, column: pd.Series, mask: np.ndarray) -> list[Any]:
        """The missing markers of a text column, declared user-missing texts of an SPSS file."""
        texts = sorted(set(column[mask].tolist()))
        long = [t for t in texts if len(str(t).encode("utf-8")) > 8]
        if len(texts) > 3 or long:
            raise WriteError(f"cannot write {self.where}: column {name!r} holds the missing markers "
                             f"{', '.join(map(repr, texts))}; an SPSS file declares at most three missing texts "
                             "of at most 8 bytes: write .csv or .parquet")
        return texts


def _plain(value: Any) -> Any:
    """A code as JSON holds it: a text, or a number (an integer when whole)."""
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _label_code(key: Any, source: str) -> Any:
    """A value label's key as the column holds the code: Stata's label key ``"a"`` labels ``.a``."""
    if isinstance(key, str) and source == "stata" and len(key) == 1:
        return "." + key
    return key


def _first_row(column: pd.Series, code: Any) -> str:
    rows = np.flatnonzero((column == code).to_numpy(dtype=bool, na_value=False))
    return f", row {int(rows[0]) + 1}," if rows.size else ""


def _json_labels(kind: str, value: Any) -> Any:
    """Labels as JSON holds them: value labels as ``[[value, label], ...]`` (their keys may be numbers)."""
    if kind == "variable_value_labels":
        return {c: [[_plain(k), v] for k, v in (labels or {}).items()] for c, labels in value.items()}
    return value


def _labels_from_json(kind: str, value: Any) -> Any:
    if kind == "variable_value_labels":
        return {c: dict(pairs) for c, pairs in value.items()}
    return value


def read_parquet_codes(raw: Mapping[bytes, bytes] | None, where: str) -> tuple[dict[str, Any], MissingCodes,
                                                                                  dict[str, list[tuple[Any, np.ndarray]]]]:
    """The labels, missing codes and code positions a Parquet file written by pramkit keeps (:data:`PARQUET_KEY`).

    Parameters
    ----------
    raw : mapping, optional
        The file's key-value metadata.
    where : str
        The file, for messages.

    Returns
    -------
    labels : dict
        :attr:`pramkit.io.TableMeta.labels`, with ``origin``: the format the codes came from (``{}``: none).
    missing : pramkit.codebook.MissingCodes
    positions : dict
        Column -> ``[(code, rows), ...]``.

    Raises
    ------
    DataError
        The metadata cannot be read.

    Examples
    --------
    >>> labels, missing, positions = read_parquet_codes({}, "'a.parquet'")
    >>> labels, bool(missing), positions
    ({}, False, {})
    """
    if not raw or PARQUET_KEY not in raw:
        return {}, MissingCodes(), {}
    try:
        body = json.loads(raw[PARQUET_KEY])
        if body.get("version") != PARQUET_VERSION:
            raise ValueError(f"version {body.get('version')!r}; this pramkit reads version {PARQUET_VERSION}")
        labels = {k: _labels_from_json(k, v) for k, v in body.get("labels", {}).items() if k in PARQUET_LABELS}
        labels["origin"] = str(body["origin"])
        ranges = {k: tuple((lo, hi) for lo, hi in v) for k, v in body.get("ranges", {}).items()}
        missing = MissingCodes(texts=tuple(body.get("texts", ())), ranges=ranges, source=str(body.get("source", "")))
        positions = {name: [(code, np.asarray(rows, dtype=np.int64)) for code, rows in pairs]
                     for name, pairs in body.get("codes", {}).items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"cannot read the missing codes pramkit wrote into {where} ({PARQUET_KEY.decode()}): {exc}") from None
    return labels, missing, positions


def restore_codes(table: pa.Table, start: int, labels: Mapping[str, Any],
                  positions: Mapping[str, Sequence[tuple[Any, np.ndarray]]]) -> pa.Table:
    """A chunk of a Parquet file written by pramkit with its missing codes back in their places.

    Parameters
    ----------
    table : pyarrow.Table
        The chunk, codes null.
    start : int
        The row number of its first row.
    labels : mapping
        :func:`read_parquet_codes`'s labels (``coded``: the columns of numbers and letter codes).
    positions : mapping
        :func:`read_parquet_codes`'s positions.

    Returns
    -------
    pyarrow.Table
        A column of numbers and letter codes as text (:func:`pramkit.io_stat.read_stat`), others with
        their codes.

    Examples
    --------
    >>> t = pa.table({"q": pa.array([1, None, 2], pa.int64())})
    >>> restore_codes(t, 0, {"coded": {"q": "stata"}}, {"q": [(".a", np.array([1]))]}).column("q").to_pylist()
    ['1', '.a', '2']
    """
    coded = labels.get("coded") or {}
    stop = start + table.num_rows
    for name, pairs in positions.items():
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        column = table.column(i)
        values = np.array(column.to_pylist(), dtype=object)
        if name in coded:
            values = np.array([canonical(v) if v is not None else None for v in values], dtype=object)
        for code, rows in pairs:
            here = rows[(rows >= start) & (rows < stop)] - start
            values[here] = code
        kind = pa.large_string() if name in coded else column.type
        table = table.set_column(i, pa.field(name, kind), pa.array(values.tolist(), type=kind))
    return table


def check_string_widths(frame: pd.DataFrame, fmt: str, where: str) -> None:
    """:class:`WriteError` for a text value longer than a Stata, SPSS or SAS file holds (:data:`STRING_LIMITS`).

    Parameters
    ----------
    frame : pandas.DataFrame
        The rows to write.
    fmt : str
        The output's format.
    where : str
        The output, for the message.

    Raises
    ------
    WriteError
        Naming the column, the row and the value's length.

    Examples
    --------
    >>> check_string_widths(pd.DataFrame({"s": ["a", "b"]}), "spss", "'out.sav'")
    >>> check_string_widths(pd.DataFrame({"s": ["a", "x" * 40_000]}), "spss", "'out.sav'")
    Traceback (most recent call last):
    ...
    pramkit.errors.WriteError: cannot write 'out.sav': column 's', row 2 holds a value of 40000 bytes; an SPSS file holds text values of at most 32767 bytes: write .dta, .parquet or .csv
    """
    limit = STRING_LIMITS.get(fmt)
    if limit is None:
        return
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column.dtype):
            continue
        sizes = pd.Series([len(v.encode("utf-8")) if isinstance(v, str) else 0 for v in column.tolist()])
        if len(sizes) and sizes.max() > limit:
            row = int(sizes.to_numpy().argmax())
            raise WriteError(f"cannot write {where}: column {name!r}, row {row + 1} holds a value of {sizes.iloc[row]} "
                             f"bytes; {_NAMES[fmt]} file holds text values of at most {limit} bytes: write "
                             ".dta, .parquet or .csv")


def numbers_and_codes(values: pd.Series, name: str, where: str) -> tuple[pd.Series, np.ndarray]:
    """A text column of numbers and missing codes (as :func:`pramkit.io_stat.read_stat` gives them) split in two.

    Parameters
    ----------
    values : pandas.Series
        Numbers and codes such as ``.a`` (Stata) or ``.A`` (SAS), as text; missing entries stay missing.
    name, where : str
        The column and the file written, for the message.

    Returns
    -------
    tuple of (pandas.Series, numpy.ndarray)
        The numbers as floats (a code missing) and, per row, its code or ``None``.

    Raises
    ------
    WriteError
        A value is neither a number nor a code.

    Examples
    --------
    >>> numbers, codes = numbers_and_codes(pd.Series(["31", ".a", None]), "age", "'a.dta'")
    >>> numbers.tolist()[:2], codes.tolist()
    ([31.0, nan], [None, '.a', None])
    """
    text = values.astype("string")
    is_code = text.str.fullmatch(r"\.[A-Za-z_]").fillna(False).to_numpy(dtype=bool)
    numbers = pd.to_numeric(text.where(~is_code), errors="coerce").astype(float)
    wrong = text.notna().to_numpy() & ~is_code & numbers.isna().to_numpy()
    if wrong.any():
        row = int(np.flatnonzero(wrong)[0])
        raise WriteError(f"cannot write {where}: column {name!r}, row {row + 1} holds {values.iloc[row]!r}, neither "
                         "a number nor a missing code, in a column the file holds as numbers")
    codes = np.full(len(values), None, dtype=object)
    codes[is_code] = text.to_numpy()[is_code]
    return pd.Series(numbers.to_numpy(), index=values.index, dtype=float), codes
