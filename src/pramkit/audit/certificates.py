"""A certificate's own numbers, and the proof of a derived (nested) design, re-checked.

A design's certificate states a bound on the optimum, the gap between that bound and what the
design achieves, and whether the gap is within its tolerance.  :func:`figure_checks` holds those
figures to each other, whatever the family:

* an information design (``mutual_information_nats``, maximised): ``upper_bound_nats`` is not below
  the objective, ``information_lower_nats`` (where stated) not above it, and ``certified_gap_nats`` is
  ``max(upper - lower, 0)`` with ``lower`` the stated lower figure (the form (8) design's: the
  objective less its rounding and twice epsilon times its budget adjustment, as docs/design-dp.md
  defines it);
* a loss or distance design (minimised): ``lower_bound`` is not above the objective,
  ``upper_bound`` (where stated) not below it, and ``certified_gap`` is ``max(upper - lower, 0)``
  with ``upper`` the stated upper bound or the objective;
* either way, ``optimal: true`` only with a gap within ``tolerance``.

:func:`nested_bound` re-derives the proof of a derived design (:mod:`pramkit.design.nested`) from
its dual values alone: the vertices of ``{m >= 0, sum m = 1, M1 m within e^epsilon}`` are found
again by brute force (every choice of ``S - 1`` active constraints solved, the feasible
solutions kept), independently of the double description that designed it, and the dual,
repaired by its largest violation, bounds the information of every second step by weak duality.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pramkit.audit.result import Check
from pramkit.matrix import Provenance

#: Largest derived design whose proof is re-derived (``C(S^2, S - 1)`` systems of S equations).
NESTED_CATEGORIES = 5
#: Ulps of the largest figure within which a stated gap equals the recomputed difference.
GAP_ULPS = 16

_MAXIMISED = "mutual_information_nats"


def _num(value: Any) -> float | None:
    """A stated figure as a float (``None`` when it is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _same(a: float, b: float) -> bool:
    """``a`` and ``b`` equal within :data:`GAP_ULPS` ulps of the larger."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= GAP_ULPS * math.ulp(max(abs(a), abs(b), 1e-300))


def _lower_figure(prov: Provenance, cert: Mapping[str, Any], objective: float) -> tuple[float | None, str]:
    """The lower figure a maximising certificate's gap is measured from, and its name."""
    if "information_lower_nats" in cert:
        return _num(cert["information_lower_nats"]), "information_lower_nats"
    if "objective_rounding_nats" in cert:  # the form (8) design: docs/design-dp.md, the certified gap
        rounding = _num(cert["objective_rounding_nats"])
        adjustment = _num(cert.get("budget_adjustment", 0.0))
        eps = _num(prov.parameters.get("epsilon"))
        if rounding is None or adjustment is None or eps is None:
            return None, "objective_rounding_nats"
        return objective - rounding - 2.0 * eps * adjustment, "the objective less its rounding and adjustment"
    return objective, "the objective"


def figure_checks(subject: str, prov: Provenance, prefix: str = "design.certificate") -> list[Check]:
    """A certificate's bounds against its objective and its gap against their difference.

    Parameters
    ----------
    subject : str
        The variable.
    prov : Provenance
        Its design (objective, certificate).
    prefix : str
        The certificate's place in the manifest, for the field names.

    Returns
    -------
    list of Check
        None when the certificate states no bound.

    Examples
    --------
    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> prov = dp_optimal([0.6, 0.3, 0.1], 1.0).provenance
    >>> [(c.field, c.passed) for c in figure_checks("x", prov)]
    [('design.certificate.upper_bound_nats', True), ('design.certificate.certified_gap_nats', True)]
    >>> forged = Provenance(prov.method, prov.parameters, prov.objective, prov.objective_name,
    ...                     {**prov.certificate, "upper_bound_nats": 0.0})
    >>> [(c.field, c.passed) for c in figure_checks("x", forged)]
    [('design.certificate.upper_bound_nats', False), ('design.certificate.certified_gap_nats', False)]
    """
    cert = prov.certificate or {}
    objective = _num(prov.objective)
    maximised = prov.objective_name == _MAXIMISED
    upper_key, gap_key, tol_key = (("upper_bound_nats", "certified_gap_nats", "tolerance_nats") if maximised
                                   else ("upper_bound", "certified_gap", "tolerance"))
    if objective is None or not (upper_key in cert or "lower_bound" in cert) or gap_key not in cert:
        return []
    out = []
    if maximised:
        upper, upper_name = _num(cert[upper_key]), upper_key
        lower, lower_name = _lower_figure(prov, cert, objective)
        bounds = [(upper_key, upper, ">=")]
        if "information_lower_nats" in cert:
            bounds.append(("information_lower_nats", lower, "<="))
    else:
        lower, lower_name = _num(cert.get("lower_bound")), "lower_bound"
        upper, upper_name = (_num(cert[upper_key]), upper_key) if upper_key in cert else (objective, "the objective")
        bounds = [("lower_bound", lower, "<=")]
        if upper_key in cert:
            bounds.append((upper_key, upper, ">="))
    for key, figure, sense in bounds:
        ok = figure is not None and (figure >= objective if sense == ">=" else figure <= objective)
        side = "an upper" if sense == ">=" else "a lower"
        out.append(Check("manifest", subject, f"{prefix}.{key}", ok,
                         f"stated {cert[key]!r} {'is' if ok else 'is not'} {side} bound on the objective "
                         f"{objective!r} ({prov.objective_name})"))
    gap = _num(cert[gap_key])
    if upper is None or lower is None or gap is None:
        out.append(Check("manifest", subject, f"{prefix}.{gap_key}", False,
                         "the gap or a bound it is measured between is not a number"))
        return out
    difference = max(upper - lower, 0.0)
    ok = _same(gap, difference)
    out.append(Check("manifest", subject, f"{prefix}.{gap_key}", ok,
                     f"stated {gap!r}; {upper_name} less {lower_name} is {difference!r}"))
    tolerance = _num(cert.get(tol_key))
    if cert.get("optimal") is True and tolerance is not None and not difference <= tolerance:
        out.append(Check("manifest", subject, f"{prefix}.optimal", False,
                         f"stated optimal, but the gap {difference!r} exceeds the tolerance {tolerance!r}"))
    return out


def utility(p: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``mu(c) = sum_x p_x c_x log(c_x / p . c)`` of each row c of ``columns`` (the information one
    released value carries, summed over a matrix's columns it gives I(X; Z)).

    Examples
    --------
    >>> p = np.array([0.5, 0.5])
    >>> float(utility(p, np.array([[0.75, 0.25], [0.25, 0.75]])).sum()) == 0.75 * math.log(1.5) + 0.25 * math.log(0.5)
    True
    """
    released = columns @ p
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(columns > 0, p[None, :] * columns * np.log(columns / released[:, None]), 0.0)
    return terms.sum(axis=1)


def polytope_vertices(channel: np.ndarray, t: float) -> np.ndarray:
    """Every vertex of ``{m >= 0, sum m = 1 : (channel m)_x <= t (channel m)_x' for all x, x'}``, by brute
    force: each choice of ``S - 1`` inequalities made active, with ``sum m = 1``, solved; the feasible
    solutions kept (a vertex of an S-dimensional polytope has S independent active constraints).

    Examples
    --------
    With the identity as channel, the vertices are the normalised staircase columns ``t^b``, b
    neither all 0 nor all 1 (Kairouz, Oh and Viswanath 2016): six for S = 3.

    >>> v = polytope_vertices(np.eye(3), 2.0)
    >>> len(v), sorted({round(float(x), 6) for x in v.ravel()})
    (6, [0.2, 0.25, 0.4, 0.5])
    """
    s = channel.shape[0]
    rows = [np.eye(s)[j] for j in range(s)]            # m_j >= 0
    rows += [t * channel[y] - channel[x] for x in range(s) for y in range(s) if x != y]
    g = np.array(rows)
    found: list[np.ndarray] = []
    choices = itertools.combinations(range(len(g)), s - 1)
    while len(chunk := np.array(list(itertools.islice(choices, _SYSTEMS_AT_ONCE)), dtype=np.intp).reshape(-1, s - 1)):
        # the systems of a chunk solved as one stack (LAPACK solves each as it solved it alone)
        systems = np.empty((len(chunk), s, s))
        systems[:, :-1] = g[chunk]
        systems[:, -1] = 1.0
        systems = systems[np.abs(np.linalg.det(systems)) >= 1e-12]
        m = np.linalg.solve(systems, np.broadcast_to(np.eye(s)[-1][:, None], (len(systems), s, 1)))[..., 0]
        for v in m[np.all(m @ g.T >= -1e-12, axis=1)]:  # feasible: every constraint holds
            if not any(np.allclose(v, f, atol=1e-12) for f in found):
                found.append(v)
    return np.array(found)


#: How many systems of :func:`polytope_vertices` are solved as one stack (at S = 5: 12 650 in all).
_SYSTEMS_AT_ONCE = 4096


def nested_bound(p: np.ndarray, channel: np.ndarray, epsilon: float, dual: np.ndarray) -> float:
    """An upper bound on ``I(X; Z)`` of every second step ``M2`` with ``epsilon(channel M2) <= epsilon``,
    from any dual vector: ``sum y + S max(0, max_r mu(channel r) - y . r)`` over the vertices r
    (:func:`polytope_vertices`), each summing to one (weak duality, module docstring).

    Examples
    --------
    With the identity as first step the program is the plain epsilon-DP design; randomized response
    at epsilon log 3 is optimal for a uniform p, and a dual of zeros is repaired into a bound above it:

    >>> p = np.array([0.5, 0.5])
    >>> rr = 0.75 * math.log(1.5) + 0.25 * math.log(0.5)
    >>> nested_bound(p, np.eye(2), math.log(3), np.zeros(2)) >= rr - 1e-15
    True
    """
    s = p.size
    verts = polytope_vertices(channel, math.exp(epsilon))
    violation = float(np.max(utility(p, (channel @ verts.T).T) - verts @ dual))
    return float(dual.sum() + s * max(violation, 0.0))


def nested_checks(subject: str, prov: Provenance, channel: np.ndarray, information: float) -> list[Check]:
    """The proof of a derived design re-derived (:func:`nested_bound`) for at most
    :data:`NESTED_CATEGORIES` categories: the design is within its tolerance of every second step.

    Examples
    --------
    >>> from pramkit.design.nested import derive_matrix
    >>> from pramkit.matrix import PramMatrix
    >>> first = PramMatrix.form8([0.9, 0.9, 0.9], categories=["a", "b", "c"])
    >>> second = derive_matrix(first, [0.5, 0.3, 0.2], 1.0)
    >>> from pramkit.privacy.law import realised_law
    >>> law = realised_law(first)
    >>> channel = law.unit_matrix().astype(float) / law.denominator
    >>> info = float(utility(np.array([0.5, 0.3, 0.2]), (channel @ second.matrix).T).sum())
    >>> [(c.field, c.passed) for c in nested_checks("x", second.provenance, channel, info)]
    [('optimality certificate', True)]
    """
    cert = prov.certificate or {}
    p = np.asarray(prov.parameters.get("p"), dtype=float)
    eps, dual = _num(prov.parameters.get("epsilon")), cert.get("dual_y")
    if (not cert.get("optimal") or eps is None or dual is None or p.size > NESTED_CATEGORIES
            or p.size != channel.shape[0]):
        return []
    bound = nested_bound(p, channel, eps, np.asarray(dual, dtype=float))
    tolerance = (_num(cert.get("tolerance_nats")) or 0.0) + 1e-12 * max(1.0, information)
    proved = bound - information <= tolerance
    return [Check("manifest", subject, "optimality certificate", proved,
                  f"dual bound {bound:.12g} nats over every second step (vertices found again by brute force, "
                  f"weak duality); the design is within {max(bound - information, 0.0):.3g} nats "
                  f"(tolerance {tolerance:.3g})")]
