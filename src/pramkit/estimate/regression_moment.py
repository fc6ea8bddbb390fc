"""Linear regression on a released file by moments: no model of the outcome, sandwich standard errors.

The least-squares coefficients of the original file are ``beta = (X^T X)^-1 X^T y``.  Both
``X^T X`` and ``X^T y`` are sums over the records of terms that depend on a record's true
categories ``x_i`` of the perturbed covariates only through the indicator ``e_{x_i}`` of their
combination, linearly:

    X^T X = sum_i sum_k 1{x_i = k} d_ik d_ik^T,    X^T y = sum_i sum_k 1{x_i = k} d_ik y_i,

with ``d_ik`` record i's design row had its perturbed covariates been the combination k (its
unperturbed covariates as released).  The released combination ``z_i`` has
``E[e_{z_i} | x_i] = M^T e_{x_i}``, so ``q_i = (M^T)^-1 e_{z_i}``, the row ``z_i`` of ``M^-1``
(the Kronecker product of the perturbed covariates' inverses), is an unbiased estimate of
``e_{x_i}``: the estimator of tables of :mod:`pramkit.estimate.moment`, record by record.  With
the weights ``q_ik`` in place of the indicators, ``A = sum_i sum_k q_ik d_ik d_ik^T`` and
``c = sum_i sum_k q_ik d_ik y_i`` are unbiased for ``X^T X`` and ``X^T y``, whatever the
distribution of the outcome, and ``beta_hat = A^-1 c`` is consistent for the original file's
least-squares coefficients (and, records being sampled, for the population's).  It solves the
corrected normal equations ``sum_i psi_i(beta) = 0`` with the estimating function

    psi_i(beta) = sum_k q_ik d_ik (y_i - d_ik^T beta),

whose expectation given the original record is the record's own least-squares term.  Its
covariance is the sandwich (M-estimation, linearisation) ``A^-1 V A^-1``:

* ``variance="multinomial"`` (records drawn from a population, PRAM on top):
  ``V = sum_i psi_i psi_i^T`` at ``beta_hat``, the HC0 estimator with the PRAM correction inside
  ``psi_i``; with every matrix the identity it is White's HC0 covariance of least squares;
* ``variance="pram"`` (the original file fixed, PRAM the only randomness: the target is the
  original file's least-squares fit): ``V = sum_i psi_i psi_i^T - sum_i sum_k q_ik u_ik u_ik^T``
  with ``u_ik = d_ik (y_i - d_ik^T beta_hat)``; the second sum estimates without bias the
  ``sum_i u_i u_i^T`` of the original records (linear in their indicators again), which the
  first holds beside PRAM's variance.

No model of the outcome enters, so a skewed, zero-inflated or heteroscedastic outcome (incomes)
does not bias the fit; a covariate that is not perturbed is estimated as consistently as the
perturbed ones.  :func:`residual_check` measures the residuals' variance and skewness within
each true category by the same weights: what the likelihood fit (EM with a normal outcome of
one variance) assumes.

References
----------
Cator, Hensbergen and Rozenholc, section 3, estimator (4) (the moment estimator of a table).
Carroll, R. J., Ruppert, D., Stefanski, L. A. and Crainiceanu, C. M. (2006). *Measurement Error in
Nonlinear Models*, 2nd ed., sections 7.4 (corrected scores) and A.6 (sandwich estimators).
White, H. (1980). A heteroskedasticity-consistent covariance matrix estimator. *Econometrica* 48(4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from pramkit.estimate.covariance import check_variance_kind

#: Above this condition number of the (diagonally scaled) corrected Gram matrix the coefficients are not identified.
MAX_GRAM_CONDITION = 1e12
#: A residual skewness beyond this (in absolute value; a normal law has 0) contradicts a normal outcome.
SKEWNESS_LIMIT = 1.0
#: A ratio of the largest to the smallest residual variance of the true categories beyond this contradicts
#: one variance for all of them.
VARIANCE_RATIO_LIMIT = 4.0
#: A category enters the variance ratio when its estimated count is at least this many records (and 1 %).
MIN_CATEGORY = 30


def gram(base: np.ndarray, shift: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_ik w_ik d_ik d_ik^T`` for the rows ``d_ik = base_i + shift_k``, without forming them.

    ``B^T diag(W 1) B + B^T W S + S^T W^T B + S^T diag(1^T W) S``.

    Parameters
    ----------
    base : numpy.ndarray
        ``(n, p)``: each record's design row with the perturbed covariates' columns zero.
    shift : numpy.ndarray
        ``(K, p)``: the perturbed covariates' columns of each combination of their categories.
    w : numpy.ndarray
        ``(n, K)`` weights.

    Returns
    -------
    numpy.ndarray
        ``(p, p)``.

    Examples
    --------
    >>> base = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> shift = np.array([[0.0, 0.0], [0.0, 1.0]])
    >>> w = np.array([[1.0, 0.0], [0.25, 0.75]])
    >>> rows = base[:, None, :] + shift[None, :, :]
    >>> np.allclose(gram(base, shift, w), np.einsum("ik,ika,ikb->ab", w, rows, rows))
    True
    """
    cross = base.T @ (w @ shift)
    return (base * w.sum(axis=1)[:, None]).T @ base + cross + cross.T + (shift.T * w.sum(axis=0)) @ shift


def weighted_rows(base: np.ndarray, shift: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_ik w_ik d_ik`` for the rows ``d_ik = base_i + shift_k``: ``B^T (W 1) + S^T (W^T 1)``.

    Parameters
    ----------
    base, shift, w : numpy.ndarray
        As :func:`gram`.

    Returns
    -------
    numpy.ndarray
        ``(p,)``.

    Examples
    --------
    >>> weighted_rows(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([[0.25, 0.75]]))
    array([1.  , 0.75])
    """
    return base.T @ w.sum(axis=1) + shift.T @ w.sum(axis=0)


class MomentFit(NamedTuple):
    """What :func:`moment_fit` returns."""

    beta: np.ndarray           #: (p,) the coefficients
    covariance: np.ndarray     #: (p, p) their sandwich covariance
    sigma2: float              #: the mean squared residual of the original records, estimated
    residuals: np.ndarray      #: (n, K) ``y_i - d_ik^T beta``


def moment_fit(base: np.ndarray, shift: np.ndarray, weights: np.ndarray, y: np.ndarray, *,
               variance: str = "multinomial") -> MomentFit:
    """The corrected least-squares coefficients ``A^-1 c`` and their sandwich covariance (module docstring).

    Parameters
    ----------
    base, shift : numpy.ndarray
        As :func:`gram`.
    weights : numpy.ndarray
        ``(n, K)``: ``q_i``, the row of ``M^-1`` of record i's released combination (each row sums
        to 1); the indicator of the released combination gives least squares on the released file.
    y : numpy.ndarray
        ``(n,)`` the outcome.
    variance : {"multinomial", "pram"}
        The sandwich's middle: records sampled and perturbed, or the original file fixed.

    Returns
    -------
    MomentFit

    Raises
    ------
    numpy.linalg.LinAlgError
        When ``A`` is singular (the coefficients are not identified).
    pramkit.errors.ParameterError
        For another ``variance``.

    Examples
    --------
    With the indicators of the records' own categories (no perturbation) it is least squares,
    with White's HC0 covariance:

    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 2, 50)
    >>> y = 1.0 + 2.0 * x + rng.normal(size=50)
    >>> base, shift = np.column_stack([np.ones(50), np.zeros(50)]), np.array([[0.0, 0.0], [0.0, 1.0]])
    >>> fit = moment_fit(base, shift, np.eye(2)[x], y)
    >>> design = np.column_stack([np.ones(50), x])
    >>> ols = np.linalg.lstsq(design, y, rcond=None)[0]
    >>> bread = np.linalg.inv(design.T @ design)
    >>> hc0 = bread @ (design.T * (y - design @ ols) ** 2) @ design @ bread
    >>> np.allclose(fit.beta, ols), np.allclose(fit.covariance, hc0)
    (True, True)
    """
    check_variance_kind(variance)
    a = gram(base, shift, weights)
    scale = np.sqrt(np.abs(np.diag(a)))
    if not (scale > 0).all() or np.linalg.cond(a / np.outer(scale, scale)) > MAX_GRAM_CONDITION:
        raise np.linalg.LinAlgError("the corrected normal equations are singular")
    beta = np.linalg.solve(a, weighted_rows(base, shift, weights * y[:, None]))
    resid = y[:, None] - ((base @ beta)[:, None] + shift @ beta)
    scaled = weights * resid
    psi = base * scaled.sum(axis=1)[:, None] + scaled @ shift          # (n, p): psi_i(beta_hat)
    middle = psi.T @ psi
    if variance == "pram":
        middle = middle - gram(base, shift, scaled * resid)
    bread = np.linalg.inv(a)
    cov = bread @ middle @ bread.T
    return MomentFit(beta, (cov + cov.T) / 2, float((scaled * resid).sum() / len(y)), resid)


@dataclass(frozen=True)
class ResidualCheck:
    """The residuals' variance and skewness within each true combination of the perturbed covariates.

    Attributes
    ----------
    source : str
        How the true combinations were weighted: ``"moment"`` (the rows of ``M^-1``, unbiased,
        no outcome model) or ``"em posterior"``.
    categories : tuple of str
        The combinations, as ``name=label`` joined by ``, ``.
    counts, variances, skewness : numpy.ndarray
        Estimated records, mean squared residual and skewness (``nan`` where the estimated
        count or variance is not positive) of each.
    skewness_all : float
        The skewness of all residuals.
    variance_ratio : float
        The largest variance over the smallest, among the categories of at least
        :data:`MIN_CATEGORY` (and 1 %) estimated records (``nan`` with fewer than two).
    warning : str or None
        Why a normal outcome of one variance is contradicted (:data:`SKEWNESS_LIMIT`,
        :data:`VARIANCE_RATIO_LIMIT`), or None.
    """

    source: str
    categories: tuple[str, ...]
    counts: np.ndarray
    variances: np.ndarray
    skewness: np.ndarray
    skewness_all: float
    variance_ratio: float
    warning: str | None

    def to_dict(self) -> dict[str, Any]:
        """As JSON values (``null`` for ``nan``)."""
        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None
        return {"source": self.source, "skewness": num(self.skewness_all), "variance_ratio": num(self.variance_ratio),
                "warning": self.warning,
                "categories": [{"category": c, "count": num(n), "variance": num(v), "skewness": num(s)}
                               for c, n, v, s in zip(self.categories, self.counts, self.variances, self.skewness)]}


def residual_check(weights: np.ndarray, residuals: np.ndarray, categories: Sequence[str], *,
                   source: str = "moment") -> ResidualCheck:
    """The residuals' variance and skewness by true category, and whether they contradict one normal law.

    ``n_k = sum_i w_ik``, ``v_k = sum_i w_ik r_ik^2 / n_k``, skewness
    ``sum_i w_ik r_ik^3 / n_k / v_k^1.5``: with the weights of :func:`moment_fit` unbiased sums of the
    original records' residual powers by category.

    Parameters
    ----------
    weights, residuals : numpy.ndarray
        ``(n, K)``: the weights of each record's true combinations and its residual under each.
    categories : sequence of str
        The K combinations' names.
    source : str
        Recorded in the result.

    Returns
    -------
    ResidualCheck

    Examples
    --------
    Two categories known exactly, residuals of spread 1 and 3: a variance ratio of 9.

    >>> r = np.array([1.0, -1.0, 3.0, -3.0] * 20)
    >>> w = np.repeat(np.eye(2), [2, 2], axis=0)
    >>> check = residual_check(np.tile(w, (20, 1)), np.column_stack([r, r]), ["x=a", "x=b"])
    >>> check.variances.tolist(), float(check.variance_ratio), check.warning is not None
    ([1.0, 9.0], 9.0, True)
    """
    n = residuals.shape[0]
    powers = [(weights * residuals**m).sum(axis=0) for m in (0, 2, 3)]
    with np.errstate(invalid="ignore", divide="ignore"):
        counts = powers[0]
        variances = np.where(counts > 0, powers[1] / counts, np.nan)
        skewness = np.where(variances > 0, powers[2] / counts / np.abs(variances) ** 1.5, np.nan)
    total2, total3 = powers[1].sum() / n, powers[2].sum() / n
    skew_all = total3 / total2**1.5 if total2 > 0 else math.nan
    large = (counts >= max(MIN_CATEGORY, 0.01 * n)) & (variances > 0)
    ratio = float(variances[large].max() / variances[large].min()) if large.sum() >= 2 else math.nan
    reasons = []
    if abs(skew_all) > SKEWNESS_LIMIT:
        reasons.append(f"the residuals' skewness is {skew_all:.2g} (a normal law has 0)")
    if ratio > VARIANCE_RATIO_LIMIT:
        big, small = (categories[int(np.flatnonzero(large)[f(variances[large])])] for f in (np.argmax, np.argmin))
        reasons.append(f"their variance differs by a factor of {ratio:.3g} between the true categories "
                       f"({big} against {small})")
    warning = None
    if reasons:
        warning = ("the normal outcome of one variance that EM assumes is contradicted: " + "; ".join(reasons)
                   + f" (measured by {source} weights); EM's coefficients can then be biased, the moment "
                   "estimator (method 'moment', --regress-method moment) assumes no outcome model")
    return ResidualCheck(source, tuple(categories), counts, variances, skewness, float(skew_all), ratio, warning)


__all__ = ["MAX_GRAM_CONDITION", "MIN_CATEGORY", "SKEWNESS_LIMIT", "VARIANCE_RATIO_LIMIT", "MomentFit", "ResidualCheck", "gram",
           "moment_fit", "residual_check", "weighted_rows"]
