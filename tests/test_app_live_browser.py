"""The design step's live panel in a real browser (headless Chromium): the expected risk after PRAM and the
expected utility follow the design fields before anything is designed or applied, equal to the library's
:func:`pramkit.risk.expected.expected_release` for the same parameters; the risk-utility map has a point per
design tried; a stratified design has its risk after PRAM.

Skipped as tests/test_app_browser.py is (Playwright and Chromium absent, unless PRAMKIT_REQUIRE_BROWSER=1);
screenshots go to tests/artifacts/app/ (and docs/app/ with PRAMKIT_DOC_SCREENSHOTS=1).
"""

from __future__ import annotations

from collections.abc import Iterator

import _app_support
import pytest
from _browser import (  # skips this module when Playwright or Chromium is absent (unless required)
    SHOTS,
    WAIT,
    Browser,
    Page,
    choose,
    expect,
    no_trace,
    open_app,
    open_census,
    tab,
)

from pramkit.kernel.rng import SecretKey
from pramkit.release.choices import DesignChoices
from pramkit.risk.expected import ExpectedRelease, ProblemSet, expected_release
from pramkit.workbench import Workbench

#: One app and one Chromium serve this module's tests (its fixtures): starting them is a good part of the
#: tests' time, paid once in one test process rather than in each that runs some of them.
pytestmark = pytest.mark.xdist_group("test_app_live_browser")
TOKEN = "live-test-token"
ROWS = 5_000
KEYS = ["age", "sex", "race"]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _app_support.running_app(tmp_path_factory.mktemp("work"), TOKEN) as url:
        yield url


@pytest.fixture
def page(chromium: Browser, app: str) -> Iterator[Page]:
    pg = open_app(chromium, app, TOKEN)
    yield pg
    pg.context.close()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workbench, ProblemSet]]:
    """The same census, read by the library on its own (the workbench only writes the file and its codebook)."""
    wb = Workbench(tmp_path_factory.mktemp("library"))
    source = wb.open_census(rows=ROWS)
    yield wb, ProblemSet.of(source.path, KEYS, sampling_fraction=0.05, **source.reading)


def _expected(library: tuple[Workbench, ProblemSet], variables: tuple[str, ...],
              choices: DesignChoices) -> ExpectedRelease:
    wb, problem = library
    assert wb.source is not None and wb.source.categories is not None
    release = DesignChoices(**{**choices.__dict__, "categories": str(wb.source.categories)}).release(
        wb.source.path, variables, key=SecretKey(bytes(32), "any: randomized response draws no noise"))
    return expected_release(problem, release.manifest)


def _cell(page: Page, measure: str) -> object:
    return page.locator("#live_figures .live-risk tr", has_text=measure).locator("td").nth(2)


def _ready(page: Page) -> None:
    open_census(page, ROWS)
    tab(page, "2 Risk")
    choose(page, "risk_keys", KEYS)
    page.fill("#sampling_fraction", "0.05")
    page.click("#run_risk")
    expect(page.locator("#risk_table table")).to_be_visible(timeout=WAIT)
    tab(page, "3 Design")


def test_the_expected_risk_follows_epsilon_and_the_map_has_a_point_per_design(
        page: Page, library: tuple[Workbench, ProblemSet]) -> None:
    _ready(page)
    page.select_option("#method", "rr")
    page.fill("#epsilon", "1")
    choose(page, "design_vars", ["age"])
    one = _expected(library, ("age",), DesignChoices(method="rr", epsilon=1.0))
    expect(_cell(page, "tau2")).to_have_text(f"{one.tau2:,.4g}", timeout=WAIT)  # type: ignore[arg-type]
    expect(_cell(page, "tau1")).to_have_text(f"{one.tau1:,.4g}")  # type: ignore[arg-type]
    expect(page.locator("#live_figures .live-utility")).to_contain_text("age")
    expect(page.locator("#live_panel")).to_contain_text("not published")
    assert page.locator("#guarantee").inner_text().startswith("Choose")  # nothing designed yet

    page.fill("#epsilon", "3")
    three = _expected(library, ("age",), DesignChoices(method="rr", epsilon=3.0))
    assert f"{three.tau2:,.4g}" != f"{one.tau2:,.4g}"
    expect(_cell(page, "tau2")).to_have_text(f"{three.tau2:,.4g}", timeout=WAIT)  # type: ignore[arg-type]
    expect(page.locator("#live_map .ru-point")).to_have_count(2, timeout=WAIT)
    expect(page.locator("#live_map .ru-point.current")).to_have_count(1)
    expect(page.locator("#live_map .ru-point.current")).to_have_attribute("data-number", "2")
    expect(page.locator("#live_map")).to_contain_text("--epsilon 1.0")
    expect(page.locator("#live_figures .live-stale")).to_have_count(0, timeout=WAIT)
    page.locator("#live_panel").scroll_into_view_if_needed()
    for folder in SHOTS:
        folder.mkdir(parents=True, exist_ok=True)
        page.locator("#live_panel").screenshot(path=str(folder / "03-live.png"))
    no_trace(page)


def test_a_stratified_design_shows_its_risk_after_pram(page: Page) -> None:
    _ready(page)
    page.fill("#epsilon", "2")
    choose(page, "strata", ["race"])
    choose(page, "design_vars", ["sex"])
    expect(page.locator("#live_figures .live-risk")).to_be_visible(timeout=WAIT)
    after = _cell(page, "tau2").inner_text()  # type: ignore[attr-defined]
    assert after not in ("", "n/a")
    expect(page.locator("#live_figures")).not_to_contain_text("not computed")
    expect(page.locator("#live_map .ru-point")).to_have_count(1)
    no_trace(page)


def test_before_the_risk_step_the_panel_says_what_it_needs(page: Page) -> None:
    open_census(page, ROWS)
    tab(page, "3 Design")
    page.fill("#epsilon", "2")
    choose(page, "design_vars", ["sex"])
    expect(page.locator("#live_figures")).to_contain_text("Assess the risk before", timeout=WAIT)
    expect(page.locator("#live_map li")).to_have_count(1)  # listed; no point without the risk after PRAM
    expect(page.locator("#live_map .ru-point")).to_have_count(0)
    no_trace(page)
