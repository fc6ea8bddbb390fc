"""``pramkit inspect M.json``: what a manifest guarantees, variable by variable, and its ledger."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from pramkit.cli._common import Files, figure, print_json
from pramkit.cli.commands import HELP
from pramkit.ledger import ExactFact
from pramkit.manifest import Manifest

#: A category's label as printed: a text or a whole number.
PrintedLabel = int | str


class InspectedVariable(TypedDict):
    """One variable of ``pramkit inspect --json`` (:meth:`pramkit.manifest.Manifest.describe`, with the
    epsilon in words)."""

    name: str
    columns: list[str]
    categories: list[PrintedLabel | list[PrintedLabel]]
    epsilon: float
    epsilon_given_block: NotRequired[float]
    released_exactly: NotRequired[str | None]
    given: NotRequired[list[str]]
    unit: NotRequired[str]
    bistochastic: bool
    min_diagonal: float
    truthful: bool
    missing: str
    method: str
    epsilon_stated: str


class PostProcessing(TypedDict):
    """The release a post-processed file comes from (:func:`pramkit.engine.receipt.post_processing_chain`)."""

    method: str | None
    release: str
    release_sha256: str | None
    beside: bool
    digest_matches: bool | None


class InspectOutput(TypedDict):
    """What ``pramkit inspect M.json --json`` prints (``pramkit.inspect.result``; the JSON Schema is made
    from it, :mod:`pramkit.outputs`): :meth:`pramkit.manifest.Manifest.describe` and what :func:`run` adds."""

    variables: list[InspectedVariable]
    perturbation_epsilon: float
    design_epsilon: float
    record_epsilon: float
    record_epsilon_given_structure: NotRequired[float]
    ledger: dict[str, Any] | None
    released_exactly_facts: list[ExactFact]
    guarantee: str
    swapping: NotRequired[dict[str, Any]]
    guarantees: dict[str, Any]
    recode: dict[str, dict[str, Any]] | None
    post_processing: PostProcessing | None
    release_guarantee: dict[str, Any]
    ddi: NotRequired[str]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit inspect`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["inspect", "manifest.json", "--json"])
    >>> args.command, str(args.manifest), args.json, args.func is run
    ('inspect', 'manifest.json', True, True)
    >>> parser.parse_args(["inspect", "m.json", "--sampling", "poisson:0.05"]).sampling
    'poisson:0.05'
    """
    p = sub.add_parser("inspect", help=HELP["inspect"],
                       description="Per variable: categories, epsilon, bistochastic, smallest diagonal entry; "
                       "the design step's epsilon, the record's total epsilon and the guarantee sentence.")
    p.add_argument("manifest", type=Path, help="manifest JSON")
    p.add_argument("--sampling", metavar="DESIGN",
                   help="the file is a secret sample: srswor:M/N (M: the rows of --released, checked), poisson:Q (with "
                        "--population N) or stratified:Q1,Q2,... (default: the design the manifest records, if any)")
    p.add_argument("--population", type=int, metavar="N",
                   help="the population the released file (--released) was drawn from: a simple random sample of its "
                        "rows from N persons, or with --sampling poisson:Q the population of the Poisson sample")
    p.add_argument("--released", type=Path, metavar="FILE",
                   help="a file the manifest made: its receipt gives its rows and, if shuffled, its central guarantee")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--ddi", type=Path, metavar="FILE",
                   help="also write a DDI-Codebook 2.5 description of the release (XML: variables, categories, the "
                        "perturbation and its guarantee as methodology text, the manifest as the file holding the "
                        "matrices; with --released, the released file and its columns); publishable")
    p.add_argument("--force", action="store_true", help="overwrite --ddi FILE if it exists")
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit inspect`` reads (the manifest, the released file) and writes (``--ddi``).

    Examples
    --------
    >>> inputs, outputs = files(argparse.Namespace(manifest=Path("m.json"), released=None, ddi=Path("r.xml")))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs if p]
    (['m.json'], ['r.xml'])
    """
    return [args.manifest, args.released], [getattr(args, "ddi", None)]


def run(args: argparse.Namespace) -> int:
    """Print what the manifest guarantees: a table of its variables and its ledger, or one JSON object.

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
        The manifest is missing or not a valid manifest.

    Examples
    --------
    >>> import contextlib, io, json, os, tempfile
    >>> import pramkit
    >>> from pramkit.cli import main
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     manifest = os.path.join(d, "m.json")
    ...     _ = pramkit.Manifest.of({"region": randomized_response([1, 2, 3], 1.0),
    ...                              "sex": randomized_response(["m", "f"], 0.5)}).write(manifest)
    ...     with contextlib.redirect_stdout(io.StringIO()) as text:
    ...         code = main(["inspect", manifest])
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         json_code = main(["inspect", manifest, "--json"])
    >>> code
    0
    >>> print(text.getvalue().splitlines()[0])
    variable     S     epsilon  given block   min diag  bistochastic  method
    >>> print(text.getvalue().splitlines()[1])
    region       3           1            1   0.576117  yes           randomized_response
    >>> info = json.loads(out.getvalue())
    >>> json_code, info["record_epsilon"], [v["name"] for v in info["variables"]]
    (0, 1.5, ['region', 'sex'])
    """
    from pramkit.engine.receipt import inspect_guarantees, released_guarantee
    from pramkit.ledger import described_epsilon_words
    from pramkit.privacy.kinds import kind_lines

    manifest = Manifest.read(args.manifest)
    info = manifest.describe()
    for v in info["variables"]:  # the words every surface states it in: "local inf; 1.35 given the structure"
        v["epsilon_stated"] = described_epsilon_words(v)
    guarantees = inspect_guarantees(manifest, sampling=args.sampling, population=args.population,
                                    released=args.released)
    info["guarantees"] = guarantees.to_dict()
    from pramkit.recode import recoding_lines

    recoded = recoding_lines(manifest)  # the global recoding the data holder declared (design --recoded-by)
    info["recode"] = (manifest.input or {}).get("recode")
    from pramkit.engine.receipt import post_processing_chain

    chain = info["post_processing"] = post_processing_chain(args.released)  # a resampled file: its release
    stated = released_guarantee(manifest, args.released)  # with a released file, its columns are named
    info["guarantee"] = stated.sentence
    info["release_guarantee"] = stated.to_dict()
    if args.ddi is not None:
        from pramkit.report.ddi import write_ddi

        info["ddi"] = str(write_ddi(manifest, args.ddi, released=args.released, force=args.force,
                                    inputs=(args.manifest, args.released), manifest_name=args.manifest.name))
    if args.json:
        print_json(info, kind="pramkit.inspect.result")
        return 0
    width = max(len("variable"), *(len(v["name"]) for v in info["variables"]))
    print(f"{'variable':<{width}}  {'S':>4}  {'epsilon':>10}  {'given block':>11}  {'min diag':>9}  "
          "bistochastic  method")
    for v in info["variables"]:
        print(
            f"{v['name']:<{width}}  {len(v['categories']):>4}  {figure(v['epsilon']):>10}  "
            f"{figure(v.get('epsilon_given_block', v['epsilon'])):>11}  "
            f"{figure(v['min_diagonal']):>9}  {'yes' if v['bistochastic'] else 'no':<12}  {v['method']}"
            + (f"  (epsilon {v['epsilon_stated']})" if "epsilon_given_block" in v else "")
            + (f"  (strata: {', '.join(v['given'])})" if v.get("given") else "")
            + (f"  (once per household: {v['unit']})" if v.get("unit") else "")
        )
    print(f"perturbation epsilon: {figure(info['perturbation_epsilon'])} (the variables' sum)")
    if info["ledger"] is not None:
        ledger = info["ledger"]
        print(f"design epsilon: {figure(info['design_epsilon'])} (frequencies: {ledger['frequencies']}"
              + (f", prior {ledger['prior']!r}" if ledger["prior"] else "") + ")")
    for line in kind_lines(stated.kinds):  # every other privacy model stated (pramkit.privacy.kinds)
        print(line)
    for fact in info["released_exactly_facts"]:
        print(f"shown exactly ({fact['kind']}): {fact['reveals']}"
              + ("" if fact["covered"] else " (no epsilon covers these values)"))
    for line in recoded:
        print(f"recoded before PRAM: {line}")
    if chain is not None:
        print(f"released file: post-processing ({chain['method']}) of the release {chain['release']}, as its "
              "receipt says: the guarantee below is that release's, unchanged; "
              + ("that release is not beside it" if not chain["beside"] else
                 "that release, beside it, has the SHA-256 the receipt states" if chain["digest_matches"] else
                 "that release, beside it, does NOT have the SHA-256 the receipt states (another file)"))
    print("\n".join(stated.lines()))
    print("\n".join(guarantees.lines()))
    if args.ddi is not None:
        print(f"DDI-Codebook 2.5: {info['ddi']} (may be published)")
    return 0
