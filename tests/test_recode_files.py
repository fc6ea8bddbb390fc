"""``pramkit recode`` on the EU-SILC file, in every format it writes.

The expected values are computed here, with pandas, from the original records (never from what
pramkit wrote), and the recoded files are read back by readers pramkit does not use to write them:
the csv module, pyarrow's Parquet reader, pyreadstat.  Missing codes must stay where they were, the
columns the map does not name must not change, and every refusal is one line, exit 2, nothing written.
"""

from __future__ import annotations

import csv
import errno
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SDC_DATA, assert_refused

from pramkit import atomic
from pramkit.cli import main

pyreadstat = pytest.importorskip("pyreadstat")

SILC = SDC_DATA / "eusilc_laeken.csv"
#: The rows of the file the tests read (the file's first, in its order).
ROWS = 1_500
#: The map every format is recoded by: a merge whose categories are numbers (pl030), a top code that
#: makes text (age), interval breaks with labels (hsize) and a merge of texts (db040, Latin-1 names).
MAP = {
    "pl030": {"merge": {"6": "5", "7": "5"}},
    "age": {"top": {"above": 80, "value": "80+"}, "bottom": {"below": 0, "value": "none"}},
    "hsize": {"breaks": [0, 1, 2, 4, 9], "labels": ["1", "2", "3-4", "5+"]},
    "db040": {"merge": {"Burgenland": "Ost", "Niederösterreich": "Ost", "Vienna": "Ost"}},
}
#: The columns of the typed formats (Parquet, Stata, SPSS, SAS): the recoded ones and two kept as they are.
TYPED = ["db030", "hsize", "db040", "age", "rb090", "pl030", "eqIncome"]


@pytest.fixture(scope="module")
def silc() -> pd.DataFrame:
    """The first rows of the EU-SILC file as text, as the csv module reads them; Lower Austria spelt in German."""
    if not SILC.is_file():
        pytest.skip("../shared/data/sdcmicro/eusilc_laeken.csv is not available")
    with SILC.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    frame = pd.DataFrame(rows[1:ROWS + 1], columns=rows[0], dtype=object)
    frame["db040"] = frame["db040"].replace({"Lower Austria": "Niederösterreich"})
    return frame


def expected(frame: pd.DataFrame, code: str | None, age_code: bool = False) -> dict[str, list[str | None]]:
    """The recoded columns as text, by pandas: ``code`` is the text of pl030's missing code (None: missing);
    with ``age_code`` the age -1 is a missing code, which its bottom code leaves as it is."""
    age = frame["age"].astype(int)
    under = "-1" if age_code else "none"
    hsize = pd.cut(frame["hsize"].astype(int), [0, 1, 2, 4, 9], labels=["1", "2", "3-4", "5+"], right=True,
                   include_lowest=True).astype(str)
    pl030 = frame["pl030"].replace({"6": "5", "7": "5", "": code})
    return {"pl030": [None if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in pl030],
            "age": ["80+" if a > 80 else under if a < 0 else str(a) for a in age], "hsize": list(hsize),
            "db040": list(frame["db040"].replace({"Burgenland": "Ost", "Niederösterreich": "Ost", "Vienna": "Ost"}))}


def changed_counts(frame: pd.DataFrame, age_code: bool = False) -> dict[str, int]:
    """How many values each rule changes, by pandas (a missing value, or code, is never changed)."""
    after = expected(frame, "", age_code)
    return {c: int(sum(a != b for a, b in zip(frame[c], after[c]) if b != "")) for c in MAP}


# ---------------------------------------------------------------------------------------------------- writers
def _csv(frame: pd.DataFrame, path: Path, sep: str = ",", encoding: str = "utf-8") -> None:
    data = frame.copy()
    data["pl030"] = data["pl030"].replace({"": "-9"})
    with path.open("w", newline="", encoding=encoding) as f:
        writer = csv.writer(f, delimiter=sep, lineterminator="\n")
        writer.writerow(data.columns)
        writer.writerows(data.itertuples(index=False))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame[TYPED].copy()
    for c in ("db030", "hsize", "age"):
        out[c] = out[c].astype(np.int64)
    out["pl030"] = pd.to_numeric(out["pl030"]).astype(float)  # "" -> NaN
    out["eqIncome"] = out["eqIncome"].astype(float)
    return out


def _parquet(frame: pd.DataFrame, path: Path) -> None:
    typed = _typed(frame)
    typed["pl030"] = typed["pl030"].astype("Int64")
    pq.write_table(pa.Table.from_pandas(typed, preserve_index=False), path)


PL030_LABELS = {1: "working full time", 5: "retired", 6: "permanently disabled", 7: "other inactive"}


def _stata(frame: pd.DataFrame, path: Path) -> None:
    typed = _typed(frame)
    typed["pl030"] = typed["pl030"].astype(object).where(typed["pl030"].notna(), "a")  # Stata's .a
    pyreadstat.write_dta(typed, str(path), missing_user_values={"pl030": ["a"]},
                         variable_value_labels={"pl030": {**PL030_LABELS, "a": "not asked"}})


def _spss(frame: pd.DataFrame, path: Path) -> None:
    typed = _typed(frame)
    typed["pl030"] = typed["pl030"].fillna(-9.0)
    pyreadstat.write_sav(typed, str(path), missing_ranges={"pl030": [-9.0], "age": [-1.0]},
                         variable_value_labels={"pl030": {**PL030_LABELS, -9: "not asked"},
                                                "age": {-1: "unknown"}})


def _sas(frame: pd.DataFrame, path: Path) -> None:
    typed = _typed(frame)
    typed["db040"] = typed["db040"].str.replace("ö", "oe")  # a transport file holds ASCII
    pyreadstat.write_xport(typed, str(path))


# ---------------------------------------------------------------------------------------------------- readers
def _read_csv(path: Path, sep: str = ",", encoding: str = "utf-8") -> pd.DataFrame:
    with path.open(newline="", encoding=encoding) as f:
        rows = list(csv.reader(f, delimiter=sep))
    return pd.DataFrame(rows[1:], columns=rows[0], dtype=object)


def _text(v: Any) -> str | None:
    """A value read back as the text the expectation uses (whole numbers without ``.0``)."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


FORMATS = {  # name: (suffix, writer, options, pl030's missing code as read back)
    "csv -9": (".csv", _csv, ["--na-values", "-9"], "-9"),
    "csv latin-1 ;": (".csv", lambda f, p: _csv(f, p, ";", "latin-1"),
                      ["--na-values", "-9", "--sep", ";", "--encoding", "latin-1"], "-9"),
    "parquet": (".parquet", _parquet, [], None),
    "stata .a": (".dta", _stata, [], "a"),
    "spss -9": (".sav", _spss, [], "-9"),
    "sas xpt": (".xpt", _sas, [], None),
}


def _read_back(name: str, path: Path) -> tuple[pd.DataFrame, Any]:
    if name == "csv -9":
        return _read_csv(path), None
    if name == "csv latin-1 ;":
        return _read_csv(path, ";", "latin-1"), None
    if name == "parquet":
        return pq.read_table(path).to_pandas(), pq.read_schema(path)
    reader = {"stata .a": pyreadstat.read_dta, "spss -9": pyreadstat.read_sav, "sas xpt": pyreadstat.read_xport}[name]
    options = {} if name == "sas xpt" else {"user_missing": True}
    return reader(str(path), **options)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_recoded_file_holds_the_recoding_and_its_missing_codes_where_they_were(name: str, silc: pd.DataFrame,
                                                                                tmp_path: Path, capsys) -> None:
    suffix, write, options, code = FORMATS[name]
    data, out, rules = tmp_path / f"silc{suffix}", tmp_path / f"recoded{suffix}", tmp_path / "map.json"
    write(silc, data)
    before = data.read_bytes()
    rules.write_text(json.dumps(MAP, ensure_ascii=False), encoding="utf-8")
    source = silc if name != "sas xpt" else silc.assign(db040=silc["db040"].str.replace("ö", "oe"))
    want = expected(source, code, age_code=name == "spss -9")
    if name == "sas xpt":  # the map names the German spelling; SAS's file has the ASCII one
        want["db040"] = list(source["db040"].replace({"Burgenland": "Ost", "Vienna": "Ost"}))
    capsys.readouterr()
    assert main(["recode", str(data), "--map", str(rules), "--out", str(out), *options]) == 0
    said = capsys.readouterr().out
    assert data.read_bytes() == before
    back, meta = _read_back(name, out)
    assert len(back) == ROWS
    for column, values in want.items():
        assert [_text(v) for v in back[column]] == values, (name, column)
    counts = changed_counts(source, age_code=name == "spss -9")
    if name == "sas xpt":
        counts["db040"] = int(source["db040"].isin(["Burgenland", "Vienna"]).sum())
    for column, n in counts.items():
        assert f"  {column}: {n:,} value" in said, (name, column, said)
    if name.startswith("csv"):  # the columns the map does not name: field for field, as they were written
        sep, encoding = (";", "latin-1") if "latin" in name else (",", "utf-8")
        original = _read_csv(data, sep, encoding)
        for column in original.columns.difference(list(MAP)):
            assert back[column].tolist() == original[column].tolist(), column
        assert out.read_bytes().decode(encoding).count("Ost") == want["db040"].count("Ost")
    else:
        typed = _typed(source)
        for column in ("db030", "rb090", "eqIncome"):
            assert back[column].tolist() == typed[column].tolist(), (name, column)
    if name == "parquet":  # numbers merged into numbers stay numbers; a column made text becomes text
        assert meta.field("pl030").type == pa.int64() and meta.field("age").type == pa.string()
        assert meta.field("db030").type == pa.int64() and meta.field("eqIncome").type == pa.float64()
    if name == "stata .a":  # the labels of the values that stay, and of the missing code
        assert meta.variable_value_labels["pl030"] == {1: "working full time", 5: "retired", "a": "not asked"}
        assert meta.missing_user_values["pl030"] == ["a"]
    if name == "spss -9":  # user-missing kept; age, now text, keeps -1 as a missing text and its label
        assert meta.missing_ranges["pl030"] == [{"lo": -9.0, "hi": -9.0}]
        assert meta.missing_ranges["age"] == [{"lo": "-1", "hi": "-1"}]
        assert meta.variable_value_labels["pl030"] == {1.0: "working full time", 5.0: "retired", -9.0: "not asked"}
        assert meta.variable_value_labels["age"] == {"-1": "unknown"}


def test_a_rule_that_changes_nothing_says_so(silc: pd.DataFrame, tmp_path: Path, capsys) -> None:
    data, out, rules = tmp_path / "silc.csv", tmp_path / "out.csv", tmp_path / "map.json"
    _csv(silc, data)
    rules.write_text(json.dumps({"pl030": {"merge": {"99": "1"}}, "rb090": {"merge": {"female": "f"}}}))
    assert main(["recode", str(data), "--map", str(rules), "--out", str(out), "--na-values", "-9"]) == 0
    said = capsys.readouterr().out
    assert "pl030: 0 values changed (its rule names no value of the file" in said
    assert f"rb090: {int((silc['rb090'] == 'female').sum()):,} values changed" in said
    assert _read_csv(out)["pl030"].tolist() == silc["pl030"].replace({"": "-9"}).tolist()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_with_no_rows_is_recoded_into_its_header(silc: pd.DataFrame, tmp_path: Path, suffix: str) -> None:
    data, out, rules = tmp_path / f"empty{suffix}", tmp_path / f"out{suffix}", tmp_path / "map.json"
    (_csv if suffix == ".csv" else _parquet)(silc.head(0), data)
    rules.write_text(json.dumps(MAP, ensure_ascii=False), encoding="utf-8")
    assert main(["recode", str(data), "--map", str(rules), "--out", str(out), "--quiet"]) == 0
    if suffix == ".csv":
        assert out.read_text().splitlines() == [",".join(silc.columns)]
    else:
        back = pq.read_table(out)
        assert back.num_rows == 0 and back.column_names == TYPED


def _bad_maps(silc: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """name -> (the map's text, the message): each refused before anything is written."""
    ages = silc["age"].astype(int)
    first = ages[(ages < 0) | (ages > 80)].iloc[0]
    return {
        "duplicate column": ('{"age": {"top": {"above": 80, "value": "80+"}}, "age": {"merge": {"1": "2"}}}',
                             "names 'age' twice"),
        "duplicate category": ('{"pl030": {"merge": {"6": "5", "6": "4"}}}', "names '6' twice"),
        "duplicate rule key": ('{"age": {"top": {"above": 80, "value": "x"}, "top": {"above": 70, "value": "y"}}}',
                               "names 'top' twice"),
        "empty map": ("{}", "declares no rule"),
        "top code on text": ('{"db040": {"top": {"above": 3, "value": "x"}}}', "column 'db040' is not numeric"),
        "merge into a missing code": ('{"pl030": {"merge": {"7": "-9"}}}', "a missing code of the file"),
        "merge of a missing code": ('{"pl030": {"merge": {"-9": "1"}}}', "a missing code of the file"),
        "breaks not covering": ('{"age": {"breaks": [0, 15, 80]}}', f"the value {first} lies outside"),
        "breaks decreasing": ('{"age": {"breaks": [0, 80, 15]}}', "increasing"),
        "labels miscounted": ('{"age": {"breaks": [0, 15, 80], "labels": ["a"]}}', "labels name the 2 intervals"),
        "unknown column": ('{"nope": {"merge": {"a": "b"}}}', "'nope', not a column of"),
    }


BAD = ["duplicate column", "duplicate category", "duplicate rule key", "empty map", "top code on text",
       "merge into a missing code", "merge of a missing code", "breaks not covering", "breaks decreasing",
       "labels miscounted", "unknown column"]


@pytest.mark.parametrize("bad", BAD)
def test_bad_maps_are_refused_in_one_line_and_write_nothing(bad: str, silc: pd.DataFrame, tmp_path: Path,
                                                            capsys) -> None:
    data, rules = tmp_path / "silc.csv", tmp_path / "bad.json"
    _csv(silc, data)
    text, message = _bad_maps(silc)[bad]
    rules.write_text(text)
    assert_refused(tmp_path, ["recode", data, "--map", rules, "--out", tmp_path / "out.csv", "--na-values", "-9"],
                   message, capsys)


def test_a_stata_column_with_extended_missing_values_cannot_become_text(silc: pd.DataFrame, tmp_path: Path,
                                                                        capsys) -> None:
    data, rules = tmp_path / "silc.dta", tmp_path / "map.json"
    _stata(silc, data)
    rules.write_text('{"pl030": {"merge": {"6": "other", "7": "other"}}}')
    assert_refused(tmp_path, ["recode", data, "--map", rules, "--out", tmp_path / "out.dta"], "holds missing codes",
                   capsys)


def test_design_recoded_by_refuses_a_map_of_a_column_the_data_lacks(silc: pd.DataFrame, tmp_path: Path,
                                                                    capsys) -> None:
    data, rules = tmp_path / "silc.csv", tmp_path / "map.json"
    _csv(silc, data)
    rules.write_text('{"agegroup": {"merge": {"1": "2"}}}')
    assert_refused(tmp_path, ["design", data, "--vars", "rb090", "--epsilon", "2", "--method", "rr", "--out",
                              tmp_path / "m.json", "--recoded-by", rules], "'agegroup', not a column of the data",
                   capsys)


@pytest.mark.parametrize("point", ["_fsync", "write"])
def test_a_failed_write_leaves_nothing(silc: pd.DataFrame, tmp_path: Path, capsys, monkeypatch, point: str) -> None:
    from pramkit import io

    data, rules = tmp_path / "silc.csv", tmp_path / "map.json"
    _csv(silc, data)
    rules.write_text(json.dumps(MAP, ensure_ascii=False), encoding="utf-8")

    def enospc(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(*((atomic, "_fsync") if point == "_fsync" else (io._DigestingFile, "write")), enospc)
    assert_refused(tmp_path, ["recode", data, "--map", rules, "--out", tmp_path / "out.csv", "--na-values", "-9"],
                   "No space left", capsys)


@pytest.mark.parametrize("closed", ["right", "left"])
def test_breaks_follow_r_cut_with_the_lowest_break_included(closed: str) -> None:
    """The default labels and intervals are R's ``cut(x, breaks, right = ..., include.lowest = TRUE)``: with
    ``right = FALSE`` R includes the highest break instead."""
    import subprocess

    from pramkit.recode import Breaks

    if shutil.which("Rscript") is None:
        pytest.skip("R is not installed")
    x = [0, 0.5, 15, 15.5, 30, 64.9, 65, 120]
    breaks = [0, 15, 30, 65, 120]
    script = (f"x <- c({', '.join(map(str, x))}); "
              f"cat(as.character(cut(x, breaks = c({', '.join(map(str, breaks))}), dig.lab = 8, "
              f"right = {'TRUE' if closed == 'right' else 'FALSE'}, include.lowest = TRUE)), sep = '\\n')")
    r = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, check=True).stdout.split()
    assert [Breaks.of(breaks, closed=closed).label(v) for v in x] == r


def test_a_parquet_file_written_from_stata_keeps_the_labels_that_hold(silc: pd.DataFrame, tmp_path: Path) -> None:
    """Stata -> Parquet (labels and codes in its metadata) -> recoded -> Stata: .a where it was, and the
    labels of the categories merged away dropped."""
    dta, parquet, out, rules = (tmp_path / n for n in ("silc.dta", "silc.parquet", "out.dta", "map.json"))
    _stata(silc, dta)
    rules.write_text('{"rb090": {"merge": {"x": "y"}}}')
    assert main(["recode", str(dta), "--map", str(rules), "--out", str(parquet), "--quiet"]) == 0
    rules.write_text('{"pl030": {"merge": {"6": "5", "7": "5"}}}')
    assert main(["recode", str(parquet), "--map", str(rules), "--out", str(out), "--quiet"]) == 0
    back, meta = pyreadstat.read_dta(str(out), user_missing=True)
    assert [_text(v) for v in back["pl030"]] == expected(silc, "a")["pl030"]
    assert meta.variable_value_labels["pl030"] == {1: "working full time", 5: "retired", "a": "not asked"}
