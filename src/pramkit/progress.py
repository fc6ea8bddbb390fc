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
import time
from collections.abc import Callable, Iterator
from typing import Any

from tqdm.auto import tqdm

#: ``callback(desc, done, total)``: one progress update (``total`` None when unknown).
Watcher = Callable[[str, float, "float | None"], None]

_WATCHER: contextvars.ContextVar[Watcher | None] = contextvars.ContextVar("pramkit_progress_watcher", default=None)
_WITH_UNIT: contextvars.ContextVar[bool] = contextvars.ContextVar("pramkit_progress_unit", default=False)


class _Watched(tqdm):
    """A tqdm bar that also passes each update to the watcher of its context."""

    def __init__(self, *, watcher: Watcher, desc: str, total: float | None, **kw: Any) -> None:
        self._watcher = watcher
        self._what = (desc, total)  # a disabled tqdm keeps neither
        self._unit = (str(kw.get("unit", "it")),) if _WITH_UNIT.get() else ()
        self._done = 0.0
        super().__init__(desc=desc, total=total, **kw)
        watcher(desc, 0.0, total, *self._unit)

    def update(self, n: float | None = 1) -> bool | None:
        self._done += 1 if n is None else n
        shown = super().update(n)
        self._watcher(self._what[0], self._done, self._what[1], *self._unit)
        return shown


@contextlib.contextmanager
def watching(callback: Watcher | Callable[[str, float, float | None, str], None], *,
             unit: bool = False) -> Iterator[None]:
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
    unit : bool
        Also pass the unit counted (``"rows"``, ...) as a fourth argument.

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
    token = _WATCHER.set(callback)  # type: ignore[arg-type]
    with_unit = _WITH_UNIT.set(unit)
    try:
        yield
    finally:
        _WITH_UNIT.reset(with_unit)
        _WATCHER.reset(token)


class TimeLeft:
    """Progress updates in words: the amount done of the total, in its unit, and the time left.

    The time left is the rate since the first update of the same work (its label and total),
    applied to what is left; it is said once there is a rate to go on.

    Parameters
    ----------
    clock : callable
        Seconds, monotonic (default :func:`time.monotonic`).

    Examples
    --------
    >>> now = [0.0]
    >>> words = TimeLeft(clock=lambda: now[0])
    >>> words("reading", 0, 1_000_000, "rows")
    'reading: 0 of 1,000,000 rows (0 %)'
    >>> now[0] = 2.0
    >>> words("reading", 250_000, 1_000_000, "rows")
    'reading: 250,000 of 1,000,000 rows (25 %), about 6 s left'
    >>> now[0] = 100.0
    >>> words("reading", 400_000, 1_000_000, "rows"), words("counting", 12, None, "it")
    ('reading: 400,000 of 1,000,000 rows (40 %), about 2 min 30 s left', 'counting: 12')
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._start: dict[tuple[str, float | None], tuple[float, float]] = {}

    def __call__(self, desc: str, done: float, total: float | None, unit: str = "") -> str:
        key, now = (desc, total), self._clock()
        if key not in self._start or done < self._start[key][1]:
            self._start = {key: (now, done)}
        unit = "" if unit in ("", "it") else f" {unit}"
        label = f"{desc}: " if desc else ""
        if not total:
            return f"{label}{done:,.0f}{unit}"
        text = f"{label}{done:,.0f} of {total:,.0f}{unit} ({100 * done / total:.0f} %)"
        began, at = self._start[key]
        if now > began and done > at and done < total:
            return text + f", about {_duration((total - done) * (now - began) / (done - at))} left"
        return text


def _duration(seconds: float) -> str:
    """A duration in words, rounded up: ``6 s``, ``2 min 30 s``, ``1 h 5 min``.

    Examples
    --------
    >>> _duration(5.2), _duration(150), _duration(3_900)
    ('6 s', '2 min 30 s', '1 h 5 min')
    """
    s = int(-(-seconds // 1))
    if s < 60:
        return f"{s} s"
    if s < 3_600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3_600} h {s % 3_600 // 60} min"


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
