"""Out-of-core perturbation and counting of a large census-like file.

Generates (once) a Parquet file of ``--rows`` records with the structure of
the built-in census data, in chunks of 10^6 rows, then, each in a fresh
process so that peak memory is its own:

  * ``apply``: perturbs three key variables chunk by chunk into a new file,
    for several chunk sizes;
  * ``count``: streams the table of age x sex x marital_status;

and prints wall time, rows per second and peak resident memory (``VmHWM``, which, unlike
``ru_maxrss``, does not inherit the high-water mark of this parent process).  Baselines
measured in the same run: the resident memory of a process that has only
imported pramkit, the in-memory size of the whole file as an Arrow table,
and the throughput of the in-memory engine on one 10^6-row chunk.

Usage: python benchmarks/bench_out_of_core.py [--rows 50000000] [--dir /tmp/pramkit-ooc]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from bench_apply_file import peak_rss_mib

from pramkit.codebook import categories_of
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_frame
from pramkit.manifest import Manifest

CHUNK = 1_000_000
KEYS = ("age", "sex", "marital_status")


def generate(path: Path, rows: int) -> None:
    writer = None
    for i, start in enumerate(range(0, rows, CHUNK)):
        table = pa.Table.from_pandas(census(min(CHUNK, rows - start), seed=1000 + i), preserve_index=False)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def child(task: str, src: str, manifest: str, out: str, chunk: str) -> None:
    from pramkit.counts import count_file
    from pramkit.engine.perturb import apply_file

    t0 = time.perf_counter()
    if task == "apply":
        rows = apply_file(src, manifest, out, key=b"b" * 32, force=True, chunk_rows=int(chunk)).rows
    elif task == "count":
        rows = count_file(src, list(KEYS), chunk_rows=int(chunk)).rows
    else:  # "import": the baseline footprint of the interpreter and the libraries
        rows = 0
    seconds = time.perf_counter() - t0
    print(json.dumps({"rows": rows, "seconds": seconds, "peak_mib": peak_rss_mib()}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:7])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-ooc"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    src = args.dir / f"census_{args.rows}.parquet"
    if not src.exists():
        t0 = time.perf_counter()
        generate(src, args.rows)
        print(f"generated {src} ({args.rows:,} rows) in {time.perf_counter() - t0:.0f} s")
    sample = census(CHUNK, seed=1000)
    manifest = Manifest.of({k: randomized_response(categories_of(sample[k]), 1.0) for k in KEYS})
    manifest.write(args.dir / "manifest.json", force=True)
    t0 = time.perf_counter()
    perturb_frame(sample, manifest, key=b"b" * 32)
    in_memory_rate = CHUNK / (time.perf_counter() - t0)
    whole_mib = pq.ParquetFile(src).metadata.num_rows / CHUNK * pa.Table.from_pandas(sample).nbytes / 2**20
    print(f"file: {src.stat().st_size / 2**20:,.0f} MiB on disk, {whole_mib:,.0f} MiB as an in-memory table; "
          f"in-memory engine on one {CHUNK:,}-row chunk: {in_memory_rate / 1e6:.1f} M rows/s")
    runs = [("import", CHUNK)] + [("apply", c) for c in (1 << 17, 1 << 20, 1 << 22)] + [("count", CHUNK)]
    for task, chunk in runs:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", task, str(src), str(args.dir / "manifest.json"),
             str(args.dir / "released.parquet"), str(chunk)],
            capture_output=True, text=True, check=True,
        )
        r = json.loads(proc.stdout)
        if task == "import":
            base = r["peak_mib"]
            print(f"import only: peak memory {base:,.0f} MiB")
            continue
        rate = r["rows"] / r["seconds"]
        print(f"{task:<6} chunk {chunk:>9,}: {r['rows']:,} rows in {r['seconds']:.1f} s = {rate / 1e6:.2f} M rows/s "
              f"({rate / in_memory_rate:.2f} x the in-memory rate); peak memory {r['peak_mib']:,.0f} MiB "
              f"({r['peak_mib'] - base:,.0f} MiB above import; the whole table is {whole_mib:,.0f} MiB)")


if __name__ == "__main__":
    main()
