"""A file useful as it is, at a central epsilon: records redrawn from DP-measured margins.

:func:`synthesize_release` keeps the public columns of every record (released as they are) and
replaces its other variables by a draw from a model of their joint law given the public columns.
The model reads the original only through DP measurements, so the file, its manifest and the
measurements themselves carry the central epsilon the ledger states (docs/synthesize.md):

1. **Measure.**  For each synthesized variable X, the table of the public cell by X; for each pair
   X, Y of synthesized variables, the table X by Y.  Each table gets discrete Laplace noise
   (:func:`pramkit.privacy.geometric.dp_counts`, L1 sensitivity 2: replace-one neighbours) at a
   share of the budget proportional to the square root of its cells (which minimises the summed
   expected absolute noise).  The shares add up to at most the budget (rounded outward).  The
   public cell is the combination of the public columns' values; a numeric public column of more
   than ``public_bins`` values is cut at quantiles of its own (released) values.
2. **Post-process.**  Each noisy table is projected (Euclidean) onto the non-negative tables with
   its known total (the public cell's count, or the number of records) and zero on the cells an
   edit rule forbids.
3. **Pool.**  Each record gets ``pool`` candidates.  The variables a rule of two or more synthesized
   variables ties are drawn together from their measured tables: each one's law given the record's
   public cell times each pair's association (p(x, y) / p(x) p(y)), zero on the cells the rules
   forbid given the record's public values; every other variable alone, from its law given the
   public cell restricted to the values the rules allow.  Every candidate keeps every rule.
4. **Rake.**  The candidates' weights are raked (iterative proportional fitting, Deming and
   Stephan 1940) to every measured table, each record's weights summing to one: the maximum
   entropy law, relative to the pool, whose margins are the measured ones.
5. **Draw.**  One candidate per record, by its weight, at a keyed uniform.  With
   ``min_count=2`` the records of each public cell (exact values) are paired in a keyed order and
   the second of each pair takes the first's draw (a lone last record joins the last pair): every
   released combination of values then appears at least twice, except in a public cell of one
   record.  Margins keep their expectation; their sampling variance is that of half as many draws.

Randomness: the noise comes from :meth:`pramkit.kernel.rng.SecretKey.design_random` (keyed by the
exact table it measures, never stored); the draws from a key derived from the secret key and the
data (:meth:`pramkit.kernel.rng.SecretKey.for_data`): the same key and data give the same file
byte for byte, other data or another key an independent one.

References: W. E. Deming and F. F. Stephan, "On a least squares adjustment of a sampled frequency
table when the expected marginal totals are known", Ann. Math. Statist. 11 (1940) 427-444;
M. Hardt, K. Ligett and F. McSherry, "A simple and practical algorithm for differentially private
data release" (MWEM), NeurIPS 2012; R. McKenna, D. Sheldon and G. Miklau, "Graphical-model based
estimation and inference for differential privacy", ICML 2019.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit.codebook import canonical, sort_labels, spelling_clash, spelling_error
from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError
from pramkit.frames import pandas_table
from pramkit.kernel import _kernels
from pramkit.kernel.rng import Pieces, SecretKey, resolve_key, uniforms
from pramkit.ledger import CategorySource, ExactFact, Ledger, split_within
from pramkit.pgm_balance import check_draw, check_records_per_draw
from pramkit.pgm_compression import COMPRESS_SD
from pramkit.privacy.epsilon import record_epsilon
from pramkit.release.frequencies import measured_bytes, noise_query
from pramkit.structure import Rules, as_rules
from pramkit.synthesize_codes import (
    CodedFile,
    absent_columns,
    category_index,
    code_chunks,
    missing_values,
    outside_categories,
    read_codes,
    released_tables,
    uncastable,
)
from pramkit.synthesize_pgm import (
    MAX_CELLS,
    check_bins,
    check_delta,
    check_neighbours,
    check_pgm_settings,
    check_rounds,
    check_tables_per_fit,
    import_mbi,
)

#: The manifest's ``format`` and its version.
FORMAT = "pramkit.synthesis"
FORMAT_VERSION = 1
#: Candidates per record at most, and the most candidates in all (memory grows with records x candidates),
#: raking sweeps, and the most public cells of a numeric public column.
POOL = 40
POOL_CANDIDATES = 10_000_000
SWEEPS = 30
#: The most raking sweeps a release may ask for.
MAX_SWEEPS = 1000
PUBLIC_BINS = 20
#: Most cells of one measured table.
MAX_TABLE_CELLS = 1_000_000
#: Bytes a candidate of the pool holds besides four per variable: its weight, its cell while a table is raked, a flag.
BYTES_PER_CANDIDATE = 17
#: Records per block of the pool's draws, the raking's rescaling and the pick: what each holds besides the
#: candidates and their weights is one block's (the draws are the same for any block).
BLOCK_ROWS = 1 << 16
#: Cells of the pool's proposals built at once (rows of one public cell and one group of rule values, by the
#: joint cells of the variables drawn together).
DRAW_CELLS = 1 << 22
#: What the pool's proposals add to each count of a measured table: every value a rule allows may be drawn.
SMOOTH = 1e-3


@dataclass(frozen=True)
class Measurement:
    """One DP-measured table: its axes, cells, epsilon and noisy counts (public).

    Parameters
    ----------
    axes : tuple of str
        The table's axes: ``("@public", X)`` for a variable given the public cell, ``(X, Y)`` for a pair.
    shape : tuple of int
        Cells per axis.
    epsilon : float
        The epsilon of its noise (discrete Laplace at L1 ``sensitivity``).
    noisy : numpy.ndarray
        The noisy counts (int64), in ``shape``.
    sensitivity : int
        The table's L1 sensitivity: 2 under replace-one neighbours (default), 1 under add-or-remove.

    Examples
    --------
    >>> m = Measurement(("A", "B"), (2, 2), 1.0, np.array([[3, -1], [0, 5]]))
    >>> m.to_dict()["noisy"], m.cells
    ([[3, -1], [0, 5]], 4)
    """

    axes: tuple[str, ...]
    shape: tuple[int, ...]
    epsilon: float
    noisy: np.ndarray
    sensitivity: int = 2
    sigma2: float | None = None

    @property
    def cells(self) -> int:
        """The number of cells."""
        return int(np.prod(self.shape))

    @property
    def rho(self) -> float | None:
        """A discrete Gaussian table's zCDP, ``sensitivity / (2 sigma2)`` rounded up; None for discrete Laplace."""
        from pramkit.synthesize_pgm import table_rho

        return None if self.sigma2 is None else table_rho(self.sensitivity, self.sigma2)

    def to_dict(self) -> dict[str, Any]:
        """The measurement as JSON (``mechanism``, ``axes``, ``epsilon``, ``sensitivity``, ``noisy``; a discrete
        Gaussian table states ``sigma2`` and ``rho`` in place of ``epsilon``)."""
        noisy = np.asarray(self.noisy).reshape(self.shape).tolist()
        if self.sigma2 is not None:
            return {"mechanism": "discrete_gaussian", "axes": list(self.axes), "sigma2": self.sigma2,
                    "rho": self.rho, "sensitivity": self.sensitivity, "noisy": noisy}
        return {"mechanism": "geometric", "axes": list(self.axes), "epsilon": self.epsilon,
                "sensitivity": self.sensitivity, "noisy": noisy}


@dataclass
class SynthesisResult:
    """What :func:`synthesize_release` did.

    Attributes
    ----------
    data : pandas.DataFrame
        The released records (every column of the input; the synthesized ones redrawn).  A release of a file by
        the model pgm is written batch by batch and never held: its records are made again from the draws
        when ``data`` is first read.
    variables, public : tuple of str
        The synthesized variables and the public columns (released as they are).
    measurements : list of Measurement
        The DP tables (published in the manifest).
    record_epsilon : float
        The central epsilon (the measurements' epsilons added, rounded outward).
    guarantee : str
        The ledger's sentence.
    manifest : dict
        The manifest (JSON), written beside the file.
    out, manifest_path : str or None
        The files written.
    seconds : float
        Wall time.
    shared_draws : int
        Records that take the draw of another record (``min_count`` 2).
    rows : int
        Released records.
    """

    records: pd.DataFrame | None
    variables: tuple[str, ...]
    public: tuple[str, ...]
    measurements: list[Measurement]
    record_epsilon: float
    guarantee: str
    manifest: dict[str, Any]
    out: str | None = None
    manifest_path: str | None = None
    seconds: float = 0.0
    shared_draws: int = 0
    rows: int = 0
    #: The released file's tables, made again from the draws (a release written batch by batch), and the
    #: file's missing codes (blanked in ``data``).
    written: Callable[[], Iterator[pa.Table]] | None = field(default=None, repr=False)
    missing: Any = field(default=None, repr=False)

    @property
    def data(self) -> pd.DataFrame:
        """The released records (a release written batch by batch: made again from its draws, once)."""
        if self.records is None:
            from pramkit.io import blank_missing_codes

            assert self.written is not None
            table = pa.concat_tables(list(self.written()))
            self.records = blank_missing_codes(table, self.missing).to_pandas()
        return self.records

    @property
    def model(self) -> str:
        """The model: ``"margins"`` (default) or ``"pgm"``, as the manifest states it."""
        return str(self.manifest.get("procedure", {}).get("model", "margins"))

    @property
    def neighbours(self) -> str:
        """The neighbour relation of the guarantee: ``"replace-one"`` (default) or ``"add-remove"``, as the
        manifest states it."""
        return str(self.manifest.get("neighbours", "replace-one"))

    @property
    def delta(self) -> float | None:
        """The delta of an (epsilon, delta) guarantee accounted in zCDP (``--delta``), or ``None`` (pure
        epsilon-DP), as the manifest's ``procedure.delta`` states it."""
        value = self.manifest.get("procedure", {}).get("delta")
        return None if value is None else float(value)

    @property
    def selections(self) -> list[dict[str, Any]]:
        """The model pgm's choices of a table (the manifest's ``selections``; none for the default model)."""
        return list(self.manifest.get("selections", []))

    def to_dict(self) -> dict[str, Any]:
        """The summary ``pramkit synthesize --json`` prints."""
        return {"out": self.out,
                "manifest": self.manifest_path, "rows": self.rows, "variables": list(self.variables),
                "public": list(self.public), "tables": len(self.measurements),
                "record_epsilon": self.record_epsilon, "delta": self.delta, "shared_draws": self.shared_draws,
                "guarantee": self.guarantee, "seconds": round(self.seconds, 3)}


def synthesize_release(
    data: Any,
    out: str | Path | None = None,
    *,
    variables: Sequence[str] | str,
    public: Sequence[str] | str = (),
    epsilon: float,
    key: SecretKey | bytes | str | Path | None = None,
    categories: Mapping[str, Sequence[Any]] | None = None,
    forbid: Rules | str | Path | Sequence[Mapping[str, Any]] | None = None,
    min_count: int = 2,
    pool: int | None = None,
    sweeps: int = SWEEPS,
    public_bins: int = PUBLIC_BINS,
    manifest_out: str | Path | None = None,
    force: bool = False,
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    decimal: str = CSV_DECIMAL,
    model: str = "margins",
    max_cells: int = MAX_CELLS,
    neighbours: str = "replace-one",
    rounds: int | None = None,
    delta: float | None = None,
    bins: Mapping[str, int] | str | None = None,
    draw: str | None = None,
    records_per_draw: float | None = None,
    tables_per_fit: int | None = None,
    quiet: bool = False,
) -> SynthesisResult:
    """Release every record with its public columns as they are and its other variables drawn from
    a model measured with DP (module docstring): a central ``epsilon`` for the whole release.

    Parameters
    ----------
    data : str, pathlib.Path or pandas.DataFrame
        The original records (a file is read as text, ``na_values`` missing).
    out : str or pathlib.Path, optional
        The released file (its suffix gives the format), written atomically with the manifest
        ``manifest_out`` (default ``OUT`` with the suffix ``.synthesis.json``).  ``None``: nothing
        is written and the records are returned.
    variables : sequence of str, or str
        The variables to synthesize (comma-separated text allowed).  A missing value stays missing and
        none is made (the category ``None``, declared or not; the ledger names which values are missing).
    public : sequence of str, or str
        The columns released as they are, on which the model conditions.
    epsilon : float
        The central budget, nats (finite, > 0).
    key : SecretKey, bytes, str, pathlib.Path or None
        The secret key (``None``: a fresh one, never saved).
    categories : mapping, optional
        Variable -> its declared categories (a codebook); a variable not named takes the values
        read from the data, which the ledger says (not covered by the epsilon).
    forbid : Rules, path, or list of mappings, optional
        Edit rules (:func:`pramkit.structure.as_rules`); they may name public columns.
    min_count : int
        1 or 2: with 2, every released combination appears at least twice (module docstring).
    pool : int, optional
        Candidates per record (default :data:`POOL`, fewer for a large file: at most
        :data:`POOL_CANDIDATES` in all, and at least 8).
    sweeps, public_bins : int
        Raking sweeps, most cells of a numeric public column.
    manifest_out : str or pathlib.Path, optional
        Where the manifest goes (with ``out``).
    force : bool
        Replace existing outputs.
    na_values, sep, encoding
        As for ``pramkit apply``.
    decimal : {".", ","}
        The decimal mark of a CSV file's numbers: a numeric public column written with decimal commas is
        binned as numbers (its values are released as they are).
    model : {"margins", "pgm"}
        ``"margins"`` (default): the tables above, a pool raked to them.  ``"pgm"``: marginals chosen
        adaptively under the budget and a graphical model fitted to them (:mod:`pramkit.synthesize_pgm`;
        every column synthesized, no public column; needs ``pip install "pramkit[pgm]"``).
    max_cells : int
        With ``model="pgm"``: the most cells of the model (its junction tree's cliques, added up).
    neighbours : {"replace-one", "add-remove"}
        The neighbour relation of the guarantee.  ``"replace-one"`` (default): the number of records is public,
        each table has L1 sensitivity 2.  ``"add-remove"`` (``model="pgm"`` only, every column of the data
        synthesized): each table has L1 sensitivity 1 and the number of records is not public: the released
        file has as many records as the noisy tables estimate (:mod:`pramkit.synthesize_pgm`); the manifest
        states ``"neighbours": "add-remove"`` and the guarantee sentence says so.
    rounds : int, optional
        With ``model="pgm"``: the nominal rounds ``T``, from the number of variables to 10 000 (default 4 per
        variable; AIM's is 16 per variable): each round's epsilon is the budget over ``T`` until the
        annealing doubles it, so more rounds measure more tables, each with more noise.  The manifest's
        ``procedure.rounds`` states it.
    delta : float, optional
        With ``model="pgm"``: an (``epsilon``, ``delta``)-DP guarantee accounted in zero-concentrated DP, as AIM
        states its own (:func:`pramkit.synthesize_pgm.fit_and_draw`): discrete Gaussian tables, the budget the
        largest rho that implies (``epsilon``, ``delta``)-DP; the ledger states ``delta``, ``rho``,
        ``rho_budget`` and the conversion's ``alpha``.  ``None`` (default): pure ``epsilon``-DP.
    bins : mapping or str, optional
        With ``model="pgm"``: ordered numeric variables modelled in bins of their values, variable -> width (or
        text ``"AGEP=5,POVPIP=25"``): the values ``[k w, (k + 1) w)`` that every rule treats alike are one
        category of the model, and a record drawn into it takes one of them by the noisy 1-way counts
        (:mod:`pramkit.pgm_compression`).  Fewer cells for the tables to spread their noise over; the
        bins read no data.  The manifest's ``procedure.bins`` states them.
    draw : {"auto", "balanced", "systematic"}, optional
        With ``model="pgm"``: how the records are drawn from the fitted model (:mod:`pramkit.pgm_balance`).
        ``"systematic"``: along its junction tree, by systematic sampling; ``"balanced"``: chosen among four
        times as many such draws by a keyed local search, so that every 3-way table of the released file is
        close to the model's (post-processing: the guarantee is the same); ``"auto"`` (default): balanced
        when the pool fits in about 160 MB.  The manifest's ``procedure.draw`` states the setting and
        ``procedure.balanced`` what was done.
    records_per_draw : float, optional
        With ``model="pgm"`` and ``min_count=1``: the records each draw is given on average, from 1 to 2
        (:func:`pramkit.synthesize_pgm.shared_draws`): ``rows / records_per_draw`` records are drawn and a
        keyed part of them is given to two records each, so that fewer distinct records are released than
        with one draw a record, without min-count 2's floor of two on every combination.  The manifest's
        ``procedure.records_per_draw`` states it (absent: the whole number ``min_count`` gives).
    tables_per_fit : int, optional
        With ``model="pgm"``: the tables chosen and measured between two fits of the model, 1 to 16 (default
        :data:`pramkit.synthesize_pgm.TABLES_PER_FIT`, 1: each fitted before the next is chosen, AIM's order).
        Each fit compiles a program of its own, so 3 make a release faster (on NIST's data, up to twice); the
        later tables of a fit are chosen by the model as it was at the fit (docs/synthesize.md).  The
        manifest's ``procedure.tables_per_fit`` states it when it is not 1.
    quiet : bool
        No progress bars (with ``model="pgm"``: the records read, the budget spent by the rounds, the variables
        drawn, the records written).

    Returns
    -------
    SynthesisResult

    Raises
    ------
    ParameterError, DataError
        Bad settings or data, in one line.

    Examples
    --------
    >>> import pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"sex": rng.choice(["f", "m"], 400), "a": rng.choice(["x", "y", "z"], 400)})
    >>> df["b"] = np.where(rng.random(400) < 0.8, df["a"], "y")
    >>> res = synthesize_release(df, variables="a,b", public="sex", epsilon=4.0, key=bytes(range(32)),
    ...                          categories={"a": ["x", "y", "z"], "b": ["x", "y", "z"]})
    >>> res.data["sex"].equals(df["sex"]), res.record_epsilon <= 4.0, len(res.measurements)
    (True, True, 3)
    >>> res.guarantee.startswith("Changing one person's record")
    True
    """
    start = time.perf_counter()
    variables = _names(variables, "variables")
    public_cols = _names(public, "public") if public else ()
    if not variables:
        raise ParameterError("name at least one variable to synthesize")
    if set(variables) & set(public_cols):
        raise ParameterError(f"a column cannot be both synthesized and public: {sorted(set(variables) & set(public_cols))}")
    epsilon = check_settings(epsilon, min_count=min_count, pool=pool, sweeps=sweeps, public_bins=public_bins,
                             sep=sep, encoding=encoding)
    model = check_pgm_settings(model, max_cells)
    neighbours = check_neighbours(neighbours, model)
    rounds = check_rounds(rounds, len(variables), model)
    delta = check_delta(delta, model)
    bins = check_bins(bins, variables, model)
    draw = check_draw(draw, model)
    records_per_draw = check_records_per_draw(records_per_draw, min_count, model)
    per_fit = check_tables_per_fit(tables_per_fit, model)
    if model == "pgm" and public_cols:
        raise ParameterError(f"the model pgm conditions on no public column: give public '' (got "
                             f"{', '.join(public_cols)}), or use the model margins")
    if model == "pgm":
        import_mbi()
    src = None if isinstance(data, pd.DataFrame) else Path(data)
    read = _read_input(data, src, variables, public_cols, categories, model,
                       (tuple(na_values), sep, encoding, decimal), quiet)
    _check_every_column_drawn(read.columns, variables, neighbours)
    rules = as_rules(forbid)
    _check_rule_columns(rules, variables, public_cols, read.columns)
    sk = resolve_key(key)
    if model == "pgm":
        made = _draw_pgm(read, variables, read.cats, rules, epsilon, sk, min_count, max_cells, neighbours,
                         rounds, delta, quiet, bins, draw, records_per_draw, per_fit)
    else:
        made = _draw_margins(read, variables, public_cols, rules, epsilon, sk, pool, sweeps, min_count,
                             public_bins, decimal if src is not None else CSV_DECIMAL)
    read.pop_codes()  # the original's codes are read no more
    released, tables, written_meta = _release(read, made.drawn, variables, rules, neighbours, src,
                                              (tuple(na_values), sep, encoding, decimal))
    eps_total = _design_epsilon(made.measurements, made.selections, float(epsilon), made.zcdp)
    manifest = _manifest(read, made, variables, public_cols, rules, eps_total, float(epsilon), neighbours, src,
                         na_values)
    result = SynthesisResult(released, variables, public_cols, made.measurements, eps_total,
                             manifest["ledger"]["statement"], manifest, shared_draws=made.shared,
                             rows=len(made.drawn), written=tables, missing=written_meta.missing if tables else None)
    if out is not None:
        written = (tables(), written_meta) if tables is not None else \
            _table_and_meta(released, read.kept, written_meta, variables)
        result.out, result.manifest_path = _write(written, Path(out), manifest_out, manifest, force, src, quiet)
    result.seconds = time.perf_counter() - start
    return result


@dataclass
class _Read:
    """The original as the models read it: its columns, each variable's categories and where they came from,
    the records' codes, and the frame (the model margins, or data given as a frame) or the file read as codes
    (:func:`pramkit.synthesize_codes.read_codes`), with the file's metadata and, for a frame read from a
    file, the file as read with its missing codes (``kept``)."""

    columns: list[str]
    cats: dict[str, list[Any]]
    sources: dict[str, CategorySource]
    codes: np.ndarray
    frame: pd.DataFrame | None = None
    coded: CodedFile | None = None
    kept: pa.Table | None = None
    meta: Any = None

    def pop_codes(self) -> np.ndarray:
        """The records' codes, held here no more (so that whoever reads them last frees them)."""
        codes = self.codes
        self.codes = codes[:0]
        if self.coded is not None:
            self.coded.codes = self.codes
        return codes


def _read_input(data: Any, src: Path | None, variables: tuple[str, ...], public_cols: tuple[str, ...],
                categories: Mapping[str, Sequence[Any]] | None, model: str,
                dialect: tuple[tuple[str, ...], str, str, str], quiet: bool = True) -> _Read:
    """The original read (:class:`_Read`): a file for the model pgm as codes, batch by batch; otherwise as a
    frame, with its values' spellings checked and its categories found."""
    na_values, sep, encoding, decimal = dialect
    if model == "pgm" and src is not None:
        coded = read_codes(src, variables, categories, na_values=na_values, sep=sep, encoding=encoding,
                           decimal=decimal, quiet=quiet)
        return _Read(list(coded.meta.columns), coded.cats, coded.sources, coded.codes, coded=coded, meta=coded.meta)
    frame, kept, meta = _opened(data, src, [*variables, *public_cols], na_values, sep, encoding, decimal)
    _check_spellings(frame, [*(v for v in variables if categories is None or v not in categories), *public_cols])
    cats, sources = _categories(frame, variables, categories)
    return _Read([str(c) for c in frame.columns], cats, sources, _encode(frame, variables, cats), frame=frame,
                 kept=kept, meta=meta)


@dataclass
class _Made:
    """What a model drew and measured: the drawn codes (records by variables), the DP tables and choices,
    the records that share a draw, the manifest's ``procedure``, the zCDP figures (or ``None``), each
    variable's compressed categories, and the public cells and bins (the model margins)."""

    drawn: np.ndarray
    measurements: list[Measurement]
    selections: list[Any]
    shared: int
    procedure: dict[str, Any]
    zcdp: dict[str, float] | None = None
    groups: dict[str, list[list[int]] | None] = field(default_factory=dict)
    cells: int = 1
    bins: dict[str, list[float]] = field(default_factory=dict)


def _release(read: _Read, drawn: np.ndarray, variables: tuple[str, ...], rules: Rules | None, neighbours: str,
             src: Path | None, dialect: tuple[tuple[str, ...], str, str, str]
             ) -> tuple[pd.DataFrame | None, Callable[[], Iterator[pa.Table]] | None, Any]:
    """The released records: a frame (and the rules checked on it), or, for a file read as codes, the
    released file's tables made batch by batch from the draws (the model's draws keep every rule:
    :mod:`pramkit.synthesize_pgm` checks them); and the metadata the released file is written with."""
    na_values, sep, encoding, decimal = dialect
    if read.coded is not None:
        assert src is not None
        tables = partial(released_tables, read.coded, drawn, variables, src,
                         every_column=neighbours == "add-remove", na_values=na_values, sep=sep, encoding=encoding,
                         decimal=decimal)
        return None, tables, read.meta
    assert read.frame is not None
    released, read.kept = _released_frame(read.frame, read.kept, drawn, variables, read.cats, copy=src is None,
                                          neighbours=neighbours)
    if rules is not None and rules.breaking(released, list(released.columns)).any():
        raise DataError("the released records break an edit rule the pool should have kept: report this")
    from pramkit.io import TableMeta

    meta = read.meta if read.meta is not None else TableMeta("csv", list(released.columns), sep=sep,
                                                             encoding=encoding)
    return released, None, meta


def _manifest(read: _Read, made: _Made, variables: tuple[str, ...], public_cols: tuple[str, ...],
              rules: Rules | None, eps_total: float, budget: float, neighbours: str, src: Path | None,
              na_values: Sequence[str]) -> dict[str, Any]:
    """The manifest (``released`` is added when the file is written)."""
    cats = read.cats
    as_they_are = [c for c in read.columns if c not in variables]
    ledger_dict = synthesis_ledger(eps_total, budget, read.sources, as_they_are,
                                   missing=[v for v in variables if None in cats[v]], codes=_code_words(src),
                                   neighbours=neighbours, zcdp=made.zcdp)
    pgm = made.procedure.get("model") == "pgm"
    return {
        "format": FORMAT, "version": FORMAT_VERSION,
        **_neighbours_field(neighbours),
        "variables": {v: {"categories": [_json_label(c) for c in cats[v]], "categories_source": read.sources[v],
                          **({"groups": made.groups[v]} if made.groups.get(v) else {})} for v in variables},
        "public": {"columns": list(public_cols), "bins": made.bins, "cells": made.cells},
        "released_as_they_are": as_they_are,
        "rules": rules.to_dict() if rules is not None else None,
        "procedure": made.procedure,
        "measurements": [m.to_dict() for m in made.measurements],
        **({"selections": [x.to_dict() for x in made.selections]} if pgm else {}),
        "ledger": ledger_dict,
        "rows": len(made.drawn),
        "na_values": list(na_values),
    }


def _design_epsilon(measurements: Sequence[Measurement], selections: Sequence[Any], budget: float,
                    zcdp: Mapping[str, float] | None) -> float:
    """The ledger's design epsilon: the tables' and selections' epsilons added, rounded outward (pure), or the
    budget's epsilon of an (epsilon, delta) release accounted in zCDP (its rho within the budget's)."""
    if zcdp is not None:
        return budget
    return record_epsilon([m.epsilon for m in measurements] + [x.epsilon for x in selections])


def _check_every_column_drawn(columns: Sequence[str], variables: Sequence[str], neighbours: str) -> None:
    """Under add-or-remove neighbours, refuse data with a column that is not synthesized (it would be released
    as it is, record by record, and the number of records is not public)."""
    others = [c for c in columns if c not in variables]
    if neighbours == "add-remove" and others:
        raise DataError(f"under add-or-remove neighbours every column is synthesized (the number of records is not "
                        f"public, so no column can be released as it is): the data also has {', '.join(others)}: "
                        "synthesize them too, or drop them first")


def _released_frame(frame: pd.DataFrame, kept: pa.Table | None, drawn: np.ndarray, variables: Sequence[str],
                    cats: Mapping[str, Sequence[Any]], *, copy: bool, neighbours: str
                    ) -> tuple[pd.DataFrame, pa.Table | None]:
    """The released records (the drawn codes as categories) and the table the file is written from.  Under
    replace-one neighbours, the frame read with the synthesized columns replaced (``copy``: a caller's frame is
    copied); under add-or-remove, as many records as were drawn, every column drawn, and the table read
    repeated to that many rows only for its columns' types and labels (every value is replaced)."""
    if neighbours == "add-remove":
        released = pd.DataFrame({v: np.asarray(cats[v], dtype=object)[drawn[:, j]] for j, v in enumerate(variables)},
                                columns=list(frame.columns))
        rows = pa.array(np.arange(len(released)) % max(len(frame), 1))
        return released, None if kept is None else kept.take(rows)
    released = frame.copy(deep=copy)  # a frame read here is not the caller's: its columns are shared
    for j, v in enumerate(variables):
        released[v] = pd.Series(np.asarray(cats[v], dtype=object)[drawn[:, j]], index=frame.index)
    return released, kept


def _neighbours_field(neighbours: str) -> dict[str, str]:
    """The manifest's ``neighbours``: written when the relation is not replace-one (absent, it is)."""
    return {"neighbours": neighbours} if neighbours != "replace-one" else {}


def _draw_margins(read: _Read, variables: tuple[str, ...], public_cols: tuple[str, ...], rules: Rules | None,
                  epsilon: float, sk: SecretKey, pool: int | None, sweeps: int, min_count: int, public_bins: int,
                  decimal: str) -> _Made:
    """The default model (module docstring): the tables measured, the pool drawn and raked, one candidate
    picked per record (and shared by pairs with ``min_count`` 2)."""
    frame, codes, cats = read.frame, read.codes, read.cats
    assert frame is not None
    pool = default_pool(len(frame)) if pool is None else pool
    cell, cell_labels, bins = _public_cells(frame, public_cols, public_bins, decimal)
    check_memory(len(frame), pool, {v: len(cats[v]) for v in variables}, len(cell_labels))
    joints = _joints(rules, frame, public_cols, variables, cats)
    measurements, exact_bytes = _measure(codes, cell, len(cell_labels), variables, cats, cell_labels, epsilon, sk)
    targets = _targets(measurements, cell, len(frame), rules, cats, len(cell_labels))
    draw_key = sk.for_data("synthesize", *exact_bytes, _settings_bytes(variables, public_cols, epsilon, pool,
                                                                         sweeps, min_count, public_bins))
    groups, _ = _exact_groups(*_with_holes(frame, public_cols, [v for v in variables if None in cats[v]]))
    cand = _pool(targets, cell, joints, pool, draw_key, len(variables))
    weights = _rake(cand, cell, targets, np.ones(cand.shape[:2], dtype=bool), sweeps)
    pick = _pick(weights, uniforms(draw_key, "@pick", 0, len(frame)))
    drawn = cand[np.arange(len(frame)), pick]
    shared = 0
    if min_count == 2:
        drawn, shared = _share_draws(drawn, groups, uniforms(draw_key, "@pairs", 0, len(frame)))
    return _Made(drawn, measurements, [], shared, {"pool": pool, "sweeps": sweeps, "min_count": min_count,
                                                   "public_bins": public_bins}, cells=len(cell_labels), bins=bins)


def _draw_pgm(read: _Read, variables: tuple[str, ...], cats: dict[str, list[Any]], rules: Rules | None,
              epsilon: float, sk: SecretKey, min_count: int, max_cells: int, neighbours: str = "replace-one",
              rounds: int | None = None, delta: float | None = None, quiet: bool = True,
              bins: Mapping[str, int] | None = None, draw: str = "systematic",
              records_per_draw: float | None = None, tables_per_fit: int = 1) -> _Made:
    """The model ``"pgm"`` (:mod:`pramkit.synthesize_pgm`): marginals chosen and measured under the budget, a
    graphical model fitted to them with the rules as structural zeros, one record drawn per record (under
    add-or-remove neighbours, as many as the noisy tables estimate), and shared by pairs with ``min_count``
    2.  ``rounds``: the nominal rounds (``None``: the default, which the draws' key does not name).  Under zCDP
    (``delta``), also the accounting's figures for the ledger (:func:`zcdp_figures`; else None).  Last, each
    variable's compressed categories (:mod:`pramkit.pgm_compression`: ``None`` for one not compressed);
    ``bins``: the declared bins (``None``: none, which the draws' key does not name); ``draw``: the draw
    setting (:mod:`pramkit.pgm_balance`; ``"systematic"``, the only draw before it, the draws' key does not
    name); ``records_per_draw``: the records given each draw on average (``None``: ``min_count``, which the
    draws' key does not name); ``tables_per_fit``: the tables chosen between two fits (1, AIM's order, the draws'
    key does not name)."""
    from pramkit.synthesize_pgm import default_rounds, fit_and_draw

    holes = [v for v in variables if None in cats[v]]
    if holes:
        raise missing_values(holes[0])
    if rounds == default_rounds(len(variables)):
        rounds = None  # the default asked for by its number: the same release
    settings = json.dumps([list(variables), float(epsilon), "pgm", max_cells, min_count,
                           *([neighbours] if neighbours != "replace-one" else []),
                           *([{"rounds": rounds}] if rounds is not None else []),
                           *([{"delta": delta}] if delta is not None else []),
                           *([{"bins": bins}] if bins else []),
                           *([{"draw": draw}] if draw != "systematic" else []),
                           *([{"records_per_draw": records_per_draw}] if records_per_draw is not None else []),
                           *([{"tables_per_fit": tables_per_fit}] if tables_per_fit != 1 else [])]
                          ).encode()
    draw_key = sk.for_data("synthesize-pgm", Pieces(read.codes.size * 8, code_chunks(read.codes)), settings)
    fit = fit_and_draw(read.pop_codes(), variables, cats, epsilon=epsilon, key=sk, draw_key=draw_key, rules=rules,
                       max_cells=max_cells, neighbours=neighbours, rounds=rounds, delta=delta,
                       share=min_count if records_per_draw is None else records_per_draw,
                       bins=bins, draw_by=draw, tables_per_fit=tables_per_fit, quiet=quiet)
    drawn, shared = fit.drawn, fit.shared  # with min-count 2, half as many drawn, each given to two records
    measurements = [Measurement(t.axes, t.shape, t.epsilon, t.noisy, t.sensitivity, t.sigma2)
                    for t in fit.measurements]
    zcdp = None if delta is None else zcdp_figures(float(epsilon), delta, [m.to_dict() for m in measurements],
                                                   [x.to_dict() for x in fit.selections])
    groups = {v: fit.compression.groups_of(v) for v in variables}
    procedure = {"model": "pgm", "max_cells": max_cells, "rounds": fit.rounds, "min_count": min_count,
                 **({"delta": delta} if delta is not None else {}), "compress": COMPRESS_SD,
                 "compress_rules": "jointly", **({"bins": dict(bins)} if bins else {}), "draw": draw,
                 "balanced": fit.balanced,
                 **({"records_per_draw": records_per_draw} if records_per_draw is not None else {}),
                 **({"tables_per_fit": tables_per_fit} if tables_per_fit != 1 else {})}
    return _Made(drawn, measurements, fit.selections, shared, procedure, zcdp, groups)


def zcdp_figures(epsilon: float, delta: float, measurements: Sequence[Mapping[str, Any]],
                 selections: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The ledger's figures of an (``epsilon``, ``delta``) release accounted in zCDP, from its published tables
    and selections alone: ``rho``, their exact zCDP added up (each table's ``sensitivity / (2 sigma2)``, each
    selection's ``epsilon^2 / 8``) rounded up; ``rho_budget``, the largest rho whose zCDP implies (``epsilon``,
    ``delta``)-DP; ``alpha``, the order at which the conversion gives it
    (:func:`pramkit.privacy.zcdp.delta_at`).

    Examples
    --------
    >>> f = zcdp_figures(1.0, 1e-5, [{"sigma2": 100.0, "sensitivity": 1}], [{"epsilon": 0.2}])
    >>> round(f["rho"], 6), f["rho"] <= f["rho_budget"], f["delta"]    # 1 / 200 + 0.2^2 / 8, rounded up
    (0.01, True, 1e-05)
    """
    from fractions import Fraction

    from pramkit.privacy.gaussian import gaussian_rho
    from pramkit.privacy.zcdp import best_alpha, exponential_rho, rho_for
    from pramkit.synthesize_pgm import _up

    spent = sum((gaussian_rho(float(m["sigma2"]), int(m["sensitivity"])) for m in measurements), Fraction(0))
    spent += sum((exponential_rho(float(x["epsilon"])) for x in selections), Fraction(0))
    budget = rho_for(epsilon, delta)
    return {"delta": float(delta), "rho": _up(spent), "rho_budget": budget, "alpha": best_alpha(budget, epsilon)}


#: The guarantee sentence's words for the change between neighbours, as the ledger writes them (replace-one) and
#: under add-or-remove neighbours.
REPLACE_ONE_WORDS = "changing one person's record in its perturbed variables"
ADD_REMOVE_WORDS = ("adding or removing one person's record (add-or-remove neighbours: the number of records is "
                    "not public either)")


def synthesis_ledger(eps_total: float, budget: float, sources: Mapping[str, CategorySource],
                     as_they_are: Sequence[str], *, missing: Sequence[str] = (), codes: str | None = None,
                     neighbours: str = "replace-one", zcdp: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The ledger of a synthesized release: the tables' epsilon (``eps_total``) within ``budget``, the
    variables' category ``sources`` (a data source stated as such) and the guarantee sentence, which names
    the columns released ``as_they_are`` and what is released exactly: which values of the variables
    ``missing`` are missing (kept missing, none made), and which missing ``codes`` they hold (in words: a
    Stata, SPSS or SAS file's codes, :func:`pramkit.io_stat.missing_code_words`).  Under ``neighbours``
    ``"add-remove"`` the sentence bounds what adding or removing one record changes.  ``zcdp``: the figures of an
    (epsilon, delta) release accounted in zCDP (:func:`zcdp_figures`), stated in the ledger and the sentence.

    Examples
    --------
    >>> led = synthesis_ledger(1.0, 1.0, {"a": "data"}, ["sex"])
    >>> led["design_epsilon"], led["data_dependent"], led["statement"][:32]
    (1.0, ['the categories of a were read from the data'], 'Given the published manifest, ch')
    >>> synthesis_ledger(1.0, 1.0, {"a": "declared"}, [], neighbours="add-remove")["statement"][:46]
    "Adding or removing one person's record (add-or"
    """
    ledger = Ledger(design_epsilon=eps_total, frequencies="dp_counts", record_epsilon_budget=float(budget),
                    categories=dict(sources),
                    data_dependent=tuple(f"the categories of {v} were read from the data" for v, s in sources.items()
                                         if s == "data"))
    zeros = [0.0] * len(sources)
    facts = [ExactFact.of("missing", tuple(missing))] if missing else []
    facts += [ExactFact.of("missing_code", tuple(missing), values=(codes,))] if missing and codes else []
    statement = ledger.statement(zeros, facts=facts, unperturbed=list(as_they_are))
    if neighbours == "add-remove":
        words = [(w[0].upper() + w[1:], a[0].upper() + a[1:]) for w, a in ((REPLACE_ONE_WORDS, ADD_REMOVE_WORDS),)]
        words += [(REPLACE_ONE_WORDS, ADD_REMOVE_WORDS)]
        said = [(w, a) for w, a in words if w in statement]
        if not said:  # pragma: no cover - the ledger's sentence always says it
            raise DataError("the guarantee sentence does not name the change between neighbours: report this")
        statement = statement.replace(said[0][0], said[0][1], 1)
    if zcdp is not None:
        statement = zcdp_statement(statement, zcdp)
    return {**ledger.to_dict(zeros, facts=facts), **(dict(zcdp) if zcdp is not None else {}), "statement": statement}


def zcdp_statement(statement: str, zcdp: Mapping[str, float]) -> str:
    """The ledger's sentence for an (epsilon, delta) release accounted in zCDP: the factor bound gains its additive
    delta, and a sentence says where the pair comes from.

    Examples
    --------
    >>> zcdp_statement("... by a factor of at most e^1 = 2.718; this record epsilon of 1 covers it.",
    ...                {"delta": 1e-5, "rho": 0.03, "rho_budget": 0.0305, "alpha": 20.5})[:78]
    '... by a factor of at most e^1 = 2.718, up to an additive delta of 1e-05; this'
    """
    import re

    bound = re.search(r"by a factor of at most e\^[^;,]+", statement)
    if bound is None:  # pragma: no cover - the ledger's sentence always states its factor
        raise DataError("the guarantee sentence does not state its factor: report this")
    statement = statement[:bound.end()] + f", up to an additive delta of {zcdp['delta']:g}" + statement[bound.end():]
    return (statement + f" The tables carry discrete Gaussian noise and each choice of a table is made by the "
            f"exponential mechanism, accounted in zero-concentrated DP: rho {zcdp['rho']:.6g} spent of the "
            f"{zcdp['rho_budget']:.6g} that implies this (epsilon, delta) at order alpha {zcdp['alpha']:.6g} "
            "(Canonne, Kamath and Steinke 2020).")


def _code_words(src: Path | None) -> str | None:
    """The missing codes of the data file in words (``None``: a frame, or a format without codes)."""
    from pramkit.io_stat import missing_code_words

    return None if src is None else missing_code_words(src)


def default_pool(rows: int) -> int:
    """Candidates per record for a file of ``rows`` records: :data:`POOL`, fewer when the pool would hold more
    than :data:`POOL_CANDIDATES` candidates, never fewer than 8.

    Examples
    --------
    >>> default_pool(27_253), default_pool(1_000_000), default_pool(10_000_000)
    (40, 10, 8)
    """
    return max(8, min(POOL, POOL_CANDIDATES // max(rows, 1)))


def check_settings(epsilon: Any, *, min_count: Any = 2, pool: Any = None, sweeps: Any = SWEEPS,
                   public_bins: Any = PUBLIC_BINS, sep: Any = CSV_SEP, encoding: Any = CSV_ENCODING) -> float:
    """Check the settings of :func:`synthesize_release` before any data is read, each by the rule (and in the
    words) ``pramkit design`` and ``pramkit apply`` use for it: the budget positive, finite and at most
    :data:`pramkit.design.dp.optimal.MAX_EPSILON`, the CSV dialect as written, the integers in their ranges.

    Parameters
    ----------
    epsilon : number
        The central budget.
    min_count, pool, sweeps, public_bins, sep, encoding
        As for :func:`synthesize_release`.

    Returns
    -------
    float
        The budget.

    Raises
    ------
    ParameterError
        The first setting refused, in one line naming it.

    Examples
    --------
    >>> check_settings(2)
    2.0
    >>> check_settings(1e308)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: epsilon = 1e+308 is too large (at most 700); beyond a few dozen nats it protects nothing (a PRAM matrix is then the identity, a noisy count the count)
    >>> check_settings(1, sweeps=10**9)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: sweeps must be an integer from 1 to 1000, got 1000000000
    """
    from pramkit.design.dp.optimal import check_epsilon
    from pramkit.release.rules import check_settings as check_release_settings

    check_release_settings(epsilon=epsilon, sep=sep, encoding=encoding)
    budget = check_epsilon(epsilon)
    if min_count not in (1, 2) or isinstance(min_count, bool):
        raise ParameterError(f"min_count must be 1 or 2, got {min_count!r}")
    for name, value, lo, hi in (("pool", 2 if pool is None else pool, 2, POOL_CANDIDATES), ("sweeps", sweeps, 1, MAX_SWEEPS),
                                ("public_bins", public_bins, 1, MAX_TABLE_CELLS)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
            raise ParameterError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")
    return budget


def check_memory(rows: int, pool: int, levels: Mapping[str, int], cells: int, limit: int | None = None) -> int:
    """The memory a release will hold, estimated from its size before any work (bytes), refused in one line
    naming the figure and what to change when it passes ``limit`` (default: the machine's memory).

    The pool holds, per candidate, four bytes per variable, its weight, its cell while a table is raked and a
    flag (:data:`BYTES_PER_CANDIDATE` in all per variable and candidate, about); each measured table (the
    public cells by each variable, each pair of variables) its noisy counts, its projection and a rescaling;
    the draws :data:`DRAW_CELLS` proposal cells at a time.

    Parameters
    ----------
    rows, pool : int
        Records and candidates per record.
    levels : mapping of str to int
        Each synthesized variable's number of categories.
    cells : int
        The number of public cells.
    limit : int, optional
        Bytes allowed (default: the machine's physical memory, when known).

    Returns
    -------
    int
        The estimate, bytes.

    Raises
    ------
    ParameterError
        A measured table of more than :data:`MAX_TABLE_CELLS` cells, or an estimate above ``limit``.

    Examples
    --------
    >>> round(check_memory(1000, 40, {"a": 3, "b": 5}, 10) / 2**20)   # MiB, mostly the draws' proposals
    97
    >>> check_memory(1000, 40, {"id": 200_000, "b": 5}, 10)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the table @public x id has 2,000,000 cells (10 public cells by 200,000 categories), more than 1,000,000: recode id to fewer categories first, or use fewer public cells (public_bins)
    >>> check_memory(10**6, 40, {"a": 3}, 10, limit=2**29)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the synthesis would hold about 0.9 GiB (1,000,000 records by 40 candidates of 1 variable, and tables of 30 cells), more than the 0.5 GiB of this machine: synthesize fewer variables or records, or recode to fewer categories first
    """
    names = list(levels)
    sizes = [math.prod(cells if a == "@public" else levels[a] for a in ax) for ax in measured_tables(names)]
    for ax, size in zip(measured_tables(names), sizes):
        if size > MAX_TABLE_CELLS:
            by = " by ".join(f"{cells:,} public cells" if a == "@public" else f"{levels[a]:,} categories" for a in ax)
            raise ParameterError(f"the table {' x '.join(ax)} has {size:,} cells ({by}), more than "
                                 f"{MAX_TABLE_CELLS:,}: recode {' and '.join(a for a in ax if a != '@public')} "
                                 "to fewer categories first, or use fewer public cells (public_bins)")
    need = rows * pool * (4 * len(names) + BYTES_PER_CANDIDATE) + 24 * sum(sizes) + 24 * DRAW_CELLS
    if limit is None:
        limit = _machine_memory()
    if limit is not None and need > limit:
        raise ParameterError(f"the synthesis would hold about {need / 2**30:.1f} GiB ({rows:,} records by {pool} "
                             f"candidates of {len(names)} variable{'s' * (len(names) != 1)}, and tables of {sum(sizes):,} cells), more than "
                             f"the {limit / 2**30:.1f} GiB of this machine: synthesize fewer variables or records, "
                             "or recode to fewer categories first")
    return need


def _machine_memory() -> int | None:
    """The machine's physical memory in bytes, ``None`` where it is not known."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _names(value: Sequence[str] | str, what: str) -> tuple[str, ...]:
    """Column names from a list or a comma-separated text."""
    names = tuple(s.strip() for s in value.split(",")) if isinstance(value, str) else tuple(value)
    if any(not n for n in names) or len(set(names)) != len(names):
        raise ParameterError(f"{what}: names must be non-empty and distinct, got {list(names)}")
    return names


def _check_rule_columns(rules: Rules | None, variables: Sequence[str], public: Sequence[str],
                        columns: Sequence[Any]) -> None:
    """Refuse a rule the draws cannot keep: one naming a synthesized variable and a column that is
    neither synthesized nor public, or a column the data lacks."""
    if rules is None:
        return
    known = set(variables) | set(public)
    for rule in rules.rules:
        named = set(rule.values)
        absent = sorted(named - {str(c) for c in columns})
        if absent:
            raise ParameterError(f"the rule {rule.describe()} names {', '.join(absent)}, which the data lacks")
        outside = sorted(named - known)
        if named & set(variables) and outside:
            raise ParameterError(f"the rule {rule.describe()} names {', '.join(outside)}, which is neither "
                                 "synthesized nor public: make it public (the model conditions on it) or drop the rule")


def _read_source(path: Path, na_values: Sequence[str], sep: str, encoding: str, decimal: str = CSV_DECIMAL
                 ) -> tuple[pd.DataFrame, pa.Table, Any]:
    """The file's records with its missing codes as missing (what the model reads), the file as read with its
    codes kept (what the released file is made from: every other column as it is, a missing value as it
    was), and what the reader learnt of it (labels, user-missing codes, the CSV dialect)."""
    from pramkit.io import blank_missing_codes, iter_batches

    meta, batches = iter_batches(path, na_values=tuple(na_values), sep=sep, encoding=encoding, keep_missing_codes=True,
                                 decimal=decimal)
    tables = list(batches)
    if not tables or sum(t.num_rows for t in tables) == 0:
        raise DataError(f"file {str(path)!r} has no data rows")
    kept = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return blank_missing_codes(kept, meta.missing).to_pandas(), kept, meta


def _opened(data: Any, src: Path | None, columns: Sequence[str], na_values: Sequence[str], sep: str,
            encoding: str, decimal: str = CSV_DECIMAL) -> tuple[pd.DataFrame, Any, Any]:
    """The data as a frame (a file read with its missing codes kept, :func:`_read_source`), with the columns
    named and at least two records, or the one-line error that says what is missing."""
    frame, kept, meta = (data, None, None) if src is None else _read_source(src, na_values, sep, encoding, decimal)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise absent_columns(missing, list(frame.columns))
    if len(frame) < 2:
        raise DataError("the data has fewer than 2 records: nothing to synthesize")
    return frame, kept, meta


def _released_table(kept: pa.Table, released: pd.DataFrame, variables: Sequence[str]) -> pa.Table:
    """The released file as written: the file read (its missing codes kept), each synthesized variable drawn
    where it was not missing and as it was (a code, or empty) where it was."""
    import pyarrow.compute as pc

    for v in variables:
        i = kept.column_names.index(v)
        old = kept.column(i)
        drawn = pa.array(released[v].to_numpy(dtype=object), from_pandas=True)
        try:
            drawn = drawn.cast(old.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise uncastable(v, old.type) from None
        kept = kept.set_column(i, kept.field(i), pc.if_else(pa.array(released[v].isna().to_numpy()), old, drawn))
    return kept


def _categories(frame: pd.DataFrame, variables: Sequence[str], declared: Mapping[str, Sequence[Any]] | None,
                ) -> tuple[dict[str, list[Any]], dict[str, CategorySource]]:
    """Each variable's categories (declared, or read from the data) and where they came from."""
    cats: dict[str, list[Any]] = {}
    sources: dict[str, CategorySource] = {}
    for v in variables:
        if declared is not None and v in declared:
            # a missing value is the category None, declared or not: kept missing, and nothing becomes missing
            cats[v] = list(dict.fromkeys([*(c for c in declared[v] if c is not None),
                                          *([None] if frame[v].isna().any() else [])]))
            sources[v] = "declared"
        else:
            vals = frame[v].dropna().unique().tolist()
            cats[v] = sorted(vals, key=lambda x: (str(type(x)), x)) + ([None] if frame[v].isna().any() else [])
            sources[v] = "data"
    return cats, sources


def _check_spellings(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    """Refuse a column whose distinct values hold one value spelled two ways (surrounding whitespace, NFC and NFD,
    ``3`` and ``3.0``): the rule of design, risk and swapping (:func:`pramkit.codebook.spelling_clash`), in
    their words, naming the first row of each spelling."""
    for c in columns:
        col = frame[c]
        clash = spelling_clash(sort_labels(col.dropna().unique().tolist()))  # in design's order
        if clash is not None:
            texts = col.astype(object).map(lambda x: canonical(x) if pd.notna(x) else None).to_numpy()
            rows = [int(np.flatnonzero(texts == canonical(x))[0]) + 1 for x in clash[:2]]
            raise spelling_error(c, clash, (rows[0], rows[1]))


def _encode(frame: pd.DataFrame, variables: Sequence[str], cats: Mapping[str, list[Any]]) -> np.ndarray:
    """The records' codes (n x variables); a value outside the declared categories is refused."""
    out = np.empty((len(frame), len(variables)), dtype=np.int64)
    for j, v in enumerate(variables):
        index = category_index(cats[v])
        col = frame[v].astype(object).where(frame[v].notna(), None)
        texts = col.map(lambda x: canonical(x) if x is not None else None)
        coded = texts.map(index)
        if coded.isna().any():
            bad = texts[coded.isna()].iloc[0]
            raise outside_categories(v, bad)
        out[:, j] = coded.to_numpy(dtype=np.int64)
    return out


def _public_cells(frame: pd.DataFrame, public: Sequence[str], most: int, decimal: str = CSV_DECIMAL
                  ) -> tuple[np.ndarray, list[tuple], dict[str, list[float]]]:
    """Each record's public cell, the cells' labels and the cut points of binned numeric columns (a column of
    texts read as numbers with the decimal mark ``decimal``: :func:`pramkit.io.csv_numbers`)."""
    from pramkit.io import csv_numbers

    if not public:
        return np.zeros(len(frame), dtype=np.int64), [()], {}
    parts, bins = [], {}
    for c in public:
        col = frame[c]
        num = pd.Series(csv_numbers(col, c, decimal=decimal, strict=False), index=col.index)
        if col.nunique(dropna=True) > most and num.notna().sum() == col.notna().sum():
            cuts = np.unique(np.quantile(num.dropna().to_numpy(dtype=float), np.linspace(0, 1, most + 1)[1:-1]))
            bins[c] = cuts.tolist()
            parts.append(pd.Series(np.where(num.isna(), -1, np.searchsorted(cuts, num.to_numpy(), side="right")),
                                   index=frame.index))
        else:
            parts.append(col.astype(object).where(col.notna(), None).map(lambda x: None if x is None else canonical(x)))
    keys = pd.MultiIndex.from_arrays([p.to_numpy() for p in parts]) if len(parts) > 1 else pd.Index(parts[0])
    cell, labels = pd.factorize(keys, use_na_sentinel=False)
    return cell.astype(np.int64), [tuple(x) if isinstance(x, tuple) else (x,) for x in labels], bins


def measured_tables(variables: Sequence[str]) -> list[tuple[str, ...]]:
    """The measured tables' axes: each variable given the public cell, then each pair.

    Examples
    --------
    >>> measured_tables(["a", "b"])
    [('@public', 'a'), ('@public', 'b'), ('a', 'b')]
    """
    out: list[tuple[str, ...]] = [("@public", v) for v in variables]
    return out + list(itertools.combinations(variables, 2))


def _measure(codes: np.ndarray, cell: np.ndarray, cells: int, variables: Sequence[str],
             cats: Mapping[str, list[Any]], cell_labels: list[tuple], epsilon: float, key: SecretKey,
             ) -> tuple[list[Measurement], list[bytes]]:
    """Every table, measured with discrete Laplace noise at its share of the budget."""
    from pramkit.privacy.geometric import dp_counts

    col = {v: j for j, v in enumerate(variables)}
    axes = measured_tables(variables)
    shapes = [tuple(cells if a == "@public" else len(cats[a]) for a in ax) for ax in axes]
    big = [ax for ax, s in zip(axes, shapes) if math.prod(s) > MAX_TABLE_CELLS]
    if big:
        raise ParameterError(f"the table {' x '.join(big[0])} has more than {MAX_TABLE_CELLS:,} cells: "
                             "use fewer public cells (public_bins) or fewer categories")
    shares = split_within(float(epsilon), 0.0, [math.sqrt(math.prod(s)) for s in shapes])
    out, exact_bytes = [], []
    for ax, shape, eps in zip(axes, shapes, shares):
        a = cell if ax[0] == "@public" else codes[:, col[ax[0]]]
        b = codes[:, col[ax[1]]]
        exact = np.bincount(a * shape[1] + b, minlength=shape[0] * shape[1]).astype(np.int64)
        labels = [ax[0], ax[1], *(str(x) for x in cell_labels)] if ax[0] == "@public" else list(ax)
        rng = key.design_random(noise_query("x".join(ax), labels + [str(c) for a_ in ax if a_ != "@public"
                                                                    for c in cats[a_]], eps),
                                measured_bytes(exact))
        noisy = dp_counts(exact, eps, sensitivity=2, rng=rng).noisy
        out.append(Measurement(ax, shape, float(eps), noisy.reshape(shape)))
        exact_bytes.append(measured_bytes(exact))
    return out, exact_bytes


def project_simplex(v: np.ndarray, totals: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the non-negative rows with sum ``totals``,
    zero where ``allowed`` is False.

    Parameters
    ----------
    v : numpy.ndarray
        Rows to project (2-D).
    totals : numpy.ndarray
        Each row's sum (>= 0).
    allowed : numpy.ndarray of bool, optional
        The cells that may be positive (a row with none is all zero).

    Returns
    -------
    numpy.ndarray
        The projections (float).

    Examples
    --------
    >>> project_simplex(np.array([[3.0, -1.0, 0.0]]), np.array([4.0])).tolist()
    [[3.5, 0.0, 0.5]]
    >>> project_simplex(np.array([[3.0, -1.0, 0.0]]), np.array([4.0]), np.array([[True, False, True]])).tolist()
    [[3.5, 0.0, 0.5]]
    """
    v = np.asarray(v, dtype=float)
    ok = np.ones(v.shape, dtype=bool) if allowed is None else np.broadcast_to(allowed, v.shape)
    w = np.where(ok, v, -np.inf)
    u = -np.sort(-w, axis=1)
    finite = np.isfinite(u)
    css = np.cumsum(np.where(finite, u, 0.0), axis=1) - np.asarray(totals, dtype=float)[:, None]
    k = np.arange(1, v.shape[1] + 1)
    cond = finite & (u - css / k > 0)
    has = cond.any(axis=1)
    rho = v.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(len(v)), rho] / (rho + 1)
    out = np.where(ok, np.maximum(v - theta[:, None], 0.0), 0.0)
    out[~has] = 0.0
    return out


def _targets(measurements: list[Measurement], cell: np.ndarray, n: int, rules: Rules | None,
             cats: Mapping[str, list[Any]], cells: int) -> list[np.ndarray]:
    """Each noisy table projected onto the tables with its known totals, rules' zeros kept."""
    counts = np.bincount(cell, minlength=cells).astype(float)
    out = []
    for m in measurements:
        if m.axes[0] == "@public":
            out.append(project_simplex(m.noisy, counts))
        else:
            allowed = None
            if rules is not None:
                a, b = m.axes
                grid = list(itertools.product(cats[a], cats[b]))
                allowed = ~rules.forbidden((a, b), grid).reshape(1, -1)
            out.append(project_simplex(m.noisy.reshape(1, -1), np.array([float(n)]), allowed).reshape(m.shape))
    return out


def _exact_groups(frame: pd.DataFrame, public: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
    """Each record's group of exact public values (codes), and each group's values (one tuple per group;
    a single group ``()`` without public columns)."""
    if not public:
        return np.zeros(len(frame), dtype=np.int64), [()]
    pub = frame[list(public)].astype(object).where(frame[list(public)].notna(), None)
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(pub), use_na_sentinel=False)
    return codes.astype(np.int64), [tuple(u) for u in uniques]


@dataclass(frozen=True)
class _Joint:
    """Synthesized variables the pool draws together (:func:`_rule_groups`): their names and positions, their
    numbers of categories, each record's group of the public values their rules name (codes), and, per group,
    the cells of their joint table the rules allow (groups x cells; ``None``: no rule names them)."""

    names: tuple[str, ...]
    index: tuple[int, ...]
    sizes: tuple[int, ...]
    group: np.ndarray
    allowed: np.ndarray | None

    @property
    def stream(self) -> str:
        """The name of the uniforms of their candidates (a variable drawn alone keeps its own name)."""
        return f"@pool|{self.names[0]}" if len(self.names) == 1 else "@pool|" + json.dumps(list(self.names))


def _rule_groups(rules: Rules | None, variables: Sequence[str]) -> list[tuple[str, ...]]:
    """The synthesized variables drawn together: those a rule naming two or more of them ties, directly or
    through others; each other variable alone (in the order of ``variables``).

    Examples
    --------
    >>> _rule_groups(Rules.of([{"a": "1", "c": "2"}, {"d": "1", "sex": "f"}]), ["a", "b", "c", "d"])
    [('a', 'c'), ('b',), ('d',)]
    """
    root = {v: v for v in variables}

    def find(v: str) -> str:
        while root[v] != v:
            v = root[v]
        return v

    for rule in rules.rules if rules is not None else ():
        named = [v for v in variables if v in rule.values]
        for v in named[1:]:
            root[find(v)] = find(named[0])
    groups: dict[str, list[str]] = {}
    for v in variables:
        groups.setdefault(find(v), []).append(v)
    return [tuple(g) for g in groups.values()]


def _joints(rules: Rules | None, frame: pd.DataFrame, public: Sequence[str], variables: Sequence[str],
            cats: Mapping[str, list[Any]]) -> list[_Joint]:
    """The groups of variables drawn together, each with the cells allowed given the public values (the rules)
    and the record's missing values (a missing value stays missing, and nothing becomes missing): the rules,
    the public columns, which values are missing (released exactly) and the categories only, nothing measured."""
    out = []
    for names in _rule_groups(rules, variables):
        index = tuple(variables.index(v) for v in names)
        sizes = tuple(len(cats[v]) for v in names)
        sub = tuple(r for r in (rules.rules if rules is not None else ()) if set(r.values) & set(names))
        holes = [v for v in names if None in cats[v]]
        if not sub and not holes:
            out.append(_Joint(names, index, sizes, np.zeros(len(frame), dtype=np.int64), None))
            continue
        named = [c for c in public if any(c in r.values for r in sub)]
        group, values = _exact_groups(*_with_holes(frame, named, holes))
        cells = math.prod(sizes)
        if len(values) * cells > MAX_TABLE_CELLS:
            raise ParameterError(f"the rules on {', '.join(names)} need {len(values) * cells:,} cells checked "
                                 f"({len(values):,} combinations of {', '.join(named) or 'no public column'} by "
                                 f"{cells:,} of their values), more than {MAX_TABLE_CELLS:,}: recode to fewer "
                                 "categories first")
        allowed = np.ones((len(values), cells), dtype=bool)
        if sub:
            grid = [(*g[:len(named)], *c) for g in values for c in itertools.product(*(cats[v] for v in names))]
            allowed &= ~Rules(sub).forbidden((*named, *names), grid).reshape(len(values), cells)
        codes = np.unravel_index(np.arange(cells), sizes)
        for t, v in enumerate(holes):
            drawn_missing = codes[names.index(v)] == cats[v].index(None)
            is_missing = np.array([bool(g[len(named) + t]) for g in values])
            allowed &= drawn_missing[None, :] == is_missing[:, None]
        out.append(_Joint(names, index, sizes, group, allowed))
    return out


def _with_holes(frame: pd.DataFrame, columns: Sequence[str], holes: Sequence[str]) -> tuple[pd.DataFrame, list[Any]]:
    """The values of ``columns`` and whether each variable of ``holes`` is missing, as columns of one frame (the
    record's group: public values, and missing values, both released exactly)."""
    keys = pd.DataFrame({i: frame[c] for i, c in enumerate(columns)}, index=frame.index)
    for t, v in enumerate(holes):
        keys[len(columns) + t] = frame[v].isna()
    return keys, list(keys.columns)


def _pair_factor(targets: list[np.ndarray], k: int, joint: _Joint) -> np.ndarray:
    """The association of each pair of a group's variables, as their measured (projected, noisy) table states
    it: p(x, y) / (p(x) p(y)), multiplied over the pairs (an array over the group's joint cells; ones for a
    variable alone)."""
    pairs = list(itertools.combinations(range(k), 2))
    m = len(joint.index)
    base = np.ones(joint.sizes)
    for a, b in itertools.combinations(range(m), 2):
        t = targets[k + pairs.index((joint.index[a], joint.index[b]))] + SMOOTH
        ratio = t * t.sum() / (t.sum(axis=1, keepdims=True) * t.sum(axis=0, keepdims=True))
        shape = [1] * m
        shape[a], shape[b] = joint.sizes[a], joint.sizes[b]
        base = base * ratio.reshape(shape)
    return base


def _pool(targets: list[np.ndarray], cell: np.ndarray, joints: list[_Joint], pool: int, key: SecretKey,
          k: int) -> np.ndarray:
    """``pool`` candidates per record (n x pool x ``k`` variables): each group of variables drawn together
    from the measured tables (each variable's law given the record's public cell, times the association of
    each pair), restricted to the cells the rules allow given the record's public values.  Every candidate
    keeps every rule."""
    n = len(cell)
    cand = np.empty((n, pool, k), dtype=np.int32)
    for joint in joints:
        base = _pair_factor(targets, k, joint)
        for lo in range(0, n, BLOCK_ROWS):
            rows = slice(lo, lo + BLOCK_ROWS)
            codes = _joint_candidates(joint, targets, base, cell[rows], joint.group[rows], key, lo, pool)
            for t, j in enumerate(joint.index):
                cand[rows, :, j] = codes[t]
    return cand


def _joint_candidates(joint: _Joint, targets: list[np.ndarray], base: np.ndarray, cell: np.ndarray,
                      group: np.ndarray, key: SecretKey, start: int, pool: int) -> tuple[np.ndarray, ...]:
    """The candidates of one group of variables for a block of records (the records ``start`` on): each
    variable's codes (block x pool), drawn at the group's keyed uniforms, :data:`DRAW_CELLS` proposal cells
    at a time (records of one public cell and one group of rule values share their proposal)."""
    groups = 1 if joint.allowed is None else len(joint.allowed)
    uniq, inv = np.unique(cell * groups + group, return_inverse=True)
    inv = inv.ravel()
    u = uniforms(key, joint.stream, start * pool, len(cell) * pool).reshape(len(cell), pool)
    flat = np.empty(u.shape, dtype=np.int64)
    step = max(1, DRAW_CELLS // base.size)
    for s in range(0, len(uniq), step):
        cells, rule_groups = np.divmod(uniq[s:s + step], groups)
        sel = np.flatnonzero((inv >= s) & (inv < s + step))
        flat[sel] = _inverse_cdf(_proposal(joint, targets, base, cells, rule_groups), inv[sel] - s, u[sel])
    return tuple(np.unravel_index(flat, joint.sizes))


def _proposal(joint: _Joint, targets: list[np.ndarray], base: np.ndarray, cells: np.ndarray,
              groups: np.ndarray) -> np.ndarray:
    """The pool's law of a group's joint cells (rows: the public ``cells`` with their rule ``groups``): each
    variable's measured law given the public cell (every value at least :data:`SMOOTH`), times the pairs'
    association, zero where a rule forbids."""
    m = len(joint.sizes)
    q = base[None]
    for t, j in enumerate(joint.index):
        cond = targets[j][cells] + SMOOTH
        shape = [len(cells)] + [1] * m
        shape[1 + t] = joint.sizes[t]
        q = q * (cond / cond.sum(axis=1, keepdims=True)).reshape(shape)
    q = q.reshape(len(cells), -1)
    if joint.allowed is not None:
        q = q * joint.allowed[groups]
    if not (q.sum(axis=1) > 0).all():
        what = (f"{joint.names[0]}: an edit rule forbids every value" if len(joint.names) == 1 else
                f"{', '.join(joint.names)}: the edit rules forbid every combination of their values")
        raise DataError(f"{what} for some record's public values: check the rules")
    return q


def _inverse_cdf(q: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """For each record (its row of ``q``, in ``rows``), the cells drawn at its uniforms ``u`` (records x pool)
    by the inverse of the row's distribution; a cell of probability 0 is never drawn.  One sorted search
    over all rows at once: row ``r``'s cumulative probabilities are shifted by ``2 r``.

    Examples
    --------
    >>> q = np.array([[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    >>> _inverse_cdf(q, np.array([0, 1, 0]), np.array([[0.0, 0.49, 0.5, 0.99], [0.0, 0.5, 0.99, 0.2],
    ...                                                 [0.999999, 0.7, 0.1, 0.6]])).tolist()
    [[1, 1, 3, 3], [0, 0, 0, 0], [3, 3, 1, 3]]
    """
    cdf = np.cumsum(q, axis=1)
    cdf /= cdf[:, -1:]
    cells = q.shape[1]
    last = cells - 1 - np.argmax(q[:, ::-1] > 0, axis=1)
    shift = 2.0 * np.arange(len(q))
    at = np.searchsorted((cdf + shift[:, None]).ravel(), u + shift[rows][:, None], side="right")
    return np.minimum(at - rows[:, None] * cells, last[rows][:, None])


def _rake(cand: np.ndarray, cell: np.ndarray, targets: list[np.ndarray], ok: np.ndarray, sweeps: int) -> np.ndarray:
    """Raked weights (n x pool, each row summing to 1): iterative proportional fitting to every target."""
    k = cand.shape[2]
    if not ok.any(axis=1).all():
        raise DataError(f"{int((~ok.any(axis=1)).sum())} records have no candidate that keeps the rules: "
                        "check the rules against the public columns")
    w = ok.astype(float)
    w /= w.sum(axis=1, keepdims=True)
    cand = np.ascontiguousarray(cand, dtype=np.int32)  # the codes as the kernel reads them (no copy from _pool)
    cell = np.ascontiguousarray(cell, dtype=np.int64)
    axes = [(None, j) for j in range(k)] + list(itertools.combinations(range(k), 2))
    for _ in range(sweeps):
        for (a, b), t in zip(axes, targets):
            _fit_table(w, cand, cell, a, b, t)
        rows = _row_sums(w)
        # a record whose candidates all lost their weight gets its allowed candidates back, evenly
        dead = rows <= 0
        if dead.any():
            w[dead] = ok[dead]
            rows = _row_sums(w)
        w /= rows[:, None]
    return w


def _fit_table(w: np.ndarray, cand: np.ndarray, cell: np.ndarray, a: int | None, b: int, target: np.ndarray) -> None:
    """Rescale the weights ``w`` (records by candidates, in place) so that the candidates' table of variable ``a``
    (``None``: the public cell) by variable ``b`` is ``target``: the weighted table and the rescaling in two
    passes of :func:`pramkit.kernel._kernels.rake_fit`, each candidate's cell computed as it is read (never
    stored: memory grows with records x pool, not with the number of tables), its weights added in the
    candidates' order, as ``numpy.bincount`` adds them.

    Examples
    --------
    >>> w = np.full((1, 2), 0.5)
    >>> cand = np.array([[[0, 1], [1, 2]]], dtype=np.int32)    # one record, two candidates of two variables
    >>> _fit_table(w, cand, np.zeros(1, dtype=np.int64), 0, 1, np.array([[0.0, 3.0, 0.0], [0.0, 0.0, 1.0]]))
    >>> w.tolist()
    [[3.0, 1.0]]
    """
    flat = np.ascontiguousarray(target, dtype=np.float64).ravel()
    _kernels.rake_fit(w, cand, cand.shape[2], -1 if a is None else a, b, target.shape[1], cell, flat,
                      np.empty_like(flat))


def _row_sums(w: np.ndarray) -> np.ndarray:
    """Each row's sum, its entries added left to right (as ``np.bincount`` adds a record's candidates, so the
    sums are the same to the last bit; ``w.sum(axis=1)`` adds pairwise).

    Examples
    --------
    >>> _row_sums(np.array([[0.1, 0.2, 0.3], [1.0, 0.0, 2.0]])).tolist() == [0.1 + 0.2 + 0.3, 3.0]
    True
    """
    rows = w[:, 0].copy()
    for j in range(1, w.shape[1]):
        rows += w[:, j]
    return rows


def _pick(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One candidate per record, by the inverse of its weights' distribution at ``u``."""
    pick = np.empty(len(weights), dtype=np.int64)
    for lo in range(0, len(weights), BLOCK_ROWS):  # a block's cumulative weights at a time
        cdf = np.cumsum(weights[lo:lo + BLOCK_ROWS], axis=1)
        above = u[lo:lo + BLOCK_ROWS, None] * cdf[:, -1:] > cdf
        pick[lo:lo + BLOCK_ROWS] = np.minimum(above.sum(axis=1), weights.shape[1] - 1)
    return pick


def _share_draws(drawn: np.ndarray, groups: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, int]:
    """Pair the records of each group of exact public values in a keyed order; the second of a pair
    (and a lone last record) takes the first's draw."""
    out = drawn.copy()
    order = np.lexsort((u, groups))
    g = groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.r_[starts, len(g)])
    pos = np.arange(len(g)) - np.repeat(starts, sizes)
    size = np.repeat(sizes, sizes)
    leader = pos - (pos % 2)
    leader = np.where((size % 2 == 1) & (pos == size - 1) & (size > 1), pos - 2, leader)
    src = order[np.repeat(starts, sizes) + leader]
    follows = src != order
    out[order[follows]] = drawn[src[follows]]
    return out, int(follows.sum())


def _settings_bytes(variables: Sequence[str], public: Sequence[str], epsilon: float, pool: int, sweeps: int,
                    min_count: int, bins: int) -> bytes:
    """The settings, canonically, for the draws' key."""
    return json.dumps([list(variables), list(public), float(epsilon), pool, sweeps, min_count, bins]).encode()


def _json_label(x: Any) -> Any:
    """A category as JSON (None stays null)."""
    return None if x is None else (x if isinstance(x, (str, int, float, bool)) else str(x))


def manifest_path(out: str | Path, manifest: str | Path | None = None) -> Path:
    """Where the manifest of ``out`` goes: ``manifest`` if given, else ``out`` with the suffix ``.synthesis.json``.

    Examples
    --------
    >>> str(manifest_path("release/persons.csv")), str(manifest_path("p.parquet", "m.json"))
    ('release/persons.synthesis.json', 'm.json')
    """
    if manifest is not None:
        return Path(manifest)
    out = Path(out)
    return out.with_name(out.stem + ".synthesis.json")


def read_categories(path: str | Path) -> dict[str, list[Any]]:
    """Declared categories from a JSON file: an object, variable -> list of categories.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "c.json"
    ...     _ = f.write_text('{"sex": ["f", "m"]}')
    ...     read_categories(f)
    {'sex': ['f', 'm']}
    """
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read the categories file {p.name}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError(f"the categories file {p.name} is not JSON") from None
    if not (isinstance(obj, dict) and all(isinstance(v, list) and v for v in obj.values())):
        raise DataError(f"the categories file {p.name} must hold an object: variable -> a non-empty list")
    return obj


def _table_and_meta(released: pd.DataFrame | None, kept: pa.Table | None, meta: Any, variables: Sequence[str]
                    ) -> tuple[list[pa.Table], Any]:
    """The released frame as the one table of the released file: the file as read with its missing codes
    (``kept``; :func:`_released_table`), or a data frame's records; and the metadata it is written with."""
    assert released is not None
    return [pandas_table(released) if kept is None else _released_table(kept, released, variables)], meta


def _write(written: tuple[Iterable[pa.Table], Any], out: Path, manifest_out: str | Path | None,
           manifest: dict[str, Any], force: bool, src: Path | None, quiet: bool = True) -> tuple[str, str]:
    """The released file and its manifest, both or neither: the file is renamed into place first,
    then the manifest that names its digest.  ``written``: the released file's tables (written one after
    another) and what the reader of the original learnt (labels, user-missing codes, the CSV dialect), which
    the writer keeps in any format (:class:`pramkit.io.TableWriter`)."""
    from pramkit.atomic import atomic_path
    from pramkit.io import TableWriter
    from pramkit.progress import progress

    mpath = manifest_path(out, manifest_out)
    inputs = [src] if src is not None else []
    if mpath.resolve() == out.resolve():
        raise ParameterError("the manifest cannot be the released file: name another manifest")
    tables, meta = written
    # exits in reverse order: the released file is renamed into place first, then its manifest
    with atomic_path(mpath, force=force, inputs=[*inputs, out]) as tmp, \
            TableWriter(out, force=force, inputs=[*inputs, mpath], meta=meta) as writer, \
            progress(total=manifest["rows"], desc="writing", unit="rows", quiet=quiet) as bar:
        for table in tables:
            writer.write(table)
            bar.update(table.num_rows)
        writer.close()
        manifest["released"] = {"file": out.name, "sha256": writer.sha256, "rows": writer.rows}
        tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return str(out), str(mpath)
