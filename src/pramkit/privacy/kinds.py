"""Guarantee kinds: one entry per privacy model that a PRAM release can state.

A release states one figure per privacy model its matrices satisfy: the **epsilon** of each
variable's matrix (local differential privacy; Shlomo and Skinner 2012, sec. 4), the **metric
epsilon** over public distances (Chatzikokolakis, Andres, Bordenabe and Palamidessi 2013), the
**recognition bound** of a design against spontaneous recognition (Cator, Hensbergen and
Rozenholc, condition C1), the **beta** of a bistochastic matrix (Ruiz and Domingo-Ferrer,
Definition 1) and the **k** of k-anonymity classes (Ruiz and Domingo-Ferrer, eq. 3).  Each is one
:class:`GuaranteeKind` of :data:`GUARANTEE_KINDS`: its name, unit, meaning, how it reads the
figure of one perturbed variable from what the manifest publishes (the matrix, its distances and
its design provenance), and how the figures of several variables combine for the release.  A new
privacy model is one entry: :func:`guarantee_figures` (and so
:attr:`pramkit.ledger.Guarantee.kinds`, ``pramkit inspect`` and the app) finds it there.

A figure is recomputed from the published matrix wherever the model allows, so that a forged
provenance cannot mislead: a beta stated by the design is measured again, a k is counted again.
The recognition bound is the one figure that cannot be: condition (C1) is a statement about the
original file's counts, which the manifest does not publish, so it is the design's stated alpha,
and its words say so (:attr:`GuaranteeFigure.recomputed` is false).

The floors: this module stands on the measures floor (``pramkit.privacy``), below the manifest, so
it reads a :class:`pramkit.manifest.PerturbedVariable` by its attributes and imports nothing above.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

import numpy as np

from pramkit.privacy.epsilon import record_epsilon

#: Largest number of categories of a matrix read as a dense array by a kind (the compact forms are
#: read in O(S) whatever their size).
DENSE_LIMIT = 20_000

#: Largest number of categories of an exponential mechanism stored by its parameters whose beta is read:
#: whether it is bistochastic takes a pass over its S^2 entries (a second of work at a few thousand).
EXPONENTIAL_LIMIT = 2_000

#: Words of a figure that holds among records agreeing on what the release shows exactly (as
#: :data:`pramkit.ledger.GIVEN_STRUCTURE`).
_GIVEN = "given the structure"


@dataclass(frozen=True)
class Reading:
    """A figure as a kind reads it from one variable (or combines it for the release).

    Parameters
    ----------
    value : float
        The figure, in the kind's unit.
    words : str
        The figure as people read it, with its unit (rounded towards the weaker guarantee).
    recomputed : bool
        True when the figure is recomputed from the published matrix (and distances); False when it
        is the design's stated parameter, which the manifest cannot check.

    Examples
    --------
    >>> Reading(0.5, "0.5 per step").recomputed
    True
    """

    value: float
    words: str
    recomputed: bool = True


@dataclass(frozen=True)
class GuaranteeKind:
    """One privacy model a release can state, as one entry of :data:`GUARANTEE_KINDS`.

    Parameters
    ----------
    name : str
        The registry's key (``"metric_epsilon"``).
    label : str
        How a line names the figure (``"metric epsilon"``: ``metric epsilon of age: 0.5 per year``).
    unit : str
        The unit, in words.
    meaning : str
        What the figure guarantees, in one sentence.
    source : str
        Where the figure is read from, in words (the matrix; the matrix and the distances; the
        design's stated parameter).
    read : callable
        ``read(variable) -> Reading or None``: the figure of one
        :class:`pramkit.manifest.PerturbedVariable`, from what the manifest publishes; ``None`` when
        the kind does not apply to it.
    combine : callable or None
        ``combine(readings) -> Reading``: the release's figure from its variables' (epsilon: their
        sum); ``None`` when the figure is stated per variable only.
    release : str
        What the release's figure is, in words (the docs' table).

    Examples
    --------
    >>> kind = GUARANTEE_KINDS["beta"]
    >>> kind.label, kind.unit, kind.combine is None
    ('beta', 'share of the largest entropy rate, log2 S bits (0 to 1)', True)
    """

    name: str
    label: str
    unit: str
    meaning: str
    source: str
    read: Callable[[Any], Reading | None]
    combine: Callable[[Sequence[Reading]], Reading] | None = None
    release: str = "stated per variable"


@dataclass(frozen=True)
class GuaranteeFigure:
    """One figure a release states: of one kind, for one variable or (``variable`` None) the release.

    Parameters
    ----------
    kind : str
        The kind's name (a key of :data:`GUARANTEE_KINDS`).
    variable : str or None
        The perturbed variable; ``None`` for the release's figure (:attr:`GuaranteeKind.combine`).
    value : float
        The figure, in the kind's unit.
    words : str
        The figure as people read it, with its unit.
    recomputed : bool
        Recomputed from the published matrix (True), or the design's stated parameter (False).

    Examples
    --------
    >>> f = GuaranteeFigure("beta", "sex", 0.62, "0.62")
    >>> f.to_dict()
    {'kind': 'beta', 'variable': 'sex', 'value': 0.62, 'words': '0.62', 'recomputed': True}
    >>> GuaranteeFigure("epsilon", None, math.inf, "inf").to_dict()["value"]
    'inf'
    """

    kind: str
    variable: str | None
    value: float
    words: str
    recomputed: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The figure as JSON values (an infinite value as ``"inf"``, as every epsilon is written)."""
        value: float | str = self.value if math.isfinite(self.value) else "inf"
        return {"kind": self.kind, "variable": self.variable, "value": value, "words": self.words,
                "recomputed": self.recomputed}


def shown(value: float, *, up: bool = True) -> str:
    """A figure for people: four significant digits rounded towards the weaker guarantee (``up`` for a
    bound that protects less as it grows, an epsilon; down for beta), ``inf`` spelled out, no
    exponent notation.

    Parameters
    ----------
    value : float
        The figure.
    up : bool
        Round up (default) or down.

    Returns
    -------
    str

    Examples
    --------
    >>> shown(1.23441), shown(0.58171, up=False), shown(math.inf), shown(19999.8), shown(3.0)
    ('1.235', '0.5817', 'inf', '20000', '3')
    """
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    d = Decimal(repr(float(value)))
    rounded = float(d.quantize(Decimal(1).scaleb(d.adjusted() - 3), rounding=ROUND_CEILING if up else ROUND_FLOOR))
    return f"{rounded:.4g}" if abs(rounded) < 1e4 else f"{rounded:.0f}"


# ---------------------------------------------------------------------------------------------------
# epsilon: local differential privacy of each matrix
# ---------------------------------------------------------------------------------------------------

def epsilon_reading(variable: Any) -> Reading:
    """The epsilon of one variable: the stated epsilon of its matrix (the larger of the stored doubles'
    and the realised law's; a derived variable's composed law), computed from the matrix; with
    structure, its epsilon given the structure beside it, in the words of every surface
    (:func:`pramkit.ledger.epsilon_words`).

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable

    Returns
    -------
    Reading

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.manifest import PerturbedVariable
    >>> epsilon_reading(PerturbedVariable("sex", PramMatrix.form8([0.8, 0.8], categories=["f", "m"]))).words
    '1.387'
    """
    eps = float(variable.epsilon)
    if not variable.is_structured:
        return Reading(eps, shown(eps))
    return Reading(eps, f"local {shown(eps)}; {shown(float(variable.block_epsilon))} {_GIVEN}")


def summed_epsilon(readings: Sequence[Reading]) -> Reading:
    """The release's epsilon of its perturbation: the variables' sum, rounded outward
    (:func:`pramkit.privacy.epsilon.record_epsilon`); the record epsilon adds the design step.

    Examples
    --------
    >>> summed_epsilon([Reading(1.0, "1"), Reading(0.5, "0.5")]).words
    "1.5 (the variables' sum; the record epsilon adds the design step)"
    """
    total = record_epsilon([r.value for r in readings])
    return Reading(total, f"{shown(total)} (the variables' sum; the record epsilon adds the design step)")


# ---------------------------------------------------------------------------------------------------
# metric epsilon: over the public distances
# ---------------------------------------------------------------------------------------------------

def published_distances(matrix: Any) -> Any:
    """The distances a matrix's metric epsilon is measured against, where the manifest publishes them:
    stored with an exponential mechanism, the category steps of a truncated geometric mechanism, or
    named by the design's provenance (``parameters.distances``) as the category steps (their SHA-256
    is that of the steps); ``None`` otherwise.

    Parameters
    ----------
    matrix : pramkit.PramMatrix

    Returns
    -------
    pramkit.distances.Distances or None

    Examples
    --------
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
    >>> published_distances(truncated_geometric(["a", "b", "c"], 0.5)).unit
    'step'
    """
    from pramkit.distances import ordinal_distances

    if matrix.exponential_distances is not None:
        return matrix.exponential_distances
    if matrix.geometric_rate is not None:
        return ordinal_distances(matrix.categories)
    named = _named_distances(matrix)
    if named is None or named.get("kind") != "ordinal" or named.get("categories") != matrix.size:
        return None
    steps = ordinal_distances(matrix.categories)
    return steps if named.get("sha256") == steps.digest else None


def _named_distances(matrix: Any) -> dict[str, Any] | None:
    named = matrix.provenance.parameters.get("distances")
    return named if isinstance(named, dict) else None


def _stated_metric(matrix: Any) -> float | None:
    """The metric epsilon a design states in its provenance (certificate, or the parameter asked for)."""
    certificate = matrix.provenance.certificate or {}
    stated = [certificate.get(k) for k in ("metric_epsilon_stored", "metric_epsilon_realised")]
    stated.append(matrix.provenance.parameters.get("metric_epsilon"))
    numbers = [float(x) for x in stated if isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0]
    return max(numbers) if numbers else None


def metric_reading(variable: Any) -> Reading | None:
    """The metric epsilon of one variable, per unit of its published distances: the larger of the stored
    matrix's and the realised law's (:func:`pramkit.privacy.metric.metric_epsilon`,
    :func:`~pramkit.privacy.metric.realised_metric_epsilon`), recomputed; where the design names
    distances the manifest does not publish (a table read from a file: only its SHA-256), the design's
    stated figure, said to be stated.  ``None`` for a variable without distances.

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable

    Returns
    -------
    Reading or None

    Examples
    --------
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
    >>> from pramkit.manifest import PerturbedVariable
    >>> metric_reading(PerturbedVariable("age", truncated_geometric(["0-17", "18-64", "65+"], 0.5))).words
    '0.5 per step'
    """
    from pramkit.privacy.metric import metric_epsilon

    own = [m for m in (variable.matrix, variable.applied_to) if m is not None]
    distances = next((d for d in map(published_distances, own) if d is not None), None)
    matrix = variable.release_matrix
    if distances is None and variable.applied_to is None and matrix.blocks is not None and len(matrix.blocks) > 1:
        return _blocks_metric_reading(matrix) or _stated_metric_reading(variable.matrix)
    if distances is None:
        return _stated_metric_reading(variable.matrix)
    if distances.size != matrix.size:
        return None
    if variable.applied_to is None:
        value = measured_metric(matrix, distances)
    else:  # a derived variable: the composed law, from the product's doubles
        value = metric_epsilon(matrix.matrix, distances).value
    if value is None:  # too many triples to check: what the design states
        return _stated_metric_reading(variable.matrix)
    return Reading(value, f"{shown(value)} per {distances.unit}")


def measured_metric(matrix: Any, distances: Any) -> float | None:
    """The metric epsilon of a matrix over distances: the larger of the stored doubles' and the law the
    engine realises (as a variable's epsilon is); ``None`` when either was not checked (too many triples).

    Parameters
    ----------
    matrix : pramkit.PramMatrix
    distances : pramkit.distances.Distances

    Returns
    -------
    float or None

    Examples
    --------
    >>> from pramkit.design.metric.mechanisms import truncated_geometric
    >>> from pramkit.distances import ordinal_distances
    >>> measured_metric(truncated_geometric("abc", 0.5), ordinal_distances("abc"))
    0.5
    """
    from pramkit.privacy.metric import metric_epsilon, realised_metric_epsilon

    values = [metric_epsilon(matrix, distances).value, realised_metric_epsilon(matrix, distances)]
    return None if any(v is None for v in values) else max(float(v) for v in values if v is not None)


def _blocks_metric_reading(matrix: Any) -> Reading | None:
    """A block-diagonal matrix (strata) whose blocks publish their distances: the largest block's metric
    epsilon, which holds given the structure (values of two blocks are told apart)."""
    found = [(part, published_distances(part)) for _, part in matrix.blocks if part.size > 1]
    if not found or any(d is None or d.size != part.size for part, d in found):
        return None
    values = [measured_metric(part, d) for part, d in found]
    if any(v is None for v in values):
        return None
    value = max(float(v) for v in values if v is not None)
    return Reading(value, f"{shown(value)} per {found[0][1].unit} {_GIVEN}")


def _stated_metric_reading(matrix: Any) -> Reading | None:
    named, stated = _named_distances(matrix), _stated_metric(matrix)
    if named is None or stated is None:
        return None
    digest = str(named.get("sha256", ""))[:12]
    return Reading(stated, f"{shown(stated)} per {named.get('unit', 'unit of distance')} (as the design states it: "
                           f"the distances, SHA-256 {digest}..., are not published in the manifest)", False)


# ---------------------------------------------------------------------------------------------------
# recognition: the design's alpha against spontaneous recognition
# ---------------------------------------------------------------------------------------------------

def recognition_reading(variable: Any) -> Reading | None:
    """The bound alpha of a design against spontaneous recognition (condition C1), as its provenance
    states it: (C1) is a statement about the original file's counts, which the manifest does not
    publish, so the figure is stated, not recomputed (:attr:`Reading.recomputed` false).  ``None`` for
    another design, or an alpha that is not a probability.

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable

    Returns
    -------
    Reading or None

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.matrix import Provenance
    >>> from pramkit.manifest import PerturbedVariable
    >>> m = PramMatrix.form8([0.9, 0.9], categories=[("a", 1), ("b", 2)],
    ...                      provenance=Provenance("recognition", {"alpha": 0.3}))
    >>> r = recognition_reading(PerturbedVariable("x*y", m, columns=("x", "y")))
    >>> r.value, r.recomputed
    (0.3, False)
    """
    provenance = variable.matrix.provenance
    alpha = provenance.parameters.get("alpha")
    if provenance.method != "recognition" or isinstance(alpha, bool) or not isinstance(alpha, (int, float)) \
            or not 0 < alpha <= 1:
        return None
    return Reading(float(alpha), f"{shown(float(alpha))} (as the design states it: condition C1 depends on the "
                                 "original file's counts, which the manifest does not publish)", False)


# ---------------------------------------------------------------------------------------------------
# beta: bistochastic privacy
# ---------------------------------------------------------------------------------------------------

def _xlogx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def row_entropy_nats(matrix: Any) -> float | None:
    """The sum over rows of each row's entropy, nats (``0 log 0 = 0``), read from the matrix's own
    storage: O(S) for the compact form (8) and for blocks of it, row passes for an exponential
    mechanism, the dense array up to :data:`DENSE_LIMIT` categories; ``None`` beyond.

    Parameters
    ----------
    matrix : pramkit.PramMatrix

    Returns
    -------
    float or None

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> round(row_entropy_nats(PramMatrix.form8([0.5, 0.5], categories=["a", "b"])) / math.log(2), 12)
    2.0
    """
    if matrix.blocks is not None:
        parts = [row_entropy_nats(part) for _, part in matrix.blocks]
        return None if any(p is None for p in parts) else math.fsum(p for p in parts if p is not None)
    if matrix.is_compact:
        q, w = matrix.form8_q, matrix.form8_w
        return -math.fsum((_xlogx(q) + (matrix.size - 1) * _xlogx(w)).tolist())
    if matrix.exponential_rate is not None:
        total = []
        for start in range(0, matrix.size, 1024):
            total.append(-float(_xlogx(matrix.exponential_rows(np.arange(start, min(start + 1024, matrix.size))))
                                .sum()))
        return math.fsum(total)
    if matrix.size > DENSE_LIMIT:
        return None
    return -math.fsum(_xlogx(matrix.matrix).sum(axis=1).tolist())


def _rows_cheap(matrix: Any) -> bool:
    """Whether a matrix's column sums are cheap to read: not an exponential mechanism (stored by its
    parameters, its entries computed row by row) of more than :data:`EXPONENTIAL_LIMIT` categories."""
    if matrix.blocks is not None:
        return all(_rows_cheap(part) for _, part in matrix.blocks)
    return matrix.exponential_rate is None or matrix.size <= EXPONENTIAL_LIMIT


def beta_reading(variable: Any) -> Reading | None:
    """The beta of a bistochastic matrix, ``H(P) / log2 S`` (Ruiz and Domingo-Ferrer, Definition 1:
    the entropy rate, equation 4, over its largest value), recomputed from the released law (a derived
    variable's composed matrix); ``None`` when the matrix is not bistochastic or has one category, or is
    an exponential mechanism of more than :data:`EXPONENTIAL_LIMIT` categories (not read: a pass over its
    S^2 entries).

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable

    Returns
    -------
    Reading or None
        Rounded down (a larger beta protects more).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.manifest import PerturbedVariable
    >>> beta_reading(PerturbedVariable("r", randomized_response(["a", "b", "c"], math.log(8)))).words  # 0.58169..., rounded down
    '0.5816'
    """
    matrix = variable.release_matrix
    if matrix.size < 2 or not _rows_cheap(matrix) or not matrix.is_bistochastic:
        return None
    nats = row_entropy_nats(matrix)
    if nats is None:
        return None
    beta = min(max(nats / (matrix.size * math.log(matrix.size)), 0.0), 1.0)
    return Reading(beta, shown(beta, up=False))


# ---------------------------------------------------------------------------------------------------
# k: classes of equally likely categories (k-anonymity)
# ---------------------------------------------------------------------------------------------------

def _tied_compact(q: np.ndarray, w: np.ndarray) -> int:
    """For a compact form (8) matrix (row i: ``q[i]`` on the diagonal, ``w[i]`` elsewhere): the fewest
    rows that share the largest entry of a column, O(S log S)."""
    s = q.size
    order = np.sort(w)
    top, second = order[-1], order[-2] if s > 1 else -math.inf
    ties_top = int(np.count_nonzero(w == top))
    others = np.where((w == top) & (ties_top == 1), second, top)  # largest w[i] over i != j
    largest = np.maximum(q, others)
    values, counts = np.unique(w, return_counts=True)
    at = np.minimum(np.searchsorted(values, largest), values.size - 1)
    tied = np.where(values[at] == largest, counts[at], 0) - (w == largest) + (q == largest)
    return int(tied[largest > 0].min())


def tied_categories(matrix: Any) -> int | None:
    """The fewest original categories that are equally likely, and most likely, to have given a released
    value: the smallest, over the columns that can be released, of the number of rows holding the
    column's largest entry (exactly equal doubles).  ``None`` beyond :data:`DENSE_LIMIT` categories for
    a matrix stored neither compactly nor by blocks.

    Parameters
    ----------
    matrix : pramkit.PramMatrix

    Returns
    -------
    int or None

    Examples
    --------
    >>> from pramkit.design.bistochastic.families import k_anonymity
    >>> tied_categories(k_anonymity("abcde", 2)), tied_categories(k_anonymity("abcd", 4))
    (2, 4)
    """
    if matrix.blocks is not None:
        parts = [tied_categories(part) for _, part in matrix.blocks]
        return None if any(p is None for p in parts) else min(p for p in parts if p is not None)
    if matrix.is_compact:
        return _tied_compact(np.asarray(matrix.form8_q), np.asarray(matrix.form8_w))
    if matrix.size > DENSE_LIMIT:
        return None
    m = matrix.matrix
    largest = m.max(axis=0)
    tied = (m == largest[None, :]).sum(axis=0)
    return int(tied[largest > 0].min())


def k_reading(variable: Any) -> Reading | None:
    """The k of a k-anonymity design (Ruiz and Domingo-Ferrer, eq. 3): every released value is equally
    likely to have come from at least k original categories, counted again on the released law
    (:func:`tied_categories`), not read from the design's parameters; ``None`` for another design.

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable

    Returns
    -------
    Reading or None

    Examples
    --------
    >>> from pramkit.design.bistochastic.families import k_anonymity
    >>> from pramkit.manifest import PerturbedVariable
    >>> k_reading(PerturbedVariable("x", k_anonymity(list("abcdefg"), 3))).words
    '3 categories'
    """
    provenance = variable.matrix.provenance
    if provenance.method != "k_anonymity" and provenance.parameters.get("block_method") != "k_anonymity":
        return None  # a design of k-anonymity classes (in strata: each stratum's blocks)
    k = tied_categories(variable.release_matrix)
    if k is None:
        return None
    return Reading(float(k), f"{k} {'category' if k == 1 else 'categories'}")


# ---------------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------------

#: Every privacy model a release can state, by name: one entry each (module docstring).
GUARANTEE_KINDS: dict[str, GuaranteeKind] = {
    "epsilon": GuaranteeKind(
        "epsilon", "epsilon", "nats per record",
        "Changing one record's value of the variable changes the probability of each released value by a "
        "factor of at most e^epsilon (local differential privacy of the matrix; Shlomo and Skinner 2012).",
        "recomputed from the matrix (the law the engine draws)", epsilon_reading, summed_epsilon,
        "the variables' sum (the record epsilon adds the design step)"),
    "metric_epsilon": GuaranteeKind(
        "metric_epsilon", "metric epsilon", "nats per unit of the published distances",
        "Two values at distance d are told apart by a factor of at most e^(epsilon d) (metric differential "
        "privacy; Chatzikokolakis, Andres, Bordenabe and Palamidessi 2013).",
        "recomputed from the matrix and the distances the manifest publishes; stated by the design where "
        "they are not published", metric_reading),
    "recognition": GuaranteeKind(
        "recognition", "recognition bound", "probability",
        "No record's posterior of being recognised from its released key combination exceeds alpha "
        "(condition C1 of Cator, Hensbergen and Rozenholc).",
        "stated by the design (it depends on the original file's counts)", recognition_reading),
    "beta": GuaranteeKind(
        "beta", "beta", "share of the largest entropy rate, log2 S bits (0 to 1)",
        "The matrix is bistochastic and its entropy rate is beta times that of perfect secrecy, log2 S bits "
        "(beta-bistochastic privacy; Ruiz and Domingo-Ferrer, Definition 1).",
        "recomputed from the matrix", beta_reading),
    "k": GuaranteeKind(
        "k", "k", "original categories",
        "Every released value is equally likely to have come from at least k original categories "
        "(k-anonymity classes; Ruiz and Domingo-Ferrer, equation 3).",
        "recomputed from the matrix", k_reading),
}


def guarantee_figures(manifest: Any) -> tuple[GuaranteeFigure, ...]:
    """Every figure a release states, kind by kind (in the order of :data:`GUARANTEE_KINDS`): one per
    variable the kind applies to, then the release's where the kind combines them.

    Parameters
    ----------
    manifest : pramkit.Manifest
        The release's manifest (its variables are read, nothing else).

    Returns
    -------
    tuple of GuaranteeFigure

    Examples
    --------
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> [(f.kind, f.variable, f.words) for f in guarantee_figures(m)]  # doctest: +NORMALIZE_WHITESPACE
    [('epsilon', 'sex', '1'), ('epsilon', None, "1 (the variables' sum; the record epsilon adds the design step)"),
     ('beta', 'sex', '0.8399')]
    """
    out: list[GuaranteeFigure] = []
    for kind in GUARANTEE_KINDS.values():
        found = [(v.name, r) for v in manifest.variables if (r := kind.read(v)) is not None]
        out += [GuaranteeFigure(kind.name, name, r.value, r.words, r.recomputed) for name, r in found]
        if found and kind.combine is not None:
            total = kind.combine([r for _, r in found])
            out.append(GuaranteeFigure(kind.name, None, total.value, total.words, total.recomputed))
    return tuple(out)


def kind_lines(figures: Sequence[GuaranteeFigure], *, leave_out: Sequence[str] = ("epsilon",)) -> list[str]:
    """One line per kind among ``figures`` (``beta of roof: 0.5817; of water: 0.62``), the release's figure
    last, leaving out the kinds a surface states already (the epsilon).

    Parameters
    ----------
    figures : sequence of GuaranteeFigure
        :func:`guarantee_figures` (:attr:`pramkit.ledger.Guarantee.kinds`).
    leave_out : sequence of str
        Kinds not written.

    Returns
    -------
    list of str

    Examples
    --------
    >>> kind_lines([GuaranteeFigure("beta", "roof", 0.58, "0.58"), GuaranteeFigure("beta", "water", 0.62, "0.62")])
    ['beta of roof: 0.58; of water: 0.62']
    """
    lines = []
    for name in dict.fromkeys(f.kind for f in figures if f.kind not in leave_out):
        label = GUARANTEE_KINDS[name].label if name in GUARANTEE_KINDS else name.replace("_", " ")
        parts = [f"of {f.variable}: {f.words}" for f in figures if f.kind == name and f.variable is not None]
        parts += [f"of the release: {f.words}" for f in figures if f.kind == name and f.variable is None]
        lines.append(f"{label} {'; '.join(parts)}")
    return lines


def kind_table(kinds: dict[str, GuaranteeKind] | None = None) -> str:
    """The registry as the Markdown table of docs/privacy.md: one row per kind.

    Parameters
    ----------
    kinds : dict, optional
        Default :data:`GUARANTEE_KINDS`.

    Returns
    -------
    str

    Examples
    --------
    >>> print("\\n".join(kind_table().splitlines()[:3]))  # doctest: +ELLIPSIS
    | Kind | Unit | What it guarantees | For the release | Read from |
    |---|---|---|---|---|
    | `epsilon` | nats per record | Changing one record's value ... | the variables' sum ... | recomputed ... |
    """
    rows = ["| Kind | Unit | What it guarantees | For the release | Read from |", "|---|---|---|---|---|"]
    for kind in (GUARANTEE_KINDS if kinds is None else kinds).values():
        rows.append(f"| `{kind.name}` | {kind.unit} | {kind.meaning} | {kind.release} | {kind.source} |")
    return "\n".join(rows)
