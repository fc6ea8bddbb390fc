"""Global recoding before PRAM: categories merged, values top and bottom coded.

The most used step of statistical disclosure control before any
perturbation: fewer, larger categories.  A :class:`Recoding` is declared by
the officer (a map of categories and thresholds, never read from the data's
frequencies), so it may be published: it says how the released categories
were formed.  :func:`recode_file` streams a file through it (one chunk in
memory) and writes the recoded file atomically; ``pramkit recode`` is its
command, so a release's script repeats it.

A recoded column is written as text (its categories are the recoded ones);
a missing value stays missing; a value the recoding does not name stays as
it is (as text: a whole number without ``.0``).

The map, as JSON (``{column: rule}``)::

    {"marital_status": {"merge": {"married, spouse present": "married",
                                  "married, spouse absent": "married"}},
     "age": {"top": {"above": 80, "value": "80+"}, "bottom": {"below": 15, "value": "under 15"}}}
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.progress import progress


@dataclass(frozen=True)
class ColumnRecode:
    """How one column is recoded.

    Parameters
    ----------
    merge : mapping
        Category (as text) -> the category it becomes.
    top, bottom : tuple or None
        ``(threshold, value)``: every number above (below) the threshold becomes ``value``.

    Examples
    --------
    >>> ColumnRecode(merge={"1": "1-2", "2": "1-2"}, top=(80.0, "80+")).recode(pd.Series([1.0, 2.0, 85.0, None, 30.0]))
    ['1-2', '1-2', '80+', None, '30']
    """

    merge: Mapping[str, str] = field(default_factory=dict)
    top: tuple[float, str] | None = None
    bottom: tuple[float, str] | None = None

    def recode(self, values: pd.Series) -> list[str | None]:
        """The values recoded, as text (None: missing)."""
        numbers = pd.to_numeric(values, errors="coerce") if self.top or self.bottom else None
        out: list[str | None] = []
        for i, v in enumerate(values.tolist()):
            if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
                out.append(None)
                continue
            n = None if numbers is None else numbers.iloc[i]
            if self.top is not None and n is not None and not math.isnan(n) and n > self.top[0]:
                out.append(self.top[1])
            elif self.bottom is not None and n is not None and not math.isnan(n) and n < self.bottom[0]:
                out.append(self.bottom[1])
            else:
                text = _text(v)
                out.append(self.merge.get(text, text))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON values (the map's format, module docstring)."""
        out: dict[str, Any] = {}
        if self.merge:
            out["merge"] = dict(self.merge)
        if self.top is not None:
            out["top"] = {"above": self.top[0], "value": self.top[1]}
        if self.bottom is not None:
            out["bottom"] = {"below": self.bottom[0], "value": self.bottom[1]}
        return out


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
        """
        if not isinstance(spec, Mapping):
            raise ParameterError("a recoding is a map of columns to their rules ({column: {merge: {...}}})")
        rules = {}
        for column, rule in spec.items():
            where = f"the recoding of {column!r}"
            if not isinstance(rule, Mapping) or not rule or set(rule) - {"merge", "top", "bottom"}:
                raise ParameterError(f"{where}: give merge, top or bottom (e.g. merge: {{old: new}})")
            merge = rule.get("merge") or {}
            if not isinstance(merge, Mapping) or any(not str(new).strip() for new in merge.values()):
                raise ParameterError(f"{where}: merge maps each category to the category it becomes (not empty)")
            codes: dict[str, tuple[float, str] | None] = {}
            for name, key in (("top", "above"), ("bottom", "below")):
                given = rule.get(name)
                if given is None:
                    codes[name] = None
                    continue
                if not isinstance(given, Mapping) or key not in given or not str(given.get("value", "")).strip():
                    raise ParameterError(f"{where}: the {name} code needs '{key}' (a number) and 'value' (its category)")
                try:
                    threshold = float(given[key])
                except (TypeError, ValueError):
                    raise ParameterError(f"{where}: the {name} code's threshold must be a number, "
                                         f"got {given[key]!r}") from None
                if not math.isfinite(threshold):
                    raise ParameterError(f"{where}: the {name} code's threshold must be finite, got {given[key]!r}")
                codes[name] = (threshold, str(given["value"]))
            top, bottom = codes["top"], codes["bottom"]
            if top is not None and bottom is not None and bottom[0] > top[0]:
                raise ParameterError(f"{where}: the bottom code ({bottom[0]:g}) is above the top code ({top[0]:g})")
            rules[str(column)] = ColumnRecode({str(k): str(v) for k, v in merge.items()}, top, bottom)
        return cls(rules)

    @classmethod
    def read(cls, path: str | Path) -> Recoding:
        """A recoding from a JSON file (module docstring).

        Raises
        ------
        ParameterError
            The file is missing or not such a map.
        """
        p = Path(path)
        try:
            spec = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ParameterError(f"the recoding file {p.name} does not exist") from None
        except (OSError, UnicodeError, ValueError) as exc:
            raise ParameterError(f"the recoding file {p.name} is not a JSON map of columns to rules: "
                                 f"{type(exc).__name__}") from None
        return cls.of(spec)

    def to_dict(self) -> dict[str, Any]:
        """The map as JSON values."""
        return {column: rule.to_dict() for column, rule in self.rules.items()}

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

    def apply(self, table: pa.Table) -> pa.Table:
        """``table`` with its recoded columns replaced by their recoded text."""
        for column, rule in self.rules.items():
            i = table.schema.get_field_index(column)
            table = table.set_column(i, column, pa.array(rule.recode(table.column(column).to_pandas()),
                                                         type=pa.string()))
        return table


def code_text(value: Any) -> str:
    """A value as text: a whole float without its ``.0`` (SPSS and Stata keep codes as floats).

    Examples
    --------
    >>> code_text(2.0), code_text(2.5), code_text("65+")
    ('2', '2.5', '65+')
    """
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_text = code_text


def declare_recoding(release: Any, path: str | Path) -> Any:
    """The release with the recoding its data went through stated in the manifest's ``input["recode"]``.

    The map is declared by the officer, not read from the data's frequencies, so it is public: it says
    how the released categories were formed.  Each perturbed variable's categories must be recoded
    already (the recoding leaves them as they are), so the statement is true of the release.

    Parameters
    ----------
    release : pramkit.release.record.Release
        A designed release.
    path : str or pathlib.Path
        The recoding map (JSON, :meth:`Recoding.read`).

    Returns
    -------
    pramkit.release.record.Release

    Raises
    ------
    ParameterError
        A perturbed variable holds a category the recoding would change (the data was not recoded by it).

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
    the data of age was not recoded by recode.json: its category '65-74' becomes '65+'
    >>> release.manifest.input["recode"]
    {'age': {'merge': {'65-74': '65+', '75+': '65+'}}}
    """
    from dataclasses import replace

    recoding = Recoding.read(path)
    for v in release.manifest.variables:
        for i, column in enumerate(v.columns):
            rule = recoding.rules.get(column)
            if rule is None:
                continue
            labels = [c[i] if isinstance(c, tuple) else c for c in v.matrix.categories]
            for label, recoded in zip(labels, rule.recode(pd.Series(labels, dtype=object))):
                if label is not None and recoded != _text(label):
                    raise ParameterError(f"the data of {column} was not recoded by {Path(path).name}: its category "
                                         f"{_text(label)!r} becomes {recoded!r}")
    manifest = replace(release.manifest, input={**release.manifest.input, "recode": recoding.to_dict()})
    return replace(release, manifest=manifest)


def recode_file(path: str | Path, out: str | Path, recoding: Recoding, *, force: bool = False,
                na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
                quiet: bool = True) -> int:
    """Stream ``path`` through ``recoding`` into ``out`` (atomically; one chunk in memory).

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

    Returns
    -------
    int
        The rows written.

    Raises
    ------
    ParameterError
        The recoding names a column the file does not have.
    DataError, OutputExistsError, WriteError
        As :func:`pramkit.io.iter_batches` and :class:`pramkit.io.TableWriter`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src = pathlib.Path(d) / "a.csv"
    ...     _ = src.write_text("age,sex\\n20,m\\n85,f\\n,f\\n")
    ...     n = recode_file(src, pathlib.Path(d) / "b.csv", Recoding.of({"age": {"top": {"above": 80, "value": "80+"}}}))
    ...     print(n, pathlib.Path(d, "b.csv").read_text().split())
    3 ['age,sex', '20,m', '80+,f', ',f']
    """
    from pramkit.io import TableWriter, iter_batches

    meta, tables = iter_batches(Path(path), na_values=tuple(na_values), sep=sep, encoding=encoding)
    recoding.check(meta.columns, Path(path).name)
    rows = 0
    with progress(total=meta.rows, desc="recoding", unit="rows", quiet=quiet) as bar, \
            TableWriter(out, force=force, meta=meta, inputs=[path]) as writer:
        for table in tables:
            writer.write(recoding.apply(table))
            rows += table.num_rows
            bar.update(table.num_rows)
    return rows
