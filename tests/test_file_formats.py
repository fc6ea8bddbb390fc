"""One table of file formats (:mod:`pramkit.io_formats`): every list of formats and suffixes the modules
kept by hand is derived from it, a format added to it (a scratch entry here) is read, offered by the app
and accepted by the command line with nothing else touched, and the Arrow IPC format it holds is read and
written on real data (the sdcMicro test file, converted here by pyarrow).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pytest
from conftest import assert_refused

import pramkit.io as pio
from pramkit import io_formats
from pramkit.cli import main
from pramkit.errors import DataError, ParameterError
from pramkit.io_formats import FILE_FORMATS, FileFormat
from pramkit.source import Source

SRC = Path(__file__).resolve().parents[1] / "src" / "pramkit"


def _table() -> list[FileFormat]:
    return list(FILE_FORMATS.values())


def test_every_list_of_formats_is_derived_from_the_table() -> None:
    from pramkit import io_codes, io_stat, source
    from pramkit.audit import release

    table = _table()
    assert {s: f.name for f in table for s in f.suffixes} == pio.FORMATS
    assert {s: f.name for f in table if f.reader == "stat" for s in f.suffixes} == io_stat.STAT_FORMATS
    assert {f.name: f.codes for f in table if f.codes} == io_stat.CODE_SYSTEMS
    assert {f.name: f.string_limit for f in table if f.string_limit} == io_codes.STRING_LIMITS
    assert {f.name: f.called for f in table} == io_codes._NAMES
    assert tuple(f.name for f in table if f.whole) == source.READ_WHOLE
    assert tuple(f.name for f in table if f.stamped) == release.STAMPED
    assert io_formats.suffix_formats() == pio.FORMATS
    assert all(f.reader in io_formats.READERS and set(f.written or ()) <= set(f.suffixes) for f in table)


def test_the_derived_lists_are_those_kept_by_hand_before() -> None:
    """Deriving changed nothing the formats of before were: the same lists, suffixes and messages."""
    from pramkit import io_stat, source
    from pramkit.audit import release

    assert source.READ_WHOLE == release.STAMPED == ("stata", "spss", "sas")
    assert io_stat.STAT_FORMATS == {".dta": "stata", ".sav": "spss", ".zsav": "spss", ".sas7bdat": "sas",
                                    ".xpt": "sas"}
    assert io_stat.CODE_SYSTEMS == {"stata": "Stata's extended missing values .a-.z",
                                    "sas": "SAS's special missing values .A-.Z and ._",
                                    "spss": "SPSS's user-missing values"}
    before = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
              **io_stat.STAT_FORMATS}
    assert {s: n for s, n in pio.FORMATS.items() if n != "feather"} == before
    with pytest.raises(ParameterError, match=r"no open writer of \.sas7bdat files exists; write \.xpt"):
        pio.check_written("out.sas7bdat")
    assert io_formats.names_where("spark") == io_formats.names_where("parts") == ("csv", "parquet")


def test_the_app_offers_every_suffix_of_the_table() -> None:
    pytest.importorskip("shiny")
    from pramkit.app import ui

    assert ui.DATA_FILES == ui.data_files() == sorted(s for f in _table() for s in f.suffixes)


#: Modules that still name formats in a list of their own, each with its reason.
NAMED_ELSEWHERE = {
    "report/build.py": "which files the report reads by streaming (to move to the table with the report's refactor)",
    "audit/declared.py": "which originals a DP count is drawn again from (to move to the table with the audit's "
                         "field declarations)",
    "swap/run.py": "a swap's partners file, written as CSV or Parquet by writers of its own, not a data file",
}


def _format_lists(path: Path) -> list[tuple[int, list[str]]]:
    """The tuples, lists and sets of two or more format names or suffixes written in ``path``."""
    words = set(FILE_FORMATS) | {s for f in _table() for s in f.suffixes}
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 and all(
                isinstance(e, ast.Constant) and e.value in words for e in node.elts):
            found.append((node.lineno, [e.value for e in node.elts]))  # type: ignore[attr-defined]
    return found


def test_no_module_keeps_a_list_of_formats_of_its_own() -> None:
    """A list such as ``("stata", "spss", "sas")`` or ``(".csv", ".parquet")`` is a fact of the table: asked
    of it, it cannot fall out of step."""
    kept = {str(p.relative_to(SRC)): lists for p in sorted(SRC.rglob("*.py"))
            if p.name != "io_formats.py" and (lists := _format_lists(p))}
    assert {k: v for k, v in kept.items() if k not in NAMED_ELSEWHERE} == {}, "ask pramkit.io_formats instead"


def test_the_list_check_sees_a_list_of_formats(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('WHOLE = ("stata", "spss", "sas")\nX = ("a", "csv")\ndef f(s):\n    return s in (".csv", ".pq")\n',
                 encoding="utf-8")
    assert _format_lists(f) == [(1, ["stata", "spss", "sas"]), (4, [".csv", ".pq"])]


@pytest.fixture
def testdata(sdc_data: Path) -> pa.Table:
    """The sdcMicro test file as pyarrow reads it (numbers as numbers)."""
    return pacsv.read_csv(sdc_data / "testdata.csv")


def test_a_format_added_to_the_table_is_read_offered_and_accepted(testdata: pa.Table, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Out of the table, ``.arrow`` is refused everywhere; a scratch entry (``.ipc``, read by the Arrow IPC
    reader) makes ``Source.open``, ``read_table``, the app's upload field and the command line take it."""
    data = tmp_path / "data.arrow"
    feather.write_feather(testdata, data, chunksize=1000)
    monkeypatch.delitem(FILE_FORMATS, "feather")
    with pytest.raises(ParameterError, match=r"cannot tell the format of .*data\.arrow"):
        pio.read_table(data)
    assert ".arrow" not in io_formats.suffix_formats()
    assert_refused(tmp_path, ["design", data, "--vars", "roof", "--epsilon", "1", "--out", tmp_path / "m.json"],
                   "cannot tell the format of", capsys)

    scratch = tmp_path / "data.ipc"
    feather.write_feather(testdata, scratch, chunksize=1000)
    entry = FileFormat("ipc", (".ipc",), "IPC", "an IPC", "feather")
    monkeypatch.setitem(FILE_FORMATS, "ipc", entry)
    frame = pio.read_table(scratch, columns=["roof", "sex"])
    assert frame.equals(testdata.select(["roof", "sex"]).to_pandas())
    source = Source.open(scratch)
    meta, tables = source.batches(["walls"], chunk_rows=1500)
    assert (source.format, meta.rows, [t.num_rows for t in tables]) == ("ipc", 4580, [2000, 2000, 580])
    if importlib.util.find_spec("shiny") is not None:  # the app's upload field (its extra installed)
        from pramkit.app.ui import data_files

        assert ".ipc" in data_files() and ".arrow" not in data_files()
    key = tmp_path / "k.key"
    assert main(["keygen", str(key)]) == 0
    manifest, out = tmp_path / "m.json", tmp_path / "released.ipc"
    assert main(["design", str(scratch), "--vars", "roof,walls", "--epsilon", "1", "--out", str(manifest), "-q",
                 "--key-file", str(key)]) == 0
    assert main(["apply", str(scratch), "--manifest", str(manifest), "--out", str(out), "--key-file", str(key),
                 "-q"]) == 0
    released = feather.read_table(out)
    assert released.num_rows == 4580 and released.drop(["roof", "walls"]).equals(testdata.drop(["roof", "walls"]))


def test_an_arrow_file_is_read_as_pyarrow_reads_it(testdata: pa.Table, tmp_path: Path) -> None:
    """A Feather file pyarrow wrote (compressed, in batches of 1000 rows) is read chunk by chunk, its types
    kept; its columns come from its schema alone."""
    data = tmp_path / "testdata.feather"
    feather.write_feather(testdata, data, chunksize=1000)
    meta, tables = pio.iter_batches(data, columns=["sex", "income"], chunk_rows=700)
    chunks = list(tables)
    assert (meta.format, meta.rows, meta.columns) == ("feather", 4580, ["sex", "income"])
    assert max(t.num_rows for t in chunks) <= 1000 and sum(t.num_rows for t in chunks) == 4580
    assert pa.concat_tables(chunks).equals(testdata.select(["sex", "income"]))
    assert pio.read_table(data).equals(feather.read_table(data).to_pandas())
    assert pio.file_columns(data) == testdata.column_names
    with pytest.raises(DataError, match="column"):
        pio.read_table(data, columns=["nowhere"])
    broken = tmp_path / "broken.arrow"
    broken.write_bytes(data.read_bytes()[:100])
    with pytest.raises(DataError, match="cannot read Arrow IPC file"):
        pio.read_table(broken)


def test_a_release_written_as_arrow_holds_the_csv_release(sdc_data: Path, tmp_path: Path) -> None:
    """``apply`` writes the same release as Arrow IPC and as CSV (same key), the same bytes each time (whatever
    memory held past the values: :func:`pramkit.io.exact_array`)."""
    key, manifest = tmp_path / "k.key", tmp_path / "m.json"
    assert main(["keygen", str(key)]) == 0
    assert main(["design", str(sdc_data / "testdata.csv"), "--vars", "roof,walls", "--epsilon", "2", "--out",
                 str(manifest), "-q", "--key-file", str(key)]) == 0
    outs = {name: tmp_path / name for name in ("r.csv", "r.arrow", "again.arrow", "r.feather")}
    for out in outs.values():
        assert main(["apply", str(sdc_data / "testdata.csv"), "--manifest", str(manifest), "--out", str(out),
                     "--key-file", str(key), "-q"]) == 0
    csv = pd.read_csv(outs["r.csv"], dtype=str, keep_default_na=False)
    arrow = feather.read_table(outs["r.arrow"]).to_pandas()
    assert arrow.fillna("").astype(str).equals(csv)  # a CSV input's columns are text, in both outputs
    digest = {n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in outs.items() if p.suffix != ".csv"}
    assert digest["r.arrow"] == digest["again.arrow"] == digest["r.feather"]


def test_an_arrow_release_of_typed_columns_with_nulls_is_derived_again_byte_for_byte(
        sdc_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """EU-SILC as Parquet (numbers as numbers, empty incomes null) released as Arrow IPC: the same bytes each
    time, and the audit derives it again with the key byte for byte."""
    original = tmp_path / "eusilc.parquet"
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pacsv.read_csv(sdc_data / "eusilc_laeken.csv").slice(0, 3000), original)
    key, manifest = tmp_path / "k.key", tmp_path / "m.json"
    assert main(["keygen", str(key)]) == 0
    assert main(["design", str(original), "--vars", "db040,rb090", "--epsilon", "2", "--out", str(manifest), "-q",
                 "--key-file", str(key)]) == 0
    outs = [tmp_path / "a.arrow", tmp_path / "b.arrow"]
    for out in outs:
        assert main(["apply", str(original), "--manifest", str(manifest), "--out", str(out), "--key-file",
                     str(key), "-q"]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    released = feather.read_table(outs[0])
    assert released.column("py010n").null_count > 0 and pa.types.is_floating(released.schema.field("py010n").type)
    capsys.readouterr()
    assert main(["audit", "--manifest", str(manifest), "--released", str(outs[0]), "--original", str(original),
                 "--key-file", str(key)]) == 0
    assert "reproduces the release byte for byte" in capsys.readouterr().out


def test_estimates_of_an_arrow_release_are_those_of_its_csv(sdc_data: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    key, manifest = tmp_path / "k.key", tmp_path / "m.json"
    assert main(["keygen", str(key)]) == 0
    assert main(["design", str(sdc_data / "testdata.csv"), "--vars", "roof", "--epsilon", "2", "--out",
                 str(manifest), "-q", "--key-file", str(key)]) == 0
    printed = {}
    for name in ("r.csv", "r.arrow"):
        out = tmp_path / name
        assert main(["apply", str(sdc_data / "testdata.csv"), "--manifest", str(manifest), "--out", str(out),
                     "--key-file", str(key), "-q"]) == 0
        capsys.readouterr()
        assert main(["estimate", str(out), "--manifest", str(manifest), "--vars", "roof", "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        result.pop("released_file")
        printed[name] = result
    assert printed["r.csv"] == printed["r.arrow"]
    released = feather.read_table(tmp_path / "r.arrow").column("roof").to_pandas().value_counts()
    assert {str(c["category"]): c["released"] for c in printed["r.arrow"]["cells"]} == released.to_dict()


def test_a_stata_file_written_as_arrow_holds_its_missing_codes_as_nulls(tmp_path: Path) -> None:
    pyreadstat = pytest.importorskip("pyreadstat")
    src, out = tmp_path / "a.dta", tmp_path / "a.arrow"
    pyreadstat.write_dta(pd.DataFrame({"age": pd.Series([31, "a", 45], dtype=object), "sex": ["m", "f", "f"]}),
                         str(src), missing_user_values={"age": ["a"]})
    meta, tables = pio.iter_batches(src, keep_missing_codes=True)
    with pio.TableWriter(out, meta=meta) as writer:
        for table in tables:
            writer.write(table)
    back = feather.read_table(out)
    assert back.column("sex").to_pylist() == ["m", "f", "f"]
    assert back.column("age").to_pylist()[1] is None and back.num_rows == 3


def test_what_reads_csv_and_parquet_only_refuses_arrow(testdata: pa.Table, tmp_path: Path) -> None:
    """The Spark engine and a dataset folder's parts are the table's ``spark`` and ``parts`` formats."""
    data = tmp_path / "data.arrow"
    feather.write_feather(testdata, data)
    folder = tmp_path / "parts"
    folder.mkdir()
    feather.write_feather(testdata, folder / "part-0.arrow")
    with pytest.raises(DataError, match="which is not a CSV or Parquet part, but feather"):
        pio.dataset_parts(folder)
    pytest.importorskip("pyspark")
    from pramkit.engine.spark.files import _check_format

    with pytest.raises(ParameterError, match=r"the Spark engine reads CSV and Parquet, not feather"):
        _check_format(data, "reads")


def test_the_table_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        FILE_FORMATS["csv"].whole = True  # type: ignore[misc]


@pytest.mark.parametrize("existing", [False, True], ids=["new", "over-good"])
def test_an_arrow_write_that_fails_leaves_nothing_partial(sdc_data: Path, tmp_path: Path, capsys,
                                                         monkeypatch: pytest.MonkeyPatch, existing: bool) -> None:
    """The Arrow IPC writer on a full disk (ENOSPC injected at its second batch): one line, exit 2, no temporary
    left, a good file already there kept byte for byte, the inputs unchanged."""
    import errno

    data, key, manifest, out = sdc_data / "testdata.csv", tmp_path / "k.key", tmp_path / "m.json", tmp_path / "r.arrow"
    key.write_text(bytes(range(32)).hex())
    key.chmod(0o600)
    assert main(["design", str(data), "--vars", "roof,walls", "--epsilon", "2", "--out", str(manifest), "-q",
                 "--key-file", str(key)]) == 0
    args = ["apply", str(data), "--manifest", str(manifest), "--out", str(out), "--key-file", str(key), "-q",
            "--chunk-rows", "1000"]
    if existing:
        assert main(args) == 0
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()}
    data_digest = hashlib.sha256(data.read_bytes()).hexdigest()
    original = pio.TableWriter._write_chunk
    calls = {"n": 0}

    def full(self, table):  # the disk fills at the second batch
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, table)

    monkeypatch.setattr(pio.TableWriter, "_write_chunk", full)
    capsys.readouterr()
    code = main([*args, *(["--force"] if existing else [])])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err, err
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()}
    assert after == before  # nothing partial, no temporary, a good file kept, no receipt replaced
    assert hashlib.sha256(data.read_bytes()).hexdigest() == data_digest
    assert calls["n"] >= 2  # the failure was reached: the file is written in batches
