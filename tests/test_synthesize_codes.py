"""A file read as codes batch by batch, and a release of the model pgm written batch by batch.

The oracle is the frame path (the whole file read into a data frame, its categories found and its values
encoded by :mod:`pramkit.synthesize`), which every release of the model pgm went through before: read on
real files (sdcMicro's testdata with its numbers, EU-SILC with its Unicode region names, NIST's ACS excerpt)
in batches small enough to cross many batch boundaries, the codes, the categories and every error must be
the frame path's, and the released file the frame path's release of the same codes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import nist_inputs
from hypothesis import given
from hypothesis import strategies as st

import pramkit.synthesize_codes as sc
from pramkit.errors import DataError, PramkitError, WriteError
from pramkit.kernel.rng import Pieces, SecretKey
from pramkit.synthesize import _categories, _check_spellings, _encode, _opened
from pramkit.synthesize_codes import code_chunks, code_dtype, read_codes

DIALECT = {"na_values": ("NA",), "sep": ",", "encoding": "utf-8", "decimal": "."}


def _frame_codes(path: Path, variables: list[str], declared: Any) -> tuple[np.ndarray, dict, dict]:
    """The frame path's codes, categories and their sources."""
    frame, _, _ = _opened(path, path, variables, ("NA",), ",", "utf-8", ".")
    _check_spellings(frame, [v for v in variables if declared is None or v not in declared])
    cats, sources = _categories(frame, variables, declared)
    return _encode(frame, variables, cats), cats, sources


CASES = {
    "testdata, numbers read as text": ("testdata.csv", ["urbrur", "roof", "walls", "water", "relat", "sex"], None),
    "testdata, one variable declared": ("testdata.csv", ["roof", "hhcivil"], {"roof": ["9", "6", "5", "4", "2", "1"]}),
    "EU-SILC, Unicode regions": ("eusilc_laeken.csv", ["db040", "rb090", "hsize", "age"], None),
    "EU-SILC, as Parquet (numbers as numbers)": ("eusilc.parquet", ["db040", "rb090", "hsize", "age", "eqSS"], None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_codes_are_the_frame_paths(case: str, sdc_data: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    name, variables, declared = CASES[case]
    path = sdc_data / name
    if name.endswith(".parquet"):
        path = tmp_path / name
        pd.read_csv(sdc_data / "eusilc_laeken.csv").to_parquet(path, row_group_size=1000, index=False)
    monkeypatch.setattr(sc, "CHUNK_ROWS", 777)  # many batches, a boundary inside every run of equal values
    coded = read_codes(path, variables, declared, **DIALECT)
    codes, cats, sources = _frame_codes(path, variables, declared)
    assert coded.cats == cats and coded.sources == sources
    np.testing.assert_array_equal(coded.codes, codes)
    assert coded.codes.dtype == code_dtype([len(c) for c in cats.values()])


def _written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


#: Files the frame path refuses, and the one line it says.
BAD = {
    "a value spelled with surrounding whitespace": (
        "region,sex\nTyrol,f\nVienna,m\n" + "Tyrol,m\n" * 900 + "Tyrol ,f\n", None,
        "column 'region': 'Tyrol' (row 1) and 'Tyrol ' (row 903) are one value spelled two ways"),
    "a number spelled two ways": ("region,sex\n3,f\n" + "1,m\n" * 900 + "3.0,f\n", None, "'3' (row 1) and '3.0' (row 902) are one value spelled two ways"),
    "a value outside the declared categories, late in the file": (
        "region,sex\n" + "a,f\n" * 1000 + "b,m\nc,f\n", {"region": ["a", "c"]},
        "region: the value 'b' is not one of its declared categories"),
    "a missing value": ("region,sex\n" + "a,f\n" * 1000 + "NA,m\n", None,
                        "the model pgm draws no missing value, and region has missing values"),
    "a column the file lacks": ("region,sex\na,f\nb,m\n", None, "no column 'age' in the data"),
    "one record": ("region,sex\na,f\n", None, "the data has fewer than 2 records"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_file_is_refused_in_the_frame_paths_words(case: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    text, declared, words = BAD[case]
    path = _written(tmp_path, "bad.csv", text)
    variables = ["region", "sex"] + (["age"] if "lacks" in case else [])
    monkeypatch.setattr(sc, "CHUNK_ROWS", 100)
    with pytest.raises(DataError) as streamed:
        read_codes(path, variables, declared, **DIALECT)
    assert words in str(streamed.value) and "\n" not in str(streamed.value)
    if "missing" not in case:  # the frame path refuses a missing value only when the model draws
        with pytest.raises(DataError) as framed:
            _frame_codes(path, variables, declared)
        assert str(framed.value) == str(streamed.value)


def test_a_float_nan_is_a_missing_value(tmp_path: Path) -> None:
    path = tmp_path / "nan.parquet"
    pd.DataFrame({"x": [1.0, np.nan, 2.0], "y": ["a", "b", "a"]}).to_parquet(path)
    with pytest.raises(DataError, match="x has missing values"):
        read_codes(path, ["x", "y"], None, **DIALECT)


@given(st.lists(st.integers(1, 70_000), min_size=1, max_size=5))
def test_the_code_type_holds_every_code_and_no_smaller_one_does(sizes: list[int]) -> None:
    dtype = code_dtype(sizes)
    assert np.iinfo(dtype).max >= max(sizes) - 1
    smaller = [t for t in (np.uint8, np.uint16, np.uint32) if np.iinfo(t).bits < np.iinfo(dtype).bits]
    assert all(np.iinfo(t).max < max(sizes) - 1 for t in smaller)


@given(st.integers(0, 40), st.integers(1, 4), st.integers(1, 9))
def test_the_digest_pieces_are_the_int64_bytes(rows: int, columns: int, piece: int) -> None:
    codes = np.arange(rows * columns, dtype=np.uint16).reshape(rows, columns) * 7
    assert b"".join(code_chunks(codes, piece)) == codes.astype("<i8").tobytes()
    key = SecretKey(bytes(32), "zeros")
    assert key.for_data("k", Pieces(codes.size * 8, code_chunks(codes, piece)), b"s").material == \
        key.for_data("k", codes.astype("<i8").tobytes(), b"s").material


def test_pieces_of_another_length_are_refused() -> None:
    with pytest.raises(ValueError, match="a part of 5 bytes came as 4"):
        SecretKey(bytes(32), "zeros").for_data("k", Pieces(5, [b"ab", b"cd"]))


# ------------------------------------------------------------------ the release, written batch by batch

pytest.importorskip("mbi", reason='the model pgm needs mbi: pip install "pramkit[pgm]"')

FEATURES = ["AGEP", "SEX", "MSP", "RAC1P", "HISP", "PINCP"]
VARIABLES = ["SEX", "MSP", "RAC1P", "HISP"]


@pytest.fixture
def acs(tmp_path: Path) -> pd.DataFrame:
    """NIST's excerpt: four variables to synthesize, AGEP and PINCP (with its 'N', not applicable) released as
    they are."""
    return nist_inputs(tmp_path, FEATURES, 1500, "MSP,AGEP\n", bytes(range(32)))


def _release(source: Any, out: Path, **kw: Any) -> Any:
    from pramkit.synthesize import synthesize_release

    return synthesize_release(source, out, variables=VARIABLES, epsilon=8.0, key=bytes(range(32)), model="pgm",
                              rounds=len(VARIABLES), force=True, na_values=(), **kw)


def test_a_release_written_batch_by_batch_is_the_frame_paths(acs: pd.DataFrame, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc, "CHUNK_ROWS", 256)
    streamed = _release(tmp_path / "o.csv", tmp_path / "s.csv")
    framed = _release(acs, tmp_path / "f.csv")
    assert streamed.records is None  # never held while written
    back = pd.read_csv(tmp_path / "s.csv", dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(back, framed.data.astype(str))
    # the columns released as they are, byte for byte what the original holds
    pd.testing.assert_frame_equal(back[["AGEP", "PINCP"]], acs[["AGEP", "PINCP"]])
    pd.testing.assert_frame_equal(streamed.data.astype(str), back)
    s_man, f_man = (json.loads(Path(r.manifest_path).read_text()) for r in (streamed, framed))
    assert s_man["measurements"] == f_man["measurements"] and s_man["variables"] == f_man["variables"]
    assert s_man["released"]["rows"] == len(acs) == streamed.rows == s_man["rows"]


def test_every_column_drawn_is_written_in_the_files_types(acs: pd.DataFrame, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc, "CHUNK_ROWS", 300)
    path = tmp_path / "o.parquet"
    acs[VARIABLES].astype({"SEX": int, "RAC1P": int}).to_parquet(path, index=False)
    res = _release(path, tmp_path / "s.parquet", neighbours="add-remove", delta=1e-6)
    table = pq.read_table(tmp_path / "s.parquet")
    assert table.schema.names == VARIABLES and table.num_rows == res.rows == res.manifest["rows"]
    assert res.manifest["neighbours"] == "add-remove"
    assert str(table.schema.field("SEX").type) == "int64" and set(table.column("SEX").to_pylist()) <= {1, 2}


def test_a_write_that_fails_between_batches_leaves_nothing(acs: pd.DataFrame, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from pramkit.io import TableWriter

    monkeypatch.setattr(sc, "CHUNK_ROWS", 256)
    calls = []
    original = TableWriter.write

    def failing(self: Any, table: Any) -> None:
        calls.append(table.num_rows)
        if len(calls) == 2:
            raise WriteError("disk full (injected)")
        original(self, table)

    monkeypatch.setattr(TableWriter, "write", failing)
    acs.to_parquet(tmp_path / "o.parquet", row_group_size=256, index=False)
    before = (tmp_path / "o.parquet").read_bytes()
    with pytest.raises(PramkitError, match="injected"):
        _release(tmp_path / "o.parquet", tmp_path / "s.parquet")
    assert len(calls) == 2 and (tmp_path / "o.parquet").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.key", "o.csv", "o.parquet", "rules.csv"]


def test_a_long_release_reports_its_progress(acs: pd.DataFrame, tmp_path: Path) -> None:
    from pramkit.progress import watching

    last: dict[str, tuple[float, Any]] = {}
    with watching(lambda desc, done, total: last.__setitem__(desc, (done, total))):
        res = _release(tmp_path / "o.csv", tmp_path / "s.csv", quiet=True)
    assert last["reading"][0] == len(acs)
    assert last["fitting (budget spent)"] == (100, 100)  # the whole budget, in whole percents
    assert last["drawing"] == (len(VARIABLES), len(VARIABLES))
    assert last["writing"] == (res.rows, res.rows)


#: Files and settings the streamed path refuses at the command line: exit 2, one line, nothing written, the
#: inputs as they were.
BAD_CLI = {
    "a value spelled two ways": ("SEX,MSP\n1,6\n" + "2,1\n" * 40 + "1 ,6\n", [],
                                 "'1' (row 1) and '1 ' (row 42) are one value spelled two ways"),
    "a not-applicable code read as missing": ("SEX,MSP\n1,6\n2,N\n" * 20, ["--na-values", "N"],
                                              "MSP has missing values"),
    "a value outside the declared categories": ("SEX,MSP\n1,6\n2,7\n" * 20, ["--categories", "{cats}"],
                                                "MSP: the value '7' is not one of its declared categories"),
    "a variable the file lacks": ("SEX,MSP\n1,6\n2,1\n", ["--vars", "SEX,AGEP"], "no column 'AGEP' in the data"),
    "a column left out under add-or-remove": ("SEX,MSP,AGEP\n1,6,30\n2,1,40\n" * 5,
                                              ["--neighbours", "add-remove"], "the data also has AGEP"),
    "an empty file": ("SEX,MSP\n", [], "has no data rows"),
}


@pytest.mark.parametrize("case", list(BAD_CLI))
def test_a_bad_file_is_one_line_and_nothing_written(case: str, tmp_path: Path) -> None:
    from conftest import run_cli

    text, extra, words = BAD_CLI[case]
    src = _written(tmp_path, "o.csv", text)
    cats = tmp_path / "cats.json"
    cats.write_text(json.dumps({"MSP": ["1", "6"]}))
    extra = [str(cats) if x == "{cats}" else x for x in extra]
    args = ["--vars", "SEX,MSP", *extra] if "--vars" not in extra else extra
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, _out, err = run_cli("synthesize", src, *args, "--model", "pgm", "--epsilon", "2",
                              "--out", tmp_path / "s.csv", "--quiet")
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
