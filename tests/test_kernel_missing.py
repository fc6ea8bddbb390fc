"""Without its compiled kernel (a source tree never built, an install made without a C compiler), pramkit
says so in one line, as an :class:`ImportError`, and the command line exits 2: never a bare traceback.

The kernel is hidden from a fresh interpreter by an import hook that refuses ``pramkit.kernel._kernels``,
as Python does when the extension module is absent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SDC_DATA

HIDE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pramkit.kernel._kernels":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", HIDE + code, *args], capture_output=True, text=True, timeout=120)


def test_the_library_raises_an_import_error_that_says_what_to_install() -> None:
    done = _run("import pramkit\n"
                "try:\n"
                "    from pramkit.kernel import _kernels\n"
                "except ImportError as exc:\n"
                "    print(type(exc).__name__, isinstance(exc, pramkit.errors.PramkitError), exc)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("KernelMissingError True pramkit's compiled kernel"), done.stdout
    assert "C compiler" in done.stdout


def test_a_command_says_it_in_one_line(tmp_path: Path) -> None:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    done = _run("import sys\nfrom pramkit.cli import main\nsys.exit(main(sys.argv[1:]))\n",
                "design", str(SDC_DATA / "testdata.csv"), "--vars", "roof", "--epsilon", "2",
                "--out", str(tmp_path / "m.json"))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "compiled kernel" in lines[0] and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
