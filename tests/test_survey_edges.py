"""A real survey file (EU-SILC) through the commands at their edges: a swap at rate 1, kept codes as the
help spells them, list options whose values begin with '-', numeric fields of a manifest at the limits of
a double, and the tests that need Java.  Bad input: exit 2, one line, inputs unchanged, nothing written;
good input: the release is estimable (`pramkit estimate`) and auditable (`pramkit audit`)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA, assert_refused
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pramkit.cli import main

#: Age bands of the EU-SILC examples (docs/structure.md); age -1 (born after the income reference period) in 0-15.
AGE_EDGES = [-2, 15, 24, 34, 44, 54, 64, 200]
AGE_BANDS = ["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65+"]


def run(args: list[Any]) -> tuple[int, str, str]:
    """``pramkit ARGS``: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def estimable_and_auditable(manifest: Path, released: Path, var: str, *extra: str) -> dict[str, Any]:
    """`pramkit estimate` (with the ``extra`` options) and `pramkit audit` accept the release; the estimate's JSON."""
    code, out, err = run(["estimate", released, "--manifest", manifest, "--vars", var, "--json", *extra])
    assert code == 0 and "Traceback" not in err, err
    code, audit, err = run(["audit", "--manifest", manifest, "--released", released])
    assert code == 0, (audit, err)
    return json.loads(out)


@pytest.fixture(scope="module")
def silc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The EU-SILC file with ``ageg`` (age bands) beside its columns; ``pl030`` is missing for exactly
    the persons under 16, as the survey defines it, and the file has a key."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("silc")
    raw = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype=str, keep_default_na=False)   # its texts as they are
    raw.insert(5, "ageg", pd.cut(pd.to_numeric(raw["age"]), AGE_EDGES, labels=AGE_BANDS).astype(str))
    raw.to_csv(d / "silc.csv", index=False)
    assert main(["keygen", str(d / "secret.key")]) == 0
    return d


# -- swap --rate 1 -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("donors", ["same-parent", "any-area"])
@pytest.mark.parametrize("rate", ["1", "0.999999", "0.99"])
def test_a_swap_at_and_near_rate_one_is_estimable_and_auditable(silc: Path, tmp_path: Path, rate: str,
                                                                donors: str) -> None:
    """The help allows rates in [0, 1]: at 1 and next to it the expected matrix is a matrix (it had a
    negative diagonal), the release's households per area are the original's, and estimate and audit accept
    it."""
    out, manifest = tmp_path / "swapped.csv", tmp_path / "swap.json"
    code, _, err = run(["swap", silc / "silc.csv", "--hid", "db030", "--geo", "db040", "--rate", rate,
                        "--donors", donors, "--out", out, "--manifest", manifest, "--key-file", silc / "secret.key"])
    assert code == 0, err
    original = pd.read_csv(silc / "silc.csv").groupby("db040")["db030"].nunique()
    released = pd.read_csv(out).groupby("db040")["db030"].nunique()
    assert released.equals(original)                         # households per area: a swap exchanges them
    m = json.loads(manifest.read_text())
    assert m["swapping"]["rate"] == float(rate)
    estimate = estimable_and_auditable(manifest, out, "db040")
    assert len(estimate["cells"]) == 9


@pytest.mark.parametrize("rate", ["1.5", "-0.1", "nan", "1e308"])
def test_a_swap_rate_outside_zero_one_is_one_line(silc: Path, tmp_path: Path, capsys, rate: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "silc.csv").write_bytes((silc / "silc.csv").read_bytes())
    assert_refused(folder, ["swap", folder / "silc.csv", "--hid", "db030", "--geo", "db040", "--rate", rate,
                            "--out", folder / "out.csv"], "swap rate must lie in [0, 1]", capsys)


# -- --keep-codes age=a|b, the help's own spelling ---------------------------------------------------------

def test_kept_codes_listed_with_a_bar_as_the_help_spells_them(silc: Path, tmp_path: Path) -> None:
    """``--keep-codes ageg=0-15|16-24`` (the help's example: ``age=0-9|10-17``) keeps both codes: nothing
    moves into or out of them, the manifest lists each, and the release is estimable and auditable."""
    manifest, out = tmp_path / "kept.json", tmp_path / "released.csv"
    code, _, err = run(["design", silc / "silc.csv", "--vars", "ageg,pl030", "--keep-codes", "ageg=0-15|16-24",
                        "--epsilon", "4", "--out", manifest])
    assert code == 0, err
    m = json.loads(manifest.read_text())
    assert m["input"]["structure"]["keep_codes"] == {"ageg": ["0-15", "16-24"]}
    code, _, err = run(["apply", silc / "silc.csv", "--manifest", manifest, "--out", out,
                        "--key-file", silc / "secret.key", "--quiet"])
    assert code == 0, err
    before = pd.read_csv(silc / "silc.csv", dtype=str, keep_default_na=False)["ageg"]
    after = pd.read_csv(out, dtype=str, keep_default_na=False)["ageg"]
    for kept in ("0-15", "16-24"):
        assert ((before == kept) == (after == kept)).all()   # never changed, and nothing became one
    assert (before != after).any()
    estimable_and_auditable(manifest, out, "ageg")


@pytest.mark.parametrize("keep,says", [
    ("ageg=a|b", "kept code 'a' is not a category of 'ageg'"),
    ("ageg=0-15|99", "kept code '99' is not a category of 'ageg'"),
    ("ageg=", "--keep-codes must look like"),
    ("sex=f", "kept codes name 'sex', which is not among the perturbed variables"),
])
def test_bad_kept_codes_are_one_line(silc: Path, tmp_path: Path, capsys, keep: str, says: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "silc.csv").write_bytes((silc / "silc.csv").read_bytes())
    assert_refused(folder, ["design", folder / "silc.csv", "--vars", "ageg,pl030", "--keep-codes", keep,
                            "--epsilon", "4", "--out", folder / "m.json"], says, capsys)


# -- values that begin with '-' ----------------------------------------------------------------------------

def test_list_values_that_begin_with_a_dash(silc: Path, tmp_path: Path) -> None:
    """``--na-values -9,NA,.`` (a space, not '=') is the option's value, for design, apply, estimate and
    swap alike: -9 and '.' then mean missing, and the release is estimable and auditable."""
    frame = pd.read_csv(silc / "silc.csv", dtype=str, keep_default_na=False)
    frame.loc[frame["pl030"] == "", "pl030"] = "-9"            # as a survey codes 'not applicable'
    frame.loc[frame.index[:3], "ageg"] = "."
    data = tmp_path / "coded.csv"
    frame.to_csv(data, index=False)
    manifest, out = tmp_path / "m.json", tmp_path / "released.csv"
    code, _, err = run(["design", data, "--vars", "ageg,pl030", "--na-values", "-9,NA,.", "--epsilon", "4",
                        "--out", manifest])
    assert code == 0, err
    m = json.loads(manifest.read_text())
    assert m["input"]["na_values"] == ["-9", "NA", "."]
    cats = {v["name"]: v["categories"] for v in m["variables"]}
    assert "-9" not in [str(c) for c in cats["pl030"]] and "." not in cats["ageg"]
    code, _, err = run(["apply", data, "--manifest", manifest, "--out", out, "--na-values", "-9,NA,.",
                        "--key-file", silc / "secret.key", "--quiet"])
    assert code == 0, err
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert (released["pl030"] == "-9").sum() == (frame["pl030"] == "-9").sum()   # missing stays missing
    code, _, err = run(["estimate", out, "--manifest", manifest, "--vars", "ageg", "--na-values", "-9,NA,.",
                        "--json"])
    assert code == 0, err
    code, _, err = run(["swap", data, "--hid", "db030", "--geo", "db040", "--rate", "0.1", "--na-values", "-9",
                        "--out", tmp_path / "swapped.csv", "--key-file", silc / "secret.key"])
    assert code == 0, err
    estimable_and_auditable(manifest, out, "pl030", "--na-values", "-9,NA,.")


@pytest.mark.parametrize("args,says", [
    (["--na-values", "--json"], "argument --na-values: expected one argument"),       # an option: no value
    (["--epsilon", "-1"], "epsilon (the record budget) must be a positive finite number"),
    (["--epsilon", "-inf"], "epsilon (the record budget) must be a positive finite number"),
    (["--keep-codes", "-ageg=0-15"], "kept codes name '-ageg'"),
])
def test_dash_values_that_are_wrong_are_one_line(silc: Path, tmp_path: Path, capsys, args: list[str],
                                                 says: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "silc.csv").write_bytes((silc / "silc.csv").read_bytes())
    base = ["design", folder / "silc.csv", "--vars", "ageg,pl030", "--out", folder / "m.json"]
    assert_refused(folder, base + (["--epsilon", "4"] if "--epsilon" not in args else []) + args, says, capsys)


# -- numeric fields of a real manifest at the limits of a double ------------------------------------------

@pytest.fixture(scope="module")
def manifests(silc: Path) -> dict[str, dict]:
    """Real manifests of the EU-SILC file in every stored form: form (8) (dp), blocks (strata, joint),
    a truncated geometric (metric), and a swap's dense expected matrix."""
    d = silc / "manifests"
    d.mkdir(exist_ok=True)
    codebook = d / "codebook.csv"
    pd.DataFrame({"variable": "ageg", "category": AGE_BANDS}).to_csv(codebook, index=False)
    data = silc / "silc.csv"
    runs = {
        "dp": ["design", data, "--vars", "ageg,rb090", "--epsilon", "3"],
        "joint": ["design", data, "--vars", "ageg,pl030", "--split", "joint", "--strata", "rb090", "--epsilon", "4"],
        "geometric": ["design", data, "--vars", "ageg", "--method", "metric", "--mechanism", "geometric",
                      "--metric-epsilon", "0.5", "--distances", "ordinal", "--categories", codebook],
        "swap": ["swap", data, "--hid", "db030", "--geo", "db040", "--rate", "0.3", "--out", d / "swapped.csv",
                 "--key-file", silc / "secret.key"],
    }
    out = {}
    for name, args in runs.items():
        target = d / f"{name}.json"
        code, _, err = run([*args, "--manifest" if name == "swap" else "--out", target])
        assert code == 0, (name, err)
        out[name] = json.loads(target.read_text())
    return out


def numeric_paths(value: Any, path: tuple = ()) -> list[tuple]:
    """The paths of every number in a JSON value (the first four items of a list)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in numeric_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value[:4]) for p in numeric_paths(v, (*path, i))]
    return [path] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


EXTREMES = st.one_of(
    st.sampled_from([1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324, 0, -0.0, -1, 2, 10**400, -(10**400),
                     2**63, 2**1024, 1e20]),
    st.floats(allow_nan=True, allow_infinity=True), st.integers())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_number_in_a_real_manifest_is_read_or_refused_in_one_line(manifests: dict[str, dict], tmp_path: Path,
                                                                      data: st.DataObject) -> None:
    """Any numeric field of a real manifest (the swap's ``rate``, a geometric ``rate``, ``q``, ``w``,
    epsilons, counts, versions) set to any number, NaN, infinity or an integer beyond a double: `inspect`
    and `audit` read it or refuse it, exit 2 with one line; never a traceback (``rate: 1e308`` was an
    OverflowError)."""
    name = data.draw(st.sampled_from(sorted(manifests)))
    manifest = copy.deepcopy(manifests[name])
    path = data.draw(st.sampled_from(numeric_paths(manifest)))
    value = data.draw(EXTREMES)
    at = manifest
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    target = tmp_path / "m.json"
    target.write_text(json.dumps(manifest))                     # NaN and Infinity as Python's json writes them
    for args in (["inspect", target, "--json"], ["audit", "--manifest", target]):
        code, _, err = run(args)
        lines = err.strip().splitlines()
        assert "Traceback" not in err and code in (0, 1, 2), (name, path, value, err)
        if code == 2:
            assert len(lines) == 1 and "error:" in lines[0], (name, path, value, err)


@pytest.mark.parametrize("field,value", [
    (("swapping", "rate"), 1e308),
    (("variables", 0, "design", "parameters", "rate"), 1e308),
])
def test_the_swap_manifest_with_a_huge_rate(manifests: dict[str, dict], tmp_path: Path, field: tuple,
                                            value: float) -> None:
    """The issue's case: ``"rate": 1e308`` in a swap's manifest is read (the rate is a record of the swap,
    the matrix states what it does) or refused in one line."""
    manifest = copy.deepcopy(manifests["swap"])
    at = manifest
    for step in field[:-1]:
        at = at[step]
    at[field[-1]] = value
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    code, _, err = run(["inspect", tmp_path / "m.json"])
    assert code in (0, 2) and "Traceback" not in err and len(err.strip().splitlines()) <= 1, err


def test_a_geometric_rate_beyond_a_double_is_read_with_an_infinite_epsilon(manifests: dict[str, dict],
                                                                          tmp_path: Path) -> None:
    """``rate: 1e308`` on a truncated geometric of 7 categories: its epsilon, rate x 6, is beyond the
    largest double, so the outward bound is inf and the stored epsilon (finite) is refused in one line."""
    manifest = copy.deepcopy(manifests["geometric"])
    manifest["variables"][0]["rate"] = 1e308
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    code, _, err = run(["inspect", tmp_path / "m.json"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "the matrices give 'inf'" in err, err
    from pramkit.matrix import PramMatrix

    assert PramMatrix.truncated_geometric(1e308, AGE_BANDS).epsilon == math.inf
    assert math.isfinite(PramMatrix.truncated_geometric(1e300, AGE_BANDS).epsilon)


# -- tests that need Java skip in one line without it ------------------------------------------------------

@pytest.mark.parametrize("required", [False, True])
def test_the_spark_tests_skip_without_java_unless_required(tmp_path: Path, required: bool) -> None:
    """With no java on PATH and no JAVA_HOME, the Spark tests are skipped with one line naming Java (they
    errored); with PRAMKIT_REQUIRE_SPARK=1, as CI sets it, they fail instead."""
    pytest.importorskip("pyspark")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PRAMKIT_REQUIRE_SPARK")}
    env["PATH"] = str(bin_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    if required:
        env["PRAMKIT_REQUIRE_SPARK"] = "1"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", "-rs",
                           "tests/test_structure_spark.py", "tests/test_spark.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    if required:
        assert done.returncode != 0 and "PRAMKIT_REQUIRE_SPARK is set but Java is absent" in output, output
    else:
        assert done.returncode in (0, 5), output                  # 5: every module skipped at import
        skips = [line for line in output.splitlines() if line.startswith("SKIPPED")]
        assert skips and all("Java is not installed" in line for line in skips), output
        assert " error" not in output and "failed" not in output, output


def test_java_is_found_as_pyspark_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JAVA_HOME wins over PATH, as in PySpark's launcher; a JAVA_HOME without bin/java is no Java."""
    from _requires import java

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java() is None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "java").chmod(0o755)
    assert java() == str(tmp_path / "bin" / "java")
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert java() == str(tmp_path / "bin" / "java")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert java() is None



# -- a --rule-breaking keep release is estimable -----------------------------------------------------------

def test_a_rule_breaking_keep_release_is_estimable_and_auditable(silc: Path, tmp_path: Path) -> None:
    """The natural rule "a person of 65 or more is no pupil or student" (pl030 = 4) is broken by one
    EU-SILC record; with --rule-breaking keep it is released as it is, and `estimate` (it refused: "1
    record(s) in combinations ... that 'ageg*pl030' never releases") gives that cell its released count,
    exactly the original's, beside the corrected cells; the survey-weighted estimate too; audit passes."""
    rules = tmp_path / "rules.csv"
    rules.write_text("ageg,pl030\n65+,4\n", encoding="utf-8")
    manifest, out = tmp_path / "m.json", tmp_path / "released.csv"
    code, _, err = run(["design", silc / "silc.csv", "--vars", "ageg,pl030", "--split", "joint", "--forbid", rules,
                        "--rule-breaking", "keep", "--strata", "rb090", "--epsilon", "4", "--out", manifest])
    assert code == 0, err
    code, _, err = run(["apply", silc / "silc.csv", "--manifest", manifest, "--out", out,
                        "--key-file", silc / "secret.key", "--quiet"])
    assert code == 0, err
    original = pd.read_csv(silc / "silc.csv", dtype=str, keep_default_na=False)
    breakers = original[(original["ageg"] == "65+") & (original["pl030"] == "4")]
    assert len(breakers) == 1
    estimate = estimable_and_auditable(manifest, out, "ageg*pl030")
    sex = breakers["rb090"].iloc[0]
    cell = next(c for c in estimate["cells"] if [str(x) for x in c["category"]] == [sex, "65+", "4"])
    assert cell["estimate"] == 1.0 and cell["released"] == 1
    code, out_json, err = run(["estimate", out, "--manifest", manifest, "--vars", "ageg*pl030", "--weights", "rb050",
                               "--json"])
    assert code == 0, err
    weighted = json.loads(out_json)
    cell = next(c for c in weighted["cells"] if [str(x) for x in c["category"]] == [sex, "65+", "4"])
    assert cell["estimate"] == pytest.approx(float(breakers["rb050"].iloc[0]), rel=1e-12)


@pytest.mark.slow
def test_the_estimate_with_rule_breakers_kept_is_unbiased_by_simulation() -> None:
    """2,000 records of age x status under the rule "a child is never working", 25 of them breaking it,
    released with rule_breaking keep under 300 keys: in every release the breakers' cell is estimated
    exactly (their released count is the original's), and the mean of the estimates of every cell lies
    within 4 Monte Carlo standard errors of the original count (computed by pandas, not by pramkit)."""
    from pramkit.engine.perturb import perturb_frame
    from pramkit.estimate.table import estimate_table
    from pramkit.release.pipeline import design_release

    rng = np.random.default_rng(44)
    n = 2_000
    age = rng.choice(["child", "young", "adult", "old"], n, p=[0.2, 0.2, 0.4, 0.2])
    status = np.where(age == "child", "none", rng.choice(["none", "work", "retired"], n, p=[0.3, 0.5, 0.2]))
    status[np.flatnonzero(age == "child")[:25]] = "work"                    # the rule breakers
    frame = pd.DataFrame({"age": age, "status": status})
    manifest = design_release(frame, ["age", "status"], epsilon=3.0, split="joint",
                              forbid=[{"age": "child", "status": "work|retired"}], rule_breaking="keep",
                              exact_frequencies=True)
    truth = frame.value_counts(["age", "status"])
    name = manifest.names[0]
    estimates = []
    for seed in range(300):
        released = perturb_frame(frame, manifest, key=bytes([seed % 256, seed // 256]) * 16).data
        res = estimate_table(released, manifest, name)
        cells = [tuple(c) for c in res.categories[0]]
        got = dict(zip(cells, res.table.counts.tolist()))
        assert got[("child", "work")] == truth[("child", "work")] == 25
        assert ("child", "retired") not in got or got[("child", "retired")] == 0
        estimates.append([got.get(c, 0.0) for c in truth.index])
    values = np.asarray(estimates)
    mean, mc_se = values.mean(axis=0), values.std(axis=0, ddof=1) / math.sqrt(len(values))
    z = (mean - truth.to_numpy()) / np.where(mc_se > 0, mc_se, 1.0)
    assert np.all(np.abs(z) < 4), dict(zip(truth.index, z.round(2)))


# -- a value every cell of which a rule forbids is kept, not dropped ---------------------------------------

UNDER_16 = {"any status": "ageg,pl030\n0-15,\n", "every status": "ageg,pl030\n0-15,1|2|3|4|5|6|7\n"}


@pytest.mark.parametrize("strata", [[], ["--strata", "rb090"]], ids=["no strata", "strata"])
@pytest.mark.parametrize("breaking", ["keep", "error"])
@pytest.mark.parametrize("rule", sorted(UNDER_16))
def test_under_16_has_no_economic_status(silc: Path, tmp_path: Path, rule: str, breaking: str,
                                         strata: list[str]) -> None:
    """The natural rule on EU-SILC's age bands, pl030 missing for every child: no cell holds 0-15. The
    design says so in one note (it dropped 0-15 silently), the manifest lists it as unpaired, `apply`
    accepts the file the design was made from (it refused '0-15'), every child keeps 0-15 and a missing
    pl030, no adult becomes 0-15, and the release is estimable and auditable (public, and with the
    original and the key)."""
    rules = tmp_path / "rules.csv"
    rules.write_text(UNDER_16[rule], encoding="utf-8")
    manifest, out = tmp_path / "m.json", tmp_path / "released.csv"
    code, printed, err = run(["design", silc / "silc.csv", "--vars", "ageg,pl030", "--split", "joint", "--forbid",
                              rules, "--rule-breaking", breaking, *strata, "--epsilon", "4", "--out", manifest])
    assert code == 0, err
    notes = [line for line in printed.splitlines() if "0-15" in line and line.startswith("note:")]
    assert len(notes) == 1 and "in no allowed cell of ageg*pl030" in notes[0] and "pl030 is missing" in notes[0]
    m = json.loads(manifest.read_text())
    unpaired = m["variables"][0]["unpaired"]["ageg"]
    assert unpaired == (["0-15"] if not strata else [["female", "0-15"], ["male", "0-15"]])
    assert "unpaired" in {f["kind"] for f in m["ledger"]["released_exactly_facts"]}
    code, _, err = run(["apply", silc / "silc.csv", "--manifest", manifest, "--out", out,
                        "--key-file", silc / "secret.key", "--quiet"])
    assert code == 0, err
    before = pd.read_csv(silc / "silc.csv", dtype=str, keep_default_na=False)
    after = pd.read_csv(out, dtype=str, keep_default_na=False)
    child = before["ageg"] == "0-15"
    assert child.sum() == 2720 and (before.loc[child, "pl030"] == "").all()
    assert (after.loc[child, "ageg"] == "0-15").all() and (after.loc[child, "pl030"] == "").all()
    assert (after.loc[~child, "ageg"] != "0-15").all() and (after.loc[~child, "pl030"] != "").all()
    assert (after.loc[~child, ["ageg", "pl030"]] != before.loc[~child, ["ageg", "pl030"]]).any(axis=None)
    estimate = estimable_and_auditable(manifest, out, "ageg*pl030")
    assert estimate["n"] == len(before) - 2720 and estimate["dropped"] == 2720
    code, audit, err = run(["audit", "--manifest", manifest, "--released", out, "--original", silc / "silc.csv",
                            "--key-file", silc / "secret.key"])
    assert code == 0, (audit, err)
    resampled = tmp_path / "resampled.csv"                        # post-processing reads the unpaired values too
    code, _, err = run(["resample", out, "--manifest", manifest, "--out", resampled, "--key-file", silc / "secret.key",
                        "--quiet"])
    assert code == 0, err
    again = pd.read_csv(resampled, dtype=str, keep_default_na=False)
    assert (again.loc[child, "ageg"] == "0-15").all() and (again.loc[~child, "ageg"] != "0-15").all()


def test_a_child_with_a_status_breaks_the_rule(silc: Path, tmp_path: Path, capsys) -> None:
    """One child given a status: by default the design stops, naming the row and the rule, in one line."""
    frame = pd.read_csv(silc / "silc.csv", dtype=str, keep_default_na=False)
    row = int(np.flatnonzero(frame["ageg"] == "0-15")[0])
    frame.loc[row, "pl030"] = "1"
    folder = tmp_path / "in"
    folder.mkdir()
    frame.to_csv(folder / "silc.csv", index=False)
    (folder / "rules.csv").write_text(UNDER_16["any status"], encoding="utf-8")
    assert_refused(folder, ["design", folder / "silc.csv", "--vars", "ageg,pl030", "--split", "joint", "--forbid",
                            folder / "rules.csv", "--epsilon", "4", "--out", folder / "m.json"],
                   f"row {row + 1} breaks rule 1", capsys)


@pytest.fixture(scope="module")
def unpaired_manifest(silc: Path) -> dict:
    """The manifest (as JSON) of the design under the rule "0-15 has no status", which lists 0-15 as unpaired;
    made once for the module, each test editing a deep copy."""
    folder = silc / "unpaired"
    folder.mkdir(exist_ok=True)
    rules = folder / "rules.csv"
    rules.write_text(UNDER_16["any status"], encoding="utf-8")
    good = folder / "good.json"
    code, _, err = run(["design", silc / "silc.csv", "--vars", "ageg,pl030", "--split", "joint", "--forbid", rules,
                        "--epsilon", "4", "--out", good])
    assert code == 0, err
    return json.loads(good.read_text())


@pytest.mark.parametrize("edit,says", [
    (lambda v: v.update(unpaired={"ageg": ["16-24"]}), "is in a cell of the matrix"),
    (lambda v: v.update(unpaired={"sex": ["0-15"]}), "which is not one of its columns"),
    (lambda v: v.update(unpaired={"ageg": [None]}), "is missing"),
    (lambda v: v.update(unpaired={"ageg": [["female", "0-15"]]}), "must be a value"),
    (lambda v: v.update(unpaired=["0-15"]), "must map column names to lists of values"),
    (lambda v: v.update(unpaired={"ageg": ["0-15"]}, missing="category"), "missing"),
])
def test_a_bad_unpaired_field_is_one_line(unpaired_manifest: dict, tmp_path: Path, capsys, edit: Any,
                                         says: str) -> None:
    m = copy.deepcopy(unpaired_manifest)
    edit(m["variables"][0])
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "m.json").write_text(json.dumps(m))
    assert_refused(folder, ["inspect", folder / "m.json"], says, capsys)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.sampled_from(["keep", "error"]))
def test_unpaired_values_through_design_and_apply(seed: int, stratified: bool, breaking: str) -> None:
    """Any small file of age x status (x a region stratum) whose rules leave a value of age, or of age in
    one region, without a cell: the design lists it as unpaired, and the release keeps every record
    holding it (with status missing) as it is, releases nobody else into it, and no record into a
    forbidden combination."""
    from pramkit.engine.perturb import perturb_frame
    from pramkit.release.pipeline import design_release

    rng = np.random.default_rng(seed)
    n = 300
    region = rng.choice(["north", "south"], n)
    age = rng.choice(["0-15", "16-64", "65+"], n)
    status = rng.choice(["work", "retired", "none"], n).astype(object)
    alone = (age == "0-15") if not stratified else (age == "0-15") & (region == "north")
    status[alone] = None                                          # the rules allow them only without a status
    status[(~alone) & (rng.random(n) < 0.1)] = None               # some adults miss a status too
    frame = pd.DataFrame({"region": region, "age": age, "status": status})
    rules = ([{"age": "0-15"}] if not stratified else [{"region": "north", "age": "0-15"}])
    manifest = design_release(frame, ["age", "status"], epsilon=2.0, split="joint", forbid=rules,
                              strata="region" if stratified else (), rule_breaking=breaking,
                              exact_frequencies=True)
    v = manifest.variables[0]
    assert v.unpaired == {"age": (("north", "0-15"),) if stratified else ("0-15",)}
    out = perturb_frame(frame, manifest, key=seed.to_bytes(4, "big") * 8).data
    assert (out.loc[alone, "age"] == "0-15").all() and out.loc[alone, "status"].isna().all()
    north = frame["region"] == "north" if stratified else np.ones(n, dtype=bool)
    assert not ((out["age"] == "0-15") & north & ~alone).any()
    assert not ((out["age"] == "0-15") & north & out["status"].notna()).any()
    assert (out["status"].isna() == frame["status"].isna()).all()


@pytest.mark.parametrize("epsilon", [355.0, 699.0])
def test_the_form8_optimum_past_a_double_of_e_to_twice_epsilon_is_the_entropy(epsilon: float) -> None:
    """At an epsilon whose e^(2 epsilon) passes a double (above 354), the audit's re-proof of a form (8) design
    solves its vertices without overflowing (it raised a RuntimeWarning, a traceback under ``-W error``, found by
    the test above) and finds the identity's information, the entropy of p (scipy's, in nats)."""
    import warnings

    from scipy.stats import entropy

    from pramkit.audit.manifest import form8_optimum

    p = np.array([0.12, 0.2, 0.3, 0.38])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = form8_optimum(p, epsilon)
    assert math.isclose(got, float(entropy(p)), rel_tol=1e-9)
