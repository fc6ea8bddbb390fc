"""Targeted record swapping on household arrays: who is swapped, and with whom.

Eurostat's targeted record swapping (the ONS method of the 2011 and 2021
censuses) as sdcMicro's ``recordSwap`` implements it (Gussenbauer, "Targeted
Record Swapping", sdcMicro vignette, and its C++ source), with two donor rules
(:data:`DONOR_RULES`); the code is pramkit's own.  What differs from
``recordSwap`` is listed in ``docs/swapping.md``.

* **Households move whole.**  A swap exchanges the whole geography (every level
  of the hierarchy) of two households; all their members move with them.
* **Risk.**  For each level ``h`` of the hierarchy a person's cell is its area
  at level ``h`` crossed with the risk variables; a household is *risky at
  level h* when some member's cell holds fewer than ``k`` persons (k-anonymity).
  It is swapped across the highest such level.  A household's sampling weight is
  the largest ``1 / count`` of its members at the lowest level (every weight is
  1 without risk variables).
* **Targeted, then random.**  Levels are visited from the highest to the lowest;
  at level ``h`` every risky household not yet swapped is swapped with a donor
  in *another area of level h* (under the donor rule ``same-parent``: within the
  same area of level h - 1).  Then, at the
  lowest level, households are drawn in each lowest area (weighted without
  replacement by their sampling weight) until the area's quota is met: the
  quota of an area with ``n`` households is ``rate * n / 2`` (one swap moves two
  households), rounded so that the quotas sum to ``round(rate * H / 2)``;
  targeted swaps drawn in an area count towards its quota.  Without risky
  households, exactly ``2 round(rate * H / 2)`` households are swapped.
* **Similarity.**  A donor has the same values of the first similarity profile
  (household size, say); a household without such a donor tries the next
  profile; a household with no donor under any profile is *unswappable* and is
  counted (:attr:`SwapDraw.unswappable`).
* **Donors, rule ``same-parent``** (the default, pramkit's rule since its first
  release): drawn among the households of the other areas of level h under the same
  area of level h - 1 that are neither swapped nor selected at this level, weighted
  by their sampling weight: the area with probability proportional to the weight
  left in it, then its next household by priority (Efraimidis and Spirakis 2006:
  the largest ``log(u) / w`` first).  Households selected at a level are never each
  other's donors there.
* **Donors, rule ``any-area``** (the donor pool of sdcMicro's ``recordSwap``, drawn otherwise): drawn among the
  households of *any* other area of level h, anywhere in the file, not yet
  swapped, weighted by ``w_h``, the household's risk at level h (the largest
  ``1 / count`` of its members' cells area of level h x risk variables; 1 without
  risk variables), so that risky donors come first, households selected in
  another area and not yet swapped included: the area with probability
  proportional to the weight left in it, then its next household by priority
  (the largest ``log(u) / w_h``).  The areas of a level are visited in turn, in a
  keyed random order; at the lowest level each area's households are selected
  when its turn comes, among those not yet swapped (a household taken as a donor
  before is not selected again).  A selected household without a donor is never
  selected again (it may still be a donor), as in ``recordSwap``.  ``recordSwap``
  itself visits the areas in code order and takes, for every household of a
  level, the first household of one priority order that lies in another area, so
  that a household passed over for lying in the area of the household selected
  stays first in line for the next one: its donors are not independent draws, and
  its realised transitions depart from the expected matrix of
  :mod:`pramkit.swap.implied`; here every donor is a fresh weighted draw.

Randomness is keyed (:mod:`pramkit.kernel.rng`): household ``i`` (numbered by
its first record in the file) reads word ``i`` of named streams, so the draw
depends only on the key and the file, not on how it is read.  The streams are
those of the swap's own key (:func:`swap_key`): the secret key derived for a keyed
digest of what is swapped (every household's areas, profiles, risk level and weight)
and the rate.  A swap has no manifest before it is drawn, and what it swaps is its
identity: the same key, file and settings make the same swap again; a file that
differs in anything the swap reads (a panel's next wave, a corrected file) or
other settings get an independent swap, never the same draws, with no label to
remember.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from pramkit.defaults import SWAP_DONOR_RULES
from pramkit.kernel.rng import SecretKey, uniforms

#: Stream names (domain separation of the swap's draws from every variable's stream).
_SELECT, _DONOR, _AREA, _ROUND = "\x00swap-select", "\x00swap-donor", "\x00swap-area", "\x00swap-round"
#: The keyed order in which the rule ``any-area`` visits the areas of a level.
_ORDER = "\x00swap-order"

#: The donor rules: ``same-parent`` (donors under the same area of the level above; the default) and
#: ``any-area`` (donors from any other area of the swap level, risky donors first: sdcMicro recordSwap's donor
#: pool, each donor a fresh keyed draw).
DONOR_RULES = SWAP_DONOR_RULES


def swap_key(key: SecretKey, geo: np.ndarray, profiles: list[np.ndarray], risky_level: np.ndarray,
             weight: np.ndarray, rate: float) -> SecretKey:
    """The key a swap draws from: ``key`` derived for what it swaps (:meth:`SecretKey.for_data` of the
    arguments of :func:`draw_swaps` but the key, in canonical bytes).

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> geo, ones = np.array([[0, 0, 1, 1]]), np.ones(4)
    >>> a = swap_key(key, geo, [], np.array([1, 1, 1, 1]), ones, 0.5)
    >>> a.material == swap_key(key, geo, [], np.array([1, 1, 1, 1]), ones, 0.5).material
    True
    >>> a.material == swap_key(key, np.array([[0, 1, 0, 1]]), [], np.array([1, 1, 1, 1]), ones, 0.5).material
    False
    """
    arrays = [np.asarray(geo, dtype="<i8"), np.asarray(risky_level, dtype="<i8"), np.asarray(weight, dtype="<f8"),
              np.asarray([rate], dtype="<f8"), *(np.asarray(p, dtype="<i8") for p in profiles)]
    return key.for_data("swap", *(np.asarray(a.shape, dtype="<i8").tobytes() for a in arrays),
                        *(np.ascontiguousarray(a).tobytes() for a in arrays))


@dataclass(frozen=True)
class SwapDraw:
    """Who is swapped with whom.

    Parameters
    ----------
    partner : numpy.ndarray of int64
        Household -> the household whose geography it receives (itself when not swapped).
    targeted : numpy.ndarray of int64
        Per level, the risky households swapped across that level (as the household selected;
        its donor is not counted).
    unswappable : int
        Households selected (risky, or drawn for the rate) for which no donor shares any similarity
        profile in an allowed area.
    quota : int
        ``round(rate * H / 2)``: the swaps the rate asks for.
    level : numpy.ndarray of int64
        Household -> the level its swap crossed (the level of the household selected; -1 when not swapped).
    donor : numpy.ndarray of bool
        Household -> it was the donor of its pair (not the household selected).
    """

    partner: np.ndarray
    targeted: np.ndarray
    unswappable: int
    quota: int
    level: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    donor: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))

    @property
    def swapped(self) -> int:
        """Households whose geography changed hands (twice the swaps made)."""
        return int((self.partner != np.arange(self.partner.size)).sum())


def quotas(households: np.ndarray, rate: float, key: SecretKey) -> np.ndarray:
    """Swaps to draw in each lowest area: ``rate * n_a / 2``, rounded to sum to ``round(rate * H / 2)``.

    The fractional parts decide which areas round up (the largest first, ties in keyed
    random order), so the total is exact and no area gets more than one extra swap.

    Parameters
    ----------
    households : numpy.ndarray of int
        Households per lowest area.
    rate : float
        The swap rate, in [0, 1].
    key : SecretKey
        The secret key (ties).

    Returns
    -------
    numpy.ndarray of int64
        The quota of each area.

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> q = quotas(np.array([50_000, 30_000, 20_000]), 0.05, key)
    >>> q.tolist(), int(q.sum())
    ([1250, 750, 500], 2500)
    >>> int(quotas(np.array([7, 7, 7]), 0.5, key).sum())  # 0.5 * 21 / 2 = 5.25
    5
    """
    want = rate * households.astype(float) / 2.0
    base = np.floor(want).astype(np.int64)
    total = int(np.floor(rate * households.sum() / 2.0 + 0.5))
    extra = total - int(base.sum())
    if extra > 0:
        u = uniforms(key, _ROUND, 0, households.size)
        order = np.lexsort((u, -(want - base)))
        base[order[:extra]] += 1
    return base


def draw_swaps(geo: np.ndarray, profiles: list[np.ndarray], risky_level: np.ndarray, weight: np.ndarray,
               rate: float, key: SecretKey, *, donors: str = "same-parent",
               level_weight: np.ndarray | None = None) -> SwapDraw:
    """Select households and pair each with a donor (see the module's rules).

    Parameters
    ----------
    geo : numpy.ndarray of int, shape (L, H)
        Each household's area code at each level, highest level first; codes of a level
        are 0..A_h - 1 and nested (an area of level h lies in one area of level h - 1).
    profiles : list of numpy.ndarray of int, shape (H,)
        Each similarity profile as one code per household (an empty list: no constraint).
    risky_level : numpy.ndarray of int, shape (H,)
        The highest level at which the household is risky, or ``L`` when it is not.
    weight : numpy.ndarray of float, shape (H,)
        Sampling weights (positive).
    rate : float
        The swap rate in [0, 1].
    key : SecretKey
        The secret key.
    donors : {"same-parent", "any-area"}
        The donor rule (:data:`DONOR_RULES`).
    level_weight : numpy.ndarray of float, shape (L, H), optional
        Each household's risk at each level, the donor weights of the rule ``any-area``
        (default: ``weight`` at every level).

    Returns
    -------
    SwapDraw

    Raises
    ------
    ValueError
        An unknown donor rule.

    Examples
    --------
    Four households in two areas of one level, rate 1: two swaps, each across the areas.

    >>> geo = np.array([[0, 0, 1, 1]])
    >>> d = draw_swaps(geo, [], np.array([1, 1, 1, 1]), np.ones(4), 1.0, SecretKey(bytes(32), "zeros"))
    >>> d.swapped, d.quota, bool((geo[0, d.partner] != geo[0]).all())
    (4, 2, True)

    Two regions of two areas each, 100 households per area, rate 0.2: under ``same-parent`` no swap
    leaves its region; under ``any-area`` donors come from any other area, most from the other region.

    >>> area = np.repeat(np.arange(4), 100)
    >>> geo = np.vstack([area // 2, area])
    >>> key = SecretKey(bytes(32), "zeros")
    >>> same = draw_swaps(geo, [], np.full(400, 2), np.ones(400), 0.2, key)
    >>> same.swapped, int((geo[0, same.partner] != geo[0]).sum())
    (80, 0)
    >>> anywhere = draw_swaps(geo, [], np.full(400, 2), np.ones(400), 0.2, key, donors="any-area")
    >>> moved = anywhere.partner != np.arange(400)
    >>> anywhere.swapped, bool((geo[1, anywhere.partner] != geo[1])[moved].all())
    (80, True)
    >>> int((geo[0, anywhere.partner] != geo[0]).sum()) > 40
    True
    """
    if donors not in DONOR_RULES:
        raise ValueError(f"unknown donor rule {donors!r}; use one of {', '.join(DONOR_RULES)}")
    if donors == "any-area":
        lw = np.broadcast_to(weight, geo.shape) if level_weight is None else level_weight
        return _AnyArea(geo, profiles, risky_level, weight, lw, key).draw(rate)
    levels, n = geo.shape
    key = swap_key(key, geo, profiles, risky_level, weight, rate)  # this swap's own streams
    state = _State(geo, profiles, weight, key)
    lowest = geo[-1]
    quota = quotas(np.bincount(lowest, minlength=int(lowest.max()) + 1 if n else 0), rate, key)
    used = np.zeros_like(quota)
    targeted = np.zeros(levels, dtype=np.int64)
    for h in range(levels):
        chosen = np.flatnonzero((risky_level == h) & ~state.swapped)
        chosen = chosen[np.argsort(-state.select_priority[chosen], kind="stable")]
        done = state.pair(chosen, h)
        targeted[h] = done.size
        np.add.at(used, lowest[done], 1)
    left = np.maximum(quota - used, 0)
    free = np.flatnonzero(~state.swapped)
    order = free[np.lexsort((-state.select_priority[free], lowest[free]))]
    area = lowest[order]
    starts = np.searchsorted(area, np.arange(quota.size))
    rank = np.arange(order.size) - starts[area]
    chosen = order[rank < left[area]]
    chosen = chosen[np.argsort(-state.select_priority[chosen], kind="stable")]
    state.pair(chosen, levels - 1)
    return SwapDraw(partner=state.partner, targeted=targeted, unswappable=state.unswappable,
                    quota=int(quota.sum()), level=state.level, donor=state.donor)


class _State:
    """The swaps made so far, and the keyed priorities (one pass of :func:`draw_swaps`)."""

    def __init__(self, geo: np.ndarray, profiles: list[np.ndarray], weight: np.ndarray, key: SecretKey) -> None:
        n = geo.shape[1]
        self.geo = geo
        self.profiles = profiles or [np.zeros(n, dtype=np.int64)]
        with np.errstate(divide="ignore"):
            self.select_priority = np.log(uniforms(key, _SELECT, 0, n)) / weight
            self.donor_priority = np.log(uniforms(key, _DONOR, 0, n)) / weight
        self.area_draw = uniforms(key, _AREA, 0, n)
        self.weight = weight
        self.swapped = np.zeros(n, dtype=bool)
        self.partner = np.arange(n, dtype=np.int64)
        self.level = np.full(n, -1, dtype=np.int64)
        self.donor = np.zeros(n, dtype=bool)
        self.unswappable = 0

    def pair(self, chosen: np.ndarray, h: int) -> np.ndarray:
        """Give each chosen household (in order) a donor across level ``h``; the households swapped."""
        done: list[np.ndarray] = []
        todo = chosen
        self.swapped[todo] = True  # selected households are no donors
        for profile in self.profiles:
            if todo.size == 0:
                break
            found, todo = self._pair_profile(todo, h, profile)
            done.append(found)
        self.swapped[todo] = False
        self.unswappable += int(todo.size)
        return np.concatenate(done) if done else np.empty(0, dtype=np.int64)

    def _pair_profile(self, chosen: np.ndarray, h: int, profile: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Donors sharing ``profile`` and the area of level ``h - 1``; (paired, still without a donor)."""
        parent = self.geo[h - 1] if h > 0 else np.zeros(self.geo.shape[1], dtype=np.int64)
        area = self.geo[h]
        span = int(profile.max()) + 1
        cell = parent.astype(np.int64) * span + profile
        donors = np.flatnonzero(~self.swapped)
        cells: dict[int, _Cell] = {}
        order = np.lexsort((-self.donor_priority[donors], area[donors], cell[donors]))
        donors = donors[order]
        bounds = (np.flatnonzero(np.r_[True, cell[donors][1:] != cell[donors][:-1], True]) if donors.size
                  else np.empty(0, dtype=np.intp))
        for lo, hi in itertools.pairwise(bounds):
            cells[int(cell[donors[lo]])] = _Cell(donors[lo:hi], area[donors[lo:hi]], self.weight)
        paired, missing = [], []
        for s in chosen.tolist():
            box = cells.get(int(cell[s]))
            d = -1 if box is None else box.take(int(area[s]), float(self.area_draw[s]))
            if d < 0:
                missing.append(s)
                continue
            self.partner[s], self.partner[d] = d, s
            self.level[s] = self.level[d] = h
            self.donor[d] = True
            self.swapped[d] = True
            paired.append(s)
        return np.asarray(paired, dtype=np.int64), np.asarray(missing, dtype=np.int64)


class _Cell:
    """The donors of one cell (parent area x profile), by area, each area's in priority order.

    A donor is drawn in two stages: its area with probability proportional to the weight left
    in the other areas, then the area's next donor by priority (a weighted draw without
    replacement, Efraimidis and Spirakis 2006), so that the donor of a household is a weighted
    draw among the donors left outside its own area.
    """

    def __init__(self, donors: np.ndarray, areas: np.ndarray, weight: np.ndarray) -> None:
        self.donors = donors
        starts = np.flatnonzero(np.r_[True, areas[1:] != areas[:-1]])
        self.areas = areas[starts]
        self.next = starts.copy()
        self.ends = np.r_[starts[1:], areas.size]
        self.w = weight[donors]
        self.left = np.add.reduceat(self.w, starts) if starts.size else np.zeros(0)

    def take(self, own: int, u: float) -> int:
        """A donor outside area ``own`` (-1 if none is left), drawn with the uniform ``u``."""
        left = self.left.copy()
        i_own = np.searchsorted(self.areas, own)
        if i_own < self.areas.size and self.areas[i_own] == own:
            left[i_own] = 0.0
        total = left.sum()
        if total <= 0.0:
            return -1
        i = min(int(np.searchsorted(np.cumsum(left), u * total, side="right")), left.size - 1)
        if left[i] <= 0.0:  # rounding at the last boundary: the last area with weight left
            i = int(np.flatnonzero(left > 0.0)[-1])
        j = self.next[i]
        self.next[i] += 1
        self.left[i] = max(self.left[i] - self.w[j], 0.0) if self.next[i] < self.ends[i] else 0.0
        return int(self.donors[j])


class _AnyArea:
    """The donor rule ``any-area``: sdcMicro ``recordSwap``'s donor pool, the areas in a keyed order and each
    donor a fresh keyed draw (see the module's rules)."""

    def __init__(self, geo: np.ndarray, profiles: list[np.ndarray], risky_level: np.ndarray, weight: np.ndarray,
                 level_weight: np.ndarray, key: SecretKey) -> None:
        n = geo.shape[1]
        self.geo = geo
        self.risky_level = risky_level
        self.profiles = profiles or [np.zeros(n, dtype=np.int64)]
        with np.errstate(divide="ignore"):
            self.select_priority = np.log(uniforms(key, _SELECT, 0, n)) / weight
            self.log_u = np.log(uniforms(key, _DONOR, 0, n))
        self.area_draw = uniforms(key, _AREA, 0, n)
        self.level_weight = level_weight
        self.key = key
        self.swapped = np.zeros(n, dtype=bool)
        self.failed = np.zeros(n, dtype=bool)  # selected once without a donor: never selected again
        self.partner = np.arange(n, dtype=np.int64)
        self.level = np.full(n, -1, dtype=np.int64)
        self.donor = np.zeros(n, dtype=bool)

    def draw(self, rate: float) -> SwapDraw:
        """Every level from the highest: its risky households, then (lowest level) each area's quota."""
        levels, n = self.geo.shape
        lowest = self.geo[-1]
        areas = int(lowest.max()) + 1 if n else 0
        quota = quotas(np.bincount(lowest, minlength=areas), rate, self.key)
        selected = np.zeros(areas, dtype=np.int64)  # households swapped as the selected one, per lowest area
        targeted = np.zeros(levels, dtype=np.int64)
        for h in range(levels):
            with np.errstate(divide="ignore", invalid="ignore"):
                pool = _Pool(self.geo[h], self.profiles, self.level_weight[h], self.log_u / self.level_weight[h],
                             self.swapped)
            if h < levels - 1:
                rank = self._area_rank(h)
                chosen = np.flatnonzero((self.risky_level == h) & ~self.swapped & ~self.failed)
                chosen = chosen[np.lexsort((-self.select_priority[chosen], rank[self.geo[h][chosen]]))]
                done = self._pair(chosen, h, pool)
                targeted[h] = done.size
                np.add.at(selected, lowest[done], 1)
                continue
            left = np.maximum(quota - selected, 0)
            free = np.flatnonzero(~self.swapped & ~self.failed)
            free = free[np.lexsort((-self.select_priority[free], lowest[free]))]
            bounds = np.searchsorted(lowest[free], np.arange(areas + 1))
            for a in np.argsort(self._area_rank(h), kind="stable").tolist():
                members = free[bounds[a]:bounds[a + 1]]
                members = members[~self.swapped[members]]  # some were donors of the areas before
                must = members[self.risky_level[members] == h]
                rest = members[self.risky_level[members] != h]
                chosen = np.concatenate([must, rest[:max(int(left[a]) - must.size, 0)]])
                done = self._pair(chosen, h, pool)
                targeted[h] += int(np.isin(done, must).sum())
        return SwapDraw(partner=self.partner, targeted=targeted, unswappable=int(self.failed.sum()),
                        quota=int(quota.sum()), level=self.level, donor=self.donor)

    def _area_rank(self, h: int) -> np.ndarray:
        """Area of level ``h`` -> its place in the keyed order of the level's areas (public: the areas only)."""
        count = int(self.geo[h].max()) + 1 if self.geo.shape[1] else 0
        return np.argsort(np.argsort(uniforms(self.key, _ORDER, 0, count), kind="stable"), kind="stable")

    def _pair(self, chosen: np.ndarray, h: int, pool: _Pool) -> np.ndarray:
        """Give each chosen household (in order) a donor drawn from ``pool``; the households swapped."""
        done = []
        for s in chosen.tolist():
            if self.swapped[s]:  # taken as a donor meanwhile (selected in another area of this level)
                continue
            d = pool.take(s, float(self.area_draw[s]))
            if d < 0:
                self.failed[s] = True
                continue
            self.partner[s], self.partner[d] = d, s
            self.level[s] = self.level[d] = h
            self.donor[d] = True
            self.swapped[s] = self.swapped[d] = True
            pool.remove(s)
            pool.remove(d)
            done.append(s)
        return np.asarray(done, dtype=np.int64)


class _Pool:
    """The donors of one level: per similarity profile's cell, per area, in priority order, with the weight left.

    :meth:`take` draws the donor of a household as :class:`_Cell` does (its area with probability
    proportional to the weight left in the other areas of its cell, then that area's next household by
    priority), trying the profiles in order; :meth:`remove` takes a household out of every profile's cell
    as soon as it is swapped, whatever swapped it, so each donor is a weighted draw among the households
    not yet swapped.
    """

    def __init__(self, area: np.ndarray, profiles: list[np.ndarray], weight: np.ndarray, priority: np.ndarray,
                 swapped: np.ndarray) -> None:
        n = area.size
        span = int(area.max()) + 1 if n else 1
        self.swapped = swapped
        self.weight = weight
        self.profiles = profiles
        self.slot: list[np.ndarray] = []      # household -> its (cell, area) slot, per profile
        self.order: list[np.ndarray] = []     # households by slot, then priority
        self.next: list[np.ndarray] = []      # slot -> its next household (index into order)
        self.end: list[np.ndarray] = []       # slot -> the end of its households
        self.left: list[np.ndarray] = []      # slot -> weight of its households not yet swapped
        self.cells: list[np.ndarray] = []     # cell -> its first slot (and the end, last)
        for profile in profiles:
            key = profile.astype(np.int64) * span + area
            order = np.lexsort((-priority, key))
            keys, first = np.unique(key[order], return_index=True)
            slot = np.empty(n, dtype=np.int64)
            slot[order] = np.repeat(np.arange(keys.size), np.diff(np.r_[first, n]))
            free = np.where(swapped, 0.0, weight)
            self.slot.append(slot)
            self.order.append(order)
            self.next.append(first.astype(np.int64))
            self.end.append(np.r_[first[1:], n].astype(np.int64))
            self.left.append(np.bincount(slot, weights=free, minlength=keys.size))
            cell_of_slot = keys // span
            self.cells.append(np.searchsorted(cell_of_slot, np.arange(int(profile.max()) + 2 if n else 1)))

    def remove(self, h: int) -> None:
        """Household ``h`` is swapped: no longer a donor."""
        for slot, left in zip(self.slot, self.left):
            i = slot[h]
            left[i] = max(left[i] - self.weight[h], 0.0)

    def take(self, s: int, u: float) -> int:
        """The donor of household ``s`` (-1 if no profile has one left), drawn with the uniform ``u``."""
        for p, profile in enumerate(self.profiles):
            c = int(profile[s])
            lo, hi = int(self.cells[p][c]), int(self.cells[p][c + 1])
            own = int(self.slot[p][s])
            while True:
                left = self.left[p][lo:hi].copy()
                left[own - lo] = 0.0
                total = left.sum()
                if total <= 0.0:
                    break
                i = min(int(np.searchsorted(np.cumsum(left), u * total, side="right")), left.size - 1)
                if left[i] <= 0.0:  # rounding at the last boundary: the last slot with weight left
                    i = int(np.flatnonzero(left > 0.0)[-1])
                d = self._next(p, lo + i)
                if d >= 0:
                    return d
        return -1

    def _next(self, p: int, i: int) -> int:
        """The next household of slot ``i`` of profile ``p`` not yet swapped (-1, and its weight cleared, if none)."""
        order, nxt, end = self.order[p], self.next[p], self.end[p]
        while nxt[i] < end[i] and self.swapped[order[nxt[i]]]:
            nxt[i] += 1
        if nxt[i] >= end[i]:
            self.left[p][i] = 0.0
            return -1
        return int(order[nxt[i]])
