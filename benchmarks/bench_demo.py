"""``pramkit demo`` end to end against the time to write its CSV files alone.

Runs ``python -m pramkit demo --quiet`` (953 076 rows by default) in a fresh
process ``--repeat`` times and prints the best wall time, the time of each of
its steps (from ``private/summary.json``), and the time the process needs to
start and import the demo's libraries.  The floor, measured in the same run:
pyarrow writing the demo's two CSV files of that many rows (the original
``census.csv`` and the released ``released.csv``, the same size) from memory.

``--profile`` runs the demo once more under cProfile and prints the functions
with the most cumulative time.

Usage: python benchmarks/bench_demo.py [--rows 953076] [--repeat 3] [--dir /tmp/pramkit-demo-bench] [--profile]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import best_of


def floor_seconds(rows: int, repeat: int) -> float:
    """Seconds for pyarrow to write the demo's two CSV files (the census data, twice) from memory."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from pramkit.datasets import census

    table = pa.Table.from_pandas(census(rows), preserve_index=False)
    table = table.cast(pa.schema([(f.name, pa.string()) for f in table.schema]))
    with tempfile.TemporaryDirectory() as d:
        def write() -> None:
            for name in ("census.csv", "released.csv"):
                pacsv.write_csv(table, f"{d}/{name}", pacsv.WriteOptions(quoting_style="needed"))
        return best_of(write, repeat)


def run_demo(out: Path, rows: int, profile: Path | None = None) -> tuple[float, dict[str, float]]:
    """Wall seconds of one ``pramkit demo`` process, and its step times."""
    prefix = [sys.executable] + (["-m", "cProfile", "-o", str(profile)] if profile else [])
    args = prefix + ["-m", "pramkit", "demo", "--out", str(out), "--rows", str(rows), "--quiet", "--force"]
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    return wall, json.loads((out / "private" / "summary.json").read_text())["seconds"]


def main() -> None:
    from pramkit.defaults import NY_ROWS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=NY_ROWS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "pramkit-demo-bench")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    startup = best_of(lambda: subprocess.run([sys.executable, "-c", "import pramkit.demo, pramkit.report"],
                                             check=True), args.repeat)
    runs = [run_demo(args.dir, args.rows) for _ in range(args.repeat)]
    wall, steps = min(runs, key=lambda r: r[0])
    floor = floor_seconds(args.rows, args.repeat)
    print(f"pramkit demo, {args.rows:,} rows, best of {args.repeat}: {wall:.2f} s "
          f"(all runs {', '.join(f'{r[0]:.1f}' for r in runs)} s)")
    print(f"floor (pyarrow writing census.csv and released.csv from memory): {floor:.2f} s; "
          f"demo / floor = {wall / floor:.1f}")
    print(f"start-up and imports (python -c 'import pramkit.demo, pramkit.report'): {startup:.2f} s")
    for name, secs in steps.items():
        print(f"  {name:<10} {secs:6.2f} s")
    print(f"  {'other':<10} {wall - sum(steps.values()):6.2f} s (start-up, imports, moving the folders into place)")
    if args.profile:
        import pstats

        prof = args.dir / "demo.prof"
        run_demo(args.dir, args.rows, prof)
        pstats.Stats(str(prof)).sort_stats("cumulative").print_stats(r"pramkit|matplotlib/figure|pyarrow", 30)


if __name__ == "__main__":
    main()
