"""The misclassification matrix that swapping implies for the geography, and its epsilon.

Swapping the geography of households is a misclassification of the geography
variable: ``M[a, b] = P(released area b | original area a)``, per household.

**Random swapping** (no risk variables) at rate ``s``: a household of area ``a``
moves when it is drawn (probability ``s / 2``: the quota of its area is
``s n_a / 2``), to the area of a donor drawn among the households of the other
areas of its parent, or when a household drawn in another area ``c`` picks it as
donor.  To first order (donors not yet used), with ``n_a`` households in area
``a`` and ``H`` in its parent,

    M[a, c] = (s / 2) n_c / (H - n_a) + (s / 2) n_c / (H - n_c)      (c != a, same parent)

and ``M[a, a] = 1 - sum_c M[a, c]``; areas of other parents are never reached.
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

import math
from collections.abc import Sequence

import numpy as np

from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance


def random_swap_matrix(rate: float, areas: Sequence[Label], parents: Sequence[Label] | None = None,
                       households: Sequence[int] | None = None) -> PramMatrix:
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

    Returns
    -------
    PramMatrix
        Form (8) for equal areas under one parent; dense blocks otherwise, block-diagonal
        by parent (an area alone in its parent is never swapped).

    Raises
    ------
    ParameterError
        Fewer than two areas, or counts that do not fit the areas.

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
    [[0.7667, 0.0667, 0.1667], [0.0667, 0.7667, 0.1667], [0.0833, 0.0833, 0.8333]]
    """
    labels = list(areas)
    if len(labels) < 2:
        raise ParameterError("random swapping needs at least two areas")
    counts = np.ones(len(labels)) if households is None else np.asarray(households, dtype=float)
    if counts.shape != (len(labels),) or (counts <= 0).any():
        raise ParameterError("households per area must be one positive count per area")
    provenance = Provenance("random_record_swapping", {"rate": rate})
    groups: dict[Label, list[int]] = {}
    for i, parent in enumerate([None] * len(labels) if parents is None else list(parents)):
        groups.setdefault(parent, []).append(i)
    parts = [_block(rate, [labels[i] for i in idx], counts[idx], provenance) for idx in groups.values()]
    if len(parts) == 1:
        return parts[0]
    return PramMatrix.block_diagonal(parts, categories=labels, provenance=provenance)


def _block(rate: float, areas: list[Label], n: np.ndarray, provenance: Provenance) -> PramMatrix:
    """The block of one parent: form (8) for equal areas, else the first-order formula."""
    a = len(areas)
    if a == 1:
        return PramMatrix.identity(areas)
    if np.all(n == n[0]):
        return PramMatrix.form8(np.full(a, 1.0 - rate), np.full(a, rate / (a - 1)), categories=areas,
                                provenance=provenance)
    total = n.sum()
    half = rate / 2.0
    m = half * n[None, :] / (total - n[:, None]) + half * (n / (total - n))[None, :]
    np.fill_diagonal(m, 0.0)
    np.fill_diagonal(m, 1.0 - m.sum(axis=1))
    return PramMatrix(m, areas, provenance)


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
