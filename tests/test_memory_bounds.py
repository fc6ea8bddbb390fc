"""Peak memory of the commands that stream a file: bounded by a chunk, not by the file.

A census-like Parquet file (households, 300 areas, a survey weight) and its release are written in
two sizes: one of a single chunk and one of sixteen.  Each command runs in a fresh process, reading
in chunks of the small file's size, and reports its peak resident memory (``VmHWM`` of
``/proc/self/status``: ``ru_maxrss`` would carry the parent's peak across the fork).  Had it
held the file (its columns, or a row of cell totals per household), the large file would add
hundreds of MiB to the peak; a command bounded by its chunk adds what the larger result holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")]

#: Rows of a chunk (and of the small file); the large file holds sixteen chunks.
CHUNK = 1 << 15
LARGE = 16 * CHUNK
#: The most the large file may add to a command's peak, in MiB.  Holding the file adds about 400 MiB
#: to the audit (both files' columns) and 1.4 GiB to the estimate (300 area totals per household, grown
#: by copying); streamed, the audit keeps each household's first member (about 20 bytes per household)
#: and both add 40-60 MiB, most of it memory the allocators keep after a chunk is freed.
BOUND_MIB = 96

CHILD = textwrap.dedent("""
    import json, sys
    import pramkit.io
    import pramkit.audit.release as release
    chunk = int(sys.argv[1])
    pramkit.io.iter_batches.__kwdefaults__["chunk_rows"] = chunk   # every reader's default chunk
    release.AUDIT_CHUNK_ROWS = chunk
    from pramkit.cli import main
    code = main(sys.argv[2:])
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    print(json.dumps({"code": code, "peak_mib": peak / 1024}), file=sys.stderr)
""")


def _files(folder: Path, rows: int) -> dict[str, str]:
    """A census of ``rows`` persons, the area randomized among the 300 areas per household, and its release."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pramkit.design.classic import randomized_response
    from pramkit.engine.perturb import apply_file
    from pramkit.engine.swap.census import census_households
    from pramkit.manifest import Manifest, PerturbedVariable

    frame = census_households(rows, seed=5)
    frame["weight"] = 1.0 + (frame["hid"].to_numpy() % 7) / 10
    text = [c for c in frame.columns if c not in ("hid", "hsize", "weight")]
    table = pa.Table.from_pandas(frame.astype(dict.fromkeys(text, str)), preserve_index=False)
    original = folder / f"census{rows}.parquet"
    pq.write_table(table, original, row_group_size=CHUNK)
    areas = sorted(np.unique(frame["area"].astype(str)))
    manifest = folder / f"m{rows}.json"
    Manifest((PerturbedVariable("area", randomized_response(areas, 6.0), unit="hid"),)).write(manifest)
    released = folder / f"released{rows}.parquet"
    apply_file(original, manifest, released, key=bytes(32), chunk_rows=CHUNK)  # row groups of a chunk
    return {"original": str(original), "manifest": str(manifest), "released": str(released)}


@pytest.fixture(scope="module")
def census_files(tmp_path_factory) -> dict[int, dict[str, str]]:
    folder = tmp_path_factory.mktemp("memory")
    return {rows: _files(folder, rows) for rows in (CHUNK, LARGE)}


def _peak(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(CHUNK), *args], capture_output=True, text=True,
                          env=env, timeout=600)
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stderr
    return float(result["peak_mib"])


COMMANDS = {
    "estimate, households as PSUs": lambda f: ["estimate", f["released"], "--manifest", f["manifest"], "--vars", "area",
                                               "--weights", "weight", "--psu", "hid", "--json"],
    "audit": lambda f: ["audit", "--manifest", f["manifest"], "--released", f["released"], "--original", f["original"],
                        "--json"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_peak_memory_does_not_grow_with_the_file(census_files, command) -> None:
    small = _peak(COMMANDS[command](census_files[CHUNK]))
    large = _peak(COMMANDS[command](census_files[LARGE]))
    assert large - small < BOUND_MIB, f"{command}: {small:.0f} MiB for one chunk, {large:.0f} MiB for sixteen"
