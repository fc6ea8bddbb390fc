"""The JSON Schemas of the ``--json`` outputs, made from the result types (docs/schemas.md).

Every command that takes ``--json`` prints one object of a kind of :data:`pramkit._json.OUTPUT_FORMATS`.
The schema of each kind is not written by hand: it is made from the type that holds the result (its
dataclass fields and their type hints, :func:`json_schema`) and from what the type cannot say, declared
once here in :data:`OUTPUTS`: the fields ``to_dict()`` leaves out or prints under another name, the
fields it or the command adds, the fields not always printed, and a few constraints a hint does not
carry (a count that is never negative, a file the command always writes).  An output that the command
assembles itself is described by a ``TypedDict`` beside the command's code.

The installed files (``pramkit/schemas/KIND.json``) are these schemas, and a test checks that they are:
after changing a result type or a declaration, write them again with ``python -m pramkit.outputs``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

from pramkit._json import OUTPUT_FORMATS

#: The JSON Schema of a number as pramkit prints it (:func:`pramkit._json.to_jsonable`).
NUMBER: dict[str, Any] = {
    "description": "A number as pramkit prints it: infinities as the texts \"inf\" and \"-inf\", an undefined "
                   "value (NaN) as null.",
    "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf"]}, {"type": "null"}],
}
NUMBER_REF = "#/$defs/number"
#: ``Annotated[float, FINITE]``: a number printed finite (never ``"inf"`` nor null): ``{"type": "number"}``.
FINITE = "finite"
#: Keywords that refuse null (merged into a number that is never NaN).
NOT_NULL: dict[str, Any] = {"not": {"type": "null"}}
#: What every schema's description ends with.
ADDED_LATER = ("Fields not listed here may be added in later releases of pramkit without a new version: a reader "
               "ignores fields it does not know.")
FORMAT_DESCRIPTION = "The kind of output; a reader checks it before anything else."
VERSION_DESCRIPTION = ("The version of this format: it grows only when a field changes meaning or goes away; fields "
                       "are added without a new version.")


@dataclass(frozen=True, kw_only=True)
class Printed:
    """How the objects of one type are printed: its fields, less and more.

    Parameters
    ----------
    type : type
        A dataclass or a ``TypedDict``: its fields, in order, with their type hints.
    leave_out : tuple of str
        Fields of the type that are not printed.
    rename : mapping of str to str
        Field -> the name it is printed under.
    add : mapping of str to type hint
        Printed fields the type does not hold (a property, a figure ``to_dict()`` or the command adds),
        after the type's own unless :attr:`order` says otherwise.
    hints : mapping of str to type hint
        Printed field -> the hint of what is printed, where it is not the field's (an object printed as
        one of its figures, a frame as its rows).
    optional : tuple of str
        Printed fields not always there (a ``TypedDict``'s ``NotRequired`` keys are optional too).
    schemas : mapping of str to dict
        Printed field -> JSON Schema keywords merged into the generated one (dicts merged deeply): what
        a type hint cannot say, as a minimum.
    descriptions : mapping of str to str
        Printed field -> its description.
    order : tuple of str, optional
        The printed fields in the order ``to_dict()`` prints them (default: the type's, then :attr:`add`).
    """

    type: Any
    leave_out: tuple[str, ...] = ()
    rename: Mapping[str, str] = field(default_factory=dict)
    add: Mapping[str, Any] = field(default_factory=dict)
    hints: Mapping[str, Any] = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)
    order: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class Output(Printed):
    """A kind of printed output: the :class:`Printed` of its object, with the schema's title and description.

    Parameters
    ----------
    kind : str
        A key of :data:`pramkit._json.OUTPUT_FORMATS`.
    title : str
        The command that prints it.
    description : str
        What the object says (the schema ends it with :data:`ADDED_LATER`).
    """

    kind: str
    title: str
    description: str


def _fields(shape_type: Any) -> list[tuple[str, Any, bool]]:
    """``(name, hint, required)`` of a dataclass's or a ``TypedDict``'s fields, in order."""
    hints = typing.get_type_hints(shape_type, include_extras=True)
    if dataclasses.is_dataclass(shape_type):
        return [(f.name, hints[f.name], True) for f in dataclasses.fields(shape_type)]
    if typing.is_typeddict(shape_type):
        return [(name, *_required(hint, shape_type.__total__)) for name, hint in hints.items()]
    raise TypeError(f"{shape_type!r} is neither a dataclass nor a TypedDict")


def _required(hint: Any, total: bool) -> tuple[Any, bool]:
    """``(X, required)`` of a ``TypedDict``'s hint: ``NotRequired[X]``, ``Required[X]`` or ``X`` (the keys are
    read from the hints, which ``from __future__ import annotations`` leaves as text until they are evaluated)."""
    needed = total
    while typing.get_origin(hint) in (NotRequired, Required):
        needed = typing.get_origin(hint) is Required
        (hint,) = typing.get_args(hint)
    return hint, needed


def _merge(schema: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``extra``'s keywords, dicts merged deeply (``extra`` wins)."""
    out = dict(schema)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) \
            else (dict(value) if isinstance(value, Mapping) else value)
    return out


def _property_hint(shape_type: Any, name: str) -> Any:
    """The return hint of ``shape_type``'s property ``name`` (an added field the type computes)."""
    prop = getattr(shape_type, name, None)
    if not isinstance(prop, property) or prop.fget is None:
        raise TypeError(f"{shape_type.__name__}.{name} is no property: give the added field's type hint")
    return typing.get_type_hints(prop.fget)["return"]


def object_schema(shape: Printed | Any, shapes: Mapping[Any, Printed] | None = None) -> dict[str, Any]:
    """The JSON Schema of the objects a :class:`Printed` (or a bare dataclass or ``TypedDict``) prints.

    Parameters
    ----------
    shape : Printed, dataclass or TypedDict
        What is printed; a bare type prints every field under its name, each always there.
    shapes : mapping of type to Printed, optional
        The shapes of the types nested in it (default :data:`SHAPES`).

    Returns
    -------
    dict
        ``{"type": "object", "required": [...], "properties": {...}}``.

    Examples
    --------
    >>> class Cell(TypedDict):
    ...     label: str
    ...     count: int
    ...     share: NotRequired[float | None]
    >>> object_schema(Cell, {})
    {'type': 'object', 'required': ['label', 'count'], 'properties': {'label': {'type': 'string'}, 'count': {'type': 'integer'}, 'share': {'$ref': '#/$defs/number'}}}
    """
    shapes = _shapes() if shapes is None else shapes
    if not isinstance(shape, Printed):
        shape = shapes.get(shape, Printed(type=shape))
    unknown = (set(shape.leave_out) | set(shape.rename)) - {name for name, _, _ in _fields(shape.type)}
    if unknown:
        raise TypeError(f"{shape.type.__name__} has no field {sorted(unknown)}")
    printed: dict[str, tuple[Any, bool]] = {}
    for name, hint, needed in _fields(shape.type):
        if name not in shape.leave_out:
            printed[shape.rename.get(name, name)] = (hint, needed)
    for name, hint in shape.add.items():
        printed[name] = (_property_hint(shape.type, name) if hint is None else hint, True)
    names = list(printed) if shape.order is None else list(shape.order)
    if sorted(names) != sorted(printed):
        raise TypeError(f"the order of {shape.type.__name__} names {sorted(set(names) ^ set(printed))} wrongly")
    stray = (set(shape.hints) | set(shape.optional) | set(shape.schemas) | set(shape.descriptions)) - set(printed)
    if stray:
        raise TypeError(f"{shape.type.__name__} prints no field {sorted(stray)}")
    documented = _documented(shape)
    properties = {}
    for name in names:
        schema = json_schema(shape.hints.get(name, printed[name][0]), shapes)
        schema = _merge(schema, shape.schemas.get(name, {}))
        if name in documented:
            schema = {**schema, "description": documented[name]}
        properties[name] = schema
    required = [n for n in names if printed[n][1] and n not in shape.optional]
    return {"type": "object", "required": required, "properties": properties}


def _documented(shape: Printed) -> dict[str, str]:
    """Printed field -> its description: the declared one, else the type's docstring's (its ``Parameters`` or
    ``Attributes`` section; an added property's first paragraph).  A field printed as something else than
    it holds (:attr:`Printed.hints`) takes no description from the docstring, which describes what it holds."""
    out = {shape.rename.get(name, name): text for name, text in docstring_fields(shape.type.__doc__ or "").items()
           if name not in shape.leave_out and shape.rename.get(name, name) not in shape.hints}
    for name, hint in shape.add.items():
        prop = getattr(shape.type, name, None)
        if hint is None and isinstance(prop, property) and prop.__doc__:
            out[name] = _plain_text(inspect.cleandoc(prop.__doc__).split("\n\n")[0])
    return {**out, **shape.descriptions}


def docstring_fields(doc: str) -> dict[str, str]:
    """Field -> its description, from a numpydoc docstring's ``Parameters`` or ``Attributes`` section.

    An entry ``a, b : type`` describes both; the description is its indented lines, one paragraph, with
    Sphinx's markup taken out (:func:`_plain_text`).

    Examples
    --------
    >>> doc = "A result.\\n\\nParameters\\n----------\\nrows, households : int\\n    Records and households\\n" \\
    ...       "    of the file (:class:`pramkit.Manifest`; ``None``: none).\\nseconds : float\\n\\nExamples\\n--------\\n"
    >>> docstring_fields(doc)
    {'rows': 'Records and households of the file (pramkit.Manifest; None: none).', 'households': 'Records and households of the file (pramkit.Manifest; None: none).'}
    """
    lines = inspect.cleandoc(doc).splitlines()
    out: dict[str, str] = {}
    names: list[str] = []
    text: list[str] = []
    section = None
    for i, line in enumerate(lines):
        if line.strip() and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            section = line.strip()
            continue
        if section not in ("Parameters", "Attributes") or set(line.strip()) == {"-"}:
            continue
        entry = re.match(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:", line)
        if entry or not line.startswith(" "):
            out.update({n: _plain_text(" ".join(text)) for n in names if text})
            names, text = ([n.strip() for n in entry.group(1).split(",")] if entry else []), []
        elif line.strip():
            text.append(line.strip())
    out.update({n: _plain_text(" ".join(text)) for n in names if text})
    return out


def _plain_text(text: str) -> str:
    """Text without Sphinx's roles and literals (``:class:`X``` as X, double backquotes as nothing)."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return " ".join(text.replace("``", "").split())


def json_schema(hint: Any, shapes: Mapping[Any, Printed] | None = None) -> dict[str, Any]:
    """The JSON Schema of the values a type hint prints as (:func:`pramkit._json.to_jsonable`).

    ``int`` is an integer, ``float`` a number as pramkit prints it (``$defs/number``: infinities as
    ``"inf"`` and ``"-inf"``, NaN as null), ``str`` a text, ``bool`` a boolean, ``X | None`` also null,
    ``list[X]``, ``tuple[X, ...]`` and ``Sequence[X]`` an array of X, ``tuple[X, Y]`` an array of
    two, ``dict[str, X]`` and ``Mapping[str, X]`` an object of X, ``Literal[...]`` one of its values,
    ``Any`` anything, a dataclass or a ``TypedDict`` an object (:func:`object_schema`), and
    ``Annotated[X, {...}]`` X's schema with those keywords.

    Parameters
    ----------
    hint : type hint
        The hint (evaluated, not a string).
    shapes : mapping of type to Printed, optional
        How nested dataclasses are printed (default :data:`SHAPES`).

    Returns
    -------
    dict
        The schema.

    Raises
    ------
    TypeError
        A hint with no JSON form (a frame, an array of unknown shape): declare what is printed.

    Examples
    --------
    >>> json_schema(list[int]), json_schema(float | None), json_schema(str | None)
    ({'type': 'array', 'items': {'type': 'integer'}}, {'$ref': '#/$defs/number'}, {'type': ['string', 'null']})
    >>> json_schema(dict[str, Literal["a", "b"]])
    {'type': 'object', 'additionalProperties': {'enum': ['a', 'b']}}
    >>> json_schema(tuple[float, float])
    {'type': 'array', 'items': {'$ref': '#/$defs/number'}, 'minItems': 2, 'maxItems': 2}
    """
    shapes = _shapes() if shapes is None else shapes
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is None:
        return _plain(hint, shapes)
    if origin is typing.Annotated:
        base, *extras = args
        out = {"type": "number"} if FINITE in extras else json_schema(base, shapes)
        for extra in extras:
            if isinstance(extra, Mapping):
                out = _merge(out, extra)
        return out
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return _union([json_schema(a, shapes) for a in args])
    if origin in (list, tuple, set, frozenset, Sequence):
        return _array(origin, args, shapes)
    if origin in (dict, Mapping):
        value = json_schema(args[1], shapes)
        return {"type": "object", **({"additionalProperties": value} if value else {})}
    raise TypeError(f"no JSON Schema for the type hint {hint!r}: declare what is printed (Printed.hints)")


def _plain(hint: Any, shapes: Mapping[Any, Printed]) -> dict[str, Any]:
    """The schema of a hint that is not generic (no ``[...]``)."""
    if hint is Any or hint is object:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", str: "string", list: "array", tuple: "array", dict: "object"}
    if hint in simple:
        return {"type": simple[hint]}
    if hint is float:
        return {"$ref": NUMBER_REF}
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)):
        return object_schema(shapes.get(hint, hint), shapes)
    raise TypeError(f"no JSON Schema for the type hint {hint!r}: declare what is printed (Printed.hints)")


def _array(origin: Any, args: tuple[Any, ...], shapes: Mapping[Any, Printed]) -> dict[str, Any]:
    """The schema of ``list[X]``, ``tuple[X, ...]``, ``Sequence[X]`` (an array of X) or ``tuple[X, Y]`` (of two)."""
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        items = [json_schema(a, shapes) for a in args]
        size = {"minItems": len(items), "maxItems": len(items)}
        if all(i == items[0] for i in items):
            return {"type": "array", "items": items[0], **size}
        return {"type": "array", "prefixItems": items, **size}
    item = json_schema(args[0], shapes)
    return {"type": "array", **({"items": item} if item else {})}


def _shapes() -> Mapping[Any, Printed]:
    """:data:`SHAPES` (declared below the functions that read it)."""
    return SHAPES


def _union(members: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for a union, its members in order: a number stays the number (it holds null), members
    that are only a ``type`` join in one list of types (where the first stands), the rest go in ``anyOf``;
    ``X | None`` of one schema X is X with null among its types (or its values)."""
    if {} in members:
        return {}
    if {"$ref": NUMBER_REF} in members:
        members = [m for m in members if m != {"type": "null"}]
    parts: list[dict[str, Any]] = []
    kinds: list[str] = []
    for m in members:
        if set(m) != {"type"}:
            if m not in parts:
                parts.append(m)
            continue
        if not kinds:
            parts.append({"type": kinds})
        kinds.extend(k for k in (m["type"] if isinstance(m["type"], list) else [m["type"]]) if k not in kinds)
    parts = [{"type": p["type"][0] if len(p["type"]) == 1 else p["type"]} if set(p) == {"type"} else p for p in parts]
    others = [p for p in parts if set(p) != {"type"}]
    if len(parts) == 1:
        return parts[0]
    if len(others) == 1 and kinds == ["null"] and "enum" in others[0] and set(others[0]) <= {"enum", "description"}:
        return {**others[0], "enum": [*others[0]["enum"], None]}
    if (len(others) == 1 and kinds == ["null"] and isinstance(others[0].get("type"), (str, list))
            and "anyOf" not in others[0]):
        kind = others[0]["type"]
        return {**others[0], "type": [*(kind if isinstance(kind, list) else [kind]), "null"]}
    return {"anyOf": parts}


def _uses_number(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get("$ref") == NUMBER_REF or any(_uses_number(v) for v in value.values())
    if isinstance(value, list):
        return any(_uses_number(v) for v in value)
    return False


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a kind of printed output, made from its declaration.

    Parameters
    ----------
    kind : str
        A key of :data:`pramkit._json.OUTPUT_FORMATS`.

    Returns
    -------
    dict
        The schema the package installs (:func:`pramkit._json.output_schema` reads it).

    Raises
    ------
    ValueError
        An unknown kind.

    Examples
    --------
    >>> s = schema("pramkit.swap.result")
    >>> s["properties"]["format"]["const"], s["properties"]["rows"]["type"], s["properties"]["manifest"]["type"]
    ('pramkit.swap.result', 'integer', ['string', 'null'])
    >>> s["properties"]["quota"]["description"]                 # SwapResult's docstring
    'round(rate * H / 2), the swaps the rate asks for.'
    """
    if kind not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {kind!r}")
    if kind not in OUTPUTS:
        raise ValueError(f"the output format {kind!r} has no declaration in pramkit.outputs.OUTPUTS")
    out = OUTPUTS[kind]
    body = object_schema(out)
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:pramkit:output:{kind}:{OUTPUT_FORMATS[kind]}",
        "title": out.title,
        "description": f"{out.description} {ADDED_LATER}",
        "type": "object",
        "required": ["format", "version", *body["required"]],
        "properties": {"format": {"const": kind, "description": FORMAT_DESCRIPTION},
                       "version": {"const": OUTPUT_FORMATS[kind], "description": VERSION_DESCRIPTION},
                       **body["properties"]},
    }
    if _uses_number(schema):
        schema["$defs"] = {"number": NUMBER}
    return schema


def schema_text(kind: str) -> str:
    """The text of the installed file of ``kind``'s schema (indented by two, a final newline)."""
    return json.dumps(schema(kind), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: str | Path | None = None) -> list[Path]:
    """Write the schema of every kind declared in :data:`OUTPUTS`, ``KIND.json`` in ``folder`` (default: the
    package's ``schemas``).

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    folder = Path(__file__).resolve().parent / "schemas" if folder is None else Path(folder)
    written = []
    for kind in sorted(OUTPUTS):
        path = folder / f"{kind}.json"
        path.write_text(schema_text(kind), encoding="utf-8")
        written.append(path)
    return written


# --- The declarations -------------------------------------------------------------------------------------

from pramkit.audit.result import AuditResult, Check  # noqa: E402  (the declarations read the result types)
from pramkit.cli.design import DerivedOutput, MatrixOutput, ReleaseOutput  # noqa: E402
from pramkit.cli.inspect import InspectedVariable, InspectOutput, PrintedLabel  # noqa: E402
from pramkit.cli.reproduce import ReproduceOutput  # noqa: E402
from pramkit.engine.ids import NewIdsResult  # noqa: E402
from pramkit.engine.perturb import ApplyResult, VariableSummary  # noqa: E402
from pramkit.estimate.regression import RegressionResult  # noqa: E402
from pramkit.estimate.regression_moment import ResidualCheck  # noqa: E402
from pramkit.estimate.table import EstimatedCell, EstimateJSON  # noqa: E402
from pramkit.ledger import ExactFact  # noqa: E402
from pramkit.resample import Edge, ResampleResult  # noqa: E402
from pramkit.risk.attack import AttackResult, BayesCeiling, FeatureScore, ReconstructionResult  # noqa: E402
from pramkit.risk.attack_linkage import LinkageResult  # noqa: E402
from pramkit.risk.contributions import Contributions, ExpectedSuda, ReleaseContributions  # noqa: E402
from pramkit.risk.household import HouseholdRisk  # noqa: E402
from pramkit.risk.identification import RiskResult  # noqa: E402
from pramkit.risk.kanonymity import KAnonymityJSON  # noqa: E402
from pramkit.risk.suda import SudaJSON  # noqa: E402
from pramkit.suppress import SuppressionResult  # noqa: E402
from pramkit.swap.compare import CompareResult, MethodFigures  # noqa: E402
from pramkit.swap.run import SwapResult  # noqa: E402
from pramkit.synthesize import SynthesisResult  # noqa: E402

#: A number printed finite, never ``"inf"`` nor null (a figure computed from counts, a time).
Finite = Annotated[float, FINITE]
#: Rows of a frame as printed (``DataFrame.to_dict(orient="records")``).
Rows = list[dict[str, Any]]
#: The files a command that writes a release always writes (the result types allow None for a frame).
FILES_WRITTEN = {"output": "The released file.", "receipt": "The release receipt written beside it."}
#: A count that is never negative, a time that is never negative.
AT_LEAST_0: dict[str, Any] = {"minimum": 0}


class Coefficient(TypedDict):
    """One coefficient of ``pramkit estimate --regress --json`` (a row of
    :meth:`pramkit.estimate.regression.RegressionResult.to_frame`)."""

    term: str
    coef: float
    se: float
    ci_low: float
    ci_high: float
    naive_coef: float
    naive_se: float
    pram_se: NotRequired[float]


class ModelCheckCategory(TypedDict):
    """One true category of the residual check (:meth:`pramkit.estimate.regression_moment.ResidualCheck.to_dict`:
    null where a figure is not finite)."""

    category: str
    count: Finite | None
    variance: Finite | None
    skewness: Finite | None


#: How the nested types are printed, where not every field as it is.
SHAPES: dict[Any, Printed] = {
    VariableSummary: Printed(type=VariableSummary, rename={"outside": "outside_kept"}, add={"changed_share": None},
                           optional=("outside_kept",), order=("name", "rows", "missing", "changed", "changed_share",
                                                              "outside_kept")),
    Check: Printed(type=Check, optional=("data",)),
    ExactFact: Printed(type=ExactFact, hints={"column": str, "values": list[Any], "strata": list[Any]},
                     optional=("column", "values", "strata"),
                     order=("kind", "variables", "reveals", "column", "covered", "values", "strata")),
    Edge: Printed(type=Edge, rename={"mutual_information": "mutual_information_nats", "forced": "forced_by_rule"}),
    MethodFigures: Printed(type=MethodFigures, descriptions={
        "risk_var": "The first risk variable (--risk-vars), which area_by_risk_var_tvd crosses with the area.",
        "area_by_risk_var_tvd": "The total variation distance of the table of the area by the first risk variable, "
                                "original against released."}),
    ResidualCheck: Printed(type=ResidualCheck, leave_out=("counts", "variances", "skewness"),
                         rename={"skewness_all": "skewness"},
                         hints={"skewness": Finite | None, "variance_ratio": Finite | None,
                                "categories": list[ModelCheckCategory]},
                         order=("source", "skewness", "variance_ratio", "warning", "categories")),
    Coefficient: Printed(type=Coefficient, descriptions={
        "pram_se": "A weighted fit (--weights): the part of se that PRAM alone makes (the sample fixed); absent "
                   "unweighted."}),
    InspectedVariable: Printed(type=InspectedVariable, descriptions={
        "categories": "The variable's categories: labels, or for a variable perturbed jointly or within strata its "
                      "cells, each an array of labels (one per column).",
        "epsilon_stated": "The variable's epsilon in the words every surface states it in: a number, or 'local inf; "
                          "X given the structure' for a variable with strata or kept codes."}),
    EstimatedCell: Printed(type=EstimatedCell, descriptions={
        "category": "The cell: the label of the one variable estimated, or an array of labels (one per variable of "
                    "--vars and --by) for a table of several."}),
    Contributions: Printed(type=Contributions, leave_out=("suda",),
                         hints={"variables": Rows, "levels": Rows, "epsilon": Rows | None},
                         order=("keys", "perturbed", "totals", "interaction", "variables", "levels", "epsilon",
                                "record_epsilon")),
    ExpectedSuda: Printed(type=ExpectedSuda, leave_out=("scores",), hints={"variables": Rows, "levels": Rows}),
    FeatureScore: Printed(type=FeatureScore, add={"advantage": None},
                          order=("feature", "accuracy", "baseline", "advantage", "weighted_accuracy",
                                 "weighted_baseline")),
    ReconstructionResult: Printed(
        type=ReconstructionResult, leave_out=("recovered",), add={"advantage": None, "weighted_advantage": None},
        hints={"per_feature": list[FeatureScore]},
        schemas={"records": AT_LEAST_0, "released_rows": AT_LEAST_0, "matched": AT_LEAST_0, "nearest": AT_LEAST_0},
        descriptions={
            "accuracy": "Share of the (record, feature) values the attack recovered.",
            "baseline": "The same for guessing each feature's most frequent released value.",
            "weighted_accuracy": "The attack's share with each value weighted by one over its frequency in the "
                                 "original (normalised): rare values count more.",
            "nearest": "Records no released record agreed with on every known column, guessed from the nearest."},
        order=("known", "features", "records", "released_rows", "matched", "nearest", "accuracy", "baseline",
               "advantage", "weighted_accuracy", "weighted_baseline", "weighted_advantage", "per_feature")),
    BayesCeiling: Printed(
        type=BayesCeiling, leave_out=("categories", "rows", "posterior", "prior_given_known", "truth"),
        add={"share": None, "baseline_share": None, "advantage": None, "realised_share": float | None},
        schemas={"records": AT_LEAST_0, "left_out": AT_LEAST_0, "unsupported": AT_LEAST_0},
        descriptions={
            "expected_correct": "The expected number of correct guesses of the Bayes attacker (sum over records of "
                                "the largest posterior): no attack that reads the known columns and the columns of "
                                "conditioned_on beats it in expectation when the prior is the true law.",
            "share": "expected_correct over records: the ceiling.",
            "baseline_expected": "The same for the attacker with the prior and the known columns only.",
            "realised_correct": "How many argmax guesses are right (the original's true values).",
            "correct_over_draws": "The expected number of right argmax guesses over every release the manifest "
                                  "could draw from the original's records (computed exactly); null when too many "
                                  "released cells to enumerate.",
            "expected_over_draws": "The expectation of expected_correct over those releases; equal to "
                                   "correct_over_draws when the prior is the original's own table.",
            "unsupported": "Records whose known values the prior gives probability 0 (a flat prior used), or "
                           "whose released cells it does (the likelihood alone), and the impossible ones.",
            "impossible": "Records whose released cells the matrices give probability 0 from every true value "
                          "with their known values (another file, other records): scored by the prior alone.",
            "epsilon_given_structure": "When a variable holding the target shows structure exactly (strata, "
                                       "kept codes): its epsilon among records that agree on it, which bounds "
                                       "the posterior odds where epsilon is infinite; null otherwise.",
            "scope": "'record': the posterior reads the whole released record; 'target': only the released cells "
                     "of the variables holding a target or known column (no bound on an attack reading more).",
            "conditioned_on": "The released file's columns whose released values the posterior reads.",
            "given_exactly": "Those of conditioned_on released exactly: the baseline is given them too.",
            "not_conditioned_on": "The released file's other columns, neither known nor target, the posterior does "
                                  "not read: an attack reading them may beat the ceiling."},
        order=("target", "known", "prior", "records", "left_out", "epsilon", "epsilon_given_structure",
               "expected_correct", "share", "baseline_expected", "baseline_share", "advantage", "realised_correct",
               "realised_share", "baseline_realised", "correct_over_draws", "expected_over_draws", "unsupported",
               "impossible", "scope", "conditioned_on", "given_exactly", "not_conditioned_on")),
    LinkageResult: Printed(
        type=LinkageResult, leave_out=("dcr", "dcr_sample", "dcr_holdout", "in_holdout", "unique_known",
                                       "unique_record", "agreeing_on_known"),
        hints={"holdout": Literal["keyed half", "file"]},
        schemas=dict.fromkeys(("records", "released_rows", "unique_on_known", "unique_on_known_found",
                               "unique_on_known_linked", "unique_records", "unique_records_found", "attacked",
                               "holdout_records", "compared"), AT_LEAST_0),
        descriptions={
            "columns": "The columns the distances compare: every column of the files, each as a category.",
            "unique_on_known": "Records of the original no other record shares the known values with.",
            "unique_on_known_found": "Of them, those at least one released record shares the known values with.",
            "unique_on_known_linked": "Of them, those exactly one released record shares the known values with "
                                      "(a one-to-one link).",
            "unique_records": "Records of the original no other record equals in every column.",
            "unique_records_found": "Of them, those some released record equals in every column.",
            "holdout": "'keyed half': a keyed random half of the original held out (the release was made from the "
                       "whole original); 'file': a holdout file of records not used to make the release.",
            "attacked": "Records whose distances are set against the holdout (the original less the held-out half).",
            "compared": "The size of both sets compared: the release sampled to the holdout's size (or the "
                        "holdout to the release's).",
            "closer_to_release": "Share of the attacked records whose distance to the closest record of the sampled "
                                 "release is smaller than to the closest held-out record.",
            "closer_to_holdout": "Share of the attacked records closer to a held-out record.",
            "tied": "Share of the attacked records at the same distance from both.",
            "median_dcr": "Median over the original's records of the distance to the closest released record "
                          "(the share of columns that differ).",
            "share_at_zero": "Share of the original's records some released record equals in every column.",
            "median_dcr_holdout": "Median over the attacked records of the distance to the closest held-out "
                                  "record.",
            "key_fingerprint": "The fingerprint of the key of the holdout half and the samples (never the key)."},
        order=("known", "columns", "records", "released_rows", "unique_on_known", "unique_on_known_found",
               "unique_on_known_linked", "unique_records", "unique_records_found", "holdout", "attacked",
               "holdout_records", "compared", "closer_to_release", "closer_to_holdout", "tied", "median_dcr",
               "share_at_zero", "median_dcr_holdout", "key_fingerprint")),
}

#: Every kind of printed output: its type and what the type cannot say.
OUTPUTS: dict[str, Output] = {out.kind: out for out in [
    Output(
        kind="pramkit.apply.result", type=ApplyResult, title="pramkit apply --json",
        description="What perturbing a file did: the rows, the released file and its receipt, the key's fingerprint "
                    "(never the key), the record's epsilon and each variable's share of changed values.",
        leave_out=("perturbed",), rename={"key_source": "key"},
        hints={"output": str, "receipt": str, "guarantees": dict[str, Any]},  # the command always writes both
        optional=("release", "guarantees"),
        descriptions={"release": "The release label, when one was given.", **FILES_WRITTEN},
        order=("rows", "output", "receipt", "key", "key_fingerprint", "release", "record_epsilon", "seconds",
               "variables", "guarantees")),
    Output(
        kind="pramkit.attack.result", type=AttackResult, title="pramkit attack --json",
        description="Risk by attack (docs/risk.md): a reconstruction attack on the released file by an intruder who "
                    "knows some columns of each person, against a baseline, and with a manifest the exact Bayes "
                    "ceiling of each perturbed target, and the linkage (unique records found, distances to the "
                    "closest released record against a holdout). Private: every figure comes from the original "
                    "file; totals only, no record.",
        hints={"ceilings": list[BayesCeiling]},
        descriptions={"linkage": "The linkage attack (docs/risk.md); null when not run."}),
    Output(
        kind="pramkit.audit.result", type=AuditResult, title="pramkit audit --json",
        description="The verdict of the audits of a manifest (and of a released file, an original or the engine): "
                    "each check with its outcome.",
        add={"passed": None, "verdict": str, "empirical_epsilon": dict[str, float]}, optional=("empirical_epsilon",),
        order=("passed", "verdict", "audits", "checks", "seconds", "empirical_epsilon")),
    Output(
        kind="pramkit.compare.result", type=CompareResult, title="pramkit compare --json",
        description="Targeted swapping, DP-PRAM and metric PRAM of the geography side by side: risk, utility and "
                    "guarantee of each method. Private: every figure comes from the original file.",
        hints={"methods": list[MethodFigures]},
        schemas={"methods": {"items": {"patternProperties": {"^area_by_.+_tvd$": {
            "$ref": NUMBER_REF,
            "description": "The same figure under its first name, area_by_<first risk variable>_tvd."}}}}}),
    Output(
        kind="pramkit.design.matrix", type=MatrixOutput, title="pramkit design --probs/--counts --json",
        description="One DP-optimal PRAM matrix designed for a distribution: the matrix, its compact form, the mutual "
                    "information kept, epsilon and the certificate of optimality."),
    Output(
        kind="pramkit.design.release", type=ReleaseOutput, title="pramkit design DATA --out M.json --json",
        description="A release designed from a data file: the matrices written to the manifest, the budget split, "
                    "the ledger and the guarantee. Private: it holds figures computed from the original (the design "
                    "record's summary).",
        descriptions={"guarantees": "The guarantees under the sampling design, present when the design names one "
                                    "(--sampling)."}),
    Output(
        kind="pramkit.design.derived", type=DerivedOutput, title="pramkit design --derive-from M.json --json",
        description="A second (public-use) step designed from a released manifest alone: each variable's composed "
                    "epsilon and information, and the manifest written."),
    Output(
        kind="pramkit.estimate.result", type=EstimateJSON, title="pramkit estimate --json",
        description="Corrected frequency tables from a released file and its manifest: every cell with its estimate "
                    "and standard error, the estimator used and its diagnostics.",
        add={"released_file": str}, order=("released_file", *EstimateJSON.__annotations__)),
    Output(
        kind="pramkit.estimate.regression", type=RegressionResult, title="pramkit estimate --regress --json",
        description="A linear or logistic regression corrected for PRAM (docs/analyst.md): each coefficient with its "
                    "standard error and interval, beside the naive fit of the released file as it is.",
        leave_out=("terms", "coef", "se", "covariance", "naive_coef", "naive_se", "pram_se"),
        rename={"check": "model_check"},
        add={"released_file": str, "method": str, "coefficients": list[Coefficient]},
        hints={"family": Literal["gaussian", "binomial"], "estimator": Literal["moment", "em"],
               "variance": Literal["multinomial", "pram", "linearization"] | None, "confidence": Finite,
               "event": PrintedLabel | None},  # the event is a label of the outcome's matrix: a number or a text
        schemas={"n": AT_LEAST_0, "dropped": AT_LEAST_0, "iterations": AT_LEAST_0},
        descriptions={
            "loglik": "EM's log-likelihood at the fit; null for the moment estimator.",
            "estimator": "moment: the least-squares normal equations corrected by the matrices' inverses, no outcome "
                         "model, sandwich standard errors (the default of a linear regression); em: the likelihood "
                         "over the true categories.",
            "variance": "The moment estimator's sandwich (records sampled and perturbed, or the original file fixed; "
                        "linearization: a weighted fit, the survey design's middle by Taylor linearisation with "
                        "PRAM's variance inside); null for EM.",
            "model_check": "The residuals' variance and skewness within each true category (a linear regression), "
                           "and the warning when they contradict EM's normal outcome of one variance; null for a "
                           "logistic regression.",
            "warnings": "What the fit's reader must know (a contradicted outcome model, unstable categories, EM not "
                        "converged); also printed on standard error.",
            "design": "The survey design of a weighted fit (--weights, --strata, --psu, --fpc, --single-psu); null "
                      "unweighted."},
        order=("released_file", "formula", "family", "n", "dropped", "perturbed", "event", "sigma", "iterations",
               "converged", "loglik", "confidence", "method", "estimator", "variance", "model_check", "warnings",
               "design", "coefficients")),
    Output(
        kind="pramkit.inspect.result", type=InspectOutput, title="pramkit inspect --json",
        description="What a manifest guarantees: each variable's matrix summary and epsilon, the ledger, the facts "
                    "released exactly and the guarantee sentence.",
        descriptions={
            "recode": "The global recoding the data holder declared before PRAM (design --recoded-by; the "
                      "manifest's input.recode): per column, its merge, top and bottom codes or breaks "
                      "(docs/recode.md); null without one.",
            "post_processing": "With --released a file that is post-processing of a release (pramkit resample): the "
                               "release its receipt names, and whether that file is beside it with the SHA-256 the "
                               "receipt states; null otherwise."}),
    Output(
        kind="pramkit.reproduce.result", type=ReproduceOutput, title="pramkit reproduce NAME",
        description="The tables of a reproduced paper and the files written; the other fields depend on the "
                    "reproduction.",
        descriptions={"files": "The files written: a list of paths, or an object naming each path."}),
    Output(
        kind="pramkit.resample.result", type=ResampleResult, title="pramkit resample --json",
        description="An analysis-ready file resampled from a release (post-processing: no budget spent): rows, "
                    "variables, rules and the guarantee carried over.",
        leave_out=("data", "model"), add={"method": str}, hints={"output": str, "receipt": str},
        descriptions=FILES_WRITTEN,
        order=("method", "rows", "variables", "public", "left_out", "edges", "rules", "rule_breaking_released",
               "rule_breaking_resampled", "impossible", "record_epsilon", "guarantee", "release", "key_source",
               "key_fingerprint", "seconds", "output", "receipt")),
    Output(
        kind="pramkit.risk.identification", type=RiskResult, title="pramkit risk --json",
        description="Identification risk under a Poisson log-linear model: sample uniques, tau1, tau2, the expected "
                    "re-identifications and the model's fit.",
        leave_out=("per_record", "cell_risk", "sampling_fractions"), hints={"model": str},
        add={"fit": dict[str, Any], "plot": str}, optional=("plot",),
        descriptions={"plot": "The figure written (--plot)."},
        order=("keys", "n", "cells", "combinations", "sample_uniques", "sample_doubles", "tau1", "tau2",
               "expected_reidentifications", "sampling_fraction", "model", "fit", "perturbed", "fitted_to", "missing",
               "excluded", "seconds", "fractions", "sampling_fraction_range", "fraction_strata", "assumed_cells",
               "sampling_assumption", "plot")),
    Output(
        kind="pramkit.risk.household", type=HouseholdRisk, title="pramkit risk --household COL --json",
        description="Household-level risk: the chance that a household is re-identified through any of its members.",
        leave_out=("per_record",)),
    Output(
        kind="pramkit.risk.suda", type=SudaJSON, title="pramkit risk --suda --json",
        description="SUDA2 figures: minimal sample uniques by size, SUDA and DIS-SUDA scores and the variables' and "
                    "levels' contributions."),
    Output(
        kind="pramkit.risk.contributions", type=ReleaseContributions, title="pramkit risk --contributions --json",
        description="The contributions of variables and levels to the risk, before and (with a release) after PRAM."),
    Output(
        kind="pramkit.risk.kanonymity", type=KAnonymityJSON, title="pramkit risk --k-anonymity K --l-diversity S --json",
        description="The records and cells below k (sdcMicro's kAnon_violations and riskyCells) and the l-diversity "
                    "of sensitive variables (sdcMicro's ldiversity) of a file. Private: every figure comes from the "
                    "file's records.",
        schemas={"records": AT_LEAST_0, "violations": {"properties": {
            "k": {"minimum": 2}, "violating": AT_LEAST_0, "smallest": AT_LEAST_0}},
            "risky_cells": {"properties": {"k": {"minimum": 2}, "unsafe_cells": AT_LEAST_0}},
            "l_diversity": {"properties": {"l": {"minimum": 2}}}}),
    Output(
        kind="pramkit.new-ids.result", type=NewIdsResult, title="pramkit new-ids --json",
        description="Random identifiers (docs/suppression.md): a grouping column replaced by keyed random ids 1..H and "
                    "the rows put in a keyed order; the files written and the key's fingerprint (never the key).",
        schemas={"rows": AT_LEAST_0, "groups": AT_LEAST_0, "seconds": AT_LEAST_0},
        hints={"shuffle": Literal["households", "within", "records", "none"]},
        descriptions={"groups": "The distinct values of the id column: the new ids are 1..groups.",
                      "shuffle": "The order of the rows.",
                      "key_fingerprint": "The fingerprint of the secret key (never the key)."}),
    Output(
        kind="pramkit.suppress.result", type=SuppressionResult, title="pramkit suppress --json",
        description="Local suppression to k-anonymity (docs/suppression.md): the values suppressed per key (private: "
                    "never in a public file), the lower bound on the fewest, the solver, and the files written.",
        add={"total": int, "gap": float},
        schemas={"rows": AT_LEAST_0, "k": {"minimum": 2}, "lower_bound": AT_LEAST_0, "total": AT_LEAST_0,
                 "violating_before": AT_LEAST_0, "blank_records": AT_LEAST_0, "seconds": AT_LEAST_0},
        descriptions={
            "suppressed": "The values suppressed, per key (private: where the rare combinations were).",
            "lower_bound": "A lower bound on the fewest suppressions that make the file k-anonymous.",
            "optimal": "The count is proven the fewest (the exact program solved).",
            "method": "The solver: exact, heuristic, or mixed (strata solved differently).",
            "violating_before": "Records whose combination was shared by fewer than k records before.",
            "blank_records": "Records that lost every key (under --missing any they match every record).",
            "total": "The values suppressed.",
            "gap": "The suppressions over the lower bound, relative to it (0: proven optimal; \"inf\" over a zero "
                   "bound)."}),
    Output(
        kind="pramkit.swap.result", type=SwapResult, title="pramkit swap --json",
        description="What targeted record swapping did: households and records swapped, the quota, the receipt and "
                    "the description of the swap.",
        leave_out=("frame", "transitions", "pairs"), hints={"output": str, "receipt": str},
        descriptions=FILES_WRITTEN),
    Output(
        kind="pramkit.synthesize.result", type=SynthesisResult, title="pramkit synthesize --json",
        description="A release whose public columns are as they are and whose other variables are drawn from "
                    "DP-measured margins (docs/synthesize.md): the files, the model, the central epsilon and the "
                    "guarantee.",
        leave_out=("records", "measurements", "manifest", "written", "missing"), rename={"manifest_path": "manifest"},
        add={"tables": int, "delta": float | None},
        hints={"record_epsilon": Annotated[float, NOT_NULL], "seconds": Finite},
        schemas={"rows": AT_LEAST_0, "tables": {"minimum": 1}, "shared_draws": AT_LEAST_0, "seconds": AT_LEAST_0},
        descriptions={
            "out": "The released file.", "manifest": "Its manifest (the noisy tables, the ledger).",
            "variables": "The synthesized variables.", "public": "The public columns the model conditions on.",
            "tables": "How many DP tables were measured.",
            "record_epsilon": "The central epsilon: the tables' epsilons added, rounded outward.",
            "delta": "The delta of an (epsilon, delta) guarantee accounted in zCDP (--delta), or null: pure "
                     "epsilon-DP.",
            "shared_draws": "Records that take the draw of another record with the same public values.",
            "guarantee": "The ledger's sentence."},
        order=("out", "manifest", "rows", "variables", "public", "tables", "record_epsilon", "delta",
               "shared_draws", "guarantee", "seconds")),
]}


if __name__ == "__main__":  # python -m pramkit.outputs [FOLDER]: write the schemas again
    from pramkit.outputs import write_schemas as _write  # the module itself, not its copy run as __main__

    for written in _write(sys.argv[1] if len(sys.argv) > 1 else None):
        print(written)
