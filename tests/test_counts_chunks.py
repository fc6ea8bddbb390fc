"""Counting passes choose their chunk by the bytes it holds: the counts never depend on the chunk.

:func:`pramkit.counts.count_groups` and :func:`pramkit.counts.count_file` read a file (and encode a
DataFrame) in chunks of :func:`pramkit.counts.chunk_rows_for` rows unless told otherwise.  Checked
against counts made record by record in Python (``collections.Counter``), with missing values,
Unicode and whitespace variants of labels, categoricals and plain text, in chunks of one row to
more than the file.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit.counts
from pramkit.counts import CHUNK_BYTES_PER_VALUE, chunk_rows_for, count_file, count_groups
from pramkit.defaults import CHUNK_ROWS

LABELS = ["Zürich", "zürich ", "日本", "a, b", 'q"', "north", None]


def _brute(frame: pd.DataFrame, columns: list[str]) -> tuple[collections.Counter, int]:
    """Each combination's records, and the records with a missing value, counted one by one."""
    seen: collections.Counter = collections.Counter()
    missing = 0
    for row in frame[columns].itertuples(index=False):
        if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in row):
            missing += 1
        else:
            seen[tuple(row)] += 1
    return seen, missing


def _as_counter(table) -> collections.Counter:
    out: collections.Counter = collections.Counter()
    for index in np.ndindex(*table.counts.shape):
        if table.counts[index]:
            out[tuple(cats[i] for cats, i in zip(table.categories, index))] = int(table.counts[index])
    return out


frames = st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from(LABELS), min_size=n, max_size=n),
    st.lists(st.sampled_from(["f", "m", None]), min_size=n, max_size=n),
    st.booleans(), st.integers(1, n + 2)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames)
def test_a_frame_counts_the_same_in_any_chunk(case) -> None:
    place, sex, categorical, chunk = case
    frame = pd.DataFrame({"place": place, "sex": sex})
    if categorical:
        frame["place"] = frame["place"].astype("category")
    expected, missing = _brute(frame.astype(object).where(frame.notna(), None), ["place", "sex"])
    whole = count_groups(frame, [["place", "sex"]]).tables[0]
    chunked = count_groups(frame, [["place", "sex"]], chunk_rows=chunk).tables[0]
    assert _as_counter(chunked) == expected and chunked.missing == missing == whole.missing
    assert chunked.categories == whole.categories and np.array_equal(chunked.counts, whole.counts)


@pytest.mark.parametrize("chunk", [1, 3, 64, None])
def test_a_file_counts_the_same_in_any_chunk(tmp_path, monkeypatch, chunk) -> None:
    rng = np.random.default_rng(11)
    n = 500
    frame = pd.DataFrame({"place": rng.choice(np.array(LABELS, dtype=object), n),
                          "sex": rng.choice(np.array(["f", "m", None], dtype=object), n)})
    path = tmp_path / "f.csv"
    frame.to_csv(path, index=False)
    read = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=["", "NA"])
    expected, missing = _brute(read.astype(object).where(read.notna(), None), ["place", "sex"])
    if chunk is None:  # the default chunk, made a few rows by a small budget
        monkeypatch.setattr(pramkit.counts, "CHUNK_BYTES", 2 * 5 * CHUNK_BYTES_PER_VALUE)
    table = count_file(path, ["place", "sex"], chunk_rows=chunk)
    groups = count_groups(path, [["place", "sex"]], chunk_rows=chunk).tables[0]
    assert _as_counter(table) == _as_counter(groups) == expected and table.missing == missing


def test_the_chunk_holds_about_the_budget() -> None:
    for columns in range(1, 40):
        rows = chunk_rows_for(columns)
        assert 1 <= rows <= CHUNK_ROWS
        assert rows * columns * CHUNK_BYTES_PER_VALUE <= pramkit.counts.CHUNK_BYTES
        assert rows == CHUNK_ROWS or (rows + 1) * columns * CHUNK_BYTES_PER_VALUE > pramkit.counts.CHUNK_BYTES
