"""Stata and SAS transport files with extended missing codes: pramkit's reading and writing against pyreadstat's.

Writes a file of ``--rows`` records (a coded status with Stata's ``.a``/``.b`` or SAS's ``.A``/``._``
in about one record of ten, a sex, a weight) and times, best of ``--repeat``:

* ``floor``: pyreadstat alone reading the file (codes kept where it can: ``user_missing`` for Stata;
  a transport file's codes it cannot read) and writing it back (``missing_user_values`` for Stata);
* ``pramkit``: :func:`pramkit.io.iter_batches` with ``keep_missing_codes=True`` and
  :class:`pramkit.io.TableWriter` with the file's metadata: the codes found, turned into text and back,
  written (for ``.xpt``, into the file's bytes), the row count checked.

Prints each time and the ratio pramkit / floor (the cost of keeping the codes and the metadata).

Usage: python benchmarks/bench_stat_files.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best_of


def make(folder: Path, rows: int) -> dict[str, Path]:
    """The Stata and transport files of the benchmark."""
    import pyreadstat

    from pramkit.io_sas import write_special_missing

    rng = np.random.default_rng(1)
    status = rng.integers(1, 8, rows).astype(object)
    coded = rng.random(rows) < 0.1
    letters = np.where(rng.random(rows) < 0.5, "a", "b")
    status[coded] = letters[coded]
    frame = pd.DataFrame({"status": pd.Series([int(v) if not c else v for v, c in zip(status, coded)], dtype=object),
                          "sex": rng.choice(["f", "m"], rows), "weight": rng.uniform(50, 150, rows)})
    dta, xpt = folder / "bench.dta", folder / "bench.xpt"
    pyreadstat.write_dta(frame, str(dta), missing_user_values={"status": ["a", "b"]},
                         variable_value_labels={"status": {i: f"status {i}" for i in range(1, 8)}})
    plain = frame.assign(status=np.where(coded, np.nan, status).astype(float))
    pyreadstat.write_xport(plain, str(xpt))
    write_special_missing(xpt, {"status": np.where(coded, np.where(letters == "a", ".A", "._"), None)}, rows)
    return {"stata": dta, "sas": xpt}


def floor(path: Path, out: Path) -> None:
    import pyreadstat

    if path.suffix == ".dta":
        frame, meta = pyreadstat.read_dta(str(path), user_missing=True)
        pyreadstat.write_dta(frame, str(out), missing_user_values=meta.missing_user_values,
                             variable_value_labels=meta.variable_value_labels)
    else:
        frame, _ = pyreadstat.read_xport(str(path))
        pyreadstat.write_xport(frame, str(out))


def through_pramkit(path: Path, out: Path) -> None:
    from pramkit.io import TableWriter, iter_batches

    meta, tables = iter_batches(path, keep_missing_codes=True)
    with TableWriter(out, meta=meta, force=True) as writer:
        for table in tables:
            writer.write(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = make(folder, args.rows)
        for fmt, path in files.items():
            out = folder / f"out{path.suffix}"
            base = best_of(lambda path=path, out=out: floor(path, out), args.repeat)
            ours = best_of(lambda path=path, out=out: through_pramkit(path, out), args.repeat)
            print(f"{fmt:6s} {args.rows:>10,} rows  floor (pyreadstat) {base:7.3f} s  pramkit {ours:7.3f} s  "
                  f"ratio {ours / base:5.2f}")


if __name__ == "__main__":
    main()
