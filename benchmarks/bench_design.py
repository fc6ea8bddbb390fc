"""DP-optimal design of form (8): time against exhaustive search, and at large S.

    python benchmarks/bench_design.py [--large]

Small S: the default search (exhaustive where cheap, else branch and bound),
forced to branch and bound, against scoring every vertex of the feasible
polytope (search="exhaustive"), and for S = 4 against brute force over every
set of S active constraints, in the same run; the ratio is printed.  Large S
(S = 100, 1000, and 10 000 with --large), at alpha = 1 (Proposition 3.2's
regime: the hypercube pattern) and at alpha = log(S - 2) + 1 (beyond it:
patterns with singletons): seconds per design, branch-and-bound nodes and the
certified gap (upper bound minus optimum).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

from pramkit.design.dp_optimal import dp_constraints, dp_optimal, solve_form8
from pramkit.information import form8_objective


def timed(f, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def brute_force(p, alpha):
    c_mat, b = dp_constraints(p.size, alpha)
    subsets = np.array(list(itertools.combinations(range(len(c_mat)), p.size)))
    a = c_mat[subsets]
    ok = np.abs(np.linalg.det(a)) > 1e-12
    x = np.linalg.solve(a[ok], b[subsets][ok][..., None])[..., 0]
    x = np.clip(x[np.all(x @ c_mat.T - b <= 1e-9, axis=1)], 0, 1)
    return form8_objective(p, x).max()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also S = 10 000 (about 30 s)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    alpha = 1.0
    print("p ~ Dirichlet(1); times are the best of 3 runs (exhaustive and brute force: 1 run)")
    print(f"{'alpha':>6} {'S':>4} {'default s':>11} {'exhaustive s':>13} {'ratio':>8}  same optimum")
    for a_ in (1.0, 4.0):
        for s in (4, 6, 8, 10, 12):
            p = rng.dirichlet(np.ones(s))
            t_def, a = timed(lambda: solve_form8(p, a_, search="branch_and_bound"))
            t_ex, b = timed(lambda: solve_form8(p, a_, search="exhaustive"), repeat=1)
            same = abs(a.mutual_information_nats - b.mutual_information_nats) <= 1e-12
            print(f"{a_:>6} {s:>4} {t_def:>11.4f} {t_ex:>13.4f} {t_ex / t_def:>8.1f}  {same}")
    p = rng.dirichlet(np.ones(4))
    t_def, a = timed(lambda: solve_form8(p, alpha))
    t_bf, best = timed(lambda: brute_force(p, alpha), repeat=1)
    print(f"S = 4 against brute force over all 4-subsets of the {len(dp_constraints(4, alpha)[0])} constraints: "
          f"{t_def:.4f} s vs {t_bf:.4f} s (ratio {t_bf / t_def:.0f}), same optimum "
          f"{abs(best - a.mutual_information_nats) <= 1e-11}")
    sizes = (100, 1000, 10_000) if args.large else (100, 1000)
    print(f"{'S':>6} {'alpha':>6} {'seconds':>9} {'nodes':>7} {'gap nats':>9}  search")
    for s in sizes:
        p = rng.dirichlet(np.ones(s))
        for a_ in (alpha, round(math.log(s - 2) + 1.0, 2)):
            t, m = timed(lambda: dp_optimal(p, a_), repeat=1 if s > 1000 else 3)
            cert = m.provenance.certificate
            print(f"{s:>6} {a_:>6} {t:>9.3f} {cert['bound_nodes']:>7} {cert['certified_gap_nats']:>9.1e}  "
                  f"{cert['search']}, proved {cert['optimal']}")

if __name__ == "__main__":
    main()
