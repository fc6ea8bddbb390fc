"""The perturbation engine: what turns a manifest and a secret key into released values.

* :mod:`~pramkit.engine.perturb` -- perturb a frame, codes or a file (atomic writes, chunks);
* :mod:`~pramkit.engine.rng` -- the secret key and the keyed Philox streams, one per variable;
* :mod:`~pramkit.engine.sampling` -- the integer draws of each matrix form, on 62-bit uniforms;
* :mod:`~pramkit.privacy.law` -- the law those draws realise, exactly;
* :mod:`~pramkit.codebook` and :mod:`~pramkit.engine.utf8` -- values to codes and back;
* :mod:`~pramkit.engine.receipt` -- the receipt that ties a released file to its manifest;
* ``pramkit.engine._kernels`` -- the compiled per-value loops.

The names below load on first use, so that importing one part does not import the others.

>>> from pramkit.engine import realised_law
>>> from pramkit.matrix import PramMatrix
>>> law = realised_law(PramMatrix.form8([0.75, 0.75], [0.25, 0.25]))
>>> [int(u) / 2**62 for u in law.weights(0)], law.denominator == 2**62
([0.75, 0.25], True)
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pramkit._lazy import lazy_exports

_EXPORTS = {
    "BITS": "pramkit.privacy.law",
    "DENOMINATOR": "pramkit.privacy.law",
    "RealisedLaw": "pramkit.privacy.law",
    "realised_law": "pramkit.privacy.law",
}

__all__ = list(_EXPORTS)


def _with_kernel(lazy: Callable[[str], Any]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: the lazy names, and the compiled ``_kernels`` or an error in one line where
    it is not installed (``from pramkit.engine import _kernels`` asks here before it imports the submodule)."""

    def getattr_(name: str) -> Any:
        if name != "_kernels":
            return lazy(name)
        import importlib

        try:
            return importlib.import_module(f"{__name__}._kernels")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}._kernels":
                raise
        from pramkit.errors import KernelMissingError

        raise KernelMissingError(
            "pramkit's compiled kernel (pramkit.engine._kernels) is not installed: install a wheel for this "
            "platform (pip install pramkit), or build from the sources with a C compiler "
            "(pip install --no-binary pramkit pramkit, or pip install -e . in a checkout)")

    return getattr_


if TYPE_CHECKING:  # what type checkers read: the names below, with their types (the lazy loader is not seen)
    from pramkit.privacy.law import BITS as BITS
    from pramkit.privacy.law import DENOMINATOR as DENOMINATOR
    from pramkit.privacy.law import RealisedLaw as RealisedLaw
    from pramkit.privacy.law import realised_law as realised_law
else:
    _lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
    __getattr__ = _with_kernel(_lazy_getattr)
