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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.audit.result import Check
from pramkit.audit.stats import holm, row_pvalue
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


def read_whole(path: str | Path) -> pa.Table:
    """A file as one Arrow table, its text as written (no marker read as missing).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("sex\\nNA\\nm\\n")
    ...     read_whole(f).column("sex").to_pylist()
    ['NA', 'm']
    """
    _, batches = iter_batches(path, na_values=())
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


def file_checks(manifest: Manifest, original: pa.Table, released: pa.Table) -> list[Check]:
    """Columns, row count and order, and the columns no variable perturbs, value for value.

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
    perturbed = {c for v in manifest.variables for c in v.columns}
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
        cells = [joint_cell(c) for c in variable.matrix.categories]
        return JointCodebook(cells, variable.read_columns).encode_cells(columns)
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
                 codes: MissingCodes) -> None:
        self.variable = variable
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
                    na_values: Any = None) -> list[Check]:
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
    found = [_Variable(v, original, released, codes) for v in manifest.variables]
    pvalues = np.concatenate([f.pvalues for f in found]) if found else np.array([])
    rejected = holm(pvalues, alpha)
    out, start = [], 0
    for f in found:
        out += f.checks
        if f.pvalues.size:
            out.append(f.fit(rejected[start:start + f.pvalues.size], alpha))
        start += f.pvalues.size
    return out


def key_check(manifest: Path, original: Path, released: Path, key: Any,
              na_values: Sequence[str] = NA_VALUES) -> Check:
    """Derive the release again with the key (into a temporary folder, reading ``na_values`` as missing,
    as the design did, under the release label its receipt records) and compare it byte for byte.

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
    from pramkit.engine.perturb import apply_file
    from pramkit.engine.receipt import read_receipt
    from pramkit.errors import PramkitError
    from pramkit.validate import release_label

    try:  # the release key is derived with the label the receipt records
        label = release_label((read_receipt(released) or {}).get("release", ""), "the receipt's release label")
    except PramkitError as exc:
        return Check("release", "file", "derived again with the key", False, str(exc))
    with tempfile.TemporaryDirectory(prefix="pramkit-audit-") as tmp:
        again = Path(tmp) / released.name
        apply_file(original, manifest, again, key=key, na_values=na_values, release=label)
        same = again.is_file() and released.is_file() and filecmp.cmp(again, released, shallow=False)
    return Check("release", "file", "derived again with the key", same,
                 "the key reproduces the released file byte for byte" if same else
                 "the key does not reproduce the released file (another key, manifest or original)")


def release_audit(manifest: str | Path, original: str | Path, released: str | Path, *, key: Any = None,
                  alpha: float = ALPHA) -> list[Check]:
    """The release audit (private: it reads the original).

    Parameters
    ----------
    manifest, original, released : str or pathlib.Path
        The manifest, the original file and the released file.
    key : SecretKey, bytes, str or path, optional
        The secret key: the release is derived again and compared byte for byte.
    alpha : float
        Family-wise error rate of the goodness-of-fit tests (Holm).

    Returns
    -------
    list of Check
    """
    from pramkit.audit.manifest import read_manifest

    parsed, _ = read_manifest(manifest)
    na = parsed.input.get("na_values", NA_VALUES)  # what the design read as missing
    o, r = read_whole(original), read_whole(released)
    checks = file_checks(parsed, o, r)
    if all(c.passed for c in checks if c.field in ("columns", "row count")):
        checks += variable_checks(parsed, o, r, alpha=alpha, na_values=na)
    if key is not None:
        checks.append(key_check(Path(manifest), Path(original), Path(released), key, na_values=na))
    return checks
