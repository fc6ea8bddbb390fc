"""Throughput of the exact discrete Laplace sampler against NumPy's float Laplace.

For each epsilon (sensitivity 2) prints draws per second of
``discrete_laplace`` from the operating system's CSPRNG (the default) and from
a seeded ``random.Random`` (the Mersenne Twister, for tests), and the ratio of
each to ``numpy.random.default_rng().laplace`` drawing the same number of
values in the same run.  NumPy's sampler is the speed of inexact floating-point
noise from a non-cryptographic generator: the cost of exactness and of the
CSPRNG together is the ratio.

Usage: python benchmarks/bench_geometric.py [--n 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random

import numpy as np
from timing import best_of

from pramkit.privacy.geometric import discrete_laplace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.n
    gen = np.random.default_rng()
    print(f"n = {n} draws per call, best of {args.repeat}; sensitivity 2")
    print(f"{'epsilon':>8} {'source':>13} {'seconds':>9} {'draws/s':>11} "
          f"{'numpy draws/s':>14} {'ratio':>9}")
    for epsilon in (0.01, 0.1, 1.0, 10.0):
        floor = best_of(lambda: gen.laplace(scale=2 / epsilon, size=n), args.repeat)
        for source, make in (("SystemRandom", lambda: None), ("Random(0)", lambda: random.Random(0))):
            secs = best_of(lambda: discrete_laplace(n, epsilon, rng=make()), args.repeat)
            print(f"{epsilon:>8g} {source:>13} {secs:>9.4f} {n / secs:>11.3g} "
                  f"{n / floor:>14.3g} {floor / secs:>9.2e}")


if __name__ == "__main__":
    main()
