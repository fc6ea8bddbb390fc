"""Throughput of the perturbation kernels against NumPy's floor and a naive loop.

For n values and S categories, prints for each kernel (form (8) diagonal, Walker
alias for any matrix):
  * seconds and millions of values per second;
  * the ratio to the time NumPy needs to draw n uniforms from the same
    bit generator (Philox), measured in the same run: the floor any keyed
    sampler must pay;
  * the speed-up over a naive per-row loop (``rng.choice(S, p=M[k])`` for each
    record, the way a simple Python PRAM does it), timed on a subsample.

Usage: python benchmarks/bench_perturb.py [--n 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pramkit.matrix import PramMatrix
from pramkit.perturb import perturb_codes
from pramkit.rng import SecretKey
from pramkit.sampling import AliasSampler, DiagonalSampler
from timing import best_of



def naive_seconds_per_value(matrix: np.ndarray, codes: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    s = matrix.shape[0]
    t0 = time.perf_counter()
    out = np.empty_like(codes)
    for i, k in enumerate(codes):
        out[i] = rng.choice(s, p=matrix[k])
    return (time.perf_counter() - t0) / codes.size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-n", type=int, default=20_000)
    args = ap.parse_args()
    n = args.n
    key = SecretKey(bytes(32), "benchmark")
    rng = np.random.default_rng(1)
    philox = np.random.Philox(key=key.philox_key("bench"))
    floor = best_of(lambda: np.random.Generator(philox).random(n), args.repeat)
    pcg = best_of(lambda: np.random.default_rng(0).random(n), args.repeat)
    print(f"n = {n:,} values; NumPy floor: {floor:.3f} s for n Philox uniforms ({n / floor / 1e6:.0f} M/s), "
          f"PCG64 {pcg:.3f} s")
    print(f"{'kernel':<9} {'S':>5} {'setup s':>8} {'seconds':>8} {'M values/s':>11} {'x floor':>8} {'x faster than naive':>20}")
    for s in (2, 50, 1000):
        codes = rng.integers(0, s, n)
        q = rng.uniform(0.6, 0.95, s)
        general = 0.8 * np.eye(s) + 0.2 * rng.dirichlet(np.ones(s), size=s)
        kernels = (
            ("diagonal", PramMatrix.from_diagonal(q), lambda m: DiagonalSampler(m.diagonal)),
            ("alias", PramMatrix(general), lambda m: AliasSampler(m.matrix)),
        )
        for name, m, make in kernels:
            t0 = time.perf_counter()
            sampler = make(m)
            setup = time.perf_counter() - t0
            secs = best_of(lambda: perturb_codes(codes, sampler, key=key, variable="bench"), args.repeat)
            naive = naive_seconds_per_value(m.matrix, codes[: args.naive_n])
            print(f"{name:<9} {s:>5} {setup:>8.3f} {secs:>8.3f} {n / secs / 1e6:>11.1f} {secs / floor:>8.2f} "
                  f"{naive * n / secs:>20.0f}")


if __name__ == "__main__":
    main()
