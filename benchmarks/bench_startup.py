"""Start-up time of the ``pramkit`` command against ``python -c "import numpy"`` (the floor).

Each command (``--version``, ``--help`` and every subcommand's ``--help``) is run REPEATS
times in a fresh interpreter; the best wall-clock time is printed with its ratio to the
floor measured in the same run, and with the heavy libraries the command imported
(``python -X importtime``).  None of SciPy, matplotlib, pandas, pyarrow and pyspark may load
before a command needs them: the script fails (status 1) if one does.

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
    """The fastest of ``repeats`` runs of ``cmd``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def heavy_imports(args: list[str]) -> list[str]:
    """The heavy top-level packages imported by ``pramkit ARGS``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pramkit", *args],
                          capture_output=True, text=True, check=True)
    names = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    return sorted(names & set(HEAVY))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    floor = best_of([sys.executable, "-c", "import numpy"], args.repeats)
    bare = best_of([sys.executable, "-c", "pass"], args.repeats)
    print(f"floor: python -c 'import numpy' {floor:.3f} s (python -c pass {bare:.3f} s); best of {args.repeats}")
    print(f"{'command':<26} {'seconds':>7} {'x floor':>7}  heavy libraries imported")
    offenders = []
    for argv in (["--version"], ["--help"], *([name, "--help"] for name in HELP)):
        t = best_of([sys.executable, "-m", "pramkit", *argv], args.repeats)
        heavy = heavy_imports(argv)
        print(f"pramkit {' '.join(argv):<18} {t:7.3f} {t / floor:7.2f}  {', '.join(heavy) or 'none'}")
        if heavy:
            offenders.append(f"pramkit {' '.join(argv)}: {', '.join(heavy)}")
    if offenders:
        sys.exit("heavy libraries imported before they are needed:\n  " + "\n  ".join(offenders))


if __name__ == "__main__":
    main()
