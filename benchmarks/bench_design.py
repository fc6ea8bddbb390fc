"""DP-optimal design of form (8): time against exhaustive search, and at large S.

    python benchmarks/bench_design.py [--large] [--huge]

Small S: the branch and bound forced on against scoring every vertex of the
feasible polytope (search="exhaustive"), and for S = 4 the default search
against brute force over every set of S active constraints, in the same run;
the ratio is printed.  Large S (p drawn from Dirichlet(1)): S = 100 and
1000 at several alpha, from Proposition 3.2's regime (alpha = 1: the
hypercube pattern) to far beyond it (alpha = log(S - 2) + 1 and more:
patterns with singletons, every placement searched at once); with --large
also S = 10 000 and with --huge S = 100 000 (peak memory printed), each at
alpha = 1 and log(S - 2) + 1.  The budget split over several variables
(``split_budget(..., split="optimal")``, the census' age, sex, race and
employment, a record budget of 8): one design of
each variable at every point of the budget's grid, timed end to end against
as many evaluations of f as it solves designs.  Each design (``dp_optimal``, end to end) is
timed in seconds and as a ratio to a floor measured in the same run on the
same p: one evaluation of f (equation (9)) at one q, an O(S) NumPy pass
(best of 20).  Also printed: branch-and-bound nodes, the certified gap
(upper bound minus optimum) and whether the optimum is proved.
"""

from __future__ import annotations

import argparse
import itertools
import math
import resource
import time

import numpy as np

from pramkit.datasets import census
from pramkit.design.dp.multivariate import DEFAULT_GRID, split_budget
from pramkit.design.dp.optimal import dp_constraints, dp_optimal, solve_form8
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


def floor_seconds(p):
    """One evaluation of f at one q: the O(S) pass every design needs at least once."""
    q = np.full((1, p.size), 1.0 / p.size)
    return timed(lambda: form8_objective(p, q), repeat=20)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also S = 10 000 (under a second per design)")
    parser.add_argument("--huge", action="store_true", help="also S = 100 000 (a few seconds per design, about 250 MB)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("p ~ Dirichlet(1); small S: best of 3 runs (exhaustive and brute force: 1 run)")
    print(f"{'alpha':>6} {'S':>4} {'b&b s':>9} {'exhaustive s':>13} {'ratio':>8}  same optimum")
    for a_ in (1.0, 4.0):
        for s in (4, 6, 8, 10, 12):
            p = rng.dirichlet(np.ones(s))
            t_bb, a = timed(lambda: solve_form8(p, a_, search="branch_and_bound"))
            t_ex, b = timed(lambda: solve_form8(p, a_, search="exhaustive"), repeat=1)
            same = abs(a.mutual_information_nats - b.mutual_information_nats) <= 1e-12
            print(f"{a_:>6} {s:>4} {t_bb:>9.4f} {t_ex:>13.4f} {t_ex / t_bb:>8.1f}  {same}")
    p = rng.dirichlet(np.ones(4))
    t_def, a = timed(lambda: solve_form8(p, 1.0))
    t_bf, best = timed(lambda: brute_force(p, 1.0), repeat=1)
    print(f"S = 4 against brute force over all 4-subsets of the {len(dp_constraints(4, 1.0)[0])} constraints: "
          f"{t_def:.4f} s vs {t_bf:.4f} s (ratio {t_bf / t_def:.0f}), same optimum "
          f"{abs(best - a.mutual_information_nats) <= 1e-11}")
    runs = [(s, a_) for s in (100, 1000) for a_ in (0.1, 1.0, 3.0, round(math.log(s - 2) + 1.0, 2), 15.0, 700.0)]
    runs += [(s, a_) for s, on in ((10_000, args.large), (100_000, args.huge)) if on
             for a_ in (1.0, round(math.log(s - 2) + 1.0, 2))]
    print("large S: dp_optimal end to end, best of 3 (S <= 1000) or 1 run; floor = one evaluation of f")
    print(f"{'S':>7} {'alpha':>6} {'seconds':>9} {'floor s':>10} {'x floor':>9} {'nodes':>6} {'gap nats':>9}  proved")
    for s, a_ in runs:
        p = np.random.default_rng(s).dirichlet(np.ones(s))
        floor = floor_seconds(p)
        t, m = timed(lambda: dp_optimal(p, a_), repeat=3 if s <= 1000 else 1)
        cert = m.provenance.certificate
        print(f"{s:>7} {a_:>6} {t:>9.3f} {floor:>10.2e} {t / floor:>9.0f} {cert['bound_nodes']:>6} "
              f"{cert['certified_gap_nats']:>9.1e}  {cert['optimal']}")
    split()
    print(f"peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def split() -> None:
    """The optimal budget split over four variables of the census-like file, against evaluations of f."""
    frame = census(20_000, seed=7)
    names = ["age", "sex", "race", "employment"]
    ps = {n: frame[n].value_counts(dropna=False, normalize=True).to_numpy() for n in names}
    epsilon = 8.0
    t, b = timed(lambda: split_budget(ps, epsilon, split="optimal"), repeat=3)
    designs = (DEFAULT_GRID + len(names)) * len(names)
    floor = sum(floor_seconds(p) for p in ps.values()) / len(names)
    print(f"budget split (optimal) over {', '.join(f'{n} (S = {p.size})' for n, p in ps.items())} at epsilon "
          f"{epsilon:g}: {t:.3f} s for {designs} designs ({t / designs * 1e3:.2f} ms each, {t / (designs * floor):.0f}"
          f" x floor), {b.total_nats:.4f} nats kept, certified bound {b.upper_bound_nats:.4f}")


if __name__ == "__main__":
    main()
