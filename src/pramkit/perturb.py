"""Applying a PRAM matrix to category codes with keyed, counter-based draws.

Row ``i`` of variable ``v`` is perturbed with the uniform ``U(key, v, i)`` of
:mod:`pramkit.rng`, so the result does not depend on how the rows are split
into chunks or partitions: pass the absolute row number of a chunk's first row
as ``start``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from pramkit.atomic import check_writable
from pramkit.codebook import MISSING, JointCodebook, MissingCodes, decode, encode
from pramkit.errors import DataError, PramkitError
from pramkit.io import CHUNK_ROWS, NA_VALUES, TableWriter, iter_batches, require_columns
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.progress import progress
from pramkit.rng import SecretKey, resolve_key, uniforms, uniforms_at
from pramkit.sampling import BLOCK, AliasSampler, DiagonalSampler, sampler_for

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
    if rows is not None and np.shape(rows) != c.shape:
        raise DataError("rows must give one row number per code")
    sampler = sampler_for(matrix) if isinstance(matrix, PramMatrix) else matrix
    n = c.size
    out = np.empty(n, dtype=np.intp)
    u = np.empty(min(BLOCK, n))
    for s in range(0, n, BLOCK):
        e = min(s + BLOCK, n)
        block = c[s:e]
        lo, hi = int(block.min()), int(block.max())
        if lo < MISSING or hi >= sampler.size:
            raise DataError(f"codes must lie in -1..{sampler.size - 1}, found {lo if lo < MISSING else hi}")
        if rows is None:
            uu = uniforms(key, variable, start + s, e - s, out=u)
        else:
            uu = uniforms_at(key, variable, rows[s:e])
        if lo == MISSING:
            valid = block >= 0
            sampler.draw(np.where(valid, block, 0), uu, out[s:e])
            out[s:e][~valid] = MISSING
        else:
            sampler.draw(block, uu, out[s:e])
    return out


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
        self.sampler = sampler_for(variable.matrix)
        self.key = key
        self.joint = JointCodebook(variable.matrix.categories, variable.columns) if variable.is_joint else None
        self.codes = missing_codes or MissingCodes()
        if self.codes:
            cats = variable.matrix.categories
            for i, column in enumerate(variable.columns):
                self.codes.refuse_categories(column, [c[i] for c in cats] if self.joint is not None else cats)
        self.rows = self.missing = self.changed = 0

    def __call__(self, table: pa.Table, start: int, rows: np.ndarray | None = None) -> list[pa.Array]:
        """Released arrays of the variable's columns of ``table``."""
        v = self.variable
        raw = [table.column(c) for c in v.columns]
        marks = [self.codes.mask(c, values) for c, values in zip(v.columns, raw)]
        columns = [
            values if m is None or not m.any() else pc.if_else(pa.array(m), pa.scalar(None, values.type), values)
            for values, m in zip(raw, marks)
        ]
        if self.joint is None:
            codes = encode(columns[0], v.matrix.categories, column=v.name, missing=v.missing,
                           first_row=start, rows=rows)
        else:
            codes = self.joint.encode(columns, first_row=start, rows=rows)
        released = perturb_codes(codes, self.sampler, key=self.key, variable=v.name, start=start, rows=rows)
        self.rows += codes.size
        self.missing += int(np.count_nonzero(np.any([_as_missing(c) for c in columns], axis=0)))
        self.changed += int(np.count_nonzero(released != codes))
        if self.joint is None:
            new = decode(released, v.matrix.categories, like=columns[0].type, column=v.name)
            if marks[0] is not None and marks[0].any():  # a missing code stays what it was
                keep = pa.array(marks[0] & _as_missing(new))
                new = pc.if_else(keep, raw[0], new)
            return [new]
        # a record with a missing value in any of the columns keeps all of its values
        kept = pa.array(codes == MISSING)
        decoded = self.joint.decode(released, like=[c.type for c in columns])
        return [pc.if_else(kept, original, new) for original, new in zip(raw, decoded)]

    def summary(self) -> VariableSummary:
        return VariableSummary(self.variable.name, self.rows, self.missing, self.changed)


def _as_missing(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    mask = pc.is_null(values, nan_is_null=True)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


class TablePerturber:
    """Perturbs the manifest's columns of Arrow tables, chunk after chunk.

    ``perturber(table, start)`` returns the table with its perturbed columns
    replaced; ``start`` is the absolute row number of the table's first row
    (or ``rows`` gives every row's number, for rows that arrive out of order).
    Per-variable counts accumulate over calls (:meth:`summaries`).
    ``missing_codes`` are the values the file declares missing although they
    are not null (:class:`pramkit.codebook.MissingCodes`): they are left as
    they are, and a manifest listing one as a category is refused.
    """

    def __init__(self, manifest: Manifest, key: SecretKey, missing_codes: MissingCodes | None = None) -> None:
        self.manifest = manifest
        self._perturbers = [_Perturber(v, key, missing_codes) for v in manifest.variables]

    def check_columns(self, columns: list[str], where: str) -> None:
        require_columns(self.manifest.columns, columns, where)

    def __call__(self, table: pa.Table, start: int = 0, rows: np.ndarray | None = None) -> pa.Table:
        for p in self._perturbers:
            for name, released in zip(p.variable.columns, p(table, start, rows)):
                i = table.schema.get_field_index(name)
                table = table.set_column(i, table.schema.field(i), released)
        return table

    def summaries(self) -> tuple[VariableSummary, ...]:
        return tuple(p.summary() for p in self._perturbers)


def perturb_frame(
    data: pd.DataFrame,
    manifest: Manifest,
    *,
    key: SecretKey | bytes | str | Path | None = None,
) -> tuple[pd.DataFrame, ApplyResult]:
    """Perturb the manifest's columns of a DataFrame (a new frame; other columns untouched).

    Row ``i`` of the frame (by position) is row ``i`` of the keyed streams.
    """
    t0 = time.perf_counter()
    secret = resolve_key(key)
    require_columns(manifest.columns, list(data.columns), "the data")
    if len(data) == 0:
        raise DataError("the data have no rows")
    perturber = TablePerturber(manifest, secret)
    columns = manifest.columns
    released = perturber(pa.Table.from_pandas(data[columns], preserve_index=False))
    out = data.copy()
    for name in columns:
        col = data[name]
        new = released.column(name).to_pandas()
        new.index = col.index
        out[name] = new if isinstance(col.dtype, pd.CategoricalDtype) else _like(new, col)
    return out, ApplyResult(
        rows=len(data), variables=perturber.summaries(), key_source=secret.source,
        record_epsilon=manifest.record_epsilon, seconds=time.perf_counter() - t0, perturbed=tuple(manifest.names),
        key_fingerprint=secret.fingerprint,
    )


def _like(released: pd.Series, original: pd.Series) -> pd.Series:
    """Released values in the original column's dtype where it can hold them."""
    try:
        return released.astype(original.dtype)
    except (TypeError, ValueError):
        return released


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
        perturber = TablePerturber(man, secret, meta.missing)
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
