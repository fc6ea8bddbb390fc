"""``pramkit report DATA --manifest M.json --released RELEASED --keys a,b,c --out report.html``."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.atomic import check_writable
from pramkit.cli._common import add_quiet
from pramkit.errors import PramkitError
from pramkit.report import build_report, write_report
from pramkit.report.build import DEFAULT_SAMPLING_FRACTION


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="HTML release report: privacy ledger, risk before and after, utility, provenance",
        description="Write one self-contained HTML report of a release: epsilon and beta per variable, "
                    "identification risk (sample uniques, tau1, tau2) and spontaneous recognition before "
                    "and after PRAM, the information kept with frequency charts and privacy-utility curves, "
                    "and the provenance of every matrix.",
    )
    p.add_argument("data", type=Path, help="the original file (CSV, Parquet, Stata .dta, SPSS .sav)")
    p.add_argument("--manifest", required=True, type=Path, help="the release manifest (JSON)")
    p.add_argument("--released", required=True, type=Path, help="the released (perturbed) file")
    p.add_argument("--keys", required=True, help="comma-separated key variables for the risk (3 to 5 are quick)")
    p.add_argument("--out", required=True, type=Path, help="the HTML file to write")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--sampling-fraction", type=float,
                     help=f"the sampling fraction pi in (0, 1] (default: {DEFAULT_SAMPLING_FRACTION:g} assumed, "
                          "and the report says so)")
    how.add_argument("--weights", help="survey weight column, present in both files (pi = n / sum of weights)")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    if not keys:
        raise PramkitError("--keys needs at least one column name")
    check_writable(args.out, force=args.force)
    report = build_report(
        args.data, args.manifest, args.released, keys,
        sampling_fraction=args.sampling_fraction, weights=args.weights, quiet=args.quiet,
    )
    print(write_report(report, args.out, force=args.force))
    return 0
