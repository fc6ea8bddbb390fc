"""The library's warnings during one step of the workbench, kept for the step's view.

A step of :class:`pramkit.workbench.Workbench` runs the library, which says what the officer should know
without stopping (a :class:`pramkit.errors.PramkitWarning`, an
:class:`pramkit.estimate.EstimationWarning`: a singular matrix behind the estimates, the temporary files of
an interrupted export removed).  On the command line each is a note line; in an application the step's view carries them
(its ``warnings``), so that the page shows them beside the step's result, after a reload or an undo too.

:func:`heard` collects them for the thread that runs the step only: an application runs the steps of
several browser tabs in worker threads at once, and :func:`warnings.catch_warnings` is not thread-safe (it
swaps the process's hook, so two steps at once would lose or steal each other's warnings).  The hook
installed on first use passes every other warning, and the library's outside a step, to the hook it
replaced; the library's warnings are then shown each time they are raised (not once per place), as the
command line shows them.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from pramkit.errors import PramkitWarning
from pramkit.estimate.result import EstimationWarning

#: The warnings a step keeps: the library's own.
LIBRARY = (PramkitWarning, EstimationWarning)

_local = threading.local()
_install = threading.Lock()
_installed: list[Any] = []  # the hook replaced, once the workbench's is installed


def _show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
          line: str | None = None) -> None:
    """The process's warning hook: a warning of the library within :func:`heard` joins the step's list."""
    heard: list[str] | None = getattr(_local, "heard", None)
    if heard is not None and issubclass(category, LIBRARY):
        text = " ".join(str(message).split())
        if text not in heard:  # once per step: a warning raised for each chunk is one fact
            heard.append(text)
        return
    _installed[0](message, category, filename, lineno, file, line)


def _ensure_installed() -> None:
    """The hook, and the library's warnings shown each time (again if a ``catch_warnings`` block put back
    the hook or the filters it found)."""
    with _install:
        if warnings.showwarning is not _show:
            _installed[:] = [warnings.showwarning]
            warnings.showwarning = _show
        for category in LIBRARY:
            if ("always", None, category, None, 0) not in warnings.filters[:len(LIBRARY)]:
                warnings.filterwarnings("always", category=category)


@contextlib.contextmanager
def heard() -> Iterator[list[str]]:
    """The library's warnings raised in this thread within the block, each once, in the order raised.

    Yields
    ------
    list of str
        Filled as the block runs (each message on one line); a block within another has its own list.

    Examples
    --------
    >>> import warnings
    >>> with heard() as said:
    ...     warnings.warn("a stratum has a single PSU", PramkitWarning)
    ...     warnings.warn("a stratum has a single PSU", PramkitWarning)
    ...     warnings.warn("the matrix is singular", EstimationWarning)
    >>> said
    ['a stratum has a single PSU', 'the matrix is singular']
    """
    _ensure_installed()
    outer = getattr(_local, "heard", None)
    said: list[str] = []
    _local.heard = said
    try:
        yield said
    finally:
        _local.heard = outer
