"""``pramkit app``: the browser workbench (:mod:`pramkit.app`), started on this machine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pramkit.cli.commands import HELP

#: The line printed when the app's extra is not installed.
NEEDS_EXTRA = 'pramkit app: error: the app needs its extra: pip install "pramkit[app]"'


def port_number(text: str) -> int:
    """A TCP port from the command line: 0 (any free port) to 65535.

    Examples
    --------
    >>> port_number("8765"), port_number("0")
    (8765, 0)
    >>> port_number("http")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: the port must be a whole number from 0 (any free port) to 65535, got 'http'
    """
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"the port must be a whole number from 0 (any free port) to 65535, got {text!r}")
    return port


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit app`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["app"])
    >>> args.host, args.port, args.no_browser, args.data_dir, args.func is run
    ('127.0.0.1', 0, False, None, True)
    >>> parser.parse_args(["app", "--data-dir", "a", "--data-dir", "b"]).data_dir
    [PosixPath('a'), PosixPath('b')]
    >>> args = parser.parse_args(["app", "--port", "8765", "--host", "0.0.0.0", "--no-browser"])
    >>> args.host, args.port, args.no_browser
    ('0.0.0.0', 8765, True)
    """
    p = sub.add_parser("app", help=HELP["app"],
                       description="Start the workbench, a web page that goes through a release step by step "
                       "(data, risk, design, apply, export), and print its URL. It listens on 127.0.0.1 only, "
                       "behind a random token in the URL; stop it with Ctrl-C. Needs the extra: "
                       'pip install "pramkit[app]".')
    p.add_argument("--port", type=port_number, default=0, help="port to listen on (default: any free port)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default %(default)s, this machine only; another interface "
                        "lets other machines reach the app and prints a warning)")
    p.add_argument("--no-browser", action="store_true", help="do not open the browser; open the printed URL yourself")
    p.add_argument("--data-dir", action="append", type=Path, metavar="DIR",
                   help="a folder whose files the page may open by their path (repeat it for several; default: "
                        "the current folder); files elsewhere can still be uploaded")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve the app until Ctrl-C (:func:`pramkit.app.serve.serve`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (:func:`register`).

    Returns
    -------
    int
        0 after Ctrl-C or SIGTERM; 2 when the app's extra is not installed or a data folder does not
        exist (one line on stderr).
    """
    try:
        import shiny  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print(NEEDS_EXTRA, file=sys.stderr)
        return 2
    from pramkit.app.serve import serve

    serve(args.host, args.port, open_browser=not args.no_browser, tell=lambda line: print(line, flush=True),
          data_dirs=args.data_dir)
    return 0
