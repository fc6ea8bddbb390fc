"""``pramkit attack RELEASED --original ORIGINAL --known A,B``: risk by attack (:mod:`pramkit.risk.attack`).

A reconstruction attack on any released file (the features of the original's persons guessed from the
released records that share their known values), and with ``--manifest`` the exact Bayes ceiling of each
perturbed target.  Private: every figure comes from the original file; the command writes no file and
prints totals only (the per-record guesses stay in the library's result).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, comma_names, figure, print_json
from pramkit.cli.commands import HELP

if TYPE_CHECKING:
    from pramkit.risk.attack import AttackResult


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit attack`` to the subcommands.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["attack", "r.csv", "--original", "o.csv", "--known", "age,sex"])
    >>> args.known, args.target, args.manifest, args.func is run
    ('age,sex', None, None, True)
    """
    p = sub.add_parser(
        "attack", help=HELP["attack"],
        description="Attack RELEASED as an intruder who knows the --known columns of each person of ORIGINAL: "
                    "guess every other feature (or --target) by its most frequent value among the released "
                    "records that agree on the known columns (the nearest ones when none agrees), scored against "
                    "guessing each feature's most frequent value. With --manifest, also the exact Bayes ceiling "
                    "of each perturbed target: the expected share of correct guesses of the best attack that "
                    "sees the person's released record, beside the prior alone. Private: every figure comes "
                    "from the original; no file is written and no record is printed.",
    )
    p.add_argument("released", type=Path, help="the released file (by pramkit or any other tool)")
    p.add_argument("--original", type=Path, required=True, help="the original file (private), same columns")
    p.add_argument("--known", required=True, help="comma-separated columns the attacker knows (quasi-identifiers)")
    p.add_argument("--target", help="comma-separated columns to guess (default: every column not known)")
    p.add_argument("--manifest", type=Path,
                   help="the release's manifest: adds the Bayes ceiling of each perturbed target (the released "
                        "file must hold the original's records in their order)")
    add_na_values(p)
    add_csv_dialect(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit attack`` reads; it writes nothing.

    Examples
    --------
    >>> files(argparse.Namespace(released=Path("r.csv"), original=Path("o.csv"), manifest=None))[1]
    []
    """
    return [args.released, args.original, args.manifest], []


def run(args: argparse.Namespace) -> int:
    """Run the attacks and print their totals (or one JSON object).

    Examples
    --------
    >>> import contextlib, io, os, tempfile
    >>> import pandas as pd
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     o, r = os.path.join(d, "o.csv"), os.path.join(d, "r.csv")
    ...     pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "a", "b", "c"]}).to_csv(o, index=False)
    ...     pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "a", "b", "c"]}).to_csv(r, index=False)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["attack", r, "--original", o, "--known", "age"])
    >>> code, out.getvalue().splitlines()[0]
    (0, 'reconstruction of 4 records (1 feature) from 4 released records, knowing age')
    """
    from pramkit.errors import ParameterError
    from pramkit.io import read_table
    from pramkit.manifest import Manifest
    from pramkit.risk.attack import attack

    known = comma_names(args.known)
    if not known:
        raise ParameterError("--known names no column")
    target = comma_names(args.target) or None
    dialect = {"na_values": args.na_values, "sep": args.sep, "encoding": args.encoding}
    original = read_table(args.original, **dialect)
    released = read_table(args.released, **dialect)
    manifest = None if args.manifest is None else Manifest.read(args.manifest)
    result = attack(original, released, known, target, manifest)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.attack.result")
        return 0
    _print(result)
    return 0


def _print(result: AttackResult) -> None:
    rec = result.reconstruction
    features = len(rec.features)
    print(f"reconstruction of {rec.records:,} records ({features} feature{'s' * (features != 1)}) from "
          f"{rec.released_rows:,} released records, knowing {', '.join(rec.known)}")
    print(f"  records with an exact match: {rec.matched:,}; guessed from the nearest: {rec.nearest:,}")
    print(f"  {'feature':<20} {'attack':>8} {'baseline':>8} {'advantage':>9}")
    for f in rec.per_feature:
        print(f"  {f.feature:<20} {figure(f.accuracy, 4):>8} {figure(f.baseline, 4):>8} {figure(f.advantage, 4):>9}")
    print(f"  {'all':<20} {figure(rec.accuracy, 4):>8} {figure(rec.baseline, 4):>8} {figure(rec.advantage, 4):>9}")
    print(f"  {'all, rarity-weighted':<20} {figure(rec.weighted_accuracy, 4):>8} {figure(rec.weighted_baseline, 4):>8} "
          f"{figure(rec.weighted_advantage, 4):>9}")
    shown: set[tuple[str, ...]] = set()
    for c in result.ceilings:
        if c.target not in shown:
            shown.add(c.target)
            print(f"Bayes ceiling of {', '.join(c.target)} (epsilon {figure(c.epsilon, 4)}, {c.records:,} records; "
                  f"shares of correct guesses, expected / realised)")
        d = c.to_dict()
        print(f"  prior {c.prior}: Bayes {figure(d['share'], 4)} / {figure(d['realised_share'], 4)}, "
              f"prior alone {figure(d['baseline_share'], 4)} / {figure(_share(c.baseline_realised, c.records), 4)}, "
              f"advantage {figure(d['advantage'], 4)}; over every draw {figure(_share(c.correct_over_draws, c.records), 4)}")
    for n in result.notes:
        print(f"note: {n}")


def _share(count: float | None, records: int) -> float | None:
    return None if count is None or not records else count / records
