"""Stage 3 of the design workflow: the frequencies the design may read, and the ledger's part.

A family that reads frequencies (:meth:`pramkit.design.registry.DesignFamily.reads_frequencies`)
gets them from one of three places, which the ledger names (``frequencies``):

* ``dp_counts`` (the default): each target's histogram through the geometric mechanism
  (L1 sensitivity 2), the design budget (``design_epsilon``, by default
  :func:`pramkit.ledger.default_design_epsilon`) shared in proportion to the histograms'
  cells; the noisy counts are published in the ledger;
* ``prior``: a public prior, no budget spent;
* ``exact``: the exact frequencies, which no DP guarantee covers (the ledger says so).

A data-free family reads none (``none``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pramkit.ledger import default_design_epsilon, split_within
from pramkit.release.count import Counted
from pramkit.release.plan import ReleasePlan
from pramkit.release.targets import normalised

if TYPE_CHECKING:
    from pramkit.kernel.rng import SecretKey


@dataclass(frozen=True)
class DesignFrequencies:
    """What the design reads of the data, and what it costs.

    Parameters
    ----------
    design_epsilon : float
        The budget the design step spent (0 unless ``dp_counts``).
    design_p : mapping of str to numpy.ndarray or None
        Per target, the proportions the design reads (``None``: a data-free family).
    exact : mapping of str to numpy.ndarray
        Per target, the exact proportions (private: for the design record's figures).
    dp_counts : mapping of str to dict
        Per target, the published DP counts (:meth:`pramkit.privacy.geometric.DPCounts.to_dict`).
    """

    design_epsilon: float
    design_p: Mapping[str, np.ndarray | None]
    exact: Mapping[str, np.ndarray]
    dp_counts: Mapping[str, dict[str, Any]] = field(default_factory=dict)


def design_frequencies(plan: ReleasePlan, counted: Counted, *, rng: random.Random | None = None,
                       key: SecretKey | None = None) -> DesignFrequencies:
    """The frequencies of each target the design may read, from the plan's source.

    Parameters
    ----------
    plan : ReleasePlan
        The plan (its ``source``, ``prior`` and ``design_epsilon``).
    counted : Counted
        The counted data.
    rng : random.Random, optional
        Randomness of the DP counts (default: the operating system's CSPRNG).
    key : pramkit.kernel.rng.SecretKey, optional
        Draw each histogram's noise from the key instead (:meth:`SecretKey.design_random`
        of the histogram's name, cells and epsilon, and of its exact counts): the same key
        and data design the same release; other data get independent noise.

    Returns
    -------
    DesignFrequencies

    Examples
    --------
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.count import count_release
    >>> from pramkit.release.plan import plan_release
    >>> plan = plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> f = design_frequencies(plan, count_release(census(2_000), plan), rng=random.Random(1))
    >>> 0 < f.design_epsilon <= 0.1, sorted(f.dp_counts), round(float(f.design_p["sex"].sum()), 12)
    (True, ['sex'], 1.0)
    """
    exact = {k: normalised(t.counts) for k, t in counted.targets.items()}
    if plan.source == "dp_counts":
        margins = [len(t.counts) for t in counted.targets.values()]
        eps = float(plan.design_epsilon) if plan.design_epsilon is not None else \
            default_design_epsilon(_base(plan), counted.table.rows, margins)
        queries = None if key is None else {k: (key, t.labels) for k, t in counted.targets.items()}
        design_p, outputs = dp_frequencies({k: t.counts for k, t in counted.targets.items()}, eps, rng,
                                           keyed=queries)
        return DesignFrequencies(eps, design_p, exact, outputs)
    if plan.source == "prior":
        prior = plan.prior
        assert prior is not None  # the source is the prior only when one is given (plan_release)
        return DesignFrequencies(0.0, {k: normalised(_product([prior.p(c) for c in t.read_columns])[t.index])
                                 for k, t in counted.targets.items()}, exact)
    if plan.source == "exact":
        return DesignFrequencies(0.0, dict(exact), exact)
    return DesignFrequencies(0.0, dict.fromkeys(counted.targets), exact)


def _base(plan: ReleasePlan) -> float:
    """The budget the default design epsilon is a share of."""
    if plan.budget is not None:
        return plan.budget
    assert plan.per_variable is not None  # a plan that takes a budget has one of the two (plan_release)
    return math.fsum(plan.per_variable.values())


def dp_frequencies(margins: Mapping[str, np.ndarray], epsilon: float, rng: random.Random | None, *,
                   keyed: Mapping[str, tuple[SecretKey, Sequence[Any]]] | None = None,
                   ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """Noisy counts of each histogram, and their post-processed proportions.

    The geometric mechanism at L1 sensitivity 2 per histogram; the design budget is
    shared in proportion to the histograms' cells (the same noise relative to a mean count,
    :func:`pramkit.ledger.default_design_epsilon`).

    Parameters
    ----------
    margins : mapping of str to numpy.ndarray
        Exact counts per histogram.
    epsilon : float
        The design budget.
    rng : random.Random or None
        Randomness of the noise.
    keyed : mapping of str to (SecretKey, labels), optional
        Per histogram, a key and the labels of its cells: its noise is then drawn from
        ``key.design_random(query, measured)`` with ``query`` naming the histogram, its cells
        and its epsilon exactly (:func:`noise_query`) and ``measured`` the exact counts
        (:func:`measured_bytes`, hashed under the key, never published), and ``rng`` is not
        used.  The same question on the same data gets the same noise (a design made with a
        key file is made again with it); on other data, independent noise, so two designs
        never add one noise vector to two different histograms.

    Returns
    -------
    (dict, dict)
        Per histogram, proportions (no category below one count: noise never leaves a
        category probability 0) and the DP output.

    Examples
    --------
    >>> p, out = dp_frequencies({"sex": np.array([966, 1034])}, 0.1, random.Random(1))
    >>> round(float(p["sex"].sum()), 12), out["sex"]["epsilon"] <= 0.1
    (1.0, True)

    With a key, one record changed (a neighbouring file) gets other noise:

    >>> from pramkit.kernel.rng import SecretKey
    >>> keyed = {"sex": (SecretKey(bytes(32), "zeros"), ["f", "m"])}
    >>> def noise(counts):
    ...     _, out = dp_frequencies({"sex": counts}, 0.1, None, keyed=keyed)
    ...     return np.array(out["sex"]["noisy"]) - counts
    >>> a, b = np.array([966, 1034]), np.array([967, 1033])
    >>> bool((noise(a) == noise(a)).all()), bool((noise(a) == noise(b)).all())
    (True, False)
    """
    from pramkit.privacy.geometric import dp_counts

    shares = split_within(epsilon, 0.0, [float(len(c)) for c in margins.values()])
    ps: dict[str, np.ndarray] = {}
    outputs: dict[str, dict[str, Any]] = {}
    for (name, counts), eps in zip(margins.items(), shares):
        exact = np.asarray(counts, dtype=np.int64)
        source = rng if keyed is None else keyed[name][0].design_random(noise_query(name, keyed[name][1], eps),
                                                                        measured_bytes(exact))
        noisy = dp_counts(exact, eps, sensitivity=2, rng=source)
        ps[name] = noisy.proportions(floor=1.0)
        outputs[name] = noisy.to_dict()
    return ps, outputs


def noise_query(name: str, labels: Sequence[Any], epsilon: float) -> str:
    """The exact description of one DP histogram: its name, its cells and its epsilon.

    Two queries that differ in anything get independent keyed noise.

    Examples
    --------
    >>> noise_query("sex", ["f", "m"], 0.05)
    "dp-counts|sex|0.05|['f', 'm']"
    """
    return f"dp-counts|{name}|{float(epsilon)!r}|{[_text(label) for label in labels]!r}"


def measured_bytes(counts: np.ndarray) -> bytes:
    """The canonical bytes of an exact histogram: its number of cells, then each count as a
    little-endian 64-bit integer (the same on every machine, however the counts were typed).

    Examples
    --------
    >>> measured_bytes(np.array([3, 4], dtype=np.int32)) == measured_bytes([3, 4])
    True
    >>> len(measured_bytes([3, 4]))
    24
    """
    c = np.ascontiguousarray(np.asarray(counts, dtype=np.int64).ravel(), dtype="<i8")
    return c.size.to_bytes(8, "little") + c.tobytes()


def _text(label: Any) -> Any:
    """A label as plain values (a joint cell as a tuple of texts), the same however it was read."""
    return tuple(_text(x) for x in label) if isinstance(label, tuple) else str(label)


def _product(ps: Sequence[np.ndarray]) -> np.ndarray:
    """The joint distribution of independent variables (a prior gives margins only)."""
    out = np.ones(1)
    for p in ps:
        out = np.outer(out, p).ravel()
    return out
