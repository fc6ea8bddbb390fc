"""Individual (per-record) re-identification risk from sample counts and weights.

Benedetti and Franconi (1998), the measure computed by mu-ARGUS (BIR) and by
sdcMicro's ``indivRisk``: a record in a cell with sample count ``f`` and
estimated population count ``F^ = sum of weights`` (so ``p = f / F^`` is the
cell's sampling fraction) has risk ``r = E(1/F | f)`` under the negative
binomial posterior ``P(F = h | f) = C(h-1, f-1) p^f (1-p)^(h-f)``, ``h >= f``:

    r = sum_{h >= f} (1/h) C(h-1, f-1) p^f (1-p)^(h-f)
      = p^f integral_0^1 t^(f-1) (1 - (1-p) t)^(-f) dt       (1/h = int t^(h-1))
      = (p / f) 2F1(1, 1; f+1; 1-p)                           (Euler's transformation)
      = p J_f,   J_f = integral_0^1 t^(f-1) / (p + (1-p) t) dt     (Pfaff's transformation)

Two exact evaluations, each where it converges fast and without cancellation:

* ``f <= 30`` and ``p < 1/2``: ``J_1 = -log(p) / (1-p)`` and the forward
  recurrence ``J_{f+1} = (1/f - p J_f) / (1-p)`` (from ``p J_f + (1-p) J_{f+1} = 1/f``),
  which damps errors by ``p / (1-p) < 1`` per step; for ``f = 1`` this is
  the familiar ``-p log(p) / (1-p)``;
* otherwise the hypergeometric series ``sum_m t_m``, ``t_m = t_{m-1} (1-p) m / (f+m)``,
  whose ratio is below 1/2 (``p >= 1/2``) or whose terms fall below
  ``4^-f`` within ``f`` terms (``f > 30``).

The expected number of re-identifications is the sum of the per-record risks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from pramkit.errors import DataError


@dataclass(frozen=True, eq=False)
class IndividualRisk:
    """Per-record risk and its file-level summaries.

    Parameters
    ----------
    risk : numpy.ndarray
        E(1/F | f) of every record (NaN for a record left out of the counts).
    expected_reidentifications : float
        Sum of the per-record risks (records).
    max_risk : float
        The largest per-record risk.

    Examples
    --------
    >>> res = individual_risk([1, 2, 2], [1, 2, 2])  # a census: F = f
    >>> res.risk.tolist(), res.expected_reidentifications, res.max_risk
    ([1.0, 0.5, 0.5], 2.0, 1.0)
    """

    risk: np.ndarray
    expected_reidentifications: float
    max_risk: float


def benedetti_franconi(f: ArrayLike, F: ArrayLike) -> np.ndarray:
    """E(1/F | f) for sample counts ``f >= 1`` and estimated population counts ``F >= f``.

    ``r = p J_f`` with ``p = f / F`` (module docstring): by the forward
    recurrence from ``J_1 = -log(p) / (1 - p)`` when ``f <= 30`` and
    ``p < 1/2``, else by the hypergeometric series.

    Parameters
    ----------
    f : array-like
        Sample counts of the records' cells, at least 1.
    F : array-like
        Estimated population counts (sums of weights), finite and at least ``f``
        (broadcast against ``f``).

    Returns
    -------
    numpy.ndarray
        The risks, in (0, 1].

    Raises
    ------
    DataError
        A sample count below 1, a population count that is not finite, or
        one below its sample count.

    Examples
    --------
    A sample unique with p = 1/2 has risk ``-p log(p) / (1 - p) = log 2``;
    in a census (p = 1) a cell of f records has risk 1/f:

    >>> np.round(benedetti_franconi([1, 1, 5], [2, 1, 5]), 6).tolist()
    [0.693147, 1.0, 0.2]

    The same as summing the negative binomial posterior ``sum_h (1/h) P(F = h | f)``:

    >>> from scipy.special import comb
    >>> f, p, h = 2, 0.1, np.arange(2, 5000)
    >>> direct = float(np.sum(comb(h - 1, f - 1) * p**f * (1 - p) ** (h - f) / h))
    >>> bool(np.isclose(benedetti_franconi(f, f / p)[()], direct))
    True
    """
    fv = np.asarray(f, dtype=float)
    Fv = np.asarray(F, dtype=float)
    if np.any(fv < 1) or not np.all(np.isfinite(Fv)):
        raise DataError("sample counts must be at least 1 and population counts finite")
    short = Fv < fv * (1 - 1e-12)
    if np.any(short):
        i = int(np.flatnonzero(short.ravel())[0])
        raise DataError(
            f"a cell has sample count {fv.ravel()[i]:g} but weights summing to {Fv.ravel()[i]:g}; "
            "sampling weights (inverse inclusion probabilities) must sum to at least the sample count"
        )
    p = np.minimum(fv / Fv, 1.0)
    out = np.empty(np.broadcast(fv, p).shape)
    fb = np.broadcast_to(fv, out.shape)
    pb = np.broadcast_to(p, out.shape)
    low = (fb <= _RECURRENCE_MAX_F) & (pb < 0.5)
    out[low] = _by_recurrence(fb[low], pb[low])
    out[~low] = _by_series(fb[~low], pb[~low])
    return out


#: Largest f evaluated by the recurrence (beyond it the series needs few terms).
_RECURRENCE_MAX_F = 30


def _by_recurrence(f: np.ndarray, p: np.ndarray) -> np.ndarray:
    """p J_f by forward recurrence from J_1 = -log(p) / (1 - p); needs p < 1/2."""
    q = 1.0 - p
    j = -np.log(p) / q
    out = p * j
    for step in range(1, int(f.max(initial=1))):
        j = (1.0 / step - p * j) / q
        out = np.where(f == step + 1, p * j, out)
    return out


def _by_series(f: np.ndarray, p: np.ndarray) -> np.ndarray:
    """(p / f) sum_m t_m with t_0 = 1, t_m = t_{m-1} (1-p) m / (f+m)."""
    q = 1.0 - p
    term = np.ones_like(p)
    total = np.ones_like(p)
    m = 0
    while term.size and term.max() > 1e-17 * total.min():
        m += 1
        term = term * q * m / (f + m)
        total += term
    return p / f * total


def individual_risk(f: ArrayLike, F: ArrayLike) -> IndividualRisk:
    """Per-record risk from per-record ``f`` and ``F`` (records with ``f = 0`` are left out, NaN).

    Each distinct ``(f, F)`` pair is evaluated once (:func:`benedetti_franconi`).

    Parameters
    ----------
    f : array-like
        Sample count of each record's cell (0 for a record left out).
    F : array-like
        Estimated population count of each record's cell.

    Returns
    -------
    IndividualRisk

    Raises
    ------
    DataError
        As :func:`benedetti_franconi`, for the records counted.

    Examples
    --------
    >>> res = individual_risk([1, 2, 2, 0], [10, 8, 8, 0])
    >>> np.round(res.risk, 4).tolist(), round(res.expected_reidentifications, 4)
    ([0.2558, 0.1793, 0.1793, nan], 0.6144)
    """
    fv = np.asarray(f, dtype=float)
    Fv = np.asarray(F, dtype=float)
    risk = np.full(fv.shape, np.nan)
    counted = fv > 0
    if np.isfinite(Fv[counted]).all():  # each (f, F) pair as one complex number, found by hashing: 24 bytes
        # per record at the peak, where sorting the rows of pairs took about 90
        pair = fv[counted] + 1j * Fv[counted]
        inverse, pairs = pd.factorize(pair, sort=False)
        del pair
        risk[counted] = benedetti_franconi(pairs.real, pairs.imag)[inverse]
    else:  # benedetti_franconi says what is wrong with a pair
        pairs, inverse = np.unique(np.column_stack([fv[counted], Fv[counted]]), axis=0, return_inverse=True)
        risk[counted] = benedetti_franconi(pairs[:, 0], pairs[:, 1])[inverse.ravel()]
    values = risk[counted]
    return IndividualRisk(
        risk=risk,
        expected_reidentifications=float(values.sum()),
        max_risk=float(values.max()) if values.size else 0.0,
    )
