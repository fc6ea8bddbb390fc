"""The fields a derived release adds to PRAM's public files: the manifest it was derived from, and the
first step of each variable, the parent's matrix (``pramkit design --derive-from``)."""

from __future__ import annotations

from pramkit.methods.contract import PublicField, fields
from pramkit.methods.pram.fields import D, R, matrix_fields

#: The manifest's fields of a derived release.
MANIFEST: tuple[PublicField, ...] = fields([
    ("input.derived_from", R, "parent", "the manifest this one was derived from (its file name, beside it)"),
    ("ledger.derived_from.manifest", R, "parent", "the manifest derived from: the file beside this one"),
    ("ledger.derived_from.sha256", R, "parent", "that manifest's SHA-256, recomputed"),
    ("ledger.derived_from.record_epsilon", R, "parent", "that manifest's record epsilon"),
    *matrix_fields("variables[*].applied_to", "the first step of a derived variable", "parent"),
])

#: The receipt's fields of a derived release: the receipt of the file it perturbed.
RECEIPT: tuple[PublicField, ...] = fields([
    ("input_release", D, "input release", "the receipt of the file this release perturbed (a derived "
                                          "release): the original's receipt, read again"),
])
