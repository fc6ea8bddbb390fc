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
3. **Pool.**  Each record gets ``pool`` candidates: every variable drawn from its measured
   conditional law given the record's public cell, restricted to the values the rules allow given
   the record's public values; candidates that break a rule of several variables get weight 0.
4. **Rake.**  The candidates' weights are raked (iterative proportional fitting, Deming and
   Stephan 1940) to every measured table, each record's weights summing to one: the maximum
   entropy law, relative to the pool, whose margins are the measured ones.
5. **Draw.**  One candidate per record, by its weight, at a keyed uniform.  With
   ``min_count=2`` the records of each public cell (exact values) are paired in a keyed order and
   the second of each pair takes the first's draw (a lone last record joins the last pair): every
   released combination of values then appears at least twice, except in a public cell of one
   record.  Margins keep their expectation; their sampling variance is that of half as many draws.

Randomness: the noise comes from :meth:`pramkit.engine.rng.SecretKey.design_random` (keyed by the
exact table it measures, never stored); the draws from a key derived from the secret key and the
data (:meth:`pramkit.engine.rng.SecretKey.for_data`): the same key and data give the same file
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit import validate
from pramkit.codebook import canonical
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.engine import _kernels
from pramkit.engine.rng import SecretKey, resolve_key, uniforms
from pramkit.errors import DataError, ParameterError
from pramkit.frames import pandas_table
from pramkit.io import read_table
from pramkit.ledger import CategorySource, Ledger, split_within
from pramkit.privacy.epsilon import record_epsilon
from pramkit.release.frequencies import measured_bytes, noise_query
from pramkit.structure import Rules, as_rules

#: The manifest's ``format`` and its version.
FORMAT = "pramkit.synthesis"
FORMAT_VERSION = 1
#: Candidates per record at most, and the most candidates in all (memory grows with records x candidates),
#: raking sweeps, and the most public cells of a numeric public column.
POOL = 40
POOL_CANDIDATES = 10_000_000
SWEEPS = 30
PUBLIC_BINS = 20
#: Most cells of one measured table.
MAX_TABLE_CELLS = 1_000_000
#: Records per block of the pool's draws, the raking's rescaling and the pick: what each holds besides the
#: candidates and their weights is one block's (the draws are the same for any block).
BLOCK_ROWS = 1 << 16


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
        The epsilon of its noise (discrete Laplace at L1 sensitivity 2).
    noisy : numpy.ndarray
        The noisy counts (int64), in ``shape``.

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

    @property
    def cells(self) -> int:
        """The number of cells."""
        return int(np.prod(self.shape))

    def to_dict(self) -> dict[str, Any]:
        """The measurement as JSON (``mechanism``, ``axes``, ``epsilon``, ``sensitivity``, ``noisy``)."""
        return {"mechanism": "geometric", "axes": list(self.axes), "epsilon": self.epsilon, "sensitivity": 2,
                "noisy": np.asarray(self.noisy).reshape(self.shape).tolist()}


@dataclass
class SynthesisResult:
    """What :func:`synthesize_release` did.

    Attributes
    ----------
    data : pandas.DataFrame
        The released records (every column of the input; the synthesized ones redrawn).
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
    """

    data: pd.DataFrame
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

    def to_dict(self) -> dict[str, Any]:
        """The summary ``pramkit synthesize --json`` prints."""
        return {"out": self.out,
                "manifest": self.manifest_path, "rows": len(self.data), "variables": list(self.variables),
                "public": list(self.public), "tables": len(self.measurements),
                "record_epsilon": self.record_epsilon, "shared_draws": self.shared_draws,
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
        The variables to synthesize (comma-separated text allowed).  A missing value is a category.
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
    epsilon = validate.epsilon(epsilon, "the budget (epsilon)")
    if min_count not in (1, 2):
        raise ParameterError(f"min_count must be 1 or 2, got {min_count!r}")
    for name, value, lo in (("pool", 2 if pool is None else pool, 2), ("sweeps", sweeps, 1),
                            ("public_bins", public_bins, 1)):
        if not isinstance(value, int) or value < lo:
            raise ParameterError(f"{name} must be an integer >= {lo}, got {value!r}")
    src = None if isinstance(data, pd.DataFrame) else Path(data)
    frame = data if isinstance(data, pd.DataFrame) else read_table(Path(data), na_values=na_values, sep=sep,
                                                                   encoding=encoding)
    missing = [c for c in (*variables, *public_cols) if c not in frame.columns]
    if missing:
        raise DataError(f"no column {', '.join(map(repr, missing))} in the data (columns: {', '.join(map(str, frame.columns))})")
    if len(frame) < 2:
        raise DataError("the data has fewer than 2 records: nothing to synthesize")
    pool = default_pool(len(frame)) if pool is None else pool
    rules = as_rules(forbid)
    _check_rule_columns(rules, variables, public_cols, list(frame.columns))
    sk = resolve_key(key)
    cats, sources = _categories(frame, variables, categories)
    codes = _encode(frame, variables, cats)
    cell, cell_labels, bins = _public_cells(frame, public_cols, public_bins)
    measurements, exact_bytes = _measure(codes, cell, len(cell_labels), variables, cats, cell_labels, epsilon, sk)
    targets = _targets(measurements, cell, len(frame), rules, cats, len(cell_labels))
    draw_key = sk.for_data("synthesize", *exact_bytes, _settings_bytes(variables, public_cols, epsilon, pool,
                                                                         sweeps, min_count, public_bins))
    groups, group_values = _exact_groups(frame, public_cols)
    allowed = _allowed(rules, groups, group_values, public_cols, variables, cats)
    cand = _pool(targets, cell, allowed, pool, draw_key, variables)
    weights = _rake(cand, cell, targets, _multi_ok(rules, frame, public_cols, variables, cats, cand), sweeps)
    pick = _pick(weights, uniforms(draw_key, "@pick", 0, len(frame)))
    drawn = cand[np.arange(len(frame)), pick]
    shared = 0
    if min_count == 2:
        drawn, shared = _share_draws(drawn, groups, uniforms(draw_key, "@pairs", 0, len(frame)))
    released = frame.copy(deep=src is None)  # a frame read here is not the caller's: its columns are shared
    for j, v in enumerate(variables):
        released[v] = pd.Series(np.asarray(cats[v], dtype=object)[drawn[:, j]], index=frame.index)
    if rules is not None and rules.breaking(released, list(released.columns)).any():
        raise DataError("the released records break an edit rule the pool should have kept: report this")
    eps_total = record_epsilon([m.epsilon for m in measurements])
    ledger = Ledger(design_epsilon=eps_total, frequencies="dp_counts", record_epsilon_budget=float(epsilon),
                    categories=sources,
                    data_dependent=tuple(f"the categories of {v} were read from the data" for v, s in sources.items()
                                         if s == "data"))
    as_they_are = [str(c) for c in released.columns if c not in variables]
    guarantee = ledger.statement([0.0] * len(variables), unperturbed=as_they_are)
    manifest = {
        "format": FORMAT, "version": FORMAT_VERSION,
        "variables": {v: {"categories": [_json_label(c) for c in cats[v]], "categories_source": sources[v]}
                      for v in variables},
        "public": {"columns": list(public_cols), "bins": bins, "cells": len(cell_labels)},
        "released_as_they_are": as_they_are,
        "rules": rules.to_dict() if rules is not None else None,
        "procedure": {"pool": pool, "sweeps": sweeps, "min_count": min_count, "public_bins": public_bins},
        "measurements": [m.to_dict() for m in measurements],
        "ledger": {**ledger.to_dict([0.0] * len(variables)), "statement": guarantee},
        "rows": len(released),
    }
    result = SynthesisResult(released, variables, public_cols, measurements, eps_total, guarantee, manifest,
                             shared_draws=shared)
    if out is not None:
        result.out, result.manifest_path = _write(released, Path(out), manifest_out, manifest, force, src,
                                                  sep, encoding)
    result.seconds = time.perf_counter() - start
    return result


def default_pool(rows: int) -> int:
    """Candidates per record for a file of ``rows`` records: :data:`POOL`, fewer when the pool would hold more
    than :data:`POOL_CANDIDATES` candidates, never fewer than 8.

    Examples
    --------
    >>> default_pool(27_253), default_pool(1_000_000), default_pool(10_000_000)
    (40, 10, 8)
    """
    return max(8, min(POOL, POOL_CANDIDATES // max(rows, 1)))


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


def _categories(frame: pd.DataFrame, variables: Sequence[str], declared: Mapping[str, Sequence[Any]] | None,
                ) -> tuple[dict[str, list[Any]], dict[str, CategorySource]]:
    """Each variable's categories (declared, or read from the data) and where they came from."""
    cats: dict[str, list[Any]] = {}
    sources: dict[str, CategorySource] = {}
    for v in variables:
        if declared is not None and v in declared:
            cats[v] = list(dict.fromkeys(declared[v]))
            sources[v] = "declared"
        else:
            vals = frame[v].dropna().unique().tolist()
            cats[v] = sorted(vals, key=lambda x: (str(type(x)), x)) + ([None] if frame[v].isna().any() else [])
            sources[v] = "data"
    return cats, sources


def _encode(frame: pd.DataFrame, variables: Sequence[str], cats: Mapping[str, list[Any]]) -> np.ndarray:
    """The records' codes (n x variables); a value outside the declared categories is refused."""
    out = np.empty((len(frame), len(variables)), dtype=np.int64)
    for j, v in enumerate(variables):
        index = {canonical(c) if c is not None else None: i for i, c in enumerate(cats[v])}
        col = frame[v].astype(object).where(frame[v].notna(), None)
        texts = col.map(lambda x: canonical(x) if x is not None else None)
        coded = texts.map(index)
        if coded.isna().any():
            bad = texts[coded.isna()].iloc[0]
            raise DataError(f"{v}: the value {bad!r} is not one of its declared categories")
        out[:, j] = coded.to_numpy(dtype=np.int64)
    return out


def _public_cells(frame: pd.DataFrame, public: Sequence[str], most: int
                  ) -> tuple[np.ndarray, list[tuple], dict[str, list[float]]]:
    """Each record's public cell, the cells' labels and the cut points of binned numeric columns."""
    if not public:
        return np.zeros(len(frame), dtype=np.int64), [()], {}
    parts, bins = [], {}
    for c in public:
        col = frame[c]
        num = pd.to_numeric(col, errors="coerce")
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


def _allowed(rules: Rules | None, groups: np.ndarray, group_values: list[tuple], public: Sequence[str],
             variables: Sequence[str], cats: Mapping[str, list[Any]]) -> list[np.ndarray | None]:
    """Per variable, which of its values each record may take given its public values (rules of
    the public columns and that variable only); ``None`` when no rule applies."""
    out: list[np.ndarray | None] = []
    for v in variables:
        sub = rules.within([*public, v]) if rules is not None else None
        if sub is None or not any(v in r.values for r in sub.rules):
            out.append(None)
            continue
        grid = [(*values, c) for values in group_values for c in cats[v]]
        ok = ~sub.forbidden((*public, v), grid).reshape(len(group_values), len(cats[v]))
        out.append(ok[groups])
    return out


def _pool(targets: list[np.ndarray], cell: np.ndarray, allowed: list[np.ndarray | None], pool: int,
          key: SecretKey, variables: Sequence[str]) -> np.ndarray:
    """``pool`` candidates per record (n x pool x variables), each variable from its measured
    conditional law given the record's public cell, restricted to the allowed values."""
    n = len(cell)
    cand = np.empty((n, pool, len(variables)), dtype=np.int32)
    for j, (v, ok) in enumerate(zip(variables, allowed)):
        for lo in range(0, n, BLOCK_ROWS):
            rows = slice(lo, lo + BLOCK_ROWS)
            cand[rows, :, j] = _candidates(targets[j], cell[rows], None if ok is None else ok[rows], key, v, lo, pool)
    return cand


def _candidates(target: np.ndarray, cell: np.ndarray, allowed: np.ndarray | None, key: SecretKey, variable: str,
                start: int, pool: int) -> np.ndarray:
    """The candidates of one variable for a block of records (the records ``start`` on, in ``cell``): ``pool``
    draws each from the measured table ``target``'s row of its public cell, restricted to its ``allowed`` values."""
    cond = target[cell] + 1e-3  # no allowed value has probability 0
    if allowed is not None:
        cond = cond * allowed
    sums = cond.sum(axis=1, keepdims=True)
    if (sums <= 0).any():
        raise DataError(f"{variable}: an edit rule forbids every value for some record's public values: "
                        "check the rules")
    cdf = np.cumsum(cond / sums, axis=1)
    u = uniforms(key, f"@pool|{variable}", start * pool, len(cell) * pool).reshape(len(cell), pool)
    return np.minimum(_below(u, cdf), cdf.shape[1] - 1)


def _below(u: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """How many of each record's cumulative probabilities (``cdf``, n x values) lie below each of its uniforms
    (``u``, n x pool): counted one value at a time, never an n x pool x values array.

    Examples
    --------
    >>> _below(np.array([[0.1, 0.5, 0.9]]), np.array([[0.2, 0.6, 1.0]])).tolist()
    [[0, 1, 2]]
    """
    count = np.zeros(u.shape, dtype=np.int32)
    for c in range(cdf.shape[1]):
        count += u > cdf[:, c:c + 1]
    return count


def _multi_ok(rules: Rules | None, frame: pd.DataFrame, public: Sequence[str], variables: Sequence[str],
              cats: Mapping[str, list[Any]], cand: np.ndarray) -> np.ndarray:
    """Which candidates keep every rule (n x pool): the rules of two synthesized variables or more (the
    pool's draws already keep those of one variable and public columns)."""
    n, pool, _ = cand.shape
    several = tuple(r for r in (rules.rules if rules is not None else ()) if len(set(r.values) & set(variables)) > 1)
    if not several:
        return np.ones((n, pool), dtype=bool)
    named = {c for r in several for c in r.values}
    flat = pd.DataFrame({v: np.asarray(cats[v], dtype=object)[cand[:, :, j].ravel()] for j, v in enumerate(variables)
                         if v in named})
    for c in public:
        if c in named:
            flat[c] = np.repeat(frame[c].to_numpy(dtype=object), pool)
    return ~Rules(several).breaking(flat, list(flat.columns)).reshape(n, pool)


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
    passes of :func:`pramkit.engine._kernels.rake_fit`, each candidate's cell computed as it is read (never
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


def _write(released: pd.DataFrame, out: Path, manifest_out: str | Path | None, manifest: dict[str, Any],
           force: bool, src: Path | None, sep: str, encoding: str) -> tuple[str, str]:
    """The released file and its manifest, both or neither: the file is renamed into place first,
    then the manifest that names its digest."""
    from pramkit.atomic import atomic_path
    from pramkit.io import TableMeta, TableWriter

    mpath = manifest_path(out, manifest_out)
    inputs = [src] if src is not None else []
    if mpath.resolve() == out.resolve():
        raise ParameterError("the manifest cannot be the released file: name another manifest")
    table = pandas_table(released)
    # exits in reverse order: the released file is renamed into place first, then its manifest
    with atomic_path(mpath, force=force, inputs=[*inputs, out]) as tmp, \
            TableWriter(out, force=force, inputs=[*inputs, mpath],
                        meta=TableMeta("csv", list(released.columns), sep=sep, encoding=encoding)) as writer:
        writer.write(table)
        writer.close()
        manifest["released"] = {"file": out.name, "sha256": writer.sha256, "rows": table.num_rows}
        tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return str(out), str(mpath)
