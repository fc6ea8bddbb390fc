"""Examples are tests: every shell and Python block of README.md and docs/*.md runs.

How a block runs
----------------
* A fenced block whose language is ``bash``, ``sh`` or ``shell`` runs with ``bash`` under
  ``set -eo pipefail``, with this interpreter's folder first on ``PATH`` (so ``pramkit`` and
  ``python`` are the installed package's); ``python`` or ``py`` runs with this interpreter;
  ``pycon`` (or a Python block that starts with ``>>>``) runs as a doctest, so its printed
  output is checked.  Any other language (``text``, ``json``, ``csv``) is not executed: an
  output listing or a file's content is written in such a fence.  A fence without a language
  is an error (:func:`test_every_fence_names_its_language`), and so is a command in an
  indented code block (:func:`test_no_command_in_an_indented_block`): both would escape
  this harness.
* A page that the documentation site executes (MyST-NB, ``file_format: mystnb``) holds its
  examples in ``{code-cell} ipython3`` blocks: such a block runs here too, as Python, or as a
  shell block when it is a ``%%bash`` cell (:func:`code_cell`); its ``:tags:`` lines are left out.
  With ``PRAMKIT_SITE_EXECUTES_CELLS=1`` (set by ``.ci/run``, whose documentation build executes
  every code cell of those pages, in order, and fails on an error), the code cells are skipped here:
  each is then run once per CI run, not twice.
* Each block is one test, named ``FILE:LINE`` (the line of its opening fence), and runs in a
  fresh folder.  Shell blocks are independent of one another, except on a tutorial page
  (:data:`SHELL_SESSIONS`), whose shell blocks read as one session, as a reader types them: a
  block runs in a copy of the folder the page's earlier shell blocks left, once per run (the
  folder it leaves is the next block's start; the page's blocks run in one test process).
  The Python blocks of one page read as one session: a Python block runs after the page's
  earlier Python blocks, in one namespace, in the same fresh folder.
* The folder holds the input files the block names (:data:`PREPARED`): the census-like file
  (``census.csv``, ``data.csv``) at :data:`ROWS` persons (``data.csv`` with :data:`AREAS`
  areas and ``areas.csv`` their centroids), a manifest and a released file of the census,
  the rules files shown in docs/structure.md, a codebook, the area design of
  docs/geography.md (``m.json``), the banded EU-SILC file and docs/tutorial.md's survey file
  (``survey.csv``; both from the shared laeken ``eusilc``: the blocks that need it are skipped
  when it is absent).  A file the folder holds already (a session's earlier output) is kept.
  ``PRAMKIT_DOC_ROWS`` sets :data:`ROWS`.  A file that the block itself writes (``--out``,
  ``--public``, ``keygen``, ``--write``) is not prepared.
  ``cd DIR`` as a block's first command prepares the files in ``DIR``.
* Adjustments (:data:`SHELL_ADJUSTMENTS`) keep the run small and self-contained: the
  README's install lines run against the installed package, and ``pramkit demo`` gets
  ``--rows``.  Blocks that measure rather than illustrate are skipped with their reason
  (:data:`SKIPS`); known bugs are ``xfail`` with the bug named (:data:`KNOWN_FAILURES`).
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from _forked import ForkServer
from conftest import SDC_DATA

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Persons in the prepared census-like files.
ROWS = int(os.environ.get("PRAMKIT_DOC_ROWS", "5000"))
#: Areas in the prepared ``data.csv`` and ``areas.csv`` (docs/geography.md's file has 300: the
#: design's LP and the report's figures grow with them).
AREAS = 40
#: Seconds a block may take.
TIMEOUT = 300

SHELL = {"bash", "sh", "shell"}
PYTHON = {"python", "py"}
PYCON = {"pycon"}
#: Pages whose shell blocks read as one session (a tutorial: each step uses the files of the steps before).
SHELL_SESSIONS = {"docs/tutorial.md"}


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: Path
    line: int  # the line of the opening fence, 1-based
    lang: str
    text: str
    cell: bool = False  # a {code-cell} of an executed page

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        if self.lang in SHELL:
            return "shell"
        if self.lang in PYCON or (self.lang in PYTHON and self.text.lstrip().startswith(">>>")):
            return "pycon"
        if self.lang in PYTHON:
            return "python"
        return "other"


FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")


def fenced_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    start = None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if start is None and m:
            start, indent, fence, lang, body = i, len(m.group(1)), m.group(2), m.group(3).lower(), []
        elif start is not None and line.strip().startswith(fence) and line.strip() == fence[0] * len(line.strip()):
            text = "\n".join(b[indent:] if b[:indent].isspace() else b for b in body) + "\n"
            blocks.append(code_cell(Block(page, start + 1, lang, text)))
            start = None
        elif start is not None:
            body.append(line)
    assert start is None, f"{page.name}:{start + 1}: unclosed fence"
    return blocks


def code_cell(block: Block) -> Block:
    """A ``{code-cell}`` block of an executed page as the block it runs as: ``bash`` for a ``%%bash``
    cell (without that line), else ``python``; the cell's option lines (``:tags: [...]``) left out.
    Any other block is returned as it is."""
    if block.lang != "{code-cell}":
        return block
    lines = block.text.splitlines()
    while lines and lines[0].startswith(":"):
        lines.pop(0)
    if lines and lines[0].strip() == "%%bash":
        return Block(block.page, block.line, "bash", "\n".join(lines[1:]) + "\n", cell=True)
    return Block(block.page, block.line, "python", "\n".join(lines) + "\n", cell=True)


BLOCKS = [b for page in PAGES for b in fenced_blocks(page)]
RUN = [b for b in BLOCKS if b.kind != "other"]


# --- prepared inputs ----------------------------------------------------------------------------

def _doc_csv(page: str, header: str) -> str:
    """The content of the ``csv`` fence of ``docs/PAGE`` whose first line is ``header``."""
    for b in fenced_blocks(ROOT / "docs" / page):
        if b.lang == "csv" and b.text.splitlines()[0] == header:
            return b.text
    raise AssertionError(f"docs/{page} has no csv block with header {header!r}")


def _census(folder: Path) -> None:
    from pramkit.datasets import census
    census(ROWS).to_csv(folder / "census.csv", index=False)


def _data(folder: Path) -> None:
    from pramkit.datasets import census
    census(ROWS, areas=AREAS).to_csv(folder / "data.csv", index=False)


def _areas(folder: Path) -> None:
    from pramkit.datasets import census_areas
    census_areas(AREAS)[["category", "x", "y"]].to_csv(folder / "areas.csv", index=False)


def _rules(folder: Path) -> None:
    text = _doc_csv("structure.md", "age,marital_status")
    for name in ("rules.csv", "census-rules.csv"):
        (folder / name).write_text(text, encoding="utf-8")


def _census_codebook(folder: Path) -> None:
    import pandas as pd

    from pramkit.datasets import CENSUS_VARIABLES
    rows = [(v, c) for v in ("sex", "age", "marital_status") for c in CENSUS_VARIABLES[v]]
    pd.DataFrame(rows, columns=["variable", "category"]).to_csv(folder / "census-codebook.csv", index=False)


def _manifest(folder: Path) -> None:
    import random

    import pramkit
    from pramkit.datasets import CENSUS_VARIABLES
    need("census.csv", folder)
    m = pramkit.design_release(str(folder / "census.csv"), ["age", "sex", "marital_status"], epsilon=3.0,
                               categories=CENSUS_VARIABLES, rng=random.Random(1))
    m.write(folder / "manifest.json")


def _released(folder: Path) -> None:
    import pramkit
    need("manifest.json", folder)
    pramkit.apply_file(folder / "census.csv", folder / "manifest.json", folder / "released.csv",
                       key=bytes(range(32)))


def _area_manifest(folder: Path) -> None:
    """docs/geography.md's area design: least expected distance between centroids, budget 3."""
    import random

    import pramkit
    need("data.csv", folder)
    need("areas.csv", folder)
    m = pramkit.design_release(str(folder / "data.csv"), ["area"], epsilon=3.0, options={"objective": "distance"},
                               distances=str(folder / "areas.csv"), rng=random.Random(1))
    m.write(folder / "m.json")


def _eusilc(folder: Path) -> None:
    source = SDC_DATA / "eusilc_laeken.csv"
    if not source.is_file():
        pytest.skip(f"{source} (laeken's eusilc) is not available")
    examples = _structure_examples()
    examples.prepare_eusilc(source, folder)
    assert (folder / "eusilc-rules.csv").read_text(encoding="utf-8") == _doc_csv("structure.md", "age,pl030")


def _eusilc_survey(folder: Path) -> None:
    """laeken's eusilc as it is: weights rb050, strata db040, households db030 (docs/estimation.md)."""
    source = SDC_DATA / "eusilc_laeken.csv"
    if not source.is_file():
        pytest.skip(f"{source} (laeken's eusilc) is not available")
    shutil.copyfile(source, folder / "eusilc-survey.csv")


def _survey(folder: Path) -> None:
    """docs/tutorial.md's survey file: laeken's eusilc as an office exports it, missing values
    written as the code -9, age in bands, the personal weight rb050 as ``weight``."""
    import pandas as pd
    source = SDC_DATA / "eusilc_laeken.csv"
    if not source.is_file():
        pytest.skip(f"{source} (laeken's eusilc) is not available")
    raw = pd.read_csv(source)
    bands = ["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75+"]
    pd.DataFrame({
        "household": raw["db030"], "region": raw["db040"], "sex": raw["rb090"],
        # age -1: born after the income reference period, in the first band
        "age": pd.cut(raw["age"], [-2, 15, 24, 34, 44, 54, 64, 74, 200], labels=bands).astype(str),
        "status": raw["pl030"].map(lambda v: "-9" if pd.isna(v) else str(int(v))),
        "citizenship": raw["pb220a"].fillna("-9"),
        "weight": raw["rb050"].round(4),
    }).to_csv(folder / "survey.csv", index=False)


def _structure_examples() -> ModuleType:
    """benchmarks/structure_examples.py, the script that prepares docs/structure.md's inputs."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("structure_examples", ROOT / "benchmarks" / "structure_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: File name -> how to make it (a maker may make the files it depends on too).
PREPARED: dict[str, Callable[[Path], None]] = {
    "census.csv": _census,
    "data.csv": _data,
    "areas.csv": _areas,
    "rules.csv": _rules,
    "census-rules.csv": _rules,
    "census-codebook.csv": _census_codebook,
    "manifest.json": _manifest,
    "released.csv": _released,
    "m.json": _area_manifest,
    "eusilc.csv": _eusilc,
    "eusilc-codebook.csv": _eusilc,
    "eusilc-rules.csv": _eusilc,
    "eusilc-survey.csv": _eusilc_survey,
    "survey.csv": _survey,
}

def need(name: str, folder: Path) -> None:
    """Make a prepared file in ``folder`` unless it is there."""
    if not (folder / name).exists():
        PREPARED[name](folder)


#: How a block writes a file: a command's output flag, or in Python ``.write("F")``, ``.to_csv("F")``,
#: or the output (third argument) of ``apply_file``.
WRITES = (r"(?:(?:--out|--public|keygen|--write)\s+|\.(?:write|to_csv)\(\s*[\"']|"
          r"apply_file\(\s*[^,()]+,\s*[^,()]+,\s*[\"']){}(?![\w.-])")


def named_inputs(block: Block) -> list[str]:
    """The prepared files a block reads: named in it, and not written by it."""
    names = []
    for name in PREPARED:
        named = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", block.text)
        if named and not re.search(WRITES.format(re.escape(name)), block.text):
            names.append(name)
    return names


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Path], None]:
    """Copy a prepared file into a folder, making it once per run."""
    made = tmp_path_factory.mktemp("prepared")

    def put(name: str, folder: Path) -> None:
        need(name, made)
        folder.mkdir(parents=True, exist_ok=True)
        for file in (name, name + ".receipt.json"):  # a release travels with its receipt
            if (made / file).exists():
                shutil.copy(made / file, folder / file)

    return put


# --- what the harness adjusts, skips, or expects to fail ------------------------------------------

#: (page, pattern, replacement, why): applied to the shell blocks of that page, in order.
SHELL_ADJUSTMENTS = [
    ("README.md", r"python -m pip install -e \"\.\[test,spark,app\]\" && python -m pytest -q", "true",
     "runs the whole test suite, this harness included"),
    ("README.md", r"python -m pip install \"\.\[report\]\" && ", "",
     "the harness runs against the package already installed"),
    ("", r"pramkit demo(?!.*--rows)", f"pramkit demo --rows {ROWS}",
     "the full-size demo takes 6 to 9 s and writes 100 MB"),
]

#: (page, pattern that marks the block, reason)
SKIPS = [
    ("docs/structure.md", r"python benchmarks/structure_examples\.py",
     "recomputes every figure of the page, once per line (about 15 s each); the harness prepares the "
     "same inputs with the script's prepare_eusilc"),
    ("", r"python benchmarks/", "a benchmark: it measures, it is not an example"),
    ("docs/report.md", r"time\.time\(\)", "a timing of the full-size demo's report"),
    ("docs/manifest.md", r"xmllint --noout --schema", "validates with the official DDI schema, which the project "
     "does not ship; tests/test_ddi.py validates the same documents against it with lxml"),
]

#: (page, pattern that marks the block, the bug)
KNOWN_FAILURES: list[tuple[str, str, str]] = []


def _matches(block: Block, page: str, pattern: str) -> bool:
    return (not page or block.id.startswith(page + ":")) and re.search(pattern, block.text) is not None


def adjusted(block: Block) -> str:
    text = block.text
    for page, pattern, replacement, _ in SHELL_ADJUSTMENTS:
        if not page or block.id.startswith(page + ":"):
            text = re.sub(pattern, replacement, text)
    return text


def prepare(block: Block, folder: Path, put: Callable[[str, Path], None], skip: frozenset[str] = frozenset()) -> None:
    first = next((l.strip() for l in block.text.splitlines() if l.strip() and not l.lstrip().startswith("#")), "")
    cd = re.fullmatch(r"cd\s+(\S+)", first) if block.kind == "shell" else None
    where = folder / cd.group(1) if cd else folder
    where.mkdir(parents=True, exist_ok=True)
    for name in named_inputs(block):
        if name not in skip and not (where / name).exists():
            put(name, where)


def earlier_shell(block: Block) -> Block | None:
    """The shell block before ``block`` on a page of :data:`SHELL_SESSIONS` (None: the first, or another page)."""
    if block.page.relative_to(ROOT).as_posix() not in SHELL_SESSIONS:
        return None
    before = [b for b in RUN if b.page == block.page and b.kind == "shell" and b.line < block.line]
    return before[-1] if before else None


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, store, commands: Path) -> Callable[[Block], Path]:
    """The folder a session page's shell block leaves, made once per run from the folder the block
    before it left."""
    made = tmp_path_factory.mktemp("sessions")

    def after(block: Block) -> Path:
        where = made / f"{block.page.stem}-{block.line}"
        if not where.exists():
            work = made / f"{where.name}.partial"
            shutil.rmtree(work, ignore_errors=True)
            before = earlier_shell(block)
            if before is None:
                work.mkdir()
            else:
                shutil.copytree(after(before), work)
            prepare(block, work, store)
            run_shell(block, work, commands)
            work.rename(where)
        return where

    return after


# --- running ---------------------------------------------------------------------------------------

#: What the process behind the blocks' ``pramkit`` imports before its forks (:func:`commands`): the libraries and
#: the modules of the commands the pages run.
COMMAND_IMPORTS = ("scipy.optimize", "scipy.sparse", "jinja2", "matplotlib.figure", "matplotlib.backends.backend_agg",
                   "pramkit.audit", "pramkit.audit.release", "pramkit.cli", "pramkit.counts", "pramkit.design",
                   "pramkit.engine.perturb", "pramkit.estimate", "pramkit.io", "pramkit.report", "pramkit.risk.suda",
                   "pramkit.swap", "pramkit.synthesize")


@pytest.fixture(scope="module")
def commands() -> Iterator[Path]:
    """A folder whose ``pramkit`` runs each call in a fork of one process that imported pramkit and its libraries
    (tests/_forked.py), in the caller's folder and environment, with its standard streams: the blocks call
    ``pramkit`` over a hundred times, and each fresh process spent most of its second importing them.  The installed
    command itself is run by :func:`test_shell_runner` and the wheel's check."""
    server = ForkServer(COMMAND_IMPORTS, os.environ)
    yield server.command_folder()
    server.close()


def run_shell(block: Block, folder: Path, commands: Path | None = None) -> None:
    """Run a shell block in ``folder`` (``set -eo pipefail``), this Python's ``pramkit`` on the ``PATH``, or
    ``commands``'s (:func:`commands`) if given."""
    path = [*([str(commands)] if commands else []), os.path.dirname(sys.executable), os.environ.get("PATH", "")]
    env = dict(os.environ, PATH=os.pathsep.join(path))
    script = "set -eo pipefail\n" + adjusted(block)
    assert "pip install" not in script, f"{block.id}: the harness does not install packages (SHELL_ADJUSTMENTS)"
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, (f"{block.id} exited {done.returncode}\n--- block\n{script}"
                                  f"--- stdout\n{done.stdout[-3000:]}--- stderr\n{done.stderr[-3000:]}")


def run_python(block: Block, namespace: dict) -> None:
    code = compile("\n" * block.line + block.text, str(block.page), "exec")  # tracebacks name the page's lines
    exec(code, namespace)


def run_pycon(block: Block, namespace: dict) -> None:
    test = doctest.DocTestParser().get_doctest(block.text, namespace, block.id, str(block.page), block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    runner.run(test, out=out.append, clear_globs=False)
    assert runner.failures == 0, f"{block.id}\n" + "".join(out)


def _in_session(block: Block) -> bool:
    """A shell block of a page of :data:`SHELL_SESSIONS` (its folder is the next block's start)."""
    return block.kind == "shell" and not block.cell and block.page.relative_to(ROOT).as_posix() in SHELL_SESSIONS


@pytest.mark.parametrize("block", [
    pytest.param(b, id=b.id, marks=[pytest.mark.xdist_group(f"session {b.page.name}")] if _in_session(b) else [])
    for b in RUN])
def test_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store, session,
                    commands: Path) -> None:
    if block.cell and os.environ.get("PRAMKIT_SITE_EXECUTES_CELLS") == "1":
        pytest.skip(f"{block.id}: a code cell, which the documentation build of this run executes")
    for page, pattern, reason in SKIPS:
        if _matches(block, page, pattern):
            pytest.skip(f"{block.id}: {reason}")
    for page, pattern, bug in KNOWN_FAILURES:
        if _matches(block, page, pattern):
            pytest.xfail(f"{block.id}: {bug}")
    if block.kind == "shell" and not block.cell:
        before = earlier_shell(block)
        if before is not None:
            try:
                session(before)
            except AssertionError as error:
                pytest.fail(f"{before.id}, an earlier shell block of the page, failed: {error}")
        if _in_session(block):
            session(block)  # runs the block in a copy of the folder ``before`` left, kept for the next block
            return
        prepare(block, tmp_path, store)
        run_shell(block, tmp_path, commands)
        return
    # the page's Python blocks up to this one, in one namespace; a %%bash cell of an executed page runs
    # after them, in their folder, as the site's kernel runs it; a file they write is not prepared
    session = [b for b in RUN if b.page == block.page and b.kind != "shell" and b.line <= block.line]
    written = frozenset(name for b in session for name in PREPARED
                        if re.search(WRITES.format(re.escape(name)), b.text))
    for b in [*session, block] if block.kind == "shell" else session:
        prepare(b, tmp_path, store, written)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__doc_example__"}
    for b in session:
        try:
            (run_pycon if b.kind == "pycon" else run_python)(b, namespace)
        except Exception as error:
            if b is block:
                raise
            pytest.fail(f"{b.id}, an earlier Python block of the page, failed: {error!r}")
    if block.kind == "shell":
        run_shell(block, tmp_path, commands)


# --- the docs keep their examples where this harness sees them -------------------------------------

def test_every_fence_names_its_language() -> None:
    bare = [b.id for b in BLOCKS if not b.lang]
    assert not bare, f"fences without a language (bash, python, pycon, or text for output): {bare}"


def test_no_command_in_an_indented_block() -> None:
    found = []
    for page in PAGES:
        inside = False
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                inside = not inside
            elif not inside and re.match(r"(    |\t)\s*(\$ |>>> |pramkit |python )", line):
                found.append(f"{page.relative_to(ROOT)}:{i}")
    assert not found, f"commands in indented blocks (fence them as bash or python): {found}"


def test_harness_sees_the_examples() -> None:
    """The harness finds what the pages hold (a parser that found nothing would pass everything)."""
    ids = {b.id.split(":")[0] for b in RUN}
    assert {"README.md", "docs/structure.md", "docs/estimation.md", "docs/geography.md", "docs/sdcmicro.md"} <= ids
    readme = [b for b in RUN if b.page.name == "README.md"]
    assert {"shell", "python"} <= {b.kind for b in readme}
    release = next(b for b in readme if "pramkit design census.csv" in b.text)
    assert named_inputs(release) == ["census.csv", "rules.csv"]  # manifest.json is written by the block


def test_a_tutorial_reads_as_one_session() -> None:
    """A session page's shell block follows the one before it; elsewhere a shell block stands alone."""
    for page in SHELL_SESSIONS:
        shell = [b for b in RUN if b.id.startswith(page + ":") and b.kind == "shell"]
        assert len(shell) > 1, f"{page}: no shell blocks to read as a session"
        assert [earlier_shell(b) for b in shell] == [None, *shell[:-1]]
    readme = [b for b in RUN if b.page.name == "README.md" and b.kind == "shell"]
    assert len(readme) > 1 and all(earlier_shell(b) is None for b in readme)


#: Characters a line of a code block may hold: a longer line runs off the documentation's page.
WIDTH = 100


def test_code_fits_the_page() -> None:
    """Every line of a block that runs (commands, Python, code cells) fits the page."""
    long = [f"{b.id} (+{i}): {len(line)} characters" for b in RUN
            for i, line in enumerate(b.text.splitlines(), 1) if len(line) > WIDTH]
    assert not long, f"lines longer than {WIDTH} characters (wrap them): {long}"


def test_site_joins_the_pieces_of_a_stream() -> None:
    """docs/conf.py joins a stream's pieces as written (IPython's %%bash writes 100-byte pieces):
    a line cut between two pieces is shown whole."""
    pytest.importorskip("myst_nb")
    import importlib.util
    spec = importlib.util.spec_from_file_location("docs_conf", ROOT / "docs" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    from nbformat import NotebookNode
    stream = [NotebookNode(output_type="stream", name="stdout", text=t) for t in ('{"q": [0.731', '0586]}\n')]
    image = NotebookNode(output_type="display_data", data={}, metadata={})
    merged = conf._join_stream_pieces([stream[0], image, stream[1]])
    assert [o["output_type"] for o in merged] == ["stream", "display_data"]
    assert merged[0]["text"] == '{"q": [0.7310586]}\n'


def test_json_examples_are_json() -> None:
    """A ``json`` fence parses, and a manifest example reads as a manifest."""
    import json

    from pramkit import Manifest
    blocks = [b for b in BLOCKS if b.lang == "json"]
    assert blocks, "no json fence found"
    for b in blocks:
        value = json.loads(b.text)
        if isinstance(value, dict) and value.get("format") == "pramkit-manifest":
            Manifest.from_dict(value)


@pytest.mark.parametrize("forked", [False, True], ids=["installed", "forked"])
@pytest.mark.parametrize("text, ok", [
    ("true\n", True),
    ("false\necho not reached\n", False),                    # set -e: the first failing command stops the block
    ("false | cat\n", False),                                # pipefail
    ("test \\\n  -n x   # a comment after a continuation\n", True),
    ("pramkit --version\n", True),                           # the installed pramkit is on PATH
    ("pramkit design --probs 0.5,0.5 --epsilon -1\n", False),  # a command's error fails the block
])
def test_shell_runner(tmp_path: Path, text: str, ok: bool, forked: bool, request: pytest.FixtureRequest) -> None:
    block = Block(ROOT / "README.md", 1, "bash", text)
    commands = request.getfixturevalue("commands") if forked else None
    if ok:
        run_shell(block, tmp_path, commands)
    else:
        with pytest.raises(AssertionError, match="exited"):
            run_shell(block, tmp_path, commands)


#: Calls whose every effect the forked ``pramkit`` must share with the installed one: its output on stdout and
#: stderr, its status, the files it writes where it was called, what it reads on stdin, the environment it sees
#: (a key in ``PRAMKIT_KEY``), a pipe closed early.
SAME_AS_INSTALLED = [
    "pramkit --version",
    "pramkit design --probs 0.5,0.5 --epsilon -1",
    "mkdir -p sub && cd sub && pramkit design --probs 0.6,0.3,0.1 --epsilon 1 --out m.json && ls && cat m.json "
    "| grep -v created",
    "pramkit app --help | head -n 3",
    "printf 'x\\n1\\n2\\n' | pramkit info - 2>&1 || echo status $?",
    "pramkit demo --help >/dev/null && echo $?",
    "PRAMKIT_KEY=$(printf '%064d' 0) pramkit apply census.csv --manifest none.json --out r.csv 2>&1 "
    "|| echo status $?",
]


@pytest.mark.parametrize("text", SAME_AS_INSTALLED)
def test_the_forked_pramkit_is_the_installed_one(tmp_path: Path, text: str, commands: Path) -> None:
    """The documentation's blocks run ``pramkit`` in forks (:func:`commands`): each call gives what the installed
    command gives, on stdout, stderr and its status, in the caller's folder and environment."""
    runs = []
    for folder in ("installed", "forked"):
        (tmp_path / folder).mkdir()
        path = [*([str(commands)] if folder == "forked" else []), os.path.dirname(sys.executable),
                os.environ.get("PATH", "")]
        done = subprocess.run(["bash", "-c", text], cwd=tmp_path / folder, capture_output=True, text=True,
                              env=dict(os.environ, PATH=os.pathsep.join(path)), timeout=120)
        files = sorted(p.relative_to(tmp_path / folder).as_posix() for p in (tmp_path / folder).rglob("*"))
        runs.append((done.returncode, done.stdout, done.stderr, files))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("text, lang, code", [
    ("%%bash\npramkit --version\n", "bash", "pramkit --version\n"),
    (":tags: [hide-input]\nx = 1\n", "python", "x = 1\n"),
    (":tags: [hide-input]\n%%bash\ntrue\n", "bash", "true\n"),
    ("print(1)\n", "python", "print(1)\n"),
])
def test_code_cells_run_as_their_language(text: str, lang: str, code: str) -> None:
    block = code_cell(Block(ROOT / "docs" / "x.md", 3, "{code-cell}", text))
    assert (block.lang, block.text, block.line) == (lang, code, 3)
    assert code_cell(Block(ROOT / "docs" / "x.md", 3, "text", text)).lang == "text"


def test_python_runners_fail_on_a_wrong_example() -> None:
    namespace: dict = {}
    run_python(Block(ROOT / "README.md", 1, "python", "x = 2\n"), namespace)
    run_pycon(Block(ROOT / "README.md", 5, "pycon", ">>> x + 1\n3\n"), namespace)
    with pytest.raises(AssertionError, match="Expected"):
        run_pycon(Block(ROOT / "README.md", 5, "pycon", ">>> x + 1\n4\n"), namespace)
    with pytest.raises(NameError):
        run_python(Block(ROOT / "README.md", 1, "python", "y + 1\n"), {})


def test_named_inputs_leave_out_what_the_block_writes() -> None:
    block = Block(ROOT / "README.md", 1, "bash",
                  "pramkit design census.csv --vars age --epsilon 1 --out manifest.json\n"
                  "pramkit apply census.csv --manifest manifest.json --out released.csv\n"
                  "cat my-census.csv.bak || true\n")
    assert named_inputs(block) == ["census.csv"]
    python = Block(ROOT / "README.md", 1, "python",
                   'census(100).to_csv("census.csv", index=False)\nm.write("manifest.json")\n'
                   'pramkit.apply_file("census.csv", "manifest.json", "released.csv", key=k)\n'
                   'pd.read_csv("data.csv")\n')
    assert named_inputs(python) == ["data.csv"]


def test_every_adjustment_and_skip_applies() -> None:
    """An adjustment or skip that matches no block is stale (and an install line could then run)."""
    for page, pattern, _, why in SHELL_ADJUSTMENTS:
        assert any(_matches(b, page, pattern) for b in RUN if b.kind == "shell"), f"stale adjustment: {why}"
    for page, pattern, reason in SKIPS + KNOWN_FAILURES:
        assert any(_matches(b, page, pattern) for b in RUN), f"stale skip or known failure: {reason}"
    readme = next(b for b in RUN if b.page.name == "README.md" and "pramkit demo" in b.text)
    commands = [line for line in adjusted(readme).splitlines() if not line.startswith("#")]
    assert commands[0].startswith(f"pramkit demo --rows {ROWS}")
