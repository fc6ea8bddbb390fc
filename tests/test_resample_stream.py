"""pramkit resample streams a file in two passes: the same bytes as when it read the file whole.

Checked against the commit before the stream (:data:`BEFORE`, built from the repository's history with
its own kernel and run in a process of its own, each command in a fork of it): the resampled file and the
``--json`` summary of the shared EU-SILC file (missing values) and of the built-in census (missing values, a
survey weight), read from CSV and Parquet by this tree's code (in the test's process: the outputs are
compared, not the process) in chunks that split the file unevenly.  Also: the chunk size changes no byte,
and a write that fails mid-stream leaves no output and the release unchanged.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from _forked import run_forked

import pramkit
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census

REPO = Path(__file__).resolve().parents[1]
#: The commit whose resample read the whole file into one table.
BEFORE = "65f3fef"
KEY = bytes(range(32))


@pytest.fixture(scope="module")
def before_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`BEFORE` with its own compiled kernel (skipped without the history)."""
    from test_count_groups import archived_src

    return archived_src(BEFORE, tmp_path_factory)


def _release(folder: Path, original: pd.DataFrame, perturbed: list[str], **settings) -> dict[str, Path]:
    """A release of ``original`` as CSV and as Parquet, its manifest and the key file."""
    folder.mkdir()
    (folder / "original.csv").write_text(original.to_csv(index=False))
    m = pramkit.design_release(original, perturbed, epsilon=3.0, split="equal", rng=random.Random(2), **settings)
    m.write(folder / "m.json")
    (folder / "k").write_text(KEY.hex() + "\n")
    (folder / "k").chmod(0o600)
    for suffix in ("csv", "parquet"):
        pramkit.apply_file(folder / "original.csv", folder / "m.json", folder / f"released.{suffix}", key=KEY)
    return {"dir": folder, "csv": folder / "released.csv", "parquet": folder / "released.parquet",
            "manifest": folder / "m.json", "key": folder / "k"}


@pytest.fixture(scope="module")
def silc(tmp_path_factory) -> dict[str, Path]:
    """The EU-SILC file (14,827 persons; economic status missing for 2,720), region and economic status released
    (once for the module: the tests read these files and write elsewhere)."""
    from conftest import SDC_DATA

    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", dtype={"pl030": str, "hsize": str, "eqSS": str})
    return _release(tmp_path_factory.mktemp("silc") / "files", data, ["db040", "pl030"])


@pytest.fixture(scope="module")
def census_weighted(tmp_path_factory) -> dict[str, Path]:
    """A census of 6,000 persons with missing values and a survey weight, age and marital status released."""
    data = census(6_000, seed=11)[["age", "sex", "marital_status", "race", "employment", "ownership"]].astype(str)
    rng = np.random.default_rng(11)
    data.loc[rng.random(len(data)) < 0.06, "marital_status"] = None
    data.loc[rng.random(len(data)) < 0.03, "race"] = None
    data["weight"] = np.round(rng.uniform(40.0, 160.0, len(data)), 2)
    return _release(tmp_path_factory.mktemp("census") / "files", data, ["age", "marital_status"],
                    categories=CENSUS_VARIABLES)


def _args(files: dict[str, Path], fmt: str, out: str) -> list[str]:
    """``pramkit resample`` of the release ``files`` read as ``fmt``, written to ``out`` (in the folder it runs in)."""
    return ["resample", str(files[fmt]), "--manifest", str(files["manifest"]), "--out", out, "--key-file",
            str(files["key"]), "--json"]


def _result(run: Path, out: str, printed: str) -> tuple[bytes, dict]:
    """The resampled file and the JSON summary (its timing left out) of a run in ``run``."""
    summary = json.loads(printed)
    summary.pop("seconds")
    return (run / out).read_bytes(), summary


#: (data, format read, file written, chunk rows): chunks that split the file unevenly, and one chunk.
CASES = [
    ("silc", "csv", "s.csv", 1000),
    ("silc", "parquet", "s.csv", 777),
    ("silc", "parquet", "s.parquet", 0),
    ("census", "csv", "s.csv", 7),
    ("census", "parquet", "s.csv", 1000),
    ("census", "csv", "s.parquet", 0),
]
IDS = ["-".join(map(str, c)) for c in CASES]


@pytest.fixture(scope="module")
def before(request: pytest.FixtureRequest, before_src: Path, census_weighted: dict[str, Path],
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, dict]]:
    """Each case's resampled file and summary by the code of :data:`BEFORE` (reading at its default chunk size),
    one command a fork of one process of its own (:func:`_forked.run_forked`); the cases of EU-SILC only where the shared
    file is (their test is skipped elsewhere)."""
    from conftest import SDC_DATA

    releases = {"census": census_weighted, **({"silc": request.getfixturevalue("silc")} if SDC_DATA.is_dir() else {})}
    base = tmp_path_factory.mktemp("before")
    cases = {name: case for name, case in zip(IDS, CASES) if case[0] in releases}
    runs = {name: base / name for name in cases}
    for run in runs.values():
        run.mkdir()
    plan = [[str(runs[name]), _args(releases[data], fmt, out)] for name, (data, fmt, out, _) in cases.items()]
    codes = run_forked(before_src, plan, os.environ)
    done = {}
    for (name, (_, _, out, _)), code in zip(cases.items(), codes, strict=True):
        run = runs[name]
        assert code == 0, (name, (run / "stderr").read_text()[-2000:])
        done[name] = _result(run, out, (run / "stdout").read_text())
    return done


def _resample_here(files: dict[str, Path], fmt: str, out: str, chunk: int, run: Path,
                   monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict]:
    """:func:`_result` of ``pramkit resample`` by this tree's code in this process, in the folder ``run``, reading
    in chunks of ``chunk`` rows (``0``: the default)."""
    assert Path(pramkit.__file__).resolve().is_relative_to((REPO / "src").resolve())
    run.mkdir()
    printed, err = io.StringIO(), io.StringIO()
    with monkeypatch.context() as mp:
        mp.chdir(run)
        if chunk:
            mp.setitem(pramkit.io.iter_batches.__kwdefaults__, "chunk_rows", chunk)
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(err):
            code = main(_args(files, fmt, out))
    assert code == 0, err.getvalue()[-2000:]
    return _result(run, out, printed.getvalue())


@pytest.mark.slow
@pytest.mark.xdist_group("test_resample_stream.before")  # the module's runs of the code before, made once
@pytest.mark.parametrize("data, fmt, out, chunk", CASES, ids=IDS)
def test_the_same_bytes_as_before(request, before: dict[str, tuple[bytes, dict]], tmp_path: Path, monkeypatch,
                                  data: str, fmt: str, out: str, chunk: int) -> None:
    files = request.getfixturevalue({"silc": "silc", "census": "census_weighted"}[data])
    old = before["-".join(map(str, (data, fmt, out, chunk)))]
    new = _resample_here(files, fmt, out, chunk, tmp_path / "after", monkeypatch)
    assert new[1] == old[1]
    same = new[0] == old[0]   # outside the assert: pytest would diff two files of MBs, for many minutes
    assert same, f"the file written differs from the code before ({len(new[0])} bytes, {len(old[0])} before)"
    assert old[1]["impossible"] >= 0 and len(old[1]["public"]) >= 3


def _in_process(files: dict[str, Path], fmt: str, out: Path, chunk: int, monkeypatch) -> dict:
    with monkeypatch.context() as mp:
        mp.setitem(pramkit.io.iter_batches.__kwdefaults__, "chunk_rows", chunk)
        res = pramkit.resample_release(files[fmt], files["manifest"], out, key=KEY, force=True)
    d = res.to_dict()
    for volatile in ("seconds", "output", "receipt", "release"):  # the time, and the names of the files
        d.pop(volatile)
    return d


def test_the_chunk_size_changes_no_byte(census_weighted, tmp_path: Path, monkeypatch) -> None:
    """Chunks of 3, 100 and 5,000 rows (one chunk): the same CSV file and summary; the same records in Parquet."""
    seen = []
    for chunk in (3, 100, 5_000):
        csv, parquet = tmp_path / f"s{chunk}.csv", tmp_path / f"s{chunk}.parquet"
        summary = _in_process(census_weighted, "parquet", csv, chunk, monkeypatch)
        assert _in_process(census_weighted, "csv", parquet, chunk, monkeypatch) == summary
        seen.append((summary, csv.read_bytes(), pq.read_table(parquet)))
    (summary, text, table), *others = seen
    assert summary["rows"] == 6_000 and summary["variables"][1]["kept_as_released"] > 0
    for other in others:
        assert other[0] == summary and other[1] == text and other[2].equals(table)


def test_injected_write_failure_mid_stream_leaves_nothing(census_weighted, tmp_path: Path, monkeypatch,
                                                          capsys) -> None:
    """The third chunk's write fails: no resampled file, no receipt, no temporary, the release unchanged; a
    resampled file written before survives a failing ``--force``."""
    from pramkit import io as pio

    folder = census_weighted["dir"]
    args = ["resample", str(census_weighted["csv"]), "--manifest", str(census_weighted["manifest"]), "--out",
            str(folder / "mid.csv"), "--key-file", str(census_weighted["key"]), "--quiet"]
    real = pio.TableWriter._write_chunk
    for existing in (False, True):
        if existing:
            assert main(args) == 0
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        capsys.readouterr()
        calls = []

        def fail_third(self, table, calls=calls):
            calls.append(table.num_rows)
            if len(calls) == 3:
                raise OSError(28, "No space left on device")
            real(self, table)

        with monkeypatch.context() as mp:
            mp.setitem(pio.iter_batches.__kwdefaults__, "chunk_rows", 1000)
            mp.setattr(pio.TableWriter, "_write_chunk", fail_third)
            code = main(args + (["--force"] if existing else []))
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "No space left" in err[0], err
        assert len(calls) == 3
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
