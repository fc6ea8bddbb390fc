"""The risk and utility a design will give, from the original file and the matrices, before applying it.

A :class:`ProblemSet` reads the original file's key variables once (with the
sampling fraction or the weights, and a household id); :func:`expected_release`
then takes any designed :class:`pramkit.manifest.Manifest` (variables perturbed
one by one, within strata, or jointly) and returns, without perturbing a record:

* **tau1, tau2 after PRAM**, the exact expectation over PRAM of the figures that
  :func:`pramkit.identification_risk` computes on a released file with the same
  manifest and the original (``original=``).  That function fits the log-linear
  model to the original's counts, so its per-cell risks ``r1``, ``r2`` of a
  released sample unique (:func:`pramkit.risk.misclassified.cell_risk`) are fixed
  by the original and the matrices; the release only decides which cells are
  released sample uniques.  The released count of cell ``j`` is a sum of
  independent Bernoulli draws, one per record, of probability ``M[k(i), j]``, so

      P(f~_j = 1) = prod_k (1 - M[k, j])^{f_k} * sum_k f_k M[k, j] / (1 - M[k, j])

  (``f`` the original counts; a record certain to land in ``j`` is counted apart),
  and ``E tau_r = sum_j P(f~_j = 1) r_j``.  Stratified and joint variables are
  folded into one axis of the table as :func:`pramkit.identification_risk` folds them.
  ``M[k, j]`` is 0 unless the cells agree on the keys that are not perturbed, so
  the sums run within each combination of those keys: ``U x P x P`` products for
  ``U`` occupied combinations and ``P`` cells of the perturbed keys.
* **The individual and household risk after PRAM**: a link on the released keys can only be
  right if they are the record's true ones, so the risk after PRAM of a record of true cell ``k``
  is ``1{Z = k} r(f~_k, F~_k)``, the Benedetti-Franconi risk that
  :func:`pramkit.identification_risk` gives its released cell, where it was kept.  Its expectation
  (:func:`expected_kept_risk`) is ``M[k, k] int_0^1 p G_k(t) / (p + (1-p) t) dt``, with ``G_k`` the
  closed-form generating function of the other records' count in ``k`` and ``p = f~ / F~``:
  exact with a sampling fraction, or with weights that are the same for every record that can be
  released in a cell; with other weights, exact where the record is alone in its released cell
  (``F~`` its own weight), and elsewhere ``p`` is the ratio of the cell's expected count to its
  expected weight sum (``individual_exact`` is False).  The household risk is the expectation of
  :func:`pramkit.risk.household.combine_households`'s ``1 - prod (1 - R_i)`` over the members: their
  risks are dependent (the released counts of their cells are sums over the same other records, and
  members of one cell share its count) unless they differ on a key that is not perturbed.
  :mod:`pramkit.risk.household_pairs` groups each household's members by those keys: a group of two
  adds its pair's covariance (a two-dimensional integral per distinct pair of cells) to the product of
  the ``1 - E R_i``, a group of three or more of one cell is taken from its count's distribution, one in
  several cells from the joint distribution of the counts in its cells, all exact within work limits;
  beyond them a group keeps its pairs' covariances, or the members are combined as independent events
  (``household_exact`` is False).
* **The utility**: per perturbed variable the standard errors of the moment
  estimates of its category shares at the file's n, with PRAM and without
  (:func:`pramkit.utility.loss.moment_variances`: sampling and PRAM, multinomial),
  their ratio, and the information kept, ``I(X; Z) / H(X)``
  (:func:`pramkit.information.mutual_information`); the same standard errors for
  the cells of the keys' table.

All these figures are computed from the original file: they are private, for the
data holder choosing a design, and are never part of a manifest or a public report.
The derivation is written out in docs/risk.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from pramkit.codebook import MISSING, encode
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import DataError, MatrixError, ParameterError
from pramkit.frames import column, eager, frame_columns
from pramkit.information import entropy, mutual_information
from pramkit.manifest import Manifest
from pramkit.risk.folding import axis_categories, fold, folded_cells, folded_shape, folding, perturbation
from pramkit.risk.fractions import FractionsBy, SamplingFractions
from pramkit.risk.frequencies import KeyTable, MissingKeys, key_table, record_weights
from pramkit.risk.household import _household_codes, combine_households
from pramkit.risk.household_pairs import HouseholdExpectation, household_expectation, household_layout
from pramkit.risk.identification import fit_model
from pramkit.risk.individual import benedetti_franconi, individual_risk
from pramkit.risk.loglinear import LogLinearFit, check_cells, push
from pramkit.risk.misclassified import cell_risk, joint_diagonal
from pramkit.risk.quadrature import kept_quadrature
from pramkit.utility.loss import moment_variances

__all__ = ["ExpectedRelease", "ExpectedUtility", "KeptRisk", "ProblemSet", "expected_kept_risk", "expected_release",
           "released_unique_probability"]

#: Largest number of cells of the perturbed keys whose joint matrix is formed for the exact expectation;
#: beyond it P(f~_j = 1) is taken as ``mu~ exp(-mu~)`` (the Poisson approximation, ``exact=False``).
EXACT_MAX_CELLS = 4_096


@dataclass(eq=False)
class ProblemSet:
    """The original file on the key variables, read once: the records' codes, the sampling
    fraction or the weights, and the household id.

    Parameters
    ----------
    table : pramkit.risk.frequencies.KeyTable
        The records encoded on the keys (categories from the data).
    sampling_fraction : float or None
        The file's sampling fraction (exactly one of it and ``weights``).
    weights : numpy.ndarray or None
        One weight per record.
    household : numpy.ndarray or None
        Each record's household code ``0..H-1``.
    household_name : str or None
        The household id column.
    model : str or list
        The log-linear model of the true cells (:func:`pramkit.identification_risk`).
    fractions : {"cell", "file"}
        How the weights give the sampling fractions.
    tol : float
        The margin tolerance of the fit.

    Examples
    --------
    >>> data = pd.DataFrame({"sex": list("mfmfmfmfmf"), "age": list("2233442345")})
    >>> problem = ProblemSet.of(data, ["sex", "age"], sampling_fraction=0.5)
    >>> problem.keys, problem.n
    (('sex', 'age'), 10)
    """

    table: KeyTable
    sampling_fraction: float | None = None
    weights: np.ndarray | None = None
    household: np.ndarray | None = None
    household_name: str | None = None
    model: str | Sequence[Sequence[str]] = "2way"
    fractions: FractionsBy = "cell"
    tol: float = 1e-4
    _structures: dict[Any, _Structure] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, data: Any, keys: Sequence[str], *, sampling_fraction: float | None = None,
           weights: str | Sequence[float] | np.ndarray | None = None, household: str | None = None,
           missing: MissingKeys = "category", model: str | Sequence[Sequence[str]] = "2way",
           fractions: FractionsBy = "cell", tol: float = 1e-4, na_values: Sequence[str] = NA_VALUES,
           sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> ProblemSet:
        """Read the problem set from the original records (a frame, or a file read on its key columns).

        Parameters
        ----------
        data : pandas.DataFrame, polars.DataFrame, pyarrow.Table or path
            The original file.
        keys : sequence of str
            The key variables.
        sampling_fraction, weights : float, or a column name or one value per record
            Exactly one.
        household : str, optional
            The household id column (every record must have one).
        missing : {"category", "exclude"}
            Missing key values: a category of their own, or records left out.
        model, fractions, tol
            As :func:`pramkit.identification_risk`.
        na_values, sep, encoding
            How a CSV file is read.

        Returns
        -------
        ProblemSet

        Raises
        ------
        ParameterError
            Both or neither of ``sampling_fraction`` and ``weights``.
        DataError
            A key, weight or household column is missing or invalid.
        """
        if (sampling_fraction is None) == (weights is None):
            raise ParameterError("give exactly one of the sampling fraction and the weights")
        keys = list(keys)
        if isinstance(data, (str, Path)):
            from pramkit.io import read_table

            wanted = [*keys, *([weights] if isinstance(weights, str) else []), *([household] if household else [])]
            data = read_table(data, columns=list(dict.fromkeys(wanted)), na_values=na_values, sep=sep,
                              encoding=encoding)
        data = eager(data)
        table = key_table(data, keys, missing=missing)
        w = None if weights is None else record_weights(data, weights)
        codes = None
        if household:
            if household not in frame_columns(data):
                raise DataError(f"unknown household column {household!r}; the data have {frame_columns(data)}")
            codes = _household_codes(column(data, household), household)
        return cls(table, sampling_fraction, w, codes, household or None, model, fractions, tol)

    @property
    def keys(self) -> tuple[str, ...]:
        """The key variables."""
        return self.table.keys

    @property
    def n(self) -> int:
        """Records that enter the counts."""
        return self.table.n

    def structure(self, manifest: Manifest | None) -> _Structure:
        """The table a manifest's design needs (its categories, its joint axes folded), counted and
        fitted once: designs that differ only in their matrices share it."""
        keys = self.keys
        singles, joints = perturbation(manifest, keys)
        declared = axis_categories(manifest, keys, singles, joints)
        signature = (tuple((k, tuple(map(repr, declared[k]))) for k in keys if k in declared),
                     tuple((j.name, j.positions, tuple(map(repr, j.cells))) for j in joints))
        if signature not in self._structures:
            self._structures[signature] = _Structure.of(self, manifest, singles, joints, declared)
        return self._structures[signature]


@dataclass(frozen=True, eq=False)
class _Structure:
    """The original's counts on the (folded) table of a kind of design, the model fitted to them, and each
    record's cell: everything a design's expected figures need but its matrices."""

    names: tuple[str, ...]  # the folded axes: a key, or a joint variable's name
    perturbed: tuple[str, ...]  # the folded axes a manifest of this kind perturbs
    counts: np.ndarray
    fit: LogLinearFit
    fractions: SamplingFractions
    cells: np.ndarray  # each record's flat cell, -1 if left out (a missing value of a perturbed key)
    individual: np.ndarray  # Benedetti-Franconi risk of every cell (0 where empty)
    before: Any  # CellRisk with M = I
    sums: np.ndarray | None = None  # the weights' sum in every cell (None without weights)
    uniform: bool = True  # one weight in each combination of the unperturbed axes (or no weights)
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # what its designs share (households' layout)

    @classmethod
    def of(cls, problem: ProblemSet, manifest: Manifest | None, singles: tuple[str, ...], joints: list[Any],
           declared: Mapping[str, Sequence[Any]]) -> _Structure:
        table, keys = problem.table, problem.keys
        codes = table.codes.copy()
        codes[~table.included] = MISSING
        shape = list(table.shape)
        for i, key in enumerate(keys):
            if key in declared:
                codes[:, i] = _recode(codes[:, i], table.categories[i], declared[key], key)
                shape[i] = len(declared[key])
        names = folding(keys, shape, joints)[2]
        check_cells(names, folded_shape(keys, shape, joints))
        included = (codes != MISSING).all(axis=1)
        flat = np.ravel_multi_index(codes[included].T, shape)
        size = math.prod(shape)
        counts = np.bincount(flat, minlength=size).astype(float).reshape(shape)
        sums = None
        if problem.weights is not None:
            sums = np.bincount(flat, weights=problem.weights[included], minlength=size).reshape(shape)
        folded = fold(counts, keys, joints)  # refuses records outside a joint variable's cells
        assert folded is not None
        sums = fold(sums, keys, joints)
        cells = np.full(len(codes), -1, dtype=np.int64)
        cells[included] = (folded_cells(codes[included], shape, keys, joints) if joints
                           else flat)
        perturbed = singles + tuple(j.name for j in joints)
        fit, _, _, fractions = fit_model(
            folded, sums, folded if perturbed else None, sums if perturbed else None, names, perturbed, manifest,
            sampling_fraction=problem.sampling_fraction, fractions=problem.fractions, model=problem.model,
            tol=problem.tol, tau_rtol=None)
        occupied = folded > 0
        population = sums if sums is not None else folded / fractions.overall
        individual = np.zeros(folded.shape)
        individual[occupied] = individual_risk(folded[occupied], population[occupied]).risk
        before = cell_risk(fit.fitted, fractions.values, [None] * folded.ndim)
        uniform = True
        if problem.weights is not None:  # records move within a combination of the unperturbed axes only
            fixed = [a for a, name in enumerate(names) if name not in perturbed]
            at = np.unravel_index(cells[cells >= 0], folded.shape)
            group = (np.ravel_multi_index([at[a] for a in fixed], [folded.shape[a] for a in fixed]) if fixed
                     else np.zeros(len(at[0]), dtype=np.int64))
            w = problem.weights[cells >= 0]
            low = pd.Series(w).groupby(group).min().to_numpy()
            high = pd.Series(w).groupby(group).max().to_numpy()
            uniform = bool(np.all(low == high))
        return cls(names, perturbed, folded, fit, fractions, cells, individual, before, sums, uniform)


def _recode(codes: np.ndarray, found: Sequence[Any], declared: Sequence[Any], key: str) -> np.ndarray:
    """A key's codes over the categories found in the data, as codes over the manifest's categories
    (a missing value, released as it is, leaves its record out as :func:`pramkit.identification_risk` does)."""
    present = [c for c in found if c is not None]
    try:
        mapped = encode(pd.Series(present, dtype=object), list(declared), column=key)
    except DataError:
        raise DataError(f"key {key!r} has values that are not categories of the manifest's matrix "
                        f"({', '.join(map(str, declared[:5]))}{', ...' if len(declared) > 5 else ''}): "
                        "a manifest designed for another file") from None
    lookup = np.full(len(found) + 1, MISSING, dtype=np.int64)
    at = 0
    for i, c in enumerate(found):
        if c is not None:
            lookup[i] = mapped[at]
            at += 1
    return lookup[codes]  # MISSING (-1) indexes the last entry, MISSING


def released_unique_probability(counts: np.ndarray, matrices: Sequence[np.ndarray | None]) -> np.ndarray:
    """P(f~_j = 1) for every released cell ``j``: the chance that exactly one record is released in it.

    Each record of cell ``k`` is released in ``j`` with probability ``M[k, j]`` (the Kronecker
    product of the axes' matrices), independently: ``f~_j`` is a Poisson-binomial count, and
    ``P(f~_j = 1) = prod_k (1 - M[k, j])^{f_k} sum_k f_k M[k, j] / (1 - M[k, j])`` (module
    docstring); a record released in ``j`` with certainty makes it ``prod`` over the others.

    Parameters
    ----------
    counts : numpy.ndarray
        The original counts ``f``, one axis per variable.
    matrices : sequence of numpy.ndarray or None
        One square matrix per axis (``None``: not perturbed).

    Returns
    -------
    numpy.ndarray
        Of the table's shape.

    Examples
    --------
    Two records in cell 0 and one in cell 1 of a variable kept with probability 0.8.  Exactly
    one record lands in cell 1 when one of the pair moves there and the third record moves away
    (``2 x 0.2 x 0.8 x 0.2``), or none moves (``0.8^3``):

    >>> m = np.array([[0.8, 0.2], [0.2, 0.8]])
    >>> p = released_unique_probability(np.array([2.0, 1.0]), [m])
    >>> bool(np.isclose(p[1], 2 * 0.2 * 0.8 * 0.2 + 0.8 ** 3)), bool(np.isclose(p[0], 2 * 0.8 * 0.2 * 0.8 + 0.2 ** 3))
    (True, True)
    >>> released_unique_probability(np.array([2.0, 1.0]), [None]).tolist()  # unperturbed: the uniques
    [0.0, 1.0]
    """
    counts = np.asarray(counts, dtype=float)
    axes = [a for a, m in enumerate(matrices) if m is not None]
    rest = [a for a in range(counts.ndim) if a not in axes]
    if not axes:
        return (counts == 1).astype(float)
    sub = [counts.shape[a] for a in axes]
    size = math.prod(sub)
    moved = np.transpose(counts, rest + axes)
    rows = moved.reshape(-1, size)
    if size > EXACT_MAX_CELLS:
        mu = push(counts, matrices)
        return mu * np.exp(-mu)
    joint = np.ones((1, 1))
    for a in axes:
        joint = np.kron(joint, np.asarray(matrices[a], dtype=float))
    certain = joint >= 1.0
    with np.errstate(divide="ignore"):
        logs = np.where(certain, 0.0, np.log1p(-np.where(certain, 0.0, joint)))
        odds = np.where(certain, 0.0, joint / np.where(certain, 1.0, 1.0 - joint))
    occupied = np.flatnonzero(rows.sum(axis=1) > 0)
    f = rows[occupied]
    sure = f @ certain.astype(float)
    none_elsewhere = np.exp(f @ logs)
    one = np.where(sure == 0, none_elsewhere * (f @ odds), np.where(sure == 1, none_elsewhere, 0.0))
    out = np.zeros_like(rows)
    out[occupied] = one
    out = out.reshape(moved.shape)
    return np.transpose(out, np.argsort(rest + axes))


#: Largest ``(U + 1) P^2 + 20 D`` (``U`` occupied combinations of the unperturbed keys, ``P`` cells of the
#: perturbed ones, ``D`` distinct entries of their joint matrix, each a logarithm) for which
#: :func:`expected_kept_risk` forms the joint matrix at each of its few hundred quadrature nodes (or, when
#: ``D < P``, counts the other records by entry once, ``U P^2``, and takes ``D U P`` products a node); beyond
#: it the released count is taken as Poisson (``exact=False``).
KEPT_EXACT_MAX_WORK = 1_000_000

class KeptRisk(NamedTuple):
    """What :func:`expected_kept_risk` returns.

    Parameters
    ----------
    risk : numpy.ndarray
        ``E[1{Z = k} r(f~_k)]`` for a record of each cell (0 where ``f = 0``).
    alone : numpy.ndarray
        ``P(Z = k, f~_k = 1)``: the record kept and alone in its released cell.
    exact : bool
        False beyond :data:`KEPT_EXACT_MAX_WORK`, where the count is taken as Poisson.
    """

    risk: np.ndarray
    alone: np.ndarray
    exact: bool


def expected_kept_risk(counts: np.ndarray, matrices: Sequence[np.ndarray | None],
                       fraction: float | np.ndarray) -> KeptRisk:
    """For a record of each cell ``k``: ``E[1{Z = k} r(f~_k)]``, its expected risk after PRAM.

    A record is released in its own cell ``k`` with probability ``M[k, k]``, independently of the
    others; then the released count of ``k`` is ``f~_k = 1 + S``, ``S`` the Poisson-binomial count
    of the other records released in ``k`` (each record of cell ``l`` with probability
    ``M[l, k]``), and the record's Benedetti-Franconi risk is ``r(f~) = p J_f~(p)``
    (:mod:`pramkit.risk.individual`) with ``p`` the released cell's sampling fraction, ``F~ = f~ / p``.
    From ``J_f = int_0^1 t^(f-1) / (p + (1-p) t) dt``,

        E[1{Z = k} r(f~_k)] = M[k, k] int_0^1 p G_k(t) / (p + (1-p) t) dt,
        G_k(t) = E t^S = prod_l (1 - M[l, k] (1 - t))^(f_l - [l = k]),

    the generating function of ``S`` in closed form: no distribution of the count is formed.  The
    integral is taken in ``s = -log t`` by Gauss-Legendre on panels that follow the two scales of the
    integrand (``1 / E f~_k`` near ``t = 1``, ``p`` near ``t = 0``): exact to about 1e-13 relative.

    Parameters
    ----------
    counts : numpy.ndarray
        The original counts ``f``, one axis per variable.
    matrices : sequence of numpy.ndarray or None
        One square matrix per axis (``None``: not perturbed).
    fraction : float or numpy.ndarray
        ``p`` of every released cell (broadcast to the table), in (0, 1].

    Returns
    -------
    KeptRisk
        The risks, and ``P(Z = k, S = 0) = M[k, k] G_k(0)`` (both of the table's shape), and whether
        they are exact (beyond :data:`KEPT_EXACT_MAX_WORK` ``S`` is taken as Poisson of the same mean).

    Examples
    --------
    A census (``p = 1``, ``r = 1 / f~``) of one record in each of two cells, each record kept or moved
    with probability 1/2: a record is kept (1/2), and then alone (risk 1) or joined by the other (1/2):

    >>> m = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> risk, alone, exact = expected_kept_risk(np.array([1.0, 1.0]), [m], 1.0)
    >>> np.round(risk, 12).tolist(), alone.tolist(), exact
    ([0.375, 0.375], [0.25, 0.25], True)

    Unperturbed, it is the Benedetti-Franconi risk at the original counts:

    >>> from pramkit.risk.individual import benedetti_franconi
    >>> risk, _, _ = expected_kept_risk(np.array([1.0, 3.0]), [None], 0.1)
    >>> bool(np.allclose(risk, benedetti_franconi([1, 3], [10, 30]), rtol=1e-12))
    True
    """
    counts = np.asarray(counts, dtype=float)
    p_all = np.broadcast_to(np.asarray(fraction, dtype=float), counts.shape)
    axes = [a for a, m in enumerate(matrices) if m is not None]
    rest = [a for a in range(counts.ndim) if a not in axes]
    occupied = counts > 0
    out = np.zeros(counts.shape)
    if not occupied.any():
        return KeptRisk(out, out.copy(), True)
    if not axes:
        out[occupied] = benedetti_franconi(counts[occupied], counts[occupied] / p_all[occupied])
        return KeptRisk(out, (counts == 1).astype(float), True)
    size = math.prod(counts.shape[a] for a in axes)
    order = rest + axes
    rows = np.transpose(counts, order).reshape(-1, size)
    p = np.transpose(p_all, order).reshape(-1, size)
    used = np.flatnonzero(rows.sum(axis=1) > 0)
    f, p = rows[used], p[used]
    diagonal = np.transpose(joint_diagonal(matrices, counts.shape), order).reshape(-1, size)[used]
    work = (len(used) + 1) * size * size
    exact = work <= KEPT_EXACT_MAX_WORK
    if exact:
        joint = np.ones((1, 1))
        for a in axes:
            joint = np.kron(joint, np.asarray(matrices[a], dtype=float))
        entries, where = np.unique(joint, return_inverse=True)  # a design's matrix has few distinct entries
        exact = work + 20 * entries.size <= KEPT_EXACT_MAX_WORK
    if exact:
        where = where.reshape(joint.shape)
        moved = 1.0 - joint
        mu = f @ joint
        certain = moved <= 0.0  # records of these cells always land there: none may, for the record to be alone
        others = f @ certain.astype(float) - (diagonal >= 1.0)
        with np.errstate(divide="ignore"):
            log_alone = f @ np.where(certain, 0.0, np.log(np.where(certain, 1.0, moved))) - np.log(
                np.where(diagonal >= 1.0, 1.0, 1.0 - diagonal))
        alone = np.where(others > 0.5, 0.0, diagonal * np.exp(log_alone))
    else:
        mu = push(counts, matrices)
        mu = np.transpose(mu, order).reshape(-1, size)[used]
        alone = diagonal * np.exp(-(mu - diagonal))
    if exact:
        by_entry = _others_by_entry(f, where, entries.size) if entries.size < size else None
        width = f.size + (size * size if by_entry is None else entries.size)

        def log_g(s: np.ndarray) -> np.ndarray:
            return _log_others(f, entries, where, by_entry, np.exp(-s))
    else:
        width = f.size

        def log_g(s: np.ndarray) -> np.ndarray:  # Poisson: log G = -(E S) (1 - t)
            return -(mu - diagonal) * -np.expm1(-s)
    total = _kept_integral(p, kept_quadrature(float(mu.max()), float(p[f > 0].min())), log_g, width)
    back = np.argsort(order)
    kept, lone = np.zeros(rows.shape), np.zeros(rows.shape)
    kept[used] = np.where(f > 0, diagonal * total, 0.0)
    lone[used] = np.where(f > 0, alone, 0.0)
    moved_shape = [counts.shape[a] for a in order]
    return KeptRisk(np.transpose(kept.reshape(moved_shape), back), np.transpose(lone.reshape(moved_shape), back),
                    exact)


#: Elements of the arrays of :func:`expected_kept_risk` at the quadrature nodes taken at once (the nodes
#: times the table's rows and cells, plus the nodes times the joint matrix's entries or cells squared): the
#: nodes of a small table at once, a large table's a few at a time, in cache.
_NODES_ELEMENTS = 1 << 16


def _kept_integral(p: np.ndarray, quadrature: tuple[np.ndarray, np.ndarray],
                   log_g: Callable[[np.ndarray], np.ndarray], width: int) -> np.ndarray:
    """``int_0^1 p G(t) / (p + (1-p) t) dt`` for every cell, in ``s = -log t`` (:func:`expected_kept_risk`): the
    nodes taken :data:`_NODES_ELEMENTS` ``// width`` at a time.

    Parameters
    ----------
    p : numpy.ndarray
        The released cells' sampling fractions, one row per combination of the unperturbed keys.
    quadrature : tuple of numpy.ndarray
        The nodes ``s`` and weights (:func:`pramkit.risk.quadrature.kept_quadrature`).
    log_g : callable
        ``log G(e^-s)`` of every cell at the nodes ``s`` (shape ``(n, 1, 1)``).
    width : int
        The elements ``log_g`` forms at a node.

    Returns
    -------
    numpy.ndarray
        Of the shape of ``p``.

    Examples
    --------
    ``G = 1`` (no other record can join) and ``p = 1``: ``int_0^1 dt = 1``:

    >>> quadrature = kept_quadrature(1.0, 1.0)
    >>> _kept_integral(np.ones((1, 1)), quadrature, lambda s: np.zeros(s.shape), 1).round(12).tolist()
    [[1.0]]
    """
    nodes, weights = quadrature
    total = np.zeros(p.shape)
    chunk = max(1, _NODES_ELEMENTS // width)
    with np.errstate(divide="ignore", over="ignore"):
        for at in range(0, nodes.size, chunk):
            s, w = nodes[at:at + chunk, None, None], weights[at:at + chunk, None, None]
            t = np.exp(-s)
            total += ((w * t) * p / (p + (1.0 - p) * t) * np.exp(log_g(s))).sum(axis=0)
    return total


def _others_by_entry(f: np.ndarray, where: np.ndarray, distinct: int) -> np.ndarray:
    """How many of the other records of a record of cell ``k`` are released in ``k`` with each distinct
    probability of the joint matrix: ``C[e, u * P + k] = sum_l (f[u, l] - [l = k]) [M[l, k] is entry e]``.

    Parameters
    ----------
    f : numpy.ndarray
        The original counts, one row per combination of the unperturbed keys, one column per perturbed cell.
    where : numpy.ndarray
        Each entry of the joint matrix's index among its distinct entries.
    distinct : int
        The number of distinct entries.

    Returns
    -------
    numpy.ndarray
        Of shape ``(distinct, f.size)``.

    Examples
    --------
    >>> where = np.array([[0, 1], [1, 0]])  # a symmetric matrix of two distinct entries
    >>> _others_by_entry(np.array([[2.0, 5.0]]), where, 2).tolist()
    [[1.0, 4.0], [5.0, 2.0]]
    """
    rows, size = f.shape  # rows * size^2 within KEPT_EXACT_MAX_WORK
    bins = (where[None, :, :] * rows + np.arange(rows)[:, None, None]) * size + np.arange(size)
    weights = np.broadcast_to(f[:, :, None], bins.shape)
    out: np.ndarray = np.bincount(bins.ravel(), weights=weights.ravel(), minlength=distinct * f.size)
    out = out.reshape(distinct, rows, size)
    out[np.diagonal(where), :, np.arange(size)] -= 1.0  # the record itself
    return out.reshape(distinct, f.size)


def _log_others(f: np.ndarray, entries: np.ndarray, where: np.ndarray, by_entry: np.ndarray | None,
                t: np.ndarray) -> np.ndarray:
    """``log G_k(t) = sum_l (f[u, l] - [l = k]) log(1 - M[l, k] (1 - t))`` at each of the nodes ``t`` (shape
    ``(n, 1, 1)``): the logarithm of the generating function of the count of the other records released in cell
    ``k`` of row ``u`` (:func:`expected_kept_risk`), from the logarithms of the joint matrix's distinct entries;
    by entry (:func:`_others_by_entry`) when there are fewer of them than cells.

    Examples
    --------
    >>> m = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> entries, where = np.unique(m, return_inverse=True)
    >>> f, t = np.array([[2.0, 1.0]]), np.array([0.5]).reshape(-1, 1, 1)
    >>> direct = f @ np.log(1.0 - m * 0.5) - np.log(1.0 - np.diagonal(m) * 0.5)
    >>> where = where.reshape(2, 2)
    >>> bool(np.allclose(_log_others(f, entries, where, None, t)[0], direct))
    True
    >>> bool(np.allclose(_log_others(f, entries, where, _others_by_entry(f, where, 2), t)[0], direct))
    True
    """
    logs = np.log(1.0 - entries + entries * t.reshape(-1, 1))  # nodes x distinct entries
    if by_entry is not None:
        return (logs @ by_entry).reshape(len(logs), *f.shape)
    return f @ logs[:, where] - logs[:, None, np.diagonal(where)]


@dataclass(frozen=True)
class ExpectedUtility:
    """The expected utility of one perturbed variable (or of the keys' table).

    Parameters
    ----------
    name : str
        The variable (a joint variable's name), or ``"keys"`` for the keys' table.
    categories : int
        Its categories (cells).
    standard_error : float
        The root of the summed variances of the estimated shares at the file's n, with PRAM
        (sampling and PRAM; NaN for a singular matrix: no unbiased estimate).
    standard_error_without : float
        The same without PRAM (sampling alone).
    information_kept : float
        ``I(X; Z) / H(X)`` in [0, 1] (NaN for the keys' table, or a variable without variation).
    per_category : pandas.DataFrame
        category (its position), share, standard_error, standard_error_without.
    """

    name: str
    categories: int
    standard_error: float
    standard_error_without: float
    information_kept: float
    per_category: pd.DataFrame = field(repr=False, compare=False)

    @property
    def ratio(self) -> float:
        """``standard_error / standard_error_without``: how much wider PRAM makes the intervals."""
        return self.standard_error / self.standard_error_without if self.standard_error_without > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values."""
        return {"name": self.name, "categories": self.categories, "standard_error": self.standard_error,
                "standard_error_without": self.standard_error_without, "ratio": self.ratio,
                "information_kept": self.information_kept}


@dataclass(frozen=True)
class ExpectedRelease:
    """The expected risk and utility of a design, from the original file (private figures).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    perturbed : tuple of str
        The axes the manifest perturbs (a key, or a stratified or joint variable's name).
    n : int
        Records counted (records with a missing value of a perturbed key are left out).
    sample_uniques, sample_uniques_before : float
        The expected number of released sample uniques; the original's.
    tau1, tau2, tau1_before, tau2_before : float
        The expected tau1 and tau2 after PRAM (module docstring), and before, with the same model.
    individual, individual_before : float
        Expected re-identifications (sum of the per-record risks) after and before PRAM.
    household, household_before : float or None
        The expected number of persons in re-identified households (with a household id): after PRAM,
        the pairs of members' dependence counted (:mod:`pramkit.risk.household_pairs`).
    utility : tuple of ExpectedUtility
        Per perturbed variable, then the keys' table.
    exact : bool
        False when the perturbed keys have more than :data:`EXACT_MAX_CELLS` cells
        (the Poisson approximation of P(f~_j = 1)).
    seconds : float
        Wall-clock time of this design's figures.
    individual_exact : bool
        Whether ``individual`` is the exact expectation (module docstring): False with weights that
        differ among the records that can be released in a cell (where a record is not alone in its
        released cell, the cell's fraction is then the ratio of its expected count to its expected
        weight sum), or beyond
        :data:`KEPT_EXACT_MAX_WORK` (the released counts taken as Poisson).
    household_exact : bool
        Whether ``household`` is the exact expectation: ``individual_exact``, and the work within the limits
        of :mod:`pramkit.risk.household_pairs` (``PAIR_MAX_WORK``: beyond it the members are combined as
        independent events; ``CELL_MAX_RECORDS`` and ``GROUP_MAX_WORK``: beyond them a group of three members
        or more alike on every unperturbed key keeps its pairs only).  True without a household id.
    """

    keys: tuple[str, ...]
    perturbed: tuple[str, ...]
    n: int
    sample_uniques: float
    sample_uniques_before: float
    tau1: float
    tau2: float
    tau1_before: float
    tau2_before: float
    individual: float
    individual_before: float
    household: float | None
    household_before: float | None
    utility: tuple[ExpectedUtility, ...]
    exact: bool
    seconds: float
    individual_exact: bool = True
    household_exact: bool = True

    def household_note(self) -> str | None:
        """Why ``household`` is not the exact expectation, in an officer's words; ``None`` when it is (or
        without a household id).

        The household figure combines the members' own expected risks, so it is approximate whenever
        ``individual_exact`` is false; otherwise it is approximate because the dependence of members alike
        on every unperturbed key was beyond the work limits of :mod:`pramkit.risk.household_pairs`.

        Examples
        --------
        >>> e = ExpectedRelease(keys=("sex",), perturbed=("sex",), n=2, sample_uniques=0.0,
        ...                     sample_uniques_before=0.0, tau1=0.0, tau2=0.0, tau1_before=0.0, tau2_before=0.0,
        ...                     individual=0.0, individual_before=0.0, household=1.0, household_before=1.0,
        ...                     utility=(), exact=True, seconds=0.0, individual_exact=False, household_exact=False)
        >>> e.household_note().split(":")[0]
        'Persons in re-identified households after PRAM'
        >>> e.household_note() == ExpectedRelease(**{**e.__dict__, "household_exact": True}).household_note()
        False
        """
        if self.household is None or self.household_exact:
            return None
        lead = "Persons in re-identified households after PRAM: approximate, "
        if not self.individual_exact:
            return lead + ("because the members' own expected risks are (weights that differ within a released "
                           "cell, or released counts taken as Poisson on a large table; docs/risk.md).")
        return lead + ("because members alike on every key that is not perturbed have dependent risks, and this "
                       "design and file have too many of them to count that exactly within the limits of the "
                       "work: some are counted by pairs, or the members are combined as independent events "
                       "(docs/risk.md).")

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values (private: computed from the original file)."""
        out = {f: getattr(self, f) for f in ("n", "sample_uniques", "sample_uniques_before", "tau1", "tau2",
                                             "tau1_before", "tau2_before", "individual", "individual_before",
                                             "household", "household_before", "exact", "seconds",
                                             "individual_exact", "household_exact")}
        return {"keys": list(self.keys), "perturbed": list(self.perturbed), **out,
                "utility": [u.to_dict() for u in self.utility]}


def _utility(name: str, p: np.ndarray, mats: Sequence[np.ndarray | None], n: int,
             information: bool) -> ExpectedUtility:
    """Standard errors of the shares of a table ``p`` (counts) at n records, and the information kept."""
    from pramkit.matrix import PramMatrix

    total = float(p.sum())
    shares = p / total if total > 0 else p
    try:
        pram, none = moment_variances(p, [None if m is None else PramMatrix(m) for m in mats])
        se = np.sqrt(np.clip(pram, 0.0, None) / n)
    except (MatrixError, DataError):  # singular, or a category the matrix never releases: no unbiased estimate
        none = shares * (1 - shares)
        se = np.full(p.shape, np.nan)
    without = np.sqrt(np.clip(none, 0.0, None) / n)
    kept = math.nan
    h = entropy(shares)
    if information and h > 0:
        m = next(m for m in mats if m is not None)
        kept = mutual_information(shares, m) / h
    frame = pd.DataFrame({"category": np.arange(p.size), "share": shares.ravel(), "standard_error": se.ravel(),
                          "standard_error_without": without.ravel()})
    return ExpectedUtility(name, p.size, float(np.sqrt(np.sum(se ** 2))), float(np.sqrt(np.sum(without ** 2))),
                           kept, frame)


def expected_release(problem: ProblemSet, manifest: Manifest, *,
                     shares: Mapping[str, Sequence[float]] | None = None) -> ExpectedRelease:
    """The expected risk after PRAM and the expected utility of ``manifest``, without applying it.

    Parameters
    ----------
    problem : ProblemSet
        The original file on the keys (read once; the tables of each kind of design are cached in it).
    manifest : Manifest
        A designed release (variables perturbed one by one, within strata, or jointly).
    shares : mapping, optional
        The original shares of perturbed variables that are not keys (in the matrix's order,
        e.g. the design record's ``p``), for their utility; without them those are left out.

    Returns
    -------
    ExpectedRelease

    Raises
    ------
    ParameterError
        A joint or stratified variable reads columns of which only some are keys.
    DataError
        A key value that is not a category of its matrix.

    Examples
    --------
    Randomized response on sex lowers the expected tau2, and the standard error of the sex
    shares grows by the factor of :func:`pramkit.utility.loss.variance_inflation`:

    >>> from pramkit import PramMatrix
    >>> data = pd.DataFrame({"sex": list("mfmfmfmfmf"),
    ...                      "age": ["20", "20", "30", "30", "40", "40", "20", "30", "40", "50"]})
    >>> problem = ProblemSet.of(data, ["sex", "age"], sampling_fraction=0.5)
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.9, 0.9], ["f", "m"])})
    >>> e = expected_release(problem, manifest)
    >>> e.tau2 < e.tau2_before, e.tau1 <= e.tau2, round(e.utility[0].ratio, 4)
    (True, True, 1.25)
    """
    start = time.perf_counter()
    s = problem.structure(manifest)
    mats = [manifest[name].matrix.matrix if name in s.perturbed else None for name in s.names]
    risk = cell_risk(s.fit.fitted, s.fractions.values, mats)
    unique = released_unique_probability(s.counts, mats)
    exact = math.prod(s.counts.shape[a] for a, m in enumerate(mats) if m is not None) <= EXACT_MAX_CELLS
    before = s.counts == 1
    if s.sums is None:
        fraction: float | np.ndarray = s.fractions.overall
    else:  # the released cell's f~ / F~: the ratio of their expectations (exact when the weights are uniform)
        released, weighed = push(s.counts, mats), push(s.sums, mats)
        fraction = np.ones(s.counts.shape)
        np.divide(released, weighed, out=fraction, where=weighed > 0)
        fraction = np.clip(fraction, 1e-300, 1.0)
    kept = expected_kept_risk(s.counts, mats, fraction)
    at = np.maximum(s.cells, 0)
    after = np.where(s.cells >= 0, kept.risk.ravel()[at], np.nan)
    if s.sums is not None and not s.uniform:  # alone in its released cell, F~ is the record's own weight
        counted = s.cells >= 0
        w = np.maximum(problem.weights[counted], 1.0)  # type: ignore[index]
        p_cell = np.broadcast_to(fraction, s.counts.shape).ravel()[s.cells[counted]]
        lone = kept.alone.ravel()[s.cells[counted]]
        after[counted] += lone * (individual_risk(np.ones(len(w)), w).risk - benedetti_franconi(1.0, 1.0 / p_cell))
    household_before, household, household_exact = _households(problem, s, mats, after, fraction, kept.exact)
    n = int(s.counts.sum())
    utility = _utilities(s, mats, manifest, shares, n)
    return ExpectedRelease(
        keys=problem.keys, perturbed=s.perturbed, n=n,
        sample_uniques=float(unique.sum()), sample_uniques_before=float(before.sum()),
        tau1=float((unique * risk.r1).sum()), tau2=float((unique * risk.r2).sum()),
        tau1_before=float(s.before.r1[before].sum()), tau2_before=float(s.before.r2[before].sum()),
        individual=float(np.nansum(after)),
        individual_before=float((s.counts * s.individual).sum()),
        household=household, household_before=household_before, utility=tuple(utility), exact=exact,
        seconds=time.perf_counter() - start, individual_exact=kept.exact and s.uniform,
        household_exact=household_exact and kept.exact and s.uniform)


def _utilities(s: _Structure, mats: Sequence[np.ndarray | None], manifest: Manifest,
               shares: Mapping[str, Sequence[float]] | None, n: int) -> list[ExpectedUtility]:
    """The expected utility of every perturbed variable (those that are not keys with their ``shares``),
    then of the keys' table."""
    utility = []
    for name in s.perturbed:
        axis = s.names.index(name)
        p = s.counts.sum(axis=tuple(a for a in range(s.counts.ndim) if a != axis))
        utility.append(_utility(name, p, [mats[axis]], n, True))
    for v in manifest.variables:
        if v.name not in s.perturbed and shares is not None and v.name in shares:
            p = np.asarray(shares[v.name], dtype=float) * n
            utility.append(_utility(v.name, p, [v.matrix.matrix], n, True))
    if s.perturbed and s.counts.size <= 10 * 1024 * 1024:
        utility.append(_utility("keys", s.counts, mats, n, False))
    return utility


def _households(problem: ProblemSet, s: _Structure, mats: Sequence[np.ndarray | None], after: np.ndarray,
                fraction: float | np.ndarray, formed: bool) -> tuple[float | None, float | None, bool]:
    """The persons in re-identified households before and after PRAM (expected), and whether the latter
    is exact (None, None, True without a household id)."""
    if problem.household is None:
        return None, None, True
    r = np.where(s.cells >= 0, s.individual.ravel()[np.maximum(s.cells, 0)], np.nan)
    before = float(combine_households(r, problem.household).sum())
    if all(m is None for m in mats):  # nothing perturbed: the risks are fixed, their combination exact
        return before, float(combine_households(after, problem.household).sum()), True
    combined = _expected_households(s, mats, after, fraction, problem.household, formed)
    return before, float(combined.risk.sum()), combined.exact


def _expected_households(s: _Structure, mats: Sequence[np.ndarray | None], after: np.ndarray,
                         fraction: float | np.ndarray, members: np.ndarray, formed: bool) -> HouseholdExpectation:
    """Every record's expected household risk (:func:`pramkit.risk.household_pairs.household_expectation`):
    the table laid out as one row per combination of the unperturbed axes, one column per perturbed cell
    (the households' layout is kept in the structure: designs of one kind share it)."""
    axes = [a for a, m in enumerate(mats) if m is not None]
    order = [a for a in range(s.counts.ndim) if a not in axes] + axes
    size = math.prod(s.counts.shape[a] for a in axes)
    rows = np.transpose(s.counts, order).reshape(-1, size)
    p = np.transpose(np.broadcast_to(np.asarray(fraction, dtype=float), s.counts.shape), order).reshape(-1, size)
    if "households" not in s.cache:
        at = np.unravel_index(np.maximum(s.cells, 0), s.counts.shape)
        position = np.ravel_multi_index([at[a] for a in order], [s.counts.shape[a] for a in order])
        s.cache["households"] = household_layout(members, np.where(s.cells >= 0, position // size, -1),
                                                 position % size)
    joint = None
    if formed:
        joint = np.ones((1, 1))
        for a in axes:
            joint = np.kron(joint, np.asarray(mats[a], dtype=float))
    return household_expectation(after, s.cache["households"], rows, joint, p)
