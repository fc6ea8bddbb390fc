"""Type checkers see the public names that the packages load lazily.

``pramkit``, ``pramkit.engine`` and ``pramkit.estimate`` load their names on first use through a
module ``__getattr__`` (:mod:`pramkit._lazy`); a type checker cannot follow it, so each package
imports the same names under ``if TYPE_CHECKING:`` and defines ``__getattr__`` only outside it.
The first tests keep that block and the lazy table in step; the last runs ``mypy --strict`` on
a user's script with deliberate misuses and checks that it reports each of them, and nothing else.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pramkit

SRC = Path(pramkit.__file__).parent


def _lazy_packages() -> list[Path]:
    """Every ``__init__.py`` of the package that loads names through :func:`pramkit._lazy.lazy_exports`."""
    return sorted(p for p in SRC.rglob("__init__.py") if "lazy_exports(" in p.read_text(encoding="utf-8"))


def _type_checking_block(tree: ast.Module) -> ast.If:
    blocks = [n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.Name)
              and n.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1, "one `if TYPE_CHECKING:` block beside the lazy loader"
    return blocks[0]


def _bound(nodes: list[ast.stmt]) -> dict[str, str]:
    """Names bound by ``from MODULE import NAME as NAME`` among ``nodes`` -> MODULE."""
    out = {}
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname == alias.name:  # an explicit re-export, as mypy --strict requires
                    out[alias.name] = node.module or ""
    return out


def test_the_lazy_packages_are_found():
    assert {p.parent.name for p in _lazy_packages()} >= {"pramkit", "engine", "estimate"}


@pytest.mark.parametrize("init", _lazy_packages(), ids=lambda p: p.parent.name)
def test_type_checking_block_matches_the_lazy_table(init: Path):
    """Every lazily loaded name is imported for type checkers from the module the loader takes it from,
    as an explicit re-export, and ``__getattr__`` (which would make any name ``Any``) is hidden from them."""
    package = ".".join(init.relative_to(SRC.parent).parent.parts)
    module = importlib.import_module(package)
    tree = ast.parse(init.read_text(encoding="utf-8"))
    block = _type_checking_block(tree)
    typed = _bound(block.body)
    eager = _bound([n for n in tree.body if n is not block])  # names the package imports itself at once
    exports = {name: mod if mod.startswith("pramkit.") else f"{package}.{mod}"
               for name, mod in module._EXPORTS.items()}
    assert {**typed, **{n: eager[n] for n in exports if n in eager}} == exports
    assert not set(typed) & set(eager)
    # the loader is bound only where type checkers do not look (the else branch)
    hidden = {t.id for n in block.orelse if isinstance(n, ast.Assign) for e in n.targets
              for t in (e.elts if isinstance(e, ast.Tuple) else [e]) if isinstance(t, ast.Name)}
    assert "__getattr__" in hidden
    visible = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.FunctionDef)) for t in
               ([ast.Name(n.name)] if isinstance(n, ast.FunctionDef) else
                [x for e in n.targets for x in (e.elts if isinstance(e, ast.Tuple) else [e])])
               if isinstance(t, ast.Name)}
    assert "__getattr__" not in visible
    # at run time each name is the object of the module named
    for name, mod in exports.items():
        assert getattr(module, name) is getattr(importlib.import_module(mod), name), name
    assert set(module.__all__) >= set(exports)


USER_SCRIPT = '''
import pramkit
from pramkit.datasets import CENSUS_VARIABLES, census

data = census(1_000)
plan = pramkit.plan_release(["age", "sex"], epsilon=3.0, categories=CENSUS_VARIABLES)
manifest: pramkit.Manifest = pramkit.design_release(data, ["age", "sex"], epsilon=3.0)
key = pramkit.SecretKey(bytes(32), "a test")
released = pramkit.perturb_frame(data, manifest, key=key).data
table = pramkit.estimate_table(released, manifest, ["sex"], method="mle")
epsilon: float = manifest.record_epsilon

bad_plan = pramkit.plan_release(["age"], epsilon="3")  # MISUSE arg-type: a str where a float is expected
count: int = pramkit.design_release(data, ["age"], epsilon=3.0)  # MISUSE assignment: it returns a Manifest
pramkit.perturb_frame(data, "manifest.json", key=key)  # MISUSE arg-type: a path, not a Manifest
pramkit.estimate_table(released, manifest, ["sex"], method="em")  # MISUSE arg-type: not an estimator
pramkit.design_releese(data, ["age"], epsilon=3.0)  # MISUSE attr-defined: no such name
pramkit.engine.realised_lw  # MISUSE attr-defined: no such name in a subpackage
'''


#: What mypy reads besides the script: every module of pramkit, and of pandas and NumPy (the types of the
#: frames the script passes and gets back), followed silently (their own errors not shown).  The other
#: packages that pramkit imports (JAX, Spark, polars, matplotlib...) are not read, a name taken from them
#: being ``Any``: none is a type of the script's values, and reading them all was three quarters of the
#: test's time (about 18 s, 4 without them).  Not reading a module can only take errors away, never add one.
MYPY_CONFIG = """\
[mypy]
follow_imports = skip

[mypy-pramkit,pramkit.*,pandas,pandas.*,numpy,numpy.*]
follow_imports = silent
"""


@pytest.mark.slow
def test_mypy_strict_reports_each_misuse_of_the_public_api(tmp_path: Path):
    pytest.importorskip("mypy", reason="mypy is in the test and lint extras")
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(USER_SCRIPT).replace("import pramkit\n", "import pramkit\nimport pramkit.engine\n",
                                                             1), encoding="utf-8")
    lines = script.read_text(encoding="utf-8").splitlines()
    expected = {(i, m.group(1)) for i, line in enumerate(lines, 1) if (m := re.search(r"# MISUSE ([a-z-]+)", line))}
    env = {**os.environ, "MYPYPATH": str(SRC.parent)}  # this tree's pramkit, whatever is installed
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), "--python-version", "3.11", "--show-error-codes",
         "--no-error-summary", "--hide-error-context", script.name],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    reported = set()
    for line in done.stdout.splitlines():
        m = re.match(rf"{re.escape(script.name)}:(\d+): error: .*\[([a-z-]+)\]$", line)
        if m:
            reported.add((int(m.group(1)), m.group(2)))
    assert reported == expected, done.stdout + done.stderr
    assert done.returncode == 1
