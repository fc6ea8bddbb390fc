"""What an audit finds: one :class:`Check` per field, gathered into an :class:`AuditResult`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    """The verdict on one field of the release.

    Parameters
    ----------
    audit : str
        ``"manifest"``, ``"release"`` or ``"engine"``.
    subject : str
        What was checked: a variable, ``"ledger"``, ``"receipt"``, a column, ``"file"``.
    field : str
        The field or property checked (``"epsilon"``, ``"impossible transitions"``, ...).
    passed : bool
        True when the field is what the release states.
    detail : str
        The evidence in one line (what was recomputed, what differs).
    data : dict
        Figures behind the verdict (JSON values), e.g. the rows of impossible transitions.

    Examples
    --------
    >>> Check("manifest", "sex", "epsilon", True, "stated 1 >= exact 1").line()
    'pass  manifest  sex: epsilon: stated 1 >= exact 1'
    """

    audit: str
    subject: str
    field: str
    passed: bool
    detail: str
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def line(self) -> str:
        """The check as one line of text."""
        return f"{'pass' if self.passed else 'FAIL'}  {self.audit}  {self.subject}: {self.field}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON values."""
        return {"audit": self.audit, "subject": self.subject, "field": self.field, "passed": self.passed,
                "detail": self.detail, **({"data": self.data} if self.data else {})}


@dataclass(frozen=True)
class AuditResult:
    """Every check of one audit run, with the audits that ran.

    Parameters
    ----------
    audits : tuple of str
        The audits that ran (``"manifest"``, ``"release"``, ``"engine"``).
    checks : tuple of Check
        Their checks, in order.
    seconds : float
        Wall-clock time.

    Examples
    --------
    >>> r = AuditResult(("manifest",), (Check("manifest", "sex", "epsilon", True, "ok"),
    ...                                 Check("manifest", "age", "epsilon", False, "stated 1 < exact 2")))
    >>> r.passed, r.verdict()
    (False, 'audit: 1 of 2 checks failed (manifest): age epsilon')
    """

    audits: tuple[str, ...]
    checks: tuple[Check, ...]
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> tuple[Check, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.passed)

    def verdict(self) -> str:
        """The verdict in one line."""
        ran = ", ".join(self.audits)
        if self.passed:
            return f"audit: all {len(self.checks)} checks passed ({ran})"
        named = "; ".join(f"{c.subject} {c.field}" for c in self.failures[:5])
        more = f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        return f"audit: {len(self.failures)} of {len(self.checks)} checks failed ({ran}): {named}{more}"

    def empirical_epsilons(self) -> dict[str, float]:
        """The engine audit's empirical epsilon lower bound per variable."""
        return {c.subject: c.data["empirical_epsilon"] for c in self.checks
                if c.audit == "engine" and "empirical_epsilon" in c.data}

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values: the verdict, the checks and, after an engine audit,
        ``empirical_epsilon`` (the lower bound per variable)."""
        out: dict[str, Any] = {"passed": self.passed, "verdict": self.verdict(), "audits": list(self.audits),
                               "checks": [c.to_dict() for c in self.checks], "seconds": self.seconds}
        if "engine" in self.audits:
            out["empirical_epsilon"] = self.empirical_epsilons()
        return out

