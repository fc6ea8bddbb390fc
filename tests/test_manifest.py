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


def dense_rr(categories: list, epsilon: float) -> PramMatrix:
    """Randomized response stored densely (it is built compactly, as form (8))."""
    m = randomized_response(categories, epsilon)
    return PramMatrix(m.matrix, m.categories, m.provenance)


@pytest.fixture
def manifest() -> Manifest:
    return Manifest.of({
        "age": dense_rr(["0-9", "10-17", "18+"], 1.0),
        "sex": dense_rr([1, 2], 0.5),
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


# ---------------------------------------------------------------------------
# version 3: compact form (8) matrices
# ---------------------------------------------------------------------------

@pytest.fixture
def compact() -> Manifest:
    return Manifest.of({
        "region": PramMatrix.from_diagonal([0.8, 0.7, 0.9], ["n", "s", "w"]),
        "sex": dense_rr(["f", "m"], 0.5),
    })


def test_version_3_writes_form8_compactly(tmp_path: Path, compact: Manifest) -> None:
    data = json.loads(compact.to_json())
    assert data["version"] == 5
    region, sex = data["variables"]
    assert region["form"] == "diagonal" and "matrix" not in region
    assert region["q"] == [0.8, 0.7, 0.9]
    assert region["w"] == ((1.0 - np.array([0.8, 0.7, 0.9])) / 2).tolist()
    assert sex["form"] == "dense" and "q" not in sex and len(sex["matrix"]) == 2
    back = Manifest.read(compact.write(tmp_path / "m.json"))
    assert back["region"].matrix.is_compact and not back["sex"].matrix.is_compact
    for a, b in zip(compact.variables, back.variables):
        assert a.matrix == b.matrix
    assert back.record_epsilon == compact.record_epsilon


def test_a_large_compact_manifest_is_small(tmp_path: Path) -> None:
    s = 100_000
    q = np.linspace(0.6, 0.95, s)
    m = Manifest.of({"code": PramMatrix.from_diagonal(q, [f"c{k:05d}" for k in range(s)])})
    path = m.write(tmp_path / "m.json")
    assert path.stat().st_size < 8_000_000          # dense: ~2e10 numbers
    back = Manifest.read(path)
    assert back["code"].matrix == m["code"].matrix and back["code"].matrix.is_compact
    assert "_dense_cache" not in back["code"].matrix.__dict__


#: A version-2 manifest as an unreleased pramkit wrote it (dense matrices only).
VERSION_2 = {
    "format": "pramkit-manifest", "version": 2, "pramkit_version": "0.1.0", "created": "2026-01-01T00:00:00Z",
    "composition": "independent variables: the record's epsilon is the design step's epsilon plus the sum of "
                   "the variables' epsilons",
    "record_epsilon": 3.2725887222397816, "perturbation_epsilon": 3.2725887222397816, "input": {},
    "ledger": {
        "record_epsilon_budget": None, "design_epsilon": 0.0, "perturbation_epsilon": 3.2725887222397816,
        "record_epsilon": 3.2725887222397816, "frequencies": "none", "prior": None, "categories": {},
        "data_dependent": [], "dp_counts": {}, "covers_everything_published": True,
        "statement": "Changing one person's record changes the probability of anything published (the released "
                     "file, the manifest, the public report) by a factor of at most e^3.273 = 26.38; this record "
                     "epsilon of 3.273 covers the perturbation alone (the design did not read the data's "
                     "frequencies).",
    },
    "variables": [
        {
            "name": "region", "columns": ["region"], "categories": ["n", "s", "w"],
            "matrix": [[0.8, 0.09999999999999998, 0.09999999999999998],
                       [0.15000000000000002, 0.7, 0.15000000000000002],
                       [0.04999999999999999, 0.04999999999999999, 0.9]],
            "epsilon": 2.7725887222397816, "missing": "keep", "bistochastic": False, "min_diagonal": 0.7,
            "design": {"method": "diagonal", "parameters": {}, "objective": None, "objective_name": None,
                       "certificate": None, "seconds": None},
        },
        {
            "name": "sex", "columns": ["sex"], "categories": ["f", "m"],
            "matrix": [[0.6224593312018546, 0.37754066879814546], [0.37754066879814546, 0.6224593312018546]],
            "epsilon": 0.5, "missing": "keep", "bistochastic": True, "min_diagonal": 0.6224593312018546,
            "design": {"method": "randomized_response", "parameters": {"epsilon": 0.5}, "objective": None,
                       "objective_name": None, "certificate": None, "seconds": None},
        },
    ],
}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 6])
def test_a_manifest_of_another_version_is_refused(tmp_path: Path, version: int) -> None:
    """Earlier versions drew other values for the same key and were never released: they are
    refused, with the version named, rather than applied with another law."""
    path = tmp_path / f"v{version}.json"
    path.write_text(json.dumps(VERSION_2 | {"version": version}, indent=2))
    with pytest.raises(ManifestError, match=f"field 'version' is {version}; this pramkit reads version 5 only"):
        Manifest.read(path)


def test_a_compact_variable_reads_back_equal_to_its_dense_entries(compact: Manifest) -> None:
    dense = {k: v for k, v in VERSION_2.items()
             if k not in ("composition", "record_epsilon", "perturbation_epsilon", "ledger")} | {"version": 5}
    old = Manifest.from_dict(dense)
    assert not old["region"].matrix.is_compact                 # read as it was written: dense
    assert old["region"].matrix == compact["region"].matrix    # the same entries as the compact form
    assert old["sex"].matrix == compact["sex"].matrix


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["variables"][0].update(form="sparse"), "'variables[0].form'"),
        (lambda d: d["variables"][0].pop("q"), "'variables[0].q'"),
        (lambda d: d["variables"][0].update(w="0.1"), "'variables[0].w'"),
        (lambda d: d["variables"][0]["q"].__setitem__(1, "x"), "'variables[0].q[1]'"),
        (lambda d: d["variables"][0]["w"].__setitem__(2, True), "'variables[0].w[2]'"),
        (lambda d: d["variables"][0]["q"].pop(), "'variables[0].q'"),
        (lambda d: d["variables"][0]["q"].__setitem__(0, 0.7), "'variables[0].q'"),
        (lambda d: d["variables"][0]["w"].__setitem__(0, -0.1), "'variables[0].w'"),
        (lambda d: d["variables"][0].update(epsilon=0.2), "'variables[0].epsilon'"),
        (lambda d: d["variables"][1].update(form="diagonal"), "'variables[1].q'"),
        (lambda d: d["variables"][1].pop("matrix"), "'variables[1].matrix'"),
        (lambda d: d.update(record_epsilon=1.0), "'record_epsilon'"),
    ],
)
def test_malformed_compact_manifest_names_the_field(compact: Manifest, edit, field: str) -> None:
    with pytest.raises(ManifestError, match=field.replace("[", r"\[").replace("]", r"\]")):
        Manifest.from_dict(_broken(compact, edit))


def test_stated_epsilon_of_a_compact_matrix_is_checked() -> None:
    """The epsilon is recomputed from q and w: w raised so that the stated value is a lie."""
    data = json.loads(Manifest.of({"x": PramMatrix.from_diagonal([0.8, 0.7, 0.9])}).to_json())
    var = data["variables"][0]
    var["q"], var["w"] = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]      # epsilon log 2, stated log 18
    with pytest.raises(ManifestError, match=r"'variables\[0\]\.epsilon' states"):
        Manifest.from_dict(data)
