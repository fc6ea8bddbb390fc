"""Design-based covariance of the weighted cell counts of a survey file.

Every estimator of a table from a released file is, record by record, linear in
the record's released cell: the estimated totals are ``T = A t`` with
``t[c] = sum_i w_i 1{cell_i = c}`` the weighted count of released cell ``c``.
The design covariance of ``T`` is then ``A Sigma A^T``, with ``Sigma`` the
design covariance of ``t``; proportions and ratios use their Jacobian in the
same way.  This module estimates ``Sigma``:

* :class:`SurveyDesign` names the columns of the design (weights, strata,
  primary sampling units, finite population correction) and reads and checks
  their values;
* :class:`CellTotals` accumulates, chunk by chunk, the weighted cell counts of
  every (stratum, PSU) and of every replicate weight, in memory
  ``O(nonzero PSU totals + R x C)`` whatever the number of records (a PSU's
  totals are kept sparse: a household of a census falls in a few cells of
  hundreds);
* :func:`linearized_covariance` is the with-replacement ultimate-cluster
  estimator (Taylor linearisation)
  ``sum_h (1 - f_h) n_h / (n_h - 1) sum_i (Y_hi - Ybar_h)(Y_hi - Ybar_h)^T``,
  and :func:`stratum_parts` its terms stratum by stratum;
* :func:`replicate_covariance` is the replicate estimator (jackknife, BRR,
  Fay, successive difference, bootstrap) of any vector of estimates.

PSUs are nested in strata: a PSU is identified by its stratum and its label, so
that the same label in two strata names two PSUs.  Without a PSU column every
record is its own PSU; the records are then not kept one by one: per stratum,
``sum_i y_i y_i^T`` of ``y_i = w_i e_{cell_i}`` is ``diag(q_h)`` with
``q_h[c] = sum_i w_i^2 1{cell_i = c}``, so that
``sum_i (y_i - ybar)(y_i - ybar)^T = diag(q_h) - Y_h Y_h^T / n_h``.

A stratum with a single PSU has no variance estimate of its own
(``single_psu``): ``"error"`` refuses it, ``"certainty"`` counts it as sampled
with certainty (it contributes 0), ``"center"`` measures its PSU's deviation
from the grand mean of all PSU totals, ``(Y_h1 - Ybar)(Y_h1 - Ybar)^T`` with
``Ybar = t / (number of PSUs)`` (R's ``survey.lonely.psu = "adjust"``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from pramkit.errors import DataError, ParameterError, PramkitWarning

SinglePsu = Literal["error", "certainty", "center"]
SINGLE_PSU: tuple[str, ...] = ("error", "certainty", "center")
ReplicateMethod = Literal["jk1", "jkn", "brr", "fay", "sdr", "bootstrap"]
REPLICATE_METHODS: tuple[str, ...] = ("jk1", "jkn", "brr", "fay", "sdr", "bootstrap")
#: (PSU, cell) totals of chunks not yet merged into the kept ones below which they wait (see CellTotals).
MERGE_ENTRIES = 1 << 20


class DesignArrays(NamedTuple):
    """The design columns of one chunk, checked: what :meth:`CellTotals.add` takes.

    ``weights`` are float64; ``strata`` and ``psu`` the labels (None when the
    design has no such column); ``fpc`` float64 (None without it).
    """

    weights: np.ndarray
    strata: np.ndarray | None
    psu: np.ndarray | None
    fpc: np.ndarray | None


def _first(mask: np.ndarray) -> int:
    """Row (counted from 1) of the first True of ``mask``."""
    return int(np.flatnonzero(mask)[0]) + 1


def numeric_column(frame: pd.DataFrame, name: str, *, decimal: str = ".", first_row: int = 0,
                   where: str = "") -> np.ndarray:
    """Column ``name`` as float64: numeric (numbers written as text are read, with the decimal mark ``decimal``:
    :func:`pramkit.io.csv_numbers`), no missing value, finite, not negative; otherwise a :class:`DataError`
    naming the column and the first bad row (from 1).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records (a chunk of a file).
    name : str
        The column.
    decimal : {".", ","}
        The decimal mark of numbers written as text: with ``","`` a text not written with it (``12.5``) is
        refused naming the file ``where`` and its row ``first_row`` + the row in ``frame``.
    first_row : int
        The file's rows before ``frame`` (the decimal comma's message counts the file's rows).
    where : str
        The file, for the decimal comma's message (``"'survey.csv'"``); empty: not named.

    Examples
    --------
    >>> numeric_column(pd.DataFrame({"w": ["1.5", "2"]}), "w")
    array([1.5, 2. ])
    >>> numeric_column(pd.DataFrame({"w": ["1,5", "2"]}), "w", decimal=",")
    array([1.5, 2. ])
    >>> numeric_column(pd.DataFrame({"w": [1.0, float("inf")]}), "w")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'w' must hold finite values >= 0; row 2 holds inf
    >>> numeric_column(pd.DataFrame({"w": ["1,5", "2.5"]}), "w", decimal=",", first_row=10)
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'w', row 12: '2.5' is not a number written with a decimal comma (--decimal ,): write it 2,5, or read the file with --decimal .
    """
    from pramkit.io import csv_numbers

    column = frame[name]
    if pd.api.types.is_bool_dtype(column):
        raise DataError(f"column {name!r} must be numeric, got dtype {column.dtype}")
    if not pd.api.types.is_numeric_dtype(column):  # a CSV file's text: numbers written as text
        parsed = pd.Series(csv_numbers(column, name, decimal=decimal, first_row=first_row, where=where),
                           index=column.index)
        text = (parsed.isna() & column.notna()).to_numpy()
        if text.any():
            raise DataError(f"column {name!r} must be numeric; row {_first(text)} holds {column[text].iloc[0]!r}")
        column = parsed
    values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(values)
    if bad.any():
        raise DataError(f"column {name!r} has {int(bad.sum())} missing value(s), the first at row {_first(bad)}")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise DataError(f"column {name!r} must hold finite values >= 0; row {_first(bad)} holds {float(values[bad][0])!r}")
    return values


def _labels(frame: pd.DataFrame, name: str) -> np.ndarray:
    """Column ``name`` as an array of labels, none missing."""
    column = frame[name]
    bad = column.isna().to_numpy()
    if bad.any():
        raise DataError(f"column {name!r} has {int(bad.sum())} missing value(s), the first at row {_first(bad)}")
    return column.to_numpy()


@dataclass(frozen=True)
class SurveyDesign:
    """The columns of a survey design and how a stratum with a single PSU is treated.

    Parameters
    ----------
    weights : str
        Column of the sampling weights (numeric, finite, >= 0, not all zero).
    strata : str, optional
        Column of the strata; without it the file is one stratum.
    psu : str, optional
        Column of the primary sampling units (clusters), nested in the
        strata; without it every record is its own PSU.
    fpc : str, optional
        Column of the finite population correction, constant within a
        stratum: the stratum's sampling fraction ``f_h`` in [0, 1), or its
        population count of PSUs ``N_h > 1`` (then ``f_h = n_h / N_h``); 1
        is a stratum sampled whole (``f_h = 1`` in both readings when
        ``n_h = 1``), which contributes no variance.  Each stratum's value is
        read on its own (R's survey reads the whole column one way).
    single_psu : {"error", "certainty", "center"}
        A stratum with one PSU: refused, contributing 0, or measured from the
        grand mean of the PSU totals.

    Examples
    --------
    >>> import pandas as pd
    >>> design = SurveyDesign("w", strata="region")
    >>> design.columns
    ['w', 'region']
    >>> design.read(pd.DataFrame({"w": [1.5, 2.0], "region": ["n", "s"]})).weights
    array([1.5, 2. ])
    >>> SurveyDesign("w", single_psu="average")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: single_psu must be one of ('error', 'certainty', 'center'), got 'average'
    """

    weights: str
    strata: str | None = None
    psu: str | None = None
    fpc: str | None = None
    single_psu: SinglePsu = "error"

    def __post_init__(self) -> None:
        if not isinstance(self.weights, str) or not self.weights:
            raise ParameterError(f"weights must name a column, got {self.weights!r}")
        for role in ("strata", "psu", "fpc"):
            value = getattr(self, role)
            if value is not None and (not isinstance(value, str) or not value):
                raise ParameterError(f"{role} must name a column or be None, got {value!r}")
        if self.single_psu not in SINGLE_PSU:
            raise ParameterError(f"single_psu must be one of {SINGLE_PSU}, got {self.single_psu!r}")

    @property
    def columns(self) -> list[str]:
        """The columns the design reads, weights first.

        Examples
        --------
        >>> SurveyDesign("w", psu="household", fpc="f").columns
        ['w', 'household', 'f']
        """
        return [c for c in (self.weights, self.strata, self.psu, self.fpc) if c is not None]

    def read(self, frame: pd.DataFrame, *, decimal: str = ".", first_row: int = 0, where: str = "") -> DesignArrays:
        """The design columns of ``frame``, checked (rows are counted from 1 in ``frame``).

        Parameters
        ----------
        frame : pandas.DataFrame
            A chunk of the file holding at least :attr:`columns`.
        decimal, first_row, where
            How the weights and fpc written as text are read (:func:`numeric_column`): their decimal mark
            (``","``: ``12,5``), and for its refusal the file's rows before ``frame`` and the file.

        Returns
        -------
        DesignArrays

        Raises
        ------
        DataError
            A column is absent, a weight or fpc is missing, not numeric,
            negative or not finite, a stratum or PSU is missing.

        Examples
        --------
        >>> import pandas as pd
        >>> SurveyDesign("w").read(pd.DataFrame({"w": [1.0, -2.0]}))
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'w' must hold finite values >= 0; row 2 holds -2.0
        >>> SurveyDesign("w", fpc="f").read(pd.DataFrame({"w": [1.0], "f": ["all"]}))
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column 'f' must be numeric; row 1 holds 'all'
        """
        absent = [c for c in self.columns if c not in frame.columns]
        if absent:
            raise DataError(f"column(s) {absent} of the survey design are not in the data; its columns are {list(frame.columns)}")
        fpc = None if self.fpc is None else numeric_column(frame, self.fpc, decimal=decimal, first_row=first_row,
                                                           where=where)
        return DesignArrays(
            weights=numeric_column(frame, self.weights, decimal=decimal, first_row=first_row, where=where),
            strata=None if self.strata is None else _labels(frame, self.strata),
            psu=None if self.psu is None else _labels(frame, self.psu),
            fpc=fpc,
        )


def _codes(values: np.ndarray, known: dict[Hashable, int], labels: list[Hashable], what: str) -> np.ndarray:
    """Codes of ``values`` in ``known`` (new labels are appended), vectorised over the records."""
    local, uniques = pd.factorize(values, use_na_sentinel=True)
    if (local < 0).any():
        raise DataError(f"{what} has a missing value at row {_first(local < 0)}")
    table = np.empty(len(uniques), dtype=np.int64)
    for j, label in enumerate(uniques.tolist()):
        table[j] = known.setdefault(label, len(known))
        if table[j] == len(labels):
            labels.append(label)
    return table[local]


def _grow(array: np.ndarray, rows: int) -> np.ndarray:
    """``array`` with at least ``rows`` rows (new rows zero), doubling its capacity."""
    if rows <= array.shape[0]:
        return array
    bigger = np.zeros((max(rows, 2 * array.shape[0]), *array.shape[1:]), dtype=array.dtype)
    bigger[: array.shape[0]] = array
    return bigger


@dataclass
class CellTotals:
    """Weighted cell counts of a survey file by (stratum, PSU), accumulated chunk by chunk.

    Parameters
    ----------
    n_cells : int
        Number of cells C; a record's cell is a code in ``[0, C)``.
    design : SurveyDesign
        Which of strata, PSU and fpc the chunks carry, and the single-PSU rule.
    n_replicates : int
        Number R of replicate weight columns (0: none).

    Attributes
    ----------
    replicate_totals : numpy.ndarray
        ``(R, C)``: the weighted cell counts under each replicate weight.
    n_records : int
        Records added.

    Notes
    -----
    With a PSU column the nonzero totals of every (stratum, PSU) are kept, as
    (PSU, cell, total) triples: memory grows with the cells each PSU touches,
    not with ``PSUs x C`` (households as PSUs and 300 areas as cells: one
    triple per household, not 300 numbers).  The triples of each chunk are
    merged into those kept (by hashing, :func:`pandas.factorize`) once the
    chunks not yet merged hold as many as the kept ones, so that the work is
    linear in the records.
    Without one, every record is its own PSU and only its stratum's total
    ``Y_h``, weighted-square counts ``q_h`` and number of records are kept;
    the diagonal ``q_hc - Y_hc^2 / n_h`` then loses about
    ``log10(q_hc / (q_hc - Y_hc^2 / n_h))`` digits to cancellation, many only
    when nearly every record of the stratum, of nearly equal weights, lies
    in cell ``c``.

    Examples
    --------
    Two strata, three PSUs, two cells:

    >>> import numpy as np
    >>> totals = CellTotals(2, SurveyDesign("w", strata="s", psu="p"))
    >>> totals.add(np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]),
    ...            strata=np.array(["a", "a", "b"]), psu=np.array([1, 1, 1]))
    >>> totals.add(np.array([0]), np.array([4.0]), strata=np.array(["a"]), psu=np.array([2]))
    >>> totals.total
    array([5., 5.])
    >>> totals.strata_labels
    ['a', 'b']
    """

    n_cells: int
    design: SurveyDesign
    n_replicates: int = 0
    n_records: int = field(init=False, default=0)
    replicate_totals: np.ndarray = field(init=False, repr=False)
    strata_labels: list[Hashable] = field(init=False, default_factory=list)
    _strata: dict[Hashable, int] = field(init=False, default_factory=dict, repr=False)
    _fpc: np.ndarray = field(init=False, repr=False)
    _psu_stratum: np.ndarray = field(init=False, repr=False)
    _psu_labels: np.ndarray = field(init=False, repr=False)
    _entries: tuple[np.ndarray, np.ndarray, np.ndarray] = field(init=False, repr=False)
    _pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = \
        field(init=False, default_factory=list, repr=False)
    _pending_size: int = field(init=False, default=0, repr=False)
    _total: np.ndarray | None = field(init=False, default=None, repr=False)
    _sums: np.ndarray = field(init=False, repr=False)
    _squares: np.ndarray = field(init=False, repr=False)
    _records: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.n_cells, bool) or not isinstance(self.n_cells, (int, np.integer)) or self.n_cells < 1:
            raise ParameterError(f"n_cells must be a positive integer, got {self.n_cells!r}")
        if isinstance(self.n_replicates, bool) or not isinstance(self.n_replicates, (int, np.integer)) \
                or self.n_replicates < 0:
            raise ParameterError(f"n_replicates must be an integer >= 0, got {self.n_replicates!r}")
        if not isinstance(self.design, SurveyDesign):
            raise ParameterError(f"design must be a SurveyDesign, got {type(self.design).__name__}")
        self.replicate_totals = np.zeros((self.n_replicates, self.n_cells))
        self._fpc = np.zeros(0)
        self._psu_stratum = np.zeros(0, dtype=np.int64)  # per PSU, in order of first appearance
        self._psu_labels = np.zeros(0, dtype=object)      # per PSU, its label
        self._entries = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))  # PSU, cell, total
        self._sums = np.zeros((0, self.n_cells))        # per stratum, records as PSUs only
        self._squares = np.zeros((0, self.n_cells))     # per stratum: the weighted-square counts
        self._records = np.zeros(0, dtype=np.int64)     # per stratum, records as PSUs only

    @property
    def squares(self) -> np.ndarray:
        """``(H, C)``: each stratum's cell counts weighted by the squared weights, ``sum_i w_i^2 e_ci``,
        in the order of :attr:`strata_labels` (what the PRAM part of the variance reads).

        Examples
        --------
        >>> import numpy as np
        >>> totals = CellTotals(2, SurveyDesign("w", psu="p"))
        >>> totals.add(np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]), psu=np.array([1, 1, 2]))
        >>> totals.squares
        array([[ 1., 13.]])
        """
        return self._squares[: len(self.strata_labels)]

    @property
    def total(self) -> np.ndarray:
        """The weighted count of every cell, ``t`` (C,)."""
        if self.design.psu is None:
            h = len(self.strata_labels)
            return self._sums[:h].sum(axis=0) if h else np.zeros(self.n_cells)
        self._merge()
        if self._total is None:   # each cell's PSU totals summed exactly rounded (math.fsum)
            _, cell, value = self._entries
            order = np.argsort(cell, kind="stable")
            bounds = np.cumsum(np.bincount(cell, minlength=self.n_cells))[:-1]
            self._total = np.array([math.fsum(part.tolist()) for part in np.split(value[order], bounds)])
        return self._total.copy()

    @property
    def n_psus(self) -> int:
        """Number of PSUs added (0 when every record is its own PSU).

        Examples
        --------
        >>> import numpy as np
        >>> totals = CellTotals(2, SurveyDesign("w", strata="s", psu="p"))
        >>> totals.add(np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]),
        ...            strata=np.array(["a", "a", "b"]), psu=np.array([1, 2, 1]))
        >>> totals.n_psus
        3
        """
        self._merge()
        return int(self._psu_stratum.size)

    def by_psu(self) -> dict[tuple[Hashable, Hashable], np.ndarray]:
        """The weighted cell counts of each PSU, keyed by (stratum label, PSU label).

        Raises
        ------
        ParameterError
            The design has no PSU column (every record is its own PSU, not kept).

        Examples
        --------
        >>> import numpy as np
        >>> totals = CellTotals(2, SurveyDesign("w", psu="p"))
        >>> totals.add(np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]), psu=np.array(["x", "y", "x"]))
        >>> totals.by_psu()
        {(None, 'x'): array([1., 3.]), (None, 'y'): array([0., 2.])}
        """
        if self.design.psu is None:
            raise ParameterError("the design has no psu column: every record is its own PSU, and records are not kept")
        self._merge()
        psu, cell, value = self._entries
        rows = np.zeros((self._psu_stratum.size, self.n_cells))
        rows[psu, cell] = value
        keys = [(self.strata_labels[s], label) for s, label in zip(self._psu_stratum.tolist(), self._psu_labels.tolist())]
        return dict(zip(keys, rows))

    def add_frame(self, frame: pd.DataFrame, cells: np.ndarray, replicates: np.ndarray | None = None) -> None:
        """Add a chunk given as a DataFrame holding the design's columns (see :meth:`add`).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> totals = CellTotals(2, SurveyDesign("w"))
        >>> totals.add_frame(pd.DataFrame({"w": [2.0, 3.0, 5.0]}), np.array([0, 1, 1]))
        >>> totals.total
        array([2., 8.])
        """
        d = self.design.read(frame)
        self.add(cells, d.weights, strata=d.strata, psu=d.psu, fpc=d.fpc, replicates=replicates)

    def add(self, cells: np.ndarray, weights: np.ndarray, strata: np.ndarray | None = None,
            psu: np.ndarray | None = None, *, fpc: np.ndarray | None = None,
            replicates: np.ndarray | None = None, squares: np.ndarray | None = None,
            times: np.ndarray | None = None) -> None:
        """Add a chunk of records (or of groups of records, with ``squares`` and ``times``).

        Parameters
        ----------
        cells : numpy.ndarray
            ``(n,)`` integer cell codes in ``[0, C)``.
        weights : numpy.ndarray
            ``(n,)`` sampling weights, finite and >= 0.
        strata, psu : numpy.ndarray, optional
            ``(n,)`` labels (any hashable values), given exactly when the
            design names the column.
        fpc : numpy.ndarray, optional
            ``(n,)`` the fpc column's values, given exactly when the design
            names it; constant within a stratum over all chunks.
        replicates : numpy.ndarray, optional
            ``(n, R)`` replicate weights, given exactly when ``R > 0``.
        squares, times : numpy.ndarray, optional
            ``(n,)``: when each row is a group of records of one cell, stratum, PSU and fpc (as the
            Spark engine aggregates them), ``weights`` and ``replicates`` are the sums of its records',
            ``squares`` the sum of their squared weights and ``times`` their number; default one
            record a row.

        Raises
        ------
        ParameterError
            An array is given that the design does not name, or is absent.
        DataError
            A cell code is out of range, a weight negative or not finite, a
            label missing, the fpc varies within a stratum.

        Examples
        --------
        >>> import numpy as np
        >>> totals = CellTotals(3, SurveyDesign("w"))
        >>> totals.add(np.array([0, 3]), np.array([1.0, 1.0]))
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: cell code 3 at row 2 is not in [0, 3)
        """
        cells, weights = self._check_records(cells, weights)
        self._check_given(strata, psu, fpc, replicates)
        n = cells.shape[0]
        stratum = np.zeros(n, dtype=np.int64) if strata is None else \
            _codes(np.asarray(strata), self._strata, self.strata_labels, f"column {self.design.strata!r}")
        if strata is None and not self.strata_labels:
            self._strata[None] = 0
            self.strata_labels.append(None)
        if fpc is not None:
            self._add_fpc(stratum, np.asarray(fpc, dtype=np.float64))
        h = len(self.strata_labels)
        self._squares = _grow(self._squares, h)
        self._squares[:h] += np.bincount(stratum * self.n_cells + cells,
                                         weights * weights if squares is None else np.asarray(squares, float),
                                         minlength=h * self.n_cells).reshape(h, self.n_cells)
        each = None if times is None else np.asarray(times, dtype=np.int64)
        if psu is None:
            self._sums = _grow(self._sums, h)
            self._sums[:h] += np.bincount(stratum * self.n_cells + cells, weights,
                                          minlength=h * self.n_cells).reshape(h, self.n_cells)
            self._records = _grow(self._records, h)
            if each is None:
                self._records[:h] += np.bincount(stratum, minlength=h)
            else:
                np.add.at(self._records, stratum, each)
        else:
            self._add_psus(cells, weights, stratum, np.asarray(psu))
        if replicates is not None:
            self._add_replicates(cells, replicates)
        self.n_records += n if each is None else int(each.sum())

    def _check_records(self, cells: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``cells`` as int64 and ``weights`` as float64, checked."""
        cells = np.asarray(cells)
        weights = np.asarray(weights, dtype=np.float64)
        if cells.ndim != 1 or not np.issubdtype(cells.dtype, np.integer):
            raise ParameterError(f"cells must be a 1-D integer array, got shape {cells.shape} dtype {cells.dtype}")
        if weights.shape != cells.shape:
            raise ParameterError(f"weights must have the shape of cells {cells.shape}, got {weights.shape}")
        bad = (cells < 0) | (cells >= self.n_cells)
        if bad.any():
            raise DataError(f"cell code {cells[bad][0]} at row {_first(bad)} is not in [0, {self.n_cells})")
        bad = ~np.isfinite(weights) | (weights < 0)
        if bad.any():
            raise DataError(f"weight {float(weights[bad][0])!r} at row {_first(bad)} is not finite and >= 0")
        return cells.astype(np.int64, copy=False), weights

    def _check_given(self, strata: object, psu: object, fpc: object, replicates: object) -> None:
        """Each optional array is given exactly when the design (or ``n_replicates``) asks for it."""
        wanted = {"strata": self.design.strata, "psu": self.design.psu, "fpc": self.design.fpc,
                  "replicates": "replicates" if self.n_replicates else None}
        given = {"strata": strata, "psu": psu, "fpc": fpc, "replicates": replicates}
        for role, value in given.items():
            if (value is None) != (wanted[role] is None):
                need = "needs" if value is None else "has no"
                raise ParameterError(f"{role}: the design {need} {role}" + (
                    "" if wanted[role] is None or role == "replicates" else f" (column {wanted[role]!r})"))

    def _add_fpc(self, stratum: np.ndarray, fpc: np.ndarray) -> None:
        """Record the fpc of each stratum; it must be the same for all its records."""
        h = len(self.strata_labels)
        low = np.full(h, np.inf)
        high = np.full(h, -np.inf)
        np.minimum.at(low, stratum, fpc)
        np.maximum.at(high, stratum, fpc)
        old = self._fpc
        self._fpc = np.full(h, np.nan)
        self._fpc[: old.size] = old
        seen = np.isfinite(low)
        known = seen & ~np.isnan(self._fpc)
        prior = np.where(known, self._fpc, low)
        differ = seen & ((low != prior) | (high != prior))
        if differ.any():
            j = int(np.flatnonzero(differ)[0])
            raise DataError(f"column {self.design.fpc!r} must be constant within a stratum; stratum "
                            f"{self.strata_labels[j]!r} holds {float(prior[j])!r} and {float(high[j] if high[j] != prior[j] else low[j])!r}")
        self._fpc[seen] = low[seen]

    def _add_psus(self, cells: np.ndarray, weights: np.ndarray, stratum: np.ndarray, psu: np.ndarray) -> None:
        """The chunk's nonzero totals of each (stratum, PSU) and cell, kept until :meth:`_merge`."""
        local, uniques = pd.factorize(psu, use_na_sentinel=True)
        if (local < 0).any():
            raise DataError(f"column {self.design.psu!r} has a missing value at row {_first(local < 0)}")
        n_labels = max(len(uniques), 1)
        inverse, keys = pd.factorize(stratum * n_labels + local)   # the chunk's PSUs, in order of appearance
        c = self.n_cells
        where, pairs = pd.factorize(inverse * c + cells)
        sums = np.bincount(where, weights, minlength=pairs.size)
        self._total = None
        self._pending.append((keys // n_labels, np.asarray(uniques)[keys % n_labels], pairs // c, pairs % c, sums))
        self._pending_size += pairs.size
        if self._pending_size > max(self._entries[0].size, MERGE_ENTRIES):
            self._merge()

    def _merge(self) -> None:
        """Merge the chunks' triples into the kept ones (PSUs and their cells summed in order of arrival).

        The PSUs keep their order of first appearance; each (PSU, cell) total is summed over the
        chunks in order, from zero, as a running sum would be.
        """
        if not self._pending:
            return
        strata = [self._psu_stratum, *(p[0] for p in self._pending)]
        labels = [self._psu_labels, *(p[1] for p in self._pending)]
        offsets = np.cumsum([0, *(a.size for a in strata)])
        # without the empty start, whose dtype (object) would box every label of the first chunks
        label_codes, label_uniques = pd.factorize(np.concatenate(labels if len(labels[0]) else labels[1:]))
        n_labels = max(len(label_uniques), 1)
        psu_of, first = pd.factorize(np.concatenate(strata) * n_labels + label_codes)
        psu = [self._entries[0], *(psu_of[offsets[i + 1]:offsets[i + 2]][p[2]] for i, p in enumerate(self._pending))]
        cell = [self._entries[1], *(p[3] for p in self._pending)]
        value = [self._entries[2], *(p[4] for p in self._pending)]
        c = self.n_cells
        where, pairs = pd.factorize(np.concatenate(psu) * c + np.concatenate(cell))
        self._entries = (pairs // c, pairs % c, np.bincount(where, np.concatenate(value), minlength=pairs.size))
        self._psu_stratum = first // n_labels
        self._psu_labels = np.asarray(label_uniques)[first % n_labels]
        self._pending, self._pending_size = [], 0

    def _add_replicates(self, cells: np.ndarray, replicates: np.ndarray) -> None:
        """The replicate totals: a one-hot (n x C) sparse matrix times the (n x R) weights.

        Replicate weights may be negative (some calibrated replicates are); a
        weight that is not finite makes its replicate's totals not finite.
        """
        reps = np.ascontiguousarray(replicates, dtype=np.float64)
        if reps.shape != (cells.shape[0], self.n_replicates):
            raise ParameterError(f"replicates must have shape ({cells.shape[0]}, {self.n_replicates}), got {reps.shape}")
        n = cells.shape[0]
        one_hot = sp.csr_matrix((np.ones(n), cells, np.arange(n + 1)), shape=(n, self.n_cells))
        chunk = np.asarray(one_hot.T @ reps).T
        bad = ~np.isfinite(chunk).all(axis=1)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            row = _first(~np.isfinite(reps[:, r]))
            raise DataError(f"replicate weight {r + 1} at row {row} is {float(reps[row - 1, r])!r}, not a finite number")
        self.replicate_totals += chunk


@dataclass(frozen=True)
class StratumPart:
    """One stratum's term of the linearised covariance.

    Attributes
    ----------
    label : hashable
        The stratum's label (None when the design has no strata).
    n_psu : int
        Its number of PSUs ``n_h`` (of records when every record is a PSU).
    fraction : float
        Its sampling fraction ``f_h`` (0 without an fpc).
    covariance : numpy.ndarray
        ``(C, C)``: ``n_h / (n_h - 1) sum_i (Y_hi - Ybar_h)(Y_hi - Ybar_h)^T``
        before the factor ``1 - f_h`` (the single-PSU rule's term when
        ``n_h = 1``).
    """

    label: Hashable
    n_psu: int
    fraction: float
    covariance: np.ndarray


def _fraction(totals: CellTotals, h: int, n_psu: int) -> float:
    """Sampling fraction of stratum ``h`` from its fpc value (a fraction, or a population count)."""
    if totals.design.fpc is None:
        return 0.0
    value = float(totals._fpc[h])
    if value <= 1:
        return value
    if n_psu > value:
        raise DataError(f"stratum {totals.strata_labels[h]!r} has {n_psu} PSUs, more than its population count "
                        f"{value!r} in column {totals.design.fpc!r}")
    return n_psu / value


def _lonely(totals: CellTotals, h: int, y: np.ndarray, grand_mean: np.ndarray) -> np.ndarray:
    """The term of a stratum with one PSU whose total is ``y``, by the design's single-PSU rule."""
    rule = totals.design.single_psu
    if rule == "error":
        raise ParameterError(f"stratum {totals.strata_labels[h]!r} has a single PSU, so no variance of its own; "
                             "choose single_psu='certainty' or 'center'")
    warnings.warn(f"stratum {totals.strata_labels[h]!r} has a single PSU: "
                  + ("it adds no variance of its own (single_psu='certainty')" if rule == "certainty" else
                     "its term is measured from the mean of all PSU totals (single_psu='center')"),
                  PramkitWarning, stacklevel=3)
    if rule == "certainty":
        return np.zeros((y.size, y.size))
    d = y - grand_mean
    return np.outer(d, d)


def _psu_parts(totals: CellTotals) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """The number of PSUs of each stratum, and each stratum's (PSU, cell, total) triples, its PSUs
    numbered from 0 in their order of appearance."""
    totals._merge()
    stratum = totals._psu_stratum
    h_all = len(totals.strata_labels)
    counts = np.bincount(stratum, minlength=h_all)
    order = np.argsort(stratum, kind="stable")
    within = np.empty(stratum.size, dtype=np.int64)            # a PSU's number within its stratum
    within[order] = np.arange(stratum.size) - np.repeat(np.cumsum(counts) - counts, counts)
    psu, cell, value = totals._entries
    of = stratum[psu]
    by = np.argsort(of, kind="stable")
    bounds = np.cumsum(np.bincount(of, minlength=h_all))[:-1]
    return counts, [(within[psu[i]], cell[i], value[i]) for i in np.split(by, bounds)]


def _dense_row(n_cells: int, cell: np.ndarray, value: np.ndarray) -> np.ndarray:
    """A PSU's totals as a dense row."""
    row = np.zeros(n_cells)
    row[cell] = value
    return row


def _psu_covariance(n_cells: int, n: int, psu: np.ndarray, cell: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``sum_i (Y_i - Ybar)(Y_i - Ybar)^T`` over the ``n`` PSUs of a stratum from their nonzero totals.

    With ``s`` a shift, ``sum_i (Y_i - s)(Y_i - s)^T - n (Ybar - s)(Ybar - s)^T`` is the same sum.
    The cells in which at least half of the PSUs have a nonzero total are shifted by their mean
    (stored densely, as their columns nearly are), the others by 0 (kept sparse): the subtraction
    then loses at most one bit of a cell's variance to cancellation (a cell with a share ``z`` of
    zero totals has ``Ybar_c^2 <= (1 - z) / z`` times its variance), and a stratum whose cells are
    all dense is computed as the dense formula is.
    """
    nonzero = np.bincount(cell, minlength=n_cells)
    dense = np.flatnonzero(2 * nonzero >= n)
    sparse = np.flatnonzero((2 * nonzero < n) & (nonzero > 0))
    out = np.zeros((n_cells, n_cells))
    is_dense = np.zeros(n_cells, dtype=bool)
    is_dense[dense] = True
    d_rows = is_dense[cell]
    if dense.size:
        column = np.full(n_cells, -1, dtype=np.int64)
        column[dense] = np.arange(dense.size)
        block = np.zeros((n, dense.size))
        block[psu[d_rows], column[cell[d_rows]]] = value[d_rows]
        block -= block.mean(axis=0)
        out[np.ix_(dense, dense)] = block.T @ block
    if sparse.size:
        s_rows = ~d_rows
        column = np.full(n_cells, -1, dtype=np.int64)
        column[sparse] = np.arange(sparse.size)
        y = sp.csr_matrix((value[s_rows], (psu[s_rows], column[cell[s_rows]])), shape=(n, sparse.size))
        mean = np.asarray(y.sum(axis=0)).ravel() / n
        out[np.ix_(sparse, sparse)] = (y.T @ y).toarray() - n * np.outer(mean, mean)
        if dense.size:
            cross = np.asarray(y.T @ block)
            out[np.ix_(sparse, dense)] = cross
            out[np.ix_(dense, sparse)] = cross.T
    return out


def _check_totals(totals: CellTotals) -> None:
    """There are records, and not all of weight zero."""
    if not isinstance(totals, CellTotals):
        raise ParameterError(f"totals must be a CellTotals, got {type(totals).__name__}")
    if totals.n_records == 0:
        raise DataError("no records were added to the cell totals")
    if not totals.total.any():
        raise DataError(f"every weight in column {totals.design.weights!r} is zero")


def stratum_parts(totals: CellTotals) -> list[StratumPart]:
    """The linearised covariance's term of each stratum, before its factor ``1 - f_h``.

    Parameters
    ----------
    totals : CellTotals
        The accumulated cell totals.

    Returns
    -------
    list of StratumPart
        One per stratum, in order of first appearance;
        :func:`linearized_covariance` is ``sum (1 - f_h) covariance_h``.

    Raises
    ------
    ParameterError
        A stratum has a single PSU and the design's ``single_psu`` is ``"error"``.
    DataError
        No records, all weights zero, or more PSUs than a stratum's population count.

    Examples
    --------
    One stratum of two PSUs with totals (1, 2) and (3, 0), sampling fraction 1/4:
    deviations from the mean (2, 1) are (-1, 1) and (1, -1), so the term is
    ``2/1 [[2, -2], [-2, 2]]``:

    >>> import numpy as np
    >>> totals = CellTotals(2, SurveyDesign("w", psu="p", fpc="f"))
    >>> totals.add(np.array([0, 1, 0]), np.array([1.0, 2.0, 3.0]), psu=np.array([1, 1, 2]),
    ...            fpc=np.array([8.0, 8.0, 8.0]))
    >>> (part,) = stratum_parts(totals)
    >>> part.n_psu, part.fraction
    (2, 0.25)
    >>> part.covariance
    array([[ 4., -4.],
           [-4.,  4.]])
    """
    _check_totals(totals)
    h_all = len(totals.strata_labels)
    c = totals.n_cells
    if totals.design.psu is None:
        counts = totals._records[:h_all]
        psus: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    else:
        counts, psus = _psu_parts(totals)
    grand_mean = totals.total / counts.sum()
    parts = []
    for h in range(h_all):
        n = int(counts[h])
        fraction = _fraction(totals, h, n)
        if n == 1 and fraction == 1:      # a PSU taken with certainty, whatever single_psu says
            cov = np.zeros((c, c))
        elif n == 1:
            y = totals._sums[h] if psus is None else _dense_row(c, psus[h][1], psus[h][2])
            cov = _lonely(totals, h, y, grand_mean)
        elif psus is None:
            y = totals._sums[h]
            cov = (np.diag(totals._squares[h]) - np.outer(y, y) / n) * (n / (n - 1))
        else:
            cov = _psu_covariance(c, n, *psus[h]) * (n / (n - 1))
        parts.append(StratumPart(totals.strata_labels[h], n, fraction, cov))
    return parts


def linearized_covariance(totals: CellTotals) -> np.ndarray:
    """Design covariance of the weighted cell counts, by the with-replacement ultimate-cluster estimator.

    ``Sigma = sum_h (1 - f_h) n_h / (n_h - 1) sum_i (Y_hi - Ybar_h)(Y_hi - Ybar_h)^T``
    over the PSUs ``i`` of each stratum ``h`` (Taylor linearisation; Wolter,
    *Introduction to Variance Estimation*, 2007, section 6.11), a stratum with
    one PSU treated by the design's ``single_psu``.

    Parameters
    ----------
    totals : CellTotals
        The accumulated cell totals.

    Returns
    -------
    numpy.ndarray
        ``(C, C)``, symmetric positive semi-definite.

    Examples
    --------
    Records as PSUs, one stratum: three records of weights 1, 2, 3 in cells
    0, 1, 1 give ``3/2 (diag(1, 13) - (1, 5)(1, 5)^T / 3)``:

    >>> import numpy as np
    >>> totals = CellTotals(2, SurveyDesign("w"))
    >>> totals.add(np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]))
    >>> linearized_covariance(totals)
    array([[ 1. , -2.5],
           [-2.5,  7. ]])
    """
    parts = stratum_parts(totals)
    out = np.zeros((totals.n_cells, totals.n_cells))
    for part in parts:
        out += (1.0 - part.fraction) * part.covariance
    return out


def _check_replicate_count(method: str, r: int) -> None:
    """The number of replicates suits ``method``."""
    if method in ("brr", "fay", "sdr") and (r < 4 or r % 4):
        raise ParameterError(f"method {method!r} needs a number of replicates that is a multiple of 4 "
                             f"(a Hadamard order; ACS files have 80), got {r}")
    if r < 2:
        raise ParameterError(f"method {method!r} needs at least 2 replicates, got {r}")


def _replicate_scales(method: str, r: int, rho: float | None, rscales: Sequence[float] | None) -> np.ndarray:
    """The factor of each replicate's squared deviation."""
    if (rho is not None) != (method == "fay"):
        raise ParameterError("rho (the Fay coefficient) is given exactly with method 'fay'"
                             + ("" if rho is not None else ", and it was not"))
    if (rscales is not None) != (method == "jkn"):
        raise ParameterError("rscales are given exactly with method 'jkn'" + ("" if rscales is not None else ", and they were not"))
    if method == "jkn":
        scales = np.asarray(rscales, dtype=np.float64)
        if scales.shape != (r,) or not (np.isfinite(scales) & (scales > 0)).all():
            raise ParameterError(f"rscales must be {r} finite numbers > 0 (one per replicate), got shape {scales.shape}")
        return scales
    if method == "fay" and not 0 < (rho if rho is not None else 0.0) < 1:  # rho is given with 'fay' (checked above)
        raise ParameterError(f"rho (the Fay coefficient) must lie strictly between 0 and 1, got {rho!r}")
    factor = {"jk1": (r - 1) / r, "brr": 1 / r, "sdr": 4 / r, "bootstrap": 1 / r,
              "fay": 1 / (r * (1 - (rho or 0.0)) ** 2)}[method]
    return np.full(r, factor)


def replicate_covariance(full: np.ndarray, replicates: np.ndarray, method: ReplicateMethod, *,
                         rho: float | None = None, rscales: Sequence[float] | None = None,
                         mse: bool = True) -> np.ndarray:
    """Replicate estimate of the covariance of a vector of estimates.

    ``sum_r s_r (X_r - X_c)(X_r - X_c)^T`` with ``X_r`` the estimates under
    replicate weight ``r``, ``X_c`` the full-sample estimate (``mse=True``) or
    the replicates' mean, and ``s_r``: ``(R - 1)/R`` (jk1, delete-one-PSU
    jackknife), ``rscales[r]`` (jkn, typically ``(n_h - 1)/n_h``), ``1/R``
    (brr, bootstrap), ``1/(R (1 - rho)^2)`` (fay), ``4/R`` (sdr, the American
    Community Survey's successive difference replication).

    Parameters
    ----------
    full : numpy.ndarray
        ``(C,)`` the full-sample estimates.
    replicates : numpy.ndarray
        ``(R, C)`` the estimates under each replicate weight.
    method : {"jk1", "jkn", "brr", "fay", "sdr", "bootstrap"}
    rho : float, optional
        Fay's coefficient in (0, 1), with ``method="fay"`` only.
    rscales : sequence of float, optional
        One factor per replicate, with ``method="jkn"`` only.
    mse : bool
        Centre on the full-sample estimate (R's and the ACS's default) or on
        the replicates' mean.

    Returns
    -------
    numpy.ndarray
        ``(C, C)``.

    Examples
    --------
    Four BRR replicates of one total, deviations -1, 1, 2, -2 from 10:

    >>> import numpy as np
    >>> replicate_covariance(np.array([10.0]), np.array([[9.0], [11.0], [12.0], [8.0]]), "brr")
    array([[2.5]])
    >>> replicate_covariance(np.array([10.0]), np.ones((6, 1)), "sdr")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: method 'sdr' needs a number of replicates that is a multiple of 4 (a Hadamard order; ACS files have 80), got 6
    """
    if method not in REPLICATE_METHODS:
        raise ParameterError(f"method must be one of {REPLICATE_METHODS}, got {method!r}")
    full = np.asarray(full, dtype=np.float64)
    reps = np.asarray(replicates, dtype=np.float64)
    if full.ndim != 1 or reps.ndim != 2 or reps.shape[1] != full.shape[0]:
        raise ParameterError(f"full must be (C,) and replicates (R, C); got {full.shape} and {reps.shape}")
    if not (np.isfinite(full).all() and np.isfinite(reps).all()):
        raise ParameterError("full and replicates must be finite")
    _check_replicate_count(method, reps.shape[0])
    scales = _replicate_scales(method, reps.shape[0], rho, rscales)
    d = reps - (full if mse else reps.mean(axis=0))
    return (d * scales[:, None]).T @ d
