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
from typing import Any, NotRequired, TypedDict

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


class MatrixOutput(TypedDict):
    """What ``pramkit design --probs/--counts --json`` prints (``pramkit.design.matrix``; the JSON Schema is
    made from it, :mod:`pramkit.outputs`): :meth:`pramkit.design.matrix_design.MatrixDesign.to_dict` and the
    family asked for."""

    method: str
    q: list[float]
    categories: list[int | str]
    form: str
    w: NotRequired[list[float]]  # the diagonal form's (not --family general's dense matrix)
    matrix: list[list[float]]
    mutual_information_nats: float
    epsilon: float
    optimal: bool
    certificate: dict[str, Any]
    seconds: float
    notes: list[str]
    warnings: list[str]
    measures: NotRequired[dict[str, Any]]
    family: str


class ReleaseOutput(TypedDict):
    """What ``pramkit design DATA --out M.json --json`` prints (``pramkit.design.release``): the design
    record's fields (:meth:`pramkit.release.record.DesignRecord.to_dict`), where the files are, the public
    epsilons and ledger (:meth:`pramkit.release.record.WrittenDesign.to_dict`) and the guarantees."""

    private: str
    data: str
    sha256: str
    rows: int
    missing_rows: int
    method: str
    split: str
    options: dict[str, Any]
    variables: list[str]
    epsilons: dict[str, float]
    information_nats: dict[str, float]
    total_information_nats: float | None
    per_variable: dict[str, dict[str, Any]]
    matrices: dict[str, dict[str, Any]]
    seconds: float
    warnings: list[str]
    notes: list[str]
    manifest: str
    design_record: str
    record_epsilon: float
    ledger: dict[str, Any]
    record_epsilon_given_structure: NotRequired[float]
    guarantees: NotRequired[dict[str, Any]]
    guarantee: dict[str, Any]


class DerivedVariable(TypedDict):
    """One variable of a derived release (:meth:`pramkit.release.derive.DerivedRelease.to_dict`)."""

    epsilon: float
    information_nats: float
    optimal: bool | None


class DerivedOutput(TypedDict):
    """What ``pramkit design --derive-from M.json --json`` prints (``pramkit.design.derived``):
    :meth:`pramkit.release.derive.DerivedRelease.to_dict` and the manifest written."""

    per_variable: dict[str, DerivedVariable]
    frequencies: str
    record_epsilon: float
    pair_record_epsilon: float
    derived_from: dict[str, Any]
    manifest: str

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
    from pramkit.release.spec import GROUPS, ReleaseSpec
    from pramkit.settings import add_arguments

    p = sub.add_parser(
        "design", help=HELP["design"],
        description="Design a PRAM matrix for a distribution (--probs/--counts), or a release for the variables "
                    "of a data file (--vars): the public manifest for `pramkit apply` and a private design record.")
    p.add_argument("data", nargs="?", type=Path, help="data file (CSV, Parquet, Stata, SPSS) to design from")
    p.add_argument("--vars", "--keys", dest="vars",
                   help="comma-separated columns of DATA to perturb (the key variables for --recognition)")
    p.add_argument("--probs", help="comma-separated probabilities of the categories (sum 1)")
    p.add_argument("--counts", help="comma-separated counts or weights of the categories (normalised)")
    add_arguments(p, ReleaseSpec, GROUPS)  # every design setting, declared once (pramkit.release.spec)
    p.add_argument("--out", type=Path, help="manifest to write (data mode): public, published with the release")
    p.add_argument("--design-record", type=Path, help="private design record to write (default: beside --out, "
                   "named OUT_STEM.design-record.json); never publish it")
    p.add_argument("--key-file", type=Path, help="secret key file (`pramkit keygen`): the design step's DP "
                   "noise is drawn from it, so the same key designs the same manifest (default: fresh noise "
                   "from the operating system)")
    p.add_argument("--force", action="store_true", help="overwrite --out and the design record if they exist")
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
              getattr(args, "recoded_by", None), getattr(args, "suppressed_by", None)]
    return inputs, [args.out, design_record_path(args.out, args.design_record)]


def _numbers(text: str, flag: str) -> list[float]:
    values = comma_numbers(text, flag)
    if len(values) < 2:
        raise ParameterError(f"{flag} needs at least two categories")
    return values


def _distribution_mode(args: argparse.Namespace) -> dict[str, Any]:
    """``--probs`` / ``--counts``: one matrix for a distribution the user gives (a public input)."""
    from pramkit.design.matrix_design import design_matrix
    from pramkit.release.spec import ReleaseSpec

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
    opts = ReleaseSpec.from_namespace(args).options()
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
    from pramkit.kernel.rng import SecretKey
    from pramkit.privacy.amplification import release_guarantees
    from pramkit.release.record import design_record_path, write_design
    from pramkit.release.spec import ReleaseSpec

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
    release = ReleaseSpec.from_namespace(args).release(args.data, names, key=key, quiet=args.quiet)
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
    """The budgets ``--target`` explored, the one kept last.

    Examples
    --------
    >>> point = {"record_epsilon": 2.0, "matched": 0.04, "matched_lower": 0.01, "matched_upper": 0.05,
    ...          "matched_quantile": 0.048, "changed": 0.5, "information_nats": 1.5}
    >>> _print_target({"matched": 0.05, "level": 0.95, "keys": ["a"], "record_epsilon": 2.0, "curve": [point]})
    target: at most 5 % of all records unique records reproduced exactly in at least 95 % of releases (Chernoff bound) (keys a)
      record epsilon   expected %   bounds %              95 % of releases %   records changed %   I(X;Z) kept [nats]
                   2        4.000   1.000 .. 5.000                  4.800               50.00                  1.5  <- kept
    """
    from pramkit.release.tuned import DisclosureTarget

    level = found.get("level")
    print(f"target: {DisclosureTarget(found['matched'], level).describe()} (keys {', '.join(found['keys'])})")
    quantile = f"{f'{100 * level:.4g} % of releases %':>20}   " if level is not None else ""
    print(f"  record epsilon   expected %   bounds %            {quantile}records changed %   I(X;Z) kept [nats]")
    for point in found["curve"]:
        kept = "  <- kept" if point["record_epsilon"] == found["record_epsilon"] else ""
        information = point.get("information_nats")
        bound = f"{100 * point['matched_quantile']:20.3f}   " if level is not None else ""
        print(f"  {point['record_epsilon']:14.4g}   {100 * point['matched']:10.3f}   "
              f"{100 * point['matched_lower']:.3f} .. {100 * point['matched_upper']:.3f}   {bound}"
              f"{100 * point['changed']:17.2f}   {'n/a' if information is None else f'{information:.4g}':>18}{kept}")


def _derived_mode(args: argparse.Namespace) -> int:
    """``--derive-from``: design the public-use release, write its manifest, print what it keeps."""
    from pramkit.atomic import check_writable
    from pramkit.ledger import fmt_epsilon, release_guarantee
    from pramkit.release.spec import ReleaseSpec

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
    derived = ReleaseSpec.from_namespace(args).derive(names)
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
    from pramkit.ledger import RELEASED_EXACTLY, epsilon_words, fmt_epsilon

    for n, v in out["per_variable"].items():
        info = v["information_nats"]
        if n not in manifest.names and not any(n in w.columns for w in manifest.variables):
            print(f"{n}: {RELEASED_EXACTLY}")  # the optimal split gave it nothing: it is not perturbed at all
            continue
        var = manifest.variables[manifest.names.index(n)] if n in manifest.names else None
        stated = (epsilon_words(var.epsilon, var.block_epsilon) if var is not None and var.is_structured else
                  fmt_epsilon(float(v["epsilon"])))  # as every surface states it ("inf" in JSON values)
        print(f"{n}: epsilon = {stated}" + ("" if info is None else f", I(X;Z) = {info:.4g} nats on the data"))
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
