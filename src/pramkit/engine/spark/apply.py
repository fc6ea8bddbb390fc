""":func:`pramkit.apply_file` as a Spark job: the same release, written as a folder of part files."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from pramkit.atomic import atomic_path, check_writable
from pramkit.engine.perturb import ApplyResult, release_key
from pramkit.engine.spark.files import _check_format, _dialected, _save, read, spark_charset
from pramkit.engine.spark.perturb import _numbered, _perturbed
from pramkit.engine.spark.session import _one_line_errors, session
from pramkit.engine.spark.shuffle import _in_key_order, smallest_group
from pramkit.io import CSV_ENCODING, CSV_SEP, NA_VALUES, csv_dialect, csv_missing_codes
from pramkit.kernel.rng import SecretKey, resolve_key
from pramkit.manifest import Manifest
from pramkit.privacy.amplification import DEFAULT_DELTA


@_one_line_errors
def apply_file_spark(
    data: str | Path,
    manifest: Manifest | str | Path,
    out: str | Path,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    force: bool = False,
    master: str = "local[2]",
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    receipt: bool = True,
    shuffle: bool = False,
    public_columns: Sequence[str] = (),
    delta: float = DEFAULT_DELTA,
    release: str = "",
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> ApplyResult:
    """:func:`pramkit.apply_file` as a Spark job: same release, written as a folder of part files.

    Row numbers follow the file order (one input file, no shuffle).  Changed
    values are not counted (that would need a second pass over the data).
    ``na_values`` and the release receipt are as in :func:`pramkit.apply_file`
    (the receipt of a folder records no digest of its content); the receipt
    is renamed into place right after the folder, never before.  A failure
    of Spark is one :class:`SparkEngineError` line; a value a worker refuses
    (an unknown category) the :class:`~pramkit.errors.DataError` of the local
    engine.  ``quiet`` is accepted for the local engine's signature: Spark's
    console output always goes to :func:`jvm_log`.

    Parameters
    ----------
    data : str or Path
        The original file (CSV or Parquet).
    manifest : Manifest or path
        The release's manifest.
    out : str or Path
        The folder to write.
    key, force, master, quiet, na_values, receipt, shuffle, public_columns, delta, release, sep, encoding
        As :func:`pramkit.apply_file`; ``master`` is Spark's.  A CSV release of a CSV file is written with
        its separator and encoding.  With ``shuffle`` the part
        files, read in order, hold the local engine's shuffled release row for row
        (:func:`~pramkit.engine.spark.shuffle.shuffle_rows`).

    Returns
    -------
    ApplyResult

    Examples
    --------
    >>> import pytest, tempfile, os
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit import Manifest, PramMatrix
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.6, 0.6], ["f", "m"])})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     data = os.path.join(d, "in.csv")
    ...     _ = open(data, "w").write("sex,age\\n" + "m,31\\nf,40\\n" * 50)
    ...     result = apply_file_spark(data, manifest, os.path.join(d, "out.csv"), key=bytes(32), master="local[1]")
    ...     result.rows, sorted(os.listdir(d))
    (100, ['in.csv', 'out.csv', 'out.csv.receipt.json'])
    """
    from pramkit.engine.receipt import check_derived_input, receipt_after, receipt_path
    from pramkit.privacy.amplification import check_shuffle, release_guarantees, stated_sampling

    t0 = time.perf_counter()
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    secret = resolve_key(key)
    stream = release_key(secret, man, release)  # every draw of the release, its order included
    label = stream.release[1] if stream.release else ""
    dst = Path(out)
    inputs = [data, None if isinstance(manifest, Manifest) else manifest, secret.path]
    named = "the manifest" if isinstance(manifest, Manifest) else f"manifest {str(manifest)!r}"
    check_derived_input(man, Path(data), named)  # before Spark starts
    source = _check_format(data, "reads")
    fmt = _check_format(dst, "writes")
    dialect = csv_dialect(sep, encoding)
    if _dialected(source):
        spark_charset(dialect.encoding)  # before Spark starts
    check_writable(dst, force=force, inputs=inputs, folder=True)
    codes = csv_missing_codes(na_values) if _dialected(source) else None
    # exits in reverse order: the folder is renamed into place first, then its receipt
    with receipt_after(dst, manifest, inputs=inputs, enabled=receipt, release=label) as pending, \
            atomic_path(dst, force=force, inputs=inputs, folder=True) as tmp:
        spark = session(master)
        df = read(spark, data, sep=sep, encoding=encoding)
        check_shuffle(man, df.columns, public_columns, shuffle=shuffle)
        released, offsets, rows = _perturbed(df, man, key=stream, missing_codes=codes, release=label)
        assert rows is not None  # numbered in file order: the job numbering the rows counted them
        stated_sampling(man, rows, repr(str(data)), named)  # before the release is written
        written = released
        if shuffle:  # the released rows keep their partitions: numbered again from the offsets found already
            numbered, numbers = _numbered(released)
            written = _in_key_order(numbered, df.columns, numbers, offsets, stream)
        _save(written, tmp, fmt, dialect if _dialected(source) else None)
        guarantees = release_guarantees(
            man, columns=df.columns, public_columns=public_columns, shuffled=True, delta=delta,
            clones=smallest_group(released, public_columns, man.columns, codes)) if shuffle else None
        if pending is not None:
            pending.fill(rows=rows, folder=True, guarantees=None if guarantees is None else guarantees.to_dict())
    return ApplyResult(
        rows=rows, variables=(), key_source=secret.source, record_epsilon=man.record_epsilon,
        output=str(dst), seconds=time.perf_counter() - t0, perturbed=tuple(man.names),
        key_fingerprint=secret.fingerprint, receipt=str(receipt_path(dst)) if receipt else None,
        guarantees=guarantees, release=label,
    )
