"""Input files as offices export them, read by every command through the one reader.

* One value, one spelling rule: a value of the EU-SILC file spelled a second way (NFD, surrounding blanks,
  ``3``/``3.0``) is refused by every command that reads original data (design, risk, swap, compare) with the
  same line naming both spellings and their rows, and found by those that read a release against its manifest
  (apply, estimate, risk --manifest, audit).  The rows expected are found with pandas.
* ``--sep`` and ``--encoding``: the EU-SILC file written semicolon-separated in Latin-1 gives every command the
  answers the comma-separated UTF-8 file gives (the reference is the UTF-8 run, not a number typed here), and
  its CSV release is written back in its own separator and encoding, value for value the UTF-8 release.
* Folders of part files (``pyarrow.dataset.write_dataset``, and a folder shaped like Spark's output, with
  ``_SUCCESS``, checksum files and a receipt beside it) are read as one table by estimate, audit, risk, design
  and apply.
* Bad inputs: exit 2, one line, inputs unchanged, nothing written.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from conftest import SDC_DATA, assert_refused
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.engine.receipt import receipt_path, write_receipt
from pramkit.errors import DataError, ParameterError
from pramkit.io import TableWriter, dataset_parts, iter_batches, read_table
from pramkit.manifest import Manifest

COLUMNS = ["db030", "db040", "hsize", "rb090", "pl030", "rb050"]
NFC = "K\u00e4rnten"
NFD = unicodedata.normalize("NFD", NFC)


def run(args: list, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def ok(args: list, capsys) -> str:
    code, out, err = run(args, capsys)
    assert code == 0, (args, err)
    return out


@pytest.fixture(scope="module")
def eusilc(tmp_path_factory) -> Path:
    """EU-SILC (missing values in pl030; 'Carinthia' written 'Kärnten' so that a Latin-1 byte occurs), as a
    comma-separated UTF-8 file and as a semicolon-separated Latin-1 file; a manifest, a key and releases."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = tmp_path_factory.mktemp("inputs")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=COLUMNS, dtype=str, keep_default_na=False)
    data["db040"] = data["db040"].replace({"Carinthia": NFC})
    data.to_csv(d / "utf8.csv", index=False)
    data.to_csv(d / "latin1.csv", index=False, sep=";", encoding="latin-1")
    assert (d / "latin1.csv").read_bytes().count("ä".encode("latin-1")) > 0
    return d


# -- one reader, one spelling rule ------------------------------------------------------------------------------

#: (name, column, value respelled, its new spelling)
VARIANTS = [("nfd", "db040", NFC, NFD), ("blank", "db040", "Tyrol", " Tyrol"), ("float", "hsize", "3", "3.0")]


@pytest.fixture(scope="module")
def spelled(eusilc) -> dict[str, tuple[str, str, str, int, int]]:
    """One file per variant, the value respelled on one record (rows counted from 1, found with pandas)."""
    data = pd.read_csv(eusilc / "utf8.csv", dtype=str, keep_default_na=False)
    out = {}
    for name, column, value, new in VARIANTS:
        bad = data.copy()
        rows = bad.index[bad[column] == value]
        bad.loc[rows[len(rows) // 2], column] = new
        bad.to_csv(eusilc / f"{name}.csv", index=False)
        back = pd.read_csv(eusilc / f"{name}.csv", dtype=str, keep_default_na=False)[column]
        first = int((back == value).to_numpy().argmax()) + 1
        respelled = int((back == new).to_numpy().argmax()) + 1
        out[name] = (column, value, new, first, respelled)
    return out


#: The commands that read original data and find its categories: each refuses a second spelling alike.
ORIGINAL_READERS = {
    "design": lambda f, d: ["design", f, "--vars", "db040,hsize", "--method", "rr", "--epsilon", "3",
                            "--out", d / "out.json", "--quiet"],
    "risk": lambda f, d: ["risk", f, "--keys", "db040,hsize,rb090", "--weights", "rb050"],
    "risk --suda": lambda f, d: ["risk", f, "--keys", "db040,hsize,rb090", "--suda"],
    "swap": lambda f, d: ["swap", f, "--hid", "db030", "--geo", "db040", "--similar", "hsize", "--out", d / "s.csv"],
    "swap (risk variable)": lambda f, d: ["swap", f, "--hid", "db030", "--geo", "db040", "--risk-vars", "hsize",
                                          "--rate", "0.5", "--out", d / "s.csv"],
    "compare": lambda f, d: ["compare", f, "--hid", "db030", "--geo", "db040", "--risk-vars", "hsize,rb090"],
}


@pytest.mark.parametrize("variant", [v[0] for v in VARIANTS])
@pytest.mark.parametrize("command", list(ORIGINAL_READERS))
def test_every_reader_of_original_data_refuses_a_second_spelling(eusilc, spelled, capsys, command, variant) -> None:
    column, value, new, first, respelled = spelled[variant]
    args = ORIGINAL_READERS[command](eusilc / f"{variant}.csv", eusilc)
    before = {p.name: p.read_bytes() for p in eusilc.iterdir() if p.is_file()}
    code, _, err = run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (args, err)
    assert {p.name: p.read_bytes() for p in eusilc.iterdir() if p.is_file()} == before
    line = lines[0]
    assert f"column '{column}'" in line, line
    assert f"{value!r} (row {first})" in line and f"{new!r} (row {respelled})" in line, line
    assert "one value spelled two ways" in line, line


def test_the_clean_file_goes_through_the_same_commands(eusilc, capsys) -> None:
    """The control: without a second spelling each of those commands succeeds on the same columns."""
    for command, args in ORIGINAL_READERS.items():
        ok(args(eusilc / "utf8.csv", eusilc), capsys)
        for written in ("out.json", "out.design-record.json", "s.csv", "s.csv.receipt.json"):
            (eusilc / written).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def released(eusilc) -> Path:
    """A release of the clean file, and copies with one released value respelled."""
    d = eusilc
    assert main(["design", str(d / "utf8.csv"), "--vars", "db040,hsize", "--method", "rr", "--epsilon", "3",
                 "--out", str(d / "m.json"), "--quiet"]) == 0
    assert main(["keygen", str(d / "key")]) == 0
    assert main(["keygen", str(d / "other.key")]) == 0
    assert main(["apply", str(d / "utf8.csv"), "--manifest", str(d / "m.json"), "--out", str(d / "rel.csv"),
                 "--key-file", str(d / "key"), "--quiet"]) == 0
    rel = pd.read_csv(d / "rel.csv", dtype=str, keep_default_na=False)
    for name, column, value, new in VARIANTS:
        bad = rel.copy()
        bad.loc[bad.index[bad[column] == value][7], column] = new
        bad.to_csv(d / f"rel_{name}.csv", index=False)
    return d


@pytest.mark.parametrize("variant", [v[0] for v in VARIANTS])
def test_readers_of_a_release_find_the_respelled_category(released, spelled, capsys, variant) -> None:
    """apply, estimate and risk --manifest refuse the value as a category spelled another way; audit reports
    the same finding as a failed check (exit 1), naming the row.  (``apply`` reads the original file of the
    variant, which ``spelled`` writes.)"""
    d = released
    name, column, value, new = next(v for v in VARIANTS if v[0] == variant)
    path = d / f"rel_{variant}.csv"
    row = int((pd.read_csv(path, dtype=str, keep_default_na=False)[column] == new).to_numpy().argmax()) + 1
    finding = f"column '{column}', row {row}: value {new!r} is not one of its categories but the category"
    for args in (["apply", d / f"{variant}.csv", "--manifest", d / "m.json", "--out", d / "x.csv"],
                 ["estimate", path, "--manifest", d / "m.json", "--vars", column],
                 ["risk", path, "--keys", "db040,hsize,rb090", "--manifest", d / "m.json",
                  "--sampling-fraction", "0.01"]):
        code, _, err = run(args, capsys)
        lines = [x for x in err.strip().splitlines() if "no release receipt" not in x]
        assert code == 2 and len(lines) == 1 and "spelled another way" in lines[0], (args, err)
        if args[0] != "apply":
            assert finding in lines[0], lines[0]
    code, out, _ = run(["audit", "--manifest", d / "m.json", "--released", path, "--original", d / "utf8.csv"],
                       capsys)
    assert code == 1 and finding in out and "spelled another way" in out, out


# -- --sep and --encoding -----------------------------------------------------------------------------------

DIALECT = ["--sep", ";", "--encoding", "latin-1"]


def test_a_semicolon_latin1_file_answers_as_the_utf8_file(eusilc, capsys, tmp_path) -> None:
    """design, apply, estimate, risk, swap, compare, audit, resample and report: the Latin-1 file with ';' gives
    what the UTF-8 file with ',' gives, and the release keeps the input's separator and encoding."""
    d = eusilc
    key = d / "dialect.key"
    if not key.exists():
        assert main(["keygen", str(key)]) == 0
    runs = {}
    for name, extra in (("utf8", []), ("latin1", DIALECT)):
        f = d / f"{name}.csv"
        o = tmp_path / name
        o.mkdir()
        ok(["design", f, "--vars", "db040,rb090", "--method", "rr", "--epsilon", "3", "--out", o / "own.json",
            "--quiet", *extra], capsys)
        runs.setdefault("designs", []).append(Manifest.read(o / "own.json"))
        shutil.copy(tmp_path / "utf8" / "own.json", o / "m.json")  # one manifest: one release key, the same draws
        ok(["apply", f, "--manifest", o / "m.json", "--out", o / "rel.csv", "--key-file", key, "--quiet", *extra],
           capsys)
        runs[name] = {
            "estimate": json.loads(ok(["estimate", o / "rel.csv", "--manifest", o / "m.json", "--vars", "db040",
                                       "--by", "rb090", "--json", *extra], capsys)),
            "risk": json.loads(ok(["risk", f, "--keys", "db040,hsize,rb090", "--weights", "rb050", "--json",
                                   *extra], capsys)),
            "suda": json.loads(ok(["risk", f, "--keys", "db040,hsize,rb090", "--suda", "--json", *extra], capsys)),
            "swap": json.loads(ok(["swap", f, "--hid", "db030", "--geo", "db040", "--similar", "hsize", "--rate",
                                   "0.2", "--key-file", key, "--out", o / "swapped.csv", "--json", *extra], capsys)),
            "compare": json.loads(ok(["compare", f, "--hid", "db030", "--geo", "db040", "--risk-vars", "rb090",
                                      "--key-file", key, "--json", *extra], capsys)),
            "audit": ok(["audit", "--manifest", o / "m.json", "--released", o / "rel.csv", "--original", f,
                         "--key-file", key, *extra], capsys),
            "resample": json.loads(ok(["resample", o / "rel.csv", "--manifest", o / "m.json", "--out",
                                       o / "post.csv", "--key-file", key, "--json", *extra], capsys)),
        }
        ok(["report", f, "--manifest", o / "m.json", "--released", o / "rel.csv", "--keys", "db040,rb090",
            "--out", o / "report.html", "--quiet", *extra], capsys)
    first, second = runs.pop("designs")
    assert [(v.name, v.matrix.categories, v.matrix.matrix.tolist()) for v in first.variables] == \
        [(v.name, v.matrix.categories, v.matrix.matrix.tolist()) for v in second.variables]
    a, b = runs["utf8"], runs["latin1"]
    assert a["estimate"]["cells"] == b["estimate"]["cells"]
    for field in ("tau1", "tau2", "sample_uniques", "cells"):
        assert a["risk"][field] == b["risk"][field]
    assert a["suda"]["total_score"] == b["suda"]["total_score"]
    assert a["swap"]["swapped_households"] == b["swap"]["swapped_households"]
    assert a["compare"]["methods"] == b["compare"]["methods"]
    assert "checks passed" in b["audit"] and "derived again with the key" in b["audit"], b["audit"]
    assert a["resample"]["rows"] == b["resample"]["rows"]
    # the releases: written back in the input's dialect, value for value the UTF-8 release
    for written in ("rel.csv", "swapped.csv", "post.csv"):
        raw = (tmp_path / "latin1" / written).read_bytes()
        assert NFC.encode("latin-1") in raw and NFC.encode("utf-8") not in raw
        assert raw.splitlines()[0].count(b";") == len(COLUMNS) - 1
        theirs = pd.read_csv(tmp_path / "latin1" / written, sep=";", encoding="latin-1", dtype=str,
                             keep_default_na=False)
        ours = pd.read_csv(tmp_path / "utf8" / written, dtype=str, keep_default_na=False)
        pd.testing.assert_frame_equal(theirs, ours)


def test_a_wrong_encoding_names_the_file_the_line_and_the_byte(eusilc, capsys) -> None:
    raw = (eusilc / "latin1.csv").read_bytes()
    offset = next(i for i, byte in enumerate(raw) if byte >= 0x80)  # the first byte UTF-8 cannot start with here
    line = raw[:offset].count(b"\n") + 1
    for args in (["risk", eusilc / "latin1.csv", "--keys", "db040", "--sampling-fraction", "0.01", "--sep", ";"],
                 ["design", eusilc / "latin1.csv", "--vars", "db040", "--epsilon", "2", "--sep", ";",
                  "--out", eusilc / "never.json"]):
        assert_refused(eusilc, args, f"file '{eusilc / 'latin1.csv'}' is not utf-8 text: line {line}, byte offset "
                                     f"{offset}", capsys)


def test_a_semicolon_file_read_with_commas_says_which_separator(eusilc, capsys) -> None:
    assert_refused(eusilc, ["risk", eusilc / "latin1.csv", "--keys", "db040", "--sampling-fraction", "0.01",
                            "--encoding", "latin-1"], "give --sep ';'", capsys)


BAD_DIALECTS = [(["--sep", ";;"], "must be one character"), (["--sep", '"'], "cannot be '\"'"),
                (["--sep", ""], "must be one character"), (["--encoding", "latin-9x"], "unknown encoding 'latin-9x'"),
                (["--encoding", "base64"], "unknown encoding 'base64'")]
COMMANDS = {
    "design": lambda d: ["design", d / "utf8.csv", "--vars", "db040", "--epsilon", "2", "--out", d / "n.json"],
    "apply": lambda d: ["apply", d / "utf8.csv", "--manifest", d / "m.json", "--out", d / "n.csv"],
    "risk": lambda d: ["risk", d / "utf8.csv", "--keys", "db040", "--sampling-fraction", "0.01"],
    "estimate": lambda d: ["estimate", d / "rel.csv", "--manifest", d / "m.json", "--vars", "db040"],
    "audit": lambda d: ["audit", "--manifest", d / "m.json", "--released", d / "rel.csv"],
    "swap": lambda d: ["swap", d / "utf8.csv", "--hid", "db030", "--geo", "db040", "--out", d / "n.csv"],
    "compare": lambda d: ["compare", d / "utf8.csv", "--hid", "db030", "--geo", "db040", "--risk-vars", "rb090"],
    "resample": lambda d: ["resample", d / "rel.csv", "--manifest", d / "m.json", "--out", d / "n.csv"],
    "report": lambda d: ["report", d / "utf8.csv", "--manifest", d / "m.json", "--released", d / "rel.csv",
                         "--keys", "db040", "--out", d / "n.html"],
}


@pytest.mark.parametrize("flags,message", BAD_DIALECTS, ids=[" ".join(f) for f, _ in BAD_DIALECTS])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_separator_or_encoding_is_one_line(released, capsys, command, flags, message) -> None:
    assert_refused(released, [*COMMANDS[command](released), *flags], message, capsys)


def test_a_value_the_output_encoding_cannot_write_is_refused(tmp_path) -> None:
    """The injected failure of the transcoding writer: a character Latin-1 has no byte for; nothing is left."""
    src = tmp_path / "eu.csv"
    src.write_bytes("area;n\nWien;1\n".encode("latin-1"))
    meta, tables = iter_batches(src, sep=";", encoding="latin-1")
    with pytest.raises(Exception) as caught, TableWriter(tmp_path / "out.csv", meta=meta) as writer:
        writer.write(pa.table({"area": ["Wien", "\u0141\u00f3d\u017a"], "n": ["1", "2"]}))
    assert "has no iso8859-1 byte" in str(caught.value) and "'\u0141'" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eu.csv"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255,
                                                              blacklist_characters='"\r\n'), max_size=6),
                               st.sampled_from(["1", "2", "", "NA"])), min_size=1, max_size=20),
       sep=st.sampled_from([",", ";", "\t", "|"]), encoding=st.sampled_from(["utf-8", "latin-1", "cp1252"]))
def test_any_dialect_round_trips_through_the_reader_and_writer(tmp_path_factory, rows, sep, encoding) -> None:
    """Texts of Latin-1's range in any separator and encoding: read as pandas reads them (the oracle), and
    written back by TableWriter into bytes that read back the same."""
    d = tmp_path_factory.mktemp("dialect")
    text = [t.replace("\x7f", "") for t, _ in rows]
    if encoding == "cp1252":
        text = [t.encode("cp1252", errors="ignore").decode("cp1252") for t in text]
    frame = pd.DataFrame({"name": text, "code": [c for _, c in rows]})
    src, out = d / "in.csv", d / "out.csv"
    frame.to_csv(src, sep=sep, encoding=encoding, index=False)
    oracle = pd.read_csv(src, sep=sep, encoding=encoding, dtype=str, keep_default_na=False)
    oracle = oracle.mask(oracle.isin(["", "NA"]), None)
    assert read_table(src, sep=sep, encoding=encoding).equals(oracle)
    meta, tables = iter_batches(src, sep=sep, encoding=encoding, keep_missing_codes=True)
    with TableWriter(out, meta=meta) as writer:
        for t in tables:
            writer.write(t)
    assert read_table(out, sep=sep, encoding=encoding).equals(oracle)


# -- folders of part files --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folders(released) -> Path:
    """The release as one Parquet file, as a pyarrow dataset folder, and as folders shaped like Spark's output
    (Parquet and CSV part files, _SUCCESS, .crc files, the receipt beside the folder)."""
    d = released
    rel = read_table(d / "rel.csv", na_values=())
    table = pa.Table.from_pandas(rel, preserve_index=False)
    table = table.cast(pa.schema([(c, pa.string()) for c in table.column_names]))  # text, as Spark writes it
    ds.write_dataset(table, d / "rel_dataset", format="parquet", max_rows_per_file=1500, max_rows_per_group=1500)
    assert len(dataset_parts(d / "rel_dataset")[1]) == 10  # part-0 .. part-9: read part-2 before part-10
    manifest = Manifest.read(d / "m.json")
    for fmt in ("parquet", "csv"):
        spark = d / f"rel_spark.{fmt}"
        spark.mkdir()
        for i, start in enumerate(range(0, table.num_rows, 4000)):
            part = spark / f"part-{i:05d}-4f1c2e7a-0d3b-4c1e-9a55-2b1e7c9f0a11-c000" \
                           f"{'.snappy.parquet' if fmt == 'parquet' else '.csv'}"
            chunk = table.slice(start, 4000)
            pq.write_table(chunk, part) if fmt == "parquet" else chunk.to_pandas().to_csv(part, index=False)
            (spark / f".{part.name}.crc").write_bytes(b"crc")
        (spark / f"part-{i + 1:05d}-empty.{fmt if fmt == 'csv' else 'snappy.parquet'}").write_bytes(b"")
        (spark / "_SUCCESS").write_bytes(b"")
        (spark / "._SUCCESS.crc").write_bytes(b"crc")
        write_receipt(spark, manifest, rows=table.num_rows)  # as apply_file_spark writes it: no digest
    return d


@pytest.mark.parametrize("name", ["rel_dataset", "rel_spark.parquet", "rel_spark.csv"])
def test_estimate_reads_a_folder_as_the_file(folders, capsys, name) -> None:
    d = folders
    single = json.loads(ok(["estimate", d / "rel.csv", "--manifest", d / "m.json", "--vars", "db040,hsize",
                            "--json"], capsys))
    code, out, err = run(["estimate", d / name, "--manifest", d / "m.json", "--vars", "db040,hsize", "--json"],
                         capsys)
    assert code == 0, err
    assert json.loads(out)["cells"] == single["cells"]
    assert ("no release receipt" in err) == (name == "rel_dataset"), err  # Spark's receipt lies beside its folder


@pytest.mark.parametrize("name", ["rel_spark.parquet", "rel_spark.csv"])
def test_audit_reads_sparks_output_folder(folders, capsys, name) -> None:
    """The manifest audit with the folder and its receipt, and the release audit with the original and the
    key: the key derives the folder's values again."""
    d = folders
    code, out, _ = run(["audit", "--manifest", d / "m.json", "--released", d / name, "--original", d / "utf8.csv",
                        "--key-file", d / "key"], capsys)
    assert code == 0, out
    assert "receipt records no digest" in out and "the key reproduces the release value for value" in out, out
    code, out, _ = run(["audit", "--manifest", d / "m.json", "--released", d / name, "--original", d / "utf8.csv",
                        "--key-file", d / "other.key"], capsys)
    assert code == 1 and "the key does not reproduce the release" in out, out


def test_other_commands_read_a_dataset_folder(folders, capsys, tmp_path) -> None:
    """risk, design and apply read the folder as they read the file it was written from."""
    d = folders
    single = json.loads(ok(["risk", d / "rel.csv", "--keys", "db040,hsize,rb090", "--weights", "rb050", "--json",
                            "--na-values", ""], capsys))
    folder = json.loads(ok(["risk", d / "rel_dataset", "--keys", "db040,hsize,rb090", "--weights", "rb050",
                            "--json", "--na-values", ""], capsys))
    assert folder["tau1"] == single["tau1"] and folder["cells"] == single["cells"]
    data = d / "orig_dataset"
    if not data.exists():
        ds.write_dataset(pa.Table.from_pandas(read_table(d / "utf8.csv", na_values=()), preserve_index=False),
                         data, format="parquet", max_rows_per_file=5000, max_rows_per_group=5000)
    ok(["apply", data, "--manifest", d / "m.json", "--out", tmp_path / "a.parquet", "--key-file", d / "key",
        "--quiet", "--na-values", ""], capsys)
    ok(["apply", d / "utf8.csv", "--manifest", d / "m.json", "--out", tmp_path / "b.csv", "--key-file", d / "key",
        "--quiet", "--na-values", ""], capsys)
    assert pq.read_table(tmp_path / "a.parquet").to_pandas().equals(read_table(tmp_path / "b.csv", na_values=()))
    ok(["design", data, "--vars", "db040", "--method", "rr", "--epsilon", "2", "--out", tmp_path / "m.json",
        "--quiet"], capsys)


def test_parts_are_read_in_the_order_of_their_numbers(tmp_path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in (10, 2, 1):
        pq.write_table(pa.table({"i": [i]}), folder / f"part-{i}.parquet")
    assert read_table(folder)["i"].tolist() == [1, 2, 10]


def bad_folder(d: Path, kind: str) -> Path:
    f = d / f"bad_{kind}"
    if f.exists():
        return f
    f.mkdir()
    if kind == "empty":
        (f / "_SUCCESS").write_bytes(b"")
        (f / ".part-0.parquet.crc").write_bytes(b"crc")
    elif kind == "schemas":
        pq.write_table(pa.table({"db040": ["Tyrol"], "hsize": [3]}), f / "part-0.parquet")
        pq.write_table(pa.table({"db040": ["Tyrol"], "hsize": ["3"]}), f / "part-1.parquet")
    elif kind == "columns":
        (f / "part-0.csv").write_text("db040,hsize\nTyrol,3\n")
        (f / "part-1.csv").write_text("db040,rb090\nTyrol,male\n")
    elif kind == "partitioned":
        (f / "year=2020").mkdir()
        pq.write_table(pa.table({"db040": ["Tyrol"]}), f / "year=2020" / "part-0.parquet")
    elif kind == "stray":
        pq.write_table(pa.table({"db040": ["Tyrol"]}), f / "part-0.parquet")
        (f / "notes.md").write_text("read me")
    return f


BAD_FOLDERS = [("empty", "holds no part files"), ("schemas", "column 'hsize' is int64 in 'part-0.parquet' but "
               "string in 'part-1.parquet'"), ("columns", "'part-0.csv' has column(s) ['hsize'] that 'part-1.csv' "
               "lacks"), ("partitioned", "a partitioned dataset is not read"), ("stray", "holds 'notes.md'")]


@pytest.mark.parametrize("kind,message", BAD_FOLDERS, ids=[k for k, _ in BAD_FOLDERS])
@pytest.mark.parametrize("command", ["design", "risk", "estimate", "apply", "swap", "audit"])
def test_a_bad_folder_is_one_line(released, capsys, command, kind, message) -> None:
    d = released
    f = bad_folder(d, kind)
    args = {"design": ["design", f, "--vars", "db040", "--epsilon", "2", "--out", d / "n.json"],
            "risk": ["risk", f, "--keys", "db040", "--sampling-fraction", "0.01"],
            "estimate": ["estimate", f, "--manifest", d / "m.json", "--vars", "db040"],
            "apply": ["apply", f, "--manifest", d / "m.json", "--out", d / "n.csv"],
            "swap": ["swap", f, "--hid", "db030", "--geo", "db040", "--out", d / "n.csv"],
            "audit": ["audit", "--manifest", d / "m.json", "--released", f, "--original", d / "utf8.csv"]}[command]
    assert_refused(d, args, message, capsys)


def test_an_output_inside_an_input_folder_is_refused(folders, capsys) -> None:
    d = folders
    assert_refused(d, ["apply", d / "rel_dataset", "--manifest", d / "m.json", "--out",
                       d / "rel_dataset" / "released.parquet", "--na-values", ""], "lies in the input folder", capsys)


def test_folder_errors_in_the_library() -> None:
    with pytest.raises(DataError, match="does not exist"):
        dataset_parts("/nonexistent/folder")
    with pytest.raises(ParameterError, match="must be one character"):
        read_table(__file__, sep="ab")
