"""``pramkit design``: design PRAM matrices.

* ``pramkit design --probs 0.5,0.3,0.2 --epsilon 0.5 [--family diagonal|general] [--json]`` designs one
  matrix for a distribution you give (``--counts`` for counts) and prints it;
* ``pramkit design DATA --vars a,b --epsilon E [--split equal|optimal|joint] --out manifest.json`` designs a
  release (:func:`pramkit.design_release`): ``--epsilon`` is the record's total budget, design step included;
  writes the public manifest and, beside it, the private design record;
* ``pramkit design DATA --keys a,b,c --recognition ALPHA --out M.json``: one joint matrix against spontaneous
  recognition (:func:`pramkit.design_recognition`);
* ``pramkit design --derive-from SUF.json --epsilon E --out PUF.json``: a second step applied to the released
  scientific-use file, for a public-use file (:func:`pramkit.release.derive.derive_release`).

The command only parses, calls the library and prints the result's ``to_dict()``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pramkit.cli._common import (
    add_csv_dialect,
    add_engine_options,
    add_na_values,
    add_quiet,
    comma_names,
    comma_numbers,
    print_json,
)
from pramkit.cli.commands import HELP
from pramkit.errors import ParameterError

#: Tolerance within which ``--probs`` may miss 1 and be normalised (with a note).
PROBS_TOL = 1e-6

def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit design`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["design", "data.csv", "--vars", "region,sex", "--epsilon", "2",
    ...                           "--split", "optimal", "--out", "m.json"])
    >>> str(args.data), args.vars, args.epsilon, args.split, str(args.out), args.func is run
    ('data.csv', 'region,sex', 2.0, 'optimal', 'm.json', True)
    >>> args.method, args.family, args.design_record, args.na_values    # the defaults
    ('dp', 'diagonal', None, ('NA',))
    >>> args = parser.parse_args(["design", "--probs", "0.5,0.3,0.2", "--epsilon", "1", "--json"])
    >>> args.data, args.probs, args.json
    (None, '0.5,0.3,0.2', True)
    """
    from pramkit.design.registry import DP_OBJECTIVES, FAMILIES

    p = sub.add_parser(
        "design", help=HELP["design"],
        description="Design a PRAM matrix for a distribution (--probs/--counts), or a release for the variables "
                    "of a data file (--vars): the public manifest for `pramkit apply` and a private design record.")
    p.add_argument("data", nargs="?", type=Path, help="data file (CSV, Parquet, Stata, SPSS) to design from")
    p.add_argument("--vars", "--keys", dest="vars",
                   help="comma-separated columns of DATA to perturb (the key variables for --recognition)")
    p.add_argument("--probs", help="comma-separated probabilities of the categories (sum 1)")
    p.add_argument("--counts", help="comma-separated counts or weights of the categories (normalised)")
    p.add_argument("--categories", help="with --probs/--counts: comma-separated labels (default 0..S-1); with DATA: "
                   "a codebook CSV (columns variable,category) declaring each variable's categories")
    p.add_argument("--method", choices=sorted(FAMILIES), default="dp",
                   help="design family (default %(default)s: " + FAMILIES["dp"].help + ")")
    p.add_argument("--epsilon", type=float, help="the record's total privacy budget (nats), design step included; "
                   "with --probs/--counts, the matrix's epsilon")
    p.add_argument("--epsilon-per-variable", metavar="V=E,...",
                   help="explicit per-variable budgets, e.g. age=1,sex=0.5 (instead of a split of --epsilon)")
    p.add_argument("--design-epsilon", type=float, metavar="E_D",
                   help="budget of the design step's DP counts (default: enough for noise of 5 %% of a "
                        "category's mean count, at most 10 %% of --epsilon); part of --epsilon")
    p.add_argument("--prior", type=Path, help="public frequencies (CSV: variable,category,frequency): the design "
                   "reads no data frequencies and spends no design budget")
    p.add_argument("--exact-frequencies", action="store_true",
                   help="design on the exact frequencies of DATA: no DP guarantee covers the design (the ledger "
                        "says so); for data that are not sensitive or for comparison")
    fam = p.add_argument_group("classic and bistochastic families (--method invariant|keep|rr|kanon|tridiagonal|"
                               "circulant|bistochastic-beta; see docs/bistochastic.md)")
    fam.add_argument("--beta", type=float, help="target beta-bistochastic privacy, H(P)/log2 r in (0, 1]")
    fam.add_argument("--keep", type=float, help="keep probability (keep: mu-ARGUS PRAM; circulant: p11)")
    fam.add_argument("--bandwidth", type=int, help="keep: move only to categories within this many codes")
    fam.add_argument("--pd", type=float, help="invariant: lower bound of P's diagonal (default 0.8)")
    fam.add_argument("--alpha", type=float, help="invariant: weight of R against the identity (default 0.5); "
                     "tridiagonal: off-diagonal entry")
    fam.add_argument("--diagonal", choices=["uniform", "fixed"], help="invariant: P's diagonal drawn from U(pd, 1) "
                     "(default) or fixed at pd")
    fam.add_argument("--seed", type=int, help="invariant: seed of the diagonal draw")
    fam.add_argument("--k", type=int, help="kanon: categories per class")
    fam.add_argument("--gamma", type=float, help="kanon, tridiagonal: floor that removes zeros (finite epsilon)")
    fam.add_argument("--off-diagonal", type=float, help="tridiagonal: the off-diagonal entry (also read as --alpha)")
    fam.add_argument("--beta-family", choices=["rr", "kanon", "tridiagonal", "circulant", "best"],
                     help="bistochastic-beta: the family to fit (default best: most information for the data)")
    p.add_argument("--family", choices=["diagonal", "general"], default="diagonal",
                   help="diagonal: form (8), any S, certificate in the output; general: any matrix, staircase LP "
                        "(S <= 14; --probs/--counts only)")
    p.add_argument("--truthful", action="store_true", help="require q_k >= 1/S (form (8) only)")
    p.add_argument("--objective", choices=list(DP_OBJECTIVES),
                   help="--method dp: information (default: the most mutual information), variance (the least "
                        "total variance of the unbiased estimator: randomized response, always invertible, reads "
                        "no frequencies) or distance (the least expected distance moved, with --distances; a "
                        "certified LP, S <= 3000)")
    geo = p.add_argument_group("geographic and ordinal variables (see docs/geography.md)")
    geo.add_argument("--distances", metavar="ordinal|discrete|FILE",
                     help="distances between categories: 'ordinal' (the declared order), 'discrete' (every change "
                          "counts 1: for nominal variables) or a CSV: category,x,y "
                          "(projected), category,lat,lon (km on the sphere), category,neighbour (borders crossed) "
                          "or from,to,distance; with DATA, for every variable in --vars")
    geo.add_argument("--metric-epsilon", type=float, metavar="E_D",
                     help="--method metric: the metric-DP budget per unit of distance")
    geo.add_argument("--mechanism", choices=["exponential", "geometric", "optimal"],
                     help="--method metric: exponential (over --distances, the default), geometric (truncated "
                          "geometric on the category order) or optimal (the least expected distance by LP, with the "
                          "spanner reduction)")
    geo.add_argument("--dilation", type=float,
                     help="--mechanism optimal: the spanner's dilation for distances that are not a path metric")
    geo.add_argument("--distance-weights", choices=["frequencies", "uniform", "worst"],
                     help="--objective distance: minimise the expected distance over the frequencies (default), "
                          "the average over categories, or the worst category's (the last two read no frequencies)")
    geo.add_argument("--invariant", action="store_true",
                     help="--objective distance: keep the frequencies the design reads (DP counts or a prior) as the "
                          "released law, p M = p, so the released file's counts estimate the original's as they are "
                          "and an ordinal variable keeps all its values (S <= 300)")
    st = p.add_argument_group("structure of the microdata (see docs/structure.md)")
    st.add_argument("--forbid", type=Path, metavar="RULES.csv",
                    help="edit rules: a CSV whose columns are variables and whose rows are forbidden combinations "
                         "(empty cell: any value; a|b: either); no released record holds one (public: no budget)")
    st.add_argument("--strata", metavar="COL[,COL]",
                    help="stratum columns, released unperturbed: values move only within the values the record's "
                         "stratum allows (those --forbid leaves it)")
    st.add_argument("--keep-codes", metavar="V=CODE,...",
                    help="codes that never change and into which nothing moves, e.g. education=n/a,age=0-9|10-17 "
                         "(separate the items with ; when a code holds a comma)")
    st.add_argument("--household", metavar="COL", help="household id column (with --household-vars)")
    st.add_argument("--household-vars", metavar="V[,V]",
                    help="variables perturbed once per household: every member gets the household's released value")
    st.add_argument("--rule-breaking", choices=["error", "keep"], default="error",
                    help="an original record that breaks a rule: an error naming the row (default), or kept "
                         "unperturbed and reported")
    st.add_argument("--weights", metavar="COL[,COL]",
                    help="sampling weight columns released with the file, as they are: the ledger names them "
                         "(a rare weight can single a person out; `pramkit risk --weights` measures it)")
    p.add_argument("--missing", choices=["keep", "category"], default="keep",
                   help="missing values: kept missing, none made (default; which values are missing is released "
                        "exactly and the guarantee sentence says so, a joint record missing some columns has the "
                        "others perturbed by the matrix's margin), or a category perturbed like the others, for "
                        "every variable and every column of a joint design")
    p.add_argument("--split", choices=["optimal", "equal", "joint"], default="equal",
                   help="how the record budget is shared by the variables (default %(default)s: every listed "
                        "variable is perturbed); optimal: the most total information, which may give a "
                        "variable epsilon 0 and leave it unperturbed; joint: one matrix on their "
                        "cross-classification (methods dp and invariant; invariant keeps the joint table)")
    rec = p.add_argument_group("protection against spontaneous recognition (Cator, Hensbergen and Rozenholc; "
                               "see docs/design-recognition.md)")
    rec.add_argument("--recognition", type=float, metavar="ALPHA",
                     help="design one joint matrix over --keys with every posterior of condition (C1) at most "
                          "ALPHA and the smallest L2 loss")
    rec.add_argument("--combinations", default="3",
                     help="key combinations checked: a size (default 3: every combination of three keys) "
                          "or lists such as 'a,b,c;a,b,d'")
    rec.add_argument("--recognition-gamma", type=float, metavar="GAMMA",
                     help="lower bound on the diagonal of the reductions (default 0.9)")
    rec.add_argument("--recognition-method", choices=["restricted", "full"], default="restricted",
                     help="restricted: convex, certified gap (default); full: every entry free (small X only)")
    p.add_argument("--derive-from", type=Path, metavar="SUF-MANIFEST",
                   help="design a second step applied to the file that manifest released (a public-use file from a "
                        "scientific-use file), with record epsilon --epsilon; reads no data (docs/privacy.md)")
    p.add_argument("--out", type=Path, help="manifest to write (data mode): public, published with the release")
    p.add_argument("--design-record", type=Path, help="private design record to write (default: beside --out, "
                   "named OUT_STEM.design-record.json); never publish it")
    p.add_argument("--key-file", type=Path, help="secret key file (`pramkit keygen`): the design step's DP "
                   "noise is drawn from it, so the same key designs the same manifest (default: fresh noise "
                   "from the operating system)")
    p.add_argument("--force", action="store_true", help="overwrite --out and the design record if they exist")
    p.add_argument("--sampling", metavar="DESIGN",
                   help="the file is a secret sample: srswor:M/N (M: the file's rows, checked), poisson:Q (with --population N) "
                        "or stratified:Q1,Q2,... (the ledger states the amplified epsilon beside the local one)")
    p.add_argument("--population", type=int, metavar="N",
                   help="the population the file was drawn from: a simple random sample without replacement of its rows "
                        "from N persons, or with --sampling poisson:Q the population of the Poisson sample")
    p.add_argument("--target", metavar="matched=X%",
                   help="design to a disclosure target: the largest record budget up to --epsilon whose release is "
                        "expected to reproduce at most X %% of all records as unique records (the ledger says the "
                        "budget was chosen from the data); the budgets explored go to the design record")
    p.add_argument("--target-keys", metavar="COL[,COL]",
                   help="--target: the columns on which a record is unique and reproduced (default: --strata and "
                        "--vars)")
    p.add_argument("--recoded-by", type=Path, metavar="MAP.json",
                   help="DATA was recoded by this map (`pramkit recode`): the manifest states it (input.recode, public: "
                        "the map is declared, not read from the data); a perturbed variable's categories must be "
                        "recoded already")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_na_values(p)
    add_csv_dialect(p)
    add_engine_options(p, "the data's counts aggregated by Spark (CSV or Parquet), the same design")
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """What ``pramkit design`` reads (the data, prior, rules, codebook, distance file) and writes
    (the manifest and the design record).

    Examples
    --------
    >>> import argparse
    >>> args = argparse.Namespace(data=Path("d.csv"), prior=None, forbid=None, categories=None, derive_from=None,
    ...                           distances="areas.csv", out=Path("m.json"), design_record=None, key_file=Path("k"))
    >>> inputs, outputs = files(args)
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs]
    (['d.csv', 'k', 'areas.csv'], ['m.json', 'm.design-record.json'])
    """
    from pramkit.cli._common import distance_files
    from pramkit.release.record import design_record_path

    if args.derive_from is not None:
        return [args.derive_from, args.prior, args.categories], [args.out]
    if args.data is None or args.out is None:
        return [], []
    inputs = [args.data, args.prior, args.forbid, args.categories, args.key_file, *distance_files(args.distances),
              getattr(args, "recoded_by", None)]
    return inputs, [args.out, design_record_path(args.out, args.design_record)]


def _numbers(text: str, flag: str) -> list[float]:
    values = comma_numbers(text, flag)
    if len(values) < 2:
        raise ParameterError(f"{flag} needs at least two categories")
    return values










def _distribution_mode(args: argparse.Namespace) -> dict[str, Any]:
    """``--probs`` / ``--counts``: one matrix for a distribution the user gives (a public input)."""
    from pramkit.design.matrix_design import design_matrix
    from pramkit.release.choices import DesignChoices

    if args.vars or args.out:
        raise ParameterError("--vars and --out need a data file; for a distribution use --probs or --counts")
    if (args.probs is None) == (args.counts is None):
        raise ParameterError("give exactly one of --probs and --counts (or a data file with --vars)")
    for flag, value in (("--prior", args.prior), ("--design-epsilon", args.design_epsilon),
                        ("--epsilon-per-variable", args.epsilon_per_variable), ("--key-file", args.key_file)):
        if value is not None:
            raise ParameterError(f"{flag} is for a data file; --probs/--counts design one matrix for the "
                                 "distribution given")
    values = _numbers(args.probs if args.probs is not None else args.counts, "--probs" if args.probs else "--counts")
    labels = None if args.categories is None else [c.strip() for c in args.categories.split(",")]
    opts = DesignChoices.from_namespace(args).options()
    if args.distances is not None:
        if not (args.method == "metric" or args.objective == "distance"):
            raise ParameterError("--distances applies to --objective distance and --method metric")
        opts["distances"] = args.distances
    result = design_matrix(values, method=args.method, epsilon=args.epsilon, options=opts,
                           categories=labels, shares=args.probs is not None, shares_tol=PROBS_TOL)
    return {**result.to_dict(), "family": args.family}


def run(args: argparse.Namespace) -> int:
    """Design one matrix for a distribution (``--probs``/``--counts``) and print it, or design a
    release for the variables of a data file and write its manifest and design record.

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
        Options that do not go together or are missing (e.g. a data file without ``--vars``
        or ``--out``), bad numbers, a missing file or column, or an output that exists without
        ``--force``.

    Examples
    --------
    One matrix for a distribution:

    >>> import contextlib, io, json, os, tempfile
    >>> import pandas as pd
    >>> from pramkit.cli import main
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     code = main(["design", "--probs", "0.5,0.3,0.2", "--epsilon", "1", "--json"])
    >>> matrix = json.loads(out.getvalue())
    >>> code, matrix["method"], matrix["epsilon"], [round(q, 6) for q in matrix["q"]]
    (0, 'dp_optimal', 1.0, [0.576117, 0.576117, 0.576117])

    A release of two variables of a file, the record budget shared equally (randomized
    response reads no frequencies, so the design spends none of it):

    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, manifest = os.path.join(d, "data.csv"), os.path.join(d, "m.json")
    ...     pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20, "sex": ["m", "f"] * 50}).to_csv(data, index=False)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["design", data, "--vars", "region,sex", "--epsilon", "2", "--method", "rr",
    ...                      "--out", manifest, "--quiet"])
    ...     written = sorted(os.listdir(d))
    >>> code, written
    (0, ['data.csv', 'm.design-record.json', 'm.json'])
    >>> print(out.getvalue().splitlines()[0])
    region: epsilon = 1, I(X;Z) = 0.1178 nats on the data
    """
    from pramkit.atomic import check_writable
    from pramkit.engine.receipt import released_guarantee
    from pramkit.engine.rng import SecretKey
    from pramkit.privacy.amplification import release_guarantees
    from pramkit.release.choices import DesignChoices
    from pramkit.release.record import design_record_path, write_design

    if args.derive_from is not None:
        return _derived_mode(args)
    if args.data is None:
        if args.sampling or args.population is not None:
            raise ParameterError("--sampling and --population describe a data file's release: give DATA and --vars")
        out = _distribution_mode(args)
        print_json(out, kind="pramkit.design.matrix") if args.json else _print_matrix(out)
        return 0
    if args.probs or args.counts:
        raise ParameterError("give either a data file or --probs/--counts, not both")
    if not args.vars:
        raise ParameterError("--vars is required with a data file (comma-separated columns to perturb)")
    if not args.out:
        raise ParameterError("--out is required: the manifest to write")
    record_path = design_record_path(args.out, args.design_record)
    inputs = [x for x in (args.data, args.prior, args.forbid, args.key_file,
                          Path(args.categories) if args.categories else None) if x is not None]
    for path in (args.out, record_path):
        check_writable(path, force=args.force, inputs=inputs)
    names = comma_names(args.vars)
    key = SecretKey.from_file(args.key_file) if args.key_file else None
    release = DesignChoices.from_namespace(args).release(args.data, names, key=key, quiet=args.quiet)
    out = write_design(release, args.out, design_record=record_path, force=args.force).to_dict()
    if "sampling" in release.manifest.input:
        out["guarantees"] = release_guarantees(release.manifest).to_dict()
    guarantee = released_guarantee(release.manifest, args.data, sep=args.sep, encoding=args.encoding)  # its columns
    out["guarantee"] = guarantee.to_dict()
    if args.json:
        print_json(out, kind="pramkit.design.release", plain=True)  # JSON values already
    else:
        _print_written(out, release.manifest, guarantee)
    if "target" in release.record.extra and not args.json:
        _print_target(release.record.extra["target"])
    return 0


def _print_target(found: dict) -> None:
    """The budgets ``--target`` explored, the one kept last."""
    print(f"target: at most {100 * found['matched']:.4g} % of records are unique records reproduced exactly "
          f"(keys {', '.join(found['keys'])})")
    print("  record epsilon   expected %   bounds %            records changed %   I(X;Z) kept [nats]")
    for point in found["curve"]:
        kept = "  <- kept" if point["record_epsilon"] == found["record_epsilon"] else ""
        information = point.get("information_nats")
        print(f"  {point['record_epsilon']:14.4g}   {100 * point['matched']:10.3f}   "
              f"{100 * point['matched_lower']:.3f} .. {100 * point['matched_upper']:.3f}   "
              f"{100 * point['changed']:17.2f}   {'n/a' if information is None else f'{information:.4g}':>18}{kept}")






def _derived_mode(args: argparse.Namespace) -> int:
    """``--derive-from``: design the public-use release, write its manifest, print what it keeps."""
    from pramkit.atomic import check_writable
    from pramkit.ledger import fmt_epsilon, release_guarantee
    from pramkit.release.choices import DesignChoices

    if args.data is not None:
        raise ParameterError("--derive-from reads no data file: the second step is designed from the released "
                             "manifest (leave out DATA, and apply the result to the released file)")
    if not args.out:
        raise ParameterError("--out is required: the public-use manifest to write")
    for flag, value in (("--design-record", args.design_record), ("--key-file", args.key_file),
                        ("--probs", args.probs), ("--counts", args.counts)):
        if value is not None:
            raise ParameterError(f"{flag} does not apply to --derive-from: the derived design reads public inputs "
                                 "only, draws no noise and has no private record")
    for flag, value in (("--sampling", args.sampling), ("--population", args.population)):
        if value is not None:
            raise ParameterError(f"{flag} does not apply to --derive-from: the derived manifest states no "
                                 "guarantee of sampling (it would be silently left out)")
    inputs = [Path(x) for x in (args.derive_from, args.prior, args.categories) if x]
    check_writable(args.out, force=args.force, inputs=inputs)
    names = comma_names(args.vars) if args.vars else None
    derived = DesignChoices.from_namespace(args).derive(names)
    derived.manifest.write(args.out, force=args.force)
    out = {**derived.to_dict(), "manifest": str(args.out)}
    if args.json:
        print_json(out, kind="pramkit.design.derived")
        return 0
    for name, v in out["per_variable"].items():
        print(f"{name}: composed epsilon = {fmt_epsilon(v['epsilon'])}, I(X;Z) = {v['information_nats']:.4g} nats "
              f"under the {out['frequencies']}, optimal = {v['optimal']}")
    guarantee = release_guarantee(derived.manifest)  # no file read: the released file's columns are not known
    print(f"wrote {args.out} (public; record epsilon {guarantee.figure}, the pair's "
          f"{fmt_epsilon(out['pair_record_epsilon'])}): apply it to the released file "
          f"{out['derived_from']['manifest']} describes")
    print("\n".join(guarantee.lines()))
    return 0


def _print_written(out: dict[str, Any], manifest: Any, guarantee: Any) -> None:
    """What was designed and written, the guarantee (:func:`pramkit.engine.receipt.released_guarantee`), the notes."""
    from pramkit.ledger import RELEASED_EXACTLY, fmt_epsilon

    for n, v in out["per_variable"].items():
        info = v["information_nats"]
        if n not in manifest.names and not any(n in w.columns for w in manifest.variables):
            print(f"{n}: {RELEASED_EXACTLY}")  # the optimal split gave it nothing: it is not perturbed at all
            continue
        print(f"{n}: epsilon = {fmt_epsilon(float(v['epsilon']))}"  # "inf" in JSON values
              + ("" if info is None else f", I(X;Z) = {info:.4g} nats on the data"))
    if out["total_information_nats"] is not None:
        print(f"total I = {out['total_information_nats']:.4g} nats")
    for key in ("worst_posterior", "l2_loss"):
        if key in out:
            print(f"{key.replace('_', ' ')}: {out[key]:.4g}")
    print(f"wrote {out['manifest']} (public; record epsilon {guarantee.figure}) and {out['design_record']} "
          "(private: never publish it)")
    print("\n".join(guarantee.lines()))
    if "guarantees" in out:
        from pramkit.privacy.amplification import release_guarantees

        print("\n".join(release_guarantees(manifest).lines()))
    _print_notes(out)


def _print_notes(out: dict[str, Any]) -> None:
    for note in out.get("notes", []):
        print(f"note: {note}")
    for w in out.get("warnings", []):
        print(f"warning: {w}")


def _print_matrix(out: dict[str, Any]) -> None:
    from pramkit.ledger import fmt_epsilon

    timing = "" if out["seconds"] is None else f", {out['seconds']:.3g} s"
    optimal = f", optimal = {out['optimal']}" if out["certificate"] else ""
    info = out["mutual_information_nats"]
    eps = out["epsilon"]
    print(f"{out['method']}: I(X;Z) = {'n/a' if info is None else f'{info:.6g}'} nats, "
          f"epsilon = {eps if isinstance(eps, str) else fmt_epsilon(eps)}{optimal}{timing}")
    print("q = " + ", ".join(f"{x:.6g}" for x in out["q"]))
    _print_notes(out)
