"""Helpers shared by the subcommands: JSON output, progress flags."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pramkit._json import to_jsonable


def print_json(obj: Any) -> None:
    """One JSON object on stdout."""
    json.dump(to_jsonable(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars or chatter on stderr")
