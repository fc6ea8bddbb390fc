"""Stage 5 of the design workflow: design each target's matrix through the family registry.

Each target is designed by its family (:mod:`pramkit.design.registry`) at its share of
the budget, with the distances read for it when the family designs with them; a
target with structure is designed block by block (:func:`build_target`).  The
warnings of each matrix (not truthful, not estimable) go to the design record.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pramkit.design.matrix_design import estimability_warnings, truthful_warnings
from pramkit.design.registry import DesignFamily
from pramkit.matrix import PramMatrix, Provenance
from pramkit.progress import progress
from pramkit.release.allocate import Allocation
from pramkit.release.count import Counted
from pramkit.release.frequencies import DesignFrequencies
from pramkit.release.plan import ReleasePlan
from pramkit.release.targets import Target, normalised


@dataclass(frozen=True)
class Built:
    """The designed matrices.

    Parameters
    ----------
    matrices : mapping of str to PramMatrix
        Per target designed, its matrix (with provenance; possibly computed on exact frequencies).
    distances : mapping of str to Distances
        Per target with distances given, the distances read.
    warnings : tuple of str
        Each matrix's warnings, prefixed by its target.
    """

    matrices: Mapping[str, PramMatrix]
    distances: Mapping[str, Any]
    warnings: tuple[str, ...] = ()


def build_matrices(plan: ReleasePlan, counted: Counted, freqs: DesignFrequencies, allocation: Allocation, *,
                   quiet: bool = True) -> Built:
    """Design every funded target's matrix.

    Parameters
    ----------
    plan : ReleasePlan
        The family and its options, the distances given.
    counted : Counted
        The targets and whether their categories have a declared order.
    freqs : DesignFrequencies
        The proportions each design reads.
    allocation : Allocation
        Each target's budget.
    quiet : bool
        No progress bar.

    Returns
    -------
    Built

    Raises
    ------
    ParameterError
        The distances do not fit the categories, or an order is needed and not declared.

    Examples
    --------
    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.allocate import allocate
    >>> from pramkit.release.count import count_release
    >>> from pramkit.release.frequencies import design_frequencies
    >>> from pramkit.release.plan import plan_release
    >>> plan = plan_release(["sex"], method="rr", epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> c = count_release(census(500), plan)
    >>> f = design_frequencies(plan, c)
    >>> b = build_matrices(plan, c, f, allocate(plan, c, f))
    >>> b.matrices["sex"].provenance.method, b.matrices["sex"].epsilon <= 1.0
    ('randomized_response', True)
    """
    distances = _distances(plan, counted)
    fam, matrices, warnings = plan.family, {}, list[str]()
    with progress(total=sum(len(counted.targets[k].labels) for k in allocation.epsilons), desc="designing",
                  unit="categories", quiet=quiet) as bar:
        for k, eps in allocation.epsilons.items():
            target = counted.targets[k]
            bar.set_postfix_str(f"{k} (S = {len(target.labels):,})")
            options = {**plan.options, "distances": distances[k]} if plan.uses_distances and k in distances \
                else plan.options
            m = matrices[k] = build_target(fam, target, freqs.design_p[k], eps, options)
            warnings.extend(f"{k}: {w}" for w in truthful_warnings(m) + estimability_warnings(m))
            bar.update(len(target.labels))
    return Built(matrices, distances, tuple(warnings))


def _distances(plan: ReleasePlan, counted: Counted) -> dict[str, Any]:
    """The distances given, read for each target's categories; the order checked where one is read."""
    from pramkit.distances import read_distances, require_order

    labels = {k: _own_values(t, counted) if t.given else t.labels for k, t in counted.targets.items()}
    out = {k: _stratified_ordinal(counted.targets[k], labels[k]) if _is_ordinal(spec) and counted.targets[k].given
           else read_distances(spec, counted.targets[k].labels, declared_order=counted.ordered[k], variable=k)
           for k, spec in plan.distances.items()}
    for k in counted.targets:  # "ordinal" given as an option, and the geometric mechanism, read the order too
        spec = plan.distances.get(k, plan.options.get("distances"))
        if _is_ordinal(spec):
            require_order(k, labels[k], declared=counted.ordered[k])
        elif plan.method == "metric" and plan.options.get("mechanism") == "geometric":
            require_order(k, labels[k], declared=counted.ordered[k], needs="the geometric mechanism and its steps")
    return out


def _is_ordinal(spec: Any) -> bool:
    return isinstance(spec, str) and spec.strip().lower() == "ordinal"


def _own_values(target: Target, counted: Counted) -> list:
    """The categories of a stratified target's perturbed column, in their order (the strata's left out)."""
    table = counted.table
    if len(target.columns) != 1:
        return target.labels
    return [c for c in table.categories[list(table.columns).index(target.columns[0])] if c is not None]


def _stratified_ordinal(target: Target, own: list) -> Any:
    """Ordinal distances over a stratified target's cells (stratum, value): steps along the value's order
    within a stratum; strata apart by more than any step (their blocks are designed apart, never crossed)."""
    from pramkit.distances import Distances

    rank = {str(v): i for i, v in enumerate(own)}
    values = [label[-1] if isinstance(label, tuple) else label for label in target.labels]
    strata = [label[:-1] if isinstance(label, tuple) else () for label in target.labels]
    block = np.cumsum([0] + [int(a != b) for a, b in itertools.pairwise(strata)])
    points = np.array([rank[str(v)] for v in values], dtype=float) + block * (len(own) + 1)
    return Distances(target.labels, None, "ordinal", "step", None, "ordinal", points=points)


def _within_block(options: Mapping[str, Any], idx: np.ndarray, labels: list) -> Mapping[str, Any]:
    """A family's options for one block: the distances read for the target's cells, restricted to the
    block's (O(block^2), never the target's whole S x S array)."""
    from pramkit.distances import Distances

    dist = options.get("distances")
    if not isinstance(dist, Distances):
        return options
    if dist.kind == "ordinal" and dist.points is not None:
        block = Distances(labels, None, "ordinal", dist.unit, None, dist.source, points=dist.points[idx])
    else:
        block = Distances(labels, dist.rows(idx)[:, idx], kind="table", unit=dist.unit, source=dist.source)
    return {**options, "distances": block}


def build_target(fam: DesignFamily, target: Target, p: np.ndarray | None, epsilon: float | None,
          options: Mapping[str, Any]) -> PramMatrix:
    """Design a target's matrix: the family on its cells, or block by block.

    Each block of two categories or more is designed by the family on the block's own
    proportions at ``epsilon``; a block of one category is the identity.  Every record is
    perturbed by its own block alone, so the epsilon given the block is the largest of the
    blocks' (parallel composition), while the matrix's own epsilon is infinite: a column
    with zeros beside positive entries (Shlomo and Skinner 2012, section 4: epsilon-DP
    holds for a finite epsilon if and only if no entry is zero).

    Parameters
    ----------
    fam : DesignFamily
        The design family (:func:`pramkit.design.registry.family`).
    target : Target
        The cells, counts and blocks (:func:`plan_targets`).
    p : numpy.ndarray or None
        The design's proportions over ``target.labels`` (``None``: a data-free family).
    epsilon : float or None
        The target's budget (``None``: the family fixes it by its options).
    options : mapping
        The family's own options.

    Returns
    -------
    PramMatrix
        The family's matrix, or a block-diagonal one (:meth:`pramkit.PramMatrix.block_diagonal`)
        with provenance ``blocks(<family>)``.

    Examples
    --------
    Randomized response at epsilon 1 within each region, ``n/a`` kept: no value
    leaves its block, and the guarantee given the block is the budget.

    >>> import pandas as pd
    >>> from pramkit.counts import count_frame
    >>> from pramkit.design.registry import family
    >>> from pramkit.release.targets import plan_targets, structure
    >>> frame = pd.DataFrame({"region": ["north", "north", "south", "south", "north", "south"],
    ...                       "age": ["0-9", "10-19", "n/a", "10-19", "0-9", "0-9"]})
    >>> shape = structure(["age"], "equal", None, "region", {"age": "n/a"}, None, (), "error")
    >>> t = plan_targets(["age"], "equal", shape, count_frame(frame, ["region", "age"]), None)["age"]
    >>> m = build_target(family("rr"), t, None, 1.0, {})
    >>> m.provenance.method, len(m.blocks), m.epsilon, m.block_epsilon <= 1.0
    ('blocks(rr)', 4, inf, True)
    >>> all(np.allclose(m.matrix[np.ix_(idx, idx)].sum(axis=1), 1.0) for idx, _ in m.blocks)
    True
    """
    if target.blocks is None or (len(target.blocks) == 1 and not target.given):
        return fam.build(target.labels, p, epsilon, options)
    parts = []
    for idx in target.blocks:
        labels = [target.labels[i] for i in idx]
        if idx.size == 1:
            parts.append(PramMatrix.identity(labels))
        else:
            parts.append(fam.build(labels, None if p is None else normalised(p[idx]), epsilon,
                                   _within_block(options, idx, labels)))
    method = next((p.provenance.method for p in parts if p.size > 1), "identity")  # kept codes are identities
    return PramMatrix.block_diagonal(parts, target.labels, Provenance(
        method=f"blocks({fam.name})", parameters={"blocks": len(parts), "block_method": method,
                                                  "epsilon": epsilon}))
