"""Categories of a column, and the codes 0..S-1 that the kernels work on.

Matching between data values and category labels is by value, through one
canonical text form (:func:`canonical`): the integer 1, the float 1.0 and the
CSV field ``"1"`` are the same category; ``"01"`` is another one.  Missing
values (null, NaN) get code ``-1`` unless missing is declared a category
(labelled ``None``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.errors import DataError
from pramkit.matrix import Label

MISSING = -1
_INT_LITERAL = re.compile(r"[+-]?\d+")


def canonical(value: Any) -> str | None:
    """The text form used to match a value to a category; ``None`` for missing."""
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


def _as_arrow(values: Any) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, pd.Series):
        values = values.array
    try:
        arr = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataError(f"cannot read the column's values: {exc}") from None
    # a large pandas column backed by several Arrow chunks converts to a ChunkedArray
    return _as_arrow(arr) if isinstance(arr, pa.ChunkedArray) else arr


def _label_lookup(categories: Sequence[Label], column: str) -> dict[str | None, int]:
    lookup: dict[str | None, int] = {}
    for i, c in enumerate(categories):
        key = canonical(c)
        if key in lookup:
            raise DataError(
                f"column {column!r}: categories {categories[lookup[key]]!r} and {c!r} cannot be told apart in the data"
            )
        lookup[key] = i
    return lookup


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
    value, or ``rows`` gives each value's 0-based row number).
    """
    arr = _as_arrow(values)
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    dictionary = arr.dictionary.to_pylist()
    idx = arr.indices.fill_null(len(dictionary)).to_numpy(zero_copy_only=False).astype(np.intp, copy=False)
    lookup = _label_lookup(categories, column)
    if missing == "category":
        if None not in lookup:
            raise DataError(f"column {column!r}: missing is declared a category but no category is null")
        missing_code = lookup[None]
    else:
        missing_code = MISSING
    lut = np.empty(len(dictionary) + 1, dtype=np.intp)
    lut[-1] = missing_code  # null entries
    for i, value in enumerate(dictionary):
        key = canonical(value)
        code = missing_code if key is None else lookup.get(key)
        if code is None:
            pos = int(np.argmax(idx == i))
            row = 1 + (first_row + pos if rows is None else int(rows[pos]))
            shown = ", ".join(repr(c) for c in categories[:12]) + (", ..." if len(categories) > 12 else "")
            raise DataError(
                f"column {column!r}, row {row}: value {value!r} is not one of its categories ({shown})"
            )
        lut[i] = code
    return lut[idx]


def decode(codes: np.ndarray, categories: Sequence[Label], *, like: pa.DataType, column: str) -> pa.Array:
    """Arrow array of the labels of ``codes`` (``-1`` -> null), of the same type as the original column."""
    texts = [canonical(c) for c in categories]
    value_type = like.value_type if pa.types.is_dictionary(like) else like
    labels = pa.array(texts, type=pa.string())
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        try:
            labels = pc.cast(labels, value_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise DataError(
                f"column {column!r} has type {value_type}; its categories {list(categories)} cannot be written in it"
            ) from None
    elif value_type != labels.type:
        labels = labels.cast(value_type)
    c = np.asarray(codes)
    mask = c < 0
    if pa.types.is_dictionary(like):
        indices = pa.array(c, mask=mask, type=like.index_type)
        return pa.DictionaryArray.from_arrays(indices, labels)
    return labels.take(pa.array(c, mask=mask))


def categories_of(values: Any) -> list[Label]:
    """The categories of a column.

    A pandas categorical keeps its own categories (in order).  Otherwise the
    distinct non-missing values, sorted: numerically when every value is a
    number or an integer literal (labels become ints), as text otherwise.
    """
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        return [_plain(c) for c in values.cat.categories]
    arr = _as_arrow(values)
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    distinct = [v for v in pc.unique(arr).to_pylist() if canonical(v) is not None]
    return sort_labels(distinct)


def sort_labels(labels: Iterable[Any]) -> list[Label]:
    """Labels in natural order: integer literals as ints, numbers numerically, text alphabetically."""
    values = [_plain(v) for v in labels]
    if all(isinstance(v, str) and _INT_LITERAL.fullmatch(v) for v in values):
        ints = sorted({int(v) for v in values})
        if len(ints) == len(values):  # "01" and "1" both present: keep the text
            return ints
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return sorted(int(v) if isinstance(v, float) and v.is_integer() else v for v in values)
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
    """

    def __init__(self, categories: Sequence[tuple], columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.levels: list[list[Label]] = []
        for i in range(len(self.columns)):
            seen: dict[str | None, Label] = {}
            for cell in categories:
                seen.setdefault(canonical(cell[i]), cell[i])
            self.levels.append(list(seen.values()))
        self.shape = tuple(len(lv) for lv in self.levels)
        # cell code of each listed category, and the reverse lookup
        self.cell_codes = np.array(
            [[_label_lookup(lv, c)[canonical(cell[i])] for i, (lv, c) in enumerate(zip(self.levels, self.columns))]
             for cell in categories], dtype=np.intp,
        ).reshape(len(categories), len(self.columns))
        self.lookup = np.full(int(np.prod(self.shape)), MISSING, dtype=np.intp)
        self.lookup[np.ravel_multi_index(self.cell_codes.T, self.shape)] = np.arange(len(categories))
        self.categories = list(categories)

    def encode(self, columns: Sequence[Any], *, first_row: int = 0, rows: np.ndarray | None = None) -> np.ndarray:
        """Codes of the records' cells; ``-1`` when any of the columns is missing."""
        per_column = [
            encode(values, lv, column=name, first_row=first_row, rows=rows)
            for values, lv, name in zip(columns, self.levels, self.columns)
        ]
        stacked = np.stack(per_column)
        missing = (stacked < 0).any(axis=0)
        flat = np.ravel_multi_index(np.where(missing, 0, stacked), self.shape)
        codes = np.where(missing, MISSING, self.lookup[flat])
        unknown = np.flatnonzero((codes == MISSING) & ~missing)
        if unknown.size:
            pos = int(unknown[0])
            row = 1 + (first_row + pos if rows is None else int(rows[pos]))
            cell = tuple(self.levels[i][stacked[i, pos]] for i in range(len(self.columns)))
            raise DataError(
                f"columns {self.columns}, row {row}: the combination {cell!r} is not one of the joint categories"
            )
        return codes

    def decode(self, codes: np.ndarray, *, like: Sequence[pa.DataType]) -> list[pa.Array]:
        """One Arrow array per column for the released cell codes (``-1`` -> nulls)."""
        c = np.asarray(codes)
        missing = c < 0
        out = []
        for i, (lv, name, dtype) in enumerate(zip(self.levels, self.columns, like)):
            column_codes = np.where(missing, MISSING, self.cell_codes[np.where(missing, 0, c), i])
            out.append(decode(column_codes, lv, like=dtype, column=name))
        return out


@dataclass(frozen=True)
class MissingCodes:
    """Values a file uses to mean "missing" although they are not null.

    texts: whole field texts that are missing in every text column (CSV:
        ``("NA",)`` by default; see :data:`pramkit.io.NA_VALUES`)
    ranges: per column, the ``(low, high)`` ranges of codes declared
        user-missing (SPSS ``missing_ranges``; a single code has ``low == high``)
    source: how the codes were declared, for messages

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
        """Boolean array: which ``values`` of ``column`` are missing codes (``None``: the column has none)."""
        ranges = self.ranges.get(column, ())
        if not self.texts and not ranges:
            return None
        arr = _as_arrow(values)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        text = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
        hits = []
        if self.texts and text:
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
        return np.asarray(combined.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)

    def holds(self, column: str, label: Any) -> bool:
        """Whether a category label of ``column`` is one of its missing codes."""
        key = canonical(label)
        if key is None:
            return False
        if key in self.texts:
            return True
        for lo, hi in self.ranges.get(column, ()):
            if isinstance(lo, str):
                if key == lo:
                    return True
            elif isinstance(label, (int, float)) and not isinstance(label, bool) and lo <= label <= hi:
                return True
            elif isinstance(label, str) and _number(label) is not None and lo <= _number(label) <= hi:
                return True
        return False

    def refuse_categories(self, column: str, categories: Sequence[Label]) -> None:
        """:class:`DataError` if a category of ``column`` is one of its missing codes.

        A value is never released as a missing code: a matrix that lists one
        as a category must be designed again without it.
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
