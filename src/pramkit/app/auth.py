"""The app's door: a random token in the first URL, then an HttpOnly cookie.

The app listens on the loopback interface, which every local user can reach;
the token printed in the URL (``http://127.0.0.1:PORT/?token=T``) is what keeps
other users of the machine out.  :class:`TokenGate` wraps the ASGI app: a
request (HTTP or websocket) passes when it carries ``?token=T`` or the cookie
set by an earlier request that carried it; any other request gets ``403``
with a one-line text body.  Comparisons are constant-time
(:func:`secrets.compare_digest`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The body of a refused request.
REFUSED = b"forbidden: open the URL with its token that `pramkit app` printed\n"


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
    """An ASGI middleware that lets through only requests carrying the token (in the query or the cookie).

    Parameters
    ----------
    app : ASGI application
        The app behind the gate.
    token : str
        The secret token (:func:`new_token`).

    Examples
    --------
    >>> import asyncio
    >>> async def inner(scope, receive, send):
    ...     await send({"type": "http.response.start", "status": 200, "headers": []})
    ...     await send({"type": "http.response.body", "body": b"ok"})
    >>> gate = TokenGate(inner, "t0k")
    >>> def status(query, headers=()):
    ...     sent = []
    ...     async def send(message):
    ...         sent.append(message)
    ...     scope = {"type": "http", "query_string": query, "headers": list(headers)}
    ...     asyncio.run(gate(scope, None, send))
    ...     return sent[0]["status"], [v for k, v in sent[0]["headers"] if k == b"set-cookie"]
    >>> status(b"")
    (403, [])
    >>> status(b"token=wrong")
    (403, [])
    >>> code, cookies = status(b"token=t0k")
    >>> code, b"HttpOnly" in cookies[0], b"SameSite=Strict" in cookies[0]
    (200, True, True)
    >>> status(b"", [(b"cookie", cookies[0].split(b";")[0])])
    (200, [])
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()
        self._cookie = cookie_name(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        by_query = self._matches(_query_token(scope))
        if not (by_query or self._matches(_cookie_value(scope, self._cookie))):
            await _refuse(scope, send)
            return
        if by_query and scope["type"] == "http":
            send = self._setting_cookie(send)
        await self.app(scope, receive, send)

    def _matches(self, candidate: str | None) -> bool:
        return candidate is not None and secrets.compare_digest(candidate.encode(), self._token)

    def _setting_cookie(self, send: Send) -> Send:
        """``send`` that adds the cookie to the response's headers."""
        header = (f"{self._cookie}={self._token.decode()}; Path=/; HttpOnly; SameSite=Strict").encode()

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []), (b"set-cookie", header)]
            await send(message)

        return with_cookie


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


async def _refuse(scope: Scope, send: Send) -> None:
    """403 with a one-line body (a websocket handshake is refused, which the client sees as 403)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(REFUSED)).encode())]})
    await send({"type": "http.response.body", "body": REFUSED})
