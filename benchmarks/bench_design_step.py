"""What the differentially private design step costs (docs/privacy.md).

On the census demo (953 076 persons; age, sex, marital status), for record budgets
E = 1, 2, 4, 6 and several shares of E spent on the design step's DP counts, the
information I(X; Z) kept on the exact frequencies (summed over the three variables, nats) by:

* the DP-count design: DP-optimal matrices designed on noisy counts, the rest of E split
  equally over the variables (mean and range over REPEATS draws), with the default design
  budget (:func:`pramkit.ledger.default_design_epsilon`) and with fixed shares of E;
* the exact-p design: the same at the whole budget, designed on the exact frequencies
  (not publishable: the reference it is measured against);
* randomized response at E / 3 per variable (data-free: no design step).

Run: ``python benchmarks/bench_design_step.py [--rows N] [--repeats R]``.  The ratio
printed is the DP-count design's information over the exact-p design's.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from pramkit.datasets import CENSUS_VARIABLES, NY_ROWS, census
from pramkit.release.pipeline import design_planned
from pramkit.release.plan import plan_release

VARS = ["age", "sex", "marital_status"]
BUDGETS = (1.0, 2.0, 4.0, 6.0)
SHARES = (None, 0.01, 0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=NY_ROWS)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    t0 = time.perf_counter()
    data = census(args.rows)
    codebook = {v: CENSUS_VARIABLES[v] for v in VARS}
    rng = random.Random(2026)

    def info(release) -> float:
        return release.record.to_dict()["total_information_nats"]

    def design_release(data, names, *, rng=None, **settings):
        return design_planned(data, plan_release(names, **settings), rng=rng)

    print(f"census: {args.rows:,} rows; information kept I(X;Z) summed over {', '.join(VARS)} [nats]")
    print(f"{'E':>4} {'exact p':>9} {'rr':>8} "
          + " ".join(f"{('default' if s is None else f'share {s:g}') + ': mean (min..max) ratio':>36}"
                     for s in SHARES))
    for budget in BUDGETS:
        exact = info(design_release(data, VARS, epsilon=budget, categories=codebook, exact_frequencies=True))
        rr = info(design_release(data, VARS, epsilon=budget, method="rr", categories=codebook))
        cells = []
        for share in SHARES:
            runs = [design_release(data, VARS, epsilon=budget, categories=codebook, rng=rng,
                                   design_epsilon=None if share is None else share * budget)
                    for _ in range(args.repeats)]
            got = np.array([info(m) for m in runs])
            if share is None:
                default_eps = runs[0].ledger.design_epsilon
            cells.append(f"{got.mean():9.4f} ({got.min():.4f}..{got.max():.4f}) {got.mean() / exact:6.3f}")
        print(f"{budget:4g} {exact:9.4f} {rr:8.4f} " + " ".join(f"{c:>36}" for c in cells)
              + f"   default design epsilon {default_eps:.4g}")
    print(f"done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
