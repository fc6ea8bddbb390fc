"""Applying a PRAM matrix to category codes with keyed, counter-based draws.

Row ``i`` of variable ``v`` is perturbed with the uniform ``U(key, v, i)`` of
:mod:`pramkit.rng`, so the result does not depend on how the rows are split
into chunks or partitions: pass the absolute row number of a chunk's first row
as ``start``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import DataError
from pramkit.matrix import PramMatrix
from pramkit.rng import SecretKey, uniforms
from pramkit.sampling import BLOCK, Sampler, sampler_for

#: Code of a missing value.
MISSING = -1


def perturb_codes(
    codes: ArrayLike,
    matrix: PramMatrix | Sampler,
    *,
    key: SecretKey,
    variable: str,
    start: int = 0,
) -> np.ndarray:
    """Released codes for original ``codes`` (``-1`` = missing, kept missing).

    Parameters
    ----------
    codes : integer array of codes in ``-1..S-1``
    matrix : the PRAM matrix (or a sampler prepared from it, to reuse across chunks)
    key : the secret key (see :func:`pramkit.rng.resolve_key`)
    variable : the variable's name; it selects the variable's random stream
    start : absolute row number of ``codes[0]`` in the file
    """
    c = np.ascontiguousarray(codes)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer):
        raise DataError("codes must be a 1-D integer array")
    c = c.astype(np.intp, copy=False)
    sampler = sampler_for(matrix) if isinstance(matrix, PramMatrix) else matrix
    n = c.size
    out = np.empty(n, dtype=np.intp)
    if n == 0:
        return out
    lo, hi = int(c.min()), int(c.max())
    if lo < MISSING or hi >= sampler.size:
        raise DataError(f"codes must lie in -1..{sampler.size - 1}, found {lo if lo < MISSING else hi}")
    missing = lo == MISSING
    u = np.empty(min(BLOCK, n))
    for s in range(0, n, BLOCK):
        e = min(s + BLOCK, n)
        uu = uniforms(key, variable, start + s, e - s, out=u)
        block = c[s:e]
        if missing:
            valid = block >= 0
            block = np.where(valid, block, 0)
        sampler.draw(block, uu, out[s:e])
        if missing:
            out[s:e][~valid] = MISSING
    return out
