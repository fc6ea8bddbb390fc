"""Identification risk of a microdata sample: tau1 and tau2 under a Poisson log-linear model.

Shlomo and Skinner (2012), sec. 2.1; Skinner and Holmes (1998); Skinner and
Shlomo (2008); Ayed, Battiston and Camerlenghi, sec. 2.1, eqs. (1)-(2).  With
``f_j ~ Poisson(pi_j lambda_j)`` and ``F_j - f_j ~ Poisson((1 - pi_j) lambda_j)``
(eq. (1) of :mod:`pramkit.risk.fractions`),

    tau1 = sum_{j: f_j = 1} P(F_j = 1 | f_j = 1) = sum exp(-lambda_j (1 - pi_j))                  (4)
    tau2 = sum_{j: f_j = 1} E(1/F_j | f_j = 1)
         = sum (1 - exp(-lambda_j (1 - pi_j))) / (lambda_j (1 - pi_j)),                           (5)

with ``lambda_j = mu_j / pi_j`` and ``mu_j`` the log-linear fit of the sample
counts on the full table (empty cells included), offset ``log pi_j``.  The
sampling fractions ``pi_j`` are one known fraction, or come from the weights
(:func:`pramkit.risk.fractions.sampling_fractions`): per cell,
``f_j / sum of weights`` where the weights determine it, one fraction
``n / sum of weights`` when it is the same everywhere.  The assumption made
is part of every result (``sampling_assumption``).  The fit runs until
tau1 and tau2 are stable to ``tau_rtol`` (relative) and the margins to ``tol``.

With a manifest, ``data`` is the released file: the key variables it perturbs
are misclassified with known matrices, and tau1, tau2 are the expected
numbers of correct matches among the released sample uniques
(:mod:`pramkit.risk.misclassified`).  The model of the true cells is fitted
to the original file when the data holder passes it (``original``: exact and
as fast as the plain fit), otherwise to the released counts by EM
(:func:`pramkit.risk.loglinear.fit_loglinear_misclassified`), which is meant
for tables of at most :data:`EM_MAX_CELLS` cells.  The sampling fractions are
those of the true cells: from the original file's weights, or (EM) from the
released weights when they vary only with keys that are not perturbed.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from pramkit.counts import count_file
from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError
from pramkit.frames import frame_kind, records_like, streamed
from pramkit.manifest import Manifest
from pramkit.risk.folding import (
    Joint,
    axis_categories,
    fold,
    folded_cells,
    folded_shape,
    folding,
    outside_reasons,
    perturbation,
)
from pramkit.risk.fractions import FractionsBy, SamplingFractions, sampling_fraction_of, sampling_fractions
from pramkit.risk.frequencies import MissingKeys, key_categories, key_table, record_weights
from pramkit.risk.individual import individual_risk
from pramkit.risk.loglinear import (
    MAX_CELLS,
    LogLinearFit,
    Watch,
    check_cells,
    fit_loglinear,
    fit_loglinear_misclassified,
)
from pramkit.risk.misclassified import CellRisk, cell_risk
from pramkit.settings import RiskSettings, checked, only_spec
from pramkit.validate import SPARK_MASTER, engine_name

__all__ = ["EM_MAX_CELLS", "IndependenceRisk", "RiskResult", "fit_model", "identification_risk",
           "independence_risk", "sampling_fraction_of"]

#: Largest table fitted by EM from released counts alone (each EM step costs several dense passes).
EM_MAX_CELLS = 200_000


@dataclass(frozen=True, eq=False)
class RiskResult:
    """Identification risk of a sample under a Poisson log-linear model.

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    n : int
        Records counted.
    cells : int
        Cells k of the full key table.
    combinations : int
        Non-empty cells.
    sample_uniques, sample_doubles : int
        Records whose key combination occurs once, twice.
    tau1 : float
        Eq. (4): expected number of sample uniques that are population uniques
        (records); after PRAM: that are correctly matched and population unique.
    tau2 : float
        Eq. (5): expected number of correct matches among sample uniques (records).
    expected_reidentifications : float
        Sum of the per-record Benedetti-Franconi risks (records).
    sampling_fraction : float
        The file's fraction: the given pi, or n / sum of weights.
    model : pramkit.risk.loglinear.LogLinearFit
        The fitted log-linear model and its diagnostics.
    perturbed : tuple of str
        Key variables misclassified by the manifest (empty without one).
    fitted_to : str
        The counts the model was fitted to: ``"sample"``, ``"original"``
        (the original file of a release) or ``"released (EM)"``.
    missing : {"category", "exclude"}
        The missing-value policy.
    excluded : int
        The records it left out.
    per_record : pandas.DataFrame, polars.DataFrame, pyarrow.Table or None
        f, F (estimated population count), r1, r2 (NaN unless sample unique),
        individual_risk and pi (the sampling fraction of the record's cell), for every
        record (index of ``data``), as a frame of ``data``'s type; ``None`` for a file
        or a ``LazyFrame`` streamed.
    cell_risk : pramkit.risk.misclassified.CellRisk
        The per-cell measures (r1, r2 and the released means).
    seconds : float
        Wall-clock time.
    fractions : {"cell", "file"}
        ``"cell"`` when the sampling fractions vary over the cells, else ``"file"``.
    sampling_fraction_range : tuple of float
        The smallest and largest f / sum of weights over the occupied cells
        (the given pi twice without weights).
    fraction_strata : tuple of str
        The keys the fractions vary with (empty for one fraction).
    assumed_cells : int
        Cells with a positive fitted mean whose fraction the weights do not
        determine (no record in their class); they assume ``sampling_fraction``.
    sampling_assumption : str
        The sampling assumption in one line.
    sampling_fractions : pramkit.risk.fractions.SamplingFractions
        The fractions of every cell.

    Examples
    --------
    Each sample unique counts at most once: ``0 <= tau1 <= tau2 <= sample_uniques``,
    and tau2 is the sum of the uniques' ``r2``:

    >>> import pandas as pd
    >>> data = pd.DataFrame({"sex": list("mfmfmfmfmf"),
    ...                      "age": ["20", "20", "30", "30", "40", "40", "20", "30", "40", "50"]})
    >>> res = identification_risk(data, ["sex", "age"], sampling_fraction=0.5)
    >>> res.n, res.cells, res.combinations, res.sample_uniques
    (10, 8, 7, 4)
    >>> 0 <= res.tau1 <= res.tau2 <= res.sample_uniques, round(res.tau1, 4), round(res.tau2, 4)
    (True, 1.4715, 2.5285)
    >>> bool(np.isclose(res.per_record["r2"].sum(), res.tau2))
    True
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
    per_record: Any
    cell_risk: CellRisk
    seconds: float
    fractions: FractionsBy = "file"
    sampling_fraction_range: tuple[float, float] = (math.nan, math.nan)
    fraction_strata: tuple[str, ...] = ()
    assumed_cells: int = 0
    sampling_assumption: str = ""
    sampling_fractions: SamplingFractions | None = None

    def to_dict(self) -> dict[str, Any]:
        """The file-level figures as plain JSON values.

        Returns
        -------
        dict
            Every field but ``per_record``, ``cell_risk`` and
            ``sampling_fractions``; ``model`` is the formula and ``fit`` its
            diagnostics (:meth:`pramkit.risk.loglinear.LogLinearFit.diagnostics`).

        Examples
        --------
        >>> import json
        >>> import pandas as pd
        >>> data = pd.DataFrame({"sex": list("mfmfmf"), "age": ["20", "20", "30", "30", "40", "50"]})
        >>> figures = identification_risk(data, ["sex", "age"], sampling_fraction=0.1).to_dict()
        >>> figures["model"], figures["fit"]["converged"], figures["sample_uniques"]
        ('sex*age', True, 6)
        >>> json.loads(json.dumps(figures)) == figures
        True
        """
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
            "fractions": self.fractions,
            "sampling_fraction_range": list(self.sampling_fraction_range),
            "fraction_strata": list(self.fraction_strata),
            "assumed_cells": self.assumed_cells,
            "sampling_assumption": self.sampling_assumption,
        }


def _tau_watch(counts: np.ndarray, fractions: SamplingFractions, rtol: float) -> Watch:
    """tau1 and tau2, eqs. (4)-(5), as summaries of the fit to watch."""
    uniques = np.flatnonzero(counts.ravel() == 1)
    pi = fractions.at(uniques, counts.shape)

    def taus(mu: np.ndarray) -> np.ndarray:
        risk = cell_risk(mu, pi, [None])
        return np.array([risk.r1.sum(), risk.r2.sum()])

    return Watch(uniques, taus, rtol=rtol)


def fit_model(
    counts: np.ndarray, sums: np.ndarray | None, source: np.ndarray | None, source_sums: np.ndarray | None,
    keys: tuple[str, ...], perturbed: tuple[str, ...], manifest: Manifest | None, *,
    sampling_fraction: float | None, fractions: FractionsBy, model: str | Sequence[Sequence[str]],
    tol: float, tau_rtol: float | None,
) -> tuple[LogLinearFit, str, list[np.ndarray | None], SamplingFractions]:
    """The log-linear model of the true cells and their sampling fractions: fitted to the
    sample counts, to the original file's counts ``source`` (a release with its original),
    or by EM from the released counts; with the misclassification matrices of the key axes.

    Parameters
    ----------
    counts, sums : numpy.ndarray
        The (released) file's counts and weight sums over the (folded) keys (``sums`` None without weights).
    source, source_sums : numpy.ndarray or None
        The original file's, with a release and its original.
    keys : tuple of str
        The table's axes.
    perturbed : tuple of str
        The axes the manifest perturbs (empty: the counts are the sample's).
    manifest : Manifest or None
        The release manifest.
    sampling_fraction, fractions, model, tol, tau_rtol
        As :func:`identification_risk`.

    Returns
    -------
    fit : pramkit.risk.loglinear.LogLinearFit
    fitted_to : str
        ``"sample"``, ``"original"`` or ``"released (EM)"``.
    matrices : list of numpy.ndarray or None
        One per axis (None where not perturbed).
    fractions : pramkit.risk.fractions.SamplingFractions

    Raises
    ------
    ParameterError
        ``source`` without a perturbed axis, or EM beyond :data:`EM_MAX_CELLS`.
    DataError
        An original with another number of records.

    Examples
    --------
    >>> counts = np.array([[3.0, 1.0], [2.0, 4.0]])
    >>> fit, fitted_to, mats, fr = fit_model(counts, None, None, None, ("a", "b"), (), None,
    ...                                      sampling_fraction=0.5, fractions="cell", model="independence",
    ...                                      tol=1e-10, tau_rtol=None)
    >>> fitted_to, mats, fr.overall, np.round(fit.fitted, 6).tolist()
    ('sample', [None, None], 0.5, [[2.0, 2.0], [3.0, 3.0]])
    """
    if source is not None and not perturbed:
        raise ParameterError("original is only used with a manifest that perturbs a key variable")
    if not perturbed:
        fr = sampling_fractions(counts, keys, sampling_fraction=sampling_fraction, weight_sums=sums, by=fractions)
        watch = None if tau_rtol is None else _tau_watch(counts, fr, tau_rtol)
        fit = fit_loglinear(counts, keys, model=model, tol=tol, offset=fr.offset, watch=watch)
        return fit, "sample", [None] * len(keys), fr
    mats = [manifest[k].matrix.matrix if manifest is not None and k in perturbed else None for k in keys]
    if source is not None:
        if source.sum() != counts.sum():
            raise DataError(
                f"the original file has {int(source.sum())} counted records, the released file "
                f"{int(counts.sum())}; pass the file the release was made from"
            )
        fr = sampling_fractions(source, keys, sampling_fraction=sampling_fraction, weight_sums=source_sums,
                                by=fractions)
        return fit_loglinear(source, keys, model=model, tol=tol, offset=fr.offset), "original", mats, fr
    if counts.size > EM_MAX_CELLS:
        raise ParameterError(
            f"the keys have {counts.size:,} cells; fitting the model from released counts alone (EM) "
            f"is limited to {EM_MAX_CELLS:,} cells: pass the original file (original=, --original)"
        )
    fr = sampling_fractions(counts, keys, sampling_fraction=sampling_fraction, weight_sums=sums, by=fractions,
                            within=[k for k in keys if k not in perturbed])
    fit = fit_loglinear_misclassified(counts, keys, mats, model=model, tol=tol, offset=fr.offset)
    return fit, "released (EM)", mats, fr


@dataclass(frozen=True, eq=False)
class _Assessment:
    """What both routes (records in memory, a streamed file) compute from the cell counts."""

    result: RiskResult
    population: np.ndarray  # F of every cell: sum of weights, or f / pi
    individual: np.ndarray  # Benedetti-Franconi risk of every cell (NaN when empty)


def _assess(
    counts: np.ndarray, sums: np.ndarray | None, source: np.ndarray | None, source_sums: np.ndarray | None,
    keys: tuple[str, ...], perturbed: tuple[str, ...], manifest: Manifest | None, start: float, *,
    sampling_fraction: float | None, fractions: FractionsBy, model: str | Sequence[Sequence[str]],
    missing: MissingKeys, excluded: int, tol: float, tau_rtol: float | None,
) -> _Assessment:
    """tau1, tau2 and the file-level figures from the cell counts (and weight sums)."""
    fit, fitted_to, mats, fr = fit_model(
        counts, sums, source, source_sums, keys, perturbed, manifest, sampling_fraction=sampling_fraction,
        fractions=fractions, model=model, tol=tol, tau_rtol=tau_rtol)
    risk = cell_risk(fit.fitted, fr.values, mats)
    unique = counts == 1
    occupied = counts > 0
    population = sums if sums is not None else counts / fr.overall
    individual = np.full(counts.shape, np.nan)
    individual[occupied] = individual_risk(counts[occupied], population[occupied]).risk
    assumed = fr.assumed_cells(fit.fitted)
    result = RiskResult(
        keys=keys, n=int(counts.sum()), cells=counts.size, combinations=int(occupied.sum()),
        sample_uniques=int(unique.sum()), sample_doubles=int((counts == 2).sum()) * 2,
        tau1=float(risk.r1[unique].sum()), tau2=float(risk.r2[unique].sum()),
        expected_reidentifications=float(np.dot(counts[occupied], individual[occupied])),
        sampling_fraction=fr.overall, model=fit, perturbed=perturbed, fitted_to=fitted_to, missing=missing,
        excluded=excluded, per_record=None, cell_risk=risk, seconds=time.perf_counter() - start,
        fractions=fr.by, sampling_fraction_range=(fr.lowest, fr.highest), fraction_strata=fr.strata,
        assumed_cells=assumed, sampling_assumption=fr.describe(assumed), sampling_fractions=fr,
    )
    return _Assessment(result, population, individual)


def _file_risk(
    path: str | Path, keys: tuple[str, ...], perturbed: tuple[str, ...], start: float, *,
    sampling_fraction: float | None, weights: Any, fractions: FractionsBy, model: str | Sequence[Sequence[str]],
    manifest: Manifest | None, original: Any, missing: MissingKeys, tol: float, tau_rtol: float | None,
    na_values: Sequence[str], joints: list[Joint],
    sep: str = CSV_SEP, encoding: str = CSV_ENCODING, spark_master: str | None = None, decimal: str = CSV_DECIMAL,
) -> RiskResult:
    """:func:`identification_risk` of a file streamed through :func:`pramkit.counts.count_file` (or aggregated
    by Spark, with ``spark_master``: :func:`pramkit.engine.spark.counts.count_file`): the same figures from
    the cell counts (and weight sums), memory bounded by a chunk and the table; no per-record output."""
    if weights is not None and not isinstance(weights, str):
        raise ParameterError("with a file, weights must name its weight column")
    from pramkit.engine.spark.counts import is_spark_frame

    if original is not None and not (isinstance(original, (str, Path)) or streamed(original)
                                     or (spark_master is not None and is_spark_frame(original))):
        raise ParameterError("with a file (or a polars frame or an Arrow table), original must be a file path, "
                             "a polars frame or an Arrow table too")
    if spark_master is None:
        count: Any = functools.partial(count_file, decimal=decimal)  # weights written with the file's decimal mark
    elif decimal != CSV_DECIMAL and weights is not None:
        raise ParameterError("--decimal , with --weights: the Spark engine reads weights written with a decimal "
                             "point; use --engine local")
    else:
        from pramkit.engine.spark.counts import count_file as spark_count

        count = functools.partial(spark_count, master=spark_master)
    declared = axis_categories(manifest, keys, perturbed, joints)
    table = count(path, keys, categories=declared, weights=weights, missing=missing, na_values=na_values,
                  max_cells=MAX_CELLS, sep=sep, encoding=encoding)
    counts = table.counts.astype(float)
    if counts.sum() == 0:
        raise DataError("every record has a missing key value; use missing='category' to count them")
    source = source_sums = None
    if original is not None:
        source_table = count(original, keys, categories=dict(zip(keys, table.categories)), weights=weights,
                             missing=missing, na_values=na_values, sep=sep, encoding=encoding)
        source, source_sums = source_table.counts.astype(float), source_table.weight_sums
    names = folding(keys, counts.shape, joints)[2]
    folded = fold(counts, keys, joints, outside=outside_reasons(manifest, missing))
    assert folded is not None
    res = _assess(folded, fold(table.weight_sums, keys, joints), fold(source, keys, joints),
                  fold(source_sums, keys, joints), names, perturbed + tuple(j.name for j in joints), manifest, start,
                  sampling_fraction=sampling_fraction, fractions=fractions, model=model, missing=missing,
                  excluded=table.missing, tol=tol, tau_rtol=tau_rtol).result
    return replace(res, keys=keys, perturbed=_perturbed_columns(keys, perturbed, joints))


def _perturbed_columns(keys: tuple[str, ...], singles: tuple[str, ...], joints: list[Joint]) -> tuple[str, ...]:
    """The keys the manifest perturbs (alone or jointly; not the strata), in the keys' order."""
    joint = {c for j in joints for c in j.columns}
    return tuple(k for k in keys if k in singles or k in joint)


def identification_risk(
    data: Any,
    keys: Sequence[str],
    *,
    sampling_fraction: float | None = None,
    weights: str | Sequence[float] | np.ndarray | None = None,
    model: str | Sequence[Sequence[str]] = "2way",
    manifest: Manifest | None = None,
    original: Any = None,
    missing: MissingKeys = "category",
    tol: float = 1e-4,
    fractions: FractionsBy = "cell",
    tau_rtol: float | None = 1e-6,
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    engine: str = "local",
    spark_master: str = SPARK_MASTER,
    spec: Any = None,
    decimal: str = CSV_DECIMAL,
) -> RiskResult:
    """tau1, tau2 (eqs. (4)-(5) of the module docstring) and per-record risks of ``data`` on ``keys``.

    Parameters
    ----------
    data : the records in memory, or the path of a file, which is then streamed (memory
        bounded by a chunk and the key table; ``per_record`` is then ``None``); a polars
        ``LazyFrame`` streams the same way; a polars DataFrame or an Arrow table is read in
        memory, and ``per_record`` is then of its type
    keys : the key variables
    sampling_fraction, weights : exactly one; ``weights`` a column name or one value per record
    model : ``"independence"``, ``"2way"`` (default), a formula ``"a*b + c"`` or a list of margins
    manifest : the release manifest when ``data`` is a released (perturbed) file
    original : with a manifest, the original file the release was made from (same
        records and keys); the model is then fitted to its counts instead of by EM
    missing : ``"category"`` (missing is a key category of its own) or ``"exclude"``
    tol : relative margin tolerance of the fit
    fractions : with weights, ``"cell"`` (default): per-cell sampling fractions
        ``f_k / sum of weights in k`` where the weights determine them
        (:func:`pramkit.risk.fractions.sampling_fractions`); ``"file"``: one
        fraction ``n / sum of weights`` for every cell
    tau_rtol : the fit of the sample counts runs until tau1 and tau2 are within
        this distance of their limits, relative (:class:`pramkit.risk.loglinear.Watch`);
        ``None``: the margin tolerance only (the routes with a manifest use it only)
    na_values : texts that mean missing in a CSV file besides the empty field (default ``("NA",)``)
    sep, encoding : the field separator and character encoding of a CSV file (default ``","``, ``"utf-8"``;
        :func:`pramkit.io.csv_dialect`)
    decimal : the decimal mark of a CSV file's weights, ``"."`` (default) or ``","`` (:func:`pramkit.io.csv_numbers`)
    engine : ``"local"`` (default) or ``"spark"``: the key table and the per-cell weight sums of a CSV or
        Parquet file (or of a Spark DataFrame, which implies it) aggregated by Spark
        (:func:`pramkit.engine.spark.counts.count_file`, master ``spark_master``), the rest as for a file;
        the same figures (weight sums added in another order: equal to about 1e-15 relative)
    spark_master : Spark's master URL
    spec : a :class:`pramkit.release.risk_spec.RiskSpec` giving the settings above (``sampling_fraction`` to
        ``spark_master``) instead of these keywords, checked as ``pramkit risk`` checks them

    Returns
    -------
    RiskResult

    Raises
    ------
    ParameterError
        Both or neither of ``sampling_fraction`` and ``weights``, a fraction
        outside (0, 1], a bad ``tau_rtol``, ``model`` or ``fractions``,
        ``original`` without a manifest that perturbs a key (or of another
        kind than ``data``), or more than :data:`EM_MAX_CELLS` cells for EM.
    DataError
        An invalid key or weight (:func:`pramkit.risk.frequencies.key_table`,
        :func:`pramkit.risk.frequencies.record_weights`), an unreadable file,
        or an original file with another number of records.

    Examples
    --------
    Two regions sampled at 1/10 and 1/40; the weights give each cell its fraction:

    >>> import pandas as pd
    >>> data = pd.DataFrame({"region": [0] * 6 + [1] * 4, "sex": [0, 0, 0, 1, 1, 0, 0, 1, 1, 0],
    ...                      "w": [10.0] * 6 + [40.0] * 4})
    >>> res = identification_risk(data, ["region", "sex"], weights="w", model="independence")
    >>> res.fractions, res.fraction_strata, res.sampling_fraction_range
    ('cell', ('region',), (0.025, 0.1))
    >>> res.sample_uniques, res.per_record["pi"].tolist()[-1]
    (0, 0.025)

    A release is assessed with its manifest; passing the original file fits
    the model to its counts instead of by EM:

    >>> from pramkit import Manifest, PramMatrix, perturb_frame
    >>> original = pd.DataFrame({"sex": list("mfmfmfmfmf"),
    ...                          "age": ["20", "20", "30", "30", "40", "40", "20", "30", "40", "50"]})
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.9, 0.9], ["f", "m"])})
    >>> released = perturb_frame(original, manifest, key=bytes(32)).data
    >>> res = identification_risk(released, ["sex", "age"], sampling_fraction=0.5, manifest=manifest,
    ...                           original=original)
    >>> res.perturbed, res.fitted_to, round(res.tau2, 4)
    (('sex',), 'original', 1.9818)

    The settings may come as one :class:`pramkit.release.risk_spec.RiskSpec` (not both ways):

    >>> from pramkit.release.risk_spec import RiskSpec
    >>> same = identification_risk(released, ["sex", "age"], manifest=manifest, original=original,
    ...                            spec=RiskSpec(sampling_fraction=0.5))
    >>> same.tau2 == res.tau2
    True
    >>> identification_risk(released, ["sex"], spec=RiskSpec(sampling_fraction=0.5), model="independence")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: give the settings as a RiskSpec or as keywords, not both (model)
    """
    if spec is not None:
        given = {"sampling_fraction": sampling_fraction, "weights": weights, "model": model, "missing": missing,
                 "fractions": fractions, "na_values": na_values, "sep": sep, "encoding": encoding, "engine": engine,
                 "spark_master": spark_master, "decimal": decimal}
        only_spec(_IDENTIFICATION_RISK, given, spec)  # its own signature, even where the function is wrapped
        with checked(spec):  # checked first, by the specification's rules: a setting its rule refuses is refused so
            return _risk(data, keys, spec, manifest=manifest, original=original, tol=tol, tau_rtol=tau_rtol)
    made = RiskSettings(sampling_fraction=sampling_fraction, weights=weights, model=model,  # type: ignore[arg-type]
                        missing=missing, fractions=fractions, na_values=na_values, sep=sep,  # type: ignore[arg-type]
                        encoding=encoding, engine=engine, spark_master=spark_master, decimal=decimal)

    def keywords_checked() -> None:
        """The keywords' own rules, in place of RiskSettings.check: each keyword is checked where the door reads
        it, with the message it gives (a weight column given as values, a model as margins: accepted)."""

    with checked(made, by=keywords_checked):
        return _risk(data, keys, made, manifest=manifest, original=original, tol=tol, tau_rtol=tau_rtol)


#: :func:`identification_risk` itself, whose signature holds the keywords' defaults
#: (:func:`pramkit.settings.only_spec`).
_IDENTIFICATION_RISK = identification_risk


def _risk(data: Any, keys: Sequence[str], settings: RiskSettings, *, manifest: Manifest | None, original: Any,
          tol: float, tau_rtol: float | None) -> RiskResult:
    """:func:`identification_risk`'s one door: tau1, tau2 and the per-record risks of ``data`` on ``keys`` by
    ``settings`` (checked: their rules are not run again here), the manifest, the original and the fit's
    tolerances given beside them."""
    sampling_fraction, weights, model = settings.sampling_fraction, settings.weights, settings.model
    missing, fractions = cast(MissingKeys, settings.missing), cast(FractionsBy, settings.fractions)
    na_values, sep, encoding, decimal = settings.na_values, settings.sep, settings.encoding, settings.decimal
    engine, spark_master = settings.engine, settings.spark_master
    start = time.perf_counter()
    if tau_rtol is not None and not (math.isfinite(tau_rtol) and tau_rtol > 0):
        raise ParameterError(f"tau_rtol must be a positive number or None, got {tau_rtol!r}")
    keys = tuple(keys)
    singles, joints = perturbation(manifest, keys)
    from pramkit.engine.spark.counts import is_spark_frame

    on_spark = engine_name(engine) == "spark" or is_spark_frame(data)
    if on_spark or isinstance(data, (str, Path)) or frame_kind(data) == "polars-lazy":  # a LazyFrame streams
        return _file_risk(data, keys, singles, start, sampling_fraction=sampling_fraction, weights=weights,
                          fractions=fractions, model=model, manifest=manifest, original=original,
                          missing=missing, tol=tol, tau_rtol=tau_rtol, na_values=na_values, joints=joints,
                          sep=sep, encoding=encoding, spark_master=spark_master if on_spark else None,
                          decimal=decimal)
    categories = None
    declared = axis_categories(manifest, keys, singles, joints)
    if declared:
        found = key_categories(data, keys, missing=missing)
        categories = [declared.get(k, found[i]) for i, k in enumerate(keys)]
    table = key_table(data, keys, missing=missing, categories=categories)
    names = folding(keys, table.shape, joints)[2]
    check_cells(names, folded_shape(keys, table.shape, joints))  # before any table is made
    w_all = None if weights is None else record_weights(data, weights)
    cell = table.cell_index() if not joints else folded_cells(table.codes[table.included], table.shape, keys, joints)
    counted = table.count(weights=w_all)
    counts = fold(counted.counts.astype(float), keys, joints, outside=outside_reasons(manifest, missing))
    sums = fold(counted.weight_sums, keys, joints)
    assert counts is not None
    source = source_sums = None
    if original is not None:
        if frame_kind(original) not in ("pandas", "polars", "arrow"):
            raise ParameterError("with data in memory, original must be a DataFrame (or an Arrow table) too")
        otable = key_table(original, keys, missing=missing, categories=table.categories)
        ocounted = otable.count(weights=None if weights is None else record_weights(original, weights))
        source = fold(ocounted.counts.astype(float), keys, joints)
        source_sums = fold(ocounted.weight_sums, keys, joints)
    done = _assess(counts, sums, source, source_sums, names, singles + tuple(j.name for j in joints), manifest,
                   start, sampling_fraction=sampling_fraction, fractions=fractions, model=model,
                   missing=table.missing, excluded=len(table.included) - table.n, tol=tol, tau_rtol=tau_rtol)
    res = replace(done.result, keys=keys, perturbed=_perturbed_columns(keys, singles, joints))
    unique = counts.ravel() == 1
    columns = {
        "f": (counts.ravel().astype(np.int64), 0),
        "F": (done.population.ravel(), np.nan),
        "r1": (np.where(unique, res.cell_risk.r1.ravel(), np.nan), np.nan),
        "r2": (np.where(unique, res.cell_risk.r2.ravel(), np.nan), np.nan),
        "individual_risk": (done.individual.ravel(), np.nan),
    }
    per_record = {}
    for name, (per_cell, empty) in columns.items():
        values = np.full(len(table.included), empty, dtype=per_cell.dtype)
        values[table.included] = per_cell[cell]
        per_record[name] = values
    pi = np.full(len(table.included), np.nan)
    assert res.sampling_fractions is not None  # set by every route of identification_risk
    pi[table.included] = res.sampling_fractions.at(cell, counts.shape)
    per_record["pi"] = pi
    return replace(res, per_record=records_like(per_record, data), seconds=time.perf_counter() - start)


@dataclass(frozen=True)
class IndependenceRisk:
    """tau1, tau2 and the expected re-identifications under the independence model, from the occupied cells.

    Parameters
    ----------
    n : int
        Records counted.
    cells : int
        Cells of the full key table (never made).
    combinations : int
        Occupied cells.
    sample_uniques : int
        Records whose key combination occurs once.
    tau1, tau2, expected_reidentifications : float
        As :class:`RiskResult`.
    """

    n: int
    cells: int
    combinations: int
    sample_uniques: int
    tau1: float
    tau2: float
    expected_reidentifications: float


def independence_risk(data: Any, keys: Sequence[str], *, sampling_fraction: float,
                      missing: MissingKeys = "category") -> IndependenceRisk:
    """:func:`identification_risk` with ``model="independence"`` and one sampling fraction, without the table.

    Under independence with one sampling fraction the fit is closed:
    ``mu_j = n prod_v f_v(j_v) / n`` (the product of the observed one-way margins,
    Bishop, Fienberg and Holland 1975, sec. 3.4), so eqs. (4)-(5) and the per-record
    risks need the occupied cells only: memory grows with the records, not with the
    product of the keys' categories, and any number of keys can be assessed.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records.
    keys : sequence of str
        The key variables.
    sampling_fraction : float
        The sampling fraction in (0, 1].
    missing : {"category", "exclude"}
        As :func:`identification_risk`.

    Returns
    -------
    IndependenceRisk

    Raises
    ------
    ParameterError
        A fraction outside (0, 1].
    DataError
        As :func:`pramkit.risk.frequencies.key_table`.

    Examples
    --------
    The same figures as the fitted model:

    >>> import pandas as pd
    >>> data = pd.DataFrame({"sex": list("mfmfmfmfmf"), "age": list("2233442345")})
    >>> sparse = independence_risk(data, ["sex", "age"], sampling_fraction=0.5)
    >>> fitted = identification_risk(data, ["sex", "age"], sampling_fraction=0.5, model="independence", tol=1e-12)
    >>> sparse.sample_uniques, round(sparse.tau2, 6) == round(fitted.tau2, 6)
    (4, True)
    """
    from pramkit.validate import check_fraction

    pi = check_fraction(sampling_fraction)
    table = key_table(data, keys, missing=missing)
    codes = table.codes[table.included]
    n = len(codes)
    log_mu = np.full(n, math.log(n))
    for axis in range(codes.shape[1]):
        margin = np.bincount(codes[:, axis], minlength=len(table.categories[axis]))
        log_mu += np.log(margin[codes[:, axis]] / n)
    _, first, f = np.unique(codes, axis=0, return_index=True, return_counts=True)
    mu = np.exp(log_mu[first])
    risk = cell_risk(mu, pi, [None])
    unique = f == 1
    individual = individual_risk(f.astype(float), f / pi).risk
    return IndependenceRisk(
        n=n, cells=table.cells, combinations=len(f), sample_uniques=int(unique.sum()),
        tau1=float(risk.r1[unique].sum()), tau2=float(risk.r2[unique].sum()),
        expected_reidentifications=float(np.dot(f, individual)))
