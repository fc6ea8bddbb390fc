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

Everything works on the dense table with NumPy reductions and broadcasting:
one adjustment costs one pass to sum the margin and one pass to rescale.

The EM variant (:func:`fit_loglinear_misclassified`) fits the same model to
the true cells when only misclassified counts are observed (sec. 4; Shlomo
and Skinner 2010): ``E f~ = mu M``, with ``M`` applied axis by axis.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.special import xlogy

from pramkit.errors import PramkitError

#: Largest dense table the fitter accepts (cells).
MAX_CELLS = 50_000_000

Term = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class LogLinearFit:
    """A fitted hierarchical Poisson log-linear model.

    names: the variables (table axes)
    terms: the generating class, each term a tuple of variable names
    formula: the generating class written as ``a*b + c``
    fitted: the fitted means ``mu_j`` on the full table (sample scale)
    observed: the observed counts ``f_j`` (for misclassified data: the released counts)
    iterations: IPF cycles (EM iterations for misclassified data)
    converged: whether the margin discrepancy fell below ``tol``
    max_margin_discrepancy: largest |fitted - target| over all generating margins, in counts
    relative_margin_discrepancy: largest |fitted - target| / max(target, 1) (the stopping rule)
    deviance: G^2 = 2 sum f log(f / mu) - (f - mu) of the observed counts
    df: nominal degrees of freedom, cells minus free parameters (Bishop et al.
        1975, sec. 3.8; with zero margins the effective df are smaller)
    seconds: wall-clock time of the fit
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

    @property
    def formula(self) -> str:
        return " + ".join("*".join(t) for t in self.terms)

    def diagnostics(self) -> dict[str, object]:
        """The convergence figures as a plain dict (JSON-ready)."""
        return {
            "formula": self.formula,
            "iterations": self.iterations,
            "converged": self.converged,
            "max_margin_discrepancy_counts": self.max_margin_discrepancy,
            "relative_margin_discrepancy": self.relative_margin_discrepancy,
            "deviance": self.deviance,
            "df": self.df,
            "seconds": self.seconds,
        }


def parse_model(model: str | Sequence[Sequence[str]], names: Sequence[str]) -> tuple[Term, ...]:
    """The generating class of a model as tuples of axes.

    ``"independence"`` (main effects), ``"2way"`` (all two-way interactions),
    a formula such as ``"a*b + c"`` or ``"a:b + b:c"`` (``*`` and ``:`` both
    join the variables of one term), or a list of margins ``[["a", "b"], ["c"]]``.
    Variables not mentioned get a main effect.  Terms contained in another
    term are dropped (they are implied).
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
            raise PramkitError(f"model {model!r} has an empty term; write terms like 'a*b + c'")
        unknown = [v for v in t if v not in index]
        if unknown:
            raise PramkitError(f"model {model!r} names {unknown}, which are not key variables {list(names)}")
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
    """The margins of ``table`` for each term, kept broadcastable (``keepdims``)."""
    return [table.sum(axis=_other_axes(t, table.ndim), keepdims=True) for t in terms]


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


def _check_table(counts: np.ndarray) -> np.ndarray:
    f = np.asarray(counts, dtype=float)
    if f.size > MAX_CELLS:
        raise PramkitError(
            f"the full table has {f.size:,} cells, more than {MAX_CELLS:,}; use fewer or coarser key variables"
        )
    if not np.all(np.isfinite(f)) or np.any(f < 0):
        raise PramkitError("counts must be finite and non-negative")
    if f.sum() <= 0:
        raise PramkitError("the table is empty (all counts are zero)")
    return f


def deviance(observed: np.ndarray, fitted: np.ndarray) -> float:
    """Poisson deviance G^2 = 2 sum [f log(f / mu) - (f - mu)] (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        term = xlogy(observed, np.where(observed > 0, observed / np.where(fitted > 0, fitted, 1.0), 1.0))
    return float(2.0 * (term.sum() - (observed - fitted).sum()))


def support(shape: Sequence[int], targets: Sequence[np.ndarray]) -> np.ndarray:
    """Flat indices of the cells whose generating margins are all positive.

    IPF sets every other cell to zero at its first adjustment and keeps it
    there, so the fit only ever needs these cells."""
    mask = np.ones(tuple(shape), dtype=bool)
    for target in targets:
        mask &= target > 0
    return np.flatnonzero(mask)


class _SparseTable:
    """The cells of the support, with the flat position of each cell in every generating margin."""

    def __init__(self, shape: Sequence[int], terms: Sequence[Term], cells: np.ndarray) -> None:
        coords = np.unravel_index(cells, tuple(shape))
        self.sizes = [math.prod(shape[a] for a in t) for t in terms]
        self.index = [
            np.ravel_multi_index(tuple(coords[a] for a in t), tuple(shape[a] for a in t)).astype(np.int32)
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
            fit *= ratio[self.index[k]]
        return worst


def fit_loglinear(
    counts: np.ndarray,
    names: Sequence[str],
    *,
    model: str | Sequence[Sequence[str]] = "2way",
    tol: float = 1e-4,
    max_iter: int = 5000,
) -> LogLinearFit:
    """MLE of a hierarchical Poisson log-linear model by IPF.

    ``counts`` is the full dense table, one axis per variable of ``names``.
    The fit runs on the support (cells whose generating margins are all
    positive; the others have MLE zero), each margin a ``bincount`` and each
    adjustment a gather.  Iterates until every generating margin matches the
    observed one to ``tol``, relative: ``|fitted - observed| <= tol * max(observed, 1)``
    in every margin cell.  When the MLE lies on the boundary (cells whose fit
    tends to zero although no margin is zero) IPF converges slowly; the
    risk measures then settle well before the margins (docs/risk.md).
    """
    start = time.perf_counter()
    f = _check_table(counts)
    names = tuple(names)
    if f.ndim != len(names):
        raise PramkitError(f"the table has {f.ndim} axes but {len(names)} variable names")
    terms = parse_model(model, names)
    dense_targets = margins(f, terms)
    cells = support(f.shape, dense_targets)
    table = _SparseTable(f.shape, terms, cells)
    targets = [t.ravel() for t in dense_targets]
    fit = np.ones(cells.size)
    converged = False
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        if table.cycle(fit, targets) <= tol:
            converged = True
            break
    current = [table.margin(fit, k) for k in range(len(targets))]
    discrepancy = max(float(np.abs(c - t).max()) for c, t in zip(current, targets))
    relative = max(_relative_discrepancy(c, t) for c, t in zip(current, targets))
    fitted = np.zeros(f.size)
    fitted[cells] = fit
    fitted = fitted.reshape(f.shape)
    return LogLinearFit(
        names=names,
        terms=tuple(tuple(names[a] for a in t) for t in terms),
        fitted=fitted,
        observed=f,
        iterations=iterations,
        converged=converged and relative <= tol,
        max_margin_discrepancy=discrepancy,
        relative_margin_discrepancy=relative,
        deviance=deviance(f, fitted),
        df=f.size - _free_parameters(terms, f.shape),
        seconds=time.perf_counter() - start,
    )


def push(table: np.ndarray, matrices: Sequence[np.ndarray | None]) -> np.ndarray:
    """``table`` pushed through a matrix per axis: out[.., j, ..] = sum_k table[.., k, ..] M[k, j]
    (the Kronecker product of the matrices applied to the flattened table); ``None`` = identity."""
    out = table
    for axis, m in enumerate(matrices):
        if m is not None:
            out = np.moveaxis(np.tensordot(out, m, axes=([axis], [0])), -1, axis)
    return out


def pull(table: np.ndarray, matrices: Sequence[np.ndarray | None]) -> np.ndarray:
    """The adjoint of :func:`push`: out[.., k, ..] = sum_j table[.., j, ..] M[k, j]."""
    return push(table, [None if m is None else m.T for m in matrices])


def fit_loglinear_misclassified(
    released: np.ndarray,
    names: Sequence[str],
    matrices: Sequence[np.ndarray | None],
    *,
    model: str | Sequence[Sequence[str]] = "2way",
    tol: float = 1e-4,
    max_iter: int = 2000,
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
    """
    start = time.perf_counter()
    f = _check_table(released)
    names = tuple(names)
    if len(matrices) != f.ndim:
        raise PramkitError(f"{len(matrices)} matrices given for a table with {f.ndim} axes")
    mats = [None if m is None else np.asarray(m, dtype=float) for m in matrices]
    for axis, m in enumerate(mats):
        if m is not None and m.shape != (f.shape[axis],) * 2:
            raise PramkitError(f"the matrix of {names[axis]!r} is {m.shape}, the variable has {f.shape[axis]} categories")
    terms = parse_model(model, names)
    fit = fit_loglinear(f, names, model=model, tol=tol).fitted  # starting value: misclassification ignored
    iterations = 0
    converged = False
    relative = math.inf
    while iterations < max_iter:
        iterations += 1
        expected = push(fit, mats)
        if np.any((expected <= 0) & (f > 0)):
            raise PramkitError("a released count is impossible under the model and the matrices (structural zero)")
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
