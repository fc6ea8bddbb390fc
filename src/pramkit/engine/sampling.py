"""Kernels that draw released categories given original ones, in integer arithmetic.

Every kernel reads one 64-bit word per value from the keyed stream of
:mod:`pramkit.kernel.rng` and takes its uniform as the integer ``x = word >> 2`` on
``[0, 2^62)`` (:data:`pramkit.privacy.law.BITS`).  The matrix is quantised once
into integer units per row (:mod:`pramkit.privacy.law`), and every decision is an
integer comparison with them, so the law the engine realises is known exactly
(:func:`pramkit.engine.realised_law`): ``P(j | k) = units[k, j] / 2^62``, every
positive entry of M at least one unit, every zero entry none.  Each kernel first
decides whether the value is kept: ``x < K_k`` keeps category k, and a moved
value uses ``r = x - K_k``, uniform on the row's move units:

* :class:`DiagonalSampler`, form (8) of Ayed, Battiston and Camerlenghi: each
  other category has ``W_k`` units, ``t = floor(r / W_k)`` (capped at S - 2, so
  the last other category also takes the row's few extra units) indexes them,
  ``j = t + [t >= k]``.  Memory O(S).
* :class:`AliasSampler`, any matrix up to :data:`MAX_ALIAS` categories: Walker's
  alias method (Vose's construction) in integers, the row's move units split into
  ``2^b >= S`` equal cells; the low ``b`` bits of r pick a cell and the others are
  compared with its threshold.  O(1) per value, memory ``S 2^b`` words.
* :class:`CumulativeSampler`, any larger matrix: bisection of the row's cumulative
  move units.  O(log S) per moved value, memory ``S^2`` words.
* :class:`GeometricSampler`, the truncated geometric mechanism: sampled **exactly**
  (no table and no cut-off) by inversion of its distribution function, decided on
  the word's 62 bits with rigorous error bounds and, in the rare case they do not
  decide, on further random words in exact arithmetic.
* :class:`ExponentialSampler`, the exponential mechanism stored by its parameters:
  sampled **exactly** by inversion of each row's distribution function, computed
  once per original category of a call from the public distances (O(S) memory),
  decided on the word's 62 bits with a rigorous error bound and, rarely, in exact
  arithmetic on further words.
* :class:`BlockSampler`, a block-diagonal matrix (strata, kept codes): each value
  is drawn by its block's own kernel on the block's local codes, so a value never
  leaves its block.

Only moved values touch the second stage, which keeps the work close to the
cost of drawing the words for the diagonally dominant matrices PRAM uses.
Codes are integers in ``0..S-1``.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from decimal import ROUND_FLOOR, Context, Decimal
from fractions import Fraction
from typing import Self, cast

import numpy as np

from pramkit.kernel import _kernels
from pramkit.privacy.law import (
    BITS,
    DENOMINATOR,
    MAX_ALIAS,
    RealisedLaw,
    alias_bits,
    dense_units,
    form8_units,
    realised_law,
)

#: Rows per block of the NumPy kernels: the block's working arrays stay in the CPU cache.
BLOCK = 1 << 15
#: Rows of an exponential mechanism computed at a time by :class:`ExponentialSampler`.
ROWS_AT_ONCE = 64
#: A draw's integer uniform is ``word >> SHIFT``.
SHIFT = 64 - BITS
#: The kinds of word sources of the compiled draws (given words, a Philox state, a capsule).
_GIVEN, _PHILOX, _CAPSULE = 0, 1, 2

#: Further random words of one value, for a sampler that may need more than one (the exact
#: geometric sampler): ``more(i)`` iterates over the words of the i-th value of a call.
More = Callable[[int], Iterator[int]]

__all__ = [
    "MAX_ALIAS",
    "AliasSampler",
    "BlockSampler",
    "CumulativeSampler",
    "DiagonalSampler",
    "ExponentialSampler",
    "GeometricSampler",
    "More",
    "Sampler",
    "release",
    "sampler_for",
    "uniform_source",
    "words_of",
]


def _out_of_range(codes: np.ndarray, position: int, size: int) -> ValueError:
    """The error for the code at ``position``, which lies outside ``-1..size-1``."""
    return ValueError(f"codes must lie in -1..{size - 1}, found {int(codes[position])}")


def words_of(uniforms: np.ndarray) -> np.ndarray:
    """The 64-bit words whose draws read as ``uniforms`` (doubles on [0, 1)): ``floor(u 2^64)``.

    For examples and tests that think in uniforms.

    Examples
    --------
    >>> words_of(np.array([0.0, 0.5, 0.75])).tolist() == [0, 2**63, 3 * 2**62]
    True
    """
    return np.floor(np.asarray(uniforms, dtype=float) * 2.0**64).astype(np.uint64)


@contextlib.contextmanager
def uniform_source(generator: np.random.Generator) -> Iterator[tuple[np.ndarray | object, int]]:
    """What the compiled draws read ``generator``'s words from, and its kind, its lock held.

    For a Philox generator (every keyed stream, :func:`pramkit.kernel.rng.stream`):
    its state as ``uint64[11]`` (counter, key, the last block's four words, how
    many of them were used), from which the draws compute Philox-4x64-10
    several blocks at a time (in AVX-512 or AVX2 vector registers where the
    processor has them), written back to the generator afterwards as
    NumPy would have left it.  For any other: its bit generator's capsule,
    whose ``next_raw`` the draws call once per value, as
    :meth:`numpy.random.BitGenerator.random_raw` does.

    Yields
    ------
    (numpy.ndarray or capsule, int)
        The source to hand to a compiled draw, and its kind.

    Examples
    --------
    >>> gen = np.random.Generator(np.random.Philox(key=7))
    >>> _ = gen.bit_generator.random_raw(3)  # start inside a block
    >>> with uniform_source(gen) as (source, kind):
    ...     source[4:6].tolist(), int(source[10])  # the key; three words of the block used
    ([7, 0], 3)
    >>> codes, out = np.zeros(6, dtype=np.intp), np.empty(6, dtype=np.intp)
    >>> twin = np.random.Generator(np.random.Philox(key=7))
    >>> _ = twin.bit_generator.random_raw(3)
    >>> release(DiagonalSampler(np.array([0.5, 0.5])), codes, gen, out) == release(
    ...     DiagonalSampler(np.array([0.5, 0.5])), codes, twin.bit_generator.random_raw(6),
    ...     np.empty(6, dtype=np.intp))
    True
    >>> gen.bit_generator.random_raw() == twin.bit_generator.random_raw()  # the state written back
    True
    """
    bits = generator.bit_generator
    with bits.lock:
        if not isinstance(bits, np.random.Philox):
            yield bits.capsule, _CAPSULE
            return
        state = bits.state
        words = np.array([*state["state"]["counter"], *state["state"]["key"], *state["buffer"], state["buffer_pos"]],
                         dtype=np.uint64)
        try:
            yield words, _PHILOX
        finally:
            state["state"]["counter"], state["buffer"], state["buffer_pos"] = words[:4], words[6:10], int(words[10])
            bits.state = state


def release(sampler: Sampler, codes: np.ndarray, words: np.ndarray | np.random.Generator, out: np.ndarray,
            missing_code: int = -1, more: More | None = None) -> tuple[int, int]:
    """Write the released codes of ``codes`` into ``out`` (which may be ``codes`` itself), code ``-1``
    (missing) staying ``-1``; return how many codes equal ``missing_code`` and how many changed.

    A sampler with a compiled ``kernel`` (:class:`DiagonalSampler`,
    :class:`AliasSampler`, :class:`CumulativeSampler`) checks, draws and counts in
    one pass, computing the words from the generator itself as it goes; any other
    works block by block (:data:`BLOCK` values) and NumPy counts.

    Parameters
    ----------
    sampler : Sampler
        The kernel of the variable's matrix.
    codes : numpy.ndarray of intp
        Codes in ``-1..S-1``.
    words : numpy.ndarray of uint64, or numpy.random.Generator
        One 64-bit word per code, or the generator whose next ``codes.size``
        raw words (:meth:`numpy.random.BitGenerator.random_raw`) are theirs.
    out : numpy.ndarray of intp
        Receives the released codes.
    missing_code : int
        The code counted as missing (``-1``, or the missing category's code).
    more : callable, optional
        Further words of the i-th value (:data:`More`), for a sampler that may need
        them (:class:`GeometricSampler`); fresh randomness from the operating system
        when not given.

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
    >>> codes, words = np.array([0, 1, -1, 2]), words_of([0.9, 0.1, 0.5, 0.99])
    >>> for sampler in (DiagonalSampler(np.full(3, 0.5)), GeometricSampler(3, 1.0)):
    ...     out = np.empty(4, dtype=np.intp)
    ...     counts = release(sampler, codes, words, out)
    ...     print(out.tolist(), counts)  # the missing value is counted and kept; two values move
    [2, 1, -1, 1] (1, 2)
    [1, 0, -1, 2] (1, 2)

    A generator gives the words its ``random_raw()`` would:

    >>> sampler, drawn, given = DiagonalSampler(np.full(3, 0.5)), np.empty(4, dtype=np.intp), np.empty(4, dtype=np.intp)
    >>> counts = release(sampler, codes, np.random.default_rng(7), drawn)
    >>> raw = np.random.default_rng(7).bit_generator.random_raw(4)
    >>> counts == release(sampler, codes, raw, given), drawn.tolist() == given.tolist()
    (True, True)
    >>> release(sampler, np.array([3]), words_of([0.5]), np.empty(1, dtype=np.intp))
    Traceback (most recent call last):
    ...
    ValueError: codes must lie in -1..2, found 3
    """
    kernel = getattr(sampler, "kernel", None)
    if kernel is not None:
        c = np.ascontiguousarray(codes, dtype=np.intp)
        if isinstance(words, np.random.Generator):
            with uniform_source(words) as (source, kind):
                bad, missing, changed = kernel(c, source, kind, out, missing_code)
        else:
            bad, missing, changed = kernel(c, np.ascontiguousarray(words, dtype=np.uint64), _GIVEN, out,
                                           missing_code)
        if bad >= 0:
            raise _out_of_range(out, bad, sampler.size)  # a code outside the range is written out as it is
        return missing, changed
    missing = changed = 0
    step = max(codes.size, 1) if getattr(sampler, "whole", False) else BLOCK  # rows computed once per call
    for s in range(0, codes.size, step):
        e = min(s + step, codes.size)
        block_words = (words.bit_generator.random_raw(e - s) if isinstance(words, np.random.Generator)
                       else np.asarray(words[s:e], dtype=np.uint64))
        shifted = None if more is None else (lambda i, s=s: more(s + i))
        block = _release_block(sampler, codes[s:e], block_words, out[s:e], missing_code, shifted)
        missing += block[0]
        changed += block[1]
    return missing, changed


def _release_block(sampler: Sampler, codes: np.ndarray, words: np.ndarray, out: np.ndarray,
                   missing_code: int, more: More | None) -> tuple[int, int]:
    """:func:`release` of one block by a sampler's NumPy ``draw``."""
    lo, hi = int(codes.min()), int(codes.max())
    if lo < -1 or hi >= sampler.size:
        raise _out_of_range(codes, int(np.argmax((codes < -1) | (codes >= sampler.size))), sampler.size)
    original = codes.copy() if np.may_share_memory(codes, out) else codes
    if lo == -1:
        valid = original >= 0
        sampler.draw(np.where(valid, original, 0), words, out, more)
        out[~valid] = -1
    else:
        sampler.draw(original, words, out, more)
    return int(np.count_nonzero(original == missing_code)), int(np.count_nonzero(out != original))


class _Compiled:
    """What the compiled samplers share: ``draw`` through :func:`release`, and a sampler built from a
    :class:`pramkit.privacy.law.RealisedLaw`'s units (the fields ``_LAW`` names, handed to ``_tables``)."""

    size: int
    _LAW: tuple[str, ...] = ("units",)
    #: Builds the sampler's tables from the law's fields that ``_LAW`` names (each subclass its own).
    _tables: Callable[..., None]

    @classmethod
    def of_law(cls, law: RealisedLaw) -> Self:
        """The sampler that draws ``law`` (form (8) for :class:`DiagonalSampler`, dense for the others)."""
        sampler = cls.__new__(cls)
        sampler._tables(*(getattr(law, name) for name in cls._LAW))
        return sampler

    def draw(self, codes: np.ndarray, words: np.ndarray, out: np.ndarray, more: More | None = None) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and 64-bit ``words`` into ``out``.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes.
        words : numpy.ndarray of uint64
            One word per code (the keyed stream of :mod:`pramkit.kernel.rng`); not modified.
        out : numpy.ndarray of int
            Receives the released codes (same length).
        more : callable, optional
            Not used: one word decides every value.
        """
        release(cast("Sampler", self), codes, words, out)  # each subclass is one of Sampler's classes


class DiagonalSampler(_Compiled):
    """Form (8): ``M[k, k] = q_k``, ``M[k, j] = w_k`` (by default ``(1 - q_k) / (S - 1)``).

    Row k keeps ``K_k`` units and gives ``W_k`` to every other category
    (:func:`pramkit.privacy.law.form8_units`); a moved value takes
    ``t = floor(r / W_k)`` (capped at S - 2) and releases ``j = t + [t >= k]``.
    Memory O(S).

    Parameters
    ----------
    diagonal : numpy.ndarray
        The keep probabilities q (:attr:`pramkit.PramMatrix.form8_q`).
    off : numpy.ndarray, optional
        The off-diagonal entries w (:attr:`pramkit.PramMatrix.form8_w`).

    References
    ----------
    Ayed, Battiston and Camerlenghi, form (8).

    Examples
    --------
    >>> s = DiagonalSampler(np.array([0.8, 0.5, 0.9]))
    >>> out = np.empty(6, dtype=np.intp)
    >>> s.draw(np.array([0, 0, 0, 1, 1, 2]), words_of([0.1, 0.85, 0.95, 0.4, 0.6, 0.99]), out)
    >>> out.tolist()  # 0 kept (u < 0.8); u' = 0.25 and 0.75 pick 1 and 2; ...
    [0, 1, 2, 1, 0, 1]

    Over many words, the released shares are the row of the matrix:

    >>> words = np.random.default_rng(0).bit_generator.random_raw(100_000)
    >>> out = np.empty(words.size, dtype=np.intp)
    >>> s.draw(np.zeros(words.size, dtype=np.intp), words, out)
    >>> (np.bincount(out, minlength=3) / words.size).round(2).tolist()  # q_0 = 0.8, w_0 = 0.1
    [0.8, 0.1, 0.1]
    """

    _LAW = ("keep", "weight")

    def __init__(self, diagonal: np.ndarray, off: np.ndarray | None = None) -> None:
        q = np.ascontiguousarray(diagonal, dtype=float)
        s = q.size
        w = np.asarray(off, dtype=float) if off is not None else (1.0 - q) / max(s - 1, 1)
        self._tables(*form8_units(q, w if s > 1 else np.zeros(1))[:2])

    def _tables(self, keep: np.ndarray, weight: np.ndarray) -> None:
        self.size = keep.size
        # entry 0 is for code -1: every word keeps it
        self._keep = np.ascontiguousarray(np.append(DENOMINATOR, keep), dtype=np.int64)
        self._weight = np.ascontiguousarray(np.append(0, weight), dtype=np.int64)
        self._inv_weight = np.zeros(self.size + 1)
        np.divide(1.0, self._weight, out=self._inv_weight, where=self._weight > 0)
        # the quotients by W_k as exact multiplies, for the loops that do not estimate them in doubles: a record
        # (K_k, m_k, l_k, padding) per entry, so that a vector loop reads four entries as four loads
        magic, shift = np.empty(self.size + 1, dtype=np.uint64), np.empty(self.size + 1, dtype=np.int64)
        _kernels.exact_reciprocals(self._weight, 64 - SHIFT, magic, shift)
        self._rows = np.zeros((self.size + 1, 4), dtype=np.uint64)
        self._rows[:, 0], self._rows[:, 1], self._rows[:, 2] = self._keep, magic, shift

    def kernel(self, codes: np.ndarray, words: np.ndarray | object, kind: int, out: np.ndarray,
               missing_code: int) -> tuple[int, int, int]:
        """The draw in one compiled pass (:func:`pramkit.kernel._kernels.draw_diagonal`), ``words`` of ``kind``
        (:func:`uniform_source`): the position of the first code outside ``-1..S-1`` (or ``-1``), the
        codes equal to ``missing_code``, the codes changed."""
        return _kernels.draw_diagonal(codes, words, kind, self._keep, self._weight, self._inv_weight, self._rows,
                                      out, missing_code, SHIFT)


class AliasSampler(_Compiled):
    """Any row-stochastic matrix (Walker 1977; Vose 1991) after the keep test, in integers.

    Row k's move units (a multiple of ``2^b``, ``2^b >= S``) are split into ``2^b``
    cells of ``C_k`` units each; a cell releases its own category below its
    threshold and its alias above (:func:`pramkit.kernel._kernels.alias_cells`).

    Parameters
    ----------
    matrix : numpy.ndarray, shape (S, S)
        A row-stochastic matrix (:attr:`pramkit.PramMatrix.matrix`).  Memory O(S 2^b).

    Examples
    --------
    Over many words, the released shares are the row of the matrix, and an
    entry of zero is never drawn:

    >>> m = np.array([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]])
    >>> s = AliasSampler(m)
    >>> words = np.random.default_rng(0).bit_generator.random_raw(100_000)
    >>> out = np.empty(words.size, dtype=np.intp)
    >>> s.draw(np.ones(words.size, dtype=np.intp), words, out)
    >>> (np.bincount(out, minlength=3) / words.size).round(2).tolist()
    [0.1, 0.6, 0.3]
    >>> s.draw(np.full(words.size, 2), words, out)
    >>> bool((out == 0).any())  # M[2, 0] = 0
    False
    """

    def __init__(self, matrix: np.ndarray) -> None:
        m = np.asarray(matrix, dtype=float)
        self._tables(dense_units(m, BITS, 1 << alias_bits(m.shape[0])))

    def _tables(self, units: np.ndarray) -> None:
        s = self.size = units.shape[0]
        self.bits = alias_bits(s)
        self._keep = np.ascontiguousarray(np.diagonal(units), dtype=np.int64)
        off = np.array(units, dtype=np.int64)
        np.fill_diagonal(off, 0)
        self._cells = np.empty(s << self.bits, dtype=np.int64)
        _kernels.alias_cells(off.ravel(), s, self.bits, self._cells)

    def kernel(self, codes: np.ndarray, words: np.ndarray | object, kind: int, out: np.ndarray,
               missing_code: int) -> tuple[int, int, int]:
        """The draw in one compiled pass (:func:`pramkit.kernel._kernels.draw_alias`); returns what
        :meth:`DiagonalSampler.kernel` returns."""
        return _kernels.draw_alias(codes, words, kind, self._keep, self._cells, out, missing_code, SHIFT,
                                   self.bits)


class CumulativeSampler(_Compiled):
    """Any row-stochastic matrix, by bisection of each row's cumulative move units.

    A zero entry (and the diagonal) adds nothing to the cumulative units, so it is
    never drawn.  Memory: one word per entry.

    Examples
    --------
    >>> m = np.array([[0.5, 0.5, 0.0], [0.2, 0.6, 0.2], [0.0, 0.3, 0.7]])
    >>> out = np.empty(4, dtype=np.intp)
    >>> CumulativeSampler(m).draw(np.array([0, 1, 1, 2]), words_of([0.9, 0.65, 0.95, 0.8]), out)
    >>> out.tolist()  # row 1 moves: r in the first or second half of its move units -> 0 or 2
    [1, 0, 2, 1]
    """

    def __init__(self, matrix: np.ndarray) -> None:
        self._tables(dense_units(np.asarray(matrix, dtype=float), BITS, 1))

    def _tables(self, units: np.ndarray) -> None:
        self.size = units.shape[0]
        self._keep = np.ascontiguousarray(np.diagonal(units), dtype=np.int64)
        self._cumulative = np.array(units, dtype=np.int64)
        np.fill_diagonal(self._cumulative, 0)
        np.cumsum(self._cumulative, axis=1, out=self._cumulative)

    def kernel(self, codes: np.ndarray, words: np.ndarray | object, kind: int, out: np.ndarray,
               missing_code: int) -> tuple[int, int, int]:
        """The draw in one compiled pass (:func:`pramkit.kernel._kernels.draw_cumulative`); returns what
        :meth:`DiagonalSampler.kernel` returns."""
        return _kernels.draw_cumulative(codes, words, kind, self._keep, self._cumulative, out, missing_code,
                                        SHIFT)


#: Relative error bound of the doubles the geometric sampler compares with (``exp`` to a few ulps,
#: and ``rate * m`` rounded once): ``(rate * m + 64) * 2^-48``, far above the arithmetic's own.
_GEOMETRIC_SLACK = 2.0**-48
#: Beyond this ``rate * m``, ``exp(-rate * m)`` is below ``2^-800``: far below one unit of ``x``.
_GEOMETRIC_TINY = 550.0


class GeometricSampler:
    """The truncated geometric mechanism (:meth:`pramkit.PramMatrix.truncated_geometric`), sampled
    exactly, with no table and no cut-off.

    The noise N of ``x + N`` (then clamped to ``0 .. S-1``) has distribution function
    ``G(n) = a^-n / (1 + a)`` for ``n < 0`` and ``1 - a^(n+1) / (1 + a)`` for
    ``n >= 0``, ``a = exp(-rate)``.  A value's uniform U is an infinite binary
    fraction whose first 62 bits are its word's; the released category is the
    first c with ``U < G(c - x)`` (else S - 1).  A candidate c comes from the
    inverse in doubles; it is accepted when both comparisons it rests on are
    decided by the 62 bits against thresholds with a rigorous error bound
    (:data:`_GEOMETRIC_SLACK`), which leaves about one value in 10^12 undecided;
    those are decided in exact arithmetic (:mod:`decimal`, correctly rounded
    ``exp``, interval bounds) on as many further words as needed.  So every
    category is released with exactly the closed form's probability.

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
    >>> GeometricSampler(10, math.log(2)).draw(np.array([5, 5, 5]), words_of([0.1, 0.5, 0.9]), out)
    >>> out.tolist()  # a = 1/2: P(N <= -1) = 1/3, P(N <= 0) = 2/3, P(N <= 1) = 5/6
    [3, 5, 7]
    """

    def __init__(self, size: int, rate: float) -> None:
        self.size, self.rate = int(size), float(rate)
        self._a = float(np.exp(-self.rate))

    def draw(self, codes: np.ndarray, words: np.ndarray, out: np.ndarray, more: More | None = None) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and 64-bit ``words`` into ``out``.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes.
        words : numpy.ndarray of uint64
            One word per code.
        out : numpy.ndarray of int
            Receives the released codes, ``codes + N`` clamped to ``0 .. S-1``.
        more : callable, optional
            Further words of the i-th value (:data:`More`), read only for the rare value
            that 62 bits do not decide; fresh randomness from the operating system when
            not given.

        Examples
        --------
        Over many words, the released shares are the row of the matrix
        (:meth:`pramkit.PramMatrix.truncated_geometric`), the ends collecting the tails:

        >>> from pramkit.matrix import PramMatrix
        >>> m = PramMatrix.truncated_geometric(np.log(2), ["0-17", "18-34", "35-64", "65+"])
        >>> words = np.random.default_rng(0).bit_generator.random_raw(100_000)
        >>> out = np.empty(words.size, dtype=np.intp)
        >>> GeometricSampler(m.size, m.geometric_rate).draw(np.ones(words.size, dtype=np.intp), words, out)
        >>> bool(np.abs(np.bincount(out, minlength=4) / words.size - m.matrix[1]).max() < 0.01)
        True
        """
        codes = np.asarray(codes, dtype=np.int64)
        x = (np.asarray(words, dtype=np.uint64) >> np.uint64(SHIFT)).astype(np.int64)
        if self.size == 1:
            out[...] = 0
            return
        c = self._candidate(codes, x)
        sure = np.ones(codes.size, dtype=bool)
        low = c > 0
        sure[low] = self._compare(c[low] - 1 - codes[low], x[low]) < 0          # U >= G(c - 1 - x)
        high = c < self.size - 1
        sure[high] &= self._compare(c[high] - codes[high], x[high]) > 0         # U < G(c - x)
        out[...] = c
        for i in np.flatnonzero(~sure):
            extra = more(int(i)) if more is not None else _fresh_words()
            out[i] = self._exact(int(codes[i]), int(x[i]), extra)

    def _candidate(self, codes: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The released category the inverse in doubles gives for the middle of each word's interval."""
        u = (x.astype(float) + 0.5) * 2.0**-BITS
        one_plus_a = 1.0 + self._a
        with np.errstate(divide="ignore", invalid="ignore"):
            below = np.log(u * one_plus_a) / -self.rate            # N = 1 - ceil(t) when u < a / (1 + a)
            above = np.log((1.0 - u) * one_plus_a) / -self.rate    # N = floor(t') when u >= 1 / (1 + a)
        noise = np.where(u < self._a / one_plus_a, 1.0 - np.ceil(below),
                         np.where(u >= 1.0 / one_plus_a, np.floor(above), 0.0))
        noise = np.nan_to_num(np.clip(noise, -self.size, self.size), nan=0.0)
        return np.clip(codes + noise.astype(np.int64), 0, self.size - 1)

    def _compare(self, n: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Whether ``U < G(n)`` for uniforms whose first 62 bits are ``x``: 1 surely, -1 surely not,
        0 when 62 bits and the error bound do not decide.

        With ``m = -n`` (n < 0) or ``n + 1`` (n >= 0), the side of G that is small is
        ``g = a^m / (1 + a)``: ``G(n) = g`` below zero, ``1 - g`` from zero up, and
        ``U`` lies in ``[x, x + 1) / 2^62``.
        """
        m = np.where(n < 0, -n, n + 1).astype(float)
        exponent = self.rate * m
        with np.errstate(under="ignore"):
            g = np.exp(-exponent) / (1.0 + self._a)
        slack = (exponent + 64.0) * _GEOMETRIC_SLACK
        tiny = exponent > _GEOMETRIC_TINY
        lo = np.where(tiny, 0.0, np.clip(np.floor(g * (1.0 - slack) * DENOMINATOR), 0.0, DENOMINATOR))
        hi = np.where(tiny, 1.0, np.clip(np.ceil(g * (1.0 + slack) * DENOMINATOR), 0.0, DENOMINATOR))
        lo, hi = lo.astype(np.int64), hi.astype(np.int64)
        y = DENOMINATOR - x          # 1 - U lies in ((y - 1), y] / 2^62
        below = n < 0
        yes = np.where(below, x + 1 <= lo, y - 1 >= hi)
        no = np.where(below, x >= hi, y <= lo)
        return yes.astype(np.int8) - no.astype(np.int8)

    def _exact(self, code: int, x: int, extra: Iterator[int]) -> int:
        """The released category of one value in exact arithmetic: bisection over c with
        ``U < G(c - code)`` decided on as many further words of U as it takes."""
        uniform = [x, BITS]  # U's known bits: U in [v, v + 1) / 2^bits
        lo, hi = 0, self.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._less(mid - code, uniform, extra):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _less(self, n: int, uniform: list[int], extra: Iterator[int]) -> bool:
        """``U < G(n)`` exactly: with ``g = a^m / (1 + a)`` the small side of G (``G(n) = g`` below zero,
        ``1 - g`` from zero up), U's interval is narrowed by a further word while it is the wider of the
        two, g's by more digits otherwise, until they do not overlap."""
        m = -n if n < 0 else n + 1
        digits, width = 20, None
        while True:
            if width is None:  # g's interval, and how wide it is (a power of two no wider)
                digits += 20
                lo, hi = self._small_side(m, digits)
                width = -((hi - lo).denominator.bit_length() - (hi - lo).numerator.bit_length() + 1)
            v, bits = uniform
            if n < 0:  # U < g: U in [v, v + 1) / 2^bits, compared in integers
                if (v + 1) * lo.denominator <= lo.numerator << bits:
                    return True
                if v * hi.denominator >= hi.numerator << bits:
                    return False
            else:  # U < 1 - g, i.e. 1 - U > g: 1 - U in (y - 1, y] / 2^bits
                y = (1 << bits) - v
                if (y - 1) * hi.denominator >= hi.numerator << bits:
                    return True
                if y * lo.denominator <= lo.numerator << bits:
                    return False
            if -bits > width:  # U's interval is the wider: one more word of U
                uniform[0], uniform[1] = (v << 64) | (next(extra) & 0xFFFFFFFFFFFFFFFF), bits + 64
            else:
                width = None

    def _small_side(self, m: int, digits: int) -> tuple[Fraction, Fraction]:
        """An interval around ``a^m / (1 + a)`` from ``digits`` significant digits (:mod:`decimal`'s
        ``exp`` is correctly rounded; each operation adds at most one unit of the last digit)."""
        ctx = Context(prec=digits, Emin=-10**9, Emax=10**9)
        rate = Decimal(-self.rate)  # exact (the constructor does not round; Python's operators on Decimals
        # round to the default 28 digits, so only the context's operations are used below)
        value = ctx.divide(ctx.exp(ctx.multiply(rate, m)), ctx.add(1, ctx.exp(rate)))
        slack = Fraction((self.rate * m + 10) * 1000) / 10**digits + Fraction(1, 10**digits)
        mid = Fraction(value)
        return mid * (1 - slack), mid * (1 + slack)


class ExponentialSampler:
    """The exponential mechanism stored by its parameters (:meth:`pramkit.PramMatrix.exponential`),
    sampled exactly, row by row from the public distances, with no S x S array.

    Row x's law is ``p_z = w_z / Z`` with ``w_z = exp(-rate d(x, z) / 2)``, the real
    numbers of the formula at the stored double ``rate`` and distances.  A value's
    uniform U is an infinite binary fraction whose first 62 bits are its word's; the
    released category is the first z with ``U < F(z) = (w_0 + ... + w_z) / Z``.  The
    values of one call are grouped by their original category and each needed row is
    computed once (O(S) time and memory, :data:`ROWS_AT_ONCE` rows at a time): its
    distribution function in doubles, ``F~``, within :meth:`slack` of F (a rigorous
    bound on the rounding of ``exp``, of the running sum and of the division).  A value
    is decided by its 62 bits when its interval ``[x, x + 1) / 2^62`` lies between
    ``F~(z - 1) + slack`` and ``F~(z) - slack``; the others (about ``4 slack`` of the
    values: 1 in 10^10 at S = 10 000) are decided in exact arithmetic, with integer
    bounds on every ``w_z`` from :mod:`decimal`'s correctly rounded ``exp`` and as many
    further words of U as it takes (:meth:`_exact`).  So every category is released with
    exactly the formula's probability, the far tails included.

    Parameters
    ----------
    matrix : PramMatrix
        An exponential mechanism stored by its parameters.

    Examples
    --------
    >>> import math
    >>> from pramkit.matrix import PramMatrix
    >>> from pramkit.distances import ordinal_distances
    >>> m = PramMatrix.exponential(2 * math.log(2), ordinal_distances("abc"))   # row a: 4/7, 2/7, 1/7
    >>> out = np.empty(3, dtype=np.intp)
    >>> ExponentialSampler(m).draw(np.zeros(3, dtype=np.intp), words_of([0.5, 0.6, 0.9]), out)
    >>> out.tolist()
    [0, 1, 2]
    """

    #: :func:`release` hands it every value of a call at once, so that each row is computed once.
    whole = True

    def __init__(self, matrix) -> None:
        self.size = matrix.size
        self.rate = float(matrix.exponential_rate)
        self.distances = matrix.exponential_distances

    def slack(self) -> float:
        """A bound on ``|F~(z) - F(z)|`` plus the comparisons' own roundings: with ``t`` the
        largest exponent ``rate d / 2`` and ``u = 2^-53``, each ``w~`` is within ``(t + 5) u`` of
        ``w`` (the product rounded once, ``exp`` within 4 ulps), the running sum adds at most
        ``1.02 S u`` relative, the division ``u``: ``2.1 ((t + 5) + 1.02 S) u + 1.1 u``, and the
        bound used is about twice that.

        Examples
        --------
        >>> import math
        >>> from pramkit.matrix import PramMatrix
        >>> from pramkit.distances import ordinal_distances
        >>> 1e-15 < ExponentialSampler(PramMatrix.exponential(0.5, ordinal_distances(range(100)))).slack() < 1e-12
        True
        """
        t = self.rate * self.distances.max / 2.0
        return (4.0 * (t + 8.0) + 4.0 * self.size + 16.0) * 2.0**-52

    def cdf(self, index: np.ndarray) -> np.ndarray:
        """``F~`` of rows ``index`` (shape (len(index), S)): the running sums of ``exp(-rate d / 2)``
        over their totals, in doubles.

        Examples
        --------
        >>> import math
        >>> from pramkit.matrix import PramMatrix
        >>> from pramkit.distances import ordinal_distances
        >>> m = PramMatrix.exponential(2 * math.log(2), ordinal_distances("abc"))
        >>> (ExponentialSampler(m).cdf(np.array([1])) * 4).tolist()   # 1/4, 3/4, 1
        [[1.0, 3.0, 4.0]]
        """
        w = np.exp(self.distances.rows(index) * (-self.rate / 2.0))
        c = np.cumsum(w, axis=1)
        return c / c[:, -1:]

    def draw(self, codes: np.ndarray, words: np.ndarray, out: np.ndarray, more: More | None = None) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and 64-bit ``words`` into ``out``.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes.
        words : numpy.ndarray of uint64
            One word per code.
        out : numpy.ndarray of int
            Receives the released codes.
        more : callable, optional
            Further words of the i-th value (:data:`More`), read only for the rare value that
            62 bits do not decide; fresh randomness from the operating system when not given.
        """
        codes = np.asarray(codes, dtype=np.intp)
        x = (np.asarray(words, dtype=np.uint64) >> np.uint64(SHIFT)).astype(np.int64)
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        present, starts = np.unique(sorted_codes, return_index=True)
        ends = np.append(starts[1:], codes.size)
        tau, last, scale = self.slack() + 2.0**-49, self.size - 1, 2.0**-BITS
        undecided: list[int] = []
        for g in range(0, present.size, ROWS_AT_ONCE):
            rows = present[g:g + ROWS_AT_ONCE]
            cdf = self.cdf(rows)
            for r in range(rows.size):
                at = order[starts[g + r]:ends[g + r]]
                xs = x[at].astype(float)
                f = cdf[r]
                c = np.minimum(np.searchsorted(f, (xs + 0.5) * scale, side="right"), last)
                below = np.where(c > 0, f[np.maximum(c - 1, 0)], -1.0)
                sure = (xs * scale >= below + tau) | (c == 0)
                sure &= ((xs + 1.0) * scale <= f[c] - tau) | (c == last)
                out[at] = c
                undecided.extend(at[~sure].tolist())
        for i in undecided:
            extra = more(int(i)) if more is not None else _fresh_words()
            out[i] = self._exact(int(codes[i]), int(x[i]), extra)

    def _exact(self, code: int, x: int, extra: Iterator[int]) -> int:
        """The released category of one value in exact arithmetic: bisection over z with ``U < F(z)``
        decided on integer bounds of the weights (:meth:`_bounds`), refined (twice the bits) while they
        are the wider interval, and on as many further words of U as it takes otherwise."""
        d = self.distances.rows([code])[0]
        uniform, level = [x, BITS], [128, None]
        lo, hi = 0, self.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._less(mid, d, uniform, level, extra):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _less(self, k: int, d: np.ndarray, uniform: list[int], level: list, extra: Iterator[int]) -> bool:
        """``U < F(k)`` exactly.  With ``N_z`` integers such that ``w_z 2^B`` lies in
        ``[N_z (1 - rho), (N_z + 1)(1 + rho)]``, ``P_k`` their running sums and ``T`` the total,
        ``F(k) = C / (C + R)`` (C the first k + 1 weights, R the rest) lies between
        ``C_lo / (C_lo + R_hi)`` and ``C_hi / (C_hi + R_lo)``."""
        while True:
            if level[1] is None:
                level[1] = self._bounds(d, level[0])
            prefix, rho = level[1]
            s, total, p = self.size, prefix[-1], prefix[k]
            c_lo, c_hi = p * (1 - rho), (p + k + 1) * (1 + rho)
            r_lo, r_hi = (total - p) * (1 - rho), (total - p + s - 1 - k) * (1 + rho)
            f_lo, f_hi = c_lo / (c_lo + r_hi), c_hi / (c_hi + r_lo)
            v, bits = uniform
            if Fraction(v + 1, 1 << bits) <= f_lo:
                return True
            if Fraction(v, 1 << bits) >= f_hi:
                return False
            if Fraction(1, 1 << bits) > f_hi - f_lo:  # U's interval is the wider: one more word of U
                uniform[0], uniform[1] = (v << 64) | (next(extra) & 0xFFFFFFFFFFFFFFFF), bits + 64
            else:
                level[0], level[1] = 2 * level[0], None

    def _bounds(self, d: np.ndarray, bits: int) -> tuple[list[int], Fraction]:
        """Running sums of ``N_z = floor(exp(-rate d_z / 2) 2^bits)`` computed to ``P`` digits and the
        relative bound ``rho = 3 * 10^(1 - P)``: the exponent ``rate d_z / 2`` is exact (doubles' product
        in 2000 digits), :mod:`decimal`'s ``exp`` is correctly rounded and the product by ``2^bits`` is
        rounded once, so ``w_z 2^bits`` lies in ``[N_z (1 - rho), (N_z + 1)(1 + rho)]``."""
        digits = int(bits * 0.30103) + 8
        exact, ctx = Context(prec=2000), Context(prec=digits)
        half = exact.divide(Decimal(self.rate), 2)
        scale = Decimal(1 << bits)
        prefix, run = [], 0
        for dz in d.tolist():
            w = ctx.multiply(ctx.exp(exact.minus(exact.multiply(half, Decimal(dz)))), scale)
            run += int(w.to_integral_value(rounding=ROUND_FLOOR))
            prefix.append(run)
        return prefix, Fraction(3, 10 ** (digits - 1))


def _fresh_words() -> Iterator[int]:
    """Further random words from the operating system (a draw given only its words)."""
    while True:
        yield secrets.randbits(64)


class BlockSampler:
    """A block-diagonal matrix: every block drawn by its own kernel on local codes.

    ``blocks`` is :attr:`pramkit.PramMatrix.blocks`: each block's category
    positions and matrix.  A value of block b is mapped to its position within
    the block, drawn by the block's kernel with its own word, and mapped
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
    >>> BlockSampler(m.blocks).draw(np.array([0, 1, 2, 2]), words_of([0.9, 0.2, 0.1, 0.7]), out)
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

    def draw(self, codes: np.ndarray, words: np.ndarray, out: np.ndarray, more: More | None = None) -> None:
        """Write released codes for ``codes`` (all in 0..S-1) and 64-bit ``words`` into ``out``.

        Parameters
        ----------
        codes : numpy.ndarray of int
            The original codes (positions in the whole matrix's categories).
        words : numpy.ndarray of uint64
            One word per code.
        out : numpy.ndarray of int
            Receives the released codes, each in its original's block.
        more : callable, optional
            Further words of the i-th value, for a block's sampler that needs them.

        Examples
        --------
        Two strata of two categories each, and a kept code: whatever the words,
        no value leaves its block.

        >>> from pramkit.matrix import PramMatrix
        >>> north = PramMatrix.form8([0.5, 0.5], categories=[("north", "f"), ("north", "m")])
        >>> south = PramMatrix.form8([0.5, 0.5], categories=[("south", "f"), ("south", "m")])
        >>> m = PramMatrix.block_diagonal([north, south, PramMatrix.identity([("any", "n/a")])])
        >>> codes = np.random.default_rng(1).integers(0, 5, 10_000)
        >>> out = np.empty(codes.size, dtype=np.intp)
        >>> BlockSampler(m.blocks).draw(codes, np.random.default_rng(2).bit_generator.random_raw(codes.size), out)
        >>> block = np.array([0, 0, 1, 1, 2])
        >>> bool((block[out] == block[codes]).all()), bool((out != codes).any())
        (True, True)
        """
        block = self.block_of[codes]
        local = self.local[codes]
        if len(self.kernels) == 1:
            self.kernels[0].draw(local, words, out, more)
            np.take(self.members[0], out, out=out)
            return
        order = np.argsort(block, kind="stable")
        bounds = np.searchsorted(block[order], np.arange(len(self.kernels) + 1))
        for b in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[b]:bounds[b + 1]]
            drawn = np.empty(rows.size, dtype=np.intp)
            sub = None if more is None else (lambda i, rows=rows: more(int(rows[i])))
            self.kernels[b].draw(local[rows], words[rows], drawn, sub)
            out[rows] = self.members[b][drawn]


def sampler_for(matrix) -> Sampler:
    """The kernel that realises :func:`pramkit.engine.realised_law` of a :class:`pramkit.PramMatrix`:
    block by block for a block-diagonal matrix, exact for the truncated geometric mechanism,
    diagonal for form (8), alias up to :data:`MAX_ALIAS` categories and cumulative units above.

    Parameters
    ----------
    matrix : PramMatrix
        The matrix to draw from.

    Returns
    -------
    DiagonalSampler, AliasSampler, CumulativeSampler, BlockSampler or GeometricSampler
        A kernel whose ``draw(codes, words, out)`` reads one 64-bit word per value.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> dense = PramMatrix([[0.7, 0.3, 0.0], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]])
    >>> form8 = PramMatrix([[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.05, 0.05, 0.9]])  # stored dense
    >>> type(sampler_for(dense)).__name__, type(sampler_for(form8)).__name__
    ('AliasSampler', 'DiagonalSampler')

    Every kernel releases category j with probability ``M[k, j]`` (to 2^-62):

    >>> words = np.random.default_rng(0).bit_generator.random_raw(100_000)
    >>> out = np.empty(words.size, dtype=np.intp)
    >>> sampler_for(form8).draw(np.full(words.size, 2), words, out)
    >>> (np.bincount(out, minlength=3) / words.size).round(2).tolist()
    [0.05, 0.05, 0.9]
    """
    if matrix.blocks is not None:
        return BlockSampler(matrix.blocks)
    if matrix.geometric_rate is not None:
        return GeometricSampler(matrix.size, matrix.geometric_rate)
    if matrix.exponential_rate is not None:
        return ExponentialSampler(matrix)
    law = realised_law(matrix)
    if law.form == "diagonal":
        return DiagonalSampler.of_law(law)
    return AliasSampler.of_law(law) if matrix.size <= MAX_ALIAS else CumulativeSampler.of_law(law)


#: Any of the kernels above.
Sampler = DiagonalSampler | AliasSampler | CumulativeSampler | GeometricSampler | ExponentialSampler | BlockSampler
