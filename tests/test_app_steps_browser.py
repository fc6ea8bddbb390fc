"""The officer's steps in a real browser (headless Chromium): undo, a session saved to a file and restored in
another tab, and a Stata/SPSS file's value labels and missing codes in the preview and the estimates.

Skipped as tests/test_app_browser.py is (Playwright and Chromium absent, unless PRAMKIT_REQUIRE_BROWSER=1);
screenshots go to tests/artifacts/app/.
"""

from __future__ import annotations

import json
import re
import select
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import _app_support
import pandas as pd
import pytest
from _browser import (  # skips this module when Playwright or Chromium is absent (unless required)
    WAIT,
    Browser,
    Page,
    choose,
    expect,
    no_trace,
    open_app,
    open_census,
    shot,
    step_error,
    tab,
    upload,
)

#: One app and one Chromium serve this module's tests (its fixtures): starting them is a good part of the
#: tests' time, paid once in one test process rather than in each that runs some of them.
pytestmark = pytest.mark.xdist_group("test_app_steps_browser")
TOKEN = "steps-test-token"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _app_support.running_app(tmp_path_factory.mktemp("work"), TOKEN) as url:
        yield url


@pytest.fixture
def page(chromium: Browser, app: str) -> Iterator[Page]:
    pg = open_app(chromium, app, TOKEN)
    yield pg
    pg.context.close()


def _design(page: Page, epsilon: str) -> None:
    page.fill("#epsilon", epsilon)
    page.click("#run_design")
    expect(page.locator("#guarantee")).to_contain_text(f"e^{epsilon}", timeout=WAIT)


def test_undo_and_a_session_saved_then_restored_in_another_tab(page: Page, chromium: Browser, app: str,
                                                               tmp_path: Path) -> None:
    open_census(page, 5_000)
    expect(page.locator("#undo")).to_be_disabled()
    tab(page, "2 Risk")
    choose(page, "risk_keys", ["age", "sex"])
    page.fill("#sampling_fraction", "0.05")
    page.click("#run_risk")
    expect(page.locator("#risk_table table")).to_be_visible(timeout=WAIT)
    page.select_option("#risk_weights", "age")                     # weights: the fraction field is not read
    page.fill("#sampling_fraction", "many")
    page.click("#run_risk")
    assert "weights must be" in step_error(page, "risk")             # age bands are no weights: said in words
    page.select_option("#risk_weights", "")
    page.fill("#sampling_fraction", "0.05")
    page.click("#run_risk")
    expect(page.locator("#risk_table table")).to_be_visible(timeout=WAIT)
    tab(page, "3 Design")
    choose(page, "design_vars", ["sex", "race"])
    page.select_option("#method", "rr")
    _design(page, "1")
    _design(page, "2")
    page.click("#undo")                                            # back to the design at budget 1, fields too
    expect(page.locator("#guarantee")).to_contain_text("e^1", timeout=WAIT)
    expect(page.locator("#epsilon")).to_have_value("1.0")
    expect(page.locator("#session_status")).to_contain_text("undone")
    shot(page, "steps-undo")
    session = tmp_path / "session.json"
    page.fill("#session_path", str(session))
    page.click("#save_session")
    expect(page.locator("#session_status")).to_contain_text("Session saved", timeout=WAIT)
    saved = json.loads(session.read_text())
    assert saved["design"]["choices"] == {"method": "rr", "epsilon": 1.0} and saved["data"]["kind"] == "census"
    assert stat.S_IMODE(session.stat().st_mode) == 0o600              # private: it holds the designs tried
    no_trace(page)

    master = socket.create_server(("127.0.0.1", 0))                  # a Spark master the session file names
    spark = f"spark://127.0.0.1:{master.getsockname()[1]}"
    saved["design"]["choices"].update(engine="spark", spark_master=spark)
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(saved))
    other = open_app(chromium, app, TOKEN)                           # another tab: a release of its own
    try:
        upload(other, "session_upload", crafted)
        expect(other.locator("#data_summary")).to_contain_text("5,000 rows", timeout=WAIT)
        expect(other.locator("#session_status")).to_contain_text("restored", timeout=WAIT)
        expect(other.locator("#session_status")).to_contain_text(f"Not restored: engine=spark, spark_master={spark}")
        assert select.select([master], [], [], 0)[0] == []           # no connection reached it
        tab(other, "3 Design")
        expect(other.locator("#guarantee")).to_contain_text("e^1", timeout=WAIT)
        expect(other.locator("#ledger table")).to_contain_text("race")
        expect(other.locator("#design_vars option:checked")).to_have_count(2)
        expect(other.locator("#method")).to_have_value("rr")
        tab(other, "2 Risk")
        expect(other.locator("#risk_table table")).to_be_visible()
        expect(other.locator("#risk_keys option:checked")).to_have_count(2)
        shot(other, "steps-restored")
        no_trace(other)
    finally:
        other.context.close()
        master.close()


def test_a_session_file_that_is_not_one(page: Page, tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text('{"format": "pramkit-manifest"}')
    upload(page, "session_upload", bad)
    message = step_error(page, "data")
    assert message.startswith("manifest.json is not a session file of the workbench"), message
    assert "--" not in message and str(tmp_path) not in message
    no_trace(page)


def test_value_labels_and_missing_codes_in_the_page(page: Page, tmp_path: Path) -> None:
    """An SPSS file shows its labels in the preview and the estimates, not 1.0/2.0 and NaN."""
    pyreadstat = pytest.importorskip("pyreadstat")
    path = tmp_path / "enquête.sav"
    frame = pd.DataFrame({"sex": [1.0, 2.0, 9.0, 1.0, None] * 200, "age": [1.0, 2.0, 3.0, 2.0, 1.0] * 200})
    pyreadstat.write_sav(frame, str(path), missing_ranges={"sex": [9]},
                         variable_value_labels={"sex": {1: "homme", 2: "femme", 9: "refusé"},
                                                "age": {1: "0-17, enfant", 2: "18-64", 3: "65+, âgé"}})
    upload(page, "upload", path)
    expect(page.locator("#data_summary")).to_contain_text("1,000 rows", timeout=WAIT)
    preview = page.locator("#preview table")
    expect(preview).to_contain_text("(missing: 9 refusé)")
    expect(preview).to_contain_text("0-17, enfant")
    assert "NaN" not in preview.inner_text() and "1.0" not in preview.inner_text()
    shot(page, "steps-value-labels")
    tab(page, "3 Design")
    choose(page, "design_vars", ["age"])
    page.select_option("#method", "rr")
    _design(page, "2")
    tab(page, "4 Apply")
    page.click("#new_key")
    page.click("#run_apply")
    estimates = page.locator("#estimates table")
    expect(estimates).to_contain_text("65+, âgé", timeout=WAIT)
    assert "nan" not in estimates.inner_text().lower()
    no_trace(page)


def test_a_recoding_before_pram_reaches_the_export_and_the_script(page: Page, tmp_path: Path) -> None:
    open_census(page, 5_000)
    page.fill("#recode", "marital_status: married, spouse present | married, spouse absent -> married\n"
                         "age: 65-74 | 75+ -> 65+")
    page.click("#run_recode")
    expect(page.locator("#data_summary")).to_contain_text("Recoded before PRAM", timeout=WAIT)
    expect(page.locator("#data_summary")).to_contain_text("'married, spouse present', 'married, spouse absent'")
    shot(page, "steps-recoded")
    tab(page, "3 Design")
    choose(page, "design_vars", ["marital_status", "age"])
    page.select_option("#method", "rr")
    _design(page, "3")
    tab(page, "4 Apply")
    page.click("#new_key")
    page.click("#run_apply")
    expect(page.locator("#estimates table")).to_contain_text("65+", timeout=WAIT)
    tab(page, "5 Export")
    out = tmp_path / "release"
    page.fill("#out_folder", str(out))
    page.click("#run_export")
    expect(page.locator("#export_files")).to_contain_text("private/: never publish", timeout=WAIT)
    assert json.loads((out / "private" / "inputs" / "recode.json").read_text())["age"] == {
        "merge": {"65-74": "65+", "75+": "65+"}}
    assert "pramkit recode" in (out / "private" / "reproduce.sh").read_text()
    released = pd.read_csv(out / "public" / "released.csv")
    assert set(released["age"]) <= {"0-9", "10-17", "18-24", "25-34", "35-44", "45-54", "55-64", "65+"}
    no_trace(page)


def test_a_recoding_line_written_wrong(page: Page) -> None:
    open_census(page, 5_000)
    page.fill("#recode", "age 80+")
    page.click("#run_recode")
    message = step_error(page, "data")
    assert message.startswith("line 1 of the recoding ('age 80+'): write each line") and "--" not in message
    page.fill("#recode", "ages: 80+ -> old")
    page.click("#run_recode")
    expect(page.locator("#data_error .step-error")).to_contain_text("'ages', not a column of", timeout=WAIT)
    no_trace(page)


def test_progress_says_the_amount_done_of_the_total(page: Page) -> None:
    """A long step's progress names what it does, how much of how many (pramkit.progress.TimeLeft, which also
    says the time left once there is a rate to go on); Cancel still stops it."""
    page.fill("#census_rows", "3000000")
    page.click("#open_census")
    note = page.locator(".shiny-notification")
    expect(note).to_contain_text(re.compile(r"[\d,]+ of 3,000,000 rows \(\d+ %\)"), timeout=WAIT * 4)
    shot_text = note.first.inner_text()
    assert "--" not in shot_text
    page.click("#data_stop", timeout=WAIT)
    assert step_error(page, "data").startswith("cancelled")
    no_trace(page)


def test_an_uploaded_rules_file_can_be_removed(page: Page, tmp_path: Path) -> None:
    rules = tmp_path / "rules.csv"
    rules.write_text("age,marital_status\n0-9,engaged\n")                # names an unknown category
    open_census(page, 5_000)
    tab(page, "3 Design")
    choose(page, "design_vars", ["marital_status"])
    page.select_option("#method", "rr")
    upload(page, "forbid", rules)
    expect(page.locator("#design_files")).to_contain_text("edit rules: rules.csv")
    page.fill("#epsilon", "2")
    page.click("#run_design")
    assert step_error(page, "design").startswith("rule 1 of the edit rules file names 'age'")
    page.click("#clear_files")
    expect(page.locator("#design_files")).to_contain_text("the next design reads none")
    _design(page, "2")                                                  # designed without the rules
    no_trace(page)


def test_classic_keep_pram_without_a_budget_and_recognition_on_two_keys(page: Page) -> None:
    """mu-ARGUS's classic PRAM (a keep probability) needs no budget; the recognition design works on two keys
    (the page no longer sends a hidden 3 keys at a time)."""
    open_census(page, 5_000)
    tab(page, "3 Design")
    choose(page, "design_vars", ["sex", "race"])
    page.select_option("#method", "keep")
    page.fill("#epsilon", "")
    page.fill("#options", "keep=0.8")
    page.click("#run_design")
    expect(page.locator("#ledger table")).to_contain_text("race", timeout=WAIT)
    page.select_option("#method", "recognition")
    page.fill("#options", "recognition=0.5")
    page.click("#run_design")
    expect(page.locator("#ledger table")).to_contain_text("sex*race", timeout=WAIT)
    expect(page.locator("#design_error .step-error")).to_have_count(0)
    no_trace(page)


def test_a_reload_mid_step_says_the_step_was_stopped(page: Page) -> None:
    """A reload stops the step running; the tab's release comes back and the page says which step to run again
    (before, it only said that the release was back)."""
    open_census(page, 5_000)
    page.fill("#census_rows", "3000000")
    page.click("#open_census")
    expect(page.locator("#data_stop")).to_be_visible(timeout=WAIT)
    page.reload()
    expect(page.locator(".shiny-notification")).to_contain_text(
        "the data step, running when the tab was reloaded, was stopped: run it again", timeout=WAIT)
    no_trace(page)
