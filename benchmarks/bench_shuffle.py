"""``apply --shuffle`` out of core: time and memory beside the unshuffled apply of the same file.

Generates (once) a Parquet file of ``--rows`` census-like records (``bench_out_of_core.generate``),
then, each in a fresh process so that peak memory is its own, applies a manifest of three
randomized-response variables without shuffling (the floor, measured in the same run) and with
``shuffle=True`` at several chunk sizes, and prints the time ratio against the floor and the peak
resident memory beside the size of the whole table in memory (the shuffle spills buckets of about
one chunk each to disk, so its memory follows the chunk, not the file) and beside the floor's peak.

Usage: python benchmarks/bench_shuffle.py [--rows 5000000] [--dir /tmp/pramkit-shuffle]
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
from bench_out_of_core import CHUNK, KEYS, generate

from pramkit.codebook import categories_of
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.manifest import Manifest


def child(src: str, manifest: str, out: str, chunk: str, shuffle: str) -> None:
    from pramkit.engine.perturb import apply_file

    t0 = time.perf_counter()
    rows = apply_file(src, manifest, out, key=b"s" * 32, force=True, chunk_rows=int(chunk),
                      shuffle=shuffle == "1", receipt=False).rows
    print(json.dumps({"rows": rows, "seconds": time.perf_counter() - t0, "peak_mib": peak_rss_mib()}))


def run(src: Path, manifest: Path, out: Path, chunk: int, shuffle: bool) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", str(src), str(manifest), str(out), str(chunk),
                           "1" if shuffle else "0"], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:7])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-shuffle"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    src = args.dir / f"census_{args.rows}.parquet"
    if not src.exists():
        generate(src, args.rows)
    sample = census(min(CHUNK, args.rows), seed=1000)
    manifest = args.dir / "manifest.json"
    Manifest.of({k: randomized_response(categories_of(sample[k]), 1.0) for k in KEYS}).write(manifest, force=True)
    whole_mib = args.rows / len(sample) * pa.Table.from_pandas(sample).nbytes / 2**20
    print(f"file: {args.rows:,} rows, {src.stat().st_size / 2**20:,.0f} MiB on disk, "
          f"{whole_mib:,.0f} MiB as an in-memory table")
    out = args.dir / "released.parquet"
    floor = run(src, manifest, out, 1 << 20, shuffle=False)
    print(f"floor: apply without shuffling, chunk {1 << 20:,}: {floor['seconds']:.1f} s, "
          f"peak memory {floor['peak_mib']:,.0f} MiB")
    for chunk in (1 << 18, 1 << 20):
        r = run(src, manifest, out, chunk, shuffle=True)
        print(f"shuffle chunk {chunk:>9,}: {r['seconds']:.1f} s = {r['seconds'] / floor['seconds']:.2f} x the floor; "
              f"peak memory {r['peak_mib']:,.0f} MiB ({r['peak_mib'] - floor['peak_mib']:+,.0f} MiB beside the floor; "
              f"the whole table is {whole_mib:,.0f} MiB)")
    assert pq.ParquetFile(out).metadata.num_rows == args.rows


if __name__ == "__main__":
    main()
