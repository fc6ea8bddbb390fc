"""Invariant PRAM on joint cells (``--method invariant --split joint``), with edit rules and strata.

Checked against what the design code does not compute: sdcMicro's construction written again here
with NumPy (P with the drawn diagonal, Q its Bayes inverse, ``alpha P Q + (1 - alpha) I``), the
expected released table ``counts R`` computed from the manifest's JSON and the original file read
by pandas, and released files of NIST's ACS excerpt and sdcMicro's testdata, simulated by the engine
and read as they are.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit
from pramkit.cli import main
from tests.conftest import assert_refused

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
SDC = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro"
#: NIST's data dictionary: OWN_RENT is 0 (not applicable) exactly for group quarters (HOUSING_TYPE 2, 3).
HOUSING_RULES = "HOUSING_TYPE,OWN_RENT\n2|3,1|2\n1,0\n"
#: sdcMicro's testdata: the head's spouse (relat 2) is married (hhcivil 2).
SPOUSE_RULES = "relat,hhcivil\n2,1|3|4\n"
SDCMICRO = {"pd": 0.8, "alpha": 0.5, "seed": 7}


@pytest.fixture(scope="module")
def acs() -> pd.DataFrame:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    return pd.read_csv(NIST, dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    if not (SDC / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    return pd.read_csv(SDC / "testdata.csv", dtype=str, keep_default_na=False)


def sdcmicro_matrix(p: np.ndarray, diagonal: np.ndarray, alpha: float) -> np.ndarray:
    """sdcMicro's invariant matrix, written from Gouweleeuw et al. (1998): P keeps category k with
    the drawn ``diagonal[k]`` and spreads the rest evenly; ``Q[j, k] = P[k, j] p_k / sum_i p_i P[i, j]``;
    ``R = alpha P Q + (1 - alpha) I``."""
    s = p.size
    big_p = np.tile(((1.0 - diagonal) / (s - 1))[:, None], (1, s))
    np.fill_diagonal(big_p, diagonal)
    released = p @ big_p
    q = (big_p * p[:, None]).T / released[:, None]
    return alpha * big_p @ q + (1.0 - alpha) * np.eye(s)


def dense(entry: dict[str, Any]) -> np.ndarray:
    """A manifest variable's matrix from its JSON (dense, or blocks of dense matrices)."""
    if entry["form"] == "dense":
        return np.array(entry["matrix"], dtype=float)
    assert entry["form"] == "blocks"
    size = len(entry["categories"])
    out = np.zeros((size, size))
    for block in entry["blocks"]:
        idx = np.array(block["members"])
        out[np.ix_(idx, idx)] = np.array(block["matrix"], dtype=float) if block["form"] == "dense" else 1.0
    return out


def cell_counts(frame: pd.DataFrame, entry: dict[str, Any]) -> np.ndarray:
    """The original counts of the manifest's cells (strata first, then the columns), by pandas."""
    columns = [*entry.get("given", []), *entry["columns"]]
    counts = frame.groupby(columns).size()
    keys = [tuple(str(x) for x in (c if isinstance(c, list) else [c])) for c in entry["categories"]]
    found = {tuple(str(x) for x in (k if isinstance(k, tuple) else (k,))): int(n) for k, n in counts.items()}
    return np.array([found.get(k, 0) for k in keys], dtype=float)


def forbidden(frame: pd.DataFrame, rules: str) -> pd.Series:
    """Records that hold a combination a rules CSV forbids (read here, not by pramkit)."""
    lines = rules.strip().splitlines()
    columns = lines[0].split(",")
    hit = pd.Series(False, index=frame.index)
    for line in lines[1:]:
        row = pd.Series(True, index=frame.index)
        for column, cell in zip(columns, line.split(",")):
            if cell:
                row &= frame[column].isin(cell.split("|"))
        hit |= row
    return hit


def _run(args: list[Any]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


# -- (a) the construction: sdcMicro's, and a joint design over one variable is the single-variable one ---

@pytest.mark.parametrize("source", [{"exact_frequencies": True}, {"design_epsilon": 0.3}])
def test_a_joint_design_over_one_variable_is_the_single_variable_design(testdata, key, source) -> None:
    made = {split: pramkit.design_planned(testdata, pramkit.plan_release(
        ["water"], method="invariant", split=split, options=SDCMICRO, **source), key=key).manifest
        for split in ("equal", "joint")}
    one, joint = (made[s]["water"].matrix for s in ("equal", "joint"))
    assert one.matrix.tobytes() == joint.matrix.tobytes()
    assert one.categories == joint.categories
    raw = {s: json.loads(m.to_json()) for s, m in made.items()}
    assert raw["equal"]["variables"] == raw["joint"]["variables"]
    assert raw["equal"]["ledger"]["dp_counts"] == raw["joint"]["ledger"]["dp_counts"]


def test_the_joint_matrix_is_sdcmicros_construction_on_the_joint_cells(testdata, key) -> None:
    m = pramkit.design_planned(testdata, pramkit.plan_release(
        ["roof", "walls"], method="invariant", split="joint", options=SDCMICRO, design_epsilon=0.5),
        key=key).manifest
    raw = json.loads(m.to_json())
    entry = raw["variables"][0]
    noisy = np.maximum(np.array(raw["ledger"]["dp_counts"]["roof*walls"]["noisy"], dtype=float), 1.0)
    p = noisy / noisy.sum()                                        # the published DP frequencies, as read
    diagonal = np.array(entry["design"]["parameters"]["base_diagonal"])
    assert len(entry["categories"]) == 15 and diagonal.min() >= 0.8
    expected = sdcmicro_matrix(p, diagonal, 0.5)
    assert np.abs(dense(entry) - expected).max() < 1e-12
    assert np.abs(p @ dense(entry) - p).max() < 1e-12


# -- (b) invariance of the joint table, from the manifest's matrix and the original file ---------------

@pytest.mark.parametrize(("columns", "strata", "rules"), [
    (["HOUSING_TYPE", "OWN_RENT"], (), HOUSING_RULES),
    (["HOUSING_TYPE", "OWN_RENT"], ("SEX",), HOUSING_RULES),
    (["MSP", "DVET", "DEYE"], ("SEX",), None),
])
def test_the_expected_released_joint_table_is_the_original(acs, tmp_path, columns, strata, rules) -> None:
    data = tmp_path / "acs.csv"
    acs[[*strata, *columns]].to_csv(data, index=False)
    forbid = None
    if rules is not None:
        forbid = tmp_path / "rules.csv"
        forbid.write_text(rules)
    m = pramkit.design_release(data, columns, method="invariant", split="joint", strata=strata, forbid=forbid,
                               options=SDCMICRO, exact_frequencies=True)
    entry = json.loads(m.to_json())["variables"][0]
    counts = cell_counts(acs, entry)
    assert counts.sum() == len(acs)                        # every record is in a cell the rules allow
    r = dense(entry)
    assert np.allclose(r.sum(axis=1), 1.0, atol=1e-12)
    assert np.abs(counts @ r - counts).max() < 1e-8 * len(acs)
    assert (np.diagonal(r) < 1).all() or counts.min() == 0  # and the values do move


def test_on_dp_frequencies_the_noisy_table_is_kept_and_the_original_nearly(acs, tmp_path, key) -> None:
    data = tmp_path / "acs.csv"
    acs[["SEX", "HOUSING_TYPE", "OWN_RENT"]].to_csv(data, index=False)
    (tmp_path / "rules.csv").write_text(HOUSING_RULES)
    plan = pramkit.plan_release(["HOUSING_TYPE", "OWN_RENT"], method="invariant", split="joint", strata="SEX",
                                forbid=tmp_path / "rules.csv", options=SDCMICRO, design_epsilon=0.2)
    m = pramkit.design_planned(data, plan, key=key).manifest
    raw = json.loads(m.to_json())
    entry = raw["variables"][0]
    noisy = np.maximum(np.array(raw["ledger"]["dp_counts"][entry["name"]]["noisy"], dtype=float), 1.0)
    r = dense(entry)
    for block in entry["blocks"]:                            # each stratum keeps its own noisy table
        idx = np.array(block["members"])
        p = noisy[idx] / noisy[idx].sum()
        assert np.abs(p @ r[np.ix_(idx, idx)] - p).max() < 1e-12
    counts = cell_counts(acs, entry)
    assert 0.5 * np.abs(counts @ r - counts).sum() / counts.sum() < 0.01   # off by about the DP noise only
    assert raw["ledger"]["design_epsilon"] == 0.2 and raw["ledger"]["record_epsilon"] < 8   # given the strata


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 4), st.integers(2, 3), st.lists(st.integers(0, 11), min_size=30, max_size=120),
       st.floats(0.0, 0.99), st.floats(0.0, 1.0), st.booleans())
def test_any_joint_table_is_kept(a, b, codes, pd_, alpha, with_rule) -> None:
    frame = pd.DataFrame({"x": [f"x{c % a}" for c in codes], "y": [f"y {c % b}" for c in codes]})
    rules = [{"x": "x0", "y": "y 1"}] if with_rule else None
    if with_rule:
        frame = frame[~((frame["x"] == "x0") & (frame["y"] == "y 1"))]
    if frame.groupby(["x", "y"]).ngroups < 2:
        return
    # the categories declared, as a codebook does: a sample may miss one (a rule naming it, a variable seen
    # with one value), which the design refuses when the categories are read off the data
    cats = {"x": [f"x{i}" for i in range(a)], "y": [f"y {j}" for j in range(b)]}
    m = pramkit.design_release(frame, ["x", "y"], method="invariant", split="joint", forbid=rules, categories=cats,
                               options={"pd": pd_, "alpha": alpha, "seed": 1}, exact_frequencies=True)
    entry = json.loads(m.to_json())["variables"][0]
    counts = cell_counts(frame, entry)
    assert np.abs(counts @ dense(entry) - counts).max() < 1e-9 * len(frame)
    if with_rule:
        assert ["x0", "y 1"] not in entry["categories"]


# -- (c) rules: no forbidden joint cell is ever released; the released table reads as the original -------

def _released_table_is_near(original: pd.DataFrame, released: pd.DataFrame, columns: list[str],
                            r: np.ndarray, entry: dict[str, Any]) -> None:
    """The released counts of every cell within 5 standard deviations of the original's (their
    expectation under an invariant matrix): the variance of a cell is sum_i n_i R_ij (1 - R_ij)."""
    counts, out = cell_counts(original, entry), cell_counts(released, entry)
    sd = np.sqrt(counts @ (r * (1.0 - r)))
    assert out.sum() == counts.sum()
    assert (np.abs(out - counts) <= 5 * sd + 1e-9).all(), (out - counts, sd)


def test_the_nist_release_holds_no_forbidden_cell(acs, tmp_path, key) -> None:
    (tmp_path / "rules.csv").write_text(HOUSING_RULES)
    m = pramkit.design_planned(NIST, pramkit.plan_release(
        ["HOUSING_TYPE", "OWN_RENT"], method="invariant", split="joint", forbid=tmp_path / "rules.csv",
        strata="SEX", options=SDCMICRO, design_epsilon=0.2), key=key).manifest
    m.write(tmp_path / "m.json")
    result = pramkit.apply_file(NIST, tmp_path / "m.json", tmp_path / "r.csv", key=key)
    released = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    assert result.rows == len(acs) == len(released)
    assert not forbidden(acs, HOUSING_RULES).any()
    assert not forbidden(released, HOUSING_RULES).any()
    moved = (released[["HOUSING_TYPE", "OWN_RENT"]] != acs[["HOUSING_TYPE", "OWN_RENT"]]).any(axis=1)
    assert 0.01 < moved.mean() < 0.5
    assert (released["SEX"] == acs["SEX"]).all()
    entry = json.loads(m.to_json())["variables"][0]
    _released_table_is_near(acs, released, ["HOUSING_TYPE", "OWN_RENT"], dense(entry), entry)


def test_the_sdcmicro_testdata_release_holds_no_forbidden_cell(testdata, tmp_path, key) -> None:
    (tmp_path / "rules.csv").write_text(SPOUSE_RULES)
    m = pramkit.design_release(SDC / "testdata.csv", ["relat", "hhcivil"], method="invariant", split="joint",
                               forbid=tmp_path / "rules.csv", strata="urbrur", options=SDCMICRO,
                               exact_frequencies=True)
    m.write(tmp_path / "m.json")
    pramkit.apply_file(SDC / "testdata.csv", tmp_path / "m.json", tmp_path / "r.csv", key=key)
    released = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    assert not forbidden(testdata, SPOUSE_RULES).any() and not forbidden(released, SPOUSE_RULES).any()
    assert (released["relat"] != testdata["relat"]).mean() > 0.01
    entry = json.loads(m.to_json())["variables"][0]
    _released_table_is_near(testdata, released, ["relat", "hhcivil"], dense(entry), entry)
    statement = json.loads(m.to_json())["ledger"]["statement"]
    assert "stationary distributions" in statement      # exact frequencies: the matrix shows them


# -- (d) the command line ---------------------------------------------------------------------------

def test_the_command_designs_inspects_and_audits(acs, tmp_path) -> None:
    data = tmp_path / "acs.csv"
    acs[["SEX", "HOUSING_TYPE", "OWN_RENT"]].to_csv(data, index=False)
    (tmp_path / "rules.csv").write_text(HOUSING_RULES)
    code, out, err = _run(["design", data, "--vars", "HOUSING_TYPE,OWN_RENT", "--method", "invariant",
                           "--split", "joint", "--forbid", tmp_path / "rules.csv", "--strata", "SEX",
                           "--pd", "0.8", "--alpha", "0.5", "--seed", "7", "--design-epsilon", "0.2",
                           "--out", tmp_path / "m.json", "--quiet"])
    assert code == 0, err
    raw = json.loads((tmp_path / "m.json").read_text())
    assert raw["input"]["method"] == "invariant" and raw["input"]["split"] == "joint"
    assert [v["name"] for v in raw["variables"]] == ["HOUSING_TYPE*OWN_RENT"]
    assert len(raw["variables"][0]["categories"]) == 2 * 4          # (SEX, allowed cell): 2 x 4
    code, out, err = _run(["inspect", tmp_path / "m.json"])
    assert code == 0 and "HOUSING_TYPE*OWN_RENT" in out and "invariant" in out, err
    code, out, err = _run(["audit", "--manifest", tmp_path / "m.json"])
    assert code == 0, out
    assert "pass  manifest  HOUSING_TYPE*OWN_RENT: invariance: " in out


@pytest.fixture
def folder(acs, tmp_path) -> Path:
    acs[["SEX", "HOUSING_TYPE", "OWN_RENT", "PUMA"]].to_csv(
        tmp_path / "acs.csv", index=False)
    (tmp_path / "rules.csv").write_text(HOUSING_RULES)
    (tmp_path / "unknown.csv").write_text("HOUSING_TYPE,OWN_RENT\n7,1\n")
    (tmp_path / "coupled.csv").write_text("HOUSING_TYPE,OWN_RENT\n1,0\n")
    (tmp_path / "every.csv").write_text("HOUSING_TYPE,OWN_RENT\n,\n")
    (tmp_path / "broken.csv").write_text("HOUSING_TYPE,OWN_RENT\n1,1\n")
    return tmp_path


JOINT = ["--vars", "HOUSING_TYPE,OWN_RENT", "--method", "invariant", "--split", "joint"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--vars", "HOUSING_TYPE,OWN_RENT", "--method", "rr", "--split", "joint", "--epsilon", "2"],
     "split 'joint' is for methods dp, invariant; method 'rr'"),
    (["--vars", "HOUSING_TYPE,OWN_RENT", "--method", "invariant", "--split", "optimal", "--exact-frequencies"],
     "split 'optimal' is for method 'dp'; method 'invariant'"),
    ([*JOINT], "reads frequencies: give epsilon"),
    ([*JOINT, "--exact-frequencies", "--pd", "1.5"], "pd must be"),
    ([*JOINT, "--exact-frequencies", "--forbid", "unknown.csv"], "7"),
    ([*JOINT, "--exact-frequencies", "--forbid", "every.csv"], "forbid every record"),
    ([*JOINT, "--exact-frequencies", "--forbid", "broken.csv"], "breaks"),
    (["--vars", "HOUSING_TYPE,OWN_RENT", "--method", "invariant", "--exact-frequencies", "--forbid", "coupled.csv"],
     "use split joint"),
    ([*JOINT, "--exact-frequencies", "--household", "PUMA", "--household-vars", "HOUSING_TYPE"], "household"),
    ([*JOINT, "--exact-frequencies", "--strata", "HOUSING_TYPE"], "HOUSING_TYPE"),
])
def test_bad_input_is_one_line_and_writes_nothing(folder, flags, message, capsys) -> None:
    flags = [folder / f if isinstance(f, str) and f.endswith(".csv") else f for f in flags]
    assert_refused(folder, ["design", folder / "acs.csv", *flags, "--out", folder / "m.json", "--quiet"],
                   message, capsys)


# -- (e) the audit: a true manifest passes, a forged one fails on the field forged ---------------------

def _audit(path: Path) -> tuple[int, str]:
    code, out, _ = _run(["audit", "--manifest", path])
    return code, out


@pytest.fixture
def audited(testdata, tmp_path, key) -> dict[str, Any]:
    (tmp_path / "rules.csv").write_text(SPOUSE_RULES)
    m = pramkit.design_planned(testdata, pramkit.plan_release(
        ["relat", "hhcivil"], method="invariant", split="joint", forbid=tmp_path / "rules.csv", strata="sex",
        options=SDCMICRO, design_epsilon=0.5), key=key).manifest
    return json.loads(m.to_json())


def test_the_audit_passes_a_true_manifest(audited, tmp_path) -> None:
    (tmp_path / "m.json").write_text(json.dumps(audited))
    code, out = _audit(tmp_path / "m.json")
    assert code == 0, out
    assert out.count(": invariance: ") == 1 and "in each of 2 blocks" in out


def _forge_matrix(raw: dict[str, Any]) -> None:
    """Move mass from the diagonal to another entry of one row of the first block (it still sums to 1)."""
    row = raw["variables"][0]["blocks"][0]["matrix"][0]
    row[0], row[1] = row[0] - 0.01, row[1] + 0.01


def _forge_counts(raw: dict[str, Any]) -> None:
    noisy = raw["ledger"]["dp_counts"]["relat*hhcivil"]["noisy"]
    noisy[0] += 200


def _forge_p(raw: dict[str, Any]) -> None:
    p = raw["variables"][0]["blocks"][0]["design"]["parameters"]["p"]
    p[0], p[1] = p[1], p[0]


@pytest.mark.parametrize(("forge", "fields"), [
    (_forge_matrix, {"invariance"}),
    (_forge_counts, {"invariance", "proportions from the noisy counts"}),
    (_forge_p, {"proportions from the noisy counts"}),
])
def test_the_audit_fails_a_forged_manifest_naming_the_field(audited, tmp_path, forge, fields) -> None:
    forge(audited)
    (tmp_path / "m.json").write_text(json.dumps(audited))
    code, out = _audit(tmp_path / "m.json")
    failed = {line.split(": ")[1] for line in out.splitlines() if line.startswith("FAIL")}
    assert code == 1, out
    assert fields <= failed, out


def test_the_library_audit_names_the_field(audited, tmp_path) -> None:
    from pramkit.audit.manifest import manifest_audit

    (tmp_path / "true.json").write_text(json.dumps(audited))
    assert all(c.passed for c in manifest_audit(tmp_path / "true.json"))
    _forge_matrix(audited)
    (tmp_path / "forged.json").write_text(json.dumps(audited))
    failed = [c for c in manifest_audit(tmp_path / "forged.json") if not c.passed]
    assert ("relat*hhcivil", "invariance") in {(c.subject, c.field) for c in failed}
    assert next(c for c in failed if c.field == "invariance").data["largest_difference"] > 1e-6


def test_a_design_on_exact_frequencies_is_said_not_recomputable(testdata, tmp_path) -> None:
    m = pramkit.design_release(testdata, ["roof", "walls"], method="invariant", split="joint", options=SDCMICRO,
                               exact_frequencies=True)
    m.write(tmp_path / "m.json")
    code, out = _audit(tmp_path / "m.json")
    assert code == 0, out
    assert "cannot be recomputed from public files" in out
    raw = json.loads(m.to_json())
    assert "p" not in raw["variables"][0]["design"]["parameters"]           # exact p is never published


def test_the_design_record_says_how_far_the_expected_table_is(testdata) -> None:
    release = pramkit.design_planned(testdata, pramkit.plan_release(
        ["roof", "walls"], method="invariant", split="joint", options=SDCMICRO, design_epsilon=0.5),
        rng=random.Random(4))
    figures = release.record.extra["invariance"]["roof*walls"]
    entry = json.loads(release.manifest.to_json())["variables"][0]
    counts = cell_counts(testdata, entry)
    assert np.isclose(figures["largest_expected_change_records"], np.abs(counts @ dense(entry) - counts).max())
    assert "joint" not in release.record.extra                     # the DP comparison is a dp figure
