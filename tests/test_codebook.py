"""Values to codes and back (pramkit.codebook), against a plain Python dictionary lookup."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from pramkit.codebook import Codebook, MissingCodes, decode, encode
from pramkit.engine.perturb import PARALLEL_ROWS, perturb_frame
from pramkit.errors import DataError
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix


def text_of(value) -> str | None:
    """The matching rule of the module docstring, written out independently of pramkit.codebook.canonical."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return str(value)


def reference(values: list, categories: list, missing: str = "keep") -> list[int]:
    """Codes by a dictionary lookup, value by value (KeyError for a value that is no category)."""
    lookup = {text_of(c): i for i, c in enumerate(categories)}
    return [(lookup[None] if missing == "category" else -1) if text_of(v) is None else lookup[text_of(v)]
            for v in values]


TEXT = ["b", None, "a", "c", "a", None, "b"]
#: (name, the column as given to encode, its values as Python objects, categories)
CASES = [
    ("list of text", TEXT, TEXT, ["a", "b", "c"]),
    ("arrow string", pa.array(TEXT, pa.string()), TEXT, ["c", "b", "a"]),
    ("arrow large_string", pa.array(TEXT, pa.large_string()), TEXT, ["a", "b", "c"]),
    ("pandas str", pd.Series(TEXT, dtype="str"), TEXT, ["a", "b", "c"]),
    ("object with NaN", pd.Series(["a", np.nan, "b", None], dtype=object), ["a", None, "b", None], ["a", "b"]),
    ("int-like text", pa.array(["1", "01", "10", None, "-3", "1"]), ["1", "01", "10", None, "-3", "1"],
     [1, "01", 10, -3]),
    ("int64 with nulls", pa.array([3, None, 1, 2, 3], pa.int64()), [3, None, 1, 2, 3], [1, 2, 3]),
    ("int64, text labels", pa.array([3, 1, 2], pa.int64()), [3, 1, 2], ["1", "2", "3"]),
    ("int8, negative labels", pa.array([-100, 100, 0, None], pa.int8()), [-100, 100, 0, None], [100, 0, -100]),
    ("uint64", pa.array([2, 2**63 + 5, 7], pa.uint64()), [2, 2**63 + 5, 7], [7, 2, 2**63 + 5]),
    ("int64, wide range", pa.array([10**12, -5, 10**12]), [10**12, -5, 10**12], [-5, 10**12]),
    ("float with NaN and -0.0", pa.array([1.0, float("nan"), -0.0, 0.5, None]), [1.0, None, -0.0, 0.5, None],
     [0, 1, 0.5]),
    ("bool", pa.array([True, False, None, True]), [True, False, None, True], [False, True]),
    ("numpy int", np.array([5, 6, 5]), [5, 6, 5], [6, 5]),
    ("pandas Int64", pd.Series([1, None, 2], dtype="Int64"), [1, None, 2], [1, 2]),
    ("pandas categorical with unused categories",
     pd.Series(pd.Categorical(["x", None, "y", "x"], categories=["z", "y", "x", "unused, not a label"])),
     ["x", None, "y", "x"], ["x", "y", "z"]),
    ("pandas ordered categorical of ints", pd.Series(pd.Categorical([2, 1, None, 2], categories=[2, 1], ordered=True)),
     [2, 1, None, 2], [1, 2]),
    ("categorical made from the categories", pd.Series(pd.Categorical(["b", None, "a"], categories=["a", "b", "c"])),
     ["b", None, "a"], ["a", "b", "c"]),
    ("arrow dictionary of the categories, int64 indices",
     pa.DictionaryArray.from_arrays(pa.array([2, 0, 1], pa.int64()), pa.array(["a", "b", "c"])),
     ["c", "a", "b"], ["a", "b", "c"]),
    ("arrow dictionary with a null entry",
     pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 0], pa.int8()), pa.array(["a", None, "b"])),
     ["a", None, "b", None, "a"], ["a", "b"]),
    ("chunked dictionaries, different per chunk",
     pa.chunked_array([pa.array(["a", "b", None]).dictionary_encode(), pa.array(["c", "a"]).dictionary_encode()]),
     ["a", "b", None, "c", "a"], ["a", "b", "c"]),
    ("chunked text", pa.chunked_array([["a", None], [], ["b", "a"]]), ["a", None, "b", "a"], ["a", "b"]),
    ("chunked dictionary of floats",
     pa.chunked_array([pa.array([1.0, 2.0, 1.0]).dictionary_encode()]), [1.0, 2.0, 1.0], [1, 2]),
]


@pytest.mark.parametrize("name, column, values, categories", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("missing", ["keep", "category"])
def test_encode_matches_a_dictionary_lookup(name, column, values, categories, missing) -> None:
    cats = categories + [None] if missing == "category" else categories
    expected = reference(values, cats, missing)
    codes = encode(column, cats, column="x", missing=missing)
    assert codes.dtype == np.intp
    assert codes.tolist() == expected
    book = Codebook(cats, column="x", missing=missing)
    for _ in range(2):  # the codebook's caches give the same answer again
        again = book.encode(column)
        assert again.tolist() == expected
        again[:] = 0  # the codes are the caller's to change, never a view of the column


def test_encode_without_copy_may_be_a_read_only_view() -> None:
    """copy=False gives the codes of a dictionary of the categories in order as a read-only view of its int64
    indices (what the perturber draws from into memory of its own); the same codes as copy=True, which are
    the caller's; anything else is a new array either way."""
    book = Codebook(["a", "b", "c"], column="x")
    indices = pa.array(np.array([2, 0, 1, 1], dtype=np.int64))
    column = pa.DictionaryArray.from_arrays(indices, pa.array(["a", "b", "c"]))
    view, own = book.encode(column, copy=False), book.encode(column)
    assert view.tolist() == own.tolist() == [2, 0, 1, 1]
    assert not view.flags.writeable and np.shares_memory(view, np.frombuffer(indices.buffers()[1], np.int64))
    assert own.flags.writeable and not np.shares_memory(own, view)
    with_null = pa.DictionaryArray.from_arrays(pa.array([2, None], pa.int64()), pa.array(["a", "b", "c"]))
    assert book.encode(with_null, copy=False).tolist() == [2, -1]
    assert book.encode(pa.array(["c", "a"]), copy=False).flags.writeable


def test_perturbing_a_dictionary_view_leaves_the_column_as_it_was() -> None:
    """A column whose codes are a view of its indices is drawn into new memory: the column is unchanged, and
    the release is the one of the same values as text."""
    from pramkit.engine.perturb import perturb_frame
    from pramkit.kernel.rng import SecretKey
    from pramkit.matrix import PramMatrix

    rng = np.random.default_rng(5)
    labels = ["a", "b", "c"]
    indices = rng.integers(0, 3, 5000)
    dictionary = pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(labels))
    frame = pd.DataFrame({"x": pd.Series(pd.array(dictionary, dtype=pd.ArrowDtype(dictionary.type)))})
    manifest = Manifest.of({"x": PramMatrix.from_diagonal(np.array([0.5, 0.6, 0.7]), labels)})
    key = SecretKey(bytes(32), "test")
    released = perturb_frame(frame, manifest, key=key, threads=1).data
    assert np.array_equal(np.frombuffer(dictionary.indices.buffers()[1], np.int64)[:indices.size], indices)
    as_text = perturb_frame(pd.DataFrame({"x": np.array(labels, dtype=object)[indices]}), manifest, key=key,
                            threads=1).data
    assert released["x"].astype(str).tolist() == as_text["x"].tolist()
    assert (released["x"].astype(str) != frame["x"].astype(str)).mean() > 0.3  # it was perturbed


def test_codebook_reused_across_chunks_with_new_dictionaries() -> None:
    book = Codebook(["a", "b", "c"], column="x")
    first = pa.array(["a", "c"]).dictionary_encode()
    second = pa.array(["c", "b", "b"]).dictionary_encode()
    assert book.encode(first).tolist() == [0, 2]
    assert book.encode(second).tolist() == [2, 1, 1]
    assert book.encode(first).tolist() == [0, 2]


UNKNOWN = [
    ("text", pa.array(["a", "b", "zz", "q"]), ["a", "b"], 3, "'zz'"),
    ("int in a gap of the labels", pa.array([1, 3, 2, 3]), [1, 3], 3, "2"),
    ("int beyond the labels", pa.array([1, 3, 9]), [1, 3], 3, "9"),
    ("int, labels far apart", pa.array([0, 10**9, 5]), [0, 10**9], 3, "5"),
    ("float", pa.array([1.0, 2.5, float("nan")]), [1, 2], 2, "2.5"),
    ("dictionary", pa.array(["a", "b", "c", "b"]).dictionary_encode(), ["a", "b"], 3, "'c'"),
    ("categorical", pd.Series(pd.Categorical(["b", "c", "a"], categories=["a", "b", "c"])), ["a", "b"], 2, "'c'"),
    ("second chunk", pa.chunked_array([["a", "b"], ["a", "d"]]), ["a", "b"], 4, "'d'"),
    ("text not an int literal", pa.array(["1", "+1"]), [1], 2, "'+1'"),
]


@pytest.mark.parametrize("name, column, categories, row, shown", UNKNOWN, ids=[u[0] for u in UNKNOWN])
def test_unknown_value_names_column_row_and_value(name, column, categories, row, shown) -> None:
    shown = re.escape(shown)
    with pytest.raises(DataError, match=rf"column 'v', row {row}: value {shown} is not one of its categories"):
        encode(column, categories, column="v")
    with pytest.raises(DataError, match=rf"row {row + 1000}: value {shown}"):
        encode(column, categories, column="v", first_row=1000)
    rows = np.arange(len(column))[::-1] * 10
    with pytest.raises(DataError, match=rf"row {rows[row - 1] + 1}: value {shown}"):
        encode(column, categories, column="v", rows=rows)


@pytest.mark.parametrize("like, categories", [
    (pa.string(), ["a", "b", "c"]),
    (pa.large_string(), ["a", "b", "c"]),
    (pa.int64(), [3, 1, 2]),
    (pa.int8(), [-1, 5, 7]),
    (pa.float64(), [0.5, 1, 2]),
    (pa.dictionary(pa.int8(), pa.string()), ["a", "b", "c"]),
    (pa.dictionary(pa.int32(), pa.large_string(), ordered=True), ["a", "b", "c"]),
])
def test_decode_takes_labels_in_the_column_type(like, categories) -> None:
    codes = np.array([2, -1, 0, 1, 2])
    out = decode(codes, categories, like=like, column="x")
    assert out.type == like
    expected = [None if c < 0 else categories[c] for c in codes]
    assert [text_of(v) for v in out.to_pylist()] == [text_of(v) for v in expected]
    assert encode(out, categories, column="x").tolist() == codes.tolist()  # and back


def test_decode_the_missing_category_of_a_dictionary_is_a_null_index() -> None:
    book = Codebook(["a", None, "b"], column="x", missing="category")
    out = book.decode(np.array([1, 0, 2, 1, -1]), like=pa.dictionary(pa.int8(), pa.string()))
    assert out.to_pylist() == [None, "a", "b", None, None]
    assert out.dictionary.to_pylist() == ["a", "b"]
    assert out.dictionary.null_count == 0
    assert book.encode(out).tolist() == [1, 0, 2, 1, 1]


def test_missing_codes_found_agrees_with_mask() -> None:
    codes = MissingCodes(texts=("NA", "-9"), ranges={"q": ((7, 9),)}, source="test")
    for column, values in [("x", pa.array(["1", "NA", None, "-9"])), ("x", pa.array(["1", "2"])),
                           ("q", pa.array([1.0, 8.0, None])), ("q", pa.array([1.0, 2.0]))]:
        mask = codes.mask(column, values)
        found = codes.found(column, values)
        if mask.any():
            assert found.tolist() == mask.tolist()
        else:
            assert found is None
    many = MissingCodes(texts=tuple(f"m{i}" for i in range(6)))
    assert many.found("x", pa.array(["m5", "a", None])).tolist() == [True, False, False]


# ---------------------------------------------------------------- perturb_frame keeps dtypes


def frame_of_every_kind(n: int) -> tuple[pd.DataFrame, Manifest]:
    rng = np.random.default_rng(4)
    i = rng.integers(0, 3, n)
    holes = rng.random(n) < 0.1
    text = np.array(["a", "b", "c"], dtype=object)[i]
    text_holes = np.where(holes, None, text)
    data = pd.DataFrame({
        "str": pd.Series(text_holes, dtype="str"),
        "object": pd.Series(text_holes, dtype=object),
        "categorical": pd.Categorical(text_holes, categories=["c", "a", "b", "never used"]),
        "arrow_dict": pd.array(pa.array(text_holes).dictionary_encode(),
                               dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))),
        "arrow_str": pd.array(text_holes, dtype=pd.ArrowDtype(pa.string())),
        "int": i + 1,
        "Int64": pd.array(np.where(holes, None, i + 1), dtype="Int64"),
        "arrow_int": pd.array(np.where(holes, None, i + 1), dtype="int64[pyarrow]"),
        "float": np.where(holes, np.nan, i + 1.0),
    })
    matrix = {"text": PramMatrix(0.6 * np.eye(3) + 0.4 / 3, ["a", "b", "c"]),
              "int": PramMatrix(0.6 * np.eye(3) + 0.4 / 3, [1, 2, 3])}
    manifest = Manifest(tuple(
        PerturbedVariable(c, matrix["int" if c in ("int", "Int64", "arrow_int", "float") else "text"])
        for c in data.columns))
    return data, manifest


def test_perturb_frame_keeps_every_dtype_and_missing_values(key) -> None:
    data, manifest = frame_of_every_kind(3000)
    out, result = perturb_frame(data, manifest, key=key)
    for c in data.columns:
        if c == "categorical":  # a categorical comes back with the matrix's categories
            assert list(out[c].cat.categories) == ["a", "b", "c"]
        else:
            assert out[c].dtype == data[c].dtype, c
        assert out[c].isna().tolist() == data[c].isna().tolist(), c
        kept = data[c].notna()
        assert 0 < (out[c][kept].astype(str) != data[c][kept].astype(str)).sum() < kept.sum()
    for v in result.variables:
        assert v.missing == int(data[v.name].isna().sum())
        assert v.changed == int((out[v.name].astype(str) != data[v.name].astype(str))[data[v.name].notna()].sum())


def test_perturb_frame_threads_do_not_change_the_release(key) -> None:
    data, manifest = frame_of_every_kind(2 * PARALLEL_ROWS + 12_345)
    serial, one = perturb_frame(data, manifest, key=key, threads=1)
    parallel, many = perturb_frame(data, manifest, key=key, threads=3)
    pd.testing.assert_frame_equal(serial, parallel)
    assert one.variables == many.variables
    bad = data.copy()
    bad["str"] = bad["str"].astype(object)
    bad.loc[PARALLEL_ROWS + 5, "str"] = "zzz"
    bad.loc[2 * PARALLEL_ROWS, "str"] = "yyy"
    for threads in (1, 3):
        with pytest.raises(DataError, match=rf"column 'str', row {PARALLEL_ROWS + 6}: value 'zzz'"):
            perturb_frame(bad, manifest, key=key, threads=threads)


def test_categorical_dtype_is_built_once_and_is_what_decoding_gives(key) -> None:
    book = Codebook(["x", None, "y"], column="c", missing="category")
    like = pa.dictionary(pa.int16(), pa.large_string(), ordered=True)
    dtype = book.categorical_dtype(like)
    assert book.categorical_dtype(like) is dtype
    assert dtype == book.decode(np.array([0, 2, 1]), like=like).to_pandas().dtype
    assert list(dtype.categories) == ["x", "y"] and dtype.ordered
    # a categorical column with missing declared a category comes back with the matrix's other categories
    data = pd.DataFrame({"c": pd.Categorical(["x", None, "y"] * 1000, categories=["y", "x"])})
    m = PramMatrix.from_diagonal([0.5, 0.5, 0.5], ["x", None, "y"])
    out = perturb_frame(data, Manifest((PerturbedVariable("c", m, "category"),)), key=key).data
    assert list(out["c"].cat.categories) == ["x", "y"]
    assert 0 < out["c"].isna().sum() < len(data) and set(out["c"].dropna()) == {"x", "y"}


def test_perturb_frame_names_a_column_arrow_cannot_read(key) -> None:
    data = pd.DataFrame({"x": pd.Series([1, "a", 2.5], dtype=object)})
    with pytest.raises(DataError, match="column 'x': cannot read its values"):
        perturb_frame(data, Manifest.of({"x": PramMatrix.from_diagonal([0.5, 0.5], ["a", 1])}), key=key)
