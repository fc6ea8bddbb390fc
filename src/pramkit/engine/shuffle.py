"""The released rows in an order drawn from the secret key, out of core.

``apply --shuffle`` writes the rows of the release in a random order: the shuffle
model of :mod:`pramkit.privacy.amplification`.  The order is a function of the
release key alone (:func:`pramkit.engine.perturb.release_key`: the secret key derived
for the manifest and the release's label, the key the perturbation draws from, in a
stream of its own), so the release stays reproducible and byte-identical whatever the
chunk size or the engine, and two releases made with one key are not shuffled alike:

* row ``i`` gets the 64-bit word ``words_at(key, SHUFFLE_STREAM, i)`` of its own
  Philox stream (:func:`pramkit.kernel.rng.words_at`);
* the released order sorts the rows by ``(word, i)``: a uniformly random
  permutation up to ties of 64-bit words, which the row number breaks.

Out of core (:class:`KeyedShuffle`): the perturbed chunks are split into ``2^b``
buckets by the top ``b`` bits of their words and spilled to Arrow IPC files in a
private temporary folder; each bucket, about one chunk, is then read back, sorted
and written.  The buckets partition the word range in order, so their sorted
concatenation is the global order, for any number of buckets.  The Spark engine
sorts by the same pair (:func:`order_columns`).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from pramkit.errors import WriteError
from pramkit.kernel.rng import SecretKey, stream, words_at

#: The key's stream that orders the rows (a name no column can take: streams of variables are their names).
SHUFFLE_STREAM = "\x00pramkit:row order"
#: Rows per write of the shuffled release, whatever the chunk size: a Parquet file gets the same row groups.
OUT_ROWS = 1 << 16
#: The helper columns of a spilled bucket.
WORD, ROW = "\x00order", "\x00row"


def order_words(key: SecretKey, rows: np.ndarray) -> np.ndarray:
    """The sort word of each row number (a run of consecutive rows is read from the stream directly).

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> w = order_words(key, np.arange(2, 7))
    >>> w.dtype, bool(np.array_equal(w[[3, 1]], order_words(key, np.array([5, 3]))))
    (dtype('uint64'), True)
    """
    r = np.asarray(rows, dtype=np.int64)
    if r.size > 1 and r[-1] - r[0] == r.size - 1 and np.all(np.diff(r) == 1):
        return stream(key, SHUFFLE_STREAM, int(r[0])).bit_generator.random_raw(r.size).astype(np.uint64)
    return words_at(key, SHUFFLE_STREAM, r).astype(np.uint64)


def permutation(key: SecretKey, n: int) -> np.ndarray:
    """The released order of ``n`` rows in memory: ``out[j]`` is the original row written ``j``-th.

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> p = permutation(key, 6)
    >>> sorted(p.tolist()), bool(np.array_equal(p, permutation(key, 6)))
    ([0, 1, 2, 3, 4, 5], True)
    """
    rows = np.arange(n, dtype=np.int64)
    return rows[np.lexsort((rows, order_words(key, rows)))]


class KeyedShuffle:
    """Collect perturbed chunks, then give them back in the key's order, holding about one chunk in memory.

    Parameters
    ----------
    key : SecretKey
        The secret key.
    chunk_rows : int
        Rows per bucket aimed at.
    rows : int
        An estimate of the rows to come (sets the number of buckets).
    where : pathlib.Path
        The folder of the temporary bucket files (beside the output, never world-readable).

    Examples
    --------
    Any number of buckets gives the same order as :func:`permutation`:

    >>> import pathlib, tempfile
    >>> key = SecretKey(bytes(32), "zeros")
    >>> table = pa.table({"x": list(range(10))})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     orders = []
    ...     for chunk in (10, 3, 1):
    ...         with KeyedShuffle(key, chunk_rows=chunk, rows=10, where=pathlib.Path(d)) as s:
    ...             for start in range(0, 10, 4):
    ...                 s.add(table.slice(start, 4), start)
    ...             orders.append([v for t in s.tables() for v in t.column("x").to_pylist()])
    ...     leftovers = list(pathlib.Path(d).iterdir())
    >>> orders[0] == orders[1] == orders[2] == permutation(key, 10).tolist(), leftovers
    (True, [])
    """

    def __init__(self, key: SecretKey, *, chunk_rows: int, rows: int, where: Path) -> None:
        self.key = key
        self.bits = max(0, math.ceil(math.log2(max(1.0, 2.0 * rows / max(chunk_rows, 1)))))
        self.bits = min(self.bits, 16)
        self.where = where
        self._dir: Path | None = None
        self._writers: dict[int, Any] = {}

    def __enter__(self) -> KeyedShuffle:
        try:
            self._dir = Path(tempfile.mkdtemp(prefix=".pramkit-shuffle-", dir=self.where))
        except OSError as exc:
            raise WriteError(f"cannot write the shuffle's temporary files in {str(self.where)!r}: "
                             f"{exc.strerror or exc}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_writers()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def _bucket(self, b: int) -> Path:
        assert self._dir is not None
        return self._dir / f"{b:05d}.arrow"

    def add(self, table: pa.Table, start: int) -> None:
        """Spill a perturbed chunk whose first row is row ``start`` of the file.

        Raises
        ------
        WriteError
            A bucket file cannot be written.
        """
        if not table.num_rows:
            return
        rows = np.arange(start, start + table.num_rows, dtype=np.int64)
        words = order_words(self.key, rows)
        spilled = table.append_column(WORD, pa.array(words)).append_column(ROW, pa.array(rows))
        buckets = (words >> np.uint64(64 - self.bits)).astype(np.int64) if self.bits else np.zeros(rows.size, int)
        order = np.argsort(buckets, kind="stable")
        cuts = np.searchsorted(buckets[order], np.arange(2 ** self.bits + 1))
        grouped = spilled.take(pa.array(order))             # one gather; each bucket is then a slice of it
        try:
            for b in (int(i) for i in np.flatnonzero(np.diff(cuts))):
                part = grouped.slice(int(cuts[b]), int(cuts[b + 1] - cuts[b]))
                if b not in self._writers:
                    self._writers[b] = ipc.new_file(self._bucket(b), spilled.schema)
                self._writers[b].write_table(part)
        except OSError as exc:
            raise WriteError(f"cannot write the shuffle's temporary files: {exc.strerror or exc}") from None

    def tables(self) -> Iterator[pa.Table]:
        """The spilled rows in the key's order, one bucket at a time (without the helper columns)."""
        self._close_writers()
        for b in range(2 ** self.bits):
            path = self._bucket(b)
            if not path.exists():
                continue
            try:
                with pa.memory_map(str(path)) as source:
                    table = ipc.open_file(source).read_all()
            except OSError as exc:
                raise WriteError(f"cannot read the shuffle's temporary files back: {exc.strerror or exc}") from None
            words = table.column(WORD).to_numpy()
            rows = table.column(ROW).to_numpy()
            yield table.take(pa.array(np.lexsort((rows, words)))).drop_columns([WORD, ROW])
            path.unlink()


def group_counts(table: pa.Table, columns: list[str]) -> dict[tuple, int]:
    """How many rows share each combination of ``columns`` (missing values a value of their own).

    Examples
    --------
    >>> group_counts(pa.table({"a": ["x", "x", None], "b": [1, 1, 2]}), ["a", "b"])
    {('x', 1): 2, (None, 2): 1}
    """
    if not columns:
        return {(): table.num_rows}
    grouped = table.select(columns).group_by(columns, use_threads=False).aggregate([([], "count_all")])
    keys = zip(*(grouped.column(c).to_pylist() for c in columns))
    return dict(zip(keys, grouped.column("count_all").to_pylist()))


class CloneGroups:
    """The released records grouped by what they show exactly: the public columns' values and, for each
    perturbed column, whether it is missing (null or a declared missing code).

    Records of one group can be each other's clones in the shuffle bound; the smallest
    group is the ``n`` of the central guarantee.  It is computed from the released file
    alone (those columns are released as they are).

    Examples
    --------
    >>> groups = CloneGroups(["region"], ["age"])
    >>> groups.add(pa.table({"region": ["a", "a", "b"], "age": ["1", None, "2"]}))
    >>> groups.add(pa.table({"region": ["a"], "age": ["3"]}))
    >>> groups.smallest, groups.rows
    (1, 4)
    """

    def __init__(self, public: list[str], perturbed: list[str], missing_codes: Any = None) -> None:
        self.public = list(public)
        self.perturbed = list(perturbed)
        self.codes = missing_codes
        self.counts: dict[tuple, int] = {}
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        """Count a released chunk."""
        import pyarrow.compute as pc

        flags = {}
        for col in self.perturbed:
            missing = np.asarray(pc.is_null(table.column(col), nan_is_null=True).to_numpy(zero_copy_only=False))
            coded = self.codes.mask(col, table.column(col)) if self.codes else None
            flags["\x00" + col] = missing | coded if coded is not None else missing
        keyed = table.select(self.public)
        for name, flag in flags.items():
            keyed = keyed.append_column(name, pa.array(flag))
        for k, count in group_counts(keyed, keyed.column_names).items():
            self.counts[k] = self.counts.get(k, 0) + count
        self.rows += table.num_rows

    @property
    def smallest(self) -> int:
        """The fewest records in one group (0 before any record)."""
        return min(self.counts.values(), default=0)


class ShuffledWriter:
    """Pass released chunks to a writer as they come, or, with a key, in the key's order at :meth:`finish`.

    Parameters
    ----------
    writer : pramkit.io.TableWriter
        Where the rows go.
    key : SecretKey or None
        ``None``: the file's order.
    chunk_rows : int
        Rows per chunk (about the rows of one bucket).
    rows : int, optional
        The file's rows if known; else estimated from the size of ``source`` and of the first chunk.
    source : pathlib.Path
        The file read.
    where : pathlib.Path
        The folder of the temporary buckets.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.io import TableWriter
    >>> key = SecretKey(bytes(32), "zeros")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = pathlib.Path(d) / "o.csv"
    ...     with TableWriter(out) as writer, ShuffledWriter(writer, key, chunk_rows=2, rows=None,
    ...                                                        source=out, where=pathlib.Path(d)) as rows:
    ...         for start in (0, 2, 4):
    ...             rows.write(pa.table({"x": [start, start + 1]}), start)
    ...         rows.finish()
    ...     text = out.read_text().split()
    >>> text[0], [int(v) for v in text[1:]] == permutation(key, 6).tolist()
    ('x', True)
    """

    def __init__(self, writer: Any, key: SecretKey | None, *, chunk_rows: int, rows: int | None,
                 source: Path, where: Path) -> None:
        self.writer = writer
        self.key = key
        self.chunk_rows = chunk_rows
        self.rows = rows
        self.source = source
        self.where = where
        self._shuffle: KeyedShuffle | None = None

    def __enter__(self) -> ShuffledWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._shuffle is not None:
            self._shuffle.__exit__(*exc)
            self._shuffle = None

    def _estimate(self, table: pa.Table) -> int:
        if self.rows is not None:
            return self.rows
        try:
            size = self.source.stat().st_size
        except OSError:
            size = 0
        per_row = max(table.nbytes / max(table.num_rows, 1), 1.0)
        return max(table.num_rows, int(size / per_row))

    def write(self, table: pa.Table, start: int) -> None:
        """Write, or spill, a released chunk whose first row is row ``start``."""
        if self.key is None:
            self.writer.write(table)
            return
        if self._shuffle is None:
            self._shuffle = KeyedShuffle(self.key, chunk_rows=self.chunk_rows, rows=self._estimate(table),
                                         where=self.where).__enter__()
        self._shuffle.add(table, start)

    def finish(self) -> None:
        """Write the spilled rows in the key's order, :data:`OUT_ROWS` at a time (nothing to do without a key)."""
        if self._shuffle is None:
            return
        pending: list[pa.Table] = []
        held = 0
        for table in self._shuffle.tables():
            pending.append(table)
            held += table.num_rows
            if held >= OUT_ROWS:
                rest = pa.concat_tables(pending)
                cut = held - held % OUT_ROWS
                for start in range(0, cut, OUT_ROWS):
                    self.writer.write(rest.slice(start, OUT_ROWS))
                pending, held = [rest.slice(cut)], held - cut
        if held:
            self.writer.write(pa.concat_tables(pending))


def recomputed_guarantees(manifest: Any, path: Any, stated: Mapping[str, Any], *, sep: str = ",",
                          encoding: str = "utf-8") -> dict[str, Any]:
    """The guarantees :func:`pramkit.engine.perturb.apply_file` states for a shuffled release (its receipt's
    ``guarantees``), recomputed from the manifest and the released records, never read from the receipt.

    The central epsilon depends on which columns were declared public (released as they are, so that their
    clones are counted): every column released unperturbed, or none.  Both are recomputed; the one the
    receipt states is returned when it is one of them, else the one that, as the receipt, states a central
    figure (or none).

    Parameters
    ----------
    manifest : pramkit.Manifest
        The release's manifest.
    path : path
        The released file (or folder of parts).
    stated : mapping
        The receipt's ``guarantees`` (its ``shuffled_delta`` is the delta asked for; the default otherwise).
    sep, encoding : str
        How a CSV file is written.

    Returns
    -------
    dict
        :meth:`pramkit.privacy.amplification.Guarantees.to_dict` of the release.
    """
    from pramkit._json import json_same
    from pramkit.io import iter_batches
    from pramkit.privacy.amplification import DEFAULT_DELTA, release_guarantees

    delta = float(stated["shuffled_delta"]) if isinstance(stated.get("shuffled_delta"), float) else DEFAULT_DELTA
    na = tuple(manifest.input.get("na_values", ("NA",)))
    meta, batches = iter_batches(path, na_values=na, sep=sep, encoding=encoding)
    tables = list(batches)
    found = []
    for public in ([], [c for c in meta.columns if c not in manifest.columns]):
        groups = CloneGroups(list(public), manifest.columns, meta.missing)
        for t in tables:
            groups.add(t)
        found.append(release_guarantees(manifest, columns=meta.columns, public_columns=public, shuffled=True,
                                        clones=groups.smallest, delta=delta).to_dict())
    # the receipt's own when it is one of them; else (a receipt edited) the one that, as the receipt, states a
    # central figure or none; else the one without public columns, which claims no central figure
    return next((g for g in found if json_same(g, dict(stated))),
                next((g for g in found if (g["shuffled_epsilon"] is None) == (stated.get("shuffled_epsilon") is None)),
                     found[0]))
