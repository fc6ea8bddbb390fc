"""A random or targeted record swap: households exchange their geography with donors drawn with the key.

``pramkit swap`` writes the swapped file, its receipt and a manifest whose matrix is the swap's implied law
on the area (locally, or on Spark with ``--engine spark``).
"""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.swap.fields import SWAPPING

METHOD = ReleaseMethod(
    name="swap",
    summary="households' areas exchanged with donors' at a rate: a random swap has an epsilon on the area",
    commands=("swap",),
    doors=("pramkit.swap.run:swap_file",),
    specs=("pramkit.release.swap_spec:SwapSpec",),
    declares={"manifest": SWAPPING, "receipt": SWAPPING},
    spark=True,
    audited="the swap's words and epsilon regenerated from its plan; with the original and the key, the swap made "
            "again reproduces the released file",
)
