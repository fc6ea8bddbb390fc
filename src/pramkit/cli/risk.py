"""``pramkit risk DATA --keys a,b,c``: identification risk of a file (tau1, tau2, per-record risk);
with ``--household COL``, the household-level risk instead (:mod:`pramkit.risk.household`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli._common import Files, add_na_values, note, print_json
from pramkit.cli.commands import HELP
from pramkit.errors import ParameterError

#: Defaults of the options of tau1 and tau2 only, which --household does not take.
_MODEL = "2way"
_FRACTIONS = "cell"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit risk`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["risk", "data.csv", "--keys", "region,sex,age", "--sampling-fraction", "0.05"])
    >>> str(args.data), args.keys, args.sampling_fraction, args.weights, args.func is run
    ('data.csv', 'region,sex,age', 0.05, None, True)
    >>> args.model, args.fractions, args.missing, args.household, args.json
    ('2way', 'cell', 'category', None, False)
    """
    p = sub.add_parser(
        "risk", help=HELP["risk"],
        description="Identification risk of a microdata file on its key variables: sample uniques, "
                    "tau1 and tau2 under a Poisson log-linear model (Skinner and Shlomo 2008), and the "
                    "expected number of re-identifications from the per-record (Benedetti-Franconi) risk. "
                    "With --manifest, DATA is a released file and the risk accounts for its PRAM. "
                    "With --household, the risk that a household is re-identified (any of its members): "
                    "1 - prod(1 - r) over its members' per-record risks r.",
    )
    p.add_argument("data", type=Path, help="the file (CSV, Parquet, Stata .dta, SPSS .sav)")
    p.add_argument("--keys", required=True, help="comma-separated key variables")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--sampling-fraction", type=float, help="the sampling fraction pi in (0, 1]")
    how.add_argument("--weights", help="survey weight column (per-cell pi = f / sum of weights, see --fractions)")
    p.add_argument("--fractions", choices=["cell", "file"], default=_FRACTIONS,
                   help="with --weights: per-cell sampling fractions where the weights determine them "
                        "(default) or one fraction n / sum of weights for every cell")
    p.add_argument("--model", default=_MODEL,
                   help="independence, 2way (default) or a formula such as 'a*b + c'")
    p.add_argument("--manifest", type=Path, help="release manifest: DATA is the released (perturbed) file")
    p.add_argument("--original", type=Path,
                   help="with --manifest: the original file the release was made from (the model is fitted to it)")
    p.add_argument("--household", metavar="COL",
                   help="household id column: report the household-level risk 1 - prod(1 - r) over the members' "
                        "per-record risks r, as sdcMicro's hierarchical risk; with --manifest, the risks after PRAM "
                        "(not with --original, --model, --fractions or --plot)")
    p.add_argument("--missing", choices=["category", "exclude"], default="category",
                   help="missing key values: a category of their own (default) or records excluded")
    p.add_argument("--plot", type=Path, help="write the goodness-of-fit figure (PNG) here")
    p.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    add_na_values(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit risk`` reads (the file, the manifest and its receipt, the original) and writes (``--plot``).

    Examples
    --------
    >>> import argparse
    >>> inputs, outputs = files(argparse.Namespace(data=Path("r.csv"), manifest=None, original=None,
    ...                                            plot=Path("fit.png")))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs]
    (['r.csv'], ['fit.png'])
    """
    from pramkit.engine.receipt import receipt_path

    receipt = receipt_path(args.data) if args.manifest else None
    return [args.data, args.manifest, receipt, args.original], [args.plot]


def run(args: argparse.Namespace) -> int:
    """Print the identification risk of the file on its key variables (or, with ``--household``,
    of its households), as lines of text or one JSON object.

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
        No key column, a missing or unreadable file or column, an option that does not go with
        another (``--original`` without ``--manifest``; ``--household`` with ``--manifest``,
        ``--original``, ``--model``, ``--fractions`` or ``--plot``), or a release of another
        manifest.

    Examples
    --------
    >>> import contextlib, io, json, os, tempfile
    >>> import pandas as pd
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data = os.path.join(d, "data.csv")
    ...     pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20, "sex": ["m", "f"] * 50}).to_csv(data, index=False)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["risk", data, "--keys", "region,sex", "--sampling-fraction", "0.1", "--json"])
    ...     with contextlib.redirect_stdout(io.StringIO()) as text:
    ...         household_code = main(["risk", data, "--keys", "sex", "--sampling-fraction", "0.1",
    ...                                "--household", "region"])
    >>> risk = json.loads(out.getvalue())
    >>> code, risk["n"], risk["cells"], risk["sample_uniques"], round(risk["expected_reidentifications"], 4)
    (0, 100, 6, 0, 0.6383)
    >>> household_code, text.getvalue().splitlines()[1]
    (0, 'households: 3 (largest: 40 records)')
    """
    from pramkit.atomic import check_writable
    from pramkit.engine.receipt import check_release
    from pramkit.manifest import Manifest
    from pramkit.risk.identification import identification_risk
    from pramkit.risk.plots import plot_fit

    keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    if not keys:
        raise ParameterError("--keys needs at least one column name")
    if args.household is not None:
        return _household(args, keys)
    manifest = Manifest.read(args.manifest) if args.manifest else None
    if args.original and not manifest:
        raise ParameterError("--original needs --manifest")
    if args.plot:  # before any work (no input is ever an output: files(), checked by pramkit.cli.main)
        check_writable(args.plot, force=args.force)
    unchecked = check_release(args.data, args.manifest) if manifest is not None else None
    # the files are streamed: memory is bounded by a chunk and the key table
    result = identification_risk(
        args.data, keys, sampling_fraction=args.sampling_fraction, weights=args.weights,
        model=args.model, manifest=manifest, original=args.original, missing=args.missing,
        fractions=args.fractions, na_values=args.na_values,
    )
    out = result.to_dict()
    if args.plot:
        out["plot"] = str(plot_fit(result.model, args.plot, force=args.force))
    note("risk", unchecked)  # after the work: an error stays the only line
    if args.json:
        print_json(out)
        return 0
    fit = result.model
    lines = [
        f"records: {result.n} ({result.excluded} excluded for missing keys; missing keys: {result.missing})",
        f"key cells: {result.cells} ({result.combinations} non-empty)",
        f"sample uniques: {result.sample_uniques} records; doubles: {result.sample_doubles} records",
        f"sampling fraction: {result.sampling_fraction:.6g}",
        f"sampling assumption: {result.sampling_assumption}",
        f"tau1 (sample uniques that are population uniques): {result.tau1:.4f} records",
        f"tau2 (expected correct matches among sample uniques): {result.tau2:.4f} records",
        f"expected re-identifications (per-record risk): {result.expected_reidentifications:.4f} records",
        f"model: {fit.formula}" if len(fit.formula) < 100 else f"model: {args.model} ({len(fit.terms)} terms)",
        f"fit: {fit.iterations} iterations, converged: {fit.converged}, max margin discrepancy "
        f"{fit.max_margin_discrepancy:.3g} records, deviance {fit.deviance:.6g} on {fit.df} df",
        f"perturbed keys: {', '.join(result.perturbed) or 'none'}; model fitted to the {result.fitted_to} counts",
        f"time: {result.seconds:.2f} s",
    ]
    if args.plot:
        lines.append(f"figure: {out['plot']}")
    print("\n".join(lines))
    return 0


def _household(args: argparse.Namespace, keys: list[str]) -> int:
    """``--household COL``: the household-level risk of the file (its to_dict(), or lines of text)."""
    from pramkit.engine.receipt import check_release
    from pramkit.manifest import Manifest
    from pramkit.risk.household import household_risk

    unused = [flag for flag, given in (("--original", args.original),
                                       ("--plot", args.plot), ("--model", args.model != _MODEL),
                                       ("--fractions", args.fractions != _FRACTIONS)) if given]
    if unused:
        raise ParameterError(f"--household does not take {', '.join(unused)}: the household risk combines the "
                             "per-record (Benedetti-Franconi) risks of the file itself (after PRAM with --manifest)")
    manifest = Manifest.read(args.manifest) if args.manifest else None
    unchecked = check_release(args.data, args.manifest) if manifest is not None else None
    result = household_risk(args.data, keys, args.household, sampling_fraction=args.sampling_fraction,
                            weights=args.weights, missing=args.missing, na_values=args.na_values, manifest=manifest)
    note("risk", unchecked)  # after the work: an error stays the only line
    if args.json:
        print_json(result.to_dict())
        return 0
    print("\n".join([
        f"records: {result.n} ({result.excluded} excluded for missing keys; missing keys: {result.missing})",
        f"households: {result.households} (largest: {result.largest_household} records)",
        f"sampling fraction: {result.sampling_fraction:.6g}",
        f"expected re-identifications (per-record risk): {result.expected_reidentifications:.4f} records",
        f"persons in re-identified households (household risk summed over records): "
        f"{result.household_expected_reidentifications:.4f} ({result.household_risk_pct:.4f}% of the records)",
        f"largest household risk: {result.household_risk_max:.4f}",
        f"perturbed keys: {', '.join(result.perturbed) or 'none'}"
        + (" (risks after PRAM: a link is right only where the released keys are the true ones)"
           if result.perturbed else ""),
    ]))
    return 0
