"""``pramkit demo``: a whole release on the built-in census-like data."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pramkit.cli._common import Files, add_quiet
from pramkit.cli.commands import HELP
from pramkit.defaults import NY_ROWS


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit demo`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["demo", "--out", "demo", "--rows", "5000", "--key-file", "secret.key", "-q"])
    >>> str(args.out), args.rows, args.epsilon, str(args.key_file), args.quiet, args.func is run
    ('demo', 5000, 6.0, 'secret.key', True, True)
    >>> args = parser.parse_args(["demo"])                      # the defaults
    >>> str(args.out), args.rows == NY_ROWS, args.key_file, args.force
    ('pramkit-demo', True, None, False)
    """
    p = sub.add_parser("demo", help=HELP["demo"],
                       description="Generate the census-like file, design PRAM matrices for three key variables, "
                       "perturb the file, and write everything into --out.")
    p.add_argument("--out", type=Path, default=Path("pramkit-demo"), help="output folder (default %(default)s)")
    p.add_argument("--rows", type=int, default=NY_ROWS, help="persons to generate (default %(default)s)")
    p.add_argument("--epsilon", type=float, default=6.0, help="record privacy budget (default %(default)s)")
    p.add_argument("--key-file", type=Path, help="secret key file for a reproducible run")
    p.add_argument("--force", action="store_true", help="overwrite files of an earlier demo in --out")
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit demo`` reads (the key file) and writes (``OUT/public`` and ``OUT/private``, or ``OUT``).

    Examples
    --------
    >>> import argparse
    >>> inputs, outputs = files(argparse.Namespace(key_file=Path("k"), out=Path("absent-folder")))
    >>> [str(p) for p in inputs], [str(p) for p in outputs]
    (['k'], ['absent-folder'])
    """
    from pramkit.release.folders import PRIVATE, PUBLIC

    outputs = [args.out / PUBLIC, args.out / PRIVATE] if args.out.is_dir() else [args.out]
    return [args.key_file], outputs


def run(args: argparse.Namespace) -> int:
    """Run the whole demonstration (:func:`pramkit.demo.run_demo`) and print what it did, step by step.

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
    PramkitError
        Bad ``--rows`` or ``--epsilon``, or files of an earlier demo in ``--out`` without ``--force``.

    Examples
    --------
    A demonstration takes seconds (at least 1,000 persons); here only its help and a refusal:

    >>> import contextlib, io, os, sys, tempfile
    >>> from pramkit.cli import main
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     code = main(["demo", "--help"])
    >>> code, "--rows ROWS" in out.getvalue(), "--key-file KEY_FILE" in out.getvalue()
    (0, True, True)
    >>> with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(sys.stdout):
    ...     main(["demo", "--rows", "300", "--out", os.path.join(d, "demo"), "--quiet"])
    ...     os.listdir(d)                                       # nothing written
    pramkit demo: error: --rows must be a whole number of at least 1,000 (the report fits a log-linear model of five keys), got 300
    2
    []
    """
    from pramkit.demo import run_demo
    from pramkit.kernel.rng import SecretKey

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
