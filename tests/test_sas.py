"""SAS files: ``.sas7bdat`` read, ``.xpt`` (transport) read and written, special missing values kept.

pyreadstat writes ``.xpt`` but not ``.sas7bdat``.  The ``.sas7bdat`` read here is a real file
shipped inside an installed package: ``iris.sas7bdat`` of R's haven (Debian's r-cran-haven, which
CI installs), checked against pandas' own SAS reader; a ``.sas7bdat`` with special missing values
is written by haven (``write_sas``) when R is there.  Transport files are made from the real
EU-SILC file (missing values become SAS's ``.A`` under 16 and ``._`` from 16, weights travel
along); R's haven, a reader pramkit did not write, checks the special missing values written.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from conftest import SDC_DATA

import pramkit
from pramkit.cli import main
from pramkit.engine.perturb import apply_file
from pramkit.errors import PramkitError
from pramkit.io import iter_batches, read_table
from pramkit.io_sas import read_special_missing, write_special_missing

REQUIRE_R = bool(os.environ.get("PRAMKIT_REQUIRE_R"))
HAVEN_IRIS = Path("/usr/lib/R/site-library/haven/examples/iris.sas7bdat")
KEPT = ("column_names", "column_labels", "original_variable_types", "readstat_variable_types", "table_name",
        "file_label")
NAMED = {"missing_codes": "SAS's special missing values .A-.Z and ._"}


def rscript(code: str) -> str:
    """Run R code (haven) and return its output; skip when R is absent (not in CI)."""
    if shutil.which("Rscript") is None:
        if REQUIRE_R:
            pytest.fail("Rscript is required (PRAMKIT_REQUIRE_R)")
        pytest.skip("Rscript is not installed (CI installs r-base-core and r-cran-haven)")
    run = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


def haven_tags(path: Path, column: str) -> list[str | None]:
    """The special missing values of a column as haven reads them (its tags are lower case)."""
    reader = "read_xpt" if path.suffix == ".xpt" else "read_sas"
    out = rscript(f'x <- haven::{reader}("{path}")[["{column}"]]; '
                  'cat(ifelse(is.na(haven::na_tag(x)), "-", haven::na_tag(x)), sep = "\\n")')
    return [None if t == "-" else "." + t.upper() for t in out.split()]


@pytest.fixture(scope="module")
def iris() -> Path:
    if not HAVEN_IRIS.is_file():
        if REQUIRE_R:
            pytest.fail(f"{HAVEN_IRIS} is required (r-cran-haven)")
        pytest.skip("R's haven (and its iris.sas7bdat) is not installed")
    return HAVEN_IRIS


@pytest.fixture(scope="module")
def silc() -> pd.DataFrame:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    return pd.read_csv(SDC_DATA / "eusilc_laeken.csv", nrows=2000,
                       usecols=["db040", "age", "rb090", "pl030", "rb050"])


def special_codes(silc: pd.DataFrame) -> list[str | None]:
    """The truth: a missing economic status is .A under 16 and ._ from 16, and every 97th status is ._
    (not answered)."""
    return [(".A" if age < 16 else "._") if np.isnan(v) else "._" if i % 97 == 5 else None
            for i, (v, age) in enumerate(zip(silc.pl030, silc.age))]


def write_xpt(silc: pd.DataFrame, path: Path) -> list[str | None]:
    """A transport file of EU-SILC with labels, formats, a member name and special missing values."""
    codes = special_codes(silc)
    frame = pd.DataFrame({"db040": silc.db040, "rb090": np.where(silc.rb090 == "male", 1.0, 2.0),
                          "pl030": [np.nan if c else v for v, c in zip(silc.pl030, codes)], "rb050": silc.rb050})
    pyreadstat.write_xport(frame, str(path), file_label="EU-SILC 2006", table_name="SILC",
                           column_labels=["Region", "Sex", "Economic status", "Weight"],
                           variable_format={"rb090": "F1.", "pl030": "BEST8.", "rb050": "COMMA12.2"})
    write_special_missing(path, {"pl030": codes}, len(frame))
    return codes


def metadata(path: Path) -> dict:
    reader = pyreadstat.read_xport if path.suffix == ".xpt" else pyreadstat.read_sas7bdat
    meta = reader(str(path), metadataonly=True)[1]
    return {k: getattr(meta, k) for k in KEPT}


def test_sas7bdat_reads_as_pandas_reads_it(iris) -> None:
    """A real .sas7bdat: pramkit's reading equals pandas' own parser's, value by value."""
    ours = read_table(iris)
    theirs = pd.read_sas(iris, encoding="utf-8")
    assert list(ours.columns) == list(theirs.columns) and len(ours) == 150
    for column in ours.columns:
        assert ours[column].tolist() == theirs[column].tolist(), column


def test_sas7bdat_released_as_xpt(iris, tmp_path) -> None:
    manifest = pramkit.design_release(iris, ["Species"], epsilon=2.0)
    apply_file(iris, manifest, tmp_path / "iris.xpt", key=bytes(32), quiet=True)
    before, after = pyreadstat.read_sas7bdat(str(iris))[0], pyreadstat.read_xport(str(tmp_path / "iris.xpt"))[0]
    for column in ("Sepal_Length", "Sepal_Width", "Petal_Length", "Petal_Width"):
        pd.testing.assert_series_equal(before[column], after[column])
    assert set(after.Species) == set(before.Species) == {"setosa", "versic", "virgin"}  # stored as $6 in the file
    assert (before.Species != after.Species).any()
    kept = ("column_names", "column_labels", "original_variable_types", "readstat_variable_types", "table_name")
    assert {k: v for k, v in metadata(tmp_path / "iris.xpt").items() if k in kept} == \
        {k: v for k, v in metadata(iris).items() if k in kept}


def test_xpt_round_trip_keeps_codes_and_metadata(silc, tmp_path) -> None:
    codes = write_xpt(silc, tmp_path / "silc.xpt")
    assert sum(c == "._" for c in codes) > 0 and sum(c == ".A" for c in codes) > 100
    plain = pyreadstat.read_xport(str(tmp_path / "silc.xpt"))[0]  # pyreadstat reads the patched file: missing
    assert plain.pl030.isna().tolist() == [c is not None for c in codes]
    manifest = pramkit.design_release(tmp_path / "silc.xpt", ["pl030", "rb090"], epsilon=4.0, weights=["rb050"])
    assert {f.kind: f for f in manifest.exact_facts}["missing_code"].reveals.endswith(f"({NAMED['missing_codes']})")
    apply_file(tmp_path / "silc.xpt", manifest, tmp_path / "out.xpt", key=bytes(32), quiet=True)
    out = read_special_missing(tmp_path / "out.xpt", ["db040", "rb090", "pl030", "rb050"], len(silc))
    assert out["pl030"].tolist() == codes and set(out) == {"pl030"}
    assert metadata(tmp_path / "out.xpt") == metadata(tmp_path / "silc.xpt")
    before, after = pyreadstat.read_xport(str(tmp_path / "silc.xpt"))[0], pyreadstat.read_xport(
        str(tmp_path / "out.xpt"))[0]
    pd.testing.assert_series_equal(before.rb050, after.rb050)
    assert (before.pl030 != after.pl030).sum() > 100


def test_haven_reads_the_special_missing_values_written(silc, tmp_path) -> None:
    codes = write_xpt(silc, tmp_path / "silc.xpt")
    manifest = pramkit.Manifest.of({"pl030": pramkit.PramMatrix.form8([0.6] * 7, categories=list(range(1, 8)))},
                                   input=NAMED)
    apply_file(tmp_path / "silc.xpt", manifest, tmp_path / "out.xpt", key=bytes(32), quiet=True)
    assert haven_tags(tmp_path / "out.xpt", "pl030") == codes


def test_haven_written_sas_files_are_read_with_their_codes(silc, tmp_path) -> None:
    """.sas7bdat and .xpt written by haven (not by pramkit nor pyreadstat): pramkit reads their codes where
    haven put them, and a release keeps them."""
    codes = special_codes(silc)
    pd.DataFrame({"pl030": [np.nan if c else v for v, c in zip(silc.pl030, codes)],
                  "tag": [c[1] if c else "" for c in codes]}).to_csv(tmp_path / "in.csv",
                                                                                          index=False)
    rscript(f'x <- read.csv("{tmp_path / "in.csv"}", colClasses = c("numeric", "character")); '
            'v <- ifelse(x$tag == "", x$pl030, haven::tagged_na(ifelse(x$tag == "", "A", x$tag))); '
            f'd <- data.frame(pl030 = v); haven::write_xpt(d, "{tmp_path / "haven.xpt"}", version = 8); '
            f'suppressWarnings(haven::write_sas(d, "{tmp_path / "haven.sas7bdat"}"))')
    manifest = pramkit.Manifest.of({"pl030": pramkit.PramMatrix.form8([0.6] * 7, categories=list(range(1, 8)))},
                                   input=NAMED)
    for name in ("haven.xpt", "haven.sas7bdat"):
        _, tables = iter_batches(tmp_path / name, keep_missing_codes=True)
        column = next(tables).column("pl030").to_pylist()
        assert [v if v in (".A", "._") else None for v in column] == codes, name
        apply_file(tmp_path / name, manifest, tmp_path / f"out-{name}.xpt", key=bytes(32), quiet=True)
        assert haven_tags(tmp_path / f"out-{name}.xpt", "pl030") == codes


# ------------------------------------------------------------------ refusals and failures

def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def folder(silc, tmp_path) -> Path:
    write_xpt(silc, tmp_path / "silc.xpt")
    (tmp_path / "broken.xpt").write_bytes((tmp_path / "silc.xpt").read_bytes()[:500])
    matrix = pramkit.PramMatrix.form8([0.6] * 7, categories=list(range(1, 8)))
    pramkit.Manifest.of({"pl030": matrix}, input=NAMED).write(tmp_path / "m.json")
    pramkit.Manifest.of({"pl030": matrix}).write(tmp_path / "unnamed.json")
    assert main(["keygen", str(tmp_path / "key")]) == 0
    return tmp_path


BAD = [
    (["{d}/silc.xpt", "--manifest", "{d}/m.json", "--out", "{d}/out.sas7bdat"], "no open writer of .sas7bdat"),
    (["{d}/silc.xpt", "--manifest", "{d}/unnamed.json", "--out", "{d}/out.xpt"], "holds the missing codes .A, ._"),
    (["{d}/broken.xpt", "--manifest", "{d}/m.json", "--out", "{d}/out.xpt"], "cannot read sas file"),
    (["{d}/silc.xpt", "--manifest", "{d}/m.json", "--out", "{d}/silc.xpt", "--force"], "would overwrite the input"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_exits_2_with_one_line(folder, capsys, args, message) -> None:
    capsys.readouterr()
    before = digests(folder)
    code = main(["apply", *[a.format(d=folder) for a in args], "--key-file", str(folder / "key")])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert digests(folder) == before


@pytest.mark.parametrize("point", ["pyreadstat", "special missing", "truncated"])
def test_a_failed_xpt_write_leaves_nothing(folder, monkeypatch, point) -> None:
    import pramkit.io_sas

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if point == "pyreadstat":
        monkeypatch.setattr(pyreadstat, "write_xport", enospc)
    elif point == "special missing":
        monkeypatch.setattr(pramkit.io_sas, "write_special_missing", enospc)
    else:
        original = pyreadstat.write_xport

        def truncated(frame, path, **kwargs):  # a writer that reports success on a full disk
            original(frame, path, **kwargs)
            with open(path, "r+b") as fh:
                fh.truncate(1200)

        monkeypatch.setattr(pyreadstat, "write_xport", truncated)
    before = digests(folder)
    with pytest.raises(PramkitError, match="cannot write|No space left"):
        apply_file(folder / "silc.xpt", folder / "m.json", folder / "out.xpt", key=bytes(32), quiet=True)
    assert digests(folder) == before


@pytest.mark.parametrize("version", [5, 8])
def test_special_missing_in_both_transport_versions(silc, tmp_path, version) -> None:
    """Version 5 and 8 transport files: the codes go where pyreadstat reads a missing number, and
    haven reads them back as the tags written."""
    codes = special_codes(silc)
    frame = pd.DataFrame({"sex": silc.rb090.str[:1], "pl030": [np.nan if c else v for v, c in zip(silc.pl030, codes)],
                          "rb050": silc.rb050})
    path = tmp_path / f"v{version}.xpt"
    pyreadstat.write_xport(frame, str(path), file_format_version=version)
    write_special_missing(path, {"pl030": codes}, len(frame))
    back = pyreadstat.read_xport(str(path))[0]
    assert back.pl030.isna().tolist() == [c is not None for c in codes]
    pd.testing.assert_series_equal(back.rb050, frame.rb050)
    assert read_special_missing(path, ["sex", "pl030", "rb050"], len(frame))["pl030"].tolist() == codes
    assert haven_tags(path, "pl030") == codes
