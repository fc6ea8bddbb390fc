"""The fields of a resampled file's receipt (``pramkit resample``): the receipt of the release it is
post-processing of, and how it was drawn."""

from __future__ import annotations

from pramkit.methods.contract import PublicField, PublicFile, fields
from pramkit.methods.pram.fields import RECEIPT_COMMON, F, R

#: The receipt of a resampled file.
RECEIPT_FILE = PublicFile(
    "resample receipt", "pramkit-release-receipt", "pramkit resample receipt",
    "The receipt of a file resampled from a PRAM release: the release's receipt fields, and the "
    "post-processing that made this file from it.", marker="post_processing")

#: Its fields.
RECEIPT: tuple[PublicField, ...] = fields([
    *RECEIPT_COMMON,
    ("input_release", R, "input release", "the receipt chain of the release resampled"),
    ("post_processing.method", R, "constant", "the post-processing: 'resample'"),
    ("post_processing.release", R, "parent release", "the release resampled: the file beside this one"),
    ("post_processing.release_sha256", R, "parent release", "that release's SHA-256, recomputed"),
    ("post_processing.record_epsilon", R, "parent release", "the release's record epsilon, unchanged"),
    ("post_processing.guarantee", R, "parent release", "the release's guarantee and the post-processing "
                                                        "sentence, regenerated"),
    ("post_processing.model", F, "ignored", "the model fitted to the release, in words"),
    ("post_processing.public_columns", F, "ignored", "the public columns the model read (the model is "
                                                      "post-processing whatever it reads)"),
])

