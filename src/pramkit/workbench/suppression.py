"""Local suppression as a step of the workbench: its settings declared once, the live count, what it did.

:class:`pramkit.release.suppress_spec.SuppressSpec` declares every setting of ``pramkit suppress`` (the key
variables, k, the rule for a missing value, the importance order, the strata, the solver and its time
limit) with its type, rule, help text, flag and the label of its field: the command's flags, the app's form
(:func:`pramkit.app.fields.suppress_fields`) and the reproducing script's ``pramkit suppress`` command
(:meth:`SuppressSpec.flags`) are made from it, so they cannot disagree.

:func:`below_k` is the live count the page shows as the settings change (before anything is run): the
records whose combination of the keys fewer than k records share (:func:`pramkit.risk.kanonymity.
k_anonymity_violations`), the file read as :func:`pramkit.suppress.suppress_file` reads it.
:class:`SuppressView` is what the step shows once run: the values suppressed per key (private: they say
where the rare combinations were; shown, never written to ``public/``), the lower bound on the fewest
suppressions and whether the count is proven the fewest, and the records below k before and after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pramkit.errors import ParameterError
from pramkit.release.suppress_spec import SuppressSpec, column_names


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
