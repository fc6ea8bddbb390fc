"""Every input format to every output format: values, missing values, missing codes and labels.

The data are the real EU-SILC file.  Its missing economic status is a labelled missing code: "not
applicable" under 16, "refused" from 16 and for every 97th answer; every 250th sex is "refused".
Each format writes the two codes its own way (Stata ``.a``/``.r``, SAS ``.A``/``.R``, SPSS
user-missing ``-1``/``-18``, CSV ``NA``, plain Parquet a null), and the truth is what each row held
before any file was written.  A file is converted as ``apply`` writes a release (read with its codes
kept, written by :class:`pramkit.io.TableWriter` with the input's metadata), then converted back, and
every value, every missing value, every code and every label is compared with the truth and with the
rule the docs state.  R's haven, a reader pramkit did not write, reads every Stata, SPSS and SAS
file written and must agree (CI installs it; without R those checks skip).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest
from conftest import SDC_DATA

import pramkit
from pramkit.cli import main
from pramkit.codebook import canonical
from pramkit.engine.perturb import apply_file
from pramkit.errors import PramkitError
from pramkit.io import TableWriter, iter_batches
from pramkit.io_sas import write_special_missing

REQUIRE_R = bool(os.environ.get("PRAMKIT_REQUIRE_R"))
ROWS = 1500
STATUS = {1: "working full time", 2: "working part time", 3: "unemployed", 4: "pupil, student",
          5: "in retirement", 6: "disabled", 7: "domestic tasks"}
#: How each format writes the two codes (the docs' rule: .a <-> .A <-> -1, .r <-> .R <-> -18).
CODES = {"stata": {"na": ".a", "ref": ".r"}, "sas": {"na": ".A", "ref": ".R"}, "spss": {"na": -1, "ref": -18}}
KIND_LABELS = {"na": "not applicable", "ref": "refused"}
SUFFIX = {"csv": ".csv", "parquet": ".parquet", "stata": ".dta", "spss": ".sav", "sas": ".xpt", "sas7bdat": ".sas7bdat"}
OUTPUTS = ("csv", "parquet", "stata", "spss", "sas")
INPUTS = ("csv", "parquet", "stata", "spss", "sas", "sas7bdat")
#: Formats that hold value labels, and formats that hold variable labels.
VALUE_LABELS = ("stata", "spss", "parquet")
COLUMN_LABELS = ("stata", "spss", "sas", "parquet")


def rscript(code: str) -> str:
    if shutil.which("Rscript") is None:
        if REQUIRE_R:
            pytest.fail("Rscript is required (PRAMKIT_REQUIRE_R)")
        pytest.skip("Rscript is not installed (CI installs r-base-core and r-cran-haven)")
    run = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def truth() -> pd.DataFrame:
    """The rows, with each missing code as its kind ("na", "ref") rather than any format's spelling."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", nrows=ROWS, usecols=["db040", "age", "rb090", "pl030", "rb050"])
    data.loc[data.index[data.db040 == "Tyrol"][::5], "db040"] = " Tyrol"
    data.loc[data.index[::40], "db040"] = unicodedata.normalize("NFD", "K\u00e4rnten")
    status = [("na" if age < 16 else "ref") if np.isnan(v) else "ref" if i % 97 == 5 else int(v)
              for i, (v, age) in enumerate(zip(data.pl030, data.age))]
    sex = ["ref" if i % 250 == 7 else 1 if s == "male" else 2 for i, s in enumerate(data.rb090)]
    return pd.DataFrame({"db040": data.db040, "age": data.age.astype(int), "rb090": sex, "pl030": status,
                         "rb050": data.rb050})


def spelled(column: pd.Series, fmt: str) -> list:
    return [CODES[fmt][v] if isinstance(v, str) else v for v in column]


def write_input(truth: pd.DataFrame, fmt: str, path: Path) -> None:
    """The truth written in ``fmt`` with its codes and labels (a CSV or plain Parquet file: no codes)."""
    column_labels = {"db040": "Region", "age": "Age", "rb090": "Sex", "pl030": "Economic status", "rb050": "Weight"}
    if fmt in ("csv", "parquet"):
        frame = truth.copy()
        for c in ("rb090", "pl030"):
            frame[c] = [None if isinstance(v, str) else v for v in frame[c]]
        frame = frame.astype({"rb090": "Int64", "pl030": "Int64"})
        if fmt == "csv":
            frame.to_csv(path, index=False, na_rep="NA")
        else:
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
        return
    if fmt == "stata":
        frame = truth.assign(rb090=pd.Series(spelled(truth.rb090, fmt), dtype=object).map(
            lambda v: v[1:] if isinstance(v, str) else v), pl030=pd.Series(spelled(truth.pl030, fmt), dtype=object).map(
            lambda v: v[1:] if isinstance(v, str) else v), age=truth.age.astype(np.int16))
        pyreadstat.write_dta(frame, str(path), column_labels=column_labels, file_label="EU-SILC",
                             missing_user_values={"rb090": ["r"], "pl030": ["a", "r"]},
                             variable_value_labels={"rb090": {1: "male", 2: "female", "r": "refused"},
                                                    "pl030": {**STATUS, "a": KIND_LABELS["na"], "r": "refused"}})
    elif fmt == "spss":
        frame = truth.assign(rb090=spelled(truth.rb090, fmt), pl030=spelled(truth.pl030, fmt)).astype(
            {"rb090": float, "pl030": float})
        pyreadstat.write_sav(frame, str(path), column_labels=column_labels,
                             missing_ranges={"rb090": [-18], "pl030": [-1, -18]},
                             variable_value_labels={"rb090": {1: "male", 2: "female", -18: "refused"},
                                                    "pl030": {**STATUS, -1: KIND_LABELS["na"], -18: "refused"}})
    else:  # SAS transport: the numbers, then the codes in the file's bytes
        frame = truth.assign(rb090=[np.nan if isinstance(v, str) else v for v in truth.rb090],
                             pl030=[np.nan if isinstance(v, str) else v for v in truth.pl030]).astype(
            {"rb090": float, "pl030": float, "age": float})
        pyreadstat.write_xport(frame, str(path), column_labels=list(column_labels.values()), table_name="SILC")
        write_special_missing(path, {c: [v if isinstance(v, str) else None for v in spelled(truth[c], "sas")]
                                     for c in ("rb090", "pl030")}, len(frame))


@pytest.fixture(scope="module")
def inputs(truth, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    out = {}
    for fmt in ("csv", "parquet", "stata", "spss", "sas"):
        out[fmt] = d / f"silc{SUFFIX[fmt]}"
        write_input(truth, fmt, out[fmt])
    return out


def sas7bdat(truth: pd.DataFrame, folder: Path) -> Path:
    """A .sas7bdat written by haven (pramkit writes none), its codes as tagged missing values."""
    frame = truth.assign(rb090=[v if isinstance(v, str) else str(v) for v in spelled(truth.rb090, "sas")],
                         pl030=[v if isinstance(v, str) else str(v) for v in spelled(truth.pl030, "sas")])
    frame[["rb090", "pl030", "rb050"]].to_csv(folder / "codes.csv", index=False)
    path = folder / "silc.sas7bdat"
    rscript(f'x <- read.csv("{folder / "codes.csv"}", colClasses = c("character", "character", "numeric")); '
            'num <- function(v) ifelse(startsWith(v, "."), haven::tagged_na(substr(v, 2, 2)), suppressWarnings(as.numeric(v))); '
            'd <- data.frame(rb090 = num(x$rb090), pl030 = num(x$pl030), rb050 = x$rb050); '
            f'suppressWarnings(haven::write_sas(d, "{path}"))')
    return path


def convert(src: Path, dst: Path) -> None:
    """Read with the codes kept and write with the input's metadata, as ``apply`` writes a release."""
    meta, tables = iter_batches(src, keep_missing_codes=True, chunk_rows=400)
    with TableWriter(dst, meta=meta, force=True) as writer:
        for table in tables:
            writer.write(table)


def read_back(path: Path) -> tuple[dict[str, list], dict]:
    """What pramkit reads, codes kept: numbers as their one text, codes and texts as they are."""
    meta, tables = iter_batches(path, keep_missing_codes=True)
    table = pa.concat_tables(list(tables))
    columns = {}
    for name in table.column_names:
        columns[name] = [v if isinstance(v, str) and (name == "db040" or _float(v) is None) else canonical(
            _float(v) if isinstance(v, str) else v) for v in table.column(name).to_pylist()]
    return columns, meta.labels


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def expected_code(kind: str, source: str, out: str) -> object:
    """The code a row of kind ``kind`` holds in ``out`` written from ``source`` (None: missing, no code)."""
    if source in ("csv", "parquet"):  # a CSV marker stays in CSV and becomes a missing text in SPSS
        return "NA" if source == "csv" and out in ("csv", "spss") else None
    if out == "csv":
        return None
    holder = source if out == "parquet" else out
    code = CODES["sas" if holder == "sas7bdat" else holder][kind]
    return code if isinstance(code, str) else canonical(code)


def check_file(path: Path, truth: pd.DataFrame, source: str, out: str) -> None:
    got, labels = read_back(path)
    for column in ("rb090", "pl030"):
        want = [expected_code(v, source, out) if isinstance(v, str) else canonical(v) for v in truth[column]]
        assert got[column] == want, (path.name, column)
    assert got["rb050"] == [canonical(v) for v in truth.rb050]
    if "db040" in got:  # texts exactly, spellings and all
        assert got["db040"] == truth.db040.tolist()
        assert got["age"] == [canonical(v) for v in truth.age]
    value_labels = (labels.get("variable_value_labels") or {}).get("pl030") or {}
    if out in VALUE_LABELS and source in ("stata", "spss"):
        key = {"stata": "a", "spss": -1}[source if out == "parquet" else out]
        assert value_labels[key] == KIND_LABELS["na"] and value_labels[1] == STATUS[1], path.name
    else:
        assert not value_labels or (out == "parquet" and source == "parquet")
    if out in COLUMN_LABELS and source in ("stata", "spss", "sas"):
        assert (labels.get("column_labels") or {}).get("pl030") == "Economic status", path.name


@pytest.fixture(scope="module")
def converted(truth, inputs, tmp_path_factory) -> dict[tuple[str, str], Path]:
    d = tmp_path_factory.mktemp("converted")
    out = {}
    for source, path in inputs.items():
        for target in OUTPUTS:
            dst = d / f"{source}-to-{target}{SUFFIX[target]}"
            convert(path, dst)
            out[source, target] = dst
    return out


@pytest.mark.parametrize("source", [s for s in INPUTS if s != "sas7bdat"])
@pytest.mark.parametrize("target", OUTPUTS)
def test_values_codes_and_labels_survive(truth, converted, source, target) -> None:
    check_file(converted[source, target], truth, source, target)


@pytest.mark.parametrize("source", ["csv", "parquet", "stata", "spss", "sas"])
@pytest.mark.parametrize("target", OUTPUTS)
def test_and_back_again(truth, inputs, converted, tmp_path, source, target) -> None:
    """Written as ``target`` and back as ``source``: the original's values, codes and labels wherever
    ``target`` holds them (a CSV file holds no code of another format; SAS transport no value label)."""
    back = tmp_path / f"back{SUFFIX[source]}"
    convert(converted[source, target], back)
    got, labels = read_back(back)
    original, original_labels = read_back(inputs[source])
    lost = "csv" in (source, target) and source != target  # a code comes back as a plain missing value
    for column in ("rb090", "pl030", "rb050", "db040"):
        if lost:
            assert got[column] == [None if o is None or _code(o, source, column) else o for o in original[column]]
        else:
            assert got[column] == original[column], (source, target, column)
    if source in ("stata", "spss") and target in VALUE_LABELS:
        assert labels["variable_value_labels"]["pl030"] == original_labels["variable_value_labels"]["pl030"]


def _code(value: str, source: str, column: str) -> bool:
    """Whether a value read back is a missing code of ``source`` (not an ordinary value)."""
    if column not in ("rb090", "pl030"):
        return False
    return value.startswith(".") or value == "NA" or (source == "spss" and value in ("-1", "-18"))


def test_sas7bdat_to_every_format(truth, tmp_path) -> None:
    path = sas7bdat(truth, tmp_path)
    for target in OUTPUTS:
        dst = tmp_path / f"out{SUFFIX[target]}"
        convert(path, dst)
        check_file(dst, truth[["rb090", "pl030", "rb050"]], "sas7bdat", target)


@pytest.fixture(scope="module")
def haven(converted, tmp_path_factory) -> dict[str, list[str]]:
    """What R's haven reads in every Stata, SPSS and SAS file written: pl030 as a number, a tag (.a, .A)
    or an SPSS user-missing number, and the label of the "not applicable" code."""
    files = [p for p in converted.values() if p.suffix in (".dta", ".sav", ".xpt")]
    d = tmp_path_factory.mktemp("haven")
    lines = []
    for p in files:
        reader = {".dta": "haven::read_dta", ".sav": "function(f) haven::read_sav(f, user_na = TRUE)",
                  ".xpt": "haven::read_xpt"}[p.suffix]
        lines.append(f'x <- ({reader})("{p}")$pl030; '
                     'x <- if (inherits(x, "haven_labelled_spss")) unclass(x) else x; '
                     'tag <- if (is.double(x)) haven::na_tag(x) else rep(NA, length(x)); '
                     'shown <- if (is.character(x)) ifelse(x == "", NA, x) else format(as.numeric(x), '
                     'scientific = FALSE, trim = TRUE); '
                     'v <- ifelse(!is.na(tag), paste0(".", tag), ifelse(is.na(x) | is.na(shown), "-", shown)); '
                     'lab <- attr(x, "labels"); nm <- if (is.null(lab)) "-" else paste(names(lab), collapse = "|"); '
                     f'writeLines(c(nm, v), "{d / (p.name + ".txt")}")')
    (d / "read.R").write_text("\n".join(lines) + "\n")  # one script: R's -e takes a few kilobytes at most
    rscript(f'source("{d / "read.R"}")')
    return {p.name: (d / (p.name + ".txt")).read_text().splitlines() for p in files}


@pytest.mark.parametrize("source", ["stata", "spss", "sas", "csv"])
@pytest.mark.parametrize("target", ["stata", "spss", "sas"])
def test_haven_agrees(truth, converted, haven, source, target) -> None:
    lines = haven[converted[source, target].name]
    labels, values = lines[0], lines[1:]
    tags = {"stata": {"na": ".a", "ref": ".r"}, "sas": {"na": ".a", "ref": ".r"},  # haven's tags are lower case
            "spss": {"na": "-1", "ref": "-18"}}[target]
    marker = "NA" if target == "spss" else "-"  # a CSV marker: a missing text in SPSS, missing elsewhere
    want = [(marker if source == "csv" else tags[v]) if isinstance(v, str) else str(v) for v in truth.pl030]
    assert values == want
    if target in ("stata", "spss") and source in ("stata", "spss"):
        assert KIND_LABELS["na"] in labels.split("|") and STATUS[1] in labels.split("|")


# ------------------------------------------------------------------ through apply, estimate and audit

def test_a_labelled_stata_code_through_every_command(truth, inputs, tmp_path) -> None:
    """The design reads no label of a code as a category; each output is estimable and auditable."""
    shutil.copy(inputs["stata"], tmp_path / "silc.dta")
    assert main(["keygen", str(tmp_path / "key")]) == 0
    assert main(["design", str(tmp_path / "silc.dta"), "--vars", "pl030,rb090", "--epsilon", "4",
                 "--out", str(tmp_path / "m.json")]) == 0
    manifest = pramkit.Manifest.read(tmp_path / "m.json")
    assert sorted(manifest["pl030"].matrix.categories) == list(range(1, 8))
    for target in OUTPUTS:
        out = tmp_path / f"released{SUFFIX[target]}"
        assert main(["apply", str(tmp_path / "silc.dta"), "--manifest", str(tmp_path / "m.json"), "--key-file",
                     str(tmp_path / "key"), "--out", str(out), "--quiet"]) == 0, target
        assert main(["estimate", str(out), "--manifest", str(tmp_path / "m.json"), "--vars", "pl030", "--json"]) == 0
        assert main(["audit", "--manifest", str(tmp_path / "m.json"), "--released", str(out), "--original",
                     str(tmp_path / "silc.dta"), "--key-file", str(tmp_path / "key"), "--json"]) == 0, target
        got, _ = read_back(out)
        coded = [isinstance(v, str) for v in truth.pl030]
        assert [g is None or g.startswith(".") or g in ("-1", "-18") for g in got["pl030"]] == coded, target


def test_spss_codes_outside_the_convention_take_letters_in_order(tmp_path) -> None:
    frame = pd.DataFrame({"q": [1.0, -99.0, 2.0, -98.0, 3.0, -99.0]})
    pyreadstat.write_sav(frame, str(tmp_path / "in.sav"), missing_ranges={"q": [{"lo": -99, "hi": -90}]},
                         variable_value_labels={"q": {1: "one", -99: "no answer", -98: "refused"}})
    convert(tmp_path / "in.sav", tmp_path / "out.dta")
    values, meta = pyreadstat.read_dta(str(tmp_path / "out.dta"), user_missing=True)
    assert values.q.tolist() == [1, "a", 2, "b", 3, "a"]
    assert meta.variable_value_labels["q"] == {1: "one", "a": "no answer", "b": "refused"}


# ------------------------------------------------------------------ refusals and failures

def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def folder(inputs, tmp_path) -> Path:
    for path in inputs.values():
        shutil.copy(path, tmp_path / path.name)
    status = pramkit.PramMatrix.form8([0.7] * 7, categories=list(range(1, 8)))
    named = {"missing_codes": "Stata's extended missing values .a-.z"}
    pramkit.Manifest.of({"pl030": status}, input=named).write(tmp_path / "m.json")
    pramkit.Manifest.of({"pl030": pramkit.PramMatrix.form8([0.7] * 3, categories=[1, 2, "a"])},
                        input=named).write(tmp_path / "label.json")
    big = "x" * (1 << 20)
    pd.DataFrame({"note": ["a", big, "a", "b"], "sex": ["m", "f", "f", "m"]}).to_csv(tmp_path / "big.csv", index=False)
    pramkit.Manifest.of({"sex": pramkit.PramMatrix.form8([0.7] * 2, categories=["f", "m"])}).write(
        tmp_path / "big.json")
    clash = pd.DataFrame({"q": [1, 2, 3, 2], "r": pd.Series([1, -1, "a", 2], dtype=object)})
    pyreadstat.write_dta(clash, str(tmp_path / "clash.dta"), missing_user_values={"r": ["a"]})
    sas = pd.DataFrame({"pl030": [1.0, np.nan, 2.0, 3.0]})
    pyreadstat.write_xport(sas, str(tmp_path / "under.xpt"))
    write_special_missing(tmp_path / "under.xpt", {"pl030": [None, "._", None, None]}, 4)
    pd.DataFrame({"s": ["a", "NA", "n/a", "none", "unknown", "b"]}).to_csv(tmp_path / "markers.csv", index=False)
    pramkit.Manifest.of({"s": pramkit.PramMatrix.form8([0.7, 0.7], categories=["a", "b"])}).write(
        tmp_path / "markers.json")
    assert main(["keygen", str(tmp_path / "key")]) == 0
    return tmp_path


BAD = [
    ("silc.dta", "label.json", "out.dta", "is neither (a label of a missing code taken for a category?)"),
    ("big.csv", "big.json", "out.sav", "column 'note', row 2 holds a value of 1048576 bytes; an SPSS file"),
    ("big.csv", "big.json", "out.xpt", "column 'note', row 2 holds a value of 1048576 bytes; a SAS transport"),
    ("clash.dta", "m.json", "out.sav", "row 2 holds the value -1, which an SPSS file would read as a missing code"),
    ("under.xpt", "m.json", "out.dta", "holds SAS's missing code ._, which a Stata file cannot hold"),
    ("markers.csv", "markers.json", "out.sav", "an SPSS file declares at most three missing texts"),
]


@pytest.mark.parametrize("data, manifest, out, message", BAD, ids=[b[2] + ":" + b[3][:30] for b in BAD])
def test_what_a_format_cannot_hold_is_refused_in_one_line(folder, capsys, data, manifest, out, message) -> None:
    m = pramkit.Manifest.read(folder / manifest)
    if data == "clash.dta" or data == "under.xpt":  # a manifest of q/pl030 with the codes named
        column = "q" if data == "clash.dta" else "pl030"
        words = ("Stata's extended missing values .a-.z" if data == "clash.dta"
                 else "SAS's special missing values .A-.Z and ._")
        pramkit.Manifest.of({column: pramkit.PramMatrix.form8([0.7] * 3, categories=[1, 2, 3])},
                            input={"missing_codes": words}).write(folder / "m.json", force=True)
    del m
    capsys.readouterr()
    before = digests(folder)
    argv = ["apply", str(folder / data), "--manifest", str(folder / manifest), "--key-file", str(folder / "key"),
            "--out", str(folder / out)]
    if data == "markers.csv":
        argv.append("--na-values=NA,n/a,none,unknown")
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert digests(folder) == before  # nothing written, the inputs unchanged


@pytest.mark.parametrize("target", ["parquet", "spss", "sas", "stata"])
def test_a_failed_write_across_formats_leaves_nothing(folder, monkeypatch, target) -> None:
    """The new write paths (Parquet's key-value metadata; codes and labels of another format) fail whole."""
    import pramkit.io_codes

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if target == "parquet":
        monkeypatch.setattr(pq.ParquetWriter, "add_key_value_metadata", enospc)
        source = "silc.dta"
    else:
        monkeypatch.setattr(pramkit.io_codes.CodeCarrier, "stat", enospc)
        source = "silc.sav" if target != "spss" else "silc.dta"
    before = digests(folder)
    with pytest.raises(PramkitError, match="No space left"):
        apply_file(folder / source, pramkit.Manifest.of(
            {"rb090": pramkit.PramMatrix.form8([0.9, 0.9], categories=[1, 2])},
            input={"missing_codes": "Stata's extended missing values .a-.z"}),
            folder / f"out{SUFFIX[target]}", key=bytes(32), quiet=True)
    assert digests(folder) == before
