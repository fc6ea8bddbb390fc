"""Several variables under one record budget (Ayed, Battiston and Camerlenghi, section 5).

Perturbing J variables of a record independently composes: the record is
``sum_j eps_j``-DP (sequential composition; :func:`pramkit.privacy.epsilon.record_epsilon`).
Given a record budget E, :func:`split_budget` chooses ``eps_j >= 0`` with
``sum_j eps_j = E`` maximising the total information ``sum_j I_j(eps_j)``,
where ``I_j(eps)`` is the optimum of program (7) for variable j
(:func:`pramkit.design.dp.optimal.dp_optimal`; 0 at eps = 0).

``I_j`` is non-decreasing (the feasible set grows with eps) but not concave
in general, so the split is a resource-allocation problem solved exactly on
a grid of step ``delta = E / G`` by dynamic programming (O(J G^2)).  The grid
optimum is a feasible split; a certified upper bound on the best split off
the grid comes from monotonicity: any split rounds up to grid points using
at most ``G + J`` steps, so the grid DP with ``G + J`` steps, run on the
verified upper bounds of ``I_j`` at the grid points
(:attr:`pramkit.design.dp.optimal.Form8Optimum.upper_bound`; grid points
rounded up) and raised by the rounding of its sums, bounds it.  The epsilons
of a split are lowered by ulps where needed so that their upward-rounded sum
(:func:`pramkit.privacy.epsilon.record_epsilon`) is at most E.

The paper's future-work alternative is to perturb the cross-classification
jointly, with one K x K matrix (K = number of cells) at the whole budget;
:func:`compare_joint` scores both on the joint I(X; Z) (X, Z the vectors of
all J variables), the quantity both designs can be compared on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from pramkit.counts import CountTable, count_frame
from pramkit.design.dp.optimal import check_epsilon, dp_optimal, solve_form8
from pramkit.errors import DataError, ParameterError
from pramkit.information import mutual_information
from pramkit.labels import Label
from pramkit.matrix import PramMatrix
from pramkit.privacy.exact import fit_sum, rounding_bound
from pramkit.validate import probabilities

#: Default number of grid steps of the budget.
DEFAULT_GRID = 100
#: Largest cross-classification for which the joint I(X; Z) is computed (K x K matrices).
MAX_JOINT_CELLS = 4096


@dataclass(frozen=True)
class BudgetSplit:
    """A split of a record budget across independently perturbed variables
    (:func:`split_budget`).

    Attributes
    ----------
    split : str
        ``"optimal"`` (grid DP) or ``"equal"``.
    epsilon_total : float
        The record budget E.
    epsilons : dict of str to float
        Epsilon of each variable (their sum, rounded upward, at most E).
    information_nats : dict of str to float
        I(X_j; Z_j) of each variable at its epsilon, nats.
    total_nats : float
        Sum of ``information_nats``, nats.
    upper_bound_nats : float or None
        No split of E does better than this (``split="optimal"``; nats).
    grid_step : float or None
        The grid step E / G (``split="optimal"``).
    matrices : dict of str to PramMatrix
        The DP-optimal matrix of each variable (absent for epsilon 0).

    Examples
    --------
    An equal split of 2 between two variables: each is 1-DP, the record 2-DP.

    >>> b = split_budget({"sex": [0.48, 0.52], "age": [0.5, 0.3, 0.15, 0.05]}, 2.0, split="equal")
    >>> b.epsilons, sorted(b.matrices), round(b.total_nats, 4), b.upper_bound_nats
    ({'sex': 1.0, 'age': 1.0}, ['age', 'sex'], 0.2169, None)
    """

    split: str
    epsilon_total: float
    epsilons: dict[str, float]
    information_nats: dict[str, float]
    total_nats: float
    upper_bound_nats: float | None
    grid_step: float | None
    matrices: dict[str, PramMatrix]


def _objective(m: PramMatrix) -> float:
    """The information (nats) a DP-optimal design certified (its provenance's objective)."""
    assert m.provenance.objective is not None, "dp_optimal records the information it maximised"
    return float(m.provenance.objective)


def _information_curve(p: np.ndarray, epsilons: np.ndarray, truthful: bool) -> tuple[np.ndarray, np.ndarray]:
    """The optimum of program (7) at each epsilon, and a verified upper bound on it (0 at epsilon 0)."""
    found = [None if e == 0 else solve_form8(p, e, truthful=truthful) for e in epsilons]
    return (np.array([0.0 if f is None else f.mutual_information_nats for f in found]),
            np.array([0.0 if f is None else f.upper_bound for f in found]))


def _allocate(values: list[np.ndarray], steps: int) -> tuple[float, list[int]]:
    """max sum_j values[j][g_j] subject to sum_j g_j <= steps (values non-decreasing)."""
    best = np.zeros(steps + 1)
    choice = []
    for v in values:
        vv = v[: steps + 1]
        # new[g] = max_h best[g - h] + vv[h]
        cand = np.full((steps + 1, steps + 1), -np.inf)
        for h in range(steps + 1):
            cand[h:, h] = best[: steps + 1 - h] + vv[h]
        pick = np.argmax(cand, axis=1)
        choice.append(pick)
        best = cand[np.arange(steps + 1), pick]
    g = int(np.argmax(best))
    total = float(best[g])
    alloc = []
    for pick in reversed(choice):
        h = int(pick[g])
        alloc.append(h)
        g -= h
    return total, alloc[::-1]


def split_budget(
    distributions: Mapping[str, ArrayLike],
    epsilon_total: float,
    *,
    split: str = "optimal",
    grid: int = DEFAULT_GRID,
    truthful: bool = False,
    categories: Mapping[str, Sequence[Label]] | None = None,
) -> BudgetSplit:
    """Split a record budget across variables perturbed independently.

    Each variable j gets ``eps_j >= 0`` with ``sum_j eps_j <= E`` (sequential
    composition) and its DP-optimal matrix of form (8) at ``eps_j``
    (program (7)); ``"optimal"`` maximises ``sum_j I(X_j; Z_j)`` on a grid of
    the budget and bounds every split off the grid (module docstring).

    Parameters
    ----------
    distributions : mapping of str to array_like
        ``{name: p}`` (probabilities of each variable's categories).
    epsilon_total : float
        The record budget E, natural log units.
    split : {"optimal", "equal"}
        Grid DP (module docstring) or E / J each.
    grid : int
        Number of grid steps G of the budget (``"optimal"``).
    truthful : bool
        Require ``q_k >= 1/S`` in every matrix.
    categories : mapping of str to sequence of labels, optional
        ``{name: labels}`` for the matrices (default 0..S-1).

    Returns
    -------
    BudgetSplit
        The epsilons, each variable's information and matrix, and (optimal)
        the certified upper bound.

    Raises
    ------
    ParameterError
        If the budget is invalid, no variable is given, a p is not a
        distribution, ``split`` is unknown or ``grid`` is not a positive
        integer.

    References
    ----------
    Ayed, Battiston and Camerlenghi, program (7), form (8) and section 5
    (several variables).

    Examples
    --------
    Information grows slowly at small epsilon, so the optimal split gives the
    whole budget of 2 to the variable with more categories, and keeps 0.38
    nats against 0.22 for an equal split; the bound holds every split:

    >>> d = {"sex": [0.48, 0.52], "age": [0.5, 0.3, 0.15, 0.05]}
    >>> b = split_budget(d, 2.0, grid=10)
    >>> b.epsilons, round(b.total_nats, 4), b.grid_step
    ({'sex': 0.0, 'age': 2.0}, 0.3812, 0.2)
    >>> equal = split_budget(d, 2.0, split="equal")
    >>> equal.total_nats < b.total_nats <= b.upper_bound_nats
    True
    """
    e_total = check_epsilon(epsilon_total)
    if not distributions:
        raise ParameterError("give at least one variable to split the budget across")
    ps = {name: probabilities(p, name=f"p of {name!r}") for name, p in distributions.items()}
    if split not in ("optimal", "equal"):
        raise ParameterError(f"split must be 'optimal' or 'equal', got {split!r}")
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise ParameterError(f"grid must be a positive integer, got {grid!r}")
    names = list(ps)
    j = len(names)
    upper = step = None
    if split == "equal":
        shares = [e_total / j] * j
    else:
        step = e_total / grid
        # grid points rounded up (two ulps cover the rounding of step and of g step)
        points = np.array([0.0] + [math.nextafter(math.nextafter(g * step, math.inf), math.inf)
                                   for g in range(1, grid + j + 1)])
        curves = [_information_curve(ps[n], points, truthful) for n in names]
        _, alloc = _allocate([c[0] for c in curves], grid)
        upper, _ = _allocate([c[1] for c in curves], grid + j)
        upper += float(rounding_bound(upper, j))
        shares = [float(points[g]) for g in alloc]
    eps = dict(zip(names, fit_sum(shares, e_total)))
    matrices: dict[str, PramMatrix] = {}
    info: dict[str, float] = {}
    for n in names:
        cats = None if categories is None else categories[n]
        if eps[n] > 0 and ps[n].size >= 2:
            matrices[n] = dp_optimal(ps[n], eps[n], categories=cats, truthful=truthful)
            info[n] = _objective(matrices[n])
        else:
            info[n] = 0.0
    return BudgetSplit(split, e_total, eps, info, float(math.fsum(info.values())), upper, step, matrices)


# ---------------------------------------------------------------------------
# Joint perturbation of the cross-classification
# ---------------------------------------------------------------------------

class JointTable(CountTable):
    """A :class:`pramkit.counts.CountTable` read as the joint distribution of its columns.

    A view: the table's fields, and its proportions :attr:`p` and their margins.
    Rows with a missing value are left out.

    Examples
    --------
    >>> t = joint_table(pd.DataFrame({"a": [0, 0, 1, 1], "b": ["u", "v", "v", "v"]}), ["a", "b"])
    >>> t.names, t.p.tolist(), t.marginal("b").tolist()
    (('a', 'b'), [[0.25, 0.25], [0.0, 0.5]], [0.25, 0.75])
    """

    @property
    def names(self) -> tuple[str, ...]:
        """The columns."""
        return self.columns

    @cached_property
    def p(self) -> np.ndarray:
        """Probabilities of the cells, shape ``(n_1, ..., n_J)``."""
        return self.counts / self.counts.sum()

    def marginal(self, name: str) -> np.ndarray:
        """The probabilities of one column's categories: :attr:`p` summed over the other columns.

        Parameters
        ----------
        name : str
            One of :attr:`names`.

        Returns
        -------
        numpy.ndarray
            The margin, summing to 1.

        Examples
        --------
        >>> joint_table(pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 1, 1]}), ["a", "b"]).marginal("a").tolist()
        [0.5, 0.5]
        """
        return self.p.sum(axis=self._other_axes(name))


def joint_table(data: pd.DataFrame | CountTable, columns: Sequence[str] | None = None) -> JointTable:
    """The joint distribution of ``columns`` in ``data``.

    Parameters
    ----------
    data : pandas.DataFrame or pramkit.counts.CountTable
        The records (complete rows only are counted), or a table already counted
        (for instance streamed from a file by :func:`pramkit.counts.count_file`).
    columns : sequence of str
        The columns of a DataFrame.

    Returns
    -------
    JointTable
        The table, as a joint distribution.

    Raises
    ------
    ParameterError
        If no column is given for a DataFrame.
    DataError
        If a column is not in the data, or no row has a value in every column.

    Examples
    --------
    >>> from pramkit.counts import count_codes
    >>> joint_table(count_codes(["a"], [("x", "y")], [[0, 1, 1, 1]])).p.tolist()
    [0.25, 0.75]
    """
    if isinstance(data, CountTable):
        counted = data
    else:
        if not columns:
            raise ParameterError("give at least one column")
        missing = [c for c in columns if c not in data.columns]
        if missing:
            raise DataError(f"unknown column(s) {missing}; the data has {list(data.columns)}")
        counted = count_frame(data, list(columns))
    if counted.counts.sum() == 0:
        raise DataError(f"no row has a value in every one of the columns {list(counted.columns)}")
    return JointTable(*(getattr(counted, f.name) for f in fields(CountTable)))


@dataclass(frozen=True)
class JointComparison:
    """Independent perturbation (a budget split) against one joint matrix (:func:`compare_joint`).

    Attributes
    ----------
    cells : int
        K, the number of cells of the cross-classification.
    independent_nats : float
        I(X; Z) of the product of the split's matrices, nats.
    independent_sum_nats : float
        Sum of the per-variable I(X_j; Z_j), nats.
    joint_nats : float
        I(X; Z) of the DP-optimal form (8) matrix on the K cells at the whole budget, nats.
    better : str
        ``"joint"`` or ``"independent"`` (larger I(X; Z)).
    joint_matrix : PramMatrix
        The joint design, its categories the cells (tuples, one value per column).

    Examples
    --------
    >>> t = joint_table(pd.DataFrame({"a": [0, 0, 1, 1, 1], "b": [0, 1, 1, 1, 0]}), ["a", "b"])
    >>> c = compare_joint(t, split_budget({n: t.marginal(n) for n in t.names}, 2.0, split="equal"))
    >>> round(c.independent_nats, 4), round(c.joint_nats, 4), c.joint_matrix.categories
    (0.2127, 0.4468, ((0, 0), (0, 1), (1, 0), (1, 1)))
    >>> c.joint_matrix.epsilon <= 2.0
    True
    """

    cells: int
    independent_nats: float
    independent_sum_nats: float
    joint_nats: float
    better: str
    joint_matrix: PramMatrix


def independent_information(p: ArrayLike, names: Sequence[str], sizes: Sequence[int],
                            matrices: Mapping[str, PramMatrix]) -> float:
    """The joint I(X; Z) of variables perturbed independently, nats.

    ``p``: the joint distribution of the cells (C order over ``names``, ``sizes[i]``
    categories each); ``matrices``: each variable's matrix (a variable without one is
    released as noise: the uniform matrix).  Z's matrix is their Kronecker product, K x K.

    Parameters
    ----------
    p : array_like
        The joint probabilities of the K cells (any shape, read in C order).
    names : sequence of str
        The variables, in the order of p's axes.
    sizes : sequence of int
        The number of categories of each variable.
    matrices : mapping of str to PramMatrix
        The matrix of each perturbed variable.

    Returns
    -------
    float
        I(X; Z), nats.

    Examples
    --------
    With only ``a`` perturbed (``b`` released as noise) the joint information
    is that of ``a`` alone; with both it is close to, but not, the sum of the
    two, since a and b are dependent:

    >>> from pramkit.design.classic import randomized_response
    >>> p = np.array([[0.3, 0.2], [0.1, 0.4]])
    >>> rr = randomized_response([0, 1], 1.0)
    >>> a_only = independent_information(p, ["a", "b"], [2, 2], {"a": rr})
    >>> math.isclose(a_only, mutual_information(p.sum(axis=1), rr.matrix))
    True
    >>> round(independent_information(p, ["a", "b"], [2, 2], {"a": rr, "b": rr}), 4)
    0.2139
    >>> independent_information(p, ["a", "b"], [2, 2], {})
    0.0
    """
    product = np.ones((1, 1))
    for name, size in zip(names, sizes):
        m = matrices.get(name)
        product = np.kron(product, np.full((size, size), 1.0 / size) if m is None else m.matrix)
    return mutual_information(np.asarray(p, dtype=float).ravel(), product)


def compare_joint(table: JointTable, split: BudgetSplit) -> JointComparison:
    """Score a budget split and the joint design on the joint I(X; Z).

    Parameters
    ----------
    table : JointTable
        The joint distribution of the variables (:func:`joint_table`).
    split : BudgetSplit
        The independent design (:func:`split_budget` on the table's margins).

    Returns
    -------
    JointComparison
        Both designs' I(X; Z), and the joint design.

    Raises
    ------
    ParameterError
        If the table has more than :data:`MAX_JOINT_CELLS` cells.

    References
    ----------
    Ayed, Battiston and Camerlenghi, the future-work section (joint
    perturbation of several variables), form (8).

    Examples
    --------
    >>> t = joint_table(pd.DataFrame({"a": [0, 0, 1, 1, 1], "b": [0, 1, 1, 1, 0]}), ["a", "b"])
    >>> c = compare_joint(t, split_budget({n: t.marginal(n) for n in t.names}, 2.0, split="equal"))
    >>> c.cells, c.better, c.joint_nats > 0
    (4, 'joint', True)
    """
    k = table.cells
    if k > MAX_JOINT_CELLS:
        raise ParameterError(f"the cross-classification has {k} cells; the comparison is limited to "
                             f"{MAX_JOINT_CELLS} (it builds K x K matrices)")
    p = table.p.ravel()
    joint = dp_optimal(p, split.epsilon_total, categories=list(itertools.product(*table.categories)))
    independent = independent_information(p, table.names, [len(c) for c in table.categories], split.matrices)
    joint_nats = _objective(joint)
    return JointComparison(k, independent, split.total_nats, joint_nats,
                           "joint" if joint_nats > independent else "independent", joint)
