"""The passes over records on Spark (local mode) against the local engine, on one Parquet file, in one run.

The file holds census-like persons (:func:`pramkit.datasets.census` with 300 areas, as text), a
household id (three persons a household), and a sampling weight; it is written once, then each
pass runs on it with the local engine and with Spark, in that order, and the results are compared:

* the design's counts (:func:`pramkit.counts.count_groups` against
  :func:`pramkit.engine.spark.counts.count_groups`): each variable's margin within the areas;
* risk (:func:`pramkit.risk.identification_risk` with ``engine="spark"``): tau1, tau2 and the
  per-record risk on four keys, weighted;
* estimate (:func:`pramkit.estimate_table` with ``engine="spark"``): a two-way table with the
  areas as strata and the households as PSUs;
* swap (:func:`pramkit.swap.run.swap_file` against :func:`pramkit.swap.spark.swap_file_spark`):
  5 % of the households swapped between areas, both written as Parquet (a file, a folder);
* the release audit (:func:`pramkit.audit.audit` with ``backend="spark"``, ``pramkit audit --backend spark``):
  a release of sex and marital status (written by the local engine) against the original, with the key
  (the release derived again and compared), every check's verdict and message compared.

Spark's session is started before the passes (its start-up is printed apart): each Spark time
is a pass's jobs and the work on the driver after them.  Times are wall-clock seconds.

Usage: python benchmarks/bench_spark_passes.py [--rows 1000000 5000000] [--master local[2]] [--only audit]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pramkit import counts
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.spark import counts as spark_counts
from pramkit.engine.spark import session
from pramkit.estimate import estimate_table
from pramkit.estimate.survey import SurveyDesign
from pramkit.io import read_table
from pramkit.manifest import Manifest
from pramkit.risk.identification import identification_risk
from pramkit.swap.run import plan_swap, swap_file
from pramkit.swap.spark import swap_file_spark

VARIABLES = ["age", "sex", "marital_status", "race"]


def write_file(rows: int, path: Path) -> None:
    """The persons as text columns (no dictionary: Spark would not keep a dictionary's order), with ids and weights."""
    frame = census(rows, areas=True)
    columns = {c: pa.array(frame[c].astype(str).to_numpy(dtype=object), pa.string()) for c in frame.columns}
    household = np.arange(rows) // 3
    columns["area"] = pa.array(frame["area"].astype(str).to_numpy(dtype=object)[household * 3], pa.string())
    columns["household"] = pa.array(household)  # three persons a household, in the area of its first
    columns["weight"] = pa.array(np.random.default_rng(1).uniform(20.0, 80.0, rows))
    pq.write_table(pa.table(columns), path, row_group_size=1 << 20)


def relative(a: float, b: float) -> float:
    """``|a - b| / |a|``, 0 when both are 0."""
    return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))


def timed(function):
    t0 = time.perf_counter()
    out = function()
    return time.perf_counter() - t0, out


def release_audit(path: Path, manifest: Manifest, master: str) -> tuple[str, float, float, str]:
    """The release audit of a release of ``path``, with the key, by the local engine and by Spark."""
    from pramkit.audit import audit
    from pramkit.engine.perturb import apply_file

    key, released, written = bytes(range(32)), path.with_name("released.parquet"), path.with_name("m.json")
    manifest.write(written)
    apply_file(path, manifest, released, key=key)
    t_local, local = timed(lambda: audit(written, released=released, original=path, key=key))
    t_spark, on_spark = timed(lambda: audit(written, released=released, original=path, key=key, backend="spark",
                                            spark_master=master))
    # the key's check says how it compared: a Parquet file derived again by Spark is compared value for value
    same = [(c.subject, c.field, c.passed) + ((c.detail,) if c.field != "derived again with the key" else ())
            for c in local.checks] == \
        [(c.subject, c.field, c.passed) + ((c.detail,) if c.field != "derived again with the key" else ())
         for c in on_spark.checks]
    return (f"release audit ({len(local.checks)} checks, with the key)", t_local, t_spark,
            ("the same verdicts and messages" if same else "DIFFER") + f" ({local.verdict()})")


def passes(path: Path, master: str, only: str | None = None) -> list[tuple[str, float, float, str]]:
    groups = [["area", v] for v in VARIABLES]
    manifest = Manifest.of({"sex": randomized_response(["female", "male"], 1.0),
                            "marital_status": randomized_response(sorted(set(pq.read_table(path, columns=["marital_status"])
                                                                     .column(0).to_pylist())), 1.0)})
    survey = SurveyDesign("weight", strata="area", psu="household")
    keys = VARIABLES
    if only == "audit":
        return [release_audit(path, manifest, master)]
    out = []

    t_local, local = timed(lambda: counts.count_groups(path, groups))
    t_spark, on_spark = timed(lambda: spark_counts.count_groups(path, groups, master=master))
    same = all((a.counts == b.counts).all() for a, b in zip(local.tables, on_spark.tables))
    out.append(("design counts (4 margins within 300 areas)", t_local, t_spark, "identical" if same else "DIFFER"))

    t_local, local = timed(lambda: identification_risk(path, keys, weights="weight"))
    t_spark, on_spark = timed(lambda: identification_risk(path, keys, weights="weight", engine="spark",
                                                          spark_master=master))
    gap = max(relative(local.tau1, on_spark.tau1), relative(local.tau2, on_spark.tau2),
              relative(local.expected_reidentifications, on_spark.expected_reidentifications))
    out.append(("risk (4 keys, weighted: tau1, tau2)", t_local, t_spark,
                f"max relative gap {gap:.1e} (tau1 {local.tau1:.4g}, tau2 {local.tau2:.4g}, "
                f"expected re-identifications {local.expected_reidentifications:.4g})"))

    t_local, local = timed(lambda: estimate_table(path, manifest, ["marital_status"], by="sex", survey=survey))
    t_spark, on_spark = timed(lambda: estimate_table(path, manifest, ["marital_status"], by="sex", survey=survey,
                                                     engine="spark", spark_master=master))
    gap = float(np.max(np.abs(local.table.counts - on_spark.table.counts) / np.abs(local.table.counts)))
    se = float(np.nanmax(np.abs(local.table.se - on_spark.table.se) / np.abs(local.table.se)))
    out.append(("estimate (strata: areas, PSUs: households)", t_local, t_spark,
                f"max relative gap {gap:.1e} (estimates), {se:.1e} (standard errors)"))

    plan = plan_swap("household", ["area"], rate=0.05)
    t_local, local = timed(lambda: swap_file(path, plan, path.with_name("swapped.parquet"), key=bytes(32)))
    t_spark, on_spark = timed(lambda: swap_file_spark(path, plan, path.with_name("swapped-spark.parquet"),
                                                      key=bytes(32), master=master))
    same = read_table(path.with_name("swapped.parquet")).equals(read_table(path.with_name("swapped-spark.parquet")))
    out.append((f"swap (5 % of {local.households:,} households)", t_local, t_spark,
                "the same records" if same and local.swapped_households == on_spark.swapped_households
                else "DIFFER"))
    out.append(release_audit(path, manifest, master))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--only", choices=["audit"], help="run only this pass")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    warnings.simplefilter("ignore")  # the file has no release receipt; pyspark's notes on pandas
    t_session, spark = timed(lambda: session(args.master))
    t_first, _ = timed(lambda: spark.range(10).toArrow())
    print(f"Spark session ({args.master}): {t_session:.1f} s to start, {t_first:.1f} s for a first job")
    with tempfile.TemporaryDirectory() as d:
        for rows in args.rows:
            path = Path(d) / f"census-{rows}.parquet"
            t_write, _ = timed(lambda: write_file(rows, path))  # noqa: B023 (called at once)
            t_read, _ = timed(lambda: pq.read_table(path))  # noqa: B023
            print(f"\n{rows:,} rows: file written in {t_write:.1f} s ({path.stat().st_size / 1e6:.0f} MB), "
                  f"read once by pyarrow in {t_read:.2f} s")
            spark_counts.count_groups(path, [["sex"]], master=args.master)  # the Python workers start
            print(f"{'pass':48} {'local s':>8} {'Spark s':>8} {'x local':>8}  result")
            for name, t_local, t_spark, result in passes(path, args.master, args.only):
                print(f"{name:48} {t_local:8.2f} {t_spark:8.2f} {t_spark / t_local:8.1f}  {result}", flush=True)
            for made in Path(d).iterdir():
                shutil.rmtree(made) if made.is_dir() else made.unlink()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
