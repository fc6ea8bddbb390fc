"""The ``pramkit`` command.

A thin layer: each subcommand lives in its own module of this package, which
exposes ``register(subparsers)``; the module parses arguments, calls the
Python API and prints its result.  No statistics live here.

Nothing a user can do, and no fault of the machine (a full disk, a read-only
folder), prints a traceback:

* errors a user can cause (:class:`pramkit.errors.PramkitError`), bad
  command-line arguments and operating-system errors (:class:`OSError`) print
  one line ``pramkit COMMAND: error: ...`` on stderr and exit with status 2;
* warnings print one line each, ``pramkit COMMAND: note: ...``;
* an interrupt (Ctrl-C, SIGINT) exits with status 130 and SIGTERM with 143,
  after removing the temporary files being written (:mod:`pramkit.atomic`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from typing import Any, NoReturn, Sequence

from pramkit._version import __version__
from pramkit.atomic import file_error
from pramkit.cli._common import one_line
from pramkit.errors import PramkitError, PramkitWarning

#: Subcommand modules, in the order ``pramkit --help`` lists them.
COMMANDS = ["demo", "design", "apply", "inspect", "keygen", "reproduce", "estimate", "risk", "report"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (and subcommand parsers of the same kind)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pramkit",
        description="Post-randomisation (PRAM) of categorical microdata: design, assess, perturb, estimate, report.",
    )
    parser.add_argument("--version", action="version", version=f"pramkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"pramkit.cli.{name}").register(sub)
    return parser


def _note_printer(command: str) -> Any:
    """A ``warnings.showwarning`` that prints each warning as one note line."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        text = one_line(str(message)) or category.__name__
        try:
            print(f"pramkit {command}: note: {text}", file=sys.stderr)
        except (OSError, ValueError):  # stderr closed: nothing to tell
            pass

    return show


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed on one line
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    command = args.command
    with warnings.catch_warnings():
        for developer_only in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
            warnings.simplefilter("ignore", developer_only)  # about library versions, not the user's input
        warnings.simplefilter("always", PramkitWarning)
        warnings.showwarning = _note_printer(command)
        try:
            return int(args.func(args) or 0)
        except PramkitError as exc:
            print(f"pramkit {command}: error: {one_line(str(exc))}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"pramkit {command}: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            return 0
        except OSError as exc:
            print(f"pramkit {command}: error: {file_error(exc)}", file=sys.stderr)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
