"""A variable with 100 000 categories: DP design, manifest and perturbation of 10^7 rows.

The variable has S = ``--categories`` labels ``"c00000"``, ... with Zipf-like
frequencies ``p_k ~ 1 / (k + 1)**1.1``; a Parquet file of ``--rows`` values
drawn from p (dictionary-encoded strings, row groups of 10^6) is generated
once.  Each step runs in a fresh process, so that its peak resident memory
(``ru_maxrss``) is its own; a watchdog thread samples the resident memory
every 20 ms and ends the step when it passes ``--memory-limit`` GB, and the
address space is limited a little above that, so that a step that would
build an S x S array (80 GB at S = 10^5) fails at once instead of exhausting
the machine.

Steps and targets (each: under 60 s and 2 GB; the manifest under 20 MB):

  (a) ``design``: :func:`pramkit.design.dp.optimal.dp_optimal` at epsilon 1 and
      at a large epsilon, ``log(S - 2) + 1`` (a compact form (8) matrix; (b) and
      (c) use the first design that succeeds);
  (b) ``manifest``: :meth:`pramkit.Manifest.write` of that variable, size on
      disk, and :meth:`pramkit.Manifest.read` back;
  (c) ``apply``: :func:`pramkit.engine.perturb.apply_file` of the Parquet file (chunks
      of 10^6 rows, no receipt).

Floors measured in the same run: importing pramkit (memory), NumPy drawing
``--rows`` uniforms, ``json.dumps`` of a list of S floats, and pyarrow reading
and writing the Parquet file; every step is printed as a ratio to them.

Usage: python benchmarks/bench_scale.py [--categories 100000] [--rows 10000000]
       [--dir /tmp/pramkit-scale] [--memory-limit 4]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import resource
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

TARGET_SECONDS = 60.0
TARGET_GB = 2.0
TARGET_MANIFEST_MB = 20.0
ROW_GROUP = 1_000_000


def zipf(s: int) -> np.ndarray:
    p = 1.0 / np.arange(1, s + 1) ** 1.1
    return p / p.sum()


def labels(s: int) -> list[str]:
    width = max(5, len(str(s - 1)))
    return [f"c{k:0{width}d}" for k in range(s)]


def generate(path: Path, s: int, rows: int) -> None:
    """A Parquet file with one dictionary-encoded string column ``code`` drawn from the Zipf p."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2026)
    cdf = np.cumsum(zipf(s))
    dictionary = pa.array(labels(s))
    writer = None
    for start in range(0, rows, ROW_GROUP):
        n = min(ROW_GROUP, rows - start)
        codes = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), s - 1).astype(np.int32)
        table = pa.table({"code": pa.DictionaryArray.from_arrays(pa.array(codes), dictionary)})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


# ---------------------------------------------------------------------------
# the child processes
# ---------------------------------------------------------------------------

def _rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e9


def _guard(limit_gb: float) -> None:
    """Limit the address space (a huge allocation fails at once) and watch the resident memory."""
    soft = int((limit_gb + 6.0) * 1e9)       # room for the libraries' reserved, untouched address space
    resource.setrlimit(resource.RLIMIT_AS, (soft, soft))

    start = time.perf_counter()
    main_thread = threading.main_thread().ident

    def watch() -> None:
        while True:
            if _rss_gb() > limit_gb:
                frames = traceback.extract_stack(sys._current_frames()[main_thread])
                where = " > ".join(f"{Path(f.filename).name}:{f.name}" for f in frames if "pramkit" in f.filename)
                print(json.dumps({"error": f"resident memory above {limit_gb:g} GB after "
                                           f"{time.perf_counter() - start:.1f} s in {where}: stopped"}), flush=True)
                os._exit(3)
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()


def _measure(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        out = fn()
    except MemoryError as exc:
        out = {"error": f"MemoryError: {exc}"[:300]}
    except Exception as exc:  # reported, not raised: the other steps still run
        out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    out.setdefault("seconds", time.perf_counter() - t0)
    out["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return out


def child(task: str, workdir: Path, s: int, rows: int, arg: str) -> dict[str, Any]:
    data = workdir / f"zipf_{s}_{rows}.parquet"
    if task == "import":
        __import__("pramkit.engine.perturb")  # the baseline footprint

        return {}
    if task == "uniforms":
        rng = np.random.default_rng(1)
        t0 = time.perf_counter()
        u = rng.random(rows)
        return {"seconds": time.perf_counter() - t0, "check": float(u[0])}
    if task == "json_floats":
        values = np.random.default_rng(1).random(s).tolist()
        t0 = time.perf_counter()
        text = json.dumps(values)
        return {"seconds": time.perf_counter() - t0, "bytes": len(text)}
    if task == "arrow":
        import pyarrow.parquet as pq

        t0 = time.perf_counter()
        pq.write_table(pq.read_table(data), workdir / "copy.parquet", row_group_size=ROW_GROUP)
        return {"seconds": time.perf_counter() - t0}
    if task == "design":
        return _design(workdir, s, float(arg))
    if task == "manifest":
        return _manifest(workdir, s, arg)
    if task == "apply":
        from pramkit.engine.perturb import apply_file

        t0 = time.perf_counter()
        res = apply_file(data, workdir / arg, workdir / "released.parquet", key=b"k" * 32, force=True,
                         chunk_rows=ROW_GROUP, receipt=False)
        changed = res.variables[0].changed / res.rows
        return {"seconds": time.perf_counter() - t0, "rows": res.rows, "changed_share": changed}
    raise SystemExit(f"unknown task {task!r}")


def _design(workdir: Path, s: int, eps: float) -> dict[str, Any]:
    from pramkit.design.dp.optimal import dp_optimal

    p, cats = zipf(s), labels(s)
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        m = dp_optimal(p, eps, categories=cats)
        out["seconds"] = time.perf_counter() - t0
    except MemoryError as exc:
        where = [f.name for f in traceback.extract_tb(exc.__traceback__)]
        out["error"] = f"MemoryError after {time.perf_counter() - t0:.1f} s in {' > '.join(where[1:])}: {exc}"[:400]
        m = None
    if m is not None:
        out.update(epsilon=m.epsilon, compact=m.is_compact, optimal=bool(m.provenance.certificate["optimal"]),
                   adjustment=m.provenance.certificate["budget_adjustment"])
        with open(workdir / f"design_{eps:.6g}.pickle", "wb") as f:
            pickle.dump(m, f)
    return out


def _manifest(workdir: Path, s: int, pickled: str) -> dict[str, Any]:
    from pramkit.manifest import Manifest

    with open(workdir / pickled, "rb") as f:
        m = pickle.load(f)
    path = workdir / "manifest.json"
    t0 = time.perf_counter()
    Manifest.of({"code": m}).write(path, force=True)
    write = time.perf_counter() - t0
    t0 = time.perf_counter()
    back = Manifest.read(path)
    read = time.perf_counter() - t0
    assert back["code"].matrix == m
    return {"seconds": write, "read_seconds": read, "mb": path.stat().st_size / 1e6}


# ---------------------------------------------------------------------------
# the parent: run every step in its own process and print the table
# ---------------------------------------------------------------------------

def run(task: str, args: argparse.Namespace, arg: str = "") -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", task, str(args.dir), str(args.categories), str(args.rows),
           arg, str(args.memory_limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}", "seconds": math.nan,
                "peak_gb": math.nan}
    r = json.loads(lines[-1])
    r.setdefault("seconds", math.nan)
    r.setdefault("peak_gb", math.nan)
    return r


def verdict(r: dict[str, Any], seconds_key: str = "seconds") -> str:
    ok = r.get("error") is None and r[seconds_key] < TARGET_SECONDS and r["peak_gb"] < TARGET_GB
    return "meets targets" if ok else "MISSES target"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        task, workdir, s, rows, arg, limit = sys.argv[2:8]
        _guard(float(limit))
        print(json.dumps(_measure(lambda: child(task, Path(workdir), int(s), int(rows), arg))), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--categories", type=int, default=100_000)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-scale"))
    ap.add_argument("--memory-limit", type=float, default=4.0, help="GB of resident memory at which a step is stopped")
    ap.add_argument("--large-epsilon", type=float, default=None, help="default log(S - 2) + 1")
    args = ap.parse_args()
    s = args.categories
    args.dir.mkdir(parents=True, exist_ok=True)
    data = args.dir / f"zipf_{s}_{args.rows}.parquet"
    if not data.exists():
        t0 = time.perf_counter()
        generate(data, s, args.rows)
        print(f"generated {data} ({args.rows:,} rows, {s:,} categories) in {time.perf_counter() - t0:.0f} s")
    print(f"S = {s:,} categories, {args.rows:,} rows; targets: < {TARGET_SECONDS:g} s and < {TARGET_GB:g} GB "
          f"per step, manifest < {TARGET_MANIFEST_MB:g} MB")

    base = run("import", args)
    uni = run("uniforms", args)
    jsn = run("json_floats", args)
    arrow = run("arrow", args)
    print(f"floors: import {base['peak_gb']:.2f} GB; {args.rows:,} uniforms {uni['seconds']:.3f} s "
          f"({uni['peak_gb']:.2f} GB); json.dumps of {s:,} floats {jsn['seconds']:.3f} s; "
          f"pyarrow read+write {arrow['seconds']:.2f} s ({arrow['peak_gb']:.2f} GB)")

    large = args.large_epsilon if args.large_epsilon is not None else math.log(s - 2) + 1.0
    designed = None
    for eps in (1.0, large):
        r = run("design", args, repr(eps))
        where = f"(a) design, epsilon {eps:.4g}:"
        if r.get("error"):
            print(f"{where} FAILED ({r['error']}); peak {r['peak_gb']:.2f} GB")
        else:
            print(f"{where} {r['seconds']:.1f} s = {r['seconds'] / uni['seconds']:,.0f} x the uniforms floor; "
                  f"peak {r['peak_gb']:.2f} GB; stated epsilon {r['epsilon']!r}, compact {r['compact']}, "
                  f"optimal {r['optimal']} -- {verdict(r)}")
        if designed is None and "epsilon" in r:
            designed = f"design_{eps:.6g}.pickle"
    if designed is None:
        print("(b), (c): skipped, no design")
        return

    r = run("manifest", args, designed)
    if r.get("error"):
        print(f"(b) manifest: FAILED ({r['error']})")
    else:
        ok = verdict(r) == "meets targets" and r["mb"] < TARGET_MANIFEST_MB
        print(f"(b) manifest: write {r['seconds']:.2f} s = {r['seconds'] / jsn['seconds']:.1f} x json.dumps of S "
              f"floats; {r['mb']:.1f} MB; read back {r['read_seconds']:.2f} s; peak {r['peak_gb']:.2f} GB -- "
              f"{'meets targets' if ok else 'MISSES target'}")
    r = run("apply", args, "manifest.json")
    if r.get("error"):
        print(f"(c) apply: FAILED ({r['error']}); peak {r['peak_gb']:.2f} GB")
    else:
        print(f"(c) apply {r['rows']:,} rows: {r['seconds']:.1f} s = {r['seconds'] / arrow['seconds']:.1f} x pyarrow "
              f"read+write, {r['seconds'] / uni['seconds']:.0f} x the uniforms floor; peak {r['peak_gb']:.2f} GB "
              f"({r['peak_gb'] - base['peak_gb']:.2f} above import); {r['changed_share']:.1%} of values changed -- "
              f"{verdict(r)}")


if __name__ == "__main__":
    main()
