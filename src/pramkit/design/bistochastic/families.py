"""Bistochastic designs (Ruiz and Domingo-Ferrer, sections 2.2, 2.3 and 4).

Four families of doubly stochastic matrices, each with one parameter:

* ``rr`` -- epsilon-DP randomized response, equation (2): keep with
  ``e^eps / (r - 1 + e^eps)``, each other category ``1 / (r - 1 + e^eps)``
  (:func:`pramkit.design.classic.randomized_response`);
* ``kanon`` -- k-anonymity / Anatomy, equation (3): block-diagonal with
  uniform blocks ``1 / n_l`` over classes of at least k categories
  (:func:`k_anonymity`, classes from :func:`anatomy_classes`);
* ``tridiagonal`` -- equation (7), symmetric tridiagonal with off-diagonal
  alpha (:func:`tridiagonal`);
* ``circulant`` -- equation (6) with first row ``(p11, (1 - p11)/(r - 1), ...)``
  as in Table 1 (:func:`circulant`); at equal beta it is the same matrix as
  ``rr`` (the paper's remark after Table 1).

Zeros (equations (3) and (7)).  The paper keeps the zeros and reads them as an
infinitesimal gamma (a "super doubly stochastic" matrix); beta computed with
``0 log 0 = 0`` is that reading's limit.  Strictly, such a matrix has
epsilon = infinity; :func:`k_anonymity` is stored by its classes, so that a
release states which class each value lies in (the manifest's ledger names
it) and the epsilon given the class, 0.  :func:`with_floor` gives the strictly positive variant the
paper mentions: ``(1 - r gamma) P + gamma J`` (J all ones) replaces each zero
by gamma, adjusts the positive entries, stays bistochastic and has a finite
epsilon.

Target beta (:func:`fit_family`).  Along each family the matrix is affine in
the parameter, and H(P) is concave in P (a sum of row entropies), so beta is
concave in the parameter: it rises from 0 to a single maximum, then falls.
The root is found by Brent's method on the rising branch:

* rr / circulant: q = p11 in [1/r, 1] (beta falls from 1 to 0 as q rises;
  form (8), whose H(P) is closed form: no r x r array, see :func:`fit_family`);
* tridiagonal: alpha in [0, alpha*], alpha* the maximiser (alpha* < 1/2;
  the maximum beta is below 1, about 0.41 for r = 12);
* kanon: k in 1..r; with classes as equal as possible beta is
  non-decreasing in k (:func:`anatomy_classes`), and beta can only reach
  discrete values: the smallest k with beta >= target is returned.

:func:`compare_families` fits every family to one target and ranks them by
the mutual information I(X; Z) they keep for the data's proportions p.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pramkit.design.classic import float_array, randomized_response
from pramkit.errors import ParameterError, PramkitError
from pramkit.information import mutual_information, mutual_information_form8
from pramkit.labels import Label
from pramkit.matrix import ROW_SUM_TOL, PramMatrix, Provenance
from pramkit.privacy.bistochastic import NotBistochasticError, as_distribution, bistochastic_privacy

#: Absolute tolerance on the parameter found by root finding.
XTOL = 1e-13


class BetaUnreachableError(PramkitError):
    """No member of a family reaches the requested beta.

    A :class:`pramkit.errors.PramkitError`, raised by :func:`fit_family`,
    :func:`solve_monotone` and :func:`compare_families`.

    Examples
    --------
    The tridiagonal family never exceeds beta = 0.41 on 12 categories:

    >>> try:
    ...     fit_family("tridiagonal", range(12), 0.6)
    ... except BetaUnreachableError as err:
    ...     print(str(err).split(" (")[0])
    the tridiagonal family reaches at most beta = 0.4113 for 12 categories
    >>> issubclass(BetaUnreachableError, PramkitError)
    True
    """


def _categories(categories: Sequence[Label], minimum: int = 2) -> tuple[Label, ...]:
    cats = tuple(categories)
    if len(cats) < minimum:
        raise ParameterError(f"this design needs at least {minimum} categories, got {len(cats)}")
    return cats


# -- the families ----------------------------------------------------------

def anatomy_classes(size: int, k: int) -> tuple[tuple[int, ...], ...]:
    """k-anonymous classes of ``size`` ordered categories: ``L = floor(size / k)``
    classes of consecutive categories, sizes as equal as possible (the larger
    ones first), each of at least k categories.

    Equal sizes minimise the entropy for L classes, and fewer classes give
    more entropy, so beta of :func:`k_anonymity` is non-decreasing in k.

    Parameters
    ----------
    size : int
        The number r of categories.
    k : int
        The smallest class size, ``1 <= k <= size``.

    Returns
    -------
    tuple of tuples of int
        The category positions of each class, in order.

    Raises
    ------
    ParameterError
        If k is not a whole number in ``1..size``.

    Examples
    --------
    Seven categories with k = 3: ``floor(7/3) = 2`` classes, of 4 and 3.

    >>> anatomy_classes(7, 3)
    ((0, 1, 2, 3), (4, 5, 6))
    """
    bounds = class_bounds(size, k)
    return tuple(tuple(range(int(a), int(b))) for a, b in itertools.pairwise(bounds))


def class_bounds(size: int, k: int) -> np.ndarray:
    """Boundaries ``0 = b_0 < b_1 < ... < b_L = size`` of the classes of
    :func:`anatomy_classes` (class l is ``b_l .. b_{l+1} - 1``).

    Parameters
    ----------
    size : int
        The number r of categories (or of individuals, :mod:`pramkit.design.bistochastic.numeric`).
    k : int
        The smallest class size, ``1 <= k <= size``.

    Returns
    -------
    numpy.ndarray
        ``L + 1`` increasing integers from 0 to ``size``.

    Raises
    ------
    ParameterError
        If k is not a whole number in ``1..size``.

    Examples
    --------
    >>> class_bounds(7, 3).tolist()
    [0, 4, 7]
    >>> class_bounds(7, 8)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k must be a whole number between 1 and the number of categories (7), got 8
    """
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= size:
        raise ParameterError(f"k must be a whole number between 1 and the number of categories ({size}), got {k!r}")
    n_classes = size // k
    base, extra = divmod(size, n_classes)
    sizes = np.full(n_classes, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def k_anonymity(
    categories: Sequence[Label],
    k: int | None = None,
    *,
    classes: Sequence[Sequence[int]] | None = None,
) -> PramMatrix:
    """Equation (3): block-diagonal Q with ``Q_l = 1/n_l`` on each class.

    Give ``k`` (classes from :func:`anatomy_classes`) or the ``classes``
    themselves (a partition of the category positions 0..r-1, e.g. the
    data's own k-anonymous classes); with both, every class must have at
    least k categories.

    Parameters
    ----------
    categories : sequence of labels
        The r categories, in order.
    k : int, optional
        The smallest class size (classes from :func:`anatomy_classes`).
    classes : sequence of sequences of int, optional
        A partition of the positions ``0..r-1``.

    Returns
    -------
    PramMatrix
        Block-diagonal and bistochastic, stored by blocks
        (:meth:`pramkit.PramMatrix.block_diagonal`: one uniform form (8) block
        per class, O(r) memory); provenance ``k_anonymity`` with k and the
        classes.  With two classes or more its epsilon is infinite, and its
        epsilon given the block is 0: a release shows exactly which class each
        value lies in, and the manifest's ledger says so (module docstring;
        :func:`with_floor` makes the epsilon finite and the matrix dense).
        Stored by blocks, the matrix is drawn block by block, so a release
        draws other values for the same key than the dense matrix of earlier
        versions did (the entries are the same).

    Raises
    ------
    ParameterError
        If neither k nor classes is given, the classes do not partition the
        positions, or a class has fewer than k categories.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 2.3, equation (3).

    Examples
    --------
    Five categories, k = 2: a class of three (entries 1/3) and one of two (1/2).

    >>> m = k_anonymity("abcde", 2)
    >>> m.matrix.round(4).tolist()   # doctest: +NORMALIZE_WHITESPACE
    [[0.3333, 0.3333, 0.3333, 0.0, 0.0], [0.3333, 0.3333, 0.3333, 0.0, 0.0], [0.3333, 0.3333, 0.3333, 0.0, 0.0],
     [0.0, 0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.0, 0.5, 0.5]]
    >>> m.is_bistochastic, m.epsilon, m.block_epsilon, [idx.tolist() for idx, _ in m.blocks]
    (True, inf, 0.0, [[0, 1, 2], [3, 4]])

    The data's own classes need not be consecutive:

    >>> k_anonymity("abcd", classes=[[0, 3], [1, 2]]).matrix.tolist()
    [[0.5, 0.0, 0.0, 0.5], [0.0, 0.5, 0.5, 0.0], [0.0, 0.5, 0.5, 0.0], [0.5, 0.0, 0.0, 0.5]]
    """
    cats = _categories(categories, 1)
    r = len(cats)
    if classes is None:
        if k is None:
            raise ParameterError("give k or the classes")
        parts = anatomy_classes(r, k)
    else:
        try:
            parts = tuple(tuple(int(i) for i in c) for c in classes)
        except (TypeError, ValueError):
            raise ParameterError("the classes must be lists of category positions (whole numbers)") from None
        flat = sorted(i for c in parts for i in c)
        if flat != list(range(r)) or any(len(c) == 0 for c in parts):
            raise ParameterError(f"the classes must partition the category positions 0..{r - 1}, each exactly once")
        if k is not None and min(len(c) for c in parts) < k:
            raise ParameterError(f"a class has {min(len(c) for c in parts)} categories, fewer than k = {k}")
    blocks = [PramMatrix.form8(np.full(len(c), 1.0 / len(c)), np.full(len(c), 1.0 / len(c)), [cats[i] for i in c],
                               Provenance(method="uniform")) for c in parts]
    return PramMatrix.block_diagonal(blocks, cats, Provenance(
        method="k_anonymity", parameters={"k": None if k is None else int(k), "classes": [list(c) for c in parts]},
    ))


def tridiagonal(categories: Sequence[Label], alpha: float | ArrayLike) -> PramMatrix:
    """Equation (7): ``P[i, i+1] = P[i+1, i] = alpha_i``, diagonal ``1 - alpha_{i-1} - alpha_i``.

    ``alpha`` is one number or r - 1 numbers, non-negative with
    ``alpha_{i-1} + alpha_i <= 1``.

    Parameters
    ----------
    categories : sequence of labels
        The r >= 2 categories, in order (neighbours exchange records).
    alpha : float or array_like, shape (r - 1,)
        The off-diagonal entries.

    Returns
    -------
    PramMatrix
        Symmetric, hence bistochastic; provenance ``tridiagonal`` with alpha.
        For r >= 3 it has zeros, so its epsilon is infinite.

    Raises
    ------
    ParameterError
        If fewer than two categories are given, the number of alphas is
        neither 1 nor r - 1, or an alpha is negative or two neighbours sum to
        more than 1.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 4, equation (7).

    Examples
    --------
    >>> m = tridiagonal("abcd", 0.2)
    >>> m.matrix.round(12).tolist()
    [[0.8, 0.2, 0.0, 0.0], [0.2, 0.6, 0.2, 0.0], [0.0, 0.2, 0.6, 0.2], [0.0, 0.0, 0.2, 0.8]]
    >>> m.is_bistochastic
    True
    """
    cats = _categories(categories)
    r = len(cats)
    av = float_array(alpha, "alpha")
    a = np.full(r - 1, float(av)) if av.ndim == 0 else av
    if a.shape != (r - 1,):
        raise ParameterError(f"give one alpha or r - 1 = {r - 1} of them, got {av.size}")
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a > 1) or np.any(a[:-1] + a[1:] > 1):
        raise ParameterError("alpha must be non-negative with alpha_(i-1) + alpha_i <= 1 (for one alpha: at most 1/2)")
    m = np.diag(a, 1) + np.diag(a, -1)
    m[np.arange(r), np.arange(r)] = 1.0 - m.sum(axis=1)
    return PramMatrix(m, cats, Provenance(
        method="tridiagonal", parameters={"alpha": float(av) if av.ndim == 0 else a.tolist()},
    ))


def circulant(categories: Sequence[Label], first_row: ArrayLike) -> PramMatrix:
    """Equation (6): ``P[u, v] = first_row[(v - u) mod r]``; always bistochastic.

    Each row is the previous one shifted right by one, so every column holds
    the entries of the first row once: columns sum to 1 when the first row does.

    Parameters
    ----------
    categories : sequence of labels
        The r >= 1 categories.
    first_row : array_like, shape (r,)
        The first row, non-negative and summing to 1.

    Returns
    -------
    PramMatrix
        Provenance ``circulant`` with the first row.

    Raises
    ------
    ParameterError
        If the first row does not have r entries (or is not a valid row:
        :class:`pramkit.errors.MatrixError`).

    References
    ----------
    Ruiz and Domingo-Ferrer, section 4, equation (6).

    Examples
    --------
    >>> m = circulant("abc", [0.6, 0.3, 0.1])
    >>> m.matrix.tolist(), m.is_bistochastic
    ([[0.6, 0.3, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]], True)
    """
    cats = _categories(categories, 1)
    row = float_array(first_row, "the first row")
    if row.shape != (len(cats),):
        raise ParameterError(f"the first row must have {len(cats)} entries, got shape {row.shape}")
    idx = np.arange(len(cats))
    m = row[(idx[None, :] - idx[:, None]) % len(cats)]
    return PramMatrix(m, cats, Provenance(method="circulant", parameters={"first_row": row.tolist()}))


def circulant_keep(categories: Sequence[Label], p11: float) -> PramMatrix:
    """Table 1's circulant: first row ``(p11, (1 - p11)/(r - 1), ..., (1 - p11)/(r - 1))``.

    This is form (8) with one keep probability, the same matrix as randomized
    response with ``p11 = e^eps / (e^eps + r - 1)``.

    Parameters
    ----------
    categories : sequence of labels
        The r >= 2 categories.
    p11 : float
        The diagonal entry, in [0, 1].

    Returns
    -------
    PramMatrix
        Provenance ``circulant`` with the first row.

    Raises
    ------
    ParameterError
        If fewer than two categories are given or p11 is not in [0, 1].

    References
    ----------
    Ruiz and Domingo-Ferrer, equation (6) and Table 1.

    Examples
    --------
    >>> m = circulant_keep("abcd", 0.7)
    >>> m.matrix.round(12).tolist()
    [[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.7, 0.1], [0.1, 0.1, 0.1, 0.7]]
    >>> bool(np.allclose(m.matrix, randomized_response("abcd", math.log(0.7 * 3 / 0.3)).matrix))
    True
    """
    r = len(_categories(categories))
    if not (isinstance(p11, (int, float)) and 0 <= p11 <= 1):
        raise ParameterError(f"p11 must be a probability in [0, 1], got {p11!r}")
    return circulant(categories, [p11] + [(1.0 - p11) / (r - 1)] * (r - 1))


def with_floor(matrix: PramMatrix, gamma: float) -> PramMatrix:
    """``(1 - r gamma) P + gamma J``: every entry at least gamma, still bistochastic
    if P is, epsilon finite (section 4, the strictly ergodic variant).

    Parameters
    ----------
    matrix : PramMatrix
        P, r x r.
    gamma : float
        The floor, in ``[0, 1/r]`` (``1/r`` gives the uniform matrix).

    Returns
    -------
    PramMatrix
        The floored matrix; its provenance is P's method and parameters plus
        ``gamma``.  With gamma = 0 it is P itself, stored as P is (by blocks
        for :func:`k_anonymity`); with gamma > 0 it has no zero, so no blocks,
        and it is dense.

    Raises
    ------
    ParameterError
        If gamma is outside ``[0, 1/r]``.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 4, the remark after equation (7).

    Examples
    --------
    Two k-anonymous blocks have epsilon = infinity; with gamma = 0.01 each
    zero becomes 0.01 and each 1/2 becomes ``0.96 / 2 + 0.01 = 0.49``, so
    epsilon is ``log(0.49 / 0.01) = log 49``:

    >>> m = with_floor(k_anonymity("abcd", 2), 0.01)
    >>> m.matrix.round(12).tolist()
    [[0.49, 0.49, 0.01, 0.01], [0.49, 0.49, 0.01, 0.01], [0.01, 0.01, 0.49, 0.49], [0.01, 0.01, 0.49, 0.49]]
    >>> m.is_bistochastic, math.isclose(m.epsilon, math.log(49))
    (True, True)
    """
    r = matrix.size
    if not (isinstance(gamma, (int, float)) and 0 <= gamma <= 1.0 / r):
        raise ParameterError(f"gamma must lie in [0, 1/r] = [0, {1.0 / r:.6g}], got {gamma!r}")
    prov = Provenance(method=matrix.provenance.method,
                      parameters={**matrix.provenance.parameters, "gamma": float(gamma)})
    if gamma == 0:  # the same entries: a matrix stored by blocks stays so
        return matrix.with_provenance(prov)
    return PramMatrix((1.0 - r * gamma) * matrix.matrix + gamma, matrix.categories, prov)


# -- reaching a target beta --------------------------------------------------

@dataclass(frozen=True)
class FamilyFit:
    """The member of a family that reaches a target beta (:func:`fit_family`).

    Attributes
    ----------
    family : str
        ``rr``, ``kanon``, ``tridiagonal`` or ``circulant``.
    parameter_name : str
        ``epsilon``, ``k``, ``alpha`` or ``p11``.
    parameter : float
        Its value.
    target_beta : float
        The requested beta.
    beta : float
        beta of the returned matrix (equal to the target up to 1e-9, or the
        first value above it for ``kanon``).
    matrix : PramMatrix
        The design.
    mutual_information_nats : float or None
        I(X; Z) for the proportions given, nats (None without).

    Examples
    --------
    Table 1 of Ruiz and Domingo-Ferrer prints beta = 60 % for randomized
    response with epsilon = 3 on 12 categories; exactly 60 % needs a slightly
    larger epsilon:

    >>> fit = fit_family("rr", range(12), 0.6)
    >>> fit.parameter_name, round(fit.parameter, 4), round(fit.beta, 9), fit.mutual_information_nats
    ('epsilon', 3.0108, 0.6, None)
    """

    family: str
    parameter_name: str
    parameter: float
    target_beta: float
    beta: float
    matrix: PramMatrix
    mutual_information_nats: float | None = None


def _xlog2x(x: ArrayLike) -> np.ndarray:
    """``x log2 x`` entrywise, with ``0 log 0 = 0``."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x * np.log2(np.where(x > 0, x, 1.0)), 0.0)


def _form8_beta(q: np.ndarray, w: np.ndarray) -> float:
    """beta (equation (4) over log2 r) of the compact form (8) matrix with diagonal q and
    off-diagonal w, from its entries in O(r) memory: each row has one q[k] and r - 1 entries w[k]."""
    r = q.size
    column = q + (w.sum() - w)
    worst = int(np.argmax(np.abs(column - 1.0)))
    if abs(column[worst] - 1.0) > ROW_SUM_TOL:
        raise NotBistochasticError(f"column {worst} of the matrix sums to {column[worst]!r}, not 1: "
                                   "bistochastic privacy needs rows and columns summing to 1")
    bits = -float(np.mean(_xlog2x(q) + (r - 1) * _xlog2x(w)))
    return min(max(bits / math.log2(r), 0.0), 1.0)


def _beta(m: PramMatrix) -> float:
    q, w = m.form8_q, m.form8_w
    if m.is_compact and q is not None and w is not None:  # a compact matrix has both
        return _form8_beta(q, w)
    return bistochastic_privacy(m).beta


def _information(p: np.ndarray, m: PramMatrix) -> float:
    """I(X; Z) in nats for proportions p: O(r) for a compact matrix, else from the dense entries."""
    q = m.form8_q if m.is_compact else None
    return mutual_information_form8(p, q) if q is not None else mutual_information(p, m.matrix)


def _keep_beta(r: int, q: float) -> float:
    """beta of form (8) with one keep probability q on r categories, closed form in O(1):
    ``H = -q log2 q - (1 - q) log2((1 - q) / (r - 1))`` bits, over ``log2 r``."""
    bits = -float(_xlog2x(q)) - float(_xlog2x(1.0 - q)) + (1.0 - q) * math.log2(r - 1)
    return min(max(bits / math.log2(r), 0.0), 1.0)


def _keep_q(r: int, target: float) -> float:
    """q in [1/r, 1] with beta(form (8) with keep q) = target (beta falls in q); no r x r array."""
    return solve_monotone(lambda q: _keep_beta(r, q), 1.0 / r, 1.0, target, rising=False)


def tridiagonal_peak(r: int) -> tuple[float, float]:
    """(alpha*, beta*): the alpha maximising beta of :func:`tridiagonal` with one
    alpha, and that maximum (beta is concave in alpha).

    Parameters
    ----------
    r : int
        The number of categories, at least 2.

    Returns
    -------
    (float, float)
        alpha* in [0, 1/2] and beta* = beta(alpha*), found by bounded
        scalar minimisation (to about 1e-12 in alpha).

    Examples
    --------
    For r = 12 (Table 1 of Ruiz and Domingo-Ferrer) the family tops out near
    beta = 0.41, at alpha = 0.34; beyond it beta falls again:

    >>> peak, top = tridiagonal_peak(12)
    >>> round(peak, 4), round(top, 4)
    (0.3406, 0.4113)
    >>> bistochastic_privacy(tridiagonal(range(12), 0.4)).beta < top
    True
    """
    from scipy.optimize import minimize_scalar  # deferred: 0.7 s to import, and most designs never need it

    cats = tuple(range(r))
    res = minimize_scalar(lambda a: -_beta(tridiagonal(cats, a)), bounds=(0.0, 0.5), method="bounded",
                          options={"xatol": 1e-12})
    return float(res.x), float(-res.fun)


def solve_monotone(f: Callable[[float], float], lo: float, hi: float, target: float, *, rising: bool) -> float:
    """Root of ``f(x) = target`` on [lo, hi] where f is monotone (rising or falling).

    Brent's method (:func:`scipy.optimize.brentq`, ``xtol`` = :data:`XTOL`);
    an end point is returned when f equals the target there (to 1e-15).

    Parameters
    ----------
    f : callable
        A monotone function of one float.
    lo, hi : float
        The bracket, ``lo < hi``.
    target : float
        The value sought.
    rising : bool
        Whether f increases (else it decreases) on the bracket.

    Returns
    -------
    float
        x in [lo, hi] with ``f(x) = target``.

    Raises
    ------
    BetaUnreachableError
        If the target lies outside ``[f(lo), f(hi)]`` (more than 1e-12).

    Examples
    --------
    >>> round(solve_monotone(lambda x: x * x, 0.0, 2.0, 2.0, rising=True), 12)
    1.414213562373
    >>> solve_monotone(lambda x: x * x, 0.0, 2.0, 5.0, rising=True)
    Traceback (most recent call last):
    ...
    pramkit.design.bistochastic.families.BetaUnreachableError: beta = 5 is outside [0, 4] for this family
    """
    flo, fhi = f(lo), f(hi)
    low, high = (flo, fhi) if rising else (fhi, flo)
    if not low - 1e-12 <= target <= high + 1e-12:
        raise BetaUnreachableError(f"beta = {target:g} is outside [{low:.6g}, {high:.6g}] for this family")
    if abs(flo - target) <= 1e-15:
        return lo
    if abs(fhi - target) <= 1e-15:
        return hi
    from scipy.optimize import brentq  # deferred: 0.7 s to import, and most designs never need it

    return float(brentq(lambda x: f(x) - target, lo, hi, xtol=XTOL))


def _check_target(beta: float) -> float:
    if not (isinstance(beta, (int, float)) and 0 < beta < 1):
        raise ParameterError(f"the target beta must lie strictly between 0 and 1, got {beta!r}")
    return float(beta)


def _fit_rr(cats: tuple[Label, ...], target: float) -> tuple[float, PramMatrix]:
    q = _keep_q(len(cats), target)
    if q <= 1.0 / len(cats):
        raise BetaUnreachableError("beta = 1 needs epsilon = 0 (perfect secrecy); give a smaller target")
    if q >= 1.0:
        raise BetaUnreachableError(f"beta = {target:g} is too small to fit: randomized response reaches it only "
                                   "as the identity (epsilon infinite); give a larger target")
    eps = math.log(q * (len(cats) - 1) / (1.0 - q))
    return eps, randomized_response(cats, eps)


def _fit_circulant(cats: tuple[Label, ...], target: float) -> tuple[float, PramMatrix]:
    q = _keep_q(len(cats), target)
    return q, circulant_keep(cats, q)


def _fit_tridiagonal(cats: tuple[Label, ...], target: float) -> tuple[float, PramMatrix]:
    peak, top = tridiagonal_peak(len(cats))
    if target > top + 1e-12:
        raise BetaUnreachableError(
            f"the tridiagonal family reaches at most beta = {top:.4f} for {len(cats)} categories "
            f"(at alpha = {peak:.4f}); choose another family or a smaller target"
        )
    a = solve_monotone(lambda x: _beta(tridiagonal(cats, x)), 0.0, peak, min(target, top), rising=True)
    return a, tridiagonal(cats, a)


def _fit_kanon(cats: tuple[Label, ...], target: float) -> tuple[float, PramMatrix]:
    # beta is non-decreasing in k and k = r gives beta = 1 > target: the search ends.
    k = next(k for k in range(1, len(cats) + 1) if _beta(k_anonymity(cats, k)) >= target - 1e-12)
    return k, k_anonymity(cats, k)


#: Family name -> (parameter name, fitter).
_BETA_FITTERS: dict[str, tuple[str, Callable[[tuple[Label, ...], float], tuple[float, PramMatrix]]]] = {
    "rr": ("epsilon", _fit_rr),
    "kanon": ("k", _fit_kanon),
    "tridiagonal": ("alpha", _fit_tridiagonal),
    "circulant": ("p11", _fit_circulant),
}

#: The families :func:`fit_family` knows.
BETA_FAMILIES: tuple[str, ...] = tuple(_BETA_FITTERS)


def fit_family(
    family: str,
    categories: Sequence[Label],
    beta: float,
    *,
    p: ArrayLike | None = None,
) -> FamilyFit:
    """The member of ``family`` whose beta equals ``beta`` (the least
    perturbing one: on the rising branch), with I(X; Z) for proportions ``p``.

    Parameters
    ----------
    family : str
        One of :data:`BETA_FAMILIES`: ``rr`` (equation (2)), ``kanon``
        (equation (3)), ``tridiagonal`` (equation (7)) or ``circulant``
        (equation (6), as in Table 1).
    categories : sequence of labels
        The r >= 2 categories.
    beta : float
        The target beta-bistochastic privacy, ``H(P) / log2 r`` (Definition
        1, equation (4)), strictly between 0 and 1.
    p : array_like, shape (r,), optional
        Counts or proportions of the categories, for I(X; Z).

    Returns
    -------
    FamilyFit
        The parameter, the matrix (its provenance records ``target_beta``
        and the beta reached as objective) and I(X; Z) when p is given.

    Raises
    ------
    BetaUnreachableError
        When the family cannot reach beta (the tridiagonal family stays
        below about 0.41 for r = 12).
    ParameterError
        For an unknown family, a beta outside (0, 1) or fewer than two
        categories.

    Notes
    -----
    ``rr`` and ``circulant`` are form (8) with one keep probability q, whose
    entropy rate has a closed form, ``H = -q log2 q - (1 - q) log2((1 - q) /
    (r - 1))``: q is a one-dimensional root of ``H / log2 r = beta``, O(1)
    per candidate.  The ``rr`` fit builds no r x r array: its matrix is
    compact (:func:`pramkit.design.classic.randomized_response`), its beta is
    computed from the stored q and w and its I(X; Z) from q, both in O(r), so
    it reaches r = 100 000.  The fitted q can differ in its last digits from
    that of earlier versions, which evaluated beta on the dense matrix; a
    release of such a design, perturbed by the engine's form (8) sampler, can
    then differ for the same key.

    References
    ----------
    Ruiz and Domingo-Ferrer, Definition 1, equations (2)-(4), (6), (7).

    Examples
    --------
    At the same beta, randomized response and Table 1's circulant are the
    same matrix (the paper's remark after Table 1); k-anonymity can only
    reach beta in steps, so it returns the first k at or above the target:

    >>> rr = fit_family("rr", range(6), 0.3, p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.1])
    >>> circ = fit_family("circulant", range(6), 0.3)
    >>> round(rr.parameter, 4), round(circ.parameter, 4), bool(np.allclose(rr.matrix.matrix, circ.matrix.matrix))
    (3.662, 0.8862, True)
    >>> round(rr.beta, 9), round(rr.mutual_information_nats, 4)
    (0.3, 1.1163)
    >>> kanon = fit_family("kanon", range(6), 0.3)
    >>> kanon.parameter, kanon.beta >= 0.3
    (2.0, True)
    """
    if family not in _BETA_FITTERS:
        raise ParameterError(f"unknown family {family!r}; choose one of {', '.join(BETA_FAMILIES)}")
    target = _check_target(beta)
    cats = _categories(categories)
    name, fitter = _BETA_FITTERS[family]
    value, m = fitter(cats, target)
    achieved = _beta(m)
    m = m.with_provenance(Provenance(
        method=m.provenance.method, parameters={**m.provenance.parameters, "target_beta": target},
        objective=achieved, objective_name="beta (entropy rate over log2 r)",
    ))
    mi = None if p is None else _information(as_distribution(p, len(cats)), m)
    return FamilyFit(family, name, float(value), target, achieved, m, mi)


@dataclass(frozen=True)
class FamilyComparison:
    """Every family fitted to one beta, ranked by the information it keeps
    (:func:`compare_families`).

    Attributes
    ----------
    target_beta : float
        The requested beta.
    fits : tuple of FamilyFit
        The fits that reach it, most mutual information first.
    unreachable : dict of str to str
        Family -> why it cannot reach the target.
    best : str
        The family keeping the most I(X; Z) for p (ties: the first in
        :data:`BETA_FAMILIES` order).

    Examples
    --------
    On 12 categories the tridiagonal family cannot reach beta = 0.6:

    >>> c = compare_families(range(12), [1 / 12] * 12, 0.6)
    >>> c.best, list(c.unreachable)
    ('rr', ['tridiagonal'])
    """

    target_beta: float
    fits: tuple[FamilyFit, ...]
    unreachable: dict[str, str]
    best: str


def compare_families(
    categories: Sequence[Label],
    p: ArrayLike,
    beta: float,
    *,
    families: Sequence[str] = BETA_FAMILIES,
) -> FamilyComparison:
    """Fit each family to ``beta`` and say which keeps the most I(X; Z) (nats) for p.

    Parameters
    ----------
    categories : sequence of labels
        The r >= 2 categories.
    p : array_like, shape (r,)
        Counts or proportions of the categories.
    beta : float
        The target beta, strictly between 0 and 1.
    families : sequence of str
        The families to fit (default: all of :data:`BETA_FAMILIES`).

    Returns
    -------
    FamilyComparison
        The fits, most I(X; Z) first, and the families that cannot reach beta.

    Raises
    ------
    BetaUnreachableError
        If no family reaches beta.
    ParameterError
        For an unknown family, a beta outside (0, 1) or an invalid p.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 4 and Table 1.

    Examples
    --------
    At beta = 0.3 on six categories the tridiagonal matrix, which moves
    records only to neighbours, keeps the most information; every fit meets
    the target:

    >>> c = compare_families(range(6), [0.4, 0.2, 0.1, 0.1, 0.1, 0.1], 0.3)
    >>> [(f.family, round(f.mutual_information_nats, 4)) for f in c.fits]
    [('tridiagonal', 1.1442), ('rr', 1.1163), ('circulant', 1.1163), ('kanon', 0.9503)]
    >>> c.best, all(f.beta >= 0.3 - 1e-9 for f in c.fits)
    ('tridiagonal', True)
    """
    fits: list[FamilyFit] = []
    unreachable: dict[str, str] = {}
    for fam in families:
        try:
            fits.append(fit_family(fam, categories, beta, p=p))
        except BetaUnreachableError as exc:
            unreachable[fam] = str(exc)
    if not fits:
        raise BetaUnreachableError(f"no family reaches beta = {beta:g}: " + "; ".join(unreachable.values()))
    information = [fit.mutual_information_nats for fit in fits]  # computed: p is given
    order = sorted(range(len(fits)), key=lambda i: (-round(information[i] or 0.0, 12), i))
    ranked = tuple(fits[i] for i in order)
    return FamilyComparison(float(beta), ranked, unreachable, ranked[0].family)
