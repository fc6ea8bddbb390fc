"""``pramkit new-ids DATA --id HID --out FILE``: a grouping column replaced by keyed random ids, the rows shuffled
(:func:`pramkit.engine.ids.new_ids_file`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, add_quiet, print_json
from pramkit.cli.commands import HELP


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit new-ids`` to the subcommands.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["new-ids", "d.csv", "--id", "hid", "--out", "o.csv", "--key-file", "k"])
    >>> str(args.data), args.id, args.shuffle, args.func is run
    ('d.csv', 'hid', 'households', True)
    """
    from pramkit.defaults import NEW_IDS_SHUFFLES

    p = sub.add_parser("new-ids", help=HELP["new-ids"],
                       description="Replace every distinct value of a grouping column (a household id) by a keyed "
                       "random id 1..H (records share a new id exactly when they shared the old one) and put the rows "
                       "in a keyed random order, so that neither the ids nor the order of the records give the old "
                       "ids back (sdcMicro's createNewID and randomizeRecords). Every other value is written as it "
                       "was read. Writes the released file and its public receipt OUT.new-ids.json, which `pramkit "
                       "audit --manifest OUT.new-ids.json --released OUT` checks. The same key and file give the same "
                       "file.")
    p.add_argument("data", type=Path, help="the data file (CSV, Parquet, Arrow, Stata, SPSS, SAS)")
    p.add_argument("--id", required=True, metavar="COLUMN", help="the grouping column whose values are replaced")
    p.add_argument("--out", required=True, type=Path, help="the released file (its suffix gives its format); its "
                                                           "receipt is written beside it, OUT.new-ids.json")
    p.add_argument("--shuffle", choices=NEW_IDS_SHUFFLES, default="households",
                   help="the order of the rows: households: each id's records together and in their order, the ids "
                        "in increasing order (default); within: the same, each id's records in a keyed order; "
                        "records: every row in a keyed order; none: the rows as they were")
    p.add_argument("--key-file", required=True, type=Path, help="the secret key (`pramkit keygen FILE`): the same key "
                                                                "gives the same ids and order")
    p.add_argument("--force", action="store_true", help="replace an existing --out and its receipt")
    p.add_argument("--json", action="store_true", help="print one JSON object (the summary)")
    add_na_values(p)
    add_csv_dialect(p)
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit new-ids`` reads and writes.

    Examples
    --------
    >>> inputs, outputs = files(argparse.Namespace(data=Path("d.csv"), out=Path("o.csv"), key_file=Path("k")))
    >>> [str(p) for p in inputs], [str(p) for p in outputs]
    (['d.csv', 'k'], ['o.csv', 'o.csv.new-ids.json'])
    """
    from pramkit.engine.ids import receipt_path

    return [args.data, args.key_file], [args.out, receipt_path(args.out)]


def run(args: argparse.Namespace) -> int:
    """Give new ids (:func:`pramkit.engine.ids.new_ids_file`) and print what was done.

    Returns
    -------
    int
        0.

    Examples
    --------
    >>> import contextlib, io, os, tempfile
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, out, key = (os.path.join(d, name) for name in ("a.csv", "b.csv", "k.key"))
    ...     _ = open(data, "w").write("hid,age\\n10,40\\n10,12\\n20,70\\n30,35\\n30,33\\n30,5\\n")
    ...     _ = open(key, "w").write(bytes(range(32)).hex())
    ...     os.chmod(key, 0o600)
    ...     with contextlib.redirect_stdout(io.StringIO()) as said:
    ...         code = main(["new-ids", data, "--id", "hid", "--out", out, "--key-file", key])
    ...     print(code, open(out).read().split())
    0 ['hid,age', '1,70', '2,40', '2,12', '3,35', '3,33', '3,5']
    >>> print(said.getvalue().rstrip())
    wrote b.csv: 6 rows, hid replaced by keyed random ids 1 to 3, the rows in a keyed order (households together)
    receipt: b.csv.new-ids.json
    """
    from pramkit.engine.ids import new_ids_file

    result = new_ids_file(args.data, args.id, args.out, key=args.key_file, shuffle=args.shuffle,
                          na_values=args.na_values, sep=args.sep, encoding=args.encoding, force=args.force)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.new-ids.result")
        return 0
    order = {"households": "the rows in a keyed order (households together)",
             "within": "the rows in a keyed order (households together, their records shuffled)",
             "records": "every row in a keyed order", "none": "the rows in their order"}[result.shuffle]
    print(f"wrote {args.out.name}: {result.rows:,} rows, {result.column} replaced by keyed random ids 1 to "
          f"{result.groups:,}, {order}")
    print(f"receipt: {Path(result.receipt).name}")
    return 0
