"""Text columns released by ``perturb_frame`` are the labels of the codes a categorical column releases.

A pandas ``str`` or ``object`` column, a polars ``String`` column and a ``LazyFrame`` of it are
found among their labels and written back as text by compiled loops of their own
(:mod:`pramkit.kernel.utf8`).  A pandas categorical column of the same values shares neither: its
codes are pandas' own, and its release is written as a categorical.  The draws are keyed by
(variable, row), so each text release must be, value for value, the label (taken here by a Python
list) of the code the categorical release holds.  The labels are real (the census file's, EU-SILC's
and the NIST CRC ACS excerpt's), and made to cross the lengths where the loops change how they read and
write a value (12 bytes inline in a string view, 16 and 24 bytes of whole words), with Unicode,
whitespace and missing values, from 2 to 5000 levels, on one thread and two.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from pramkit import Manifest, PramMatrix, SecretKey, perturb_frame
from pramkit.datasets import census
from pramkit.errors import PramkitError
from pramkit.kernel.utf8 import Utf8Labels

pl = pytest.importorskip("polars")

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"

#: labels around the lengths where the loops change (12, 16, 24 bytes), Unicode and whitespace ones
EDGES = ["a", " a", "a ", "\t", "é", "e\u0301", "日本語のラベル", "x" * 12, "x" * 13, "y" * 16, "y" * 17,
         "z" * 23, "z" * 24, "z" * 25, "married, spouse present", "married, spouse absent", "long " * 9]


def census_labels() -> list[str]:
    """Every category of the census file's categorical columns (2 to 23 bytes), once."""
    data = census(200)
    found = {str(c) for name in data.columns if isinstance(data[name].dtype, pd.CategoricalDtype)
             for c in data[name].cat.categories}
    return sorted(found)


def labels_of(levels: int) -> list[str]:
    """``levels`` distinct labels: the census ones and the edges, then numbered ones of lengths 7 to 40."""
    base = list(dict.fromkeys(census_labels() + EDGES))
    extra = [f"level {i}" + " pad" * (i % 9) for i in range(max(0, levels - len(base)))]
    return (base + extra)[:levels]


def release_by_categories(values: list[str | None], labels: list[str], manifest: Manifest,
                          key: SecretKey) -> list[str | None]:
    """The release of ``values`` as a pandas categorical column, its codes taken as labels by a list."""
    frame = pd.DataFrame({"x": pd.Categorical(values, categories=labels)})
    codes = perturb_frame(frame, manifest, key=key, threads=1).data["x"].cat.codes.to_numpy()
    return [None if c < 0 else labels[c] for c in codes]


def as_list(data: object) -> list[str | None]:
    """The column ``x`` of a released frame as Python values (``None`` where missing)."""
    if hasattr(data, "collect"):
        data = data.collect()
    values = data["x"].to_list() if not isinstance(data, pd.DataFrame) else data["x"].tolist()
    return [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v for v in values]


def one_per_value(values: list[str | None]) -> pd.Series:
    """The values as Python strings made one per value (``astype(object)`` of Arrow text), not shared."""
    return pd.Series(pa.array(values, pa.large_string())).astype(object)


def text_frames(values: list[str | None]) -> dict[str, object]:
    """The same values as each text kind that perturb_frame reads: pandas ``str``, ``object`` (strings
    shared among equal values, and made one per value), polars ``String`` and a LazyFrame of it."""
    series = pl.Series("x", values, dtype=pl.String)
    return {
        "str": pd.DataFrame({"x": pd.Series(values, dtype=object).astype("str")}),
        "object": pd.DataFrame({"x": pd.Series(values, dtype=object)}),
        "object, one string per value": pd.DataFrame({"x": one_per_value(values)}),
        "polars": pl.DataFrame({"x": series}),
        "lazy": pl.DataFrame({"x": series}).lazy(),
    }


def check_kinds(values: list[str | None], labels: list[str], manifest: Manifest, key: SecretKey) -> None:
    """Every text kind, on one thread and two, releases the labels of the categorical release's codes."""
    expected = release_by_categories(values, labels, manifest, key)
    assert sum(a != b for a, b in zip(values, expected)) > 0  # the release moved values
    for kind, frame in text_frames(values).items():
        for threads in (1, 2):
            out = as_list(perturb_frame(frame, manifest, key=key, threads=threads).data)
            assert out == expected, (kind, threads)


@pytest.fixture
def key() -> SecretKey:
    return SecretKey(bytes(range(7, 39)), "text release")


@pytest.mark.parametrize("levels", [2, 5, 43, 300, 5000])
@pytest.mark.parametrize("missing", [0.0, 0.08])
def test_text_release_is_the_labels_of_the_categorical_release(levels: int, missing: float,
                                                                  key: SecretKey) -> None:
    labels = labels_of(levels)
    rng = np.random.default_rng(levels)
    values: list[str | None] = list(np.array(labels, dtype=object)[rng.integers(0, levels, 20_000)])
    for i in np.flatnonzero(rng.random(len(values)) < missing):
        values[i] = None
    manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.3, 0.9, levels), labels)})
    check_kinds(values, labels, manifest, key)


def test_census_labels_of_2_to_23_bytes(key: SecretKey) -> None:
    """The census file's marital status, education and employment as text, with its own frequencies."""
    data = census(30_000, seed=11)
    rng = np.random.default_rng(3)
    for name in ("marital_status", "education", "employment"):
        labels = [str(c) for c in data[name].cat.categories]
        assert max(len(t.encode()) for t in labels) > 16 > min(len(t.encode()) for t in labels)
        values = [str(v) for v in data[name]]
        manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.5, 0.9, len(labels)), labels)})
        check_kinds(values, labels, manifest, key)


def test_eusilc_economic_status_with_missing_values(sdc_data: Path, key: SecretKey) -> None:
    """EU-SILC's economic status (missing for every child) and region as text."""
    raw = pd.read_csv(sdc_data / "eusilc_laeken.csv", dtype={"pl030": str, "db040": str})
    rng = np.random.default_rng(4)
    for name in ("pl030", "db040"):
        column = raw[name]
        values = [None if pd.isna(v) else v for v in column]
        labels = sorted(column.dropna().unique())
        manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.5, 0.9, len(labels)), labels)})
        check_kinds(values, labels, manifest, key)
    assert raw["pl030"].isna().sum() > 1_000


def test_nist_acs_codes(key: SecretKey) -> None:
    """The NIST CRC ACS excerpt's PUMA codes and industry codes (missing where the file writes N) as text."""
    if not NIST.exists():
        pytest.skip("the NIST CRC data are not here")
    raw = pd.read_csv(NIST, dtype=str, usecols=["PUMA", "INDP"])
    rng = np.random.default_rng(6)
    for name in ("PUMA", "INDP"):
        column = raw[name].where(raw[name] != "N", None)
        values = [None if pd.isna(v) else v for v in column]
        labels = sorted(column.dropna().unique())
        manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.5, 0.9, len(labels)), labels)})
        check_kinds(values, labels, manifest, key)


def test_a_value_that_is_no_label_is_refused_in_one_line(key: SecretKey) -> None:
    labels = census_labels()
    values = [labels[i % len(labels)] for i in range(3_000)]
    values[2_500] = labels[5] + " "  # a label with a trailing space is another value
    manifest = Manifest.of({"x": PramMatrix.from_diagonal([0.8] * len(labels), labels)})
    for kind, frame in text_frames(values).items():
        with pytest.raises(PramkitError) as caught:
            as_list(perturb_frame(frame, manifest, key=key).data)
        assert "row 2501" in str(caught.value) and "\n" not in str(caught.value), kind


def test_object_strings_shared_then_one_per_value(key: SecretKey) -> None:
    """A column of Python strings whose first half is one string per value and second half shared strings
    (the remembered addresses are used, given up and taken up again) encodes as a dictionary says, and
    releases the labels of the categorical release."""
    labels = labels_of(300)
    rng = np.random.default_rng(12)
    values: list[str | None] = list(np.array(labels, dtype=object)[rng.integers(0, 300, 90_000)])
    for i in np.flatnonzero(rng.random(len(values)) < 0.03):
        values[i] = None
    half = len(values) // 2
    mixed = pd.concat([one_per_value(values[:half]), pd.Series(values[half:], dtype=object)], ignore_index=True)
    assert mixed.iloc[:100].map(id).nunique() > 90 and mixed.iloc[half:].map(id).nunique() <= 301
    where = {t: i for i, t in enumerate(labels)}
    codes = Utf8Labels(pa.array(labels, pa.string())).encode_objects(mixed.to_numpy())
    assert codes is not None and codes.to_pylist() == [None if v is None else where[v] for v in values]
    manifest = Manifest.of({"x": PramMatrix.from_diagonal(rng.uniform(0.3, 0.9, 300), labels)})
    expected = release_by_categories(values, labels, manifest, key)
    assert as_list(perturb_frame(pd.DataFrame({"x": mixed}), manifest, key=key).data) == expected


def test_strings_read_in_place_against_a_dictionary() -> None:
    """Python strings of 0 to 40 characters, ASCII (read in place up to 24 bytes) or not, with NUL and
    whitespace, known or not (strangers one byte off a label of 17 to 24 bytes), one per value: the codes a
    dictionary gives, ``None`` at the first stranger."""
    rng = np.random.default_rng(13)
    alphabet = np.array(list("ab \t\x00zé東"))
    labels = list(dict.fromkeys(["", "a", "a\x00", "x" * 16, "x" * 17, *EDGES,
                                 *("".join(rng.choice(alphabet, k)) for k in rng.integers(0, 41, 400)),
                                 *("".join(rng.choice(alphabet[:6], k)) for k in rng.integers(12, 25, 200))]))
    book = Utf8Labels(pa.array(labels, pa.string()))
    where = {t: i for i, t in enumerate(labels)}
    values = [labels[i] for i in rng.integers(0, len(labels), 5_000)]
    codes = book.encode_objects(one_per_value(values).to_numpy())
    assert codes is not None and codes.to_pylist() == [where[v] for v in values]
    for stranger in ("x" * 15, "x" * 18, "a\x00\x00", "A", "\x00", "x" * 16 + "\x00", "z" * 22, "married, spouse presen",
                     "married, spouse presenT", "married, spouse present ", "married, spouse absent\x00"):
        if stranger not in where:
            assert book.encode_objects(one_per_value([*values[:50], stranger]).to_numpy()) is None
