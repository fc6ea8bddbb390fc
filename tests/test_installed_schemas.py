"""The JSON Schemas of the printed results are installed with the package (``pramkit.output_schema``), one for
every kind the commands print, each a valid draft 2020-12 schema (checked by the ``jsonschema`` package) of
exactly its kind; the documentation shows the same files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pramkit
from pramkit._json import OUTPUT_FORMATS

jsonschema = pytest.importorskip("jsonschema")


@pytest.mark.parametrize("kind", sorted(OUTPUT_FORMATS))
def test_every_kind_has_its_installed_schema(kind: str) -> None:
    schema = pramkit.output_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["format"]["const"] == kind
    assert schema["properties"]["version"]["const"] == OUTPUT_FORMATS[kind]


def test_no_schema_without_its_kind_and_the_docs_show_the_same_files() -> None:
    folder = Path(pramkit.__file__).resolve().parent / "schemas"
    assert sorted(p.stem for p in folder.glob("*.json")) == sorted(OUTPUT_FORMATS)
    docs = Path(__file__).resolve().parents[1] / "docs" / "schemas"
    for kind in OUTPUT_FORMATS:
        assert json.loads((docs / f"{kind}.json").read_text(encoding="utf-8")) == pramkit.output_schema(kind)
    with pytest.raises(ValueError, match="unknown output format"):
        pramkit.output_schema("pramkit.nothing")
