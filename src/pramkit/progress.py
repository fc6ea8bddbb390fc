"""Progress bars on a terminal, silence elsewhere."""

from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm


def progress(*, total: float | None = None, desc: str = "", unit: str = "it", quiet: bool = False, **kw: Any) -> tqdm:
    """A tqdm bar on stderr, disabled when stderr is not a terminal or ``quiet`` is set."""
    disable = quiet or not sys.stderr.isatty()
    return tqdm(total=total, desc=desc, unit=unit, disable=disable, file=sys.stderr, unit_scale=True,
                dynamic_ncols=True, leave=False, **kw)
