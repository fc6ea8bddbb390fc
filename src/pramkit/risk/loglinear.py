"""Hierarchical Poisson log-linear models fitted by iterative proportional fitting.

Skinner and Holmes (1998); Skinner and Shlomo (2008); Shlomo and Skinner
(2012), sec. 2.1: the sample counts ``f_j`` of the full table of key
combinations (empty cells included) are independent Poisson with mean
``mu_j``, ``log mu_j = z_j' beta``.  For a hierarchical model the score
equations ``sum_j (f_j - mu_j) z_j = 0`` say that the fitted table has the
observed margins of every term of the generating class (Bishop, Fienberg and
Holland 1975, ch. 3), so the MLE is the limit of iterative proportional
fitting (Deming and Stephan 1940): starting from a constant table, scale the
fit in turn so that each generating margin matches the observed one.

Known factors of the means enter as an offset: ``log mu_j = log o_j + z_j' beta``
(``o_j = pi_j``, the sampling fraction of cell ``j``, in Shlomo and Skinner
2012, sec. 2.1, whose score equations read ``sum_j (f_j - pi_j exp(z_j' beta)) z_j = 0``).
Every IPF adjustment multiplies the fit by a function of one generating
margin, so IPF started from the offset table stays in the model's family and
converges to the MLE with that offset.

The fit runs on the cells whose generating margins are all positive, each
margin one ``bincount`` and each adjustment one gather.  IPF converges
linearly, slowly when the table is sparse (about 1% per cycle on the census
table), so the cycles are accelerated by Anderson mixing (Anderson 1965;
Walker and Ni 2011) of the log fit: with ``G`` one IPF cycle and the
residuals ``r_i = G(x_i) - x_i`` of the last few cycles, the next point is
``G(x_k) - sum_i gamma_i (G(x_{i+1}) - G(x_i))``, ``gamma`` the least-squares
solution of ``sum_i gamma_i (r_{i+1} - r_i) = r_k``.  A step is kept only
when it does not lower the Poisson log-likelihood ``sum f log mu - mu``
below that of the plain cycle (which never lowers it); otherwise the plain
cycle is taken and the history restarts.  The Anderson point is an affine
combination of IPF cycles, so it stays in the model's family (with the
offset); the limit is the IPF fixed point: the MLE.

The EM variant (:func:`fit_loglinear_misclassified`) fits the same model to
the true cells when only misclassified counts are observed (sec. 4; Shlomo
and Skinner 2010): ``E f~ = mu M``, with ``M`` applied axis by axis.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import xlogy

from pramkit.errors import DataError, ParameterError

#: Largest dense table the fitter accepts (cells).
MAX_CELLS = 50_000_000

Term = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class LogLinearFit:
    """A fitted hierarchical Poisson log-linear model.

    Parameters
    ----------
    names : tuple of str
        The variables (table axes).
    terms : tuple of tuples of str
        The generating class, each term a tuple of variable names
        (:attr:`formula` writes it as ``a*b + c``).
    fitted : numpy.ndarray
        The fitted means ``mu_j`` on the full table (sample scale).
    observed : numpy.ndarray
        The observed counts ``f_j`` (for misclassified data: the released counts).
    iterations : int
        IPF cycles, extrapolation steps included (EM iterations for misclassified data).
    converged : bool
        Whether the margin discrepancy fell below ``tol`` (and the watched summaries settled).
    max_margin_discrepancy : float
        Largest |fitted - target| over all generating margins, in counts.
    relative_margin_discrepancy : float
        Largest |fitted - target| / max(target, 1) (the stopping rule).
    deviance : float
        G^2 = 2 sum f log(f / mu) - (f - mu) of the observed counts.
    df : int
        Nominal degrees of freedom, cells minus free parameters (Bishop et al.
        1975, sec. 3.8; with zero margins the effective df are smaller).
    seconds : float
        Wall-clock time of the fit.
    extrapolations : int
        Accepted Anderson steps.
    watched : tuple of float
        The watched summaries at the stop (empty when nothing was watched).
    watched_distance : float or None
        Their largest estimated distance to the limit, relative
        (eq. (T) of :func:`geometric_tail`); ``None`` when nothing was watched.

    Examples
    --------
    The fit has the observed margins of every generating term:

    >>> f = np.array([[10.0, 20.0], [30.0, 40.0]])
    >>> fit = fit_loglinear(f, ["a", "b"], model="independence", tol=1e-10)
    >>> fit.formula, fit.terms, fit.df
    ('a + b', (('a',), ('b',)), 1)
    >>> bool(np.allclose(fit.fitted.sum(axis=1), f.sum(axis=1)) and np.allclose(fit.fitted.sum(axis=0), f.sum(axis=0)))
    True
    >>> round(fit.deviance, 4) == round(deviance(f, fit.fitted), 4)
    True
    """

    names: tuple[str, ...]
    terms: tuple[tuple[str, ...], ...]
    fitted: np.ndarray
    observed: np.ndarray
    iterations: int
    converged: bool
    max_margin_discrepancy: float
    relative_margin_discrepancy: float
    deviance: float
    df: int
    seconds: float
    extrapolations: int = 0
    watched: tuple[float, ...] = ()
    watched_distance: float | None = None

    @property
    def formula(self) -> str:
        """The generating class written as ``a*b + c``."""
        return " + ".join("*".join(t) for t in self.terms)

    def diagnostics(self) -> dict[str, object]:
        """The convergence figures as a plain dict (JSON-ready).

        Returns
        -------
        dict
            ``formula``, ``iterations``, ``converged``, the margin discrepancies,
            ``deviance``, ``df``, ``seconds``, ``extrapolations`` and
            ``watched_relative_distance``.

        Examples
        --------
        >>> fit = fit_loglinear(np.array([[10.0, 20.0], [30.0, 40.0]]), ["a", "b"], model="independence")
        >>> d = fit.diagnostics()
        >>> d["formula"], d["converged"], d["df"], round(d["deviance"], 4), d["watched_relative_distance"]
        ('a + b', True, 1, 0.8043, None)
        """
        return {
            "formula": self.formula,
            "iterations": self.iterations,
            "converged": self.converged,
            "max_margin_discrepancy_counts": self.max_margin_discrepancy,
            "relative_margin_discrepancy": self.relative_margin_discrepancy,
            "deviance": self.deviance,
            "df": self.df,
            "seconds": self.seconds,
            "extrapolations": self.extrapolations,
            "watched_relative_distance": self.watched_distance,
        }


def parse_model(model: str | Sequence[Sequence[str]], names: Sequence[str]) -> tuple[Term, ...]:
    """The generating class of a model as tuples of axes.

    ``"independence"`` (main effects), ``"2way"`` (all two-way interactions),
    a formula such as ``"a*b + c"`` or ``"a:b + b:c"`` (``*`` and ``:`` both
    join the variables of one term), or a list of margins ``[["a", "b"], ["c"]]``.
    Variables not mentioned get a main effect.  Terms contained in another
    term are dropped (they are implied).

    Parameters
    ----------
    model : str or sequence of sequences of str
        The model (a leading ``~`` in a formula is allowed).
    names : sequence of str
        The variables, in axis order.

    Returns
    -------
    tuple of tuples of int
        The maximal terms, each a sorted tuple of axes, sorted.

    Raises
    ------
    ParameterError
        A term is empty or names a variable that is not in ``names``.

    Examples
    --------
    >>> parse_model("2way", ["a", "b", "c"])
    ((0, 1), (0, 2), (1, 2))
    >>> parse_model("a*b + c", ["a", "b", "c"]) == parse_model([["a", "b"], ["a"]], ["a", "b", "c"])  # a and c implied
    True
    >>> parse_model("a*d", ["a", "b"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: model 'a*d' names ['d'], which are not key variables ['a', 'b']
    """
    names = tuple(names)
    index = {n: i for i, n in enumerate(names)}
    if isinstance(model, str):
        text = model.strip()
        if text == "independence":
            raw = [[n] for n in names]
        elif text in ("2way", "two-way"):
            raw = [list(p) for p in itertools.combinations(names, 2)] if len(names) > 1 else [[names[0]]]
        else:
            raw = [[v.strip() for v in re.split(r"[*:]", t)] for t in text.lstrip("~").split("+")]
    else:
        raw = [list(t) for t in model]
    terms: list[Term] = []
    for t in raw:
        if not t or any(not v for v in t):
            raise ParameterError(f"model {model!r} has an empty term; write terms like 'a*b + c'")
        unknown = [v for v in t if v not in index]
        if unknown:
            raise ParameterError(f"model {model!r} names {unknown}, which are not key variables {list(names)}")
        terms.append(tuple(sorted({index[v] for v in t})))
    mentioned = {a for t in terms for a in t}
    terms += [(a,) for a in range(len(names)) if a not in mentioned]
    unique = sorted(set(terms), key=lambda t: (-len(t), t))
    maximal = [t for t in unique if not any(set(t) < set(u) for u in unique)]
    return tuple(sorted(maximal))


def _free_parameters(terms: Sequence[Term], shape: Sequence[int]) -> int:
    """Parameters of the hierarchical model: every subset of every term, sum of prod(L - 1)."""
    closure = {s for t in terms for r in range(len(t) + 1) for s in itertools.combinations(t, r)}
    return sum(math.prod(shape[a] - 1 for a in s) for s in closure)


def _other_axes(term: Term, ndim: int) -> tuple[int, ...]:
    return tuple(a for a in range(ndim) if a not in term)


def margins(table: np.ndarray, terms: Sequence[Term]) -> list[np.ndarray]:
    """The margins of ``table`` for each term, kept broadcastable (``keepdims``).

    Parameters
    ----------
    table : numpy.ndarray
        A dense table.
    terms : sequence of tuples of int
        Axes of each margin (:func:`parse_model`).

    Returns
    -------
    list of numpy.ndarray
        One margin per term, with size 1 on the axes summed over.

    Examples
    --------
    >>> t = np.arange(8.0).reshape(2, 2, 2)
    >>> ab, c = margins(t, [(0, 1), (2,)])
    >>> ab.shape, c.shape, c.ravel().tolist()
    ((2, 2, 1), (1, 1, 2), [12.0, 16.0])
    >>> (ab * c / t.sum()).shape  # broadcastable: the fit of model a*b + c, from its two margins
    (2, 2, 2)
    """
    return [table.sum(axis=_other_axes(t, table.ndim), keepdims=True) for t in terms]


def _sparse_margins(table: np.ndarray, terms: Sequence[Term]) -> list[np.ndarray]:
    """:func:`margins` summed over the non-zero cells only (a sample table is mostly empty)."""
    nonzero = np.flatnonzero(table)
    coords = np.unravel_index(nonzero, table.shape)
    values = table.ravel()[nonzero]
    out = []
    for t in terms:
        sizes = tuple(table.shape[a] for a in t)
        index = np.ravel_multi_index(tuple(coords[a] for a in t), sizes)
        view = tuple(table.shape[a] if a in t else 1 for a in range(table.ndim))
        out.append(np.bincount(index, weights=values, minlength=math.prod(sizes)).reshape(view))
    return out


def _relative_discrepancy(current: np.ndarray, target: np.ndarray) -> float:
    """max |current - target| / max(target, 1) over the cells of a margin."""
    return float((np.abs(current - target) / np.maximum(target, 1.0)).max())


def _ipf_cycle(fit: np.ndarray, targets: Sequence[np.ndarray], terms: Sequence[Term]) -> float:
    """One IPF cycle in place; the largest relative discrepancy met before an adjustment."""
    worst = 0.0
    for target, term in zip(targets, terms):
        current = fit.sum(axis=_other_axes(term, fit.ndim), keepdims=True)
        worst = max(worst, _relative_discrepancy(current, target))
        ratio = np.divide(target, current, out=np.zeros_like(current), where=current > 0)
        fit *= ratio
    return worst


#: Bytes per cell of a fit: the counts, the offset, the fit, its extrapolation history and the risks.
FIT_BYTES_PER_CELL = 96


def check_cells(names: Sequence[str], shape: Sequence[int]) -> int:
    """The cells of the full table of ``names``, refused in one line (before any table is made)
    when the fit would hold more than :data:`MAX_CELLS`.

    Parameters
    ----------
    names : sequence of str
        The variables (table axes).
    shape : sequence of int
        Their numbers of categories.

    Returns
    -------
    int
        The cells.

    Raises
    ------
    ParameterError
        More than :data:`MAX_CELLS` cells; the message gives the cells, the memory of the fit
        (about :data:`FIT_BYTES_PER_CELL` bytes a cell) and what bounds them.

    Examples
    --------
    >>> check_cells(["a", "b"], [3, 4])
    12
    >>> check_cells([f"k{j}" for j in range(20)], [3] * 20)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the log-linear model of tau1 and tau2 is fitted to the full table of the 20 key variables: 3,486,784,401 cells (about 334.7 GB), more than the 50,000,000 cells a fit may take; use fewer or coarser key variables (--keys)
    """
    cells = math.prod(int(s) for s in shape)
    if cells > MAX_CELLS:
        size = FIT_BYTES_PER_CELL * cells
        figure = f"{size / 1e12:,.0f} TB" if size >= 1e12 else f"{size / 1e9:,.1f} GB"
        raise ParameterError(
            f"the log-linear model of tau1 and tau2 is fitted to the full table of the {len(names)} key variables: "
            f"{cells:,} cells (about {figure}), more than the {MAX_CELLS:,} cells a fit may take; "
            "use fewer or coarser key variables (--keys)")
    return cells


def _check_table(counts: np.ndarray) -> np.ndarray:
    f = np.asarray(counts, dtype=float)
    if f.size > MAX_CELLS:
        raise ParameterError(
            f"the full table has {f.size:,} cells, more than {MAX_CELLS:,}; use fewer or coarser key variables"
        )
    if not np.all(np.isfinite(f)) or np.any(f < 0):
        raise DataError("counts must be finite and non-negative")
    if f.sum() <= 0:
        raise DataError("the table is empty (all counts are zero)")
    return f


def deviance(observed: np.ndarray, fitted: np.ndarray) -> float:
    """Poisson deviance G^2 = 2 sum [f log(f / mu) - (f - mu)] (0 log 0 = 0).

    Parameters
    ----------
    observed : numpy.ndarray
        The counts ``f``.
    fitted : numpy.ndarray
        The means ``mu`` (same shape).

    Returns
    -------
    float
        Non-negative; 0 when the fit is the data.

    Examples
    --------
    >>> f = np.array([[10.0, 20.0], [30.0, 40.0]])
    >>> deviance(f, f), round(deviance(f, np.full((2, 2), 25.0)), 4)
    (0.0, 21.288)
    >>> bool(np.isclose(deviance(np.array([0.0, 2.0]), np.array([0.5, 1.5])), 4 * np.log(4 / 3)))  # 0 log 0 = 0
    True
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        term = xlogy(observed, np.where(observed > 0, observed / np.where(fitted > 0, fitted, 1.0), 1.0))
    return float(2.0 * (term.sum() - (observed - fitted).sum()))


def support(shape: Sequence[int], targets: Sequence[np.ndarray]) -> np.ndarray:
    """Flat indices of the cells whose generating margins are all positive.

    IPF sets every other cell to zero at its first adjustment and keeps it
    there, so the fit only ever needs these cells.

    Parameters
    ----------
    shape : sequence of int
        The table's shape.
    targets : sequence of numpy.ndarray
        The observed generating margins, broadcastable to ``shape``.

    Returns
    -------
    numpy.ndarray
        Flat (C-order) cell indices, sorted.

    Examples
    --------
    Row 1 and column 1 have empty margins, so only cells (0, 0) and (0, 2) remain:

    >>> support((2, 3), [np.array([[5.0], [0.0]]), np.array([[4.0, 0.0, 1.0]])]).tolist()
    [0, 2]
    """
    mask = np.ones(tuple(shape), dtype=bool)
    for target in targets:
        mask &= target > 0
    return np.flatnonzero(mask)


#: Largest number of (cell, margin) index entries kept as native integers (faster
#: bincount and gather); larger supports store 32-bit indices to halve the memory.
_WIDE_INDEX_ENTRIES = 1 << 26

#: Bounds of the extrapolated log fit (keeps exp finite and positive).
_LOG_BOUND = 700.0


class _SparseTable:
    """The cells of the support, with the flat position of each cell in every generating margin."""

    def __init__(self, shape: Sequence[int], terms: Sequence[Term], cells: np.ndarray) -> None:
        coords = np.unravel_index(cells, tuple(shape))
        self.sizes = [math.prod(shape[a] for a in t) for t in terms]
        dtype = np.intp if cells.size * len(terms) <= _WIDE_INDEX_ENTRIES else np.int32
        self.index = [
            np.ravel_multi_index(tuple(coords[a] for a in t), tuple(shape[a] for a in t)).astype(dtype)
            for t in terms
        ]

    def margin(self, values: np.ndarray, k: int) -> np.ndarray:
        return np.bincount(self.index[k], weights=values, minlength=self.sizes[k])

    def cycle(self, fit: np.ndarray, targets: Sequence[np.ndarray]) -> float:
        """One IPF cycle in place; the largest relative discrepancy met before an adjustment."""
        worst = 0.0
        for k, target in enumerate(targets):
            current = self.margin(fit, k)
            worst = max(worst, _relative_discrepancy(current, target))
            ratio = np.divide(target, current, out=np.zeros_like(current), where=current > 0)
            index = self.index[k]
            fit *= ratio.take(index) if index.dtype == np.intp else ratio[index]
        return worst


@dataclass(frozen=True, eq=False)
class Watch:
    """Summaries of a fit that must settle before :func:`fit_loglinear` stops.

    Parameters
    ----------
    cells : numpy.ndarray
        Flat indices (C order) of the cells of the full table the summaries depend on.
    summaries : callable
        Maps the fitted means at ``cells`` to an array of summaries.
    rtol : float
        Largest distance of each summary from its limit, relative to the summary, by eq. (T)
        of :func:`geometric_tail`.
    rate : float
        The contraction per IPF cycle assumed in that bound (the slowest rate allowed for).
    atol : float
        Floor of the summary in the relative test (for summaries near zero).

    Examples
    --------
    Watch the fitted total of two cells (as tau1 and tau2 watch the sample uniques):

    >>> f = np.array([[10.0, 20.0], [30.0, 40.0]])
    >>> watch = Watch(np.array([0, 3]), lambda mu: [mu.sum()])
    >>> fit = fit_loglinear(f, ["a", "b"], model="independence", watch=watch)
    >>> fit.converged, fit.watched, fit.watched_distance < watch.rtol
    (True, (54.0,), True)
    """

    cells: np.ndarray
    summaries: Callable[[np.ndarray], ArrayLike]
    rtol: float = 1e-6
    rate: float = 0.999
    atol: float = 1e-12


def geometric_tail(change: ArrayLike, rate: float) -> np.ndarray:
    """Distance to the limit of a sequence whose steps shrink by ``rate`` per step, from its last step.

    If one step changes a quantity by ``d`` and every later step is at most
    ``rate`` times the one before, the quantity is within

        |d| rate / (1 - rate)                                                (T)

    of its limit.  IPF converges linearly: near the MLE one cycle is a
    contraction, and (T) with a rate at least the slowest contraction
    bounds the distance left.

    Parameters
    ----------
    change : array-like
        The last step ``d`` of each quantity.
    rate : float
        The contraction per step, in [0, 1).

    Returns
    -------
    numpy.ndarray
        The bound (T) for each quantity.

    Raises
    ------
    ParameterError
        ``rate`` is not in [0, 1).

    Examples
    --------
    >>> geometric_tail([0.5, -1e-9], 0.5).tolist()
    [0.5, 1e-09]
    """
    if not 0 <= rate < 1:
        raise ParameterError(f"the rate must lie in [0, 1), got {rate!r}")
    return np.abs(np.asarray(change, dtype=float)) * (rate / (1.0 - rate))


#: Past IPF cycles combined by each Anderson step.
_MEMORY = 5


class _Anderson:
    """The last cycles of a fixed-point iteration ``x -> G(x)`` and the Anderson step they give."""

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.clear()

    def clear(self) -> None:
        self.g: np.ndarray | None = None
        self.residual: np.ndarray | None = None
        self.d_residual: list[np.ndarray] = []
        self.d_g: list[np.ndarray] = []

    def step(self, x: np.ndarray, g: np.ndarray) -> np.ndarray | None:
        """Record ``g = G(x)``; the Anderson point ``g - sum_i gamma_i dG_i`` (``None`` without history)."""
        residual = g - x
        if not np.all(np.isfinite(residual)):
            self.clear()
            return None
        if self.g is not None and self.residual is not None:
            self.d_residual.append(residual - self.residual)
            self.d_g.append(g - self.g)
            if len(self.d_residual) > self.memory:
                del self.d_residual[0], self.d_g[0]
        self.g, self.residual = g, residual
        if not self.d_residual:
            return None
        gram = np.array([[float(np.dot(a, b)) for b in self.d_residual] for a in self.d_residual])
        if not np.any(gram):
            return None
        gamma = np.linalg.lstsq(gram, [float(np.dot(a, residual)) for a in self.d_residual], rcond=1e-12)[0]
        out = g.copy()
        for c, d in zip(gamma, self.d_g):
            out -= c * d
        return out


@dataclass
class _Ipf:
    """The state of an accelerated IPF run on the support."""

    table: _SparseTable
    targets: Sequence[np.ndarray]
    observed: np.ndarray  # counts on the support
    watch: Watch | None
    watch_at: np.ndarray | None  # position of each watched cell in the support, -1 outside
    cycles: int = 0
    extrapolations: int = 0

    def summaries(self, fit: np.ndarray) -> np.ndarray | None:
        if self.watch is None or self.watch_at is None:
            return None
        mu = np.where(self.watch_at >= 0, fit[np.maximum(self.watch_at, 0)], 0.0)
        return np.asarray(self.watch.summaries(mu), dtype=float).ravel()

    def loglik(self, fit: np.ndarray) -> float:
        """Poisson log-likelihood up to a constant: sum f log mu - mu (-inf or NaN when impossible)."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return float(xlogy(self.observed, fit).sum() - fit.sum())

    def distance(self, before: np.ndarray | None, after: np.ndarray | None) -> float:
        """Largest relative distance of the watched summaries from their limits by eq. (T),
        from their change over one cycle."""
        if self.watch is None or before is None or after is None or after.size == 0:
            return 0.0
        scale = np.maximum(np.abs(after), self.watch.atol)
        return float((geometric_tail(after - before, self.watch.rate) / scale).max())

    def run(self, fit: np.ndarray, *, tol: float, max_iter: int) -> tuple[bool, float]:
        """Cycle ``fit`` in place to convergence; whether it converged and the watched distance.

        Each step is one IPF cycle ``g = G(x)`` of the log fit ``x``, then the
        Anderson step ``g - dG gamma``, ``gamma`` the least-squares coefficients
        of the last residual ``G(x) - x`` on the differences of past residuals
        (``dG`` the differences of past cycles), kept when its likelihood is
        at least that of ``g``; otherwise ``g``, and the history restarts.
        """
        history = _Anderson(_MEMORY)
        calm = 0
        distance = math.inf
        s_fit = self.summaries(fit)
        while self.cycles < max_iter:
            g = fit.copy()
            before = self.table.cycle(g, self.targets)
            self.cycles += 1
            s_g = self.summaries(g)
            distance = self.distance(s_fit, s_g)
            calm = calm + 1 if self.watch is None or distance <= self.watch.rtol else 0
            if before <= tol and (self.watch is None or calm >= 2):
                fit[:] = g
                return True, distance
            with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
                step = history.step(np.log(fit), np.log(g))
                candidate = None if step is None else np.exp(np.clip(step, -_LOG_BOUND, _LOG_BOUND))
            if candidate is not None and self.loglik(candidate) >= self.loglik(g):
                fit[:] = candidate
                self.extrapolations += 1
                s_fit = self.summaries(fit)
            else:
                fit[:] = g
                s_fit = s_g
                if candidate is not None:
                    history.clear()
        return False, distance


def fit_loglinear(
    counts: np.ndarray,
    names: Sequence[str],
    *,
    model: str | Sequence[Sequence[str]] = "2way",
    tol: float = 1e-4,
    max_iter: int = 5000,
    offset: ArrayLike | None = None,
    watch: Watch | None = None,
) -> LogLinearFit:
    """MLE of a hierarchical Poisson log-linear model by accelerated IPF.

    The sample counts ``f_j`` of the full table are independent Poisson with
    ``log mu_j = log o_j + z_j' beta`` (module docstring; ``o_j = 1`` without an
    offset).  The MLE solves the score equations ``sum_j (f_j - mu_j) z_j = 0``:
    the fit has the observed margins of every generating term.

    Parameters
    ----------
    counts : the full dense table, one axis per variable of ``names``
    names : the variables
    model : ``"independence"``, ``"2way"``, a formula ``"a*b + c"`` or a list of margins
        (:func:`parse_model`)
    tol : stop when every generating margin matches the observed one to ``tol``,
        relative: ``|fitted - observed| <= tol * max(observed, 1)`` in every margin cell
    max_iter : most IPF cycles (extrapolation steps included)
    offset : known positive factors ``o_j`` of the means (e.g. per-cell sampling
        fractions), broadcastable to ``counts``; the fit starts from them
    watch : summaries of the fit that must also settle (:class:`Watch`): the fit
        stops only when their distance to the limit, estimated by eq. (T) of
        :func:`geometric_tail` from their change over one cycle, is below ``watch.rtol``
        on two successive cycles

    Returns
    -------
    LogLinearFit
        ``converged`` is true when the margins met ``tol`` and the watched summaries settled.

    Raises
    ------
    ParameterError
        The table has more than :data:`MAX_CELLS` cells or not one axis per
        name; the model is invalid (:func:`parse_model`); the offset is not
        broadcastable, or not finite and positive; a watched cell is outside
        the table.
    DataError
        The table has negative or non-finite counts, or no count at all.

    Notes
    -----
    The fit runs on the support (cells whose generating margins are all
    positive; the others have MLE zero).  When the MLE lies on the boundary
    (cells whose fit tends to zero although no margin is zero) IPF converges
    slowly; the Anderson steps (module docstring) shorten it.

    Examples
    --------
    >>> import numpy as np
    >>> f = np.array([[10.0, 20.0], [30.0, 40.0]])
    >>> fit = fit_loglinear(f, ["a", "b"], model="independence", tol=1e-10)
    >>> np.round(fit.fitted, 6).tolist()  # row total x column total / n
    [[12.0, 18.0], [28.0, 42.0]]
    >>> fit.converged, fit.df
    (True, 1)
    """
    start = time.perf_counter()
    f = _check_table(counts)
    names = tuple(names)
    if f.ndim != len(names):
        raise ParameterError(f"the table has {f.ndim} axes but {len(names)} variable names")
    terms = parse_model(model, names)
    dense_targets = _sparse_margins(f, terms)
    cells = support(f.shape, dense_targets)
    if offset is None:
        fit = np.ones(cells.size)
    else:
        try:
            fit = np.broadcast_to(np.asarray(offset, dtype=float), f.shape).ravel()[cells]
        except ValueError:
            raise ParameterError(
                f"the offset has shape {np.shape(offset)}, not broadcastable to the table {f.shape}") from None
        if not np.all(np.isfinite(fit) & (fit > 0)):
            raise ParameterError("the offset must be finite and positive in every cell")
    watch_at = None
    if watch is not None:
        watched = np.asarray(watch.cells, dtype=np.intp).ravel()
        if watched.size and (watched.min() < 0 or watched.max() >= f.size):
            raise ParameterError(f"the watched cells must be flat indices of the {f.size} cells of the table")
        at = np.searchsorted(cells, watched).clip(max=max(cells.size - 1, 0))
        watch_at = np.where(cells[at] == watched, at, -1) if cells.size else np.full(watched.size, -1)
    ipf = _Ipf(_SparseTable(f.shape, terms, cells), [t.ravel() for t in dense_targets], f.ravel()[cells],
               watch, watch_at)
    converged, distance = ipf.run(fit, tol=tol, max_iter=max_iter)
    table = ipf.table
    targets = ipf.targets
    current = [table.margin(fit, k) for k in range(len(targets))]
    discrepancy = max(float(np.abs(c - t).max()) for c, t in zip(current, targets))
    relative = max(_relative_discrepancy(c, t) for c, t in zip(current, targets))
    flat = np.zeros(f.size)
    flat[cells] = fit
    fitted = flat.reshape(f.shape)
    final = ipf.summaries(fit)
    return LogLinearFit(
        names=names,
        terms=tuple(tuple(names[a] for a in t) for t in terms),
        fitted=fitted,
        observed=f,
        iterations=ipf.cycles,
        converged=converged and relative <= tol,
        max_margin_discrepancy=discrepancy,
        relative_margin_discrepancy=relative,
        deviance=deviance(f, fitted),
        df=f.size - _free_parameters(terms, f.shape),
        seconds=time.perf_counter() - start,
        extrapolations=ipf.extrapolations,
        watched=() if final is None else tuple(float(x) for x in final),
        watched_distance=distance if watch is not None else None,
    )


def push(table: np.ndarray, matrices: Sequence[np.ndarray | None]) -> np.ndarray:
    """``table`` pushed through a matrix per axis: out[.., j, ..] = sum_k table[.., k, ..] M[k, j]
    (the Kronecker product of the matrices applied to the flattened table); ``None`` = identity.

    The expected released counts of a table of true counts: ``E f~ = mu M``
    (Shlomo and Skinner 2012, sec. 4).

    Parameters
    ----------
    table : numpy.ndarray
        A dense table, one axis per variable.
    matrices : sequence of numpy.ndarray or None
        One square matrix per axis (``None``: the axis is not perturbed).

    Returns
    -------
    numpy.ndarray
        Same shape; with row-stochastic matrices, the same total.

    Examples
    --------
    >>> m = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> table = np.array([[10.0, 20.0], [30.0, 40.0]])
    >>> push(table, [m, None]).tolist()  # row 0: 0.9 * [10, 20] + 0.2 * [30, 40]
    [[15.0, 26.0], [25.0, 34.0]]
    >>> both = push(table, [m, m])
    >>> float(both.sum()), bool(np.allclose(both.ravel(), table.ravel() @ np.kron(m, m)))  # total kept; Kronecker
    (100.0, True)
    """
    out = table
    for axis, m in enumerate(matrices):
        if m is not None:
            out = np.moveaxis(np.tensordot(out, m, axes=([axis], [0])), -1, axis)
    return out


def pull(table: np.ndarray, matrices: Sequence[np.ndarray | None]) -> np.ndarray:
    """The adjoint of :func:`push`: out[.., k, ..] = sum_j table[.., j, ..] M[k, j].

    Parameters
    ----------
    table : numpy.ndarray
        A dense table, one axis per variable.
    matrices : sequence of numpy.ndarray or None
        One square matrix per axis (``None``: identity).

    Returns
    -------
    numpy.ndarray
        Same shape; a table of ones stays ones when the matrices are row-stochastic.

    Examples
    --------
    ``<push(x), y> = <x, pull(y)>``:

    >>> m = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> x, y = np.array([[10.0, 20.0], [30.0, 40.0]]), np.array([[1.0, 2.0], [3.0, 5.0]])
    >>> bool(np.isclose((push(x, [m, m]) * y).sum(), (x * pull(y, [m, m])).sum()))
    True
    >>> pull(np.ones((2, 2)), [m, None]).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return push(table, [None if m is None else m.T for m in matrices])


def fit_loglinear_misclassified(
    released: np.ndarray,
    names: Sequence[str],
    matrices: Sequence[np.ndarray | None],
    *,
    model: str | Sequence[Sequence[str]] = "2way",
    tol: float = 1e-4,
    max_iter: int = 2000,
    offset: ArrayLike | None = None,
) -> LogLinearFit:
    """MLE of the log-linear model of the true cells from misclassified counts, by ECM.

    The released counts are Poisson with mean ``mu~ = mu M`` (``M`` the
    Kronecker product of the per-axis matrices, ``None`` = not perturbed).
    E-step: the expected true counts ``c = mu * pull(f~ / mu~)`` (Bayes'
    rule cell by cell); CM-step: one IPF cycle of ``mu`` toward the margins
    of ``c``.  Each step increases the likelihood of ``f~`` (Meng and Rubin
    1993).  The start is the plain fit of the released counts; multiplicative
    steps keep its zeros, so cells under a zero released margin stay at zero.  Stops when the margins of ``mu`` match those of ``c`` to ``tol``
    (relative, as in :func:`fit_loglinear`).  ``observed`` and ``deviance``
    refer to the released counts.  Dense: meant for tables up to a few million cells.
    ``offset``: known factors of the true means (per-cell sampling fractions), as in
    :func:`fit_loglinear`; the multiplicative steps keep the fit in the family they start in.

    Parameters
    ----------
    released : numpy.ndarray
        The released (misclassified) counts of the full table.
    names : sequence of str
        The variables, one per axis.
    matrices : sequence of numpy.ndarray or None
        The PRAM matrix of each axis (``None``: not perturbed).
    model : str or sequence of sequences of str
        The model of the true cells (:func:`parse_model`).
    tol : float
        Relative margin tolerance.
    max_iter : int
        Most EM iterations.
    offset : array-like, optional
        Known positive factors of the true means.

    Returns
    -------
    LogLinearFit
        ``fitted`` are the means of the true cells; ``observed`` and
        ``deviance`` refer to the released counts; ``iterations`` counts EM steps.

    Raises
    ------
    ParameterError
        As :func:`fit_loglinear`; also a wrong number of matrices, or a matrix
        of the wrong size.
    DataError
        As :func:`fit_loglinear`; also a released count impossible under the
        model and the matrices.

    Examples
    --------
    Released counts that are exactly the expected ones of a true table give
    that table back under the saturated model, and its independence fit
    under the independence model:

    >>> m = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> true = np.array([[40.0, 10.0], [20.0, 30.0]])
    >>> released = push(true, [m, None])
    >>> fit = fit_loglinear_misclassified(released, ["a", "b"], [m, None], model="a*b", tol=1e-8)
    >>> np.round(fit.fitted, 4).tolist(), fit.converged
    ([[40.0, 10.0], [20.0, 30.0]], True)
    >>> np.round(fit_loglinear_misclassified(released, ["a", "b"], [m, None], model="independence",
    ...                                      tol=1e-8).fitted, 4).tolist()
    [[30.0, 20.0], [30.0, 20.0]]
    """
    start = time.perf_counter()
    f = _check_table(released)
    names = tuple(names)
    if len(matrices) != f.ndim:
        raise ParameterError(f"{len(matrices)} matrices given for a table with {f.ndim} axes")
    mats = [None if m is None else np.asarray(m, dtype=float) for m in matrices]
    for axis, m in enumerate(mats):
        if m is not None and m.shape != (f.shape[axis],) * 2:
            raise ParameterError(f"the matrix of {names[axis]!r} is {m.shape}, "
                                 f"the variable has {f.shape[axis]} categories")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ParameterError(f"max_iter must be an integer of at least 1, got {max_iter!r}")
    terms = parse_model(model, names)
    fit = fit_loglinear(f, names, model=model, tol=tol, offset=offset).fitted  # start: misclassification ignored
    iterations = 0
    converged = False
    relative = math.inf
    while iterations < max_iter:
        iterations += 1
        expected = push(fit, mats)
        if np.any((expected <= 0) & (f > 0)):
            raise DataError("a released count is impossible under the model and the matrices (structural zero)")
        ratio = np.divide(f, expected, out=np.zeros_like(f), where=f > 0)
        complete = fit * pull(ratio, mats)
        targets = margins(complete, terms)
        relative = _ipf_cycle(fit, targets, terms)
        if relative <= tol:
            converged = True
            break
    return LogLinearFit(
        names=names,
        terms=tuple(tuple(names[a] for a in t) for t in terms),
        fitted=fit,
        observed=f,
        iterations=iterations,
        converged=converged,
        max_margin_discrepancy=max(float(np.abs(m - t).max()) for m, t in zip(margins(fit, terms), targets)),
        relative_margin_discrepancy=relative,
        deviance=deviance(f, push(fit, mats)),
        df=f.size - _free_parameters(terms, f.shape),
        seconds=time.perf_counter() - start,
    )
