"""The specification of an estimate: every setting of ``pramkit estimate`` declared once.

:class:`EstimateSpec` holds the settings of :func:`pramkit.estimate_table` besides the data,
the manifest and the variables: the estimator, the variance, the confidence level, how a CSV
file is read and the survey design (weights, strata, PSUs, replicate weights).  Each setting
is declared by :func:`pramkit.settings.setting` with its type, its rule, its help text and
its flag; the ``pramkit estimate`` command's flags are made from it, and
:meth:`EstimateSpec.check` refuses what the command line refuses, with the same message.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pramkit.errors import ParameterError
from pramkit.estimate.covariance import check_variance_kind
from pramkit.estimate.estimators import ESTIMATORS, estimator_name
from pramkit.settings import (
    check_rules,
    comma_numbers,
    decimal_setting,
    encoding_setting,
    engine_setting,
    is_checked,
    na_values_setting,
    sep_setting,
    setting,
    spark_master_setting,
)
from pramkit.validate import OPEN_PROBABILITY, Checked, Choice, Instance, decimal_mark

#: The groups of ``pramkit estimate --help``.
GROUPS = {"survey": "survey files (see docs/estimation.md): weighted totals, the design's variance and PRAM's "
                    "together"}
#: How the replicate weights were made (:data:`pramkit.estimate.survey.REPLICATE_METHODS`).
REPLICATE_METHODS = ("jk1", "jkn", "brr", "fay", "sdr", "bootstrap")


def check_confidence(value: Any, name: str = "confidence") -> None:
    """The level of the intervals: a number strictly between 0 and 1.

    Examples
    --------
    >>> check_confidence(0.9)
    >>> check_confidence(1.5)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: confidence must be a number strictly between 0 and 1, got 1.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise ParameterError(f"{name} must be a number strictly between 0 and 1, got {value!r}")


def check_decimal(decimal: str, sep: str | None = None, *, weighted: bool = False, engine: str = "local") -> None:
    """The decimal mark of a weighted estimate's numbers: ``"."`` or ``","`` (not ``","`` in a comma-separated file,
    :func:`pramkit.validate.decimal_mark`); weights written with a decimal comma are read on this machine only
    (the Spark engine reads numbers written with a point): refused in one line.

    Examples
    --------
    >>> check_decimal(",", ";", weighted=True)
    >>> check_decimal(",", ";", weighted=True, engine="spark")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --decimal , with --weights: the Spark engine reads weights written with a decimal point; use --engine local
    """
    if decimal_mark(decimal, sep) != "." and weighted and engine != "local":
        raise ParameterError("--decimal , with --weights: the Spark engine reads weights written with a decimal "
                             "point; use --engine local")


def _columns(what: str = "column names, comma-separated") -> Instance:
    return Instance((str,), what)


@dataclass(frozen=True)
class EstimateSpec:
    """Every setting of ``pramkit estimate RELEASED --manifest M --vars ...`` but the files and columns.

    Examples
    --------
    >>> EstimateSpec(estimator="mle", confidence=0.9).keywords("released.csv")["estimator"]
    'mle'
    >>> EstimateSpec(variance="bogus").check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: variance must be one of ['multinomial', 'pram'], not 'bogus'
    >>> EstimateSpec(strata="s").check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --strata needs --weights (the sampling weights)
    """

    method: str | None = setting(
        None, str, Choice(("moment", "mle")), "moment: unbiased (M^T)^-1 lambda (default); mle: maximum likelihood "
        "by EM (the same as --estimator unbiased|mle)", metavar="{moment,mle}")
    estimator: str | None = setting(
        None, str, Checked(lambda value, name: estimator_name(value), "one of " + ", ".join(ESTIMATORS), "bogus"),
        "; ".join(f"{name}: {text}" for name, text in ESTIMATORS.items()) + " (default unbiased)",
        metavar="{" + ",".join(ESTIMATORS) + "}")
    variance: str = setting(
        "multinomial", str, Checked(lambda value, name: check_variance_kind(value), "'multinomial' or 'pram'",
                                    "bogus"),
        "multinomial: inference on the population sampled (default); pram: on the original file itself (PRAM the "
        "only randomness)", metavar="{multinomial,pram}")
    confidence: float = setting(0.95, float, Checked(check_confidence, "a number strictly between 0 and 1", 1.5),
                                "level of the intervals (default 0.95)", label="Confidence level")
    weights: str | None = setting(
        None, str, _columns("a column name"), "sampling weight column: weighted totals and proportions, with "
        "design-based standard errors (records as PSUs unless --psu)", metavar="COL", group="survey",
        label="Weight column")
    strata: str | None = setting(None, str, _columns("a column name"), "stratum column (with --weights)",
                                 metavar="COL", group="survey", label="Stratum column")
    psu: str | None = setting(None, str, _columns("a column name"), "primary sampling unit (cluster) column, "
                              "nested in the strata", metavar="COL", group="survey", label="PSU column")
    fpc: str | None = setting(None, str, _columns("a column name"), "finite-population correction: each stratum's "
                              "sampling fraction in [0, 1) or its population count of PSUs", metavar="COL",
                              group="survey", label="Finite-population correction column")
    single_psu: str = setting(
        "error", str, Choice(("error", "certainty", "center")), "a stratum with one PSU: an error (default), no "
        "variance of its own, or centred on the mean of all PSUs", group="survey")
    replicate_weights: str | None = setting(
        None, str, _columns(), "replicate weight columns: a prefix (PWGTP for PWGTP1..PWGTP80) or comma-separated "
        "names; the variance from the replicates instead of linearisation", metavar="PREFIX|COLS", group="survey")
    replicate_method: str | None = setting(
        None, str, Choice(REPLICATE_METHODS), "how the replicates were made (needed with --replicate-weights; ACS "
        "files: sdr)", group="survey")
    fay_rho: float | None = setting(None, float, OPEN_PROBABILITY, "Fay's coefficient (--replicate-method fay)",
                                    metavar="RHO", group="survey", noun="rho (the Fay coefficient)")
    replicate_scales: str | None = setting(
        None, str, _columns("numbers, comma-separated"), "--replicate-method jkn: each replicate's scale, "
        "(n_h - 1) / n_h of its stratum, comma-separated", metavar="S,...", group="survey")
    na_values: tuple[str, ...] = na_values_setting()
    sep: str = sep_setting()
    encoding: str = encoding_setting()
    decimal: str = decimal_setting()
    engine: str = engine_setting("the counts and the weighted sums by stratum and PSU aggregated by "
                                 "Spark (CSV or Parquet), the same estimates")
    spark_master: str = spark_master_setting()

    def check(self) -> None:
        """Refuse a setting its rule refuses, or survey settings that do not go together; no data read.

        Raises
        ------
        ParameterError
            One line naming the setting.

        Examples
        --------
        >>> EstimateSpec(weights="w", fay_rho=0.5).check()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --fay-rho goes with --replicate-method fay
        """
        if is_checked(self):  # inside a block of checked(self): checked on the way in (pramkit.estimate_table)
            return
        check_rules(self)
        given = [f for f, v in (("--strata", self.strata), ("--psu", self.psu), ("--fpc", self.fpc),
                                ("--replicate-weights", self.replicate_weights)) if v]
        if self.weights is None and given:
            raise ParameterError(f"{given[0]} needs --weights (the sampling weights)")
        if self.weights is not None and (self.replicate_weights is None) != (self.replicate_method is None):
            raise ParameterError("give --replicate-weights and --replicate-method together")
        if self.fay_rho is not None and self.replicate_method != "fay":
            raise ParameterError("--fay-rho goes with --replicate-method fay")
        check_variance_kind(self.variance, weighted=self.weights is not None)
        check_decimal(self.decimal, self.sep, weighted=self.weights is not None, engine=self.engine)

    def keywords(self, data: Any) -> dict[str, Any]:
        """The keywords of :func:`pramkit.estimate_table` for the released ``data`` (checked first): the survey
        design and replicate weights built from the settings (the replicates' columns named by ``data``'s header).

        Examples
        --------
        >>> sorted(EstimateSpec(weights="w").keywords("released.csv"))  # doctest: +NORMALIZE_WHITESPACE
        ['confidence', 'decimal', 'encoding', 'engine', 'estimator', 'method', 'na_values', 'replicates',
         'sep', 'spark_master', 'survey', 'variance']
        """
        from pramkit.estimate.survey import SurveyDesign

        self.check()
        out: dict[str, Any] = {"method": self.method, "variance": self.variance, "confidence": self.confidence,
                               "estimator": self.estimator, "na_values": self.na_values, "sep": self.sep,
                               "encoding": self.encoding, "decimal": self.decimal, "engine": self.engine,
                               "spark_master": self.spark_master}
        if self.weights is None:
            return out
        survey = SurveyDesign(self.weights, strata=self.strata, psu=self.psu, fpc=self.fpc,
                              single_psu=self.single_psu)  # type: ignore[arg-type]  # checked by its rule
        return {**out, "survey": survey, "replicates": self._replicates(data)}

    def _replicates(self, data: Any) -> Any:
        """The replicate weights (``None`` without ``--replicate-weights``), named in ``data``'s header."""
        if self.replicate_weights is None:
            return None
        from pramkit.estimate.weighted import Replicates

        scales = None if self.replicate_scales is None else comma_numbers(self.replicate_scales,
                                                                          "--replicate-scales")
        return Replicates.of(self.replicate_weights, _header(data, self.sep, self.encoding),
                             self.replicate_method,  # type: ignore[arg-type]  # checked by its rule
                             rho=self.fay_rho, rscales=scales)


def _header(data: Any, sep: str, encoding: str) -> list[str]:
    """The column names of the released data (a file's first batch, or a frame's columns)."""
    if isinstance(data, (str, Path)):
        from pramkit.io import iter_batches

        return list(iter_batches(data, sep=sep, encoding=encoding)[0].columns)
    columns = getattr(data, "columns", None)
    if columns is None:
        columns = getattr(data, "column_names", [])
    return [str(c) for c in columns]
