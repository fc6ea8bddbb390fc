"""``pramkit inspect M.json``: what a manifest guarantees, variable by variable, and its ledger."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import figure, print_json
from pramkit.cli.commands import HELP
from pramkit.manifest import Manifest


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help=HELP["inspect"],
                       description="Per variable: categories, epsilon, bistochastic, smallest diagonal entry; "
                       "the design step's epsilon, the record's total epsilon and the guarantee sentence.")
    p.add_argument("manifest", type=Path, help="manifest JSON")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    info = Manifest.read(args.manifest).describe()
    if args.json:
        print_json(info)
        return 0
    width = max(len("variable"), *(len(v["name"]) for v in info["variables"]))
    print(f"{'variable':<{width}}  {'S':>4}  {'epsilon':>10}  {'given block':>11}  {'min diag':>9}  "
          "bistochastic  method")
    for v in info["variables"]:
        print(
            f"{v['name']:<{width}}  {len(v['categories']):>4}  {figure(v['epsilon']):>10}  "
            f"{figure(v.get('epsilon_given_block', v['epsilon'])):>11}  "
            f"{figure(v['min_diagonal']):>9}  {'yes' if v['bistochastic'] else 'no':<12}  {v['method']}"
            + (f"  (strata: {', '.join(v['given'])})" if v.get("given") else "")
            + (f"  (once per household: {v['unit']})" if v.get("unit") else "")
        )
    print(f"perturbation epsilon: {figure(info['perturbation_epsilon'])} (the variables' sum)")
    if info["ledger"] is not None:
        ledger = info["ledger"]
        print(f"design epsilon: {figure(info['design_epsilon'])} (frequencies: {ledger['frequencies']}"
              + (f", prior {ledger['prior']!r}" if ledger["prior"] else "") + ")")
    print(f"record epsilon: {figure(info['record_epsilon'])} (design step plus the perturbation)")
    if "record_epsilon_given_structure" in info:
        print(f"record epsilon given the structure: {figure(info['record_epsilon_given_structure'])} (among records "
              "that agree on the strata and the values never changed)")
    print(info["guarantee"])
    return 0
