"""Classic PRAM designs: randomized response, keep-probability PRAM and invariant PRAM.

* :func:`randomized_response` -- k-ary randomized response at exactly epsilon
  (equation (2) of Ruiz and Domingo-Ferrer; Ayed, Battiston and Camerlenghi,
  section 3.1).
* :func:`keep_probability` -- the PRAM of mu-ARGUS: keep a category with
  probability ``keep``, otherwise move to one of the other categories
  uniformly, or only to those whose ordinal code is within ``bandwidth``.
* :func:`bayes_inverse` and :func:`invariant_pram` -- invariant PRAM
  (Gouweleeuw, Kooiman, Willenborg and de Wolf 1998): for any P and the
  observed proportions p, the Bayes inversion
  ``Q[j, k] = P[k, j] p_k / sum_l P[l, j] p_l`` gives ``R = P Q`` with
  ``p R = p`` (Shlomo and Skinner 2012, section 4: "v M = v").
* :func:`sdcmicro_pram` -- the invariant PRAM documented for sdcMicro's
  ``pram``: diagonal of P drawn from U(pd, 1) (or fixed at pd), off-diagonal
  mass spread uniformly, R = P Q, final matrix ``alpha R + (1 - alpha) I``.
  pd is a floor on P's diagonal, not on the released matrix's: for a rare
  category R's diagonal can be far below pd (see docs/bistochastic.md).

Every matrix is a :class:`pramkit.PramMatrix`; measure what it guarantees with
:func:`pramkit.design.measures.measure`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.bistochastic import as_distribution
from pramkit.privacy.exact import form8_within_budget


def randomized_response(categories: Sequence[Label], epsilon: float) -> PramMatrix:
    """Symmetric (k-ary) randomized response at ``epsilon``:
    keep with ``q = e^eps / (e^eps + S - 1)``, otherwise uniform over the other S - 1.

    Its epsilon (largest log-ratio in a column) is ``log(q / ((1-q)/(S-1))) = epsilon``.
    It is the symmetric DP-optimal matrix of form (8) (Ayed, Battiston and
    Camerlenghi, section 3.1) and equation (2) of Ruiz and Domingo-Ferrer.
    The entries are computed from ``e^-eps`` (so that the off-diagonal ones stay
    positive for large epsilon; beyond about 745 they are the smallest positive
    double) and the entries that rounding put below the budget are raised
    (:func:`pramkit.privacy.exact.form8_within_budget`): the stored matrix's epsilon
    is at most ``epsilon`` exactly.

    The matrix is form (8), stored compactly by its diagonal q and off-diagonal
    entries w (:meth:`pramkit.PramMatrix.form8`): O(S) memory and a closed-form
    epsilon, so that S = 100 000 categories need no S x S array.  A release
    perturbs it with the engine's form (8) sampler; before it was stored
    densely and sampled by the alias method, so the released values for the
    same key differ from those of earlier versions.

    Parameters
    ----------
    categories : sequence of labels
        The S >= 2 categories, in the order of rows and columns.
    epsilon : float
        The privacy budget, natural log units (positive, finite).

    Returns
    -------
    PramMatrix
        The S x S matrix, compact (form (8)), bistochastic and symmetric, with
        provenance ``randomized_response`` and its epsilon.

    Raises
    ------
    ParameterError
        If epsilon is not a positive finite number, or fewer than two
        categories are given.

    References
    ----------
    Ruiz and Domingo-Ferrer, equation (2).  Ayed, Battiston and Camerlenghi,
    section 3.1 (the symmetric optimum of form (8)).

    Examples
    --------
    With ``e^eps = 2`` and S = 3, ``q = 2 / (2 + 2) = 1/2`` and each other
    category gets ``1/4``: the log-ratio in every column is ``log 2``.

    >>> m = randomized_response(["a", "b", "c"], math.log(2))
    >>> m.matrix.round(12).tolist()
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    >>> m.epsilon <= math.log(2), m.is_bistochastic, m.is_compact
    (True, True, True)
    """
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ParameterError(f"epsilon must be a positive finite number, got {epsilon!r}")
    s = len(categories)
    if s < 2:
        raise ParameterError("randomized response needs at least two categories")
    shrink = math.exp(-epsilon)
    q = 1.0 / (1.0 + (s - 1) * shrink)
    off = max(shrink / (1.0 + (s - 1) * shrink), math.ulp(0.0))
    q_stored, w_stored = form8_within_budget(np.full(s, q), np.full(s, off), epsilon)
    return PramMatrix.form8(q_stored, w_stored, categories,
                            Provenance(method="randomized_response", parameters={"epsilon": float(epsilon)}))


def float_array(value: ArrayLike, name: str) -> np.ndarray:
    """``value`` as a float array, or a :class:`ParameterError` naming the option.

    Parameters
    ----------
    value : array_like
        A number or a (nested) list of numbers.
    name : str
        The option's name, for the error message.

    Returns
    -------
    numpy.ndarray
        ``value`` as float (0-d for a number).

    Raises
    ------
    ParameterError
        If ``value`` cannot be read as numbers.

    Examples
    --------
    >>> float_array([1, 0.5], "the keep probability").tolist()
    [1.0, 0.5]
    >>> float_array("often", "the keep probability")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the keep probability must be a number or a list of numbers, got 'often'
    """
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number or a list of numbers, got {value!r}") from None


def _unit_interval(value: float, name: str) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1):
        raise ParameterError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def keep_probability(
    categories: Sequence[Label],
    keep: float | ArrayLike,
    *,
    bandwidth: int | None = None,
) -> PramMatrix:
    """mu-ARGUS PRAM: keep category k with probability ``keep`` (one number,
    or one per category); otherwise release another category chosen uniformly,
    among all the others or, with ``bandwidth`` b, among those whose position
    in ``categories`` differs from k's by at most b (ordinal codes).

    Without a bandwidth this is form (8) (bistochastic when ``keep`` is one
    number); with a bandwidth, categories near the ends have fewer neighbours,
    so the columns need not sum to 1.

    Parameters
    ----------
    categories : sequence of labels
        The S >= 1 categories, in order (the order is the ordinal code for
        ``bandwidth``).
    keep : float or array_like, shape (S,)
        Probability of keeping each category, in [0, 1].
    bandwidth : int, optional
        Move only to categories at most this many positions away (>= 1).

    Returns
    -------
    PramMatrix
        Row-stochastic; provenance ``keep_probability`` with ``keep`` and
        ``bandwidth``.

    Raises
    ------
    ParameterError
        If no category is given, a keep probability is outside [0, 1], their
        number is neither 1 nor S, or the bandwidth is not a whole number >= 1.

    Examples
    --------
    One keep probability gives form (8), a bistochastic matrix:

    >>> m = keep_probability(["a", "b", "c"], 0.8)
    >>> m.matrix.round(12).tolist(), m.is_bistochastic
    ([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], True)

    With bandwidth 1 an end category has one neighbour, an inner one two; rows
    still sum to 1, columns do not:

    >>> b = keep_probability([1, 2, 3, 4], 0.6, bandwidth=1).matrix
    >>> b.round(12).tolist()
    [[0.6, 0.4, 0.0, 0.0], [0.2, 0.6, 0.2, 0.0], [0.0, 0.2, 0.6, 0.2], [0.0, 0.0, 0.4, 0.6]]
    >>> b.sum(axis=1).round(12).tolist(), b.sum(axis=0).round(12).tolist()
    ([1.0, 1.0, 1.0, 1.0], [0.8, 1.2, 1.2, 0.8])
    """
    s = len(categories)
    if s == 0:
        raise ParameterError("give at least one category")
    kv = float_array(keep, "the keep probability")
    q = np.full(s, _unit_interval(float(kv), "the keep probability")) if kv.ndim == 0 else kv
    if q.shape != (s,):
        raise ParameterError(f"give one keep probability or one per category ({s}), got {kv.size}")
    for v in q:
        _unit_interval(float(v), "every keep probability")
    params: dict = {"keep": q.tolist() if kv.ndim else float(kv), "bandwidth": bandwidth}
    prov = Provenance(method="keep_probability", parameters=params)
    if bandwidth is None:
        return PramMatrix.from_diagonal(q, categories, prov)
    if not isinstance(bandwidth, (int, np.integer)) or isinstance(bandwidth, bool) or bandwidth < 1:
        raise ParameterError(f"the bandwidth must be a whole number >= 1, got {bandwidth!r}")
    if s == 1:
        return PramMatrix.from_diagonal(q, categories, prov)
    idx = np.arange(s)
    dist = np.abs(idx[:, None] - idx[None, :])
    near = (dist >= 1) & (dist <= bandwidth)
    m = near * ((1.0 - q) / near.sum(axis=1))[:, None]
    m[idx, idx] = q
    return PramMatrix(m, tuple(categories), prov)


def bayes_inverse(p: ArrayLike, matrix: PramMatrix) -> PramMatrix:
    """The backward matrix ``Q[j, k] = P(X = k | Z = j)`` for X ~ p and Z | X ~ P.

    ``Q[j, k] = P[k, j] p_k / lambda_j`` with ``lambda = p P`` (Bayes' rule).  A
    released category that never occurs (``lambda_j = 0``) gets ``Q[j, j] = 1``;
    it does not affect ``P Q``'s invariance.

    Parameters
    ----------
    p : array_like, shape (S,)
        Counts or proportions of the original categories (normalised).
    matrix : PramMatrix
        The forward matrix P.

    Returns
    -------
    PramMatrix
        Q, row-stochastic, with the same categories; provenance
        ``bayes_inverse`` with p.

    Raises
    ------
    ParameterError
        If p is not a valid distribution of the matrix's S categories.

    References
    ----------
    Gouweleeuw, Kooiman, Willenborg and de Wolf (1998); Shlomo and Skinner
    (2012), section 4.

    Examples
    --------
    Q reverses P: the released distribution ``lambda = p P`` goes back to p
    (``lambda Q = p``).

    >>> p = np.array([0.5, 0.3, 0.2])
    >>> forward = keep_probability(["a", "b", "c"], 0.8)
    >>> back = bayes_inverse(p, forward)
    >>> back.matrix.round(4).tolist()
    [[0.8889, 0.0667, 0.0444], [0.1613, 0.7742, 0.0645], [0.2083, 0.125, 0.6667]]
    >>> bool(np.allclose((p @ forward.matrix) @ back.matrix, p))
    True
    """
    pv = as_distribution(p, matrix.size)
    m = matrix.matrix
    lam = pv @ m
    seen = lam > 0
    q = np.zeros_like(m)
    q[seen] = (m.T[seen] * pv[None, :]) / lam[seen, None]
    q[np.flatnonzero(~seen), np.flatnonzero(~seen)] = 1.0
    return PramMatrix(q, matrix.categories, Provenance(method="bayes_inverse", parameters={"p": pv.tolist()}))


def invariant_pram(p: ArrayLike, matrix: PramMatrix, *, alpha: float = 1.0) -> PramMatrix:
    """Invariant PRAM built from any P: ``alpha P Q + (1 - alpha) I`` with Q the
    :func:`bayes_inverse` of P w.r.t. p, so that ``p R = p`` (Gouweleeuw et al.
    1998, section 4; alpha = 1 gives R = P Q itself).

    Parameters
    ----------
    p : array_like, shape (S,)
        Counts or proportions of the categories (normalised).
    matrix : PramMatrix
        The base matrix P.
    alpha : float
        Weight of ``P Q`` against the identity, in [0, 1].

    Returns
    -------
    PramMatrix
        R, with provenance ``invariant_pram`` (p, alpha and the base's
        provenance) and the certificate ``max_abs_invariance_error``,
        ``max |p R - p|``.

    Raises
    ------
    ParameterError
        If alpha is outside [0, 1] or p is not a valid distribution of the
        matrix's categories.

    References
    ----------
    Shlomo and Skinner (2012), section 4: invariant PRAM, ``v M = v``.

    Examples
    --------
    The expected released distribution equals the original one (``p R = p``),
    and each row of R still sums to 1:

    >>> p = np.array([0.5, 0.3, 0.2])
    >>> r = invariant_pram(p, keep_probability(["a", "b", "c"], 0.8))
    >>> r.matrix.round(4).tolist()
    [[0.7481, 0.1433, 0.1087], [0.2388, 0.6385, 0.1227], [0.2717, 0.1841, 0.5442]]
    >>> bool(np.allclose(p @ r.matrix, p)), r.provenance.certificate["max_abs_invariance_error"] < 1e-15
    (True, True)
    """
    a = _unit_interval(alpha, "alpha")
    pv = as_distribution(p, matrix.size)
    r = matrix.matrix @ bayes_inverse(pv, matrix).matrix
    final = a * r + (1.0 - a) * np.eye(matrix.size)
    err = float(np.abs(pv @ final - pv).max())
    return PramMatrix(final, matrix.categories, Provenance(
        method="invariant_pram",
        parameters={"p": pv.tolist(), "alpha": a, "base": matrix.provenance.to_dict()},
        certificate={"max_abs_invariance_error": err},
    ))


def sdcmicro_pram(
    categories: Sequence[Label],
    p: ArrayLike,
    *,
    pd: float = 0.8,
    alpha: float = 0.5,
    diagonal: Literal["uniform", "fixed"] = "uniform",
    seed: int | None = None,
) -> PramMatrix:
    """Invariant PRAM as documented for sdcMicro's ``pram(pd = 0.8, alpha = 0.5)``.

    1. P: diagonal entries drawn from U(pd, 1) (``diagonal="uniform"``, with a
       NumPy generator seeded by ``seed``) or all equal to pd (``"fixed"``);
       the rest of each row spread uniformly over the other categories.
    2. Q: the Bayes inversion of P w.r.t. the observed proportions p.
    3. ``alpha P Q + (1 - alpha) I``, invariant: ``p R = p``.

    The drawn diagonal of P is recorded in the provenance, so the design can be
    rebuilt.

    Parameters
    ----------
    categories : sequence of labels
        The S >= 2 categories.
    p : array_like, shape (S,)
        Observed counts or proportions of the categories.
    pd : float
        Lower end of P's diagonal (``"uniform"``) or its value (``"fixed"``),
        in [0, 1].
    alpha : float
        Weight of ``P Q`` against the identity, in [0, 1].
    diagonal : {"uniform", "fixed"}
        How P's diagonal is chosen.
    seed : int, optional
        Seed of the draw of P's diagonal (``"uniform"`` only).

    Returns
    -------
    PramMatrix
        The invariant matrix, provenance ``sdcmicro_pram`` with the drawn
        ``base_diagonal`` and the certificate ``max_abs_invariance_error``.

    Raises
    ------
    ParameterError
        If fewer than two categories are given, pd or alpha is outside
        [0, 1], ``diagonal`` is unknown, or p is not a distribution of S
        categories.

    References
    ----------
    Gouweleeuw, Kooiman, Willenborg and de Wolf (1998); Shlomo and Skinner
    (2012), section 4.

    Examples
    --------
    The same seed rebuilds the same matrix; p is invariant whatever the draw:

    >>> p = [0.5, 0.3, 0.2]
    >>> m = sdcmicro_pram(["a", "b", "c"], p, seed=1)
    >>> [round(d, 4) for d in m.provenance.parameters["base_diagonal"]]
    [0.9024, 0.9901, 0.8288]
    >>> bool(np.allclose(np.array(p) @ m.matrix, p)), m == sdcmicro_pram(["a", "b", "c"], p, seed=1)
    (True, True)
    >>> m.diagonal.round(4).tolist()
    [0.9382, 0.9344, 0.8621]
    """
    s = len(categories)
    if s < 2:
        raise ParameterError("invariant PRAM needs at least two categories")
    lo = _unit_interval(pd, "pd")
    if diagonal == "uniform":
        d = np.random.default_rng(seed).uniform(lo, 1.0, size=s)
    elif diagonal == "fixed":
        d = np.full(s, lo)
    else:
        raise ParameterError(f"diagonal must be 'uniform' or 'fixed', got {diagonal!r}")
    base = PramMatrix.from_diagonal(d, categories, Provenance(
        method="sdcmicro_base", parameters={"pd": lo, "diagonal": diagonal, "seed": seed, "drawn": d.tolist()},
    ))
    out = invariant_pram(p, base, alpha=alpha)
    return out.with_provenance(Provenance(
        method="sdcmicro_pram",
        parameters={**out.provenance.parameters, "pd": lo, "diagonal": diagonal, "seed": seed,
                    "base_diagonal": d.tolist()},
        certificate=out.provenance.certificate,
    ))
