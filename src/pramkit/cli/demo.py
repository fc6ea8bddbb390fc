"""``pramkit demo``: a whole release on the built-in census-like data."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pramkit.cli._common import add_quiet
from pramkit.cli.commands import HELP
from pramkit.defaults import NY_ROWS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help=HELP["demo"],
                       description="Generate the census-like file, design PRAM matrices for three key variables, "
                       "perturb the file, and write everything into --out.")
    p.add_argument("--out", type=Path, default=Path("pramkit-demo"), help="output folder (default %(default)s)")
    p.add_argument("--rows", type=int, default=NY_ROWS, help="persons to generate (default %(default)s)")
    p.add_argument("--epsilon", type=float, default=6.0, help="record privacy budget (default %(default)s)")
    p.add_argument("--key-file", type=Path, help="secret key file for a reproducible run")
    p.add_argument("--force", action="store_true", help="overwrite files of an earlier demo in --out")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pramkit.demo import run_demo
    from pramkit.rng import SecretKey

    key = SecretKey.from_file(args.key_file) if args.key_file else None
    t0 = time.perf_counter()
    chatty = not args.quiet and sys.stderr.isatty()
    result = run_demo(
        args.out, rows=args.rows, epsilon=args.epsilon, key=key, force=args.force, quiet=args.quiet,
        progress_callback=(lambda step: print(f"[{step}]", file=sys.stderr)) if chatty else None,
    )
    print("pramkit demo")
    for line in result.lines:
        print(line)
    for folder, says in (("public", "safe to publish"), ("private", "never publish")):
        names = [path.split("/", 1)[1] for path in result.files.values() if path.startswith(folder + "/")]
        print(f"{folder + '/':<9} {', '.join(names)} ({says})")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0
