"""The central epsilon of a shuffled release: time of the bound against a physical floor, and the figure.

For each case (a generic eps0-DP randomizer, randomized response, designs of the census-like file and of
the sdcMicro test file) prints the time of :func:`pramkit.privacy.shuffle_bound.shuffled_epsilon` (the
clone parameters read off the matrices included), the floor measured in the same run (one
``scipy.stats.binom.pmf`` over the same range of clone counts, the least any exact evaluation of the
binomial mixture costs, which the bisection repeats some 40 to 70 times), their ratio, the figure and the
one ``apply --shuffle`` stated before (the general bound of Feldman, McMillan and Talwar 2021, or the
total-variation bound of one matrix).

Usage: python benchmarks/bench_shuffle_bound.py [--repeat 3] [--sdc /work/shared/data/sdcmicro/testdata.csv]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np
from scipy.stats import binom
from timing import best_of

from pramkit.design.classic import randomized_response
from pramkit.privacy.amplification import by_shuffling, by_shuffling_matrix, record_clones
from pramkit.privacy.shuffle_bound import CloneParameters, clone_parameters, shuffled_epsilon

DELTA = 1e-6


def floor_seconds(w: float, n: int, repeat: int) -> float:
    """One binomial pmf over the range of C ~ Bin(n - 1, w) the mixture keeps."""
    tau = DELTA * 1e-6
    lo, hi = int(binom.ppf(tau, n - 1, w)), int(binom.isf(tau, n - 1, w))
    grid = np.arange(lo, hi + 1)
    return best_of(lambda: binom.pmf(grid, n - 1, w), repeat)


def cases(sdc: Path) -> list[tuple[str, object, int, float]]:
    """(name, what shuffled_epsilon takes, n, the earlier statement)."""
    import pramkit
    from pramkit.datasets import CENSUS_VARIABLES, census

    out: list[tuple[str, object, int, float]] = [
        ("generic eps0 = 4", CloneParameters.of(4.0), 100_000, by_shuffling(4.0, 100_000, DELTA)),
    ]
    for k in (2, 10):
        m = randomized_response(list(range(k)), 4.0)
        out.append((f"rr {k} categories, eps0 = 4", [m], 100_000, by_shuffling_matrix(m, 100_000, DELTA)))
    demo = pramkit.design_release(census(20_000), ["age", "sex", "marital_status"], epsilon=6.0,
                                  categories=CENSUS_VARIABLES, rng=random.Random(1))
    n = 953_076
    out.append(("census: age, sex, marital status at 6", record_clones(demo), n,
                by_shuffling(demo.perturbation_epsilon, n, DELTA)))
    if sdc.exists():
        for variables, method in ((["water"], "dp"), (["roof", "walls", "water"], "rr")):
            m = pramkit.design_release(str(sdc), variables, epsilon=3.0, method=method, rng=random.Random(1),
                                       quiet=True)
            earlier = (by_shuffling_matrix(m.variables[0].matrix, 4_580, DELTA) if len(variables) == 1
                       else by_shuffling(m.perturbation_epsilon, 4_580, DELTA))
            out.append((f"sdcMicro {'+'.join(variables)} {method} at 3", record_clones(m), 4_580, earlier))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sdc", type=Path, default=Path("/work/shared/data/sdcmicro/testdata.csv"))
    args = ap.parse_args()
    shuffled_epsilon(CloneParameters.of(1.0), 1_000, DELTA)           # imports
    print(f"delta {DELTA:g}; best of {args.repeat}")
    print(f"{'case':>42} {'n':>9} {'seconds':>8} {'floor s':>9} {'ratio':>7} {'epsilon':>8} {'before':>8}")
    for name, what, n, earlier in cases(args.sdc):
        t0 = time.perf_counter()
        params = what if isinstance(what, CloneParameters) else clone_parameters(what)   # type: ignore[arg-type]
        read = time.perf_counter() - t0
        secs = best_of(lambda params=params, n=n: shuffled_epsilon(params, n, DELTA), args.repeat) + read
        eps = shuffled_epsilon(params, n, DELTA).epsilon
        floor = floor_seconds(params.w, n, args.repeat)
        print(f"{name:>42} {n:>9,} {secs:>8.3f} {floor:>9.2e} {secs / floor:>7.0f} {eps:>8.4f} {earlier:>8.4f}")
    print("(epsilon: the central figure apply --shuffle states without the design step's; before: the earlier one)")


if __name__ == "__main__":
    main()
