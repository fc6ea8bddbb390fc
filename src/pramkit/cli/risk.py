"""``pramkit risk DATA --keys a,b,c``: identification risk of a file (tau1, tau2, per-record risk);
with ``--household COL``, the household-level risk instead (:mod:`pramkit.risk.household`); with
``--suda``, the SUDA2 special uniques (:mod:`pramkit.risk.suda`); with ``--contributions``, what each
key variable and level contributes to the risk, before and after PRAM (:mod:`pramkit.risk.contributions`); with
``--k-anonymity K`` / ``--l-diversity S``, the records and cells below K and the l-diversity
(:mod:`pramkit.risk.kanonymity`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.cli._common import Files, add_csv_dialect, add_engine_options, add_na_values, comma_names, note, print_json
from pramkit.cli.commands import HELP
from pramkit.defaults import CONTRIBUTION_REPLICATES
from pramkit.errors import ParameterError
from pramkit.release.risk_spec import FRACTIONS as _FRACTIONS
from pramkit.release.risk_spec import MODEL as _MODEL
from pramkit.release.risk_spec import RiskSpec
from pramkit.settings import add_arguments, from_namespace

if TYPE_CHECKING:
    from pramkit.ledger import Guarantee
    from pramkit.risk.contributions import ReleaseContributions

#: Defaults of the options of tau1 and tau2 only, which --household does not take.

#: Without --suda, one of the two is needed (--suda takes a sampling fraction only for DIS-SUDA).
_FRACTION_REQUIRED = ("one of --sampling-fraction (the file's sampling fraction) and --weights (its weight column) "
                      "is required")


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
                    "1 - prod(1 - r) over its members' per-record risks r. "
                    "With --k-anonymity K, the records and cells below K (sdcMicro's kAnon_violations and "
                    "riskyCells); with --l-diversity S, the distinct and entropy l of sensitive variables within "
                    "the classes of the keys (sdcMicro's ldiversity).",
    )
    p.add_argument("data", type=Path, help="the file (CSV, Parquet, Stata .dta, SPSS .sav)")
    p.add_argument("--keys", required=True, help="comma-separated key variables")
    # every risk setting declared once (pramkit.release.risk_spec), its flags in the order --help lists them
    add_arguments(p.add_mutually_exclusive_group(), RiskSpec, names=("sampling_fraction", "weights"))
    add_arguments(p, RiskSpec, names=("fractions", "model"))
    p.add_argument("--manifest", type=Path, help="release manifest: DATA is the released (perturbed) file")
    p.add_argument("--original", type=Path,
                   help="with --manifest: the original file the release was made from (the model is fitted to it)")
    add_arguments(p, RiskSpec, names=("household", "missing", "suda", "contributions", "max_size", "max_steps",
                                      "replicates"))
    add_arguments(p, RiskSpec, names=("k_anonymity", "max_dim", "l_diversity", "l_threshold", "missing_rule"))
    p.add_argument("--plot", type=Path, help="write the goodness-of-fit figure (PNG) here")
    p.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    add_na_values(p)
    add_csv_dialect(p)
    add_engine_options(p, "the key table and weight sums aggregated by Spark (CSV or Parquet), the same figures")
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
    from pramkit._extras import require_extra
    from pramkit.atomic import check_writable
    from pramkit.engine.receipt import check_release
    from pramkit.manifest import Manifest
    from pramkit.risk.identification import identification_risk
    from pramkit.risk.plots import RISK_PLOT, plot_fit

    keys = comma_names(args.keys)
    if not keys:
        raise ParameterError("--keys needs at least one column name")
    spec = from_namespace(RiskSpec, args)
    spec.check()  # every setting, before anything is read
    if args.k_anonymity is not None or args.l_diversity is not None:
        return _kanonymity(args, keys)
    _refuse("without --k-anonymity or --l-diversity, pramkit risk", [
        ("--max-dim", args.max_dim is not None), ("--l", args.l_threshold != 2),
        ("--missing-rule", args.missing_rule != "own")], "they say how the records and cells below k and the "
            "l-diversity are counted")
    if args.suda or args.contributions:
        return _suda(args, keys) if args.suda else _contributions(args, keys)
    if args.max_size is not None or args.replicates != CONTRIBUTION_REPLICATES or args.max_steps is not None:
        raise ParameterError("--max-size, --max-steps and --replicates go with --suda or --contributions")
    if args.sampling_fraction is None and args.weights is None:
        raise ParameterError(_FRACTION_REQUIRED)
    if args.household is not None:
        return _household(args, keys)
    manifest = Manifest.read(args.manifest) if args.manifest else None
    if args.original and not manifest:
        raise ParameterError("--original needs --manifest")
    if args.plot:  # before any work (no input is ever an output: files(), checked by pramkit.cli.main)
        check_writable(args.plot, force=args.force)
        require_extra("report", RISK_PLOT)
    unchecked = check_release(args.data, args.manifest) if manifest is not None else None
    # the files are streamed: memory is bounded by a chunk and the key table
    result = identification_risk(args.data, keys, manifest=manifest, original=args.original, spec=spec)
    out = result.to_dict()
    if args.plot:
        out["plot"] = str(plot_fit(result.model, args.plot, force=args.force))
    note("risk", unchecked)  # after the work: an error stays the only line
    if args.json:
        print_json(out, kind="pramkit.risk.identification")
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
                            weights=args.weights, missing=args.missing, na_values=args.na_values, manifest=manifest,
                            sep=args.sep, encoding=args.encoding, decimal=args.decimal)
    note("risk", unchecked)  # after the work: an error stays the only line
    if args.json:
        print_json(result.to_dict(), kind="pramkit.risk.household")
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


def _refuse(mode: str, given: list[tuple[str, bool]], why: str) -> None:
    """One line naming the flags ``mode`` does not take."""
    unused = [flag for flag, on in given if on]
    if unused:
        raise ParameterError(f"{mode} does not take {', '.join(unused)}: {why}")


def _suda(args: argparse.Namespace, keys: list[str]) -> int:
    """``--suda``: the SUDA2 figures of the file (its to_dict(), or lines of text)."""
    from pramkit.risk.suda import suda

    _refuse("--suda", [("--contributions", args.contributions), ("--weights", args.weights is not None),
                       ("--manifest", args.manifest is not None), ("--original", args.original is not None),
                       ("--household", args.household is not None), ("--plot", args.plot is not None),
                       ("--model", args.model != _MODEL), ("--fractions", args.fractions != _FRACTIONS),
                       ("--replicates", args.replicates != CONTRIBUTION_REPLICATES)],
            "SUDA reads the file's key values alone (DIS-SUDA takes --sampling-fraction)")
    out = suda(args.data, keys, max_size=args.max_size, sampling_fraction=args.sampling_fraction,
               na_values=args.na_values, max_steps=_steps(args), sep=args.sep, encoding=args.encoding).to_dict()
    if args.json:
        print_json(out, kind="pramkit.risk.suda")
        return 0
    lines = [
        f"records: {out['records']}; with a minimal sample unique (MSU): {out['records_with_msu']}",
        f"MSUs by size 1..{out['max_size']}: {', '.join(map(str, out['msus_by_size']))}",
        f"SUDA score (Elliot's weights): total {out['total_score']:.6g}, largest {out['max_score']:.6g}; "
        f"largest normalised score (IHSN weights): {out['max_normalised_score']:.4g}",
    ]
    if out["max_dis_score"] is not None:
        lines.append(f"DIS-SUDA at sampling fraction {out['sampling_fraction']:.6g}: largest "
                     f"{out['max_dis_score']:.4g}, mean {out['mean_dis_score']:.4g}")
    lines.append("attribute contributions (% of the total score held by MSUs with the variable):")
    lines += [f"  {k}: {_pct(v)}" for k, v in out["attribute_contributions"].items()]
    print("\n".join(lines))
    return 0


def _kanonymity(args: argparse.Namespace, keys: list[str]) -> int:
    """``--k-anonymity K`` / ``--l-diversity S``: the records and cells below k and the l-diversity (its to_dict(),
    or lines of text)."""
    from pramkit.risk.kanonymity import assess

    _refuse("--k-anonymity and --l-diversity", [
        ("--suda", args.suda), ("--contributions", args.contributions), ("--household", args.household is not None),
        ("--manifest", args.manifest is not None), ("--original", args.original is not None),
        ("--plot", args.plot is not None), ("--model", args.model != _MODEL),
        ("--fractions", args.fractions != _FRACTIONS), ("--sampling-fraction", args.sampling_fraction is not None),
        ("--missing exclude", args.missing != "category"), ("--max-size", args.max_size is not None),
        ("--max-steps", args.max_steps is not None), ("--replicates", args.replicates != CONTRIBUTION_REPLICATES)],
        "they count the records of the file itself (--weights: the weighted frequencies; --missing-rule: how a "
        "missing key value counts)")
    if args.k_anonymity is None and args.max_dim is not None:
        raise ParameterError("--max-dim goes with --k-anonymity (the largest table of its cells)")
    if args.l_diversity is None and args.l_threshold != 2:
        raise ParameterError("--l goes with --l-diversity")
    sensitive = comma_names(args.l_diversity) if args.l_diversity is not None else []
    if args.l_diversity is not None and not sensitive:
        raise ParameterError("--l-diversity needs at least one column name")
    result = assess(args.data, keys, k=args.k_anonymity, sensitive=sensitive, l=args.l_threshold,
                    max_dim=args.max_dim, missing=args.missing_rule, weights=args.weights, na_values=args.na_values,
                    sep=args.sep, encoding=args.encoding)
    if args.json:
        print_json(dict(result.to_dict()), kind="pramkit.risk.kanonymity")
        return 0
    print("\n".join(kanonymity_lines(result)))
    return 0


#: The most tables of cells the text output lists (the JSON lists them all).
_TABLES_SHOWN = 15


def kanonymity_lines(result: Any) -> list[str]:
    """The text output of ``--k-anonymity`` / ``--l-diversity``.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.kanonymity import assess
    >>> df = pd.DataFrame({"a": ["x", "x", "y"], "b": ["p", "p", "q"], "s": ["1", "2", "1"]})
    >>> print("\\n".join(kanonymity_lines(assess(df, ["a", "b"], k=2, sensitive=["s"]))))
    records: 3; keys: a, b; a missing key value is a value of its own
    records below k = 2: 1 (33.33 %); smallest frequency 1; 2 combinations, 1 below 2
    cells counted fewer than 2 times (sdcMicro's riskyCells, threshold 1), tables of 1 to 2 keys: 3 cells
      dim  cells  records  keys
        1      1        1  a
        1      1        1  b
        2      1        1  a, b
    l-diversity within 2 classes, l = 2:
      s: smallest distinct l 1, smallest entropy l 1; records in classes below l = 2: 1 (1 classes); below entropy l 2: 1
    """
    rule = "is a value of its own" if result.missing == "own" else "matches any value (sdcMicro's rule)"
    lines = [f"records: {result.records}; keys: {', '.join(result.keys)}; a missing key value {rule}"]
    v = result.violations
    if v is not None:
        lines.append(f"records below k = {v.k}: {v.violating} ({100 * v.share:.2f} %); smallest frequency "
                     f"{v.smallest}; {v.combinations} combinations, {v.combinations_below} below {v.k}")
        if v.weights is not None:
            lines.append(f"records whose weighted frequency ({v.weights}) is below {v.k}: {v.weighted_violating}")
    c = result.cells
    if c is not None:
        lines.append(f"cells counted fewer than {c.k} times (sdcMicro's riskyCells, threshold {c.k - 1}), tables of "
                     f"1 to {c.max_dim} keys: {c.unsafe} cells")
        risky = c.tables[c.tables["cells"] > 0]
        if len(risky):
            lines.append("  dim  cells  records  keys")
            lines += [f"  {d:>3}  {n:>5}  {r:>7}  {', '.join(names)}" for names, d, n, r
                      in risky.head(_TABLES_SHOWN)[["variables", "dim", "cells", "records"]].itertuples(index=False)]
            if len(risky) > _TABLES_SHOWN:
                lines.append(f"  ... {len(risky) - _TABLES_SHOWN} more tables with a cell below {c.k} (--json lists "
                             "them all)")
    d = result.diversity
    if d is not None:
        lines.append(f"l-diversity within {len(d.classes)} classes, l = {d.l}:")
        lines += [f"  {s.sensitive}: smallest distinct l {s.smallest_distinct}, smallest entropy l "
                  f"{s.smallest_entropy:.4g}; records in classes below l = {d.l}: {s.records_below} "
                  f"({s.classes_below} classes); below entropy l {d.l}: {s.records_below_entropy}"
                  for s in d.sensitive]
    return lines


def _steps(args: argparse.Namespace) -> float:
    """``--max-steps`` (a positive number, checked by :class:`pramkit.release.risk_spec.RiskSpec`), or the library's
    default."""
    from pramkit.risk.suda import MAX_STEPS

    return MAX_STEPS if args.max_steps is None else float(args.max_steps)


def _pct(value: float | None) -> str:
    """A percent for the text output (``n/a`` for an undefined one)."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f} %"


def _contributions(args: argparse.Namespace, keys: list[str]) -> int:
    """``--contributions``: the variables' and levels' contributions (before and, with a release, after PRAM)."""
    from pramkit.engine.receipt import check_release
    from pramkit.manifest import Manifest
    from pramkit.risk.contributions import release_contributions

    _refuse("--contributions", [("--household", args.household is not None), ("--plot", args.plot is not None),
                                ("--fractions", args.fractions != _FRACTIONS),
                                ("--missing exclude", args.missing != "category")],
            "the contributions compare the measures of the file itself, missing keys a category of their own")
    if args.original and not args.manifest:
        raise ParameterError("--original needs --manifest")
    if args.manifest and not args.original:
        raise ParameterError("--contributions with --manifest needs --original: the contributions before PRAM "
                             "and the expectation over the perturbation read the original file")
    if args.sampling_fraction is None and args.weights is None:
        raise ParameterError(_FRACTION_REQUIRED)
    manifest = Manifest.read(args.manifest) if args.manifest else None
    unchecked = check_release(args.data, args.manifest) if manifest is not None else None
    result = release_contributions(
        args.original or args.data, keys, released=args.data if manifest is not None else None, manifest=manifest,
        sampling_fraction=args.sampling_fraction, weights=args.weights, model=args.model, max_size=args.max_size,
        replicates=args.replicates, na_values=args.na_values, max_steps=_steps(args), sep=args.sep,
        encoding=args.encoding, decimal=args.decimal)
    note("risk", unchecked)  # after the work: an error stays the only line
    if args.json:
        print_json(result.to_dict(), kind="pramkit.risk.contributions")
        return 0
    from pramkit.engine.receipt import released_guarantee

    print("\n".join(contribution_lines(result, None if manifest is None else released_guarantee(manifest, args.data))))
    return 0


def contribution_lines(result: ReleaseContributions, guarantee: Guarantee | None = None) -> list[str]:
    """The text output of ``--contributions``: per measure the variables' shares, the top levels, the sentences.

    Parameters
    ----------
    result : ReleaseContributions
        What :func:`pramkit.risk.contributions.release_contributions` returned.
    guarantee : Guarantee, optional
        The release's guarantee (:func:`pramkit.ledger.release_guarantee`): its headline leads the
        line of epsilon shares, so the figure is the one every other surface shows.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.contributions import release_contributions
    >>> data = pd.DataFrame({"a": [2, 1, 1, 3], "b": [0, 3, 0, 0]})
    >>> lines = contribution_lines(release_contributions(data, ["a", "b"], sampling_fraction=1.0))
    >>> lines[2]
    '  a: suda 75.00 %, tau1 75.00 %, tau2 75.00 %, individual 50.00 %'
    """
    from pramkit.ledger import fmt_epsilon
    from pramkit.risk.contributions import MEASURES

    lines = ["contributions in % of each measure (variable left out; level merged into the most frequent other)"]
    parts = [("before PRAM", result.before)] + ([("after PRAM (released file)", result.after)] if result.after else [])
    for title, c in parts:
        lines.append(f"{title}: totals " + ", ".join(f"{m} {c.totals[m]:.6g}" for m in MEASURES))
        lines += [f"  {row.variable}: " + ", ".join(f"{m} {_pct(getattr(row, m))}" for m in MEASURES)
                  for row in c.variables.itertuples(index=False)]
        lines.append("  not explained by one variable alone: "
                     + ", ".join(f"{m} {_pct(v)}" for m, v in c.interaction.items()))
        top = c.levels.sort_values("suda", ascending=False, kind="stable").head(5)
        lines.append("  top levels (SUDA): " + "; ".join(f"{v} = {x} {_pct(s)}" for v, x, s
                                                         in zip(top["variable"], top["level"], top["suda"])))
    if result.expected is not None:
        e, ev = result.expected, result.expected.variables
        lines.append(f"expected SUDA contributions over the perturbation ({e.method}, {e.outcomes} outcomes): "
                     + ", ".join(f"{v} {_pct(s)}" + (f" (Monte Carlo error {se:.2f})" if se else "")
                                 for v, s, se in zip(ev["variable"], ev["suda"], ev["se"])))
    # the epsilon shares and the record epsilon are both None exactly when there is no manifest
    if result.after is not None and result.after.epsilon is not None and result.after.record_epsilon is not None:
        eps = result.after.epsilon
        head = guarantee.headline if guarantee is not None else f"record epsilon {fmt_epsilon(result.after.record_epsilon)}"
        lines.append(f"{head}; its shares: "
                     + ", ".join(f"{v} {fmt_epsilon(x)} ({_pct(p)})"
                                 for v, x, p in zip(eps["variable"], eps["epsilon"], eps["percent"])))
    return lines + list(result.sentences)
