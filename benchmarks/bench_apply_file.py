"""``apply_file`` on CSV and Parquet against the I/O floor: pyarrow alone reading and writing the same file.

Generates (once, in ``--dir``) a census-like file of ``--rows`` records (the ten
variables of :func:`pramkit.datasets.census`, in blocks of 10^6 rows) as CSV
and as Parquet, and a manifest perturbing three of them (age, sex,
marital_status: randomized response at epsilon 2 each).  Then, each run in a
fresh process so that its peak resident memory is its own, alternately:

* ``floor``: pyarrow alone streams the file in and out, with the options
  pramkit uses (CSV: every column read as text, in blocks of
  :func:`pramkit.io.csv_block_bytes`, written with ``quoting_style="needed"``;
  Parquet: record batches of ``--chunk-rows`` rows into a ``ParquetWriter``),
  one batch after the other, perturbing nothing;
* ``apply``: :func:`pramkit.engine.perturb.apply_file` (atomic write, row-count
  check, SHA-256 and receipt included).

Prints, per format, the size of the input and of the released file, the best of
``--repeat`` runs of each, the ratio apply / floor, the same ratio of CPU time (user + system, all threads: what the ratio
of wall times becomes when other jobs hold the cores), and the peak RSS of
both (and of a process that only imported pramkit and pyarrow).
``--stat-rows`` rows are also written as Stata and SPSS and released in the
same way; pyreadstat reads and writes them whole, so their
memory grows with the file: the figures give that ceiling per million rows.

Usage: python benchmarks/bench_apply_file.py [--rows 10000000] [--chunk-rows 1048576]
       [--repeat 3] [--dir /tmp/pramkit-apply] [--stat-rows 1000000] [--formats csv,parquet,stata,spss]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

BLOCK = 1_000_000
KEYS = ("age", "sex", "marital_status")
SUFFIX = {"csv": "csv", "parquet": "parquet", "stata": "dta", "spss": "sav"}


def generate(path: Path, rows: int) -> None:
    """Write ``rows`` census-like records to ``path`` (CSV or Parquet), 10^6 rows at a time."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from pramkit.datasets import census

    writer = None
    tmp = path.with_name(path.name + ".part")
    for i, start in enumerate(range(0, rows, BLOCK)):
        table = pa.Table.from_pandas(census(min(BLOCK, rows - start), seed=1000 + i), preserve_index=False)
        if path.suffix == ".csv":
            table = table.cast(pa.schema([(f.name, pa.string()) for f in table.schema]))
            writer = writer or pacsv.CSVWriter(str(tmp), table.schema)
        else:
            writer = writer or pq.ParquetWriter(str(tmp), table.schema)
        writer.write_table(table)
    writer.close()
    tmp.rename(path)


def generate_stat(path: Path, rows: int) -> None:
    """Write ``rows`` census-like records as Stata or SPSS (text columns, as pyreadstat writes categoricals)."""
    import pyreadstat

    from pramkit.datasets import census

    frame = census(rows, seed=1000).astype(str)
    (pyreadstat.write_dta if path.suffix == ".dta" else pyreadstat.write_sav)(frame, str(path))


def floor(src: str, out: str, chunk_rows: int) -> int:
    """Stream ``src`` into ``out`` with pyarrow alone (pyreadstat for Stata and SPSS); the number of rows."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rows = 0
    if src.endswith(".csv"):
        import pyarrow as pa

        from pramkit.io import csv_block_bytes

        with open(src, encoding="utf-8") as fh:
            header = fh.readline().rstrip("\n").split(",")
        convert = pacsv.ConvertOptions(column_types={h.strip('"'): pa.string() for h in header},
                                       null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True)
        read = pacsv.ReadOptions(block_size=csv_block_bytes(chunk_rows), use_threads=True)
        writer = None
        for batch in pacsv.open_csv(src, read_options=read, convert_options=convert):
            writer = writer or pacsv.CSVWriter(out, batch.schema,
                                               write_options=pacsv.WriteOptions(quoting_style="needed"))
            writer.write_batch(batch)
            rows += batch.num_rows
        writer.close()
    elif src.endswith(".parquet"):
        pf = pq.ParquetFile(src, pre_buffer=False)
        with pq.ParquetWriter(out, pf.schema_arrow) as writer:
            for batch in pf.iter_batches(batch_size=chunk_rows):
                writer.write_batch(batch)
                rows += batch.num_rows
    else:
        import pyreadstat

        read, write = ((pyreadstat.read_dta, pyreadstat.write_dta) if src.endswith(".dta")
                       else (pyreadstat.read_sav, pyreadstat.write_sav))
        frame, _ = read(src)
        write(frame, out)
        rows = len(frame)
    return rows


def child(task: str, src: str, manifest: str, out: str, chunk: str) -> None:
    import pyarrow  # noqa: F401  (the import baseline includes the libraries)

    import pramkit.engine.perturb as perturb

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    if task == "apply":
        rows = perturb.apply_file(src, manifest, out, key=b"b" * 32, force=True, chunk_rows=int(chunk)).rows
    elif task == "floor":
        rows = floor(src, out, int(chunk))
    else:  # "import": the footprint of the interpreter and the libraries
        rows = 0
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    print(json.dumps({"rows": rows, "seconds": seconds, "cpu": cpu, "peak_mib": peak_rss_mib()}))


def peak_rss_mib() -> float:
    """Peak resident memory of this process (``VmHWM``: unlike ``ru_maxrss``, it does not inherit the
    high-water mark of the parent that forked it)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(task: str, src: Path, manifest: Path, out: Path, chunk: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", task, str(src), str(manifest), str(out), str(chunk)],
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{task} {src} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:7])
        return
    from pramkit.codebook import categories_of
    from pramkit.datasets import census
    from pramkit.defaults import CHUNK_ROWS
    from pramkit.design.classic import randomized_response
    from pramkit.manifest import Manifest

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--stat-rows", type=int, default=1_000_000)
    ap.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/pramkit-apply"))
    ap.add_argument("--formats", default="csv,parquet,stata,spss")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    sample = census(10_000, seed=1000)
    manifest = args.dir / "manifest.json"
    Manifest.of({k: randomized_response(categories_of(sample[k]), 2.0) for k in KEYS}).write(manifest, force=True)
    base = run("import", manifest, manifest, args.dir / "none", args.chunk_rows)["peak_mib"]
    print(f"rows {args.rows:,} (Stata/SPSS {args.stat_rows:,}), chunk {args.chunk_rows:,} rows, best of "
          f"{args.repeat}; importing pramkit and pyarrow alone: peak RSS {base:,.0f} MiB")
    print(f"{'format':<8} {'rows':>11} {'MiB':>6} {'out MiB':>8} {'floor s':>8} {'apply s':>8} {'x floor':>8} "
          f"{'CPU x floor':>12} {'floor RSS':>10} {'apply RSS':>10}")
    for fmt in args.formats.split(","):
        stat = fmt in ("stata", "spss")
        rows = args.stat_rows if stat else args.rows
        src = args.dir / f"census_{rows}.{SUFFIX[fmt]}"
        if not src.exists():
            t0 = time.perf_counter()
            (generate_stat if stat else generate)(src, rows)
            print(f"  (generated {src} in {time.perf_counter() - t0:.0f} s)")
        out = args.dir / f"released.{SUFFIX[fmt]}"
        runs: dict[str, list[dict]] = {"floor": [], "apply": []}
        for _ in range(args.repeat):  # alternate, so that other load hits both alike (apply's output last)
            for task in runs:
                runs[task].append(run(task, src, manifest, out, args.chunk_rows))
        best = {task: min(r, key=lambda x: x["seconds"]) for task, r in runs.items()}
        peak = {task: max(x["peak_mib"] for x in r) for task, r in runs.items()}
        f, a = best["floor"]["seconds"], best["apply"]["seconds"]
        cpu = {task: min(x["cpu"] for x in r) for task, r in runs.items()}
        print(f"{fmt:<8} {rows:>11,} {src.stat().st_size / 2**20:>6,.0f} {out.stat().st_size / 2**20:>8,.0f} {f:>8.2f} {a:>8.2f} {a / f:>8.2f} "
              f"{cpu['apply'] / cpu['floor']:>12.2f} {peak['floor']:>10,.0f} {peak['apply']:>10,.0f}")


if __name__ == "__main__":
    main()
