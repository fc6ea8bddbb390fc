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


#: Runs the command line on a file, then prints the modules of the probed libraries it imported, exit status or not.
_WORK_PROBE = """
import sys
from pramkit.cli import main
try:
    main(sys.argv[1:])
finally:
    print("loaded:", *sorted(name for name in {PROBED!r} if name in sys.modules))
"""

#: ``scipy.stats`` alone takes over a second to import (it parses its distributions' docstrings): a command
#: that only needs a quantile or a tail probability takes it from ``scipy.special``.
PROBED = ("scipy.stats",)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """sdcMicro's testdata (real survey records; water, roof and sex perturbed) released by the command line."""
    from conftest import SDC_DATA

    if not (SDC_DATA / "testdata.csv").is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    from pramkit.cli import main

    d = tmp_path_factory.mktemp("startup")
    files = {"data": str(SDC_DATA / "testdata.csv"), "manifest": str(d / "m.json"),
             "released": str(d / "released.csv"), "key": str(d / "k.key")}
    main(["keygen", files["key"]])
    main(["design", files["data"], "--vars", "water,roof,sex", "--epsilon", "3", "--out", files["manifest"],
          "--quiet"])
    main(["apply", files["data"], "--manifest", files["manifest"], "--out", files["released"],
          "--key-file", files["key"], "--quiet"])
    return files


WORK = {
    "estimate": ["estimate", "{released}", "--manifest", "{manifest}", "--vars", "water", "--by", "sex"],
    "audit": ["audit", "--manifest", "{manifest}", "--released", "{released}", "--original", "{data}"],
    "risk": ["risk", "{data}", "--keys", "water,roof,sex"],
    "design": ["design", "{data}", "--vars", "water", "--epsilon", "2", "--out", "{manifest}.2.json"],
    "report": ["report", "{data}", "--manifest", "{manifest}", "--released", "{released}", "--keys", "water,roof,sex",
               "--out", "{released}.html", "--quiet"],
}


@pytest.mark.parametrize("command", list(WORK))
def test_a_command_on_a_file_does_not_import_scipy_stats(release: dict[str, str], command: str) -> None:
    argv = [a.format(**release) for a in WORK[command]]
    proc = subprocess.run([sys.executable, "-c", _WORK_PROBE.format(PROBED=PROBED), *argv],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "loaded:"
