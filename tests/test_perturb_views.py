"""polars text read and written as Arrow string views (no copy to ``large_string``).

A polars ``String`` column is looked up in its own string views
(:meth:`pramkit.kernel.utf8.Utf8Labels.encode`) and released as one gather of
the labels' views (:class:`pramkit.frames.PolarsText`).  Each is checked
against brute force (a Python dictionary of the labels, a list of labels by
code) and a release against the same frame released through pandas object
columns, a path that shares neither the lookup nor the writing of text: the
random stream is keyed by (variable, row), so both must give the same values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from pramkit import Manifest, PramMatrix, SecretKey, perturb_frame
from pramkit.errors import DataError, PramkitError
from pramkit.frames import PolarsText
from pramkit.kernel import _kernels
from pramkit.kernel.utf8 import Utf8Labels

pl = pytest.importorskip("polars")

#: labels that differ only by Unicode normalisation, case or whitespace, and lengths around the
#: boundaries of the lookup (12 bytes inline in a view, 16 and 24 bytes read as whole words)
VARIANTS = ["a", "a ", " a", "A", "\u00e9", "e\u0301", "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9",
            "x" * 12, "x" * 13, "y" * 16, "y" * 17, "z" * 24, "z" * 25, "long " * 9, "\t", "", "日本語のラベル"]


def labels_of(levels: int) -> list[str]:
    """``levels`` distinct labels: the variants first, then numbered ones of varying lengths."""
    extra = [f"level {i}" + " pad" * (i % 5) for i in range(max(0, levels - len(VARIANTS)))]
    return (VARIANTS + extra)[:levels]


def column(labels: list[str], n: int, missing: float, seed: int) -> list[str | None]:
    rng = np.random.default_rng(seed)
    values = np.array(labels, dtype=object)[rng.integers(0, len(labels), n)]
    values[rng.random(n) < missing] = None
    return values.tolist()


def manifest(labels: list, seed: int) -> Manifest:
    rng = np.random.default_rng(seed)
    return Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.3, 0.9, len(labels)), labels)})


def as_list(data: object) -> list:
    if isinstance(data, pd.DataFrame):
        return [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v
                for v in data["x"].tolist()]
    return data.collect()["x"].to_list() if hasattr(data, "collect") else data["x"].to_list()


@pytest.fixture
def key() -> SecretKey:
    return SecretKey(bytes(range(32)), "views")


@pytest.mark.parametrize("levels", [2, 5, 17, 300, 5000])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_encode_views_matches_a_dictionary(levels: int, missing: float) -> None:
    labels = labels_of(levels)
    values = column([*labels, "not a label", "not a label either, longer"], 20_000, missing, levels)
    values[:3] = [labels[0], labels[-1], labels[0]]  # the first unknown value is past them
    book = Utf8Labels(pa.array(labels, pa.large_string()))
    where = {t: i for i, t in enumerate(labels)}
    series = pl.Series("x", values)
    for array in (series.to_arrow(compat_level=pl.CompatLevel.newest()), pa.array(values, pa.string_view())):
        for start in (0, 7):  # a slice: views from an offset, validity bits from it
            part = array.slice(start)
            codes, first = book.encode(part, missing_code=-1, unknown_code=-2)
            expected = [-1 if v is None else where.get(v, -2) for v in values[start:]]
            assert codes.tolist() == expected
            assert first == (expected.index(-2) if -2 in expected else -1)


def test_views_in_several_data_buffers() -> None:
    """polars keeps long values in several buffers when a column was put together from parts."""
    labels = [f"a label longer than twelve bytes, number {i}" for i in range(40)]
    parts = [pl.Series("x", column(labels, 5_000, 0.05, seed)) for seed in range(4)]
    array = pl.concat(parts, rechunk=False).to_arrow(compat_level=pl.CompatLevel.newest())
    assert len(array.buffers()) > 3  # validity, views, then more than one buffer of bytes
    book = Utf8Labels(pa.array(labels))
    codes, first = book.encode(array, missing_code=-1, unknown_code=-2)
    values = array.to_pylist()
    assert first == -1
    assert codes.tolist() == [-1 if v is None else labels.index(v) for v in values]


def test_a_view_outside_its_buffers_is_refused() -> None:
    labels = Utf8Labels(pa.array(["a"]))
    view = np.zeros(16, dtype=np.uint8)
    view[:4] = np.frombuffer(np.int32(20).tobytes(), np.uint8)  # 20 bytes in buffer 0 at 0: there is none
    with pytest.raises(ValueError, match="outside its buffers"):
        _kernels.utf8_encode_views(view, 0, None, (), labels.offsets, labels.data, labels.slots, labels.seed, -1, -2,
                                   np.empty(1, dtype=np.intp))


@pytest.mark.parametrize("levels", [2, 17, 300])
def test_polars_text_writes_labels_by_code(levels: int) -> None:
    labels = labels_of(levels)
    with_null = [*labels[:1], None, *labels[1:]]  # a label that is the missing category writes a missing value
    for table in (labels, with_null):
        codes = np.random.default_rng(levels).integers(-1, len(table), 10_000)
        out = PolarsText(pa.array(table, pa.large_string()), "x")(codes)
        assert out.dtype == pl.String and out.name == "x"
        assert out.to_list() == [None if c < 0 else table[c] for c in codes]


@pytest.mark.parametrize("levels", [2, 13, 257, 5000])
@pytest.mark.parametrize("missing", [0.0, 0.07])
def test_polars_string_release_is_the_object_column_release(levels: int, missing: float, key: SecretKey) -> None:
    labels = labels_of(levels)
    values = column(labels, 12_000, missing, levels)
    m = manifest(labels, levels)
    expected = as_list(perturb_frame(pd.DataFrame({"x": pd.Series(values, dtype=object)}), m, key=key).data)
    frame = pl.DataFrame({"x": pl.Series(values, dtype=pl.String)})
    for data in (frame, frame.lazy()):
        for threads in (1, 2):
            out = perturb_frame(data, m, key=key, threads=threads).data
            out = out.collect() if hasattr(out, "collect") else out
            assert out.schema["x"] == pl.String
            assert out["x"].to_list() == expected
    assert sum(a != b for a, b in zip(values, expected)) > 0  # the release moved values


def test_polars_string_with_an_unknown_value_is_refused(key: SecretKey) -> None:
    labels = labels_of(20)
    values = column(labels, 1_000, 0.1, 3)
    values[600] = "a " + labels[-1]  # a whitespace variant of a label is another value
    with pytest.raises(DataError, match=r"column 'x', row 601: value 'a level 2 pad pad' is not one of"):
        perturb_frame(pl.DataFrame({"x": values}), manifest(labels, 3), key=key)


def test_eusilc_text_as_polars_string(sdc_data: Path, key: SecretKey) -> None:
    """EU-SILC's region, sex and economic status (missing for children) as polars text: the release of the
    polars frame is the release of the same text as pandas object columns."""
    raw = pd.read_csv(sdc_data / "eusilc_laeken.csv", dtype={"pl030": str})
    text = raw[["db040", "rb090", "pl030"]].astype(object).where(raw[["db040", "rb090", "pl030"]].notna(), None)
    assert text["pl030"].isna().sum() > 1_000
    rng = np.random.default_rng(5)
    m = Manifest.of({c: PramMatrix.from_diagonal(rng.uniform(0.5, 0.9, text[c].nunique()),
                                                  sorted(text[c].dropna().unique())) for c in text})
    expected = perturb_frame(text, m, key=key).data
    out = perturb_frame(pl.from_pandas(text), m, key=key).data
    for c in text:
        assert out[c].dtype == pl.String
        assert out[c].to_list() == [None if v is None or v is pd.NA or v != v else v for v in expected[c].tolist()]


def test_unknown_value_message_is_one_line_for_the_cli(key: SecretKey) -> None:
    with pytest.raises(PramkitError) as caught:
        perturb_frame(pl.DataFrame({"x": ["a", "b", "c"]}), manifest(["a", "b"], 1), key=key)
    assert "\n" not in str(caught.value)

