"""``pramkit synthesize DATA --vars A,B --public C --epsilon E --out FILE``: a file useful as it is."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, add_quiet, figure, print_json
from pramkit.cli.commands import HELP

if TYPE_CHECKING:
    from pramkit.synthesize import SynthesisResult


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit synthesize`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["synthesize", "data.csv", "--vars", "a,b", "--public", "age,sex",
    ...                           "--epsilon", "10", "--out", "s.csv", "--key-file", "k.key"])
    >>> args.vars, args.public, args.epsilon, str(args.out), args.min_count, args.manifest
    ('a,b', 'age,sex', 10.0, 's.csv', 2, None)
    """
    p = sub.add_parser(
        "synthesize", help=HELP["synthesize"],
        description="Release every record of DATA with its public columns as they are and the variables --vars "
        "drawn from a model measured with differential privacy: each variable's table given the public cell and "
        "each pair's table, with discrete Laplace noise at shares of --epsilon (central, pure). Writes OUT and "
        "its manifest (the noisy tables, the ledger, the guarantee). Edit rules (--forbid) hold in every record. "
        "Without --key-file a fresh key is drawn and never saved (docs/synthesize.md).",
    )
    p.add_argument("data", type=Path, help="the original file (CSV, Parquet, Stata, SPSS, SAS)")
    p.add_argument("--vars", required=True, metavar="A,B,...",
                   help="the variables to synthesize, comma-separated; a missing value stays missing, as it was "
                        "written (--na-values), and none is made")
    p.add_argument("--public", default="", metavar="COL[,COL...]",
                   help="the columns released as they are, on which the model conditions ('' for none)")
    p.add_argument("--epsilon", required=True, type=float, help="the central budget (nats; at most 700)")
    p.add_argument("--out", required=True, type=Path, help="the released file (format from its suffix)")
    p.add_argument("--manifest", type=Path, default=None,
                   help="where the manifest goes (default: OUT's name with the suffix .synthesis.json)")
    p.add_argument("--key-file", type=Path, help="secret key file for a reproducible release (`pramkit keygen`)")
    p.add_argument("--categories", type=Path, default=None,
                   help="a JSON file: variable -> its declared categories, missing values aside (otherwise read "
                        "from the data, which the ledger says)")
    p.add_argument("--forbid", type=Path, default=None,
                   help="edit rules (a CSV as for `pramkit design --forbid`); they may name public columns")
    p.add_argument("--min-count", type=int, default=2, choices=(1, 2),
                   help="2 (default): each draw is shared by two records of the same public values, so every "
                        "released combination appears at least twice; 1: one draw per record")
    p.add_argument("--model", default="margins", choices=("margins", "pgm"),
                   help="margins (default): each variable's table given the public cell and each pair's, a pool "
                        "raked to them; pgm: 1-, 2- and 3-way tables chosen under the budget (AIM) and a graphical "
                        "model fitted to them (Private-PGM; every column synthesized, --public ''; needs "
                        "pip install \"pramkit[pgm]\")")
    p.add_argument("--max-cells", type=int, default=None, metavar="CELLS",
                   help="with --model pgm: the most cells of the model, its junction tree's cliques added up "
                        "(default 1000000)")
    p.add_argument("--rounds", type=int, default=None, metavar="T",
                   help="with --model pgm: the nominal rounds, each the budget over T until the annealing doubles "
                        "it (default 4 per variable; AIM's 16 per variable measures more tables, each noisier)")
    p.add_argument("--neighbours", default="replace-one", choices=("replace-one", "add-remove"),
                   help="the neighbour relation of the guarantee: replace-one (default; the number of records is "
                        "public, a table's L1 sensitivity 2) or add-remove (with --model pgm only: sensitivity 1, "
                        "and the released file has as many records as the noisy tables estimate)")
    p.add_argument("--delta", type=float, default=None, metavar="D",
                   help="with --model pgm: an (epsilon, delta)-DP guarantee accounted in zero-concentrated DP, as "
                        "AIM states its own (discrete Gaussian tables; delta above 0, at most 0.001, and well below "
                        "one over the number of records; default: none, pure epsilon-DP)")
    p.add_argument("--bins", default=None, metavar="VAR=WIDTH[,...]",
                   help="with --model pgm: ordered numeric variables modelled in bins of their values (AGEP=5: ages "
                        "0-4, 5-9, ..., split where a rule treats ages apart); a record drawn into a bin takes one "
                        "of its values by the noisy 1-way counts (default: none)")
    p.add_argument("--draw", default=None, choices=("auto", "balanced", "systematic"),
                   help="with --model pgm: how the records are drawn from the fitted model: 'balanced' chooses them "
                        "among four times as many draws so that every 3-way table is close to the model's "
                        "(post-processing: the same guarantee); 'systematic' draws along the model's tree only; "
                        "'auto' (default) balances when the pool fits in about 160 MB")
    p.add_argument("--records-per-draw", type=float, default=None, metavar="R",
                   help="with --model pgm and --min-count 1: the records given each draw on average, from 1 to 2 "
                        "(1.25: a quarter of the draws released twice), so that fewer distinct records are released "
                        "(default: 1, or 2 with --min-count 2)")
    p.add_argument("--tables-per-fit", type=int, default=None, metavar="K",
                   help="with --model pgm: the tables chosen and measured between two fits of the model, 1 to 16 "
                        "(default 1, AIM's order; each fit compiles a program of its own, so 3 release up to twice as "
                        "fast, the later tables of a fit chosen by the model as it was at the fit)")
    p.add_argument("--force", action="store_true", help="overwrite OUT and the manifest if they exist")
    add_na_values(p)
    add_csv_dialect(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit synthesize`` reads and writes.

    Examples
    --------
    >>> import argparse
    >>> inputs, outputs = files(argparse.Namespace(data=Path("d.csv"), key_file=None, forbid=None,
    ...                                            categories=None, out=Path("s.csv"), manifest=None))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs]
    (['d.csv'], ['s.csv', 's.synthesis.json'])
    """
    from pramkit.synthesize import manifest_path

    return [args.data, args.key_file, args.forbid, args.categories], [args.out, manifest_path(args.out, args.manifest)]


def print_summary(result: SynthesisResult) -> None:
    """Print what ``pramkit synthesize`` did: the files, the model, the guarantee.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.synthesize import synthesize_release
    >>> df = pd.DataFrame({"sex": ["f", "m"] * 50, "a": ["x", "y", "y", "z"] * 25})
    >>> res = synthesize_release(df, variables="a", public="sex", epsilon=2.0, key=bytes(32),
    ...                          categories={"a": ["x", "y", "z"]})
    >>> print_summary(res)  # doctest: +ELLIPSIS
    synthesized 100 rows in ... s: a drawn from 1 DP table given the public columns sex
    shared draws: ... records take the draw of another record with the same public values
    central epsilon: 2 (pure; the tables' epsilons added, rounded outward)
    Changing one person's record...
    """
    where = f"wrote {result.out} and its manifest {result.manifest_path}: " if result.out else "synthesized "
    given = f" given the public columns {', '.join(result.public)}" if result.public else " (no public column)"
    tables = len(result.measurements)
    chosen = (f" ({len(result.selections)} chosen by the exponential mechanism, a graphical model fitted)"
              if result.model == "pgm" else "")
    print(f"{where}{result.rows:,} rows in {result.seconds:.2f} s: {', '.join(result.variables)} drawn from "
          f"{tables} DP table{'s' if tables != 1 else ''}{chosen}{given}")
    if result.shared_draws:
        print(f"shared draws: {result.shared_draws:,} records take the draw of another record with the same public "
              "values")
    relation = ", add-or-remove neighbours" if result.neighbours == "add-remove" else ""
    led = result.manifest.get("ledger", {})
    if "delta" in led:
        print(f"central epsilon: {figure(result.record_epsilon)}, delta {led['delta']:g} (zCDP{relation}; rho "
              f"{led['rho']:.6g} spent of {led['rho_budget']:.6g})")
    else:
        print(f"central epsilon: {figure(result.record_epsilon)} (pure{relation}; the tables' epsilons added, rounded "
              "outward)")
    print(result.guarantee)


#: The library's keywords that the command spells as flags, in its error messages.
FLAGS = {"max_cells": "--max-cells", "rounds": "--rounds", "delta": "--delta", "bins": "--bins", "draw": "--draw",
         "records_per_draw": "--records-per-draw", "min_count": "--min-count", "tables_per_fit": "--tables-per-fit"}


def as_flags(message: str) -> str:
    """A library error in the command's words: ``max_cells`` and ``min_count`` anywhere, any other keyword of
    :data:`FLAGS` opening it, written as the flag.

    Examples
    --------
    >>> as_flags("rounds must be an integer from 2 to 10000, got 0")
    '--rounds must be an integer from 2 to 10000, got 0'
    >>> as_flags("the rules make 2,000 cells, more than max_cells = 1,000: raise max_cells")
    'the rules make 2,000 cells, more than --max-cells = 1,000: raise --max-cells'
    >>> as_flags("delta 1e-05 is stated")
    '--delta 1e-05 is stated'
    >>> as_flags("bins: the width of AGEP must be a positive integer, got '0'")
    "--bins: the width of AGEP must be a positive integer, got '0'"
    >>> as_flags("tables_per_fit must be a whole number from 1 to 16, got 0")
    '--tables-per-fit must be a whole number from 1 to 16, got 0'
    """
    import re

    message = re.sub(r"(?<![\w-])(max_cells|min_count)\b", lambda m: FLAGS[m.group(1)], message)
    head = message.split(" ", 1)[0].rstrip(":")  # max_cells and min_count opening it are flags already
    return FLAGS[head] + message[len(head):] if head in FLAGS else message


def run(args: argparse.Namespace) -> int:
    """Synthesize the release, write it and its manifest, print a summary.

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
        A missing or unreadable file, a bad setting, a rule that does not fit, or an output that exists
        without ``--force``.
    """
    from pramkit.errors import ParameterError
    from pramkit.kernel.rng import SecretKey
    from pramkit.synthesize import read_categories, synthesize_release
    from pramkit.synthesize_pgm import MAX_CELLS

    key = SecretKey.from_file(args.key_file) if args.key_file else None
    cats = read_categories(args.categories) if args.categories is not None else None
    try:
        result = synthesize_release(args.data, args.out, variables=args.vars, public=args.public,
                                    epsilon=args.epsilon, key=key, categories=cats, forbid=args.forbid,
                                    min_count=args.min_count, manifest_out=args.manifest, force=args.force,
                                    na_values=args.na_values, sep=args.sep, encoding=args.encoding,
                                    decimal=args.decimal, model=args.model,
                                    max_cells=MAX_CELLS if args.max_cells is None else args.max_cells,
                                    neighbours=args.neighbours, rounds=args.rounds, delta=args.delta,
                                    bins=args.bins, draw=args.draw, records_per_draw=args.records_per_draw,
                                    tables_per_fit=args.tables_per_fit, quiet=args.quiet)
    except ParameterError as err:
        raise ParameterError(as_flags(str(err))) from None
    if args.json:
        print_json(result.to_dict(), kind="pramkit.synthesize.result")
    else:
        print_summary(result)
    return 0



