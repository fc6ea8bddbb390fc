"""``pramkit audit --manifest M [--released R] [--original O] [--key-file K] [--engine] [--backend B] [--json]``:
prove that what was applied is what was published (:func:`pramkit.audit.audit`).

``--engine`` (a flag) asks for the black-box audit of the perturbation engine; where the release audit's
passes over records run is ``--backend {local,spark}`` (with ``--spark-master``), the choice the other
commands name ``--engine``."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import Files, _markers, add_csv_dialect, print_json
from pramkit.cli.commands import HELP


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit audit`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["audit", "--manifest", "m.json", "--released", "r.csv", "--engine"])
    >>> str(args.manifest), str(args.released), args.original, args.key_file, args.engine, args.json
    ('m.json', 'r.csv', None, None, True, False)
    >>> args.backend, args.spark_master
    ('local', 'local[2]')
    """
    p = sub.add_parser(
        "audit", help=HELP["audit"],
        description="Audit a release. The manifest (with the released file and its receipt) is the public audit: "
                    "every stated epsilon, the ledger, the certificates and the receipt recomputed. Adding the "
                    "original gives the release audit (transitions against the matrices, impossible moves, "
                    "unperturbed columns); adding the key derives the release again. --engine measures an "
                    "empirical epsilon lower bound of the real engine. Exit status 0: all checks pass; 1: a violation.",
    )
    p.add_argument("--manifest", type=Path, required=True, help="the published manifest")
    p.add_argument("--released", type=Path, help="the released file, or folder of part files (its receipt is read "
                                                   "from beside it)")
    p.add_argument("--original", type=Path, help="the original file (private): adds the release audit")
    p.add_argument("--key-file", type=Path, help="the secret key: derive the release again and compare byte for byte")
    p.add_argument("--engine", action="store_true", help="black-box audit of the engine (empirical epsilon)")
    add_backend_options(p)
    p.add_argument("--na-values", type=_markers, default=None, metavar="TEXT[,TEXT...]",
                   help="texts the release read as missing, comma-separated ('' for none; default: what the "
                        "manifest records)")
    add_csv_dialect(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, files=files)


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--spark-master``: where the release audit's passes over records run (``--engine`` of
    ``pramkit audit`` is the black-box audit of the perturbation engine, a flag).

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_backend_options(parser)
    >>> args = parser.parse_args(["--backend", "spark", "--spark-master", "spark://head:7077"])
    >>> args.backend, args.spark_master
    ('spark', 'spark://head:7077')
    """
    from pramkit.validate import ENGINES, SPARK_MASTER

    parser.add_argument("--backend", metavar="{" + ",".join(ENGINES) + "}", default=ENGINES[0],
                        help="where the release audit's passes over the original and released records run: local: "
                             "streamed on this machine (default); spark: aggregated by Spark jobs (CSV or Parquet "
                             "files, or folders of part files), the same checks and messages")
    parser.add_argument("--spark-master", default=SPARK_MASTER,
                        help="Spark master URL for --backend spark (default %(default)s)")


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit audit`` reads (it writes nothing).

    Examples
    --------
    >>> inputs, outputs = files(argparse.Namespace(manifest=Path("m.json"), released=None, original=None,
    ...                                            key_file=None))
    >>> [str(p) for p in inputs if p], outputs
    (['m.json'], [])
    """
    return [args.manifest, args.released, args.original, args.key_file], []


def run(args: argparse.Namespace) -> int:
    """Run the audits the flags ask for and print every check and the verdict (or one JSON object).

    Returns
    -------
    int
        0 when every check passes, 1 when one fails.

    Examples
    --------
    >>> import contextlib, io, os, tempfile
    >>> from pramkit.cli import main
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.manifest import Manifest
    >>> with tempfile.TemporaryDirectory() as d:
    ...     m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(os.path.join(d, "m.json"))
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["audit", "--manifest", str(m)])
    >>> code, out.getvalue().splitlines()[-1]
    (0, 'audit: all 10 checks passed (manifest)')
    """
    from pramkit.audit import audit

    result = audit(args.manifest, released=args.released, original=args.original, key=args.key_file,
                   engine=args.engine, sep=args.sep, encoding=args.encoding, backend=args.backend,
                   spark_master=args.spark_master, na_values=args.na_values)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.audit.result")
    else:
        print("\n".join([*(c.line() for c in result.checks), result.verdict()]))
    return 0 if result.passed else 1
