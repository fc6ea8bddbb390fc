"""Files in and out: formats, pass-through of untouched columns, atomic writes, bad files."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pyreadstat
import pytest

from pramkit import io as pio
from pramkit.codebook import categories_of
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.errors import DataError, OutputExistsError, PramkitError
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def csv_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 5000
    return pd.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "region": rng.integers(1, 6, n),
        "sex": rng.choice(["m", "f"], n),
        "income": np.round(rng.lognormal(8, 1, n), 2),
        "code": rng.choice(["01", "02", "10"], n),
    })


@pytest.fixture
def manifest(frame: pd.DataFrame) -> Manifest:
    return Manifest.of({c: randomized_response(categories_of(frame[c]), 1.0) for c in ("region", "sex")})


def test_csv_untouched_columns_are_byte_identical(tmp_path: Path, frame, manifest, key) -> None:
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    before = sha(src)
    apply_file(src, manifest, tmp_path / "out.csv", key=key)
    assert sha(src) == before  # the input is never modified
    a, b = csv_rows(src), csv_rows(tmp_path / "out.csv")
    assert a[0] == b[0] and len(a) == len(b)
    for col in ("id", "income", "code"):  # "01" stays "01", 1234.5 stays 1234.5
        i = a[0].index(col)
        assert [r[i] for r in a] == [r[i] for r in b]
    i = a[0].index("region")
    assert {r[i] for r in b[1:]} <= {"1", "2", "3", "4", "5"}


def test_output_independent_of_chunk_size(tmp_path: Path, frame, manifest, key) -> None:
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    pio.write_table(frame, tmp_path / "in.parquet")
    apply_file(src, manifest, tmp_path / "big.csv", key=key)
    apply_file(src, manifest, tmp_path / "small.csv", key=key, chunk_rows=100)
    assert sha(tmp_path / "big.csv") == sha(tmp_path / "small.csv")
    apply_file(tmp_path / "in.parquet", manifest, tmp_path / "big.parquet", key=key)
    apply_file(tmp_path / "in.parquet", manifest, tmp_path / "small.parquet", key=key, chunk_rows=333)
    big, small = pq.read_table(tmp_path / "big.parquet"), pq.read_table(tmp_path / "small.parquet")
    assert big.equals(small)
    # and CSV and Parquet releases agree value for value
    from_csv = pd.read_csv(tmp_path / "big.csv", dtype=str, keep_default_na=False)
    assert (from_csv["region"].astype(int).to_numpy() == big.column("region").to_numpy()).all()


def test_parquet_keeps_types(tmp_path: Path, frame, manifest, key) -> None:
    frame = frame.assign(sex=pd.Categorical(frame["sex"]), region=frame["region"].astype(np.int16))
    pio.write_table(frame, tmp_path / "in.parquet")
    apply_file(tmp_path / "in.parquet", manifest, tmp_path / "out.parquet", key=key)
    a, b = pq.read_schema(tmp_path / "in.parquet"), pq.read_schema(tmp_path / "out.parquet")
    assert a.names == b.names and a.types == b.types
    out = pd.read_parquet(tmp_path / "out.parquet")
    pd.testing.assert_series_equal(out["income"], frame["income"])


@pytest.mark.parametrize("suffix, writer, reader", [
    (".dta", pyreadstat.write_dta, pyreadstat.read_dta),
    (".sav", pyreadstat.write_sav, pyreadstat.read_sav),
])
def test_stata_and_spss(tmp_path: Path, frame, manifest, key, suffix, writer, reader) -> None:
    src = tmp_path / f"in{suffix}"
    writer(frame.drop(columns="code"), str(src), column_labels=["id", "region of residence", "sex", "income"],
           variable_value_labels={"region": {1: "north", 2: "east", 3: "south", 4: "west", 5: "centre"}})
    apply_file(src, manifest, tmp_path / f"out{suffix}", key=key)
    a, meta_a = reader(str(src))
    b, meta_b = reader(str(tmp_path / f"out{suffix}"))
    assert list(a.columns) == list(b.columns) and (a.dtypes == b.dtypes).all()
    pd.testing.assert_series_equal(a["income"], b["income"])
    assert meta_b.column_labels == meta_a.column_labels
    assert meta_b.variable_value_labels == meta_a.variable_value_labels
    assert set(b["region"]) <= {1, 2, 3, 4, 5}


def test_existing_output_is_kept(tmp_path: Path, frame, manifest, key) -> None:
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    (tmp_path / "out.csv").write_text("precious")
    with pytest.raises(OutputExistsError):
        apply_file(src, manifest, tmp_path / "out.csv", key=key)
    assert (tmp_path / "out.csv").read_text() == "precious"
    with pytest.raises(PramkitError, match="overwrite the input"):
        apply_file(src, manifest, src, key=key, force=True)


def test_crash_leaves_no_output(tmp_path: Path, frame, manifest, key, monkeypatch) -> None:
    src = tmp_path / "in.csv"
    pd.concat([frame] * 10).to_csv(src, index=False)  # several CSV blocks
    calls = {"n": 0}
    original = pio.TableWriter.write

    def failing_write(self, table):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        original(self, table)

    monkeypatch.setattr(pio.TableWriter, "write", failing_write)
    with pytest.raises(RuntimeError):
        apply_file(src, manifest, tmp_path / "out.csv", key=key, chunk_rows=500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    ("region,sex\n", "no data rows"),
    ("region,sex\n1,m\n2,f,3\n", "line 3: expected 2 fields"),
    ("region,sex\n1,m\n2\n", "line 3: expected 2 fields"),
    ("region,region\n1,2\n", "duplicate column"),
])
def test_bad_csv_files(tmp_path: Path, manifest, key, content: str, message: str) -> None:
    src = tmp_path / "in.csv"
    src.write_text(content)
    with pytest.raises(DataError, match=message):
        apply_file(src, manifest, tmp_path / "out.csv", key=key)
    assert not (tmp_path / "out.csv").exists()


def test_unknown_category_names_column_value_and_row(tmp_path: Path, manifest, key) -> None:
    src = tmp_path / "in.csv"
    src.write_text("region,sex\n1,m\n2,f\n3,x\n")
    with pytest.raises(DataError, match=r"column 'sex', row 3: value 'x'"):
        apply_file(src, manifest, tmp_path / "out.csv", key=key)


def test_missing_values_pass_through(tmp_path: Path, manifest, key) -> None:
    src = tmp_path / "in.csv"
    src.write_text("region,sex\n1,m\n,f\n3,\n")
    res = apply_file(src, manifest, tmp_path / "out.csv", key=key)
    rows = csv_rows(tmp_path / "out.csv")
    assert rows[2][0] == "" and rows[3][1] == ""
    assert {v.name: v.missing for v in res.variables} == {"region": 1, "sex": 1}


def test_read_table_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        pio.read_table(tmp_path / "nope.csv")
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    with pytest.raises(DataError, match=r"\['z'\]"):
        pio.read_table(tmp_path / "a.csv", columns=["z"])
    (tmp_path / "a.xlsx").write_text("x")
    with pytest.raises(PramkitError, match="suffix"):
        pio.read_table(tmp_path / "a.xlsx")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="Parquet"):
        pio.read_table(tmp_path / "bad.parquet")


def test_sdcmicro_testdata_pram_example(tmp_path: Path, sdc_data: Path, key: SecretKey) -> None:
    """sdcMicro's own pram example perturbs roof, walls and water of testdata."""
    src = sdc_data / "testdata.csv"
    data = pio.read_table(src)
    assert len(data) == 4580
    man = Manifest.of({c: randomized_response(categories_of(data[c]), 2.0) for c in ("roof", "walls", "water")})
    res = apply_file(src, man, tmp_path / "out.csv", key=key)
    assert res.rows == 4580
    out = pio.read_table(tmp_path / "out.csv")
    untouched = [c for c in data.columns if c not in man.names]
    pd.testing.assert_frame_equal(out[untouched], data[untouched])
    for c in man.names:
        assert set(out[c]) <= set(data[c])
        assert 0 < res.variables[man.names.index(c)].changed < 4580


def test_multi_chunk_pandas_columns_are_encoded(tmp_path: Path) -> None:
    """pandas string columns backed by several Arrow chunks (large CSV reads) convert to ChunkedArray."""
    import pyarrow as pa

    from pramkit.codebook import encode

    chunked = pa.chunked_array([["a", "b"], ["b", None]])
    series = chunked.to_pandas(types_mapper=pd.ArrowDtype)
    assert isinstance(pa.array(series, from_pandas=True), pa.ChunkedArray)
    np.testing.assert_array_equal(encode(series, ["a", "b"], column="x"), [0, 1, 1, -1])


def test_outputs_get_ordinary_permissions(tmp_path: Path, frame, manifest, key) -> None:
    import os

    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    apply_file(src, manifest, tmp_path / "out.csv", key=key)
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "out.csv").stat().st_mode & 0o777 == 0o666 & ~umask


# ---------------------------------------------------------------- missing markers and user-missing codes

def test_na_text_is_missing_and_kept(tmp_path: Path, manifest, key) -> None:
    """R's NA is missing by default: never perturbed, never produced, written back as it was."""
    src = tmp_path / "in.csv"
    n = 3000
    region = np.where(np.arange(n) % 10 == 0, "NA", (np.arange(n) % 5 + 1).astype(str))
    pd.DataFrame({"region": region, "sex": ["m", "f", "NA"] * 1000, "other": ["NA", "x", "y"] * 1000}) \
        .to_csv(src, index=False)
    res = apply_file(src, manifest, tmp_path / "out.csv", key=key)
    a, b = csv_rows(src), csv_rows(tmp_path / "out.csv")
    for col in range(3):
        was_na = [r[col] == "NA" for r in a[1:]]
        assert was_na == [r[col] == "NA" for r in b[1:]]  # NA stays NA, and nothing becomes NA
    assert {v.name: v.missing for v in res.variables} == {"region": 300, "sex": 1000}
    assert pio.read_table(src)["region"].isna().sum() == 300  # readers see it as missing


def test_na_values_option(tmp_path: Path, key) -> None:
    src = tmp_path / "in.csv"
    src.write_text("x\n" + "1\n-9\nNA\n2\n" * 50)
    with_na = Manifest.of({"x": randomized_response([-9, 1, 2, "NA"], 1.0)})
    plain = Manifest.of({"x": randomized_response([1, 2], 1.0)})
    with pytest.raises(DataError, match="'NA' is a missing-value code.*--na-values"):
        apply_file(src, with_na, tmp_path / "out.csv", key=key)  # never released as a missing marker
    with pytest.raises(DataError, match="'-9'"):  # -9 is not missing by default
        apply_file(src, plain, tmp_path / "out.csv", key=key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    res = apply_file(src, plain, tmp_path / "o1.csv", key=key, na_values=["NA", "-9"])
    assert res.variables[0].missing == 100
    res = apply_file(src, with_na, tmp_path / "o2.csv", key=key, na_values=())  # NA an ordinary category
    assert res.variables[0].missing == 0 and res.variables[0].changed > 0


@pytest.fixture
def user_missing_sav(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    n = 4000
    frame = pd.DataFrame({"q": rng.choice([1.0, 2.0, 3.0, 8.0, 9.0], n), "s": rng.choice(["a", "b", "z"], n),
                          "w": rng.normal(size=n)})
    path = tmp_path / "in.sav"
    pyreadstat.write_sav(frame, str(path), missing_ranges={"q": [{"lo": 8, "hi": 9}], "s": ["z"]},
                         variable_value_labels={"q": {1: "yes", 2: "no", 3: "maybe", 8: "refused", 9: "don't know"}})
    return path


def test_spss_user_missing_codes_survive(tmp_path: Path, user_missing_sav: Path, key) -> None:
    m = Manifest.of({"q": randomized_response([1, 2, 3], 1.0), "s": randomized_response(["a", "b"], 1.0)})
    res = apply_file(user_missing_sav, m, tmp_path / "out.sav", key=key)
    a, meta_a = pyreadstat.read_sav(str(user_missing_sav), user_missing=True)
    b, meta_b = pyreadstat.read_sav(str(tmp_path / "out.sav"), user_missing=True)
    assert meta_b.missing_ranges == meta_a.missing_ranges  # the declaration survives
    assert meta_b.variable_value_labels == meta_a.variable_value_labels
    for col, codes in (("q", [8.0, 9.0]), ("s", ["z"])):
        assert (a[col].isin(codes) == b[col].isin(codes)).all()  # user-missing stay, nothing becomes one
        assert (a[col][a[col].isin(codes)] == b[col][b[col].isin(codes)]).all()  # with their own code
        assert (a[col] != b[col]).any()
    assert {v.name: v.missing for v in res.variables} == {"q": int(a["q"].isin([8, 9]).sum()),
                                                          "s": int((a["s"] == "z").sum())}
    # readers see user-missing codes as missing
    assert pio.read_table(user_missing_sav)["q"].isna().sum() == a["q"].isin([8, 9]).sum()


def test_spss_user_missing_code_as_a_category_is_refused(tmp_path: Path, user_missing_sav: Path, key) -> None:
    m = Manifest.of({"q": randomized_response([1, 2, 3, 9], 1.0)})
    with pytest.raises(DataError, match="category 9 is a missing-value code.*user-missing"):
        apply_file(user_missing_sav, m, tmp_path / "out.sav", key=key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.sav"]


# ---------------------------------------------------------------- release receipts

def test_receipt_records_the_manifest(tmp_path: Path, frame, manifest, key) -> None:
    import json

    from pramkit.engine.receipt import check_release, receipt_path

    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    manifest.write(tmp_path / "m.json")
    res = apply_file(src, tmp_path / "m.json", tmp_path / "out.csv", key=key)
    receipt = json.loads(receipt_path(tmp_path / "out.csv").read_text())
    assert res.receipt == str(receipt_path(tmp_path / "out.csv"))
    assert receipt["rows"] == len(frame) and receipt["released_sha256"] == sha(tmp_path / "out.csv")
    assert receipt["manifest_sha256"] == sha(tmp_path / "m.json")
    assert set(receipt) == {"format", "version", "pramkit_version", "released_file", "released_sha256", "rows",
                            "manifest_sha256", "manifest_content_sha256", "release",
                            "input_release"}  # nothing from the original file
    assert receipt["input_release"] is None                               # applied to a file that is no release
    assert receipt["release"] == ""                                       # no label: a release key of its own
    assert sha(src) not in json.dumps(receipt)
    assert check_release(tmp_path / "out.csv", tmp_path / "m.json") is None
    assert check_release(tmp_path / "out.csv", manifest) is None  # the object that was written
    other = Manifest.of({"region": randomized_response(list(range(1, 6)), 2.0)})
    with pytest.raises(PramkitError, match="another manifest"):
        check_release(tmp_path / "out.csv", other)
    assert "no release receipt" in check_release(src, manifest)
    with open(tmp_path / "out.csv", "a") as fh:
        fh.write("1,1,m,1.0,01\n")
    assert "has changed since" in check_release(tmp_path / "out.csv", other)


def test_failed_release_leaves_the_old_receipt(tmp_path: Path, frame, manifest, key) -> None:
    from pramkit.engine.receipt import receipt_path

    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    apply_file(src, manifest, tmp_path / "out.csv", key=key)
    before = {p.name: sha(p) for p in tmp_path.iterdir()}
    (tmp_path / "bad.csv").write_text("region,sex\n1,m\n9,f\n")
    with pytest.raises(DataError):
        apply_file(tmp_path / "bad.csv", manifest, tmp_path / "out.csv", key=key, force=True)
    assert {p.name: sha(p) for p in tmp_path.iterdir() if p.name != "bad.csv"} == before
    assert receipt_path(tmp_path / "out.csv").exists()


# ---------------------------------------------------------------- speed paths: digests while writing, CSV blocks

@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_digest_computed_while_writing_is_the_files(tmp_path: Path, frame, suffix) -> None:
    """The writer hashes the bytes as it writes them (in its background thread): the digest is the file's."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pio.TableWriter(tmp_path / f"out.{suffix}") as writer:
        for batch in table.to_batches(max_chunksize=700):
            writer.write(pa.Table.from_batches([batch]))
        writer.close()
        digest = writer.sha256
    assert digest == sha(tmp_path / f"out.{suffix}")
    back = pio.read_table(tmp_path / f"out.{suffix}")
    assert len(back) == len(frame) and list(back.columns) == list(frame.columns)


def test_a_failed_background_write_leaves_no_output(tmp_path: Path, frame, manifest, key, monkeypatch) -> None:
    src = tmp_path / "in.csv"
    pd.concat([frame] * 10).to_csv(src, index=False)
    calls = {"n": 0}
    original = pio.TableWriter._write_chunk

    def failing(self, table):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        original(self, table)

    monkeypatch.setattr(pio.TableWriter, "_write_chunk", failing)
    with pytest.raises(PramkitError, match="cannot write .*out.csv.*: No space left on device"):
        apply_file(src, manifest, tmp_path / "out.csv", key=key, chunk_rows=2000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_csv_chunks_are_regrouped_blocks(tmp_path: Path) -> None:
    """CSV files are read in blocks of an eighth of a chunk and handed on in tables of at least a chunk."""
    src = tmp_path / "in.csv"
    n = 200_000
    pd.DataFrame({"a": np.arange(n) % 7, "b": ["x,y", "z"] * (n // 2)}).to_csv(src, index=False)
    chunk = 40_000
    assert pio.csv_block_bytes(chunk) == max(1 << 16, chunk * pio.CSV_ROW_BYTES // pio.CSV_BLOCKS_PER_CHUNK)
    _, tables = pio.iter_batches(src, chunk_rows=chunk)
    sizes = [t.num_rows for t in tables]
    assert sum(sizes) == n and all(s >= chunk for s in sizes[:-1]) and len(sizes) > 1
    assert pio.read_table(src, columns=["b"])["b"].tolist() == ["x,y", "z"] * (n // 2)
