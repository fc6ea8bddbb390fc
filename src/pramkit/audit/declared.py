"""The audit of every published field, generated from the declarations of the release methods
(:mod:`pramkit.methods`).

:func:`field_checks` walks a public file's JSON: a field no declaration covers fails, named; each declared
field is checked by the check its declaration names (:data:`CHECKS`), and a field that fails is named by
its path (``variables[0].min_diagonal``, ``guarantees.shuffled_epsilon``).  A check answers ``None`` when
what it needs was not given (the original and the key for a rederived field): the audit's line lists those
fields as not checked.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from pramkit._json import json_same
from pramkit.audit.result import Check
from pramkit.errors import PramkitError
from pramkit.methods import declared_fields
from pramkit.methods.contract import path_text, walk

#: A check's verdict on one field: passed (``None``: not checked here, what it needs was not given), and why.
Verdict = tuple[bool | None, str]
_REL = 1e-12
_NEEDS_KEY = "needs --original and --key-file"


@dataclasses.dataclass
class FieldContext:
    """What the checks of one public file may read.

    Parameters
    ----------
    kind : str
        The kind of public file (:func:`pramkit.methods.public_files`).
    raw : dict
        The file's JSON.
    audit : str
        The audit its checks belong to (``"manifest"``, ``"synthesis"``).
    subject : str
        The file as the checks name it (``"manifest"``, ``"receipt"``).
    manifest_path, released, original : pathlib.Path, optional
        The manifest, the released file and the original.
    manifest_raw : dict, optional
        The manifest's JSON (for a receipt's checks).
    key : SecretKey, optional
        The secret key.
    sep, encoding : str
        How the CSV files are written.

    Examples
    --------
    >>> ctx = FieldContext("receipt", {"rows": 2}, subject="receipt")
    >>> ctx.once("rows", lambda: 2), ctx.once("rows", lambda: 3)  # computed once per file audited
    (2, 2)
    """

    kind: str
    raw: dict[str, Any]
    audit: str = "manifest"
    subject: str = "manifest"
    manifest_path: Path | None = None
    manifest_raw: dict[str, Any] | None = None
    released: Path | None = None
    original: Path | None = None
    key: Any = None
    na_values: Sequence[str] | None = None
    sep: str = ","
    encoding: str = "utf-8"
    cache: dict[str, Any] = dataclasses.field(default_factory=dict)

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per file audited (an exception is kept and raised again)."""
        if name not in self.cache:
            try:
                self.cache[name] = make()
            except PramkitError as exc:
                self.cache[name] = exc
        found = self.cache[name]
        if isinstance(found, PramkitError):
            raise found
        return found


def _at(doc: Any, at: Sequence[str | int]) -> tuple[bool, Any]:
    """The value at a concrete path of a JSON document, and whether it is there."""
    for c in at:
        if isinstance(c, int):
            if not isinstance(doc, list) or c >= len(doc):
                return False, None
        elif not isinstance(doc, Mapping) or c not in doc:
            return False, None
        doc = doc[c]
    return True, doc


def same(a: Any, b: Any, rel: float = _REL) -> bool:
    """:func:`pramkit._json.json_same`: two JSON values equal, numbers within a relative ``rel``."""
    return json_same(a, b, rel)


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _compare(value: Any, expected: Any, what: str) -> Verdict:
    ok = same(value, expected)
    return ok, (f"as {what}" if ok else f"stated {_short(value)}, {what} {_short(expected)}")


def _expected(doc: Any, at: Sequence[str | int], value: Any, what: str) -> Verdict:
    there, expected = _at(doc, at)
    if not there:
        return False, f"stated {_short(value)}; {what} has no such field"
    return _compare(value, expected, what)


# ----------------------------------------------------------------- the PRAM manifest

def _parsed(ctx: FieldContext) -> Any:
    """The manifest's matrices (stated figures set aside: :func:`pramkit.audit.manifest.read_manifest`)."""
    from pramkit.audit.manifest import bare_manifest

    return ctx.once("parsed", lambda: bare_manifest(ctx.manifest_raw if ctx.manifest_raw is not None else ctx.raw))


def _regenerated(ctx: FieldContext) -> Any:
    return ctx.once("regenerated", lambda: _parsed(ctx).to_dict())


def _manifest_raw(ctx: FieldContext) -> dict[str, Any]:
    return ctx.manifest_raw if ctx.manifest_raw is not None else ctx.raw


def _unreadable(fn: Callable[[FieldContext, tuple, Any], Verdict]) -> Callable[[FieldContext, tuple, Any], Verdict]:
    """A check that needs the manifest read: a manifest every reader refuses is failed by its reading
    (the field the refusal names), so these checks say so and are not counted."""
    @functools.wraps(fn)
    def wrapped(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
        try:
            return fn(ctx, at, value)
        except PramkitError as exc:  # the reading's own check fails, naming the field it refuses
            return None, f"not checked: the manifest does not read ({exc})"
    return wrapped


@_unreadable
def _check_regenerated(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    return _expected(_regenerated(ctx), at, value, "regenerated from the matrices and the structure")


def _check_constant(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A constant: a file's ``format`` as its kind declares it, its ``version`` as the kind declares it (or as the
    module that writes it states it), and the fixed figures of a mechanism."""
    from pramkit.engine import receipt as receipts
    from pramkit.manifest import VERSION
    from pramkit.methods import public_files
    from pramkit.synthesize import FORMAT_VERSION

    last, public = at[-1], public_files().get(ctx.kind)
    if last in ("mechanism", "sensitivity", "method"):
        expected: Any = {"mechanism": "geometric", "sensitivity": 2, "method": "resample"}[last]
    elif last == "format" and public is not None:
        expected = public.format
    elif public is not None and public.version is not None:
        expected = public.version
    else:
        expected = {"manifest": VERSION, "synthesis manifest": FORMAT_VERSION}.get(ctx.kind, receipts.VERSION)
    return _compare(value, expected, "written by pramkit")


def _ledger(ctx: FieldContext) -> dict[str, Any]:
    led = _manifest_raw(ctx).get("ledger")
    return led if isinstance(led, dict) else {}


def _check_same_as_ledger(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    led = _ledger(ctx)
    if at[-1] not in led:
        return False, f"the ledger states no {at[-1]}"
    return _compare(value, led[at[-1]], f"the ledger's {at[-1]}")


@_unreadable
def _check_strata(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    strata = list(dict.fromkeys(c for v in _parsed(ctx).variables for c in v.given))
    return _compare(value, strata, "the variables' stratum columns")


@_unreadable
def _check_household(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    variables = _parsed(ctx).variables
    units = list(dict.fromkeys(v.unit for v in variables if v.unit))
    if at[-1] == "household":
        return _compare(value, units[0] if len(units) == 1 else (units or None), "the variables' unit")
    return _compare(value, [v.name for v in variables if v.unit], "the variables with a unit")


def _check_budget(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    inputs = _manifest_raw(ctx).get("input") or {}
    if "record_epsilon_budget" in inputs and not same(value, inputs["record_epsilon_budget"]):
        return False, f"stated {value!r}, the input's budget {inputs['record_epsilon_budget']!r}"
    spent = _ledger(ctx).get("record_epsilon")
    if value is None:
        return True, "no budget"
    ok = isinstance(value, (int, float)) and isinstance(spent, (int, float)) and spent <= value
    return ok, f"the record's epsilon {spent!r} {'within' if ok else 'exceeds'} {value!r}"


def _fraction(x: Any) -> Fraction | None:
    return Fraction(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _check_design_epsilon(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    led = _ledger(ctx)
    inputs = _manifest_raw(ctx).get("input") or {}
    if "design_epsilon" in inputs and not same(value, inputs["design_epsilon"]):
        return False, f"stated {value!r}, the input's {inputs['design_epsilon']!r}"
    parts = [_fraction(c.get("epsilon")) if isinstance(c, dict) else None for c in (led.get("dp_counts") or {}).values()]
    total, stated = sum((p for p in parts if p is not None), Fraction(0)), _fraction(value)
    ok = stated is not None and None not in parts and (stated >= total if parts else stated == 0)
    return ok, (f"stated {value!r} against the exact sum {float(total)!r} of its DP histograms' epsilons" if parts
                else f"stated {value!r}: no DP histogram, so no design step to spend on")


def _check_dp_share(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.ledger import split_within

    led = _ledger(ctx)
    counts = led.get("dp_counts") or {}
    try:
        sizes = [float(np.asarray(c["noisy"]).size) for c in counts.values()]
        budget = float(led["design_epsilon"])
        if not math.isfinite(budget):
            raise ValueError(f"the design step's epsilon {budget!r} is not a finite number")
        shares = dict(zip(counts, split_within(budget, 0.0, sizes)))
    except (KeyError, TypeError, ValueError, OverflowError, PramkitError) as exc:
        return False, f"the shares cannot be recomputed ({exc})"
    return _compare(value, shares[at[2]], "its share of the design step's epsilon (by cells)")


def _check_frequencies(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    inputs = _manifest_raw(ctx).get("input") or {}
    if "frequencies" in inputs and value != inputs["frequencies"]:
        return False, f"stated {value!r}, the input's {inputs['frequencies']!r}"
    listed = bool(_ledger(ctx).get("dp_counts"))
    ok = listed == (value == "dp_counts")
    return ok, "the DP counts listed" if ok else f"stated {value!r}, but the ledger {'lists' if listed else 'lists no'} DP counts"


def _check_prior(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    ok = (value is not None) == (_ledger(ctx).get("frequencies") == "prior")
    return ok, "named exactly when the design read a prior" if ok else f"stated {value!r} with frequencies {_ledger(ctx).get('frequencies')!r}"


def _names(ctx: FieldContext) -> list[str]:
    raw = _manifest_raw(ctx)
    if ctx.kind == "synthesis manifest":
        return list(raw.get("variables") or {})
    return [str(v.get("name")) for v in raw.get("variables") or [] if isinstance(v, dict)]


def _named_in(name: str, statements: Any) -> bool:
    return isinstance(statements, list) and any(isinstance(s, str) and name in s.replace(",", " ").split()
                                                for s in statements)


def _check_category_source(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    name = at[2] if ctx.kind == "manifest" else at[1]
    if value not in ("data", "declared", "public"):
        return False, f"stated {value!r}: a source is 'data' or 'declared'"
    if name not in _perturbed(ctx):
        return True, "not a perturbed variable"
    stated = _named_in(name, _ledger(ctx).get("data_dependent"))
    ok = stated == (value == "data")
    return ok, ("as data_dependent says" if ok else
                f"stated {value!r}, but data_dependent {'names' if stated else 'does not name'} its categories")


def _perturbed(ctx: FieldContext) -> list[str]:
    """The perturbed variables and their columns (a joint variable's sources are its columns')."""
    raw = _manifest_raw(ctx)
    if ctx.kind == "synthesis manifest":
        return list(raw.get("variables") or {})
    return [str(x) for v in raw.get("variables") or [] if isinstance(v, dict)
            for x in (v.get("name"), *(v.get("columns") or []))]


def _check_data_dependent(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    sources = _ledger(ctx).get("categories") or {}
    missing = [n for n in dict.fromkeys(_perturbed(ctx)) if sources.get(n) == "data" and not _named_in(n, value)]
    if _ledger(ctx).get("frequencies") == "exact" and not any("exact" in str(s) for s in value or []):
        missing.append("the exact frequencies the design read")
    return not missing, ("every dependence stated" if not missing else
                         f"does not state that the categories of {', '.join(missing)} were read from the data")


def _check_design_p(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.audit.invariance import noisy_proportions

    raw = _manifest_raw(ctx)
    name = raw["variables"][at[1]].get("name")
    noisy = (_ledger(ctx).get("dp_counts") or {}).get(name)
    if at[2] == "applied_to" or not isinstance(noisy, dict):
        return True, "no noisy counts of this variable: the design read no DP counts"
    exact = noisy_proportions(noisy.get("noisy") or [])
    if at[2] == "blocks":
        members = raw["variables"][at[1]]["blocks"][at[3]].get("members") or []
        exact = exact[members] / exact[members].sum()
    pv = np.ravel(np.asarray(value, dtype=float))
    ok = pv.size == exact.size and bool(np.allclose(pv, exact, rtol=1e-9, atol=0.0))
    return ok, "the noisy counts' proportions" if ok else "not the proportions of the ledger's noisy counts"


def _provenance(ctx: FieldContext, at: tuple) -> tuple[Any, Any, str]:
    """The variable, the matrix at ``at`` (the variable's, a block's or the first step's) and its prefix."""
    v = _parsed(ctx).variables[at[1]]
    if at[2] == "blocks":
        return v, v.matrix.blocks[at[3]][1], "design"
    if at[2] == "applied_to":
        return v, v.applied_to, "applied_to.design"
    return v, v.matrix, "design"


@_unreadable
def _check_certificate(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A design's objective and certificate: its figures held to each other, its information recomputed and
    its optimality re-proved where the audit can (:func:`_design_audit`, once per design); the figures
    depend on one another, so a failure fails every figure of that design, and says which check failed."""
    where = at[:4] if at[2] == "blocks" else at[:3]
    matrix = _provenance(ctx, at)[1]
    prov = matrix.provenance
    if prov is None:
        return True, "no design"
    if at[-1] == "objective" and prov.objective_name is None:
        return value is None, "no objective named, none stated" if value is None else \
            f"stated {value!r}, but the design names no objective"
    failed = ctx.once(f"certificate {where}", lambda: _design_audit(ctx, at))
    if failed:
        return False, "; ".join(failed)
    cert = prov.certificate or {}
    gap, tolerance = (cert.get(f"{k}{'_nats' if 'certified_gap_nats' in cert else ''}")
                      for k in ("certified_gap", "tolerance"))
    if at[-1] == "optimal" and value is False and isinstance(gap, (int, float)) and \
            isinstance(tolerance, (int, float)) and gap <= tolerance:
        return False, f"stated not optimal, but its certified gap {gap!r} is within its tolerance {tolerance!r}"
    return True, "recomputed and re-proved where the audit can"


def _design_audit(ctx: FieldContext, at: tuple) -> list[str]:
    """The failed checks of one design's certificate and information (:mod:`pramkit.audit.certificates`,
    :func:`pramkit.audit.manifest.certificate_checks`), each as text."""
    from pramkit.audit.certificates import figure_checks
    from pramkit.audit.manifest import _design_checks, mutual_information

    v, matrix, prefix = _provenance(ctx, at)
    prov = matrix.provenance
    checks: list[Check] = []
    done = ctx.cache.get("manifest checks")  # the manifest audit's, of the variable's and first step's designs
    if done is not None and at[2] != "blocks":
        mine = [c for c in done if c.subject == v.name and (c.field.startswith(f"{prefix}.certificate") or (
            at[2] == "design" and c.field in ("mutual information", "optimality certificate", "design.parameters.p")))]
        return [f"{c.field}: {c.detail}" for c in [*mine, *_dual_sum_check(v.name, prov.certificate or {})]
                if not c.passed]
    try:
        if prov.certificate:
            checks += figure_checks(v.name, prov, f"{prefix}.certificate")
        if prov.objective_name == "mutual_information_nats" and "p" in prov.parameters:
            if matrix is v.matrix:
                checks += _design_checks(v, prov)
            else:
                p = np.ravel(np.asarray(prov.parameters["p"], dtype=float))
                mi = mutual_information(p, matrix.matrix)
                ok = math.isclose(mi, float(prov.objective), rel_tol=1e-9, abs_tol=1e-12)
                checks.append(Check("manifest", v.name, "mutual information", ok, f"recomputed {mi:.12g} nats"))
        checks += _dual_sum_check(v.name, prov.certificate or {})
    except (TypeError, ValueError) as exc:
        return [f"its figures cannot be read as numbers ({exc})"]
    return [f"{c.field}: {c.detail}" for c in checks if not c.passed]


def _dual_sum_check(name: str, cert: Mapping[str, Any]) -> list[Check]:
    """A derived design's upper bound is its dual's objective: the sum of ``dual_y`` (up to the certificate's
    margin), whatever the design's size (its proof is re-derived only for small designs).

    Examples
    --------
    >>> [c.passed for c in _dual_sum_check("x", {"dual_y": [0.1, 0.2], "upper_bound_nats": 0.3,
    ...                                            "max_dual_violation": 0.0, "margin": 1e-12})]
    [True]
    >>> [c.passed for c in _dual_sum_check("x", {"dual_y": [0.0, 0.0], "upper_bound_nats": 0.3,
    ...                                            "max_dual_violation": 0.0, "margin": 1e-12})]
    [False]
    """
    if not {"dual_y", "upper_bound_nats", "max_dual_violation"} <= cert.keys():
        return []
    total = math.fsum(float(y) for y in cert["dual_y"])
    upper = float(cert["upper_bound_nats"])
    slack = float(cert.get("margin") or 0.0) + len(cert["dual_y"]) * abs(float(cert["max_dual_violation"])) + \
        1e-12 * abs(upper)
    ok = abs(upper - total) <= slack
    return [Check("manifest", name, "design.certificate.dual_y", ok,
                  f"the dual values sum to {total!r}, the stated upper bound is {upper!r}")]


# ----------------------------------------------------------------- rederived: the release audit's evidence

#: The release audit's line of the release made again with the key.
_KEYED = "derived again with the key"


def _release_evidence(ctx: FieldContext, subjects: Sequence[str]) -> Verdict:
    """What the release audit (the original against the released file, and the release made again with the
    key) found of ``subjects`` (variables, or ``"file"``): its failed checks, or the key's failure when the
    receipt names this manifest (when it names another, this manifest did not make the file: failed above)."""
    checks: list[Check] | None = ctx.cache.get("release")
    if checks is None:
        return None, "needs --original and --released"
    bad = [c for c in checks if not c.passed and c.field != _KEYED and
           (c.subject in subjects or c.field == "read against the manifest")]
    keyed = next((c for c in checks if c.field == _KEYED), None)
    # a swap's draws do not depend on the manifest's bytes: its key check is evidence whichever manifest is named
    if keyed is not None and not keyed.passed and (ctx.cache.get("names manifest") or
                                                   _manifest_raw(ctx).get("swapping") is not None):
        bad.append(keyed)
    if bad:
        return False, "; ".join(f"{c.subject}: {c.field}: {c.detail}" for c in bad[:2])
    return True, "the release audit's checks hold" + (" and the key makes the file again" if keyed else "")


def _check_applied(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A variable's matrix and columns: the release audit's checks of that variable (and, for the order of its
    categories, its noisy counts drawn again in that order)."""
    entry = _manifest_raw(ctx)["variables"][at[1]]
    name = str(entry.get("name"))
    verdict = _release_evidence(ctx, [name])
    noisy = (_ledger(ctx).get("dp_counts") or {}).get(name)
    if at[-1] == "categories" and len(at) == 3 and verdict[0] is not False and isinstance(noisy, dict):
        counted = _check_noisy(ctx, ("ledger", "dp_counts", name, "noisy"), noisy.get("noisy"))
        if counted[0] is False:
            return False, f"in this order, the noisy counts drawn again from the original differ: {counted[1]}"
    return verdict


def _check_applied_file(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """What the whole release depends on (missing codes, structure, the release label): the release audit's
    checks of the file and the release made again with the key (a resampled file's label: its release's)."""
    if ctx.kind == "resample receipt":
        from pramkit.engine.receipt import read_receipt

        parent = _parent_of(ctx)
        if parent is None or not parent.is_file():
            return None, "needs the release beside the resampled file"
        return _compare(value, (read_receipt(parent) or {}).get("release"), f"the label of {parent.name}")
    if at == ("release",) and isinstance(ctx.raw.get("swapping"), dict):
        return _compare(value, "", "a swap's (it takes no release label)")
    return _release_evidence(ctx, ["file"])


def _check_swap_plan(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A setting of the swap's plan: its words regenerated, and the swap made again with it."""
    words = _check_swap(ctx, at, value)
    return words if words[0] is False or ctx.kind != "manifest" else _release_evidence(ctx, ["file"])


def _check_name(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    entry = _manifest_raw(ctx)["variables"][at[1]]
    columns = entry.get("columns") or []
    expected = columns[0] if len(columns) == 1 else "*".join(map(str, columns))
    return _compare(value, expected, "the name of its columns")


@_unreadable
def _check_noisy(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A noisy histogram of the design, drawn again from the original's exact counts and the key's noise.

    A design made without ``--key-file`` drew its noise afresh, which no key draws again; so a histogram
    that differs is a forgery when another of the design's histograms is drawn again exactly (the design's
    noise came from this key), and otherwise only when its noise is implausible under the mechanism
    (:func:`noise_pvalue`: none at all where some is all but certain, or a count far out)."""
    if _ledger(ctx).get("derived_from"):  # a derived manifest's counts are its parent's
        return _check_parent(ctx, at, value)
    if ctx.original is None or ctx.key is None:
        return None, _NEEDS_KEY
    from pramkit.io import table_format

    if ctx.original.is_dir() or table_format(ctx.original) not in ("csv", "parquet"):
        return None, "drawn again from a CSV or Parquet original (a labelled format's counts are the design's own)"
    redrawn = ctx.once("redrawn", lambda: _redrawn(ctx))
    name = at[2]
    if name not in redrawn:
        return None, "drawn again for a variable of persons (not of households)"
    exact, again, eps = redrawn[name]
    if same(value, again):
        return True, "drawn again from the original's counts and the key"
    if any(same(_ledger(ctx)["dp_counts"][n].get("noisy"), r[1]) for n, r in redrawn.items() if n != name):
        return False, f"stated {_short(value)}, drawn again from the original's counts and the key {_short(again)}"
    p = noise_pvalue(np.asarray(value, dtype=float) - exact, eps)
    if p < NOISE_ALPHA:
        return False, (f"not drawn from this key, and its noise around the original's counts is implausible "
                       f"(p = {p:.2g}): {'none at all' if not np.any(np.asarray(value) - exact) else 'a count far out'}")
    return None, "not drawn from this key (a design without --key-file draws its noise afresh); its noise is plausible"


#: Below this probability, the noise of a histogram not drawn from the key is a finding.
NOISE_ALPHA = 1e-6


def noise_pvalue(noise: np.ndarray, epsilon: float, sensitivity: int = 2) -> float:
    """How probable noise this small or this large is under the discrete Laplace mechanism at ``epsilon``
    (L1 ``sensitivity``): the smaller of the probability that every cell draws no noise (when none
    does) and the Bonferroni-corrected probability of the largest absolute noise.

    Examples
    --------
    >>> noise_pvalue(np.zeros(7), 0.07) < 1e-6, noise_pvalue(np.zeros(2), 0.07) > 1e-6
    (True, True)
    >>> noise_pvalue(np.array([0, 600, -5]), 0.07) < 1e-6, noise_pvalue(np.array([3, -40, 12]), 0.07) > 1e-6
    (True, True)
    """
    a = math.exp(-epsilon / sensitivity)
    k = np.abs(np.ravel(noise))
    if not k.size:
        return 1.0
    p0 = (1 - a) / (1 + a)
    none = p0 ** k.size if not k.any() else 1.0
    far = min(1.0, k.size * 2 * a ** float(k.max()) / (1 + a)) if k.max() > 0 else 1.0
    return min(none, far)


def _redrawn(ctx: FieldContext) -> dict[str, tuple[np.ndarray, list[int], float]]:
    """Each histogram of the design drawn again with the key: its exact counts, the noisy counts, epsilon."""
    from pramkit.privacy.geometric import dp_counts
    from pramkit.release.frequencies import measured_bytes, noise_query

    out = {}
    counts = _ledger(ctx).get("dp_counts") or {}
    for v in _parsed(ctx).variables:
        if v.unit or v.name not in counts:
            continue
        exact = _exact_counts(ctx, v)
        eps = float(counts[v.name]["epsilon"])
        rng = _key(ctx).design_random(noise_query(v.name, list(v.matrix.categories), eps), measured_bytes(exact))
        out[v.name] = (exact, [int(x) for x in dp_counts(exact, eps, sensitivity=2, rng=rng).noisy], eps)
    return out


def _key(ctx: FieldContext) -> Any:
    from pramkit.kernel.rng import resolve_key

    return ctx.once("key", lambda: resolve_key(ctx.key))


def _exact_counts(ctx: FieldContext, v: Any) -> np.ndarray:
    """A variable's exact counts in the original, read as the design read it."""
    from pramkit.io import read_table

    assert ctx.original is not None
    na = ctx.na_values if ctx.na_values is not None else _manifest_raw(ctx).get("input", {}).get("na_values", ())
    columns = [*v.given, *v.columns]  # a stratified variable's cells: (stratum, value); a joint one's: its columns
    frame = read_table(ctx.original, na_values=tuple(na), sep=ctx.sep, encoding=ctx.encoding,
                       columns=columns)[columns].dropna().astype(str)
    counts = frame.value_counts()
    labels = [tuple(map(str, c)) if isinstance(c, tuple) else (str(c),) for c in v.matrix.categories]
    return np.array([int(counts.get(c, 0)) for c in labels], dtype=np.int64)


def _check_parent(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A derived manifest's parent: the file beside it that ``input.derived_from`` names."""
    from pramkit._json import read_json
    from pramkit.engine.receipt import manifest_digests

    raw = _manifest_raw(ctx)
    led = _ledger(ctx).get("derived_from") or {}
    named = (raw.get("input") or {}).get("derived_from")
    name = led.get("manifest") or named
    if ctx.manifest_path is None or not isinstance(name, str):
        return False, "names no parent manifest"
    if named is not None and Path(str(named)).name != Path(name).name:
        return False, f"the input names {named!r}, the ledger {name!r}"
    parent = ctx.manifest_path.parent / Path(name).name
    if not parent.is_file():
        return None, f"needs the parent manifest {Path(name).name} beside this one"
    if at == ("input", "derived_from") or at[-1] == "manifest":
        ok = (led.get("sha256") in manifest_digests(parent))
        return ok, f"{parent.name} {'is' if ok else 'is not'} the manifest whose SHA-256 the ledger states"
    if at[-1] == "sha256":
        ok = value in manifest_digests(parent)
        return ok, f"{'is' if ok else 'is not'} the SHA-256 of {parent.name}"
    parent_raw = read_json(parent, f"manifest {str(parent)!r}", PramkitError)
    if at[0] == "ledger" and at[1] == "dp_counts":
        return _expected(parent_raw, at, value, f"{parent.name}'s")
    if at[-1] == "record_epsilon":
        return _compare(value, parent_raw.get("record_epsilon"), f"the record epsilon of {parent.name}")
    entry = raw["variables"][at[1]]
    first: dict[str, Any] = next((x for x in parent_raw.get("variables", []) if x.get("name") == entry.get("name")),
                                 {})
    return _expected(first, at[3:], value, f"{parent.name}'s matrix of {entry.get('name')}")


@_unreadable
def _check_swap(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """The swap's description: its plan's words regenerated, its epsilons the manifest's."""
    from pramkit.audit.release import swap_plan_of
    from pramkit.ledger import swapping_statement

    section = ctx.raw.get("swapping") or {}
    published = _manifest_raw(ctx).get("swapping") if ctx.kind != "manifest" else None
    if published is not None:  # a receipt's description of the swap is its manifest's
        return _expected(published, at[1:], value, "the manifest's description of the swap")
    plan = swap_plan_of(section)
    field = at[-1]
    manifest = _manifest_raw(ctx) if ctx.manifest_raw is not None or ctx.kind == "manifest" else None
    entry = next((v for v in (manifest or {}).get("variables", []) if v.get("name") == plan.geo[-1]), None)
    if field == "areas":
        if entry is None:
            return None, "needs the manifest"
        return _compare(value, len(entry.get("categories") or []), "the manifest's categories of the variable")
    if field == "epsilon" or field.startswith("epsilon_given_"):
        if entry is None:
            return None, "needs the manifest"
        regenerated = _regenerated(ctx)
        index = manifest["variables"].index(entry) if manifest else 0
        key = "epsilon" if field == "epsilon" else "epsilon_given_block"
        return _expected(regenerated, ("variables", index, key), value, "the manifest's, recomputed")
    if field == "guarantee":
        given = next((k[len("epsilon_given_"):] for k in section if k.startswith("epsilon_given_")), None)
        eps = float(section["epsilon"]) if section.get("epsilon") is not None else math.inf
        given_eps = float(section[f"epsilon_given_{given}"]) if given else None
        words = swapping_statement(plan.geo[-1], plan.targeted, eps, plan.rate, int(section["areas"]), given,
                                   given_eps, donors=plan.donor_rule())
        return _compare(value, words, "regenerated from the plan")
    areas = ["a", "b", "c", "d"]
    model = plan.section(areas, ["p", "p", "q", "q"] if len(plan.geo) > 1 else None)
    return _expected(model, (field,), value, "regenerated from the plan")


CHECKS: dict[str, Callable[[FieldContext, tuple, Any], Verdict]] = {
    "constant": _check_constant,
    "regenerated": _check_regenerated,
    "regenerated facts": _check_regenerated,
    "same as ledger": _check_same_as_ledger,
    "strata": _check_strata,
    "household": _check_household,
    "budget": _check_budget,
    "design epsilon": _check_design_epsilon,
    "dp share": _check_dp_share,
    "frequencies": _check_frequencies,
    "prior": _check_prior,
    "category source": _check_category_source,
    "data dependent": _check_data_dependent,
    "design p": _check_design_p,
    "certificate": _check_certificate,
    "applied": _check_applied,
    "applied file": _check_applied_file,
    "name": _check_name,
    "noisy counts": _check_noisy,
    "parent": _check_parent,
    "swap": _check_swap,
    "swap plan": _check_swap_plan,
}


def field_checks(ctx: FieldContext) -> list[Check]:
    """Every field of one public file against its declaration: undeclared fields fail, declared ones are
    checked; a failed field is one check named by its path, the others one line.

    Examples
    --------
    >>> import json
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.manifest import Manifest
    >>> raw = json.loads(Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).to_json())
    >>> [c.passed for c in field_checks(FieldContext("manifest", raw))]
    [True]
    >>> raw["variables"][0]["min_diagonal"] = 0.9
    >>> raw["extra"] = 1
    >>> [(c.field, c.passed) for c in field_checks(FieldContext("manifest", raw))]
    [('extra', False), ('variables[0].min_diagonal', False)]
    """
    found, undeclared = walk(ctx.raw, declared_fields(ctx.kind))
    out = [Check(ctx.audit, ctx.subject, path, False, f"a field no declaration of the {ctx.kind} names "
                 "(pramkit.methods): nothing checks it") for path in undeclared]
    failed: dict[str, list[str]] = {}  # one line per finding: the fields one piece of evidence fails, together
    unchecked: dict[str, list[str]] = {}
    checked = ignored = 0
    for field, at, value in found:
        if field.kind == "free_text":
            ignored += 1
            continue
        try:
            passed, detail = CHECKS[field.check](ctx, at, value)
        except (KeyError, IndexError, TypeError, ValueError, PramkitError) as exc:
            passed, detail = False, f"cannot be checked ({type(exc).__name__}: {exc})"
        if passed is None:
            unchecked.setdefault(detail, []).append(path_text(at))
        elif passed:
            checked += 1
        else:
            failed.setdefault(detail, []).append(path_text(at))
    out += [Check(ctx.audit, ctx.subject, ", ".join(paths), False, detail) for detail, paths in failed.items()]
    if not out:
        words = f"{checked} fields checked against their declarations, {ignored} free-text fields ignored"
        words += "".join(f"; not checked, {why}: {', '.join(paths)}" for why, paths in unchecked.items())
        out.append(Check(ctx.audit, ctx.subject, "declared fields", True, words))
    return out


# ----------------------------------------------------------------- receipts

def _released(ctx: FieldContext) -> Path | None:
    return ctx.released if ctx.released is not None and ctx.released.exists() else None


def _check_released_name(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    if ctx.released is None:
        return None, "needs --released"
    return _compare(value, ctx.released.name, "the released file's name")


def _check_released_digest(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.io import sha256_of

    path = _released(ctx)
    if path is None:
        return None, "needs --released"
    if path.is_dir():
        return value is None, "a folder of part files: no digest"
    return _compare(value, ctx.once("sha256", lambda: sha256_of(path)), "the released file's SHA-256")


def _check_released_rows(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.io import iter_batches

    path = _released(ctx)
    if path is None:
        return None, "needs --released"
    rows = ctx.once("rows", lambda: sum(t.num_rows for t in iter_batches(path, na_values=(), sep=ctx.sep,
                                                                          encoding=ctx.encoding)[1]))
    return _compare(value, rows, "the released file's rows")


def _check_manifest_digest(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.engine.receipt import manifest_digests
    from pramkit.errors import ManifestError
    from pramkit.io import sha256_of

    if ctx.manifest_path is None:
        return None, "needs --manifest"
    try:
        digests = manifest_digests(ctx.manifest_path)
    except ManifestError:
        digests = {sha256_of(ctx.manifest_path)}
    ok = value in digests
    return ok, "names this manifest" if ok else f"{_short(value)} is not a digest of this manifest"


def _check_input_release(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.engine.receipt import input_entry, read_receipt

    if ctx.kind == "resample receipt":
        return _compare(value, None, "a release of the original")
    if ctx.original is None:
        return (True, "none") if value is None else (None, "needs --original")
    return _compare(value, input_entry(read_receipt(ctx.original)), "the original's receipt")


def _check_guarantees(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A shuffled release's guarantees, recomputed from the manifest and the released file's records."""
    path = _released(ctx)
    if path is None:
        return None, "needs --released"
    expected = ctx.once("guarantees", lambda: _guarantees(ctx, path))
    return _expected(expected, at[1:], value, "recomputed from the manifest and the released records")


def _guarantees(ctx: FieldContext, path: Path) -> dict[str, Any]:
    """The guarantees :func:`pramkit.engine.perturb.apply_file` states for a shuffled release, recomputed
    (:func:`pramkit.engine.shuffle.recomputed_guarantees`)."""
    from pramkit.engine.shuffle import recomputed_guarantees

    return recomputed_guarantees(_parsed(ctx), path, ctx.raw.get("guarantees") or {}, sep=ctx.sep,
                                 encoding=ctx.encoding)


def _parent_of(ctx: FieldContext) -> Path | None:
    """The release a resampled file was made from: the file its receipt names, beside it."""
    post = ctx.raw.get("post_processing") or {}
    return None if ctx.released is None else ctx.released.parent / Path(str(post.get("release"))).name


def _check_parent_release(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A resampled file's parent: the release beside it, its digest, its manifest's epsilon and guarantee."""
    from pramkit.io import sha256_of
    from pramkit.resample import POST_PROCESSING

    parent = _parent_of(ctx)
    if parent is None:
        return None, "needs --released"
    field = at[-1]
    if field == "release":
        return parent.is_file(), f"the release {parent.name} {'is' if parent.is_file() else 'is not'} beside it"
    if field == "release_sha256":
        if not parent.is_file():
            return False, f"no release {parent.name} beside it"
        return _compare(value, sha256_of(parent), f"the SHA-256 of {parent.name}")
    manifest = _parsed(ctx)
    if field == "record_epsilon":
        return _expected(manifest.to_dict(), ("record_epsilon",), value, "the manifest's record epsilon")
    return _compare(value, f"{manifest.guarantee} {POST_PROCESSING}", "the manifest's guarantee, post-processed")


CHECKS.update({
    "released name": _check_released_name,
    "released digest": _check_released_digest,
    "released rows": _check_released_rows,
    "manifest digest": _check_manifest_digest,
    "input release": _check_input_release,
    "shuffled guarantees": _unreadable(_check_guarantees),
    "parent release": _unreadable(_check_parent_release),
})


# ----------------------------------------------------------------- the synthesis manifest

def _check_synthesized_again(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    again = ctx.cache.get("synthesis again")
    if again is None:
        return None, _NEEDS_KEY
    stated, drawn = (m.get("measurements") or [] for m in (ctx.raw, again))
    if not any(isinstance(a, dict) and isinstance(b, dict) and same(a.get("noisy"), b.get("noisy"))
               for a, b in zip(stated, drawn)):  # every table drawn otherwise: another key (the key line says so)
        return None, "the key draws none of the release's tables again (another key or original)"
    verdict = _expected(again, at, value, "the release made again with the key from the original")
    if verdict[0] and not ctx.cache.get("synthesis same file"):
        return False, "the release made again with the key and these settings is another file"
    return verdict


def _measurements(ctx: FieldContext) -> list[dict[str, Any]]:
    ms = ctx.raw.get("measurements")
    return [m for m in ms if isinstance(m, dict)] if isinstance(ms, list) else []


def _check_tables(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize import measured_tables
    from pramkit.synthesize_pgm import is_pgm, planned_tables

    if is_pgm(ctx.raw):
        wanted = planned_tables(ctx.raw)
        return _compare(value, wanted[at[1]] if at[1] < len(wanted) else None,
                        "the 1-way tables, then the tables the selections chose")
    wanted = [list(a) for a in measured_tables(_names(ctx))]
    return _compare(value, wanted[at[1]] if at[1] < len(wanted) else None, "the tables the procedure measures")


def _check_table_share(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.ledger import split_within
    from pramkit.synthesize_pgm import is_pgm, schedule

    if is_pgm(ctx.raw):
        plan = schedule(ctx.raw)
        if isinstance(plan, str):
            return False, plan
        return _compare(value, plan[0][at[1]] if at[1] < len(plan[0]) else None, "the schedule replayed")

    budget = float((ctx.raw.get("ledger") or {})["record_epsilon_budget"])
    cells = [math.sqrt(float(np.asarray(m.get("noisy")).size)) for m in _measurements(ctx)]
    return _compare(value, split_within(budget, 0.0, cells)[at[1]], "its share of the budget (by root cells)")


def _check_table_shapes(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    rows = {len(m.get("noisy") or []) for m in _measurements(ctx) if (m.get("axes") or [None])[0] == "@public"}
    from pramkit.synthesize_pgm import is_pgm

    if is_pgm(ctx.raw):  # no public column: one public cell, no table given it
        return _compare(value, 1, "one cell: the model pgm conditions on no public column")
    return _compare([value], sorted(rows), "the rows of the tables given the public cell")


def _check_pgm_groups(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    wanted = ctx.once("pgm groups", lambda: _manifest_groups(ctx))  # every variable's, recomputed once
    if isinstance(wanted, str):
        return False, wanted
    return _compare(value, wanted.get(at[1]), "the noisy 1-way table, its noise and the rules give")


def _synthesis_tables_epsilon(ctx: FieldContext) -> float:
    from pramkit.privacy.epsilon import record_epsilon
    from pramkit.synthesize_pgm import delta_of_manifest

    if delta_of_manifest(ctx.raw) is not None:  # (epsilon, delta) by zCDP: the budget's epsilon (its rho checked)
        return float((ctx.raw.get("ledger") or {})["record_epsilon_budget"])
    sels = ctx.raw.get("selections")
    return record_epsilon([float(m["epsilon"]) for m in _measurements(ctx)]
                          + [float(x["epsilon"]) for x in (sels if isinstance(sels, list) else []) if isinstance(x, dict)])


def _check_synthesis_epsilon(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    return _compare(value, _synthesis_tables_epsilon(ctx), "the tables' epsilons added up, rounded outward")


def _check_synthesis_ledger(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.audit.synthesis import regenerated_ledger, stated_codes

    if ctx.original is not None:
        from pramkit.io_stat import missing_code_words

        codes = missing_code_words(ctx.original)
    else:
        codes = stated_codes(ctx.raw)
    return _expected(regenerated_ledger(ctx.raw, codes), at[1:], value, "regenerated from the tables and the facts")


def _check_released_columns(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.engine.receipt import table_columns

    variables = list(ctx.raw.get("variables") or {})
    path = _released(ctx)
    columns = None if path is None else table_columns(path, sep=ctx.sep, encoding=ctx.encoding)
    if at == ("public", "columns"):
        as_they_are = ctx.raw.get("released_as_they_are") or []
        ok = isinstance(value, list) and all(c in as_they_are for c in value) and (
            columns is None or all(c in columns for c in value))
        return ok, "released as they are" if ok else f"stated {_short(value)}: not all released as they are"
    if columns is None:
        return None, "needs --released"
    return _compare(value, [c for c in columns if c not in variables], "the released file's other columns")


def _check_pgm_selection(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize_pgm import check_selection

    return check_selection(ctx.raw, at, value)


def _check_neighbours(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize_pgm import check_neighbours_field

    return check_neighbours_field(ctx.raw, value)


def _check_table_mechanism(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize_pgm import delta_of_manifest

    zcdp = delta_of_manifest(ctx.raw) is not None
    return _compare(value, "discrete_gaussian" if zcdp else "geometric",
                    "discrete Gaussian under zCDP (a procedure.delta)" if zcdp else "discrete Laplace")


def _check_table_rho(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize_pgm import delta_of_manifest, table_rho

    m = _measurements(ctx)[at[1]]
    sigma2, k = m.get("sigma2"), m.get("sensitivity")
    if delta_of_manifest(ctx.raw) is None or not isinstance(sigma2, (int, float)) or not isinstance(k, int) \
            or isinstance(sigma2, bool) or not sigma2 > 0:
        return False, "a table's rho is stated under zCDP only, of a positive sigma2"
    return _compare(value, table_rho(k, float(sigma2)), "sensitivity / (2 sigma2), rounded up")


def _check_table_sensitivity(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize_pgm import table_sensitivity

    return _compare(value, table_sensitivity(ctx.raw), "the neighbour relation stated (2; 1 under add-or-remove)")


def _check_min_count(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    if value not in (1, 2):
        return False, f"stated {value!r}: 1 or 2"
    return True, "counted in the released file by the synthesis audit" if value == 2 else "one draw per record"


def _check_compress_rules(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    return _compare(value, "jointly", "the one way this version writes: a variable one rule alone names merged "
                                      "across the rule's kinds (absent in a manifest written before it)")


def _check_pgm_bins(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.errors import ParameterError
    from pramkit.synthesize_pgm import check_bins, is_pgm

    variables = ctx.raw.get("variables")
    if not is_pgm(ctx.raw) or not isinstance(variables, dict):
        return False, "bins are declared with the model pgm only"
    try:
        bins = check_bins(value, list(variables))
    except ParameterError as exc:
        return False, str(exc)
    if not bins:
        return False, "stated empty: a release without bins has no procedure.bins"
    wanted = ctx.once("pgm groups", lambda: _manifest_groups(ctx))
    if isinstance(wanted, str):
        return False, wanted
    for v in bins:
        stated = variables[v].get("groups") if isinstance(variables[v], dict) else None  # check_bins: v is one
        if stated != wanted.get(v):
            return False, f"the bins of {v}, its categories and the rules give other groups than {v}'s stated ones"
    return True, "each binned variable's groups are those its categories, width and the rules give"


def _check_pgm_draw(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.pgm_balance import DRAWS
    from pramkit.synthesize_pgm import is_pgm

    if not is_pgm(ctx.raw):
        return False, "a draw setting is stated with the model pgm only"
    if value not in DRAWS:
        return False, f"stated {value!r}: one of {', '.join(DRAWS)}"
    return True, "a draw setting of the model pgm (the release made again follows it)"


def _check_pgm_balanced(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.pgm_balance import DRAWS, is_balanced
    from pramkit.synthesize_pgm import is_pgm

    proc = ctx.raw.get("procedure")
    proc = proc if isinstance(proc, dict) else {}
    draw, rows, share = proc.get("draw", "systematic"), ctx.raw.get("rows"), proc.get("min_count", 2)
    variables = ctx.raw.get("variables")
    if not is_pgm(ctx.raw) or draw not in DRAWS or not isinstance(variables, dict):
        return False, "stated without the model pgm and a draw setting"
    if isinstance(rows, bool) or not isinstance(rows, int) or share not in (1, 2):
        return False, "the released rows or procedure.min_count are not stated as whole numbers"
    per = _records_per_draw(proc)
    if per is None:
        return False, "procedure.records_per_draw is not a number from 1 to 2 beside procedure.min_count"
    draws = max(1, int(rows // (per or share)))
    wanted = is_balanced(draw, draws, len(variables))
    return _compare(value, wanted, f"recomputed from the draw {draw!r}, {draws:,} draws and "
                                   f"{len(variables)} variables:")


def _records_per_draw(proc: dict[str, Any]) -> float | None:
    """The manifest's records per draw, checked as the synthesis checks it (0.0: absent, min_count's whole
    number), or None when the setting would be refused."""
    from pramkit.errors import ParameterError
    from pramkit.pgm_balance import check_records_per_draw

    if "records_per_draw" not in proc:
        return 0.0
    try:
        per = check_records_per_draw(proc["records_per_draw"], proc.get("min_count", 2))
    except ParameterError:
        return None
    return per  # None when it restates min_count's default, which no release writes


def _check_records_per_draw(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.synthesize_pgm import is_pgm

    proc = ctx.raw.get("procedure")
    per = _records_per_draw(proc if isinstance(proc, dict) else {})
    if not is_pgm(ctx.raw) or not per:
        return False, (f"stated {value!r}: a number above 1 and at most 2, with the model pgm and min_count 1 "
                       "(absent: min_count's)")
    return True, "a setting of the model pgm's draw (the release made again follows it)"


def _check_tables_per_fit(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """A whole number from 1 to 16 with the model pgm; which one, the release made again with the key tells."""
    from pramkit.errors import ParameterError
    from pramkit.synthesize_pgm import is_pgm, whole_tables_per_fit

    if not is_pgm(ctx.raw):
        return False, "stated without the model pgm: tables_per_fit is a setting of the model pgm"
    try:
        whole_tables_per_fit(value)
    except ParameterError as exc:
        return False, f"stated {value!r}: {str(exc).split(', got')[0]}"
    return _check_synthesized_again(ctx, at, value)


def _manifest_groups(ctx: FieldContext) -> Any:
    from pramkit.synthesize_pgm import manifest_groups

    return manifest_groups(ctx.raw)


CHECKS.update({
    "pgm bins": _check_pgm_bins,
    "pgm draw": _check_pgm_draw,
    "pgm balanced": _check_pgm_balanced,
    "synthesized again": _check_synthesized_again,
    "compress rules": _check_compress_rules,
    "tables": _check_tables,
    "table share": _check_table_share,
    "table shapes": _check_table_shapes,
    "pgm groups": _check_pgm_groups,
    "synthesis epsilon": _check_synthesis_epsilon,
    "synthesis ledger": _check_synthesis_ledger,
    "released columns": _check_released_columns,
    "min count": _check_min_count,
    "records per draw": _check_records_per_draw,
    "tables per fit": _check_tables_per_fit,
    "pgm selection": _check_pgm_selection,
    "neighbours": _check_neighbours,
    "table sensitivity": _check_table_sensitivity,
    "table mechanism": _check_table_mechanism,
    "table rho": _check_table_rho,
})


# ----------------------------------------------------------------- the suppression receipt

def _suppression_settings(ctx: FieldContext) -> tuple[list[str], list[str], str, tuple[str, ...]]:
    """The receipt's keys, strata, rule and missing texts, as the released file is read with them (the audit's
    ``--na-values`` over the receipt's)."""
    raw = ctx.raw
    keys, strata = raw.get("keys"), raw.get("strata") or []
    if not isinstance(keys, list) or not keys or not all(isinstance(x, str) for x in keys):
        raise ValueError("the keys are not a list of column names")
    if not isinstance(strata, list) or not all(isinstance(x, str) for x in strata):
        raise ValueError("the strata are not a list of column names")
    na = () if ctx.na_values is None else tuple(ctx.na_values)  # pramkit suppress writes missing keys empty
    return keys, strata, str(raw.get("missing")), na


def _check_k_anonymity(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """The keys, k, the rule and the strata: as the guarantee sentence names them, and the released file's
    frequencies recounted by them (:func:`pramkit.suppress.released_frequencies`), each at least k."""
    from pramkit.engine.receipt import table_columns
    from pramkit.suppress import MISSING_RULES, guarantee_fragment, released_frequencies

    field = at[0]
    keys, strata, missing, na = _suppression_settings(ctx)
    if guarantee_fragment(field, value) not in str(ctx.raw.get("guarantee")):
        return False, f"stated {_short(value)}: not what the guarantee sentence states"
    if field == "missing":
        ok = value in MISSING_RULES
        return ok, "a rule pramkit counts by" if ok else f"stated {_short(value)}: one of {', '.join(MISSING_RULES)}"
    path = _released(ctx)
    if path is None:
        return None, "needs --released"
    columns = ctx.once("columns", lambda: table_columns(path, sep=ctx.sep, encoding=ctx.encoding))
    if field in ("keys", "strata"):
        absent = [c for c in value if c not in columns]
        both = [c for c in strata if c in keys] if field == "strata" else []
        twice = sorted({c for c in value if value.count(c) > 1})
        ok = not absent and not both and not twice
        why = (f"{absent[0]!r} is not a column of the released file" if absent else
               f"{both[0]!r} is a key and a stratum" if both else f"{twice[0]!r} is named twice" if twice else "")
        return ok, "columns of the released file" if ok else why
    if missing not in MISSING_RULES:
        return False, f"cannot be counted: the rule {missing!r} is none of {', '.join(MISSING_RULES)}"
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        return False, f"stated {_short(value)}: k is a whole number of at least 2"
    freq = ctx.once("frequencies", lambda: released_frequencies(path, keys, missing, strata=strata, na_values=na,
                                                                 sep=ctx.sep, encoding=ctx.encoding))
    low = int(freq.min()) if len(freq) else 0
    short = int((freq < value).sum())
    if short:
        return False, (f"stated {value}: {short} records of the released file have a combination of "
                       f"{', '.join(keys)} shared by fewer than {value} (the smallest by {low}; "
                       f"a missing value {'matches any value' if missing == 'any' else 'is a value of its own'})")
    return True, f"every record's combination shared by at least {low} records of the released file"


def _check_suppression_guarantee(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.suppress import guarantee

    keys, strata, missing, _ = _suppression_settings(ctx)
    return _compare(value, guarantee(keys, ctx.raw.get("k"), missing, strata),
                    "regenerated from the keys, k, the rule and the strata")


def _suppressed_counts(ctx: FieldContext, section: dict[str, Any]) -> list[tuple[str, np.ndarray, list[str]]]:
    """The frequencies k-anonymity is recounted from: the original (the suppressed file the design read) by every
    key, and the released file by the keys released as they are (those the manifest's ``"suppressed"`` fact names,
    :meth:`pramkit.manifest.Manifest.exact_facts`)."""
    from pramkit.suppress import released_frequencies

    keys, strata, missing = list(section["keys"]), list(section.get("strata") or []), section["missing"]
    manifest = _parsed(ctx)
    na = [str(x) for x in manifest.input.get("na_values") or []]
    exact = list(next(f for f in manifest.exact_facts if f.kind == "suppressed").values[2])
    out = []
    original, released = ctx.original, _released(ctx)
    if original is not None:
        out.append(("the original", ctx.once("suppressed original", lambda: released_frequencies(
            original, keys, missing, strata=strata, na_values=na, sep=ctx.sep, encoding=ctx.encoding)), keys))
    if released is not None and exact:
        out.append(("the released file", ctx.once("suppressed released", lambda: released_frequencies(
            released, exact, missing, strata=strata, na_values=na, sep=ctx.sep, encoding=ctx.encoding)), exact))
    return out


@_unreadable
def _check_suppressed(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """``input.suppression`` of a manifest (a release designed from a file ``pramkit suppress`` wrote): each setting
    as the guarantee sentence states it, and k-anonymity recounted in the original (every key) and in the released
    file (the keys released as they are)."""
    from pramkit.ledger import MISSING_RULE_WORDS, suppression_fragment

    section = _manifest_raw(ctx)["input"]["suppression"]
    field = at[-1]
    statement = str((_manifest_raw(ctx).get("ledger") or {}).get("statement"))
    if field == "missing" and value not in MISSING_RULE_WORDS:
        return False, f"stated {_short(value)}: one of {', '.join(MISSING_RULE_WORDS)}"
    if field == "k" and (isinstance(value, bool) or not isinstance(value, int) or value < 2):
        return False, f"stated {_short(value)}: k is a whole number of at least 2"
    if suppression_fragment(field, value) not in statement:
        return False, f"stated {_short(value)}: not what the guarantee sentence states"
    counted = _suppressed_counts(ctx, section)
    if not counted:
        return None, "needs --original (the suppressed file) or --released"
    for where, freq, keys in counted:
        short = int((freq < section["k"]).sum())
        if short:
            return False, (f"{short} records of {where} have a combination of {', '.join(keys)} shared by fewer "
                           f"than {section['k']} records")
    return True, "k-anonymity recounted in " + " and ".join(where for where, _, _ in counted)


CHECKS.update({
    "suppressed": _check_suppressed,
    "k-anonymity": _check_k_anonymity,
    "suppression guarantee": _check_suppression_guarantee,
})


# ----------------------------------------------------------------- the new-ids receipt

def _released_ids(ctx: FieldContext) -> np.ndarray | None:
    """The released file's id column as whole numbers (``None`` when a value is not one), read once."""
    from pramkit.io import read_table

    path, column = _released(ctx), ctx.raw.get("column")
    if path is None or not isinstance(column, str):
        return None

    def read() -> np.ndarray | None:
        import pandas as pd

        values = read_table(path, columns=[column], na_values=(), sep=ctx.sep, encoding=ctx.encoding)[column]
        numbers = pd.to_numeric(values.astype(str), errors="coerce")
        if numbers.isna().any() or not (numbers == numbers.round()).all():
            return None
        return numbers.to_numpy(dtype=np.int64)

    return ctx.once("new ids", read)


def _check_new_ids(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    """The column, the number of ids and the order: as the guarantee sentence states them, and recounted in the
    released file (the ids 1..groups, each used; with households or within, each id's records together in
    increasing order)."""
    from pramkit.engine.ids import SHUFFLES, guarantee

    field, raw = at[0], ctx.raw
    if field == "shuffle" and value not in SHUFFLES:
        return False, f"stated {_short(value)}: one of {', '.join(SHUFFLES)}"
    if guarantee(str(raw.get("column")), raw.get("groups"), str(raw.get("shuffle"))) != raw.get("guarantee"):
        return False, f"stated {_short(value)}: not what the guarantee sentence states"
    if _released(ctx) is None:
        return None, "needs --released"
    ids = _released_ids(ctx)
    if ids is None:
        return False, f"the released file's {raw.get('column')} holds a value that is not a whole number"
    groups = raw.get("groups")
    if field in ("column", "groups"):
        ok = np.array_equal(np.unique(ids), np.arange(1, int(groups) + 1)) if isinstance(groups, int) else False
        return ok, (f"the ids 1 to {groups}, each used" if ok else
                    f"the released file's ids are not the whole numbers 1 to {groups}, each used")
    if value in ("households", "within"):
        ok = bool((np.diff(ids) >= 0).all())
        return ok, ("each id's records together, the ids in increasing order" if ok else
                    "the ids are not in increasing order in the released file")
    return True, "any order of the rows: checked with --original and the key"


def _check_new_ids_guarantee(ctx: FieldContext, at: tuple, value: Any) -> Verdict:
    from pramkit.engine.ids import guarantee

    raw = ctx.raw
    return _compare(value, guarantee(str(raw.get("column")), raw.get("groups"), str(raw.get("shuffle"))),
                    "regenerated from the column, the ids and the order")


CHECKS.update({
    "new ids": _check_new_ids,
    "new ids guarantee": _check_new_ids_guarantee,
})
