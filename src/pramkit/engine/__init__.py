"""The perturbation engine's law: what the draws realise, exactly (:mod:`pramkit.engine.law`).

>>> from pramkit.engine import realised_law
>>> from pramkit.matrix import PramMatrix
>>> law = realised_law(PramMatrix.form8([0.75, 0.75], [0.25, 0.25]))
>>> [int(u) / 2**62 for u in law.weights(0)], law.denominator == 2**62
([0.75, 0.25], True)
"""

from pramkit.engine.law import BITS, DENOMINATOR, RealisedLaw, realised_law

__all__ = ["BITS", "DENOMINATOR", "RealisedLaw", "realised_law"]
