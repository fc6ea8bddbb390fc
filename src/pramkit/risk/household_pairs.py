"""The expected household risk after PRAM, with the dependence of each pair of members.

A record ``i`` of true cell ``k_i`` has the risk after PRAM ``R_i = 1{Z_i = k_i} r(f~_{k_i})``
(:mod:`pramkit.risk.expected`), and its household the risk ``1 - prod_{i in h} (1 - R_i)``.  The
members' risks are not independent: the released counts of their cells are sums over the same other
records, each released in one cell or another, never in two (multinomial, negatively dependent), and
two members of one cell share its count.  By inclusion-exclusion

    E prod_{i in h} (1 - R_i) = sum_{A subset h} (-1)^|A| E prod_{i in A} R_i,

and with ``r(f) = p int_0^1 t^(f-1) / (p + (1-p) t) dt`` (:mod:`pramkit.risk.individual`),

    E prod_{i in A} R_i = prod_{i in A} M[k_i, k_i] p^|A| int_[0,1]^|A| prod_i 1 / (p + (1-p) t_i)
                          prod_c T_c^(a_c - 1) G_B(T) dt,

``T_c`` the product of the ``t_i`` of the members of ``A`` in cell ``c``, ``a_c`` their number, and
``G_B(T) = prod_{l not in A} (1 - sum_c M[k_l, c] (1 - T_c))`` the joint generating function of the
other records' counts in those cells (members of ``A`` kept, each other record released in at most one
of them).  Records of two different combinations of the unperturbed keys can never be released in the
same cell, so members of a household in different combinations have independent risks.

:func:`household_expectation` groups each household's members by that combination: the groups' risks
are independent, and the household's risk is one minus the product over its groups of
``E prod_{i in g} (1 - R_i)``.  A group of one member gives ``1 - mu_i`` (``mu_i = E R_i``).  A group of
two gives exactly ``(1 - mu_i)(1 - mu_j) + C_ij``, ``C_ij = E R_i R_j - mu_i mu_j``, ``E R_i R_j`` the
two-dimensional integral above, taken once for every distinct pair of cells.  A group of three members
or more of one cell (alike on every key: children of one sex and age band, a perturbed household-level
variable) is taken exactly by :func:`cell_group_factors`, from the distribution of the other records'
count in the cell.  A group of three or more in several cells is taken exactly by :func:`spread_factor`
(every outcome of its members against the joint distribution of the others' counts in their cells)
within :data:`GROUP_MAX_WORK`; beyond it, it keeps the terms up to pairs,

    E prod_{i in g} (1 - R_i) ~ prod_{i in g} (1 - mu_i) + sum_{i<j in g} C_ij prod_{l in g, l != i, j} (1 - mu_l),

and leaves out the terms of three members and more (``exact`` False).  Beyond :data:`PAIR_MAX_WORK` the
members are combined as independent events (``exact`` False).
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from pramkit.risk.quadrature import kept_quadrature

__all__ = [
    "CELL_MAX_RECORDS",
    "GROUP_MAX_WORK",
    "PAIR_MAX_WORK",
    "HouseholdExpectation",
    "HouseholdLayout",
    "cell_group_factors",
    "household_expectation",
    "household_layout",
    "pair_moment",
    "spread_factor",
]

#: Largest number of quadrature points (over the distinct pairs of cells, nodes squared) spent on the pairs'
#: integrals, about 10 to 20 ns each (0.15 to 0.3 s); beyond it the members are combined as independent
#: events (``exact`` False).
PAIR_MAX_WORK = 15_000_000

#: Largest number of other records that can be released in a cell for which a group of three members or
#: more of that cell is taken exactly (the distribution of their count, by convolution); beyond it, its pairs.
CELL_MAX_RECORDS = 5_000

#: Largest work (over the distinct groups of three members or more in several cells: the outcomes of their
#: members, ``(cells + 1)^members``, times the entries of the joint distribution of the other records' counts
#: in their cells, plus 2 000) spent on taking those groups exactly; beyond it, the remaining ones keep their pairs.
GROUP_MAX_WORK = 20_000_000

#: Gauss-Legendre nodes per panel of the pairs' two-dimensional quadrature.
_PAIR_NODES = 8


class HouseholdExpectation(NamedTuple):
    """What :func:`household_expectation` returns.

    Parameters
    ----------
    risk : numpy.ndarray
        Every record's household risk after PRAM (expected).
    exact : bool
        Whether it is the exact expectation (given exact members' risks): the work within
        :data:`PAIR_MAX_WORK`, :data:`CELL_MAX_RECORDS` and :data:`GROUP_MAX_WORK`.
    pairs : int
        Distinct pairs of cells whose joint moment was integrated.
    """

    risk: np.ndarray
    exact: bool
    pairs: int


def _pair_quadrature(mu_max: float, p_min: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``s`` and weights on the panels of :func:`pramkit.risk.quadrature.kept_quadrature`, with
    :data:`_PAIR_NODES` per panel."""
    return kept_quadrature(mu_max, p_min, nodes=_PAIR_NODES)


def pair_moment(f: np.ndarray, joint: np.ndarray, a: int, b: int, p_a: float, p_b: float) -> float:
    """``E[R_i R_j]`` for a record ``i`` of cell ``a`` and a record ``j`` of cell ``b`` of one combination
    of the unperturbed keys (``a == b``: two records of one cell).

    Parameters
    ----------
    f : numpy.ndarray
        The original counts of the combination's cells (``i`` and ``j`` among them).
    joint : numpy.ndarray
        The joint matrix of the perturbed cells.
    a, b : int
        The two records' cells.
    p_a, p_b : float
        The released cells' sampling fractions.

    Returns
    -------
    float

    Examples
    --------
    Randomized response (keep 1/2) on a census of a man and a woman: both risks are 1 when both are
    kept (1/4), one is 1/2 when one is kept and the other joins it; so ``E R_m R_f = 1/4``:

    >>> m = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> round(pair_moment(np.array([1.0, 1.0]), m, 0, 1, 1.0, 1.0), 10)
    0.25

    Two records of one cell, one other record that joins it with probability 1/2, all kept: both risks
    are ``1/2`` or ``1/3``, ``E R_i R_j = (1/4 + 1/9) / 2``:

    >>> m = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> bool(abs(pair_moment(np.array([2.0, 1.0]), m, 0, 0, 1.0, 1.0) - (1 / 4 + 1 / 9) / 2) < 1e-12)
    True
    """
    others = np.asarray(f, dtype=float).copy()
    others[a] -= 1.0
    others[b] -= 1.0
    x, y = joint[:, a], joint[:, b]
    moving = (others > 0) & ((x > 0) | (y > 0))
    s, w = _pair_quadrature(float(f @ np.maximum(x, y)), min(p_a, p_b))
    t = np.exp(-s)
    k_a = w * t * p_a / (p_a + (1.0 - p_a) * t)
    k_b = w * t * p_b / (p_b + (1.0 - p_b) * t)
    t1, t2 = t[:, None], t[None, :]
    log_g = np.zeros((t.size, t.size))
    pairs = np.stack([x[moving], y[moving]], axis=1)
    entries, where = np.unique(pairs, axis=0, return_inverse=True)  # few distinct entries in a design
    weight = np.bincount(where.ravel(), weights=others[moving], minlength=len(entries))
    with np.errstate(divide="ignore"):
        if a == b:  # one cell: T = t1 t2, and T^(2 - 1) for the pair
            product = t1 * t2
            for (xe, _), c in zip(entries, weight):
                log_g += c * np.log((1.0 - xe) + xe * product)
            log_g += np.log(product)
        else:
            for (xe, ye), c in zip(entries, weight):
                log_g += c * np.log(max(1.0 - xe - ye, 0.0) + xe * t1 + ye * t2)
    return float(joint[a, a] * joint[b, b] * (k_a @ np.exp(log_g) @ k_b))


def cell_group_factors(f: np.ndarray, joint: np.ndarray, c: int, sizes: np.ndarray, p: float) -> np.ndarray | None:
    """``E prod_i (1 - R_i)`` over ``m`` records of one cell ``c`` of a combination of the unperturbed keys,
    exactly, for each ``m`` of ``sizes``; None beyond :data:`CELL_MAX_RECORDS`.

    ``K`` of them are kept (binomial, ``M[c, c]``), the others are released elsewhere (risk 0), and the
    kept ones share the count ``K + S``, ``S`` the other records released in ``c``, so

        E prod (1 - R_i) = sum_K P(K) sum_s P(S = s) (1 - r(K + s))^K.

    The distribution of ``S`` is the discrete Fourier transform of its generating function
    ``prod_l (1 - M[l, c] + M[l, c] z)^(f_l - m [l = c])`` at the roots of unity of order
    ``1 + sum f_l`` (exact but for rounding, about 1e-16 a probability).

    Parameters
    ----------
    f : numpy.ndarray
        The original counts of the combination's cells (the ``m`` records among them).
    joint : numpy.ndarray
        The joint matrix of the perturbed cells.
    c : int
        The records' cell.
    sizes : numpy.ndarray
        How many records (``m`` of them, each at most ``f[c]``).
    p : float
        The cell's sampling fraction.

    Returns
    -------
    numpy.ndarray or None
        One value for each of ``sizes``.

    Examples
    --------
    A census of three records of one cell, each kept with probability 1/2 or else released in the other
    cell, where one record is kept with probability 1/2: ``K`` of the three kept, joined or not, have
    the product ``(1 - 1 / (K + joined))^K``:

    >>> m = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> total = sum(math.comb(3, k) / 16 * ((1 - 1 / (k + j)) ** k if k else 1.0) for k in range(4) for j in (0, 1))
    >>> bool(abs(cell_group_factors(np.array([3.0, 1.0]), m, 0, np.array([3]), 1.0)[0] - total) < 1e-15)
    True
    """
    from scipy.stats import binom

    from pramkit.risk.individual import benedetti_franconi

    q = joint[:, c]
    reach = np.flatnonzero((f > 0) & (q > 0))
    order = int(f[reach].sum()) + 1
    if order > CELL_MAX_RECORDS:
        return None
    z = np.exp(2j * np.pi * np.arange(order) / order)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log((1.0 - q[reach])[:, None] + q[reach][:, None] * z)  # -inf at a zero of a factor
        others = np.where(reach == c, 0.0, f[reach]) @ np.where(np.isinf(logs.real), -np.inf, logs)
    at = np.arange(1, order + int(sizes.max()) + 1, dtype=float)
    r = benedetti_franconi(at, at / p)  # r(1), r(2), ...
    out = np.empty(len(sizes))
    for n, m in enumerate(sizes):
        own = logs[reach == c]  # empty when the cell's records never stay: then no member is kept
        log_g = others + (own[0] * (f[c] - m) if own.size and f[c] > m else 0.0)
        pmf = np.clip(np.fft.fft(np.exp(log_g)).real / order, 0.0, None)
        kept = binom.pmf(np.arange(m + 1), m, joint[c, c])
        out[n] = kept[0] + sum(kept[k] * float(pmf @ (1.0 - r[k - 1:k - 1 + order]) ** k) for k in range(1, m + 1))
    return out


def spread_factor(f: np.ndarray, joint: np.ndarray, cells: np.ndarray, p: np.ndarray) -> float | None:
    """``E prod_i (1 - R_i)`` over records of the given cells (one entry per record) of one combination of
    the unperturbed keys, exactly; None beyond :data:`GROUP_MAX_WORK`.

    Each record is kept, or released in another of the records' cells (adding to its count, risk 0), or
    elsewhere; for every such outcome the kept ones' risks depend on the counts ``S_c`` of the other
    records released in the records' cells, whose joint distribution is the multidimensional discrete
    Fourier transform of ``prod_l (1 - sum_c M[l, c] (1 - z_c))`` over the other records.

    Parameters
    ----------
    f : numpy.ndarray
        The original counts of the combination's cells (the records among them).
    joint : numpy.ndarray
        The joint matrix of the perturbed cells.
    cells : numpy.ndarray
        The records' cells.
    p : numpy.ndarray
        The sampling fraction of every cell of the combination.

    Returns
    -------
    float or None

    Examples
    --------
    Randomized response (keep 1/2) on a census of a man and a woman of one household: 1/2 (both kept, or
    one kept and joined), as :func:`household_expectation` finds by pairs:

    >>> m = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> spread_factor(np.array([1.0, 1.0]), m, np.array([0, 1]), np.ones(2))
    0.5
    """
    from pramkit.risk.individual import benedetti_franconi

    if _spread_work(f, joint, cells) > GROUP_MAX_WORK:
        return None
    distinct, own = np.unique(cells, return_inverse=True)
    d = len(distinct)
    others = np.asarray(f, dtype=float).copy()
    np.subtract.at(others, cells, 1.0)
    q = joint[:, distinct]
    reach = np.flatnonzero((others > 0) & (q.sum(axis=1) > 0))
    shape = [int(others[reach] @ (q[reach, c] > 0)) + 1 for c in range(d)]
    log_g = np.zeros(shape, dtype=complex)
    grids = np.meshgrid(*[np.exp(2j * np.pi * np.arange(n) / n) for n in shape], indexing="ij", sparse=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        for l in reach:
            log_g = log_g + others[l] * np.log((1.0 - q[l].sum()) + sum(q[l, c] * grids[c] for c in range(d)))
    pmf = np.clip(np.fft.fftn(np.exp(log_g)).real / math.prod(shape), 0.0, None)
    moves = np.column_stack([q[distinct[own]], 1.0 - q[distinct[own]].sum(axis=1)])  # record x (cells, elsewhere)
    total = 0.0
    for outcome in itertools.product(range(d + 1), repeat=len(cells)):
        prob = math.prod(moves[i, o] for i, o in enumerate(outcome))
        if prob <= 0.0:
            continue
        landed = np.bincount(np.array(outcome), minlength=d + 1)[:d]
        kept = np.bincount(own[np.array(outcome) == own], minlength=d)
        value = pmf
        for c in range(d - 1, -1, -1):  # contract the last axis: cell c's factor (1 - r(S_c + landed_c))^kept_c
            if kept[c]:
                at = landed[c] + np.arange(shape[c], dtype=float)
                value = value @ (1.0 - benedetti_franconi(at, at / p[distinct[c]])) ** kept[c]
            else:
                value = value.sum(axis=-1)
        total += prob * float(value)
    return float(total)


def _spread_work(f: np.ndarray, joint: np.ndarray, cells: np.ndarray) -> int:
    """The work of :func:`spread_factor`: the outcomes of the records, each a pass over the joint
    distribution of the others' counts (and about 2 000 operations of its own)."""
    distinct = np.unique(cells)
    others = np.asarray(f, dtype=float).copy()
    np.subtract.at(others, cells, 1.0)
    reach = joint[:, distinct] > 0
    entries = math.prod(int(others @ reach[:, c]) + 1 for c in range(len(distinct)))
    return (entries + 2_000) * (len(distinct) + 1) ** len(cells)


def _spread_factors(layout: HouseholdLayout, rows: np.ndarray, joint: np.ndarray,
                    fraction: np.ndarray) -> np.ndarray:
    """:func:`spread_factor` for every group of ``layout.spread`` (NaN beyond its limit), each distinct
    combination and cells once."""
    out = np.full(len(layout.spread), math.nan)
    done: dict[tuple[int, ...], float | None] = {}
    order = np.argsort(layout.key, kind="stable")
    starts = np.searchsorted(layout.key[order], layout.spread)
    ends = np.searchsorted(layout.key[order], layout.spread, side="right")
    spent = 0
    for n, (g, a, b) in enumerate(zip(layout.spread, starts, ends)):
        u = int(layout.combinations[g])
        cells = np.sort(layout.columns[order[a:b]])
        signature = (u, *cells.tolist())
        if signature not in done:
            work = _spread_work(rows[u], joint, cells)
            spent += work
            done[signature] = spread_factor(rows[u], joint, cells, fraction[u]) if spent <= GROUP_MAX_WORK else None
        got = done[signature]
        out[n] = math.nan if got is None else got
    return out


def _crowd_factors(crowd_cells: np.ndarray, rows: np.ndarray, joint: np.ndarray,
                   fraction: np.ndarray) -> tuple[np.ndarray, bool]:
    """:func:`cell_group_factors` for every ``(combination, cell, members)`` row (NaN beyond its limit),
    and whether none was."""
    out = np.full(len(crowd_cells), math.nan)
    cells, which = np.unique(crowd_cells[:, :2].reshape(-1, 2), axis=0, return_inverse=True)
    for n, (u, c) in enumerate(cells):
        at = np.flatnonzero(which.ravel() == n)
        got = cell_group_factors(rows[u], joint, int(c), crowd_cells[at, 2], float(fraction[u, c]))
        if got is not None:
            out[at] = got
    return out, not bool(np.isnan(out).any())


def _pair_work(distinct: np.ndarray, rows: np.ndarray, joint: np.ndarray, fraction: np.ndarray) -> int:
    """Quadrature points the pairs of cells ``distinct`` (combination, cell, cell) take in :func:`pair_moment`."""
    fewest = _pair_quadrature(0.0, 1.0)[0].size ** 2  # the fewest points a pair takes
    if distinct.shape[0] * fewest > PAIR_MAX_WORK:
        return distinct.shape[0] * fewest
    u, a, b = distinct.T
    mu = np.einsum("ik,ki->i", rows[u], np.maximum(joint[:, a], joint[:, b]))
    p = np.minimum(fraction[u, a], fraction[u, b])
    return sum(_pair_quadrature(float(m), float(q))[0].size ** 2 for m, q in zip(mu, p))


def _pairs_of(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(i, j)``, ``i < j``, of positions with the same group code."""
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    sizes = np.diff(np.r_[starts, len(groups)])
    first, second = [], []
    for size in np.unique(sizes[sizes > 1]):
        at = starts[sizes == size]
        i, j = np.triu_indices(int(size), 1)
        first.append((at[:, None] + i).ravel())
        second.append((at[:, None] + j).ravel())
    if not first:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return order[np.concatenate(first)], order[np.concatenate(second)]


def _others_product(mu: np.ndarray, key: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``prod_{l in g, l != i, j} (1 - mu_l)`` for each pair ``(i, j)`` of records of a group ``g``
    (``key``: every record's group)."""
    sure = mu >= 1.0
    with np.errstate(divide="ignore"):
        logs = np.where(sure, 0.0, np.log1p(-np.where(sure, 0.0, mu)))
    total = np.bincount(key, weights=logs)
    certain = np.bincount(key, weights=sure.astype(float))
    g = key[i]
    return np.where(certain[g] - sure[i] - sure[j] > 0.5, 0.0, np.exp(total[g] - logs[i] - logs[j]))


class HouseholdLayout(NamedTuple):
    """The groups of every household's members and their pairs, which depend on the file and the kind of
    design, not on its matrices (:func:`household_layout`).

    Parameters
    ----------
    members : numpy.ndarray
        Every record's household code ``0..H-1``.
    counted : numpy.ndarray
        The positions of the records that have a risk.
    key : numpy.ndarray
        The group (a household's members in one combination of the unperturbed keys) of each counted record.
    households : numpy.ndarray
        The household of each group.
    largest : int
        Members of the largest group.
    first, second : numpy.ndarray
        The pairs of counted records (positions in ``counted``) of one group.
    cells : numpy.ndarray
        The distinct pairs of cells, rows ``(combination, cell, cell)``.
    pair_cells : numpy.ndarray
        Each pair's row of ``cells``.
    crowds : numpy.ndarray
        The groups of three members or more, all of one cell.
    crowd_cells : numpy.ndarray
        Their distinct ``(combination, cell, members)``, rows.
    crowd_of : numpy.ndarray
        Each of ``crowds``' row of ``crowd_cells``.
    spread : numpy.ndarray
        The groups of three members or more in several cells.
    columns : numpy.ndarray
        The cell of each counted record.
    combinations : numpy.ndarray
        The combination of the unperturbed keys of each group.
    """

    members: np.ndarray
    counted: np.ndarray
    key: np.ndarray
    households: np.ndarray
    largest: int
    first: np.ndarray
    second: np.ndarray
    cells: np.ndarray
    pair_cells: np.ndarray
    crowds: np.ndarray
    crowd_cells: np.ndarray
    crowd_of: np.ndarray
    spread: np.ndarray
    columns: np.ndarray
    combinations: np.ndarray


def household_layout(members: np.ndarray, group: np.ndarray, column: np.ndarray) -> HouseholdLayout:
    """Group every household's members by their combination of the unperturbed keys, and pair them.

    Parameters
    ----------
    members : numpy.ndarray
        Every record's household code ``0..H-1``.
    group : numpy.ndarray
        Every record's combination of the unperturbed keys (-1: the record has no risk, a missing value).
    column : numpy.ndarray
        Every record's cell of the perturbed keys.

    Returns
    -------
    HouseholdLayout

    Examples
    --------
    >>> layout = household_layout(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 0]), np.array([2, 0, 1, 1]))
    >>> layout.largest, layout.cells.tolist()
    (2, [[0, 0, 2]])
    """
    counted = np.flatnonzero(group >= 0)
    span = int(group[counted].max()) + 1 if counted.size else 1
    code = members[counted].astype(np.int64) * span + group[counted]
    owners, key, sizes = np.unique(code, return_inverse=True, return_counts=True)
    key = key.ravel()
    first, second = _pairs_of(key)
    i, j = counted[first], counted[second]
    cells = np.stack([group[i], np.minimum(column[i], column[j]), np.maximum(column[i], column[j])], axis=1)
    distinct, back = np.unique(cells.reshape(-1, 3), axis=0, return_inverse=True)
    low = np.full(len(owners), np.iinfo(np.int64).max)
    high = np.full(len(owners), -1)
    np.minimum.at(low, key, column[counted])
    np.maximum.at(high, key, column[counted])
    big = sizes >= 3
    crowds = np.flatnonzero(big & (low == high))
    combination = owners % span
    crowd_cells, crowd_of = np.unique(np.stack([combination[crowds], low[crowds], sizes[crowds]], axis=1).reshape(-1, 3),
                                      axis=0, return_inverse=True)
    return HouseholdLayout(members, counted, key, owners // span, int(sizes.max()) if sizes.size else 0,
                           first, second, distinct.reshape(-1, 3), back.ravel(), crowds, crowd_cells.reshape(-1, 3),
                           crowd_of.ravel(), np.flatnonzero(big & (low != high)), column[counted], combination)


def household_expectation(mu: np.ndarray, layout: HouseholdLayout, rows: np.ndarray, joint: np.ndarray | None,
                          fraction: np.ndarray) -> HouseholdExpectation:
    """Every record's expected household risk after PRAM, the pairs of members' dependence included.

    Parameters
    ----------
    mu : numpy.ndarray
        Every record's expected risk after PRAM ``E R_i`` (NaN where it has none, as in ``layout``).
    layout : HouseholdLayout
        The households' groups of members and their pairs (:func:`household_layout`).
    rows : numpy.ndarray
        The original counts, one row per combination of the unperturbed keys, one column per cell of the
        perturbed keys.
    joint : numpy.ndarray or None
        The joint matrix of the perturbed cells (None: too large to form; the members are then combined
        as independent events).
    fraction : numpy.ndarray
        The sampling fraction of every cell, of the shape of ``rows``.

    Returns
    -------
    HouseholdExpectation

    Examples
    --------
    Randomized response (keep 1/2) on sex, a man and a woman of one household in a census: the
    household is re-identified with probability 1/2 (both kept: 1; one kept and joined by the other:
    1/2), where combining the members' risks 3/8 as independent events gives ``1 - (5/8)^2 = 0.609``:

    >>> m = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> layout = household_layout(np.array([0, 0]), np.array([0, 0]), np.array([0, 1]))
    >>> e = household_expectation(np.array([0.375, 0.375]), layout, np.array([[1.0, 1.0]]), m, np.ones((1, 2)))
    >>> np.round(e.risk, 12).tolist(), e.exact
    ([0.5, 0.5], True)
    """
    from pramkit.risk.household import combine_households

    independent = combine_households(mu, layout.members)
    if layout.first.size == 0:
        return HouseholdExpectation(independent, True, 0)
    if joint is None or _pair_work(layout.cells, rows, joint, fraction) > PAIR_MAX_WORK:
        return HouseholdExpectation(independent, False, 0)
    moments = np.array([pair_moment(rows[u], joint, a, b, fraction[u, a], fraction[u, b])
                        for u, a, b in layout.cells])
    m = mu[layout.counted]
    first, second, key = layout.first, layout.second, layout.key
    covariance = moments[layout.pair_cells] - m[first] * m[second]
    with np.errstate(divide="ignore"):  # E prod_{l in g} (1 - R_l) of each group, up to its pairs
        none = np.exp(np.bincount(key, weights=np.log1p(-m)))
        correction = np.bincount(key[first], weights=covariance * _others_product(m, key, first, second),
                                 minlength=len(layout.households))
        factor = np.clip(none + correction, 0.0, 1.0)
        taken, exact = _crowd_factors(layout.crowd_cells, rows, joint, fraction)
        if layout.crowds.size:  # groups of one cell, three members or more: exactly, where affordable
            taken = taken[layout.crowd_of]
            factor[layout.crowds] = np.where(np.isnan(taken), factor[layout.crowds], taken)
        spread = _spread_factors(layout, rows, joint, fraction)  # several cells: exactly where affordable
        factor[layout.spread] = np.where(np.isnan(spread), factor[layout.spread], spread)
        exact = exact and not bool(np.isnan(spread).any())
        logs = np.log(factor)
    spared = np.bincount(layout.households, weights=logs, minlength=int(layout.members.max()) + 1)
    return HouseholdExpectation(-np.expm1(spared)[layout.members], exact, len(layout.cells))
