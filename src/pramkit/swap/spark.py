""":func:`pramkit.swap.run.swap_file` as Spark jobs: the same swapped records, as a folder of part files.

The swap draws its households in one order over the whole file (:func:`pramkit.swap.core.draw_swaps`),
so the draw cannot be split among partitions.  The first job collects, in file order, the columns the
swap reads (the household id, the geography and the risk variables: what the local engine keeps in
memory too) with each record's ``monotonically_increasing_id``, which numbers the rows as
:func:`pramkit.engine.spark.perturb.perturb` numbers them (file order) without a pass of its own; the
swap is drawn on the driver exactly as the local engine draws it; the second job replaces each
record's geography by its household's released areas in an Arrow UDF, from the record's row number.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pramkit.atomic import atomic_path, check_writable, staged_bytes
from pramkit.engine.spark.counts import _value
from pramkit.engine.spark.files import _check_format, _dialected, _save, read, spark_charset
from pramkit.engine.spark.perturb import _MONO, _numbered, _offsets, _row_numbers_of, _through_python
from pramkit.engine.spark.session import _one_line_errors, session
from pramkit.errors import DataError
from pramkit.io import CSV_ENCODING, CSV_SEP, NA_VALUES, csv_dialect, csv_missing_codes
from pramkit.kernel.rng import SecretKey, resolve_key
from pramkit.validate import SPARK_MASTER


@_one_line_errors
def swap_file_spark(data: str | Path, plan: Any, out: str | Path, *,
                    key: SecretKey | bytes | str | Path | None = None, force: bool = False,
                    master: str = SPARK_MASTER, na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
                    encoding: str = CSV_ENCODING) -> Any:
    """Swap the geography of a CSV or Parquet file's households with Spark: the records of
    :func:`pramkit.swap.run.swap_file`, written as a folder of part files with the swap's receipt
    beside it (renamed into place after the folder; the receipt of a folder records no digest).

    Parameters
    ----------
    data : str or pathlib.Path
        The original file (CSV or Parquet), one file: rows are numbered in file order.
    plan : pramkit.swap.run.SwapPlan
        The swap (:func:`pramkit.swap.run.plan_swap`).
    out : str or pathlib.Path
        The folder to write (``.csv`` or ``.parquet``).
    key, force, na_values, sep, encoding
        As :func:`pramkit.swap.run.swap_file`.
    master : str
        Spark's master URL.

    Returns
    -------
    pramkit.swap.run.SwapResult

    Examples
    --------
    >>> import pytest, pathlib, tempfile
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.swap.run import plan_swap, swap_file
    >>> from pramkit.io import read_table
    >>> rows = "hid,region,size\\n" + "".join(f"{i // 2},{'NS'[i // 2 % 2]},2\\n" for i in range(40))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text(rows)
    ...     plan = plan_swap("hid", ["region"], rate=0.5)
    ...     local = swap_file(d / "data.csv", plan, d / "local.csv", key=bytes(32))
    ...     spark = swap_file_spark(d / "data.csv", plan, d / "spark.csv", key=bytes(32), master="local[1]")
    ...     same = read_table(d / "local.csv").equals(read_table(d / "spark.csv"))
    >>> spark.swapped_households == local.swapped_households, same
    (True, True)
    """
    from pramkit.engine.receipt import receipt_path
    from pramkit.swap.run import _draw, _receipt, _release, _result

    t0 = time.perf_counter()
    secret = resolve_key(key)
    src, dst = Path(data), Path(out)
    inputs = [src, secret.path]
    source, fmt = _check_format(src, "reads"), _check_format(dst, "writes")
    dialect = csv_dialect(sep, encoding)
    if _dialected(source):
        spark_charset(dialect.encoding)  # before Spark starts
    check_writable(dst, force=force, inputs=inputs, folder=True)
    check_writable(receipt_path(dst), force=True, inputs=inputs)
    df = read(session(master), src, sep=sep, encoding=encoding)
    markers = list(csv_missing_codes(na_values).texts) if _dialected(source) else []
    numbered, numbers = _numbered(df)
    # file order; each record's ``monotonically_increasing_id`` too, from which its partition's offset follows
    collected = numbered.select(*(_value(df, c, markers) for c in plan.columns), numbers).toArrow()
    offsets = _offsets(collected.column(_MONO))
    needed = collected.drop_columns([_MONO])
    swapped = _draw([needed], plan, secret, repr(str(src)))
    released = [swapped.released_codes(h) for h in range(len(plan.geo))]
    areas, parents, counts = swapped.areas()

    def swap(batches: Iterator[tuple[pa.Array, pa.Table]]) -> Iterator[pa.Table]:
        for row_numbers, table in batches:
            rows = _row_numbers_of(row_numbers, offsets)
            if rows.size and not np.all(np.diff(rows) == 1):
                raise DataError("the Spark swap numbers rows in file order: read one file without a shuffle")
            yield _release(table, swapped, plan, int(rows[0]) if rows.size else 0, released) if rows.size else table

    geo = list(plan.geo)
    with contextlib.ExitStack() as stack:  # exits in reverse order: the folder first, then its receipt
        receipt_stage = stack.enter_context(staged_bytes(receipt_path(dst), force=True, inputs=inputs))
        tmp = stack.enter_context(atomic_path(dst, force=force, inputs=inputs, folder=True))
        _save(_through_python(numbered, df.columns, numbers, geo, geo, swap), tmp, fmt,
              dialect if _dialected(source) else None)
        rows = int(needed.num_rows)
        receipt_stage.write(_receipt(dst, rows, None, plan.section(areas, parents, counts), None).encode())
    return _result(plan, swapped, secret, t0, output=str(dst), receipt=str(receipt_path(dst)), manifest=None,
                   partners=None)
