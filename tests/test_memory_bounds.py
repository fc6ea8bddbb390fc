"""Peak memory of the commands that stream a file: bounded by a chunk, not by the file.

A census-like Parquet file (households, 300 areas, a survey weight) and its release are written in
two sizes: one of a single chunk and one of sixteen.  Each command runs in a process of its own, reading
in chunks of the small file's size, and reports its peak resident memory (``VmHWM`` of
``/proc/self/status``: ``ru_maxrss`` would carry the parent's peak across the fork).  The processes
are forks of one that imported pramkit and its libraries once (:class:`_forked.ForkServer`): a fork's
``VmHWM`` starts at what it shares with that process, as a fresh interpreter's starts at what it
imports, so both sizes start from the same base.  Had a command held the file (its columns, or a row
of cell totals per household), the large file would add hundreds of MiB to the peak; a command
bounded by its chunk adds what the larger result holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _forked import ForkServer

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
    import pramkit.counts
    pramkit.counts.count_file.__kwdefaults__["chunk_rows"] = chunk  # and the streamed counts' (risk, report)
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
    from pramkit.manifest import Manifest, PerturbedVariable
    from pramkit.swap.census import census_households

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
    key = folder / "secret.key"
    if not key.exists():
        key.write_bytes(bytes(range(32)))
        key.chmod(0o600)
    apply_file(original, manifest, released, key=key.read_bytes(), chunk_rows=CHUNK)  # row groups of a chunk
    return {"original": str(original), "manifest": str(manifest), "released": str(released), "key": str(key)}


def shared_census(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, str]]:
    """The files of :func:`_files` in both sizes, written once for the whole run: every module measuring peaks
    (in every worker process of a parallel run) reads the same files, each command writing its outputs under
    names of its own."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "memory-census"
    folder.mkdir(exist_ok=True)
    written = folder / "files.json"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)       # the first process writes them, the others wait and read
        if not written.exists():
            written.write_text(json.dumps({rows: _files(folder, rows) for rows in (CHUNK, LARGE)}))
    return {int(rows): files for rows, files in json.loads(written.read_text()).items()}


@pytest.fixture(scope="module")
def census_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, str]]:
    return shared_census(tmp_path_factory)


def _child_env() -> dict[str, str]:
    """A child's environment: this tree's code first, and one thread of linear algebra (the peak is that of the
    command's data whatever the threads; where every core runs a test, a second thread only waits its turn)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                           os.environ.get("PYTHONPATH", "")]),
            **dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")}


#: What the memory server imports before its forks (beside :data:`_forked.LIBRARIES`): the commands' modules and
#: the libraries they load.
COMMAND_MODULES = ("scipy.sparse", "pramkit.audit", "pramkit.audit.release", "pramkit.cli", "pramkit.counts",
                   "pramkit.engine.perturb", "pramkit.estimate", "pramkit.io", "pramkit.risk.household",
                   "pramkit.risk.identification", "pramkit.risk.suda", "pramkit.swap", "pramkit.synthesize")


def fork_server(extra: tuple[str, ...] = ()) -> ForkServer:
    """A :class:`_forked.ForkServer` for the measurements: the commands' modules and ``extra`` imported, this
    tree's code in the environment of :func:`_child_env`."""
    return ForkServer((*COMMAND_MODULES, *extra), _child_env())


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    """The process whose forks run the commands measured, the report's figures and the workbench imported too."""
    server = fork_server(("matplotlib.backends.backend_agg", "matplotlib.figure", "jinja2", "pramkit.report",
                         "pramkit.workbench"))
    yield server
    server.close()


def _peak(args: list[str], prelude: str = "", forks: ForkServer | None = None) -> float:
    """The peak of ``pramkit ARGS`` in a child, ``prelude`` (code) run before the command: a fresh interpreter, or a
    fork of ``forks``."""
    if forks is None:
        stderr = subprocess.run([sys.executable, "-c", prelude + CHILD, str(CHUNK), *args], capture_output=True,
                                text=True, env=_child_env(), timeout=600).stderr
    else:
        status, stderr = forks.run(prelude + CHILD, [str(CHUNK), *args], timeout=600)
        assert status == 0, stderr[-3000:]
    result = json.loads(stderr.strip().splitlines()[-1])
    assert result["code"] == 0, stderr
    return float(result["peak_mib"])


#: The key variables of the risk commands and the report.
KEYS = "area,age,sex,marital_status,race"


def _design_args(f: dict[str, str]) -> list[str]:
    return ["design", f["original"], "--vars", "marital_status", "--epsilon", "3", "--out",
            str(Path(f["manifest"]).with_name(Path(f["manifest"]).stem + "-design.json")), "--force", "--quiet"]


COMMANDS = {
    "apply": lambda f: ["apply", f["original"], "--manifest", f["manifest"], "--out",
                        str(Path(f["released"]).with_name(Path(f["released"]).stem + "-again.parquet")),
                        "--key-file", f["key"], "--chunk-rows", str(CHUNK), "--force", "--quiet"],
    "risk (tau1, tau2)": lambda f: ["risk", f["original"], "--keys", KEYS, "--weights", "weight", "--json"],
    "design": _design_args,
    "estimate, households as PSUs": lambda f: ["estimate", f["released"], "--manifest", f["manifest"], "--vars", "area",
                                               "--weights", "weight", "--psu", "hid", "--json"],
    "audit": lambda f: ["audit", "--manifest", f["manifest"], "--released", f["released"], "--original", f["original"],
                        "--json"],
}


#: Commands that hold every record, as codes: the household risk, SUDA (both read the keys whole) and
#: the report (both files' keys and perturbed columns).  They may add ``BOUND_MIB`` and at most
#: ``BYTES_PER_RECORD`` per record of the larger file.  Reading the keys as text, the household risk
#: and SUDA held about 300 bytes per record and the report about 360 (a census of 2 million persons);
#: as codes, 130-200.
HOLDING = {
    "risk --household": lambda f: ["risk", f["original"], "--keys", KEYS, "--weights", "weight", "--household", "hid",
                                   "--json"],
    "risk --suda": lambda f: ["risk", f["original"], "--keys", KEYS, "--suda", "--max-size", "3", "--json"],
    "report": lambda f: ["report", f["original"], "--manifest", f["manifest"], "--released", f["released"], "--keys",
                         KEYS, "--sampling-fraction", "1", "--out", str(Path(f["released"]).with_suffix(".html")),
                         "--force", "--quiet"],
}
BYTES_PER_RECORD = 240


@pytest.mark.parametrize("command", list(HOLDING))
def test_the_commands_that_hold_the_records_hold_them_as_codes(census_files, forks, command) -> None:
    small = _peak(HOLDING[command](census_files[CHUNK]), forks=forks)
    large = _peak(HOLDING[command](census_files[LARGE]), forks=forks)
    limit = BOUND_MIB + BYTES_PER_RECORD * (LARGE - CHUNK) / 2**20
    assert large - small < limit, (f"{command}: {small:.0f} MiB for one chunk, {large:.0f} MiB for sixteen "
                                   f"(at most {limit:.0f} MiB more)")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_peak_memory_does_not_grow_with_the_file(census_files, forks, command) -> None:
    small = _peak(COMMANDS[command](census_files[CHUNK]), forks=forks)
    large = _peak(COMMANDS[command](census_files[LARGE]), forks=forks)
    assert large - small < BOUND_MIB, f"{command}: {small:.0f} MiB for one chunk, {large:.0f} MiB for sixteen"


#: The app's export in a child (a fork of :class:`ForkServer`): a workbench opens the built-in census of ``argv[2]``
#: persons, assesses its risk, designs and applies the release; the allocators give back what they keep, the peak is
#: reset (``/proc/self/clear_refs``) and the export's addition to the peak is printed.
EXPORT_CHILD = textwrap.dedent("""
    import ctypes, gc, json, sys, tempfile
    from pathlib import Path
    import pyarrow as pa
    import pramkit.io
    import pramkit.counts
    chunk = int(sys.argv[1])
    pramkit.io.iter_batches.__kwdefaults__["chunk_rows"] = chunk
    pramkit.counts.count_file.__kwdefaults__["chunk_rows"] = chunk
    pramkit.counts.count_groups.__kwdefaults__["chunk_rows"] = chunk
    from pramkit.release.choices import DesignChoices
    from pramkit.workbench import Workbench

    def status(field):
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith(field + ":")) / 1024

    with tempfile.TemporaryDirectory() as folder:
        wb = Workbench(Path(folder) / "work")
        wb.open_census(rows=int(sys.argv[2]))
        wb.risk(["age", "sex", "marital_status", "race", "education"], sampling_fraction=0.05)
        wb.design(["sex", "age"], DesignChoices(epsilon=2.0))
        wb.apply()
        gc.collect()
        pa.default_memory_pool().release_unused()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        before = status("VmRSS")
        wb.export(Path(folder) / "out", confirmed=True)
        print(json.dumps({"added_mib": status("VmHWM") - before}), file=sys.stderr)
""")

#: Persons of the larger census the export is measured on (the smaller is one chunk).
EXPORT_LARGE = 32 * CHUNK
#: The most the export of the larger census may add beyond the smaller: ``EXPORT_BOUND_MIB`` and
#: ``EXPORT_BYTES_PER_RECORD`` per person.  Measured from one chunk to 64 (chunks of ``CHUNK`` rows): 313 MiB
#: more before the reports read their files chunk by chunk and counted condition C1's tables as they stream the
#: file (about 150 bytes per person), 134 MiB after (about 60: each file's key and perturbed columns held as
#: one-byte codes by both reports, and the allocators' slack), 92 MiB since the reports' reads and the counts of
#: a frame take chunks sized by their bytes and the chunks' codes are joined once per column (about 46: the
#: one-byte codes, and a chunk of about 60 000 rows where the smaller census is one of 32 768); 50 MiB (about 25)
#: since the reports of two files count their figures' tables chunk by chunk instead of holding those codes
#: (56 MiB, about 28, for the code before in the same minutes).  Most of those 50 MiB are the larger chunks,
#: reached by four: from one chunk to 32 the export adds 17-35 MiB more, from four to 32 at most 12 MiB.  So the
#: bound, 60 MiB from one chunk to 32, fails 46 bytes per person (45 MiB more, and the larger chunks' 17 at
#: least) as the bound of 96 MiB from one chunk to 64 did.
EXPORT_BOUND_MIB = 44
EXPORT_BYTES_PER_RECORD = 16


def _export_added(rows: int, forks: ForkServer) -> float:
    status, stderr = forks.run(EXPORT_CHILD, [str(CHUNK), str(rows)], timeout=900)
    assert status == 0, stderr[-3000:]
    return float(json.loads(stderr.strip().splitlines()[-1])["added_mib"])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="the peak is reset through /proc")
def test_the_workbench_export_holds_a_few_bytes_per_record(forks: ForkServer) -> None:
    small, large = _export_added(CHUNK, forks), _export_added(EXPORT_LARGE, forks)
    limit = EXPORT_BOUND_MIB + EXPORT_BYTES_PER_RECORD * (EXPORT_LARGE - CHUNK) / 2**20
    assert large - small < limit, (f"the export added {small:.0f} MiB for {CHUNK:,} persons and {large:.0f} MiB for "
                                   f"{EXPORT_LARGE:,} (at most {limit:.0f} MiB more)")
