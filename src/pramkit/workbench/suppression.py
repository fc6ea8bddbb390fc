"""Local suppression as a step of the workbench: its settings declared once, the live count, what it did.

:class:`SuppressSpec` declares every setting of ``pramkit suppress`` the workbench offers (the key
variables, k, the rule for a missing value, the importance order, the strata, the solver and its time
limit) with its type, rule, help text, flag and the label of its field: the app's form is made from it
(:func:`pramkit.app.fields.suppress_fields`) and the reproducing script's ``pramkit suppress`` command
from its flags (:meth:`SuppressSpec.flags`), so the three cannot disagree.

:func:`below_k` is the live count the page shows as the settings change (before anything is run): the
records whose combination of the keys fewer than k records share (:func:`pramkit.risk.kanonymity.
k_anonymity_violations`), the file read as :func:`pramkit.suppress.suppress_file` reads it.
:class:`SuppressView` is what the step shows once run: the values suppressed per key (private: they say
where the rare combinations were; shown, never written to ``public/``), the lower bound on the fewest
suppressions and whether the count is proven the fewest, and the records below k before and after.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pramkit.errors import ParameterError
from pramkit.settings import check_rules, flags, setting
from pramkit.validate import Choice, Instance, Number


def column_names(text: str) -> tuple[str, ...]:
    """Column names written comma-separated (as the command line's ``--keys A,B``), stripped, empty parts left out.

    Examples
    --------
    >>> column_names(" urbrur, roof ,,sex")
    ('urbrur', 'roof', 'sex')
    """
    return tuple(t.strip() for t in str(text).split(",") if t.strip())


_NAMES = Instance((tuple, list), "column names, comma-separated")


@dataclass(frozen=True)
class SuppressSpec:
    """The settings of ``pramkit suppress`` the workbench offers, declared once (:mod:`pramkit.settings`).

    Examples
    --------
    >>> spec = SuppressSpec(keys=("urbrur", "roof"), k=3, missing="any")
    >>> spec.check()
    >>> spec.flags()
    [('--keys', 'urbrur,roof'), ('--k', '3'), ('--missing', 'any')]
    >>> SuppressSpec(keys=("a",), k=1).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k must be a whole number >= 2, got 1
    >>> SuppressSpec(keys=("a", "b"), importance=("b",)).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the importance order names every key once (a, b), got b
    """

    keys: tuple[str, ...] = setting((), column_names, _NAMES, "the key variables: every combination of them "
                                    "appears at least k times in the suppressed file", label="Key variables",
                                    widget="columns")
    k: int = setting(3, int, Number(int, low=2), "every combination of the keys appears at least k times (at "
                     "least 2, at most the file's rows)", label="k")
    missing: str = setting("own", str, Choice(("own", "any")), "how a missing value counts: own: it is a value of "
                           "its own, as an intruder reads the file (default); any: it matches any value (sdcMicro's "
                           "rule, under which k - 1 blanked records satisfy every other record)",
                           label="A missing value")
    strata: tuple[str, ...] | None = setting(None, column_names, _NAMES, "columns whose combinations are strata: "
                                             "k-anonymity within each (released as they are; no key may be one)",
                                             label="Strata (optional)", widget="columns")
    importance: tuple[str, ...] | None = setting(
        None, column_names, _NAMES, "every key once, least important first: suppressed first (default: the key "
        "with the most categories first, as sdcMicro)", label="Importance order (optional; least important first)",
        widget="columns")
    method: str = setting("auto", str, Choice(("auto", "exact", "heuristic")), "auto: the exact program when it "
                          "is small enough, else the greedy heuristic (default); exact: the program, refused when "
                          "it does not prove its optimum in the time limit; heuristic: the greedy alone",
                          label="Solver")
    time_limit: float = setting(60.0, float, Number(float, low=0, low_open=True), "seconds the exact program may "
                                "take per stratum (default %(default)s)", label="Time limit of the exact program "
                                "(seconds)")

    def check(self) -> None:
        """Refuse a setting its rule refuses, no key, or an importance order that is not the keys' (one line)."""
        check_rules(self)
        if not self.keys:
            raise ParameterError("choose at least one key variable to make k-anonymous")
        if len(set(self.keys)) < len(self.keys):
            raise ParameterError(f"the key variables repeat a column: {', '.join(self.keys)}")
        if self.importance and sorted(self.importance) != sorted(self.keys):
            raise ParameterError(f"the importance order names every key once ({', '.join(self.keys)}), got "
                                 f"{', '.join(self.importance)}")

    def flags(self) -> list[tuple[str, str | None]]:
        """The flags of ``pramkit suppress`` that give these settings: ``--keys`` and ``--k`` (the command requires
        them), then those not at their default."""
        given = dataclasses.replace(self, strata=self.strata or None, importance=self.importance or None)
        rest = [(flag, value) for flag, value in flags(given) if flag not in ("--keys", "--k")]
        return [("--keys", ",".join(self.keys)), ("--k", str(self.k)), *rest]

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.suppress.suppress_file` these settings give."""
        return {"importance": list(self.importance) if self.importance else None,
                "strata": list(self.strata) if self.strata else None, "missing": self.missing,
                "method": self.method, "time_limit": self.time_limit}

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON values (a session file)."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, values: Any) -> SuppressSpec:
        """The settings of :meth:`to_dict` (lists as tuples).

        Examples
        --------
        >>> spec = SuppressSpec(keys=("a", "b"), k=2, strata=("s",))
        >>> SuppressSpec.from_dict(spec.to_dict()) == spec
        True
        """
        known = {f.name for f in dataclasses.fields(cls)}
        given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(values).items()
                                 if k in known}
        return cls(**given)


def key_frame(path: Path, columns: Sequence[str], reading: dict[str, Any]) -> pd.DataFrame:
    """The columns of a file as :func:`pramkit.suppress.suppress_file` reads its keys and strata: every missing
    value (a missing text, a user-missing code) a null.

    Raises
    ------
    ParameterError
        A column is not one of the file's.
    """
    import pyarrow as pa

    from pramkit.io import blank_missing_codes, iter_batches

    meta, tables = iter_batches(path, keep_missing_codes=True, na_values=tuple(reading.get("na_values", ())),
                                sep=reading.get("sep", ","), encoding=reading.get("encoding", "utf-8"))
    absent = [c for c in columns if c not in meta.columns]
    if absent:
        raise ParameterError(f"{absent[0]!r} is not a column of the file")
    parts = [blank_missing_codes(t.select(list(columns)), meta.missing) for t in tables]
    if not parts:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
    return pa.concat_tables(parts).to_pandas()


@dataclass(frozen=True)
class BelowK:
    """The live count: records whose combination of the keys fewer than k records share.

    Examples
    --------
    >>> BelowK(("a", "b"), 3, "own", 100, 7, 40, 5, 1).sentence()
    '7 of 100 records (7.00 %) are in a combination of a, b shared by fewer than 3 records (5 of the 40 combinations; the smallest is shared by 1).'
    """

    keys: tuple[str, ...]
    k: int
    missing: str
    records: int
    violating: int
    combinations: int
    combinations_below: int
    smallest: int

    def sentence(self) -> str:
        """The count in words."""
        share = 100 * self.violating / self.records if self.records else 0.0
        return (f"{self.violating:,} of {self.records:,} records ({share:.2f} %) are in a combination of "
                f"{', '.join(self.keys)} shared by fewer than {self.k} records ({self.combinations_below:,} of the "
                f"{self.combinations:,} combinations; the smallest is shared by {self.smallest:,}).")


def below_k(frame: pd.DataFrame, spec: SuppressSpec) -> BelowK:
    """The records below k of ``frame`` on the spec's keys, by its rule, within its strata.

    Examples
    --------
    >>> frame = pd.DataFrame({"a": ["x", "x", "y", None], "b": ["p", "p", "p", "p"]})
    >>> below_k(frame, SuppressSpec(keys=("a", "b"), k=2)).violating
    2
    """
    from pramkit.risk.kanonymity import k_anonymity_violations

    v = k_anonymity_violations(frame, list(spec.keys), spec.k, missing=spec.missing,
                               strata=list(spec.strata) if spec.strata else None)
    return BelowK(tuple(v.keys), v.k, v.missing, v.records, v.violating, v.combinations, v.combinations_below,
                  v.smallest)


@dataclass(frozen=True)
class SuppressView:
    """What the suppression did, as the page shows it (private: the counts per key).

    Parameters
    ----------
    spec : SuppressSpec
        The settings run.
    table : pandas.DataFrame
        Per key: the values suppressed (text).
    total : int
        The values suppressed.
    lower_bound : int
        A lower bound on the fewest suppressions.
    optimal : bool
        The count is proven the fewest.
    method : str
        The solver used.
    before, after : BelowK
        The records below k in the file before and after.
    guarantee : str
        The receipt's guarantee sentence.
    blank_records : int
        Records that lost every key.
    warnings : tuple of str
        What the library warned of.
    """

    spec: SuppressSpec
    table: pd.DataFrame
    total: int
    lower_bound: int
    optimal: bool
    method: str
    before: BelowK
    after: BelowK
    guarantee: str
    blank_records: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def bound_words(self) -> str:
        """The count against the lower bound, in words.

        Examples
        --------
        >>> v = SuppressView(SuppressSpec(keys=("a",)), pd.DataFrame(), 12, 10, False, "heuristic",
        ...                  *[BelowK(("a",), 3, "own", 9, 0, 1, 0, 9)] * 2, "")
        >>> v.bound_words
        'heuristic: 12 suppressions; the fewest are at least 10 (gap 20.0 %)'
        """
        if self.optimal:
            return f"{self.method}: {self.total:,} suppressions, the fewest (proven)"
        gap = "infinite" if self.lower_bound == 0 else f"{100 * (self.total - self.lower_bound) / self.lower_bound:.1f} %"
        return (f"{self.method}: {self.total:,} suppressions; the fewest are at least {self.lower_bound:,} "
                f"(gap {gap})")


@dataclass(frozen=True)
class Suppressed:
    """The suppression in force in a workbench: its settings, view, files and the file it was made from.

    Parameters
    ----------
    spec : SuppressSpec
        The settings.
    view : SuppressView
        What it did.
    receipt : pathlib.Path
        The receipt ``pramkit suppress`` wrote beside the suppressed file (in the work folder).
    before : object
        The file it was made from (:class:`pramkit.workbench.source.Source`: the file as opened, or its
        recoded copy).
    """

    spec: SuppressSpec
    view: SuppressView
    receipt: Path
    before: Any


__all__ = ["BelowK", "SuppressSpec", "SuppressView", "Suppressed", "below_k", "column_names", "key_frame"]
