"""The design workflow, stage by stage: plan, count, frequencies, allocate, build, assemble.

:func:`design_planned` runs the stages on a :class:`pramkit.release.plan.ReleasePlan`
and returns a :class:`pramkit.release.record.Release` (the public manifest, the private
design record); :func:`design_release` plans and designs in one call and returns the
manifest.  Each stage is a plain function of the previous stages' results, in a module
of its own (:mod:`pramkit.release`).
"""

from __future__ import annotations

import dataclasses
import inspect
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

from pramkit.errors import ParameterError
from pramkit.manifest import Manifest
from pramkit.release.allocate import allocate
from pramkit.release.assemble import assemble
from pramkit.release.build import build_matrices
from pramkit.release.count import count_release
from pramkit.release.frequencies import design_frequencies
from pramkit.release.plan import PlanSettings, ReleasePlan, plan_release
from pramkit.release.record import Release
from pramkit.source import Source
from pramkit.validate import SPARK_MASTER

if TYPE_CHECKING:
    from pramkit.kernel.rng import SecretKey


def design_planned(data: Any, plan: ReleasePlan, *, rng: random.Random | None = None,
                   key: SecretKey | None = None, quiet: bool = True, engine: str = "local",
                   spark_master: str = SPARK_MASTER, compare: bool = True) -> Release:
    """Design a planned release: its manifest and its private design record.

    Parameters
    ----------
    data : Source, str, Path, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The original data (a file, a polars frame or an Arrow table is streamed: :mod:`pramkit.frames`),
        opened once (:meth:`pramkit.source.Source.open`); a source is used as it is.
    plan : ReleasePlan
        From :func:`pramkit.plan_release` (every parameter already checked).
    rng : random.Random, optional
        Randomness of the DP counts (default: the operating system's CSPRNG; pass a seeded
        generator only for reproducible examples and tests).
    key : pramkit.kernel.rng.SecretKey, optional
        Draw the DP counts' noise from the secret key (each histogram's from a stream of its own,
        :func:`pramkit.release.frequencies.dp_frequencies`): the same key and data design the same
        release again.  Not with ``rng``.
    quiet : bool
        No progress bars.
    engine : {"local", "spark"}
        Where the data is counted (:func:`pramkit.release.count.count_release`): ``"spark"`` aggregates
        a CSV or Parquet file with Spark (master ``spark_master``); the same counts, the same design.
    spark_master : str
        Spark's master URL.
    compare : bool
        Record a joint design against the best independent split at the same budget
        (:func:`pramkit.release.assemble.assemble`); ``False`` for a preview (the same manifest).

    Returns
    -------
    Release
        ``manifest`` (public) and ``record`` (private: :class:`pramkit.release.record.DesignRecord`).

    Raises
    ------
    DataError
        The data cannot be read, a variable has fewer than two categories, a record
        breaks an edit rule (``rule_breaking="error"``), or a household variable varies
        within a household.
    ParameterError
        The data does not fit the plan (distances, kept codes, rules), or the design
        exceeds the record budget, or the optimal split funds no variable.

    Examples
    --------
    >>> import pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> plan = pramkit.plan_release(["age", "sex"], epsilon=2.0, categories=CENSUS_VARIABLES)
    >>> manifest, record = design_planned(census(20_000), plan, rng=random.Random(1))
    >>> manifest.record_epsilon <= 2.0, record.rows, "counts" in record.variables["age"]
    (True, 20000, True)
    """
    if rng is not None and key is not None:
        raise ParameterError("give the design step's randomness once: rng or key, not both")
    t0 = time.perf_counter()
    source = Source.open(data, **plan.reading)  # opened once: every stage asks it, none reads the data again
    counted = count_release(source, plan, quiet=quiet, engine=engine, spark_master=spark_master)
    freqs = design_frequencies(plan, counted, rng=rng, key=key)
    allocation = allocate(plan, counted, freqs)
    built = build_matrices(plan, counted, freqs, allocation, quiet=quiet)
    release = assemble(plan, counted, freqs, allocation, built, time.perf_counter() - t0, compare=compare)
    from pramkit.io_stat import name_missing_codes  # a Stata, SPSS or SAS file's missing codes, named

    return dataclasses.replace(release, manifest=name_missing_codes(release.manifest, source.data))


def design_release(data: Any, variables: str | Sequence[str], *, rng: random.Random | None = None,
                   quiet: bool = True, **settings: Unpack[PlanSettings]) -> Manifest:
    """Design the PRAM matrices of a release under one record budget; return the public manifest.

    ``design_planned(data, plan_release(variables, **settings), rng=rng, quiet=quiet).manifest``:
    the private design record is the ``record`` of :func:`design_planned`.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The original data (a file, a polars frame or an Arrow table is streamed: :mod:`pramkit.frames`).
    variables : str or sequence of str
        The columns to perturb.
    rng : random.Random, optional
        Randomness of the DP counts (default: the operating system's CSPRNG).
    quiet : bool
        No progress bars.
    **settings
        The plan's keywords (:func:`pramkit.plan_release` documents each): ``epsilon`` (the
        record's total budget, design step included), ``method``, ``split``,
        ``epsilon_per_variable``, ``design_epsilon``, ``prior``, ``categories``,
        ``exact_frequencies``, ``options``, ``distances``, ``na_values``, ``forbid``,
        ``strata``, ``keep_codes``, ``household``, ``household_vars``, ``rule_breaking``, ``missing``,
        ``weights``, ``sep``, ``encoding`` (typed by :class:`pramkit.release.plan.PlanSettings`: a type
        checker refuses a misspelt one).

    Returns
    -------
    Manifest
        The public manifest.

    Raises
    ------
    ParameterError
        A setting is unknown, malformed or inconsistent with another, or the design exceeds
        the record budget.
    DataError
        As :func:`design_planned`.

    Examples
    --------
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> data = census(20_000)
    >>> m = design_release(data, ["age", "sex"], epsilon=2.0, categories=CENSUS_VARIABLES,
    ...                    rng=random.Random(1))
    >>> m.record_epsilon <= 2.0, m.ledger.frequencies, m.ledger.covers_everything
    (True, 'dp_counts', True)
    >>> design_release(data, ["age"], epsilon=2.0, budget=1.0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: design_release does not take budget; its settings are those of plan_release: epsilon, method, split, epsilon_per_variable, design_epsilon, prior, categories, exact_frequencies, options, distances, na_values, forbid, strata, keep_codes, household, household_vars, rule_breaking, missing, weights, sep, encoding
    """
    return design_planned(data, plan_release(variables, **_settings(dict(settings))), rng=rng, quiet=quiet).manifest


def _settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings, checked to be keywords of :func:`plan_release` (one line naming them, not a TypeError)."""
    known = [n for n, p in inspect.signature(plan_release).parameters.items() if p.kind is p.KEYWORD_ONLY]
    unknown = [n for n in settings if n not in known]
    if unknown:
        raise ParameterError(f"design_release does not take {', '.join(unknown)}; its settings are those of "
                             f"plan_release: {', '.join(known)}")
    return settings
