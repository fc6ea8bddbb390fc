"""Benchmark: local suppression to k-anonymity beside sdcMicro's ``localSuppression``, on sdcMicro's own files.

    python benchmarks/bench_suppress.py [--ks 2,3,5] [--time-limit 60]

For each file and k (testdata's seven keys, free1's REGION, SEX, AGE, and a 20 000-person sample of the
census-like file's age, sex, marital status, race and education) the table gives the suppressions of pramkit's
exact program (and whether it proved them the fewest) and of its greedy heuristic, under sdcMicro's rule (a
missing value matches any value) and under the intruder's (a value of its own), each with its time, and, where
R's sdcMicro is installed (``Rscript -e 'library(sdcMicro)'``), ``localSuppression``'s suppressions and time on
the same file in the same run, and the time ratio.  Without sdcMicro its columns say so in one line: the figures
its own test states are compared in ``tests/test_suppress_sdcmicro.py``.

Physical floor, measured in the same run: reading the key columns and counting each record's frequency once
(pramkit's own count, which every method needs at least once).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

SDC = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro"
FILES = {
    "testdata": ("testdata.csv", ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]),
    "free1": ("free1.csv", ["REGION", "SEX", "AGE"]),
}
CENSUS = ["age", "sex", "marital_status", "race", "education"]

R_SCRIPT = r"""
suppressMessages(library(sdcMicro))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], colClasses = "character")
keys <- strsplit(args[2], ",")[[1]]
for (k in as.integer(strsplit(args[3], ",")[[1]])) {
  t0 <- proc.time()[["elapsed"]]
  ls <- localSuppression(d[, keys], keyVars = seq_along(keys), k = k)
  cat(sprintf("%d %d %.3f\n", k, sum(ls$supps), proc.time()[["elapsed"]] - t0))
}
"""


def sdcmicro_available() -> bool:
    """R and its sdcMicro package are installed."""
    rscript = shutil.which("Rscript")
    return rscript is not None and subprocess.run([rscript, "-e", "library(sdcMicro)"], capture_output=True).returncode == 0


def run_sdcmicro(path: Path, keys: list[str], ks: list[int]) -> dict[int, tuple[int, float]]:
    """sdcMicro's localSuppression on the file: suppressions and seconds per k."""
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "ls.R"
        script.write_text(R_SCRIPT)
        done = subprocess.run(["Rscript", str(script), str(path), ",".join(keys), ",".join(map(str, ks))],
                              capture_output=True, text=True, check=True)
    out = {}
    for line in done.stdout.split("\n"):
        if line.strip():
            k, n, s = line.split()
            out[int(k)] = (int(n), float(s))
    return out


def run_pramkit(path: Path, keys: list[str], k: int, missing: str, method: str, limit: float) -> dict[str, object]:
    """pramkit suppress on the file: suppressions, proven or not, seconds (the command's own, in this process)."""
    import contextlib
    import io

    from pramkit.cli import main

    with tempfile.TemporaryDirectory() as d:
        out = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["suppress", str(path), "--keys", ",".join(keys), "--k", str(k), "--missing", missing,
                         "--method", method, "--time-limit", str(limit), "--out", str(Path(d) / "o.csv"), "--json"])
        seconds = time.perf_counter() - t0
    if code != 0:
        return {"total": None, "optimal": False, "seconds": seconds}
    result = json.loads(out.getvalue())
    return {"total": result["total"], "optimal": result["optimal"], "seconds": seconds}


def floor_seconds(path: Path, keys: list[str]) -> float:
    """Reading the key columns and counting every record's frequency once."""
    from pramkit.risk.kanonymity import key_codes, record_frequencies

    t0 = time.perf_counter()
    frame = pd.read_csv(path, usecols=keys, dtype=str)
    record_frequencies(key_codes(frame, keys), "own", None)
    return time.perf_counter() - t0


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ks", default="2,3,5")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds the exact program may take")
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    if not SDC.is_dir():
        sys.exit(f"{SDC} is absent")
    with tempfile.TemporaryDirectory() as d:
        from pramkit.datasets import census

        census_path = Path(d) / "census.csv"
        census(20_000)[CENSUS].to_csv(census_path, index=False)
        files = {name: (SDC / file, keys) for name, (file, keys) in FILES.items()}
        files["census 20 000"] = (census_path, CENSUS)
        have_r = sdcmicro_available()
        if not have_r:
            print("sdcMicro (R) is not installed: its columns are left empty; tests/test_suppress_sdcmicro.py compares "
                  "with the figures its own test states", file=sys.stderr)
        print("| file | k | floor s | exact any (s) | heuristic any (s) | exact own (s) | heuristic own (s) | "
              "sdcMicro localSuppression (s) | ratio heuristic any / sdcMicro |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, (path, keys) in files.items():
            theirs = run_sdcmicro(path, keys, ks) if have_r else {}
            floor = floor_seconds(path, keys)
            for k in ks:
                cells = []
                for missing in ("any", "own"):
                    for method in ("exact", "heuristic"):
                        r = run_pramkit(path, keys, k, missing, method, args.time_limit)
                        proven = "*" if r["optimal"] else ""
                        cells.append(f"{r['total']}{proven} ({float(r['seconds']):.2f})"  # type: ignore[arg-type]
                                     if r["total"] is not None else f"- ({float(r['seconds']):.0f})")  # type: ignore[arg-type]
                        if missing == "any" and method == "heuristic":
                            heuristic_s = float(r["seconds"])  # type: ignore[arg-type]
                n, s = theirs.get(k, (None, None))
                sdc = "not installed" if not have_r else f"{n} ({s:.2f})"
                ratio = "-" if s is None else f"{heuristic_s / max(s, 1e-9):.2f}"
                print(f"| {name} | {k} | {floor:.3f} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {sdc} | "
                      f"{ratio} |", flush=True)
    print("\n`*`: proven the fewest; `-`: the exact program did not prove its optimum within the time limit.")


if __name__ == "__main__":
    main_bench()
