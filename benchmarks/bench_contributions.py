"""Benchmark: contributions of the key variables and levels on the built-in census.

``python benchmarks/bench_contributions.py`` computes, on the census (953 076
records) and five keys (age, sex, marital status, race, education: 33 levels),

* :func:`pramkit.risk.contributions.risk_contributions` before PRAM: one SUDA
  search (MSUs up to size 4) and 1 + 5 + 33 = 39 risk fits (all keys, each key
  left out, each level merged), against the floor of one
  :func:`pramkit.risk.identification_risk` on all keys measured in the same run;
* :func:`pramkit.risk.contributions.expected_suda` with 5 keyed replicates of a
  perturbation of age, against the floor of one :func:`pramkit.risk.suda` on
  the original file.

The ratios say how close each is to the work it cannot avoid (39 fits; one SUDA
search and one perturbation per replicate).
"""

from __future__ import annotations

import random

from timing import best_of

from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.release.pipeline import design_release
from pramkit.risk import identification_risk, suda
from pramkit.risk.contributions import expected_suda, risk_contributions

KEYS = ["age", "sex", "marital_status", "race", "education"]
PI = 0.05
MAX_SIZE = 4
REPLICATES = 5


def main() -> None:
    data = census()
    fits = 1 + len(KEYS) + sum(data[k].nunique() for k in KEYS)
    floor = best_of(lambda: identification_risk(data, KEYS, sampling_fraction=PI), 1)
    wall = best_of(lambda: risk_contributions(data, KEYS, sampling_fraction=PI, max_size=MAX_SIZE), 1)
    print(f"records: {len(data)}, keys: {KEYS}, risk fits: {fits}")
    print(f"floor, one identification_risk on all keys: {floor:.2f} s")
    print(f"risk_contributions: {wall:.1f} s = {wall / floor:.1f}x floor ({wall / floor / fits:.2f}x per fit)")
    manifest = design_release(data, ["age"], epsilon=1.2, categories=CENSUS_VARIABLES, rng=random.Random(0))
    one = best_of(lambda: suda(data, KEYS, max_size=MAX_SIZE), 1)
    drawn = best_of(lambda: expected_suda(data, KEYS, manifest, max_size=MAX_SIZE, replicates=REPLICATES,
                                          key=bytes(32)), 1)
    print(f"floor, one suda (max_size {MAX_SIZE}): {one:.2f} s")
    print(f"expected_suda, {REPLICATES} replicates: {drawn:.1f} s = {drawn / one:.1f}x floor "
          f"({drawn / one / REPLICATES:.2f}x per replicate)")


if __name__ == "__main__":
    main()
