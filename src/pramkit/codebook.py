"""Categories of a column, and the codes 0..S-1 that the kernels work on.

Matching between data values and category labels is by value, through one
canonical text form (:func:`canonical`): the integer 1, the float 1.0 and the
CSV field ``"1"`` are the same category; ``"01"`` is another one.  Missing
values (null, NaN) get code ``-1`` unless missing is declared a category
(labelled ``None``).

One value, one category.  Labels read from the data that differ only by
surrounding whitespace, by Unicode normalisation (NFC and NFD) or, in a column
whose labels are all numbers, by numeric spelling (``3``, ``3.0``, ``03``)
have the same :func:`label_key`; pramkit does not guess which spelling is
meant: :func:`spelling_clash` finds two such labels among the distinct labels
of a column (never per value), and design, risk and estimation stop with one
line naming both spellings and their rows (:func:`spelling_error`); a value
that is a declared or manifest category spelled another way stops apply and
estimation alike (:meth:`Codebook.encode`).  Declared categories (a codebook,
a prior, a manifest) are taken as declared.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, NoReturn

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.errors import DataError
from pramkit.kernel import _kernels
from pramkit.kernel.utf8 import Utf8Labels, is_utf8, pool_array
from pramkit.labels import Label

MISSING = -1
_INT_LITERAL = re.compile(r"[+-]?\d+")
#: A number written in decimal (``3``, ``-3.0``, ``03``, ``.5``, ``1e3``): what :func:`label_key` reads as a number.
_NUMBER_LITERAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def canonical(value: Any) -> str | None:
    """The text form used to match a value to a category; ``None`` for missing.

    Parameters
    ----------
    value : Any
        A data value or a category label: text, integer, float, boolean,
        bytes, NumPy scalar, or missing (``None``, ``pandas.NA``, NaN).

    Returns
    -------
    str or None
        Integers and whole floats as integer text (``1``, ``1.0`` and ``"1"``
        match), other floats by ``repr``, booleans as ``true``/``false``,
        bytes decoded as UTF-8, anything else by ``str``; ``None`` for missing.

    Examples
    --------
    >>> [canonical(v) for v in (1, 1.0, "1", np.int8(1))]  # one category
    ['1', '1', '1', '1']
    >>> [canonical(v) for v in ("01", 2.5, True, b"x")]
    ['01', '2.5', 'true', 'x']
    >>> [canonical(v) for v in (None, float("nan"), pd.NA)]
    [None, None, None]
    """
    if type(value) is str:  # the common cases first
        return value
    if type(value) is int:
        return str(value)
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _trimmed(text: str) -> str:
    """``text`` without surrounding whitespace, in Unicode normal form NFC."""
    text = text.strip()
    return text if text.isascii() or unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _number_text(text: str) -> str:
    """The one text of the number a numeric literal writes: integer text for a whole number, else the shortest
    exact decimal form (``"03"``, ``"3.0"`` and ``"+3e0"`` give ``"3"``; ``"2.50"`` gives ``"2.5"``)."""
    number = Decimal(text)
    if number == number.to_integral_value() and number.adjusted() < 64:
        return str(int(number))
    return str(number.normalize())


def numeric_labels(labels: Iterable[Any]) -> bool:
    """Whether every non-missing label is a number, or text that writes one (surrounding whitespace aside).

    Parameters
    ----------
    labels : iterable
        Labels or data values (missing ones are skipped).

    Returns
    -------
    bool
        ``True`` also when there is no non-missing label.

    Examples
    --------
    >>> numeric_labels([1, "02", " 3.5", None]), numeric_labels(["1", "x"]), numeric_labels([True])
    (True, False, False)
    """
    for label in labels:
        text = canonical(label)
        if text is not None and not _NUMBER_LITERAL.fullmatch(_trimmed(text)):
            return False
    return True


def label_key(label: Any, *, numeric: bool = False) -> str | None:
    """The key under which spellings of one value are one: the label's text (:func:`canonical`) without
    surrounding whitespace, in Unicode NFC, and, when ``numeric`` (the column's labels are all numbers,
    :func:`numeric_labels`), the number it writes.

    Parameters
    ----------
    label : Any
        A label or data value.
    numeric : bool
        Whether the column is numeric: numeric literals then key by their value.

    Returns
    -------
    str or None
        ``None`` for a missing label.

    Examples
    --------
    >>> [label_key(v, numeric=True) for v in ("3", " 3", "3.0", "03", 3.0, "+3e0")]
    ['3', '3', '3', '3', '3', '3']
    >>> label_key("03"), label_key("Ka\u0308rnten") == label_key("K\u00e4rnten "), label_key(None)
    ('03', True, None)
    """
    text = canonical(label)
    if text is None:
        return None
    text = _trimmed(text)
    return _number_text(text) if numeric and _NUMBER_LITERAL.fullmatch(text) else text


def _spelled_apart(first: Any, second: Any) -> str:
    """How two labels of one :func:`label_key` differ, for messages."""
    a, b = canonical(first) or "", canonical(second) or ""
    how = []
    if a.strip() != a or b.strip() != b:
        how.append("surrounding whitespace")
    if _trimmed(a) != a.strip() or _trimmed(b) != b.strip():
        how.append("Unicode normalisation, NFC and NFD")
    if _trimmed(a) != _trimmed(b):
        how.append("numeric spelling")
    return " and ".join(how)


def spelling_clash(labels: Sequence[Any]) -> tuple[Any, Any, str] | None:
    """The first two of a column's distinct labels that are one value spelled two ways (one :func:`label_key`,
    numeric when :func:`numeric_labels` holds for them all), and how they differ; ``None`` if there are none.

    Run on the distinct labels of a column (its dictionary), never on every value.

    Parameters
    ----------
    labels : sequence
        Distinct labels (missing ones are skipped).

    Returns
    -------
    tuple or None
        ``(first, second, how)``: the labels in the order given, and the ways they differ.

    Examples
    --------
    >>> spelling_clash(["3", "1", "3.0"])
    ('3', '3.0', 'numeric spelling')
    >>> spelling_clash(["Tyrol", "Vienna", "Tyrol "])
    ('Tyrol', 'Tyrol ', 'surrounding whitespace')
    >>> spelling_clash(["03", "3", "x"]) is None  # not a numeric column: text that differs
    True
    """
    numeric = numeric_labels(labels)
    seen: dict[str, Any] = {}
    for label in labels:
        key = label_key(label, numeric=numeric)
        if key is None:
            continue
        if key in seen and canonical(seen[key]) != canonical(label):
            return seen[key], label, _spelled_apart(seen[key], label)
        seen.setdefault(key, label)
    return None


def spelling_error(column: str | None, clash: tuple[Any, Any, str],
                   rows: tuple[int | None, int | None] = (None, None)) -> DataError:
    """The :class:`DataError` of :func:`spelling_clash`: one line naming the column, both spellings and the first
    row of each (counted from 1; ``None``: not known).

    Parameters
    ----------
    column : str or None
        The column's name.
    clash : tuple
        As :func:`spelling_clash` returns it.
    rows : tuple of (int or None)
        The first row holding each spelling.

    Returns
    -------
    DataError

    Examples
    --------
    >>> print(spelling_error("hsize", ("3", "3.0", "numeric spelling"), (1, 7)))
    column 'hsize': '3' (row 1) and '3.0' (row 7) are one value spelled two ways (numeric spelling); pramkit does not guess which spelling is meant: write the value one way in the data
    """
    first, second, how = clash
    shown = [repr(label) + ("" if row is None else f" (row {row})") for label, row in zip((first, second), rows)]
    where = "the column" if column is None else f"column {column!r}"
    return DataError(f"{where}: {shown[0]} and {shown[1]} are one value spelled two ways ({how}); pramkit does "
                     "not guess which spelling is meant: write the value one way in the data")


def _as_arrow(values: Any) -> pa.Array | pa.ChunkedArray:
    """An Arrow view of a column's values: an Arrow array as it is, anything else converted once."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if isinstance(values, pd.Series):
        values = values.array
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataError(f"cannot read the column's values: {exc}") from None


def _combined(values: Any) -> pa.Array:
    """:func:`_as_arrow` as one contiguous array (the chunks of a ChunkedArray joined)."""
    arr = _as_arrow(values)
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def _label_lookup(categories: Sequence[Label], column: str,
                  texts: Sequence[str | None] | None = None) -> dict[str | None, int]:
    """Code of each category by its text form (``texts``: those forms, if already known)."""
    lookup: dict[str | None, int] = {}
    for i, (c, key) in enumerate(zip(categories, texts if texts is not None else map(canonical, categories))):
        if key in lookup:
            raise DataError(
                f"column {column!r}: categories {categories[lookup[key]]!r} and {c!r} cannot be told apart in the data"
            )
        lookup[key] = i
    return lookup


#: Code of a value that is not a category (internal: :meth:`Codebook.encode` raises on it).
_UNKNOWN = -2


def _hash_matched(value_type: pa.DataType) -> bool:
    """Whether values of this type are matched to labels by a hash lookup of the labels' text forms.

    For text and integers, equal canonical text is equal value, so the labels
    can be converted to the column's type once and looked up: text through
    :class:`pramkit.kernel.utf8.Utf8Labels`, integers with
    :func:`pyarrow.compute.index_in` (or a table indexed by value).  Other types (floats, where ``-0.0`` is
    the category ``0`` but not the same hash key; booleans; dates) go through
    :func:`canonical`, once per distinct value.
    """
    return pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or pa.types.is_integer(value_type)


def _positions(indices: pa.Array, fill: int) -> np.ndarray:
    """The integers of an Arrow integer array as NumPy ``intp``, ``fill`` where null (a read-only view of the
    array's memory when it is already ``intp`` without nulls)."""
    if indices.null_count:
        if pa.types.is_unsigned_integer(indices.type):  # polars' categoricals: uint32 indices, nulls for missing
            indices = indices.cast(pa.int64())
        indices = indices.fill_null(fill)
    return indices.to_numpy().astype(np.intp, copy=False)


def _table_codes(values: pa.Array, low: int, table: np.ndarray, missing_code: int) -> tuple[np.ndarray, int]:
    """The codes of Arrow integers (any width but unsigned 64-bit) through a table by value, ``table[value -
    low]``, ``missing_code`` where null, ``_UNKNOWN`` outside the table; and the position of the first
    ``_UNKNOWN``, or ``-1``.  One compiled pass over Arrow's buffers as they are.

    >>> codes, first = _table_codes(pa.array([5, None, 9, 6], pa.int8()), 5, np.array([0, 1, _UNKNOWN]), -1)
    >>> codes.tolist(), first
    ([0, -1, -2, 1], 2)
    """
    validity, data = values.buffers()[:2]
    out = pool_array(len(values), np.intp)[1]
    first = _kernels.dense_encode(data, values.type.bit_width // 8, pa.types.is_signed_integer(values.type),
                                  values.offset, validity if values.null_count else None, low,
                                  np.ascontiguousarray(table, dtype=np.intp), missing_code, _UNKNOWN, out)
    return out, first


def _gather(table: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``table[positions]`` for positions in ``0..table.size - 1``.

    By ``ndarray.take`` into memory from Arrow's pool, which keeps freed
    memory for the next call (a large NumPy array comes fresh from the
    operating system, a page fault per 4 KiB); its mode ``"clip"`` is not
    buffered as ``"raise"`` is, and the positions are in range.  By indexing
    when ``positions`` is read-only (a view of Arrow memory), which ``take``
    would copy first.
    """
    if not positions.flags.writeable:
        return table[positions]
    return table.take(positions, out=pool_array(positions.size, table.dtype)[1], mode="clip")


class Codebook:
    """The codes ``0..S-1`` of one column's categories: values to codes and back.

    Values match categories by their text form (module docstring); missing
    values (null, NaN) get ``-1``, or the code of the ``None`` category when
    ``missing="category"``.  Encoding is vectorised: text and integer
    columns are looked up among the labels with one hash lookup (text by a
    compiled loop, :mod:`pramkit.kernel.utf8`);
    dictionary columns (pandas categoricals, Arrow dictionaries) by their
    dictionary, once per distinct dictionary; other types by their distinct
    values.  A codebook is built once per column and reused chunk after chunk.

    Parameters
    ----------
    categories : the category labels, in code order
    column : the column's name, for messages
    missing : ``"keep"`` (missing values get ``-1``) or ``"category"``

    Raises
    ------
    DataError
        Two categories have the same text form (``1`` and ``"1"``), or
        ``missing="category"`` without a ``None`` category.

    Examples
    --------
    >>> book = Codebook(["a", "b", 3], column="x")
    >>> book.encode(pa.array(["b", None, "3", "a"])).tolist()
    [1, -1, 2, 0]
    >>> book.decode(np.array([2, -1, 0]), like=pa.string()).to_pylist()
    ['3', None, 'a']
    """

    def __init__(self, categories: Sequence[Label], *, column: str,
                 missing: Literal["keep", "category"] = "keep") -> None:
        self.categories = list(categories)
        self.column = column
        self.texts = [canonical(c) for c in self.categories]
        self.lookup = _label_lookup(self.categories, column, self.texts)
        if missing == "category":
            if None not in self.lookup:
                raise DataError(f"column {column!r}: missing is declared a category but no category is null")
            self.missing_code = self.lookup[None]
        else:
            self.missing_code = MISSING
        self._value_sets: dict[pa.DataType, tuple[pa.Array, np.ndarray]] = {}
        self._dense: dict[pa.DataType, tuple[int, np.ndarray] | None] = {}
        self._labels: dict[pa.DataType, pa.Array] = {}
        self._utf8_labels: dict[pa.DataType, Utf8Labels] = {}
        self._dictionaries: dict[pa.DataType, tuple[pa.Array, np.ndarray | None]] = {}
        self._categorical: dict[pa.DataType, pd.CategoricalDtype] = {}
        self._objects: dict[pa.DataType, tuple] = {}
        self._last_dictionary: tuple[pa.Array, np.ndarray, bool] | None = None
        self._keys: tuple[bool, dict[str | None, Label]] | None = None
        self._polars: dict[str, list[tuple[Any, Any]]] = {}

    def polars_entry(self, column: str, dtype: Any, build: Callable[[], Any]) -> Any:
        """What ``build()`` makes for a polars column named ``column`` of ``dtype``, made once per codebook (and
        so reused by later calls with the same matrix).

        The dtypes met are compared by equality, never hashed: a polars ``Enum``'s hash reads its
        categories (1.3 ms at 10 000 categories).

        Parameters
        ----------
        column : str
            The column's name.
        dtype : polars.DataType
            The column's dtype.
        build : callable
            Makes the entry, called the first time this name and dtype are met.

        Returns
        -------
        object
            What ``build`` made.

        Examples
        --------
        >>> import polars as pl
        >>> book = Codebook(["a", "b"], column="x")
        >>> [book.polars_entry("x", pl.Enum(["a", "b"]), lambda: n) for n in (1, 2)]
        [1, 1]
        >>> book.polars_entry("x", pl.Categorical, lambda: 3)
        3
        """
        entries = self._polars.setdefault(column, [])
        for seen, made in entries:
            if seen == dtype:
                return made
        made = build()
        entries.append((dtype, made))
        return made

    # ------------------------------------------------------------------ encoding

    def encode(self, values: Any, *, first_row: int = 0, rows: np.ndarray | None = None,
               copy: bool = True) -> np.ndarray:
        """Codes of a column's values (any Arrow array or chunked array, pandas Series or sequence).

        A value that is not a category raises :class:`DataError` naming the
        column, the value and its row, counted from 1 (``first_row`` is the
        0-based row number of the first value, or ``rows`` gives each value's
        0-based row number).

        Parameters
        ----------
        values : array-like
            The column's values (a chunk of it).
        first_row : int
            The 0-based row number of ``values[0]`` in the file, for messages.
        rows : numpy.ndarray, optional
            Alternatively, each value's 0-based row number.
        copy : bool
            Whether the codes are always the caller's own, to change (the
            default), or may be a read-only view of the column's memory.

        Returns
        -------
        numpy.ndarray
            One ``intp`` code per value: its position in the categories, or
            the missing code (``-1``, or the ``None`` category's position).
            With ``copy=False``, read-only where it is the memory of a
            dictionary's indices (a dictionary that is the categories in
            order, indices of type ``intp`` without nulls).

        Raises
        ------
        DataError
            A value is not a category.

        Examples
        --------
        The integer 3, the float 3.0 and the text ``"3"`` are one category:

        >>> book = Codebook(["a", "b", 3], column="x")
        >>> book.encode(pa.array([3, None])).tolist(), book.encode(pd.Series([3.0, np.nan])).tolist()
        ([2, -1], [2, -1])
        >>> book.encode(pa.array(["a", "c"]), first_row=10)
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'x', row 12: value 'c' is not one of its categories ('a', 'b', 3)
        """
        arr = _as_arrow(values)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        parts, offset = [], 0
        for chunk in chunks:
            codes = self._encode_array(chunk, copy=copy)
            if codes is None:
                self._raise_unknown(chunk, offset, first_row, rows)
            parts.append(codes)
            offset += len(chunk)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.intp)

    def _encode_array(self, arr: pa.Array, *, copy: bool) -> np.ndarray | None:
        """Codes of one array's values (``copy``: as :meth:`encode`); ``None`` if one of them is not a category."""
        if pa.types.is_dictionary(arr.type):
            table, identity = self._dictionary_codes(arr.dictionary)
            if identity and not arr.indices.null_count:
                # the dictionary is the categories in order: the indices are the codes (a view when intp)
                codes = _positions(arr.indices, self.missing_code)
                return codes.copy() if copy and not codes.flags.writeable else codes
            codes, first_unknown = _table_codes(arr.indices, 0, table[:-1], int(table[-1]))
            return codes if first_unknown < 0 else None
        if _hash_matched(arr.type):
            codes, found_all = self._matched_codes(arr)
            return codes if found_all else None
        elif pa.types.is_string_view(arr.type):  # polars' text, read where it is (labels of large_string)
            codes, first_unknown = self._utf8(pa.large_string()).encode(arr, missing_code=self.missing_code,
                                                                         unknown_code=_UNKNOWN)
            return codes if first_unknown < 0 else None
        else:
            encoded = pc.dictionary_encode(arr)
            table = self._distinct_codes(encoded.dictionary)
            codes = _gather(table, _positions(encoded.indices, table.size - 1))
        if table.min() == _UNKNOWN and codes.min() == _UNKNOWN:  # unused dictionary entries do not count
            return None
        return codes

    def _value_set(self, value_type: pa.DataType) -> tuple[pa.Array, np.ndarray]:
        """The labels that values of ``value_type`` can equal, as such values, and their codes (then the
        missing code)."""
        if value_type not in self._value_sets:
            if pa.types.is_integer(value_type):
                info = np.iinfo(value_type.to_pandas_dtype())
                low, high = int(info.min), int(info.max)
                keys = [k for k in self.lookup if k is not None and _INT_LITERAL.fullmatch(k)
                        and str(int(k)) == k and low <= int(k) <= high]
                values = pa.array([int(k) for k in keys], type=value_type)
            else:
                keys = [k for k in self.lookup if k is not None]
                values = pa.array(keys, type=value_type)
            codes = np.array([self.lookup[k] for k in keys] + [self.missing_code], dtype=np.intp)
            self._value_sets[value_type] = values, codes
        return self._value_sets[value_type]

    def _matched_codes(self, arr: pa.Array) -> tuple[np.ndarray, bool]:
        """Codes of a text or integer array by hash lookup; and whether every value was found."""
        if is_utf8(arr.type):
            codes, first_unknown = self._utf8(arr.type).encode(arr, missing_code=self.missing_code,
                                                               unknown_code=_UNKNOWN)
            return codes, first_unknown < 0
        if pa.types.is_integer(arr.type) and len(arr):
            dense = self._dense_codes(arr)
            if dense is not None:
                return dense
        value_set, codes = self._value_set(arr.type)
        found = pc.index_in(arr, value_set=value_set)
        return _gather(codes, _positions(found, codes.size - 1)), found.null_count == arr.null_count

    def _dense_codes(self, arr: pa.Array) -> tuple[np.ndarray, bool] | None:
        """Codes of an integer array through a table indexed by value (faster than hashing), when the labels'
        range is narrow (a value outside it is no label); ``None`` otherwise."""
        if arr.type not in self._dense:
            labels = self._value_set(arr.type)[0].to_numpy().astype(np.int64)
            table = None
            if labels.size and not pa.types.is_uint64(arr.type):
                lo, hi = int(labels.min()), int(labels.max())
                lo = 0 if 0 <= lo <= 64 else lo  # a table from 0: values index it without a subtraction
                if hi - lo < max(1 << 16, 4 * labels.size):
                    table = np.full(hi - lo + 1, _UNKNOWN, dtype=np.intp)
                    table[labels - lo] = self._value_set(arr.type)[1][:-1]
            self._dense[arr.type] = None if table is None else (lo, table)
        dense = self._dense[arr.type]
        if dense is None:
            return None
        lo, table = dense
        codes, first_unknown = _table_codes(arr, lo, table, self.missing_code)
        return codes, first_unknown < 0

    def _distinct_codes(self, values: pa.Array) -> np.ndarray:
        """Codes of a few distinct values (then the missing code), ``_UNKNOWN`` for those that are no category."""
        codes = np.empty(len(values) + 1, dtype=np.intp)
        codes[-1] = self.missing_code
        for i, value in enumerate(values.to_pylist()):
            key = canonical(value)
            codes[i] = self.missing_code if key is None else self.lookup.get(key, _UNKNOWN)
        return codes

    def _dictionary_codes(self, dictionary: pa.Array) -> tuple[np.ndarray, bool]:
        """Codes of a dictionary's entries (then the missing code), and whether entry ``i`` is category ``i``
        for every ``i``; kept while chunks share the dictionary."""
        last = self._last_dictionary
        if last is not None and (last[0] is dictionary or last[0].equals(dictionary)):
            return last[1], last[2]
        if _hash_matched(dictionary.type):
            found, _ = self._matched_codes(dictionary)
            value_set = self._value_set(dictionary.type)[0]
            unknown = pc.and_(pc.invert(pc.is_in(dictionary, value_set=value_set)), dictionary.is_valid())
            found[np.asarray(unknown.to_numpy(zero_copy_only=False), dtype=bool)] = _UNKNOWN
            codes = np.append(found, self.missing_code)
        else:
            codes = self._distinct_codes(dictionary)
        identity = bool(np.array_equal(codes[:-1], np.arange(codes.size - 1)))
        self._last_dictionary = (dictionary, codes, identity)
        return codes, identity

    def _raise_unknown(self, arr: pa.Array, offset: int, first_row: int, rows: np.ndarray | None) -> NoReturn:
        """Raise the :class:`DataError` naming the first value of ``arr`` that is not a category."""
        plain = arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
        if pa.types.is_string_view(plain.type):  # Arrow computes little on views
            plain = plain.cast(pa.large_string())
        known = pc.is_in(plain, value_set=self._value_set(plain.type)[0]) if _hash_matched(plain.type) else \
            pa.array([canonical(v) is None or canonical(v) in self.lookup for v in plain.to_pylist()])
        unknown = pc.and_(pc.invert(known), plain.is_valid())
        pos = offset + int(np.flatnonzero(unknown.to_numpy(zero_copy_only=False))[0])
        value = arr[pos - offset].as_py()
        row = 1 + (first_row + pos if rows is None else int(rows[pos]))
        category = self.respelled(value)
        if category is not None:
            raise DataError(f"column {self.column!r}, row {row}: value {value!r} is not one of its categories but "
                            f"the category {category!r} spelled another way ({_spelled_apart(category, value)}); "
                            "pramkit does not guess which spelling is meant: write the value as the category is "
                            "written")
        shown = ", ".join(repr(c) for c in self.categories[:12]) + (", ..." if len(self.categories) > 12 else "")
        raise DataError(f"column {self.column!r}, row {row}: value {value!r} is not one of its categories ({shown})")

    def respelled(self, value: Any) -> Label | None:
        """The category that ``value`` spells another way (the same :func:`label_key`, numeric when every category
        is a number), or ``None``; used when a value is not a category, never per value.

        Parameters
        ----------
        value : Any
            A value that is not one of the categories.

        Returns
        -------
        label or None

        Examples
        --------
        >>> book = Codebook([1, 2, 3], column="hsize")
        >>> book.respelled(" 3"), book.respelled("3.0"), book.respelled("4")
        (3, 3, None)
        >>> book.encode(pa.array(["1", "03"]))
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'hsize', row 2: value '03' is not one of its categories but the category 3 spelled another way (numeric spelling); pramkit does not guess which spelling is meant: write the value as the category is written
        """
        if self._keys is None:
            numeric = numeric_labels(self.categories)
            keys: dict[str | None, Label] = {}
            for c in self.categories:
                keys.setdefault(label_key(c, numeric=numeric), c)
            self._keys = (numeric, keys)
        numeric, keys = self._keys
        key = label_key(value, numeric=numeric)
        return None if key is None else keys.get(key)

    # ------------------------------------------------------------------ decoding

    def labels(self, value_type: pa.DataType) -> pa.Array:
        """The category labels as an Arrow array of ``value_type`` (the missing category as null).

        Parameters
        ----------
        value_type : pyarrow.DataType
            The type of the column the labels are written into.

        Returns
        -------
        pyarrow.Array
            One label per code, converted from its text form; built once per type.

        Raises
        ------
        DataError
            The labels cannot be written in ``value_type``.

        Examples
        --------
        >>> book = Codebook([1, 2, None], column="q", missing="category")
        >>> book.labels(pa.int64()).to_pylist(), book.labels(pa.string()).to_pylist()
        ([1, 2, None], ['1', '2', None])
        >>> Codebook(["a"], column="q").labels(pa.int64())
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'q' has type int64; its categories ['a'] cannot be written in it
        """
        if value_type not in self._labels:
            texts = pa.array(self.texts, type=pa.string())
            try:
                self._labels[value_type] = texts if value_type == texts.type else pc.cast(texts, value_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise DataError(
                    f"column {self.column!r} has type {value_type}; its categories {self.categories} "
                    "cannot be written in it"
                ) from None
        return self._labels[value_type]

    def dictionary(self, value_type: pa.DataType) -> pa.Array:
        """The dictionary of :meth:`decode`'s dictionary arrays of ``value_type``: the labels, without the
        missing category (a null index instead).

        Parameters
        ----------
        value_type : pyarrow.DataType
            The dictionary's value type.

        Returns
        -------
        pyarrow.Array
            The labels of :meth:`labels` with the ``None`` category left out.

        Examples
        --------
        >>> Codebook([1, None, 2], column="q", missing="category").dictionary(pa.int64()).to_pylist()
        [1, 2]
        """
        return self._dictionary(value_type)[0]

    def text_dictionary_array(self, values: np.ndarray, *, na: tuple = ()) -> pa.DictionaryArray | None:
        """A NumPy array of Python strings as a dictionary array of the labels (:meth:`dictionary`), whose
        indices are the codes: one compiled pass, each distinct string object looked up once.

        Parameters
        ----------
        values : numpy.ndarray of object
            The values; ``None``, a float NaN or one of ``na`` is missing (a null index).
        na : tuple
            Other objects that stand for a missing value.

        Returns
        -------
        pyarrow.DictionaryArray or None
            ``None`` if a value is neither missing nor a label's text, or if
            the missing values are a category (``missing="category"``): the
            caller takes the general path, which also names a wrong value.

        Examples
        --------
        >>> book = Codebook(["f", "m"], column="sex")
        >>> arr = book.text_dictionary_array(np.array(["m", None, "f"], dtype=object))
        >>> arr.indices.to_pylist(), book.encode(arr).tolist()
        ([1, None, 0], [1, -1, 0])
        >>> book.text_dictionary_array(np.array(["m", 3], dtype=object)) is None
        True
        """
        if None in self.lookup:
            return None
        indices = self._utf8(pa.string()).encode_objects(values, na)
        return None if indices is None else pa.DictionaryArray.from_arrays(indices, self.dictionary(pa.string()),
                                                                            safe=False)

    def dictionary_objects(self, indices: np.ndarray, value_type: pa.DataType) -> np.ndarray:
        """The entries of :meth:`dictionary` at ``indices`` as Python objects (``-1``: NaN, as pandas writes a
        missing value), in one compiled pass.

        Parameters
        ----------
        indices : numpy.ndarray of intp
            Positions in the dictionary, or ``-1``.
        value_type : pyarrow.DataType
            The dictionary's value type.

        Returns
        -------
        numpy.ndarray of object

        Examples
        --------
        >>> book = Codebook(["f", "m"], column="sex")
        >>> book.dictionary_objects(np.array([1, -1, 0]), pa.string()).tolist()
        ['m', nan, 'f']
        """
        if value_type not in self._objects:
            self._objects[value_type] = (np.nan, *self.dictionary(value_type).to_pylist())
        out = np.empty(len(indices), dtype=object)
        if out.size:  # an empty array may have no memory to point at
            _kernels.object_decode(self._objects[value_type], np.ascontiguousarray(indices, dtype=np.intp), out)
        return out

    def _utf8(self, value_type: pa.DataType) -> Utf8Labels:
        """The labels of :meth:`labels` of a text type, to find and write text values (built once per type)."""
        if value_type not in self._utf8_labels:
            self._utf8_labels[value_type] = Utf8Labels(self.labels(value_type))
        return self._utf8_labels[value_type]

    def _dictionary(self, value_type: pa.DataType) -> tuple[pa.Array, np.ndarray | None]:
        """:meth:`dictionary`, and the index in it of each code, then of ``-1`` (``None``: the code itself)."""
        if value_type not in self._dictionaries:
            labels, index = self.labels(value_type), None
            if None in self.lookup:
                keep = np.arange(len(labels)) != self.lookup[None]
                index = np.append(np.where(keep, np.cumsum(keep) - 1, MISSING), MISSING)
                labels = labels.filter(pa.array(keep))
            self._dictionaries[value_type] = labels, index
        return self._dictionaries[value_type]

    def categorical_dtype(self, like: pa.DataType) -> pd.CategoricalDtype:
        """The pandas dtype of :meth:`decode`'s arrays of the dictionary type ``like``, built once per type.

        Its categories are :meth:`dictionary` as pyarrow converts it to pandas.
        Building it has pandas check every category, which at 10 000
        categories takes longer than decoding a million codes.

        Parameters
        ----------
        like : pyarrow.DictionaryType
            The column's dictionary type (its ``ordered`` flag is kept).

        Returns
        -------
        pandas.CategoricalDtype
            The same object on every call with the same type.

        Examples
        --------
        >>> book = Codebook(["a", None, "b"], column="x", missing="category")
        >>> dtype = book.categorical_dtype(pa.dictionary(pa.int8(), pa.string(), ordered=True))
        >>> list(dtype.categories), dtype.ordered
        (['a', 'b'], True)
        >>> book.decode(np.array([2, 1, 0]), like=pa.dictionary(pa.int8(), pa.string())).to_pandas().tolist()
        ['b', nan, 'a']
        """
        if like not in self._categorical:
            empty = pa.DictionaryArray.from_arrays(pa.array([], type=like.index_type),
                                                   self.dictionary(like.value_type), ordered=like.ordered)
            self._categorical[like] = empty.to_pandas().dtype
        return self._categorical[like]

    def decode(self, codes: np.ndarray, *, like: pa.DataType) -> pa.Array:
        """Arrow array of the labels of ``codes`` (``-1`` -> null), of the type ``like`` of the original column.

        A dictionary type gives a dictionary array whose dictionary is
        :meth:`dictionary` (the missing category, if any, as a null index).

        Parameters
        ----------
        codes : numpy.ndarray
            Codes in ``-1..S-1``.
        like : pyarrow.DataType
            The type of the original column.

        Returns
        -------
        pyarrow.Array
            The labels, of type ``like``; ``-1`` and the ``None`` category are null.

        Raises
        ------
        DataError
            The labels cannot be written in ``like``.

        Examples
        --------
        Decoding the codes of :meth:`encode` gives the values back, in the column's type:

        >>> book = Codebook([1, 2, None], column="q", missing="category")
        >>> values = pa.array([2, None, 1], pa.int16())
        >>> book.decode(book.encode(values), like=values.type).equals(values)
        True
        >>> book.decode(np.array([0, 2, -1]), like=pa.dictionary(pa.int8(), pa.int64())).indices.to_pylist()
        [0, None, None]
        """
        c = np.asarray(codes)
        if pa.types.is_dictionary(like):
            labels, index = self._dictionary(like.value_type)
            if index is not None:
                c = index[c]
            indices = _indices(c, like.index_type, len(labels))
            return pa.DictionaryArray.from_arrays(indices, labels, ordered=like.ordered, safe=False)
        if is_utf8(like):
            released = self._utf8(like).decode(c, like)
            if released is not None:
                return released
        labels = self.labels(like)
        if (pa.types.is_integer(like) or pa.types.is_floating(like)) and not labels.null_count:
            # fixed-width values: NumPy's gather into a buffer Arrow wraps as it is
            mask = c < 0 if c.size and c.min() < 0 else None
            return pa.array(_gather(labels.to_numpy(), c if mask is None else np.where(mask, 0, c)), mask=mask,
                            type=like)
        return labels.take(_indices(c, pa.int64(), len(labels)))


def _indices(codes: np.ndarray, index_type: pa.DataType, size: int) -> pa.Array:
    """Arrow indices of ``index_type`` for codes in ``-1..size-1`` (``-1``: null)."""
    mask = codes < 0 if codes.size and codes.min() < 0 else None
    dtype = np.dtype(index_type.to_pandas_dtype())
    if size - 1 <= np.iinfo(dtype).max:
        return pa.array(codes.astype(dtype, copy=False), mask=mask)
    return pa.array(codes, mask=mask, type=index_type)  # raises: the index type cannot hold every code


def encode(
    values: Any,
    categories: Sequence[Label],
    *,
    column: str,
    missing: Literal["keep", "category"] = "keep",
    first_row: int = 0,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Codes (positions in ``categories``) of a column's values.

    Missing values give ``-1`` (``missing="keep"``) or the position of the
    ``None`` category (``missing="category"``).  A value that is not a
    category raises :class:`DataError` naming the column, the value and its
    row, counted from 1 (``first_row`` is the 0-based row number of the first
    value, or ``rows`` gives each value's 0-based row number).  To encode
    several chunks of one column, build a :class:`Codebook` once.

    Parameters
    ----------
    values : array-like
        The column's values (Arrow, pandas, or a sequence).
    categories : sequence
        The category labels, in code order.
    column : str
        The column's name, for messages.
    missing : {"keep", "category"}
        Missing values get ``-1``, or the position of the ``None`` category.
    first_row : int
        The 0-based row number of the first value.
    rows : numpy.ndarray, optional
        Alternatively, each value's 0-based row number.

    Returns
    -------
    numpy.ndarray
        One code per value.

    Raises
    ------
    DataError
        A value is not a category, or two categories cannot be told apart.

    Examples
    --------
    >>> encode(["m", None, "f"], ["f", "m"], column="sex").tolist()
    [1, -1, 0]
    >>> encode(["m", None, "f"], ["f", "m", None], column="sex", missing="category").tolist()
    [1, 2, 0]
    >>> encode(["f", "x"], ["f", "m"], column="sex", rows=np.array([41, 99]))
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'sex', row 100: value 'x' is not one of its categories ('f', 'm')
    """
    return Codebook(categories, column=column, missing=missing).encode(values, first_row=first_row, rows=rows)


def decode(codes: np.ndarray, categories: Sequence[Label], *, like: pa.DataType, column: str) -> pa.Array:
    """Arrow array of the labels of ``codes`` (``-1`` -> null), of the same type as the original column.

    Parameters
    ----------
    codes : numpy.ndarray
        Codes in ``-1..S-1``.
    categories : sequence
        The category labels, in code order.
    like : pyarrow.DataType
        The type of the original column.
    column : str
        The column's name, for messages.

    Returns
    -------
    pyarrow.Array
        The labels, of type ``like``.

    Raises
    ------
    DataError
        The labels cannot be written in ``like``.

    Examples
    --------
    :func:`encode` and :func:`decode` are inverse on the categories:

    >>> values = pa.array(["m", None, "f"])
    >>> decode(encode(values, ["f", "m"], column="sex"), ["f", "m"], like=values.type, column="sex").equals(values)
    True
    """
    return Codebook(categories, column=column).decode(codes, like=like)


def categories_of(values: Any, *, column: str | None = None) -> list[Label]:
    """The categories of a column.

    A pandas categorical keeps its own categories (in order).  Otherwise the
    distinct non-missing values, sorted (:func:`sort_labels`): numerically when
    every value is a number or numeric text, as text otherwise.  Two values
    that are one value spelled two ways (:func:`spelling_clash`) are an error.

    Parameters
    ----------
    values : array-like
        The column (pandas Series, Arrow array or a sequence).
    column : str, optional
        The column's name, for messages.

    Returns
    -------
    list
        The categories (:func:`sort_labels` order unless categorical).

    Raises
    ------
    DataError
        Two of the values are one value spelled two ways; the message names both and their first rows.

    Examples
    --------
    >>> categories_of(pd.Series(["10", "9", None]))  # integer literals: numbers
    [9, 10]
    >>> categories_of(pd.Series(["10", "9", "x"]))  # text
    ['10', '9', 'x']
    >>> categories_of(pd.Series(pd.Categorical(["low", "high"], categories=["low", "high"])))
    ['low', 'high']
    >>> categories_of(pd.Series(["1", "2", " 2"]), column="hsize")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'hsize': '2' (row 2) and ' 2' (row 3) are one value spelled two ways (surrounding whitespace); pramkit does not guess which spelling is meant: write the value one way in the data
    """
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        cats = [_plain(c) for c in values.cat.categories]
        clash = spelling_clash(cats)
        if clash is not None:
            codes = values.cat.codes.to_numpy()
            a, b = (_first(np.flatnonzero(codes == cats.index(label))) for label in clash[:2])
            raise spelling_error(column, clash, (a, b))
        return cats
    arr = _combined(values)
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    distinct = [v for v in pc.unique(arr).to_pylist() if canonical(v) is not None]
    clash = spelling_clash(distinct)
    if clash is not None:
        raise spelling_error(column, clash, (first_row(arr, clash[0]), first_row(arr, clash[1])))
    return sort_labels(distinct)


def declares_order(data: Any, column: str) -> bool:
    """Whether a column of a frame in memory declares the order of its categories: a pandas categorical or
    an Arrow dictionary marked ordered (a file does not: its categories are found, not declared).

    Parameters
    ----------
    data : pandas.DataFrame, pyarrow.Table or anything else
        The data.
    column : str
        A column of it.

    Returns
    -------
    bool

    Examples
    --------
    >>> bands = pd.Categorical(["5-9", "10-14"], categories=["5-9", "10-14"], ordered=True)
    >>> declares_order(pd.DataFrame({"age": bands}), "age"), declares_order(pd.DataFrame({"age": ["5-9"]}), "age")
    (True, False)
    >>> declares_order(pa.table({"age": pa.array(["5-9"]).dictionary_encode()}), "age"), declares_order("x.csv", "age")
    (False, False)
    """
    if isinstance(data, pd.DataFrame) and column in data.columns:
        dtype = data[column].dtype
        return isinstance(dtype, pd.CategoricalDtype) and bool(dtype.ordered)
    if isinstance(data, pa.Table) and column in data.column_names:
        kind = data.schema.field(column).type
        return pa.types.is_dictionary(kind) and bool(kind.ordered)
    return False


def _first(positions: np.ndarray) -> int | None:
    """The first of 0-based positions as a row counted from 1 (``None`` if there is none)."""
    return int(positions[0]) + 1 if positions.size else None


def first_row(values: pa.Array | pa.ChunkedArray, value: Any) -> int | None:
    """The first row (counted from 1) of ``values`` holding ``value``, for messages (one pass over the column).

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        A column, or a chunk of it (a dictionary column is searched by its values).
    value : Any
        A value of the column's type.

    Returns
    -------
    int or None
        ``None`` if no row holds it.

    Examples
    --------
    >>> first_row(pa.array(["a", " b", "b"]), "b"), first_row(pa.array([1, 2]), 5)
    (3, None)
    """
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    found = pc.index(values, value=pa.scalar(value, type=values.type)).as_py()
    return None if found < 0 else found + 1


def sort_labels(labels: Iterable[Any]) -> list[Label]:
    """Labels in natural order: numbers and numeric text by value, other text alphabetically.

    Parameters
    ----------
    labels : iterable
        Distinct labels (NumPy scalars and whole floats become plain ints).

    Returns
    -------
    list
        The labels sorted.  When every label is an integer written as Python
        writes it (``"10"``, not ``"010"`` or ``"+10"``) they become ints;
        other numeric text is kept as written and sorted by its value (``"05"``
        before ``"10"``, ``"2.5"`` before ``"10.0"``); anything else sorts as text.

    Examples
    --------
    >>> sort_labels(["10", "9", "1"]), sort_labels([2.5, 1, 3.0]), sort_labels(["b", "a", 1])
    ([1, 9, 10], [1, 2.5, 3], [1, 'a', 'b'])
    >>> sort_labels(["01", "1"])  # two texts of the number 1 stay apart
    ['01', '1']
    >>> sort_labels(["10", "05", "100"]), sort_labels(["10.0", "2.5"])  # kept as written, in numeric order
    (['05', '10', '100'], ['2.5', '10.0'])
    """
    values = [_plain(v) for v in labels]
    if all(isinstance(v, str) and _INT_LITERAL.fullmatch(v) and str(int(v)) == v for v in values):
        return [*sorted(int(str(v)) for v in values)]
    if numeric_labels(values):
        return sorted(values, key=lambda v: (Decimal(_trimmed(canonical(v) or "0")), canonical(v) or ""))
    return sorted(values, key=lambda v: (canonical(v) or ""))


def _plain(value: Any) -> Label:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class JointCodebook:
    """Codes of the cells of a cross-classification listed by a joint matrix.

    ``categories`` are tuples, one value per column.  Each column is encoded
    against its own values; the mixed-radix index of a record's values is
    looked up among the listed cells.

    Parameters
    ----------
    categories : sequence of tuples
        The cells the joint matrix lists, in code order; the combinations of
        the columns' values that are not listed are no cell (they break an
        edit rule).
    columns : sequence of str
        The columns, one per position of the tuples.
    levels : sequence of sequences of labels, optional
        Each column's values, when they are more than the cells' (values in no cell, which a record
        holds only with another column missing: :attr:`pramkit.manifest.PerturbedVariable.unpaired`);
        default the cells' values, in order of first appearance.

    Examples
    --------
    Two columns whose combinations ``("a", "y")`` and ``("b", "x")`` are not allowed:

    >>> book = JointCodebook([("a", "x"), ("b", "y")], ["u", "v"])
    >>> book.levels, book.shape
    ([['a', 'b'], ['x', 'y']], (2, 2))
    >>> codes = book.encode([pa.array(["b", "a", None]), pa.array(["y", "x", "x"])])
    >>> codes.tolist()
    [1, 0, -1]
    >>> [a.to_pylist() for a in book.decode(codes, like=[pa.string(), pa.string()])]
    [['b', 'a', None], ['y', 'x', None]]
    """

    def __init__(self, categories: Sequence[tuple], columns: Sequence[str],
                 levels: Sequence[Sequence[Label]] | None = None) -> None:
        self.columns = list(columns)
        self.levels: list[list[Label]] = []
        for i in range(len(self.columns)):
            seen: dict[str | None, Label] = {}
            for cell in categories:
                seen.setdefault(canonical(cell[i]), cell[i])
            for value in levels[i] if levels is not None else ():
                seen.setdefault(canonical(value), value)
            self.levels.append(list(seen.values()))
        self.shape = tuple(len(lv) for lv in self.levels)
        self.books = [Codebook(lv, column=c, missing="category" if None in lv else "keep")
                      for lv, c in zip(self.levels, self.columns)]
        # cell code of each listed category, and the reverse lookup
        self.cell_codes = np.array(
            [[book.lookup[canonical(cell[i])] for i, book in enumerate(self.books)] for cell in categories],
            dtype=np.intp,
        ).reshape(len(categories), len(self.columns))
        self.lookup = np.full(int(np.prod(self.shape)), MISSING, dtype=np.intp)
        self.lookup[np.ravel_multi_index(self.cell_codes.T, self.shape)] = np.arange(len(categories))
        self.categories = list(categories)

    def encode(self, columns: Sequence[Any], *, first_row: int = 0, rows: np.ndarray | None = None) -> np.ndarray:
        """Codes of the records' cells; ``-1`` when any of the columns is missing.  A record
        whose combination is not a cell raises :class:`DataError` naming its row.

        Parameters
        ----------
        columns : sequence of array-like
            The values of each column, in the order of :attr:`columns`.
        first_row : int
            The 0-based row number of the first record.
        rows : numpy.ndarray, optional
            Alternatively, each record's 0-based row number.

        Returns
        -------
        numpy.ndarray
            One cell code per record.

        Raises
        ------
        DataError
            A value is not one of its column's values, or a combination is not a cell.

        Examples
        --------
        >>> book = JointCodebook([("a", "x"), ("b", "y")], ["u", "v"])
        >>> book.encode([pa.array(["a", None]), pa.array(["x", "y"])]).tolist()
        [0, -1]
        >>> book.encode([pa.array(["a", "a"]), pa.array(["x", "y"])], first_row=100)
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: columns ['u', 'v'], row 102: the combination ('a', 'y') is not one of the joint categories (it breaks an edit rule, or leaves its stratum)
        """
        codes, outside = self.encode_cells(columns, first_row=first_row, rows=rows)
        if outside.any():
            self.raise_outside(columns, outside, first_row=first_row, rows=rows)
        return codes

    def encode_cells(self, columns: Sequence[Any], *, first_row: int = 0,
                     rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Codes of the records' cells, ``-1`` when a column is missing or the combination is not
        a cell; and which records hold a combination that is not a cell (a boolean array).

        Parameters
        ----------
        columns : sequence of array-like
            The values of each column, in the order of :attr:`columns`.
        first_row : int
            The 0-based row number of the first record.
        rows : numpy.ndarray, optional
            Alternatively, each record's 0-based row number.

        Returns
        -------
        codes : numpy.ndarray
            One cell code per record (``-1``: missing, or not a cell).
        outside : numpy.ndarray
            Boolean: the records whose combination is not a cell (not those with a missing value).

        Raises
        ------
        DataError
            A value is not one of its column's values.

        Examples
        --------
        >>> book = JointCodebook([("a", "x"), ("b", "y")], ["u", "v"])
        >>> codes, outside = book.encode_cells([pa.array(["a", "b", "a"]), pa.array(["x", "y", "y"])])
        >>> codes.tolist(), outside.tolist()
        ([0, 1, -1], [False, False, True])
        """
        per_column = [book.encode(values, first_row=first_row, rows=rows) for values, book in zip(columns, self.books)]
        stacked = np.stack(per_column)
        missing = (stacked < 0).any(axis=0)
        flat = np.ravel_multi_index(np.where(missing, 0, stacked), self.shape)
        codes = np.where(missing, MISSING, self.lookup[flat])
        return codes, (codes == MISSING) & ~missing

    def raise_outside(self, columns: Sequence[Any], outside: np.ndarray, *, first_row: int = 0,
                      rows: np.ndarray | None = None) -> None:
        """Raise the :class:`DataError` naming the first record whose combination is not a cell.

        Parameters
        ----------
        columns : sequence of array-like
            The values of each column.
        outside : numpy.ndarray
            Boolean, as :meth:`encode_cells` returns it, with at least one ``True``.
        first_row : int
            The 0-based row number of the first record.
        rows : numpy.ndarray, optional
            Alternatively, each record's 0-based row number.

        Raises
        ------
        DataError
            Always: naming the columns, the row (counted from 1) and the combination.

        Examples
        --------
        >>> book = JointCodebook([("a", "x"), ("b", "y")], ["u", "v"])
        >>> columns = [pa.array(["a", "b"]), pa.array(["x", "x"])]
        >>> codes, outside = book.encode_cells(columns)
        >>> book.raise_outside(columns, outside)
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: columns ['u', 'v'], row 2: the combination ('b', 'x') is not one of the joint categories (it breaks an edit rule, or leaves its stratum)
        """
        pos = int(np.flatnonzero(outside)[0])
        row = 1 + (first_row + pos if rows is None else int(rows[pos]))
        cell = tuple(_as_arrow(values)[pos].as_py() for values in columns)
        raise DataError(f"columns {self.columns}, row {row}: the combination {cell!r} is not one of the joint "
                        "categories (it breaks an edit rule, or leaves its stratum)")

    def decode(self, codes: np.ndarray, *, like: Sequence[pa.DataType]) -> list[pa.Array]:
        """One Arrow array per column for the released cell codes (``-1`` -> nulls).

        Parameters
        ----------
        codes : numpy.ndarray
            Cell codes in ``-1..S-1``.
        like : sequence of pyarrow.DataType
            The type of each original column.

        Returns
        -------
        list of pyarrow.Array
            The values of each column; a record with code ``-1`` is null in every column.

        Examples
        --------
        A released cell is a combination allowed by the matrix:

        >>> book = JointCodebook([(1, "x"), (2, "y")], ["u", "v"])
        >>> u, v = book.decode(np.array([1, 0, -1]), like=[pa.int64(), pa.string()])
        >>> list(zip(u.to_pylist(), v.to_pylist()))
        [(2, 'y'), (1, 'x'), (None, None)]
        """
        c = np.asarray(codes)
        missing = c < 0
        out = []
        for i, (book, dtype) in enumerate(zip(self.books, like)):
            column_codes = np.where(missing, MISSING, self.cell_codes[np.where(missing, 0, c), i])
            out.append(book.decode(column_codes, like=dtype))
        return out


@dataclass(frozen=True)
class MissingCodes:
    """Values a file uses to mean "missing" although they are not null.

    It is true when it declares any code.

    Parameters
    ----------
    texts : tuple of str
        Whole field texts that are missing in every text column (CSV:
        ``("NA",)`` by default; see :data:`pramkit.defaults.NA_VALUES`).
    ranges : mapping
        Per column, the ``(low, high)`` ranges of codes declared
        user-missing (SPSS ``missing_ranges``; a single code has ``low == high``).
    source : str
        How the codes were declared, for messages.

    Examples
    --------
    >>> import pyarrow as pa
    >>> codes = MissingCodes(texts=("NA",), ranges={"q": ((9, 9),)}, source="test")
    >>> codes.mask("x", pa.array(["1", "NA", None])).tolist()
    [False, True, False]
    >>> codes.mask("q", pa.array([1.0, 9.0, None])).tolist()
    [False, True, False]
    >>> codes.holds("q", 9), codes.holds("q", 1)
    (True, False)
    """

    texts: tuple[str, ...] = ()
    ranges: Mapping[str, tuple[tuple[Any, Any], ...]] = field(default_factory=dict)
    source: str = ""

    def __bool__(self) -> bool:
        return bool(self.texts) or any(self.ranges.values())

    def mask(self, column: str, values: Any) -> np.ndarray | None:
        """Boolean array: which ``values`` of ``column`` are missing codes (``None``: the column has none).

        Parameters
        ----------
        column : str
            The column's name (ranges are per column).
        values : array-like
            Its values; texts are compared in text columns, ranges in numeric ones.

        Returns
        -------
        numpy.ndarray or None
            One boolean per value (a null is not a missing code), or ``None``
            when no code applies to the column.

        Examples
        --------
        >>> codes = MissingCodes(ranges={"q": ((-99, -90),)})
        >>> codes.mask("q", pa.array([-95, 3, None])).tolist(), codes.mask("other", pa.array([-95]))
        ([True, False, False], None)
        """
        hits = self._hits(column, values)
        return None if hits is None else np.asarray(hits.to_numpy(zero_copy_only=False), dtype=bool)

    def found(self, column: str, values: Any) -> np.ndarray | None:
        """:meth:`mask`, or ``None`` also when none of ``values`` is a missing code (the common case, cheaply).

        Parameters
        ----------
        column : str
            The column's name.
        values : array-like
            Its values.

        Returns
        -------
        numpy.ndarray or None
            As :meth:`mask`, but ``None`` whenever there is nothing to blank.

        Examples
        --------
        >>> codes = MissingCodes(texts=("NA",))
        >>> codes.found("x", pa.array(["1", "2"])), codes.mask("x", pa.array(["1", "2"])).tolist()
        (None, [False, False])
        >>> codes.found("x", pa.array(["1", "NA"])).tolist()
        [False, True]
        """
        hits = self._hits(column, values)
        if hits is None or not hits.true_count:
            return None
        return np.asarray(hits.to_numpy(zero_copy_only=False), dtype=bool)

    def _hits(self, column: str, values: Any) -> pa.BooleanArray | None:
        """Arrow booleans (no nulls): which ``values`` of ``column`` are missing codes; ``None`` if it has none."""
        ranges = self.ranges.get(column, ())
        if not self.texts and not ranges:
            return None
        arr = _combined(values)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        text = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
        hits: list[Any] = []
        if self.texts and text:
            if len(self.texts) <= 4:  # a comparison per text is faster than a hash lookup
                hits.extend(pc.equal(arr, pa.scalar(t, type=arr.type)) for t in self.texts)
            else:
                hits.append(pc.is_in(arr, value_set=pa.array(self.texts, type=arr.type)))
        for lo, hi in ranges:
            if text and isinstance(lo, str):
                hits.append(pc.equal(arr, pa.scalar(lo, type=arr.type)))
            elif not text and not isinstance(lo, str) and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
                hits.append(pc.and_(pc.greater_equal(arr, lo), pc.less_equal(arr, hi)))
        if not hits:
            return None
        combined = hits[0]
        for h in hits[1:]:
            combined = pc.or_(combined, h)
        return combined.fill_null(False)

    def holds(self, column: str, label: Any) -> bool:
        """Whether a category label of ``column`` is one of its missing codes.

        Parameters
        ----------
        column : str
            The column's name.
        label : Any
            A category label (a number, or its text: ``"-95"`` lies in a range
            as ``-95`` does).

        Returns
        -------
        bool
            ``False`` for a missing label (``None``): missing is not a code.

        Examples
        --------
        >>> codes = MissingCodes(texts=("NA",), ranges={"q": ((-99, -90),)})
        >>> codes.holds("q", -95), codes.holds("q", "-95"), codes.holds("q", "NA"), codes.holds("q", None)
        (True, True, True, False)
        """
        key = canonical(label)
        if key is None:
            return False
        if key in self.texts:
            return True
        for lo, hi in self.ranges.get(column, ()):
            if isinstance(lo, str):
                if key == lo:
                    return True
            elif (isinstance(label, (int, float)) and not isinstance(label, bool) and lo <= label <= hi) or (isinstance(label, str) and _number(label) is not None and lo <= _number(label) <= hi):
                return True
        return False

    def refuse_categories(self, column: str, categories: Sequence[Label]) -> None:
        """:class:`DataError` if a category of ``column`` is one of its missing codes.

        A value is never released as a missing code: a matrix that lists one
        as a category must be designed again without it.

        Parameters
        ----------
        column : str
            The column's name.
        categories : sequence
            The categories a matrix may release in it.

        Raises
        ------
        DataError
            Naming the categories that are missing codes.

        Examples
        --------
        >>> codes = MissingCodes(ranges={"q": ((9, 9),)}, source="declared user-missing in the SPSS file")
        >>> codes.refuse_categories("q", [1, 2])  # none is a code: nothing happens
        >>> codes.refuse_categories("q", [1, 2, 9])
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'q': the manifest's category 9 is a missing-value code of the data (declared user-missing in the SPSS file); pramkit never releases a value as a missing code: design the matrix without it
        """
        bad = [c for c in categories if self.holds(column, c)]
        if bad:
            raise DataError(
                f"column {column!r}: the manifest's categor{'y' if len(bad) == 1 else 'ies'} "
                f"{', '.join(repr(b) for b in bad)} {'is a' if len(bad) == 1 else 'are'} missing-value "
                f"code{'' if len(bad) == 1 else 's'} of the data ({self.source}); pramkit never releases a value "
                "as a missing code: design the matrix without it"
            )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
