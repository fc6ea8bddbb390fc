"""PRAM against spontaneous recognition with minimal L2 loss (Cator, Hensbergen and Rozenholc).

The key variables ``xi_1..xi_d`` cross-classify the records into the cells
of ``X = X_1 x ... x X_d`` (``K`` cells, flat C-order index); ``U_0(l)`` is
the number of records of type ``l``.  One transition matrix ``P`` on ``X``
perturbs the key combination of each record jointly.

Condition (C1), section 2, equation (1): for every type ``m`` that occurs,
every combination ``pi`` of key variables (three of them, or a given list)
and every value ``k0`` of ``xi_pi``, the posterior that a record released
with ``x_pi = k0`` is a given person of type ``m`` is at most ``alpha``:

    sum_{k: k_pi = k0} P[m, k]  /  sum_l U_0(l) sum_{k: k_pi = k0} P[l, k]  <=  alpha.

Multiplied out, (C1) is linear in ``P`` for fixed data:
``sum_{k_pi = k0} P[m, k] - alpha sum_l U_0(l) sum_{k_pi = k0} P[l, k] <= 0``
(a zero denominator forces a zero numerator; ``0/0`` counts as 0).

The loss is the L2 loss of the unbiased estimator (4), section 3:
``l2(P) = (1/n^2) sum_m U_0(m) h(m) - 1/n`` with ``h = P w`` and
``w(l) = sum_k (P^{-1}[l, k])^2`` (:func:`pramkit.utility.l2_loss`).  Its
gradient, from ``dQ = -Q dP Q`` (``Q = P^{-1}``) and ``v = P^T U_0``:

    d l2 / d P = (1/n^2) (U_0 w^T - 2 Q^T diag(v) Q Q^T).

:func:`recognition_design` minimises ``l2(P)`` under (C1), ``P``
row-stochastic, starting from the identity (section 4):

* ``method="full"``: every off-diagonal entry of the ``K x K`` matrix is a
  variable (non-convex; SciPy ``trust-constr`` with the analytic gradient and
  sparse linear constraints), with section 4's diagonal bound
  ``P[k, k] >= gamma`` (see :func:`solve_full`); with
  ``reduce=True`` the constraints are cut by the exact reductions of section 4
  (:mod:`pramkit.recognition.reductions`), otherwise every occurring
  ``m`` and every ``(pi, k0)`` is a constraint.  Small ``X`` only.
* ``method="restricted"``: section 4's restricted support (changes only from
  frequent types into types that cover the problem combinations), a convex
  problem with a certified gap; scales to large ``X``.

Whatever the method, (C1) is verified on the result from scratch
(:func:`pramkit.risk.posterior.worst_posterior`), and the baseline "identity plus uniform noise"
(:func:`uniform_noise_baseline`) gives the loss of the crudest matrix with the
same protection.

References
----------
Cator, Hensbergen and Rozenholc, *Statistical Disclosure Control using PRAM*:
section 2 (condition (C1), equations (1) and (2)), section 3 (estimator (4),
the L2 loss), section 4 (the 48-cell example, reductions for large data).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import Bounds, LinearConstraint, minimize
from scipy.sparse.linalg import LinearOperator

from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label
from pramkit.manifest import PerturbedVariable
from pramkit.matrix import PramMatrix, Provenance
from pramkit.recognition import reductions as red
from pramkit.risk.posterior import posterior_bound, worst_posterior
from pramkit.risk.space import (
    SAFETY,
    KeySpace,
    Solve,
    SolverRun,
    as_csr,
    key_space,
)
from pramkit.utility import l2_loss
from pramkit.validate import probability

#: Largest number of cells for which the design is also returned as a dense PramMatrix.
MAX_MATRIX_CELLS = 4096
#: Largest matrix whose loss is computed by :func:`pramkit.utility.l2_loss` (an SVD and an
#: inverse); larger (restricted-support) designs use the closed form of
#: :func:`pramkit.recognition.reductions.restricted_l2`, tested equal to it.
MAX_DENSE_LOSS_CELLS = 512
#: Largest key space the ``full`` method accepts (K^2 variables).
MAX_FULL_CELLS = 128

Method = Literal["restricted", "full"]


def combinations_of(keys: Sequence[str], combinations: int | Sequence[Sequence[str | int]]) -> tuple[tuple[int, ...], ...]:
    """The set Pi as tuples of key positions: every ``r``-subset for an integer ``r``
    (section 1 takes r = 3), or the given list of key names (or positions).

    Parameters
    ----------
    keys : sequence of str
        The key variables.
    combinations : int or sequence of sequences of str or int
        r, or the combinations themselves.

    Returns
    -------
    tuple of tuples of int
        Each combination as sorted key positions, duplicates dropped, in the
        order given.

    Raises
    ------
    ParameterError
        If r is not in ``1..len(keys)``, a name is not a key, a combination
        repeats a key or is empty, or no combination is given.

    Examples
    --------
    >>> combinations_of(["sex", "region", "age"], 2)
    ((0, 1), (0, 2), (1, 2))
    >>> combinations_of(["sex", "region", "age"], [["age", "sex"], [1]])
    ((0, 2), (1,))
    >>> combinations_of(["sex", "region", "age"], [["sex", "income"]])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: combination ['sex', 'income']: 'income' is not one of the keys ['sex', 'region', 'age']
    """
    d = len(keys)
    if isinstance(combinations, bool):
        raise ParameterError(f"combinations must be a number of keys or a list of combinations, got {combinations!r}")
    if isinstance(combinations, (int, np.integer)):
        r = int(combinations)
        if not 1 <= r <= d:
            raise ParameterError(f"combinations = {r}: choose between 1 and the number of keys ({d})")
        return tuple(itertools.combinations(range(d), r))
    out = []
    for combo in combinations:
        idx = []
        for c in combo:
            if isinstance(c, (int, np.integer)) and not isinstance(c, bool) and 0 <= int(c) < d:
                idx.append(int(c))
            elif isinstance(c, str) and c in keys:
                idx.append(list(keys).index(c))
            else:
                raise ParameterError(f"combination {list(combo)}: {c!r} is not one of the keys {list(keys)}")
        if not idx or len(set(idx)) != len(idx):
            raise ParameterError(f"combination {list(combo)} must list distinct keys")
        out.append(tuple(sorted(idx)))
    if not out:
        raise ParameterError("give at least one combination of key variables")
    return tuple(dict.fromkeys(out))


# -- condition (C1), verified from scratch --------------------------------------------


# -- the L2 loss (section 3) and its gradient -------------------------------------------


def l2_and_gradient(transitions: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
    """``l2(P)`` (proportion squared) and its gradient with respect to every entry of P.

    The L2 loss of the unbiased estimator (4) (section 3) and its gradient
    ``(1/n^2) (U_0 w^T - 2 Q^T diag(v) Q Q^T)`` (module docstring).

    Parameters
    ----------
    transitions : numpy.ndarray, shape (K, K)
        P, invertible.
    counts : numpy.ndarray, shape (K,)
        U_0.

    Returns
    -------
    value : float
        l2(P), proportion squared.
    gradient : numpy.ndarray, shape (K, K)
        ``d l2 / d P[i, j]``.

    Examples
    --------
    The value is :func:`pramkit.utility.l2_loss`; the gradient matches a
    finite difference:

    >>> import math
    >>> p, u0 = np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([30.0, 10.0])
    >>> value, grad = l2_and_gradient(p, u0)
    >>> math.isclose(value, l2_loss(u0, PramMatrix(p)))
    True
    >>> step = np.array([[0.0, 1e-7], [0.0, 0.0]])
    >>> math.isclose((l2_and_gradient(p + step, u0)[0] - value) / 1e-7, grad[0, 1], rel_tol=1e-5)
    True
    """
    u0 = np.asarray(counts, dtype=float)
    n = u0.sum()
    q = np.linalg.inv(transitions)
    w = (q * q).sum(axis=1)
    value = float(u0 @ transitions @ w) / n**2 - 1.0 / n
    v = transitions.T @ u0
    grad = (np.outer(u0, w) - 2.0 * (q.T @ (v[:, None] * q)) @ q.T) / n**2
    return value, grad


def expected_changes(transitions: np.ndarray | sp.spmatrix, counts: ArrayLike) -> float:
    """Expected number of records whose key combination changes: ``sum_m U_0(m) (1 - P[m, m])``.

    Parameters
    ----------
    transitions : array or sparse matrix, shape (K, K)
        P.
    counts : array_like, shape (K,)
        U_0.

    Returns
    -------
    float
        Records.

    Examples
    --------
    >>> expected_changes(np.array([[0.75, 0.25], [0.0, 1.0]]), [30, 5])
    7.5
    """
    diag = as_csr(transitions).diagonal()
    return float(np.asarray(counts, dtype=float) @ (1.0 - diag))


# -- the baseline: identity plus uniform noise ---------------------------------------------


@dataclass(frozen=True)
class UniformNoise:
    """``P = (1 - lam) I + lam J / K``, the smallest ``lam`` meeting (C1) (bisection;
    :func:`uniform_noise_baseline`).

    Attributes
    ----------
    weight : float
        lam (probability that a record is redrawn uniformly over X).
    worst_posterior : float
        Largest posterior of (C1) at lam.
    loss : float
        l2(P), proportion squared.
    expected_changes : float
        Records, ``n lam (1 - 1/K)``.
    bisection_steps : int
        Halvings of the bracket.

    Examples
    --------
    Uniform noise protects the unique record of the 71 by changing 6.6
    records, expected; the optimised design (:func:`recognition_design`)
    needs 2.3:

    >>> space = key_space(np.array([[30.0, 1.0], [40.0, 20.0]]))
    >>> b = uniform_noise_baseline(space, [(0, 1)], alpha=0.3)
    >>> round(b.weight, 4), round(b.worst_posterior, 6), round(b.expected_changes, 2), b.bisection_steps
    (0.0962, 0.3, 6.57, 40)
    """

    weight: float
    worst_posterior: float
    loss: float
    expected_changes: float
    bisection_steps: int


def uniform_worst_posterior(space: KeySpace, combinations: Sequence[tuple[int, ...]], weight: float) -> float:
    """Worst posterior of (C1) for ``(1 - lam) I + lam J / K`` without forming the K x K matrix.

    For a cell m with ``m_pi = k0`` the numerator is ``1 - lam + lam / |X_pi|`` and the
    denominator ``(1 - lam) U_pi(k0) + lam n / |X_pi|``; every other ratio is at most ``1/n``.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    weight : float
        lam, in [0, 1].

    Returns
    -------
    float
        The largest posterior of (C1), equation (1).

    Examples
    --------
    The closed form agrees with :func:`pramkit.risk.posterior.worst_posterior` on the K x K matrix:

    >>> import math
    >>> space = key_space(np.array([[30.0, 1.0], [40.0, 20.0]]))
    >>> lam = 0.05
    >>> p = (1 - lam) * np.eye(4) + lam / 4
    >>> math.isclose(uniform_worst_posterior(space, [(0, 1)], lam), worst_posterior(space, p, [(0, 1)]).value)
    True
    >>> uniform_worst_posterior(space, [(0, 1)], 0.0)      # P = I: the unique record
    1.0
    """
    return _uniform_worst([space.margin(c)[1] for c in combinations], space.n, weight)


def _uniform_worst(margins: Sequence[np.ndarray], n: int, weight: float) -> float:
    lam = float(weight)
    worst = 1.0 / n if lam > 0 else 0.0
    for u_pi in margins:
        d = u_pi.size
        occ = u_pi[u_pi > 0]
        worst = max(worst, float(((1.0 - lam + lam / d) / ((1.0 - lam) * occ + lam * n / d)).max()))
    return worst


def uniform_loss(space: KeySpace, weight: float) -> float:
    """l2 of ``(1 - lam) I + lam J / K``: ``P^{-1} = (I - lam J / K) / (1 - lam)`` gives
    ``w(l) = ((1 - lam/K)^2 + (K - 1) lam^2 / K^2) / (1 - lam)^2`` for every l.

    Hence ``l2 = (w - 1) / n`` (section 3, estimator (4)), whatever U_0.

    Parameters
    ----------
    space : KeySpace
        X and U_0 (only K and n matter).
    weight : float
        lam, in [0, 1).

    Returns
    -------
    float
        l2(P), proportion squared.

    Examples
    --------
    >>> import math
    >>> space = key_space(np.array([[30.0, 1.0], [40.0, 20.0]]))
    >>> lam = 0.1
    >>> p = PramMatrix((1 - lam) * np.eye(4) + lam / 4)
    >>> math.isclose(uniform_loss(space, lam), l2_loss(space.counts, p))
    True
    >>> uniform_loss(space, 0.0)
    0.0
    """
    lam, k, n = float(weight), float(space.cells), float(space.n)
    w = ((1.0 - lam / k) ** 2 + (k - 1.0) * lam**2 / k**2) / (1.0 - lam) ** 2
    return (w - 1.0) / n


def uniform_noise_baseline(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], *, alpha: float, tol: float = 1e-12
) -> UniformNoise:
    """The smallest uniform mixing weight meeting (C1) at ``alpha``, by bisection on [0, 1).

    The worst posterior decreases in lam (each ratio is a Moebius function of lam
    that falls from ``1/U_pi(k0)`` to ``1/n``), so bisection finds the threshold.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    alpha : float
        The bound of (C1) (:func:`check_alpha`).
    tol : float
        Width of the final bracket of lam.

    Returns
    -------
    UniformNoise
        lam (the upper end of the bracket, so (C1) holds), its posterior,
        loss and expected changes.

    Raises
    ------
    ParameterError
        If alpha is not a probability or ``alpha n <= 1``.

    Examples
    --------
    Without a rare combination, P = I suffices:

    >>> space = key_space(np.array([[30.0, 10.0], [40.0, 20.0]]))
    >>> b = uniform_noise_baseline(space, [(0, 1)], alpha=0.3)
    >>> b.weight, b.loss, b.bisection_steps
    (0.0, 0.0, 0)

    Otherwise lam is the smallest weight that meets (C1):

    >>> rare = key_space(np.array([[30.0, 1.0], [40.0, 20.0]]))
    >>> b = uniform_noise_baseline(rare, [(0, 1)], alpha=0.3)
    >>> b.worst_posterior <= 0.3 < uniform_worst_posterior(rare, [(0, 1)], b.weight - 1e-9)
    True
    """
    alpha = check_alpha(alpha, space.n)
    margins = [space.margin(c)[1] for c in combinations]
    lo, hi, steps = 0.0, 1.0, 0
    if _uniform_worst(margins, space.n, 0.0) <= alpha:
        hi = 0.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if _uniform_worst(margins, space.n, mid) <= alpha:
            hi = mid
        else:
            lo = mid
        steps += 1
    return UniformNoise(hi, _uniform_worst(margins, space.n, hi), uniform_loss(space, hi),
                        space.n * hi * (1.0 - 1.0 / space.cells), steps)


def check_alpha(alpha: float, n: int) -> float:
    """The posterior bound alpha of (C1) (:func:`pramkit.validate.probability`), attainable with n records.

    Any matrix gives some posterior at least ``1/n``, so (C1) needs ``alpha n > 1``.

    Parameters
    ----------
    alpha : float
        The bound, in (0, 1).
    n : int
        The number of records.

    Returns
    -------
    float
        alpha.

    Raises
    ------
    ParameterError
        If alpha is not a probability, or ``alpha n <= 1``.

    Examples
    --------
    >>> check_alpha(0.1, 2500)                 # the 48-cell example of section 4
    0.1
    >>> check_alpha(0.01, 50)   # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: alpha = 0.01 with n = 50 records: (C1) needs n > 1/alpha
    (even a constant matrix gives posterior 1/n = 0.02); raise alpha or use more records
    """
    a = probability(alpha, "alpha (the posterior bound of condition C1)")
    if a * n <= 1:
        raise ParameterError(
            f"alpha = {a:g} with n = {n} records: (C1) needs n > 1/alpha (even a constant matrix gives "
            f"posterior 1/n = {1 / n:.3g}); raise alpha or use more records"
        )
    return a


# -- the full problem --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SolverDiagnostics(SolverRun):
    """How a design was computed.

    Attributes
    ----------
    method : str
        ``"full"`` or ``"restricted"``.
    solver : str
        The optimiser (``"trust-constr"``, or ``"none"`` when P = I suffices).
    status : str
        The optimiser's status text.
    success : bool
        Whether the optimiser reported success.
    iterations : int
        Optimiser iterations (last solve).
    variables : int
        Free entries of P in the last solve.
    constraints : int
        (C1) inequalities in the last solve.
    reduce : bool
        Whether section 4's reductions cut the constraints.
    gamma : float or None
        The diagonal bound of the last solve.
    restarts : int
        Solves repeated with a smaller gamma.
    rare_types : int
        Occurring types with ``U_0(m) < 1/alpha``.
    problem_combinations : int
        ``(pi, k0)`` with ``0 < U_pi(k0) < 1/alpha``.
    gap : float or None
        Bound on ``n^2 (l2 - optimum)`` of the solved problem, records (None when not certified).
    seconds : float
        Wall-clock time of the design.
    lower_bound : float or None
        Proved lower bound on ``n^2 l2`` over the solved problem (records; None when not
        certified; :func:`pramkit.recognition.reductions.certified_lower_bound`).
    certified : bool
        Whether ``lower_bound`` and ``gap`` are proved (the restricted support, or P = I);
        the full method has no certificate.

    Examples
    --------
    >>> d = recognition_design(np.array([[30.0, 1.0], [40.0, 20.0]]), alpha=0.3, combinations=2)
    >>> diag = d.diagnostics
    >>> diag.method, diag.solver, diag.rare_types, diag.problem_combinations, diag.restarts, diag.certified
    ('restricted', 'trust-constr', 1, 1, 0, True)
    >>> diag.gap < 1e-2 * diag.lower_bound
    True
    """

    method: str
    reduce: bool
    gamma: float | None
    restarts: int
    rare_types: int
    problem_combinations: int
    seconds: float


def c1_rows(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], triples: Sequence[tuple[int, int, int]], alpha: float
) -> sp.csr_matrix:
    """The (C1) inequalities ``A vec(P) <= 0`` for the triples ``(m, combination index, k0)``.

    Row r, for the triple ``(m, ci, k0)``, puts ``+1`` on ``P[m, k]`` and
    ``-alpha U_0(l)`` on ``P[l, k]`` for every occurring l and every k with
    ``k_pi = k0`` (pi = ``combinations[ci]``; ``vec`` row-major).

    Parameters
    ----------
    space, combinations
        The key space (X and U_0) and Pi, as positions of keys.
    triples : sequence of (int, int, int)
        The inequalities to write (:func:`pramkit.recognition.reductions.c1_triples`).
    alpha : float
        The bound on the posterior.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (len(triples), K^2)

    Examples
    --------
    >>> space = key_space(np.array([3.0, 1.0]))
    >>> c1_rows(space, [(0,)], [(1, 0, 1)], 0.5).toarray().tolist()   # P[1,1] <= 0.5 (3 P[0,1] + P[1,1])
    [[0.0, -1.5, 0.0, 0.5]]
    """
    k = space.cells
    occ = space.occurring
    rows, cols, vals = [], [], []
    margins = [space.table.margin_codes(c)[0] for c in combinations]
    fibres: dict[tuple[int, int], np.ndarray] = {}
    for r, (m, ci, k0) in enumerate(triples):
        fibre = fibres.get((ci, k0))
        if fibre is None:
            fibre = fibres[(ci, k0)] = np.flatnonzero(margins[ci] == k0)
        coef = np.outer(-alpha * space.counts[occ], np.ones(fibre.size))
        flat = (occ[:, None] * k + fibre[None, :]).ravel()
        rows.append(np.full(flat.size + fibre.size, r))
        cols.append(np.concatenate([flat, m * k + fibre]))
        vals.append(np.concatenate([coef.ravel(), np.ones(fibre.size)]))
    if not triples:
        return sp.csr_matrix((0, k * k))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(len(triples), k * k))


def solve_full(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], triples: Sequence[tuple[int, int, int]],
    *, alpha: float, gamma: float, max_iterations: int = 3000,
) -> Solve:
    """Minimise ``n^2 l2(P)`` over every K x K row-stochastic P with ``P[k, k] >= gamma``, under
    the given (C1) rows, from the identity.

    The variables are the off-diagonal entries x (``P = I + B x`` puts ``-sum`` of each row on
    its diagonal, so every iterate is row-stochastic).  SciPy's ``trust-constr`` gets the analytic
    gradient and Hessian-vector products by differencing it.  The diagonal bound is section 4's
    standing assumption ``P_kk > gamma``; without it (C1) also admits near-permutations, which
    relabel records at no L2 cost (the estimator undoes a permutation exactly) but protect
    nobody, since P is published.

    Parameters
    ----------
    space : KeySpace
        X and U_0 (K at most :data:`MAX_FULL_CELLS`: K^2 variables).
    combinations : sequence of tuples of int
        Pi, as positions of keys.
    triples : sequence of (int, int, int)
        The (C1) inequalities to impose
        (:func:`pramkit.recognition.reductions.c1_triples`).
    alpha : float
        The bound of (C1) (the optimiser aims at ``alpha (1 - SAFETY)``).
    gamma : float
        The diagonal bound.
    max_iterations : int
        Iterations of ``trust-constr``.

    Returns
    -------
    Solve
        P (dense, rows renormalised by :func:`clean_rows`), not certified.

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 3 (the L2 loss) and section 4
    (the optimisation from the identity, the bound ``P_kk > gamma``).

    Examples
    --------
    Thirty records and one: the unique record needs ``1/0.3 - 1 = 2.33``
    records, expected, moved into its cell, ``2.33 / 30 = 0.078`` of the others:

    >>> space = key_space(np.array([30.0, 1.0]))
    >>> solved = solve_full(space, [(0,)], [(1, 0, 1)], alpha=0.3, gamma=0.5)
    >>> solved.transitions.round(4).tolist(), solved.success, solved.certified
    ([[0.9222, 0.0778], [0.0, 1.0]], True, False)
    >>> round(worst_posterior(space, solved.transitions, [(0,)]).value, 6)
    0.3
    """
    k = space.cells
    u0 = space.counts
    n = float(u0.sum())
    if not triples:
        return Solve(transitions=np.eye(k), solver="none", status="no (C1) constraint is binding: P = I",
                     success=True, iterations=0, variables=k * (k - 1), constraints=0, gap=0.0, lower_bound=0.0,
                     certified=True)
    off = np.flatnonzero(~np.eye(k, dtype=bool).ravel())
    row = off // k
    nvar = off.size
    b = sp.csr_matrix((np.concatenate([np.ones(nvar), -np.ones(nvar)]),
                       (np.concatenate([off, row * k + row]), np.concatenate([np.arange(nvar)] * 2))),
                      shape=(k * k, nvar))
    eye = np.eye(k).ravel()
    a_c1 = c1_rows(space, combinations, triples, alpha * (1.0 - SAFETY))
    a_row = sp.csr_matrix((np.ones(nvar), (row, np.arange(nvar))), shape=(k, nvar))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = l2_and_gradient((eye + b @ x).reshape(k, k), u0)
        return value * n**2, (b.T @ grad.ravel()) * n**2

    def hess(x: np.ndarray) -> LinearOperator:
        g0 = fun(x)[1]

        def product(v: np.ndarray) -> np.ndarray:
            h = 1e-7 / max(float(np.linalg.norm(v)), 1e-300)
            return (fun(x + h * v)[1] - g0) / h

        return LinearOperator((nvar, nvar), matvec=product)

    # trial points of the interior-point method may leave the feasible set, where P can be
    # near-singular; the result is verified from scratch, so overflow there is harmless
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        res = minimize(
            fun, np.zeros(nvar), jac=True, hess=hess, method="trust-constr",
            constraints=[LinearConstraint(a_c1 @ b, -np.inf, -(a_c1 @ eye)), LinearConstraint(a_row, 0.0, 1.0 - gamma)],
            bounds=Bounds(0.0, 1.0),
            options={"maxiter": max_iterations, "gtol": 1e-11, "xtol": 1e-14, "initial_barrier_parameter": 1e-4,
                     "initial_tr_radius": 0.01},
        )
    p = (eye + b @ np.clip(res.x, 0.0, None)).reshape(k, k)
    return Solve(transitions=clean_rows(p), solver="trust-constr", status=str(res.message),
                 success=bool(res.success), iterations=int(res.nit), variables=nvar, constraints=len(triples), gap=None)


def clean_rows(p: np.ndarray) -> np.ndarray:
    """Clip the optimiser's rounding below zero and renormalise each row to sum to 1.

    Parameters
    ----------
    p : numpy.ndarray, shape (K, K)
        A matrix whose rows sum to 1 up to the optimiser's rounding.

    Returns
    -------
    numpy.ndarray
        Non-negative, every row summing to 1.

    Examples
    --------
    >>> q = clean_rows(np.array([[0.7, 0.3000001, -1e-7], [0.0, 1.0, 0.0], [0.2, 0.2, 0.6]]))
    >>> bool((q >= 0).all()), q.sum(axis=1).round(15).tolist()
    (True, [1.0, 1.0, 1.0])
    """
    q = np.clip(p, 0.0, None)
    return q / q.sum(axis=1, keepdims=True)


# -- the result -----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RecognitionDesign:
    """A PRAM matrix meeting (C1) with minimal L2 loss (:func:`recognition_design`).

    Attributes
    ----------
    matrix : PramMatrix or None
        The design with tuple categories (all of X when ``K <= MAX_MATRIX_CELLS``, else
        the occurring types and the targets when they are few enough, else None: see
        ``transitions``).
    transitions : scipy.sparse.csr_matrix
        P on all K cells of X (rows of unlisted cells are identity).
    space : KeySpace
        The key space and U_0.
    combinations : tuple of tuples of str
        Pi, as tuples of key names.
    alpha : float
        The bound on the posterior of (C1).
    worst_posterior : float
        The largest posterior of (C1), recomputed from scratch (probability).
    loss : float
        l2(P) (proportion squared).
    expected_changes : float
        Expected number of records whose key combination changes (records).
    baseline : UniformNoise
        Identity plus uniform noise at the same alpha.
    diagnostics : SolverDiagnostics
        The solver's report.

    Examples
    --------
    >>> d = recognition_design(np.array([[30.0, 1.0], [40.0, 20.0]]), alpha=0.3, combinations=2)
    >>> d.combinations, d.worst_posterior <= d.alpha, d.loss < d.baseline.loss
    ((('x1', 'x2'),), True, True)
    """

    matrix: PramMatrix | None
    transitions: sp.csr_matrix
    space: KeySpace
    combinations: tuple[tuple[str, ...], ...]
    alpha: float
    worst_posterior: float
    loss: float
    expected_changes: float
    baseline: UniformNoise
    diagnostics: SolverDiagnostics

    @property
    def change_probability(self) -> np.ndarray:
        """``1 - P[m, m]`` for every cell of X."""
        return 1.0 - self.transitions.diagonal()

    def destinations(self) -> pd.DataFrame:
        """Where the changed records go: expected records moved into each cell (``sum_m U_0(m) P[m, k]``
        over ``m != k``), largest first, with the cell's labels and its share of all changes.

        Returns
        -------
        pandas.DataFrame
            Columns ``cell`` (labels), ``records_in``, ``share`` and ``count`` (U_0 of the cell).

        Examples
        --------
        The unique record of cell (0, 1) is hidden among records moved into its cell:

        >>> d = recognition_design(np.array([[30.0, 1.0], [40.0, 20.0]]), alpha=0.3, combinations=2)
        >>> d.destinations()[["cell", "share", "count"]].to_dict("list")
        {'cell': [(0, 1)], 'share': [1.0], 'count': [1.0]}
        """
        p = self.transitions.tocoo()
        off = p.row != p.col
        inflow = np.bincount(p.col[off], weights=self.space.counts[p.row[off]] * p.data[off],
                             minlength=self.space.cells)
        cells = np.flatnonzero(inflow > 0)
        order = cells[np.argsort(-inflow[cells], kind="stable")]
        total = float(inflow.sum())
        return pd.DataFrame({
            "cell": self.space.table.labels(order),
            "records_in": inflow[order],
            "share": inflow[order] / total if total > 0 else inflow[order],
            "count": self.space.counts[order],
        })

    def perturbed_variable(self, *, name: str | None = None) -> PerturbedVariable:
        """The design as a joint perturbed variable over the key columns, for the manifest.

        Parameters
        ----------
        name : str, optional
            The variable's name (default: the keys joined by ``*``).

        Returns
        -------
        pramkit.manifest.PerturbedVariable
            The dense matrix over the listed cells, missing values kept.

        Raises
        ------
        ParameterError
            If the design has no dense matrix (more than :data:`MAX_MATRIX_CELLS` cells).

        Examples
        --------
        >>> d = recognition_design(np.array([[30.0, 1.0], [40.0, 20.0]]), alpha=0.3, combinations=2,
        ...                        keys=["sex", "region"], categories=[("m", "f"), ("n", "s")])
        >>> v = d.perturbed_variable()
        >>> v.name, v.columns, v.matrix.categories
        ('sex*region', ('sex', 'region'), (('m', 'n'), ('m', 's'), ('f', 'n'), ('f', 's')))
        """
        if self.matrix is None:
            raise ParameterError(
                f"the design moves records among {self.space.cells} cells, too many for a dense joint matrix "
                f"(limit {MAX_MATRIX_CELLS}); use fewer or coarser key variables"
            )
        return PerturbedVariable(name or "*".join(self.space.keys), self.matrix, "keep", self.space.keys)


def matrix_cells(space: KeySpace, transitions: sp.csr_matrix) -> np.ndarray | None:
    """The cells the PramMatrix lists: all of X if small, else the occurring types and every cell
    that receives records (the set is closed under P); None if still too many.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    transitions : scipy.sparse.csr_matrix, shape (K, K)
        P.

    Returns
    -------
    numpy.ndarray or None
        The flat cell indices, increasing (all K when ``K <= MAX_MATRIX_CELLS``).

    Examples
    --------
    >>> matrix_cells(key_space(np.array([[3.0, 0.0], [4.0, 2.0]])), as_csr(np.eye(4))).tolist()
    [0, 1, 2, 3]

    On a large key space only the occurring types and the targets are listed:

    >>> big = np.zeros(5000)
    >>> big[[0, 7]] = [40.0, 1.0]
    >>> p = sp.identity(5000, format="lil")
    >>> p[0, 0], p[0, 9] = 0.9, 0.1
    >>> matrix_cells(key_space(big), p.tocsr()).tolist()
    [0, 7, 9]
    """
    if space.cells <= MAX_MATRIX_CELLS:
        return np.arange(space.cells)
    p = transitions.tocoo()
    cells = np.union1d(space.occurring, p.col[p.row != p.col])
    return cells if cells.size <= MAX_MATRIX_CELLS else None


def finish(
    space: KeySpace, combinations: Sequence[tuple[int, ...]], transitions: sp.csr_matrix, *, alpha: float,
    baseline: UniformNoise, diagnostics: SolverDiagnostics, parameters: dict,
) -> RecognitionDesign:
    """Verify (C1) from scratch, compute the loss with :func:`pramkit.utility.l2_loss`, and package.

    (C1) is accepted only if :func:`pramkit.risk.posterior.posterior_bound`, exact for the stored
    entries, is at most alpha (stated in the certificate as ``worst_posterior_bound``);
    otherwise :class:`RuntimeError` (a designed matrix that breaks (C1) is a bug).

    Parameters
    ----------
    space, combinations
        The key space and Pi, as for :func:`c1_rows`.
    transitions : scipy.sparse.csr_matrix, shape (K, K)
        The designed P.
    alpha : float
        The bound on the posterior.
    baseline : UniformNoise
        The uniform-noise baseline at alpha.
    diagnostics : SolverDiagnostics
        How P was computed.
    parameters : dict
        The design's parameters, for the matrix's provenance.

    Returns
    -------
    RecognitionDesign
        The design, when (C1) holds.

    Raises
    ------
    RuntimeError
        If the proved bound on the worst posterior exceeds alpha.

    Examples
    --------
    >>> space = key_space([[30, 4], [40, 20]])
    >>> combos = combinations_of(space.keys, 2)
    >>> run = SolverDiagnostics(solver="none", status="given", success=True, iterations=0, variables=0,
    ...                         constraints=0, gap=None, method="given", reduce=False, gamma=None, restarts=0,
    ...                         rare_types=1, problem_combinations=1, seconds=0.0)
    >>> d = finish(space, combos, as_csr(np.eye(4)), alpha=0.3, diagnostics=run, parameters={},
    ...            baseline=uniform_noise_baseline(space, combos, alpha=0.3))
    >>> d.worst_posterior, d.loss, d.matrix.provenance.certificate["worst_posterior_bound"]
    (0.25, 0.0, 0.25)
    """
    worst = worst_posterior(space, transitions, combinations)
    bound = posterior_bound(space, transitions, combinations)
    if bound > alpha:
        raise RuntimeError(
            f"the designed matrix breaks (C1): posterior {worst.value:.6g} (at most {bound:.6g}) > alpha = {alpha:g} "
            f"(type {space.table.labels([worst.cell])[0]}, combination {worst.combination})"
        )
    cells = matrix_cells(space, transitions)
    matrix = None
    dense = None if cells is None else transitions[cells][:, cells].toarray()
    if cells is not None and dense is not None and cells.size <= MAX_DENSE_LOSS_CELLS:
        # l2 on the listed cells equals l2 on X: the listed set is closed under P, the rest is identity
        loss = l2_loss(space.counts[cells], PramMatrix(dense, space.table.labels(cells)))
    else:
        loss = red.restricted_l2(space, transitions)
    if cells is not None and dense is not None:
        names = [tuple(space.keys[a] for a in c) for c in combinations]
        provenance = Provenance(
            method="recognition",
            parameters={**parameters, "alpha": alpha, "combinations": [list(c) for c in names],
                        "keys": list(space.keys)},
            objective=loss,
            objective_name="l2_loss_proportion_squared",
            certificate={"solver": diagnostics.solver, "status": diagnostics.status, "success": diagnostics.success,
                         "worst_posterior": worst.value, "worst_posterior_bound": bound,
                         "gap_records": diagnostics.gap, "lower_bound_records": diagnostics.lower_bound,
                         "certified": diagnostics.certified},
            seconds=diagnostics.seconds,
        )
        matrix = PramMatrix(dense, space.table.labels(cells), provenance)
    return RecognitionDesign(
        matrix=matrix, transitions=transitions, space=space,
        combinations=tuple(tuple(space.keys[a] for a in c) for c in combinations), alpha=alpha,
        worst_posterior=worst.value, loss=loss, expected_changes=expected_changes(transitions, space.counts),
        baseline=baseline, diagnostics=diagnostics,
    )


# -- the public functions ------------------------------------------------------------------


def recognition_design(
    counts: ArrayLike | KeySpace,
    *,
    alpha: float,
    combinations: int | Sequence[Sequence[str | int]] = 3,
    keys: Sequence[str] | None = None,
    categories: Sequence[Sequence[Label]] | None = None,
    method: Method = "restricted",
    reduce: bool = True,
    gamma: float = 0.9,
    max_iterations: int = 1000,
) -> RecognitionDesign:
    """Design P on the cross-classified key space: minimal l2(P) under (C1) at ``alpha``.

    Parameters
    ----------
    counts : array_like or KeySpace
        The table of original counts U_0, one axis per key (:func:`key_space`), or the key space.
    alpha : float
        The bound on the posterior of (C1), in (0, 1), with ``alpha n > 1``.
    combinations : int or sequence of sequences
        Pi: every r-subset of the keys for an integer r (default 3, as in section 1),
        or a list of combinations of key names (or positions).
    keys, categories : optional
        Names and labels of the keys of a table of counts (:func:`key_space`).
    method : {"restricted", "full"}
        Section 4's restricted support (convex, large X) or every entry of P (small X only).
    reduce : bool
        Cut the constraints by section 4's reductions (``method="full"``; the restricted
        support always uses them).
    gamma : float
        The starting diagonal bound, in (0, 1].
    max_iterations : int
        Iterations of the optimiser per solve.

    Returns
    -------
    RecognitionDesign

    Raises
    ------
    ParameterError
        If alpha is not attainable (:func:`check_alpha`), the combinations are
        invalid, ``method="full"`` is asked for more than
        :data:`MAX_FULL_CELLS` cells, the restricted support cannot meet (C1),
        the method is unknown, or gamma is outside (0, 1].
    DataError
        If the counts are not a table of whole numbers.

    Examples
    --------
    The record alone in cell (f, s) is protected by moving 2.33 records, expected, into its cell:

    >>> d = recognition_design(np.array([[30.0, 1.0], [40.0, 20.0]]), alpha=0.3, combinations=2,
    ...                        keys=["sex", "region"], categories=[("m", "f"), ("n", "s")])
    >>> round(d.worst_posterior, 4), round(d.expected_changes, 2), d.diagnostics.certified
    (0.3, 2.33, True)
    """
    t0 = time.perf_counter()
    space = counts if isinstance(counts, KeySpace) else key_space(counts, keys=keys, categories=categories)
    alpha = check_alpha(alpha, space.n)
    if not (0.0 < gamma <= 1.0):
        raise ParameterError(f"gamma = {gamma!r}: the diagonal bound must lie in (0, 1]")
    combos = combinations_of(space.keys, combinations)
    baseline = uniform_noise_baseline(space, combos, alpha=alpha)
    gamma_used: float | None
    if method == "full":
        if space.cells > MAX_FULL_CELLS:
            raise ParameterError(
                f"method='full' optimises all {space.cells}^2 entries of P; it is limited to "
                f"{MAX_FULL_CELLS} cells: use method='restricted'"
            )
        solved, gamma_used, restarts = red.with_gamma_restarts(
            space, gamma=gamma,
            solve=lambda g: solve_full(space, combos, red.c1_triples(space, combos, alpha=alpha, gamma=g, reduce=reduce),
                                       alpha=alpha, gamma=g, max_iterations=max_iterations),
        )
    elif method == "restricted":
        solved, gamma_used, restarts = red.solve_restricted(space, combos, alpha=alpha, gamma=gamma,
                                                            max_iterations=max_iterations)
    else:
        raise ParameterError(f"method = {method!r}: choose 'restricted' or 'full'")
    counts_rare = red.rare_types(space, alpha).size
    problems = red.problem_count(space, combos, alpha)
    diagnostics = SolverDiagnostics(
        **solved.run_figures(), method=method, reduce=reduce or method == "restricted", gamma=gamma_used,
        restarts=restarts, rare_types=counts_rare, problem_combinations=problems, seconds=time.perf_counter() - t0,
    )
    return finish(space, combos, as_csr(solved.transitions), alpha=alpha, baseline=baseline,
                  diagnostics=diagnostics,
                  parameters={"method": method, "reduce": diagnostics.reduce, "gamma": gamma_used})


def recognition_design_from_data(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    alpha: float,
    combinations: int | Sequence[Sequence[str]] = 3,
    method: Method = "restricted",
    reduce: bool = True,
    gamma: float = 0.9,
) -> RecognitionDesign:
    """:func:`recognition_design` on the key variables ``keys`` of ``data``.

    The categories of each key come from the data.  Records with a missing key
    value would be released unperturbed by a joint variable, so they are refused:
    recode missing values to a category first.

    Parameters
    ----------
    data : pandas.DataFrame
        The records.
    keys : sequence of str
        The key variables.
    alpha, combinations, method, reduce, gamma
        As for :func:`recognition_design`.

    Returns
    -------
    RecognitionDesign
        Its key space is the table of the keys (:meth:`pramkit.risk.frequencies.KeyTable.count`).

    Raises
    ------
    DataError
        If data is not a DataFrame or a key column has missing values.
    ParameterError
        As for :func:`recognition_design`.

    Examples
    --------
    >>> data = pd.DataFrame({"sex": ["m"] * 30 + ["f"] * 41, "region": ["n"] * 30 + ["s"] * 40 + ["n"]})
    >>> d = recognition_design_from_data(data, ["sex", "region"], alpha=0.3, combinations=2)
    >>> d.space.table.counts.tolist(), d.destinations()["cell"].tolist()
    ([[1, 40], [30, 0]], [('f', 'n')])
    """
    from pramkit.risk.frequencies import key_table

    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, not {type(data).__name__}")
    missing = [k for k in keys if k in data.columns and data[k].isna().any()]
    if missing:
        raise DataError(
            f"key column(s) {missing} have missing values; a joint perturbation leaves such records "
            "unprotected: recode missing values to a category of their own first"
        )
    space = KeySpace(key_table(data, keys, missing="exclude").count())
    return recognition_design(space, alpha=alpha, combinations=combinations, method=method, reduce=reduce,
                              gamma=gamma)
