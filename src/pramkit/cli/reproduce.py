"""``pramkit reproduce NAME --out DIR``: regenerate a paper's tables and figures."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import TypedDict

from pramkit.atomic import make_folder
from pramkit.cli._common import add_quiet, print_json
from pramkit.cli.commands import HELP
from pramkit.errors import ParameterError, WriteError

#: Reproduction name -> module exposing ``run(out: Path, *, quick: bool, quiet: bool) -> dict``.
REPRODUCTIONS: dict[str, str] = {
    "ayed2020": "pramkit.reproduce.ayed2020",
    "ruiz": "pramkit.reproduce.ruiz",
    "cator": "pramkit.reproduce.cator",
    "shlomo2012": "pramkit.reproduce.shlomo2012",
}


class ReproduceOutput(TypedDict):
    """What ``pramkit reproduce NAME`` prints (``pramkit.reproduce.result``; the JSON Schema is made from
    it, :mod:`pramkit.outputs`): the files written; the other fields depend on the reproduction."""

    files: list[str] | dict[str, str]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit reproduce`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["reproduce", "ruiz", "--out", "tables", "--quick"])
    >>> args.name, str(args.out), args.quick, args.quiet, args.func is run
    ('ruiz', 'tables', True, False, True)
    """
    p = sub.add_parser("reproduce", help=HELP["reproduce"],
                       description="Regenerate the tables and figures of one of the papers pramkit implements.")
    p.add_argument("name", help="which paper: " + (", ".join(sorted(REPRODUCTIONS)) or "(none yet)"))
    p.add_argument("--out", required=True, type=Path, help="folder for the tables (CSV/JSON/Markdown) and figures (PNG)")
    p.add_argument("--quick", action="store_true", help="fewer Monte Carlo repetitions (for smoke tests)")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Regenerate one paper's tables and figures into ``--out`` and print its summary as JSON.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (:func:`register`).

    Returns
    -------
    int
        0.

    Raises
    ------
    ParameterError
        An unknown reproduction.
    WriteError
        ``--out`` exists and is not a folder.

    Examples
    --------
    >>> import contextlib, io, json, os, sys, tempfile
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["reproduce", "ruiz", "--out", os.path.join(d, "ruiz"), "--quick", "--quiet"])
    ...     written = sorted(os.listdir(os.path.join(d, "ruiz")))
    >>> code, written
    (0, ['ruiz_table1.csv', 'ruiz_table1.md'])
    >>> json.loads(out.getvalue())["beta_pct"]["Differential privacy epsilon = 5"]    # Table 1: 17 %
    16.76
    >>> with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(sys.stdout):
    ...     main(["reproduce", "nobody2099", "--out", d])
    pramkit reproduce: error: unknown reproduction 'nobody2099'; choose one of ['ayed2020', 'cator', 'ruiz', 'shlomo2012']
    2
    """
    if args.name not in REPRODUCTIONS:
        raise ParameterError(f"unknown reproduction {args.name!r}; choose one of {sorted(REPRODUCTIONS)}")
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise WriteError(f"--out {str(out)!r} exists and is not a folder")
    module = importlib.import_module(REPRODUCTIONS[args.name])  # before the folder: a missing extra stops here
    make_folder(out)
    print_json(module.run(out, quick=args.quick, quiet=args.quiet), kind="pramkit.reproduce.result")
    return 0
