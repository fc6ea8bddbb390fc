"""The Spark engine against the local engine on the same file and key.

Perturbs three key variables of a census-like Parquet file of ``--rows``
records (default 10^7) with the local streaming engine (one process) and with
Spark in local mode (``local[2]``), then times the Spark job for several
numbers of input partitions.  Prints seconds, rows per second and per core,
and the ratio to the local engine measured in the same run.  The two releases
are compared row for row at the end.

Usage: python benchmarks/bench_spark.py [--rows 10000000] [--dir /tmp/pramkit-spark]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pyarrow.parquet as pq

from pramkit.codebook import categories_of
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engines import spark as ps
from pramkit.manifest import Manifest
from pramkit.perturb import apply_file
from pramkit.rng import SecretKey

from bench_out_of_core import generate  # same generator, same file layout

KEYS = ("age", "sex", "marital_status")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-spark"))
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    src = args.dir / f"census_{args.rows}.parquet"
    if not src.exists():
        generate(src, args.rows)
    key = SecretKey(b"s" * 32, "benchmark")
    sample = census(100_000)
    manifest = Manifest.of({k: randomized_response(categories_of(sample[k]), 1.0) for k in KEYS})

    t0 = time.perf_counter()
    apply_file(src, manifest, args.dir / "local.parquet", key=key, force=True)
    local = time.perf_counter() - t0
    print(f"{args.rows:,} rows; local engine (1 process): {local:.1f} s = {args.rows / local / 1e6:.2f} M rows/s")

    spark = ps.session(args.master)
    spark.sparkContext.setLogLevel("ERROR")
    cores = spark.sparkContext.defaultParallelism
    size = src.stat().st_size
    print(f"Spark {spark.version}, master {args.master} ({cores} cores)")
    print(f"{'partitions':>10} {'seconds':>8} {'M rows/s':>9} {'per core':>9} {'x local':>8}")
    for parts in (2, 4, 8, 16):
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(size // parts + 1))
        df = ps.read(spark, src)
        n_parts = df.rdd.getNumPartitions()
        t0 = time.perf_counter()
        ps.perturb(df, manifest, key=key).write.mode("overwrite").parquet(str(args.dir / "spark.parquet"))
        secs = time.perf_counter() - t0
        rate = args.rows / secs / 1e6
        print(f"{n_parts:>10} {secs:>8.1f} {rate:>9.2f} {rate / cores:>9.2f} {secs / local:>8.2f}")
    released = pq.read_table(args.dir / "spark.parquet")
    local_table = pq.read_table(args.dir / "local.parquet")
    # Spark has no dictionary type: compare values (categoricals read back as strings)
    same = released.num_rows == local_table.num_rows and all(
        released.column(name).to_pylist() == local_table.column(name).cast(released.schema.field(name).type).to_pylist()
        for name in local_table.column_names
    )
    print(f"Spark release identical to the local one, value for value: {same}")


if __name__ == "__main__":
    main()
