"""The release methods, one package each, and what is derived from their declarations.

Every subpackage of :mod:`pramkit.methods` is a release method: its ``METHOD`` is a
:class:`~pramkit.methods.contract.ReleaseMethod` (its commands, library functions, settings, the kinds of
public file it introduces and every field it publishes).  :data:`METHODS` finds them: a new method is a new
package here, and nothing else lists it.  From the registry come

* :func:`public_files` -- every kind of public file, and :func:`file_kind` -- which kind a JSON file is;
* :func:`declared_fields` -- the fields of a kind of file, from every method that writes it (the audit's
  walk, :mod:`pramkit.audit.declared`);
* :func:`schema` -- the JSON Schema of a kind of file (installed in ``pramkit/schemas/public``,
  :func:`installed_schema`; :func:`write_schemas` writes them again);
* :func:`field_table` -- the table of docs/audit.md.

Examples
--------
>>> sorted(METHODS)
['derived', 'ids', 'pram', 'resample', 'suppression', 'swap', 'synthesis']
>>> list(public_files())
['new-ids receipt', 'manifest', 'receipt', 'resample receipt', 'suppression receipt', 'synthesis manifest']
>>> file_kind({"format": "pramkit-release-receipt", "post_processing": {"method": "resample"}})
'resample receipt'
>>> sorted(m.name for m in writers("receipt"))
['derived', 'pram', 'swap']
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pramkit.methods.contract import PublicField, PublicFile, ReleaseMethod, json_schema

__all__ = ["METHODS", "PublicField", "PublicFile", "ReleaseMethod", "declared_fields", "field_table", "file_kind",
           "installed_schema", "public_files", "schema", "write_schemas", "writers"]


def discover(path: Any = None, prefix: str = f"{__name__}.") -> dict[str, ReleaseMethod]:
    """The release methods of the packages under ``path`` (default: this package's), by name.

    Each package's ``METHOD`` must be a :class:`ReleaseMethod` named as the package.

    Examples
    --------
    >>> discover()["swap"].commands
    ('swap',)
    """
    found: dict[str, ReleaseMethod] = {}
    for info in sorted(pkgutil.iter_modules(__path__ if path is None else path, prefix), key=lambda i: i.name):
        if not info.ispkg:
            continue
        method = getattr(importlib.import_module(info.name), "METHOD", None)
        if not isinstance(method, ReleaseMethod) or method.name != info.name.rsplit(".", 1)[-1]:
            raise TypeError(f"{info.name}: a method package's METHOD is a ReleaseMethod named as the package")
        found[method.name] = method
    return found


#: Every release method, by name.
METHODS: dict[str, ReleaseMethod] = discover()


def public_files(methods: Mapping[str, ReleaseMethod] | None = None) -> dict[str, PublicFile]:
    """Every kind of public file, by kind, in the order of the methods that introduce them.

    Raises
    ------
    ValueError
        Two methods introduce one kind.
    """
    out: dict[str, PublicFile] = {}
    for method in _ordered(methods):
        for f in method.files:
            if f.kind in out:
                raise ValueError(f"public file {f.kind!r} is introduced by two methods")
            out[f.kind] = f
    return out


def _ordered(methods: Mapping[str, ReleaseMethod] | None) -> list[ReleaseMethod]:
    """The methods, those that introduce a kind of file before those that only add to one, each group by name."""
    ms = METHODS if methods is None else methods
    return sorted(ms.values(), key=lambda m: (not m.files, m.name))


def writers(kind: str, methods: Mapping[str, ReleaseMethod] | None = None) -> Iterator[ReleaseMethod]:
    """The methods that write fields of a kind of public file, the one that introduces it first."""
    yield from (m for m in _ordered(methods) if kind in m.declares)


def declared_fields(kind: str, methods: Mapping[str, ReleaseMethod] | None = None) -> tuple[PublicField, ...]:
    """Every field of a kind of public file: the declarations of every method that writes it.

    Examples
    --------
    >>> [f.path for f in declared_fields("resample receipt")][:2]
    ['format', 'version']
    """
    if kind not in public_files(methods):
        raise KeyError(kind)
    return tuple(f for m in writers(kind, methods) for f in m.declares[kind])


def file_kind(raw: Any, methods: Mapping[str, ReleaseMethod] | None = None) -> str | None:
    """The kind of public file the JSON ``raw`` is (a kind with a marker before one without), or ``None``.

    Examples
    --------
    >>> file_kind({"format": "pramkit-manifest"}), file_kind({"format": "x"})
    ('manifest', None)
    >>> file_kind({"format": "forged", "variables": {}, "measurements": []})
    'synthesis manifest'
    """
    kinds = sorted(public_files(methods).values(), key=lambda f: f.marker is None)
    return next((f.kind for f in kinds if f.recognises(raw)), None)


def schema(kind: str, methods: Mapping[str, ReleaseMethod] | None = None) -> dict[str, Any]:
    """The JSON Schema of a kind of public file, made from its declarations (:func:`~pramkit.methods.contract.json_schema`).

    Examples
    --------
    >>> schema("receipt")["properties"]["format"]["const"]
    'pramkit-release-receipt'
    """
    return json_schema(public_files(methods)[kind], declared_fields(kind, methods))


def schema_name(kind: str) -> str:
    """The file name of a kind's installed schema (in ``pramkit/schemas/public``).

    Examples
    --------
    >>> schema_name("resample receipt")
    'pramkit.public.resample-receipt.json'
    """
    return f"pramkit.public.{kind.replace(' ', '-')}.json"


def installed_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a kind of public file as installed with the package (what :func:`schema` makes).

    Raises
    ------
    ValueError
        An unknown kind.

    Examples
    --------
    >>> installed_schema("manifest") == schema("manifest")
    True
    """
    from importlib import resources

    if kind not in public_files():
        raise ValueError(f"unknown public file {kind!r}: one of {', '.join(public_files())}")
    path = resources.files("pramkit") / "schemas" / "public" / schema_name(kind)
    return dict(json.loads(path.read_text(encoding="utf-8")))


def schema_text(kind: str, methods: Mapping[str, ReleaseMethod] | None = None) -> str:
    """The text of a kind's schema file: :func:`schema` as indented JSON, with a final newline."""
    return json.dumps(schema(kind, methods), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: str | Path) -> list[Path]:
    """Write the schema of every kind of public file into ``folder`` (the package's ``schemas/public``), each
    file replaced whole.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in write_schemas(d)][:2]
    ['pramkit.public.new-ids-receipt.json', 'pramkit.public.manifest.json']
    """
    from pramkit.atomic import write_text_atomic

    out = []
    for kind in public_files():
        path = Path(folder) / schema_name(kind)
        write_text_atomic(path, schema_text(kind), force=True)
        out.append(path)
    return out


def field_table(methods: Mapping[str, ReleaseMethod] | None = None) -> str:
    """The declarations as the Markdown table of docs/audit.md: one row per field of every public file.

    Examples
    --------
    >>> print("\\n".join(field_table().splitlines()[:3]))
    | File | Method | Field | Checked | How |
    |---|---|---|---|---|
    | new-ids receipt | ids | `format` | recomputed | the file's kind: 'pramkit.new-ids' |
    """
    rows = ["| File | Method | Field | Checked | How |", "|---|---|---|---|---|"]
    for kind in public_files(methods):
        rows += [f"| {kind} | {m.name} | `{f.path}` | {f.kind.replace('_', ' ')} | {f.doc} |"
                 for m in writers(kind, methods) for f in m.declares[kind]]
    return "\n".join(rows)
