"""The architecture stays readable: the design workflow's functions are small, and no module
imports another that imports it back, even through an import deferred inside a function.

* Complexity is measured by radon (McCabe's cyclomatic complexity, as radon counts it: one per
  decision, boolean operator and comprehension condition); the workflow is the release package
  (plan, count, frequencies, allocate, build, assemble), the family registry and the design
  command, each function at most :data:`LIMIT`; the manifest reader and the statistical formats
  are held to :data:`LIMITS`; every other function and method of the package to
  :data:`PACKAGE_LIMIT`, except those of :data:`COMPLEXITY_EXCEPTIONS`, each with its reason.
* Imports are read from the source (every ``import`` and ``from ... import``, at module level or
  inside a function) into a graph of the package's modules; a cycle is a strongly connected
  component of more than one module.
* The modules stand on :data:`FLOORS`, from the base up; no module imports one of a higher floor
  (deferred imports included), except the few pairs of :data:`EXCEPTIONS`, each with its reason.

These checks read the source, not data.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

radon = pytest.importorskip("radon.complexity")

SRC = Path(__file__).resolve().parents[1] / "src" / "pramkit"
#: The files of the design workflow.
WORKFLOW = sorted([*(SRC / "release").glob("*.py"), SRC / "design" / "registry.py", SRC / "cli" / "design.py"])
#: The largest complexity allowed of one function in the workflow.
LIMIT = 20
#: Other files whose functions are held to a limit: the manifest reader, one small check per field
#: group, at most 15; the statistical formats' reader and writer at most :data:`LIMIT`.
LIMITS = {SRC / "manifest.py": 15, SRC / "io_stat.py": LIMIT}


def _functions(path: Path) -> list[tuple[str, int]]:
    """``(name, complexity)`` of every function and method in ``path``."""
    blocks = radon.cc_visit(path.read_text(encoding="utf-8"))
    out = []
    for b in blocks:
        out.append((b.fullname, b.complexity))
        out.extend((f"{b.fullname}.{m.name}", m.complexity) for m in getattr(b, "methods", ()))
    return out


@pytest.mark.parametrize("path", WORKFLOW, ids=lambda p: str(p.relative_to(SRC)))
def test_no_function_of_the_design_workflow_is_more_complex_than_the_limit(path: Path) -> None:
    over = [(name, c) for name, c in _functions(path) if c > LIMIT]
    assert not over, f"{path.relative_to(SRC)}: {over} above {LIMIT}; split them into functions with one job"


@pytest.mark.parametrize("path", sorted(LIMITS), ids=lambda p: str(p.relative_to(SRC)))
def test_no_function_of_the_manifest_reader_or_the_stat_formats_is_more_complex_than_its_limit(path: Path) -> None:
    over = [(name, c) for name, c in _functions(path) if c > LIMITS[path]]
    assert not over, f"{path.relative_to(SRC)}: {over} above {LIMITS[path]}; split them into functions with one job"


def test_the_measure_sees_a_complex_function() -> None:
    """The check can fail: a function of 21 branches measures 22."""
    body = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(21))
    (block,) = radon.cc_visit(f"def f(x):\n{body}\n    return -1\n")
    assert block.complexity == 22 > LIMIT


def test_the_workflow_is_where_the_check_looks() -> None:
    names = {p.name for p in WORKFLOW}
    assert {"plan.py", "count.py", "frequencies.py", "allocate.py", "build.py", "assemble.py",
            "registry.py", "design.py"} <= names


#: The largest complexity allowed of any function or method of the package: under 30.
PACKAGE_LIMIT = 29
#: The functions of the package allowed above :data:`PACKAGE_LIMIT`, each with its reason, named
#: ``"path/in/the/package.py:qualified.name"`` (the list only shrinks: a name no longer above the limit fails).
COMPLEXITY_EXCEPTIONS: dict[str, str] = {}


@functools.cache
def _package_complexities() -> dict[str, int]:
    """``{"path:name": complexity}`` of every function and method of every module of the package."""
    out: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        for name, c in _functions(path):
            out[f"{where}:{name}"] = max(c, out.get(f"{where}:{name}", 0))
    return out


def test_no_function_of_the_package_is_more_complex_than_the_package_limit() -> None:
    measured = _package_complexities()
    assert len(measured) > 1000  # the whole package is measured
    over = {name: c for name, c in measured.items() if c > PACKAGE_LIMIT and name not in COMPLEXITY_EXCEPTIONS}
    assert not over, f"{over} above {PACKAGE_LIMIT}; split them into functions with one job"


def test_each_complexity_exception_still_exists_and_is_still_above_the_package_limit() -> None:
    assert all(reason for reason in COMPLEXITY_EXCEPTIONS.values())
    measured = _package_complexities()
    stale = {name: measured.get(name) for name in COMPLEXITY_EXCEPTIONS if measured.get(name, 0) <= PACKAGE_LIMIT}
    assert not stale, f"{stale} no longer exist or are at most {PACKAGE_LIMIT}: remove them from COMPLEXITY_EXCEPTIONS"


def test_the_package_limit_sees_a_method_above_it(tmp_path: Path) -> None:
    """The check can fail: a method of 29 branches measures 30, above the limit; one of 28 measures 29."""
    for branches, expected in ((29, 30), (28, 29)):
        body = "\n".join(f"        if x == {i}:\n            return {i}" for i in range(branches))
        path = tmp_path / f"c{branches}.py"
        path.write_text(f"class C:\n    def f(self, x):\n{body}\n        return -1\n", encoding="utf-8")
        assert dict(_functions(path))["C.f"] == expected
        assert (expected > PACKAGE_LIMIT) == (branches == 29)


def _modules() -> dict[str, Path]:
    """The package's modules by dotted name (a package by its ``__init__``; a compiled module by its stub)."""
    out = {}
    for path in [*SRC.rglob("*.pyi"), *SRC.rglob("*.py")]:  # a module's source over its stub
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it (deferred imports too)."""
    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(module_of(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(module_of(f"{node.module}.{a.name}") for a in node.names)
    return {m for m in found if m is not None}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = _graph()
    assert not _cycles(graph), _cycles(graph)


def test_the_cycle_finder_finds_a_cycle_through_a_deferred_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    body = "def f():\n    from pramkit.b import g\n"
    tree = ast.parse(body)
    assert any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))  # ast.walk reaches inside functions


#: The floors of the package, from the base up: ``(name, modules)``, a module named with its
#: submodules.  A module stands on the floor of the longest name that holds it; the package itself
#: (``pramkit``, whose names load every part lazily, and ``python -m pramkit``) stands above them all.  docs/architecture.md
#: draws the same list.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    # what every module may use: errors, checks of one value, atomic writes, labels, frames as Arrow
    ("base", ("pramkit.errors", "pramkit.validate", "pramkit.atomic", "pramkit.labels", "pramkit.frames",
              "pramkit.defaults", "pramkit.progress", "pramkit.public_inputs", "pramkit.datasets",
              "pramkit._lazy", "pramkit._json", "pramkit._version", "pramkit._build_version",
              "pramkit._extras", "pramkit._figure", "pramkit.settings", "pramkit._moved")),
    # the release methods' contract and their declarations of every public field (implementations named, not
    # imported: pramkit.methods.contract)
    ("contract", ("pramkit.methods",)),
    # compiled loops, the keyed generator, values to codes and back
    ("kernels", ("pramkit.kernel", "pramkit.codebook")),
    # files and frames read and written, counts, structure (strata, households, rules), recodes
    # (pramkit.source: the data a workflow reads, opened once)
    ("io", ("pramkit.io", "pramkit.io_codes", "pramkit.io_formats", "pramkit.io_sas", "pramkit.io_stat", "pramkit.source",
            "pramkit.counts", "pramkit.structure", "pramkit.recode")),
    # the matrix and what is measured of it: epsilon, the realised law, composition, the ledger,
    # information, the public distances
    ("measures", ("pramkit.matrix", "pramkit.privacy", "pramkit.ledger", "pramkit.information",
                  "pramkit.distances")),
    ("manifest", ("pramkit.manifest",)),
    # perturbing: draws, shuffles, receipts, the Spark passes (pramkit.engines.spark re-exports them)
    ("engine", ("pramkit.engine", "pramkit.engines")),
    ("estimate", ("pramkit.estimate",)),
    # the design families and their registry
    ("design", ("pramkit.design",)),
    ("utility", ("pramkit.utility",)),
    ("risk", ("pramkit.risk",)),
    # the designs that read a risk measure: protection against spontaneous recognition
    ("recognition", ("pramkit.recognition",)),
    # the workflows: a release designed and written, swapped (on Spark too), synthesized, resampled, audited
    ("workflows", ("pramkit.release", "pramkit.swap", "pramkit.synthesize", "pramkit.synthesize_pgm",
                   "pramkit.synthesize_codes", "pramkit.synthesize_marginals", "pramkit.pgm_compression", "pramkit.pgm_balance", "pramkit.resample", "pramkit.suppress", "pramkit.audit")),
    ("reports", ("pramkit.report", "pramkit.reproduce", "pramkit.sklearn")),
    ("workbench", ("pramkit.workbench", "pramkit.demo")),
    # what parses and shows: the command line and the app
    # (pramkit.outputs: the JSON Schemas of the printed outputs, made from the result types and the commands'
    # declarations of what they print)
    ("interfaces", ("pramkit.cli", "pramkit.app", "pramkit.outputs")),
]
#: The imports allowed to go up a floor, each with its reason.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def floor_of(module: str, floors: list[tuple[str, tuple[str, ...]]] = FLOORS) -> int | None:
    """The index in ``floors`` of ``module``'s floor (``len(floors)`` for the package itself), or None."""
    if module in ("pramkit", "pramkit.__main__"):
        return len(floors)
    best: tuple[int, int] | None = None
    for i, (_, names) in enumerate(floors):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[1]):
                best = (i, len(name))
    return None if best is None else best[0]


def upward(graph: dict[str, set[str]], floors: list[tuple[str, tuple[str, ...]]] = FLOORS) -> list[tuple[str, str]]:
    """The imports ``(module, imported)`` of ``graph`` from a lower floor to a higher one."""
    out = []
    for module, imported in sorted(graph.items()):
        here = floor_of(module, floors)
        out.extend((module, other) for other in sorted(imported)
                   if here is not None and (there := floor_of(other, floors)) is not None and there > here)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(p, modules) - {m} for m, p in modules.items()}


def test_every_module_stands_on_a_floor() -> None:
    unplaced = sorted(m for m in _modules() if floor_of(m) is None)
    assert not unplaced, f"{unplaced}: add each to its floor in FLOORS (and docs/architecture.md)"


def test_no_module_imports_one_of_a_higher_floor() -> None:
    up = [pair for pair in upward(_graph()) if pair not in EXCEPTIONS]
    assert not up, (f"imports from a lower floor to a higher one: {up}; move the imported function down "
                    "to the floor of its users, or the module up")


def test_each_exception_to_the_floors_is_still_needed() -> None:
    up = set(upward(_graph()))
    assert len(EXCEPTIONS) <= 5
    assert all(reason for reason in EXCEPTIONS.values())
    stale = [pair for pair in EXCEPTIONS if pair not in up]
    assert not stale, f"{stale} no longer go up a floor: remove them from EXCEPTIONS"


def test_the_floor_rule_sees_an_upward_import_even_deferred(tmp_path: Path) -> None:
    """The rule can fail: a module of the base that imports the command line inside a function
    goes up, one of the command line that imports the base does not."""
    (tmp_path / "pramkit" / "cli").mkdir(parents=True)
    base = tmp_path / "pramkit" / "errors.py"
    base.write_text("def f():\n    from pramkit.cli.design import main\n    return main\n", encoding="utf-8")
    cli = tmp_path / "pramkit" / "cli" / "design.py"
    cli.write_text("from pramkit.errors import f\n", encoding="utf-8")
    modules = {"pramkit.errors": base, "pramkit.cli.design": cli}
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    assert graph == {"pramkit.errors": {"pramkit.cli.design"}, "pramkit.cli.design": {"pramkit.errors"}}
    assert upward(graph) == [("pramkit.errors", "pramkit.cli.design")]
    # each module stands on the floor of the longest name that holds it
    assert floor_of("pramkit.recognition.design") > floor_of("pramkit.risk.posterior") > floor_of(
        "pramkit.design.classic")
    assert floor_of("pramkit.swap.run") > floor_of("pramkit.engine.perturb") > floor_of("pramkit.kernel.rng")
    assert floor_of("pramkit.nowhere") is None and floor_of("pramkit") == len(FLOORS)


def folders_on_two_floors(modules: list[str], floors: list[tuple[str, tuple[str, ...]]] = FLOORS) -> dict[str, list[int]]:
    """The folders (packages below ``pramkit``) whose modules stand on more than one floor, with those floors."""
    packages = {m for m in modules if any(other.startswith(m + ".") for other in modules)}
    held: dict[str, set[int]] = {}
    for module in modules:
        parts = module.split(".")
        for i in range(2, len(parts) + 1):
            folder = ".".join(parts[:i])
            if folder in packages and (here := floor_of(module, floors)) is not None:
                held.setdefault(folder, set()).add(here)
    return {folder: sorted(found) for folder, found in sorted(held.items()) if len(found) > 1}


def test_no_folder_stands_on_two_floors() -> None:
    """A folder shows its floor: every module in it (its subfolders too) stands on the same one, so the layering
    is read from the tree, not from sub-floors declared for parts of a folder."""
    mixed = folders_on_two_floors(sorted(_modules()))
    assert not mixed, (f"folders holding modules of several floors (floor numbers from the base, 0 first): {mixed}; "
                       "move the modules of another floor to a folder of their own")
    # the rule sees a folder of two floors
    assert folders_on_two_floors(["pramkit.engine", "pramkit.engine.perturb", "pramkit.engine.swap"],
                                 [("engine", ("pramkit.engine",)), ("workflows", ("pramkit.engine.swap",))]) == {
        "pramkit.engine": [0, 1]}


def test_the_architecture_page_draws_the_floors() -> None:
    """docs/architecture.md lists the floors of :data:`FLOORS`, top first, each with its modules."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    drawn = re.findall(r"^\| (\d+) (\w+) \| (.+) \|$", text, flags=re.M)
    assert [(int(n), name) for n, name, _ in drawn] == [
        (i, name) for i, (name, _) in reversed(list(enumerate(FLOORS, start=1)))]
    for (_, _, listed), (_, names) in zip(drawn, reversed(FLOORS)):
        assert sorted(re.findall(r"`(pramkit[\w.]*)`", listed)) == sorted(names), listed
    for module, imported in EXCEPTIONS:
        assert f"`{module}` -> `{imported}`" in text


#: Public classes defined in two modules, each with its reason: one name, one meaning elsewhere.
SHARED_CLASS_NAMES = {
    "Workbench": "pramkit.workbench.export reads the session's Workbench through a Protocol of the same name",
    "Source": "pramkit.source.Source is an opened data source; pramkit.workbench.Source is one (a subclass) "
              "with what the workbench shows of it",
    "Rule": "pramkit.validate.Rule (one option's rule) is reshaped with the release specification; "
            "pramkit.structure.Rule is the public edit rule of pramkit.Rules",
}


def _public_classes(paths: list[Path]) -> dict[str, list[str]]:
    """``{class name: the files that define it}`` of the classes at the top of ``paths`` (no leading ``_``)."""
    found: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(str(path))
    return found


def test_one_name_one_meaning_a_public_class_is_defined_once() -> None:
    """Frequencies (risk's; the design's are DesignFrequencies), Derived (an estimate's; a derived
    release is DerivedRelease), Households (the perturbing engine's; the swap's are SwapHouseholds),
    Distances (between categories; between two tables TableDistances) and Rule (an edit rule; a
    column's recoding is ColumnRecode) each name one thing."""
    shared = {n: f for n, f in _public_classes(sorted(SRC.rglob("*.py"))).items() if len(f) > 1}
    assert set(shared) <= set(SHARED_CLASS_NAMES), {n: shared[n] for n in set(shared) - set(SHARED_CLASS_NAMES)}
    stale = set(SHARED_CLASS_NAMES) - set(shared)
    assert not stale, f"{stale} are defined once now: remove them from SHARED_CLASS_NAMES"
    functions = [n.name for p in SRC.rglob("*.py") for n in ast.parse(p.read_text(encoding="utf-8")).body
                 if isinstance(n, ast.FunctionDef)]
    assert functions.count("total_variation") == 1  # two tables'; a matrix's is matrix_total_variation


def test_the_class_name_check_sees_a_name_defined_twice(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Rule:\n    pass\n\nclass _Private:\n    pass\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("class Rule:\n    pass\n\nclass _Private:\n    pass\n", encoding="utf-8")
    found = _public_classes([tmp_path / "a.py", tmp_path / "b.py"])
    assert found == {"Rule": [str(tmp_path / "a.py"), str(tmp_path / "b.py")]}


#: The page that draws the data flow.
ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"


def test_every_module_and_function_the_architecture_page_names_exists() -> None:
    """docs/architecture.md names the module of each stage: each dotted name resolves to a module,
    or to an attribute of one, and each stage's function is found in its module."""
    import importlib

    text = ARCHITECTURE.read_text(encoding="utf-8")
    names = sorted(set(re.findall(r"\bpramkit(?:\.[A-Za-z_]\w*)+", text)))
    assert len(names) > 20
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
            continue
        except ImportError:
            pass
        module, _, attribute = name.rpartition(".")
        try:
            if not hasattr(importlib.import_module(module), attribute):
                missing.append(name)
        except ImportError:
            missing.append(name)
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    stages = re.findall(r"^ \w+ \.+ (pramkit\.[\w.]+) +(\w+)\(", text, flags=re.M)
    assert len(stages) >= 6
    for module, function in stages:
        assert hasattr(importlib.import_module(module), function), (module, function)


#: What asks the data what it is or reads it: the readers of pramkit.io and pramkit.frames.
READERS = {"streamed", "frame_kind", "frame_columns", "describe", "iter_batches", "read_table", "read_arrow",
           "sha256_of", "value_label_categories", "arrow_batches"}
#: The design workflow's modules allowed to call a reader, each with its reason.
READS_ELSEWHERE = {
    "derive.py": "a derived release's digest is that of its input release, a public file, not the data",
    "spec.py": "--target reads the data whole once, then designs from that frame at each budget it tries",
}


def _reader_calls(path: Path) -> list[str]:
    """The readers ``path`` calls, and its ``isinstance(data, ...)`` (asking whether data is a path or a frame)."""
    return _reader_calls_in(ast.parse(path.read_text(encoding="utf-8")))


def _reader_calls_in(tree: ast.AST) -> list[str]:
    """:func:`_reader_calls` of a parsed module or function."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else ""  # the readers are imported by name
        if name in READERS:
            found.append(name)
        if name == "isinstance" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "data":
            found.append("isinstance(data, ...)")
    return found


def test_the_design_stages_ask_the_data_through_its_source_only() -> None:
    """pramkit.release opens its data once (pramkit.source.Source) and hands it down: no stage asks
    again whether it holds a path or a frame, nor reads it but through the source."""
    asking = {p.name: calls for p in sorted((SRC / "release").glob("*.py"))
              if (calls := _reader_calls(p)) and p.name not in READS_ELSEWHERE}
    assert not asking, f"{asking}: ask the pramkit.source.Source handed down instead"
    assert all(_reader_calls(SRC / "release" / name) for name in READS_ELSEWHERE), "an exception no longer needed"


def test_apply_file_asks_the_data_through_its_source_only() -> None:
    """pramkit.apply_file opens its data once (pramkit.source.Source) and asks it for its records, receipt and
    digest: it reads it through no other reader, nor asks whether it holds a path or a frame."""
    tree = ast.parse((SRC / "engine" / "perturb.py").read_text(encoding="utf-8"))
    body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply_file")
    assert not _reader_calls_in(body), "apply_file: ask the pramkit.source.Source it opened instead"


def test_the_reader_check_sees_a_stage_that_asks() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "stage.py"
        f.write_text("def f(data):\n    if isinstance(data, str):\n        return sha256_of(data)\n", encoding="utf-8")
        assert sorted(_reader_calls(f)) == ["isinstance(data, ...)", "sha256_of"]


def test_moved_modules_keep_their_former_names() -> None:
    """Each former name of :data:`pramkit._moved.MOVED` gives the module itself (no second copy, no file left
    under the old name), its submodules too, in a fresh interpreter as a user's script imports them."""
    import importlib
    import subprocess
    import sys

    from pramkit._moved import MOVED

    modules = _modules()
    for old, new in MOVED.items():
        assert old not in modules and new in modules, (old, new)
        assert importlib.import_module(old) is importlib.import_module(new)
    script = ("from pramkit.engine.rng import SecretKey\n"
              "from pramkit.engine.swap.census import census_households\n"
              "import pramkit.design.recognition.reductions as old\n"
              "import pramkit.kernel.rng, pramkit.swap.census, pramkit.recognition.reductions as new\n"
              "assert SecretKey is pramkit.kernel.rng.SecretKey\n"
              "assert census_households is pramkit.swap.census.census_households and old is new\n"
              "assert new.__name__ == new.__spec__.name == 'pramkit.recognition.reductions'\n"
              "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
