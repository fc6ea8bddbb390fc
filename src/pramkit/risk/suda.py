"""SUDA2: minimal sample uniques and special-uniques scores (Elliot et al.; Manning, Haglin and Keane 2008).

A *minimal sample unique* (MSU) of a record is a set of key variables whose
value combination is unique in the file (the record is the only one with
those values) while none of its proper subsets is unique.  A record with
small MSUs is a "special unique": few of its values single it out.

Scores, with ``ATT`` the number of key variables and ``k`` the size of an MSU:

* ``scores``: each MSU of size ``k`` scores ``prod_{i=k}^{ATT-1} (ATT - i)
  = (ATT - k)!`` (Elliot et al., "SUDA: a program for detecting special
  uniques"), a record the sum over its MSUs; sdcMicro's ``suda2`` with
  ``original_scores=TRUE`` (its default since version 5.0.3);
* ``normalised_scores``: each MSU of size ``k`` scores ``(2^(ATT-k) - 1)
  k! (ATT-k)! / ATT!``, the weights of the IHSN implementation of SUDA2 that
  sdcMicro keeps as ``original_scores=FALSE``;
* ``dis_scores``: DIS-SUDA for a sampling fraction ``pi`` (sdcMicro's
  ``DisFraction``), ``1 / (1 + U (1/D - 1) / (s^Q A))`` for a record with
  score ``s > 0`` (else 0), where ``U`` is the number of records unique on all
  keys, ``P`` the number of records whose combination of all keys occurs
  twice, ``D = U pi / (U pi + P (1 - pi))``, ``Q = 1 + (8 - ATT) / 20`` and
  ``A = sum over records with a positive score of s^-Q`` (so
  ``U (1/D - 1) = P (1 - pi) / pi``).  ``U`` is exact here; sdcMicro computes
  ``D`` in single precision and counts ``U`` per bucket of its internal hash,
  which can miss uniques that share a bucket, so its DIS-SUDA can differ slightly.

Contributions (sdcMicro's ``attribute_contributions`` and
``attribute_level_contributions``): the contribution of variable ``v`` in a
record is the summed score of the record's MSUs that contain ``v``; the
attribute contribution of ``v`` is its total over the records in percent of
the total score (an MSU counts fully for each of its variables, so the
attribute contributions add up to at least 100); the level contribution of
``(v, x)`` is the share, in percent, of the records with ``v = x`` in the
attribute contribution of ``v`` (the levels of a variable add up to 100).

``ATT`` is always the number of keys given (sdcMicro pads one or two keys
with constant columns to three, which changes its ``ATT`` there).  Missing
values are as in sdcMicro's SUDA2: a missing value is never part of
an MSU and matches no value (a record with a missing ``v`` is left out of the
combinations that hold ``v``); the combination of all keys (``U`` and ``P``)
compares missing values as a value of their own.

The algorithm is exact and vectorised over the records: for every subset of
the keys, in increasing size, the frequency of each record's combination comes
from one counting pass over a mixed-radix code; a unique subset of size ``k``
is minimal when none of its ``k`` subsets of size ``k - 1`` is unique for the
record (uniqueness passes to supersets).  Only records unique on all keys can
have an MSU, so the per-record flags are kept for those records only.
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

from pramkit.codebook import spelling_clash, spelling_error
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError
from pramkit.frames import column, eager, frame_columns
from pramkit.progress import progress

#: Above this many possible combinations, a subset's codes are compressed before counting.
_DENSE_LIMIT = 1 << 26
#: The most steps (:class:`SudaCost`) a SUDA search takes on before it refuses; ``max_steps`` raises it.
MAX_STEPS = 20_000_000_000
#: The most working memory (bytes) a SUDA search takes on before it refuses.
MAX_BYTES = 2 << 30
#: Keys the transversal search handles (a set of keys is one 64-bit word).
_WORD_KEYS = 62
#: Bytes of one block of key comparisons of the transversal search.
_BLOCK_BYTES = 1 << 25
#: ``"levels"`` or ``"transversals"``: that search whatever the estimate (for tests of both).
_METHOD: str | None = None


class LevelContribution(TypedDict):
    """One level's share of the total SUDA score (percent; null when the total is 0)."""

    variable: str
    level: str
    contribution: float | None


class SudaJSON(TypedDict):
    """What :meth:`SudaResult.to_dict` returns, the object ``pramkit risk --suda --json`` prints (the JSON
    Schema of ``pramkit.risk.suda`` is made from it, :mod:`pramkit.outputs`)."""

    keys: list[str]
    max_size: int
    sampling_fraction: float | None
    records: int
    records_with_msu: int
    msus_by_size: list[int]
    total_score: float
    max_score: float
    max_normalised_score: float
    max_dis_score: float | None
    mean_dis_score: float | None
    attribute_contributions: dict[str, float | None]
    level_contributions: list[LevelContribution]


@dataclass(frozen=True, eq=False)
class SudaResult:
    """Minimal sample uniques and SUDA scores of every record.

    Parameters
    ----------
    keys : tuple of str
        The key variables (``ATT = len(keys)``).
    max_size : int
        The largest MSU size searched.
    sampling_fraction : float or None
        The sampling fraction of the DIS-SUDA scores (None: none computed).
    msu_counts : numpy.ndarray
        ``(n, max_size)`` integers: column ``k - 1`` counts each record's MSUs of size ``k``.
    scores : numpy.ndarray
        SUDA scores, ``(ATT - k)!`` per MSU of size ``k`` (module docstring).
    normalised_scores : numpy.ndarray
        Scores with the IHSN weights (sdcMicro's ``original_scores=FALSE``).
    dis_scores : numpy.ndarray or None
        DIS-SUDA scores for ``sampling_fraction`` (None without one).
    attribute_contributions : dict of str to float
        Variable -> percent of the total score held by MSUs containing it (NaN
        when no record has an MSU).
    level_contributions : pandas.DataFrame
        Columns ``variable``, ``level`` and ``contribution`` (percent of the
        variable's contribution; NaN for a variable in no MSU), one row per
        observed non-missing level.

    Examples
    --------
    Record 1 is the only one with ``b = 1``, record 3 the only one with
    ``a = 2``; record 2 needs both keys:

    >>> res = suda(pd.DataFrame({"a": [1, 1, 2], "b": [1, 2, 2]}), ["a", "b"])
    >>> res.msu_counts.tolist(), res.scores.tolist()
    ([[1, 0], [0, 1], [1, 0]], [1.0, 1.0, 1.0])
    """

    keys: tuple[str, ...]
    max_size: int
    sampling_fraction: float | None
    msu_counts: np.ndarray
    scores: np.ndarray
    normalised_scores: np.ndarray
    dis_scores: np.ndarray | None
    attribute_contributions: dict[str, float]
    level_contributions: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The file-level figures as plain JSON values (NaN as ``None``; no per-record scores).

        Returns
        -------
        dict
            ``keys``, ``max_size``, ``sampling_fraction``, ``records``, ``records_with_msu``,
            ``msus_by_size`` (MSUs of size 1, 2, ...), ``total_score``, ``max_score``,
            ``max_normalised_score``, ``max_dis_score`` and ``mean_dis_score`` (``None`` without
            a sampling fraction), ``attribute_contributions`` and ``level_contributions``
            (rows ``variable``, ``level``, ``contribution``).

        Examples
        --------
        >>> import json
        >>> data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
        >>> out = suda(data, ["a", "b", "c"]).to_dict()
        >>> out["records_with_msu"], out["msus_by_size"], out["total_score"], out["max_dis_score"]
        (3, [3, 2, 0], 8.0, None)
        >>> json.loads(json.dumps(out, allow_nan=False)) == out
        True
        """
        def plain(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        dis = self.dis_scores
        levels = self.level_contributions
        return {
            "keys": list(self.keys),
            "max_size": self.max_size,
            "sampling_fraction": self.sampling_fraction,
            "records": len(self.scores),
            "records_with_msu": int((self.scores > 0).sum()),
            "msus_by_size": self.msu_counts.sum(axis=0).tolist(),
            "total_score": float(self.scores.sum()),
            "max_score": float(self.scores.max()),
            "max_normalised_score": float(self.normalised_scores.max()),
            "max_dis_score": None if dis is None else float(dis.max()),
            "mean_dis_score": None if dis is None else float(dis.mean()),
            "attribute_contributions": {k: plain(v) for k, v in self.attribute_contributions.items()},
            "level_contributions": [
                {"variable": variable, "level": level.item() if isinstance(level, np.generic) else level,
                 "contribution": plain(contribution)}
                for variable, level, contribution in zip(levels["variable"], levels["level"],
                                                         levels["contribution"])],
        }


def suda_weights(att: int) -> tuple[np.ndarray, np.ndarray]:
    """The scores of one MSU of each size 1..att: SUDA's and the IHSN (normalised) ones.

    Parameters
    ----------
    att : int
        The number of key variables.

    Returns
    -------
    tuple of numpy.ndarray
        ``(ATT - k)!`` and ``(2^(ATT-k) - 1) k! (ATT-k)! / ATT!`` for ``k = 1..att``.

    Examples
    --------
    >>> original, normalised = suda_weights(4)
    >>> original.tolist(), normalised.tolist()
    ([6.0, 2.0, 1.0, 1.0], [1.75, 0.5, 0.25, 0.0])
    """
    sizes = range(1, att + 1)
    original = np.array([float(math.factorial(att - k)) for k in sizes])
    normalised = np.array([(2.0 ** (att - k) - 1) * math.factorial(k) * math.factorial(att - k)
                           / math.factorial(att) for k in sizes])
    return original, normalised


def _check(data: Any, keys: Sequence[str], max_size: int | None,
           sampling_fraction: float | None, max_steps: float = MAX_STEPS) -> int:
    """Validate the arguments; return the largest MSU size to search."""
    if not keys:
        raise ParameterError("suda needs at least one key variable")
    if len(set(keys)) != len(keys):
        raise ParameterError(f"a key variable is listed twice: {list(keys)}")
    present = frame_columns(data)
    unknown = [k for k in keys if k not in present]
    if unknown:
        raise DataError(f"unknown key column(s) {unknown}; the data have {present}")
    if len(data) < 2:
        raise DataError(f"suda needs at least 2 records, the data have {len(data)}")
    size = len(keys) if max_size is None else max_size
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= len(keys):
        raise ParameterError(f"max_size must be an integer from 1 to {len(keys)} (the number of keys), "
                             f"got {max_size!r}")
    if sampling_fraction is not None and not 0 < sampling_fraction <= 1:
        raise ParameterError(f"sampling_fraction must lie in (0, 1], got {sampling_fraction!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, float)) or not max_steps > 0:
        raise ParameterError(f"max_steps must be a positive number, got {max_steps!r}")
    return int(size)


def _encode(data: Any, keys: Sequence[str], missing: Any) -> tuple[np.ndarray, list[np.ndarray], list[Any]]:
    """Integer codes ``(d, n)`` (missing = the last code of each key), missing masks and observed levels;
    ``data`` a pandas frame or an Arrow table (:func:`pramkit.frames.eager`)."""
    codes_all = np.empty((len(keys), len(data)), dtype=np.int64)  # filled row by row: no second copy
    masks, levels = [], []
    for i, key in enumerate(keys):
        values = column(data, key)
        text_codes = not isinstance(values, pd.Series) and _text_dictionary(values.type)
        if isinstance(values, pd.Series):
            series = values
        elif text_codes:  # text read as codes (pramkit.io.read_arrow): a categorical, not a string per value
            series = pd.Series(values.to_pandas(), copy=False)
        else:
            series = pd.Series(values.to_numpy(), copy=False)
        absent = series.isna().to_numpy().copy()
        if missing is not None:
            absent |= (series == missing).to_numpy(dtype=bool)
        codes, uniques = _sorted_codes(series.where(~absent)) if text_codes else pd.factorize(series.where(~absent),
                                                                                              sort=True)
        clash = spelling_clash(list(uniques))
        if clash is not None:  # one value spelled two ways: refused as design and the other risk measures refuse it
            rows = [int(np.flatnonzero(codes == list(uniques).index(label))[0]) + 1 for label in clash[:2]]
            raise spelling_error(key, clash, (rows[0], rows[1]))
        codes_all[i] = np.where(absent, len(uniques), codes)
        masks.append(absent)
        levels.append(uniques)
    return codes_all, masks, levels


def _text_dictionary(type_: Any) -> bool:
    """Whether an Arrow type is a dictionary of text."""
    import pyarrow as pa

    return bool(pa.types.is_dictionary(type_) and (pa.types.is_string(type_.value_type)
                                                   or pa.types.is_large_string(type_.value_type)))


def _sorted_codes(series: pd.Series) -> tuple[np.ndarray, Any]:
    """Codes and levels of a categorical of text as ``pd.factorize(..., sort=True)`` gives them for its
    values as text (the levels that occur, sorted), from its codes: no text is read per value."""
    cat = series.cat.remove_unused_categories()
    order = sorted(cat.cat.categories)
    cat = cat.cat.reorder_categories(order)
    return cat.cat.codes.to_numpy(dtype=np.intp), pd.Index(order)


def _frequencies(codes: np.ndarray, radices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each record's combination number of the given columns, and how often each number occurs.

    ``codes`` is ``(d, n)``: one contiguous row of codes per key.
    """
    code = codes[0]
    span = int(radices[0])
    for j in range(1, len(codes)):
        if span * int(radices[j]) > _DENSE_LIMIT:
            _, code = np.unique(code, return_inverse=True)
            span = int(code.max()) + 1
        code = code * int(radices[j]) + codes[j]
        span *= int(radices[j])
    if span > max(_DENSE_LIMIT, 4 * len(code)):
        _, code, counts = np.unique(code, return_inverse=True, return_counts=True)
        return code.ravel(), counts
    return code, np.bincount(code, minlength=span)


@dataclass(frozen=True)
class SudaCost:
    """What the SUDA search of a file will cost, estimated from one counting pass before the search.

    Two exact searches find the same MSUs (module docstring): ``"levels"`` counts every subset of
    at most ``max_size`` keys over all records, ``"transversals"`` compares each candidate record
    with the distinct rows and enumerates the minimal sets of keys that tell it from all of them.
    The cheaper one runs.

    Parameters
    ----------
    records : int
        Records of the file.
    keys : int
        Key variables (``ATT``).
    max_size : int
        The largest MSU size searched.
    candidates : int
        Records unique on all keys (only they can have an MSU).
    distinct : int
        Distinct rows of the keys.
    subsets : int
        Subsets of at most ``max_size`` keys, ``sum_k C(ATT, k)``.
    method : {"levels", "transversals", "none"}
        The search that runs (``"none"``: no candidate, nothing to search).
    steps : int
        Its elementary steps: ``subsets * records`` values counted, or
        ``candidates * distinct * ATT`` key values compared.
    bytes : int
        Its peak working memory, estimated.

    Examples
    --------
    >>> data = pd.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 1], "c": [0, 0, 0, 1]})
    >>> cost = suda_cost(data, ["a", "b", "c"])
    >>> cost.candidates, cost.distinct, cost.subsets, cost.method, cost.steps
    (4, 4, 7, 'levels', 28)
    """

    records: int
    keys: int
    max_size: int
    candidates: int
    distinct: int
    subsets: int
    method: str
    steps: int
    bytes: int

    def describe(self) -> str:
        """The estimate in words.

        Examples
        --------
        >>> SudaCost(300, 20, 2, 288, 288, 210, "levels", 63_000, 121_536).describe()
        'SUDA over 20 keys (MSUs of up to 2 keys) and 300 records (288 unique on all keys): 210 subsets of keys, 63,000 steps, 121.5 kB'
        """
        return (f"SUDA over {self.keys} keys (MSUs of up to {self.max_size} keys) and {self.records:,} records "
                f"({self.candidates:,} unique on all keys): {self.subsets:,} subsets of keys, {self.steps:,} steps, "
                f"{_size(self.bytes)}")


def _size(nbytes: float) -> str:
    """Bytes with an SI prefix (``'1.5 GB'``)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if nbytes < 1000 or unit == "PB":
            return f"{nbytes:,.0f} {unit}" if unit == "B" else f"{nbytes:,.1f} {unit}"
        nbytes /= 1000
    raise AssertionError("unreachable")


def _subsets(att: int, max_size: int) -> int:
    """``sum_{k=1}^{max_size} C(att, k)``."""
    return sum(math.comb(att, k) for k in range(1, max_size + 1))


def _estimate(codes: np.ndarray, max_size: int) -> tuple[SudaCost, np.ndarray, np.ndarray]:
    """The cost of both searches (the cheaper chosen), the candidates and each record's distinct row."""
    att, n = codes.shape
    code, table = _frequencies(codes, codes.max(axis=1) + 1)
    candidates = np.flatnonzero(table[code] == 1)
    _, distinct_of = np.unique(code, return_inverse=True)
    distinct = int(distinct_of.max()) + 1
    subsets = _subsets(att, max_size)
    c = len(candidates)
    widest = max(math.comb(att, k) for k in range(1, max_size + 1))
    level_steps, level_bytes = subsets * n, 2 * widest * c + 16 * n
    cross_steps = c * distinct * att
    cross_bytes = min(cross_steps, _BLOCK_BYTES) * 9 + 16 * distinct
    if c == 0:
        method, steps, nbytes = "none", 0, 0
    elif att <= _WORD_KEYS and (_METHOD == "transversals"
                                or (_METHOD is None and (cross_steps, cross_bytes) < (level_steps, level_bytes))):
        method, steps, nbytes = "transversals", cross_steps, cross_bytes
    else:
        method, steps, nbytes = "levels", level_steps, level_bytes
    cost = SudaCost(records=n, keys=att, max_size=max_size, candidates=c, distinct=distinct, subsets=subsets,
                    method=method, steps=steps, bytes=nbytes)
    return cost, candidates, distinct_of


def _refuse_cost(cost: SudaCost, max_steps: float, max_bytes: float) -> None:
    """One line when the search would take more than the limits: the figure and what bounds it."""
    if cost.steps <= max_steps and cost.bytes <= max_bytes:
        return
    limit = (f"more than the limit of {max_steps:,.0f} steps" if cost.steps > max_steps
             else f"more than the limit of {_size(max_bytes)}")
    smaller = [k for k in range(1, cost.max_size) if min(_subsets(cost.keys, k) * cost.records, cost.steps)
               <= max_steps and 2 * max(math.comb(cost.keys, j) for j in range(1, k + 1)) * cost.candidates
               <= max_bytes]
    hint = (f"lower --max-size (max_size; {smaller[-1]} fits)" if smaller
            else "use fewer key variables")
    raise ParameterError(f"{cost.describe()}: {limit}; {hint}, or raise --max-steps (max_steps)")


def _levels(codes: np.ndarray, masks: list[np.ndarray], candidates: np.ndarray, max_size: int,
            weights: np.ndarray, quiet: bool) -> tuple[np.ndarray, np.ndarray]:
    """The level-wise search: every subset of keys in increasing size, counted over all records."""
    att = len(codes)
    radices = codes.max(axis=1) + 1
    sub_missing = np.column_stack([m[candidates] for m in masks])
    counts = np.zeros((len(candidates), max_size), dtype=np.int64)
    contributions = np.zeros((len(candidates), att))
    previous: dict[tuple[int, ...], np.ndarray] = {(): np.zeros(len(candidates), dtype=bool)}  # the empty set: never unique (n >= 2)
    with progress(total=_subsets(att, max_size), desc="SUDA", unit="subsets", quiet=quiet) as bar:
        for size in range(1, max_size + 1):
            current: dict[tuple[int, ...], np.ndarray] = {}
            for subset in itertools.combinations(range(att), size):
                cols = list(subset)
                code, table = _frequencies(codes[cols], radices[cols])
                unique = table[code[candidates]] == 1
                unique &= ~sub_missing[:, cols].any(axis=1)
                minimal = unique.copy()
                for drop in range(size):
                    minimal &= ~previous[subset[:drop] + subset[drop + 1:]]
                current[subset] = unique
                counts[:, size - 1] += minimal
                contributions[:, cols] += (minimal * weights[size - 1])[:, None]
                bar.update(1)
            previous = current
    return counts, contributions


def _bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def minimal_transversals(edges: Sequence[int], max_size: int) -> list[int]:
    """Every minimal transversal (hitting set) of at most ``max_size`` vertices of a hypergraph.

    The MMCS search of Murakami and Uno (2014, "Efficient algorithms for dualizing
    large-scale hypergraphs", Discrete Applied Mathematics 170, algorithm MMCS): a set
    grows by a vertex of an edge it does not hit yet, and only while each of its
    vertices hits some edge no other vertex of the set hits (so the set stays minimal);
    each set is reached once.  Vertices and sets are bits of ints.

    Parameters
    ----------
    edges : sequence of int
        The edges, each a non-empty set of vertices as a bitmask.
    max_size : int
        The largest transversal returned.

    Returns
    -------
    list of int
        The minimal transversals as bitmasks, in search order.

    Examples
    --------
    Edges {0, 1} and {1, 2}: the minimal transversals are {1} and {0, 2}:

    >>> sorted(minimal_transversals([0b011, 0b110], 3))
    [2, 5]
    >>> minimal_transversals([0b011, 0b110], 1)
    [2]
    """
    hits: dict[int, int] = {}
    for i, edge in enumerate(edges):
        for v in _bits(edge):
            hits[v] = hits.get(v, 0) | (1 << i)
    out: list[int] = []

    def grow(chosen: int, size: int, uncovered: int, allowed: int, critical: list[tuple[int, int]]) -> None:
        if not uncovered:
            out.append(chosen)
            return
        if size == max_size:
            return
        branch, fewest = 0, -1
        rest = uncovered
        while rest:  # the uncovered edge with the fewest allowed vertices
            low = rest & -rest
            rest ^= low
            reach = edges[low.bit_length() - 1] & allowed
            count = reach.bit_count()
            if fewest < 0 or count < fewest:
                branch, fewest = reach, count
                if count <= 1:
                    break
        allowed &= ~branch
        for v in _bits(branch):
            hit = hits[v]
            kept = [(u, crit & ~hit) for u, crit in critical]
            if all(crit for _, crit in kept):
                grow(chosen | (1 << v), size + 1, uncovered & ~hit, allowed, [*kept, (v, hit & uncovered)])
            allowed |= 1 << v

    if edges:
        grow(0, 0, (1 << len(edges)) - 1, sum(1 << v for v in hits), [])
    return out


def _minimal_edges(edges: np.ndarray) -> list[int]:
    """The inclusion-minimal sets among distinct non-empty bitmasks."""
    edges = edges[np.argsort(np.bitwise_count(edges), kind="stable")]
    keep = np.ones(len(edges), dtype=bool)
    step = max(1, _BLOCK_BYTES // max(1, len(edges)))
    for start in range(0, len(edges), step):
        block = edges[start:start + step, None]
        inside = (block & edges[None, :]) == edges[None, :]  # edge j inside edge i
        inside[np.arange(len(block)), np.arange(start, start + len(block))] = False
        keep[start:start + step] = ~inside.any(axis=1)
    return [int(e) for e in edges[keep]]


def _transversals(codes: np.ndarray, masks: list[np.ndarray], candidates: np.ndarray, distinct_of: np.ndarray,
                  max_size: int, weights: np.ndarray, quiet: bool) -> tuple[np.ndarray, np.ndarray]:
    """The search by transversals: a record's MSUs are the minimal sets of its non-missing keys that
    hit, for every other record, a key on which the two differ (module docstring)."""
    att, _ = codes.shape
    first = np.zeros(int(distinct_of.max()) + 1, dtype=np.int64)
    first[distinct_of[::-1]] = np.arange(len(distinct_of))[::-1]  # one record of each distinct row
    rows = codes[:, first]
    bits = np.left_shift(np.int64(1), np.arange(att, dtype=np.int64))
    present = (~np.vstack(masks)).T.astype(np.int64) @ bits  # each record's non-missing keys
    counts = np.zeros((len(candidates), max_size), dtype=np.int64)
    contributions = np.zeros((len(candidates), att))
    block = max(1, _BLOCK_BYTES // max(1, rows.shape[1] * att))
    with progress(total=len(candidates), desc="SUDA", unit="records", quiet=quiet) as bar:
        for start in range(0, len(candidates), block):
            which = candidates[start:start + block]
            same = np.zeros((len(which), rows.shape[1]), dtype=np.int64)
            for v in range(att):
                same |= (rows[v][None, :] == codes[v, which][:, None]).astype(np.int64) << v
            for i, r in enumerate(which):
                edges = np.unique(np.delete(present[r] & ~same[i], distinct_of[r]))
                if len(edges) == 0 or edges[0] == 0:  # another record agrees on every key r has
                    bar.update(1)
                    continue
                k = start + i
                for msu in minimal_transversals(_minimal_edges(edges), max_size):
                    size = msu.bit_count()
                    counts[k, size - 1] += 1
                    contributions[k, _bits(msu)] += weights[size - 1]
                bar.update(1)
    return counts, contributions


def _search(codes: np.ndarray, masks: list[np.ndarray], max_size: int, weights: np.ndarray, *,
            max_steps: float = MAX_STEPS, max_bytes: float = MAX_BYTES,
            quiet: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """MSU counts per record and size, and each variable's summed MSU score per record."""
    att, n = codes.shape
    cost, candidates, distinct_of = _estimate(codes, max_size)
    _refuse_cost(cost, max_steps, max_bytes)
    if cost.method == "transversals":
        counts, contributions = _transversals(codes, masks, candidates, distinct_of, max_size, weights, quiet)
    elif cost.method == "levels":
        counts, contributions = _levels(codes, masks, candidates, max_size, weights, quiet)
    else:
        counts, contributions = np.zeros((0, max_size), dtype=np.int64), np.zeros((0, att))
    full_counts = np.zeros((n, max_size), dtype=np.int64)
    full_counts[candidates] = counts
    full_contributions = np.zeros((n, att))
    full_contributions[candidates] = contributions
    return full_counts, full_contributions


def _dis(codes: np.ndarray, scores: np.ndarray, fraction: float) -> np.ndarray:
    """DIS-SUDA scores (module docstring)."""
    positive = scores > 0
    dis = np.zeros(len(scores))
    if not positive.any():
        return dis
    code, table = _frequencies(codes, codes.max(axis=1) + 1)
    pairs = int((table[code] == 2).sum())
    powered = scores[positive] ** (1.0 + (8.0 - len(codes)) / 20.0)
    odds = pairs * (1.0 - fraction) / fraction
    dis[positive] = 1.0 / (1.0 + odds / (powered * float((1.0 / powered).sum())))
    return dis


def _level_table(keys: Sequence[str], codes: np.ndarray, levels: list[Any],
                 contributions: np.ndarray) -> pd.DataFrame:
    """Each observed level's percent of its variable's contribution."""
    frames = []
    for j, key in enumerate(keys):
        per_level = np.bincount(codes[j], weights=contributions[:, j], minlength=len(levels[j]) + 1)
        total = contributions[:, j].sum()
        share = 100.0 * per_level[: len(levels[j])] / total if total > 0 else np.full(len(levels[j]), np.nan)
        frames.append(pd.DataFrame({"variable": key, "level": list(levels[j]), "contribution": share}))
    return pd.concat(frames, ignore_index=True)


def suda(
    data: Any,
    keys: Sequence[str],
    *,
    max_size: int | None = None,
    sampling_fraction: float | None = None,
    missing: Any = None,
    na_values: Sequence[str] = NA_VALUES,
    max_steps: float = MAX_STEPS,
    quiet: bool = False,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> SudaResult:
    """SUDA2: every record's minimal sample uniques, SUDA, normalised and DIS-SUDA scores, contributions.

    Exact; the definitions are in the module docstring and agree with
    sdcMicro's ``suda2`` (its issues 275 and 356 are worked in the tests).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table or path
        The records, or a file read with :func:`pramkit.io.read_table` (key columns only).
    keys : sequence of str
        The key variables (``ATT = len(keys)``).
    max_size : int, optional
        The largest MSU size searched (1 to ``ATT``; default ``ATT``).  The
        score of an MSU still depends on ``ATT`` only, so a smaller
        ``max_size`` leaves out the larger MSUs' terms.
    sampling_fraction : float, optional
        The sampling fraction in (0, 1] of the DIS-SUDA scores (sdcMicro's
        ``DisFraction``, whose default there is 0.01); without it no DIS scores.
    missing : scalar, optional
        A code that means missing besides NA/NaN/None (sdcMicro's ``missing``
        argument, -999 there).  Missing values are never part of an MSU.
    na_values : sequence of str
        With a CSV file: the texts that mean missing besides the empty field (default ``("NA",)``).
    max_steps : float
        The most steps the search may take (:class:`SudaCost`, estimated before the search;
        default :data:`MAX_STEPS`); a larger estimate, or one over :data:`MAX_BYTES` of memory,
        is refused with the figure.
    quiet : bool
        No progress bar (one is shown on a terminal while the search runs).
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    SudaResult
        Per-record MSU counts and scores, and the contributions.

    Raises
    ------
    ParameterError
        No keys, a key listed twice, ``max_size`` outside 1..ATT, a
        sampling fraction outside (0, 1], or a search estimated to take
        more than ``max_steps`` steps or :data:`MAX_BYTES` of memory.
    DataError
        An unknown key column or fewer than two records.

    Examples
    --------
    sdcMicro's issue 275: record 1 has the MSU ``{a}``, record 2 ``{b}`` and
    ``{c}``, record 3 ``{a, b}`` and ``{a, c}``; with three keys an MSU of size
    1 scores 2 and one of size 2 scores 1:

    >>> data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    >>> res = suda(data, ["a", "b", "c"], sampling_fraction=0.1)
    >>> res.scores.tolist(), res.msu_counts.tolist()
    ([2.0, 4.0, 2.0], [[1, 0, 0], [2, 0, 0], [0, 2, 0]])
    >>> res.attribute_contributions
    {'a': 50.0, 'b': 37.5, 'c': 37.5}
    >>> res.normalised_scores.round(4).tolist()
    [1.0, 2.0, 0.6667]
    >>> res.level_contributions.query("variable == 'a'")
      variable  level  contribution
    0        a      1          50.0
    1        a      2          50.0
    """
    if isinstance(data, (str, Path)):
        from pramkit.io import read_arrow

        data = read_arrow(data, columns=list(keys), na_values=na_values, sep=sep, encoding=encoding, compact=True)
    data = eager(data)  # a polars frame is read as Arrow
    size = _check(data, keys, max_size, sampling_fraction, max_steps)
    codes, masks, levels = _encode(data, keys, missing)
    original, normalised = suda_weights(len(keys))
    msu_counts, contributions = _search(codes, masks, size, original, max_steps=max_steps, quiet=quiet)
    scores = msu_counts @ original[:size]
    total = float(scores.sum())
    attribute = {key: (100.0 * float(contributions[:, j].sum()) / total if total > 0 else math.nan)
                 for j, key in enumerate(keys)}
    dis = None if sampling_fraction is None else _dis(codes, scores, float(sampling_fraction))
    return SudaResult(
        keys=tuple(keys), max_size=size,
        sampling_fraction=None if sampling_fraction is None else float(sampling_fraction),
        msu_counts=msu_counts, scores=scores, normalised_scores=msu_counts @ normalised[:size],
        dis_scores=dis, attribute_contributions=attribute,
        level_contributions=_level_table(keys, codes, levels, contributions),
    )


def suda_cost(
    data: Any,
    keys: Sequence[str],
    *,
    max_size: int | None = None,
    missing: Any = None,
    na_values: Sequence[str] = NA_VALUES,
) -> SudaCost:
    """What :func:`suda` of the same arguments would cost, from one counting pass (no search).

    Parameters
    ----------
    data, keys, max_size, missing, na_values
        As :func:`suda`.

    Returns
    -------
    SudaCost

    Raises
    ------
    ParameterError, DataError
        As :func:`suda`.

    Examples
    --------
    Twenty binary keys on 300 records: a million subsets to count, but each of the
    300 records compared with the others on 20 keys is far less:

    >>> rng = np.random.default_rng(1)
    >>> data = pd.DataFrame(rng.integers(0, 2, (300, 20)), columns=[f"k{j}" for j in range(20)])
    >>> cost = suda_cost(data, list(data.columns))
    >>> cost.subsets, cost.method, cost.steps
    (1048575, 'transversals', 1800000)
    """
    if isinstance(data, (str, Path)):
        from pramkit.io import read_arrow

        data = read_arrow(data, columns=list(keys), na_values=na_values, compact=True)
    data = eager(data)
    size = _check(data, keys, max_size, None)
    codes, _, _ = _encode(data, keys, missing)
    return _estimate(codes, size)[0]
