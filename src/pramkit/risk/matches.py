"""Unique records reproduced exactly: the expected share of a release, bounded from both sides.

A record is *unique* when no other record of the original file shares its values of the key
columns.  A released file reproduces it when some released record holds exactly those values:
NIST's SDNist scores a deidentified file by the share of all records that are unique records
reproduced this way ("unique exact matches").  For a PRAM release the chance of it is computed
from the manifest alone, before anything is drawn:

* **lower bound**: the record itself is released unchanged, with probability
  ``prod_v M_v[x_v, x_v]`` over the perturbed variables (their release matrices, blocks and
  joint cells included; a missing value kept missing stays so);
* **upper bound** (the union bound): ``min(1, sum_r P(record r is released as x))`` over every
  record r of the file, ``P(r -> x) = prod_v M_v[r_v, x_v]`` when r agrees with x on the
  columns no variable perturbs (0 otherwise);
* **the expectation itself**: records are perturbed independently of each other, so x is
  reproduced with probability ``1 - prod_r (1 - P(r -> x))`` (summed in logarithms).  A
  household design draws its household variables once per household, which couples its
  members' draws: the expectation is then not computed (``None``) and the bounds stand.

The shares are these sums over the unique records divided by all records, expectations of the
indicator that each unique record is reproduced over the draws of the key.

**A quantile** (``level``, e.g. 0.95): a share that the releases stay at or under with probability
at least ``level`` over the draws of the key, by a Chernoff bound (:func:`quantile_bound`).  The
count M of unique records reproduced is a sum of indicators, one per unique record, each the
largest over the records of "record r is released as x"; each record is drawn once, independently,
and its indicators over the unique cells (distinct values) hold at most one 1, so they are
negatively associated, and so are their maxima over disjoint sets of records (Joag-Dev and
Proschan 1983, properties P6 and P7; Dubhashi and Ranjan 1998, balls and bins).  For negatively
associated indicators ``E exp(t M) <= prod_u (1 - p_u + p_u e^t)``, so the Chernoff bound of
independent Bernoulli variables with the same probabilities p_u holds for M.  A normal approximation
would not be a bound.  A household design draws a household's variables once for all its members,
whose indicators are then not negatively associated: no quantile is computed there (``None``).

Examples
--------
>>> import pandas as pd
>>> from pramkit import Manifest, PramMatrix
>>> data = pd.DataFrame({"sex": ["f", "m", "m"], "age": ["young", "old", "young"]})
>>> keep = PramMatrix([[0.9, 0.1], [0.1, 0.9]], ("old", "young"))
>>> risk = expected_matches(data, Manifest.of({"age": keep}), ["sex", "age"])
>>> risk.uniques, round(risk.lower, 4), round(risk.expected, 4), round(risk.upper, 4)
(3, 0.9, 0.9067, 0.9667)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit.errors import ParameterError
from pramkit.manifest import Manifest

#: Largest number of categories of a variable whose matrix the upper bound reads densely.
DENSE_MAX = 20_000
#: Unique records whose incoming probabilities are summed at a time (memory: this times the group's records).
CHUNK = 512


@dataclass(frozen=True)
class MatchRisk:
    """Expected unique records reproduced exactly by a release, as shares of all records.

    Parameters
    ----------
    n : int
        Records of the original file.
    uniques : int
        Records unique on the key columns.
    lower : float
        Expected share reproduced by the record itself being released unchanged.
    upper : float
        The union bound: no draw of the key reproduces more in expectation.
    keys : tuple of str
        The key columns.
    expected : float or None
        The expected share itself (``None`` for a household design).
    level : float or None
        The probability of :attr:`quantile` (``None``: not asked).
    quantile : float or None
        A share that the releases stay at or under with probability at least ``level`` over the draws
        of the key (:func:`quantile_bound`; ``None`` when not asked, or for a household design).
    """

    n: int
    uniques: int
    lower: float
    upper: float
    keys: tuple[str, ...]
    expected: float | None = None
    level: float | None = None
    quantile: float | None = None

    @property
    def bound(self) -> float:
        """The expectation where it is computed, else the union bound: what a target is held to."""
        return self.upper if self.expected is None else self.expected

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON values.

        Examples
        --------
        >>> MatchRisk(10, 2, 0.05, 0.1, ("a",)).to_dict()["upper"]
        0.1
        """
        quantile = {} if self.level is None else {"level": self.level, "quantile": self.quantile}
        return {"n": self.n, "uniques": self.uniques, "lower": self.lower, "expected": self.expected,
                "upper": self.upper, "keys": list(self.keys), **quantile}


def _codes(data: pd.DataFrame, variable: Any) -> np.ndarray:
    """Each record's cell of the variable (its release matrix's position; -1: missing, kept missing;
    -2: a combination the matrix does not list, a rule breaker released as it is)."""
    from pramkit.codebook import encode

    cats = variable.matrix.categories
    if len(variable.read_columns) == 1:
        return encode(data[variable.read_columns[0]].astype(object), cats, column=variable.read_columns[0])
    book = variable.joint_codebook()
    columns = [pa.array(data[c].astype(object).where(data[c].notna(), None).tolist()) for c in variable.read_columns]
    codes = [b.encode(col) for b, col in zip(book.books, columns)]
    stacked = np.stack(codes)
    out = np.full(len(data), -1, dtype=np.intp)
    whole = (stacked >= 0).all(axis=0)
    cells = book.lookup[np.ravel_multi_index(stacked[:, whole], book.shape)]
    out[whole] = np.where(cells >= 0, cells, -2)
    return out


def _extended(matrix: np.ndarray) -> np.ndarray:
    """The matrix with a last row and column for a missing value (kept missing, nothing made missing)."""
    s = matrix.shape[0]
    out = np.zeros((s + 1, s + 1))
    out[:s, :s] = matrix
    out[s, s] = 1.0
    return out


def quantile_bound(p: Any, level: float) -> float:
    """A count that a sum of negatively associated indicators (independent ones among them) with
    probabilities ``p`` reaches with probability at most ``1 - level``: the Chernoff bound.

    With ``K(t) = sum log(1 - p + p e^t)``, ``P(M >= m) <= exp(K(t) - t m)`` for every t > 0, so
    ``m(t) = (K(t) + log(1 / (1 - level))) / t`` is reached with probability at most
    ``1 - level``; the bound is the smallest, at the t where ``t K'(t) - K(t) = log(1 / (1 - level))``
    (found by bisection: the left side increases with t), and never more than the number of
    positive p (M cannot exceed it).

    Parameters
    ----------
    p : array_like
        Each indicator's probability of being 1.
    level : float
        In (0, 1): the probability of staying under the bound (0.95: 95 % of releases).

    Returns
    -------
    float
        The bound, a count between ``sum(p)`` and the number of positive p.

    Raises
    ------
    ParameterError
        ``level`` outside (0, 1).

    Examples
    --------
    A thousand fair coins: the bound lies above the 95th percentile of the binomial, 526, and
    within Hoeffding's bound, 500 + sqrt(1000 log(20) / 2) = 538.7 (for small probabilities, as
    those of unique records reproduced, it is far nearer the mean than Hoeffding's):

    >>> b = quantile_bound(np.full(1000, 0.5), 0.95)
    >>> 526 < b < 538.7
    True
    >>> quantile_bound([0.0, 1.0, 1.0], 0.95)
    2.0
    """
    if not 0 < level < 1:
        raise ParameterError(f"the quantile's level must lie in (0, 1), got {level!r}")
    pv = np.clip(np.asarray(p, dtype=float).ravel(), 0.0, 1.0)
    positive = float(np.count_nonzero(pv))
    c = -math.log1p(-level)

    def k(t: float) -> float:
        return float(np.log1p(pv * math.expm1(t)).sum())

    def slope(t: float) -> float:  # t K'(t) - K(t), increasing in t
        e = math.exp(t)
        return t * float((pv * e / (1 - pv + pv * e)).sum()) - k(t)

    lo, hi = 0.0, 1.0
    while slope(hi) < c and hi < 64.0:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < c else (lo, mid)
    return min((k(hi) + c) / hi, positive)


def expected_matches(data: pd.DataFrame, manifest: Manifest, keys: Sequence[str], *,
                     level: float | None = None) -> MatchRisk:
    """The expected share of all records that are unique records reproduced exactly (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame
        The original records.
    manifest : Manifest
        The release's matrices.
    keys : sequence of str
        The columns on which a record is unique and reproduced (every perturbed variable's
        columns among them, and the columns released as they are).
    level : float, optional
        Also a share that the releases stay at or under with this probability (:func:`quantile_bound`).

    Returns
    -------
    MatchRisk

    Raises
    ------
    ParameterError
        A key is not a column, or a perturbed variable reads a column outside the keys.
    """
    keys = list(keys)
    missing_cols = [k for k in keys if k not in data.columns]
    if missing_cols:
        raise ParameterError(f"key columns {missing_cols} are not columns of the data")
    outside = [v.name for v in manifest.variables if not set(v.read_columns) <= set(keys)]
    if outside:
        raise ParameterError(f"variables {outside} read columns outside the keys {keys}: list them among the keys")
    n = len(data)
    frame = data[keys]
    unique = ~frame.astype(object).where(frame.notna(), None).duplicated(keep=False).to_numpy()
    variables = list(manifest.variables)
    codes = [_codes(frame, v) for v in variables]
    stay = np.ones(n)
    for v, c in zip(variables, codes):
        diag = np.append(v.release_matrix.diagonal, 1.0)       # position -1: kept missing
        stay *= np.where(c == -2, 1.0, diag[c])
    lower = float(stay[unique].sum()) / n
    perturbed = {c for v in variables for c in v.read_columns}
    public = [k for k in keys if k not in perturbed]
    groups = (frame[public].astype(object).where(frame[public].notna(), None).groupby(public, dropna=False).ngroup()
              .to_numpy() if public else np.zeros(n, dtype=np.intp))
    if any(v.release_matrix.size > DENSE_MAX for v in variables):
        raise ParameterError(f"a perturbed variable has more than {DENSE_MAX} categories: the union bound reads "
                             "its matrix densely")
    dense = [_extended(v.release_matrix.matrix) for v in variables]
    upper = 0.0
    chances = []  # each unique record's chance of being reproduced
    for g in np.unique(groups[unique]):
        members = np.flatnonzero(groups == g)
        targets = members[unique[members]]
        for start in range(0, targets.size, CHUNK):
            chunk = targets[start:start + CHUNK]
            incoming = np.ones((members.size, chunk.size))
            for m, c in zip(dense, codes):
                src, dst = c[members], c[chunk]
                block = m[np.where(src == -2, -1, src)][:, np.where(dst == -2, -1, dst)]
                breaker = (src[:, None] == -2) | (dst[None, :] == -2)   # released as they are: only to themselves
                same = src[:, None] == dst[None, :]
                incoming *= np.where(breaker, same.astype(float), block)
            upper += float(np.minimum(incoming.sum(axis=0), 1.0).sum())
            with np.errstate(divide="ignore"):          # a sure move: log(0), none is left out
                chances.append(-np.expm1(np.log1p(-np.minimum(incoming, 1.0)).sum(axis=0)))
    households = any(v.unit is not None for v in variables)
    chance = np.concatenate(chances) if chances else np.zeros(0)
    expected = float(chance.sum())
    quantile = None if level is None or households else quantile_bound(chance, level) / n
    return MatchRisk(n=n, uniques=int(unique.sum()), lower=lower, upper=upper / n, keys=tuple(keys),
                     expected=None if households else min(max(expected / n, lower), upper / n), level=level,
                     quantile=quantile)
