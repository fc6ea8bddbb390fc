"""Random identifiers: a grouping column (a household id) replaced by keyed random ids, and the rows shuffled
(sdcMicro's ``createNewID``, and the ``randomizeRecords`` of its ``extractManipData``).

An id such as a household number often says more than it should: it may be built from the area and the
interviewer's list, or follow the order of the fieldwork, so that neighbours have neighbouring ids.
:func:`new_ids` replaces every distinct value of the column by a new id ``1..H`` (``H`` distinct values, a
missing id one value of its own, as sdcMicro's ``data.table`` groups it):

* one old id, one new id, within the file (the groups are preserved: two records share a new id exactly when
  they shared the old one);
* the new ids are a keyed random permutation of ``1..H``: the distinct old ids, in their sorted order, get the
  64-bit words ``words_at(key', NEW_IDS_STREAM, 0..H-1)`` of a Philox stream of their own
  (:func:`pramkit.kernel.rng.words_at`), and new id ``r + 1`` goes to the distinct id of the ``r``-th smallest
  ``(word, position)`` -- a uniformly random permutation (up to ties of 64-bit words, which the position
  breaks), so no order of the old ids survives in the new ones;
* ``key'`` is :meth:`pramkit.kernel.rng.SecretKey.for_data` of the column's name and its distinct ids under the
  secret key: the same key and the same ids give the same new ids (a key file makes it again); another key, or
  another file, independent ones.  Without the key the permutation is a uniform draw, so the new ids say
  nothing of the old beyond which records share one.

The rows are then put in a keyed random order (``shuffle``), so that the order of the records does not give
the old ids back either:

* ``"households"`` (default, sdcMicro's ``byHH``): the groups in the order of their new ids, each group's
  records together and in their order in the file (a person number within the household stays meaningful);
* ``"within"`` (``withinHH``): the same, and each group's records in a keyed random order too;
* ``"records"`` (``simple``): every record in a keyed random order, the groups scattered;
* ``"none"``: the rows as they were.

The index of the returned frame is ``0..n-1``: the old row numbers are not carried.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES, NEW_IDS_SHUFFLES
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey, resolve_key, words_at
from pramkit.methods.ids.fields import RECEIPT_FILE

__all__ = ["NEW_IDS_STREAM", "ROWS_STREAM", "SHUFFLES", "NewIdsResult", "id_permutation", "new_ids", "new_ids_file"]

#: The stream of the permutation of the distinct ids (a name no column can take).
NEW_IDS_STREAM = "\x00pramkit:new ids"
#: The stream of the order of the rows.
ROWS_STREAM = "\x00pramkit:new ids rows"
#: The orders of the rows :func:`new_ids` can give.
SHUFFLES = NEW_IDS_SHUFFLES


def _digest(column: str, distinct: pd.Index) -> bytes:
    """The canonical bytes of the column's name and its distinct ids (sorted; types named, so ``1`` and ``"1"``
    differ)."""
    h = hashlib.sha256(column.encode("utf-8"))
    for value in distinct:
        h.update(f"{type(value).__name__}\x1f{value!r}\x1e".encode())
    return h.digest()


def new_ids(frame: pd.DataFrame, column: str, key: SecretKey | bytes | str | Path, *,
            shuffle: str = "households") -> pd.DataFrame:
    """``frame`` with ``column`` replaced by keyed random ids ``1..H`` and its rows shuffled (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records (not changed).
    column : str
        The grouping column (a household id).
    key : SecretKey, bytes, str or pathlib.Path
        The secret key (a key file's path, or its bytes): the same key gives the same ids and order.
    shuffle : {"households", "within", "records", "none"}
        The order of the rows.

    Returns
    -------
    pandas.DataFrame
        A new frame: the same columns, ``column`` as integers ``1..H``, the index ``0..n-1``.

    Raises
    ------
    ParameterError
        ``column`` is not a column of the frame, or ``shuffle`` is none of :data:`SHUFFLES`.

    Examples
    --------
    >>> df = pd.DataFrame({"hid": [10, 10, 20, 30, 30, 30], "age": [40, 12, 70, 35, 33, 5]})
    >>> out = new_ids(df, "hid", bytes(range(32)))
    >>> out["hid"].tolist(), out["age"].tolist()
    ([1, 2, 2, 3, 3, 3], [70, 40, 12, 35, 33, 5])
    >>> out.equals(new_ids(df, "hid", bytes(range(32))))
    True
    """
    if column not in frame.columns:
        raise ParameterError(f"{column!r} is not a column of the frame (its columns: "
                             f"{', '.join(map(str, frame.columns))})")
    ids, permutation = id_permutation(frame[column], str(column), key, shuffle=shuffle)
    out = frame.iloc[permutation].copy()
    out[column] = ids[permutation]
    return out.reset_index(drop=True)


def id_permutation(values: pd.Series, column: str, key: SecretKey | bytes | str | Path, *,
                   shuffle: str = "households") -> tuple[np.ndarray, np.ndarray]:
    """The new id of every record (in the order of ``values``) and the order of the rows (:func:`new_ids`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The new ids ``1..H`` (int64), and the row order: the released file's row ``i`` is record
        ``permutation[i]``.

    Examples
    --------
    >>> ids, order = id_permutation(pd.Series([10, 10, 20, 30, 30, 30]), "hid", bytes(range(32)))
    >>> ids.tolist(), order.tolist()
    ([2, 2, 1, 3, 3, 3], [2, 0, 1, 3, 4, 5])
    """
    if shuffle not in SHUFFLES:
        raise ParameterError(f"shuffle must be one of {', '.join(SHUFFLES)}, got {shuffle!r}")
    secret = resolve_key(key)
    try:
        old, distinct = pd.factorize(values, sort=True, use_na_sentinel=False)
    except TypeError:  # values of types that do not sort together: their texts, sorted
        old, distinct = pd.factorize(values.map(lambda v: f"{type(v).__name__}\x1f{v!r}"), sort=True,
                                     use_na_sentinel=False)
    keyed = secret.for_data("new ids", _digest(column, pd.Index(distinct)))
    h = len(distinct)
    words = words_at(keyed, NEW_IDS_STREAM, np.arange(h))
    order = np.lexsort((np.arange(h), words))  # the distinct ids by (word, position)
    rank = np.empty(h, dtype=np.int64)
    rank[order] = np.arange(1, h + 1)
    ids = rank[old]
    n = len(values)
    rows = words_at(keyed, ROWS_STREAM, np.arange(n)) if shuffle in ("within", "records") else np.zeros(n, np.uint64)
    position = np.arange(n)
    if shuffle == "none":
        permutation = position
    elif shuffle == "records":
        permutation = np.lexsort((position, rows))
    else:  # by new id; within a group by position ("households") or by (word, position) ("within")
        permutation = np.lexsort((position, rows, ids))
    return ids, permutation


# ----------------------------------------------------------------- a file with new ids, and its receipt

#: The receipt's format and version, as its declaration states them (:mod:`pramkit.methods.ids.fields`).
FORMAT, VERSION = RECEIPT_FILE.format, int(RECEIPT_FILE.version or 1)
#: The receipt beside a released file: ``OUT.new-ids.json``.
RECEIPT_SUFFIX = ".new-ids.json"


def receipt_path(out: str | Path) -> Path:
    """The receipt beside a released file: ``OUT.new-ids.json``.

    >>> receipt_path("out/r.csv").name
    'r.csv.new-ids.json'
    """
    out = Path(out)
    return out.with_name(out.name + RECEIPT_SUFFIX)


#: What each order of the rows keeps, in words (the receipt's guarantee).
ORDER_WORDS = {
    "households": "the rows are in a keyed random order, each id's records together and in their order in the file "
                  "read",
    "within": "the rows are in a keyed random order, each id's records together",
    "records": "every row is in a keyed random order",
    "none": "the rows are in their order in the file read",
}


def guarantee(column: str, groups: Any, shuffle: str) -> str:
    """The receipt's guarantee sentence, made from its fields.

    Examples
    --------
    >>> print(guarantee("hid", 1000, "households"))
    the values of hid are keyed random ids 1 to 1000, one for each value it held (records share a new id exactly when they shared the old one); the rows are in a keyed random order, each id's records together and in their order in the file read; every other value is as it was
    """
    return (f"the values of {column} are keyed random ids 1 to {groups}, one for each value it held (records share a "
            f"new id exactly when they shared the old one); {ORDER_WORDS.get(shuffle, repr(shuffle))}; every other "
            "value is as it was")


@dataclass(frozen=True)
class NewIdsResult:
    """What :func:`new_ids_file` did (the ``--json`` of ``pramkit new-ids``).

    Parameters
    ----------
    rows, groups : int
        Records written, and distinct ids (the new ids are ``1..groups``).
    column, shuffle : str
        The id column and the order of the rows.
    data, output, receipt : str
        The file read, the released file and its receipt.
    sha256 : str
        The released file's SHA-256.
    key_fingerprint : str
        The fingerprint of the secret key (never the key).
    seconds : float
        Wall time.
    """

    rows: int
    groups: int
    column: str
    shuffle: str
    data: str
    output: str
    receipt: str
    sha256: str
    key_fingerprint: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values."""
        return dataclasses.asdict(self)


def new_ids_file(data: str | Path, column: str, out: str | Path, *, key: SecretKey | bytes | str | Path,
                 shuffle: str = "households", na_values: Sequence[str] = NA_VALUES, sep: str = CSV_SEP,
                 encoding: str = CSV_ENCODING, force: bool = False) -> NewIdsResult:
    """Write ``data`` with ``column`` replaced by keyed random ids and its rows shuffled (:func:`new_ids`), and its
    public receipt ``OUT.new-ids.json``, both or neither.

    Every other value is written as it was read (missing codes included); the id column as whole numbers
    ``1..H``, a missing id one value of its own.

    Parameters
    ----------
    data, out : str or pathlib.Path
        The file read and the released file (its suffix gives its format).
    column : str
        The grouping column (a household id).
    key : SecretKey, bytes, str or pathlib.Path
        The secret key: the same key and file give the same ids and order.
    shuffle : {"households", "within", "records", "none"}
        The order of the rows (:data:`SHUFFLES`).
    na_values, sep, encoding
        How a CSV file is read.
    force : bool
        Replace an existing ``out`` and receipt.

    Returns
    -------
    NewIdsResult

    Raises
    ------
    ParameterError
        A column the file lacks, or an order none of :data:`SHUFFLES` (nothing written).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     src = pathlib.Path(d) / "a.csv"
    ...     _ = src.write_text("hid,age\\n10,40\\n10,12\\n20,70\\n30,35\\n30,33\\n30,5\\n")
    ...     r = new_ids_file(src, "hid", pathlib.Path(d) / "b.csv", key=bytes(range(32)))
    ...     print(r.groups, pathlib.Path(d, "b.csv").read_text().split())
    ...     print(json.loads(pathlib.Path(r.receipt).read_text())["shuffle"])
    3 ['hid,age', '1,70', '2,40', '2,12', '3,35', '3,33', '3,5']
    households
    """
    import time

    import pyarrow as pa

    from pramkit.atomic import check_writable
    from pramkit.io import iter_batches, write_with_receipt

    start = time.perf_counter()
    src, out = Path(data), Path(out)
    if shuffle not in SHUFFLES:
        raise ParameterError(f"--shuffle must be one of {', '.join(SHUFFLES)}, got {shuffle!r}")
    secret = resolve_key(key)
    receipt = receipt_path(out)
    check_writable(out, force=force, inputs=[src, receipt])
    check_writable(receipt, force=force, inputs=[src, out])
    meta, tables = iter_batches(src, na_values=tuple(na_values), sep=sep, encoding=encoding, keep_missing_codes=True)
    if column not in meta.columns:
        raise ParameterError(f"{column!r} is not a column of {src.name} (its columns: {', '.join(meta.columns)})")
    parts = list(tables)
    table = pa.concat_tables(parts) if parts else pa.table({c: pa.array([], pa.string()) for c in meta.columns})
    ids, order = id_permutation(table.column(column).to_pandas(), column, secret, shuffle=shuffle)
    released = table.take(pa.array(order))
    i = released.column_names.index(column)
    released = released.set_column(i, pa.field(column, pa.int64()), pa.array(ids[order], pa.int64()))
    groups = int(ids.max()) if len(ids) else 0
    doc = {"format": FORMAT, "version": VERSION, "column": column, "shuffle": shuffle, "groups": groups,
           "guarantee": guarantee(column, groups, shuffle)}
    sha = write_with_receipt(out, receipt, released, doc, meta=meta, inputs=[src], force=force)
    return NewIdsResult(rows=released.num_rows, groups=groups, column=column, shuffle=shuffle, data=str(src),
                        output=str(out), receipt=str(receipt), sha256=sha, key_fingerprint=secret.fingerprint,
                        seconds=time.perf_counter() - start)
