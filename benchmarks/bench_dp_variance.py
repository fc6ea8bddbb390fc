"""Least-variance DP design against the information-optimal one, on the census variables.

    python benchmarks/bench_dp_variance.py [--rows N]

For each variable of ``pramkit.datasets.census()`` (its observed proportions
p) and epsilon in 0.5, 1, 2, 4: the epsilon-DP form (8) design of
``pramkit.design.dp.optimal.dp_optimal`` (most mutual information) and of
``pramkit.design.dp.variance.dp_min_variance`` (least variance of the
unbiased estimator).  Printed per design: I(X; Z) in nats; the per-record
loss ``psi = sum_k p_k psi_k`` (n times Cator's L2 loss of the estimated
proportions, PRAM only; ``inf`` when the matrix is singular); the variance
inflation of the estimated proportions with sampling as well,
``(psi + 1 - sum p^2) / (1 - sum p^2)``; and whether each certificate is
closed.  Then the time of ``dp_min_variance`` (certificate included) at
S = 10, 100, 1000 and its branch-and-bound nodes.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.dp.optimal import dp_optimal
from pramkit.design.dp.variance import dp_min_variance, form8_variances
from pramkit.information import mutual_information

EPSILONS = (0.5, 1.0, 2.0, 4.0)


def loss(p: np.ndarray, q: np.ndarray) -> float:
    psi = form8_variances(q)
    used = p > 0
    return float(np.dot(p[used], psi[used])) if np.all(np.isfinite(psi[used])) else math.inf


def fmt(x: float, width: int = 10) -> str:
    return f"{'inf':>{width}}" if not math.isfinite(x) else f"{x:>{width}.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="census rows (default: the full file)")
    args = parser.parse_args()
    data = census() if args.rows is None else census(args.rows)
    print(f"census: {len(data)} rows; psi = per-record loss (n x L2 loss), VI = variance inflation with sampling")
    head = (f"{'variable':<15}{'S':>3}{'eps':>5} | {'I info':>8}{'I var':>8}{'I ratio':>8} | "
            f"{'psi info':>10}{'psi var':>10} | {'VI info':>10}{'VI var':>10} | proved (info, var)")
    print(head)
    print("-" * len(head))
    for name in CENSUS_VARIABLES:
        counts = data[name].value_counts(sort=False)
        p = (counts / counts.sum()).to_numpy(dtype=float)
        p = p / p.sum()
        sampling = 1.0 - float(np.dot(p, p))
        for eps in EPSILONS:
            info = dp_optimal(p, eps)
            var = dp_min_variance(p, eps)
            i_info, i_var = mutual_information(p, info.matrix), mutual_information(p, var.matrix)
            l_info, l_var = loss(p, info.diagonal), loss(p, var.diagonal)
            vi_info = (l_info + sampling) / sampling if math.isfinite(l_info) else math.inf
            vi_var = (l_var + sampling) / sampling
            print(f"{name:<15}{p.size:>3}{eps:>5g} | {i_info:>8.4f}{i_var:>8.4f}{i_var / i_info:>8.3f} | "
                  f"{fmt(l_info)}{fmt(l_var)} | {fmt(vi_info)}{fmt(vi_var)} | "
                  f"{info.provenance.certificate['optimal']}, {var.provenance.certificate['optimal']}")
    print()
    print("design time of dp_min_variance (certificate included), p ~ Dirichlet(1), best of 3 runs")
    print(f"{'S':>6}{'eps':>6}{'seconds':>10}{'nodes':>9}  proved  rel. gap")
    rng = np.random.default_rng(0)
    for s in (10, 100, 1000):
        p = rng.dirichlet(np.ones(s))
        for eps in (1.0, 4.0):
            best, m = math.inf, None
            for _ in range(3):
                t0 = time.perf_counter()
                m = dp_min_variance(p, eps)
                best = min(best, time.perf_counter() - t0)
            cert = m.provenance.certificate
            print(f"{s:>6}{eps:>6g}{best:>10.3f}{cert['nodes']:>9}  {str(cert['optimal']):<6}  "
                  f"{cert['certified_gap'] / m.provenance.objective:.1e}")


if __name__ == "__main__":
    main()
