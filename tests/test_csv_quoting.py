"""The CSV writer quotes a value only where a reader needs it, and every reader gets the values back.

The reference for "only where needed" is Python's own ``csv.writer`` with ``QUOTE_MINIMAL``; the
references for "back" are pyarrow's CSV reader (which tells a quoted empty text from an empty
field) and Python's ``csv.reader``.  A real file (EU-SILC, quoted by R) goes through the writer
of ``apply`` and comes back no larger, with the same values.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.errors import WriteError
from pramkit.io import TableWriter, csv_field, csv_rows, iter_batches

AWKWARD = st.sampled_from([",", ";", "\t", "|", '"', "\n", "\r", "\r\n", " ", "  ", "é", "Zürich", "日本", "NA",
                           "a", "b,c", 'x"y', "", "\x00"[:0], "\u00a0", "\U0001f600"])
VALUE = st.one_of(st.none(), st.lists(st.one_of(AWKWARD, st.text(max_size=4)), max_size=4).map("".join))
SEPS = st.sampled_from([",", ";", "\t", "|"])
NEWLINES = st.sampled_from(["\n", "\r\n"])  # a file's own line ends, kept by the writer


@st.composite
def tables(draw: st.DrawFn, min_columns: int = 1) -> tuple[list[str], list[list[str | None]]]:
    columns = draw(st.integers(min_columns, 4))
    rows = draw(st.integers(0, 12))
    names = [f"c{j}" for j in range(columns)]
    return names, [[draw(VALUE) for _ in names] for _ in range(rows)]


def arrow(names: list[str], rows: list[list[str | None]]) -> pa.Table:
    return pa.table({n: pa.array([r[j] for r in rows], pa.string()) for j, n in enumerate(names)})


@settings(max_examples=300, deadline=None)
@given(tables(), SEPS, NEWLINES)
def test_values_come_back_exactly(table, sep, newline) -> None:
    names, rows = table
    text = (sep.join(names) + newline).encode() + (csv_rows(arrow(names, rows), sep, newline) if rows else b"")
    back = pacsv.read_csv(io.BytesIO(text), parse_options=pacsv.ParseOptions(delimiter=sep, newlines_in_values=True,
                                                                             ignore_empty_lines=False),
                          convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                               null_values=[""], strings_can_be_null=True,
                                                               quoted_strings_can_be_null=False))
    assert back.to_pydict() == {n: [r[j] for r in rows] for j, n in enumerate(names)}
    # Python's reader reads the same texts (it cannot tell an empty text from a missing value)
    read = list(csv.reader(io.StringIO(text.decode(), newline=""), delimiter=sep))[1:]
    assert read == [[] if r == [None] else ["" if v is None else v for v in r] for r in rows]


@settings(max_examples=300, deadline=None)
@given(tables(min_columns=2), SEPS)
def test_quoted_only_where_python_quotes(table, sep) -> None:
    """Row by row, the text Python's csv.writer writes with minimal quoting (an empty text aside, which it
    leaves unquoted, so that it reads back as missing)."""
    names, rows = table
    t = arrow(names, rows)
    for i, row in enumerate(rows):
        out = io.StringIO(newline="")
        csv.writer(out, delimiter=sep, lineterminator="\r\n").writerow(["" if v is None else v for v in row])
        python = out.getvalue()[:-2]  # "\r\n" as the terminator, so that CR in a value is quoted too
        ours = csv_rows(t.slice(i, 1), sep).decode()
        assert ours.endswith("\n")
        if "" not in row:
            assert ours[:-1] == python
            assert csv_rows(t.slice(i, 1), sep, "\r\n").decode() == python + "\r\n"  # Python's own line end
        assert ours[:-1] == sep.join("" if v is None else csv_field(v, sep) for v in row)


def test_empty_text_and_missing_differ() -> None:
    t = pa.table({"a": pa.array(["", None, " "]), "b": pa.array([1, None, 3])})
    assert csv_rows(t) == b'"",1\n,\n ,3\n'
    assert csv_rows(t, ";") == b'"";1\n;\n ;3\n'


def test_chunked_and_typed_columns() -> None:
    """Columns of several chunks, a category, large text and numbers: as pyarrow's writer writes them, less
    its quotes."""
    t = pa.Table.from_batches([pa.record_batch({"x": ["a", "b"], "n": [1.5, None]}),
                               pa.record_batch({"x": ["c,d", None], "n": [3.0, 4.0]})])
    t = t.append_column("cat", pa.array(["u", "v", "u", None]).dictionary_encode())
    t = t.append_column("big", pa.array(["p", "q", "", "r"], pa.large_string()))
    assert csv_rows(t) == b'a,1.5,u,p\nb,,v,q\n"c,d",3,u,""\n,4,,r\n'


def test_header_quoted_only_where_needed(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    with TableWriter(out) as w:
        w.write(pa.table({"a b": ["1"], "c,d": ["2"], 'e"': [None]}))
    assert out.read_bytes() == b'a b,"c,d","e"""\n1,2,\n'


def test_a_real_file_comes_back_no_larger(tmp_path: Path) -> None:
    src = SDC_DATA / "eusilc_laeken.csv"
    if not src.exists():
        pytest.skip("../shared/data/sdcmicro is not available")
    out = tmp_path / "out.csv"
    meta, tables = iter_batches(src, keep_missing_codes=True, chunk_rows=4096)
    with TableWriter(out, meta=meta) as w:
        for t in tables:
            w.write(t)
    assert out.stat().st_size <= src.stat().st_size
    first = pa.concat_tables(iter_batches(src, keep_missing_codes=True)[1])
    again = pa.concat_tables(iter_batches(out, keep_missing_codes=True)[1])
    assert again.equals(first)
    # and pyarrow alone reads the same table from both files
    opts = pacsv.ConvertOptions(column_types={n: pa.string() for n in first.column_names})
    assert pacsv.read_csv(out, convert_options=opts).equals(pacsv.read_csv(src, convert_options=opts))


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    import pramkit.io as pio

    def failing(table, sep=",", newline="\n"):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pio, "csv_rows", failing)
    out = tmp_path / "out.csv"
    with pytest.raises(WriteError, match="No space left"), TableWriter(out) as w:
        w.write(pa.table({"a": ["x"]}))
    assert list(tmp_path.iterdir()) == []


def test_a_real_file_with_awkward_labels_released_by_apply_reads_back_everywhere(tmp_path: Path) -> None:
    """EU-SILC with its region labels made awkward (a comma, a quote, a line break, Unicode, a leading
    space) and missing values, written with every field quoted, released by ``apply``: pandas and
    Python's csv module read the same values back, the released values are those of the same release
    in memory, and the bytes are exactly what Python's own writer gives with ``QUOTE_MINIMAL`` (a field
    is quoted only where a reader needs it)."""
    import numpy as np
    import pandas as pd

    from pramkit import Manifest, PramMatrix, perturb_frame
    from pramkit.engine.perturb import apply_file

    src = SDC_DATA / "eusilc_laeken.csv"
    if not src.exists():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(src, dtype=str, keep_default_na=False, na_values=[""])
    regions = sorted(data["db040"].dropna().unique())
    awkward = ['Tyrol, "West"', "Wien\nStadt", " Kärnten", "Öberösterreich", "Salzburg;Land", 'say "hi"',
               "日本", "a\r\nb", "Vorarlberg"][: len(regions)]
    data["db040"] = data["db040"].map(dict(zip(regions, awkward, strict=True)))
    data.loc[::11, "db040"] = None
    data.loc[::13, "rb090"] = None
    original, released = tmp_path / "silc.csv", tmp_path / "released.csv"
    data.to_csv(original, index=False, quoting=csv.QUOTE_ALL, lineterminator="\n")
    manifest = Manifest.of({"db040": PramMatrix.from_diagonal(np.linspace(0.6, 0.9, len(awkward)), awkward),
                            "rb090": PramMatrix.from_diagonal([0.8, 0.8], ["female", "male"])})
    manifest.write(tmp_path / "m.json")
    apply_file(original, tmp_path / "m.json", released, key=bytes(32))

    back = pd.read_csv(released, dtype=str, keep_default_na=False, na_values=[""])
    expected = perturb_frame(data, manifest, key=bytes(32)).data
    pd.testing.assert_frame_equal(back, expected.astype(object).where(expected.notna(), np.nan), check_dtype=False)
    with open(released, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(data.columns)
    assert rows[1:] == back.fillna("").to_numpy().tolist()
    # only what needs quoting is quoted: Python's writer (QUOTE_MINIMAL) gives the same bytes
    again = io.StringIO(newline="")
    csv.writer(again, quoting=csv.QUOTE_MINIMAL, lineterminator="\n").writerows(rows)
    assert released.read_bytes() == again.getvalue().encode("utf-8")
    assert released.stat().st_size < original.stat().st_size


def _with_filled_nulls(values: list[str | None], filler: str) -> pa.Array:
    """A string array of ``values`` whose null slots still hold bytes (``filler``), as Arrow allows and as
    some computations leave them: a null is then neither empty nor zero-length in the buffers."""
    import numpy as np

    texts = [filler if v is None else v for v in values]
    data = "".join(texts).encode()
    offsets = np.cumsum([0] + [len(t.encode()) for t in texts]).astype(np.int32)
    bits = np.packbits(np.array([v is not None for v in values], dtype=np.uint8), bitorder="little")
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data),
                                       pa.py_buffer(bits.tobytes()), null_count=sum(v is None for v in values))


@settings(max_examples=200, deadline=None)
@given(tables(), SEPS, NEWLINES, st.sampled_from(["-9", "x", "longer filler"]))
def test_null_slots_that_hold_bytes_write_as_empty_fields(table, sep, newline, filler) -> None:
    """The bytes of a null's slot are never written, nor counted in the file's size (a file so counted
    ended in bytes that no value wrote)."""
    names, rows = table
    if not rows:
        return
    filled = pa.table({n: _with_filled_nulls([r[j] for r in rows], filler) for j, n in enumerate(names)})
    assert csv_rows(filled, sep, newline) == csv_rows(arrow(names, rows), sep, newline)
