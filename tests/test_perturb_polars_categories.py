"""polars ``Categorical`` and ``Enum`` columns released as the same column held as ``String``.

The ``String`` path looks values up among the labels and writes text; the ``Categorical`` and
``Enum`` paths read the physical codes through the categories and write by the labels' codes in
the column's own dtype, made once per matrix and dtype.  The releases of one frame in the three
dtypes must be the same values, each keeping its dtype, call after call with the same manifest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pramkit import Manifest, PramMatrix, SecretKey, perturb_frame
from pramkit.errors import DataError

pl = pytest.importorskip("polars")

EUSILC = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "eusilc_laeken.csv"
KEY = SecretKey(bytes(range(32)), "polars categories")


def released(frame: pl.DataFrame, manifest: Manifest, threads: int = 1) -> pl.DataFrame:
    return perturb_frame(frame, manifest, key=KEY, threads=threads).data


@pytest.fixture(scope="module")
def eusilc() -> pl.DataFrame:
    if not EUSILC.exists():
        pytest.skip("the shared eusilc data is absent")
    return pl.read_csv(EUSILC, columns=["db040", "pb220a", "rb090"], schema_overrides={"pb220a": pl.String})


def test_eusilc_citizenship_with_missing_values_as_categorical_and_enum(eusilc: pl.DataFrame) -> None:
    text = eusilc["pb220a"]
    assert text.null_count() > 0  # children have no citizenship recorded
    labels = sorted(text.drop_nulls().unique().to_list())
    manifest = Manifest.of({"pb220a": PramMatrix.from_diagonal([0.7, 0.8, 0.9], labels)})
    expected = released(eusilc, manifest)["pb220a"]
    assert expected.null_count() == text.null_count() and (expected != text).any()
    for dtype in (pl.Categorical, pl.Enum(labels), pl.Enum(labels[::-1]), pl.Enum(["none", *labels, "zz"])):
        frame = eusilc.with_columns(pl.col("pb220a").cast(dtype))
        for threads in (1, 2, 1):  # later calls reuse what the first made for this matrix and dtype
            out = released(frame, manifest, threads)["pb220a"]
            assert out.dtype == dtype
            assert out.cast(pl.String).to_list() == expected.to_list()


def test_eusilc_region_enum_in_another_order_than_the_matrix(eusilc: pl.DataFrame) -> None:
    regions = sorted(eusilc["db040"].unique().to_list())
    rng = np.random.default_rng(3)
    matrix = PramMatrix.from_diagonal(rng.uniform(0.5, 0.9, len(regions)), regions)
    manifest = Manifest.of({"db040": matrix})
    expected = released(eusilc, manifest)["db040"].to_list()
    for order in (regions, regions[::-1], regions[1::2] + regions[::2]):
        frame = eusilc.with_columns(pl.col("db040").cast(pl.Enum(order)))
        out = released(frame, manifest)["db040"]
        assert out.dtype == pl.Enum(order) and out.cast(pl.String).to_list() == expected


@pytest.mark.parametrize("levels", [2, 57, 3000])
def test_unicode_and_whitespace_labels_in_every_dtype(levels: int) -> None:
    labels = [f" ñé {i}\t✓" if i % 2 else f"l{i} " for i in range(levels)]
    rng = np.random.default_rng(levels)
    n = 20_011
    text = pl.Series("x", labels).gather(rng.integers(0, levels, n)).scatter(rng.choice(n, 999, replace=False), None)
    manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.4, 0.95, levels), labels)})
    expected = released(pl.DataFrame({"x": text}), manifest)["x"].to_list()
    assert sum(v is None for v in expected) == 999
    for dtype in (pl.Categorical, pl.Categorical(pl.Categories("pramkit tests")), pl.Enum(labels[::-1])):
        out = released(pl.DataFrame({"x": text.cast(dtype)}), manifest)["x"]
        assert out.dtype == dtype and out.cast(pl.String).to_list() == expected


def test_enum_without_a_label_of_the_matrix_is_refused_every_call(eusilc: pl.DataFrame) -> None:
    frame = eusilc.with_columns(pl.col("rb090").cast(pl.Enum(["female", "male"])))
    manifest = Manifest.of({"rb090": PramMatrix.from_diagonal([0.8, 0.8, 0.8], ["female", "male", "other"])})
    for _ in range(2):  # the refusal is remembered with the codebook, and given again
        with pytest.raises(DataError, match=r"^column 'rb090' is a polars Enum without the categories \['other'\]"):
            released(frame, manifest)


@pytest.mark.parametrize("physical", [pl.UInt8, pl.UInt32], ids=["u8", "u32"])
def test_eusilc_regions_among_categories_other_columns_share(eusilc: pl.DataFrame, physical) -> None:
    """A ``Categorical`` whose ``Categories`` object other columns fill too (the global one holds every text
    cast to ``Categorical`` in the process): its codes are read through the categories up to its own largest
    code, whether the shared ones come before its own (high codes) or after them, of a small physical type
    or the default, and the release is that of the column as text, missing values kept."""
    regions = sorted(eusilc["db040"].unique().to_list())
    manifest = Manifest.of({"db040": PramMatrix.from_diagonal(np.linspace(0.5, 0.9, len(regions)), regions)})
    holed = eusilc.with_columns(pl.when(pl.int_range(pl.len()) % 17 == 0).then(None).otherwise(pl.col("db040"))
                                .alias("db040"))
    expected = released(holed, manifest)["db040"].to_list()
    for before in (0, 150):  # other texts of the same categories before the column's own, or none
        categories = pl.Categories.random(physical=physical)
        others = pl.Series([f"other {i}" for i in range(before)], dtype=pl.Categorical(categories))
        frame = holed.with_columns(pl.col("db040").cast(pl.Categorical(categories)))
        after = pl.Series([f"later {i}" for i in range(50)], dtype=pl.Categorical(categories))  # after it
        codes = frame["db040"].to_physical()
        assert (codes.min() >= before) and len(others) == before and len(after) == 50
        out = released(frame, manifest)["db040"]
        assert out.dtype == frame["db040"].dtype and out.to_list() == expected
