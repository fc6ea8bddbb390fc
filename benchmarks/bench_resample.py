"""pramkit resample on the NIST CRC excerpt: time, and the raw release against the resampled file.

The eight demographic-focused features other than AGEP and SEX are released by DP-optimal PRAM
(split equal) at each record budget; AGEP and SEX are public.  For each budget the script prints
the time ``resample_release`` takes (27 253 records, 10 variables), the total variation between
the original and the release (raw) and between the original and the resampled file, over every
1-way table of a perturbed variable and every 2-way table of the ten features, and the records
that break NIST's consistency rules (a married child, an adult without a marital status, a child
veteran) when the rules are given to ``resample``.

    python benchmarks/bench_resample.py                     # budgets 3, 10, 20; 'N' a category
    python benchmarks/bench_resample.py --epsilon 10 --na N # 'N' read as missing (kept as released)
    python benchmarks/bench_resample.py --data FILE         # another copy of national2019.csv
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from pathlib import Path

import numpy as np
import pandas as pd

import pramkit
from pramkit.io import read_table
from pramkit.structure import Rules

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
FEATURES = ["AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE"]
RULES = [
    {"AGEP": "|".join(map(str, range(15))), "MSP": "1|2|3|4|5|6"},
    {"AGEP": "|".join(map(str, range(15, 100))), "MSP": "N"},
    {"AGEP": "|".join(map(str, range(17))), "DVET": "1|2|3|4|5|6"},
]


def tv(a: pd.DataFrame, b: pd.DataFrame, cols: list[str]) -> float:
    pa_ = a[cols].fillna("<NA>").astype(str).value_counts(normalize=True)
    pb = b[cols].fillna("<NA>").astype(str).value_counts(normalize=True)
    joined = pd.concat([pa_, pb], axis=1).fillna(0.0)
    return 0.5 * float((joined.iloc[:, 0] - joined.iloc[:, 1]).abs().sum())


def one(data: pd.DataFrame, epsilon: float, rules: bool) -> dict[str, float]:
    m = pramkit.design_release(data, FEATURES[2:], epsilon=epsilon, split="equal", rng=random.Random(7))
    released = pramkit.perturb_frame(data, m, key=bytes(range(32))).data
    t0 = time.perf_counter()
    res = pramkit.resample_release(released, m, key=bytes(range(1, 33)), forbid=RULES if rules else None)
    seconds = time.perf_counter() - t0
    out = res.data
    raw1 = [tv(data, released, [c]) for c in m.columns]
    new1 = [tv(data, out, [c]) for c in m.columns]
    pairs = [list(p) for p in itertools.combinations(FEATURES, 2)]
    raw2 = np.array([tv(data, released, p) for p in pairs])
    new2 = np.array([tv(data, out, p) for p in pairs])
    row = {"epsilon": epsilon, "seconds": seconds, "tv1_raw": float(np.mean(raw1)), "tv1_resampled": float(np.mean(new1)),
           "tv2_raw_mean": float(raw2.mean()), "tv2_resampled_mean": float(new2.mean()),
           "tv2_raw_max": float(raw2.max()), "tv2_resampled_max": float(new2.max()),
           "tv2_improved": int((new2 < raw2).sum()), "tv2_tables": len(pairs)}
    if rules:
        check = Rules.of(RULES)
        row["rule_breaking_raw"] = int(check.breaking(released, FEATURES).sum())
        row["rule_breaking_resampled"] = int(check.breaking(out, FEATURES).sum())
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--epsilon", type=float, action="append", help="record budget(s) (default 3, 10, 20)")
    parser.add_argument("--na", default="", help="the text read as missing ('N' for not applicable; default none)")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"skipped: {args.data} is not available")
        return
    data = read_table(args.data, na_values=(args.na,) if args.na else ())[FEATURES]
    rules = not args.na  # the rules name 'N'
    print(f"{len(data):,} records; perturbed: {', '.join(FEATURES[2:])}; public: AGEP, SEX; 'N' "
          f"{'missing' if args.na else 'a category'}")
    for eps in args.epsilon or [3.0, 10.0, 20.0]:
        r = one(data, eps, rules)
        line = (f"epsilon {r['epsilon']:g}: resample {r['seconds']:.1f} s; 1-way TV raw {r['tv1_raw']:.3f} -> "
                f"{r['tv1_resampled']:.3f}; 2-way TV mean {r['tv2_raw_mean']:.3f} -> {r['tv2_resampled_mean']:.3f}, "
                f"max {r['tv2_raw_max']:.3f} -> {r['tv2_resampled_max']:.3f}, closer in {r['tv2_improved']} of "
                f"{r['tv2_tables']}")
        if rules:
            line += f"; rule breakers {r['rule_breaking_raw']:,} -> {r['rule_breaking_resampled']:,}"
        print(line)


if __name__ == "__main__":
    main()
