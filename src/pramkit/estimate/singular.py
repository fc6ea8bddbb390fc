"""The identifiable part of a table whose transition matrix is singular.

When a variable's matrix M is singular the original table is not
identifiable (:mod:`pramkit.estimate.identifiability`): the likelihood of the
released counts depends on the original proportions p only through
``lam = M^T p``, and EM returns one maximiser among many.  What *is*
identifiable is every linear quantity ``g . p`` with g in the column space of
the table's matrix ``⊗_a M_a`` (identity on unperturbed axes): its maximum-
likelihood estimate is the same at every maximiser, because
``g = (⊗ M_a) h`` gives ``g . p = h . lam`` and the fitted ``lam`` is unique.
In particular a cell is identifiable iff each of its perturbed categories is,
and the total of a group of categories that cannot be told apart is.

Standard errors of identifiable quantities.  Write each perturbed axis's
matrix through its singular value decomposition as ``M_a = Q_a R_a`` with
``Q_a = U_r diag(s_r)`` (full column rank) and ``R_a = V_r^T`` (orthonormal
rows), r the rank.  Then ``lam = R^T theta`` with ``theta = Q^T p``
(``Q = ⊗ Q_a``, ``R = ⊗ R_a``): theta is an identifiable parametrisation of
the released distribution, with expected Fisher information per record

    G = R diag(1 / lam) R^T                                          (S1)

which is invertible.  An identifiable ``g = Q c`` has ``g . p = c . theta``
and, since ``G theta = R 1`` and ``1 = Q R 1`` (so the constraint
``sum p = 1`` reads ``(R 1) . theta = 1``), the constrained inverse
information gives

    Var(g . t_hat) = n c^T G^{-1} c - (g . t)^2 / n                  (S2, multinomial)
    Var(g . t_hat) = n c^T G^{-1} c - sum_k t_k g_k^2                 (S3, PRAM only)

for the counts ``t = n p``, with ``c = Q^+ g``.  When M is invertible
(``r = S``) these are the covariances of :mod:`pramkit.estimate.covariance`
at the fitted distribution, as for the MLE there.  On an unperturbed axis R
is the identity and G is block diagonal, one block per combination of the
unperturbed categories; the blocks are formed and inverted densely, which
bounds the size of table this module handles (:data:`MAX_WORK`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from pramkit.estimate.axes import contract
from pramkit.estimate.identifiability import (
    IdentifiabilityResult,
    identifiability,
    numerical_rank,
)
from pramkit.matrix import PramMatrix

#: Largest ``K_Y r^2 K_P`` (unperturbed cells x squared rank x perturbed cells)
#: for which the standard errors of a singular table are computed.
MAX_WORK = 2e9
#: Entries of the temporary arrays of one batch of blocks in the products of (S1) and (S2) (32 MiB).
BATCH_ENTRIES = 1 << 22
#: Share gradients whose variances are computed together (their stack holds this many tables).
SHARE_BATCH = 256
#: Shares within by-groups of a singular table get standard errors (cell by cell) up to this many cells.
MAX_SHARE_CELLS = 5000
#: Fitted released probabilities are floored at this in (S1) (an MLE on the boundary).
LAMBDA_FLOOR = 1e-12
#: A gradient is identifiable when its component outside the column space is below this (relative).
RANGE_TOL = 1e-8


def _kron(factors: Sequence[np.ndarray]) -> np.ndarray:
    return reduce(np.kron, factors, np.ones((1, 1)))


def _batches(blocks: int, entries: int) -> Iterator[slice]:
    """Slices of ``range(blocks)``, each of as many blocks as keep ``entries`` per block within
    :data:`BATCH_ENTRIES` (one block at least)."""
    step = max(1, BATCH_ENTRIES // max(entries, 1))
    return (slice(s, min(s + step, blocks)) for s in range(0, blocks, step))


def _information_blocks(r: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``G_y = R diag(w[:, y]) R^T`` for each column y of ``w``: (S1) by matrix products, a batch of blocks
    at a time.

    Examples
    --------
    >>> r, w = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]]), np.array([[1.0, 2.0], [0.5, 1.0], [2.0, 0.0]])
    >>> _information_blocks(r, w).tolist()
    [[[3.0, 1.0], [1.0, 2.5]], [[6.0, 2.0], [2.0, 1.0]]]
    """
    out = np.empty((w.shape[1], r.shape[0], r.shape[0]))
    for y in _batches(w.shape[1], r.size):
        np.matmul(r[None, :, :] * w[:, y].T[:, None, :], r.T, out=out[y])
    return out


@dataclass(frozen=True)
class _AxisFactors:
    """``Q^+ = diag(1/s_r) U_r^T``, ``R = V_r^T`` and the projector ``U_r U_r^T`` of one matrix."""

    q_pinv: np.ndarray
    r: np.ndarray
    projector: np.ndarray

    @classmethod
    def of(cls, m: np.ndarray) -> _AxisFactors:
        u, s, vt = np.linalg.svd(m)
        k = numerical_rank(s, m.shape[0])
        return cls(u[:, :k].T / s[:k, None], vt[:k], u[:, :k] @ u[:, :k].T)


@dataclass(frozen=True, eq=False)
class Linearisation:
    """The MLE of a singular table as a linear function of the released counts, in identifiable directions.

    With the released counts ``u`` (weighted or not) and the fitted ``Lam = M^T t_hat`` (``M`` the
    table's matrix, ``M = Q R`` as in the module docstring, ``theta = Q^T t``), the likelihood
    equations ``R diag(1 / Lam) u = R 1`` linearised at the fit give
    ``theta_hat - theta = G^{-1} R diag(1 / Lam) (u - E u)`` with ``G = R diag(1 / Lam) R^T``; an
    identifiable ``g = Q c`` (``c = Q^+ g``) has ``g . t_hat = c . theta_hat``, so

        g . t_hat - g . t = (influence^T g) . (u - E u),   influence = (Q^+)^T G^{-1} R diag(1 / Lam),

    whatever the covariance of ``u`` (a sampling design's, PRAM's): the variance of ``g . t_hat`` is
    ``g^T influence Cov(u) influence^T g``.  Under the multinomial covariance of ``u`` this is (S2);
    for an invertible M, ``influence = (M^T)^{-1}``.

    Attributes
    ----------
    influence : numpy.ndarray
        ``(C, C)``: the matrix above, over the table's flat (C-order) cells.
    projector : numpy.ndarray
        ``(C, C)``: the orthogonal projector onto the column space of M (the identifiable gradients).
    released_inverse : numpy.ndarray
        ``(C, C)``: ``(M^T)^+``; ``(M^T)^+ s`` estimates without bias every identifiable linear
        function of ``q`` from ``s`` of mean ``M^T q``.
    pram_identifiable : bool
        Whether the PRAM covariance of the released counts, ``sum_k q_k (diag(m_k) - m_k^T m_k)``,
        is a function of the identifiable part of ``q`` alone: every null vector v of ``M_a^T``
        has ``sum_k v_k m_k^T m_k = 0`` (so for categories that cannot be told apart because their
        rows are identical, the case of the designs pramkit makes).

    Examples
    --------
    Categories a and b have identical rows.  Their total and the count of c are identifiable,
    a alone is not; the total of all cells is the released total exactly (influence 1):

    >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
    >>> lin = Linearisation.of([m], m.T @ np.array([30.0, 30.0, 40.0]))
    >>> (lin.influence.T @ np.ones(3)).round(12).tolist(), lin.pram_identifiable
    ([1.0, 1.0, 1.0], True)
    >>> [bool(x) for x in lin.identifiable(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))]
    [True, True, False]

    Under the multinomial covariance of the released counts it gives (S2):

    >>> lam = m.T @ np.array([30.0, 30.0, 40.0])
    >>> d = lin.influence.T @ np.array([1.0, 1.0, 0.0])
    >>> round(float(d @ (np.diag(lam) - np.outer(lam, lam) / 100) @ d), 6)
    66.415094
    """

    influence: np.ndarray
    projector: np.ndarray
    released_inverse: np.ndarray
    pram_identifiable: bool

    @classmethod
    def of(cls, mats: Sequence[np.ndarray | None], fitted: np.ndarray) -> Linearisation:
        """The linearisation at the fitted released counts ``fitted = M^T t_hat`` (a table).

        Parameters
        ----------
        mats : sequence of numpy.ndarray or None
            Per axis its matrix, ``None`` for an unperturbed axis.
        fitted : numpy.ndarray
            The fitted released counts, in the shape of the table (floored at
            :data:`LAMBDA_FLOOR` times their total: an MLE on the boundary).

        Returns
        -------
        Linearisation
            Dense ``(C, C)`` matrices: for tables of a few thousand cells.
        """
        shape = fitted.shape
        factors = [_AxisFactors.of(m) if m is not None else None for m in mats]
        eye = [np.eye(s) for s in shape]
        q_pinv = _kron([e if f is None else f.q_pinv for f, e in zip(factors, eye)])
        r = _kron([e if f is None else f.r for f, e in zip(factors, eye)])
        lam = np.maximum(fitted.ravel(), LAMBDA_FLOOR * float(fitted.sum()))
        g = (r / lam) @ r.T
        influence = q_pinv.T @ np.linalg.solve(g, r / lam)
        return cls(influence, _kron([e if f is None else f.projector for f, e in zip(factors, eye)]),
                   q_pinv.T @ r, all(m is None or _pram_identifiable(m) for m in mats))

    def identifiable(self, gradients: np.ndarray) -> np.ndarray:
        """Per row of ``gradients`` (m, C): whether it lies in the column space (up to :data:`RANGE_TOL`)."""
        g = np.atleast_2d(np.asarray(gradients, dtype=float))
        out = np.linalg.norm(g - g @ self.projector, axis=1)
        return out <= RANGE_TOL * np.maximum(np.linalg.norm(g, axis=1), 1e-300)


def _pram_identifiable(m: np.ndarray) -> bool:
    """Whether ``sum_k v_k m_k^T m_k = 0`` for every null vector v of ``m^T`` (:class:`Linearisation`)."""
    u, s, _ = np.linalg.svd(m)
    scale = float(np.sum(m * m))
    return all(float(np.linalg.norm((m.T * v) @ m)) <= RANGE_TOL * scale
               for v in u[:, numerical_rank(s, m.shape[0]):].T)


class IdentifiableCovariance:
    """Covariance of the MLE of identifiable linear quantities, (S2)/(S3) of the module docstring.

    Parameters
    ----------
    mats : per axis the matrix as an array, ``None`` for an unperturbed axis
    fitted : the fitted released proportions ``lam = M^T p_hat`` (a table)
    counts : the estimated counts ``t = n p_hat``
    n : number of records
    kind : ``"multinomial"`` or ``"pram"``

    ``variance(g)`` is NaN for a gradient outside the column space (not
    identifiable) and for tables too large for the dense blocks (``available``).

    Examples
    --------
    Categories a and b have identical rows: only their total is identifiable.
    With 100 records the total of a and b and the count of c add up to n, so
    under the multinomial covariance (S2) they have the same variance:

    >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
    >>> p = np.array([0.3, 0.3, 0.4])
    >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
    >>> total_ab, count_c = cov.variance(np.array([1.0, 1.0, 0.0])), cov.variance(np.array([0.0, 0.0, 1.0]))
    >>> round(total_ab, 6), math.isclose(total_ab, count_c)
    (66.415094, True)
    >>> cov.variance(np.array([1.0, 0.0, 0.0]))          # a alone: not identifiable
    nan

    For an invertible matrix (S2) is the covariance of
    :class:`pramkit.estimate.covariance.CountCovariance` at the fitted distribution:

    >>> from pramkit.estimate.covariance import CountCovariance
    >>> m2, p2 = np.array([[0.8, 0.2], [0.3, 0.7]]), np.array([0.6, 0.4])
    >>> ident = IdentifiableCovariance([m2], m2.T @ p2, 100 * p2, 100, "multinomial")
    >>> dense = CountCovariance((np.linalg.inv(m2),), 100 * (m2.T @ p2), 100 * p2, 100, "multinomial")
    >>> np.allclose(ident.cell_variances(np.ones(2, dtype=bool)), dense.cell_variances())
    True
    """

    def __init__(self, mats: Sequence[np.ndarray | None], fitted: np.ndarray, counts: np.ndarray,
                 n: float, kind: str) -> None:
        self.shape = counts.shape
        self.counts = counts
        self.n = n
        self.kind = kind
        self.factors = [None if m is None else _AxisFactors.of(m) for m in mats]
        self.perturbed = [a for a, f in enumerate(self.factors) if f is not None]
        self.other = [a for a, f in enumerate(self.factors) if f is None]
        self.perm = self.perturbed + self.other
        self.k_p = math.prod(self.shape[a] for a in self.perturbed)
        self.k_y = math.prod(self.shape[a] for a in self.other)
        perturbed = [f for f in self.factors if f is not None]  # the factors of self.perturbed, in order
        self.r_p = math.prod(f.r.shape[0] for f in perturbed)
        self.available = self.k_y * self.r_p ** 2 * self.k_p <= MAX_WORK
        if not self.available:
            return
        r = _kron([f.r for f in perturbed])
        lam = np.maximum(self._to_blocks(fitted), LAMBDA_FLOOR)
        self.g_inv = np.linalg.inv(_information_blocks(r, 1.0 / lam))
        self.q_pinv = _kron([f.q_pinv for f in perturbed])

    # -- reshaping between the table and (perturbed cells, unperturbed cells) ----------
    def _to_blocks(self, table: np.ndarray) -> np.ndarray:
        return np.transpose(table, self.perm).reshape(self.k_p, self.k_y)

    def _from_blocks(self, blocks: np.ndarray) -> np.ndarray:
        shape = [self.shape[a] for a in self.perm]
        return np.transpose(blocks.reshape(shape), np.argsort(self.perm))

    # -- identifiability and variances ----------------------------------------------
    def identifiable(self, gradient: np.ndarray) -> bool:
        """Whether ``gradient . t`` is identifiable (the gradient lies in the column space).

        The column space of ``⊗ M_a`` (identity on unperturbed axes), up to a
        relative :data:`RANGE_TOL`.

        Parameters
        ----------
        gradient : numpy.ndarray
            The coefficients g, in the shape of the table.

        Returns
        -------
        bool

        Examples
        --------
        >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
        >>> [cov.identifiable(np.array(g)) for g in ([1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, -1.0, 0.0])]
        [True, True, False]
        """
        return bool(self._in_column_space(np.asarray(gradient, dtype=float)[None])[0])

    def _in_column_space(self, gradients: np.ndarray) -> np.ndarray:
        """:meth:`identifiable` of each of a stack of gradients (m, *table shape)."""
        axes = tuple(range(1, gradients.ndim))
        inside = contract(gradients, [None, *(None if f is None else f.projector for f in self.factors)])
        scale = np.sqrt(np.sum(gradients * gradients, axis=axes))
        return np.sqrt(np.sum((gradients - inside) ** 2, axis=axes)) <= RANGE_TOL * np.maximum(scale, 1e-300)

    def _quad(self, columns: np.ndarray) -> np.ndarray:
        """``c^T G_y^{-1} c`` with ``c = Q^+ col`` for each column (perturbed cells x m) and block y."""
        c = self.q_pinv @ columns
        out = np.empty((c.shape[1], self.k_y))
        for y in _batches(self.k_y, c.size):
            out[:, y] = np.sum(c[None, :, :] * np.matmul(self.g_inv[y], c), axis=1).T
        return out

    def _finish(self, quad: np.ndarray, total: np.ndarray, weighted: np.ndarray) -> np.ndarray:
        """(S2)/(S3): ``n quad - total^2 / n`` or ``n quad - weighted`` (``sum t g^2``), floored at 0."""
        out = self.n * quad - (total * total / self.n if self.kind == "multinomial" else weighted)
        return np.maximum(out, 0.0)

    def variance(self, gradient: np.ndarray) -> float:
        """Variance of ``gradient . t_hat`` (the delta method for a smooth function
        whose gradient is given); NaN if it is not identifiable or not computed.

        (S2) or (S3) of the module docstring, floored at 0.

        Parameters
        ----------
        gradient : numpy.ndarray
            The coefficients g, in the shape of the table.

        Returns
        -------
        float
            The variance (records squared for counts), or NaN.

        Examples
        --------
        >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
        >>> round(cov.variance(np.array([1.0, 1.0, 0.0])), 6)          # total of a and b
        66.415094
        >>> cov.variance(np.array([1.0, -1.0, 0.0]))                   # a - b: not identifiable
        nan
        """
        return float(self.variances(np.asarray(gradient, dtype=float)[None])[0])

    def variances(self, gradients: np.ndarray) -> np.ndarray:
        """:meth:`variance` of each of a stack of gradients, in one pass of matrix products.

        Parameters
        ----------
        gradients : numpy.ndarray, shape (m, *table shape)
            The coefficients of m linear quantities.

        Returns
        -------
        numpy.ndarray, shape (m,)
            Their variances, NaN for those not identifiable (all, if not ``available``).

        Examples
        --------
        >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
        >>> cov.variances(np.array([[1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 0.0, 1.0]])).round(6).tolist()
        [66.415094, nan, 66.415094]
        """
        g = np.asarray(gradients, dtype=float)
        out = np.full(len(g), np.nan)
        if not self.available or not len(g):
            return out
        axes = tuple(range(1, g.ndim))
        ok = self._in_column_space(g)
        g = g[ok]
        blocks = np.transpose(g, [0, *(a + 1 for a in self.perm)]).reshape(len(g), self.k_p, self.k_y)
        c = np.matmul(self.q_pinv, blocks).transpose(2, 1, 0)  # (k_y, r_p, m)
        quad = np.zeros(len(g))
        for y in _batches(self.k_y, c[0].size):
            quad += np.sum(c[y] * np.matmul(self.g_inv[y], c[y]), axis=(0, 1))
        t = self.counts
        out[ok] = self._finish(quad, np.sum(g * t, axis=axes), np.sum(t * g * g, axis=axes))
        return out

    def group_variances(self, indicators: np.ndarray) -> np.ndarray:
        """Variances of the totals of groups of perturbed cells (columns of a
        0/1 matrix, perturbed cells x m), within each unperturbed cell: (m, K_Y).

        Parameters
        ----------
        indicators : numpy.ndarray, shape (K_P, m)
            Column i is the 0/1 indicator of group i over the perturbed cells
            (in C order of the perturbed axes).

        Returns
        -------
        numpy.ndarray, shape (m, K_Y)
            The variances (NaN everywhere if not ``available``).

        Examples
        --------
        >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
        >>> groups = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])     # {a, b} and {c}
        >>> var = cov.group_variances(groups)
        >>> var.shape, np.allclose(var[0], var[1])
        ((2, 1), True)
        """
        if not self.available:
            return np.full((indicators.shape[1], self.k_y), np.nan)
        total = indicators.T @ self._to_blocks(self.counts)
        return self._finish(self._quad(indicators), total, total)

    def cell_variances(self, identifiable: np.ndarray) -> np.ndarray:
        """Variance of every identifiable cell's count, NaN elsewhere.

        Parameters
        ----------
        identifiable : numpy.ndarray of bool
            Per cell, whether its count is identifiable
            (:attr:`TableIdentifiability.identifiable`).

        Returns
        -------
        numpy.ndarray
            The variances, in the shape of the table.

        Examples
        --------
        >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
        >>> cov.cell_variances(np.array([False, False, True])).round(4).tolist()
        [nan, nan, 66.4151]
        """
        if not self.available:
            return np.full(self.shape, np.nan)
        t = self._to_blocks(self.counts)
        var = self._from_blocks(self._finish(self._quad(np.eye(self.k_p)), t, t))
        return np.where(identifiable, var, np.nan)

    def share_variances(self, group_axes: Sequence[int], identifiable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Shares ``t_c / b_g`` within the groups of ``group_axes`` (all records
        when empty) and their delta-method variances, NaN where not identifiable
        (or, with groups, for more than :data:`MAX_SHARE_CELLS` cells).

        Parameters
        ----------
        group_axes : sequence of int
            The axes whose categories define the groups (the ``by`` variables).
        identifiable : numpy.ndarray of bool
            Per cell, whether its count is identifiable.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            The shares and their variances, in the shape of the table.

        Examples
        --------
        Shares of all records: the variances are those of the counts over ``n^2``.

        >>> m = np.array([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]])
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> cov = IdentifiableCovariance([m], m.T @ p, 100 * p, 100, "multinomial")
        >>> ident = np.array([False, False, True])
        >>> r, var = cov.share_variances([], ident)
        >>> r.tolist(), bool(np.isnan(var[0])), math.isclose(var[2], cov.cell_variances(ident)[2] / 100**2)
        ([0.3, 0.3, 0.4], True, True)
        """
        t = self.counts
        inner = tuple(a for a in range(t.ndim) if a not in set(group_axes))
        b = t.sum(axis=inner, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(b != 0, t / b, np.nan)
        if not group_axes:
            return r, self.cell_variances(identifiable) / float(self.n) ** 2
        var = np.full(t.shape, np.nan)
        if t.size > MAX_SHARE_CELLS:
            return r, var
        totals = np.broadcast_to(b, t.shape)  # each cell's group total b_g
        cells = [tuple(int(i) for i in idx) for idx in np.argwhere(totals > 0)]  # in C order, as np.ndindex
        for start in range(0, len(cells), SHARE_BATCH):
            batch = cells[start:start + SHARE_BATCH]
            grads = np.zeros((len(batch), *t.shape))
            for i, idx in enumerate(batch):  # d (t_c / b_g) / d t: (1 - r_c) / b_g at c, -r_c / b_g elsewhere in g
                group = tuple(slice(None) if a in inner else idx[a] for a in range(t.ndim))
                bg = float(totals[idx])
                grads[i][group] = -r[idx] / bg
                grads[i][idx] += 1.0 / bg
            var[tuple(np.array(batch).T)] = self.variances(grads)
        return r, var


@dataclass(frozen=True, eq=False)
class GroupEstimate:
    """The estimated total of cells that cannot be told apart (identifiable).

    members: per axis of the table, the indices of the categories in the group
    estimate: the estimated original count of the group (records)
    se: its standard error (NaN if the table is too large for it)
    pram_se: of a weighted estimate, the part of ``se`` due to PRAM (None otherwise)

    Examples
    --------
    Categories a and b (indices 0 and 1) have identical rows; the MLE of
    their total is that of the 60 records they hold:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]], ("a", "b", "c"))
    >>> p = np.array([0.3, 0.3, 0.4])
    >>> (group,) = table_identifiability([m], m.matrix.T @ p, 100 * p, 100, "multinomial").groups
    >>> group.members, round(group.estimate, 6), round(group.se ** 2, 4)
    (((0, 1),), 60.0, 66.4151)
    """

    members: tuple[tuple[int, ...], ...]
    estimate: float
    se: float
    pram_se: float | None = None

    def indicator(self, shape: Sequence[int]) -> np.ndarray:
        """The 0/1 table of the group's cells (the gradient of its total).

        Examples
        --------
        >>> GroupEstimate(((0, 1), (1,)), 6.0, 1.0).indicator((3, 2)).tolist()
        [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
        """
        out = np.zeros(tuple(shape))
        out[np.ix_(*self.members)] = 1.0
        return out


@dataclass(frozen=True, eq=False)
class TableIdentifiability:
    """What a table with a singular matrix lets one estimate, and the estimates.

    axes: per axis, its :class:`IdentifiabilityResult` (``None`` if unperturbed)
    identifiable: per cell, whether its count is identifiable
    groups: the identifiable totals of groups of cells that cannot be told apart
    covariance: covariance of identifiable linear quantities

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]], ("a", "b", "c"))
    >>> p = np.array([0.3, 0.3, 0.4])
    >>> ti = table_identifiability([m], m.matrix.T @ p, 100 * p, 100, "multinomial")
    >>> ti.identifiable.tolist(), [(g.members, round(g.estimate, 6)) for g in ti.groups]
    ([False, False, True], [(((0, 1),), 60.0)])
    >>> ti.message  # doctest: +ELLIPSIS
    'axis 0: singular (rank 2 of 3): categories a and b have identical rows ...; only their total can be estimated'
    """

    axes: tuple[IdentifiabilityResult | None, ...]
    identifiable: np.ndarray
    groups: tuple[GroupEstimate, ...]
    covariance: IdentifiableCovariance

    def with_variances(self, covariance: Any) -> TableIdentifiability:
        """The same groups with the standard errors of another covariance of the estimated totals
        (a weighted estimate's, :class:`pramkit.estimate.weighted.SurveyCovariance`), and its PRAM part.

        Parameters
        ----------
        covariance : pramkit.estimate.weighted.SurveyCovariance
            Its ``variance(gradient)`` gives the variance of a linear function of the totals and its
            ``pram`` (flat cells) the PRAM part.

        Returns
        -------
        TableIdentifiability
        """
        groups = []
        for g in self.groups:
            ind = g.indicator(self.identifiable.shape)
            flat = ind.ravel()
            pram = float(flat @ covariance.pram @ flat)
            groups.append(dataclasses.replace(g, se=math.sqrt(covariance.variance(ind)),
                                              pram_se=math.sqrt(max(pram, 0.0)) if math.isfinite(pram) else math.nan))
        return dataclasses.replace(self, groups=tuple(groups))

    @property
    def message(self) -> str:
        """One line per singular axis, joined: what cannot be told apart."""
        return self.message_for([f"axis {a}" for a in range(len(self.axes))])

    def message_for(self, names: Sequence[str]) -> str:
        """:attr:`message` with the axes called by ``names`` (e.g. the variables).

        Parameters
        ----------
        names : sequence of str
            One name per axis of the table.

        Returns
        -------
        str
            One clause per singular axis, joined by ``"; "`` (and a note when
            the table is too large for standard errors).

        Examples
        --------
        >>> from pramkit import PramMatrix
        >>> m = PramMatrix([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]], ("a", "b", "c"))
        >>> p = np.array([0.3, 0.3, 0.4])
        >>> ti = table_identifiability([m, None], np.outer(m.matrix.T @ p, [0.5, 0.5]),
        ...                            np.outer(100 * p, [0.5, 0.5]), 100, "multinomial")
        >>> ti.message_for(["answer", "sex"]).split(":")[0]
        'answer'
        """
        parts = [f"{name}: {res.message}" for name, res in zip(names, self.axes) if res is not None and res.singular]
        if not self.covariance.available:
            parts.append(f"standard errors are not computed for a singular table this large (over {MAX_WORK:g} "
                         "operations); tabulate fewer variables")
        return "; ".join(parts)


def table_identifiability(
    matrices: Sequence[PramMatrix | None], fitted: np.ndarray, counts: np.ndarray, n: float, kind: str
) -> TableIdentifiability:
    """Identifiable cells, group totals and their standard errors for an MLE on a singular table.

    ``fitted`` are the fitted released proportions ``M^T p_hat`` and ``counts``
    the MLE ``n p_hat``; the totals of the groups (products over the axes of a
    group of indistinguishable categories, or a single category) are the same
    at every maximiser of the likelihood.

    Parameters
    ----------
    matrices : sequence of PramMatrix or None
        One per axis, ``None`` for an unperturbed variable.
    fitted : numpy.ndarray
        The fitted released proportions, in the shape of the table.
    counts : numpy.ndarray
        The estimated counts ``n p_hat``.
    n : int
        The number of records.
    kind : str
        ``"multinomial"`` (S2) or ``"pram"`` (S3).

    Returns
    -------
    TableIdentifiability
        The identifiable cells, one :class:`GroupEstimate` per group (and per
        combination of the unperturbed categories), and the covariance.

    Examples
    --------
    Categories a and b cannot be told apart; crossed with an unperturbed
    variable of two categories, their total is estimated within each:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]], ("a", "b", "c"))
    >>> p = np.outer([0.3, 0.3, 0.4], [0.5, 0.5])
    >>> ti = table_identifiability([m, None], m.matrix.T @ p, 100 * p, 100, "multinomial")
    >>> ti.identifiable.tolist()
    [[False, False], [False, False], [True, True]]
    >>> [(g.members, round(g.estimate, 6)) for g in ti.groups]
    [(((0, 1), (0,)), 30.0), (((0, 1), (1,)), 30.0)]
    >>> all(g.se > 0 for g in ti.groups)
    True
    """
    axes = tuple(None if m is None else identifiability(m) for m in matrices)
    cov = IdentifiableCovariance([None if m is None else m.matrix for m in matrices], fitted, counts, n, kind)
    ident = np.ones(counts.shape, dtype=bool)
    parts: list[list[tuple[int, ...]]] = []
    for a in cov.perturbed:
        res = axes[a]
        assert res is not None  # a perturbed axis has a matrix
        grouped = {i for g in res.groups for i in g.indices}
        ident &= np.array([i not in grouped for i in range(counts.shape[a])]).reshape(
            [-1 if b == a else 1 for b in range(counts.ndim)])
        parts.append([g.indices for g in res.groups] + [(i,) for i in range(res.size) if i not in grouped])
    combos = [c for c in itertools.product(*parts) if any(len(p) > 1 for p in c)]
    groups: list[GroupEstimate] = []
    if combos:
        sizes = [counts.shape[a] for a in cov.perturbed]
        ind = np.zeros((cov.k_p, len(combos)))
        for col, combo in enumerate(combos):
            ind[np.ravel_multi_index(np.array(list(itertools.product(*combo))).T, sizes), col] = 1.0
        totals = ind.T @ cov._to_blocks(counts)
        var = cov.group_variances(ind)
        other_shape = [counts.shape[a] for a in cov.other]
        for col, combo in enumerate(combos):
            for y, yidx in enumerate(np.ndindex(*other_shape)):
                members: list[tuple[int, ...]] = [()] * counts.ndim
                for a, p in zip(cov.perturbed, combo):
                    members[a] = tuple(p)
                for a, i in zip(cov.other, yidx):
                    members[a] = (i,)
                groups.append(GroupEstimate(tuple(members), float(totals[col, y]), float(np.sqrt(var[col, y]))))
    return TableIdentifiability(axes, ident, tuple(groups), cov)
