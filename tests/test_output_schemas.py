"""The JSON Schemas of the ``--json`` outputs are made from the result types (:mod:`pramkit.outputs`).

Checked here: every kind of output has its declaration, and the installed file (``pramkit/schemas/KIND.json``,
which docs/schemas shows) is, to the byte, what the declaration makes; the type hints map to the schemas
that :func:`pramkit._json.to_jsonable` prints (numbers with their infinities and NaN, optional and nested
fields); and each schema refuses an output one field of which has the wrong type (an integer given a text,
a text given a number, a list given an object), for every field the schema constrains, nested ones too.
Real outputs of every command are validated in tests/test_json_schemas.py.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest

import pramkit
from pramkit._json import OUTPUT_FORMATS
from pramkit.outputs import FINITE, OUTPUTS, Output, Printed, json_schema, object_schema, schema, schema_text

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = Path(pramkit.__file__).resolve().parent / "schemas"
REGENERATE = "python -m pramkit.outputs"


@pytest.mark.parametrize("kind", sorted(OUTPUT_FORMATS))
def test_the_installed_schema_is_the_generated_one(kind: str) -> None:
    assert kind in OUTPUTS, f"{kind} has no declaration in pramkit.outputs.OUTPUTS: declare its result type there"
    jsonschema.Draft202012Validator.check_schema(schema(kind))
    assert pramkit.output_schema(kind) == schema(kind), (
        f"src/pramkit/schemas/{kind}.json is not what the result types and pramkit.outputs make: run {REGENERATE}")
    assert (SCHEMAS / f"{kind}.json").read_text(encoding="utf-8") == schema_text(kind), f"run {REGENERATE}"


def test_every_declaration_is_of_a_kind_and_every_kind_is_declared() -> None:
    assert set(OUTPUTS) == set(OUTPUT_FORMATS)
    assert all(isinstance(out, Output) and out.kind == kind for kind, out in OUTPUTS.items())
    with pytest.raises(ValueError, match="unknown output format"):
        schema("pramkit.nothing")


def test_the_hints_map_to_what_to_jsonable_prints() -> None:
    number = {"$ref": "#/$defs/number"}
    assert json_schema(int) == {"type": "integer"} and json_schema(bool) == {"type": "boolean"}
    assert json_schema(float) == number == json_schema(float | None)     # NaN prints as null already
    assert json_schema(str | None) == {"type": ["string", "null"]}
    assert json_schema(tuple[str, ...]) == json_schema(list[str]) == {"type": "array", "items": {"type": "string"}}
    assert json_schema(dict[str, int]) == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert json_schema(dict[str, Any]) == {"type": "object"} and json_schema(Any) == {}
    assert json_schema(Literal["a", "b"] | None) == {"enum": ["a", "b", None]}
    assert json_schema(Annotated[float, FINITE] | None) == {"type": ["number", "null"]}
    assert json_schema(Annotated[int, {"minimum": 0}]) == {"type": "integer", "minimum": 0}
    assert json_schema(int | list[int]) == {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]}
    with pytest.raises(TypeError, match="declare what is printed"):
        json_schema(Path)


@dataclasses.dataclass(frozen=True)
class Inner:
    name: str
    share: float


@dataclasses.dataclass(frozen=True)
class Result:
    rows: int
    inner: list[Inner]
    frame: Any = None
    path: str | None = None

    @property
    def half(self) -> float:
        return self.rows / 2


class Extra(TypedDict):
    a: int
    b: NotRequired[str]


def test_a_type_prints_its_fields_less_and_more() -> None:
    out = object_schema(Printed(type=Result, leave_out=("frame",), rename={"path": "out"}, add={"half": None},
                                optional=("out",), schemas={"rows": {"minimum": 0}}, descriptions={"half": "Half."}),
                        {})
    assert out["required"] == ["rows", "inner", "half"]
    assert out["properties"]["rows"] == {"type": "integer", "minimum": 0}
    assert out["properties"]["inner"]["items"]["required"] == ["name", "share"]
    assert out["properties"]["half"] == {"$ref": "#/$defs/number", "description": "Half."}
    assert "frame" not in out["properties"] and out["properties"]["out"] == {"type": ["string", "null"]}
    assert object_schema(Extra, {})["required"] == ["a"]
    with pytest.raises(TypeError, match="has no field"):
        object_schema(Printed(type=Result, leave_out=("nothing",)), {})
    with pytest.raises(TypeError, match="prints no field"):
        object_schema(Printed(type=Result, optional=("frame",), leave_out=("frame",)), {})


# --- Forged outputs ---------------------------------------------------------------------------------------

#: Values of every JSON type, the first a field refuses is its forgery (an integer field gets a text).
WRONG: list[Any] = ["a text", 7, 2.5, True, None, [1], {"a": 1}]


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` (to ``#/$defs/...``) replaced by what it names, its other keywords kept."""
    if "$ref" not in node:
        return node
    target = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _example(node: dict[str, Any], root: dict[str, Any]) -> Any:
    """A value that ``node`` accepts: every property of an object (optional ones too), one item of an array."""
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    if "anyOf" in node and "type" not in node:
        value = _example(node["anyOf"][0], root)
        return 0.5 if value is None and node.get("not") == {"type": "null"} else value
    kind = node.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind == "object":
        out = {k: _example(v, root) for k, v in node.get("properties", {}).items()}
        extra = node.get("additionalProperties")
        return out if out or not isinstance(extra, dict) else {"x": _example(extra, root)}
    if kind == "array":
        if "prefixItems" in node:
            return [_example(v, root) for v in node["prefixItems"]]
        return [_example(node.get("items", {}), root)] * max(1, node.get("minItems", 1))
    return {"integer": 3, "number": 0.5, "string": "x", "boolean": True, "null": None}.get(kind, "anything")


def forgeries(value: Any, node: dict[str, Any], root: dict[str, Any],
               path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """``(path, wrong value)`` for every field of ``value`` that its schema constrains, nested ones too."""
    node = _resolve(node, root)
    if isinstance(value, dict):
        for key, item in value.items():
            sub = node.get("properties", {}).get(key, node.get("additionalProperties"))
            if not isinstance(sub, dict):
                continue
            check = jsonschema.Draft202012Validator({**sub, "$defs": root.get("$defs", {})})
            wrong = next((w for w in WRONG if not check.is_valid(w)), None)
            if wrong is not None and key not in ("format", "version"):
                yield (*path, key), wrong
            yield from forgeries(item, sub, root, (*path, key))
    elif isinstance(value, list) and value and isinstance(node.get("items"), dict):
        yield from forgeries(value[0], node["items"], root, (*path, 0))


def with_value(value: Any, path: tuple[Any, ...], wrong: Any) -> Any:
    """A copy of ``value`` whose field at ``path`` holds ``wrong``."""
    bad = copy.deepcopy(value)
    target = bad
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = wrong
    return bad


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_an_output_with_a_field_of_the_wrong_type_is_refused(kind: str) -> None:
    s = schema(kind)
    check = jsonschema.Draft202012Validator(s)
    value = _example(s, s)
    assert check.is_valid(value), [e.message for e in check.iter_errors(value)][:3]
    forged = list(forgeries(value, s, s))
    assert forged, f"{kind}: no field is constrained"
    for path, wrong in forged:
        assert not check.is_valid(with_value(value, path, wrong)), f"{kind}: {'/'.join(map(str, path))} = {wrong!r} is accepted"
    integers = [p for p, w in forged if w == "a text"]
    assert integers or kind == "pramkit.reproduce.result", f"{kind}: no number field was given a text"


def _printed(args: list[str]) -> dict[str, Any]:
    import contextlib
    import io
    import json

    from pramkit.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0, args
    return json.loads(out.getvalue())


def test_the_outputs_the_hand_written_schemas_refused_validate(tmp_path: Path) -> None:
    """A dense matrix (no ``w``), text categories, and a manifest without a ledger (``ledger`` null)."""
    from pramkit.design.classic import randomized_response

    manifest = pramkit.Manifest.of({"sex": randomized_response(["m", "f"], 0.5)}).write(tmp_path / "m.json")
    for args in (["design", "--probs", "0.5,0.3,0.2", "--epsilon", "1", "--family", "general", "--json"],
                 ["design", "--probs", "0.5,0.3,0.2", "--epsilon", "1", "--method", "rr", "--categories", "a,b,c",
                  "--json"],
                 ["inspect", str(manifest), "--json"]):
        printed = _printed(args)
        jsonschema.Draft202012Validator(pramkit.output_schema(printed["format"])).validate(printed)
    assert "w" not in _printed(args=["design", "--probs", "0.5,0.3,0.2", "--epsilon", "1", "--family", "general",
                                     "--json"])
    assert printed["ledger"] is None
