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
HiGHS (:func:`scipy.optimize.linprog`).  Its dual values are a certificate:
``mu(s_b) <= y . s_b`` for every pattern and ``sum(y)`` equals the optimum.
Every column of the result has entries in ``{theta, theta e^eps}``, so its
epsilon is exact by construction.  Exact for S up to :data:`MAX_CATEGORIES`.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linear_sum_assignment, linprog
from scipy.special import xlogy

from pramkit.design.dp_optimal import check_epsilon, solve_form8
from pramkit.errors import PramkitError
from pramkit.information import check_probabilities, mutual_information
from pramkit.matrix import Label, PramMatrix, Provenance

#: Largest S for which the 2^S-variable LP is set up.
MAX_CATEGORIES = 14


def staircase_patterns(s: int) -> np.ndarray:
    """All ``b in {0, 1}^S`` as rows of a (2^S, S) 0/1 array."""
    return ((np.arange(2 ** s)[:, None] >> np.arange(s)[None, :]) & 1).astype(float)


def column_utility(p: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``mu(c) = sum_x p_x c_x log(c_x / (p . c))`` for each row c of ``columns``:
    the contribution of one output symbol with ``M[:, z] = c`` to I(X; Z), nats."""
    r = columns @ p
    return (p[None, :] * xlogy(columns, columns / r[:, None])).sum(axis=1)


def dp_general(p: ArrayLike, epsilon: float, *, categories: Sequence[Label] | None = None) -> PramMatrix:
    """The epsilon-DP matrix (any row-stochastic form) with the most I(X; Z).

    Solves the staircase LP of Kairouz, Oh and Viswanath (module docstring).
    The used staircase columns are released as the categories that maximise
    the probability of releasing the true value (a relabelling of outputs,
    which changes neither I(X; Z) nor epsilon); unused categories get a column
    of zeros.  The certificate holds the LP dual values, the largest dual
    violation, and how much form (8) (:func:`pramkit.design.dp_optimal.dp_optimal`)
    gives up against this optimum.
    """
    start = time.perf_counter()
    pv = check_probabilities(p)
    e = check_epsilon(epsilon)
    s = pv.size
    if s < 2:
        raise PramkitError("a DP design needs at least two categories")
    if s > MAX_CATEGORIES:
        raise PramkitError(f"the general design is an LP over 2^S staircase patterns; S = {s} is above "
                           f"{MAX_CATEGORIES}: use the form (8) design (family 'diagonal') instead")
    cats = tuple(range(s)) if categories is None else tuple(categories)
    if len(cats) != s:
        raise PramkitError(f"{len(cats)} categories given for {s} probabilities")
    stairs = np.exp(e * staircase_patterns(s))            # (2^S, S): the columns s_b
    util = column_utility(pv, stairs)
    res = linprog(-util, A_eq=stairs.T, b_eq=np.ones(s), bounds=(0, None), method="highs")
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise AssertionError(f"staircase LP failed: {res.message}")
    support = np.flatnonzero(res.x > 1e-12)
    cols = stairs[support]
    # refine theta on the support so that rows sum to 1 to rounding
    theta, *_ = np.linalg.lstsq(cols.T, np.ones(s), rcond=None)
    theta = np.maximum(theta, 0.0)
    used = theta * cols.T                                  # (S, k): M[x, column]
    used /= used.sum(axis=1, keepdims=True)
    full = np.zeros((s, s))
    full[:, : used.shape[1]] = used
    rows, picked = linear_sum_assignment(full, maximize=True)
    matrix = np.empty((s, s))
    matrix[:, rows] = full[:, picked]
    mi = mutual_information(pv, matrix)
    duals = -np.asarray(res.eqlin.marginals)
    form8 = solve_form8(pv, e).mutual_information_nats
    certificate: dict[str, Any] = {
        "optimal": True,
        "lp_objective_nats": float(-res.fun),
        "dual_y": duals.tolist(),
        "dual_bound_nats": float(duals.sum()),
        "max_dual_violation": float(np.max(util - stairs @ duals)),
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
