"""The manifest: round trip, record epsilon, and field-naming validation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pramkit.design.classic import randomized_response
from pramkit.errors import ManifestError, OutputExistsError
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix


@pytest.fixture
def manifest() -> Manifest:
    return Manifest.of({
        "age": randomized_response(["0-9", "10-17", "18+"], 1.0),
        "sex": randomized_response([1, 2], 0.5),
    })


def test_round_trip(tmp_path: Path, manifest: Manifest) -> None:
    path = manifest.write(tmp_path / "m.json")
    back = Manifest.read(path)
    assert back.names == ["age", "sex"]
    for a, b in zip(manifest.variables, back.variables):
        assert a.matrix == b.matrix
        assert a.missing == b.missing
    assert back.record_epsilon == pytest.approx(1.5)


def test_record_epsilon_is_the_sum_and_infinity_is_text(tmp_path: Path) -> None:
    m = Manifest.of({"a": randomized_response(["x", "y"], 0.3), "b": PramMatrix.identity(["u", "v"])})
    assert m.record_epsilon == math.inf
    data = json.loads(m.to_json())
    assert data["record_epsilon"] == "inf"
    assert data["variables"][1]["epsilon"] == "inf"
    m.write(tmp_path / "m.json")
    assert Manifest.read(tmp_path / "m.json").record_epsilon == math.inf


def test_documented_fields(manifest: Manifest) -> None:
    data = json.loads(manifest.to_json())
    assert {"format", "version", "record_epsilon", "variables", "created", "pramkit_version"} <= set(data)
    v = data["variables"][0]
    assert {"name", "categories", "matrix", "epsilon", "missing", "bistochastic", "min_diagonal", "design"} <= set(v)
    assert v["design"]["method"] == "randomized_response"


def test_never_overwritten_without_force(tmp_path: Path, manifest: Manifest) -> None:
    manifest.write(tmp_path / "m.json")
    with pytest.raises(OutputExistsError):
        manifest.write(tmp_path / "m.json")
    manifest.write(tmp_path / "m.json", force=True)


def _broken(manifest: Manifest, edit) -> dict:
    data = json.loads(manifest.to_json())
    edit(data)
    return data


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.pop("format"), "'format'"),
        (lambda d: d.update(version=99), "'version'"),
        (lambda d: d.update(variables=[]), "'variables'"),
        (lambda d: d["variables"][0].pop("name"), "'variables[0].name'"),
        (lambda d: d["variables"][1].update(categories="12"), "'variables[1].categories'"),
        (lambda d: d["variables"][0]["matrix"][1].pop(), "'variables[0].matrix[1]'"),
        (lambda d: d["variables"][0]["matrix"][0].__setitem__(0, "x"), "'variables[0].matrix[0][0]'"),
        (lambda d: d["variables"][0]["matrix"][0].__setitem__(0, 0.9), "'variables[0].matrix'"),
        (lambda d: d["variables"][0].update(epsilon=0.2), "'variables[0].epsilon'"),
        (lambda d: d.update(record_epsilon=7), "'record_epsilon'"),
        (lambda d: d["variables"][0].update(missing="drop"), "'variables[0].missing'"),
        (lambda d: d["variables"][0]["design"].update(objective="high"), "'variables[0].design.objective'"),
        (lambda d: d["variables"][1].update(categories=[1, 2, 3]), "'variables[1].matrix'"),
        (lambda d: d["variables"][1].update(name="age"), "more than once"),
    ],
)
def test_malformed_manifest_names_the_field(manifest: Manifest, edit, field: str) -> None:
    with pytest.raises(ManifestError, match=field.replace("[", r"\[").replace("]", r"\]")):
        Manifest.from_dict(_broken(manifest, edit))


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="does not exist"):
        Manifest.read(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ManifestError, match="not valid JSON"):
        Manifest.read(tmp_path / "bad.json")
    (tmp_path / "nan.json").write_text('{"format": "pramkit-manifest", "version": 1, "x": NaN}')
    with pytest.raises(ManifestError, match="NaN"):
        Manifest.read(tmp_path / "nan.json")


def test_missing_as_category_needs_a_null_label() -> None:
    m = PramMatrix(np.full((3, 3), 1 / 3), ("a", "b", None))
    assert PerturbedVariable("x", m, "category").missing == "category"
    with pytest.raises(ManifestError, match="null"):
        PerturbedVariable("x", randomized_response(["a", "b"], 1.0), "category")
