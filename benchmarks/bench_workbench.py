"""Benchmark: the workbench's first step, opening a file (``pramkit.workbench.source.describe_file``), and
the design step's live preview (``Workbench.preview``).

``python benchmarks/bench_workbench.py [ROWS]`` writes the built-in census of ROWS persons (default
2 000 000) as CSV and opens it as the workbench does: one streamed pass counting each column's
distinct and missing values, keeping a preview of 20 rows.  The floor, measured in the same run, is
pyarrow reading the whole file into memory (``pyarrow.csv.read_csv``), which the workbench must not
do for a file larger than memory; the ratio says what streaming and counting cost on top of parsing.

``python benchmarks/bench_workbench.py live [ROWS]`` (default 1 000 000) opens the census in a workbench,
assesses the risk on five keys, and times the live preview as the budget changes: the whole preview (the
design, which reads the file, and the expected figures) and the expected figures alone
(:func:`pramkit.risk.expected.expected_release` on the problem set read once), for a design per variable,
a joint one and one within strata.  The floor, measured in the same run, is one pass of ``numpy.bincount``
over the records' flat key cells: counting the key table once, which a preview must not do again.

``python benchmarks/bench_workbench.py export [ROWS] [--copy]`` (default 1 000 000) opens the census in a
workbench, assesses the risk on five keys, designs sex and age at epsilon 2, applies, and times the export
into a folder on the work folder's file system: its time, what it added to the process's peak memory (the
allocators' slack given back and the peak reset first, ``/proc/self/clear_refs``) and the bytes it wrote
(``wchar`` of ``/proc/self/io``: every ``write`` and ``sendfile``), beside the released file's size.
``--copy`` exports as the code before did, every file copied (:func:`pramkit.workbench.export.place`
replaced by a streamed copy): the before of the same run's machine.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow.csv as pacsv
from timing import best_of

from pramkit.datasets import census
from pramkit.io import write_table
from pramkit.workbench.source import describe_file


def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "census.csv"
        write_table(census(rows), path)
        floor = best_of(lambda: pacsv.read_csv(path), 3)
        opened = best_of(lambda: describe_file(path), 3)
        source = describe_file(path)
        size = path.stat().st_size / 2**20
    print(f"file: {rows:,} rows x {len(source.variables)} columns, {size:.0f} MiB of CSV")
    print(f"floor, pyarrow.csv.read_csv of the whole file: {floor:.2f} s")
    print(f"describe_file (streamed, distinct and missing values, a preview): {opened:.2f} s "
          f"= {opened / floor:.2f}x the floor ({rows / opened / 1e6:.2f} M rows/s)")


def live(rows: int) -> None:
    import numpy as np

    from pramkit.release.choices import DesignChoices
    from pramkit.risk.expected import expected_release
    from pramkit.workbench import Workbench
    from pramkit.workbench.preview import problem_of

    keys = ["age", "sex", "marital_status", "race", "education"]
    with tempfile.TemporaryDirectory() as d:
        wb = Workbench(d)
        wb.open_census(rows=rows)
        wb.risk(keys, sampling_fraction=0.05)
        problem = problem_of(wb)
        assert problem is not None
        cells = np.ravel_multi_index(problem.table.codes.T, problem.table.shape)
        floor = best_of(lambda: np.bincount(cells, minlength=problem.table.cells), 5)
        print(f"census: {rows:,} rows, keys {', '.join(keys)} ({problem.table.cells:,} cells)")
        print(f"floor, one numpy.bincount over the records' key cells: {floor * 1000:.1f} ms")
        for label, variables, make in (
                ("per variable", ["age", "marital_status"], lambda e: DesignChoices(epsilon=e)),
                ("joint", ["age", "marital_status"], lambda e: DesignChoices(epsilon=e, split="joint")),
                ("within strata (race)", ["marital_status"], lambda e: DesignChoices(epsilon=e, strata="race"))):
            wb.preview(variables, make(0.5))  # the first of a kind counts its table and fits the model once
            view = wb.preview(variables, make(1.0))
            whole = best_of(lambda v=variables, m=make: wb.preview(v, m(2.0)), 3)
            figures = best_of(lambda m=view.manifest: expected_release(problem, m), 5)
            e = view.expected
            print(f"{label}: preview {whole:.2f} s, of which the expected figures {figures * 1000:.1f} ms "
                  f"= {figures / floor:.2f}x the floor; tau2 {e.tau2_before:.3g} -> {e.tau2:.3g}")


def export(rows: int, copy: bool) -> None:
    import ctypes
    import gc
    import shutil
    import time

    import pyarrow as pa

    import pramkit.workbench.export as export_module
    from pramkit.release.choices import DesignChoices
    from pramkit.workbench import Workbench

    def status(field: str) -> float:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith(field + ":")) / 1024

    def written() -> int:
        with open("/proc/self/io") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("wchar:"))

    if copy:
        export_module.place = lambda src, dst: shutil.copyfile(src, dst) and "copied"  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as d:
        wb = Workbench(Path(d) / "work")
        wb.open_census(rows=rows)
        wb.risk(["age", "sex", "marital_status", "race", "education"], sampling_fraction=0.05)
        wb.design(["sex", "age"], DesignChoices(epsilon=2.0))
        wb.apply()
        released = (Path(d) / "work" / "release" / "released.csv").stat().st_size / 2**20
        gc.collect()
        pa.default_memory_pool().release_unused()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        before, wrote, t0 = status("VmRSS"), written(), time.perf_counter()
        wb.export(Path(d) / "out", confirmed=True)
        seconds, wrote, added = time.perf_counter() - t0, (written() - wrote) / 2**20, status("VmHWM") - before
    how = "every file copied (the code before)" if copy else "the released file and the census linked"
    print(f"export of {rows:,} persons, {how}: {seconds:.2f} s, {added:.0f} MiB added to the peak, "
          f"{wrote:.0f} MiB written (the released file: {released:.0f} MiB)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "export":
        numbers = [a for a in sys.argv[2:] if not a.startswith("--")]
        export(int(numbers[0]) if numbers else 1_000_000, "--copy" in sys.argv)
    elif len(sys.argv) > 1 and sys.argv[1] == "live":
        live(int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
