"""The browser workbench (``pramkit app``): a release step by step, on a local web page.

The page (:mod:`pramkit.app.ui`) has one tab per step: the data, the risk, the
design, the perturbation, the export.  The server (:mod:`pramkit.app.server`)
only parses the fields, calls :mod:`pramkit.workbench` and shows its results;
every statistic comes from the library.  The app listens on the loopback
interface behind a random token (:mod:`pramkit.app.auth`); :func:`pramkit.app.serve.serve`
starts it.  It needs the extra ``pip install "pramkit[app]"`` (Shiny for Python
and uvicorn).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def create_app(work_root: str | Path, token: str, *, data_dirs: Sequence[str | Path] | None = None,
               hosts: Iterable[str] = (), expire_after: float | None = None) -> Any:
    """The ASGI application: the page and its server behind the token gate.

    Parameters
    ----------
    work_root : str or Path
        A private folder; each browser session works in a new folder inside it.
    token : str
        The secret of the URL (:func:`pramkit.app.auth.new_token`).
    data_dirs : sequence of path, optional
        The folders whose files the page may open by their path (default: the current folder).
    hosts : iterable of str
        Further names of the app's host a request may give (:class:`pramkit.app.auth.TokenGate`).
    expire_after : float, optional
        Seconds a closed tab's release is kept for a reload of the tab
        (default :data:`pramkit.app.server.EXPIRE_AFTER`).

    Returns
    -------
    pramkit.app.auth.TokenGate
        An ASGI application (for uvicorn, or Starlette's test client).

    Raises
    ------
    MissingExtraError
        Shiny is not installed (the extra ``pip install "pramkit[app]"``).

    Examples
    --------
    >>> import tempfile
    >>> app = create_app(tempfile.gettempdir(), "t0k")
    >>> type(app).__name__, type(app.app).__name__
    ('TokenGate', 'App')
    """
    from pramkit._extras import raise_missing_extra

    try:
        from shiny import App
    except ModuleNotFoundError as exc:
        raise_missing_extra(exc, "app", "the app (pramkit.app)")

    from pramkit.app.auth import TokenGate
    from pramkit.app.server import EXPIRE_AFTER, make_server
    from pramkit.app.ui import page

    folders = [Path.cwd()] if data_dirs is None else [Path(d) for d in data_dirs]
    server = make_server(Path(work_root), data_dirs=folders,
                         expire_after=EXPIRE_AFTER if expire_after is None else expire_after)
    return TokenGate(App(page(), server), token, hosts=hosts)
