"""The worked examples of docs/structure.md: every figure the page shows.

Two files, each released with and without its structure at the same record budget:

* the census-like file (:func:`pramkit.datasets.census`, 100 000 persons): the edit rule
  "age 0-9 can only be never married" with ``split="joint"`` against the unrestricted joint
  design; then sex as a stratum against sex perturbed with age and marital status;
* the synthetic EU-SILC file of the R package laeken (``eusilc``, 14 827 persons in 6 000
  households; skipped with a message when absent): the edit rules on age band x economic
  status (``pl030``) with ``split="joint"``; then a whole release with the household
  variables ``db040`` and ``hsize`` drawn once per household (``db030``) and the kept codes
  ``age=0-15`` and ``pl030=n/a``.

For each: the information kept, I(X; Z) in nats on the exact data (the private design
record's ``information_nats``, and the same computed here on the persons for household
variables), the record epsilon and the epsilon given the structure, the guarantee sentence,
and checks of the released file (forbidden combinations, households that share their values).

The figures are reproducible: each design's DP counts draw from ``random.Random(SEED)`` and
each release uses the fixed key ``KEY``.  A release made with the CLI draws fresh noise and
a fresh key, so its figures differ slightly.  Runs in about 15 seconds on a 2-core machine.

Usage: python benchmarks/structure_examples.py [--eusilc PATH] [--rows N] [--write DIR] [--json OUT]

``--write DIR`` also writes the prepared inputs of the page's commands into DIR (the banded
EU-SILC file, the codebooks, the rules files and the census file).  The EU-SILC file is
``--eusilc PATH``, else ``$PRAMKIT_EUSILC``, else ``eusilc_laeken.csv`` in the current folder
(from R: ``write.csv(laeken::eusilc, "eusilc_laeken.csv", row.names = FALSE, na = "")``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pramkit import Manifest, apply_file, design_planned, perturb_frame, plan_release
from pramkit.datasets import CENSUS_VARIABLES, census

SEED = 2025
KEY = hashlib.sha256(b"pramkit docs/structure.md").digest()
#: laeken's eusilc as CSV, e.g. from R: write.csv(laeken::eusilc, "eusilc_laeken.csv", row.names = FALSE, na = "")
EUSILC = Path(os.environ.get("PRAMKIT_EUSILC", "eusilc_laeken.csv"))

CENSUS_ROWS = 100_000
CENSUS_EPSILON = 3.0
NOT_NEVER_MARRIED = ("married, spouse present", "married, spouse absent", "separated", "divorced", "widowed")
CENSUS_RULES = "age,marital_status\n0-9,\"" + "|".join(NOT_NEVER_MARRIED) + "\"\n"

EUSILC_EPSILON = 6.0
AGE_BANDS = ("0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65+")
AGE_EDGES = (-np.inf, 15, 24, 34, 44, 54, 64, np.inf)
STATUS = tuple(str(k) for k in range(1, 8)) + ("n/a",)
EUSILC_RULES = "age,pl030\n0-15,1|2|3|4|5|6|7\n" + "|".join(AGE_BANDS[1:]) + ",n/a\n"


# --- information on the exact data -----------------------------------------------------------

def entropy(counts: Sequence[float]) -> float:
    """H in nats of a distribution given by counts."""
    p = np.asarray(counts, dtype=float)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())


def channel_information(p: np.ndarray, m: np.ndarray) -> float:
    """I(X; Z) in nats for X ~ p released through the row-stochastic matrix m."""
    q = p @ m
    joint = p[:, None] * m
    on = joint > 0
    ratio = np.divide(m, q[None, :], out=np.ones_like(m), where=on)
    return float((joint[on] * np.log(ratio[on])).sum())


def exact_information(frame: pd.DataFrame, manifest: Manifest, name: str, released_as_is: Sequence[str] = ()) -> float:
    """I(X; Z) on the persons of ``frame`` for one variable of ``manifest``; ``released_as_is``:
    columns the release leaves unchanged, which then belong to X and Z too (H(them) plus the
    information within each of their values)."""
    v = manifest[name]
    cats = v.matrix.categories
    pos = {c if isinstance(c, tuple) else (c,): i for i, c in enumerate(cats)}
    cols = list(v.read_columns)
    total = 0.0
    groups = frame.groupby(list(released_as_is), observed=True) if released_as_is else [((), frame)]
    for _, part in groups:
        p = np.zeros(len(cats))
        for key, n in part.groupby(cols, observed=True).size().items():
            key = key if isinstance(key, tuple) else (key,)
            p[pos[tuple(str(k) for k in key)]] += n
        total += p.sum() / len(frame) * channel_information(p / p.sum(), v.matrix.matrix)
    sizes = frame.groupby(list(released_as_is), observed=True).size() if released_as_is else [1]
    return entropy(sizes) + total


def forbidden(frame: pd.DataFrame, rules: Sequence[dict[str, Sequence[str]]]) -> int:
    """Records of ``frame`` that hold a forbidden combination."""
    hit = np.zeros(len(frame), dtype=bool)
    for rule in rules:
        one = np.ones(len(frame), dtype=bool)
        for col, values in rule.items():
            one &= frame[col].astype(str).isin(values).to_numpy()
        hit |= one
    return int(hit.sum())


#: The private design record of each manifest designed here (by id), for :func:`info_of`.
_RECORDS: dict[int, Any] = {}


def designed(data: Any, names: Sequence[str], *, rng: random.Random | None = None, **settings: Any) -> Manifest:
    """The manifest of a release designed with ``settings``; its private record is kept for :func:`info_of`."""
    m, record = design_planned(data, plan_release(names, **settings), rng=rng)
    _RECORDS[id(m)] = record
    return m


def info_of(m: Manifest) -> dict[str, float]:
    """The information each matrix of ``m`` keeps on the exact data (its private design record)."""
    return dict(_RECORDS[id(m)].to_dict()["information_nats"])


def rule_row(label: str, m: Manifest, released: pd.DataFrame, rules: Sequence[dict[str, Sequence[str]]]
             ) -> dict[str, Any]:
    """One line of a with-rules-against-without table: printed, and returned for the JSON."""
    r = {"cells": len(m.variables[0].matrix.categories), "record_epsilon": eps(m.record_epsilon),
         "design_epsilon": m.ledger.design_epsilon, "information_nats": info_of(m)[m.variables[0].name],
         "released_forbidden": forbidden(released, rules), "guarantee": m.guarantee}
    print(f"{label:<28} {r['cells']:>5} {m.record_epsilon:>10.4g} {r['design_epsilon']:>10.4g} "
          f"{r['information_nats']:>12.4f} {r['released_forbidden']:>18,}")
    return r


def rule_gain(table: dict[str, dict[str, Any]], what: str) -> float:
    """The information gained by the rules, printed with the guarantee of the restricted design."""
    gain = table["joint, --forbid"]["information_nats"] / table["unrestricted joint"]["information_nats"] - 1
    print(f"information gained by the {what}: {100 * gain:+.1f} %")
    print("guarantee (joint, --forbid):", table["joint, --forbid"]["guarantee"])
    return gain


def eps(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


# --- the census --------------------------------------------------------------------------------

def census_examples(rows: int, work: Path) -> dict[str, Any]:
    data = census(rows)
    codebook = {v: CENSUS_VARIABLES[v] for v in ("sex", "age", "marital_status")}
    rules_path = work / "census-rules.csv"
    rules_path.write_text(CENSUS_RULES, encoding="utf-8")
    rules = [{"age": ["0-9"], "marital_status": list(NOT_NEVER_MARRIED)}]
    out: dict[str, Any] = {"rows": rows, "epsilon": CENSUS_EPSILON,
                           "original_breaking_rule": forbidden(data, rules),
                           "persons_0_9": int((data["age"] == "0-9").sum())}
    print(f"\n== census: {rows:,} persons; rule: age 0-9 and marital status other than never married; "
          f"record budget {CENSUS_EPSILON:g}")
    print(f"original records that break the rule: {out['original_breaking_rule']} "
          f"(of {out['persons_0_9']:,} aged 0-9)")

    # 1. the edit rule: joint design over the allowed cells against the unrestricted joint design
    print("\n-- age x marital status, split joint: with the rule against without")
    print(f"{'design':<28} {'cells':>5} {'record eps':>10} {'design eps':>10} {'I(X;Z) nats':>12} "
          f"{'released forbidden':>18}")
    rows_out, manifests = {}, {}
    for label, kw in (("unrestricted joint", {}), ("joint, --forbid", {"forbid": rules_path})):
        m = manifests[label] = designed(data, ["age", "marital_status"], epsilon=CENSUS_EPSILON,
                                              split="joint", categories=codebook, rng=random.Random(SEED), **kw)
        rows_out[label] = rule_row(label, m, perturb_frame(data, m, key=KEY).data, rules)
    gain = rule_gain(rows_out, "rule")
    out["rule"] = rows_out
    out["rule_gain_percent"] = 100 * gain

    # 2. sex as a stratum, against sex perturbed with the others (both with the rule)
    print("\n-- sex as a stratum (--strata sex) against sex perturbed jointly, both with the rule")
    print(f"{'design':<44} {'record eps':>10} {'given structure':>15} {'I on (sex, age, marital)':>25} "
          f"{'sex changed':>11} {'released forbidden':>18}")
    h_sex = entropy(data["sex"].value_counts().to_numpy())
    strata_out = {}
    designs = (
        ("sex, age, marital joint, --forbid", ["sex", "age", "marital_status"], {}),
        ("age, marital joint, --strata sex, --forbid", ["age", "marital_status"], {"strata": "sex"}),
    )
    for label, names, kw in designs:
        m = designed(data, names, epsilon=CENSUS_EPSILON, split="joint", categories=codebook,
                           rng=random.Random(SEED), forbid=rules_path, **kw)
        released = perturb_frame(data, m, key=KEY).data
        name = m.variables[0].name
        r = {"record_epsilon": eps(m.record_epsilon),
             "record_epsilon_given_structure": eps(m.record_epsilon_given_structure),
             "design_epsilon": m.ledger.design_epsilon, "cells": len(m.variables[0].matrix.categories),
             "information_nats": info_of(m)[name], "released_forbidden": forbidden(released, rules),
             "sex_changed": int((released["sex"] != data["sex"]).sum()), "guarantee": m.guarantee}
        strata_out[label] = r
        print(f"{label:<44} {m.record_epsilon:>10.4g} {m.record_epsilon_given_structure:>15.4g} "
              f"{r['information_nats']:>25.4f} {r['sex_changed']:>11,} {r['released_forbidden']:>18,}")
    # sex left out of the design (the rule's design above): released as it is, one matrix for both sexes
    plain = manifests["joint, --forbid"]
    unlisted = exact_information(data, plain, "age*marital_status", released_as_is=["sex"])
    strata_out["age, marital joint, --forbid, sex not listed"] = {
        "record_epsilon": eps(plain.record_epsilon), "information_nats": unlisted}
    print(f"{'age, marital joint, --forbid, sex unlisted':<44} {plain.record_epsilon:>10.4g} {'(not said)':>15} "
          f"{unlisted:>25.4f}")
    # the stratified design at the design budget of the unlisted one (its histogram has half the cells)
    same = designed(data, ["age", "marital_status"], epsilon=CENSUS_EPSILON, split="joint", strata="sex",
                          categories=codebook, rng=random.Random(SEED), forbid=rules_path,
                          design_epsilon=plain.ledger.design_epsilon)
    strata_out["age, marital joint, --strata sex, --forbid, same design epsilon"] = {
        "design_epsilon": same.ledger.design_epsilon, "information_nats": info_of(same)["age*marital_status"]}
    print(f"{'  --strata sex at design epsilon ' + format(plain.ledger.design_epsilon, '.4g'):<44} "
          f"{same.record_epsilon:>10.4g} {same.record_epsilon_given_structure:>15.4g} "
          f"{info_of(same)['age*marital_status']:>25.4f}")
    stratified = strata_out["age, marital joint, --strata sex, --forbid"]
    print(f"design epsilon: {plain.ledger.design_epsilon:.4g} for the {len(plain.variables[0].matrix.categories)} "
          f"cells of sex unlisted, {stratified['design_epsilon']:.4g} for the {stratified['cells']} cells of "
          "--strata sex (the same noise relative to a mean count)")
    print(f"H(sex) = {h_sex:.4f} nats (released exactly by the stratum); information within the strata: "
          f"{stratified['information_nats'] - h_sex:.4f} nats")
    print("guarantee (--strata sex):", stratified["guarantee"])
    out["strata"] = strata_out
    out["h_sex"] = h_sex
    return out


# --- EU-SILC -------------------------------------------------------------------------------------

def prepare_eusilc(source: Path, work: Path) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The banded file: age in bands (-1, born after the income reference period, in 0-15),
    pl030 as text with ``n/a`` where it is missing (every person under 16, and nobody else)."""
    raw = pd.read_csv(source)
    status = raw["pl030"].map(lambda v: "n/a" if pd.isna(v) else str(int(v)))
    frame = pd.DataFrame({
        "db030": raw["db030"].astype(str), "db040": raw["db040"], "hsize": raw["hsize"].astype(str),
        "age": pd.cut(raw["age"], AGE_EDGES, labels=AGE_BANDS).astype(str), "rb090": raw["rb090"],
        "pl030": status,
    })
    frame.to_csv(work / "eusilc.csv", index=False)
    codebook = {
        "db040": sorted(raw["db040"].unique()),  # the nine federal states (laeken's documentation)
        "hsize": [str(k) for k in range(1, 10)],
        "age": list(AGE_BANDS), "rb090": ["female", "male"], "pl030": list(STATUS),
    }
    pd.DataFrame([(v, c) for v, cs in codebook.items() for c in cs], columns=["variable", "category"]).to_csv(
        work / "eusilc-codebook.csv", index=False)
    (work / "eusilc-rules.csv").write_text(EUSILC_RULES, encoding="utf-8")
    missing_under_16 = int((raw["pl030"].isna() & (raw["age"] < 16)).sum())
    missing_16_plus = int((raw["pl030"].isna() & (raw["age"] >= 16)).sum())
    print(f"pl030 missing: {missing_under_16:,} persons under 16 (of {(raw['age'] < 16).sum():,}), "
          f"{missing_16_plus} aged 16 or more; age -1: {(raw['age'] == -1).sum()} persons (in band 0-15)")
    return frame, codebook


def read_released(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def eusilc_examples(source: Path, work: Path) -> dict[str, Any]:
    print(f"\n== EU-SILC (laeken's synthetic eusilc): {source}")
    frame, codebook = prepare_eusilc(source, work)
    data = work / "eusilc.csv"
    rules_path = work / "eusilc-rules.csv"
    rules = [{"age": ["0-15"], "pl030": list(STATUS[:-1])}, {"age": list(AGE_BANDS[1:]), "pl030": ["n/a"]}]
    members = frame.groupby("db030").size()
    out: dict[str, Any] = {
        "persons": len(frame), "households": int(members.size), "epsilon": EUSILC_EPSILON,
        "original_breaking_rules": forbidden(frame, rules),
        "hsize_equals_members": int((frame.groupby("db030")["hsize"].first().astype(int) == members).sum()),
        "h_under_16": entropy((frame["age"] == "0-15").value_counts().to_numpy()),
        "households_of_two_or_more": int((members > 1).sum()),
    }
    print(f"{out['persons']:,} persons in {out['households']:,} households; original records that break a rule: "
          f"{out['original_breaking_rules']}; households whose hsize is their number of records: "
          f"{out['hsize_equals_members']:,}; households of two persons or more: {out['households_of_two_or_more']:,}")

    # 1. edit rules on age x pl030: joint over the allowed cells against the unrestricted joint
    print(f"\n-- age x rb090 x pl030, split joint, record budget {EUSILC_EPSILON:g}: with the rules against without")
    print(f"{'design':<28} {'cells':>5} {'record eps':>10} {'design eps':>10} {'I(X;Z) nats':>12} "
          f"{'released forbidden':>18}")
    joint = {}
    for label, kw in (("unrestricted joint", {}), ("joint, --forbid", {"forbid": rules_path})):
        m = designed(data, ["age", "rb090", "pl030"], epsilon=EUSILC_EPSILON, split="joint",
                           categories=codebook, rng=random.Random(SEED), **kw)
        released = work / f"joint-{len(joint)}.csv"
        apply_file(data, m, released, key=KEY, force=True)
        joint[label] = rule_row(label, m, read_released(released), rules)
    gain = rule_gain(joint, "rules")
    out["rules"] = joint
    out["rules_gain_percent"] = 100 * gain

    # 2. the whole release: households and kept codes (split equal) against the unrestricted design
    names = ["db040", "hsize", "age", "rb090", "pl030"]
    print(f"\n-- {', '.join(names)}, split equal, record budget {EUSILC_EPSILON:g}: "
          "households (db030: db040, hsize) and kept codes (age=0-15, pl030=n/a) against neither")
    structured_kw = {"household": "db030", "household_vars": ["db040", "hsize"],
                     "keep_codes": {"age": "0-15", "pl030": "n/a"}}
    whole = {}
    for label, kw in (("unrestricted", {}), ("households + kept codes", structured_kw)):
        m = designed(data, names, epsilon=EUSILC_EPSILON, categories=codebook, rng=random.Random(SEED), **kw)
        released = work / f"whole-{len(whole)}.csv"
        apply_file(data, m, released, key=KEY, force=True)
        got = read_released(released)
        by_household = got.groupby("db030")
        per_person = {n: exact_information(frame, m, n) for n in names}
        record = info_of(m)
        for n in names:  # the design record counts persons for every variable but the household ones
            if n not in kw.get("household_vars", ()):
                assert abs(per_person[n] - record[n]) < 1e-9, (n, per_person[n], record[n])
        r = {
            "record_epsilon": eps(m.record_epsilon),
            "record_epsilon_given_structure": eps(m.record_epsilon_given_structure),
            "design_epsilon": m.ledger.design_epsilon,
            "epsilon_given_block": {v.name: v.block_epsilon for v in m.variables},
            "information_nats_persons": per_person,
            "information_nats_design_record": record,
            "households_varying": {c: int((by_household[c].nunique() > 1).sum()) for c in ("db040", "hsize")},
            "hsize_not_members": int((by_household["hsize"].first().astype(int) != by_household.size()).sum()),
            "released_forbidden": forbidden(got, rules),
            "released_0_15": int((got["age"] == "0-15").sum()),
            "guarantee": m.guarantee,
        }
        whole[label] = r
    out["whole"] = whole
    u, s = whole["unrestricted"], whole["households + kept codes"]
    print(f"{'variable':<8} {'eps (given block)':>17} {'I unrestricted':>15} {'I structured':>13} "
          f"{'design record':>14}")
    for n in names:
        print(f"{n:<8} {s['epsilon_given_block'][n]:>17.4f} {u['information_nats_persons'][n]:>15.4f} "
              f"{s['information_nats_persons'][n]:>13.4f} {s['information_nats_design_record'][n]:>14.4f}")
    print(f"{'total':<8} {'':>17} {sum(u['information_nats_persons'].values()):>15.4f} "
          f"{sum(s['information_nats_persons'].values()):>13.4f}")
    within = {n: s["information_nats_persons"][n] - out["h_under_16"] for n in ("age", "pl030")}
    out["within_kept_blocks"] = within
    print(f"H(under 16) = {out['h_under_16']:.4f} nats (released exactly by the kept codes); information beyond "
          f"it: age {within['age']:.4f}, pl030 {within['pl030']:.4f} nats")
    print(f"{'check of the released file':<52} {'unrestricted':>12} {'structured':>10}")
    for what, key in (("records with a forbidden combination", "released_forbidden"),
                      ("records released as 0-15 (original: "
                       f"{int((frame['age'] == '0-15').sum()):,})", "released_0_15"),
                      ("households with several released db040", ("households_varying", "db040")),
                      ("households with several released hsize", ("households_varying", "hsize")),
                      ("households whose released hsize is not their size", "hsize_not_members")):
        a, b = ((u[key[0]][key[1]], s[key[0]][key[1]]) if isinstance(key, tuple) else (u[key], s[key]))
        print(f"{what:<52} {a:>12,} {b:>10,}")
    print(f"record epsilon: unrestricted {u['record_epsilon']}, structured {s['record_epsilon']} "
          f"(given the structure {s['record_epsilon_given_structure']}); design step "
          f"{u['design_epsilon']:.4g} and {s['design_epsilon']:.4g}")
    print("guarantee (structured):", s["guarantee"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eusilc", type=Path, default=EUSILC, help="laeken's eusilc as CSV (default: $PRAMKIT_EUSILC, else %(default)s)")
    parser.add_argument("--rows", type=int, default=CENSUS_ROWS, help="census persons (default: %(default)s)")
    parser.add_argument("--write", type=Path, help="also write the prepared inputs of the page's commands here")
    parser.add_argument("--json", type=Path, help="write every figure as JSON")
    args = parser.parse_args()
    t0 = time.perf_counter()
    results: dict[str, Any] = {"seed": SEED, "key_sha256": hashlib.sha256(KEY).hexdigest()}
    with tempfile.TemporaryDirectory(prefix="pramkit-structure-") as tmp:
        work = Path(tmp)
        results["census"] = census_examples(args.rows, work)
        if args.eusilc.is_file():
            results["eusilc"] = eusilc_examples(args.eusilc, work)
        else:
            print(f"\n== EU-SILC skipped: {args.eusilc} does not exist (laeken's eusilc as CSV: give its path "
                  "with --eusilc PATH or PRAMKIT_EUSILC)", file=sys.stderr)
        if args.write is not None:
            args.write.mkdir(parents=True, exist_ok=True)
            census(args.rows).to_csv(work / "census.csv", index=False)
            pd.DataFrame([(v, c) for v in ("sex", "age", "marital_status") for c in CENSUS_VARIABLES[v]],
                          columns=["variable", "category"]).to_csv(work / "census-codebook.csv", index=False)
            for name in ("census.csv", "census-codebook.csv", "census-rules.csv", "eusilc.csv",
                         "eusilc-codebook.csv", "eusilc-rules.csv"):
                if (work / name).exists():
                    shutil.copy(work / name, args.write / name)
            print(f"\nwrote the inputs of the page's commands into {args.write}")
    results["seconds"] = time.perf_counter() - t0
    print(f"\n{results['seconds']:.1f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
