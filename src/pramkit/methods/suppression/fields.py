"""The fields of the receipt of a release by local suppression (``pramkit suppress``): only what the released
file shows -- the keys, k, the rule for a missing value, the strata, the released file's name, rows and
SHA-256, and the guarantee sentence made from them.  The counts of suppressions are private."""

from __future__ import annotations

from pramkit.methods.contract import PublicField, PublicFile, fields
from pramkit.methods.pram.fields import R

#: The receipt beside a file released by local suppression.
RECEIPT_FILE = PublicFile(
    "suppression receipt", "pramkit.suppression", "pramkit suppression receipt",
    "The public receipt of a file released by local suppression to k-anonymity: the key variables, k, the rule "
    "for a missing value and the released file it holds for; every figure is recomputed from the released file.",
    shape=(("keys", "array"), ("released", "object"), ("guarantee", "string")),
    version=1, audit="pramkit.audit:audit_suppression")

#: Its fields.
RECEIPT: tuple[PublicField, ...] = fields([
    ("format", R, "constant", "the file's kind: 'pramkit.suppression'"),
    ("version", R, "constant", "the suppression receipt's format version"),
    ("keys", R, "k-anonymity", "the key variables: columns of the released file, every combination of them "
                               "counted in it (a missing value is an empty field), as the guarantee names them"),
    ("k", R, "k-anonymity", "the k of k-anonymity: every record's frequency in the released file, recomputed, is "
                            "at least k"),
    ("missing", R, "k-anonymity", "the rule for a missing value ('any': it matches any value; 'own': a value of "
                                  "its own), the frequencies counted by it"),
    ("strata", R, "k-anonymity", "the stratum columns: columns of the released file, k-anonymity counted within "
                                 "each"),
    ("guarantee", R, "suppression guarantee", "the guarantee sentence, regenerated from the keys, k, the rule and "
                                              "the strata"),
    ("released.file", R, "released name", "the released file's name"),
    ("released.sha256", R, "released digest", "the released file's SHA-256, recomputed"),
    ("released.rows", R, "released rows", "the released file's rows, counted"),
])
