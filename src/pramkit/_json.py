"""Plain JSON values from pramkit's results."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
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
        return list(obj) if _finite_numbers(obj) else [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "iu" or (obj.dtype.kind == "f" and bool(np.isfinite(obj).all())):
            return obj.tolist()
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else None)
    return obj


def _finite_numbers(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether the values are all plain ``int`` or all finite plain ``float`` (no ``bool``, no
    NumPy scalar): the fast path of :func:`to_jsonable`, which then copies the list as it is.  The
    types are collected in C; a sum of floats is finite only if every term is (an infinity or NaN
    stays in it), and a sum of finite floats that overflows only sends the list down the slow
    path, which decides element by element."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return math.isfinite(sum(values))
    return kinds <= {int}


def dumps(value: Any, indent: int = 2) -> str:
    """Strict JSON text of plain values (:func:`to_jsonable`'s output), indented, with every array
    of scalars on one line.

    :func:`json.dumps` with ``indent`` runs its pure-Python encoder (about 3 us per number);
    here objects and arrays of arrays are indented and each array of scalars (a matrix row, a
    vector of probabilities) is one call of the C encoder.  The text parses to the same value as
    ``json.dumps(value, indent=indent)``.

    Parameters
    ----------
    value : Any
        Dicts with text keys, lists, text, numbers, booleans and None.
    indent : int, default 2
        Spaces per level.

    Returns
    -------
    str
        The JSON text, without a final newline.

    Raises
    ------
    ValueError
        If a number is NaN or infinite (strict JSON: convert with :func:`to_jsonable` first).

    Examples
    --------
    >>> print(dumps({"q": [0.5, 0.25], "m": [[1, 0], [0, 1]], "ok": True}))
    {
      "q": [0.5, 0.25],
      "m": [
        [1, 0],
        [0, 1]
      ],
      "ok": true
    }
    >>> value = {"a": [{"b": []}, [1.5, "x", None]], "c": {}}
    >>> json.loads(dumps(value)) == value
    True
    """
    parts: list[str] = []
    _write(value, indent, 0, parts)
    return "".join(parts)


def _write(value: Any, indent: int, level: int, parts: list[str]) -> None:
    """Append the text of ``value`` at nesting ``level`` to ``parts`` (:func:`dumps`)."""
    if isinstance(value, dict) and value:
        inner = "\n" + " " * (indent * (level + 1))
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            parts.append(("," if i else "") + inner + json.dumps(str(key)) + ": ")
            _write(item, indent, level + 1, parts)
        parts.append("\n" + " " * (indent * level) + "}")
    elif isinstance(value, list) and any(issubclass(kind, (dict, list)) for kind in set(map(type, value))):
        inner = "\n" + " " * (indent * (level + 1))
        parts.append("[")
        for i, item in enumerate(value):
            parts.append(("," if i else "") + inner)
            _write(item, indent, level + 1, parts)
        parts.append("\n" + " " * (indent * level) + "]")
    else:
        parts.append(json.dumps(value, allow_nan=False))


#: The kinds of JSON object the commands print (``--json``, and ``pramkit reproduce``), each with the
#: version of its format.  Every printed object starts with ``"format"`` (the kind) and ``"version"``
#: (an integer); a version grows only when a field changes meaning or goes away (fields are added
#: freely, so a reader ignores fields it does not know).  Each kind has a JSON Schema, installed with the
#: package (:func:`output_schema`; ``src/pramkit/schemas``, which docs/schemas shows).
OUTPUT_FORMATS: dict[str, int] = {
    "pramkit.apply.result": 1,
    "pramkit.attack.result": 1,
    "pramkit.audit.result": 1,
    "pramkit.compare.result": 1,
    "pramkit.design.matrix": 1,
    "pramkit.design.release": 1,
    "pramkit.design.derived": 1,
    "pramkit.estimate.result": 1,
    "pramkit.estimate.regression": 1,
    "pramkit.inspect.result": 1,
    "pramkit.new-ids.result": 1,
    "pramkit.reproduce.result": 1,
    "pramkit.resample.result": 1,
    "pramkit.risk.identification": 1,
    "pramkit.risk.household": 1,
    "pramkit.risk.suda": 1,
    "pramkit.risk.contributions": 1,
    "pramkit.risk.kanonymity": 1,
    "pramkit.suppress.result": 1,
    "pramkit.swap.result": 1,
    "pramkit.synthesize.result": 1,
}


def stamp(value: dict[str, Any], kind: str) -> dict[str, Any]:
    """A printed result with its ``"format"`` and ``"version"`` first (:data:`OUTPUT_FORMATS`).

    Parameters
    ----------
    value : dict
        The result (a ``to_dict()``), which holds neither field yet.
    kind : str
        Its kind, a key of :data:`OUTPUT_FORMATS`.

    Returns
    -------
    dict
        A new dict: ``format``, ``version``, then the fields of ``value`` in their order.

    Raises
    ------
    ValueError
        An unknown kind, or a result that already holds ``format`` or ``version``.

    Examples
    --------
    >>> stamp({"rows": 3}, "pramkit.apply.result")
    {'format': 'pramkit.apply.result', 'version': 1, 'rows': 3}
    >>> stamp({"rows": 3}, "pramkit.nothing")
    Traceback (most recent call last):
    ...
    ValueError: unknown output format 'pramkit.nothing'
    """
    if kind not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {kind!r}")
    taken = sorted({"format", "version"} & set(value))
    if taken:
        raise ValueError(f"a {kind} output already holds {', '.join(taken)}")
    return {"format": kind, "version": OUTPUT_FORMATS[kind], **value}


def json_same(a: Any, b: Any, rel: float = 1e-12) -> bool:
    """Whether two JSON values are equal, numbers within a relative ``rel`` (``"inf"`` and infinities alike).

    Examples
    --------
    >>> json_same({"a": [1.0, "x"]}, {"a": [1.0 + 1e-15, "x"]}), json_same([1, 2], [1, 3]), json_same(True, 1)
    (True, False, False)
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=rel, abs_tol=0.0))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_same(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_same(x, y, rel) for x, y in zip(a, b))
    return bool(a == b) and type(a) is type(b)


def output_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a kind of printed result, as installed with the package.

    Parameters
    ----------
    kind : str
        A key of :data:`OUTPUT_FORMATS`.

    Returns
    -------
    dict
        The schema, to give to any validator (the ``jsonschema`` package, say).

    Raises
    ------
    ValueError
        An unknown kind.

    Examples
    --------
    >>> schema = output_schema("pramkit.inspect.result")
    >>> schema["$schema"], schema["properties"]["format"]["const"]
    ('https://json-schema.org/draft/2020-12/schema', 'pramkit.inspect.result')
    """
    from importlib import resources

    if kind not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {kind!r}")
    return json.loads((resources.files("pramkit") / "schemas" / f"{kind}.json").read_text(encoding="utf-8"))


#: Largest JSON file pramkit reads (a manifest of 100 000 categories is under 20 MB).
MAX_JSON_BYTES = 256 * 2**20
#: Deepest nesting of arrays and objects pramkit reads (its own files nest fewer than 10 levels).
MAX_JSON_DEPTH = 64
#: Most digits of a whole number pramkit reads (a float holds at most about 1.8e308).
MAX_INT_DIGITS = 308


def read_json(path: str | os.PathLike, what: str, error: type[Exception], *,
              max_bytes: int | None = None, max_depth: int | None = None) -> Any:
    """Parse a JSON file within limits: at most ``max_bytes`` read, ``max_depth`` levels of nesting,
    finite numbers only; anything else raises ``error`` with one line naming ``what``.

    The file is read in pieces and never beyond ``max_bytes`` (a device or pipe that never ends is
    refused once the limit is reached); ``NaN``, ``Infinity``, a number that overflows a float
    (``1e999``) and whole numbers of more than :data:`MAX_INT_DIGITS` digits are refused, so no
    infinity or overflow reaches the caller.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        How messages name it (``"manifest 'm.json'"``).
    error : type of Exception
        The error raised (e.g. :class:`~pramkit.errors.ManifestError`).
    max_bytes, max_depth : int, optional
        The limits (default :data:`MAX_JSON_BYTES` and :data:`MAX_JSON_DEPTH`).

    Returns
    -------
    Any
        The parsed value.

    Raises
    ------
    error
        The file cannot be read, is not UTF-8 or not strict JSON, or exceeds a limit.
    FileNotFoundError
        The file does not exist (the caller names it as it likes).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.json"
    ...     for text in ('{"a": [1, 2.5]}', '{"a": 1e999}', "[" * 100 + "]" * 100, '{"a": ' + "9" * 400 + "}"):
    ...         _ = f.write_text(text)
    ...         try:
    ...             print(read_json(f, "the file", ValueError))
    ...         except ValueError as exc:
    ...             print(exc)
    {'a': [1, 2.5]}
    the file holds the number 1e999, too large for a float
    the file is nested more than 64 levels deep
    the file holds a whole number of 400 digits (at most 308)
    """
    max_bytes = MAX_JSON_BYTES if max_bytes is None else max_bytes
    max_depth = MAX_JSON_DEPTH if max_depth is None else max_depth
    chunks, size = [], 0
    try:
        with open(path, "rb") as fh:
            while size <= max_bytes:
                chunk = fh.read(min(2**20, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}") from None
    if size > max_bytes:
        raise error(f"{what} is larger than {max_bytes // 2**20} MiB (or never ends): not a file pramkit wrote")
    try:
        text = b"".join(chunks).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"cannot read {what}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=lambda name: _refuse(error, f"{what} contains {name}, which is not "
                                                                             'valid JSON (write infinity as "inf")'),
                          parse_float=lambda s: _float(s, what, error), parse_int=lambda s: _int(s, what, error))
    except json.JSONDecodeError as exc:
        raise error(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise error(f"{what} is nested more than {max_depth} levels deep") from None
    if isinstance(value, (dict, list)):
        _check_depth(value, what, error, max_depth)
    return value


def _refuse(error: type[Exception], message: str) -> Any:
    raise error(message)


def _float(text: str, what: str, error: type[Exception]) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise error(f"{what} holds the number {text}, too large for a float")
    return value


def _int(text: str, what: str, error: type[Exception]) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise error(f"{what} holds a whole number of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _check_depth(value: Any, what: str, error: type[Exception], max_depth: int) -> None:
    """Refuse arrays and objects nested more than ``max_depth`` levels (walked without recursion)."""
    level = [value]
    for _ in range(max_depth):
        level = [v for x in level for v in (x.values() if isinstance(x, dict) else x)
                 if isinstance(v, (dict, list))]
        if not level:
            return
    raise error(f"{what} is nested more than {max_depth} levels deep")
