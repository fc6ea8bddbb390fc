"""Progress bars on a terminal, silence elsewhere."""

from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm


def progress(*, total: float | None = None, desc: str = "", unit: str = "it", quiet: bool = False, **kw: Any) -> tqdm:
    """A tqdm bar on stderr, disabled when stderr is not a terminal or ``quiet`` is set.

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
    return tqdm(total=total, desc=desc, unit=unit, disable=disable, file=sys.stderr, unit_scale=True,
                dynamic_ncols=True, leave=False, **kw)
