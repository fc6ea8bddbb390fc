"""The strict reading of a manifest: what :meth:`pramkit.manifest.Manifest.read` refuses, what a
version-5 manifest must state, and every stated total recomputed from the matrices.

The audit reads a manifest more strictly than any other command (docs/audit.md):

* :func:`validation_checks` -- the manifest through the very validation of
  :meth:`pramkit.manifest.Manifest.from_dict` (the one :meth:`~pramkit.manifest.Manifest.read`
  runs): a manifest that every other command refuses fails here, with the field it names;
* :func:`presence_checks` -- every figure pramkit writes into a version-5 manifest (the
  record's, the perturbation's and each variable's epsilon, its realised law, the ledger of a
  design that read the data) is there: a figure removed after the fact is a finding;
* :func:`realised_law_checks` -- each variable's ``realised_law.epsilon`` (and its epsilon given
  the block) recomputed from the integer units the engine draws with
  (:func:`pramkit.privacy.law.realised_law`), as exact fractions, never from the stored figure;
* :func:`total_checks` -- the record's epsilon, the perturbation's and the ledger's, recomputed as
  the design step plus the *recomputed* epsilon of every variable: ``e^stated`` (a lower bound at
  60 digits) against the exact product of the variables' ratios times ``e^design`` (an upper bound).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping, Sequence
from decimal import ROUND_CEILING, Context, Decimal, DivisionByZero, InvalidOperation
from fractions import Fraction
from typing import Any

import numpy as np

from pramkit.audit.ratios import (
    DENSE_CATEGORIES,
    TIGHT_RTOL,
    _epsilon_check,
    _log,
    exact_ratio,
    largest_ratio,
    stated_epsilon,
)
from pramkit.audit.result import Check
from pramkit.errors import ManifestError
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.privacy.law import realised_law

#: 60 digits; an exponent beyond Decimal's range gives an infinity (a bound that still holds: ``e^1e308`` is
#: above any double) rather than raising Overflow.
_CTX = Context(prec=60, traps=[InvalidOperation, DivisionByZero])
_UP = Context(prec=60, rounding=ROUND_CEILING, traps=[InvalidOperation, DivisionByZero])
_FIELD = re.compile(r"field '([^']+)'")
_VARIABLE = re.compile(r"^variables\[(\d+)\]\.?(.*)$")
#: The stated figures pramkit writes at the top of a version-5 manifest.
TOP_FIGURES = ("record_epsilon", "perturbation_epsilon", "record_epsilon_given_structure")
#: The stated figures of each variable.
VARIABLE_FIGURES = ("epsilon", "realised_law", "epsilon_given_block")
#: The stated figures of a ledger.
LEDGER_FIGURES = ("design_epsilon", "perturbation_epsilon", "record_epsilon")
#: What the realised law's epsilon is recomputed from.
UNITS = "the integer units the engine draws with"
#: ``input`` entries that say the design read the data (so a ledger must account for it).
READ_DATA = ("frequencies", "design_epsilon", "record_epsilon_budget")


def _subject(raw: Mapping[str, Any], path: str) -> tuple[str, str]:
    """A field path of the manifest as (subject, field): ``variables[2].epsilon`` is the third
    variable's ``epsilon``; anything else belongs to the manifest.

    Examples
    --------
    >>> _subject({"variables": [{"name": "age"}]}, "variables[0].realised_law.epsilon")
    ('age', 'realised_law.epsilon')
    >>> _subject({"variables": []}, "ledger.record_epsilon")
    ('manifest', 'ledger.record_epsilon')
    """
    found = _VARIABLE.match(path)
    listed = raw.get("variables")
    variables: list[Any] = listed if isinstance(listed, list) else []
    if found and int(found.group(1)) < len(variables) and isinstance(variables[int(found.group(1))], dict):
        name = variables[int(found.group(1))].get("name")
        if isinstance(name, str) and name:
            return name, found.group(2) or "variable"
    return "manifest", path


def validation_checks(raw: Mapping[str, Any]) -> list[Check]:
    """The manifest through :meth:`pramkit.manifest.Manifest.from_dict`, the validation every other
    command runs: one check, failed with the field the refusal names.

    Examples
    --------
    >>> import json
    >>> from pramkit.design.classic import randomized_response
    >>> raw = json.loads(Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).to_json())
    >>> [(c.field, c.passed) for c in validation_checks(raw)]
    [('read', True)]
    >>> raw["record_epsilon"] = 0.5
    >>> [(c.subject, c.field, c.passed) for c in validation_checks(raw)]
    [('manifest', 'record_epsilon', False)]
    """
    try:
        Manifest.from_dict(copy.deepcopy(dict(raw)))
    except ManifestError as exc:
        named = _FIELD.search(str(exc))
        subject, field = _subject(raw, named.group(1)) if named else ("manifest", "read")
        return [Check("manifest", subject, field, False,
                      f"every other command refuses this manifest (Manifest.read): {exc}")]
    return [Check("manifest", "manifest", "read", True,
                  "every check of Manifest.read passes (format, version, fields, stated epsilons)")]


def _reads_data(raw: Mapping[str, Any]) -> bool:
    """Whether the manifest's ``input`` says its design read the data (frequencies, a design budget)."""
    inp = raw.get("input")
    return isinstance(inp, dict) and any(inp.get(k) not in (None, 0, 0.0) for k in READ_DATA)


def presence_checks(manifest: Manifest, raw: Mapping[str, Any]) -> list[Check]:
    """Every stated figure pramkit writes into a version-5 manifest, present: a failed check per
    figure removed (one passed check when nothing is missing).

    What must be there is what :meth:`pramkit.manifest.Manifest.to_dict` writes for these matrices,
    and a ledger whenever ``input`` says the design read the data.

    Examples
    --------
    >>> import json
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> raw = json.loads(m.to_json())
    >>> [(c.field, c.passed) for c in presence_checks(m, raw)]
    [('stated figures', True)]
    >>> del raw["variables"][0]["realised_law"], raw["record_epsilon"]
    >>> [(c.subject, c.field, c.passed) for c in presence_checks(m, raw)]
    [('manifest', 'record_epsilon', False), ('sex', 'realised_law', False)]
    """
    canonical = manifest.to_dict()
    absent: list[tuple[str, str]] = []
    for key in TOP_FIGURES:
        if key in canonical and key not in raw:
            absent.append(("manifest", key))
    ledger = raw.get("ledger")
    if not isinstance(ledger, dict):
        if _reads_data(raw):
            absent.append(("manifest", "ledger"))
    else:
        for key in LEDGER_FIGURES:
            if key in canonical.get("ledger", {}) and key not in ledger:
                absent.append(("manifest", f"ledger.{key}"))
    for entry, written in zip(raw["variables"], canonical["variables"]):
        name = written["name"]
        stated = entry if isinstance(entry, dict) else {}
        for key in VARIABLE_FIGURES:
            if key in written and key not in stated:
                absent.append((name, key))
        law, law_written = stated.get("realised_law"), written.get("realised_law", {})
        if isinstance(law, dict):
            absent += [(name, f"realised_law.{key}") for key in law_written if key not in law]
        elif "realised_law" in stated:
            absent.append((name, "realised_law"))
    if not absent:
        return [Check("manifest", "manifest", "stated figures", True,
                      "every figure a version-5 manifest states is present")]
    out = []
    for subject, field in absent:
        why = ("the design read the data (input: frequencies or a design budget), so the ledger must account for "
               "it: removed after the manifest was written" if field == "ledger" else
               "absent, or not an object: pramkit writes it into every version-5 manifest of these matrices "
               "(removed or altered after the manifest was written)")
        out.append(Check("manifest", subject, field, False, why))
    return out


def units_ratio(matrix: PramMatrix) -> tuple[Fraction | float | None, Fraction | float | None]:
    """``e^epsilon`` of the law the engine realises for a matrix, and given its blocks, exactly:
    the largest ratio of two rows' integer units in one column, as a fraction (``math.inf`` when a
    column mixes zero and positive units); for a closed-form law (drawn exactly), the ratio of the
    stored doubles.  ``(None, None)`` above :data:`pramkit.audit.manifest.DENSE_CATEGORIES`.

    Examples
    --------
    >>> units_ratio(PramMatrix.form8([0.75, 0.75]))
    (Fraction(3, 1), Fraction(3, 1))
    >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.75, 0.75]), PramMatrix.identity(["n/a"])])
    >>> units_ratio(m)
    (inf, Fraction(3, 1))
    """
    if matrix.size > DENSE_CATEGORIES:
        return None, None
    law = realised_law(matrix)
    if law.exact:
        whole = exact_ratio(matrix)
        blocks = [exact_ratio(part) for _, part in matrix.blocks] if matrix.blocks else [whole]
        known = [b for b in blocks if b is not None]
        return whole, (max(known) if known and len(known) == len(blocks) else None)
    units = law.unit_matrix().astype(object)
    whole = largest_ratio(units.max(axis=0), units.min(axis=0))
    if law.blocks is None:
        return whole, whole
    given = [largest_ratio(units[np.ix_(idx, idx)].max(axis=0), units[np.ix_(idx, idx)].min(axis=0))
             for idx, _ in law.blocks]
    return whole, max(given)


def realised_law_checks(manifest: Manifest, raw: Mapping[str, Any]) -> list[Check]:
    """Each variable's ``realised_law``: its epsilon (and epsilon given the block) against the exact one of
    the integer units (:func:`units_ratio`), and its ``exact`` and ``denominator`` against the law's.

    Examples
    --------
    >>> import json
    >>> raw = json.loads(Manifest.of({"sex": PramMatrix.form8([0.9, 0.9], categories=["f", "m"])}).to_json())
    >>> m = Manifest.from_dict(raw)
    >>> [(c.field, c.passed) for c in realised_law_checks(m, raw)]
    [('realised_law.epsilon', True), ('realised_law.denominator', True)]
    >>> raw["variables"][0]["realised_law"]["epsilon"] = 0.1
    >>> [(c.field, c.passed) for c in realised_law_checks(m, raw)]
    [('realised_law.epsilon', False), ('realised_law.denominator', True)]
    """
    out = []
    for v, entry in zip(manifest.variables, raw["variables"]):
        stated = entry.get("realised_law") if isinstance(entry, dict) else None
        if not isinstance(stated, dict):
            continue  # named by presence_checks
        law = realised_law(v.matrix)
        whole, given = units_ratio(v.matrix)
        if "epsilon" in stated:
            out.append(_epsilon_check(v.name, "realised_law.epsilon", stated["epsilon"], whole, of=UNITS))
        if "epsilon_given_block" in stated:
            out.append(_epsilon_check(v.name, "realised_law.epsilon_given_block", stated["epsilon_given_block"],
                                      given, of=UNITS))
        if stated.get("exact") is not law.exact:
            out.append(Check("manifest", v.name, "realised_law.exact", False,
                             f"stated {stated.get('exact')!r}, but the engine draws this matrix "
                             f"{'exactly from its closed form' if law.exact else 'in integer units'}"))
        elif not law.exact:
            ok = stated.get("denominator") == f"2^{law.bits}"
            out.append(Check("manifest", v.name, "realised_law.denominator", ok,
                             f"stated {stated.get('denominator')!r}, the engine's units are of 1/2^{law.bits}"))
    return out


def _exp_down(x: float) -> Decimal:
    """A lower bound on ``e^x`` at 60 digits (``e^0``: 1, exactly).

    >>> _exp_down(0.0), _exp_down(1.0) < Decimal(1).exp(_CTX)
    (Decimal('1'), True)
    """
    return Decimal(1) if x == 0 else _CTX.next_minus(Decimal(x).exp(_CTX))


def _product_up(design: float, ratios: Sequence[Fraction]) -> Decimal:
    """An upper bound on ``e^design`` times the product of ``ratios`` at 60 digits."""
    total = Fraction(1)
    for r in ratios:
        total *= r
    factor = _UP.divide(Decimal(total.numerator), Decimal(total.denominator))
    if total.denominator != 1:  # an integer product is exact at 60 digits; a quotient is stepped up
        factor = _UP.next_plus(factor)
    return _UP.multiply(Decimal(1) if design == 0 else _UP.next_plus(Decimal(design).exp(_UP)), factor)


def _total_check(subject: str, field: str, value: Any, design: float,
                 ratios: Sequence[Fraction | float | None], words: str) -> Check:
    """A stated total against the design step plus the recomputed epsilons, exactly (see module docstring)."""
    stated = stated_epsilon(value)
    if stated is None:
        return Check("manifest", subject, field, False, f"stated {value!r} is not an epsilon")
    if any(r is None for r in ratios):
        return Check("manifest", subject, field, True,
                     f"stated {stated:.17g}; not recomputed (a variable of more than {DENSE_CATEGORIES} categories)")
    known = [r for r in ratios if r is not None]
    infinite = any(isinstance(r, float) and math.isinf(r) for r in known)
    exact = math.inf if infinite else design + math.fsum(_log(r) for r in known)
    if infinite or math.isinf(stated):
        ok = math.isinf(stated)  # an infinite total stated as finite is understated; infinite is always safe
        return Check("manifest", subject, field, ok,
                     f"stated {stated!r} {'>=' if ok else 'is below'} {words}, recomputed from the matrices: "
                     f"{exact!r}", {"stated": value, "exact": "inf" if infinite else exact})
    fractions = [r for r in known if isinstance(r, Fraction)]
    proved = _exp_down(stated) >= _product_up(design, fractions)
    if not proved:
        return Check("manifest", subject, field, False,
                     f"stated {stated:.17g} is below {words}, recomputed from the matrices: {exact:.17g}",
                     {"stated": value, "exact": exact})
    tight = stated <= exact + TIGHT_RTOL * max(1.0, exact)
    how = "" if tight else "conservative: "
    return Check("manifest", subject, field, True,
                 f"stated {stated:.17g} >= {how}{words}, recomputed from the matrices: {exact:.17g}",
                 {"stated": value, "exact": exact})


def total_checks(manifest: Manifest, raw: Mapping[str, Any],
                 ratios: Sequence[tuple[Fraction | float | None, Fraction | float | None]]) -> list[Check]:
    """The record's, the perturbation's and the ledger's epsilons recomputed from the matrices:
    the design step (the ledger's, else the ``input``'s) plus each variable's exact epsilon
    (``ratios``: each variable's ``e^epsilon`` and given its block, as :func:`pramkit.audit.manifest.
    variable_ratios` gives them).

    Examples
    --------
    >>> import json
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.audit.manifest import variable_ratios
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0), "age": randomized_response([1, 2], 0.5)})
    >>> raw = json.loads(m.to_json())
    >>> [(c.field, c.passed) for c in total_checks(m, raw, variable_ratios(m))]
    [('record_epsilon', True), ('perturbation_epsilon', True)]
    >>> raw["record_epsilon"] = 1.4
    >>> [(c.field, c.passed) for c in total_checks(m, raw, variable_ratios(m))]
    [('record_epsilon', False), ('perturbation_epsilon', True)]
    """
    stated_ledger, stated_input = raw.get("ledger"), raw.get("input")
    ledger: Mapping[str, Any] | None = stated_ledger if isinstance(stated_ledger, dict) else None
    source: Mapping[str, Any] = ledger if ledger is not None else (
        stated_input if isinstance(stated_input, dict) else {})
    design = stated_epsilon(source.get("design_epsilon", 0.0))
    if design is None or math.isinf(design):
        return [Check("manifest", "manifest", "ledger.design_epsilon", False,
                      f"stated {source.get('design_epsilon')!r} is not a finite epsilon")]
    plain = [r[0] for r in ratios]
    given: list[Fraction | float | None] = []
    shown = 0.0  # a joint variable whose margins mix blocks: its epsilon given what is shown, as computed
    for v, (_, block) in zip(manifest.variables, ratios):
        if v.applied_to is None and v.epsilon_given_shown > v.block_epsilon:
            shown += v.epsilon_given_shown
            given.append(Fraction(1))
        else:
            given.append(block)
    out = []
    words = "the design step plus the variables" if design else "the sum of the variables"
    if "record_epsilon" in raw:
        out.append(_total_check("manifest", "record_epsilon", raw["record_epsilon"], design, plain, words))
    if "perturbation_epsilon" in raw:
        out.append(_total_check("manifest", "perturbation_epsilon", raw["perturbation_epsilon"], 0.0, plain,
                                "the sum of the variables"))
    if "record_epsilon_given_structure" in raw:
        out.append(_total_check("manifest", "record_epsilon_given_structure", raw["record_epsilon_given_structure"],
                                math.nextafter(design + shown, math.inf) if shown else design, given, words + " given the structure"))
    if ledger is not None:  # the ledger states its figures given what the release shows exactly
        shown_design = math.nextafter(design + shown, math.inf) if shown else design
        if "record_epsilon" in ledger:
            out.append(_total_check("manifest", "ledger.record_epsilon", ledger["record_epsilon"], shown_design,
                                    given, words + " given the structure"))
        if "perturbation_epsilon" in ledger:
            out.append(_total_check("manifest", "ledger.perturbation_epsilon", ledger["perturbation_epsilon"],
                                    math.nextafter(shown, math.inf) if shown else 0.0, given,
                                    "the sum of the variables given the structure"))
    return out
