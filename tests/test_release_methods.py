"""The release-method contract (:mod:`pramkit.methods`): every way to release is one package whose
``METHOD`` names its commands, library functions and settings and declares every public field it writes;
the audit's walk, the JSON Schemas, the docs' field table come from the declarations alone.

Checked here: the registry finds the six methods and nothing lists them by hand; their commands,
functions and specifications exist; no two methods claim one field; the installed schemas are the
generated ones; and, in a scratch copy, a seventh method added as one package, and a field added in one
declaration, reach the registry, the schema, the docs' table and the audit's walk, which fails a field
nobody declared.  The public files are those of a real release: sdcMicro's testdata, designed and
released by the command line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SDC_DATA

import pramkit.methods as methods
from pramkit.cli import COMMANDS, main
from pramkit.methods import (
    METHODS,
    declared_fields,
    discover,
    field_table,
    file_kind,
    installed_schema,
    public_files,
    schema,
    schema_name,
    writers,
)
from pramkit.methods.contract import PublicField, overlap

jsonschema = pytest.importorskip("jsonschema")
SCHEMAS = Path(methods.__file__).resolve().parents[1] / "schemas" / "public"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """A PRAM release of sdcMicro's testdata (roof and walls, missing values read as such): its folder."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("methods")
    key = d / "k.key"
    key.write_text(bytes(range(32)).hex())
    key.chmod(0o600)
    for args in (("design", SDC_DATA / "testdata.csv", "--vars", "roof,walls", "--epsilon", "2", "--method", "dp",
                  "--key-file", key, "--out", d / "m.json"),
                 ("apply", SDC_DATA / "testdata.csv", "--manifest", d / "m.json", "--out", d / "r.csv",
                  "--key-file", key)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            assert main([str(a) for a in (*args, "--quiet")]) == 0, out.getvalue()
    return d


def test_the_registry_finds_every_method_package() -> None:
    folder = Path(methods.__file__).parent
    packages = sorted(p.parent.name for p in folder.glob("*/__init__.py"))
    assert sorted(METHODS) == packages == ["derived", "ids", "pram", "resample", "suppression", "swap", "synthesis"]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_method_names_commands_functions_and_specs_that_exist(name: str) -> None:
    method = METHODS[name]
    for command in method.commands:
        assert command in COMMANDS, command
        assert callable(method.door(command))
        spec = method.spec(command)
        assert spec is None or (isinstance(spec, type) and hasattr(spec, "check")), spec
    assert method.declares and all(kind in public_files() for kind in method.declares)


def test_every_kind_of_file_is_introduced_once_and_written_by_its_introducer() -> None:
    kinds = public_files()
    assert list(kinds) == ["new-ids receipt", "manifest", "receipt", "resample receipt", "suppression receipt",
                           "synthesis manifest"]
    for kind in kinds:
        assert next(writers(kind)).files and kind in {f.kind for f in next(writers(kind)).files}


@pytest.mark.parametrize("kind", list(public_files()))
def test_no_two_methods_claim_one_field(kind: str) -> None:
    """The walk takes the first pattern that covers a path: across methods none may overlap, so the order of
    the methods cannot change what checks a field."""
    ws = list(writers(kind))
    clashes = [(a.name, fa.path, b.name, fb.path) for i, a in enumerate(ws) for b in ws[i + 1:]
               for fa in a.declares[kind] for fb in b.declares[kind] if overlap(fa.parts, fb.parts)]
    assert clashes == []
    assert len({f.path for f in declared_fields(kind)}) == len(declared_fields(kind))


@pytest.mark.parametrize("kind", list(public_files()))
def test_the_installed_schema_is_the_generated_one(kind: str) -> None:
    jsonschema.Draft202012Validator.check_schema(schema(kind))
    assert installed_schema(kind) == schema(kind), (
        f"src/pramkit/schemas/public/{schema_name(kind)} is not what the declarations make: run "
        "python -c \"from pramkit.methods import write_schemas; write_schemas('src/pramkit/schemas/public')\"")


def test_no_installed_schema_without_its_kind() -> None:
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(schema_name(k) for k in public_files())
    with pytest.raises(ValueError, match="unknown public file 'ledger'"):
        installed_schema("ledger")


def test_a_file_is_recognised_by_its_format_marker_or_shape(release: Path) -> None:
    manifest = json.loads((release / "m.json").read_text())
    receipt = json.loads((release / "r.csv.receipt.json").read_text())
    assert file_kind(manifest) == "manifest" and file_kind(receipt) == "receipt"
    assert file_kind({**receipt, "post_processing": {"method": "resample"}}) == "resample receipt"
    assert file_kind({**manifest, "format": "pramkit-manifesto"}) is None
    assert file_kind([manifest]) is None


# ------------------------------------------------------------------ one place to add a method or a field

SEVENTH = '''
from pramkit.methods.contract import PublicField, PublicFile, ReleaseMethod

NOTE = PublicFile("microaggregation note", "pramkit.microaggregation", "pramkit microaggregation note",
                  "What microaggregation averaged.", audit="scratch_methods.microaggregation:audit_note")


def audit_note(raw, path, request):
    """The note's own audit: its declared fields walked, as pramkit audit does."""
    from pramkit.audit import AuditResult
    from pramkit.audit.declared import FieldContext, field_checks

    checks = field_checks(FieldContext("microaggregation note", raw, audit="microaggregation", subject="note"))
    return AuditResult(("microaggregation",), tuple(checks), 0.0)
METHOD = ReleaseMethod(
    name="microaggregation", summary="values replaced by the mean of groups of k records",
    commands=("apply",), doors=("pramkit.engine.perturb:apply_file",), specs=(None,), files=(NOTE,),
    declares={
        "microaggregation note": (PublicField("format", "recomputed", "constant", "the file's kind"),
                                  PublicField("averaged.*", "recomputed", "released rows", "values averaged, per "
                                              "column: counted in the released file")),
        "manifest": (PublicField("microaggregation.k", "rederived", "applied file", "the k of the groups"),),
    })
'''


@pytest.fixture()
def with_seventh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The registry with a seventh method, added as one package in a scratch folder."""
    package = tmp_path / "scratch_methods" / "microaggregation"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text(SEVENTH)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover([str(package.parent)], "scratch_methods.")
    registry = {**METHODS, **found}
    monkeypatch.setattr(methods, "METHODS", registry)
    return registry


def test_a_seventh_method_is_one_package(with_seventh: dict[str, Any], release: Path) -> None:
    from pramkit.audit.declared import FieldContext, field_checks

    assert "microaggregation note" in public_files()
    assert "microaggregation.k" in {f.path for f in declared_fields("manifest")}
    note = schema("microaggregation note")
    assert note["properties"]["format"]["const"] == "pramkit.microaggregation"
    assert "| microaggregation note | microaggregation | `averaged.*` |" in field_table()
    assert "| manifest | microaggregation | `microaggregation.k` |" in field_table()
    assert file_kind({"format": "pramkit.microaggregation"}) == "microaggregation note"
    # pramkit audit routes the new kind of file to the audit its declaration names
    note_file = release / "note.json"
    note_file.write_text(json.dumps({"format": "pramkit.microaggregation", "averaged": {"income": 12}}))
    from pramkit.audit import audit

    result = audit(note_file)
    assert result.audits == ("microaggregation",) and [c.passed for c in result.checks] == [True]
    note_file.write_text(json.dumps({"format": "pramkit.microaggregation", "smoothed": 1}))
    assert [(c.field, c.passed) for c in audit(note_file).checks] == [("smoothed", False)]
    # the audit's walk of a real manifest with the new method's field: declared, so not a failure
    raw = json.loads((release / "m.json").read_text())
    raw["microaggregation"] = {"k": 3}
    checks = field_checks(FieldContext("manifest", raw))
    assert all(c.field != "microaggregation.k" for c in checks if not c.passed)
    raw["microaggregation"]["l"] = 2  # a field nobody declared fails, named
    failed = [c for c in field_checks(FieldContext("manifest", raw)) if not c.passed]
    assert [c.field for c in failed] == ["microaggregation.l"]
    jsonschema.validate(raw | {"microaggregation": {"k": 3}}, schema("manifest"))
    with pytest.raises(jsonschema.ValidationError, match="'l' was unexpected"):
        jsonschema.validate(raw, schema("manifest"))


def test_without_the_seventh_method_its_field_fails(release: Path) -> None:
    """The check above can fail: the same field, with the six methods, is undeclared."""
    from pramkit.audit.declared import FieldContext, field_checks

    raw = json.loads((release / "m.json").read_text())
    raw["microaggregation"] = {"k": 3}
    assert [c.field for c in field_checks(FieldContext("manifest", raw)) if not c.passed] == ["microaggregation.k"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(raw, installed_schema("manifest"))


def test_a_field_added_in_one_declaration_reaches_schema_table_and_audit(release: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pramkit.audit.declared import FieldContext, field_checks

    pram = METHODS["pram"]
    extra = PublicField("ledger.reviewed_by", "free_text", "ignored", "who reviewed the release")
    grown = dataclasses.replace(pram, declares={**pram.declares, "manifest": (*pram.declares["manifest"], extra)})
    monkeypatch.setattr(methods, "METHODS", {**METHODS, "pram": grown})
    assert "reviewed_by" in schema("manifest")["properties"]["ledger"]["properties"]
    assert "| manifest | pram | `ledger.reviewed_by` | free text | who reviewed the release |" in field_table()
    raw = json.loads((release / "m.json").read_text())
    raw["ledger"]["reviewed_by"] = "the office"
    assert all(c.passed for c in field_checks(FieldContext("manifest", raw)))
    jsonschema.validate(raw, schema("manifest"))


def test_a_method_package_must_declare_its_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "bad_methods" / "other"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("METHOD = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TypeError, match=r"bad_methods\.other: a method package's METHOD is a ReleaseMethod"):
        discover([str(package.parent)], "bad_methods.")


def test_the_schemas_page_names_every_public_file() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "schemas.md").read_text(encoding="utf-8")
    for kind, f in public_files().items():
        assert f"schemas/public/{schema_name(kind)}" in page and f"`{f.format}`" in page, kind
