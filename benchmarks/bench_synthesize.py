"""The synthesizer (``pramkit synthesize``) end to end, and its raking, against floors measured in the same run.

    python benchmarks/bench_synthesize.py [--rows N] [--repeat R]

The census-like file (``--rows``, default 131 072 persons) written as CSV; marital status, race, education
and employment synthesized given the public age and sex at a central epsilon of 10, as the command line does
it.  Printed:

* ``synthesize_release`` end to end (read, measure, pool, rake, draw; nothing written), against reading the
  file once with pyarrow (the floor of any pass over it);
* one raking step (a table's weighted counts over every candidate and the rescaling of their weights,
  :func:`pramkit.synthesize._fit_table`), against the same step as NumPy writes it (``numpy.bincount`` of the
  weights by each candidate's cell, then a gather of the ratios), on the pool the synthesis drew: the same
  weights bit for bit.

Best of ``--repeat`` runs of each, the case and its floor alternately.
"""

from __future__ import annotations

import argparse
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
from timing import best_of

from pramkit import synthesize
from pramkit.datasets import census

VARIABLES = ["marital_status", "race", "education", "employment"]
PUBLIC = ["age", "sex"]


def fit_by_numpy(w: np.ndarray, cand: np.ndarray, cell: np.ndarray, a: int | None, b: int,
                 target: np.ndarray) -> None:
    """One raking step in NumPy: each candidate's cell, ``numpy.bincount`` of the weights, the ratios gathered."""
    ix = (cell[:, None] if a is None else cand[:, :, a].astype(np.int64)) * target.shape[1] + cand[:, :, b]
    cur = np.bincount(ix.ravel(), weights=w.ravel(), minlength=target.size)
    w *= np.divide(target.ravel(), cur, out=np.zeros(target.size), where=cur > 0)[ix]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=131_072, help="persons of the census-like file")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case and floor (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "census.csv"
        census(args.rows, seed=1).to_csv(path, index=False)
        key = bytes(range(32))
        run = lambda: synthesize.synthesize_release(path, variables=VARIABLES, public=PUBLIC,  # noqa: E731
                                                    epsilon=10.0, key=key)
        total = read = np.inf
        for _ in range(args.repeat):
            total = min(total, best_of(run, 1))
            read = min(read, best_of(lambda: pacsv.read_csv(path), 1))
        print(f"synthesize_release of {args.rows:,} persons ({', '.join(VARIABLES)} given {', '.join(PUBLIC)}, "
              f"epsilon 10): {total:.2f} s, {total / read:.0f} x reading the file once with pyarrow ({read:.3f} s)")

        # one raking step, on a pool of the size the synthesis draws
        pool = synthesize.default_pool(args.rows)
        rng = np.random.default_rng(0)
        sizes = [6, 5, 11, 4]
        cand = np.stack([rng.integers(0, s, (args.rows, pool)) for s in sizes], axis=2).astype(np.int32)
        cell = rng.integers(0, 18, args.rows).astype(np.int64)
        weights = rng.random((args.rows, pool))
        weights /= weights.sum(axis=1, keepdims=True)
        print(f"one raking step over {args.rows * pool:,} candidates ({args.rows:,} persons x {pool}), "
              f"best of {args.repeat}:")
        for a, b, label in ((2, 3, "education by employment"), (None, 1, "the public cell by race")):
            rows = 18 if a is None else sizes[a]
            target = rng.random((rows, sizes[b])) * args.rows / (rows * sizes[b]) * 2
            ours = numpy = np.inf
            for _ in range(args.repeat):
                ours = min(ours, best_of(partial(synthesize._fit_table, weights.copy(), cand, cell, a, b, target), 1))
                numpy = min(numpy, best_of(partial(fit_by_numpy, weights.copy(), cand, cell, a, b, target), 1))
            x, y = weights.copy(), weights.copy()
            synthesize._fit_table(x, cand, cell, a, b, target)
            fit_by_numpy(y, cand, cell, a, b, target)
            print(f"  {label:<26} {ours * 1e3:7.1f} ms, {ours / numpy:.2f} x NumPy ({numpy * 1e3:.1f} ms); "
                  f"the same weights bit for bit: {x.tobytes() == y.tobytes()}")


if __name__ == "__main__":
    main()
