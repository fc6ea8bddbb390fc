"""Survey covariance benchmark: run ``python benchmarks/bench_survey.py``.

A file of 10 M records streamed in chunks of 1 M: 9 x 6 = 54 cells, 2 000 PSUs in
50 strata, 80 replicate weight columns.  :meth:`CellTotals.add` (totals per
(stratum, PSU) and the 80 replicate totals) is timed against a floor measured in
the same run on the same chunks: ``np.bincount`` of the cells with one weight
column.  The chunks are generated outside the timed parts.  Then the linearised
and the replicate covariance of the 54 cells are timed once; the accumulator is
also run without the replicate weights, to show the share of the replicates.
"""

from __future__ import annotations

import time

import numpy as np

from pramkit.estimate.survey import CellTotals, SurveyDesign, linearized_covariance, replicate_covariance

N_RECORDS = 10_000_000
CHUNK = 1_000_000
N_CELLS = 9 * 6
N_PSU = 2_000
N_STRATA = 50
N_REPLICATES = 80


def chunk(i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunk ``i``: cells, weights, strata, PSUs (40 per stratum), replicate weights (n, 80)."""
    rng = np.random.default_rng(i)
    psu = rng.integers(0, N_PSU, CHUNK)
    cells = rng.integers(0, N_CELLS, CHUNK)
    weights = rng.uniform(50.0, 500.0, CHUNK)
    factors = 1.0 + 0.5 * (rng.random((CHUNK, N_REPLICATES)) - 0.5)
    return cells, weights, psu // (N_PSU // N_STRATA), psu, factors * weights[:, None]


def main() -> None:
    start = time.perf_counter()
    design = SurveyDesign("w", strata="stratum", psu="psu", single_psu="error")
    totals = CellTotals(N_CELLS, design, n_replicates=N_REPLICATES)
    plain = CellTotals(N_CELLS, design)
    floor_total = np.zeros(N_CELLS)
    accumulate = floor = without = 0.0
    for i in range(N_RECORDS // CHUNK):
        cells, weights, strata, psu, reps = chunk(i)
        t0 = time.perf_counter()
        floor_total += np.bincount(cells, weights, minlength=N_CELLS)
        t1 = time.perf_counter()
        totals.add(cells, weights, strata=strata, psu=psu, replicates=reps)
        t2 = time.perf_counter()
        plain.add(cells, weights, strata=strata, psu=psu)
        t3 = time.perf_counter()
        floor += t1 - t0
        accumulate += t2 - t1
        without += t3 - t2
    assert np.allclose(totals.total, floor_total, rtol=1e-12) and np.array_equal(plain.total, totals.total)
    t0 = time.perf_counter()
    sigma = linearized_covariance(totals)
    t1 = time.perf_counter()
    replicated = replicate_covariance(totals.total, totals.replicate_totals, "bootstrap")
    t2 = time.perf_counter()
    assert sigma.shape == replicated.shape == (N_CELLS, N_CELLS)
    print(f"{N_RECORDS:,} records in chunks of {CHUNK:,}, {N_CELLS} cells, {len(totals.by_psu())} PSUs in "
          f"{len(totals.strata_labels)} strata, {N_REPLICATES} replicate weights")
    print(f"CellTotals.add {accumulate:.2f} s; floor np.bincount (one weight column) {floor:.3f} s; "
          f"ratio {accumulate / floor:.0f}x")
    print(f"  of which the 80 replicate totals {accumulate - without:.2f} s; without replicates {without:.2f} s, "
          f"ratio {without / floor:.0f}x")
    print(f"linearized_covariance {1e3 * (t1 - t0):.1f} ms; replicate_covariance {1e3 * (t2 - t1):.2f} ms")
    print(f"whole benchmark (chunk generation included) {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
