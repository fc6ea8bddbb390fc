"""The release audit's checks of paired records (:mod:`pramkit.audit.release`): what each perturbed variable
and the unperturbed columns show, decided from chunks of records read side by side (the local engine) or from
distinct records and how many hold each (:class:`Patterns`, aggregated by Spark: :mod:`pramkit.audit.spark`).
One implementation of every check, figure and message for both."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.audit.result import Check
from pramkit.audit.stats import holm, margin_pvalue, row_pvalue
from pramkit.codebook import Codebook, JointCodebook, MissingCodes
from pramkit.errors import DataError
from pramkit.io import NA_VALUES, csv_missing_codes
from pramkit.labels import joint_cell
from pramkit.manifest import Manifest, PerturbedVariable

#: Default family-wise error rate of the goodness-of-fit tests of one release audit.
ALPHA = 1e-6
#: Largest variable whose transition table is tested (S x S counts).
TABLE_CATEGORIES = 3000
#: Row numbers listed at most per finding.
SHOWN = 20


def _rows(mask: np.ndarray) -> list[int]:
    """The first :data:`SHOWN` rows of a mask, counted from 1."""
    return (np.flatnonzero(mask)[:SHOWN] + 1).tolist()


class _Found:
    """Records found chunk by chunk: how many, and the first :data:`SHOWN` rows (counted from 1 in the file)."""

    def __init__(self) -> None:
        self.total = 0
        self.rows: list[int] = []

    def add(self, mask: np.ndarray, first_row: int) -> None:
        count = int(np.count_nonzero(mask))
        if count:
            self.total += count
            if len(self.rows) < SHOWN:
                self.rows += [first_row + r for r in _rows(mask)[:SHOWN - len(self.rows)]]

    def __bool__(self) -> bool:
        return self.total > 0


class _Chunk:
    """Where a chunk's masks count: one record per entry, the first row ``first_row`` (from 0)."""

    def __init__(self, first_row: int) -> None:
        self.first_row = first_row

    def add(self, found: _Found, mask: np.ndarray) -> None:
        found.add(mask, self.first_row)

    def count(self, mask: np.ndarray) -> int:
        return int(mask.sum())

    def bincount(self, cells: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
        return np.bincount(cells[mask], minlength=size)


class Patterns:
    """Where the masks of distinct records count (:meth:`_Variable.add_patterns`): each entry stands for
    ``times`` records, whose rows a later pass lists (:meth:`_Variable.resolve`)."""

    def __init__(self, times: np.ndarray) -> None:
        self.times = np.asarray(times, dtype=np.int64)
        self.pending: dict[int, np.ndarray] = {}    # id(_Found) -> the entries it found

    def add(self, found: _Found, mask: np.ndarray) -> None:
        count = int(self.times[mask].sum())
        if count:
            found.total += count
            self.pending[id(found)] = mask

    def count(self, mask: np.ndarray) -> int:
        return int(self.times[mask].sum())

    def bincount(self, cells: np.ndarray, mask: np.ndarray, size: int) -> np.ndarray:
        return np.bincount(cells[mask], weights=self.times[mask], minlength=size).astype(np.int64)


def _shown(rows: list[int], total: int) -> str:
    return ", ".join(map(str, rows)) + (" ..." if total > len(rows) else "")


def differing(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Rows where two columns differ (a value against another, or against a missing one).

    Examples
    --------
    >>> differing(pa.array(["a", None, "c"]), pa.array(["a", "b", "d"])).tolist()
    [False, True, True]
    """
    if a.type != b.type:
        a, b = a.cast(pa.string()), b.cast(pa.string())
    same = pc.fill_null(pc.equal(a, b), False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return ~np.asarray(pc.or_(same, both_null).to_numpy(zero_copy_only=False), dtype=bool)


def _profile(table: pa.Table, kept: Sequence[str], perturbed: Sequence[str], codes: MissingCodes) -> dict[tuple, int]:
    """How many records share each combination of the unperturbed columns' values (as text) and the
    perturbed columns' missingness: what a shuffled release keeps of each record."""
    from pramkit.engine.shuffle import group_counts

    columns = {f"k{i}": table.column(c).combine_chunks().cast(pa.string()) for i, c in enumerate(kept)}
    for i, c in enumerate(perturbed):
        values = table.column(c).combine_chunks()
        missing = np.asarray(pc.is_null(values, nan_is_null=True).to_numpy(zero_copy_only=False), dtype=bool)
        found = codes.found(c, values)
        columns[f"p{i}"] = pa.array(missing | np.asarray(found, dtype=bool) if found is not None else missing)
    if not columns:
        return {(): table.num_rows}
    return group_counts(pa.table(columns), list(columns))


def _shuffled_file_check(rows: int, kept: Sequence[str], before: Counter, after: Counter) -> Check:
    """A shuffled release: its records are the original's in another order, so what a record keeps
    (the unperturbed columns, the perturbed columns' missingness) agrees as a multiset."""
    moved = sum(abs(before.get(k, 0) - after.get(k, 0)) for k in set(before) | set(after)) // 2
    if not moved:
        return Check("release", "file", "row count and order", True,
                     f"{rows:,} rows in the order drawn from the key (a shuffled release, its receipt "
                     f"says): the {len(kept)} unperturbed columns and which perturbed values are missing agree "
                     "record for record as multisets")
    return Check("release", "file", "row count and order", False,
                 f"{moved:,} records of the shuffled release match no original record in the unperturbed columns "
                 f"({', '.join(kept) or 'none'}) and which perturbed values are missing: another file",
                 {"records": moved})


class _FileChecks:
    """The file's checks, chunk by chunk: the columns no variable perturbs, value for value (of a shuffled
    release, as multisets), and the row counts."""

    def __init__(self, manifest: Manifest, columns: Sequence[str], *, shuffled: bool, codes: MissingCodes) -> None:
        self.shuffled, self.codes = shuffled, codes
        perturbed = [c for v in manifest.variables for c in v.columns]
        if shuffled:
            self.kept = [c for c in columns if c not in set(perturbed)]
            self.perturbed = perturbed
        else:
            moved = set(perturbed)
            swapping = manifest.swapping or {}
            if swapping.get("donors") == "any-area":  # a household moves to another parent area: every level moves
                moved |= set(swapping.get("levels") or ())
            self.kept = [c for c in columns if c not in moved]
        self.rows = [0, 0]                      # original, released
        self.before: Counter = Counter()
        self.after: Counter = Counter()
        self.bad: set[str] = set()
        self.differ = _Found()

    def add(self, original: pa.Table, released: pa.Table, first_row: int) -> None:
        """Two chunks of the same rows of the two files."""
        if self.shuffled:
            self.before.update(_profile(original, self.kept, self.perturbed, self.codes))
            self.after.update(_profile(released, self.kept, self.perturbed, self.codes))
            return
        any_diff = np.zeros(original.num_rows, dtype=bool)
        for c in self.kept:
            diff = differing(original.column(c).combine_chunks(), released.column(c).combine_chunks())
            if diff.any():
                self.bad.add(c)
                any_diff |= diff
        self.differ.add(any_diff, first_row)

    def checks(self, columns: Sequence[str]) -> list[Check]:
        """The file's checks once every row is read (``columns``: the files' columns, the same in both)."""
        out = [Check("release", "file", "columns", True, f"{len(columns)} columns, the same in both files")]
        original, released = self.rows
        if original != released:
            return [*out, Check("release", "file", "row count", False,
                                f"the released file has {released:,} rows, the original {original:,}: "
                                "not a release of this original")]
        if self.shuffled:
            return [*out, _shuffled_file_check(original, self.kept, self.before, self.after)]
        if not self.bad:
            return [*out, Check("release", "file", "row count and order", True,
                                f"{original:,} rows; the {len(self.kept)} unperturbed columns are identical row for row")]
        bad = [c for c in self.kept if c in self.bad]
        return [*out, Check("release", "file", "row count and order", False,
                            f"{self.differ.total:,} rows differ in unperturbed columns ({', '.join(bad)}), rows "
                            f"{_shown(self.differ.rows, self.differ.total)}: rows reordered, or another file",
                            {"columns": sorted(bad), "rows": self.differ.rows})]


def _columns_check(original: Sequence[str], released: Sequence[str]) -> Check | None:
    """The failed check of two files whose columns differ (None when they agree)."""
    if list(original) == list(released):
        return None
    return Check("release", "file", "columns", False,
                 f"the released file has columns {list(released)}, the original {list(original)}")


def file_checks(manifest: Manifest, original: pa.Table, released: pa.Table, *, shuffled: bool = False,
                codes: MissingCodes | None = None) -> list[Check]:
    """Columns, row count and order, and the columns no variable perturbs, value for value (of a
    shuffled release, as multisets).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> o = pa.table({"id": ["1", "2"], "sex": ["f", "m"]})
    >>> [c.passed for c in file_checks(m, o, pa.table({"id": ["2", "1"], "sex": ["f", "m"]}))]
    [True, False]
    """
    differ = _columns_check(original.column_names, released.column_names)
    if differ is not None:
        return [differ]
    state = _FileChecks(manifest, original.column_names, shuffled=shuffled, codes=codes or MissingCodes())
    state.rows = [original.num_rows, released.num_rows]
    if original.num_rows == released.num_rows:
        state.add(original, released, 0)
    return state.checks(original.column_names)


def _column(table: pa.Table, name: str, codes: MissingCodes) -> pa.Array:
    values = table.column(name).combine_chunks()
    mask = codes.found(name, values)
    return values if mask is None else pc.if_else(pa.array(mask), pa.scalar(None, values.type), values)


def encoded(variable: PerturbedVariable, table: pa.Table, codes: MissingCodes, *,
            first_row: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The variable's codes in a table (``-1``: missing or outside the cells) and which records hold
    a combination that is not one of its cells.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> v = PerturbedVariable("sex", randomized_response(["f", "m"], 1.0))
    >>> [x.tolist() for x in encoded(v, pa.table({"sex": ["m", "NA", "f"]}), MissingCodes(texts=("NA",)))]
    [[1, -1, 0], [False, False, False]]
    """
    columns = [_column(table, c, codes) for c in variable.read_columns]
    if variable.is_joint:
        # a joint variable's categories are tuples (PerturbedVariable checks it)
        joint: JointCodebook = variable.joint_codebook()
        return joint.encode_cells(columns, first_row=first_row)
    book = Codebook(variable.matrix.categories, column=variable.name, missing=variable.missing)
    found = np.array(book.encode(columns[0], first_row=first_row), dtype=np.intp)
    return found, np.zeros(found.size, dtype=bool)


def _kind(variable: PerturbedVariable, k: int, j: int) -> str:
    """What a move from category k to j (a zero cell) breaks, in words."""
    cats = variable.matrix.categories
    g = len(variable.given)
    # strata make the variable joint: its categories are tuples (PerturbedVariable checks it)
    if g and joint_cell(cats[k])[:g] != joint_cell(cats[j])[:g]:
        return "left its stratum"  # a stratum column released changed (the unperturbed columns' check names it)
    kept = set(variable.unchanged_values())
    own = [joint_cell(c)[g:] if variable.is_joint else c for c in (cats[k], cats[j])]
    own = [o[0] if isinstance(o, tuple) and len(o) == 1 else o for o in own]
    if own[0] in kept:
        return "a kept code left"
    if own[1] in kept:
        return "a kept code entered"
    return "impossible transition"


class _Leads:
    """The first member of each household, across chunks: its released and original codes."""

    def __init__(self) -> None:
        self.ids: pd.Index | None = None
        self.orig = np.zeros(0, dtype=np.intp)
        self.rel = np.zeros(0, dtype=np.intp)

    def add(self, ids: pa.Array, orig: np.ndarray, rel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each record's household's first member's original and released codes, and which records are first."""
        # ids as text (a missing id is ""), or as integers, whose equality is the same
        values = ids.to_numpy() if pa.types.is_integer(ids.type) and not ids.null_count else \
            np.asarray(ids.cast(pa.string()).fill_null("").to_numpy(zero_copy_only=False), dtype=object)
        local, uniques = pd.factorize(values)
        first = np.full(len(uniques), orig.size, dtype=np.intp)
        np.minimum.at(first, local, np.arange(orig.size))
        known = np.full(len(uniques), -1) if self.ids is None else self.ids.get_indexer(pd.Index(uniques))
        new = known < 0
        known[new] = self.orig.size + np.arange(int(new.sum()))
        if new.any():
            added = pd.Index(np.asarray(uniques)[new])
            self.ids = added if self.ids is None else self.ids.append(added)
            self.orig = np.concatenate([self.orig, orig[first[new]]])
            self.rel = np.concatenate([self.rel, rel[first[new]]])
        leads = np.zeros(orig.size, dtype=bool)
        leads[first[new]] = True
        household = known[local]
        return self.orig[household], self.rel[household], leads


class _Variable:
    """The findings of one variable, chunk by chunk; its goodness-of-fit p-values wait for the family's
    Holm step."""

    def __init__(self, variable: PerturbedVariable, columns: Sequence[str], codes: MissingCodes,
                 shuffled: bool = False) -> None:
        self.variable = variable
        self.shuffled = shuffled
        self.codes = codes
        self.checks: list[Check] = []
        self.pvalues = np.array([])
        self.failed = False
        s = variable.matrix.size
        self.table = np.zeros((s, s) if s <= TABLE_CATEGORIES and not shuffled else (0, 0), dtype=np.int64)
        self.margins = [np.zeros(s, dtype=np.int64), np.zeros(s, dtype=np.int64)]   # shuffled: n, released
        self.forbidden, self.moved, self.changed = _Found(), _Found(), _Found()
        self.disagree, self.zero = _Found(), _Found()
        self.breakers = self.missing_before = self.missing_after = 0
        self.outside: tuple[Counter, Counter] = (Counter(), Counter())
        self.kinds: dict[str, list[int]] = {}
        self.leads = _Leads() if variable.unit is not None else None
        self.patterns: tuple[Patterns, np.ndarray, np.ndarray] | None = None   # :meth:`add_patterns`
        absent = [c for c in (*variable.read_columns, *([variable.unit] if variable.unit else []))
                  if c not in columns]
        if absent:
            self.fail("columns", f"the files have no column {', '.join(map(repr, absent))}: not the files of "
                      "this manifest")

    def fail(self, field: str, message: str) -> None:
        """A finding that ends this variable's checks."""
        self.checks.append(Check("release", self.variable.name, field, False, message))
        self.failed = True

    def add(self, original: pa.Table, released: pa.Table, first_row: int) -> None:
        """Two chunks of the same rows of the two files (``first_row``: the first's, from 0)."""
        if self.failed:
            return
        try:
            orig, orig_out = encoded(self.variable, original, self.codes, first_row=first_row)
            rel, rel_out = encoded(self.variable, released, self.codes, first_row=first_row)
        except DataError as exc:
            self.fail("categories", str(exc))
            return
        if self.shuffled:  # rows in the key's order: the variable's counts, not its records, are compared
            self._shuffled(original, released, orig, rel, orig_out, rel_out)
            return
        leads = None
        if self.leads is not None:    # a household is one draw: its first member is what the table counts
            assert self.variable.unit is not None
            leads = self.leads.add(original.column(self.variable.unit).combine_chunks(), orig, rel)
        self._records(_Chunk(first_row), original, released, (orig, orig_out, rel, rel_out), leads)

    def add_patterns(self, original: pa.Table, released: pa.Table, patterns: Patterns,
                     leads: tuple[pa.Table, pa.Table, np.ndarray] | None = None) -> bool:
        """Distinct records of the two files, paired (row ``i`` of ``original`` with row ``i`` of ``released``),
        each standing for ``patterns.times`` records; ``leads``: the values of their household's first member in
        each file, and whether they are it.  ``False`` when the values are not the variable's categories (the
        caller finds the first such row: :meth:`undecodable`)."""
        try:
            orig, orig_out = encoded(self.variable, original, self.codes)
            rel, rel_out = encoded(self.variable, released, self.codes)
        except DataError:
            return False
        first = None
        if leads is not None:
            lead_orig, lead_rel, is_lead = leads
            first = (encoded(self.variable, lead_orig, self.codes)[0], encoded(self.variable, lead_rel, self.codes)[0],
                     np.asarray(is_lead, dtype=bool))
        self.patterns = (patterns, orig, rel)
        self._records(patterns, original, released, (orig, orig_out, rel, rel_out), first)
        return True

    def undecodable(self, table: pa.Table) -> np.ndarray:
        """Which distinct records of ``table`` hold a value outside the variable's categories."""
        bad = np.zeros(table.num_rows, dtype=bool)
        for i in range(table.num_rows):
            try:
                encoded(self.variable, table.slice(i, 1), self.codes)
            except DataError:
                bad[i] = True
        return bad

    def resolve(self, first_rows: Any) -> None:
        """The rows of what :meth:`add_patterns` found: ``first_rows(mask)`` lists the first :data:`SHOWN` rows
        (from 0, increasing) of the records whose entry is in ``mask`` and, for each, its entry."""
        if self.failed or self.patterns is None:
            return
        patterns, orig, rel = self.patterns
        for found in (self.forbidden, self.moved, self.changed, self.disagree, self.zero):
            mask = patterns.pending.get(id(found))
            if mask is None:
                continue
            rows, entries = first_rows(mask)
            found.rows = [int(r) + 1 for r in rows[:SHOWN]]
            if found is self.zero:
                for r, e in zip(rows[:SHOWN], entries[:SHOWN], strict=True):
                    self.kinds.setdefault(_kind(self.variable, int(orig[e]), int(rel[e])), []).append(int(r) + 1)

    def _records(self, where: _Chunk | Patterns, original: pa.Table, released: pa.Table,
                 codes: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                 leads: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        """The findings of paired records (their codes, and their household's first member's)."""
        orig, orig_out, rel, rel_out = codes
        where.add(self.forbidden, rel_out & ~orig_out)
        if self.variable.missing == "keep":
            where.add(self.moved, ((orig == -1) & ~orig_out) != ((rel == -1) & ~rel_out))
        if orig_out.any():
            self.breakers += where.count(orig_out)
            changed = np.zeros(orig_out.size, dtype=bool)
            for c in self.variable.columns:
                changed |= differing(original.column(c).combine_chunks(), released.column(c).combine_chunks())
            where.add(self.changed, changed & orig_out)
        both = (orig >= 0) & (rel >= 0)
        if leads is not None:
            lead_orig, lead_rel, first = leads
            where.add(self.disagree, (orig == lead_orig) & (rel != lead_rel))
            both &= first
        self._transitions(orig, rel, both, where)

    def finish(self) -> None:
        """The checks, once every row is added (the goodness of fit: :meth:`fit`)."""
        if self.failed:
            return
        if self.shuffled:
            self._shuffled_checks()
            return
        name = self.variable.name
        self._found("forbidden combinations", self.forbidden,
                    "no released record holds a combination outside the matrix's cells",
                    "released records hold a combination that is not a cell of the matrix ("
                    f"{'a value outside its stratum, or ' if self.variable.given else ''}a combination an edit rule "
                    "forbids)")
        if self.variable.missing == "keep":
            self._found("missing kept missing", self.moved,
                        "every missing value stayed missing and no value became missing",
                        "records changed between missing and present")
        if self.breakers:
            self._found("rule breakers unchanged", self.changed,
                        f"the {self.breakers:,} records that break an edit rule are released as they are",
                        "records that break an edit rule were changed")
        if self.leads is not None:
            self._found("household members agree", self.disagree,
                        "the members of every household share their released value",
                        "records disagree with the first member of their household")
        s, m_ = self.variable.matrix.size, self.variable.matrix
        if s > TABLE_CATEGORIES:
            self.checks.append(Check("release", name, "transition table", True,
                                     f"not tested: {s} categories (more than {TABLE_CATEGORIES})"))
            return
        z = self.zero
        if z:
            words = "; ".join(f"{k}: rows {', '.join(map(str, r))}" for k, r in self.kinds.items())
            self.checks.append(Check("release", name, "impossible transitions", False,
                                     f"{z.total:,} records moved into a zero cell of M ({words}"
                                     f"{' ...' if z.total > SHOWN else ''})", {"rows": z.rows, "kinds": self.kinds}))
        else:
            self.checks.append(Check("release", name, "impossible transitions", True,
                                     "no record moved into a zero cell of M"))
        m = m_.matrix
        self.pvalues = np.array([row_pvalue(self.table[k], m[k]) if self.table[k].sum() else np.nan
                                 for k in range(s)])

    def _found(self, field: str, found: _Found, fine: str, what: str) -> None:
        """A check that passes when no record was found; otherwise how many, and their first rows."""
        self.checks.append(Check("release", self.variable.name, field, not found,
                                 fine if not found else f"{found.total:,} {what}, rows {_shown(found.rows, found.total)}",
                                 {"rows": found.rows} if found else {}))

    def _shuffled(self, original: pa.Table, released: pa.Table, orig: np.ndarray, rel: np.ndarray,
                  orig_out: np.ndarray, rel_out: np.ndarray) -> None:
        """A shuffled release's chunk: the combinations outside the cells and the missing values (as multisets),
        and the counts of each category."""
        v = self.variable

        def outside(table: pa.Table, mask: np.ndarray) -> Counter:
            rows = pa.array(np.flatnonzero(mask))
            picked = [table.column(c).combine_chunks().take(rows).cast(pa.string()).to_pylist() for c in v.read_columns]
            return Counter(zip(*picked))

        self.outside[0].update(outside(original, orig_out))
        self.outside[1].update(outside(released, rel_out))
        self.breakers += int(orig_out.sum())
        self.forbidden.total += int(rel_out.sum())
        self.missing_before += int(((orig == -1) & ~orig_out).sum())
        self.missing_after += int(((rel == -1) & ~rel_out).sum())
        s = v.matrix.size
        self.margins[0] += np.bincount(orig[(orig >= 0) & ~orig_out], minlength=s)
        self.margins[1] += np.bincount(rel[(rel >= 0) & ~rel_out], minlength=s)

    def _shuffled_checks(self) -> None:
        """A shuffled release: the combinations outside the cells (rule breakers, released as they are)
        and the missing values agree as multisets; the released counts fit ``M^T n`` (one Wald test,
        :func:`pramkit.audit.stats.margin_pvalue`); nothing is released where no record can go."""
        v, name = self.variable, self.variable.name
        same = self.outside[0] == self.outside[1]
        self.checks.append(Check(
            "release", name, "forbidden combinations", same,
            f"the {self.breakers:,} records outside the matrix's cells (rule breakers) are released as they are, "
            "as a multiset" if same else
            f"the released file holds {self.forbidden.total:,} records outside the matrix's cells, the original "
            f"{self.breakers:,}, or others: a combination an edit rule forbids entered, or a rule breaker changed"))
        if v.missing == "keep":
            before, after = self.missing_before, self.missing_after
            self.checks.append(Check(
                "release", name, "missing kept missing", before == after,
                f"{before:,} missing values, as many released" if before == after else
                f"{before:,} missing values in the original, {after:,} in the shuffled release"))
        s = v.matrix.size
        if s > TABLE_CATEGORIES:
            self.checks.append(Check("release", name, "released counts", True,
                                     f"not tested: {s} categories (more than {TABLE_CATEGORIES})"))
            return
        m = v.matrix.matrix
        n, counts = self.margins
        unreachable = (m.T @ n == 0) & (counts > 0)
        cats = v.matrix.categories
        self.checks.append(Check(
            "release", name, "impossible transitions", not unreachable.any(),
            "no record released into a category no original record can reach" if not unreachable.any() else
            f"{int(counts[unreachable].sum()):,} records released into categories no original record reaches "
            f"through M: {', '.join(repr(cats[j]) for j in np.flatnonzero(unreachable)[:5])}",
            {"categories": [list(c) if isinstance(c, tuple) else c for c in
                            (cats[j] for j in np.flatnonzero(unreachable))]} if unreachable.any() else {}))
        self.pvalues = np.array([margin_pvalue(n, m, counts)])

    def _transitions(self, orig: np.ndarray, rel: np.ndarray, both: np.ndarray, where: _Chunk | Patterns) -> None:
        """Moves into zero cells of M, and the transition table."""
        v = self.variable
        s = v.matrix.size
        if s > TABLE_CATEGORIES:
            return
        m = v.matrix.matrix
        zero = np.zeros(orig.size, dtype=bool)
        zero[both] = m[orig[both], rel[both]] == 0
        if zero.any():
            shown = self.zero.total
            where.add(self.zero, zero)
            if isinstance(where, _Chunk):   # distinct records' rows are listed later (:meth:`resolve`)
                for row in np.flatnonzero(zero)[:max(SHOWN - shown, 0)]:
                    self.kinds.setdefault(_kind(v, int(orig[row]), int(rel[row])), []).append(
                        where.first_row + int(row) + 1)
        self.table += where.bincount(orig * s + rel, both, s * s).reshape(s, s)

    def fit(self, rejected: np.ndarray, alpha: float) -> Check:
        """The goodness-of-fit verdict, given which of this variable's rows the family rejected."""
        v = self.variable
        if self.shuffled:
            p = float(self.pvalues[0])
            fitted = not np.isnan(p)
            return Check("release", v.name, "released counts", not rejected.any(),
                         (f"the released counts fit M^T n (p = {p:.2g}; Holm, family-wise {alpha:g}): the rows are "
                          "shuffled, so the counts are tested, not each record" if fitted else
                          "not tested: too few records") if not rejected.any() else
                         f"the released counts do not fit M^T n (p = {p:.2g}; Holm, family-wise {alpha:g})",
                         {"p_value": p if fitted else None})
        tested = int(np.count_nonzero(~np.isnan(self.pvalues)))
        changed = int(self.table.sum() - np.trace(self.table))
        extra = " (no value changed at all: is the released file the original?)" if changed == 0 and tested else ""
        if not rejected.any():
            return Check("release", v.name, "transition table", True,
                         f"{tested} rows tested against n_k M[k, .]: none rejected (Holm, family-wise {alpha:g})",
                         {"tested_rows": tested, "changed": changed})
        cats = v.matrix.categories
        rows = [{"category": list(c) if isinstance(c := cats[k], tuple) else c, "p_value": float(self.pvalues[k])}
                for k in np.flatnonzero(rejected)]
        shown = ", ".join(f"{r['category']!r} (p = {r['p_value']:.2g})" for r in rows[:5])
        return Check("release", v.name, "transition table", False,
                     f"{len(rows)} of {tested} rows do not fit n_k M[k, .] (Holm, family-wise {alpha:g}): {shown}{extra}",
                     {"tested_rows": tested, "rejected": rows, "changed": changed})


def _holm_family(found: Sequence[_Variable], alpha: float) -> list[Check]:
    """The variables' checks, their goodness-of-fit tests one Holm family."""
    for f in found:
        f.finish()
    pvalues = np.concatenate([f.pvalues for f in found]) if found else np.array([])
    rejected = holm(pvalues, alpha)
    out, start = [], 0
    for f in found:
        out += f.checks
        if f.pvalues.size:
            out.append(f.fit(rejected[start:start + f.pvalues.size], alpha))
        start += f.pvalues.size
    return out


def variable_checks(manifest: Manifest, original: pa.Table, released: pa.Table, *, alpha: float = ALPHA,
                    na_values: Any = None, shuffled: bool = False) -> list[Check]:
    """The per-variable checks of a release, the goodness-of-fit tests of all variables one Holm family.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> o = pa.table({"sex": ["f", "m"] * 500})
    >>> [(c.field, c.passed) for c in variable_checks(m, o, o)]   # nothing changed: not a release
    [('forbidden combinations', True), ('missing kept missing', True), ('impossible transitions', True), ('transition table', False)]
    """
    na = manifest.input.get("na_values", NA_VALUES) if na_values is None else na_values
    codes = csv_missing_codes(na)
    found = [_Variable(v, original.column_names, codes, shuffled) for v in manifest.variables]
    for f in found:
        f.add(original, released, 0)
    return _holm_family(found, alpha)
