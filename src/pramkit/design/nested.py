"""A second PRAM step on a released file: the most information under a composed epsilon.

A scientific-use file (SUF) is released through ``M1`` (S x S, the law the engine
realised, :func:`pramkit.engine.realised_law`).  A public-use file (PUF) is made by
perturbing the *released* SUF again with ``M2``, so that a person's original value
reaches the PUF through ``M1 M2`` (gradual release of randomized response, Pan 2024).
This module designs ``M2``: the row-stochastic matrix that maximises ``I(X; Z)`` for
``Z`` released by ``M1 M2``, X of a public prior p, under ``epsilon(M1 M2) <= E``.

**The program.**  Column z of ``M2`` is a vector ``m_z >= 0`` and the rows of ``M2``
sum to one: ``sum_z m_z = 1``.  Column z of the composed matrix is ``c = M1 m_z``,
whose epsilon constraint ``c_x <= e^E c_x'`` is linear in ``m_z``, so every column lies
in the polyhedral cone

    C = {m >= 0 : (e^E M1[x'] - M1[x]) . m >= 0 for all x != x'}.

The objective is ``sum_z mu(M1 m_z)``, ``mu(c) = sum_x p_x c_x log(c_x / p . c)``
(:func:`pramkit.design.dp.general.column_utility`), positively homogeneous and convex in
``m_z`` (Kairouz, Oh and Viswanath 2016).  Each ``m_z`` is a non-negative combination of
the extreme rays ``r`` of C, and by sublinearity splitting a column into its rays never
loses information; so, exactly as the staircase reduction of
:mod:`pramkit.design.dp.general`, the design is the linear program

    maximise  sum_r theta_r mu(M1 r)   s.t.  sum_r theta_r r = 1,  theta >= 0,

over the vertices r of the polytope ``C intersected with {sum m = 1}``: its optimum is
the global optimum over every ``M2``.  At most S vertices carry weight (a basic
solution), so ``M2`` needs no more released categories than the SUF has.

**The vertices.**  In the released values' coordinates ``c = M1 m`` the epsilon
constraints alone form the cone ``K`` whose extreme rays are the staircase columns
``(e^{E b_x})_x``, b in ``{0, 1}^S`` neither all 0 nor all 1 (Kairouz, Oh and Viswanath
2016; the constant column is their mean).  When ``M1`` is invertible and maps back every
one of them into ``m >= 0`` (``K`` lies in the cone of ``M1``'s columns: so it does for the
designs whose epsilon is well above E), C is ``M1^-1 K`` and its rays are ``M1^-1 s_b``:
2^S - 2 vertices.  Otherwise ``K`` is cut by the constraints ``(M1^-1 c)_j >= 0`` it breaks,
by the double description method (Motzkin et al. 1953; Fukuda and Prodon 1996): add the
constraints one at a time, keep the rays on their right side and combine each pair on
either side that is adjacent (no third ray is active on every constraint both are active
on); a singular ``M1`` is described from the orthant ``m >= 0`` instead.  S is at most
:data:`MAX_CATEGORIES` when no cut is needed, :data:`MAX_ENUMERATED` otherwise (the
adjacency test is combinatorial, and the staircase rays are active on many constraints).

**The certificate.**  The LP's dual y bounds the program whenever ``y . r >= mu(M1 r)``
at every vertex; the dual is repaired (raised by the largest violation, the vertices
summing to one) with a bound on the rounding of mu, on the vertices of the polytope at a
ratio bound just above ``e^E`` (which holds every second step within E), and its sum is
an upper bound on ``I(X; Z)`` over every ``M2``.  It is a proof for the enumerated vertices;
``tests/test_nested.py`` checks the enumeration against an independent one by
combinations of active constraints.

**The guarantee.**  ``M2`` is designed against ``e^E`` lowered by a margin; the epsilon
of the composed law the engine realises (integer units of both steps, multiplied in
exact integers, :func:`~pramkit.privacy.law.composed_epsilon`) is then computed and rounded outward, and the
margin grows until it is within E.

References
----------
Pan, Y. (2024), Gradual release of randomized response (local differential privacy with
a second, public release).  Kairouz, Oh and Viswanath (2016), Extremal mechanisms for
local differential privacy, JMLR 17.  Fukuda, K. and Prodon, A. (1996), Double
description method revisited.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from pramkit.design.dp.general import LP_TOLERANCE, column_utility, square_outputs, staircase_patterns
from pramkit.errors import ParameterError
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.exact import (
    UNIT,
    certificate_tolerance,
    exp_lower,
    information_bounds,
    rounding_bound,
    sum_up,
)
from pramkit.privacy.law import composed_epsilon, law_units
from pramkit.validate import probabilities

#: Largest number of categories of a derived design (2^S - 2 vertices when M1 maps the staircase into m >= 0).
MAX_CATEGORIES = 14
#: Largest number of categories whose vertices the double description enumerates (slow beyond).
MAX_ENUMERATED = 9
#: Activity tolerance of the double description (rays summing to 1, constraints scaled to a largest entry 1).
ACTIVE_TOL = 1e-11
#: Margins below e^E tried in turn until the realised composed law is within E.
MARGINS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4)


def vertices(channel: ArrayLike, t: float) -> np.ndarray:
    """Every vertex of ``{m >= 0, sum m = 1, c = channel m with c_x <= t c_x' for all x, x'}``.

    For an invertible channel, in the released values' coordinates c: the staircase rays of the
    epsilon cone, cut by the constraints ``(channel^-1 c)_j >= 0`` that some of them break (the
    double description, :func:`describe`; none when the cone lies in the channel's), mapped back
    to m.  Otherwise the double description from the orthant (:func:`enumerated_vertices`).

    Parameters
    ----------
    channel : array-like, shape (S, S)
        The first step (rows: original categories, columns: released ones).
    t : float
        The bound on every ratio, ``> 1``.

    Returns
    -------
    numpy.ndarray, shape (V, S)
        The vertices, one per row, each summing to 1.

    Raises
    ------
    ParameterError
        The epsilon cone does not lie in the channel's and S is above :data:`MAX_ENUMERATED`.

    Examples
    --------
    With the identity as first step, the vertices are the staircase columns of Kairouz,
    Oh and Viswanath (2016), normalised, but for the constant one (the mean of the others):
    2^S - 2 of them; the double description from the orthant finds the same.

    >>> v = vertices(np.eye(3), 2.0)
    >>> len(v), sorted({round(float(x), 6) for x in v.ravel()})
    (6, [0.2, 0.25, 0.4, 0.5])
    >>> bool(np.allclose(v, enumerated_vertices(np.eye(3), 2.0)))
    True
    """
    a = np.asarray(channel, dtype=float)
    s = a.shape[0]
    invertible = a.shape[1] == s and np.linalg.cond(a) < 1e10
    if invertible:
        stairs = t ** staircase_patterns(s)[1:-1]
        back = np.linalg.solve(a, stairs.T).T
        if np.all(back >= -ACTIVE_TOL * np.abs(back).max(axis=1, keepdims=True)):
            return _normalised(back)                      # the epsilon cone lies in the channel's: no cut
    if s > MAX_ENUMERATED:
        raise ParameterError(f"the epsilon cone does not lie in the first step's, so the derived design enumerates "
                             f"the vertices of its polytope, which it does up to {MAX_ENUMERATED} categories; this "
                             f"variable has {s} (derive at a larger --epsilon, or from a release of larger epsilon)")
    if not invertible:
        return enumerated_vertices(a, t)
    rays = describe(stairs, _ratio_rows(np.eye(s), t), np.linalg.inv(a))
    return _normalised(np.linalg.solve(a, rays.T).T)


def enumerated_vertices(channel: ArrayLike, t: float) -> np.ndarray:
    """The vertices of :func:`vertices` by the double description from the orthant ``m >= 0``,
    cut by each constraint ``(t channel[x'] - channel[x]) . m >= 0`` (:func:`describe`).

    Parameters
    ----------
    channel : array-like, shape (S, T)
        The first step.
    t : float
        The bound on every ratio, ``>= 1``.

    Returns
    -------
    numpy.ndarray, shape (V, T)
        The vertices, one per row, each summing to 1.

    Examples
    --------
    A first step that moves nothing into the last category: a vertex there carries no information.

    >>> v = enumerated_vertices([[0.8, 0.2, 0.0], [0.2, 0.8, 0.0]], 2.0)
    >>> len(v), bool(np.allclose(v.sum(axis=1), 1))
    (3, True)
    """
    a = np.asarray(channel, dtype=float)
    k = a.shape[1]
    return _normalised(describe(np.eye(k), np.eye(k), _ratio_rows(a, t)))


def describe(rays: np.ndarray, seen: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """The extreme rays of a pointed cone cut by half-spaces: the double description method.

    ``rays`` are the extreme rays of the cone ``{x : seen x >= 0}``; each row g of ``cuts`` adds
    ``g . x >= 0`` in turn (a row with no ray on its wrong side changes nothing).  The rays on the
    right side stay; each pair on either side that is adjacent (they share ``d - 2`` active
    constraints and no third ray is active on all of them) gives the ray where their segment
    meets ``g . x = 0``.

    Parameters
    ----------
    rays : numpy.ndarray, shape (R, d)
        The cone's extreme rays.
    seen : numpy.ndarray, shape (C, d)
        The cone's constraints.
    cuts : numpy.ndarray, shape (N, d)
        The half-spaces to add.

    Returns
    -------
    numpy.ndarray, shape (R', d)
        The extreme rays of the cut cone, each summing to 1 (non-negative cones only).

    Examples
    --------
    The orthant of the plane cut by ``x <= y``: the rays (0, 1) and (1/2, 1/2).

    >>> describe(np.eye(2), np.eye(2), np.array([[-1.0, 1.0]])).tolist()
    [[0.0, 1.0], [0.5, 0.5]]
    """
    d = rays.shape[1]
    rays = rays / rays.sum(axis=1, keepdims=True)
    for g in cuts / np.abs(cuts).max(axis=1, keepdims=True):
        value = rays @ g
        pos, neg = value > ACTIVE_TOL, value < -ACTIVE_TOL
        if not neg.any():
            continue
        active = np.abs(rays @ seen.T) <= ACTIVE_TOL * np.abs(seen).max(axis=1)
        i, j = np.nonzero(pos[:, None] & neg[None, :])
        common = active[i] & active[j]
        wide = common.sum(axis=1) >= d - 2
        i, j, common = i[wide], j[wide], common[wide]
        inside = common.astype(np.float32) @ active.T.astype(np.float32)   # constraints of common a ray has
        holders = (inside >= common.sum(axis=1, keepdims=True) - 0.5).sum(axis=1)
        i, j = i[holders == 2], j[holders == 2]                           # only the pair itself holds them all
        fresh = value[i, None] * rays[j] - value[j, None] * rays[i]
        rays = np.vstack([rays[~neg], fresh / fresh.sum(axis=1, keepdims=True)])
        seen = np.vstack([seen, g])
    return rays


def _ratio_rows(channel: np.ndarray, t: float) -> np.ndarray:
    """The rows ``t channel[x'] - channel[x]`` (x != x') with a negative entry: the others hold on ``m >= 0``."""
    s = channel.shape[0]
    rows = np.array([t * channel[y] - channel[x] for x in range(s) for y in range(s) if x != y])
    return rows[(rows < 0).any(axis=1)]


def _normalised(rays: np.ndarray) -> np.ndarray:
    """Rays clipped at 0 (rounding), scaled to sum 1, without repeats."""
    rays = np.maximum(rays, 0.0)
    return np.unique(np.round(rays / rays.sum(axis=1, keepdims=True), 14), axis=0)


def _utility_error(p: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """A bound on the rounding error of :func:`column_utility` for each composed column."""
    r = columns @ p
    with np.errstate(divide="ignore"):
        logs = np.where(columns > 0, np.abs(np.log(np.where(columns > 0, columns, 1.0))), 0.0)
    size = (p[None, :] * columns * (logs + np.abs(np.log(r))[:, None] + 1.0)).sum(axis=1)
    return np.asarray(rounding_bound(size, p.size))


def derive_matrix(first: PramMatrix, p: ArrayLike, epsilon: float) -> PramMatrix:
    """The second step ``M2`` on the release of ``first`` with the most ``I(X; Z)`` under
    ``epsilon(first M2) <= epsilon``, a global optimum (module docstring).

    Parameters
    ----------
    first : PramMatrix
        The first step (its realised law is the channel designed against), ``2 <= S <=``
        :data:`MAX_CATEGORIES` categories.
    p : array-like, shape (S,)
        Public proportions of the original categories (a prior, or the first release's DP
        counts post-processed).
    epsilon : float
        The bound on the composed epsilon, > 0.

    Returns
    -------
    PramMatrix
        ``M2`` on ``first``'s categories, provenance ``nested_dp`` with the information of the
        composed release (``mutual_information_nats``), its exact composed epsilon and the
        certificate: the repaired dual bound, the certified gap and the number of vertices.

    Raises
    ------
    ParameterError
        p or epsilon invalid, S outside ``[2, MAX_CATEGORIES]``, or ``first`` drawn from a
        closed form (:func:`~pramkit.privacy.law.law_units`).

    Examples
    --------
    >>> first = PramMatrix.form8([0.9, 0.9, 0.9], categories=["a", "b", "c"])   # epsilon log 18
    >>> second = derive_matrix(first, [0.5, 0.3, 0.2], 1.0)
    >>> composed_epsilon(first, second) <= 1.0, second.provenance.certificate["optimal"]
    (True, True)
    >>> second.categories
    ('a', 'b', 'c')
    """
    start = time.perf_counter()
    pv = probabilities(p)
    e = float(epsilon)
    if not (math.isfinite(e) and e > 0):
        raise ParameterError(f"the derived release's epsilon must be a positive finite number, got {epsilon!r}")
    s = first.size
    if not 2 <= s <= MAX_CATEGORIES:
        raise ParameterError(f"a derived design solves an LP over the vertices of a polytope that grows "
                             f"exponentially in the categories: S = {s} is outside 2 to {MAX_CATEGORIES}")
    if pv.size != s:
        raise ParameterError(f"{pv.size} proportions given for {s} categories")
    channel = law_units(first).astype(float) / 2.0 ** 62
    for margin in MARGINS:
        found = _solve(channel, pv, exp_lower(e) * (1.0 - margin))
        second = PramMatrix(found[0], first.categories)
        composed = composed_epsilon(first, second)
        if composed <= e:
            break
    else:  # pragma: no cover - the largest margin dwarfs every rounding of the units
        raise AssertionError(f"no margin brought the composed epsilon {composed} within {e}")
    design, _, _, duals = found
    value, error = information_bounds(pv, channel @ design)
    # the bound is taken over the polytope at a ratio bound not below e^epsilon (a larger one: every
    # second step within epsilon is feasible there), the LP's duals repaired on its vertices
    verts = vertices(channel, math.nextafter(math.exp(e) * (1.0 + 8.0 * UNIT), math.inf))
    columns = (channel @ verts.T).T
    util = column_utility(pv, columns)
    violation = util - verts @ duals + _utility_error(pv, columns)
    shift = max(float(violation.max()), 0.0)
    upper = sum_up([*duals.tolist(), s * shift * (1.0 + float(rounding_bound(1.0)))])
    lower = value - error
    gap = max(upper - lower, 0.0)
    certificate: dict[str, Any] = {
        "optimal": gap <= certificate_tolerance(value),
        "upper_bound_nats": upper,
        "information_lower_nats": lower,
        "certified_gap_nats": gap,
        "tolerance_nats": certificate_tolerance(value),
        "dual_y": duals.tolist(),
        "max_dual_violation": float((util - verts @ duals).max()),
        "vertices": len(verts),
        "margin": margin,
        "reference": "docs/privacy.md, Nested releases",
    }
    provenance = Provenance(method="nested_dp", parameters={"epsilon": e, "p": pv.tolist(),
                                                             "composed_epsilon": composed},
                            objective=value, objective_name="mutual_information_nats", certificate=certificate,
                            seconds=time.perf_counter() - start)
    return second.with_provenance(provenance)


def _solve(channel: np.ndarray, p: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The LP over the vertices at ratio bound t: ``M2`` (columns relabelled to keep the most
    values), each vertex's utility, the vertices and the LP's dual values."""
    k = channel.shape[1]
    verts = vertices(channel, t)
    util = column_utility(p, (channel @ verts.T).T)
    scale = float(util.max()) if util.max() > 0 else 1.0
    res = linprog(-util / scale, A_eq=verts.T, b_eq=np.ones(k), bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": LP_TOLERANCE, "dual_feasibility_tolerance": LP_TOLERANCE})
    if res.status != 0:  # pragma: no cover - the identity's columns scaled down are feasible: never empty
        raise AssertionError(f"the derived design's LP failed: {res.message}")
    duals = -np.asarray(res.eqlin.marginals) * scale
    used = np.flatnonzero(res.x > 1e-12)
    columns = (res.x[used, None] * verts[used]).T                  # (T, used): M2's columns
    columns /= columns.sum(axis=1, keepdims=True)
    return square_outputs(columns), util, verts, duals

