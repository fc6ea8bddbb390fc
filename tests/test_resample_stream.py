"""pramkit resample streams a file in two passes: the same bytes as when it read the file whole.

Checked against the commit before the stream (:data:`BEFORE`, built from the repository's history with
its own kernel and run in a process of its own): the resampled file and the ``--json`` summary of the
shared EU-SILC file (missing values) and of the built-in census (missing values, a survey weight), read
from CSV and Parquet in chunks that split the file unevenly.  Also: the chunk size changes no byte, and
a write that fails mid-stream leaves no output and the release unchanged.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import pramkit
from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES, census

REPO = Path(__file__).resolve().parents[1]
#: The commit whose resample read the whole file into one table.
BEFORE = "65f3fef"
KEY = bytes(range(32))

CHILD = textwrap.dedent("""
    import sys
    import pramkit.io
    chunk = int(sys.argv[1])
    if chunk:
        pramkit.io.iter_batches.__kwdefaults__["chunk_rows"] = chunk
    from pramkit.cli import main
    sys.exit(main(sys.argv[2:]))
""")


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


def _resample(src: Path, files: dict[str, Path], fmt: str, out: str, chunk: int, run: Path) -> tuple[bytes, dict]:
    """The resampled file and the JSON summary (its timing left out) of the code in ``src``, in a process of its
    own reading in chunks of ``chunk`` rows (``0``: the default)."""
    run.mkdir()
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(chunk), "resample", str(files[fmt]), "--manifest",
                           str(files["manifest"]), "--out", out, "--key-file", str(files["key"]), "--json"],
                          cwd=run, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
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


@pytest.mark.slow
@pytest.mark.parametrize("data, fmt, out, chunk", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_the_same_bytes_as_before(request, before_src: Path, tmp_path: Path, data: str, fmt: str, out: str,
                                  chunk: int) -> None:
    files = request.getfixturevalue({"silc": "silc", "census": "census_weighted"}[data])
    old = _resample(before_src, files, fmt, out, 0, tmp_path / "before")
    new = _resample(REPO / "src", files, fmt, out, chunk, tmp_path / "after")
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
