"""Peak memory of ``pramkit swap`` and ``pramkit synthesize``, and their outputs the same as before it was cut.

The peaks are measured as tests/test_memory_bounds.py measures them: a census-like Parquet file of one
chunk and one of sixteen, each command in a process of its own (a fork of one that imported pramkit once)
reporting ``VmHWM``.  Both commands hold something per record, so each may grow from the small file to
the large by a stated MiB and a stated number of bytes per record (about 1.5 times what was measured).

Holding less changed no output: the code of commit :data:`BEFORE` (built from the repository's history, run
in a process of its own, each command in a fork of it) and this tree's (run in the test's process: the
outputs are compared, not the process) write the same files byte for byte, and print the same ``--json``
summary but for its wall time, on a census with missing values and on the EU-SILC file.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from _forked import ForkServer, run_forked
from test_count_groups import REPO, archived_src
from test_memory_bounds import CHUNK, LARGE, _peak, fork_server, shared_census

from pramkit.swap.census import census_households

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")]

#: The code the outputs are compared with.  It was the last commit before the swap and the synthesis held
#: less per record (65f3fef); their outputs have changed since on purpose (the synthesis draws the variables
#: of a rule together and keeps missing codes, the swap's receipt words its donor rule, a random swap's
#: manifest records its missing codes, a CSV column with nulls is sized value by value), so it is now the
#: commit of those changes: what changes the outputs again is a change to say here.
BEFORE = "ddaab2936fff71bd55f79166b474a8440add3f9d"

#: Records the large file adds to the small one.
ADDED = LARGE - CHUNK


def _swap_args(f: dict[str, str], risk: bool) -> list[str]:
    out = Path(f["original"]).with_suffix(".swapped.parquet" if risk else ".random.parquet")
    extra = (["--risk-vars", "age,sex,marital_status,race", "--partners", str(out.with_suffix(".pairs.parquet"))]
             if risk else ["--manifest", str(out.with_suffix(".json"))])
    return ["swap", f["original"], "--hid", "hid", "--geo", "region,area", "--similar", "hsize", *extra,
            "--chunk-rows", str(CHUNK), "--out", str(out), "--key-file", f["key"], "--force", "--json"]


#: The swap streams the file twice and keeps, per person, its household number (8 bytes) and its risk
#: variables' codes (4 bytes each); the geography and the similarity profile are kept per household.  It may
#: grow by ``SWAP_MIB`` and ``SWAP_BYTES_PER_RECORD`` per person.  Measured growth from 32 768 to 524 288 persons
#: (three runs each; the peak falls in the writing pass, where the household arrays meet a chunk of every
#: column, and varies by some 25 MiB with the allocators): targeted (four risk variables, the partners file)
#: 60-88 MiB, 95 before (when each chunk's codes of every column read were kept per person and joined into
#: copies); at random (the manifest) 70-89 MiB, as before.  From 2^19 to 2^20 persons the targeted swap grew
#: by 25-55 MiB, 115 before.
SWAP = {"targeted": lambda f: _swap_args(f, risk=True), "random": lambda f: _swap_args(f, risk=False)}
SWAP_MIB = 16
SWAP_BYTES_PER_RECORD = 240


@pytest.mark.parametrize("kind", list(SWAP))
def test_the_swap_holds_a_few_codes_per_person(census_files: dict[int, dict[str, str]], forks: ForkServer,
                                               kind: str) -> None:
    small, large = (_peak(SWAP[kind](census_files[rows]), forks=forks) for rows in (CHUNK, LARGE))
    limit = SWAP_MIB + SWAP_BYTES_PER_RECORD * ADDED / 2**20
    assert large - small < limit, (f"swap ({kind}): {small:.0f} MiB for one chunk, {large:.0f} MiB for sixteen "
                                   f"(at most {limit:.0f} MiB more)")


def _synthesize_args(f: dict[str, str]) -> list[str]:
    out = Path(f["original"]).with_suffix(".synthesized.parquet")
    return ["synthesize", f["original"], "--vars", "marital_status,race,education,employment", "--public", "age,sex",
            "--epsilon", "10", "--out", str(out), "--key-file", f["key"], "--force", "--json"]


#: The synthesis reads the file whole and draws a pool of candidates per record: 40 for the small file
#: (1.3 million in all), 19 for the large (10 million, about the most :data:`pramkit.synthesize.POOL_CANDIDATES`
#: allows whatever the size).  So it may grow by a fixed part for the 8.7 million candidates more, about
#: 35 bytes each (four int32 codes, a float64 weight and, while a table is raked, each candidate's int64 cell),
#: and so much per record: about 440 bytes (the file's columns as read, pyarrow-backed text, the released
#: table written, the codes of the synthesized variables).  Measured growth from 2^15 to 2^19 records: 495 MiB,
#: 687 before (when every candidate was compared with every category at once, the released frame was a copy,
#: and the raking repeated each record's number and public cell for every candidate).
SYNTHESIZE_MIB = 400
SYNTHESIZE_BYTES_PER_RECORD = 640
#: The children rake in two sweeps, not :data:`pramkit.synthesize.SWEEPS` (30): a sweep rescales the weights in
#: place, so the peak is that of the first (growth 463 MiB in two sweeps, 467 in 30) and the other 28 were
#: three fifths of the test's time.  Two, not one, so that what a sweep leaves for the next is still counted.
FEW_SWEEPS = 'import pramkit.synthesize\npramkit.synthesize.synthesize_release.__kwdefaults__["sweeps"] = 2\n'


def test_the_synthesis_grows_by_its_pool_and_the_records(census_files: dict[int, dict[str, str]],
                                                         forks: ForkServer) -> None:
    small, large = (_peak(_synthesize_args(census_files[rows]), FEW_SWEEPS, forks) for rows in (CHUNK, LARGE))
    limit = SYNTHESIZE_MIB + SYNTHESIZE_BYTES_PER_RECORD * ADDED / 2**20
    assert large - small < limit, (f"synthesize: {small:.0f} MiB for one chunk, {large:.0f} MiB for sixteen "
                                   f"(at most {limit:.0f} MiB more)")


@pytest.fixture(scope="module")
def census_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, str]]:
    return shared_census(tmp_path_factory)


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The process whose forks run the commands measured (tests/test_memory_bounds.py's :func:`fork_server`)."""
    server = fork_server()
    yield server
    server.close()


# ------------------------------------------------------------------ the outputs, the same as before

#: Run once before the commands of the code before (:func:`_forked.run_forked`): a manifest's time stamp
#: (``created``, which the swap's receipt digests) fixed.
FIXED_CLOCK = """
import datetime
import pramkit.manifest
class Fixed(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.datetime(2020, 1, 1, tzinfo=tz)
pramkit.manifest.datetime = Fixed
"""


@pytest.fixture(scope="module")
def before_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`BEFORE`, with its own kernel."""
    return archived_src(BEFORE, tmp_path_factory)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A census of households with missing values (age, race, employment, household size) as Parquet and CSV,
    a key, and edit rules: one of a public column and a synthesized variable, one of two synthesized variables."""
    folder = tmp_path_factory.mktemp("inputs")
    frame = census_households(20_000, seed=5)
    text = [c for c in frame.columns if c not in ("hid", "hsize")]
    frame = frame.astype(dict.fromkeys(text, object))
    frame.loc[::37, "age"] = None
    frame.loc[::41, "race"] = None
    frame.loc[::53, "employment"] = None
    frame.loc[::59, "hsize"] = None
    frame.to_parquet(folder / "census.parquet", row_group_size=4096, index=False)
    frame.to_csv(folder / "census.csv", index=False)
    (folder / "k").write_text(bytes(range(32)).hex() + "\n")
    (folder / "k").chmod(0o600)
    (folder / "public-rule.csv").write_text("age,employment\n0-9,employed\n")
    (folder / "pair-rule.csv").write_text("education,employment\nnone,employed\n")
    return folder


def _run_before(src: Path, runs: list[tuple[Path, list[str]]]) -> list[int]:
    """The exit statuses of ``pramkit ARGS`` run in each ``folder`` of ``runs`` by the code in ``src``, the clock
    fixed (:data:`FIXED_CLOCK`; ``PATH`` is the only variable of this environment it gets)."""
    return run_forked(src, runs, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, FIXED_CLOCK)


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _summary(printed: str) -> Any:
    """A ``--json`` summary without its wall time."""
    summary = json.loads(printed)
    summary.pop("seconds")
    return summary


class _Fixed(datetime.datetime):
    """:data:`FIXED_CLOCK`'s clock: a manifest's time stamp fixed."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:
        return datetime.datetime(2020, 1, 1, tzinfo=tz)


def _main_here(args: list[str]) -> tuple[int, str, str]:
    """``pramkit ARGS`` with this tree's code (the one this process imports, ``REPO / "src"``) in this process,
    the time stamp fixed as :data:`FIXED_CLOCK` fixes it: its exit status, stdout and stderr."""
    import pramkit.manifest
    from pramkit.cli import main

    assert Path(pramkit.manifest.__file__).resolve().is_relative_to((REPO / "src").resolve())
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(pramkit.manifest, "datetime", _Fixed), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _named(args: list[str], out: Path, data: dict[str, Path]) -> list[str]:
    """``ARGS`` with ``{out}``, ``{inp}`` and ``{silc}`` replaced by the folders they name."""
    return [a.format(out=out, **{k: str(v) for k, v in data.items()}) for a in args]


def _run_here(out: Path, args: list[str], data: dict[str, Path]) -> tuple[dict[str, bytes], Any]:
    """The files ``pramkit ARGS`` writes into a new folder ``out`` with this tree's code, in this process
    (:func:`_main_here`), and its ``--json`` summary without its wall time."""
    out.mkdir()
    code, printed, err = _main_here(_named(args, out, data))
    assert code == 0, err[-2000:]
    return _files(out), _summary(printed)


SWAP_CASES = {
    "census, targeted, partners": ["swap", "{inp}/census.parquet", "--hid", "hid", "--geo", "region,area",
                                   "--risk-vars", "age,sex,marital_status,race", "--similar", "hsize",
                                   "--similar", "sex", "--rate", "0.1", "--chunk-rows", "3000",
                                   "--partners", "{out}/pairs.parquet", "--out", "{out}/swapped.parquet"],
    "census CSV, any area, k 5": ["swap", "{inp}/census.csv", "--hid", "hid", "--geo", "region,area",
                                  "--risk-vars", "age,race,employment", "--similar", "hsize", "--k", "5",
                                  "--donors", "any-area", "--chunk-rows", "7000", "--partners", "{out}/pairs.csv",
                                  "--out", "{out}/swapped.csv"],
    "census, random, manifest": ["swap", "{inp}/census.parquet", "--hid", "hid", "--geo", "region,area",
                                 "--similar", "hsize", "--rate", "0.2", "--chunk-rows", "5000",
                                 "--manifest", "{out}/swap.json", "--out", "{out}/swapped.parquet"],
    "EU-SILC, targeted": ["swap", "{silc}/eusilc_laeken.csv", "--hid", "db030", "--geo", "db040",
                          "--risk-vars", "age,rb090,pb220a", "--similar", "hsize", "--chunk-rows", "2000",
                          "--partners", "{out}/pairs.csv", "--out", "{out}/swapped.csv"],
    "EU-SILC, random": ["swap", "{silc}/eusilc_laeken.csv", "--hid", "db030", "--geo", "db040",
                        "--similar", "hsize", "--rate", "0.1", "--manifest", "{out}/swap.json",
                        "--out", "{out}/swapped.parquet"],
}
SYNTHESIZE_CASES = {
    "census, a rule of a public column": ["synthesize", "{inp}/census.parquet", "--vars",
                                          "marital_status,race,education,employment", "--public", "age,sex",
                                          "--epsilon", "10", "--forbid", "{inp}/public-rule.csv",
                                          "--out", "{out}/synthesized.parquet"],
    "census CSV, a rule of two variables": ["synthesize", "{inp}/census.csv", "--vars", "education,employment,race",
                                            "--public", "age", "--epsilon", "3", "--min-count", "1",
                                            "--forbid", "{inp}/pair-rule.csv", "--out", "{out}/synthesized.csv"],
}
CASES = {**SWAP_CASES, **SYNTHESIZE_CASES}


def _case_args(case: str) -> list[str]:
    return [*CASES[case], "--key-file", "{inp}/k", "--json"]


@pytest.fixture(scope="module")
def before(before_src: Path, inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each case of :data:`CASES` (where the shared EU-SILC file is, as their test needs it) and :data:`REFUSED`
    run by the code of :data:`BEFORE` (:func:`_run_before`), in a folder of its own: a case of ``CASES`` wrote its
    files into the folder's ``before`` (the summaries name the files: written into ``out``, then renamed, so
    that this tree's code writes into the same ``out``)."""
    from conftest import SDC_DATA

    data = {"inp": inputs, "silc": SDC_DATA}
    base = tmp_path_factory.mktemp("before")
    cases = [*CASES, *REFUSED] if SDC_DATA.is_dir() else list(REFUSED)
    folders = {case: base / f"case{i}" for i, case in enumerate(cases)}
    runs = []
    for case, folder in folders.items():
        folder.mkdir()
        if case in CASES:
            (folder / "out").mkdir()
            runs.append((folder, _named(_case_args(case), folder / "out", data)))
        else:
            (folder / "data.csv").write_text(REFUSED[case])
            runs.append((folder, _refused_args(folder)))
    codes = dict(zip(folders, _run_before(before_src, runs), strict=True))
    for case in CASES.keys() & folders.keys():
        assert codes[case] == 0, (case, (folders[case] / "stderr").read_text()[-2000:])
        (folders[case] / "out").rename(folders[case] / "before")
    return {"data": data, "folders": folders, "codes": codes}


@pytest.mark.xdist_group("test_memory_swap_synthesize.before")  # the module's runs of the code before, made once
@pytest.mark.parametrize("case", list(CASES))
def test_the_outputs_are_those_of_the_code_before(before: dict[str, Any], sdc_data: Path, case: str) -> None:
    folder = before["folders"][case]
    before_ = _files(folder / "before"), _summary((folder / "stdout").read_text())
    after = _run_here(folder / "out", _case_args(case), before["data"])
    assert list(after[0]) == list(before_[0]) and len(after[0]) >= 2
    for name, content in before_[0].items():
        same = after[0][name] == content   # outside the assert: pytest would diff two files of MBs, for many minutes
        assert same, f"{case}: {name} differs from the code before"
    added = {k: after[1].pop(k) for k in SUMMARY_ADDED if k in after[1] and k not in before_[1]}
    assert after[1] == before_[1]
    assert all(v is None for v in added.values()), added  # pure epsilon-DP: no delta


#: Fields the ``--json`` summaries gained after :data:`BEFORE` (deliberately: they add, they change nothing):
#: ``synthesize``'s ``delta`` (null unless ``--delta``).
SUMMARY_ADDED = ("delta",)


#: Refusals that depend on what the whole file holds: a household in two areas (row 5) and an area spelled
#: two ways (rows 1 and 9) stop the swap with the same line as before, the spelling first.
REFUSED = {
    "moved": "hid,area,one\n1,N1,1\n2,N2,1\n3,N1,1\n4,N2,1\n1,N2,1\n5,N1,1\n6,N2,1\n7,N1,1\n",
    "spelled and moved": "hid,area,one\n1,N1,1\n2,N2,1\n3,N1,1\n4,N2,1\n1,N2,1\n5,N1,1\n6,N2,1\n7,N1,1\n8, N1,1\n",
}


def _refused_args(folder: Path) -> list[str]:
    return ["swap", str(folder / "data.csv"), "--hid", "hid", "--geo", "area", "--similar", "one", "--chunk-rows",
            "3", "--out", str(folder / "out.csv")]


@pytest.mark.xdist_group("test_memory_swap_synthesize.before")
@pytest.mark.parametrize("case", list(REFUSED))
def test_the_refusals_are_those_of_the_code_before(before: dict[str, Any], case: str) -> None:
    folder = before["folders"][case]
    assert before["codes"][case] != 0
    code, _, err = _main_here(_refused_args(folder))                 # this tree's code, in this process
    assert code != 0
    lines = [(folder / "stderr").read_text().strip().splitlines()[-1], err.strip().splitlines()[-1]]
    assert lines[0] == lines[1] and ("spelled two ways" in lines[1]) == (case == "spelled and moved")
