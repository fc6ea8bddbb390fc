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

:func:`identifiability` decomposes the dense matrix (an SVD, O(S^3)).
:func:`estimability` gives the same verdict without it for the matrices pramkit
stores compactly: a matrix of form (8) in O(S) per singular value wanted,
exactly (its rank, its 2-norm condition number and its groups, from an exact
count of its singular values below any bound: :func:`estimability`, Notes),
and a block-diagonal matrix block by block (its singular values are those of
its blocks together), so that a design of 100 000 categories, or of many
blocks, is checked in well under a second.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix

#: Above this 2-norm condition number a matrix is treated as ill-conditioned
#: (the moment estimator is then replaced by the MLE).
MAX_CONDITION = 1e10

#: Entries of a (near-)null-space projector below this are taken as zero.
SUPPORT_TOL = 1e-8

#: Rows whose entries differ by at most this are reported as identical.
IDENTICAL_ROW_TOL = 1e-12

EPS = float(np.finfo(float).eps)


def rank_tolerance(singular_values: Sequence[float] | np.ndarray, size: int) -> float:
    """Singular values at or below ``s_max * S * eps`` count as zero (NumPy's
    ``matrix_rank`` rule), so a matrix with two identical rows is singular
    whatever the rounding of its entries.  Only the first (largest) of the
    singular values, in decreasing order, is read.

    Parameters
    ----------
    singular_values : sequence of float
        The singular values in decreasing order (at least the largest).
    size : int
        The number of categories S.

    Returns
    -------
    float
        ``s_max * S * eps``.

    Examples
    --------
    Two identical rows: the SVD's smallest singular value is rounding noise, far below the
    tolerance.

    >>> third = 1 / 3
    >>> s = np.linalg.svd([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]], compute_uv=False)
    >>> tol = rank_tolerance(s, 3)
    >>> bool(s[-1] <= tol < s[-2]), math.isclose(tol, s[0] * 3 * EPS)
    (True, True)
    """
    return float(singular_values[0]) * size * EPS


def numerical_rank(singular_values: np.ndarray, size: int) -> int:
    """Number of singular values above :func:`rank_tolerance`.

    Parameters
    ----------
    singular_values : numpy.ndarray
        The singular values in decreasing order.
    size : int
        The number of categories S.

    Returns
    -------
    int
        The numerical rank (NumPy's ``matrix_rank`` rule).

    Examples
    --------
    >>> third = 1 / 3
    >>> m = np.array([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]])
    >>> numerical_rank(np.linalg.svd(m, compute_uv=False), 3), int(np.linalg.matrix_rank(m))
    (2, 2)
    """
    return int(np.sum(singular_values > rank_tolerance(singular_values, size)))


@dataclass(frozen=True)
class CategoryGroup:
    """Categories whose separate counts cannot be estimated (or, for an
    ill-conditioned matrix, only with a huge variance).

    Attributes
    ----------
    indices : tuple of int
        Positions of the categories in the matrix.
    categories : tuple of labels
        Their labels.
    free_directions : int
        How many independent splits of the group's total are not identifiable
        (``len(indices) - 1`` when only the total is).
    identical_rows : bool
        Whether the categories' rows of M are identical.

    Examples
    --------
    The third row is the mean of the first two: one split of the three categories' total
    cannot be estimated.

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.4, 0.4, 0.2]], ("a", "b", "c"))
    >>> group = identifiability(m).groups[0]
    >>> group.categories, group.free_directions, group.identical_rows
    (('a', 'b', 'c'), 1, False)
    """

    indices: tuple[int, ...]
    categories: tuple[Label, ...]
    free_directions: int
    identical_rows: bool

    def to_dict(self) -> dict[str, Any]:
        """The group as JSON.

        Returns
        -------
        dict
            ``categories``, ``indices``, ``free_directions``, ``identical_rows``.

        Examples
        --------
        >>> CategoryGroup((0, 2), ("a", "c"), 1, True).to_dict()
        {'categories': ['a', 'c'], 'indices': [0, 2], 'free_directions': 1, 'identical_rows': True}
        """
        return {
            "categories": list(self.categories),
            "indices": list(self.indices),
            "free_directions": self.free_directions,
            "identical_rows": self.identical_rows,
        }

    def describe(self, exact: bool = True) -> str:
        """E.g. ``"categories 2 and 9 have identical rows"``; ``exact=False``
        for the near-dependence of an ill-conditioned matrix.

        Parameters
        ----------
        exact : bool
            Whether the matrix is singular (else the dependence is only near).

        Returns
        -------
        str
            A clause for :attr:`Estimability.message`.

        Examples
        --------
        >>> CategoryGroup((0, 2), ("a", "c"), 1, True).describe()
        'categories a and c have identical rows'
        >>> CategoryGroup((0, 1, 2), ("a", "b", "c"), 1, False).describe()
        'the rows of categories a, b and c are linearly dependent (1 free direction)'
        >>> CategoryGroup((0, 1), ("a", "b"), 1, False).describe(exact=False)
        'the rows of categories a and b are nearly linearly dependent'
        """
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

    Parameters
    ----------
    categories : sequence of labels
        The categories.

    Returns
    -------
    str
        ``"a"``, ``"a and b"``, ``"a, b and c"``, or the first :data:`LISTED` and how many more.

    Examples
    --------
    >>> listing(["a", "b"]), listing(range(10))
    ('a and b', '0, 1, 2, 3, 4, 5 and 4 more')
    """
    names = [str(c) for c in categories]
    if len(names) > LISTED:
        return ", ".join(names[:LISTED]) + f" and {len(names) - LISTED} more"
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class Estimability:
    """Whether a PRAM matrix lets one estimate every category's count (see the module docstring).

    Attributes
    ----------
    categories : tuple of labels
        Labels of the rows.
    rank : int
        Numerical rank (singular values above :func:`rank_tolerance`).
    condition_number : float
        ``s_max / s_min``, the 2-norm condition number (``inf`` when singular).
    max_condition : float
        The threshold above which the matrix is ill-conditioned.
    groups : tuple of CategoryGroup
        The groups of categories that cannot be told apart (singular matrix) or nearly
        so (ill-conditioned matrix); empty otherwise.

    Examples
    --------
    Randomized response on five categories is invertible; keeping 0.6 against 0.4 is
    ill-conditioned at a threshold of 2 (its condition number is 1 / 0.2 = 5):

    >>> from pramkit import PramMatrix
    >>> rr = estimability(PramMatrix.from_diagonal(np.full(5, 0.5)))
    >>> rr.status, rr.rank, round(rr.condition_number, 6), rr.groups
    ('identifiable', 5, 2.666667, ())
    >>> weak = estimability(PramMatrix([[0.6, 0.4], [0.4, 0.6]], ("a", "b")), max_condition=2)
    >>> weak.status, round(weak.condition_number, 6), weak.identifiable
    ('ill-conditioned', 5.0, True)
    >>> weak.message  # doctest: +NORMALIZE_WHITESPACE
    'ill-conditioned (condition number 5 > 2; the unbiased estimator amplifies errors by up to that factor):
     the rows of categories a and b are nearly linearly dependent, so their counts are nearly indistinguishable'
    """

    categories: tuple[Label, ...]
    rank: int
    condition_number: float
    max_condition: float
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
        """The verdict as JSON.

        Returns
        -------
        dict
            ``status``, ``identifiable``, ``singular``, ``ill_conditioned``, ``rank``, ``size``,
            ``condition_number``, ``max_condition``, ``groups`` (:meth:`CategoryGroup.to_dict`),
            ``identifiable_categories`` and ``message``.

        Examples
        --------
        >>> from pramkit import PramMatrix
        >>> third = 1 / 3
        >>> m = PramMatrix([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]], ("a", "b", "c"))
        >>> out = estimability(m).to_dict()
        >>> out["status"], out["rank"], out["size"], out["identifiable_categories"], out["groups"][0]["categories"]
        ('singular', 2, 3, ['b'], ['a', 'c'])
        """
        return {
            "status": self.status,
            "identifiable": self.identifiable,
            "singular": self.singular,
            "ill_conditioned": self.ill_conditioned,
            "rank": self.rank,
            "size": self.size,
            "condition_number": self.condition_number,
            "max_condition": self.max_condition,
            "groups": [g.to_dict() for g in self.groups],
            "identifiable_categories": list(self.identifiable_categories),
            "message": self.message,
        }


@dataclass(frozen=True)
class IdentifiabilityResult(Estimability):
    """What a PRAM matrix lets one estimate (:class:`Estimability`), from its full SVD.

    Attributes
    ----------
    singular_values : tuple of float
        All of them, in decreasing order (besides the fields of :class:`Estimability`).

    Examples
    --------
    >>> res = identifiability([[0.75, 0.25], [0.25, 0.75]])
    >>> [round(s, 12) for s in res.singular_values], round(res.condition_number, 12)    # 1 and 0.75 - 0.25
    ([1.0, 0.5], 2.0)
    """

    singular_values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Estimability.to_dict` with the singular values.

        Returns
        -------
        dict
            The verdict and ``singular_values``.

        Examples
        --------
        >>> out = identifiability([[0.75, 0.25], [0.25, 0.75]]).to_dict()
        >>> out["status"], [round(s, 12) for s in out["singular_values"]]
        ('identifiable', [1.0, 0.5])
        """
        return {**super().to_dict(), "singular_values": list(self.singular_values)}


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
    pm = _pram_matrix(matrix, max_condition)
    spectrum = _DenseSpectrum(pm.matrix)
    return IdentifiabilityResult(**_verdict(spectrum, pm, max_condition), singular_values=spectrum.values)


def estimability(matrix: PramMatrix | ArrayLike, *, max_condition: float = MAX_CONDITION) -> Estimability:
    """:func:`identifiability` for a matrix of any size stored compactly: form (8) in O(S), blocks one by one.

    The verdict is that of :func:`identifiability` (NumPy's rank rule, the
    2-norm condition number, the groups), computed from the structure:

    * a matrix of form (8) (:attr:`PramMatrix.is_compact`) in O(S) time and
      memory per bisection step (an exact count of the singular values below
      any bound, Notes, then bisection to full precision: about 55 steps per
      singular value wanted);
    * a block-diagonal matrix (:attr:`PramMatrix.blocks`) block by block: its
      singular values are those of its blocks together, so it is singular iff
      a block is, its condition number is the largest of the blocks' s_max
      over the smallest of their s_min, and its groups are the blocks'
      groups (its null space is the direct sum of theirs).  Its form (8)
      blocks are counted together (the count of the whole is the sum of the
      blocks' counts), so each bisection step is O(S) whatever the number of
      blocks;
    * a dense matrix (or dense block) by the SVD: O(S^3), the caller decides
      whether the size allows it (:func:`largest_dense_part`).

    Parameters
    ----------
    matrix : a :class:`PramMatrix`, or a square row-stochastic array
    max_condition : as for :func:`identifiability`

    Returns
    -------
    Estimability
        An :class:`IdentifiabilityResult` (with all the singular values) when
        the whole matrix was decomposed by one SVD.

    Notes
    -----
    Form (8) is ``M = D + w 1^T`` with ``D = diag(d)``, ``d = q - w``.

    *Singularity* (the matrix determinant lemma, ``det(A + u v^T) = det A +
    v^T adj(A) u``): ``det M = prod(d) (1 + sum_k w_k / d_k)`` when every
    ``d_k != 0``, and the null space of ``M^T`` is then spanned by ``1 / d``
    when it is not trivial (``M^T v = D v + (w . v) 1``).  A row with
    ``d_k = 0`` is ``w_k 1^T``, the uniform row 1/S.  With exactly one such
    row, ``det M = w_k prod_{j != k} d_j != 0``.  With a set Z of two or
    more, ``M^T v = 0`` forces ``v_j = 0`` off Z and ``w_Z . v_Z = 0``: the
    null space is ``{v on Z : w . v = 0}``, of dimension ``|Z| - 1``, and Z
    is the group whose total alone is identifiable.  Rows with ``|d_k|`` at
    most the rank tolerance are taken as ``d_k = 0`` (a change of M by at
    most that tolerance in 2-norm, the margin NumPy's rank rule allows).

    *Condition number.*  The singular values of M are the positive
    eigenvalues of ``H = [[0, M], [M^T, 0]] = H_0 + U C U^T`` with
    ``H_0 = [[0, D], [D, 0]]`` (eigenvalues ``+-d_k``), ``U = [[w, 0], [0, 1]]``
    and ``C = [[0, 1], [1, 0]] = C^{-1}``.  Haynsworth's inertia additivity on
    the bordered matrix ``[[H_0 - s I, U], [U^T, -C]]`` (its two Schur
    complements are ``H - s I`` and ``-(C + U^T (H_0 - s I)^{-1} U)``) gives the
    number of singular values below any ``s > 0`` (``s != |d_k|``):

        N(s) = #{k : |d_k| < s} + pos([[s c, 1 + a], [1 + a, s b]]) - 1,
        a = sum_k d_k w_k / (d_k^2 - s^2),  b = sum_k 1 / (d_k^2 - s^2),
        c = sum_k w_k^2 / (d_k^2 - s^2),

    ``pos`` counting the positive eigenvalues of the 2 x 2 matrix.  N is an
    exact count in O(S); bisection on it gives ``s_max`` and ``s_min`` (and
    any other singular value) to full precision, hence the 2-norm condition
    number ``s_max / s_min``, without forming ``M^T M`` (whose eigenvalues
    would lose the small singular values to rounding).  ``1 + a(s)`` is
    ``1 + sum_k w_k / d_k`` at ``s = 0``: the determinant lemma again.  The
    left singular vector of a simple singular value s is ``u_k = (s r w_k +
    d_k) / (d_k^2 - s^2)`` with ``r^2 = b / c``, ``sign(r) = -sign((1 + a) b)``
    (from ``M v = s u``, ``M^T u = s v``); it gives the groups of a
    dependence that no uniform row explains.

    References
    ----------
    Haynsworth (1968), Determination of the inertia of a partitioned Hermitian
    matrix, Linear Algebra and its Applications 1, 73-81 (inertia additivity);
    Ayed, Battiston and Camerlenghi (2020), form (8).

    Examples
    --------
    100 000 categories, each kept with probability 1/2: randomized response
    ``M = (q - w) I + w J``, whose singular values are 1 and ``q - w``:

    >>> from pramkit import PramMatrix
    >>> q = np.full(100_000, 0.5)
    >>> res = estimability(PramMatrix.from_diagonal(q))
    >>> res.status, math.isclose(res.condition_number, 1 / (0.5 - 0.5 / 99_999), rel_tol=1e-12)
    ('identifiable', True)

    Two of them (7 and 11) kept with probability 1/S instead, hence uniform rows:

    >>> q[[7, 11]] = 1e-5
    >>> estimability(PramMatrix.from_diagonal(q)).message
    'singular (rank 99999 of 100000): categories 7 and 11 have identical rows and cannot be told apart; only their total can be estimated'
    """
    pm = _pram_matrix(matrix, max_condition)
    spectrum = _spectrum(pm)
    fields = _verdict(spectrum, pm, max_condition)
    if isinstance(spectrum, _DenseSpectrum):
        return IdentifiabilityResult(**fields, singular_values=spectrum.values)
    return Estimability(**fields)


def largest_dense_part(matrix: PramMatrix) -> int:
    """Categories of the largest part of ``matrix`` stored densely: the matrix itself, or its largest
    dense block (0 when every part is compact).  :func:`estimability` decomposes such parts by the SVD.

    Parameters
    ----------
    matrix : PramMatrix
        The matrix.

    Returns
    -------
    int
        The number of categories of its largest dense part.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> rest = PramMatrix.form8([0.8, 0.8, 0.8], categories=["a", "b", "c"])
    >>> largest_dense_part(PramMatrix.block_diagonal([rest, PramMatrix([[0.9, 0.1], [0.1, 0.9]], ["x", "y"])]))
    2
    """
    if matrix.blocks is not None:
        return max(largest_dense_part(part) for _, part in matrix.blocks)
    return 0 if matrix.is_compact else matrix.size


def _pram_matrix(matrix: PramMatrix | ArrayLike, max_condition: float) -> PramMatrix:
    """The matrix as a :class:`PramMatrix`, with ``max_condition`` checked."""
    if not (isinstance(max_condition, (int, float)) and max_condition > 1):
        raise ParameterError(f"max_condition must be a number above 1, got {max_condition!r}")
    return matrix if isinstance(matrix, PramMatrix) else PramMatrix(np.asarray(matrix, dtype=float))


class _Weak(NamedTuple):
    """A group of a spectrum: its positions (increasing), free directions, identical rows."""

    indices: np.ndarray
    free_directions: int
    identical_rows: bool


class _Spectrum(Protocol):
    """What the verdict needs from a matrix's singular values."""

    def largest(self) -> float:
        """s_max."""

    def smallest(self) -> float:
        """s_min."""

    def count_at_most(self, bound: float) -> int:
        """How many singular values are at most ``bound``."""

    def weak_groups(self, bound: float) -> list[_Weak]:
        """The groups of the left singular vectors whose singular values are at most ``bound``."""


def _verdict(spectrum: _Spectrum, pm: PramMatrix, max_condition: float) -> dict[str, Any]:
    """The fields of :class:`Estimability`: rank (NumPy's rule), condition number and groups."""
    size = pm.size
    s_max = spectrum.largest()
    tol = rank_tolerance((s_max,), size)
    rank = size - spectrum.count_at_most(tol)
    bound: float | None
    if rank < size:
        cond, bound = math.inf, tol
    else:
        cond = s_max / spectrum.smallest()
        bound = s_max / max_condition if cond > max_condition else None
    weak = [] if bound is None else sorted(spectrum.weak_groups(bound), key=lambda g: int(g.indices[0]))
    groups = tuple(
        CategoryGroup(indices=tuple(int(i) for i in g.indices), categories=tuple(pm.categories[i] for i in g.indices),
                      free_directions=g.free_directions, identical_rows=g.identical_rows)
        for g in weak
    )
    return {"categories": pm.categories, "rank": rank, "condition_number": cond,
            "max_condition": float(max_condition), "groups": groups}


def _spectrum(pm: PramMatrix) -> _Spectrum:
    """Form (8) in O(S), dense by the SVD; a block-diagonal matrix as its dense blocks and all its
    form (8) blocks together."""
    if pm.blocks is None:
        return _Form8Spectrum.of([pm]) if pm.is_compact else _DenseSpectrum(pm.matrix)
    leaves = list(_leaves(pm, np.arange(pm.size)))
    parts: list[tuple[np.ndarray, _Spectrum]] = [(idx, _DenseSpectrum(m.matrix)) for idx, m in leaves
                                                 if not m.is_compact]
    compact = [(idx, m) for idx, m in leaves if m.is_compact]
    if compact:
        parts.append((np.concatenate([idx for idx, _ in compact]), _Form8Spectrum.of([m for _, m in compact])))
    return _BlockSpectrum(parts)


def _leaves(pm: PramMatrix, positions: np.ndarray) -> Iterator[tuple[np.ndarray, PramMatrix]]:
    """The parts of a (nested) block-diagonal matrix that are not block-diagonal, with their positions."""
    if pm.blocks is None:
        yield positions, pm
        return
    for idx, part in pm.blocks:
        yield from _leaves(part, positions[idx])


class _DenseSpectrum:
    """The SVD of a dense matrix (O(S^3)); groups as in the module docstring."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.u, self.s, _ = np.linalg.svd(matrix)

    @property
    def values(self) -> tuple[float, ...]:
        """All the singular values, in decreasing order."""
        return tuple(float(x) for x in self.s)

    def largest(self) -> float:
        return float(self.s[0])

    def smallest(self) -> float:
        return float(self.s[-1])

    def count_at_most(self, bound: float) -> int:
        return int(np.sum(self.s <= bound))

    def weak_groups(self, bound: float) -> list[_Weak]:
        weak = self.u[:, self.s <= bound]
        m = self.matrix
        return [_Weak(idx, round(float(np.sum(weak[idx] ** 2))),
                      bool(np.all(np.abs(m[idx] - m[idx[0]]) <= IDENTICAL_ROW_TOL)))
                for idx in dependent_groups(weak)]


class _BlockSpectrum:
    """A block-diagonal matrix: its singular values (and singular vectors) are its blocks'."""

    def __init__(self, parts: Sequence[tuple[np.ndarray, _Spectrum]]) -> None:
        self.parts = parts

    def largest(self) -> float:
        return max(sp.largest() for _, sp in self.parts)

    def smallest(self) -> float:
        return min(sp.smallest() for _, sp in self.parts)

    def count_at_most(self, bound: float) -> int:
        return sum(sp.count_at_most(bound) for _, sp in self.parts)

    def weak_groups(self, bound: float) -> list[_Weak]:
        return [_Weak(np.sort(idx[g.indices]), g.free_directions, g.identical_rows)
                for idx, sp in self.parts for g in sp.weak_groups(bound)]


class _Form8Spectrum:
    """The singular values of form (8) matrices ``diag(d) + w 1^T``, ``d = q - w``, side by side
    (the blocks of a block-diagonal matrix, or one matrix), in O(S) each.

    Any singular value by :meth:`_Secular.nth` (bisection on the exact count
    N(s) of :func:`estimability`, Notes, summed over the blocks).  For the
    rank and the groups, rows with ``|d_k|`` at most the bound asked about
    are deflated to ``d_k = 0`` (uniform rows): for two or more of them in a
    block the null space ``{v on Z : w . v = 0}`` is known exactly, and the
    count of the deflated block includes its ``|Z| - 1`` zeros.
    """

    def __init__(self, q: np.ndarray, w: np.ndarray, sizes: np.ndarray) -> None:
        self.q, self.w, self.sizes = q, w, sizes
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.secular = _Secular(q - w, w, self.starts)

    @classmethod
    def of(cls, parts: Sequence[PramMatrix]) -> _Form8Spectrum:
        """The compact matrices ``parts``, side by side."""
        return cls(np.concatenate([m.diagonal for m in parts]), np.concatenate([m.form8_w for m in parts]),
                   np.array([m.size for m in parts]))

    @cached_property
    def _s_max(self) -> float:
        q, w, s = self.q, self.w, self.sizes.repeat(self.sizes)
        lo = float(np.sqrt(q * q + (s - 1) * w * w).max())                 # ||M||_2 >= its largest row's 2-norm
        column = q - w + np.add.reduceat(w, self.starts).repeat(self.sizes)
        hi = math.sqrt(float((q + (s - 1) * w).max()) * float(column.max()))  # ||M||_2^2 <= ||M||_inf ||M||_1
        return self.secular.nth(self.q.size, lo * (1 - 4 * EPS), max(hi, lo) * (1 + 4 * EPS))

    def largest(self) -> float:
        return self._s_max

    def smallest(self) -> float:
        return self.secular.nth(1, self._s_max * EPS ** 2, self._s_max * (1 + 4 * EPS))

    def count_at_most(self, bound: float) -> int:
        return int(self._deflated(bound).below(float(np.nextafter(bound, math.inf))).sum())

    def weak_groups(self, bound: float) -> list[_Weak]:
        deflated = self._deflated(bound)
        top = float(np.nextafter(bound, math.inf))
        if self.sizes.size > 1:                    # the blocks with weak directions, one by one
            weak = np.flatnonzero(deflated.below(top))
            return [_Weak(g.indices + lo, g.free_directions, g.identical_rows)
                    for lo, size in zip(self.starts[weak], self.sizes[weak])
                    for g in _Form8Spectrum(self.q[lo:lo + size], self.w[lo:lo + size], np.array([size]))
                    .weak_groups(bound)]
        zero = np.flatnonzero(deflated.d == 0)
        structural = max(zero.size - 1, 0)
        projector = np.zeros(self.q.size)         # the diagonal of the projector onto the weak directions
        supports = []
        if zero.size >= 2:                         # {v on Z : w . v = 0}: projector I - w_Z w_Z^T / |w_Z|^2
            wz = self.w[zero] / np.linalg.norm(self.w[zero])
            projector[zero] = 1 - wz * wz
            supports.append(zero[_support(wz)])
        for j in range(structural + 1, int(deflated.below(top)[0]) + 1):
            u = deflated.left_vector(deflated.nth(j, bound * EPS ** 2, top))
            projector += u * u
            supports.append(np.flatnonzero(_support(u)))
        return [_Weak(g, round(float(projector[g].sum())), self._identical(g))
                for g in _merged(supports) if g.size > 1]

    def _deflated(self, bound: float) -> _Secular:
        """The matrices with the d_k of size at most ``bound`` set to 0."""
        d = self.secular.d
        small = np.abs(d) <= bound
        return _Secular(np.where(small, 0.0, d), self.w, self.starts) if small.any() else self.secular

    def _identical(self, g: np.ndarray) -> bool:
        """Whether the rows ``g`` of one matrix are identical (to :data:`IDENTICAL_ROW_TOL`): rows k and r
        differ by ``q_k - w_r`` in column k, ``w_k - q_r`` in column r and ``w_k - w_r`` in the others."""
        q, w, r, k = self.q, self.w, g[0], g[1:]
        same = (np.abs(q[k] - w[r]) <= IDENTICAL_ROW_TOL) & (np.abs(w[k] - q[r]) <= IDENTICAL_ROW_TOL)
        if q.size > 2:
            same &= np.abs(w[k] - w[r]) <= IDENTICAL_ROW_TOL
        return bool(np.all(same))


class _Secular:
    """Matrices ``diag(d) + w 1^T`` side by side (blocks starting at ``starts``): how many of their
    singular values lie below s, and the singular vectors of one.

    Each evaluation is a few passes over the vectors, in place, with NumPy's
    pairwise sums (per block: ``np.add.reduceat``).
    """

    def __init__(self, d: np.ndarray, w: np.ndarray, starts: np.ndarray) -> None:
        self.d, self.w, self.starts = d, w, starts
        self.absd = np.abs(d)
        self.dw, self.w2 = d * w, w * w
        self._inv, self._work = np.empty(d.size), np.empty(d.size)

    def _sums(self, s: float) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``s`` (moved up by ulps off any ``|d_k|``), ``1 / (d_k^2 - s^2)`` and each block's sums a, b, c."""
        inv, work = self._inv, self._work
        while True:
            np.subtract(self.absd, s, out=inv)
            np.add(self.absd, s, out=work)
            np.multiply(inv, work, out=inv)               # (|d| - s)(|d| + s): no cancellation in d^2 - s^2
            with np.errstate(divide="ignore"):
                np.reciprocal(inv, out=inv)
            b = np.add.reduceat(inv, self.starts)
            if np.all(np.isfinite(b)):
                break
            s = float(np.nextafter(s, math.inf))          # s was some |d_k|
        a = np.add.reduceat(np.multiply(self.dw, inv, out=work), self.starts)
        c = np.add.reduceat(np.multiply(self.w2, inv, out=work), self.starts)
        return s, inv, a, b, c

    def below(self, s: float) -> np.ndarray:
        """N(s) of each block: how many of its singular values are below ``s > 0``."""
        s, _, a, b, c = self._sums(s)
        p11, p22, off = s * c, s * b, 1.0 + a
        det = p11 * p22 - off * off
        positive = np.where(det < 0, 1, np.where(p11 + p22 <= 0, 0, np.where(det > 0, 2, 1)))
        return np.add.reduceat((self.absd < s).astype(int), self.starts) + positive - 1

    def nth(self, j: int, lo: float, hi: float) -> float:
        """The j-th smallest singular value of all the blocks, given ``0 < lo <= it < hi`` (``lo`` if it
        lies below): geometric bisection on :meth:`below` to a relative 4 eps."""
        while hi > lo * (1 + 4 * EPS):
            mid = math.sqrt(lo) * math.sqrt(hi)
            if not lo < mid < hi:
                break
            if self.below(mid).sum() >= j:
                hi = mid
            else:
                lo = mid
        return math.sqrt(lo) * math.sqrt(hi)

    def left_vector(self, s: float) -> np.ndarray:
        """The unit left singular vector of the simple singular value ``s`` of a single matrix."""
        s, inv, a, b, c = self._sums(s)
        r = -math.copysign(math.sqrt(abs(b[0] / c[0])), (1.0 + a[0]) * b[0])
        u = (s * r * self.w + self.d) * inv
        return u / np.linalg.norm(u)


def _support(v: np.ndarray) -> np.ndarray:
    """The categories linked to the largest entry of ``v`` in the support of ``v v^T`` (above
    :data:`SUPPORT_TOL`): the component of :func:`dependent_groups` for one vector, since
    ``|v_k v_l| <= |v_k| max|v|``."""
    size = np.abs(v)
    return size * size.max() > SUPPORT_TOL


def _merged(supports: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Sets of positions, those that share a position merged."""
    out: list[np.ndarray] = []
    for g in supports:
        keep = []
        for h in out:
            if np.intersect1d(g, h).size:
                g = np.union1d(g, h)
            else:
                keep.append(h)
        out = [*keep, g]
    return out


def dependent_groups(basis: np.ndarray, tol: float = SUPPORT_TOL) -> list[np.ndarray]:
    """Connected components (of two or more indices) of the support of ``B B^T``.

    ``basis`` has orthonormal columns spanning a (near-)null space; ``B B^T``
    is its projector, whose support links the categories that the null
    vectors mix.  Components are listed by their smallest index.

    Parameters
    ----------
    basis : numpy.ndarray, shape (S, K)
        Orthonormal columns (e.g. the left singular vectors of the zero singular values).
    tol : float
        Entries of ``B B^T`` at or below this are taken as zero.

    Returns
    -------
    list of numpy.ndarray
        The components, each its sorted indices.

    Examples
    --------
    Rows 0 and 2 are identical: the null vector of ``M^T`` mixes them, and only them.

    >>> third = 1 / 3
    >>> u, s, _ = np.linalg.svd([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]])
    >>> [g.tolist() for g in dependent_groups(u[:, s <= rank_tolerance(s, 3)])]
    [[0, 2]]
    >>> dependent_groups(np.zeros((3, 0)))                 # no null space, no group
    []
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
    """For each category, the index of its group, or -1 if it is in none.

    Parameters
    ----------
    groups : sequence of CategoryGroup
        The groups (:attr:`Estimability.groups`).
    size : int
        The number of categories S.

    Returns
    -------
    numpy.ndarray of int, shape (S,)
        The group of each category.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> third = 1 / 3
    >>> m = PramMatrix([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]], ("a", "b", "c"))
    >>> group_labels(identifiability(m).groups, 3).tolist()
    [0, -1, 0]
    """
    out = np.full(size, -1)
    for g, group in enumerate(groups):
        out[list(group.indices)] = g
    return out


def condition_number(mats: Sequence[np.ndarray | None]) -> float:
    """2-norm condition number of ``M_1 ⊗ M_2 ⊗ ...`` (singular values multiply);
    ``inf`` when a matrix is singular (its numerical rank,
    :func:`numerical_rank`, is below its size).

    The errors of the unbiased estimator ``(M^T)^{-1} lam_hat`` are amplified
    by up to this factor.

    Parameters
    ----------
    mats : sequence of numpy.ndarray or None
        One square matrix per axis, ``None`` for an unperturbed axis (condition 1).

    Returns
    -------
    float
        The condition number, ``>= 1``, or ``inf``.

    Examples
    --------
    Randomized response keeping with 3/4 has singular values 1 and 1/2;
    crossing two such variables squares the condition number:

    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> round(condition_number([rr, None]), 12), round(condition_number([rr, rr]), 12)
    (2.0, 4.0)
    >>> condition_number([np.array([[0.5, 0.5], [0.5, 0.5]])])
    inf
    """
    cond = 1.0
    for m in mats:
        if m is None:
            continue
        s = np.linalg.svd(m, compute_uv=False)
        if numerical_rank(s, m.shape[0]) < m.shape[0]:
            return math.inf
        cond *= float(s[0] / s[-1])
    return cond
