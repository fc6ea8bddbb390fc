"""A newcomer's first release, done in Chromium exactly as docs/app.md ("Your first release") writes it:
the census, a rule and a stratum, from the start of the app to the files to publish, in the page alone.

The steps are read from the documentation (tests/_newcomer.py), so the two cannot drift: a step naming a
label the page does not have fails with the step and the labels of the tab.  Skipped when Playwright or
Chromium is absent, unless PRAMKIT_REQUIRE_BROWSER=1 (CI).  No timings here: benchmarks/bench_newcomer.py
times the same steps.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import _app_support
import pytest
from _browser import (  # skips this module without Playwright or Chromium
    CONTEXT,
    SHOTS,
    Browser,
    choose,
    expect,
    no_trace,
    open_app,
    tab,
    upload,
)
from _newcomer import DOC, Newcomer, steps

from pramkit.structure import Rules, read_rules

#: One app and one Chromium serve this module's tests (its fixtures): starting them is a good part of the
#: tests' time, paid once in one test process rather than in each that runs some of them.
pytestmark = pytest.mark.xdist_group("test_app_newcomer_browser")
TOKEN = "newcomer-test-token"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _app_support.running_app(tmp_path_factory.mktemp("work"), TOKEN) as url:
        yield url


def test_the_documented_first_release(chromium: Browser, base: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step of the documentation done in the page; the release lands where the steps say, with the
    rule and the stratum the steps wrote in its manifest."""
    monkeypatch.setenv("HOME", str(tmp_path))  # the documented paths (~/keys, ~/census-release) land here
    newcomer = Newcomer(chromium, lambda: f"{base}/?token={TOKEN}", SHOTS, context=CONTEXT)
    try:
        done = [t.step.number for t in newcomer.run()]
    finally:
        newcomer.close()
    assert done == [s.number for s in steps()]

    out = tmp_path / "census-release"
    public = sorted(p.name for p in (out / "public").iterdir())
    assert {"released.csv", "manifest.json", "report.html"} <= set(public), public
    assert (out / "private" / "reproduce.sh").is_file()
    key = tmp_path / "keys" / "census.key"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert key.read_text().strip() not in (out / "public" / "manifest.json").read_text()

    manifest = json.loads((out / "public" / "manifest.json").read_text())
    structure = manifest["input"]["structure"]
    written = _rules_of_the_doc(tmp_path / "rules-of-the-doc.csv")
    assert structure["strata"] == ["age"]
    assert structure["forbid"]["forbidden"] == [r.to_dict() for r in written.rules]
    assert [v["name"] for v in manifest["variables"]] == ["marital_status"]

    with (out / "public" / "released.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 20_000
    children = [r for r in rows if r["age"] == "0-9"]
    assert children and all(r["marital_status"] in ("never married", "") for r in children)  # the rule holds


def _rules_of_the_doc(path: Path) -> Rules:
    """The rules the documentation's step writes, read by the library's parser (not by the app)."""
    [rules] = [a.value for s in steps(DOC) for a in s.actions if a.kind == "write"]
    path.write_text(rules + "\n", encoding="utf-8")
    return read_rules(path)


def test_the_rules_written_come_back_with_the_design(chromium: Browser, base: str) -> None:
    """A reload of the tab shows the design again and its rules in the editor as written there; an undo, the earlier
    design's rules (its rules file's text)."""
    page = open_app(chromium, base, TOKEN)
    try:
        page.fill("#census_rows", "2000")
        page.click("#open_census")
        expect(page.locator("#data_summary")).to_contain_text("2,000 rows", timeout=30_000)
        tab(page, "3 Design")
        choose(page, "design_vars", ["marital_status"])
        choose(page, "strata", ["age"])
        first, second = "age,marital_status\n0-9,widowed", "age,marital_status\n0-9,divorced|widowed"
        for rules, budget in ((first, "3"), (second, "2")):  # the budget tells the two guarantees apart
            page.fill("#edit_rules", rules)
            page.fill("#epsilon", budget)
            page.click("#run_design")
            expect(page.locator("#guarantee")).to_contain_text(f"e^{budget} =", timeout=30_000)
        page.reload()
        tab(page, "3 Design")
        expect(page.locator("#guarantee")).to_contain_text("e^2 =", timeout=30_000)
        expect(page.locator("#edit_rules")).to_have_value(second, timeout=30_000)  # as written in the field
        page.click("#undo")
        expect(page.locator("#edit_rules")).to_have_value(first + "\n", timeout=30_000)
        no_trace(page)
    finally:
        page.context.close()


def test_a_label_the_page_does_not_have_fails_clearly(chromium: Browser, base: str, tmp_path: Path) -> None:
    """A documentation naming a field the page lacks stops at that step, saying so and listing the tab's fields."""
    doc = tmp_path / "app.md"
    doc.write_text("## Your first release\n\n1. Start the app: type `pramkit app` in a terminal.\n\n"
                   "2. Type `0.05` in **Sampling fraktion**.\n", encoding="utf-8")
    # The first tab's fields are drawn with the page: a second is long enough to know the field is not there.
    newcomer = Newcomer(chromium, lambda: f"{base}/?token={TOKEN}", [tmp_path / "shots"], find=1_000,
                        context=CONTEXT)
    try:
        with pytest.raises(AssertionError, match=r"step 2 names the field \*\*Sampling fraktion\*\*, which the tab "
                                                 r"does not have \(its fields: 'Rows of the census-like data'"):
            list(newcomer.run(doc))
    finally:
        newcomer.close()


def test_a_result_the_page_shows_before_the_click_is_an_error_of_the_doc(chromium: Browser, base: str,
                                                                       tmp_path: Path) -> None:
    """Waiting for a text the tab already shows would prove nothing: the step must name what its result brings."""
    doc = tmp_path / "app.md"
    doc.write_text("## Your first release\n\n1. Start the app: type `pramkit app` in a terminal.\n\n"
                   "2. Click **Open the census**. The page shows “census-like data”.\n", encoding="utf-8")
    newcomer = Newcomer(chromium, lambda: f"{base}/?token={TOKEN}", [tmp_path / "shots"], context=CONTEXT)
    try:
        with pytest.raises(AssertionError, match=r"step 2: the page shows “census-like data” before \*\*Open the "
                                                 r"census\*\* is clicked"):
            list(newcomer.run(doc))
    finally:
        newcomer.close()


def test_a_bold_label_without_an_action_is_an_error_of_the_doc(tmp_path: Path) -> None:
    doc = tmp_path / "app.md"
    doc.write_text("## Your first release\n\n1. Start the app: type `pramkit app`. Look at **Weights**.\n")
    with pytest.raises(AssertionError, match=r"step 1 names \*\*Weights\*\* but says nothing to do with it"):
        steps(doc)


def test_rules_written_in_the_page_that_are_not_a_rules_file(chromium: Browser, base: str, tmp_path: Path) -> None:
    """The rules editor's lines are read by the library's parser; its messages name the field, never a file; rules
    uploaded and written both are refused."""
    page = open_app(chromium, base, TOKEN)
    try:
        page.fill("#census_rows", "2000")
        page.click("#open_census")
        expect(page.locator("#data_summary")).to_contain_text("2,000 rows", timeout=30_000)
        tab(page, "3 Design")
        page.fill("#edit_rules", "age,marital_status\n0-9,never married,widowed\n")
        page.click("#run_design")
        box = page.locator("#design_error .step-error")
        expect(box).to_contain_text("line 2 of the field Edit rules written here has 3 fields; the header has 2",
                                    timeout=30_000)
        assert "/" not in box.inner_text()  # no path of the app's folders
        choose(page, "design_vars", ["marital_status"])
        choose(page, "strata", ["age"])
        page.fill("#edit_rules", "age,marital_status\n0-9,engaged\n")
        page.click("#run_design")
        expect(box).to_contain_text("rule 1 of the field Edit rules written here: 'engaged' is not a category of "
                                    "'marital_status'", timeout=30_000)
        rules = tmp_path / "rules.csv"
        rules.write_text("age,marital_status\n0-9,widowed\n")
        upload(page, "forbid", rules)
        page.click("#run_design")
        expect(box).to_contain_text("the edit rules are given twice", timeout=30_000)
        expect(page.locator("#ledger table")).to_have_count(0)
        no_trace(page)
    finally:
        page.context.close()
