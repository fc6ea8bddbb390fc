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

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey, resolve_key, words_at

__all__ = ["NEW_IDS_STREAM", "ROWS_STREAM", "SHUFFLES", "new_ids"]

#: The stream of the permutation of the distinct ids (a name no column can take).
NEW_IDS_STREAM = "\x00pramkit:new ids"
#: The stream of the order of the rows.
ROWS_STREAM = "\x00pramkit:new ids rows"
#: The orders of the rows :func:`new_ids` can give.
SHUFFLES = ("households", "within", "records", "none")


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
    if shuffle not in SHUFFLES:
        raise ParameterError(f"shuffle must be one of {', '.join(SHUFFLES)}, got {shuffle!r}")
    secret = resolve_key(key)
    try:
        old, distinct = pd.factorize(frame[column], sort=True, use_na_sentinel=False)
    except TypeError:  # values of types that do not sort together: their texts, sorted
        old, distinct = pd.factorize(frame[column].map(lambda v: f"{type(v).__name__}\x1f{v!r}"), sort=True,
                                     use_na_sentinel=False)
    keyed = secret.for_data("new ids", _digest(str(column), pd.Index(distinct)))
    h = len(distinct)
    words = words_at(keyed, NEW_IDS_STREAM, np.arange(h))
    order = np.lexsort((np.arange(h), words))  # the distinct ids by (word, position)
    rank = np.empty(h, dtype=np.int64)
    rank[order] = np.arange(1, h + 1)
    ids = rank[old]
    n = len(frame)
    rows = words_at(keyed, ROWS_STREAM, np.arange(n)) if shuffle in ("within", "records") else np.zeros(n, np.uint64)
    position = np.arange(n)
    if shuffle == "none":
        permutation = position
    elif shuffle == "records":
        permutation = np.lexsort((position, rows))
    else:  # by new id; within a group by position ("households") or by (word, position) ("within")
        permutation = np.lexsort((position, rows, ids))
    out = frame.iloc[permutation].copy()
    out[column] = ids[permutation]
    return out.reset_index(drop=True)
