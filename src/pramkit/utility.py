"""Utility of a release: distances between tables, the L2 loss, variance inflation,
and the privacy-utility curve.

* Distances between two distributions on the same cells: Kullback-Leibler
  divergence (nats), Hellinger distance and total-variation distance.
* The L2 loss of Cator, Hensbergen and Rozenholc (section 3), the expected
  squared error of the moment estimator (4) summed over the cells, given the
  original counts ``U_0`` (PRAM the only randomness):

      l2(P) = (1/n^2) sum_i sum_{k,l} (P^{-1}_{lk})^2 P_{xi(i) l} - 1/n
            = (1/n^2) sum_m U_0(m) h(m) - 1/n,   h = P (row sums of (P^{-1})∘(P^{-1})).

  For independently perturbed variables ``h`` factorises, ``h(m) = prod_a h_a(m_a)``
  (``h_a = 1`` on an unperturbed axis), so the loss costs ``O(K sum_a S_a)``.
* The variance inflation of the moment estimator relative to no perturbation,
  for a file of n records sampled from p: per cell,
  ``Var_PRAM(p_hat_c) / Var_none(p_hat_c)`` with
  ``n Var_PRAM = sum_d A[c, d]^2 lam_d - p_c^2`` (``A = (M^T)^{-1}``,
  ``lam = M^T p``) and ``n Var_none = p_c (1 - p_c)``; overall, the ratio of
  the sums.  Neither depends on n.
* The privacy-utility curve: mutual information I(X; Z) (Ayed, Battiston and
  Camerlenghi, section 2.2), L2 loss and overall variance inflation over a
  grid of epsilon for any design ``epsilon -> PramMatrix`` (randomized
  response by default), and its plot as a PNG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import rel_entr

from pramkit.atomic import atomic_path
from pramkit.design.classic import randomized_response
from pramkit.errors import MatrixError, ParameterError
from pramkit.estimate.axes import contract, inverses
from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.result import condition_number, table_inputs
from pramkit.information import mutual_information
from pramkit.matrix import PramMatrix


def _distribution(x: ArrayLike, what: str) -> np.ndarray:
    v = np.asarray(x, dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ParameterError(f"{what} must be a non-empty array of finite numbers")
    if np.any(v < 0):
        raise ParameterError(
            f"{what} has a negative entry ({v.min():g}); distances need a distribution "
            "(use the MLE, which stays on the simplex, rather than the moment estimate)"
        )
    total = v.sum()
    if total <= 0:
        raise ParameterError(f"{what} sums to zero")
    return v / total


def _pair(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    pv, qv = _distribution(p, "the first table"), _distribution(q, "the second table")
    if pv.shape != qv.shape:
        raise ParameterError(f"the tables have different shapes {pv.shape} and {qv.shape}")
    return pv, qv


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """KL(p || q) = sum p log(p / q) in nats (tables of counts are normalised); ``inf``
    when q is zero where p is not.

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells.

    Returns
    -------
    float
        The divergence in nats, ``>= 0`` up to rounding (0 iff the normalised
        tables are equal; the sum is not clamped, so equal tables can give
        a value of order -1e-16).

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    Original counts against an estimate (not symmetric in its arguments):

    >>> round(kl_divergence([60, 30, 10], [50, 30, 20]), 6), round(kl_divergence([50, 30, 20], [60, 30, 10]), 6)
    (0.040078, 0.047469)
    >>> abs(kl_divergence([60, 30, 10], [0.6, 0.3, 0.1])) < 1e-15, kl_divergence([1, 1], [1, 0])
    (True, inf)
    """
    pv, qv = _pair(p, q)
    return float(rel_entr(pv, qv).sum())


def hellinger(p: ArrayLike, q: ArrayLike) -> float:
    """Hellinger distance ``sqrt(1 - sum sqrt(p q))``, in [0, 1].

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells.

    Returns
    -------
    float
        0 for equal distributions, 1 for disjoint supports.

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    >>> round(hellinger([60, 30, 10], [50, 30, 20]), 6)
    0.104193
    >>> hellinger([1, 0], [0, 1]), hellinger([2, 2], [0.5, 0.5])
    (1.0, 0.0)
    """
    pv, qv = _pair(p, q)
    return math.sqrt(max(1.0 - float(np.sqrt(pv * qv).sum()), 0.0))


def total_variation(p: ArrayLike, q: ArrayLike) -> float:
    """Total-variation distance ``(1/2) sum |p - q|``, in [0, 1].

    The largest difference between the two distributions' probabilities of
    any set of cells.

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells.

    Returns
    -------
    float
        0 for equal distributions, 1 for disjoint supports.

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    Moving 10% of the records from the first cell to the last:

    >>> round(total_variation([60, 30, 10], [50, 30, 20]), 12)
    0.1
    >>> total_variation([[1, 0], [0, 0]], [[0, 0], [0, 1]])    # tables of any shape
    1.0
    """
    pv, qv = _pair(p, q)
    return 0.5 * float(np.abs(pv - qv).sum())


@dataclass(frozen=True)
class Distances:
    """Distances between two tables (each normalised to a distribution).

    kl_nats: KL(first || second) in nats
    hellinger: Hellinger distance (unitless, in [0, 1])
    total_variation: total-variation distance (unitless, in [0, 1])

    Examples
    --------
    The two distances bound each other, ``H^2 <= TV <= sqrt(2) H``:

    >>> d = distances([60, 30, 10], [50, 30, 20])
    >>> d.hellinger ** 2 <= d.total_variation <= math.sqrt(2) * d.hellinger
    True
    """

    kl_nats: float
    hellinger: float
    total_variation: float


def distances(p: ArrayLike, q: ArrayLike) -> Distances:
    """KL divergence, Hellinger and total-variation distance between two tables.

    Parameters
    ----------
    p, q : array-like, same shape
        Two tables of counts or proportions on the same cells (e.g. the
        original table and an estimate from the released file).

    Returns
    -------
    Distances
        :func:`kl_divergence` (first against second), :func:`hellinger` and
        :func:`total_variation`.

    Raises
    ------
    ParameterError
        If a table is empty, has a non-finite or negative entry, sums to
        zero, or the two tables differ in shape.

    Examples
    --------
    >>> d = distances([60, 30, 10], [50, 30, 20])
    >>> round(d.kl_nats, 6), round(d.hellinger, 6), round(d.total_variation, 6)
    (0.040078, 0.104193, 0.1)
    """
    return Distances(kl_divergence(p, q), hellinger(p, q), total_variation(p, q))


def _axis_matrices(matrices: PramMatrix | Sequence[PramMatrix | None]) -> list[PramMatrix | None]:
    return [matrices] if isinstance(matrices, PramMatrix) else list(matrices)


def _invertible(mats: Sequence[np.ndarray | None]) -> tuple[np.ndarray | None, ...]:
    if math.isinf(condition_number(mats)):
        raise MatrixError("the transition matrix is singular: the moment estimator, its loss and variance do not exist")
    return inverses(mats)


def l2_loss(counts: ArrayLike, matrices: PramMatrix | Sequence[PramMatrix | None]) -> float:
    """Cator's L2 loss l2(P): expected sum over cells of the squared error of the
    estimated proportions, given the original counts (a table, one axis per
    variable; ``None`` for an unperturbed axis).  Units: proportion squared.

    Cator, Hensbergen and Rozenholc, section 3 (module docstring):
    ``l2(P) = (1/n^2) sum_m U_0(m) h(m) - 1/n`` with ``h = P (row sums of
    (P^{-1})∘(P^{-1}))``, factorised over the axes.

    Parameters
    ----------
    counts : array-like, one axis per variable
        The original counts ``U_0`` (non-negative; n is their total).
    matrices : PramMatrix, or a sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable (a single
        matrix for a 1-D table).

    Returns
    -------
    float
        The expected squared error of the moment estimator (4), summed over cells.

    Raises
    ------
    MatrixError
        If a matrix is singular (the estimator does not exist).
    ParameterError
        If an axis is given something other than a PramMatrix or None.
    DataError
        If the counts are invalid or do not match the matrices.

    Examples
    --------
    Randomized response keeping with 3/4 on two categories has
    ``P^{-1} = [[1.5, -0.5], [-0.5, 1.5]]``, so ``h = 2.5`` for every
    category and ``l2 = 2.5/n - 1/n = 1.5/n`` whatever the counts:

    >>> from pramkit import PramMatrix
    >>> rr = PramMatrix([[0.75, 0.25], [0.25, 0.75]])
    >>> math.isclose(l2_loss([90, 10], rr), 1.5 / 100), math.isclose(l2_loss([50, 50], rr), 1.5 / 100)
    (True, True)

    On a table, an unperturbed axis adds no loss; perturbing both axes
    multiplies the ``h`` (``2.5^2 = 6.25``):

    >>> table = [[40, 10], [20, 30]]
    >>> math.isclose(l2_loss(table, [rr, None]), 1.5 / 100), math.isclose(l2_loss(table, [rr, rr]), 5.25 / 100)
    (True, True)
    """
    u0, mats, n = table_inputs(counts, _axis_matrices(matrices))
    factors = _invertible(mats)
    h = [None if m is None else (m @ (w * w).sum(axis=1))[:, None] for m, w in zip(mats, factors)]
    return float(contract(u0, h).sum()) / n**2 - 1.0 / n


@dataclass(frozen=True)
class VarianceInflation:
    """Variance of the moment estimator relative to no perturbation.

    per_cell: ``Var_PRAM / Var_none`` for each cell (NaN where p_c is 0 or 1)
    overall: ratio of the summed variances over all cells

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> vi = variance_inflation([0.9, 0.1], PramMatrix([[0.75, 0.25], [0.25, 0.75]]))
    >>> vi.per_cell.round(4).tolist(), round(vi.overall, 4)
    ([9.3333, 9.3333], 9.3333)
    """

    per_cell: np.ndarray
    overall: float


def variance_inflation(p: ArrayLike, matrices: PramMatrix | Sequence[PramMatrix | None]) -> VarianceInflation:
    """Variance inflation of the moment estimator of a table with cell probabilities ``p``.

    Per cell ``Var_PRAM(p_hat_c) / Var_none(p_hat_c)`` with
    ``n Var_PRAM = sum_d A[c, d]^2 lam_d - p_c^2`` (``A = (M^T)^{-1}``,
    ``lam = M^T p``) and ``n Var_none = p_c (1 - p_c)`` (module docstring);
    neither depends on n.

    Parameters
    ----------
    p : array-like, one axis per variable
        Cell probabilities (or counts: they are normalised).
    matrices : PramMatrix, or a sequence of PramMatrix or None
        One matrix per axis, ``None`` for an unperturbed variable.

    Returns
    -------
    VarianceInflation
        The ratio per cell and overall.

    Raises
    ------
    MatrixError
        If a matrix is singular.
    ParameterError
        If p puts all its mass on one cell.
    DataError
        If p is invalid or does not match the matrices.

    Examples
    --------
    For two categories and randomized response keeping with probability q,
    ``Var_PRAM = lam (1 - lam) / (2q - 1)^2``; at ``p = (1/2, 1/2)`` and
    ``q = 3/4`` the variance is four times that without perturbation:

    >>> from pramkit import PramMatrix
    >>> rr = PramMatrix([[0.75, 0.25], [0.25, 0.75]])
    >>> variance_inflation([0.5, 0.5], rr).overall
    4.0
    >>> vi = variance_inflation([0.9, 0.1], rr)         # lam = (0.7, 0.3)
    >>> math.isclose(vi.overall, 0.7 * 0.3 / 0.25 / (0.9 * 0.1))
    True
    """
    pv, mats, _ = table_inputs(p, _axis_matrices(matrices))
    pv = pv / pv.sum()
    factors = _invertible(mats)
    lam = contract(pv, mats)
    pram = CountCovariance(factors, lam, pv, 1, "multinomial").cell_variances()
    none = CountCovariance((None,) * pv.ndim, pv, pv, 1, "multinomial").cell_variances()
    if none.sum() <= 0:
        raise ParameterError("p puts all its mass on one cell: "
                             "without perturbation there is no variance to compare with")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_cell = np.where(none > 0, pram / none, np.nan)
    return VarianceInflation(per_cell, float(pram.sum() / none.sum()))


@dataclass(frozen=True)
class PrivacyUtilityCurve:
    """Utility of a design over a grid of epsilon, for a file of n records with proportions p.

    epsilon: the grid (per record, natural log units)
    matrix_epsilon: the exact epsilon of each designed matrix
    mutual_information_nats: I(X; Z) in nats
    l2_loss: Cator's l2(P) for the counts n p (proportion squared)
    variance_inflation: overall variance inflation of the moment estimator
    n: the number of records
    chosen: the marked epsilon (or None), with its values in ``chosen_values``

    Examples
    --------
    >>> curve = privacy_utility_curve([0.5, 0.3, 0.2], [0.5, 1.0, 2.0], n=1000, chosen=1.0)
    >>> curve.mutual_information_nats.round(4).tolist()
    [0.028, 0.1141, 0.4012]
    >>> curve.variance_inflation.round(2).tolist()
    [33.94, 8.03, 2.25]
    >>> round(curve.chosen_values["variance_inflation"], 2)
    8.03
    """

    epsilon: np.ndarray
    matrix_epsilon: np.ndarray
    mutual_information_nats: np.ndarray
    l2_loss: np.ndarray
    variance_inflation: np.ndarray
    n: int
    chosen: float | None
    chosen_values: dict[str, float] | None


def _utility_at(p: np.ndarray, matrix: PramMatrix, n: int) -> tuple[float, float, float, float]:
    return (
        matrix.epsilon,
        mutual_information(p, matrix.matrix),
        l2_loss(n * p, matrix),
        variance_inflation(p, matrix).overall,
    )


def privacy_utility_curve(
    p: ArrayLike,
    epsilons: ArrayLike,
    *,
    n: int,
    design: Callable[[float], PramMatrix] | None = None,
    chosen: float | None = None,
) -> PrivacyUtilityCurve:
    """Utility against epsilon for ``design`` (default: randomized response on
    the categories of p), for a file of ``n`` records with proportions ``p``.

    At each epsilon of the grid: the epsilon of the designed matrix, I(X; Z)
    (Ayed, Battiston and Camerlenghi, section 2.2), Cator's l2(P) for the
    counts ``n p`` and the overall variance inflation.

    Parameters
    ----------
    p : array-like, shape (S,)
        Category proportions (or counts: they are normalised).
    epsilons : array-like
        The grid: positive finite epsilons (per record, nats).
    n : int
        The number of records, >= 1 (for the L2 loss).
    design : callable, optional
        ``epsilon -> PramMatrix``; default
        :func:`pramkit.design.classic.randomized_response` on ``0, ..., S - 1``.
    chosen : float, optional
        An epsilon to mark (evaluated even if not on the grid).

    Returns
    -------
    PrivacyUtilityCurve
        One value per grid point of each measure.

    Raises
    ------
    ParameterError
        If p is not a 1-D distribution, n not a positive integer, or the grid
        empty or not positive and finite.
    MatrixError
        If a designed matrix is singular.

    Examples
    --------
    More epsilon buys more information and less variance, and the default
    design spends exactly the epsilon asked for:

    >>> curve = privacy_utility_curve([0.5, 0.3, 0.2], [0.5, 1.0, 2.0], n=1000)
    >>> np.allclose(curve.matrix_epsilon, curve.epsilon)
    True
    >>> bool(np.all(np.diff(curve.mutual_information_nats) > 0) and np.all(np.diff(curve.variance_inflation) < 0))
    True
    >>> bool(np.all(np.diff(curve.l2_loss) < 0)), curve.chosen is None
    (True, True)
    """
    pv = _distribution(p, "p")
    if pv.ndim != 1:
        raise ParameterError("p must be a 1-D vector of proportions")
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ParameterError(f"n must be a positive integer, got {n!r}")
    eps = np.asarray(epsilons, dtype=float)
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise ParameterError("epsilons must be a non-empty 1-D array of positive finite numbers")
    make = design or (lambda e: randomized_response(list(range(pv.size)), e))
    rows = np.array([_utility_at(pv, make(float(e)), int(n)) for e in eps])
    values = None
    if chosen is not None:
        c = _utility_at(pv, make(float(chosen)), int(n))
        values = dict(zip(("matrix_epsilon", "mutual_information_nats", "l2_loss", "variance_inflation"), c))
    return PrivacyUtilityCurve(eps, rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], int(n),
                               None if chosen is None else float(chosen), values)


def plot_privacy_utility(
    curve: PrivacyUtilityCurve, path: str | Path, *, force: bool = False,
    xlabel: str = "epsilon per record [nats]",
) -> Path:
    """Write the curve as a PNG: I(X; Z) in nats (left) and the overall variance
    inflation (right, log scale) against epsilon, the chosen point marked.

    Parameters
    ----------
    curve : PrivacyUtilityCurve
        From :func:`privacy_utility_curve`.
    path : str or pathlib.Path
        The PNG file to write (atomically).
    force : bool, default False
        Overwrite an existing file.
    xlabel : str, optional
        Label of the horizontal axes.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    OutputExistsError
        If ``path`` exists and ``force`` is false.

    Examples
    --------
    >>> import tempfile
    >>> curve = privacy_utility_curve([0.5, 0.3, 0.2], [0.5, 1.0, 2.0], n=1000, chosen=1.0)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     png = plot_privacy_utility(curve, Path(folder) / "curve.png")
    ...     png.name, png.read_bytes()[:4]
    ('curve.png', b'\\x89PNG')
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    left.plot(curve.epsilon, curve.mutual_information_nats, "-", color="tab:blue")
    left.set_ylabel("mutual information I(X; Z) [nats]")
    right.plot(curve.epsilon, curve.variance_inflation, "-", color="tab:red")
    right.set_yscale("log")
    right.set_ylabel("variance inflation of the estimator [ratio]")
    for ax in (left, right):
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    if curve.chosen is not None and curve.chosen_values is not None:
        mi = curve.chosen_values["mutual_information_nats"]
        vi = curve.chosen_values["variance_inflation"]
        left.plot([curve.chosen], [mi], "o", color="black")
        left.annotate(f"epsilon = {curve.chosen:g}\nI = {mi:.3g} nats", (curve.chosen, mi),
                      textcoords="offset points", xytext=(8, -24))
        right.plot([curve.chosen], [vi], "o", color="black")
        right.annotate(f"epsilon = {curve.chosen:g}\ninflation = {vi:.3g}", (curve.chosen, vi),
                       textcoords="offset points", xytext=(8, 6))
    fig.suptitle(f"Privacy-utility curve (n = {curve.n} records)")
    with atomic_path(path, force=force) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    return Path(path)
