"""Estimates from a released survey file: sampling weights, the sampling design and PRAM together.

A survey file is a sample s drawn by a design, with a weight w_i per record; PRAM then replaces each
record's category X_i by Z_i with probability M[X_i, Z_i], independently.  For a table of C cells
(the variables' cells, crossed), let ``u = sum_i w_i e_{Z_i}`` be the weighted released counts and
``A = (M^T)^{-1}`` the inverse of the table's transition matrix (the Kronecker product of the
variables' matrices; identity on an unperturbed variable).

**Totals.**  ``T_hat = A u`` is unbiased for the weighted original counts ``t_s = sum_{i in s} w_i
e_{X_i}`` given the sample (``E[u | s] = M^T t_s``), hence for the population totals whenever the
weighted counts are (Horvitz-Thompson).  The maximum-likelihood and norm-sub estimators take the same
weighted counts (their variance below is the moment estimator's, its first-order approximation at an
interior point).  Proportions within groups are ratios ``T_c / T_g``.

**Variance, conditioning on the sample.**

    Var(T_hat) = Var_p( E[T_hat | s] ) + E_p( Var[T_hat | s] ) = Var_p(t_s) + E_p(V_pram(s)),

the design variance of the weighted original counts plus the PRAM variance given the sample,

    V_pram(s) = A [ sum_{i in s} w_i^2 (diag(m_{X_i}) - m_{X_i}^T m_{X_i}) ] A^T

(``m_k`` the row k of M), which is linear in ``q_s = sum_i w_i^2 e_{X_i}`` and estimated without bias
by plugging in ``q_hat = A sum_i w_i^2 e_{Z_i}``.

*Linearisation* (strata h, primary sampling units c, drawn with replacement or treated so): the
ultimate-cluster estimator applied to the released PSU totals ``y_hc = sum_{i in c} w_i A e_{Z_i}``
estimates both parts at once, since given the sample the PSU totals stay independent (PRAM acts
record by record) with means ``A M^T t_hc = t_hc``.  A finite-population correction ``1 - f_h``
shrinks the design part only, so the estimate is

    V_hat = sum_h [ (1 - f_h) V_uc,h + f_h V_pram,h ].

*Replicate weights*: the estimator computed with each replicate's weights on the released file
(the PRAM correction inside every replicate) gives ``T_r = A u_r``; their spread, scaled as the
method says, estimates the same sum for the same reason.

The design-based covariance of the released weighted counts ``u`` comes from
:mod:`pramkit.estimate.survey`; this module carries it through ``A`` and the ratios.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pramkit.errors import ParameterError
from pramkit.matrix import PramMatrix

#: Largest table whose survey covariance is formed (a dense C x C matrix).
MAX_SURVEY_CELLS = 4_096


def table_matrix(matrices: Sequence[PramMatrix | None], shape: Sequence[int]) -> np.ndarray:
    """The table's transition matrix over its flat (C-order) cells: the Kronecker product of the
    variables' matrices, identity on an unperturbed variable.

    Parameters
    ----------
    matrices : sequence of PramMatrix or None
        One per axis.
    shape : sequence of int
        The number of categories of each axis.

    Returns
    -------
    numpy.ndarray
        The C x C matrix, ``C = prod(shape)``.

    Raises
    ------
    ParameterError
        The table has more than :data:`MAX_SURVEY_CELLS` cells.

    Examples
    --------
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> table_matrix([m, None], (2, 2)).tolist()[0]       # row (yes, first group)
    [0.75, 0.0, 0.25, 0.0]
    """
    cells = int(np.prod(shape))
    if cells > MAX_SURVEY_CELLS:
        raise ParameterError(f"a survey variance for a table of {cells:,} cells (more than {MAX_SURVEY_CELLS:,}) "
                             "is not offered; tabulate fewer or coarser variables")
    full = np.ones((1, 1))
    for m, s in zip(matrices, shape):
        full = np.kron(full, np.eye(s) if m is None else np.asarray(m.matrix, dtype=float))
    return full


def pram_covariance(squared: np.ndarray, full: np.ndarray, inverse_t: np.ndarray) -> np.ndarray:
    """The PRAM covariance of the weighted released counts given the sample, estimated without bias:
    ``sum_k q_k (diag(m_k) - m_k^T m_k)`` with ``q = A s``, ``s = sum_i w_i^2 e_{Z_i}`` (module docstring).

    Parameters
    ----------
    squared : numpy.ndarray
        ``s``: the released counts weighted by the squared weights, flat (C,).
    full : numpy.ndarray
        The table's transition matrix M (C x C).
    inverse_t : numpy.ndarray
        ``A = (M^T)^{-1}`` (C x C).

    Returns
    -------
    numpy.ndarray
        The C x C covariance of the released weighted counts due to PRAM.

    Examples
    --------
    One record of weight 10 released as "yes" under randomized response keeping 3/4: ``q = A s``
    is (150, -50), and each row's Bernoulli variance 3/16 weighted by q gives 100 x 3/16 = 18.75:

    >>> m = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> pram_covariance(np.array([100.0, 0.0]), m, np.linalg.inv(m.T)).tolist()
    [[18.75, -18.75], [-18.75, 18.75]]
    """
    q = inverse_t @ squared
    return np.diag(full.T @ q) - full.T @ (q[:, None] * full)


@dataclass(frozen=True)
class SurveyCovariance:
    """The covariance of a table's estimated totals under the sampling design and PRAM.

    Parameters
    ----------
    covariance : numpy.ndarray
        C x C: of the estimated totals (design and PRAM parts together).
    pram : numpy.ndarray
        C x C: the PRAM part given the sample (its expectation is what PRAM adds).
    counts : numpy.ndarray
        The estimated totals, in the table's shape.
    kind : str
        ``"linearization"`` or the replicate method.

    Examples
    --------
    >>> cov = SurveyCovariance(np.array([[4.0, -1.0], [-1.0, 9.0]]), np.zeros((2, 2)),
    ...                        np.array([60.0, 40.0]), "linearization")
    >>> cov.cell_variances().tolist(), cov.variance(np.array([1.0, 1.0]))
    ([4.0, 9.0], 11.0)
    """

    covariance: np.ndarray
    pram: np.ndarray
    counts: np.ndarray
    kind: str

    def variance(self, gradient: np.ndarray) -> float:
        """Variance of ``gradient . T`` (the delta method for a smooth function with this gradient).

        Parameters
        ----------
        gradient : numpy.ndarray
            The coefficients, in the table's shape.

        Returns
        -------
        float
        """
        g = np.asarray(gradient, dtype=float)
        if g.shape != self.counts.shape:
            raise ParameterError(f"a gradient of shape {g.shape} for a table of shape {self.counts.shape}")
        flat = g.ravel()
        return max(float(flat @ self.covariance @ flat), 0.0)

    def cell_variances(self, *, clip: bool = True) -> np.ndarray:
        """Variance of every estimated total, in the table's shape."""
        out = np.diag(self.covariance).reshape(self.counts.shape)
        return np.maximum(out, 0.0) if clip else out

    def pram_cell_variances(self) -> np.ndarray:
        """The PRAM part of each total's variance, in the table's shape."""
        return np.maximum(np.diag(self.pram), 0.0).reshape(self.counts.shape)

    def share_variances(self, group_axes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Shares ``r_c = T_c / T_g`` within the groups of ``group_axes`` (the whole table when empty)
        and their delta-method variances, gradient ``(e_c - r_c 1_g) / T_g``.

        Parameters
        ----------
        group_axes : sequence of int
            The axes whose categories define the groups.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            The shares and their variances, in the table's shape (NaN where a group's total is 0).

        Examples
        --------
        Two cells, independent totals of variances 4 and 9: Var(r_1) = (r_2^2 4 + r_1^2 9) / T^2.

        >>> cov = SurveyCovariance(np.diag([4.0, 9.0]), np.zeros((2, 2)), np.array([60.0, 40.0]), "linearization")
        >>> r, v = cov.share_variances([])
        >>> r.tolist(), round(float(v[0]), 10), round((0.4**2 * 4 + 0.6**2 * 9) / 100**2, 10)
        ([0.6, 0.4], 0.000388, 0.000388)
        """
        t = self.counts
        within = tuple(a for a in range(t.ndim) if a not in group_axes)
        totals = np.broadcast_to(t.sum(axis=within, keepdims=True), t.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = t / totals
        group = _group_ids(t.shape, group_axes).ravel()
        same = group[:, None] == group[None, :]
        r, b = shares.ravel(), totals.ravel()
        jac = (np.eye(t.size) - r[:, None] * same) / b[:, None]
        with np.errstate(invalid="ignore"):
            var = np.einsum("ij,jk,ik->i", jac, self.covariance, jac)
        return shares, np.where(np.isfinite(var), np.maximum(var, 0.0), np.nan).reshape(t.shape)


def _group_ids(shape: Sequence[int], group_axes: Sequence[int]) -> np.ndarray:
    """Each cell's group: the flat index of its categories on ``group_axes`` (0 for all when none).

    Examples
    --------
    >>> _group_ids((2, 3), [1]).tolist(), _group_ids((2, 3), []).tolist()
    ([[0, 1, 2], [0, 1, 2]], [[0, 0, 0], [0, 0, 0]])
    """
    index = np.indices(shape)
    if not group_axes:
        return np.zeros(shape, dtype=np.int64)
    return np.ravel_multi_index(tuple(index[a] for a in group_axes), tuple(shape[a] for a in group_axes))


def survey_covariance(released_cov: np.ndarray, pram_released: np.ndarray, inverse_t: np.ndarray,
                      counts: np.ndarray, kind: str) -> SurveyCovariance:
    """Carry the design-based covariance of the released weighted counts through ``A``.

    Parameters
    ----------
    released_cov : numpy.ndarray
        C x C: the covariance of ``u`` (linearised with the fpc rule of the module docstring,
        or from replicates).
    pram_released : numpy.ndarray
        C x C: the PRAM part of it given the sample (:func:`pram_covariance`).
    inverse_t : numpy.ndarray
        ``A`` (C x C).
    counts : numpy.ndarray
        The estimated totals, in the table's shape.
    kind : str
        How ``released_cov`` was estimated.

    Returns
    -------
    SurveyCovariance

    Examples
    --------
    With no PRAM (A = I) the totals' covariance is the released counts' own:

    >>> out = survey_covariance(np.diag([4.0, 9.0]), np.zeros((2, 2)), np.eye(2), np.array([6.0, 4.0]), "sdr")
    >>> out.covariance.tolist(), out.kind
    ([[4.0, 0.0], [0.0, 9.0]], 'sdr')
    """
    return SurveyCovariance(inverse_t @ released_cov @ inverse_t.T, inverse_t @ pram_released @ inverse_t.T,
                            counts, kind)
