"""The key space of the spontaneous-recognition design, condition (C1) on it, and one optimiser run.

Shared by :mod:`pramkit.recognition.design` (the design, condition (C1) of
Cator, Hensbergen and Rozenholc), :mod:`pramkit.recognition.reductions`
(the reductions of their section 4), which both build on it, and
:mod:`pramkit.risk.recognition` (the check of (C1) on a release), which
computes the posteriors of (C1) with :func:`pramkit.risk.posterior.posteriors`, as the design does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from pramkit.counts import CountTable
from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label

#: The optimisers aim at ``alpha (1 - SAFETY)`` so that rounding keeps (C1) at ``alpha``.
SAFETY = 1e-6


@dataclass(frozen=True, eq=False)
class KeySpace:
    """The cross-classified key space X and the original counts U_0 on it: a view of a
    :class:`pramkit.counts.CountTable` over the key variables.

    The designs number the K cells of X flat, in C order; the view adds that
    numbering of the table's counts (:attr:`counts`) and the types that occur.
    The table enumerates the cells (:meth:`pramkit.counts.CountTable.margin_codes`,
    :meth:`pramkit.counts.CountTable.labels`).

    Parameters
    ----------
    table : pramkit.counts.CountTable
        The original counts, one axis per key variable.

    Examples
    --------
    >>> space = key_space(np.array([[3, 0], [4, 2]]), keys=["sex", "region"])
    >>> space.keys, space.cells, space.n, space.counts.tolist(), space.occurring.tolist()
    (('sex', 'region'), 4, 9, [3.0, 0.0, 4.0, 2.0], [0, 2, 3])
    """

    table: CountTable

    @property
    def keys(self) -> tuple[str, ...]:
        """Names of the key variables (the table's columns)."""
        return self.table.columns

    @cached_property
    def counts(self) -> np.ndarray:
        """U_0 over the K cells of X, flat C-order (float)."""
        return self.table.counts.reshape(-1).astype(float)

    @property
    def cells(self) -> int:
        """K = |X|."""
        return self.table.cells

    @property
    def n(self) -> int:
        """The number of records."""
        return int(self.table.counts.sum())

    @cached_property
    def occurring(self) -> np.ndarray:
        """Cells with U_0 > 0 (the types m of condition (C1))."""
        return np.flatnonzero(self.counts > 0)

    def margin(self, combination: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, U_pi)``: the margin code of every cell (:meth:`pramkit.counts.CountTable.margin_codes`)
        and the counts U_pi(k0) of the margin over the keys at ``combination``, flat (float;
        :meth:`pramkit.counts.CountTable.margin`).

        Parameters
        ----------
        combination : sequence of int
            pi, as positions of keys.

        Returns
        -------
        codes : numpy.ndarray, shape (K,)
            The value ``k_pi`` of every cell of X (code in the margin's C order).
        u_pi : numpy.ndarray
            U_pi(k0) for every value k0 of the margin (float).

        Examples
        --------
        >>> codes, u_pi = key_space([[3, 0], [4, 2]]).margin((0,))
        >>> codes.tolist(), u_pi.tolist()
        ([0, 0, 1, 1], [3.0, 6.0])
        """
        u_pi = self.table.margin(*(self.keys[a] for a in combination))
        return self.table.margin_codes(combination)[0], u_pi.reshape(-1).astype(float)


def key_space(
    counts: ArrayLike, *, keys: Sequence[str] | None = None, categories: Sequence[Sequence[Label]] | None = None
) -> KeySpace:
    """A :class:`KeySpace` from a table of original counts (one axis per key variable).

    Parameters
    ----------
    counts : array_like
        Non-negative whole numbers, one axis per key variable, not all 0.
    keys : sequence of str, optional
        Names of the keys; default ``x1, x2, ...``.
    categories : sequence of sequences, optional
        The labels of each key; default ``0, 1, ...``.

    Returns
    -------
    KeySpace
        Its table has ``rows`` = n and ``missing`` = 0.

    Raises
    ------
    DataError
        If the counts are empty, all 0, or not non-negative whole numbers.
    ParameterError
        If the keys or category lists do not match the table's axes.

    Examples
    --------
    >>> space = key_space([[3.0, 1.0], [4.0, 2.0]], categories=[("m", "f"), (1, 2)])
    >>> space.keys, space.table.categories, space.table.counts.tolist()
    (('x1', 'x2'), (('m', 'f'), (1, 2)), [[3, 1], [4, 2]])
    """
    u = np.asarray(counts, dtype=float)
    if u.ndim == 0 or u.size == 0:
        raise DataError("counts must be a non-empty table with one axis per key variable")
    if not np.all(np.isfinite(u)) or np.any(u < 0) or np.any(u != np.round(u)):
        raise DataError("counts must be non-negative whole numbers (records per key combination)")
    if u.sum() <= 0:
        raise DataError("the table of counts is empty")
    names = tuple(keys) if keys is not None else tuple(f"x{a + 1}" for a in range(u.ndim))
    cats = (tuple(tuple(c) for c in categories) if categories is not None
            else tuple(tuple(range(s)) for s in u.shape))
    if len(names) != u.ndim or len(cats) != u.ndim:
        raise ParameterError(f"{len(names)} keys and {len(cats)} category lists given for a table with {u.ndim} axes")
    if tuple(len(c) for c in cats) != u.shape:
        raise ParameterError(
            f"the category lists have {[len(c) for c in cats]} labels but the table has shape {u.shape}"
        )
    table = u.astype(np.int64)
    return KeySpace(CountTable(names, cats, table, rows=int(table.sum()), missing=0))


# -- condition (C1), equation (1) --------------------------------------------------------


def as_csr(transitions: np.ndarray | sp.spmatrix) -> sp.csr_matrix:
    """A transition matrix, dense or sparse, as a CSR matrix.

    Parameters
    ----------
    transitions : array or sparse matrix, shape (K, K)
        P.

    Returns
    -------
    scipy.sparse.csr_matrix
        P in CSR form (a sparse input is converted, not copied when already CSR).

    Examples
    --------
    >>> as_csr(np.eye(2)).nnz
    2
    """
    if isinstance(transitions, (sp.spmatrix, sp.sparray)):
        return transitions.tocsr()
    return sp.csr_matrix(transitions)


@dataclass(frozen=True, kw_only=True)
class SolverRun:
    """What one run of an optimiser reports (the fields are described by
    :class:`pramkit.recognition.design.SolverDiagnostics`, which extends it).

    Attributes
    ----------
    solver : str
        The optimiser (``"trust-constr"``, or ``"none"`` when P = I suffices).
    status : str
        The optimiser's status text.
    success : bool
        Whether the optimiser reported success.
    iterations : int
        Optimiser iterations.
    variables : int
        Free entries of P.
    constraints : int
        (C1) inequalities.
    gap : float or None
        Bound on ``n^2 (l2 - optimum)``, records (None when not certified).
    lower_bound : float or None
        Proved lower bound on ``n^2 l2``, records (None when not certified).
    certified : bool
        Whether ``lower_bound`` and ``gap`` are proved.

    Examples
    --------
    >>> run = SolverRun(solver="none", status="P = I", success=True, iterations=0, variables=0,
    ...                 constraints=0, gap=0.0, lower_bound=0.0, certified=True)
    >>> run.certified, run.gap
    (True, 0.0)
    """

    solver: str
    status: str
    success: bool
    iterations: int
    variables: int
    constraints: int
    gap: float | None
    lower_bound: float | None = None
    certified: bool = False

    def run_figures(self) -> dict[str, Any]:
        """The fields of :class:`SolverRun` alone, to pass on to a class that extends it.

        Returns
        -------
        dict of str to object
            Field name -> value, for the fields :class:`SolverRun` declares
            (not those a subclass adds, such as :attr:`Solve.transitions`).

        Examples
        --------
        >>> solved = Solve(transitions=np.eye(2), solver="none", status="P = I", success=True, iterations=0,
        ...                variables=0, constraints=0, gap=0.0)
        >>> figures = solved.run_figures()
        >>> "transitions" in figures, figures["solver"], figures["certified"]
        (False, 'none', False)
        """
        return {f.name: getattr(self, f.name) for f in fields(SolverRun)}


@dataclass(frozen=True, kw_only=True)
class Solve(SolverRun):
    """One run of an optimiser and the transition matrix it found.

    The attributes are those of :class:`SolverRun`, and:

    Attributes
    ----------
    transitions : numpy.ndarray or scipy.sparse matrix, shape (K, K)
        The P found (row-stochastic).

    Examples
    --------
    The restricted design (Cator, Hensbergen and Rozenholc, section 4) moves
    2.6 % of the 90 records of the three frequent cells into the unique
    record's cell: 1 + 2.33 expected records there, posterior 0.3 = alpha.

    >>> from pramkit.recognition.reductions import solve_restricted
    >>> space = key_space([[30.0, 1.0], [40.0, 20.0]])
    >>> solved, gamma, restarts = solve_restricted(space, [(0, 1)], alpha=0.3, gamma=0.9)
    >>> solved.transitions.toarray().round(4).tolist()
    [[0.9741, 0.0259, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0259, 0.9741, 0.0], [0.0, 0.0259, 0.0, 0.9741]]
    >>> from pramkit.risk.posterior import posteriors
    >>> solved.certified, round(max(float(p.values.max()) for p in posteriors(space, solved.transitions, [(0, 1)])), 4)
    (True, 0.3)
    """

    transitions: np.ndarray | sp.spmatrix
