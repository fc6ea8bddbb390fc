"""Support for the app's tests: the app served by uvicorn in a background thread."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def running_app(work_root: Path, token: str, **options: Any) -> Iterator[str]:
    """The app served by uvicorn in a background thread on a free loopback port; yields its base URL.

    ``options`` go to :func:`pramkit.app.create_app` (``data_dirs`` defaults to the temporary folder,
    where the tests keep their files)."""
    import tempfile

    import uvicorn

    from pramkit.app import create_app
    from pramkit.app.serve import listen

    _fresh_reactive_lock()
    sock = listen("127.0.0.1", 0)
    options.setdefault("data_dirs", [Path(tempfile.gettempdir())])
    server = uvicorn.Server(uvicorn.Config(create_app(work_root, token, **options), log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the app did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        _fresh_reactive_lock()


def _fresh_reactive_lock() -> None:
    """Forget Shiny's process-wide reactive lock: it binds to the event loop of the first server that waited on it,
    and a later server of the same process (another test module's) would then fail on it under contention
    ("bound to a different event loop").  `pramkit app` runs one server per process."""
    from shiny.reactive import _core

    _core._reactive_environment._lock = None
