"""The statistics of the audits: Clopper-Pearson intervals, Holm's step-down control and the
goodness-of-fit tests of a release, exact at every level.

* :func:`clopper_pearson` -- the exact binomial interval (Clopper and Pearson 1934) from beta
  quantiles; the engine audit's empirical epsilon rests on it (Arcolezi and Gambs, LDP-Auditor,
  PETS 2024, section 4).
* :func:`holm` -- Holm's (1979) step-down procedure: the family-wise error rate of all the
  goodness-of-fit tests of a release audit (every row of every variable) is at most ``alpha``.
* :func:`row_pvalue` -- one row of a transition table against ``n_k M[k, .]``: each cell's count
  by the exact binomial test, the row's cells by Bonferroni.
* :func:`margin_pvalue` -- the released counts of a shuffled release against their law, a sum of
  independent binomials per category: each category by Chernoff's bound, the categories by
  Bonferroni.

Both p-values are valid, not approximate: under the matrix, ``P(p <= t) <= t`` for every ``t``, however
few the records and however small the level.  A chi-square approximation is not (its tails far
below 0.001 are off by orders of magnitude when cells are small), and the audit's level is 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special


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


def _bonferroni(pvalues: np.ndarray) -> float:
    """The smallest of the cells' p-values times their number, capped at 1; NaN under two cells.

    Two cells are one test (their counts sum to the constant total), so they count once.
    """
    if pvalues.size < 2:
        return math.nan
    return float(min(1.0, pvalues.min() * (1 if pvalues.size == 2 else pvalues.size)))


def row_pvalue(observed: ArrayLike, probabilities: ArrayLike) -> float:
    """An exact p-value of one row of a transition table against its matrix row.

    Only the cells the row can reach (positive probability) are tested: a count in a zero cell is an
    impossible transition, reported apart.  With ``n`` records in the row, the count of cell j is
    Binomial(n, M[k, j]) under the matrix; its two-sided p-value is twice the smaller tail (exact:
    :func:`scipy.special.bdtr`, which :mod:`scipy.stats` calls too), and the row's is the smallest of them times the number of cells
    (Bonferroni; two cells are one test).  So ``P(p <= t) <= t`` exactly, with no minimum count.

    Parameters
    ----------
    observed : array-like of int
        Released counts of the records with one original category.
    probabilities : array-like of float
        The matrix row ``M[k, .]``.

    Returns
    -------
    float
        The p-value; NaN when the row has no record or reaches fewer than two cells.

    Examples
    --------
    70 heads of 100 fair coins: twice the upper tail of Binomial(100, 1/2):

    >>> from scipy import stats
    >>> bool(np.isclose(row_pvalue([70, 30], [0.5, 0.5]), 2 * stats.binom.sf(69, 100, 0.5)))
    True
    >>> row_pvalue([50, 50], [0.5, 0.5]), row_pvalue([3, 1], [1.0, 0.0])   # no evidence; one cell: no test
    (1.0, nan)
    """
    obs = np.asarray(observed, dtype=float)
    prob = np.asarray(probabilities, dtype=float)
    reach = prob > 0
    obs, prob = obs[reach], prob[reach] / prob[reach].sum()
    counts = np.rint(obs).astype(np.int64)       # scipy's binomial tails take whole counts
    n = int(counts.sum())
    if n == 0:
        return math.nan
    upper = np.where(counts > 0, special.bdtrc(np.maximum(counts - 1, 0), n, prob), 1.0)   # P(X >= x)
    tails = np.minimum(special.bdtr(counts, n, prob), upper)
    return _bonferroni(np.minimum(1.0, 2 * tails))


def _chernoff_log(counts: np.ndarray, p: np.ndarray, released: np.ndarray) -> np.ndarray:
    """Chernoff's bound, in logs, on the tail beyond ``released`` of each column's sum of binomials.

    Column j's count is a sum over k of independent Binomial(n_k, p[k, j]); for every ``s > 0``,
    ``P(X >= r) <= E[s^X] / s^r`` when ``s >= 1`` and ``P(X <= r) <= E[s^X] / s^r`` when ``s <= 1``.
    The bound holds at any ``s`` on the tail's side, so the minimising ``s`` is found by bisection (on
    log s, in [-60, 60], where the derivative of the exponent changes sign) and an inexact minimum only
    loosens it.
    """
    def exponent(log_s: np.ndarray) -> np.ndarray:
        s = np.exp(log_s)
        return counts @ np.log1p(p * (s - 1)) - log_s * released

    def slope(log_s: np.ndarray) -> np.ndarray:     # d exponent / d log s: the tilted mean less r
        s = np.exp(log_s)
        return counts @ (p * s / (1 + p * (s - 1))) - released

    lo, hi = np.full(released.shape, -60.0), np.full(released.shape, 60.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        up = slope(mid) > 0
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    mean = counts @ p
    log_s = np.where(released > mean, lo, hi)     # the side of 0 the tail is on: s >= 1 above the mean
    log_s = np.where(released > mean, np.maximum(log_s, 0.0), np.minimum(log_s, 0.0))
    return np.minimum(exponent(log_s), 0.0)


def margin_pvalue(original: ArrayLike, matrix: ArrayLike, released: ArrayLike) -> float:
    """A valid p-value of the released counts of a variable whose rows were shuffled.

    With ``n_k`` records of original category k released independently through row k of M, the
    released count of category j is a sum of independent Binomial(n_k, M[k, j]).  Each category's
    two-sided p-value is twice Chernoff's bound on the tail it lies in (the bound at its minimum over
    the tilt, a valid p-value at any level), and the variable's is the smallest of them times the
    number of categories reached (Bonferroni; two are one test).  A released count where nothing is
    expected is an impossible transition, reported apart.

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
        The p-value; NaN when fewer than two categories can be reached.

    Examples
    --------
    With every record in one category, Chernoff's bound on a binomial tail is ``exp(-n KL)``, the
    Kullback-Leibler divergence of the observed share from M's (Hoeffding 1963):

    >>> from scipy.special import rel_entr
    >>> m = np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    >>> kl = lambda x, p: rel_entr(x, p) + rel_entr(1 - x, 1 - p)
    >>> bound = min(np.exp(-100 * kl(x / 100, p)) for x, p in zip([41, 37, 22], m[0]))
    >>> bool(np.isclose(margin_pvalue([100, 0, 0], m, [41, 37, 22]), min(1.0, 3 * 2 * bound)))
    True
    """
    n = np.asarray(original, dtype=float)
    m = np.asarray(matrix, dtype=float)
    r = np.asarray(released, dtype=float)
    reach = m.T @ n > 0
    if np.count_nonzero(reach) < 2:
        return math.nan
    bound = np.exp(_chernoff_log(n, m[:, reach], r[reach]))
    return _bonferroni(np.minimum(1.0, 2 * bound))
