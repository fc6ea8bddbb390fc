"""The manifest audit: every stated number of a manifest recomputed from the public files only.

Nothing here reads the original data.  The audit recomputes, independently of the code that
wrote the manifest:

* each variable's epsilon (and its epsilon given the block) in exact rational arithmetic: the
  largest ratio ``max_k M[k, j] / min_k M[k, j]`` of the stored doubles and of the integer law
  the engine realises (:func:`pramkit.privacy.law.realised_law`), as fractions; a stated epsilon
  holds when ``e^epsilon``, rounded down at 60 digits, is not below that ratio;
* the ledger's composition: the design step's epsilon against the sum of its DP histograms', the
  perturbation's against the sum of the variables', the record's against both, and the budget,
  all as exact sums of the stored doubles;
* the design's proportions against the noisy counts published in the ledger (floored at one
  count and normalised, exactly);
* the certificates: the stated mutual information recomputed from p and M; for a general
  epsilon-DP design the upper bound of the staircase linear program (Kairouz, Oh and Viswanath
  2016) recomputed from the certificate's dual values by weak duality; for a form (8) design of
  at most :data:`CERTIFIED_CATEGORIES` categories the optimum found again by scoring every
  arrangement of every vertex (:func:`form8_optimum`); either proves the design within the
  certificate's tolerance of the optimum;
* with the released file, its receipt: the file's SHA-256, its rows and the manifest's SHA-256.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from pramkit._json import read_json
from pramkit.audit.invariance import invariance_checks, noisy_proportions
from pramkit.audit.ratios import (
    COMPOSED_CATEGORIES,
    DENSE_CATEGORIES,
    _epsilon_check,
    block_ratio,
    composed_ratio,
    exact_ratio,
    stated_epsilon,
)
from pramkit.audit.result import Check
from pramkit.errors import DataError, ManifestError
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import JSONValue, PramMatrix, Provenance
from pramkit.privacy.law import realised_law

#: Largest design whose certificate is re-proved (2^S staircase patterns; S (S - 1) 2^(S - 2) arrangements).
CERTIFIED_CATEGORIES = 12
#: Relative slack of a recomputed floating-point figure (mutual information, proportions).
FLOAT_RTOL = 1e-9
_EPSILON_KEYS = ("epsilon", "epsilon_given_block")
_TOTAL_KEYS = ("record_epsilon", "perturbation_epsilon", "record_epsilon_given_structure")


def read_manifest(path: str | Path) -> tuple[Manifest, dict[str, Any]]:
    """The manifest's matrices, and its raw JSON with every stated figure as written.

    The stated epsilons are set aside before the matrices are read, so that a manifest whose
    stated figures disagree with its matrices is audited (and fails) rather than refused.

    Parameters
    ----------
    path : str or pathlib.Path
        The manifest file.

    Returns
    -------
    (Manifest, dict)

    Raises
    ------
    ManifestError
        The file is not a manifest (missing, not JSON, a malformed matrix).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     raw = json.loads(Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).to_json())
    ...     raw["variables"][0]["epsilon"] = 0.5                      # understated
    ...     path = pathlib.Path(d) / "m.json"
    ...     _ = path.write_text(json.dumps(raw))
    ...     manifest, stated = read_manifest(path)
    >>> manifest["sex"].epsilon > stated["variables"][0]["epsilon"]
    True
    """
    p = Path(path)
    if not p.is_file():
        raise ManifestError(f"manifest {str(p)!r} does not exist or is not a file")
    raw = read_raw_manifest(p)
    return bare_manifest(raw), raw


def read_raw_manifest(path: Path) -> dict[str, Any]:
    """A manifest's JSON, as written (an object with a list of variables).

    Raises
    ------
    ManifestError
        Not JSON, or not a manifest's object.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "m.json").write_text('{"variables": [], "record_epsilon": 0.1}')
    ...     read_raw_manifest(pathlib.Path(d) / "m.json")
    {'variables': [], 'record_epsilon': 0.1}
    """
    raw = read_json(path, f"manifest {str(path)!r}", ManifestError)
    if not isinstance(raw, dict) or not isinstance(raw.get("variables"), list):
        raise ManifestError(f"{str(path)!r} is not a pramkit manifest (no list of variables)")
    return raw


def bare_manifest(raw: Mapping[str, Any]) -> Manifest:
    """The manifest's matrices, read with its stated epsilons set aside (so that they are recomputed).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> import json
    >>> raw = json.loads(Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).to_json())
    >>> raw["record_epsilon"] = 0.1
    >>> round(bare_manifest(raw).record_epsilon, 12)
    1.0
    """
    bare = copy.deepcopy(dict(raw))
    for key in _TOTAL_KEYS:
        bare.pop(key, None)
        if isinstance(bare.get("ledger"), dict):
            bare["ledger"].pop(key, None)
    for v in bare.get("variables") or []:
        if isinstance(v, dict):
            for key in _EPSILON_KEYS:
                v.pop(key, None)
    return Manifest.from_dict(bare)


def _fraction(value: Any) -> Fraction | float | None:
    eps = stated_epsilon(value)
    return None if eps is None else (math.inf if math.isinf(eps) else Fraction(eps))


def _sum_check(subject: str, field: str, value: Any, parts: list[Any], words: str) -> Check:
    """A stated total against the exact sum of its stated parts (it must not be below it)."""
    total, terms = _fraction(value), [_fraction(p) for p in parts]
    known = [t for t in terms if t is not None]
    if total is None or len(known) < len(terms):
        return Check("manifest", subject, field, False, f"stated {value!r} or one of its parts is not an epsilon")
    exact = math.inf if any(math.isinf(t) for t in known) else sum(known, Fraction(0))
    ok = total >= exact
    return Check("manifest", subject, field, ok,
                 f"stated {float(total):.17g} {'>=' if ok else '<'} {words} {float(exact):.17g} (exact sum)")


def variable_ratios(manifest: Manifest) -> list[tuple[Fraction | float | None, Fraction | float | None]]:
    """Each variable's ``e^epsilon`` and ``e^epsilon`` given its block, exactly (:func:`exact_ratio`,
    :func:`block_ratio`; a derived variable's composed law, :func:`composed_ratio`, for both); ``None``
    where the variable is too large to recompute.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> variable_ratios(Manifest.of({"sex": PramMatrix.form8([0.75, 0.75], categories=["f", "m"])}))
    [(Fraction(3, 1), Fraction(3, 1))]
    """
    out = []
    for v in manifest.variables:
        if v.applied_to is not None:  # derived: its epsilon is the composed law's (and so given the block)
            ratio = composed_ratio(v.applied_to, v.matrix)
            out.append((ratio, ratio))
        else:
            ratio = exact_ratio(v.matrix)
            out.append((ratio, ratio if v.matrix.blocks is None else block_ratio(v.matrix)))
    return out


def epsilon_checks(manifest: Manifest, raw: Mapping[str, Any],
                   ratios: list[tuple[Fraction | float | None, Fraction | float | None]] | None = None) -> list[Check]:
    """Each variable's stated epsilon (and epsilon given the block) against the exact one
    (``ratios``: :func:`variable_ratios`, computed here when not given).

    Examples
    --------
    >>> import json
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> [c.passed for c in epsilon_checks(m, json.loads(m.to_json()))]
    [True]
    """
    out = []
    for v, entry, (ratio, block) in zip(manifest.variables, raw["variables"], ratios or variable_ratios(manifest)):
        limit = COMPOSED_CATEGORIES if v.applied_to is not None else DENSE_CATEGORIES
        out.append(_epsilon_check(v.name, "epsilon", entry.get("epsilon"), ratio, limit))
        if "epsilon_given_block" in entry:
            out.append(_epsilon_check(v.name, "epsilon given the block", entry["epsilon_given_block"], block, limit))
    return out


def ledger_checks(raw: Mapping[str, Any]) -> list[Check]:
    """The ledger's composition from the stated numbers: design step, perturbation, record, budget.

    Examples
    --------
    >>> import json
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0), "age": randomized_response([1, 2], 1.0)})
    >>> [(c.field, c.passed) for c in ledger_checks(json.loads(m.to_json()))]
    [('perturbation epsilon', True), ('record epsilon', True)]
    """
    ledger: Mapping[str, Any] = raw["ledger"] if isinstance(raw.get("ledger"), dict) else {}
    given = bool(ledger.get("record_epsilon_is_given_structure"))
    plain = [v.get("epsilon") for v in raw["variables"]]
    blocked = [v.get("epsilon_given_block", v.get("epsilon")) for v in raw["variables"]]
    design = ledger.get("design_epsilon", 0.0)
    out = []
    counts = ledger.get("dp_counts") or {}
    if counts:
        out.append(_sum_check("ledger", "design epsilon", design, [c.get("epsilon") for c in counts.values()],
                              "the sum of its DP histograms' epsilons"))
    if "perturbation_epsilon" in raw:
        out.append(_sum_check("manifest", "perturbation epsilon", raw["perturbation_epsilon"], plain,
                              "the sum of the variables' epsilons"))
    if "record_epsilon" in raw:
        out.append(_sum_check("manifest", "record epsilon", raw["record_epsilon"], [design, *plain],
                              "the design step plus the variables"))
    if "record_epsilon" in ledger:
        parts = blocked if given else plain
        out.append(_sum_check("ledger", "record epsilon (ledger)", ledger["record_epsilon"], [design, *parts],
                              "the design step plus the variables" + (" given the structure" if given else "")))
        budget = _fraction(ledger.get("record_epsilon_budget"))
        if budget is not None and not math.isinf(budget):
            spent = _fraction(ledger["record_epsilon"])
            ok = spent is not None and spent <= budget
            out.append(Check("manifest", "ledger", "record budget", ok,
                             f"record epsilon {ledger['record_epsilon']!r} {'<=' if ok else '>'} budget {float(budget):g}"))
    return out


def noisy_count_checks(manifest: Manifest, raw: Mapping[str, Any]) -> list[Check]:
    """The proportions each design read against the noisy counts of the ledger (each count floored
    at one and normalised, in exact arithmetic).

    Examples
    --------
    >>> import json, random
    >>> import pramkit, pandas as pd
    >>> data = pd.DataFrame({"sex": ["f", "m"] * 500})
    >>> m = pramkit.design_release(data, ["sex"], epsilon=2.0, method="dp", rng=random.Random(3))
    >>> [(c.subject, c.passed) for c in noisy_count_checks(m, json.loads(m.to_json()))]
    [('sex', True)]
    """
    ledger: Mapping[str, Any] = raw["ledger"] if isinstance(raw.get("ledger"), dict) else {}
    counts = ledger.get("dp_counts") or {}
    out = []
    for v in manifest.variables:
        noisy = counts.get(v.name, {}).get("noisy") if isinstance(counts.get(v.name), dict) else None
        if noisy is None:
            continue
        exact = noisy_proportions(noisy)
        p = v.matrix.provenance.parameters.get("p") if v.matrix.provenance else None
        if p is not None:
            out.append(_proportions_check(v.name, p, exact, ""))
        elif v.matrix.blocks is not None and exact.size == v.matrix.size:  # each block read its cells' share
            for i, (idx, part) in enumerate(v.matrix.blocks):
                stated = part.provenance.parameters.get("p") if part.provenance is not None else None
                if stated is not None:
                    out.append(_proportions_check(v.name, stated, exact[idx] / exact[idx].sum(), f" (block {i})"))
    return out


def _proportions_check(name: str, p: Any, exact: np.ndarray, where: str) -> Check:
    """A design's stated proportions against those of the noisy counts."""
    pv = np.ravel(np.asarray(p, dtype=float))
    ok = pv.size == exact.size and bool(np.allclose(pv, exact, rtol=FLOAT_RTOL, atol=0.0))
    worst = float(np.max(np.abs(pv - exact))) if pv.size == exact.size else math.inf
    return Check("manifest", name, "proportions from the noisy counts", ok,
                 f"the design's {pv.size} proportions{where} {'match' if ok else 'differ from'} the ledger's "
                 f"{exact.size} noisy counts (largest difference {worst:.3g})")


def mutual_information(p: np.ndarray, m: np.ndarray) -> float:
    """I(X; Z) in nats of X ~ p released through M.

    Examples
    --------
    >>> round(mutual_information(np.array([0.5, 0.5]), np.eye(2)), 12) == round(math.log(2), 12)
    True
    """
    with np.errstate(all="ignore"):  # a forged p or M of huge numbers gives inf or nan: a figure that differs
        joint = p[:, None] * m
        released = joint.sum(axis=0)
        terms = np.where(joint > 0, joint * np.log(m / released[None, :]), 0.0)
        return float(terms.sum())


def staircase_bound(p: np.ndarray, epsilon: float, dual: np.ndarray) -> float:
    """An upper bound on the mutual information of every epsilon-DP matrix for p, from any dual vector.

    The most informative epsilon-DP matrix has staircase columns ``s_b = e^(epsilon b)``,
    ``b in {0, 1}^S`` (Kairouz, Oh and Viswanath 2016, Theorem 2); the linear program over their
    weights has the dual ``min sum y`` subject to ``y . s_b >= mu(s_b)`` for every b, with
    ``mu(s) = sum_x p_x s_x log(s_x / sum_y p_y s_y)``.  Raising one coordinate of any y by the
    largest violation makes it feasible (every ``s_b >= 1``), so ``sum y + max(0, violation)``
    bounds the optimum (weak duality).

    Examples
    --------
    Two categories at epsilon log 3: randomized response keeping 3/4 is optimal, and the exact
    dual gives its information:

    >>> p = np.array([0.5, 0.5]); m = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> y = np.array([0.25 * math.log(1.5) + 0.25 * 3 * math.log(1.5) - 0.0] * 2) / 2
    >>> staircase_bound(p, math.log(3), y) >= mutual_information(p, m) - 1e-12
    True
    """
    s = p.size
    patterns = np.array(list(itertools.product((0.0, 1.0), repeat=s)))
    stairs = np.exp(epsilon * patterns)
    released = stairs @ p
    mu = (p[None, :] * stairs * (epsilon * patterns - np.log(released)[:, None])).sum(axis=1)
    violation = float(np.max(mu - stairs @ dual))
    return float(dual.sum() + max(violation, 0.0))


def _xlogx(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def form8_information(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """I(X; Z) in nats of the form (8) matrices with diagonals ``q`` (one per row of ``q``): row k
    keeps ``q_k`` and gives ``w_k = (1 - q_k) / (S - 1)`` to every other category.

    ``I = sum_k p_k [q_k log q_k + (1 - q_k) log w_k] - sum_j m_j log m_j`` with the released
    shares ``m_j = W + p_j (q_j - w_j)``, ``W = sum_k p_k w_k``.

    Examples
    --------
    >>> p = np.array([0.2, 0.3, 0.5]); q = np.array([[0.6, 0.7, 0.8]])
    >>> m = np.array([[0.6, 0.2, 0.2], [0.15, 0.7, 0.15], [0.1, 0.1, 0.8]])
    >>> bool(np.isclose(form8_information(p, q)[0], mutual_information(p, m)))
    True
    """
    c = p.size - 1
    w = (1.0 - q) / c
    kept = _xlogx(q) + (1.0 - q) * np.log(np.where(w > 0, w, 1.0))
    released = (p * w).sum(axis=1, keepdims=True) + p * (q - w)
    return (p * kept).sum(axis=1) - _xlogx(released).sum(axis=1)


def _pattern_vertices(size: int, epsilon: float, truthful: bool) -> list[np.ndarray]:
    """The vertices of the polytope of sorted levels (A, B, b, a) of an epsilon-DP form (8) matrix.

    Written from the definition: with ``c = S - 1`` and ``t = e^epsilon``, column k holds ``q_k``
    and ``(1 - q_l) / c``; the ratio of any two entries of a column is at most t.  On sorted
    levels this binds on the two largest (``c q_1 + t q_2 <= t``, ``t q_1 + c q_2 <= t``), the two
    smallest (``c t q_S + q_(S-1) >= 1``, ``c t q_(S-1) + q_S >= 1``) and, for S >= 3, the
    extremes (``1 - q_S <= t (1 - q_1)``); and ``0 <= q <= 1`` (``q >= 1/S`` when truthful).
    Every subsystem of as many constraints as levels is solved; the feasible solutions are kept.
    """
    levels = 2 if size == 2 else (3 if size == 3 else 4)
    first, second, last = 0, 1, levels - 1
    before_last = 0 if size == 2 else (1 if size == 3 else 2)
    c, t = float(size - 1), math.exp(epsilon)

    def row(entries: dict[int, float], bound: float) -> tuple[np.ndarray, float]:
        g = np.zeros(levels)
        for k, x in entries.items():
            g[k] += x
        return g, bound

    rows = [row({first: c, second: t}, t), row({first: t, second: c}, t),
            row({last: -c * t, before_last: -1.0}, -1.0), row({before_last: -c * t, last: -1.0}, -1.0),
            row({first: 1.0}, 1.0), row({last: -1.0}, -1.0 / size if truthful else 0.0)]
    if size >= 3:
        rows.append(row({first: t, last: -1.0}, t - 1.0))
    rows += [row({k + 1: 1.0, k: -1.0}, 0.0) for k in range(levels - 1)]
    g = np.array([r[0] for r in rows])
    h = np.array([r[1] for r in rows])
    found: list[np.ndarray] = []
    for chosen in itertools.combinations(range(len(rows)), levels):
        sub = g[list(chosen)]
        with np.errstate(over="ignore", invalid="ignore"):  # e^epsilon squared passes a double above epsilon 354
            if not abs(np.linalg.det(sub)) >= 1e-12:
                continue
            x = np.linalg.solve(sub, h[list(chosen)])
            feasible = np.isfinite(x).all() and np.all(g @ x <= h + 1e-12 * np.maximum(1.0, np.abs(h)))
        if feasible and not any(np.allclose(x, y) for y in found):
            found.append(x)
    return found


def form8_optimum(p: np.ndarray, epsilon: float, truthful: bool = False) -> float:
    """The largest I(X; Z) of an epsilon-DP form (8) matrix for p, by exhaustive search.

    The objective is convex in q, so its maximum is at a vertex of the feasible set; a vertex
    has one largest level A, one smallest a and the others on two levels B >= b, with
    (A, B, b, a) a vertex of the sorted-level polytope (:func:`_pattern_vertices`); every
    arrangement of such levels is feasible (docs/design-dp.md, Lemmas 2 and 3, a proof of
    mathematics).  Every arrangement of every vertex is scored: ``S (S - 1) 2^(S - 2)`` per vertex.

    Examples
    --------
    Two categories: randomized response keeping e^eps / (1 + e^eps) is optimal.

    >>> p = np.array([0.5, 0.5]); q = math.exp(1) / (1 + math.exp(1))
    >>> bool(np.isclose(form8_optimum(p, 1.0), form8_information(p, np.array([[q, q]]))[0]))
    True
    """
    s = p.size
    best = -math.inf
    for levels in _pattern_vertices(s, epsilon, truthful):
        top, bottom = levels[0], levels[-1]
        middle = levels[1:-1] if s >= 3 else np.array([])
        high, low = (middle[0], middle[-1]) if middle.size else (top, bottom)
        choices = list(itertools.product((high, low), repeat=s - 2))
        splits = np.array(choices, dtype=float).reshape(len(choices), s - 2)
        for i, j in itertools.permutations(range(s), 2):
            others = [k for k in range(s) if k not in (i, j)]
            q = np.empty((splits.shape[0], s))
            q[:, i], q[:, j] = top, bottom
            q[:, others] = splits
            best = max(best, float(form8_information(p, q).max()))
    return best


def _number(value: JSONValue) -> float:
    """A figure of a design's provenance as :func:`float` reads it (``"inf"`` included); the
    :class:`TypeError` of :func:`float` for anything else (null, a list, an object).

    Examples
    --------
    >>> _number(0.5), _number(2), _number("inf")
    (0.5, 2.0, inf)
    """
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"float() argument must be a string or a real number, not {type(value).__name__!r}")


def certificate_checks(manifest: Manifest) -> list[Check]:
    """Each design's certificate: its own figures held to each other
    (:func:`pramkit.audit.certificates.figure_checks`: bounds on the right side of the objective, the
    gap their difference), the stated mutual information recomputed (of the composed law for a
    derived variable), and optimality re-proved by the staircase bound (:func:`staircase_bound`)
    where the certificate gives dual values, for a form (8) design of at most
    :data:`CERTIFIED_CATEGORIES` categories by an exhaustive search of its own (:func:`form8_optimum`),
    and for a derived design by its dual over vertices found again
    (:func:`pramkit.audit.certificates.nested_checks`).

    Examples
    --------
    >>> from pramkit.design.dp.general import dp_general
    >>> m = Manifest.of({"x": dp_general([0.6, 0.3, 0.1], 1.0, categories=["a", "b", "c"])})
    >>> [(c.field, c.passed) for c in certificate_checks(m)]  # doctest: +NORMALIZE_WHITESPACE
    [('design.certificate.upper_bound_nats', True), ('design.certificate.information_lower_nats', True),
     ('design.certificate.certified_gap_nats', True), ('mutual information', True), ('optimality certificate', True)]
    """
    from pramkit.audit.certificates import figure_checks

    out = []
    for v in manifest.variables:
        for prov, prefix in ((v.matrix.provenance, "design.certificate"),
                             (v.applied_to.provenance if v.applied_to is not None else None,
                              "applied_to.design.certificate")):
            if prov is not None and prov.certificate:
                try:
                    out.extend(figure_checks(v.name, prov, prefix))
                except (TypeError, ValueError) as exc:  # a hand-edited certificate: text, a list
                    out.append(Check("manifest", v.name, prefix, False,
                                     f"the certificate's figures cannot be read as numbers ({exc})"))
        prov = v.matrix.provenance
        if (prov is None or prov.objective_name != "mutual_information_nats" or "p" not in prov.parameters
                or v.matrix.size > DENSE_CATEGORIES or (v.applied_to is not None and v.matrix.size > COMPOSED_CATEGORIES)):
            continue
        try:
            out.extend(_design_checks(v, prov))
        except (TypeError, ValueError) as exc:  # a hand-edited provenance: null, a list, text
            out.append(Check("manifest", v.name, "optimality certificate", False,
                             f"the design's stated figures cannot be read as numbers ({exc}): nothing to re-prove"))
    return out


def _channel(first: PramMatrix) -> np.ndarray:
    """The law the engine realises for ``first`` as probabilities (its integer units over ``2^bits``;
    the stored doubles of a law drawn exactly from its closed form)."""
    law = realised_law(first)
    if law.exact:
        return first.matrix
    return law.unit_matrix().astype(float) / float(law.denominator)


def _design_checks(v: PerturbedVariable, prov: Provenance) -> list[Check]:
    """The mutual information and optimality checks of one variable's design (see :func:`certificate_checks`)."""
    from pramkit.audit.certificates import nested_checks

    out: list[Check] = []
    try:
        p = np.ravel(np.asarray(prov.parameters["p"], dtype=float))
    except (TypeError, ValueError, OverflowError):
        p = np.array([math.nan])
    m = v.matrix.matrix
    if not (np.isfinite(p).all() and (p >= 0).all() and math.isclose(float(p.sum()), 1.0, rel_tol=1e-9)):
        return [Check("manifest", v.name, "design.parameters.p", False,
                      "the design's frequencies p are not a distribution (finite, non-negative, summing to 1): "
                      "its information and certificate cannot be checked")]
    if p.size != m.shape[0]:
        return out
    channel = None if v.applied_to is None else _channel(v.applied_to)
    mi = mutual_information(p, m if channel is None else channel @ m)
    stated = _number(prov.objective)
    ok = math.isclose(mi, stated, rel_tol=FLOAT_RTOL, abs_tol=1e-12)
    of = "" if channel is None else " (of the composed law: the first step's realised law, then this matrix)"
    out.append(Check("manifest", v.name, "mutual information", ok,
                     f"stated {stated:.12g} nats, recomputed {mi:.12g} nats{of}"))
    if channel is not None:
        return out + nested_checks(v.name, prov, channel, mi)
    cert = prov.certificate or {}
    eps = prov.parameters.get("epsilon")
    if not cert.get("optimal") or eps is None or p.size > CERTIFIED_CATEGORIES:
        return out
    dual = cert.get("dual_y")
    tolerance = _number(cert.get("tolerance_nats", 0.0)) + 1e-12 * max(1.0, mi)
    if dual is not None:
        bound = staircase_bound(p, _number(eps), np.asarray(dual, dtype=float))
        how = f"staircase dual bound {bound:.12g} nats (weak duality)"
    elif v.matrix.form8_q is not None and math.isfinite(_number(eps)) and _number(eps) < 700:
        bound = form8_optimum(p, _number(eps), bool(prov.parameters.get("truthful")))
        how = f"form (8) optimum {bound:.12g} nats (every arrangement of every vertex scored)"
    else:
        return out
    proved = bound - mi <= tolerance
    out.append(Check("manifest", v.name, "optimality certificate", proved,
                     f"{how}; the design is within {max(bound - mi, 0.0):.3g} nats (tolerance {tolerance:.3g})"))
    return out


def receipt_checks(manifest_path: Path, released: Path, *, sep: str = ",", encoding: str = "utf-8") -> list[Check]:
    """The released file against its receipt: its SHA-256, its rows, and the manifest it names.

    A folder of part files (Spark's output) has a receipt without a digest: its rows and the
    manifest are checked, its digest is said not to be.  ``sep`` and ``encoding``: how a CSV
    file is written (:func:`pramkit.io.csv_dialect`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.engine.perturb import apply_file
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     _ = (d / "o.csv").write_text("sex\\nf\\nm\\n")
    ...     _ = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(d / "m.json")
    ...     _ = apply_file(d / "o.csv", d / "m.json", d / "r.csv", key=bytes(32))
    ...     print([c.passed for c in receipt_checks(d / "m.json", d / "r.csv")])
    [True, True, True]
    """
    from pramkit.engine.receipt import manifest_digests, read_receipt, receipt_path
    from pramkit.io import iter_batches, sha256_of

    if not released.exists():
        raise DataError(f"released file {str(released)!r} does not exist")
    receipt = read_receipt(released)
    if receipt is None:
        return [Check("manifest", "receipt", "present", False,
                      f"no receipt {receipt_path(released).name} beside {str(released)!r}: the file cannot be "
                      "tied to the manifest")]
    digest = sha256_of(released) if released.is_file() else None
    stated = receipt.get("released_sha256")
    if released.is_dir() and stated is None:
        out = [Check("manifest", "receipt", "released file sha256", True,
                     "a folder of part files: its receipt records no digest of its content, so none is compared")]
    else:
        out = [Check("manifest", "receipt", "released file sha256", digest is not None and digest == stated,
                     f"file {str(digest)[:16]}..., receipt {str(stated)[:16]}...")]
    rows = sum(t.num_rows for t in iter_batches(released, na_values=(), sep=sep, encoding=encoding)[1])
    out.append(Check("manifest", "receipt", "rows", rows == receipt.get("rows"),
                     f"file {rows:,} rows, receipt {receipt.get('rows')!r}"))
    named = {receipt.get("manifest_sha256"), receipt.get("manifest_content_sha256")} - {None}
    own = sha256_of(manifest_path)
    try:
        digests = manifest_digests(manifest_path)  # its bytes' and its content's
    except ManifestError:  # figures that do not read (altered): audited by the other checks, named by its bytes
        digests = {own}
    ok = bool(named & digests)
    out.append(Check("manifest", "receipt", "manifest sha256", ok,
                     f"{'names' if ok else 'does not name'} this manifest (sha256 {own[:16]}...)"))
    return out


def manifest_audit(manifest: str | Path, released: str | Path | None = None, *, sep: str = ",",
                   encoding: str = "utf-8") -> list[Check]:
    """The manifest audit: public files only (the manifest, and the released file with its receipt).

    Parameters
    ----------
    manifest : str or pathlib.Path
        The published manifest.
    released : str or pathlib.Path, optional
        The released file (or folder of part files); its receipt is read from beside it.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    list of Check

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(pathlib.Path(d) / "m.json")
    ...     print(all(c.passed for c in manifest_audit(path)))
    True
    """
    from pramkit.audit.stated import presence_checks, realised_law_checks, total_checks, validation_checks

    path = Path(manifest)
    parsed, raw = read_manifest(path)
    ratios = variable_ratios(parsed)
    checks = [*validation_checks(raw), *presence_checks(parsed, raw), *epsilon_checks(parsed, raw, ratios),
              *realised_law_checks(parsed, raw), *total_checks(parsed, raw, ratios), *ledger_checks(raw),
              *noisy_count_checks(parsed, raw), *invariance_checks(parsed, raw), *certificate_checks(parsed)]
    if released is not None:
        checks += receipt_checks(path, Path(released), sep=sep, encoding=encoding)
    return checks
