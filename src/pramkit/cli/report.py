"""``pramkit report DATA --manifest M.json --released RELEASED --keys a,b,c --out internal.html [--public public.html]``.

The internal report (``--out``) is computed from the original file and stays with the data holder;
the public report (``--public``) shows only the manifest and figures computed from the released file
and may be published.  Without DATA only the public report is written.

For variables with distances between their categories (``--distances``, by default those the manifest
names), both reports show how far values move (expected distance, share kept, share moved at most
``--within``) beside randomized response at the same epsilon.

For a release designed to a target (``pramkit design --target``), ``--design-record`` gives the
internal report the private design record: it then draws the risk-utility map of the budgets the
search explored (:mod:`pramkit.report.rumap`).  The public report never shows it.

With ``--attack-known A,B``, the internal report attacks the released file as an intruder who knows those
columns of each person of DATA (:func:`pramkit.report.build.attack_figures`, as ``pramkit attack --manifest``):
the figures in plain words beside the guarantee, and the most exposed records.  The public report never shows it.

The released file is checked against the manifest by its receipt (:func:`pramkit.engine.receipt.check_release`):
a release made with another manifest is refused, and a release without a receipt gets a note.  Whenever
DATA is given, a "release" identical to it in every perturbed column is refused; without DATA, the public
report is written only from a file whose receipt shows it is a release (no receipt, or a file changed since
its receipt, may be the original itself: refused).  The reports never
overwrite an input: DATA, the manifest, the released file or its receipt, or the design record.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pramkit.cli._common import Files, add_csv_dialect, add_na_values, add_quiet, comma_names, distance_files, note
from pramkit.cli.commands import HELP
from pramkit.errors import DataError, ParameterError, PramkitError


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit report`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["report", "data.csv", "--manifest", "m.json", "--released", "released.csv",
    ...                           "--keys", "region,sex", "--out", "internal.html", "--public", "public.html",
    ...                           "--distances", "region=ordinal", "--within", "region=1"])
    >>> str(args.data), str(args.released), args.keys, str(args.out), str(args.public), args.func is run
    ('data.csv', 'released.csv', 'region,sex', 'internal.html', 'public.html', True)
    >>> args.distances, args.within, args.sampling_fraction, args.attack_known
    (['region=ordinal'], ['region=1'], None, None)
    >>> args = parser.parse_args(["report", "--manifest", "m.json", "--released", "released.csv",
    ...                           "--public", "public.html"])   # the public report alone
    >>> args.data, args.out, str(args.public)
    (None, None, 'public.html')
    """
    from pramkit.defaults import DEFAULT_SAMPLING_FRACTION

    p = sub.add_parser(
        "report", help=HELP["report"],
        description="Write the internal HTML report of a release (--out: epsilon and beta per variable, "
                    "identification risk and spontaneous recognition before and after PRAM, the information "
                    "kept, provenance; computed from the original file, so private) and, with --public, a "
                    "public report (the ledger, the matrices and estimates from the released file only).",
    )
    p.add_argument("data", nargs="?", type=Path,
                   help="the original file (CSV, Parquet, Stata .dta, SPSS .sav); needed for --out; with "
                        "--public alone it is only read to check that the release is not the original")
    p.add_argument("--manifest", required=True, type=Path, help="the release manifest (JSON)")
    p.add_argument("--released", required=True, type=Path, help="the released (perturbed) file")
    p.add_argument("--keys", help="comma-separated key variables for the risk (3 to 5 are quick); needed for --out")
    p.add_argument("--out", type=Path, help="the internal HTML report to write (private)")
    p.add_argument("--public", type=Path, metavar="OUT", help="the public HTML report to write (publishable)")
    p.add_argument("--release-note", type=Path, metavar="FILE",
                   help="a one-page release note in Five Safes terms to write (publishable: built from the "
                        "manifest and the released file's column names only); Markdown (.md) or HTML (.html) "
                        "by the suffix")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--sampling-fraction", type=float,
                     help=f"the sampling fraction pi in (0, 1] (default: {DEFAULT_SAMPLING_FRACTION:g} assumed, "
                          "and the report says so)")
    how.add_argument("--weights", help="survey weight column, present in both files (pi = n / sum of weights)")
    p.add_argument("--distances", action="append", metavar="[VAR=]ordinal|FILE",
                   help="distances between the categories of a variable ('ordinal' or a CSV: category,x,y; "
                        "category,lat,lon; category,neighbour; from,to,distance), for the variables whose "
                        "manifest names distances (all, if none does), or VAR=SPEC, repeatable (default: the "
                        "distances the manifest names)")
    p.add_argument("--within", action="append", metavar="[VAR=]R",
                   help="radius of the share of records moved at most R, in the distances' unit, or VAR=R, "
                        "repeatable (default: the median distance between nearest categories)")
    p.add_argument("--contributions", action="store_true",
                   help="with --out: also what each key variable and level contributes to the risk (SUDA, tau1, "
                        "tau2, individual risk) before and after PRAM, and the epsilon each variable spends")
    p.add_argument("--design-record", type=Path, metavar="FILE",
                   help="with --out, for a release designed to a target (`pramkit design --target`): its private "
                        "design record (OUT_STEM.design-record.json); the internal report then draws the "
                        "risk-utility map of the budgets the search explored")
    p.add_argument("--attack-known", metavar="A,B,...",
                   help="with --out: attack the released file as an intruder who knows these columns of each person "
                        "of the original (as `pramkit attack --manifest`): the internal report adds the risk by "
                        "attack (reconstruction against the margins alone, the Bayes ceiling, linkage, the most "
                        "exposed records); the public report never shows it")
    p.add_argument("--force", action="store_true", help="overwrite the reports if they exist")
    add_na_values(p)
    add_csv_dialect(p)
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit report`` reads (the original, the manifest, the release and its receipt, the
    distance files given or named by the manifest) and writes (``--out``, ``--public``, ``--release-note``).

    Examples
    --------
    >>> import argparse
    >>> inputs, outputs = files(argparse.Namespace(
    ...     data=None, manifest=Path("absent.json"), released=Path("r.csv"), distances=["area=areas.csv"],
    ...     out=None, public=Path("p.html")))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs if p]
    (['absent.json', 'r.csv', 'r.csv.receipt.json', 'area=areas.csv', 'areas.csv'], ['p.html'])
    """
    from pramkit.engine.receipt import receipt_path
    from pramkit.manifest import Manifest

    try:  # the distances the manifest names are read too (a manifest that cannot be read is reported later)
        named = distance_files(Manifest.read(args.manifest).input.get("distances"))
    except PramkitError:
        named = []
    record = getattr(args, "design_record", None)  # a folder is no design record: refused when read, in its words
    inputs = [args.data, args.manifest, args.released, receipt_path(args.released),
              *distance_files(args.distances), *named, None if record is None or Path(record).is_dir() else record]
    return inputs, [args.out, args.public, getattr(args, "release_note", None)]


def run(args: argparse.Namespace) -> int:
    """Write the internal report (``--out``) and/or the public report (``--public``) and print their paths.

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
        Neither ``--out`` nor ``--public``; ``--out`` without DATA or ``--keys``; ``--attack-known`` without
        ``--out`` or naming a column not in both files; ``--design-record``
        without ``--out``, or a record that is missing, not a design record, without a target, or of
        another manifest or original file; a report over
        an input or an existing file without ``--force``; a release of another manifest, or one
        identical to DATA in its perturbed columns.

    Examples
    --------
    >>> import contextlib, io, os, sys, tempfile
    >>> import pandas as pd
    >>> import pramkit
    >>> from pramkit.cli import main
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, manifest, released, public = (os.path.join(d, name) for name in
    ...                                         ("data.csv", "m.json", "released.csv", "public.html"))
    ...     pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20, "sex": ["m", "f"] * 50}).to_csv(data, index=False)
    ...     _ = pramkit.Manifest.of({"region": randomized_response([1, 2, 3], 1.0)}).write(manifest)
    ...     _ = pramkit.apply_file(data, manifest, released, key=bytes(32), quiet=True)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["report", "--manifest", manifest, "--released", released, "--public", public,
    ...                      "--quiet"])
    ...     with open(public, encoding="utf-8") as f:
    ...         html = f.read()
    ...     with contextlib.redirect_stderr(sys.stdout):
    ...         main(["report", "--manifest", manifest, "--released", released,
    ...               "--out", os.path.join(d, "internal.html")])
    pramkit report: error: the internal report (--out) needs the original file DATA and --keys
    2
    >>> code, out.getvalue().strip().endswith("public.html (public: may be published)"), html.lstrip()[:15].lower()
    (0, True, '<!doctype html>')
    """
    from pramkit.atomic import check_writable
    from pramkit.engine.receipt import check_release, receipt_path
    from pramkit.manifest import Manifest
    from pramkit.report import build_public_report, build_report, release_note, write_release_note, write_report
    from pramkit.report.release_note import note_format

    if args.out is None and args.public is None and args.release_note is None:
        raise ParameterError("give --out (the internal report, with DATA and --keys), --public OUT and/or "
                             "--release-note FILE")
    if args.release_note is not None:
        note_format(args.release_note)  # a suffix it cannot write, before any work
    if args.out is not None and (args.data is None or not args.keys):
        raise ParameterError("the internal report (--out) needs the original file DATA and --keys")
    if args.contributions and args.out is None:
        raise ParameterError("--contributions goes with --out: the contributions read the original file, so only "
                             "the internal report shows them")
    attack_known = comma_names(getattr(args, "attack_known", None)) or None
    if getattr(args, "attack_known", None) is not None and not attack_known:
        raise ParameterError("--attack-known names no column")
    if attack_known and args.out is None:
        raise ParameterError("--attack-known goes with --out: the attack reads the original file, so only the "
                             "internal report shows it")
    if args.design_record is not None and args.out is None:
        raise ParameterError("--design-record goes with --out: the design record is computed from the original "
                             "file, so only the internal report shows its risk-utility map")
    # no input is ever an output: files(), checked by pramkit.cli.main
    for out in (args.out, args.public, args.release_note):
        if out is not None:
            check_writable(out, force=args.force)
    keys = comma_names(args.keys)
    if args.out is not None and not keys:
        raise ParameterError("--keys needs at least one column name")
    unchecked = check_release(args.released, args.manifest)  # refuses a release of another manifest
    if unchecked and args.public is not None and args.data is None:  # the original given as the release?
        raise DataError(
            f"cannot tell that {str(args.released)!r} is a release and not the original file, and the public report "
            f"publishes what it computes from it ({unchecked}); give the file `pramkit apply` wrote, with its receipt "
            f"{receipt_path(args.released).name} beside it, or also the original file as DATA, so that the two are "
            "compared")
    manifest = Manifest.read(args.manifest)
    names = [v.name for v in manifest.variables]
    locality = {"distances": per_variable(args.distances, names, str, "--distances"),
                "within": per_variable(args.within, names, _radius, "--within")}
    written = []
    if args.out is not None:
        report = build_report(args.data, manifest, args.released, keys,
                              sampling_fraction=args.sampling_fraction, weights=args.weights, quiet=args.quiet,
                              na_values=args.na_values, contributions=args.contributions, sep=args.sep,
                              encoding=args.encoding, design_record=args.design_record, decimal=args.decimal,
                              attack_known=attack_known, **locality)
        written.append(f"{write_report(report, args.out, force=args.force)} (internal: do not publish)")
    if args.public is not None:
        public = build_public_report(manifest, args.released, original=args.data, quiet=args.quiet,
                                     na_values=args.na_values, weights=args.weights, sep=args.sep,
                                     encoding=args.encoding, decimal=args.decimal, **locality)
        written.append(f"{write_report(public, args.public, force=args.force)} (public: may be published)")
    if args.release_note is not None:
        five_safes = release_note(args.manifest, args.released, sep=args.sep, encoding=args.encoding)
        path = write_release_note(five_safes, args.release_note, force=args.force,
                                  inputs=(args.data, args.manifest, args.released))
        written.append(f"{path} (release note: may be published)")
    for line in written:
        print(line)
    note("report", unchecked)  # after the work: an error stays the only line
    return 0


def _radius(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--within needs a number (the distances' unit), got {text!r}") from None


def per_variable(items: Sequence[str] | None, names: Sequence[str], convert: Callable[[str], Any],
                 option: str) -> Any:
    """One value for every variable (``VALUE``) or ``{variable: value}`` (``VAR=VALUE`` items);
    ``None`` without items.  ``VAR=`` is recognised only for a variable of the manifest.

    Examples
    --------
    >>> per_variable(["area=areas.csv", "age=ordinal"], ["area", "age"], str, "--distances")
    {'area': 'areas.csv', 'age': 'ordinal'}
    >>> per_variable(["5"], ["area"], float, "--within")
    5.0
    """
    if not items:
        return None
    named: dict[str, Any] = {}
    bare = []
    for item in items:
        name, sep, value = item.partition("=")
        if sep and name in names:
            if name in named:
                raise ParameterError(f"{option} gives {name!r} twice")
            named[name] = convert(value)
        else:
            bare.append(item)
    if bare and (named or len(bare) > 1):
        raise ParameterError(f"{option}: give one value for every variable or VAR=VALUE items, not both "
                             f"({', '.join(items)})")
    return named if named else convert(bare[0])
