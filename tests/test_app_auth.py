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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _response(url: str, cookie: str | None = None, **headers: str) -> tuple[int, bytes, dict[str, list[str]]]:
    """Status, body and headers (lower-case names) of a GET, redirects not followed."""
    sent = {**({"Cookie": cookie} if cookie else {}), **{k.replace("_", "-"): v for k, v in headers.items()}}
    try:
        with _OPENER.open(urllib.request.Request(url, headers=sent), timeout=20) as response:
            status, body, got = response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        status, body, got = exc.code, exc.read(), exc.headers
    names = {k.lower() for k in got}
    return status, body, {k: got.get_all(k) or [] for k in names}


def _get(url: str, cookie: str | None = None) -> tuple[int, bytes, list[str]]:
    status, body, headers = _response(url, cookie)
    return status, body, headers.get("set-cookie", [])


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


def test_token_is_exchanged_for_a_strict_httponly_cookie_and_leaves_the_url(base: str) -> None:
    status, body, headers = _response(base + "/?token=" + TOKEN)
    assert status == 303 and body == b"" and headers["location"] == ["/"]
    assert headers["cache-control"] == ["no-store"]
    (cookie,) = headers["set-cookie"]
    attributes = [a.strip().lower() for a in cookie.split(";")]
    assert cookie.startswith(f"{cookie_name(TOKEN)}={TOKEN};")
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes
    status, _, headers = _response(base + "/?a=1&token=" + TOKEN + "&b=two%20words")   # other parameters stay
    assert status == 303 and headers["location"] == ["/?a=1&b=two+words"]
    status, body, _ = _response(base + "/", cookie.split(";")[0])
    assert status == 200 and b"pramkit" in body


def test_cookie_alone_opens_later_requests(base: str) -> None:
    _, _, (cookie,) = _get(base + "/?token=" + TOKEN)
    status, body, cookies = _get(base + "/", cookie=cookie.split(";")[0])
    assert status == 200 and b"pramkit" in body and cookies == []


def _websocket_status(url: str, cookie: str | None, origin: str | None = "own", host: str | None = None) -> int:
    """The handshake's status; ``host``: the name the request gives (the connection goes to the URL's address)."""
    own = url.replace("ws://", "http://").split("/websocket")[0]
    address, port = own.removeprefix("http://").rsplit(":", 1)
    uri = url if host is None else url.replace(f"{address}:{port}", host)

    async def connect() -> int:
        headers = {"Cookie": cookie} if cookie else None
        try:
            async with websockets.connect(uri, additional_headers=headers, open_timeout=20, host=address,
                                          port=int(port), origin=own if origin == "own" else origin):
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


def test_websocket_from_another_page_or_address_is_refused(base: str) -> None:
    """The cookie is sent to every port of 127.0.0.1: a page elsewhere has it, not the app's origin."""
    ws, port = base.replace("http://", "ws://") + "/websocket/", base.rsplit(":", 1)[1]
    cookie = f"{cookie_name(TOKEN)}={TOKEN}"
    other = int(port) + 1 if int(port) < 65535 else int(port) - 1
    for origin in (f"http://127.0.0.1:{other}", "http://attacker.example", f"https://127.0.0.1:{port}", "null",
                   None):
        assert _websocket_status(ws, cookie, origin) == 403, origin
    assert _websocket_status(ws, cookie, f"http://localhost:{port}", host=f"localhost:{port}") == 101
    assert _websocket_status(ws, cookie, f"http://attacker.example:{port}", host=f"attacker.example:{port}") == 403


@pytest.mark.parametrize("headers", [
    {"Origin": "http://127.0.0.1:1"},                       # a page on another port
    {"Origin": "http://attacker.example"},                  # another site
    {"Sec-Fetch-Site": "same-site"},                        # a link or image on another port of 127.0.0.1
    {"Sec-Fetch-Site": "cross-site"},
    {"Host": "attacker.example"},                           # a name made to point at 127.0.0.1 (rebinding)
    {"Host": "127.0.0.1:1"},
])
def test_http_from_another_page_or_address_is_refused(base: str, headers: dict[str, str]) -> None:
    cookie = f"{cookie_name(TOKEN)}={TOKEN}"
    for path in ("/", "/?token=" + TOKEN, "/shiny/shiny.min.js"):
        status, body, got = _response(base + path, cookie, **headers)
        assert status == 403 and body.decode().count("\n") == 1 and "set-cookie" not in got, (path, headers)


def test_the_own_page_passes_and_nothing_may_frame_it(base: str) -> None:
    cookie = f"{cookie_name(TOKEN)}={TOKEN}"
    for headers in ({}, {"Origin": base}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
        status, _, got = _response(base + "/", cookie, **headers)
        assert status == 200, headers
        assert got["content-security-policy"] == ["frame-ancestors 'none'"] and got["x-frame-options"] == ["DENY"]
    for path, cookie_sent in (("/", None), ("/?token=" + TOKEN, None), ("/", cookie)):
        _, _, got = _response(base + path, cookie_sent, Origin="http://127.0.0.1:1")
        assert got["content-security-policy"] == ["frame-ancestors 'none'"] and got["x-frame-options"] == ["DENY"]


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
    assert len(lines) == 2 and "http://127.0.0.1:" in lines[0]
    assert lines[1] == f"files may be opened by their path from: {Path.cwd().resolve()}"


def test_a_missing_data_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    code, out, err = _run(["app", "--no-browser", "--data-dir", str(tmp_path), "--data-dir", str(tmp_path / "no")])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("pramkit app: error: the data folder") and "does not exist" in err


def test_the_data_folders_reach_the_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pramkit.app.serve as serve

    made = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: made.append(self.config.app))
    monkeypatch.setattr(serve, "create_app", lambda work, token, **kw: kw)
    assert _run(["app", "--no-browser", "--data-dir", str(tmp_path), "--data-dir", str(tmp_path)])[0] == 0
    assert made[0]["data_dirs"] == [tmp_path.resolve()] * 2 and made[0]["hosts"] == ["127.0.0.1"]


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
