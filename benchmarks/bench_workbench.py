"""Benchmark: the workbench's first step, opening a file (``pramkit.workbench.source.describe_file``).

``python benchmarks/bench_workbench.py [ROWS]`` writes the built-in census of ROWS persons (default
2 000 000) as CSV and opens it as the workbench does: one streamed pass counting each column's
distinct and missing values, keeping a preview of 20 rows.  The floor, measured in the same run, is
pyarrow reading the whole file into memory (``pyarrow.csv.read_csv``), which the workbench must not
do for a file larger than memory; the ratio says what streaming and counting cost on top of parsing.
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
