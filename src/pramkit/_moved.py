"""Modules that moved, importable under their former names too, so that users' scripts keep working.

:data:`MOVED` is the one table of them: a former name (a module, or a package with its submodules) -> where it
lives now.  ``import pramkit`` puts :class:`FormerNames` first on :data:`sys.meta_path` (before the finders that would
load a second copy from the package's folder); importing a former name then
gives the module itself, the same object as under its present name (its ``__name__`` and ``__spec__`` stay
those of its present name).  The package's floors (docs/architecture.md) are drawn by where the modules are,
so a folder shows its floor; the former names are a lookup, not a second copy.

>>> import importlib
>>> importlib.import_module("pramkit.engine.rng") is importlib.import_module("pramkit.kernel.rng")
True
>>> from pramkit.engine.swap.implied import random_swap_matrix
>>> random_swap_matrix.__module__
'pramkit.swap.implied'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

#: Former name -> present name.  A package's submodules follow it (``pramkit.engine.swap.census`` ->
#: ``pramkit.swap.census``).
MOVED: dict[str, str] = {
    "pramkit.engine._kernels": "pramkit.kernel._kernels",
    "pramkit.engine.rng": "pramkit.kernel.rng",
    "pramkit.engine.utf8": "pramkit.kernel.utf8",
    "pramkit.engine.swap": "pramkit.swap",
    "pramkit.engine.spark.swap": "pramkit.swap.spark",
    "pramkit.design.recognition": "pramkit.recognition",
}


def present_name(name: str) -> str | None:
    """Where the module formerly named ``name`` lives now, or None if it did not move.

    >>> present_name("pramkit.engine.swap.census"), present_name("pramkit.engine.perturb")
    ('pramkit.swap.census', None)
    """
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return None


class FormerNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The finder and loader of the former names: each gives the module under its present name."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """A spec for a former name (loaded by :meth:`create_module`), None for any other."""
        new = present_name(fullname)
        if new is None:
            return None
        present = importlib.util.find_spec(new)
        if present is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self,
                                              is_package=present.submodule_search_locations is not None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module under its present name (imported if need be)."""
        new = present_name(spec.name)
        assert new is not None
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module ran under its present name); its own spec is put back."""
        for name, spec in list(self._specs.items()):
            if spec is not None and spec.name == module.__name__:
                module.__spec__ = spec
                del self._specs[name]

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}


def install() -> None:
    """Put :class:`FormerNames` on :data:`sys.meta_path` (once)."""
    if not any(isinstance(finder, FormerNames) for finder in sys.meta_path):
        sys.meta_path.insert(0, FormerNames())
