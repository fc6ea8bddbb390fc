"""The data a workflow reads, opened once: a file, a folder of part files or a frame in memory.

A workflow (designing a release, checking its rules and households, naming the file's
missing codes) asks several things of its data: what it is (a CSV, Parquet, Stata, SPSS or
SAS file, a folder of parts, a pandas or polars frame, a polars ``LazyFrame``, an Arrow
table), its columns, its value labels, its digest, its records chunk by chunk.  A
:class:`Source` answers them all: :meth:`Source.open` resolves the data once, at the top of
the workflow, and the stages take the source, never asking again whether they hold a path
or a frame.  What costs a read (the columns, the digest, the value labels) is read when
first asked for and kept: the file is described once per workflow, however many stages ask.

A source carries how its file is read (``na_values``, ``sep``, ``encoding``, ``decimal``); every
reader given a source (:func:`pramkit.io.iter_batches`, :func:`pramkit.counts.count_groups`) reads
it so.  A CSV file's columns stay text; where a column is read as numbers (survey weights) its
texts are read with the source's decimal mark (:func:`pramkit.io.csv_numbers`, ``meta.decimal``).

Examples
--------
>>> import pathlib, tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     f = pathlib.Path(d) / "a.csv"
...     _ = f.write_text("sex,age\\nm,31\\nNA,45\\n")
...     src = Source.open(f)
...     print(src.kind, src.format, src.columns, src.digest == sha256_of(f))
...     meta, tables = src.batches(["sex"])
...     print([t.column("sex").to_pylist() for t in tables])
file csv ['sex', 'age'] True
[['m', None]]
>>> Source.open(src) is src
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa

from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.frames import describe, frame_columns, frame_kind, pandas_table
from pramkit.io import CHUNK_ROWS, TableMeta, iter_batches, read_table, sha256_of, value_label_categories
from pramkit.io_formats import names_where, whole

#: The formats whose reader returns the whole file at once (:func:`pramkit.io.iter_batches`): a source
#: keeps the records it read of one until asked for other columns or :meth:`Source.forget`.  Derived from the
#: table of formats (:attr:`pramkit.io_formats.FileFormat.whole`), which :meth:`Source.batches` asks.
READ_WHOLE = names_where("whole")

#: What a message says a source may be.
KINDS_SAID = "a file path, a pandas or polars DataFrame, a polars LazyFrame or an Arrow table"


class Source:
    """An opened data source: what it is, its columns, labels, missing codes, digest and records.

    Make one with :meth:`open`; its answers are computed when first asked for, then kept.

    Parameters
    ----------
    data : str, pathlib.Path, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or pyarrow.Table
        A CSV, Parquet, Stata, SPSS or SAS file, a folder of part files
        (:func:`pramkit.io.dataset_parts`), or a frame in memory.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).
    decimal : str
        The decimal mark of a CSV file's numbers, ``"."`` or ``","`` (:func:`pramkit.io.csv_numbers`).

    Attributes
    ----------
    data : Any
        What was opened, as given (a path as given, not resolved).
    kind : str
        ``"file"``, ``"folder"``, or the frame's kind (:func:`pramkit.frames.frame_kind`:
        ``"pandas"``, ``"polars"``, ``"polars-lazy"``, ``"arrow"``).
    path : pathlib.Path or None
        The file or folder (``None`` in memory).
    described : str
        How a message or the manifest's ``input`` names it.

    See Also
    --------
    pramkit.workbench.Source : a file opened in the workbench, with its variables and a preview.

    Examples
    --------
    >>> import pandas as pd, polars as pl
    >>> s = Source.open(pd.DataFrame({"sex": ["f", "m"]}))
    >>> s.kind, s.described, s.columns, s.digest, s.on_disk, s.streamed
    ('pandas', 'a DataFrame in memory', ['sex'], None, False, False)
    >>> lazy = Source.open(pl.LazyFrame({"sex": ["f", None, "m"]}))
    >>> lazy.kind, lazy.described, lazy.streamed, lazy.frame(["sex"])["sex"].isna().tolist()
    ('polars-lazy', 'a polars LazyFrame in memory', True, [False, True, False])
    >>> Source.open(3)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: data must be a file path, a pandas or polars DataFrame, a polars LazyFrame or an Arrow table, not int
    """

    # Every answer is a cached_property (kept in the instance's __dict__, never a data descriptor), so that a
    # frozen dataclass may subclass Source and hold some answers as its fields: pramkit.workbench.Source does.

    #: The decimal mark of a CSV file's numbers (a subclass that does not set it reads the decimal point).
    decimal: str = CSV_DECIMAL

    def __init__(self, data: Any, *, na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
                 encoding: str = CSV_ENCODING, decimal: str = CSV_DECIMAL) -> None:
        self.data = data
        self.na_values = (na_values,) if isinstance(na_values, str) else tuple(na_values)
        self.sep = sep
        self.encoding = encoding
        self.decimal = decimal

    @classmethod
    def open(cls, data: Any, *, na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
             encoding: str = CSV_ENCODING, decimal: str = CSV_DECIMAL) -> Source:
        """The source of ``data`` (``data`` itself when it is one already: then the reading settings
        given here are not used, the source's own are).

        Nothing is read: a file that does not exist is refused by the first reader, with
        the message it gives today.

        Parameters
        ----------
        data : Source, str, pathlib.Path, or a frame of :data:`pramkit.frames.KINDS`
            The data.
        na_values : sequence of str
            The texts of a CSV file that are missing besides the empty field.
        sep, encoding, decimal : str
            How a CSV file is read.

        Returns
        -------
        Source

        Raises
        ------
        ParameterError
            ``data`` is of another type.

        Examples
        --------
        >>> import pyarrow as pa
        >>> Source.open(pa.table({"x": [1, 2]})).kind, Source.open("survey.dta").path.suffix
        ('arrow', '.dta')
        """
        if isinstance(data, Source):
            return data
        if not isinstance(data, (str, Path)) and frame_kind(data) is None:
            raise ParameterError(f"data must be {KINDS_SAID}, not {type(data).__name__}")
        return cls(data, na_values=na_values, sep=sep, encoding=encoding, decimal=decimal)

    @cached_property
    def kind(self) -> str:
        """``"file"``, ``"folder"`` or the frame's kind (nothing is read; a path need not exist)."""
        made = frame_kind(self.data)
        if made is not None:
            return made
        return "folder" if Path(self.data).is_dir() else "file"

    @cached_property
    def path(self) -> Path | None:
        """The file or folder, or ``None`` for a frame in memory."""
        return Path(self.data) if isinstance(self.data, (str, Path)) else None

    @property
    def on_disk(self) -> bool:
        """Whether the source is a file or a folder of part files."""
        return self.path is not None

    @property
    def streamed(self) -> bool:
        """Whether its records are read as Arrow tables chunk by chunk: a file, a folder, a polars frame or an
        Arrow table (a pandas DataFrame is read in memory)."""
        return self.kind != "pandas"

    @cached_property
    def described(self) -> str:
        """How a message names it: the path as given, or ``"a polars LazyFrame in memory"``, ...
        (a pandas frame: ``"a DataFrame in memory"``)."""
        if self.path is not None:
            return str(self.data)
        return "a DataFrame in memory" if self.kind == "pandas" else describe(self.data)

    @cached_property
    def meta(self) -> TableMeta:
        """What the reader learns before the records: the format, every column, the row count when declared,
        labels and missing codes (:class:`pramkit.io.TableMeta`; a pandas frame's format is ``"pandas"``)."""
        if self.kind == "pandas":
            return TableMeta("pandas", [str(c) for c in self.data.columns], rows=len(self.data))
        return iter_batches(self.data, na_values=self.na_values, sep=self.sep, encoding=self.encoding,
                            decimal=self.decimal)[0]

    @cached_property
    def format(self) -> str:
        """``csv``, ``parquet``, ``stata``, ``spss``, ``sas``, ``feather`` (:func:`pramkit.io.table_format`), or the
        frame's kind."""
        return self.meta.format

    @cached_property
    def columns(self) -> list[str]:
        """Every column, in order (a frame's without computing it; a file's from its header or schema)."""
        if self.path is None:
            return frame_columns(self.data)
        return list(self.meta.columns)

    @cached_property
    def digest(self) -> str | None:
        """The SHA-256 of the file (:func:`pramkit.io.sha256_of`: a folder's of its parts), read once;
        ``None`` in memory."""
        return None if self.path is None else sha256_of(self.path)

    def value_labels(self, columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """The codes of the value labels a Stata or SPSS file declares for ``columns``
        (:func:`pramkit.io.value_label_categories`; ``{}`` for other formats and in memory);
        the file's metadata is read once.

        Examples
        --------
        >>> Source.open(pa.table({"x": [1]})).value_labels(["x"])
        {}
        """
        if self.path is None or not columns:
            return {}
        asked: dict[tuple[str, ...], dict[str, tuple[Any, ...]]] = self.__dict__.setdefault("_labels", {})
        if tuple(columns) not in asked:
            asked[tuple(columns)] = value_label_categories(self.path, columns)
        return dict(asked[tuple(columns)])

    @cached_property
    def missing_words(self) -> str | None:
        """The missing codes the file may hold, in words (:func:`pramkit.io_stat.missing_code_words`: a
        Stata, SPSS or SAS file, or a Parquet file pramkit wrote from one); ``None`` otherwise."""
        if self.path is None:
            return None
        from pramkit.io_stat import _code_words

        return _code_words(self.path)

    def batches(self, columns: Sequence[str] | None = None, *, chunk_rows: int = CHUNK_ROWS,
                keep_missing_codes: bool = False,
                flat: Sequence[str] | None = None) -> tuple[TableMeta, Iterator[pa.Table]]:
        """Its records as Arrow tables of about ``chunk_rows`` rows (:func:`pramkit.io.iter_batches`, read
        with the source's ``na_values``, ``sep``, ``encoding`` and ``decimal``; a pandas frame as one table).

        Parameters
        ----------
        columns : sequence of str, optional
            The columns, in this order; default every one.
        chunk_rows : int
            The rows per table.
        keep_missing_codes : bool
            Missing markers and codes as they are in the file.
        flat : sequence of str, optional
            Columns that must hold one plain value per record.

        Returns
        -------
        meta : pramkit.io.TableMeta
        tables : iterator of pyarrow.Table
            A Stata, SPSS or SAS file comes as one table, read once however often the same columns are asked
            for (until :meth:`forget`).
        """
        if self.kind == "pandas":
            from pramkit.io import require_columns

            require_columns(columns, self.columns, "the data")
            wanted = list(columns) if columns is not None else self.columns
            table = pandas_table(self.data[wanted])
            return TableMeta("pandas", wanted, rows=table.num_rows), iter([table])
        key = (None if columns is None else tuple(columns), chunk_rows, keep_missing_codes,
               None if flat is None else tuple(flat))
        kept = self.__dict__.get("_whole")
        if kept is not None and kept[0] == key:
            return kept[1], iter(kept[2])
        meta, tables = iter_batches(self.data, columns=columns, chunk_rows=chunk_rows, na_values=self.na_values,
                                    keep_missing_codes=keep_missing_codes, flat=flat, sep=self.sep,
                                    encoding=self.encoding, decimal=self.decimal)
        if not whole(meta.format):  # the table of formats says which formats are read whole
            return meta, tables
        self.__dict__["_whole"] = (key, meta, list(tables))  # read whole anyway: the next ask reads it no more
        return meta, iter(self.__dict__["_whole"][2])

    def forget(self) -> None:
        """Drop the records kept of a file read whole (:data:`READ_WHOLE`), keeping what was described (its
        columns, digest, labels): a workflow calls it when it has counted, so that memory holds them no more.

        Examples
        --------
        >>> s = Source.open(pa.table({"x": [1]}))
        >>> s.forget(); s.columns
        ['x']
        """
        self.__dict__.pop("_whole", None)

    def frame(self, columns: Sequence[str]) -> Any:
        """A few of its columns as a pandas DataFrame (a file is read for those columns only; a pandas frame
        is selected, not copied through Arrow), what the checks of rules and households group.

        Examples
        --------
        >>> import pandas as pd
        >>> Source.open(pd.DataFrame({"a": [1], "b": [2]})).frame(["b"]).columns.tolist()
        ['b']
        """
        if self.path is not None:
            return read_table(self.path, columns=list(columns), na_values=list(self.na_values), sep=self.sep,
                              encoding=self.encoding, decimal=self.decimal)
        if self.kind == "pandas":
            return self.data[list(columns)]
        return pa.concat_tables(self.batches(list(columns))[1]).to_pandas()

    def declares_order(self, column: str) -> bool:
        """Whether a frame's column declares the order of its categories (an ordered categorical or Arrow
        dictionary: :func:`pramkit.codebook.declares_order`); a file's never does."""
        from pramkit.codebook import declares_order

        return declares_order(self.data, column)

    def __repr__(self) -> str:
        return f"Source({self.described!r}, kind={self.kind!r})"
