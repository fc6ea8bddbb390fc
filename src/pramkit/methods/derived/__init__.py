"""A release derived from another: a public-use file made by perturbing a scientific-use release again.

``pramkit design --derive-from SUF.json`` writes the second step's manifest, which shows the first step's
matrices; ``pramkit apply`` releases the scientific-use file by it.
"""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.derived.fields import MANIFEST, RECEIPT

METHOD = ReleaseMethod(
    name="derived",
    summary="a released file perturbed again by a second design: its record epsilon includes the first release's",
    commands=("design", "apply"),
    doors=("pramkit.release.derive:derive_release", "pramkit.engine.perturb:apply_file"),
    specs=(None, "pramkit.release.apply_spec:ApplySpec"),
    declares={"manifest": MANIFEST, "receipt": RECEIPT},
    spark=True,
    audited="as PRAM, with the parent manifest beside it: its matrices and digest checked against the first step",
)
