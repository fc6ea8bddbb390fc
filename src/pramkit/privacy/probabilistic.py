"""Privacy of sampling and of misclassification with zeros (Shlomo and Skinner 2012, secs. 3-4).

* Recoding and random swapping written as misclassification matrices (sec. 4),
  so that :func:`pramkit.privacy.epsilon.matrix_epsilon` applies to them.
* (epsilon, delta)-probabilistic differential privacy of a matrix with zeros
  for a given file (sec. 4): the probability ``delta`` of a "bad" released
  table, on which no finite epsilon holds.
* The Chaudhuri-Mishra rare-cell threshold ``2 eps^-1 log(2k / delta)`` of
  Bernoulli sampling (sec. 3, numerical example: 77.3 for ``k = 2^16``,
  ``eps = delta = 1/3``).
* ``P(F = 1 | f = 1) = exp(-lambda (1 - pi))``, Figure 1.

Matrices follow the pramkit convention ``M[k, j] = P(released j | original k)``
(the paper writes the transpose).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pramkit._json import to_jsonable
from pramkit.errors import MatrixError, ParameterError
from pramkit.labels import Label
from pramkit.matrix import JSONValue, PramMatrix, Provenance


def recoding_matrix(categories: Sequence[Label], groups: Sequence[Sequence[Label]]) -> PramMatrix:
    """Global recoding as a 0/1 misclassification matrix (sec. 4, "Recoding").

    Each group of categories is released as its first member; categories in
    no group are released unchanged.  Any group of two or more makes a column
    mix zeros and ones, so epsilon is infinite.

    Parameters
    ----------
    categories : sequence of labels
        The categories of the variable, in the order of rows and columns.
    groups : sequence of sequences of labels
        Disjoint groups of categories, each released as its first member.

    Returns
    -------
    PramMatrix
        A 0/1 matrix with provenance ``method="recoding"`` and the groups
        as its parameters.

    Raises
    ------
    MatrixError
        If a group is empty, names an unknown category, or overlaps another.

    Examples
    --------
    Recoding ``c`` and ``d`` into one class: row ``d`` is released as ``c``
    with certainty, column ``d`` is never released.

    >>> rec = recoding_matrix(["a", "b", "c", "d"], [["c", "d"]])
    >>> rec.matrix.astype(int).tolist()
    [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    >>> rec.epsilon
    inf
    """
    cats = list(categories)
    target = list(range(len(cats)))
    seen: set[int] = set()
    for group in groups:
        try:
            members = [cats.index(c) for c in group]
        except ValueError:
            raise MatrixError(f"group {list(group)} names a value that is not one of the categories {cats}") from None
        if not members or seen & set(members):
            raise MatrixError(f"group {list(group)} is empty or overlaps another group")
        seen |= set(members)
        for k in members:
            target[k] = members[0]
    m = np.zeros((len(cats), len(cats)))
    m[np.arange(len(cats)), target] = 1.0
    groups_json: list[JSONValue] = [to_jsonable(list(g)) for g in groups]
    return PramMatrix(m, cats, Provenance(method="recoding", parameters={"groups": groups_json}))


def swapping_matrix(
    counts: ArrayLike, categories: Sequence[Label] = (), *, swap_rate: float | None = None
) -> PramMatrix:
    """Random data swapping of one variable as a misclassification matrix (sec. 4, "Random Data Swapping").

    A record takes part in a swap with probability ``swap_rate`` (default
    ``2/n``: one random pair of the ``n`` records swapped) and its partner is a
    uniformly chosen other record, so

        M[k, j] = (1 - rate) [j = k] + rate (f_j - [j = k]) / (n - 1).

    The paper's pair probabilities ``f_j1 f_j2 / C(n, 2)`` and
    ``C(f_j, 2) / C(n, 2)`` are the joint law of the values of the swapped
    pair; ``(f_j - [j = k]) / (n - 1)`` is the same law conditioned on the
    record's own value.  No category with a zero count and a rate below 1: no
    zero entry in a released column, hence a finite epsilon (a rate of 1, the
    default 2/n when n = 2, swaps every record: the diagonal is then 0).

    Parameters
    ----------
    counts : array-like of int, shape (S,)
        The file's count ``f_j`` of each category, S >= 2, at least two records.
    categories : sequence of labels, optional
        Labels of the categories (default ``0, ..., S - 1``).
    swap_rate : float, optional
        Probability that a record is swapped, in [0, 1]; default ``2 / n``.

    Returns
    -------
    PramMatrix
        The row-stochastic matrix, provenance ``method="random_swapping"``
        with the rate used.

    Raises
    ------
    ParameterError
        If the counts are not at least two non-negative integers with a
        total of at least 2, or the rate lies outside [0, 1].

    Examples
    --------
    A file of 100 records (50, 30, 20), each swapped with probability 0.1:

    >>> sw = swapping_matrix([50, 30, 20], ["x", "y", "z"], swap_rate=0.1)
    >>> sw.matrix.round(4).tolist()
    [[0.9495, 0.0303, 0.0202], [0.0505, 0.9293, 0.0202], [0.0505, 0.0303, 0.9192]]
    >>> math.isclose(sw.matrix[0, 0], 0.9 + 0.1 * (50 - 1) / 99)     # kept, or swapped with another x
    True
    >>> 0 < sw.epsilon < math.inf
    True
    """
    f = np.asarray(counts, dtype=float)
    if f.ndim != 1 or f.size < 2 or np.any(f < 0) or not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
        raise ParameterError("counts must be a 1-D array of at least two non-negative integer counts")
    n = f.sum()
    if n < 2:
        raise ParameterError("swapping needs at least two records")
    rate = 2.0 / n if swap_rate is None else float(swap_rate)
    if not 0 <= rate <= 1:
        raise ParameterError(f"swap_rate must lie in [0, 1], got {swap_rate!r}")
    partner = (f[None, :] - np.eye(f.size)) / (n - 1)
    partner = np.clip(partner, 0.0, None)  # rows of empty categories: never used
    partner /= partner.sum(axis=1, keepdims=True)
    m = (1.0 - rate) * np.eye(f.size) + rate * partner
    return PramMatrix(m, tuple(categories), Provenance(method="random_swapping", parameters={"swap_rate": rate}))


@dataclass(frozen=True)
class BadOutcomeProbability:
    """delta of (epsilon, delta)-probabilistic DP of a misclassification for one file (sec. 4).

    A released table is bad when, for some released value j with zeros in its
    column (``A_j = {k: M[k, j] = 0}`` not empty), ``f~_j = n - sum_{k in A_j} f_k``:
    every record that could be released as j was.  Changing one record from
    a category outside ``A_j`` into ``A_j`` makes that table impossible.

    log_terms: log P(column j full) = sum_{k not in A_j} f_k log M[k, j], per column
        with zeros (-inf where impossible), natural log
    delta_lower: the largest single term (a lower bound on delta)
    delta_upper: the union bound, sum of the terms (an upper bound on delta)
    delta: exact by inclusion-exclusion when at most ``exact_limit`` columns
        contribute, else ``None``
    columns: the released values j whose columns contain zeros

    Examples
    --------
    ``delta_lower <= delta <= delta_upper`` always holds:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.9, 0.1, 0.0], [0.1, 0.8, 0.1], [0.0, 0.1, 0.9]], ["lo", "mid", "hi"])
    >>> bad = bad_outcome_probability(m, [30, 50, 20])
    >>> bad.columns, bad.delta_lower <= bad.delta <= bad.delta_upper
    (('lo', 'hi'), True)
    """

    log_terms: tuple[float, ...]
    delta_lower: float
    delta_upper: float
    delta: float | None
    columns: tuple[Label, ...]


def bad_outcome_probability(
    matrix: PramMatrix, counts: ArrayLike, *, exact_limit: int = 16
) -> BadOutcomeProbability:
    """Probability that perturbing a file with counts ``f`` by ``matrix`` gives a bad table.

    Shlomo and Skinner (2012), section 4: the released table is bad when, for
    some released value j whose column has zeros (``A_j = {k: M[k, j] = 0}``),
    ``f~_j = n - sum_{k in A_j} f_k``; epsilon-DP fails on a bad table, and
    the matrix is (epsilon, delta)-probabilistically DP for this file with
    ``delta`` the probability of one.  The event of column j has probability
    ``prod_{k not in A_j} M[k, j]^f_k``; two such events exclude each other
    when a category with records reaches both columns, and are independent
    otherwise.

    Parameters
    ----------
    matrix : PramMatrix
        The misclassification matrix.
    counts : array-like, shape (S,)
        The file's count of each original category.
    exact_limit : int, default 16
        Compute delta exactly (inclusion-exclusion over ``2^c`` subsets of the
        c columns with zeros) only up to this many columns.

    Returns
    -------
    BadOutcomeProbability
        The per-column terms and the bounds (and, if computed, the exact value) of delta.

    Raises
    ------
    ParameterError
        If ``counts`` is not one non-negative finite number per category.

    Examples
    --------
    A tridiagonal matrix: releasing ``lo`` rules ``hi`` out and vice versa.
    With counts (3, 5, 2) the table is bad if all eight records that can be
    released as ``lo`` are (``0.9^3 0.1^5``), or all seven that can be
    released as ``hi`` are (``0.1^5 0.9^2``); both need the five ``mid``
    records, so the events are disjoint and delta is their sum:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.9, 0.1, 0.0], [0.1, 0.8, 0.1], [0.0, 0.1, 0.9]], ["lo", "mid", "hi"])
    >>> bad = bad_outcome_probability(m, [3, 5, 2])
    >>> bad.columns
    ('lo', 'hi')
    >>> math.isclose(bad.delta, 0.9**3 * 0.1**5 + 0.1**5 * 0.9**2), math.isclose(bad.delta_lower, 0.1**5 * 0.9**2)
    (True, True)
    """
    f = np.asarray(counts, dtype=float)
    if f.shape != (matrix.size,) or np.any(f < 0) or not np.all(np.isfinite(f)):
        raise ParameterError(f"counts must be {matrix.size} non-negative numbers, one per category")
    m = matrix.matrix
    zero_cols = [j for j in range(matrix.size) if np.any(m[:, j] == 0)]
    log_terms = []
    for j in zero_cols:
        reach = (m[:, j] > 0) & (f > 0)
        with np.errstate(divide="ignore"):
            log_terms.append(float((f[reach] * np.log(m[reach, j])).sum()))
    terms = np.exp(np.array(log_terms))
    exact = None
    if len(zero_cols) <= exact_limit:
        exact = _inclusion_exclusion(m, f, zero_cols)
    return BadOutcomeProbability(
        log_terms=tuple(log_terms),
        delta_lower=float(terms.max(initial=0.0)),
        delta_upper=float(min(1.0, terms.sum())),
        delta=exact,
        columns=tuple(matrix.categories[j] for j in zero_cols),
    )


def _inclusion_exclusion(m: np.ndarray, f: np.ndarray, cols: Sequence[int]) -> float:
    """P(union of 'column j full' events): events of columns sharing a reachable occupied
    category cannot happen together; a joint event's probability is the product of its terms."""
    reach = [(m[:, j] > 0) & (f > 0) for j in cols]
    total = 0.0
    for mask in range(1, 1 << len(cols)):
        members = [i for i in range(len(cols)) if mask >> i & 1]
        occupied = np.zeros(m.shape[0], dtype=int)
        for i in members:
            occupied += reach[i]
        if np.any(occupied > 1):
            continue  # a record cannot be released as two values
        log_p = sum(float((f[reach[i]] * np.log(m[reach[i], cols[i]])).sum()) for i in members)
        total += (-1) ** (len(members) + 1) * math.exp(log_p)
    return float(min(max(total, 0.0), 1.0))


def rare_cell_threshold(cells: int, *, epsilon: float, delta: float) -> float:
    """Chaudhuri and Mishra's threshold ``2 eps^-1 log(2k / delta)`` (sec. 3): a good Bernoulli
    sample contains no record of a cell with population count below it.

    Parameters
    ----------
    cells : int
        The number k of cells of the key, >= 1.
    epsilon : float
        Finite, > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The population count below which a cell is rare.

    Raises
    ------
    ParameterError
        For parameters outside those ranges.

    Examples
    --------
    The paper's numerical example, ``k = 2^16`` cells and
    ``epsilon = delta = 1/3``: cells with fewer than 78 population units
    would have to be suppressed.

    >>> round(rare_cell_threshold(2**16, epsilon=1 / 3, delta=1 / 3), 1)
    77.3
    """
    if cells < 1 or not (epsilon > 0 and math.isfinite(epsilon)) or not 0 < delta < 1:
        raise ParameterError("need cells >= 1, epsilon > 0 finite and 0 < delta < 1")
    return 2.0 / epsilon * math.log(2.0 * cells / delta)


def population_unique_probability(lam: ArrayLike, sampling_fraction: ArrayLike) -> np.ndarray:
    """P(F = 1 | f = 1) = exp(-lambda (1 - pi)) under the Poisson model (sec. 3, Figure 1).

    With ``F_j ~ Poisson(lambda_j)`` and Bernoulli sampling at ``pi_j``,
    ``F_j - f_j | f_j ~ Poisson(lambda_j (1 - pi_j))`` (section 2.1), so a
    sample unique is a population unique with probability
    ``exp(-lambda_j (1 - pi_j))``.

    Parameters
    ----------
    lam : array-like
        Expected population counts lambda, >= 0.
    sampling_fraction : array-like
        Sampling fractions pi in (0, 1] (broadcast against ``lam``).

    Returns
    -------
    numpy.ndarray
        The probabilities, in (0, 1].

    Raises
    ------
    ParameterError
        If a lambda is negative or a sampling fraction outside (0, 1].

    Examples
    --------
    Figure 1's setting (pi = 0.01): a sample unique in a cell expected to
    hold 5 population units is a population unique with probability under 1%:

    >>> population_unique_probability([1.0, 5.0, 20.0], 0.01).round(4).tolist()
    [0.3716, 0.0071, 0.0]
    >>> population_unique_probability(3.0, 1.0).item()       # a census: certain
    1.0
    """
    lv = np.asarray(lam, dtype=float)
    pi = np.asarray(sampling_fraction, dtype=float)
    if np.any(lv < 0) or np.any((pi <= 0) | (pi > 1)):
        raise ParameterError("lambda must be non-negative and the sampling fraction in (0, 1]")
    return np.exp(-lv * (1.0 - pi))
