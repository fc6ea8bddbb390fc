"""The households of a file, read in chunks: their geography, similarity profiles and risk.

One pass over the columns the swap needs (household id, the levels of the
geography, the risk and similarity variables) keeps, per person, the household
number (eight bytes) and the code of each risk variable (four bytes); the
geography and the similarity profiles are kept per household, from the
household's first record, and each chunk's records are checked against them as
they are read.  The file itself is never held.  Households are numbered by their
first record in file order, and their members need not be adjacent: the id is
coded over the whole file, so a household split across chunks (or across the
file) is still one household.  A household's similarity profile is the values
of its first record; its geography must be the same on every record.

Values are read as every command reads them (:func:`pramkit.io.iter_batches`), and the
spelling rule of design and risk holds here too: two values of a level of the geography,
a risk variable or a similarity variable that are one value spelled two ways (surrounding
whitespace, NFC and NFD, ``3`` and ``3.0``: :func:`pramkit.codebook.spelling_clash`)
stop the swap with one line naming both spellings and their first rows, instead of making
two areas or two categories of one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.codebook import spelling_clash, spelling_error
from pramkit.errors import DataError


class Coder:
    """Codes 0, 1, ... for the values of one column over a whole file, in order of first appearance.

    Missing values get code -1.  :attr:`labels` holds the values, as Arrow, for writing them back,
    and :meth:`first_rows` the row (from 0, over every value encoded) where each first appeared.

    Examples
    --------
    >>> c = Coder("region")
    >>> c.encode(pa.array(["b", "a", None, "b"])).tolist(), c.encode(pa.array(["c", "a"])).tolist()
    ([0, 1, -1, 0], [2, 1])
    >>> c.labels.to_pylist(), c.first_rows().tolist(), c.first_rows(2).tolist()
    (['b', 'a', 'c'], [0, 1, 4], [4])
    """

    def __init__(self, column: str) -> None:
        self.column = column
        self._known = pd.Index([], dtype=object)
        self._chunks: list[pa.Array] = []
        self._first: list[np.ndarray] = []
        self._rows = 0

    def encode(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """The codes of a chunk's values (int64; -1 for missing)."""
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        enc = pc.dictionary_encode(arr)
        words = enc.dictionary
        plain = pd.Index(words.to_numpy(zero_copy_only=False))
        if not len(self._known):
            self._known = plain[:0]
        found = self._known.get_indexer(plain)
        new = np.flatnonzero(found < 0)
        if new.size:
            found[new] = len(self._known) + np.arange(new.size)
            self._known = self._known.append(plain[new])
            self._chunks.append(words.take(pa.array(new)))
        lookup = np.append(found, -1).astype(np.int64)
        idx = enc.indices.fill_null(len(lookup) - 1).to_numpy(zero_copy_only=False)
        if new.size:
            seen, first = np.unique(idx, return_index=True)
            self._first.append(self._rows + first[np.searchsorted(seen, new)])
        self._rows += len(arr)
        return lookup[idx]

    def first_rows(self, since: int = 0) -> np.ndarray:
        """The row where each value of code ``since`` on first appeared (int64, by code)."""
        parts, before = [], len(self)
        for part in reversed(self._first):
            if before <= since:
                break
            parts.append(part)
            before -= part.size
        rows = np.concatenate(parts[::-1]) if parts else np.zeros(0, dtype=np.int64)
        return rows[since - before:]

    @property
    def labels(self) -> pa.Array:
        """Every value seen, by code."""
        if not self._chunks:
            return pa.array([], pa.string())
        first = self._chunks[0].type
        return pa.concat_arrays([c.cast(first) for c in self._chunks])

    def __len__(self) -> int:
        return len(self._known)


@dataclass(frozen=True)
class SwapHouseholds:
    """The households of a file, as the swap reads them.

    Parameters
    ----------
    member : numpy.ndarray of int64
        Person (file row) -> household number.
    geo : numpy.ndarray of int64, shape (L, H)
        Each household's area code at each level (highest first).
    labels : tuple of pyarrow.Array
        Each level's area values, by code.
    parents : tuple of numpy.ndarray
        For each level below the first, area code -> the code of the area above it.
    profiles : list of numpy.ndarray
        Each similarity profile's code per household.
    risky_level : numpy.ndarray of int64
        The highest level at which the household is risky (``L``: not risky).
    weight : numpy.ndarray of float
        The household's sampling weight (largest ``1 / count`` of its members at the lowest level).
    ids : pyarrow.Array
        The household ids, by household number.
    level_weight : numpy.ndarray of float, shape (L, H), optional
        The household's risk at each level (largest ``1 / count`` of its members' cells area of
        the level x risk variables; 1 without risk variables): the donor weights of the rule
        ``any-area``.  Default: ``weight`` at every level.
    """

    member: np.ndarray
    geo: np.ndarray
    labels: tuple[pa.Array, ...]
    parents: tuple[np.ndarray, ...]
    profiles: list[np.ndarray]
    risky_level: np.ndarray
    weight: np.ndarray
    ids: pa.Array
    level_weight: np.ndarray | None = None

    @property
    def donor_weight(self) -> np.ndarray:
        """The household's risk at each level, shape (L, H) (:attr:`level_weight`, or ``weight`` at every level)."""
        if self.level_weight is not None:
            return self.level_weight
        return np.broadcast_to(self.weight, self.geo.shape)

    @property
    def count(self) -> int:
        """Households."""
        return int(self.geo.shape[1])

    @property
    def sizes(self) -> np.ndarray:
        """Persons per household."""
        return np.bincount(self.member, minlength=self.count)


def read_households(tables: Iterable[pa.Table], hid: str, geo: Sequence[str], risk_vars: Sequence[str],
                    similar: Sequence[Sequence[str]], k: int, where: str) -> SwapHouseholds:
    """Households from a file's chunks (see the module's rules).

    Parameters
    ----------
    tables : iterable of pyarrow.Table
        The chunks, in file order (missing values as nulls).
    hid : str
        The household id column.
    geo : sequence of str
        The levels of the geography, highest first.
    risk_vars : sequence of str
        The risk variables (k-anonymity); none: no household is risky and every weight is 1.
    similar : sequence of sequence of str
        The similarity profiles.
    k : int
        The k-anonymity threshold.
    where : str
        How messages name the file.

    Returns
    -------
    SwapHouseholds

    Raises
    ------
    DataError
        No data rows, a missing household id or area, a level not nested in the one above,
        or a household whose members live in different areas.

    Examples
    --------
    >>> t = pa.table({"hid": [1, 1, 2, 3], "region": ["N", "N", "S", "S"], "size": [2, 2, 1, 1]})
    >>> h = read_households([t], "hid", ["region"], [], [["size"]], 3, "t")
    >>> h.count, h.geo.tolist(), h.profiles[0].tolist(), h.risky_level.tolist()
    (3, [[0, 1, 1]], [0, 1, 1], [1, 1, 1])
    """
    hid_coder, geo_coders = Coder(hid), [Coder(c) for c in geo]
    risk_coders = [Coder(c) for c in risk_vars]
    sim_cols = list(dict.fromkeys(c for profile in similar for c in profile))
    sim_coders = [Coder(c) for c in sim_cols]
    member_parts: list[np.ndarray] = []
    risk_parts: list[list[np.ndarray]] = [[] for _ in risk_coders]  # per variable, its chunks' codes
    hh_geo = np.zeros((len(geo), 0), dtype=np.int64)  # room for more households than are known
    hh_sim = np.zeros((len(sim_cols), 0), dtype=np.int64)
    moved = None  # the first record whose area is not its household's: (row, household)
    start = 0
    for table in tables:
        households = len(hid_coder)
        member = hid_coder.encode(table.column(hid))
        codes = _codes(geo_coders, table)
        for column, c in zip(geo, codes):
            bad = np.flatnonzero(c < 0)
            if bad.size:
                raise DataError(f"{where}: geography column {column!r} is missing on row {start + int(bad[0]) + 1}; "
                                "every record needs its area at every level")
        bad = np.flatnonzero(member < 0)
        if bad.size:
            raise DataError(f"{where}: household id {hid!r} is missing on row {start + int(bad[0]) + 1}")
        first = hid_coder.first_rows(households) - start  # the new households' first records in the chunk
        hh_geo = _placed(hh_geo, households, codes[:, first])
        hh_sim = _placed(hh_sim, households, _codes(sim_coders, table)[:, first])
        away = np.flatnonzero((codes != hh_geo[:, member]).any(axis=0))
        if away.size and moved is None:
            moved = (start + int(away[0]), int(member[away[0]]))
        member_parts.append(member)
        for coder, parts in zip(risk_coders, risk_parts):
            parts.append(_narrow(coder.encode(table.column(coder.column)), len(coder)))
        start += table.num_rows
    if start == 0:
        raise DataError(f"{where} has no data rows")
    member = _joined(member_parts)
    combined = _combined([_joined(parts) for parts in risk_parts]) if risk_vars else None
    _check_spellings([*geo_coders, *risk_coders, *sim_coders], where)
    if moved is not None:
        raise DataError(f"{where}: household {hid_coder.labels[moved[1]].as_py()!r} lives in more than one "
                        f"area (row {moved[0] + 1}); a household's members must share every level of the geography "
                        f"({', '.join(geo)}): check the household id")
    n_hh = len(hid_coder)
    hh_geo, hh_sim = np.ascontiguousarray(hh_geo[:, :n_hh]), hh_sim[:, :n_hh]
    parents = tuple(_parents(hh_geo[h - 1], hh_geo[h], geo[h - 1], geo[h], geo_coders, where)
                    for h in range(1, len(geo)))
    sim_codes = dict(zip(sim_cols, hh_sim))
    profiles = [_profile([sim_codes[c] for c in profile]) for profile in similar]
    risky, level_weight = _risk(member, hh_geo, combined, k, n_hh)
    return SwapHouseholds(member=member, geo=hh_geo, labels=tuple(c.labels for c in geo_coders), parents=parents,
                      profiles=profiles, risky_level=risky, weight=level_weight[-1], ids=hid_coder.labels,
                      level_weight=level_weight)


def _codes(coders: Sequence[Coder], table: pa.Table) -> np.ndarray:
    """A chunk's codes of each coder's column, one row per column (int64, -1 for missing)."""
    out = np.empty((len(coders), table.num_rows), dtype=np.int64)
    for i, coder in enumerate(coders):
        out[i] = coder.encode(table.column(coder.column))
    return out


def _placed(held: np.ndarray, count: int, new: np.ndarray) -> np.ndarray:
    """``held`` (one column per household, the first ``count`` known) with the columns ``new`` from ``count`` on;
    its room doubles when it runs out, so that chunks of few rows do not copy it once each."""
    end = count + new.shape[1]
    if end > held.shape[1]:
        grown = np.empty((held.shape[0], max(end, 2 * held.shape[1])), dtype=held.dtype)
        grown[:, :count] = held[:, :count]
        held = grown
    held[:, count:end] = new
    return held


def _narrow(codes: np.ndarray, values: int) -> np.ndarray:
    """A chunk's codes of a column of ``values`` values as int32 when they fit (half the bytes held per person)."""
    return codes.astype(np.int32) if values < np.iinfo(np.int32).max else codes


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The chunks' arrays as one, the list emptied (each chunk's array freed as soon as it is copied)."""
    joined = np.concatenate(parts)
    parts.clear()
    return joined


def _check_spellings(coders: Sequence[Coder], where: str) -> None:
    """The spelling rule of design and risk (module docstring) on each column's distinct values, with the
    first row (from 1) of each spelling.

    Examples
    --------
    >>> c = Coder("area")
    >>> codes = c.encode(pa.array(["N1", "N2", " N1"]))
    >>> _check_spellings([c], "'d.csv'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: 'd.csv': column 'area': 'N1' (row 1) and ' N1' (row 3) are one value spelled two ways (surrounding whitespace); pramkit does not guess which spelling is meant: write the value one way in the data
    """
    for coder in coders:
        labels = coder.labels.to_pylist()
        clash = spelling_clash(labels)
        if clash is not None:
            first = coder.first_rows()
            rows = tuple(int(first[labels.index(label)]) + 1 for label in clash[:2])
            raise DataError(f"{where}: {spelling_error(coder.column, clash, (rows[0], rows[1]))}")


def _parents(upper: np.ndarray, lower: np.ndarray, up_name: str, low_name: str, coders: list[Coder],
             where: str) -> np.ndarray:
    """Area of the lower level -> its area above; a lower area under two upper ones is refused."""
    size = int(lower.max()) + 1
    parent = np.full(size, -1, dtype=np.int64)
    parent[lower] = upper
    clash = np.flatnonzero(parent[lower] != upper)
    if clash.size:
        i = int(clash[0])
        area = next(c for c in coders if c.column == low_name).labels[int(lower[i])].as_py()
        raise DataError(f"{where}: level {low_name!r} is not nested in {up_name!r}: its value {area!r} lies in "
                        f"more than one value of {up_name!r}; give the levels highest first, each inside the one before (or make the "
                        "lower codes unique)")
    return parent


def _profile(columns: list[np.ndarray]) -> np.ndarray:
    """One code per household for the combination of a profile's columns (missing is a value)."""
    return _combined(columns) if columns else np.zeros(0, dtype=np.int64)


def _combined(columns: list[np.ndarray]) -> np.ndarray:
    """Codes (-1 for missing) of several columns as one code 0, 1, ... per combination present."""
    code = np.zeros(columns[0].size, dtype=np.int64)
    for c in columns:
        code = _ranks(code * (int(c.max()) + 2) + (c + 1))  # keep the range small
    return code


def _ranks(code: np.ndarray) -> np.ndarray:
    """Each code's rank among the distinct codes (int64, the inverse of ``np.unique``): marked in a table of
    the codes' range when it is no longer than about two per code, without sorting (five copies of the codes).

    Examples
    --------
    >>> _ranks(np.array([7, 3, 7, 10])).tolist(), _ranks(np.array([0, 1 << 40])).tolist()
    ([1, 0, 1, 2], [0, 1])
    """
    top = int(code.max()) + 1
    if top > 2 * code.size + (1 << 16):
        return np.unique(code, return_inverse=True)[1].reshape(-1).astype(np.int64)
    present = np.zeros(top, dtype=bool)
    present[code] = True
    return (np.cumsum(present, dtype=np.int64) - 1)[code]


def _risk(member: np.ndarray, hh_geo: np.ndarray, combined: np.ndarray | None, k: int,
          n_hh: int) -> tuple[np.ndarray, np.ndarray]:
    """Households' highest risky level (k-anonymity of area x risk variables, ``combined`` coding each person's
    risk variables as one, none without them) and their risk at each level (the largest ``1 / count`` of their
    members; the last row is the sampling weight)."""
    levels = hh_geo.shape[0]
    risky = np.full(n_hh, levels, dtype=np.int64)
    weight = np.ones((levels, n_hh))
    if combined is None:
        return risky, weight
    span = int(combined.max()) + 1
    for h in range(levels - 1, -1, -1):
        cell = hh_geo[h][member] * span + combined
        count = np.bincount(cell)[cell]
        small = np.zeros(n_hh, dtype=bool)
        small[member[count < k]] = True
        risky[small] = h
        weight[h] = 0.0
        np.maximum.at(weight[h], member, 1.0 / count)
    return risky, weight
