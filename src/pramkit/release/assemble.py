"""Stage 6 of the design workflow: the public manifest and the private design record.

:func:`assemble` puts the designed matrices in the manifest as they may be published
(a design made on the exact frequencies keeps its method and parameters but not p, nor
what was computed on p), writes the ledger (where the frequencies came from, the DP
counts, what depends on the data), checks the record epsilon against the budget, and
gathers the private figures of the design record (exact counts, the information each
matrix keeps on them, expected distances, measures, the joint comparison).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from pramkit._json import to_jsonable
from pramkit.design.measures import information_by_value, information_kept, measure
from pramkit.errors import ParameterError
from pramkit.information import entropy as entropy_of
from pramkit.information import mutual_information
from pramkit.labels import joint_cell
from pramkit.ledger import CategorySource, Ledger
from pramkit.manifest import Manifest, MissingPolicy, PerturbedVariable
from pramkit.matrix import PramMatrix, Provenance
from pramkit.release.allocate import Allocation
from pramkit.release.build import Built
from pramkit.release.count import Counted
from pramkit.release.frequencies import DesignFrequencies
from pramkit.release.plan import ReleasePlan
from pramkit.release.record import DesignRecord, Release
from pramkit.release.targets import Target, complete

#: Largest matrix stored by its parameters whose O(S^2)-time figures the design record computes
#: (expected distances; information and measures of an exponential mechanism, row by row).
MAX_DENSE_FIGURES = 4096


def assemble(plan: ReleasePlan, counted: Counted, freqs: DesignFrequencies, allocation: Allocation, built: Built,
             seconds: float, *, compare: bool = True) -> Release:
    """The manifest and the design record of a designed release.

    Parameters
    ----------
    plan, counted, freqs, allocation, built
        The stages' results.
    seconds : float
        The design's wall time, for the record.
    compare : bool
        Record the joint matrix against the best independent split at the same budget (the
        record's ``joint`` figures); ``False`` leaves it out (a preview: the manifest is the same).

    Returns
    -------
    Release

    Raises
    ------
    ParameterError
        The record epsilon exceeds the budget (a margin mixing blocks, or the family's parameters).

    Examples
    --------
    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.allocate import allocate
    >>> from pramkit.release.build import build_matrices
    >>> from pramkit.release.count import count_release
    >>> from pramkit.release.frequencies import design_frequencies
    >>> from pramkit.release.plan import plan_release
    >>> plan = plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> c = count_release(census(500), plan)
    >>> f = design_frequencies(plan, c, rng=random.Random(1))
    >>> a = allocate(plan, c, f)
    >>> manifest, record = assemble(plan, c, f, a, build_matrices(plan, c, f, a), 0.0)
    >>> manifest.record_epsilon <= 1.0, record.variables["sex"]["counts"] == c.targets["sex"].counts.tolist()
    (True, True)
    """
    exact = plan.source == "exact"
    missing = cast(MissingPolicy, plan.missing)  # one of MISSING (plan_release)
    variables = tuple(PerturbedVariable(k, public_matrix(m, exact), missing, columns=counted.targets[k].columns,
                                        given=counted.targets[k].given, unit=counted.targets[k].unit,
                                        unpaired=counted.targets[k].unpaired)
                      for k, m in built.matrices.items())
    ledger = _ledger(plan, counted, freqs)
    _check_total(plan, ledger, variables)
    record = DesignRecord(
        data=counted.described, sha256=counted.digest, rows=counted.table.rows,
        missing=counted.table.rows - counted.table.complete_rows, method=plan.method,
        split=plan.split, options=plan.options, variables=_per_variable(counted, freqs, built),
        matrices=built.matrices, extra={**allocation.extra, **_extra(plan, counted, freqs, built, compare), "seconds": seconds},
        warnings=allocation.warnings + built.warnings, notes=plan.notes + counted.notes)
    return Release(Manifest(variables, input=_facts(plan, ledger), ledger=ledger), record)


def public_matrix(m: PramMatrix, exact: bool) -> PramMatrix:
    """The matrix as it may be published.

    A design made on the exact data (``exact``) keeps its method and parameters but not p,
    nor an objective or certificate computed on p; nor do the blocks of a block-diagonal
    matrix, each designed on its stratum's exact frequencies.

    Examples
    --------
    >>> from pramkit.design.dp.optimal import dp_optimal
    >>> m = dp_optimal([0.7, 0.2, 0.1], 1.0, categories=["a", "b", "c"])
    >>> "p" in m.provenance.parameters, "p" in public_matrix(m, exact=True).provenance.parameters
    (True, False)
    >>> bool((public_matrix(m, exact=True).matrix == m.matrix).all())   # the same entries
    True
    """
    if not exact:
        return m
    prov = m.provenance
    params = {k: v for k, v in prov.parameters.items() if k != "p"}
    public = Provenance(prov.method, params, None, None, None, prov.seconds)
    if m.blocks is None:
        return m.with_provenance(public)
    return PramMatrix.block_diagonal([public_matrix(part, exact) for _, part in m.blocks], m.categories, public)


def _ledger(plan: ReleasePlan, counted: Counted, freqs: DesignFrequencies) -> Ledger:
    """The ledger: the design step's budget and source, the DP counts, what depends on the data."""
    dependent = []
    from_data = [n for n in plan.names if counted.sources[n] == "data"]
    if from_data:
        dependent.append(f"the categories of {', '.join(from_data)} were read from the original file, so the "
                         "manifest shows which categories occur in it (declare them with a codebook to avoid this)")
    if plan.source == "exact" and plan.method == "invariant":
        dependent.append("the matrices were designed from the exact frequencies of the original file, which an "
                         "invariant matrix keeps as its released law (p R = p), so the published matrices reveal "
                         "them: they are the matrices' stationary distributions")
    elif plan.source == "exact":
        dependent.append("the matrices were designed from the exact frequencies of the original file, which the "
                         "published matrices reveal in part")
    return Ledger(design_epsilon=freqs.design_epsilon, frequencies=plan.source, record_epsilon_budget=plan.budget,
                  prior=plan.prior.name if plan.prior is not None else None,
                  categories={k: cast(CategorySource, v) for k, v in counted.sources.items()},
                  data_dependent=tuple(dependent), dp_counts=dict(freqs.dp_counts))


def _facts(plan: ReleasePlan, ledger: Ledger) -> dict[str, Any]:
    """The manifest's ``input``: how the release was designed (public)."""
    facts = {"method": plan.method, "split": plan.split, "record_epsilon_budget": plan.budget,
             "design_epsilon": ledger.design_epsilon, "frequencies": plan.source, "prior": ledger.prior,
             "options": to_jsonable(dict(plan.options)), "na_values": list(plan.na_values),
             **({"missing": plan.missing} if plan.missing != "keep" else {})}
    if plan.shape.any:
        facts["structure"] = plan.shape.to_dict()
    if plan.weights:
        facts["weights"] = list(plan.weights)
    if plan.distances:
        # a distance file by its name: a public file holds no path of the machine it was made on
        facts["distances"] = {k: getattr(v, "source", None) or Path(str(v)).name for k, v in plan.distances.items()}
    return facts


def _check_total(plan: ReleasePlan, ledger: Ledger, variables: tuple[PerturbedVariable, ...]) -> None:
    """The record epsilon (given the structure) within the budget, or an error saying what to change."""
    total = ledger.total([v.epsilon_given_shown for v in variables])
    if plan.budget is None or total <= plan.budget:
        return
    mixed = [v.name for v in variables if v.epsilon_given_shown > v.block_epsilon]
    remedy = (f"a record of {', '.join(mixed)} missing a column whose codes are kept is perturbed by a margin "
              "that mixes blocks, with a larger epsilon: use missing 'category' (--missing category)" if mixed else
              "lower the method's parameters (or raise the budget)")
    raise ParameterError(f"the design gives record epsilon {total:.6g}"
                         f"{' (given the structure)' if plan.shape.any else ''}, more than the budget "
                         f"{plan.budget:g}; {remedy}")


def _per_variable(counted: Counted, freqs: DesignFrequencies, built: Built) -> dict[str, dict[str, Any]]:
    """Per target: categories, exact counts and proportions, the design's, epsilon and information (private)."""
    out = {}
    for k, target in counted.targets.items():
        m = built.matrices.get(k)  # None: no budget in the optimal split, released exactly (no epsilon covers it)
        p_exact, design_p = freqs.exact[k], freqs.design_p[k]
        values, entropy = _values(target, p_exact)
        out[k] = {
            "categories": [list(c) if isinstance(c, tuple) else c for c in target.labels],
            "counts": np.asarray(target.counts).tolist(),
            "p": np.asarray(p_exact).tolist(),
            "design_p": None if design_p is None else np.asarray(design_p).tolist(),
            "epsilon": None if m is None else m.block_epsilon,
            "released_exactly": m is None,
            "information_nats": _information(p_exact, m, values),
            "entropy_nats": entropy,
            "design_information_nats": None if m is None or m.provenance.objective_name != "mutual_information_nats"
            else m.provenance.objective,
        }
        if k in built.distances and m is not None and _dense_ok(m):
            from pramkit.design.metric.mechanisms import geo_utility

            out[k]["expected_distance"] = geo_utility(m, built.distances[k], p_exact).expected_distance
            out[k]["distance_unit"] = built.distances[k].unit
    return out


def _values(target: Target, p: Any) -> tuple[np.ndarray | None, float]:
    """Each cell's value of the variable itself (``None`` without strata: the cells are the values)
    and the variable's entropy H(X) in nats, the strata mixed."""
    pv = np.asarray(p, dtype=float).ravel()
    pv = pv / pv.sum() if pv.sum() > 0 else pv
    if not target.given:
        return None, entropy_of(pv)
    g = len(target.given)
    numbers: dict[tuple, int] = {}
    values = np.array([numbers.setdefault(joint_cell(label)[g:], len(numbers)) for label in target.labels],
                      dtype=np.intp)
    return values, entropy_of(np.bincount(values, weights=pv, minlength=len(numbers)))


def _information(p: Any, m: PramMatrix | None, values: np.ndarray | None) -> float | None:
    """I(X; Z) of the variable itself, its strata mixed (:func:`pramkit.design.measures.information_by_value`);
    0 for a variable released exactly (no matrix: the record's convention)."""
    if m is None:
        return 0.0
    if values is None:
        return information_kept(p, m, limit=MAX_DENSE_FIGURES)
    return information_by_value(p, m, values, limit=MAX_DENSE_FIGURES)


def _extra(plan: ReleasePlan, counted: Counted, freqs: DesignFrequencies, built: Built,
           compare: bool = True) -> dict[str, Any]:
    """The family's figures for the record: the joint comparison (when ``compare``), households, measures."""
    extra: dict[str, Any] = {}
    joint = "*".join(plan.names)
    joint_p = freqs.design_p.get(joint)
    if compare and plan.split == "joint" and plan.method == "dp" and not plan.shape.any and plan.missing == "keep" \
            and joint_p is not None:
        extra["joint"] = _joint_comparison(complete(counted.table.group(*plan.names)), joint_p, built.matrices[joint],
                                           plan.options)
    if counted.households is not None:
        extra["households"] = counted.households.rows
    if plan.method == "invariant":
        extra["invariance"] = {k: expected_change(counted.targets[k].counts, m) for k, m in built.matrices.items()
                               if m.size <= MAX_DENSE_FIGURES or m.blocks is not None}
    if plan.method != "dp":
        extra["measures"] = {k: dataclasses.asdict(measure(m, freqs.exact[k])) for k, m in built.matrices.items()
                             if _measured(plan, m)}
    return extra


def expected_change(counts: Any, m: PramMatrix) -> dict[str, float]:
    """How far the expected released table is from the original one (private): ``counts M - counts``.

    An invariant design on the exact frequencies keeps the table up to rounding; on DP counts it
    keeps the noisy table, so the expected released counts differ from the original by about the
    noise.  Computed block by block for a block-diagonal matrix.

    Parameters
    ----------
    counts : array_like
        The original counts of the matrix's cells.
    m : PramMatrix
        The designed matrix.

    Returns
    -------
    dict
        ``largest_expected_change_records`` (the largest ``|counts M - counts|`` over the cells)
        and ``expected_total_variation`` (half their sum over the number of records).

    Examples
    --------
    >>> from pramkit.design.classic import sdcmicro_pram
    >>> counts = np.array([500, 300, 200])
    >>> r = sdcmicro_pram(["a", "b", "c"], counts / 1000, seed=1)
    >>> expected_change(counts, r)["largest_expected_change_records"] < 1e-9
    True
    """
    c = np.asarray(counts, dtype=float).ravel()
    parts = [(np.arange(m.size), m)] if m.blocks is None else m.blocks
    diff = np.zeros_like(c)
    for idx, part in parts:
        diff[idx] = c[idx] @ part.matrix - c[idx]
    total = float(c.sum())
    return {"largest_expected_change_records": float(np.abs(diff).max()) if diff.size else 0.0,
            "expected_total_variation": float(np.abs(diff).sum() / (2 * total)) if total > 0 else 0.0}


def _measured(plan: ReleasePlan, m: PramMatrix) -> bool:
    """Whether the record gives the family's measures of ``m``: a matrix of one variable's own
    categories (not the cells of strata), by its parameters within :func:`_dense_ok`; a matrix stored
    by blocks (k-anonymity's classes) while its dense array takes at most :data:`MAX_DENSE_FIGURES`
    rows."""
    if m.blocks is not None:
        return not plan.shape.any and m.size <= MAX_DENSE_FIGURES
    return m.exponential_rate is None or _dense_ok(m)


def _dense_ok(m: PramMatrix) -> bool:
    """Whether the record computes ``m``'s figures that take O(S^2) time (rows on demand, O(S)
    memory: information and measures of an exponential mechanism, expected distances): not for a
    matrix stored by its parameters beyond :data:`MAX_DENSE_FIGURES` categories.  Those of form (8)
    and the truncated geometric mechanism take O(S) (:func:`pramkit.design.measures.information_kept`) at any size."""
    by_parameters = m.geometric_rate is not None or m.exponential_rate is not None
    return not by_parameters or m.size <= MAX_DENSE_FIGURES


def _joint_comparison(table: Any, design_p: np.ndarray, joint: PramMatrix,
                      options: Mapping[str, Any]) -> dict[str, Any]:
    """The joint matrix against the best independent alternative at the same budget (private).

    The alternative splits the joint matrix's epsilon over the variables (``split="optimal"``),
    each designed on the margins of the same design frequencies; both are scored on the exact
    joint I(X; Z) of the original file (:func:`pramkit.design.dp.multivariate.independent_information`),
    so the record says which perturbation keeps more.
    """
    from pramkit.design.dp.multivariate import MAX_JOINT_CELLS, independent_information, split_budget

    cells = int(table.counts.size)
    out: dict[str, Any] = {"cells": cells}
    if cells > MAX_JOINT_CELLS:
        out["better"] = None
        out["note"] = f"not compared: more than {MAX_JOINT_CELLS} cells (the comparison builds K x K matrices)"
        return out
    shape = table.counts.shape
    joint_p = np.asarray(design_p, dtype=float).reshape(shape)
    margins = {n: joint_p.sum(axis=tuple(a for a in range(len(shape)) if a != i))
               for i, n in enumerate(table.columns)}
    alt = split_budget(margins, joint.epsilon, split="optimal", truthful=bool(options.get("truthful")))
    exact = table.counts.reshape(-1) / table.counts.sum()
    independent = independent_information(exact, table.columns, shape, alt.matrices)
    joint_nats = mutual_information(exact, joint.matrix)
    out.update({"independent_joint_information_nats": independent, "joint_design_information_nats": joint_nats,
                "independent_epsilons": alt.epsilons,
                "better": "joint" if joint_nats > independent else "independent"})
    return out
