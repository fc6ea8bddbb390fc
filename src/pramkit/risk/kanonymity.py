"""Records and cells below k, and l-diversity: sdcMicro's ``kAnon_violations``, ``riskyCells`` and ``ldiversity``.

**Frequencies.**  A record's frequency ``f_i`` is the number of records (itself included, within its stratum)
that *agree with it* on the key variables (:func:`record_frequencies`).  Two rules for a missing value:

* ``missing="own"`` (default): a missing value is a value of its own (``NA`` equals ``NA`` and nothing else);
  the combinations are counted as they stand, as an intruder who reads the file literally would.
* ``missing="any"`` (sdcMicro's ``freqCalc``/``measure_risk`` with ``alpha = 1``): a missing value matches any
  value, in either record; records agree when on every key the values are equal or one is missing.

With weights, a record's *weighted* frequency ``F_i`` is the sum of the weights of the records that agree
with it (sdcMicro's ``Fk``).

**Records below k** (:func:`k_anonymity_violations`, sdcMicro's ``kAnon_violations``): the records whose
frequency is below ``k``, ``f_i < k`` (weighted: ``F_i < k``, as sdcMicro's ``weighted = TRUE``).

**Cells below k** (:func:`risky_cells`, sdcMicro's ``riskyCells`` with ``useIdentificationLevel = FALSE``): for
every combination of 1 to ``max_dim`` of the keys, the cells of its table (the combinations of values that
occur in the file, so never an empty cell) whose count is below ``k``.  sdcMicro's ``threshold`` ``t`` marks a
cell unsafe when its count is at most ``t`` (``N <= threshold``): ``k`` here is ``t + 1``.  sdcMicro groups a
missing value as a value of its own (``data.table``'s ``by``): ``missing="own"``.  Under ``missing="any"`` a
cell is a combination of present values, and its count the records that agree with it (a record missing on a
key of the table counts in every cell it agrees with); a combination with a missing value is no cell.
sdcMicro's ``useIdentificationLevel = TRUE`` tabulates up to as many keys as there are distinct levels, every
combination of them (the mu-Argus rule that drops some combinations is commented out in its code): that is
``max_dim`` = the number of distinct levels here.

**l-diversity** (:func:`l_diversity`, sdcMicro's ``ldiversity``): for every equivalence class of the keys (the
records that agree with a record), the number of distinct values of a sensitive variable (*distinct l*) and
``exp`` of the entropy of their distribution (*entropy l*, ``exp(-sum p log p)``; at most the distinct l, equal
when the values are equally frequent).  A missing sensitive value is no value: it is left out of the
distribution (a class whose sensitive values are all missing has distinct l 0 and entropy l 0).  Under
``missing="any"`` a record's class is the records that agree with it, as for its frequency.

These functions read no file: :func:`assess` (``pramkit risk --k-anonymity K`` / ``--l-diversity S``) reads one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError

__all__ = ["KAnonymity", "LDiversity", "RiskyCells", "SensitiveDiversity", "assess", "k_anonymity_violations",
           "key_codes", "l_diversity", "record_frequencies", "risky_cells"]

#: The rules for a missing key value.
MISSING_RULES = ("own", "any")
#: The most tables :func:`risky_cells` counts (combinations of keys).
MAX_TABLES = 100_000


# ----------------------------------------------------------------- counting

def record_frequencies(codes: np.ndarray, missing: str = "any", strata: np.ndarray | None = None) -> np.ndarray:
    """The frequency ``f_i`` of every record: the records (itself included, in its stratum) that agree with it
    on every key (module docstring).

    Parameters
    ----------
    codes : numpy.ndarray
        ``(records, keys)`` integer codes, ``-1`` for a missing value.
    missing : str
        ``"any"``: a missing value matches any value; ``"own"``: it is a value of its own.
    strata : numpy.ndarray, optional
        One integer per record: frequencies are counted within each stratum.

    Returns
    -------
    numpy.ndarray
        One count per record.

    Examples
    --------
    >>> x = np.array([[0, 0], [0, 1], [0, -1], [1, 1]])
    >>> record_frequencies(x, "any").tolist(), record_frequencies(x, "own").tolist()
    ([2, 2, 3, 1], [1, 1, 1, 1])
    """
    return np.rint(weighted_frequencies(codes, None, missing, strata)).astype(np.int64)


def weighted_frequencies(codes: np.ndarray, weights: np.ndarray | None, missing: str = "any",
                         strata: np.ndarray | None = None) -> np.ndarray:
    """The sum of the weights of the records that agree with each record (sdcMicro's ``Fk``; all weights 1: the
    frequency ``f_i``).

    Examples
    --------
    >>> weighted_frequencies(np.array([[0], [0], [1]]), np.array([2.0, 3.0, 4.0]), "own").tolist()
    [5.0, 5.0, 4.0]
    """
    codes = np.asarray(codes, dtype=np.int64)
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, dtype=float)
    out = np.zeros(len(codes), dtype=float)
    groups = [np.arange(len(codes))] if strata is None else [np.flatnonzero(strata == s) for s in np.unique(strata)]
    for rows in groups:
        if len(rows) == 0:
            continue
        combos, inverse = np.unique(codes[rows], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        sums = np.bincount(inverse, weights=w[rows], minlength=len(combos))
        if missing == "own" or combos.shape[1] == 0:
            out[rows] = sums[inverse]
        else:
            out[rows] = (agree(combos, combos) @ sums)[inverse]
    return out


def agree(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[i]`` agrees with ``b[j]`` under ``"any"``: on every key equal, or missing in one of them.

    Examples
    --------
    >>> agree(np.array([[0, -1]]), np.array([[0, 1], [1, 1]])).tolist()
    [[True, False]]
    """
    ok = np.ones((len(a), len(b)), dtype=bool)
    for v in range(a.shape[1]):
        x, y = a[:, v][:, None], b[:, v][None, :]
        ok &= (x == y) | (x < 0) | (y < 0)
    return ok


def key_codes(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """The keys of ``frame`` as integer codes, ``-1`` for a missing value (each key's values as they are: ``1``
    and ``"1"`` are one value once written as text).

    Examples
    --------
    >>> key_codes(pd.DataFrame({"a": ["x", None, "y", "x"]}), ["a"]).ravel().tolist()
    [0, -1, 1, 0]
    """
    out = np.empty((len(frame), len(keys)), dtype=np.int64)
    for j, key in enumerate(keys):
        values = frame[key]
        present = values.notna().to_numpy()
        codes = np.full(len(frame), -1, dtype=np.int64)
        if present.any():
            codes[present] = pd.factorize(values[present].astype(str), sort=True)[0]
        out[:, j] = codes
    return out


def _check_k(k: Any, what: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ParameterError(f"{what} must be a whole number of at least 2, got {k!r}")
    return int(k)


def _check_missing(missing: str) -> str:
    if missing not in MISSING_RULES:
        raise ParameterError(f"the missing rule must be one of {', '.join(MISSING_RULES)}, got {missing!r}")
    return missing


def check_columns(names: Sequence[str], columns: Sequence[str], what: str, *, flag: str | None = None,
                  where: str = "the file", noun: str | None = None) -> list[str]:
    """``names``, checked: at least one, each once, each a column of ``where``.

    ``what`` names one of them in a message (``"key"``), ``noun`` what one names at least (default ``what``),
    ``flag`` the option that gives them (``"--keys"``).

    Examples
    --------
    >>> check_columns([" a", "b"], ["a", "b", "c"], "key")
    ['a', 'b']
    >>> check_columns(["a", "a"], ["a"], "key", flag="--keys")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: key 'a' is named twice in --keys
    """
    names = [str(n).strip() for n in names if str(n).strip()]
    if not names:
        raise ParameterError(f"name at least one {noun or what}" + (f" ({flag} A,B)" if flag else ""))
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ParameterError(f"{what} {twice[0]!r} is named twice" + (f" in {flag}" if flag else ""))
    absent = [n for n in names if n not in columns]
    if absent:
        raise ParameterError(f"{what} {absent[0]!r} is not a column of {where} (its columns: "
                             f"{', '.join(map(str, columns))})")
    return names




def _strata(frame: pd.DataFrame, strata: Sequence[str] | str | None, keys: Sequence[str]) -> tuple[list[str], np.ndarray | None]:
    if strata is None:
        return [], None
    names = check_columns([strata] if isinstance(strata, str) else list(strata), list(frame.columns), "stratum")
    both = [s for s in names if s in keys]
    if both:
        raise ParameterError(f"stratum {both[0]!r} is also a key")
    groups = frame[names].astype(str).where(frame[names].notna(), "\x00").agg("\x1f".join, axis=1)
    return names, pd.factorize(groups)[0]


# ----------------------------------------------------------------- records below k

@dataclass(frozen=True, eq=False)
class KAnonymity:
    """The records whose combination of the keys is shared by fewer than k records (sdcMicro's
    ``kAnon_violations``).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    k : int
        The k of k-anonymity.
    missing : str
        The rule for a missing key value: own (a value of its own) or any (it matches any value).
    strata : tuple of str
        Columns whose combinations are strata: frequencies counted within each.
    records : int
        The records of the file.
    violating : int
        Records whose frequency (records agreeing with it on the keys, itself included) is below k.
    smallest : int
        The smallest frequency (0 for an empty file).
    combinations : int
        Distinct combinations of the keys (within the strata).
    combinations_below : int
        Distinct combinations whose frequency is below k.
    weights : str or None
        The weight column, when the weighted count was asked.
    weighted_violating : int or None
        Records whose weighted frequency (the sum of the weights of the records agreeing with it, sdcMicro's
        Fk) is below k; null without weights.
    rows : numpy.ndarray
        The positions (0-based) of the violating records.
    frequencies : numpy.ndarray
        Every record's frequency.
    """

    keys: tuple[str, ...]
    k: int
    missing: str
    strata: tuple[str, ...]
    records: int
    violating: int
    smallest: int
    combinations: int
    combinations_below: int
    weights: str | None
    weighted_violating: int | None
    rows: np.ndarray
    frequencies: np.ndarray

    @property
    def share(self) -> float:
        """The violating records' share of the records (0 for an empty file)."""
        return self.violating / self.records if self.records else 0.0

    def to_dict(self) -> ViolationsJSON:
        """The figures as plain JSON values (not the rows nor the frequencies)."""
        return {"k": self.k, "records": self.records, "violating": self.violating, "share": self.share,
                "smallest": self.smallest, "combinations": self.combinations,
                "combinations_below": self.combinations_below, "weights": self.weights,
                "weighted_violating": self.weighted_violating}


def k_anonymity_violations(frame: pd.DataFrame, keys: Sequence[str], k: int, *, missing: str = "own",
                           strata: Sequence[str] | str | None = None, weights: str | None = None) -> KAnonymity:
    """The records below k (module docstring): how many, and which.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records; a missing value is a null.
    keys : sequence of str
        The key variables.
    k : int
        At least 2.
    missing : {"own", "any"}
        The rule for a missing key value.
    strata : str or sequence of str, optional
        Columns whose combinations are strata (none a key).
    weights : str, optional
        A weight column: also count the records whose weighted frequency is below k.

    Returns
    -------
    KAnonymity

    Examples
    --------
    >>> df = pd.DataFrame({"a": ["x", "x", "y", None], "b": ["p", "p", "p", "p"]})
    >>> r = k_anonymity_violations(df, ["a", "b"], 2)
    >>> r.violating, r.rows.tolist(), r.frequencies.tolist()
    (2, [2, 3], [2, 2, 1, 1])
    >>> k_anonymity_violations(df, ["a", "b"], 2, missing="any").rows.tolist()
    []
    """
    k = _check_k(k)
    missing = _check_missing(missing)
    keys = check_columns(keys, list(frame.columns), "key")
    stratum, groups = _strata(frame, strata, keys)
    codes = key_codes(frame, keys)
    f = record_frequencies(codes, missing, groups)
    weighted = None
    if weights is not None:
        (weights,) = check_columns([weights], list(frame.columns), "weight column")
        w = pd.to_numeric(frame[weights], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(w).all() or (w < 0).any():
            raise DataError(f"the weight column {weights!r} has a missing, negative or non-numeric value")
        weighted = int((weighted_frequencies(codes, w, missing, groups) < k).sum())
    ids = codes if groups is None else np.column_stack([groups, codes])
    combos, first = (np.unique(ids, axis=0, return_index=True) if len(ids) else (ids, np.zeros(0, dtype=int)))
    rows = np.flatnonzero(f < k)
    return KAnonymity(keys=tuple(keys), k=k, missing=missing, strata=tuple(stratum), records=len(frame),
                      violating=len(rows), smallest=int(f.min()) if len(f) else 0, combinations=len(combos),
                      combinations_below=int((f[first] < k).sum()), weights=weights, weighted_violating=weighted,
                      rows=rows, frequencies=f)


# ----------------------------------------------------------------- cells below k

@dataclass(frozen=True, eq=False)
class RiskyCells:
    """The cells below k of every table of 1 to ``max_dim`` keys (sdcMicro's ``riskyCells``).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    k : int
        A cell is unsafe when its count is below k (sdcMicro's threshold k - 1: a count at most the threshold).
    max_dim : int
        The most keys in a table.
    missing : str
        The rule for a missing key value: own (a value of its own, as sdcMicro) or any.
    tables : pandas.DataFrame
        One row per table: ``variables`` (a tuple of keys), ``dim``, ``cells`` (its unsafe cells) and ``records``
        (the records in them).
    cells : pandas.DataFrame
        One row per unsafe cell: ``variables``, ``values`` (tuples, None for a missing value) and ``count``.
    """

    keys: tuple[str, ...]
    k: int
    max_dim: int
    missing: str
    tables: pd.DataFrame
    cells: pd.DataFrame

    @property
    def unsafe(self) -> int:
        """The unsafe cells of every table."""
        return int(self.tables["cells"].sum())

    def to_dict(self) -> RiskyCellsJSON:
        """The tables as plain JSON values (not the cells' values)."""
        return {"k": self.k, "max_dim": self.max_dim, "unsafe_cells": self.unsafe,
                "tables": [{"variables": list(v), "dim": int(d), "cells": int(c), "records": int(r)}
                           for v, d, c, r in self.tables[["variables", "dim", "cells", "records"]].itertuples(
                               index=False)]}


def risky_cells(frame: pd.DataFrame, keys: Sequence[str], k: int, *, max_dim: int | None = None,
                missing: str = "own") -> RiskyCells:
    """The cells with a count below ``k`` of every table of 1 to ``max_dim`` of the keys (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records; a missing value is a null.
    keys : sequence of str
        The key variables.
    k : int
        At least 2 (sdcMicro's ``threshold`` is ``k - 1``).
    max_dim : int, optional
        The most keys in a table (sdcMicro's ``maxDim``; default all of them).
    missing : {"own", "any"}
        The rule for a missing key value.

    Returns
    -------
    RiskyCells

    Examples
    --------
    >>> df = pd.DataFrame({"a": ["x", "x", "y"], "b": ["p", "q", "q"]})
    >>> r = risky_cells(df, ["a", "b"], 2)
    >>> r.tables[["dim", "cells", "records"]].values.tolist(), r.unsafe
    ([[1, 1, 1], [1, 1, 1], [2, 3, 3]], 5)
    >>> r.cells.to_dict(orient="records")[0]
    {'variables': ('a',), 'values': ('y',), 'count': 1}
    """
    k = _check_k(k)
    missing = _check_missing(missing)
    keys = check_columns(keys, list(frame.columns), "key")
    top = len(keys) if max_dim is None else max_dim
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or not 1 <= top <= len(keys):
        raise ParameterError(f"the largest table must have 1 to {len(keys)} keys (the number of keys), got {max_dim!r}")
    if sum(math.comb(len(keys), d) for d in range(1, top + 1)) > MAX_TABLES:
        raise ParameterError(f"{len(keys)} keys up to {top} at a time make more than {MAX_TABLES} tables; "
                             "give a smaller largest table (--max-dim)")
    codes = key_codes(frame, keys)
    labels = [pd.factorize(frame[key][frame[key].notna()].astype(str), sort=True)[1] for key in keys]
    tables, cells = [], []
    for dim in range(1, int(top) + 1):
        for combo in itertools.combinations(range(len(keys)), dim):
            values, counts = _cells(codes[:, list(combo)], missing)
            below = counts < k
            names = tuple(keys[j] for j in combo)
            tables.append((names, dim, int(below.sum()), int(counts[below].sum())))
            cells += [(names, tuple(None if c < 0 else str(labels[j][c]) for j, c in zip(combo, row)), int(n))
                      for row, n in zip(values[below], counts[below])]
    return RiskyCells(keys=tuple(keys), k=k, max_dim=int(top), missing=missing,
                      tables=pd.DataFrame(tables, columns=["variables", "dim", "cells", "records"]),
                      cells=pd.DataFrame(cells, columns=["variables", "values", "count"]))


def _cells(codes: np.ndarray, missing: str) -> tuple[np.ndarray, np.ndarray]:
    """The cells of one table (its combinations that occur; under ``"any"`` only those without a missing value)
    and their counts."""
    if len(codes) == 0:
        return codes, np.zeros(0, dtype=np.int64)
    combos, counts = np.unique(codes, axis=0, return_counts=True)
    if missing == "own":
        return combos, counts
    whole = (combos >= 0).all(axis=1)
    return combos[whole], (agree(combos[whole], combos) @ counts).astype(np.int64)


# ----------------------------------------------------------------- l-diversity

@dataclass(frozen=True, eq=False)
class SensitiveDiversity:
    """The l-diversity of one sensitive variable.

    Parameters
    ----------
    sensitive : str
        The sensitive variable.
    smallest_distinct : int
        The smallest distinct l of a class (0 for an empty file).
    smallest_entropy : float
        The smallest entropy l of a class.
    records_below : int
        Records in a class whose distinct l is below l.
    classes_below : int
        Classes (distinct combinations of the keys) whose distinct l is below l.
    records_below_entropy : int
        Records in a class whose entropy l is below l.
    distinct : numpy.ndarray
        Every record's class's distinct l.
    entropy : numpy.ndarray
        Every record's class's entropy l.
    """

    sensitive: str
    smallest_distinct: int
    smallest_entropy: float
    records_below: int
    classes_below: int
    records_below_entropy: int
    distinct: np.ndarray
    entropy: np.ndarray

    def to_dict(self) -> SensitiveJSON:
        """The figures as plain JSON values (not the per-record arrays)."""
        return {"sensitive": self.sensitive, "smallest_distinct": self.smallest_distinct,
                "smallest_entropy": self.smallest_entropy, "records_below": self.records_below,
                "classes_below": self.classes_below, "records_below_entropy": self.records_below_entropy}


@dataclass(frozen=True, eq=False)
class LDiversity:
    """The l-diversity of sensitive variables within the classes of the keys (sdcMicro's ``ldiversity``).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    l : int
        The threshold: a class is below it when it has fewer than l distinct sensitive values.
    missing : str
        The rule for a missing key value.
    classes : pandas.DataFrame
        One row per class (distinct combination of the keys): the keys, ``records``, and per sensitive variable
        ``S_distinct`` and ``S_entropy``.
    sensitive : tuple of SensitiveDiversity
        Per sensitive variable, its figures.
    """

    keys: tuple[str, ...]
    l: int
    missing: str
    classes: pd.DataFrame
    sensitive: tuple[SensitiveDiversity, ...]

    def to_dict(self) -> LDiversityJSON:
        """The figures as plain JSON values (not the classes)."""
        return {"l": self.l, "classes": len(self.classes), "sensitive": [s.to_dict() for s in self.sensitive]}


def l_diversity(frame: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str] | str, *, l: int = 2,
                missing: str = "own") -> LDiversity:
    """Distinct and entropy l of each sensitive variable in every class of the keys (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records; a missing value is a null.
    keys : sequence of str
        The key variables.
    sensitive : str or sequence of str
        The sensitive variables, none a key.
    l : int
        The threshold of :attr:`SensitiveDiversity.records_below` (at least 2).
    missing : {"own", "any"}
        The rule for a missing key value.

    Returns
    -------
    LDiversity

    Examples
    --------
    >>> df = pd.DataFrame({"a": ["x", "x", "x", "y"], "s": ["1", "2", "2", "1"]})
    >>> r = l_diversity(df, ["a"], "s")
    >>> r.classes.round(4).values.tolist()
    [['x', 3, 2, 1.8899], ['y', 1, 1, 1.0]]
    >>> r.sensitive[0].records_below, r.sensitive[0].smallest_distinct
    (1, 1)
    """
    l = _check_k(l, "l")
    missing = _check_missing(missing)
    keys = check_columns(keys, list(frame.columns), "key")
    names = check_columns([sensitive] if isinstance(sensitive, str) else list(sensitive), list(frame.columns),
                           "sensitive variable")
    both = [s for s in names if s in keys]
    if both:
        raise ParameterError(f"the sensitive variable {both[0]!r} is also a key: name it in one of --keys and "
                             "--l-diversity")
    codes = key_codes(frame, keys)
    if len(frame):
        combos, first, inverse, sizes = np.unique(codes, axis=0, return_index=True, return_inverse=True,
                                                  return_counts=True)
    else:
        combos, first, inverse, sizes = codes, np.zeros(0, int), np.zeros(0, int), np.zeros(0, int)
    inverse = inverse.reshape(-1)
    mix = None if missing == "own" else agree(combos, combos).astype(float)  # "own": each class its own
    table = frame.iloc[first][keys].reset_index(drop=True)
    table["records"] = sizes if mix is None else (mix @ sizes).astype(np.int64)
    out = []
    for s in names:
        distinct, entropy = _diversity(frame[s], inverse, len(combos), mix)
        table[f"{s}_distinct"], table[f"{s}_entropy"] = distinct, entropy
        per_d, per_e = distinct[inverse], entropy[inverse]
        out.append(SensitiveDiversity(
            sensitive=s, smallest_distinct=int(distinct.min()) if len(distinct) else 0,
            smallest_entropy=float(entropy.min()) if len(entropy) else 0.0, records_below=int((per_d < l).sum()),
            classes_below=int((distinct < l).sum()), records_below_entropy=int((per_e < l - 1e-9).sum()),
            distinct=per_d, entropy=per_e))
    return LDiversity(keys=tuple(keys), l=l, missing=missing, classes=table, sensitive=tuple(out))


def _diversity(values: pd.Series, inverse: np.ndarray, classes: int,
               mix: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per class, the distinct l and entropy l of ``values`` (missing values left out); ``mix[c, d]``: the
    records of class ``d`` are in the class of ``c`` (None: each class alone)."""
    present = values.notna().to_numpy()
    codes = np.full(len(values), -1, dtype=np.int64)
    if present.any():
        codes[present] = pd.factorize(values[present].astype(str))[0]
    width = int(codes.max()) + 1 if present.any() else 0
    if mix is None:  # each class alone: the (class, value) pairs that occur, never a dense table
        pairs, n = np.unique(inverse[present] * np.int64(width) + codes[present], return_counts=True)
        owner = pairs // max(width, 1)
        total = np.bincount(owner, weights=n, minlength=classes)
        p = n / total[owner]
        h = np.bincount(owner, weights=-p * np.log(p), minlength=classes)
        distinct = np.bincount(owner, minlength=classes).astype(np.int64)
        return distinct, np.where(distinct > 0, np.exp(h), 0.0)
    counts = np.zeros((classes, width))
    np.add.at(counts, (inverse[present], codes[present]), 1.0)
    counts = mix @ counts
    sums = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(sums > 0, counts / np.where(sums > 0, sums, 1), 0.0)
        entropy = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1)), 0.0).sum(axis=1)
    many = (counts > 0).sum(axis=1).astype(np.int64)
    return many, np.where(many > 0, np.exp(entropy), 0.0)


# ----------------------------------------------------------------- the printed object

class ViolationsJSON(TypedDict):
    """The records below k (``pramkit risk --k-anonymity K``)."""

    k: int
    records: int
    violating: int
    share: float
    smallest: int
    combinations: int
    combinations_below: int
    weights: str | None
    weighted_violating: int | None


class CellTableJSON(TypedDict):
    """One table of 1 to max_dim keys: its unsafe cells and the records in them."""

    variables: list[str]
    dim: int
    cells: int
    records: int


class RiskyCellsJSON(TypedDict):
    """The cells below k of every table of 1 to max_dim keys (sdcMicro's riskyCells, threshold k - 1)."""

    k: int
    max_dim: int
    unsafe_cells: int
    tables: list[CellTableJSON]


class SensitiveJSON(TypedDict):
    """The l-diversity of one sensitive variable."""

    sensitive: str
    smallest_distinct: int
    smallest_entropy: float
    records_below: int
    classes_below: int
    records_below_entropy: int


class LDiversityJSON(TypedDict):
    """The l-diversity of the sensitive variables (``--l-diversity``)."""

    l: int
    classes: int
    sensitive: list[SensitiveJSON]


class KAnonymityJSON(TypedDict):
    """What ``pramkit risk --k-anonymity K`` / ``--l-diversity S --json`` prints (the JSON Schema of
    ``pramkit.risk.kanonymity`` is made from it, :mod:`pramkit.outputs`).

    Parameters
    ----------
    keys : list of str
        The key variables.
    records : int
        The records of the file.
    missing : str
        The rule for a missing key value: own (a value of its own) or any (it matches any value, sdcMicro's).
    violations : object or null
        The records below k (--k-anonymity); null without it.
    risky_cells : object or null
        The cells below k of every table of 1 to max_dim keys (--k-anonymity); null without it.
    l_diversity : object or null
        The distinct and entropy l of each sensitive variable (--l-diversity); null without it.
    """

    keys: list[str]
    records: int
    missing: str
    violations: ViolationsJSON | None
    risky_cells: RiskyCellsJSON | None
    l_diversity: LDiversityJSON | None


@dataclass(frozen=True, eq=False)
class Assessment:
    """What :func:`assess` measured: the records and cells below k, and the l-diversity (each None when not
    asked)."""

    keys: tuple[str, ...]
    records: int
    missing: str
    violations: KAnonymity | None
    cells: RiskyCells | None
    diversity: LDiversity | None

    def to_dict(self) -> KAnonymityJSON:
        """The object ``pramkit risk --k-anonymity K --json`` prints (without its format and version)."""
        return {"keys": list(self.keys), "records": self.records, "missing": self.missing,
                "violations": None if self.violations is None else self.violations.to_dict(),
                "risky_cells": None if self.cells is None else self.cells.to_dict(),
                "l_diversity": None if self.diversity is None else self.diversity.to_dict()}


def assess(data: str | Path | pd.DataFrame, keys: Sequence[str], *, k: int | None = None,
           sensitive: Sequence[str] = (), l: int = 2, max_dim: int | None = None,
           missing: str = "own", weights: str | None = None, na_values: Sequence[str] = NA_VALUES,
           sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> Assessment:
    """Read a file (or take a frame) and measure the records and cells below ``k`` and the l-diversity of
    ``sensitive`` (``pramkit risk --k-anonymity K --l-diversity S``).

    Raises
    ------
    ParameterError
        ``k`` or ``l`` below 2, neither asked, a key or a sensitive variable not a column, a sensitive variable
        among the keys (before the file is read, where it can be told without it).

    Examples
    --------
    >>> df = pd.DataFrame({"a": ["x", "x", "y"], "s": ["1", "2", "1"]})
    >>> a = assess(df, ["a"], k=2, sensitive=["s"])
    >>> a.violations.violating, a.cells.unsafe, a.diversity.sensitive[0].records_below
    (1, 1, 1)
    """
    if k is None and not sensitive:
        raise ParameterError("ask for --k-anonymity K or --l-diversity SENSITIVE")
    if k is not None:
        _check_k(k)
    _check_k(l, "l")
    _check_missing(missing)
    both = [s for s in sensitive if s in keys]
    if both:
        raise ParameterError(f"the sensitive variable {both[0]!r} is also a key: name it in one of --keys and "
                             "--l-diversity")
    if isinstance(data, pd.DataFrame):
        frame = data
    else:
        from pramkit.io import read_table

        frame = read_table(data, na_values=na_values, sep=sep, encoding=encoding)
    keys = check_columns(keys, list(frame.columns), "key")
    return Assessment(
        keys=tuple(keys), records=len(frame), missing=missing,
        violations=None if k is None else k_anonymity_violations(frame, keys, k, missing=missing, weights=weights),
        cells=None if k is None else risky_cells(frame, keys, k, max_dim=max_dim, missing=missing),
        diversity=l_diversity(frame, keys, list(sensitive), l=l, missing=missing) if sensitive else None)
