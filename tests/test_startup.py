"""The command line starts light: no command's ``--help`` (nor ``--version``) imports a heavy library."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pramkit.cli.commands import HELP

HEAVY = ("scipy", "matplotlib", "pandas", "pyarrow", "pyspark")

#: Runs the command line in a fresh interpreter, then prints the heavy packages it imported.
_PROBE = """
import sys
from pramkit.cli import main
main(sys.argv[1:])
print("heavy:", *sorted(name for name in {HEAVY!r} if name in sys.modules))
"""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], *([name, "--help"] for name in HELP)],
                         ids=lambda argv: " ".join(argv))
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(HEAVY=HEAVY), *argv],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines()[-1] == "heavy:"
