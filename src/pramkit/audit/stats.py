"""The statistics of the audits: Clopper-Pearson intervals, Holm's step-down control and a
goodness-of-fit test of one row of a transition table.

* :func:`clopper_pearson` -- the exact binomial interval (Clopper and Pearson 1934) from beta
  quantiles; the engine audit's empirical epsilon rests on it (Arcolezi and Gambs, LDP-Auditor,
  PETS 2024, section 4).
* :func:`holm` -- Holm's (1979) step-down procedure: the family-wise error rate of all the
  goodness-of-fit tests of a release audit (every row of every variable) is at most ``alpha``.
* :func:`row_pvalue` -- Pearson's chi-square test of observed released counts against
  ``n_k M[k, .]``, pooling the cells whose expected count is below :data:`MIN_EXPECTED`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

#: Cells of a row whose expected count is below this are pooled into one before the chi-square test.
MIN_EXPECTED = 5.0


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """The two one-sided Clopper-Pearson bounds of a binomial proportion, each at level ``1 - alpha``.

    Parameters
    ----------
    successes : int
        Events seen, ``0 <= successes <= trials``.
    trials : int
        Independent trials, at least 1.
    alpha : float
        Error probability of each bound, in (0, 1).

    Returns
    -------
    tuple of float
        ``(lower, upper)``: ``P(p < lower) <= alpha`` and ``P(p > upper) <= alpha``.

    Examples
    --------
    The two-sided 95 % interval of 7 events in 20 trials is the pair of one-sided 97.5 % bounds,
    as :func:`scipy.stats.binomtest` gives it:

    >>> from scipy import stats
    >>> lo, hi = clopper_pearson(7, 20, 0.025)
    >>> ci = stats.binomtest(7, 20).proportion_ci(0.95, method="exact")
    >>> bool(np.isclose(lo, ci.low) and np.isclose(hi, ci.high))
    True
    >>> clopper_pearson(0, 10, 0.05)[0], clopper_pearson(10, 10, 0.05)[1]
    (0.0, 1.0)
    """
    lower = 0.0 if successes == 0 else float(special.betaincinv(successes, trials - successes + 1, alpha))
    upper = 1.0 if successes == trials else float(special.betaincinv(successes + 1, trials - successes, 1.0 - alpha))
    return lower, upper


def holm(pvalues: ArrayLike, alpha: float) -> np.ndarray:
    """Which hypotheses Holm's step-down procedure rejects at family-wise level ``alpha``.

    The smallest p-value is compared with ``alpha / m``, the next with ``alpha / (m - 1)``, ...;
    the procedure stops at the first that is not below its threshold.  NaN p-values (no test) are
    never rejected and do not count in m.

    Parameters
    ----------
    pvalues : array-like of float
        One p-value per hypothesis (NaN: not tested).
    alpha : float
        The family-wise error rate.

    Returns
    -------
    numpy.ndarray of bool
        True where the hypothesis is rejected.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, float("nan")], 0.05).tolist()
    [True, False, False, False]
    >>> holm([0.001, 0.02, 0.04], 0.05).tolist()   # 0.001 < 0.05/3, 0.02 < 0.05/2, 0.04 < 0.05
    [True, True, True]
    """
    p = np.asarray(pvalues, dtype=float)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    m = order.size
    out = np.zeros(p.shape, dtype=bool)
    for i, index in enumerate(order):
        if p[index] >= alpha / (m - i):
            break
        out[index] = True
    return out


def row_pvalue(observed: ArrayLike, probabilities: ArrayLike) -> float:
    """Pearson's chi-square p-value of one row of a transition table against its matrix row.

    Only the cells the row can reach (positive probability) are tested: a count in a zero cell
    is an impossible transition, reported apart.  Cells expected below :data:`MIN_EXPECTED` are
    pooled into one cell (with the others when that pool is itself too small).

    Parameters
    ----------
    observed : array-like of int
        Released counts of the records with one original category.
    probabilities : array-like of float
        The matrix row ``M[k, .]``.

    Returns
    -------
    float
        The p-value; NaN when fewer than two cells are left to test.

    Examples
    --------
    >>> round(row_pvalue([50, 50], [0.5, 0.5]), 6), round(row_pvalue([70, 30], [0.5, 0.5]), 6)
    (1.0, 6.3e-05)
    >>> row_pvalue([3, 1], [0.5, 0.5])   # too few records: no test
    nan
    """
    obs = np.asarray(observed, dtype=float)
    prob = np.asarray(probabilities, dtype=float)
    reach = prob > 0
    obs, prob = obs[reach], prob[reach] / prob[reach].sum()
    expected = obs.sum() * prob
    small = expected < MIN_EXPECTED
    if small.any():
        pooled_obs, pooled_exp = obs[small].sum(), expected[small].sum()
        obs, expected = obs[~small], expected[~small]
        if pooled_exp >= MIN_EXPECTED or obs.size == 0:
            obs, expected = np.append(obs, pooled_obs), np.append(expected, pooled_exp)
        elif obs.size:
            smallest = int(np.argmin(expected))
            obs[smallest] += pooled_obs
            expected[smallest] += pooled_exp
    if obs.size < 2 or expected.min() < MIN_EXPECTED:
        return math.nan
    statistic = float(((obs - expected) ** 2 / expected).sum())
    return float(special.chdtrc(obs.size - 1, statistic))


def margin_pvalue(original: ArrayLike, matrix: ArrayLike, released: ArrayLike) -> float:
    """A goodness-of-fit p-value of the released counts of a variable whose rows were shuffled.

    With ``n_k`` records of original category k released independently through row k of M, the
    released counts ``R`` are a sum of independent multinomials: mean ``mu = M^T n``, covariance
    ``Sigma = diag(mu) - M^T diag(n) M``.  The statistic ``(R - mu)^T Sigma^+ (R - mu)`` is
    chi-square with ``rank(Sigma)`` degrees of freedom in the limit (a Wald test).  Released
    categories expected below :data:`MIN_EXPECTED` are pooled into one, as in :func:`row_pvalue`;
    a released count where nothing is expected is an impossible transition, reported apart.

    Parameters
    ----------
    original : array-like of int
        ``n_k``: the original count of each category.
    matrix : array-like of float
        M (S x S).
    released : array-like of int
        The released count of each category.

    Returns
    -------
    float
        The p-value; NaN when fewer than two pooled categories are left.

    Examples
    --------
    With every record in one category the test is Pearson's on that row (:func:`row_pvalue`):

    >>> m = np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    >>> bool(np.isclose(margin_pvalue([100, 0, 0], m, [41, 37, 22]), row_pvalue([41, 37, 22], m[0])))
    True
    """
    n = np.asarray(original, dtype=float)
    m = np.asarray(matrix, dtype=float)
    r = np.asarray(released, dtype=float)
    mu = m.T @ n
    reach = mu > 0
    m, r, mu = m[:, reach], r[reach], mu[reach]
    small = mu < MIN_EXPECTED
    if small.any():
        pooled = m[:, small].sum(axis=1, keepdims=True)
        m = np.hstack([m[:, ~small], pooled])
        r = np.append(r[~small], r[small].sum())
        mu = np.append(mu[~small], mu[small].sum())
        if mu[-1] < MIN_EXPECTED and mu.size > 1:  # the pool is still too small: into the smallest other
            target = int(np.argmin(mu[:-1]))
            m[:, target] += m[:, -1]
            r[target] += r[-1]
            mu[target] += mu[-1]
            m, r, mu = m[:, :-1], r[:-1], mu[:-1]
    if mu.size < 2:
        return math.nan
    sigma = np.diag(mu) - m.T @ (n[:, None] * m)
    values, vectors = np.linalg.eigh(sigma)
    keep = values > 1e-9 * values.max()
    if not keep.any():
        return math.nan
    z = vectors[:, keep].T @ (r - mu)
    statistic = float(np.sum(z * z / values[keep]))
    return float(special.chdtrc(int(keep.sum()), statistic))
