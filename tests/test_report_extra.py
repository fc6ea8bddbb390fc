"""Matplotlib is the extra ``report``: what draws figures says so when it is missing, before any work.

The absence is simulated two ways: ``sys.modules["matplotlib"] = None`` in this process (as
tests/test_extras.py does for the other extras), and, for the command line as a user runs it, a fresh
interpreter whose import system refuses matplotlib.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_refused

import pramkit
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.errors import MissingExtraError, PramkitError

ROOT = Path(__file__).resolve().parents[1]
MESSAGE = 'needs matplotlib, which is not installed: pip install "pramkit[report]"'
#: The modules that check for matplotlib when imported (forgotten so that the import runs again).
REPRODUCTIONS = ("ayed2020", "cator", "shlomo2012")


def _no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import matplotlib`` (and of any submodule) fails as when it is not installed; the reproductions,
    which check on import, are imported again."""
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    for name in REPRODUCTIONS:
        monkeypatch.delitem(sys.modules, f"pramkit.reproduce.{name}", raising=False)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An original file, its manifest and its release (2,000 census-like persons, age and sex perturbed)."""
    folder = tmp_path_factory.mktemp("release")
    data = census(2_000)
    data.to_csv(folder / "census.csv", index=False)
    manifest = pramkit.design_release(data, ["age", "sex"], epsilon=3.0, categories=CENSUS_VARIABLES)
    manifest.write(folder / "manifest.json")
    pramkit.apply_file(folder / "census.csv", manifest, folder / "released.csv", key=bytes(32))
    return {"data": folder / "census.csv", "manifest": folder / "manifest.json", "released": folder / "released.csv"}


def _library_calls(release: dict[str, Path], out: Path) -> list[tuple[str, Callable[[], Any]]]:
    from pramkit._figure import new_figure
    from pramkit.demo import run_demo
    from pramkit.risk.loglinear import fit_loglinear
    from pramkit.risk.plots import plot_fit
    from pramkit.utility import plot_privacy_utility, privacy_utility_curve

    fit = fit_loglinear(np.array([[3.0, 1.0], [0.0, 2.0]]), ["a", "b"])
    curve = privacy_utility_curve(np.array([0.5, 0.5]), [1.0, 2.0], n=100)
    absent = out / "absent.csv"  # the check comes first: an absent input is not what is reported
    return [
        ("new_figure", lambda: new_figure("a figure")),
        ("build_report", lambda: pramkit.build_report(absent, release["manifest"], absent, ["age"])),
        ("build_public_report", lambda: pramkit.build_public_report(release["manifest"], absent)),
        ("run_demo", lambda: run_demo(out / "demo", rows=2_000)),
        ("plot_fit", lambda: plot_fit(fit, out / "fit.png")),
        ("plot_privacy_utility", lambda: plot_privacy_utility(curve, out / "curve.png")),
        *((f"import {name}", lambda name=name: importlib.import_module(f"pramkit.reproduce.{name}"))
          for name in REPRODUCTIONS),
    ]


def test_the_library_names_the_extra_before_any_work(release, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    calls = _library_calls(release, out)
    _no_matplotlib(monkeypatch)
    for label, call in calls:
        with pytest.raises(MissingExtraError) as caught:
            call()
        message = str(caught.value)
        assert isinstance(caught.value, PramkitError) and isinstance(caught.value, ImportError), label
        assert message.endswith(MESSAGE) and "\n" not in message, (label, message)
    assert list(out.iterdir()) == []  # nothing written, no folder made


@pytest.mark.parametrize("args", [
    ["report", "{data}", "--manifest", "{manifest}", "--released", "{released}", "--keys", "age,sex",
     "--sampling-fraction", "0.1", "--out", "{out}/internal.html"],
    ["report", "{data}", "--manifest", "{manifest}", "--released", "{released}", "--public", "{out}/public.html"],
    ["demo", "--out", "{out}/demo", "--rows", "2000"],
    ["risk", "{data}", "--keys", "age,sex", "--sampling-fraction", "0.1", "--plot", "{out}/fit.png"],
    *(["reproduce", name, "--out", "{out}/" + name, "--quick"] for name in REPRODUCTIONS),
], ids=lambda args: " ".join(a for a in args[:2] if "{" not in a))
def test_the_command_line_names_the_extra(release, tmp_path, monkeypatch, capsys, args):
    """Exit status 2, one line naming the extra, nothing written (the inputs are untouched)."""
    folder = release["data"].parent
    out = tmp_path / "out"
    out.mkdir()
    _no_matplotlib(monkeypatch)
    argv = [a.format(out=out, **{k: str(v) for k, v in release.items()}) for a in args]
    assert_refused(folder, argv, MESSAGE, capsys)
    assert list(out.iterdir()) == []


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys

    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "matplotlib":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Absent())
    from pramkit.cli import main
    code = main(sys.argv[1:])
    assert "matplotlib" not in sys.modules
    sys.exit(code)
""")


def test_a_fresh_interpreter_without_matplotlib(release, tmp_path):
    """As a user of a core install runs them: the core commands work, ``pramkit demo`` says which extra."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}

    def pramkit_(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", BLOCKER, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    done = pramkit_("estimate", str(release["released"]), "--manifest", str(release["manifest"]), "--vars", "sex")
    assert done.returncode == 0, done.stderr
    done = pramkit_("audit", "--manifest", str(release["manifest"]), "--released", str(release["released"]),
                    "--original", str(release["data"]))
    assert done.returncode == 0, done.stderr
    done = pramkit_("demo", "--rows", "2000")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"pramkit demo: error: the demo (it writes the HTML reports) {MESSAGE}"]
    assert list(tmp_path.iterdir()) == []
