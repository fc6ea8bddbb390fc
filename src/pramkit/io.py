"""Reading and writing tables: CSV, Parquet, Stata and SPSS.

* CSV is read with every column as text, so that columns pramkit does not
  perturb are written back exactly as they were read; an empty field is
  missing.  Rows stream in blocks (memory O(block)); a ragged row is an
  error naming its line.
* Parquet streams by record batches and keeps every column's type.
* Stata (``.dta``) and SPSS (``.sav``, ``.zsav``) go through pyreadstat,
  keeping variable and value labels; these formats are read whole.

Writers are atomic (a temporary file beside the target, renamed at the end)
and never replace an existing file unless asked to.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pramkit.atomic import atomic_path, check_writable
from pramkit.errors import DataError, PramkitError

#: File suffix -> format.
FORMATS = {
    ".csv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
    ".dta": "stata", ".sav": "spss", ".zsav": "spss",
}
#: Default rows per chunk when streaming.
CHUNK_ROWS = 1 << 20


def table_format(path: str | Path) -> str:
    """The format of a file, from its suffix."""
    suffix = Path(path).suffix.lower()
    try:
        return FORMATS[suffix]
    except KeyError:
        raise PramkitError(
            f"cannot tell the format of {str(path)!r} from its suffix; use one of {sorted(FORMATS)}"
        ) from None


@dataclass
class TableMeta:
    """What a reader learnt about a file that a writer of the same format can keep."""

    format: str
    columns: list[str]
    rows: int | None = None
    labels: dict[str, Any] = field(default_factory=dict)


def _existing(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise DataError(f"file {str(p)!r} does not exist")
    if p.is_dir():
        raise DataError(f"{str(p)!r} is a folder, not a data file")
    if p.stat().st_size == 0:
        raise DataError(f"file {str(p)!r} is empty")
    return p


def require_columns(wanted: Sequence[str] | None, present: Sequence[str], where: str) -> None:
    """:class:`DataError` naming the columns of ``wanted`` that ``where`` does not have."""
    if wanted is None:
        return
    unknown = [c for c in wanted if c not in present]
    if unknown:
        raise DataError(f"column(s) {unknown} are not in {where}; its columns are {list(present)}")


def _csv_header(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8-sig") as fh:
        try:
            header = next(csv.reader(fh))
        except StopIteration:
            raise DataError(f"file {str(path)!r} is empty") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read the header of {str(path)!r}: {exc}") from None
    if not header or all(h == "" for h in header):
        raise DataError(f"file {str(path)!r} has no header line")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise DataError(f"file {str(path)!r} has duplicate column names {dup}")
    return header


def _ragged_row_message(path: Path, width: int) -> str | None:
    """Describe the first row whose field count differs from the header's (error path only)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        for row in reader:
            if len(row) != width and row:
                return (
                    f"file {str(path)!r}, line {reader.line_num}: expected {width} fields "
                    f"(as in the header), found {len(row)}"
                )
    return None


def _csv_batches(path: Path, columns: Sequence[str] | None, block_bytes: int) -> Iterator[pa.RecordBatch]:
    header = _csv_header(path)
    require_columns(columns, header, repr(str(path)))
    convert = pacsv.ConvertOptions(
        column_types={h: pa.string() for h in header},
        null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True,
        include_columns=list(columns) if columns is not None else None,
    )
    read = pacsv.ReadOptions(block_size=block_bytes, use_threads=True)
    try:
        reader = pacsv.open_csv(path, read_options=read, convert_options=convert)
        yield from reader
    except (pa.ArrowInvalid, OSError) as exc:
        if "Expected" in str(exc) and (message := _ragged_row_message(path, len(header))):
            raise DataError(message) from None
        raise DataError(f"cannot read CSV file {str(path)!r}: {exc}") from None


def iter_batches(
    path: str | Path,
    *,
    columns: Sequence[str] | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> tuple[TableMeta, Iterator[pa.Table]]:
    """Stream a file as Arrow tables of about ``chunk_rows`` rows.

    Returns the file's metadata and an iterator of tables.  CSV blocks are
    sized in bytes (about 64 bytes per row assumed); Parquet uses record
    batches; Stata and SPSS files come as one table.
    """
    p = _existing(path)
    fmt = table_format(p)
    if fmt == "csv":
        header = _csv_header(p)
        require_columns(columns, header, repr(str(p)))
        meta = TableMeta("csv", list(columns) if columns is not None else header)
        block = max(1 << 16, min(chunk_rows * 64, 1 << 30))
        return meta, (pa.Table.from_batches([b]) for b in _csv_batches(p, columns, block))
    if fmt == "parquet":
        try:
            pf = pq.ParquetFile(p, pre_buffer=False)  # pre-buffering keeps read pages alive: memory grew with the file
        except (pa.ArrowInvalid, OSError) as exc:
            raise DataError(f"cannot read Parquet file {str(p)!r}: {exc}") from None
        names = pf.schema_arrow.names
        require_columns(columns, names, repr(str(p)))
        meta = TableMeta("parquet", list(columns) if columns is not None else names, rows=pf.metadata.num_rows)
        return meta, (pa.Table.from_batches([b]) for b in pf.iter_batches(batch_size=chunk_rows, columns=columns))
    frame, labels = _read_stat(p, fmt, columns)
    meta = TableMeta(fmt, list(frame.columns), rows=len(frame), labels=labels)
    return meta, iter([pa.Table.from_pandas(frame, preserve_index=False)])


def _read_stat(path: Path, fmt: str, columns: Sequence[str] | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    import pyreadstat

    reader = pyreadstat.read_dta if fmt == "stata" else pyreadstat.read_sav
    try:
        _, head = reader(str(path), metadataonly=True)
    except Exception as exc:  # pyreadstat raises its own ReadstatError and others
        raise DataError(f"cannot read {fmt} file {str(path)!r}: {exc}") from None
    require_columns(columns, head.column_names, repr(str(path)))
    frame, meta = reader(str(path), usecols=list(columns) if columns is not None else None)
    labels = {
        "column_labels": dict(zip(meta.column_names, meta.column_labels)),
        "variable_value_labels": meta.variable_value_labels,
    }
    return frame, labels


def read_table(path: str | Path, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a whole file into a pandas DataFrame (CSV columns as text; empty = missing).

    Raises :class:`DataError` for a missing or empty file, a file with no data
    rows, a ragged CSV row or an unknown column.
    """
    _, batches = iter_batches(path, columns=columns)
    tables = list(batches)
    if not tables or sum(t.num_rows for t in tables) == 0:
        raise DataError(f"file {str(path)!r} has no data rows")
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return table.to_pandas()


class TableWriter:
    """Write Arrow tables chunk by chunk to a CSV, Parquet, Stata or SPSS file, atomically.

    Use as a context manager; the target appears only if the block completes.
    """

    def __init__(self, path: str | Path, *, force: bool = False, meta: TableMeta | None = None) -> None:
        self.path = check_writable(path, force=force)
        self.format = table_format(self.path)
        self.force = force
        self.meta = meta
        self.rows = 0
        self._frames: list[pd.DataFrame] = []
        self._writer: Any = None
        self._ctx: Any = None
        self._tmp: Path | None = None
        self._schema: pa.Schema | None = None

    def __enter__(self) -> "TableWriter":
        self._ctx = atomic_path(self.path, force=self.force)
        self._tmp = self._ctx.__enter__()
        return self

    def write(self, table: pa.Table) -> None:
        assert self._tmp is not None, "use TableWriter as a context manager"
        if self._schema is None:
            self._schema = table.schema
        elif table.schema != self._schema:
            table = table.cast(self._schema)
        if self.format == "csv":
            if self._writer is None:
                opts = pacsv.WriteOptions(include_header=True, quoting_style="needed")
                self._writer = pacsv.CSVWriter(str(self._tmp), table.schema, write_options=opts)
            self._writer.write_table(table)
        elif self.format == "parquet":
            if self._writer is None:
                self._writer = pq.ParquetWriter(str(self._tmp), table.schema)
            self._writer.write_table(table)
        else:
            self._frames.append(table.to_pandas())
        self.rows += table.num_rows

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
            if exc_type is None and self.format in ("stata", "spss"):
                self._write_stat()
        finally:
            self._ctx.__exit__(exc_type, exc, tb)

    def _write_stat(self) -> None:
        import pyreadstat

        frame = pd.concat(self._frames, ignore_index=True) if self._frames else pd.DataFrame()
        labels = self.meta.labels if self.meta is not None and self.meta.format == self.format else {}
        col_labels = labels.get("column_labels", {})
        writer = pyreadstat.write_dta if self.format == "stata" else pyreadstat.write_sav
        try:
            writer(
                frame, str(self._tmp),
                column_labels=[col_labels.get(c) or "" for c in frame.columns] if col_labels else None,
                variable_value_labels=labels.get("variable_value_labels") or None,
            )
        except Exception as exc:
            raise DataError(f"cannot write {self.format} file {str(self.path)!r}: {exc}") from None


def write_table(table: pa.Table | pd.DataFrame, path: str | Path, *, force: bool = False) -> Path:
    """Write a whole table (Arrow or pandas) atomically."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    with TableWriter(path, force=force) as w:
        w.write(table)
    return Path(path)


def sha256_of(path: str | Path) -> str:
    """SHA-256 of a file, to record which input a release came from."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
