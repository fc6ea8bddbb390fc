"""pramkit.source.Source: the data a workflow reads, resolved once and handed down the stages."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pramkit
import pramkit.io_stat
from pramkit.errors import ParameterError
from pramkit.io import read_table
from pramkit.source import Source
from pramkit.workbench.source import describe_file

#: A small file with a missing value, a missing marker and a label written two ways around spaces.
ROWS = "sex,age,region\nf,31,Zürich\nm,45, Zürich\nNA,31,Genève\nf,,Genève\nm,45,Zürich\nf,31,Genève\n"


def _manifest_dict(m: Any) -> dict[str, Any]:
    """A manifest's content without what depends on the clock."""
    d = m.to_dict()
    d.pop("created", None)
    for v in d["variables"]:
        v.get("design", {}).pop("seconds", None)
    return d


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    f = tmp_path / "people.csv"
    f.write_text(ROWS, encoding="utf-8")
    return f


def test_every_kind_of_data_is_told_once(tmp_path: Path, csv: Path) -> None:
    frame = pd.read_csv(csv, dtype=str)
    parquet = tmp_path / "people.parquet"
    frame.to_parquet(parquet)
    folder = tmp_path / "parts"
    ds.write_dataset(pa.Table.from_pandas(frame), folder, format="parquet", max_rows_per_file=2,
                     max_rows_per_group=2)
    cases = [(csv, "file", "csv"), (str(parquet), "file", "parquet"), (folder, "folder", "parquet"),
             (frame, "pandas", "pandas"), (pl.from_pandas(frame), "polars", "polars"),
             (pl.from_pandas(frame).lazy(), "polars-lazy", "polars-lazy"),
             (pa.Table.from_pandas(frame, preserve_index=False), "arrow", "arrow")]
    for data, kind, fmt in cases:
        s = Source.open(data)
        assert (s.kind, s.format, s.columns) == (kind, fmt, ["sex", "age", "region"]), data
        assert Source.open(s) is s


@pytest.mark.parametrize("bad", [3, None, b"people.csv", ["a.csv"]])
def test_data_of_another_type_is_refused_with_the_workflow_message(bad: Any) -> None:
    with pytest.raises(ParameterError) as err:
        Source.open(bad)
    assert str(err.value) == ("data must be a file path, a pandas or polars DataFrame, a polars LazyFrame or an "
                              f"Arrow table, not {type(bad).__name__}")
    with pytest.raises(ParameterError, match=r"^data must be a file path"):
        pramkit.design_release(bad, ["sex"], epsilon=1.0)


def test_the_digest_is_the_files_sha256_read_once(csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = pramkit.source.sha256_of
    monkeypatch.setattr(pramkit.source, "sha256_of", lambda p: calls.append(p) or real(p))
    s = Source.open(csv)
    assert s.digest == hashlib.sha256(csv.read_bytes()).hexdigest() == s.digest
    assert len(calls) == 1
    assert Source.open(pd.read_csv(csv)).digest is None


def test_the_private_design_record_names_the_source_and_its_digest(csv: Path) -> None:
    plan = pramkit.plan_release(["sex"], epsilon=2.0)
    for data in (csv, Source.open(csv)):
        _, record = pramkit.design_planned(data, plan, rng=random.Random(1))
        assert (record.data, record.sha256) == (str(csv), hashlib.sha256(csv.read_bytes()).hexdigest())
    _, record = pramkit.design_planned(pl.read_csv(csv), plan, rng=random.Random(1))
    assert (record.data, record.sha256) == ("a polars DataFrame in memory", None)


def test_a_path_a_source_and_the_workbench_source_design_the_same_manifest(csv: Path) -> None:
    made = [pramkit.design_release(d, ["sex", "age"], epsilon=3.0, rng=random.Random(7))
            for d in (csv, str(csv), Source.open(csv), describe_file(csv))]
    first = _manifest_dict(made[0])
    assert all(_manifest_dict(m) == first for m in made[1:])


def test_a_source_is_read_with_its_own_settings(tmp_path: Path) -> None:
    f = tmp_path / "eu.csv"
    f.write_bytes("sex;area\nf;Zürich\n-9;Genève\nm;Zürich\n".encode("latin-1"))
    s = Source.open(f, na_values=["-9"], sep=";", encoding="latin-1")
    assert s.frame(["sex", "area"]).equals(read_table(f, na_values=["-9"], sep=";", encoding="latin-1"))
    # a Source given to a reader carries its settings; those the reader is given are not used
    table = pramkit.counts.count_groups(s, [["sex"]], na_values=(), sep=",")
    assert table.categories[0] == ("f", "m")


def test_a_stata_file_is_read_once_for_a_design(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pyreadstat = pytest.importorskip("pyreadstat")
    f = tmp_path / "survey.dta"
    frame = pd.DataFrame({"sex": [1, 2, 1, 2, 1, 2] * 5, "age": [1, 2, 3, 1, 2, 3] * 5})
    pyreadstat.write_dta(frame, str(f), variable_value_labels={"sex": {1: "male", 2: "female"}})
    reads = []
    real = pramkit.io_stat.read_stat
    monkeypatch.setattr(pramkit.io_stat, "read_stat", lambda *a, **k: reads.append(a) or real(*a, **k))
    m = pramkit.design_release(f, ["sex", "age"], epsilon=3.0, rng=random.Random(1))
    assert len(reads) == 1, reads  # the counts' three asks of the same columns: one read
    assert m.input["missing_codes"] == "Stata's extended missing values .a-.z"
    assert [v.matrix.categories for v in m.variables if v.name == "sex"] == [(1, 2)]


@settings(max_examples=25, deadline=None)
@given(chunk=st.integers(1, 8), columns=st.permutations(["sex", "age", "region"]).map(lambda c: c[:2]))
def test_batches_are_the_records_whatever_the_chunk(chunk: int, columns: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "people.csv"
        f.write_text(ROWS, encoding="utf-8")
        s = Source.open(f)
        meta, tables = s.batches(columns, chunk_rows=chunk)
        got = pa.concat_tables(tables).to_pandas()
        assert meta.columns == columns
        assert got.equals(read_table(f, columns=columns))
        assert got.equals(s.frame(columns))


def test_a_real_file_designs_the_same_from_its_source(sdc_data: Path) -> None:
    f = sdc_data / "testdata.csv"
    made = [pramkit.design_release(d, ["roof", "walls"], epsilon=4.0, rng=random.Random(3))
            for d in (f, Source.open(f))]
    assert _manifest_dict(made[0]) == _manifest_dict(made[1])
