"""The fields of the receipt of a file whose grouping column was replaced by keyed random ids (``pramkit new-ids``):
only what the released file shows -- the column, the order of the rows, the number of ids, the released file's
name, rows and SHA-256, and the guarantee sentence made from them."""

from __future__ import annotations

from pramkit.methods.contract import PublicField, PublicFile, fields
from pramkit.methods.pram.fields import R

#: The receipt beside a file with new ids.
RECEIPT_FILE = PublicFile(
    "new-ids receipt", "pramkit.new-ids", "pramkit new-ids receipt",
    "The public receipt of a file whose grouping column was replaced by keyed random ids 1..H and whose rows were "
    "put in a keyed random order; every figure is recomputed from the released file.",
    shape=(("column", "string"), ("released", "object"), ("guarantee", "string")),
    version=1, audit="pramkit.audit:audit_new_ids")

#: Its fields.
RECEIPT: tuple[PublicField, ...] = fields([
    ("format", R, "constant", "the file's kind: 'pramkit.new-ids'"),
    ("version", R, "constant", "the new-ids receipt's format version"),
    ("column", R, "new ids", "the id column: a column of the released file holding the whole numbers 1 to groups, "
                             "each of them"),
    ("groups", R, "new ids", "the number of ids: the distinct values of the column in the released file"),
    ("shuffle", R, "new ids", "the order of the rows: with households or within, each id's records together and the "
                              "ids in increasing order in the released file; with the original, the order recounted; "
                              "with the key, the file derived again"),
    ("guarantee", R, "new ids guarantee", "the guarantee sentence, regenerated from the column, the ids and the order"),
    ("released.file", R, "released name", "the released file's name"),
    ("released.sha256", R, "released digest", "the released file's SHA-256, recomputed"),
    ("released.rows", R, "released rows", "the released file's rows, counted"),
])
