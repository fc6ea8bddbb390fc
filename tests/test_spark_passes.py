"""Every pass over records on Spark, run for real on a local Spark, against the local engine.

The data is EU-SILC as sdcMicro ships it (14 827 persons, regions as strata, households as
clusters, a weight per person, and 2 720 missing values in each personal variable): each pass
gives on Spark what the local engine gives for the same file, whatever the DataFrame's
partitioning (1, 3 and 7 partitions after a shuffle).  Counts are compared exactly; sums of
weights, which Spark adds in another order, to 1e-12 relative.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from _requires import require_spark  # noqa: E402

from pramkit import counts
from pramkit.cli import main

require_spark()

from pramkit.engine import spark as ps  # noqa: E402
from pramkit.engine.spark import counts as spark_counts  # noqa: E402

SILC = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "eusilc_laeken.csv"
PARTITIONS = (1, 3, 7)
#: The variables counted: region (strata), household size, sex, economic status and citizenship (missing values).
VARIABLES = ["db040", "hsize", "rb090", "pl030", "pb220a"]


@pytest.fixture(scope="module")
def silc(tmp_path_factory) -> Path:
    if not SILC.is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("silc")
    shutil.copy(SILC, d / "silc.csv")
    return d / "silc.csv"


@pytest.fixture(scope="module")
def key_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("key") / "k.key"
    path.write_text(bytes(range(32)).hex() + "\n")
    path.chmod(0o600)
    return path


def _frames(spark, path: Path):
    """The file read by Spark, in each partitioning (after a shuffle)."""
    df = ps.read(spark, path)
    return {n: df.repartition(n) for n in PARTITIONS}


@pytest.fixture(scope="module")
def silc_frames(spark, silc) -> dict:
    """:func:`_frames` of EU-SILC, read once for the module (a read is a Spark job); each test runs its own
    passes on them."""
    return _frames(spark, silc)


def _same_tables(a: counts.CountTables, b: counts.CountTables) -> None:
    assert a.columns == b.columns and a.categories == b.categories
    assert (a.rows, a.missing, a.complete_rows) == (b.rows, b.missing, b.complete_rows)
    for x, y in zip(a.tables, b.tables, strict=True):
        assert x.columns == y.columns and x.categories == y.categories
        np.testing.assert_array_equal(x.counts, y.counts)
        assert (x.rows, x.missing) == (y.rows, y.missing)
        if x.weight_sums is None:
            assert y.weight_sums is None
        else:
            np.testing.assert_allclose(x.weight_sums, y.weight_sums, rtol=1e-12, atol=0)


# -- the design's counts ------------------------------------------------------------------------------------------

GROUPS = [["db040", "pl030"], ["db040", "pb220a"], ["hsize"], ["rb090", "pl030", "pb220a"]]


@pytest.mark.parametrize("missing", ["exclude", "category"])
def test_the_design_counts_are_the_local_engines_in_every_partitioning(spark, silc, silc_frames, missing):
    local = counts.count_groups(silc, GROUPS, missing=missing)
    for df in silc_frames.values():
        _same_tables(spark_counts.count_groups(df, GROUPS, missing=missing), local)


def test_declared_categories_and_weights_are_counted_as_the_local_engine_counts_them(spark, silc, silc_frames):
    declared = {"rb090": ("female", "male"), "pl030": (*map(str, range(1, 8)), None)}
    local = counts.count_file(silc, ["rb090", "pl030"], categories=declared, weights="rb050")
    tables = spark_counts.count_groups(silc_frames[3], [["rb090", "pl030"]],
                                       categories=declared, weights="rb050")
    (table,) = tables.tables
    assert table.categories == local.categories and (table.rows, table.missing) == (local.rows, local.missing)
    np.testing.assert_array_equal(table.counts, local.counts)
    np.testing.assert_allclose(table.weight_sums, local.weight_sums, rtol=1e-12, atol=0)
    # checked against pandas, a count not made by either engine
    frame = __import__("pandas").read_csv(silc, dtype=str, keep_default_na=False)
    assert table.counts[declared["rb090"].index("male"), declared["pl030"].index("3")] == int(
        ((frame["rb090"] == "male") & (frame["pl030"] == "3")).sum())


def _manifest(path: Path) -> dict:
    """A manifest without what differs between two runs of one design (the time it was made, the seconds it took)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("created", "seconds")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(path.read_text()))


def test_pramkit_design_on_spark_writes_the_local_manifest(spark, silc, key_file, tmp_path, capsys):
    common = [str(silc), "--vars", "pl030,pb220a,hsize", "--strata", "db040", "--epsilon", "3",
              "--key-file", str(key_file), "--quiet"]
    assert main(["design", *common, "--out", str(tmp_path / "local.json")]) == 0
    assert main(["design", *common, "--out", str(tmp_path / "spark.json"), "--engine", "spark"]) == 0
    local, on_spark = _manifest(tmp_path / "local.json"), _manifest(tmp_path / "spark.json")
    assert on_spark == local
    assert _manifest(tmp_path / "spark.design-record.json") == _manifest(tmp_path / "local.design-record.json")


# -- bad input and Spark's failures: one line, exit 2, nothing written ---------------------------------------------

BAD = [
    ("design", ["--vars", "nosuch", "--epsilon", "1", "--out", "{out}", "--quiet"], "nosuch"),
    ("design", ["--vars", "pl030", "--out", "{out}", "--recognition", "0.5", "--quiet"],
     "--engine local"),
    ("risk", ["--keys", "db040,nosuch", "--sampling-fraction", "0.1"], "nosuch"),
    ("risk", ["--keys", "db040", "--weights", "pl030"], "weight"),
    ("risk", ["--keys", "db040", "--sampling-fraction", "0.1", "--suda"], "--engine local"),
    ("estimate", ["--manifest", "{manifest}", "--vars", "nosuch"], "nosuch"),
    ("estimate", ["--manifest", "{manifest}", "--vars", "pl030", "--weights", "rb090"], "rb090"),
    ("estimate", ["--manifest", "{manifest}", "--regress", "pl030 ~ rb090"], "--engine local"),
    ("swap", ["--hid", "db030", "--geo", "nosuch", "--rate", "0.1", "--out", "{out}.csv"], "nosuch"),
    ("swap", ["--hid", "db030", "--geo", "db040", "--rate", "0.1", "--out", "{out}.csv", "--partners",
              "{out}.p.csv"], "--engine local"),
]


@pytest.mark.parametrize(("command", "args", "says"), BAD, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(BAD)])
def test_bad_input_with_the_spark_engine_is_one_line(spark, silc, released, tmp_path, capsys, command, args,
                                                     says):
    out = tmp_path / "out.json"
    data = released["data"] if command == "estimate" else silc
    code = main([command, str(data), *[a.format(out=out, manifest=released["manifest"]) for a in args],
                 "--engine", "spark"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err
    assert list(tmp_path.iterdir()) == []


FAILING = {
    "design": ["--vars", "x", "--epsilon", "1", "--out", "{out}", "--quiet"],
    "risk": ["--keys", "x", "--sampling-fraction", "0.1"],
    "estimate": ["--manifest", "{manifest}", "--vars", "pl030"],
    "swap": ["--hid", "h", "--geo", "g", "--out", "{out}.csv"],
}


@pytest.mark.parametrize("command", list(FAILING))
def test_a_spark_failure_is_one_line(spark, released, tmp_path, capsys, command):
    """A file Spark cannot read fails its job: one line, through the library and each command."""
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 this is not a Parquet file PAR1")
    if command == "design":
        with pytest.raises(ps.SparkEngineError) as caught:
            spark_counts.count_groups(bad, [["x"]])
        assert "\n" not in str(caught.value)
    out = tmp_path / "m.json"
    args = [a.format(out=out, manifest=released["manifest"]) for a in FAILING[command]]
    code = main([command, str(bad), *args, "--engine", "spark"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.parquet"]


def test_another_format_is_refused_in_one_line(spark, tmp_path, capsys):
    data = tmp_path / "data.dta"
    __import__("pandas").DataFrame({"x": ["a", "b"] * 5}).to_stata(data, write_index=False)
    code = main(["design", str(data), "--vars", "x", "--epsilon", "1", "--out", str(tmp_path / "m.json"),
                 "--engine", "spark", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "CSV and Parquet" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.dta"]


# -- risk ---------------------------------------------------------------------------------------------------------

RISK_KEYS = ["db040", "hsize", "rb090", "pl030"]
#: How the log-linear fit went (its iterations, extrapolations, how near its margins it stopped), not what it found.
FIT = ("fit",)


def _close(a, b, path: str = "", rel: float = 1e-12, skip: tuple[str, ...] = ()) -> None:
    """Two results' ``to_dict()`` equal but for the seconds they took (and ``skip``): exactly, or floats to
    ``rel`` relative (weights summed in another order)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            if k not in ("seconds", *skip):
                _close(a[k], b[k], f"{path}.{k}", rel, skip)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]", rel, skip)
    elif isinstance(a, float) and isinstance(b, float) and rel:
        assert a == pytest.approx(b, rel=rel, abs=1e-300), path
    else:
        assert a == b, path


def test_risk_on_spark_is_the_local_risk_in_every_partitioning(spark, silc, silc_frames):
    from pramkit.risk.identification import identification_risk

    local = identification_risk(silc, RISK_KEYS, sampling_fraction=0.01).to_dict()
    weighted = identification_risk(silc, RISK_KEYS, weights="rb050").to_dict()
    for df in silc_frames.values():
        on_spark = identification_risk(df, RISK_KEYS, sampling_fraction=0.01).to_dict()
        _close(on_spark, local, rel=0)  # counts only: identical
        # the weights' sums differ in the last bit (another order of addition): the per-cell sampling fractions
        # too, and the log-linear fit, iterated until tau1 and tau2 are within tau_rtol (1e-6) of their limits,
        # may stop at another iteration: the figures agree within that tolerance
        _close(identification_risk(df, RISK_KEYS, weights="rb050").to_dict(), weighted, rel=1e-6, skip=FIT)


def test_pramkit_risk_on_spark_prints_the_local_figures(spark, silc, capsys):
    args = ["risk", str(silc), "--keys", ",".join(RISK_KEYS), "--weights", "rb050", "--json"]
    assert main(args) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*args, "--engine", "spark"]) == 0
    _close(json.loads(capsys.readouterr().out), local, rel=1e-6, skip=FIT)


# -- estimate -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def released(silc, tmp_path_factory) -> dict[str, Path]:
    """A release of EU-SILC's economic status and sex, with four jackknife (JK1) replicate weights by household."""
    import pandas as pd

    from pramkit.design.classic import randomized_response
    from pramkit.engine.perturb import apply_file
    from pramkit.manifest import Manifest

    d = tmp_path_factory.mktemp("released")
    frame = pd.read_csv(silc, dtype=str, keep_default_na=False)
    group = frame["db030"].astype(int) % 4
    for g in range(4):
        frame[f"rep{g + 1}"] = np.where(group == g, 0.0, frame["rb050"].astype(float) * 4 / 3)
    frame.to_csv(d / "original.csv", index=False)
    manifest = Manifest.of({"pl030": randomized_response(list(range(1, 8)), 1.5),
                            "rb090": randomized_response(["female", "male"], 1.0)})
    manifest.write(d / "m.json")
    apply_file(d / "original.csv", manifest, d / "released.csv", key=bytes(range(32)))
    return {"data": d / "released.csv", "manifest": d / "m.json"}


@pytest.fixture(scope="module")
def released_frames(spark, released) -> dict:
    """:func:`_frames` of the release, read once for the module."""
    return _frames(spark, released["data"])


DESIGNS = {
    "unweighted": {},
    "weights": {"weights": "rb050"},
    "strata and PSUs": {"survey": ("rb050", "db040", "db030")},
    "strata, records as PSUs": {"survey": ("rb050", "db040", None)},
    "jackknife replicates": {"survey": ("rb050", None, None), "replicates": "rep"},
}


def _design_arguments(spec: dict, header: list[str]) -> dict:
    from pramkit.estimate.survey import SurveyDesign
    from pramkit.estimate.weighted import Replicates

    out = {k: v for k, v in spec.items() if k == "weights"}
    if "survey" in spec:
        w, strata, psu = spec["survey"]
        out["survey"] = SurveyDesign(w, strata=strata, psu=psu)
    if "replicates" in spec:
        out["replicates"] = Replicates.of(spec["replicates"], header, "jk1")
    return out


@pytest.mark.parametrize("design", list(DESIGNS))
def test_estimates_on_spark_are_the_local_estimates_in_every_partitioning(spark, released, released_frames, design,
                                                                         monkeypatch):
    # the sums by household and cell (about 13 600 rows) reach the driver in three pieces (of at most 5 000 rows)
    monkeypatch.setattr(spark_counts, "COLLECT_ROWS", 5_000)
    from pramkit.estimate import estimate_table
    from pramkit.manifest import Manifest

    manifest = Manifest.read(released["manifest"])
    header = released["data"].read_text().splitlines()[0].split(",")
    kwargs = _design_arguments(DESIGNS[design], header)
    local = estimate_table(released["data"], manifest, ["pl030"], by="rb090", **kwargs).to_dict()
    for n in PARTITIONS if design == "strata and PSUs" else (3,):
        on_spark = estimate_table(released_frames[n], manifest, ["pl030"], by="rb090", **kwargs).to_dict()
        # sums of about 15 000 weights added in another order differ by up to n eps relative (3e-12), which
        # the estimator's inverse of the PRAM matrices amplifies: measured up to 3e-12 on the estimates
        _close(on_spark, local, rel=0 if design == "unweighted" else 1e-10)


def test_pramkit_estimate_on_spark_prints_the_local_estimates(spark, released, capsys):
    args = ["estimate", str(released["data"]), "--manifest", str(released["manifest"]), "--vars", "pl030",
            "--by", "rb090", "--weights", "rb050", "--strata", "db040", "--psu", "db030", "--json"]
    assert main(args) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*args, "--engine", "spark"]) == 0
    _close(json.loads(capsys.readouterr().out), local, rel=1e-10)


# -- swap ---------------------------------------------------------------------------------------------------------

def _swap_plan():
    from pramkit.swap.run import plan_swap

    return plan_swap("db030", ["db040"], risk_vars=["rb090", "pl030"], rate=0.1)


@pytest.fixture(scope="module")
def swapped_on_spark(spark, silc, key_file, tmp_path_factory) -> dict:
    """EU-SILC swapped by the library on Spark from three input splits (a small split size: the file is
    2 MB), made once for the module: the swap test compares it with the local engine's, and the test of a
    failed swap copies it as the release from before.  Its output folder (with its receipt), its result and
    the number of splits Spark read."""
    from pramkit.swap.spark import swap_file_spark

    out = tmp_path_factory.mktemp("swapped") / "swapped.csv"
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        spark.conf.set("spark.sql.files.maxPartitionBytes", "800000")
        result = swap_file_spark(silc, _swap_plan(), out, key=key_file)
        splits = ps.read(spark, silc).rdd.getNumPartitions()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    return {"out": out, "result": result, "splits": splits}


def test_swap_on_spark_swaps_the_records_the_local_engine_swaps(spark, silc, key_file, swapped_on_spark, tmp_path,
                                                                capsys):
    """The same records in the same order from several input splits (the library, at a small split size) and
    from one (the command, at Spark's default split size of 128 MB; a library run at that size too was one
    more Spark swap through the same code)."""
    from pramkit.io import read_table
    from pramkit.swap.run import swap_file

    local = swap_file(silc, _swap_plan(), tmp_path / "local.csv", key=key_file)
    expected = read_table(tmp_path / "local.csv", na_values=())
    assert ps.read(spark, silc).rdd.getNumPartitions() == 1  # the default split size: one split
    assert swapped_on_spark["splits"] > 2  # the small split size did split the file
    assert swapped_on_spark["result"].swapped_households == local.swapped_households > 0
    assert read_table(swapped_on_spark["out"], na_values=()).equals(expected)
    code = main(["swap", str(silc), "--hid", "db030", "--geo", "db040", "--risk-vars", "rb090,pl030", "--rate",
                 "0.1", "--key-file", str(key_file), "--out", str(tmp_path / "cli.csv"), "--engine", "spark",
                 "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["swapped_households"] == local.swapped_households
    assert read_table(tmp_path / "cli.csv", na_values=()).equals(expected)


def test_a_spark_swap_that_fails_while_writing_leaves_the_earlier_release(spark, silc, key_file, swapped_on_spark,
                                                                         tmp_path, monkeypatch):
    """A write failing mid-job: the folder and its receipt from before (the test's own copy of the module's
    Spark swap) stay as they were, nothing staged is left beside them, the input is unchanged."""
    import pramkit.swap.spark as spark_swap
    from pramkit.engine.receipt import receipt_path
    from pramkit.errors import WriteError

    plan = _swap_plan()
    out = tmp_path / "swapped.csv"
    shutil.copytree(swapped_on_spark["out"], out)
    shutil.copy2(receipt_path(swapped_on_spark["out"]), receipt_path(out))
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    source = silc.read_bytes()

    def failing(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spark_swap, "_save", failing)
    with pytest.raises(WriteError, match="No space left"):  # one line naming the output
        spark_swap.swap_file_spark(silc, plan, out, key=key_file, force=True)
    after = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before and receipt_path(out).exists()
    assert silc.read_bytes() == source


# -- the release audit (pramkit audit --backend spark) --------------------------------------------------------------

@pytest.fixture(scope="module")
def audited(silc, key_file, tmp_path_factory) -> dict[str, Path]:
    """A release of EU-SILC: economic status through a matrix with zero cells (a value moves at most one
    category; 2 720 missing values), sex, and household size drawn once per household (db030)."""
    from pramkit.design.classic import randomized_response
    from pramkit.engine.perturb import apply_file
    from pramkit.manifest import Manifest, PerturbedVariable
    from pramkit.matrix import PramMatrix

    d = tmp_path_factory.mktemp("audited")
    near = np.zeros((7, 7))
    for k in range(7):
        near[k, k], near[k, (k + 1) % 7], near[k, (k - 1) % 7] = 0.8, 0.1, 0.1
    manifest = Manifest((PerturbedVariable("pl030", PramMatrix(near, list(range(1, 8)))),
                         PerturbedVariable("rb090", randomized_response(["female", "male"], 1.0)),
                         PerturbedVariable("hsize", randomized_response(list(range(1, 10)), 2.0), unit="db030")))
    manifest.write(d / "m.json")
    apply_file(silc, manifest, d / "released.csv", key=key_file)
    return {"original": silc, "manifest": d / "m.json", "released": d / "released.csv", "dir": d}


def _audit(audited: dict[str, Path], released: Path, backend: str, **kwargs) -> dict:
    """The audit of ``released`` by ``backend``, as a dictionary without its seconds."""
    from pramkit.audit import audit

    result = audit(audited["manifest"], released=released, original=audited["original"], backend=backend,
                   **kwargs).to_dict()
    result.pop("seconds")
    return result


def _audits(audited: dict[str, Path], released: Path, **kwargs) -> tuple[dict, dict]:
    """The audit of ``released`` by the local engine and by Spark, as dictionaries without their seconds."""
    return _audit(audited, released, "local", **kwargs), _audit(audited, released, "spark", **kwargs)


def _tampered(audited: dict[str, Path], name: str, change) -> Path:
    import pandas as pd

    frame = pd.read_csv(audited["released"], dtype=str, keep_default_na=False)
    change(frame)
    out = audited["dir"] / name
    frame.to_csv(out, index=False)
    return out


def test_the_audit_on_spark_passes_a_release_as_the_local_engine_does(spark, audited, key_file):
    """Every check, figure and message equal, the key's derivation compared byte for byte, whether Spark
    reads each file in one piece or in several."""
    local = _audit(audited, audited["released"], "local", key=key_file)  # the local engine reads no split size
    assert local["passed"]
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        for split in ("128MB", "800000"):
            spark.conf.set("spark.sql.files.maxPartitionBytes", split)
            assert _audit(audited, audited["released"], "spark", key=key_file) == local
        assert ps.read(spark, audited["released"]).rdd.getNumPartitions() > 2  # the small split: three pieces
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    key = next(c for c in local["checks"] if c["field"] == "derived again with the key")
    assert key["passed"] and "byte for byte" in key["detail"]


def test_the_audit_on_spark_fails_a_tampered_release_as_the_local_engine_does(spark, audited, key_file):
    """Values moved into zero cells, a missing value filled, a household member changed, an unperturbed value
    changed and a third of the women made men: the same findings, rows and messages; and a wrong key."""
    import pandas as pd

    def tamper(frame: pd.DataFrame) -> None:
        present = np.flatnonzero(frame["pl030"] != "")
        for row in present[[3, 40, 41]]:               # three steps away: a zero cell of M
            frame.loc[row, "pl030"] = str((int(frame.loc[row, "pl030"]) + 2) % 7 + 1)
        frame.loc[np.flatnonzero(frame["pl030"] == "")[5], "pl030"] = "1"
        member = int(np.flatnonzero(frame["db030"].duplicated())[7])
        frame.loc[member, "hsize"] = "9" if frame.loc[member, "hsize"] != "9" else "1"
        frame.loc[11, "age"] = "200"
        women = np.flatnonzero(frame["rb090"] == "female")
        frame.loc[women[: len(women) // 3], "rb090"] = "male"

    local, on_spark = _audits(audited, _tampered(audited, "tampered.csv", tamper), key=key_file)
    assert on_spark == local
    failed = {(c["subject"], c["field"]) for c in local["checks"] if not c["passed"]}
    # the manifest's fields that the release audit evidences (a variable's matrix and columns, checked by the
    # release made again) fail with it: the audit cannot tell the file from the manifest that was altered
    assert {f for f in failed if f[0] != "manifest"} == {
        ("file", "row count and order"), ("pl030", "missing kept missing"), ("pl030", "impossible transitions"),
        ("hsize", "household members agree"), ("rb090", "transition table"), ("file", "derived again with the key"),
        ("receipt", "present")}   # the tampered file has no receipt: the manifest audit says so
    assert all(field.startswith("variables[") for subject, field in failed if subject == "manifest")
    rows = next(c for c in local["checks"] if c["field"] == "impossible transitions")["data"]["rows"]
    assert len(rows) == 3 and rows == sorted(rows)
    wrong = audited["dir"] / "wrong.key"
    wrong.write_text(bytes(range(100, 132)).hex() + "\n")
    wrong.chmod(0o600)
    local, on_spark = _audits(audited, audited["released"], key=wrong)
    assert on_spark == local
    # the key's check, and the manifest's fields that the release made again evidences, on the same evidence
    details = [c["detail"] for c in local["checks"] if not c["passed"]]
    assert details[0] == "the key does not reproduce the release (another key, manifest or original)"
    assert all(d.endswith(details[0]) for d in details)


def test_a_value_outside_the_categories_is_the_same_finding_on_spark(spark, audited):
    """Rows counted from 1: the rows at 0-based index 500 and 9000 hold "x", row 12 "unknown"."""
    def unknown(frame) -> None:
        frame.loc[[500, 9000], "pl030"] = "x"
        frame.loc[12, "rb090"] = "unknown"

    local, on_spark = _audits(audited, _tampered(audited, "unknown.csv", unknown))
    assert on_spark == local
    assert [c["detail"] for c in local["checks"] if c["field"] == "categories"] == [
        "column 'pl030', row 501: value 'x' is not one of its categories (1, 2, 3, 4, 5, 6, 7)",
        "column 'rb090', row 13: value 'unknown' is not one of its categories ('female', 'male')"]


def test_a_release_written_by_spark_is_audited_on_spark(spark, audited, key_file, tmp_path, capsys):
    """A folder of part files with its receipt, audited by ``pramkit audit`` with each backend: the local
    engine's checks, its derivation by Spark compared byte for byte (the local engine compares a folder value
    for value)."""
    out = tmp_path / "released.csv"
    ps.apply_file_spark(audited["original"], audited["manifest"], out, key=key_file, master="local[2]")
    args = ["audit", "--manifest", str(audited["manifest"]), "--released", str(out), "--original",
            str(audited["original"]), "--key-file", str(key_file), "--json"]
    printed = []
    for backend in (["--backend", "local"], ["--backend", "spark", "--spark-master", "local[2]"]):
        assert main([*args, *backend]) == 0
        result = json.loads(capsys.readouterr().out)
        result.pop("seconds")
        printed.append(result)
    local, on_spark = printed
    verdict = f"audit: all {len(local['checks'])} checks passed (manifest, release)"
    assert on_spark["verdict"] == local["verdict"] == verdict
    key = [c for c in on_spark["checks"] if c["field"] == "derived again with the key"]
    assert key[0]["detail"] == "the key reproduces the release byte for byte"
    strip = [c for c in on_spark["checks"] if c["field"] != "derived again with the key"]
    assert strip == [c for c in local["checks"] if c["field"] != "derived again with the key"]


AUDIT_BAD = [
    (["--backend", "dask"], "backend must be one of 'local', 'spark', got 'dask'"),
    (["--backend", "spark", "--original", None], "give the original and the released file"),
    (["--backend", "spark", "--released", "{stata}"], "CSV and Parquet"),
    (["--backend", "spark", "--released", "{shuffled}"], "use the local backend"),
]


@pytest.mark.parametrize(("args", "says"), AUDIT_BAD, ids=["unknown", "no original", "stata", "shuffled"])
def test_bad_input_for_the_audit_backend_is_one_line(spark, audited, key_file, tmp_path, capsys, args, says):
    import pandas as pd

    from pramkit.design.classic import randomized_response
    from pramkit.engine.perturb import apply_file
    from pramkit.manifest import Manifest

    if "{stata}" in args:
        pd.read_csv(audited["original"], dtype=str, keep_default_na=False).iloc[:50, :8].to_stata(
            tmp_path / "r.dta", write_index=False)
    manifest = audited["manifest"]
    if "{shuffled}" in args:  # a shuffled release of sex alone (households cannot be shuffled)
        manifest = Manifest.of({"rb090": randomized_response(["female", "male"], 1.0)}).write(tmp_path / "s.json")
        apply_file(audited["original"], manifest, tmp_path / "s.csv", key=key_file, shuffle=True,
                   public_columns=["db040"])
    given = {"--manifest": str(manifest), "--released": str(audited["released"]),
             "--original": str(audited["original"])}
    for flag, value in zip(args[2::2], args[3::2], strict=True):
        given[flag] = value and value.format(stata=tmp_path / "r.dta", shuffled=tmp_path / "s.csv")
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["audit", *[x for f, v in given.items() if v for x in (f, v)], *args[:2]])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(("chunk_rows", "row"), [(None, 5001), (1000, 101)])
def test_the_value_reported_outside_the_categories_is_the_local_engines(spark, audited, tmp_path, monkeypatch,
                                                                        chunk_rows, row):
    """A bad value in both files: the local engine reports the original's, unless the released file's is in
    an earlier chunk of rows; Spark reports the same one."""
    import pandas as pd

    import pramkit.audit.release as private
    from pramkit.audit import audit

    if chunk_rows is not None:
        monkeypatch.setattr(private, "AUDIT_CHUNK_ROWS", chunk_rows)
    frame = pd.read_csv(audited["original"], dtype=str, keep_default_na=False)
    frame.loc[5000, "pl030"] = "x"
    frame.to_csv(tmp_path / "original.csv", index=False)
    released = _tampered(audited, "early.csv", lambda f: f.__setitem__("pl030", f["pl030"].where(f.index != 100, "x")))
    out = []
    for backend in ("local", "spark"):
        result = audit(audited["manifest"], released=released, original=tmp_path / "original.csv", backend=backend)
        out.append([c.detail for c in result.checks if c.field == "categories"])
    assert out[0] == out[1] == [f"column 'pl030', row {row}: value 'x' is not one of its categories "
                                "(1, 2, 3, 4, 5, 6, 7)"]
