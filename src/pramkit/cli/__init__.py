"""The ``pramkit`` command.

A thin layer: each subcommand lives in its own module of this package, which
exposes ``register(subparsers)``; the module parses arguments, calls the
Python API and prints its result.  No statistics live here.

Errors a user can cause (:class:`pramkit.errors.PramkitError`) print one line
on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from pramkit._version import __version__
from pramkit.errors import PramkitError

#: Subcommand modules, in the order ``pramkit --help`` lists them.
COMMANDS = ["demo", "design", "apply", "inspect", "keygen", "reproduce", "estimate", "risk", "report"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pramkit",
        description="Post-randomisation (PRAM) of categorical microdata: design, assess, perturb, estimate, report.",
    )
    parser.add_argument("--version", action="version", version=f"pramkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"pramkit.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PramkitError as exc:
        print(f"pramkit {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"pramkit {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
