"""Maximum-likelihood estimation of the original proportions on the simplex (EM, then an interior-point method).

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
``max L - L(p) <= max_k r_k - sum_k p_k r_k = max_k r_k - 1`` at any p of the
simplex; n times this bound (``loglik_gap``: how far, at most, the
log-likelihood of the file is below its maximum, in nats) is the stopping
rule, whichever method gave p.  Plain EM converges slowly when the
perturbation is strong or the MLE is on the boundary; every two EM updates
are therefore extrapolated (SQUAREM; Varadhan and Roland 2008, Scand. J.
Statist. 35, 335-353), a step kept only if p stays positive and the
likelihood does not decrease.  For a table of independently perturbed
variables ``M^T p`` and ``r`` are computed axis by axis.

Even accelerated, EM converges sublinearly when M is singular or many cells
of the MLE are zero: on the chain of two manifests of the NIST benchmark
(``pramkit.estimate.chain``; each variable stratified by an age class, so
that every cell crossing two classes has MLE zero) three two-way tables
stopped at 100 000 updates with bounds of 0.0012-0.0034 nats, above
``TOL``.  So after :data:`EM_UPDATES` updates a table whose Newton matrix
(below) has at most :data:`NEWTON_ENTRIES` entries is finished by a
primal-dual interior-point method: Mehrotra's predictor-corrector (Mehrotra
1992, SIAM J. Optim. 2, 575-601) applied to the convex problem as in Nocedal
and Wright (Numerical Optimization, 2nd ed. 2006, chapters 14 and 19).  It
minimises ``-L(p)`` subject to ``sum p = 1`` and ``p >= 0`` on the cells
outside the structural zeros, following the central path of
``-r - s + nu 1 = 0``, ``p s = mu``, ``p, s > 0`` as ``mu`` falls to 0.  A
Newton step solves

    (H + diag(s / p)) dp + dnu 1 = -(nu - r - s) - (p s - sigma mu) / p,    sum dp = 0,

with ``H = M diag(lam_hat / lam^2) M^T`` the Hessian of ``-L``: the barrier's
``diag(s / p)`` makes the matrix positive definite even when M (and H) is
singular.  H is built axis by axis from the per-axis matrices (Kronecker
structure, :mod:`pramkit.estimate.axes`) and is block diagonal across the
unperturbed axes, one block of the perturbed axes' cells per cell of those;
each block is scaled to a unit diagonal, regularised by
:data:`REGULARISATION` (Altman and Gondzio 1999, Optim. Methods Softw. 11,
275-302: it only damps directions of no curvature, such as the split of
categories M cannot tell apart, which change neither ``lam`` nor L) and
factored.  The iterate stays strictly inside the simplex, and the method
stops when the same bound ``n (max_k r_k - 1)`` at the iterate meets the
tolerance: typically within 5 to 20 steps, whatever M.

Why this method: the problem is concave, so any global method will do, but
the barrier treats the two causes of EM's slowness, a maximum on the
boundary and a singular M, in one positive definite system, without
guessing which cells are zero (as an active-set or projected Newton method
must); its number of steps hardly depends on M; and its iterates are
strictly positive, so the certified bound holds at each of them as at EM's.
Koenker and Mizera (2014, J. Amer. Statist. Assoc. 109, 674-685) found
interior-point methods far faster than EM for the same kind of likelihood
(the weights of a mixture, the Kiefer-Wolfowitz estimator).  A table too
large for dense blocks keeps EM alone.  Should the Newton steps not meet the
tolerance (a block that rounding makes impossible to factor, or
:data:`NEWTON_STEPS` steps, e.g. for a tolerance below what rounding allows
at this n), EM goes on from the best iterate.  ``iterations`` counts EM
updates and Newton steps (a SQUAREM extrapolation is not counted): an EM
update costs two passes over the table, a Newton step the factorisation of
the blocks, ``O(B S^3)`` for ``B`` blocks of ``S`` cells.

Standard errors come from the inverse expected Fisher information at the
MLE, ``n (A diag(lam_fit) A^T - p p^T)`` with ``A = (M^T)^{-1}`` and
``lam_fit = M^T p_hat``: the moment covariance with the fitted released
distribution in place of the observed one.  When the moment estimate lies
inside the simplex the two estimators and their standard errors coincide.
On the boundary (an estimated count of zero) the normal approximation is
poor and the intervals are only indicative.

When M is singular, p is not identifiable: the method still returns a maximiser, but
only the identifiable quantities (the counts of the categories that can be
told apart, and the totals of the groups that cannot) have a unique MLE and
standard errors (:mod:`pramkit.estimate.singular`); the other cells' standard
errors are NaN and the result's ``note`` and ``identifiability`` say which.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_factor, cho_solve
from scipy.special import xlogy

from pramkit.errors import DataError, ParameterError
from pramkit.estimate.axes import contract, inverses, transposed
from pramkit.estimate.covariance import CountCovariance, VarianceKind, check_variance_kind
from pramkit.estimate.result import EstimationWarning, TableEstimate, condition_number, table_inputs
from pramkit.estimate.singular import table_identifiability
from pramkit.matrix import PramMatrix

#: Stopping rule: the log-likelihood is within this many nats of its maximum.
TOL = 1e-3
#: Give up after this many iterations (EM updates and Newton steps).
MAX_ITER = 100_000
#: EM updates before the interior-point method takes over (for a table whose Newton matrix is small enough).
EM_UPDATES = 200
#: The interior-point method's Newton matrix may hold this many entries (blocks times cells of a block squared).
NEWTON_ENTRIES = 1 << 22
#: Newton steps the interior-point method may take (it needs some 5 to 20) before EM takes over again.
NEWTON_STEPS = 50
#: The interior-point method's start: EM's point moved this far towards the uniform distribution.
INTERIOR = 0.01
#: The share of the step to the boundary (p or s reaching 0) that a Newton step takes.
TO_BOUNDARY = 0.99
#: Added to the diagonal of the Newton matrix scaled to a unit diagonal (Altman and Gondzio 1999).
REGULARISATION = 1e-12
#: Blocks of fewer cells are solved all at once by NumPy; larger ones one by one by their Cholesky factors.
SMALL_BLOCK = 64
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
    newton: bool = True,
) -> TableEstimate:
    """MLE of the original counts, with its iteration count and stopping-rule value.

    EM (the iterative Bayesian update) ``p_k <- p_k r_k`` with
    ``r_k = sum_j M[k, j] lam_hat_j / (M^T p)_j``, accelerated by SQUAREM and,
    when :data:`EM_UPDATES` updates did not meet ``tol``, finished by a
    primal-dual interior-point method (module docstring), which maximises the
    log-likelihood of Cator, Hensbergen and Rozenholc (section 3) on the simplex.

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
        Give up after this many iterations, EM updates and Newton steps (an
        :class:`EstimationWarning` is issued and ``converged`` is false).
    start : {"moment", "uniform"}, default "moment"
        ``"moment"`` (the moment estimate when it lies inside the simplex;
        otherwise its positive part, normalised, averaged with the uniform
        distribution) or ``"uniform"``.
    accelerate : bool, default True
        Extrapolate every two EM updates (SQUAREM, Varadhan and Roland 2008,
        scheme S3), keeping p positive and the likelihood non-decreasing (and,
        with ``newton``, finish by Newton steps); ``False`` gives plain EM.
    zeros : array-like of bool, optional
        Structural zeros, in the shape of ``released``: original cells known to be empty
        (combinations an edit rule forbids).  The likelihood is maximised over the tables
        that are zero there: EM starts at zero on them and its multiplicative update keeps
        them at zero, the interior-point method leaves them out, and the stopping rule's
        bound is taken over the other cells (the gradient condition of the maximum on that
        face of the simplex).
    newton : bool, default True
        When :data:`EM_UPDATES` accelerated updates have not met ``tol``, finish by the
        interior-point method (for a table whose Newton matrix has at most
        :data:`NEWTON_ENTRIES` entries).  ``False`` keeps accelerated EM throughout, for a
        caller that stops it early on purpose (:mod:`pramkit.resample`: early stopping
        regularises its tables).

    Returns
    -------
    TableEstimate
        Counts in ``[0, n]`` summing to n, method and estimator ``"mle"``,
        with ``iterations`` (EM updates and Newton steps), ``converged``,
        ``loglik`` and ``loglik_gap``;
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
        If ``max_iter`` iterations do not meet ``tol``.

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

    Two variables, each perturbed within two strata (block-diagonal matrices): every original
    cell crossing two strata has MLE zero, and accelerated EM alone needs several hundred
    updates; the interior-point method finishes after :data:`EM_UPDATES` of them:

    >>> rr = np.array([[0.6, 0.4], [0.4, 0.6]])
    >>> strata = PramMatrix(np.kron(np.eye(2), rr))
    >>> u = np.array([[30.0, 5, 0, 0], [12, 3, 0, 0], [0, 0, 20, 1], [0, 0, 9, 20]])
    >>> est = mle_estimate(u, [strata, strata])
    >>> est.converged, EM_UPDATES < est.iterations <= EM_UPDATES + NEWTON_STEPS
    (True, True)
    >>> est.counts.round(1).tolist()
    [[50.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 12.5, 0.0], [0.0, 0.0, 25.0, 12.5]]
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
    p, gap, iterations = _maximise(em, p, n, tol, max_iter, accelerate, newton and accelerate)
    converged = gap <= tol
    if not converged:
        warnings.warn(
            f"the MLE stopped after {iterations} iterations (EM updates and Newton steps) with the log-likelihood "
            f"possibly {gap:.3g} nats below its maximum (tol {tol:g}); raise max_iter",
            EstimationWarning, stacklevel=2,
        )
    return estimate_at(u, matrices, p, variance=variance, iterations=iterations, converged=converged,
                       zeros=None if zeros is None else ~support)


def _maximise(em: _EM, p: np.ndarray, n: float, tol: float, max_iter: int, accelerate: bool,
              newton: bool) -> tuple[np.ndarray, float, int]:
    """The maximiser from ``p``: EM, then (``newton``, a table small enough) the interior-point method, then EM
    again if Newton's steps did not meet ``tol``; the point, its gap and the iterations spent (at most
    ``max_iter``: EM updates and Newton steps)."""
    finish = _InteriorPoint(em) if newton and _newton_entries(em) <= NEWTON_ENTRIES else None
    p, gap, iterations = _em_updates(em, p, n, tol, max_iter if finish is None else min(max_iter, EM_UPDATES),
                                     accelerate)
    if gap <= tol or finish is None or iterations >= max_iter:
        return p, gap, iterations
    p, gap, steps = finish.maximise(p, gap, n, tol, min(NEWTON_STEPS, max_iter - iterations))
    iterations += steps
    if gap <= tol:
        return p, gap, iterations
    p, gap, updates = _em_updates(em, p, n, tol, max_iter - iterations, accelerate)
    return p, gap, iterations + updates


def _em_updates(em: _EM, p: np.ndarray, n: float, tol: float, budget: int,
                accelerate: bool) -> tuple[np.ndarray, float, int]:
    """EM updates from ``p``, every two extrapolated by SQUAREM if ``accelerate``, until the gap is at most
    ``tol`` or ``budget`` updates are made; the point, its gap and the updates made."""
    updates = 0
    while True:
        ratio = em.evaluate(p)[1]
        gap = em.gap(ratio, n)
        if gap <= tol or updates >= budget:
            return p, gap, updates
        p1 = p * ratio
        updates += 1
        if not accelerate or updates >= budget:
            p = p1
            continue
        p2 = p1 * em.evaluate(p1)[1]
        updates += 1
        p = em.extrapolate(p, p1, p2)


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
        EM updates and Newton steps that gave p (reported as is).
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
    em = _EM(mats, u / u.sum(), support)
    lam, ratio = em.evaluate(p)
    gap = em.gap(ratio, n)
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

    def gap(self, ratio: np.ndarray, n: float) -> float:
        """The stopping rule's bound ``n (max_k r_k - 1)`` over the cells outside the structural zeros."""
        return n * (float(ratio[self.support].max()) - 1.0)

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


def _newton_entries(em: _EM) -> int:
    """Entries of the interior-point method's Newton matrix: one block of the perturbed axes' cells per cell of
    the unperturbed axes (the Hessian ``M diag(w) M^T`` is the identity across those)."""
    shape = em.lam_hat.shape
    block = math.prod(s for s, m in zip(shape, em.mats) if m is not None)
    return math.prod(shape) * block


class _InteriorPoint:
    """The primal-dual interior-point method of one table (module docstring), on the cells outside the
    structural zeros.

    Its Newton matrix ``H + diag(s / p)``, with ``H = M diag(lam_hat / lam^2) M^T`` the Hessian of ``-L``,
    is block diagonal: ``M`` is the identity across an unperturbed axis.  The table's axes are ordered
    unperturbed first, then perturbed, and each block (a cell of the unperturbed axes) holds the
    perturbed axes' cells; ``H`` is built axis by axis from ``M_a[k, j] M_a[k', j]`` without ``M``.
    """

    def __init__(self, em: _EM) -> None:
        self.em = em
        shape = em.lam_hat.shape
        plain = [a for a, m in enumerate(em.mats) if m is None]
        perturbed = [a for a, m in enumerate(em.mats) if m is not None]
        self.order = plain + perturbed
        self.back = np.argsort(self.order)
        self.ordered_shape = tuple(shape[a] for a in self.order)
        self.sizes = [shape[a] for a in perturbed]
        self.blocks = math.prod(shape[a] for a in plain)
        self.size = math.prod(self.sizes)
        # pairs[a][j, k S + k'] = M_a[k, j] M_a[k', j]: H's factor of axis a, contracted with the weights' axis j
        self.pairs = [(m[:, None, :] * m[None, :, :]).reshape(-1, m.shape[1]).T for m in em.mats if m is not None]
        self.free = self.to_blocks(em.support)

    def to_blocks(self, table: np.ndarray) -> np.ndarray:
        """A table as (blocks, cells of a block)."""
        return table.transpose(self.order).reshape(self.blocks, self.size)

    def from_blocks(self, blocks: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`to_blocks`."""
        return blocks.reshape(self.ordered_shape).transpose(self.back)

    def hessian(self, lam: np.ndarray) -> np.ndarray:
        """``H = M diag(lam_hat / lam^2) M^T``, the Hessian of ``-L`` at ``lam = M^T p``, as (blocks, cells, cells)."""
        weights = np.divide(self.em.lam_hat, lam * lam, out=np.zeros_like(lam), where=self.em.observed)
        t = weights.transpose(self.order).reshape(self.blocks, *self.sizes)
        for pair in self.pairs:  # each contraction drops the block's first released axis, appends its (k, k')
            t = np.tensordot(t, pair, axes=([1], [0]))
        d = len(self.sizes)
        t = t.reshape(self.blocks, *[s for s in self.sizes for _ in range(2)])
        return t.transpose(0, *range(1, 2 * d, 2), *range(2, 2 * d + 1, 2)).reshape(self.blocks, self.size, self.size)

    def solver(self, lam: np.ndarray, p: np.ndarray, s: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``b -> W^{-1} b`` for the Newton matrix ``W = H + diag(s / p)`` on the cells outside the structural
        zeros (the identity on them, where ``b`` is zero): each block scaled to a unit diagonal and regularised
        (:data:`REGULARISATION`), then factored.

        Raises
        ------
        numpy.linalg.LinAlgError
            If rounding leaves a block that cannot be factored.
        """
        free = self.free
        w = self.hessian(lam)
        w *= free[:, :, None] & free[:, None, :]
        cells = np.arange(self.size)
        w[:, cells, cells] += np.where(free, self.to_blocks(s) / self.to_blocks(np.where(self.em.support, p, 1.0)),
                                       1.0)
        scale = 1.0 / np.sqrt(w[:, cells, cells])
        w *= scale[:, :, None]
        w *= scale[:, None, :]
        w[:, cells, cells] += REGULARISATION
        solve = _block_solver(w)
        return lambda b: self.from_blocks(scale * solve(scale * self.to_blocks(b)))

    def maximise(self, p: np.ndarray, gap: float, n: float, tol: float,
                 steps: int) -> tuple[np.ndarray, float, int]:
        """Newton steps from ``p`` (of gap ``gap``) until the gap at the iterate is at most ``tol``, ``steps``
        steps are taken, or a Newton matrix cannot be factored; the iterate of the smallest gap (``p`` if none
        is smaller), that gap, and the steps taken."""
        x, s, nu, fitted = self.start(p)
        best, best_gap = p, gap
        for step in range(1, steps + 1):
            try:
                x, s, nu = self.step(x, s, nu, fitted)
            except np.linalg.LinAlgError:
                return best, best_gap, step - 1
            fitted = self.em.evaluate(x)  # the gap here, and the next step's lam and r
            gap_x = self.em.gap(fitted[1], n)
            if gap_x < best_gap:
                best, best_gap = x, gap_x
            if best_gap <= tol:
                return best, best_gap, step
        return best, best_gap, steps

    def start(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, tuple[np.ndarray, np.ndarray]]:
        """The first iterate ``(x, s, nu)`` and ``(lam, r)`` at x (:meth:`_EM.evaluate`): ``p`` moved
        :data:`INTERIOR` of the way to the uniform distribution on the allowed cells (every one positive),
        ``nu = max_k r_k + 1 / K`` and ``s = nu - r`` (at least ``1 / K``: the stationarity condition holds)."""
        free = self.em.support
        k = np.count_nonzero(free)
        x = np.where(free, (1.0 - INTERIOR) * p + INTERIOR / k, 0.0)
        x /= x.sum()
        fitted = self.em.evaluate(x)
        nu = float(fitted[1][free].max()) + 1.0 / k
        return x, np.where(free, nu - fitted[1], 0.0), nu, fitted

    def step(self, x: np.ndarray, s: np.ndarray, nu: float,
             fitted: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, float]:
        """One predictor-corrector step from ``x`` (``fitted``: ``(lam, r)`` there) (Mehrotra 1992): the affine direction (target ``p s = 0``) and how far it
        could go set the centring ``sigma = (mu_affine / mu)^3``; the corrected direction (target
        ``sigma mu - dp_affine ds_affine``) is taken :data:`TO_BOUNDARY` of the way to the boundary, or whole.

        Raises
        ------
        numpy.linalg.LinAlgError
            If the Newton matrix cannot be factored.
        """
        free = self.em.support
        k = np.count_nonzero(free)
        lam, r = fitted
        solve = self.solver(lam, x, s)
        one = solve(np.where(free, 1.0, 0.0))
        dual = np.where(free, nu - r - s, 0.0)  # the residual of -r - s + nu 1 = 0
        mu = float(np.sum(x * s)) / k
        dx, ds, _ = _newton_step(solve, one, dual, x * s, x, s, free)
        mu_affine = float(np.sum((x + _to_boundary(x, dx) * dx) * (s + _to_boundary(s, ds) * ds))) / k
        target = np.where(free, min(1.0, (mu_affine / mu) ** 3) * mu, 0.0)
        dx, ds, dnu = _newton_step(solve, one, dual, x * s + dx * ds - target, x, s, free)
        a = min(1.0, TO_BOUNDARY * min(_to_boundary(x, dx), _to_boundary(s, ds)))
        x = np.where(free, x + a * dx, 0.0)
        return x / x.sum(), np.where(free, s + a * ds, 0.0), nu + a * dnu


def _newton_step(solve: Callable[[np.ndarray], np.ndarray], one: np.ndarray, dual: np.ndarray,
                 complementarity: np.ndarray, p: np.ndarray, s: np.ndarray,
                 free: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The Newton step ``(dp, ds, dnu)`` towards ``-r - s + nu 1 = 0``, ``p s = target`` and ``sum p = 1`` (kept),
    with ``complementarity = p s - target`` and ``one = W^{-1} 1``: ``ds = -(complementarity + s dp) / p``
    leaves ``W dp + dnu 1 = -dual - complementarity / p``, ``sum dp = 0``."""
    held = np.where(free, p, 1.0)
    base = solve(np.where(free, -dual - complementarity / held, 0.0))
    dnu = float(base[free].sum() / one[free].sum())
    dp = np.where(free, base - dnu * one, 0.0)
    ds = np.where(free, -(complementarity + s * dp) / held, 0.0)
    return dp, ds, dnu


def _to_boundary(v: np.ndarray, dv: np.ndarray) -> float:
    """The longest step ``a <= 1`` keeping ``v + a dv >= 0`` (``v >= 0``; entries where both are 0 do not bind)."""
    down = dv < 0
    return min(1.0, float(np.min(-v[down] / dv[down]))) if down.any() else 1.0


def _block_solver(w: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``b -> w^{-1} b`` for a stack of symmetric positive definite blocks ``w`` (blocks, m, m) and ``b``
    (blocks, m): small blocks solved all at once by NumPy (LU), larger ones by their Cholesky factors.

    Raises
    ------
    numpy.linalg.LinAlgError
        If a block is singular, or (a large one) not positive definite, to rounding.
    """
    if w.shape[1] < SMALL_BLOCK:
        return lambda b: np.linalg.solve(w, b[..., None])[..., 0]
    factors = [cho_factor(block, lower=True, check_finite=False) for block in w]
    return lambda b: np.stack([cho_solve(f, v, check_finite=False) for f, v in zip(factors, b)])
