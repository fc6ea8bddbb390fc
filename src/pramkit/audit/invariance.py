"""The invariance of an invariant design, recomputed from the public files only.

An invariant design (sdcMicro's ``pram``, :func:`pramkit.design.classic.sdcmicro_pram`; the
least-distance DP design with ``invariant``) states that the released law of its cells is the
law of the frequencies it read: ``p R = p``, so that the expected released table equals the
table of those frequencies.  :func:`invariance_checks` recomputes ``p R`` from the published
matrix and the published frequencies:

* the design step's noisy counts in the ledger (``ledger.dp_counts``), floored at one count
  and normalised, as the design reads them (:func:`pramkit.release.frequencies.dp_frequencies`),
  in exact arithmetic before the one rounding to floating point;
* otherwise the frequencies the design's provenance states (``design.parameters.p``, block by
  block for a matrix stored by blocks);
* a design on the exact frequencies publishes none: nothing is recomputed, and the check says so.

A block-diagonal matrix (strata, kept codes) is checked block by block, each on its cells'
frequencies normalised within the block (the design reads them so, :func:`pramkit.release.build.build_target`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from pramkit.audit.result import Check
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix, Provenance

#: The design methods that state ``p R = p`` (their provenance's ``method``).
INVARIANT_METHODS = ("sdcmicro_pram", "invariant_pram")
#: Largest ``|p R - p|`` (a difference of proportions) accepted as rounding: a row of R sums to 1
#: within 1e-12, so ``p R`` of S cells is within S 1e-12 of its exact value.
INVARIANCE_TOL = 1e-9
#: Largest block whose dense entries the check reads.
MAX_CHECKED_BLOCK = 4096


def states_invariance(prov: Provenance | None) -> bool:
    """Whether a design's provenance states ``p R = p``.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response, sdcmicro_pram
    >>> states_invariance(sdcmicro_pram(["a", "b"], [0.3, 0.7], seed=1).provenance)
    True
    >>> states_invariance(randomized_response(["a", "b"], 1.0).provenance)
    False
    """
    if prov is None:
        return False
    return prov.method in INVARIANT_METHODS or prov.parameters.get("invariant") is True


def _parts(m: PramMatrix) -> list[tuple[np.ndarray, PramMatrix]]:
    """The matrix's blocks (members, block), or the whole matrix as one."""
    return [(np.arange(m.size), m)] if m.blocks is None else list(m.blocks)


def claims_invariance(v: PerturbedVariable, method: Any = None) -> bool:
    """Whether a variable's design states invariance: its own provenance or a block's, or the
    manifest's method ``invariant`` (``method``: the manifest's ``input.method``).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> v = PerturbedVariable("sex", randomized_response(["f", "m"], 1.0))
    >>> claims_invariance(v), claims_invariance(v, "invariant")
    (False, True)
    """
    if method == "invariant":
        return True
    return states_invariance(v.matrix.provenance) or any(
        states_invariance(part.provenance) for _, part in _parts(v.matrix) if v.matrix.blocks is not None)


def noisy_proportions(noisy: Sequence[Any]) -> np.ndarray:
    """The proportions a design reads from noisy counts: each floored at one count, normalised
    (exact fractions, rounded once).

    Examples
    --------
    >>> noisy_proportions([3, -2, 0, 4]).tolist()
    [0.3333333333333333, 0.1111111111111111, 0.1111111111111111, 0.4444444444444444]
    """
    floored = [max(Fraction(int(c)), Fraction(1)) for c in np.ravel(np.asarray(noisy, dtype=object))]
    total = sum(floored, Fraction(0))
    return np.array([float(c / total) for c in floored])


def _published_p(v: PerturbedVariable, counts: Mapping[str, Any]) -> tuple[list[np.ndarray | None], str] | None:
    """Per block, the published frequencies of its cells (normalised within the block), and where
    they come from; ``None`` when none are published."""
    parts = _parts(v.matrix)
    entry = counts.get(v.name)
    if isinstance(entry, dict) and entry.get("noisy") is not None:
        p = noisy_proportions(entry["noisy"])
        if p.size != v.matrix.size:
            return [None] * len(parts), f"the ledger's {p.size} noisy counts"
        return [p[idx] / p[idx].sum() for idx, _ in parts], "the ledger's noisy counts"
    found: list[np.ndarray | None] = []
    for _, part in parts:
        given = part.provenance.parameters.get("p") if part.provenance is not None else None
        if given is None and part.size > 1:
            return None
        found.append(None if given is None else np.ravel(np.asarray(given, dtype=float)))
    return found, "the design's stated frequencies"


def invariance_checks(manifest: Manifest, raw: Mapping[str, Any]) -> list[Check]:
    """Each invariant design's ``p R = p`` recomputed from the published matrix and frequencies.

    Parameters
    ----------
    manifest : Manifest
        The manifest's matrices (:func:`pramkit.audit.manifest.read_manifest`).
    raw : mapping
        Its JSON as written (the ledger's noisy counts, the input's method).

    Returns
    -------
    list of Check
        One per variable whose design states invariance (field ``invariance``): passed when
        every block keeps its published frequencies within :data:`INVARIANCE_TOL`, or when no
        frequencies are published (a design on the exact frequencies, said in the detail).

    Examples
    --------
    >>> import json, random
    >>> import pandas as pd, pramkit
    >>> data = pd.DataFrame({"a": ["x", "y", "y", "z"] * 50, "b": ["u", "v"] * 100})
    >>> m = pramkit.design_release(data, ["a", "b"], method="invariant", split="joint",
    ...                            design_epsilon=0.5, rng=random.Random(1))
    >>> raw = json.loads(m.to_json())
    >>> [(c.subject, c.field, c.passed) for c in invariance_checks(m, raw)]
    [('a*b', 'invariance', True)]
    >>> raw["ledger"]["dp_counts"]["a*b"]["noisy"][0] += 40          # forged counts
    >>> [c.passed for c in invariance_checks(m, raw)]
    [False]
    """
    ledger: Mapping[str, Any] = raw["ledger"] if isinstance(raw.get("ledger"), dict) else {}
    counts = ledger.get("dp_counts")
    method = raw["input"].get("method") if isinstance(raw.get("input"), dict) else None
    return [_check(v, counts if isinstance(counts, dict) else {}) for v in manifest.variables
            if v.applied_to is None and claims_invariance(v, method)]


def _check(v: PerturbedVariable, counts: Mapping[str, Any]) -> Check:
    """One variable's invariance check."""
    published = _published_p(v, counts)
    if published is None:
        return Check("manifest", v.name, "invariance", True,
                     "designed on frequencies the manifest does not publish (the exact ones): p R = p cannot be "
                     "recomputed from public files")
    ps, source = published
    worst, checked = 0.0, 0
    for (_, part), p in zip(_parts(v.matrix), ps):
        if part.size == 1:
            continue
        if p is None or p.size != part.size or not np.isfinite(p).all() or (p < 0).any():
            return Check("manifest", v.name, "invariance", False,
                         f"{source} do not fit the matrix's {v.matrix.size} cells: p R = p cannot be recomputed")
        if part.size > MAX_CHECKED_BLOCK:
            continue
        worst = max(worst, float(np.abs(p @ part.matrix - p).max()))
        checked += 1
    ok = worst <= INVARIANCE_TOL
    blocks = "" if v.matrix.blocks is None else f" in each of {checked} blocks"
    return Check("manifest", v.name, "invariance", ok,
                 f"the released law of the cells{blocks} {'equals' if ok else 'differs from'} {source} "
                 f"(largest |p R - p| {worst:.3g}, tolerance {INVARIANCE_TOL:g})",
                 {"largest_difference": worst})
