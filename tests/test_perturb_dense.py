"""Integer columns and dictionary indices found among their labels by one compiled pass over a table indexed
by value.

Checked against brute force (a Python dictionary of the labels) on every
integer width, with nulls, slices, values below and above the labels' range,
and on EU-SILC's integer columns with their missing values, whose release is
checked against the same values released as floats (found value by value, and
written by another path).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from pramkit import Manifest, PramMatrix, SecretKey, perturb_frame
from pramkit.codebook import Codebook
from pramkit.errors import DataError


@pytest.mark.parametrize("width", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()])
@pytest.mark.parametrize("labels", [[0, 1, 2], [3, 5, 9, 60], list(range(100, 127)), [-4, 0, 7]])
def test_codes_of_integers_match_a_dictionary(width: pa.DataType, labels: list[int]) -> None:
    if pa.types.is_unsigned_integer(width) and min(labels) < 0:
        pytest.skip("negative labels are no values of an unsigned type")
    rng = np.random.default_rng(len(labels))
    values = rng.choice(labels, 5_000).tolist()
    for i in rng.choice(5_000, 300, replace=False):
        values[i] = None
    array = pa.array(values, type=width)
    book = Codebook(labels, column="x")
    where = {v: i for i, v in enumerate(labels)}
    for start in (0, 3, 13):  # slices: values and validity bits from an offset
        codes = book.encode(array.slice(start))
        assert codes.tolist() == [-1 if v is None else where[v] for v in values[start:]]


@pytest.mark.parametrize("stray", [-1, 2, 64, 10**12, -10**12])
def test_an_integer_outside_the_labels_is_named(stray: int) -> None:
    labels = [0, 1, 3]
    values = pa.array([0, None, 3, 1, stray, 0], type=pa.int64())
    book = Codebook(labels, column="x")
    with pytest.raises(DataError, match=rf"column 'x', row 15: value {stray} is not one of its categories"):
        book.encode(values, first_row=10)


def test_eusilc_integers_with_missing_values(sdc_data: Path) -> None:
    """EU-SILC's household size and economic status (missing for children) as nullable integers: released
    as the same values as when the columns are floats (3.0 is the category 3), which are found value by value."""
    raw = pd.read_csv(sdc_data / "eusilc_laeken.csv", usecols=["hsize", "pl030"])
    ints = raw.astype("Int64")
    assert ints["pl030"].isna().sum() > 1_000
    rng = np.random.default_rng(11)
    levels = {c: sorted(int(v) for v in ints[c].dropna().unique()) for c in ints}
    key = SecretKey(bytes(range(32)), "dense")
    manifest = Manifest.of({c: PramMatrix.from_diagonal(rng.uniform(0.5, 0.9, len(v)), v) for c, v in levels.items()})
    released = perturb_frame(ints, manifest, key=key).data
    floats = perturb_frame(ints.astype(float), manifest, key=key).data  # found value by value, not by the table
    for c in ints:
        got = [None if v is pd.NA else int(v) for v in released[c].tolist()]
        assert got == [None if v != v else int(v) for v in floats[c].tolist()]
        assert any(a != b for a, b in zip(got, ints[c].tolist()) if a is not None)


@pytest.mark.parametrize("index_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32()])
@pytest.mark.parametrize("order", ["categories", "shuffled", "extra"])
def test_codes_of_dictionary_indices_match_a_dictionary(index_type: pa.DataType, order: str) -> None:
    """Indices of every width, with nulls, of a dictionary that is the categories in order, in another order,
    or with an entry that is no category (unused, then used)."""
    categories = ["a", "b", "c", "d", "e"]
    entries = {"categories": categories, "shuffled": ["d", "a", "e", "c", "b"], "extra": ["c", "zz", "a", "b"]}[order]
    rng = np.random.default_rng(len(entries))
    used = [i for i, e in enumerate(entries) if e in categories]
    indices = rng.choice(used, 4_000).tolist()
    for i in rng.choice(4_000, 250, replace=False):
        indices[i] = None
    array = pa.DictionaryArray.from_arrays(pa.array(indices, type=index_type), pa.array(entries))
    book = Codebook(categories, column="x")
    for start in (0, 9):
        codes = book.encode(array.slice(start))
        assert codes.tolist() == [-1 if i is None else categories.index(entries[i]) for i in indices[start:]]
    if order == "extra":
        indices[17] = entries.index("zz")
        with pytest.raises(DataError, match="row 18: value 'zz' is not one of its categories"):
            book.encode(pa.DictionaryArray.from_arrays(pa.array(indices, type=index_type), pa.array(entries)))


def test_polars_categorical_with_missing_values_released_as_text() -> None:
    """A polars Categorical column (uint32 indices with nulls) is released as its String twin is."""
    pl = pytest.importorskip("polars")
    labels = ["north", "south", "east", "west", " east", "East"]
    rng = np.random.default_rng(4)
    values = np.array(labels, dtype=object)[rng.integers(0, 6, 6_000)]
    values[rng.random(6_000) < 0.1] = None
    manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.4, 0.9, 6), labels)})
    key = SecretKey(bytes(range(32)), "dense")
    text = perturb_frame(pl.DataFrame({"x": pl.Series(values.tolist(), dtype=pl.String)}), manifest, key=key).data
    for dtype in (pl.Categorical, pl.Enum(labels)):
        frame = pl.DataFrame({"x": pl.Series(values.tolist(), dtype=pl.String).cast(dtype)})
        out = perturb_frame(frame, manifest, key=key).data
        assert out["x"].dtype == dtype
        assert out["x"].cast(pl.String).to_list() == text["x"].to_list()
