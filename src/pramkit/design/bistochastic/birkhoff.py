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

import hashlib
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment

from pramkit.errors import DataError
from pramkit.kernel.rng import SecretKey, uniforms
from pramkit.labels import Label
from pramkit.matrix import PramMatrix
from pramkit.privacy.bistochastic import require_bistochastic

#: Entries of the remainder at or below this are treated as zero.
ZERO_TOL = 1e-13


@dataclass(frozen=True)
class BirkhoffDecomposition:
    """``P = sum_j weights[j] * Perm(permutations[j])`` (equation (1)).

    Attributes
    ----------
    weights : numpy.ndarray, shape (J,)
        lambda_j > 0, summing to 1 (to rounding).
    permutations : numpy.ndarray, shape (J, r)
        Permutation j sends category u to ``permutations[j, u]``.
    categories : tuple of labels
        Labels of the rows and columns.
    max_abs_error : float
        Largest absolute difference between P and the recombination.
    bound : int
        r^2 - 2r + 2, the most terms needed (J <= bound).

    Examples
    --------
    A circulant matrix (equation (6)) is the mixture of the r cyclic shifts,
    weighted by its first row:

    >>> from pramkit.design.bistochastic.families import circulant
    >>> d = birkhoff_decomposition(circulant("abc", [0.6, 0.3, 0.1]))
    >>> d.weights.tolist(), d.permutations.tolist()
    ([0.6, 0.3, 0.1], [[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    >>> d.count, d.bound, d.max_abs_error
    (3, 5, 0.0)
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
        """``sum_j lambda_j P_j`` as a dense array.

        Returns
        -------
        numpy.ndarray, shape (r, r)
            The recombined matrix, equal to the decomposed one within
            :attr:`max_abs_error`.

        Examples
        --------
        >>> from pramkit.design.bistochastic.families import tridiagonal
        >>> p = tridiagonal("abcd", 0.2)
        >>> d = birkhoff_decomposition(p)
        >>> bool(np.allclose(d.recombine(), p.matrix)), d.count <= d.bound
        (True, True)
        """
        return _recombine(self.weights, self.permutations)


def _recombine(weights: np.ndarray, permutations: np.ndarray) -> np.ndarray:
    r = permutations.shape[1]
    m = np.zeros((r, r))
    rows = np.arange(r)
    for w, perm in zip(weights, permutations):
        m[rows, perm] += w
    return m


def birkhoff_decomposition(matrix: PramMatrix | ArrayLike) -> BirkhoffDecomposition:
    """Greedy Birkhoff-von Neumann decomposition of a bistochastic matrix.

    The algorithm is in the module docstring: at most ``r^2 - 2r + 2``
    permutations, each taking the largest weight a perfect matching on the
    remainder's support allows.

    Parameters
    ----------
    matrix : PramMatrix or array_like, shape (r, r)
        A bistochastic matrix (rows and columns summing to 1 within 1e-9).

    Returns
    -------
    BirkhoffDecomposition
        The weights and permutations, with the recombination error.

    Raises
    ------
    pramkit.privacy.bistochastic.NotBistochasticError
        If a row or column does not sum to 1.
    pramkit.errors.MatrixError
        If the matrix is not square, or has a negative or non-finite entry.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 2.1, Theorem 1 and equation (1).

    Examples
    --------
    The tridiagonal matrix of equation (7) with alpha = 0.2 on four
    categories: keep everything (0.6), swap the middle pair (0.2), swap both
    outer pairs (0.2):

    >>> from pramkit.design.bistochastic.families import tridiagonal
    >>> d = birkhoff_decomposition(tridiagonal("abcd", 0.2))
    >>> d.weights.round(12).tolist(), d.permutations.tolist()
    ([0.6, 0.2, 0.2], [[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 3, 2]])
    >>> round(float(d.weights.sum()), 12), d.count <= d.bound
    (1.0, True)

    A row-stochastic matrix that is not bistochastic is refused:

    >>> birkhoff_decomposition([[0.9, 0.1], [0.5, 0.5]])
    Traceback (most recent call last):
    ...
    pramkit.privacy.bistochastic.NotBistochasticError: column 1 of the matrix sums to ...
    """
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
    """A release made by one permutation of the decomposition (:func:`perturb_by_permutation`).

    Attributes
    ----------
    codes : numpy.ndarray
        Released codes (-1, missing, stays missing).
    index : int
        Which permutation was drawn.
    weight : float
        Its probability lambda_j.
    permutation : numpy.ndarray
        The permutation (category u -> ``permutation[u]``).

    Examples
    --------
    >>> from pramkit.design.bistochastic.families import circulant
    >>> from pramkit.kernel.rng import SecretKey
    >>> d = birkhoff_decomposition(circulant("abc", [0.6, 0.3, 0.1]))
    >>> draw = perturb_by_permutation(np.array([0, 2]), d, key=SecretKey(bytes(range(32)), "doc"), variable="race")
    >>> draw.index, draw.weight, draw.permutation.tolist(), draw.codes.tolist()
    (2, 0.1, [2, 0, 1], [2, 1])
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
    release: str = "",
) -> PermutationDraw:
    """Draw one permutation with probability lambda_j (one keyed uniform for
    the whole variable) and apply it to every code.

    The draw depends only on the key, the release (the decomposition and the
    ``release`` label: :meth:`pramkit.kernel.rng.SecretKey.for_release`) and the
    variable's name, so chunks of a file all get the same permutation, and a
    release of other data with the same key and decomposition (a panel's next
    wave) needs another label to draw anew.  Each record's marginal transition is
    P; records are not independent (see the module notes).

    Parameters
    ----------
    codes : array_like of int, shape (n,)
        Category codes ``0..r-1`` of the records, -1 for missing.
    decomposition : BirkhoffDecomposition
        The decomposition of P (:func:`birkhoff_decomposition`).
    key : SecretKey
        The secret key of the release.
    variable : str
        The variable's name (selects the keyed random stream).
    release : str
        The release's label (``""``: none; :func:`pramkit.validate.release_label`).

    Returns
    -------
    PermutationDraw
        The released codes and the permutation drawn.

    Raises
    ------
    pramkit.errors.DataError
        If the codes are not a 1-D integer array in ``-1..r-1``.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 2.1, equation (1).

    Examples
    --------
    Every record of a category moves to the same released category, missing
    values stay missing, and a second chunk of the file gets the same
    permutation:

    >>> from pramkit.design.bistochastic.families import circulant
    >>> from pramkit.kernel.rng import SecretKey
    >>> d = birkhoff_decomposition(circulant("abc", [0.6, 0.3, 0.1]))
    >>> key = SecretKey(bytes(range(32)), "doc")
    >>> draw = perturb_by_permutation(np.array([0, 1, 2, 2, -1, 0]), d, key=key, variable="race")
    >>> draw.codes.tolist(), draw.weight
    ([2, 0, 1, 1, -1, 2], 0.1)
    >>> perturb_by_permutation(np.array([2, 0]), d, key=key, variable="race").codes.tolist()
    [1, 2]
    """
    c = np.asarray(codes)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer):
        raise DataError("codes must be a 1-D integer array")
    r = decomposition.permutations.shape[1]
    if c.size and (c.min() < -1 or c.max() >= r):
        raise DataError(f"codes must lie in -1..{r - 1}")
    identity = hashlib.sha256(np.ascontiguousarray(decomposition.weights, dtype="<f8").tobytes()
                              + np.ascontiguousarray(decomposition.permutations, dtype="<i8").tobytes()
                              + repr([str(c) for c in decomposition.categories]).encode("utf-8")).hexdigest()
    u = float(uniforms(key.for_release(f"birkhoff:{identity}", release), f"{variable}\x00birkhoff", 0, 1)[0])
    cum = np.cumsum(decomposition.weights)
    j = min(int(np.searchsorted(cum / cum[-1], u, side="right")), decomposition.count - 1)
    perm = decomposition.permutations[j]
    out = np.where(c >= 0, perm[np.maximum(c, 0)], -1).astype(np.intp)
    return PermutationDraw(out, j, float(decomposition.weights[j]), perm.copy())
