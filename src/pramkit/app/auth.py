"""The app's door: a random token in the first URL, then an HttpOnly cookie; only the app's own page.

The app listens on the loopback interface, which every local user can reach;
the token printed in the URL (``http://127.0.0.1:PORT/?token=T``) is what keeps
other users of the machine out.  :class:`TokenGate` wraps the ASGI app: a
request (HTTP or websocket) passes when it carries ``?token=T`` or the cookie
set by an earlier request that carried it; any other request gets ``403``
with a one-line text body.  Comparisons are constant-time
(:func:`secrets.compare_digest`).  The first page, opened with the token, is
answered by a redirect to the same address without it, which sets the cookie:
the token leaves the address bar and the history.

A browser sends the cookie of ``127.0.0.1`` to every port of it, so a page
served on another port (or a site whose name is made to point at this machine)
could otherwise drive the app with the officer's cookie.  Every request
therefore names the app's own address in ``Host``; a request that says where it
comes from (``Origin``; the websocket must) comes from the app's own page, and
the browser's ``Sec-Fetch-Site`` is ``same-origin`` or ``none`` (the address
typed or opened from the terminal).  Every response forbids framing
(``Content-Security-Policy: frame-ancestors 'none'``, ``X-Frame-Options: DENY``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The body of a refused request.
REFUSED = b"forbidden: open the URL with its token that `pramkit app` printed\n"
#: The body of a request from another page or address than the app's own.
REFUSED_ORIGIN = (b"forbidden: this request does not come from the app's own page; open the URL that "
                  b"`pramkit app` printed\n")
#: Headers of every response: no page may frame the app, nothing is sniffed, no address is sent on.
SECURITY_HEADERS = ((b"content-security-policy", b"frame-ancestors 'none'"), (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"))
#: ``Sec-Fetch-Site`` values of the app's own requests: from its page, or the address opened by the officer.
OWN_SITES = ("same-origin", "none")


def new_token() -> str:
    """A fresh random token for the URL (256 bits, URL-safe).

    Returns
    -------
    str
        43 URL-safe characters.

    Examples
    --------
    >>> t = new_token()
    >>> len(t), t == new_token()
    (43, False)
    """
    return secrets.token_urlsafe(32)


def cookie_name(token: str) -> str:
    """The cookie's name, derived from the token so that two apps on one host keep their own cookie.

    Parameters
    ----------
    token : str
        The app's token.

    Returns
    -------
    str
        ``pramkit-`` and 12 hexadecimal digits of the token's SHA-256 (which says nothing usable about it).

    Examples
    --------
    >>> cookie_name("abc")
    'pramkit-ba7816bf8f01'
    """
    return "pramkit-" + hashlib.sha256(token.encode()).hexdigest()[:12]


class TokenGate:
    """An ASGI middleware that lets through only the app's own requests carrying the token or its cookie.

    Parameters
    ----------
    app : ASGI application
        The app behind the gate.
    token : str
        The secret token (:func:`new_token`).
    hosts : iterable of str, optional
        Further names of the app's host that ``Host`` may give (e.g. the ``--host`` it listens on); the
        address of the connection's own end, and ``localhost`` on the loopback interface, always pass.

    Examples
    --------
    >>> import asyncio
    >>> async def inner(scope, receive, send):
    ...     await send({"type": "http.response.start", "status": 200, "headers": []})
    ...     await send({"type": "http.response.body", "body": b"ok"})
    >>> gate = TokenGate(inner, "t0k")
    >>> def answer(query, headers=(), host=b"127.0.0.1:8765"):
    ...     sent = []
    ...     async def send(message):
    ...         sent.append(message)
    ...     scope = {"type": "http", "method": "GET", "path": "/", "query_string": query,
    ...              "server": ("127.0.0.1", 8765), "headers": [(b"host", host), *headers]}
    ...     asyncio.run(gate(scope, None, send))
    ...     return sent[0]["status"], dict(sent[0]["headers"])
    >>> answer(b"")[0], answer(b"token=wrong")[0]
    (403, 403)
    >>> code, headers = answer(b"token=t0k&x=1")    # the token becomes the cookie; the address loses it
    >>> code, headers[b"location"], b"HttpOnly" in headers[b"set-cookie"], headers[b"x-frame-options"]
    (303, b'/?x=1', True, b'DENY')
    >>> cookie = (b"cookie", headers[b"set-cookie"].split(b";")[0])
    >>> answer(b"", [cookie])[0], answer(b"", [cookie, (b"origin", b"http://127.0.0.1:8765")])[0]
    (200, 200)
    >>> answer(b"", [cookie, (b"origin", b"http://127.0.0.1:8798")])[0]      # a page on another port
    403
    >>> answer(b"", [cookie], host=b"attacker.example:8765")[0]            # a name pointed at this machine
    403
    >>> answer(b"", [cookie, (b"sec-fetch-site", b"same-site")])[0]          # a link from another port
    403
    """

    def __init__(self, app: ASGIApp, token: str, *, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self._token = token.encode()
        self._cookie = cookie_name(token)
        self._hosts = frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = _with_headers(send, SECURITY_HEADERS)
        if not own_request(scope, self._hosts):
            await _refuse(scope, send, REFUSED_ORIGIN)
            return
        by_query = self._matches(_query_token(scope))
        if not (by_query or self._matches(_cookie_value(scope, self._cookie))):
            await _refuse(scope, send, REFUSED)
            return
        if by_query and scope["type"] == "http":
            if scope.get("method") in ("GET", "HEAD"):
                await self._exchange(scope, send)
                return
            send = _with_headers(send, ((b"set-cookie", self._cookie_header()),))
        await self.app(scope, receive, send)

    def _matches(self, candidate: str | None) -> bool:
        return candidate is not None and secrets.compare_digest(candidate.encode(), self._token)

    def _cookie_header(self) -> bytes:
        return f"{self._cookie}={self._token.decode()}; Path=/; HttpOnly; SameSite=Strict".encode()

    async def _exchange(self, scope: Scope, send: Send) -> None:
        """The token for the cookie: a redirect to the same address without the token."""
        rest = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
                if k != "token"]
        location = (scope.get("root_path", "") + scope.get("path", "/")) + (f"?{urlencode(rest)}" if rest else "")
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", location.encode("latin-1", "replace")),
                                (b"set-cookie", self._cookie_header()), (b"cache-control", b"no-store"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


def own_request(scope: Scope, hosts: Iterable[str] = ()) -> bool:
    """Whether a request names the app's own address and comes from its own page (module docstring).

    Parameters
    ----------
    scope : mapping
        The ASGI scope (``server``: the address of the connection's own end).
    hosts : iterable of str
        Further names ``Host`` may give (lower case).

    Returns
    -------
    bool
        ``Host`` is the app's address (the connection's own end, ``localhost`` on the loopback
        interface, or one of ``hosts``) with its port; ``Origin``, when given (a websocket must
        give it), is ``http://`` and that address; ``Sec-Fetch-Site``, when given, is
        ``same-origin`` or ``none``.

    Examples
    --------
    >>> scope = {"type": "websocket", "server": ("127.0.0.1", 8765),
    ...          "headers": [(b"host", b"localhost:8765"), (b"origin", b"http://localhost:8765")]}
    >>> own_request(scope)
    True
    >>> own_request({**scope, "headers": [(b"host", b"localhost:8765")]})    # a websocket without its origin
    False
    >>> own_request({**scope, "headers": [(b"host", b"[::1]:8765")], "type": "http"})
    False
    >>> own_request({"type": "http", "server": ("::1", 8765), "headers": [(b"host", b"[::1]:8765")]})
    True
    """
    server = scope.get("server")
    if not server or server[1] is None:
        return False
    own_host, port = str(server[0]).lower(), int(server[1])
    names = {own_host, *hosts} | ({"localhost"} if is_loopback(own_host) else set())
    allowed = {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}
    headers = _headers(scope)
    host = headers.get("host", "").lower()
    if host not in allowed:
        return False
    origin = headers.get("origin")
    if origin is None:
        if scope["type"] == "websocket":
            return False
    elif origin.lower() != f"http://{host}":
        return False
    return headers.get("sec-fetch-site", "none").lower() in OWN_SITES


def is_loopback(host: str) -> bool:
    """Whether ``host`` names the loopback interface (only local users can connect).

    Examples
    --------
    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the last of repeated ones; a repeated one is refused
    by failing to match anyway)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1").strip() for k, v in scope.get("headers", [])}


def _with_headers(send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> Send:
    """``send`` that adds ``extra`` to the response's headers."""

    async def adding(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = dict(message)
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return adding


def _query_token(scope: Scope) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[-1] if values else None


def _cookie_value(scope: Scope, name: str) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            morsel = SimpleCookie(value.decode("latin-1")).get(name)
            if morsel is not None:
                return morsel.value
    return None


async def _refuse(scope: Scope, send: Send, body: bytes) -> None:
    """403 with a one-line body (a websocket handshake is refused, which the client sees as 403)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
