"""pramkit's version: from the git tags at build time, the same in the package, its metadata and its outputs.

The build derives the version with setuptools-scm (setup.py): the tag ``vX.Y.Z`` on the commit gives
``X.Y.Z``, a later commit ``X.Y.(Z+1).devN+gHASH``, and a history without a tag counts from the newest
release of CHANGELOG.md.  These tests run that build step on small git repositories made here, and check
that what pramkit writes (manifest, receipt, ``--version``) carries ``pramkit.__version__``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pramkit
from pramkit.cli import main

ROOT = Path(__file__).resolve().parents[1]

#: PEP 440's public version with an optional local part (the canonical forms setuptools-scm writes).
PEP440 = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?$")


def _latest_release() -> tuple[int, int, int]:
    """The changelog's newest release, read here independently of setup.py."""
    found = re.findall(r"^## \[(\d+)\.(\d+)\.(\d+)\] - ", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    return max(tuple(int(x) for x in v) for v in found)  # type: ignore[return-value]  # three ints by the pattern


def test_version_is_pep_440():
    assert PEP440.match(pramkit.__version__), pramkit.__version__


def test_manifest_receipt_and_command_line_carry_the_version(tmp_path):
    """The version a manifest and a receipt record, and ``pramkit --version`` prints, is ``pramkit.__version__``."""
    from pramkit.datasets import CENSUS_VARIABLES, census

    data = census(2_000)
    data.to_csv(tmp_path / "census.csv", index=False)
    m = pramkit.design_release(data, ["sex"], epsilon=3.0, categories=CENSUS_VARIABLES)
    m.write(tmp_path / "manifest.json")
    result = pramkit.apply_file(tmp_path / "census.csv", m, tmp_path / "released.csv", key=bytes(32))
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    receipt = json.loads(Path(result.receipt).read_text(encoding="utf-8"))  # type: ignore[arg-type]  # written
    assert manifest["pramkit_version"] == receipt["pramkit_version"] == pramkit.__version__
    assert pramkit.Manifest.read(tmp_path / "manifest.json").pramkit_version == pramkit.__version__
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--version"])
    assert code == 0 and out.getvalue() == f"pramkit {pramkit.__version__}\n"


def _installed_here() -> bool:
    """Whether the installed distribution ``pramkit`` is the package imported (not another checkout)."""
    try:
        dist = importlib.metadata.distribution("pramkit")
    except importlib.metadata.PackageNotFoundError:
        return False
    package = Path(pramkit.__file__).resolve().parent
    direct = dist.read_text("direct_url.json")
    if direct:  # pip install -e (or of a local folder): the folder installed
        url = json.loads(direct).get("url", "")
        if url.startswith("file://") and json.loads(direct).get("dir_info", {}).get("editable"):
            return package.is_relative_to(Path(url.removeprefix("file://")).resolve())
    return Path(str(dist.locate_file("pramkit/__init__.py"))).resolve().parent == package


def test_the_metadata_of_the_installed_package_agrees():
    """``importlib.metadata.version("pramkit")`` is ``pramkit.__version__`` (when the package imported is the
    one installed: a source tree put first on the path has other metadata, or none)."""
    if not _installed_here():
        pytest.skip("the pramkit imported is not the installed distribution")
    assert importlib.metadata.version("pramkit") == pramkit.__version__


# ---------------------------------------------------------------- the build's version from git


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _build_version(repo: Path) -> str:
    """The version the build gives ``repo`` (setup.py through setuptools-scm)."""
    done = subprocess.run([sys.executable, "setup.py", "--version"], cwd=repo, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def project(tmp_path) -> Path:
    """A git repository holding the project's build files and an empty package, with two commits."""
    pytest.importorskip("setuptools_scm")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "src" / "pramkit" / "kernel").mkdir(parents=True)
    for name in ("setup.py", "pyproject.toml", "CHANGELOG.md", "README.md", "LICENSE", "THIRD-PARTY-NOTICES.md",
                 "MANIFEST.in"):
        shutil.copy(ROOT / name, repo / name)
    (repo / "src" / "pramkit" / "__init__.py").write_text("")
    (repo / "src" / "pramkit" / "kernel" / "_kernels.c").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "src" / "pramkit" / "__init__.py").write_text("# two\n")
    _git(repo, "commit", "-q", "-am", "two")
    return repo


def test_a_history_without_tags_counts_from_the_changelogs_latest_release(project):
    """No tag (a clone without tags): a development version after the changelog's newest release, never before
    it (setuptools-scm alone would say 0.1.devN, older than 0.1.0)."""
    major, minor, micro = _latest_release()
    head = _git(project, "rev-parse", "--short=9", "HEAD")
    version = _build_version(project)
    assert re.fullmatch(rf"{major}\.{minor}\.{micro + 1}\.dev2\+g[0-9a-f]{{7,}}", version), version
    assert head.startswith(version.rpartition("+g")[2][:7])


def test_a_tag_names_the_version(project):
    _git(project, "tag", "-a", "v7.3.1", "-m", "release 7.3.1", "HEAD~1")
    assert re.fullmatch(r"7\.3\.2\.dev1\+g[0-9a-f]{7,}", _build_version(project))  # one commit after the tag
    _git(project, "tag", "-a", "v7.4.0", "-m", "release 7.4.0")
    assert _build_version(project) == "7.4.0"  # the tagged commit itself


def test_a_tree_without_git_takes_the_changelogs_latest_release(project):
    """An archive of the tree (no .git, no PKG-INFO): the changelog's newest release."""
    shutil.rmtree(project / ".git")
    assert _build_version(project) == ".".join(map(str, _latest_release()))
