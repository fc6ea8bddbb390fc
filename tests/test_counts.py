"""Streamed frequency tables agree with pandas, whatever the chunk size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pramkit.counts import count_file, count_frame
from pramkit.datasets import census
from pramkit.errors import DataError
from pramkit.io import write_table


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return census(30_000, seed=7)


@pytest.fixture(scope="module")
def files(frame, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("counts")
    write_table(frame, d / "c.parquet")
    with_missing = frame.astype(str)
    with_missing.loc[::97, "race"] = ""
    with_missing.to_csv(d / "c.csv", index=False)
    return {"parquet": d / "c.parquet", "csv": d / "c.csv"}


@pytest.mark.parametrize("chunk_rows", [1000, 7777, 1 << 20])
def test_parquet_counts_match_pandas(frame, files, chunk_rows: int) -> None:
    cols = ["age", "sex", "race"]
    t = count_file(files["parquet"], cols, chunk_rows=chunk_rows)
    assert t.categories[0] == tuple(frame["age"].cat.categories)  # categorical order kept
    expected = frame.groupby(cols, observed=False).size()
    got = pd.Series(t.counts.ravel(), index=pd.MultiIndex.from_product(t.categories, names=cols))
    assert (got == expected.reindex(got.index)).all()
    assert t.rows == len(frame) and t.missing == 0
    np.testing.assert_array_equal(t.margin("sex"), frame["sex"].value_counts()[list(t.categories[1])].to_numpy())


def test_csv_counts_with_missing_values(frame, files) -> None:
    t = count_file(files["csv"], ["race", "sex"], chunk_rows=2000)
    missing = len(range(0, len(frame), 97))
    assert t.missing == missing and t.counts.sum() == len(frame) - missing
    assert t.categories[0] == tuple(sorted(frame["race"].cat.categories))  # text columns: sorted
    kept = frame.drop(index=frame.index[::97])
    assert t.margin("race").tolist() == [int((kept["race"] == r).sum()) for r in t.categories[0]]


def test_declared_categories_and_errors(frame, files) -> None:
    cats = {"sex": ["male", "female", "other"]}
    t = count_file(files["csv"], ["sex"], categories=cats)
    assert t.categories == (("male", "female", "other"),) and t.counts[2] == 0
    with pytest.raises(DataError, match="value 'female' is not one of its categories"):
        count_file(files["csv"], ["sex"], categories={"sex": ["male"]})
    with pytest.raises(DataError, match=r"\['nope'\]"):
        count_file(files["csv"], ["nope"])


def test_count_frame_equals_count_file(frame, files) -> None:
    a = count_frame(frame, ["education", "employment"])
    b = count_file(files["parquet"], ["education", "employment"])
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.proportions("employment").sum() == pytest.approx(1.0)
