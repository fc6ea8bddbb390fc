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
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import MatrixError, PramkitError
from pramkit.matrix import Label, PramMatrix, Provenance


def recoding_matrix(categories: Sequence[Label], groups: Sequence[Sequence[Label]]) -> PramMatrix:
    """Global recoding as a 0/1 misclassification matrix (sec. 4, "Recoding").

    Each group of categories is released as its first member; categories in
    no group are released unchanged.  Any group of two or more makes a column
    mix zeros and ones, so epsilon is infinite.
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
    groups_json = [list(g) for g in groups]
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
    record's own value.  No category with a zero count: no zero entry in a
    released column, hence a finite epsilon.
    """
    f = np.asarray(counts, dtype=float)
    if f.ndim != 1 or f.size < 2 or np.any(f < 0) or not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
        raise PramkitError("counts must be a 1-D array of at least two non-negative integer counts")
    n = f.sum()
    if n < 2:
        raise PramkitError("swapping needs at least two records")
    rate = 2.0 / n if swap_rate is None else float(swap_rate)
    if not 0 <= rate <= 1:
        raise PramkitError(f"swap_rate must lie in [0, 1], got {swap_rate!r}")
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
    """

    log_terms: tuple[float, ...]
    delta_lower: float
    delta_upper: float
    delta: float | None
    columns: tuple[Label, ...]


def bad_outcome_probability(
    matrix: PramMatrix, counts: ArrayLike, *, exact_limit: int = 16
) -> BadOutcomeProbability:
    """Probability that perturbing a file with counts ``f`` by ``matrix`` gives a bad table."""
    f = np.asarray(counts, dtype=float)
    if f.shape != (matrix.size,) or np.any(f < 0) or not np.all(np.isfinite(f)):
        raise PramkitError(f"counts must be {matrix.size} non-negative numbers, one per category")
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
    sample contains no record of a cell with population count below it."""
    if cells < 1 or not (epsilon > 0 and math.isfinite(epsilon)) or not 0 < delta < 1:
        raise PramkitError("need cells >= 1, epsilon > 0 finite and 0 < delta < 1")
    return 2.0 / epsilon * math.log(2.0 * cells / delta)


def population_unique_probability(lam: ArrayLike, sampling_fraction: ArrayLike) -> np.ndarray:
    """P(F = 1 | f = 1) = exp(-lambda (1 - pi)) under the Poisson model (sec. 3, Figure 1)."""
    lv = np.asarray(lam, dtype=float)
    pi = np.asarray(sampling_fraction, dtype=float)
    if np.any(lv < 0) or np.any((pi <= 0) | (pi > 1)):
        raise PramkitError("lambda must be non-negative and the sampling fraction in (0, 1]")
    return np.exp(-lv * (1.0 - pi))
