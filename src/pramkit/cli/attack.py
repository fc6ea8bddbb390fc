"""``pramkit attack RELEASED --original ORIGINAL --known A,B``: risk by attack (:mod:`pramkit.risk.attack`).

A reconstruction attack on any released file (the features of the original's persons guessed from the
released records that share their known values), a linkage attack (unique records found exactly, the
distance to the closest released record against a holdout: :mod:`pramkit.risk.attack_linkage`), and with
``--manifest`` the exact Bayes ceiling of each perturbed target, then the figures in plain words
(:mod:`pramkit.risk.attack_words`).  Private: every figure comes from the original file; the command
prints totals only and writes a file only with ``--per-record`` (the linkage per record, mode 0600, never
inside a ``public`` folder).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, comma_names, figure, print_json
from pramkit.cli.commands import HELP

if TYPE_CHECKING:
    from pramkit.risk.attack import AttackResult
    from pramkit.risk.attack_linkage import LinkageResult


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit attack`` to the subcommands.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["attack", "r.csv", "--original", "o.csv", "--known", "age,sex"])
    >>> args.known, args.target, args.manifest, args.holdout, args.per_record, args.func is run
    ('age,sex', None, None, None, None, True)
    """
    p = sub.add_parser(
        "attack", help=HELP["attack"],
        description="Attack RELEASED as an intruder who knows the --known columns of each person of ORIGINAL: "
                    "guess every other feature (or --target) by its most frequent value among the released "
                    "records that agree on the known columns (the nearest ones when none agrees), scored against "
                    "guessing each feature's most frequent value. With --manifest, also the exact Bayes ceiling "
                    "of each perturbed target: the expected share of correct guesses of the best attack that "
                    "sees the person's released record, beside the prior alone. The linkage: records unique on "
                    "the known columns (and on all columns) found in the release, and each record's distance to "
                    "the closest released record (share of columns that differ) against its distance to a "
                    "holdout (a keyed half of the original, or --holdout). Private: every figure comes from the "
                    "original; no record is printed, and only --per-record writes a file.",
    )
    p.add_argument("released", type=Path, help="the released file (by pramkit or any other tool)")
    p.add_argument("--original", type=Path, required=True, help="the original file (private), same columns")
    p.add_argument("--known", required=True, help="comma-separated columns the attacker knows (quasi-identifiers)")
    p.add_argument("--target", help="comma-separated columns to guess (default: every column not known)")
    p.add_argument("--manifest", type=Path,
                   help="the release's manifest: adds the Bayes ceiling of each perturbed target (the released "
                        "file must hold the original's records in their order)")
    p.add_argument("--holdout", type=Path,
                   help="records of the same population not used to make the release (the original's columns); "
                        "default: a keyed random half of the original is held out")
    p.add_argument("--key-file", type=Path,
                   help="key of the holdout half and of the samples, for a reproducible run (`pramkit keygen`); "
                        "default a fresh key")
    p.add_argument("--no-linkage", action="store_true",
                   help="leave the linkage attack out (it compares every original record with every released one)")
    p.add_argument("--per-record", type=Path, metavar="FILE",
                   help="write the linkage per record of the original to this CSV file (private, mode 0600; "
                        "refused inside a public/ folder)")
    p.add_argument("--force", action="store_true", help="overwrite the --per-record file if it exists")
    add_na_values(p)
    add_csv_dialect(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit attack`` reads, and the per-record file it writes when asked.

    Examples
    --------
    >>> files(argparse.Namespace(released=Path("r.csv"), original=Path("o.csv"), manifest=None))[1]
    [None]
    """
    inputs = [args.released, args.original, args.manifest, getattr(args, "holdout", None),
              getattr(args, "key_file", None)]
    return inputs, [getattr(args, "per_record", None)]


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
    from pramkit.atomic import check_writable
    from pramkit.errors import ParameterError
    from pramkit.io import read_table
    from pramkit.kernel.rng import SecretKey
    from pramkit.manifest import Manifest
    from pramkit.risk.attack import attack
    from pramkit.risk.attack_linkage import refuse_public, write_per_record

    known = comma_names(args.known)
    if not known:
        raise ParameterError("--known names no column")
    target = comma_names(args.target) or None
    inputs = files(args)[0]
    if args.no_linkage and (args.per_record or args.holdout or args.key_file):
        raise ParameterError("--per-record, --holdout and --key-file are for the linkage: leave out --no-linkage")
    if args.per_record is not None:  # before any work
        refuse_public(args.per_record)
        check_writable(args.per_record, force=args.force, inputs=inputs)
    key = SecretKey.from_file(args.key_file) if args.key_file else None
    dialect = {"na_values": args.na_values, "sep": args.sep, "encoding": args.encoding}
    original = read_table(args.original, **dialect)
    released = read_table(args.released, **dialect)
    holdout = None if args.holdout is None else read_table(args.holdout, **dialect)
    manifest = None if args.manifest is None else Manifest.read(args.manifest)
    result = attack(original, released, known, target, manifest, linkage=not args.no_linkage, holdout=holdout,
                    key=key)
    if args.per_record is not None and result.linkage is not None:
        write_per_record(result.linkage, args.per_record, force=args.force, inputs=inputs)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.attack.result")
        return 0
    _print(result, args.per_record)
    return 0


def _print(result: AttackResult, per_record: Path | None = None) -> None:
    from pramkit.ledger import GIVEN_STRUCTURE
    from pramkit.risk.attack_words import attack_sentences

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
            print(f"Bayes ceiling of {', '.join(c.target)} (epsilon {figure(c.epsilon, 4)}"
                  + ("" if c.epsilon_given_structure is None else
                     f"; {figure(c.epsilon_given_structure, 4)} {GIVEN_STRUCTURE}")
                  + f", {c.records:,} records; shares of correct guesses, expected / realised)")
        d = c.to_dict()
        print(f"  prior {c.prior}: Bayes {figure(d['share'], 4)} / {figure(d['realised_share'], 4)}, "
              f"prior alone {figure(d['baseline_share'], 4)} / {figure(_share(c.baseline_realised, c.records), 4)}, "
              f"advantage {figure(d['advantage'], 4)}; over every draw {figure(_share(c.correct_over_draws, c.records), 4)}")
        print(f"    reading {', '.join(c.conditioned_on) or 'nothing'} of the released record"
              + ("" if not c.not_conditioned_on else f", not {', '.join(c.not_conditioned_on)}"))
    if result.linkage is not None:
        _print_linkage(result.linkage)
    for n in result.notes:
        print(f"note: {n}")
    print("in plain words:")
    for sentence in attack_sentences(result):
        print(f"  {sentence}")
    if per_record is not None:
        print(f"per-record linkage: {per_record} (PRIVATE: it names records of the original)")


def _print_linkage(link: LinkageResult) -> None:
    print(f"linkage on {len(link.columns)} columns (DCR: share of columns differing from the closest released "
          f"record)")
    print(f"  unique on the known columns: {link.unique_on_known:,}; found in the release: "
          f"{link.unique_on_known_found:,} (one released record: {link.unique_on_known_linked:,})")
    print(f"  unique records: {link.unique_records:,}; found exactly: {link.unique_records_found:,}")
    print(f"  DCR to the release: median {figure(link.median_dcr, 4)}, share at 0 {figure(link.share_at_zero, 4)}")
    held = "a keyed half of the original" if link.holdout == "keyed half" else "the holdout file"
    print(f"  against {held} ({link.attacked:,} records compared, {link.compared:,} in each set): closer to the "
          f"release {figure(link.closer_to_release, 4)}, to the holdout {figure(link.closer_to_holdout, 4)}, "
          f"tied {figure(link.tied, 4)}")


def _share(count: float | None, records: int) -> float | None:
    return None if count is None or not records else count / records
