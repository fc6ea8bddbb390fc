"""Starting the app: a socket on the loopback interface, the URL with its token, the browser."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from pramkit.app import create_app
from pramkit.app.auth import is_loopback, new_token
from pramkit.errors import ParameterError

#: The interface the app listens on unless told otherwise.
LOOPBACK = "127.0.0.1"


def url(host: str, port: int, token: str) -> str:
    """The URL to open, with its token.

    Examples
    --------
    >>> url("127.0.0.1", 8765, "abc"), url("::1", 8765, "abc")
    ('http://127.0.0.1:8765/?token=abc', 'http://[::1]:8765/?token=abc')
    """
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: a free port).

    Raises
    ------
    ParameterError
        The address cannot be used (taken, unknown host, no permission).

    Examples
    --------
    >>> with listen("127.0.0.1", 0) as s:
    ...     s.getsockname()[1] > 0
    True
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise ParameterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def graphical_browser() -> bool:
    """Whether a graphical browser can be opened (a console browser would take over the terminal).

    Examples
    --------
    >>> isinstance(graphical_browser(), bool)
    True
    """
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def serve(host: str = LOOPBACK, port: int = 0, *, open_browser: bool = True,
          tell: Callable[[str], None] = lambda line: None) -> None:
    """Run the app until interrupted (Ctrl-C); its private work folder is removed afterwards.

    Parameters
    ----------
    host : str
        The interface to listen on (default the loopback interface: only this machine can connect).
    port : int
        The port (0: a free one).
    open_browser : bool
        Open the URL in the browser when a graphical one is available.
    tell : callable
        Receives each line for the user: the URL, and a warning when ``host`` is not loopback.

    Raises
    ------
    ParameterError
        The address cannot be used.
    MissingExtraError
        uvicorn is not installed (the extra ``pip install "pramkit[app]"``).
    """
    from pramkit._extras import raise_missing_extra

    try:
        import uvicorn
    except ModuleNotFoundError as exc:
        raise_missing_extra(exc, "app", "the app (pramkit.app)")

    sock = listen(host, port)
    token = new_token()
    work_root = Path(tempfile.mkdtemp(prefix="pramkit-app-"))  # mode 0700
    try:
        address = url(host, sock.getsockname()[1], token)
        if not is_loopback(host):
            tell(f"warning: listening on {host}, not only this machine: anyone who can reach it and "
                 "learns the URL can use the app and its data")
        tell(f"pramkit app: open {address} (Ctrl-C stops it)")
        if open_browser and graphical_browser():
            threading.Thread(target=webbrowser.open, args=(address,), daemon=True).start()
        config = uvicorn.Config(create_app(work_root, token), log_level="warning", lifespan="on")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        shutil.rmtree(work_root, ignore_errors=True)

