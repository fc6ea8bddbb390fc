"""The risk-utility map of a release designed to a target, for the internal report.

``pramkit design --target matched=X%`` (:func:`pramkit.design_to_target`) designs the release at
several record budgets and keeps the largest whose expected share of unique records reproduced
exactly is at most X %; the private design record keeps every budget it designed
(``target.curve``: the share held to the target, its bounds, the expected share of records changed
and the information the matrices keep).  :func:`risk_utility_map` reads these points back, after
checking that the record is the one written with the report's manifest, and
:func:`risk_utility_section` draws them as the R-U map of Duncan, Keller-McNulty and Stokes (2001):
disclosure risk against the record budget, with its bounds, the target and the budget kept; and
what the release keeps against its risk, one point per budget.  A table beside the figure holds
the same numbers.

Everything in it is computed from the original file (the unique records, the exact proportions,
the budget chosen from them), so only the internal report shows it: the public report never reads
a design record.

References
----------
Duncan, G. T., Keller-McNulty, S. A. and Stokes, S. L. (2001). Disclosure risk vs. data utility:
the R-U confidentiality map. Technical Report 121, National Institute of Statistical Sciences.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit._json import read_json
from pramkit.errors import DataError, PramkitError
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix

if TYPE_CHECKING:
    from pramkit.release.record import DesignRecord

#: How a design record names itself (its ``private`` field begins so).
RECORD_MARK = "design record"

#: Significant digits of the numbers in the table beside the figure.
TABLE_DIGITS = 6


@dataclass(frozen=True)
class RiskUtilityPoint:
    """One budget the search designed.

    Attributes
    ----------
    record_epsilon : float
        The record budget (nats).
    matched : float
        The share of all records held to the target: the expected share that are unique records
        reproduced exactly (the union bound for a household design); a fraction.
    matched_lower, matched_upper : float
        Its bounds: each unique record released unchanged, and the union bound (fractions).
    changed : float or None
        Expected share of records with some perturbed value changed (fraction).
    information_nats : float or None
        I(X; Z) on the exact proportions, summed over the perturbed variables (nats); ``None`` in a
        record written before the search kept it, or for a matrix too large to measure.
    kept : bool
        The budget the search kept.
    """

    record_epsilon: float
    matched: float
    matched_lower: float
    matched_upper: float
    changed: float | None
    information_nats: float | None
    kept: bool


@dataclass(frozen=True)
class RiskUtilityMap:
    """The budgets a search to a target explored, read from the private design record.

    Attributes
    ----------
    target : float
        The largest share of all records that may be unique records reproduced exactly (fraction).
    keys : tuple of str
        The columns on which a record is unique and reproduced.
    record_epsilon : float
        The budget kept (nats).
    points : tuple of RiskUtilityPoint
        Every budget designed, in increasing order.
    evaluations : int or None
        Designs the search made.
    source : str
        Where the record was read (a path, or "a design record in memory").
    level : float or None
        A quantile target's share of releases that stay at or under ``target`` (``None``: the target
        is on the expected share).

    Examples
    --------
    >>> point = RiskUtilityPoint(2.0, 0.04, 0.01, 0.05, 0.5, 1.25, True)
    >>> rmap = RiskUtilityMap(0.05, ("a", "b"), 2.0, (point,), 6, "r.json")
    >>> rmap.kept is point, rmap.utility()[0]
    (True, 'information kept, I(X; Z) summed over the variables [nats]')
    """

    target: float
    keys: tuple[str, ...]
    record_epsilon: float
    points: tuple[RiskUtilityPoint, ...]
    evaluations: int | None
    source: str
    level: float | None = None

    @property
    def kept(self) -> RiskUtilityPoint:
        """The point of the budget kept."""
        return next(p for p in self.points if p.kept)

    def utility(self) -> tuple[str, list[float]] | None:
        """What the map plots as utility, and its value per point: the information kept when every
        point has it, else the share of records kept unchanged (%), else ``None``."""
        if all(p.information_nats is not None for p in self.points):
            return ("information kept, I(X; Z) summed over the variables [nats]",
                    [float(p.information_nats) for p in self.points])  # type: ignore[arg-type]  # checked above
        if all(p.changed is not None for p in self.points):
            return ("records kept unchanged [% of all records]",
                    [100 * (1 - float(p.changed)) for p in self.points])  # type: ignore[arg-type]  # checked above
        return None


def read_design_record(path: str | Path) -> dict[str, Any]:
    """The JSON values of a design record file (``pramkit design`` writes it beside the manifest).

    Parameters
    ----------
    path : str or Path
        The file (private).

    Returns
    -------
    dict

    Raises
    ------
    DataError
        The file does not exist, is not JSON, or is not a design record.

    Examples
    --------
    >>> read_design_record("absent.design-record.json")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: the design record 'absent.design-record.json' does not exist: give the file `pramkit design` wrote beside the manifest (OUT_STEM.design-record.json)
    """
    what = f"the design record {str(path)!r}"
    absent = DataError(f"{what} does not exist: give the file `pramkit design` wrote beside the manifest "
                       "(OUT_STEM.design-record.json)")
    if not Path(path).is_file():
        raise absent
    try:
        values = read_json(path, what, DataError)
    except FileNotFoundError:
        raise absent from None
    _check_record(values, what)
    return dict(values)


def _check_record(values: Any, what: str) -> None:
    if not (isinstance(values, Mapping) and isinstance(values.get("private"), str)
            and values["private"].startswith(RECORD_MARK) and isinstance(values.get("matrices"), Mapping)):
        raise DataError(f"{what} is not a design record (the private file `pramkit design` writes beside the "
                        "manifest, OUT_STEM.design-record.json)")


def _figure(value: Any, what: str, low: float, high: float, *, open_low: bool = False,
            optional: bool = False) -> float | None:
    """A number of the record within ``[low, high]`` (``(low, high]`` when ``open_low``), or ``None`` when
    ``optional``; else the record is damaged."""
    if value is None and optional:
        return None
    x = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    if not (low < x <= high if open_low else low <= x <= high):
        raise DataError(f"{what} must be a number in {'(' if open_low else '['}{low:g}, {high:g}], got {value!r}: "
                        "the design record is damaged")
    return x


def _points(target: Mapping[str, Any], what: str) -> tuple[float, tuple[RiskUtilityPoint, ...]]:
    """The budget kept and the curve's points, each field checked."""
    kept = _figure(target.get("record_epsilon"), f"{what}: target.record_epsilon", 0, math.inf, open_low=True)
    curve = target.get("curve")
    if not isinstance(curve, list) or not curve or not all(isinstance(p, Mapping) for p in curve):
        raise DataError(f"{what}: target.curve must be a non-empty list of points: the design record is damaged")
    points = []
    for i, p in enumerate(curve):
        at = f"{what}: target.curve[{i}]"
        e = _figure(p.get("record_epsilon"), f"{at}.record_epsilon", 0, math.inf, open_low=True)
        matched, lower, upper = (_figure(p.get(k), f"{at}.{k}", 0, 1) for k in ("matched", "matched_lower",
                                                                                 "matched_upper"))
        assert e is not None and matched is not None and lower is not None and upper is not None  # not optional
        points.append(RiskUtilityPoint(
            e, matched, lower, upper, changed=_figure(p.get("changed"), f"{at}.changed", 0, 1, optional=True),
            information_nats=_figure(p.get("information_nats"), f"{at}.information_nats", 0, math.inf,
                                     optional=True), kept=e == kept))
    if sum(p.kept for p in points) != 1:
        raise DataError(f"{what}: the budget kept ({kept!r}) is not one of the curve's points: the design record is "
                        "damaged")
    assert kept is not None  # not optional
    return kept, tuple(sorted(points, key=lambda p: p.record_epsilon))


def _check_belongs(values: Mapping[str, Any], manifest: Manifest, record_epsilon: float, what: str,
                   manifest_name: str) -> None:
    """The record's matrices are the manifest's, entry for entry, and its budget kept is the manifest's budget."""
    other = f"{what} is not the record of {manifest_name}"
    remedy = "give the design record written beside that manifest"
    matrices = values["matrices"]
    names = [v.name for v in manifest.variables]
    if sorted(matrices) != sorted(names):
        raise DataError(f"{other}: it designed {', '.join(sorted(matrices)) or 'nothing'}, the manifest perturbs "
                        f"{', '.join(names)}; {remedy}")
    for v in manifest.variables:
        try:
            m = PramMatrix.from_dict(matrices[v.name], where=f"{what}, matrix of {v.name}")
        except PramkitError as exc:
            raise DataError(f"{what}: its matrix of {v.name} cannot be read ({exc})") from None
        if m.with_provenance(v.matrix.provenance) != v.matrix:
            raise DataError(f"{other}: its matrix of {v.name} differs from the manifest's; {remedy}")
    budget = manifest.ledger.record_epsilon_budget if manifest.ledger is not None else None
    if budget != record_epsilon:
        raise DataError(f"{other}: the search kept record budget {record_epsilon!r}, the manifest states "
                        f"{budget!r}; {remedy}")


def risk_utility_map(record: DesignRecord | Mapping[str, Any] | str | Path, manifest: Manifest, *, original_sha256: str | None = None,
                     manifest_name: str = "the manifest") -> RiskUtilityMap:
    """The budgets a search to a target explored (module docstring), checked against the report's files.

    Parameters
    ----------
    record : DesignRecord, mapping, str or Path
        The private design record (:class:`pramkit.release.record.DesignRecord`), its JSON values,
        or its file.
    manifest : Manifest
        The release's manifest: the record must be the one written with it (the same matrices,
        entry for entry, and the budget kept is the manifest's record budget).
    original_sha256 : str, optional
        The SHA-256 of the original file the report reads: a record that names another file's is
        refused.
    manifest_name : str
        How messages name the manifest.

    Returns
    -------
    RiskUtilityMap

    Raises
    ------
    DataError
        The file is missing or is not a design record, the record holds no target (a release designed
        without ``--target``) or a damaged one, or it is the record of another manifest or of another
        original file.

    Examples
    --------
    >>> import pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.kernel.rng import SecretKey
    >>> data = census(2_000)
    >>> found = pramkit.design_to_target(data, lambda e: pramkit.plan_release(["age", "education"], epsilon=e,
    ...     categories=CENSUS_VARIABLES), matched=0.1, keys=["age", "sex", "education", "race"], bounds=(0.5, 8.0),
    ...     key=SecretKey(bytes(32), "doc"), grid=3, rtol=0.2)
    >>> manifest, record = found.release
    >>> rmap = risk_utility_map(record, manifest)
    >>> rmap.record_epsilon == found.epsilon, rmap.kept.matched <= rmap.target == 0.1
    (True, True)
    >>> other = pramkit.design_planned(data, pramkit.plan_release(["age", "education"], epsilon=1.0,
    ...                                categories=CENSUS_VARIABLES), key=SecretKey(bytes(32), "doc"))
    >>> risk_utility_map(other.record, manifest)
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: a design record in memory holds no target: it is of a release designed without --target (`pramkit design --target matched=X%`), so there is no risk-utility map to draw
    >>> risk_utility_map(record, other.manifest)
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: a design record in memory is not the record of the manifest: its matrix of age differs from the manifest's; give the design record written beside that manifest
    """
    from pramkit.release.record import DesignRecord

    values: Any
    if isinstance(record, (str, Path)):
        what, values = f"the design record {str(record)!r}", read_design_record(record)
    else:
        what = "a design record in memory"
        values = record.to_dict() if isinstance(record, DesignRecord) else record
        _check_record(values, what)
    target = values.get("target")
    if target is None:
        raise DataError(f"{what} holds no target: it is of a release designed without --target "
                        "(`pramkit design --target matched=X%`), so there is no risk-utility map to draw")
    if not isinstance(target, Mapping):
        raise DataError(f"{what}: its target is not an object: the design record is damaged")
    share = _figure(target.get("matched"), f"{what}: target.matched", 0, 1, open_low=True)
    assert share is not None  # not optional
    keys = target.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise DataError(f"{what}: target.keys must be a list of column names: the design record is damaged")
    kept, points = _points(target, what)
    _check_belongs(values, manifest, kept, what, manifest_name)
    named = values.get("sha256")
    if original_sha256 is not None and named is not None and named != original_sha256:
        raise DataError(f"{what} was designed from another file (SHA-256 {str(named)[:12]}..., the original file "
                        f"given has {original_sha256[:12]}...): give the original file the release was designed from")
    evaluations = target.get("evaluations")
    level = _figure(target.get("level"), f"{what}: target.level", 0, 1, open_low=True, optional=True)
    return RiskUtilityMap(share, tuple(keys), kept, points,
                          evaluations if isinstance(evaluations, int) and not isinstance(evaluations, bool) else None,
                          str(record) if isinstance(record, (str, Path)) else "a design record in memory", level)


def risk_utility_chart(rmap: RiskUtilityMap) -> bytes:
    """The R-U map as a PNG: left, the share of unique records reproduced against the record budget
    (its bounds shaded, the target dashed, the budget kept starred); right, what the release keeps
    against that share, one point per budget.

    Parameters
    ----------
    rmap : RiskUtilityMap
        From :func:`risk_utility_map`.

    Returns
    -------
    bytes
        A PNG at :data:`pramkit.report.images.DPI` dots per inch.

    Examples
    --------
    >>> points = (RiskUtilityPoint(1.0, 0.02, 0.001, 0.03, 0.9, 0.4, False),
    ...           RiskUtilityPoint(4.0, 0.05, 0.01, 0.06, 0.5, 1.1, True))
    >>> risk_utility_chart(RiskUtilityMap(0.06, ("a",), 4.0, points, 2, "r.json"))[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    from pramkit._figure import new_figure, png_bytes
    from pramkit.report.images import DPI, REPORT

    pts, kept = rmap.points, rmap.kept
    eps = [p.record_epsilon for p in pts]
    matched = [100 * p.matched for p in pts]
    low, high = [100 * p.matched_lower for p in pts], [100 * p.matched_upper for p in pts]
    utility = rmap.utility()
    fig = new_figure(REPORT, figsize=(10.0 if utility else 5.5, 3.9), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, 2 if utility else 1, squeeze=False)[0]
    left = axes[0]
    left.fill_between(eps, low, high, color="#4c72b0", alpha=0.18, linewidth=0,
                      label="bounds (released unchanged .. union bound)")
    left.plot(eps, matched, "o-", color="#4c72b0", markersize=4, label="expected share")
    left.axhline(100 * rmap.target, color="#c0392b", linestyle="--", label=f"target: {100 * rmap.target:.4g} %")
    left.plot([kept.record_epsilon], [100 * kept.matched], "*", color="black", markersize=13,
              label=f"kept: epsilon = {kept.record_epsilon:.4g}")
    left.set_xscale("log")
    left.set_xlabel("record epsilon [nats]")
    left.set_ylabel("unique records reproduced exactly\n[% of all records]")
    left.set_title("risk against the budget")
    left.legend(frameon=False, fontsize="small", loc="upper left")
    if utility:
        label, values = utility
        right = axes[1]
        right.errorbar(matched, values, xerr=[[m - lo for m, lo in zip(matched, low)],
                                              [hi - m for m, hi in zip(matched, high)]],
                       fmt="o-", color="#dd8452", markersize=4, elinewidth=1, capsize=2,
                       ecolor=(0.867, 0.518, 0.322, 0.45))
        for i in _labelled(matched, values, pts.index(kept)):
            right.annotate(f"{pts[i].record_epsilon:.3g}", (matched[i], values[i]), textcoords="offset points",
                           xytext=(5, -11), fontsize="x-small", color="#555555")
        right.axvline(100 * rmap.target, color="#c0392b", linestyle="--")
        right.plot([100 * kept.matched], [values[pts.index(kept)]], "*", color="black", markersize=13)
        right.set_xlabel("unique records reproduced exactly [% of all records]")
        right.set_ylabel(label.replace(", I(X; Z) summed over the variables", "\nI(X; Z), all variables"))
        right.set_title("R-U map: what the release keeps against its risk\n(labels: record epsilon)",
                        fontsize="medium")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    return png_bytes(fig)


def _labelled(x: Sequence[float], y: Sequence[float], kept: int, gap: float = 0.07) -> list[int]:
    """The points whose labels do not crowd another's: the budget kept first, then each point at least
    ``gap`` of the plot's width and height away from every point labelled so far.

    Examples
    --------
    >>> _labelled([0, 0.01, 1, 2], [0, 0.01, 1, 2], kept=2)
    [2, 0, 3]
    """
    def span(v: Sequence[float]) -> float:
        return (max(v) - min(v)) or 1.0

    sx, sy = span(x), span(y)
    chosen = [kept]
    for i in range(len(x)):
        if all(max(abs(x[i] - x[j]) / sx, abs(y[i] - y[j]) / sy) >= gap for j in chosen):
            chosen.append(i)
    return chosen


def _n(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.{TABLE_DIGITS}g}"


def risk_utility_section(rmap: RiskUtilityMap, table: Callable[[Sequence[str], Sequence[Sequence[str]],
                                                               Sequence[bool]], str]) -> str:
    """The internal report's section: a sentence, the figure (:func:`risk_utility_chart`) and the
    table of its numbers (for reading and for screen readers), inside ``<div id="risk-utility-map">``.

    Parameters
    ----------
    rmap : RiskUtilityMap
        From :func:`risk_utility_map`.
    table : callable
        The report's table writer ``(header, rows, numeric) -> HTML``.

    Returns
    -------
    str
        HTML.

    Examples
    --------
    >>> from pramkit.report.html import _table
    >>> points = (RiskUtilityPoint(1.0, 0.02, 0.001, 0.03, 0.9, None, False),
    ...           RiskUtilityPoint(4.0, 0.05, 0.01, 0.06, 0.5, None, True))
    >>> page = risk_utility_section(RiskUtilityMap(0.06, ("a",), 4.0, points, 2, "r.json"), _table)
    >>> page.count("<tr>"), "<td>kept</td>" in page, "records kept unchanged" in page
    (3, True, True)
    """
    from pramkit.report.images import data_uri

    def e(x: Any) -> str:
        return html.escape(str(x), quote=True)

    kept = rmap.kept
    utility = rmap.utility()
    rows = [[_n(p.record_epsilon), _n(100 * p.matched), _n(100 * p.matched_lower), _n(100 * p.matched_upper),
             _n(p.information_nats), _n(None if p.changed is None else 100 * p.changed), "kept" if p.kept else ""]
            for p in rmap.points]
    header = ["record epsilon [nats]", "unique records reproduced, expected [% of all records]",
              "lower bound [%]", "upper bound [%]", "information kept I(X; Z) [nats]", "records changed [%]",
              "budget"]
    searched = f"{len(rmap.points)} budgets" + (f" ({rmap.evaluations} designs)" if rmap.evaluations else "")
    held = ("expected (the mean over the draws of the key: a release drawn with one key may reproduce more)"
            if rmap.level is None else f"in at least {100 * rmap.level:.4g} % of releases (a Chernoff bound over the "
            "draws of the key)")
    intro = (f"This release was designed to a target: at most {100 * rmap.target:.4g} % of all records are unique "
             f"records (on {', '.join(rmap.keys)}) that the released file reproduces exactly, {held}. The search "
             f"designed {searched} and kept the largest that meets it: record epsilon {kept.record_epsilon:.4g} nats, "
             f"expected share {100 * kept.matched:.4g} % (bounds {100 * kept.matched_lower:.4g} to "
             f"{100 * kept.matched_upper:.4g} %).")
    alt = ("Risk-utility map: unique records reproduced exactly against the record budget, with the target and the "
           "budget kept" + (f"; and {utility[0]} against that risk" if utility else "") + ". The table below holds "
           "the same numbers.")
    note = (f"From the design record {rmap.source}. Every figure here is computed from the original file (the unique "
            "records, the exact proportions) and the budget itself was chosen from it, which the ledger states: the "
            "map stays in the internal report. The expected share is the expectation over the draws of the key "
            "(the union bound for a household design); the information is I(X; Z) on the exact proportions.")
    return (f'<div id="risk-utility-map"><p>{e(intro)}</p><img alt="{e(alt)}" src="{data_uri(risk_utility_chart(rmap))}">'
            + table([e(h) for h in header], rows, [True] * 6 + [False])
            + f'<p class="meta">{e(note)}</p></div>')
