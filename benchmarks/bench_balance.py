"""The balanced draw's swap search (:func:`pramkit.pgm_balance.balance`) against a floor measured in the same run.

    python benchmarks/bench_balance.py [--draws N] [--share S] [--repeat R]

A pool of four times ``--draws`` records (default 27 253, NIST's CRC excerpt) over nine variables of the
industry set's sizes (PUMA 21, AGEP 20 bins, SEX 2, RAC1P 9, HISP 24, EDU 12, INDP 40 groups, INDP_CAT 21,
PINCP_DECILE 11), drawn with one dependence (AGEP beside PUMA) so that the search has work to do.  Printed:

* ``balance`` end to end (each pool record's cell of the 84 3-way tables, the goals, the keyed proposals and
  the 16 swaps proposed per draw);
* the floor: what no search can skip, done by NumPy at once for every proposal: the proposals' keyed
  uniforms, and the counts and goals of the two records of every proposal read from their cells (a gather
  of ``2 x 84`` cells a proposal), with each record's cells computed once.

The search is sequential (a swap changes the counts the next proposal reads), so its ratio to the gather,
which is not, is the price of that order.  Best of ``--repeat`` runs of each, alternately.
"""

from __future__ import annotations

import argparse
from functools import reduce

import numpy as np
from timing import best_of

from pramkit.kernel.rng import resolve_key, uniforms
from pramkit.pgm_balance import POOL, STEPS, balance, workload_tables
from pramkit.synthesize_codes import cell_index

SIZES = [21, 20, 2, 9, 24, 12, 40, 21, 11]


def case(draws: int, seed: int = 1) -> tuple[np.ndarray, list[np.ndarray]]:
    """The pool (``POOL * draws`` records) and the independent 1-way laws whose products are the goals."""
    rng = np.random.default_rng(seed)
    laws = [rng.dirichlet(np.full(s, 0.5)) for s in SIZES]
    pool = np.stack([rng.choice(s, POOL * draws, p=p) for s, p in zip(SIZES, laws)], 1)
    pool[:, 1] = (pool[:, 0] + rng.integers(0, 4, len(pool))) % SIZES[1]
    return pool, laws


def floor(pool: np.ndarray, draws: int, goal_of, key) -> float:
    """The unavoidable reads, vectorised: the proposals, and the two records' counts and goals of each."""
    tables = workload_tables(pool.shape[1])
    offsets = np.cumsum([0] + [int(np.prod([SIZES[i] for i in t])) for t in tables])
    idx = np.stack([off + cell_index([pool[:, i] for i in t], [SIZES[i] for i in t])
                    for off, t in zip(offsets, tables)], 1).astype(np.int32)
    goal = np.concatenate([goal_of(t).ravel() for t in tables])
    counts = np.bincount(idx[:draws].ravel(), minlength=len(goal)).astype(np.int64)
    steps = STEPS * draws
    a = (uniforms(key, "@pgm|balance-in", 0, steps) * draws).astype(np.int64)
    b = draws + (uniforms(key, "@pgm|balance-out", 0, steps) * (len(pool) - draws)).astype(np.int64)
    total = 0.0
    for part in range(0, steps, 1 << 16):  # in parts, so that the gather fits in cache-sized blocks
        ci, cj = idx[a[part:part + (1 << 16)]], idx[b[part:part + (1 << 16)]]
        total += float(counts[ci].sum() + counts[cj].sum() + goal[ci].sum() + goal[cj].sum())
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=27_253)
    ap.add_argument("--share", type=int, default=1, choices=(1, 2))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    draws = args.draws // args.share
    pool, laws = case(draws)
    key = resolve_key(bytes(32))

    def goal_of(t: tuple[int, ...]) -> np.ndarray:
        return reduce(np.multiply.outer, [laws[i] for i in t])

    t_floor = best_of(lambda: floor(pool, draws, goal_of, key), args.repeat)
    t_search = best_of(lambda: balance(pool, draws, args.share, SIZES, goal_of, key), args.repeat)
    proposals = STEPS * draws
    print(f"balanced draw: {draws:,} draws (share {args.share}) from a pool of {len(pool):,}, "
          f"{len(workload_tables(len(SIZES)))} tables, {proposals:,} proposed swaps")
    print(f"  search {t_search:.3f} s ({1e9 * t_search / proposals:.0f} ns a proposal); floor (the gather) "
          f"{t_floor:.3f} s; ratio {t_search / t_floor:.2f}")


if __name__ == "__main__":
    main()
