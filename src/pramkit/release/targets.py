"""What :func:`pramkit.design_release` designs when a release has structure.

A release's *targets* are the matrices it designs: one per variable (split equal
or optimal) or one over the cross-classification (split joint).  Without
structure a target covers every category (or every cell); with structure
(:mod:`pramkit.structure`):

* its cells are the allowed ones (edit rules remove the forbidden combinations),
  led by the stratum columns, which the matrix never changes;
* its matrix is block-diagonal (:meth:`pramkit.PramMatrix.block_diagonal`): a block
  per stratum and per kept code, each block designed by the method on the block's
  own frequencies at the target's budget, a kept code or a stratum with a single
  allowed value being the identity; epsilon given the block is then the largest
  of the blocks' (parallel composition: a record is perturbed by one block);
* a household variable's counts are those of households (one record per household)
  and its draws are keyed by the household id (the variable's ``unit``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pramkit.counts import CountTable, CountTables
from pramkit.defaults import CSV_ENCODING, CSV_SEP
from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label, joint_cell
from pramkit.structure import (
    RULE_BREAKING,
    Cells,
    Rules,
    as_rules,
    cells_and_blocks,
    kept_codes,
    listed_codes,
)


@dataclass(frozen=True)
class Shape:
    """A release's structure, validated against its variables (public: it goes in the manifest).

    Made by :func:`structure`, which checks it.

    Parameters
    ----------
    rules : Rules or None
        The edit rules.
    strata : tuple of str
        The stratum columns.
    keep : mapping
        Each variable's kept codes (as given; checked against the categories once they
        are known, :func:`pramkit.structure.kept_codes`).
    household : str or None
        The household id column.
    household_vars : tuple of str
        The variables perturbed once per household.
    rule_breaking : str
        One of :data:`pramkit.structure.RULE_BREAKING`.

    Examples
    --------
    >>> Shape().any, Shape(strata=("region",)).any
    (False, True)
    """

    rules: Rules | None = None
    strata: tuple[str, ...] = ()
    keep: Mapping[str, Any] = field(default_factory=dict)
    household: str | None = None
    household_vars: tuple[str, ...] = ()
    rule_breaking: str = "error"

    @property
    def any(self) -> bool:
        """Some structure is declared."""
        return bool(self.rules or self.strata or self.keep or self.household)

    def to_dict(self) -> dict[str, Any]:
        """The structure as JSON (the manifest's ``input.structure``).

        Returns
        -------
        dict
            ``forbid`` (:meth:`pramkit.structure.Rules.to_dict` or ``None``), ``strata``,
            ``keep_codes`` (sorted canonical texts), ``household``, ``household_vars`` and
            ``rule_breaking``.

        Examples
        --------
        >>> import json
        >>> s = structure(["age", "sex"], "equal", None, "region", {"age": "n/a|unknown"}, None, (), "keep")
        >>> d = json.loads(json.dumps(s.to_dict()))  # JSON values only
        >>> d["strata"], d["keep_codes"], d["forbid"], d["rule_breaking"]
        (['region'], {'age': ['n/a', 'unknown']}, None, 'keep')
        """
        return {
            "forbid": None if self.rules is None else self.rules.to_dict(),
            "strata": list(self.strata),
            "keep_codes": {k: sorted(listed_codes(v)) for k, v in self.keep.items()},
            "household": self.household,
            "household_vars": list(self.household_vars),
            "rule_breaking": self.rule_breaking,
        }


def _columns(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    cols = [c.strip() for c in value.split(",")] if isinstance(value, str) else list(value)
    if not all(isinstance(c, str) and c for c in cols) or len(set(cols)) != len(cols):
        raise ParameterError(f"{what} must be distinct column names, got {value!r}")
    return tuple(cols)


def structure(names: Sequence[str], split: str, forbid: Any, strata: str | Sequence[str], keep: Mapping[str, Any] | None,
              household: str | None, household_vars: str | Sequence[str], rule_breaking: str) -> Shape:
    """The structure of a release, checked against its variables and split (one line per mistake).

    Parameters
    ----------
    names : sequence of str
        The variables to perturb.
    split : str
        The budget split (:data:`pramkit.release.rules.SPLITS`).
    forbid : Rules, path, list of mappings or None
        Edit rules (:func:`pramkit.structure.as_rules`).
    strata : str or sequence of str
        Stratum columns (a text: comma-separated).
    keep : mapping or None
        Each variable's kept codes.
    household : str or None
        The household id column.
    household_vars : str or sequence of str
        The variables perturbed once per household (a text: comma-separated).
    rule_breaking : str
        One of :data:`pramkit.structure.RULE_BREAKING`.

    Returns
    -------
    Shape

    Raises
    ------
    ParameterError
        A stratum is also perturbed; household options are incomplete or combined with
        split joint or strata; a rule couples two variables that the split perturbs
        independently; or a value is malformed.
    DataError
        A rules file cannot be read.

    Examples
    --------
    >>> s = structure(["age", "sex"], "equal", None, "region", None, None, (), "error")
    >>> s.strata, s.any
    (('region',), True)
    >>> structure(["age", "region"], "equal", None, "region", None, None, (), "error")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: region is perturbed, so it cannot also be a stratum (strata are released unperturbed)
    """
    strata_cols = _strata(strata, names)
    if rule_breaking not in RULE_BREAKING:
        raise ParameterError(f"rule breaking must be one of {', '.join(RULE_BREAKING)}, got {rule_breaking!r}")
    hh_vars = _household(household, household_vars, names, strata_cols, split)
    rules = _rules(forbid, names, split)
    return Shape(rules, strata_cols, dict(keep or {}), household, hh_vars, rule_breaking)


def _strata(strata: str | Sequence[str], names: Sequence[str]) -> tuple[str, ...]:
    """The stratum columns, none of them perturbed."""
    cols = _columns(strata, "strata") if strata else ()
    both = [c for c in cols if c in names]
    if both:
        raise ParameterError(f"{', '.join(both)} {'is' if len(both) == 1 else 'are'} perturbed, so it cannot also be "
                             "a stratum (strata are released unperturbed)")
    return cols


def _household(household: str | None, household_vars: str | Sequence[str], names: Sequence[str],
               strata: Sequence[str], split: str) -> tuple[str, ...]:
    """The household variables, checked against the household id, the variables and the split."""
    hh_vars = _columns(household_vars, "household variables") if household_vars else ()
    if household is None:
        if hh_vars:
            raise ParameterError("household variables need the household id column (household=, --household)")
        return ()
    if not isinstance(household, str) or not household:
        raise ParameterError(f"household must be a column name, got {household!r}")
    if household in names or household in strata:
        raise ParameterError(f"the household id {household!r} cannot be perturbed or a stratum")
    if not hh_vars:
        raise ParameterError("give the variables perturbed once per household (household_vars=, --household-vars)")
    absent = [v for v in hh_vars if v not in names]
    if absent:
        raise ParameterError(f"household variables {absent} are not among the variables to perturb {list(names)}")
    if split == "joint":
        raise ParameterError("household variables are designed one by one: use split equal or optimal")
    return hh_vars


def _rules(forbid: Any, names: Sequence[str], split: str) -> Rules | None:
    """The edit rules; none may couple two variables that the split perturbs independently."""
    rules = as_rules(forbid)
    if rules is None or split == "joint":
        return rules
    for i, rule in enumerate(rules.rules, 1):
        coupled = [c for c in rule.values if c in names]
        if len(coupled) > 1:
            raise ParameterError(
                f"rule {i} of {rules.source} couples {' and '.join(coupled)}, which split {split!r} perturbs "
                "independently: no per-variable design can honour it; use split joint (one matrix over the "
                "allowed cells), or make one of them a stratum")
    return rules


@dataclass(frozen=True)
class Target:
    """One matrix to design (:func:`plan_targets`).

    Parameters
    ----------
    name : str
        The variable's name (its random stream).
    columns : tuple of str
        The perturbed columns.
    given : tuple of str
        The strata.
    labels : list of labels
        The matrix's categories.
    index : numpy.ndarray
        Their positions in the cross-classification of ``read_columns``.
    counts : numpy.ndarray
        Exact counts over ``labels`` (private).
    blocks : list of numpy.ndarray or None
        The labels' positions by block (``None``: no structure).
    unit : str or None
        The household id.
    forbidden_counts : int
        Records whose values a rule forbids (they are in no label).
    unpaired : dict of str to tuple of labels
        A joint target's values in no cell (with strata, ``(*strata, value)``): the rules forbid
        them with every value of the other columns, so a record holds one only with another
        column missing (:attr:`pramkit.manifest.PerturbedVariable.unpaired`); missing values kept only.

    Examples
    --------
    >>> t = Target("sex", ("sex",), ("region",), [("north", "f"), ("north", "m")], np.arange(2), np.array([3, 4]))
    >>> t.read_columns  # the strata first, as in the labels
    ('region', 'sex')
    """

    name: str
    columns: tuple[str, ...]
    given: tuple[str, ...]
    labels: list[Label]
    index: np.ndarray
    counts: np.ndarray
    blocks: list[np.ndarray] | None = None
    unit: str | None = None
    forbidden_counts: int = 0
    unpaired: dict[str, tuple[Label, ...]] = field(default_factory=dict)

    @property
    def read_columns(self) -> tuple[str, ...]:
        return self.given + self.columns


def _present(table: CountTable | CountTables, columns: Sequence[str], missing_too: Sequence[str] = ()) -> list[np.ndarray]:
    """Per column, the positions of its categories other than missing (``None``); of the columns
    in ``missing_too``, of every category (missing is one)."""
    return [np.array([i for i, c in enumerate(table.categories[table.columns.index(col)])
                      if c is not None or col in missing_too], dtype=np.intp) for col in columns]


def with_missing_category(table: CountTable | CountTables, columns: Sequence[str]) -> CountTable | CountTables:
    """``table`` with the category ``None`` (missing, with no record when absent) in each of ``columns``.

    Missing is then a category of the design whether or not the file holds a missing value,
    so that the published categories say nothing about the file.

    Parameters
    ----------
    table : CountTable or CountTables
        Counts whose columns may have the category ``None`` (several groups': each group's).
    columns : sequence of str
        The columns whose missing values are a category.

    Returns
    -------
    CountTable or CountTables
        Of the type given.

    Examples
    --------
    >>> t = CountTable(("x", "y"), ((1, 2), ("u", None)), np.array([[4, 1], [2, 3]]), rows=10, missing=0)
    >>> w = with_missing_category(t, ["x", "y"])
    >>> w.categories, w.counts.tolist()
    (((1, 2, None), ('u', None)), [[4, 1], [2, 3], [0, 0]])
    """
    if isinstance(table, CountTables):  # each group counting a column gets its category None
        for c in columns:
            cats = table.categories[table.columns.index(c)]
            table = table if None in cats else table.extended(c, (*cats, None))
        return table
    return _with_missing_category(table, columns)


def _with_missing_category(table: CountTable, columns: Sequence[str]) -> CountTable:
    """:func:`with_missing_category` of one table."""
    cats, counts = list(table.categories), table.counts
    for col in columns:
        axis = table.columns.index(col)
        if None not in cats[axis]:
            cats[axis] = (*cats[axis], None)
            pad = [(0, 0)] * counts.ndim
            pad[axis] = (0, 1)
            counts = np.pad(counts, pad)
    return CountTable(table.columns, tuple(cats), counts, table.rows, table.missing)


def complete(table: CountTable) -> CountTable:
    """The table of the records with a value in every column (the missing category ``None`` dropped).

    Parameters
    ----------
    table : CountTable
        Counts whose columns may have the category ``None`` (missing).

    Returns
    -------
    CountTable
        The same columns without ``None``; ``missing`` counts the records left out.

    Examples
    --------
    >>> t = CountTable(("x", "y"), ((1, None), ("u", None)), np.array([[4, 1], [2, 3]]), rows=10, missing=0)
    >>> c = complete(t)
    >>> c.categories, c.counts.tolist(), c.missing
    (((1,), ('u',)), [[4]], 6)
    """
    keep = _present(table, table.columns)
    counts = table.counts[np.ix_(*keep)]
    cats = tuple(tuple(table.categories[i][j] for j in k) for i, k in enumerate(keep))
    return CountTable(table.columns, cats, counts, table.rows, table.rows - int(counts.sum()))


def target_groups(names: Sequence[str], split: str, shape: Shape) -> list[tuple[str, ...]]:
    """The columns each target reads from the persons' counts (:func:`plan_targets`): a variable with
    the strata (split equal or optimal), every variable with the strata (split joint), a household
    variable alone (its target reads the households' counts, the persons' give its categories).

    The design step counts these groups' tables only (:func:`pramkit.counts.count_groups`): the sum of
    their cells, never the product of every column's categories.

    Parameters
    ----------
    names : sequence of str
        The variables to perturb.
    split : str
        ``"joint"``: one target over every variable; otherwise one per variable.
    shape : Shape
        The release's structure (its strata and household variables).

    Returns
    -------
    list of tuple of str
        One group per target, in the targets' order.

    Examples
    --------
    >>> s = structure(["age", "sex"], "equal", None, "region", None, None, (), "error")
    >>> target_groups(["age", "sex"], "equal", s), target_groups(["age", "sex"], "joint", s)
    ([('region', 'age'), ('region', 'sex')], [('region', 'age', 'sex')])
    """
    return [_read(cols, shape)[1] for cols in _target_columns(names, split)]


def _target_columns(names: Sequence[str], split: str) -> list[tuple[str, ...]]:
    """The perturbed columns of each target."""
    return [tuple(names)] if split == "joint" else [(n,) for n in names]


def _read(cols: tuple[str, ...], shape: Shape) -> tuple[str | None, tuple[str, ...]]:
    """A target's household unit (``None``: persons) and the columns it reads, the strata first
    (strata are the persons': household variables have none)."""
    unit = shape.household if cols[0] in shape.household_vars else None
    return unit, (cols if unit is not None else shape.strata + cols)


def plan_targets(names: Sequence[str], split: str, shape: Shape, table: CountTable | CountTables,
                 households: CountTable | None, missing: str = "keep") -> dict[str, Target]:
    """The matrices to design, with their cells, counts and blocks.

    Parameters
    ----------
    names : sequence of str
        The variables to perturb.
    split : str
        ``"joint"``: one target over the cross-classification of ``names``; otherwise one
        target per variable.
    shape : Shape
        The release's structure.
    table : CountTable or CountTables
        Exact counts of the strata and the variables (missing as the category ``None``): their
        joint table, or the tables of :func:`target_groups` (:func:`pramkit.counts.count_groups`).
    households : CountTable or None
        Counts of the household variables over households (:func:`household_table`).
    missing : {"keep", "category"}
        ``"category"``: missing (``None``) is a category of every variable, a level of every
        column of a joint target (the strata's missing values stay outside the cells).

    Returns
    -------
    dict of str to Target
        Keyed by the target's name (``"age*sex"`` for a joint target).

    Raises
    ------
    ParameterError
        A kept code or a rule names an unknown category, or the rules forbid every
        combination or every value of a stratum.

    Examples
    --------
    Age within region, with ``n/a`` kept: a block per region and per kept code.

    >>> import pandas as pd
    >>> from pramkit.counts import count_frame
    >>> frame = pd.DataFrame({"region": ["north", "north", "south", "south", "north", "south"],
    ...                       "age": ["0-9", "10-19", "n/a", "10-19", "0-9", "0-9"]})
    >>> shape = structure(["age"], "equal", None, "region", {"age": "n/a"}, None, (), "error")
    >>> t = plan_targets(["age"], "equal", shape, count_frame(frame, ["region", "age"]), None)["age"]
    >>> t.labels[:3], t.counts.tolist()
    ([('north', '0-9'), ('north', '10-19'), ('north', 'n/a')], [2, 1, 0, 1, 1, 1])
    >>> [b.tolist() for b in t.blocks]
    [[0, 1], [2], [3, 4], [5]]
    >>> int(t.counts.sum()) == len(frame)  # every record is in one cell
    True
    """
    own = tuple(names) if missing == "category" else ()
    table = with_missing_category(table, own)
    if households is not None:
        households = _with_missing_category(households, [c for c in own if c in households.columns])
    cats = {c: tuple(x for x in cs if x is not None or c in own) for c, cs in zip(table.columns, table.categories)}
    keep = kept_codes(shape.keep, {n: tuple(x for x in cats[n] if x is not None) for n in names})
    if shape.rules is not None:
        shape.rules.check({c: cats[c] for c in (*shape.strata, *names)})
    targets = (_target(cols, shape, table, households, cats, keep, own) for cols in _target_columns(names, split))
    return {t.name: t for t in targets}


def _target(cols: tuple[str, ...], shape: Shape, table: CountTable | CountTables, households: CountTable | None,
            cats: Mapping[str, tuple[Label, ...]], keep: Mapping[str, Any], own: tuple[str, ...]) -> Target:
    """The target over ``cols``: its cells (the allowed ones, within strata), counts and blocks."""
    name = "*".join(cols)
    unit, read = _read(cols, shape)
    source = table if unit is None else households
    assert source is not None  # household variables are counted per household (household_table)
    strata = read[:len(read) - len(cols)]
    counts = source.margin(*read)[np.ix_(*_present(source, read, own))].reshape(-1)  # records in the cells
    if not (shape.rules is not None or strata or any(c in keep for c in cols)):
        labels: list[Label] = (list(cats[cols[0]]) if len(cols) == 1
                               else [tuple(c) for c in _product_labels(cats, cols)])
        return Target(name, cols, (), labels, np.arange(counts.size), counts, None, unit)
    rules = None if shape.rules is None else shape.rules.within(read)
    cells: Cells = cells_and_blocks(read, [cats[c] for c in read], strata=len(strata), rules=rules, keep=keep)
    forbidden = int(counts.sum() - counts[cells.index].sum())
    unpaired = _unpaired(cols, strata, cats, cells) if len(cols) > 1 and not own else {}
    return Target(name, cols, strata, cells.cells, cells.index, counts[cells.index], cells.blocks, unit, forbidden,
                  unpaired)


def _unpaired(cols: tuple[str, ...], strata: tuple[str, ...], cats: Mapping[str, tuple[Label, ...]],
              cells: Cells) -> dict[str, tuple[Label, ...]]:
    """Each column's values (within each stratum) that no allowed cell holds: the rules forbid them with
    every value of the other columns.  Missing values being kept, a record may still hold one with another
    column missing, which the rules allow; it is released unperturbed rather than refused.

    Examples
    --------
    >>> r = Rules.of([{"age": "0-15"}])
    >>> c = cells_and_blocks(["age", "status"], [["0-15", "16+"], ["work", "none"]], rules=r)
    >>> _unpaired(("age", "status"), (), {"age": ("0-15", "16+"), "status": ("work", "none")}, c)
    {'age': ('0-15',)}
    """
    import itertools

    from pramkit.codebook import canonical

    g = len(strata)
    out: dict[str, tuple[Label, ...]] = {}
    for i, column in enumerate(cols):
        held = {tuple(canonical(x) for x in (*cell[:g], cell[g + i])) for cell in map(joint_cell, cells.cells)}
        alone = [(*stratum, value) for stratum in itertools.product(*(cats[c] for c in strata)) for value in cats[column]
                 if tuple(canonical(x) for x in (*stratum, value)) not in held]
        if alone:
            out[column] = tuple(x if g else x[0] for x in alone)
    return out


def unpaired_notes(targets: Mapping[str, Target], rules: Rules | None) -> tuple[str, ...]:
    """One line per joint target with unpaired values: which, why, and what the release does with them.

    Examples
    --------
    >>> t = Target("age*status", ("age", "status"), (), [("16+", "work")], np.arange(1), np.array([3]),
    ...            unpaired={"age": ("0-15",)})
    >>> print(unpaired_notes({t.name: t}, Rules.of([{"age": "0-15"}], source="rules.csv"))[0])  # doctest: +ELLIPSIS
    age=0-15 is in no allowed cell of age*status: the rules of rules.csv forbid it with every value of status, ...
    """
    notes = []
    for t in targets.values():
        for column, values in t.unpaired.items():
            others = ", ".join(c for c in t.columns if c != column)
            shown = ", ".join(f"{column}={x}" if not isinstance(x, tuple) else
                              f"{column}={x[-1]} ({', '.join(f'{c}={v}' for c, v in zip(t.given, x[:-1]))})"
                              for x in values[:6]) + (", ..." if len(values) > 6 else "")
            source = rules.source if rules is not None else "the design"
            notes.append(f"{shown} {'is' if len(values) == 1 else 'are'} in no allowed cell of {t.name}: the rules of "
                         f"{Path(source).name} forbid {'it' if len(values) == 1 else 'them'} with every value of "
                         f"{others}, so a record holds {'it' if len(values) == 1 else 'one'} only where "
                         f"{others + ' is' if ',' not in others else 'one of ' + others + ' is'} missing, and such a "
                         "record is released unperturbed "
                         "(the manifest lists it as unpaired; no epsilon covers it)")
    return tuple(notes)


def _product_labels(cats: Mapping[str, Sequence[Label]], cols: Sequence[str]) -> list[tuple]:
    import itertools

    return list(itertools.product(*(cats[c] for c in cols)))


def normalised(v: np.ndarray) -> np.ndarray:
    """Proportions of non-negative counts; uniform when they are all zero.

    Parameters
    ----------
    v : numpy.ndarray
        Non-negative counts (a block's, possibly all zero).

    Returns
    -------
    numpy.ndarray
        Floats summing to 1.

    Examples
    --------
    >>> normalised(np.array([3, 1, 0])).tolist(), normalised(np.zeros(4)).tolist()
    ([0.75, 0.25, 0.0], [0.25, 0.25, 0.25, 0.25])
    """
    v = np.asarray(v, dtype=float)
    total = v.sum()
    return v / total if total > 0 else np.full(v.size, 1.0 / v.size)


def check_breaking(data: Any, shape: Shape, targets: Mapping[str, Target],
                   na_values: Sequence[str], *, sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> tuple[str, ...]:
    """Records that break a rule: an error naming the first (``rule_breaking="error"``), or notes.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame or pyarrow.Table
        The original data (a file is read for the rules' columns only, and only when a
        record breaks a rule).
    shape : Shape
        The release's structure.
    targets : mapping of str to Target
        From :func:`plan_targets`: their ``forbidden_counts`` say whether any record breaks a rule.
    na_values : sequence of str
        Texts that mean missing in a CSV file.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    tuple of str
        A note per target with records that break a rule (``rule_breaking="keep"``); none otherwise.

    Raises
    ------
    DataError
        With ``rule_breaking="error"``, naming the first row that breaks a rule and the rule.

    Examples
    --------
    >>> import dataclasses
    >>> import pandas as pd
    >>> from pramkit.counts import count_frame
    >>> frame = pd.DataFrame({"age": ["0-9", "30-39", "0-9"], "marital": ["single", "married", "married"]})
    >>> rules = [{"age": "0-9", "marital": "married"}]
    >>> shape = structure(["age", "marital"], "joint", rules, (), None, None, (), "error")
    >>> targets = plan_targets(["age", "marital"], "joint", shape, count_frame(frame, ["age", "marital"]), None)
    >>> check_breaking(frame, shape, targets, ())
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: row 3 breaks rule 1 of the rules given (age=0-9 and marital=married); correct the data, or keep such records unperturbed (rule_breaking keep, --rule-breaking keep)
    >>> notes = check_breaking(frame, dataclasses.replace(shape, rule_breaking="keep"), targets, ())
    >>> notes[0][:40]
    '1 record(s) break a rule on age*marital:'
    """
    broken = {k: t.forbidden_counts for k, t in targets.items() if t.forbidden_counts}
    if not broken or shape.rules is None:
        return ()
    if shape.rule_breaking == "keep":
        return tuple(f"{n} record(s) break a rule on {k}: they are released unperturbed in {k} "
                     "(rule_breaking keep), which no epsilon covers" for k, n in broken.items())
    columns = list(dict.fromkeys(c for t in targets.values() for c in t.read_columns if c in shape.rules.columns))
    frame = _frame(data, columns, na_values, sep, encoding)
    hit = shape.rules.first_breaking(frame, columns)
    if hit is None:  # pragma: no cover - the counts said a record breaks a rule
        raise DataError(f"{sum(broken.values())} record(s) break a rule of {shape.rules.source}")
    row, i = hit
    raise DataError(f"row {row + 1} breaks rule {i} of {shape.rules.source} ({shape.rules.rules[i - 1].describe()}); "
                    "correct the data, or keep such records unperturbed (rule_breaking keep, --rule-breaking keep)")


def _frame(data: Any, columns: Sequence[str], na_values: Sequence[str], sep: str, encoding: str) -> Any:
    """The columns of the data as a DataFrame (a file is read for those columns only; an opened
    :class:`pramkit.source.Source` as it says)."""
    from pramkit.source import Source

    return Source.open(data, na_values=na_values, sep=sep, encoding=encoding).frame(columns)


def household_table(data: Any, shape: Shape, table: CountTable | CountTables, na_values: Sequence[str], *, sep: str = CSV_SEP,
                    encoding: str = CSV_ENCODING) -> CountTable:
    """Counts of the household variables over households (one record each), after checking
    that every household has one value of each (else a :class:`DataError` naming one).

    Parameters
    ----------
    data : str, Path, pandas.DataFrame or pyarrow.Table
        The original data (a file is read for the household columns only).
    shape : Shape
        With ``household`` and ``household_vars``.
    table : CountTable or CountTables
        The persons' counts, whose categories the household table takes.
    na_values : sequence of str
        Texts that mean missing in a CSV file.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    CountTable
        One record per household; ``rows`` is the number of households.

    Raises
    ------
    DataError
        A record has no household id, or a household has several values of a household variable.

    Examples
    --------
    Five persons in three households: tenure is counted once per household.

    >>> import pandas as pd
    >>> from pramkit.counts import count_frame
    >>> frame = pd.DataFrame({"hid": [1, 1, 2, 3, 3], "tenure": ["own", "own", "rent", "own", "own"]})
    >>> shape = structure(["tenure"], "equal", None, (), None, "hid", "tenure", "error")
    >>> h = household_table(frame, shape, count_frame(frame, ["tenure"]), ())
    >>> h.rows, h.counts.tolist()
    (3, [2, 1])
    >>> frame.loc[1, "tenure"] = "rent"
    >>> household_table(frame, shape, count_frame(frame, ["tenure"]), ())
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: household 1 has several values of 'tenure'; a household variable must be the same for every member
    """
    from pramkit.counts import count_frame

    hh, cols = shape.household, list(shape.household_vars)
    assert hh is not None  # called for a shape with households
    frame = _frame(data, [hh, *cols], na_values, sep, encoding)
    ids = frame[hh]
    if ids.isna().any():
        row = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise DataError(f"row {row + 1} has no household id ({hh!r} is missing)")
    varying = frame.groupby(hh, sort=False, dropna=False)[cols].nunique(dropna=False)
    bad = varying[(varying > 1).any(axis=1)]
    if len(bad):
        col = next(c for c in cols if bad[c].iloc[0] > 1)
        hid = bad.index[0].item() if hasattr(bad.index[0], "item") else bad.index[0]
        raise DataError(f"household {hid!r} has several values of {col!r}; a household variable must be "
                        "the same for every member")
    first = frame.drop_duplicates(subset=[hh])
    cats = dict(zip(table.columns, table.categories))
    return count_frame(first, cols, categories={c: cats[c] for c in cols})  # with None: missing counted apart
