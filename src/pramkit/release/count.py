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
from pramkit.source import Source
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


def _require_weights(source: Source, weights: Sequence[str]) -> None:
    """The sampling weight columns the ledger will name are in the data."""
    if not weights:
        return
    present = source.columns
    absent = [c for c in weights if c not in present]
    if absent:
        raise DataError(f"weight column(s) {absent} are not in the data; its columns are {list(present)}")


def count_release(data: Any, plan: ReleasePlan, *, quiet: bool = True, engine: str = "local",
                  spark_master: str = SPARK_MASTER) -> Counted:
    """Count the data for a plan and lay out its targets.

    Parameters
    ----------
    data : Source, str, Path, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The original data (a file, a polars frame or an Arrow table is streamed), opened once
        (:meth:`pramkit.source.Source.open`, read as ``plan.reading`` says): every stage asks the source.
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
    source = Source.open(data, **plan.reading)
    declared, sources = _declared(plan.counted, plan.categories, plan.prior)
    _require_weights(source, plan.weights)
    groups = target_groups(plan.names, plan.split, plan.shape)
    table = _count(source, list(plan.counted), groups, declared, quiet,
                   None if engine_name(engine) == "local" else spark_master)
    table, sources, notes = _labelled(source, table, sources)
    _require_two(table, plan.names)
    households = household_table(source, plan.shape, table, **plan.reading) if plan.shape.household else None
    targets = plan_targets(list(plan.names), plan.split, plan.shape, table, households, plan.missing)
    notes += check_breaking(source, plan.shape, targets, **plan.reading)
    notes += unpaired_notes(targets, plan.shape.rules)
    source.forget()  # counted: a file read whole is held no more
    return Counted(table, source.described, source.digest, sources, _ordered(source, targets, sources), households,
                   targets, notes)


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


def _count(source: Source, names: list[str], groups: Sequence[Sequence[str]],
           categories: Mapping[str, Sequence[Label]], quiet: bool, spark_master: str | None) -> CountTables:
    """Count the groups of columns (every one of ``names`` in one at least), missing values as a
    category ``None`` of each (so that a record missing one variable still counts in the others'
    designs).  ``spark_master``: the Spark engine's master (``None``: counted here)."""
    from pramkit.codebook import categories_of

    with_missing = {c: (*cats, None) for c, cats in categories.items()}
    if spark_master is not None:  # the Spark engine
        from pramkit.engine.spark.counts import count_groups as spark_groups

        if source.path is None:
            raise ParameterError(f"the Spark engine designs from a CSV or Parquet file, not {type(source.data).__name__}")
        return spark_groups(source.data, groups, columns=names, categories=with_missing or None, missing="category",
                            na_values=source.na_values, sep=source.sep, encoding=source.encoding, master=spark_master)
    if source.streamed:  # a file, a polars frame or an Arrow table, chunk by chunk
        return count_groups(source, groups, columns=names, categories=with_missing or None, missing="category",
                            quiet=quiet)
    from pramkit.io import require_columns

    data = source.data  # a pandas DataFrame
    require_columns(names, list(data.columns), "the data")
    found = {n: with_missing.get(n) or (*categories_of(data[n], column=n), None) for n in names}
    return count_groups(data, groups, columns=names, categories=found)


def _labelled(source: Source, table: CountTables,
              sources: Mapping[str, str]) -> tuple[CountTables, dict[str, str], tuple[str, ...]]:
    """Categories read from the data, replaced by the value labels a Stata or SPSS file declares
    (its codebook) when they list every value found; returns the table, the sources and notes."""
    sources = dict(sources)
    undeclared = [n for n in table.columns if sources[n] == "data"]
    notes = []
    for n, labels in source.value_labels(undeclared).items():
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


def _ordered(source: Source, targets: Mapping[str, Target], sources: Mapping[str, str]) -> dict[str, bool]:
    """Whether each target's categories have a declared order (a codebook, a prior, or the file's own)."""
    return {k: sources.get(k) != "data" or source.declares_order(k) for k in targets}
