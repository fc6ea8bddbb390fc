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
