"""``pramkit report DATA --manifest M.json --released RELEASED --keys a,b,c --out internal.html [--public public.html]``.

The internal report (``--out``) is computed from the original file and stays with the data holder;
the public report (``--public``) shows only the manifest and figures computed from the released file
and may be published.  Without DATA only the public report is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import add_quiet
from pramkit.errors import ParameterError


def register(sub: argparse._SubParsersAction) -> None:
    from pramkit.report.build import DEFAULT_SAMPLING_FRACTION

    p = sub.add_parser(
        "report", help="HTML release reports: internal (risk before and after) and public (ledger, estimates)",
        description="Write the internal HTML report of a release (--out: epsilon and beta per variable, "
                    "identification risk and spontaneous recognition before and after PRAM, the information "
                    "kept, provenance; computed from the original file, so private) and, with --public, a "
                    "public report (the ledger, the matrices and estimates from the released file only).",
    )
    p.add_argument("data", nargs="?", type=Path,
                   help="the original file (CSV, Parquet, Stata .dta, SPSS .sav); needed for --out")
    p.add_argument("--manifest", required=True, type=Path, help="the release manifest (JSON)")
    p.add_argument("--released", required=True, type=Path, help="the released (perturbed) file")
    p.add_argument("--keys", help="comma-separated key variables for the risk (3 to 5 are quick); needed for --out")
    p.add_argument("--out", type=Path, help="the internal HTML report to write (private)")
    p.add_argument("--public", type=Path, metavar="OUT", help="the public HTML report to write (publishable)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--sampling-fraction", type=float,
                     help=f"the sampling fraction pi in (0, 1] (default: {DEFAULT_SAMPLING_FRACTION:g} assumed, "
                          "and the report says so)")
    how.add_argument("--weights", help="survey weight column, present in both files (pi = n / sum of weights)")
    p.add_argument("--force", action="store_true", help="overwrite the reports if they exist")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pramkit.atomic import check_writable
    from pramkit.report import build_public_report, build_report, write_report

    if args.out is None and args.public is None:
        raise ParameterError("give --out (the internal report, with DATA and --keys) and/or --public OUT")
    if args.out is not None and (args.data is None or not args.keys):
        raise ParameterError("the internal report (--out) needs the original file DATA and --keys")
    if args.out is None and args.data is not None:
        raise ParameterError("DATA is only read for the internal report: add --out, or leave DATA out")
    if args.out is not None and args.public is not None and args.out.resolve() == args.public.resolve():
        raise ParameterError("--out and --public must be different files")
    inputs = [x for x in (args.data, args.manifest, args.released) if x is not None]
    for out in (args.out, args.public):
        if out is not None:
            check_writable(out, force=args.force, inputs=inputs)
    written = []
    if args.out is not None:
        keys = [k.strip() for k in args.keys.split(",") if k.strip()]
        if not keys:
            raise ParameterError("--keys needs at least one column name")
        report = build_report(args.data, args.manifest, args.released, keys,
                              sampling_fraction=args.sampling_fraction, weights=args.weights, quiet=args.quiet)
        written.append(f"{write_report(report, args.out, force=args.force)} (internal: do not publish)")
    if args.public is not None:
        public = build_public_report(args.manifest, args.released, quiet=args.quiet)
        written.append(f"{write_report(public, args.public, force=args.force)} (public: may be published)")
    for line in written:
        print(line)
    return 0
