"""Undo and session files of the workbench: a session holds the officer's choices, never a key nor the original
data; restoring opens the file again, checks its digest and makes the same design; undo takes a change back,
input files included."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pramkit.errors import OutputExistsError, ParameterError
from pramkit.kernel.rng import SecretKey, write_key_file
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench

RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'


@pytest.fixture
def survey(tmp_path: Path, sdc_data: Path) -> Path:
    """The first 2,000 persons of sdcMicro's testdata, with its missing values, in a data folder."""
    folder = tmp_path / "data"
    folder.mkdir()
    frame = pd.read_csv(sdc_data / "testdata.csv").head(2_000)
    path = folder / "testdata.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_session_file_restores_the_design_on_the_same_file(tmp_path: Path, survey: Path) -> None:
    key = SecretKey.from_file(write_key_file(tmp_path / "k.key"))
    wb = Workbench(tmp_path / "a", data_dirs=[survey.parent])
    wb.open_file(survey)
    wb.risk(["urbrur", "roof", "sex"], sampling_fraction=0.1)
    wb.design(["roof", "sex"], DesignChoices(method="rr", epsilon=2.0, strata="urbrur"), key=key)
    saved = wb.save_session(tmp_path / "session.json")
    text = saved.read_text()
    assert key.material.hex() not in text and key.fingerprint not in text         # no key
    original = survey.read_text().splitlines()
    assert not any(line in text for line in original[1:50])                       # no record of the data
    with pytest.raises(OutputExistsError):
        wb.save_session(saved)                                                    # never overwritten
    again = Workbench(tmp_path / "b", data_dirs=[survey.parent])
    again.restore_session(saved)
    assert again.source.path == survey.resolve() and again.risk_keys == ("urbrur", "roof", "sex")
    assert again.designed.variables == ("roof", "sex") and again.designed.choices.strata == "urbrur"
    assert again.assessed.table.equals(wb.assessed.table)
    first, second = wb.apply(key), again.apply(key)                               # the same key: the same release
    released = [(w.work / "release" / "released.csv").read_bytes() for w in (wb, again)]
    assert released[0] == released[1] and first.key_fingerprint == second.key_fingerprint
    assert not again.can_undo                                                     # a restored session starts here


def test_a_changed_file_or_a_missing_upload_is_refused_in_words(tmp_path: Path, survey: Path) -> None:
    wb = Workbench(tmp_path / "a", data_dirs=[survey.parent])
    wb.open_file(survey)
    wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0))
    saved = wb.save_session(tmp_path / "session.json")
    survey.write_text(survey.read_text().replace("\n1,", "\n2,", 1))
    with pytest.raises(ParameterError, match="testdata.csv has changed since the session was saved"):
        Workbench(tmp_path / "b", data_dirs=[survey.parent]).restore_session(saved)
    up = Workbench(tmp_path / "c")
    up.open_file(survey, label="my survey.csv", upload=True)
    up.design(["sex"], DesignChoices(method="rr", epsilon=1.0))
    uploaded = up.save_session(tmp_path / "uploaded.json")
    assert json.loads(uploaded.read_text())["data"] == {**json.loads(uploaded.read_text())["data"], "kind": "upload"}
    with pytest.raises(ParameterError, match="uploaded file my survey.csv: upload it again first"):
        Workbench(tmp_path / "d").restore_session(uploaded)
    fresh = Workbench(tmp_path / "e")
    fresh.open_file(survey, label="my survey.csv", upload=True)                  # uploaded again: restored
    fresh.restore_session(uploaded)
    assert fresh.designed.variables == ("sex",)


@pytest.mark.parametrize("content", ["", "[1, 2]", '{"format": "pramkit-manifest"}', "not json"])
def test_a_file_that_is_not_a_session(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(ParameterError, match=r"^x.json is not a session file of the workbench"):
        Workbench(tmp_path / "w").restore_session(path)


def test_undo_takes_back_a_design_with_its_rules_file(tmp_path: Path) -> None:
    """The second design overwrites the work folder's rules file; undo puts the first one back, so the
    export and the script hold the rules of the design shown."""
    rules, other = tmp_path / "rules.csv", tmp_path / "other.csv"
    rules.write_text(RULES)
    other.write_text("age,marital_status\n0-9,widowed\n")
    wb = Workbench(tmp_path / "w")
    wb.open_census(rows=5_000)
    with pytest.raises(ParameterError, match="nothing to undo"):
        wb.undo()
    key = SecretKey(bytes(range(32)), "a test key")  # the designs' noise drawn from the key applied with
    wb.design(["marital_status"], DesignChoices(epsilon=3.0, strata="age", forbid=rules), key=key)
    first = wb.designed
    wb.design(["marital_status"], DesignChoices(epsilon=1.0, strata="age", forbid=other), key=key)
    assert (wb.work / "inputs" / "rules.csv").read_text() == other.read_text()
    with pytest.raises(ParameterError):
        wb.design(["marital_status"], DesignChoices(epsilon=-1.0, forbid=rules))  # a failed change: not undoable
    assert (wb.work / "inputs" / "rules.csv").read_text() == other.read_text()
    wb.apply(SecretKey(bytes(range(32)), "a test key"))
    wb.undo()
    assert wb.designed.view is first.view and wb.designed.key is None and wb.applied is None
    assert (wb.work / "inputs" / "rules.csv").read_text() == RULES
    wb.apply(SecretKey(bytes(range(32)), "a test key"))
    exported = wb.export(tmp_path / "out")
    assert (tmp_path / "out" / "private" / "inputs" / "rules.csv").read_text() == RULES
    assert "--epsilon 3" in exported.script


MERGED = {"married, spouse present": "married", "married, spouse absent": "married"}


def test_a_recoding_before_pram_is_exported_and_the_script_repeats_it(tmp_path: Path) -> None:
    """Categories merged before the design: the release holds the merged categories, the map is in
    private/inputs/, and reproduce.sh recodes, designs and applies again to the same bytes."""
    import os
    import subprocess
    import sys

    from _manifests import comparable

    key_file = write_key_file(tmp_path / "k.key")
    wb = Workbench(tmp_path / "w")
    wb.open_census(rows=5_000)
    recoded = wb.recoding({"marital_status": {"merge": MERGED}})
    merged = pd.read_csv(wb.base.path)["marital_status"].replace(MERGED)
    assert {v.name: v.distinct for v in recoded.variables}["marital_status"] == merged.nunique()
    wb.design(["marital_status"], DesignChoices(method="rr", epsilon=2.0))
    wb.apply(SecretKey.from_file(key_file))
    view = wb.export(tmp_path / "out")
    out = tmp_path / "out"
    manifest = json.loads((out / "public" / "manifest.json").read_text())
    categories = manifest["variables"][0]["categories"]
    assert "married" in categories and not set(MERGED) & set(categories)
    assert json.loads((out / "private" / "inputs" / "recode.json").read_text()) == {"marital_status":
                                                                                    {"merge": MERGED}}
    assert (out / "private" / "census.csv").is_file() and (out / "private" / "recoded.csv").is_file()
    assert manifest["input"]["recode"] == {"marital_status": {"merge": MERGED}}      # public: declared, not read
    assert "pramkit recode" in view.script and "--recoded-by" in view.script and str(wb.work) not in view.script
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["sh", str(out / "private" / "reproduce.sh"), str(key_file), str(tmp_path / "again")],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    again = tmp_path / "again"
    assert (again / "public" / "released.csv").read_bytes() == (out / "public" / "released.csv").read_bytes()
    assert comparable(again / "public" / "manifest.json") == comparable(out / "public" / "manifest.json")
    original = pd.read_csv(out / "private" / "census.csv")                 # checked against pandas, by hand
    assert (pd.read_csv(out / "private" / "recoded.csv")["marital_status"]
            == original["marital_status"].replace(MERGED)).all()


def test_top_and_bottom_coding_on_real_data_undo_and_a_session(tmp_path: Path, survey: Path) -> None:
    wb = Workbench(tmp_path / "w", data_dirs=[survey.parent])
    wb.open_file(survey)
    spec = {"age": {"top": {"above": 80, "value": "80+"}, "bottom": {"below": 15, "value": "under 15"}}}
    recoded = wb.recoding(spec)
    ages = pd.read_csv(survey)["age"]
    expected = ages.map(lambda a: "80+" if a > 80 else "under 15" if a < 15 else str(int(a)))
    got = pd.read_csv(recoded.path, dtype=str, keep_default_na=False)["age"]
    assert (got == expected).all()
    wb.design(["age"], DesignChoices(method="rr", epsilon=4.0))
    saved = wb.save_session(tmp_path / "s.json")
    assert json.loads(saved.read_text())["recode"] == {"age": {"top": {"above": 80.0, "value": "80+"},
                                                               "bottom": {"below": 15.0, "value": "under 15"}}}
    again = Workbench(tmp_path / "again", data_dirs=[survey.parent])
    again.restore_session(saved)
    assert again.is_recoded and again.designed.view.manifest.to_dict()["variables"] == \
        wb.designed.view.manifest.to_dict()["variables"]
    wb.undo()                                                                 # the design
    wb.undo()                                                                 # the recoding
    assert not wb.is_recoded and wb.source is wb.base and wb.designed is None


@pytest.mark.parametrize("spec, message", [
    ({"nope": {"merge": {"a": "b"}}}, "'nope', not a column of"),
    ({"age": {}}, "give merge, top or bottom"),
    ({"age": {"top": {"above": "old", "value": "80+"}}}, "threshold must be a number"),
    ({"age": {"top": {"above": 80}}}, "needs 'above'"),
    ({"age": {"top": {"above": 10, "value": "a"}, "bottom": {"below": 20, "value": "b"}}}, "is above the top code"),
    ({"age": {"merge": {"1": ""}}}, "not empty"),
    ([1, 2], "a map of columns"),
])
def test_a_recoding_written_wrong_is_one_line_naming_the_column(tmp_path: Path, survey: Path, spec: object,
                                                                message: str) -> None:
    wb = Workbench(tmp_path / "w", data_dirs=[survey.parent])
    wb.open_file(survey)
    with pytest.raises(ParameterError, match=message) as info:
        wb.recoding(spec)
    assert "\n" not in str(info.value) and not wb.is_recoded and not wb.can_undo


def test_weights_say_that_the_sampling_fraction_is_not_used(tmp_path: Path, survey: Path) -> None:
    wb = Workbench(tmp_path / "w", data_dirs=[survey.parent])
    wb.open_file(survey)
    view = wb.risk(["urbrur", "roof", "sex"], weights="sampling_weight")
    assert "column sampling_weight" in view.note and "not used with weights" in view.note
    assert not wb.risk(["urbrur", "roof", "sex"], sampling_fraction=0.1).note


@pytest.mark.parametrize("step", ["reading", "writing the census"])
def test_a_new_file_cancelled_halfway_leaves_the_release_as_it_was(tmp_path: Path, monkeypatch, step: str) -> None:
    """Opening a larger census, stopped while it is written (after two of its five blocks) or read: the file
    the steps read is still the one shown."""
    from pramkit.errors import Cancelled
    from pramkit.progress import watching
    from pramkit.workbench import session

    monkeypatch.setattr(session, "CENSUS_BLOCK", 1_000)
    wb = Workbench(tmp_path / "w")
    wb.open_census(rows=2_000)
    wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0))

    def stop(desc: str, done: float, total: float | None) -> None:
        if desc == step and done >= 2_000:
            raise Cancelled(f"{step} cancelled")

    with watching(stop), pytest.raises(Cancelled):
        wb.open_census(rows=5_000)
    assert wb.source.rows == 2_000 and len(pd.read_csv(wb.source.path)) == 2_000
    assert wb.designed is not None and sorted(p.name for p in (wb.work / "original").iterdir()) == ["census.csv"]
    wb.open_census(rows=3_000)                                                  # and the next one works
    assert len(pd.read_csv(wb.source.path)) == 3_000 and wb.source.path.name == "census.csv"
