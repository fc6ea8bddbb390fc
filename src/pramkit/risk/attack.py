"""Risk by attack: the exact Bayes ceiling of a PRAM release, and a reconstruction attack on any released file.

**The Bayes ceiling.**  An attacker knows the true values of some columns of a person (the ``known``
quasi-identifiers, released exactly or perturbed), has found the person's released record and knows the
release's matrices (the manifest is public).  The best guess of the true value x of a ``target``
perturbed variable is the argmax of the exact posterior given everything the attacker sees

    P(x | z, e, known) ∝ Σ_h prior(x, h, e, known) · Π_v M_v[true cell of v, released cell z_v]

over **every** perturbed variable v of the released record (independent matrices multiply), the other
perturbed columns h summed over as hidden values of the prior (their released cells in the likelihood: a
noisy copy of each correlated with the target tells about it), and the columns e released exactly that are
neither known nor targets conditioned on like the known ones when the prior covers them (a supplied prior
holding them, whose table fits :data:`MAX_PRIOR_CELLS`).  A known column that is perturbed enters through its
released value, a factor that depends on x only when it is perturbed jointly with a hidden column.  What the
posterior reads is a field of the result (:attr:`BayesCeiling.conditioned_on`, and
:attr:`BayesCeiling.not_conditioned_on`: columns it does not read, which an attack may add).  The prior is the
release's own corrected joint table of the columns involved (public: estimated from the released file and the
manifest by :func:`pramkit.estimate_table`), or one supplied (the original's own table: the true joint law
of the file).  When the prior is the true law, the expected number of correct guesses
``sum_i max_x P(x | z_i, e_i, known_i)`` is the most any attack that reads the columns of
:attr:`BayesCeiling.conditioned_on` and the known ones can get in expectation over the draws of the release
(the Bayes risk); with every released column read (``not_conditioned_on`` empty) it bounds every attack on
the record.  ``scope="target"`` reads the released cells of the variables holding a target or known column
only: the ceiling of a narrower attacker, which an attack reading the record's other perturbed columns beats
(docs/risk.md, the Monte Carlo over keys).  The baseline is the attacker who has the prior, the known columns
and the columns released exactly but not the perturbed cells (``max_x prior(x | known, e)``).  The posterior
odds of two values over their prior odds are at most ``e^epsilon`` of every perturbed variable read whose
cells depend on a column the attacker does not know (:attr:`BayesCeiling.epsilon`: with the whole record,
the record's epsilon, not the target variable's alone): the local guarantee.

**Linkage** (:mod:`pramkit.risk.attack_linkage`): the original's records found in the released file,
exactly (unique records on the known columns and on all columns) and by distance to the closest released
record, against a holdout.

**Reconstruction.**  With no manifest (a file from pramkit or another tool), an attacker holding the
known columns of the original's persons guesses each other feature of a person by its most frequent
value among the released records that agree on the known columns (the nearest ones, fewest
disagreements, when none agrees).  Scored as the share of features recovered, and weighted by rarity
(a value's weight is one over its frequency in the original, normalised), against the baseline that
guesses each feature's most frequent released value; the advantage is the difference.

Private: every figure of :func:`reconstruction_attack`, and the realised figures of
:func:`bayes_ceiling` with an ``original``, come from the original file.  Per-record outputs stay in
the result objects; ``to_dict()`` holds only totals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label, joint_cell
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.risk.attack_linkage import LinkageResult, linkage_attack, shared_codes

#: How :func:`attack` names the prior made from the original's own table.
TRUE_LAW = "original (the true joint law)"
#: Most cells of the prior table (target, known and summed-over columns crossed).
MAX_PRIOR_CELLS = 20_000_000
#: Most (known values, released cells) pairs whose posterior the expectation over the draws computes.
MAX_DRAW_PATTERNS = 200_000
#: What :func:`bayes_ceiling` may condition on: the whole released record (the default), or the released cells
#: of the variables holding the target and known columns only (a narrower attacker: no ceiling of the others).
SCOPES = ("record", "target")


@dataclass(frozen=True, eq=False)
class BayesCeiling:
    """The exact Bayes posterior of a target given the released record and the known columns.

    Parameters
    ----------
    target, known : tuple of str
        The target columns (guessed jointly) and the known columns.
    prior : str
        ``"estimated (<estimator>)"`` (the release's corrected table) or ``"supplied"``.
    records : int
        Records scored (a record with a target, known or released value missing is left out).
    left_out : int
        Records left out.
    epsilon : float
        The epsilon of every perturbed variable the posterior reads whose cells depend on a column the attacker
        does not know (added): the target's and, with ``scope="record"``, the other perturbed columns'.  The
        posterior odds of two target values over their prior odds given :attr:`given_exactly` and the known
        columns are at most ``e^epsilon``.
    expected_correct : float
        ``sum_i max_x P(x | z_i, known_i)``: the expected number of correct guesses of the Bayes attacker.
    baseline_expected : float
        ``sum_i max_x prior(x | known_i, e_i)``: the attacker without the released record's perturbed cells (the
        columns :attr:`given_exactly` read).
    realised_correct, baseline_realised : int or None
        With the original: how many argmax guesses (posterior, prior given the known) are right.
    correct_over_draws, expected_over_draws : float or None
        With the original: over every release the manifest could have drawn from these records (exactly,
        every released cell enumerated), the expected number of right argmax guesses, and the expectation
        of :attr:`expected_correct`; None past :data:`MAX_DRAW_PATTERNS`.
    unsupported : int
        Records whose known values the prior gives probability 0 (their posterior uses a flat prior), or
        whose released cells it does (the likelihood alone), and the :attr:`impossible` ones.
    categories : tuple
        The target's cells, in the order of the columns of :attr:`posterior` (a label, or a tuple of
        labels for several target columns).
    rows : numpy.ndarray
        The position in the released file of each record scored.
    posterior, prior_given_known : numpy.ndarray
        Per record scored, the posterior over the target's cells and the prior given the known columns and
        :attr:`given_exactly` (private with the original: never printed).
    truth : numpy.ndarray or None
        With the original: each scored record's true target cell (position in :attr:`categories`).
    epsilon_given_structure : float or None
        When a variable holding the target shows structure exactly (strata, kept codes): the epsilon among
        records that agree on it (:attr:`pramkit.manifest.PerturbedVariable.epsilon_given_shown`, added),
        which bounds the posterior odds given the released file, where :attr:`epsilon` is infinite.
    impossible : int
        Records (among :attr:`unsupported`) whose released cells the matrices give probability 0 from every
        value of the target and summed-over columns with their known values: a record the manifest cannot
        have released so (another file, other records, wrong known values); their posterior is the prior
        given the known.
    scope : str
        ``"record"`` (the default of :func:`bayes_ceiling`): the posterior reads the person's whole released
        record, every column the manifest perturbs and the columns released exactly that the prior covers;
        ``"target"``: only the released cells of the variables holding a target or known column.
    conditioned_on : tuple of str
        The released file's columns whose released values the posterior reads (beside the known columns'
        true values), in the file's order.
    given_exactly : tuple of str
        Those of :attr:`conditioned_on` released exactly (not perturbed, not known): the prior given the known
        (:attr:`prior_given_known`, the baseline) is given them too.
    not_conditioned_on : tuple of str
        The released file's other columns (neither known nor target) the posterior does not read: the
        ceiling does not bound an attack that reads them.
    """

    target: tuple[str, ...]
    known: tuple[str, ...]
    prior: str
    records: int
    left_out: int
    epsilon: float
    expected_correct: float
    baseline_expected: float
    realised_correct: int | None
    baseline_realised: int | None
    unsupported: int
    correct_over_draws: float | None
    expected_over_draws: float | None
    categories: tuple[Any, ...] = field(repr=False)
    rows: np.ndarray = field(repr=False)
    posterior: np.ndarray = field(repr=False)
    prior_given_known: np.ndarray = field(repr=False)
    truth: np.ndarray | None = field(default=None, repr=False)
    impossible: int = 0
    epsilon_given_structure: float | None = None
    scope: str = "record"
    conditioned_on: tuple[str, ...] = ()
    given_exactly: tuple[str, ...] = ()
    not_conditioned_on: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        """The expected share of correct guesses (the ceiling)."""
        return self.expected_correct / self.records if self.records else math.nan

    @property
    def baseline_share(self) -> float:
        """The expected share of correct guesses without the released record."""
        return self.baseline_expected / self.records if self.records else math.nan

    @property
    def advantage(self) -> float:
        """:attr:`share` less :attr:`baseline_share`: what the released record adds."""
        return self.share - self.baseline_share

    @property
    def max_posterior(self) -> np.ndarray:
        """Per record scored, the largest posterior (the probability the best guess is right)."""
        return self.posterior.max(axis=1)

    @property
    def guess(self) -> np.ndarray:
        """Per record scored, the best guess (position in :attr:`categories`; ties to the first)."""
        return self.posterior.argmax(axis=1)

    def guesses(self) -> list[Any]:
        """Per record scored, the best guess as a label (a tuple of labels for several targets)."""
        return [self.categories[g] for g in self.guess]

    def to_dict(self) -> dict[str, Any]:
        """The totals as JSON values (no per-record figure).

        Examples
        --------
        >>> c = BayesCeiling(("y",), ("a",), "supplied", 4, 0, 1.0, 3.0, 2.0, None, None, 0, None, None,
        ...                  ("p", "q"), np.arange(4), np.full((4, 2), 0.5), np.full((4, 2), 0.5))
        >>> d = c.to_dict()
        >>> d["share"], d["baseline_share"], d["advantage"], d["realised_share"]
        (0.75, 0.5, 0.25, None)
        """
        n = self.records
        return {
            "target": list(self.target), "known": list(self.known), "prior": self.prior, "records": n,
            "left_out": self.left_out, "epsilon": self.epsilon, "epsilon_given_structure": self.epsilon_given_structure,
            "expected_correct": self.expected_correct, "share": self.share,
            "baseline_expected": self.baseline_expected, "baseline_share": self.baseline_share,
            "advantage": self.advantage,
            "realised_correct": self.realised_correct,
            "realised_share": None if self.realised_correct is None or not n else self.realised_correct / n,
            "baseline_realised": self.baseline_realised,
            "correct_over_draws": self.correct_over_draws,
            "expected_over_draws": self.expected_over_draws,
            "unsupported": self.unsupported,
            "impossible": self.impossible,
            "scope": self.scope,
            "conditioned_on": list(self.conditioned_on),
            "given_exactly": list(self.given_exactly),
            "not_conditioned_on": list(self.not_conditioned_on),
        }


@dataclass(frozen=True, eq=False)
class FeatureScore:
    """The reconstruction of one feature: share recovered by the attack and by the baseline."""

    feature: str
    accuracy: float
    baseline: float
    weighted_accuracy: float
    weighted_baseline: float

    @property
    def advantage(self) -> float:
        return self.accuracy - self.baseline

    def to_dict(self) -> dict[str, Any]:
        return {"feature": self.feature, "accuracy": self.accuracy, "baseline": self.baseline,
                "advantage": self.advantage, "weighted_accuracy": self.weighted_accuracy,
                "weighted_baseline": self.weighted_baseline}


@dataclass(frozen=True, eq=False)
class ReconstructionResult:
    """The reconstruction attack on a released file (:func:`reconstruction_attack`).

    Parameters
    ----------
    known, features : tuple of str
        The columns the attacker knows, and the features guessed.
    records, released_rows : int
        Records of the original (attacked) and of the released file.
    matched : int
        Records with at least one released record agreeing on every known column.
    nearest : int
        Records guessed from the nearest released records (none agreed).
    accuracy, baseline : float
        Share of (record, feature) values recovered by the attack and by the baseline.
    weighted_accuracy, weighted_baseline : float
        The same, each value weighted by one over its frequency in the original (normalised).
    per_feature : tuple of FeatureScore
    recovered : numpy.ndarray
        Per record and feature, whether the attack recovered it (private: never printed).
    """

    known: tuple[str, ...]
    features: tuple[str, ...]
    records: int
    released_rows: int
    matched: int
    nearest: int
    accuracy: float
    baseline: float
    weighted_accuracy: float
    weighted_baseline: float
    per_feature: tuple[FeatureScore, ...]
    recovered: np.ndarray = field(repr=False)

    @property
    def advantage(self) -> float:
        """:attr:`accuracy` less :attr:`baseline`."""
        return self.accuracy - self.baseline

    @property
    def weighted_advantage(self) -> float:
        """:attr:`weighted_accuracy` less :attr:`weighted_baseline`."""
        return self.weighted_accuracy - self.weighted_baseline

    def to_dict(self) -> dict[str, Any]:
        """The totals and the per-feature shares as JSON values (no per-record figure)."""
        return {
            "known": list(self.known), "features": list(self.features), "records": self.records,
            "released_rows": self.released_rows, "matched": self.matched, "nearest": self.nearest,
            "accuracy": self.accuracy, "baseline": self.baseline, "advantage": self.advantage,
            "weighted_accuracy": self.weighted_accuracy, "weighted_baseline": self.weighted_baseline,
            "weighted_advantage": self.weighted_advantage,
            "per_feature": [f.to_dict() for f in self.per_feature],
        }


@dataclass(frozen=True, eq=False)
class AttackResult:
    """What ``pramkit attack`` prints: the reconstruction, and with a manifest the Bayes ceiling per target.

    Parameters
    ----------
    reconstruction : ReconstructionResult
    ceilings : list of BayesCeiling
        Two per perturbed target, the true law's then the estimated prior's (empty without a manifest).
    notes : list of str
        What was left out and why.
    linkage : LinkageResult or None
        The original's records found in the released file, exactly and by distance
        (:func:`pramkit.risk.attack_linkage.linkage_attack`); None when not asked for.
    """

    reconstruction: ReconstructionResult
    ceilings: list[BayesCeiling]
    notes: list[str]
    linkage: LinkageResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON values (totals only)."""
        return {"reconstruction": self.reconstruction.to_dict(), "ceilings": [c.to_dict() for c in self.ceilings],
                "notes": list(self.notes), "linkage": None if self.linkage is None else self.linkage.to_dict()}


# --- The Bayes ceiling ------------------------------------------------------------------------------------


def _names(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value)
    if len(set(names)) != len(names):
        raise ParameterError(f"{what} names a column twice: {', '.join(names)}")
    return names


def _involved(manifest: Manifest, columns: Sequence[str]) -> list[PerturbedVariable]:
    """The perturbed variables that read one of ``columns``, in the manifest's order."""
    wanted = set(columns)
    return [v for v in manifest.variables if wanted & set(v.read_columns)]


def _perturbed_columns(manifest: Manifest) -> set[str]:
    return {c for v in manifest.variables for c in v.columns}


def _check_ceiling(released: pd.DataFrame, manifest: Manifest, known: tuple[str, ...], target: tuple[str, ...],
                   original: pd.DataFrame | None) -> None:
    if not target:
        raise ParameterError("give at least one target column")
    both = sorted(set(known) & set(target))
    if both:
        raise ParameterError(f"a target cannot be known too: {', '.join(both)}")
    missing = [c for c in (*known, *target) if c not in released.columns]
    if missing:
        raise ParameterError(f"the released file has no column {', '.join(map(repr, missing))}")
    perturbed = _perturbed_columns(manifest)
    plain = [t for t in target if t not in perturbed]
    if plain:
        raise ParameterError(f"the manifest does not perturb the target {', '.join(map(repr, plain))}: it is "
                             f"released exactly")
    secret = [k for k in known if k in perturbed]
    if secret and original is None:
        raise ParameterError(f"the known column {', '.join(map(repr, secret))} is perturbed: give the original "
                             f"file for its true values")
    if original is not None:
        if len(original) != len(released):
            raise DataError(f"the original has {len(original):,} rows and the released file {len(released):,}: "
                            f"they must be the same records in the same order")
        absent = [c for c in (*known, *target) if c not in original.columns]
        if absent:
            raise ParameterError(f"the original has no column {', '.join(map(repr, absent))}")


def _axis_codes(values: Any, categories: Sequence[Label], column: str) -> np.ndarray:
    """Codes of ``values`` in ``categories`` (-1: missing or not a category)."""
    from pramkit.codebook import canonical

    index: dict[Any, int] = {}
    for i, c in enumerate(categories):
        index.setdefault(canonical(c), i)
    local, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)  # each value once
    lut = np.array([index.get(canonical(u), -1) for u in uniques] + [-1], dtype=np.intp)
    return lut[local]  # a missing value (-1) reads the last entry


def _released_codes(released: pd.DataFrame, variable: PerturbedVariable) -> np.ndarray:
    """Each record's released cell of ``variable`` (position in its matrix; -1 when missing or not listed)."""
    cats = variable.matrix.categories
    if len(variable.read_columns) == 1:
        return _axis_codes(released[variable.read_columns[0]], cats, variable.read_columns[0])
    from pramkit.codebook import canonical

    index = {tuple(canonical(x) for x in joint_cell(c)): i for i, c in enumerate(cats)}
    cols = [released[c].astype(object).tolist() for c in variable.read_columns]
    out = []
    for values in zip(*cols):
        key = tuple(None if pd.isna(v) else canonical(v) for v in values)
        out.append(index.get(key, -1))
    return np.array(out, dtype=np.intp)


def _factor(variable: PerturbedVariable, axes: list[str], categories: Sequence[Sequence[Label]]) -> np.ndarray:
    """The matrix of ``variable`` as an array over its columns' axes (in ``axes`` order) and its released cells:
    ``F[i_1, ..., i_r, z] = M[cell (i_1, ..., i_r), z]`` (0 for a cell the matrix does not list)."""
    from pramkit.codebook import canonical

    m = variable.matrix.matrix
    own = [a for a in axes if a in variable.read_columns]
    order = [variable.read_columns.index(a) for a in own]
    cats = variable.matrix.categories
    index: dict[Any, int]
    if len(variable.read_columns) == 1:
        index = {canonical(c): i for i, c in enumerate(cats)}
    else:
        index = {tuple(canonical(joint_cell(c)[j]) for j in order): i for i, c in enumerate(cats)}
    sizes = [len(categories[axes.index(a)]) for a in own]
    out = np.zeros((*sizes, m.shape[1]))
    for idx in np.ndindex(*sizes):
        labels = tuple(canonical(categories[axes.index(a)][i]) for a, i in zip(own, idx))
        row = index.get(labels[0] if len(variable.read_columns) == 1 else labels)
        if row is not None:
            out[idx] = m[row]
    return out


def _units(axes: list[str], variables: Sequence[PerturbedVariable]) -> list[tuple[str, tuple[str, ...]]]:
    """What the estimated prior tabulates for ``axes``: each perturbed variable once, by its name (its
    categories are its cells, which hold its strata and its columns), then each other axis by its column;
    each with the columns it gives."""
    units = [(v.name, v.read_columns) for v in variables]
    covered = {c for _, cols in units for c in cols}
    return units + [(a, (a,)) for a in axes if a not in covered]


def _unfold(table: np.ndarray, units: list[tuple[str, tuple[str, ...]]], unit_cats: Sequence[Sequence[Any]],
            axes: list[str]) -> tuple[np.ndarray, list[tuple[Label, ...]]]:
    """A table over ``units`` (a variable's axis is its cells) as a table over the columns ``axes``: each cell's
    count goes to the columns' values it holds; where two variables share a column (a stratum) only the cells
    that agree on it count (the others hold 0: no record lies in two strata)."""
    from pramkit.codebook import canonical

    levels: dict[str, dict[Any, Label]] = {a: {} for a in axes}
    values: list[list[tuple[Any, ...]]] = []
    for (_, cols), cats in zip(units, unit_cats):
        cells = [joint_cell(c) if len(cols) > 1 else (c,) for c in cats]
        values.append(cells)
        for cell in cells:
            for col, x in zip(cols, cell):
                levels[col].setdefault(canonical(x), x)
    cats_out = [tuple(levels[a].values()) for a in axes]
    shape = tuple(len(c) for c in cats_out)
    _check_size(shape)
    _check_size(table.shape)
    codes: dict[str, list[np.ndarray]] = {a: [] for a in axes}
    for u, ((_, cols), cells) in enumerate(zip(units, values)):
        position = {a: {k: i for i, k in enumerate(levels[a])} for a in cols}
        view = [1] * len(units)
        view[u] = len(cells)
        for j, col in enumerate(cols):
            lut = np.array([position[col][canonical(cell[j])] for cell in cells], dtype=np.intp)
            codes[col].append(np.broadcast_to(lut.reshape(view), table.shape))
    agree = np.ones(table.shape, dtype=bool)
    for a in axes:
        for other in codes[a][1:]:
            agree &= other == codes[a][0]
    flat = np.ravel_multi_index(tuple(codes[a][0][agree] for a in axes), shape)
    counts = np.bincount(flat, weights=table[agree], minlength=math.prod(shape)).reshape(shape)
    return counts, cats_out


def _estimated_prior(released: pd.DataFrame, manifest: Manifest, axes: list[str],
                     variables: Sequence[PerturbedVariable], estimator: str) -> tuple[np.ndarray,
                                                                                    list[tuple[Label, ...]], str]:
    """The release's corrected table over ``axes`` (negative counts set to 0).  A variable over several
    columns is tabulated by its cells, as :func:`pramkit.estimate_table` takes it (a stratum or a jointly
    perturbed column is no axis of its own there), then unfolded over its columns."""
    from pramkit.estimate.table import estimate_table

    if all(len(v.read_columns) == 1 for v in variables):
        est = estimate_table(released, manifest, axes, estimator=estimator)
        counts = np.clip(np.asarray(est.table.counts, dtype=float), 0.0, None)
        return counts, [tuple(c) for c in est.categories], f"estimated ({est.estimator})"
    units = _units(axes, variables)
    est = estimate_table(released, manifest, [name for name, _ in units], estimator=estimator)
    table = np.clip(np.asarray(est.table.counts, dtype=float), 0.0, None)
    counts, cats = _unfold(table, units, est.categories, axes)
    return counts, cats, f"estimated ({est.estimator})"


def _prior_table(released: pd.DataFrame, manifest: Manifest, axes: list[str], prior: Any, estimator: str,
                 variables: Sequence[PerturbedVariable] = ()) -> tuple[np.ndarray, list[tuple[Label, ...]], str]:
    """The prior counts over ``axes`` and each axis's categories."""
    if prior is None:
        return _estimated_prior(released, manifest, axes, variables, estimator)
    if isinstance(prior, pd.DataFrame):
        from pramkit.codebook import categories_of

        absent = [a for a in axes if a not in prior.columns]
        if absent:
            raise ParameterError(f"the prior has no column {', '.join(map(repr, absent))}: it must hold every column read")
        cats: list[tuple[Label, ...]] = []
        for a in axes:
            var = next((v for v in manifest.variables if v.read_columns == (a,)), None)
            found: list[Any] = categories_of(pd.concat([prior[a], released[a]], ignore_index=True).astype(object),
                                             column=a)
            if var is not None:
                own: list[Any] = [c for c in var.matrix.categories if c is not None]
                keys = {_key(c) for c in own}
                own += [c for c in found if _key(c) not in keys]
                found = own
            cats.append(tuple(found))
        _check_size([len(c) for c in cats])
        codes = np.stack([_axis_codes(prior[a], c, a) for a, c in zip(axes, cats)])
        whole = (codes >= 0).all(axis=0)
        shape = tuple(len(c) for c in cats)
        flat = np.ravel_multi_index(codes[:, whole], shape)
        counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(float)
        return counts, cats, "supplied"
    raise ParameterError(f"the prior must be None (estimated from the release) or a DataFrame of records, "
                         f"not {type(prior).__name__}")


def _key(label: Any) -> Any:
    from pramkit.codebook import canonical

    return canonical(label)


def _check_size(sizes: Sequence[int]) -> None:
    cells = math.prod(sizes)
    if cells > MAX_PRIOR_CELLS:
        raise ParameterError(f"the prior table would have {cells:,} cells (more than {MAX_PRIOR_CELLS:,}): "
                             f"attack fewer columns at once")


def bayes_ceiling(
    released: pd.DataFrame,
    manifest: Manifest,
    known: str | Sequence[str],
    target: str | Sequence[str],
    prior: pd.DataFrame | None = None,
    *,
    original: pd.DataFrame | None = None,
    estimator: str = "mle",
    prior_label: str | None = None,
    scope: str = "record",
) -> BayesCeiling:
    """The exact Bayes posterior of the target's true value for every released record, and its ceiling.

    Parameters
    ----------
    released : pandas.DataFrame
        The released file (its records in their order).
    manifest : Manifest
        The release's manifest (public).
    known : str or sequence of str
        The columns whose true values the attacker knows (may be empty).
    target : str or sequence of str
        The perturbed column(s) whose true value is guessed (jointly, for several).
    prior : pandas.DataFrame, optional
        Records whose joint table of the columns read is the prior (the original itself: the true joint
        law); with ``scope="record"`` it holds every perturbed column of the released file.  Default: the release's corrected table (:func:`pramkit.estimate_table`
        with ``estimator``, negative counts set to 0).
    original : pandas.DataFrame, optional
        The original records, row for row: the true values of perturbed known columns, and the realised
        number of correct guesses.
    estimator : str, default "mle"
        The estimator of the default prior (one giving counts in ``[0, n]`` is best).
    prior_label : str, optional
        How the result names a supplied prior (default ``"supplied"``).
    scope : {"record", "target"}, default "record"
        ``"record"``: the posterior reads the person's whole released record, every column the manifest perturbs
        (the other perturbed columns summed over as hidden values of the prior, which must then hold them) and
        the columns released exactly the prior covers; its expected count bounds every attack reading what
        :attr:`BayesCeiling.conditioned_on` names.  ``"target"``: only the released cells of the variables
        holding a target or known column; no bound on an attack that reads the record's other columns
        (:attr:`BayesCeiling.not_conditioned_on`).

    Returns
    -------
    BayesCeiling

    Raises
    ------
    ParameterError
        No target, a target that is known too or not perturbed, a column the files or the prior lack, a
        perturbed known column without the original, a prior of another type, too large a table, another
        scope.
    DataError
        An original with another number of rows.

    Examples
    --------
    A yes/no answer kept with probability 3/4, by an unperturbed sex.  Among women the answer is mostly
    yes: released "no", a woman's true answer is still more likely yes.

    >>> from pramkit import PramMatrix
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> true = pd.DataFrame({"sex": ["f"] * 4 + ["m"] * 4, "answer": ["yes"] * 4 + ["yes", "no", "no", "no"]})
    >>> released = true.assign(answer=["no", "yes", "yes", "yes", "yes", "no", "no", "no"])
    >>> c = bayes_ceiling(released, m, "sex", "answer", prior=true, original=true)
    >>> c.categories, c.posterior[0].round(4).tolist(), c.posterior[5].round(4).tolist()
    (('yes', 'no'), [1.0, 0.0], [0.1, 0.9])
    >>> round(c.expected_correct, 4), c.baseline_expected, c.realised_correct
    (7.2, 7.0, 8)
    """
    known, target = _names(known, "known"), _names(target, "target")
    if scope not in SCOPES:
        raise ParameterError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    _check_ceiling(released, manifest, known, target, original)
    variables = _scope_variables(released, manifest, known, target, scope)
    extra = [c for v in variables for c in v.read_columns if c not in known and c not in target]
    hidden = [*target, *dict.fromkeys(extra)]
    read = {c for v in variables for c in v.read_columns}
    rest = [c for c in released.columns if c not in read and c not in known and c not in target]
    exact = _exact_columns(released, manifest, rest, prior) if scope == "record" else []
    counts, cats, prior_name, exact = _record_prior(released, manifest, hidden, known, exact, prior, estimator,
                                                    variables)
    given = (*known, *exact)
    axes = [*hidden, *given]
    known_codes = _given_codes(released, original, given, exact, axes, cats)
    z_codes = np.stack([_released_codes(released, v) for v in variables])
    truth = None
    if original is not None:
        truth_axes = np.stack([_axis_codes(original[t], cats[axes.index(t)], t) for t in target])
    keep = np.asarray((known_codes >= 0).all(axis=0) & (z_codes >= 0).all(axis=0), dtype=bool)
    if original is not None:
        keep &= (truth_axes >= 0).all(axis=0)
    rows = np.flatnonzero(keep)
    patterns, inverse = np.unique(np.vstack([known_codes, z_codes])[:, keep].T, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    factors = [_factor(v, axes, cats) for v in variables]
    t_shape = tuple(len(cats[i]) for i in range(len(target)))
    post, base, flat, impossible = _posteriors(counts, axes, hidden, given, variables, factors, patterns,
                                               len(target))
    posterior, prior_given = post[inverse], base[inverse]
    if original is not None:
        truth = np.ravel_multi_index(truth_axes[:, keep], t_shape) if len(target) > 1 else truth_axes[0, keep]
    categories = _target_cells(cats, t_shape, len(target))
    epsilon, structured = _moving_epsilon(variables, hidden)
    realised, base_realised = _realised(posterior, prior_given, truth)
    draws = (None, None) if original is None else _over_draws(
        counts, axes, hidden, given, variables, factors, cats, original, known_codes[:, keep], keep, len(target))
    conditioned = tuple(c for c in released.columns if (c in read or c in exact) and c not in known)
    return BayesCeiling(
        target=target, known=known, prior=prior_label or prior_name, records=int(keep.sum()), left_out=int((~keep).sum()),
        epsilon=epsilon, expected_correct=float(posterior.max(axis=1).sum()),
        baseline_expected=float(prior_given.max(axis=1).sum()), realised_correct=realised,
        baseline_realised=base_realised, unsupported=int((flat | impossible)[inverse].sum()),
        correct_over_draws=draws[0], expected_over_draws=draws[1], categories=categories, rows=rows,
        posterior=posterior, prior_given_known=prior_given, truth=truth, impossible=int(impossible[inverse].sum()),
        epsilon_given_structure=structured, scope=scope,
        conditioned_on=conditioned,
        given_exactly=tuple(exact), not_conditioned_on=tuple(c for c in rest if c not in exact))


def _realised(posterior: np.ndarray, prior_given: np.ndarray, truth: np.ndarray | None) -> tuple[int | None,
                                                                                                 int | None]:
    """How many argmax guesses of the posterior and of the prior given the known are right (None without truth)."""
    if truth is None:
        return None, None
    return int((posterior.argmax(axis=1) == truth).sum()), int((prior_given.argmax(axis=1) == truth).sum())


def _given_codes(released: pd.DataFrame, original: pd.DataFrame | None, given: Sequence[str], exact: list[str],
                 axes: list[str], cats: list[tuple[Label, ...]]) -> np.ndarray:
    """The codes of the columns given (known: their true values from the original when given; released exactly:
    their released values), one row per column."""
    if not given:
        return np.zeros((0, len(released)), dtype=np.intp)
    source = released if original is None else original
    return np.stack([_axis_codes((released if k in exact else source)[k], cats[axes.index(k)], k) for k in given])


def _record_prior(released: pd.DataFrame, manifest: Manifest, hidden: list[str], known: tuple[str, ...],
                  exact: list[str], prior: Any, estimator: str, variables: Sequence[PerturbedVariable]
                  ) -> tuple[np.ndarray, list[tuple[Label, ...]], str, list[str]]:
    """The prior table over the hidden, known and exact columns, and the exact columns it holds: none when the
    table with them would be too large (said in :attr:`BayesCeiling.not_conditioned_on`)."""
    try:
        return (*_prior_table(released, manifest, [*hidden, *known, *exact], prior, estimator, variables), exact)
    except ParameterError:
        if not exact:
            raise
    return (*_prior_table(released, manifest, [*hidden, *known], prior, estimator, variables), [])


def _target_cells(cats: list[tuple[Label, ...]], t_shape: tuple[int, ...], targets: int) -> tuple[Any, ...]:
    """The target's cells in the posterior's order: a label, or a tuple of labels for several targets."""
    return tuple(tuple(cats[a][i] for a, i in enumerate(idx)) if targets > 1 else cats[0][idx[0]]
                 for idx in np.ndindex(*t_shape))


def _moving_epsilon(variables: Sequence[PerturbedVariable], hidden: list[str]) -> tuple[float, float | None]:
    """The epsilon (added) of the variables read whose cells depend on a hidden column, and given the structure
    when one of them shows some (None otherwise): what bounds the posterior odds."""
    moving = [v for v in variables if set(v.read_columns) & set(hidden)]
    structured = any(v.is_structured for v in moving)
    return (float(sum(v.epsilon for v in moving)),
            float(sum(v.epsilon_given_shown for v in moving)) if structured else None)


def _exact_columns(released: pd.DataFrame, manifest: Manifest, rest: list[str], prior: Any) -> list[str]:
    """The columns of ``rest`` released exactly that the posterior conditions on: those a supplied prior holds,
    without a missing value (the estimated prior does not cover them; a column with a missing value would leave
    its records out).  The others are said in :attr:`BayesCeiling.not_conditioned_on`."""
    if not isinstance(prior, pd.DataFrame):
        return []
    perturbed = _perturbed_columns(manifest)
    exact = [c for c in rest if c not in perturbed]
    if not all(c in prior.columns for c in exact):
        return []
    return [c for c in exact if not released[c].isna().any() and not prior[c].isna().any()]


def _scope_variables(released: pd.DataFrame, manifest: Manifest, known: tuple[str, ...], target: tuple[str, ...],
                     scope: str) -> list[PerturbedVariable]:
    """The perturbed variables whose released cells the posterior reads: those holding a target or known
    column, and with ``scope="record"`` every other one whose columns the released file holds."""
    involved = _involved(manifest, (*known, *target))
    if scope == "target":
        return involved
    columns = set(released.columns)
    return [v for v in manifest.variables if any(v is u for u in involved) or set(v.read_columns) <= columns]


def _posteriors(counts: np.ndarray, axes: list[str], hidden: list[str], known: tuple[str, ...],
                variables: list[PerturbedVariable], factors: list[np.ndarray], patterns: np.ndarray,
                targets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct pattern (known codes, then released cells): the posterior and the prior given the known
    over the target's cells (flattened), whether the prior gave the known values (or the released cells)
    probability 0, and whether the matrices give the released cells probability 0 from every value of the
    hidden columns with these known values (an impossible pattern: its posterior is the prior given the
    known, never 0 / 0).

    The patterns are grouped by their known values: each group's posteriors are computed at once over the
    cells of the hidden columns the prior gives weight (the likelihood of every pattern of the group from
    every such cell, a product of the variables' matrices); a pattern none of them can give, or a group whose
    known values the prior does not hold, goes through :func:`_pattern_posterior`, over every hidden cell."""
    nk, h = len(known), len(hidden)
    hshape = counts.shape[:h]
    t_size = math.prod(hshape[:targets])
    n = len(patterns)
    post, base = np.empty((n, t_size)), np.empty((n, t_size))
    flat, impossible = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if n == 0:
        return post, base, flat, impossible
    if nk:
        ks, group = np.unique(patterns[:, :nk], axis=0, return_inverse=True)
        group = np.asarray(group).reshape(-1)
    else:
        ks, group = np.zeros((1, 0), dtype=np.intp), np.zeros(n, dtype=np.intp)
    other = tuple(range(targets, h))
    for g, k in enumerate(ks):
        members = np.flatnonzero(group == g)
        prior = counts[(slice(None),) * h + tuple(k)]
        slow = members
        if prior.sum() > 0:
            pm = prior.sum(axis=other) if other else prior
            base[members] = (pm / pm.sum()).reshape(-1)
            ok = _group_posteriors(prior, axes, hidden, known, variables, factors, patterns[members], k, targets,
                                   post, members)
            slow = members[~ok]
        for p in slow:
            post[p], base[p], flat[p], impossible[p] = _pattern_posterior(
                counts, axes, hidden, known, variables, factors, patterns[p], targets)
    return post, base, flat, impossible


#: Most (candidate cell, pattern) likelihoods held at once by :func:`_group_posteriors`.
_CHUNK_CELLS = 4_000_000


def _group_posteriors(prior: np.ndarray, axes: list[str], hidden: list[str], known: tuple[str, ...],
                      variables: list[PerturbedVariable], factors: list[np.ndarray], patterns: np.ndarray,
                      k: np.ndarray, targets: int, post: np.ndarray, members: np.ndarray) -> np.ndarray:
    """The posteriors of the patterns of one group of known values ``k`` (written into ``post`` at
    ``members``), over the hidden cells the prior gives weight; whether each was computed (False: no such cell
    gives its released cells)."""
    nk = len(known)
    hshape = prior.shape
    cells = np.flatnonzero(prior.reshape(-1) > 0)  # in C order: the target's axes lead, so its cell is sorted
    weight = prior.reshape(-1)[cells]
    codes = np.unravel_index(cells, hshape)
    t_of = np.ravel_multi_index(codes[:targets], hshape[:targets])
    starts = np.flatnonzero(np.r_[True, t_of[1:] != t_of[:-1]])
    gathered = []
    for v, f in zip(variables, factors):
        own = [a for a in axes if a in v.read_columns]
        g = f[tuple(k[known.index(a)] if a in known else slice(None) for a in own)]
        free = [a for a in own if a not in known]
        gathered.append(g[tuple(codes[hidden.index(a)] for a in free)] if free
                        else np.broadcast_to(g, (len(cells), g.shape[-1])))
    done = np.zeros(len(members), dtype=bool)
    step = max(1, _CHUNK_CELLS // max(len(cells), 1))
    for a in range(0, len(members), step):
        z = patterns[a:a + step, nk:]
        like = np.repeat(weight[:, None], len(z), axis=1)
        for col, g in enumerate(gathered):
            like *= g[:, z[:, col]]
        total = like.sum(axis=0)
        ok = total > 0
        marg = np.add.reduceat(like, starts, axis=0)
        out = np.zeros((math.prod(hshape[:targets]), len(z)))
        out[t_of[starts]] = marg
        with np.errstate(invalid="ignore", divide="ignore"):
            values = (out / total).T
        post[members[a:a + step][ok]] = values[ok]
        done[a:a + step] = ok
    return done


def _pattern_posterior(counts: np.ndarray, axes: list[str], hidden: list[str], known: tuple[str, ...],
                       variables: list[PerturbedVariable], factors: list[np.ndarray], pattern: np.ndarray,
                       targets: int) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """One pattern over every hidden cell: the posterior, the prior given the known, whether the prior gave
    the known values or the released cells probability 0 (flat prior, or the likelihood alone), and whether
    the pattern is impossible (its posterior is then the prior given the known)."""
    nk, h = len(known), len(hidden)
    other = tuple(range(targets, h))
    k, z = pattern[:nk], pattern[nk:]
    prior = counts[(slice(None),) * h + tuple(k)]
    flat = False
    if prior.sum() <= 0:
        flat = True
        prior = np.ones_like(prior)
    pm = prior.sum(axis=other) if other else prior
    base = (pm / pm.sum()).reshape(-1)
    like = np.ones(prior.shape)
    for v, f, zv in zip(variables, factors, z):
        like = like * _broadcast(f[..., zv], v, axes, hidden, known, k)
    if not like.sum() > 0:  # no true value gives these released cells: nothing to divide
        return base, base, flat, True
    joint = prior * like
    total = joint.sum()
    if total <= 0:  # the released cell is impossible under the prior: the likelihood alone
        flat = True
        joint = like
        total = joint.sum()
    marg = joint.sum(axis=other) if other else joint
    return (marg / total).reshape(-1), base, flat, False


def _over_draws(counts: np.ndarray, axes: list[str], hidden: list[str], known: tuple[str, ...],
                variables: list[PerturbedVariable], factors: list[np.ndarray], cats: list[tuple[Label, ...]],
                original: pd.DataFrame, known_codes: np.ndarray, keep: np.ndarray,
                targets: int) -> tuple[float | None, float | None]:
    """Over every release of the kept records (each released cell of the variables holding a hidden column
    enumerated with its probability given the records' true values): the expected number of right argmax
    guesses and the expectation of the sum of the largest posteriors.  The variables of known columns alone
    are left out: their factor does not depend on the target, so it cancels."""
    if any(h not in original.columns for h in hidden):
        return None, None
    relevant = [i for i, v in enumerate(variables) if set(v.read_columns) - set(known)]
    sizes = [factors[i].shape[-1] for i in relevant]
    true_hidden = np.stack([_axis_codes(original[h], cats[axes.index(h)], h) for h in hidden])[:, keep]
    if (true_hidden < 0).any():
        return None, None
    ks, k_inv = np.unique(known_codes.T, axis=0, return_inverse=True)
    k_inv = np.asarray(k_inv).reshape(-1)
    z_count = math.prod(sizes)
    if len(ks) * z_count > MAX_DRAW_PATTERNS:
        return None, None
    grid = np.array(list(np.ndindex(*sizes)), dtype=np.intp).reshape(z_count, len(sizes))
    t_shape = tuple(len(cats[i]) for i in range(targets))
    truth = np.ravel_multi_index(tuple(true_hidden[:targets]), t_shape)
    records, firsts, r_inv = np.unique(np.vstack([k_inv, true_hidden]).T, axis=0, return_index=True,
                                       return_inverse=True)
    r_inv = np.asarray(r_inv).reshape(-1)
    weight = np.bincount(r_inv)
    values = dict(zip(known, known_codes)) if len(known) else {}

    def likelihood(j: int) -> np.ndarray:
        """The probability of each released cell of the grid given the true values of the records ``j``."""
        row, first = records[j], firsts[j]
        true = {**{h: row[1 + a] for a, h in enumerate(hidden)}, **{k: int(values[k][first]) for k in known}}
        like = np.ones(z_count)
        for col, i in enumerate(relevant):
            own = [a for a in axes if a in variables[i].read_columns]
            like = like * factors[i][tuple(true[a] for a in own)][grid[:, col]]
        return like

    reach = np.zeros((len(ks), z_count), dtype=bool)  # released cells some record of the known values can get
    for j, row in enumerate(records):
        reach[row[0]] |= likelihood(j) > 0
    which = np.flatnonzero(reach.reshape(-1))
    patterns = np.hstack([ks[which // z_count], grid[which % z_count]])
    post = np.zeros((len(ks) * z_count, math.prod(t_shape)))  # a cell no record can get is weighted 0 below
    post[which] = _posteriors(counts, axes, hidden, known, [variables[i] for i in relevant],
                              [factors[i] for i in relevant], patterns, targets)[0]
    post = post.reshape(len(ks), z_count, -1)
    correct = expected = 0.0
    for j, row in enumerate(records):
        like = likelihood(j)
        p = post[row[0]]
        correct += weight[j] * float(like @ (p.argmax(axis=1) == truth[firsts[j]]))
        expected += weight[j] * float(like @ p.max(axis=1))
    return float(correct), float(expected)


def _broadcast(f: np.ndarray, variable: PerturbedVariable, axes: list[str], hidden: list[str],
               known: tuple[str, ...], k: np.ndarray) -> np.ndarray:
    """A factor over the variable's axes (in ``axes`` order), its known axes fixed at ``k``, shaped to broadcast
    over the hidden axes."""
    own = [a for a in axes if a in variable.read_columns]
    index = tuple(k[known.index(a)] if a in known else slice(None) for a in own)
    g = f[index]
    free = [a for a in own if a not in known]  # in axes order, which is hidden order
    shape = [1] * len(hidden)
    for a in free:
        shape[hidden.index(a)] = g.shape[free.index(a)]
    return g.reshape(shape)


# --- The reconstruction attack ----------------------------------------------------------------------------


def _check_reconstruction(original: pd.DataFrame, released: pd.DataFrame, known: tuple[str, ...],
                          features: tuple[str, ...]) -> None:
    if sorted(map(str, original.columns)) != sorted(map(str, released.columns)):
        only_o = sorted(set(original.columns) - set(released.columns))
        only_r = sorted(set(released.columns) - set(original.columns))
        raise ParameterError("the released file's columns differ from the original's"
                             + (f"; only in the original: {', '.join(only_o)}" if only_o else "")
                             + (f"; only in the released file: {', '.join(only_r)}" if only_r else ""))
    absent = [k for k in known if k not in original.columns]
    if absent:
        raise ParameterError(f"no known column {', '.join(map(repr, absent))} in the files")
    both = sorted(set(known) & set(features))
    if both:
        raise ParameterError(f"a target cannot be known too: {', '.join(both)}")
    unknown = [f for f in features if f not in original.columns]
    if unknown:
        raise ParameterError(f"no target column {', '.join(map(repr, unknown))} in the files")
    if not features:
        raise ParameterError("nothing to reconstruct: every column is known")
    if len(original) == 0 or len(released) == 0:
        raise DataError("the original and the released file need records")


def _shared_codes(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of two columns in one codebook (their values as text; a missing value is a value of its own;
    numbered in the order values first appear, ``a`` then ``b``: ties go to the first)."""
    ca, cb = shared_codes(["v"], pd.DataFrame({"v": a.to_numpy()}), pd.DataFrame({"v": b.to_numpy()}))
    return ca[:, 0].astype(np.intp), cb[:, 0].astype(np.intp)


def _modes(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """The most frequent value per group (ties: the smallest code); -1 for an empty group."""
    out = np.full(n_groups, -1, dtype=np.intp)
    if len(groups) == 0:
        return out
    pairs, counts = np.unique(np.stack([groups, values]), axis=1, return_counts=True)
    order = np.lexsort((pairs[1], -counts, pairs[0]))
    g = pairs[0][order]
    first = np.r_[True, g[1:] != g[:-1]]
    out[g[first]] = pairs[1][order][first]
    return out


def reconstruction_attack(
    original: pd.DataFrame,
    released: pd.DataFrame,
    known: str | Sequence[str],
    target: str | Sequence[str] | None = None,
) -> ReconstructionResult:
    """Guess every other feature of the original's records from the released records that share their known values.

    Parameters
    ----------
    original : pandas.DataFrame
        The original records (the persons attacked; private).
    released : pandas.DataFrame
        The released file (by any method), with the original's columns.
    known : str or sequence of str
        The columns the attacker knows of each person.
    target : str or sequence of str, optional
        The features guessed (default: every column not known).

    Returns
    -------
    ReconstructionResult

    Raises
    ------
    ParameterError
        Files with other columns, a known or target column they lack, a target that is known too.
    DataError
        A file without records.

    Examples
    --------
    >>> o = pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "a", "b", "c"]})
    >>> r = reconstruction_attack(o, o, "age")
    >>> r.accuracy, r.baseline, r.matched, r.recovered[:, 0].tolist()
    (0.75, 0.5, 4, [True, True, True, False])
    """
    known = _names(known, "known")
    features = tuple(c for c in original.columns if c not in known) if target is None else _names(target, "target")
    _check_reconstruction(original, released, known, features)
    n, m = len(original), len(released)
    ko, kr = zip(*(_shared_codes(original[k], released[k]) for k in known)) if known else ((), ())
    group_of, nearest_of, matched, nearest = _released_groups(np.array(ko).reshape(len(known), n),
                                                              np.array(kr).reshape(len(known), m))
    recovered = np.zeros((n, len(features)), dtype=bool)
    base_hit = np.zeros((n, len(features)), dtype=bool)
    weights = np.zeros((n, len(features)))
    scores = []
    for j, f in enumerate(features):
        fo, fr = _shared_codes(original[f], released[f])
        n_groups = int(group_of.max(initial=-1)) + 1 if len(group_of) else 0
        modes = _modes(group_of, fr, max(n_groups, 1))
        guess = _guess(modes, nearest_of, group_of, fr, n)
        recovered[:, j] = guess == fo
        base_hit[:, j] = fo == np.bincount(fr).argmax()
        freq = np.bincount(fo)
        weights[:, j] = 1.0 / freq[fo]
        w = weights[:, j] / weights[:, j].sum()
        scores.append(FeatureScore(f, float(recovered[:, j].mean()), float(base_hit[:, j].mean()),
                                   float((w * recovered[:, j]).sum()), float((w * base_hit[:, j]).sum())))
    w = weights / weights.sum()
    return ReconstructionResult(
        known=known, features=features, records=n, released_rows=m, matched=matched, nearest=nearest,
        accuracy=float(recovered.mean()), baseline=float(base_hit.mean()),
        weighted_accuracy=float((w * recovered).sum()), weighted_baseline=float((w * base_hit).sum()),
        per_feature=tuple(scores), recovered=recovered)


def _released_groups(ko: np.ndarray, kr: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], int, int]:
    """The released records' groups of known values (a code per released record), and per original record
    the groups it is guessed from: its own, or the nearest ones (fewest disagreements)."""
    n, m = ko.shape[1], kr.shape[1]
    if ko.shape[0] == 0:  # nothing known: every record is guessed from the whole file
        return np.zeros(m, dtype=np.intp), [np.zeros(1, dtype=np.intp)] * n, n, 0
    combos, group_of = np.unique(kr.T, axis=0, return_inverse=True)
    group_of = np.asarray(group_of).reshape(-1)
    index = {tuple(c): g for g, c in enumerate(combos.tolist())}
    wanted, inverse = np.unique(ko.T, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    per_combo: list[np.ndarray] = []
    exact = np.zeros(len(wanted), dtype=bool)
    for i, c in enumerate(wanted.tolist()):
        g = index.get(tuple(c))
        if g is not None:
            exact[i] = True
            per_combo.append(np.array([g], dtype=np.intp))
        else:
            d = (combos != np.array(c)).sum(axis=1)
            per_combo.append(np.flatnonzero(d == d.min()))
    matched = int(exact[inverse].sum())
    return group_of, [per_combo[i] for i in inverse], matched, n - matched


def _guess(modes: np.ndarray, nearest_of: list[np.ndarray], group_of: np.ndarray, fr: np.ndarray,
           n: int) -> np.ndarray:
    """Each original record's guess: the mode of its group, or of the union of its nearest groups."""
    out = np.empty(n, dtype=np.intp)
    pooled: dict[tuple[int, ...], int] = {}
    for i, groups in enumerate(nearest_of):
        if len(groups) == 1:
            out[i] = modes[groups[0]]
            continue
        key = tuple(groups.tolist())
        if key not in pooled:
            values = fr[np.isin(group_of, groups)]
            pooled[key] = int(np.bincount(values).argmax())
        out[i] = pooled[key]
    return out


def attack(original: pd.DataFrame, released: pd.DataFrame, known: str | Sequence[str],
           target: str | Sequence[str] | None = None, manifest: Manifest | None = None, *,
           estimator: str = "mle", linkage: bool = True, holdout: pd.DataFrame | None = None,
           key: Any = None) -> AttackResult:
    """The reconstruction attack, and with the manifest the Bayes ceiling of each perturbed target twice:
    with the original's own table as the prior, given the whole released record (the true joint law: the
    ceiling no attack that reads the columns of :attr:`BayesCeiling.conditioned_on` and the known ones beats in
    expectation; every attack on the record when :attr:`BayesCeiling.not_conditioned_on` is empty), and with
    the release's corrected table of the target and the known columns, given the target's released cell only
    (``scope="target"``: the belief of a public attacker who reads that cell, its expected share the attacker's
    belief, its realised share, from the original, the truth; no ceiling).

    Parameters
    ----------
    original, released : pandas.DataFrame
        The original and the released file (for the ceiling, the same records in the same order).
    known : str or sequence of str
        The columns the attacker knows.
    target : str or sequence of str, optional
        The features attacked (default every column not known).
    manifest : Manifest, optional
        The release's manifest: adds the Bayes ceiling of each target it perturbs.
    estimator : str
        The estimator of the ceiling's prior.
    linkage : bool
        Add the linkage attack (:func:`pramkit.risk.attack_linkage.linkage_attack`).
    holdout : pandas.DataFrame, optional
        For the linkage: records not used to make the release (default a keyed half of the original).
    key : pramkit.kernel.rng.SecretKey, bytes, str, pathlib.Path or None
        For the linkage: the key of the holdout half and of the samples (default a fresh one).

    Returns
    -------
    AttackResult

    Examples
    --------
    >>> o = pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "a", "b", "c"]})
    >>> result = attack(o, o, "age", key=bytes(32))
    >>> result.reconstruction.accuracy, result.linkage.share_at_zero
    (0.75, 1.0)
    """
    rec = reconstruction_attack(original, released, known, target)
    if holdout is not None and not linkage:
        raise ParameterError("a holdout file is for the linkage attack: ask for it too")
    link = linkage_attack(original, released, rec.known, holdout=holdout, key=key) if linkage else None
    ceilings, notes = [], []
    if manifest is not None:
        perturbed = _perturbed_columns(manifest)
        plain = [t for t in rec.features if t not in perturbed]
        if plain:
            notes.append(f"no Bayes ceiling for {', '.join(plain)}: released exactly")
        if len(original) != len(released):
            notes.append("no Bayes ceiling: the released file does not hold the original's records row for row")
        else:
            for t in (t for t in rec.features if t in perturbed):
                ceilings.append(bayes_ceiling(released, manifest, rec.known, t, prior=original, original=original,
                                              prior_label=TRUE_LAW))
                ceilings.append(bayes_ceiling(released, manifest, rec.known, t, original=original,
                                              estimator=estimator, scope="target"))
            notes += [f"Bayes ceiling of {', '.join(c.target)} (prior {c.prior}): {c.impossible:,} record"
                      f"{'s' * (c.impossible != 1)} released in cells the manifest cannot give from their known "
                      f"values, scored by the prior alone" for c in ceilings if c.impossible]
    return AttackResult(rec, ceilings, notes, link)
