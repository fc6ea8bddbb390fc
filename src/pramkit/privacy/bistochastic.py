"""Bistochastic privacy (Ruiz and Domingo-Ferrer), measured in bits.

A transition matrix P (``P[u, v] = Pr(Y = v | X = u)``, rows original) is
*bistochastic* (doubly stochastic) when its rows and its columns sum to 1.
Then the uniform distribution is stationary and the entropy rate of P is
equation (4):

    H(P) = - sum_{u,v} (1/r) P[u, v] log2 P[u, v]      (bits),

the average entropy of the rows.  Its maximum, ``log2 r``, is reached by the
matrix of perfect secrecy P* (all entries 1/r).

* Definition 1 (univariate): Y is beta-bistochastically private when P is
  bistochastic and ``H(P) / log2 r >= beta``  (:func:`bistochastic_privacy`).
* Definition 2 (conservative multivariate): attributes perturbed separately
  by P_1..P_K; ``sum_k H(P_k) / sum_k log2 n_k >= beta``
  (:func:`conservative_privacy`).
* Definition 3 (true multivariate): one bistochastic P_J on the
  cross-classification; ``H(P_J) / log2 prod_k n_k >= beta``
  (:func:`joint_privacy`).  For separate perturbation the joint matrix is the
  Kronecker product of the P_k, whose entropy rate is the sum of theirs, so
  Definitions 2 and 3 then agree.
* Theorem 2 (Hardy, Littlewood and Polya): p majorizes q iff q = P^T p for a
  bistochastic P; a bistochastic release is never less uncertain than the
  original (:func:`majorizes`, :func:`released_distribution`).
* Section 3.1: ``2^H(Y)`` (H in bits) is the number of sides of the fair die
  an attacker faces (:func:`die_sides`).

Zeros.  Section 3.1 assumes every entry positive (an ergodic chain).  The
families of equations (3) and (7) have zeros; the paper reads them as "super
doubly stochastic" matrices whose zeros are an infinitesimal gamma > 0.  The
entropy rate here uses ``0 log 0 = 0``, which is exactly the limit gamma -> 0
of that reading.  Strictly, a column with a zero makes epsilon infinite
(Shlomo and Skinner 2012, section 4): the results report both.

References
----------
Ruiz, N. and Domingo-Ferrer, J., Bistochastic privacy, sections 2-3.
Marshall, Olkin and Arnold (2011), Inequalities: Theory of Majorization.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import MatrixError, ParameterError
from pramkit.information import entropy
from pramkit.matrix import ROW_SUM_TOL, PramMatrix
from pramkit.privacy.epsilon import matrix_epsilon

#: Tolerance of the majorization check (partial sums of probabilities).
MAJORIZATION_TOL = 1e-12


class NotBistochasticError(MatrixError):
    """A matrix that must be doubly stochastic is not.

    A :class:`pramkit.errors.MatrixError`, so callers that catch invalid
    matrices in general catch it too.

    Examples
    --------
    >>> try:
    ...     require_bistochastic([[0.9, 0.1], [0.5, 0.5]])
    ... except NotBistochasticError as err:
    ...     print(str(err).split(" sums")[0])
    column 1 of the matrix
    >>> issubclass(NotBistochasticError, MatrixError)
    True
    """


def _square(matrix: PramMatrix | ArrayLike) -> np.ndarray:
    """A finite, non-negative, square, non-empty float array."""
    m = matrix.matrix if isinstance(matrix, PramMatrix) else np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise MatrixError(f"the matrix must be square and non-empty, got shape {m.shape}")
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise MatrixError("the matrix must have finite, non-negative entries")
    return m


def require_bistochastic(matrix: PramMatrix | ArrayLike) -> np.ndarray:
    """The matrix as an array, after checking that rows and columns sum to 1.

    Section 2 of Ruiz and Domingo-Ferrer: P is bistochastic (doubly
    stochastic) when its entries are non-negative and every row and every
    column sums to 1.  The tolerance is that of :class:`pramkit.PramMatrix`
    (1e-9).

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (r, r)
        The transition matrix, rows the original categories.

    Returns
    -------
    numpy.ndarray
        The matrix as a float array (the stored array of a :class:`PramMatrix`).

    Raises
    ------
    NotBistochasticError
        If a row or a column does not sum to 1; the message names the worst one.
    MatrixError
        If the matrix is not square and non-empty, or has a negative or
        non-finite entry.

    Examples
    --------
    A circulant matrix (equation (6) of the paper) is bistochastic; a
    row-stochastic matrix whose columns do not sum to 1 is not:

    >>> circulant = require_bistochastic([[0.6, 0.3, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]])
    >>> circulant.shape, np.allclose(circulant.sum(axis=0), 1.0)
    ((3, 3), True)
    >>> require_bistochastic([[0.9, 0.1], [0.5, 0.5]])
    Traceback (most recent call last):
    ...
    pramkit.privacy.bistochastic.NotBistochasticError: column 1 of the matrix sums to ...
    """
    m = _square(matrix)
    for axis, what in ((1, "row"), (0, "column")):
        err = np.abs(m.sum(axis=axis) - 1.0)
        worst = int(np.argmax(err))
        if err[worst] > ROW_SUM_TOL:
            raise NotBistochasticError(
                f"{what} {worst} of the matrix sums to {m.sum(axis=axis)[worst]!r}, not 1: "
                "bistochastic privacy needs rows and columns summing to 1 "
                "(use a bistochastic design, or measure the matrix with epsilon instead)"
            )
    return m


def is_bistochastic(matrix: PramMatrix | ArrayLike) -> bool:
    """Whether rows and columns sum to 1 (within 1e-9).

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (r, r)
        The transition matrix.

    Returns
    -------
    bool
        True when :func:`require_bistochastic` accepts the matrix.

    Raises
    ------
    MatrixError
        If the matrix is not square and non-empty, or has a negative or
        non-finite entry (a matrix that is merely not bistochastic gives False).

    Examples
    --------
    Every symmetric row-stochastic matrix is bistochastic (its column sums
    are its row sums); keep-probability PRAM with unequal q is not:

    >>> is_bistochastic([[0.8, 0.2], [0.2, 0.8]])
    True
    >>> is_bistochastic([[0.9, 0.1], [0.5, 0.5]])
    False
    """
    try:
        require_bistochastic(matrix)
    except NotBistochasticError:
        return False
    return True


def entropy_rate(matrix: PramMatrix | ArrayLike, *, strict: bool = True) -> float:
    """Entropy rate H(P) in bits, equation (4), with uniform weights 1/r.

    ``H(P) = - sum_{u,v} (1/r) P[u, v] log2 P[u, v]``, the average entropy of
    the rows (``0 log 0 = 0``).

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (r, r)
        The transition matrix.
    strict : bool, default True
        First check that P is bistochastic (only then is the uniform
        distribution stationary and (4) the entropy rate).  With ``False``
        formula (4) is evaluated on any non-negative square matrix, e.g. the
        paper's super doubly stochastic matrices.

    Returns
    -------
    float
        H(P) in bits, between 0 (a permutation) and ``log2 r`` (perfect secrecy P*).

    Raises
    ------
    NotBistochasticError
        With ``strict=True``, if P is not bistochastic.
    MatrixError
        If the matrix is not square and non-empty, or has a negative or
        non-finite entry.

    Examples
    --------
    Perfect secrecy on four categories injects ``log2 4 = 2`` bits; the
    identity injects none:

    >>> entropy_rate(np.full((4, 4), 0.25))
    2.0
    >>> entropy_rate(np.eye(3)) == 0.0
    True
    >>> round(entropy_rate([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]), 4)
    0.9219
    """
    m = require_bistochastic(matrix) if strict else _square(matrix)
    return entropy(m.ravel()) / (m.shape[0] * math.log(2))


def _max_bits(size: int) -> float:
    if size < 2:
        raise MatrixError("bistochastic privacy needs at least two categories (log2 r = 0 for one)")
    return math.log2(size)


@dataclass(frozen=True)
class BistochasticPrivacy:
    """Univariate beta-bistochastic privacy of a matrix (Definition 1).

    beta: H(P) / log2 r, in [0, 1]; 1 is perfect secrecy
    entropy_rate_bits: H(P), equation (4), bits
    max_entropy_rate_bits: log2 r = H(P*), bits
    size: r
    strictly_positive: all entries > 0 (the ergodicity assumption of sec. 3.1);
        when false, beta is the limit of the paper's super doubly stochastic
        reading (zeros as gamma -> 0)
    epsilon: exact epsilon-DP of the same matrix (Shlomo and Skinner, sec. 4);
        infinite while a column has a zero

    Examples
    --------
    The tridiagonal matrix of equation (7) has zeros: beta is the limit of
    the super doubly stochastic reading, and epsilon is infinite.

    >>> bp = bistochastic_privacy([[0.7, 0.3, 0.0], [0.3, 0.4, 0.3], [0.0, 0.3, 0.7]])
    >>> 0 < bp.beta < 1, bp.strictly_positive, bp.epsilon
    (True, False, inf)
    """

    beta: float
    entropy_rate_bits: float
    max_entropy_rate_bits: float
    size: int
    strictly_positive: bool
    epsilon: float


def bistochastic_privacy(matrix: PramMatrix | ArrayLike) -> BistochasticPrivacy:
    """beta of a bistochastic matrix (Definition 1; Definition 3 when the matrix
    acts on a cross-classification, see :func:`joint_privacy`).

    ``beta = H(P) / log2 r``, with H(P) the entropy rate, equation (4).

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (r, r)
        A bistochastic matrix, r >= 2.

    Returns
    -------
    BistochasticPrivacy
        beta, the entropy rate and its maximum in bits, and the epsilon of the
        same matrix.

    Raises
    ------
    NotBistochasticError
        If P is not bistochastic.
    MatrixError
        If P has a single category (``log2 1 = 0``).

    Examples
    --------
    Randomized response on three categories at ``epsilon = log 8`` (keep
    with probability 0.8, equation (2) of the paper):

    >>> bp = bistochastic_privacy([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> round(bp.beta, 4), round(bp.entropy_rate_bits, 4), round(bp.max_entropy_rate_bits, 4)
    (0.5817, 0.9219, 1.585)
    >>> bp.beta == bp.entropy_rate_bits / bp.max_entropy_rate_bits
    True
    >>> math.isclose(bp.epsilon, math.log(8))       # largest column ratio 0.8 / 0.1
    True
    """
    m = require_bistochastic(matrix)
    h = entropy_rate(m, strict=False)
    top = _max_bits(m.shape[0])
    return BistochasticPrivacy(
        beta=min(max(h / top, 0.0), 1.0),
        entropy_rate_bits=h,
        max_entropy_rate_bits=top,
        size=m.shape[0],
        strictly_positive=bool(np.all(m > 0)),
        epsilon=matrix_epsilon(m),
    )


@dataclass(frozen=True)
class MultivariatePrivacy:
    """beta-bistochastic privacy of a data set (Definitions 2 and 3).

    definition: ``"conservative"`` (Definition 2) or ``"joint"`` (Definition 3)
    beta: injected bits over the maximum, in [0, 1]
    entropy_rate_bits: sum of H(P_k) (Definition 2) or H(P_J) (Definition 3), bits
    max_entropy_rate_bits: sum of log2 n_k = log2 prod n_k (Proposition 2), bits
    sizes: n_1, ..., n_K
    attributes: Definition 1 measures of each P_k (Definition 2 only)
    epsilon: the record's epsilon: sum of the P_k's (sequential composition,
        Definition 2) or that of P_J (Definition 3); infinite if any is

    Examples
    --------
    Perturbing a 3-category and a 2-category attribute separately: by
    Proposition 2 the maximum is ``log2 3 + log2 2 = log2 6`` bits.

    >>> rr3 = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
    >>> mv = conservative_privacy([rr3, [[0.5, 0.5], [0.5, 0.5]]])
    >>> mv.definition, mv.sizes, math.isclose(mv.max_entropy_rate_bits, math.log2(6))
    ('conservative', (3, 2), True)
    >>> [round(a.beta, 4) for a in mv.attributes], round(mv.beta, 4)
    ([0.5817, 1.0], 0.7435)
    """

    definition: str
    beta: float
    entropy_rate_bits: float
    max_entropy_rate_bits: float
    sizes: tuple[int, ...]
    attributes: tuple[BistochasticPrivacy, ...]
    epsilon: float


def conservative_privacy(matrices: Sequence[PramMatrix | ArrayLike]) -> MultivariatePrivacy:
    """Definition 2: attributes perturbed separately by bistochastic P_1..P_K.

    ``beta = sum_k H(P_k) / sum_k log2 n_k``: the bits injected over the
    maximum of Proposition 2.  It is a weighted mean of the attributes'
    Definition 1 betas (weights ``log2 n_k``), so it lies between the
    smallest and the largest of them.

    Parameters
    ----------
    matrices : sequence of PramMatrix or array-like
        One bistochastic matrix per attribute, each with at least two categories.

    Returns
    -------
    MultivariatePrivacy
        ``definition="conservative"``, with each attribute's
        :class:`BistochasticPrivacy` and the record's epsilon (the sum).

    Raises
    ------
    ParameterError
        If no matrix is given.
    MatrixError
        If a matrix has a single category.
    NotBistochasticError
        If a matrix is not bistochastic.

    Examples
    --------
    Randomized response at ``log 8`` on three categories and at ``log 3`` on two:

    >>> rr3 = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
    >>> mv = conservative_privacy([rr3, [[0.75, 0.25], [0.25, 0.75]]])
    >>> betas = [a.beta for a in mv.attributes]
    >>> round(mv.beta, 4), min(betas) <= mv.beta <= max(betas)
    (0.6705, True)
    >>> math.isclose(mv.epsilon, math.log(8) + math.log(3))     # sequential composition
    True
    """
    if len(matrices) == 0:
        raise ParameterError("give at least one matrix")
    parts = tuple(bistochastic_privacy(m) for m in matrices)
    h = math.fsum(a.entropy_rate_bits for a in parts)
    top = math.fsum(a.max_entropy_rate_bits for a in parts)
    eps = math.fsum(a.epsilon for a in parts) if all(math.isfinite(a.epsilon) for a in parts) else math.inf
    return MultivariatePrivacy("conservative", min(h / top, 1.0), h, top,
                               tuple(a.size for a in parts), parts, eps)


def joint_privacy(matrix: PramMatrix | ArrayLike, *, sizes: Sequence[int]) -> MultivariatePrivacy:
    """Definition 3: one bistochastic matrix on the cross-classification of
    attributes with ``sizes`` categories (rows in the order of ``numpy.kron``,
    last attribute fastest).

    ``beta = H(P_J) / log2 prod_k n_k``.

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (prod n_k, prod n_k)
        The bistochastic joint matrix P_J.
    sizes : sequence of int
        The numbers of categories n_1, ..., n_K of the attributes.

    Returns
    -------
    MultivariatePrivacy
        ``definition="joint"``, with no per-attribute measures and the epsilon of P_J.

    Raises
    ------
    ParameterError
        If ``sizes`` does not multiply to the size of the matrix.
    MatrixError
        If the matrix has a single category.
    NotBistochasticError
        If the matrix is not bistochastic.

    Examples
    --------
    Separate perturbation is the Kronecker product of the matrices, whose
    entropy rate is the sum of theirs: Definitions 2 and 3 then agree.

    >>> rr3 = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> rr2 = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> joint = joint_privacy(np.kron(rr3, rr2), sizes=[3, 2])
    >>> joint.definition, joint.sizes, round(joint.beta, 4)
    ('joint', (3, 2), 0.6705)
    >>> math.isclose(joint.beta, conservative_privacy([rr3, rr2]).beta)
    True
    """
    one = bistochastic_privacy(matrix)
    dims = tuple(int(n) for n in sizes)
    if any(n < 1 for n in dims) or math.prod(dims) != one.size:
        raise ParameterError(
            f"a joint matrix of size {one.size} does not match attributes with {list(dims)} categories "
            f"(their product is {math.prod(dims)})"
        )
    return MultivariatePrivacy("joint", one.beta, one.entropy_rate_bits, one.max_entropy_rate_bits,
                               dims, (), one.epsilon)


def as_distribution(p: ArrayLike, size: int | None = None) -> np.ndarray:
    """Proportions from counts or proportions: finite, non-negative, positive
    total, optionally of a given length; returned normalised to sum 1.

    Parameters
    ----------
    p : array-like, shape (r,)
        Counts or proportions of the categories.
    size : int, optional
        The number of categories p must have (that of a matrix).

    Returns
    -------
    numpy.ndarray
        ``p / sum(p)``, a float array summing to 1.

    Raises
    ------
    ParameterError
        If p is not a non-empty 1-D array of finite, non-negative numbers
        with a positive total, or does not have ``size`` entries.

    Examples
    --------
    >>> as_distribution([30, 10, 60]).tolist()
    [0.3, 0.1, 0.6]
    >>> as_distribution([1, 1], size=3)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the distribution has 2 entries but the matrix has 3 categories
    """
    try:
        pv = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"the distribution must be a list of counts or proportions, got {p!r}") from None
    if pv.ndim != 1 or pv.size == 0:
        raise ParameterError("the distribution must be a non-empty 1-D array of counts or proportions")
    if size is not None and pv.size != size:
        raise ParameterError(f"the distribution has {pv.size} entries but the matrix has {size} categories")
    if not np.all(np.isfinite(pv)) or np.any(pv < 0) or pv.sum() <= 0:
        raise ParameterError("counts or proportions must be finite, non-negative and not all zero")
    return pv / pv.sum()


def die_sides(p: ArrayLike) -> float:
    """``2^H(p)`` with H in bits: the sides of a fair die as uncertain as p (sec. 3.1).

    Equivalently ``e^H(p)`` with H in nats.

    Parameters
    ----------
    p : array-like, shape (r,)
        Counts or proportions (normalised by :func:`as_distribution`).

    Returns
    -------
    float
        A number of sides between 1 (p certain) and r (p uniform).

    Raises
    ------
    ParameterError
        If p is not a valid distribution (see :func:`as_distribution`).

    Examples
    --------
    >>> round(die_sides([25, 25, 25, 25]), 12), round(die_sides([0.5, 0.5, 0.0, 0.0]), 12)
    (4.0, 2.0)
    >>> 1.0 <= die_sides([0.7, 0.2, 0.1]) <= 3.0
    True
    """
    return float(math.exp(entropy(as_distribution(p))))


def majorizes(x: ArrayLike, y: ArrayLike, *, tol: float = MAJORIZATION_TOL) -> bool:
    """Whether distribution x majorizes y (x > y in the paper, Appendix A.3).

    Sorted in decreasing order, every partial sum of x is at least that of y
    and the totals are equal (both are normalised first).

    Parameters
    ----------
    x, y : array-like, shape (r,)
        Counts or proportions of the same number of categories.
    tol : float, default MAJORIZATION_TOL
        Slack allowed in each partial-sum comparison (rounding).

    Returns
    -------
    bool
        Whether x majorizes y (x is at least as concentrated as y).

    Raises
    ------
    ParameterError
        If x or y is not a valid distribution, or their lengths differ.

    Examples
    --------
    Theorem 2 (Hardy, Littlewood and Polya): a bistochastic release is
    majorized by the original distribution (here strictly: the converse fails):

    >>> pi = [0.7, 0.2, 0.1]
    >>> lam = np.array(pi) @ np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> majorizes(pi, lam), majorizes(lam, pi)
    (True, False)
    >>> majorizes([1, 0, 0], [5, 3, 2]) and majorizes([5, 3, 2], [1, 1, 1])
    True
    """
    xv, yv = as_distribution(x), as_distribution(y)
    if xv.size != yv.size:
        raise ParameterError(f"cannot compare distributions of {xv.size} and {yv.size} categories")
    cx = np.cumsum(np.sort(xv)[::-1])
    cy = np.cumsum(np.sort(yv)[::-1])
    return bool(np.all(cx >= cy - tol))


@dataclass(frozen=True)
class ReleasedDistribution:
    """What a release does to a distribution (Theorem 2, sec. 3.1).

    original: pi (normalised)
    released: lambda = P^T pi (Appendix A.1)
    entropy_original_bits, entropy_released_bits: H(pi), H(lambda), bits
    die_sides_original, die_sides_released: 2^H (sides of a fair die)
    majorized: pi majorizes lambda (always true when P is bistochastic)
    bistochastic: whether P is bistochastic

    Examples
    --------
    A row-stochastic matrix that is not bistochastic can make the release
    *more* concentrated than the original (here it sends everything towards
    the first category):

    >>> rd = released_distribution([0.5, 0.5], [[1.0, 0.0], [0.9, 0.1]])
    >>> rd.released.round(6).tolist(), rd.bistochastic, rd.majorized
    ([0.95, 0.05], False, False)
    >>> rd.entropy_released_bits < rd.entropy_original_bits
    True
    """

    original: np.ndarray
    released: np.ndarray
    entropy_original_bits: float
    entropy_released_bits: float
    die_sides_original: float
    die_sides_released: float
    majorized: bool
    bistochastic: bool


def released_distribution(p: ArrayLike, matrix: PramMatrix | ArrayLike) -> ReleasedDistribution:
    """The released distribution lambda = P^T pi and its uncertainty in bits.

    Appendix A.1 of Ruiz and Domingo-Ferrer (``lambda = P^T pi``) and Theorem
    2: for a bistochastic P, pi majorizes lambda, so ``H(lambda) >= H(pi)``
    and the attacker's die has at least as many sides after the release.

    Parameters
    ----------
    p : array-like, shape (r,)
        Original counts or proportions pi.
    matrix : PramMatrix or array-like, shape (r, r)
        A row-stochastic transition matrix (bistochastic or not).

    Returns
    -------
    ReleasedDistribution
        pi, lambda, their entropies in bits and die sides, and whether pi
        majorizes lambda.

    Raises
    ------
    MatrixError
        If the matrix is not a valid row-stochastic matrix.
    ParameterError
        If p is not a valid distribution of r categories.

    Examples
    --------
    >>> rd = released_distribution([70, 20, 10], [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> rd.released.round(6).tolist()
    [0.59, 0.24, 0.17]
    >>> rd.bistochastic, rd.majorized, rd.entropy_released_bits >= rd.entropy_original_bits
    (True, True, True)
    >>> round(rd.die_sides_original, 3), round(rd.die_sides_released, 3)
    (2.23, 2.599)
    """
    m = (matrix if isinstance(matrix, PramMatrix) else PramMatrix(matrix)).matrix
    pi = as_distribution(p, m.shape[0])
    lam = pi @ m
    return ReleasedDistribution(
        original=pi,
        released=lam,
        entropy_original_bits=entropy(pi) / math.log(2),
        entropy_released_bits=entropy(lam) / math.log(2),
        die_sides_original=die_sides(pi),
        die_sides_released=die_sides(lam),
        majorized=majorizes(pi, lam),
        bistochastic=is_bistochastic(m),
    )
