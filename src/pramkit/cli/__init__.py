"""The ``pramkit`` command.

A thin layer: each subcommand lives in its own module of this package, which
exposes ``register(subparsers)``; the module parses arguments, calls the
Python API and prints its result.  No statistics live here.

Nothing a user can do, and no fault of the machine (a full disk, a read-only
folder), prints a traceback:

* an output that is one of the command's inputs (``files(args)`` of the command's module, checked by
  :func:`pramkit.cli._common.check_files` before any work) is refused, whatever ``--force`` says;
* errors a user can cause (:class:`pramkit.errors.PramkitError`), bad
  command-line arguments, operating-system errors (:class:`OSError`) and
  failures of Spark or Py4J (``--engine spark``: turned into one line by
  :func:`pramkit.engines.spark.engine_error`) print one line
  ``pramkit COMMAND: error: ...`` on stderr and exit with status 2;
* warnings print one line each, ``pramkit COMMAND: note: ...``;
* an interrupt (Ctrl-C, SIGINT) exits with status 130 and SIGTERM with 143,
  after removing the temporary files being written (:mod:`pramkit.atomic`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from pramkit._version import __version__
from pramkit.atomic import file_error
from pramkit.cli._common import check_csv_dialect, check_files, one_line
from pramkit.cli.commands import HELP
from pramkit.errors import PramkitError, PramkitWarning

#: Subcommand modules, in the order ``pramkit --help`` lists them.
COMMANDS = list(HELP)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (and subcommand parsers of the same kind), and
    whose options take a value that begins with ``-`` (``--na-values -9,NA``) as argparse takes
    ``--na-values=-9,NA``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see `{self.prog} --help`)\n")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]  # same signature, typed
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        return super().parse_known_args(None if args is None else dash_values(self, list(args)), namespace)


def dash_values(parser: argparse.ArgumentParser, args: list[str]) -> list[str]:
    """``args`` with each option that takes one value joined to a next word that begins with ``-`` and is
    no option of ``parser`` (``--na-values -9,NA`` becomes ``--na-values=-9,NA``): argparse would take
    that word for an option and refuse the command.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser whose options are read.
    args : list of str
        The command line after the parser's own name.

    Returns
    -------
    list of str
        The same words, some joined; a word after ``--`` is left as it is.

    Examples
    --------
    >>> p = argparse.ArgumentParser(prog="x")
    >>> _ = p.add_argument("--na-values"); _ = p.add_argument("--json", action="store_true")
    >>> dash_values(p, ["--na-values", "-9,NA,.", "--json"])
    ['--na-values=-9,NA,.', '--json']
    >>> dash_values(p, ["--na-values", "--json"])     # an option: the value is missing, as argparse says
    ['--na-values', '--json']
    >>> p.parse_args(dash_values(p, ["--na-values", "-9"])).na_values
    '-9'
    """
    actions = [a for a in parser._actions if a.option_strings]  # argparse keeps them only here
    one = {s for a in actions if a.nargs is None for s in a.option_strings}
    options = {s for a in actions for s in a.option_strings}
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return out + args[i:]
        following = args[i + 1] if i + 1 < len(args) else None
        if (word in one and following is not None and following.startswith("-") and following != "--"
                and not any(o.startswith(following.split("=", 1)[0]) for o in options)):
            out.append(f"{word}={following}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser; only the subcommand named in ``argv`` (all of them when ``argv`` is
    None) is imported and registered in full, the others by their one-line help, so that
    ``pramkit --version`` and ``pramkit --help`` start without importing any library.

    Parameters
    ----------
    argv : sequence of str, optional
        The command line, or only its first word: every subcommand named in it is registered
        in full.  ``None`` registers all of them.

    Returns
    -------
    argparse.ArgumentParser
        The ``pramkit`` parser; a parsed subcommand registered in full sets ``func``, the
        function that runs it.

    Examples
    --------
    >>> parser = build_parser(["keygen"])
    >>> args = parser.parse_args(["keygen", "secret.key"])
    >>> args.command, str(args.file), args.func.__module__
    ('keygen', 'secret.key', 'pramkit.cli.keygen')
    >>> hasattr(parser.parse_args(["inspect"]), "func")      # known by its one-line help only
    False
    >>> hasattr(build_parser(None).parse_args(["inspect", "m.json"]), "func")
    True
    """
    parser = _Parser(
        prog="pramkit",
        description="Post-randomisation (PRAM) of categorical microdata: design, assess, perturb, estimate, report.",
    )
    parser.add_argument("--version", action="version", version=f"pramkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = set(COMMANDS) if argv is None else {a for a in argv if a in HELP}
    for name in COMMANDS:
        if name in wanted:
            importlib.import_module(f"pramkit.cli.{name.replace('-', '_')}").register(sub)
        else:
            sub.add_parser(name, help=HELP[name])
    return parser


def _note_printer(command: str) -> Any:
    """A ``warnings.showwarning`` that prints each warning as one note line."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        text = one_line(str(message)) or category.__name__
        with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing to tell
            print(f"pramkit {command}: note: {text}", file=sys.stderr)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pramkit`` command line and return its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``pramkit`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success (and for ``--help`` and ``--version``); 2 after an error, which is
        one line on stderr; 130 after an interrupt.

    Examples
    --------
    >>> import contextlib, io, os, sys, tempfile
    >>> import pramkit
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     manifest = os.path.join(d, "m.json")
    ...     _ = pramkit.Manifest.of({"region": randomized_response([1, 2, 3], 1.0)}).write(manifest)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["inspect", manifest])
    >>> code, [line for line in out.getvalue().splitlines() if line.startswith("record epsilon")]
    (0, ['record epsilon: 1 (design step plus the perturbation)'])

    Mistakes are one line on stderr, with exit status 2:

    >>> with contextlib.redirect_stderr(sys.stdout):
    ...     main(["inspect"])
    pramkit inspect: error: the following arguments are required: manifest (see `pramkit inspect --help`)
    2
    >>> with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(sys.stdout):
    ...     main(["inspect", os.path.join(d, "absent.json")])  # doctest: +ELLIPSIS
    pramkit inspect: error: manifest '...absent.json' does not exist
    2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[:1] if argv and not argv[0].startswith("-") else [])
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
            check_csv_dialect(args)  # --decimal , in a comma-separated file: refused before any work
            files = getattr(args, "files", None)
            if files is not None:  # before any work: no output is an input (check_files)
                check_files(*files(args))
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
        except Exception as exc:
            from pramkit.engines.spark import engine_error, from_spark

            if not from_spark(exc):
                raise  # a bug in pramkit: its traceback is wanted
            print(f"pramkit {command}: error: {one_line(str(engine_error(exc)))}", file=sys.stderr)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
