"""The numbers of a release report, collected into one frozen :class:`ReleaseReport`.

:func:`build_report` takes the original file, the manifest and the released
file and computes, with pramkit's own measures,

* the privacy ledger: per perturbed variable its exact epsilon (Shlomo and
  Skinner 2012, sec. 4), its beta when bistochastic (Ruiz and Domingo-Ferrer,
  Definition 1), smallest keep probability, truthfulness and design; the
  record's epsilon (sum over variables perturbed independently);
* disclosure risk before and after PRAM: sample uniques, tau1, tau2 under a
  Poisson log-linear model (Skinner and Shlomo 2008), expected
  re-identifications, and the largest spontaneous-recognition posterior
  (condition C1 of Cator, Hensbergen and Rozenholc);
* utility: the mutual information I(X; Z) each matrix keeps (nats and share
  of H(X)), the original, released and estimated (moment estimator)
  frequencies, and the privacy-utility curve of randomized response over
  epsilon with the released matrix marked;
* locality, for variables with distances between their categories (areas,
  ordered bands; :mod:`pramkit.distances`): the expected distance moved,
  the share of records kept in their own category and the share moved at most
  a radius, beside randomized response at the same epsilon -- on the exact
  frequencies and over the released records (internal report), or weighted by
  published figures only (public report: the ledger's noisy counts, else the
  counts estimated from the released file, with standard errors);
* provenance: each design's method, objective, certificate and parameters,
  the pramkit version and the SHA-256 of the files.

Rendering is separate (:mod:`pramkit.report.html`).  The report never sees
the secret key: nothing in a manifest or a released file contains it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from pramkit._extras import require_extra
from pramkit._version import __version__
from pramkit.codebook import canonical, encode, sort_labels
from pramkit.counts import chunk_rows_for, count_frame
from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, DEFAULT_SAMPLING_FRACTION, NA_VALUES
from pramkit.design.classic import randomized_response
from pramkit.design.measures import measure
from pramkit.design.metric.mechanisms import RowMeasures, row_measures, rr_row_measures
from pramkit.distances import Distances, read_distances
from pramkit.engine.receipt import released_guarantee, report_guarantees
from pramkit.errors import DataError, MatrixError, ParameterError, PramkitError
from pramkit.estimate import EstimateResult, TableEstimate, estimate_table
from pramkit.frames import pandas_table
from pramkit.information import entropy, mutual_information
from pramkit.io import compact_text, iter_batches, paired_chunks, sha256_of, table_format
from pramkit.labels import Label
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.privacy.geometric import DPCounts
from pramkit.progress import progress
from pramkit.report.images import REPORT
from pramkit.report.rumap import RiskUtilityMap, risk_utility_map
from pramkit.risk.contributions import ReleaseContributions, release_contributions
from pramkit.risk.identification import RiskResult, identification_risk
from pramkit.risk.recognition import recognition_risk
from pramkit.utility import PrivacyUtilityCurve, privacy_utility_curve

if TYPE_CHECKING:
    from pramkit.release.record import DesignRecord

#: Threshold alpha (a probability) at which spontaneous-recognition violations are counted.
DEFAULT_RECOGNITION_ALPHA = 0.5

#: Files at least this long whose perturbed columns equal the original's are refused as releases
#: (PRAM at any finite epsilon changes some value of a file this size with overwhelming probability).
MIN_RECORDS_IDENTICAL = 100

#: Number of points of the privacy-utility curve (log-spaced in epsilon).
CURVE_POINTS = 25

#: Smallest epsilon of the curve (nats); the largest is max(10, 2 x the variable's epsilon).
CURVE_MIN_EPSILON = 0.05


@dataclass(frozen=True)
class LedgerEntry:
    """What one perturbed variable guarantees.

    Attributes
    ----------
    name : str
        The variable.
    columns : tuple of str
        The columns it perturbs (several for a joint variable).
    categories : int
        S, its number of categories.
    epsilon : float
        Exact epsilon, the largest log-ratio of two entries of a column of M (Shlomo and
        Skinner 2012, section 4), in nats; ``inf`` when a column mixes zeros and positives.
    beta : float or None
        beta-bistochastic privacy H(P) / log2 S (Ruiz and Domingo-Ferrer, Definition 1);
        None when M is not bistochastic.
    min_diagonal : float
        Smallest keep probability M[k, k].
    truthful : bool
        Every M[k, k] is the largest entry of its row.
    bistochastic : bool
        Rows and columns of M sum to 1.
    method : str
        The design's name (provenance).
    epsilon_given_structure : float or None
        For a variable with structure (strata, kept codes, rules), whose ``epsilon`` is infinite: its
        epsilon among records that agree on what is shown exactly
        (:attr:`pramkit.manifest.PerturbedVariable.block_epsilon`); None otherwise.

    Examples
    --------
    Randomized response that keeps a value with probability 3/4: its epsilon is
    log(0.75 / 0.25) = log 3, and each row has an entropy of 0.811 of log2 S = 1 bit.

    >>> import math
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> manifest = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> entry = build_public_report(manifest, pd.DataFrame({"sex": ["f", "m"] * 50})).ledger[0]
    >>> entry.name, entry.columns, entry.categories, entry.truthful, entry.bistochastic
    ('sex', ('sex',), 2, True, True)
    >>> math.isclose(entry.epsilon, math.log(3)), round(entry.beta, 4), entry.min_diagonal
    (True, 0.8113, 0.75)
    """

    name: str
    columns: tuple[str, ...]
    categories: int
    epsilon: float
    beta: float | None
    min_diagonal: float
    truthful: bool
    bistochastic: bool
    method: str
    epsilon_given_structure: float | None = None


@dataclass(frozen=True)
class RiskFigures:
    """File-level identification risk (from :class:`pramkit.risk.identification.RiskResult`).

    Attributes
    ----------
    n : int
        Records.
    cells : int
        Cells of the full key table.
    sample_uniques : int
        Records unique on the keys.
    tau1 : float
        Expected number of sample uniques that are population uniques (records), under a
        Poisson log-linear model (Skinner and Shlomo 2008; Shlomo and Skinner 2012, section 2.1).
    tau2 : float
        Expected number of correct matches among sample uniques (records; ibid.).
    expected_reidentifications : float
        The per-record risk summed over the records (records).
    seconds : float
        Time of the computation.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.identification import identification_risk
    >>> data = pd.DataFrame({"sex": ["f", "m"] * 100, "age": ["young", "old", "old", "young"] * 50})
    >>> data.loc[0, "age"] = "100+"                      # one record unique on the keys
    >>> risk = RiskFigures.of(identification_risk(data, ["sex", "age"], sampling_fraction=0.1))
    >>> risk.n, risk.cells, risk.sample_uniques
    (200, 6, 1)
    >>> 0 <= risk.tau1 <= risk.sample_uniques, 0 <= risk.tau2 <= risk.sample_uniques
    (True, True)
    """

    n: int
    cells: int
    sample_uniques: int
    tau1: float
    tau2: float
    expected_reidentifications: float
    seconds: float

    @classmethod
    def of(cls, result: RiskResult) -> RiskFigures:
        """The file-level figures of a risk assessment.

        Parameters
        ----------
        result : RiskResult
            The output of :func:`pramkit.risk.identification.identification_risk`.

        Returns
        -------
        RiskFigures
            Its counts, tau1, tau2, expected re-identifications and time, without the per-record detail.

        Examples
        --------
        >>> import pandas as pd
        >>> from pramkit.risk.identification import identification_risk
        >>> data = pd.DataFrame({"sex": ["f", "m"] * 50, "region": ["north"] * 99 + ["south"]})
        >>> result = identification_risk(data, ["sex", "region"], sampling_fraction=0.5)
        >>> figures = RiskFigures.of(result)
        >>> (figures.n, figures.sample_uniques, figures.tau2) == (result.n, result.sample_uniques, result.tau2)
        True
        """
        return cls(result.n, result.cells, result.sample_uniques, result.tau1, result.tau2,
                   result.expected_reidentifications, result.seconds)


@dataclass(frozen=True)
class RecognitionFigures:
    """Spontaneous recognition (condition C1), before and after PRAM.

    Attributes
    ----------
    alpha : float
        The threshold (a probability) above which a posterior counts as a violation.
    max_posterior_before, max_posterior_after : float
        The largest posterior, equation (1) of Cator, Hensbergen and Rozenholc, over
        every combination of three keys (of all the keys, when there are fewer) (probability).
    violations_before, violations_after : int
        (combination, value, record type) triples whose posterior exceeds ``alpha``.
    combinations : int
        Number of key combinations checked.
    not_computed : str
        The reason, when the check could not be made (then the figures are NaN / -1).

    Examples
    --------
    Five records unique on the keys are recognised with certainty in the original file;
    after PRAM no posterior exceeds alpha:

    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.pipeline import design_release
    >>> from pramkit.engine.perturb import perturb_frame
    >>> data = census(2_000)
    >>> manifest = design_release(data, ["sex", "age"], epsilon=2.0, categories=CENSUS_VARIABLES,
    ...                           rng=random.Random(0))
    >>> released = perturb_frame(data, manifest, key=bytes(32)).data
    >>> rec = build_report(data, manifest, released, ["sex", "age", "race"], sampling_fraction=0.01).risk.recognition
    >>> rec.alpha, rec.max_posterior_before, rec.violations_before, rec.violations_after
    (0.5, 1.0, 5, 0)
    >>> rec.max_posterior_after < rec.alpha
    True

    A check that could not be made keeps its figures undefined:

    >>> RecognitionFigures(0.5, not_computed="a key is perturbed jointly").violations_after
    -1
    """

    alpha: float
    max_posterior_before: float = math.nan
    max_posterior_after: float = math.nan
    violations_before: int = -1
    violations_after: int = -1
    combinations: int = 0
    not_computed: str = ""


@dataclass(frozen=True)
class DisclosureRisk:
    """Identification risk of the original and of the released file on the same keys.

    Attributes
    ----------
    keys : tuple of str
        The key variables.
    sampling_fraction : float
        pi, the share of the population in the file.
    sampling_note : str
        Where pi comes from (given, weights, or assumed), and which records were left out.
    before : RiskFigures
        Figures of the original file.
    after : RiskFigures or None
        Figures of the released file accounting for PRAM (None, with ``after_note``, when
        a key is perturbed jointly with other columns).
    after_note : str
        Why ``after`` is missing.
    recognition : RecognitionFigures
        Condition C1 before and after.

    Examples
    --------
    The same records are assessed before and after; PRAM lowers the expected number of
    correct matches tau2:

    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.pipeline import design_release
    >>> from pramkit.engine.perturb import perturb_frame
    >>> data = census(2_000)
    >>> manifest = design_release(data, ["sex", "age"], epsilon=2.0, categories=CENSUS_VARIABLES,
    ...                           rng=random.Random(0))
    >>> released = perturb_frame(data, manifest, key=bytes(32)).data
    >>> risk = build_report(data, manifest, released, ["sex", "age", "race"], sampling_fraction=0.01).risk
    >>> risk.keys, risk.sampling_note
    (('sex', 'age', 'race'), 'pi = 0.01, as given; every record has all keys')
    >>> risk.before.n == risk.after.n == 2000, risk.after.tau2 < risk.before.tau2
    (True, True)
    """

    keys: tuple[str, ...]
    sampling_fraction: float
    sampling_note: str
    before: RiskFigures
    after: RiskFigures | None
    after_note: str
    recognition: RecognitionFigures


@dataclass(frozen=True, eq=False)
class VariableUtility:
    """What a perturbed (single-column) variable keeps.

    Attributes
    ----------
    name : str
        The variable.
    entropy_nats : float
        H(X) of the original proportions (nats; NaN in the public report).
    mutual_information_nats : float
        I(X; Z), equation (9) of Ayed, Battiston and Camerlenghi for form (8) (nats; NaN in
        the public report).
    frequencies : pandas.DataFrame
        One row per category: ``category``, ``original``, ``released``, ``estimate``,
        ``ci_low``, ``ci_high`` (shares of the records, in %; the estimate by the moment
        estimator, Cator, Hensbergen and Rozenholc, estimator (4), with its 95 % interval).
    curve : PrivacyUtilityCurve or None
        Randomized response over epsilon, the released matrix marked (None for a single
        category, and in the public report).
    curve_note : str
        What the marked point is, or why there is no curve.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.engine.perturb import perturb_frame
    >>> original = pd.DataFrame({"sex": ["f", "f", "f", "m"] * 50})
    >>> manifest = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> released = perturb_frame(original, manifest, key=bytes(32)).data
    >>> u = build_report(original, manifest, released, ["sex"]).utility[0]
    >>> u.name, list(u.frequencies.columns)
    ('sex', ['category', 'original', 'released', 'estimate', 'ci_low', 'ci_high'])
    >>> u.frequencies["original"].tolist(), round(float(u.frequencies["released"].sum()), 9)
    ([75.0, 25.0], 100.0)
    >>> 0 < u.mutual_information_nats < u.entropy_nats, 0 < u.share_kept < 1
    (True, True)
    """

    name: str
    entropy_nats: float
    mutual_information_nats: float
    frequencies: pd.DataFrame
    curve: PrivacyUtilityCurve | None
    curve_note: str

    @property
    def share_kept(self) -> float:
        """I(X; Z) / H(X) (a fraction; NaN when H(X) = 0)."""
        return self.mutual_information_nats / self.entropy_nats if self.entropy_nats > 0 else math.nan


@dataclass(frozen=True)
class LocalityFigure:
    """One locality measure of a variable: its released matrix beside randomized response
    at the same epsilon.

    Attributes
    ----------
    measure : str
        What is measured.
    unit : str
        ``"%"`` for shares of records, else the distances' unit.
    design, rr : float
        The figure for the released matrix and for randomized response (NaN: not
        identifiable from the released file, or no randomized response at infinite epsilon).
    design_se, rr_se : float or None
        Standard errors when the figures are estimated from the released file.
    realised : float or None
        The figure over the records of this release (internal report only).

    Examples
    --------
    The truncated geometric mechanism on three ordered bands, its figures estimated from the
    released file: a record kept in its own band has moved at most one step, so the second
    share is at most the third.

    >>> import pandas as pd
    >>> from pramkit import Manifest
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
    >>> manifest = Manifest.of({"age": truncated_geometric(["young", "middle", "old"], 1.0)})
    >>> released = pd.DataFrame({"age": ["young", "middle", "old", "old"] * 25})
    >>> distance, kept, near = build_public_report(manifest, released).locality[0].figures
    >>> distance.measure, distance.unit, kept.unit, distance.design_se is not None
    ('expected distance moved', 'step', '%', True)
    >>> near.measure, kept.design <= near.design <= 100, kept.rr <= near.rr <= 100
    ('records moved at most 1 step', True, True)
    """

    measure: str
    unit: str
    design: float
    rr: float
    design_se: float | None = None
    rr_se: float | None = None
    realised: float | None = None


@dataclass(frozen=True)
class Locality:
    """How far a variable's released values are from the original ones (a variable with distances).

    Attributes
    ----------
    name : str
        The variable.
    distances : mapping
        The distances' summary (:meth:`pramkit.distances.Distances.to_dict`).
    within : float or None
        The radius of the "moved at most" share (the distances' unit).
    epsilon : float
        The matrix's pure epsilon, at which randomized response is compared (nats).
    weights : str
        What the figures are weighted by, in words.
    figures : tuple of LocalityFigure
        The measures (empty when they could not be computed: ``note`` says why).
    note : str
        What else the reader should know.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
    >>> manifest = Manifest.of({"age": truncated_geometric(["young", "middle", "old"], 1.0)})
    >>> released = pd.DataFrame({"age": ["young", "middle", "old", "old"] * 25})
    >>> loc = build_public_report(manifest, released).locality[0]
    >>> loc.name, loc.distances["kind"], loc.within, [f.measure for f in loc.figures]
    ('age', 'ordinal', 1.0, ['expected distance moved', 'records kept in their own category', 'records moved at most 1 step'])
    >>> loc.weights
    'the counts estimated from the released file (unbiased estimator, 95 % intervals)'
    """

    name: str
    distances: Mapping[str, Any]
    within: float | None
    epsilon: float
    weights: str
    figures: tuple[LocalityFigure, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class DesignProvenance:
    """How one variable's matrix was designed (from the manifest).

    Attributes
    ----------
    name : str
        The variable.
    method : str
        The design method (``"user"`` for a matrix given as is).
    objective : float or None
        The design's objective value (e.g. I(X; Z) in nats).
    objective_name : str or None
        What ``objective`` is.
    certificate : mapping or None
        The design's certificate of optimality (or its proven gap).
    parameters : mapping
        The design's parameters.
    seconds : float or None
        Time spent designing.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest
    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> manifest = Manifest.of({"sex": dp_optimal([0.5, 0.5], 1.0, categories=["f", "m"])})
    >>> d = build_public_report(manifest, pd.DataFrame({"sex": ["f", "m"] * 50})).designs[0]
    >>> d.name, d.method, d.objective_name, d.certificate["optimal"], d.parameters["epsilon"]
    ('sex', 'dp_optimal', 'mutual_information_nats', True, 1.0)
    """

    name: str
    method: str
    objective: float | None
    objective_name: str | None
    certificate: Mapping[str, Any] | None
    parameters: Mapping[str, Any]
    seconds: float | None


@dataclass(frozen=True)
class FileProvenance:
    """The files the report was built from.

    Attributes
    ----------
    original, released : str or None
        The paths of the files (None when given in memory); a public report names the released
        file by its name only (a published file holds no path of the machine it was made on).
    original_sha256, released_sha256 : str or None
        SHA-256 of the files (None when given in memory).
    manifest_input : mapping
        The manifest's ``input`` field.
    manifest_created, manifest_version : str
        When and by which pramkit the manifest was written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.io import sha256_of
    >>> manifest = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder, "released.csv")
    ...     pd.DataFrame({"sex": ["f", "m"] * 50}).to_csv(path, index=False)
    ...     files = build_public_report(manifest, path).files
    ...     files.released == "released.csv", files.released_sha256 == sha256_of(path)
    (True, True)
    >>> files.original is None, files.original_sha256 is None      # a public report never reads it
    (True, True)
    """

    original: str | None
    original_sha256: str | None
    released: str | None
    released_sha256: str | None
    manifest_input: Mapping[str, Any]
    manifest_created: str
    manifest_version: str


#: Records the internal report lists among the most exposed to the attack (the largest posteriors).
ATTACK_EXPOSED = 20


@dataclass(frozen=True)
class ExposedRecord:
    """A record of the original whose best guess the Bayes attacker is surest of.

    Attributes
    ----------
    row : int
        The record's 0-based position in the original (as ``pramkit attack --per-record`` numbers it).
    known : tuple of (str, str)
        The columns the attacker knows, with the record's values.
    target : str
        The perturbed column guessed (the one of the record's targets with the largest posterior).
    guess : str
        The best guess of its value.
    posterior : float
        The posterior probability of the best guess (the true joint law as the prior).
    """

    row: int
    known: tuple[tuple[str, str], ...]
    target: str
    guess: str
    posterior: float


@dataclass(frozen=True)
class CeilingFigures:
    """The Bayes ceiling of one perturbed target under one prior (:class:`pramkit.risk.attack.BayesCeiling`).

    Attributes
    ----------
    target : str
        The target column(s), comma-separated.
    true_law : bool
        The prior is the original's own joint table, given the whole released record (the ceiling no attack
        reading the columns it names beats in expectation); otherwise it is estimated from the release (what a
        public attacker reading the target's cell believes).
    prior : str
        The prior's name.
    records : int
        Records scored.
    share, baseline_share : float
        Expected share of right guesses with the released record, and with the prior and the known columns
        alone.
    realised_share : float or None
        Share of the argmax guesses that are right in this release (from the original).
    epsilon : float
        The epsilon of the perturbed variables the posterior reads whose cells depend on an unknown column
        (nats): with the whole record, the record's.
    """

    target: str
    true_law: bool
    prior: str
    records: int
    share: float
    baseline_share: float
    realised_share: float | None
    epsilon: float


@dataclass(frozen=True)
class AttackFigures:
    """Risk by attack (:func:`pramkit.risk.attack.attack`), as the internal report shows it.

    Attributes
    ----------
    known : tuple of str
        The columns the attacker knows of each person.
    records, features : int
        Records of the original attacked, and the features guessed.
    accuracy, baseline : float
        Share of (record, feature) values the reconstruction recovers, and the share from the published margins
        alone (each feature's most frequent released value).
    weighted_accuracy, weighted_baseline : float
        The same with rare values counted more.
    ceilings : tuple of CeilingFigures
        The Bayes ceiling of each perturbed target, true law then estimated prior.
    linkage : mapping or None
        The linkage's totals (:meth:`pramkit.risk.attack_linkage.LinkageResult.to_dict`); None when not run.
    sentences : tuple of str
        Every figure in plain words (:func:`pramkit.risk.attack_words.attack_sentences`).
    notes : tuple of str
        What was left out, and why.
    exposed : tuple of ExposedRecord
        The records whose best guess is the most probable, largest first (at most :data:`ATTACK_EXPOSED`).
    scored : int
        Records with a Bayes posterior (those the exposed records are taken from).
    """

    known: tuple[str, ...]
    records: int
    features: int
    accuracy: float
    baseline: float
    weighted_accuracy: float
    weighted_baseline: float
    ceilings: tuple[CeilingFigures, ...]
    linkage: Mapping[str, Any] | None
    sentences: tuple[str, ...]
    notes: tuple[str, ...]
    exposed: tuple[ExposedRecord, ...]
    scored: int


def _most_exposed(result: Any, original: pd.DataFrame, top: int) -> tuple[tuple[ExposedRecord, ...], int]:
    """The ``top`` records with the largest posterior of a best guess (true-law ceilings; a record's largest over
    its targets; ties to the first row), and the number of records scored."""
    from pramkit.risk.attack import TRUE_LAW

    best: dict[int, tuple[float, str, str]] = {}
    for c in (c for c in result.ceilings if c.prior == TRUE_LAW):
        target = ", ".join(c.target)
        for row, posterior, guess in zip(c.rows.tolist(), c.max_posterior.tolist(), c.guesses()):
            if row not in best or posterior > best[row][0]:
                best[row] = (posterior, target, ", ".join(map(str, guess)) if isinstance(guess, tuple) else str(guess))
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:top]
    known = list(result.reconstruction.known)
    return tuple(ExposedRecord(row=row, known=tuple(zip(known, map(str, original.iloc[row][known].tolist()))),
                               target=target, guess=guess, posterior=posterior)
                 for row, (posterior, target, guess) in ranked), len(best)


def attack_figures(original: pd.DataFrame, released: pd.DataFrame, known: Sequence[str], manifest: Manifest, *,
                   key: Any = None, top: int = ATTACK_EXPOSED) -> AttackFigures:
    """Attack the released file as an intruder who knows the ``known`` columns of each person of the original
    (:func:`pramkit.risk.attack.attack` with the manifest: reconstruction, Bayes ceiling, linkage), and collect
    what the internal report shows.

    Parameters
    ----------
    original, released : pandas.DataFrame
        The original and the released file, the same records in the same order, the same columns.
    known : sequence of str
        The columns the attacker knows.
    manifest : Manifest
        The release's manifest (the Bayes ceiling of each perturbed target).
    key : SecretKey, bytes or None
        The key of the linkage's holdout half (default a fresh one).
    top : int
        How many of the most exposed records to keep.

    Returns
    -------
    AttackFigures
        Computed from the original: private.

    Raises
    ------
    ParameterError
        As :func:`pramkit.risk.attack.attack` (a known column the files lack, files with other columns).

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> o = pd.DataFrame({"age": ["20", "20", "60", "60"] * 25, "sex": ["f", "m"] * 50})
    >>> m = Manifest.of({"sex": PramMatrix([[0.9, 0.1], [0.1, 0.9]], ("f", "m"))})
    >>> a = attack_figures(o, o, ["age"], m, key=bytes(32))
    >>> a.known, a.features, [(c.target, c.true_law, round(c.share, 2)) for c in a.ceilings][0]
    (('age',), 1, ('sex', True, 0.9))
    >>> len(a.exposed), a.exposed[0].row, a.exposed[0].known, round(a.exposed[0].posterior, 2)
    (20, 0, (('age', '20'),), 0.9)
    """
    from pramkit.risk.attack import TRUE_LAW, attack
    from pramkit.risk.attack_linkage import MAX_PAIRS
    from pramkit.risk.attack_words import attack_sentences

    pairs = len(original) * len(released)
    result = attack(original, released, list(known), None, manifest, linkage=pairs <= MAX_PAIRS, key=key)
    notes = list(result.notes) + ([] if pairs <= MAX_PAIRS else [
        f"no linkage: {len(original):,} x {len(released):,} pairs of records to compare exceed {MAX_PAIRS:,}"])
    rec = result.reconstruction
    ceilings = tuple(CeilingFigures(
        target=", ".join(c.target), true_law=c.prior == TRUE_LAW, prior=c.prior, records=c.records, share=c.share,
        baseline_share=c.baseline_share, realised_share=c.to_dict()["realised_share"], epsilon=c.epsilon)
        for c in result.ceilings)
    exposed, scored = _most_exposed(result, original, top)
    return AttackFigures(
        known=rec.known, records=rec.records, features=len(rec.features), accuracy=rec.accuracy,
        baseline=rec.baseline, weighted_accuracy=rec.weighted_accuracy, weighted_baseline=rec.weighted_baseline,
        ceilings=ceilings, linkage=None if result.linkage is None else result.linkage.to_dict(),
        sentences=tuple(attack_sentences(result)), notes=tuple(notes), exposed=exposed, scored=scored)


def _check_attack_known(data: Any, released: Any, known: Sequence[str], reading: Mapping[str, Any]) -> None:
    """Refuse, before any work, attack columns that are not in both files."""
    for frame, what in ((data, "original file"), (released, "released file")):
        if isinstance(frame, (str, Path)):
            meta, _ = iter_batches(frame, columns=None, **{k: v for k, v in reading.items() if k != "decimal"})
            columns = list(map(str, meta.columns))
        else:
            columns = list(map(str, frame.columns))
        absent = [k for k in known if k not in columns]
        if absent:
            raise DataError(f"the attack's known column(s) {', '.join(map(repr, absent))} are not in the {what}")


def _attack_frames(data: Any, released: Any, reading: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both files whole, as the attack reads them (every column as text, missing values as ``pramkit attack``)."""
    from pramkit.io import read_table

    dialect = {k: reading[k] for k in ("na_values", "sep", "encoding")}
    return tuple(read_table(x, **dialect) if isinstance(x, (str, Path)) else x  # type: ignore[return-value]
                 for x in (data, released))


@dataclass(frozen=True, eq=False)
class ReleaseReport:
    """Everything a release report shows: numbers only (see :func:`pramkit.report.write_report`).

    Attributes
    ----------
    ledger : tuple of LedgerEntry
        One entry per perturbed variable.
    record_epsilon : float
        The record's epsilon, design step included (nats; sequential composition).
    risk : DisclosureRisk or None
        Disclosure risk before and after (None in a public report).
    utility : tuple of VariableUtility
        One entry per single-column perturbed variable.
    utility_note : str
        Which variables were left out of ``utility``.
    designs : tuple of DesignProvenance
        How each matrix was designed.
    files : FileProvenance
        The files the report was built from.
    pramkit_version : str
        The version that built the report.
    created : str
        When (UTC, ISO 8601).
    seconds : mapping of str to float
        Time spent per step.
    public : bool
        True for the public report (manifest and released file only: safe to publish);
        False for the internal report (computed from the original file: private).
    guarantee : str
        The manifest's guarantee sentence.
    ledger_facts : mapping
        The manifest's ledger (design step, frequencies, what is data-dependent).
    records : int
        Records of the released file.
    locality : tuple of Locality
        One entry per single-column variable with distances (expected distance moved, share
        kept and moved at most a radius, beside randomized response at the same epsilon).
    structure : mapping
        The release's structure (:func:`structure_facts`): edit rules, strata, values never
        changed, household unit, the record epsilon given the structure; empty without one.
    audit : pramkit.audit.AuditResult or None
        The audit of the release (:func:`with_audit`); in a public report, the manifest audit only.
    contributions : ReleaseContributions or None
        With ``build_report(..., contributions=True)``: what each key variable and level
        contributes to the risk before and after PRAM (:mod:`pramkit.risk.contributions`).
    guarantees : pramkit.privacy.amplification.Guarantees, optional
        Local, sampled and shuffled guarantees side by side
        (:func:`pramkit.engine.receipt.report_guarantees`).
    stated : pramkit.ledger.Guarantee, optional
        The ledger's guarantee of the release (:func:`pramkit.engine.receipt.released_guarantee`: with the
        released file's columns): the figure, what it does not cover and the sentence, as every surface
        states them; ``record_epsilon`` and ``guarantee`` are its figure and its sentence.
    risk_utility_map : RiskUtilityMap, optional
        With ``build_report(..., design_record=...)`` for a release designed to a target: the budgets the
        search explored, read from the private design record (:mod:`pramkit.report.rumap`); never in a
        public report.
    attack : AttackFigures, optional
        With ``build_report(..., attack_known=...)``: the attack on the released file by an intruder who knows
        those columns of each person (:func:`attack_figures`); computed from the original, so never in a
        public report.

    Examples
    --------
    A release of two variables under a record budget of 2 nats: the design step and the two
    matrices together stay within it.

    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.pipeline import design_release
    >>> from pramkit.engine.perturb import perturb_frame
    >>> data = census(2_000)
    >>> manifest = design_release(data, ["sex", "age"], epsilon=2.0, categories=CENSUS_VARIABLES,
    ...                           rng=random.Random(0))
    >>> released = perturb_frame(data, manifest, key=bytes(32)).data
    >>> report = build_report(data, manifest, released, ["sex", "age", "race"], sampling_fraction=0.01)
    >>> report.public, report.records, [e.name for e in report.ledger], report.record_epsilon <= 2.0
    (False, 2000, ['sex', 'age'], True)
    >>> facts = report.ledger_facts
    >>> facts["design_epsilon"] + sum(e.epsilon for e in report.ledger) <= facts["record_epsilon_budget"]
    True
    >>> list(report.seconds)
    ['read', 'risk before', 'risk after', 'recognition', 'utility']
    """

    ledger: tuple[LedgerEntry, ...]
    record_epsilon: float
    risk: DisclosureRisk | None
    utility: tuple[VariableUtility, ...]
    utility_note: str
    designs: tuple[DesignProvenance, ...]
    files: FileProvenance
    pramkit_version: str
    created: str
    seconds: Mapping[str, float] = field(default_factory=dict)
    public: bool = False
    guarantee: str = ""
    ledger_facts: Mapping[str, Any] = field(default_factory=dict)
    records: int = 0
    locality: tuple[Locality, ...] = ()
    structure: Mapping[str, Any] = field(default_factory=dict)
    audit: Any = None
    contributions: ReleaseContributions | None = None
    guarantees: Any = None
    stated: Any = None
    risk_utility_map: RiskUtilityMap | None = None
    attack: AttackFigures | None = None


def _ledger(manifest: Manifest) -> tuple[LedgerEntry, ...]:
    out = []
    for v in manifest.variables:
        m = v.release_matrix
        measured = measure(m)
        out.append(LedgerEntry(
            name=v.name, columns=v.columns, categories=m.size, epsilon=m.epsilon, beta=measured.beta,
            min_diagonal=m.min_diagonal, truthful=m.is_truthful, bistochastic=m.is_bistochastic,
            method=v.matrix.provenance.method, epsilon_given_structure=v.block_epsilon if v.is_structured else None,
        ))
    return tuple(out)


def _designs(manifest: Manifest) -> tuple[DesignProvenance, ...]:
    return tuple(
        DesignProvenance(v.name, p.method, p.objective, p.objective_name, p.certificate, dict(p.parameters), p.seconds)
        for v in manifest.variables
        for p in [v.matrix.provenance]
    )


def _load(data: pd.DataFrame | str | Path, columns: Sequence[str], what: str,
          na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP, encoding: str = CSV_ENCODING,
          keep: Sequence[str] = (), decimal: str = CSV_DECIMAL) -> pd.DataFrame:
    """The needed columns of a DataFrame or a file, checking that they are present.

    A file's text columns are read as categoricals (:func:`pramkit.io.read_arrow`, compact), one or two
    bytes per record instead of the text, for the reports that hold the records (weighted, with
    contributions, a key missing in some record, a frame given, a Stata, SPSS or SAS file; otherwise
    :func:`_stream_pairs` counts the tables chunk by chunk).  ``keep`` (a weight column) is read as it is;
    with the decimal comma (``decimal=","``) its texts are read as numbers (:func:`_comma_numbers`).
    """
    if isinstance(data, pd.DataFrame):
        absent = [c for c in columns if c not in data.columns]
        if absent:
            raise DataError(f"column(s) {absent} are not in the {what}; its columns are {list(map(str, data.columns))}")
        return _comma_numbers(data, keep, decimal, "")
    if isinstance(data, (str, Path)):
        frame = _read_coded(data, list(columns), [c for c in columns if c not in keep], na_values, sep, encoding,
                            decimal)
        frame = _comma_numbers(frame, keep, decimal, repr(str(data)))
        coded = [c for c in frame.columns if c not in keep and isinstance(frame[c].dtype, pd.CategoricalDtype)]
        for c in coded:  # the categories in the order found in text (categories_of): the same tables
            texts = {canonical(t): t for t in frame[c].cat.categories}
            frame[c] = frame[c].cat.reorder_categories([texts[canonical(v)] for v in sort_labels(list(texts.values()))])
        frame.attrs[_CODED] = coded
        return frame
    raise ParameterError(f"the {what} must be a pandas DataFrame or a file path, not {type(data).__name__}")


def _comma_numbers(frame: pd.DataFrame, columns: Sequence[str], decimal: str, where: str) -> pd.DataFrame:
    """``frame`` with ``columns`` (the weights) read as numbers written with the decimal comma
    (:func:`pramkit.io.csv_numbers`: a value not so written refused naming its row in the file ``where``), so
    that every figure computed from the records held reads them so; ``frame`` itself with the decimal point."""
    if decimal == CSV_DECIMAL or not columns:
        return frame
    from pramkit.io import csv_numbers

    return frame.assign(**{c: csv_numbers(frame[c], c, decimal=decimal, where=where) for c in columns})


def _read_coded(path: str | Path, columns: list[str], compact: list[str], na_values: Sequence[str], sep: str,
                encoding: str, decimal: str = CSV_DECIMAL) -> pd.DataFrame:
    """The columns of a file as pandas, its text columns in ``compact`` as categoricals made chunk by chunk.

    The frame of :func:`pramkit.io.read_arrow` (compact) turned into pandas, without holding the whole
    file's Arrow codes (four bytes per value, and as many again to unify the chunks' dictionaries): each
    chunk (:func:`pramkit.counts.chunk_rows_for` the columns: its rows by the bytes it holds) is
    dictionary-encoded, its codes mapped to the categories met so far (in the order first met, as
    ``union_categoricals`` of the chunks' categoricals orders them) and kept in the smallest integer type,
    and each column's codes are joined once at the end (their categories are reordered by the caller).
    """
    from pandas.api.types import union_categoricals

    _, batches = iter_batches(path, columns=columns, na_values=na_values, sep=sep, encoding=encoding,
                              decimal=decimal, chunk_rows=chunk_rows_for(len(columns)))
    coded = set(compact)
    found: dict[str, dict[Any, int]] = {c: {} for c in columns}
    pieces: dict[str, list[Any]] = {c: [] for c in columns}
    rows = 0
    for table in batches:
        table = compact_text(table, coded)
        rows += table.num_rows
        for c in columns:
            col = table.column(c)
            if c in coded and pa.types.is_dictionary(col.type):
                pieces[c].extend(_chunk_codes(chunk, found[c]) for chunk in col.chunks)
            else:
                pieces[c].append(col.to_pandas())
    if rows == 0:
        raise DataError(f"file {str(path)!r} has no data rows")
    out: dict[str, Any] = {}
    for c in columns:
        parts = pieces.pop(c)
        if all(isinstance(x, np.ndarray) for x in parts):
            codes = np.concatenate(parts) if len(parts) > 1 else parts[0]
            del parts
            out[c] = pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(list(found[c]), dtype=object)),
                               name=c)
            continue
        series = [x if isinstance(x, pd.Series) else pd.Series(  # codes beside other chunks (not in one file)
            pd.Categorical.from_codes(x, categories=pd.Index(list(found[c]), dtype=object))) for x in parts]
        if all(isinstance(x.dtype, pd.CategoricalDtype) for x in series):
            out[c] = union_categoricals(series) if len(series) > 1 else series[0]
        else:
            out[c] = pd.concat(series, ignore_index=True)
    return pd.DataFrame(out)


def _chunk_codes(array: pa.DictionaryArray, found: dict[Any, int]) -> np.ndarray:
    """A chunk's dictionary-encoded text as codes into the categories ``found`` so far (new texts appended
    in the order the chunk's dictionary holds them), -1 for a missing value, in the smallest integer type."""
    lookup = np.array([found.setdefault(t, len(found)) for t in array.dictionary.to_pylist()], dtype=np.int64)
    indices = array.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    kind = np.int8 if len(found) < 2**7 else np.int16 if len(found) < 2**15 else np.int32
    codes = np.full(len(indices), -1, dtype=kind)
    present = indices >= 0
    codes[present] = lookup[indices[present]]
    return codes


def _sampling(
    sampling_fraction: float | None, weights: str | Sequence[float] | None
) -> tuple[float | None, str]:
    """The sampling fraction to pass on (None with weights) and a sentence saying where it comes from."""
    if sampling_fraction is not None and weights is not None:
        raise ParameterError("give a sampling fraction or weights, not both")
    if weights is not None:
        return None, "pi = n / sum of the sampling weights"
    if sampling_fraction is None:
        return DEFAULT_SAMPLING_FRACTION, (
            f"pi = {DEFAULT_SAMPLING_FRACTION:g} assumed (the file is taken to be a "
            f"{100 * DEFAULT_SAMPLING_FRACTION:g} % sample of its population); pass a sampling fraction or weights"
        )
    return float(sampling_fraction), f"pi = {float(sampling_fraction):g}, as given"


def jointly_perturbed(manifest: Manifest, keys: Sequence[str]) -> list[str]:
    """Keys perturbed by a joint (several-column) variable."""
    return [k for v in manifest.variables if v.is_joint for k in v.columns if k in keys]


def _recognition(original: pd.DataFrame | str | Path, keys: Sequence[str], manifest: Manifest, alpha: float,
                 **reading: Any) -> RecognitionFigures:
    """Condition C1 before and after, on the records in memory or streamed from their file (``reading``: how;
    its ``decimal`` left out: the check reads categories only)."""
    reading = {k: v for k, v in reading.items() if k != "decimal"}
    joint = jointly_perturbed(manifest, keys)
    if joint:
        return RecognitionFigures(alpha, not_computed=f"key(s) {joint} are perturbed jointly with other columns; "
                                  "the check here takes one matrix per variable")
    try:
        before = recognition_risk(original, keys, alpha=alpha, reduce=False, **reading)
        after = recognition_risk(original, keys, alpha=alpha, matrices=manifest, reduce=False, **reading)
    except PramkitError as exc:
        return RecognitionFigures(alpha, not_computed=str(exc))
    return RecognitionFigures(
        alpha=alpha, max_posterior_before=before.max_posterior, max_posterior_after=after.max_posterior,
        violations_before=len(before.violations), violations_after=len(after.violations),
        combinations=len(after.combinations),
    )


def _counts(frame: pd.DataFrame, v: PerturbedVariable) -> np.ndarray:
    """Counts of v's categories (in the matrix's order) in the original file."""
    cats: dict[str, Sequence[Label]] = {v.name: v.matrix.categories}
    return count_frame(frame, [v.name], categories=cats).margin(v.name).astype(float)


def _curve(p: np.ndarray, v: PerturbedVariable, n: int) -> tuple[PrivacyUtilityCurve | None, str]:
    """Randomized response on v's categories over epsilon, with v's own matrix as the chosen point."""
    m = v.release_matrix
    if m.size < 2:
        return None, "a single category: nothing to perturb"
    top = max(10.0, 2.0 * m.epsilon) if math.isfinite(m.epsilon) else 10.0
    grid = np.geomspace(CURVE_MIN_EPSILON, top, CURVE_POINTS)
    curve = privacy_utility_curve(p, grid, n=n, design=lambda e: randomized_response(m.categories, e))
    if not math.isfinite(m.epsilon):
        return curve, "the released matrix has infinite epsilon: it cannot be placed on the curve"
    note = f"marked: the released matrix ({m.provenance.method}) at epsilon = {m.epsilon:.4g} nats"
    try:
        own = privacy_utility_curve(p, [m.epsilon], n=n, design=lambda _: m)
    except MatrixError:  # singular: I(X; Z) exists, the unbiased estimator and its variance do not
        values = {"matrix_epsilon": m.epsilon, "mutual_information_nats": mutual_information(p, m.matrix),
                  "l2_loss": math.nan, "variance_inflation": math.nan}
        note += (" on the information panel only: it is singular, so no unbiased estimator exists and it has no "
                 "variance inflation")
        return replace(curve, chosen=m.epsilon, chosen_values=values), note
    except PramkitError as exc:
        return curve, f"the released matrix cannot be placed on the curve: {exc}"
    values = {
        "matrix_epsilon": float(own.matrix_epsilon[0]),
        "mutual_information_nats": float(own.mutual_information_nats[0]),
        "l2_loss": float(own.l2_loss[0]),
        "variance_inflation": float(own.variance_inflation[0]),
    }
    return replace(curve, chosen=m.epsilon, chosen_values=values), note


def weighted_note(weights: str | None) -> str:
    """What the utility section says of weighted estimates ("" without weights).

    Examples
    --------
    >>> weighted_note("rb050")[:44]
    'The shares are weighted by rb050 (estimates '
    """
    if weights is None:
        return ""
    return (f"The shares are weighted by {weights} (estimates of the population's shares); their standard errors "
            "are the design's and PRAM's together, each record its own sampling unit.")


def _exact_p(original: pd.DataFrame, v: PerturbedVariable, weights: str | None = None,
             decimal: str = CSV_DECIMAL) -> tuple[np.ndarray, int]:
    """The proportions of v's categories in the original file (private; weighted by the column ``weights``
    when given, its texts read with the decimal mark ``decimal``) and the records they count."""
    counts = _counts(original, v)
    if weights is None:
        return _proportions(counts, v)
    if counts.sum() == 0:
        raise DataError(f"column {v.name!r} of the original file has no non-missing value")

    from pramkit.counts import chunk_codes, count_codes
    from pramkit.estimate.survey import SurveyDesign

    cats = {v.name: v.matrix.categories}
    codes = chunk_codes(pandas_table(original[[v.name]]), [v.name], cats, 0)
    w = SurveyDesign(weights).read(original, decimal=decimal).weights
    weighted = count_codes([v.name], [v.matrix.categories], codes, weights=w).weight_sums
    assert weighted is not None  # counted with weights
    sums = weighted.astype(float)
    return sums / sums.sum(), int(counts.sum())


def _proportions(counts: np.ndarray, v: PerturbedVariable) -> tuple[np.ndarray, int]:
    """The proportions of v's categories from their counts in the original file, and the records counted."""
    if counts.sum() == 0:
        raise DataError(f"column {v.name!r} of the original file has no non-missing value")
    return counts / counts.sum(), int(counts.sum())


def _utility(original: pd.DataFrame, v: PerturbedVariable, estimate: EstimateResult,
             decimal: str = CSV_DECIMAL) -> VariableUtility:
    return _utility_of(*_exact_p(original, v, estimate.weights, decimal), v, estimate)


def _utility_of(p: np.ndarray, n: int, v: PerturbedVariable, estimate: EstimateResult) -> VariableUtility:
    """A variable's utility figures from the original file's proportions ``p`` of ``n`` records."""
    est = estimate.to_frame()
    released_share = est["released"].to_numpy() / est["released"].sum()
    frequencies = pd.DataFrame({
        "category": list(v.matrix.categories),
        "original": 100 * p,
        "released": 100 * released_share,
        "estimate": 100 * est["proportion"].to_numpy(),
        "ci_low": 100 * est["proportion_ci_low"].to_numpy(),
        "ci_high": 100 * est["proportion_ci_high"].to_numpy(),
    })
    curve, note = _curve(p, v, n)
    information = measure(v.matrix, p).mutual_information_nats
    assert information is not None  # measured with p
    return VariableUtility(
        name=v.name, entropy_nats=entropy(p), mutual_information_nats=information,
        frequencies=frequencies, curve=curve, curve_note=note,
    )


# ---------------------------------------------------------------------------
# Locality: how far the values of a variable with distances move
# ---------------------------------------------------------------------------

#: The locality measures: (label, attribute of :class:`pramkit.design.metric.mechanisms.RowMeasures`, a share of records).
_LOCALITY = (("expected distance moved", "distance", False),
             ("records kept in their own category", "kept", True),
             ("records moved at most {radius}", "within", True))


class Weights(NamedTuple):
    """What a variable's locality figures are weighted by: fixed proportions ``p`` (exact or
    differentially private), or the counts ``table`` estimated from the released file (each
    figure then with its standard error); ``words`` says which, ``codes`` are the (original,
    released) codes of the records for the realised figures (internal report only), or ``pairs``
    their cross-tab (original category by row, released by column, both present).

    Examples
    --------
    >>> import numpy as np
    >>> from pramkit import PramMatrix
    >>> from pramkit.estimate import moment_estimate
    >>> Weights("given", p=np.array([0.25, 0.75])).figure(np.array([2.0, 0.0]))
    (0.5, None)
    >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("a", "b"))
    >>> value, se = Weights("estimated", table=moment_estimate(np.array([40.0, 60.0]), [m])).figure(np.ones(2))
    >>> value, se                                                  # the counts always sum to n
    (1.0, 0.0)
    """

    words: str
    p: np.ndarray | None = None
    table: TableEstimate | None = None
    codes: tuple[np.ndarray, np.ndarray] | None = None
    pairs: np.ndarray | None = None

    def figure(self, row: np.ndarray) -> tuple[float, float | None]:
        """``p @ row`` with no standard error, or its estimate from the table (NaN when it is
        not identifiable from the released file).

        Parameters
        ----------
        row : numpy.ndarray, shape (S,)
            A per-category measure (e.g. the expected distance moved from each category).

        Returns
        -------
        tuple of (float, float or None)
            The frequency-weighted figure and its standard error (None for fixed proportions).

        Examples
        --------
        With fixed proportions the figure is exact; estimated from the released counts it
        comes with a standard error:

        >>> import numpy as np
        >>> from pramkit import PramMatrix
        >>> from pramkit.estimate import moment_estimate
        >>> Weights("given", p=np.array([0.2, 0.8])).figure(np.array([1.0, 0.0]))
        (0.2, None)
        >>> m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("a", "b"))
        >>> value, se = Weights("estimated", table=moment_estimate(np.array([40.0, 60.0]), [m])).figure(
        ...     np.array([1.0, 0.0]))
        >>> round(value, 6), se > 0                   # the share of "a": (40 - 25) / 50
        (0.3, True)
        """
        if self.table is None:
            assert self.p is not None
            return float(self.p @ row), None
        t = self.table
        se = math.sqrt(t.linear_variance(row)) / t.n
        return (math.nan if math.isnan(se) else float(row @ t.counts) / t.n), se


def distance_specs(manifest: Manifest, distances: Any = None) -> dict[str, tuple[Any, bool]]:
    """Each single-column variable's distance spec, and whether it was given (else found in the manifest).

    ``distances``: one spec (``"ordinal"``, a CSV path, a :class:`Distances`) for the variables whose
    manifest names distances (all single-column variables if none does), or ``{variable: spec}``.
    Without one, the manifest's ``input["distances"]`` (written by
    :func:`pramkit.design_release`; a distance file by its name, read in the current
    folder), and ``"ordinal"`` for a design made on the category steps (the truncated
    geometric mechanism).

    Parameters
    ----------
    manifest : Manifest
        The release manifest.
    distances : optional
        One spec for all, or ``{variable: spec}`` (above); None: the manifest's own.

    Returns
    -------
    dict
        ``{variable: (spec, given)}``, ``given`` False for a spec found in the manifest.

    Raises
    ------
    ParameterError
        If ``distances`` names a variable that is not a single-column perturbed variable.

    Examples
    --------
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
    >>> m = Manifest.of({"age": truncated_geometric(["0-17", "18-64", "65+"], 1.0)})
    >>> distance_specs(m), distance_specs(m, {"age": "bands.csv"})
    ({'age': ('ordinal', False)}, {'age': ('bands.csv', True)})
    """
    names = [v.name for v in manifest.variables if not v.is_joint]
    recorded = manifest.input.get("distances")
    specs = {n: (spec, False) for n, spec in (recorded if isinstance(recorded, Mapping) else {}).items()
             if n in names}
    for v in manifest.variables:
        used = v.matrix.provenance.parameters.get("distances")
        ordinal = v.matrix.geometric_rate is not None or (  # the geometric mechanism is on the order itself
            isinstance(used, Mapping) and used.get("kind") == "ordinal" and used.get("source") == "ordinal")
        if v.name in names and v.name not in specs and ordinal:
            specs[v.name] = ("ordinal", False)
    if distances is None:
        return specs
    if isinstance(distances, Mapping):
        unknown = sorted(set(distances) - set(names))
        if unknown:
            raise ParameterError(f"distances name {unknown}, which are not single-column perturbed variables of "
                                 f"the manifest ({', '.join(names)})")
        given = dict(distances)
    else:
        given = dict.fromkeys(list(specs) or names, distances)
    return {**specs, **{n: (spec, True) for n, spec in given.items()}}


def _variable_distances(v: PerturbedVariable, spec: Any, given: bool) -> tuple[Distances | None, str]:
    """The distances of v's categories, checked against those its design used (their SHA-256 in
    the provenance); given distances that fail raise, the manifest's give a note."""
    try:
        dist = read_distances(spec, v.matrix.categories)
    except ParameterError as exc:
        if given:
            raise
        return None, (f"not shown: the distances the manifest names ({spec!s}) could not be read ({exc}); "
                      "pass them (distances= or --distances)")
    used = v.matrix.provenance.parameters.get("distances")
    if isinstance(used, Mapping) and used.get("sha256") not in (None, dist.digest):
        text = (f"the distances read for {v.name!r} ({spec!s}) are not those its design used (SHA-256 "
                f"{dist.digest[:12]}..., the design's {str(used['sha256'])[:12]}...)")
        if given:
            raise ParameterError(text)
        return None, f"not shown: {text}"
    return dist, ""


def _realised(codes: tuple[np.ndarray, np.ndarray], d: np.ndarray, radius: float) -> dict[str, float]:
    """The locality measures over the records of a release (both values present)."""
    x, z = codes
    keep = (x >= 0) & (z >= 0)
    x, z = x[keep], z[keep]
    if not x.size:
        return {"distance": math.nan, "kept": math.nan, "within": math.nan}
    moved = d[x, z]
    return {"distance": float(moved.mean()), "kept": float(np.mean(x == z)), "within": float(np.mean(moved <= radius))}


def _realised_pairs(pairs: np.ndarray, d: np.ndarray, radius: float) -> dict[str, float]:
    """:func:`_realised` from the records' cross-tab of (original, released) categories: the shares are the
    same numbers (sums of whole counts over the records); the distance is the same mean summed by cell, equal
    to the last bits of a float."""
    n = pairs.sum()
    if not n:
        return {"distance": math.nan, "kept": math.nan, "within": math.nan}
    return {"distance": float((pairs * d).sum() / n), "kept": float(np.trace(pairs) / n),
            "within": float(pairs[d <= radius].sum() / n)}


def _locality(v: PerturbedVariable, dist: Distances, radius: float, weights: Weights) -> Locality:
    m = v.release_matrix
    finite = math.isfinite(m.epsilon)
    mine = row_measures(m, dist, within=radius)
    rr: RowMeasures | None = rr_row_measures(dist, m.epsilon, within=radius) if finite else None
    realised = None if weights.codes is None else _realised(weights.codes, dist.matrix, radius)
    if weights.pairs is not None:
        realised = _realised_pairs(weights.pairs, dist.matrix, radius)
    figures = []
    for label, attr, share in _LOCALITY:
        scale = 100.0 if share else 1.0
        design, design_se = weights.figure(scale * getattr(mine, attr))
        other, other_se = weights.figure(scale * getattr(rr, attr)) if rr is not None else (math.nan, None)
        figures.append(LocalityFigure(
            measure=label.format(radius=f"{radius:g} {dist.unit}"), unit="%" if share else dist.unit,
            design=design, rr=other, design_se=design_se, rr_se=other_se,
            realised=None if realised is None else scale * realised[attr]))
    notes = []
    if not finite:
        notes.append("the matrix's epsilon is infinite: there is no randomized response to compare with")
    if any(math.isnan(f.design) for f in figures) and weights.table is not None:
        notes.append("n/a: not identifiable from the released file (the matrix is singular; "
                     f"{weights.table.note or 'see the estimates'})")
    return Locality(name=v.name, distances=dist.to_dict(), within=radius, epsilon=m.epsilon, weights=weights.words,
                    figures=tuple(figures), note="; ".join(notes))


class _Located(NamedTuple):
    """A variable with distances, read before the report's work (so that bad ones fail first)."""

    variable: PerturbedVariable
    distances: Distances | None
    radius: float | None
    note: str


def _locate(manifest: Manifest, distances: Any, within: float | Mapping[str, float] | None) -> list[_Located]:
    """Every single-column variable with distances (:func:`distance_specs`), read and checked, with
    its radius: ``within`` one radius or ``{variable: radius}`` (default: :attr:`Distances.neighbour`)."""
    specs = distance_specs(manifest, distances)
    if within is not None and not specs:
        raise ParameterError("within applies to variables with distances, and none has any: give distances")
    if isinstance(within, Mapping):
        unknown = sorted(set(within) - set(specs))
        if unknown:
            raise ParameterError(f"within names {unknown}, which have no distances (variables with distances: "
                                 f"{', '.join(specs) or 'none'})")
    out = []
    for v in manifest.variables:
        if v.name in specs and not v.is_joint:
            dist, note = _variable_distances(v, *specs[v.name])
            radius = within.get(v.name) if isinstance(within, Mapping) else within
            if dist is not None and radius is None:
                radius = dist.neighbour
            out.append(_Located(v, dist, radius, note))
    return out


def _localities(located: Sequence[_Located], weights: Callable[[PerturbedVariable], Weights]) -> tuple[Locality, ...]:
    return tuple(
        Locality(v.name, {}, radius, v.matrix.epsilon, "", note=note) if dist is None or radius is None
        else _locality(v, dist, radius, weights(v))
        for v, dist, radius, note in located
    )


def _public_weights(manifest: Manifest, v: PerturbedVariable, estimate: EstimateResult) -> Weights:
    """The ledger's differentially private counts of v when the design took them; otherwise the
    counts estimated from the released file."""
    counts = manifest.ledger.dp_counts.get(v.name) if manifest.ledger is not None else None
    if isinstance(counts, Mapping) and len(counts.get("noisy", ())) == v.matrix.size:
        dp = DPCounts(np.asarray(counts["noisy"], dtype=np.int64), float(counts["epsilon"]),
                      int(counts["sensitivity"]))
        return Weights(f"the design step's noisy counts of {v.name} (geometric mechanism, epsilon {dp.epsilon:.4g} "
                       "nats, published in the ledger)", p=dp.proportions())
    return Weights(f"the counts estimated from the released file ({estimate.estimator} estimator, 95 % intervals)",
                   table=estimate.table)


def _private_weights(original: pd.DataFrame, released: pd.DataFrame, v: PerturbedVariable) -> Weights:
    """The exact frequencies of the original file, and each record's pair of codes."""
    cats = v.matrix.categories
    codes = (encode(original[v.name], cats, column=v.name), encode(released[v.name], cats, column=v.name))
    return Weights("the exact frequencies of the original file", p=_exact_p(original, v)[0], codes=codes)


def _check_release(original: pd.DataFrame, released: pd.DataFrame, manifest: Manifest) -> None:
    perturbed = [c for c in manifest.columns if c in original.columns and c in released.columns]
    _check_pairing(len(original), len(released), perturbed,
                   lambda: all(_same_values(original[c], released[c]) for c in perturbed))


def _check_pairing(original: int, released: int, perturbed: Sequence[str], identical: Callable[[], bool]) -> None:
    """Refuse two files of different numbers of records, or a "release" identical to the original in every
    perturbed column (``identical()``, asked only of files of :data:`MIN_RECORDS_IDENTICAL` records or more)."""
    if original != released:
        raise DataError(
            f"the original file has {original} records and the released file {released}; "
            "a release has one record per original record"
        )
    if original >= MIN_RECORDS_IDENTICAL and perturbed and identical():
        raise DataError(
            f"the released file is identical to the original in every perturbed column ({', '.join(perturbed)}): "
            "pass the file that `pramkit apply` wrote as the release"
        )


class _Paired(NamedTuple):
    """What one pass over two files side by side found: the records, whether a key is missing in a record of
    either file, and each single-column variable's cross-tab of (original, released) categories, a missing
    value counted in the last row or column."""

    records: int
    missing_key: bool
    pairs: dict[str, np.ndarray]


def _checked_columns(path: str | Path, columns: Sequence[str], what: str, **reading: Any) -> int:
    """Refuse a file without one of ``columns`` (as :func:`_load` does), before it is read; its columns."""
    meta, _ = iter_batches(path, columns=None, **reading)
    absent = [c for c in columns if c not in meta.columns]
    if absent:
        raise DataError(f"column(s) {absent} are not in the {what}; its columns are {list(map(str, meta.columns))}")
    return len(meta.columns)


def _chunked(data: Any) -> TypeGuard[str | Path]:
    """Whether ``data`` is a CSV or Parquet file or a folder of parts: read chunk by chunk (a Stata, SPSS or
    SAS file is read whole by every pass, so the report reads it once, as before)."""
    if not isinstance(data, (str, Path)):
        return False
    try:
        return Path(data).is_dir() or table_format(data) in ("csv", "parquet")
    except ParameterError:
        return False


def _streams(released: Any, weights: Any, manifest: Manifest) -> TypeGuard[str | Path]:
    """Whether the report reads the released file chunk by chunk: a CSV or Parquet file (or a folder of
    parts), without weights (weighted sums added chunk by chunk would change their last bits), no matrix
    taking a missing value as a category."""
    return _chunked(released) and weights is None and all(None not in v.matrix.categories for v in manifest.variables)


def _estimates(pairs: Mapping[str, np.ndarray], manifest: Manifest,
               single: Sequence[PerturbedVariable]) -> dict[str, EstimateResult]:
    """Each variable's estimate from the released file's counts (the cross-tabs' columns, the last the missing
    values): :func:`estimate_table` of a column of the released categories in their order, as many of each as
    the file holds, one variable at a time (one byte a record, for as long as the estimate takes), which has
    the counts of the file and so its estimate."""
    out = {}
    for v in single:
        counts = pairs[v.name].sum(axis=0)
        kind = np.int8 if len(counts) < 2**7 else np.int16 if len(counts) < 2**15 else np.int32
        codes = np.repeat(np.arange(len(counts), dtype=kind), counts)
        codes[codes == len(counts) - 1] = -1
        column = pd.Categorical.from_codes(cast("np.ndarray[Any, np.dtype[np.integer[Any]]]", codes),
                                           categories=pd.Index(list(v.matrix.categories), dtype=object))
        out[v.name] = estimate_table(pd.DataFrame({v.name: column}, copy=False), manifest, v.name)
    return out


def _stream_pairs(data: str | Path | None, released: str | Path, manifest: Manifest, keys: Sequence[str],
                  single: Sequence[PerturbedVariable], **reading: Any) -> _Paired:
    """Both files read chunk by chunk side by side (memory: a chunk of each and the tables), checked as
    :func:`_check_release` checks them in memory, with the cross-tab of each variable in ``single``; without
    the original (``data`` None), the released file alone (the cross-tabs' last row: every original missing).

    ``reading``: ``na_values``, ``sep`` and ``encoding`` of the files.
    """
    columns = list(dict.fromkeys([*keys, *(v.name for v in single), *(manifest.columns if data is not None else ())]))
    rows = [0, 0]
    chunks = _paired_passes(data, released, columns, rows, **reading)
    perturbed = [] if data is None else [c for c in manifest.columns if c in columns]
    sizes = {v.name: v.matrix.size + 1 for v in single}
    pairs = {v.name: np.zeros(sizes[v.name] ** 2, dtype=np.int64) for v in single}
    identical, missing_key, start = True, False, 0
    for a, b in chunks:
        identical = identical and a is not None and all(a.column(c).equals(b.column(c)) for c in perturbed)
        missing_key = missing_key or _key_missing(a, b, keys)
        _add_cross_tabs(pairs, sizes, single, a, b, start)
        start += b.num_rows
    _check_rows(rows, data, released)
    _check_pairing(rows[0], rows[1], perturbed, lambda: identical)
    return _Paired(rows[0], missing_key, {n: t.reshape(sizes[n], sizes[n]) for n, t in pairs.items()})


def _paired_passes(data: str | Path | None, released: str | Path, columns: list[str], rows: list[int],
                   **reading: Any) -> Iterator[tuple[pa.Table | None, pa.Table]]:
    """The chunks of both files side by side, each file's columns checked first (:func:`_checked_columns`).

    Parameters
    ----------
    data : str or Path or None
        The original file; None: the released file alone (each pair's first table None).
    released : str or Path
        The released file.
    columns : list of str
        The columns read.
    rows : list of int
        ``[original, released]``: the records read so far, counted as the chunks are read.
    **reading
        ``na_values``, ``sep`` and ``encoding`` of the files.

    Returns
    -------
    iterator of tuple
        ``(original chunk or None, released chunk)``.

    Raises
    ------
    DataError
        A file lacks one of ``columns``.
    """
    # a chunk of each file, together the bytes of one pass's chunk; a CSV reader parses every column of a
    # row, so the chunk is sized by the files' columns, not only those read
    width = _checked_columns(released, columns, "released data", **reading) if data is None else (
        _checked_columns(data, columns, "original data", **reading)
        + _checked_columns(released, columns, "released data", **reading))
    chunk = chunk_rows_for(max(width, (1 if data is None else 2) * len(columns)))
    _, rel = iter_batches(released, columns=columns or None, chunk_rows=chunk, **reading)

    def alone() -> Iterator[tuple[pa.Table | None, pa.Table]]:
        for table in rel:
            rows[0] += table.num_rows
            rows[1] += table.num_rows
            yield None, table

    return alone() if data is None else paired_chunks(
        iter_batches(data, columns=columns, chunk_rows=chunk, **reading)[1], rel, rows)


def _key_missing(original: pa.Table | None, released: pa.Table, keys: Sequence[str]) -> bool:
    """Whether a record of either chunk lacks a key."""
    return any(t.column(k).null_count for t in (original, released) if t is not None for k in keys)


def _check_rows(rows: Sequence[int], data: str | Path | None, released: str | Path) -> None:
    """Refuse a file read without a record (``rows``: the records of the original and of the released file)."""
    for count, path in zip(rows, (data, released)):
        if count == 0 and path is not None:
            raise DataError(f"file {str(path)!r} has no data rows")


def _add_cross_tabs(pairs: dict[str, np.ndarray], sizes: Mapping[str, int], single: Sequence[PerturbedVariable],
                    original: pa.Table | None, released: pa.Table, start: int) -> None:
    """Add one chunk's records to each variable's cross-tab of (original, released) categories.

    Parameters
    ----------
    pairs : dict
        Each variable's cross-tab, flat (``size * size``; added to in place).
    sizes : mapping
        Each variable's number of categories plus one (the last: a missing value).
    single : sequence of PerturbedVariable
        The single-column variables.
    original : pyarrow.Table or None
        The original file's chunk; None: every original missing.
    released : pyarrow.Table
        The released file's chunk.
    start : int
        The chunk's first record (for the messages).
    """
    from pramkit.counts import MISSING, chunk_codes

    for v in single:
        cats, size = {v.name: v.matrix.categories}, sizes[v.name]
        z = chunk_codes(released, [v.name], cats, start)[0].astype(np.int64)
        x = np.full(len(z), MISSING, dtype=np.int64) if original is None else \
            chunk_codes(original, [v.name], cats, start)[0].astype(np.int64)
        x[x == MISSING], z[z == MISSING] = size - 1, size - 1
        pairs[v.name] += np.bincount(x * size + z, minlength=size * size)


#: ``attrs`` of a frame :func:`_load` read from a file: its text columns read as categoricals.
_CODED = "pramkit.report.text_as_codes"


def _observed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the categories no record holds dropped from its text columns read as categoricals
    (:func:`_load`): a category of text is one that occurs.  A frame given as it is stays as it is."""
    for c in frame.attrs.get(_CODED, ()):
        frame[c] = frame[c].cat.remove_unused_categories()
    return frame


def _same_values(a: pd.Series, b: pd.Series) -> bool:
    """Whether two columns hold the same values, row by row (two categoricals by their values, whatever
    the order of their categories, as two files read as categoricals give them)."""
    if isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype):
        union = a.cat.categories.union(b.cat.categories)
        return bool(np.array_equal(a.cat.set_categories(union).cat.codes.to_numpy(),
                                   b.cat.set_categories(union).cat.codes.to_numpy()))
    return a.reset_index(drop=True).equals(b.reset_index(drop=True))


def _complete_keys(original: pd.DataFrame, released: pd.DataFrame,
                   keys: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The records with every key present in both files (the risk compares the same records)."""
    keep = (original[list(keys)].notna().all(axis=1).to_numpy() & released[list(keys)].notna().all(axis=1).to_numpy())
    dropped = int((~keep).sum())
    if not dropped:
        return original, released, "every record has all keys"
    return (_observed(original[keep].reset_index(drop=True)), _observed(released[keep].reset_index(drop=True)),
            f"{dropped:,} record(s) with a missing key in either file are left out of both")


def build_report(
    data: pd.DataFrame | str | Path,
    manifest: Manifest | str | Path,
    released: pd.DataFrame | str | Path,
    keys: Sequence[str],
    *,
    sampling_fraction: float | None = None,
    weights: str | Sequence[float] | None = None,
    model: str = "2way",
    recognition_alpha: float = DEFAULT_RECOGNITION_ALPHA,
    source: str | Path | None = None,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    distances: Any = None,
    within: float | Mapping[str, float] | None = None,
    contributions: bool = False,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    design_record: DesignRecord | Mapping[str, Any] | str | Path | None = None,
    decimal: str = CSV_DECIMAL,
    attack_known: Sequence[str] | None = None,
    attack_key: Any = None,
) -> ReleaseReport:
    """Collect the numbers of a release report.

    Parameters
    ----------
    data : the original file (DataFrame or path)
    manifest : the release manifest (object or path)
    released : the released file (DataFrame or path), one record per original record
    keys : key variables for the disclosure risk (3 to 5 keep it quick on large files)
    sampling_fraction, weights : pi, or sampling weights (a column name present in both
        files, or one value per record); with neither, pi = 0.05 is assumed and the report says so
    model : log-linear model of the risk (see :func:`pramkit.risk.identification.identification_risk`)
    recognition_alpha : threshold at which spontaneous-recognition violations are counted (probability)
    source : the original file, for its SHA-256, when ``data`` is a DataFrame read from it
    quiet : no progress bar
    na_values : texts that mean missing in CSV files besides the empty field (default ``("NA",)``)
    distances : distances between the categories of variables (:func:`distance_specs`; by default
        those the manifest names): their locality is shown, on the exact frequencies and over the
        released records, beside randomized response at the same epsilon
    within : the radius of the share of records "moved at most" (the distances' unit), one or
        ``{variable: radius}``; default: the median distance between nearest categories
    contributions : also what each key variable and level contributes to SUDA, tau1, tau2 and the
        individual risk, before and after PRAM, and the epsilon each variable spends
    sep, encoding : the field separator and character encoding of CSV files (:func:`pramkit.io.csv_dialect`)
        (:func:`pramkit.risk.contributions.release_contributions`; one risk fit per key and level)
    design_record : the private design record of a release designed to a target
        (``pramkit design --target``): a :class:`~pramkit.release.record.DesignRecord`, its JSON
        values or its file. The report then draws the risk-utility map of the budgets the search explored
        (:func:`pramkit.report.rumap.risk_utility_map`); the record must be the one written with
        ``manifest`` (the same matrices and budget) and, when ``data`` is a file, designed from it.
        It is checked before anything else is computed.
    decimal : the decimal mark of the weights of CSV files, ``"."`` (default) or ``","`` (``12,5``;
        :func:`pramkit.io.csv_numbers`: a weight not so written is refused naming its row); categories stay text
    attack_known : the columns an attacker knows of each person: the report then attacks the released file
        (:func:`attack_figures`: reconstruction against the margins alone, the Bayes ceiling of each perturbed
        column, linkage, and the most exposed records); the columns must be in both files (checked first)
    attack_key : the key of the attack's linkage holdout half (default a fresh one)

    Returns
    -------
    ReleaseReport
        The internal report (``public`` False): it is computed from the original file, so it
        stays with the data holder.

    Raises
    ------
    ParameterError
        If no key is given, both ``sampling_fraction`` and ``weights`` are, ``data`` or
        ``released`` is neither a DataFrame nor a path, ``distances`` or ``within`` name
        variables without distances, or given distances are not those the design used
        (and as :func:`pramkit.risk.identification.identification_risk`).
    DataError
        If a column is missing, the two files have different numbers of records, or the
        "release" equals the original in every perturbed column (at least
        :data:`MIN_RECORDS_IDENTICAL` records) (and as
        :func:`pramkit.risk.identification.identification_risk`); or ``design_record`` is
        missing, not a design record, without a target, or another manifest's or file's.
    MissingExtraError
        matplotlib (the ``report`` extra), which draws the report's figures, is not installed;
        checked before any work.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.engine.perturb import perturb_frame
    >>> original = pd.DataFrame({"sex": ["f", "m"] * 100, "age": ["young", "old", "old", "young"] * 50})
    >>> original.loc[0, "age"] = "100+"                     # one record unique on the keys
    >>> manifest = Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("f", "m"))})
    >>> released = perturb_frame(original, manifest, key=bytes(32)).data
    >>> report = build_report(original, manifest, released, ["sex", "age"], sampling_fraction=0.1)
    >>> report.public, report.records, report.risk.before.sample_uniques, report.risk.after is not None
    (False, 200, 1, True)
    >>> [u.name for u in report.utility], report.utility[0].frequencies["original"].tolist()
    (['sex'], [50.0, 50.0])

    The original file itself is refused as a release:

    >>> build_report(original, manifest, original, ["sex", "age"])
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: the released file is identical to the original in every perturbed column (sex): pass the file that `pramkit apply` wrote as the release
    """
    require_extra("report", REPORT)
    keys = list(keys)
    if not keys:
        raise ParameterError("name at least one key variable")
    manifest, original_path, original_sha256, rumap = _manifest_and_map(data, manifest, source, design_record)
    located = _locate(manifest, distances, within)
    single = [v for v in manifest.variables if not v.is_joint]
    weight = weights if isinstance(weights, str) else None  # the estimates weighted as the risk is
    reading: dict[str, Any] = {"na_values": na_values, "sep": sep, "encoding": encoding, "decimal": decimal}
    if attack_known is not None:
        _check_attack_known(data, released, attack_known, reading)
    seconds: dict[str, float] = {}
    steps = ("read", "risk before", "risk after", "recognition", "utility")
    with progress(total=len(steps), desc="report", unit="step", quiet=quiet) as bar:
        with _step(seconds, "read", bar):
            read = _read_both(data, released, manifest, keys, single, weights, contributions, reading)
        pi, note = _sampling(sampling_fraction, weights)
        risk_original, risk_release, recognition_original = _risk_sources(data, released, weights, read)
        with _step(seconds, "risk before", bar):
            before = identification_risk(risk_original, keys, sampling_fraction=pi, weights=weights, model=model,
                                         **reading)
        with _step(seconds, "risk after", bar):
            after, after_note = _risk_after(risk_release, keys, manifest, risk_original, pi, weights, model, reading)
        with _step(seconds, "recognition", bar):
            recognition = _recognition(recognition_original, keys, manifest, recognition_alpha, **reading)
        with _step(seconds, "utility", bar):
            utility, locality = _internal_utility(read, manifest, single, located, weight, decimal)
    explained = None
    if contributions:
        with _step(seconds, "contributions"):
            explained = _explained(read, keys, manifest, weight, model, before, decimal)
    attacked = None
    if attack_known is not None:
        with _step(seconds, "attack"):
            attacked = attack_figures(*_attack_frames(data, released, reading), attack_known, manifest, key=attack_key)
    released_path = released if isinstance(released, (str, Path)) else None
    files = _file_provenance(
        manifest, None if original_path is None else str(original_path),
        None if original_path is None else original_sha256 or sha256_of(original_path),
        released_path, None if released_path is None else str(released_path))
    risk = DisclosureRisk(
        keys=tuple(keys), sampling_fraction=before.sampling_fraction, sampling_note=f"{note}; {read.complete_note}",
        before=RiskFigures.of(before), after=after, after_note=after_note, recognition=recognition,
    )
    stated = released_guarantee(manifest, released, sep=sep, encoding=encoding)
    return _release_report(
        manifest, stated, released_path, files, public=False, utility=utility,
        utility_note=_utility_note(manifest, weight, " (frequencies and curves are per single column)"),
        seconds=seconds, records=read.records, locality=locality, risk=risk, contributions=explained,
        risk_utility_map=rumap, attack=attacked)


@contextmanager
def _step(seconds: dict[str, float], name: str, bar: Any = None) -> Iterator[None]:
    """Time the block as the step ``name`` of ``seconds`` (seconds) and advance ``bar`` when it ends.

    Parameters
    ----------
    seconds : dict
        The time of each step (added to).
    name : str
        The step.
    bar : tqdm, optional
        The progress bar (:func:`pramkit.progress.progress`); None: none.

    Yields
    ------
    None
        A block that raises records no time.
    """
    t0 = time.perf_counter()
    yield
    seconds[name] = time.perf_counter() - t0
    if bar is not None:
        bar.update()


def _manifest_and_map(data: pd.DataFrame | str | Path, manifest: Manifest | str | Path, source: str | Path | None,
                      design_record: DesignRecord | Mapping[str, Any] | str | Path | None
                      ) -> tuple[Manifest, str | Path | None, str | None, RiskUtilityMap | None]:
    """The manifest (read from its file), the original file, and the risk-utility map of a design record,
    checked against the manifest and the original file before anything else is computed.

    Parameters
    ----------
    data : pandas.DataFrame or str or Path
        The original file (a DataFrame or a path).
    manifest : Manifest or str or Path
        The release manifest (object or path).
    source : str or Path, optional
        The original file when ``data`` is a DataFrame read from it.
    design_record : optional
        As :func:`build_report`.

    Returns
    -------
    manifest : Manifest
    original_path : str or Path or None
        The original file, if known.
    original_sha256 : str or None
        Its SHA-256, computed here for a design record (None otherwise).
    rumap : RiskUtilityMap or None
        The map of the design record (:func:`pramkit.report.rumap.risk_utility_map`).

    Raises
    ------
    DataError
        As :func:`pramkit.report.rumap.risk_utility_map`.
    """
    manifest_name = f"the manifest {str(manifest)!r}" if isinstance(manifest, (str, Path)) else "the manifest"
    if isinstance(manifest, (str, Path)):
        manifest = Manifest.read(manifest)
    original_path = data if isinstance(data, (str, Path)) else source
    if design_record is None:
        return manifest, original_path, None, None
    # checked first: a record of another release is refused before any work
    original_sha256 = None if original_path is None or not Path(original_path).is_file() \
        else sha256_of(original_path)
    rumap = risk_utility_map(design_record, manifest, original_sha256=original_sha256,
                             manifest_name=manifest_name)
    return manifest, original_path, original_sha256, rumap


class _Read(NamedTuple):
    """What the internal report read of both files (:func:`_read_both`): the tables counted chunk by chunk, or
    the records held (those with every key in both files for the risk), or both."""

    paired: _Paired | None                 # the tables of one pass over both files (None: the records are held)
    original: pd.DataFrame | None          # the original records held (the keys only when paired)
    release: pd.DataFrame | None           # the released records held (None when paired)
    risk_original: pd.DataFrame | None     # the original records with every key in both files
    risk_release: pd.DataFrame | None      # the released records with every key in both files
    complete_note: str                     # which records the risk compares
    records: int                           # the records of the released file
    complete: bool                         # every record has every key in both files


def _read_both(data: pd.DataFrame | str | Path, released: pd.DataFrame | str | Path, manifest: Manifest,
               keys: Sequence[str], single: Sequence[PerturbedVariable], weights: str | Sequence[float] | None,
               contributions: bool, reading: Mapping[str, Any]) -> _Read:
    """Both files read and checked: two CSV or Parquet files without weights or contributions counted chunk by
    chunk (:func:`_stream_pairs`; the keys read too when a record lacks one), any others held whole (:func:`_load`).

    Parameters
    ----------
    data, released : pandas.DataFrame or str or Path
        The original and the released file.
    manifest : Manifest
        The release manifest.
    keys : sequence of str
        The key variables.
    single : sequence of PerturbedVariable
        The single-column variables.
    weights : str or sequence of float or None
        As :func:`build_report`.
    contributions : bool
        As :func:`build_report`: the records are held.
    reading : mapping
        ``na_values``, ``sep``, ``encoding`` and ``decimal`` of the files (the weights read with the last).

    Returns
    -------
    _Read

    Raises
    ------
    DataError
        As :func:`build_report` (a column missing, files of different lengths, the original as a release).
    """
    weight_cols = [weights] if isinstance(weights, str) else []
    columns = list(dict.fromkeys([*keys, *(v.name for v in single), *weight_cols]))
    # two files, no weights, no contributions: the figures come from tables counted chunk by chunk
    paired = _stream_pairs(data, released, manifest, keys, single, **reading) if (
        _chunked(data) and _streams(released, weights, manifest) and not contributions) else None
    na_values, sep, encoding = reading["na_values"], reading["sep"], reading["encoding"]
    decimal = reading.get("decimal", CSV_DECIMAL)
    if paired is None:
        original = _load(data, columns, "original data", na_values, sep, encoding, keep=weight_cols, decimal=decimal)
        release = _load(released, columns, "released data", na_values, sep, encoding, keep=weight_cols,
                        decimal=decimal)
        _check_release(original, release, manifest)
        risk_original, risk_release, note = _complete_keys(original, release, keys)
        return _Read(None, original, release, risk_original, risk_release, note, len(release),
                     risk_original is original)
    if paired.missing_key:  # the risk compares the records with every key in both files: those held
        original = _load(data, keys, "original data", na_values, sep, encoding)
        risk_original, risk_release, note = _complete_keys(
            original, _load(released, keys, "released data", na_values, sep, encoding), keys)
        return _Read(paired, original, None, risk_original, risk_release, note, paired.records, False)
    return _Read(paired, None, None, None, None, "every record has all keys", paired.records, True)


def _risk_sources(data: pd.DataFrame | str | Path, released: pd.DataFrame | str | Path,
                  weights: str | Sequence[float] | None, read: _Read) -> tuple[Any, Any, pd.DataFrame | str | Path]:
    """What the risks read: both files, streamed (their key tables counted chunk by chunk), when every record
    has all keys and the weights are in a column; otherwise the records held (:func:`_read_both`).

    Parameters
    ----------
    data, released : pandas.DataFrame or str or Path
        The original and the released file.
    weights : str or sequence of float or None
        As :func:`build_report`.
    read : _Read
        What was read of both files.

    Returns
    -------
    original, released : pandas.DataFrame or str or Path
        The original and the released records of the identification risk (those with every key in both files).
    recognition : pandas.DataFrame or str or Path
        The original records of the recognition risk.
    """
    streams = (isinstance(data, (str, Path)) and isinstance(released, (str, Path)) and read.complete
               and (weights is None or isinstance(weights, str)))
    if streams:
        return data, released, data
    return read.risk_original, read.risk_release, cast("pd.DataFrame", read.original)


def _risk_after(released: Any, keys: Sequence[str], manifest: Manifest, original: Any, pi: float | None,
                weights: str | Sequence[float] | None, model: str,
                reading: Mapping[str, Any]) -> tuple[RiskFigures | None, str]:
    """The disclosure risk after PRAM, or why it is not computed (a key perturbed jointly with other columns).

    Parameters
    ----------
    released, original : pandas.DataFrame or str or Path
        The released and the original records (or their files, streamed).
    keys : sequence of str
        The key variables.
    manifest : Manifest
        The release manifest.
    pi : float or None
        The sampling fraction (None with weights).
    weights : str or sequence of float or None
        The sampling weights.
    model : str
        The log-linear model.
    reading : mapping
        ``na_values``, ``sep`` and ``encoding`` of the files.

    Returns
    -------
    after : RiskFigures or None
        The risk (None when not computed).
    note : str
        Why it is not computed ("" when it is).
    """
    joint = jointly_perturbed(manifest, keys)
    if joint:
        return None, f"not computed: key(s) {joint} are perturbed jointly with other columns"
    return RiskFigures.of(identification_risk(
        released, keys, sampling_fraction=pi, weights=weights, model=model, manifest=manifest, original=original,
        **reading)), ""


def _internal_utility(read: _Read, manifest: Manifest, single: Sequence[PerturbedVariable],
                      located: Sequence[_Located], weight: str | None,
                      decimal: str = CSV_DECIMAL) -> tuple[tuple[VariableUtility, ...], tuple[Locality, ...]]:
    """Each variable's original, released and estimated frequencies and its locality, from the records held
    or the cross-tabs counted (the released file streamed again for each estimate).

    Parameters
    ----------
    read : _Read
        What was read of both files (:func:`_read_both`).
    manifest : Manifest
        The release manifest.
    single : sequence of PerturbedVariable
        The single-column variables.
    located : sequence of _Located
        The variables' distances (:func:`_locate`).
    weight : str or None
        The weight column of the estimates.
    decimal : str
        The decimal mark of its texts.

    Returns
    -------
    utility : tuple of VariableUtility
    locality : tuple of Locality
    """
    if read.paired is None:
        original, release = cast("pd.DataFrame", read.original), cast("pd.DataFrame", read.release)
        estimates = {v.name: estimate_table(release, manifest, v.name, weights=weight, decimal=decimal)
                     for v in single}
        utility = tuple(_utility(original, v, estimates[v.name], decimal) for v in single)
        return utility, _localities(located, lambda v: _private_weights(original, release, v))
    # the released file streamed again for each estimate; the original's figures from the cross-tabs
    pairs = read.paired.pairs
    estimates = _estimates(pairs, manifest, single)
    exact = {v.name: _proportions(pairs[v.name][:-1].sum(axis=1).astype(float), v) for v in single}
    utility = tuple(_utility_of(*exact[v.name], v, estimates[v.name]) for v in single)
    return utility, _localities(located, lambda v: Weights(
        "the exact frequencies of the original file", p=exact[v.name][0], pairs=pairs[v.name][:-1, :-1]))


def _explained(read: _Read, keys: Sequence[str], manifest: Manifest, weight: str | None, model: str,
               before: RiskResult, decimal: str = CSV_DECIMAL) -> ReleaseContributions:
    """What each key variable and level contributes to the risk before and after PRAM (before only when a key
    is perturbed jointly) (:func:`pramkit.risk.contributions.release_contributions`).

    Parameters
    ----------
    read : _Read
        What was read of both files (the records are held: :func:`_read_both` with contributions).
    keys : sequence of str
        The key variables.
    manifest : Manifest
        The release manifest.
    weight : str or None
        The weight column.
    model : str
        The log-linear model.
    before : RiskResult
        The risk before PRAM (its sampling fraction, without weights).
    decimal : str
        The decimal mark of the weights' texts.

    Returns
    -------
    ReleaseContributions
    """
    joint = jointly_perturbed(manifest, keys)
    return release_contributions(cast("pd.DataFrame", read.risk_original), keys,
                                 released=None if joint else read.risk_release,
                                 manifest=None if joint else manifest,  # jointly: before only
                                 weights=weight, model=model, decimal=decimal,
                                 sampling_fraction=None if weight else before.sampling_fraction)


def _file_provenance(manifest: Manifest, original: str | None, original_sha256: str | None,
                     released_path: str | Path | None, released_name: str | None) -> FileProvenance:
    """The files a report was built from (the released file's SHA-256 computed here) and the manifest's input.

    Parameters
    ----------
    manifest : Manifest
        The release manifest.
    original, original_sha256 : str or None
        The original file and its SHA-256 (None in a public report, or without a file).
    released_path : str or Path or None
        The released file (None for a DataFrame).
    released_name : str or None
        The released file as the report names it (a public report: its name only).

    Returns
    -------
    FileProvenance
    """
    return FileProvenance(
        original=original,
        original_sha256=original_sha256,
        released=released_name,
        released_sha256=None if released_path is None else sha256_of(released_path),
        manifest_input=dict(manifest.input),
        manifest_created=manifest.created,
        manifest_version=manifest.pramkit_version,
    )


def _utility_note(manifest: Manifest, weight: str | None, why: str = "") -> str:
    """Which variables the utility section leaves out (the jointly perturbed, ``why``), and how it is weighted.

    Parameters
    ----------
    manifest : Manifest
        The release manifest.
    weight : str or None
        The weight column of the estimates.
    why : str
        Said after the variables left out.

    Returns
    -------
    str
    """
    left_out = [v.name for v in manifest.variables if v.is_joint]
    return " ".join(filter(None, [f"jointly perturbed variable(s) {left_out} are not shown{why}" if left_out else "",
                                  weighted_note(weight)]))


def _release_report(manifest: Manifest, stated: Any, released_path: str | Path | None, files: FileProvenance,
                    **sections: Any) -> ReleaseReport:
    """A report (public or internal) with what both take from the manifest and the released file: the ledger,
    the guarantees, the designs, the structure, the version and the time.

    Parameters
    ----------
    manifest : Manifest
        The release manifest.
    stated : pramkit.ledger.Guarantee
        The release's guarantee (:func:`pramkit.engine.receipt.released_guarantee`).
    released_path : str or Path or None
        The released file's path (None for a DataFrame).
    files : FileProvenance
        The files the report was built from.
    **sections
        The other fields of :class:`ReleaseReport` (``public``, ``risk``, ``utility``, ...).

    Returns
    -------
    ReleaseReport
    """
    return ReleaseReport(
        ledger=_ledger(manifest), record_epsilon=stated.record_epsilon, designs=_designs(manifest), files=files,
        pramkit_version=__version__, created=_now(), guarantee=stated.sentence, ledger_facts=_ledger_facts(manifest),
        structure=structure_facts(manifest), guarantees=report_guarantees(manifest, released_path), stated=stated,
        **sections,
    )


def with_audit(report: ReleaseReport, audit: Any) -> ReleaseReport:
    """The report with an audit section (:func:`pramkit.audit.audit`); a public report takes the
    manifest audit only (the public files), never the release or engine audit.

    Parameters
    ----------
    report : ReleaseReport
        The internal or public report.
    audit : pramkit.audit.AuditResult
        The audit of the same release.

    Returns
    -------
    ReleaseReport

    Raises
    ------
    ParameterError
        A public report given an audit that read the original (the release audit).

    Examples
    --------
    >>> from pramkit.audit import AuditResult, Check
    >>> r = AuditResult(("manifest", "release"), (Check("release", "sex", "transition table", True, "ok"),))
    >>> report = ReleaseReport((), 1.0, None, (), "", (), None, "0", "now", public=True)
    >>> with_audit(report, r)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: a public report shows the manifest audit only (public files); this audit also ran: release
    """
    from pramkit.errors import ParameterError

    private = [a for a in audit.audits if a != "manifest"]
    if report.public and private:
        raise ParameterError("a public report shows the manifest audit only (public files); this audit also ran: "
                             + ", ".join(private))
    return replace(report, audit=audit)


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def structure_facts(manifest: Manifest) -> dict[str, Any]:
    """What the release's structure is, from the manifest alone (public): the edit rules and what
    to do with a record breaking one, and per variable its strata, the values it never changes,
    its household unit and its epsilon given the block; empty without structure.

    Parameters
    ----------
    manifest : Manifest
        The release manifest.

    Returns
    -------
    dict
        ``rules``, ``rule_breaking``, ``variables`` (name, strata, household, unchanged values,
        epsilon given the block, epsilon, whether it is structured), ``released_exactly`` and
        ``record_epsilon_given_structure``;
        ``{}`` for a release without structure.

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.8, 0.8]), PramMatrix.identity(["n/a"])])
    >>> facts = structure_facts(Manifest.of({"job": m}))
    >>> facts["variables"][0]["unchanged"], facts["record_epsilon_given_structure"] == m.block_epsilon
    (['n/a'], True)
    >>> structure_facts(Manifest.of({"sex": PramMatrix([[0.75, 0.25], [0.25, 0.75]])}))
    {}
    """
    declared = manifest.input.get("structure") if isinstance(manifest.input, Mapping) else None
    variables = [{"name": v.name, "strata": list(v.given), "household": v.unit, "unchanged": v.unchanged_values(),
                  "epsilon_given_block": v.block_epsilon, "epsilon": v.epsilon, "structured": v.is_structured}
                 for v in manifest.variables if v.given or v.unit or v.is_structured]
    if not declared and not variables:
        return {}
    declared = declared if isinstance(declared, Mapping) else {}
    return {"rules": declared.get("forbid"), "rule_breaking": declared.get("rule_breaking", "error"),
            "variables": variables, "released_exactly": manifest.released_exactly,
            "record_epsilon_given_structure": manifest.record_epsilon_given_structure}


def _ledger_facts(manifest: Manifest) -> dict[str, Any]:
    if manifest.ledger is None:
        return {"released_exactly_facts": [f.to_dict() for f in manifest.exact_facts]}
    full = manifest.to_dict()["ledger"]
    return {k: full[k] for k in ("record_epsilon_budget", "design_epsilon", "perturbation_epsilon",
                                 "frequencies", "prior", "categories", "data_dependent", "released_exactly_facts")}


def _public_utility(v: PerturbedVariable, estimate: EstimateResult) -> VariableUtility:
    """Released and estimated shares of one variable: computed from the released file only."""
    est = estimate.to_frame()
    released_share = est["released"].to_numpy() / est["released"].sum()
    frequencies = pd.DataFrame({
        "category": list(v.matrix.categories),
        "original": np.full(len(est), np.nan),
        "released": 100 * released_share,
        "estimate": 100 * est["proportion"].to_numpy(),
        "ci_low": 100 * est["proportion_ci_low"].to_numpy(),
        "ci_high": 100 * est["proportion_ci_high"].to_numpy(),
    })
    return VariableUtility(name=v.name, entropy_nats=math.nan, mutual_information_nats=math.nan,
                           frequencies=frequencies, curve=None,
                           curve_note="the public report shows no curve (it would need the original frequencies)")


def build_public_report(
    manifest: Manifest | str | Path,
    released: pd.DataFrame | str | Path,
    *,
    original: pd.DataFrame | str | Path | None = None,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    distances: Any = None,
    within: float | Mapping[str, float] | None = None,
    weights: str | None = None,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    decimal: str = CSV_DECIMAL,
) -> ReleaseReport:
    """The public report: the ledger, the matrices and estimates computed from the released file.

    Nothing in it is computed from the original file, so it may be published beside the
    release and the manifest (docs/privacy.md).

    Parameters
    ----------
    manifest : the release manifest (object or path)
    released : the released file (DataFrame or path)
    original : the original file (DataFrame or path), if at hand: only read to refuse a
        "release" that is the original (as :func:`build_report` does); nothing of it
        enters the report
    quiet : no progress bar
    na_values : texts that mean missing in CSV files besides the empty field (default ``("NA",)``)
    distances, within : as for :func:`build_report`; the locality figures are weighted by the
        design step's noisy counts when the ledger has them, otherwise by the counts estimated
        from the released file (with standard errors): never by the original file
    weights : a sampling weight column of the released file: the estimates are weighted totals and
        shares with design-based standard errors (:mod:`pramkit.estimate.weighted`)
    sep, encoding : the field separator and character encoding of CSV files (:func:`pramkit.io.csv_dialect`)
    decimal : the decimal mark of the weights of CSV files, ``"."`` (default) or ``","`` (as :func:`build_report`)

    Returns
    -------
    ReleaseReport
        The public report (``public`` True, ``risk`` None, no original frequencies).

    Raises
    ------
    DataError
        If a column is missing, or ``original`` is given and the release equals it (as for
        :func:`build_report`).
    ParameterError
        If ``distances`` or ``within`` name variables without distances.
    MissingExtraError
        matplotlib (the ``report`` extra) is not installed (as for :func:`build_report`).

    Examples
    --------
    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.pipeline import design_release
    >>> from pramkit.engine.perturb import perturb_frame
    >>> data = census(5_000)
    >>> m = design_release(data, ["sex"], epsilon=2.0, categories=CENSUS_VARIABLES, rng=random.Random(0))
    >>> released, _ = perturb_frame(data, m)
    >>> r = build_public_report(m, released)
    >>> r.public, r.risk is None, r.records
    (True, True, 5000)
    """
    require_extra("report", REPORT)
    if isinstance(manifest, (str, Path)):
        manifest = Manifest.read(manifest)
    single = [v for v in manifest.variables if not v.is_joint]
    located = _locate(manifest, distances, within)
    with progress(total=1, desc="public report", unit="step", quiet=quiet) as bar:
        t0 = time.perf_counter()
        weight_cols = [] if weights is None else [weights]
        reading: dict[str, Any] = {"na_values": na_values, "sep": sep, "encoding": encoding, "decimal": decimal}
        if _streams(released, weights, manifest) and (original is None or _chunked(original)):
            assert isinstance(released, (str, Path))  # streamed: the estimates' tables counted chunk by chunk
            paired = _stream_pairs(original, released, manifest, [], single, **reading)
            records, estimates = paired.records, _estimates(paired.pairs, manifest, single)
        else:
            release = _load(released, (manifest.columns if original is not None else [v.name for v in single])
                            + weight_cols, "released data", na_values, sep, encoding, keep=weight_cols,
                            decimal=decimal)
            if original is not None:
                _check_release(_load(original, manifest.columns, "original data", na_values, sep, encoding),
                               release, manifest)
            records = len(release)
            estimates = {v.name: estimate_table(release, manifest, v.name, weights=weights, decimal=decimal)
                         for v in single}
        utility = tuple(_public_utility(v, estimates[v.name]) for v in single)
        locality = _localities(located, lambda v: _public_weights(manifest, v, estimates[v.name]))
        bar.update()
    released_path = released if isinstance(released, (str, Path)) else None
    # the released file by its name: no path of the machine is published
    files = _file_provenance(manifest, None, None, released_path,
                             None if released_path is None else Path(released_path).name)
    stated = released_guarantee(manifest, released, sep=sep, encoding=encoding)
    return _release_report(
        manifest, stated, released_path, files, public=True, risk=None, utility=utility,
        utility_note=_utility_note(manifest, weights), seconds={"public report": time.perf_counter() - t0},
        records=records, locality=locality)
