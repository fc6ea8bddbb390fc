"""Information measures of a distribution p pushed through a PRAM matrix M.

Mutual information is in nats (natural logarithms) throughout pramkit; divide
by ``log(2)`` for bits.  :func:`mutual_information_form8` is the O(S) closed
form of Ayed, Battiston and Camerlenghi (section 3.1) for matrices of form (8).

Probabilities whose doubles do not sum to 1.  ``1e-60`` and ``1`` are two
doubles whose sum rounds to 1, but their exact sum T is ``1 + 1e-60``.  The
information of the doubles themselves,
``J(p) = sum_x p_x sum_z M[x, z] log(M[x, z] / (p M)_z)``, is then
``T I(p/T) - T log T`` and can be negative (-5.4e-61 for ``p = (1e-60, 1)``),
although p stands for the distribution ``p/T``, whose information is not.
:func:`mutual_information` normalises p first.  The certificates of the
designs bound J of the doubles as given (what the exact checks in the tests
recompute); for p within 1e-9 of a distribution the two differ by less than
``|T - 1|`` nats plus a relative ``|T - 1|``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import xlogy

from pramkit.errors import ParameterError
from pramkit.validate import probabilities


def entropy(p: ArrayLike) -> float:
    """Shannon entropy H(p) in nats (``0 log 0 = 0``).

    ``H(p) = - sum_x p_x log p_x``; divide by ``log(2)`` for bits.  p is not
    normalised: pass probabilities (the entries of a row-stochastic matrix,
    flattened, give S times its mean row entropy).

    Parameters
    ----------
    p : array-like
        Probabilities, any shape (all entries are summed over).

    Returns
    -------
    float
        The entropy in nats, between 0 and ``log(size)`` for a distribution.

    Examples
    --------
    >>> entropy([0.5, 0.5]) == math.log(2)
    True
    >>> entropy([0.25] * 4) / math.log(2)        # bits: a fair four-sided die
    2.0
    >>> 0.0 < entropy([0.7, 0.2, 0.1]) < math.log(3)
    True
    """
    pv = np.asarray(p, dtype=float)
    return float(-xlogy(pv, pv).sum())


def mutual_information(p: ArrayLike, matrix: ArrayLike) -> float:
    """I(X; Z) in nats for X ~ p / sum(p) and Z | X = k ~ M[k, :]; O(S^2).

    I(X; Z) = sum_k p_k sum_j M[k, j] log(M[k, j] / r_j),  r = p M,

    with p divided by its sum (:func:`math.fsum`) first, so that the value is
    the information of a probability distribution (module docstring).  That
    is never negative, so a negative computed value is rounding, and 0 is
    nearer the truth: the result is clamped at 0, which never increases its
    error.

    Parameters
    ----------
    p : array-like, shape (S,)
        Probabilities (or counts) of the original categories.
    matrix : array-like, shape (S, S')
        ``M[k, j] = P(Z = j | X = k)``.

    Returns
    -------
    float
        I(X; Z) in nats, between 0 and ``H(p)``.

    Examples
    --------
    >>> mutual_information([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]]) == math.log(2)
    True
    >>> mutual_information([1e-60, 1.0], [[0.75, 0.25], [0.25, 0.75]]) >= 0.0
    True
    """
    pv = np.asarray(p, dtype=float)
    total = math.fsum(pv.ravel().tolist())
    if total > 0 and total != 1.0:
        pv = pv / total
    m = np.asarray(matrix, dtype=float)
    r = pv @ m
    joint = pv[:, None] * m
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(joint > 0, m / np.where(r > 0, r, 1.0)[None, :], 1.0)
    return float(max(xlogy(joint, ratio).sum(), 0.0))


def float_above(x: Fraction) -> float:
    """The smallest double not below the rational ``x`` (``float`` rounds to nearest; one step up
    when that was below).

    Parameters
    ----------
    x : fractions.Fraction
        The rational to round upward.

    Returns
    -------
    float
        The smallest double ``>= x``.

    Examples
    --------
    >>> float_above(Fraction(1, 3)) > 1 / 3 and float_above(Fraction(1, 2)) == 0.5
    True
    """
    out = float(x)
    return math.nextafter(out, math.inf) if Fraction(out) < x else out


def float_below(x: Fraction) -> float:
    """The largest double not above the rational ``x``.

    Parameters
    ----------
    x : fractions.Fraction
        The rational to round downward.

    Returns
    -------
    float
        The largest double ``<= x``.

    Examples
    --------
    >>> float_below(Fraction(1, 10)) < 0.1 and float_below(Fraction(-1, 2)) == -0.5
    True
    """
    return -float_above(-x)


def mutual_information_form8(p: ArrayLike, q: ArrayLike) -> float:
    """I(X; Z) in nats for a matrix of form (8), in O(S).

    Ayed, Battiston and Camerlenghi, section 3.1: with ``M[k, k] = q_k`` and
    ``M[k, j] = (1 - q_k) / (S - 1)`` off the diagonal,

        f(q) = sum_x p_x (q_x log q_x + (1 - q_x) log((1 - q_x) / (S - 1)))
               - sum_z m_z log m_z,

    where ``m_z = p_z q_z + sum_{k != z} p_k (1 - q_k) / (S - 1)`` is the
    released marginal, equation (9), computed in O(S) from
    ``W = sum_k p_k (1 - q_k) / (S - 1)`` as ``m_z = W + p_z (q_z - (1 - q_z) / (S - 1))``.

    Parameters
    ----------
    p : array-like, shape (S,)
        Probabilities of the S categories (non-negative, summing to 1 within 1e-9).
    q : array-like, shape (S,)
        Keep probabilities in [0, 1].

    Returns
    -------
    float
        I(X; Z) in nats (clipped at 0 from below).

    Raises
    ------
    ParameterError
        If p is not a probability vector, or q is not numeric, has another shape than p,
        has an entry outside [0, 1], or (S = 1) is not 1.

    Examples
    --------
    The O(S) form agrees with :func:`mutual_information` of the dense matrix:

    >>> p, q = [0.5, 0.3, 0.2], [0.8, 0.6, 0.7]
    >>> dense = [[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.15, 0.15, 0.7]]
    >>> math.isclose(mutual_information_form8(p, q), mutual_information(p, dense), rel_tol=1e-12)
    True

    Keeping every category releases X (``I = H(p)``); ``q = 1/S`` releases nothing:

    >>> math.isclose(mutual_information_form8(p, [1.0, 1.0, 1.0]), entropy(p))
    True
    >>> mutual_information_form8(p, [1 / 3] * 3) < 1e-15
    True
    """
    pv, qv = _check_form8(p, q)
    return float(form8_objective(pv, qv))


def form8_row_terms(q: ArrayLike, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per keep probability q of a form (8) row (S categories, S >= 2):
    ``w = (1 - q)/(S - 1)`` (each off-diagonal entry), ``sigma = q - w``
    (so that the released mass of category z is ``W + p_z sigma(q_z)``) and
    ``h = q log q + (1 - q) log w`` (the row's ``sum_j M log M``).

    Parameters
    ----------
    q : array-like
        Keep probabilities in [0, 1], any shape.
    s : int
        The number of categories S >= 2.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        w, sigma and h, each in the shape of q.

    Examples
    --------
    >>> w, sigma, h = form8_row_terms([0.8, 0.6], 3)
    >>> w.round(12).tolist(), sigma.round(12).tolist()
    ([0.1, 0.2], [0.7, 0.4])
    >>> math.isclose(h[0], 0.8 * math.log(0.8) + 2 * 0.1 * math.log(0.1))    # q + (S - 1) w = 1
    True
    """
    qv = np.asarray(q, dtype=float)
    w = (1.0 - qv) / (s - 1)
    return w, qv - w, xlogy(qv, qv) + xlogy(1.0 - qv, w)


def form8_objective(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """f(q) of :func:`mutual_information_form8` without input checks, vectorised
    over the leading axes of ``q`` (shape ``(..., S)``); clipped at 0 from below.

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        Probabilities of the categories (not checked).
    q : numpy.ndarray, shape (..., S)
        Keep probabilities, one design per leading index (not checked).

    Returns
    -------
    numpy.ndarray, shape (...)
        I(X; Z) in nats of each design (zeros for S = 1).

    Examples
    --------
    Three designs at once: no information, the truth, and one in between:

    >>> p = np.array([0.5, 0.3, 0.2])
    >>> f = form8_objective(p, np.array([[1 / 3] * 3, [1.0, 1.0, 1.0], [0.8, 0.6, 0.7]]))
    >>> f.shape, bool(f[0] < 1e-15), math.isclose(f[1], entropy(p)), bool(0 < f[2] < f[1])
    ((3,), True, True, True)
    """
    s = p.shape[-1]
    if s == 1:
        return np.zeros(q.shape[:-1])
    off, sigma, h = form8_row_terms(q, s)
    w = (p * off).sum(axis=-1, keepdims=True)
    m = w + p * sigma
    m = np.maximum(m, 0.0)  # rounding only: m is a convex combination of entries of M
    conditional = (p * h).sum(axis=-1)
    return np.maximum(conditional - xlogy(m, m).sum(axis=-1), 0.0)


def _check_form8(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    pv = probabilities(p)
    try:
        qv = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"q must be a list of numbers, got {q!r}") from None
    if qv.shape != pv.shape:
        raise ParameterError(f"q has shape {qv.shape} but p has shape {pv.shape}; give one q per category")
    if not np.all(np.isfinite(qv)) or np.any(qv < 0) or np.any(qv > 1):
        raise ParameterError(f"keep probabilities q must lie in [0, 1], got {qv.tolist()}")
    if pv.size == 1 and qv[0] != 1:
        raise ParameterError("a single category can only be kept (q = 1)")
    return pv, qv
