"""Public names that a package loads on first use, so that importing it stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any],
                 eager: tuple[str, ...] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names are imported from
    their modules on first use (PEP 562), then kept in the package's ``namespace``.

    Parameters
    ----------
    package : str
        The package's name, for the error of an unknown attribute.
    exports : mapping
        Public name -> the module that defines it (a full dotted name).
    namespace : dict
        The package's ``globals()``.
    eager : tuple of str
        Public names the package defines itself, listed by ``__dir__`` too.

    Returns
    -------
    (callable, callable)
        ``__getattr__(name)`` and ``__dir__()``.

    Examples
    --------
    >>> ns = {}
    >>> getattr_, dir_ = lazy_exports("demo", {"sqrt": "math"}, ns)
    >>> getattr_("sqrt")(9.0), "sqrt" in ns, dir_()
    (3.0, True, ['sqrt'])
    >>> getattr_("cbrt")
    Traceback (most recent call last):
    ...
    AttributeError: module 'demo' has no attribute 'cbrt'
    """
    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*exports, *eager})

    return getattr_, dir_
