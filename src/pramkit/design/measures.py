"""One scale for every designed matrix: epsilon, beta, information, flags (:func:`measure`).

:func:`measure` puts any matrix on one scale: its exact epsilon (Shlomo and
Skinner 2012, section 4), its beta when bistochastic (Ruiz and Domingo-Ferrer,
Definition 1), the mutual information it keeps for p (nats), its smallest
diagonal entry, whether it is truthful, bistochastic, and invariant (p M = p).
A matrix of form (8) stored compactly (:meth:`pramkit.PramMatrix.form8`) is
measured in O(S) from its diagonal q and off-diagonal entries w, without its
S x S array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pramkit.information import mutual_information, mutual_information_form8
from pramkit.matrix import ROW_SUM_TOL, PramMatrix
from pramkit.privacy.bistochastic import as_distribution, bistochastic_privacy, is_bistochastic


@dataclass(frozen=True)
class DesignMeasures:
    """What a PRAM matrix guarantees and keeps, on one scale (:func:`measure`).

    Attributes
    ----------
    epsilon : float
        Exact epsilon-DP per record (inf when a column mixes zeros and positives).
    beta : float or None
        beta-bistochastic privacy, H(P) / log2 r (None if not bistochastic).
    entropy_rate_bits : float or None
        H(P), equation (4) of Ruiz and Domingo-Ferrer, bits (None if not bistochastic).
    mutual_information_nats : float or None
        I(X; Z) for the given p, nats (None without p).
    min_diagonal : float
        Smallest keep probability M[k, k].
    truthful : bool
        Every M[k, k] is the largest entry of its row.
    bistochastic : bool
        Rows and columns sum to 1.
    invariant : bool or None
        p M = p within 1e-9 (None without p).

    Examples
    --------
    Two k-anonymous blocks of two categories: one bit of the two of perfect
    secrecy (beta = 1/2), but no finite epsilon:

    >>> from pramkit.design.bistochastic.families import k_anonymity
    >>> measure(k_anonymity("abcd", 2))   # doctest: +NORMALIZE_WHITESPACE
    DesignMeasures(epsilon=inf, beta=0.5, entropy_rate_bits=1.0, mutual_information_nats=None,
                   min_diagonal=0.5, truthful=True, bistochastic=True, invariant=None)
    """

    epsilon: float
    beta: float | None
    entropy_rate_bits: float | None
    mutual_information_nats: float | None
    min_diagonal: float
    truthful: bool
    bistochastic: bool
    invariant: bool | None


def measure(matrix: PramMatrix, p: ArrayLike | None = None) -> DesignMeasures:
    """Epsilon, beta, mutual information and the rest for one matrix (and proportions p).

    A compact matrix of form (8) is measured in O(S) (:func:`form8_entropy_rate_bits`,
    :func:`pramkit.information.mutual_information_form8`), one stored by its parameters (truncated
    geometric, exponential) row by row in O(S) memory (:func:`_measure_by_rows`); any other from
    its dense array.

    Parameters
    ----------
    matrix : PramMatrix
        The design.
    p : array_like, shape (S,), optional
        Counts or proportions of the categories, for I(X; Z) and invariance.

    Returns
    -------
    DesignMeasures
        The matrix's epsilon (Shlomo and Skinner 2012, section 4), beta and
        H(P) when bistochastic (Ruiz and Domingo-Ferrer, Definition 1 and
        equation (4)), I(X; Z) and invariance for p.

    Raises
    ------
    PramkitError
        If p is not a distribution of the matrix's S categories.

    Examples
    --------
    Randomized response is bistochastic but not invariant for a p that is
    not uniform; the invariant PRAM built from it is invariant but not
    bistochastic:

    >>> from pramkit.design.classic import invariant_pram, randomized_response
    >>> p = [0.5, 0.3, 0.2]
    >>> rr = measure(randomized_response("abc", math.log(2)), p)
    >>> rr.epsilon <= math.log(2), round(rr.entropy_rate_bits, 12), round(rr.beta, 4), rr.bistochastic, rr.invariant
    (True, 1.5, 0.9464, True, False)
    >>> inv = measure(invariant_pram(p, randomized_response("abc", math.log(2))), p)
    >>> inv.bistochastic, inv.invariant, inv.beta
    (False, True, None)
    """
    pv = None if p is None else as_distribution(p, matrix.size)
    if matrix.is_compact:
        return _measure_form8(matrix, pv)
    if matrix.geometric_rate is not None or matrix.exponential_rate is not None:
        return _measure_by_rows(matrix, pv)
    bi = is_bistochastic(matrix)
    priv = bistochastic_privacy(matrix) if bi and matrix.size >= 2 else None
    return DesignMeasures(
        epsilon=matrix.epsilon,
        beta=None if priv is None else priv.beta,
        entropy_rate_bits=None if priv is None else priv.entropy_rate_bits,
        mutual_information_nats=None if pv is None else mutual_information(pv, matrix.matrix),
        min_diagonal=matrix.min_diagonal,
        truthful=matrix.is_truthful,
        bistochastic=bi,
        invariant=None if pv is None else bool(np.abs(pv @ matrix.matrix - pv).max() <= ROW_SUM_TOL),
    )


def form8_entropy_rate_bits(q: ArrayLike, w: ArrayLike) -> float:
    """H(P) of equation (4) (Ruiz and Domingo-Ferrer) for the form (8) matrix with diagonal q and
    off-diagonal entries w, in O(S): the average over rows of ``-(q_k log2 q_k + (S - 1) w_k log2 w_k)``
    (``0 log 0 = 0``).

    Parameters
    ----------
    q, w : array_like, shape (S,)
        Diagonal and off-diagonal entries.

    Returns
    -------
    float
        The entropy rate in bits.

    Examples
    --------
    Randomized response keeping with 0.8 on three categories (0.1 elsewhere):

    >>> round(form8_entropy_rate_bits([0.8] * 3, [0.1] * 3), 4)
    0.9219
    """
    qv, wv = np.asarray(q, dtype=float), np.asarray(w, dtype=float)
    s = qv.size
    return float(np.sum(_bits(qv) + (s - 1) * _bits(wv)) / s)


def _bits(x: np.ndarray) -> np.ndarray:
    """``-x log2 x`` entrywise, 0 at 0."""
    out = np.zeros_like(x)
    pos = x > 0
    out[pos] = -x[pos] * np.log2(x[pos])
    return out


def _measure_form8(matrix: PramMatrix, pv: np.ndarray | None) -> DesignMeasures:
    """:func:`measure` of a compact form (8) matrix, in O(S)."""
    q, w = np.asarray(matrix.diagonal), np.asarray(matrix.form8_w)
    bi = matrix.is_bistochastic
    h = form8_entropy_rate_bits(q, w) if bi and matrix.size >= 2 else None
    invariant = None
    if pv is not None:   # (p M)_j = p_j q_j + sum_{k != j} p_k w_k
        released = pv * q + (math.fsum((pv * w).tolist()) - pv * w)
        invariant = bool(np.abs(released - pv).max() <= ROW_SUM_TOL)
    return DesignMeasures(
        epsilon=matrix.epsilon,
        beta=None if h is None else min(max(h / math.log2(matrix.size), 0.0), 1.0),
        entropy_rate_bits=h,
        mutual_information_nats=None if pv is None else mutual_information_form8(pv, q),
        min_diagonal=matrix.min_diagonal,
        truthful=matrix.is_truthful,
        bistochastic=bi,
        invariant=invariant,
    )


def _measure_by_rows(matrix: PramMatrix, pv: np.ndarray | None) -> DesignMeasures:
    """:func:`measure` of a matrix stored by its parameters (truncated geometric, exponential), from
    its rows' laws (:func:`_row_laws`, O(S) memory)."""
    released, rows = _row_laws(np.full(matrix.size, 1.0 / matrix.size) if pv is None else pv, matrix)
    bi = matrix.is_bistochastic
    h = float(rows.mean()) / math.log(2) if bi and matrix.size >= 2 else None
    return DesignMeasures(
        epsilon=matrix.epsilon,
        beta=None if h is None else min(max(h / math.log2(matrix.size), 0.0), 1.0),
        entropy_rate_bits=h,
        mutual_information_nats=None if pv is None else max(_entropy(released) - float(pv @ rows), 0.0),
        min_diagonal=matrix.min_diagonal,
        truthful=matrix.is_truthful,
        bistochastic=bi,
        invariant=None if pv is None else bool(np.abs(released - pv).max() <= ROW_SUM_TOL),
    )


def information_kept(p: ArrayLike, matrix: PramMatrix, *, limit: int | None = None) -> float | None:
    """I(X; Z) in nats for proportions p, without densifying a compact matrix: O(S) for form (8) and
    the truncated geometric mechanism, block by block for a matrix stored by blocks
    (``I = H(block) + sum_b P(b) I(X; Z | b)``: the released value tells its block), row by row
    (O(S) memory, O(S^2) time) for an exponential mechanism.

    Parameters
    ----------
    p : array_like, shape (S,)
        Counts or proportions of the categories.
    matrix : PramMatrix
        The matrix, in any form.
    limit : int, optional
        Largest exponential mechanism whose O(S^2)-time figure is computed (``None`` beyond).

    Returns
    -------
    float or None

    Examples
    --------
    Two classes of two categories, uniform within: the released value tells the class and
    nothing more, so I(X; Z) is the entropy of the classes:

    >>> from pramkit.design.bistochastic.families import k_anonymity
    >>> round(information_kept([0.1, 0.2, 0.3, 0.4], k_anonymity("abcd", 2)), 12) == round(
    ...     -(0.3 * math.log(0.3) + 0.7 * math.log(0.7)), 12)
    True
    """
    if matrix.form == "dense":
        return mutual_information(p, matrix.matrix)
    if matrix.is_compact:
        q = matrix.form8_q
        assert q is not None  # a compact matrix has form (8)
        return mutual_information_form8(p, q)
    if matrix.exponential_rate is not None and limit is not None and matrix.size > limit:
        return None
    pv = np.asarray(p, dtype=float) / np.sum(p)
    if matrix.blocks is None:
        released, rows = _row_laws(pv, matrix)
        return max(_entropy(released) - float(pv @ rows), 0.0)
    parts = [(float(pv[idx].sum()), idx, part) for idx, part in matrix.blocks]
    inside = 0.0
    for pb, idx, part in parts:
        kept = information_kept(pv[idx] / pb, part, limit=limit) if pb > 0 else 0.0
        if kept is None:
            return None
        inside += pb * kept
    return _entropy(np.array([pb for pb, _, _ in parts])) + inside


def information_by_value(p: ArrayLike, matrix: PramMatrix, values: ArrayLike, *,
                         limit: int | None = None) -> float | None:
    """I(X; Z) of a variable X whose matrix acts on cells that add columns to it (its strata): the
    information the released value keeps on the variable itself, the strata mixed.

    A stratified matrix maps a cell ``(s, x)`` to a cell ``(s, z)``; its information on the cells,
    :func:`information_kept`, is I((S, X); (S, Z)) = H(S) + I(X; Z | S), which counts the entropy
    of the strata, released as they are.  The variable's own information adds the cells of one
    value: with ``P(s, x)`` the cells' proportions, ``P(x, z) = sum_s P(s, x) M_s[x, z]`` and
    ``I(X; Z) = sum P(x, z) log(P(x, z) / (P(x) P(z)))``, at most log of the number of values.

    Parameters
    ----------
    p : array_like, shape (S,)
        Counts or proportions of the matrix's cells.
    matrix : PramMatrix
        The matrix over the cells (stored by blocks or not).
    values : array_like of int, shape (S,)
        Each cell's value of the variable, numbered from 0 (cells of one value in different strata
        share it).
    limit : int, optional
        Largest number of values, and largest square root of the work (the sum of the squared
        block sizes), measured; ``None`` beyond it.

    Returns
    -------
    float or None
        Nats.

    Examples
    --------
    Two strata of equal weight; the first keeps its two values, the second swaps them.  Each
    stratum keeps all it has, but the value released says nothing of the value itself:

    >>> cells = [("s1", "a"), ("s1", "b"), ("s2", "a"), ("s2", "b")]
    >>> keep = PramMatrix([[1.0, 0.0], [0.0, 1.0]], cells[:2])
    >>> swap = PramMatrix([[0.0, 1.0], [1.0, 0.0]], cells[2:])
    >>> m = PramMatrix.block_diagonal([keep, swap], cells)
    >>> round(information_kept([1, 1, 1, 1], m), 12) == round(2 * math.log(2), 12)  # I((S, X); (S, Z))
    True
    >>> information_by_value([1, 1, 1, 1], m, [0, 1, 0, 1])
    0.0
    >>> information_by_value([1, 1, 0, 0], m, [0, 1, 0, 1]) == math.log(2)        # one stratum: all of X
    True
    """
    pv = np.asarray(p, dtype=float).ravel()
    pv = pv / pv.sum() if pv.sum() > 0 else np.full(pv.size, 1.0 / pv.size)
    codes = np.asarray(values, dtype=np.intp).ravel()
    n_values = int(codes.max()) + 1 if codes.size else 0
    parts = matrix.blocks if matrix.blocks is not None else ((np.arange(matrix.size), matrix),)
    if limit is not None and (n_values > limit or sum(idx.size ** 2 for idx, _ in parts) > limit ** 2):
        return None
    joint = np.zeros((n_values, n_values))
    for idx, part in parts:
        if pv[idx].sum() > 0:
            np.add.at(joint, (codes[idx][:, None], codes[idx][None, :]), pv[idx][:, None] * part.matrix)
    marginal = joint.sum(axis=1)
    channel = np.divide(joint, marginal[:, None], out=np.zeros_like(joint), where=marginal[:, None] > 0)
    return mutual_information(marginal, channel)


def _entropy(r: np.ndarray) -> float:
    """Shannon entropy in nats of a distribution."""
    from scipy.special import entr

    return float(np.sum(entr(r)))


def _row_laws(p: np.ndarray, m: PramMatrix) -> tuple[np.ndarray, np.ndarray]:
    """``p M`` (the released law) and each row's entropy (nats) of a matrix stored by its parameters,
    in O(S) memory: closed forms for the truncated geometric mechanism (O(S) time), rows in passes
    of :data:`pramkit.matrix.ROWS_PER_PASS` otherwise."""
    if m.geometric_rate is not None:
        return _geometric_laws(p, m.geometric_rate, m.size)
    from scipy.special import entr

    from pramkit.matrix import ROWS_PER_PASS

    released, rows = np.zeros(m.size), np.empty(m.size)
    for start in range(0, m.size, ROWS_PER_PASS):
        idx = np.arange(start, min(start + ROWS_PER_PASS, m.size))
        block = m.exponential_rows(idx)
        released += p[idx] @ block
        rows[idx] = entr(block).sum(axis=1)
    return released, rows


def _geometric_laws(p: np.ndarray, rate: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``p M`` and the row entropies of the truncated geometric mechanism in O(S) (a = e^-rate,
    inner entries ``c a^|z-x|``, ends ``e a^x`` and ``e a^(S-1-x)``, docs/perturbation.md)."""
    from scipy.signal import lfilter

    a = np.exp(-rate)
    c, e = np.tanh(rate / 2.0), 1.0 / (1.0 + a)
    left = lfilter([1.0], [1.0, -a], p)                   # sum over x <= z of p_x a^(z - x)
    right = lfilter([1.0], [1.0, -a], p[::-1])[::-1]      # sum over x >= z of p_x a^(x - z)
    released = c * (left + right - p)
    released[0], released[-1] = e * right[0], e * left[-1]
    k = np.arange(n, dtype=float)
    powers = np.exp(-rate * k)
    power_sum = np.concatenate([[0.0], np.cumsum(powers[1:])])      # sum of a^k, k = 1 .. m
    moment_sum = np.concatenate([[0.0], np.cumsum(k[1:] * powers[1:])])  # sum of k a^k, k = 1 .. m
    x = np.arange(n)
    lo, hi = np.maximum(x - 1, 0), np.maximum(n - 2 - x, 0)
    centre = ((x >= 1) & (x <= n - 2)).astype(float)
    s0 = power_sum[lo] + power_sum[hi] + centre
    s1 = moment_sum[lo] + moment_sum[hi]
    rows = -c * (math.log(c) * s0 - rate * s1)
    for d in (k, (n - 1) - k):                             # the two ends: e a^d
        t = e * np.exp(-rate * d)
        rows -= t * (math.log(e) - rate * d)
    return released, rows
