"""``pramkit swap DATA --hid COL --geo L1,L2 --out FILE``: record swapping of the geography
(:mod:`pramkit.swap`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.cli._common import (
    Files,
    add_csv_dialect,
    add_engine_options,
    add_na_values,
    comma_names,
    figure,
    print_json,
)
from pramkit.cli.commands import HELP
from pramkit.release.swap_spec import SwapSpec
from pramkit.settings import add_arguments, from_namespace

if TYPE_CHECKING:
    from pramkit.swap import SwapPlan


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit swap`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["swap", "d.csv", "--hid", "hid", "--geo", "region,area", "--risk-vars",
    ...                           "age,sex", "--similar", "hsize", "--rate", "0.1", "--k", "3", "--out", "r.csv"])
    >>> args.geo, args.risk_vars, args.similar, args.rate, args.k, args.func is run
    ('region,area', 'age,sex', ['hsize'], 0.1, 3, True)
    """
    p = sub.add_parser(
        "swap", help=HELP["swap"],
        description="Targeted record swapping of the geography (Eurostat's method, as sdcMicro's recordSwap): "
                    "households whose cell (area x risk variables) holds fewer than K persons at some level are "
                    "swapped across that level, then households drawn at random in each lowest area up to the "
                    "rate (one swap moves two households). Donors share a similarity profile and lie, with "
                    "--donors same-parent (the default), in another area of the same area above; with --donors "
                    "any-area, in any other area of the level swapped across, risky donors first: sdcMicro "
                    "recordSwap's donor pool, each donor a fresh keyed draw (not recordSwap's scan of one priority "
                    "order with the areas in code order). Without --risk-vars the swap is random and its expected "
                    "matrix and epsilon are "
                    "known (--manifest). Writes OUT and OUT.receipt.json (public: the released file's digest and "
                    "the description of the swap, which names the donor rule), and with --partners the pairs "
                    "(private).",
    )
    add_plan_flags(p, risk_required=False)
    p.add_argument("--out", required=True, type=Path, help="released file (format from its suffix)")
    p.add_argument("--manifest", type=Path,
                   help="write the manifest of a random swap here (its expected matrix, for `pramkit estimate`)")
    p.add_argument("--partners", type=Path,
                   help="write who was swapped with whom here (.csv or .parquet: household id, partner id, level, "
                        "role, each level before and after). PRIVATE: it undoes the swap; keep it with the key, "
                        "never beside the released files. Written only when asked for")
    p.add_argument("--key-file", type=Path, help="secret key file for reproducible runs (`pramkit keygen`)")
    p.add_argument("--force", action="store_true", help="overwrite OUT (and --manifest, --partners) if they exist")
    add_arguments(p, SwapSpec, names=("chunk_rows",))
    add_na_values(p)
    add_csv_dialect(p)
    add_engine_options(p, "the swap drawn here, the records swapped by a Spark job writing a folder of part files")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=run, files=files)


def add_plan_flags(p: argparse.ArgumentParser, *, risk_required: bool) -> None:
    """DATA and the flags of a swap plan (``--hid``, ``--geo``, ``--risk-vars``, ``--similar``, ``--rate``,
    ``--k``), shared by ``swap`` and ``compare``.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_plan_flags(p, risk_required=True)
    >>> plan_of(p.parse_args(["d.csv", "--hid", "h", "--geo", "a,b", "--risk-vars", "age"])).geo
    ('a', 'b')
    """
    p.add_argument("data", type=Path, help="the original file (CSV, Parquet, Stata .dta, SPSS .sav), or a folder of "
                                           "CSV or Parquet part files")
    p.add_argument("--hid", required=True, help="household id column (households move whole)")
    p.add_argument("--geo", required=True, help="comma-separated levels of the geography, highest first")
    p.add_argument("--risk-vars", required=risk_required, default="",
                   help="comma-separated risk variables" + ("" if risk_required else " (none: random swapping)"))
    p.add_argument("--similar", action="append", default=[],
                   help="comma-separated similarity profile a donor must share (household size, ...); repeat the "
                        "flag for fall-back profiles, tried in order")
    add_arguments(p, SwapSpec, names=("rate", "k", "donors"))  # declared once (pramkit.release.swap_spec)


def plan_of(args: argparse.Namespace) -> SwapPlan:
    """The swap plan of the flags of :func:`add_plan_flags` (:meth:`pramkit.release.swap_spec.SwapSpec.plan`)."""
    return from_namespace(SwapSpec, args).plan(args.hid, comma_names(args.geo), risk_vars=comma_names(args.risk_vars),
                                               similar=[comma_names(s) for s in args.similar])


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit swap`` reads (the data, the key file) and writes (the release, its receipt, the manifest).

    Examples
    --------
    >>> inputs, outputs = files(argparse.Namespace(data=Path("d.csv"), key_file=None, out=Path("r.csv"),
    ...                                            manifest=None, partners=Path("pairs.csv")))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs if p]
    (['d.csv'], ['r.csv', 'r.csv.receipt.json', 'pairs.csv'])
    """
    from pramkit.engine.receipt import receipt_path

    return [args.data, args.key_file], [args.out, receipt_path(args.out), args.manifest,
                                        getattr(args, "partners", None)]


def run(args: argparse.Namespace) -> int:
    """Swap the file's households and print a summary (lines of text, or one JSON object).

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
        A parameter out of range, a column missing, a level not nested in the one above, a
        household in two areas, an output that exists without ``--force``.

    Examples
    --------
    >>> import contextlib, io, json, os, tempfile
    >>> import pandas as pd
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data = os.path.join(d, "data.csv")
    ...     pd.DataFrame({"hid": range(40), "region": ["N", "S"] * 20, "hsize": 1}).to_csv(data, index=False)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["swap", data, "--hid", "hid", "--geo", "region", "--similar", "hsize", "--rate", "0.5",
    ...                      "--out", os.path.join(d, "out.csv"), "--json"])
    >>> summary = json.loads(out.getvalue())
    >>> code, summary["households"], summary["swapped_households"], summary["section"]["method"]
    (0, 40, 20, 'random record swapping')
    """
    from pramkit.kernel.rng import SecretKey

    spec = from_namespace(SwapSpec, args)
    spec.check()  # every setting, before anything is read
    plan = plan_of(args)
    key = SecretKey.from_file(args.key_file) if args.key_file else None
    result = spec.swap(args.data, plan, args.out, key=key, manifest=args.manifest, partners=args.partners,
                       force=args.force)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.swap.result")
        return 0
    print(f"wrote {result.output}: {result.rows:,} rows, {result.households:,} households in {result.seconds:.2f} s")
    print(f"receipt: {result.receipt} (public: the released file's digest and the description of the swap)")
    if result.manifest:
        print(f"manifest: {result.manifest} (the expected matrix of the swap, for `pramkit estimate`)")
    if result.partners:
        print(f"partners: {result.partners} (PRIVATE: who was swapped with whom; keep it with the key)")
    print(f"donors: {plan.donors}: {result.section['donor_rule']}")
    print(f"key: {result.key_source}, fingerprint {result.key_fingerprint}")
    print(f"swapped: {result.swapped_households:,} households ({figure(100 * result.swapped_households / result.households, 3)} %), "
          f"{result.swapped_records:,} records; the rate asks for {result.quota:,} swaps")
    print("targeted (risky) households swapped per level: "
          + ", ".join(f"{lvl} {n:,}" for lvl, n in zip(plan.geo, result.targeted)))
    if result.unswappable:
        print(f"unswappable: {result.unswappable:,} households selected found no donor sharing a similarity profile")
    print(f"guarantee: {result.section['guarantee']}")
    return 0
