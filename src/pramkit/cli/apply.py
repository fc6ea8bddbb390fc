"""``pramkit apply DATA --manifest M.json --out OUT``: perturb a file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.cli._common import Files, add_csv_dialect, add_engine_options, add_na_values, add_quiet, figure, print_json
from pramkit.cli.commands import HELP
from pramkit.release.apply_spec import ApplySpec
from pramkit.settings import add_arguments

if TYPE_CHECKING:
    from pramkit.engine.perturb import ApplyResult
    from pramkit.ledger import Guarantee
    from pramkit.manifest import Manifest


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit apply`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["apply", "data.csv", "--manifest", "m.json", "--out", "released.parquet",
    ...                           "--key-file", "secret.key", "--quiet"])
    >>> str(args.data), str(args.manifest), str(args.out), str(args.key_file), args.quiet
    ('data.csv', 'm.json', 'released.parquet', 'secret.key', True)
    >>> from pramkit.defaults import CHUNK_ROWS
    >>> args.engine, args.chunk_rows == CHUNK_ROWS, args.na_values, args.func is run
    ('local', True, ('NA',), True)
    >>> args.shuffle, args.public_columns, args.release
    (False, '', None)
    """
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
    # every apply setting declared once (pramkit.release.apply_spec), its flags in the order --help lists them
    add_arguments(p, ApplySpec, names=("chunk_rows",))
    add_na_values(p)
    add_csv_dialect(p)
    add_arguments(p, ApplySpec, names=("threads",))
    add_engine_options(p, "a Spark job writing a folder of part files")
    add_arguments(p, ApplySpec, names=("shuffle", "public_columns", "release"))
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_quiet(p)
    p.set_defaults(func=run, files=files)


def files(args: argparse.Namespace) -> Files:
    """What ``pramkit apply`` reads (the data, the manifest, the key file) and writes (the release, its receipt).

    Examples
    --------
    >>> import argparse
    >>> inputs, outputs = files(argparse.Namespace(data=Path("d.csv"), manifest=Path("m.json"),
    ...                                            key_file=None, out=Path("r.csv")))
    >>> [str(p) for p in inputs if p], [str(p) for p in outputs]
    (['d.csv', 'm.json'], ['r.csv', 'r.csv.receipt.json'])
    """
    from pramkit.engine.receipt import receipt_path

    return [args.data, args.manifest, args.key_file], [args.out, receipt_path(args.out)]


def print_summary(result: ApplyResult, guarantee: Guarantee | None = None, manifest: Manifest | None = None) -> None:
    """Print what ``pramkit apply`` did: the file written, its receipt, the key, the changes per variable
    and the ledger's guarantee.

    Parameters
    ----------
    result : pramkit.engine.perturb.ApplyResult
        The outcome of :func:`pramkit.apply_file` (or of the Spark engine).
    guarantee : pramkit.ledger.Guarantee, optional
        The release's guarantee (:func:`pramkit.engine.receipt.released_guarantee`); without it, the
        manifest's record epsilon alone.
    manifest : pramkit.Manifest, optional
        The manifest applied: says which records a variable counts as missing (a joint variable's or a
        stratified one's records with a missing column).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> import pramkit
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.engine.receipt import released_guarantee
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, manifest = os.path.join(d, "data.csv"), os.path.join(d, "m.json")
    ...     pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20}).to_csv(data, index=False)
    ...     _ = pramkit.Manifest.of({"region": randomized_response([1, 2, 3], 1.0)}).write(manifest)
    ...     result = pramkit.apply_file(data, manifest, os.path.join(d, "released.csv"), key=bytes(32), quiet=True)
    ...     m = pramkit.Manifest.read(manifest)
    ...     print_summary(result, released_guarantee(m, result.output), m)  # doctest: +ELLIPSIS
    wrote ...released.csv: 100 rows in ... s
    receipt: ...released.csv.receipt.json (public: which manifest made the release)
    key: the key given by the caller, fingerprint cefdef73c38963ef
      region: 41 values changed (41 % of non-missing), 0 missing left as they were
    record epsilon: 1 (design step plus the perturbation)
    Not covered by a DP mechanism: which values of region are missing; the manifest has no privacy ledger, ...
    The released file shows exactly, as the original does: which values of region are missing; ...
    """
    print(f"wrote {result.output}: {result.rows:,} rows in {result.seconds:.2f} s")
    if result.receipt:
        print(f"receipt: {result.receipt} (public: which manifest made the release)")
    print(f"key: {result.key_source}, fingerprint {result.key_fingerprint}")
    for v in result.variables:
        variable = None if manifest is None or v.name not in manifest.names else manifest[v.name]
        missing = v.missing - v.outside  # a rule breaker is counted with the missing values, and is not one
        if variable is not None and (variable.given or variable.own_columns_joint):
            what = f"{missing:,} records missing one of {', '.join(variable.read_columns)} (missing values left missing)"
        else:
            what = f"{missing:,} missing left as they were"
        print(f"  {v.name}: {v.changed:,} values changed ({figure(100 * v.changed_share, 3)} % of non-missing), "
              + what + (f", {v.outside:,} records that break an edit rule released unperturbed" if v.outside else ""))
    if result.release:
        print(f"release label: {result.release} (public, in the receipt: the release is made again only with it)")
    if not result.variables:
        print(f"  perturbed: {', '.join(result.perturbed)} (changes are not counted on Spark)")
    if guarantee is None:
        print(f"record epsilon: {figure(result.record_epsilon)} (design step plus the perturbation)")
    else:
        print("\n".join(guarantee.lines()))
    if result.guarantees is not None:
        for line in result.guarantees.lines():
            print(line)


def run(args: argparse.Namespace) -> int:
    """Perturb the file with the manifest's matrices, write the release and print a summary.

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
        A file is missing or unreadable, the data do not fit the manifest, or the output
        exists without ``--force``.

    Examples
    --------
    A key file makes the release reproducible (here a fixed key, for the example only; make
    yours with ``pramkit keygen``):

    >>> import contextlib, io, json, os, tempfile
    >>> import pandas as pd
    >>> import pramkit
    >>> from pramkit.cli import main
    >>> from pramkit.design.classic import randomized_response
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data, manifest, key = (os.path.join(d, name) for name in ("data.csv", "m.json", "key"))
    ...     pd.DataFrame({"region": [1, 2, 3, 1, 2] * 20}).to_csv(data, index=False)
    ...     _ = pramkit.Manifest.of({"region": randomized_response([1, 2, 3], 1.0)}).write(manifest)
    ...     with open(key, "w") as f:
    ...         _ = f.write(bytes(range(7, 39)).hex())
    ...     os.chmod(key, 0o600)
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["apply", data, "--manifest", manifest, "--out", os.path.join(d, "released.csv"),
    ...                      "--key-file", key, "--quiet", "--json"])
    ...     released = pd.read_csv(os.path.join(d, "released.csv"))
    ...     differ = int((released["region"] != pd.read_csv(data)["region"]).sum())
    >>> summary = json.loads(out.getvalue())
    >>> code, summary["rows"], summary["variables"][0]["changed"], summary["record_epsilon"]
    (0, 100, 41, 1.0)
    >>> differ                                                  # the records the summary counts as changed
    41
    """
    from pramkit.kernel.rng import SecretKey
    from pramkit.settings import checked, from_namespace

    spec = from_namespace(ApplySpec, args)
    with checked(spec):  # every setting once, before anything is read; the apply below does not check again
        key = SecretKey.from_file(args.key_file) if args.key_file else None
        result = spec.apply(args.data, args.manifest, args.out, key=key, force=args.force, quiet=args.quiet)
    if args.json:
        print_json(result.to_dict(), kind="pramkit.apply.result")
    else:
        from pramkit.engine.receipt import released_guarantee
        from pramkit.manifest import Manifest

        manifest = Manifest.read(args.manifest)
        print_summary(result, released_guarantee(manifest, args.out, sep=args.sep, encoding=args.encoding), manifest)
    return 0
