"""``pramkit inspect M.json``: what a manifest guarantees, variable by variable."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import figure, print_json
from pramkit.manifest import Manifest


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="show the privacy guarantees of a manifest",
                       description="Per variable: categories, epsilon, bistochastic, smallest diagonal entry; "
                       "and the record's total epsilon.")
    p.add_argument("manifest", type=Path, help="manifest JSON")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def inspect_dict(manifest: Manifest) -> dict:
    return {
        "variables": [
            {
                "name": v.name,
                "categories": list(v.matrix.categories),
                "epsilon": v.matrix.epsilon,
                "bistochastic": v.matrix.is_bistochastic,
                "min_diagonal": v.matrix.min_diagonal,
                "truthful": v.matrix.is_truthful,
                "missing": v.missing,
                "method": v.matrix.provenance.method,
            }
            for v in manifest.variables
        ],
        "record_epsilon": manifest.record_epsilon,
    }


def run(args: argparse.Namespace) -> int:
    manifest = Manifest.read(args.manifest)
    info = inspect_dict(manifest)
    if args.json:
        print_json(info)
        return 0
    width = max(len(v["name"]) for v in info["variables"])
    print(f"{'variable':<{width}}  {'S':>4}  {'epsilon':>10}  {'min diag':>9}  bistochastic  method")
    for v in info["variables"]:
        print(
            f"{v['name']:<{width}}  {len(v['categories']):>4}  {figure(v['epsilon']):>10}  "
            f"{figure(v['min_diagonal']):>9}  {'yes' if v['bistochastic'] else 'no':<12}  {v['method']}"
        )
    print(f"record epsilon: {figure(info['record_epsilon'])} (variables perturbed independently: the sum)")
    return 0
