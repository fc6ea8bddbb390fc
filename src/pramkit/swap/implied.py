"""The misclassification matrix that swapping implies for the geography, and its epsilon.

Swapping the geography of households is a misclassification of the geography
variable: ``M[a, b] = P(released area b | original area a)``, per household.

**Random swapping** (no risk variables) at rate ``s``: each area ``a`` of ``n_a``
households selects ``q_a = s n_a / 2`` of them (its quota); each selected household takes a
donor among the households not yet swapped of the other areas of its parent (or of the whole
file, donor rule ``any-area``), the area with probability proportional to the households left
in it.  A household moves when it is selected or taken as a donor, so with ``G[a, c]`` the
expected number of households selected in ``a`` whose donor lies in ``c``,

    M[a, c] = (G[a, c] + G[c, a]) / n_a      (c != a),   M[a, a] = 1 - sum_c M[a, c].

``G`` is computed for the order in which each rule visits the households
(:func:`swap_flows`): under ``same-parent`` the selected households of all areas come in one
random order, and the donors left ``U_c(t)`` follow the fluid (mean-field) limit of that urn,
``dU_c/dt = -U_c sum_{a != c} q_a / (U - U_a)``, ``dG[a, c]/dt = q_a U_c / (U - U_a)`` for
``t`` in [0, 1] (``U`` the sum), integrated by an exponential midpoint rule; under ``any-area``
the areas take turns in a random order, every household of the other areas not yet swapped
being a donor, so a turn takes ``k = min(q_a, R_a)`` donors in proportion to the households
``R_c`` left (exact in expectation for a given turn), averaged over the orders.  To first order
in ``s`` both give the formula ``M[a, c] = (s / 2) n_c / (H - n_a) + (s / 2) n_c / (H - n_c)``,
which overshoots at high rates (a negative diagonal at rate 1: it counts donors already used).

**The diagonal is never negative.**  A row's off-diagonal mass is (the households of ``a``
selected and paired + those taken as donors) / ``n_a``.  Both schemes keep the first at most
``q_a`` (a step's draws of a source are capped at its share ``q_a h``) and the second at most
``n_a - q_a`` (an area gives at most ``1 - e^-x < 1`` of the donors it has left; under ``any-area``,
``n_a`` less the ``k_a`` it selects, and then ``k_a`` replaces ``q_a``), so the
mass is at most ``(q_a + n_a - q_a) / n_a = 1``; what rounding leaves below 0 (a few ulps) is
set to 0 and the row renormalised.  With equal areas every selected household finds a donor and
each area gives as many as it takes, so both rules give form (8) exactly.

The household counts per area are public: a swap exchanges one household for
another, so the released file holds exactly the original counts.  With equal
areas, ``M = (1 - s) I + s / (A - 1) (J - I)``, form (8) of Ayed, Battiston and
Camerlenghi, whose epsilon (Shlomo and Skinner 2012, sec. 4) is

    epsilon = | ln((1 - s)(A - 1) / s) |.

Every epsilon here comes from the exact, outward-rounded code of
:mod:`pramkit.privacy` (:attr:`pramkit.matrix.PramMatrix.epsilon`);
:func:`random_swap_epsilon` is the closed form, kept to check it.  With several
levels the matrix is block-diagonal (one block per parent): the parent is
released exactly, the epsilon is infinite and the epsilon given the parent is
the largest block's.  The household counts per area are preserved and ``n`` is
stationary under ``M``, so a corrected margin of households equals the released
one; the matrix corrects tables of the geography crossed with variables that do not
drive the draw (a similarity variable does).  A run's own transition table
(:func:`transition_table`) is private: it is computed from the original file.

**Targeted swapping** chooses the households from the data (the risky ones), so
no matrix is known in advance and no epsilon bounds it: the ledger says so in
words (:func:`pramkit.ledger.swapping_statement`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance

#: Steps of the exponential midpoint rule of the ``same-parent`` fluid limit (its error is O(steps^-2)).
FLUID_STEPS = 2048
#: Area orders averaged for the ``any-area`` rule: every order when there are at most this many (8 areas),
#: else orders drawn with a fixed public seed, :data:`ANY_AREA_CELLS` / A of them (at least 256).
ANY_AREA_ORDERS = 40_320
#: Orders times areas held at once when the ``any-area`` orders are drawn (memory and time O(this x A)).
ANY_AREA_CELLS = 500_000


def random_swap_matrix(rate: float, areas: Sequence[Label], parents: Sequence[Label] | None = None,
                       households: Sequence[int] | None = None, *, donors: str = "same-parent") -> PramMatrix:
    """The expected matrix of random swapping at ``rate`` (see the module's formula).

    Parameters
    ----------
    rate : float
        The swap rate ``s`` in [0, 1].
    areas : sequence of labels
        The ``A >= 2`` areas of the lowest level.
    parents : sequence of labels, optional
        Each area's parent (a geography of two levels or more): donors share it.
    households : sequence of int, optional
        Households per area (the released file's counts); default equal areas, form (8).
    donors : {"same-parent", "any-area"}
        The donor rule, which sets the order in which donors are used (:func:`swap_flows`).

    Returns
    -------
    PramMatrix
        Form (8) for equal areas under one parent; dense blocks otherwise, block-diagonal
        by parent (an area alone in its parent is never swapped).

    Raises
    ------
    ParameterError
        Fewer than two areas, a rate outside [0, 1], or counts that do not fit the areas.

    Examples
    --------
    >>> m = random_swap_matrix(0.1, ["A", "B", "C"])
    >>> m.matrix.round(3).tolist()
    [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]]
    >>> math.isclose(m.epsilon, random_swap_epsilon(0.1, 3))
    True
    >>> b = random_swap_matrix(0.1, ["A", "B", "C", "D"], parents=["N", "N", "N", "S"])
    >>> b.epsilon, math.isclose(b.block_epsilon, random_swap_epsilon(0.1, 3)), b.matrix[3].tolist()
    (inf, True, [0.0, 0.0, 0.0, 1.0])
    >>> u = random_swap_matrix(0.2, ["A", "B", "C"], households=[100, 100, 200])
    >>> u.matrix.round(4).tolist()
    [[0.7675, 0.0649, 0.1675], [0.0649, 0.7675, 0.1675], [0.0838, 0.0838, 0.8325]]

    At rate 1 every household of two equal areas moves; of unequal ones, the large area's
    households that find no donor stay:

    >>> random_swap_matrix(1.0, ["A", "B"]).matrix.tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> random_swap_matrix(1.0, ["A", "B"], households=[300, 100]).matrix.round(4).tolist()
    [[0.6667, 0.3333], [1.0, 0.0]]
    """
    if not (isinstance(rate, (int, float)) and 0.0 <= rate <= 1.0):
        raise ParameterError(f"the swap rate must be a number in [0, 1], got {rate!r}")
    labels = list(areas)
    if len(labels) < 2:
        raise ParameterError("random swapping needs at least two areas")
    counts = np.ones(len(labels)) if households is None else np.asarray(households, dtype=float)
    if counts.shape != (len(labels),) or (counts <= 0).any():
        raise ParameterError("households per area must be one positive count per area")
    above = None if parents is None else tuple(parents)
    kinds = tuple(map(type, (rate, *labels, *(above or ()))))   # 1, 1.0 and True are equal keys, not equal labels
    return _swap_matrix(rate, tuple(labels), above, tuple(counts.tolist()), donors, kinds)


@functools.lru_cache(maxsize=2)
def _swap_matrix(rate: float, labels: tuple[Label, ...], parents: tuple[Label, ...] | None,
                 counts: tuple[float, ...], donors: str, kinds: tuple[type, ...]) -> PramMatrix:
    """:func:`random_swap_matrix` of checked arguments (``kinds``: the types of the rate and the labels, part
    of the key), made once for the same ones: a swap's manifest, receipt and result each state it, and a
    :class:`PramMatrix` is read-only."""
    provenance = Provenance("random_record_swapping", {"rate": rate})
    n = np.array(counts)
    groups: dict[Label, list[int]] = {}
    for i, parent in enumerate([None] * len(labels) if parents is None else parents):
        groups.setdefault(parent, []).append(i)
    blocks = list(groups.values())
    flows = _block_flows(rate, [n[idx] for idx in blocks], donors)
    parts = [_block(rate, [labels[i] for i in idx], n[idx], provenance, f) for idx, f in zip(blocks, flows)]
    if len(parts) == 1:
        return parts[0]
    return PramMatrix.block_diagonal(parts, categories=labels, provenance=provenance)


def _block_flows(rate: float, counts: list[np.ndarray], donors: str) -> list[np.ndarray | None]:
    """The expected flows (:func:`swap_flows`) of each parent's block whose areas are not all equal (``None``
    for the others); the ``same-parent`` fluid limits of blocks of one size run together, each the same
    to the bit as alone."""
    flows: list[np.ndarray | None] = [None] * len(counts)
    by_size: dict[int, list[int]] = {}
    for b, n in enumerate(counts):
        if n.size > 1 and not np.all(n == n[0]):
            by_size.setdefault(n.size, []).append(b)
    for members in by_size.values():
        if donors != "same-parent":
            for b in members:
                flows[b] = swap_flows(rate, counts[b], donors=donors)
            continue
        n = np.stack([counts[b] for b in members])
        for b, f in zip(members, _fluid_flows(rate * n / 2.0, n - rate * n / 2.0)):
            flows[b] = f
    return flows


def _block(rate: float, areas: list[Label], n: np.ndarray, provenance: Provenance,
           flows: np.ndarray | None) -> PramMatrix:
    """The block of one parent: the identity for one area, form (8) for equal areas, else from the expected
    ``flows`` (:func:`swap_flows`)."""
    a = len(areas)
    if a == 1:
        return PramMatrix.identity(areas)
    if flows is None:
        return PramMatrix.form8(np.full(a, 1.0 - rate), np.full(a, rate / (a - 1)), categories=areas,
                                provenance=provenance)
    m = (flows + flows.T) / n[:, None]
    # the off-diagonal mass of a row is at most 1 (module docstring): only rounding can leave it above
    np.fill_diagonal(m, np.maximum(1.0 - m.sum(axis=1), 0.0))
    m /= m.sum(axis=1, keepdims=True)
    return PramMatrix(m, areas, provenance)


def swap_flows(rate: float, households: Sequence[float] | np.ndarray, *, donors: str = "same-parent") -> np.ndarray:
    """Expected flows of random swapping among the areas of one parent: ``G[a, c]``, the expected number of
    households selected in area ``a`` whose donor lies in area ``c`` (see the module's model).

    Parameters
    ----------
    rate : float
        The swap rate ``s`` in [0, 1]; area ``a`` selects ``s n_a / 2`` households.
    households : sequence of float
        Households per area, ``n_a > 0``.
    donors : {"same-parent", "any-area"}
        ``same-parent``: the selected households of every area in one random order (fluid limit);
        ``any-area``: the areas in turns, in a random order (averaged over the orders).

    Returns
    -------
    numpy.ndarray, shape (A, A)
        Zero diagonal; row ``a`` sums to at most ``s n_a / 2`` (the selected households that find a
        donor), column ``c`` to at most ``n_c - s n_c / 2`` (``same-parent``: the households not
        selected; ``any-area``: ``n_c`` less those selected at its own turn).

    Raises
    ------
    ParameterError
        An unknown donor rule.

    Examples
    --------
    Two areas at rate 1: the small one's 50 selected households all find donors; of the large
    one's 150, only 50 do (the small area has 50 households left to give).

    >>> swap_flows(1.0, [300, 100]).round(6).tolist()
    [[0.0, 50.0], [50.0, 0.0]]
    >>> g = swap_flows(0.1, [100, 200, 300])
    >>> bool(np.allclose(g.sum(axis=1), 0.05 * np.array([100, 200, 300])))   # every selected household is paired
    True
    """
    n = np.asarray(households, dtype=float)
    if donors == "same-parent":
        return _fluid_flows(rate * n / 2.0, n - rate * n / 2.0)
    if donors == "any-area":
        return _turn_flows(rate * n / 2.0, n)
    raise ParameterError(f"unknown donor rule {donors!r}; use same-parent or any-area")


def _fluid_flows(q: np.ndarray, left: np.ndarray, steps: int = FLUID_STEPS) -> np.ndarray:
    """The fluid limit of the ``same-parent`` urn: sources ``q`` draw at constant rates over [0, 1], each
    draw taking a donor of another area in proportion to the donors ``left`` there (exponential midpoint
    rule: over a step, area ``c`` gives ``1 - e^(-lambda_c h)`` of its donors, split among the sources in
    proportion to their rates, a source's share of a step capped at ``q_a h``; so no column takes more
    than its donors and no row more than ``q``).  ``q`` and ``left`` of shape ``(A,)``, or ``(G, A)``
    for ``G`` parents of ``A`` areas each: their flows ``(G, A, A)``, each summed in the same order as
    alone."""
    one = q.ndim == 1
    q = np.atleast_2d(q)

    def rates(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        others = u.sum(axis=1, keepdims=True) - u
        r = np.where(others > 0.0, q / others, 0.0)   # a source with no donor left draws nothing
        return r, r.sum(axis=1, keepdims=True) - r    # lambda_c = sum over sources a != c of r_a

    h = 1.0 / steps
    cap = q * h
    u = np.atleast_2d(left).astype(float)
    flows = np.zeros((*q.shape, q.shape[1]))
    step = np.empty_like(flows)
    diagonal = np.arange(q.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(steps):
            _, lam = rates(u)
            r, lam = rates(u * np.exp(-lam * h / 2.0))
            taken = -u * np.expm1(-lam * h)
            per_rate = np.where(lam > 0.0, taken / lam, 0.0)
            np.multiply(r[:, :, None], per_rate[:, None, :], out=step)
            step[:, diagonal, diagonal] = 0.0               # no donor from a household's own area
            drawn = step.sum(axis=2)                        # a source draws at most q_a h in a step
            step *= np.where(drawn > cap, cap / drawn, 1.0)[:, :, None]
            flows += step
            u = np.maximum(u - step.sum(axis=1), 0.0)       # what the step took, never more than was left
    return flows[0] if one else flows


def _turn_flows(q: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The ``any-area`` turns: at its turn, area ``a`` selects ``k = min(q_a, R_a)`` of its households
    left and they take ``k`` donors among the ``S`` households left elsewhere, ``k R_c / S`` from area
    ``c`` in expectation (a uniform draw without replacement); averaged over every order of the areas
    (up to :data:`ANY_AREA_ORDERS` of them), or over orders drawn with a fixed seed.  The areas are
    first sorted by size, so that relabelling them permutes the matrix and changes nothing else."""
    a = q.size
    sort = np.argsort(n, kind="stable")
    q, n = q[sort], n[sort]
    if math.factorial(a) <= ANY_AREA_ORDERS:
        perms = np.array(list(itertools.permutations(range(a))), dtype=np.intp)
    else:
        count = min(max(ANY_AREA_CELLS // a, 256), ANY_AREA_ORDERS)
        perms = np.argsort(np.random.default_rng(20_240_611).random((count, a)), axis=1)
    rows = np.arange(perms.shape[0])
    left = np.broadcast_to(n, perms.shape).astype(float).copy()
    flows = np.zeros((a, a))
    for turn in range(a):
        own = perms[:, turn]
        k = np.minimum(q[own], left[rows, own])
        left[rows, own] -= k
        others = left.sum(axis=1) - left[rows, own]
        k = np.minimum(k, others)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(others[:, None] > 0.0, k[:, None] * left / others[:, None], 0.0)
        share[rows, own] = 0.0
        by_area = np.argsort(own, kind="stable")
        present = np.flatnonzero(np.bincount(own, minlength=a))
        flows[present] += np.add.reduceat(share[by_area], np.searchsorted(own[by_area], present), axis=0)
        left -= share
    flows = _tied(flows / perms.shape[0], n)
    out = np.empty_like(flows)
    out[np.ix_(sort, sort)] = flows
    return out


def _tied(flows: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``flows`` averaged over the areas of equal size, which are exchangeable (the drawn orders are not
    symmetric in them): each entry becomes the mean of its pair of size classes, the diagonal kept 0."""
    _, cls = np.unique(n, return_inverse=True)
    if cls.max() + 1 == n.size:
        return flows
    classes = int(cls.max()) + 1
    onehot = np.zeros((n.size, classes))
    onehot[np.arange(n.size), cls] = 1.0
    size = onehot.sum(axis=0)
    pairs = np.outer(size, size) - np.diag(size)        # ordered pairs of distinct areas between two classes
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(pairs > 0, onehot.T @ flows @ onehot / pairs, 0.0)
    out = mean[np.ix_(cls, cls)]
    np.fill_diagonal(out, 0.0)
    return out


def random_swap_epsilon(rate: float, areas: int) -> float:
    """The closed form ``|ln((1 - s)(A - 1) / s)|`` of the epsilon of random swapping between ``A`` equal
    areas (not rounded outward).

    Parameters
    ----------
    rate : float
        The swap rate ``s``.
    areas : int
        ``A``.

    Returns
    -------
    float
        ``inf`` when ``s`` is 0 or 1 (an entry is zero).

    Examples
    --------
    >>> round(random_swap_epsilon(0.05, 300), 6)  # the census geography at the ONS's low rate
    8.644883
    >>> random_swap_epsilon(0.0, 300)
    inf
    """
    if rate <= 0.0 or rate >= 1.0:
        return math.inf
    return abs(math.log((1.0 - rate) * (areas - 1) / rate))


def transition_table(original: np.ndarray, released: np.ndarray, areas: int) -> np.ndarray:
    """Counts of (original area, released area): the realised transition table of one run (private).

    Parameters
    ----------
    original, released : numpy.ndarray of int
        Area codes 0..areas - 1, one per unit (person or household).
    areas : int
        The number of areas.

    Returns
    -------
    numpy.ndarray of int64, shape (areas, areas)

    Examples
    --------
    >>> transition_table(np.array([0, 0, 1]), np.array([0, 1, 0]), 2).tolist()
    [[1, 1], [1, 0]]
    """
    return np.bincount(original * areas + released, minlength=areas * areas).reshape(areas, areas)
