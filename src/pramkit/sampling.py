"""Vectorised kernels that draw released categories given original ones.

Two kernels, both consuming exactly one uniform per value so that the keyed
stream of :mod:`pramkit.rng` fixes the output:

* :class:`DiagonalSampler` for form (8) of Ayed, Battiston and Camerlenghi
  (keep k with probability q_k, otherwise a uniform choice among the other
  S - 1 categories): ``u < q_k`` keeps; otherwise
  ``t = floor((u - q_k) / (1 - q_k) * (S - 1))`` indexes the other categories
  (``j = t + [t >= k]``).  Memory O(S); only moved values do extra work.
* :class:`AliasSampler` for any matrix: Walker's alias method (Vose's stable
  construction), one table of S cells per row.  With ``x = u S``,
  ``j = floor(x)`` picks a cell and ``x - j`` (a uniform independent of j)
  chooses between the cell's own category and its alias.  O(1) per value.

Codes are integers in ``0..S-1``; ``-1`` marks a missing value, which stays
missing.  Work proceeds in cache-sized blocks.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from pramkit.matrix import PramMatrix

#: Rows per block: the block's working arrays stay in the CPU cache.
BLOCK = 1 << 15


class Sampler(Protocol):
    size: int

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        """Write released codes for valid ``codes`` (all in 0..S-1) and uniforms ``u``
        into ``out``; ``u`` may be overwritten."""


class DiagonalSampler:
    """Sampler for form (8): ``M[k, k] = q_k``, ``M[k, j] = (1 - q_k) / (S - 1)``."""

    def __init__(self, q: np.ndarray) -> None:
        self.q = np.ascontiguousarray(q, dtype=float)
        self.size = self.q.size
        moves = self.q < 1.0
        self.scale = np.zeros_like(self.q)
        self.scale[moves] = (self.size - 1) / (1.0 - self.q[moves])

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        out[...] = codes
        if self.size == 1:
            return
        moved = np.flatnonzero(u >= self.q[codes])
        if moved.size == 0:
            return
        k = codes[moved]
        t = ((u[moved] - self.q[k]) * self.scale[k]).astype(codes.dtype)
        np.minimum(t, self.size - 2, out=t)  # guard the (measure-zero) rounding to S - 1
        t += t >= k
        out[moved] = t


def _alias_row(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table of one probability vector: cell probabilities and aliases."""
    s = p.size
    scaled = p * s
    prob = np.ones(s)
    alias = np.arange(s)
    small = [j for j in range(s) if scaled[j] < 1.0]
    large = [j for j in range(s) if scaled[j] >= 1.0]
    while small and large:
        lo = small.pop()
        hi = large.pop()
        prob[lo] = scaled[lo]
        alias[lo] = hi
        scaled[hi] = (scaled[hi] + scaled[lo]) - 1.0
        (small if scaled[hi] < 1.0 else large).append(hi)
    # Leftovers are 1 up to rounding: they keep prob 1 (their own category).
    return prob, alias


class AliasSampler:
    """Sampler for any row-stochastic matrix (Walker 1977; Vose 1991)."""

    def __init__(self, matrix: np.ndarray) -> None:
        s = matrix.shape[0]
        self.size = s
        prob = np.empty((s, s))
        alias = np.empty((s, s), dtype=np.intp)
        for k in range(s):
            prob[k], alias[k] = _alias_row(matrix[k])
        self.prob = prob.ravel()
        self.alias = alias.ravel()

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        s = self.size
        u *= s
        j = u.astype(codes.dtype)
        np.minimum(j, s - 1, out=j)
        u -= j
        cell = codes * s
        cell += j
        np.take(self.alias, cell, out=out)
        np.copyto(out, j, where=u < self.prob[cell])


def sampler_for(matrix: PramMatrix) -> Sampler:
    """The fastest exact kernel for a matrix: diagonal for form (8), alias otherwise."""
    q = matrix.form8_q
    if q is not None:
        return DiagonalSampler(q)
    return AliasSampler(matrix.matrix)
