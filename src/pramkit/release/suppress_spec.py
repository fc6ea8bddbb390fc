"""The settings of local suppression (``pramkit suppress``), declared once: the command's flags, the app's form and
the reproducing script's command are made from :class:`SuppressSpec` (:mod:`pramkit.settings`).  This module reads no
data and imports no data library, so ``pramkit suppress --help`` starts light."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

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
    """The settings of ``pramkit suppress``, declared once (:mod:`pramkit.settings`): the command's optional flags,
    the app's form and the reproducing script's command.

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
                           label="A missing value", parse_choices=True)
    strata: tuple[str, ...] | None = setting(None, column_names, _NAMES, "columns whose combinations are strata: "
                                             "k-anonymity within each (released as they are; no key may be one)",
                                             label="Strata (optional)", widget="columns", metavar="S,...")
    importance: tuple[str, ...] | None = setting(
        None, column_names, _NAMES, "every key once, least important first: suppressed first (default: the key "
        "with the most categories first, as sdcMicro)", label="Importance order (optional; least important first)",
        widget="columns", metavar="A,B,...")
    method: str = setting("auto", str, Choice(("auto", "exact", "heuristic")), "auto: the exact program when it "
                          "is small enough, else the greedy heuristic (default); exact: the program, refused when "
                          "it does not prove its optimum in the time limit; heuristic: the greedy alone",
                          label="Solver", parse_choices=True)
    time_limit: float = setting(60.0, float, Number(float, low=0, low_open=True), "seconds the exact program may "
                                "take per stratum (default 60)", label="Time limit of the exact program "
                                "(seconds)", metavar="SECONDS")

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
