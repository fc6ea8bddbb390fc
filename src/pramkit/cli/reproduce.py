"""``pramkit reproduce NAME --out DIR``: regenerate a paper's tables and figures."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from pramkit.atomic import make_folder
from pramkit.cli._common import add_quiet, print_json
from pramkit.cli.commands import HELP
from pramkit.errors import PramkitError

#: Reproduction name -> module exposing ``run(out: Path, *, quick: bool, quiet: bool) -> dict``.
REPRODUCTIONS: dict[str, str] = {
    "ayed2020": "pramkit.reproduce.ayed2020",
    "ruiz": "pramkit.reproduce.ruiz",
    "cator": "pramkit.reproduce.cator",
    "shlomo2012": "pramkit.reproduce.shlomo2012",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help=HELP["reproduce"],
                       description="Regenerate the tables and figures of one of the papers pramkit implements.")
    p.add_argument("name", help="which paper: " + (", ".join(sorted(REPRODUCTIONS)) or "(none yet)"))
    p.add_argument("--out", required=True, type=Path, help="folder for the tables (CSV/JSON/Markdown) and figures (PNG)")
    p.add_argument("--quick", action="store_true", help="fewer Monte Carlo repetitions (for smoke tests)")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.name not in REPRODUCTIONS:
        raise PramkitError(f"unknown reproduction {args.name!r}; choose one of {sorted(REPRODUCTIONS)}")
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise PramkitError(f"--out {str(out)!r} exists and is not a folder")
    make_folder(out)
    module = importlib.import_module(REPRODUCTIONS[args.name])
    print_json(module.run(out, quick=args.quick, quiet=args.quiet))
    return 0
