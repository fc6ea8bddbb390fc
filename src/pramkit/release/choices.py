"""The settings of a release design, as ``pramkit design`` takes them: :class:`DesignChoices`.

:class:`DesignChoices` is :class:`pramkit.release.spec.ReleaseSpec`, the one declaration of
the design's settings, under the name the application and saved sessions use.

Examples
--------
>>> DesignChoices(epsilon=3.0, split="joint", strata="race").to_args()
['--epsilon', '3.0', '--strata', 'race', '--split', 'joint']
>>> DesignChoices is ReleaseSpec
True
"""

from __future__ import annotations

from pramkit.release.spec import DERIVE_FLAGS, FAMILY_OPTIONS, ReleaseSpec, combinations, per_variable

#: The design's settings (the same class as :class:`pramkit.release.spec.ReleaseSpec`).
DesignChoices = ReleaseSpec

__all__ = ["DERIVE_FLAGS", "FAMILY_OPTIONS", "DesignChoices", "ReleaseSpec", "combinations", "per_variable"]
