"""Classic PRAM designs with closed forms."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pramkit.errors import PramkitError
from pramkit.matrix import Label, PramMatrix, Provenance


def randomized_response(categories: Sequence[Label], epsilon: float) -> PramMatrix:
    """Symmetric (k-ary) randomized response at exactly ``epsilon``:
    keep with ``q = e^eps / (e^eps + S - 1)``, otherwise uniform over the other S - 1.

    Its epsilon (largest log-ratio in a column) is ``log(q / ((1-q)/(S-1))) = epsilon``.
    It is the symmetric DP-optimal matrix of form (8) (Ayed, Battiston and
    Camerlenghi, section 3.1).
    """
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise PramkitError(f"epsilon must be a positive finite number, got {epsilon!r}")
    s = len(categories)
    if s < 2:
        raise PramkitError("randomized response needs at least two categories")
    e = math.exp(epsilon) if epsilon < 700 else math.inf
    q = 1.0 if math.isinf(e) else e / (e + s - 1)
    return PramMatrix.from_diagonal(
        np.full(s, q), categories,
        Provenance(method="randomized_response", parameters={"epsilon": float(epsilon)}),
    )
