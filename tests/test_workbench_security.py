"""The workbench on a shared machine: private files its owner's only, no path of the machine in a public
file, the key dropped once applied, files opened by path only from the data folders."""

from __future__ import annotations

import gc
import itertools
import os
import stat
import tempfile
from pathlib import Path

import pytest

from pramkit.cli import main
from pramkit.datasets import CENSUS_VARIABLES
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench

RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'


def _machine_paths(*folders: Path) -> set[str]:
    """Paths of this machine that a public file must not name: the test's folders (as given and resolved),
    the temporary folder and the home folder."""
    out = {str(f) for f in folders} | {str(f.resolve()) for f in folders}
    out |= {tempfile.gettempdir(), str(Path(tempfile.gettempdir()).resolve())}
    home = Path.home()
    if str(home) not in ("/", "/root"):
        out.add(str(home))
    return out


def _public_text(folder: Path) -> dict[str, str]:
    return {p.name: p.read_bytes().decode("utf-8", "replace") for p in (folder / "public").iterdir()}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A release with every input file a design reads by path: rules, a distance file; exported."""
    d = tmp_path_factory.mktemp("officer-home")
    rules = d / "rules.csv"
    rules.write_text(RULES, encoding="utf-8")
    ages = CENSUS_VARIABLES["age"]
    distances = d / "age-distances.csv"
    distances.write_text("from,to,distance\n" + "".join(f"{a},{b},{abs(i - j)}\n" for (i, a), (j, b)
                                                         in itertools.product(enumerate(ages), repeat=2)))
    wb = Workbench(d / "work")
    wb.open_census(rows=5_000)
    wb.risk(["age", "sex", "marital_status"], sampling_fraction=0.05)
    wb.design(["marital_status"], DesignChoices(epsilon=3.0, forbid=rules, strata="age"))
    key = SecretKey(bytes(range(32)), "a test key")
    wb.apply(key)
    out = d / "release"
    wb.export(out)
    metric = Workbench(d / "work-metric")
    metric.open_census(rows=3_000)
    metric.design(["age"], DesignChoices(method="metric", epsilon=5.0, metric_epsilon=0.5, distances=str(distances)))
    metric.apply(key)
    metric.export(d / "release-metric")
    return {"dir": d, "out": out, "metric": d / "release-metric", "wb": wb}


def test_private_files_are_the_owners_only(exported: dict) -> None:
    for out in (exported["out"], exported["metric"]):
        private = out / "private"
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        found = list(private.rglob("*"))
        assert any(p.is_dir() for p in found) and len(found) >= 6
        for p in found:
            assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600), p


@pytest.mark.parametrize("release", ["out", "metric"])
def test_no_public_file_names_a_path_of_this_machine(exported: dict, release: str) -> None:
    out = exported[release]
    texts = _public_text(out)
    assert set(texts) == {"manifest.json", "released.csv", "released.csv.receipt.json", "report.html"}
    for forbidden in _machine_paths(exported["dir"], out, exported["wb"].work):
        for name, text in texts.items():
            assert forbidden not in text, (name, forbidden)


def test_the_internal_report_names_the_released_file_where_the_export_puts_it(exported: dict) -> None:
    """The private report is built in the export's temporary folder; it names the released file by its place
    in the export (public/released.csv), which exists, never the temporary folder that is gone."""
    import html
    import re

    text = html.unescape(re.sub(r"<[^>]+>", " ", (exported["out"] / "private" / "report.html").read_text("utf-8")))
    assert "pramkit-tmp" not in text and ".export" not in text
    assert "public/released.csv" in text and (exported["out"] / "public" / "released.csv").is_file()


def test_the_metric_release_still_shows_its_distances(exported: dict) -> None:
    """The manifest names the distance file by its name; the reports read the design's own file."""
    texts = _public_text(exported["metric"])
    assert '"age-distances.csv"' in texts["manifest.json"]
    assert "expected distance" in texts["report.html"]


def test_the_command_line_public_report_names_the_released_file_only(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("sex,age\n" + "f,0-9\nm,10-19\n" * 100)
    m, released, report = tmp_path / "m.json", tmp_path / "released.csv", tmp_path / "public.html"
    assert main(["design", str(data), "--vars", "sex", "--method", "rr", "--epsilon", "1", "--out", str(m),
                 "--quiet"]) == 0
    assert main(["apply", str(data), "--manifest", str(m), "--out", str(released), "--quiet"]) == 0
    assert main(["report", str(data), "--manifest", str(m), "--released", str(released), "--keys", "sex,age",
                 "--sampling-fraction", "0.1", "--public", str(report), "--out", str(tmp_path / "r.html"),
                 "--quiet"]) == 0
    text = report.read_text()
    assert "released.csv" in text
    for forbidden in _machine_paths(tmp_path):
        assert forbidden not in text
        assert forbidden not in m.read_text() and forbidden not in (tmp_path / "released.csv.receipt.json").read_text()


def _live_keys(fingerprint: str) -> list[SecretKey]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, SecretKey) and o.fingerprint == fingerprint]


def test_the_key_is_dropped_once_applied(tmp_path: Path) -> None:
    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=3_000)
    wb.design(["sex"], DesignChoices(epsilon=1.0))
    material = os.urandom(32)
    fingerprint = SecretKey(material, "probe").fingerprint
    applied = wb.apply(SecretKey(material, "the officer's key"))
    assert applied.key_fingerprint == fingerprint and wb.designed.key is None
    assert _live_keys(fingerprint) == []                   # no object of the process holds it any more
    with pytest.raises(ParameterError, match="give the key again"):
        wb.apply()
    view = wb.designed.view
    wb.apply(SecretKey(material, "given again"))          # the same key: the same design, applied again
    assert wb.designed.view is view and _live_keys(fingerprint) == []
    wb.apply(SecretKey(bytes(range(32)), "another"))     # another key: the design shown, applied with it
    assert wb.designed.view is view and wb.applied.key_fingerprint != fingerprint and _live_keys(fingerprint) == []


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    data, other = tmp_path / "data", tmp_path / "elsewhere"
    (data / "sub").mkdir(parents=True)
    other.mkdir()
    for folder in (data, data / "sub", other):
        (folder / "survey.csv").write_text("région,âge\n" + "Île-de-France,15-24\nNord,NA\n" * 30, encoding="utf-8")
    (data / "link.csv").symlink_to(other / "survey.csv")
    (data / "sublink").symlink_to(other)
    return {"data": data, "other": other, "root": tmp_path}


@pytest.mark.parametrize("typed, allowed", [
    ("survey.csv", True),                   # relative: in the first data folder
    ("sub/survey.csv", True),
    ("{data}/survey.csv", True),
    ("{data}/sub/../survey.csv", True),
    ("{other}/survey.csv", False),
    ("{data}/../elsewhere/survey.csv", False),
    ("../elsewhere/survey.csv", False),
    ("link.csv", False),                    # a link out of the folder
    ("sublink/survey.csv", False),
    ("/etc/passwd", False),
    ("{other}/absent.csv", False),          # refused the same way whether or not the file exists
])
def test_a_file_is_opened_by_its_path_only_from_the_data_folders(folders: dict, typed: str, allowed: bool) -> None:
    wb = Workbench(folders["root"] / "work", data_dirs=[folders["data"]])
    path = typed.format(**folders)
    if allowed:
        assert wb.open_file(path).rows == 60
    else:
        with pytest.raises(ParameterError, match="is not in the folders this app may open files from") as caught:
            wb.open_file(path)
        message = str(caught.value)
        assert "\n" not in message and str(folders["data"].resolve()) in message and "upload" in message
        assert wb.source is None


def test_several_data_folders_and_none(folders: dict) -> None:
    wb = Workbench(folders["root"] / "work", data_dirs=[folders["data"], folders["other"]])
    assert wb.open_file(folders["other"] / "survey.csv").rows == 60
    assert Workbench(folders["root"] / "w2").open_file(folders["other"] / "survey.csv").rows == 60  # library: no limit
