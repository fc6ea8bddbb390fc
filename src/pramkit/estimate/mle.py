"""Maximum-likelihood estimation of the original proportions on the simplex (EM).

The released counts ``U`` are multinomial with cell probabilities
``lam = M^T p`` (Cator, Hensbergen and Rozenholc, section 3, the
log-likelihood before (3); Ayed, Battiston and Camerlenghi, section 4.1,
"the MLE of the vector of probabilities p obtained using the observed sample
Z_{1:n}").  The mean log-likelihood per record

    L(p) = sum_j lam_hat_j log (M^T p)_j

is concave in p.  EM (the iterative Bayesian update), with ``M[k, j] = P(Z=j | X=k)``:

    p_k <- p_k * r_k,    r_k = sum_j M[k, j] lam_hat_j / (M^T p)_j,

keeps p on the simplex (``sum_k p_k r_k = 1``) and never makes it negative.
``r`` is the gradient of L, and by concavity
``max L - L(p) <= max_k r_k - sum_k p_k r_k = max_k r_k - 1``; n times this
bound (``loglik_gap``: how far, at most, the log-likelihood of the file is
below its maximum, in nats) is the stopping rule.  Plain EM converges slowly
when the perturbation is strong or the MLE is on the boundary; every two EM
updates are therefore extrapolated (SQUAREM; Varadhan and Roland 2008,
Scand. J. Statist. 35, 335-353), a step kept only if p stays positive and the
likelihood does not decrease.  For a table of independently perturbed
variables ``M^T p`` and ``r`` are computed axis by axis.

Standard errors come from the inverse expected Fisher information at the
MLE, ``n (A diag(lam_fit) A^T - p p^T)`` with ``A = (M^T)^{-1}`` and
``lam_fit = M^T p_hat``: the moment covariance with the fitted released
distribution in place of the observed one.  When the moment estimate lies
inside the simplex the two estimators and their standard errors coincide.
On the boundary (an estimated count of zero) the normal approximation is
poor and the intervals are only indicative.

When M is singular, p is not identifiable: EM still returns a maximiser, but
only the identifiable quantities (the counts of the categories that can be
told apart, and the totals of the groups that cannot) have a unique MLE and
standard errors (:mod:`pramkit.estimate.singular`); the other cells' standard
errors are NaN and the result's ``note`` and ``identifiability`` say which.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import xlogy

from pramkit.errors import DataError, ParameterError
from pramkit.estimate.axes import contract, inverses, transposed
from pramkit.estimate.covariance import CountCovariance, VarianceKind, check_variance_kind
from pramkit.estimate.result import EstimationWarning, TableEstimate, condition_number, table_inputs
from pramkit.estimate.singular import table_identifiability
from pramkit.matrix import PramMatrix

#: Stopping rule: the log-likelihood is within this many nats of its maximum.
TOL = 1e-3
#: Give up after this many EM updates.
MAX_ITER = 100_000
#: Entries of the candidate SQUAREM steps computed at once (steps times cells of the table).
STEP_CELLS = 1 << 16


def mle_estimate(
    released: ArrayLike,
    matrices: Sequence[PramMatrix | None],
    *,
    variance: VarianceKind = "multinomial",
    tol: float = TOL,
    max_iter: int = MAX_ITER,
    start: Literal["moment", "uniform"] = "moment",
    accelerate: bool = True,
    zeros: ArrayLike | None = None,
) -> TableEstimate:
    """MLE of the original counts by EM, with its iteration count and stopping-rule value.

    EM (the iterative Bayesian update) ``p_k <- p_k r_k`` with
    ``r_k = sum_j M[k, j] lam_hat_j / (M^T p)_j`` (module docstring), which
    maximises the log-likelihood of Cator, Hensbergen and Rozenholc (section
    3) on the simplex.

    Parameters
    ----------
    released : array-like, one axis per variable
        Released counts.
    matrices : sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable.
    variance : {"multinomial", "pram"}, default "multinomial"
        As for the moment estimator.
    tol : float, default TOL
        Stop when ``n (max_k r_k - 1) <= tol``: the log-likelihood (nats)
        is then provably within ``tol`` of its maximum, so the estimate lies
        within about ``sqrt(2 tol)`` standard errors of the MLE in any direction.
    max_iter : int, default MAX_ITER
        Give up after this many EM updates (an :class:`EstimationWarning`
        is issued and ``converged`` is false).
    start : {"moment", "uniform"}, default "moment"
        ``"moment"`` (the moment estimate when it lies inside the simplex;
        otherwise its positive part, normalised, averaged with the uniform
        distribution) or ``"uniform"``.
    accelerate : bool, default True
        Extrapolate every two EM updates (SQUAREM, Varadhan and Roland 2008,
        scheme S3), keeping p positive and the likelihood non-decreasing;
        ``False`` gives plain EM.
    zeros : array-like of bool, optional
        Structural zeros, in the shape of ``released``: original cells known to be empty
        (combinations an edit rule forbids).  The likelihood is maximised over the tables
        that are zero there: EM starts at zero on them and its multiplicative update keeps
        them at zero, and the stopping rule's bound is taken over the other cells (the
        gradient condition of the maximum on that face of the simplex).

    Returns
    -------
    TableEstimate
        Counts in ``[0, n]`` summing to n, method and estimator ``"mle"``,
        with ``iterations``, ``converged``, ``loglik`` and ``loglik_gap``;
        for a singular matrix, ``identifiability`` and a ``note``.

    Raises
    ------
    ParameterError
        For a bad ``variance``, ``tol``, ``max_iter``, ``start`` or ``zeros``.
    DataError
        If the released counts are invalid or do not match the matrices, or a released cell
        that holds records can be released by none of the cells outside ``zeros``.

    Warns
    -----
    EstimationWarning
        If EM stops at ``max_iter`` before meeting ``tol``.

    Examples
    --------
    90 "yes" of 100 under randomized response keeping with 3/4: the moment
    estimate (130, -30) leaves the simplex, the MLE is on its boundary:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> est = mle_estimate(np.array([90.0, 10.0]), [m])
    >>> est.counts.round(1).tolist(), est.converged, est.loglik_gap <= TOL
    ([100.0, 0.0], True, True)

    Inside the simplex the MLE is the moment estimate, with the same standard errors:

    >>> est = mle_estimate(np.array([70.0, 30.0]), [m])
    >>> est.counts.round(6).tolist(), est.se.round(4).tolist()
    ([90.0, 10.0], [9.1652, 9.1652])

    A structural zero (the cell "no, no" cannot exist) stays empty, its mass going to the
    cells that can explain the records released there:

    >>> u = np.array([[40.0, 20.0], [25.0, 15.0]])
    >>> est = mle_estimate(u, [m, m], zeros=[[False, False], [False, True]])
    >>> float(est.counts[1, 1]), round(float(est.counts.sum()), 6), est.loglik_gap <= TOL
    (0.0, 100.0, True)
    """
    check_variance_kind(variance)
    if not (math.isfinite(tol) and tol > 0):
        raise ParameterError(f"tol must be a positive number, got {tol!r}")
    if not (isinstance(max_iter, int) and max_iter >= 0):
        raise ParameterError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if start not in ("moment", "uniform"):
        raise ParameterError(f"start must be 'moment' or 'uniform', not {start!r}")
    u, mats, n = table_inputs(released, matrices)
    support = _support(zeros, u.shape)
    cond = condition_number(mats)
    lam_hat = u / u.sum()
    uniform = np.where(support, 1.0, 0.0) / np.count_nonzero(support)
    p = uniform
    if start == "moment" and math.isfinite(cond):
        p = np.where(support, contract(lam_hat, inverses(mats)), 0.0)
        if p[support].min() <= 0 or not math.isclose(p.sum(), 1.0):
            p = 0.5 * np.maximum(p, 0.0) / max(np.maximum(p, 0.0).sum(), np.finfo(float).tiny) + 0.5 * uniform
    em = _EM(mats, lam_hat, support)
    if zeros is not None and (contract(uniform, mats)[em.observed] <= 0).any():
        raise DataError("some released cells hold records that none of the cells outside the structural zeros "
                        "can release: those records break the zeros (an edit rule); estimate without them")
    iterations = 0
    while True:
        _lam, ratio = em.evaluate(p)
        gap = n * (float(ratio[support].max()) - 1.0)
        if gap <= tol or iterations >= max_iter:
            break
        p1 = p * ratio
        iterations += 1
        if not accelerate or iterations >= max_iter:
            p = p1
            continue
        p2 = p1 * em.evaluate(p1)[1]
        iterations += 1
        p = em.extrapolate(p, p1, p2)
    converged = gap <= tol
    if not converged:
        warnings.warn(
            f"EM stopped after {iterations} updates with the log-likelihood possibly "
            f"{gap:.3g} nats below its maximum (tol {tol:g}); raise max_iter",
            EstimationWarning, stacklevel=2,
        )
    return estimate_at(u, matrices, p, variance=variance, iterations=iterations, converged=converged,
                       zeros=None if zeros is None else ~support)


def _support(zeros: ArrayLike | None, shape: tuple[int, ...]) -> np.ndarray:
    """The cells outside the structural zeros (all cells without any), checked against the table's shape."""
    if zeros is None:
        return np.ones(shape, dtype=bool)
    z = np.asarray(zeros)
    if z.shape != shape or z.dtype != bool:
        raise ParameterError(f"zeros must be booleans in the shape of the released table {shape}, "
                             f"got {z.dtype} of shape {z.shape}")
    if z.all():
        raise ParameterError("zeros leave no cell: every original cell is declared empty")
    return ~z


def estimate_at(
    released: np.ndarray,
    matrices: Sequence[PramMatrix | None],
    p: np.ndarray,
    *,
    variance: VarianceKind,
    iterations: int,
    converged: bool,
    estimator: str = "mle",
    zeros: np.ndarray | None = None,
) -> TableEstimate:
    """The :class:`TableEstimate` of a maximiser ``p`` of the likelihood (proportions, a table).

    Fitted released distribution ``lam = M^T p``, log-likelihood, the
    stopping-rule bound ``n (max_k r_k - 1)`` at p, and standard errors from
    the inverse expected Fisher information (module docstring).  For a
    singular matrix, the identifiable cells get standard errors, the others
    NaN, and the totals of the groups of indistinguishable cells are
    estimated (:mod:`pramkit.estimate.singular`).

    Parameters
    ----------
    released : numpy.ndarray
        Released counts, one axis per variable.
    matrices : sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable.
    p : numpy.ndarray
        Estimated original proportions, in the shape of ``released``.
    variance : {"multinomial", "pram"}
        The covariance of the standard errors.
    iterations : int
        EM updates that gave p (reported as is).
    converged : bool
        Whether the method that gave p met its stopping rule (reported as is).
    estimator : str, default "mle"
        The name reported in the result.
    zeros : numpy.ndarray of bool, optional
        Structural zeros (:func:`mle_estimate`): the stopping-rule bound is taken over the other cells.

    Returns
    -------
    TableEstimate
        Counts ``n p``, method ``"mle"``, the log-likelihood (nats) and its gap bound.

    Raises
    ------
    DataError
        If the released counts are invalid or do not match the matrices.

    Examples
    --------
    The gap bound tells a maximiser from another point: (100, 0) is the MLE
    of 90 "yes" of 100 (gap 0), the naive proportions (90, 10) are not:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> u = np.array([90.0, 10.0])
    >>> best = estimate_at(u, [m], np.array([1.0, 0.0]), variance="multinomial", iterations=0, converged=True)
    >>> naive = estimate_at(u, [m], np.array([0.9, 0.1]), variance="multinomial", iterations=0, converged=False)
    >>> best.counts.tolist(), best.loglik_gap, round(naive.loglik_gap, 4)
    ([100.0, 0.0], 0.0, 4.7619)
    >>> best.loglik > naive.loglik
    True
    """
    u, mats, n = table_inputs(released, matrices)
    cond = condition_number(mats)
    support = _support(zeros, u.shape)
    lam, ratio = _EM(mats, u / u.sum(), support).evaluate(p)
    gap = n * (float(ratio[support].max()) - 1.0)
    fitted = n * lam
    counts = n * p
    cov: CountCovariance | None = None
    ident = None
    note = ""
    if math.isfinite(cond):
        cov = CountCovariance(inverses(mats), fitted, counts, n, variance)
        se = np.sqrt(cov.cell_variances())
    else:
        ident = table_identifiability(matrices, lam, counts, n, variance)
        se = np.sqrt(ident.covariance.cell_variances(ident.identifiable))
        note = (f"not identifiable: {ident.message}; the split of such categories is one maximiser of "
                "the likelihood among many (no standard error), their totals are estimated")
    return TableEstimate(
        counts=counts, se=se, released=u, n=n, method="mle", variance=variance, covariance=cov,
        condition_number=cond, iterations=iterations, converged=converged,
        loglik=float(xlogy(u, lam).sum()), loglik_gap=max(gap, 0.0), note=note,
        estimator=estimator, identifiability=ident,
    )


def squarem_lengths(d1: np.ndarray, d2: np.ndarray) -> list[float]:
    """The step lengths SQUAREM tries along two EM steps (Varadhan and Roland 2008, scheme S3), in order:
    ``a = -|d1| / |d2|`` (at most -1), then moved half way to -1 (where ``p0 - 2 a d1 + a^2 d2`` is the
    second EM step) while below -1.01, then -1 excluded; none when ``d2`` is 0 or ``a`` is -1.

    Parameters
    ----------
    d1, d2 : numpy.ndarray
        The first step ``p1 - p0`` and the change of step ``p2 - p1 - d1``.

    Returns
    -------
    list of float

    Examples
    --------
    >>> squarem_lengths(np.array([4.0]), np.array([1.0]))
    [-4.0, -2.5, -1.75, -1.375, -1.1875, -1.09375, -1.046875, -1.0234375, -1.01171875, -1.005859375]
    >>> squarem_lengths(np.array([1.0]), np.array([0.0]))
    []
    """
    norm2 = float(np.sqrt(np.sum(d2 * d2)))
    if norm2 == 0.0:
        return []
    a = min(-float(np.sqrt(np.sum(d1 * d1))) / norm2, -1.0)
    steps = []
    while a < -1.0:
        steps.append(a)
        a = (a - 1.0) / 2.0 if a < -1.01 else -1.0
    return steps


class _EM:
    """The EM map of one table: forward ``lam = M^T p`` and the gradient ``r``, axis by axis."""

    def __init__(self, mats: Sequence[np.ndarray | None], lam_hat: np.ndarray,
                 support: np.ndarray | None = None) -> None:
        self.mats = mats
        self.backward = transposed(mats)
        self.lam_hat = lam_hat
        self.observed = lam_hat > 0
        self.support = np.ones(lam_hat.shape, dtype=bool) if support is None else support

    def loglik(self, p: np.ndarray) -> float:
        """Mean log-likelihood per record."""
        return float(xlogy(self.lam_hat, contract(p, self.mats)).sum())

    def evaluate(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``lam = M^T p`` and ``r_k = sum_j M[k, j] lam_hat_j / lam_j``; the EM update is ``p * r``."""
        lam = contract(p, self.mats)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = contract(np.where(self.observed, self.lam_hat / lam, 0.0), self.backward)
        return lam, ratio

    def extrapolate(self, p0: np.ndarray, p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
        """SQUAREM step ``p0 - 2 a d1 + a^2 d2`` (``d1 = p1 - p0``, ``d2 = p2 - 2 p1 + p0``,
        ``a = -|d1| / |d2|``), halved towards ``a = -1`` (which gives p2) until
        every entry outside the structural zeros is positive (they stay zero: the three points
        are zero there); p2 if the step lowers the likelihood.  The step is renormalised:
        with a large ``a`` rounding would move it off the simplex."""
        d1 = p1 - p0
        d2 = p2 - p1 - d1
        steps = squarem_lengths(d1, d2)
        # Every halving's step at once (a block of them for a large table), the same arithmetic entry by
        # entry as one step at a time: near the boundary of the simplex a step is halved some twenty times.
        x0, x1, x2 = p0[self.support], d1[self.support], d2[self.support]
        per = max(1, STEP_CELLS // max(x0.size, 1))
        for i in range(0, len(steps), per):
            tried = np.array(steps[i:i + per])[:, None]
            positive = np.flatnonzero((x0 - 2.0 * tried * x1 + tried * tried * x2).min(axis=1) > 0)
            if positive.size:
                a = steps[i + int(positive[0])]
                q = p0 - 2.0 * a * d1 + a * a * d2
                q /= q.sum()
                return q if self.loglik(q) >= self.loglik(p2) else p2
        return p2
