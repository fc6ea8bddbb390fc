"""The release audit: the original file, the released file and the manifest, read together.

Private: it reads the original.  For each perturbed variable it builds the transition table
original -> released and checks it against the matrix:

* a move into a zero cell of M is impossible; each is reported with its rows and named by what it
  breaks (a kept code entered or left, another impossible transition); a released combination
  that is no cell of the matrix (outside its stratum, or forbidden by an edit rule) likewise;
* each row k of the table is tested against ``n_k M[k, .]`` (Pearson's chi-square,
  :func:`pramkit.audit.stats.row_pvalue`); the tests of every row of every variable are one
  family, controlled by Holm's step-down procedure at family-wise level ``alpha``
  (:func:`pramkit.audit.stats.holm`): when the engine realises M, the chance that any row is
  flagged is at most ``alpha`` (up to the chi-square approximation, cells pooled to an expected 5);
* missing values stay missing; records that break an edit rule are released as they are;
  household members (``unit``) share their released values, and a household is one draw (the
  test counts households, not members);

and that the columns no variable perturbs are identical, value for value, row for row (which also
proves the row order), with the same row count.  With the key, the release is derived again
(:func:`pramkit.engine.perturb.apply_file`, into a temporary folder) and compared byte for byte.
"""

from __future__ import annotations

import filecmp
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.audit.result import Check
from pramkit.audit.stats import holm, margin_pvalue, row_pvalue
from pramkit.engine.codebook import Codebook, JointCodebook, MissingCodes
from pramkit.errors import DataError
from pramkit.io import NA_VALUES, csv_missing_codes, iter_batches
from pramkit.labels import joint_cell
from pramkit.manifest import Manifest, PerturbedVariable

#: Default family-wise error rate of the goodness-of-fit tests of one release audit.
ALPHA = 1e-3
#: Largest variable whose transition table is tested (S x S counts).
TABLE_CATEGORIES = 3000
#: Row numbers listed at most per finding.
SHOWN = 20


def read_whole(path: str | Path, *, sep: str = ",", encoding: str = "utf-8") -> pa.Table:
    """A file (or folder of part files) as one Arrow table, its text as written (no marker read as missing);
    ``sep`` and ``encoding``: how a CSV file is written (:func:`pramkit.io.csv_dialect`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("sex\\nNA\\nm\\n")
    ...     read_whole(f).column("sex").to_pylist()
    ['NA', 'm']
    """
    _, batches = iter_batches(path, na_values=(), sep=sep, encoding=encoding)
    tables = list(batches)
    if not tables:
        raise DataError(f"file {str(path)!r} has no data rows")
    return pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0].combine_chunks()


def _rows(mask: np.ndarray) -> list[int]:
    """The first :data:`SHOWN` rows of a mask, counted from 1."""
    return (np.flatnonzero(mask)[:SHOWN] + 1).tolist()


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


def _shuffled_file_check(manifest: Manifest, original: pa.Table, released: pa.Table, codes: MissingCodes) -> Check:
    """A shuffled release: its records are the original's in another order, so what a record keeps
    (the unperturbed columns, the perturbed columns' missingness) agrees as a multiset."""
    perturbed = [c for v in manifest.variables for c in v.columns]
    kept = [c for c in original.column_names if c not in set(perturbed)]
    before, after = _profile(original, kept, perturbed, codes), _profile(released, kept, perturbed, codes)
    moved = sum(abs(before.get(k, 0) - after.get(k, 0)) for k in set(before) | set(after)) // 2
    if not moved:
        return Check("release", "file", "row count and order", True,
                     f"{original.num_rows:,} rows in the order drawn from the key (a shuffled release, its receipt "
                     f"says): the {len(kept)} unperturbed columns and which perturbed values are missing agree "
                     "record for record as multisets")
    return Check("release", "file", "row count and order", False,
                 f"{moved:,} records of the shuffled release match no original record in the unperturbed columns "
                 f"({', '.join(kept) or 'none'}) and which perturbed values are missing: another file",
                 {"records": moved})


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
    if original.column_names != released.column_names:
        return [Check("release", "file", "columns", False,
                      f"the released file has columns {released.column_names}, the original {original.column_names}")]
    out = [Check("release", "file", "columns", True, f"{len(original.column_names)} columns, the same in both files")]
    if original.num_rows != released.num_rows:
        return [*out, Check("release", "file", "row count", False,
                            f"the released file has {released.num_rows:,} rows, the original {original.num_rows:,}: "
                            "not a release of this original")]
    if shuffled:
        return [*out, _shuffled_file_check(manifest, original, released, codes or MissingCodes())]
    perturbed = {c for v in manifest.variables for c in v.columns}
    swapping = manifest.swapping or {}
    if swapping.get("donors") == "any-area":  # a household moves to another parent area: every level moves with it
        perturbed |= set(swapping.get("levels") or ())
    kept = [c for c in original.column_names if c not in perturbed]
    bad = {}
    for c in kept:
        diff = differing(original.column(c).combine_chunks(), released.column(c).combine_chunks())
        if diff.any():
            bad[c] = diff
    if not bad:
        return [*out, Check("release", "file", "row count and order", True,
                            f"{original.num_rows:,} rows; the {len(kept)} unperturbed columns are identical row for row")]
    any_diff = np.logical_or.reduce(list(bad.values()))
    rows = _rows(any_diff)
    return [*out, Check("release", "file", "row count and order", False,
                        f"{int(any_diff.sum()):,} rows differ in unperturbed columns ({', '.join(bad)}), rows "
                        f"{_shown(rows, int(any_diff.sum()))}: rows reordered, or another file",
                        {"columns": sorted(bad), "rows": rows})]


def _column(table: pa.Table, name: str, codes: MissingCodes) -> pa.Array:
    values = table.column(name).combine_chunks()
    mask = codes.found(name, values)
    return values if mask is None else pc.if_else(pa.array(mask), pa.scalar(None, values.type), values)


def encoded(variable: PerturbedVariable, table: pa.Table, codes: MissingCodes) -> tuple[np.ndarray, np.ndarray]:
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
        return joint.encode_cells(columns)
    book = Codebook(variable.matrix.categories, column=variable.name, missing=variable.missing)
    found = np.array(book.encode(columns[0]), dtype=np.intp)
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


class _Variable:
    """The findings of one variable; its goodness-of-fit p-values wait for the family's Holm step."""

    def __init__(self, variable: PerturbedVariable, original: pa.Table, released: pa.Table,
                 codes: MissingCodes, shuffled: bool = False) -> None:
        self.variable = variable
        self.shuffled = shuffled
        self.checks: list[Check] = []
        self.pvalues = np.array([])
        self.table = np.zeros((0, 0), dtype=np.int64)
        name = variable.name
        absent = [c for c in (*variable.read_columns, *([variable.unit] if variable.unit else []))
                  if c not in original.column_names]
        if absent:
            self.checks.append(Check("release", name, "columns", False,
                                     f"the files have no column {', '.join(map(repr, absent))}: not the files of "
                                     "this manifest"))
            return
        try:
            orig, orig_out = encoded(variable, original, codes)
            rel, rel_out = encoded(variable, released, codes)
        except DataError as exc:
            self.checks.append(Check("release", name, "categories", False, str(exc)))
            return
        if shuffled:  # rows in the key's order: the variable's counts, not its records, are compared
            self._shuffled(original, released, orig, rel, orig_out, rel_out)
            return
        self._exact(orig, rel, orig_out, rel_out)
        if orig_out.any():
            self._rule_breakers(original, released, orig_out)
        both = (orig >= 0) & (rel >= 0)
        if variable.unit is not None:
            both &= self._households(original, orig, rel)
        self._transitions(orig, rel, both)

    def _exact(self, orig: np.ndarray, rel: np.ndarray, orig_out: np.ndarray, rel_out: np.ndarray) -> None:
        """No forbidden combination entered; missing values kept missing (what is released exactly)."""
        name = self.variable.name
        forbidden = rel_out & ~orig_out
        self.checks.append(Check(
            "release", name, "forbidden combinations", not forbidden.any(),
            "no released record holds a combination outside the matrix's cells" if not forbidden.any() else
            f"{int(forbidden.sum()):,} released records hold a combination that is not a cell of the matrix ("
            f"{'a value outside its stratum, or ' if self.variable.given else ''}a combination an edit rule "
            f"forbids), rows "
            f"{_shown(_rows(forbidden), int(forbidden.sum()))}", {"rows": _rows(forbidden)} if forbidden.any() else {}))
        if self.variable.missing == "keep":
            moved = ((orig == -1) & ~orig_out) != ((rel == -1) & ~rel_out)
            self.checks.append(Check(
                "release", name, "missing kept missing", not moved.any(),
                "every missing value stayed missing and no value became missing" if not moved.any() else
                f"{int(moved.sum()):,} records changed between missing and present, rows "
                f"{_shown(_rows(moved), int(moved.sum()))}", {"rows": _rows(moved)} if moved.any() else {}))

    def _shuffled(self, original: pa.Table, released: pa.Table, orig: np.ndarray, rel: np.ndarray,
                  orig_out: np.ndarray, rel_out: np.ndarray) -> None:
        """A shuffled release: the combinations outside the cells (rule breakers, released as they are)
        and the missing values agree as multisets; the released counts fit ``M^T n`` (one Wald test,
        :func:`pramkit.audit.stats.margin_pvalue`); nothing is released where no record can go."""
        v, name = self.variable, self.variable.name

        def outside(table: pa.Table, mask: np.ndarray) -> Counter:
            rows = pa.array(np.flatnonzero(mask))
            picked = [table.column(c).combine_chunks().take(rows).cast(pa.string()).to_pylist() for c in v.read_columns]
            return Counter(zip(*picked))

        same = outside(original, orig_out) == outside(released, rel_out)
        self.checks.append(Check(
            "release", name, "forbidden combinations", same,
            f"the {int(orig_out.sum()):,} records outside the matrix's cells (rule breakers) are released as they are, "
            "as a multiset" if same else
            f"the released file holds {int(rel_out.sum()):,} records outside the matrix's cells, the original "
            f"{int(orig_out.sum()):,}, or others: a combination an edit rule forbids entered, or a rule breaker changed"))
        if v.missing == "keep":
            before, after = int(((orig == -1) & ~orig_out).sum()), int(((rel == -1) & ~rel_out).sum())
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
        n = np.bincount(orig[(orig >= 0) & ~orig_out], minlength=s)
        counts = np.bincount(rel[(rel >= 0) & ~rel_out], minlength=s)
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

    def _rule_breakers(self, original: pa.Table, released: pa.Table, breakers: np.ndarray) -> None:
        """Records whose original combination is no cell (they break an edit rule) are released as they are."""
        changed = np.zeros(breakers.size, dtype=bool)
        for c in self.variable.columns:
            changed |= differing(original.column(c).combine_chunks(), released.column(c).combine_chunks())
        changed &= breakers
        self.checks.append(Check(
            "release", self.variable.name, "rule breakers unchanged", not changed.any(),
            f"the {int(breakers.sum()):,} records that break an edit rule are released as they are"
            if not changed.any() else
            f"{int(changed.sum()):,} records that break an edit rule were changed, rows "
            f"{_shown(_rows(changed), int(changed.sum()))}", {"rows": _rows(changed)} if changed.any() else {}))

    def _households(self, original: pa.Table, orig: np.ndarray, rel: np.ndarray) -> np.ndarray:
        """Check that members of a household share their released value; the first member of each
        household (one draw per household) is what the table counts."""
        v = self.variable
        ids = original.column(v.unit).combine_chunks().cast(pa.string()).fill_null("")
        units = np.asarray(pc.dictionary_encode(ids).indices.to_numpy(zero_copy_only=False), dtype=np.intp)
        _, first, inverse = np.unique(units, return_index=True, return_inverse=True)
        lead = first[inverse]           # each record's household's first member
        disagree = (orig == orig[lead]) & (rel != rel[lead])
        self.checks.append(Check(
            "release", v.name, "household members agree", not disagree.any(),
            "the members of every household share their released value" if not disagree.any() else
            f"{int(disagree.sum()):,} records disagree with the first member of their household, rows "
            f"{_shown(_rows(disagree), int(disagree.sum()))}", {"rows": _rows(disagree)} if disagree.any() else {}))
        leads = np.zeros(units.size, dtype=bool)
        leads[first] = True
        return leads

    def _transitions(self, orig: np.ndarray, rel: np.ndarray, both: np.ndarray) -> None:
        v = self.variable
        s = v.matrix.size
        if s > TABLE_CATEGORIES:
            self.checks.append(Check("release", v.name, "transition table", True,
                                     f"not tested: {s} categories (more than {TABLE_CATEGORIES})"))
            return
        m = v.matrix.matrix
        zero = np.zeros(orig.size, dtype=bool)
        zero[both] = m[orig[both], rel[both]] == 0
        if zero.any():
            kinds: dict[str, list[int]] = {}
            for row in np.flatnonzero(zero)[:SHOWN]:
                kinds.setdefault(_kind(v, int(orig[row]), int(rel[row])), []).append(int(row) + 1)
            words = "; ".join(f"{k}: rows {', '.join(map(str, r))}" for k, r in kinds.items())
            self.checks.append(Check("release", v.name, "impossible transitions", False,
                                     f"{int(zero.sum()):,} records moved into a zero cell of M ({words}"
                                     f"{' ...' if zero.sum() > SHOWN else ''})", {"rows": _rows(zero), "kinds": kinds}))
        else:
            self.checks.append(Check("release", v.name, "impossible transitions", True,
                                     "no record moved into a zero cell of M"))
        self.table = np.bincount(orig[both] * s + rel[both], minlength=s * s).reshape(s, s)
        self.pvalues = np.array([row_pvalue(self.table[k], m[k]) if self.table[k].sum() else np.nan
                                 for k in range(s)])

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
    found = [_Variable(v, original, released, codes, shuffled) for v in manifest.variables]
    pvalues = np.concatenate([f.pvalues for f in found]) if found else np.array([])
    rejected = holm(pvalues, alpha)
    out, start = [], 0
    for f in found:
        out += f.checks
        if f.pvalues.size:
            out.append(f.fit(rejected[start:start + f.pvalues.size], alpha))
        start += f.pvalues.size
    return out


#: Formats whose files record when they were written: a release derived again is compared by content.
STAMPED = ("stata", "spss", "sas")


def same_content(a: Path, b: Path, *, sep: str = ",", encoding: str = "utf-8") -> bool:
    """Whether two files hold the same columns, values, missing codes, labels and formats, as pramkit
    reads them (Stata, SPSS and SAS files record when they were written, so their bytes differ; a folder
    of part files is read as one table).  ``sep`` and ``encoding``: how a CSV file is written.

    Examples
    --------
    >>> import pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     _ = (d / "a.csv").write_text("x\\n1\\n"); _ = (d / "b.csv").write_text("x\\n1\\n")
    ...     _ = (d / "c.csv").write_text("x\\n2\\n")
    ...     same_content(d / "a.csv", d / "b.csv"), same_content(d / "a.csv", d / "c.csv")
    (True, False)
    """
    (meta_a, tables_a), (meta_b, tables_b) = (iter_batches(f, na_values=(), keep_missing_codes=True, sep=sep,
                                                           encoding=encoding) for f in (a, b))
    if (meta_a.format, meta_a.columns, meta_a.labels, meta_a.missing) != \
            (meta_b.format, meta_b.columns, meta_b.labels, meta_b.missing):
        return False
    first, second = pa.concat_tables(list(tables_a)), pa.concat_tables(list(tables_b))
    return first.num_rows == second.num_rows and all(
        first.column(c).combine_chunks().equals(second.column(c).combine_chunks()) for c in first.column_names)


def swap_plan_of(section: Any) -> Any:
    """The plan of a swap from its public description (the manifest's or the receipt's ``swapping``).

    Examples
    --------
    >>> from pramkit.engine.swap.run import plan_swap
    >>> plan = plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.1)
    >>> swap_plan_of(plan.section(["a", "b"], ["r", "r"])) == plan
    True
    >>> wide = plan_swap("hid", ["region", "area"], rate=0.1, donors="any-area")
    >>> swap_plan_of(wide.section(["a", "b"], ["r", "s"])) == wide
    True
    """
    from pramkit.engine.swap.run import plan_swap

    if not isinstance(section, dict):
        raise DataError("the manifest's swapping section is not an object: the swap cannot be derived again")
    try:
        return plan_swap(section["household_id"], section["levels"], risk_vars=section.get("risk_variables") or (),
                         similar=section.get("similar") or (), rate=section["rate"],
                         k=section.get("k_anonymity") or 3, donors=section.get("donors") or "same-parent")
    except (KeyError, TypeError) as exc:
        raise DataError(f"the manifest's swapping section lacks {exc}: the swap cannot be derived again") from None


def key_check(manifest: Path, original: Path, released: Path, key: Any,
              na_values: Sequence[str] = NA_VALUES, *, shuffled: bool = False, sep: str = ",",
              encoding: str = "utf-8") -> Check:
    """Derive the release again with the key (into a temporary folder, reading ``na_values`` as missing,
    as the design did, under the release label its receipt records; shuffled when the release was, by the
    swap when the manifest describes one) and compare it byte for byte, or value for value for a format
    that records when it was written, or a folder of part files (:func:`same_content`).  ``sep`` and
    ``encoding``: how the CSV files are written; the release derived again is written as the original is.

    Examples
    --------
    >>> import pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.engine.perturb import apply_file
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     _ = (d / "o.csv").write_text("sex\\n" + "f\\nm\\n" * 40)
    ...     _ = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(d / "m.json")
    ...     _ = apply_file(d / "o.csv", d / "m.json", d / "r.csv", key=bytes(32))
    ...     print(key_check(d / "m.json", d / "o.csv", d / "r.csv", bytes(32)).passed,
    ...           key_check(d / "m.json", d / "o.csv", d / "r.csv", bytes(range(32))).passed)
    True False
    """
    from pramkit.audit.manifest import read_manifest
    from pramkit.engine.perturb import apply_file
    from pramkit.engine.receipt import read_receipt
    from pramkit.engine.swap.run import swap_file
    from pramkit.errors import PramkitError
    from pramkit.io import dataset_parts, table_format
    from pramkit.validate import release_label

    try:  # the release key is derived with the label the receipt records
        label = release_label((read_receipt(released) or {}).get("release", ""), "the receipt's release label")
    except PramkitError as exc:
        return Check("release", "file", "derived again with the key", False, str(exc))
    swapping = read_manifest(manifest)[0].swapping
    how = "the swap" if swapping is not None else "the shuffled release" if shuffled else "the release"
    with tempfile.TemporaryDirectory(prefix="pramkit-audit-") as tmp:
        folder = released.is_dir()
        fmt = (dataset_parts(released)[0] if folder else table_format(released)) if released.exists() else None
        again = Path(tmp) / (f"again.{fmt}" if folder else released.name)
        if swapping is not None:
            swap_file(original, swap_plan_of(swapping), again, key=key, na_values=na_values, sep=sep,
                      encoding=encoding)
        else:
            apply_file(original, manifest, again, key=key, na_values=na_values, shuffle=shuffled, release=label,
                       sep=sep, encoding=encoding)
        exact = again.is_file() and released.is_file() and filecmp.cmp(again, released, shallow=False)
        same = exact or ((fmt in STAMPED or folder) and again.is_file() and same_content(again, released, sep=sep, encoding=encoding))
    words = ("byte for byte" if exact else
             "value for value (a folder of part files, written by another engine)" if folder else
             f"value for value, with its missing codes, labels and formats (a {fmt} file records when it was "
             "written, so its bytes differ)")
    return Check("release", "file", "derived again with the key", same,
                 f"the key reproduces {how} {words}" if same else
                 f"the key does not reproduce {how} (another key, manifest or original)")


def release_audit(manifest: str | Path, original: str | Path, released: str | Path, *, key: Any = None,
                  alpha: float = ALPHA, sep: str = ",", encoding: str = "utf-8") -> list[Check]:
    """The release audit (private: it reads the original).

    Parameters
    ----------
    manifest, original, released : str or pathlib.Path
        The manifest, the original file and the released file.
    key : SecretKey, bytes, str or path, optional
        The secret key: the release is derived again and compared byte for byte.
    alpha : float
        Family-wise error rate of the goodness-of-fit tests (Holm).
    sep, encoding : str
        The field separator and character encoding of the CSV files (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    list of Check
    """
    from pramkit.audit.manifest import read_manifest
    from pramkit.engine.receipt import read_receipt

    parsed, _ = read_manifest(manifest)
    na = parsed.input.get("na_values", NA_VALUES)  # what the design read as missing
    o, r = read_whole(original, sep=sep, encoding=encoding), read_whole(released, sep=sep, encoding=encoding)
    receipt = read_receipt(released) if Path(released).exists() else None
    shuffled = bool((receipt or {}).get("guarantees"))  # apply --shuffle states the shuffled guarantee there
    checks = file_checks(parsed, o, r, shuffled=shuffled, codes=csv_missing_codes(na))
    if all(c.passed for c in checks if c.field in ("columns", "row count")):
        checks += variable_checks(parsed, o, r, alpha=alpha, na_values=na, shuffled=shuffled)
    if key is not None:
        checks.append(key_check(Path(manifest), Path(original), Path(released), key, na_values=na,
                                shuffled=shuffled, sep=sep, encoding=encoding))
    return checks
