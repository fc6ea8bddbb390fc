"""Optional dependencies: which extra of ``pip install "pramkit[EXTRA]"`` installs which module.

A module of pramkit that needs an optional dependency imports it inside ``try`` and, when it
is missing, calls :func:`raise_missing_extra`: the user reads which extra to install instead
of a bare ``ModuleNotFoundError``.  A workflow that needs one only at its end (a report's
figures) calls :func:`require_extra` first, so that it stops before any work.
"""

from __future__ import annotations

import importlib
from typing import NoReturn

from pramkit.errors import MissingExtraError

#: Each extra of pyproject.toml that a user installs -> the top-level modules it brings (import names).
EXTRAS: dict[str, tuple[str, ...]] = {
    "polars": ("polars",),
    "sklearn": ("sklearn",),
    "spark": ("pyspark", "py4j"),
    "app": ("shiny", "uvicorn", "starlette", "jinja2"),
    "report": ("matplotlib",),
    "pgm": ("mbi", "jax", "jaxlib"),
}


def raise_missing_extra(exc: ModuleNotFoundError, extra: str, feature: str) -> NoReturn:
    """Raise :class:`~pramkit.errors.MissingExtraError` naming ``extra`` if ``exc`` is about one of its modules.

    A missing module the extra does not install is not the user's to fix by installing it
    (a bug, or a broken environment): ``exc`` is raised again as it is.

    Parameters
    ----------
    exc : ModuleNotFoundError
        What the import raised.
    extra : str
        The extra that installs the module (a key of :data:`EXTRAS`).
    feature : str
        What needs it, for the message ("the scikit-learn transformer").

    Raises
    ------
    MissingExtraError
        ``exc`` names a module of ``extra``: the message says ``pip install "pramkit[EXTRA]"``.
    ModuleNotFoundError
        ``exc`` itself, about another module.

    Examples
    --------
    >>> raise_missing_extra(ModuleNotFoundError("No module named 'shiny'", name="shiny.ui"), "app", "the app")
    Traceback (most recent call last):
    ...
    pramkit.errors.MissingExtraError: the app needs shiny, which is not installed: pip install "pramkit[app]"
    >>> raise_missing_extra(ModuleNotFoundError("No module named 'pramkit.nothing'", name="pramkit.nothing"),
    ...                     "app", "the app")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: No module named 'pramkit.nothing'
    """
    top = (exc.name or "").partition(".")[0]
    if top not in EXTRAS[extra]:
        raise exc
    raise MissingExtraError(f'{feature} needs {top}, which is not installed: pip install "pramkit[{extra}]"') from None


def require_extra(extra: str, feature: str) -> None:
    """Import the modules of ``extra`` now; raise :class:`~pramkit.errors.MissingExtraError` if one is missing.

    Parameters
    ----------
    extra : str
        The extra (a key of :data:`EXTRAS`).
    feature : str
        What needs it, for the message ("the HTML report").

    Raises
    ------
    MissingExtraError
        A module of ``extra`` is not installed: the message says ``pip install "pramkit[EXTRA]"``.

    Examples
    --------
    >>> require_extra("report", "the HTML report")      # matplotlib is installed here: nothing happens
    >>> import sys
    >>> saved = sys.modules.get("matplotlib")
    >>> sys.modules["matplotlib"] = None                  # as if it were not installed
    >>> try:
    ...     require_extra("report", "the HTML report")
    ... finally:
    ...     sys.modules["matplotlib"] = saved
    Traceback (most recent call last):
    ...
    pramkit.errors.MissingExtraError: the HTML report needs matplotlib, which is not installed: pip install "pramkit[report]"
    """
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise_missing_extra(exc, extra, feature)
