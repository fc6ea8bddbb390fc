"""How large a key space the spontaneous-recognition design handles (Cator, Hensbergen and Rozenholc, sec. 4).

For 5, 8 and 10 key variables of the built-in census data (all 953 076 rows
unless ``--rows`` says otherwise) and every combination of three of them, the
restricted-support design (:func:`pramkit.recognition.design.recognition_design`)
is timed, with its peak traced memory (tracemalloc) and the process's peak RSS.
The baseline, measured in the same run on the same key space, is the
identity-plus-uniform-noise matrix found by bisection; the ratio of the two
times is printed, with both losses.  The full K x K optimisation is out of
reach here (K^2 variables for K >= 1296 cells); the 48-cell comparison is in
``pramkit reproduce cator``.

    python benchmarks/bench_recognition.py [--rows N] [--alpha 0.01]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

from pramkit.datasets import census
from pramkit.recognition.design import (
    KeySpace,
    combinations_of,
    recognition_design,
    uniform_noise_baseline,
)
from pramkit.risk.frequencies import key_table

KEYS = ["ownership", "mortgage", "age", "sex", "marital_status", "race", "education", "employment", "disability",
        "veteran"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=953_076, help="records of the census data")
    parser.add_argument("--alpha", type=float, default=0.01, help="bound on the posterior of (C1)")
    parser.add_argument("--sizes", default="5,8,10", help="numbers of key variables")
    args = parser.parse_args()
    data = census(args.rows)
    print(f"census data: {len(data)} records; alpha = {args.alpha}; every combination of three keys")
    for d in (int(x) for x in args.sizes.split(",")):
        keys = KEYS[:d]
        table = key_table(data, keys)
        space = KeySpace(table.count())
        combos = combinations_of(space.keys, 3)
        t0 = time.perf_counter()
        base = uniform_noise_baseline(space, combos, alpha=args.alpha)
        t_base = time.perf_counter() - t0
        tracemalloc.start()
        t0 = time.perf_counter()
        design = recognition_design(space, alpha=args.alpha, combinations=3)
        t_design = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        dg = design.diagnostics
        print(
            f"{d:2d} keys: K = {space.cells} cells, {space.occurring.size} occurring types, {len(combos)} combinations; "
            f"rare types {dg.rare_types}, problem combinations {dg.problem_combinations}; "
            f"restricted design {t_design:.2f} s ({dg.variables} variables, {dg.constraints} constraints, "
            f"{dg.restarts} restarts, gap {dg.gap:.2g} records), peak traced {peak / 2**20:.0f} MiB, "
            f"peak RSS {rss:.0f} MiB; worst posterior {design.worst_posterior:.4f}; "
            f"expected changes {design.expected_changes:.1f} records; l2 {design.loss:.3g} (proportion^2); "
            f"uniform-noise baseline {t_base:.3f} s (weight {base.weight:.3g}, l2 {base.loss:.3g}, "
            f"{base.expected_changes:.0f} records changed); time ratio design / baseline {t_design / t_base:.1f}; "
            f"loss ratio baseline / design {base.loss / design.loss if design.loss > 0 else float('inf'):.3g}"
        )


if __name__ == "__main__":
    main()
