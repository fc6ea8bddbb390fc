"""polars and Arrow against pandas: perturbing, designing, estimating; and a LazyFrame's peak memory.

Part 1, time (one process): ``perturb_frame`` of three census key variables (age, sex,
marital_status) on ``--n`` rows, then ``design_release`` (counting and the DP design) and
``estimate_table`` of the released age, each from a pandas DataFrame (the floor, measured
in the same run), a polars DataFrame, a polars LazyFrame (computed with ``collect``) and
an Arrow table, the columns as text (pandas ``str``, polars ``String``, Arrow ``string``)
and as categories (pandas categorical, polars ``Categorical``, Arrow dictionary).  Each
case and its pandas floor are timed alternately (best of ``--repeat``), and the ratio
case / pandas is printed: below 1 is faster than pandas.  Nothing is converted to pandas
on the polars and Arrow paths (:mod:`pramkit.frames`).

Part 2, memory (a fresh process each, peak resident memory ``VmHWM``): a Parquet file of
``--file-rows`` rows perturbed into a new Parquet file through ``pl.scan_parquet`` ->
``perturb_frame`` -> ``sink_parquet`` (a LazyFrame, batches of ``--batch`` rows), against
polars' own ``scan_parquet`` -> ``sink_parquet`` of the same file (the floor: what polars'
streaming engine holds without pramkit), the same release through ``pl.read_parquet`` ->
``perturb_frame`` -> ``write_parquet`` (eager, the whole table in memory) and a process
that only imported pramkit and polars.  Run it at two ``--file-rows`` to see that the
LazyFrame's excess over the floor does not grow with the file.

Usage: python benchmarks/bench_frames.py [--n 2000000] [--repeat 3] [--file-rows 20000000]
       [--batch 262144] [--dir /tmp/pramkit-frames]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from bench_apply_file import peak_rss_mib

import pramkit
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.classic import randomized_response
from pramkit.manifest import Manifest

KEYS = ["age", "sex", "marital_status"]
KEY = b"k" * 32


def frames(n: int, categorical: bool) -> dict[str, Any]:
    """The same records as pandas, polars, a polars LazyFrame and Arrow, the keys as text or categories."""
    data = census(n)[KEYS]
    if not categorical:
        data = data.astype(str)
    table = pa.Table.from_pandas(data, preserve_index=False)
    polars = pl.from_arrow(table)
    return {"pandas": data, "polars": polars, "polars lazy": polars.lazy(), "arrow": table}


def alternate(case: Callable[[], object], floor: Callable[[], object], repeat: int) -> tuple[float, ...]:
    """Best wall-clock and CPU seconds of ``case`` and of ``floor``, timed one after the other ``repeat`` times
    (both see the same load): ``(case wall, floor wall, case CPU, floor CPU)``."""
    best = [float("inf")] * 4
    for _ in range(repeat):
        for fn, which in ((floor, 1), (case, 0)):
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            best[which] = min(best[which], time.perf_counter() - w0)
            best[2 + which] = min(best[2 + which], time.process_time() - c0)
    return tuple(best)


def row(task: str, columns: str, kind: str, times: tuple[float, ...]) -> None:
    case, floor, case_cpu, floor_cpu = times
    print(f"{task:<9} {columns:<11} {kind:<12} {case:8.3f} {floor:9.3f} {case / floor:6.2f} {case_cpu / floor_cpu:8.2f}")


def computed(data: Any) -> Any:
    return data.collect() if isinstance(data, pl.LazyFrame) else data


def time_part(n: int, repeat: int) -> None:
    manifest = Manifest.of({k: randomized_response(list(CENSUS_VARIABLES[k]), 1.0) for k in KEYS})
    print(f"{n:,} rows, three key variables; ratio = seconds / seconds of the pandas frame (same run, alternately)")
    print(f"{'task':<9} {'columns':<11} {'frame':<12} {'seconds':>8} {'pandas s':>9} {'ratio':>6} {'CPU ratio':>8}")
    for categorical in (False, True):
        kinds = frames(n, categorical)
        columns = "categories" if categorical else "text"
        released = {k: computed(pramkit.perturb_frame(v, manifest, key=KEY).data) for k, v in kinds.items()}
        released["polars lazy"] = released["polars lazy"].lazy()  # a released file scanned lazily, not re-perturbed
        tasks = {
            "perturb": lambda d: computed(pramkit.perturb_frame(d, manifest, key=KEY).data),
            "design": lambda d: pramkit.design_release(d, KEYS, epsilon=3.0, categories=CENSUS_VARIABLES,
                                                       rng=random.Random(0)),
        }
        for task, run in tasks.items():
            for kind in ("polars", "polars lazy", "arrow"):
                row(task, columns, kind, alternate(partial(run, kinds[kind]), partial(run, kinds["pandas"]), repeat))
        for kind in ("polars", "polars lazy", "arrow"):
            row("estimate", columns, kind,
                alternate(partial(pramkit.estimate_table, released[kind], manifest, ["age"]),
                          partial(pramkit.estimate_table, released["pandas"], manifest, ["age"]), repeat))


def child(task: str, src: str, out: str, batch: str) -> None:
    manifest = Manifest.of({k: randomized_response(list(CENSUS_VARIABLES[k]), 1.0) for k in KEYS})
    t0 = time.perf_counter()
    if task == "lazy":
        lazy = pramkit.perturb_frame(pl.scan_parquet(src), manifest, key=KEY, chunk_rows=int(batch)).data
        lazy.sink_parquet(out)
    elif task == "sink":  # the floor: polars' own streaming copy of the file, nothing perturbed
        pl.scan_parquet(src).sink_parquet(out)
    elif task == "eager":
        pramkit.perturb_frame(pl.read_parquet(src), manifest, key=KEY).data.write_parquet(out)
    print(json.dumps({"seconds": time.perf_counter() - t0, "peak_mib": peak_rss_mib()}))


def memory_part(rows: int, batch: int, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / f"census_{rows}.parquet"
    if not src.exists():
        writer = None
        for i, start in enumerate(range(0, rows, 1_000_000)):
            table = pa.Table.from_pandas(census(min(1_000_000, rows - start), seed=1000 + i)[KEYS].astype(str),
                                         preserve_index=False)
            writer = writer or pq.ParquetWriter(src, table.schema)
            writer.write_table(table)
        writer.close()
    whole = pl.read_parquet(src).estimated_size() / 2**20
    print(f"\n{rows:,} rows in {src} ({whole:,.0f} MiB as a polars frame); LazyFrame batches of {batch:,} rows")
    results = {}
    for task in ("import", "sink", "lazy", "eager"):
        proc = subprocess.run([sys.executable, __file__, "--child", task, str(src), str(folder / "out.parquet"),
                               str(batch)], capture_output=True, text=True, check=True)
        results[task] = json.loads(proc.stdout)
    base = results["import"]["peak_mib"]
    print(f"import only: peak {base:,.0f} MiB")
    floor = results["sink"]["peak_mib"]
    for task in ("sink", "lazy", "eager"):
        r = results[task]
        print(f"{task:<6}: {r['seconds']:.1f} s, peak {r['peak_mib']:,.0f} MiB ({r['peak_mib'] - base:,.0f} MiB above "
              f"import, {r['peak_mib'] - floor:+,.0f} MiB against polars' own scan -> sink; the whole frame is "
              f"{whole:,.0f} MiB)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file-rows", type=int, default=20_000_000)
    ap.add_argument("--batch", type=int, default=1 << 18)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-frames"))
    args = ap.parse_args()
    time_part(args.n, args.repeat)
    memory_part(args.file_rows, args.batch, args.dir)


if __name__ == "__main__":
    main()
