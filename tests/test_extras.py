"""Optional dependencies: a module that needs one says which extra to install, and the core needs none.

The absence of a package is simulated: ``sys.modules[name] = None`` makes ``import name`` raise
``ModuleNotFoundError`` as it does when the package is not installed (in this process), and a
fresh interpreter whose import system refuses the extras' packages runs the core workflow.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pramkit._extras import EXTRAS, raise_missing_extra
from pramkit.errors import MissingExtraError, PramkitError

ROOT = Path(__file__).resolve().parents[1]


def _absent(monkeypatch: pytest.MonkeyPatch, package: str, *reload: str) -> None:
    """Make ``package`` (and its submodules already imported) unimportable; forget the modules ``reload``."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)
    for name in reload:
        if name in sys.modules:
            monkeypatch.delitem(sys.modules, name)


@pytest.mark.parametrize("module, package, extra", [
    ("pramkit.sklearn", "sklearn", "sklearn"),
    ("pramkit.app.ui", "shiny", "app"),
    ("pramkit.app.server", "shiny", "app"),
])
def test_importing_a_module_without_its_extra_names_the_extra(monkeypatch, module, package, extra):
    _absent(monkeypatch, package, module, "pramkit.app.ui")
    with pytest.raises(ImportError) as caught:
        importlib.import_module(module)
    assert isinstance(caught.value, MissingExtraError) and isinstance(caught.value, PramkitError)
    assert str(caught.value).endswith(f'{package}, which is not installed: pip install "pramkit[{extra}]"')
    assert "\n" not in str(caught.value)


def test_the_app_without_shiny_or_uvicorn(monkeypatch, tmp_path):
    """create_app (Shiny) and serve (uvicorn) import their packages on call: the same message."""
    from pramkit.app import create_app
    from pramkit.app.serve import serve

    _absent(monkeypatch, "shiny", "pramkit.app.ui", "pramkit.app.server")
    with pytest.raises(MissingExtraError, match=r'needs shiny, .*pip install "pramkit\[app\]"'):
        create_app(tmp_path, "token")
    _absent(monkeypatch, "uvicorn")
    with pytest.raises(MissingExtraError, match=r'needs uvicorn, .*pip install "pramkit\[app\]"'):
        serve("127.0.0.1", 0, open_browser=False, tell=print)


def test_the_spark_engine_without_pyspark(monkeypatch):
    """The module imports without pyspark; starting Spark says which extra to install."""
    from pramkit.engines import spark

    _absent(monkeypatch, "pyspark")
    with pytest.raises(spark.SparkEngineError, match=r'needs pyspark: pip install "pramkit\[spark\]"'):
        spark.session("local[1]")


def test_a_missing_module_of_no_extra_is_not_blamed_on_an_extra():
    """A missing module that no extra installs (a bug, a broken environment) is raised as it is."""
    exc = ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")
    with pytest.raises(ModuleNotFoundError) as caught:
        raise_missing_extra(exc, "sklearn", "the transformer")
    assert caught.value is exc and not isinstance(caught.value, MissingExtraError)


def test_extras_table_matches_pyproject():
    """Every extra a user installs is in the table, under its name in pyproject.toml."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(extras) - {"test", "docs", "lint"}


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = {"polars", "sklearn", "pyspark", "py4j", "shiny", "uvicorn", "starlette", "jinja2", "matplotlib"}

    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Absent())
""")


def test_the_core_workflow_needs_no_extra(tmp_path):
    """Without polars, scikit-learn, pyspark, Shiny or matplotlib: design, perturb, estimate, a file applied, and
    ``import pramkit.sklearn`` says which extra it needs."""
    script = BLOCKER + textwrap.dedent("""
        import pramkit
        from pramkit.datasets import census, CENSUS_VARIABLES
        data = census(3_000)
        m = pramkit.design_release(data, ["age", "sex"], epsilon=3.0, categories=CENSUS_VARIABLES)
        released = pramkit.perturb_frame(data, m, key=bytes(32)).data
        table = pramkit.estimate_table(released, m, ["sex"])
        data.to_csv("census.csv", index=False)
        pramkit.apply_file("census.csv", m, "released.csv", key=bytes(32))
        assert table.n == 3_000 and type(released).__name__ == "DataFrame"
        try:
            import pramkit.sklearn
        except ImportError as exc:
            print(type(exc).__name__, exc)
        assert not {"polars", "sklearn", "pyspark", "shiny", "matplotlib"} & set(sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        'MissingExtraError pramkit.sklearn (the scikit-learn transformer) needs sklearn, which is not installed: '
        'pip install "pramkit[sklearn]"']


def test_readme_lists_every_extra():
    """The README's table of extras names each extra a user installs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in readme.splitlines() if line.startswith("| `")}
    assert set(EXTRAS) <= rows
