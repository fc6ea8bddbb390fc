"""Stage 2 of the design workflow: count the data over each target's cells.

:func:`count_release` reads the data once (a file is streamed; a DataFrame or an
Arrow table in memory), counts the strata and the variables over their categories
(declared by a codebook, from a public prior, from a Stata or SPSS file's value
labels, or read from the data: then the ledger says so), and lays out the targets
the design makes (:func:`pramkit.release.targets.plan_targets`).  It counts the
table of each target's columns only (:func:`pramkit.release.targets.target_groups`:
a variable's margin, with the strata if any; every variable's joint table for a
joint split), in one pass: memory is the sum of those tables' cells, so a file of
fifty variables designed one by one takes fifty margins, not their product.
Everything it returns is private: exact counts of the original file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pramkit.counts import CountTable, CountTables, count_groups
from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label
from pramkit.public_inputs import Prior
from pramkit.release.plan import ReleasePlan
from pramkit.release.targets import (
    Target,
    check_breaking,
    household_table,
    plan_targets,
    target_groups,
    unpaired_notes,
)
from pramkit.validate import SPARK_MASTER, engine_name


@dataclass(frozen=True)
class Counted:
    """The data counted for a plan (private: exact counts).

    Parameters
    ----------
    table : CountTables
        Counts of the strata and the variables (missing as the category ``None``): the table of each
        target's columns (:func:`pramkit.release.targets.target_groups`), counted in one pass; its
        ``rows``, ``complete_rows`` (records with every column), columns, categories and margins.
    described : str
        What was read (a file path, or "a DataFrame in memory").
    digest : str or None
        The file's SHA-256 (``None`` in memory).
    sources : mapping of str to str
        Where each counted column's categories came from: ``declared``, ``prior`` or ``data``.
    ordered : mapping of str to bool
        Whether each variable's categories have a declared order.
    households : CountTable or None
        Counts of the household variables over households.
    targets : mapping of str to Target
        The matrices to design.
    notes : tuple of str
        What the holder should know (value labels used, records kept that break a rule).
    """

    table: CountTables
    described: str
    digest: str | None
    sources: Mapping[str, str]
    ordered: Mapping[str, bool]
    households: CountTable | None
    targets: Mapping[str, Target]
    notes: tuple[str, ...] = ()


def _require_weights(data: Any, weights: Sequence[str]) -> None:
    """The sampling weight columns the ledger will name are in the data."""
    if not weights:
        return
    if isinstance(data, (str, Path)):
        from pramkit.io import iter_batches

        present = iter_batches(data)[0].columns
    else:
        from pramkit.frames import frame_columns

        present = frame_columns(data)
    absent = [c for c in weights if c not in present]
    if absent:
        raise DataError(f"weight column(s) {absent} are not in the data; its columns are {list(present)}")


def count_release(data: Any, plan: ReleasePlan, *, quiet: bool = True, engine: str = "local",
                  spark_master: str = SPARK_MASTER) -> Counted:
    """Count the data for a plan and lay out its targets.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The original data (a file, a polars frame or an Arrow table is streamed).
    plan : ReleasePlan
        From :func:`pramkit.release.plan.plan_release`.
    quiet : bool
        No progress bar.
    engine : {"local", "spark"}
        Where the tables are counted: ``"spark"`` aggregates a CSV or Parquet file with Spark
        (:func:`pramkit.engine.spark.counts.count_groups`, master ``spark_master``), the same tables;
        the households' table, the edit rules' check and value labels still read the file here.
    spark_master : str
        Spark's master URL.

    Returns
    -------
    Counted

    Raises
    ------
    DataError
        The data cannot be read, a variable has fewer than two categories, a record breaks
        an edit rule (``rule_breaking="error"``), or a household variable varies within a household.
    ParameterError
        ``data`` is of another type, or a kept code or rule names an unknown category.

    Examples
    --------
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.plan import plan_release
    >>> c = count_release(census(500), plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES))
    >>> c.table.rows, c.sources, list(c.targets), int(c.targets["sex"].counts.sum())
    (500, {'sex': 'declared'}, ['sex'], 500)

    Each variable of an equal split is counted over its own categories, never their product:

    >>> names = list(CENSUS_VARIABLES)
    >>> c = count_release(census(500), plan_release(names, epsilon=10.0, categories=CENSUS_VARIABLES))
    >>> c.table.cells == sum(len(CENSUS_VARIABLES[n]) + 1 for n in names)  # each with missing, None
    True
    """
    declared, sources = _declared(plan.counted, plan.categories, plan.prior)
    _require_weights(data, plan.weights)
    groups = target_groups(plan.names, plan.split, plan.shape)
    reading = plan.reading if engine_name(engine) == "local" else {**plan.reading, "master": spark_master}
    table, described, digest = _count(data, list(plan.counted), groups, declared, quiet, reading)
    table, sources, notes = _labelled(data, table, sources)
    _require_two(table, plan.names)
    households = household_table(data, plan.shape, table, **plan.reading) if plan.shape.household else None
    targets = plan_targets(list(plan.names), plan.split, plan.shape, table, households, plan.missing)
    notes += check_breaking(data, plan.shape, targets, **plan.reading)
    notes += unpaired_notes(targets, plan.shape.rules)
    return Counted(table, described, digest, sources, _ordered(data, targets, sources), households, targets,
                   notes)


def _declared(names: Sequence[str], categories: Mapping[str, Sequence[Label]] | None,
              prior: Prior | None) -> tuple[dict[str, tuple[Label, ...]], dict[str, str]]:
    """Each column's declared categories and where they came from."""
    declared: dict[str, tuple[Label, ...]] = {}
    source: dict[str, str] = {}
    for n in names:
        if categories is not None and n in categories:
            declared[n], source[n] = tuple(categories[n]), "declared"
        elif prior is not None and n in prior.distributions:
            declared[n], source[n] = prior.categories(n), "prior"
        else:
            source[n] = "data"
    return declared, source


def _count(data: Any, names: list[str], groups: Sequence[Sequence[str]], categories: Mapping[str, Sequence[Label]],
           quiet: bool, reading: Mapping[str, Any]) -> tuple[CountTables, str, str | None]:
    """Count the groups of columns (every one of ``names`` in one at least), missing values as a
    category ``None`` of each (so that a record missing one variable still counts in the others'
    designs); returns the tables, a description of the data and its digest.  ``reading``: how a
    file is read (``na_values``, ``sep``, ``encoding``)."""
    from pramkit.codebook import categories_of
    from pramkit.frames import describe, streamed
    from pramkit.io import sha256_of

    with_missing = {c: (*cats, None) for c, cats in categories.items()}
    if "master" in reading:  # the Spark engine
        from pramkit.engine.spark.counts import count_groups as spark_groups

        if not isinstance(data, (str, Path)):
            raise ParameterError(f"the Spark engine designs from a CSV or Parquet file, not {type(data).__name__}")
        table = spark_groups(data, groups, columns=names, categories=with_missing or None, missing="category",
                             **reading)
        return table, str(data), sha256_of(data)
    if isinstance(data, (str, Path)) or streamed(data):  # a polars frame or an Arrow table streams like a file
        table = count_groups(data, groups, columns=names, categories=with_missing or None, missing="category",
                             quiet=quiet, **reading)
        return (table, str(data), sha256_of(data)) if isinstance(data, (str, Path)) else (table, describe(data), None)
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        from pramkit.io import require_columns

        require_columns(names, list(data.columns), "the data")
        found = {n: with_missing.get(n) or (*categories_of(data[n], column=n), None) for n in names}
        return count_groups(data, groups, columns=names, categories=found), "a DataFrame in memory", None
    raise ParameterError(f"data must be a file path, a pandas or polars DataFrame, a polars LazyFrame or an "
                         f"Arrow table, not {type(data).__name__}")


def _labelled(data: Any, table: CountTables,
              sources: Mapping[str, str]) -> tuple[CountTables, dict[str, str], tuple[str, ...]]:
    """Categories read from the data, replaced by the value labels a Stata or SPSS file declares
    (its codebook) when they list every value found; returns the table, the sources and notes."""
    from pramkit.io import value_label_categories

    sources = dict(sources)
    undeclared = [n for n in table.columns if sources[n] == "data"]
    if not undeclared or not isinstance(data, (str, Path)):
        return table, sources, ()
    notes = []
    for n, labels in value_label_categories(data, undeclared).items():
        try:
            table = table.extended(n, [*labels, None] if None in table.categories[table.columns.index(n)] else labels)
        except DataError as exc:
            notes.append(f"the value labels of {n!r} were not used as its categories: {exc}")
            continue
        sources[n] = "declared"
        notes.append(f"the categories of {n!r} are the codes of its value labels in the file")
    return table, sources, tuple(notes)


def _require_two(table: CountTables, names: Sequence[str]) -> None:
    """Every variable has two categories or more (missing aside)."""
    for n, cats in zip(table.columns, table.categories):
        present = [c for c in cats if c is not None]
        if n in names and len(present) < 2:
            raise DataError(f"column {n!r} has fewer than two categories ({present}); nothing to perturb")


def _ordered(data: Any, targets: Mapping[str, Target], sources: Mapping[str, str]) -> dict[str, bool]:
    """Whether each target's categories have a declared order (a codebook, a prior, or the file's own)."""
    from pramkit.codebook import declares_order

    return {k: sources.get(k) != "data" or declares_order(data, k) for k in targets}
