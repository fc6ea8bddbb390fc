"""Record swapping of ``--households`` households (default 10^6) against floors measured in the same run.

The file: the census-like persons of :func:`pramkit.swap.census.census_households`
(about 2.4 persons per household; 300 areas in nine regions; household size as
similarity profile; age, sex, race and marital status as risk variables, k = 3), written once as Parquet
in ``--dir``.  Timed, best of ``--repeat``:

* ``floor``: pyarrow alone reads the Parquet file twice (the swap's two passes: the
  columns it needs, then every column) and writes it once, in chunks of ``--chunk-rows``;
* ``swap_file``: :func:`pramkit.swap.swap_file` on the same file, targeted and
  random (atomic write, SHA-256, receipt included);
* ``draw``: :func:`pramkit.swap.core.draw_swaps` alone, on the household arrays.

Prints each time and the ratio swap / floor.  sdcMicro's ``recordSwap`` (C++) is run on the
same data when R and sdcMicro are installed (``Rscript``); otherwise the line says so and
pramkit's own figure stands alone.

Usage: python benchmarks/bench_swap.py [--households 1000000] [--repeat 3] [--chunk-rows 1048576]
       [--dir /tmp/pramkit-swap]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
from timing import best_of

from pramkit.io import iter_batches
from pramkit.kernel.rng import SecretKey
from pramkit.swap import plan_swap, swap_file
from pramkit.swap.census import census_households
from pramkit.swap.core import draw_swaps
from pramkit.swap.households import read_households

PERSONS_PER_HOUSEHOLD = 2.44


def make_file(path: Path, households: int) -> None:
    if path.exists():
        return
    data = census_households(int(households * PERSONS_PER_HOUSEHOLD))
    data.to_parquet(path, index=False)


def floor(src: Path, out: Path, columns: list[str], chunk_rows: int) -> None:
    rows = sum(batch.num_rows for batch in pq.ParquetFile(src).iter_batches(batch_size=chunk_rows, columns=columns))
    assert rows > 0
    pf = pq.ParquetFile(src)
    with pq.ParquetWriter(out, pf.schema_arrow) as writer:
        for batch in pf.iter_batches(batch_size=chunk_rows):
            writer.write_batch(batch)


def sdcmicro_seconds(src: Path) -> float | None:
    """recordSwap on the same data (CSV) when R and sdcMicro are installed, else None."""
    if shutil.which("Rscript") is None:
        return None
    ok = subprocess.run(["Rscript", "-e", "quit(status = !requireNamespace('sdcMicro', quietly = TRUE))"],
                        capture_output=True, check=False)
    if ok.returncode != 0:
        return None
    csv = src.with_suffix(".csv")
    pq.read_table(src).to_pandas().to_csv(csv, index=False)
    script = (f"library(sdcMicro); d <- data.table::fread('{csv}'); "
              "d[, region := as.integer(factor(region))]; d[, area := as.integer(factor(area))]; "
              "d[, sex := as.integer(factor(sex))]; d[, age := as.integer(factor(age))]; "
              "t <- system.time(recordSwap(d, hid = 'hid', hierarchy = c('region', 'area'), similar = list('hsize'), "
              "swaprate = 0.05, k_anonymity = 3, risk_variables = c('age', 'sex'), seed = 1)); cat(t[['elapsed']])")
    run = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, check=True)
    return float(run.stdout.strip().split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--households", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk-rows", type=int, default=1 << 20)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-swap"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    src = args.dir / f"census_{args.households}.parquet"
    t0 = time.perf_counter()
    make_file(src, args.households)
    rows = pq.ParquetFile(src).metadata.num_rows
    print(f"file: {src} ({rows:,} persons; made or found in {time.perf_counter() - t0:.1f} s)")
    key = SecretKey(bytes(32), "benchmark")
    targeted = plan_swap("hid", ["region", "area"], risk_vars=["age", "sex", "race", "marital_status"],
                         similar=[["hsize"]], rate=0.05, k=3)
    random = plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.05)
    out = args.dir / "out.parquet"

    t_floor = best_of(lambda: floor(src, out, targeted.columns, args.chunk_rows), args.repeat)
    results = {}
    for name, plan in (("targeted", targeted), ("random", random)):
        results[name] = best_of(lambda p=plan: swap_file(src, p, out, key=key, force=True, chunk_rows=args.chunk_rows),
                                args.repeat)
    _, tables = iter_batches(src, columns=targeted.columns, chunk_rows=args.chunk_rows)
    hh = read_households(tables, "hid", targeted.geo, targeted.risk_vars, targeted.similar, targeted.k, "bench")
    t_draw = best_of(lambda: draw_swaps(hh.geo, hh.profiles, hh.risky_level, hh.weight, 0.05, key), args.repeat)
    print(f"households: {hh.count:,}, risky: {int((hh.risky_level < len(targeted.geo)).sum()):,}")
    print(f"floor (pyarrow: two reads, one write): {t_floor:.2f} s")
    for name, t in results.items():
        print(f"swap_file {name:8s}: {t:.2f} s  ratio to floor {t / t_floor:.2f}")
    print(f"draw_swaps alone (targeted): {t_draw:.2f} s")
    sdc = sdcmicro_seconds(src)
    if sdc is None:
        print("sdcMicro recordSwap: not installed here (no CRAN); pramkit's figure stands alone")
    else:
        print(f"sdcMicro recordSwap (in memory, no file I/O): {sdc:.2f} s; "
              f"pramkit swap_file targeted / recordSwap: {results['targeted'] / sdc:.2f}")


if __name__ == "__main__":
    main()
