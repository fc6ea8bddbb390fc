"""The ``--json`` outputs whose shape depends on the release validate against their installed schemas
(``pramkit.output_schema``, checked by the ``jsonschema`` package): ``inspect`` of a joint and of a stratified
manifest (categories that are cells, arrays of labels), ``estimate`` of one variable (a cell named by its
label) and of two, and ``compare`` whose first risk variable is not age (a field was named after it)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from conftest import eusilc_export

import pramkit
from pramkit.cli import main

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = eusilc_export(3000)
    d = tmp_path_factory.mktemp("kinds")
    frame.to_csv(d / "silc.csv", index=False)
    assert main(["keygen", str(d / "key")]) == 0
    for name, extra in (("joint", ["--vars", "pl030,rb090", "--split", "joint"]),
                        ("strata", ["--vars", "pl030", "--strata", "rb090"]), ("plain", ["--vars", "pl030"])):
        assert main(["design", str(d / "silc.csv"), *extra, "--epsilon", "3", "--na-values", "-9", "--out",
                     str(d / f"{name}.json"), "--key-file", str(d / "key"), "--quiet"]) == 0
    assert main(["apply", str(d / "silc.csv"), "--manifest", str(d / "plain.json"), "--out", str(d / "r.csv"),
                 "--na-values", "-9", "--key-file", str(d / "key"), "--quiet"]) == 0
    return d


def _printed(args: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0, args
    return json.loads(out.getvalue())


@pytest.mark.parametrize("case", ["inspect joint", "inspect strata", "estimate one", "estimate two", "compare sex"])
def test_the_output_validates(files: Path, case: str) -> None:
    args = {
        "inspect joint": ["inspect", str(files / "joint.json"), "--json"],
        "inspect strata": ["inspect", str(files / "strata.json"), "--json"],
        "estimate one": ["estimate", str(files / "r.csv"), "--manifest", str(files / "plain.json"), "--vars",
                         "pl030", "--na-values", "-9", "--json"],
        "estimate two": ["estimate", str(files / "r.csv"), "--manifest", str(files / "plain.json"), "--vars",
                         "pl030", "--by", "rb090", "--na-values", "-9", "--json"],
        "compare sex": ["compare", str(files / "silc.csv"), "--hid", "db030", "--geo", "db040", "--risk-vars",
                        "rb090,age", "--key-file", str(files / "key"), "--json"],
    }[case]
    printed = _printed(args)
    jsonschema.Draft202012Validator(pramkit.output_schema(printed["format"])).validate(printed)
    if case.startswith("inspect"):  # a joint or stratified variable's categories are its cells
        assert all(isinstance(c, list) for c in printed["variables"][0]["categories"])
    if case == "compare sex":
        method = printed["methods"][0]
        assert method["risk_var"] == "rb090" and method["area_by_rb090_tvd"] == method["area_by_risk_var_tvd"]
