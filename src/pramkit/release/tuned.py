"""Design to a target: the largest record budget whose release meets a stated disclosure target.

An officer states what must hold, on the share of all records that are unique records the released
file reproduces exactly (the measure NIST's SDNist reports as unique exact matches), in one of two
ways (:class:`DisclosureTarget`):

* ``matched=5%``: at most 5 % **expected**, the mean over the draws of the key.  A release drawn
  with one key may reproduce more: the target holds on average, not release by release;
* ``matched<=5%@95``: at most 5 % in at least 95 % of the releases, a quantile of the draws of the
  key bounded from above by a Chernoff bound (:func:`pramkit.risk.matches.quantile_bound`), so that
  95 % of releases stay at or under it whatever their key.

:func:`design_to_target` searches the record budget for the release plan given: each candidate
budget is designed in full (design step included) and its manifest's figure
(:func:`pramkit.risk.matches.expected_matches`: the expectation where records are drawn
independently, the union bound above it for a household design; or the quantile bound) is compared
with the target; the largest budget that meets it is kept (:func:`pramkit.risk.tuning.search_epsilon`:
a log-spaced grid, then bisection).

The budget found is a function of the original file, so the ledger of the manifest says so in
its ``data_dependent`` statements: no DP guarantee covers that choice.  The curve explored goes to the
private design record: per budget designed, the expected share (``matched``), its bounds
(``matched_lower``, ``matched_upper``), the quantile bound of a quantile target (``matched_quantile``),
and two figures of what the release keeps, both computed on the
original file while the search designs it, at no extra cost: the expected share of records with some
perturbed value changed (``changed``) and the information the matrices keep on the exact proportions,
I(X; Z) summed over the perturbed variables (``information_nats``, the design record's
``total_information_nats``; ``None`` where a matrix is too large to measure).  The internal report draws
it as a risk-utility map (``pramkit report --design-record``).

Examples
--------
>>> import pramkit
>>> from pramkit.datasets import census, CENSUS_VARIABLES
>>> from pramkit.kernel.rng import SecretKey
>>> data = census(3_000)
>>> keys = ["age", "sex", "marital_status", "race", "education", "employment"]
>>> found = design_to_target(data, lambda e: pramkit.plan_release(["age", "marital_status", "education"], epsilon=e,
...                          categories=CENSUS_VARIABLES), matched=0.1, keys=keys, bounds=(0.5, 12.0),
...                          key=SecretKey(bytes(32), "doc"), grid=4, rtol=0.05)
>>> found.risk.bound <= 0.1, found.epsilon < 12.0
(True, True)
>>> found.release.manifest.ledger.data_dependent[-1].startswith("the record budget was searched")
True
>>> kept = [p for p in found.curve if p["record_epsilon"] == found.epsilon][0]
>>> kept["information_nats"] == found.release.record.total_information_nats > 0
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey
from pramkit.release.plan import ReleasePlan
from pramkit.release.record import Release
from pramkit.risk.matches import MatchRisk, expected_matches
from pramkit.risk.tuning import Search, search_epsilon

#: Measures a target can bound.
TARGET_MEASURES = ("matched",)
#: What ``--target`` looks like, for its messages.
TARGET_FORMS = ("matched=5% (at most 5 % of all records expected to be unique records reproduced exactly) or "
                "matched<=5%@95 (at most 5 % in at least 95 % of releases)")


@dataclass(frozen=True)
class DisclosureTarget:
    """A disclosure target: the share of all records that may be unique records reproduced exactly,
    expected or in a given share of the releases (module docstring).

    Parameters
    ----------
    matched : float
        The share, in (0, 1).
    level : float or None
        ``None``: the share expected over the draws of the key; otherwise the share of releases, in
        (0, 1), that must stay at or under ``matched`` (a Chernoff bound).

    Examples
    --------
    >>> DisclosureTarget(0.05).describe()
    'at most 5 % of all records expected (mean over the draws of the key) to be unique records reproduced exactly'
    >>> DisclosureTarget(0.05, 0.95).describe()
    'at most 5 % of all records unique records reproduced exactly in at least 95 % of releases (Chernoff bound)'
    """

    matched: float
    level: float | None = None

    def describe(self) -> str:
        """The target in words."""
        share = f"at most {100 * self.matched:.4g} % of all records"
        if self.level is None:
            return f"{share} expected (mean over the draws of the key) to be unique records reproduced exactly"
        return (f"{share} unique records reproduced exactly in at least {100 * self.level:.4g} % of releases "
                "(Chernoff bound)")


def parse_disclosure_target(text: str) -> DisclosureTarget:
    """The target of ``--target``: ``matched=5%`` (or ``matched<=0.05``: expected) or ``matched<=5%@95``
    (in at least 95 % of releases).

    Examples
    --------
    >>> parse_disclosure_target("matched=5%"), parse_disclosure_target("matched<=5%@95")
    (DisclosureTarget(matched=0.05, level=None), DisclosureTarget(matched=0.05, level=0.95))
    >>> parse_disclosure_target("matched<=5%@100")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --target's level is the share of releases that stay under the target, a percentage strictly between 0 and 100 (matched<=5%@95), got '100'
    """
    body, at, level_text = text.partition("@")
    share = parse_target(body)
    if not at:
        return DisclosureTarget(share)
    try:
        level = float(level_text.strip().rstrip("%")) / 100
    except ValueError:
        level = math.nan
    if not 0 < level < 1:
        raise ParameterError("--target's level is the share of releases that stay under the target, a percentage "
                             f"strictly between 0 and 100 (matched<=5%@95), got {level_text!r}")
    return DisclosureTarget(share, level)


@dataclass(frozen=True, eq=False)
class TargetRelease:
    """The release designed to a target, with the search that found its budget.

    Parameters
    ----------
    release : Release
        The manifest (whose ledger names the data-dependent choice) and the design record
        (whose ``extra["target"]`` holds the curve explored).
    epsilon : float
        The record budget found.
    risk : MatchRisk
        The release's bounds on unique records reproduced exactly.
    search : Search
        The grid and bisection.
    matched : float
        The target: the largest share of all records that may be unique records reproduced, expected
        (``level`` None) or in a share ``level`` of the releases.
    curve : tuple of dict
        Per budget designed, in increasing order: ``record_epsilon``, ``matched`` (the expected share;
        the union bound for a household design), ``matched_lower``, ``matched_upper``,
        ``matched_quantile`` (the quantile bound; ``None`` without ``level``), ``changed`` (expected
        share of records changed) and ``information_nats`` (I(X; Z) summed over the variables, or ``None``).
    level : float or None
        The share of releases that stay at or under ``matched`` (``None``: the target is on the expectation).
    """

    release: Release
    epsilon: float
    risk: MatchRisk
    search: Search
    matched: float
    curve: tuple[dict[str, float | None], ...]
    level: float | None = None


def parse_target(text: str) -> float:
    """The share of ``--target matched=5%`` (or ``matched=0.05``); :func:`parse_disclosure_target`
    reads the level of a quantile target too.

    Examples
    --------
    >>> parse_target("matched=5%"), parse_target("matched<=0.02")
    (0.05, 0.02)
    >>> parse_target("tau1=3")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --target must look like matched=5% (at most 5 % of all records expected to be unique records reproduced exactly) or matched<=5%@95 (at most 5 % in at least 95 % of releases), got 'tau1=3'
    """
    name, sep, value = text.replace("<=", "=").partition("=")
    value = value.strip()
    percent = value.endswith("%")
    try:
        share = float(value.rstrip("%")) / (100 if percent else 1)
    except ValueError:
        sep = ""
    if not sep or name.strip() not in TARGET_MEASURES:
        raise ParameterError(f"--target must look like {TARGET_FORMS}, got {text!r}")
    if not 0 < share < 1:
        raise ParameterError(f"--target's share must be between 0 and 100 %, got {value}")
    return share


def _changed(data: pd.DataFrame, release: Release, risk_keys: Sequence[str]) -> float:
    """Expected share of records with some perturbed value changed (1 minus the mean chance of none)."""
    from pramkit.risk.matches import _codes

    stay = np.ones(len(data))
    for v in release.manifest.variables:
        codes = _codes(data[list(risk_keys)], v)
        diag = np.append(v.release_matrix.diagonal, 1.0)
        stay *= np.where(codes == -2, 1.0, diag[codes])
    return float(1 - stay.mean())


def design_to_target(data: pd.DataFrame, plan_at: Callable[[float], ReleasePlan], *, matched: float,
                     keys: Sequence[str], bounds: tuple[float, float], key: SecretKey | None = None,
                     grid: int = 6, rtol: float = 0.02, quiet: bool = True,
                     level: float | None = None) -> TargetRelease:
    """Design the release of ``plan_at(epsilon)`` at the largest budget in ``bounds`` whose expected share
    of unique records reproduced exactly (or, with ``level``, whose quantile bound) is at most ``matched``
    (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame
        The original records.
    plan_at : callable
        ``record budget -> ReleasePlan`` (:func:`pramkit.plan_release` with everything but the budget).
    matched : float
        The target share of all records, in (0, 1).
    keys : sequence of str
        The columns on which a record is unique and reproduced: the perturbed variables and the
        columns released as they are.
    bounds : tuple of float
        The budgets searched, ``0 < low < high``.
    key : SecretKey, optional
        The design step's keyed noise (the same data and budget give the same design).
    grid, rtol : int, float
        The search's grid and bisection tolerance (:func:`pramkit.risk.tuning.search_epsilon`).
    quiet : bool
        No progress bars.
    level : float, optional
        A quantile target: the share of releases, in (0, 1), that must stay at or under ``matched``
        (:func:`pramkit.risk.matches.quantile_bound`); ``None``: ``matched`` bounds the expectation.

    Returns
    -------
    TargetRelease

    Raises
    ------
    ParameterError
        A target or level outside (0, 1), bad bounds, a target that even the lowest budget misses, or a
        quantile target for a household design (its members' draws are not independent).

    Examples
    --------
    The same search held to 95 % of releases keeps a smaller budget than held to the expectation:

    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> import pramkit
    >>> data = census(3_000)
    >>> keys = ["age", "sex", "marital_status", "race", "education"]
    >>> def plan(e):
    ...     return pramkit.plan_release(["age", "education"], epsilon=e, categories=CENSUS_VARIABLES)
    >>> mean = design_to_target(data, plan, matched=0.1, keys=keys, bounds=(0.5, 12.0), key=SecretKey(bytes(32), "doc"),
    ...                         grid=4, rtol=0.05)
    >>> q95 = design_to_target(data, plan, matched=0.1, keys=keys, bounds=(0.5, 12.0), key=SecretKey(bytes(32), "doc"),
    ...                        grid=4, rtol=0.05, level=0.95)
    >>> q95.risk.expected < q95.risk.quantile <= 0.1, q95.epsilon < mean.epsilon
    (True, True)
    """
    from pramkit.release.pipeline import design_planned

    if not 0 < matched < 1:
        raise ParameterError(f"the target share must be between 0 and 1, got {matched!r}")
    if level is not None and not 0 < level < 1:
        raise ParameterError(f"the target's level must be between 0 and 1, got {level!r}")
    lo, hi = map(float, bounds)
    if not 0 < lo < hi:
        raise ParameterError(f"the budgets searched must satisfy 0 < low < high, got {bounds}")
    absent = [k for k in keys if k not in data.columns]
    if absent:
        raise ParameterError(f"target keys {absent} are not columns of the data")
    key = key or SecretKey.generate()
    designs: dict[float, tuple[Release, MatchRisk]] = {}

    def risk(epsilon: float) -> float:
        release = design_planned(data, plan_at(epsilon), key=key, quiet=quiet)
        found = expected_matches(data, release.manifest, keys, level=level)
        designs[epsilon] = (release, found)
        if level is None:
            return found.bound
        if found.quantile is None:
            raise ParameterError("a quantile target (matched<=X%@Q) needs records drawn independently: a household "
                                 "design draws its household variables once for all members; give the expected "
                                 "target matched=X% instead")
        return found.quantile

    measure = ("the unique records reproduced (share of all, expected)" if level is None else
               f"the unique records reproduced (share of all, bound on {100 * level:.4g} % of releases)")
    found = search_epsilon(risk, (lo, hi), matched, measure=measure, grid=grid, rtol=rtol)
    release, bounds_found = designs[found.epsilon]
    curve = tuple({"record_epsilon": e, "matched": r.bound, "matched_lower": r.lower, "matched_upper": r.upper,
                   "matched_quantile": r.quantile, "changed": _changed(data, rel, keys),
                   "information_nats": rel.record.total_information_nats}
                  for e, (rel, r) in sorted(designs.items()))
    held = ("the release is expected to reproduce (the mean over the draws of the key)" if level is None else
            f"the release reproduces, in at least {100 * level:.4g} % of the draws of the key (a Chernoff bound)")
    note = (f"the record budget was searched so that at most {matched:.4g} of the original file's records are "
            f"unique records {held}, so the budget itself depends on the data and no DP guarantee covers that "
            "choice")
    manifest = release.manifest
    assert manifest.ledger is not None  # a designed release has its ledger
    ledger = dataclasses.replace(manifest.ledger, data_dependent=(*manifest.ledger.data_dependent, note))
    extra: dict[str, Any] = {**release.record.extra, "target": {
        "matched": matched, "level": level, "keys": list(keys), "record_epsilon": found.epsilon,
        "risk": bounds_found.to_dict(),
        "curve": list(curve), "evaluations": found.evaluations}}
    record = dataclasses.replace(release.record, extra=extra, notes=(*release.record.notes, note))
    tuned = Release(dataclasses.replace(manifest, ledger=ledger), record)
    return TargetRelease(tuned, found.epsilon, bounds_found, found, matched, curve, level)
