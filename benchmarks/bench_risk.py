"""Benchmark: the all-two-way log-linear fit on the built-in census data.

``python benchmarks/bench_risk.py`` fits the model with every two-way
interaction to the full table of the ten census variables (953 076 records,
2 566 080 cells) and reports its time as a ratio to a baseline measured in
the same run: one pass that sums all 45 two-way margins of the dense table
with NumPy (what a single IPF cycle on the dense table would at least cost).
"""

from __future__ import annotations

import itertools
import time

from pramkit.datasets import census
from pramkit.risk.frequencies import key_table
from pramkit.risk.identification import identification_risk
from pramkit.risk.loglinear import fit_loglinear
from timing import best_of



def main() -> None:
    data = census()
    keys = list(data.columns)
    counts = key_table(data, keys).dense_counts()
    pairs = list(itertools.combinations(range(counts.ndim), 2))

    def all_margins() -> None:
        for pair in pairs:
            counts.sum(axis=tuple(a for a in range(counts.ndim) if a not in pair))

    baseline = best_of(all_margins, 3)
    fit = fit_loglinear(counts, keys, model="2way")
    start = time.perf_counter()
    risk = identification_risk(data, keys, sampling_fraction=0.05)
    total = time.perf_counter() - start
    print(f"records: {len(data)}, cells: {counts.size}, two-way margins: {len(pairs)}")
    print(f"baseline, one pass summing all two-way margins of the dense table: {baseline:.3f} s")
    print(f"2-way fit: {fit.seconds:.2f} s, {fit.iterations} IPF cycles, "
          f"relative margin discrepancy {fit.relative_margin_discrepancy:.2e}, converged {fit.converged}")
    print(f"  ratio to baseline: {fit.seconds / baseline:.1f}x "
          f"({fit.seconds / fit.iterations / baseline:.2f}x per cycle)")
    print(f"identification_risk end to end (pi = 0.05): {total:.2f} s = {total / baseline:.1f}x baseline; "
          f"tau1 = {risk.tau1:.1f} records, tau2 = {risk.tau2:.1f} records")
    print(f"target: under 30 s on one core -> {'met' if total < 30 else 'NOT met'}")


if __name__ == "__main__":
    main()
