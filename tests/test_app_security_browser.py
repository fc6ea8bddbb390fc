"""The app on a shared machine, in a real browser (headless Chromium driven by Playwright): only its own page
may drive it, the token leaves the URL, the key is dropped once applied, files are opened only from the data
folders, private files are their owner's only, public files name no path of the machine, nothing is left in
the temporary folder after SIGTERM or SIGINT, closed tabs' folders expire.

Skipped as tests/test_app_browser.py is (Playwright and Chromium absent, unless PRAMKIT_REQUIRE_BROWSER=1);
screenshots go to tests/artifacts/app/.
"""

from __future__ import annotations

import gc
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _app_support
import pytest
from _browser import (  # skips this module when Playwright or Chromium is absent (unless required)
    SHOTS,
    WAIT,
    Browser,
    Page,
    expect,
    no_trace,
    open_app,
    open_census,
    settled,
    step_error,
    tab,
    upload,
)

from pramkit.app import server
from pramkit.kernel.rng import SecretKey

#: One app and one Chromium serve this module's tests (its fixtures): starting them is a good part of the
#: tests' time, paid once in one test process rather than in each that runs some of them.
pytestmark = pytest.mark.xdist_group("test_app_security_browser")
TOKEN = "security-test-token"
#: Seconds a closed tab's release is kept in this module's app (the default is 30): long enough for a reload on a
#: loaded machine (1.7 s from the old page's end to the new page's tab name, with the tests running on both cores).
EXPIRE = 10.0
RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("security")
    out = {"work": root / "work", "data": root / "data", "outside": root / "outside", "root": root}
    for name in ("work", "data", "outside"):
        out[name].mkdir()
    for name in ("data", "outside"):
        (out[name] / "survey.csv").write_text("région,âge\n" + "Île-de-France,15-24\nNord,NA\n" * 50,
                                              encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def app(folders: dict[str, Path]) -> Iterator[str]:
    with _app_support.running_app(folders["work"], TOKEN, data_dirs=[folders["data"]], expire_after=EXPIRE) as url:
        yield url


def _open(chromium: Browser, app: str) -> Page:
    return open_app(chromium, app, TOKEN)


@pytest.fixture
def page(chromium: Browser, app: str) -> Iterator[Page]:
    pg = _open(chromium, app)
    yield pg
    pg.context.close()


def shot(page: Page, name: str) -> None:
    settled(page)
    for folder in SHOTS[:1]:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"security-{name}.png"))


def _sessions(folders: dict[str, Path]) -> set[str]:
    return {p.name for p in folders["work"].iterdir() if p.name.startswith("session-")}


def test_the_token_leaves_the_address_bar_and_the_history(page: Page, app: str) -> None:
    assert page.url == f"{app}/" and "token" not in page.evaluate("location.href")
    assert page.evaluate("history.length") == 2                     # the blank page it started on, and the app
    page.go_back()                                                  # the entry before the app: not the token's
    assert "token" not in page.url and page.url == "about:blank"
    page.go_forward()
    expect(page.locator("#open_census")).to_be_visible(timeout=WAIT)
    page.reload()                                                   # the cookie opens it again
    expect(page.locator("#open_census")).to_be_visible(timeout=WAIT)
    assert "token" not in page.url
    shot(page, "token-gone")


#: The attacker's page: the app's websocket (the browser sends the cookie of 127.0.0.1 to every port), Shiny's
#: messages to open a file by its path and read its rows, a frame of the app and a request with credentials.
ATTACK = """<!doctype html><html><body><h1>another page on 127.0.0.1</h1>
<iframe id="frame" src="APP/" width="600" height="300"></iframe>
<script>
var result = {opened: false, messages: [], closed: null, fetched: null};
function attack(url) {
  var ws = new WebSocket(url.replace("http://", "ws://") + "/websocket/");
  ws.onopen = function () {
    result.opened = true;
    ws.send(JSON.stringify({method: "init", data: {desk: "attacker", data_path: "SECRET", na_values: "NA",
                                                   "open_path:shiny.action": 0}}));
    setTimeout(function () {
      ws.send(JSON.stringify({method: "update", data: {"open_path:shiny.action": 1}}));
    }, 500);
  };
  ws.onmessage = function (e) { result.messages.push(String(e.data).slice(0, 4000)); };
  ws.onclose = function (e) { result.closed = e.code; };
  fetch(url + "/", {credentials: "include", mode: "no-cors"}).then(
    function (r) { result.fetched = r.type; }, function () { result.fetched = "refused"; });
}
attack("APP");
</script></body></html>"""

#: Run in a page: the same attack from a given origin (the control from the app's own page).
CONTROL = "url => { " + ATTACK.split("<script>")[1].split("attack(\"APP\")")[0] + " attack(url); window.result = result; }"


@pytest.fixture
def attacker(app: str, folders: dict[str, Path]) -> Iterator[str]:
    """A page served on another port of 127.0.0.1 that tries to drive the app."""
    secret = folders["data"] / "survey.csv"
    body = ATTACK.replace("APP", app).replace("SECRET", str(secret)).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_on_another_port_cannot_drive_the_app(page: Page, app: str, attacker: str,
                                                      folders: dict[str, Path]) -> None:
    """The cross-port attack: same browser, same cookie; the websocket is refused, nothing runs, no frame."""
    before = _sessions(folders)
    evil = page.context.new_page()
    evil.goto(attacker)
    evil.wait_for_function("() => result.closed !== null && result.fetched !== null", timeout=WAIT)
    result = evil.evaluate("result")
    assert result["opened"] is False and result["messages"] == [] and result["closed"] == 1006
    frame = evil.frame_locator("#frame")
    expect(frame.locator("#open_census")).to_have_count(0)
    shot(evil, "cross-port-attack")
    assert _sessions(folders) == before                        # no session was made for the attacker
    # The control: the same script from the app's own page opens the websocket and gets Shiny's answers.
    page.evaluate(CONTROL, app)
    page.wait_for_function("() => window.result.opened && window.result.messages.length > 0", timeout=WAIT)
    evil.close()
    no_trace(page)


def test_a_file_outside_the_data_folders_is_refused_in_the_pages_words(page: Page, folders: dict[str, Path]) -> None:
    expect(page.locator("#data_folders")).to_contain_text(str(folders["data"].resolve()))
    page.fill("#data_path", str(folders["outside"] / "survey.csv"))
    page.click("#open_path")
    message = step_error(page, "data")
    assert "is not in the folders this app may open files from" in message and "upload" in message
    assert "--" not in message
    expect(page.locator("#data_summary")).to_contain_text("Open the census")
    shot(page, "outside-data-folders")
    page.fill("#data_path", "survey.csv")                      # relative: in the first data folder
    page.click("#open_path")
    expect(page.locator("#data_summary")).to_contain_text("100 rows", timeout=WAIT)
    no_trace(page)


def _design_and_apply(page: Page) -> str:
    """A design on the census applied with a generated key; the fingerprint the page showed."""
    open_census(page, 5_000)
    tab(page, "3 Design")
    page.locator("#design_vars + .selectize-control .selectize-input").click()
    page.locator("#design_vars + .selectize-control .selectize-dropdown-content [data-value='sex']").click()
    page.keyboard.press("Escape")
    page.select_option("#method", "rr")
    page.fill("#epsilon", "1")
    page.click("#run_design")
    expect(page.locator("#ledger table")).to_contain_text("sex", timeout=WAIT)
    tab(page, "4 Apply")
    page.click("#new_key")
    expect(page.locator("#key_status")).to_contain_text("A key is ready", timeout=WAIT)
    fingerprint = page.locator("#key_status").inner_text().split("fingerprint ")[1][:16]
    page.click("#run_apply")
    expect(page.locator("#changed table")).to_contain_text("sex", timeout=WAIT)
    return fingerprint


def _key_held(fingerprint: str) -> bool:
    """An object of this process (the app's too: it runs here) is the key of ``fingerprint``; the answer holds
    no reference to it."""
    gc.collect()
    return any(isinstance(o, SecretKey) and o.fingerprint == fingerprint for o in gc.get_objects())


def test_the_key_is_dropped_after_apply_and_never_restored_by_a_reload(page: Page) -> None:
    fingerprint = _design_and_apply(page)
    expect(page.locator("#key_status")).to_contain_text(f"Applied with the key of fingerprint {fingerprint}",
                                                        timeout=WAIT)
    expect(page.locator("#key_status")).to_contain_text("does not keep the key")
    deadline = time.monotonic() + 10
    while (held := _key_held(fingerprint)) and time.monotonic() < deadline:    # the worker thread lets go of it
        time.sleep(0.2)
    assert not held                                                 # no object of the app's process holds it
    page.reload()
    tab(page, "4 Apply")
    expect(page.locator("#changed table")).to_contain_text("sex", timeout=WAIT)   # the release is back...
    expect(page.locator("#key_status")).not_to_contain_text("A key is ready")     # ...its key is not
    page.click("#run_apply")
    assert "generate or upload a key first" in step_error(page, "apply")
    shot(page, "key-dropped")
    no_trace(page)


def _same_tab_again(page: Page) -> Page:
    """A page under the tab name of ``page`` (what a reload, or a duplicated tab, sends), ``page`` still open."""
    name = page.evaluate("sessionStorage.getItem('pramkit-desk')")
    again = page.context.new_page()
    again.add_init_script(f"sessionStorage.setItem('pramkit-desk', {json.dumps(name)})")
    again.goto(page.url)
    again.wait_for_function("() => window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected()", timeout=WAIT)
    return again


def test_a_reload_whose_old_page_closes_late_takes_its_release_back(page: Page) -> None:
    """On a loaded machine the old page's session may end after the reloaded page connects: the reload
    still takes the release back, once the old page is gone."""
    _design_and_apply(page)
    again = _same_tab_again(page)
    time.sleep(1)
    page.close()
    tab(again, "4 Apply")
    expect(again.locator("#changed table")).to_contain_text("sex", timeout=WAIT)
    expect(again.locator(".shiny-notification")).to_contain_text("is back", timeout=WAIT)


def test_a_duplicated_tab_starts_a_release_of_its_own(page: Page, monkeypatch: pytest.MonkeyPatch) -> None:
    """The duplicate waits for its original to close, in vain: once the wait is over it has a release of its own
    (a wait of 1 s, not the app's 5: what is checked is what the tab has once it is over)."""
    monkeypatch.setattr(server, "RELOAD_GRACE", 1.0)
    _design_and_apply(page)
    again = _same_tab_again(page)
    tab(again, "4 Apply")
    time.sleep(server.RELOAD_GRACE + 1)
    expect(again.locator("#changed table")).to_have_count(0)
    tab(page, "4 Apply")
    expect(page.locator("#changed table")).to_contain_text("sex", timeout=WAIT)


@pytest.mark.parametrize("content, looks", [(RULES, "a CSV file"), ('{"format": "pramkit-manifest"}', "manifest")])
def test_a_key_file_must_look_like_a_key(page: Page, tmp_path: Path, content: str, looks: str) -> None:
    bad = tmp_path / ("rules.csv" if looks == "a CSV file" else "manifest.json")
    bad.write_text(content + " " * 40)
    tab(page, "4 Apply")
    upload(page, "key_upload", bad)
    message = step_error(page, "apply")
    assert f"the uploaded key file {bad.name!r}" in message and looks in message and "not a key" in message
    assert "/tmp" not in message and str(tmp_path) not in message
    expect(page.locator("#key_status")).to_contain_text("No key yet")
    no_trace(page)


def test_private_files_are_the_owners_only_and_public_files_name_no_path(page: Page, folders: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    _design_and_apply(page)
    tab(page, "5 Export")
    out = tmp_path / "release"
    page.fill("#out_folder", str(out))
    if page.locator("#confirm").count():
        page.check("#confirm")
    page.click("#run_export")
    expect(page.locator("#export_files")).to_contain_text("private/: never publish", timeout=WAIT)
    private = [*(out / "private").rglob("*"), out / "private"]
    assert len(private) > 5
    for p in private:
        assert p.stat().st_mode & 0o777 == (0o700 if p.is_dir() else 0o600), p
    for p in (out / "public").iterdir():
        text = p.read_bytes().decode("utf-8", "replace")
        for forbidden in (str(folders["root"]), str(tmp_path), str(Path(folders["root"]).resolve()), "/tmp/"):
            assert forbidden not in text, (p.name, forbidden)
    no_trace(page)


#: Seconds after which a timer of :data:`EXPIRE` seconds of the app's server runs in
#: :func:`test_a_closed_tabs_folder_is_removed`.
SOONER = 0.5


def test_a_closed_tabs_folder_is_removed(chromium: Browser, app: str, folders: dict[str, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed tab's release is kept for a reload: its folder is removed by a timer of the app's EXPIRE seconds,
    started when the tab closes.  The test checks that timer's seconds and its tab, then has it run after
    SOONER seconds: what it does is the app's own (``expire``), only not waited for."""
    started: list[tuple[float, tuple[object, ...]]] = []

    class Timer(threading.Timer):
        def __init__(self, interval: float, function: Any, args: Any = None, kwargs: Any = None) -> None:
            started.append((interval, tuple(args or ())))
            super().__init__(SOONER if interval == EXPIRE else interval, function, args, kwargs)

    monkeypatch.setattr(server, "threading", types.SimpleNamespace(**{**vars(threading), "Timer": Timer}))
    before = _sessions(folders)
    pg = _open(chromium, app)
    open_census(pg, 5_000)
    (mine,) = _sessions(folders) - before
    assert any((folders["work"] / mine).rglob("census.csv"))
    name = pg.evaluate("sessionStorage.getItem('pramkit-desk')")
    pg.context.close()
    deadline = time.monotonic() + EXPIRE + 20
    while mine in _sessions(folders) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (EXPIRE, (name,)) in started, (                          # kept EXPIRE seconds for a reload of the tab
        f"no timer of {EXPIRE} s for the closed tab {name!r} (timers started: {started}): if the app no longer "
        "removes a closed tab's folder by a threading.Timer, this test should follow what it does")
    assert mine not in _sessions(folders)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_app_leaves_nothing_in_the_temporary_folder(chromium: Browser, tmp_path: Path,
                                                              sig: signal.Signals) -> None:
    """`pramkit app` stopped by SIGTERM or Ctrl-C (SIGINT) while a tab holds an uploaded original."""
    temp, data = tmp_path / "temp", tmp_path / "data"
    temp.mkdir()
    data.mkdir()
    upload_file = data / "survey.csv"
    upload_file.write_text("région,âge\n" + "Île-de-France,15-24\nNord,NA\n" * 50, encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "pramkit", "app", "--no-browser", "--data-dir", str(data)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "open http://127.0.0.1:" in line, line + proc.stderr.read()
        address = line.split("open ")[1].split(" ")[0]
        context = chromium.new_context()
        pg = context.new_page()
        pg.goto(address)
        expect(pg.locator("#open_census")).to_be_visible(timeout=WAIT)
        upload(pg, "upload", upload_file)
        expect(pg.locator("#data_summary")).to_contain_text("100 rows", timeout=WAIT)
        copies = list(temp.rglob("survey.csv"))
        assert copies, "the upload is copied into the app's work folder"
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        context.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, proc.stderr.read()
    assert list(temp.iterdir()) == []
