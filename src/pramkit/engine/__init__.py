"""The perturbation engine: what turns a manifest and a secret key into released values.

* :mod:`~pramkit.engine.perturb` -- perturb a frame, codes or a file (atomic writes, chunks);
* :mod:`~pramkit.engine.sampling` -- the integer draws of each matrix form, on 62-bit uniforms;
* :mod:`~pramkit.engine.receipt` -- the receipt that ties a released file to its manifest;
* :mod:`~pramkit.engine.shuffle` -- the keyed shuffle of a released file and its central guarantee;
* :mod:`~pramkit.engine.spark` -- the same passes on Spark.

They stand on :mod:`pramkit.kernel` (the keyed generator, the compiled loops) and
:mod:`pramkit.privacy.law` (the law those draws realise, exactly).

The names below load on first use, so that importing one part does not import the others.

>>> from pramkit.engine import realised_law
>>> from pramkit.matrix import PramMatrix
>>> law = realised_law(PramMatrix.form8([0.75, 0.75], [0.25, 0.25]))
>>> [int(u) / 2**62 for u in law.weights(0)], law.denominator == 2**62
([0.75, 0.25], True)
"""

from typing import TYPE_CHECKING

from pramkit._lazy import lazy_exports

_EXPORTS = {
    "BITS": "pramkit.privacy.law",
    "DENOMINATOR": "pramkit.privacy.law",
    "RealisedLaw": "pramkit.privacy.law",
    "realised_law": "pramkit.privacy.law",
}

__all__ = list(_EXPORTS)


if TYPE_CHECKING:  # what type checkers read: the names below, with their types (the lazy loader is not seen)
    from pramkit.privacy.law import BITS as BITS
    from pramkit.privacy.law import DENOMINATOR as DENOMINATOR
    from pramkit.privacy.law import RealisedLaw as RealisedLaw
    from pramkit.privacy.law import realised_law as realised_law
else:
    _lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
    __getattr__ = _lazy_getattr
