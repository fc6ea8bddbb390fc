"""Benchmark: a weighted table with 80 replicate weights from a released file of 10 million records.

``python benchmarks/bench_estimate_survey.py [ROWS]`` writes a released file (Parquet, in chunks of
1 M rows: a 9-category and a 6-category perturbed variable, a weight, 80 successive-difference
replicate weights; 2 000 PSUs in 50 strata) and times ``estimate_table`` of the 9 x 6 table with the
replicate variance, end to end (reading, the survey pass, the estimate, the covariance).  The floor,
measured in the same run, is pyarrow reading the same columns of the file (``pyarrow.parquet.read_table``);
the target is 30 s on one machine.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pramkit import Manifest, PramMatrix
from pramkit.estimate import estimate_table
from pramkit.estimate.weighted import Replicates

REPLICATES = 80
CHUNK = 1_000_000


def _rr(labels: list[str], keep: float) -> PramMatrix:
    s = len(labels)
    return PramMatrix(np.full((s, s), (1 - keep) / (s - 1)) + np.eye(s) * (keep - (1 - keep) / (s - 1)), labels)


def write(path: Path, rows: int) -> None:
    rng = np.random.default_rng(1)
    writer = None
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        w = rng.uniform(10, 200, n)
        columns = {
            "age": pa.array(np.array([f"a{i}" for i in range(9)])[rng.integers(0, 9, n)]).dictionary_encode(),
            "status": pa.array(np.array([f"s{i}" for i in range(6)])[rng.integers(0, 6, n)]).dictionary_encode(),
            "stratum": pa.array(rng.integers(0, 50, n)), "psu": pa.array(rng.integers(0, 40, n)),
            "w": pa.array(w),
            **{f"rw{r}": pa.array(w * rng.choice([1 - 2**-1.5, 1 + 2**-1.5], n)) for r in range(1, REPLICATES + 1)},
        }
        table = pa.table(columns)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()


def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "released.parquet"
        t0 = time.perf_counter()
        write(path, rows)
        made = time.perf_counter() - t0
        manifest = Manifest.of({"age": _rr([f"a{i}" for i in range(9)], 0.7),
                                "status": _rr([f"s{i}" for i in range(6)], 0.8)})
        columns = ["age", "status", "stratum", "psu", "w"] + [f"rw{r}" for r in range(1, REPLICATES + 1)]
        t0 = time.perf_counter()
        pq.read_table(path, columns=columns)
        floor = time.perf_counter() - t0
        replicates = Replicates.of("rw", columns, "sdr")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a file written here has no release receipt
            res = estimate_table(path, manifest, ["age", "status"], weights="w", replicates=replicates)
        took = time.perf_counter() - t0
    print(f"file: {rows:,} rows, {REPLICATES} replicate weights (written in {made:.1f} s)")
    print(f"floor, pyarrow reading the {len(columns)} columns: {floor:.2f} s")
    print(f"estimate_table 9 x 6 with {REPLICATES} SDR replicates: {took:.2f} s = {took / floor:.1f}x the floor; "
          f"target 30 s -> {'met' if took < 30 else 'NOT met'}; largest se {np.nanmax(res.table.se):.4g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
