"""Which original frequencies a PRAM matrix lets one estimate.

The released distribution is ``lam = M^T p`` (``M[k, j] = P(released j |
original k)``; Ruiz and Domingo-Ferrer, appendix A.1; Cator, Hensbergen and
Rozenholc, section 3).  Two original distributions that differ by a vector
``v`` with ``M^T v = 0`` release the same distribution, so no estimator can
tell them apart: p is identifiable iff M is non-singular.  When it is
singular, a linear quantity ``g . p`` is still identifiable iff g is
orthogonal to every such v, i.e. iff g lies in the column space of M (then
``g = M h`` and ``g . p = h . lam``).

Every null vector sums to zero (``M 1 = 1`` gives ``1 . v = (M 1) . v =
1 . (M^T v) = 0``).  Let ``P_N`` be the orthogonal projector onto the null
space of ``M^T`` and link categories k and l when ``P_N[k, l] != 0``.  The
connected components of this graph with more than one category are the
*groups* of categories that cannot be told apart:

* ``P_N`` is block diagonal over the groups, so the null space is the direct
  sum of null vectors supported on single groups; each of them sums to
  zero, hence **the total of a group is identifiable**;
* a category outside every group has ``P_N[k, k] = 0``, i.e. ``e_k`` is
  orthogonal to the null space: **its count is identifiable**;
* within a group of size m, ``m - d`` independent contrasts are identifiable,
  where ``d = trace(P_N[G, G])`` is the group's number of *free directions*
  (``d = m - 1`` for identical rows: only the total is identifiable).

A matrix can also be invertible but so badly conditioned that the unbiased
estimator ``(M^T)^{-1} lam_hat`` is useless (its errors are amplified by up to
the condition number).  The same construction applied to the singular
vectors whose singular values are below ``s_max / max_condition`` gives the
groups of *nearly* indistinguishable categories.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import PramkitError
from pramkit.matrix import Label, PramMatrix

#: Above this 2-norm condition number a matrix is treated as ill-conditioned
#: (the moment estimator is then replaced by the MLE).
MAX_CONDITION = 1e10

#: Entries of a (near-)null-space projector below this are taken as zero.
SUPPORT_TOL = 1e-8

#: Rows whose entries differ by at most this are reported as identical.
IDENTICAL_ROW_TOL = 1e-12


def rank_tolerance(singular_values: np.ndarray, size: int) -> float:
    """Singular values at or below ``s_max * S * eps`` count as zero (NumPy's
    ``matrix_rank`` rule), so a matrix with two identical rows is singular
    whatever the rounding of its entries."""
    return float(singular_values[0]) * size * float(np.finfo(float).eps)


def numerical_rank(singular_values: np.ndarray, size: int) -> int:
    """Number of singular values above :func:`rank_tolerance`."""
    return int(np.sum(singular_values > rank_tolerance(singular_values, size)))


@dataclass(frozen=True)
class CategoryGroup:
    """Categories whose separate counts cannot be estimated (or, for an
    ill-conditioned matrix, only with a huge variance).

    indices: positions of the categories in the matrix
    categories: their labels
    free_directions: how many independent splits of the group's total are
        not identifiable (``len(indices) - 1`` when only the total is)
    identical_rows: whether the categories' rows of M are identical
    """

    indices: tuple[int, ...]
    categories: tuple[Label, ...]
    free_directions: int
    identical_rows: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories),
            "indices": list(self.indices),
            "free_directions": self.free_directions,
            "identical_rows": self.identical_rows,
        }

    def describe(self, exact: bool = True) -> str:
        """E.g. ``"categories 2 and 9 have identical rows"``; ``exact=False``
        for the near-dependence of an ill-conditioned matrix."""
        listed = listing(self.categories)
        if self.identical_rows:
            return f"categories {listed} have identical rows"
        if not exact:
            return f"the rows of categories {listed} are nearly linearly dependent"
        return (f"the rows of categories {listed} are linearly dependent "
                f"({self.free_directions} free direction{'s' if self.free_directions > 1 else ''})")


#: Categories a message names before it says how many more there are.
LISTED = 6


def listing(categories: Sequence[Label]) -> str:
    """Categories in words, at most :data:`LISTED` of them named.

    >>> listing(["a", "b"]), listing(range(10))
    ('a and b', '0, 1, 2, 3, 4, 5 and 4 more')
    """
    names = [str(c) for c in categories]
    if len(names) > LISTED:
        return ", ".join(names[:LISTED]) + f" and {len(names) - LISTED} more"
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class IdentifiabilityResult:
    """What a PRAM matrix lets one estimate (see the module docstring).

    categories: labels of the rows
    rank: numerical rank (:func:`numerical_rank`)
    condition_number: ``s_max / s_min`` (``inf`` when singular)
    max_condition: the threshold above which the matrix is ill-conditioned
    singular_values: in decreasing order
    groups: the groups of categories that cannot be told apart (singular
        matrix) or nearly so (ill-conditioned matrix); empty otherwise
    """

    categories: tuple[Label, ...]
    rank: int
    condition_number: float
    max_condition: float
    singular_values: tuple[float, ...]
    groups: tuple[CategoryGroup, ...]

    @property
    def size(self) -> int:
        return len(self.categories)

    @property
    def singular(self) -> bool:
        return self.rank < self.size

    @property
    def ill_conditioned(self) -> bool:
        """Invertible, but with a condition number above ``max_condition``."""
        return not self.singular and self.condition_number > self.max_condition

    @property
    def identifiable(self) -> bool:
        """Whether every category's count can be estimated (M non-singular)."""
        return not self.singular

    @property
    def status(self) -> str:
        """``"identifiable"``, ``"ill-conditioned"`` or ``"singular"``."""
        return "singular" if self.singular else "ill-conditioned" if self.ill_conditioned else "identifiable"

    @property
    def identifiable_categories(self) -> tuple[Label, ...]:
        """Categories whose count is identifiable (in no group, for a singular matrix)."""
        if not self.singular:
            return self.categories
        grouped = {i for g in self.groups for i in g.indices}
        return tuple(c for i, c in enumerate(self.categories) if i not in grouped)

    @property
    def message(self) -> str:
        """One line: the status and what follows for estimation."""
        if self.status == "identifiable":
            return (f"identifiable: rank {self.rank} of {self.size}, condition number "
                    f"{self.condition_number:.3g}; every category's count can be estimated")
        parts = []
        for g in self.groups:
            if self.singular:
                only = ("only their total can be estimated" if g.free_directions == len(g.indices) - 1
                        else "their total and some contrasts can be estimated, not each count")
                parts.append(f"{g.describe()} and cannot be told apart; {only}")
            else:
                parts.append(f"{g.describe(exact=False)}, so their counts are nearly indistinguishable")
        if self.singular:
            head = f"singular (rank {self.rank} of {self.size})"
        else:
            head = (f"ill-conditioned (condition number {self.condition_number:.3g} > {self.max_condition:g}; "
                    "the unbiased estimator amplifies errors by up to that factor)")
        return head + ": " + "; ".join(parts) if parts else head

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "identifiable": self.identifiable,
            "singular": self.singular,
            "ill_conditioned": self.ill_conditioned,
            "rank": self.rank,
            "size": self.size,
            "condition_number": self.condition_number,
            "max_condition": self.max_condition,
            "singular_values": list(self.singular_values),
            "groups": [g.to_dict() for g in self.groups],
            "identifiable_categories": list(self.identifiable_categories),
            "message": self.message,
        }


def identifiability(matrix: PramMatrix | ArrayLike, *, max_condition: float = MAX_CONDITION) -> IdentifiabilityResult:
    """Detect a singular or ill-conditioned PRAM matrix and say what can be estimated.

    Parameters
    ----------
    matrix : a :class:`PramMatrix`, or a square row-stochastic array (then
        validated as one, categories ``0 .. S-1``)
    max_condition : above this condition number an invertible matrix is
        reported as ill-conditioned (default :data:`MAX_CONDITION`, the
        threshold at which :func:`pramkit.estimate.moment_estimate` gives up)

    Returns
    -------
    IdentifiabilityResult
        rank, condition number, and the groups of categories that cannot be
        told apart: connected components of the support of the projector onto
        the null space of ``M^T`` (module docstring).  The total of each group
        is identifiable, the split within it is not.

    References
    ----------
    Ruiz and Domingo-Ferrer, appendix A.1 (the unbiased estimator needs M
    invertible); Cator, Hensbergen and Rozenholc, section 3, estimator (4).

    Examples
    --------
    Two identical uniform rows, as the DP-optimal design gives for sdcMicro's
    ``walls`` at epsilon 1:

    >>> from pramkit import PramMatrix
    >>> from pramkit.estimate import identifiability
    >>> third = 1 / 3
    >>> m = PramMatrix([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]], (2, 3, 9))
    >>> res = identifiability(m)
    >>> res.status, res.rank
    ('singular', 2)
    >>> res.message
    'singular (rank 2 of 3): categories 2 and 9 have identical rows and cannot be told apart; only their total can be estimated'
    >>> res.groups[0].categories, res.identifiable_categories
    ((2, 9), (3,))
    >>> identifiability([[0.9, 0.1], [0.2, 0.8]]).status
    'identifiable'
    """
    pm = matrix if isinstance(matrix, PramMatrix) else PramMatrix(np.asarray(matrix, dtype=float))
    if not (isinstance(max_condition, (int, float)) and max_condition > 1):
        raise PramkitError(f"max_condition must be a number above 1, got {max_condition!r}")
    m = pm.matrix
    size = pm.size
    u, s, _ = np.linalg.svd(m)
    rank = numerical_rank(s, size)
    cond = math.inf if rank < size else float(s[0] / s[-1])
    if rank < size:
        weak = u[:, rank:]
    elif cond > max_condition:
        weak = u[:, s < s[0] / max_condition]
    else:
        weak = u[:, :0]
    groups = tuple(
        CategoryGroup(
            indices=tuple(int(i) for i in idx),
            categories=tuple(pm.categories[i] for i in idx),
            free_directions=int(round(float(np.sum(weak[idx] ** 2)))),
            identical_rows=bool(np.all(np.abs(m[idx] - m[idx[0]]) <= IDENTICAL_ROW_TOL)),
        )
        for idx in dependent_groups(weak)
    )
    return IdentifiabilityResult(
        categories=pm.categories, rank=rank, condition_number=cond, max_condition=float(max_condition),
        singular_values=tuple(float(x) for x in s), groups=groups,
    )


def dependent_groups(basis: np.ndarray, tol: float = SUPPORT_TOL) -> list[np.ndarray]:
    """Connected components (of two or more indices) of the support of ``B B^T``.

    ``basis`` has orthonormal columns spanning a (near-)null space; ``B B^T``
    is its projector, whose support links the categories that the null
    vectors mix.  Components are listed by their smallest index.
    """
    n = basis.shape[0]
    if basis.shape[1] == 0:
        return []
    linked = np.abs(basis @ basis.T) > tol
    label = np.full(n, -1)
    out = []
    for start in range(n):
        if label[start] >= 0 or not linked[start, start]:
            continue
        label[start] = start
        stack, members = [start], [start]
        while stack:
            k = stack.pop()
            for j in np.flatnonzero(linked[k] & (label < 0)):
                label[j] = start
                stack.append(int(j))
                members.append(int(j))
        if len(members) > 1:
            out.append(np.array(sorted(members)))
    return out


def group_labels(groups: Sequence[CategoryGroup], size: int) -> np.ndarray:
    """For each category, the index of its group, or -1 if it is in none."""
    out = np.full(size, -1)
    for g, group in enumerate(groups):
        out[list(group.indices)] = g
    return out
