"""Domain compression of the model pgm: rare categories merged by their noisy 1-way counts.

MST and AIM (McKenna, Miklau and Sheldon 2021, section 4; dpmm's ``DomainCompressor``) merge, after the 1-way
tables are measured, the categories of a variable whose noisy count is below three standard deviations of the
noise: the model then spends no cells, and no budget, on categories the tables cannot tell apart from empty.
The model pgm does the same, with two changes:

* **The edit rules stay exact.**  A variable that several rules' masks name has only categories that every
  rule treats alike merged: those whose slices of every rule's mask are equal (their *signature*).  The rare
  categories of one signature form one group; a rare category alone in its signature stays as it is.  Any
  member of a group then stands for all of them in every rule, so the compressed model keeps every rule, and
  a record drawn into a group may take any member.  A variable that one mask alone names has, with
  ``jointly`` (:func:`compression_of`; ``procedure.compress_rules: "jointly"``), all its rare categories
  merged: the compressed mask allows a cell when one of its members' cells is allowed, and a record drawn
  into it takes, jointly for every such variable of the mask, a combination of members the mask allows
  beside the record's other values (:func:`pramkit.synthesize_pgm.expand`).  A threshold rule of counts
  ("fewer own children than persons in the family") gives every category its own signature: without it none
  would ever merge.
* **A drawn group is expanded by the noisy counts.**  Within a group a record takes a member with probability
  proportional to its noisy 1-way count, clipped at 0 (uniformly when no member's is positive), by systematic
  sampling at keyed uniforms, as the other draws; MST expands uniformly.

**Declared bins.**  An ordered numeric variable may instead be given a bin width ``w`` (``synthesize --bins
AGEP=5``; the manifest's ``procedure.bins``): its categories whose values lie in one interval ``[k w, (k + 1)
w)`` and that every rule treats alike form one group (:func:`bin_groups`), whatever the counts, and a category
that is not a finite number stays alone.  The model then measures and fits the bins, and a record drawn into a
bin takes one of its values by the noisy 1-way counts, as above.  The bins read no data: they are the
variable's declared categories, the width and the rules.  A binned variable is not merged further, nor
expanded jointly with a rule (every rule already treats a bin's members alike).

Compression reads only the noisy 1-way tables, their noise and the rules (all in the manifest): it is
post-processing and spends nothing; the audit recomputes every group from the manifest
(:func:`pramkit.synthesize_pgm.manifest_groups`).  A variable none of whose categories reaches the threshold is not compressed (as
MST's), so no variable collapses to one category.

Reference: R. McKenna, G. Miklau and D. Sheldon, "Winning the NIST contest: a scalable and general approach
to differentially private synthetic data", Journal of Privacy and Confidentiality 11(3), 2021.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The threshold of compression, in standard deviations of the 1-way table's noise (MST's and AIM's 3).
COMPRESS_SD = 3.0


def compress_groups(noisy: Sequence[float] | np.ndarray, sd: float, threshold: float,
                    signature: Sequence[bytes] | None = None) -> list[list[int]]:
    """The compressed categories of one variable, each the list of the category indexes it merges.

    A category is rare when its noisy count is below ``threshold * sd``; the rare categories of one
    ``signature`` (by default all alike) form one group, in the order of their first member; the others stay
    alone.  ``threshold`` 0, or no category above it, leaves every category alone.

    Examples
    --------
    >>> compress_groups([50, 2, 40, -1, 2], sd=1.0, threshold=3)
    [[0], [1, 3, 4], [2]]
    >>> compress_groups([50, 2, 40, -1, 2], sd=1.0, threshold=3, signature=[b"", b"x", b"", b"y", b"x"])
    [[0], [1, 4], [2], [3]]
    >>> compress_groups([1, 2], sd=1.0, threshold=3)  # nothing above it: left as it is
    [[0], [1]]
    """
    values = np.asarray(noisy, dtype=float)
    rare = values < threshold * sd
    if threshold <= 0 or rare.all() or rare.sum() < 2:
        return [[i] for i in range(len(values))]
    sig = list(signature) if signature is not None else [b""] * len(values)
    by: dict[bytes, list[int]] = {}
    for i in np.flatnonzero(rare):
        by.setdefault(sig[i], []).append(int(i))
    group_of = {i: g for g in by.values() if len(g) > 1 for i in g}
    return [group_of.get(i, [i]) for i in range(len(values)) if i not in group_of or group_of[i][0] == i]


def bin_of(category: Any, width: int) -> int | None:
    """The bin of a category of an ordered variable in bins of ``width``: ``floor(value / width)`` of its value as
    a number, or ``None`` when it is not a finite number (such a category stays alone).

    Examples
    --------
    >>> bin_of("23", 5), bin_of(4.5, 5), bin_of(" 100 ", 25), bin_of("N", 5), bin_of(True, 5)
    (4, 0, 4, None, None)
    """
    if isinstance(category, bool):
        return None
    try:
        value = float(category)
    except (TypeError, ValueError):
        return None
    return math.floor(value / width) if math.isfinite(value) else None


def bin_groups(categories: Sequence[Any], width: int, signature: Sequence[bytes] | None = None) -> list[list[int]]:
    """The groups of an ordered variable in declared bins (module docstring): the categories of one bin
    (:func:`bin_of`) and one ``signature`` (alike in every rule) together, in the order of their first member; a
    category that is not a number alone.

    Examples
    --------
    >>> bin_groups(["0", "1", "2", "3", "4", "5", "N"], 5)
    [[0, 1, 2, 3, 4], [5], [6]]
    >>> bin_groups(["0", "1", "2", "3", "4"], 5, signature=[b"y", b"y", b"y", b"", b""])  # a rule at 3
    [[0, 1, 2], [3, 4]]
    """
    sig = list(signature) if signature is not None else [b""] * len(categories)
    by: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(categories):
        b = bin_of(c, width)
        by.setdefault(("alone", i) if b is None else ("bin", b, sig[i]), []).append(i)
    return sorted(by.values(), key=lambda g: g[0])


def signatures(variable: str, size: int, masks: Sequence[tuple[tuple[str, ...], np.ndarray]]) -> list[bytes]:
    """Each category's slices of the rules' masks that name ``variable`` (equal signatures: alike in every rule).

    Examples
    --------
    >>> m = np.array([[True, False], [True, True], [True, False]])
    >>> s = signatures("a", 3, [(("a", "b"), m)])
    >>> s[0] == s[2], s[0] == s[1]
    (True, False)
    """
    out = [b""] * size
    for cl, mask in masks:
        if variable in cl:
            axis = cl.index(variable)
            for i in range(size):
                out[i] += np.ascontiguousarray(np.take(mask, i, axis=axis)).tobytes()
    return out


@dataclass(frozen=True)
class Compression:
    """Each variable's compressed categories (:func:`compress_groups`) and the noisy 1-way counts that expand
    them; a variable not listed, or listed with singletons only, is as it is.

    Examples
    --------
    >>> c = Compression({"a": [[0], [1, 2]], "b": [[0], [1]]}, {"a": np.array([9, 4, 0]), "b": np.array([5, 6])})
    >>> c.size("a"), c.size("b"), c.codes(np.array([[0], [2], [1]]), ["a"]).ravel().tolist()
    (2, 2, [0, 1, 1])
    >>> c.groups_of("a"), c.groups_of("b")
    ([[0], [1, 2]], None)
    """

    groups: Mapping[str, list[list[int]]]
    counts: Mapping[str, np.ndarray]
    #: The rules' masks whose variables are expanded jointly (:func:`compression_of` with ``jointly``): each the
    #: mask's variables, its cells over the full categories, and the variables merged across signatures.
    joint: tuple[tuple[tuple[str, ...], np.ndarray, tuple[str, ...]], ...] = ()

    def merged(self, v: str) -> bool:
        return any(len(g) > 1 for g in self.groups.get(v, ()))

    def full(self, v: str) -> int:
        """``v``'s categories before compression (its 1-way table's cells)."""
        return len(self.counts[v])

    def size(self, v: str) -> int:
        """``v``'s categories in the model: its groups."""
        return len(self.groups[v])

    def groups_of(self, v: str) -> list[list[int]] | None:
        """The manifest's ``groups`` of ``v``: ``None`` when it is not compressed."""
        return [list(g) for g in self.groups[v]] if self.merged(v) else None

    def _lookup(self, v: str) -> np.ndarray:
        groups = self.groups[v]
        out = np.empty(sum(len(g) for g in groups), dtype=np.int64)
        for k, g in enumerate(groups):
            out[g] = k
        return out

    def codes(self, codes: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """The original's codes in the compressed categories (of the codes' type: a group's code is at most its
        first member's); the codes themselves when no variable is compressed."""
        if not any(self.merged(v) for v in names):
            return codes
        out = np.array(codes, copy=True)
        for j, v in enumerate(names):
            if self.merged(v):
                out[:, j] = self._lookup(v)[out[:, j]]
        return out

    def cats(self, cats: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        """The compressed categories' labels (a merged group's: its members' labels, joined)."""
        return {v: ([" | ".join(str(c[i]) for i in g) if len(g) > 1 else c[g[0]] for g in self.groups[v]]
                    if self.merged(v) else list(c)) for v, c in cats.items()}

    def mask(self, cl: tuple[str, ...], mask: np.ndarray) -> np.ndarray:
        """A rule's mask over the compressed categories: a cell is allowed when one of its members' cells is
        (where the members share their slices, as within a signature, the first member's).

        Examples
        --------
        >>> m = np.array([[True, False, False], [True, True, False], [True, True, True]])  # b <= a
        >>> Compression({"a": [[0], [1, 2]], "b": [[0], [1, 2]]}, {}).mask(("a", "b"), m).tolist()
        [[True, False], [True, True]]
        """
        out = np.asarray(mask, dtype=bool)
        for k, a in enumerate(cl):
            if self.merged(a):
                out = np.stack([np.take(out, g, axis=k).any(axis=k) for g in self.groups[a]], axis=k)
        return out

    def widest(self, across: Sequence[str]) -> int:
        """The most member combinations a record drawn into the groups of ``across`` may take: the largest
        group of each, multiplied."""
        return math.prod(max(len(g) for g in self.groups[a]) for a in across)

    def jointly(self) -> set[str]:
        """The variables expanded jointly with their rules' other variables (merged across signatures)."""
        return {v for _, _, vs in self.joint for v in vs}

    def table(self, axes: tuple[str, ...], noisy: np.ndarray, variance: float) -> tuple[np.ndarray, np.ndarray]:
        """A noisy table over the compressed categories and each cell's noise variance: a table measured
        over the full categories (a 1-way table of the start) is summed within each group (a merged cell's
        variance: the members' added up); one measured after compression is as it is."""
        y = np.asarray(noisy, dtype=float)
        ones = np.ones_like(y)
        for k, a in enumerate(axes):
            if self.merged(a) and y.shape[k] == self.full(a):
                lookup = self._lookup(a)
                moved_y, moved_n = np.moveaxis(y, k, 0), np.moveaxis(ones, k, 0)
                sums = np.zeros((len(self.groups[a]), *moved_y.shape[1:]))
                cnt = np.zeros_like(sums)
                np.add.at(sums, lookup, moved_y)
                np.add.at(cnt, lookup, moved_n)
                y, ones = np.moveaxis(sums, 0, k), np.moveaxis(cnt, 0, k)
        return y, ones * variance

    def expansion(self, v: str) -> np.ndarray:
        """How a record drawn into each compressed category of ``v`` takes one of its categories: row ``k``
        weighs the members of group ``k`` by their noisy 1-way counts clipped at 0 (alike when none is
        positive), every other category 0.

        Examples
        --------
        >>> Compression({"a": [[0, 2], [1]]}, {"a": np.array([3, 9, -1])}).expansion("a").tolist()
        [[3.0, 0.0, 0.0], [0.0, 9.0, 0.0]]
        """
        counts = np.clip(np.asarray(self.counts[v], dtype=float), 0, None)
        weights = np.zeros((len(self.groups[v]), len(counts)))
        for k, g in enumerate(self.groups[v]):
            w = counts[g]
            weights[k, g] = w if w.sum() > 0 else 1.0
        return weights


def compression_of(names: Sequence[str], first: Sequence[Any], sds: Sequence[float],
                   masks: Sequence[tuple[tuple[str, ...], np.ndarray]], threshold: float,
                   jointly: bool = False, bins: Mapping[str, tuple[Sequence[Any], int]] | None = None
                   ) -> Compression:
    """The compression from the start's noisy 1-way tables (``first``, one a variable, in the order of
    ``names``), the standard deviations of their noise (``sds``) and the rules' masks over the full categories.
    ``bins``: for each variable in declared bins, its categories and the width (:func:`bin_groups`; neither
    merged by its counts nor expanded jointly).

    With ``jointly``, a variable that one rule's mask alone names has its rare categories merged whatever
    their signatures, and is expanded jointly with that mask's other variables (:func:`joint_cells`): the
    threshold rules of counts (fewer children than persons) otherwise keep every category apart.  A mask whose
    joint expansion would pass :data:`JOINT_CELLS` keeps its variables' signatures.

    Examples
    --------
    >>> compression_of(["a"], [np.array([80, 1, -2, 60])], [2.0], [], 3.0).groups
    {'a': [[0], [1, 2], [3]]}
    >>> m = np.array([[True, False, False], [True, True, False], [True, True, True]])  # b <= a
    >>> first = [np.array([90, 2, 1]), np.array([80, 1, 2])]
    >>> compression_of(["a", "b"], first, [1.0, 1.0], [(("a", "b"), m)], 3.0).groups
    {'a': [[0], [1], [2]], 'b': [[0], [1], [2]]}
    >>> c = compression_of(["a", "b"], first, [1.0, 1.0], [(("a", "b"), m)], 3.0, jointly=True)
    >>> c.groups, sorted(c.jointly())
    ({'a': [[0], [1, 2]], 'b': [[0], [1, 2]]}, ['a', 'b'])
    >>> compression_of(["a"], [np.array([80, 1, -2, 60])], [2.0], [], 3.0, bins={"a": ([0, 1, 2, 3], 2)}).groups
    {'a': [[0, 1], [2, 3]]}
    """
    bins = dict(bins or {})
    named: dict[str, int] = {}
    for cl, _ in masks:
        for a in cl:
            named[a] = named.get(a, 0) + 1
    free = {v for v in names if named.get(v) == 1 and v not in bins} if jointly else set()
    groups, counts = {}, {}
    for v, t, sd in zip(names, first, sds):
        noisy = np.asarray(t).ravel()
        counts[v] = noisy
        if v in bins:
            groups[v] = bin_groups(bins[v][0], bins[v][1], signatures(v, len(noisy), masks))
            continue
        groups[v] = compress_groups(noisy, sd, threshold, None if v in free else signatures(v, len(noisy), masks))
    comp = Compression(groups, counts)
    joint = []
    for cl, mask in masks:
        across = tuple(a for a in cl if a in free and comp.merged(a))
        if not across:
            continue
        if joint_cells(comp, cl, across) <= JOINT_CELLS:
            joint.append((cl, np.asarray(mask, dtype=bool), across))
            continue
        for a, sd in zip(names, sds):  # too large to expand jointly: merged within signatures only
            if a in across:
                groups[a] = compress_groups(counts[a], sd, threshold, signatures(a, len(counts[a]), masks))
    return Compression(groups, counts, tuple(joint))


#: The most cells of a joint expansion's table (:func:`joint_cells`) before a mask's variables keep their
#: signatures instead.
JOINT_CELLS = 10_000_000


def joint_cells(comp: Compression, cl: Sequence[str], across: Sequence[str]) -> int:
    """The most cells a joint expansion over the mask of ``cl`` may use: its keys (the compressed categories
    of ``across``, the full ones of the mask's other variables) times the largest choice of one key (the
    largest group of each variable of ``across``, multiplied).

    Examples
    --------
    >>> c = Compression({"a": [[0], [1, 2]], "b": [[0, 1]]}, {"a": np.zeros(3), "b": np.zeros(2)})
    >>> joint_cells(c, ("a", "b"), ("a",))  # keys 2 x 2, a choice among at most 2
    8
    """
    keys = math.prod(comp.size(a) if a in across else comp.full(a) for a in cl)
    return keys * comp.widest(across)
