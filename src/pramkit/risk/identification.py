"""Identification risk of a microdata sample: tau1 and tau2 under a Poisson log-linear model.

Shlomo and Skinner (2012), sec. 2.1; Skinner and Holmes (1998); Skinner and
Shlomo (2008); Ayed, Battiston and Camerlenghi, sec. 2.1, eqs. (1)-(2):

    tau1 = sum_{j: f_j = 1} P(F_j = 1 | f_j = 1) = sum exp(-lambda_j (1 - pi))
    tau2 = sum_{j: f_j = 1} E(1/F_j | f_j = 1)
         = sum (1 - exp(-lambda_j (1 - pi))) / (lambda_j (1 - pi)),

with ``lambda_j = mu_j / pi`` from the log-linear fit of the sample counts on
the full table (empty cells included).  The sampling fraction ``pi`` is
known, or derived from the weights as ``pi = n / sum of weights`` (one
fraction for the whole file: the model's offset is the same in every cell).

With a manifest, ``data`` is the released file: the key variables it perturbs
are misclassified with known matrices, and tau1, tau2 are the expected
numbers of correct matches among the released sample uniques
(:mod:`pramkit.risk.misclassified`).  The model of the true cells is fitted
to the original file when the data holder passes it (``original``: exact and
as fast as the plain fit), otherwise to the released counts by EM
(:func:`pramkit.risk.loglinear.fit_loglinear_misclassified`), which is meant
for tables of at most :data:`EM_MAX_CELLS` cells.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pramkit.counts import count_file
from pramkit.errors import DataError, PramkitError
from pramkit.manifest import Manifest
from pramkit.risk.frequencies import MissingKeys, frequencies_of, key_table, record_weights
from pramkit.risk.individual import individual_risk
from pramkit.risk.loglinear import LogLinearFit, fit_loglinear, fit_loglinear_misclassified
from pramkit.risk.misclassified import CellRisk, cell_risk


#: Largest table fitted by EM from released counts alone (each EM step costs several dense passes).
EM_MAX_CELLS = 200_000


@dataclass(frozen=True, eq=False)
class RiskResult:
    """Identification risk of a sample under a Poisson log-linear model.

    n: records counted; cells: cells k of the full key table; combinations: non-empty cells
    sample_uniques, sample_doubles: records whose key combination occurs once, twice
    tau1: expected number of sample uniques that are population uniques (records)
        (after PRAM: that are correctly matched and population unique)
    tau2: expected number of correct matches among sample uniques (records)
    expected_reidentifications: sum of the per-record Benedetti-Franconi risks (records)
    sampling_fraction: pi used for lambda = mu / pi
    model: the fitted log-linear model and its diagnostics
    perturbed: key variables misclassified by the manifest (empty without one)
    fitted_to: the counts the model was fitted to: ``"sample"``, ``"original"``
        (the original file of a release) or ``"released (EM)"``
    missing, excluded: the missing-value policy and the records it left out
    per_record: f, F (estimated population count), r1, r2 (NaN unless sample unique),
        individual_risk, for every record (index of ``data``)
    cell_risk: the per-cell measures (r1, r2 and the released means)
    seconds: wall-clock time
    """

    keys: tuple[str, ...]
    n: int
    cells: int
    combinations: int
    sample_uniques: int
    sample_doubles: int
    tau1: float
    tau2: float
    expected_reidentifications: float
    sampling_fraction: float
    model: LogLinearFit
    perturbed: tuple[str, ...]
    fitted_to: str
    missing: MissingKeys
    excluded: int
    per_record: pd.DataFrame | None
    cell_risk: CellRisk
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The file-level figures as plain JSON values."""
        return {
            "keys": list(self.keys),
            "n": self.n,
            "cells": self.cells,
            "combinations": self.combinations,
            "sample_uniques": self.sample_uniques,
            "sample_doubles": self.sample_doubles,
            "tau1": self.tau1,
            "tau2": self.tau2,
            "expected_reidentifications": self.expected_reidentifications,
            "sampling_fraction": self.sampling_fraction,
            "model": self.model.formula,
            "fit": self.model.diagnostics(),
            "perturbed": list(self.perturbed),
            "fitted_to": self.fitted_to,
            "missing": self.missing,
            "excluded": self.excluded,
            "seconds": self.seconds,
        }


def sampling_fraction_of(
    n: int, *, sampling_fraction: float | None, weights: np.ndarray | None
) -> float:
    """pi: given, or ``n / sum of weights``."""
    if (sampling_fraction is None) == (weights is None):
        raise PramkitError("give exactly one of sampling_fraction (--sampling-fraction) and weights (--weights)")
    if sampling_fraction is not None:
        pi = float(sampling_fraction)
        if not (math.isfinite(pi) and 0 < pi <= 1):
            raise PramkitError(f"the sampling fraction must lie in (0, 1], got {sampling_fraction!r}")
        return pi
    pi = n / float(np.sum(weights))
    if pi > 1:
        raise PramkitError(
            f"the weights sum to {float(np.sum(weights)):g}, less than the {n} records; "
            "sampling weights must be inverse inclusion probabilities (sum at least n)"
        )
    return pi


def _fit_model(
    counts: np.ndarray, source: np.ndarray | None, keys: tuple[str, ...], perturbed: tuple[str, ...],
    manifest: Manifest | None, *, model: str | Sequence[Sequence[str]], tol: float,
) -> tuple[LogLinearFit, str, list[np.ndarray | None]]:
    """The log-linear model of the true cells: fitted to the sample counts, to the
    original file's counts ``source`` (a release with its original), or by EM from
    the released counts; with the misclassification matrices of the key axes."""
    if source is not None and not perturbed:
        raise PramkitError("original is only used with a manifest that perturbs a key variable")
    if not perturbed:
        return fit_loglinear(counts, keys, model=model, tol=tol), "sample", [None] * len(keys)
    mats = [manifest[k].matrix.matrix if k in perturbed else None for k in keys]
    if source is not None:
        if source.sum() != counts.sum():
            raise DataError(
                f"the original file has {int(source.sum())} counted records, the released file "
                f"{int(counts.sum())}; pass the file the release was made from"
            )
        return fit_loglinear(source, keys, model=model, tol=tol), "original", mats
    if counts.size > EM_MAX_CELLS:
        raise PramkitError(
            f"the keys have {counts.size:,} cells; fitting the model from released counts alone (EM) "
            f"is limited to {EM_MAX_CELLS:,} cells: pass the original file (original=, --original)"
        )
    return fit_loglinear_misclassified(counts, keys, mats, model=model, tol=tol), "released (EM)", mats


def _file_risk(
    path: str | Path, keys: tuple[str, ...], perturbed: tuple[str, ...], start: float, *,
    sampling_fraction: float | None, weights: Any, model: str | Sequence[Sequence[str]],
    manifest: Manifest | None, original: Any, missing: MissingKeys, tol: float,
) -> RiskResult:
    """:func:`identification_risk` of a file streamed through :func:`pramkit.counts.count_file`:
    the same figures from the cell counts (and weight sums), memory bounded by a chunk and
    the table; no per-record output."""
    if weights is not None and not isinstance(weights, str):
        raise PramkitError("with a file, weights must name its weight column")
    if original is not None and not isinstance(original, (str, Path)):
        raise PramkitError("with a file, original must be the original file's path too")
    declared = {k: manifest[k].matrix.categories for k in perturbed}
    table = count_file(path, keys, categories=declared, weights=weights, missing=missing)
    counts = table.counts.astype(float)
    n = int(table.counts.sum())
    if n == 0:
        raise DataError("every record has a missing key value; use missing='category' to count them")
    sums = table.weight_sums
    pi = sampling_fraction_of(n, sampling_fraction=sampling_fraction, weights=None if sums is None else sums.ravel())
    source = None
    if original is not None:
        source = count_file(original, keys, categories=dict(zip(keys, table.categories)),
                            missing=missing).counts.astype(float)
    fit, fitted_to, mats = _fit_model(counts, source, keys, perturbed, manifest, model=model, tol=tol)
    risk = cell_risk(fit.fitted, pi, mats)
    unique = counts == 1
    occupied = counts > 0
    population = sums if sums is not None else counts / pi
    indiv = individual_risk(counts[occupied], population[occupied])
    return RiskResult(
        keys=keys, n=n, cells=counts.size, combinations=int(occupied.sum()),
        sample_uniques=int(unique.sum()), sample_doubles=int((counts == 2).sum()) * 2,
        tau1=float(risk.r1[unique].sum()), tau2=float(risk.r2[unique].sum()),
        expected_reidentifications=float(np.dot(counts[occupied], indiv.risk)),
        sampling_fraction=pi, model=fit, perturbed=perturbed, fitted_to=fitted_to, missing=missing,
        excluded=table.missing, per_record=None, cell_risk=risk, seconds=time.perf_counter() - start,
    )


def identification_risk(
    data: pd.DataFrame | str | Path,
    keys: Sequence[str],
    *,
    sampling_fraction: float | None = None,
    weights: str | Sequence[float] | np.ndarray | None = None,
    model: str | Sequence[Sequence[str]] = "2way",
    manifest: Manifest | None = None,
    original: pd.DataFrame | str | Path | None = None,
    missing: MissingKeys = "category",
    tol: float = 1e-4,
) -> RiskResult:
    """tau1, tau2 and per-record risks of ``data`` on the key variables ``keys``.

    Parameters
    ----------
    data : the records in memory, or the path of a file, which is then streamed (memory
        bounded by a chunk and the key table; ``per_record`` is then ``None``)
    sampling_fraction, weights : exactly one; ``weights`` a column name or one value per record
    model : ``"independence"``, ``"2way"`` (default), a formula ``"a*b + c"`` or a list of margins
    manifest : the release manifest when ``data`` is a released (perturbed) file
    original : with a manifest, the original file the release was made from (same
        records and keys); the model is then fitted to its counts instead of by EM
    missing : ``"category"`` (missing is a key category of its own) or ``"exclude"``
    tol : relative margin tolerance of the fit
    """
    start = time.perf_counter()
    keys = tuple(keys)
    perturbed = tuple(k for k in keys if manifest is not None and k in manifest.names)
    if isinstance(data, (str, Path)):
        return _file_risk(data, keys, perturbed, start, sampling_fraction=sampling_fraction, weights=weights,
                          model=model, manifest=manifest, original=original, missing=missing, tol=tol)
    categories = None
    if perturbed:
        table0 = key_table(data, keys, missing=missing)
        categories = [
            manifest[k].matrix.categories if k in perturbed else table0.categories[i] for i, k in enumerate(keys)
        ]
    table = key_table(data, keys, missing=missing, categories=categories)
    w_all = None if weights is None else record_weights(data, weights)
    w = None if w_all is None else w_all[table.included]
    pi = sampling_fraction_of(table.n, sampling_fraction=sampling_fraction, weights=w)
    freq = frequencies_of(table, w_all if w_all is not None else np.full(len(data), 1.0 / pi))
    counts = table.dense_counts()
    source = None
    if original is not None:
        if not isinstance(original, pd.DataFrame):
            raise PramkitError("with data in memory, original must be a DataFrame too")
        source = key_table(original, keys, missing=missing, categories=table.categories).dense_counts()
    fit, fitted_to, mats = _fit_model(counts, source, keys, perturbed, manifest, model=model, tol=tol)
    risk = cell_risk(fit.fitted, pi, mats)
    unique_cells = counts == 1
    per_cell_r1 = np.where(unique_cells, risk.r1, np.nan).ravel()
    per_cell_r2 = np.where(unique_cells, risk.r2, np.nan).ravel()
    cell = np.full(len(data), -1)
    cell[table.included] = table.cell_index()
    counted = cell >= 0
    r1 = np.full(len(data), np.nan)
    r2 = np.full(len(data), np.nan)
    r1[counted] = per_cell_r1[cell[counted]]
    r2[counted] = per_cell_r2[cell[counted]]
    indiv = individual_risk(freq.f, freq.F)
    per_record = pd.DataFrame(
        {"f": freq.f, "F": freq.F, "r1": r1, "r2": r2, "individual_risk": indiv.risk}, index=data.index
    )
    return RiskResult(
        keys=keys,
        n=freq.n,
        cells=table.cells,
        combinations=freq.combinations,
        sample_uniques=freq.sample_uniques,
        sample_doubles=freq.sample_doubles,
        tau1=float(risk.r1[unique_cells].sum()),
        tau2=float(risk.r2[unique_cells].sum()),
        expected_reidentifications=indiv.expected_reidentifications,
        sampling_fraction=pi,
        model=fit,
        perturbed=perturbed,
        fitted_to=fitted_to,
        missing=table.missing,
        excluded=freq.excluded,
        per_record=per_record,
        cell_risk=risk,
        seconds=time.perf_counter() - start,
    )
