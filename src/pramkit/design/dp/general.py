"""Epsilon-DP PRAM over *all* row-stochastic matrices, with maximal I(X; Z).

Program (7) of Ayed, Battiston and Camerlenghi without the restriction to
form (8).  Kairouz, Oh and Viswanath (*Extremal mechanisms for local
differential privacy*, JMLR 17, 2016, Theorems 2 and 4): for a utility that
is a sum over output symbols of a sublinear function of the column -- mutual
information is one, ``I(X; Z) = sum_z mu(M[:, z])`` with
``mu(c) = sum_x p_x c_x log(c_x / sum_k p_k c_k)`` -- an optimal epsilon-DP
mechanism has at most S outputs whose columns are *staircase* columns
``theta_b (e^eps)^b`` for patterns ``b in {0, 1}^S``.  The design becomes the
linear program

    maximise  sum_b theta_b mu(s_b)   s.t.  sum_b theta_b s_b = 1 (one row per x),  theta >= 0,

with ``s_b = (e^{eps b_x})_x``: 2^S variables and S equalities, solved by
HiGHS (:func:`scipy.optimize.linprog`) with the objective scaled to a largest
coefficient of 1 and feasibility tolerances of 1e-10 (at HiGHS's default
tolerances a p with a category of mass 1e-11 stopped at a vertex 0.2 % below
the optimum).

**The certificate.**  Any y with ``y . s_b >= mu(s_b)`` for every pattern
bounds the LP, hence every epsilon-DP matrix: ``I(X; Z) <= sum(y)``
(every column of an epsilon-DP matrix is a non-negative combination of
staircase columns and mu is sublinear).  HiGHS's dual values satisfy the
constraints only to its tolerance, so they are repaired:
:func:`staircase_dual_bound` evaluates every constraint with a bound on its
rounding error (:func:`staircase_utilities`: ``mu(s_b) = t P_1 log(t / r) -
P_0 log r`` with ``r = P_0 + t P_1``, both logarithms by ``log1p`` so that
neither cancels; the LP's objective uses the same values) and raises y by the
smallest ``delta 1`` that satisfies every constraint whatever the rounding:
``delta = max_b v_b / sum_x s_b,x``, ``v_b`` the largest possible violation.
The information of the returned matrix is bounded from below by
:func:`pramkit.privacy.exact.information_bounds`; ``optimal`` is true only
when the repaired bound exceeds it by at most
:func:`pramkit.privacy.exact.certificate_tolerance`.  Exact for S up to
:data:`MAX_CATEGORIES`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment, linprog
from scipy.special import xlogy

from pramkit.design.dp.optimal import check_epsilon, solve_form8
from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.exact import certificate_tolerance, information_bounds, rounding_bound, sum_up
from pramkit.privacy.law import within_realised_budget
from pramkit.validate import probabilities

#: Largest S for which the 2^S-variable LP is set up.
MAX_CATEGORIES = 14
#: Primal and dual feasibility tolerances given to HiGHS (on the scaled LP).
LP_TOLERANCE = 1e-10
#: Simplex pivots allowed when polishing HiGHS's basis.
MAX_PIVOTS = 200


def staircase_patterns(s: int) -> np.ndarray:
    """All ``b in {0, 1}^S`` as rows of a (2^S, S) 0/1 array.

    Row i is the binary expansion of i, least significant bit first; pattern
    b gives the staircase column ``s_b = (e^{eps b_x})_x`` (Kairouz, Oh and
    Viswanath 2016, Theorem 2).

    Parameters
    ----------
    s : int
        The number of categories S.

    Returns
    -------
    numpy.ndarray, shape (2^S, S)
        The patterns, as floats.

    Examples
    --------
    >>> staircase_patterns(2).tolist()
    [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    >>> np.exp(np.log(2) * staircase_patterns(2))[1].tolist()    # s_b for b = (1, 0), e^eps = 2
    [2.0, 1.0]
    """
    return ((np.arange(2 ** s)[:, None] >> np.arange(s)[None, :]) & 1).astype(float)


def column_utility(p: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``mu(c) = sum_x p_x c_x log(c_x / (p . c))`` for each row c of ``columns``:
    the contribution of one output symbol with ``M[:, z] = c`` to I(X; Z), nats.

    mu is sublinear (positively homogeneous and convex), the property behind
    the staircase reduction; :func:`staircase_utilities` computes it without
    cancellation for the staircase columns.

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        Proportions of the categories.
    columns : numpy.ndarray, shape (m, S)
        One column of a matrix per row (non-negative).

    Returns
    -------
    numpy.ndarray, shape (m,)
        mu of each, nats.

    Examples
    --------
    Summed over the columns of a matrix, mu gives its I(X; Z); a constant
    column carries no information:

    >>> from pramkit.information import mutual_information
    >>> p, m = np.array([0.25, 0.75]), np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> math.isclose(column_utility(p, m.T).sum(), mutual_information(p, m))
    True
    >>> column_utility(p, np.array([[0.5, 0.5]])).tolist()
    [0.0]
    """
    r = columns @ p
    return (p[None, :] * xlogy(columns, columns / r[:, None])).sum(axis=1)


def staircase_utilities(p: ArrayLike, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The staircase patterns, ``mu(s_b)`` for each, and a bound on its rounding error.

    For a pattern b, with ``P_1 = sum_{b_x = 1} p_x``, ``P_0`` the rest,
    ``t = e^epsilon`` and ``r = P_0 + t P_1``,

        mu(s_b) = t P_1 log(t / r) - P_0 log r,
        log r = log1p((T - 1) + (t - 1) P_1),  log(t / r) = -log1p((T - 1) - (1 - 1/t) P_0)

    (``T = P_0 + P_1 = sum p``, 1 up to rounding): neither logarithm cancels,
    so mu is accurate relative to its two terms even for masses of 1e-12,
    where :func:`column_utility` loses every digit.  The error bound follows
    each operation (:func:`pramkit.privacy.exact.rounding_bound`).

    Parameters
    ----------
    p : array-like, shape (S,)
        The probabilities (as given: the bound is for these doubles).
    epsilon : float
        The budget.

    Returns
    -------
    patterns : numpy.ndarray, shape (2^S, S)
        :func:`staircase_patterns` of S.
    mu : numpy.ndarray, shape (2^S,)
        ``mu(s_b)`` of each pattern, nats.
    error : numpy.ndarray, shape (2^S,)
        A bound on the rounding error of each ``mu``.

    Examples
    --------
    >>> pats, mu, err = staircase_utilities(np.array([0.5, 0.5]), 1.0)
    >>> bool(np.allclose(mu, column_utility(np.array([0.5, 0.5]), np.exp(pats)), atol=1e-15)), bool(err.max() < 1e-13)
    (True, True)
    """
    pv = np.asarray(p, dtype=float)
    e = float(epsilon)
    s = pv.size
    pats = staircase_patterns(s)
    p1, p0 = pats @ pv, (1.0 - pats) @ pv
    d_p1, d_p0 = rounding_bound(p1, s), rounding_bound(p0, s)
    excess = math.fsum([*pv.tolist(), -1.0])                       # T - 1, correctly rounded
    t, grow, shrink = math.exp(e), math.expm1(e), -math.expm1(-e)  # t, t - 1, 1 - 1/t
    arg0 = excess + grow * p1
    d_arg0 = rounding_bound(abs(excess) + grow * p1) + grow * d_p1
    arg1 = excess - shrink * p0
    d_arg1 = rounding_bound(abs(excess) + shrink * p0) + shrink * d_p0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_r = np.log1p(arg0)
        log_t_r = -np.log1p(arg1)
        d_log_r = d_arg0 / (1.0 + arg0 - d_arg0) + rounding_bound(np.abs(log_r))
        d_log_t_r = d_arg1 / (1.0 + arg1 - d_arg1) + rounding_bound(np.abs(log_t_r))
    mu = t * p1 * log_t_r - p0 * log_r
    d_mu = (t * (p1 * d_log_t_r + np.abs(log_t_r) * d_p1) + p0 * d_log_r + np.abs(log_r) * d_p0
            + rounding_bound(t * p1 * np.abs(log_t_r) + p0 * np.abs(log_r)))
    return pats, mu, d_mu


def staircase_dual_bound(p: ArrayLike, epsilon: float, y: ArrayLike) -> tuple[float, float]:
    """An upper bound on the staircase LP (hence on I(X; Z) of every epsilon-DP
    matrix for p) from any dual vector y, and y's largest violation.

    Every constraint ``y . s_b >= mu(s_b)`` is evaluated with a bound on its
    rounding (:func:`staircase_utilities` for mu); if ``v_b`` bounds
    ``mu(s_b) - y . s_b`` from above, then ``y + delta 1`` with
    ``delta = max_b v_b / sum_x s_b,x`` is dual feasible, and its sum,
    rounded upward, is returned.

    Parameters
    ----------
    p : array-like, shape (S,)
        The probabilities (as given: the bound is for these doubles).
    epsilon : float
        The budget.
    y : array-like, shape (S,)
        Any dual vector (e.g. an LP solver's).

    Returns
    -------
    bound : float
        ``I(X; Z) <= bound`` for every epsilon-DP matrix, nats.
    violation : float
        ``max_b mu(s_b) - y . s_b`` as computed (positive: y was not dual feasible).

    Examples
    --------
    >>> p = np.array([0.5, 0.5])
    >>> bound, violation = staircase_dual_bound(p, 1.0, [0.0, 0.0])   # y = 0 violates; repaired
    >>> q = 1 / (1 + math.exp(-1.0))                                 # the optimum for S = 2
    >>> math.log(2) + q * math.log(q) + (1 - q) * math.log(1 - q) <= bound
    True
    """
    pv = np.asarray(p, dtype=float)
    yv = np.asarray(y, dtype=float)
    s = pv.size
    pats, mu, d_mu = staircase_utilities(pv, epsilon)
    t = math.exp(float(epsilon))
    ys = (1.0 - pats) @ yv + t * (pats @ yv)
    d_ys = rounding_bound((1.0 - pats) @ np.abs(yv) + t * (pats @ np.abs(yv)), s)
    raw = mu - ys
    worst = raw + d_mu + d_ys + rounding_bound(np.abs(mu) + np.abs(ys))
    # sum_x s_b,x = n_0 + t n_1, from below (t is e^epsilon to a few ulps)
    width = ((1.0 - pats).sum(axis=1) + t * pats.sum(axis=1)) * (1.0 - rounding_bound(1.0))
    shift = float(np.max(np.maximum(worst, 0.0) / width))
    if not math.isfinite(shift):          # a dual value so large it overflowed: no bound
        return math.inf, float(np.max(raw))
    return sum_up([*yv.tolist(), s * shift * (1.0 + float(rounding_bound(1.0)))]), float(raw.max())


def _polish(stairs: np.ndarray, util: np.ndarray,
            support: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Primal simplex on the staircase LP from the support HiGHS found.

    HiGHS stops when its reduced costs are within its tolerance, which for
    columns scaled by ``e^epsilon`` can leave a dual violation of 1e-9.  The
    support is completed to a basis (the constant column and the unit
    patterns first) and pivoted, entering the column with the largest
    relative reduced cost ``mu_b - y . s_b``, until none is positive beyond
    rounding.  Returns the basis (pattern indices), its weights theta
    (``B theta = 1``, clipped at 0) and the duals ``y`` (``B^T y = mu_B``;
    None if a basis could not be factorised)."""
    s = stairs.shape[1]
    ones = np.ones(s)
    basis: list[int] = []
    for j in [*support.tolist(), 0, *(1 << x for x in range(s)), *range(len(stairs))]:
        if len(basis) == s:
            break
        if j not in basis and np.linalg.matrix_rank(stairs[[*basis, j]]) == len(basis) + 1:
            basis.append(j)
    weights = np.abs(stairs)
    y = None
    for _ in range(MAX_PIVOTS):
        b_mat = stairs[basis].T
        try:
            y = np.linalg.solve(b_mat.T, util[basis])
            theta = np.linalg.solve(b_mat, ones)
        except np.linalg.LinAlgError:   # pragma: no cover - the basis is kept non-singular
            return np.array(basis), np.maximum(np.linalg.lstsq(b_mat, ones, rcond=None)[0], 0.0), None
        reduced = (util - stairs @ y) / np.maximum(np.abs(util) + weights @ np.abs(y), np.finfo(float).tiny)
        enter = int(np.argmax(reduced))
        if not reduced[enter] > 1e-14:
            break
        direction = np.linalg.solve(b_mat, stairs[enter])
        rising = direction > 1e-14 * np.abs(direction).max()
        if not np.any(rising):          # pragma: no cover - the LP is bounded
            break
        ratios = np.where(rising, np.maximum(theta, 0.0) / np.where(rising, direction, 1.0), np.inf)
        basis[int(np.argmin(ratios))] = enter
    return np.array(basis), np.maximum(theta, 0.0), y


def square_outputs(columns: np.ndarray) -> np.ndarray:
    """The used outputs of a design (S x k columns, k <= S) as an S x S matrix: each output released as
    the category that maximises the probability of releasing the true value (a relabelling, which
    changes neither I(X; Z) nor epsilon), the unused categories given columns of zeros.

    Examples
    --------
    >>> square_outputs(np.array([[0.2, 0.8], [0.9, 0.1], [0.5, 0.5]])).tolist()
    [[0.8, 0.2, 0.0], [0.1, 0.9, 0.0], [0.5, 0.5, 0.0]]
    """
    s = columns.shape[0]
    full = np.zeros((s, s))
    full[:, : columns.shape[1]] = columns
    rows, picked = linear_sum_assignment(full, maximize=True)
    design = np.empty((s, s))
    design[:, rows] = full[:, picked]
    return design


def dp_general(p: ArrayLike, epsilon: float, *, categories: Sequence[Label] | None = None) -> PramMatrix:
    """The epsilon-DP matrix (any row-stochastic form) with the most I(X; Z).

    Solves the staircase LP of Kairouz, Oh and Viswanath (module docstring).
    The used staircase columns are released as the categories that maximise
    the probability of releasing the true value (a relabelling of outputs,
    which changes neither I(X; Z) nor epsilon); unused categories get a column
    of zeros.  The entries that rounding put below the budget are raised
    (:func:`pramkit.privacy.law.within_realised_budget`), so the stored matrix's
    epsilon is at most ``epsilon`` exactly; so are the entries that the
    engine's integer units would round out of the budget.  The certificate holds the LP dual
    values, their largest violation, the repaired upper bound
    (:func:`staircase_dual_bound`), the certified gap, and how much form (8)
    (:func:`pramkit.design.dp.optimal.dp_optimal`) gives up against this
    optimum.

    Parameters
    ----------
    p : array-like, shape (S,)
        Proportions of the categories, ``2 <= S <= MAX_CATEGORIES``.
    epsilon : float
        Privacy budget per record, natural log units.
    categories : sequence of labels, optional
        Labels of the S categories (default ``0 .. S-1``).

    Returns
    -------
    PramMatrix
        The design, provenance ``dp_general`` with the objective
        (``mutual_information_nats``) and the certificate above.

    Raises
    ------
    ParameterError
        If p or epsilon is invalid, S is below 2 or above
        :data:`MAX_CATEGORIES`, or the number of categories differs from S.

    References
    ----------
    Ayed, Battiston and Camerlenghi, program (7) without form (8); Kairouz,
    Oh and Viswanath (2016), Theorems 2 and 4.

    Examples
    --------
    >>> m = dp_general([0.6, 0.3, 0.1], 1.0)
    >>> m.epsilon <= 1.0, m.provenance.certificate["optimal"]
    (True, True)
    >>> cert = m.provenance.certificate
    >>> cert["upper_bound_nats"] - cert["information_lower_nats"] <= cert["tolerance_nats"]
    True
    """
    start = time.perf_counter()
    pv = probabilities(p)
    e = check_epsilon(epsilon)
    s = pv.size
    if s < 2:
        raise ParameterError("a DP design needs at least two categories")
    if s > MAX_CATEGORIES:
        raise ParameterError(f"the general design is an LP over 2^S staircase patterns; S = {s} is above "
                             f"{MAX_CATEGORIES}: use the form (8) design (family 'diagonal') instead")
    cats = tuple(range(s)) if categories is None else tuple(categories)
    if len(cats) != s:
        raise ParameterError(f"{len(cats)} categories given for {s} probabilities")
    patterns, util, _ = staircase_utilities(pv, e)
    stairs = np.exp(e * patterns)                          # (2^S, S): the columns s_b
    scale = float(util.max()) if util.max() > 0 else 1.0
    res = linprog(-util / scale, A_eq=stairs.T, b_eq=np.ones(s), bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": LP_TOLERANCE, "dual_feasibility_tolerance": LP_TOLERANCE})
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise AssertionError(f"staircase LP failed: {res.message}")
    basis, theta, duals = _polish(stairs, util, np.flatnonzero(res.x * stairs.max(axis=1) > 1e-12))
    if duals is None:   # pragma: no cover - a singular basis: keep HiGHS's duals (the bound repairs them)
        duals = -np.asarray(res.eqlin.marginals) * scale
    kept = theta * stairs[basis].max(axis=1) > 1e-12      # the LP's support (as above): the rest is noise,
    support = basis[kept]                                  # outputs of ~1e-17 that 2^-62 units cannot realise
    used = theta[kept] * stairs[support].T                 # (S, k): M[x, column]
    used /= used.sum(axis=1, keepdims=True)
    design = square_outputs(used)
    matrix = within_realised_budget(design, e)
    mi, mi_error = information_bounds(pv, matrix)
    upper, violation = staircase_dual_bound(pv, e, duals)
    lower = mi - mi_error
    gap = max(upper - lower, 0.0)
    tolerance = certificate_tolerance(mi)
    form8 = solve_form8(pv, e).mutual_information_nats
    certificate: dict[str, Any] = {
        "optimal": gap <= tolerance,
        "lp_objective_nats": float(theta @ util[basis]),
        "dual_y": duals.tolist(),
        "dual_bound_nats": upper,
        "max_dual_violation": violation,
        "upper_bound_nats": upper,
        "information_lower_nats": lower,
        "certified_gap_nats": gap,
        "tolerance_nats": tolerance,
        "budget_adjustment": float((matrix - design).sum(axis=1).max()),
        "patterns": 2 ** s,
        "outputs_used": int(support.size),
        "form8_nats": form8,
        "form8_gap_nats": float(mi - form8),
        "reference": "Kairouz, Oh and Viswanath (2016), Theorem 4",
    }
    provenance = Provenance(
        method="dp_general",
        parameters={"epsilon": e, "p": pv.tolist()},
        objective=mi,
        objective_name="mutual_information_nats",
        certificate=certificate,
        seconds=time.perf_counter() - start,
    )
    return PramMatrix(matrix, cats, provenance)
