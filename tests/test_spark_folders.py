"""The Spark engine's output folder, read by estimate and audit; a semicolon-separated Latin-1 input written back
in its own dialect (needs Java and pyspark; skipped without them unless PRAMKIT_REQUIRE_SPARK is set)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit.cli import main

if os.environ.get("PRAMKIT_REQUIRE_SPARK"):
    import pyspark  # noqa: F401  (CI must run these tests, not skip them)
else:
    pytest.importorskip("pyspark")


def run(args: list, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_sparks_output_folder_is_estimated_and_audited(spark, tmp_path, capsys) -> None:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["db030", "db040", "hsize", "rb090"], dtype=str)
    data["db040"] = data["db040"].replace({"Carinthia": "K\u00e4rnten"})
    data.to_csv(tmp_path / "eu.csv", index=False, sep=";", encoding="latin-1")
    dialect = ["--sep", ";", "--encoding", "latin-1"]
    assert main(["keygen", str(tmp_path / "key")]) == 0
    assert run(["design", tmp_path / "eu.csv", "--vars", "db040,rb090", "--method", "rr", "--epsilon", "3", "--out",
                tmp_path / "m.json", "--quiet", *dialect], capsys)[0] == 0
    for engine, out in (("local", "local.csv"), ("spark", "spark.csv")):
        code, _, err = run(["apply", tmp_path / "eu.csv", "--manifest", tmp_path / "m.json", "--out", tmp_path / out,
                            "--key-file", tmp_path / "key", "--engine", engine, "--spark-master", "local[1]",
                            "--quiet", *dialect], capsys)
        assert code == 0, err
    folder = tmp_path / "spark.csv"
    assert folder.is_dir() and (tmp_path / "spark.csv.receipt.json").is_file()
    parts = sorted(p for p in folder.iterdir() if p.name.startswith("part-"))
    assert parts and all("K\u00e4rnten".encode("utf-8") not in p.read_bytes() for p in parts)
    estimates = {}
    for out in ("local.csv", "spark.csv"):
        code, text, err = run(["estimate", tmp_path / out, "--manifest", tmp_path / "m.json", "--vars", "db040",
                               "--json", *dialect], capsys)
        assert code == 0 and "no release receipt" not in err, err
        estimates[out] = json.loads(text)["cells"]
    assert estimates["spark.csv"] == estimates["local.csv"]  # the same release, read from the folder
    code, text, _ = run(["audit", "--manifest", tmp_path / "m.json", "--released", folder, "--original",
                         tmp_path / "eu.csv", "--key-file", tmp_path / "key", *dialect], capsys)
    assert code == 0 and "the key reproduces the release value for value" in text, text
