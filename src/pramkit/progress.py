"""Progress bars on a terminal, silence elsewhere, and a watcher for an application.

Long work in the library (counting, designing, perturbing, reporting) reports
its progress through :func:`progress`.  On a terminal that is a tqdm bar on
stderr; inside :func:`watching`, every update is also passed to a callback,
which an application uses to draw its own progress bar and to stop the work:
the callback raises :class:`pramkit.errors.Cancelled` and the work unwinds as
after any error (atomic outputs leave nothing half-written).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tqdm.auto import tqdm

#: ``callback(desc, done, total)``: one progress update (``total`` None when unknown).
Watcher = Callable[[str, float, "float | None"], None]

_WATCHER: contextvars.ContextVar[Watcher | None] = contextvars.ContextVar("pramkit_progress_watcher", default=None)


class _Watched(tqdm):
    """A tqdm bar that also passes each update to the watcher of its context."""

    def __init__(self, *, watcher: Watcher, desc: str, total: float | None, **kw: Any) -> None:
        self._watcher = watcher
        self._what = (desc, total)  # a disabled tqdm keeps neither
        self._done = 0.0
        super().__init__(desc=desc, total=total, **kw)
        watcher(desc, 0.0, total)

    def update(self, n: float | None = 1) -> bool | None:
        self._done += 1 if n is None else n
        shown = super().update(n)
        self._watcher(self._what[0], self._done, self._what[1])
        return shown


@contextlib.contextmanager
def watching(callback: Watcher) -> Iterator[None]:
    """Pass every progress update of the work done inside the block to ``callback``.

    The watcher belongs to the current context (:mod:`contextvars`), so it
    follows the work into ``asyncio.to_thread`` and stays out of other
    threads' work.

    Parameters
    ----------
    callback : callable
        ``callback(desc, done, total)``: the bar's label, the units done so far
        and the units expected (``None``: unknown).  Raising
        :class:`pramkit.errors.Cancelled` stops the work.

    Yields
    ------
    None

    Examples
    --------
    >>> seen = []
    >>> with watching(lambda desc, done, total: seen.append((desc, done, total))):
    ...     with progress(total=2, desc="counting", unit="rows", quiet=True) as bar:
    ...         _ = bar.update(1); _ = bar.update(1)
    >>> seen
    [('counting', 0.0, 2), ('counting', 1.0, 2), ('counting', 2.0, 2)]
    """
    token = _WATCHER.set(callback)
    try:
        yield
    finally:
        _WATCHER.reset(token)


def progress(*, total: float | None = None, desc: str = "", unit: str = "it", quiet: bool = False, **kw: Any) -> tqdm:
    """A tqdm bar on stderr, disabled when stderr is not a terminal or ``quiet`` is set.

    Inside :func:`watching`, each update also goes to the watcher (even when
    the bar itself is disabled).

    Parameters
    ----------
    total : float, optional
        The number of units expected (``None``: unknown, the bar counts up).
    desc : str
        The label shown before the bar.
    unit : str
        The unit counted (``"rows"``, ...), shown with SI prefixes.
    quiet : bool
        Show nothing, even on a terminal.
    **kw
        Passed on to :class:`tqdm.auto.tqdm`.

    Returns
    -------
    tqdm.auto.tqdm
        The bar; use it as a context manager and call ``update(n)``.  A
        disabled bar accepts the same calls and prints nothing, so code
        using it does not depend on where its output goes.

    Examples
    --------
    >>> with progress(total=3, desc="counting", unit="rows", quiet=True) as bar:
    ...     for _ in range(3):
    ...         _ = bar.update(1)
    >>> bar.disable  # quiet: nothing was printed
    True
    """
    disable = quiet or not sys.stderr.isatty()
    options = dict(total=total, desc=desc, unit=unit, disable=disable, file=sys.stderr, unit_scale=True,
                   dynamic_ncols=True, leave=False, **kw)
    watcher = _WATCHER.get()
    return tqdm(**options) if watcher is None else _Watched(watcher=watcher, **options)
