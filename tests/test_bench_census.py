"""benchmarks/bench_census.py: the census is generated chunk by chunk and every stage runs and prints its row.

The benchmark's own path at a tiny size (3 000 persons in chunks of 1 000): no timing is asserted,
only that the file is what the chunks make, that every stage ran through its ``pramkit`` command
and printed its row, and that each stage wrote what an officer expects of it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pramkit.swap.census import census_households

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_census.py"
PERSONS, CHUNK = 3_000, 1_000


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_census", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _bench()


def test_the_file_is_the_chunks_written_one_after_the_other(tmp_path: Path) -> None:
    path = tmp_path / "census.parquet"
    bench.generate(path, 2_500, chunk=1_000)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 2_500 and meta.num_row_groups == 3  # one row group per chunk
    data = pq.read_table(path).to_pandas()
    offset = 0
    for i, (lo, hi) in enumerate([(0, 1_000), (1_000, 2_000), (2_000, 2_500)]):
        chunk = census_households(hi - lo, seed=1000 + i)
        part = data.iloc[lo:hi].reset_index(drop=True)
        for column in chunk.columns:
            expected = chunk[column] + offset if column == "hid" else chunk[column]
            assert part[column].astype(str).tolist() == expected.astype(str).tolist(), column
        offset = int(part["hid"].max())
    # household ids unique in the file: a household is one run of rows, in one area, of its size
    runs = (data["hid"] != data["hid"].shift()).cumsum()
    assert runs.groupby(data["hid"]).nunique().max() == 1
    groups = data.groupby("hid")
    assert (groups["area"].nunique() == 1).all() and (groups["weight"].nunique() == 1).all()
    assert (groups.size() == groups["hsize"].first()).all()
    assert data["weight"].between(1.0, 1.4).all()


def test_weights_are_a_function_of_the_household_between_one_and_1_4() -> None:
    hid = np.arange(1, 5_000)
    w = bench.weights_of(hid)
    expected = [1.0 + 0.4 * ((h * 2654435761) % 1024) / 1023 for h in hid.tolist()]  # Python integers
    assert w.tolist() == pytest.approx(expected, rel=1e-15)
    assert w.min() == 1.0 and w.max() == 1.4


def test_the_codebook_declares_every_category_the_file_holds(tmp_path: Path) -> None:
    bench.generate(tmp_path / "census.parquet", 2_000, chunk=1_000)
    bench.write_inputs(tmp_path)
    book = pd.read_csv(tmp_path / "codebook.csv", dtype=str, keep_default_na=False)
    data = pq.read_table(tmp_path / "census.parquet").to_pandas()
    for variable, cats in book.groupby("variable")["category"]:
        assert set(data[variable]) <= set(cats), variable
    key = tmp_path / "secret.key"
    assert len(key.read_bytes()) == 32 and key.stat().st_mode & 0o077 == 0  # private, as pramkit asks


@pytest.mark.slow
def test_every_stage_runs_and_prints_its_row(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--persons", str(PERSONS), "--chunk", str(CHUNK), "--dir", str(tmp_path),
         "--memory-limit", "3", "--synthesize-rounds", "12"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert re.search(r"^floor \(one streamed read of the file\): [\d.]+ s", out, re.M)
    for stage in bench.STAGES:
        row = re.search(rf"^\| {stage} \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d,]+) \| ([\d.]+) \|$", out, re.M)
        assert row, f"no row for {stage}:\n{out}"
    assert "stages failed: 0" in out
    folder = tmp_path / f"persons_{PERSONS}"
    assert pq.ParquetFile(folder / "census.parquet").metadata.num_rows == PERSONS
    assert pq.ParquetFile(folder / "released.parquet").metadata.num_rows == PERSONS
    synthesized = pq.read_table(folder / "synthesized.parquet")
    assert synthesized.num_rows == PERSONS and synthesized.column_names == pq.read_schema(folder / "census.parquet").names
    young = pc.is_in(synthesized.column("age"), pa.array(["0-9"]))  # the edit rule holds in every record
    assert set(synthesized.filter(young).column("marital_status").to_pylist()) <= {"never married"}
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["ledger"]["record_epsilon"] <= 6
    assert {"suda", "estimate", "audit", "risk", "household"} <= {p.name.split(".")[0] for p in folder.glob("*.log")}
    audit = json.loads((folder / "audit.log").read_text(encoding="utf-8"))
    assert audit["passed"] is True and set(audit["audits"]) == {"manifest", "release"}
    for report in ("internal.html", "public.html"):
        assert (folder / report).stat().st_size > 0
