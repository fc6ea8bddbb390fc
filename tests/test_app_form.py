"""The app's design form is made from the release specification (pramkit.release.spec.ReleaseSpec): every setting
is a field with its label, its type's widget, its choices and its help, shown with the designs it applies to; a
value the library refuses is refused by the form with the same message; a new setting is a new field with no
code of the page."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

import pytest

pytest.importorskip("shiny")

from shiny import ui
from test_spec import RELEASE_CASES, release_bad, release_context, text

from pramkit.app import fields
from pramkit.app import ui as page
from pramkit.design.registry import FAMILIES
from pramkit.errors import PramkitError
from pramkit.release import spec as release_spec
from pramkit.release.spec import ReleaseSpec, methods_of
from pramkit.settings import Setting, setting, settings
from pramkit.validate import Choice, Number

FORM = {f.setting: f for f in fields.design_fields()}


def page_html() -> str:
    return html.unescape(str(ui.page_fluid(ui.navset_tab(page.design_tab()))))


def test_every_setting_is_a_field_or_set_elsewhere() -> None:
    """A setting without a field is the data step's (shared), set by the page's choice of a design, or
    declared without one; every other is a field of the page, under its own label."""
    preset = {name for _, flags in fields.methods().values() for name in flags}
    page = page_html()
    for s in settings(ReleaseSpec):
        if s.shared or s.name in preset or s.widget == "none":
            assert s.name not in FORM
            continue
        f = FORM[s.name]
        assert f.label == s.label and f'id="{f.id}"' in page and f">{s.label}<" in page, s.name


def test_the_newcomers_labels_are_the_fields_labels() -> None:
    """docs/app.md's first release names these fields; the page keeps their ids for the tests and scripts."""
    assert FORM["epsilon"].label.startswith("Record budget") and FORM["epsilon"].value == "3"
    assert FORM["strata"].label.startswith("Strata") and FORM["strata"].widget == "columns"
    assert [FORM[n].id for n in fields.FIELD_IDS] == list(fields.FIELD_IDS)
    assert FORM["household"].id == "design_household" and FORM["household"].widget == "column"


@pytest.mark.parametrize("name", [s.name for s in settings(ReleaseSpec) if s.name in FORM], ids=str)
def test_a_field_is_its_settings_type(name: str) -> None:
    s = next(t for t in settings(ReleaseSpec) if t.name == name)
    f = FORM[name]
    rules = [s.rule] if s.option is None else [FAMILIES[m].options[s.option] for m in methods_of(s)]
    choices = {v for r in rules if isinstance(r, Choice) for v in r.values}
    if s.switch:
        assert f.widget == "checkbox"
    elif choices and s.widget is None:
        assert f.widget == "select" and set(f.choices) - {""} == choices
        assert ("" in f.choices) == (s.default is None)   # left at its default when none is chosen
    if s.option is not None:  # shown with the page's designs of the families that take it
        assert f.methods and {fields.methods()[m][1]["method"] for m in f.methods} <= set(methods_of(s))


def test_a_field_hidden_for_the_design_chosen_is_not_read() -> None:
    assert fields.design_values({"k": "3", "keep": "0.8"}, "kanon") == {"k": 3}
    assert fields.design_values({"k": "3", "keep": "0.8"}, "rr") == {}
    assert fields.design_values({"distance_weights": "uniform"}, "dp") == {}
    assert fields.design_values({"distance_weights": "uniform"}, "dp-distance") == {"distance_weights": "uniform"}


def _page_method(s: Setting, context: dict[str, Any]) -> str:
    f = FORM[s.name]
    candidates = list(f.methods or fields.methods())
    if "recognition" in context:
        return "recognition"
    wanted = context.get("method", "dp")
    return next(m for m in candidates if fields.methods()[m][1]["method"] == wanted)


@pytest.mark.parametrize("s", [s for s in RELEASE_CASES if s.name in FORM and release_bad(s) is not None],
                         ids=lambda s: s.name)
def test_a_field_given_a_failing_value_is_refused_as_the_library_refuses_it(s: Setting) -> None:
    """The table of test_spec.py's failing values, typed in the form's fields."""
    bad, context = release_bad(s), release_context(s)
    with pytest.raises(PramkitError) as library:
        ReleaseSpec(**context, **{s.name: bad}).check()
    method = _page_method(s, context)
    texts = {k: text(v) for k, v in {**context, s.name: bad}.items() if k != "method"}
    with pytest.raises(PramkitError) as form:
        values = fields.design_values(texts, method)
        ReleaseSpec(**fields.methods()[method][1], **values).check()
    assert str(form.value) == str(library.value)


def test_a_new_setting_is_a_new_field_with_no_code_of_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """One more field of the specification: the page shows it, with its label and help, and reads it."""
    grown = dataclasses.make_dataclass(
        "ReleaseSpec", [("smoothing", "float | None", setting(None, float, Number(low=0), "a new setting's help",
                                                               label="Smoothing of the design", more=True)),
                        ("k_floor", "int | None", setting(None, int, None, "kanon: a new option", option="k"))],
        bases=(ReleaseSpec,), frozen=True)
    monkeypatch.setattr(release_spec, "ReleaseSpec", grown)
    page = page_html()
    assert 'id="design_smoothing"' in page and ">Smoothing of the design<" in page and "a new setting's help" in page
    assert 'id="design_k_floor"' in page and '["kanon"].indexOf(input.method) >= 0' in page
    assert fields.design_values({"smoothing": "0.5", "k_floor": "2"}, "kanon") == {"smoothing": 0.5, "k_floor": 2}
    assert fields.design_values({"k_floor": "2"}, "rr") == {}


def test_the_upload_offers_every_format_pramkit_reads() -> None:
    """The upload's list comes from the formats' table: SAS (.sas7bdat, .xpt) and .tsv, which a hand-kept list
    had left out, are offered, and every suffix offered is one that pramkit reads."""
    from pramkit.app.ui import DATA_FILES
    from pramkit.io import table_format

    assert {".sas7bdat", ".xpt", ".tsv", ".csv", ".parquet", ".dta", ".sav"} <= set(DATA_FILES)
    assert all(table_format(f"data{suffix}") for suffix in DATA_FILES)
