"""Build of pramkit's compiled kernels and of its version (the project's metadata is in pyproject.toml).

The version comes from git (setuptools-scm): ``vX.Y.Z`` on the commit built gives ``X.Y.Z``; a
commit after it gives ``X.Y.(Z+1).devN+gHASH`` (N commits later).  With no tag to be found (a clone
without tags, a shallow one), the base is the newest release of CHANGELOG.md, so the version still
sorts after that release; a source distribution carries its version in PKG-INFO.  The version is
written into ``src/pramkit/_build_version.py`` at build time, where ``pramkit.__version__`` reads it.
"""

import dataclasses
import re
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent

# The draws must round as the NumPy expressions they replace: no fused multiply-add.  Floating-point
# operations are taken not to trap (they round as before): without it GCC turns the branch-free select of
# the form (8) draw into a branch, to skip a conversion that might trap, and the loop is then neither
# branch-free nor vectorised.
FLAGS = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-trapping-math"]


def latest_release() -> str:
    """The newest ``## [X.Y.Z] - DATE`` of CHANGELOG.md (releases are listed newest first)."""
    try:
        text = (HERE / "CHANGELOG.md").read_text(encoding="utf-8")
    except OSError:
        return "0.0.0"
    found = re.search(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", text, re.M)
    return found.group(1) if found else "0.0.0"


def version_scheme(version):  # a setuptools_scm.version.ScmVersion
    """setuptools-scm's default scheme, counting from the changelog's latest release when git has no tag."""
    from setuptools_scm.version import guess_next_dev_version

    if str(version.tag) == "0.0":  # what setuptools-scm takes when `git describe` finds no tag
        version = dataclasses.replace(version, tag=version.config.version_cls(latest_release()))
    return guess_next_dev_version(version)


setup(
    ext_modules=[Extension("pramkit.kernel._kernels", ["src/pramkit/kernel/_kernels.c"], depends=["src/pramkit/kernel/_philox.h"],
                           extra_compile_args=FLAGS)],
    use_scm_version={
        "version_scheme": version_scheme,
        # Neither git nor PKG-INFO (an archive of the tree): the changelog's latest release.
        "fallback_version": latest_release(),
        "version_file": "src/pramkit/_build_version.py",
        "version_file_template": '"""pramkit\'s version, written by its build from git (setup.py)."""\n\n'
                                 '__version__ = version = "{version}"\n',
    },
)
