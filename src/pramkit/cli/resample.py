"""``pramkit resample RELEASED --manifest M.json --out FILE``: an analysis-ready file from a release."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, add_quiet, figure, print_json
from pramkit.cli.commands import HELP

if TYPE_CHECKING:
    from pramkit.resample import ResampleResult


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit resample`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["resample", "released.csv", "--manifest", "m.json", "--out", "r.csv",
    ...                           "--key-file", "secret.key", "--public", "age,sex"])
    >>> str(args.released), str(args.manifest), str(args.out), str(args.key_file), args.public
    ('released.csv', 'm.json', 'r.csv', 'secret.key', 'age,sex')
    >>> args.forbid, args.force, args.na_values, args.func is run
    (None, False, ('NA',), True)
    """
    p = sub.add_parser(
        "resample", help=HELP["resample"],
        description="Redraw each record's perturbed values of RELEASED from their posterior given its released "
        "values and public columns, under a tree model of the original fitted to the release, and write OUT "
        "(same columns and format). Post-processing: the release's guarantee holds for OUT unchanged and no "
        "budget is spent. Keep the release and its manifest beside it: OUT's margins estimate the original's "
        "only as far as the model holds (docs/resample.md). Without --key-file a fresh key is drawn and never saved.",
    )
    p.add_argument("released", type=Path, help="the released file (from `pramkit apply`)")
    p.add_argument("--manifest", required=True, type=Path, help="the manifest published with the release")
    p.add_argument("--out", required=True, type=Path, help="the resampled file (format from its suffix)")
    p.add_argument("--key-file", type=Path, help="secret key file for a reproducible file (`pramkit keygen`)")
    p.add_argument("--public", default=None, metavar="COL[,COL...]",
                   help="the unperturbed columns the model reads, comma-separated ('' for none; default: every "
                        "unperturbed column with at most 100 values)")
    p.add_argument("--forbid", type=Path, default=None,
                   help="edit rules to enforce besides the manifest's (a CSV as for `pramkit design --forbid`)")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    add_na_values(p)
    add_csv_dialect(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit resample`` reads (the release, the manifest, the key file, the rules) and writes (the
    resampled file, its receipt).

    Examples
    --------
    >>> import argparse
    >>> inputs, outputs = files(argparse.Namespace(released=Path("r.csv"), manifest=Path("m.json"),
    ...                                            key_file=None, forbid=None, out=Path("a.csv")))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs]
    (['r.csv', 'm.json'], ['a.csv', 'a.csv.receipt.json'])
    """
    from pramkit.engine.receipt import receipt_path

    return [args.released, args.manifest, args.key_file, args.forbid], [args.out, receipt_path(args.out)]


def print_summary(result: ResampleResult) -> None:
    """Print what ``pramkit resample`` did: the file, the model, the changes and the guarantee.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> import pramkit
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, manifest = os.path.join(d, "data.csv"), os.path.join(d, "m.json")
    ...     pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20, "sex": ["f", "m"] * 50}).to_csv(data, index=False)
    ...     _ = pramkit.Manifest.of({"region": randomized_response([1, 2, 3], 1.0)}).write(manifest)
    ...     _ = pramkit.apply_file(data, manifest, os.path.join(d, "released.csv"), key=bytes(32))
    ...     result = pramkit.resample_release(os.path.join(d, "released.csv"), manifest,
    ...                                       os.path.join(d, "resampled.csv"), key=bytes(32))
    ...     print_summary(result)  # doctest: +ELLIPSIS
    wrote ...resampled.csv: 100 rows in ... s, resampled from the release released.csv
    receipt: ...resampled.csv.receipt.json (public: the release it was resampled from)
    key: the key given by the caller, fingerprint cefdef73c38963ef (draws on a stream of their own)
    model: a tree over region and the public columns sex
      region - sex (0 nats)
      region: ... values redrawn to another value, 0 left as released (missing or released as they were)
    record epsilon: 1 (the release's, unchanged: post-processing)
    ...
    """
    print(f"wrote {result.output}: {result.rows:,} rows in {result.seconds:.2f} s, resampled from the release "
          f"{result.release}")
    if result.receipt:
        print(f"receipt: {result.receipt} (public: the release it was resampled from)")
    print(f"key: {result.key_source}, fingerprint {result.key_fingerprint} (draws on a stream of their own)")
    names = ", ".join(v.name for v in result.variables)
    public = f" and the public columns {', '.join(result.public)}" if result.public else " (no public column)"
    print(f"model: a tree over {names}{public}")
    for e in result.edges:
        print(f"  {e.parent} - {e.child} ({figure(e.mutual_information, 3)} nats"
              f"{', an edit rule ties them' if e.forced else ''})")
    if result.left_out:
        print(f"  not read (too many values; copied as they are): {', '.join(result.left_out)}")
    for v in result.variables:
        print(f"  {v.name}: {v.changed:,} values redrawn to another value, {v.kept_as_released:,} left as released "
              "(missing or released as they were)")
    if result.rules:
        print(f"edit rules: {result.rules}; records breaking one: {result.rule_breaking_released:,} released, "
              f"{result.rule_breaking_resampled:,} resampled")
    if result.impossible:
        print(f"records no allowed combination explains (left as released): {result.impossible:,}")
    print(f"record epsilon: {figure(result.record_epsilon)} (the release's, unchanged: post-processing)")
    print(result.guarantee)


def run(args: argparse.Namespace) -> int:
    """Resample the release, write the file and its receipt, print a summary.

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
        A file is missing or unreadable, the manifest did not make the release, a public column or a
        rule does not fit, or the output exists without ``--force``.
    """
    from pramkit.kernel.rng import SecretKey
    from pramkit.resample import resample_release

    key = SecretKey.from_file(args.key_file) if args.key_file else None
    result = resample_release(args.released, args.manifest, args.out, key=key, public=args.public,
                              forbid=args.forbid, force=args.force, na_values=args.na_values, sep=args.sep,
                              encoding=args.encoding)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.resample.result")
    else:
        print_summary(result)
    return 0
