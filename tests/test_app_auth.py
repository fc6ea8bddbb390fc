"""`pramkit app`: the token gate (against the real server, no browser) and the command line."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("shiny")
uvicorn = pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

import _app_support  # noqa: E402

from pramkit.app.auth import REFUSED, cookie_name  # noqa: E402
from pramkit.cli import main  # noqa: E402

TOKEN = "s3cret-token"


def _get(url: str, cookie: str | None = None) -> tuple[int, bytes, list[str]]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read(), response.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), []


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    with _app_support.running_app(tmp_path_factory.mktemp("work"), TOKEN) as url:
        yield url


def test_no_token_is_refused_with_one_line(base: str) -> None:
    status, body, cookies = _get(base + "/")
    assert (status, cookies) == (403, [])
    assert body == REFUSED and body.decode().count("\n") == 1


def test_wrong_token_is_refused(base: str) -> None:
    assert _get(base + "/?token=not-it")[0] == 403
    assert _get(base + "/?token=" + TOKEN[:-1])[0] == 403
    assert _get(base + "/", cookie=f"{cookie_name(TOKEN)}=not-it")[0] == 403


def test_token_opens_the_page_and_sets_a_strict_httponly_cookie(base: str) -> None:
    status, body, cookies = _get(base + "/?token=" + TOKEN)
    assert status == 200 and b"pramkit" in body
    (cookie,) = cookies
    attributes = [a.strip().lower() for a in cookie.split(";")]
    assert cookie.startswith(f"{cookie_name(TOKEN)}={TOKEN};")
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes


def test_cookie_alone_opens_later_requests(base: str) -> None:
    _, _, (cookie,) = _get(base + "/?token=" + TOKEN)
    status, body, cookies = _get(base + "/", cookie=cookie.split(";")[0])
    assert status == 200 and b"pramkit" in body and cookies == []


def _websocket_status(url: str, cookie: str | None) -> int:
    async def connect() -> int:
        headers = {"Cookie": cookie} if cookie else None
        try:
            async with websockets.connect(url, additional_headers=headers, open_timeout=20):
                return 101
        except websockets.exceptions.InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(connect())


def test_websocket_needs_the_cookie_or_the_token(base: str) -> None:
    ws = base.replace("http://", "ws://") + "/websocket/"
    assert _websocket_status(ws, None) == 403
    assert _websocket_status(ws, f"{cookie_name(TOKEN)}=wrong") == 403
    assert _websocket_status(ws, f"{cookie_name(TOKEN)}={TOKEN}") == 101
    assert _websocket_status(ws + "?token=" + TOKEN, None) == 101


def _run(argv: list[str]) -> tuple[int, str, str]:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_help() -> None:
    code, out, _ = _run(["app", "--help"])
    assert code == 0 and "--port" in out and "--no-browser" in out and "127.0.0.1" in out


@pytest.mark.parametrize("port", ["http", "-1", "65536", "1.5"])
def test_bad_port_is_one_line_exit_2(port: str) -> None:
    code, out, err = _run(["app", "--port", port])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("pramkit app: error: ") and "port" in err


@pytest.mark.parametrize("argv, host", [([], "127.0.0.1"), (["--host", "0.0.0.0"], "0.0.0.0")])
def test_binds_loopback_unless_host(monkeypatch: pytest.MonkeyPatch, argv: list[str], host: str) -> None:
    import pramkit.app.serve

    calls = []
    monkeypatch.setattr(pramkit.app.serve, "serve", lambda *a, **kw: calls.append((a, kw)))
    assert _run(["app", "--no-browser", "--port", "8765", *argv])[0] == 0
    ((args, kwargs),) = calls
    assert args == (host, 8765) and kwargs["open_browser"] is False


def test_serve_warns_off_loopback_and_prints_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    import pramkit.app.serve as serve

    opened = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: None)
    monkeypatch.setattr(serve.webbrowser, "open", opened.append)
    monkeypatch.setattr(serve, "graphical_browser", lambda: True)
    lines: list[str] = []
    serve.serve("0.0.0.0", 0, open_browser=False, tell=lines.append)
    assert lines[0].startswith("warning: listening on 0.0.0.0")
    assert "http://0.0.0.0:" in lines[1] and "/?token=" in lines[1] and opened == []
    lines.clear()
    serve.serve("127.0.0.1", 0, open_browser=True, tell=lines.append)
    assert len(lines) == 1 and "http://127.0.0.1:" in lines[0]


def test_without_the_extra_exit_2_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "shiny", None)
    code, out, err = _run(["app", "--no-browser"])
    assert code == 2 and out == ""
    assert err == 'pramkit app: error: the app needs its extra: pip install "pramkit[app]"\n'


def test_port_in_use_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from pramkit.app.serve import listen

    with listen("127.0.0.1", 0) as taken:
        code, _, err = _run(["app", "--no-browser", "--port", str(taken.getsockname()[1])])
    assert code == 2 and err.count("\n") == 1 and err.startswith("pramkit app: error: cannot listen on 127.0.0.1:")
