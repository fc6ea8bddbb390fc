"""The specification of a risk assessment: every setting of ``pramkit risk`` declared once.

:class:`RiskSpec` holds the settings of ``pramkit risk`` besides the file, its key variables and the
files it reads or writes (``--manifest``, ``--original``, ``--plot``): the sampling fraction or the
weights, the model, the household id, the missing keys, the SUDA and contribution modes and their
limits, the records and cells below k and the l-diversity (:mod:`pramkit.risk.kanonymity`), how a CSV
file is read and the engine.  Each setting is declared by
:func:`pramkit.settings.setting` with its type, its rule, its help text and its flag; the command's
flags are made from it and :meth:`RiskSpec.check` refuses what the command line refuses, with the
same message, before any file is read.  :func:`pramkit.risk.identification.identification_risk`
takes one as ``spec=``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from pramkit.defaults import CONTRIBUTION_REPLICATES
from pramkit.errors import ParameterError
from pramkit.settings import DataSettings, check_rules, engine_setting, setting
from pramkit.validate import Checked, Choice, Flag, Instance, Number

#: The model of the key table when none is given.
MODEL = "2way"
#: How the weights give the sampling fractions when not said.
FRACTIONS = "cell"


def _fraction(value: Any, name: str) -> None:
    from pramkit.validate import check_fraction

    check_fraction(value)


def max_steps(value: Any, name: str = "--max-steps") -> None:
    """``--max-steps``: a positive finite number (the most steps the SUDA search may take).

    Examples
    --------
    >>> max_steps(2e10)
    >>> max_steps(0.0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --max-steps must be a positive number, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and float(value) > 0):
        shown = f"{value:g}" if isinstance(value, numbers.Real) else repr(value)
        raise ParameterError(f"--max-steps must be a positive number, got {shown}")


def _column(what: str = "a column name") -> Instance:
    return Instance((str,), what)


@dataclass(frozen=True)
class RiskSpec(DataSettings):
    """Every setting of ``pramkit risk DATA --keys ...`` but the key variables and the files.

    Examples
    --------
    >>> RiskSpec(sampling_fraction=0.05).check()
    >>> RiskSpec(sampling_fraction=1.5).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the sampling fraction must lie in (0, 1], got 1.5
    >>> RiskSpec(suda=True, engine="spark").check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --engine spark counts the key table of tau1, tau2 and the per-record risk; --suda, --contributions, --household, --k-anonymity and --l-diversity read records on this machine: use --engine local
    """

    sampling_fraction: float | None = setting(None, float, Checked(_fraction, "a number in (0, 1]", 1.5),
                                              "the sampling fraction pi in (0, 1]", label="Sampling fraction")
    weights: str | None = setting(None, str, _column(), "survey weight column (per-cell pi = f / sum of weights, "
                                  "see --fractions)", label="Weights")
    fractions: str = setting(
        FRACTIONS, str, Choice(("cell", "file")), "with --weights: per-cell sampling fractions where the weights "
        "determine them (default) or one fraction n / sum of weights for every cell", parse_choices=True)
    model: str = setting(MODEL, str, _column("a model: independence, 2way or a formula"),
                         "independence, 2way (default) or a formula such as 'a*b + c'")
    household: str | None = setting(
        None, str, _column(), "household id column: report the household-level risk 1 - prod(1 - r) over the "
        "members' per-record risks r, as sdcMicro's hierarchical risk; with --manifest, the risks after PRAM (not "
        "with --original, --model, --fractions or --plot)", metavar="COL", label="Household id")
    missing: str = setting("category", str, Choice(("category", "exclude")), "missing key values: a category of "
                           "their own (default) or records excluded", parse_choices=True, label="Missing keys")
    suda: bool = setting(False, bool, Flag(), "the SUDA2 special uniques instead: minimal sample uniques, SUDA "
                         "scores (Elliot's weights), DIS-SUDA with --sampling-fraction, and the variables' and levels' "
                         "contributions", label="SUDA")
    contributions: bool = setting(
        False, bool, Flag(), "what each key variable and level contributes to SUDA, tau1, tau2 and the individual "
        "risk (left out, merged); with --manifest and --original, before and after PRAM and the share of the "
        "record epsilon each variable spends")
    max_size: int | None = setting(None, int, None, "with --suda or --contributions: the largest MSU size "
                                   "(default: the number of keys)", label="Largest MSU size")
    max_steps: float | None = setting(
        None, float, Checked(max_steps, "a positive number", 0.0), "with --suda or --contributions: the most "
        "steps the SUDA search may take, estimated before it starts (default 2e10); a larger estimate is refused "
        "with the figure", label="Most SUDA steps")
    replicates: int = setting(
        CONTRIBUTION_REPLICATES, int, None, "with --contributions and --manifest: perturbations drawn to estimate "
        "the expected SUDA contributions when they cannot be enumerated exactly "
        f"(default {CONTRIBUTION_REPLICATES})")
    k_anonymity: int | None = setting(
        None, int, Number(int, low=2), "the records and cells below k instead: the records whose combination of the "
        "keys fewer than K records share (sdcMicro's kAnon_violations; with --weights also by the weighted "
        "frequency), and the cells of every table of 1 to --max-dim keys counted fewer than K times (sdcMicro's "
        "riskyCells, its threshold K - 1)", metavar="K", noun="--k-anonymity", label="k-anonymity")
    max_dim: int | None = setting(None, int, Number(int, low=1), "with --k-anonymity: the most keys in a table of "
                                  "cells (default: all the keys)", metavar="D", noun="--max-dim",
                                  label="Largest table of cells")
    l_diversity: str | None = setting(
        None, str, _column("comma-separated column names"), "the l-diversity of these sensitive variables "
        "(comma-separated, none a key) within the classes of the keys: the distinct and the entropy l of every "
        "class, the smallest, and the records in classes below --l (sdcMicro's ldiversity)", metavar="S,...",
        noun="--l-diversity", label="Sensitive variables")
    l_threshold: int = setting(2, int, Number(int, low=2), "with --l-diversity: count the records in classes with "
                               "fewer than L distinct sensitive values (default 2)", flag="--l", metavar="L",
                               noun="--l", label="l")
    missing_rule: str = setting(
        "own", str, Choice(("own", "any")), "with --k-anonymity or --l-diversity: a missing key value is a value "
        "of its own (default) or matches any value (sdcMicro's rule, as pramkit suppress --missing any)",
        parse_choices=True, label="Missing key rule")
    engine: str = engine_setting("the key table and weight sums aggregated by Spark (CSV or Parquet), "
                                 "the same figures")

    def check(self) -> None:
        """Refuse a setting its rule refuses, or a mode the engine does not run (one line); no file read."""
        check_rules(self)
        if self.engine != "local" and (self.suda or self.contributions or self.household is not None
                                       or self.k_anonymity is not None or self.l_diversity is not None):
            raise ParameterError("--engine spark counts the key table of tau1, tau2 and the per-record risk; "
                                 "--suda, --contributions, --household, --k-anonymity and --l-diversity read records "
                                 "on this machine: use --engine local")

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.risk.identification.identification_risk` these settings give (checked).

        Examples
        --------
        >>> RiskSpec(weights="w", fractions="file").keywords()["fractions"]
        'file'
        """
        self.check()
        return {"sampling_fraction": self.sampling_fraction, "weights": self.weights, "model": self.model,
                "missing": self.missing, "fractions": self.fractions, "na_values": self.na_values, "sep": self.sep,
                "encoding": self.encoding, "decimal": self.decimal, "engine": self.engine,
                "spark_master": self.spark_master}


__all__ = ["FRACTIONS", "MODEL", "RiskSpec", "max_steps"]
