"""The law the engine realises: integer tables, exactly.

A published epsilon is a statement about the probabilities with which the
engine moves values, not about the doubles written in the manifest.  A
sampler of doubles realises each probability only to the granularity of its
uniforms, and an entry below that granularity is realised as zero (Mironov
2012).  So pramkit draws in integers:

* each value's uniform is the integer ``x = w >> 2`` of its 64-bit Philox
  word ``w`` (:mod:`pramkit.kernel.rng`), uniform on ``[0, D)`` with
  ``D = 2^62`` (:data:`BITS`);
* each row k of a matrix is quantised once into integer **units** that add up
  to D: ``K_k`` units keep the value (``x < K_k``), and the others move it,
  each positive entry of M getting at least one unit and each zero entry none;
* the compiled draws (:mod:`pramkit.kernel._kernels`) decide by integer comparisons
  on those units alone.

So ``P(released j | original k) = units[k, j] / D`` exactly, a known
rational: :func:`realised_law` returns these units, and
:attr:`RealisedLaw.epsilon` is the exact epsilon of that law, computed from
the integers and rounded outward.  The truncated geometric mechanism is not
quantised: it is sampled exactly (:class:`pramkit.engine.sampling.GeometricSampler`),
so its law is the closed form itself (``exact=True``); so is the exponential
mechanism stored by its parameters (:meth:`pramkit.PramMatrix.exponential`,
:class:`pramkit.engine.sampling.ExponentialSampler`), whose far tails a quantisation
would round to a unit or two (docs/perturbation.md).

How each form is quantised (``q`` the diagonal, ``v`` an off-diagonal entry):

* **form (8)** (``M[k, j] = w_k`` off the diagonal): where ``q_k >= w_k``,
  ``W_k = ceil(w_k D)`` units for every other category and ``K_k = floor(q_k D)``
  to keep (at least one unit when ``q_k > 0``), the ``E_k`` units left (fewer than
  S) going to the row's last other category; where ``q_k < w_k``,
  ``W_k = floor(w_k D)`` (at least one; fewer if the diagonal would get fewer than
  ``ceil(q_k D)`` units) and the diagonal takes the rest (none when ``q_k = 0``:
  then the rest goes to the last other category).  Uniform rows (``q_k = w_k`` in every row)
  get ``floor(D / S)`` units for every category and the ``E`` left over for the last
  category in every row, so that the rows are identical and the law's epsilon is exactly
  0 (the classes of a k-anonymity design).  The larger entry
  of a row is rounded down and the smaller up, which never raises a ratio of a
  row's entry to another row's of the other kind, the ratios that set epsilon in
  the DP designs.
* **dense** (any matrix): ``K_k = floor(q_k D)`` to keep, then the row's move
  units (rounded up to a multiple of the draw's grain: the alias table's
  ``2^b`` cells, or 1) are shared in proportion to the off-diagonal entries,
  each positive entry at least one unit, the rounding remainder on the row's
  largest entry.
* **blocks**: each block's own law on its categories.

References
----------
Mironov, I. (2012), On significance of the least significant bits for
differential privacy, ACM CCS 2012.
Walker, A. J. (1977), An efficient method for generating discrete random
variables with general distributions, ACM TOMS 3(3); Vose, M. D. (1991), A
linear algorithm for generating random numbers with a given distribution,
IEEE TSE 17(9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from pramkit.errors import MatrixError, ParameterError
from pramkit.privacy.epsilon import REALISED_SLACK
from pramkit.privacy.exact import UNIT, _others, exp_lower, float_up, log_ratio_upper, within_budget

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from pramkit.matrix import PramMatrix

#: Bits of a draw's integer uniform: ``x = word >> (64 - BITS)`` is uniform on ``[0, 2^BITS)``.
BITS = 62
#: The common denominator of every realised probability, ``2^BITS``.
DENOMINATOR = 1 << BITS
#: Largest dense matrix drawn through an alias table (:func:`pramkit.kernel._kernels.draw_alias`), whose
#: ``S 2^b`` cells (``2^b >= S``) stay within 128 MiB; above it the draw bisects cumulative units
#: (:func:`pramkit.kernel._kernels.draw_cumulative`: at S = 3000 the bisection, its rows out of the cache,
#: took 11x the uniforms' floor against 2x for the alias table).  The two quantise differently, so the
#: threshold is fixed.
MAX_ALIAS = 4096
#: Rows quantised at a time (the float temporaries of a dense matrix stay small).
ROWS_PER_CHUNK = 512
#: Rounds of :func:`within_realised_budget` (one suffices but for a raised entry that takes the row's remainder).
REALISE_ROUNDS = 4


def alias_bits(size: int) -> int:
    """The ``b`` of an alias table of ``size`` categories: the smallest with ``2^b >= size``.

    Examples
    --------
    >>> alias_bits(1), alias_bits(2), alias_bits(3), alias_bits(1024), alias_bits(1025)
    (0, 1, 2, 10, 11)
    """
    return max(0, (int(size) - 1).bit_length())


def dense_grain(size: int) -> int:
    """The multiple that a dense row's move units must be: ``2^b`` for an alias table, else 1.

    Examples
    --------
    >>> dense_grain(3), dense_grain(MAX_ALIAS), dense_grain(MAX_ALIAS + 1)
    (4, 4096, 1)
    """
    return 1 << alias_bits(size) if size <= MAX_ALIAS else 1


def form8_units(q: np.ndarray, w: np.ndarray, bits: int = BITS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer units of a form (8) matrix: keep ``K``, each other category ``W``, and the extra
    units ``E`` of the row's last other category; ``K + (S - 1) W + E = 2^bits`` in every row
    (module docstring: the larger of ``q_k`` and ``w_k`` rounded down, the smaller up).

    Parameters
    ----------
    q, w : numpy.ndarray, shape (S,)
        The diagonal and the off-diagonal entry of each row.
    bits : int
        The resolution (:data:`BITS`).

    Returns
    -------
    tuple of numpy.ndarray of int64
        ``K``, ``W`` and ``E``.

    Examples
    --------
    >>> k, w, e = form8_units(np.array([0.5, 0.0, 1.0]), np.array([0.25, 0.5, 0.0]), bits=4)
    >>> k.tolist(), w.tolist(), e.tolist()  # row 1 keeps nothing; row 2 never moves
    ([8, 0, 16], [4, 8, 0], [0, 0, 0])
    >>> k, w, e = form8_units(np.array([1 - 2e-300]), np.array([1e-300]), bits=4)  # one category
    >>> k.tolist()
    [16]
    >>> k, w, e = form8_units(np.array([1 - 2e-300, 0.5]), np.array([2e-300, 0.5]), bits=4)
    >>> k.tolist(), w.tolist()  # a tiny entry gets one unit, taken from the diagonal
    ([15, 8], [1, 8])
    >>> k, w, e = form8_units(np.full(3, 1 / 3), np.full(3, 1 / 3), bits=4)
    >>> k.tolist(), w.tolist(), e.tolist()  # uniform: every row is [5, 5, 6], so the law is uniform exactly
    ([5, 5, 6], [5, 5, 5], [1, 1, 0])
    """
    d = 1 << bits
    s = q.size
    if s == 1:
        return np.array([d], dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    if np.all(q == w) and q[0] > 0:
        # uniform rows: every row gets the same units (the E left over on the last category, which is the
        # last row's own), so that the law is uniform exactly and its epsilon is exactly 0
        units = np.full(s, d // s, dtype=np.int64)
        extra = np.full(s, d - s * (d // s), dtype=np.int64)
        keep = units.copy()
        keep[-1] += extra[-1]
        extra[-1] = 0
        return keep, units, extra
    moving = w > 0
    need = (q > 0).astype(np.int64)
    anti = q < w  # the diagonal is the smaller entry: round it up and the others down
    ceil_q = np.minimum(np.ceil(q * d), float(d)).astype(np.int64)
    down = np.minimum(np.maximum(np.floor(w * d), 1.0).astype(np.int64), np.maximum((d - ceil_q) // (s - 1), 1))
    units = np.where(anti, down, np.minimum(np.ceil(w * d), float(d)).astype(np.int64))
    weight = np.where(moving, np.minimum(units, (d - need) // (s - 1)), 0)
    room = d - (s - 1) * weight
    floor_q = np.minimum(np.floor(q * d), float(d)).astype(np.int64)
    keep = np.where(~moving, d, np.where(q > 0, np.where(anti, room, np.clip(floor_q, 1, room)), 0))
    return keep, weight, room - keep


def dense_units(matrix: np.ndarray, bits: int = BITS, grain: int = 1) -> np.ndarray:
    """Integer units of any row-stochastic matrix: row k keeps ``floor(M[k, k] 2^bits)`` units (at
    least one when positive), and its move units, a multiple of ``grain``, are shared in proportion
    to the off-diagonal entries, every positive entry at least one unit.

    Parameters
    ----------
    matrix : numpy.ndarray, shape (S, S)
        The matrix.
    bits : int
        The resolution (:data:`BITS`).
    grain : int
        A power of two that every row's move units are a multiple of (:func:`dense_grain`).

    Returns
    -------
    numpy.ndarray of int64, shape (S, S)
        Each row adds up to ``2^bits``; positive exactly where ``matrix`` is.

    Raises
    ------
    MatrixError
        The matrix has too many categories for the resolution.

    Examples
    --------
    >>> m = np.array([[0.5, 0.5, 0.0], [1e-300, 0.75, 0.25], [0.0, 0.0, 1.0]])
    >>> dense_units(m, bits=6, grain=4).tolist()  # 1e-300 gets a unit; move units multiples of 4
    [[32, 32, 0], [1, 48, 15], [0, 0, 64]]
    """
    d = 1 << bits
    s = matrix.shape[0]
    if s * (s + 2) + 2 * grain > d:
        raise MatrixError(f"{s} categories are too many for draws of {bits} bits")
    out = np.empty((s, s), dtype=np.int64)
    for r0 in range(0, s, ROWS_PER_CHUNK):
        rows = np.arange(r0, min(r0 + ROWS_PER_CHUNK, s))
        out[rows] = _dense_rows(matrix[rows], rows, d, grain)
    return out


def _dense_rows(block: np.ndarray, rows: np.ndarray, d: int, grain: int) -> np.ndarray:
    """:func:`dense_units` of some rows (``block`` = the matrix's rows ``rows``)."""
    at = np.arange(rows.size)
    diag = block[at, rows].copy()
    off = block.copy()
    off[at, rows] = 0.0
    positive = off > 0
    count = positive.sum(axis=1)
    keep = np.minimum(np.floor(diag * d), float(d)).astype(np.int64)
    move = -(-(d - keep) // grain) * grain                                  # rounded up to the grain
    room = -(-(count * (count + 2)) // grain) * grain                        # every entry >= 1 after rounding
    move = np.maximum(move, room)
    move = np.where(count == 0, 0, np.where(diag > 0, np.minimum(move, d - grain), d))
    total = off.sum(axis=1)
    total[total == 0] = 1.0
    units = np.floor(off / total[:, None] * move[:, None].astype(float)).astype(np.int64)
    units[positive & (units < 1)] = 1
    units[~positive] = 0
    largest = np.argmax(units, axis=1)
    units[at, largest] += move - units.sum(axis=1)
    units[at, rows] = d - move
    if np.any(units[positive] < 1) or np.any(units.sum(axis=1) != d):
        raise MatrixError("a row cannot be realised at this resolution")
    return units


def within_realised_budget(matrix: ArrayLike, epsilon: float) -> np.ndarray:
    """A dense design's matrix within the budget in its doubles and in the engine's integer units.

    The doubles are brought within the budget by :func:`pramkit.privacy.exact.within_budget`; the
    engine draws from :func:`dense_units`, which rounds each entry to whole units of ``2^-62``.  A column whose smallest
    entries are a few thousand units (an LP's output of mass 1e-15, say) then has a ratio of units
    above ``e**epsilon`` by a relative 1e-4.  Each column whose units' epsilon exceeds
    ``epsilon (1 + REALISED_SLACK / 2)`` has its entries below ``T = ceil(hi e**-epsilon)`` units
    raised to ``T`` units or one more (``hi`` the column's largest units, with a margin of a few
    roundings; ``T`` at least ``1 / (e**epsilon - 1)``, so that one unit more is within the
    budget).  Raising the smallest entries of a column lowers its ratio in the doubles as well, and
    a raise of a few units moves no row sum by more than its own rounding.  The units are
    recomputed and the columns still over raised again, :data:`REALISE_ROUNDS` times at most.  A
    column mixing zero and positive entries is left as it is (its epsilon is infinite).

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        A row-stochastic matrix within rounding of the budget (a design's).
    epsilon : float
        The budget, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        A new array; equal to ``matrix`` when its doubles and its units are already within the budget.  Its
        realised epsilon (:func:`realised_law` of a dense matrix) is at most
        ``epsilon (1 + REALISED_SLACK / 2)`` but for a raised entry that takes its row's remainder
        of units, which the caller's check of the realised epsilon catches.

    Examples
    --------
    A column of a few thousand units (``a`` below) whose entries have the ratio e in doubles:

    >>> a = 1000.3 / DENOMINATOR
    >>> m = np.array([[0.5, 0.5 - math.e * a, math.e * a], [0.5 - a, 0.5, a], [0.5, 0.5 - a, a]])
    >>> def units_ratio(a):
    ...     u = dense_units(a, BITS, dense_grain(3))[:, 2]
    ...     return float(u.max() / u.min())
    >>> units_ratio(m) <= math.e  # 2719 units over 1000
    False
    >>> units_ratio(within_realised_budget(m, 1.0)) <= math.e
    True
    """
    m = within_budget(matrix, epsilon)
    s = m.shape[0]
    grain = dense_grain(s)
    e = float(epsilon)
    bound = exp_lower(e) * (1.0 - 8.0 * UNIT)  # hi <= lo * bound in doubles proves hi <= lo e^eps
    allowed = exp_lower(e * (1.0 + REALISED_SLACK / 2.0)) * (1.0 - 8.0 * UNIT)
    if not bound > 1.0:  # epsilon 0 (or within rounding of it): equal entries of rows of other units
        return m
    for _ in range(REALISE_ROUNDS):
        units = dense_units(m, BITS, grain)
        positive = units > 0
        hi = units.max(axis=0).astype(float)
        lo = np.where(positive, units, np.iinfo(np.int64).max).min(axis=0).astype(float)
        over = (hi > 0) & positive.all(axis=0) & (hi > lo * allowed)
        if not over.any():
            return m
        # an entry raised to T lands in [T, T + 1) units: T >= hi / bound keeps the lows within the budget,
        # T >= 1 / (bound - 1) the new highs (at most max(hi, T + 1))
        target = np.maximum(np.ceil(hi / bound), math.ceil(1.0 / (bound - 1.0)))
        diag = np.diagonal(units).astype(float)
        per_unit = (m.sum(axis=1) - np.diagonal(m)) / np.maximum(DENOMINATOR - diag, 1.0)  # off-diagonal
        rows, cols = np.nonzero(over[None, :] & (units < target[None, :]))
        amount = target[cols] - units[rows, cols] + 0.5
        m[rows, cols] += np.where(rows == cols, (amount + grain) / DENOMINATOR, amount * per_unit[rows])
    return m


def integer_epsilon(col_max: np.ndarray, col_min: np.ndarray) -> float:
    """Epsilon of a law from each column's largest and smallest integer units, rounded outward:
    ``max_j log(col_max[j] / col_min[j])`` (infinite where a column mixes zero and positive units).

    The column of the largest ratio is found exactly: each ratio is computed in floating point
    (two conversions and a division, each within a relative :data:`pramkit.privacy.exact.UNIT`),
    so only the columns within ``8 UNIT`` of the largest can hold the exact maximum; their distinct
    pairs ``(col_max, col_min)`` are compared as fractions (a form (8) law has one or two such
    pairs however many columns share them, so this is O(S)), and the logarithm of the largest is
    bounded above by :func:`pramkit.privacy.exact.log_ratio_upper`.

    Parameters
    ----------
    col_max, col_min : numpy.ndarray of int
        Each column's largest and smallest units.

    Returns
    -------
    float
        The smallest double not below the exact epsilon.

    Examples
    --------
    >>> integer_epsilon(np.array([3, 2**61 + 1]), np.array([1, 2**61]))  # log 3, rounded up
    1.0986122886681098
    >>> integer_epsilon(np.array([4, 1]), np.array([0, 1]))
    inf
    """
    hi = np.asarray(col_max, dtype=np.int64)
    lo = np.asarray(col_min, dtype=np.int64)
    used = hi > 0
    if np.any(lo[used] == 0):
        return math.inf
    if not used.any():
        return 0.0
    hi, lo = hi[used], lo[used]
    approx = hi.astype(float) / lo.astype(float)
    near = approx >= approx.max() * (1.0 - 8.0 * UNIT)
    pairs = set(zip(hi[near].tolist(), lo[near].tolist()))
    top, bottom = max(pairs, key=lambda pair: Fraction(*pair))
    return float_up(log_ratio_upper(top, bottom))


@dataclass(frozen=True, eq=False)
class RealisedLaw:
    """The law with which the engine releases each category of one matrix.

    ``P(released j | original k) = units[k, j] / denominator`` exactly, for
    integer units stored in the matrix's own form; or, when ``exact`` is true,
    the matrix's closed form itself (``closed_form`` names it).

    Attributes
    ----------
    form : str
        ``"diagonal"`` (form (8): ``keep``, ``weight``, ``extra``), ``"dense"``
        (``units``), ``"blocks"`` (``blocks``), ``"truncated_geometric"``
        (exact, by ``rate``) or ``"exponential"`` (exact, by ``rate`` and the matrix's distances).
    size : int
        Number of categories S.
    bits : int
        Resolution: the denominator is ``2^bits`` (0 for an exact law).
    exact : bool
        True when the draws realise the matrix's mathematical law exactly.
    closed_form : str or None
        The law of an exact sampler, in words.
    keep, weight, extra : numpy.ndarray or None
        Form (8): row k keeps ``keep[k]`` units, gives ``weight[k]`` to every other
        category and ``extra[k]`` more to its last other category (S - 1, or S - 2 for
        the last row).
    units : numpy.ndarray or None
        Dense: the S x S units.
    blocks : tuple or None
        Each block's category positions and its :class:`RealisedLaw`.
    rate : float or None
        The truncated geometric or exponential mechanism's rate.
    closed_form_epsilon : float or None
        An exact law's epsilon: its matrix's, the closed form's (rounded outward).

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> law = realised_law(PramMatrix([[0.9, 0.1, 0.0], [0.2, 0.7, 0.1], [0.0, 1e-300, 1.0]]))
    >>> law.form, law.denominator == 2**62
    ('dense', True)
    >>> law.weights(2).tolist()  # 1e-300 drawn with probability 4 / 2^62 (the alias table's grain), never 0
    [0, 4, 4611686018427387900]
    >>> bool(np.array_equal(law.support(0), [True, True, False]))
    True
    """

    form: str
    size: int
    bits: int
    exact: bool = False
    closed_form: str | None = None
    keep: np.ndarray | None = None
    weight: np.ndarray | None = None
    extra: np.ndarray | None = None
    units: np.ndarray | None = None
    blocks: tuple[tuple[np.ndarray, RealisedLaw], ...] | None = None
    rate: float | None = None
    closed_form_epsilon: float | None = None

    @property
    def denominator(self) -> int:
        """The common denominator ``2^bits`` of the units (1 for an exact law)."""
        return 1 << self.bits

    def weights(self, k: int) -> np.ndarray:
        """Row k's units (int64, adding up to :attr:`denominator`).

        Raises
        ------
        MatrixError
            The law is exact (its probabilities are the closed form, not integers).
        """
        k = int(k)
        if self.exact:
            raise MatrixError(f"the law is exact ({self.closed_form}): it has no integer units")
        if self.form == "diagonal":
            keep, weight, extra = self._diagonal()
            row = np.full(self.size, weight[k], dtype=np.int64)
            row[k] = keep[k]
            if self.size > 1:
                row[self.size - 1 if k < self.size - 1 else self.size - 2] += extra[k]
            return row
        if self.form == "dense":
            return self._units()[k].copy()
        row = np.zeros(self.size, dtype=np.int64)
        idx, part = self._block_of(k)
        row[idx] = part.weights(int(np.flatnonzero(idx == k)[0]))
        return row

    def support(self, k: int) -> np.ndarray:
        """Where row k's realised probability is positive (bool, length S).

        For the exact truncated geometric mechanism every category: its noise has no cut-off.
        """
        if self.exact:
            return np.ones(self.size, dtype=bool)
        if self.form == "blocks":
            out = np.zeros(self.size, dtype=bool)
            idx, part = self._block_of(int(k))
            out[idx] = part.support(int(np.flatnonzero(idx == k)[0]))
            return out
        return self.weights(k) > 0

    def unit_matrix(self) -> np.ndarray:
        """Every row's integer units (S x S): the dense form's own, or each row's :meth:`weights`.

        Raises
        ------
        MatrixError
            The law is exact (it has no integer units).

        Examples
        --------
        >>> from pramkit.matrix import PramMatrix
        >>> law = realised_law(PramMatrix.from_diagonal([0.75, 0.75], ["a", "b"]))
        >>> (law.unit_matrix() == [law.weights(0), law.weights(1)]).all()
        np.True_
        """
        if self.form == "dense":
            return self._units()
        return np.array([self.weights(k) for k in range(self.size)])

    def _diagonal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``keep``, ``weight`` and ``extra`` of a law of form ``"diagonal"`` (form (8))."""
        assert self.keep is not None and self.weight is not None and self.extra is not None, self.form
        return self.keep, self.weight, self.extra

    def _units(self) -> np.ndarray:
        """``units`` of a law of form ``"dense"``."""
        assert self.units is not None, self.form
        return self.units

    def _blocks(self) -> tuple[tuple[np.ndarray, RealisedLaw], ...]:
        """``blocks`` of a law of form ``"blocks"``."""
        assert self.blocks is not None, self.form
        return self.blocks

    def _block_of(self, k: int) -> tuple[np.ndarray, RealisedLaw]:
        for idx, part in self._blocks():
            if np.any(idx == k):
                return idx, part
        raise MatrixError(f"category {k} is in no block")

    @cached_property
    def epsilon(self) -> float:
        """The exact epsilon of the realised law, rounded outward: the largest log ratio of two
        rows' units in one column (infinite when a column mixes zero and positive units)."""
        if self.exact:
            assert self.closed_form_epsilon is not None  # an exact law carries its closed form's epsilon
            return self.closed_form_epsilon
        if self.form == "blocks":
            return self.block_epsilon if len(self._blocks()) == 1 else math.inf
        hi, lo = self._column_extremes()
        return integer_epsilon(hi, lo)

    @cached_property
    def block_epsilon(self) -> float:
        """The epsilon given the block (the largest of the blocks'); :attr:`epsilon` without blocks."""
        if self.form != "blocks":
            return self.epsilon
        return max(part.epsilon for _, part in self._blocks())

    def _column_extremes(self) -> tuple[np.ndarray, np.ndarray]:
        """Each column's largest and smallest units (form (8) in O(S))."""
        if self.form == "dense":
            units = self._units()
            return units.max(axis=0), units.min(axis=0)
        s = self.size
        keep, weight, extra = self._diagonal()
        if s == 1:
            return keep.copy(), keep.copy()
        hi = np.maximum(keep, _others(weight, largest=True))
        lo = np.minimum(keep, _others(weight, largest=False))
        for j in {s - 2, s - 1}:  # the columns that receive the extra units
            col = weight.copy()
            col[:s - 1] += extra[:s - 1] * (j == s - 1)
            col[s - 1] += extra[s - 1] * (j == s - 2)
            col[j] = keep[j]
            hi[j], lo[j] = col.max(), col.min()
        return hi, lo


def _form8_off(matrix: PramMatrix) -> np.ndarray:
    """The off-diagonal entry of each row of a form (8) matrix: stored, or (stored densely, equal to
    1e-12) each row's largest, so that its units are not below any of the row's entries."""
    if matrix.is_compact:
        return np.asarray(matrix.form8_w, dtype=float)
    if matrix.size == 1:
        return np.zeros(1)
    off = np.array(matrix.matrix, dtype=float)
    np.fill_diagonal(off, 0.0)
    return off.max(axis=1)


def realised_law(matrix: PramMatrix) -> RealisedLaw:
    """The law the engine realises when it draws from ``matrix`` (kept with the matrix).

    Parameters
    ----------
    matrix : PramMatrix
        Any matrix.

    Returns
    -------
    RealisedLaw
        Integer units with denominator ``2^62`` in the matrix's form; for the truncated
        geometric and the exponential mechanism stored by its parameters, ``exact=True``.

    Examples
    --------
    Form (8) with an entry far below 2^-53 (a sampler of doubles would never draw it):

    >>> from pramkit.matrix import PramMatrix
    >>> m = PramMatrix.form8([1 - 2e-30, 0.5, 0.5], [1e-30, 0.25, 0.25])
    >>> law = realised_law(m)
    >>> law.form, law.weights(0).tolist()
    ('diagonal', [4611686018427387902, 1, 1])
    >>> bool(law.epsilon >= m.epsilon)  # 1e-30 realised as 2^-62: a smaller ratio here
    False
    >>> realised_law(PramMatrix.truncated_geometric(0.5, list("abcd"))).exact
    True
    """
    cached = matrix.__dict__.get("_realised")
    if cached is None:
        cached = _law_of(matrix)
        matrix.__dict__["_realised"] = cached
    return cached


def _law_of(matrix: PramMatrix) -> RealisedLaw:
    s = matrix.size
    if matrix.blocks is not None:
        parts = tuple((np.asarray(idx, dtype=np.intp), realised_law(part)) for idx, part in matrix.blocks)
        return RealisedLaw("blocks", s, BITS, blocks=parts)
    if matrix.exponential_rate is not None:
        rate = matrix.exponential_rate
        return RealisedLaw("exponential", s, 0, exact=True, rate=rate, closed_form_epsilon=matrix.epsilon,
                           closed_form=f"exponential mechanism exp(-{rate!r} d / 2) over the public distances, "
                                       "sampled exactly")
    if matrix.geometric_rate is not None:
        rate = matrix.geometric_rate
        return RealisedLaw("truncated_geometric", s, 0, exact=True, rate=rate, closed_form_epsilon=matrix.epsilon,
                           closed_form=f"truncated geometric mechanism, a = exp(-{rate!r}), sampled exactly")
    q = matrix.form8_q
    if q is not None:
        keep, weight, extra = form8_units(np.asarray(q, dtype=float), _form8_off(matrix))
        return RealisedLaw("diagonal", s, BITS, keep=keep, weight=weight, extra=extra)
    return RealisedLaw("dense", s, BITS, units=dense_units(matrix.matrix, BITS, dense_grain(s)))


def law_units(matrix: PramMatrix) -> np.ndarray:
    """The integer units of the law the engine realises for ``matrix`` (S x S, each row adding up
    to ``2^62``).

    Raises
    ------
    ParameterError
        The matrix is drawn exactly from a closed form (truncated geometric, exponential), whose
        probabilities are not rational: a composed epsilon cannot be computed exactly.

    Examples
    --------
    >>> from pramkit.matrix import PramMatrix
    >>> units = law_units(PramMatrix.form8([0.75, 0.75]))
    >>> units.tolist() == [[3 * 2**60, 2**60], [2**60, 3 * 2**60]]
    True
    """
    law = realised_law(matrix)
    if law.exact:
        raise ParameterError(f"the matrix is drawn exactly from a closed form ({law.closed_form}), so the law of "
                             "a second step on it has no exact epsilon: derive from a release whose matrices are "
                             "drawn in integer units (every family but the truncated geometric and the exponential)")
    return np.array([law.weights(k) for k in range(matrix.size)], dtype=np.int64)


def composed_epsilon(first: PramMatrix, second: PramMatrix) -> float:
    """The exact epsilon of the law that releasing through ``first`` and then ``second`` realises,
    rounded outward.

    Both laws are integers over ``2^62`` (:func:`law_units`); their product is computed in exact
    integers (denominator ``2^124``), each column's largest and smallest entries compared as
    fractions, and the logarithm bounded above (:func:`pramkit.privacy.exact.log_ratio_upper`).

    Parameters
    ----------
    first, second : PramMatrix
        The two steps, with the same categories in the same order (the first's released
        categories are the second's originals).

    Returns
    -------
    float
        The smallest double not below the composed law's epsilon (``inf`` when a column
        mixes zero and positive entries, 0 for constant columns).

    Raises
    ------
    ParameterError
        The categories differ, or a matrix is drawn from a closed form (:func:`law_units`).

    Examples
    --------
    Randomized response twice: keep 3/4 then keep 3/4 keeps 5/8, epsilon log(5/3).

    >>> from pramkit.matrix import PramMatrix
    >>> rr = PramMatrix.form8([0.75, 0.75], categories=["f", "m"])
    >>> composed_epsilon(rr, rr) == float_up(log_ratio_upper(5, 3))
    True
    """
    if tuple(first.categories) != tuple(second.categories):
        raise ParameterError("the second step's categories must be the first's released categories, in order")
    product = law_units(first).astype(object) @ law_units(second).astype(object)
    eps = 0.0
    for col in product.T:
        hi, lo = max(col), min(col)
        if hi == 0 or hi == lo:
            continue
        if lo == 0:
            return math.inf
        eps = max(eps, float_up(log_ratio_upper(hi, lo)))
    return eps
