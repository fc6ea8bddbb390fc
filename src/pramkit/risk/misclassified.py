"""Identification risk of released sample uniques under misclassification.

Shlomo and Skinner (2012), sec. 2.1 and 4; Shlomo and Skinner (2010).  The
population count of cell ``k`` is ``F_k ~ Poisson(lambda_k)``; each unit is
sampled with probability ``pi`` (``pi_k`` when the fractions vary over the cells)
and, if sampled, released in cell ``j`` with
probability ``M[k, j]`` (``M`` the Kronecker product of the per-variable PRAM
matrices).  By Poisson thinning the counts ``A_kj`` of sampled units of true
cell ``k`` released in ``j`` and ``B_k`` of unsampled units are independent
Poisson with means ``pi lambda_k M[k, j]`` and ``lambda_k (1 - pi)``.

An intruder holds the true keys of the population units and matches a
released sample unique (``f~_j = 1``) to one of the ``F_j`` units of true cell
``j``, chosen at random.  The match is correct iff the record's true cell is
``j`` and the intruder picks it.  Given ``f~_j = 1`` the record's true cell is
``k`` with probability ``pi lambda_k M[k, j] / mu~_j``, where
``mu~_j = pi sum_k lambda_k M[k, j]`` is ``lambda`` pushed through ``M``; if
it is ``j``, the other units of cell ``j`` number
``Y = B_j + sum_{j' != j} A_jj' ~ Poisson(nu_j)``, ``nu_j = lambda_j (1 - pi M[j, j])``,
independent of the conditioning event.  Hence

    P(correct match | f~_j = 1) = (mu_j M[j, j] / mu~_j) E[1 / (1 + Y)]
                                = (mu_j M[j, j] / mu~_j) (1 - exp(-nu_j)) / nu_j,
    P(correct match, F_j = 1 | f~_j = 1) = (mu_j M[j, j] / mu~_j) exp(-nu_j),

with ``mu_j = pi lambda_j``.  With ``M = I`` these are the textbook
``E(1/F_j | f_j = 1) = (1 - exp(-lambda_j (1 - pi))) / (lambda_j (1 - pi))`` and
``P(F_j = 1 | f_j = 1) = exp(-lambda_j (1 - pi))``.  tau2 (tau1) sums the first
(second) over the released sample uniques; over the randomness of sampling
and perturbation its expectation is ``sum_j mu~_j exp(-mu~_j) P_j``.
The derivation is written out in docs/risk.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pramkit.errors import ParameterError
from pramkit.risk.loglinear import push


@dataclass(frozen=True, eq=False)
class CellRisk:
    """Risk of a released sample unique in each cell of the table.

    Parameters
    ----------
    r1 : numpy.ndarray
        P(correct match and population unique | released sample unique).
    r2 : numpy.ndarray
        P(correct match | released sample unique).
    released_mean : numpy.ndarray
        mu~ = expected released sample count of each cell.

    Examples
    --------
    PRAM lowers the risk of every cell, and ``r1 <= r2``:

    >>> mu = np.array([0.5, 1.0, 3.0])
    >>> m = np.full((3, 3), 0.1) + 0.7 * np.eye(3)
    >>> plain, pram = cell_risk(mu, 0.1, [None]), cell_risk(mu, 0.1, [m])
    >>> np.round(plain.r2, 4).tolist(), np.round(pram.r2, 4).tolist()
    ([0.2198, 0.1111, 0.037], [0.1076, 0.0756, 0.0341])
    >>> bool(np.all(pram.r2 < plain.r2) and np.all(pram.r1 <= pram.r2))
    True
    """

    r1: np.ndarray
    r2: np.ndarray
    released_mean: np.ndarray

    def expected_tau1(self) -> float:
        """E(tau1) over sampling and perturbation: sum mu~ exp(-mu~) r1 (records).

        ``mu~ exp(-mu~)`` is the probability that a cell is a released sample unique.

        Returns
        -------
        float

        Examples
        --------
        >>> risk = cell_risk(np.array([0.5, 1.0, 3.0]), 0.1, [None])
        >>> round(risk.expected_tau1(), 6), risk.expected_tau1() <= risk.expected_tau2()
        (0.003414, True)
        """
        return float((self.released_mean * np.exp(-self.released_mean) * self.r1).sum())

    def expected_tau2(self) -> float:
        """E(tau2) over sampling and perturbation: sum mu~ exp(-mu~) r2 (records).

        The risk that :func:`pramkit.risk.tuning.tune_epsilon` keeps under its threshold.

        Returns
        -------
        float

        Examples
        --------
        >>> mu, m = np.array([0.5, 1.0, 3.0]), np.full((3, 3), 0.1) + 0.7 * np.eye(3)
        >>> round(cell_risk(mu, 0.1, [None]).expected_tau2(), 4), round(cell_risk(mu, 0.1, [m]).expected_tau2(), 4)
        (0.113, 0.073)
        """
        return float((self.released_mean * np.exp(-self.released_mean) * self.r2).sum())

    def expected_sample_uniques(self) -> float:
        """E(number of released sample uniques) = sum mu~ exp(-mu~) (records).

        Returns
        -------
        float
            An upper bound of :meth:`expected_tau2` (each unique counts at most once).

        Examples
        --------
        >>> risk = cell_risk(np.array([0.5, 1.0, 3.0]), 0.1, [None])
        >>> round(risk.expected_sample_uniques(), 4), risk.expected_tau2() <= risk.expected_sample_uniques()
        (0.8205, True)
        """
        return float((self.released_mean * np.exp(-self.released_mean)).sum())


def joint_diagonal(matrices: Sequence[np.ndarray | None], shape: Sequence[int]) -> np.ndarray:
    """Diagonal of the Kronecker product of the matrices, as a table (``None`` = identity).

    ``M[j, j]``, the probability that a record of cell ``j`` is released in ``j``.

    Parameters
    ----------
    matrices : sequence of numpy.ndarray or None
        One square matrix per axis.
    shape : sequence of int
        The table's shape.

    Returns
    -------
    numpy.ndarray
        Of ``shape``: the product of the axes' diagonal entries.

    Examples
    --------
    >>> m = np.array([[0.9, 0.1], [0.3, 0.7]])
    >>> joint_diagonal([m, None], (2, 3)).tolist()
    [[0.9, 0.9, 0.9], [0.7, 0.7, 0.7]]
    >>> bool(np.allclose(joint_diagonal([m, m], (2, 2)).ravel(), np.diagonal(np.kron(m, m))))
    True
    """
    out = np.ones(tuple(shape))
    for axis, m in enumerate(matrices):
        if m is not None:
            view = [1] * len(shape)
            view[axis] = shape[axis]
            out = out * np.diagonal(m).reshape(view)
    return out


def unique_given_rate(nu: np.ndarray) -> np.ndarray:
    """E[1 / (1 + Y)] = (1 - exp(-nu)) / nu for Y ~ Poisson(nu) (1 at nu = 0).

    The chance of picking the right unit among ``1 + Y`` (module docstring).

    Parameters
    ----------
    nu : numpy.ndarray
        Poisson means, non-negative.

    Returns
    -------
    numpy.ndarray
        In (0, 1], decreasing in ``nu``; evaluated with ``expm1`` (exact for small ``nu``).

    Examples
    --------
    >>> np.round(unique_given_rate(np.array([0.0, 1.0, 50.0])), 6).tolist()
    [1.0, 0.632121, 0.02]
    >>> from scipy.stats import poisson
    >>> y = np.arange(60)
    >>> bool(np.isclose(unique_given_rate(np.array([3.0]))[0], np.sum(poisson.pmf(y, 3.0) / (1 + y))))
    True
    """
    safe = np.where(nu > 0, nu, 1.0)
    return np.where(nu > 0, -np.expm1(-safe) / safe, 1.0)


def cell_risk(
    mu: np.ndarray, sampling_fraction: float | np.ndarray, matrices: Sequence[np.ndarray | None]
) -> CellRisk:
    """Per-cell risk of a released sample unique (module docstring).

    Parameters
    ----------
    mu : the fitted sample-scale means of the true cells, ``pi_j lambda_j``
    sampling_fraction : ``pi``, one for every cell or one per cell (an array
        broadcastable to ``mu``; the derivation holds cell by cell, with
        ``pi_k`` in the thinning of cell ``k``)
    matrices : one per axis, ``None`` for a variable that is not perturbed

    Returns
    -------
    CellRisk
        with ``M = I``: ``r1 = exp(-lambda (1 - pi))``, ``r2 = (1 - exp(-lambda (1 - pi))) / (lambda (1 - pi))``

    Raises
    ------
    ParameterError
        A sampling fraction outside (0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> risk = cell_risk(np.array([0.5, 2.0]), np.array([0.5, 1.0]), [None])
    >>> np.round(risk.r1, 6).tolist()  # exp(-1 * 0.5); a census cell
    [0.606531, 1.0]
    """
    pi = np.asarray(sampling_fraction, dtype=float)
    bad = ~((pi > 0) & (pi <= 1))
    if np.any(bad):
        raise ParameterError(f"the sampling fraction must lie in (0, 1], got {float(pi[bad].ravel()[0])!r}")
    mu = np.asarray(mu, dtype=float)
    released = push(mu, matrices)
    keep = joint_diagonal(matrices, mu.shape)
    share = np.divide(mu * keep, released, out=np.zeros_like(released), where=released > 0)
    nu = (mu / pi) * (1.0 - pi * keep)
    return CellRisk(r1=share * np.exp(-nu), r2=share * unique_given_rate(nu), released_mean=released)
