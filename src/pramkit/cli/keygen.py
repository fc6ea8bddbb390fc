"""``pramkit keygen FILE``: write a new secret key file."""

from __future__ import annotations

import argparse
from pathlib import Path

from pramkit.cli.commands import HELP
from pramkit.rng import SecretKey, write_key_file


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keygen", help=HELP["keygen"],
                       description="Write a new random key to FILE as 64 hexadecimal digits (mode 0600; "
                       "an existing file is never overwritten). Keep it apart from the release: "
                       "whoever holds it can undo the perturbation.")
    p.add_argument("file", type=Path)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = write_key_file(args.file)
    fingerprint = SecretKey.from_file(path).fingerprint
    print(f"wrote a 256-bit key to {path} (fingerprint {fingerprint}); keep it secret and away from the release")
    return 0
