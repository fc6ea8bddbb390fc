"""Debian's Chromium driven by Playwright, for the app's browser tests: the browser, a page opened with the
app's token, and the steps a user takes in the page.

Importing this module skips the importing test module when Playwright or Chromium is absent, unless
PRAMKIT_REQUIRE_BROWSER=1 (CI), which makes that a failure.  Playwright's own browser download is not used:
the system's ``/usr/bin/chromium`` (or ``PRAMKIT_CHROMIUM``).  Screenshots go to tests/artifacts/app/ and,
with PRAMKIT_DOC_SCREENSHOTS=1, to docs/app/.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REQUIRED = os.environ.get("PRAMKIT_REQUIRE_BROWSER") == "1"
CHROMIUM = Path(os.environ.get("PRAMKIT_CHROMIUM", "/usr/bin/chromium"))
ROOT = Path(__file__).resolve().parents[1]
SHOTS = [ROOT / "tests" / "artifacts" / "app"] + (
    [ROOT / "docs" / "app"] if os.environ.get("PRAMKIT_DOC_SCREENSHOTS") == "1" else [])
#: Milliseconds to wait for a step of the census workflow.
WAIT = 30_000
#: The settings of a page's browser session (:func:`open_app`): the window, and less motion, as a user may ask:
#: Playwright scrolls a field or a button into view before acting on it, which the page (Bootstrap) does
#: smoothly, in about 0.4 s, and a click then waited for the button to stand still, checked every 0.5 s.
CONTEXT: dict = {"viewport": {"width": 1280, "height": 900}, "reduced_motion": "reduce"}
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

try:
    from playwright.sync_api import Page, sync_playwright
    from playwright.sync_api import expect as playwright_expect
except ImportError:
    if REQUIRED:
        raise
    pytest.skip("playwright is not installed", allow_module_level=True)
if not CHROMIUM.exists():
    if REQUIRED:
        raise RuntimeError(f"PRAMKIT_REQUIRE_BROWSER=1 but {CHROMIUM} is absent")
    pytest.skip(f"{CHROMIUM} is absent", allow_module_level=True)
pytest.importorskip("shiny")

Browser = Any  # playwright.sync_api.Browser

#: Milliseconds of one try of an assertion of :func:`expect`, which tries again until the assertion's timeout.
#: Playwright checks an assertion again after 0, 20, 50, 100 and 100 ms, then every 500 ms, a step of the page
#: being seen up to half a second after it is done; a try of under 0.5 s is checked every 50 ms.
TRY = 450
#: Playwright's timeout of an assertion that names none (milliseconds).
EXPECT_TIMEOUT = 5_000

__all__ = [
    "ARGS",
    "CHROMIUM",
    "CONTEXT",
    "SHOTS",
    "WAIT",
    "Browser",
    "Page",
    "choose",
    "chromium",
    "expect",
    "no_trace",
    "open_app",
    "open_census",
    "settled",
    "shot",
    "step_error",
    "sync_playwright",
    "tab",
    "upload",
]


class _Assertions:
    """Playwright's assertions on a page or a locator, each tried for :data:`TRY` ms at a time until its
    timeout: the same assertion and the same timeout, checked every 50 ms instead of every 500 ms."""

    def __init__(self, assertions: Any) -> None:
        self._assertions = assertions

    @property
    def not_(self) -> _Assertions:
        return _Assertions(self._assertions.not_)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._assertions, name)
        if not name.startswith(("to_", "not_to_")):
            return method
        return functools.partial(_tried, method)


def _tried(method: Callable[..., None], *args: Any, timeout: float | None = None, **kwargs: Any) -> None:
    if timeout == 0:  # Playwright's "no timeout"
        return method(*args, timeout=0, **kwargs)
    total = EXPECT_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + total / 1000
    while True:
        left = (deadline - time.monotonic()) * 1000
        try:
            return method(*args, timeout=max(1.0, min(TRY, left)), **kwargs)
        except AssertionError as failed:
            if left <= TRY:
                failed.add_note(f"(tried for {total:g} ms in all, {TRY} ms at a time: tests/_browser.py, expect)")
                raise


def expect(actual: Any, message: str | None = None) -> Any:
    """Playwright's ``expect``, its assertions checked every 50 ms (:class:`_Assertions`)."""
    return _Assertions(playwright_expect(actual, message))


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium, closed on exit (the ``chromium`` fixture of tests/conftest.py)."""
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def open_app(browser: Browser, base: str, token: str, **context: Any) -> Page:
    """A new browser session on the app at ``base``, opened with its token, once the server has started its
    session: Shiny's client is connected when its websocket opens, before the server has read the page's
    first message and run the session (which makes its folder), so the page waits for the first values the
    session sends.  A test that counted the session folders when the websocket had just opened missed its
    own page's, which then appeared during the test (seen on a loaded machine)."""
    ctx = browser.new_context(**{**CONTEXT, **context})
    pg = ctx.new_page()
    pg.goto(f"{base}/?token={token}")
    expect(pg.locator("#open_census")).to_be_visible(timeout=WAIT)
    pg.wait_for_function("() => window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected()"
                         " && Object.keys(Shiny.shinyapp.$values).length > 0", timeout=WAIT)
    return pg


def shot(page: Page, name: str, folders: list[Path] = SHOTS, *, full_page: bool = False) -> None:
    """A screenshot of the page once the step's work is done, every output drawn and its messages closed
    (``full_page``: all of it, not only the window)."""
    settled(page)
    # At once: the page scrolls smoothly (Bootstrap's scroll-behavior), which took 0.7 s from the foot of a tab.
    page.evaluate("window.scrollTo({top: 0, left: 0, behavior: 'instant'})")
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"{name}.png"), full_page=full_page)


#: Run in the page until it returns true: closes each message shown with its close button, once, including one
#: that comes while the others close; true once none is left.
CLOSE_MESSAGES = """() => {
  const closed = window.pramkitTestClosed || (window.pramkitTestClosed = new WeakSet());
  document.querySelectorAll('.shiny-notification-close').forEach(b => { if (!closed.has(b)) { closed.add(b); b.click(); } });
  return !document.querySelector('.shiny-notification');
}"""


def settled(page: Page) -> None:
    """Wait until the step's work is done (no progress bar) and every output of the tab drawn, then close the
    messages shown, as a user does with their close button: each would close by itself only after its few
    seconds (an error's eight).  A message that comes while the others close (a reload's "is back") is closed
    too: the wait for none to be left had waited for it to close by itself."""
    expect(page.locator(".shiny-progress-notification")).to_have_count(0, timeout=WAIT)
    page.wait_for_function("() => !document.querySelector('.tab-pane.active .recalculating')", timeout=WAIT)
    page.wait_for_function(CLOSE_MESSAGES, timeout=WAIT)
    expect(page.locator(".shiny-notification")).to_have_count(0, timeout=WAIT)


def tab(page: Page, title: str) -> None:
    """Show a step's tab and wait until its outputs are drawn (a button does not move under a click)."""
    page.get_by_role("tab", name=title).click()
    expect(page.get_by_role("tab", name=title)).to_have_attribute("aria-selected", "true", timeout=WAIT)
    page.wait_for_function("() => !document.querySelector('.tab-pane.active .recalculating')", timeout=WAIT)


def choose(page: Page, field: str, values: list[str]) -> None:
    """Pick ``values`` in a multiple selectize field, as a user does: open it, click each."""
    box = page.locator(f"#{field} + .selectize-control")
    for value in values:
        box.locator(".selectize-input").click()
        box.locator(f".selectize-dropdown-content [data-value='{value}']").click()
    page.keyboard.press("Escape")
    expect(page.locator(f"#{field} option[selected], #{field} option:checked")).to_have_count(len(values))


def upload(page: Page, field: str, path: Path) -> None:
    page.set_input_files(f"#{field}", str(path))
    expect(page.locator(f"#{field}_progress")).to_contain_text("Upload complete", timeout=WAIT)


def open_census(page: Page, rows: int = 20_000) -> None:
    page.fill("#census_rows", str(rows))
    page.click("#open_census")
    expect(page.locator("#data_summary")).to_contain_text(f"{rows:,} rows", timeout=WAIT)


def step_error(page: Page, step: str) -> str:
    box = page.locator(f"#{step}_error .step-error")
    expect(box).to_be_visible(timeout=WAIT)
    return box.inner_text()


def no_trace(page: Page) -> None:
    content = page.content()
    assert "Traceback" not in content
    assert "internal error" not in content
