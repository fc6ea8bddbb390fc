"""``pramkit suppress DATA --keys A,B --k 3 --out FILE``: local suppression to k-anonymity (:mod:`pramkit.suppress`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, add_quiet, comma_names, note, print_json
from pramkit.cli.commands import HELP
from pramkit.release.suppress_spec import SuppressSpec
from pramkit.settings import add_arguments


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit suppress`` to the subcommands.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["suppress", "d.csv", "--keys", "a,b", "--k", "3", "--out", "o.csv"])
    >>> str(args.data), args.keys, args.k, args.missing, args.method, args.func is run
    ('d.csv', 'a,b', 3, 'own', 'auto', True)
    """
    p = sub.add_parser("suppress", help=HELP["suppress"],
                       description="Make key values missing until every combination of the key variables appears at "
                       "least k times (k-anonymity, as sdcMicro's localSuppression/kAnon), suppressing as few values "
                       "as an exact integer program (SciPy's HiGHS) proves, or a greedy heuristic with a lower bound "
                       "where the program is too large. Writes the released file (a suppressed value is the file's "
                       "missing value: an empty field in CSV) and its public receipt OUT.suppression.json, which "
                       "`pramkit audit --manifest OUT.suppression.json --released OUT` checks. The suppressions per "
                       "key are printed (private), never written to a public file.")
    p.add_argument("data", type=Path, help="the data file (CSV, Parquet, Stata, SPSS)")
    p.add_argument("--keys", required=True, metavar="A,B,...", help="the key variables, comma-separated")
    p.add_argument("--k", required=True, type=int, help="every combination of the keys appears at least k times "
                                                         "(at least 2, at most the file's rows)")
    p.add_argument("--out", required=True, type=Path, help="the released file (its suffix gives its format); its "
                                                           "receipt is written beside it, OUT.suppression.json")
    # the optional settings, declared once with the app's form and the reproducing script's command
    add_arguments(p, SuppressSpec, names=("missing", "strata", "importance", "method", "time_limit"))
    p.add_argument("--force", action="store_true", help="replace an existing --out and its receipt")
    p.add_argument("--json", action="store_true", help="print one JSON object (the private summary)")
    add_na_values(p)
    add_csv_dialect(p)
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit suppress`` reads and writes.

    Examples
    --------
    >>> inputs, outputs = files(argparse.Namespace(data=Path("d.csv"), out=Path("o.csv")))
    >>> [str(p) for p in inputs], [str(p) for p in outputs]
    (['d.csv'], ['o.csv', 'o.csv.suppression.json'])
    """
    from pramkit.suppress import receipt_path

    return [args.data], [args.out, receipt_path(args.out)]


def run(args: argparse.Namespace) -> int:
    """Suppress (:func:`pramkit.suppress.suppress_file`) and print what was done.

    Returns
    -------
    int
        0.

    Examples
    --------
    >>> import contextlib, io, os, tempfile
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, out = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
    ...     _ = open(data, "w").write("a,b\\nx,p\\nx,p\\nx,q\\ny,q\\ny,q\\n")
    ...     with contextlib.redirect_stdout(io.StringIO()) as said:
    ...         code = main(["suppress", data, "--keys", "a,b", "--k", "2", "--missing", "own", "--out", out])
    ...     print(code, open(out).read().split())
    0 ['a,b', 'x,p', 'x,p', ',q', ',q', ',q']
    >>> print(said.getvalue().rstrip())
    suppressed 3 values of 5 rows of a.csv into b.csv: 2-anonymous in a, b (a missing value is a value of its own)
      exact: 3 suppressions, the fewest (proven)
      a: 3 values suppressed
      b: 0 values suppressed
    receipt: b.csv.suppression.json
    """
    from pramkit.ledger import MISSING_RULE_WORDS
    from pramkit.suppress import suppress_file

    strata = list(args.strata) if args.strata else None
    importance = list(args.importance) if args.importance is not None else None
    result = suppress_file(args.data, comma_names(args.keys), args.k, args.out, importance=importance, strata=strata,
                           missing=args.missing, method=args.method, time_limit=args.time_limit,
                           na_values=args.na_values, sep=args.sep, encoding=args.encoding, force=args.force)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.suppress.result")
        return 0
    rule = MISSING_RULE_WORDS[args.missing]
    print(f"suppressed {result.total:,} values of {result.rows:,} rows of {args.data.name} into {args.out.name}: "
          f"{result.k}-anonymous in {', '.join(result.keys)} ({rule})")
    if result.optimal:
        print(f"  {result.method}: {result.total:,} suppressions, the fewest (proven)")
    else:
        gap = "inf" if result.gap == float("inf") else f"{100 * result.gap:.1f}%"
        print(f"  {result.method}: {result.total:,} suppressions; the fewest are at least {result.lower_bound:,} "
              f"(gap {gap})")
    for key, n in result.suppressed.items():
        print(f"  {key}: {n:,} value{'' if n == 1 else 's'} suppressed")
    print(f"receipt: {Path(result.receipt).name}")
    if args.missing == "any" and result.blank_records:
        note("suppress", f"{result.blank_records} records have every key missing: under --missing any they match "
                         "every record, which is how few suppressions reach k-anonymity; --missing own counts "
                         "them as a combination of their own")
    return 0
