"""Peak memory of ``pramkit resample``: bounded by a chunk, not by the file.

A census released on age and marital status (missing values, a survey weight that is too many-valued to
be a public column) is written in two sizes: one of a single chunk and one of sixteen.  ``pramkit
resample`` and, for comparison, ``pramkit recode`` (which streamed already) run in fresh processes
reading in chunks of the small file's size (the child of tests/test_memory_bounds.py) and report their
peak resident memory.  Holding the file, resample added 379 MiB to its peak for the large file (243 to
622 MiB); streamed in two passes, 43 MiB (251 to 294), what a few chunks and the allocators' slack take.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_memory_bounds import CHUNK, LARGE, _peak

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")]

#: The most the large file may add to a command's peak, in MiB (as tests/test_memory_bounds.py allows).
BOUND_MIB = 96
#: The census columns of the files: two perturbed, the others public.
COLUMNS = ["age", "sex", "marital_status", "race", "education", "employment"]


def _files(folder: Path, rows: int) -> dict[str, str]:
    """A census of ``rows`` persons with missing values and weights, its release, and a recoding map."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import pramkit
    from pramkit.datasets import CENSUS_VARIABLES, census

    frame = census(rows, seed=3)[COLUMNS].astype(str)
    rng = np.random.default_rng(rows)
    frame.loc[rng.random(rows) < 0.05, "marital_status"] = None
    frame["weight"] = np.round(rng.uniform(50.0, 150.0, rows), 2)
    original = folder / f"census{rows}.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), original, row_group_size=CHUNK)
    manifest = folder / "m.json"
    if not manifest.exists():
        pramkit.design_release(census(20_000, seed=3)[COLUMNS], ["age", "marital_status"], epsilon=3.0,
                               split="equal", categories=CENSUS_VARIABLES, rng=random.Random(0)).write(manifest)
    key = folder / "secret.key"
    if not key.exists():
        key.write_bytes(bytes(range(32)))
        key.chmod(0o600)
    released = folder / f"released{rows}.parquet"
    pramkit.apply_file(original, manifest, released, key=key.read_bytes(), chunk_rows=CHUNK)
    recoding = folder / "map.json"
    recoding.write_text(json.dumps({"race": {"merge": {"asian": "other", "two or more": "other"}}}))
    return {"released": str(released), "manifest": str(manifest), "key": str(key), "map": str(recoding)}


@pytest.fixture(scope="module")
def census_files(tmp_path_factory) -> dict[int, dict[str, str]]:
    folder = tmp_path_factory.mktemp("memory-resample")
    return {rows: _files(folder, rows) for rows in (CHUNK, LARGE)}


def _out(f: dict[str, str], name: str) -> str:
    return str(Path(f["released"]).with_name(Path(f["released"]).stem + name))


COMMANDS = {
    "resample": lambda f: ["resample", f["released"], "--manifest", f["manifest"], "--out", _out(f, "-resampled.parquet"),
                           "--key-file", f["key"], "--force", "--quiet"],
    "recode": lambda f: ["recode", f["released"], "--map", f["map"], "--out", _out(f, "-recoded.parquet"), "--force",
                         "--quiet"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_peak_memory_does_not_grow_with_the_file(census_files, command) -> None:
    small = _peak(COMMANDS[command](census_files[CHUNK]))
    large = _peak(COMMANDS[command](census_files[LARGE]))
    assert large - small < BOUND_MIB, (f"{command}: {small:.0f} MiB for {CHUNK:,} rows, {large:.0f} MiB for "
                                       f"{LARGE:,} (at most {BOUND_MIB} MiB more)")
