"""The command line: contracts of apply, inspect, keygen and demo; one-line errors with status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix


def dense_rr(categories: list, epsilon: float) -> PramMatrix:
    """Randomized response stored densely, so that the manifest holds rows to corrupt."""
    m = randomized_response(categories, epsilon)
    return PramMatrix(m.matrix, m.categories, m.provenance)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "data.csv"
    pd.DataFrame({"region": [1, 2, 3, 1, 2] * 200, "sex": ["m", "f"] * 500, "w": range(1000)}).to_csv(data, index=False)
    manifest = tmp_path / "m.json"
    Manifest.of({
        "region": dense_rr([1, 2, 3], 1.0),
        "sex": dense_rr(["m", "f"], 0.5),
    }).write(manifest)
    key = tmp_path / "key"
    assert main(["keygen", str(key)]) == 0
    return {"data": data, "manifest": manifest, "key": key, "dir": tmp_path}


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_json_contract(files, capsys) -> None:
    code, out, _ = run(["inspect", files["manifest"], "--json"], capsys)
    assert code == 0
    info = json.loads(out)
    assert set(info) >= {"variables", "record_epsilon"}
    assert info["record_epsilon"] == pytest.approx(1.5)
    v = info["variables"][0]
    assert set(v) >= {"name", "categories", "epsilon", "bistochastic", "min_diagonal"}
    assert v["categories"] == [1, 2, 3] and v["bistochastic"] is True
    code, out, _ = run(["inspect", files["manifest"]], capsys)
    assert "record epsilon: 1.5" in out


def test_apply_with_key_file_is_reproducible(files, capsys) -> None:
    d = files["dir"]
    for name in ("a.csv", "b.csv"):
        code, out, _ = run(["apply", files["data"], "--manifest", files["manifest"], "--out", d / name,
                            "--key-file", files["key"]], capsys)
        assert code == 0
        assert "key file" in out
    assert (d / "a.csv").read_bytes() == (d / "b.csv").read_bytes()
    code, out, _ = run(["apply", files["data"], "--manifest", files["manifest"], "--out", d / "c.csv"], capsys)
    assert "operating system (not saved)" in out
    assert (d / "c.csv").read_bytes() != (d / "a.csv").read_bytes()
    # the key is nowhere next to the release
    key_text = files["key"].read_text().strip()
    assert all(key_text not in p.read_text(errors="ignore") for p in d.iterdir() if p != files["key"])


def test_apply_json_summary(files, capsys) -> None:
    code, out, _ = run(["apply", files["data"], "--manifest", files["manifest"], "--out",
                        files["dir"] / "o.parquet", "--json"], capsys)
    s = json.loads(out)
    assert code == 0 and s["rows"] == 1000
    assert {v["name"] for v in s["variables"]} == {"region", "sex"}


def bad_inputs(files: dict[str, Path]) -> list[tuple[list, str]]:
    d = files["dir"]
    (d / "ragged.csv").write_text("region,sex\n1,m\n2,f,9\n")
    (d / "empty.csv").write_text("")
    (d / "unknown.csv").write_text("region,sex\n1,m\n7,f\n")
    (d / "nocol.csv").write_text("area,sex\n1,m\n")
    (d / "short_key").write_bytes(b"0123")
    bad_rows = json.loads(files["manifest"].read_text())
    bad_rows["variables"][0]["matrix"][0] = [0.5, 0.2, 0.2]
    (d / "rows.json").write_text(json.dumps(bad_rows))
    negative = json.loads(files["manifest"].read_text())
    negative["variables"][1]["matrix"] = [[1.2, -0.2], [0.5, 0.5]]
    (d / "neg.json").write_text(json.dumps(negative))
    (d / "exists.csv").write_text("x")
    apply = ["apply", files["data"], "--manifest", files["manifest"], "--out"]
    return [
        (["apply", d / "ragged.csv", "--manifest", files["manifest"], "--out", d / "o1.csv"], "line 3"),
        (["apply", d / "empty.csv", "--manifest", files["manifest"], "--out", d / "o2.csv"], "empty"),
        (["apply", d / "unknown.csv", "--manifest", files["manifest"], "--out", d / "o3.csv"], "value '7'"),
        (["apply", d / "nocol.csv", "--manifest", files["manifest"], "--out", d / "o4.csv"], "region"),
        (["apply", d / "absent.csv", "--manifest", files["manifest"], "--out", d / "o5.csv"], "does not exist"),
        (apply + [d / "o6.csv", "--key-file", d / "no_key"], "does not exist"),
        (apply + [d / "o7.csv", "--key-file", d / "short_key"], "at least 32"),
        (apply + [d / "exists.csv"], "--force"),
        (["apply", files["data"], "--manifest", d / "rows.json", "--out", d / "o8.csv"], "sums to"),
        (["apply", files["data"], "--manifest", d / "neg.json", "--out", d / "o9.csv"], "negative"),
        (["inspect", d / "ragged.csv"], "not valid JSON"),
        (["keygen", files["key"]], "never overwritten"),
        (["demo", "--rows", "0", "--out", d / "demo"], "at least 1"),
    ]


def test_bad_input_exits_2_with_one_line(files, capsys) -> None:
    for args, message in bad_inputs(files):
        code, out, err = run(args, capsys)
        assert code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in err, (args, err)
    assert not any(p.name.startswith("o") and p.suffix == ".csv" for p in files["dir"].iterdir())


def test_demo_small(tmp_path: Path, capsys) -> None:
    code, out, _ = run(["demo", "--out", tmp_path / "demo", "--rows", "20000", "--quiet"], capsys)
    assert code == 0
    public, private = tmp_path / "demo" / "public", tmp_path / "demo" / "private"
    assert sorted(p.name for p in public.iterdir()) == ["manifest.json", "released.csv", "released.csv.receipt.json",
                                                        "report.html"]
    assert sorted(p.name for p in private.iterdir()) == ["census.csv", "design-record.json", "report.html",
                                                         "summary.json"]
    assert "record epsilon" in out and "estimate" in out and "tau2" in out
    released = pd.read_csv(public / "released.csv", dtype=str, keep_default_na=False)
    original = pd.read_csv(private / "census.csv", dtype=str, keep_default_na=False)
    assert released.shape == original.shape == (20000, 10)
    assert (released["education"] == original["education"]).all()
    assert (released["age"] != original["age"]).any()
    assert len(out.splitlines()) <= 24  # fits one screen


def test_console_script_and_module_run() -> None:
    for cmd in (["pramkit"], [sys.executable, "-m", "pramkit"]):
        proc = subprocess.run(cmd + ["--version"], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith("pramkit "), proc.stderr


def test_apply_reports_the_key_fingerprint_and_receipt(files, capsys) -> None:
    from pramkit.kernel.rng import SecretKey

    fingerprint = SecretKey.from_file(files["key"]).fingerprint
    code, out, _ = run(["apply", files["data"], "--manifest", files["manifest"], "--out", files["dir"] / "r.csv",
                        "--key-file", files["key"], "--json"], capsys)
    summary = json.loads(out)
    assert code == 0 and summary["key_fingerprint"] == fingerprint
    assert summary["receipt"].endswith("r.csv.receipt.json")
    code, out, _ = run(["apply", files["data"], "--manifest", files["manifest"], "--out", files["dir"] / "s.csv",
                        "--key-file", files["key"]], capsys)
    assert f"fingerprint {fingerprint}" in out and "receipt:" in out
    assert files["key"].read_text().strip() not in out


def test_estimate_refuses_a_release_of_another_manifest(files, capsys) -> None:
    d = files["dir"]
    assert run(["apply", files["data"], "--manifest", files["manifest"], "--out", d / "r.csv"], capsys)[0] == 0
    Manifest.of({"sex": randomized_response(["m", "f"], 3.0)}).write(d / "other.json")
    code, out, err = run(["estimate", d / "r.csv", "--manifest", d / "other.json", "--vars", "sex"], capsys)
    assert code == 2 and "another manifest" in err and out == "" and len(err.strip().splitlines()) == 1
    code, out, err = run(["estimate", d / "r.csv", "--manifest", files["manifest"], "--vars", "sex"], capsys)
    assert code == 0 and err == ""
    code, out, err = run(["estimate", files["data"], "--manifest", files["manifest"], "--vars", "sex"], capsys)
    assert code == 0 and err.startswith("pramkit estimate: note: no release receipt")


def test_usage_errors_and_warnings_are_one_line(files, capsys) -> None:
    code, _, err = run(["apply", files["data"], "--chunk-rows", "x"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("pramkit apply: error:")
    assert run(["--version"], capsys)[0] == 0
    files["key"].chmod(0o644)
    code, _, err = run(["apply", files["data"], "--manifest", files["manifest"], "--out", files["dir"] / "w.csv",
                        "--key-file", files["key"]], capsys)
    assert code == 0 and err.strip().splitlines() == [
        f"pramkit apply: note: key file {str(files['key'])!r} can be read by other users (mode 0644); "
        f"make it private with: chmod 600 {files['key']}"]


def test_printed_figures_have_no_float_noise(files, capsys) -> None:
    d = files["dir"]
    Manifest.of({"region": randomized_response([1, 2, 3], 0.1), "sex": randomized_response(["m", "f"], 0.1),
                 "w": randomized_response(list(range(1000)), 0.3)}).write(d / "noisy.json")
    assert Manifest.read(d / "noisy.json").record_epsilon != 0.5  # 0.5000000000000001
    code, out, _ = run(["inspect", d / "noisy.json"], capsys)
    assert code == 0 and "record epsilon: 0.5 (" in out and "0000000" not in out
    code, out, _ = run(["inspect", d / "noisy.json", "--json"], capsys)
    assert json.loads(out)["record_epsilon"] == Manifest.read(d / "noisy.json").record_epsilon  # full precision
    code, out, _ = run(["apply", files["data"], "--manifest", d / "noisy.json", "--out", d / "n.csv"], capsys)
    assert code == 0 and "record epsilon: 0.5 (" in out and "0000000" not in out


def test_na_values_mean_the_same_for_design_apply_estimate_and_risk(tmp_path: Path, capsys) -> None:
    """'NA' is missing by default everywhere; with --na-values '' it is a category everywhere."""
    csv = tmp_path / "na.csv"
    rows = ["sex,region", "NA,1", "f,2", "NA,2"] + ["f,1", "m,2"] * 200
    csv.write_text("\n".join(rows) + "\n")
    for flag, expected in (([], ["f", "m"]), (["--na-values", ""], ["NA", "f", "m"])):
        out = tmp_path / f"m{len(flag)}.json"
        assert main(["design", str(csv), "--vars", "sex", "--epsilon", "2", "--out", str(out), *flag]) == 0
        manifest = json.loads(out.read_text())
        assert manifest["variables"][0]["categories"] == expected
        assert manifest["input"]["na_values"] == ([] if flag else ["NA"])
        released = tmp_path / f"r{len(flag)}.csv"
        assert main(["apply", str(csv), "--manifest", str(out), "--out", str(released), "--quiet", *flag]) == 0
        capsys.readouterr()
        assert main(["estimate", str(released), "--manifest", str(out), "--vars", "sex", "--json", *flag]) == 0
        estimate = json.loads(capsys.readouterr().out)
        # with 'NA' missing its two records are dropped; as a category, every record counts
        assert (estimate["n"], estimate["dropped"]) == ((403, 0) if flag else (401, 2))
        assert estimate["perturbed"] and len(estimate["cells"]) == len(expected)
        assert main(["risk", str(released), "--keys", "sex,region", "--sampling-fraction", "0.1",
                     "--manifest", str(out), "--missing", "exclude", "--json", *flag]) == 0
        risk = json.loads(capsys.readouterr().out)
        assert (risk["n"], risk["excluded"]) == ((403, 0) if flag else (401, 2))
