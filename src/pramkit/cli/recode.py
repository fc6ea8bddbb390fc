"""``pramkit recode DATA --map MAP.json --out FILE``: global recoding before PRAM (:mod:`pramkit.recode`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import add_csv_dialect, add_na_values, add_quiet
from pramkit.cli.commands import HELP


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit recode`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["recode", "data.csv", "--map", "recode.json", "--out", "recoded.csv"])
    >>> str(args.data), str(args.map), str(args.out), args.force, args.func is run
    ('data.csv', 'recode.json', 'recoded.csv', False, True)
    """
    p = sub.add_parser("recode", help=HELP["recode"],
                       description="Merge categories, top or bottom code values and cut numbers into intervals "
                       "before PRAM, as a JSON map declares: {column: {\"merge\": {old: new}, \"top\": {\"above\": T, "
                       "\"value\": V}, \"bottom\": {\"below\": B, \"value\": V}}} or {column: {\"breaks\": [b0, b1, ...], "
                       "\"labels\": [...]}} (intervals (a, b], the lowest [a, b], as sdcMicro's globalRecode). A recoded "
                       "column of numbers stays one when its rule makes numbers only, otherwise it is written as text; "
                       "missing values stay missing and missing codes (--na-values, Stata's .a-.z, SPSS user-missing "
                       "values) are written back as they were. Prints how many values each rule changed.")
    p.add_argument("data", type=Path, help="the data file (CSV, Parquet, Stata, SPSS)")
    p.add_argument("--map", required=True, type=Path, help="the recoding, a JSON file (see above)")
    p.add_argument("--out", required=True, type=Path, help="the recoded file (its suffix gives its format)")
    p.add_argument("--force", action="store_true", help="replace an existing --out")
    add_na_values(p)
    add_csv_dialect(p)
    add_quiet(p)
    p.set_defaults(func=run, files=lambda args: ([args.data, args.map], [args.out]))


def run(args: argparse.Namespace) -> int:
    """Recode ``data`` into ``--out`` (:func:`pramkit.recode.recode_file`) and say how many rows.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (:func:`register`).

    Returns
    -------
    int
        0.

    Examples
    --------
    >>> import contextlib, io, json, os, tempfile
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, rules, out = (os.path.join(d, n) for n in ("a.csv", "r.json", "b.csv"))
    ...     _ = open(data, "w").write("age\\n20\\n85\\n")
    ...     _ = open(rules, "w").write(json.dumps({"age": {"top": {"above": 80, "value": "80+"}}}))
    ...     with contextlib.redirect_stdout(io.StringIO()) as said:
    ...         code = main(["recode", data, "--map", rules, "--out", out])
    ...     print(code, open(out).read().split())
    0 ['age', '20', '80+']
    >>> print(said.getvalue().rstrip())
    recoded 2 rows of a.csv into b.csv
      age: 1 value changed
    """
    from pramkit.recode import Recoding, recode_file

    recoding = Recoding.read(args.map)
    result = recode_file(args.data, args.out, recoding, force=args.force, na_values=args.na_values, sep=args.sep,
                         encoding=args.encoding, quiet=args.quiet, decimal=args.decimal)
    if not args.quiet:
        print(f"recoded {result.rows:,} rows of {args.data.name} into {args.out.name}")
        for column, n in result.changed.items():
            none = " (its rule names no value of the file: nothing recoded)" if n == 0 and result.rows else ""
            print(f"  {column}: {n:,} value{'' if n == 1 else 's'} changed{none}")
    return 0
