"""Reductions of the spontaneous-recognition design for large data (Cator, Hensbergen and Rozenholc, section 4).

Exact reductions of the constraint set (they drop only inequalities that
hold anyway), for the ``full`` method:

* inequality (2): the posterior of type m is at most ``1/U_0(m)``, so only the
  rare types, ``U_0(m) < 1/alpha``, need constraints;
* the gamma bound: if every occurring type keeps its value with probability
  ``P[l, l] >= gamma``, the denominator of (1) is at least ``gamma U_pi(k0)``, so
  only ``(pi, k0)`` with ``U_pi(k0) < 1/(gamma alpha)`` need constraints, and by
  inequality (5) a type with ``m_pi != k0`` only when
  ``(1 - gamma) / (gamma U_pi(k0)) >= alpha`` (or ``U_pi(k0) = 0``, where (5)
  says nothing).  The ``full`` method imposes ``P[m, m] >= gamma`` on the
  occurring types (so the cut is exact) and restarts with a smaller gamma when
  the bound is active; the restricted support does not impose it and restarts
  when a diagonal entry falls below gamma (:func:`with_gamma_restarts`).

The restricted support (the paper's closing suggestion) keeps the rows of all
types with ``U_0 < 1/alpha`` equal to the identity and lets each frequent type
f (``U_0(f) >= 1/alpha``, the sources) move with probabilities ``e_f`` into a
few target cells that together cover the problem combinations (every
``(pi, k0)`` with ``U_pi(k0) < 1/(gamma alpha)`` that holds a rare type).
Then:

* (C1) for a rare m with ``m_pi = k0`` is ``den(pi, k0) >= 1/alpha`` with the
  linear ``den = U_pi(k0) + sum_f U_0(f) sum_t e_ft ([t_pi = k0] - [f_pi = k0])``;
  every other ratio of a rare m is 0 and a frequent m is safe by (2);
* with ``s_f = sum_t e_ft`` the matrix is block triangular and
  ``n^2 l2 + n = n + sum_f U_0(f) ((1 + |e_f|^2) / (1 - s_f) + s_f - 1)``
  (:func:`restricted_l2`), a convex function (quadratic over linear);
* the problem is therefore convex, and sources with the same membership of
  problem combinations share one optimal row (the per-row Lagrangian does not
  depend on ``U_0(f)``; averaging rows of a group is feasible and, by
  convexity, no worse), so there is one row of variables per group.

It is solved with ``trust-constr`` (analytic gradient and Hessian) and
certified by a Lagrangian bound on the linearisation, checked in exact
rational arithmetic (:func:`certified_lower_bound`): for the point x found
(any point with every ``s_g < 1``, feasible or not) and any multipliers
``lambda >= 0`` of the (C1) rows (HiGHS's duals of the Frank-Wolfe LP
``min grad f(x) . y`` over the constraint polytope, clipped at 0: no repair is
needed, every ``lambda >= 0`` gives a valid bound), convexity and weak duality
give

    f* >= f(x) - grad f(x) . x + lambda . need + MAX_CHANGE sum_g min(0, min_t r_gt),
    r = grad f(x) - A^T lambda,

the last sum being the exact minimum of ``r . y`` over the rows' simplices
``y >= 0, sum_t y_gt <= MAX_CHANGE``.  Every term is computed from the stored
doubles as fractions (``need = 1/alpha - U_pi(k0)`` exactly, the (C1) rows at
alpha itself, which relaxes the ``alpha (1 - SAFETY)`` the optimiser aims at),
and the bound is rounded down: ``lower_bound_records`` is a proof, and the
gap ``f(x) - lower_bound`` (rounded up) bounds how far the design is above the
optimum of the restricted problem.  With optimal multipliers the bound is the
Frank-Wolfe bound ``f(x) - grad f(x) . (x - y*)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import Bounds, LinearConstraint, linprog, minimize

from pramkit.errors import MatrixError, ParameterError
from pramkit.information import float_above, float_below
from pramkit.risk.space import SAFETY, KeySpace, Solve

#: Smallest gamma tried before every combination is kept.
GAMMA_FLOOR = 1e-9
#: A diagonal entry within this of gamma counts as being at the bound.
ACTIVE_TOL = 1e-7
#: Largest probability of change of a source (keeps P invertible, l2 finite).
MAX_CHANGE = 1.0 - 1e-6


def rare_types(space: KeySpace, alpha: float) -> np.ndarray:
    """Occurring types with ``U_0(m) < 1/alpha`` (section 2, inequality (2)).

    The posterior of type m is at most ``1/U_0(m)``, so only these types can
    break (C1).

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    alpha : float
        The bound of (C1).

    Returns
    -------
    numpy.ndarray
        Their flat cell indices, increasing.

    Examples
    --------
    With alpha = 0.3 a type is rare below 1/0.3 = 3.33 records: the cells
    holding 1 and 2 records.

    >>> from pramkit.risk.space import key_space
    >>> space = key_space(np.array([[[30.0, 1.0], [40.0, 20.0]], [[25.0, 30.0], [2.0, 50.0]]]))
    >>> rare_types(space, 0.3).tolist(), space.counts[[1, 6]].tolist()
    ([1, 6], [1.0, 2.0])
    """
    occ = space.occurring
    return occ[space.counts[occ] * alpha < 1.0]


def problem_count(space: KeySpace, combinations: Sequence[tuple[int, ...]], alpha: float) -> int:
    """Number of ``(pi, k0)`` with ``0 < U_pi(k0) < 1/alpha``: the combinations P = I leaves exposed.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    alpha : float
        The bound of (C1).

    Returns
    -------
    int
        The number of such pairs over all combinations.

    Examples
    --------
    The two rare cells are exposed on all three keys, but every two-key
    margin holds at least 22 records:

    >>> from pramkit.risk.space import key_space
    >>> space = key_space(np.array([[[30.0, 1.0], [40.0, 20.0]], [[25.0, 30.0], [2.0, 50.0]]]))
    >>> problem_count(space, [(0, 1, 2)], 0.3), problem_count(space, [(0, 1), (0, 2), (1, 2)], 0.3)
    (2, 0)
    """
    return sum(int(((u > 0) & (u * alpha < 1.0)).sum()) for u in (space.margin(c)[1] for c in combinations))


def c1_triples(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], *, alpha: float, gamma: float, reduce: bool
) -> list[tuple[int, int, int]]:
    """The (C1) inequalities ``(m, combination index, k0)`` to impose.

    Without ``reduce``: every occurring m, every combination, every k0.  With it:
    rare m only, and for ``gamma`` the combinations and types section 4 leaves.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    alpha : float
        The bound of (C1).
    gamma : float
        The diagonal bound of the occurring types (floored at :data:`GAMMA_FLOOR`).
    reduce : bool
        Apply section 4's reductions.

    Returns
    -------
    list of (int, int, int)
        ``(m, combination index, k0)``, input of :func:`pramkit.recognition.design.c1_rows`.

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 2, inequalities (2) and (5);
    section 4 (the gamma bound).

    Examples
    --------
    Of the 8 occurring types times 8 values of the one combination, the
    reductions keep two inequalities: each rare type in its own cell.

    >>> from pramkit.risk.space import key_space
    >>> space = key_space(np.array([[[30.0, 1.0], [40.0, 20.0]], [[25.0, 30.0], [2.0, 50.0]]]))
    >>> len(c1_triples(space, [(0, 1, 2)], alpha=0.3, gamma=0.9, reduce=False))
    64
    >>> c1_triples(space, [(0, 1, 2)], alpha=0.3, gamma=0.9, reduce=True)
    [(1, 0, 1), (6, 0, 6)]
    """
    ms = rare_types(space, alpha) if reduce else space.occurring
    triples = []
    for ci, combo in enumerate(combinations):
        codes, u_pi = space.margin(combo)
        if not reduce:
            triples += [(int(m), ci, k0) for m in ms for k0 in range(u_pi.size)]
            continue
        g = max(gamma, GAMMA_FLOOR)
        kept = np.flatnonzero(u_pi * g * alpha < 1.0)
        for k0 in kept:
            u = u_pi[k0]
            every_m = u == 0 or (1.0 - g) / (g * u) >= alpha
            for m in ms:
                if every_m or codes[m] == k0:
                    triples.append((int(m), ci, int(k0)))
    return triples


def min_occurring_diagonal(space: KeySpace, transitions: np.ndarray | sp.spmatrix) -> float:
    """The smallest keep probability ``P[m, m]`` over the occurring types m.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    transitions : array or sparse matrix, shape (K, K)
        P.

    Returns
    -------
    float
        ``min_m P[m, m]`` over the cells with ``U_0(m) > 0``.

    Examples
    --------
    Cell 1 keeps only half its records but is empty; among the occurring
    cells the smallest keep probability is 0.9:

    >>> from pramkit.risk.space import key_space
    >>> space = key_space([[5.0, 0.0], [3.0, 2.0]])
    >>> min_occurring_diagonal(space, np.diag([0.9, 0.5, 1.0, 1.0]))
    0.9
    """
    diag = transitions.diagonal() if sp.issparse(transitions) else np.diagonal(transitions)
    return float(diag[space.occurring].min())


def with_gamma_restarts(
    space: KeySpace, *, gamma: float, solve: Callable[[float], Solve]
) -> tuple[Solve, float, int]:
    """Solve with the reductions for ``gamma``; while an occurring type keeps its value with
    probability below (or, where gamma is imposed, at) gamma, restart with
    ``gamma' = min(achieved, 1 - 2 (1 - gamma))`` (section 4: "start the optimization again
    with a smaller gamma").

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    gamma : float
        The first diagonal bound.
    solve : callable
        ``solve(gamma) -> Solve``: one solve with the reductions for gamma.

    Returns
    -------
    (Solve, float, int)
        The last solve, the gamma it used, and the number of restarts.

    Examples
    --------
    A solver that always keeps 0.8 on the diagonal: gamma 0.9 is undercut,
    0.8 is met exactly (at the bound, so active), 0.6 is not active.

    >>> from pramkit.risk.space import Solve, key_space
    >>> space = key_space([[12.0, 1.0], [0.0, 0.0]])
    >>> p = np.eye(4)
    >>> p[0, :2] = [0.8, 0.2]
    >>> tried = []
    >>> def solve(gamma):
    ...     tried.append(round(gamma, 12))
    ...     return Solve(transitions=p, solver="fixed", status="", success=True, iterations=0,
    ...                  variables=1, constraints=1, gap=None)
    >>> solved, gamma, restarts = with_gamma_restarts(space, gamma=0.9, solve=solve)
    >>> tried, round(gamma, 12), restarts
    ([0.9, 0.8, 0.6], 0.6, 2)
    """
    restarts = 0
    while True:
        solved = solve(gamma)
        if gamma <= GAMMA_FLOOR or min_occurring_diagonal(space, solved.transitions) >= gamma + ACTIVE_TOL:
            return solved, gamma, restarts
        achieved = min_occurring_diagonal(space, solved.transitions)
        lower = max(min(achieved, 1.0 - 2.0 * (1.0 - gamma)), GAMMA_FLOOR)
        if lower >= gamma:  # gamma 1 met by the identity (nothing needs to move): no smaller gamma to try
            return solved, gamma, restarts
        gamma = lower
        restarts += 1


# -- the restricted support ------------------------------------------------------------------


def problem_combinations(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], *, alpha: float, gamma: float
) -> list[tuple[int, int, float]]:
    """``(combination index, k0, U_pi(k0))`` with ``1 <= U_pi(k0) < 1/(gamma alpha)`` whose
    margin cell holds a rare type: the constraints of the restricted problem.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    alpha : float
        The bound of (C1).
    gamma : float
        The diagonal bound (floored at :data:`GAMMA_FLOOR`).

    Returns
    -------
    list of (int, int, float)
        ``(combination index, k0, U_pi(k0))``, in order of combination and k0.

    Examples
    --------
    >>> from pramkit.risk.space import key_space
    >>> space = key_space(np.array([[[30.0, 1.0], [40.0, 20.0]], [[25.0, 30.0], [2.0, 50.0]]]))
    >>> problem_combinations(space, [(0, 1, 2)], alpha=0.3, gamma=0.9)
    [(0, 1, 1.0), (0, 6, 2.0)]
    """
    rare = rare_types(space, alpha)
    out = []
    for ci, combo in enumerate(combinations):
        codes, u_pi = space.margin(combo)
        with_rare = np.zeros(u_pi.size, dtype=bool)
        with_rare[codes[rare]] = True
        for k0 in np.flatnonzero(with_rare & (u_pi * max(gamma, GAMMA_FLOOR) * alpha < 1.0)):
            out.append((ci, int(k0), float(u_pi[k0])))
    return out


def cover_targets(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], problems: Sequence[tuple[int, int, float]]
) -> np.ndarray:
    """Few cells that together cover every problem ``(pi, k0)`` (a cell t covers it when ``t_pi = k0``).

    Greedily: start from the rarest uncovered problem, merge every other uncovered
    problem that agrees on the keys already fixed, set the free keys to their least
    frequent category (:meth:`pramkit.counts.CountTable.margin`).

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    problems : sequence of (int, int, float)
        ``(combination index, k0, U_pi(k0))`` (:func:`problem_combinations`).

    Returns
    -------
    numpy.ndarray
        The target cells (flat indices into X), increasing.

    Examples
    --------
    >>> from pramkit.risk.space import key_space
    >>> space = key_space(np.array([[[30.0, 1.0], [40.0, 20.0]], [[25.0, 30.0], [2.0, 50.0]]]))
    >>> problems = problem_combinations(space, [(0, 1, 2)], alpha=0.3, gamma=0.9)
    >>> problems
    [(0, 1, 1.0), (0, 6, 2.0)]
    >>> cover_targets(space, [(0, 1, 2)], problems).tolist()
    [1, 6]
    """
    shape = space.table.shape
    fixed = [dict(zip(combinations[ci], (int(v) for v in np.unravel_index(k0, [shape[a] for a in combinations[ci]]))))
             for ci, k0, _ in problems]
    order = sorted(range(len(problems)), key=lambda i: problems[i][2])
    least = [int(np.argmin(space.table.margin(key))) for key in space.keys]
    uncovered = set(order)
    targets = []
    while uncovered:
        first = next(i for i in order if i in uncovered)
        cell = dict(fixed[first])
        for i in order:
            if i in uncovered and all(cell.get(a, v) == v for a, v in fixed[i].items()):
                cell.update(fixed[i])
        coords = [cell.get(a, least[a]) for a in range(len(shape))]
        targets.append(int(np.ravel_multi_index(coords, shape)))
        uncovered -= {i for i in uncovered if all(coords[a] == v for a, v in fixed[i].items())}
    return np.array(sorted(set(targets)), dtype=np.int64)


def membership(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], problems: Sequence[tuple[int, int, float]],
    cells: np.ndarray,
) -> sp.csr_matrix:
    """``a[x, c] = 1`` when cell ``cells[x]`` lies in problem c (``x_pi = k0``).

    Parameters
    ----------
    space, combinations, problems
        As for :func:`cover_targets`.
    cells : numpy.ndarray
        Flat indices of cells of X.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (len(cells), len(problems))

    Examples
    --------
    >>> from pramkit.risk.space import key_space
    >>> space = key_space(np.array([[[30.0, 1.0], [40.0, 20.0]], [[25.0, 30.0], [2.0, 50.0]]]))
    >>> membership(space, [(0, 1, 2)], [(0, 1, 1.0), (0, 6, 2.0)], np.array([1, 5, 6])).toarray().tolist()
    [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]
    """
    rows, cols = [], []
    by_combo: dict[int, list[tuple[int, int]]] = {}
    for c, (ci, k0, _) in enumerate(problems):
        by_combo.setdefault(ci, []).append((c, k0))
    for ci, items in by_combo.items():
        codes = space.table.margin_codes(combinations[ci])[0][cells]
        for c, k0 in items:
            hit = np.flatnonzero(codes == k0)
            rows.append(hit)
            cols.append(np.full(hit.size, c))
    if not rows:
        return sp.csr_matrix((cells.size, len(problems)))
    r, col = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(r.size), (r, col)), shape=(cells.size, len(problems)))


def group_objective(e: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """``sum_g W_g ((1 + |e_g|^2) / (1 - s_g) + s_g - 1)`` (= n^2 l2 of the restricted matrix)
    and its gradient; ``e`` has one row per group.

    Parameters
    ----------
    e : numpy.ndarray, shape (G, T)
        The probabilities of change of each group into each target, every
        row summing to less than 1.
    weights : numpy.ndarray, shape (G,)
        ``W_g``: the records of each group.

    Returns
    -------
    value : float
        The objective: ``n^2 l2`` of the restricted matrix, records.
    gradient : numpy.ndarray, shape (G, T)
        ``W_g (2 e_gt / d_g + (1 + |e_g|^2) / d_g^2 + 1)``, ``d_g = 1 - s_g``.

    Examples
    --------
    One group of 10 records moving with probability 1/2:
    ``10 ((1 + 1/4) / (1/2) - 1/2) = 20`` and ``10 (2 + 5 + 1) = 80``.

    >>> value, grad = group_objective(np.array([[0.5]]), np.array([10.0]))
    >>> value, grad.tolist()
    (20.0, [[80.0]])
    """
    s = e.sum(axis=1)
    d = 1.0 - s
    q = 1.0 + (e * e).sum(axis=1)
    value = float(weights @ (q / d + s - 1.0))
    grad = weights[:, None] * (2.0 * e / d[:, None] + (q / d**2 + 1.0)[:, None])
    return value, grad


def group_hessian(e: np.ndarray, weights: np.ndarray) -> sp.csr_matrix:
    """Block-diagonal Hessian of :func:`group_objective`: per group
    ``W (2/d I + 2/d^2 (e 1^T + 1 e^T) + 2 (1 + |e|^2)/d^3 1 1^T)``.

    Parameters
    ----------
    e : numpy.ndarray, shape (G, T)
        The point, as for :func:`group_objective`.
    weights : numpy.ndarray, shape (G,)
        ``W_g``.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (G T, G T)
        One T x T block per group, in the order of ``e.ravel()``.

    Examples
    --------
    At e = 1/2, W = 10: ``10 (4 + 8 + 20) = 320``, and the gradient of
    :func:`group_objective` moves by about the Hessian times the step:

    >>> group_hessian(np.array([[0.5]]), np.array([10.0])).toarray().tolist()
    [[320.0]]
    >>> step = (group_objective(np.array([[0.5 + 1e-6]]), np.array([10.0]))[1] - 80.0) / 1e-6
    >>> round(float(step[0, 0]))
    320
    """
    t = e.shape[1]
    ones = np.ones(t)
    blocks = []
    for eg, w in zip(e, weights):
        d = 1.0 - eg.sum()
        q = 1.0 + eg @ eg
        blocks.append(w * (2.0 / d * np.eye(t) + 2.0 / d**2 * (np.outer(eg, ones) + np.outer(ones, eg))
                           + 2.0 * q / d**3 * np.ones((t, t))))
    return sp.block_diag(blocks, format="csr")


def restricted_l2(space: KeySpace, transitions: sp.spmatrix) -> float:
    """l2 of a matrix whose moving rows go only into cells whose own rows are the identity
    (the restricted support), from the closed form, without inverting P.

    ``n^2 l2 = sum_f U_0(f) ((1 + |e_f|^2) / (1 - s_f) + s_f - 1)`` over the
    moving rows f (module docstring), the L2 loss of estimator (4) (section 3).

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    transitions : sparse matrix, shape (K, K)
        P with the restricted support.

    Returns
    -------
    float
        l2(P), proportion squared.

    Raises
    ------
    MatrixError
        If a cell that receives records moves records itself.

    Examples
    --------
    The closed form agrees with :func:`pramkit.utility.l2_loss`, which inverts P:

    >>> from pramkit.risk.space import key_space
    >>> from pramkit.matrix import PramMatrix
    >>> from pramkit.utility import l2_loss
    >>> space = key_space([[30.0, 1.0], [40.0, 20.0]])
    >>> solved, _, _ = solve_restricted(space, [(0, 1)], alpha=0.3, gamma=0.9)
    >>> math.isclose(restricted_l2(space, solved.transitions),
    ...              l2_loss(space.counts, PramMatrix(solved.transitions.toarray())))
    True
    """
    p = sp.csr_matrix(transitions)
    off = p - sp.diags(p.diagonal())
    moving = np.flatnonzero(off.getnnz(axis=1))
    if np.intersect1d(off[moving].indices, moving).size:
        raise MatrixError("restricted_l2 needs a matrix whose targets do not move themselves")
    e = off[moving]
    s = np.asarray(e.sum(axis=1)).ravel()
    q = 1.0 + np.asarray(e.multiply(e).sum(axis=1)).ravel()
    n = float(space.counts.sum())
    return float(space.counts[moving] @ (q / (1.0 - s) + s - 1.0)) / n**2


@dataclass(frozen=True)
class RestrictedBound:
    """The certificate of the restricted problem, in records (``n^2 l2`` units)
    (:func:`certified_lower_bound`).

    Attributes
    ----------
    objective : float
        ``f(x)`` of the point found, rounded up.
    lower_bound : float or None
        No feasible point of the restricted problem has a smaller ``f`` (rounded down;
        None when not certified).
    gap : float or None
        ``objective - lower_bound`` rounded up, at least 0 (None when not certified).
    certified : bool
        Whether the bound is proved (False when x has a row with ``s_g >= 1``).

    Examples
    --------
    A point outside the domain of f (a group that always moves) is not certified:

    >>> certified_lower_bound(np.array([[1.0]]), np.array([10.0]), sp.csr_matrix([[10.0]]), [3.0], 0.125, None)
    RestrictedBound(objective=inf, lower_bound=None, gap=None, certified=False)
    """

    objective: float
    lower_bound: float | None
    gap: float | None
    certified: bool


def certified_lower_bound(
    e: np.ndarray, weights: np.ndarray, a_c1: sp.spmatrix, margins: ArrayLike, alpha: float,
    multipliers: ArrayLike | None, *, max_change: float = MAX_CHANGE,
) -> RestrictedBound:
    """A proved lower bound on the restricted problem, in exact rational arithmetic.

    The problem (module docstring): minimise
    ``f(x) = sum_g W_g ((1 + |x_g|^2)/(1 - s_g) + s_g - 1)`` (``s_g = sum_t x_gt``)
    over ``x >= 0``, ``s_g <= max_change`` and the (C1) rows
    ``a_c1 x >= 1/alpha - U_c``.  f is convex where every ``s_g < 1``, so for
    such a point x, ``f(y) >= f(x) + grad f(x) . (y - x)`` for every feasible
    y; for multipliers ``lambda >= 0`` weak duality bounds the minimum of the
    right-hand side by its Lagrangian over the simplices of the rows, whose
    minimum is explicit (module docstring).  Every quantity is exact: the
    doubles x, W, the entries of ``a_c1`` (whole numbers), ``U_c`` and alpha
    are read as fractions, and the result is rounded outward.

    Parameters
    ----------
    e : array, shape (G, T)
        The point (one row of changes per group of sources).
    weights : array, shape (G,)
        ``W_g``: the records of each group.
    a_c1 : sparse matrix, shape (C, G T)
        The (C1) rows, ``den_c - U_c`` as a linear function of ``vec(e)``.
    margins : array, shape (C,)
        ``U_c = U_pi(k0)`` of each problem combination.
    alpha : float
        The bound of (C1): the rows are ``den_c >= 1/alpha``.
    multipliers : array, shape (C,), or None
        Any multipliers of the (C1) rows (negative or undefined ones are taken as 0); None: all 0.
    max_change : float
        The largest ``s_g`` of the problem.

    Returns
    -------
    RestrictedBound

    Examples
    --------
    One group of 10 records, one target, one row ``10 x >= 1/0.125 - 3``: the optimum is
    ``f(1/2) = 10 ((1 + 1/4)/(1/2) - 1/2) = 20``; with the optimal multiplier
    ``lambda = f'(1/2)/10 = 8`` the bound is exact, without multipliers it is
    ``f(1/2) - f'(1/2)/2 = -20``.

    >>> a = sp.csr_matrix([[10.0]])
    >>> b = certified_lower_bound(np.array([[0.5]]), np.array([10.0]), a, [3.0], 0.125, [8.0])
    >>> b.lower_bound, b.objective, b.gap, b.certified
    (20.0, 20.0, 0.0, True)
    >>> certified_lower_bound(np.array([[0.5]]), np.array([10.0]), a, [3.0], 0.125, None).lower_bound
    -20.0
    """
    x = [[Fraction(v) for v in row] for row in np.asarray(e, dtype=float).tolist()]
    w = [Fraction(v) for v in np.asarray(weights, dtype=float).tolist()]
    sums = [sum(row, Fraction(0)) for row in x]
    if any(sg >= 1 for sg in sums):           # outside the domain of f: no convexity bound
        return RestrictedBound(math.inf, None, None, False)
    objective = sum((wg * ((1 + sum(v * v for v in row)) / (1 - sg) + sg - 1) for wg, row, sg in zip(w, x, sums)),
                    Fraction(0))
    grad = [[wg * (2 * v / (1 - sg) + (1 + sum(u * u for u in row)) / (1 - sg) ** 2 + 1) for v in row]
            for wg, row, sg in zip(w, x, sums)]
    n_targets = len(x[0]) if x else 0
    given = [0.0] * a_c1.shape[0] if multipliers is None else np.asarray(multipliers, dtype=float).tolist()
    lam = [Fraction(v) if math.isfinite(v) and v > 0 else Fraction(0) for v in given]
    inv_alpha = 1 / Fraction(float(alpha))
    reduced = [row[:] for row in grad]                      # r = grad f(x) - A^T lambda
    coo = sp.coo_matrix(a_c1)
    for c, j, v in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()):
        if lam[c]:
            reduced[j // n_targets][j % n_targets] -= lam[c] * Fraction(v)
    cap = Fraction(float(max_change))
    bound = (objective - sum((g * v for grow, row in zip(grad, x) for g, v in zip(grow, row)), Fraction(0))
             + sum((lc * (inv_alpha - Fraction(float(u))) for lc, u in zip(lam, np.asarray(margins).tolist())),
                   Fraction(0))
             + sum((cap * min(Fraction(0), min(row)) for row in reduced if row), Fraction(0)))
    return RestrictedBound(float_above(objective), float_below(bound), float_above(max(objective - bound, Fraction(0))),
                           True)


def _restricted_once(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], *, alpha: float, gamma: float, max_iterations: int
) -> Solve:
    k = space.cells
    problems = problem_combinations(space, combinations, alpha=alpha, gamma=gamma)
    if not problems:
        return Solve(transitions=sp.identity(k, format="csr"), solver="none", status="no problem combination: P = I",
                     success=True, iterations=0, variables=0, constraints=0, gap=0.0, lower_bound=0.0,
                     certified=True)
    targets = cover_targets(space, combinations, problems)
    occ = space.occurring
    sources = np.setdiff1d(occ[space.counts[occ] * alpha >= 1.0], targets)
    if sources.size == 0:
        raise ParameterError(
            f"no type occurs at least 1/alpha = {1 / alpha:g} times, so the restricted design has nothing to "
            "move; raise alpha or use method='full' on a small key space"
        )
    a_src = membership(space, combinations, problems, sources)
    a_tgt = membership(space, combinations, problems, targets).toarray()      # T x C
    patterns, group = np.unique(a_src.toarray().astype(bool), axis=0, return_inverse=True)
    group = group.ravel()
    weights = np.bincount(group, weights=space.counts[sources])
    n_groups, n_targets, n_problems = patterns.shape[0], targets.size, len(problems)
    # den_c = U_c + sum_{g,t} W_g (a_tc - a_gc) e_gt >= 1 / (alpha (1 - SAFETY))
    coef = (weights[:, None, None] * (a_tgt[None, :, :] - patterns[:, None, :])).reshape(-1, n_problems).T
    a_c1 = sp.csr_matrix(coef)
    need = 1.0 / (alpha * (1.0 - SAFETY)) - np.array([u for _, _, u in problems])
    a_row = sp.kron(sp.eye(n_groups), np.ones((1, n_targets)), format="csr")
    nvar = n_groups * n_targets

    feasible = linprog(np.zeros(nvar), A_ub=sp.vstack([-a_c1, a_row]), b_ub=np.concatenate([-need, np.full(n_groups, MAX_CHANGE)]),
                       bounds=(0, None), method="highs")
    if feasible.status == 2:
        raise ParameterError(
            f"no matrix that moves only frequent types meets (C1) at alpha = {alpha:g} for these combinations; "
            "raise alpha, use fewer combinations, or method='full' on a small key space"
        )

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = group_objective(x.reshape(n_groups, n_targets), weights)
        return value, grad.ravel()

    res = minimize(fun, np.zeros(nvar), jac=True, hess=lambda x: group_hessian(x.reshape(n_groups, n_targets), weights),
                   method="trust-constr",
                   constraints=[LinearConstraint(a_c1, need, np.inf), LinearConstraint(a_row, 0.0, MAX_CHANGE)],
                   bounds=Bounds(0.0, 1.0), options={"maxiter": max_iterations, "gtol": 1e-12, "xtol": 1e-14})
    e = np.clip(res.x, 0.0, None).reshape(n_groups, n_targets)
    # the certificate: multipliers of (C1) from the Frank-Wolfe LP min grad f(e) . y, checked exactly
    _, grad = group_objective(e, weights)
    lin = linprog(grad.ravel(), A_ub=sp.vstack([-a_c1, a_row]), b_ub=np.concatenate([-need, np.full(n_groups, MAX_CHANGE)]),
                  bounds=(0, None), method="highs")
    multipliers = -np.asarray(lin.ineqlin.marginals)[:n_problems] if lin.status == 0 else None
    cert = certified_lower_bound(e, weights, a_c1, [u for _, _, u in problems], alpha, multipliers)
    rows_e = e[group]                                                          # sources x T
    s = rows_e.sum(axis=1)
    r, c = np.nonzero(rows_e > 0)
    diag_cells = np.arange(k)
    keep = np.ones(k)
    keep[sources] = 1.0 - s
    p = sp.csr_matrix((np.concatenate([keep, rows_e[r, c]]),
                       (np.concatenate([diag_cells, sources[r]]), np.concatenate([diag_cells, targets[c]]))),
                      shape=(k, k))
    return Solve(transitions=p, solver="trust-constr", status=str(res.message), success=bool(res.success),
                 iterations=int(res.nit), variables=nvar, constraints=n_problems, gap=cert.gap,
                 lower_bound=cert.lower_bound, certified=cert.certified)


def solve_restricted(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], *, alpha: float, gamma: float, max_iterations: int = 3000
) -> tuple[Solve, float | None, int]:
    """The restricted-support design with gamma restarts.

    The sources (frequent types) move into a few targets covering the problem
    combinations (module docstring); the convex problem is solved, certified
    by :func:`certified_lower_bound`, and restarted with a smaller gamma
    while a source keeps its value with probability below gamma
    (:func:`with_gamma_restarts`).

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    alpha : float
        The bound of (C1).
    gamma : float
        The first diagonal bound.
    max_iterations : int
        Iterations of the optimiser per solve.

    Returns
    -------
    (Solve, float, int)
        The design (sparse P and its certificate), the last gamma and the
        number of restarts.

    Raises
    ------
    ParameterError
        If no type is frequent (``U_0 >= 1/alpha``), or no matrix that moves
        only frequent types meets (C1).

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 4 (the closing suggestion and
    the gamma restarts).

    Examples
    --------
    Twelve records must lend 2.33 expected records to the unique one's cell
    (posterior ``1 / 3.33 = 0.3``): keeping 0.806 undercuts gamma = 0.9, so
    the design is solved again with gamma = 0.8.

    >>> from pramkit.risk.space import key_space
    >>> space = key_space([[12.0, 1.0], [0.0, 0.0]])
    >>> solved, gamma, restarts = solve_restricted(space, [(0, 1)], alpha=0.3, gamma=0.9)
    >>> solved.transitions.toarray()[0].round(4).tolist(), round(gamma, 12), restarts
    ([0.8056, 0.1944, 0.0, 0.0], 0.8, 1)
    >>> solved.certified, solved.gap < 1e-2
    (True, True)
    """
    return with_gamma_restarts(
        space, gamma=gamma,
        solve=lambda g: _restricted_once(space, combinations, alpha=alpha, gamma=g, max_iterations=max_iterations),
    )
