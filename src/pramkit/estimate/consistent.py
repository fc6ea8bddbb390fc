"""Consistent estimators: estimated counts that are non-negative and sum to n.

The unbiased estimator ``(M^T)^{-1} lam_hat`` (:mod:`pramkit.estimate.moment`)
can give negative counts, or counts above n, for rare categories.  Wang,
Lopuhaä-Zwakenberg, Li, Škorić and Li ("Locally differentially private
frequency estimation with consistency", NDSS 2020) compare post-processings
that enforce the two facts every true table satisfies; pramkit offers

* **norm-sub** (:func:`norm_sub`, :func:`norm_sub_estimate`): set the negative
  estimates to zero and subtract the same amount from every positive one so
  that the total is n again; repeat until nothing is negative.  The fixed
  point is the Euclidean projection of the unbiased estimate onto
  ``{t >= 0, sum t = n}``

      t_k = max(u_k - tau, 0),   tau such that sum_k t_k = n,            (C1)

  (the Karush-Kuhn-Tucker conditions of the projection), computed here in
  closed form by sorting.  Because the true table lies in that convex set and
  a projection onto a convex set never increases distances, the total
  squared error of norm-sub is never larger than that of the unbiased
  estimate, replicate by replicate;
* the **maximum-likelihood estimate** (the iterative Bayesian update / EM of
  :mod:`pramkit.estimate.mle`);
* **rr-mle** (:func:`rr_mle_estimate`): the same MLE in closed form when the
  matrix is randomized response, ``M[k, k] = a``, ``M[k, j] = b`` (``j != k``,
  ``a > b``).  The released probabilities are then ``lam_j = b + (a - b) x_j``
  (x the original proportions), and the Karush-Kuhn-Tucker conditions of
  ``max sum_j u_j log(b + (a - b) x_j)`` on the simplex give

      x_j = max(c u_j - b / (a - b), 0)                                  (C2)

  with c fixed by ``sum_j x_j = 1``: when the support is the k categories
  released most often, ``c = (1 + k b / (a - b)) / U_k`` (``U_k`` the sum of
  their released counts), and k is the largest value for which the k-th of
  them is still positive.  With every x_j > 0 this is the unbiased estimate.

A table whose other axes are unperturbed has those margins released exactly,
so both are applied within each combination of the unperturbed categories,
with that combination's known number of records as the total (for the MLE
the likelihood factorises that way).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError
from pramkit.estimate.covariance import VarianceKind, check_variance_kind
from pramkit.estimate.identifiability import MAX_CONDITION
from pramkit.estimate.mle import estimate_at, mle_estimate
from pramkit.estimate.moment import moment_estimate
from pramkit.estimate.result import TableEstimate, table_inputs
from pramkit.matrix import PramMatrix

#: Off-diagonal (and diagonal) entries of a randomized-response matrix may differ by this much.
RR_TOL = 1e-12


def norm_sub(values: ArrayLike, total: ArrayLike) -> np.ndarray:
    """Norm-Sub of each row of ``values`` (last axis): (C1), the projection onto ``{x >= 0, sum x = total}``.

    Parameters
    ----------
    values : array-like
        The last axis is projected, the others index independent rows.
    total : float or array-like
        The required sum of each row (a number, or one per row), non-negative.

    Returns
    -------
    numpy.ndarray
        Non-negative values in the shape of ``values``, each row summing to
        its total (zeros for a total of 0).

    Raises
    ------
    ParameterError
        If a row is empty, a value or total is not finite, or a total is negative.

    Examples
    --------
    >>> norm_sub([130.0, -30.0], 100.0).tolist()
    [100.0, 0.0]
    >>> norm_sub([60.0, 50.0, -10.0], 100.0).tolist()
    [55.0, 45.0, 0.0]

    Rows are independent, each with its own total; a row already in the set is kept:

    >>> norm_sub([[130.0, -30.0], [50.0, 30.0]], [100.0, 80.0]).tolist()
    [[100.0, 0.0], [50.0, 30.0]]
    """
    v = np.asarray(values, dtype=float)
    if v.ndim == 0 or v.shape[-1] == 0:
        raise ParameterError("norm_sub needs at least one value per row")
    z = np.broadcast_to(np.asarray(total, dtype=float), v.shape[:-1])
    if not np.all(np.isfinite(v)) or not np.all(np.isfinite(z)) or np.any(z < 0):
        raise ParameterError("norm_sub needs finite values and non-negative totals")
    s = -np.sort(-v, axis=-1)
    cum = np.cumsum(s, axis=-1)
    j = np.arange(1, v.shape[-1] + 1)
    support = np.sum(s - (cum - z[..., None]) / j > 0, axis=-1, keepdims=True)
    k = np.maximum(support, 1)
    tau = (np.take_along_axis(cum, k - 1, axis=-1) - z[..., None]) / k
    out = np.maximum(v - tau, 0.0)
    return np.where(z[..., None] > 0, out, 0.0)


def _perturbed_last(table: np.ndarray, perturbed: Sequence[int]) -> tuple[np.ndarray, list[int]]:
    """The table with the perturbed axes moved last and flattened: (unperturbed cells, perturbed cells)."""
    others = [a for a in range(table.ndim) if a not in perturbed]
    order = others + list(perturbed)
    moved = np.transpose(table, order)
    k_y = int(np.prod([table.shape[a] for a in others], dtype=int))
    return moved.reshape(k_y, -1), order


def _restore(rows: np.ndarray, order: list[int], shape: tuple[int, ...]) -> np.ndarray:
    return np.transpose(rows.reshape([shape[a] for a in order]), np.argsort(order))


def norm_sub_estimate(
    released: ArrayLike,
    matrices: Sequence[PramMatrix | None],
    *,
    variance: VarianceKind = "multinomial",
    max_condition: float = MAX_CONDITION,
) -> TableEstimate:
    """Norm-Sub of the unbiased estimate: counts in ``[0, n]`` summing to n (and to
    the released total of every combination of unperturbed categories).

    Parameters
    ----------
    released, matrices, variance, max_condition
        As for :func:`pramkit.estimate.moment_estimate`; when that falls back
        to the MLE (a singular or badly conditioned matrix), so does this,
        with a note.

    Returns
    -------
    TableEstimate
        method and estimator ``"norm-sub"``; no standard errors (NaN): the
        estimator is biased and not linear.

    Raises
    ------
    ParameterError, DataError
        As :func:`pramkit.estimate.moment_estimate`.

    References
    ----------
    Wang et al. (NDSS 2020), Norm-Sub; (C1) in the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> est = norm_sub_estimate(np.array([90.0, 10.0]), [m])
    >>> est.estimator, est.counts.tolist()
    ('norm-sub', [100.0, 0.0])

    Crossed with an unperturbed variable (columns), each column keeps its
    released total (60 and 40); the unbiased estimate of the second column,
    (-10, 50), is projected to (0, 40):

    >>> est = norm_sub_estimate(np.array([[45.0, 5.0], [15.0, 35.0]]), [m, None])
    >>> est.counts.tolist(), est.counts.sum(axis=0).tolist()
    ([[60.0, 0.0], [0.0, 40.0]], [60.0, 40.0])
    """
    base = moment_estimate(released, matrices, variance=variance, max_condition=max_condition)
    if base.method != "moment":
        return dataclasses.replace(base, note=f"norm-sub needs the unbiased estimate; {base.note}")
    perturbed = [a for a, m in enumerate(matrices) if m is not None]
    if not perturbed:
        return dataclasses.replace(base, method="norm-sub", estimator="norm-sub", covariance=None)
    rows, order = _perturbed_last(base.counts, perturbed)
    totals, _ = _perturbed_last(base.released, perturbed)
    counts = _restore(norm_sub(rows, totals.sum(axis=1)), order, base.counts.shape)
    return TableEstimate(
        counts=counts, se=np.full(counts.shape, np.nan), released=base.released, n=base.n,
        method="norm-sub", variance=variance, covariance=None, condition_number=base.condition_number,
        estimator="norm-sub",
    )


def randomized_response_entries(matrix: PramMatrix) -> tuple[float, float] | None:
    """``(a, b)`` if the matrix is randomized response (diagonal a, off-diagonal b), else ``None``.

    Entries may differ from a and b by :data:`RR_TOL`; a matrix of one
    category gives ``(a, 0.0)``.

    Parameters
    ----------
    matrix : PramMatrix
        The transition matrix.

    Returns
    -------
    (float, float) or None
        The mean diagonal and off-diagonal entries, or ``None``.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> randomized_response_entries(PramMatrix([[0.75, 0.25], [0.25, 0.75]]))
    (0.75, 0.25)
    >>> randomized_response_entries(PramMatrix([[0.9, 0.1], [0.3, 0.7]])) is None
    True

    The k-ary randomized response at epsilon keeps with ``e^eps / (e^eps + S - 1)``:

    >>> import math
    >>> from pramkit.design.classic import randomized_response
    >>> a, b = randomized_response_entries(randomized_response(["a", "b", "c", "d"], 1.0))
    >>> math.isclose(a, math.e / (math.e + 3)), math.isclose(a / b, math.e)
    (True, True)
    """
    m = matrix.matrix
    s = matrix.size
    a = float(np.mean(np.diag(m)))
    if s == 1:
        return a, 0.0
    off = m[~np.eye(s, dtype=bool)]
    b = float(np.mean(off))
    if np.max(np.abs(np.diag(m) - a)) > RR_TOL or np.max(np.abs(off - b)) > RR_TOL:
        return None
    return a, b


def rr_mle_estimate(
    released: ArrayLike,
    matrices: Sequence[PramMatrix | None],
    *,
    variance: VarianceKind = "multinomial",
) -> TableEstimate:
    """The MLE in closed form, (C2), for one variable perturbed by randomized response.

    Parameters
    ----------
    released : array-like
        Released counts, one axis per variable.
    matrices : sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable; exactly
        one must be given, with equal diagonal entries a and equal
        off-diagonal entries b, ``a > b`` (``a = b`` releases nothing about
        the variable: then the generic MLE of the identifiable quantities is
        returned, with a note).
    variance : {"multinomial", "pram"}, default "multinomial"
        For the standard errors (the inverse expected Fisher information, as
        for the MLE).

    Returns
    -------
    TableEstimate
        method ``"mle"``, estimator ``"rr-mle"``, no EM update
        (``iterations`` 0); ``loglik_gap`` is the stopping-rule bound of EM at
        the closed form, i.e. a check that it is the maximum (about 0).

    Raises
    ------
    ParameterError
        If not exactly one axis is perturbed, its matrix is not randomized
        response with ``a >= b``, or ``variance`` is unknown.
    DataError
        If the released counts are invalid or do not match the matrices.

    References
    ----------
    (C2) in the module docstring; Wang et al. (NDSS 2020) for the setting.

    Examples
    --------
    >>> import numpy as np
    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> est = rr_mle_estimate(np.array([90.0, 10.0]), [m])
    >>> est.estimator, est.counts.tolist()
    ('rr-mle', [100.0, 0.0])
    >>> est = rr_mle_estimate(np.array([70.0, 30.0]), [m])
    >>> est.counts.round(9).tolist()
    [90.0, 10.0]

    It agrees with EM (:func:`pramkit.estimate.mle_estimate`) to EM's tolerance,
    with no iteration:

    >>> m3 = PramMatrix([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> closed = rr_mle_estimate(np.array([60.0, 30.0, 10.0]), [m3])
    >>> em = mle_estimate(np.array([60.0, 30.0, 10.0]), [m3], tol=1e-9)
    >>> closed.iterations, np.allclose(closed.counts, em.counts, atol=1e-3), closed.loglik_gap < 1e-9
    (0, True, True)
    """
    check_variance_kind(variance)
    u, _, n = table_inputs(released, matrices)
    perturbed = [a for a, m in enumerate(matrices) if m is not None]
    if len(perturbed) != 1:
        raise ParameterError(
            f"estimator 'rr-mle' needs exactly one perturbed variable, the table has {len(perturbed)}; use 'mle'"
        )
    axis = perturbed[0]
    matrix = matrices[axis]
    assert matrix is not None  # the perturbed axis
    entries = randomized_response_entries(matrix)
    if entries is None or entries[0] < entries[1]:
        raise ParameterError(
            f"estimator 'rr-mle' needs a randomized-response matrix (equal diagonal entries above equal "
            f"off-diagonal ones); axis {axis}'s is not: use 'mle'"
        )
    a, b = entries
    if a == b:
        est = mle_estimate(u, matrices, variance=variance)
        return dataclasses.replace(est, note=f"rr-mle: the matrix is uniform, nothing is identifiable in closed form; {est.note}")
    rows, order = _perturbed_last(u, perturbed)
    x = np.zeros_like(rows)
    ratio = b / (a - b)
    for y, row in enumerate(rows):
        total = row.sum()
        if total == 0:
            continue
        ranked = -np.sort(-row)
        k = np.arange(1, row.size + 1)
        scale = (1.0 + k * ratio) / np.cumsum(ranked)
        valid = np.flatnonzero(scale * ranked - ratio > 0)
        c = scale[valid[-1]]
        x[y] = total / n * np.maximum(c * row - ratio, 0.0)
    p = _restore(x, order, u.shape)
    return estimate_at(u, matrices, p / p.sum(), variance=variance, iterations=0, converged=True, estimator="rr-mle")
