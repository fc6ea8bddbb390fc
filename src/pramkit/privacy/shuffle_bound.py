"""PRAM's own central guarantee under shuffling: clones whose probability is read off the PRAM matrices.

A shuffled release (``apply --shuffle``) hides each record among the others that agree with it on
what is shown exactly.  Every record's released values are drawn by the same local randomizer: the
product ``M = M_1 x ... x M_V`` of the PRAM matrices of its perturbed variables (independent draws;
rows ``m_x``, ``M[x, j] = P(released j | original x)``).  This module bounds the central
``(epsilon, delta)`` of ``n`` such records in random order, replace-one neighbours, by the clone
reduction of Feldman, McMillan and Talwar (2021) with the probability ``w`` that another record is a
clone computed exactly from the matrices (the law the engine draws from, in integer units), or, where
smaller, by two bounds per pair of values (the target's informative draw revealed; the target's common
draw hidden among the same draws of the others), the hockey-stick divergence of each reduced pair
computed exactly (binomial tails), epsilon found by bisection.

**The reduction (proof).**  Let ``p = e^eps0``, eps0 the record's epsilon (``m_x <= p m_y``
entrywise).  Fix the target's two values ``x0, x1`` and the other ``n - 1`` records.  Put

    ``nu_0 = (p m_x0 - m_x1) / (p - 1)``,  ``nu_1 = (p m_x1 - m_x0) / (p - 1)``,

two distributions (non-negative because the ratio is at most ``p``; each adds up to 1), with
``m_x0 = (p nu_0 + nu_1) / (p + 1)`` and ``m_x1 = (nu_0 + p nu_1) / (p + 1)``: the target draws
from ``nu_0`` or ``nu_1`` by a binary randomized response with ratio ``p`` (eq. C-1).  Since
``nu_0 + nu_1 = m_x0 + m_x1``, every other record's row is

    ``m_y = (w / 2) nu_0 + (w / 2) nu_1 + (1 - w) l_y``  with  ``w / 2 = min_j min_y M[y, j] / (M[x0, j] + M[x1, j])``

(eq. C-2; ``l_y`` a distribution): with probability ``w`` it is a *clone* drawing from ``nu_0`` or
``nu_1`` with probability 1/2 each.  The shuffled file is a post-processing of the counts of draws
from ``nu_0`` and from ``nu_1`` (draw them, give the non-clones their ``l_y`` draws, chosen
uniformly among the others given their number, which is the same under both values; shuffle), so its
divergence is at most that of

    ``P = (A + D, C - A + 1 - D)``,  ``Q = (A + 1 - D, C - A + D)``,  ``C ~ Bin(n - 1, w)``,
    ``A ~ Bin(C, 1/2)``,  ``D ~ Bern(p / (p + 1))``

(Feldman, McMillan and Talwar 2021, Theorem 3.2 and its proof, with their ``e^-eps0`` replaced by
``w``).  A clone more is a post-processing (its draw does not depend on the target), so the divergence
falls as ``w`` grows: any ``w`` below the true minimum over pairs, and any ``p`` above the true
ratio, give a valid bound.  Taking the minimum over every pair ``x0 != x1`` and row ``y`` column by
column,

    ``w = 2 min_j cmin_j / (top1_j + top2_j)``

with ``cmin_j`` the smallest entry of column ``j`` and ``top1_j``, ``top2_j`` its two largest (in
two rows).  Since ``cmin_j >= top1_j / p``, ``w >= 1 / p``, the paper's ``e^-eps0``; for randomized
response on any number of categories ``w = 2 / (p + 1)``, the "stronger clones" of Feldman,
McMillan and Talwar (2023); for a general matrix it lies between.

**Several variables.**  A product column ``j = (j_1, ..., j_V)`` has smallest entry
``prod_v cmin_v(j_v)``, largest ``prod_v top1_v(j_v)`` and second largest
``max_v top2_v(j_v) prod_{u != v} top1_u(j_u)`` (one factor moved to its second largest), so with
``a_v = cmin_v / top1_v`` and ``b_v = top2_v / top1_v`` per column,

    ``w / 2 = min_j prod_v a_v(j_v) / (1 + max_v b_v(j_v))``,

found exactly by trying each ``(v*, j*)`` as the one with the largest ``b`` (the others then take
their smallest ``a`` among columns with ``b`` no larger) (:func:`clone_probability`).  ``p`` is
``e^(sum eps_v)``, the record epsilon.  A variable whose rows are not read (strata, more than
:data:`MAX_CLONE_CATEGORIES` categories) counts as ``a_v = e^-eps_v``, ``b_v = 1``, which every
eps_v-DP matrix satisfies.

**Per pair of values (eq. C-3, C-4).**  For the pair ``x0, x1`` let ``u = (m_x0 - m_x1)_+`` and
``v = (m_x1 - m_x0)_+`` (each of mass ``b``, their total variation), ``d = u + v``, ``U = u / b``,
``V = v / b`` and ``a = b / (p - 1)``.  On the support of ``u``, ``m_x0 <= p m_x1 = p (m_x0 - u)``
gives ``m_x0 >= p u / (p - 1)`` and ``m_x1 >= u / (p - 1)`` (likewise on ``v``'s), so

    ``m_x0 = p a U + a V + c W``,  ``m_x1 = a U + p a V + c W``,  ``c = 1 - (p + 1) a``,
    ``c W = min(m_x0, m_x1) - d / (p - 1) >= 0``.

*Revealed pair (eq. C-3).*  Tell the adversary whether the target drew ``W`` (probability ``c``
under both values).  Otherwise (probability ``gamma = (p + 1) a = b (p + 1) / (p - 1)``) the target
is a binary randomized response between ``U`` and ``V`` with ratio ``p``, and every other row
contains ``(w / 2)(U + V)`` for ``w / 2 = b min_j cmin_j / d_j``: the divergence is at most ``gamma``
times the clone pair's with that ``w``.  It grows with ``gamma`` and falls with ``w``.

*Blanket pair (eq. C-4).*  Every row is at least ``cmin >= d / (p - 1) = a U + a V``, hence contains
``a U + a V + r W`` for ``r = min_j (cmin_j - d_j / (p - 1)) / W_j``: each other record draws ``U``,
``V`` or ``W`` with probabilities ``(a, a, r)``, or a remainder of its own.  Every draw from ``W``, the
target's or another's, has one law, so the file is a post-processing of the counts ``(N_U, N_V, N_W)``
(the others that draw their own remainders are uniform given their number, ``n - N_U - N_V - N_W``: the
target never does).  The law of ``M = N_U + N_V`` and ``N_W`` is the same under both values; given
them, the target drew ``U`` or ``V`` with probability ``lambda``,
``lambda / (1 - lambda) = (p + 1) r M / (2 c N_W)``, and ``N_U`` is the clone pair's with ``C = M - 1``
clones and ``D ~ Bern(1/2 + lambda (p - 1) / (2 (p + 1)))``.  Its divergence grows with that bias and
``lambda`` falls as ``N_W`` grows, so ``N_W`` is taken at the smallest value the others reach but with
probability ``1e-6 delta`` (counted whole): ``delta(eps) <= sum_M P(M) H(M - 1, lambda(M)) + 1e-6 delta``
(:meth:`_Mixture.blanket`).  The target's ``W`` hides among the others': the variation-ratio
reduction's idea, with only the ``W`` every row contains counted as the target's.

Neither pair bound is monotone in ``b``, so every pair of rows of the record's law is read when it
has at most :data:`MAX_PAIR_CATEGORIES` cells (:func:`pair_boxes`): each pair takes the smaller of its
two bounds, the file the largest over pairs, or the clone bound when that is smaller.

**The divergence.**  Given ``C``, the likelihood ratio of ``P`` to ``Q`` rises with the first count, so
``delta(eps) = sum_C pmf(C) [(alpha - e^eps (1 - alpha)) P(B >= k* - 1) + ((1 - alpha) - e^eps alpha)
P(B >= k*)]`` with ``alpha = p / (p + 1)``, ``B ~ Bin(C, 1/2)`` and the cut-off ``k*``; it is computed
through binomial tails, each with a margin for its rounding, the cut-off tried at ``k* - 1, k*,
k* + 1`` (the largest sum is the divergence), the range of ``C`` outside ``1e-6 delta`` of its mass
added whole, and epsilon is the smallest multiple of :data:`GRID` where the upper ``delta(eps)`` is
at most ``delta`` (never above eps0).

*Not used: the variation-ratio reduction.*  Splitting each row as ``p a U + a V + c W`` (``U``, ``V``
the normalised parts where the two rows differ, ``a = TV / (p - 1)``) and counting the others'
"rest" draws together with the target's (Wang et al. 2024) is not a post-processing when the others'
rests differ from the target's ``W``: for randomized response on 3 categories at eps0 = 2, 12 records
of which the 11 others share the target's first value, the shuffled histograms are
0.0102-apart at epsilon 1.8 (every histogram enumerated), where that reduction gives 0.00045.
``tests/test_shuffle_bound.py`` enumerates such files.

Examples
--------
Randomized response on 10 categories at eps0 = 4, n = 10^5, delta = 10^-6 (the general bound
of Feldman, McMillan and Talwar 2021 is 0.1698):

>>> from pramkit.design.classic import randomized_response
>>> cp = clone_parameters([randomized_response(list(range(10)), 4.0)])
>>> round(cp.w * (math.exp(4.0) + 1), 9), f"{shuffled_epsilon(cp, 100_000, 1e-6).epsilon:.4f}"
(2.0, '0.1108')

References
----------
Feldman, V., McMillan, A. and Talwar, K. (2021), Hiding among the clones: a simple and nearly optimal
analysis of privacy amplification by shuffling, FOCS 2021, Theorem 3.2.
Feldman, V., McMillan, A. and Talwar, K. (2023), Stronger privacy amplification by shuffling for
Renyi and approximate differential privacy, SODA 2023.
Wang, S., Peng, Y., Li, J., Wen, Z., Li, Z., Yu, S., Wang, D. and Yang, W. (2024), Privacy
amplification via shuffling: unified, simplified, and tightened, PVLDB 17(8) (arXiv 2304.05007).
Balle, B., Bell, J., Gascon, A. and Nissim, K. (2019), The privacy blanket of the shuffle model, CRYPTO 2019.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pramkit.errors import ParameterError

#: Resolution of the bisection over epsilon (nats): the bound is a multiple of it, rounded up.
GRID = 2.0 ** -32
#: Relative error allowed to each binomial tail and probability (Boost's, through scipy, are within about 1e-13).
ERR = 1e-9
#: Absolute margin per binomial term (tails that underflow).
TINY = 1e-300
#: Relative margin by which the clone probability is rounded down.
DOWN = 1e-12
#: The largest matrix whose columns are read (S x S integer units in memory); larger ones count as generic.
MAX_CLONE_CATEGORIES = 2000
#: The largest law (categories of a variable, or cells of the product of a record's variables) whose
#: pairs of rows are read for the pair bound (O(S^3)).
MAX_PAIR_CATEGORIES = 600
#: The most distinct pairs of rows whose blanket bound (eq. C-4) is computed, each on its own.
MAX_BLANKET_PAIRS = 64
#: The default central delta.
DEFAULT_DELTA = 1e-6


@dataclass(frozen=True)
class CloneParameters:
    """What the clone bound needs of a record's randomizer (module docstring).

    Attributes
    ----------
    epsilon0 : float
        The local (record) epsilon, nats.
    p : float
        ``e^epsilon0`` rounded up (``inf`` for an infinite epsilon).
    w : float
        The probability that another record is a clone (eq. C-2), rounded down; in ``[1 / p, 2 / (p + 1)]``
        for an eps0-DP randomizer.
    pairs : tuple of tuple of float
        For the pair bounds (eq. C-3, C-4): ``(gamma, w, a, c, r)`` of every pair of rows
        (:func:`pair_boxes`); empty when the rows were not read.
    """

    epsilon0: float
    p: float
    w: float
    pairs: tuple[tuple[float, ...], ...] = ()

    @classmethod
    def of(cls, epsilon0: float, w: float | None = None,
           pairs: Sequence[tuple[float, ...]] = ()) -> CloneParameters:
        """The parameters of an eps0-DP randomizer with clone probability ``w`` (``None``: ``e^-eps0``, any randomizer).

        Raises
        ------
        ParameterError
            A negative or NaN epsilon, or ``w`` outside [0, 1].

        Examples
        --------
        >>> c = CloneParameters.of(math.log(3.0))
        >>> round(c.p, 12), round(c.w, 12)
        (3.0, 0.333333333333)
        """
        if isinstance(epsilon0, bool) or not isinstance(epsilon0, (int, float)) or not epsilon0 >= 0:
            raise ParameterError(f"the local epsilon must be a non-negative number, got {epsilon0!r}")
        if w is not None and (isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 1):
            raise ParameterError(f"the clone probability must lie in [0, 1], got {w!r}")
        eps = float(epsilon0)
        p = math.inf if eps > 700 else math.exp(eps) * (1 + 4 * 2.0 ** -52)
        generic = 0.0 if math.isinf(p) else (1.0 / p) * (1 - DOWN)
        return cls(eps, p, generic if w is None else float(w), tuple(tuple(float(x) for x in t) for t in pairs))


def column_ratios(matrix: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per column of the law the engine draws from ``matrix``: ``a = cmin / top1`` (rounded down) and
    ``b = top2 / top1`` (rounded up), over the columns some row can release.

    Computed from the realised law's integer units (:func:`pramkit.privacy.law.realised_law`), or,
    for an exact law (truncated geometric, exponential mechanism) or a plain array, from its entries
    with a margin.

    Parameters
    ----------
    matrix : PramMatrix or array-like, shape (S, S)

    Returns
    -------
    a, b : numpy.ndarray

    Examples
    --------
    >>> a, b = column_ratios([[0.6, 0.4], [0.2, 0.8]])
    >>> [round(float(x), 9) for x in a], [round(float(x), 9) for x in b]
    ([0.333333333, 0.5], [0.333333333, 0.5])
    """
    from pramkit.matrix import PramMatrix
    from pramkit.privacy.law import realised_law

    units: np.ndarray
    if isinstance(matrix, PramMatrix) and not realised_law(matrix).exact:
        units = np.asarray(realised_law(matrix).unit_matrix(), dtype=np.int64)
        slack = 8 * 2.0 ** -53                    # int -> float (each within 2^-53) and one division
    else:
        units = np.asarray(matrix.matrix if isinstance(matrix, PramMatrix) else matrix, dtype=float)
        slack = 1e-12                             # a closed form's entries, each within a few ulps
    if units.shape[0] < 2:
        return np.ones(1), np.zeros(1)
    part = np.sort(units, axis=0)
    cmin, top2, top1 = (part[i].astype(float) for i in (0, -2, -1))
    used = top1 > 0
    cmin, top2, top1 = cmin[used], top2[used], top1[used]
    a = np.where(cmin > 0, cmin / top1 * (1 - slack), 0.0)
    b = np.minimum(top2 / top1 * (1 + slack), 1.0)
    return a, b


def clone_probability(columns: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """The clone probability ``w`` of a product of randomizers from each one's :func:`column_ratios`.

    ``w / 2 = min over product columns of prod_v a_v / (1 + max_v b_v)`` (module docstring), exactly:
    each ``(v*, j*)`` is tried as the column with the largest ``b``; the result is rounded down.

    Parameters
    ----------
    columns : sequence of (a, b)
        One pair of arrays per variable.

    Returns
    -------
    float

    Examples
    --------
    Two binary randomized responses at ratio 3: the product has ratio 9 and ``w = 2 (1/9) / (1 + 1/3)``.

    >>> rr = column_ratios([[0.75, 0.25], [0.25, 0.75]])
    >>> round(clone_probability([rr, rr]), 9), round(2 * (1 / 9) / (1 + 1 / 3), 9)
    (0.166666667, 0.166666667)
    """
    parts = [(np.asarray(a, dtype=float), np.asarray(b, dtype=float)) for a, b in columns]
    if not parts:
        return 1.0
    best = math.inf
    for v, (a_v, b_v) in enumerate(parts):
        for bound in np.unique(b_v):
            rest = 1.0
            for u, (a_u, b_u) in enumerate(parts):
                if u == v:
                    continue
                fit = a_u[b_u <= bound]
                if fit.size == 0:
                    rest = math.inf
                    break
                rest *= float(fit.min())
            if math.isinf(rest):
                continue
            best = min(best, float(a_v[b_v == bound].min()) * rest / (1.0 + float(bound)))
    return max(2.0 * best * (1 - DOWN), 0.0)


def _law(matrix: Any) -> np.ndarray:
    """The law the engine draws from ``matrix`` as doubles (each entry within 2^-52 relative of its units)."""
    from pramkit.matrix import PramMatrix
    from pramkit.privacy.law import realised_law

    if isinstance(matrix, PramMatrix):
        law = realised_law(matrix)
        if not law.exact:
            return np.ldexp(np.asarray(law.unit_matrix(), dtype=np.int64).astype(float), -law.bits)
        return np.asarray(matrix.matrix, dtype=float)
    return np.asarray(matrix, dtype=float)


def pair_boxes(law: np.ndarray, p: float, boxes: int = 12) -> tuple[tuple[float, ...], ...]:
    """The pair bounds' parameters for every pair of rows of ``law``: ``(gamma, w, a, c, r)`` per pair.

    For rows ``x0, x1`` at total variation ``b``, ``d = |m_x0 - m_x1|``, ``cmin`` the columns' smallest
    entries: the revealed pair (eq. C-3) has ``gamma = b (p + 1) / (p - 1)`` and
    ``w = 2 b min_j cmin_j / d_j``; the blanket pair (eq. C-4) has ``a = b / (p - 1)``,
    ``c = 1 - (p + 1) a`` and ``r = min_j (cmin_j - d_j / (p - 1)) / W_j`` with
    ``c W = min(m_x0, m_x1) - d / (p - 1)``.  Pairs with the same figures are kept once.  Beyond
    :data:`MAX_BLANKET_PAIRS` distinct pairs, only the revealed pair is kept, and a pair with a
    larger ``gamma`` and a smaller ``w`` than another covers it: the pairs no other covers are grouped
    into ``boxes`` boxes of their largest ``gamma`` and smallest ``w`` (``a, c, r`` then NaN).

    Parameters
    ----------
    law : numpy.ndarray, shape (S, S)
        Row-stochastic (at most :data:`MAX_PAIR_CATEGORIES` rows).
    p : float
        At least the largest ratio of two rows' entries.
    boxes : int
        The most boxes when the pairs are too many.

    Returns
    -------
    tuple of tuple of float

    Examples
    --------
    Randomized response on 3 categories at ratio 4: every pair has ``b = 1/2``, so ``gamma = 5/6``,
    ``w = 2 (1/2) (1/6) / (1/2) = 1/3``, ``a = 1/6``, ``c = 1/6``; ``W`` is the third category, which
    every row releases with probability 1/6, so ``r = 1/6``.

    >>> [tuple(round(x, 6) for x in t) for t in pair_boxes(np.array([[4, 1, 1], [1, 4, 1], [1, 1, 4]]) / 6, 4.0)]
    [(0.833333, 0.333333, 0.166667, 0.166667, 0.166667)]
    """
    m = np.asarray(law, dtype=float)
    size = m.shape[0]
    if size > MAX_PAIR_CATEGORIES:
        raise ParameterError(f"the pair bound reads at most {MAX_PAIR_CATEGORIES} categories, not {size}")
    cmin = m.min(axis=0) * (1 - 1e-12)
    rows = []
    for k in range(size - 1):
        diff = m[k + 1:] - m[k]
        d = np.abs(diff)
        b = np.clip(diff, 0, None).sum(axis=1)
        slack = 8 * 2.0 ** -52 * (m[k + 1:] + m[k]) + 1e-300
        ratio = (cmin / (d + slack)).min(axis=1)
        gamma = np.minimum((b * (1 + 1e-12) + size * 1e-16) * (p + 1) / (p - 1), 1.0)
        w = np.minimum(2 * b * ratio * (1 - 1e-12), 1.0)
        a = b / (p - 1)
        c = np.clip(1.0 - (p + 1) * a, 0.0, 1.0)
        common = np.minimum(m[k + 1:], m[k]) - d / (p - 1)
        avail = np.clip(cmin - d / (p - 1) - slack, 0.0, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(common > slack, avail * c[:, None] / common, np.inf)
        r = np.where(c > 0, np.minimum(per.min(axis=1) * (1 - 1e-9), 1.0 - 2 * a), 0.0)
        rows.append(np.column_stack([gamma, w, a, c, np.maximum(r, 0.0)]))
    table = _distinct(np.concatenate(rows)) if rows else np.zeros((0, 5))
    if len(table) <= MAX_BLANKET_PAIRS:
        return tuple(tuple(float(x) for x in row) for row in table)
    frontier: list[tuple[float, float]] = []
    for g, w in sorted(zip(table[:, 0].tolist(), table[:, 1].tolist()), key=lambda t: (-t[0], t[1])):
        if not frontier or w < frontier[-1][1]:                       # not covered by a larger gamma
            frontier.append((g, w))
    cuts = np.linspace(0, len(frontier), min(boxes, len(frontier)) + 1).astype(int)
    nan = float("nan")
    return tuple((frontier[lo][0], frontier[hi - 1][1], nan, nan, nan)
                 for lo, hi in itertools.pairwise(cuts.tolist()) if hi > lo)


def _distinct(table: np.ndarray) -> np.ndarray:
    """One row of each group of rows equal to within 1e-13 relative: the figures' own rounding (a few ulps),
    far inside the margins of the divergences (a relative change of 1e-13 moves a binomial weight by
    less than 1e-9 relative up to 10^8 trials)."""
    with np.errstate(divide="ignore"):
        key = np.where(table > 0, np.round(np.log(np.where(table > 0, table, 1.0)) * 1e13), -np.inf)
    _, first = np.unique(key, axis=0, return_index=True)
    return table[np.sort(first)]


def clone_parameters(matrices: Sequence[Any], epsilons: Sequence[float] | None = None) -> CloneParameters:
    """The clone parameters of a record whose variables are drawn from ``matrices`` independently.

    Parameters
    ----------
    matrices : sequence of PramMatrix or None
        One per variable; ``None`` for a variable whose rows are not read (it counts as any
        eps_v-DP matrix: ``a_v = e^-eps_v``, ``b_v = 1``), as does a matrix of more than
        :data:`MAX_CLONE_CATEGORIES` categories.
    epsilons : sequence of float, optional
        Each variable's stated epsilon (rounded outward, at least its matrix's); the matrices' own by default.

    Returns
    -------
    CloneParameters
        ``p = e^(sum eps_v)`` (the sum rounded up) and ``w`` of the product (:func:`clone_probability`).

    Raises
    ------
    ParameterError
        Not one epsilon per matrix, or a matrix missing its epsilon.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> cp = clone_parameters([randomized_response(["f", "m"], math.log(3)), randomized_response(list("abcd"), math.log(3))])
    >>> round(cp.p, 9), round(cp.w, 9)
    (9.0, 0.166666667)
    """
    from pramkit.privacy.exact import sum_up

    if epsilons is None:
        if any(m is None for m in matrices):
            raise ParameterError("a variable without its matrix needs its epsilon")
        epsilons = [m.epsilon for m in matrices]
    eps = [float(e) for e in epsilons]
    if len(eps) != len(matrices):
        raise ParameterError(f"one epsilon per matrix: {len(eps)} epsilons for {len(matrices)} matrices")
    total = sum_up(eps) if eps else 0.0
    params = CloneParameters.of(total)
    pairs: tuple[tuple[float, ...], ...] = ()
    sizes = [0 if m is None else _size(m) for m in matrices]
    if sizes and 0 not in sizes and math.prod(sizes) <= MAX_PAIR_CATEGORIES and math.isfinite(params.p) \
            and total > 0:
        law = np.ones((1, 1))
        for m in matrices:
            law = np.kron(law, _law(m))          # the product law, each entry within about V ulps
        pairs = pair_boxes(law, params.p)
    columns = []
    for m, e in zip(matrices, eps):
        size = None if m is None else _size(m)
        if size is not None and size <= MAX_CLONE_CATEGORIES and math.isfinite(e):
            columns.append(column_ratios(m))
        else:
            generic = 0.0 if e > 700 else math.exp(-e) * (1 - DOWN)
            columns.append((np.array([generic]), np.array([1.0])))
    return CloneParameters.of(total, clone_probability(columns) if math.isfinite(total) else 0.0, pairs)


def _size(matrix: Any) -> int:
    from pramkit.matrix import PramMatrix

    return matrix.size if isinstance(matrix, PramMatrix) else len(matrix)


def _tails(cee: np.ndarray, cut: np.ndarray, count: int) -> list[np.ndarray]:
    """``P(B >= cut + i)`` for ``i = -count + 2, ..., 1`` (``count`` tails ending at ``cut + 1``), ``B ~ Bin(C, 1/2)``.

    One survival function (Boost's incomplete beta through :data:`scipy.stats.binom`, within about
    1e-13 relative; the Cephes ``bdtrc`` is off by up to 1e-9 near ``C = 10^6``) and point masses
    added or, for the last, taken away (an absolute error below ``2^-50 P(B >= cut)``).
    """
    from scipy.stats import binom

    c = cee.astype(np.int64)
    at = binom.sf(cut - 1.0, c, 0.5)
    out = [np.maximum(at - binom.pmf(cut, c, 0.5), 0.0)]         # P(B >= cut + 1)
    out.insert(0, at)
    for shift in range(1, count - 1):
        out.insert(0, out[0] + binom.pmf(cut - shift, c, 0.5))
    return out


@dataclass(frozen=True)
class _Mixture:
    """``gamma sum_C weight_C H(C, alpha_C, eps) + outside``: a binomial mixture of the pair
    ``alpha b_C(k - 1) + (1 - alpha) b_C(k)`` against ``(1 - alpha) b_C(k - 1) + alpha b_C(k)``
    (``b_C`` the law of ``Bin(C, 1/2)``), over the range of ``C`` kept."""

    alpha: np.ndarray
    cee: np.ndarray
    weights: np.ndarray
    outside: float
    gamma: float = 1.0

    @classmethod
    def of(cls, cp: CloneParameters, n: int, delta: float, *, w: float | None = None,
           gamma: float = 1.0) -> _Mixture:
        """The clone bound (eq. C-1, C-2; ``gamma = 1``) or a box of the pair bound (eq. C-3)."""
        from scipy.stats import binom

        w = min(cp.w if w is None else w, 1.0)
        lo, hi, outside = _kept(n - 1, w, delta)
        cee = np.arange(lo, hi + 1, dtype=float)
        alpha = np.full(cee.shape, cp.p / (cp.p + 1.0))
        return cls(alpha, cee, binom.pmf(cee, n - 1, w), outside, gamma)

    @classmethod
    def blanket(cls, cp: CloneParameters, n: int, delta: float, a: float, c: float, r: float) -> _Mixture:
        """The blanket bound of one pair (eq. C-4): ``M = N0 + N1`` and the target's weight given the
        fewest draws from ``W`` the others make but with probability ``1e-6 delta``."""
        from scipy.stats import binom

        p = cp.p
        s, share = 2.0 * a, r / (1.0 - 2.0 * a)
        lo, hi, outside = _kept(n - 1, s, delta)
        big = np.arange(max(lo, 1), hi + 2, dtype=float)                 # M = K + I, K in [lo, hi]
        big = big[big <= n]
        weights = (1.0 - c) * binom.pmf(big - 1, n - 1, s) + c * binom.pmf(big, n - 1, s)
        tau = delta * 1e-6
        fewest = np.minimum(binom.ppf(tau, n - big, share), binom.ppf(tau, n - 1 - big, share) + 1.0)
        fewest = np.where(np.isnan(fewest), 0.0, fewest)
        with np.errstate(divide="ignore", invalid="ignore"):
            odds = np.where((fewest > 0) & (c > 0), (p + 1.0) * r * big / (2.0 * c * fewest), np.inf)
            share_informative = np.where(np.isinf(odds), 1.0, odds / (1.0 + odds))
        alpha = 0.5 + share_informative * (p - 1.0) / (2.0 * (p + 1.0))
        return cls(np.minimum(alpha * (1 + 1e-12), p / (p + 1.0)), big - 1.0, weights,
                   outside + tau * (1 + ERR))

    def delta(self, eps: float, *, upper: bool = True) -> float:
        """An upper (``upper=True``) or a lower bound of the mixture's divergence at ``eps``."""
        # e^eps rounded towards the side the bound needs: a smaller e^eps gives a larger delta
        e = math.exp(eps) * (1 - 4 * 2.0 ** -52 if upper else 1 + 4 * 2.0 ** -52)
        scale = 4 * 2.0 ** -52 * (1.0 + e)       # rounding of the coefficients
        first = self.alpha - e * (1.0 - self.alpha)       # coefficient of P(B >= k - 1); the ratio rises with k
        live = first > (-scale if upper else 0.0)
        rest = math.fsum(self.weights[~live]) * scale if upper else 0.0
        if not live.any():
            return min(self.gamma * (self.outside + rest + TINY), 1.0) if upper else 0.0
        cee, w, alpha = self.cee[live], self.weights[live], self.alpha[live]
        c1 = np.maximum(first[live], 0.0)
        c2 = (1.0 - alpha) - e * alpha           # coefficient of P(B >= k), negative
        # the crossing k (cee + 1) / (1 + k), k = -c2 / c1, written as -c2 / (c1 - c2): no overflow when c1 is tiny
        cut = np.floor((cee + 1.0) * (-c2 / (np.maximum(c1, 1e-300) - c2))) + 1.0
        tails = _tails(cee, cut, 4)              # P(B >= cut - 2), ..., P(B >= cut + 1)
        if not upper:
            tails = tails[1:3]
        sums = [c1 * tails[i] + c2 * tails[i + 1] for i in range(len(tails) - 1)]
        slack = [ERR * (c1 * tails[i] - c2 * tails[i + 1]) + scale * (tails[i] + tails[i + 1]) + TINY
                 for i in range(len(tails) - 1)]
        if not upper:
            low = np.maximum(sums[0] - slack[0], 0.0)
            return max(self.gamma * math.fsum(w * low) * (1 - ERR), 0.0)
        top = np.maximum.reduce([np.maximum(v + d, 0.0) for v, d in zip(sums, slack)])
        up = math.fsum(w * top) * (1 + ERR) + self.outside + rest + TINY * cee.size
        return min(self.gamma * up * (1 + 1e-12), 1.0)


def _kept(trials: int, prob: float, delta: float) -> tuple[int, int, float]:
    """The range of ``Bin(trials, prob)`` kept (all but ``1e-6 delta`` of its mass on each side) and the
    mass outside it, rounded up (every term of a mixture is at most its weight)."""
    from scipy.stats import binom

    tau = delta * 1e-6
    lo, hi = (int(x) for x in (binom.ppf(tau, trials, prob), binom.isf(tau, trials, prob)))
    lo, hi = max(lo, 0), min(max(hi, lo), trials)
    outside = 0.0
    if lo > 0 or hi < trials:
        outside = float(binom.cdf(lo - 1, trials, prob) + binom.sf(hi, trials, prob)) * (1 + ERR) + 1e-300
    return lo, hi, outside


@dataclass(frozen=True)
class ShuffleAccount:
    """The central ``(epsilon, delta)`` of ``n`` shuffled records, and what it was computed from.

    Attributes
    ----------
    epsilon : float
        A guaranteed upper bound (what the receipt states): a multiple of :data:`GRID`, never above
        ``epsilon0``.
    lower : float
        A lower bound on the same numerical bound (the exact divergence of the clone pair lies between).
    delta : float
        The central delta.
    n : int
        Records shuffled together.
    parameters : CloneParameters
        ``epsilon0``, ``p`` and ``w`` of the record's randomizer.
    """

    epsilon: float
    lower: float
    delta: float
    n: int
    parameters: CloneParameters


def _check(n: Any, delta: Any) -> tuple[int, float]:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError(f"the number of shuffled records n must be a whole number of at least 1, got {n!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ParameterError(f"delta must lie strictly between 0 and 1, got {delta!r}")
    return int(n), float(delta)


def _first(test: Any, lo: int, hi: int) -> int:
    """The smallest k in (lo, hi] with ``test(k)`` true, ``test`` monotone and true at ``hi``."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if test(mid) else (mid, hi)
    return hi


def shuffled_epsilon(parameters: CloneParameters | Sequence[Any], n: int,
                     delta: float = DEFAULT_DELTA) -> ShuffleAccount:
    """The central epsilon of ``n`` shuffled records at ``delta``: the clone bound with the matrices' ``w``.

    Parameters
    ----------
    parameters : CloneParameters or sequence of PramMatrix
        The record's randomizer: its parameters, or its variables' matrices (:func:`clone_parameters`).
    n : int
        Records shuffled together (the fewest that agree on what is shown exactly).
    delta : float
        The central delta, in (0, 1).

    Returns
    -------
    ShuffleAccount

    Raises
    ------
    ParameterError
        ``n`` below 1, ``delta`` outside (0, 1), or bad parameters.

    Examples
    --------
    Any eps0-DP randomizer (``w = e^-eps0``) at eps0 = 4: the figure of Feldman, McMillan and Talwar
    (2021), between 0.1675 and 0.1728 by their implementation; randomized response (``w = 2 / (p + 1)``):

    >>> f"{shuffled_epsilon(CloneParameters.of(4.0), 100_000, 1e-6).epsilon:.4f}"
    '0.1698'
    >>> from pramkit.design.classic import randomized_response
    >>> b = shuffled_epsilon([randomized_response(["f", "m"], 4.0)], 100_000, 1e-6)
    >>> f"{b.epsilon:.4f}", b.lower <= b.epsilon
    ('0.1182', True)
    """
    n, delta = _check(n, delta)
    cp = parameters if isinstance(parameters, CloneParameters) else clone_parameters(list(parameters))
    eps0 = cp.epsilon0
    if eps0 == 0 or math.isinf(cp.p) or n == 1:      # nothing to hide among: the local figure
        return ShuffleAccount(eps0, eps0, delta, n, cp)
    clone = _Mixture.of(cp, n, delta)
    pairs = [(_Mixture.of(cp, n, delta, w=w, gamma=g),
              None if math.isnan(a) else _Mixture.blanket(cp, n, delta, a, c, r)) for g, w, a, c, r in cp.pairs]

    def holds(k: int, upper: bool = True) -> bool:
        """Every pair of values is within delta at epsilon ``k GRID``: by the clone bound, or each pair by
        its revealed or its blanket bound."""
        eps = k * GRID
        if clone.delta(eps, upper=upper) <= delta:
            return True
        return bool(pairs) and all(r.delta(eps, upper=upper) <= delta
                                   or (b is not None and b.delta(eps, upper=upper) <= delta) for r, b in pairs)

    top = math.ceil(eps0 / GRID)
    up = _first(holds, -1, top) if holds(top) else top
    near = max(up - 4096, -1)                     # the lower figure is usually within 1e-6 of the upper
    low = (_first(lambda k: holds(k, False), near, up) if near < 0 or not holds(near, False)
           else _first(lambda k: holds(k, False), -1, near)) - 1
    upper = min(up * GRID, eps0)
    return ShuffleAccount(upper, min(max(low, 0) * GRID, upper), delta, n, cp)
