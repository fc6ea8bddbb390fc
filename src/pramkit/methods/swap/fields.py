"""The fields a random swap adds to PRAM's public files: the description of the swap, in the manifest and
in the receipt (``pramkit swap``)."""

from __future__ import annotations

from pramkit.methods.contract import PublicField, fields
from pramkit.methods.pram.fields import D, R

#: The description of a swap (the manifest's and the receipt's ``swapping``).
SWAPPING: tuple[PublicField, ...] = fields((
    ("swapping.guarantee", R, "swap", "the swap's guarantee sentence, regenerated from the plan"),
    ("swapping.epsilon", R, "swap", "the swap's epsilon: the manifest's, recomputed from its matrix"),
    ("swapping.epsilon_given_*", R, "swap", "the swap's epsilon within the level above, recomputed"),
    ("swapping.areas", R, "swap", "the areas of the lowest level: the manifest's categories of the variable"),
    *((f"swapping.{name}", D, "swap plan", f"the swap's {doc}: the swap made again with the key from the "
                                            "original reproduces the released file")
      for name, doc in (("household_id", "household id column"), ("levels", "levels of the geography"),
                        ("rate", "rate"), ("k_anonymity", "k-anonymity threshold"),
                        ("risk_variables", "risk variables"), ("similar", "similarity profiles"),
                        ("donors", "donor rule"))),
    ("swapping.*", R, "swap", "the swap's words (method, semantics, donor rule, variable): regenerated from "
                               "its plan"),
))
