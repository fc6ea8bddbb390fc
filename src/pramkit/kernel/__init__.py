"""The kernel: the compiled loops and what every floor above draws with.

* :mod:`~pramkit.kernel.rng` -- the secret key and the keyed Philox streams, one per variable;
* :mod:`~pramkit.kernel.utf8` -- text values to codes and back (with :mod:`pramkit.codebook`);
* ``pramkit.kernel._kernels`` -- the compiled per-value loops (C, ``_kernels.c``).

The package imports nothing until a name is asked for; where the compiled loops are not installed,
``from pramkit.kernel import _kernels`` raises :class:`pramkit.errors.KernelMissingError`, which says in
one line how to install them.

>>> from pramkit.kernel import _kernels
>>> _kernels.__name__
'pramkit.kernel._kernels'
"""

from typing import Any


def __getattr__(name: str) -> Any:
    """The compiled ``_kernels``, or an error in one line where it is not installed (``from pramkit.kernel
    import _kernels`` asks here before it imports the submodule)."""
    if name != "_kernels":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        return importlib.import_module(f"{__name__}._kernels")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}._kernels":
            raise
    from pramkit.errors import KernelMissingError

    raise KernelMissingError(
        "pramkit's compiled kernel (pramkit.kernel._kernels) is not installed: install a wheel for this "
        "platform (pip install pramkit), or build from the sources with a C compiler "
        "(pip install --no-binary pramkit pramkit, or pip install -e . in a checkout)")
