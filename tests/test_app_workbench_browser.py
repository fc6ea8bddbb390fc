"""The workbench's steps in a real browser (headless Chromium): the library's warnings shown with a step's
result, the export linking the released file, and a reload bringing back the fields as they were filled in.

Skipped as tests/test_app_browser.py is (Playwright and Chromium absent, unless PRAMKIT_REQUIRE_BROWSER=1);
screenshots go to tests/artifacts/app/.
"""

from __future__ import annotations

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
    tab,
)
from conftest import SDC_DATA

#: One app and one Chromium serve this module's tests (its fixtures): starting them is a good part of the
#: tests' time, paid once in one test process rather than in each that runs some of them.
pytestmark = pytest.mark.xdist_group("test_app_workbench_browser")
TOKEN = "workbench-test-token"


@pytest.fixture(scope="module")
def work_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work")


@pytest.fixture(scope="module")
def app(work_root: Path) -> Iterator[str]:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    with _app_support.running_app(work_root, TOKEN, data_dirs=[SDC_DATA]) as url:
        yield url


@pytest.fixture
def page(chromium: Browser, app: str) -> Iterator[Page]:
    pg = open_app(chromium, app, TOKEN)
    yield pg
    pg.context.close()


def test_a_singular_design_says_why_in_the_page(page: Page, tmp_path: Path, work_root: Path) -> None:
    """sdcMicro's testdata (9 meaning missing), water in k-anonymity blocks of 3: the design's note, the
    estimates' warning and an export's clean-up are shown in the page, in its words."""
    page.fill("#na_values", "NA,9")
    page.fill("#data_path", "testdata.csv")
    page.click("#open_path")
    expect(page.locator("#data_summary")).to_contain_text("4,580 rows", timeout=WAIT)
    tab(page, "3 Design")
    choose(page, "design_vars", ["water"])
    page.select_option("#method", "kanon")
    page.fill("#epsilon", "")
    page.fill("#design_k", "3")
    page.click("#run_design")
    guarantee = page.locator("#guarantee")
    expect(guarantee).to_contain_text("the matrix is singular (rank 2 of 7)", timeout=WAIT)
    expect(guarantee).to_contain_text("the Method 'DP: the least variance of the estimates'")
    assert "--" not in guarantee.inner_text() and "pramkit estimate" not in guarantee.inner_text()
    tab(page, "4 Apply")
    page.click("#new_key")
    page.click("#run_apply")
    warned = page.locator("#apply_warnings .step-warnings")
    expect(warned).to_contain_text("the estimates of water: the transition matrix is singular", timeout=WAIT)
    estimates = page.locator("#estimates table")
    expect(estimates).to_contain_text("not identifiable")
    assert "nan" not in estimates.inner_text().lower()
    shot(page, "workbench-singular-warned")
    tab(page, "5 Export")
    out = tmp_path / "release"
    left = out / ".export.pramkit-tmp.999999999.0a1b2c3d"
    left.mkdir(parents=True)
    (left / "released.csv").write_text("partial")
    page.fill("#out_folder", str(out))
    page.check("#confirm")
    page.click("#run_export")
    expect(page.locator("#export_files")).to_contain_text("private/: never publish", timeout=WAIT)
    expect(page.locator("#export_warnings")).to_contain_text("removed 1 temporary file(s) of the export in")
    for box in ("#guarantee", "#apply_warnings", "#export_warnings"):          # no path of the app's folder
        assert str(work_root) not in page.locator(box).inner_text()
    no_trace(page)


def test_the_export_links_the_released_file(page: Page, tmp_path: Path, work_root: Path) -> None:
    """The export from the page: the released file in public/ is the work folder's (one inode, two names),
    private/ is its owner's only, and the file read back is the release."""
    open_census(page, 5_000)
    tab(page, "3 Design")
    choose(page, "design_vars", ["sex"])
    page.select_option("#method", "rr")
    page.fill("#epsilon", "1")
    page.click("#run_design")
    expect(page.locator("#ledger table")).to_contain_text("sex", timeout=WAIT)
    tab(page, "4 Apply")
    page.click("#new_key")
    page.click("#run_apply")
    expect(page.locator("#changed table")).to_contain_text("sex", timeout=WAIT)
    tab(page, "5 Export")
    out = tmp_path / "release"
    page.fill("#out_folder", str(out))
    page.click("#run_export")
    expect(page.locator("#export_files")).to_contain_text("private/: never publish", timeout=WAIT)
    shot(page, "workbench-export-linked")
    public = out / "public" / "released.csv"
    assert public.stat().st_nlink == 2
    [work] = [p for p in work_root.rglob("released.csv") if p.stat().st_ino == public.stat().st_ino]
    assert work.parent.name == "release"
    assert stat.S_IMODE((out / "private").stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in (out / "private").rglob("*") if p.is_file()} == {0o600}
    released = pd.read_csv(public)
    assert len(released) == 5_000 and set(released["sex"]) <= {"male", "female"}
    no_trace(page)


def test_a_reload_brings_back_the_fields_as_filled_in_but_never_the_key(page: Page) -> None:
    """After a design at budget 1, the officer picks another method, a budget, a stratum and a sampling fraction
    without running them, and generates a key; a reload shows the design of budget 1, the fields as they were
    filled in, and no key."""
    open_census(page, 5_000)
    tab(page, "2 Risk")
    choose(page, "risk_keys", ["age", "sex"])
    page.fill("#sampling_fraction", "0.1")
    page.click("#run_risk")
    expect(page.locator("#risk_table table")).to_be_visible(timeout=WAIT)
    page.fill("#sampling_fraction", "0.2")                          # typed, not run
    tab(page, "3 Design")
    choose(page, "design_vars", ["marital_status"])
    page.select_option("#method", "rr")
    page.fill("#epsilon", "1")
    page.click("#run_design")
    expect(page.locator("#guarantee")).to_contain_text("e^1", timeout=WAIT)
    page.select_option("#method", "kanon")                          # filled in after the design, not run
    page.fill("#design_k", "4")
    page.fill("#epsilon", "2.5")
    choose(page, "strata", ["race"])
    page.fill("#edit_rules", "age,marital_status\n0-9,widowed")
    # The fields' last values sent (a text field's once the typing pauses); the key's answer below comes after
    # the app has taken them, so the reload finds them kept.
    page.wait_for_function(
        "want => Object.entries(want).every(([id, value]) => "
        "JSON.stringify(Shiny.shinyapp.$inputValues[id]) === JSON.stringify(value))",
        arg={"sampling_fraction": "0.2", "method": "kanon", "design_k": "4", "epsilon": "2.5", "strata": ["race"],
             "edit_rules": "age,marital_status\n0-9,widowed"}, timeout=WAIT)
    tab(page, "4 Apply")
    page.click("#new_key")
    expect(page.locator("#key_status")).to_contain_text("A key is ready")
    page.reload()
    expect(page.locator("#data_summary")).to_contain_text("5,000 rows", timeout=WAIT)
    tab(page, "3 Design")
    expect(page.locator("#guarantee")).to_contain_text("e^1", timeout=WAIT)   # the result: the design run
    expect(page.locator("#method")).to_have_value("kanon", timeout=WAIT)     # the fields: as filled in
    expect(page.locator("#design_k")).to_have_value("4")
    expect(page.locator("#epsilon")).to_have_value("2.5")
    expect(page.locator("#edit_rules")).to_have_value("age,marital_status\n0-9,widowed")
    expect(page.locator("#strata option:checked")).to_have_count(1)
    expect(page.locator("#design_vars option:checked")).to_have_count(1)
    shot(page, "workbench-reload-fields")
    tab(page, "2 Risk")
    expect(page.locator("#sampling_fraction")).to_have_value("0.2")
    expect(page.locator("#risk_keys option:checked")).to_have_count(2)
    tab(page, "4 Apply")
    expect(page.locator("#key_status")).to_contain_text("No key yet")       # the key is never brought back
    page.click("#run_apply")
    expect(page.locator("#apply_error .step-error")).to_contain_text("generate or upload a key first", timeout=WAIT)
    no_trace(page)
