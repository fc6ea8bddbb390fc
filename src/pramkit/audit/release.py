"""The release audit: the original file, the released file and the manifest, read together.

Private: it reads the original.  For each perturbed variable it builds the transition table
original -> released and checks it against the matrix:

* a move into a zero cell of M is impossible; each is reported with its rows and named by what it
  breaks (a kept code entered or left, another impossible transition); a released combination
  that is no cell of the matrix (outside its stratum, or forbidden by an edit rule) likewise;
* each row k of the table is tested against ``n_k M[k, .]`` (each cell by the exact binomial test,
  :func:`pramkit.audit.stats.row_pvalue`); the tests of every row of every variable are one
  family, controlled by Holm's step-down procedure at family-wise level ``alpha``, 1e-6 by default
  (:func:`pramkit.audit.stats.holm`): when the engine realises M, the chance that any row is
  flagged is at most ``alpha``, exactly (no approximation, however few the records);
* missing values stay missing; records that break an edit rule are released as they are;
  household members (``unit``) share their released values, and a household is one draw (the
  test counts households, not members);

and that the columns no variable perturbs are identical, value for value, row for row (which also
proves the row order), with the same row count.  With the key, the release is derived again
(:func:`pramkit.engine.perturb.apply_file`, into a temporary folder) and compared byte for byte.

The checks of paired records are :mod:`pramkit.audit.records` (importable from here too); with
``backend="spark"`` Spark reads the records and :mod:`pramkit.audit.spark` hands what it aggregates
to the same checks.
"""

from __future__ import annotations

import filecmp
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from pramkit.audit.records import (  # noqa: F401  (the checks of paired records, importable from here too)
    ALPHA,
    SHOWN,
    TABLE_CATEGORIES,
    _columns_check,
    _FileChecks,
    _holm_family,
    _Variable,
    differing,
    encoded,
    file_checks,
    variable_checks,
)
from pramkit.audit.result import Check
from pramkit.defaults import CHUNK_ROWS
from pramkit.errors import DataError, ParameterError
from pramkit.io import NA_VALUES, csv_missing_codes, iter_batches, paired_chunks
from pramkit.io_formats import file_format, names_where
from pramkit.manifest import Manifest
from pramkit.validate import SPARK_MASTER, engine_name


def read_whole(path: str | Path, *, sep: str = ",", encoding: str = "utf-8") -> pa.Table:
    """A file (or folder of part files) as one Arrow table, its text as written (no marker read as missing);
    ``sep`` and ``encoding``: how a CSV file is written (:func:`pramkit.io.csv_dialect`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.csv"
    ...     _ = f.write_text("sex\\nNA\\nm\\n")
    ...     read_whole(f).column("sex").to_pylist()
    ['NA', 'm']
    """
    _, batches = read_chunks(path, sep=sep, encoding=encoding, chunk_rows=CHUNK_ROWS)
    tables = list(batches)
    if not tables:
        raise DataError(f"file {str(path)!r} has no data rows")
    return pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0].combine_chunks()


#: Rows of each file read at a time by the release audit (a chunk of each file in memory: on the census
#: benchmark's 15 columns the audit's peak was 0.65 GiB with 2^18 rows, 1.3 GiB with 2^20, whatever the rows).
AUDIT_CHUNK_ROWS = 1 << 18


def _audit_files(manifest: Manifest, original: str | Path, released: str | Path, *, alpha: float, sep: str,
                 encoding: str, shuffled: bool, na: Any) -> list[Check]:
    """The file and variable checks, both files read in chunks side by side (memory: a chunk of each)."""
    meta_o, orig = read_chunks(original, sep=sep, encoding=encoding)
    meta_r, rel = read_chunks(released, sep=sep, encoding=encoding)
    differ = _columns_check(meta_o.columns, meta_r.columns)
    if differ is not None:
        return [differ]
    codes = csv_missing_codes(na)
    state = _FileChecks(manifest, meta_o.columns, shuffled=shuffled, codes=codes)
    found = [_Variable(v, meta_o.columns, codes, shuffled) for v in manifest.variables]
    start = 0
    for a, b in paired_chunks(orig, rel, state.rows):
        state.add(a, b, start)
        for f in found:
            f.add(a, b, start)
        start += a.num_rows
    if state.rows[0] == 0:
        raise DataError(f"file {str(original)!r} has no data rows")
    if state.rows[1] == 0:
        raise DataError(f"file {str(released)!r} has no data rows")
    checks = state.checks(meta_o.columns)
    if all(c.passed for c in checks if c.field in ("columns", "row count")):
        checks += _holm_family(found, alpha)
    return checks


def read_chunks(path: str | Path, *, sep: str = ",", encoding: str = "utf-8",
                chunk_rows: int | None = None) -> tuple[Any, Iterator[pa.Table]]:
    """A file (or folder of part files) as Arrow tables of about ``chunk_rows`` rows (default
    :data:`AUDIT_CHUNK_ROWS`), its text as written (no marker read as missing), and its metadata;
    ``sep`` and ``encoding``: how a CSV file is written (:func:`pramkit.io.csv_dialect`).  What
    :func:`read_whole` reads at once.

    Examples
    --------
    >>> meta, chunks = read_chunks(pa.table({"sex": ["NA", "m", "f"]}), chunk_rows=2)
    >>> meta.columns, [t.column("sex").to_pylist() for t in chunks]
    (['sex'], [['NA', 'm'], ['f']])
    """
    return iter_batches(path, na_values=(), sep=sep, encoding=encoding,
                        chunk_rows=AUDIT_CHUNK_ROWS if chunk_rows is None else chunk_rows)


#: Formats whose files record when they were written: a release derived again is compared by content.  Derived
#: from the table of formats (:attr:`pramkit.io_formats.FileFormat.stamped`), which the check asks.
STAMPED = names_where("stamped")


def same_content(a: Path, b: Path, *, sep: str = ",", encoding: str = "utf-8") -> bool:
    """Whether two files hold the same columns, values, missing codes, labels and formats, as pramkit
    reads them (Stata, SPSS and SAS files record when they were written, so their bytes differ; a folder
    of part files is read as one table).  ``sep`` and ``encoding``: how a CSV file is written.

    Examples
    --------
    >>> import pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     _ = (d / "a.csv").write_text("x\\n1\\n"); _ = (d / "b.csv").write_text("x\\n1\\n")
    ...     _ = (d / "c.csv").write_text("x\\n2\\n")
    ...     same_content(d / "a.csv", d / "b.csv"), same_content(d / "a.csv", d / "c.csv")
    (True, False)
    """
    (meta_a, tables_a), (meta_b, tables_b) = (iter_batches(f, na_values=(), keep_missing_codes=True, sep=sep,
                                                           encoding=encoding) for f in (a, b))
    if (meta_a.format, meta_a.columns, meta_a.labels, meta_a.missing) != \
            (meta_b.format, meta_b.columns, meta_b.labels, meta_b.missing):
        return False
    first, second = pa.concat_tables(list(tables_a)), pa.concat_tables(list(tables_b))
    return first.num_rows == second.num_rows and all(
        first.column(c).combine_chunks().equals(second.column(c).combine_chunks()) for c in first.column_names)


def swap_plan_of(section: Any) -> Any:
    """The plan of a swap from its public description (the manifest's or the receipt's ``swapping``).

    Examples
    --------
    >>> from pramkit.swap.run import plan_swap
    >>> plan = plan_swap("hid", ["region", "area"], similar=[["hsize"]], rate=0.1)
    >>> swap_plan_of(plan.section(["a", "b"], ["r", "r"])) == plan
    True
    >>> wide = plan_swap("hid", ["region", "area"], rate=0.1, donors="any-area")
    >>> swap_plan_of(wide.section(["a", "b"], ["r", "s"])) == wide
    True
    """
    from pramkit.swap.run import plan_swap

    if not isinstance(section, dict):
        raise DataError("the manifest's swapping section is not an object: the swap cannot be derived again")
    try:
        return plan_swap(section["household_id"], section["levels"], risk_vars=section.get("risk_variables") or (),
                         similar=section.get("similar") or (), rate=section["rate"],
                         k=section.get("k_anonymity") or 3, donors=section.get("donors") or "same-parent")
    except (KeyError, TypeError) as exc:
        raise DataError(f"the manifest's swapping section lacks {exc}: the swap cannot be derived again") from None
    except ParameterError as exc:  # a setting no swap takes (a forged donor rule, a rate above one)
        raise DataError(f"the manifest's swapping section is not a swap's: {exc}") from None


def key_check(manifest: Path, original: Path, released: Path, key: Any,
              na_values: Sequence[str] = NA_VALUES, *, shuffled: bool = False, sep: str = ",",
              encoding: str = "utf-8", spark_master: str | None = None) -> Check:
    """Derive the release again with the key (into a temporary folder, reading ``na_values`` as missing,
    as the design did, under the release label its receipt records; shuffled when the release was, by the
    swap when the manifest describes one) and compare it byte for byte, or value for value for a format
    that records when it was written, or a folder of part files (:func:`same_content`).  ``sep`` and
    ``encoding``: how the CSV files are written; the release derived again is written as the original is.
    With ``spark_master`` the release is derived again by Spark (:func:`pramkit.engine.spark.apply_file_spark`,
    or the Spark swap) as a folder of part files, whose records are compared byte for byte with the released
    file's (:func:`same_records`; of Parquet files, value for value).

    Examples
    --------
    >>> import pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.engine.perturb import apply_file
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     _ = (d / "o.csv").write_text("sex\\n" + "f\\nm\\n" * 40)
    ...     _ = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(d / "m.json")
    ...     _ = apply_file(d / "o.csv", d / "m.json", d / "r.csv", key=bytes(32))
    ...     print(key_check(d / "m.json", d / "o.csv", d / "r.csv", bytes(32)).passed,
    ...           key_check(d / "m.json", d / "o.csv", d / "r.csv", bytes(range(32))).passed)
    True False
    """
    from pramkit.audit.manifest import read_manifest
    from pramkit.engine.receipt import read_receipt
    from pramkit.errors import ManifestError, PramkitError
    from pramkit.io import dataset_parts, table_format
    from pramkit.validate import release_label

    try:  # the release key is derived with the label the receipt records
        label = release_label((read_receipt(released) or {}).get("release", ""), "the receipt's release label")
    except PramkitError as exc:
        return Check("release", "file", "derived again with the key", False, str(exc))
    swapping = read_manifest(manifest)[0].swapping
    how = "the swap" if swapping is not None else "the shuffled release" if shuffled else "the release"
    with tempfile.TemporaryDirectory(prefix="pramkit-audit-") as tmp:
        folder = released.is_dir()
        fmt = (dataset_parts(released)[0] if folder else table_format(released)) if released.exists() else None
        again = Path(tmp) / (f"again.{fmt}" if folder or spark_master is not None else released.name)
        if spark_master is not None:
            exact, same = _spark_key_check(manifest, original, released, again, key, swapping, na_values=na_values,
                                           label=label, sep=sep, encoding=encoding, master=spark_master)
        else:
            try:
                _derive(manifest, original, again, key, swapping, na_values=na_values, shuffled=shuffled,
                        label=label, sep=sep, encoding=encoding)
            except (ManifestError, DataError) as exc:  # a manifest every command refuses (a forged figure), a plan
                return Check("release", "file", "derived again with the key", False,
                             f"{how} cannot be derived again with this manifest: {exc}")
        if spark_master is None:
            exact = again.is_file() and released.is_file() and filecmp.cmp(again, released, shallow=False)
            stamped = fmt is not None and (entry := file_format(fmt)) is not None and entry.stamped
            same = exact or ((stamped or folder) and again.is_file() and
                             same_content(again, released, sep=sep, encoding=encoding))
    words = ("byte for byte" if exact else
             "value for value (derived again by Spark as part files)" if spark_master is not None else
             "value for value (a folder of part files, written by another engine)" if folder else
             f"value for value, with its missing codes, labels and formats (a {fmt} file records when it was "
             "written, so its bytes differ)")
    return Check("release", "file", "derived again with the key", same,
                 f"the key reproduces {how} {words}" if same else
                 f"the key does not reproduce {how} (another key, manifest or original)")


def _derive(manifest: Path, original: Path, again: Path, key: Any, swapping: Any, *, na_values: Sequence[str],
            shuffled: bool, label: str, sep: str, encoding: str) -> None:
    """The release made again into ``again``: the swap the manifest describes, or PRAM (shuffled or not)."""
    from pramkit.engine.perturb import apply_file
    from pramkit.swap.run import swap_file

    if swapping is not None:
        swap_file(original, swap_plan_of(swapping), again, key=key, na_values=na_values, sep=sep, encoding=encoding)
    else:
        apply_file(original, manifest, again, key=key, na_values=na_values, shuffle=shuffled, release=label,
                   sep=sep, encoding=encoding, quiet=True)


def design_na_values(manifest: Path, parsed: Manifest) -> list[str]:
    """The texts the design read as missing: the manifest's ``input.na_values``; for a derived manifest, which
    records none, its parent's (the manifest beside it that ``input.derived_from`` names); else the default.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> design_na_values(Path("m.json"), Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}))
    ['NA']
    """
    from pramkit.errors import PramkitError

    if "na_values" in parsed.input:
        return list(parsed.input["na_values"])
    parent = parsed.input.get("derived_from")
    if isinstance(parent, str) and (manifest.parent / Path(parent).name).is_file():
        try:
            return list(Manifest.read(manifest.parent / Path(parent).name).input.get("na_values", NA_VALUES))
        except PramkitError:
            pass
    return list(NA_VALUES)


def _spark_key_check(manifest: Path, original: Path, released: Path, again: Path, key: Any, swapping: Any, *,
                     na_values: Sequence[str], label: str, sep: str, encoding: str, master: str) -> tuple[bool, bool]:
    """The release derived again by Spark into the folder ``again``: whether its records are the released
    file's byte for byte (CSV), and whether they are value for value."""
    from pramkit.engine.spark.apply import apply_file_spark
    from pramkit.swap.spark import swap_file_spark

    if swapping is not None:
        swap_file_spark(original, swap_plan_of(swapping), again, key=key, na_values=na_values, sep=sep,
                        encoding=encoding, master=master)
    else:
        apply_file_spark(original, manifest, again, key=key, na_values=na_values, release=label, sep=sep,
                         encoding=encoding, master=master, receipt=False)
    if again.suffix == ".csv":
        exact = same_records(again, released)
        return exact, exact
    return False, released.exists() and same_content(again, released, sep=sep, encoding=encoding)


def _csv_records(path: Path) -> Iterator[bytes]:
    """A CSV file's bytes, or a folder of CSV part files' (its first part's header, then every part's records)."""
    from pramkit.io import dataset_parts

    parts = dataset_parts(path)[1] if path.is_dir() else [path]
    header = None
    for part in parts:
        with open(part, "rb") as f:
            first = f.readline()
            if header is None:
                header = first
                yield first
            elif first != header:
                yield b"\0another header\0"  # never in a CSV file's records
            while block := f.read(1 << 20):
                yield block


def same_records(a: Path, b: Path) -> bool:
    """Whether two CSV files (or folders of part files, read in order) hold the same header and records, byte
    for byte (each part file begins with the header).

    Examples
    --------
    >>> import pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     d = pathlib.Path(d)
    ...     (d / "p.csv").mkdir()
    ...     for name, text in (("a.csv", "x\\n1\\n2\\n"), ("p.csv/part-0.csv", "x\\n1\\n"), ("p.csv/part-1.csv", "x\\n2\\n")):
    ...         _ = (d / name).write_text(text)
    ...     same_records(d / "a.csv", d / "p.csv"), same_records(d / "a.csv", d / "p.csv/part-1.csv")
    (True, False)
    """
    import hashlib

    if not (a.exists() and b.exists()):
        return False
    digests = []
    for path in (a, b):
        h = hashlib.sha256()
        for block in _csv_records(path):
            h.update(block)
        digests.append(h.digest())
    return digests[0] == digests[1]


def release_audit(manifest: str | Path, original: str | Path, released: str | Path, *, key: Any = None,
                  alpha: float = ALPHA, sep: str = ",", encoding: str = "utf-8", backend: str = "local",
                  spark_master: str = SPARK_MASTER, na_values: Sequence[str] | None = None) -> list[Check]:
    """The release audit (private: it reads the original).

    Parameters
    ----------
    manifest, original, released : str or pathlib.Path
        The manifest, the original file and the released file.
    key : SecretKey, bytes, str or path, optional
        The secret key: the release is derived again and compared byte for byte.
    alpha : float
        Family-wise error rate of the goodness-of-fit tests (Holm).
    sep, encoding : str
        The field separator and character encoding of the CSV files (:func:`pramkit.io.csv_dialect`).
    backend : str
        Where the passes over records run: ``"local"`` (default), or ``"spark"``: Spark aggregates the records
        into small tables the local code decides on (:func:`pramkit.audit.spark.audit_files_spark`), and
        derives the release again with the key (CSV or Parquet files; not a shuffled release); the same
        checks, figures and messages.
    spark_master : str
        Spark's master URL, for ``backend="spark"``.
    na_values : sequence of str, optional
        The texts the design read as missing (default: the manifest's ``input.na_values``).

    Returns
    -------
    list of Check
    """
    from pramkit.audit.manifest import read_manifest
    from pramkit.engine.receipt import read_receipt

    parsed, _ = read_manifest(manifest)
    na = design_na_values(Path(manifest), parsed) if na_values is None else list(na_values)  # read as missing
    receipt = read_receipt(released) if Path(released).exists() else None
    shuffled = bool((receipt or {}).get("guarantees"))  # apply --shuffle states the shuffled guarantee there
    on_spark = engine_name(backend, "backend") == "spark"
    if on_spark:
        from pramkit.audit.spark import audit_files_spark

        checks = audit_files_spark(parsed, original, released, alpha=alpha, na=na, chunk_rows=AUDIT_CHUNK_ROWS,
                                   shuffled=shuffled, master=spark_master, sep=sep, encoding=encoding)
    else:
        checks = _audit_files(parsed, original, released, alpha=alpha, sep=sep, encoding=encoding,
                              shuffled=shuffled, na=na)
    if key is not None:
        checks.append(key_check(Path(manifest), Path(original), Path(released), key, na_values=na,
                                shuffled=shuffled, sep=sep, encoding=encoding,
                                spark_master=spark_master if on_spark else None))
    return checks
