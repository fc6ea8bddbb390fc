"""Throughput of the exact discrete Laplace sampler against NumPy's float Laplace.

For each epsilon (sensitivity 2) prints draws per second of
``discrete_laplace`` from the operating system's CSPRNG (the default) and from
a seeded ``random.Random`` (the Mersenne Twister, for tests), and the ratio of
each to ``numpy.random.default_rng().laplace`` drawing the same number of
values in the same run.  NumPy's sampler is the speed of inexact floating-point
noise from a non-cryptographic generator: the cost of exactness and of the
CSPRNG together is the ratio.

Then, for sigma2 = 1, 100 and 10 000, draws per second of the exact discrete
Gaussian ``discrete_gaussian`` (Canonne, Kamath and Steinke 2020, Algorithm 3)
and its ratio to ``discrete_laplace`` at the scale of its proposal
(``epsilon / sensitivity = 1 / t``, ``t = floor(sigma) + 1``), drawn from the
same kind of generator in the same run: the discrete Laplace draw is its floor.

Usage: python benchmarks/bench_geometric.py [--n 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import random

import numpy as np
from timing import best_of

from pramkit.privacy.gaussian import discrete_gaussian
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
    print()
    print("discrete Gaussian against the discrete Laplace of scale t = floor(sigma) + 1 (its proposal)")
    print(f"{'sigma2':>8} {'source':>13} {'seconds':>9} {'draws/s':>11} "
          f"{'Laplace draws/s':>16} {'ratio':>7}")
    for sigma2 in (1, 100, 10_000):
        t = math.isqrt(sigma2) + 1
        for source, make in (("SystemRandom", lambda: None), ("Random(0)", lambda: random.Random(0))):
            lap = best_of(lambda t=t, make=make: discrete_laplace(n, 2 / t, rng=make()), args.repeat)
            secs = best_of(lambda s=sigma2, make=make: discrete_gaussian(n, s, rng=make()), args.repeat)
            print(f"{sigma2:>8g} {source:>13} {secs:>9.4f} {n / secs:>11.3g} "
                  f"{n / lap:>16.3g} {secs / lap:>7.2f}")


if __name__ == "__main__":
    main()
