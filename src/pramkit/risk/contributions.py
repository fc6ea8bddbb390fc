"""Which key variables and which of their levels make records risky, before and after PRAM.

For the key variables ``K`` of a file and four risk measures ``R``,

* ``suda``: the total SUDA score (:func:`pramkit.risk.suda`, Elliot's weights),
* ``tau1``, ``tau2``: eqs. (4)-(5) of :mod:`pramkit.risk.identification`,
* ``individual``: the expected re-identifications, the Benedetti-Franconi
  per-record risks summed (:mod:`pramkit.risk.individual`),

the *contribution* of a variable or a level is how much of ``R(K)`` it explains,
in percent of ``R(K)``:

* SUDA (sdcMicro's definition, module :mod:`pramkit.risk.suda`): variable ``v``
  explains the score of the MSUs that contain it; level ``(v, x)`` the score of
  those MSUs in records with ``v = x``.  An MSU counts once for each of its
  variables, so the variables add up to ``100 x`` the score-weighted mean MSU
  size (at least 100, exactly 100 when every MSU has one variable), and the
  levels of ``v`` add up to the contribution of ``v``.
* tau1, tau2 and the individual risk: variable ``v`` explains the change
  ``R(K) - R(K \\ {v})`` when it is left out of the keys (``R`` of no key: one
  cell holding every record, so tau1 = tau2 = 0 and the individual risk that of
  a record among all); level ``(v, x)`` the
  change ``R(K) - R(K; x -> y)`` when the records with ``v = x`` are given the
  level ``y`` of ``v`` that is most frequent among the others (in the original
  file; ties: the first in the column's order), i.e. when ``x`` is merged into ``y``.
  The variables' changes add up to ``R(K)`` minus the *interaction*
  (``interaction``, percent: what no single variable explains; negative when
  the changes overlap, as when a record is unique on each of two variables
  alone and leaving out either one removes its risk).  The levels' changes do
  not add up to their variable's: merging one level changes the cells of two
  levels, and merging every level of ``v`` into one is leaving ``v`` out.
* epsilon: the share of the record epsilon (:attr:`pramkit.Manifest.record_epsilon`)
  each perturbed variable of the manifest spends, and the design step's share
  (the ledger); they add up to 100 (up to the outward rounding of the total).

After PRAM (``manifest`` given, ``data`` the released file, ``original`` the
file it was made from) the same definitions apply to the released file:
SUDA on the released records, tau1 and tau2 as the expected numbers of correct
matches given the misclassification (:mod:`pramkit.risk.misclassified`, fitted
to the original counts).  Merging ``x`` into ``y`` in a perturbed variable merges
them in its matrix too: the columns are added, and the merged row is the rows
of ``x`` and ``y`` averaged with the original frequencies of ``x`` and ``y``.

:func:`expected_suda` gives the expectation of the SUDA contributions over the
perturbation itself: exactly, by enumerating every released file with its
probability, where there are at most ``exact_limit`` of them, else estimated
from ``replicates`` perturbations drawn by the keyed engine
(:func:`pramkit.engine.perturb.perturb_frame`), with the Monte Carlo standard
error of every figure.  An outcome with no MSU contributes 0 to every share.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit._json import to_jsonable
from pramkit.codebook import encode
from pramkit.defaults import CONTRIBUTION_REPLICATES, CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.io import require_columns
from pramkit.ledger import fmt_epsilon
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.progress import progress
from pramkit.risk.frequencies import key_categories
from pramkit.risk.identification import identification_risk, independence_risk
from pramkit.risk.loglinear import FIT_BYTES_PER_CELL
from pramkit.risk.loglinear import MAX_CELLS as LOGLINEAR_MAX_CELLS
from pramkit.risk.suda import MAX_STEPS as SUDA_MAX_STEPS
from pramkit.risk.suda import SudaResult, suda, suda_cost

__all__ = ["MEASURES", "Contributions", "ExpectedSuda", "ReleaseContributions", "contribution_sentences",
           "epsilon_shares", "expected_suda", "release_contributions", "risk_contributions"]

#: The risk measures whose contributions are computed (module docstring).
MEASURES = ("suda", "tau1", "tau2", "individual")

#: Words for each measure in sentences and tables.
MEASURE_WORDS = {
    "suda": "special-unique risk (SUDA score)",
    "tau1": "tau1 (sample uniques that are population uniques)",
    "tau2": "tau2 (expected correct matches among sample uniques)",
    "individual": "expected re-identifications (individual risk)",
}

#: Largest number of released files :func:`expected_suda` enumerates exactly.
EXACT_LIMIT = 4096


@dataclass(frozen=True, eq=False)
class Contributions:
    """How much of each risk measure every key variable and level explains (module docstring).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    perturbed : tuple of str
        Keys perturbed by the manifest (empty before PRAM).
    totals : dict of str to float
        Each measure of :data:`MEASURES` on all the keys.
    variables : pandas.DataFrame
        One row per key: ``variable`` and, per measure, its contribution in percent of the total
        (NaN when the total is 0).
    interaction : dict of str to float
        Per measure other than ``suda``: 100 minus the variables' contributions (percent).
    levels : pandas.DataFrame
        One row per observed level: ``variable``, ``level``, ``merged_into`` (the level it is
        merged into for tau1, tau2 and the individual risk), ``records`` and, per measure, its
        contribution in percent of the total.
    epsilon : pandas.DataFrame or None
        With a manifest: ``variable`` (each perturbed variable, then ``"design step"``),
        ``epsilon`` (nats) and ``percent`` of the record epsilon.
    record_epsilon : float or None
        The record epsilon of the manifest.
    suda : SudaResult
        The SUDA result the ``suda`` columns come from.

    Examples
    --------
    >>> data = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "y", "y"]})
    >>> res = risk_contributions(data, ["a", "b"], sampling_fraction=1.0, model="independence")
    >>> res.totals["tau1"], res.variables.set_index("variable")["tau1"].to_dict(), res.interaction["tau1"]
    (5.0, {'a': 100.0, 'b': 80.0}, -80.0)
    """

    keys: tuple[str, ...]
    perturbed: tuple[str, ...]
    totals: dict[str, float]
    variables: pd.DataFrame
    interaction: dict[str, float]
    levels: pd.DataFrame
    epsilon: pd.DataFrame | None
    record_epsilon: float | None
    suda: SudaResult

    def to_dict(self) -> dict[str, Any]:
        """The contributions as plain JSON values (NaN as ``None``).

        Returns
        -------
        dict
            ``keys``, ``perturbed``, ``totals``, ``interaction``, ``variables`` and ``levels``
            (lists of row objects), ``epsilon`` and ``record_epsilon``.

        Examples
        --------
        >>> import json
        >>> data = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "y", "y"]})
        >>> out = risk_contributions(data, ["a", "b"], sampling_fraction=0.5).to_dict()
        >>> sorted(out), out["levels"][0]["variable"], out["levels"][0]["merged_into"]
        (['epsilon', 'interaction', 'keys', 'levels', 'perturbed', 'record_epsilon', 'totals', 'variables'], 'a', 2)
        >>> json.loads(json.dumps(out, allow_nan=False)) == out
        True
        >>> kept = Manifest.of({"a": PramMatrix.identity([1, 2, 3])})  # released exactly: epsilon infinite
        >>> risk_contributions(data, ["a", "b"], sampling_fraction=0.5, manifest=kept,
        ...                    original=data).to_dict()["record_epsilon"]
        'inf'
        """
        return to_jsonable({
            "keys": list(self.keys),
            "perturbed": list(self.perturbed),
            "totals": self.totals,
            "interaction": self.interaction,
            "variables": self.variables.to_dict(orient="records"),
            "levels": self.levels.to_dict(orient="records"),
            "epsilon": None if self.epsilon is None else self.epsilon.to_dict(orient="records"),
            "record_epsilon": self.record_epsilon,
        })


@dataclass(frozen=True, eq=False)
class ExpectedSuda:
    """The expectation of the SUDA scores and contributions over the perturbation.

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    method : {"exact", "monte carlo"}
        Every released file enumerated with its probability, or replicates of the keyed engine.
    outcomes : int
        The released files enumerated (exact) or drawn (Monte Carlo).
    scores : numpy.ndarray
        Each record's expected SUDA score.
    variables : pandas.DataFrame
        ``variable``, ``suda`` (expected percent of the total score) and ``se`` (its Monte Carlo
        standard error; 0 when exact).
    levels : pandas.DataFrame
        ``variable``, ``level`` (a released level), ``suda`` and ``se`` as above.

    Examples
    --------
    >>> data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    >>> keep = Manifest.of({"a": PramMatrix.identity([1, 2])})
    >>> res = expected_suda(data, ["a", "b", "c"], keep)
    >>> res.method, res.outcomes, res.scores.tolist(), res.variables["suda"].tolist()
    ('exact', 1, [2.0, 4.0, 2.0], [50.0, 37.5, 37.5])
    """

    keys: tuple[str, ...]
    method: str
    outcomes: int
    scores: np.ndarray
    variables: pd.DataFrame
    levels: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: ``method``, ``outcomes``, ``variables`` and ``levels`` as row objects.

        Examples
        --------
        >>> data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
        >>> expected_suda(data, ["a", "b", "c"], Manifest.of({"a": PramMatrix.identity([1, 2])})).to_dict()["method"]
        'exact'
        """
        return to_jsonable({"keys": list(self.keys), "method": self.method, "outcomes": self.outcomes,
                            "variables": self.variables.to_dict(orient="records"),
                            "levels": self.levels.to_dict(orient="records")})


def _percent(change: float, total: float) -> float:
    """``100 change / total``; NaN when the total is 0."""
    return 100.0 * change / total if total > 0 else math.nan


def epsilon_shares(manifest: Manifest) -> pd.DataFrame:
    """The share of the record epsilon each perturbed variable and the design step spend.

    Parameters
    ----------
    manifest : Manifest
        The release manifest (its ledger gives the design step's epsilon).

    Returns
    -------
    pandas.DataFrame
        ``variable`` (each variable of the manifest, then ``"design step"``), ``epsilon``
        (nats) and ``percent`` of :attr:`pramkit.Manifest.record_epsilon`; NaN percents
        when the record epsilon is infinite.

    Examples
    --------
    >>> from pramkit.ledger import Ledger
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 0.5), "age": randomized_response(["y", "o"], 1.0)},
    ...                 ledger=Ledger(design_epsilon=0.5, frequencies="dp_counts"))
    >>> epsilon_shares(m).round(6).to_dict(orient="list")
    {'variable': ['sex', 'age', 'design step'], 'epsilon': [0.5, 1.0, 0.5], 'percent': [25.0, 50.0, 25.0]}
    """
    total = manifest.record_epsilon
    names = [v.name for v in manifest.variables] + ["design step"]
    eps = [v.epsilon for v in manifest.variables]
    eps.append(0.0 if manifest.ledger is None else float(manifest.ledger.design_epsilon))
    percent = [100.0 * e / total if math.isfinite(total) and total > 0 else math.nan for e in eps]
    return pd.DataFrame({"variable": names, "epsilon": eps, "percent": percent})


def _modal_other(column: pd.Series, level: Any) -> Any:
    """The most frequent level of ``column`` other than ``level`` (ties: the first in the column's
    order: its categories' for a categorical, else sorted)."""
    counts = column[column != level].value_counts(dropna=True, sort=False)
    counts = counts[counts > 0]
    if counts.empty:
        return None
    counts = counts.sort_index(kind="stable")
    return counts.idxmax()


def _merged(frame: pd.DataFrame, variable: str, level: Any, into: Any) -> pd.DataFrame:
    """A copy of ``frame`` whose ``variable`` has ``level`` replaced by ``into`` (plain labels)."""
    out = frame.copy()
    column = out[variable].astype(object)
    out[variable] = column.where(column != level, into)
    return out


def _merged_manifest(manifest: Manifest, variable: str, level: Any, into: Any, original: pd.Series) -> Manifest:
    """The manifest with ``level`` merged into ``into`` in the matrix of ``variable``: columns added,
    the merged row the two rows averaged with their original frequencies."""
    v = manifest[variable]
    cats = list(v.matrix.categories)
    m = np.array(v.matrix.matrix, dtype=float)
    i, j = cats.index(level), cats.index(into)
    counts = original.value_counts(dropna=True)
    wi, wj = float(counts.get(level, 0)), float(counts.get(into, 0))
    row = (wi * m[i] + wj * m[j]) / (wi + wj) if wi + wj > 0 else (m[i] + m[j]) / 2
    m[j] = row
    m[:, j] += m[:, i]
    keep = [k for k in range(len(cats)) if k != i]
    merged = PramMatrix(m[np.ix_(keep, keep)], [cats[k] for k in keep])
    return replace(manifest, variables=tuple(replace(w, matrix=merged) if w.name == variable else w
                                             for w in manifest.variables))


def _tau_measures(data: pd.DataFrame, keys: Sequence[str], manifest: Manifest | None,
                  original: pd.DataFrame | None, risk_options: dict[str, Any]) -> dict[str, float]:
    """tau1, tau2 and the expected re-identifications of ``data`` on ``keys``; with no key, of one
    cell that holds every record (tau1 = tau2 = 0, the individual risk of the records' one class).
    ``risk_options["sparse"]``: by :func:`pramkit.risk.identification.independence_risk` (no table)."""
    if not keys:
        one = "_" * (1 + max(len(str(c)) for c in data.columns))  # a column name the data do not have
        data, keys = data.assign(**{one: 0}), [one]
    options = dict(risk_options)
    if options.pop("sparse", False):
        sparse = independence_risk(data, keys, sampling_fraction=options["sampling_fraction"])
        return {"tau1": sparse.tau1, "tau2": sparse.tau2, "individual": sparse.expected_reidentifications}
    res = identification_risk(data, keys, manifest=manifest, original=original, **options)
    return {"tau1": res.tau1, "tau2": res.tau2, "individual": res.expected_reidentifications}


def _without_table(data: pd.DataFrame, keys: Sequence[str], model: str, perturbed: Sequence[str],
                   sampling_fraction: float | None, manifest: Manifest | None) -> bool:
    """Whether the tau measures go without the full table (:func:`independence_risk`): the table of the
    keys is larger than a fit may take and the model is independence with one sampling fraction;
    refused in one line, before any work, when the table is too large for any other choice."""
    if not keys:  # refused by the SUDA checks
        return False
    shape = [len(c) for c in key_categories(data, keys)]
    for i, k in enumerate(keys):
        if manifest is not None and k in perturbed:  # the table has every category of the matrix
            shape[i] = max(shape[i], len(manifest[k].matrix.categories))
    cells = math.prod(shape)
    if cells <= LOGLINEAR_MAX_CELLS:
        return False
    if model == "independence" and not perturbed and sampling_fraction is not None:
        return True
    size = FIT_BYTES_PER_CELL * cells
    figure = f"{size / 1e12:,.0f} TB" if size >= 1e12 else f"{size / 1e9:,.1f} GB"
    why = ("after PRAM the misclassification needs the table" if perturbed
           else "--weights give per-cell fractions from the table" if sampling_fraction is None
           else f"model {model!r} is fitted to it")
    raise ParameterError(
        f"tau1, tau2 and the individual risk over the {len(keys)} key variables need their full table of "
        f"{cells:,} cells (about {figure}), more than the {LOGLINEAR_MAX_CELLS:,} cells a fit may take ({why}); "
        "use --model independence with --sampling-fraction (computed from the occupied cells, no table) "
        "or fewer or coarser key variables (--keys)")


def _suda_levels(res: SudaResult) -> dict[tuple[str, Any], float]:
    """Each level's SUDA contribution in percent of the total score (module docstring)."""
    table = res.level_contributions
    out: dict[tuple[str, Any], float] = {}
    for variable, level, contribution in zip(table["variable"], table["level"], table["contribution"]):
        share = res.attribute_contributions[variable] * float(contribution) / 100.0
        out[(variable, level)] = 0.0 if math.isnan(share) else share
    return out


def _check_inputs(data: pd.DataFrame, keys: Sequence[str], manifest: Manifest | None,
                  original: pd.DataFrame | None) -> tuple[str, ...]:
    """Validate what :func:`risk_contributions` adds to its measures' checks; the perturbed keys."""
    if not isinstance(data, pd.DataFrame):
        raise ParameterError("risk contributions need the records in memory (a DataFrame)")
    perturbed = tuple(k for k in keys if manifest is not None and k in manifest.names)
    joint = [k for k in keys if manifest is not None and k not in perturbed
             and any(k in v.columns for v in manifest.variables)]
    if joint:
        raise ParameterError(f"key(s) {joint} are perturbed jointly with other columns: their contributions "
                             "after PRAM are not defined per variable; leave them out of the keys")
    if original is not None and manifest is None:
        raise ParameterError("original is only used with a manifest (data is then the released file)")
    if perturbed and original is None:
        raise ParameterError("contributions after PRAM need the original file the release was made from "
                             "(original=, --original): merging a level weights the matrix rows by its frequencies")
    if original is not None and not isinstance(original, pd.DataFrame):
        raise ParameterError("original must be a DataFrame like data")
    return perturbed


def _spelled(frame: pd.DataFrame, manifest: Manifest, perturbed: Sequence[str]) -> pd.DataFrame:
    """``frame`` with each perturbed key written as its matrix's categories (a CSV's ``'1'`` as the
    category ``1``; :func:`pramkit.codebook.encode`), missing values as ``None``: levels before and
    after PRAM then compare, and a value that is not a category is one :class:`DataError` line."""
    if not perturbed:
        return frame
    out = frame.copy()
    for key in perturbed:
        labels = np.array([*manifest[key].matrix.categories, None], dtype=object)
        out[key] = labels[encode(out[key].astype(object), manifest[key].matrix.categories, column=key)]
    return out


def _without_code(frame: pd.DataFrame, keys: Sequence[str], missing: Any) -> pd.DataFrame:
    """``frame`` with the key values equal to the code ``missing`` set to NA (a copy when there is one)."""
    if missing is None:
        return frame
    out = frame.copy()
    for key in keys:
        column = out[key].astype(object)
        out[key] = column.where(column != missing, None)
    return out


def risk_contributions(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    sampling_fraction: float | None = None,
    weights: str | None = None,
    model: str = "2way",
    max_size: int | None = None,
    missing: Any = None,
    manifest: Manifest | None = None,
    original: pd.DataFrame | None = None,
    max_steps: float = SUDA_MAX_STEPS,
) -> Contributions:
    """Per key variable and per level, how much of SUDA, tau1, tau2 and the individual risk it explains.

    The definitions and how the contributions add up are in the module docstring.

    Parameters
    ----------
    data : pandas.DataFrame
        The records; with ``manifest``, the released file.
    keys : sequence of str
        The key variables.
    sampling_fraction, weights : float or str
        Exactly one: the sampling fraction, or the weight column
        (:func:`pramkit.risk.identification.identification_risk`).  The DIS-SUDA
        scores are not part of the contributions.
    model : str
        The log-linear model of tau1 and tau2 (default ``"2way"``).
    max_size : int, optional
        The largest MSU size (:func:`pramkit.risk.suda`; default: all keys).
    missing : scalar, optional
        A code that means missing besides NA (as :func:`pramkit.risk.suda`); such values are
        missing for every measure (a category of their own for tau1, tau2 and the individual risk).
    manifest : Manifest, optional
        The release manifest: ``data`` is the released file; the epsilon shares come from it.
    original : pandas.DataFrame, optional
        With a manifest that perturbs a key: the original file (needed).
    max_steps : float
        The most steps the SUDA search may take (:func:`pramkit.risk.suda`).

    Returns
    -------
    Contributions

    Raises
    ------
    ParameterError
        As :func:`pramkit.risk.suda` and :func:`pramkit.risk.identification_risk`, a key perturbed
        jointly with other columns, ``original`` without a manifest or missing with one that
        perturbs a key, or data not in memory.
    DataError
        As :func:`pramkit.risk.suda` and :func:`pramkit.risk.identification_risk`.

    Examples
    --------
    Four records, ``a`` alone makes records 3 and 4 unique; at pi = 1 tau1 counts the sample uniques:

    >>> data = pd.DataFrame({"a": [1, 1, 2, 3], "b": ["x", "y", "x", "x"]})
    >>> res = risk_contributions(data, ["a", "b"], sampling_fraction=1.0, model="independence")
    >>> res.totals["tau1"], res.variables[["variable", "suda", "tau1"]].values.tolist()
    (4.0, [['a', 75.0, 75.0], ['b', 50.0, 50.0]])
    >>> res.interaction["tau1"]
    -25.0
    """
    keys = list(keys)
    perturbed = _check_inputs(data, keys, manifest, original)
    columns = list(dict.fromkeys(keys + ([weights] if isinstance(weights, str) else [])))
    require_columns(columns, list(map(str, data.columns)), "the data")
    data = _without_code(data[columns], keys, missing)
    if original is not None:
        require_columns(columns, list(map(str, original.columns)), "the original file")
        original = _without_code(original[columns], keys, missing)
    if manifest is not None:
        data = _spelled(data, manifest, perturbed)
        original = None if original is None else _spelled(original, manifest, perturbed)
    base = data if original is None else original  # the frequencies that choose the merge targets
    sparse = _without_table(data, keys, model, perturbed, sampling_fraction, manifest)  # before any work
    options = {"sampling_fraction": sampling_fraction, "model": model,
               **({"weights": weights} if weights is not None else {}), **({"sparse": True} if sparse else {})}
    sudares = suda(data, keys, max_size=max_size, max_steps=max_steps)
    totals = {"suda": float(sudares.scores.sum()), **_tau_measures(data, keys, manifest, original, options)}
    measures = MEASURES[1:]
    per_var: dict[str, list[float]] = {"suda": [float(sudares.attribute_contributions[k]) for k in keys],
                                       **{name: [] for name in measures}}
    for key in keys:
        rest = [k for k in keys if k != key]
        still = bool(set(rest) & set(perturbed))
        left = _tau_measures(data, rest, manifest if still else None, original if still else None, options)
        for name in measures:
            per_var[name].append(_percent(totals[name] - left[name], totals[name]))
    variables = pd.DataFrame({"variable": keys, **per_var})
    interaction = {name: 100.0 - float(variables[name].sum()) if totals[name] > 0 else math.nan
                   for name in measures}
    suda_levels = _suda_levels(sudares)
    rows = []
    for key in keys:
        for level in sudares.level_contributions.query("variable == @key")["level"]:
            into = _modal_other(base[key], level)
            row = {"variable": key, "level": level, "merged_into": into,
                   "records": int((data[key] == level).sum()), "suda": suda_levels[(key, level)]}
            if into is None:
                row.update(dict.fromkeys(measures, 0.0))
            else:
                man: Manifest | None
                if key in perturbed:
                    # _check_inputs: a perturbed key means a manifest and the original file were given
                    assert manifest is not None and original is not None
                    man = _merged_manifest(manifest, key, level, into, original[key])
                else:
                    man = manifest if perturbed else None
                after = _tau_measures(_merged(data, key, level, into), keys, man,
                                      None if original is None or not perturbed
                                      else _merged(original, key, level, into), options)
                row.update({name: _percent(totals[name] - after[name], totals[name]) for name in measures})
            rows.append(row)
    return Contributions(
        keys=tuple(keys), perturbed=perturbed, totals=totals, variables=variables, interaction=interaction,
        levels=pd.DataFrame(rows, columns=["variable", "level", "merged_into", "records", *MEASURES]),
        epsilon=None if manifest is None else epsilon_shares(manifest),
        record_epsilon=None if manifest is None else manifest.record_epsilon, suda=sudares,
    )


def _outcomes(data: pd.DataFrame, manifest: Manifest, perturbed: Sequence[str],
              limit: int) -> tuple[list[list[int]], list[np.ndarray]] | None:
    """For every (perturbed key, record): the released codes it can take (-1: missing, kept) and their
    probabilities; ``None`` when there are more than ``limit`` released files (counted in logarithms)."""
    coded = []
    log_count = 0.0
    for key in perturbed:
        m = manifest[key].matrix
        dense = np.asarray(m.matrix)
        codes = encode(data[key].astype(object), m.categories, column=key)  # written as its categories
        log_count += float(np.log((dense > 0).sum(axis=1)[codes[codes >= 0]]).sum())
        coded.append((codes, dense))
    if limit < 1 or log_count > math.log(limit) + 1e-9:
        return None
    choices, probs = [], []
    for codes, dense in coded:
        for code in codes:
            support = np.flatnonzero(dense[code] > 0) if code >= 0 else np.array([-1])
            choices.append(support.tolist())
            probs.append(dense[code, support] if code >= 0 else np.array([1.0]))
    return choices, probs


def _suda_shares(res: SudaResult) -> tuple[dict[str, float], dict[tuple[str, Any], float]]:
    """Variable and level shares of one outcome (0 when it has no MSU)."""
    variables = {k: 0.0 if math.isnan(v) else float(v) for k, v in res.attribute_contributions.items()}
    return variables, _suda_levels(res)


def expected_suda(
    data: pd.DataFrame,
    keys: Sequence[str],
    manifest: Manifest,
    *,
    max_size: int | None = None,
    missing: Any = None,
    replicates: int = CONTRIBUTION_REPLICATES,
    key: Any = None,
    exact_limit: int = EXACT_LIMIT,
    max_steps: float = SUDA_MAX_STEPS,
) -> ExpectedSuda:
    """The expected SUDA scores and contributions of the file PRAM would release from ``data``.

    Exact where the released files can be enumerated (at most ``exact_limit`` of them), else
    the mean over ``replicates`` perturbations by the keyed engine with its Monte Carlo
    standard error (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame
        The original records.
    keys : sequence of str
        The key variables.
    manifest : Manifest
        The release's matrices (its single-column variables among the keys are perturbed).
    max_size, missing
        As :func:`pramkit.risk.suda`.
    replicates : int
        Perturbations drawn when the expectation cannot be enumerated (at least 2).
    key : SecretKey, bytes, path or None
        The key whose derived streams draw the replicates (``None``: a fresh one).
    exact_limit : int
        The largest number of released files enumerated.
    max_steps : float
        The most steps the SUDA searches of all the released files may take together
        (:class:`pramkit.risk.suda.SudaCost` of the original file times the files searched),
        estimated before the first; more is refused with the figure.

    Returns
    -------
    ExpectedSuda

    Raises
    ------
    ParameterError
        Fewer than 2 replicates, a key perturbed jointly with other columns, and as
        :func:`pramkit.risk.suda`.

    Examples
    --------
    Flipping ``a`` of the first record with probability 1/2 makes its MSU vanish half the time:

    >>> data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    >>> flip = Manifest.of({"a": PramMatrix([[1.0, 0.0], [0.5, 0.5]], [1, 2])})
    >>> res = expected_suda(data, ["a", "b", "c"], flip)
    >>> res.method, res.outcomes, res.scores.tolist()
    ('exact', 2, [1.0, 4.0, 1.0])
    """
    from pramkit.engine.perturb import perturb_frame
    from pramkit.kernel.rng import SecretKey, resolve_key

    keys = list(keys)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 2:
        raise ParameterError(f"replicates must be an integer of at least 2, got {replicates!r}")
    _check_inputs(data, keys, manifest, data)
    perturbed = [k for k in keys if k in manifest.names]
    data = _spelled(_without_code(data, keys, missing), manifest, perturbed)
    outcomes = _outcomes(data, manifest, perturbed, exact_limit)
    files = replicates if outcomes is None else math.prod(len(c) for c in outcomes[0])
    cost = suda_cost(data, keys, max_size=max_size)
    if cost.steps * files > max_steps:
        raise ParameterError(
            f"the expected SUDA contributions search {files:,} released files of {cost.steps:,} steps each "
            f"({cost.describe()}): {cost.steps * files:,} steps, more than the limit of {max_steps:,.0f}; "
            "lower --max-size (max_size) or --replicates, or raise --max-steps (max_steps)")
    draws: list[tuple[float, SudaResult]] = []
    bar = progress(total=files, desc="expected SUDA", unit="files")
    if outcomes is not None:
        choices, probs = outcomes
        method = "exact"
        n = len(data)
        cats = {k: list(manifest[k].matrix.categories) for k in perturbed}
        for picks in itertools.product(*[range(len(c)) for c in choices]):
            frame = data.copy()
            weight = 1.0
            for j, k in enumerate(perturbed):
                column = frame[k].astype(object).to_numpy().copy()
                for i in range(n):
                    slot = j * n + i
                    code = choices[slot][picks[slot]]
                    weight *= float(probs[slot][picks[slot]])
                    if code >= 0:
                        column[i] = cats[k][code]
                frame[k] = column
            draws.append((weight, suda(frame, keys, max_size=max_size, quiet=True)))
            bar.update(1)
    else:
        method = "monte carlo"
        master = resolve_key(key)
        single = Manifest.of({k: manifest[k].matrix for k in perturbed})
        for r in range(replicates):
            sub = SecretKey(master.design_random(f"expected suda, replicate {r}").randbytes(32),
                            f"replicate {r} of {master.source}")
            draws.append((1.0 / replicates, suda(perturb_frame(data, single, key=sub).data, keys, max_size=max_size,
                                                 quiet=True)))
            bar.update(1)
    bar.close()
    return _expectation(keys, method, draws)


def _expectation(keys: Sequence[str], method: str, draws: list[tuple[float, SudaResult]]) -> ExpectedSuda:
    """Weighted means of the outcomes' scores and shares; Monte Carlo standard errors."""
    weights = np.array([w for w, _ in draws])
    shares = [_suda_shares(res) for _, res in draws]
    levels = sorted({lv for _, per_level in shares for lv in per_level}, key=lambda t: (keys.index(t[0]), str(t[1])))

    def summary(values: list[float]) -> tuple[float, float]:
        x = np.array(values)
        mean = float(weights @ x)
        se = 0.0 if method == "exact" else float(x.std(ddof=1) / math.sqrt(len(x)))
        return mean, se

    var_rows = [(k, *summary([per_variable[k] for per_variable, _ in shares])) for k in keys]
    level_rows = [(v, x, *summary([per_level.get((v, x), 0.0) for _, per_level in shares])) for v, x in levels]
    return ExpectedSuda(
        keys=tuple(keys), method=method, outcomes=len(draws),
        scores=weights @ np.vstack([res.scores for _, res in draws]),
        variables=pd.DataFrame(var_rows, columns=["variable", "suda", "se"]),
        levels=pd.DataFrame(level_rows, columns=["variable", "level", "suda", "se"]),
    )


def contribution_sentences(before: Contributions, after: Contributions | ExpectedSuda | None = None, *,
                           epsilon: pd.DataFrame | None = None, top: int = 3) -> list[str]:
    """One plain sentence per level that carries the most special-unique risk before PRAM.

    Parameters
    ----------
    before : Contributions
        The original file's contributions.
    after : Contributions or ExpectedSuda, optional
        The released file's contributions, or their expectation over the perturbation.
    epsilon : pandas.DataFrame, optional
        :func:`epsilon_shares` of the release (default: ``after``'s when it has them).
    top : int
        How many levels.

    Returns
    -------
    list of str

    Examples
    --------
    >>> data = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})
    >>> res = risk_contributions(data, ["a", "b", "c"], sampling_fraction=0.5, model="independence")
    >>> contribution_sentences(res, top=1)
    ['a = 1 carries 25 % of the special-unique risk.']
    """
    ranked = before.levels.sort_values("suda", ascending=False, kind="stable").head(top)
    if epsilon is None and isinstance(after, Contributions):
        epsilon = after.epsilon
    later: dict[tuple[Any, Any], tuple[float, float]] = {}  # (variable, level) -> share after, its error
    if after is not None:
        lv = after.levels
        errors = lv["se"] if "se" in lv.columns else [0.0] * len(lv)  # an expectation has Monte Carlo errors
        later = {(v, x): (s, e) for v, x, s, e in zip(lv["variable"], lv["level"], lv["suda"], errors)}
    out = []
    for variable, level, suda_share in zip(ranked["variable"], ranked["level"], ranked["suda"]):
        if not suda_share > 0:
            continue
        text = f"{variable} = {level} carries {suda_share:.0f} % of the special-unique risk"
        if after is not None:
            share, se = later.get((variable, level), (0.0, 0.0))
            text += f" before, {share:.0f} % after" + (f" (Monte Carlo error {se:.1f} %)" if se > 0 else "")
            if epsilon is not None:
                spent = epsilon.set_index("variable")["epsilon"].get(variable)
                text += (f", at epsilon {fmt_epsilon(spent)} on {variable}" if spent is not None
                         else f"; {variable} is not perturbed")
        out.append(text + ".")
    return out


@dataclass(frozen=True, eq=False)
class ReleaseContributions:
    """The contributions of the original file, of the released file and expected over the perturbation.

    Parameters
    ----------
    before : Contributions
        The original file's.
    after : Contributions or None
        The released file's (``None`` without a release).
    expected : ExpectedSuda or None
        The SUDA contributions expected over the perturbation (``None`` without a release).
    sentences : tuple of str
        One plain sentence per level carrying the most special-unique risk (:func:`contribution_sentences`).

    Examples
    --------
    >>> data = pd.DataFrame({"a": [2, 1, 1, 3], "b": [0, 3, 0, 0], "c": [0, 6, 0, 0]})
    >>> res = release_contributions(data, ["a", "b", "c"], sampling_fraction=0.1, model="independence")
    >>> res.after is None, res.sentences[0]
    (True, 'a = 1 carries 20 % of the special-unique risk.')
    """

    before: Contributions
    after: Contributions | None
    expected: ExpectedSuda | None
    sentences: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: ``before``, ``after``, ``expected`` (each ``to_dict()`` or ``None``), ``sentences``.

        Examples
        --------
        >>> data = pd.DataFrame({"a": [2, 1, 1, 3], "b": [0, 3, 0, 0]})
        >>> sorted(release_contributions(data, ["a", "b"], sampling_fraction=0.1).to_dict())
        ['after', 'before', 'expected', 'sentences']
        """
        return {"before": self.before.to_dict(), "after": None if self.after is None else self.after.to_dict(),
                "expected": None if self.expected is None else self.expected.to_dict(),
                "sentences": list(self.sentences)}


def release_contributions(
    original: pd.DataFrame | str | Path,
    keys: Sequence[str],
    *,
    released: pd.DataFrame | str | Path | None = None,
    manifest: Manifest | None = None,
    sampling_fraction: float | None = None,
    weights: str | None = None,
    model: str = "2way",
    max_size: int | None = None,
    missing: Any = None,
    replicates: int = CONTRIBUTION_REPLICATES,
    key: Any = None,
    exact_limit: int = EXACT_LIMIT,
    top: int = 3,
    na_values: Sequence[str] = NA_VALUES,
    max_steps: float = SUDA_MAX_STEPS,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    decimal: str = CSV_DECIMAL,
) -> ReleaseContributions:
    """The contributions of :func:`risk_contributions` before PRAM and, with a release, after it.

    Parameters
    ----------
    original : pandas.DataFrame or path
        The original file.
    keys : sequence of str
        The key variables.
    released, manifest : DataFrame or path, and Manifest
        Both or neither: the released file and its manifest.
    sampling_fraction, weights, model, max_size, missing
        As :func:`risk_contributions`.
    replicates, key, exact_limit
        As :func:`expected_suda`.
    top : int
        Sentences for this many levels.
    na_values : sequence of str
        Texts that mean missing in CSV files besides the empty field.
    max_steps : float
        The most steps each SUDA search may take (:func:`pramkit.risk.suda`), and the
        searches of the expectation together (:func:`expected_suda`).
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).
    decimal : {".", ","}
        The decimal mark of a CSV file's weights (:func:`pramkit.io.csv_numbers`).

    Returns
    -------
    ReleaseContributions

    Raises
    ------
    ParameterError
        One of ``released`` and ``manifest`` without the other, and as :func:`risk_contributions`
        and :func:`expected_suda`.
    DataError
        An unreadable file or column, and as :func:`risk_contributions`.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.engine.perturb import perturb_frame
    >>> data = pd.DataFrame({"a": [2, 1, 1, 1, 2, 1], "b": list("xyxxyz")})
    >>> manifest = Manifest.of({"a": randomized_response([1, 2], 1.0)})
    >>> released = perturb_frame(data, manifest, key=bytes(32)).data
    >>> res = release_contributions(data, ["a", "b"], released=released, manifest=manifest,
    ...                             sampling_fraction=0.5, model="independence")
    >>> res.after.perturbed, res.expected.method, res.expected.outcomes
    (('a',), 'exact', 64)
    """
    from pramkit.io import csv_numbers, read_table

    if (released is None) != (manifest is None):
        raise ParameterError("pass the released file and its manifest together (or neither)")
    columns = list(dict.fromkeys(list(keys) + ([weights] if isinstance(weights, str) else [])))

    def load(frame: pd.DataFrame | str | Path) -> pd.DataFrame:
        if isinstance(frame, pd.DataFrame):
            return frame
        read = read_table(frame, columns=columns, na_values=na_values, sep=sep, encoding=encoding, decimal=decimal)
        if isinstance(weights, str) and decimal != CSV_DECIMAL:  # the weights' texts, read with the decimal comma
            read[weights] = csv_numbers(read[weights], weights, decimal=decimal, where=repr(str(frame)))
        return read

    original = load(original)
    options = {"sampling_fraction": sampling_fraction, "weights": weights, "model": model, "max_size": max_size,
               "missing": missing, "max_steps": max_steps}
    before = risk_contributions(original, keys, **options)
    after = expected = None
    if released is not None and manifest is not None:  # both or neither (checked above)
        after = risk_contributions(load(released), keys, manifest=manifest, original=original, **options)
        expected = expected_suda(original, keys, manifest, max_size=max_size, missing=missing,
                                 replicates=replicates, key=key, exact_limit=exact_limit, max_steps=max_steps)
    sentences = contribution_sentences(before, expected, epsilon=None if after is None else after.epsilon, top=top)
    return ReleaseContributions(before=before, after=after, expected=expected, sentences=tuple(sentences))
