"""Dataframes beyond pandas: polars (eager and lazy) and Arrow tables, in and out.

pramkit's engine works on Arrow tables (:class:`pramkit.engine.perturb.TablePerturber`,
:func:`pramkit.counts.count_file`), so a polars frame or an Arrow table goes to it as
Arrow, without passing through pandas, and comes back as the type it came in
(:func:`to_native`).  Narwhals tells the types apart and converts eager frames;
a polars ``LazyFrame`` is read in batches of at most ``chunk_rows`` rows
(:func:`arrow_batches`), so memory is bounded by a batch, never by the data.

Row ``i`` of a frame is row ``i`` of the keyed random streams whatever its type
and however it is batched, so the same key releases the same values from a
pandas frame, a polars frame (eager or lazy) and an Arrow table holding the same
records (:func:`pramkit.perturb_frame`).

This module only tells frames apart and converts them: the readers
(:func:`pramkit.io.iter_batches`) and the engine (:func:`pramkit.perturb_frame`) use it.

Examples
--------
>>> import polars as pl
>>> frame_kind(pl.DataFrame({"sex": ["f"]})), frame_kind(pl.LazyFrame({"sex": ["f"]})), frame_kind("a.csv")
('polars', 'polars-lazy', None)
>>> schema, rows, batches = arrow_batches(pl.LazyFrame({"sex": ["f", "m", None, "f", "m"]}), ["sex"], 2)
>>> rows, [t.num_rows for t in batches]
(None, [2, 2, 1])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import narwhals as nw
import narwhals.dependencies as nwd
import numpy as np
import pyarrow as pa

from pramkit.errors import DataError

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


def arrow_batches(data: Any, columns: Sequence[str], chunk_rows: int) -> tuple[pa.Schema, int | None,
                                                                             Iterator[pa.Table]]:
    """Columns of a polars frame (eager or lazy) or an Arrow table as Arrow tables of at most ``chunk_rows`` rows.

    :func:`pramkit.io.iter_batches` reads a frame in memory through this, so that every
    reader of files (counting, risk, estimation) reads these frames too.  An Arrow table
    is sliced (no copy); an eager polars frame is converted once, when first read; a
    ``LazyFrame`` is computed by polars' streaming engine batch by batch, so memory is
    bounded by a batch.

    Parameters
    ----------
    data : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The frame.
    columns : sequence of str
        The columns to read (all of them in the frame), in this order.
    chunk_rows : int
        The most rows of a table (at least 1).

    Returns
    -------
    schema : pyarrow.Schema
        The Arrow types of ``columns``, known before any row is computed.
    rows : int or None
        The number of rows (``None`` for a ``LazyFrame``: not computed ahead).
    tables : iterator of pyarrow.Table
        The rows, batch by batch.

    Examples
    --------
    >>> import polars as pl
    >>> schema, rows, tables = arrow_batches(pl.LazyFrame({"sex": ["f", "m", None], "age": [1, 2, 3]}), ["sex"], 2)
    >>> schema.names, rows, [t.column("sex").to_pylist() for t in tables]
    (['sex'], None, [['f', 'm'], [None]])
    """
    chosen = data.select(list(columns))
    if isinstance(chosen, pa.Table):
        return chosen.schema, chosen.num_rows, _sliced(chosen, chunk_rows)
    if frame_kind(chosen) == "polars-lazy":
        import polars as pl

        return as_arrow(pl.DataFrame(schema=chosen.collect_schema())).schema, None, _lazy_tables(chosen, chunk_rows)
    return as_arrow(chosen.head(0)).schema, chosen.height, _converted(chosen, chunk_rows)


#: Rows below which a pandas frame goes to Arrow on one thread: for a frame of several columns pyarrow starts
#: a pool of threads at each conversion, which costs more than the conversion of a small frame.
ONE_THREAD_ROWS = 1 << 16


def pandas_table(frame: Any) -> pa.Table:
    """A pandas frame as an Arrow table, without its index (:meth:`pyarrow.Table.from_pandas`), on one thread
    below :data:`ONE_THREAD_ROWS` rows.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> import pandas as pd
    >>> pandas_table(pd.DataFrame({"sex": ["f", None], "w": [1.5, 2.0]})).column_names
    ['sex', 'w']
    """
    return pa.Table.from_pandas(frame, preserve_index=False, nthreads=1 if len(frame) < ONE_THREAD_ROWS else None)


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
    :func:`pramkit.codebook.encode` reads.

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

        return pd.DataFrame(columns, index=like.index, copy=False)  # the arrays are the caller's, made for it
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
    for batch in polars_batches(lazy, rows):
        yield batch.to_arrow()


def polars_batches(lazy: Any, rows: int) -> Iterator[Any]:
    """A ``LazyFrame`` computed by polars' streaming engine, as polars frames of at most ``rows`` rows, in order.

    Parameters
    ----------
    lazy : polars.LazyFrame
        The frame.
    rows : int
        The most rows of a batch (at least 1).

    Yields
    ------
    polars.DataFrame

    Examples
    --------
    >>> import polars as pl
    >>> [b.height for b in polars_batches(pl.LazyFrame({"a": range(5)}), 2)]
    [2, 2, 1]
    """
    for batch in lazy.collect_batches(chunk_size=rows, maintain_order=True):
        for start in range(0, batch.height, rows):
            yield batch.slice(start, rows)


def polars_text_kind(series: Any) -> str | None:
    """``"string"``, ``"categorical"`` or ``"enum"`` for a polars column of text, else ``None``.

    Parameters
    ----------
    series : polars.Series
        A column of a polars frame.

    Returns
    -------
    str or None

    Examples
    --------
    >>> import polars as pl
    >>> [polars_text_kind(pl.Series(["a"], dtype=t)) for t in (pl.String, pl.Categorical, pl.Enum(["a"]))]
    ['string', 'categorical', 'enum']
    >>> polars_text_kind(pl.Series([1]))
    """
    import polars as pl

    dtype = series.dtype
    if dtype == pl.String:
        return "string"
    if isinstance(dtype, pl.Enum):
        return "enum"
    if isinstance(dtype, pl.Categorical):
        return "categorical"
    return None


def polars_dictionary(series: Any, categories: pa.Array | None = None) -> pa.Array:
    """A polars ``Categorical`` or ``Enum`` column as an Arrow dictionary array, its physical codes as the
    indices (not copied when nothing is missing) and its categories as the dictionary.

    polars' own export of a ``Categorical`` builds a dictionary of the values that occur; the
    codes already index the column's categories, which is all an encoding needs (entries that no
    value uses are not read).  The codes are not checked against the categories (polars made them).

    Parameters
    ----------
    series : polars.Series
        A ``Categorical`` or ``Enum`` column.
    categories : pyarrow.Array, optional
        The column's categories as Arrow ``large_string``, when known (:func:`polars_categories`).

    Returns
    -------
    pyarrow.DictionaryArray

    Examples
    --------
    >>> import polars as pl
    >>> polars_dictionary(pl.Series(["b", None, "a"], dtype=pl.Enum(["a", "b"]))).to_pylist()
    ['b', None, 'a']
    """
    physical = series.to_physical()
    if categories is None:
        categories = polars_categories(series.dtype, physical)
    return pa.DictionaryArray.from_arrays(physical.to_arrow(), categories, safe=False)


def polars_categories(dtype: Any, physical: Any = None) -> pa.Array:
    """The categories of a polars ``Categorical`` or ``Enum`` dtype, in the order of its physical codes, as
    Arrow ``large_string`` (a ``Categorical``'s grow as values are added: read them after the codes exist).

    A ``Categorical``'s categories are those of its ``Categories`` object, which other columns share (the
    global one holds every text made ``Categorical`` in the process): only the codes from the smallest to
    the largest of the column ``physical`` (its physical codes) are read, converted by polars at once, those
    below as nulls; iterating over the ``Categories`` object converted one code per Python call, and every
    code of the shared categories (40 ms for 200 000).

    Parameters
    ----------
    dtype : polars.Categorical or polars.Enum
    physical : polars.Series, optional
        The physical codes of a ``Categorical`` column (``None``: no code, no category).

    Returns
    -------
    pyarrow.LargeStringArray
        Null for a code below the column's smallest, and for one that has no text yet (polars may reserve
        one while another query runs).

    Examples
    --------
    >>> import polars as pl
    >>> polars_categories(pl.Enum(["b", "a"])).to_pylist()
    ['b', 'a']
    >>> shared = pl.Series(["z", None, "y"], dtype=pl.Categorical(pl.Categories("docs")))
    >>> column = pl.Series(["w", "y"], dtype=pl.Categorical(pl.Categories("docs")))
    >>> polars_categories(column.dtype, column.to_physical()).to_pylist()  # codes 1 and 2: none below 1
    [None, 'y', 'w']
    """
    import polars as pl

    if isinstance(dtype, pl.Enum):
        return dtype.categories.to_arrow().cast(pa.large_string())
    if physical is None or physical.null_count() == len(physical):  # no code: no category
        return pa.array([], pa.large_string())
    low, top = int(physical.min()), int(physical.max())
    codes = pl.Series(np.arange(low, top + 1)).cast(physical.dtype)
    labels = codes.cat.to(dtype, strict=False).cast(pl.String).to_arrow().cast(pa.large_string())
    return pa.concat_arrays([pa.nulls(low, pa.large_string()), labels])  # the codes below the column's: none


def polars_labels(labels: pa.Array, like: Any) -> Any:
    """``labels`` as a polars Series of the dtype of the column ``like``, then a null: what
    :func:`polars_gather` takes values from; ``None`` if a label is not a value of that dtype (an
    ``Enum`` without it).

    Parameters
    ----------
    labels : pyarrow.Array
        The labels as text, one per code.
    like : polars.Series
        A ``String``, ``Categorical`` or ``Enum`` column.

    Returns
    -------
    polars.Series or None

    Examples
    --------
    >>> import polars as pl
    >>> polars_labels(pa.array(["a", "b"]), pl.Series(["a"], dtype=pl.Enum(["a", "b"]))).to_list()
    ['a', 'b', None]
    >>> polars_labels(pa.array(["a", "c"]), pl.Series(["a"], dtype=pl.Enum(["a", "b"]))) is None
    True
    """
    import polars as pl

    try:
        return pl.Series(like.name, pa.concat_arrays([labels.cast(pa.large_string()),
                                                     pa.nulls(1, pa.large_string())])).cast(like.dtype)
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
        return None


def polars_gather(labels: Any, codes: Any) -> Any:
    """The values of ``codes`` (``-1``: missing) from :func:`polars_labels`: one gather, in polars' own
    buffers (no conversion of the values from Arrow).  Codes without a missing value are gathered from the
    labels without their null: polars then writes no validity, which took about half the gather's time.

    Parameters
    ----------
    labels : polars.Series
        The labels then a null (:func:`polars_labels`).
    codes : numpy.ndarray
        Codes in ``-1..len(labels)-2``.

    Returns
    -------
    polars.Series

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> polars_gather(polars_labels(pa.array(["a", "b"]), pl.Series("x", ["a"])), np.array([1, -1, 0])).to_list()
    ['b', None, 'a']
    """
    import polars as pl

    c = np.asarray(codes)
    if c.size and c.min() >= 0:
        labels = labels.slice(0, len(labels) - 1)
    return labels.gather(pl.Series(c))  # -1 counts from the end: the null


class PolarsText:
    """Labels to write a polars ``String`` column from codes: each label's Arrow string view (16 bytes: its
    length and its bytes up to 12, else its first four bytes and where its bytes are), so that the released
    column is one gather of views by the codes, handed to polars without a copy (polars holds text as
    views), where :func:`polars_gather` gathers in polars at about twice the time.

    Parameters
    ----------
    labels : pyarrow.Array
        The labels as text, one per code (a null label writes a missing value).
    name : str
        The name of the column written.

    Examples
    --------
    >>> import numpy as np
    >>> text = PolarsText(pa.array(["a", None, "a label of more than twelve bytes"]), "x")
    >>> text(np.array([2, -1, 0, 1])).to_list()
    ['a label of more than twelve bytes', None, 'a', None]
    >>> text(np.array([0, 0])).dtype
    String
    """

    def __init__(self, labels: pa.Array, name: str) -> None:
        views = pa.concat_arrays([labels.cast(pa.string_view()), pa.nulls(1, pa.string_view())])
        self.name = name
        self.buffers = views.buffers()[2:]  # the long labels' bytes, which the views point into
        self.views = np.frombuffer(views.buffers()[1], dtype="V16")[views.offset:][:len(views)]
        self.valid = np.asarray(views.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        self.null_labels = not self.valid[:-1].all()

    def __call__(self, codes: np.ndarray) -> Any:
        """The labels of ``codes`` (``-1``: missing) as a polars ``String`` Series."""
        import polars as pl

        c = np.asarray(codes)
        validity = None
        if self.null_labels or (c.size and c.min() < 0):
            valid = self.valid[c]
            if not valid.all():
                validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        array = pa.Array.from_buffers(pa.string_view(), c.size, [validity, pa.py_buffer(self.views[c]),
                                                                 *self.buffers])
        return pl.Series(self.name, array)
