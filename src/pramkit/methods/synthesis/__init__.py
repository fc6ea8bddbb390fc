"""Synthesis: records drawn from a model fitted to noisy tables of the original, each table's epsilon in the
ledger (``pramkit synthesize``)."""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.synthesis.fields import MANIFEST, MANIFEST_FILE

METHOD = ReleaseMethod(
    name="synthesis",
    summary="synthetic records drawn from noisy one- and two-way tables, or from a graphical model over 1- to "
            "3-way tables chosen under the budget (model pgm): a central epsilon for the file",
    commands=("synthesize",),
    doors=("pramkit.synthesize:synthesize_release",),
    specs=(None,),
    files=(MANIFEST_FILE,),
    declares={"synthesis manifest": MANIFEST},
    audited="the tables' shapes and epsilons recomputed; with the original and the key, the release synthesized "
            "again and every field compared",
)
