"""The design step's rules editor (the field Edit rules written here): its lines are a rules file, read by the
library's parser; a line that is not a rule gives a message naming the field, never a path; a failed write
leaves nothing half-written.  The browser test of the whole release is tests/test_app_newcomer_browser.py."""

from __future__ import annotations

import csv
import errno
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("shiny")

from pramkit.app import fields
from pramkit.errors import ParameterError, WriteError
from pramkit.structure import Rules

#: Lines written in the field -> what the message must say (each names the field and the line or rule).
BAD = [
    ("age,marital_status\n", "the field Edit rules written here has no rules"),
    ("age,age\n0-9,10-17\n", "the header of the field Edit rules written here must name distinct variables"),
    (",marital_status\n0-9,widowed\n", "the header of the field Edit rules written here must name distinct"),
    ("age,marital_status\n0-9,widowed,divorced\n", "line 2 of the field Edit rules written here has 3 fields"),
    ("age,marital_status\n0-9,widowed\n,\n", "rule 2 of the field Edit rules written here has no value"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_lines_that_are_not_rules_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ParameterError) as info:
        fields.rules(text, tmp_path / "written")
    shown = str(info.value)
    assert message in shown, shown
    assert str(tmp_path) not in shown and "rules.csv" not in shown, shown


def test_an_empty_field_is_no_rules(tmp_path: Path) -> None:
    assert fields.rules(" \n\t\n", tmp_path / "written") is None
    assert not (tmp_path / "written").exists()


def test_the_rules_file_is_the_officers_only(tmp_path: Path) -> None:
    path = fields.rules("age,marital_status\n0-9,widowed\n", tmp_path / "written")
    assert path is not None
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"


def test_a_failed_write_leaves_the_rules_written_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills as the new rules are written: an error in words, the earlier rules file whole, no temporary."""
    import pramkit.atomic

    before = "age,marital_status\n0-9,widowed\n"
    path = fields.rules(before, tmp_path / "written")
    assert path is not None

    def full(_: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pramkit.atomic, "_fsync", full)
    with pytest.raises(WriteError, match="No space left on device"):
        fields.rules("age,marital_status\n0-9,divorced\n", tmp_path / "written")
    assert path.read_text() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["rules.csv"]


_NAMES = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8).filter(str.strip)
_VALUES = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="|"), max_size=8)


@st.composite
def _rules(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    header = draw(st.lists(_NAMES.map(str.strip), min_size=1, max_size=3, unique=True))
    rows = draw(st.lists(st.lists(_VALUES, min_size=len(header), max_size=len(header))
                         .filter(lambda r: any(v.strip() for v in r)), min_size=1, max_size=4))
    return header, rows


@settings(max_examples=60, deadline=None)
@given(_rules())
def test_rules_written_as_csv_are_the_rules(tmp_path_factory: pytest.TempPathFactory,
                                            drawn: tuple[list[str], list[list[str]]]) -> None:
    """Rows written by Python's csv module (commas, quotes, accents and spaces in the categories) and typed in
    the field are the rules of those rows, as the library takes them from mappings."""
    header, rows = drawn
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([header, *rows])
    path = fields.rules(text.getvalue(), tmp_path_factory.mktemp("written"))
    assert path is not None
    from pramkit.structure import read_rules

    assert read_rules(path).rules == Rules.of([dict(zip(header, r)) for r in rows]).rules
