"""A design family is one entry of the registry: added in a scratch copy of the package, it reaches the command
line (``--help`` and a release), the library, the application's form and the docs' option table, and its
release passes the audit, with nothing else edited.

The copy is the installed source tree with one entry added to ``pramkit.design.registry.FAMILIES`` (two
families: ``keep2``, whose parameters set the matrix so that the budget is a cap, and ``rr2``, built to a
share of the budget, each reusing options that exist); a child Python imports the copy.  The release is of
sdcMicro's testdata (roof, with its missing values).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SDC_DATA

import pramkit

ENTRIES = '''
    "keep2": DesignFamily(
        "keep2", "keep-probability PRAM, a second entry",
        {"keep": Number(low=0, high=1, required=True), "bandwidth": Number(int, low=1)}, _keep),
    "rr2": DesignFamily("rr2", "randomized response, a second entry", {"beta": BETA}, _rr, budgeted=_rr_budget),
}
'''

CHECKS = r'''
import json, sys
from pathlib import Path
import pramkit
from pramkit.app import fields
from pramkit.app.server import optional_budget
from pramkit.release.pipeline import design_release
from pramkit.release.spec import option_table

data, folder = sys.argv[1], Path(sys.argv[2])
manifest = design_release(data, ["roof"], method="keep2", options={"keep": 0.7})
print(json.dumps({
    "file": pramkit.__file__,
    "library_epsilon": manifest.record_epsilon,
    "app_offers": sorted(k for k in fields.methods() if k.endswith("2")),
    "app_optional_budget": [c for c in optional_budget() if c.endswith("2")],
    "docs_table": [n for n in ("keep2", "rr2") if n in option_table()],
}))
'''


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A copy of the package with two families added to the registry, and nothing else changed."""
    root = tmp_path_factory.mktemp("scratch")
    source = Path(pramkit.__file__).resolve().parent
    shutil.copytree(source, root / "pramkit", ignore=shutil.ignore_patterns("__pycache__"))
    registry = root / "pramkit" / "design" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    end = text.index("\n}\n", text.index("FAMILIES: dict[str, DesignFamily] = {"))
    registry.write_text(text[:end] + ENTRIES + text[end + 3:], encoding="utf-8")
    return root


def _run(scratch: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(scratch)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_a_family_added_in_the_registry_reaches_every_door(scratch: Path, tmp_path: Path) -> None:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = SDC_DATA / "testdata.csv"
    helped = _run(scratch, "-m", "pramkit", "design", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    squashed = "".join(helped.stdout.split())
    assert "(--methodinvariant|keep|rr|kanon|tridiagonal|circulant|bistochastic-beta|keep2|rr2;" in squashed
    assert "{bistochastic-beta,circulant,dp,invariant,kanon,keep,keep2,metric,rr,rr2,tridiagonal}" in squashed
    for args in (("--method", "keep2", "--keep", "0.7"), ("--method", "rr2", "--epsilon", "1")):
        out = tmp_path / f"{args[1]}.json"
        made = _run(scratch, "-m", "pramkit", "design", str(data), "--vars", "roof", *args, "--out", str(out),
                    "--quiet", cwd=tmp_path)
        assert made.returncode == 0, made.stderr
        raw = json.loads(out.read_text())
        assert raw["input"]["method"] == args[1]
        audited = _run(scratch, "-m", "pramkit", "audit", "--manifest", str(out), cwd=tmp_path)
        assert audited.returncode == 0, audited.stdout + audited.stderr
    checked = _run(scratch, "-c", CHECKS, str(data), str(tmp_path), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout.strip().splitlines()[-1])
    assert found["file"].startswith(str(scratch))  # the copy was imported, not the installed package
    assert found["app_offers"] == ["keep2", "rr2"]
    assert found["app_optional_budget"] == ["keep2"]  # rr2 is built to a budget: its field may not be empty
    assert found["docs_table"] == ["keep2", "rr2"]
    assert found["library_epsilon"] > 0


def test_without_the_entries_nothing_names_them(tmp_path: Path) -> None:
    """The check above can fail: the installed package knows neither family."""
    from pramkit.app import fields
    from pramkit.app.server import optional_budget
    from pramkit.release.spec import option_table

    assert not [k for k in fields.methods() if k.endswith("2")] and "keep2" not in option_table()
    assert "keep2" not in optional_budget() and "kanon" in optional_budget() and "rr" not in optional_budget()
