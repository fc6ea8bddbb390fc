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

**Survey weights** (:class:`SampleDesign`): each record's terms are multiplied by its sampling weight
``w_i``, ``A = sum_i w_i sum_k q_ik d_ik d_ik^T`` and ``c = sum_i w_i sum_k q_ik d_ik y_i`` are unbiased
for the weighted (Horvitz-Thompson) estimates of the population's ``X^T X`` and ``X^T y``, and
``beta_hat`` is consistent for the population's (census) least-squares coefficients.  The middle of
the sandwich is the design's, by Taylor linearisation as for tables
(:mod:`pramkit.estimate.weighted`; R's ``survey::svyglm``): with strata ``h`` and primary sampling
units ``j`` (a record its own PSU without a PSU column, one stratum without strata),

    V = sum_h [(1 - f_h) n_h / (n_h - 1) sum_j (z_hj - zbar_h)(z_hj - zbar_h)^T + f_h V_pram,h],

with ``z_hj = sum_{i in j} w_i psi_i`` and ``f_h`` the stratum's sampling fraction (0 without a
finite population correction).  Given the sample the PSU totals stay independent (PRAM acts record
by record), so the ultimate-cluster term measures the design's variance and PRAM's together; the
PRAM part alone, ``V_pram = sum_i w_i^2 (psi_i psi_i^T - sum_k q_ik u_ik u_ik^T)`` (the ``"pram"``
middle above, weighted), is reported beside it.  A record left out for a missing value stays in
its stratum and PSU with ``psi_i = 0`` (a domain estimate keeps the design, as tables and R do).

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
Binder, D. A. (1983). On the variances of asymptotically normal estimators from complex surveys.
*International Statistical Review* 51(3), 279-292.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from pramkit.errors import DataError, ParameterError
from pramkit.estimate.covariance import check_variance_kind
from pramkit.estimate.survey import CellTotals, DesignArrays, SurveyDesign, stratum_parts

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
    pram_covariance: np.ndarray | None = None  #: (p, p) with a design: PRAM's part of ``covariance``


class SampleDesign(NamedTuple):
    """The survey design of a weighted fit (module docstring).

    Attributes
    ----------
    survey : pramkit.estimate.survey.SurveyDesign
        The design's columns and its rule for a stratum of one PSU.
    arrays : pramkit.estimate.survey.DesignArrays
        Their values for every record of the file, those left out of the fit for a missing value too
        (:meth:`pramkit.estimate.survey.SurveyDesign.read`).
    rows : numpy.ndarray
        ``(n,)`` the fitted records' positions in ``arrays``.
    """

    survey: SurveyDesign
    arrays: DesignArrays
    rows: np.ndarray


def moment_fit(base: np.ndarray, shift: np.ndarray, weights: np.ndarray, y: np.ndarray, *,
               variance: str = "multinomial", design: SampleDesign | None = None) -> MomentFit:
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
    design : SampleDesign, optional
        Survey weights, strata and PSUs: the weighted estimator, the design's linearised middle
        (``variance`` must then be ``"multinomial"``) and PRAM's part of it beside.

    Returns
    -------
    MomentFit

    Raises
    ------
    numpy.linalg.LinAlgError
        When ``A`` is singular (the coefficients are not identified).
    pramkit.errors.ParameterError
        For another ``variance``, ``"pram"`` with a design, a stratum of one PSU that the design refuses.
    pramkit.errors.DataError
        Every weight of the fitted records is zero.

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

    Weighted, every record its own PSU in one stratum: weighted least squares, with the middle
    ``n / (n - 1) sum_i (w_i psi_i - mean)(w_i psi_i - mean)^T`` (R's ``svyglm``):

    >>> import pandas as pd
    >>> from pramkit.estimate.survey import SurveyDesign
    >>> w = rng.uniform(1, 3, 50)
    >>> sample = SampleDesign(SurveyDesign("w"), SurveyDesign("w").read(pd.DataFrame({"w": w})), np.arange(50))
    >>> fit = moment_fit(base, shift, np.eye(2)[x], y, design=sample)
    >>> wls = np.linalg.lstsq(design * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
    >>> scores = design * (w * (y - design @ wls))[:, None]
    >>> bread = np.linalg.inv(design.T @ (design * w[:, None]))
    >>> middle = np.cov(scores.T) * 50
    >>> np.allclose(fit.beta, wls), np.allclose(fit.covariance, bread @ middle @ bread), float(np.abs(fit.pram_covariance).max()) < 1e-9
    (True, True, True)
    """
    check_variance_kind(variance)
    if design is not None and variance != "multinomial":
        raise ParameterError(f"variance {variance!r} is for an unweighted fit; with weights or a survey design the "
                             "standard errors are the design's and PRAM's together (PRAM's part is given as pram_se)")
    w = np.ones(len(y)) if design is None else design.arrays.weights[design.rows]
    if design is not None and not w.sum() > 0:
        raise DataError(f"every weight in column {design.survey.weights!r} of the records fitted is zero")
    a = gram(base, shift, weights * w[:, None])
    scale = np.sqrt(np.abs(np.diag(a)))
    if not (scale > 0).all() or np.linalg.cond(a / np.outer(scale, scale)) > MAX_GRAM_CONDITION:
        raise np.linalg.LinAlgError("the corrected normal equations are singular")
    beta = np.linalg.solve(a, weighted_rows(base, shift, weights * (w * y)[:, None]))
    resid = y[:, None] - ((base @ beta)[:, None] + shift @ beta)
    scaled = weights * resid
    psi = base * scaled.sum(axis=1)[:, None] + scaled @ shift          # (n, p): psi_i(beta_hat)
    bread = np.linalg.inv(a)
    sigma2 = float((scaled * resid * w[:, None]).sum() / w.sum())
    if design is None:
        middle = psi.T @ psi
        if variance == "pram":
            middle = middle - gram(base, shift, scaled * resid)
        return MomentFit(beta, _sandwich(bread, middle), sigma2, resid)
    scores = psi * w[:, None]                                          # w_i psi_i

    def pram_part(rows: np.ndarray) -> np.ndarray:
        """``sum_i w_i^2 (psi_i psi_i^T - sum_k q_ik u_ik u_ik^T)`` over the fitted records ``rows``."""
        return scores[rows].T @ scores[rows] - gram(base[rows], shift, (scaled * resid)[rows] * (w[rows] ** 2)[:, None])

    middle = linearized_middle(scores, design, pram_part)
    return MomentFit(beta, _sandwich(bread, middle), sigma2, resid,
                     _sandwich(bread, pram_part(np.arange(len(y)))))


def _sandwich(bread: np.ndarray, middle: np.ndarray) -> np.ndarray:
    """``bread middle bread^T``, symmetric."""
    cov = bread @ middle @ bread.T
    return (cov + cov.T) / 2


def linearized_middle(scores: np.ndarray, design: SampleDesign,
                      pram_part: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """The design covariance of ``sum_i s_i`` by Taylor linearisation (the module docstring's ``V``).

    ``sum_h [(1 - f_h) n_h / (n_h - 1) sum_j (z_hj - zbar_h)(z_hj - zbar_h)^T + f_h P_h]`` with
    ``z_hj`` the sum of ``scores`` over PSU j of stratum h: the estimator of tables
    (:func:`pramkit.estimate.survey.stratum_parts`, its single-PSU rules, messages and finite
    population correction), applied to the positive and negative parts of the PSU totals (each
    a vector of totals ``>= 0``, as tables' cell counts are) and folded back by ``z = z+ - z-``:
    exact, as the estimator is a quadratic form of the totals.

    Parameters
    ----------
    scores : numpy.ndarray
        ``(n, p)``: ``s_i`` of each fitted record (the records ``design.rows``).
    design : SampleDesign
        The design of every record of the file; a record not fitted adds 0 to its PSU.
    pram_part : callable, optional
        ``P_h`` of the fitted records of a stratum (their positions among the fitted records), in
        a stratum sampled in part (``f_h > 0``); 0 when None.

    Returns
    -------
    numpy.ndarray
        ``(p, p)``.

    Examples
    --------
    Two strata of two PSUs each: the PSU totals 1, 3 and 2, 2 give ``2 (1 + 1) + 0 = 4``.

    >>> import pandas as pd
    >>> from pramkit.estimate.survey import SurveyDesign
    >>> survey = SurveyDesign("w", strata="h", psu="j")
    >>> frame = pd.DataFrame({"w": [1.0] * 5, "h": ["a", "a", "a", "b", "b"], "j": [1, 2, 2, 1, 2]})
    >>> sample = SampleDesign(survey, survey.read(frame), np.arange(5))
    >>> linearized_middle(np.array([[1.0], [1.0], [2.0], [2.0], [2.0]]), sample)
    array([[4.]])
    """
    survey, arrays = design.survey, design.arrays
    n_all, p = len(arrays.weights), scores.shape[1]
    stratum = np.zeros(n_all, dtype=np.int64) if arrays.strata is None else pd.factorize(arrays.strata)[0]
    label = np.arange(n_all) if arrays.psu is None else pd.factorize(arrays.psu)[0]
    psu, first = pd.factorize(stratum * (int(label.max()) + 1) + label)    # PSUs nested in strata
    owner = np.zeros(len(first), dtype=np.int64)
    owner[psu[::-1]] = np.arange(n_all)[::-1]                          # each PSU's first record
    z = np.zeros((len(first), p))
    np.add.at(z, psu[design.rows], scores)                             # z_hj, 0 from a record not fitted
    if arrays.fpc is not None and (arrays.fpc != arrays.fpc[owner][psu]).any():
        raise DataError(f"column {survey.fpc!r} must be constant within a stratum; a PSU holds two values")
    split = np.concatenate([np.maximum(z, 0.0), np.maximum(-z, 0.0)], axis=1).ravel()
    if survey.psu is None:   # every record its own PSU, kept by its position
        survey = dataclasses.replace(survey, psu="(record)")
    totals = CellTotals(2 * p, survey)
    strata, fpc = ((None if v is None else np.repeat(v[owner], 2 * p)) for v in (arrays.strata, arrays.fpc))
    totals.add(np.tile(np.arange(2 * p), len(first)), split, strata=strata,
               psu=np.repeat(np.arange(len(first)), 2 * p), fpc=fpc)
    fold = np.vstack([np.eye(p), -np.eye(p)])                          # z = z+ - z-
    middle = np.zeros((p, p))
    for part in stratum_parts(totals):
        middle += (1.0 - part.fraction) * (fold.T @ part.covariance @ fold)
        if part.fraction and pram_part is not None:
            inside = np.ones(n_all, dtype=bool) if arrays.strata is None else arrays.strata == part.label
            middle += part.fraction * pram_part(np.flatnonzero(inside[design.rows]))
    return middle


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


__all__ = ["MAX_GRAM_CONDITION", "MIN_CATEGORY", "SKEWNESS_LIMIT", "VARIANCE_RATIO_LIMIT", "MomentFit", "ResidualCheck",
           "SampleDesign", "gram", "linearized_middle", "moment_fit", "residual_check", "weighted_rows"]
