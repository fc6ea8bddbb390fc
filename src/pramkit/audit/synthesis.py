"""The audit of a synthesized release (``pramkit synthesize``): every stated figure recomputed.

From the manifest alone: each DP table's mechanism, sensitivity (2, or 1 under the add-or-remove
neighbours the manifest states), epsilon and shape (against the declared categories and public cells); the
tables are exactly the ones the procedure measures; the ledger's epsilon is at least the exact rational sum
of the tables' epsilons, within the budget; the guarantee sentence is the ledger's; under add-or-remove
neighbours, the number of records is the total the noisy tables estimate.  With the released file: its digest and rows, every value a
declared category, every rule kept, every combination shown at least ``min_count`` times.  With the
original: the columns said to be released as they are equal the original's.  With the key: the
release is made again and compared byte for byte.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit.audit.result import Check
from pramkit.errors import PramkitError
from pramkit.privacy.gaussian import MAX_SIGMA2, gaussian_rho
from pramkit.privacy.zcdp import exponential_rho

AUDIT = "synthesis"


def is_synthesis(raw: Any) -> bool:
    """True for the manifest of ``pramkit synthesize``.

    Examples
    --------
    >>> is_synthesis({"format": "pramkit.synthesis"}), is_synthesis({"variables": []})
    (True, False)
    """
    from pramkit.methods import file_kind

    return file_kind(raw) == "synthesis manifest"


def _check(field: str, passed: bool, detail: str, subject: str = "release") -> Check:
    return Check(AUDIT, subject, field, bool(passed), detail)


def manifest_checks(raw: dict[str, Any]) -> list[Check]:
    """The manifest's own figures, recomputed (no data needed).

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.synthesize import synthesize_release
    >>> df = pd.DataFrame({"sex": ["f", "m"] * 40, "a": ["x", "y", "y", "x"] * 20})
    >>> raw = synthesize_release(df, variables="a", public="sex", epsilon=1.0, key=bytes(32),
    ...                          categories={"a": ["x", "y"]}).manifest
    >>> all(c.passed for c in manifest_checks(raw))
    True
    >>> raw["measurements"][0]["epsilon"] = 3.0  # a table spent more than the ledger says
    >>> [c.field for c in manifest_checks(raw) if not c.passed]  # and the sentence quotes the sum
    ['ledger.design_epsilon', 'ledger.statement']
    """
    from pramkit.synthesize import measured_tables
    from pramkit.synthesize_pgm import delta_of_manifest, is_pgm, planned_tables, table_sensitivity

    checks: list[Check] = []
    delta = delta_of_manifest(raw)
    k = table_sensitivity(raw)
    variables = raw.get("variables") or {}
    ms = raw.get("measurements") or []
    names = list(variables)
    wanted = planned_tables(raw) if is_pgm(raw) else [list(axes) for axes in measured_tables(names)]
    got = [m.get("axes") for m in ms]
    checks.append(_check("measurements", got == wanted,
                         f"{len(ms)} tables: each variable given the public cell, then each pair"
                         if got == wanted else f"the tables are {got}, the procedure measures {wanted}"))
    total = _table_checks(raw, ms, k, delta, checks)
    total += _selection_checks(raw, checks)  # under zCDP, the selections' rho (epsilon^2 / 8)
    checks += neighbours_checks(raw)
    led = raw.get("ledger") or {}
    stated = led.get("design_epsilon")
    if delta is None:
        ok = isinstance(stated, (int, float)) and Fraction(stated) >= total and led.get("record_epsilon") == stated
        checks.append(_check("ledger.design_epsilon", ok, f"{stated} >= the tables' exact sum {float(total)!r}" if ok
                             else f"stated {stated}, the tables' epsilons add up to {float(total)!r}"))
    else:
        checks += zcdp_checks(raw, total, delta)
    budget = led.get("record_epsilon_budget")
    if budget is not None:
        checks.append(_check("ledger.record_epsilon_budget", isinstance(stated, (int, float)) and stated <= budget,
                             f"{stated} within the budget {budget}"))
    try:
        words = regenerated_ledger(raw, stated_codes(raw))["statement"]
        checks.append(_check("ledger.statement", words == led.get("statement"), "the ledger's sentence"
                             if words == led.get("statement") else "the sentence is not the one the ledger gives"))
    except (PramkitError, KeyError, TypeError, ValueError) as exc:
        checks.append(_check("ledger", False, f"the ledger cannot be regenerated ({exc})"))
    return checks


def neighbours_checks(raw: dict[str, Any]) -> list[Check]:
    """The neighbour relation a manifest states (``neighbours``), and under add-or-remove neighbours its number
    of records: the total its noisy tables estimate, rounded (:func:`pramkit.synthesize_pgm.estimated_total`),
    never a figure of the original.  No check for a manifest without the field (replace-one neighbours).

    Examples
    --------
    >>> raw = {"neighbours": "add-remove", "procedure": {"model": "pgm"}, "rows": 101,
    ...        "measurements": [{"epsilon": 1.0, "noisy": [60, 41], "sensitivity": 1}]}
    >>> [(c.field, c.passed) for c in neighbours_checks(raw)]
    [('neighbours', True), ('rows', True)]
    >>> [(c.field, c.passed) for c in neighbours_checks({**raw, "rows": 120})]
    [('neighbours', False), ('rows', False)]
    >>> neighbours_checks({"procedure": {"model": "pgm"}, "rows": 101})
    []
    """
    from pramkit.synthesize_pgm import check_neighbours_field, estimated_total, released_records

    if "neighbours" not in raw:
        return []

    passed, detail = check_neighbours_field(raw, raw.get("neighbours"))
    checks = [_check("neighbours", passed, detail)]
    ms = [m for m in raw.get("measurements") or [] if isinstance(m, dict)]
    try:
        rows: int | None = released_records(estimated_total(ms))
    except (TypeError, ValueError, KeyError):
        rows = None
    ok = rows is not None and raw.get("rows") == rows
    checks.append(_check("rows", ok, f"{rows:,} records: the total the noisy tables estimate, rounded" if ok else
                         f"stated {raw.get('rows')!r} records, the noisy tables estimate {rows!r}"))
    return checks


def _table_checks(raw: dict[str, Any], ms: list[Any], k: int, delta: float | None, checks: list[Check]) -> Fraction:
    """Each table's mechanism, sensitivity ``k``, parameter (an epsilon, or a ``sigma2`` under zCDP) and shape (a
    check each, added to ``checks``); what they spend, exactly (their epsilons, or their rhos under zCDP)."""
    variables = raw.get("variables") or {}
    public = raw.get("public") or {}
    total = Fraction(0)
    mechanism, param, words = ("geometric", "epsilon", "discrete Laplace") if delta is None else \
        ("discrete_gaussian", "sigma2", "discrete Gaussian")
    for i, m in enumerate(ms):
        axes = m.get("axes") or []
        shape = tuple(int(public.get("cells", -1)) if a == "@public" else _model_size(variables.get(a, {}), i >= len(variables))
                      for a in axes)
        noisy = np.asarray(m.get("noisy"))
        x = m.get(param)
        good = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0 and \
            (delta is None or x <= MAX_SIGMA2)
        ok = (m.get("mechanism") == mechanism and m.get("sensitivity") == k and good and noisy.shape == shape
              and noisy.dtype.kind in "iu")
        checks.append(_check(f"measurements[{i}]", ok, f"{' x '.join(axes)}: {words} at sensitivity {k}, "
                             f"{param} {x}, {noisy.size} integer cells" if ok else
                             f"{axes}: mechanism {mechanism}, sensitivity {k}, a positive {param} and integer counts "
                             f"of shape {shape} expected"))
        if good:
            total += Fraction(x) if delta is None else gaussian_rho(x, k)
    return total


def _model_size(variable: Any, after_start: bool) -> int:
    """A variable's cells in a table: its categories in a 1-way table of the start (the first tables, one a
    variable), its groups (``groups``, the model pgm's compression) in a table measured after them."""
    groups = variable.get("groups") if isinstance(variable, dict) else None
    return len(groups) if groups and after_start else len(variable.get("categories", []))


def zcdp_checks(raw: dict[str, Any], spent: Fraction, delta: float) -> list[Check]:
    """An (epsilon, delta) manifest accounted in zCDP: the rho its tables and selections spend (``spent``, exact)
    within the rho budget, which implies the stated (epsilon, delta) by the conversion at the stated order alpha
    (recomputed, :func:`pramkit.privacy.zcdp.delta_at`); the ledger's epsilon the budget's, its delta the
    procedure's.

    Examples
    --------
    >>> raw = {"procedure": {"model": "pgm", "delta": 1e-5}, "ledger": {"record_epsilon_budget": 1.0,
    ...        "design_epsilon": 1.0, "record_epsilon": 1.0, "delta": 1e-5, "rho_budget": 0.02, "alpha": 30.0}}
    >>> [(c.field, c.passed) for c in zcdp_checks(raw, Fraction(1, 100), 1e-5)]
    [('ledger.design_epsilon', True), ('ledger.rho_budget', True)]
    >>> [c.passed for c in zcdp_checks(raw, Fraction(3, 100), 1e-5)]
    [True, False]
    """
    from pramkit.privacy.zcdp import delta_at

    led = raw.get("ledger") or {}
    eps, rho, alpha = led.get("design_epsilon"), led.get("rho_budget"), led.get("alpha")
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                  for v in (eps, rho, alpha))
    ok = numbers and eps == led.get("record_epsilon") == led.get("record_epsilon_budget") and led.get("delta") == delta
    checks = [_check("ledger.design_epsilon", ok, f"({eps}, {delta:g})-DP, the budget asked for" if ok
                     else f"stated epsilon {eps} and delta {led.get('delta')!r}: the budget's "
                          f"{led.get('record_epsilon_budget')!r} and the procedure's {delta:g} expected")]
    implied = within = False
    if numbers:
        implied = float(alpha) > 1 and delta_at(float(rho), float(eps), float(alpha)) <= delta  # type: ignore[arg-type]
        within = spent <= Fraction(rho)  # type: ignore[arg-type]
    checks.append(_check("ledger.rho_budget", bool(implied and within),
                         f"rho {float(spent):.6g} spent within {rho}, which implies ({eps}, {delta:g})-DP at alpha "
                         f"{alpha}" if implied and within else
                         f"rho {float(spent):.6g} spent, budget {rho!r} at alpha {alpha!r}: "
                         + ("more than the budget" if not within else f"does not imply delta {delta:g}")))
    return checks


def _selection_checks(raw: dict[str, Any], checks: list[Check]) -> Fraction:
    """The model pgm's selections (the exponential mechanism): each a positive epsilon (a check each, added to
    ``checks``); their exact sum (under zCDP, a ``procedure.delta``, the sum of their ``epsilon^2 / 8``)."""
    from pramkit.synthesize_pgm import delta_of_manifest

    zcdp = delta_of_manifest(raw) is not None
    total = Fraction(0)
    for i, sel in enumerate(raw.get("selections") or []):
        eps: Any = sel.get("epsilon") if isinstance(sel, dict) else None
        ok = isinstance(eps, (int, float)) and not isinstance(eps, bool) and math.isfinite(eps) and eps > 0
        checks.append(_check(f"selections[{i}]", ok, f"the exponential mechanism at epsilon {eps}" if ok
                             else "a positive epsilon expected"))
        total += (exponential_rho(eps) if zcdp else Fraction(eps)) if ok else 0
    return total


def stated_codes(raw: dict[str, Any]) -> str | None:
    """The missing codes of the original's format, in words, as the ledger's facts state them.

    Examples
    --------
    >>> stated_codes({"ledger": {"released_exactly_facts": [{"kind": "missing_code", "values": ["Stata's .a"]}]}})
    "Stata's .a"
    >>> stated_codes({"ledger": {}}) is None
    True
    """
    facts = (raw.get("ledger") or {}).get("released_exactly_facts") or []
    stated = [f.get("values") for f in facts if isinstance(f, dict) and f.get("kind") == "missing_code"]
    return str(stated[0][0]) if stated and stated[0] else None


def regenerated_ledger(raw: dict[str, Any], codes: str | None) -> dict[str, Any]:
    """The ledger of a synthesis manifest, regenerated from its tables, categories and columns
    (:func:`pramkit.synthesize.synthesis_ledger`); ``codes``: the original's missing codes in words.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.synthesize import synthesize_release
    >>> df = pd.DataFrame({"sex": ["f", "m"] * 40, "a": ["x", "y", "y", "x"] * 20})
    >>> raw = synthesize_release(df, variables="a", public="sex", epsilon=1.0, key=bytes(32),
    ...                          categories={"a": ["x", "y"]}).manifest
    >>> regenerated_ledger(raw, None) == raw["ledger"]
    True
    """
    from pramkit.privacy.epsilon import record_epsilon
    from pramkit.synthesize import synthesis_ledger

    variables = raw.get("variables") or {}
    sources = {v: spec.get("categories_source") for v, spec in variables.items()}
    missing = [v for v, spec in variables.items() if None in (spec.get("categories") or [])]
    from pramkit.synthesize import zcdp_figures
    from pramkit.synthesize_pgm import delta_of_manifest, neighbours_of

    budget = float((raw.get("ledger") or {})["record_epsilon_budget"])
    delta = delta_of_manifest(raw)
    if delta is None:
        total = record_epsilon([float(m["epsilon"]) for m in [*(raw.get("measurements") or []),
                                                               *(raw.get("selections") or [])]])
        zcdp = None
    else:
        total = budget
        zcdp = zcdp_figures(budget, delta, raw.get("measurements") or [], raw.get("selections") or [])
    return synthesis_ledger(total, budget, sources,
                            list(raw.get("released_as_they_are") or []), missing=missing, codes=codes,
                            neighbours="add-remove" if neighbours_of(raw) == "add-remove" else "replace-one",
                            zcdp=zcdp)


def release_checks(raw: dict[str, Any], released: str | Path, sep: str = ",", encoding: str = "utf-8",
                   na_values: Sequence[str] = ()) -> list[Check]:
    """The released file against its manifest."""
    from pramkit.io import read_table, sha256_of
    from pramkit.structure import Rules

    p = Path(released)
    info = raw.get("released") or {}
    digest = sha256_of(p)
    checks = [_check("released.sha256", digest == info.get("sha256"), f"the file's digest {digest[:16]}...")]
    frame = read_table(p, na_values=tuple(na_values), sep=sep, encoding=encoding)
    checks.append(_check("released.rows", len(frame) == info.get("rows"), f"{len(frame):,} rows"))
    variables = raw.get("variables") or {}
    for v, spec in variables.items():
        cats = {str(c) for c in spec.get("categories", []) if c is not None}
        col = frame[v] if v in frame.columns else pd.Series([], dtype=object)
        bad = sorted(set(col.dropna().astype(str)) - cats)
        checks.append(_check(f"variables.{v}", v in frame.columns and not bad,
                             "every value a declared category" if not bad else f"values {bad[:3]} not declared",
                             subject=v))
    if raw.get("rules") is not None and not (isinstance(raw["rules"], dict) and "forbidden" in raw["rules"]):
        checks.append(_check("rules", False, "the rules are not an object with the forbidden combinations"))
    elif raw.get("rules"):
        rules = Rules.of(raw["rules"]["forbidden"])
        broken = int(rules.breaking(frame, list(frame.columns)).sum())
        checks.append(_check("rules", broken == 0, f"{broken:,} records break a rule"))
    proc = raw.get("procedure") or {}
    public = list((raw.get("public") or {}).get("columns", []))
    if proc.get("min_count") == 2:
        cols = public + list(variables)
        combos = frame[cols].astype(str).value_counts()
        cells = frame[public].astype(str).value_counts() if public else pd.Series([len(frame)])
        lone = {c if isinstance(c, tuple) else (c,) for c in cells[cells == 1].index} if public else set()
        single = [c for c in combos[combos == 1].index if tuple(c[:len(public)]) not in lone]
        checks.append(_check("procedure.min_count", not single,
                             "every combination shown at least twice (but in public cells of one record)"
                             if not single else f"{len(single):,} combinations shown once"))
    same = [str(c) for c in frame.columns if c not in variables]
    checks.append(_check("released_as_they_are", same == list(raw.get("released_as_they_are", [])),
                         f"the file's other columns are {', '.join(same)}"))
    return checks


def original_checks(raw: dict[str, Any], original: str | Path, released: str | Path, key: Any = None,
                    sep: str = ",", encoding: str = "utf-8", na_values: Sequence[str] = (),
                    again: dict[str, Any] | None = None) -> list[Check]:
    """The original against the release: the columns said to be as they are; with the key, the whole file
    (made again, reading ``na_values`` as missing as the release did; its manifest's JSON is kept in
    ``again["synthesis again"]`` for the field checks of :mod:`pramkit.audit.declared`)."""
    from pramkit._json import read_json
    from pramkit.io import read_table, sha256_of
    from pramkit.synthesize import synthesize_release
    from pramkit.synthesize_pgm import MAX_CELLS, NEIGHBOURS, delta_of_manifest, neighbours_of

    neighbours = neighbours_of(raw)  # a relation forged out of the two is checked by its field; made again as one
    orig = read_table(Path(original), na_values=tuple(na_values), sep=sep, encoding=encoding)
    rel = read_table(Path(released), na_values=tuple(na_values), sep=sep, encoding=encoding)
    variables = list(raw.get("variables") or {})
    same = [c for c in rel.columns if c not in variables]
    # under add-or-remove neighbours the file has as many records as the tables estimate, and no column as it is
    counted = len(orig) == len(rel) or (raw.get("neighbours") == "add-remove" and not same)
    equal = counted and all(c in orig.columns and orig[c].astype(str).equals(rel[c].astype(str)) for c in same)
    checks = [_check("released_as_they_are", equal, f"{', '.join(same)} equal the original's" if equal
                     else "a column said to be released as it is differs from the original")]
    if key is not None:
        proc = raw.get("procedure") or {}
        declared = {v: s["categories"] for v, s in (raw.get("variables") or {}).items()
                    if s.get("categories_source") == "declared"}
        rules = raw.get("rules") if isinstance(raw.get("rules"), dict) else None
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / Path(released).name
            synthesize_release(Path(original), out, variables=variables, public=(raw.get("public") or {}).get("columns", []),
                               epsilon=float(raw["ledger"]["record_epsilon_budget"]), key=key,
                               categories=declared or None, forbid=rules["forbidden"] if rules else None,
                               min_count=int(proc.get("min_count", 2)), pool=int(proc.get("pool", 20)),
                               sweeps=int(proc.get("sweeps", 30)), public_bins=int(proc.get("public_bins", 20)),
                               na_values=na_values, sep=sep, encoding=encoding,
                               model=str(proc.get("model", "margins")),
                               max_cells=int(proc.get("max_cells", MAX_CELLS)),
                               rounds=int(proc["rounds"]) if proc.get("model") == "pgm" and "rounds" in proc else None,
                               neighbours=neighbours if neighbours in NEIGHBOURS else "replace-one",
                               delta=delta_of_manifest(raw),
                               bins=proc.get("bins") if proc.get("model") == "pgm" else None,
                               draw=str(proc.get("draw", "systematic")) if proc.get("model") == "pgm" else None,
                               records_per_draw=proc.get("records_per_draw") if proc.get("model") == "pgm" else None,
                               tables_per_fit=proc.get("tables_per_fit", 1) if proc.get("model") == "pgm" else None)
            digest = sha256_of(out)
            if again is not None:
                again["synthesis again"] = read_json(out.parent / (out.stem + ".synthesis.json"), "manifest",
                                                     PramkitError)
                again["synthesis same file"] = digest == sha256_of(Path(released))
        checks.append(_check("key", digest == sha256_of(Path(released)),
                             "the key makes this release again, byte for byte" if digest == sha256_of(Path(released))
                             else "the key makes another file: not this release's key, or the file was changed"))
    return checks
