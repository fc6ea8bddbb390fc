"""The marginals of a graphical model given as non-negative factors, from its calibrated junction tree.

The model pgm (:mod:`pramkit.synthesize_pgm`) reads, in every round, the marginals of a hundred or more sets of
two or three variables from the model fitted so far, most of which no clique of the model holds.  Counting each
one by eliminating every other variable from all the factors repeats nearly the whole elimination for each set.
Here the factors' junction tree (mbi's, the one the fit itself uses) is calibrated once, by two passes of
sum-product in NumPy, into a probability table for each maximal clique; a set's marginal is then read from
the smallest subtree whose cliques hold the set:

    P(x_T) = prod_{K in T} P(x_K) / prod_{S separator of T} P(x_S),

exact for a calibrated tree (summing a leaf clique out of the whole tree's product leaves 1), and summed over
the variables outside the set.  A separator cell of probability 0 contributes 0 (its cliques' cells are 0
there too).  Each message is scaled to sum to 1 as it is passed, and each clique's product of factors to a
largest cell of 1 as it is formed, so nothing underflows where the product of all the factors would.

Examples
--------
>>> import numpy as np
>>> tree = Calibrated([(("a", "b"), np.array([[1.0, 3.0], [2.0, 2.0]])),
...                    (("b", "c"), np.array([[1.0, 1.0], [0.0, 4.0]]))], {"a": 2, "b": 2, "c": 2})
>>> tree.marginal(("c", "a")).round(4).tolist()  # no clique holds a and c
[[0.0385, 0.0769], [0.5, 0.3846]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Clique = tuple[str, ...]


class Calibrated:
    """The junction tree of ``factors`` (each a clique of variable names and its non-negative table, axes in the
    clique's order), calibrated: :meth:`marginal` gives any set's probability table.  ``sizes``: each variable's
    number of values (a variable in no factor is uniform).  Raises ``FloatingPointError`` when the factors'
    product is zero everywhere (no distribution)."""

    def __init__(self, factors: Sequence[tuple[Clique, np.ndarray]], sizes: Mapping[str, int]) -> None:
        from mbi import Domain, junction_tree

        self.sizes = dict(sizes)
        names = list(self.sizes)
        tree, _ = junction_tree.make_junction_tree(Domain(names, [self.sizes[v] for v in names]),
                                                   [tuple(cl) for cl, _ in factors])
        self.nodes: list[Clique] = [tuple(k) for k in tree.nodes]
        self.index = {k: i for i, k in enumerate(self.nodes)}
        self.adjacent: list[list[int]] = [[self.index[tuple(j)] for j in tree.neighbors(k)] for k in self.nodes]
        psi = [np.ones([self.sizes[v] for v in k]) for k in self.nodes]
        for cl, table in factors:
            i = min((i for i, k in enumerate(self.nodes) if set(cl) <= set(k)), key=lambda i: psi[i].size)
            psi[i] = _scaled(psi[i] * _aligned(np.asarray(table, dtype=float), tuple(cl), self.nodes[i]))
        self.parts = self._orders()
        self.beliefs = self._calibrate(psi)
        self._separators: dict[tuple[int, int], np.ndarray] = {}

    def _calibrate(self, psi: list[np.ndarray]) -> list[np.ndarray]:
        """Each clique's probability table: its factors times the messages of all its neighbours, the messages
        passed leaves to root and back in each connected part of the tree."""
        messages: dict[tuple[int, int], np.ndarray] = {}
        for order in self.parts:
            for i, parent in reversed(order):  # leaves to root
                if parent is not None:
                    messages[i, parent] = self._message(psi, messages, i, parent)
            for i, parent in order:  # root to leaves
                for j in self.adjacent[i]:
                    if j != parent:
                        messages[i, j] = self._message(psi, messages, i, j)
        beliefs = []
        for i, k in enumerate(self.nodes):
            b = self._incoming(psi, messages, i)
            total = b.sum()
            if not (np.isfinite(total) and total > 0):
                raise FloatingPointError(f"the factors of {k} give no distribution")
            beliefs.append(b / total)
        return beliefs

    def _orders(self) -> list[list[tuple[int, int | None]]]:
        """For each connected part of the tree, its cliques in breadth-first order with their parents."""
        seen: set[int] = set()
        orders = []
        for root in range(len(self.nodes)):
            if root in seen:
                continue
            order: list[tuple[int, int | None]] = [(root, None)]
            seen.add(root)
            for i, _ in order:
                for j in self.adjacent[i]:
                    if j not in seen:
                        seen.add(j)
                        order.append((j, i))
            orders.append(order)
        return orders

    def _message(self, psi: list[np.ndarray], messages: Mapping[tuple[int, int], np.ndarray], i: int, j: int
                 ) -> np.ndarray:
        """Clique ``i``'s message to ``j``: its factors times the messages of its other neighbours, summed onto
        their separator, scaled to sum to 1."""
        k = self.nodes[i]
        b = self._incoming(psi, messages, i, j)
        sep = _shared(k, self.nodes[j])
        out = b.sum(axis=tuple(a for a, v in enumerate(k) if v not in sep))
        s = out.sum()
        return out / s if s > 0 else out

    def _incoming(self, psi: list[np.ndarray], messages: Mapping[tuple[int, int], np.ndarray], i: int,
                  skip: int | None = None) -> np.ndarray:
        """Clique ``i``'s factors times the messages of its neighbours (but ``skip``'s)."""
        k = self.nodes[i]
        b = psi[i]
        for m in self.adjacent[i]:
            if m != skip:
                b = b * _aligned(messages[m, i], _shared(self.nodes[m], k), k)
        return b

    def marginal(self, r: Sequence[str]) -> np.ndarray:
        """The probability table of the variables ``r`` (axes in ``r``'s order)."""
        r = tuple(r)
        holding = [i for i, k in enumerate(self.nodes) if set(r) <= set(k)]
        if holding:
            i = min(holding, key=lambda i: self.beliefs[i].size)
            return _summed(self.beliefs[i], self.nodes[i], r)
        parts = {}  # the variables of r by the connected part of the tree holding them
        for order in self.parts:
            members = {i for i, _ in order}
            held = tuple(v for v in r if any(v in self.nodes[i] for i in members))
            if held:
                parts[held] = members
        free = [v for v in r if not any(v in p for p in parts)]
        out = np.ones(())
        axes: list[str] = []
        for held, members in parts.items():
            out = np.multiply.outer(out, self._within(held, members))
            axes += held
        for v in free:  # in no factor: uniform
            out = np.multiply.outer(out, np.full(self.sizes[v], 1.0 / self.sizes[v]))
            axes.append(v)
        return np.transpose(out, [axes.index(v) for v in r])

    def _within(self, r: Clique, members: set[int]) -> np.ndarray:
        """The table of ``r`` from the smallest subtree of one connected part that holds it."""
        import opt_einsum

        sub = self._subtree(r, members)
        letters = {v: opt_einsum.get_symbol(i) for i, v in enumerate(dict.fromkeys(v for i in sub
                                                                                   for v in self.nodes[i]))}
        terms, operands = [], []
        for i in sub:
            terms.append("".join(letters[v] for v in self.nodes[i]))
            operands.append(self.beliefs[i])
            for j in self.adjacent[i]:
                if j in sub and i < j:
                    sep = _shared(self.nodes[i], self.nodes[j])
                    terms.append("".join(letters[v] for v in sep))
                    operands.append(self._inverse_separator(i, j))
        spec = f"{','.join(terms)}->{''.join(letters[v] for v in r)}"
        return np.asarray(opt_einsum.contract(spec, *operands, optimize="greedy"))

    def _inverse_separator(self, i: int, j: int) -> np.ndarray:
        """1 over the separator's probability table (0 where it is 0)."""
        if (i, j) not in self._separators:
            p = _summed(self.beliefs[i], self.nodes[i], _shared(self.nodes[i], self.nodes[j]))
            with np.errstate(divide="ignore"):
                self._separators[i, j] = np.where(p > 0, 1.0 / np.where(p > 0, p, 1.0), 0.0)
        return self._separators[i, j]

    def _subtree(self, r: Clique, members: set[int]) -> set[int]:
        """The cliques of the smallest subtree of a connected part holding every variable of ``r``: the paths
        joining a clique of each variable, with leaves whose variables of ``r`` other cliques hold cut off."""
        first = min((i for i in members if r[0] in self.nodes[i]), key=lambda i: self.beliefs[i].size)
        parent = {first: first}
        queue = [first]
        for i in queue:
            for j in self.adjacent[i]:
                if j not in parent:
                    parent[j] = i
                    queue.append(j)
        sub = {first}
        for v in r[1:]:
            if any(v in self.nodes[i] for i in sub):
                continue
            i = min((i for i in members if v in self.nodes[i]), key=lambda i: (_depth(parent, i), i))
            while i not in sub:
                sub.add(i)
                i = parent[i]
        pruned = True
        while pruned and len(sub) > 1:
            pruned = False
            for i in sorted(sub):
                rest = sub - {i}
                leaf = sum(j in sub for j in self.adjacent[i]) == 1
                if leaf and all(any(v in self.nodes[j] for j in rest) for v in r if v in self.nodes[i]):
                    sub, pruned = rest, True
                    break
        return sub


def _depth(parent: Mapping[int, int], i: int) -> int:
    d = 0
    while parent[i] != i:
        i, d = parent[i], d + 1
    return d


def _shared(a: Clique, b: Clique) -> Clique:
    """The variables of ``a`` also in ``b``, in ``a``'s order."""
    return tuple(v for v in a if v in b)


def _aligned(table: np.ndarray, axes: Clique, target: Clique) -> np.ndarray:
    """``table`` over ``axes`` laid out to broadcast over ``target`` (which holds every axis)."""
    order = sorted(range(len(axes)), key=lambda a: target.index(axes[a]))
    return np.transpose(table, order).reshape([table.shape[axes.index(v)] if v in axes else 1 for v in target])


def _summed(table: np.ndarray, axes: Clique, r: Sequence[str]) -> np.ndarray:
    """``table`` over ``axes`` summed onto ``r`` (axes in ``r``'s order)."""
    out = table.sum(axis=tuple(a for a, v in enumerate(axes) if v not in r))
    kept = [v for v in axes if v in r]
    return np.transpose(out, [kept.index(v) for v in r])


def _scaled(table: np.ndarray) -> np.ndarray:
    """``table`` over its largest cell (as it is when that is 0)."""
    m = table.max()
    return table / m if m > 0 else table


def tree_cells(sizes: Mapping[str, int], cliques: Sequence[Clique]) -> int:
    """The cells of the junction tree mbi makes of ``cliques`` (its maximal cliques' cells, added up), counted
    on sets instead of graphs, where every variable of ``sizes`` is itself one of the cliques (as the model's
    1-way tables are).

    mbi eliminates the variables of a tree-shaped graph leaves first (its maximal cliques are then its edges),
    and those of any other graph greedily: the variable whose neighbours and itself span the fewest cells, the
    first of ``sizes``' order on a tie, its neighbours joined.  The maximal cliques are the largest of the
    neighbourhoods eliminated.  ``tests/test_synthesize_marginals.py`` checks the count against mbi's own.

    Examples
    --------
    >>> tree_cells({"a": 2, "b": 3, "c": 4}, [("a",), ("b",), ("c",), ("a", "b"), ("b", "c")])  # a tree: 6 + 12
    18
    >>> tree_cells({"a": 2, "b": 3, "c": 4}, [("a",), ("b",), ("c",), ("a", "b"), ("b", "c"), ("a", "c")])
    24
    """
    names = list(sizes)
    nbrs: dict[str, set[str]] = {v: set() for v in names}
    for cl in cliques:
        for a in cl:
            nbrs[a].update(b for b in cl if b != a)
    edges = sum(len(n) for n in nbrs.values()) // 2
    if edges and edges == len(names) - 1 and _connected(nbrs):  # a tree: its edges
        return sum(sizes[a] * sizes[b] for a in names for b in nbrs[a] if names.index(a) < names.index(b))
    left = list(names)
    eliminated: list[frozenset[str]] = []
    while left:
        a = min(left, key=lambda v: (_cells(sizes, nbrs[v] | {v}), left.index(v)))
        eliminated.append(frozenset(nbrs[a] | {a}))
        for b in nbrs[a]:
            nbrs[b] |= nbrs[a] - {b}
            nbrs[b].discard(a)
        left.remove(a)
        del nbrs[a]
    return sum(_cells(sizes, c) for c in set(eliminated) if not any(c < d for d in eliminated))


def _cells(sizes: Mapping[str, int], variables: set[str] | frozenset[str]) -> int:
    out = 1
    for v in variables:
        out *= sizes[v]
    return out


def _connected(nbrs: Mapping[str, set[str]]) -> bool:
    start = next(iter(nbrs))
    seen, stack = {start}, [start]
    while stack:
        for b in nbrs[stack.pop()] - seen:
            seen.add(b)
            stack.append(b)
    return len(seen) == len(nbrs)
