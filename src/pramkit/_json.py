"""Plain JSON values from pramkit's results."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values from results (NumPy scalars and arrays, infinities as "inf").

    Parameters
    ----------
    obj : Any
        A result: dicts (keys become text), lists and tuples (become lists),
        NumPy arrays and scalars, floats and other plain values, nested at will.

    Returns
    -------
    Any
        The same structure in values :func:`json.dumps` writes as strict JSON:
        infinities become ``"inf"`` and ``"-inf"``, NaN becomes ``None``.

    Examples
    --------
    >>> import json
    >>> value = to_jsonable({"epsilon": np.float64(np.inf), "counts": np.array([3, 1]), 2: (np.nan, 0.5)})
    >>> value
    {'epsilon': 'inf', 'counts': [3, 1], '2': [None, 0.5]}
    >>> json.loads(json.dumps(value, allow_nan=False)) == value  # strict JSON, read back unchanged
    True
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else None)
    return obj
