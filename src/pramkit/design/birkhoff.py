"""Birkhoff-von Neumann decomposition of a bistochastic matrix, and its use as a sampler.

Theorem 1 of Ruiz and Domingo-Ferrer (section 2.1, equation (1)): a
bistochastic P is a convex combination ``P = sum_j lambda_j P_j`` of
permutation matrices, with at most ``r^2 - 2r + 2`` terms (Marshall, Olkin
and Arnold 2011).

Algorithm (greedy).  While mass remains, take a perfect matching on the
support of the remainder (a permutation sigma with ``rest[u, sigma(u)] > 0``
for every u; it exists because the remainder is a multiple of a bistochastic
matrix, by Koenig's theorem); its weight is the smallest matched entry;
subtract it.  At least one entry becomes zero at each step, so the remainder
moves to a proper face of the Birkhoff polytope, whose dimension is
``(r - 1)^2``: hence at most ``(r - 1)^2 + 1 = r^2 - 2r + 2`` steps.  The
matching is a maximum-weight assignment (scipy's ``linear_sum_assignment``,
forbidden cells at +inf), which tends to take large weights first.

Sampling (:func:`perturb_by_permutation`).  Draw ONE permutation j with
probability lambda_j and apply it to every record.  Each record's released
category then has the marginal law ``P[u, :]`` -- the same as PRAM -- but
records are no longer independent: two records with the same original
category always get the same released one, and the released counts are a
permutation of the original counts.  This is the "probabilistic permutation"
reading of equation (1), not independent PRAM; estimators that assume
independent draws (their variances) do not apply to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment

from pramkit.errors import DataError
from pramkit.matrix import Label, PramMatrix
from pramkit.privacy.bistochastic import require_bistochastic
from pramkit.rng import SecretKey, uniforms

#: Entries of the remainder at or below this are treated as zero.
ZERO_TOL = 1e-13


@dataclass(frozen=True)
class BirkhoffDecomposition:
    """``P = sum_j weights[j] * Perm(permutations[j])`` (equation (1)).

    weights: lambda_j > 0, summing to 1 (to rounding)
    permutations: shape (J, r); permutation j sends category u to ``permutations[j, u]``
    categories: labels of the rows and columns
    max_abs_error: largest absolute difference between P and the recombination
    bound: r^2 - 2r + 2, the most terms needed (J <= bound)
    """

    weights: np.ndarray
    permutations: np.ndarray
    categories: tuple[Label, ...]
    max_abs_error: float
    bound: int

    @property
    def count(self) -> int:
        """Number of permutation matrices J."""
        return int(self.weights.size)

    def recombine(self) -> np.ndarray:
        """``sum_j lambda_j P_j`` as a dense array."""
        return _recombine(self.weights, self.permutations)


def _recombine(weights: np.ndarray, permutations: np.ndarray) -> np.ndarray:
    r = permutations.shape[1]
    m = np.zeros((r, r))
    rows = np.arange(r)
    for w, perm in zip(weights, permutations):
        m[rows, perm] += w
    return m


def birkhoff_decomposition(matrix: PramMatrix | ArrayLike) -> BirkhoffDecomposition:
    """Greedy Birkhoff-von Neumann decomposition of a bistochastic matrix."""
    p = require_bistochastic(matrix)
    r = p.shape[0]
    bound = r * r - 2 * r + 2
    rest = p.copy()
    weights: list[float] = []
    perms: list[np.ndarray] = []
    while rest.max() > ZERO_TOL:
        cost = np.where(rest > ZERO_TOL, -rest, np.inf)
        try:
            rows, cols = linear_sum_assignment(cost)
        except ValueError:  # no perfect matching left: only rounding residue remains
            break
        w = float(rest[rows, cols].min())
        rest[rows, cols] -= w
        rest[rest <= ZERO_TOL] = 0.0
        weights.append(w)
        perms.append(cols.astype(np.intp))
    w_arr = np.array(weights)
    p_arr = np.array(perms, dtype=np.intp).reshape(-1, r)
    cats = matrix.categories if isinstance(matrix, PramMatrix) else tuple(range(r))
    err = float(np.abs(_recombine(w_arr, p_arr) - p).max())
    return BirkhoffDecomposition(w_arr, p_arr, cats, err, bound)


@dataclass(frozen=True)
class PermutationDraw:
    """A release made by one permutation of the decomposition.

    codes: released codes (-1, missing, stays missing)
    index: which permutation was drawn
    weight: its probability lambda_j
    permutation: the permutation (category u -> permutation[u])
    """

    codes: np.ndarray
    index: int
    weight: float
    permutation: np.ndarray


def perturb_by_permutation(
    codes: ArrayLike,
    decomposition: BirkhoffDecomposition,
    *,
    key: SecretKey,
    variable: str,
) -> PermutationDraw:
    """Draw one permutation with probability lambda_j (one keyed uniform for
    the whole variable) and apply it to every code.

    The draw depends only on the key and the variable's name, so chunks of a
    file all get the same permutation.  Each record's marginal transition is
    P; records are not independent (see the module notes).
    """
    c = np.asarray(codes)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer):
        raise DataError("codes must be a 1-D integer array")
    r = decomposition.permutations.shape[1]
    if c.size and (c.min() < -1 or c.max() >= r):
        raise DataError(f"codes must lie in -1..{r - 1}")
    u = float(uniforms(key, f"{variable}\x00birkhoff", 0, 1)[0])
    cum = np.cumsum(decomposition.weights)
    j = min(int(np.searchsorted(cum / cum[-1], u, side="right")), decomposition.count - 1)
    perm = decomposition.permutations[j]
    out = np.where(c >= 0, perm[np.maximum(c, 0)], -1).astype(np.intp)
    return PermutationDraw(out, j, float(decomposition.weights[j]), perm.copy())
