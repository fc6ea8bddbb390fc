"""The misclassification matrix that swapping implies for the geography, and its epsilon.

Swapping the geography of households is a misclassification of the geography
variable: ``M[a, b] = P(released area b | original area a)``.

* **Random swapping** between ``A`` areas at rate ``s`` (every household swapped
  with probability ``s``, its new area uniform over the ``A - 1`` others) has the
  expected matrix ``M = (1 - s) I + s / (A - 1) (J - I)``, form (8) of Ayed,
  Battiston and Camerlenghi, whose epsilon (Shlomo and Skinner 2012, sec. 4) is

      epsilon = | ln((1 - s)(A - 1) / s) |,

  computed here by the exact, outward-rounded code of :mod:`pramkit.privacy`
  (:func:`pramkit.privacy.epsilon.form8_matrix_epsilon`); :func:`random_swap_epsilon`
  is the closed form, kept to check it.  With a geography of several levels the
  donors of the lowest level share the area above, so the matrix is block-diagonal
  (one such block per area above): the level above is released exactly and the
  epsilon given it is the largest block's.  A swap run draws its households by the
  rules of :mod:`pramkit.engine.swap.core` (quotas per area, donors weighted by
  household counts), so it realises this matrix only on average over areas; its
  own transition table (:func:`transition_table`) is private, since it is
  computed from the original file.
* **Targeted swapping** chooses the households from the data (the risky ones),
  so no matrix is known in advance and no epsilon bounds it: the ledger says so
  in words (:func:`pramkit.ledger.swapping_statement`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix, Provenance


def random_swap_matrix(rate: float, areas: Sequence[Label], parents: Sequence[Label] | None = None) -> PramMatrix:
    """The expected matrix of random swapping at ``rate`` between ``areas`` (form (8), stored compactly).

    With ``parents`` (the area of the level above each area), donors come from the same
    parent: the matrix is block-diagonal, one form (8) block per parent (an area alone in its
    parent is never swapped), its epsilon infinite (the parent is released exactly) and its
    epsilon given the block that of the largest block.

    Parameters
    ----------
    rate : float
        The swap rate ``s`` in [0, 1].
    areas : sequence of labels
        The ``A >= 2`` areas of the lowest level.
    parents : sequence of labels, optional
        Each area's parent (a geography of two levels or more).

    Returns
    -------
    PramMatrix
        Diagonal ``1 - s``, off-diagonal ``s / (A - 1)`` (within each parent).

    Raises
    ------
    ParameterError
        Fewer than two areas.

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
    """
    labels = list(areas)
    if len(labels) < 2:
        raise ParameterError("random swapping needs at least two areas")
    provenance = Provenance("random_record_swapping", {"rate": rate})
    if parents is None or len(set(parents)) == 1:
        return _uniform(rate, labels, provenance)
    groups: dict[Label, list[Label]] = {}
    for area, parent in zip(labels, parents):
        groups.setdefault(parent, []).append(area)
    parts = [_uniform(rate, g, provenance) if len(g) > 1 else PramMatrix.identity(g) for g in groups.values()]
    return PramMatrix.block_diagonal(parts, categories=labels, provenance=provenance)


def _uniform(rate: float, areas: list[Label], provenance: Provenance) -> PramMatrix:
    a = len(areas)
    return PramMatrix.form8(np.full(a, 1.0 - rate), np.full(a, rate / (a - 1)), categories=areas,
                            provenance=provenance)


def random_swap_epsilon(rate: float, areas: int) -> float:
    """The closed form ``|ln((1 - s)(A - 1) / s)|`` of the random swap matrix's epsilon (not rounded outward).

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
