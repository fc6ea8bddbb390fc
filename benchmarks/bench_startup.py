"""Start-up time of the ``pramkit`` command against ``python -c "import numpy"`` (the floor).

Each command is run REPEATS times in a fresh interpreter; the best wall-clock time is
printed with its ratio to the floor measured in the same run.  Then, for each
subcommand's ``--help``, the heavy libraries it imported (``python -X importtime``):
none of SciPy, matplotlib, pandas and pyarrow should load before a command needs them.

Run: ``python benchmarks/bench_startup.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from pramkit.cli.commands import HELP

HEAVY = ("scipy", "matplotlib", "pandas", "pyarrow", "pyspark")


def best_of(cmd: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def heavy_imports(args: list[str]) -> list[str]:
    """The heavy top-level packages imported by ``pramkit ARGS``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pramkit", *args],
                          capture_output=True, text=True)
    names = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    return sorted(names & set(HEAVY))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    floor = best_of([sys.executable, "-c", "import numpy"], args.repeats)
    bare = best_of([sys.executable, "-c", "pass"], args.repeats)
    print(f"floor: python -c 'import numpy' {floor:.3f} s (python -c pass {bare:.3f} s); best of {args.repeats}")
    for cmd in (["--version"], ["--help"], ["inspect", "--help"], ["design", "--help"], ["apply", "--help"]):
        t = best_of([sys.executable, "-m", "pramkit", *cmd], args.repeats)
        print(f"pramkit {' '.join(cmd):<16} {t:.3f} s  {t / floor:5.2f}x the floor")
    print("heavy libraries imported by `pramkit COMMAND --help`:")
    for name in ["--version", *HELP]:
        argv = [name] if name.startswith("-") else [name, "--help"]
        print(f"  {' '.join(argv):<18} {', '.join(heavy_imports(argv)) or 'none'}")


if __name__ == "__main__":
    main()
