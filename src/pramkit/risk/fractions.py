"""Sampling fractions of the cells of a key table: one for the file, or one per cell from the weights.

Model (Skinner and Shlomo 2008, "Assessing identification risk in survey
microdata using log-linear models", JASA 103, 989-1001; Shlomo and Skinner
2012, sec. 2.1): the population count of cell ``k`` is ``F_k ~ Poisson(lambda_k)``
and each of its units is sampled independently with probability ``pi_k``, so

    f_k ~ Poisson(pi_k lambda_k),   F_k - f_k ~ Poisson((1 - pi_k) lambda_k),      (1)

independent.  The fractions enter the log-linear fit as the offset
``log pi_k`` and the risk through ``lambda_k = mu_k / pi_k``.

With survey weights ``w_i`` (inverse inclusion probabilities) the
Horvitz-Thompson estimate of ``F_k`` is the sum of the weights in the cell,
``W_k``, and the fraction of an occupied cell is estimated by

    pi_k = f_k / W_k                                                              (2)

(the ``p`` of the Benedetti-Franconi per-record risk too).  When the weights
are constant in a cell, (2) is its units' inclusion probability exactly.  An
empty cell's fraction matters for the fit (its expected count
``pi_k lambda_k`` enters the fitted margins), and the weights determine it
when the fractions of the occupied cells depend on the keys only through a
subset ``S`` of them (design strata such as region): then every cell ``k``
whose ``S``-class ``s(k)`` holds records gets

    pi_k = sum_{k' in s(k)} f_k' / sum_{k' in s(k)} W_k',                           (3)

the common value of (2) in the class.  ``S`` is found by dropping keys one at
a time while the fractions (2) stay constant (relative tolerance
:data:`SAME`) within the classes of the keys left; the cells of a class
without records get the file's fraction ``n / sum of weights`` (an
assumption; the result counts them).  When (2) is the same in every occupied
cell, ``S`` is empty and (3) is the single fraction ``n / sum of weights`` of
equal-probability sampling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pramkit.errors import DataError, ParameterError
from pramkit.validate import check_fraction

#: Relative tolerance within which two cells' fractions (2) count as equal.
SAME = 1e-9

FractionsBy = Literal["cell", "file"]


@dataclass(frozen=True, eq=False)
class SamplingFractions:
    """The sampling fraction of every cell of a key table.

    Parameters
    ----------
    names : tuple of str
        The key variables (table axes).
    overall : float
        The file's fraction: the given one, or ``n / sum of weights``.
    values : float or numpy.ndarray
        ``pi_k``, a float (one fraction) or an array broadcastable to the table,
        of size 1 on the axes the fractions do not vary with.
    source : str
        ``"given"`` (sampling_fraction), ``"weights"`` (one fraction from the weights)
        or ``"cells"`` (eqs. (2)-(3)).
    strata : tuple of str
        The keys ``S`` the fractions vary with (empty for one fraction).
    known : numpy.ndarray or None
        Where ``values`` is eq. (3) (broadcastable like ``values``; ``None`` for one fraction):
        elsewhere the class holds no record and ``overall`` is assumed.
    lowest, highest : float
        The smallest and largest fraction (2) of the occupied cells.
    reason : str
        Why one fraction is used although the cells' fractions differ (empty otherwise).

    Examples
    --------
    Regions 0 and 1 sampled at 1/100 and 1/400; region 2 has no record, so
    its fraction is assumed to be the file's:

    >>> f = np.array([[2.0, 1.0], [3.0, 0.0], [0.0, 0.0]])
    >>> fr = sampling_fractions(f, ["region", "sex"], weight_sums=f * np.array([[100.0], [400.0], [1.0]]))
    >>> fr.source, fr.strata, fr.values.shape, np.ravel(fr.values).tolist()
    ('cells', ('region',), (3, 1), [0.01, 0.0025, 0.004])
    >>> fr.by, np.ravel(fr.known).tolist(), fr.offset.shape
    ('cell', [True, True, False], (3, 1))
    """

    names: tuple[str, ...]
    overall: float
    values: float | np.ndarray
    source: str
    strata: tuple[str, ...]
    known: np.ndarray | None
    lowest: float
    highest: float
    reason: str = ""

    @property
    def offset(self) -> np.ndarray | None:
        """The offset of the log-linear fit: the per-cell fractions (``None`` for one
        fraction, which the model's intercept absorbs)."""
        return None if np.ndim(self.values) == 0 else np.asarray(self.values)

    @property
    def by(self) -> FractionsBy:
        """``"cell"`` when the fractions vary over the cells, else ``"file"``."""
        return "cell" if self.source == "cells" else "file"

    def at(self, cells: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        """``pi_k`` at the flat (C-order) cell indices ``cells`` of a table of ``shape``.

        Parameters
        ----------
        cells : numpy.ndarray
            Flat cell indices.
        shape : sequence of int
            The shape of the key table.

        Returns
        -------
        numpy.ndarray
            One fraction per cell, in (0, 1].

        Examples
        --------
        >>> f = np.array([[2.0, 1.0], [3.0, 0.0]])
        >>> fr = sampling_fractions(f, ["region", "sex"], weight_sums=f * np.array([[100.0], [400.0]]))
        >>> fr.at([0, 1, 2, 3], f.shape).tolist()  # cells (0, 0), (0, 1), (1, 0), (1, 1)
        [0.01, 0.01, 0.0025, 0.0025]
        >>> sampling_fractions(f, ["region", "sex"], sampling_fraction=0.05).at([3], f.shape).tolist()
        [0.05]
        """
        cells = np.asarray(cells, dtype=np.intp)
        if np.ndim(self.values) == 0:
            return np.full(cells.shape, float(self.values))
        values = np.asarray(self.values)
        coords = np.unravel_index(cells, tuple(shape))
        return values[tuple(c if values.shape[a] > 1 else 0 for a, c in enumerate(coords))]

    def assumed_cells(self, fitted: np.ndarray) -> int:
        """Cells with a positive fitted mean whose fraction was assumed (their class has no record).

        Parameters
        ----------
        fitted : numpy.ndarray
            The fitted means of the full table.

        Returns
        -------
        int
            0 for one fraction.

        Examples
        --------
        >>> f = np.array([[2.0, 1.0], [3.0, 0.0], [0.0, 0.0]])
        >>> fr = sampling_fractions(f, ["region", "sex"], weight_sums=f * np.array([[100.0], [400.0], [1.0]]))
        >>> fr.assumed_cells(np.array([[2.0, 1.0], [2.5, 0.5], [0.2, 0.0]]))  # region 2, sex 0
        1
        """
        if self.known is None:
            return 0
        return int(((fitted > 0) & ~np.broadcast_to(self.known, fitted.shape)).sum())

    def describe(self, assumed_cells: int = 0) -> str:
        """The sampling assumption in one line.

        Parameters
        ----------
        assumed_cells : int
            Cells whose fraction was assumed (:meth:`assumed_cells`), to be named.

        Returns
        -------
        str
            What the results assume, for reports.

        Examples
        --------
        >>> f = np.array([[2.0, 1.0], [3.0, 0.0]])
        >>> sampling_fractions(f, ["region", "sex"], sampling_fraction=0.05).describe()
        'one sampling fraction for every cell: pi = 0.05 (given)'
        >>> sampling_fractions(f, ["region", "sex"], weight_sums=f * np.array([[100.0], [400.0]])).describe()
        'per-cell sampling fractions pi_k = f_k / sum of weights in cell k, 0.0025 to 0.01, varying with region'
        """
        if self.source == "given":
            return f"one sampling fraction for every cell: pi = {self.overall:.6g} (given)"
        spread = f"{self.lowest:.4g} to {self.highest:.4g}"
        if self.source == "weights" and not self.reason:
            return (f"one sampling fraction for every cell: pi = n / sum of weights = {self.overall:.6g} "
                    "(f / sum of weights is the same in every cell)")
        if self.source == "weights":
            return (f"one sampling fraction for every cell: pi = n / sum of weights = {self.overall:.6g}, "
                    f"although the cells' f / sum of weights range from {spread}: {self.reason}")
        text = (f"per-cell sampling fractions pi_k = f_k / sum of weights in cell k, {spread}, "
                f"varying with {', '.join(self.strata)}")
        if assumed_cells:
            text += (f"; {assumed_cells} cell(s) with a positive fitted mean and no record of their "
                     f"{', '.join(self.strata)} class assume pi = n / sum of weights = {self.overall:.6g}")
        return text


def sampling_fraction_of(
    n: int, *, sampling_fraction: float | None, weights: np.ndarray | None
) -> float:
    """The file's fraction: given, or ``n / sum of weights``.

    Parameters
    ----------
    n : int
        Records in the file.
    sampling_fraction : float or None
        The known fraction; or
    weights : numpy.ndarray or None
        the records' survey weights (inverse inclusion probabilities), whose
        sum estimates the population size.

    Returns
    -------
    float
        In (0, 1].

    Raises
    ------
    ParameterError
        Both or neither of ``sampling_fraction`` and ``weights`` are given, or the
        fraction is outside (0, 1].
    DataError
        The weights sum to less than ``n``.

    Examples
    --------
    >>> sampling_fraction_of(3, sampling_fraction=None, weights=np.array([100.0, 100.0, 100.0]))
    0.01
    >>> sampling_fraction_of(3, sampling_fraction=None, weights=np.array([1.0, 1.0, 0.5]))
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: the weights sum to 2.5, less than the 3 records; sampling weights must be inverse inclusion probabilities (sum at least n)
    """
    if (sampling_fraction is None) == (weights is None):
        raise ParameterError("give exactly one of sampling_fraction (--sampling-fraction) and weights (--weights)")
    if sampling_fraction is not None:
        return check_fraction(sampling_fraction)
    total = float(np.sum(np.asarray(weights)))
    pi = n / total
    if pi > 1:
        raise DataError(
            f"the weights sum to {total:g}, less than the {n} records; "
            "sampling weights must be inverse inclusion probabilities (sum at least n)"
        )
    return pi


def _constant_within(ratio: np.ndarray, coords: Sequence[np.ndarray], shape: Sequence[int],
                     axes: Sequence[int]) -> bool:
    """Whether ``ratio`` (one value per occupied cell) is constant within the classes of ``axes``."""
    if not axes:
        ids = np.zeros(ratio.size, dtype=np.intp)
        size = 1
    else:
        ids = np.ravel_multi_index(tuple(coords[a] for a in axes), tuple(shape[a] for a in axes))
        size = math.prod(shape[a] for a in axes)
    mean = (np.bincount(ids, weights=ratio, minlength=size) / np.maximum(np.bincount(ids, minlength=size), 1))[ids]
    return bool(np.all(np.abs(ratio - mean) <= SAME * mean))


def sampling_fractions(
    counts: np.ndarray,
    names: Sequence[str],
    *,
    sampling_fraction: float | None = None,
    weight_sums: np.ndarray | None = None,
    within: Sequence[str] | None = None,
    by: FractionsBy = "cell",
) -> SamplingFractions:
    """The sampling fraction of every cell of a key table, eqs. (2)-(3) of the module docstring.

    Parameters
    ----------
    counts : the sample counts ``f_k`` of the full table, one axis per key of ``names``
    names : the key variables
    sampling_fraction : one known fraction for every cell; or
    weight_sums : the sum of the weights in each cell (same shape as ``counts``)
    within : the keys the fractions may vary with (default: all); when the
        fractions (2) vary with another key, one fraction is used and ``reason`` says why
    by : ``"cell"`` (eqs. (2)-(3)) or ``"file"`` (one fraction ``n / sum of weights``)

    Returns
    -------
    SamplingFractions

    Raises
    ------
    ParameterError
        Both or neither of ``sampling_fraction`` and ``weight_sums`` are given,
        an unknown ``by``, or weight sums of another shape.
    DataError
        The table is empty, or the weights (of the file or of a cell) sum to
        less than its records.

    Examples
    --------
    Region 0 is sampled at 1/100, region 1 at 1/400; cell (1, 1) is empty:

    >>> f = np.array([[2.0, 1.0], [3.0, 0.0]])
    >>> fr = sampling_fractions(f, ["region", "sex"], weight_sums=f * np.array([[100.0], [400.0]]))
    >>> fr.strata, np.ravel(fr.values).tolist()
    (('region',), [0.01, 0.0025])
    >>> fr.overall  # n / sum of weights = 6 / 1500
    0.004
    """
    f = np.asarray(counts, dtype=float)
    names = tuple(names)
    if by not in ("cell", "file"):
        raise ParameterError(f"fractions must be 'cell' or 'file', not {by!r}")
    n = float(f.sum())
    if not n > 0:
        raise DataError("the key table is empty: no record was counted")
    if weight_sums is None:
        pi = sampling_fraction_of(int(n), sampling_fraction=sampling_fraction, weights=None)
        return SamplingFractions(names, pi, pi, "given", (), None, pi, pi)
    w = np.asarray(weight_sums, dtype=float)
    if w.shape != f.shape:
        raise ParameterError(f"the weight sums have shape {w.shape}, the table {f.shape}")
    overall = sampling_fraction_of(int(n), sampling_fraction=sampling_fraction, weights=w.ravel())
    occupied = np.flatnonzero(f.ravel() > 0)
    fo, wo = f.ravel()[occupied], w.ravel()[occupied]
    short = wo < fo * (1 - 1e-12)
    if np.any(short):
        i = int(np.flatnonzero(short)[0])
        raise DataError(
            f"a cell has {fo[i]:g} records but weights summing to {wo[i]:g}; sampling weights "
            "(inverse inclusion probabilities) must sum to at least the records of every cell"
        )
    ratio = np.minimum(fo / wo, 1.0)
    lowest, highest = float(ratio.min()), float(ratio.max())
    coords = np.unravel_index(occupied, f.shape)
    if _constant_within(ratio, coords, f.shape, ()):
        return SamplingFractions(names, overall, overall, "weights", (), None, lowest, highest)
    if by == "file":
        return SamplingFractions(names, overall, overall, "weights", (), None, lowest, highest,
                                 reason="fractions='file' was asked for")
    allowed = list(range(f.ndim)) if within is None else sorted(names.index(k) for k in within)
    if not _constant_within(ratio, coords, f.shape, allowed):
        others = [names[a] for a in range(f.ndim) if a not in allowed]
        return SamplingFractions(
            names, overall, overall, "weights", (), None, lowest, highest,
            reason=f"they vary with {', '.join(others)}, whose true values the counts do not show")
    strata = list(allowed)
    for a in list(strata):
        trial = [b for b in strata if b != a]
        if _constant_within(ratio, coords, f.shape, trial):
            strata = trial
    shape_s = tuple(f.shape[a] for a in strata)
    ids = np.ravel_multi_index(tuple(coords[a] for a in strata), shape_s)
    size = math.prod(shape_s)
    records = np.bincount(ids, weights=fo, minlength=size)
    weights = np.bincount(ids, weights=wo, minlength=size)
    known = records > 0
    values = np.where(known, np.minimum(records / np.where(known, weights, 1.0), 1.0), overall)
    view = tuple(f.shape[a] if a in strata else 1 for a in range(f.ndim))
    return SamplingFractions(names, overall, values.reshape(view), "cells", tuple(names[a] for a in strata),
                             known.reshape(view), lowest, highest)
