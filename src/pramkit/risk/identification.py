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
from typing import Any, Sequence

import numpy as np
import pandas as pd

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
    per_record: pd.DataFrame
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


def identification_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    sampling_fraction: float | None = None,
    weights: str | Sequence[float] | np.ndarray | None = None,
    model: str | Sequence[Sequence[str]] = "2way",
    manifest: Manifest | None = None,
    original: pd.DataFrame | None = None,
    missing: MissingKeys = "category",
    tol: float = 1e-4,
) -> RiskResult:
    """tau1, tau2 and per-record risks of ``data`` on the key variables ``keys``.

    Parameters
    ----------
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
    if original is not None and not perturbed:
        raise PramkitError("original is only used with a manifest that perturbs a key variable")
    if perturbed:
        mats = [manifest[k].matrix.matrix if k in perturbed else None for k in keys]
        if original is not None:
            source = key_table(original, keys, missing=missing, categories=table.categories)
            if source.n != table.n:
                raise DataError(
                    f"the original file has {source.n} counted records, the released file {table.n}; "
                    "pass the file the release was made from"
                )
            fit = fit_loglinear(source.dense_counts(), keys, model=model, tol=tol)
            fitted_to = "original"
        elif table.cells > EM_MAX_CELLS:
            raise PramkitError(
                f"the keys have {table.cells:,} cells; fitting the model from released counts alone (EM) "
                f"is limited to {EM_MAX_CELLS:,} cells: pass the original file (original=, --original)"
            )
        else:
            fit = fit_loglinear_misclassified(counts, keys, mats, model=model, tol=tol)
            fitted_to = "released (EM)"
    else:
        mats = [None] * len(keys)
        fit = fit_loglinear(counts, keys, model=model, tol=tol)
        fitted_to = "sample"
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
