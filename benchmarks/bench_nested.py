"""Nested releases: what a public-use file derived from the scientific-use release keeps, and its cost.

    python benchmarks/bench_nested.py [--rows N] [--suf-epsilon 6]

The census demo's variables (age, sex, marital status: 9, 2 and 6 categories) are
released at record epsilon ``--suf-epsilon`` (the default DP design, budget shared equally, its
noise drawn from a fixed key so that every run reads the same DP counts).  A
public-use file is derived from that release (``pramkit.release.derive.derive_release``) at record
epsilons 1, 2 and 3.  Printed per variable: the information of the derived release I(X; Z) under
the DP frequencies the design reads, nats; the same for the best single-step epsilon-DP matrix at
the variable's share (``dp_general``: what a fresh public-use design would keep, at the price of a
second budget); their ratio (the price of deriving instead of spending again); whether the
certificate closed; and the time of the derived design against the time of that single-step design
measured in the same run (the floor).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import best_of  # noqa: E402

from pramkit.datasets import census  # noqa: E402
from pramkit.design.dp.general import dp_general  # noqa: E402
from pramkit.design.nested import derive_matrix  # noqa: E402
from pramkit.kernel.rng import SecretKey  # noqa: E402
from pramkit.privacy.geometric import DPCounts  # noqa: E402
from pramkit.release.choices import DesignChoices  # noqa: E402
from pramkit.release.derive import derive_release  # noqa: E402

VARIABLES = ["age", "sex", "marital_status"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="census rows (default: the full file)")
    parser.add_argument("--suf-epsilon", type=float, default=6.0, help="the scientific-use record epsilon")
    args = parser.parse_args()
    data = census() if args.rows is None else census(args.rows)
    key = SecretKey(bytes(32), "benchmark key")             # the same DP counts in every run
    suf = DesignChoices(epsilon=args.suf_epsilon).release(data, VARIABLES, key=key).manifest
    print(f"census: {len(data)} rows; scientific-use release at record epsilon {args.suf_epsilon:g} "
          f"(per variable {suf[VARIABLES[0]].epsilon:.4g})")
    head = (f"{'E':>4} {'variable':<15}{'S':>3}{'eps':>8} | {'I derived':>10}{'I fresh':>10}{'ratio':>7} | "
            f"{'proved':>6} | {'t derived':>10}{'t fresh':>9}{'ratio':>7}")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as folder:
        path = suf.write(os.path.join(folder, "suf.json"))
        for eps in (1.0, 2.0, 3.0):
            derived = derive_release(path, eps).manifest
            for v in derived.variables:
                d = suf.ledger.dp_counts[v.name]
                p = DPCounts(np.asarray(d["noisy"]), d["epsilon"], d["sensitivity"]).proportions(floor=1.0)
                share = float(derived.variables[0].matrix.provenance.parameters["epsilon"])
                fresh = dp_general(p, share)
                t_derived = best_of(lambda: derive_matrix(v.applied_to, p, share))
                t_fresh = best_of(lambda: dp_general(p, share))
                kept, best = v.matrix.provenance.objective, fresh.provenance.objective
                print(f"{eps:>4g} {v.name:<15}{v.matrix.size:>3}{share:>8.4g} | {kept:>10.4g}{best:>10.4g}"
                      f"{kept / best:>7.3f} | {str(v.matrix.provenance.certificate['optimal']):>6} | "
                      f"{t_derived:>9.3f}s{t_fresh:>8.3f}s{t_derived / t_fresh:>7.2f}")


if __name__ == "__main__":
    main()
