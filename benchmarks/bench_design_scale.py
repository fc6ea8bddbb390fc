"""Where the design command's time goes at 1000, 10 000 and 100 000 categories.

For each family -- dp (diagonal, form (8)), metric geometric (ordinal), metric exponential
(points in the plane, at most 10 000 of them) -- ``pramkit design --counts ... --json`` is timed
as a fresh process (start-up, import, solve, JSON) and in process (``pramkit.cli.main``, no
start-up); the DP-optimal certificate at 10 000 categories beyond Proposition 3.2 is timed on its
own (``dp_optimal``), also with half the categories at p = 0 at alpha = 30 (truthful or not).
Each time is printed with its ratio to a floor measured in the same run: parsing the same counts
and writing the same number of bytes of JSON (a list of floats) to a
file.  The start-up of a bare interpreter importing pramkit's command line is printed too.

    python benchmarks/bench_design_scale.py            # S = 1000, 10 000, 100 000
    python benchmarks/bench_design_scale.py --quick    # S = 1000, and the certificate at 10 000

The metric geometric family is printed densely (S x S numbers: about 1 GB of JSON at S = 10 000),
so the full run takes many minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def _counts(s: int) -> str:
    return ",".join(map(str, np.random.default_rng(s).integers(1, 1000, s).tolist()))


def _floor(counts: str, nbytes: int, path: str) -> float:
    """Parse the counts and write ``nbytes`` of JSON floats: what any design command must at least do."""
    values = np.random.default_rng(0).random(max(1, nbytes // 21)).tolist()
    start = time.perf_counter()
    parsed = [float(x) for x in counts.split(",")]
    with open(path, "w") as fh:
        fh.write(json.dumps({"n": len(parsed), "values": values}))
    return time.perf_counter() - start


def _argv(family: str, s: int, counts: str, folder: str) -> list[str]:
    base = ["design", "--counts", counts, "--json"]
    if family == "dp":
        return base + ["--method", "dp", "--family", "diagonal", "--epsilon", str(math.log(s) + 1.0)]
    if family == "metric-geometric":
        return base + ["--method", "metric", "--distances", "ordinal", "--mechanism", "geometric",
                       "--metric-epsilon", "0.5"]
    points = os.path.join(folder, f"points{s}.csv")
    if not os.path.exists(points):
        xy = np.random.default_rng(1).random((s, 2))
        with open(points, "w") as fh:
            fh.write("category,x,y\n" + "".join(f"{i},{a!r},{b!r}\n" for i, (a, b) in enumerate(xy.tolist())))
    return base + ["--method", "metric", "--distances", points, "--mechanism", "exponential",
                   "--metric-epsilon", "0.5"]


def _process(argv: list[str], folder: str) -> tuple[float, int]:
    """Seconds of ``pramkit ARGV`` as a fresh process, and the bytes it printed (argv through a file
    of arguments would change the command; the counts go on the command line as a user gives them)."""
    out = os.path.join(folder, "out.json")
    start = time.perf_counter()
    with open(out, "w") as fh:
        subprocess.run([sys.executable, "-m", "pramkit", *argv], stdout=fh, check=True)
    return time.perf_counter() - start, os.path.getsize(out)


def _in_process(argv: list[str]) -> float:
    from pramkit.cli import main

    sink = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        main(argv)
    return time.perf_counter() - start


def _certificate(s: int, alpha: float | None = None, empty: bool = False,
                 truthful: bool = False) -> tuple[float, dict]:
    """Seconds of ``dp_optimal`` at S categories (Dirichlet p; with ``empty``, its second half at
    p = 0) and its certificate; alpha defaults to log S + 1, beyond Proposition 3.2 (about log(S - 2))."""
    from pramkit.design.dp.optimal import dp_optimal

    p = np.random.default_rng(s).dirichlet(np.ones(s))
    if empty:
        p[s // 2:] = 0.0
        p = p / p.sum()
    start = time.perf_counter()
    cert = dp_optimal(p, math.log(s) + 1.0 if alpha is None else alpha, truthful=truthful).provenance.certificate
    return time.perf_counter() - start, cert


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="S = 1000 only (and the certificate at 10 000)")
    args = parser.parse_args()
    sizes = (1000,) if args.quick else (1000, 10_000, 100_000)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import pramkit.cli"], check=True)
    print(f"start-up (interpreter + import pramkit.cli): {time.perf_counter() - start:.2f} s")
    print(f"{'family':18s} {'S':>7s} {'process s':>10s} {'x floor':>9s} {'in-process s':>13s} "
          f"{'x floor':>9s} {'MB out':>7s} {'floor s':>8s}")
    with tempfile.TemporaryDirectory() as folder:
        for s in sizes:
            counts = _counts(s)
            for family in ("dp", "metric-geometric", "metric-exponential"):
                if family == "metric-exponential" and s > 10_000:
                    continue
                argv = _argv(family, s, counts, folder)
                seconds, nbytes = _process(argv, folder)
                inside = _in_process(argv)
                floor = _floor(counts, nbytes, os.path.join(folder, "floor.json"))
                print(f"{family:18s} {s:7d} {seconds:10.2f} {seconds / floor:9.1f} {inside:13.2f} "
                      f"{inside / floor:9.1f} {nbytes / 1e6:7.1f} {floor:8.3f}", flush=True)
        floor = _floor(_counts(10_000), 10_000 * 21, os.path.join(folder, "floor.json"))
        cases = [("alpha = log S + 1", None, False, False), ("half of p = 0, alpha = 30", 30.0, True, False),
                 ("half of p = 0, alpha = 30, truthful", 30.0, True, True)]
        for label, alpha, empty, truthful in cases:
            seconds, cert = _certificate(10_000, alpha, empty, truthful)
            print(f"dp_optimal certificate, S = 10 000, {label}: {seconds:.2f} s ({seconds / floor:.0f}x floor), "
                  f"optimal {cert['optimal']}, gap {cert['certified_gap_nats']:.2g} nats, {cert['bound_nodes']} nodes",
                  flush=True)


if __name__ == "__main__":
    main()
