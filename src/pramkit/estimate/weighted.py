"""Estimates from a released survey file: sampling weights, the sampling design and PRAM together.

A survey file is a sample s drawn by a design, with a weight w_i per record; PRAM then replaces each
record's category X_i by Z_i with probability M[X_i, Z_i], independently.  For a table of C cells
(the variables' cells, crossed), let ``u = sum_i w_i e_{Z_i}`` be the weighted released counts and
``A = (M^T)^{-1}`` the inverse of the table's transition matrix (the Kronecker product of the
variables' matrices; identity on an unperturbed variable).

**Totals.**  ``T_hat = A u`` is unbiased for the weighted original counts ``t_s = sum_{i in s} w_i
e_{X_i}`` given the sample (``E[u | s] = M^T t_s``), hence for the population totals whenever the
weighted counts are (Horvitz-Thompson).  The maximum-likelihood and norm-sub estimators take the same
weighted counts (their variance below is the moment estimator's, its first-order approximation at an
interior point).  Proportions within groups are ratios ``T_c / T_g``.

**Variance, conditioning on the sample.**

    Var(T_hat) = Var_p( E[T_hat | s] ) + E_p( Var[T_hat | s] ) = Var_p(t_s) + E_p(V_pram(s)),

the design variance of the weighted original counts plus the PRAM variance given the sample,

    V_pram(s) = A [ sum_{i in s} w_i^2 (diag(m_{X_i}) - m_{X_i}^T m_{X_i}) ] A^T

(``m_k`` the row k of M), which is linear in ``q_s = sum_i w_i^2 e_{X_i}`` and estimated without bias
by plugging in ``q_hat = A sum_i w_i^2 e_{Z_i}``.

*Linearisation* (strata h, primary sampling units c, drawn with replacement or treated so): the
ultimate-cluster estimator applied to the released PSU totals ``y_hc = sum_{i in c} w_i A e_{Z_i}``
estimates both parts at once, since given the sample the PSU totals stay independent (PRAM acts
record by record) with means ``A M^T t_hc = t_hc``.  A finite-population correction ``1 - f_h``
shrinks the design part only, so the estimate is

    V_hat = sum_h [ (1 - f_h) V_uc,h + f_h V_pram,h ].

*Replicate weights*: the estimator computed with each replicate's weights on the released file
(the PRAM correction inside every replicate) gives ``T_r = A u_r``; their spread, scaled as the
method says, estimates the same sum for the same reason.

*A singular matrix* has no ``A``: the estimate is then the MLE from the weighted counts, and only
quantities ``g . T`` with g in the column space of M are identifiable
(:mod:`pramkit.estimate.singular`).  The MLE's likelihood equations, linearised at the fit, make it
a linear function of ``u`` in those directions, ``g . T_hat - g . T = (L^T g) . (u - E u)``
(:class:`pramkit.estimate.singular.Linearisation`), and ``L`` takes the place of ``A`` above (it is
``A`` when M is invertible); ``q_hat = (M^T)^+ s`` estimates the PRAM part, without bias when the
categories that cannot be told apart have identical rows (otherwise that part is not identifiable
and is not given).  A gradient outside the column space (the split of such categories, a share of
one of them) has no variance: NaN, never a number.

The design-based covariance of the released weighted counts ``u`` comes from
:mod:`pramkit.estimate.survey`; this module carries it through ``A`` and the ratios.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pramkit.errors import ParameterError
from pramkit.labels import Label, joint_cell
from pramkit.matrix import PramMatrix

if TYPE_CHECKING:  # pragma: no cover
    from pramkit.estimate.singular import Linearisation
    from pramkit.estimate.survey import ReplicateMethod

#: Largest table whose survey covariance is formed (a dense C x C matrix).
MAX_SURVEY_CELLS = 4_096


def table_matrix(matrices: Sequence[PramMatrix | None], shape: Sequence[int]) -> np.ndarray:
    """The table's transition matrix over its flat (C-order) cells: the Kronecker product of the
    variables' matrices, identity on an unperturbed variable.

    Parameters
    ----------
    matrices : sequence of PramMatrix or None
        One per axis.
    shape : sequence of int
        The number of categories of each axis.

    Returns
    -------
    numpy.ndarray
        The C x C matrix, ``C = prod(shape)``.

    Raises
    ------
    ParameterError
        The table has more than :data:`MAX_SURVEY_CELLS` cells.

    Examples
    --------
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> table_matrix([m, None], (2, 2)).tolist()[0]       # row (yes, first group)
    [0.75, 0.0, 0.25, 0.0]
    """
    cells = int(np.prod(shape))
    if cells > MAX_SURVEY_CELLS:
        raise ParameterError(f"a survey variance for a table of {cells:,} cells (more than {MAX_SURVEY_CELLS:,}) "
                             "is not offered; tabulate fewer or coarser variables")
    full = np.ones((1, 1))
    for m, s in zip(matrices, shape):
        full = np.kron(full, np.eye(s) if m is None else np.asarray(m.matrix, dtype=float))
    return full


def pram_covariance(squared: np.ndarray, full: np.ndarray, inverse_t: np.ndarray) -> np.ndarray:
    """The PRAM covariance of the weighted released counts given the sample, estimated without bias:
    ``sum_k q_k (diag(m_k) - m_k^T m_k)`` with ``q = A s``, ``s = sum_i w_i^2 e_{Z_i}`` (module docstring).

    Parameters
    ----------
    squared : numpy.ndarray
        ``s``: the released counts weighted by the squared weights, flat (C,).
    full : numpy.ndarray
        The table's transition matrix M (C x C).
    inverse_t : numpy.ndarray
        ``A = (M^T)^{-1}`` (C x C); for a singular M, ``(M^T)^+``
        (:attr:`pramkit.estimate.singular.Linearisation.released_inverse`).

    Returns
    -------
    numpy.ndarray
        The C x C covariance of the released weighted counts due to PRAM.

    Examples
    --------
    One record of weight 10 released as "yes" under randomized response keeping 3/4: ``q = A s``
    is (150, -50), and each row's Bernoulli variance 3/16 weighted by q gives 100 x 3/16 = 18.75:

    >>> m = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> pram_covariance(np.array([100.0, 0.0]), m, np.linalg.inv(m.T)).tolist()
    [[18.75, -18.75], [-18.75, 18.75]]
    """
    q = inverse_t @ squared
    return np.diag(full.T @ q) - full.T @ (q[:, None] * full)


@dataclass(frozen=True)
class SurveyCovariance:
    """The covariance of a table's estimated totals under the sampling design and PRAM.

    Parameters
    ----------
    covariance : numpy.ndarray
        C x C: of the estimated totals (design and PRAM parts together).
    pram : numpy.ndarray
        C x C: the PRAM part given the sample (its expectation is what PRAM adds).
    counts : numpy.ndarray
        The estimated totals, in the table's shape.
    kind : str
        ``"linearization"`` or the replicate method.
    linearisation : pramkit.estimate.singular.Linearisation, optional
        For a singular matrix: which gradients are identifiable; the variance of any other is NaN
        (``covariance`` and ``pram`` hold only for identifiable gradients).

    Examples
    --------
    >>> cov = SurveyCovariance(np.array([[4.0, -1.0], [-1.0, 9.0]]), np.zeros((2, 2)),
    ...                        np.array([60.0, 40.0]), "linearization")
    >>> cov.cell_variances().tolist(), cov.variance(np.array([1.0, 1.0]))
    ([4.0, 9.0], 11.0)
    """

    covariance: np.ndarray
    pram: np.ndarray
    counts: np.ndarray
    kind: str
    linearisation: Linearisation | None = None

    def _cells_identifiable(self) -> np.ndarray:
        """Per cell (flat), whether its count is identifiable: ``|e_c - P e_c|`` is 0 (the columns of ``I - P``)."""
        if self.linearisation is None:
            return np.ones(self.counts.size, dtype=bool)
        from pramkit.estimate.singular import RANGE_TOL

        residual = np.eye(self.counts.size) - self.linearisation.projector
        return np.linalg.norm(residual, axis=0) <= RANGE_TOL

    def variance(self, gradient: np.ndarray) -> float:
        """Variance of ``gradient . T`` (the delta method for a smooth function with this gradient).

        Parameters
        ----------
        gradient : numpy.ndarray
            The coefficients, in the table's shape.

        Returns
        -------
        float
        """
        g = np.asarray(gradient, dtype=float)
        if g.shape != self.counts.shape:
            raise ParameterError(f"a gradient of shape {g.shape} for a table of shape {self.counts.shape}")
        flat = g.ravel()
        if self.linearisation is not None and not self.linearisation.identifiable(flat)[0]:
            return float("nan")
        return max(float(flat @ self.covariance @ flat), 0.0)

    def cell_variances(self, *, clip: bool = True) -> np.ndarray:
        """Variance of every estimated total, in the table's shape (NaN for a total not identifiable)."""
        out = np.where(self._cells_identifiable(), np.diag(self.covariance), np.nan).reshape(self.counts.shape)
        return np.maximum(out, 0.0) if clip else out

    def pram_cell_variances(self) -> np.ndarray:
        """The PRAM part of each total's variance, in the table's shape (NaN where not identifiable)."""
        out = np.where(self._cells_identifiable(), np.diag(self.pram), np.nan)
        return np.maximum(out, 0.0).reshape(self.counts.shape)

    def share_variances(self, group_axes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Shares ``r_c = T_c / T_g`` within the groups of ``group_axes`` (the whole table when empty)
        and their delta-method variances, gradient ``(e_c - r_c 1_g) / T_g``.

        Parameters
        ----------
        group_axes : sequence of int
            The axes whose categories define the groups.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            The shares and their variances, in the table's shape (NaN where a group's total is 0,
            and where the share is not identifiable).

        Examples
        --------
        Two cells, independent totals of variances 4 and 9: Var(r_1) = (r_2^2 4 + r_1^2 9) / T^2.

        >>> cov = SurveyCovariance(np.diag([4.0, 9.0]), np.zeros((2, 2)), np.array([60.0, 40.0]), "linearization")
        >>> r, v = cov.share_variances([])
        >>> r.tolist(), round(float(v[0]), 10), round((0.4**2 * 4 + 0.6**2 * 9) / 100**2, 10)
        ([0.6, 0.4], 0.000388, 0.000388)
        """
        t = self.counts
        within = tuple(a for a in range(t.ndim) if a not in group_axes)
        totals = np.broadcast_to(t.sum(axis=within, keepdims=True), t.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = t / totals
        group = _group_ids(t.shape, group_axes).ravel()
        same = group[:, None] == group[None, :]
        r, b = shares.ravel(), totals.ravel()
        jac = (np.eye(t.size) - r[:, None] * same) / b[:, None]
        with np.errstate(invalid="ignore"):
            var = np.einsum("ij,jk,ik->i", jac, self.covariance, jac)
        if self.linearisation is not None:
            ok = np.isfinite(jac).all(axis=1)
            ok[ok] = self.linearisation.identifiable(jac[ok])
            var = np.where(ok, var, np.nan)
        return shares, np.where(np.isfinite(var), np.maximum(var, 0.0), np.nan).reshape(t.shape)


def _group_ids(shape: Sequence[int], group_axes: Sequence[int]) -> np.ndarray:
    """Each cell's group: the flat index of its categories on ``group_axes`` (0 for all when none).

    Examples
    --------
    >>> _group_ids((2, 3), [1]).tolist(), _group_ids((2, 3), []).tolist()
    ([[0, 1, 2], [0, 1, 2]], [[0, 0, 0], [0, 0, 0]])
    """
    index = np.indices(shape)
    if not group_axes:
        return np.zeros(shape, dtype=np.int64)
    return np.ravel_multi_index(tuple(index[a] for a in group_axes), tuple(shape[a] for a in group_axes))


def survey_covariance(released_cov: np.ndarray, pram_released: np.ndarray, inverse_t: np.ndarray,
                      counts: np.ndarray, kind: str, *,
                      linearisation: Linearisation | None = None) -> SurveyCovariance:
    """Carry the design-based covariance of the released weighted counts through ``A``.

    Parameters
    ----------
    released_cov : numpy.ndarray
        C x C: the covariance of ``u`` (linearised with the fpc rule of the module docstring,
        or from replicates).
    pram_released : numpy.ndarray
        C x C: the PRAM part of it given the sample (:func:`pram_covariance`).
    inverse_t : numpy.ndarray
        ``A`` (C x C); for a singular matrix the MLE's influence ``L`` (module docstring).
    counts : numpy.ndarray
        The estimated totals, in the table's shape.
    kind : str
        How ``released_cov`` was estimated.
    linearisation : pramkit.estimate.singular.Linearisation, optional
        For a singular matrix: ``inverse_t`` is its ``influence``, and it tells the identifiable
        gradients.

    Returns
    -------
    SurveyCovariance

    Examples
    --------
    With no PRAM (A = I) the totals' covariance is the released counts' own:

    >>> out = survey_covariance(np.diag([4.0, 9.0]), np.zeros((2, 2)), np.eye(2), np.array([6.0, 4.0]), "sdr")
    >>> out.covariance.tolist(), out.kind
    ([[4.0, 0.0], [0.0, 9.0]], 'sdr')
    """
    return SurveyCovariance(inverse_t @ released_cov @ inverse_t.T, inverse_t @ pram_released @ inverse_t.T,
                            counts, kind, linearisation)


@dataclass(frozen=True)
class Replicates:
    """Replicate weight columns and how their spread gives a variance.

    Parameters
    ----------
    columns : tuple of str
        The replicate weight columns, in replicate order.
    method : str
        ``jk1``, ``jkn``, ``brr``, ``fay``, ``sdr`` or ``bootstrap`` (:func:`pramkit.estimate.survey.replicate_covariance`).
    rho : float, optional
        Fay's coefficient (``fay`` only).
    rscales : tuple of float, optional
        Each replicate's scale (``jkn`` only: ``(n_h - 1) / n_h`` of its stratum).

    Examples
    --------
    A prefix names the columns that continue it with a replicate number, in that number's order:

    >>> Replicates.of("pwgtp", ["serialno", "pwgtp", "pwgtp2", "pwgtp10", "pwgtp1"], "sdr").columns
    ('pwgtp1', 'pwgtp2', 'pwgtp10')
    >>> Replicates.of("r1,r2", ["r1", "r2"], "jk1").columns
    ('r1', 'r2')
    """

    columns: tuple[str, ...]
    method: ReplicateMethod
    rho: float | None = None
    rscales: tuple[float, ...] | None = None

    @classmethod
    def of(cls, spec: str | Sequence[str], header: Sequence[str], method: ReplicateMethod, *, rho: float | None = None,
           rscales: Sequence[float] | None = None) -> Replicates:
        """The replicate columns a prefix or a list names among ``header``.

        Parameters
        ----------
        spec : str or sequence of str
            A prefix (the columns ``PREFIX1``, ``PREFIX2``, ...: one name is always a prefix), or
            column names (a sequence, or one comma-separated text).
        header : sequence of str
            The file's columns.
        method : str
            The replicate method.
        rho, rscales : optional
            As the class's parameters.

        Returns
        -------
        Replicates

        Raises
        ------
        ParameterError
            No column matches the prefix, or a named column is not in the file.
        """
        names = [spec] if isinstance(spec, str) and "," not in spec else (
            [s.strip() for s in spec.split(",") if s.strip()] if isinstance(spec, str) else list(spec))
        if len(names) == 1:
            prefix = names[0]
            numbered = sorted((int(c[len(prefix):]), c) for c in header
                              if c.startswith(prefix) and c[len(prefix):].isdigit())
            if not numbered:
                raise ParameterError(f"no replicate weight column starts with {prefix!r} followed by a number")
            names = [c for _, c in numbered]
        absent = [c for c in names if c not in header]
        if absent:
            raise ParameterError(f"replicate weight column(s) {absent} are not in the file")
        return cls(tuple(names), method, rho, None if rscales is None else tuple(float(x) for x in rscales))


@dataclass(frozen=True)
class CellLayout:
    """How a record's released values give its cell of the table.

    Parameters
    ----------
    columns : tuple of str
        The columns read, in order (a joint or stratified variable reads several).
    levels : tuple of tuples
        Each read column's levels (as counted).
    axes : tuple of tuple of int
        For each axis of the table, the positions in ``columns`` of the columns it reads.
    lookups : tuple of (numpy.ndarray or None)
        For an axis over several columns: its cell for each combination of the columns' levels
        (flat, C order), -1 for a combination the variable never releases; None for one column.
    shape : tuple of int
        The table's shape.

    Examples
    --------
    >>> layout = CellLayout(("x",), (("a", "b"),), ((0,),), (None,), (2,))
    >>> layout.cells(np.array([[1, 0, -1]])).tolist()
    [1, 0, -1]
    """

    columns: tuple[str, ...]
    levels: tuple[tuple[Label, ...], ...]
    axes: tuple[tuple[int, ...], ...]
    lookups: tuple[np.ndarray | None, ...]
    shape: tuple[int, ...]

    def cells(self, codes: np.ndarray) -> np.ndarray:
        """Each record's flat cell from its codes (one row per read column; negative: missing), -1 for
        a record left out (a missing value).

        Raises
        ------
        DataError
            A record holds a combination that its variable never releases.
        """
        from pramkit.errors import DataError

        n = codes.shape[1]
        present = (codes >= 0).all(axis=0)
        axis_codes = []
        for positions, lookup in zip(self.axes, self.lookups):
            own = codes[list(positions)][:, present]
            if lookup is None:
                axis_codes.append(own[0])
                continue
            sizes = [len(self.levels[p]) for p in positions]
            cell = lookup[np.ravel_multi_index(tuple(own), sizes)]
            if (cell < 0).any():
                raise DataError(f"the released file holds {int((cell < 0).sum())} record(s) in combinations of "
                                f"{', '.join(self.columns[p] for p in positions)} that the variable never releases; "
                                "was it released with this manifest?")
            axis_codes.append(cell)
        out = np.full(n, -1, dtype=np.int64)
        out[present] = np.ravel_multi_index(tuple(axis_codes), self.shape) if present.any() else []
        return out


def layout_of(columns: Sequence[str], levels: Sequence[Sequence[Label]], axis_columns: Sequence[Sequence[str]],
              axis_cells: Sequence[Sequence[Label] | None]) -> CellLayout:
    """The :class:`CellLayout` of a table whose axes read ``axis_columns`` (an axis over several columns
    has the cells ``axis_cells``; None for one column).

    Examples
    --------
    >>> layout = layout_of(["age", "status"], [("0-9", "10+"), ("married", "single")], [["age", "status"]],
    ...                    [[("0-9", "single"), ("10+", "married"), ("10+", "single")]])
    >>> layout.shape, layout.cells(np.array([[0, 1, 1, 0], [1, 0, 1, -1]])).tolist()
    ((3,), [0, 1, 2, -1])
    """
    from pramkit.estimate.cells import cell_positions

    index = {c: i for i, c in enumerate(columns)}
    axes, lookups, shape = [], list[np.ndarray | None](), []
    for cols, cells in zip(axis_columns, axis_cells):
        positions = tuple(index[c] for c in cols)
        axes.append(positions)
        if cells is None:
            lookups.append(None)
            shape.append(len(levels[positions[0]]))
            continue
        lookup = np.full(int(np.prod([len(levels[p]) for p in positions])), -1, dtype=np.int64)
        lookup[cell_positions([joint_cell(c) for c in cells], [levels[p] for p in positions])] = np.arange(len(cells))
        lookups.append(lookup)
        shape.append(len(cells))
    return CellLayout(tuple(columns), tuple(tuple(x) for x in levels), tuple(axes), tuple(lookups), tuple(shape))


def survey_counts(batches: Iterable[Any], layout: CellLayout, design: Any, replicates: Replicates | None,
                  *, quiet: bool = True, total_rows: int | None = None, times: str | None = None,
                  squares: str | None = None, decimal: str = ".", where: str = "") -> Any:
    """Weighted released counts of a table by stratum and PSU (and per replicate), chunk by chunk.

    A record with a missing value in the table's columns adds nothing to any cell but still counts
    in its stratum and PSU (a domain estimate keeps the design).

    Parameters
    ----------
    batches : iterable of pyarrow.Table
        The released file's chunks, holding the layout's columns, the design's and the replicates'.
    layout : CellLayout
        How the released values give the cells.
    design : pramkit.estimate.survey.SurveyDesign
        The weights, strata, PSUs and fpc.
    replicates : Replicates, optional
        Replicate weight columns.
    quiet : bool
        No progress bar.
    total_rows : int, optional
        The rows expected (for the progress bar).
    times, squares : str, optional
        Columns of groups of records instead of records (the Spark engine's aggregation,
        :func:`pramkit.engine.spark.counts.survey_combinations`): each row's number of records and
        the sum of their squared weights; the weights and replicate weights are then their sums.
    decimal : {".", ","}
        The decimal mark of the weights, fpc and replicate weights written as text (a CSV file's):
        :func:`pramkit.io.csv_numbers`, a value not so written refused naming its row in the file ``where``.
    where : str
        The file, for that message (``"'released.csv'"``); empty: not named.

    Returns
    -------
    pramkit.estimate.survey.CellTotals
        The weighted released counts by stratum and PSU, per replicate, and weighted by the
        squared weights per stratum (the PRAM part's input).
    """
    from pramkit.counts import chunk_codes
    from pramkit.estimate.survey import CellTotals
    from pramkit.progress import progress

    cells_n = int(np.prod(layout.shape))
    totals = CellTotals(cells_n, design, 0 if replicates is None else len(replicates.columns))
    cats = dict(zip(layout.columns, layout.levels))
    rows = 0
    with progress(total=total_rows, desc="survey counts", unit="rows", quiet=quiet) as bar:
        for table in batches:
            cells = layout.cells(chunk_codes(table, layout.columns, cats, rows))
            present = cells >= 0
            frame = table.select(list(dict.fromkeys(design.columns))).to_pandas()
            arrays = design.read(frame, decimal=decimal, first_row=rows, where=where)
            w = np.where(present, arrays.weights, 0.0)
            rep = None if replicates is None else _replicate_weights(table, replicates, present, decimal=decimal,
                                                                     first_row=rows, where=where)
            q = None if squares is None else np.where(present, table.column(squares).to_numpy(), 0.0)
            n = None if times is None else table.column(times).to_numpy()
            totals.add(np.where(present, cells, 0), w, strata=arrays.strata, psu=arrays.psu, fpc=arrays.fpc,
                       replicates=rep, squares=q, times=n)
            rows += table.num_rows
            bar.update(table.num_rows)
    return totals


def _replicate_weights(table: Any, replicates: Replicates, present: np.ndarray, *, decimal: str = ".",
                       first_row: int = 0, where: str = "") -> np.ndarray:
    """A chunk's replicate weights (records x replicates; each finite and >= 0, read as the design's weights
    are, with the decimal mark ``decimal``), zero for a record left out of the table."""
    from pramkit.estimate.survey import numeric_column

    frame = table.select(list(replicates.columns)).to_pandas()
    out = np.column_stack([numeric_column(frame, name, decimal=decimal, first_row=first_row, where=where)
                           for name in replicates.columns])
    out[~present] = 0.0
    return out


def design_covariance(totals: Any, matrices: Sequence[PramMatrix | None], shape: Sequence[int],
                      estimated: np.ndarray, replicates: Replicates | None) -> SurveyCovariance:
    """The covariance of the estimated totals from one pass's counts (module docstring): linearised
    with the fpc applied to the design part only, or from the replicates.

    Parameters
    ----------
    totals : pramkit.estimate.survey.CellTotals
        From :func:`survey_counts`.
    matrices : sequence of PramMatrix or None
        The table's matrices, one per axis.
    shape : sequence of int
        The table's shape.
    estimated : numpy.ndarray
        The estimated totals, in the table's shape.
    replicates : Replicates, optional
        The replicate weights (their method); None: linearisation.

    Returns
    -------
    SurveyCovariance
        For a singular matrix (``estimated`` then the MLE), the covariance of the identifiable
        quantities through the MLE's linearisation (module docstring), NaN for the others.

    Examples
    --------
    Categories a and b have identical rows; five records of weight 2 released as a, b, c, c, c.
    Only the total of a and b and the count of c are identifiable, and the two add up to the
    known total 10, so they have the same variance:

    >>> from pramkit.estimate.survey import CellTotals, SurveyDesign
    >>> m = PramMatrix([[0.6, 0.2, 0.2], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]], ("a", "b", "c"))
    >>> totals = CellTotals(3, SurveyDesign("w"))
    >>> totals.add(np.array([0, 1, 2, 2, 2]), np.full(5, 2.0))
    >>> cov = design_covariance(totals, [m], (3,), np.array([2.5, 1.5, 6.0]), None)
    >>> var = cov.cell_variances()
    >>> bool(np.isnan(var[0])), math.isclose(cov.variance(np.array([1.0, 1.0, 0.0])), var[2])
    (True, True)
    """
    from pramkit.estimate.identifiability import condition_number
    from pramkit.estimate.survey import replicate_covariance, stratum_parts

    full = table_matrix(matrices, shape)
    mats = [None if m is None else m.matrix for m in matrices]
    lin = None
    if math.isinf(condition_number(mats)):  # as the estimators decide it: the MLE was given
        from pramkit.estimate.singular import Linearisation

        lin = Linearisation.of(mats, (full.T @ np.asarray(estimated, dtype=float).ravel()).reshape(tuple(shape)))
        inverse_t, of_squares = lin.influence, lin.released_inverse
    else:
        inverse_t = of_squares = np.linalg.inv(full.T)

    def pram(squares: np.ndarray) -> np.ndarray:
        if lin is not None and not lin.pram_identifiable:
            return np.full_like(full, np.nan)
        return pram_covariance(squares, full, of_squares)

    pram_total = pram(totals.squares.sum(axis=0))  # linear in the squares
    if replicates is not None:
        released = replicate_covariance(totals.total, totals.replicate_totals, replicates.method,
                                        rho=replicates.rho, rscales=replicates.rscales)
        return survey_covariance(released, pram_total, inverse_t, estimated, replicates.method, linearisation=lin)
    released = np.zeros_like(full)
    for part, squares in zip(stratum_parts(totals), totals.squares):  # both in the order of the strata's codes
        released += (1.0 - part.fraction) * part.covariance
        if part.fraction:
            released += part.fraction * pram(squares)
    return survey_covariance(released, pram_total, inverse_t, estimated, "linearization", linearisation=lin)
