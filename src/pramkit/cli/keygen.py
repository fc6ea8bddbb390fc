"""``pramkit keygen FILE``: write a new secret key file; ``--fingerprint``: print an existing one's fingerprint."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli.commands import HELP
from pramkit.kernel.rng import SecretKey, write_key_file


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pramkit keygen`` to the subcommands.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommands of the ``pramkit`` parser.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pramkit")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["keygen", "secret.key"])
    >>> args.command, str(args.file), args.fingerprint, args.func is run
    ('keygen', 'secret.key', False, True)
    """
    p = sub.add_parser("keygen", help=HELP["keygen"],
                       description="Write a new random key to FILE as 64 hexadecimal digits (mode 0600; "
                       "an existing file is never overwritten). Keep it apart from the release: "
                       "whoever holds it can undo the perturbation.")
    p.add_argument("file", type=Path, help="the key file: written (mode 0600, never over an existing file), or read "
                   "with --fingerprint")
    p.add_argument("--fingerprint", action="store_true",
                   help="write nothing: print the fingerprint of the key in the existing FILE, to tell which "
                   "release it made: `pramkit apply` prints the fingerprint of its key (key_fingerprint in "
                   "--json), and so does the app's export (reproduce.sh and summary.json, both private); the "
                   "manifest and the receipt never record the key or its fingerprint")
    p.set_defaults(func=run, files=lambda args: ([args.file], []) if args.fingerprint else ([], [args.file]))


def run(args: argparse.Namespace) -> int:
    """Write a new random key file (:func:`pramkit.kernel.rng.write_key_file`) and print its fingerprint;
    with ``--fingerprint``, only print the fingerprint of the key in the existing file.

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
    KeyFileError
        The file exists (a key file is never overwritten); with ``--fingerprint``, it is missing or
        does not look like a key.
    WriteError
        The file cannot be written.

    Examples
    --------
    >>> import contextlib, io, os, sys, tempfile
    >>> from pramkit.cli import main
    >>> with tempfile.TemporaryDirectory() as d:
    ...     key = os.path.join(d, "key")
    ...     main(["keygen", key])  # doctest: +ELLIPSIS
    ...     with open(key) as f:
    ...         digits = len(f.read().strip())
    ...     with contextlib.redirect_stderr(sys.stdout):
    ...         main(["keygen", key])                             # never overwritten
    wrote a 256-bit key to ...key (fingerprint ...); keep it secret and away from the release
    0
    pramkit keygen: error: '...key' exists; a key file is never overwritten
    2
    >>> digits                                                  # hexadecimal: 256 bits
    64

    The fingerprint of an existing key file (nothing written):

    >>> from pramkit.kernel.rng import SecretKey
    >>> with tempfile.TemporaryDirectory() as d:
    ...     key = os.path.join(d, "key")
    ...     with contextlib.redirect_stdout(io.StringIO()):
    ...         _ = main(["keygen", key])
    ...     with contextlib.redirect_stdout(io.StringIO()) as out:
    ...         code = main(["keygen", key, "--fingerprint"])
    ...     print(code, out.getvalue().strip() == SecretKey.from_file(key).fingerprint)
    0 True
    """
    if args.fingerprint:
        print(SecretKey.from_file(args.file).fingerprint)
        return 0
    path = write_key_file(args.file)
    fingerprint = SecretKey.from_file(path).fingerprint
    print(f"wrote a 256-bit key to {path} (fingerprint {fingerprint}); keep it secret and away from the release")
    return 0
