"""The census example of docs/risk.md: contributions before and after PRAM of age at epsilon 1.2.

``python benchmarks/contributions_example.py`` perturbs age in the whole census
(953 076 persons) with a DP design at a record budget of 1.2 nats, and prints
what docs/risk.md shows: the totals, the variables' contributions and the
interaction before PRAM and on the released file, the contributions of the
levels of age (before, released, expected over 20 keyed replicates of the
perturbation), the epsilon shares and the sentences.  It takes a few minutes
(78 risk fits and 20 SUDA searches).
"""

from __future__ import annotations

import random
import time

from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.engine.perturb import perturb_frame
from pramkit.release.pipeline import design_release
from pramkit.risk.contributions import release_contributions

KEYS = ["age", "sex", "marital_status", "race", "education"]


def main() -> None:
    data = census()
    manifest = design_release(data, ["age"], epsilon=1.2, categories=CENSUS_VARIABLES, rng=random.Random(0))
    released = perturb_frame(data, manifest, key=bytes(32)).data
    start = time.perf_counter()
    res = release_contributions(data, KEYS, released=released, manifest=manifest, sampling_fraction=0.05,
                                max_size=4, key=bytes(32))
    print(f"time: {time.perf_counter() - start:.1f} s")
    for name, c in (("before", res.before), ("released", res.after)):
        print(name, {k: round(v, 2) for k, v in c.totals.items()})
        print(c.variables.round(1).to_string(index=False))
        print("interaction", {k: round(v, 1) for k, v in c.interaction.items()})
    print(f"expected over the perturbation: {res.expected.method}, {res.expected.outcomes} outcomes")
    print(res.expected.variables.round(2).to_string(index=False))
    for name, levels in (("before", res.before.levels), ("released", res.after.levels),
                         ("expected", res.expected.levels)):
        print(f"levels of age, {name}")
        print(levels.query("variable == 'age'").round(2).to_string(index=False))
    print(res.after.epsilon.to_string(index=False))
    print("\n".join(res.sentences))


if __name__ == "__main__":
    main()
