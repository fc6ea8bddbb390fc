"""The rules of a release's settings, checked before any data is read: the splits, the treatments
of missing values, and one rule per setting that :func:`pramkit.release.plan.plan_release` takes as
the command line does (:class:`pramkit.release.spec.ReleaseSpec` declares its settings with the same
rules).  This module reads no data and imports no data library, so a command's ``--help`` starts light.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from pramkit.defaults import RULE_BREAKING
from pramkit.design.registry import FAMILIES, family
from pramkit.errors import ParameterError
from pramkit.settings import handed_on
from pramkit.validate import ENCODING, POSITIVE, SEPARATOR, Checked, Choice, Rule

#: Splits of the record budget.
SPLITS = ("equal", "optimal", "joint")
#: Treatments of missing values.
MISSING = ("keep", "category")
#: The families besides ``dp`` that design one matrix over the joint cells (``split="joint"``): the
#: invariant family keeps the joint table of the cells it reads (``p R = p`` over the cells).
JOINT_METHODS = ("invariant",)
#: Where the design's frequencies come from (the ledger's ``frequencies``).
SOURCES = ("none", "prior", "exact", "dp_counts")


class Ruled(NamedTuple):
    """A setting's rule and how its messages name it."""

    noun: str
    rule: Rule


def _method(value: Any, name: str) -> None:
    family(value)


def _design_epsilon(value: Any, name: str) -> None:
    """A design epsilon: a non-negative finite number (positive when DP counts spend it: :func:`plan_release`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ParameterError(f"design epsilon must be a non-negative finite number, got {value!r}")


#: The rules of the settings :func:`plan_release` takes as the command line does, the same rules
#: :class:`pramkit.release.spec.ReleaseSpec` declares them with (one rule per setting).
RULES: dict[str, Ruled] = {
    "method": Ruled("method", Checked(_method, "a design family: " + ", ".join(FAMILIES), "bogus")),
    "epsilon": Ruled("epsilon (the record budget)", POSITIVE),
    "design_epsilon": Ruled("design epsilon", Checked(_design_epsilon, "a non-negative finite number", -1.0)),
    "split": Ruled("split", Choice(SPLITS)),
    "missing": Ruled("missing", Choice(MISSING)),
    "rule_breaking": Ruled("rule breaking", Choice(RULE_BREAKING)),
    "sep": Ruled("the separator (--sep)", SEPARATOR),
    "encoding": Ruled("encoding", ENCODING),
}


def check_settings(**values: Any) -> None:
    """Check ``values`` (``{setting: value}``, ``None``: not given) by :data:`RULES`: the keywords of
    :func:`plan_release` are refused as the command line's flags are, with the same messages.

    Examples
    --------
    >>> check_settings(split="joint", missing="keep")
    >>> check_settings(missing="drop")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: missing must be one of 'keep', 'category', got 'drop'
    """
    done = handed_on()  # a specification's settings, checked by its rules already (pramkit.settings.checked)
    for name, value in values.items():
        if value is not None and name not in done:
            RULES[name].rule.check(value, RULES[name].noun)


def check_split(split: str, method: str, options: Mapping[str, Any]) -> None:
    """Refuse a split the family does not design (``split`` itself is checked by :data:`RULES`).

    Examples
    --------
    >>> check_split("optimal", "dp", {"objective": "variance"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: split 'optimal' maximises information; use split equal with objective 'variance'
    """
    if split == "joint" and method != "dp" and method not in JOINT_METHODS:
        raise ParameterError(f"split 'joint' is for methods {', '.join(('dp', *JOINT_METHODS))}; method {method!r} "
                             "designs each variable on its own (split equal)")
    if split == "optimal" and method != "dp":
        raise ParameterError(f"split {split!r} is for method 'dp'; method {method!r} designs each variable "
                             "on its own (split equal)")
    if split == "optimal" and options.get("objective") == "variance":  # refused before any data is read
        raise ParameterError("split 'optimal' maximises information; use split equal with objective 'variance'")
