"""The live preview of a design: its expected risk and utility before anything is applied, and the
risk-utility map of the designs tried (:meth:`pramkit.workbench.Workbench.preview`).

The figures are :func:`pramkit.risk.expected.expected_release`'s, computed from the original file
on the risk step's keys (read once per problem set and kept by the workbench): private figures
for the officer choosing a design, never written into the manifest or the public report.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pramkit.errors import DataError, ParameterError
from pramkit.risk.expected import ExpectedRelease, ProblemSet, expected_release

if TYPE_CHECKING:
    from pramkit.manifest import Manifest
    from pramkit.release.choices import DesignChoices

#: Said wherever the figures are shown.
PRIVATE_NOTE = ("Expected values computed from the original file for choosing a design: they are not "
                "published (neither the manifest nor the public report holds them).")

#: Designs kept in the map (the oldest are dropped).
TRIED_MAX = 200

#: Workbench (imports this module): named, not imported.
Workbench = Any


@dataclass(frozen=True)
class Tried:
    """One design tried: its parameters and its expected figures (from the original: private).

    Parameters
    ----------
    number : int
        Its number in the session, from 1.
    parameters : str
        The variables and the design's flags, as the map labels it.
    epsilon : str
        The record budget the design states.
    figures : mapping
        ``tau1``, ``tau2``, ``individual``, ``household`` (or None), their ``*_before``,
        ``information_kept`` (mean over the perturbed variables) and ``se_ratio`` (the keys' table).

    Examples
    --------
    >>> t = Tried(1, "sex: --epsilon 1.0", "1", {"tau2": 0.5, "information_kept": 0.25})
    >>> Tried.from_dict(t.to_dict()) == t, t.risk, t.information_lost
    (True, 0.5, 0.75)
    """

    number: int
    parameters: str
    epsilon: str
    figures: Mapping[str, Any] = field(default_factory=dict)

    @property
    def risk(self) -> float:
        """The map's risk axis: the expected tau2 after PRAM (records), NaN when not computed."""
        value = self.figures.get("tau2")
        return math.nan if value is None else float(value)

    @property
    def information_lost(self) -> float:
        """The map's utility axis: 1 - the mean information kept over the perturbed variables."""
        value = self.figures.get("information_kept")
        return math.nan if value is None else 1.0 - float(value)

    def to_dict(self) -> dict[str, Any]:
        """As the session file keeps it."""
        return {"number": self.number, "parameters": self.parameters, "epsilon": self.epsilon,
                "figures": dict(self.figures)}

    @classmethod
    def from_dict(cls, saved: Mapping[str, Any]) -> Tried:
        """From :meth:`to_dict` (a session file)."""
        return cls(int(saved["number"]), str(saved["parameters"]), str(saved.get("epsilon", "")),
                   dict(saved.get("figures", {})))


@dataclass(frozen=True)
class PreviewView:
    """A design's expected risk and utility, and the designs tried.

    Parameters
    ----------
    manifest : Manifest
        The design previewed (not made the release).
    expected : ExpectedRelease or None
        Its figures; None when the risk step has not set the keys (``note`` says why).
    risk : pandas.DataFrame
        measure, before, after (expected).
    utility : pandas.DataFrame
        Per perturbed variable and the keys' table: the standard errors of the shares with and
        without PRAM, their ratio, and the information kept.
    note : str
        Why a figure is missing, or empty.
    tried : tuple of Tried
        The designs tried, the current one last.
    """

    manifest: Manifest
    expected: ExpectedRelease | None
    risk: pd.DataFrame
    utility: pd.DataFrame
    note: str
    tried: tuple[Tried, ...]

    @property
    def current(self) -> Tried | None:
        """The design previewed."""
        return self.tried[-1] if self.tried else None

    def ru_map(self) -> str:
        """The risk-utility map as an inline SVG (:func:`ru_map_svg`)."""
        return ru_map_svg(self.tried, None if self.current is None else self.current.number)


def problem_of(wb: Workbench) -> ProblemSet | None:
    """The workbench's problem set (the risk step's keys, fraction or weights, household), read once per
    file and settings; None before the risk step."""
    source = wb.source
    if source is None or not wb.risk_keys or (wb.sampling_fraction is None and wb.weights is None):
        return None
    settings = (str(source.path), wb.risk_keys, wb.sampling_fraction, wb.weights, wb.household)
    cached = getattr(wb, "_problem", None)
    if cached is None or cached[0] != settings:
        problem = ProblemSet.of(source.path, wb.risk_keys, sampling_fraction=wb.sampling_fraction,
                                weights=wb.weights, household=wb.household, **source.reading)
        wb._problem = (settings, problem)
        return problem
    return cached[1]


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:,.{digits}g}"


def risk_table(e: ExpectedRelease) -> pd.DataFrame:
    """Before and after, one row per measure (records): exact expectations over the matrices, but for
    the individual risk where ``individual_exact`` is False and the household risk where
    ``household_exact`` is False (:mod:`pramkit.risk.expected`; the live panel says so below the table)."""
    rows: list[tuple[str, float | None, float | None]] = [
            ("sample uniques", e.sample_uniques_before, e.sample_uniques),
            ("tau1: uniques that are population uniques, correctly matched", e.tau1_before, e.tau1),
            ("tau2: correct matches among the uniques", e.tau2_before, e.tau2),
            ("correct re-identifications (individual risk)" if e.individual_exact else
             "correct re-identifications (individual risk; weights that differ within a cell: approximate)",
             e.individual_before, e.individual)]
    if e.household is not None:
        rows.append(("persons in re-identified households", e.household_before, e.household))
    return pd.DataFrame([{"measure (records)": m, "before": _fmt(b), "after PRAM (expected)": _fmt(a)}
                         for m, b, a in rows])


def utility_table(e: ExpectedRelease) -> pd.DataFrame:
    """Per perturbed variable and the keys' table: the standard errors of the shares (percentage points)."""
    return pd.DataFrame([{"variable": "the keys' table" if u.name == "keys" else u.name,
                          "categories": u.categories,
                          "SE of the shares with PRAM (pp)": _fmt(100 * u.standard_error, 3),
                          "without PRAM (pp)": _fmt(100 * u.standard_error_without, 3),
                          "ratio": _fmt(u.ratio, 3),
                          "information kept (%)": _fmt(100 * u.information_kept, 3)} for u in e.utility])


def preview(wb: Workbench, variables: Sequence[str], choices: DesignChoices, made: tuple[Any, ...]) -> PreviewView:
    """The view of a design made for a preview (``made``: the workbench's names, choices, key, release)."""
    from pramkit.workbench.views import design_view

    names, choices, _, release = made
    manifest = release.manifest
    epsilon = design_view(manifest, release.record, {}, {}).record_epsilon
    shares = {name: figures["p"] for name, figures in release.record.variables.items() if figures.get("p")}
    problem = problem_of(wb)
    expected, note = None, ""
    if problem is None:
        note = "Assess the risk before (step 2) to see the risk after PRAM: its keys and sampling are used."
    else:
        try:
            expected = expected_release(problem, manifest, shares=shares)
        except (ParameterError, DataError) as exc:
            note = f"Risk after PRAM not computed: {exc}"
    figures: dict[str, Any] = {}
    if expected is not None:
        figures = {k: v for k, v in expected.to_dict().items() if k not in ("keys", "perturbed", "utility", "seconds")}
        kept = [u.information_kept for u in expected.utility if u.name != "keys" and math.isfinite(u.information_kept)]
        figures["information_kept"] = float(np.mean(kept)) if kept else None
        keys_table = [u for u in expected.utility if u.name == "keys"]
        figures["se_ratio"] = keys_table[0].ratio if keys_table else None
    else:
        kept = [float(f["information_nats"]) / h for f in release.record.variables.values()   # H(X), strata mixed
                if f.get("information_nats") is not None and f.get("p")
                and (h := f.get("entropy_nats", _entropy(f["p"]))) > 0]
        figures["information_kept"] = float(np.mean(kept)) if kept else None
    parameters = f"{', '.join(names)}: {' '.join(_shown(choices.to_args())) or 'defaults'}"
    tried = [t for t in wb.tried if t.parameters != parameters]
    number = max((t.number for t in wb.tried), default=0) + 1
    wb.tried = [*tried, Tried(number, parameters, epsilon, figures)][-TRIED_MAX:]
    return PreviewView(manifest, expected, risk_table(expected) if expected else pd.DataFrame(),
                       utility_table(expected) if expected else pd.DataFrame(), note, tuple(wb.tried))


def _shown(args: Sequence[str]) -> list[str]:
    """The design's flags as the map labels them: a file by its name, never a path of the work folder.

    Examples
    --------
    >>> _shown(["--epsilon", "1.0", "--categories", "/tmp/work/inputs/codebook.csv"])
    ['--epsilon', '1.0', '--categories', 'codebook.csv']
    """
    from pathlib import PurePath

    return [PurePath(a).name if ("/" in a or "\\" in a) and not a.startswith("--") else a for a in args]


def _entropy(p: Sequence[float]) -> float:
    from pramkit.information import entropy

    return entropy(np.asarray(p, dtype=float))


def ru_map_svg(tried: Sequence[Tried], current: int | None, *, width: int = 560, height: int = 340) -> str:
    """The risk-utility map: one point per design tried (expected tau2 after PRAM across, the information
    lost up), the current one highlighted, each labelled by its number (the list below the map gives the
    parameters); an inline SVG, nothing fetched.

    Parameters
    ----------
    tried : sequence of Tried
        The designs tried.
    current : int or None
        The number of the current design.
    width, height : int
        The drawing's size in pixels.

    Returns
    -------
    str
        ``<svg ...>...</svg>``.

    Examples
    --------
    >>> svg = ru_map_svg([Tried(1, "sex: --epsilon 1.0", "1", {"tau2": 0.5, "information_kept": 0.2}),
    ...                   Tried(2, "sex: --epsilon 3.0", "3", {"tau2": 1.5, "information_kept": 0.7})], 2)
    >>> svg.startswith("<svg"), svg.count('class="ru-point'), svg.count("ru-point current")
    (True, 2, 1)
    """
    left, right, top, bottom = 64, 40, 16, 48
    points = [t for t in tried if math.isfinite(t.risk) and math.isfinite(t.information_lost)]
    xs = [t.risk for t in points] or [0.0]
    x0, x1 = 0.0, max(max(xs) * 1.1, 1e-9)
    y0, y1 = 0.0, 100.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def py(y: float) -> float:
        return height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="risk-utility map of the designs tried" class="ru-map" font-family="sans-serif" font-size="11">',
             f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
             'fill="#fafafa" stroke="#999"/>']
    for i in range(5):
        gx, gy = x0 + (x1 - x0) * i / 4, y0 + (y1 - y0) * i / 4
        parts.append(f'<text x="{px(gx):.1f}" y="{height - bottom + 14}" text-anchor="middle">{gx:.3g}</text>')
        parts.append(f'<text x="{left - 6}" y="{py(gy) + 4:.1f}" text-anchor="end">{gy:.0f}</text>')
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{py(gy):.1f}" y2="{py(gy):.1f}" stroke="#e4e4e4"/>')
    parts.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 10}" text-anchor="middle">'
                 'risk: expected correct matches after PRAM (tau2, records)</text>')
    parts.append(f'<text x="14" y="{(top + height - bottom) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(top + height - bottom) / 2:.0f})">information lost (%)</text>')
    for t in points:
        is_current = t.number == current
        label = html.escape(f"#{t.number} {t.parameters} (epsilon {t.epsilon})")
        cx, cy = px(t.risk), py(100 * t.information_lost)
        parts.append(f'<g class="ru-point{" current" if is_current else ""}" data-number="{t.number}"><title>{label}</title>'
                     f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{7 if is_current else 5}" '
                     f'fill="{"#d62728" if is_current else "#1f77b4"}" stroke="#333"/>'
                     f'<text x="{cx + 9:.1f}" y="{cy - 6:.1f}">#{t.number}</text></g>')
    parts.append("</svg>")
    return "".join(parts)
