"""One matrix for a distribution the caller gives: :func:`design_matrix`.

The distribution is the caller's input (a public prior, published margins, a
scenario), so nothing here touches a data file and nothing is charged to a
ledger; the design is any family of :data:`pramkit.design.registry.FAMILIES`
with ``epsilon`` the matrix's own epsilon.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pramkit.design.measures import DesignMeasures, measure
from pramkit.design.registry import family
from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.ledger import fmt_epsilon
from pramkit.manifest import epsilon_to_json
from pramkit.matrix import PramMatrix


def matrix_json(m: PramMatrix) -> dict[str, Any]:
    """One matrix with its epsilon and provenance, as the design command prints it.

    Parameters
    ----------
    m : PramMatrix
        The designed matrix.

    Returns
    -------
    dict
        ``method``, the diagonal ``q``, the matrix as :meth:`pramkit.PramMatrix.to_dict` writes
        it (``categories``, ``form`` and its entries: ``matrix`` for ``"dense"``, form (8)'s
        ``w`` for ``"diagonal"``, ...) with, for a compact form of at most
        :data:`MAX_DENSE_JSON` categories, the dense ``matrix`` too, ``mutual_information_nats`` (the
        design's objective), ``epsilon``, ``optimal``, ``certificate`` and ``seconds``:
        JSON-serialisable.

    Examples
    --------
    >>> import json
    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> out = matrix_json(dp_optimal([0.5, 0.3, 0.2], 1.0, categories=["a", "b", "c"]))
    >>> out["method"], out["categories"], out["form"], out["optimal"], out["epsilon"] <= 1.0
    ('dp_optimal', ['a', 'b', 'c'], 'diagonal', True, True)
    >>> all(math.isclose(w, (1 - q) / 2) for q, w in zip(out["q"], out["w"]))     # form (8)
    True
    >>> json.loads(json.dumps(out))["categories"]
    ['a', 'b', 'c']
    """
    prov = m.provenance
    cert = dict(prov.certificate or {})
    entries = {k: v for k, v in m.to_dict(dense_up_to=MAX_DENSE_JSON).items() if k != "design"}
    return {
        "method": prov.method,
        "q": m.diagonal.tolist(),
        **entries,
        "mutual_information_nats": prov.objective,
        "epsilon": epsilon_to_json(m.epsilon),
        "optimal": bool(cert.get("optimal", False)),
        "certificate": cert,
        "seconds": prov.seconds,
    }


#: Largest compact matrix whose dense entries the design output also lists.
MAX_DENSE_JSON = 2048


def truthful_warnings(m: PramMatrix) -> list[str]:
    """A warning when a form (8) optimum releases some category as itself less often than 1/S.

    Ayed, Battiston and Camerlenghi's program (7) does not ask ``q_k >= 1/S``, so at small
    epsilon its optimum can release a rare category as some other one more often than as
    itself.

    Parameters
    ----------
    m : PramMatrix
        The designed matrix (its certificate's ``is_truthful`` is read; a matrix without
        one gets no warning).

    Returns
    -------
    list of str
        Empty, or one sentence naming the categories with ``q_k < 1/S``.

    Examples
    --------
    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> m = dp_optimal([0.7, 0.15, 0.15], 0.5, categories=["owner", "renter", "other"])
    >>> print(truthful_warnings(m)[0])  # doctest: +NORMALIZE_WHITESPACE
    the optimal matrix is not truthful: categories ['renter', 'other'] are released as themselves with
    probability below 1/S = 0.3333, less often than as some other category; truthful=True (--truthful)
    requires q_k >= 1/S
    >>> t = dp_optimal([0.7, 0.15, 0.15], 0.5, categories=["owner", "renter", "other"], truthful=True)
    >>> truthful_warnings(t), t.provenance.objective < m.provenance.objective     # truthful costs information
    ([], True)
    """
    cert = m.provenance.certificate or {}
    if cert.get("is_truthful", True):
        return []
    low = [m.categories[k] for k in np.flatnonzero(m.diagonal < 1.0 / m.size)]
    return [f"the optimal matrix is not truthful: categories {low} are released as themselves with probability "
            f"below 1/S = {1 / m.size:.4g}, less often than as some other category; truthful=True "
            "(--truthful) requires q_k >= 1/S"]


#: Largest dense matrix (or dense block of a block-diagonal matrix) whose estimability
#: :func:`estimability_warnings` checks with an SVD (O(S^3): about 1.5 s at S = 2048); compact
#: matrices and blocks are checked in O(S) whatever their size
#: (:func:`pramkit.estimate.identifiability.estimability`).
MAX_ESTIMABILITY_CATEGORIES = 2048

#: What a warning of :func:`estimability_warnings` recommends.
VARIANCE_REMEDY = ("to avoid this, design with the variance-minimising objective (objective 'variance', "
                   "--objective variance of --method dp), whose matrix is always invertible")


def estimability_warnings(m: PramMatrix) -> list[str]:
    """A warning when the unbiased estimator cannot use the matrix: singular or ill-conditioned.

    The unbiased (moment) estimator ``(M^T)^{-1} lambda_hat`` of the original
    frequencies needs M invertible, and is useless when M is nearly singular
    (its errors are amplified by up to the condition number).  The
    information-maximising DP design can be singular (sdcMicro's ``walls`` at
    epsilon 1 gives two identical uniform rows).  For such a matrix the
    warning is one sentence: which categories cannot be told apart (or the
    condition number), what follows for estimation (``pramkit estimate``
    falls back to maximum likelihood of the identifiable totals) and the
    remedy, the variance-minimising objective
    (:func:`pramkit.design.dp.variance.dp_min_variance`, randomized response:
    always invertible).

    Parameters
    ----------
    m : PramMatrix
        The designed matrix (the estimator is estimator (4) of Cator, Hensbergen and Rozenholc).

    Returns
    -------
    list of str
        Empty when M is well conditioned (2-norm condition number at most
        :data:`pramkit.estimate.identifiability.MAX_CONDITION`), else one sentence.
        The check is :func:`pramkit.estimate.identifiability.estimability`:
        exact, and O(S) for a compact matrix of form (8) (the matrix
        determinant lemma for singularity, an exact count of the singular
        values below a bound for the condition number), block by block for
        a block-diagonal matrix, by the SVD for a dense one.  A dense matrix
        (or dense block) above :data:`MAX_ESTIMABILITY_CATEGORIES` categories
        is not decomposed; the sentence then says so.

    Examples
    --------
    >>> third = 1 / 3
    >>> m = PramMatrix([[third, third, third], [0.1, 0.8, 0.1], [third, third, third]], ("a", "b", "c"))
    >>> print(estimability_warnings(m)[0])  # doctest: +NORMALIZE_WHITESPACE
    the matrix is singular (rank 2 of 3): categories a and c have identical rows, so the unbiased estimator
    cannot separate their counts and `pramkit estimate` falls back to maximum likelihood of the identifiable
    totals (the total of a and c, and the count of b); to avoid this, design with the variance-minimising
    objective (objective 'variance', --objective variance of --method dp), whose matrix is always invertible
    >>> estimability_warnings(PramMatrix([[0.75, 0.25], [0.25, 0.75]]))
    []

    A compact matrix is checked whatever its size: 100 000 categories, two of them
    (7 and 11) kept with probability 1/S, hence with identical uniform rows:

    >>> q = np.full(100_000, 0.5)
    >>> q[[7, 11]] = 1e-5
    >>> print(estimability_warnings(PramMatrix.from_diagonal(q))[0])  # doctest: +NORMALIZE_WHITESPACE
    the matrix is singular (rank 99999 of 100000): categories 7 and 11 have identical rows, so the unbiased
    estimator cannot separate their counts and `pramkit estimate` falls back to maximum likelihood of the
    identifiable totals (the total of 7 and 11, and the counts of 0, 1, 2, 3, 4, 5 and 99992 more); to avoid
    this, design with the variance-minimising objective (objective 'variance', --objective variance of
    --method dp), whose matrix is always invertible
    """
    from pramkit.estimate.identifiability import estimability, largest_dense_part, listing

    dense = largest_dense_part(m)
    if dense > MAX_ESTIMABILITY_CATEGORIES:
        svd = "an SVD of that size" if dense == m.size else f"the SVD of its {dense}-category dense block"
        return [f"the estimability of this {m.size}-category matrix was not checked ({svd} is slow): "
                "check it with pramkit.estimate.identifiability before relying on the unbiased estimator; "
                f"{VARIANCE_REMEDY}"]
    res = estimability(m)
    if res.status == "identifiable":
        return []
    remedy = ("this is already the variance-minimising DP design (randomized response): only a larger epsilon "
              "helps" if m.provenance.method == "dp_min_variance" else VARIANCE_REMEDY)
    if res.singular:
        named = "; ".join(g.describe() for g in res.groups)
        totals = [listing(g.categories) for g in res.groups]
        alone = list(res.identifiable_categories)
        kept = "the total of " + "; the total of ".join(totals) + (
            (", and the count of " if len(alone) == 1 else ", and the counts of ") + listing(alone) if alone else "")
        return [f"the matrix is singular (rank {res.rank} of {res.size}): {named}, so the unbiased estimator cannot "
                f"separate their counts and `pramkit estimate` falls back to maximum likelihood of the identifiable "
                f"totals ({kept}); {remedy}"]
    named = "; ".join(g.describe(exact=False) for g in res.groups)
    return [f"the matrix is ill-conditioned (condition number {res.condition_number:.3g} > {res.max_condition:g}"
            + (f": {named}" if named else "") + "), so the unbiased estimator would amplify errors by up to that "
            "factor and `pramkit estimate` falls back to maximum likelihood; "
            f"{remedy}"]


@dataclass(frozen=True)
class MatrixDesign:
    """A matrix designed for a given distribution.

    Attributes
    ----------
    matrix : PramMatrix
        The design, with provenance.
    p : numpy.ndarray
        The distribution it was designed for (sums to 1).
    measures : DesignMeasures
        epsilon, beta, I(X; Z) and the rest (:func:`pramkit.design.measures.measure`).
    notes, warnings : tuple of str
        What the caller should read.

    Examples
    --------
    >>> d = design_matrix([50, 30, 20], shares=False, epsilon=1.0, categories=["a", "b", "c"])
    >>> d.p.tolist(), d.matrix.provenance.method, d.notes, d.warnings
    ([0.5, 0.3, 0.2], 'dp_optimal', (), ())
    >>> d.measures.epsilon <= 1.0, math.isclose(d.measures.mutual_information_nats, d.matrix.provenance.objective)
    (True, True)
    """

    matrix: PramMatrix
    p: np.ndarray
    measures: DesignMeasures
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """:func:`matrix_json` with the notes and warnings, as the design command prints it.

        Returns
        -------
        dict
            For a design whose objective is not I(X; Z) (e.g. randomized response), also
            ``measures`` (:func:`pramkit.design.measures.measure`), and
            ``mutual_information_nats`` is the measured I(X; Z).

        Examples
        --------
        >>> rr = design_matrix([0.5, 0.3, 0.2], method="rr", epsilon=1.0).to_dict()
        >>> rr["method"], rr["notes"], rr["warnings"], rr["measures"]["truthful"], rr["measures"]["bistochastic"]
        ('randomized_response', [], [], True, True)
        >>> dp = design_matrix([0.5, 0.3, 0.2], epsilon=1.0).to_dict()
        >>> "measures" in dp                                      # its objective is I(X; Z) already
        False
        >>> math.isclose(rr["mutual_information_nats"], dp["mutual_information_nats"])   # here the optimum is RR
        True
        """
        out = {**matrix_json(self.matrix), "notes": list(self.notes), "warnings": list(self.warnings)}
        if self.matrix.provenance.objective_name != "mutual_information_nats":
            out["measures"] = dataclasses.asdict(self.measures)
            out["mutual_information_nats"] = self.measures.mutual_information_nats
        return out


def design_matrix(
    values: Sequence[float],
    *,
    method: str = "dp",
    epsilon: float | None = None,
    options: Mapping[str, Any] | None = None,
    categories: Sequence[Label] | None = None,
    shares: bool = True,
    shares_tol: float = 1e-6,
) -> MatrixDesign:
    """Design one matrix of a family for the distribution ``values``.

    Parameters
    ----------
    values : sequence of float
        Probabilities (``shares=True``: must sum to 1 within ``shares_tol``, normalised with a
        note) or counts (``shares=False``: normalised).
    method : str
        A family of :data:`pramkit.design.registry.FAMILIES`.
    epsilon : float, optional
        The matrix's epsilon, for families designed to one (dp, rr).
    options : mapping, optional
        The family's parameters.
    categories : sequence, optional
        Labels (default 0..S-1).
    shares : bool
        Whether ``values`` are probabilities (else counts).
    shares_tol : float
        How far probabilities may sum from 1.

    Returns
    -------
    MatrixDesign
        The matrix, its measures for p, notes (e.g. normalisation) and warnings
        (:func:`truthful_warnings`, :func:`estimability_warnings`).

    Raises
    ------
    ParameterError
        If ``values`` has fewer than two entries, is negative or not finite, does not sum to
        1 (``shares``) or is all zero, the categories differ in number, epsilon is missing
        for a family designed to one (or given for one that fixes its own), or the design's
        epsilon exceeds ``epsilon``.

    Examples
    --------
    >>> d = design_matrix([0.5, 0.3, 0.2], epsilon=1.0)
    >>> d.matrix.epsilon <= 1.0, d.matrix.provenance.method
    (True, 'dp_optimal')
    """
    p = np.asarray(values, dtype=float)
    flag = "--probs" if shares else "--counts"
    if p.ndim != 1 or p.size < 2:
        raise ParameterError(f"{flag} needs at least two categories")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ParameterError(f"{flag} must be finite and non-negative")
    notes = []
    total = math.fsum(p)
    if shares:
        if abs(total - 1.0) > shares_tol:
            raise ParameterError(f"{flag} sum to {total:.10g}, not 1; pass counts to have them normalised")
        if total != 1.0:
            notes.append(f"{flag} summed to {total!r}; normalised to 1")
    elif total <= 0:
        raise ParameterError(f"{flag} are all zero")
    p = p / total
    cats: list[Label] = list(range(p.size)) if categories is None else list(categories)
    if len(cats) != p.size:
        raise ParameterError(f"--categories has {len(cats)} labels for {p.size} probabilities")
    fam = family(method)
    opts = dict(options or {})
    if fam.takes_budget(opts) and epsilon is None:
        raise ParameterError(f"--method {method} needs --epsilon (the matrix's epsilon)")
    if not fam.takes_budget(opts) and epsilon is not None:
        raise ParameterError(f"--method {method} fixes epsilon by its own parameters; leave out --epsilon")
    m = fam.build(cats, p, epsilon, opts, public_p=True)
    if epsilon is not None and m.epsilon > epsilon:
        raise ParameterError(f"the design's epsilon {fmt_epsilon(m.epsilon)} exceeds {epsilon:g}")
    return MatrixDesign(m, p, measure(m, p), tuple(notes), tuple(truthful_warnings(m) + estimability_warnings(m)))
