"""One matrix for a distribution the caller gives: :func:`design_matrix`.

The distribution is the caller's input (a public prior, published margins, a
scenario), so nothing here touches a data file and nothing is charged to a
ledger; the design is any family of :data:`pramkit.design.registry.FAMILIES`
with ``epsilon`` the matrix's own epsilon.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from pramkit.design.methods import DesignMeasures, measure
from pramkit.design.registry import family
from pramkit.errors import ParameterError
from pramkit.ledger import fmt_epsilon
from pramkit.manifest import epsilon_to_json
from pramkit.matrix import Label, PramMatrix


def matrix_json(m: PramMatrix) -> dict[str, Any]:
    """One matrix with its epsilon and provenance, as the design command prints it."""
    prov = m.provenance
    cert = dict(prov.certificate or {})
    return {
        "method": prov.method,
        "categories": [list(c) if isinstance(c, tuple) else c for c in m.categories],
        "q": m.diagonal.tolist(),
        "matrix": m.matrix.tolist(),
        "mutual_information_nats": prov.objective,
        "epsilon": epsilon_to_json(m.epsilon),
        "optimal": bool(cert.get("optimal", False)),
        "certificate": cert,
        "seconds": prov.seconds,
    }


def truthful_warnings(m: PramMatrix) -> list[str]:
    """A warning when a form (8) optimum releases some category as itself less often than 1/S."""
    cert = m.provenance.certificate or {}
    if cert.get("is_truthful", True):
        return []
    low = [m.categories[k] for k in np.flatnonzero(m.diagonal < 1.0 / m.size)]
    return [f"the optimal matrix is not truthful: categories {low} are released as themselves with probability "
            f"below 1/S = {1 / m.size:.4g}, less often than as some other category; truthful=True "
            "(--truthful) requires q_k >= 1/S"]


@dataclass(frozen=True)
class MatrixDesign:
    """A matrix designed for a given distribution.

    matrix: the design, with provenance
    p: the distribution it was designed for (sums to 1)
    measures: epsilon, beta, I(X; Z) and the rest (:func:`pramkit.design.methods.measure`)
    notes, warnings: what the caller should read
    """

    matrix: PramMatrix
    p: np.ndarray
    measures: DesignMeasures
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
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
    m = fam.build(cats, p, epsilon, opts)
    if epsilon is not None and m.epsilon > epsilon:
        raise ParameterError(f"the design's epsilon {fmt_epsilon(m.epsilon)} exceeds {epsilon:g}")
    return MatrixDesign(m, p, measure(m, p), tuple(notes), tuple(truthful_warnings(m)))
