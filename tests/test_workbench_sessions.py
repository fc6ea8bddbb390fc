"""Undo and session files of the workbench: a session holds the officer's choices, never a key nor the original
data; restoring opens the file again, checks its digest and makes the same design; undo takes a change back,
input files included."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pramkit.engine.rng import SecretKey, write_key_file
from pramkit.errors import OutputExistsError, ParameterError
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
    wb.design(["marital_status"], DesignChoices(epsilon=3.0, strata="age", forbid=rules))
    first = wb.designed
    wb.design(["marital_status"], DesignChoices(epsilon=1.0, strata="age", forbid=other))
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
