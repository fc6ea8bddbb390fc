"""Spark in local mode against the local engine, on census-like rows generated inside each engine.

Row ``i`` (0-based) has the ten variables of the built-in census data, each a function of
``i`` only: the value at position ``(i * A >> 16) mod 1024`` of a 1024-entry table holding
the variable's categories in proportion to their frequencies in ``census()`` (one odd
multiplier ``A`` per variable).  Spark computes the rows from ``spark.range``, the local
engine with NumPy and pyarrow chunk by chunk (2^20 rows): nothing is read from or written to
disk.  Both perturb age, sex and marital status with the same manifest and key; the other
seven columns are released as they are.

Timed, in one run:

* the local engine (:class:`pramkit.engine.perturb.TablePerturber`, the per-chunk step of
  :func:`pramkit.apply_file`): the generation alone, then generation and perturbation with
  every core and with one thread;
* Spark: the start of the session (Java process, SparkContext), a first small job (the
  Python workers start and import pramkit), then jobs that add one step at a time, each
  ending in Spark's no-op sink (every row is computed, nothing is written):

  1. the rows generated in the JVM;
  2. plus the round trip to the Python workers and back of what the Spark engine sends
     there (row numbers and the three perturbed columns, in Arrow batches), unchanged;
  3. plus the perturbation (:func:`pramkit.engines.spark.perturb`, row numbers from ``id``);

  and, for comparison, the round trip of every column (``mapInArrow``), which is what the
  engine sent before it sent only the columns it perturbs.

CPU seconds are read from Linux's ``/proc`` for this process, Spark's Java process and its
Python workers: on a shared machine they vary less than wall-clock seconds, and rows per
CPU-second are the rows per second one busy core gives.  At the end both engines release
the rows of a random sample (Spark perturbs rows generated for the sample only: the draws
depend on the key, the variable and the row number, not on the rows around it), which must
be identical.

Usage: python benchmarks/bench_spark.py [--rows 10000000] [--master local[2]] [--partitions P]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Iterator

import numpy as np
import pyarrow as pa

from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.defaults import CHUNK_ROWS
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import TablePerturber, available_threads
from pramkit.engine.spark.perturb import _through_python
from pramkit.engines import spark as ps
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

PERTURBED = ("age", "sex", "marital_status")
#: One odd multiplier below 2^32 per variable: ``i * A`` fits in 63 bits for every ``i < 2^31``.
MULTIPLIERS = dict(zip(CENSUS_VARIABLES, np.random.default_rng(7).integers(2 ** 30, 2 ** 32, 10) | 1))
#: Entries of each variable's table, and the low bits of ``i * A`` dropped before indexing it.
TABLE, SHIFT = 1024, 16
KEY = SecretKey(b"s" * 32, "benchmark")


def lookup_tables() -> dict[str, list[str]]:
    """Each variable's categories, repeated in proportion to their frequencies in the census data."""
    sample = census(100_000)
    tables = {}
    for name, cats in CENSUS_VARIABLES.items():
        p = sample[name].astype(str).value_counts(normalize=True).reindex(cats, fill_value=0).to_numpy()
        picks = np.minimum(np.searchsorted(np.cumsum(p), (np.arange(TABLE) + 0.5) / TABLE), len(cats) - 1)
        tables[name] = [cats[j] for j in picks]
    return tables


def positions(rows: np.ndarray, name: str) -> np.ndarray:
    """Where the values of rows ``rows`` of variable ``name`` are in its table."""
    return ((rows * int(MULTIPLIERS[name])) >> SHIFT) % TABLE


def local_chunk(start: int, stop: int, tables: dict[str, pa.Array]) -> pa.Table:
    """Rows ``start`` to ``stop - 1`` as an Arrow table of string columns (what Spark hands to Python)."""
    rows = np.arange(start, stop, dtype=np.int64)
    return pa.table({name: table.take(positions(rows, name)) for name, table in tables.items()})


def local_run(n: int, tables: dict[str, pa.Array], manifest: Manifest | None, threads: int | None,
              sample: np.ndarray) -> tuple[float, float, pa.Table | None]:
    """Wall-clock and CPU seconds to generate (and perturb, with a manifest) ``n`` rows; the released ``sample`` rows."""
    perturber = None if manifest is None else TablePerturber(manifest, KEY, threads=threads)
    kept = []
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, n, CHUNK_ROWS):
        table = local_chunk(start, min(n, start + CHUNK_ROWS), tables)
        if perturber is not None:
            table = perturber(table, start)
            inside = sample[(sample >= start) & (sample < start + table.num_rows)]
            kept.append(table.take(pa.array(inside - start)))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return seconds, cpu, pa.concat_tables(kept) if kept else None


def spark_rows(rows: "DataFrame", tables: dict[str, list[str]]) -> "DataFrame":
    """The ten variables of the rows numbered by the column ``id`` of ``rows``, computed in the JVM."""
    from pyspark.sql import functions as F

    def column(name: str) -> "Column":
        at = F.shiftright(F.col("id") * F.lit(int(MULTIPLIERS[name])), SHIFT) % TABLE + 1
        return F.element_at(F.array(*map(F.lit, tables[name])), at.cast("int")).alias(name)

    return rows.select("id", *map(column, tables))


def unchanged(batches: Iterator[tuple[pa.Array, pa.Table]]) -> Iterator[pa.Table]:
    """The tables as they came: the round trip to a Python worker and back, nothing else."""
    for _, table in batches:
        yield table


def identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The record batches as they came (``mapInArrow``): every column's round trip."""
    yield from batches


def processes() -> dict[int, tuple[str, int, int]]:
    """Every process: its name, its parent and the CPU clock ticks (user and system) it has used (Linux ``/proc``)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    name, fields = f.read().split(" (", 1)[1].rsplit(") ", 1)
            except (OSError, ValueError):  # exited meanwhile
                continue
            fields = fields.split()
            found[int(entry)] = (name, int(fields[1]), int(fields[11]) + int(fields[12]))
    return found


def cpu_used(before: dict[int, tuple[str, int, int]], after: dict[int, tuple[str, int, int]]) -> dict[str, float]:
    """CPU seconds this process, Spark's Java process (its child named ``java``) and the Python workers (the
    Java process's descendants) used between two :func:`processes`.  A process that exited in between
    counts for nothing: Spark ends only idle Python workers."""
    def since(pid: int) -> int:
        return after[pid][2] - (before[pid][2] if pid in before and before[pid][0] == after[pid][0] else 0)

    me = os.getpid()
    java = [pid for pid, (name, parent, _) in after.items() if parent == me and name == "java"]
    workers, todo = [], list(java)
    while todo:
        pid = todo.pop()
        children = [child for child, (_, parent, _) in after.items() if parent == pid]
        workers += children
        todo += children
    tick = os.sysconf("SC_CLK_TCK")
    return {"driver": since(me) / tick, "JVM": sum(map(since, java)) / tick,
            "Python workers": sum(map(since, workers)) / tick}


def timed_job(df: "DataFrame") -> tuple[float, dict[str, float]]:
    """Wall-clock seconds of a job computing every row of ``df`` into Spark's no-op sink, and its CPU seconds."""
    t0, before = time.perf_counter(), processes()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0, cpu_used(before, processes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=None, help="partitions of spark.range (default: 4 per core)")
    ap.add_argument("--sample", type=int, default=2000, help="rows compared between the engines")
    args = ap.parse_args()
    n = args.rows
    if not 0 < n <= 2 ** 31:
        ap.error("--rows must be between 1 and 2^31")
    from pyspark.sql import functions as F

    tables = lookup_tables()
    arrow_tables = {name: pa.array(values) for name, values in tables.items()}
    manifest = Manifest.of({name: randomized_response(CENSUS_VARIABLES[name], 1.0) for name in PERTURBED})
    sample = np.unique(np.concatenate([[0, n - 1], np.random.default_rng(0).integers(0, n, args.sample)]))
    cores = available_threads()
    print(f"{n:,} rows of the {len(tables)} census variables; {', '.join(PERTURBED)} perturbed (randomized "
          f"response, epsilon 1 each); {cores} cores, load average {os.getloadavg()[0]:.1f} at the start")

    print(f"local engine (pramkit.engine.perturb.TablePerturber on chunks of {CHUNK_ROWS:,} rows)")
    print(f"  {'':<38} {'seconds':>7} {'CPU s':>6} {'M rows/s':>8} {'CPU ns/row':>10}")
    local_run(min(n, CHUNK_ROWS), arrow_tables, manifest, None, sample)  # warm-up: first allocations, thread pool
    runs = {}
    for label, man, threads in (("generating the rows (NumPy, pyarrow)", None, None),
                                (f"generating and perturbing, {cores} threads", manifest, None),
                                ("generating and perturbing, 1 thread", manifest, 1)):
        runs[label] = secs, cpu, _ = local_run(n, arrow_tables, man, threads, sample)
        print(f"  {label:<38} {secs:7.1f} {cpu:6.1f} {n / secs / 1e6:8.2f} {cpu / n * 1e9:10.0f}")
    (_, gen_cpu, _), (local, _, released), (local1, local_cpu, _) = runs.values()
    print(f"  perturbation alone, one thread: {(local_cpu - gen_cpu) / n * 1e9:.0f} ns of CPU per row")

    t0 = time.perf_counter()
    spark = ps.session(args.master)
    start = time.perf_counter() - t0
    slots = spark.sparkContext.defaultParallelism
    parts = args.partitions or 4 * slots
    first, _ = timed_job(ps.perturb(spark_rows(spark.range(100_000, numPartitions=slots), tables), manifest,
                                    key=KEY, row_number="id"))
    generated = spark_rows(spark.range(n, numPartitions=parts), tables)
    jvm = timed_job(generated)
    trip = timed_job(_through_python(generated, generated.columns, F.col("id"), PERTURBED, PERTURBED, unchanged))
    spark_secs, spark_used = job = timed_job(ps.perturb(generated, manifest, key=KEY, row_number="id"))
    every = timed_job(generated.mapInArrow(identity, generated.schema))
    print(f"Spark {spark.version}, master {args.master} ({slots} cores), spark.range in {parts} partitions")
    print(f"  session start (Java process, SparkContext): {start:.1f} s")
    print(f"  first job, 10^5 rows (the Python workers start): {first:.1f} s")
    print(f"  {'job (no-op sink)':<44} {'seconds':>7} {'CPU s: JVM':>10} {'Python':>6} {'CPU ns/row':>10}")
    for label, (secs, used) in (("rows generated in the JVM", jvm), ("+ id and 3 columns to Python and back", trip),
                                ("+ perturbation (engines.spark.perturb)", job),
                                ("for comparison: + every column instead", every)):
        print(f"  {label:<44} {secs:7.1f} {used['JVM']:10.1f} {used['Python workers']:6.1f} "
              f"{sum(used.values()) / n * 1e9:10.0f}")
    ns = {name: {part: used[part] / n * 1e9 for part in used} for name, (_, used) in
          (("jvm", jvm), ("trip", trip), ("job", job), ("every", every))}
    print(f"  CPU per row: generating the rows and the action {sum(ns['jvm'].values()):.0f} ns; the round trip "
          f"{sum(ns['trip'].values()) - sum(ns['jvm'].values()):.0f} ns (JVM {ns['trip']['JVM'] - ns['jvm']['JVM']:.0f}, "
          f"Python {ns['trip']['Python workers']:.0f}; every column's: "
          f"{sum(ns['every'].values()) - sum(ns['jvm'].values()):.0f} ns); the perturbation in the Python workers "
          f"{ns['job']['Python workers'] - ns['trip']['Python workers']:.0f} ns (the JVM's work is the round trip's)")

    spark_cpu = sum(spark_used.values())
    with_start = start + first + spark_secs
    best = min(local, local1)
    print(f"Spark: {spark_secs:.1f} s = {n / spark_secs / 1e6:.2f} M rows/s, {spark_secs / best:.1f}x the local "
          f"engine's best time ({with_start:.1f} s, {with_start / best:.1f}x, with the start-up); "
          f"{spark_cpu / n * 1e9:.0f} ns of CPU per row = {n / spark_cpu / 1e6:.2f} M rows per CPU-second")
    print(f"local engine, one thread: {local_cpu / n * 1e9:.0f} ns of CPU per row = {n / local_cpu / 1e6:.2f} M rows "
          f"per CPU-second; Spark needs {spark_cpu / local_cpu:.1f}x as much CPU per row, so more than "
          f"{spark_cpu / local_cpu:.1f} busy cores per core the local engine keeps busy ({spark_cpu / best:.1f} to "
          f"match its best rate here, {n / best / 1e6:.2f} M rows/s)")

    check = ps.perturb(spark_rows(spark.createDataFrame([(int(i),) for i in sample], "id long"), tables),
                       manifest, key=KEY, row_number="id").orderBy("id").toArrow()
    same = all(check.column(name).to_pylist() == released.column(name).to_pylist() for name in tables)
    print(f"same released values on {len(sample):,} sampled rows: {same}; "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    if not same:
        raise SystemExit("the engines disagree")


if __name__ == "__main__":
    main()
