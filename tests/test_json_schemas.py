"""Every ``--json`` output names its format and version and validates against its JSON Schema in docs/schemas.

Each command runs on real data: the built-in census-like file (households of three persons in the same
area, so that swapping and household risk have households) and, when ../shared is present, sdcMicro's
EU-SILC file, whose labels carry spaces and whose household ids repeat.  The schemas are checked with
the ``jsonschema`` package (draft 2020-12), a validator pramkit does not implement.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pramkit._json import OUTPUT_FORMATS
from pramkit.cli import build_parser, main
from pramkit.kernel.rng import SecretKey

#: The module's tests run in one test process (``--dist loadgroup``): its fixture makes
#: every command's output on the census (about 4 s) and, with the tests spread over two processes, was made once in each.
pytestmark = pytest.mark.xdist_group("test_json_schemas")


jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"
SDC_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro"

Argv = Callable[[dict[str, Path]], list[Any]]

#: One command line per kind of output, on the files of :func:`census_files` (named by key).
COMMANDS: dict[str, Argv] = {
    "pramkit.design.release": lambda f: ["design", f["data"], "--vars", "age,sex,marital_status", "--epsilon", "4",
                                         "--out", f["dir"] / "again.json", "--key-file", f["key"], "--quiet"],
    "pramkit.design.matrix": lambda f: ["design", "--probs", "0.5,0.3,0.2", "--epsilon", "1"],
    "pramkit.design.derived": lambda f: ["design", "--derive-from", f["manifest"], "--epsilon", "2",
                                         "--out", f["dir"] / "puf.json"],
    "pramkit.apply.result": lambda f: ["apply", f["data"], "--manifest", f["manifest"], "--out",
                                       f["dir"] / "again.csv", "--key-file", f["key"], "--quiet"],
    "pramkit.inspect.result": lambda f: ["inspect", f["manifest"], "--released", f["released"]],
    "pramkit.audit.result": lambda f: ["audit", "--manifest", f["manifest"], "--released", f["released"]],
    "pramkit.estimate.result": lambda f: ["estimate", f["released"], "--manifest", f["manifest"],
                                          "--vars", "marital_status", "--by", "sex"],
    "pramkit.estimate.regression": lambda f: ["estimate", f["released"], "--manifest", f["manifest"],
                                              "--regress", "sex ~ marital_status"],
    "pramkit.resample.result": lambda f: ["resample", f["released"], "--manifest", f["manifest"],
                                          "--out", f["dir"] / "post.csv", "--key-file", f["key"], "--quiet"],
    "pramkit.risk.identification": lambda f: ["risk", f["released"], "--keys", "age,sex,marital_status",
                                              "--sampling-fraction", "0.05", "--manifest", f["manifest"]],
    "pramkit.risk.household": lambda f: ["risk", f["data"], "--keys", "age,sex", "--household", "hid",
                                         "--sampling-fraction", "0.05"],
    "pramkit.risk.suda": lambda f: ["risk", f["data"], "--keys", "age,sex,marital_status,race", "--suda"],
    "pramkit.risk.contributions": lambda f: ["risk", f["data"], "--keys", "age,sex,marital_status",
                                             "--contributions", "--sampling-fraction", "0.05", "--replicates", "5"],
    "pramkit.risk.kanonymity": lambda f: ["risk", f["data"], "--keys", "age,sex,marital_status", "--k-anonymity", "3",
                                          "--max-dim", "2", "--l-diversity", "race,education"],
    "pramkit.swap.result": lambda f: ["swap", f["data"], "--hid", "hid", "--geo", "area", "--similar", "hsize",
                                      "--rate", "0.1", "--out", f["dir"] / "swapped.csv", "--key-file", f["key"]],
    "pramkit.suppress.result": lambda f: ["suppress", f["data"], "--keys", "sex,marital_status,race", "--k", "3",
                                          "--out", f["dir"] / "suppressed.csv", "--quiet"],
    "pramkit.new-ids.result": lambda f: ["new-ids", f["data"], "--id", "hid", "--key-file", f["key"],
                                         "--out", f["dir"] / "renumbered.csv"],
    "pramkit.attack.result": lambda f: ["attack", f["released"], "--original", f["data"], "--known", "age,area",
                                        "--target", "sex,marital_status,race", "--manifest", f["manifest"]],
    "pramkit.compare.result": lambda f: ["compare", f["data"], "--hid", "hid", "--geo", "area",
                                         "--risk-vars", "age,sex", "--key-file", f["key"]],
    "pramkit.synthesize.result": lambda f: ["synthesize", f["data"], "--vars", "race,education", "--public", "age,sex",
                                            "--epsilon", "3", "--out", f["dir"] / "synth.csv", "--key-file", f["key"],
                                            "--quiet"],
    "pramkit.reproduce.result": lambda f: ["reproduce", "ruiz", "--out", f["dir"] / "ruiz", "--quick", "--quiet"],
}

#: The same kinds on EU-SILC (db030 households in db040 regions), where the file allows it.
EUSILC: dict[str, Argv] = {
    "pramkit.design.release": lambda f: ["design", f["data"], "--vars", "db040,rb090,pl030", "--epsilon", "3",
                                         "--out", f["dir"] / "again.json", "--key-file", f["key"], "--quiet"],
    "pramkit.apply.result": lambda f: ["apply", f["data"], "--manifest", f["manifest"], "--out",
                                       f["dir"] / "again.csv", "--key-file", f["key"], "--quiet"],
    "pramkit.inspect.result": lambda f: ["inspect", f["manifest"], "--released", f["released"]],
    "pramkit.estimate.result": lambda f: ["estimate", f["released"], "--manifest", f["manifest"], "--vars", "pl030",
                                          "--by", "rb090", "--weights", "rb050"],
    "pramkit.risk.identification": lambda f: ["risk", f["released"], "--keys", "db040,hsize,rb090", "--weights",
                                              "rb050", "--manifest", f["manifest"]],
    "pramkit.risk.household": lambda f: ["risk", f["data"], "--keys", "db040,rb090", "--household", "db030",
                                         "--weights", "rb050"],
    "pramkit.risk.kanonymity": lambda f: ["risk", f["data"], "--keys", "db040,hsize,rb090,age", "--k-anonymity", "5",
                                          "--l-diversity", "pl030,pb220a", "--weights", "rb050"],
    "pramkit.swap.result": lambda f: ["swap", f["data"], "--hid", "db030", "--geo", "db040", "--similar", "hsize",
                                      "--rate", "0.1", "--out", f["dir"] / "swapped.csv", "--key-file", f["key"]],
}


def run_json(argv: list[Any]) -> dict[str, Any]:
    """``pramkit ARGV --json`` (``reproduce`` prints JSON without the flag): exit 0, one JSON object."""
    argv = [str(a) for a in argv]
    if argv[0] != "reproduce":
        argv.append("--json")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()
    value = json.loads(out.getvalue())
    assert isinstance(value, dict)
    return value


def schema(kind: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{kind}.json").read_text(encoding="utf-8"))


def validator(kind: str) -> Any:
    s = schema(kind)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def census_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The census-like file with households of three (one area each), a manifest, a key and a release."""
    from pramkit.datasets import census

    d = tmp_path_factory.mktemp("census")
    frame = census(1500, seed=48, areas=True)
    frame["hid"] = frame.index // 3
    frame["area"] = frame.groupby("hid")["area"].transform("first")  # a household lives in one area
    frame["hsize"] = 3
    frame.to_csv(d / "data.csv", index=False)
    f = {"dir": d, "data": d / "data.csv", "key": d / "key", "manifest": d / "m.json", "released": d / "r.csv"}
    SecretKey(bytes(range(32)), "the schema tests' key").save(f["key"])  # one release: the outputs are the same each run
    run_json(["design", f["data"], "--vars", "age,sex,marital_status", "--epsilon", "4", "--out", f["manifest"],
              "--key-file", f["key"], "--quiet"])
    run_json(["apply", f["data"], "--manifest", f["manifest"], "--out", f["released"], "--key-file", f["key"],
              "--quiet"])
    return f


@pytest.fixture(scope="module")
def census_outputs(census_files: dict[str, Path]) -> dict[str, dict[str, Any]]:
    return {kind: run_json(argv(census_files)) for kind, argv in COMMANDS.items()}


def test_every_kind_has_a_schema_and_a_command() -> None:
    assert set(COMMANDS) == set(OUTPUT_FORMATS)
    assert {p.stem for p in SCHEMAS.glob("*.json")} == set(OUTPUT_FORMATS)
    for kind, version in OUTPUT_FORMATS.items():
        s = schema(kind)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert s["properties"]["format"] == {"const": kind, "description": s["properties"]["format"]["description"]}
        assert s["properties"]["version"]["const"] == version
        assert {"format", "version"} <= set(s["required"])


def _json_commands() -> set[str]:
    """The subcommands that take ``--json``, read from the parser itself."""
    parser = build_parser(None)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name for name, p in sub.choices.items() if any("--json" in a.option_strings for a in p._actions)}


def test_every_command_with_json_is_covered() -> None:
    covered = {argv({"dir": Path("d"), "data": Path("x"), "key": Path("k"), "manifest": Path("m"),
                     "released": Path("r")})[0] for argv in COMMANDS.values()}
    assert _json_commands() <= covered, _json_commands() - covered


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_output_validates_against_its_schema(kind: str, census_outputs: dict[str, dict[str, Any]]) -> None:
    value = census_outputs[kind]
    assert list(value)[:2] == ["format", "version"]
    assert value["format"] == kind and value["version"] == OUTPUT_FORMATS[kind]
    errors = sorted(validator(kind).iter_errors(value), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_schema_rejects_an_output_without_its_format(kind: str, census_outputs: dict[str, dict[str, Any]]) -> None:
    check = validator(kind)
    value = dict(census_outputs[kind])
    del value["format"]
    assert not check.is_valid(value)
    other = next(k for k in sorted(OUTPUT_FORMATS) if k != kind)
    assert not check.is_valid({**census_outputs[kind], "format": other})            # another kind's output
    assert not check.is_valid({**census_outputs[kind], "version": OUTPUT_FORMATS[kind] + 1})  # a later version
    assert check.is_valid({**census_outputs[kind], "added_later": [1, "x"]})        # fields may be added


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_schema_rejects_an_output_with_a_field_of_the_wrong_type(kind: str,
                                                                  census_outputs: dict[str, dict[str, Any]]) -> None:
    """Every field of the real output that its schema (made from the result type, pramkit.outputs) constrains,
    nested ones too, given a value of another type (an integer a text, a text a number) is refused."""
    from test_output_schemas import forgeries, with_value

    check, value = validator(kind), census_outputs[kind]
    forged = list(forgeries(value, schema(kind), schema(kind)))
    assert forged
    accepted = ["/".join(map(str, path)) for path, wrong in forged if check.is_valid(with_value(value, path, wrong))]
    assert not accepted, f"{kind}: forged fields accepted: {accepted[:5]}"


@pytest.fixture(scope="module")
def eusilc_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("eusilc")
    f = {"dir": d, "data": SDC_DATA / "eusilc_laeken.csv", "key": d / "key", "manifest": d / "m.json",
         "released": d / "r.csv"}
    assert main(["keygen", str(f["key"])]) == 0
    run_json(["design", f["data"], "--vars", "db040,rb090,pl030", "--epsilon", "3", "--out", f["manifest"],
              "--key-file", f["key"], "--quiet"])
    run_json(["apply", f["data"], "--manifest", f["manifest"], "--out", f["released"], "--key-file", f["key"],
              "--quiet"])
    return f


@pytest.mark.parametrize("kind", sorted(EUSILC))
def test_eusilc_output_validates(kind: str, eusilc_files: dict[str, Path]) -> None:
    value = run_json(EUSILC[kind](eusilc_files))
    errors = sorted(validator(kind).iter_errors(value), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def test_the_schemas_page_names_every_kind() -> None:
    page = (SCHEMAS.parent / "schemas.md").read_text(encoding="utf-8")
    for kind in OUTPUT_FORMATS:
        assert f"schemas/{kind}.json" in page, kind
