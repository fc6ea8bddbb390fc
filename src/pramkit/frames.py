"""Dataframes beyond pandas: polars (eager and lazy) and Arrow tables, in and out.

pramkit's engine works on Arrow tables (:class:`pramkit.engine.perturb.TablePerturber`,
:func:`pramkit.counts.count_file`), so a polars frame or an Arrow table goes to it as
Arrow, without passing through pandas, and comes back as the type it came in
(:func:`to_native`).  Narwhals tells the types apart and converts eager frames;
a polars ``LazyFrame`` is read in batches of at most ``chunk_rows`` rows
(:func:`frame_batches`), so memory is bounded by a batch, never by the data.

Row ``i`` of a frame is row ``i`` of the keyed random streams whatever its type
and however it is batched, so the same key releases the same values from a
pandas frame, a polars frame (eager or lazy) and an Arrow table holding the same
records (:func:`perturb_native`).

Examples
--------
>>> import polars as pl
>>> frame_kind(pl.DataFrame({"sex": ["f"]})), frame_kind(pl.LazyFrame({"sex": ["f"]})), frame_kind("a.csv")
('polars', 'polars-lazy', None)
>>> meta, batches = frame_batches(pl.LazyFrame({"sex": ["f", "m", None, "f", "m"]}), chunk_rows=2)
>>> meta.format, meta.rows, [t.num_rows for t in batches]
('polars-lazy', None, [2, 2, 1])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import narwhals as nw
import narwhals.dependencies as nwd
import pyarrow as pa

from pramkit.defaults import CHUNK_ROWS
from pramkit.errors import DataError, ParameterError
from pramkit.io import TableMeta, check_schema, require_columns

if TYPE_CHECKING:
    from pramkit.engine.perturb import FrameResult
    from pramkit.engine.rng import SecretKey
    from pramkit.manifest import Manifest

#: What :func:`frame_kind` calls each type, and how a message names it.
KINDS = {"pandas": "a pandas DataFrame", "polars": "a polars DataFrame", "polars-lazy": "a polars LazyFrame",
         "arrow": "an Arrow table"}


def frame_kind(data: Any) -> str | None:
    """The kind of a frame in memory (a key of :data:`KINDS`), or ``None`` for anything else (a path).

    Parameters
    ----------
    data : Any
        The data a public function was given.

    Returns
    -------
    str or None
        ``"pandas"``, ``"polars"``, ``"polars-lazy"``, ``"arrow"``, or ``None``.

    Examples
    --------
    >>> import pandas as pd
    >>> frame_kind(pd.DataFrame({"a": [1]})), frame_kind(pa.table({"a": [1]})), frame_kind(3)
    ('pandas', 'arrow', None)
    """
    if isinstance(data, pa.Table):
        return "arrow"
    if nwd.is_pandas_dataframe(data):
        return "pandas"
    if nwd.is_polars_dataframe(data):
        return "polars"
    if nwd.is_polars_lazyframe(data):
        return "polars-lazy"
    return None


def streamed(data: Any) -> bool:
    """Whether ``data`` is a frame that pramkit reads as Arrow batches, like a file: polars (eager or lazy)
    or an Arrow table.

    Parameters
    ----------
    data : Any
        The data a public function was given.

    Returns
    -------
    bool

    Examples
    --------
    >>> import pandas as pd, polars as pl
    >>> streamed(pl.DataFrame({"a": [1]})), streamed(pa.table({"a": [1]})), streamed(pd.DataFrame({"a": [1]}))
    (True, True, False)
    """
    return frame_kind(data) in ("arrow", "polars", "polars-lazy")


def describe(data: Any) -> str:
    """How a message names a frame in memory (``"a polars LazyFrame in memory"``).

    Parameters
    ----------
    data : Any
        A frame of one of the :data:`KINDS`.

    Returns
    -------
    str

    Examples
    --------
    >>> describe(pa.table({"a": [1]}))
    'an Arrow table in memory'
    """
    return f"{KINDS[frame_kind(data) or 'pandas']} in memory"


def frame_columns(data: Any) -> list[str]:
    """The column names of a frame (a ``LazyFrame``'s from its schema: nothing is computed).

    Parameters
    ----------
    data : Any
        A frame of one of the :data:`KINDS`.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import polars as pl
    >>> frame_columns(pl.LazyFrame({"sex": ["f"], "age": [3]})), frame_columns(pa.table({"x": [1]}))
    (['sex', 'age'], ['x'])
    """
    if frame_kind(data) == "polars-lazy":
        return list(data.collect_schema().names())
    return [str(c) for c in nw.from_native(data, eager_only=True).columns]


def frame_batches(data: Any, *, columns: Sequence[str] | None = None, chunk_rows: int = CHUNK_ROWS,
                  flat: Sequence[str] | None = None) -> tuple[TableMeta, Iterator[pa.Table]]:
    """A polars frame (eager or lazy) or an Arrow table as Arrow tables of at most ``chunk_rows`` rows.

    :func:`pramkit.io.iter_batches` hands a frame in memory here, so that every
    reader of files (counting, risk, estimation) reads these frames too.  An eager
    frame is sliced (no copy); a ``LazyFrame`` is computed by polars' streaming
    engine batch by batch, so memory is bounded by a batch.

    Parameters
    ----------
    data : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The frame.
    columns : sequence of str, optional
        The columns to read, in this order; default all of them.
    chunk_rows : int
        The most rows of a table.
    flat : sequence of str, optional
        Columns that must hold one plain value per record (:func:`pramkit.io.check_schema`);
        default ``columns``.

    Returns
    -------
    meta : pramkit.io.TableMeta
        ``format`` is the frame's kind; ``rows`` is ``None`` for a ``LazyFrame`` (not computed ahead).
    tables : iterator of pyarrow.Table
        The rows, batch by batch.

    Raises
    ------
    DataError
        A column of ``columns`` is not in the frame, or a column of ``flat`` is nested.
    ParameterError
        ``data`` is not such a frame, or ``chunk_rows`` is below 1.

    Examples
    --------
    >>> import polars as pl
    >>> meta, tables = frame_batches(pl.DataFrame({"sex": ["f", "m", "f"], "age": [1, 2, 3]}),
    ...                              columns=["sex"], chunk_rows=2)
    >>> meta.columns, meta.rows, [t.column("sex").to_pylist() for t in tables]
    (['sex'], 3, [['f', 'm'], ['f']])
    >>> frame_batches(pa.table({"sex": ["f"]}), columns=["region"])
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column(s) ['region'] are not in an Arrow table in memory; its columns are ['sex']
    """
    kind = frame_kind(data)
    if kind not in ("arrow", "polars", "polars-lazy"):
        raise ParameterError(f"data must be a polars DataFrame or LazyFrame or an Arrow table, not "
                             f"{type(data).__name__}")
    if chunk_rows < 1:
        raise ParameterError(f"chunk_rows must be at least 1, not {chunk_rows!r}")
    names = frame_columns(data)
    require_columns(columns, names, describe(data))
    wanted = list(columns) if columns is not None else names
    meta = TableMeta(kind, wanted)
    if kind == "polars-lazy":
        return meta, _checked(_lazy_tables(data.select(wanted), chunk_rows), flat if flat is not None else wanted,
                              describe(data))
    if kind == "arrow":
        table = data.select(wanted)
        check_schema(table.schema, flat if flat is not None else wanted, describe(data))
        meta.rows = table.num_rows
        return meta, _sliced(table, chunk_rows)
    chosen = data.select(wanted)  # polars converts the columns read only, and only when they are read
    check_schema(as_arrow(chosen.head(0)).schema, flat if flat is not None else wanted, describe(data))
    meta.rows = chosen.height
    return meta, _converted(chosen, chunk_rows)


def as_arrow(data: Any) -> pa.Table:
    """An eager polars frame or an Arrow table as an Arrow table (polars' buffers, not copied through pandas).

    Parameters
    ----------
    data : polars.DataFrame or pyarrow.Table
        The frame.

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> import polars as pl
    >>> as_arrow(pl.DataFrame({"sex": ["f", None]})).column("sex").to_pylist()
    ['f', None]
    """
    return data if isinstance(data, pa.Table) else nw.from_native(data, eager_only=True).to_arrow()


def eager(data: Any) -> Any:
    """A pandas frame as it is; an eager polars frame or an Arrow table as an Arrow table (:func:`as_arrow`).

    What the functions that read every record at once (the risk measures per record) take:
    each column of the result is a pandas Series or an Arrow array, both of which
    :func:`pramkit.engine.codebook.encode` reads.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records.

    Returns
    -------
    pandas.DataFrame or pyarrow.Table

    Raises
    ------
    DataError
        ``data`` is of another type (a ``LazyFrame`` is not read whole: its functions stream it).

    Examples
    --------
    >>> import polars as pl
    >>> eager(pl.DataFrame({"sex": ["f"]})).column_names
    ['sex']
    >>> eager([1, 2])
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: data must be a pandas or polars DataFrame or an Arrow table, not list
    """
    kind = frame_kind(data)
    if kind == "pandas":
        return data
    if kind in ("arrow", "polars"):
        return as_arrow(data)
    raise DataError(f"data must be a pandas or polars DataFrame or an Arrow table, not {type(data).__name__}")


def column(data: Any, name: str) -> Any:
    """One column of a frame returned by :func:`eager`: a pandas Series or an Arrow array.

    Parameters
    ----------
    data : pandas.DataFrame or pyarrow.Table
        The records.
    name : str
        A column of them.

    Returns
    -------
    pandas.Series or pyarrow.ChunkedArray

    Examples
    --------
    >>> column(pa.table({"sex": ["f", None]}), "sex").null_count
    1
    """
    return data.column(name) if isinstance(data, pa.Table) else data[name]


def records_like(columns: dict[str, Any], like: Any) -> Any:
    """One value per record of ``like`` in each of ``columns``, as a frame of ``like``'s type (a pandas
    frame with its index).

    Parameters
    ----------
    columns : dict of str to numpy.ndarray
        The columns, each as long as ``like``.
    like : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The records they describe.

    Returns
    -------
    pandas.DataFrame, polars.DataFrame or pyarrow.Table

    Examples
    --------
    >>> import numpy as np, pandas as pd, polars as pl
    >>> records_like({"f": np.array([1, 2])}, pd.DataFrame({"a": [0, 0]}, index=[5, 6])).index.tolist()
    [5, 6]
    >>> records_like({"f": np.array([1, 2])}, pl.DataFrame({"a": [0, 0]}))["f"].to_list()
    [1, 2]
    """
    if frame_kind(like) == "pandas":
        import pandas as pd

        return pd.DataFrame(columns, index=like.index)
    return to_native(pa.table(columns), like)


def to_native(table: pa.Table, like: Any) -> Any:
    """An Arrow table as a frame of the type of ``like`` (an eager polars frame or an Arrow table).

    Parameters
    ----------
    table : pyarrow.Table
        The rows.
    like : polars.DataFrame or pyarrow.Table
        A frame of the type wanted.

    Returns
    -------
    polars.DataFrame or pyarrow.Table

    Examples
    --------
    >>> import polars as pl
    >>> type(to_native(pa.table({"a": [1]}), pl.DataFrame())).__name__
    'DataFrame'
    """
    if isinstance(like, pa.Table):
        return table
    return nw.to_native(nw.from_arrow(table, backend=nw.get_native_namespace(nw.from_native(like))))


def _sliced(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    """``table`` in consecutive slices of at most ``rows`` rows (views, no copy)."""
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def _converted(frame: Any, rows: int) -> Iterator[pa.Table]:
    """An eager polars frame as Arrow (when first read), in slices of at most ``rows`` rows."""
    yield from _sliced(as_arrow(frame), rows)


def _lazy_tables(lazy: Any, rows: int) -> Iterator[pa.Table]:
    """A ``LazyFrame`` computed by polars' streaming engine, as Arrow tables of at most ``rows`` rows."""
    for batch in lazy.collect_batches(chunk_size=rows, maintain_order=True):
        yield from _sliced(batch.to_arrow(), rows)


def _checked(tables: Iterator[pa.Table], flat: Sequence[str], where: str) -> Iterator[pa.Table]:
    """``tables``, the first one's schema checked (:func:`pramkit.io.check_schema`)."""
    for i, table in enumerate(tables):
        if i == 0:
            check_schema(table.schema, flat, where)
        yield table


def perturb_native(data: Any, manifest: Manifest, *, key: SecretKey, threads: int | None = None,
                   chunk_rows: int = CHUNK_ROWS) -> FrameResult:
    """:func:`pramkit.perturb_frame` of a polars frame (eager or lazy) or an Arrow table: the same type out.

    An eager frame is perturbed as one Arrow table.  A ``LazyFrame`` comes back
    as a ``LazyFrame`` that perturbs when polars computes it (``collect``,
    ``sink_parquet``, ...): the input is read in batches of at most ``chunk_rows``
    rows, each perturbed as it comes (row ``i`` with the draw ``(key, v, i)``), so
    memory is bounded by a batch.  Its counts are then not known yet: ``result``
    is ``None``.

    Parameters
    ----------
    data : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The original records.
    manifest : pramkit.manifest.Manifest
        The variables to perturb and their matrices.
    key : pramkit.engine.rng.SecretKey
        The secret key (resolved).
    threads : int, optional
        Threads that perturb (:class:`pramkit.engine.perturb.TablePerturber`); the release does not depend on it.
    chunk_rows : int
        The most rows a ``LazyFrame`` is perturbed in at once.

    Returns
    -------
    pramkit.engine.perturb.FrameResult
        ``.data`` of the type of ``data``; ``.result`` the counts (``None`` for a ``LazyFrame``).

    Raises
    ------
    DataError
        A column of the manifest is missing, the frame has no rows (an eager frame; a ``LazyFrame``
        when computed), or a value is not one of its variable's categories.

    Examples
    --------
    >>> import polars as pl
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.engine.rng import SecretKey
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> key = SecretKey(bytes(32), "zeros")
    >>> frame = pl.DataFrame({"sex": ["m", "f", "f", "m", None, "m"], "age": [31, 45, 27, 60, 19, 52]})
    >>> eager = perturb_native(frame, manifest, key=key)
    >>> lazy = perturb_native(frame.lazy(), manifest, key=key, chunk_rows=4)
    >>> eager.data["sex"].to_list(), eager.result.variables[0].missing
    (['m', 'f', 'f', 'm', None, 'f'], 1)
    >>> lazy.result is None, lazy.data.collect().equals(eager.data)
    (True, True)
    """
    from pramkit.engine.perturb import ApplyResult, FrameResult, TablePerturber

    where = describe(data)
    require_columns(manifest.read_columns, frame_columns(data), where)
    if frame_kind(data) == "polars-lazy":
        return FrameResult(_lazy_release(data, manifest, key, threads, chunk_rows), None)
    read = manifest.read_columns
    table = as_arrow(data if isinstance(data, pa.Table) else data.select(read))  # polars: the columns read only
    if table.num_rows == 0:
        raise DataError("the data have no rows")
    perturber = TablePerturber(manifest, key, threads=threads)
    released = perturber(table, 0)
    out = released if isinstance(data, pa.Table) else data.with_columns(
        to_native(released.select(list(manifest.columns)), data))
    return FrameResult(out, ApplyResult(
        rows=table.num_rows, variables=perturber.summaries(), key_source=key.source,
        record_epsilon=manifest.record_epsilon, perturbed=tuple(manifest.names), key_fingerprint=key.fingerprint))


def _lazy_release(lazy: Any, manifest: Manifest, key: SecretKey, threads: int | None, chunk_rows: int) -> Any:
    """A ``LazyFrame`` of ``lazy`` released batch by batch when computed (a polars IO source)."""
    import polars as pl

    from pramkit.engine.perturb import TablePerturber

    schema = lazy.collect_schema()

    def source(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
               batch_size: int | None) -> Iterator[Any]:
        perturber = TablePerturber(manifest, key, threads=threads)  # every computation starts from row 0
        start = 0
        for table in _lazy_tables(lazy, chunk_rows):
            released = pl.DataFrame(perturber(table, start))  # an Arrow table: polars takes its buffers
            start += table.num_rows
            if with_columns is not None:
                released = released.select(with_columns)
            if predicate is not None:  # after the draws: row i keeps its draw whatever is filtered
                released = released.filter(predicate)
            yield released
        if start == 0:
            raise DataError("the data have no rows")

    return pl.io.plugins.register_io_source(source, schema=schema, explain_name="pramkit release")
