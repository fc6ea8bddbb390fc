"""The released rows in an order drawn from the secret key, out of core.

``apply --shuffle`` writes the rows of the release in a random order: the shuffle
model of :mod:`pramkit.privacy.amplification`.  The order is a function of the key
alone, so the release stays reproducible and byte-identical whatever the chunk size
or the engine:

* row ``i`` gets the 64-bit word ``words_at(key, SHUFFLE_STREAM, i)`` of its own
  Philox stream (:func:`pramkit.engine.rng.words_at`);
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
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from pramkit.engine.rng import SecretKey, words_at
from pramkit.errors import WriteError

#: The key's stream that orders the rows (a name no column can take: streams of variables are their names).
SHUFFLE_STREAM = "\x00pramkit:row order"
#: The helper columns of a spilled bucket.
WORD, ROW = "\x00order", "\x00row"


def order_words(key: SecretKey, rows: np.ndarray) -> np.ndarray:
    """The sort word of each row number.

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> w = order_words(key, np.arange(5))
    >>> w.dtype, bool(np.array_equal(w[[3, 1]], order_words(key, np.array([3, 1]))))
    (dtype('uint64'), True)
    """
    return words_at(key, SHUFFLE_STREAM, np.asarray(rows, dtype=np.int64)).astype(np.uint64)


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
        self._schema: pa.Schema | None = None

    def __enter__(self) -> "KeyedShuffle":
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
        self._schema = spilled.schema
        buckets = (words >> np.uint64(64 - self.bits)).astype(np.int64) if self.bits else np.zeros(rows.size, int)
        order = np.argsort(buckets, kind="stable")
        cuts = np.searchsorted(buckets[order], np.arange(2 ** self.bits + 1))
        try:
            for b in np.flatnonzero(np.diff(cuts)):
                part = spilled.take(pa.array(order[cuts[b]:cuts[b + 1]]))
                if b not in self._writers:
                    self._writers[b] = ipc.new_file(self._bucket(int(b)), spilled.schema)
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
            with pa.memory_map(str(path)) as source:
                table = ipc.open_file(source).read_all()
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
