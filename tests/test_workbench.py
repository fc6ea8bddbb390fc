"""The workbench (pramkit.workbench): a release step by step, exported as the command line writes it.

The oracle is the command line itself, typed out here by hand: the same parameters and key give
the same released file (byte for byte) and the same manifest (but for its time stamp and timings),
and the script the workbench saves makes the release again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _manifests import comparable

from pramkit.cli import main
from pramkit.errors import Cancelled, OutputExistsError, ParameterError, PramkitError
from pramkit.kernel.rng import SecretKey, write_key_file
from pramkit.progress import watching
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench

RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'



def _env() -> dict[str, str]:
    """The environment of a script run by the tests: this Python's ``pramkit`` first on the PATH."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The issue's workflow on the census: keys and risk, a DP design at record budget 3 with a rule and a
    stratum, applied with an uploaded key file, exported."""
    d = tmp_path_factory.mktemp("wb")
    key_file = write_key_file(d / "secret.key")
    rules = d / "rules.csv"
    rules.write_text(RULES, encoding="utf-8")
    wb = Workbench(d / "work")
    source = wb.open_census(rows=20_000)
    risk = wb.risk(["age", "sex", "marital_status"], sampling_fraction=0.05)
    choices = DesignChoices(epsilon=3.0, split="joint", forbid=rules, strata="race")
    key = SecretKey.from_file(key_file)  # uploaded before the design: its noise is drawn from it
    design = wb.design(["age", "marital_status"], choices, key=key)
    applied = wb.apply(key)
    view = wb.export(d / "out")
    return {"dir": d, "key": key_file, "rules": rules, "wb": wb, "source": source, "risk": risk,
            "design": design, "applied": applied, "view": view}


def test_the_export_is_what_the_command_line_writes(exported: dict, tmp_path: Path) -> None:
    d, out = exported["dir"], exported["dir"] / "out"
    data = out / "private" / "census.csv"                 # the census the workbench opened, exported
    rules = tmp_path / "rules.csv"                         # the officer's rules file, wherever it is
    shutil.copyfile(exported["rules"], rules)
    codebook = tmp_path / "codebook.csv"
    shutil.copyfile(out / "private" / "inputs" / "codebook.csv", codebook)
    cli = tmp_path / "cli"
    (cli / "public").mkdir(parents=True)
    (cli / "private").mkdir()
    assert main(["design", str(data), "--vars", "age,marital_status", "--epsilon", "3", "--split", "joint",
                 "--forbid", str(rules), "--strata", "race", "--categories", str(codebook),
                 "--key-file", str(exported["key"]), "--out", str(cli / "public" / "manifest.json"),
                 "--design-record", str(cli / "private" / "design-record.json"), "--quiet"]) == 0
    assert main(["apply", str(data), "--manifest", str(cli / "public" / "manifest.json"),
                 "--key-file", str(exported["key"]), "--out", str(cli / "public" / "released.csv"), "--quiet"]) == 0
    assert (cli / "public" / "released.csv").read_bytes() == (out / "public" / "released.csv").read_bytes()
    assert comparable(cli / "public" / "manifest.json") == comparable(out / "public" / "manifest.json")
    original = pd.read_csv(data)
    released = pd.read_csv(out / "public" / "released.csv")
    assert (released["race"] == original["race"]).all()  # the stratum is released as it is
    assert (original["age"] != released["age"]).any()
    child = released["age"] == "0-9"                      # the rule holds in every released record
    assert released.loc[child, "marital_status"].eq("never married").all()


def test_the_saved_script_makes_the_release_again(exported: dict, tmp_path: Path) -> None:
    out = exported["dir"] / "out"
    script = out / "private" / "reproduce.sh"
    assert script.read_text() == exported["view"].script
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["sh", str(script), str(exported["key"]), str(tmp_path / "again")], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    again = tmp_path / "again"
    assert (again / "public" / "released.csv").read_bytes() == (out / "public" / "released.csv").read_bytes()
    assert comparable(again / "public" / "manifest.json") == comparable(out / "public" / "manifest.json")
    assert _tree(again / "public") == _tree(out / "public")
    key_text = exported["key"].read_text().strip()
    for f in out.rglob("*"):                              # the key is in no exported file
        assert not f.is_file() or key_text not in f.read_text(errors="replace")


#: Key files that are not the release's: another key, a text file, the release's own manifest, an absent file.
WRONG_KEYS = {
    "another key": lambda d: write_key_file(d / "other.key"),
    "a text file": lambda d: (d / "notes.txt").write_text("the key is in the safe\n") and d / "notes.txt",
    "the manifest": lambda d: d / "manifest.json",
    "an absent file": lambda d: d / "absent.key",
}


@pytest.mark.parametrize("wrong", sorted(WRONG_KEYS))
def test_the_script_refuses_any_key_but_the_releases_before_writing(exported: dict, tmp_path: Path,
                                                                    wrong: str) -> None:
    """reproduce.sh checks the key file's fingerprint first: another key exits 2 with one line and writes
    nothing (before, it made another release and exited 0)."""
    out = exported["dir"] / "out"
    shutil.copyfile(out / "public" / "manifest.json", tmp_path / "manifest.json")
    key = WRONG_KEYS[wrong](tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["sh", str(out / "private" / "reproduce.sh"), str(key), str(tmp_path / "again")], env=env,
                          capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert not (tmp_path / "again").exists()
    if wrong == "another key":
        theirs, ours = SecretKey.from_file(key).fingerprint, SecretKey.from_file(exported["key"]).fingerprint
        assert lines[0] == (f"reproduce.sh: {key} is not the key of this release (its fingerprint is {theirs}, the "
                            f"release's is {ours}): give the key file the release was made with; nothing was written")
    else:
        assert lines[0].startswith("pramkit keygen: error: key file") and "Traceback" not in proc.stderr


def test_the_folders_hold_what_each_may_hold(exported: dict) -> None:
    out = exported["dir"] / "out"
    assert _tree(out / "public") == ["manifest.json", "released.csv", "released.csv.receipt.json", "report.html"]
    assert set(_tree(out / "private")) == {"census.csv", "design-record.json", "inputs", "inputs/codebook.csv",
                                           "inputs/rules.csv", "report.html", "reproduce.sh", "summary.json"}
    assert exported["view"].listing()["public"] == sorted(exported["view"].listing()["public"])
    assert sorted(p.name for p in (exported["dir"] / "out").iterdir()) == ["private", "public"]


def test_each_view_shows_the_library_figures(exported: dict) -> None:
    risk, design, applied = exported["risk"], exported["design"], exported["applied"]
    figures = dict(zip(risk.table["measure"], risk.table["value"]))
    assert figures["records"] == "20,000" and risk.plot_png[:4] == b"\x89PNG"
    assert design.record_epsilon == "3 given the structure" and design.uncovered == ()
    assert "race" in design.guarantee and set(design.heatmaps) == set()   # 245 cells: described, not drawn
    assert list(design.ledger["variable"]) == ["age*marital_status"]
    assert applied.key_fingerprint == SecretKey.from_file(exported["key"]).fingerprint
    assert applied.risk_after is not None and "jointly" in applied.risk_after.note


def test_another_key_releases_the_design_shown(sdc_data: Path, tmp_path: Path) -> None:
    """The design drew its noise from a key of its own; applying with another key releases the design the page
    showed, its manifest unchanged (before, it designed again silently: other matrices, other values kept), and
    the saved script copies that design and makes the same release again with the key."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(sdc_data / "testdata.csv", data / "testdata.csv")
    wb = Workbench(tmp_path / "work", data_dirs=[data])
    wb.open_file("testdata.csv")
    shown = wb.design(["roof", "walls", "water"], DesignChoices(epsilon=3.0))
    key_file = write_key_file(tmp_path / "secret.key")
    key = SecretKey.from_file(key_file)
    applied = wb.apply(key)
    assert applied.design is shown and wb.designed.key is None and applied.key_fingerprint == key.fingerprint
    assert "the design shown was released as it is" in applied.warnings[0]
    shown.manifest.write(tmp_path / "shown.json")
    released = wb.work / "release" / "manifest.json"
    assert comparable(released) == comparable(tmp_path / "shown.json")   # the matrices shown are those released
    mine = Workbench(tmp_path / "mine", data_dirs=[data])       # the same choices with the key: another design
    mine.open_file("testdata.csv")
    other = mine.design(["roof", "walls", "water"], DesignChoices(epsilon=3.0), key=key)
    assert other.manifest.ledger.dp_counts != shown.manifest.ledger.dp_counts
    out = wb.export(tmp_path / "out", confirmed=True).out
    assert (out / "private" / "inputs" / "design-manifest.json").is_file()
    proc = subprocess.run(["sh", str(out / "private" / "reproduce.sh"), str(key_file), str(tmp_path / "again")],
                          env=_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    again = tmp_path / "again" / "public"
    assert (again / "released.csv").read_bytes() == (out / "public" / "released.csv").read_bytes()
    assert comparable(again / "manifest.json") == comparable(out / "public" / "manifest.json")
    assert set(applied.estimates["variable"]) == {"roof", "walls", "water"}


def test_an_uploaded_file_with_missing_values_and_labels_to_tidy(tmp_path: Path) -> None:
    """Missing values, an extra missing marker, a label spelled two ways: refused until tidied, then
    opened, designed and exported."""
    frame = pd.DataFrame({"region": ["north", " north", "south", "east", "-9", None] * 200,
                          "sex": ["f", "m", "f", "m", "f", "m"] * 200})
    upload = tmp_path / "upload.csv"
    frame.to_csv(upload, index=False)
    wb = Workbench(tmp_path / "work")
    wb.open_file(upload, label="survey 2026.csv", na_values=("NA", "-9"), upload=True)
    with pytest.raises(PramkitError, match="spelled two ways"):
        wb.design(["region"], DesignChoices(method="rr", epsilon=1.0))
    frame["region"] = frame["region"].str.strip()
    frame.to_csv(upload, index=False)
    source = wb.open_file(upload, label="survey 2026.csv", na_values=("NA", "-9"), upload=True)
    info = {v.name: v for v in source.variables}
    assert source.rows == 1_200 and info["region"].missing == 400 and "-9" in source.missing_codes
    view = wb.design(["region"], DesignChoices(method="rr", epsilon=1.0))
    assert any("read from the original file" in u for u in view.uncovered)
    wb.apply(SecretKey(bytes(32), "a test key"))
    with pytest.raises(ParameterError, match="does not cover everything published"):
        wb.export(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    exported = wb.export(tmp_path / "out", confirmed=True)
    assert "survey 2026.csv" in exported.listing()["private"]
    assert "--na-values NA,-9" in exported.script
    released = pd.read_csv(tmp_path / "out" / "public" / "released.csv", keep_default_na=False)
    assert (released["region"][frame["region"].isna()] == "").all()           # missing stays missing
    assert (released["region"][frame["region"] == "-9"] == "-9").all()        # so does the marker


@pytest.mark.parametrize("step, message", [
    (lambda wb: wb.risk(["age"], sampling_fraction=0.05), "open a file first"),
    (lambda wb: wb.design(["age"], DesignChoices(epsilon=1.0)), "open a file first"),
    (lambda wb: (wb.open_census(5_000), wb.apply())[1], "design the release first"),
    (lambda wb: (wb.open_census(5_000), wb.design([], DesignChoices(epsilon=1.0)))[1], "at least one"),
    (lambda wb: (wb.open_census(5_000), wb.design(["age", "age"], DesignChoices(epsilon=1.0)))[1], "repeat"),
    (lambda wb: (wb.open_census(5_000), wb.design(["age"], DesignChoices(epsilon=-1.0)))[1], "epsilon"),
    (lambda wb: (wb.open_census(5_000), wb.design(["nope"], DesignChoices(epsilon=1.0)))[1], "nope"),
    (lambda wb: wb.open_census(rows=10), "1,000"),
    (lambda wb: wb.open_file("/nonexistent/file.csv"), "file.csv"),
    (lambda wb: (wb.open_census(5_000), wb.script())[1], "design the release first"),
])
def test_bad_steps_are_one_line_errors(tmp_path: Path, step, message: str) -> None:
    wb = Workbench(tmp_path / "work")
    with pytest.raises(PramkitError, match=message) as info:
        step(wb)
    assert "\n" not in str(info.value)


def test_an_empty_upload_and_rules_naming_an_unknown_category(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    wb = Workbench(tmp_path / "work")
    with pytest.raises(PramkitError):
        wb.open_file(empty, upload=True)
    wb.open_census(rows=5_000)
    rules = tmp_path / "rules.csv"
    rules.write_text("age,marital_status\n0-9,engaged\n", encoding="utf-8")
    with pytest.raises(PramkitError, match="engaged"):
        wb.design(["age", "marital_status"], DesignChoices(epsilon=3.0, split="joint", forbid=rules))
    assert wb.designed is None


def test_cancelled_export_leaves_nothing(tmp_path: Path) -> None:
    """A watcher that stops the work: the export folder is not left half-written."""
    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=5_000)
    wb.design(["age", "sex"], DesignChoices(epsilon=3.0))
    wb.apply(SecretKey(bytes(32), "a test key"))

    def stop(desc: str, done: float, total: float | None) -> None:
        if desc == "report" and done >= 1:
            raise Cancelled("export cancelled")

    with watching(stop), pytest.raises(Cancelled):
        wb.export(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    (tmp_path / "taken" / "public").mkdir(parents=True)
    with pytest.raises(OutputExistsError):
        wb.export(tmp_path / "taken")
    assert _tree(tmp_path / "taken") == ["public"]


def test_a_failing_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An injected failure while the export writes its files: nothing is left in OUT."""
    import pramkit.workbench.export as export_module

    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=5_000)
    wb.design(["sex"], DesignChoices(epsilon=1.0))
    wb.apply(SecretKey(bytes(32), "a test key"))

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_module.shutil, "copyfile", fail)
    with pytest.raises(OSError):
        wb.export(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_manifest_made_before_is_released_as_it_is(tmp_path: Path) -> None:
    """A manifest from `pramkit design` on the same file: applied unchanged, and the script copies it."""
    wb = Workbench(tmp_path / "work")
    source = wb.open_census(rows=5_000)
    manifest = tmp_path / "m.json"
    assert main(["design", str(source.path), "--vars", "age,sex", "--method", "rr", "--epsilon", "2",
                 "--categories", str(source.categories), "--out", str(manifest), "--quiet"]) == 0
    view = wb.use_manifest(manifest)
    assert view.record is None and list(view.ledger["variable"]) == ["age", "sex"]
    key = SecretKey(bytes(range(32)), "a test key")
    wb.apply(key)
    out = wb.export(tmp_path / "out")
    assert (tmp_path / "out" / "public" / "manifest.json").read_bytes() == manifest.read_bytes()
    assert "design_record" not in out.files and "cp " in out.script
    cli = tmp_path / "cli.csv"
    assert main(["apply", str(source.path), "--manifest", str(manifest), "--key-file",
                 str(_key_file(tmp_path, key)), "--out", str(cli), "--quiet"]) == 0
    assert cli.read_bytes() == (tmp_path / "out" / "public" / "released.csv").read_bytes()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["sh", str(tmp_path / "out" / "private" / "reproduce.sh"), str(_key_file(tmp_path, key)),
                           str(tmp_path / "again")], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "again" / "public" / "released.csv").read_bytes() == cli.read_bytes()
    other = tmp_path / "other.json"
    assert main(["design", "--probs", "0.5,0.5", "--epsilon", "1", "--json"]) == 0
    pd.DataFrame({"region": ["a", "b"] * 50}).to_csv(tmp_path / "regions.csv", index=False)
    assert main(["design", str(tmp_path / "regions.csv"), "--vars", "region", "--method", "rr", "--epsilon", "1",
                 "--out", str(other), "--quiet"]) == 0
    with pytest.raises(ParameterError, match="for other columns: region is not in"):
        wb.use_manifest(other)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(PramkitError):
        wb.use_manifest(tmp_path / "broken.json")


def _key_file(folder: Path, key: SecretKey) -> Path:
    path = folder / "key.txt"
    path.unlink(missing_ok=True)
    path.write_text(key.text())
    path.chmod(0o600)
    return path


def test_a_semicolon_latin1_file_through_the_workbench(tmp_path: Path) -> None:
    """The app's open-file step takes the separator and encoding: every step reads the file so, the release is
    written so, and the saved script (with --sep and --encoding) makes it again byte for byte."""
    frame = pd.DataFrame({"region": ["K\u00e4rnten", "Wien", "Salzburg", "Tirol"] * 250,
                          "sex": ["f", "m"] * 500})
    upload = tmp_path / "export.csv"
    frame.to_csv(upload, index=False, sep=";", encoding="latin-1")
    wb = Workbench(tmp_path / "work")
    source = wb.open_file(upload, upload=True, sep=";", encoding="latin-1")
    assert source.names == ["region", "sex"] and source.rows == 1_000
    wb.design(["region"], DesignChoices(method="rr", epsilon=2.0))
    key = tmp_path / "key"
    write_key_file(key)
    wb.apply(SecretKey.from_file(key))
    exported = wb.export(tmp_path / "out", confirmed=True)
    assert "--sep ';' --encoding latin-1" in exported.script
    released = tmp_path / "out" / "public" / "released.csv"
    assert "K\u00e4rnten".encode("latin-1") in released.read_bytes()
    assert pd.read_csv(released, sep=";", encoding="latin-1")["sex"].tolist() == frame["sex"].tolist()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["sh", str(tmp_path / "out" / "private" / "reproduce.sh"), str(key), str(tmp_path / "again")],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "again" / "public" / "released.csv").read_bytes() == released.read_bytes()


#: Value labels with a comma, accents and a user-missing code, as an officer's SPSS or Stata file has them.
LABELS = {"sex": {1: "homme", 2: "femme"}, "age": {1: "0-17, enfant", 2: "18-64", 3: "65+, âgé"}}


def _labelled_file(tmp_path: Path, suffix: str) -> Path:
    pyreadstat = pytest.importorskip("pyreadstat")
    rows = 300
    path = tmp_path / f"survey{suffix}"
    if suffix == ".sav":
        frame = pd.DataFrame({"sex": [1.0, 2.0, 9.0, 1.0, None] * rows, "age": [1.0, 2.0, 3.0, 2.0, 1.0] * rows})
        pyreadstat.write_sav(frame, str(path), missing_ranges={"sex": [9]},
                             variable_value_labels={"sex": {**LABELS["sex"], 9: "refusé"}, "age": LABELS["age"]})
    else:
        frame = pd.DataFrame({"sex": pd.Series([1, 2, "a", 1, 2] * rows, dtype=object),
                              "age": [1, 2, 3, 2, 1] * rows})
        pyreadstat.write_dta(frame, str(path), missing_user_values={"sex": ["a"]},
                             variable_value_labels={"sex": {**LABELS["sex"], "a": "refusé"}, "age": LABELS["age"]})
    return path


@pytest.mark.parametrize("suffix", [".sav", ".dta"])
def test_value_labels_and_missing_codes_in_the_preview_and_the_estimates(tmp_path: Path, suffix: str) -> None:
    """A Stata or SPSS file shows its labels, never codes 1.0/2.0 or NaN, in the preview and the estimates;
    a missing value shows the file's missing code and its label."""
    path = _labelled_file(tmp_path, suffix)
    wb = Workbench(tmp_path / "work")
    source = wb.open_file(path)
    shown = source.shown_preview()
    code = "9" if suffix == ".sav" else "a"
    last = "(missing)" if suffix == ".sav" else "femme"                # a system-missing value, or none
    assert shown["sex"].tolist()[:5] == ["homme", "femme", f"(missing: {code} refusé)", "homme", last]
    assert shown["age"].tolist()[:5] == ["0-17, enfant", "18-64", "65+, âgé", "18-64", "0-17, enfant"]
    labels = dict(zip(source.variables_frame()["variable"], source.variables_frame()["value labels"]))
    assert labels["age"] == "1 = 0-17, enfant; 2 = 18-64; 3 = 65+, âgé"                 # codes without .0
    wb.design(["sex", "age"], DesignChoices(method="rr", epsilon=2.0))
    estimates = wb.apply(SecretKey(bytes(range(32)), "a test key")).estimates
    by_variable = estimates.groupby("variable")["category"].apply(set).to_dict()
    assert by_variable == {"sex": {"homme", "femme"}, "age": {"0-17, enfant", "18-64", "65+, âgé"}}
    assert not estimates["95 % interval"].str.contains("nan").any()
    assert not any(str(c).endswith(".0") for c in estimates["category"])


def test_an_input_kept_again_is_replaced_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live preview designs in a thread beside the step a user runs, and both keep the inputs they read in
    the work folder: a step reading the kept codebook has the old file or the new, never one emptied by the
    copy (an apply once read it with no header); an unchanged input is not written again; a copy that fails
    leaves the kept file as it was."""
    import pramkit.atomic

    wb = Workbench(tmp_path / "work")
    wb.open_census(rows=5_000)
    wb.design(["sex"], DesignChoices(epsilon=1.0))
    kept = wb.work / "inputs" / "codebook.csv"
    census = kept.read_bytes()
    assert census.startswith(b"variable,category")
    inode = kept.stat().st_ino
    wb.preview(["sex"], DesignChoices(epsilon=1.0))
    assert kept.stat().st_ino == inode                               # the same codebook: not written again
    own = tmp_path / "codebook.csv"                                   # the same codebook, its lines ended CRLF
    own.write_bytes(census.replace(b"\n", b"\r\n"))
    with open(kept, "rb") as reader:                                  # a step that has opened the kept file
        wb.preview(["sex"], DesignChoices(epsilon=1.0, categories=str(own)))
        assert reader.read() == census                                # reads the whole file it opened
    assert kept.read_bytes() == own.read_bytes()

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pramkit.atomic, "_write_file", fail)
    with pytest.raises(PramkitError, match="No space left"):
        wb.preview(["sex"], DesignChoices(epsilon=1.0))
    assert kept.read_bytes() == own.read_bytes()                      # as it was: whole
    assert sorted(p.name for p in kept.parent.iterdir()) == sorted(["census-codebook.csv", "codebook.csv"])
