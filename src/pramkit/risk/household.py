"""Household (hierarchical) re-identification risk from the per-record risks.

A household is re-identified when at least one of its members is.  With the
members' individual risks ``r_i`` (Benedetti-Franconi,
:mod:`pramkit.risk.individual`) taken as independent events, the household's
risk is

    R_h = 1 - prod_{i in h} (1 - r_i) = -expm1(sum_{i in h} log1p(-r_i)),

evaluated in log space (no loss of precision for small risks or large
households; ``r_i = 1`` gives ``R_h = 1``).  Every member of ``h`` carries
``R_h``.  This is the household risk of mu-ARGUS and of sdcMicro's
``measure_risk(..., hid=)``: its default route multiplies ``1 - r_i`` over
the household, its C++ route (``measure_hierachical``) expands the same
probability by inclusion-exclusion (Boole's formula).  sdcMicro's summaries
(``risk$global``) are

* ``hier_risk_ER``: the sum over records of their household's risk, the
  expected number of persons in re-identified households
  (:attr:`HouseholdRisk.household_expected_reidentifications`);
* ``hier_risk``: that sum divided by the number of records
  (:attr:`HouseholdRisk.household_risk_mean`);
* ``hier_risk_pct``: 100 times ``hier_risk`` (:attr:`HouseholdRisk.household_risk_pct`).

With a manifest, ``data`` is a released file and the risk is the risk after PRAM.  An
intruder links on the released keys, and a link can only be right when the record's
released keys are its true ones: for a record released with value ``j`` of a perturbed
key, that happens with the posterior probability

    P(X = j | Z = j) = M[j, j] p_j / lambda_j,

where ``lambda`` is the released distribution of the key and ``p`` the original one,
estimated from the release (``(M^T)^-1 lambda``, clipped at 0 and renormalised; only
public figures are used).  The per-record risk after PRAM is the Benedetti-Franconi
risk of the released cell times the product of these posteriors over the perturbed
keys (a missing value, kept as it was, gives 1); with ``M = I`` it is the risk
before PRAM.

With ``missing="exclude"`` a record with a missing key has no individual risk
and adds nothing to its household's product, but it is a member of the
household: it carries the household's risk and counts among the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, ParameterError
from pramkit.frames import column, eager, frame_columns, records_like
from pramkit.io import read_arrow, require_columns
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.risk.fractions import sampling_fraction_of
from pramkit.risk.frequencies import MissingKeys, frequencies_of, key_table, record_weights
from pramkit.risk.individual import individual_risk

__all__ = ["HouseholdRisk", "combine_households", "household_risk", "kept_posterior"]


@dataclass(frozen=True, eq=False)
class HouseholdRisk:
    """Household-level re-identification risk of a file and its summaries.

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    household : str
        The household identifier column.
    n : int
        Records counted in the individual risks; ``excluded`` were left out for a missing key.
    perturbed : tuple of str
        The keys a manifest perturbs (empty without one): the risks are those after PRAM.
    excluded : int
        Records left out of the counts (``missing="exclude"``); still household members.
    missing : {"category", "exclude"}
        The missing-value policy of the keys.
    households : int
        Distinct households.
    largest_household : int
        Members of the largest household.
    sampling_fraction : float
        The file's fraction: the given one, or ``n / sum of weights``.
    expected_reidentifications : float
        Sum of the individual risks (records), as in :class:`pramkit.risk.identification.RiskResult`.
    household_expected_reidentifications : float
        Sum over all records of their household's risk (sdcMicro's ``hier_risk_ER``).
    household_risk_mean : float
        ``household_expected_reidentifications`` over all records (sdcMicro's ``hier_risk``).
    household_risk_pct : float
        100 times the mean (sdcMicro's ``hier_risk_pct``).
    household_risk_max : float
        The largest household risk.
    per_record : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        ``f``, ``F``, ``individual_risk`` (NaN when excluded) and ``household_risk`` of every
        record (index of the data), as a frame of the data's type (pandas for a file).

    Examples
    --------
    A household's risk is at least that of each member, and at most 1:

    >>> data = pd.DataFrame({"sex": ["m", "f", "f", "m", "f"], "hh": ["a", "a", "b", "c", "c"]})
    >>> res = household_risk(data, ["sex"], "hh", sampling_fraction=0.1)
    >>> res.households, res.largest_household, res.n
    (3, 2, 5)
    >>> r = res.per_record
    >>> bool((r["household_risk"] >= r["individual_risk"]).all() and (r["household_risk"] <= 1).all())
    True
    >>> round(res.household_risk_pct, 6) == round(100 * res.household_risk_mean, 6)
    True
    """

    keys: tuple[str, ...]
    household: str
    n: int
    excluded: int
    missing: MissingKeys
    households: int
    largest_household: int
    sampling_fraction: float
    expected_reidentifications: float
    household_expected_reidentifications: float
    household_risk_mean: float
    household_risk_pct: float
    household_risk_max: float
    per_record: Any
    perturbed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The file-level figures as plain JSON values.

        Returns
        -------
        dict
            Every field but ``per_record``.

        Examples
        --------
        >>> import json
        >>> data = pd.DataFrame({"sex": ["m", "f", "f"], "hh": ["a", "a", "b"]})
        >>> figures = household_risk(data, ["sex"], "hh", sampling_fraction=0.5).to_dict()
        >>> figures["keys"], figures["households"], round(figures["household_expected_reidentifications"], 4)
        (['sex'], 2, 1.8815)
        >>> "per_record" in figures, json.loads(json.dumps(figures)) == figures
        (False, True)
        """
        return {
            "keys": list(self.keys),
            "household": self.household,
            "n": self.n,
            "excluded": self.excluded,
            "missing": self.missing,
            "households": self.households,
            "largest_household": self.largest_household,
            "sampling_fraction": self.sampling_fraction,
            "expected_reidentifications": self.expected_reidentifications,
            "household_expected_reidentifications": self.household_expected_reidentifications,
            "household_risk_mean": self.household_risk_mean,
            "household_risk_pct": self.household_risk_pct,
            "household_risk_max": self.household_risk_max,
            "perturbed": list(self.perturbed),
        }


def combine_households(risk: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``1 - prod (1 - r_i)`` over the members of each household, for every record.

    Parameters
    ----------
    risk : numpy.ndarray
        Individual risk of every record, in [0, 1]; NaN (no risk computed) adds nothing.
    members : numpy.ndarray
        Household code ``0..H-1`` of every record.

    Returns
    -------
    numpy.ndarray
        The risk of each record's household.

    Examples
    --------
    >>> combine_households(np.array([0.5, 0.5, 0.1, np.nan, 1.0]), np.array([0, 0, 1, 1, 2])).tolist()
    [0.75, 0.75, 0.1, 0.1, 1.0]
    """
    with np.errstate(divide="ignore"):  # r = 1: log1p(-1) = -inf, the household's risk is 1
        logs = np.log1p(-np.nan_to_num(risk, nan=0.0))
    return -np.expm1(np.bincount(members, weights=logs))[members]


def kept_posterior(matrix: PramMatrix, released: np.ndarray) -> np.ndarray:
    """``P(X = j | Z = j)`` for every category ``j``: the chance that a record released as ``j``
    is ``j`` in the original file, from the matrix and the released counts only.

    Parameters
    ----------
    matrix : PramMatrix
        The variable's matrix ``M[k, j] = P(Z = j | X = k)``.
    released : numpy.ndarray
        The released count of every category (in the matrix's order).

    Returns
    -------
    numpy.ndarray
        ``M[j, j] p_j / lambda_j`` in [0, 1], with ``p`` the unbiased estimate ``(M^T)^-1 lambda``
        clipped at 0 and renormalised (least squares for a singular matrix); 0 where nothing
        was released as ``j``.

    Examples
    --------
    Randomized response keeping a value with probability 3/4, on a release with shares
    0.6 and 0.4: the original shares are 0.7 and 0.3, so ``P(X = yes | Z = yes) =
    0.75 * 0.7 / 0.6 = 0.875`` and ``P(X = no | Z = no) = 0.75 * 0.3 / 0.4 = 0.5625``:

    >>> from pramkit import PramMatrix
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    >>> kept_posterior(m, np.array([60.0, 40.0])).round(12).tolist()
    [0.875, 0.5625]
    """
    m = matrix.matrix
    lam = released / released.sum()
    p = np.clip(np.linalg.lstsq(m.T, lam, rcond=None)[0], 0.0, None)
    p = p / p.sum() if p.sum() > 0 else lam
    with np.errstate(invalid="ignore", divide="ignore"):
        post = np.where(lam > 0, np.diag(m) * p / (m.T @ p), 0.0)
    return np.clip(np.nan_to_num(post), 0.0, 1.0)


def _kept(data: Any, keys: Sequence[str], manifest: Manifest) -> np.ndarray:
    """Per record, the product over the perturbed keys of ``P(X = released | Z = released)`` (1 if missing)."""
    from pramkit.codebook import encode

    kept = np.ones(len(data))
    joint = [k for k in keys if any(k in v.read_columns and v.is_joint for v in manifest.variables)]
    if joint:
        raise ParameterError(f"the household risk after PRAM takes keys perturbed one by one; {joint} are "
                             "perturbed jointly with other columns or within strata (the per-record risk "
                             "of pramkit risk without --household accounts for them)")
    for key in (k for k in keys if k in manifest.names):
        v = manifest[key]
        if v.is_joint or v.given:
            raise ParameterError(f"the household risk after PRAM takes keys perturbed one by one; {key!r} is "
                                 "perturbed jointly with other columns or within strata")
        codes = encode(column(data, key), v.matrix.categories, column=key)
        present = codes >= 0
        post = kept_posterior(v.matrix, np.bincount(codes[present], minlength=len(v.matrix.categories)).astype(float))
        kept[present] *= post[codes[present]]
    return kept


def _household_codes(ids: Any, name: str) -> np.ndarray:
    """Codes ``0..H-1`` of the household ids (a pandas Series or an Arrow array); :class:`DataError` for a
    missing id."""
    if not isinstance(ids, pd.Series) and pa.types.is_dictionary(ids.type):  # text ids read as codes
        # (pramkit.io.read_arrow): the dictionary's indices, a missing id a null one (the values that
        # pyarrow's to_numpy gives a null index are not missing)
        indices = (ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids).indices
        ids = pc.fill_null(indices, -1)
        codes, _ = pd.factorize(np.where(ids.to_numpy() < 0, np.nan, ids.to_numpy()), sort=False)
    else:
        codes, _ = pd.factorize(ids if isinstance(ids, pd.Series) else ids.to_numpy(), sort=False)
    absent = np.flatnonzero(codes < 0)
    if absent.size:
        raise DataError(f"household column {name!r}: row {int(absent[0]) + 1} has no household id; "
                        "every record must belong to a household")
    return codes


def household_risk(
    data: Any,
    keys: Sequence[str],
    household: str,
    *,
    sampling_fraction: float | None = None,
    weights: str | Sequence[float] | np.ndarray | None = None,
    missing: MissingKeys = "category",
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    manifest: Manifest | None = None,
    decimal: str = CSV_DECIMAL,
) -> HouseholdRisk:
    """Household risk ``1 - prod (1 - r_i)`` over the members of every household (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table or path
        The records, or a file (CSV, Parquet, Stata, SPSS; CSV columns are read as text).
    keys : sequence of str
        The key variables of the individual risk.
    household : str
        The column holding each record's household id (no missing ids).
    sampling_fraction, weights : float, or column name or one value per record
        Exactly one: the individual risk takes ``F`` = the sum of the weights in the
        record's cell, or ``f / sampling_fraction``.
    missing : {"category", "exclude"}
        Missing key values: a category of their own, or records excluded from the counts.
    na_values : sequence of str
        With a CSV file, texts that mean missing besides the empty field.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).
    decimal : {".", ","}
        The decimal mark of a CSV file's weights (:func:`pramkit.io.csv_numbers`).
    manifest : Manifest, optional
        The release manifest when ``data`` is a released file: the per-record risks are those
        after PRAM (module docstring, :func:`kept_posterior`).

    Returns
    -------
    HouseholdRisk

    Raises
    ------
    DataError
        A column is missing, a household id is missing, a key is invalid
        (:func:`pramkit.risk.frequencies.key_table`), a weight is not
        positive, or a cell's weights sum to less than its records.
    ParameterError
        Both or neither of ``sampling_fraction`` and ``weights``, a fraction
        outside (0, 1], or a key of the manifest perturbed jointly with other
        columns or within strata.

    Examples
    --------
    Sampling fraction 1/2: the sample unique has risk ``-p log(p) / (1 - p) = log 2``,
    each record of the pair ``1 - log 2``; household ``a`` holds the unique and one of the pair:

    >>> data = pd.DataFrame({"sex": ["m", "f", "f"], "hh": ["a", "a", "b"]})
    >>> res = household_risk(data, ["sex"], "hh", sampling_fraction=0.5)
    >>> res.per_record["individual_risk"].round(4).tolist()
    [0.6931, 0.3069, 0.3069]
    >>> res.per_record["household_risk"].round(4).tolist()
    [0.7873, 0.7873, 0.3069]
    >>> res.households, round(res.household_expected_reidentifications, 4)
    (2, 1.8815)
    """
    if isinstance(data, (str, Path)):  # the columns only, text as codes: per record as a pandas frame
        wanted = [*keys, household] + ([weights] if isinstance(weights, str) else [])
        data = read_arrow(data, columns=list(dict.fromkeys(wanted)), na_values=na_values, sep=sep,
                          encoding=encoding, compact=[*keys, household], decimal=decimal)  # weights stay as they are
        like: Any = pd.DataFrame(index=pd.RangeIndex(data.num_rows))
    else:
        like = data
    data = eager(data)  # a polars frame is read as Arrow
    require_columns([household], frame_columns(data), "the data")
    table = key_table(data, keys, missing=missing)
    members = _household_codes(column(data, household), household)
    w = None if weights is None else record_weights(data, weights, decimal=decimal)
    pi = sampling_fraction_of(table.n, sampling_fraction=sampling_fraction,
                              weights=None if w is None else w[table.included])
    freq = frequencies_of(table, w)
    population = freq.F if freq.F is not None else freq.f / pi
    individual = individual_risk(freq.f, population)
    risk = individual.risk if manifest is None else individual.risk * _kept(data, table.keys, manifest)
    combined = combine_households(risk, members)
    total = float(combined.sum())
    mean = total / len(combined)
    return HouseholdRisk(
        keys=table.keys, household=household, n=table.n, excluded=len(combined) - table.n, missing=table.missing,
        households=int(members.max()) + 1, largest_household=int(np.bincount(members).max()),
        sampling_fraction=pi, expected_reidentifications=(individual.expected_reidentifications if manifest is None
                                                          else float(np.nansum(risk))),
        household_expected_reidentifications=total, household_risk_mean=mean, household_risk_pct=100.0 * mean,
        household_risk_max=float(combined.max()),
        per_record=records_like({"f": freq.f, "F": population, "individual_risk": risk,
                                 "household_risk": combined}, like),
        perturbed=tuple(k for k in table.keys if manifest is not None and k in manifest.names),
    )
