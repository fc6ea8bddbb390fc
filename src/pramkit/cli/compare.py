"""``pramkit compare DATA --hid COL --geo L1,L2 --risk-vars a,b``: record swapping, DP-PRAM and metric PRAM
of the geography side by side at the same share of records changed (:mod:`pramkit.swap.compare`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, figure, print_json
from pramkit.cli.commands import HELP
from pramkit.cli.swap import add_plan_flags, plan_of

#: The rows of the printed table: (field, label).
ROWS = (
    ("share_records_changed", "records changed"),
    ("epsilon", "epsilon of the geography"),
    ("exposed_records_k", "records in cells < k, own area"),
    ("exposed_uniques", "uniques, own area"),
    ("households_exposed", "households with such a unique"),
    ("expected_correct_matches", "expected correct matches"),
    ("area_tvd", "TVD of the area margin"),
    ("area_tvd_corrected", "  corrected by the matrix"),
    ("mean_km_moved", "mean distance moved (km)"),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit compare`` to the subcommands.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["compare", "d.csv", "--hid", "hid", "--geo", "area", "--risk-vars", "age"])
    >>> args.rate, args.k, args.centroids, args.func is run
    (0.05, 3, None, True)
    """
    p = sub.add_parser(
        "compare", help=HELP["compare"],
        description="Swap the geography of DATA (as `pramkit swap`), then perturb its lowest level by DP-PRAM "
                    "(randomized response) and metric PRAM (exponential mechanism over --centroids) tuned to change "
                    "the same share of records, and print risk, utility and guarantee side by side. Private: every "
                    "figure comes from the original file. The file is read whole.",
    )
    add_plan_flags(p, risk_required=True)
    p.add_argument("--centroids", type=Path, help="CSV of the lowest level's areas: category, x, y (km)")
    p.add_argument("--key-file", type=Path, help="secret key file for reproducible runs (`pramkit keygen`)")
    add_na_values(p)
    add_csv_dialect(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit compare`` reads; it writes nothing.

    Examples
    --------
    >>> files(argparse.Namespace(data=Path("d.csv"), key_file=None, centroids=Path("c.csv")))[1]
    []
    """
    return [args.data, args.key_file, args.centroids], []


def run(args: argparse.Namespace) -> int:
    """Compare the methods and print the table (or one JSON object).

    Examples
    --------
    >>> import contextlib, io, os, tempfile
    >>> import numpy as np, pandas as pd
    >>> from pramkit.cli import main
    >>> rng = np.random.default_rng(1)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data = os.path.join(d, "data.csv")
    ...     pd.DataFrame({"hid": range(400), "area": rng.choice(list("abcde"), 400),
    ...                   "age": rng.integers(0, 5, 400)}).to_csv(data, index=False)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["compare", data, "--hid", "hid", "--geo", "area", "--risk-vars", "age", "--rate", "0.2"])
    >>> code, out.getvalue().splitlines()[0].split()[:2]
    (0, ['original', 'swap'])
    """
    import pandas as pd

    from pramkit.io import read_table
    from pramkit.kernel.rng import SecretKey
    from pramkit.swap.compare import compare_swap

    plan = plan_of(args)
    key = SecretKey.from_file(args.key_file) if args.key_file else None
    data = read_table(args.data, columns=plan.columns, na_values=args.na_values, sep=args.sep, encoding=args.encoding)
    centroids = None if args.centroids is None else read_table(args.centroids)  # checked by compare_swap
    result = compare_swap(data, plan, key=key, centroids=centroids)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.compare.result")
        return 0
    names = ["original", "swap", "DP-PRAM", "metric PRAM"][:len(result.methods)]
    table = pd.DataFrame({n: [_cell(m.get(f)) for f, _ in ROWS] for n, m in zip(names, result.methods)},
                         index=[label for _, label in ROWS])
    table.index.name = "method"
    print(table.to_string())
    print(f"{result.rows:,} records, {result.households:,} households; key: {', '.join(result.keys)}; k = {result.k}; "
          f"swap: {result.methods[1]['method']}")
    for n in result.notes:
        print(f"note: {n}")
    return 0


def _cell(value: float | str | None) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else figure(value, 4)
