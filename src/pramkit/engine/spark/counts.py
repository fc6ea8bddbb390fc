"""Frequency tables of Spark DataFrames: Spark aggregations collected to the driver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from pramkit.engine.spark.session import _one_line_errors
from pramkit.io import require_columns

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


@_one_line_errors
def table_counts(df: DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Counts of every observed combination of ``columns`` (nulls included), as pandas.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    columns : sequence of str
        The columns to cross-classify.

    Returns
    -------
    pandas.DataFrame
        One row per observed combination, with its ``count``.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> df = session("local[1]").createDataFrame([("m", "a"), ("m", "a"), ("f", "b")], ["sex", "g"])
    >>> table_counts(df, ["sex", "g"]).sort_values("sex").to_dict("records")
    [{'sex': 'f', 'g': 'b', 'count': 1}, {'sex': 'm', 'g': 'a', 'count': 2}]
    """
    require_columns(columns, df.columns, "the DataFrame")
    return df.groupBy(*columns).count().toPandas()


@_one_line_errors
def category_counts(df: DataFrame, column: str) -> dict:
    """Counts of each value of one column (``None`` for missing).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records.
    column : str
        The column.

    Returns
    -------
    dict
        Value -> count.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> df = session("local[1]").createDataFrame([("m",), ("m",), (None,)], "sex string")
    >>> sorted(category_counts(df, "sex").items(), key=str)
    [('m', 2), (None, 1)]
    """
    counts = table_counts(df, [column])
    return {(None if pd.isna(v) else v): int(c) for v, c in zip(counts[column], counts["count"])}
