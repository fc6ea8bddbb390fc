"""``pramkit estimate RELEASED --manifest M.json --vars a[,b] [--by c] [--estimator E]``: tables with standard errors.

Nothing questionable is printed silently: an estimate outside ``[0, n]`` (or a
share outside ``[0, 1]``) is flagged in its row and announced on stderr with
the estimators that avoid it, and a cell that a singular matrix cannot
estimate shows "not identifiable" instead of NaN, with the identifiable totals
of its group printed below the table.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.cli._common import add_csv_dialect, add_engine_options, add_na_values, comma_names, note, print_json
from pramkit.cli.commands import HELP
from pramkit.errors import ParameterError
from pramkit.estimate.estimators import CONSISTENT

if TYPE_CHECKING:  # pragma: no cover
    from pramkit.estimate import EstimateResult


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit estimate`` to the command line's subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["estimate", "released.csv", "--manifest", "m.json", "--vars", "age", "--by", "sex"])
    >>> args.command, args.vars, args.by, args.estimator, args.func is run
    ('estimate', 'age', 'sex', None, True)
    >>> [str(m) for m in parser.parse_args(["estimate", "r.csv", "--manifest", "a.json", "--manifest", "b.json",
    ...                                     "--vars", "age"]).manifest]
    ['a.json', 'b.json']
    """
    from pramkit.estimate.spec import GROUPS, EstimateSpec
    from pramkit.settings import add_arguments

    p = sub.add_parser(
        "estimate", help=HELP["estimate"],
        description="Estimate the original frequency table of some columns of a released file, "
                    "using the PRAM matrices of its manifest. Columns not in the manifest are "
                    "taken as unperturbed.",
    )
    p.add_argument("released", type=Path, help="the released file (CSV, Parquet, Stata, SPSS)")
    p.add_argument("--manifest", required=True, type=Path, action="append",
                   help="the release manifest (JSON); a release made by manifests applied one after the other: "
                        "each of them, in the order applied (--manifest first.json --manifest second.json)")
    p.add_argument("--vars", help="column(s) to tabulate, comma-separated (required unless --regress)")
    p.add_argument("--by", help="grouping column(s), comma-separated: proportions become shares within groups")
    add_arguments(p, EstimateSpec, GROUPS)  # every estimate setting, declared once (pramkit.estimate.spec)
    add_na_values(p)
    add_csv_dialect(p)
    add_engine_options(p, "the counts and the weighted sums by stratum and PSU aggregated by Spark (CSV or Parquet), the same estimates")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--emit-r", metavar="FILE", type=Path,
                   help="instead of estimating, write an R script (R and jsonlite only) that reads the released "
                        "CSV file and the manifest and computes this table with the default estimator, the same "
                        "numbers (see docs/estimation.md)")
    p.add_argument("--emit", choices=("r", "spss", "python"),
                   help="instead of estimating, write a script in R (jsonlite; survey with --weights), SPSS syntax "
                        "(GNU PSPP or SPSS) or Python (numpy and pandas, no pramkit) that reads the released CSV "
                        "file and computes this table with the default estimator, with --weights, --strata and "
                        "--psu if given: the same numbers (see docs/analyst.md); needs --emit-out")
    p.add_argument("--emit-out", metavar="FILE", type=Path, help="the script --emit writes")
    p.add_argument("--force", action="store_true", help="overwrite the --emit-r or --emit-out FILE if it exists")
    rg = p.add_argument_group("regression (see docs/analyst.md): instead of a table, a linear or logistic "
                              "regression corrected for PRAM: by moments (linear, the default) or by EM over the "
                              "true categories")
    rg.add_argument("--regress", metavar="FORMULA",
                    help="'outcome ~ x1 + x2 + ...' (main effects and an intercept): perturbed categorical covariates "
                         "or a perturbed two-category outcome are corrected with the manifest's matrices; prints "
                         "the corrected and the naive coefficients with standard errors; with --weights (and "
                         "--strata, --psu, --fpc) the weighted fit (linear), design-based standard errors")
    rg.add_argument("--family", choices=("auto", "gaussian", "binomial"),
                    help="gaussian: linear regression; binomial: logistic (a two-category outcome); auto by "
                         "the outcome (default)")
    rg.add_argument("--regress-method", choices=("auto", "moment", "em"),
                    help="moment: the least-squares normal equations corrected by the matrices' inverses, no model "
                         "of the outcome, sandwich standard errors (--variance multinomial: records sampled and "
                         "perturbed; pram: the original file fixed); em: the likelihood with a normal outcome of one "
                         "variance (linear) or the logistic law, checked against the residuals; auto (default): "
                         "moment for a linear regression, em for a logistic one")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Estimate the original table from a released file and print it (or its JSON).

    Parameters
    ----------
    args : argparse.Namespace
        As :func:`register` parses them.

    Returns
    -------
    int
        0 (errors are raised as :class:`pramkit.errors.PramkitError` and printed by :func:`pramkit.cli.main`).

    Examples
    --------
    >>> import json, os, tempfile, contextlib, io
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     released, manifest = os.path.join(d, "released.csv"), os.path.join(d, "m.json")
    ...     pd.DataFrame({"answer": ["yes"] * 60 + ["no"] * 40}).to_csv(released, index=False)
    ...     _ = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))}).write(manifest)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["estimate", released, "--manifest", manifest, "--vars", "answer", "--json"])
    ...     code, [round(c["estimate"]) for c in json.loads(out.getvalue())["cells"]]
    (0, [70, 30])
    """
    from pramkit.engine.receipt import ReceiptWarning, check_chain
    from pramkit.estimate import EstimationWarning, estimate_table
    from pramkit.estimate.spec import EstimateSpec
    from pramkit.manifest import Manifest
    from pramkit.settings import from_namespace

    if args.regress is not None and args.weights is not None and args.variance == "pram":
        raise ParameterError("--variance pram is for an unweighted regression; with --weights the standard errors are "
                             "the design's and PRAM's together (PRAM's part beside): leave out --variance")
    from_namespace(EstimateSpec, args).check()  # every setting, before any file is read
    steps = list(args.manifest) if isinstance(args.manifest, list) else [args.manifest]
    args.manifest = steps[-1]
    if len(steps) > 1:
        other = [flag for flag, given in (("--regress", args.regress is not None),
                                          ("--emit", args.emit is not None or args.emit_r is not None)) if given]
        if other:
            raise ParameterError(f"{other[0]} reads one manifest; the manifests applied one after the other are "
                                 "estimated as tables (--vars)")
    if args.engine != "local" and (args.regress is not None or args.emit_r is not None or args.emit is not None):
        raise ParameterError("--engine spark estimates tables (--vars); --regress and --emit read records on this "
                             "machine: use --engine local")
    if args.regress is not None:
        return _regress(args)
    if args.family is not None:
        raise ParameterError("--family goes with --regress (the regression's family)")
    if args.regress_method is not None:
        raise ParameterError("--regress-method goes with --regress (the regression's estimator)")
    if args.vars is None:
        raise ParameterError("name the column(s) to tabulate with --vars (or a regression with --regress)")
    names, groups = comma_names(args.vars), comma_names(args.by)
    if args.emit_r is not None or args.emit is not None or args.emit_out is not None:
        return _emit(args, names, groups)
    manifests = [Manifest.read(m) for m in steps]
    unchecked = check_chain(args.released, steps)  # refuses a release of other manifests, or in another order
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EstimationWarning)  # the result carries the note
        warnings.simplefilter("ignore", ReceiptWarning)  # checked above, naming the manifest's file
        result = estimate_table(args.released, manifests if len(manifests) > 1 else manifests[0], names, by=groups or None, method=args.method,
                                variance=args.variance, confidence=args.confidence, estimator=args.estimator,
                                na_values=args.na_values, sep=args.sep, encoding=args.encoding, **_survey(args),
                                engine=args.engine, spark_master=args.spark_master, decimal=args.decimal)
    note("estimate", unchecked)  # after the work: an error stays the only line
    if result.table.note:
        print(f"pramkit estimate: note: {result.table.note}", file=sys.stderr)
    if result.table.converged is False:
        print(f"pramkit estimate: warning: the MLE did not converge after {result.table.iterations} iterations "
              "(EM updates and Newton steps)", file=sys.stderr)
    flagged = int(result.out_of_range.sum())
    if flagged:
        print(f"pramkit estimate: warning: {flagged} of {result.out_of_range.size} cells are estimated outside "
              "[0, n] (or their share outside [0, 1]) and flagged 'out_of_range': the unbiased estimator is not "
              f"constrained; --estimator {' or '.join(sorted(set(CONSISTENT) - {'rr-mle'}))} "
              "(rr-mle for one randomized-response variable) give estimates in [0, n]", file=sys.stderr)
    if args.json:
        print_json({"released_file": str(args.released), **result.to_dict()}, kind="pramkit.estimate.result")
    else:
        print(format_table(result))
    return 0


def _emit(args: argparse.Namespace, names: list[str], groups: list[str]) -> int:
    """``--emit r|spss|python --emit-out FILE`` (``--emit-r FILE``: ``--emit r``): write the analyst's script."""
    from pramkit.estimate.emit import EMIT_LANGUAGES, write_analyst_script

    if args.emit_r is not None and (args.emit is not None or args.emit_out is not None):
        raise ParameterError("--emit-r FILE is --emit r --emit-out FILE; give one or the other")
    language, out = ("r", args.emit_r) if args.emit_r is not None else (args.emit, args.emit_out)
    if language is None or out is None:
        raise ParameterError("--emit LANGUAGE and --emit-out FILE go together (the script's language and its file)")
    if args.decimal != "." and args.weights is not None:  # the script reads its numbers with R's, SPSS's, pandas' point
        raise ParameterError("--decimal , with --weights: the script --emit writes reads weights written with a "
                             "decimal point; estimate here, or write the file's numbers with a point")
    other = [flag for flag, given in (("--method mle", args.method == "mle"),
                                      ("--estimator", args.estimator not in (None, "unbiased")),
                                      ("--replicate-weights", args.replicate_weights is not None),
                                      ("--json", args.json)) if given]
    if other:
        raise ParameterError(f"the script computes the unbiased estimator, weighted by --weights with --strata and "
                             f"--psu if given; leave out {other[0]}")
    survey = _survey(args).get("survey")
    out = write_analyst_script(language, out, args.released, args.manifest, names, by=groups,
                               variance=args.variance, confidence=args.confidence, na_values=args.na_values,
                               force=args.force, sep=args.sep, encoding=args.encoding, survey=survey)
    print(f"wrote {out}: " + EMIT_LANGUAGES[language].format(out=out)
          + (" prints the table (and writes it to OUT.csv)" if language != "spss" else ""))
    return 0


def _regress(args: argparse.Namespace) -> int:
    """``--regress FORMULA``: the corrected regression, printed (or its JSON)."""
    from pramkit.engine.receipt import check_release
    from pramkit.estimate.regression import corrected_regression

    other = [flag for flag, given in (("--vars", args.vars is not None), ("--by", args.by is not None),
                                      ("--method", args.method is not None),
                                      ("--estimator", args.estimator is not None),
                                      ("--emit", args.emit is not None or args.emit_r is not None)) if given]
    if other:
        raise ParameterError(f"--regress fits a regression to the released records, not a table; leave out {other[0]}")
    if args.replicate_weights is not None:
        raise ParameterError("--regress takes the design's variance by linearisation (--weights with --strata, --psu, "
                             "--fpc); leave out --replicate-weights")
    check_release(args.released, args.manifest)  # refuses a release of another manifest
    survey = _survey(args).get("survey")  # the design of --weights, --strata, --psu, --fpc, --single-psu
    result = corrected_regression(args.released, args.regress, args.manifest, family=args.family or "auto",
                                  confidence=args.confidence, method=args.regress_method or "auto",
                                  variance=args.variance, survey=survey, na_values=args.na_values, sep=args.sep,
                                  encoding=args.encoding, decimal=args.decimal)
    for warning in result.warnings:
        print(f"pramkit estimate: warning: {warning}", file=sys.stderr)
    if args.json:
        print_json({"released_file": str(args.released), **result.to_dict()}, kind="pramkit.estimate.regression")
        return 0
    head = [f"Regression corrected for PRAM: {result.formula} ({result.family}"
            + (f", event: {result.event}" if result.event is not None else "") + ")",
            f"perturbed: {', '.join(result.perturbed) or 'none'}; n = {result.n} records"
            + (f" ({result.dropped} rows with a missing value left out)" if result.dropped else ""), _how(result),
            "naive: the same model fitted to the released values as if they were true (biased)"
            + ("" if result.design is None else ", weighted, with the same design")]
    level = f"{100 * result.confidence:g}%"
    out = pd_format(result.to_frame(), level)
    print("\n".join(head) + "\n\n" + out)
    return 0


def _how(result: Any) -> str:
    """The line that names a regression's estimator and its standard errors."""
    d = result.design
    if d is not None:
        return (f"estimator: moment, weighted by {d.weights} (consistent for the population's least squares); "
                "standard errors: sandwich, design-based by linearisation ("
                + (f"strata {d.strata}, " if d.strata else "one stratum, ")
                + (f"PSUs {d.psu}" if d.psu else "records as PSUs") + (f", fpc {d.fpc}" if d.fpc else "")
                + "), PRAM's part beside")
    if result.estimator == "moment":
        return ("estimator: moment (the least-squares normal equations corrected by the matrices' inverses, no "
                f"outcome model); standard errors: sandwich ({result.variance})")
    return f"estimator: EM, {result.iterations} iterations; standard errors: observed information (Louis)"


def pd_format(frame: Any, level: str) -> str:
    """The coefficient table of a regression, readable."""
    out = frame[["term"]].copy()
    out["coef"] = frame["coef"].map("{:.4f}".format)
    out["se"] = frame["se"].map("{:.4f}".format)
    out[f"{level} CI"] = [f"{lo:.4f} .. {hi:.4f}" for lo, hi in zip(frame["ci_low"], frame["ci_high"])]
    if "pram_se" in frame:
        out["of which PRAM, se"] = frame["pram_se"].map("{:.4f}".format)
    out["naive coef"] = frame["naive_coef"].map("{:.4f}".format)
    out["naive se"] = frame["naive_se"].map("{:.4f}".format)
    return str(out.to_string(index=False))


def _survey(args: argparse.Namespace) -> dict[str, Any]:
    """The survey arguments of :func:`pramkit.estimate_table` from the flags (none without --weights):
    :meth:`pramkit.estimate.spec.EstimateSpec.keywords`."""
    from pramkit.estimate.spec import EstimateSpec
    from pramkit.settings import from_namespace

    keywords = from_namespace(EstimateSpec, args).keywords(args.released)
    return {k: keywords[k] for k in ("survey", "replicates") if k in keywords}


def format_table(result: EstimateResult) -> str:
    """A readable table: counts in records, proportions in percent.

    Parameters
    ----------
    result : EstimateResult
        From :func:`pramkit.estimate_table`.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit import Manifest, PramMatrix, estimate_table
    >>> m = Manifest.of({"answer": PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))})
    >>> text = format_table(estimate_table(pd.DataFrame({"answer": ["yes"] * 60 + ["no"] * 40}), m, "answer"))
    >>> text.splitlines()[0]
    'Estimated original frequencies of answer'
    """
    t = result.table
    unit = "records" if result.weights is None else "weighted"
    level = f"{100 * result.confidence:g}%"
    share = "share within by-group" if result.by else "share of all records"
    asked = result.requested_estimator
    head = [
        f"Estimated original frequencies of {' x '.join(result.variables)}",
        f"method: {t.method} (estimator: {t.estimator}"
        + (f", instead of {asked}" if asked and asked != t.estimator else "")
        + f"); variance: {t.variance}; "
        + (f"n = {t.n} records" if result.weights is None else
           f"weighted by {result.weights}: totals estimate the population's, in all {t.n:,.0f}")
        + (f" ({result.dropped} rows with a missing value left out)" if result.dropped else ""),
    ]
    if t.iterations is not None and t.estimator != "rr-mle":
        head.append(f"MLE: {t.iterations} iterations (EM updates and Newton steps), log-likelihood within "
                    f"{t.loglik_gap:.2g} nats of its maximum")
    if t.estimator == "norm-sub":
        head.append("norm-sub has no standard errors (n/a); use --estimator unbiased or mle for intervals")
    frame = result.to_frame()
    out = frame[list(result.variables)].copy()
    out[f"released [{unit}]"] = frame["released"].map("{:.0f}".format)
    out[f"estimate [{unit}]"] = frame["estimate"].map("{:.1f}".format)
    out[f"se [{unit}]"] = frame["se"].map(lambda x: _number(x, "{:.1f}"))
    if "pram_se" in frame:
        out[f"of which PRAM, se [{unit}]"] = frame["pram_se"].map(lambda x: _number(x, "{:.1f}"))
    out[f"{level} CI [{unit}]"] = [_interval(lo, hi, "{:.1f}") for lo, hi in zip(frame["ci_low"], frame["ci_high"])]
    out[f"{share} [%]"] = (100 * frame["proportion"]).map(lambda x: _number(x, "{:.2f}"))
    out["se [%]"] = (100 * frame["proportion_se"]).map(lambda x: _number(x, "{:.2f}"))
    out[f"{level} CI [%]"] = [_interval(100 * lo, 100 * hi, "{:.2f}")
                             for lo, hi in zip(frame["proportion_ci_low"], frame["proportion_ci_high"])]
    flags = [_flag(c, t.n) for c in result.cells()]
    if any(flags):
        out["flag"] = flags
    text = "\n".join(head) + "\n\n" + out.to_string(index=False)
    groups = result.groups()
    if groups:
        text += "\n\n" + _format_groups(result, groups, level)
    return text


def _number(x: float, fmt: str) -> str:
    return "n/a" if not math.isfinite(x) else fmt.format(x)


def _interval(lo: float, hi: float, fmt: str) -> str:
    return "n/a" if not (math.isfinite(lo) and math.isfinite(hi)) else f"{fmt.format(lo)} .. {fmt.format(hi)}"


def _flag(cell: dict, n: float) -> str:
    """Why a row needs attention: not identifiable, or outside [0, n] / [0, 1]."""
    if not cell["identifiable"]:
        return "not identifiable"
    if not cell["out_of_range"]:
        return ""
    if cell["estimate"] < 0:
        return "out_of_range (< 0)"
    if cell["estimate"] > n:
        return "out_of_range (> n)"
    return "out_of_range (share outside [0, 1])"


def _format_groups(result: EstimateResult, groups: list[dict], level: str) -> str:
    """The identifiable totals of the groups of categories a singular matrix cannot tell apart."""
    import pandas as pd

    unit = "records" if result.weights is None else "weighted"
    rows = []
    for g in groups:
        cats = [g["category"]] if len(result.variables) == 1 else g["category"]
        rows.append({
            **{name: "{" + ", ".join(map(str, c)) + "}" if len(c) > 1 else str(c[0])
               for name, c in zip(result.variables, cats)},
            f"estimate [{unit}]": f"{g['estimate']:.1f}",
            f"se [{unit}]": _number(g["se"], "{:.1f}"),
            **({} if "pram_se" not in g else {f"of which PRAM, se [{unit}]": _number(g["pram_se"], "{:.1f}")}),
            f"{level} CI [{unit}]": _interval(g["ci_low"], g["ci_high"], "{:.1f}"),
        })
    return ("Not identifiable: the matrix cannot tell the categories in braces apart; the estimated totals "
            "of each group (identifiable):\n" + pd.DataFrame(rows).to_string(index=False))
