"""The contract every release method keeps: what it is, how it is run, and every public field it writes.

A release method (PRAM, a random swap, synthesis, resampling, a release derived from another) is one
package of :mod:`pramkit.methods`, whose ``METHOD`` is a :class:`ReleaseMethod`.  It names

* its settings (the specification class that validates them once, and generates the flags, the app's
  form and the docs' tables), its command and its library function (the one door of the workflow);
* the kinds of public file it introduces (:class:`PublicFile`: how a reader recognises one);
* **every field it publishes**, in each kind of public file it writes, as a :class:`PublicField`: a path
  pattern with how the field is checked (recomputed from the public files, derived again from the
  original and the key, or free text) and the name of the check.

From these declarations, and from nothing kept by hand beside them, pramkit makes the audit's walk of a
public file (a field no declaration covers fails), the JSON Schema of each kind of public file
(:func:`json_schema`), the field table of docs/audit.md and the test that forges every field.

This module imports nothing of pramkit: the implementations are named by their dotted paths and
imported when used, so the declarations stand below every workflow that reads them.

Examples
--------
>>> f = PublicField("variables[*].epsilon", "recomputed", "regenerated", "the variable's epsilon")
>>> f.parts, f.matches(("variables", 2, "epsilon")), f.matches(("variables", 2, "q"))
(('variables', '[*]', 'epsilon'), True, False)
>>> schema = json_schema(PublicFile("note", "pramkit-note", "a note", "A note."),
...                      (PublicField("format", "recomputed", "constant", "the kind"),
...                       PublicField("words.*", "free_text", "ignored", "anything")))
>>> schema["properties"]["format"]["const"], schema["additionalProperties"]
('pramkit-note', False)
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: How a field is checked.
KINDS = ("recomputed", "rederived", "free_text")


@dataclass(frozen=True)
class PublicField:
    """One field of a public file and how the audit checks it.

    Parameters
    ----------
    path : str
        A path pattern: keys joined by ``.``, ``[*]`` for every item of a list, ``*`` for every key
        of an object (``ledger.dp_counts.*.noisy``).  A pattern covers the whole value at its path.
    kind : str
        ``"recomputed"``, ``"rederived"`` or ``"free_text"`` (:data:`KINDS`).
    check : str
        The name of the check (:data:`pramkit.audit.declared.CHECKS`); ``"ignored"`` for free text.
    doc : str
        What the field is and how it is checked, in words.

    Examples
    --------
    >>> PublicField("a", "guessed", "x", "")
    Traceback (most recent call last):
    ...
    ValueError: field 'a': kind must be one of ('recomputed', 'rederived', 'free_text'), got 'guessed'
    """

    path: str
    kind: str
    check: str
    doc: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"field {self.path!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if (self.kind == "free_text") != (self.check == "ignored"):
            raise ValueError(f"field {self.path!r}: free text, and only free text, is ignored")

    @functools.cached_property
    def parts(self) -> tuple[str, ...]:
        """The pattern as segments: keys, ``"[*]"`` and ``"*"``."""
        return split_path(self.path)

    def matches(self, concrete: Sequence[str | int]) -> bool:
        """Whether a concrete path (keys and list indices) is this field's."""
        return covers(self.parts, concrete)


def fields(rows: Iterable[tuple[str, str, str, str]]) -> tuple[PublicField, ...]:
    """Declarations from ``(path, kind, check, doc)`` rows.

    Examples
    --------
    >>> [f.path for f in fields([("a", "free_text", "ignored", "")])]
    ['a']
    """
    return tuple(PublicField(*row) for row in rows)


@dataclass(frozen=True)
class PublicFile:
    """A kind of public JSON file: its name, the ``format`` it states, and how a reader recognises it.

    Parameters
    ----------
    kind : str
        Its name (``"manifest"``, ``"receipt"``, ``"synthesis manifest"``): the audit names it so.
    format : str
        The value of its ``format`` field.
    title, description : str
        What it is, for its JSON Schema and the docs.
    marker : str, optional
        A top-level field that tells it from another kind of the same ``format``, when it holds a value
        (a resampled file's receipt has ``post_processing``).
    shape : tuple of (str, str), optional
        Top-level fields and their JSON types (``"object"``, ``"array"``) that recognise the file when
        its ``format`` is forged.
    version : int, optional
        The value of its ``version`` field, where the declaration is where the writer takes it from.
    audit : str, optional
        For a file given to ``pramkit audit --manifest`` that is audited on its own (a receipt of a method that
        writes no PRAM manifest), its audit: ``"module:function"``, called as ``function(raw, path, request)``
        with the file's JSON, its path and the :class:`pramkit.audit.AuditRequest`; ``None``: the file is
        audited with the manifest it belongs to.

    Examples
    --------
    >>> f = PublicFile("resample receipt", "pramkit-release-receipt", "t", "d", marker="post_processing")
    >>> f.recognises({"format": "pramkit-release-receipt", "post_processing": {"method": "resample"}}), f.recognises({})
    (True, False)
    """

    kind: str
    format: str
    title: str
    description: str
    marker: str | None = None
    shape: tuple[tuple[str, str], ...] = ()
    version: int | None = None
    audit: str | None = None

    def recognises(self, raw: Any) -> bool:
        """Whether the JSON ``raw`` is a file of this kind (by its format and marker, or by its shape)."""
        if not isinstance(raw, Mapping):
            return False
        marked = self.marker is None or bool(raw.get(self.marker))
        if raw.get("format") == self.format:
            return marked
        return bool(self.shape) and all(isinstance(raw.get(k), _TYPES[t]) for k, t in self.shape) and marked


_TYPES: dict[str, type | tuple[type, ...]] = {"object": dict, "array": list, "string": str}


@dataclass(frozen=True)
class ReleaseMethod:
    """One way to release a file, and every public field it writes.

    Parameters
    ----------
    name : str
        Its name (``"pram"``, ``"swap"``): the package's.
    summary : str
        One line on what it releases and what it guarantees.
    commands : tuple of str
        The ``pramkit`` commands that make such a release, in the order they are run.
    doors : tuple of str
        The library function of each command's workflow, as ``"module:function"``.
    specs : tuple of str or None
        The specification class of each command's settings, as ``"module:Class"`` (``None``: the function's
        keywords, checked by the function).
    files : tuple of PublicFile
        The kinds of public file the method introduces.
    declares : mapping of str to tuple of PublicField
        For every kind of public file the method writes (its own and others', such as the receipt a
        derived release writes), the fields it puts there.
    spark : bool
        Whether the method runs on Spark (``--engine spark``) as an option of the same command.
    audited : str
        What the audit does with a release of the method, in words.

    Examples
    --------
    >>> m = ReleaseMethod("note", "a note", ("note",), ("builtins:print",), (None,),
    ...                   declares={"note": (PublicField("a", "free_text", "ignored", ""),)})
    >>> m.writes, m.door("note") is print, m.spec("note")
    (('note',), True, None)
    """

    name: str
    summary: str
    commands: tuple[str, ...]
    doors: tuple[str, ...]
    specs: tuple[str | None, ...]
    files: tuple[PublicFile, ...] = ()
    declares: Mapping[str, tuple[PublicField, ...]] = field(default_factory=dict)
    spark: bool = False
    audited: str = ""

    @property
    def writes(self) -> tuple[str, ...]:
        """The kinds of public file it writes fields of."""
        return tuple(self.declares)

    def __post_init__(self) -> None:
        if not len(self.commands) == len(self.doors) == len(self.specs):
            raise ValueError(f"method {self.name!r}: one door and one spec (or None) per command")

    def door(self, command: str) -> Callable[..., Any]:
        """The library function of ``command``'s workflow, imported."""
        return _resolve(self.doors[self.commands.index(command)])

    def spec(self, command: str) -> type | None:
        """The specification class of ``command``'s settings, imported (``None`` when it has none)."""
        dotted = self.specs[self.commands.index(command)]
        return None if dotted is None else _resolve(dotted)


def _resolve(dotted: str) -> Any:
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


# ----------------------------------------------------------------- paths

_SEGMENT = re.compile(r"\[\*\]|\[\d+\]|[^.\[\]]+")


def split_path(path: str) -> tuple[str, ...]:
    """A path pattern as segments.

    Examples
    --------
    >>> split_path("variables[*].blocks[*].q"), split_path("ledger.dp_counts.*.noisy")
    (('variables', '[*]', 'blocks', '[*]', 'q'), ('ledger', 'dp_counts', '*', 'noisy'))
    """
    return tuple(_SEGMENT.findall(path))


def path_text(concrete: Sequence[str | int]) -> str:
    """A concrete path as text, as the audit names a field.

    Examples
    --------
    >>> path_text(("variables", 0, "q")), path_text(("ledger", "dp_counts", "age", "noisy"))
    ('variables[0].q', 'ledger.dp_counts.age.noisy')
    """
    out = ""
    for c in concrete:
        out += f"[{c}]" if isinstance(c, int) else (f".{c}" if out else str(c))
    return out


def covers(parts: Sequence[str], at: Sequence[str | int]) -> bool:
    """Whether the pattern ``parts`` covers the concrete path ``at``.

    Examples
    --------
    >>> covers(("a", "*", "[*]"), ("a", "b", 0)), covers(("a", "*"), ("a", 0))
    (True, False)
    """
    return len(parts) == len(at) and all(
        (p == "[*]" and isinstance(c, int)) or (p == "*" and isinstance(c, str)) or p == c for p, c in zip(parts, at))


def overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether some concrete path is covered by both patterns.

    Examples
    --------
    >>> overlap(("swapping", "*"), ("swapping", "rate")), overlap(("a", "[*]"), ("a", "b"))
    (True, False)
    """
    return len(a) == len(b) and all(
        x == y or (x == "*" and y not in ("[*]",)) or (y == "*" and x not in ("[*]",)) for x, y in zip(a, b))


def walk(raw: Any, declared: Sequence[PublicField]
         ) -> tuple[list[tuple[PublicField, tuple[str | int, ...], Any]], list[str]]:
    """Every declared field of a JSON document with its concrete path and value, and every undeclared
    path: a value whose path no pattern covers (a leaf, an empty object or list, or an object or list
    holding neither declared nor walkable items) is undeclared.  Where several patterns cover a path,
    the one declared first is its field.

    The patterns are read once into a tree of their segments (:class:`_Patterns`), and the document is
    walked with the set of the tree's nodes its path reaches, so that each value costs the patterns that
    can still cover it, not every pattern.

    Examples
    --------
    >>> fs = [PublicField("a", "recomputed", "x", ""), PublicField("b[*].c", "recomputed", "x", "")]
    >>> found, undeclared = walk({"a": 1, "b": [{"c": 2, "d": 3}], "e": {}}, fs)
    >>> [(f.path, path_text(p), v) for f, p, v in found], undeclared
    ([('a', 'a', 1), ('b[*].c', 'b[0].c', 2)], ['b[0].d', 'e'])
    """
    found: list[tuple[PublicField, tuple[str | int, ...], Any]] = []
    undeclared: list[str] = []
    fields_ = tuple(declared)
    root = _patterns(fields_)

    def visit(value: Any, at: tuple[str | int, ...], nodes: tuple[_Patterns, ...]) -> None:
        first = min((n.first for n in nodes if n.first is not None), default=None)
        under = any(n.children for n in nodes)  # some pattern declares fields inside this value
        if first is not None and not (isinstance(value, Mapping) and value and under):
            found.append((fields_[first], at, value))
            return
        if isinstance(value, Mapping) and value:
            for k, v in value.items():
                key = str(k)
                visit(v, (*at, key), _step(nodes, key))
        elif isinstance(value, list) and value and any("[*]" in n.children for n in nodes):
            items = tuple(n.children["[*]"] for n in nodes if "[*]" in n.children)
            for i, v in enumerate(value):
                visit(v, (*at, i), items)
        elif not (isinstance(value, (Mapping, list)) and not value and under):  # empty, declared inside
            undeclared.append(path_text(at))

    if isinstance(raw, Mapping):
        for k, v in raw.items():
            key = str(k)
            visit(v, (key,), _step((root,), key))
    return found, undeclared


@dataclass
class _Patterns:
    """A node of the tree of path patterns: the patterns' next segments (keys, ``"*"``, ``"[*]"``), and the
    position in the declarations of the first pattern that ends here (None: none ends here)."""

    children: dict[str, _Patterns]
    first: int | None = None


@functools.lru_cache(maxsize=64)
def _patterns(declared: tuple[PublicField, ...]) -> _Patterns:
    """The tree of ``declared``'s patterns (made once per tuple of declarations)."""
    root = _Patterns({})
    for i, f in enumerate(declared):
        node = root
        for part in f.parts:
            node = node.children.setdefault(part, _Patterns({}))
        if node.first is None:
            node.first = i
    return root


def _step(nodes: tuple[_Patterns, ...], key: str) -> tuple[_Patterns, ...]:
    """The nodes an object's key leads to: the key itself, or ``*`` (a pattern's segment equal to the key, as
    :func:`covers` compares, or any key)."""
    out = []
    for n in nodes:
        for segment in (key, "*") if key != "*" else (key,):
            child = n.children.get(segment)
            if child is not None:
                out.append(child)
    return tuple(out)


# ----------------------------------------------------------------- the JSON Schema of a public file

#: The JSON Schema dialect of the generated schemas.
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(file: PublicFile, declared: Sequence[PublicField]) -> dict[str, Any]:
    """The JSON Schema of a kind of public file, made from its declarations alone.

    It says what the audit's walk says (:func:`walk`): an object holds only the fields its patterns
    name (``*``: any key), a list's items only what ``[*]`` names; a value declared as a whole is
    free beyond that.  ``format`` is the file's own (and its marker present).  Each field carries its
    declaration's words; its value is the audit's to check (the schema says where a field may stand,
    the audit whether it is true).

    Parameters
    ----------
    file : PublicFile
        The kind of file.
    declared : sequence of PublicField
        Its fields (:func:`pramkit.methods.declared_fields`).

    Returns
    -------
    dict
        A JSON Schema (draft 2020-12).

    Examples
    --------
    >>> fs = (PublicField("rules", "rederived", "x", "no rules (null)"),
    ...       PublicField("rules.*", "rederived", "x", "a rule"), PublicField("n[*]", "recomputed", "x", "a count"))
    >>> s = json_schema(PublicFile("t", "pramkit-t", "T", "A test."), fs)
    >>> s["properties"]["rules"]["additionalProperties"]["description"], "type" in s["properties"]["rules"]
    ('a rule', False)
    >>> s["properties"]["n"]["type"], s["properties"]["n"]["items"]["description"]
    ('array', 'a count')
    """
    tree: dict[str, Any] = {}
    for f in declared:
        node = tree
        for part in f.parts:
            node = node.setdefault(part, {})
        node.setdefault("\x00", f)  # the first declaration of a path is the one the walk takes
    body = _node_schema(tree)
    body.pop("description", None)
    props = body.setdefault("properties", {})
    if "format" in props:
        props["format"] = {"const": file.format, "description": "The kind of file; a reader checks it first."}
    required = ["format"] + ([file.marker] if file.marker else [])
    return {"$schema": DIALECT, "$id": f"urn:pramkit:public:{file.format}:{file.kind.replace(' ', '-')}",
            "title": file.title, "description": file.description, "type": "object", "required": required, **body}


def _node_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of one node of the pattern tree (its own declaration under ``"\\x00"``)."""
    own: PublicField | None = node.get("\x00")
    children = {k: v for k, v in node.items() if k != "\x00"}
    out: dict[str, Any] = {} if own is None else {"description": own.doc}
    if not children:
        return out
    if "[*]" in children:
        if own is None:
            out["type"] = "array"
        out["items"] = _node_schema(children.pop("[*]"))
    if children:
        if own is None and "items" not in out:
            out["type"] = "object"
        wild = children.pop("*", None)
        if children:
            out["properties"] = {k: _node_schema(v) for k, v in children.items()}
        out["additionalProperties"] = False if wild is None else _node_schema(wild)
    return out
