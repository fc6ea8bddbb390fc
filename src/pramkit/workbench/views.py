"""What each step of the workbench shows: plain values an application displays as they are.

Every figure is computed by the library (risk, design record, measures,
estimates); a view only arranges them into tables of text and PNG images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pramkit.kernel.rng import SecretKey
from pramkit.ledger import Guarantee, epsilon_words, release_guarantee
from pramkit.manifest import Manifest
from pramkit.release.choices import DesignChoices
from pramkit.release.record import DesignRecord
from pramkit.report.html import fmt

if TYPE_CHECKING:
    from pramkit.risk.contributions import ReleaseContributions


@dataclass(frozen=True)
class RiskView:
    """The identification risk of a file on its key variables.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``measure`` and ``value`` (text).
    plot_png : bytes or None
        The goodness-of-fit figure of the risk model (the one ``pramkit risk --plot`` draws).
    figures : dict
        The same figures as JSON values (the library's ``to_dict``).
    note : str
        Why there are no figures (e.g. the keys are perturbed jointly), or "".
    contributions : pandas.DataFrame or None
        With contributions asked for: per key variable its share of the SUDA score and of tau1, tau2
        and the individual risk (text, :func:`pramkit.risk.contributions.risk_contributions`).
    sentences : tuple of str
        One plain sentence per level carrying the most special-unique risk.
    warnings : tuple of str
        What the library warned of during the step, in the page's words
        (:mod:`pramkit.workbench.heard`).

    Examples
    --------
    >>> view = RiskView.of({"n": 100, "combinations": 5, "cells": 6, "sample_uniques": 2, "tau1": 1.5,
    ...                     "tau2": 0.25, "expected_reidentifications": 3.2, "sampling_fraction": 0.05})
    >>> view.table.iloc[:3].to_dict("list")  # doctest: +NORMALIZE_WHITESPACE
    {'measure': ['records', 'key combinations in the file', "key combinations possible (the keys' categories
                 multiplied)"], 'value': ['100', '5', '6']}
    """

    table: pd.DataFrame
    plot_png: bytes | None = None
    figures: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    contributions: pd.DataFrame | None = None
    sentences: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    #: Figure of the library's result -> its name on the page.
    ROWS = (("n", "records"), ("combinations", "key combinations in the file"),
            ("cells", "key combinations possible (the keys' categories multiplied)"), ("sample_uniques", "sample uniques"),
            ("sample_doubles", "sample doubles"), ("tau1", "tau1: population uniques among sample uniques"),
            ("tau2", "tau2: expected correct matches of sample uniques"),
            ("expected_reidentifications", "expected re-identifications (individual risk)"),
            ("sampling_fraction", "sampling fraction"), ("households", "households"),
            ("household_expected_reidentifications", "expected households re-identified"),
            ("household_risk_max", "largest household risk"))

    @classmethod
    def of(cls, figures: Mapping[str, Any], plot_png: bytes | None = None) -> RiskView:
        """The table of the figures present in ``figures``, in a fixed order."""
        rows = [(label, fmt(figures[key])) for key, label in cls.ROWS if figures.get(key) is not None]
        return cls(pd.DataFrame(rows, columns=["measure", "value"]), plot_png, dict(figures))

    def with_contributions(self, explained: ReleaseContributions) -> RiskView:
        """This view with the contributions of :func:`pramkit.risk.contributions.release_contributions`.

        Examples
        --------
        >>> from pramkit.risk.contributions import release_contributions
        >>> data = pd.DataFrame({"a": [2, 1, 1, 3], "b": [0, 3, 0, 0]})
        >>> view = RiskView.of({"n": 4}).with_contributions(release_contributions(data, ["a", "b"],
        ...                                                                       sampling_fraction=1.0))
        >>> view.contributions.iloc[0].tolist(), view.sentences[0]
        (['a', '75 %', '75 %', '75 %', '50 %'], 'a = 1 carries 25 % of the special-unique risk.')
        """
        from dataclasses import replace

        variables = explained.before.variables
        table = pd.DataFrame({"variable": variables["variable"].astype(str),
                              **{label: [f"{fmt(x, 3)} %" for x in variables[name]]
                                 for name, label in (("suda", "SUDA"), ("tau1", "tau1"), ("tau2", "tau2"),
                                                     ("individual", "individual risk"))}})
        return replace(self, contributions=table, sentences=explained.sentences)

    @classmethod
    def not_computed(cls, why: str) -> RiskView:
        """No figures, and why.

        Examples
        --------
        >>> RiskView.not_computed("no key is perturbed").table.empty
        True
        """
        return cls(pd.DataFrame(columns=["measure", "value"]), note=why)


@dataclass(frozen=True)
class DesignView:
    """A designed release as the officer checks it before applying.

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        The public manifest.
    record : pramkit.release.record.DesignRecord or None
        The private design record (None for a manifest given as it is).
    guarantee : str
        The ledger's guarantee sentence.
    record_epsilon : str
        The record epsilon (rounded outward), "given the structure" when what is released exactly
        (strata, kept codes, rule breakers) is set aside, as the guarantee sentence says.
    ledger : pandas.DataFrame
        Per perturbed variable: categories, epsilon (a variable with strata, kept codes or rules: its
        local epsilon, infinite, and its epsilon given the structure, in the words of every surface,
        :func:`pramkit.ledger.epsilon_words`), and with a design record the
        information kept, the share of values kept and the expected distance moved (where the
        variable has distances).
    uncovered : tuple of str
        What reaches the manifest from the data without a DP mechanism, in the ledger's words: the
        officer confirms it before the export.
    heatmaps : dict
        Variable -> PNG of its matrix (variables of at most
        :data:`pramkit.report.plots.HEATMAP_MAX` categories).
    notes : tuple of str
        The design's notes and warnings.
    stated : pramkit.ledger.Guarantee or None
        The ledger's guarantee of the release (:func:`pramkit.ledger.release_guarantee`, with the file's
        columns): ``guarantee`` and ``record_epsilon`` are its sentence and figure, and the Export step
        shows its :attr:`~pramkit.ledger.Guarantee.coverage`.
    warnings : tuple of str
        What the library warned of during the step besides the design's own notes, in the page's words
        (:mod:`pramkit.workbench.heard`).
    """

    manifest: Manifest
    record: DesignRecord | None
    guarantee: str
    record_epsilon: str
    ledger: pd.DataFrame
    uncovered: tuple[str, ...]
    heatmaps: Mapping[str, bytes]
    notes: tuple[str, ...] = ()
    stated: Guarantee | None = None
    warnings: tuple[str, ...] = ()

    @property
    def headline(self) -> str:
        """The record epsilon with its qualifier (:attr:`pramkit.ledger.Guarantee.headline`)."""
        return (self.stated or release_guarantee(self.manifest)).headline

    @property
    def coverage(self) -> str:
        """What no DP mechanism covers, in the ledger's words (:attr:`pramkit.ledger.Guarantee.coverage`)."""
        return (self.stated or release_guarantee(self.manifest)).coverage


def share_kept(p: np.ndarray | None, diagonal: np.ndarray) -> float | None:
    """Expected share of values released unchanged, sum_k p_k M[k, k].

    Examples
    --------
    >>> share_kept(np.array([0.5, 0.5]), np.array([0.9, 0.7])), share_kept(None, np.array([1.0]))
    (0.8, None)
    """
    if p is None or len(p) != len(diagonal):
        return None
    return float(np.dot(p, diagonal))


@dataclass(frozen=True)
class Designed:
    """The design step's state: what was asked, with which key, and what came out.

    Parameters
    ----------
    variables : tuple of str
        The columns perturbed.
    choices : pramkit.release.choices.DesignChoices or None
        The design command's flags, with the input files as kept in the work folder (None: a
        manifest given as it is).
    key : pramkit.kernel.rng.SecretKey or None
        The key the design step's noise was drawn from (a given manifest: the key to apply); None
        once the release is applied (the workbench drops it: applying again needs it again).
    view : DesignView
        What came out.
    manifest_file : pathlib.Path or None
        A manifest given as it is, kept in the work folder.
    noise_key : str or None
        The fingerprint of the key the design's noise was drawn from (None: a manifest given, or a
        design that draws none).  Applying with another key releases this design as it is.
    """

    variables: tuple[str, ...]
    choices: DesignChoices | None
    key: SecretKey | None
    view: DesignView
    manifest_file: Path | None = None
    noise_key: str | None = None


@dataclass(frozen=True)
class ApplyView:
    """A release applied: what changed, and estimates from the release beside the original.

    Parameters
    ----------
    changed : pandas.DataFrame
        Per perturbed variable: values changed and missing values left as they were.
    estimates : pandas.DataFrame
        Per variable and category: the original share, the released share, the estimate from
        the release and its 95 % interval (percent).
    key_fingerprint : str
        Which key made the release (never the key).
    design : DesignView
        The design applied: the one the design step showed, its manifest unchanged.
    risk_after : RiskView or None
        The identification risk of the released file (PRAM accounted for).
    warnings : tuple of str
        What the library warned of during the step, in the page's words (:mod:`pramkit.workbench.heard`), each
        estimate's naming its variable: e.g. a singular matrix, whose estimates are then maximum likelihood,
        without an interval for a category the matrix cannot tell apart from others.
    """

    changed: pd.DataFrame
    estimates: pd.DataFrame
    key_fingerprint: str
    design: DesignView
    risk_after: RiskView | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExportView:
    """A release written as ``public/`` and ``private/``.

    Parameters
    ----------
    out : pathlib.Path
        The folder holding them.
    files : dict
        Label -> path relative to ``out``.
    script : str
        The shell script that reproduces the release (also ``private/reproduce.sh``).
    warnings : tuple of str
        What the library warned of during the step, in the page's words (:mod:`pramkit.workbench.heard`): e.g.
        the temporary files of an interrupted export removed.
    """

    out: Any
    files: Mapping[str, str]
    script: str
    warnings: tuple[str, ...] = ()

    def listing(self) -> dict[str, list[str]]:
        """The files of each folder, by name.

        Examples
        --------
        >>> ExportView("out", {"manifest": "public/manifest.json", "record": "private/design-record.json"},
        ...            "").listing()
        {'public': ['manifest.json'], 'private': ['design-record.json']}
        """
        out: dict[str, list[str]] = {"public": [], "private": []}
        for path in self.files.values():
            folder, name = path.split("/", 1)
            out[folder].append(name)
        return out


def design_view(manifest: Manifest, record: DesignRecord | None, heatmaps: Mapping[str, bytes],
                distances: Mapping[str, float], columns: Sequence[str] | None = None) -> DesignView:
    """The view of a designed release (figures from its manifest and, when there is one, its design record).

    Parameters
    ----------
    manifest : Manifest
        The public manifest.
    record : DesignRecord or None
        The private design record.
    heatmaps : mapping
        Variable -> PNG of its matrix.
    distances : mapping
        Variable -> expected distance moved (variables with distances only).
    columns : sequence of str, optional
        The file's columns (the release keeps them): the guarantee names those released as they are.

    Returns
    -------
    DesignView

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> view = design_view(Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}), None, {}, {})
    >>> view.record_epsilon, view.ledger.to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    ('1', [{'variable': 'sex', 'categories': 2, 'epsilon': '1', 'information kept (nats)': 'n/a',
            'values kept (%)': 'n/a', 'expected distance moved': 'n/a'}])
    """
    rows = []
    for v in manifest.variables:
        figures = {} if record is None else record.variables.get(v.name, {})
        p = figures.get("p")
        kept = share_kept(None if p is None else np.asarray(p, dtype=float), v.matrix.diagonal)
        rows.append({
            "variable": v.name, "categories": v.matrix.size,
            "epsilon": epsilon_words(v.epsilon, v.block_epsilon if v.is_structured else None),
            "information kept (nats)": fmt(figures.get("information_nats")),
            "values kept (%)": "n/a" if kept is None else f"{100 * kept:.1f}",
            "expected distance moved": fmt(distances.get(v.name)),
        })
    written = {} if record is None else record.to_dict()
    notes = tuple(written.get("notes", [])) + tuple(f"warning: {w}" for w in written.get("warnings", []))
    stated = release_guarantee(manifest, columns)
    return DesignView(manifest, record, stated.sentence, stated.figure, pd.DataFrame(rows),
                      () if manifest.ledger is None else stated.data_dependent, dict(heatmaps), notes, stated)
