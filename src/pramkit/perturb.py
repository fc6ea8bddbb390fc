"""Applying a PRAM matrix to category codes with keyed, counter-based draws.

Row ``i`` of variable ``v`` is perturbed with the uniform ``U(key, v, i)`` of
:mod:`pramkit.rng`, so the result does not depend on how the rows are split
into chunks or partitions: pass the absolute row number of a chunk's first row
as ``start``.
"""

from __future__ import annotations

import functools
import os
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from pramkit.atomic import check_writable
from pramkit.codebook import MISSING, Codebook, JointCodebook, MissingCodes
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.io import CHUNK_ROWS, NA_VALUES, TableWriter, iter_batches, require_columns
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.progress import progress
from pramkit.rng import SecretKey, resolve_key, uniforms, uniforms_at
from pramkit.sampling import BLOCK, AliasSampler, DiagonalSampler, sampler_for

#: Uniforms drawn at once by :func:`perturb_codes` (a generator is set up per span, not per block).
SPAN = 8 * BLOCK


def perturb_codes(
    codes: ArrayLike,
    matrix: PramMatrix | DiagonalSampler | AliasSampler,
    *,
    key: SecretKey,
    variable: str,
    start: int = 0,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Released codes for original ``codes`` (``-1`` = missing, kept missing).

    Parameters
    ----------
    codes : integer array of codes in ``-1..S-1``
    matrix : the PRAM matrix (or a sampler prepared from it, to reuse across chunks)
    key : the secret key (see :func:`pramkit.rng.resolve_key`)
    variable : the variable's name; it selects the variable's random stream
    start : absolute row number of ``codes[0]`` in the file
    rows : alternatively, the absolute row number of every value (in any order)
    """
    c = np.ascontiguousarray(codes)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer):
        raise DataError("codes must be a 1-D integer array")
    c = c.astype(np.intp, copy=False)
    sampler = sampler_for(matrix) if isinstance(matrix, PramMatrix) else matrix
    out = np.empty(c.size, dtype=np.intp)
    _draw(c, out, sampler, key=key, variable=variable, start=start, rows=rows)
    return out


def _draw(codes: np.ndarray, out: np.ndarray, sampler: DiagonalSampler | AliasSampler, *, key: SecretKey,
          variable: str, start: int, rows: np.ndarray | None, missing_code: int | None = None) -> tuple[int, int]:
    """Write the released codes of ``codes`` (``intp``) into ``out``, which may be ``codes`` itself.

    Works block by block (:data:`BLOCK` values, in the cache) with the
    uniforms of a span (:data:`SPAN` values, one generator).  With
    ``missing_code``, returns how many codes equal it and how many changed,
    counted per block while it is in the cache (else ``(0, 0)``).
    """
    if rows is not None and np.shape(rows) != codes.shape:
        raise DataError("rows must give one row number per code")
    n = codes.size
    in_place = out is codes
    scratch = np.empty(min(BLOCK, n), dtype=np.intp) if in_place or missing_code is not None else None
    buffer = np.empty(min(SPAN, n))
    missing = changed = 0
    for s0 in range(0, n, SPAN):
        e0 = min(s0 + SPAN, n)
        if rows is None:
            span = uniforms(key, variable, start + s0, e0 - s0, out=buffer)
        else:
            span = uniforms_at(key, variable, rows[s0:e0])
        for s in range(s0, e0, BLOCK):
            e = min(s + BLOCK, e0)
            block, uu = codes[s:e], span[s - s0:e - s0]
            lo, hi = int(block.min()), int(block.max())
            if lo < MISSING or hi >= sampler.size:
                raise DataError(f"codes must lie in -1..{sampler.size - 1}, found {lo if lo < MISSING else hi}")
            if scratch is not None:  # the original codes of the block, kept while ``out`` is written
                block = scratch[:e - s]
                np.copyto(block, codes[s:e])
            if lo == MISSING:
                valid = block >= 0
                sampler.draw(np.where(valid, block, 0), uu, out[s:e])
                out[s:e][~valid] = MISSING
            else:
                sampler.draw(block, uu, out[s:e])
            if missing_code is not None:
                missing += int(np.count_nonzero(block == missing_code))
                changed += int(np.count_nonzero(out[s:e] != block))
    return missing, changed


@dataclass(frozen=True)
class VariableSummary:
    """What perturbation did to one variable.

    rows: values seen; missing: missing values (left missing unless missing is a
    category); changed: values whose released category differs from the original.
    """

    name: str
    rows: int
    missing: int
    changed: int

    @property
    def changed_share(self) -> float:
        valid = self.rows - self.missing
        return self.changed / valid if valid else 0.0


@dataclass(frozen=True)
class ApplyResult:
    """Outcome of perturbing a table or a file."""

    rows: int
    variables: tuple[VariableSummary, ...]
    key_source: str
    record_epsilon: float
    output: str | None = None
    seconds: float = 0.0
    perturbed: tuple[str, ...] = ()
    key_fingerprint: str = ""
    receipt: str | None = None


class _Perturber:
    """Per-variable state reused across chunks: codebook, sampler and running counts.

    Values that ``missing_codes`` declares missing (CSV markers such as ``NA``,
    SPSS user-missing codes) are treated as missing and written back as they
    were; a manifest category that is such a code is refused.
    """

    def __init__(self, variable: PerturbedVariable, key: SecretKey, missing_codes: MissingCodes | None = None) -> None:
        self.variable = variable
        self.sampler, book = _prepared(variable)
        self.key = key
        self.joint = book if isinstance(book, JointCodebook) else None
        self.book = None if self.joint else book
        self.codes = missing_codes or MissingCodes()
        if self.codes:
            cats = variable.matrix.categories
            for i, column in enumerate(variable.columns):
                self.codes.refuse_categories(column, [c[i] for c in cats] if self.joint is not None else cats)
        self.rows = self.missing = self.changed = 0

    def release(self, table: pa.Table, start: int,
                rows: np.ndarray | None = None) -> tuple[list[pa.Array], tuple[int, int, int]]:
        """Released arrays of the variable's columns of ``table``, and the counts (values, missing, changed).

        Safe to call from several threads at once (on different rows): the
        counts are returned, not accumulated (see :meth:`add`).
        """
        v = self.variable
        raw = [table.column(c) for c in v.columns]
        marks = [self.codes.found(c, values) for c, values in zip(v.columns, raw)]
        columns = [
            values if m is None else pc.if_else(pa.array(m), pa.scalar(None, values.type), values)
            for values, m in zip(raw, marks)
        ]
        if self.book is not None:
            codes = self.book.encode(columns[0], first_row=start, rows=rows)
            missing_code = self.book.missing_code
        else:
            codes = self.joint.encode(columns, first_row=start, rows=rows)
            missing_code = MISSING
        if codes.dtype != np.intp or not codes.flags.writeable or not codes.flags.c_contiguous:
            codes = np.array(codes, dtype=np.intp)
        # perturbed in place: one array of codes per chunk, counted block by block.  Encoding gives missing
        # values (and only them) the missing code; a joint record is missing if any value is, and stays missing
        missing, changed = _draw(codes, codes, self.sampler, key=self.key, variable=v.name, start=start, rows=rows,
                                 missing_code=missing_code)
        released = codes
        counts = codes.size, missing, changed
        if self.book is not None:
            new = self.book.decode(released, like=columns[0].type)
            if marks[0] is not None:  # a missing code stays what it was
                keep = pa.array(marks[0] & _as_missing(new))
                new = pc.if_else(keep, raw[0], new)
            return [new], counts
        # a record with a missing value in any of the columns keeps all of its values
        kept = pa.array(released == MISSING)
        decoded = self.joint.decode(released, like=[c.type for c in columns])
        return [pc.if_else(kept, original, new) for original, new in zip(raw, decoded)], counts

    def add(self, counts: tuple[int, int, int]) -> None:
        """Add the counts of one :meth:`release` to the running totals."""
        self.rows += counts[0]
        self.missing += counts[1]
        self.changed += counts[2]

    def summary(self) -> VariableSummary:
        return VariableSummary(self.variable.name, self.rows, self.missing, self.changed)


#: Sampler and codebook of each matrix in use, by the matrix's identity (matrices are immutable).
_PREPARED: dict[tuple, tuple[weakref.ref, DiagonalSampler | AliasSampler, Codebook | JointCodebook]] = {}


def _prepared(variable: PerturbedVariable) -> tuple[DiagonalSampler | AliasSampler, Codebook | JointCodebook]:
    """The sampler and codebook of a variable, built once per matrix and reused by later calls.

    Building them is O(S) Python work (O(S^2) for an alias sampler), which a
    call on a million rows of a variable of 10 000 categories would otherwise
    pay every time.  An entry goes when its matrix is garbage-collected.
    """
    m = variable.matrix
    key = (id(m), variable.name, variable.columns, variable.missing)
    entry = _PREPARED.get(key)
    if entry is not None and entry[0]() is m:
        return entry[1], entry[2]
    book: Codebook | JointCodebook = (
        JointCodebook(m.categories, variable.columns) if variable.is_joint
        else Codebook(m.categories, column=variable.name, missing=variable.missing))
    sampler = sampler_for(m)
    _PREPARED[key] = (weakref.ref(m, lambda _, key=key: _PREPARED.pop(key, None)), sampler, book)
    return sampler, book


def _as_missing(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    mask = pc.is_null(values, nan_is_null=True)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


#: Fewest rows of one variable worth a thread of their own.
PARALLEL_ROWS = 1 << 17


def available_threads() -> int:
    """The number of cores this process may run on (the default number of threads)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pramkit-perturb")


class TablePerturber:
    """Perturbs the manifest's columns of Arrow tables, chunk after chunk.

    ``perturber(table, start)`` returns the table with its perturbed columns
    replaced; ``start`` is the absolute row number of the table's first row
    (or ``rows`` gives every row's number, for rows that arrive out of order).
    Per-variable counts accumulate over calls (:meth:`summaries`).
    ``missing_codes`` are the values the file declares missing although they
    are not null (:class:`pramkit.codebook.MissingCodes`): they are left as
    they are, and a manifest listing one as a category is refused.

    With ``threads`` above 1 (default: every core this process may use), the
    variables of a table and slices of :data:`PARALLEL_ROWS` rows or more run
    on that many threads (NumPy and Arrow release the GIL).  The release does
    not depend on it: row ``i`` always uses the draw ``(key, v, i)``.
    """

    def __init__(self, manifest: Manifest, key: SecretKey, missing_codes: MissingCodes | None = None,
                 *, threads: int | None = None) -> None:
        self.manifest = manifest
        self._perturbers = [_Perturber(v, key, missing_codes) for v in manifest.variables]
        self.threads = available_threads() if threads is None else int(threads)
        if self.threads < 1:
            raise ParameterError(f"threads must be at least 1, not {threads!r}")

    def check_columns(self, columns: list[str], where: str) -> None:
        require_columns(self.manifest.columns, columns, where)

    def _slices(self, n: int) -> list[tuple[int, int]]:
        """Row ranges of one variable: enough for about two tasks per thread over all variables."""
        wanted = -(-2 * self.threads // max(len(self._perturbers), 1)) if self.threads > 1 else 1
        parts = max(1, min(wanted, n // PARALLEL_ROWS))
        bounds = [n * i // parts for i in range(parts + 1)]
        return list(zip(bounds[:-1], bounds[1:]))

    def __call__(self, table: pa.Table, start: int = 0, rows: np.ndarray | None = None) -> pa.Table:
        slices = self._slices(table.num_rows)
        tasks = [(p, a, b) for p in self._perturbers for a, b in slices]

        def run(task: tuple[_Perturber, int, int]) -> tuple[list[pa.Array], tuple[int, int, int]]:
            p, a, b = task
            part = table if (a, b) == (0, table.num_rows) else table.slice(a, b - a)
            return p.release(part, start + a, None if rows is None else rows[a:b])

        if len(tasks) > 1 and self.threads > 1:
            futures = [_pool(self.threads).submit(run, t) for t in tasks]
            results = [f.result() for f in futures]  # in task order: the first error is the one a serial run meets
        else:
            results = [run(t) for t in tasks]
        for k, p in enumerate(self._perturbers):
            per_slice = results[k * len(slices):(k + 1) * len(slices)]
            for _, counts in per_slice:
                p.add(counts)
            for j, name in enumerate(p.variable.columns):
                parts = [released[j] for released, _ in per_slice]
                i = table.schema.get_field_index(name)
                column = parts[0] if len(parts) == 1 else pa.chunked_array(
                    [c for part in parts for c in (part.chunks if isinstance(part, pa.ChunkedArray) else [part])],
                    type=table.schema.field(i).type)
                table = table.set_column(i, table.schema.field(i), column)
        return table

    def summaries(self) -> tuple[VariableSummary, ...]:
        return tuple(p.summary() for p in self._perturbers)


def perturb_frame(
    data: pd.DataFrame,
    manifest: Manifest,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    threads: int | None = None,
) -> tuple[pd.DataFrame, ApplyResult]:
    """Perturb the manifest's columns of a DataFrame (a new frame; other columns untouched).

    Row ``i`` of the frame (by position) is row ``i`` of the keyed streams.
    Each column is converted to codes once (pandas categorical codes, Arrow
    dictionaries, or one hash lookup of the column's values among the
    categories), perturbed, and taken back from the categories in the
    column's own dtype.  ``threads``: see :class:`TablePerturber`.
    """
    t0 = time.perf_counter()
    secret = resolve_key(key)
    require_columns(manifest.columns, list(data.columns), "the data")
    if len(data) == 0:
        raise DataError("the data have no rows")
    perturber = TablePerturber(manifest, secret, threads=threads)
    columns = manifest.columns
    released = perturber(_to_arrow(data, columns))
    out = data.copy()
    for name in columns:
        out[name] = _as_column(released.column(name), data[name])
    return out, ApplyResult(
        rows=len(data), variables=perturber.summaries(), key_source=secret.source,
        record_epsilon=manifest.record_epsilon, seconds=time.perf_counter() - t0, perturbed=tuple(manifest.names),
        key_fingerprint=secret.fingerprint,
    )


def _to_arrow(data: pd.DataFrame, columns: list[str]) -> pa.Table:
    """The ``columns`` of ``data`` as an Arrow table, as :meth:`pyarrow.Table.from_pandas` converts them;
    a pandas categorical without missing values goes faster, by its codes (no null mask to build)."""
    fast = {name: _categorical_as_dictionary(data[name]) for name in columns}
    rest = [name for name in columns if fast[name] is None]
    converted = pa.Table.from_pandas(data[rest], preserve_index=False) if rest else None
    return pa.table([converted.column(n) if fast[n] is None else fast[n] for n in columns], names=columns)


def _categorical_as_dictionary(column: pd.Series) -> pa.DictionaryArray | None:
    """A pandas categorical without missing values as an Arrow dictionary array (``None`` for other columns)."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return None
    codes = column.cat.codes.to_numpy()
    if codes.size == 0 or codes.min() < 0:
        return None
    empty = pa.array(column.iloc[:0])  # pyarrow's dictionary and type for the column
    return pa.DictionaryArray.from_arrays(pa.array(codes), empty.dictionary, ordered=empty.type.ordered, safe=False)


def _as_column(released: pa.ChunkedArray, original: pd.Series) -> pd.Series:
    """Released values as a column like ``original``: its index, and its dtype where that can hold them.

    A pandas categorical comes back categorical (its categories those of the
    matrix); a column of an Arrow dtype wraps the released Arrow array as it is.
    """
    if isinstance(original.dtype, pd.ArrowDtype) and released.type == original.dtype.pyarrow_dtype:
        return pd.Series(pd.arrays.ArrowExtensionArray(released), index=original.index)
    if isinstance(original.dtype, pd.CategoricalDtype) and released.num_chunks:
        first = released.chunk(0).dictionary
        if all(c.dictionary is first or c.dictionary.equals(first) for c in released.chunks[1:]):
            dtype = released.chunk(0).slice(0, 0).to_pandas().dtype  # the categories as to_pandas gives them
            codes = np.concatenate([c.indices.fill_null(-1).to_numpy() for c in released.chunks])
            return pd.Series(pd.Categorical.from_codes(codes, dtype=dtype, validate=False), index=original.index)
    new = released.to_pandas()
    new.index = original.index
    if isinstance(original.dtype, pd.CategoricalDtype):
        return new
    try:
        return new.astype(original.dtype)
    except (TypeError, ValueError):
        return new


def apply_file(
    data: str | Path,
    manifest: Manifest | str | Path,
    out: str | Path,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    force: bool = False,
    chunk_rows: int = CHUNK_ROWS,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    receipt: bool = True,
    threads: int | None = None,
) -> ApplyResult:
    """Perturb a file chunk by chunk into ``out`` (same columns, order and types).

    Memory is O(chunk).  The output is written atomically and does not depend
    on ``chunk_rows``: row ``i`` of variable ``v`` always uses draw ``(key, v, i)``.

    ``na_values`` are the texts of a CSV file that are missing besides the
    empty field (default ``("NA",)``; ``()`` for none).  Missing values, those
    markers and SPSS user-missing codes are never perturbed and come out as
    they went in; SPSS user-missing declarations are kept.  No value is
    released as a missing code: a manifest listing one as a category is
    refused.  The output is never one of the inputs (data, manifest, key file),
    whatever ``force`` says.

    With ``receipt`` (the default) a public release receipt
    ``OUT.receipt.json`` records which manifest made the release
    (:mod:`pramkit.receipt`).  It is renamed into place right after the
    released file (:func:`pramkit.receipt.receipt_after`): when the release
    fails, an earlier release keeps both its file and its receipt.

    ``threads``: the threads that perturb a chunk (default: every core this
    process may use; see :class:`TablePerturber`); the output does not
    depend on it.
    """
    from pramkit.receipt import receipt_after, receipt_path

    t0 = time.perf_counter()
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    secret = resolve_key(key)
    src, dst = Path(data), Path(out)
    inputs = [src, None if isinstance(manifest, Manifest) else manifest, secret.path]
    check_writable(dst, force=force, inputs=inputs)
    if chunk_rows < 1:
        raise PramkitError("chunk_rows must be at least 1")
    start = 0
    # exits in reverse order: the released file is renamed into place first, then its receipt
    with receipt_after(dst, manifest, inputs=inputs, enabled=receipt) as pending:
        meta, batches = iter_batches(src, chunk_rows=chunk_rows, na_values=na_values, keep_missing_codes=True)
        perturber = TablePerturber(man, secret, meta.missing, threads=threads)
        perturber.check_columns(meta.columns, f"{str(src)!r}")
        with progress(total=meta.rows, desc="perturbing", unit="rows", quiet=quiet) as bar, \
                TableWriter(dst, force=force, meta=meta, inputs=inputs) as writer:
            for table in batches:
                table = perturber(table, start)
                writer.write(table)
                start += table.num_rows
                bar.update(table.num_rows)
            if start == 0:
                raise DataError(f"file {str(src)!r} has no data rows")
            if pending is not None:  # the receipt's content now, with the digest of what will appear
                writer.close()
                pending.fill(rows=start, digest=writer.sha256)
    return ApplyResult(
        rows=start, variables=perturber.summaries(), key_source=secret.source,
        record_epsilon=man.record_epsilon, output=str(dst), seconds=time.perf_counter() - t0,
        perturbed=tuple(man.names), key_fingerprint=secret.fingerprint,
        receipt=str(receipt_path(dst)) if receipt else None,
    )
