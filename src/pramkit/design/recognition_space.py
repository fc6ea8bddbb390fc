"""The key space of the spontaneous-recognition design, and one optimiser run.

Shared by :mod:`pramkit.design.recognition` (the design, condition (C1) of
Cator, Hensbergen and Rozenholc) and :mod:`pramkit.design.recognition_reductions`
(the reductions of their section 4), which both build on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from pramkit.errors import DataError
from pramkit.matrix import Label

#: The optimisers aim at ``alpha (1 - SAFETY)`` so that rounding keeps (C1) at ``alpha``.
SAFETY = 1e-6


@dataclass(frozen=True, eq=False)
class KeySpace:
    """The cross-classified key space X and the original counts U_0 on it.

    keys: names of the key variables (table axes)
    categories: the labels of each key
    counts: U_0 over the K cells of X, flat C-order (float)
    """

    keys: tuple[str, ...]
    categories: tuple[tuple[Label, ...], ...]
    counts: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.categories)

    @property
    def cells(self) -> int:
        """K = |X|."""
        return self.counts.size

    @property
    def n(self) -> int:
        return int(round(float(self.counts.sum())))

    @cached_property
    def occurring(self) -> np.ndarray:
        """Cells with U_0 > 0 (the types m of condition (C1))."""
        return np.flatnonzero(self.counts > 0)

    def margin_codes(self, combination: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """The code of ``k_pi`` for every cell k of X, and ``|X_pi|``."""
        shape = self.shape
        sub = tuple(shape[a] for a in combination)
        # strides of the margin's own C-order index, broadcast over the full table
        codes = np.zeros(shape, dtype=np.int64)
        stride = 1
        for a, size in zip(reversed(combination), reversed(sub)):
            index = [1] * len(shape)
            index[a] = size
            codes = codes + stride * np.arange(size).reshape(index)
            stride *= size
        return codes.reshape(-1), math.prod(sub)

    def margin(self, combination: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, U_pi)``: the margin code of every cell and the counts U_pi(k0)."""
        codes, size = self.margin_codes(combination)
        return codes, np.bincount(codes, weights=self.counts, minlength=size)

    def labels(self, cells: ArrayLike) -> list[tuple[Label, ...]]:
        """The tuple label of each flat cell index."""
        coords = np.unravel_index(np.asarray(cells, dtype=np.int64), self.shape)
        return [tuple(self.categories[a][int(c[i])] for a, c in enumerate(coords)) for i in range(len(coords[0]))]


def key_space(
    counts: ArrayLike, *, keys: Sequence[str] | None = None, categories: Sequence[Sequence[Label]] | None = None
) -> KeySpace:
    """A :class:`KeySpace` from a table of original counts (one axis per key variable)."""
    u = np.asarray(counts, dtype=float)
    if u.ndim == 0 or u.size == 0:
        raise DataError("counts must be a non-empty table with one axis per key variable")
    if not np.all(np.isfinite(u)) or np.any(u < 0) or np.any(u != np.round(u)):
        raise DataError("counts must be non-negative whole numbers (records per key combination)")
    if u.sum() <= 0:
        raise DataError("the table of counts is empty")
    names = tuple(keys) if keys is not None else tuple(f"x{a + 1}" for a in range(u.ndim))
    cats = (tuple(tuple(c) for c in categories) if categories is not None
            else tuple(tuple(range(s)) for s in u.shape))
    if len(names) != u.ndim or len(cats) != u.ndim:
        raise DataError(f"{len(names)} keys and {len(cats)} category lists given for a table with {u.ndim} axes")
    if tuple(len(c) for c in cats) != u.shape:
        raise DataError(f"the category lists have {[len(c) for c in cats]} labels but the table has shape {u.shape}")
    return KeySpace(names, cats, u.reshape(-1).copy())



@dataclass(frozen=True, kw_only=True)
class SolverRun:
    """What one run of an optimiser reports (the fields are described by
    :class:`pramkit.design.recognition.SolverDiagnostics`, which extends it)."""

    solver: str
    status: str
    success: bool
    iterations: int
    variables: int
    constraints: int
    gap: float | None
    lower_bound: float | None = None
    certified: bool = False

    def run_figures(self) -> dict[str, object]:
        """The fields of :class:`SolverRun` alone, to pass on to a class that extends it."""
        return {f.name: getattr(self, f.name) for f in fields(SolverRun)}


@dataclass(frozen=True, kw_only=True)
class Solve(SolverRun):
    """One run of an optimiser and the transition matrix it found."""

    transitions: np.ndarray | sp.spmatrix
