"""Global recoding before PRAM: categories merged, values top and bottom coded, numbers cut into intervals.

The most used step of statistical disclosure control before any
perturbation: fewer, larger categories.  A :class:`Recoding` is declared by
the officer (a map of categories, thresholds and breaks, never read from the
data's frequencies), so it may be published: it says how the released
categories were formed.  :func:`recode_file` streams a file through it (one
chunk in memory) and writes the recoded file atomically; ``pramkit recode``
is its command, so a release's script repeats it.

* A missing value stays missing, and a missing code stays the code it was:
  a CSV marker (``--na-values -9``), an SPSS user-missing value, Stata's
  ``.a``-``.z``, SAS's ``.A``-``.Z`` are written back as they were read
  (:func:`pramkit.io.iter_batches` with ``keep_missing_codes=True``).  No rule
  may name a missing code, as a category it merges or as a category it
  makes: a merge into a missing code would hide values as missing.
* A value the recoding does not name stays as it is.
* A recoded column keeps its type when it held numbers and every category
  its rule makes is a number (a Stata or SPSS column keeps its value labels
  for the values that stay); otherwise it is written as text (a whole number
  without ``.0``).  A CSV file's columns are text.
* Top and bottom codes and breaks need numbers: a column holding a text that
  is neither a number, a missing code nor a category its merge names is
  refused, naming the value.

The map, as JSON (``{column: rule}``; a key written twice is refused)::

    {"marital_status": {"merge": {"married, spouse present": "married",
                                  "married, spouse absent": "married"}},
     "age": {"top": {"above": 80, "value": "80+"}, "bottom": {"below": 15, "value": "under 15"}},
     "hsize": {"breaks": [0, 1, 2, 4, 9], "labels": ["1", "2", "3-4", "5+"]}}

``breaks`` cut numbers into intervals as sdcMicro's ``globalRecode`` does with a
vector of breaks (R's ``cut``): right-closed intervals ``(a, b]``, except that
the lowest interval includes its lower break (``[a, b]``, R's ``include.lowest =
TRUE``), where ``globalRecode`` would make a value equal to the lowest break
missing; ``"closed": "left"`` gives ``[a, b)`` with the highest break included.
Without ``labels`` the categories are the intervals as R's ``cut`` names them
(``[0,1]``, ``(1,2]``, ...).  A value outside every interval is refused.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit.codebook import MissingCodes
from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError
from pramkit.io_formats import file_format, whole
from pramkit.progress import progress

#: The keys a column's rule may hold.
RULE_KEYS = ("merge", "top", "bottom", "breaks", "labels", "closed")


def _number(value: Any, decimal: str = CSV_DECIMAL) -> float | None:
    """A value as a finite number, or None (a text that is not a number, a boolean, NaN, an infinity); a text
    read with the decimal mark ``decimal`` (with ``","``: ``12,5`` is a number, ``12.5`` is not)."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if decimal != CSV_DECIMAL:
            if CSV_DECIMAL in text:
                return None
            text = text.replace(decimal, CSV_DECIMAL)
        try:
            number = float(text)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _edge(x: float) -> str:
    """A break as R's ``cut`` writes it in a label (``formatC(x, digits = 8, width = 1)``)."""
    return f"{x:.8g}"


@dataclass(frozen=True)
class Breaks:
    """Numbers cut into intervals at ``edges`` (sdcMicro's ``globalRecode`` with a vector of breaks).

    Parameters
    ----------
    edges : tuple of float
        At least two breaks, increasing.
    labels : tuple of str
        One category per interval (``len(edges) - 1``).
    closed : str
        ``"right"``: intervals ``(a, b]``, the lowest ``[a, b]``; ``"left"``: ``[a, b)``, the highest ``[a, b]``.

    Examples
    --------
    >>> b = Breaks.of([0, 15, 65, 120])
    >>> b.labels
    ('[0,15]', '(15,65]', '(65,120]')
    >>> [b.label(x) for x in (0, 15, 15.5, 120, 121)]
    ['[0,15]', '[0,15]', '(15,65]', '(65,120]', None]
    >>> Breaks.of([0, 15, 65, 120], closed="left").label(15)
    '[15,65)'
    """

    edges: tuple[float, ...]
    labels: tuple[str, ...]
    closed: str = "right"

    @classmethod
    def of(cls, edges: Sequence[float], labels: Sequence[str] | None = None, closed: str = "right") -> Breaks:
        """Breaks with their labels (default: the intervals as R's ``cut`` names them)."""
        e = tuple(float(x) for x in edges)
        if labels is None:
            n = len(e) - 1
            if closed == "right":
                labels = [f"{'[' if k == 0 else '('}{_edge(e[k])},{_edge(e[k + 1])}]" for k in range(n)]
            else:
                labels = [f"[{_edge(e[k])},{_edge(e[k + 1])}{']' if k == n - 1 else ')'}" for k in range(n)]
        return cls(e, tuple(labels), closed)

    def label(self, x: float) -> str | None:
        """The category of number ``x``, or None when no interval holds it."""
        e = self.edges
        if x < e[0] or x > e[-1]:
            return None
        if self.closed == "right":
            return self.labels[max(bisect.bisect_left(e, x) - 1, 0)]
        return self.labels[min(bisect.bisect_right(e, x) - 1, len(e) - 2)]


@dataclass(frozen=True)
class ColumnRecode:
    """How one column is recoded.

    Parameters
    ----------
    merge : mapping
        Category (as text) -> the category it becomes.
    top, bottom : tuple or None
        ``(threshold, value)``: every number above (below) the threshold becomes ``value``.
    breaks : Breaks or None
        Every number becomes the label of its interval.

    Examples
    --------
    >>> ColumnRecode(merge={"1": "1-2", "2": "1-2"}, top=(80.0, "80+")).recode(pd.Series([1.0, 2.0, 85.0, None, 30.0]))
    ['1-2', '1-2', '80+', None, '30']
    """

    merge: Mapping[str, str] = field(default_factory=dict)
    top: tuple[float, str] | None = None
    bottom: tuple[float, str] | None = None
    breaks: Breaks | None = None

    @property
    def numeric(self) -> bool:
        """Whether the rule reads numbers (top or bottom codes, breaks)."""
        return self.top is not None or self.bottom is not None or self.breaks is not None

    def outputs(self) -> tuple[str, ...]:
        """The categories the rule makes (merge targets, top and bottom values, interval labels)."""
        made = list(self.merge.values()) + [c[1] for c in (self.top, self.bottom) if c is not None]
        return tuple(dict.fromkeys(made + list(self.breaks.labels if self.breaks is not None else ())))

    @property
    def numeric_out(self) -> bool:
        """Whether every category the rule makes is a number (a column of numbers then stays one)."""
        return all(_number(c) is not None for c in self.outputs())

    def value(self, value: Any, column: str = "the column", decimal: str = CSV_DECIMAL) -> str:
        """The recoded text of one value that is present (neither missing nor a missing code); a text read as a
        number with the decimal mark ``decimal`` (a value left as it is keeps its text: ``12,5`` stays ``12,5``).

        Raises
        ------
        DataError
            The rule reads numbers and ``value`` is not one (nor a category its merge names), or no
            interval of its breaks holds it.

        Examples
        --------
        >>> rule = ColumnRecode(top=(80.0, "80+"))
        >>> rule.value(85), rule.value("30")
        ('80+', '30')
        >>> rule.value("Tyrol", "db040")
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'db040' is not numeric (it holds 'Tyrol'): top and bottom codes and breaks recode numbers; merge its categories instead
        """
        text = code_text(value)
        n = _number(value, decimal) if self.numeric else None
        if self.breaks is not None and n is not None:
            label = self.breaks.label(n)
            if label is None:
                raise DataError(f"column {column!r}: the value {text} lies outside every interval of its breaks "
                                f"({_edge(self.breaks.edges[0])} to {_edge(self.breaks.edges[-1])}); widen the breaks")
            return label
        if self.top is not None and n is not None and n > self.top[0]:
            return self.top[1]
        if self.bottom is not None and n is not None and n < self.bottom[0]:
            return self.bottom[1]
        if text in self.merge:
            return self.merge[text]
        if self.numeric and n is None:
            raise DataError(f"column {column!r} is not numeric (it holds {text!r}): top and bottom codes and breaks "
                            "recode numbers; merge its categories instead")
        return text

    def recode(self, values: pd.Series, column: str = "the column") -> list[str | None]:
        """The values recoded, as text (None: missing)."""
        return [None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else self.value(v, column)
                for v in values.tolist()]

    def words(self) -> str:
        """The rule in words, as a release's documentation states it.

        Examples
        --------
        >>> ColumnRecode(merge={"1": "1-2", "2": "1-2"}, top=(80.0, "80+")).words()
        "'1' and '2' become '1-2'; numbers above 80 become '80+'"
        >>> ColumnRecode(breaks=Breaks.of([0, 15, 120])).words()
        "numbers in intervals at the breaks 0, 15, 120 (closed on the right) become '[0,15]', '(15,120]'"
        """
        parts = []
        merged: dict[str, list[str]] = {}
        for old, new in self.merge.items():
            merged.setdefault(new, []).append(repr(old))
        parts += [f"{' and '.join([', '.join(olds[:-1]), olds[-1]] if len(olds) > 1 else olds)} become {new!r}"
                  if len(olds) > 1 else f"{olds[0]} becomes {new!r}" for new, olds in merged.items()]
        if self.top is not None:
            parts.append(f"numbers above {_edge(self.top[0])} become {self.top[1]!r}")
        if self.bottom is not None:
            parts.append(f"numbers below {_edge(self.bottom[0])} become {self.bottom[1]!r}")
        if self.breaks is not None:
            parts.append(f"numbers in intervals at the breaks {', '.join(_edge(e) for e in self.breaks.edges)} "
                         f"(closed on the {self.breaks.closed}) become "
                         + ", ".join(repr(label) for label in self.breaks.labels))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON values (the map's format, module docstring)."""
        out: dict[str, Any] = {}
        if self.merge:
            out["merge"] = dict(self.merge)
        if self.top is not None:
            out["top"] = {"above": self.top[0], "value": self.top[1]}
        if self.bottom is not None:
            out["bottom"] = {"below": self.bottom[0], "value": self.bottom[1]}
        if self.breaks is not None:
            out["breaks"] = list(self.breaks.edges)
            out["labels"] = list(self.breaks.labels)
            if self.breaks.closed != "right":
                out["closed"] = self.breaks.closed
        return out


def _threshold(rule: Mapping[str, Any], name: str, key: str, where: str) -> tuple[float, str] | None:
    """The ``top`` or ``bottom`` code of a rule, checked."""
    given = rule.get(name)
    if given is None:
        return None
    if not isinstance(given, Mapping) or key not in given or not str(given.get("value", "")).strip():
        raise ParameterError(f"{where}: the {name} code needs '{key}' (a number) and 'value' (its category)")
    try:
        threshold = float(given[key])
    except (TypeError, ValueError):
        raise ParameterError(f"{where}: the {name} code's threshold must be a number, got {given[key]!r}") from None
    if not math.isfinite(threshold):
        raise ParameterError(f"{where}: the {name} code's threshold must be finite, got {given[key]!r}")
    return threshold, code_text(given["value"])


def _breaks(rule: Mapping[str, Any], where: str) -> Breaks | None:
    """The ``breaks`` of a rule (with its ``labels`` and ``closed``), checked."""
    if "breaks" not in rule:
        if "labels" in rule or "closed" in rule:
            raise ParameterError(f"{where}: 'labels' and 'closed' go with 'breaks'")
        return None
    if set(rule) & {"merge", "top", "bottom"}:
        raise ParameterError(f"{where}: breaks recode every number of the column; give them without merge, top "
                             "or bottom")
    edges = rule["breaks"]
    given = [_number(x) if not isinstance(x, str) else None for x in edges] if isinstance(edges, list) else [None]
    numbers = [x for x in given if x is not None]
    if len(given) < 2 or len(numbers) < len(given) or any(b <= a for a, b in itertools.pairwise(numbers)):
        raise ParameterError(f"{where}: breaks are at least two numbers, increasing, e.g. [0, 15, 65, 120]; "
                             f"got {edges!r}")
    closed = rule.get("closed", "right")
    if closed not in ("right", "left"):
        raise ParameterError(f"{where}: 'closed' is \"right\" (intervals (a, b]) or \"left\" ([a, b)), got {closed!r}")
    labels = rule.get("labels")
    if labels is not None and (not isinstance(labels, list) or len(labels) != len(edges) - 1
                               or any(isinstance(x, (dict, list)) or not str(x).strip() for x in labels)):
        raise ParameterError(f"{where}: labels name the {len(edges) - 1} intervals of the breaks, one text each")
    return Breaks.of(numbers, None if labels is None else [code_text(x) for x in labels], closed)


def _rule(column: str, rule: Any) -> ColumnRecode:
    """One column's rule from its map, checked."""
    where = f"the recoding of {column!r}"
    if not isinstance(rule, Mapping) or not rule or set(rule) - set(RULE_KEYS):
        raise ParameterError(f"{where}: give merge, top or bottom (or breaks with labels), e.g. merge: {{old: new}}")
    merge = rule.get("merge") or {}
    if not isinstance(merge, Mapping) or any(isinstance(new, (dict, list)) or not str(new).strip()
                                             for new in merge.values()):
        raise ParameterError(f"{where}: merge maps each category to the category it becomes (not empty)")
    top, bottom = _threshold(rule, "top", "above", where), _threshold(rule, "bottom", "below", where)
    if top is not None and bottom is not None and bottom[0] > top[0]:
        raise ParameterError(f"{where}: the bottom code ({bottom[0]:g}) is above the top code ({top[0]:g})")
    return ColumnRecode({code_text(k): code_text(v) for k, v in merge.items()}, top, bottom, _breaks(rule, where))


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each written once (``json.loads``'s ``object_pairs_hook``)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ParameterError(f"the recoding names {key!r} twice (JSON keeps only the last): write each key once")
        seen[key] = value
    return seen


@dataclass(frozen=True)
class Recoding:
    """A global recoding: one :class:`ColumnRecode` per column.

    Examples
    --------
    >>> r = Recoding.of({"marital_status": {"merge": {"married, spouse present": "married",
    ...                                               "married, spouse absent": "married"}},
    ...                  "age": {"top": {"above": 80, "value": "80+"}}})
    >>> r.columns
    ('marital_status', 'age')
    >>> table = pa.table({"age": [20, 85, None], "marital_status": ["married, spouse absent", "widowed", None]})
    >>> r.apply(table).to_pydict()
    {'age': ['20', '80+', None], 'marital_status': ['married', 'widowed', None]}
    """

    rules: Mapping[str, ColumnRecode]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns recoded."""
        return tuple(self.rules)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> Recoding:
        """A recoding from its map (module docstring), every part checked.

        Raises
        ------
        ParameterError
            The map is not written as the module docstring says (the message names the column and what to change).

        Examples
        --------
        >>> Recoding.of({"age": {"top": {"above": "old", "value": "80+"}}})
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: the recoding of 'age': the top code's threshold must be a number, got 'old'
        >>> Recoding.of({"age": {"breaks": [0, 15, 65, 120], "labels": ["child", "adult", "senior"]}}).to_dict()
        {'age': {'breaks': [0.0, 15.0, 65.0, 120.0], 'labels': ['child', 'adult', 'senior']}}
        """
        if not isinstance(spec, Mapping):
            raise ParameterError("a recoding is a map of columns to their rules ({column: {merge: {...}}})")
        return cls({str(column): _rule(str(column), rule) for column, rule in spec.items()})

    @classmethod
    def read(cls, path: str | Path) -> Recoding:
        """A recoding from a JSON file (module docstring).

        Raises
        ------
        ParameterError
            The file is missing, not such a map, names a key twice at any level, or declares no rule.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     m = pathlib.Path(d, "m.json")
        ...     _ = m.write_text('{"age": {"merge": {"1": "2"}}, "age": {"merge": {"3": "4"}}}')
        ...     Recoding.read(m)
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: the recoding names 'age' twice (JSON keeps only the last): write each key once
        """
        p = Path(path)
        try:
            spec = json.loads(p.read_text(encoding="utf-8"), object_pairs_hook=_once)
        except ParameterError:
            raise
        except FileNotFoundError:
            raise ParameterError(f"the recoding file {p.name} does not exist") from None
        except (OSError, UnicodeError, ValueError) as exc:
            raise ParameterError(f"the recoding file {p.name} is not a JSON map of columns to rules: "
                                 f"{type(exc).__name__}") from None
        if isinstance(spec, Mapping) and not spec:
            raise ParameterError(f"the recoding file {p.name} declares no rule: name a column and its rule "
                                 "({column: {merge: {old: new}}})")
        return cls.of(spec)

    def to_dict(self) -> dict[str, Any]:
        """The map as JSON values."""
        return {column: rule.to_dict() for column, rule in self.rules.items()}

    def lines(self) -> list[str]:
        """One line per column: the column and its rule in words (:meth:`ColumnRecode.words`).

        Examples
        --------
        >>> Recoding.of({"age": {"top": {"above": 80, "value": "80+"}}}).lines()
        ["age: numbers above 80 become '80+'"]
        """
        return [f"{column}: {rule.words()}" for column, rule in self.rules.items()]

    def check(self, columns: Sequence[str], where: str = "the file") -> None:
        """Every column recoded is one of ``columns``.

        Raises
        ------
        ParameterError
            A column is not in the file.
        """
        absent = [c for c in self.rules if c not in columns]
        if absent:
            raise ParameterError(f"the recoding names {', '.join(map(repr, absent))}, not a column of {where}")

    def check_codes(self, missing: MissingCodes) -> None:
        """No rule names a missing code: as a category it merges, nor as a category it makes.

        Raises
        ------
        ParameterError
            Naming the column and the code.

        Examples
        --------
        >>> codes = MissingCodes(texts=("-9",), source="--na-values -9 reads it as missing")
        >>> Recoding.of({"pl030": {"merge": {"7": "-9"}}}).check_codes(codes)
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: the recoding of 'pl030' makes the category '-9', a missing code of the file (--na-values -9 reads it as missing): a merge into a missing code would hide values as missing; recode into another category
        """
        for column, rule in self.rules.items():
            made = next((c for c in rule.outputs() if missing.holds(column, c)), None)
            if made is not None:
                raise ParameterError(f"the recoding of {column!r} makes the category {made!r}, a missing code of the "
                                     f"file ({missing.source}): a merge into a missing code would hide values as "
                                     "missing; recode into another category")
            merged = next((c for c in rule.merge if missing.holds(column, c)), None)
            if merged is not None:
                raise ParameterError(f"the recoding of {column!r} merges {merged!r}, a missing code of the file "
                                     f"({missing.source}): missing codes are kept as they are; leave it out of the map")

    def apply(self, table: pa.Table, missing: MissingCodes | None = None, decimal: str = CSV_DECIMAL) -> pa.Table:
        """``table`` with its recoded columns replaced (:meth:`apply_counted`)."""
        return self.apply_counted(table, missing, decimal)[0]

    def apply_counted(self, table: pa.Table, missing: MissingCodes | None = None, decimal: str = CSV_DECIMAL,
                      first_row: int = 0) -> tuple[pa.Table, dict[str, int]]:
        """``table`` with its recoded columns replaced, and how many values each rule changed.

        A column of numbers stays one when its rule makes numbers only; otherwise it becomes text.
        A null, and a value that ``missing`` declares a missing code, stay as they are.  A text top or bottom
        coded or cut into intervals is read as a number with the decimal mark ``decimal`` (with ``","``, a
        value not so written is refused naming its row: ``first_row`` is the rows of the file before
        ``table``).

        Examples
        --------
        >>> r = Recoding.of({"q": {"merge": {"6": "5", "7": "5"}}})
        >>> out, changed = r.apply_counted(pa.table({"q": [1.0, 6.0, 7.0, -9.0, None]}),
        ...                                MissingCodes(ranges={"q": ((-9.0, -9.0),)}))
        >>> out.column("q").to_pylist(), changed
        ([1.0, 5.0, 5.0, -9.0, None], {'q': 2})
        """
        changed: dict[str, int] = {}
        for column, rule in self.rules.items():
            i = table.schema.get_field_index(column)
            kept = None if missing is None else missing.mask(column, table.column(i))
            array, changed[column] = _recoded(rule, column, table.column(i), kept, decimal, first_row)
            table = table.set_column(i, column, array)
        return table, changed


def _recoded(rule: ColumnRecode, column: str, values: pa.ChunkedArray, kept: np.ndarray | None,
             decimal: str = CSV_DECIMAL, first_row: int = 0) -> tuple[pa.Array, int]:
    """One column recoded (its nulls and missing codes kept) and the number of values changed."""
    kind = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    numbers = (pa.types.is_integer(kind) or pa.types.is_floating(kind)) and rule.numeric_out
    series = values.to_pandas()
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    present = series.notna().to_numpy().copy()
    held = np.zeros(len(series), dtype=bool) if kept is None else kept & present
    present &= ~held
    given = series[present]
    if rule.numeric and decimal != CSV_DECIMAL:  # a number not written with the decimal comma: refused by its row
        from pramkit.io import csv_numbers

        read = present & ~series.map(lambda v: isinstance(v, str) and v in rule.merge).to_numpy(dtype=bool)
        csv_numbers(series.where(read, None), column, decimal=decimal, first_row=first_row)
    made = {u: rule.value(u, column, decimal) for u in pd.unique(given)}
    changed = int(given.map({u: made[u] != code_text(u) for u in made}).sum()) if len(given) else 0
    if numbers:
        out = series.to_numpy(dtype=float, na_value=np.nan).copy()
        out[present] = given.map({u: float(m) for u, m in made.items()}).to_numpy(dtype=float)
        array = pa.array(out, mask=~(present | held))
        # integers stay integers when every number the rule makes is whole (the type of every chunk alike)
        whole = pa.types.is_integer(kind) and all(float(c).is_integer() for c in rule.outputs())
        return (array.cast(pa.int64()) if whole else array), changed
    text = np.full(len(series), None, dtype=object)
    text[present] = given.map(made).to_numpy(dtype=object)
    text[held] = [code_text(v) for v in series[held]]
    return pa.array(text, type=pa.string()), changed


def code_text(value: Any) -> str:
    """A value as text: a whole float without its ``.0`` (SPSS and Stata keep codes as floats).

    Examples
    --------
    >>> code_text(2.0), code_text(2.5), code_text("65+")
    ('2', '2.5', '65+')
    """
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, np.generic):
        return code_text(value.item())
    return str(value)


_text = code_text


@dataclass(frozen=True)
class RecodeResult:
    """What :func:`recode_file` did: the rows written and, per column, how many values its rule changed.

    Parameters
    ----------
    rows : int
        The rows written (every row of the file).
    changed : mapping
        Column -> the values its rule changed (a value merged, top or bottom coded, cut into its
        interval); 0 says the rule changed nothing in this file.
    data, output : str
        The file read and the file written.

    Examples
    --------
    >>> result = RecodeResult(rows=3, changed={"age": 1, "sex": 0}, data="a.csv", output="b.csv")
    >>> result.unchanged, result.to_dict()["changed"]
    (('sex',), {'age': 1, 'sex': 0})
    """

    rows: int
    changed: Mapping[str, int]
    data: str
    output: str

    @property
    def unchanged(self) -> tuple[str, ...]:
        """The columns whose rule changed no value."""
        return tuple(c for c, n in self.changed.items() if n == 0)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values."""
        return {"data": self.data, "output": self.output, "rows": self.rows, "changed": dict(self.changed)}


def declare_recoding(release: Any, path: str | Path, *, data: Any = None, na_values: Sequence[str] = NA_VALUES,
                     sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> Any:
    """The release with the recoding its data went through stated in the manifest's ``input["recode"]``.

    The map is declared by the officer, not read from the data's frequencies, so it is public: it says
    how the released categories were formed.  Each perturbed variable's categories must be recoded
    already (the recoding leaves them as they are), so the statement is true of the release; every
    column the map names must be a column of ``data``.

    Parameters
    ----------
    release : pramkit.release.record.Release
        A designed release.
    path : str or pathlib.Path
        The recoding map (JSON, :meth:`Recoding.read`).
    data : path or frame, optional
        The data the release was designed from (:meth:`pramkit.source.Source.open`); its columns are checked.
    na_values, sep, encoding
        How a CSV file is read.

    Returns
    -------
    pramkit.release.record.Release

    Raises
    ------
    ParameterError
        A perturbed variable holds a category the recoding would change (the data was not recoded by it),
        or the map names a column ``data`` lacks.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.datasets import census
    >>> from pramkit.release.choices import DesignChoices
    >>> data = census(2_000)
    >>> data["age"] = data["age"].astype(str).replace({"65-74": "65+", "75+": "65+"})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     m = pathlib.Path(d, "recode.json")
    ...     _ = m.write_text('{"age": {"merge": {"65-74": "65+", "75+": "65+"}}}')
    ...     release = DesignChoices(method="rr", epsilon=2.0, recoded_by=m).release(data, ["age"])
    ...     try:
    ...         DesignChoices(method="rr", epsilon=2.0, recoded_by=m).release(census(2_000), ["age"])
    ...     except ParameterError as exc:
    ...         print(exc)
    ...     _ = m.write_text('{"agegroup": {"merge": {"65-74": "65+"}}}')
    ...     try:
    ...         DesignChoices(method="rr", epsilon=2.0, recoded_by=m).release(data, ["age"])
    ...     except ParameterError as exc:
    ...         print(exc)
    the data of age was not recoded by recode.json: its category '65-74' becomes '65+'
    the recoding names 'agegroup', not a column of the data (recode.json names a column the data lacks)
    >>> release.manifest.input["recode"]
    {'age': {'merge': {'65-74': '65+', '75+': '65+'}}}
    """
    recoding = Recoding.read(path)
    name = Path(path).name
    if data is not None:
        from pramkit.source import Source

        columns = Source.open(data, na_values=na_values, sep=sep, encoding=encoding).columns
        recoding.check(columns, f"the data ({name} names a column the data lacks)")
    for v in release.manifest.variables:
        for i, column in enumerate(v.columns):
            rule = recoding.rules.get(column)
            if rule is None:
                continue
            made = set(rule.outputs())
            for label in (c[i] if isinstance(c, tuple) else c for c in v.matrix.categories):
                if label is None or code_text(label) in made:
                    continue
                try:
                    recoded = rule.value(label, column)
                except DataError:
                    raise ParameterError(f"the data of {column} was not recoded by {name}: its category "
                                         f"{code_text(label)!r} is not a number, which the map's top or bottom "
                                         "code or breaks recode") from None
                if recoded != code_text(label):
                    raise ParameterError(f"the data of {column} was not recoded by {name}: its category "
                                         f"{code_text(label)!r} becomes {recoded!r}")
    manifest = dataclasses.replace(release.manifest, input={**release.manifest.input, "recode": recoding.to_dict()})
    return dataclasses.replace(release, manifest=manifest)


#: The integer storage types of Stata, SPSS and SAS files (:attr:`pramkit.io.TableMeta.labels` ``storage``).
_INTEGER_STORAGE: dict[str, tuple[int, int]] = {
    name: (int(np.iinfo(kind).min), int(np.iinfo(kind).max)) for name, kind in
    (("int8", np.int8), ("int16", np.int16), ("int32", np.int32))}
#: Labels of a column's display and storage, which a column turned into text no longer has.
_NUMERIC_FORMATS = ("original_variable_types", "storage")


def _fits(rule: ColumnRecode, storage: str | None) -> bool:
    """Whether every number the rule makes fits the integer storage of its column (True for other storage)."""
    bounds = _INTEGER_STORAGE.get(str(storage))
    if bounds is None:
        return True
    return all((n := _number(c)) is not None and n.is_integer() and bounds[0] <= n <= bounds[1]
               for c in rule.outputs())


def _kept_labels(rule: ColumnRecode, column: str, given: Mapping[Any, str], missing: MissingCodes,
                 coded: bool) -> dict[Any, str]:
    """The value labels of a recoded column that still hold: those of its missing codes, and those of the
    values its rule leaves as they are (a label of a value merged away, or coded, is dropped)."""
    kept: dict[Any, str] = {}
    for key, label in given.items():
        letter = coded and isinstance(key, str) and ((len(key) == 1 and key.isalpha()) or key == "_")
        if letter or missing.holds(column, key):
            kept[key] = label
            continue
        try:
            stays = rule.value(key, column) == code_text(key)
        except DataError:
            stays = False
        if stays:
            kept[key] = label
    return kept


def _as_text_codes(column: str, ranges: Sequence[tuple[Any, Any]], where: str) -> tuple[tuple[str, str], ...]:
    """An SPSS column's user-missing numbers as the missing texts of the text column it becomes."""
    texts = tuple((code_text(lo), code_text(lo)) for lo, hi in ranges)
    if any(lo != hi for lo, hi in ranges) or len(texts) > 3 or any(len(t.encode()) > 8 for t, _ in texts):
        raise ParameterError(f"the recoding of {column!r} turns it into text, but {where} declares its user-missing "
                             "values as a range or more than three codes, which an SPSS text column cannot hold: "
                             "recode it into numbers (labels that are numbers), or write another format")
    return texts


def written_meta(meta: Any, recoding: Recoding, where: str) -> Any:
    """What the writer keeps of a Stata, SPSS or SAS file's labels and codes once ``recoding`` applies.

    A recoded column keeps the value labels that still hold (:func:`_kept_labels`); a column of numbers that
    becomes text loses its numeric display format and storage, its labels become labels of texts (SPSS; Stata and
    SAS hold no labels of texts) and its SPSS user-missing numbers become missing texts.  A column of numbers
    holding Stata's or SAS's extended missing values cannot become text (those formats hold no such text).

    Parameters
    ----------
    meta : pramkit.io.TableMeta
        What the reader learnt (codes kept).
    recoding : Recoding
        The recoding.
    where : str
        The file, for messages.

    Returns
    -------
    pramkit.io.TableMeta
        ``meta`` itself for a CSV or Parquet file (unless pramkit wrote it from a Stata, SPSS or SAS file);
        otherwise a copy with its labels and codes adjusted.

    Raises
    ------
    ParameterError
        A column that cannot become text would.

    Examples
    --------
    An SPSS column with user-missing -9: merged, it keeps the labels of the values that stay; turned into
    text, its labels and its missing code become texts.

    >>> from pramkit.io import TableMeta
    >>> meta = TableMeta("spss", ["q"], labels={"variable_value_labels": {"q": {1.0: "yes", 2.0: "no", -9.0: "refused"}},
    ...                                        "storage": {"q": "double"}},
    ...                  missing=MissingCodes(ranges={"q": ((-9.0, -9.0),)}))
    >>> written_meta(meta, Recoding.of({"q": {"merge": {"2": "1"}}}), "a.sav").labels["variable_value_labels"]
    {'q': {1.0: 'yes', -9.0: 'refused'}}
    >>> text = written_meta(meta, Recoding.of({"q": {"merge": {"2": "no/other"}}}), "a.sav")
    >>> text.labels["variable_value_labels"], text.missing.ranges
    ({'q': {'1': 'yes', '-9': 'refused'}}, {'q': (('-9', '-9'),)})
    """
    from pramkit.io_codes import origin

    written = origin(meta)  # a Parquet file pramkit wrote from a Stata, SPSS or SAS file keeps their labels
    entry = file_format(written)
    if entry is None or entry.reader != "stat":  # the labels and formats read through pyreadstat (io_formats)
        return meta
    labels = {k: (dict(v) if isinstance(v, dict) else v) for k, v in meta.labels.items()}
    value_labels = labels.get("variable_value_labels") or {}
    coded = labels.get("coded") or {}
    storage = labels.get("storage") or {}
    ranges = dict(meta.missing.ranges)
    for column, rule in recoding.rules.items():
        text = storage.get(column) == "string" or not rule.numeric_out
        if text and column in coded:
            raise ParameterError(f"the recoding of {column!r} makes text ({next(c for c in rule.outputs() if _number(c) is None)!r}) in a column of "
                                 f"numbers of {where} that holds missing codes such as {meta.missing.ranges[column][0][0]}, "
                                 "which the format holds in no text column: recode into numbers (labels that are "
                                 "numbers)")
        if column in value_labels:
            kept = _kept_labels(rule, column, value_labels[column], meta.missing, column in coded)
            if text and storage.get(column) != "string":
                kept = {code_text(k): v for k, v in kept.items()} if written == "spss" else {}
            value_labels[column] = kept
        if text and storage.get(column) != "string":
            for name in _NUMERIC_FORMATS:
                (labels.get(name) or {}).pop(column, None)
            if column in ranges:
                ranges[column] = _as_text_codes(column, ranges[column], where)
        elif not _fits(rule, storage.get(column)):
            storage.pop(column, None)
    missing = dataclasses.replace(meta.missing, ranges=ranges)
    return dataclasses.replace(meta, labels=labels, missing=missing)


def _empty_table(path: Path, meta: Any) -> pa.Table:
    """The columns of a file that holds no rows, as a table of no rows (its recoded columns' types follow)."""
    import pyarrow.parquet as pq

    entry = file_format(meta.format)
    reader = None if entry is None else entry.reader
    if reader == "csv":
        return pa.table({c: pa.array([], pa.string()) for c in meta.columns})
    if reader == "parquet" and path.is_file():
        return pq.read_schema(path).empty_table()
    if reader == "feather" and path.is_file():
        with pa.memory_map(str(path), "r") as mapped:
            return pa.ipc.open_file(mapped).schema.empty_table()
    raise DataError(f"{path.name} holds no rows, and pramkit cannot tell the types of its columns: nothing to recode")


def recode_file(path: str | Path, out: str | Path, recoding: Recoding, *, force: bool = False,
                na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
                quiet: bool = True, decimal: str = CSV_DECIMAL) -> RecodeResult:
    """Stream ``path`` through ``recoding`` into ``out`` (atomically; one chunk in memory).

    Missing codes are read as the values they are (:func:`pramkit.io.iter_batches` with
    ``keep_missing_codes=True``) and written back unchanged, with the labels and user-missing
    declarations of a Stata or SPSS file (:func:`written_meta`).  A file with a header and no rows is
    recoded into a file with the same header and no rows.

    Parameters
    ----------
    path, out : str or pathlib.Path
        The data file and the recoded file (its suffix gives its format; a CSV file is written
        with the separator and encoding read).
    recoding : Recoding
        The recoding.
    force : bool
        Replace an existing ``out``.
    na_values, sep, encoding
        How a CSV file is read (:func:`pramkit.io.iter_batches`).
    quiet : bool
        No progress bar (progress still reaches :func:`pramkit.progress.watching`).
    decimal : {".", ","}
        The decimal mark of the numbers a CSV file's columns top or bottom coded or cut into intervals hold
        (``","``: ``12,5``; a value left as it is is written as it was read).

    Returns
    -------
    RecodeResult
        The rows written and the values each rule changed.

    Raises
    ------
    ParameterError
        The recoding declares no rule, names a column the file does not have, or names a missing code.
    DataError
        A column top or bottom coded or cut into intervals holds a text, or a number outside its breaks.
    OutputExistsError, WriteError
        As :func:`pramkit.io.iter_batches` and :class:`pramkit.io.TableWriter`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src = pathlib.Path(d) / "a.csv"
    ...     _ = src.write_text("age,sex\\n20,m\\n85,f\\n,f\\n-9,m\\n")
    ...     rule = Recoding.of({"age": {"top": {"above": 80, "value": "80+"}}})
    ...     result = recode_file(src, pathlib.Path(d) / "b.csv", rule, na_values=["-9"])
    ...     print(result.rows, result.changed, pathlib.Path(d, "b.csv").read_text().split())
    4 {'age': 1} ['age,sex', '20,m', '80+,f', ',f', '-9,m']
    """
    from pramkit.io import TableWriter, iter_batches

    src = Path(path)
    if not recoding.rules:
        raise ParameterError("the recoding declares no rule: name a column and its rule ({column: {merge: {old: new}}})")
    meta, tables = iter_batches(src, na_values=tuple(na_values), sep=sep, encoding=encoding, keep_missing_codes=True,
                                decimal=decimal)
    recoding.check(meta.columns, src.name)
    recoding.check_codes(meta.missing)
    kept = written_meta(meta, recoding, src.name)
    changed = dict.fromkeys(recoding.columns, 0)
    with progress(total=meta.rows, desc="recoding", unit="rows", quiet=quiet) as bar, \
            TableWriter(out, force=force, meta=kept, inputs=[path]) as writer:
        for table in tables:
            recoded, counts = recoding.apply_counted(table, meta.missing, meta.decimal, writer.rows)
            writer.write(recoded)
            changed = {c: changed[c] + counts[c] for c in changed}
            bar.update(table.num_rows)
        if writer.rows == 0 and not whole(meta.format):  # a header and no rows: the same header
            writer.write(recoding.apply(_empty_table(src, meta), meta.missing))
    return RecodeResult(rows=writer.rows, changed=changed, data=str(src), output=str(out))


def recoding_lines(manifest: Any) -> list[str]:
    """The global recoding a manifest declares (``input.recode``, :func:`declare_recoding`) in words, one line
    per column; empty when it declares none.

    Examples
    --------
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"age": randomized_response(["80+", "20"], 1.0)},
    ...                 input={"recode": {"age": {"top": {"above": 80, "value": "80+"}}}})
    >>> recoding_lines(m), recoding_lines(Manifest.of({"age": randomized_response(["a", "b"], 1.0)}))
    (["age: numbers above 80 become '80+'"], [])
    """
    spec = (getattr(manifest, "input", None) or {}).get("recode")
    return Recoding.of(spec).lines() if spec else []
