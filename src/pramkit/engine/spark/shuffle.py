"""The rows of a Spark release in the key's order, and the smallest group of clones a shuffle hides in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from pramkit.codebook import MissingCodes
from pramkit.engine.spark.perturb import _ORDER, _row_numbers_of, _with_row_numbers
from pramkit.engine.spark.session import _one_line_errors, _quoted, _require_pyspark
from pramkit.kernel.rng import SecretKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


@_one_line_errors
def shuffle_rows(df: DataFrame, key: SecretKey, *, row_number: str | None = None) -> DataFrame:
    """The rows of ``df`` in the key's order: the order of :func:`pramkit.engine.shuffle.permutation`.

    ``key`` is used as it is: for a release, pass its release key (:func:`pramkit.engine.perturb.release_key`),
    as :func:`apply_file_spark` does.

    Each row's sort word comes from its row number (``row_number``, or the file order as in
    :func:`perturb`) in an Arrow UDF; Spark sorts by the word, then by the row number.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The records (typically :func:`perturb`'s release).
    key : SecretKey
        The secret key.
    row_number : str, optional
        A column of 0-based row numbers.

    Returns
    -------
    pyspark.sql.DataFrame
        Sorted by a range partitioning: the part files, read in order, hold the rows in the key's order.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> import pandas as pd
    >>> from pramkit.engine.shuffle import permutation
    >>> key = SecretKey(bytes(32), "zeros")
    >>> df = session("local[1]").createDataFrame(pd.DataFrame({"row": range(8)}))
    >>> shuffle_rows(df, key, row_number="row").toPandas()["row"].tolist() == permutation(key, 8).tolist()
    True
    """
    numbered, numbers, offsets, _ = _with_row_numbers(df, row_number)
    return _in_key_order(numbered, df.columns, numbers, offsets, key)


def _in_key_order(numbered: DataFrame, columns: Sequence[str], numbers: Any, offsets: dict[int, int] | None,
                  key: SecretKey) -> DataFrame:
    """The ``columns`` of ``numbered`` in the key's order (:func:`shuffle_rows`), its rows numbered by ``numbers``
    and ``offsets`` (:func:`pramkit.engine.spark.perturb._with_row_numbers`)."""
    from pramkit.engine.shuffle import order_words

    F = _require_pyspark()
    from pyspark.sql.types import LongType

    def order(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        for values in batches:
            words = order_words(key, _row_numbers_of(values, offsets))
            yield pa.array((words ^ np.uint64(1 << 63)).view(np.int64))  # signed, in the same order

    udf = F.arrow_udf(order, LongType())
    ordered = numbered.withColumn(_ORDER, udf(numbers)).orderBy(F.col(_ORDER), numbers)
    return ordered.select(*(F.col(_quoted(name)) for name in columns))


def smallest_group(df: DataFrame, public: Sequence[str], perturbed: Sequence[str],
                   missing_codes: MissingCodes | None = None) -> int:
    """:attr:`pramkit.engine.shuffle.CloneGroups.smallest` of a Spark DataFrame: the fewest rows that agree
    on the public columns and on which perturbed columns are missing.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspark")
    >>> from pramkit.engine.spark import session
    >>> import pandas as pd
    >>> df = session("local[1]").createDataFrame(pd.DataFrame({"r": ["a", "a", "b"], "x": ["1", None, "2"]}))
    >>> smallest_group(df, ["r"], ["x"]), smallest_group(df, [], [])
    (1, 3)
    """
    F = _require_pyspark()
    texts = list(missing_codes.texts) if missing_codes else []
    keys = [F.col(_quoted(c)) for c in public]
    for c in perturbed:
        missing = F.col(_quoted(c)).isNull()
        if texts:
            missing = missing | F.col(_quoted(c)).cast("string").isin(texts)
        keys.append(missing.alias(f"__pramkit_missing_{len(keys)}"))
    if not keys:
        return int(df.count())
    return int(df.groupBy(*keys).count().agg(F.min("count")).collect()[0][0])
