"""``pramkit apply DATA --manifest M.json --out OUT``: perturb a file."""

from __future__ import annotations

import argparse
from pathlib import Path

from typing import TYPE_CHECKING

from pramkit.cli._common import add_na_values, add_quiet, figure, print_json
from pramkit.cli.commands import HELP
from pramkit.defaults import CHUNK_ROWS

if TYPE_CHECKING:
    from pramkit.perturb import ApplyResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "apply", help=HELP["apply"],
        description="Perturb the manifest's variables of DATA (CSV, Parquet, Stata, SPSS) and write OUT. "
        "Without --key-file a fresh key is drawn from the operating system and never saved.",
    )
    p.add_argument("data", type=Path, help="the original file")
    p.add_argument("--manifest", required=True, type=Path, help="manifest JSON (from `pramkit design`)")
    p.add_argument("--out", required=True, type=Path, help="released file (format from its suffix)")
    p.add_argument("--key-file", type=Path, help="secret key file for reproducible runs (`pramkit keygen`)")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    p.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS, help="rows per chunk (memory bound; default %(default)s)")
    add_na_values(p)
    p.add_argument("--threads", type=int, default=None,
                   help="threads that perturb a chunk (default: every core; the release is the same for any number)")
    p.add_argument("--engine", choices=["local", "spark"], default="local",
                   help="local: streamed on this machine (default); spark: a Spark job writing a folder of part files")
    p.add_argument("--spark-master", default="local[2]", help="Spark master URL for --engine spark (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_quiet(p)
    p.set_defaults(func=run)


def print_summary(result: ApplyResult) -> None:
    print(f"wrote {result.output}: {result.rows:,} rows in {result.seconds:.2f} s")
    if result.receipt:
        print(f"receipt: {result.receipt} (public: which manifest made the release)")
    print(f"key: {result.key_source}, fingerprint {result.key_fingerprint}")
    for v in result.variables:
        print(
            f"  {v.name}: {v.changed:,} values changed ({figure(100 * v.changed_share, 3)} % of non-missing), "
            f"{v.missing:,} missing left as they were",
        )
    if not result.variables:
        print(f"  perturbed: {', '.join(result.perturbed)} (changes are not counted on Spark)")
    print(f"record epsilon: {figure(result.record_epsilon)} (the manifest's: design step plus the perturbed "
          "variables)")


def run(args: argparse.Namespace) -> int:
    from pramkit.perturb import apply_file
    from pramkit.rng import SecretKey

    key = SecretKey.from_file(args.key_file) if args.key_file else None
    if args.engine == "spark":
        from pramkit.engines.spark import apply_file_spark

        result = apply_file_spark(args.data, args.manifest, args.out, key=key, force=args.force,
                                  master=args.spark_master, quiet=args.quiet, na_values=args.na_values)
    else:
        result = apply_file(
            args.data, args.manifest, args.out, key=key, force=args.force,
            chunk_rows=args.chunk_rows, quiet=args.quiet, na_values=args.na_values, threads=args.threads,
        )
    if args.json:
        print_json(result.to_dict())
    else:
        print_summary(result)
    return 0
