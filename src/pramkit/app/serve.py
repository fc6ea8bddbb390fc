"""Starting the app: a socket on the loopback interface, the URL with its token, the browser.

The app's private work folder (each browser session's copies of uploaded files,
its release in progress) is removed when the app stops: Ctrl-C (SIGINT), SIGTERM,
or an error.  Python's temporary folder is the work folder meanwhile, so that
uploads held by Shiny are inside it too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import webbrowser
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


def data_folders(folders: Sequence[str | Path] | None) -> list[Path]:
    """The folders whose files the page may open by their path: each an existing folder, resolved.

    Parameters
    ----------
    folders : sequence of path, or None
        The folders named (``--data-dir``); None or empty: the current folder.

    Returns
    -------
    list of pathlib.Path

    Raises
    ------
    ParameterError
        A folder does not exist or is a file.

    Examples
    --------
    >>> data_folders(None) == [Path.cwd().resolve()]
    True
    >>> data_folders(["/no/such/folder"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the data folder '/no/such/folder' does not exist or is not a folder
    """
    out = []
    for folder in folders or [Path.cwd()]:
        p = Path(folder).expanduser()
        if not p.is_dir():
            raise ParameterError(f"the data folder {str(folder)!r} does not exist or is not a folder")
        out.append(p.resolve())
    return out


class _Stopped(Exception):
    """SIGINT or SIGTERM, once uvicorn has shut down."""


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`_Stopped` (after uvicorn's own shutdown, which raises the signal
    again): the ``finally`` blocks run, the work folder is removed.  Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    saved = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def warm_figures() -> None:
    """Load matplotlib and draw a small figure with text, while the officer reads the first tab.

    The risk step's plot is the page's first figure: loading matplotlib and its fonts then took
    longer than the whole risk assessment of the census.  Run in a background thread as the app
    starts; without matplotlib it does nothing (the step that draws says which extra to install).

    Examples
    --------
    >>> warm_figures()
    """
    import io

    with contextlib.suppress(Exception):
        from pramkit._figure import new_figure

        fig = new_figure("the app", figsize=(1, 1))
        fig.subplots().set_title("0.5")
        fig.savefig(io.BytesIO(), format="png")


def serve(host: str = LOOPBACK, port: int = 0, *, open_browser: bool = True,
          tell: Callable[[str], None] = lambda line: None, data_dirs: Sequence[str | Path] | None = None) -> None:
    """Run the app until interrupted (Ctrl-C or SIGTERM); its private work folder is removed afterwards.

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
    data_dirs : sequence of path, optional
        The folders whose files the page may open by their path (default: the current folder).

    Raises
    ------
    ParameterError
        The address cannot be used, or a data folder does not exist.
    MissingExtraError
        uvicorn is not installed (the extra ``pip install "pramkit[app]"``).
    """
    from pramkit._extras import raise_missing_extra

    try:
        import uvicorn
    except ModuleNotFoundError as exc:
        raise_missing_extra(exc, "app", "the app (pramkit.app)")

    folders = data_folders(data_dirs)
    sock = listen(host, port)
    token = new_token()
    work_root = Path(tempfile.mkdtemp(prefix="pramkit-app-"))  # mode 0700
    saved_tempdir = tempfile.tempdir
    try:
        tempfile.tempdir = str(work_root)  # Shiny's uploads, too, are made inside the work folder
        address = url(host, sock.getsockname()[1], token)
        if not is_loopback(host):
            tell(f"warning: listening on {host}, not only this machine: anyone who can reach it and "
                 "learns the URL can use the app and its data")
        tell(f"pramkit app: open {address} (Ctrl-C stops it)")
        tell("files may be opened by their path from: " + ", ".join(str(f) for f in folders))
        if open_browser and graphical_browser():
            threading.Thread(target=webbrowser.open, args=(address,), daemon=True).start()
        app = create_app(work_root, token, data_dirs=folders, hosts=[host])
        threading.Thread(target=warm_figures, daemon=True).start()
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
        with _stopped_by_signals():
            uvicorn.Server(config).run(sockets=[sock])
    except _Stopped:
        pass
    finally:
        tempfile.tempdir = saved_tempdir
        sock.close()
        shutil.rmtree(work_root, ignore_errors=True)
