"""Extended missing codes (Stata .a-.z, SPSS user-missing values and ranges) are kept as codes.

A release made from a Stata or SPSS file keeps each extended missing value exactly where it was,
never perturbs it, writes it back, and names it in the ledger; value labels, formats and storage
types survive the round trip (pyreadstat's metadata of the original and of the release compared).
The data are the real EU-SILC file: its missing economic status becomes Stata's .a (not applicable:
under 16) or .b (not answered), a few sexes are .r (refused), regions keep a whitespace variant and
an NFD spelling in an unperturbed column, and the weights travel along.  R's haven, a reader pramkit
did not write, checks the tags of the released Stata file when it is installed (CI installs it).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import tempfile
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from conftest import SDC_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit
from pramkit.cli import main
from pramkit.engine.perturb import apply_file
from pramkit.errors import DataError
from pramkit.io import iter_batches, read_table

ROWS = 3000
#: What pyreadstat reads about a file that a release must keep as it was.
KEPT = ("column_names", "column_labels", "variable_value_labels", "original_variable_types",
        "readstat_variable_types", "missing_user_values", "missing_ranges", "variable_measure",
        "variable_display_width", "file_label")
STATUS = {1: "working full time", 2: "working part time", 3: "unemployed", 4: "pupil, student",
          5: "in retirement", 6: "disabled", 7: "domestic tasks"}


@pytest.fixture(scope="module")
def eusilc() -> pd.DataFrame:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", nrows=ROWS,
                       usecols=["db040", "hsize", "age", "rb090", "pl030", "rb050"])
    tyrol = data.index[data.db040 == "Tyrol"][::5]
    data.loc[tyrol, "db040"] = " Tyrol"  # an unperturbed column is released as it is, spellings and all
    data.loc[data.index[::40], "db040"] = unicodedata.normalize("NFD", "K\u00e4rnten")
    return data


def stata_codes(data: pd.DataFrame) -> dict[str, list]:
    """The Stata tags the test writes (the truth the release is checked against): missing status is .a
    under 16 and .b from 16, and every 97th status is .b (not answered); every 250th sex is .r."""
    status = [("a" if age < 16 else "b") if np.isnan(v) else "b" if i % 97 == 5 else None
              for i, (v, age) in enumerate(zip(data.pl030, data.age))]
    sex = ["r" if i % 250 == 7 else None for i in range(len(data))]
    return {"pl030": status, "rb090": sex}


def write_stata(data: pd.DataFrame, path: Path) -> dict[str, list]:
    codes = stata_codes(data)
    frame = pd.DataFrame({
        "db040": data.db040, "hsize": data.hsize.astype(np.int16), "age": data.age.astype(np.int16),
        "rb090": pd.Series([c if c else (1 if s == "male" else 2) for s, c in zip(data.rb090, codes["rb090"])],
                           dtype=object),
        "pl030": pd.Series([c if c else int(v) for v, c in zip(data.pl030, codes["pl030"])], dtype=object),
        "rb050": data.rb050,
    })
    pyreadstat.write_dta(
        frame, str(path), file_label="EU-SILC 2006 (laeken), first rows",
        column_labels={"db040": "Region", "hsize": "Household size", "age": "Age", "rb090": "Sex",
                       "pl030": "Economic status", "rb050": "Personal cross-sectional weight"},
        variable_value_labels={"rb090": {1: "male", 2: "female"}, "pl030": STATUS},
        missing_user_values={"pl030": ["a", "b"], "rb090": ["r"]},
        variable_format={"rb050": "%10.2f", "pl030": "%8.0g", "age": "%3.0f"})
    return codes


def metadata(path: Path) -> dict:
    reader = pyreadstat.read_dta if path.suffix == ".dta" else pyreadstat.read_sav
    meta = reader(str(path), user_missing=True)[1]  # the codes found are listed only when the data are read
    return {k: getattr(meta, k) for k in KEPT}


def tags(path: Path, column: str) -> list:
    """The codes of a column as pyreadstat reads them (a letter, or None for a number or plain missing)."""
    frame = pyreadstat.read_dta(str(path), user_missing=True, usecols=[column])[0]
    return [v if isinstance(v, str) else None for v in frame[column]]


@pytest.fixture(scope="module")
def stata_release(eusilc, tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("stata")
    codes = write_stata(eusilc, d / "silc.dta")
    manifest = pramkit.design_release(d / "silc.dta", ["pl030", "rb090"], epsilon=4.0, weights=["rb050"])
    manifest.write(d / "m.json")
    result = apply_file(d / "silc.dta", d / "m.json", d / "released.dta", key=bytes(range(32)), quiet=True)
    return {"dir": d, "codes": codes, "manifest": manifest, "result": result}


def test_stata_codes_stay_where_they_were(stata_release) -> None:
    d, codes = stata_release["dir"], stata_release["codes"]
    for column in ("pl030", "rb090"):
        assert tags(d / "released.dta", column) == codes[column]
    original, _ = pyreadstat.read_dta(str(d / "silc.dta"))
    released, _ = pyreadstat.read_dta(str(d / "released.dta"))
    assert (original.pl030 != released.pl030).sum() > 100  # the status was perturbed, around its codes
    for column in ("db040", "hsize", "age", "rb050"):  # the columns not perturbed, exactly
        pd.testing.assert_series_equal(original[column], released[column])
    assert set(released.pl030.dropna()) <= set(STATUS)


def test_stata_metadata_survive(stata_release) -> None:
    d = stata_release["dir"]
    before, after = metadata(d / "silc.dta"), metadata(d / "released.dta")
    assert after == before
    assert before["missing_user_values"] == {"pl030": ["a", "b"], "rb090": ["r"]}  # the test is about something


def test_codes_are_missing_to_whoever_does_not_keep_them(stata_release) -> None:
    """Designs, estimates and risk read the codes as missing: only writers keep them."""
    d, codes = stata_release["dir"], stata_release["codes"]
    frame = read_table(d / "silc.dta")
    assert frame.pl030.isna().tolist() == [c is not None for c in codes["pl030"]]
    assert sum(c == "b" for c in codes["pl030"]) > 20
    meta, _ = iter_batches(d / "silc.dta", keep_missing_codes=True)
    assert meta.missing.ranges["pl030"] == ((".a", ".a"), (".b", ".b"))
    categories = stata_release["manifest"]["pl030"].matrix.categories
    assert sorted(categories) == list(range(1, 8))  # no code became a category
    summary = next(v for v in stata_release["result"].variables if v.name == "pl030")
    assert summary.missing == sum(c is not None for c in codes["pl030"])


def test_the_ledger_names_the_codes(stata_release, eusilc, tmp_path) -> None:
    facts = {f.kind: f for f in stata_release["manifest"].exact_facts}
    assert "missing_code" in facts and facts["missing_code"].variables == ("pl030", "rb090")
    text = (stata_release["dir"] / "m.json").read_text()
    assert ("which missing code each missing value of pl030 and rb090 holds (Stata's extended missing values "
            ".a-.z)") in text  # in the statement and the facts of the published manifest
    eusilc[["pl030", "rb090"]].to_csv(tmp_path / "silc.csv", index=False)
    from_csv = pramkit.design_release(tmp_path / "silc.csv", ["pl030", "rb090"], epsilon=4.0)
    assert "missing_code" not in {f.kind for f in from_csv.exact_facts}


@pytest.mark.skipif(shutil.which("Rscript") is None and not os.environ.get("PRAMKIT_REQUIRE_R"),
                    reason="Rscript is not installed (CI installs r-base-core and r-cran-haven)")
def test_haven_reads_the_same_tags(stata_release) -> None:
    """R's haven reads the released file's tags where the test put them."""
    d = stata_release["dir"]
    script = (f'x <- haven::read_dta("{d / "released.dta"}"); '
              'cat(ifelse(is.na(haven::na_tag(x$pl030)), "-", haven::na_tag(x$pl030)), sep = "\\n")')
    run = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    want = [c if c else "-" for c in stata_release["codes"]["pl030"]]
    assert run.stdout.split() == want


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([None, None, None, "a", "k", "z"]), min_size=20, max_size=60),
       st.sampled_from(["%9.0g", "%8.2f", "%12.0fc"]))
def test_any_codes_anywhere_come_back(tmp_path, codes, fmt) -> None:
    """Whatever codes a column holds, wherever they are, the release holds the same ones there."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    values = pd.Series([c if c else 1 + i % 3 for i, c in enumerate(codes)], dtype=object)
    pyreadstat.write_dta(pd.DataFrame({"q": values}), str(folder / "in.dta"), variable_format={"q": fmt},
                         missing_user_values={"q": sorted({c for c in codes if c})} if any(codes) else None)
    manifest = pramkit.Manifest.of({"q": pramkit.PramMatrix.form8([0.5, 0.5, 0.5], categories=[1, 2, 3])},
                                   input={"missing_codes": "Stata's extended missing values .a-.z"})
    apply_file(folder / "in.dta", manifest, folder / "out.dta", key=bytes(32), quiet=True, receipt=False)
    assert tags(folder / "out.dta", "q") == codes
    assert metadata(folder / "out.dta") == metadata(folder / "in.dta")


# ------------------------------------------------------------------ SPSS user-missing values and ranges

def test_spss_user_missing_values_and_ranges_survive(eusilc, tmp_path) -> None:
    status = eusilc.pl030.copy()
    status[eusilc.pl030.isna() & (eusilc.age < 16)] = -1  # a user-missing value: not applicable
    status[eusilc.pl030.isna() & (eusilc.age >= 16)] = -99  # in the range -99..-90: not answered
    frame = pd.DataFrame({"db040": eusilc.db040, "pl030": status, "rb050": eusilc.rb050})
    pyreadstat.write_sav(frame, str(tmp_path / "silc.sav"), column_labels=["Region", "Economic status", "Weight"],
                         variable_value_labels={"pl030": {**STATUS, -1: "not applicable", -99: "no answer"}},
                         missing_ranges={"pl030": [-1, {"lo": -99, "hi": -90}]},
                         variable_format={"pl030": "F8.0", "rb050": "F10.2"},
                         variable_measure={"pl030": "nominal", "rb050": "scale", "db040": "nominal"},
                         variable_display_width={"pl030": 6})
    manifest = pramkit.design_release(tmp_path / "silc.sav", ["pl030"], epsilon=3.0)
    assert "SPSS's user-missing values" in {f.kind: f for f in manifest.exact_facts}["missing_code"].reveals
    apply_file(tmp_path / "silc.sav", manifest, tmp_path / "out.sav", key=bytes(32), quiet=True)
    assert metadata(tmp_path / "out.sav") == metadata(tmp_path / "silc.sav")
    before = pyreadstat.read_sav(str(tmp_path / "silc.sav"), user_missing=True)[0]
    after = pyreadstat.read_sav(str(tmp_path / "out.sav"), user_missing=True)[0]
    coded = before.pl030 < 0
    assert coded.sum() == eusilc.pl030.isna().sum() > 100
    pd.testing.assert_series_equal(before.pl030[coded], after.pl030[coded])
    assert (after.pl030[~coded] > 0).all() and (before.pl030 != after.pl030).any()


# ------------------------------------------------------------------ refusals

def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def folder(stata_release, tmp_path) -> Path:
    shutil.copy(stata_release["dir"] / "silc.dta", tmp_path / "silc.dta")
    shutil.copy(stata_release["dir"] / "m.json", tmp_path / "m.json")
    pramkit.Manifest.of({"pl030": pramkit.PramMatrix.form8([0.7] * 7, categories=list(range(1, 8)))}).write(
        tmp_path / "unnamed.json")
    pramkit.Manifest.of({"pl030": pramkit.PramMatrix.form8([0.7] * 3, categories=[1, 2, ".a"])},
                        input={"missing_codes": "Stata's extended missing values .a-.z"}).write(tmp_path / "code.json")
    return tmp_path


BAD = [
    (["apply", "{d}/silc.dta", "--manifest", "{d}/unnamed.json", "--key-file", "{d}/key", "--out", "{d}/out.dta"],
     "the manifest's ledger does not name them"),
    (["apply", "{d}/silc.dta", "--manifest", "{d}/code.json", "--key-file", "{d}/key", "--out", "{d}/out.dta"],
     "is a missing-value code of the data"),
    (["apply", "{d}/silc.dta", "--manifest", "{d}/m.json", "--key-file", "{d}/key", "--out", "{d}/out.sas7bdat"],
     "cannot write"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m for _, m in BAD])
def test_refusals_exit_2_and_write_nothing(folder, capsys, args, message) -> None:
    assert main(["keygen", str(folder / "key")]) == 0
    capsys.readouterr()
    before = digests(folder)
    code = main([a.format(d=folder) for a in args])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert digests(folder) == before


def test_a_failed_stata_write_leaves_nothing(folder, monkeypatch) -> None:
    before = digests(folder)

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pyreadstat, "write_dta", enospc)
    with pytest.raises(pramkit.errors.PramkitError, match="No space left"):
        apply_file(folder / "silc.dta", folder / "m.json", folder / "out.dta", key=bytes(32), quiet=True)
    assert digests(folder) == before


def test_a_manifest_without_the_codes_is_refused_in_the_library(folder) -> None:
    with pytest.raises(DataError, match=r"holds the missing codes \.a, \.b"):
        apply_file(folder / "silc.dta", folder / "unnamed.json", folder / "out.dta", key=bytes(32), quiet=True)
