"""Kernels that draw released categories given original ones (form (8) and alias draws are compiled
loops, :mod:`pramkit._kernels`; the others are vectorised NumPy).

Both kernels consume exactly one uniform ``u`` per value, so that the keyed
stream of :mod:`pramkit.rng` fixes the output, and both first decide whether
the value is kept: ``u < M[k, k]`` keeps category k.  A moved value reuses
``u' = (u - M[k, k]) / (1 - M[k, k])``, uniform on [0, 1) given that it
moves, to choose among the other categories:

* :class:`DiagonalSampler`, form (8) of Ayed, Battiston and Camerlenghi
  (off-diagonal entries of a row equal): ``t = floor(u' (S - 1))`` indexes the
  other categories, ``j = t + [t >= k]``.  Memory O(S).
* :class:`AliasSampler`, any matrix: Walker's alias method (Vose's stable
  construction) on each row's off-diagonal distribution
  ``M[k, j] / (1 - M[k, k])``; with ``x = u' S``, ``j = floor(x)`` picks a cell
  and ``x - j`` (uniform and independent of j) chooses between the cell's own
  category and its alias.  O(1) per value, memory O(S^2).  Each cell is
  stored as one float, ``alias + probability``, so a draw reads one table
  entry instead of two (at S = 1000 the tables do not fit in the cache and
  this saves a third of the time); the probability keeps 53 - log2(S) bits.

* :class:`GeometricSampler`, the truncated geometric mechanism: the inverse of the
  noise's distribution function, no table (O(1) memory).
* :class:`BlockSampler`, a block-diagonal matrix (strata, kept codes): each
  value is drawn by its block's own kernel on the block's local codes, so a
  value never leaves its block, exactly (no zero entry is ever sampled).

Only moved values touch the second stage, which keeps the work close to the
cost of drawing the uniforms for the diagonally dominant matrices PRAM uses.
Codes are integers in ``0..S-1``.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np

from pramkit import _kernels

#: Rows per block of the NumPy kernels: the block's working arrays stay in the CPU cache.
BLOCK = 1 << 15


def _out_of_range(codes: np.ndarray, position: int, size: int) -> ValueError:
    """The error for the code at ``position``, which lies outside ``-1..size-1``."""
    return ValueError(f"codes must lie in -1..{size - 1}, found {int(codes[position])}")


@contextlib.contextmanager
def uniform_source(generator: np.random.Generator) -> Iterator[np.ndarray | object]:
    """What the compiled draws read ``generator``'s uniforms from, its lock held.

    For a Philox generator (every keyed stream, :func:`pramkit.rng.stream`):
    its state as ``uint64[11]`` (counter, key, the last block's four words, how
    many of them were used), from which the draws compute Philox-4x64-10
    two blocks at a time, written back to the generator afterwards as
    NumPy would have left it.  For any other: its bit generator's capsule,
    whose ``next_double`` the draws call once per value, as
    :meth:`numpy.random.Generator.random` does.

    Yields
    ------
    numpy.ndarray or capsule
        The source to hand to a compiled draw.

    Examples
    --------
    >>> gen = np.random.Generator(np.random.Philox(key=7))
    >>> _ = gen.random(3)  # start inside a block
    >>> with uniform_source(gen) as source:
    ...     source[4:6].tolist(), int(source[10])  # the key; three words of the block used
    ([7, 0], 3)
    >>> codes, out = np.zeros(6, dtype=np.intp), np.empty(6, dtype=np.intp)
    >>> twin = np.random.Generator(np.random.Philox(key=7))
    >>> _ = twin.random(3)
    >>> release(DiagonalSampler(np.array([0.5, 0.5])), codes, gen, out) == release(
    ...     DiagonalSampler(np.array([0.5, 0.5])), codes, twin.random(6), np.empty(6, dtype=np.intp))
    True
    >>> gen.random() == twin.random()  # the state written back: the streams go on together
    True
    """
    bits = generator.bit_generator
    with bits.lock:
        if not isinstance(bits, np.random.Philox):
            yield bits.capsule
            return
        state = bits.state
        words = np.array([*state["state"]["counter"], *state["state"]["key"], *state["buffer"], state["buffer_pos"]],
                         dtype=np.uint64)
        try:
            yield words
        finally:
            state["state"]["counter"], state["buffer"], state["buffer_pos"] = words[:4], words[6:10], int(words[10])
            bits.state = state


def release(sampler: "Sampler", codes: np.ndarray, u: np.ndarray | np.random.Generator, out: np.ndarray,
            missing_code: int = -1) -> tuple[int, int]:
    """Write the released codes of ``codes`` into ``out`` (which may be ``codes`` itself), code ``-1``
    (missing) staying ``-1``; return how many codes equal ``missing_code`` and how many changed.

    A sampler with a compiled ``kernel`` (:class:`DiagonalSampler`,
    :class:`AliasSampler`) checks, draws and counts in one pass, drawing the
    uniforms from the generator itself as it goes; any other works block by
    block (:data:`BLOCK` values) and NumPy counts.

    Parameters
    ----------
    sampler : Sampler
        The kernel of the variable's matrix.
    codes : numpy.ndarray of intp
        Codes in ``-1..S-1``.
    u : numpy.ndarray of float, or numpy.random.Generator
        One uniform per code, or the generator whose next ``codes.size``
        uniforms (:meth:`numpy.random.Generator.random`) are theirs.
    out : numpy.ndarray of intp
        Receives the released codes.
    missing_code : int
        The code counted as missing (``-1``, or the missing category's code).

    Returns
    -------
    tuple of int
        The codes equal to ``missing_code`` and the codes changed.

    Raises
    ------
    ValueError
        A code lies outside ``-1..S-1``.

    Examples
    --------
    >>> codes = np.array([0, 1, -1, 2])
    >>> for sampler in (DiagonalSampler(np.full(3, 0.5)), GeometricSampler(3, 1.0)):
    ...     out = np.empty(4, dtype=np.intp)
    ...     counts = release(sampler, codes, np.array([0.9, 0.1, 0.5, 0.99]), out)
    ...     print(out.tolist(), counts)  # the missing value is counted and kept; two values move
    [2, 1, -1, 1] (1, 2)
    [1, 0, -1, 2] (1, 2)

    A generator gives the uniforms its ``random()`` would:

    >>> sampler, drawn, given = DiagonalSampler(np.full(3, 0.5)), np.empty(4, dtype=np.intp), np.empty(4, dtype=np.intp)
    >>> counts = release(sampler, codes, np.random.default_rng(7), drawn)
    >>> counts == release(sampler, codes, np.random.default_rng(7).random(4), given), drawn.tolist() == given.tolist()
    (True, True)
    >>> release(sampler, np.array([3]), np.array([0.5]), np.empty(1, dtype=np.intp))
    Traceback (most recent call last):
    ...
    ValueError: codes must lie in -1..2, found 3
    """
    kernel = getattr(sampler, "kernel", None)
    if kernel is not None:
        c = np.ascontiguousarray(codes, dtype=np.intp)
        if isinstance(u, np.random.Generator):
            with uniform_source(u) as source:
                bad, missing, changed = kernel(c, source, out, missing_code)
        else:
            bad, missing, changed = kernel(c, np.ascontiguousarray(u, dtype=np.float64), out, missing_code)
        if bad >= 0:
            raise _out_of_range(out, bad, sampler.size)  # a code outside the range is written out as it is
        return missing, changed
    missing = changed = 0
    buffer = np.empty(min(BLOCK, codes.size)) if isinstance(u, np.random.Generator) else None
    for s in range(0, codes.size, BLOCK):
        e = min(s + BLOCK, codes.size)
        block = _release_block(sampler, codes[s:e], u[s:e] if buffer is None else u.random(out=buffer[:e - s]),
                               out[s:e], missing_code)
        missing += block[0]
        changed += block[1]
    return missing, changed


def _release_block(sampler: "Sampler", codes: np.ndarray, u: np.ndarray, out: np.ndarray,
                   missing_code: int) -> tuple[int, int]:
    """:func:`release` of one block by a sampler's NumPy ``draw``."""
    lo, hi = int(codes.min()), int(codes.max())
    if lo < -1 or hi >= sampler.size:
        raise _out_of_range(codes, int(np.argmax((codes < -1) | (codes >= sampler.size))), sampler.size)
    original = codes.copy() if np.may_share_memory(codes, out) else codes
    if lo == -1:
        valid = original >= 0
        sampler.draw(np.where(valid, original, 0), u, out)
        out[~valid] = -1
    else:
        sampler.draw(original, u, out)
    return int(np.count_nonzero(original == missing_code)), int(np.count_nonzero(out != original))


class _KeepOrMove:
    """Shared first stage: keep with probability ``M[k, k]``, else call ``_move``."""

    def __init__(self, diagonal: np.ndarray) -> None:
        self.keep = np.ascontiguousarray(diagonal, dtype=float)
        self.size = self.keep.size
        moves = self.keep < 1.0
        self.inv_move = np.zeros_like(self.keep)
        self.inv_move[moves] = 1.0 / (1.0 - self.keep[moves])

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and uniforms ``u`` into ``out``.

        A value of category k is kept when ``u < M[k, k]``; otherwise
        ``u' = (u - M[k, k]) / (1 - M[k, k])`` chooses among the other categories.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes.
        u : numpy.ndarray of float
            One uniform on [0, 1) per code (the keyed stream of :mod:`pramkit.rng`); not modified.
        out : numpy.ndarray of int
            Receives the released codes (same length).

        Examples
        --------
        >>> s = AliasSampler(np.array([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]]))
        >>> codes, out = np.array([0, 1, 2]), np.empty(3, dtype=np.intp)
        >>> s.draw(codes, np.array([0.69, 0.59, 0.49]), out)
        >>> out.tolist()  # u below the diagonal: every value kept
        [0, 1, 2]
        >>> s.draw(codes, np.array([0.71, 0.61, 0.51]), out)
        >>> out.tolist()  # just above: moved, never where M is 0 (M[0, 2] = M[2, 0] = 0)
        [1, 0, 1]
        """
        out[...] = codes
        if self.size == 1:
            return
        moved = np.flatnonzero(u >= self.keep[codes])
        if moved.size == 0:
            return
        k = codes[moved]
        u_move = (u[moved] - self.keep[k]) * self.inv_move[k]
        out[moved] = self._move(k, u_move)

    def _move(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class DiagonalSampler(_KeepOrMove):
    """Form (8): ``M[k, k] = q_k``, ``M[k, j] = (1 - q_k) / (S - 1)``.

    A moved value of category k takes ``t = floor(u' (S - 1))`` and releases
    ``j = t + [t >= k]``: each of the other S - 1 categories with probability
    ``1 / (S - 1)``.  Memory O(S).

    Parameters
    ----------
    diagonal : numpy.ndarray
        The keep probabilities q (:attr:`pramkit.PramMatrix.form8_q`).

    References
    ----------
    Ayed, Battiston and Camerlenghi, form (8).

    Examples
    --------
    >>> s = DiagonalSampler(np.array([0.8, 0.5, 0.9]))
    >>> out = np.empty(6, dtype=np.intp)
    >>> s.draw(np.array([0, 0, 0, 1, 1, 2]), np.array([0.1, 0.85, 0.95, 0.4, 0.6, 0.99]), out)
    >>> out.tolist()  # 0 kept (u < 0.8); u' = 0.25 and 0.75 pick 1 and 2; ...
    [0, 1, 2, 1, 0, 1]

    Over many uniforms, the released shares are the row of the matrix:

    >>> u = np.random.default_rng(0).random(100_000)
    >>> out = np.empty(u.size, dtype=np.intp)
    >>> s.draw(np.zeros(u.size, dtype=np.intp), u, out)
    >>> (np.bincount(out, minlength=3) / u.size).round(2).tolist()  # q_0 = 0.8, w_0 = 0.1
    [0.8, 0.1, 0.1]
    """

    def __init__(self, diagonal: np.ndarray) -> None:
        super().__init__(diagonal)
        # the kernel's tables: entry 0 for code -1, kept whatever the uniform
        self._keep_from_missing = np.append(2.0, self.keep if self.size > 1 else [2.0])  # one category: kept
        self._inv_move_from_missing = np.append(0.0, self.inv_move)

    def kernel(self, codes: np.ndarray, u: np.ndarray | object, out: np.ndarray,
               missing_code: int) -> tuple[int, int, int]:
        """:meth:`_KeepOrMove.draw` in one compiled pass, ``u`` the uniforms or a source of them (:func:`uniform_source`)
        (``t`` capped at S - 2 against the measure-zero rounding of ``u' (S - 1)`` up to S - 1): the
        position of the first code outside ``-1..S-1`` (or ``-1``), the codes equal to ``missing_code``,
        the codes changed."""
        return _kernels.draw_diagonal(codes, u, self._keep_from_missing, self._inv_move_from_missing, out,
                                      missing_code)

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        """:meth:`_KeepOrMove.draw`, by :meth:`kernel`."""
        release(self, codes, u, out)


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


class AliasSampler(_KeepOrMove):
    """Any row-stochastic matrix (Walker 1977; Vose 1991) after the keep test.

    Parameters
    ----------
    matrix : numpy.ndarray, shape (S, S)
        A row-stochastic matrix (:attr:`pramkit.PramMatrix.matrix`).  Memory O(S^2).

    Examples
    --------
    Over many uniforms, the released shares are the row of the matrix, and an
    entry of zero is never drawn:

    >>> m = np.array([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]])
    >>> s = AliasSampler(m)
    >>> u = np.random.default_rng(0).random(100_000)
    >>> out = np.empty(u.size, dtype=np.intp)
    >>> s.draw(np.ones(u.size, dtype=np.intp), u, out)
    >>> (np.bincount(out, minlength=3) / u.size).round(2).tolist()
    [0.1, 0.6, 0.3]
    >>> s.draw(np.full(u.size, 2), u, out)
    >>> bool((out == 0).any())  # M[2, 0] = 0
    False
    """

    def __init__(self, matrix: np.ndarray) -> None:
        m = np.asarray(matrix, dtype=float)
        super().__init__(np.diagonal(m))
        s = self.size
        prob = np.ones((s, s))
        alias = np.tile(np.arange(s), (s, 1))
        for k in np.flatnonzero(self.keep < 1.0):
            off = m[k].copy()
            off[k] = 0.0
            prob[k], alias[k] = _alias_row(off / off.sum())
        own = np.tile(np.arange(s), (s, 1))
        # A full cell (probability 1) is stored as its own category with probability 0;
        # so is a probability within rounding of 1, which alias + probability cannot hold.
        packed = alias + np.where(prob < 1.0, prob, 0.0)
        full = (prob >= 1.0) | (np.floor(packed) != alias)
        self.table = np.where(full, own, packed).ravel()

    def kernel(self, codes: np.ndarray, u: np.ndarray | object, out: np.ndarray,
               missing_code: int) -> tuple[int, int, int]:
        """:meth:`_KeepOrMove.draw` in one compiled pass (``u`` as for :meth:`DiagonalSampler.kernel`):
        with ``x = u' S``, cell ``j = floor(x)`` (capped at S - 1) of row k releases j if ``x - j`` is
        below the cell's probability, else its alias.  Returns what :meth:`DiagonalSampler.kernel`
        returns."""
        return _kernels.draw_alias(codes, u, self.keep, self.inv_move, self.table, out, missing_code)

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        """:meth:`_KeepOrMove.draw`, by :meth:`kernel`."""
        release(self, codes, u, out)


#: Largest dense matrix drawn by :class:`AliasSampler`, whose tables are built row by row in
#: Python (about a minute at S = 10 000); above it :class:`CumulativeSampler` builds its table in
#: NumPy.  The two release different values for the same key, so the threshold is fixed.
MAX_ALIAS = 2048


class CumulativeSampler(_KeepOrMove):
    """Any row-stochastic matrix, its table built in NumPy: after the keep test, the inverse
    of the row's off-diagonal distribution function.

    Every row's cumulative off-diagonal sums, normalised and shifted by the row's number,
    form one increasing array; ``searchsorted`` of ``k + u'`` finds row k's category in
    O(log S) for all values at once.  A zero entry (and the diagonal) adds nothing to the
    sums, so it is never drawn.  Memory: one float per entry, as :class:`AliasSampler`;
    the shift by k keeps 53 - log2(S) bits of u', as the alias cells do.

    Examples
    --------
    >>> m = np.array([[0.5, 0.5, 0.0], [0.2, 0.6, 0.2], [0.0, 0.3, 0.7]])
    >>> out = np.empty(4, dtype=np.intp)
    >>> CumulativeSampler(m).draw(np.array([0, 1, 1, 2]), np.array([0.9, 0.65, 0.95, 0.8]), out)
    >>> out.tolist()  # row 1 moves: u' = 0.125 -> category 0, u' = 0.875 -> category 2
    [1, 0, 2, 1]
    """

    def __init__(self, matrix: np.ndarray, rows_per_chunk: int = 512) -> None:
        m = np.asarray(matrix, dtype=float)
        super().__init__(np.diagonal(m))
        s = self.size
        self.table = np.empty(s * s)
        self.last = np.zeros(s, dtype=np.intp)  # each row's last positive off-diagonal column
        for r0 in range(0, s, rows_per_chunk):
            rows = np.arange(r0, min(r0 + rows_per_chunk, s))
            off = m[rows].copy()
            off[np.arange(rows.size), rows] = 0.0
            cdf = np.cumsum(off, axis=1)
            total = cdf[:, -1:].copy()
            total[total == 0] = 1.0  # a row that never moves: never read
            cdf /= total
            positive = off > 0
            self.last[rows] = np.where(positive.any(axis=1), s - 1 - np.argmax(positive[:, ::-1], axis=1), 0)
            self.table[r0 * s:(r0 + rows.size) * s] = (cdf + rows[:, None]).ravel()

    def _move(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        s = self.size
        keys = k + u
        order = np.argsort(keys)  # sorted keys: each search starts where the last one ended (3x fewer cache misses)
        found = np.empty(keys.size, dtype=np.intp)
        found[order] = np.searchsorted(self.table, keys[order], side="right")
        j = found - k * s
        return np.minimum(j, self.last[k])  # k + u' rounding up to k + 1 lands on the row's last category


class GeometricSampler:
    """The truncated geometric mechanism (:meth:`pramkit.PramMatrix.truncated_geometric`),
    with no table: the noise N of ``x + N`` by the inverse of its two-sided geometric
    distribution function, ``P(N <= k) = a^-k / (1 + a)`` for ``k < 0`` and
    ``1 - a^(k+1) / (1 + a)`` for ``k >= 0``, then clamped to ``0 .. S-1``.  O(1) memory.

    Parameters
    ----------
    size : int
        The number of categories S.
    rate : float
        The rate (metric epsilon per step of the order), ``a = exp(-rate)``.

    Examples
    --------
    >>> import math
    >>> out = np.empty(3, dtype=np.intp)
    >>> GeometricSampler(10, math.log(2)).draw(np.array([5, 5, 5]), np.array([0.1, 0.5, 0.9]), out)
    >>> out.tolist()  # a = 1/2: P(N <= -1) = 1/3, P(N <= 0) = 2/3, P(N <= 1) = 5/6
    [3, 5, 7]
    """

    def __init__(self, size: int, rate: float) -> None:
        self.size, self.rate = int(size), float(rate)
        self.log_a = -self.rate
        self.one_plus_a = 1.0 + np.exp(-self.rate)

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and uniforms ``u`` into ``out``.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes.
        u : numpy.ndarray of float
            One uniform on [0, 1) per code.
        out : numpy.ndarray of int
            Receives the released codes, ``codes + N`` clamped to ``0 .. S-1``.

        Examples
        --------
        Over many uniforms, the released shares are the row of the matrix
        (:meth:`pramkit.PramMatrix.truncated_geometric`), the ends collecting the tails:

        >>> from pramkit.matrix import PramMatrix
        >>> m = PramMatrix.truncated_geometric(np.log(2), ["0-17", "18-34", "35-64", "65+"])
        >>> u = np.random.default_rng(0).random(100_000)
        >>> out = np.empty(u.size, dtype=np.intp)
        >>> GeometricSampler(m.size, m.geometric_rate).draw(np.ones(u.size, dtype=np.intp), u, out)
        >>> bool(np.abs(np.bincount(out, minlength=4) / u.size - m.matrix[1]).max() < 0.01)
        True
        """
        a_share = (self.one_plus_a - 1.0) / self.one_plus_a  # P(N <= -1) = a / (1 + a)
        with np.errstate(divide="ignore"):
            below = np.log(u * self.one_plus_a) / self.log_a            # N = -(ceil(t) - 1) when u < a / (1 + a)
            above = np.log((1.0 - u) * self.one_plus_a) / self.log_a    # N = floor(t') when u >= 1 / (1 + a)
        noise = np.where(u < a_share, 1.0 - np.ceil(below), np.where(u >= 1.0 / self.one_plus_a, np.floor(above), 0.0))
        np.clip(codes + np.clip(noise, -self.size, self.size), 0, self.size - 1, out=out, casting="unsafe")


class BlockSampler:
    """A block-diagonal matrix: every block drawn by its own kernel on local codes.

    ``blocks`` is :attr:`pramkit.PramMatrix.blocks`: each block's category
    positions and matrix.  A value of block b is mapped to its position within
    the block, drawn by the block's kernel with its own uniform, and mapped
    back, so the released value stays in the block by construction.

    Parameters
    ----------
    blocks : sequence of (numpy.ndarray, PramMatrix)
        Each block's category positions and its matrix.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.5, 0.5]), PramMatrix.identity([2])], categories=[0, 2, 1])
    >>> out = np.empty(4, dtype=np.intp)
    >>> BlockSampler(m.blocks).draw(np.array([0, 1, 2, 2]), np.array([0.9, 0.2, 0.1, 0.7]), out)
    >>> out.tolist()
    [2, 1, 2, 0]
    """

    def __init__(self, blocks) -> None:
        self.size = sum(idx.size for idx, _ in blocks)
        self.block_of = np.empty(self.size, dtype=np.intp)
        self.local = np.empty(self.size, dtype=np.intp)
        self.members = [np.asarray(idx, dtype=np.intp) for idx, _ in blocks]
        for b, idx in enumerate(self.members):
            self.block_of[idx] = b
            self.local[idx] = np.arange(idx.size)
        self.kernels = [sampler_for(part) for _, part in blocks]

    def draw(self, codes: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and uniforms ``u`` into ``out``.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes (positions in the whole matrix's categories).
        u : numpy.ndarray of float
            One uniform on [0, 1) per code.
        out : numpy.ndarray of int
            Receives the released codes, each in its original's block.

        Examples
        --------
        Two strata of two categories each, and a kept code: whatever the uniforms,
        no value leaves its block.

        >>> from pramkit.matrix import PramMatrix
        >>> north = PramMatrix.form8([0.5, 0.5], categories=[("north", "f"), ("north", "m")])
        >>> south = PramMatrix.form8([0.5, 0.5], categories=[("south", "f"), ("south", "m")])
        >>> m = PramMatrix.block_diagonal([north, south, PramMatrix.identity([("any", "n/a")])])
        >>> codes = np.random.default_rng(1).integers(0, 5, 10_000)
        >>> out = np.empty(codes.size, dtype=np.intp)
        >>> BlockSampler(m.blocks).draw(codes, np.random.default_rng(2).random(codes.size), out)
        >>> block = np.array([0, 0, 1, 1, 2])
        >>> bool((block[out] == block[codes]).all()), bool((out != codes).any())
        (True, True)
        """
        block = self.block_of[codes]
        local = self.local[codes]
        if len(self.kernels) == 1:
            self.kernels[0].draw(local, u, out)
            np.take(self.members[0], out, out=out)
            return
        order = np.argsort(block, kind="stable")
        bounds = np.searchsorted(block[order], np.arange(len(self.kernels) + 1))
        for b in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[b]:bounds[b + 1]]
            drawn = np.empty(rows.size, dtype=np.intp)
            self.kernels[b].draw(local[rows], u[rows], drawn)
            out[rows] = self.members[b][drawn]


def sampler_for(matrix) -> Sampler:
    """The fastest exact kernel for a :class:`pramkit.PramMatrix`: block by block for a
    block-diagonal matrix, by the rate for the truncated geometric mechanism, diagonal for
    form (8), alias up to :data:`MAX_ALIAS` categories and cumulative sums above.

    Parameters
    ----------
    matrix : PramMatrix
        The matrix to draw from.

    Returns
    -------
    DiagonalSampler, AliasSampler, BlockSampler or GeometricSampler
        A kernel whose ``draw(codes, u, out)`` consumes one uniform per value.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> dense = PramMatrix([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]])
    >>> form8 = PramMatrix([[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.05, 0.05, 0.9]])  # stored dense
    >>> type(sampler_for(dense)).__name__, type(sampler_for(form8)).__name__
    ('AliasSampler', 'DiagonalSampler')

    Every kernel releases category j with probability ``M[k, j]``:

    >>> u = np.random.default_rng(0).random(100_000)
    >>> out = np.empty(u.size, dtype=np.intp)
    >>> sampler_for(form8).draw(np.full(u.size, 2), u, out)
    >>> (np.bincount(out, minlength=3) / u.size).round(2).tolist()
    [0.05, 0.05, 0.9]
    """
    if matrix.blocks is not None:
        return BlockSampler(matrix.blocks)
    if matrix.geometric_rate is not None:
        return GeometricSampler(matrix.size, matrix.geometric_rate)
    q = matrix.form8_q
    if q is not None:
        return DiagonalSampler(q)
    return AliasSampler(matrix.matrix) if matrix.size <= MAX_ALIAS else CumulativeSampler(matrix.matrix)


#: Any of the kernels above.
Sampler = DiagonalSampler | AliasSampler | CumulativeSampler | GeometricSampler | BlockSampler
