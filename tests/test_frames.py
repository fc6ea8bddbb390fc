"""polars (eager and lazy) and Arrow tables in and out of the public entry points (pramkit.frames).

The reference for a release is the engine's primitive :func:`pramkit.perturb_codes` on the
codes of the original values (row ``i`` with the draw ``(key, variable, i)``), not the frame
layer under test; the reference for counts, estimates and risks is the same call on a pandas
DataFrame, the path pramkit had before frames of other types.
"""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.codebook import spelling_clash
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.engine.perturb import TablePerturber, perturb_codes, release_key
from pramkit.errors import DataError, ParameterError
from pramkit.io import iter_batches
from pramkit.kernel.rng import SecretKey

KEY = SecretKey(bytes(range(32)), "test key")


def _kinds(frame: pd.DataFrame, schema: pa.Schema | None = None) -> dict[str, object]:
    """The same records as a pandas, polars (eager, lazy) and Arrow frame (``schema``: the Arrow types)."""
    table = pa.Table.from_pandas(frame, preserve_index=False, schema=schema)
    return {"pandas": frame, "arrow": table, "polars": pl.from_arrow(table), "lazy": pl.from_arrow(table).lazy()}


def _values(data: object, column: str) -> list[bytes | None]:
    """A released column's values as UTF-8 bytes (``None`` for missing), whatever the frame's type."""
    if isinstance(data, pl.LazyFrame):
        data = data.collect()
    if isinstance(data, pd.DataFrame):
        values = [None if pd.isna(v) else v for v in data[column].tolist()]
    elif isinstance(data, pa.Table):
        values = data.column(column).to_pylist()
    else:
        values = data[column].to_list()
    return [None if v is None else str(v).encode("utf-8") for v in values]


def _floats(data: object, column: str) -> list[float]:
    """A numeric column of any frame type as floats, NaN written -1 (so that lists compare)."""
    return np.nan_to_num(np.asarray(data[column], dtype=float), nan=-1.0).tolist()


labels = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cats=st.lists(labels, min_size=2, max_size=5, unique=True).filter(lambda c: spelling_clash(c) is None),
       data=st.data())
def test_same_key_same_released_bytes_from_every_frame_type(cats, data):
    """Random small frames with missing values and Unicode labels (accents, whitespace, scripts): pandas,
    polars eager, polars lazy (in batches of 3 rows) and Arrow give the same released bytes, and these are
    the engine's keyed draws on the codes."""
    n = data.draw(st.integers(1, 25))
    picks = data.draw(st.lists(st.integers(-1, len(cats) - 1), min_size=n, max_size=n))
    keep = data.draw(st.lists(st.floats(0.05, 0.95), min_size=len(cats), max_size=len(cats)))
    frame = pd.DataFrame({"label": pd.array([None if k < 0 else cats[k] for k in picks], dtype=object),
                          "weight": pd.array([None if k < 0 else float(i) for i, k in enumerate(picks)],
                                             dtype="Float64")})
    matrix = PramMatrix.from_diagonal(keep, cats)
    manifest = Manifest.of({"label": matrix})
    expected_codes = perturb_codes(np.array(picks), matrix, key=release_key(KEY, manifest), variable="label")
    expected = [None if c < 0 else cats[c].encode("utf-8") for c in expected_codes]
    for kind, native in _kinds(frame, pa.schema([("label", pa.string()), ("weight", pa.float64())])).items():
        if kind == "lazy":
            released = pramkit.perturb_frame(native, manifest, key=KEY, chunk_rows=3).data
        else:
            released = pramkit.perturb_frame(native, manifest, key=KEY).data
        assert type(released) is type(native), kind
        assert _values(released, "label") == expected, kind
        assert _values(released, "weight") == _values(native, "weight"), kind  # other columns untouched


POLARS_TEXT = {"String": pl.String, "Categorical": pl.Categorical}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["String", "Categorical", "Enum", "Enum, more categories"])
def test_polars_text_columns_come_back_in_their_dtype_with_the_engines_draws(monkeypatch, dtype, threads):
    """polars String, Categorical and Enum columns (eager, and lazy in batches) are released in their own
    dtype, with the engine's keyed draws on the codes, also when the rows are cut into slices that run on
    threads; a joint variable and an integer column beside them take the Arrow path."""
    import pramkit.engine.perturb as perturb

    monkeypatch.setattr(perturb, "PARALLEL_ROWS", 64)  # several slices of rows per variable
    cats = ["married", "  single", "Zürich, \"ville\"", "日本", "é"]
    rng = np.random.default_rng(5)
    picks = rng.integers(-1, len(cats), 1_000)
    values = [None if k < 0 else cats[k] for k in picks]
    pl_dtype = {"Enum": pl.Enum(cats), "Enum, more categories": pl.Enum(["x", *reversed(cats), "y"])}.get(
        dtype, POLARS_TEXT.get(dtype))
    frame = pl.DataFrame({"status": pl.Series(values, dtype=pl_dtype), "age": rng.integers(0, 3, 1_000),
                          "sex": pl.Series(rng.choice(["f", "m"], 1_000).tolist(), dtype=pl.Categorical)})
    matrix = PramMatrix.from_diagonal(rng.uniform(0.2, 0.9, len(cats)), cats)
    manifest = Manifest.of({"status": matrix, "age": PramMatrix.from_diagonal([0.5, 0.6, 0.7], [0, 1, 2])})
    expected_codes = perturb_codes(np.array(picks), matrix, key=release_key(KEY, manifest), variable="status")
    expected = [None if c < 0 else cats[c] for c in expected_codes]
    eager = pramkit.perturb_frame(frame, manifest, key=KEY, threads=threads).data
    lazy = pramkit.perturb_frame(frame.lazy(), manifest, key=KEY, threads=threads, chunk_rows=300).data.collect()
    for out in (eager, lazy):
        assert out.schema == frame.schema
        assert out["status"].to_list() == expected
        assert out["sex"].equals(frame["sex"])  # not perturbed: untouched
    assert lazy.equals(eager)
    # the Arrow path (pandas) releases the same integers
    pandas = pramkit.perturb_frame(frame.to_pandas(), manifest, key=KEY).data
    assert eager["age"].to_list() == pandas["age"].tolist()


def test_polars_enum_without_a_category_of_its_matrix_is_refused():
    """A released value an Enum cannot hold would become missing: refused, naming what is lacking."""
    frame = pl.DataFrame({"x": pl.Series(["a", "b"] * 5, dtype=pl.Enum(["a", "b"]))})
    manifest = Manifest.of({"x": PramMatrix.from_diagonal([0.5, 0.5, 0.5], ["a", "b", "c"])})
    with pytest.raises(DataError, match=r"column 'x' is a polars Enum without the categories \['c'\]"):
        pramkit.perturb_frame(frame, manifest, key=KEY)
    with pytest.raises(Exception, match=r"without the categories \['c'\]"):
        pramkit.perturb_frame(frame.lazy(), manifest, key=KEY).data.collect()


def test_lazy_frame_is_released_in_batches_of_at_most_the_batch_size(monkeypatch):
    """The engine never sees more rows at once than the batch size, and the lazy release is the eager one."""
    frame = census(5_000).assign(hours=range(5_000))
    frame.loc[::7, "sex"] = None  # missing values
    lazy = pl.from_pandas(frame).lazy().with_columns(pl.col("hours") * 2)  # a computed plan, not a table
    manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.7, 0.8], list(CENSUS_VARIABLES["sex"]))})
    seen: list[int] = []
    call = TablePerturber.released  # what every frame's release goes through (``__call__`` as well)

    def spy(self, table, start=0, rows=None, decoders=None):
        seen.append(table.num_rows)
        return call(self, table, start, rows, decoders)

    monkeypatch.setattr(TablePerturber, "released", spy)
    released = pramkit.perturb_frame(lazy, manifest, key=KEY, chunk_rows=700)
    assert seen == []  # nothing is computed before polars is asked to
    out = released.data.collect()
    assert max(seen) <= 700 and sum(seen) == 5_000 and len(seen) >= 8
    eager = pramkit.perturb_frame(pl.from_pandas(frame).with_columns(pl.col("hours") * 2), manifest, key=KEY).data
    assert out.equals(eager)
    meta, tables = iter_batches(lazy, columns=["sex"], chunk_rows=700)
    assert meta.rows is None and [t.num_rows for t in tables] == [700] * 7 + [100]


def test_lazy_release_filtered_and_projected_keeps_each_rows_draw():
    """polars may push a filter or a projection into the release: each row keeps the draw of its position."""
    frame = pl.DataFrame({"sex": ["male", "female", None, "female"] * 50, "n": range(200)})
    manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.6, 0.6], ["male", "female"])})
    eager = pramkit.perturb_frame(frame, manifest, key=KEY).data
    lazy = pramkit.perturb_frame(frame.lazy(), manifest, key=KEY).data
    assert lazy.filter(pl.col("n") % 3 == 0).select("sex").collect().equals(
        eager.filter(pl.col("n") % 3 == 0).select("sex"))


def _census_with_gaps(n: int) -> pd.DataFrame:
    """The census with missing values, a Unicode label and an undeclared order."""
    frame = census(n)[["age", "sex", "marital_status"]].astype(object)
    frame.loc[::11, "age"] = None
    frame.loc[::13, "marital_status"] = "célibataire"
    return frame


def test_design_estimate_and_risk_agree_across_frame_types():
    """design_release (keyed), estimate_table and identification_risk give the pandas results for every type."""
    frame = _census_with_gaps(3_000)
    plan = pramkit.plan_release(["age", "sex"], epsilon=3.0)
    results = {}
    for kind, native in _kinds(frame).items():
        release = pramkit.design_planned(native, plan, key=KEY)
        m = release.manifest.to_dict()
        m.pop("created")
        for v in m["variables"]:
            v["design"].pop("seconds", None)
        released = pramkit.perturb_frame(native, release.manifest, key=KEY).data
        est = pramkit.estimate_table(released, release.manifest, ["age"], by=["marital_status"])
        risk = pramkit.identification_risk(native, ["age", "sex", "marital_status"], sampling_fraction=0.05)
        results[kind] = (m, est.table.counts.tolist(), est.table.se.tolist(), est.categories, risk.tau1, risk.tau2)
    for kind, got in results.items():
        assert got == results["pandas"], kind


def test_design_release_of_a_polars_frame_reads_the_shared_file(sdc_data):
    """eusilc (missing values, weights) as polars gives pandas' design and the same counts."""
    frame = pd.read_csv(sdc_data / "eusilc_laeken.csv", dtype=str)
    frame.loc[frame.index[::17], "pl030"] = None
    plan = pramkit.plan_release(["db040", "pl030", "rb090"], epsilon=4.0, weights="rb050")
    a = pramkit.design_planned(frame, plan, key=KEY)
    b = pramkit.design_planned(pl.from_pandas(frame).lazy(), plan, key=KEY)
    assert [v.matrix.categories for v in a.manifest.variables] == [v.matrix.categories for v in b.manifest.variables]
    assert all(np.array_equal(x.matrix.matrix, y.matrix.matrix)
               for x, y in zip(a.manifest.variables, b.manifest.variables))


@pytest.mark.parametrize("make, error, words", [
    (lambda: pl.DataFrame({"age": ["0-9"]}), DataError, "are not in a polars DataFrame"),
    (lambda: pl.LazyFrame({"age": ["0-9"]}), DataError, "are not in a polars LazyFrame"),
    (lambda: pl.DataFrame({"sex": pl.Series([], dtype=pl.String)}), DataError, "no rows"),
    (lambda: pa.table({"sex": pa.array([], pa.string())}), DataError, "no rows"),
    (lambda: pl.DataFrame({"sex": ["male", "other"]}), DataError, "row 2: value 'other' is not one of"),
    (lambda: pa.table({"sex": ["male", None, "other"]}), DataError, "row 3: value 'other' is not one of"),
    (lambda: pl.LazyFrame({"sex": pl.Series([], dtype=pl.String)}), DataError, "no rows"),  # when computed
    (lambda: pl.LazyFrame({"sex": ["male", "other"]}), DataError, "row 2: value 'other' is not one of"),
])
def test_perturb_frame_bad_frames(make, error, words):
    """One error naming what to change, the input unchanged; a LazyFrame's when polars computes it."""
    manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.7, 0.8], ["male", "female"])})
    data = make()
    before = data.collect() if isinstance(data, pl.LazyFrame) else data.clone() if isinstance(data, pl.DataFrame) else None
    with pytest.raises(error, match=words):
        released = pramkit.perturb_frame(data, manifest, key=KEY).data
        if isinstance(released, pl.LazyFrame):
            released.collect()
    if before is not None:  # an Arrow table cannot be changed in place
        assert (data.collect() if isinstance(data, pl.LazyFrame) else data).equals(before)


@pytest.mark.parametrize("data, error, words", [
    (pa.table({"sex": [["male"], ["female"]]}), DataError, "not one value per record"),
    (pl.DataFrame({"age": ["0-9", "10-17"]}), DataError, r"\['sex'\] are not in a polars DataFrame"),
    ([["male"], ["female"]], ParameterError, "not list"),
])
def test_design_release_bad_frames(data, error, words):
    with pytest.raises(error, match=words):
        pramkit.design_release(data, ["sex"], epsilon=2.0, rng=random.Random(0))


def test_unicode_variants_are_refused_alike_from_every_type():
    """Two spellings of one label (composed and decomposed é) are refused for every frame type, naming both rows."""
    composed, decomposed = "café", unicodedata.normalize("NFD", "café")
    frame = pd.DataFrame({"place": [composed, decomposed, "bar", "bar"]})
    for native in _kinds(frame).values():
        with pytest.raises(DataError, match="spelled two ways") as info:
            pramkit.design_release(native, ["place"], epsilon=2.0, rng=random.Random(0))
        assert "(row 1)" in str(info.value) and "(row 2)" in str(info.value)


def test_risk_functions_take_polars_and_arrow_and_return_per_record_of_their_type():
    """identification_risk, household_risk, frequencies and suda: pandas' numbers from polars and Arrow, the
    per-record frames of the input's type (a LazyFrame streams: no per-record frame)."""
    from pramkit.risk.frequencies import frequencies
    from pramkit.risk.suda import suda

    frame = _census_with_gaps(2_000)
    frame["hid"] = np.arange(2_000) // 3
    frame["w"] = 10.0 + np.arange(2_000) % 7  # survey weights
    keys = ["age", "sex", "marital_status"]
    ref = None
    for kind, native in _kinds(frame).items():
        ident = pramkit.identification_risk(native, keys, weights="w")
        got = [ident.tau1, ident.tau2, ident.sample_uniques]
        if kind == "lazy":
            assert ident.per_record is None
        else:
            hh = pramkit.household_risk(native, keys, "hid", weights="w")
            s = suda(native, keys, sampling_fraction=0.1)
            f = frequencies(native, keys, weights="w")
            assert type(ident.per_record) is type(native) and type(hh.per_record) is type(native)
            got += [_floats(ident.per_record, "r2"), _floats(hh.per_record, "household_risk"),
                    s.scores.tolist(), f.f.tolist(), f.F.tolist()]
        ref = ref or got
        assert got == ref[:len(got)], kind


def test_receipt_digest_is_each_manifest_objects_content():
    """The digest in a released frame's receipt, kept per manifest object, is the SHA-256 of that object's JSON
    (computed here with hashlib): the same for an equal manifest read back, another for another manifest."""
    import hashlib
    import json

    from pramkit.engine.receipt import FRAME_ATTR, check_release

    data = pd.DataFrame({"sex": ["f", "m", None, "m"] * 50})
    first = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.7], ["f", "m"])})
    again = Manifest.from_dict(json.loads(first.to_json()))
    other = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.6], ["f", "m"])})
    digests = []
    for manifest in (first, again, other, first):
        released = pramkit.perturb_frame(data, manifest, key=bytes(32)).data
        digest = released.attrs[FRAME_ATTR]["manifest_content_sha256"]
        assert digest == hashlib.sha256(manifest.to_json().encode("utf-8")).hexdigest()
        assert check_release(released, manifest) is None
        digests.append(digest)
    assert digests[0] == digests[1] == digests[3] != digests[2]
    with pytest.raises(DataError, match="another manifest"):
        check_release(pramkit.perturb_frame(data, first, key=bytes(32)).data, other)
