"""``pramkit estimate RELEASED --manifest M.json --vars a[,b] [--by c]``: tables with standard errors."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from pramkit.cli._common import print_json
from pramkit.estimate import EstimateResult, EstimationWarning, estimate_table
from pramkit.manifest import Manifest


def _names(text: str | None) -> list[str]:
    return [] if not text else [s.strip() for s in text.split(",") if s.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate", help="estimate original frequencies (with standard errors) from a released file",
        description="Estimate the original frequency table of some columns of a released file, "
                    "using the PRAM matrices of its manifest. Columns not in the manifest are "
                    "taken as unperturbed.",
    )
    p.add_argument("released", type=Path, help="the released file (CSV, Parquet, Stata, SPSS)")
    p.add_argument("--manifest", required=True, type=Path, help="the release manifest (JSON)")
    p.add_argument("--vars", required=True, help="column(s) to tabulate, comma-separated")
    p.add_argument("--by", help="grouping column(s), comma-separated: proportions become shares within groups")
    p.add_argument("--method", choices=("moment", "mle"), default="moment",
                   help="moment: unbiased (M^T)^-1 lambda (default); mle: maximum likelihood by EM")
    p.add_argument("--variance", choices=("multinomial", "pram"), default="multinomial",
                   help="multinomial: inference on the population sampled (default); "
                        "pram: on the original file itself (PRAM the only randomness)")
    p.add_argument("--confidence", type=float, default=0.95, help="level of the intervals (default 0.95)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    names, groups = _names(args.vars), _names(args.by)
    manifest = Manifest.read(args.manifest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EstimationWarning)  # the result carries the note
        result = estimate_table(args.released, manifest, names, by=groups or None, method=args.method,
                                variance=args.variance, confidence=args.confidence)
    if result.table.note:
        print(f"pramkit estimate: note: {result.table.note}", file=sys.stderr)
    if result.table.converged is False:
        print(f"pramkit estimate: warning: EM did not converge after {result.table.iterations} iterations",
              file=sys.stderr)
    if args.json:
        print_json({"released_file": str(args.released), **result.to_dict()})
    else:
        print(format_table(result))
    return 0


def format_table(result: EstimateResult) -> str:
    """A readable table: counts in records, proportions in percent."""
    t = result.table
    level = f"{100 * result.confidence:g}%"
    share = "share within by-group" if result.by else "share of all records"
    head = [
        f"Estimated original frequencies of {' x '.join(result.variables)}",
        f"method: {t.method}; variance: {t.variance}; n = {t.n} records"
        + (f" ({result.dropped} rows with a missing value left out)" if result.dropped else ""),
    ]
    if t.iterations is not None:
        head.append(f"EM: {t.iterations} updates, log-likelihood within {t.loglik_gap:.2g} nats of its maximum")
    frame = result.to_frame()
    out = frame[list(result.variables)].copy()
    out["released [records]"] = frame["released"].map("{:.0f}".format)
    out["estimate [records]"] = frame["estimate"].map("{:.1f}".format)
    out["se [records]"] = frame["se"].map("{:.1f}".format)
    out[f"{level} CI [records]"] = [f"{lo:.1f} .. {hi:.1f}" for lo, hi in zip(frame["ci_low"], frame["ci_high"])]
    out[f"{share} [%]"] = (100 * frame["proportion"]).map("{:.2f}".format)
    out["se [%]"] = (100 * frame["proportion_se"]).map("{:.2f}".format)
    out[f"{level} CI [%]"] = [f"{100 * lo:.2f} .. {100 * hi:.2f}"
                             for lo, hi in zip(frame["proportion_ci_low"], frame["proportion_ci_high"])]
    return "\n".join(head) + "\n\n" + out.to_string(index=False)
