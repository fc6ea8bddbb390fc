"""A national census on one machine: the whole release of ``--persons`` records, stage by stage.

Generates (once per size) a census-like Parquet file out of core, one chunk of at most
``--chunk`` persons at a time (never the whole file in memory): each chunk is
:func:`pramkit.swap.census.census_households` (the ten census variables, 300 areas in
nine regions, households of 1 to 7 persons within an area) with its own seed, its household ids
offset so that they are unique in the file, and a survey weight per household (1 to 1.4, a
function of the id). Beside it: a codebook of the categories (so that the manifest does not show
which occur), an edit rule (a child of 0-9 is never married) and a key file.

Then runs the release as an officer would, each stage the ``pramkit`` command of that step in a
fresh process (so that its peak resident memory, ``VmHWM``, is its own):

  design      DP counts and the DP-optimal design of marital status (strata region and age, the
              edit rule) and of the area (a household variable, drawn once per household)
  apply       the released Parquet file
  risk        tau1 and tau2 of the original file on five keys, with its weights
  household   the household risk on the same keys
  suda        SUDA2 special uniques up to size 4 on the same keys
  estimate    the weighted table of the released area, households as PSUs
  audit       the manifest, the release against the original, and the release derived again
  reports     the internal and the public HTML reports (one command writes both)
  synthesize  every census variable, the area and the region drawn from the model pgm at (1, 1e-9)-DP
              (marginals chosen and measured in zCDP, a graphical model fitted, the edit rule a structural
              zero; replace-one neighbours: the household id, its size and the weight are released as they
              are, which the ledger says), read and written batch by batch as codes

Each stage prints its wall time, CPU time and peak memory, and their ratios to the floor
measured in the same run: one streamed read of the whole file with pyarrow (every column,
record batches of 2^20 rows), in a process of its own. A watchdog stops a stage whose resident
memory passes ``--memory-limit`` GB (the stage is reported as stopped; the others still run).

Usage: python benchmarks/bench_census.py [--persons 18000000] [--dir /tmp/pramkit-census]
       [--memory-limit 6] [--stages design,apply,...] [--synthesize-rounds T]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

#: Persons of a national census (the default size).
PERSONS = 18_000_000
#: Persons generated and written at a time (one Parquet row group each).
CHUNK = 1_000_000
#: Key variables of the risk stages and the reports.
KEYS = "area,age,sex,marital_status,race"
#: The edit rule: a child of 0-9 is never married.
RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'
#: Stages in the order an officer runs them.
STAGES = ("design", "apply", "risk", "household", "suda", "estimate", "audit", "reports", "synthesize")
#: The variables the synthesize stage draws (every column but the household id, its size and the weight).
SYNTHESIZED = "region,ownership,mortgage,age,sex,marital_status,race,education,employment,disability,veteran,area"


def weights_of(hid: np.ndarray) -> np.ndarray:
    """A survey weight per household, 1 to 1.4, a function of the household id (multiplicative hash)."""
    return 1.0 + 0.4 * ((hid.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(1024)).astype(float) / 1023


def generate(path: Path, persons: int, chunk: int = CHUNK) -> None:
    """Write the census to ``path`` chunk by chunk (atomically: a partial file is never left behind)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pramkit.swap.census import census_households

    tmp = path.with_suffix(".partial")
    writer = None
    next_hid = 0
    for i, start in enumerate(range(0, persons, chunk)):
        frame = census_households(min(chunk, persons - start), seed=1000 + i)
        frame["hid"] += next_hid
        next_hid = int(frame["hid"].max())
        frame["weight"] = weights_of(frame["hid"].to_numpy())
        # text columns, not categoricals: each chunk holds only the categories it drew
        table = pa.Table.from_pandas(frame.astype({c: str for c in frame.columns if c not in ("hid", "hsize", "weight")}),
                                     preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(tmp, table.schema)
        writer.write_table(table)
        del frame, table
    assert writer is not None
    writer.close()
    os.replace(tmp, path)


def write_inputs(folder: Path) -> None:
    """The codebook, the edit rules and the key file the stages read."""
    from pramkit.datasets import CENSUS_VARIABLES, census_areas
    from pramkit.swap.census import area_regions

    geo = census_areas()
    codes = {**CENSUS_VARIABLES, "area": tuple(geo["category"]), "region": tuple(sorted(set(area_regions(geo))))}
    lines = ["variable,category"] + [f'{v},"{c}"' for v, cats in codes.items() for c in cats]
    (folder / "codebook.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "categories.json").write_text(json.dumps({v: list(c) for v, c in codes.items()}), encoding="utf-8")
    (folder / "rules.csv").write_text(RULES, encoding="utf-8")
    key = folder / "secret.key"
    key.write_bytes(bytes(range(32)))  # a fixed key: the benchmark's release is reproducible
    key.chmod(0o600)


def commands(folder: Path, data: Path, rounds: int | None = None) -> dict[str, list[str]]:
    """The ``pramkit`` arguments of every stage (each writes its output to ``STAGE.log``, its notes to ``STAGE.err``);
    ``rounds``: the synthesize stage's ``--rounds`` (default the command's own)."""
    manifest, released, key = str(folder / "manifest.json"), str(folder / "released.parquet"), str(folder / "secret.key")
    src = str(data)
    return {
        "design": ["design", src, "--vars", "marital_status,area", "--categories", str(folder / "codebook.csv"),
                   "--forbid", str(folder / "rules.csv"), "--strata", "region,age", "--household", "hid",
                   "--household-vars", "area", "--epsilon", "6", "--key-file", key, "--out", manifest,
                   "--force", "--quiet"],
        "apply": ["apply", src, "--manifest", manifest, "--out", released, "--key-file", key, "--force", "--quiet"],
        "risk": ["risk", src, "--keys", KEYS, "--weights", "weight", "--json"],
        "household": ["risk", src, "--keys", KEYS, "--weights", "weight", "--household", "hid", "--json"],
        "suda": ["risk", src, "--keys", KEYS, "--suda", "--max-size", "4", "--json"],
        "estimate": ["estimate", released, "--manifest", manifest, "--vars", "area", "--weights", "weight",
                     "--psu", "hid", "--json"],
        "audit": ["audit", "--manifest", manifest, "--released", released, "--original", src, "--key-file", key,
                  "--json"],
        "reports": ["report", src, "--manifest", manifest, "--released", released, "--keys", KEYS,
                    "--sampling-fraction", "1", "--out", str(folder / "internal.html"),
                    "--public", str(folder / "public.html"), "--force", "--quiet"],
        "synthesize": ["synthesize", src, "--vars", SYNTHESIZED, "--model", "pgm", "--epsilon", "1", "--delta", "1e-9",
                       "--categories", str(folder / "categories.json"), "--forbid", str(folder / "rules.csv"),
                       "--out", str(folder / "synthesized.parquet"), "--key-file", key, "--force", "--quiet",
                       *(["--rounds", str(rounds)] if rounds is not None else [])],
    }


# ---------------------------------------------------------------------------
# the child processes
# ---------------------------------------------------------------------------

def peak_mib() -> float:
    """Peak resident memory of this process (``VmHWM``; a fresh process does not inherit its parent's)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - Linux has /proc


def _watch(limit_gib: float, result: Path) -> None:
    """End the process (exit 3) when its resident memory passes ``limit_gib``: the machine is shared."""
    page = os.sysconf("SC_PAGE_SIZE")

    def watch() -> None:
        while True:
            with open("/proc/self/statm") as fh:
                rss = int(fh.read().split()[1]) * page
            if rss > limit_gib * 2**30:
                result.write_text(json.dumps({"error": f"stopped above {limit_gib:g} GiB", "peak_mib": peak_mib()}))
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def floor(data: str) -> int:
    """Read every column of the file once, streamed in record batches (the floor of every stage)."""
    import pyarrow.parquet as pq

    rows = 0
    for batch in pq.ParquetFile(data, pre_buffer=False).iter_batches(batch_size=1 << 20):
        rows += batch.num_rows
    return rows


def child(result: Path, limit_gib: float, log: Path, argv: list[str]) -> None:
    """Run one stage (``pramkit`` arguments, or ``floor DATA``) and write its measures to ``result``."""
    _watch(limit_gib, result)
    import pyarrow  # noqa: F401  (every stage pays the same imports as the floor)

    t0, c0 = time.perf_counter(), time.process_time()
    if argv[0] == "floor":
        code = 0 if floor(argv[1]) > 0 else 1
    else:
        from pramkit.cli import main as pramkit_main

        with (open(log, "w", encoding="utf-8") as out, open(log.with_suffix(".err"), "w", encoding="utf-8") as err,
              contextlib.redirect_stdout(out), contextlib.redirect_stderr(err)):
            code = pramkit_main(argv)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    result.write_text(json.dumps({"code": code, "seconds": seconds, "cpu": cpu, "peak_mib": peak_mib()}))


def run_stage(folder: Path, name: str, argv: list[str], limit_gib: float) -> dict[str, Any]:
    """One stage in a fresh process; its measures, or the error that stopped it."""
    result, log = folder / f"{name}.result.json", folder / f"{name}.log"
    result.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, __file__, "--child", str(result), str(limit_gib), str(log), *argv],
                          capture_output=True, text=True)
    if not result.exists():
        return {"error": f"exit {proc.returncode}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"[:300]}
    out: dict[str, Any] = json.loads(result.read_text())
    if out.get("code", 0) != 0:
        err = log.with_suffix(".err")
        tail = err.read_text(encoding="utf-8").strip().splitlines() if err.exists() else []
        out["error"] = f"exit {out['code']}: {tail[-1] if tail else '?'}"[:300]
    return out


# ---------------------------------------------------------------------------
# the parent
# ---------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(Path(argv[1]), float(argv[2]), Path(argv[3]), argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=PERSONS)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-census"))
    ap.add_argument("--chunk", type=int, default=CHUNK, help="persons generated at a time")
    ap.add_argument("--memory-limit", type=float, default=6.0, help="GiB: a stage above it is stopped")
    ap.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages to run (default all)")
    ap.add_argument("--synthesize-rounds", type=int, default=None, metavar="T",
                    help="the synthesize stage's --rounds (default the command's: 4 per variable)")
    args = ap.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        ap.error(f"unknown stages {unknown}; choose among {','.join(STAGES)}")
    folder = args.dir / f"persons_{args.persons}"
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "census.parquet"
    if not data.exists():
        t0 = time.perf_counter()
        generate(data, args.persons, args.chunk)
        print(f"generated {data} ({args.persons:,} persons) in {time.perf_counter() - t0:.1f} s")
    write_inputs(folder)
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(data).metadata
    print(f"file: {meta.num_rows:,} persons, {meta.num_columns} columns, {data.stat().st_size / 2**20:,.1f} MiB "
          f"on disk; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    base = run_stage(folder, "floor", ["floor", str(data)], args.memory_limit)
    if "error" in base:
        print(f"floor failed: {base['error']}")
        return 1
    print(f"floor (one streamed read of the file): {base['seconds']:.2f} s, CPU {base['cpu']:.2f} s, "
          f"peak {base['peak_mib']:,.0f} MiB")
    print("| stage | seconds | x floor | CPU s | peak MiB | x floor peak |")
    print("|---|---|---|---|---|---|")
    total, worst, failed = 0.0, 0.0, 0
    argvs = commands(folder, data, args.synthesize_rounds)
    for name in stages:
        r = run_stage(folder, name, argvs[name], args.memory_limit)
        if "error" in r:
            failed += 1
            print(f"| {name} | failed: {r['error']} | | | {r.get('peak_mib', float('nan')):,.0f} | |", flush=True)
            continue
        total += r["seconds"]
        worst = max(worst, r["peak_mib"])
        print(f"| {name} | {r['seconds']:.2f} | {r['seconds'] / base['seconds']:.1f} | {r['cpu']:.2f} "
              f"| {r['peak_mib']:,.0f} | {r['peak_mib'] / base['peak_mib']:.1f} |", flush=True)
    print(f"total {total:.1f} s ({total / 60:.1f} min), largest peak {worst:,.0f} MiB "
          f"({worst / 1024:.2f} GiB); load average {os.getloadavg()[0]:.1f}; stages failed: {failed}")
    print("commands: pramkit " + "\n          pramkit ".join(" ".join(argvs[s]) for s in stages))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
