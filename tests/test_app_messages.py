"""Every message the app can show is in the page's words: it names a field or the officer's file, never a flag
of the command line nor a path of the app's work folder.  Each bad input goes through the function the page
uses (the field parsers of pramkit.app.fields, the workbench's steps, then outcome_message and the workbench's
in_page_words, as Step.fail does); the app's own message texts are crawled in its source too."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("shiny")

from pramkit.app import fields  # noqa: E402
from pramkit.app.server import outcome_message  # noqa: E402
from pramkit.errors import PramkitError  # noqa: E402
from pramkit.kernel.rng import SecretKey  # noqa: E402
from pramkit.release.choices import DesignChoices  # noqa: E402
from pramkit.workbench import Workbench  # noqa: E402

APP = Path(__file__).resolve().parents[1] / "src" / "pramkit" / "app"
FLAG = re.compile(r"(?<![\w-])--[a-z]")


@pytest.fixture
def setting(tmp_path: Path) -> dict[str, Any]:
    """The app's folders: its work root (session folder, uploads) and the officer's data folder."""
    root, data, outside = tmp_path / "pramkit-app-x", tmp_path / "data", tmp_path / "outside"
    for folder in (root, data, outside):
        folder.mkdir()
    (data / "survey.csv").write_text("region,sex\n" + "north,f\nsouth,m\n" * 300)
    (data / "latin.csv").write_bytes("région,sexe\n".encode() + "Île,f\nNord,m\n".encode("latin-1") * 300)
    (data / "ragged.csv").write_text("region,sex\nnorth,f\nsouth,m,9\n")
    (data / "rules.csv").write_text("region,sex\nwest,f\n")
    (data / "notakey.txt").write_text("region,sex\nnorth,f\n")
    (data / "other.json").write_text(json.dumps({"format": "pramkit-manifest", "variables": []}))
    (data / "session.json").write_text("[1, 2]")
    (outside / "survey.csv").write_text("region\nnorth\n")
    session = root / "session-abc"
    uploads = session / "uploads"
    uploads.mkdir(parents=True)
    return {"root": root, "data": data, "outside": outside, "session": session, "uploads": uploads,
            "wb": Workbench(session / "work", data_dirs=[data])}


def _upload(s: dict[str, Any], name: str) -> Path:
    """A file as the page receives an upload: moved into the session's uploads folder under its name."""
    sent = s["uploads"] / "0.dat"
    sent.write_bytes((s["data"] / name).read_bytes())
    return fields.upload({"name": name, "size": sent.stat().st_size, "datapath": str(sent)}, s["uploads"] / "x")


def _opened(s: dict[str, Any], name: str = "survey.csv") -> Workbench:
    s["wb"].open_file(_upload(s, name), label=name, upload=True)
    return s["wb"]


#: Bad input -> the call the page makes with it.  Each must raise a PramkitError.
BAD: dict[str, Callable[[dict[str, Any]], Any]] = {
    "text in the budget": lambda s: fields.budget("three"),
    "a negative budget": lambda s: fields.budget("-1"),
    "a sampling fraction above 1": lambda s: fields.fraction("5"),
    "rows not whole": lambda s: fields.row_count("12.5"),
    "an option without a value": lambda s: fields.options("beta"),
    "a recoding line written wrong": lambda s: fields.recoding("age 80+"),
    "a recoding threshold not a number": lambda s: fields.recoding("age > old -> 80+"),
    "an empty upload": lambda s: fields.upload({"name": "e.csv", "size": 0, "datapath": "x"}, s["uploads"]),
    "too few census rows": lambda s: s["wb"].open_census(rows=10),
    "a file absent": lambda s: s["wb"].open_file("absent.csv"),
    "a file outside the data folders": lambda s: s["wb"].open_file(s["outside"] / "survey.csv"),
    "a Latin-1 upload read as UTF-8": lambda s: _opened(s, "latin.csv"),
    "a ragged upload": lambda s: _opened(s, "ragged.csv"),
    "a separator that is not one": lambda s: s["wb"].open_file("survey.csv", sep="ab"),
    "an encoding that does not exist": lambda s: s["wb"].open_file("survey.csv", encoding="klingon"),
    "risk without a file": lambda s: s["wb"].risk(["region"], sampling_fraction=0.1),
    "risk on an unknown key": lambda s: _opened(s).risk(["age"], sampling_fraction=0.1),
    "risk with two fractions": lambda s: _opened(s).risk(["region"], sampling_fraction=0.1, weights="sex"),
    "a negative budget in the design": lambda s: _opened(s).design(["region"], DesignChoices(epsilon=-1.0)),
    "an unknown variable": lambda s: _opened(s).design(["age"], DesignChoices(epsilon=1.0)),
    "rules naming an unknown category": lambda s: _opened(s).design(
        ["region"], DesignChoices(epsilon=1.0, split="joint", forbid=_upload(s, "rules.csv"))),
    "rules written with too many fields": lambda s: fields.rules("region,sex\nwest,f,9\n", s["uploads"] / "w"),
    "rules written naming an unknown category": lambda s: _opened(s).design(
        ["region"], DesignChoices(epsilon=1.0, forbid=fields.rules("region\nwest\n", s["uploads"] / "w"))),
    "a stratum perturbed": lambda s: _opened(s).design(["region"], DesignChoices(epsilon=1.0, strata="region")),
    "a kept code not a category": lambda s: _opened(s).design(["region"], DesignChoices(epsilon=1.0,
                                                                                        keep_codes="region=x")),
    "a split for another method": lambda s: _opened(s).design(["region"], DesignChoices(method="rr", epsilon=1.0,
                                                                                       split="joint")),
    "the keep method with a budget": lambda s: _opened(s).design(["region"], DesignChoices(method="keep",
                                                                                          epsilon=1.0)),
    "a household variable without its id": lambda s: _opened(s).design(
        ["region"], DesignChoices(epsilon=1.0, household_vars="region")),
    "a manifest that is not one": lambda s: _opened(s).use_manifest(_upload(s, "other.json")),
    "apply before the design": lambda s: _opened(s).apply(SecretKey.generate()),
    "export before apply": lambda s: _opened(s).export(s["root"] / "out"),
    "a recoding of an unknown column": lambda s: _opened(s).recoding({"age": {"merge": {"1": "2"}}}),
    "a session file that is not one": lambda s: s["wb"].restore_session(_upload(s, "session.json")),
    "a session saved without a file": lambda s: s["wb"].save_session(s["data"] / "s.json"),
    "undo with nothing to undo": lambda s: _opened(s).undo(),
    "a key file that is not a key": lambda s: SecretKey.from_file(_upload(s, "notakey.txt"),
                                                                  name="the uploaded key file 'notakey.txt'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_message_is_in_the_pages_words(setting: dict[str, Any], case: str) -> None:
    with pytest.raises(PramkitError) as info:
        BAD[case](setting)
    shown = setting["wb"].in_page_words(outcome_message(info.value), hidden=[setting["root"]])
    assert not FLAG.search(shown), (case, shown)
    assert str(setting["root"]) not in shown and "session-abc" not in shown, (case, shown)
    assert "Traceback" not in shown and "internal error" not in shown and "\n" not in shown, (case, shown)


def _literals(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_the_apps_own_messages_name_no_flag() -> None:
    """Every text the app's code passes to an error, a step's failure, a notification or its status line."""
    shown = []
    for path in sorted(APP.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in ("ParameterError", "fail", "say", "notification_show", "error_box"):
                    shown += [(path.name, text) for arg in node.args for text in _literals(arg)]
    assert len(shown) > 15
    assert [(f, t) for f, t in shown if FLAG.search(t)] == []
