"""The privacy-utility curve: mutual information I(X; Z) (Ayed, Battiston and Camerlenghi,
section 2.2), L2 loss and overall variance inflation over a grid of epsilon for any design
``epsilon -> PramMatrix`` (randomized response by default), and its plot as a PNG."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from pramkit._figure import new_figure, place_axes, plain_log, png_bytes, ytick_inches
from pramkit.atomic import write_bytes_atomic
from pramkit.design.classic import randomized_response
from pramkit.errors import MatrixError, ParameterError
from pramkit.estimate.identifiability import rank_tolerance
from pramkit.estimate.result import table_inputs
from pramkit.information import mutual_information
from pramkit.matrix import PramMatrix
from pramkit.utility.divergence import _distribution
from pramkit.utility.loss import SINGULAR, inflation_of, invertible, l2_loss_of, moment_variances_of

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
    """The epsilon of ``matrix``, I(X; Z), the L2 loss for the counts ``n p`` and the overall variance
    inflation, as :func:`mutual_information`, :func:`l2_loss` and :func:`variance_inflation` compute
    them, with one check and one inverse of the matrix for both (:func:`symmetric_form8_utility` in
    closed form for randomized response)."""
    if matrix.is_compact and matrix.size == p.size:
        q, w = matrix.form8_q, matrix.form8_w
        assert q is not None and w is not None  # compact
        if q.min() == q.max() and w.min() == w.max():
            return (matrix.epsilon, *symmetric_form8_utility(p, float(q[0]), float(w[0]), n))
    epsilon, information = matrix.epsilon, mutual_information(p, matrix.matrix)
    factors = invertible([matrix.matrix])  # singular (a category never released among them): MatrixError
    u0, mats, total = table_inputs(n * p, [matrix])
    loss = l2_loss_of(u0, mats, factors, total)
    return epsilon, information, loss, inflation_of(*moment_variances_of(p, mats, factors)).overall


def symmetric_form8_utility(p: np.ndarray, q: float, w: float, n: int) -> tuple[float, float, float]:
    """I(X; Z), the L2 loss and the overall variance inflation of the matrix ``M = (q - w) I + w J``
    (form (8) with one q and one w: randomized response) in closed form, O(S).

    With ``d = q - w`` and the row sum ``r = d + S w``, M has the singular value r once and
    ``|d|`` S - 1 times, and ``M^{-1} = (I - (w / r) J) / d``: diagonal ``a = (1 - w / r) / d``,
    off-diagonal ``b = -(w / r) / d``.  With ``lam = M^T p = d p + w`` (the released shares):

    * ``I(X; Z) = sum_k p_k (q log(q / lam_k) - w log(w / lam_k)) + w sum_j log(w / lam_j)``,
      clamped at 0 as :func:`pramkit.information.mutual_information` clamps it;
    * :func:`pramkit.utility.l2_loss`'s ``h`` is ``(a^2 + (S - 1) b^2) r`` in every category;
    * ``n Var_PRAM(p_hat_c) = a^2 lam_c + b^2 (sum(lam) - lam_c) - p_c^2`` (clipped at 0) against
      ``p_c (1 - p_c)`` (:func:`pramkit.utility.loss.moment_variances`).

    They agree with the dense computations to rounding; M is singular, as
    :func:`pramkit.estimate.result.condition_number` decides, when ``|d|`` is at most
    ``max(r, |d|) S eps``.

    Parameters
    ----------
    p : numpy.ndarray, shape (S,)
        The proportions (summing to 1).
    q, w : float
        The diagonal and off-diagonal entries.
    n : int
        The number of records (for the L2 loss of the counts ``n p``).

    Returns
    -------
    tuple of float
        ``(I(X; Z) in nats, L2 loss, overall variance inflation)``.

    Raises
    ------
    MatrixError
        If M is singular.
    ParameterError
        If p puts all its mass on one category.

    Examples
    --------
    Randomized response keeping with 3/4 on two categories (see :func:`pramkit.utility.l2_loss`
    and :func:`pramkit.utility.variance_inflation`):

    >>> information, loss, inflation = symmetric_form8_utility(np.array([0.5, 0.5]), 0.75, 0.25, 100)
    >>> round(information, 12), round(loss, 12), round(inflation, 12)
    (0.130812035941, 0.015, 4.0)
    >>> rr = PramMatrix([[0.75, 0.25], [0.25, 0.75]])
    >>> bool(np.isclose(information, mutual_information([0.5, 0.5], rr.matrix), rtol=1e-12, atol=0))
    True
    """
    s = p.size
    d = q - w
    r = d + s * w
    if abs(d) <= rank_tolerance([max(r, abs(d))], s):
        raise MatrixError(SINGULAR)
    lam = d * p + w
    information = max(float(np.sum(p * (q * np.log(q / lam) - w * np.log(w / lam))) + w * np.sum(np.log(w / lam))),
                      0.0)
    u0, _, total = table_inputs(n * p, [None])
    a, b = (1.0 - w / r) / d, -(w / r) / d
    loss = float(u0.sum() * (a * a + (s - 1) * b * b) * r) / total**2 - 1.0 / total
    pv = p / p.sum()
    pram = np.maximum(a * a * lam + b * b * (lam.sum() - lam) - pv * pv, 0.0)
    none = np.maximum(pv - pv * pv, 0.0)
    return information, loss, inflation_of(pram, none).overall


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


#: Dots per inch of the privacy-utility plot.
CURVE_DPI = 110


def curve_figure(curve: PrivacyUtilityCurve, *, xlabel: str = "epsilon per record [nats]") -> Figure:
    """The privacy-utility plot as a figure at :data:`CURVE_DPI`: I(X; Z) in nats (left) and the
    overall variance inflation (right, log scale) against epsilon, the chosen point marked.

    Parameters
    ----------
    curve : PrivacyUtilityCurve
        From :func:`privacy_utility_curve`.
    xlabel : str, optional
        Label of the horizontal axes.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (constrained layout), for :func:`pramkit._figure.png_bytes`.

    Examples
    --------
    >>> curve = privacy_utility_curve([0.5, 0.3, 0.2], [0.5, 1.0, 2.0], n=1000, chosen=1.0)
    >>> fig = curve_figure(curve)
    >>> [ax.get_ylabel() for ax in fig.axes], fig.dpi
    (['mutual information I(X; Z) [nats]', 'variance inflation of the estimator [ratio]'], 110)
    """
    fig = new_figure("the privacy-utility plot", figsize=(9, 3.6), dpi=CURVE_DPI)
    left, right = fig.subplots(1, 2)
    left.plot(curve.epsilon, curve.mutual_information_nats, "-", color="tab:blue")
    left.set_ylabel("mutual information I(X; Z) [nats]")
    right.plot(curve.epsilon, curve.variance_inflation, "-", color="tab:red")
    right.set_yscale("log")
    plain_log(right.yaxis)
    right.set_ylabel("variance inflation of the estimator [ratio]")
    for ax in (left, right):
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    if curve.chosen is not None and curve.chosen_values is not None:
        mi = curve.chosen_values["mutual_information_nats"]
        vi = curve.chosen_values["variance_inflation"]
        left.plot([curve.chosen], [mi], "o", color="black")
        # each value in the corner its curve leaves empty (information rises with epsilon, inflation falls),
        # a line to its point
        line = {"arrowstyle": "-", "color": "0.45", "linewidth": 0.8}
        left.annotate(f"epsilon = {curve.chosen:g}\nI = {mi:.3g} nats", (curve.chosen, mi), xytext=(0.04, 0.95),
                      textcoords="axes fraction", va="top", arrowprops=line)
        if np.isfinite(vi):  # NaN: a singular matrix, whose unbiased estimator does not exist
            right.plot([curve.chosen], [vi], "o", color="black")
            right.annotate(f"epsilon = {curve.chosen:g}\ninflation = {vi:.3g}", (curve.chosen, vi),
                           xytext=(0.96, 0.95), textcoords="axes fraction", ha="right", va="top", arrowprops=line)
    fig.suptitle(f"Privacy-utility curve (n = {curve.n} records)")
    # fixed texts but the ticks' numbers: margins in inches, each panel's from the width of its numbers
    place_axes(fig, left=0.45 + ytick_inches(left), right=0.15, bottom=0.55, top=0.45,
               wspace=0.55 + ytick_inches(right))
    return fig


def plot_privacy_utility(
    curve: PrivacyUtilityCurve, path: str | Path, *, force: bool = False,
    xlabel: str = "epsilon per record [nats]",
) -> Path:
    """Write the curve as a PNG (:func:`curve_figure`): I(X; Z) in nats (left) and the overall
    variance inflation (right, log scale) against epsilon, the chosen point marked.

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
    return write_bytes_atomic(path, png_bytes(curve_figure(curve, xlabel=xlabel)), force=force)
