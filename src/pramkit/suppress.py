"""Local suppression to k-anonymity: the fewest key values made missing so that every combination of the
key variables is shared by at least k records (``pramkit suppress``), as sdcMicro's ``localSuppression``
(``kAnon``).

**What k-anonymity means with missing values.**  A record's frequency ``f_i`` is the number of records
(itself included) that *agree with it* on the key variables.  Two rules for a missing value (a value
suppressed here, or missing in the file already):

* ``missing="any"`` (sdcMicro's rule, its default ``alpha = 1``): a missing value matches any value, in
  either record.  Records ``i`` and ``j`` agree when, on every key, the two values are equal or one of them
  is missing, so ``f_i = #{j : for every key v, x_iv = x_jv or x_iv missing or x_jv missing}``.  This is
  sdcMicro's ``freqCalc``/``measure_risk`` (its C++ ``ffc``: a key compared only where both records hold a
  value; ``alpha`` documented as "each wildcard-match would be counted").  The rule is weak protection:
  a record whose every key is missing agrees with every record, so ``k - 1`` such records make every file
  k-anonymous in this sense at a cost of at most ``(k - 1)`` times the number of keys suppressions; the
  exact program finds such solutions when they are the cheapest (docs/suppression.md).
* ``missing="own"``: a missing value is a value of its own (``NA`` equals ``NA`` and nothing else); the
  combinations are counted as they stand, as an intruder who reads the released file literally would.

The file is k-anonymous when ``f_i >= k`` for every record (within each stratum, ``strata``: each stratum
its own file).

**The fewest suppressions.**  Two solvers, chosen by ``method``:

* ``"exact"``: an integer program solved by SciPy's HiGHS (:func:`scipy.optimize.milp`), formulated over
  the *distinct combinations* of the keys with their counts, not over records.  For each combination ``c``
  (``n_c`` records) and each set ``S`` of its present keys, an integer ``x[c, S]`` counts the records of
  ``c`` whose keys ``S`` are suppressed (``sum_S x[c, S] = n_c``); the cost is ``sum |S| x[c, S]``.  Each
  released vector ``w`` (``c`` with ``S`` made missing) holds ``y_w = sum x[c, S]`` records and has a binary
  ``z_w`` (used or not, ``y_w <= n z_w``); ``"own"`` asks ``y_w >= k z_w``, ``"any"`` asks
  ``sum_{w' agrees with w} y_w' >= k z_w``.  The formulation is exact: records of one combination are
  interchangeable (their cost and what they become depend only on the combination and the set suppressed),
  so every suppression of records is one value of ``x`` with the same cost and the same frequencies, and
  every integer ``x`` is a suppression of records.  A released vector that fewer than k records could ever
  become is left out (``"own"``).  The count of suppressions is the objective; a weight below one half in
  all shares ties among optimal solutions out by ``importance`` (least important suppressed first).
* ``"heuristic"``: sdcMicro's greedy.  Records whose frequency is below k are taken in order of rising
  frequency; each loses the least important of its keys in which it differs from its nearest records (the
  fewest keys apart, ``"any"``), or moves to the nearest generalisation of it shared by k records
  (``"own"``); frequencies are counted again after each pass, until none is below k.  A last pass puts back
  every suppressed value whose return keeps the file k-anonymous.
* ``"auto"`` (default): the exact program when it is small enough (:data:`EXACT_LIMIT`) and solves within
  ``time_limit``; otherwise the heuristic (or the program's best solution, when it ran out of time with a
  better one), beside whatever the program proved.

**The lower bound.**  Every result carries a lower bound on the optimum: the exact program's own (the
optimum, when it solved; its dual bound when it ran out of time), and at least the counting bound --
``"own"``: every record of a combination that fewer than k records could ever become loses at least one
value; ``"any"``: either every record whose frequency is below k loses a value, or, for the one that does
not, at least ``k - f_i`` other records do, so ``min(#violating, min_i (k - f_i))``.  The gap printed is
the suppressions over that bound.

:func:`suppression_plan` works on integer codes; :func:`cells_to_suppress` on a frame (pure: nothing is
read or written); :func:`suppress_file` reads a file, writes the released file with the suppressed values
missing (an empty field in CSV) and its public receipt (``OUT.suppression.json``), and returns what it did.
The count of suppressions per key is private (it says where the rare combinations were): it is printed and
returned, never written to a public file.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError
from pramkit.ledger import MISSING_RULE_WORDS
from pramkit.methods.suppression.fields import RECEIPT_FILE
from pramkit.risk.kanonymity import agree as _agree  # the counting stands on the risk floor; its names stay here
from pramkit.risk.kanonymity import check_columns, key_codes, record_frequencies

#: The rules for a missing value.
MISSING_RULES = ("any", "own")
#: The solvers.
METHODS = ("auto", "exact", "heuristic")
#: The format and version of the public receipt.
FORMAT, VERSION = RECEIPT_FILE.format, int(RECEIPT_FILE.version or 1)
#: The largest exact program tried by ``method="auto"``: variables, and agreeing pairs of released vectors
#: (``"any"``).
EXACT_LIMIT = {"variables": 60_000, "pairs": 2_000_000}
#: The receipt's suffix, beside the released file.
RECEIPT_SUFFIX = ".suppression.json"
#: The frequency of every record (:func:`pramkit.risk.kanonymity.record_frequencies`, read by ``pramkit risk
#: --k-anonymity`` too).
frequencies = record_frequencies


# ----------------------------------------------------------------- frequencies

def stratum_groups(frame: pd.DataFrame, strata: Sequence[str]) -> np.ndarray | None:
    """Each record's stratum as a group number (the combination of the stratum columns' texts), or ``None``
    without strata.

    >>> stratum_groups(pd.DataFrame({"s": ["a", "b", "a"], "t": ["x", "x", "x"]}), ["s", "t"])
    array([0, 1, 0])
    """
    if not strata:
        return None
    return frame[list(strata)].astype(str).agg("\x1f".join, axis=1).factorize()[0]


def is_k_anonymous(codes: np.ndarray, k: int, missing: str = "any", strata: np.ndarray | None = None) -> bool:
    """Whether every record's frequency is at least ``k``.

    Examples
    --------
    >>> is_k_anonymous(np.array([[0], [0], [1], [-1]]), 2), is_k_anonymous(np.array([[0], [0], [1], [-1]]), 2, "own")
    (True, False)
    """
    return bool(len(codes) == 0 or frequencies(codes, missing, strata).min() >= k)


# ----------------------------------------------------------------- the plan

@dataclass(frozen=True)
class Plan:
    """Which key values to suppress, and how good that is.

    Parameters
    ----------
    mask : numpy.ndarray
        ``(records, keys)`` booleans: the values to suppress.
    lower_bound : int
        A lower bound on the fewest suppressions that make the file k-anonymous.
    optimal : bool
        The count is proven the fewest (the exact program solved every stratum).
    method : str
        ``"exact"``, ``"heuristic"``, or ``"mixed"`` (strata solved differently).
    seconds : float
        The time taken.
    """

    mask: np.ndarray
    lower_bound: int
    optimal: bool
    method: str
    seconds: float

    @property
    def count(self) -> int:
        """The values suppressed."""
        return int(self.mask.sum())

    @property
    def gap(self) -> float:
        """The suppressions over the lower bound, relative to the bound (0: optimal; ``inf`` over a zero bound)."""
        if self.count == self.lower_bound:
            return 0.0
        return math.inf if self.lower_bound == 0 else (self.count - self.lower_bound) / self.lower_bound


def suppression_plan(codes: np.ndarray, k: int, *, missing: str = "any", importance: Sequence[int] | None = None,
                     strata: np.ndarray | None = None, method: str = "auto", time_limit: float = 60.0) -> Plan:
    """The key values to suppress so that every record's frequency is at least ``k`` (module docstring).

    Parameters
    ----------
    codes : numpy.ndarray
        ``(records, keys)`` integer codes, ``-1`` for a missing value.
    k : int
        The k of k-anonymity (at least 2, at most the records of the smallest stratum).
    missing : str
        ``"any"`` or ``"own"`` (:data:`MISSING_RULES`).
    importance : sequence of int, optional
        The key columns, least important first (suppressed first); default: the key with the most categories
        first (sdcMicro's default).
    strata : numpy.ndarray, optional
        One integer per record: k-anonymity within each stratum.
    method : str
        ``"auto"``, ``"exact"`` or ``"heuristic"`` (:data:`METHODS`).
    time_limit : float
        Seconds the exact program may take per stratum.

    Returns
    -------
    Plan

    Raises
    ------
    ParameterError
        A bad ``k``, ``missing``, ``method`` or ``importance``; ``method="exact"`` that did not prove its
        optimum within ``time_limit``.

    Examples
    --------
    >>> x = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> plan = suppression_plan(x, 2, missing="own")
    >>> plan.count, plan.optimal   # (x, 1) is unique, and (x, NA) or (NA, 1) needs two records: three lose a value
    (3, True)
    >>> plan.mask.nonzero()        # a tie: a, the least important by default (the first of equal categories), goes
    (array([2, 3, 4]), array([0, 0, 0]))
    >>> suppression_plan(x, 2, missing="any").count      # (x, NA) agrees with (x, 0) and (x, 1)
    1
    """
    codes = np.asarray(codes, dtype=np.int64)
    if codes.ndim != 2:
        raise ParameterError("codes must be a table of records by keys")
    n, m = codes.shape
    _check(k, missing, method)
    if not time_limit > 0:
        raise ParameterError(f"the time limit must be a positive number of seconds, got {time_limit!r}")
    order = _order(codes, importance)
    groups = [np.arange(n)] if strata is None else [np.flatnonzero(np.asarray(strata) == s)
                                                   for s in np.unique(np.asarray(strata))]
    for rows in groups:
        if 0 < len(rows) < k:
            raise ParameterError(f"a stratum holds {len(rows)} records, fewer than k = {k}: no suppression makes it "
                                 f"{k}-anonymous; merge it into another, or lower --k")
    start = time.perf_counter()
    mask = np.zeros((n, m), dtype=bool)
    bound, optimal, used = 0, True, set()
    for rows in groups:
        if len(rows) == 0:
            continue
        sub, low, proved, how = _solve(codes[rows], k, missing, order, method, time_limit)
        mask[rows] = sub
        bound += low
        optimal &= proved
        used.add(how)
    used_method = used.pop() if len(used) == 1 else ("mixed" if used else "exact")
    return Plan(mask, bound, optimal, used_method, time.perf_counter() - start)


def _check(k: Any, missing: str, method: str) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ParameterError(f"k must be a whole number of at least 2, got {k!r}")
    if missing not in MISSING_RULES:
        raise ParameterError(f"missing must be one of {', '.join(MISSING_RULES)}, got {missing!r}")
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


def _order(codes: np.ndarray, importance: Sequence[int] | None) -> list[int]:
    """The key columns, least important first (default: the most categories first, as sdcMicro)."""
    m = codes.shape[1]
    if importance is None:
        cats = [len(np.unique(codes[:, v][codes[:, v] >= 0])) for v in range(m)]
        return sorted(range(m), key=lambda v: (-cats[v], v))
    order = [int(v) for v in importance]
    if sorted(order) != list(range(m)):
        raise ParameterError(f"importance must name every key exactly once, got {list(importance)!r}")
    return order


def _solve(codes: np.ndarray, k: int, missing: str, order: list[int], method: str, time_limit: float
           ) -> tuple[np.ndarray, int, bool, str]:
    """One stratum: its mask, lower bound, whether proven optimal, and the solver used."""
    bound = counting_bound(codes, k, missing)
    if is_k_anonymous(codes, k, missing):
        return np.zeros(codes.shape, dtype=bool), 0, True, "exact"
    exact = None
    if method == "exact" or (method == "auto" and _fits(codes, k, missing)):
        exact = _exact(codes, k, missing, order, time_limit)
        if exact[0] is not None and exact[2]:
            return exact[0], int(exact[0].sum()), True, "exact"
        if method == "exact":
            raise ParameterError(f"the exact program did not prove its optimum within {time_limit:g} seconds: "
                                 "give it more time, or use the heuristic")
    mask, how = greedy(codes, k, missing, order), "heuristic"
    if exact is not None:
        bound = max(bound, exact[1])
        if exact[0] is not None and exact[0].sum() < mask.sum():  # the program's best, not proven the fewest
            mask, how = exact[0], "exact"
    return mask, bound, bool(mask.sum() == bound), how


def counting_bound(codes: np.ndarray, k: int, missing: str) -> int:
    """A lower bound on the fewest suppressions, by counting (module docstring).

    Examples
    --------
    >>> x = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> counting_bound(x, 2, "own"), counting_bound(x, 2, "any")
    (1, 1)
    """
    codes = np.asarray(codes, dtype=np.int64)
    if missing == "any":
        return _any_bound(codes, k)
    combos, counts = np.unique(codes, axis=0, return_counts=True)
    reach = _reach(combos, counts)
    return int(counts[reach < k].sum())


def _any_bound(codes: np.ndarray, k: int) -> int:
    """The counting bound under ``"any"``: either every record below k loses a value, or one, ``i``, loses none
    and ``k - f_i`` records that disagree with it come to agree with it, each losing every key in which it
    differs from ``i`` (distinct records, distinct suppressions): ``min(#below k, min_i s_i)``, ``s_i`` the sum
    of the ``k - f_i`` smallest such distances."""
    combos, counts = np.unique(codes, axis=0, return_counts=True)
    f = _agree(combos, combos) @ counts
    below = np.flatnonzero(f < k)
    if len(below) == 0:
        return 0
    short = int(counts[below].sum())
    apart = np.zeros((len(below), len(combos)), dtype=np.int64)
    for v in range(combos.shape[1]):
        x, y = combos[below, v][:, None], combos[:, v][None, :]
        apart += (x != y) & (x >= 0) & (y >= 0)
    best = short
    for row, c in enumerate(below):
        need = int(k - f[c])
        far = apart[row] > 0
        distances = np.repeat(apart[row][far], counts[far])
        if len(distances) >= need:
            best = min(best, int(np.sort(distances)[:need].sum()))
    return best


def _reach(combos: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For each combination: the records that could become it by suppression (they agree on its present keys)."""
    ok = np.ones((len(combos), len(combos)), dtype=bool)
    for v in range(combos.shape[1]):
        w, c = combos[:, v][:, None], combos[:, v][None, :]
        ok &= (w < 0) | (w == c)
    return ok @ counts


# ----------------------------------------------------------------- the exact program

def _candidates(codes: np.ndarray, k: int, missing: str
                ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]], np.ndarray, np.ndarray]:
    """The program's pieces: combinations and counts, the pairs ``(combination, set suppressed)`` as
    ``(c, bits)``, the released vector index of each pair, and the released vectors."""
    combos, counts = np.unique(codes, axis=0, return_counts=True)
    m = codes.shape[1]
    pairs: list[tuple[int, int]] = []
    vectors: dict[tuple[int, ...], int] = {}
    target: list[int] = []
    for c, row in enumerate(combos):
        present = [v for v in range(m) if row[v] >= 0]
        for s in range(1 << len(present)):
            bits = sum(1 << present[i] for i in range(len(present)) if s >> i & 1)
            w = tuple(-1 if bits >> v & 1 else int(row[v]) for v in range(m))
            pairs.append((c, bits))
            target.append(vectors.setdefault(w, len(vectors)))
    released = np.array(list(vectors), dtype=np.int64).reshape(len(vectors), m)
    return combos, counts, pairs, np.array(target, dtype=np.int64), released


def _fits(codes: np.ndarray, k: int, missing: str) -> bool:
    """Whether the exact program is small enough for ``method="auto"`` (:data:`EXACT_LIMIT`)."""
    combos = np.unique(codes, axis=0)
    present = (combos >= 0).sum(axis=1)
    variables = int((2.0 ** present).sum())
    if variables > EXACT_LIMIT["variables"]:
        return False
    if missing == "own":
        return True
    released = variables  # at most; the agreeing pairs are at most its square
    return released * released <= EXACT_LIMIT["pairs"] or _pairs(codes) <= EXACT_LIMIT["pairs"]


def _pairs(codes: np.ndarray) -> int:
    _, _, _, _, released = _candidates(codes, 2, "any")
    if len(released) ** 2 > 10 * EXACT_LIMIT["pairs"]:
        return len(released) ** 2
    return int(_agree(released, released).sum())


def _exact(codes: np.ndarray, k: int, missing: str, order: list[int], time_limit: float
           ) -> tuple[np.ndarray | None, int, bool]:
    """The exact program (module docstring): the mask it found (``None``: none), its lower bound on the count,
    and whether the count is proven optimal."""
    from scipy import sparse
    from scipy.optimize import Bounds, LinearConstraint, milp

    n, m = codes.shape
    combos, counts, pairs, target, released = _candidates(codes, k, missing)
    p, r = len(pairs), len(released)
    reach = np.zeros(r, dtype=np.int64)
    np.add.at(reach, target, counts[[c for c, _ in pairs]])
    reach = np.minimum(reach, n)
    usable = np.ones(p, dtype=bool)
    if missing == "own":
        usable = reach[target] >= k  # a released vector fewer than k records could ever become: never used
    rank = {v: i for i, v in enumerate(order)}  # least important first: the smallest weight
    size = np.array([bin(b).count("1") for _, b in pairs], dtype=float)
    tie = np.array([sum(rank[v] + 1 for v in range(m) if b >> v & 1) for _, b in pairs], dtype=float)
    eps = 0.4 / max(1.0, float(n) * m * m)
    cost = np.concatenate([size + eps * tie, np.zeros(r)])
    combo_of = np.array([c for c, _ in pairs], dtype=np.int64)
    xs, zs = np.arange(p), p + np.arange(r)
    # every record of a combination somewhere: sum_S x[c, S] = n_c
    placed = sparse.csr_matrix((np.ones(p), (combo_of, xs)), shape=(len(combos), p + r))
    y = sparse.csr_matrix((np.ones(p), (target, xs)), shape=(r, p + r))  # y_w: the records released as w
    z = sparse.csr_matrix((np.ones(r), (np.arange(r), zs)), shape=(r, p + r))
    cap = y - sparse.diags(reach.astype(float)) @ z  # y_w - reach_w z_w <= 0
    # own: y_w - k z_w >= 0;  any: sum_{w' agrees with w} y_w' - k z_w >= 0
    seen = y if missing == "own" else sparse.csr_matrix(_agree(released, released).astype(float)) @ y
    a = sparse.vstack([placed, cap, seen - k * z]).tocsr()
    lo = np.concatenate([counts.astype(float), np.full(r, -np.inf), np.zeros(r)])
    hi = np.concatenate([counts.astype(float), np.zeros(r), np.full(r, np.inf)])
    upper = np.concatenate([np.where(usable, counts[combo_of], 0).astype(float), np.ones(r)])
    result = milp(cost, constraints=LinearConstraint(a, lo, hi), integrality=np.ones(p + r),
                  bounds=Bounds(np.zeros(p + r), upper),
                  options={"time_limit": float(time_limit), "mip_rel_gap": 0.0, "disp": False})
    dual = getattr(result, "mip_dual_bound", None)
    low = 0 if dual is None or not np.isfinite(dual) else max(0, math.ceil(dual - 0.5 - 1e-6))
    if result.x is None:
        return None, low, False
    x = np.rint(result.x[:p]).astype(np.int64)
    mask = _records(codes, combos, pairs, x)
    optimal = result.status == 0
    return mask, (int(mask.sum()) if optimal else low), optimal


def _records(codes: np.ndarray, combos: np.ndarray, pairs: list[tuple[int, int]], x: np.ndarray) -> np.ndarray:
    """The program's counts per combination and set as a mask of records (each combination's records in file
    order, the fewest suppressions first)."""
    n, m = codes.shape
    mask = np.zeros((n, m), dtype=bool)
    index = {tuple(row): c for c, row in enumerate(combos.tolist())}
    members: dict[int, list[int]] = {}
    for i, row in enumerate(codes.tolist()):
        members.setdefault(index[tuple(row)], []).append(i)
    plan: dict[int, list[tuple[int, int]]] = {}
    for (c, bits), count in zip(pairs, x.tolist()):
        if count > 0:
            plan.setdefault(c, []).append((bits, count))
    for c, sets in plan.items():
        records = iter(members[c])
        for bits, count in sorted(sets, key=lambda s: (bin(s[0]).count("1"), s[0])):
            cols = [v for v in range(m) if bits >> v & 1]
            for _ in range(count):
                i = next(records)
                mask[i, cols] = True
    return mask


# ----------------------------------------------------------------- the heuristic

def greedy(codes: np.ndarray, k: int, missing: str = "any", order: Sequence[int] | None = None) -> np.ndarray:
    """sdcMicro's greedy local suppression (module docstring), then every value put back whose return keeps
    the file k-anonymous.

    Parameters
    ----------
    codes : numpy.ndarray
        ``(records, keys)`` integer codes, ``-1`` missing.
    k : int
        The k of k-anonymity (at most the records).
    missing : str
        ``"any"`` or ``"own"``.
    order : sequence of int, optional
        The key columns, least important first (default: as :func:`suppression_plan`).

    Returns
    -------
    numpy.ndarray
        The mask of values to suppress.

    Examples
    --------
    >>> x = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> int(greedy(x, 2, "own").sum()), int(greedy(x, 2, "any").sum())
    (3, 1)
    """
    codes = np.asarray(codes, dtype=np.int64)
    order = _order(codes, order)
    current = codes.copy()
    if len(codes) < k:
        raise ParameterError(f"{len(codes)} records cannot be {k}-anonymous")
    step = _greedy_any if missing == "any" else _greedy_own
    while True:
        f = frequencies(current, missing)
        short = np.flatnonzero(f < k)
        if len(short) == 0:
            break
        step(current, short[np.argsort(f[short], kind="stable")], k, order)
    mask = (current < 0) & (codes >= 0)
    return _put_back(codes, mask, k, missing, order)


def _greedy_any(current: np.ndarray, short: np.ndarray, k: int, order: Sequence[int]) -> None:
    """One pass of sdcMicro's greedy under ``"any"``: each record below k loses the least important key in
    which it differs from its nearest records (updated at once)."""
    for i in short:
        row = current[i]
        if (row < 0).all():
            continue
        differ = (current != row) & (current >= 0) & (row >= 0)
        far = differ.sum(axis=1)
        far[i] = 0
        candidates = far > 0
        if not candidates.any():
            continue
        nearest = differ[candidates & (far == far[candidates].min())].any(axis=0)
        v = next((v for v in order if nearest[v] and row[v] >= 0), next(v for v in order if row[v] >= 0))
        current[i, v] = -1


def _greedy_own(current: np.ndarray, short: np.ndarray, k: int, order: Sequence[int]) -> None:
    """One step of the greedy under ``"own"``: the records below k that one set of keys, the smallest (least
    important keys first) that does, brings together with k records once suppressed lose those keys; when no
    set does, the rarest record moves to the generalisation of it that k records reach at the least cost
    (:func:`_pull`)."""
    import itertools

    m = current.shape[1]
    rank = {v: r for r, v in enumerate(order)}
    combos, counts = np.unique(current, axis=0, return_counts=True)
    table = {tuple(c): int(n) for c, n in zip(combos.tolist(), counts.tolist())}
    sets = sorted((s for size in range(1, m + 1) for s in itertools.combinations(range(m), size)),
                  key=lambda s: (len(s), sorted(rank[v] for v in s)))
    for keys in sets:
        cols = list(keys)
        movers = short[(current[short][:, cols] >= 0).any(axis=1)]
        if len(movers) == 0:
            continue
        proj = current[movers].copy()
        proj[:, cols] = -1
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, w in zip(movers.tolist(), proj.tolist()):
            groups.setdefault(tuple(w), []).append(i)
        moved = False
        for w, members in groups.items():
            if table.get(w, 0) + len(members) >= k:
                current[members] = np.array(w)
                moved = True
        if moved:
            return
    _pull(current, int(short[0]), k, order, combos, counts)


def _pull(current: np.ndarray, i: int, k: int, order: Sequence[int], combos: np.ndarray, counts: np.ndarray) -> None:
    """Record ``i`` (below k, ``"own"``) moves to the generalisation of it that k records reach at the least cost:
    it loses a set of its keys, and records that agree with the generalisation join it, taken first from
    combinations below k and from what combinations above k can spare, then whole combinations."""
    import itertools

    row = current[i]
    present = [v for v in range(len(row)) if row[v] >= 0]
    rank = {v: r for r, v in enumerate(order)}
    best: tuple[tuple[int, int], np.ndarray, list[tuple[int, int]]] | None = None
    for size in range(1, len(present) + 1):
        for keys in itertools.combinations(present, size):
            w = row.copy()
            w[list(keys)] = -1
            reach = np.all((w[None, :] < 0) | (combos == w[None, :]), axis=1)
            here = np.all(combos == w[None, :], axis=1)
            need = k - 1 - int(counts[here].sum())
            cost = size
            takes: list[tuple[int, int]] = []
            if need > 0:
                offers = []
                for c in np.flatnonzero(reach & ~here).tolist():
                    each = int(((combos[c] >= 0) & (w < 0)).sum())
                    n = int(counts[c]) - (1 if np.array_equal(combos[c], row) else 0)
                    if n <= 0:
                        continue
                    if counts[c] < k or counts[c] > k:
                        free = n if counts[c] < k else int(counts[c]) - k
                        offers.append((0, each, int(c), free))
                    if counts[c] >= k:
                        offers.append((1, each, int(c), n))  # the whole combination
                for whole, each, c, n in sorted(offers):
                    if need <= 0:
                        break
                    if any(c == t for t, _ in takes):
                        continue
                    take = n if whole else min(n, need)
                    takes.append((c, take))
                    cost += take * each
                    need -= take
                if need > 0:
                    continue
            key = (cost, sum(rank[v] for v in keys))
            if best is None or key < best[0]:
                best = (key, w, takes)
    if best is None:  # unreachable: every record reaches the empty combination
        current[:] = -1
        return
    _, w, takes = best
    current[i] = w
    for c, take in takes:
        members = np.flatnonzero(np.all(current == combos[c][None, :], axis=1))
        members = members[members != i][:take]
        current[members] = w


def _put_back(codes: np.ndarray, mask: np.ndarray, k: int, missing: str, order: Sequence[int]) -> np.ndarray:
    """Every suppressed value whose return keeps the file k-anonymous put back (most important keys first)."""
    mask = mask.copy()
    current = np.where(mask, -1, codes)
    for v in reversed(list(order)):
        for i in np.flatnonzero(mask[:, v]).tolist():
            current[i, v] = codes[i, v]
            if _still(current, i, v, k, missing):
                mask[i, v] = False
            else:
                current[i, v] = -1
    return mask


def _agrees(current: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Which records agree with ``row`` under ``"any"``."""
    return np.all((current == row) | (current < 0) | (row < 0), axis=1)


def _still(current: np.ndarray, i: int, v: int, k: int, missing: str) -> bool:
    """Whether the file, k-anonymous before key ``v`` of record ``i`` was put back, still is: only ``i`` and the
    records it agreed with before can have lost (``"own"``: its new combination, and the one it left, empty or
    shared by k; ``"any"``: ``i``, and each record that agreed with it only through the missing value)."""
    row = current[i]
    if missing == "own":
        before = row.copy()
        before[v] = -1
        left = int((current == before).all(axis=1).sum())
        return int((current == row).all(axis=1).sum()) >= k and (left == 0 or left >= k)
    if int(_agrees(current, row).sum()) < k:
        return False
    before = row.copy()
    before[v] = -1
    lost = _agrees(current, before) & (current[:, v] >= 0) & (current[:, v] != row[v])
    return all(int(_agrees(current, u).sum()) >= k for u in np.unique(current[lost], axis=0))


# ----------------------------------------------------------------- frames

def cells_to_suppress(frame: pd.DataFrame, keys: Sequence[str], k: int, *, importance: Sequence[str] | None = None,
                      strata: Sequence[str] | str | None = None, missing: str = "own", method: str = "auto",
                      time_limit: float = 60.0) -> tuple[pd.DataFrame, Plan]:
    """The cells of ``frame`` to suppress for k-anonymity of ``keys`` (pure: the frame is not changed).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records; a missing value is a null.
    keys : sequence of str
        The key variables.
    k : int
        The k of k-anonymity.
    importance : sequence of str, optional
        Every key once, least important first (suppressed first).
    strata : str or sequence of str, optional
        Columns whose combinations are strata: k-anonymity within each.
    missing, method, time_limit
        As :func:`suppression_plan`.

    Returns
    -------
    pandas.DataFrame, Plan
        A boolean frame (the keys' columns, the frame's index): the cells to suppress; and the plan.

    Examples
    --------
    >>> df = pd.DataFrame({"a": ["x", "x", "x", "y", "y"], "b": ["p", "p", "q", "q", "q"]})
    >>> cells, plan = cells_to_suppress(df, ["a", "b"], 2, missing="own")
    >>> cells.sum().to_dict(), plan.optimal
    ({'a': 3, 'b': 0}, True)
    """
    keys = check_keys(keys, list(frame.columns))
    stratum = check_strata(strata, keys, list(frame.columns))
    order = None if importance is None else check_importance(importance, keys)
    _check(k, missing, method)
    if k > len(frame):
        raise ParameterError(f"k = {k} is more than the {len(frame)} records: no suppression makes the file "
                             f"{k}-anonymous")
    codes = key_codes(frame, keys)
    groups = stratum_groups(frame, stratum)
    plan = suppression_plan(codes, k, missing=missing, importance=order, strata=groups, method=method,
                            time_limit=time_limit)
    return pd.DataFrame(plan.mask, columns=list(keys), index=frame.index), plan


def check_keys(keys: Sequence[str], columns: Sequence[str], where: str = "the file") -> list[str]:
    """The key variables, checked: at least one, each once, each a column
    (:func:`pramkit.risk.kanonymity.check_columns`)."""
    return check_columns(keys, columns, "key", flag="--keys", where=where, noun="key variable")


def check_importance(importance: Sequence[str], keys: Sequence[str]) -> list[int]:
    """``importance`` (every key once, least important first) as key positions."""
    names = [str(x).strip() for x in importance]
    if sorted(names) != sorted(keys):
        missing_ = [k for k in keys if k not in names]
        extra = [x for x in names if x not in keys]
        twice = sorted({x for x in names if names.count(x) > 1})
        why = (f"it does not name {missing_[0]!r}" if missing_ else f"{extra[0]!r} is no key" if extra
               else f"it names {twice[0]!r} twice")
        raise ParameterError(f"--importance must name every key exactly once, least important first: {why}")
    return [list(keys).index(x) for x in names]


def check_strata(strata: Sequence[str] | str | None, keys: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The stratum columns, checked: columns of the file, none a key."""
    if strata is None:
        return []
    names = [strata] if isinstance(strata, str) else list(strata)
    names = [s.strip() for s in names if s.strip()]
    for s in names:
        if s in keys:
            raise ParameterError(f"stratum {s!r} is also a key: a stratum is released as it is, a key may be "
                                 "suppressed; name it in one of --keys and --strata")
        if s not in columns:
            raise ParameterError(f"stratum {s!r} is not a column of the file (its columns: {', '.join(columns)})")
    return names


# ----------------------------------------------------------------- files

@dataclass(frozen=True)
class SuppressionResult:
    """What :func:`suppress_file` did (private: the counts per key say where the rare combinations were).

    Parameters
    ----------
    rows : int
        The records written.
    keys : tuple of str
        The key variables.
    k : int
        The k of k-anonymity.
    missing : str
        The rule for a missing value.
    suppressed : mapping of str to int
        The values suppressed per key.
    lower_bound : int
        A lower bound on the fewest suppressions.
    optimal : bool
        The count is proven the fewest.
    method : str
        The solver used (``"exact"``, ``"heuristic"``, ``"mixed"``).
    seconds : float
        The solver's time.
    violating_before : int
        The records whose frequency was below k in the file read.
    data, output, receipt : str
        The file read, the released file and its receipt.
    sha256 : str
        The released file's SHA-256.
    blank_records : int
        The records that lost every key (under ``"any"`` they match every record).

    Examples
    --------
    >>> r = SuppressionResult(10, ("a",), 2, "any", {"a": 3}, 2, False, "heuristic", 0.1, 3, "d.csv", "o.csv",
    ...                       "o.csv.suppression.json", "00")
    >>> r.total, r.gap, r.to_dict()["suppressed"]
    (3, 0.5, {'a': 3})
    """

    rows: int
    keys: tuple[str, ...]
    k: int
    missing: str
    suppressed: Mapping[str, int]
    lower_bound: int
    optimal: bool
    method: str
    seconds: float
    violating_before: int
    data: str
    output: str
    receipt: str
    sha256: str
    blank_records: int = 0

    @property
    def total(self) -> int:
        """The values suppressed."""
        return int(sum(self.suppressed.values()))

    @property
    def gap(self) -> float:
        """The suppressions over the lower bound, relative to it (0: proven optimal)."""
        if self.total == self.lower_bound:
            return 0.0
        return math.inf if self.lower_bound == 0 else (self.total - self.lower_bound) / self.lower_bound

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values."""
        out = dataclasses.asdict(self)
        out["keys"] = list(self.keys)
        out["suppressed"] = dict(self.suppressed)
        out["total"] = self.total
        out["gap"] = self.gap if math.isfinite(self.gap) else "inf"
        return out


def guarantee(keys: Sequence[str], k: Any, missing: str, strata: Sequence[str] = ()) -> str:
    """The receipt's guarantee sentence, made from its fields.

    Examples
    --------
    >>> guarantee(["A", "B"], 3, "any")
    'every combination of the key variables A, B appears at least 3 times in the released file (a missing value matches any value)'
    >>> guarantee(["A"], 2, "own", ["S"])
    'every combination of the key variables A appears at least 2 times within each stratum of S in the released file (a missing value is a value of its own)'
    """
    rule = MISSING_RULE_WORDS["any" if missing == "any" else "own"]
    within = f" within each stratum of {', '.join(strata)}" if strata else ""
    return (f"every combination of the key variables {', '.join(keys)} appears at least {k} times{within} in the "
            f"released file ({rule})")


def guarantee_fragment(field: str, value: Any) -> str:
    """The words of the guarantee sentence that state one field of the receipt (``keys``, ``k``, ``missing``,
    ``strata``), so that the audit ties each field to the sentence on its own.

    Examples
    --------
    >>> sentence = guarantee(["A", "B"], 3, "any")
    >>> all(guarantee_fragment(f, v) in sentence for f, v in (("keys", ["A", "B"]), ("k", 3), ("missing", "any"),
    ...                                                        ("strata", [])))
    True
    >>> guarantee_fragment("k", 4) in sentence
    False
    """
    if field == "keys":
        return f"of the key variables {', '.join(str(x) for x in value)} appears"
    if field == "k":
        return f"appears at least {value} times"
    if field == "missing":
        return f"({MISSING_RULE_WORDS['any' if value == 'any' else 'own']})"
    if value:
        return f" times within each stratum of {', '.join(str(x) for x in value)} in the released file"
    return " times in the released file"


def receipt_path(out: str | Path) -> Path:
    """The receipt beside a released file: ``OUT.suppression.json``."""
    out = Path(out)
    return out.with_name(out.name + RECEIPT_SUFFIX)


def suppress_file(data: str | Path, keys: Sequence[str], k: int, out: str | Path, *,
                  importance: Sequence[str] | None = None, strata: Sequence[str] | str | None = None,
                  missing: str = "own", method: str = "auto", time_limit: float = 60.0,
                  na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
                  force: bool = False) -> SuppressionResult:
    """Suppress key values of ``data`` until every combination of ``keys`` is shared by ``k`` records, and write
    the released file and its public receipt (``OUT.suppression.json``), both or neither.

    A suppressed value is written as the file's missing value (an empty field in CSV; a null, in the formats
    :class:`pramkit.io.TableWriter` writes).  A key value missing in the file (a null or one of ``na_values``, a
    user-missing code) is missing for the rule and is written so too, so that a reader cannot tell a suppressed
    value from one missing in the file (as sdcMicro writes ``NA`` for both); every other value is written as
    it was read, missing codes included.  The released file's keys are therefore read with no missing text
    but the empty field (:func:`released_frequencies`), and the receipt needs no ``na_values``.

    Parameters
    ----------
    data, out : str or pathlib.Path
        The file read and the released file (its suffix gives its format).
    keys : sequence of str
        The key variables.
    k : int
        The k of k-anonymity: at least 2, at most the file's rows.
    importance, strata, missing, method, time_limit
        As :func:`cells_to_suppress`.
    na_values, sep, encoding
        How a CSV file is read (:func:`pramkit.io.iter_batches`).
    force : bool
        Replace an existing ``out`` and receipt.

    Returns
    -------
    SuppressionResult

    Raises
    ------
    ParameterError
        Bad settings (nothing written).
    OutputExistsError, WriteError
        As :class:`pramkit.io.TableWriter` (nothing written).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src = pathlib.Path(d) / "a.csv"
    ...     _ = src.write_text("a,b,n\\nx,p,1\\nx,p,2\\nx,q,3\\ny,q,4\\ny,q,5\\n")
    ...     r = suppress_file(src, ["a", "b"], 2, pathlib.Path(d) / "b.csv", missing="own")
    ...     print(r.suppressed, pathlib.Path(d, "b.csv").read_text().split())
    ...     print(json.loads(pathlib.Path(r.receipt).read_text())["k"])
    {'a': 3, 'b': 0} ['a,b,n', 'x,p,1', 'x,p,2', ',q,3', ',q,4', ',q,5']
    2
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from pramkit.atomic import check_writable
    from pramkit.io import blank_missing_codes, iter_batches, write_with_receipt

    src, out = Path(data), Path(out)
    _check(k, missing, method)
    receipt = receipt_path(out)
    check_writable(out, force=force, inputs=[src, receipt])
    check_writable(receipt, force=force, inputs=[src, out])
    meta, tables = iter_batches(src, na_values=tuple(na_values), sep=sep, encoding=encoding, keep_missing_codes=True)
    keys = check_keys(keys, meta.columns, src.name)
    stratum = check_strata(strata, keys, meta.columns)
    order = None if importance is None else check_importance(importance, keys)
    parts = list(tables)
    table = pa.concat_tables(parts) if parts else pa.table({c: pa.array([], pa.string()) for c in meta.columns})
    if k > table.num_rows:
        raise ParameterError(f"k = {k} is more than the {table.num_rows} rows of {src.name}: no suppression makes "
                             f"the file {k}-anonymous")
    blanked = blank_missing_codes(table.select(list(keys) + stratum), meta.missing).to_pandas()
    cells, plan = cells_to_suppress(blanked, keys, k, importance=None if order is None else [keys[i] for i in order],
                                    strata=stratum or None, missing=missing, method=method, time_limit=time_limit)
    codes = key_codes(blanked, keys)
    blank = int(((np.where(cells.to_numpy(), -1, codes) < 0).all(axis=1) & cells.to_numpy().any(axis=1)).sum())
    before = int((frequencies(codes, missing, stratum_groups(blanked, stratum)) < k).sum())
    released = table
    for key in keys:  # every missing value of a key written as the file's missing value: a suppressed value and
        i = released.column_names.index(key)  # one missing in the file cannot be told apart
        column = released.column(i)
        hide = pa.array(cells[key].to_numpy() | blanked[key].isna().to_numpy())
        released = released.set_column(i, released.field(i), pc.if_else(hide, pa.scalar(None, column.type),
                                                                                column))
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "keys": list(keys), "k": int(k),
                           "missing": missing, "strata": stratum, "guarantee": guarantee(keys, k, missing, stratum)}
    sha = write_with_receipt(out, receipt, released, doc, meta=meta, inputs=[src], force=force)
    return SuppressionResult(rows=released.num_rows, keys=tuple(keys), k=int(k), missing=missing,
                             suppressed={key: int(cells[key].sum()) for key in keys},
                             lower_bound=plan.lower_bound, optimal=plan.optimal, method=plan.method,
                             seconds=plan.seconds, violating_before=before, data=str(src), output=str(out),
                             receipt=str(receipt), sha256=sha, blank_records=blank)


def read_receipt(path: str | Path) -> dict[str, Any]:
    """The settings of a suppression receipt (``OUT.suppression.json``): keys, k, the rule and the strata.

    Raises
    ------
    ParameterError
        The file is missing, not JSON, or not a receipt of ``pramkit suppress`` (one line naming it).
    """
    from pramkit._json import read_json

    name = Path(path).name
    try:
        raw = read_json(path, f"the suppression receipt {name!r}", ParameterError)
    except (FileNotFoundError, IsADirectoryError):
        raise ParameterError(f"the suppression receipt {name!r} does not exist") from None
    ok = isinstance(raw, dict) and raw.get("format") == FORMAT and raw.get("version") == VERSION
    keys, strata = (raw.get("keys"), raw.get("strata")) if ok else (None, None)
    k, missing = (raw.get("k"), raw.get("missing")) if ok else (None, None)
    if not (ok and isinstance(keys, list) and keys and all(isinstance(x, str) for x in keys)
            and isinstance(strata, list) and all(isinstance(x, str) for x in strata)
            and isinstance(k, int) and not isinstance(k, bool) and k >= 2 and missing in MISSING_RULES
            and isinstance(raw.get("released"), dict) and isinstance(raw["released"].get("sha256"), str)):
        raise ParameterError(f"{name!r} is not a receipt of pramkit suppress (format {FORMAT!r}, version {VERSION}, "
                             "with its keys, k, rule, strata and released file)")
    return {"keys": list(keys), "k": int(k), "missing": str(missing), "strata": list(strata),
            "sha256": raw["released"]["sha256"], "file": str(raw["released"].get("file", ""))}


def declare_suppression(release: Any, receipt: str | Path, *, data: Any, na_values: Sequence[str] = NA_VALUES,
                        sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> Any:
    """The release with the local suppression its data went through stated in the manifest's
    ``input["suppression"]`` (the keys, k, the rule for a missing value, the strata: settings, public), so that the
    guarantee sentence says what the published file guarantees as a whole (the ledger's ``"suppressed"`` fact).

    ``data`` must be the file ``pramkit suppress`` wrote with this receipt (its SHA-256 is the receipt's); a frame
    must be k-anonymous by the receipt's settings (recounted).

    Parameters
    ----------
    release : pramkit.release.record.Release
        A designed release.
    receipt : str or pathlib.Path
        The suppression receipt (``OUT.suppression.json``).
    data : path or frame
        The data the release was designed from.
    na_values, sep, encoding
        How a CSV file is read.

    Returns
    -------
    pramkit.release.record.Release

    Raises
    ------
    ParameterError
        Not a suppression receipt, or not the data it was written for (one line).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.release.choices import DesignChoices
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src, out = pathlib.Path(d, "a.csv"), pathlib.Path(d, "b.csv")
    ...     _ = src.write_text("a,b\\n" + "x,p\\nx,p\\nx,q\\ny,q\\ny,q\\n" * 20)
    ...     r = suppress_file(src, ["a", "b"], 30, out)
    ...     release = DesignChoices(method="rr", epsilon=2.0, suppressed_by=r.receipt).release(out, ["b"])
    >>> release.manifest.input["suppression"]
    {'keys': ['a', 'b'], 'k': 30, 'missing': 'own', 'strata': []}
    >>> print(release.manifest.guarantee.split(". ")[-1])
    Every combination of a, released as they are, appears at least 30 times in the released file (a missing value is a value of its own).
    """
    import dataclasses

    from pramkit.source import Source

    settings = read_receipt(receipt)
    name = Path(receipt).name
    if isinstance(data, (str, Path)):
        from pramkit.io import sha256_of

        if sha256_of(data) != settings["sha256"]:
            raise ParameterError(f"{Path(data).name} is not the file {name} was written for (its SHA-256 differs): "
                                 f"design from the file pramkit suppress wrote ({settings['file'] or 'OUT'})")
    opened = Source.open(data, na_values=na_values, sep=sep, encoding=encoding)
    absent = [c for c in [*settings["keys"], *settings["strata"]] if c not in opened.columns]
    if absent:
        raise ParameterError(f"{name} names {absent[0]!r}, not a column of the data")
    if not isinstance(data, (str, Path)):
        frame = opened.frame([*settings["keys"], *settings["strata"]])
        groups = stratum_groups(frame, settings["strata"])
        if (frequencies(key_codes(frame, settings["keys"]), settings["missing"], groups) < settings["k"]).any():
            raise ParameterError(f"the data is not {settings['k']}-anonymous by {name}: it is not the file "
                                 "pramkit suppress wrote")
    stated = {key: settings[key] for key in ("keys", "k", "missing", "strata")}
    manifest = dataclasses.replace(release.manifest, input={**release.manifest.input, "suppression": stated})
    return dataclasses.replace(release, manifest=manifest)


def released_frequencies(path: str | Path, keys: Sequence[str], missing: str, *, strata: Sequence[str] = (),
                         na_values: Sequence[str] = (), sep: str = CSV_SEP,
                         encoding: str = CSV_ENCODING) -> np.ndarray:
    """The frequency of every record of a released file (for its audit): read as written, its empty fields (and
    ``na_values``, none by default: :func:`suppress_file` writes every missing key value empty) missing.

    Raises
    ------
    DataError
        A key or stratum is not a column of the file.
    """
    import pyarrow as pa

    from pramkit.io import blank_missing_codes, iter_batches

    meta, tables = iter_batches(Path(path), na_values=tuple(na_values), sep=sep, encoding=encoding,
                                keep_missing_codes=True)
    absent = [c for c in [*keys, *strata] if c not in meta.columns]
    if absent:
        raise DataError(f"{Path(path).name} has no column {absent[0]!r}")
    parts = [blank_missing_codes(t.select([*keys, *strata]), meta.missing) for t in tables]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    frame = pa.concat_tables(parts).to_pandas()
    return frequencies(key_codes(frame, keys), missing, stratum_groups(frame, strata))


def changed_cells(original: str | Path, released: str | Path, keys: Sequence[str], *,
                  na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> str:
    """What the released file changed beyond making key values missing ("" when nothing): the columns, the rows,
    and every value of the original kept, except a key value made missing.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     a, b = pathlib.Path(d) / "a.csv", pathlib.Path(d) / "b.csv"
    ...     _ = a.write_text("k,v\\nx,1\\ny,2\\n")
    ...     _ = b.write_text("k,v\\n,1\\ny,3\\n")
    ...     print(changed_cells(a, b, ["k"]))
    row 2 of b.csv: v is '3', the original's '2'
    """
    import pyarrow as pa

    from pramkit.io import blank_missing_codes, iter_batches

    def read(path: Path) -> tuple[Any, pa.Table]:
        meta, tables = iter_batches(path, na_values=tuple(na_values), sep=sep, encoding=encoding,
                                    keep_missing_codes=True)
        parts = list(tables)
        return meta, (pa.concat_tables(parts) if parts else None)

    o_meta, o = read(Path(original))
    r_meta, r = read(Path(released))
    name = Path(released).name
    if o_meta.columns != r_meta.columns:
        return f"{name} has the columns {', '.join(r_meta.columns)}, the original {', '.join(o_meta.columns)}"
    rows = (0 if o is None else o.num_rows, 0 if r is None else r.num_rows)
    if rows[0] != rows[1] or o is None or r is None:
        return "" if rows == (0, 0) else f"{name} has {rows[1]} rows, the original {rows[0]}"
    gone = blank_missing_codes(r.select(list(keys)), r_meta.missing)
    for column in o_meta.columns:
        a, b = o.column(column).to_pylist(), r.column(column).to_pylist()
        hidden = gone.column(column).to_pylist() if column in keys else None
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y or (hidden is not None and hidden[i] is None):
                continue
            return f"row {i + 1} of {name}: {column} is {y!r}, the original's {x!r}"
    return ""
