"""The design step counts each target's columns only, in one pass.

A plan of many variables designed one by one (split equal or optimal) needs each variable's
margin, a joint split its group's table, a stratified variable its table with the strata: the
design counts those tables (:func:`pramkit.counts.count_groups`), never the dense table of every
column, whose cells are the product of all their categories (62 billion for 13 variables of the
NIST CRC excerpt).  Checked against independent computations: pandas ``value_counts`` of the file,
the full joint table counted record by record and marginalised (brute force), and the designs of
the code before this change (the repository's history), which must be the same to the byte.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit
import pramkit.datasets
from pramkit.cli import main
from pramkit.codebook import canonical
from pramkit.counts import MAX_CELLS, CountTable, count_groups
from pramkit.errors import ParameterError
from pramkit.manifest import Manifest
from pramkit.release.count import count_release
from pramkit.release.plan import plan_release
from pramkit.release.targets import plan_targets, target_groups

REPO = Path(__file__).resolve().parents[1]
NIST = REPO.parent / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
THIRTEEN = ["MSP", "HISP", "RAC1P", "NOC", "NPF", "HOUSING_TYPE", "OWN_RENT", "INDP_CAT", "EDU", "PINCP_DECILE",
            "DREM", "DPHY", "DEAR"]
EIGHT = ["MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE"]
#: The last commit whose design step counted the dense table of every column.
BEFORE = "246566200e3ea03cb47a169cc1f86141604fb32c"

needs_nist = pytest.mark.skipif(not NIST.is_file(), reason="../shared/data/nist-crc is not available")


def _pandas_margins(path: Path, columns: list[str], na: list[str]) -> dict[str, dict[str, int]]:
    """Each column's counts of its non-missing values, by pandas (the empty field and ``na`` missing)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=["", *na], usecols=columns)
    return {c: {str(k): int(v) for k, v in frame[c].value_counts(dropna=True).items()} for c in columns}


def _label_text(label: Any) -> str:
    """A label as the file spells it (the numbers of the NIST file are integers)."""
    return str(int(label)) if isinstance(label, float) and label.is_integer() else str(label)


@needs_nist
@pytest.mark.parametrize("na", [["N"], []])
def test_thirteen_nist_variables_are_counted_by_their_margins(na: list[str]) -> None:
    plan = plan_release(THIRTEEN, epsilon=10.0, na_values=tuple(na))
    counted = count_release(NIST, plan)
    expected = _pandas_margins(NIST, THIRTEEN, na)
    for name in THIRTEEN:
        t = counted.targets[name]
        assert {_label_text(x): int(n) for x, n in zip(t.labels, t.counts)} == expected[name]
    # the cells counted are the margins' (each variable's values, and None where some are missing)
    frame = pd.read_csv(NIST, dtype=str, keep_default_na=False, na_values=["", *na], usecols=THIRTEEN)
    margins = sum(frame[c].nunique() + int(frame[c].isna().any()) for c in THIRTEEN)
    assert counted.table.cells == margins
    assert math.prod(frame[c].nunique() + int(frame[c].isna().any()) for c in THIRTEEN) > MAX_CELLS
    assert counted.table.rows == len(frame)
    assert counted.table.complete_rows == int(frame.notna().all(axis=1).sum())


@needs_nist
def test_thirteen_nist_variables_design_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    code = main(["design", str(NIST), "--vars", ",".join(THIRTEEN), "--epsilon", "10", "--na-values", "N",
                 "--out", str(out)])
    assert code == 0
    manifest = Manifest.read(out)
    assert [v.name for v in manifest.variables] == THIRTEEN
    assert manifest.record_epsilon <= 10.0


@needs_nist
@pytest.mark.parametrize("extra, message", [
    (["--split", "joint"], "the table over ['MSP', 'HISP', 'RAC1P', 'NOC', 'NPF', 'HOUSING_TYPE', 'OWN_RENT', 'INDP_CAT', "
                           "'EDU', 'PINCP_DECILE', 'DREM', 'DPHY', 'DEAR'] has 17,513,496,000 cells"),
    (["--strata", "SEXX"], "column(s) ['SEXX'] are not in"),
])
def test_what_the_design_cannot_count_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  extra: list[str], message: str) -> None:
    """A joint split still counts its target, the joint table of its variables: refused, nothing written."""
    out = tmp_path / "m.json"
    code = main(["design", str(NIST), "--vars", ",".join(THIRTEEN), "--epsilon", "10", "--na-values", "N",
                 "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# --- the same designs as before the change --------------------------------------------------------------

DESIGNS = r'''
import json, sys
import pandas as pd
from pramkit.datasets import census, CENSUS_VARIABLES
from pramkit.engine.rng import SecretKey  # the former name: this script runs on an earlier tree too
from pramkit.release.pipeline import design_planned
import pramkit
import pramkit.datasets

def plain(x):
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items() if k not in ("seconds", "created", "pramkit_version")}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x

which, out = sys.argv[1], sys.argv[2]
designs = []
if which == "census":
    frame = pd.read_pickle(sys.argv[3])
    csv = sys.argv[4]
    cats = {k: v for k, v in CENSUS_VARIABLES.items()}
    rule = [{"age": "0-9", "marital_status": "married, spouse present"}]
    designs = [
        (csv, dict(variables=["age", "sex", "race", "education"], epsilon=4.0)),
        (frame, dict(variables=["age", "marital_status", "employment"], epsilon=6.0, strata="sex",
                     categories=cats)),
        (frame, dict(variables=["ownership", "mortgage"], epsilon=3.0, split="joint", strata=["sex"],
                     categories=cats)),
        (csv, dict(variables=["sex", "race", "veteran"], epsilon=5.0, split="joint")),
        (frame, dict(variables=["age", "sex", "race", "employment"], epsilon=8.0, split="optimal",
                     missing="category")),
        (frame, dict(variables=["age", "marital_status"], epsilon=5.0, split="joint", strata="sex", forbid=rule,
                     rule_breaking="keep", categories=cats)),
        (frame, dict(variables=["ownership", "age", "race"], epsilon=6.0, household="hid",
                     household_vars="ownership")),
        (csv, dict(variables=["age", "education"], epsilon=6.0, method="rr")),
    ]
else:
    for na in (("N",), ()):
        designs.append((sys.argv[3], dict(variables=sys.argv[4].split(","), epsilon=10.0, na_values=na)))
made = []
for data, settings in designs:
    names = settings.pop("variables")
    release = design_planned(data, pramkit.plan_release(names, **settings), key=SecretKey(bytes(range(32)), "k"))
    made.append({"manifest": plain(json.loads(release.manifest.to_json())),
                 "record": plain(json.loads(json.dumps(release.record.to_dict(), default=str)))})
with open(out, "w") as f:
    json.dump(made, f, sort_keys=True)
'''


@pytest.fixture(scope="module")
def before_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`BEFORE` (:func:`archived_src`)."""
    return archived_src(BEFORE, tmp_path_factory)


def archived_src(commit: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of ``commit``, from the repository's history (skipped without it), with its own compiled
    kernel (built here: the kernel's interface has changed since) and this tree's build version; extracted and
    built once for the whole run (every module and every worker process of a parallel run reads the same tree,
    the first to ask building it under a lock)."""
    import fcntl

    git = shutil.which("git")
    if git is None or subprocess.run([git, "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"],
                                     capture_output=True).returncode != 0:
        pytest.skip(f"the repository's history (commit {commit}) is not available")
    full = subprocess.run([git, "-C", str(REPO), "rev-parse", f"{commit}^{{commit}}"], capture_output=True, text=True,
                          check=True).stdout.strip()
    base = tmp_path_factory.getbasetemp()
    out = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / f"src-{full}"
    out.mkdir(exist_ok=True)
    with open(out / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "built").exists():
            _extract_and_build(git, full, out)
            (out / "built").touch()
    return out / "src"


def _extract_and_build(git: str, commit: str, out: Path) -> None:
    """``commit``'s ``src`` extracted into ``out``, its kernel compiled, this tree's build version beside it."""
    archive = subprocess.run([git, "-C", str(REPO), "archive", commit, "src"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            tar.extractall(out, filter="data")
        else:  # the repository's own archive
            tar.extractall(out)
    _build_kernel(out / "src", out / "build")
    version = REPO / "src" / "pramkit" / "_build_version.py"
    if version.is_file() and not (out / "src" / "pramkit" / version.name).exists():
        shutil.copy2(version, out / "src" / "pramkit" / version.name)


def _build_kernel(src: Path, temp: Path) -> None:
    """Compile ``src``'s own kernel into ``src`` (with the flags setup.py gives): ``pramkit.kernel._kernels``, or
    ``pramkit.engine._kernels`` in a tree from before the kernel had a folder of its own."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext
    from setuptools.errors import CompileError, LinkError, PlatformError

    flags = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-trapping-math"]
    folder = "kernel" if (src / "pramkit" / "kernel" / "_kernels.c").is_file() else "engine"
    kernel = Extension(f"pramkit.{folder}._kernels", [str(src / "pramkit" / folder / "_kernels.c")],
                       extra_compile_args=flags)
    cmd = build_ext(Distribution({"ext_modules": [kernel]}))
    cmd.build_lib, cmd.build_temp = str(src), str(temp)
    cmd.ensure_finalized()
    try:
        cmd.run()
    except (CompileError, LinkError, PlatformError) as why:  # no compiler here: nothing to compare with
        pytest.skip(f"the earlier tree's kernel cannot be built here: {why}")


def _designs(src: Path, out: Path, *args: str) -> list[Any]:
    """The manifests and design records that the code in ``src`` makes (a process of its own)."""
    script = out.parent / "designs.py"
    script.write_text(DESIGNS)
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "HOME": str(out.parent)}
    run = subprocess.run([sys.executable, str(script), *args[:1], str(out), *args[1:]], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return list(json.loads(out.read_text()))


def _census_files(tmp_path: Path) -> tuple[Path, Path]:
    frame = pramkit.datasets.census(3_000, seed=7)
    frame.loc[::37, "age"] = None
    frame.loc[::53, "employment"] = None
    frame.loc[::41, "race"] = None
    frame["hid"] = np.arange(len(frame)) // 1
    frame.to_pickle(tmp_path / "census.pkl")
    frame.to_csv(tmp_path / "census.csv", index=False)
    return tmp_path / "census.pkl", tmp_path / "census.csv"


#: The design record's figures of the information kept, which changed meaning since BEFORE (a variable's own
#: I(X; Z), strata mixed, and its entropy, where a stratified variable counted its strata's too): the record
#: is compared without them, the manifest (what is published) whole.
INFORMATION = ("information_nats", "total_information_nats", "entropy_nats")


def _counted(record: Any) -> Any:
    """The design record without :data:`INFORMATION` (at any depth)."""
    if isinstance(record, dict):
        return {k: _counted(v) for k, v in record.items() if k not in INFORMATION}
    return [_counted(v) for v in record] if isinstance(record, list) else record


@pytest.mark.slow
def test_census_designs_are_the_same_as_before(before_src: Path, tmp_path: Path) -> None:
    pkl, csv = _census_files(tmp_path)
    old = _designs(before_src, tmp_path / "before.json", "census", str(pkl), str(csv))
    new = _designs(REPO / "src", tmp_path / "after.json", "census", str(pkl), str(csv))
    assert len(new) == 8
    for a, b in zip(old, new):
        assert json.dumps(a["manifest"], sort_keys=True) == json.dumps(b["manifest"], sort_keys=True)
        assert _counted(a["record"]) == _counted(b["record"])


@pytest.mark.slow
@needs_nist
def test_nist_designs_are_the_same_as_before(before_src: Path, tmp_path: Path) -> None:
    args = ("nist", str(NIST), ",".join(EIGHT))
    old = _designs(before_src, tmp_path / "before.json", *args)
    new = _designs(REPO / "src", tmp_path / "after.json", *args)
    assert len(new) == 2 and [d["manifest"] for d in old] == [d["manifest"] for d in new]
    assert _counted(old) == _counted(new)


# --- the cells counted --------------------------------------------------------------------------------


def test_the_cells_counted_are_the_sum_of_the_groups() -> None:
    frame = pramkit.datasets.census(2_000, seed=3)
    cats = pramkit.datasets.CENSUS_VARIABLES
    names = ["age", "marital_status", "education", "employment", "race"]
    for split, strata in [("equal", ()), ("equal", ("sex",)), ("optimal", ()), ("joint", ("sex",))]:
        plan = plan_release(names, epsilon=8.0, split=split, strata=strata, categories=cats)
        c = count_release(frame, plan)
        sizes = {n: len(cats[n]) + 1 for n in [*names, "sex"]}  # each with None (missing)
        groups = [(*strata, *names)] if split == "joint" else [(*strata, n) for n in names]
        assert c.table.cells == sum(math.prod(sizes[x] for x in g) for g in groups)
        assert [t.columns for t in c.table.tables] == groups


@pytest.mark.parametrize("groups, max_cells, message", [
    ([["a"], ["b"]], 3, "the tables over [['a'], ['b']] have 4 cells"),
    ([["a", "b"]], 3, "the table over ['a', 'b'] has 4 cells"),
    ([[]], 10, "groups must be non-empty lists of distinct columns"),
    ([["a", "a"]], 10, "groups must be non-empty lists of distinct columns"),
])
def test_count_groups_refuses(groups: list[list[str]], max_cells: int, message: str) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace("]", r"\]")):
        count_groups(frame, groups, max_cells=max_cells)


def test_count_groups_streams_a_file_once_encoded(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("x,y,z\nb c,1,é\nx,NA,é\nb c,2,\n1,2,e\n", encoding="utf-8")
    t = count_groups(path, [["x", "y"], ["z"], ["x"]], missing="category", chunk_rows=1)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=["", "NA"])
    assert t.rows == 4 and t.complete_rows == int(frame.notna().all(axis=1).sum())
    assert dict(zip(t.group("z").categories[0], t.group("z").counts.tolist())) == {"e": 1, "é": 2, None: 1}
    assert t.group("x").counts.tolist() == t.group("x", "y").counts.sum(axis=1).tolist()


# --- brute force: the full joint table, marginalised ---------------------------------------------------

LABELS = ["x", "é", "b c", "N/A", "7"]


def _brute_joint(frame: pd.DataFrame, columns: tuple[str, ...],
                 categories: tuple[tuple[Any, ...], ...]) -> CountTable:
    """The joint table of every counted column, record by record (missing as the category None; a value
    matched to its category by its text, ``"1"`` being ``1``)."""
    counts = np.zeros(tuple(len(c) for c in categories), dtype=np.int64)
    where = [{canonical(x): i for i, x in enumerate(cats)} for cats in categories]
    for record in frame[list(columns)].itertuples(index=False):
        counts[tuple(w[canonical(None if pd.isna(v) else v)] for v, w in zip(record, where))] += 1
    return CountTable(columns, categories, counts, len(frame), 0)


@st.composite
def plans(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, Any]]:
    k = draw(st.integers(2, 4))
    columns = [f"c{i}" for i in range(k)]
    n = draw(st.integers(4, 40))
    data = {}
    for c in columns:
        levels = draw(st.lists(st.sampled_from(LABELS), min_size=2, max_size=4, unique=True))
        values = draw(st.lists(st.sampled_from([*levels, None]), min_size=n, max_size=n))
        values[:len(levels)] = levels  # every level present: two or more categories
        data[c] = values
    frame = pd.DataFrame(data)
    n_strata = draw(st.integers(0, k - 1 if k > 1 else 0))
    strata, names = columns[:n_strata], columns[n_strata:]
    if not names:
        strata, names = strata[:-1], strata[-1:]
    split = draw(st.sampled_from(["equal", "optimal", "joint"]))
    missing = draw(st.sampled_from(["keep", "category"]))
    settings: dict[str, Any] = {"variables": names, "epsilon": 6.0, "split": split, "strata": strata,
                                "missing": missing}
    if split == "joint" and len(names) > 1 and draw(st.booleans()):
        a, b = names[:2]
        settings.update(forbid=[{a: str(frame[a].dropna().iloc[0]), b: str(frame[b].dropna().iloc[0])}],
                        rule_breaking="keep")
    return frame, settings


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_targets_are_those_of_the_full_joint_table(case: tuple[pd.DataFrame, dict[str, Any]]) -> None:
    frame, settings = case
    names = settings.pop("variables")
    plan = plan_release(names, **settings)
    counted = count_release(frame, plan)
    full = _brute_joint(frame, tuple(plan.counted), counted.table.categories)
    brute = plan_targets(names, plan.split, plan.shape, full, None, plan.missing)
    assert list(brute) == list(counted.targets)
    for k, b in brute.items():
        t = counted.targets[k]
        assert t.labels == b.labels and t.counts.tolist() == b.counts.tolist()
        assert t.index.tolist() == b.index.tolist() and t.forbidden_counts == b.forbidden_counts
        assert (t.blocks is None) == (b.blocks is None)
        assert t.blocks is None or [x.tolist() for x in t.blocks] == [x.tolist() for x in b.blocks]
    assert counted.table.rows == len(frame)
    assert counted.table.complete_rows == int(frame[list(plan.counted)].notna().all(axis=1).sum())
    assert counted.table.cells <= full.cells
    assert [t.columns for t in counted.table.tables] == list(dict.fromkeys(target_groups(names, plan.split, plan.shape)))


def test_every_group_of_a_small_plan_agrees_with_brute_force() -> None:
    """A fixed example of the property above, with every target kind at once."""
    frame = pd.DataFrame(list(itertools.product(["a", "b"], ["x", "y", None], ["1", "2"])) * 2,
                         columns=["s", "u", "v"])
    plan = plan_release(["u", "v"], epsilon=4.0, strata="s")
    counted = count_release(frame, plan)
    full = _brute_joint(frame, ("s", "u", "v"), counted.table.categories)
    for k, b in plan_targets(["u", "v"], "equal", plan.shape, full, None).items():
        assert counted.targets[k].counts.tolist() == b.counts.tolist()
