"""The risk, suppression and design steps' fields a tab keeps for a reload (pramkit.app.fields.form_widgets) and how they are
filled back (pramkit.app.server.fill_fields, the path of a restored session and an undo).

The oracles: the page's own HTML (every field of the two steps is kept, no upload), and the form's own reader
(server._choices, the code the Design button runs): the fields filled from a design read back as its choices.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("shiny")

from shiny import ui

from pramkit.app import fields, server
from pramkit.app import ui as page
from pramkit.release.choices import DesignChoices
from pramkit.workbench import Workbench


def _ids(tag: Any) -> dict[str, str]:
    """The page's inputs by id, with their HTML element and type."""
    text = html.unescape(str(ui.page_fluid(ui.navset_tab(tag))))
    found = {}
    for element, attributes in re.findall(r"<(input|select|textarea)\b([^>]*)>", text):
        ident = re.search(r'\bid="([^"]+)"', attributes)
        kind = re.search(r'\btype="([^"]+)"', attributes)
        if ident:
            found[ident.group(1)] = kind.group(1) if kind else element
    return found


def test_every_field_of_the_two_steps_is_kept_and_no_upload() -> None:
    shown = {**_ids(page.risk_tab()), **_ids(page.suppress_tab()), **_ids(page.design_tab())}
    uploads = {i for i, kind in shown.items() if kind == "file"}
    assert uploads >= {"forbid", "manifest_upload"}
    assert set(fields.form_widgets()) == set(shown) - uploads
    for ident, widget in fields.form_widgets().items():
        assert {"columns": "select", "column": "select", "select": "select", "checkbox": "checkbox",
                "text": "text", "text_area": "textarea"}[widget] == shown[ident], ident


class _Fields:
    """The page's inputs as the server reads them: ``input.name()`` and ``input[name]()``."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def __getitem__(self, name: str) -> Any:
        return lambda: self.values[name]

    def __getattr__(self, name: str) -> Any:
        return self[name]

    def __contains__(self, name: str) -> bool:
        return name in self.values


@pytest.mark.parametrize("choices", [DesignChoices(method="kanon", k=4, strata="urbrur"),
                                     DesignChoices(method="rr", epsilon=2.5),
                                     DesignChoices(method="dp", epsilon=2.5, split="optimal"),
                                     DesignChoices(method="dp", objective="variance", epsilon=1.5)],
                         ids=["kanon", "rr", "dp-optimal-split", "dp-variance"])
def test_the_fields_filled_from_a_design_read_back_as_its_choices(sdc_data: Path, tmp_path: Path,
                                                                  choices: DesignChoices) -> None:
    wb = Workbench(tmp_path / "work")
    wb.open_file(sdc_data / "testdata.csv", na_values=("NA", "9"))
    wb.risk(["urbrur", "roof", "sex"], sampling_fraction=0.1)
    wb.design(["water", "roof"], choices)
    form = server.settings_form(wb)
    page_fields = {f.id: f.value if f.widget != "columns" else [] for f in fields.design_fields()
                   if f.widget != "file"}                            # the page's first values, then the form's
    read = {**page_fields, "options": "", "edit_rules": "", **form}
    variables, again = server._choices(_Fields(read), dict.fromkeys(("forbid", "prior", "categories")))
    assert variables == ("water", "roof")
    for name in ("method", "objective", "epsilon", "k", "strata", "split"):
        assert getattr(again, name) == getattr(choices, name), name
    assert form["risk_keys"] == ["urbrur", "roof", "sex"] and form["sampling_fraction"] == "0.1"


def test_the_fields_are_filled_by_their_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for name in ("update_selectize", "update_select", "update_checkbox", "update_text_area", "update_text"):
        monkeypatch.setattr(server.ui, name, lambda field, _n=name, **kw: calls.append((_n, field, kw)))
    server.fill_fields({"risk_keys": ("age",), "risk_weights": None, "method": "kanon", "risk_contributions": True,
                        "edit_rules": "age,sex\n0-9,male", "epsilon": "2.5", "not_a_field": "x"}, ["age", "sex"])
    assert calls == [
        ("update_selectize", "risk_keys", {"selected": ["age"], "choices": ["age", "sex"]}),
        ("update_select", "risk_weights", {"selected": "", "choices": {"": "none", "age": "age", "sex": "sex"}}),
        ("update_select", "method", {"selected": "kanon"}),
        ("update_checkbox", "risk_contributions", {"value": True}),
        ("update_text_area", "edit_rules", {"value": "age,sex\n0-9,male"}),
        ("update_text", "epsilon", {"value": "2.5"}),
    ]
