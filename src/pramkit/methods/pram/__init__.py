"""PRAM: each record's values of the perturbed variables drawn from the published matrices with a secret key.

``pramkit design`` writes the manifest (the matrices, designed under the record's budget, and the ledger);
``pramkit apply`` releases a file by it (locally or on Spark, ``--engine spark``), with a receipt beside it.
"""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.pram.fields import MANIFEST, MANIFEST_FILE, RECEIPT, RECEIPT_FILE

METHOD = ReleaseMethod(
    name="pram",
    summary="every value of the perturbed variables drawn from its row of the published matrix with the key: "
            "a local epsilon per record (and, shuffled, a central one)",
    commands=("design", "apply"),
    doors=("pramkit.release.pipeline:design_release", "pramkit.engine.perturb:apply_file"),
    specs=("pramkit.release.spec:ReleaseSpec", "pramkit.release.apply_spec:ApplySpec"),
    files=(MANIFEST_FILE, RECEIPT_FILE),
    declares={"manifest": MANIFEST, "receipt": RECEIPT},
    spark=True,
    audited="the manifest's figures recomputed from its matrices; the released file against the original through "
            "the matrices; with the key, the release made again byte for byte",
)
