"""Random identifiers: a grouping column (a household id) replaced by keyed random ids and the rows shuffled
(``pramkit new-ids``); the receipt states only what the released file shows."""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.ids.fields import RECEIPT, RECEIPT_FILE

METHOD = ReleaseMethod(
    name="ids",
    summary="a grouping column replaced by keyed random ids and the rows put in a keyed order: no epsilon",
    commands=("new-ids",),
    doors=("pramkit.engine.ids:new_ids_file",),
    specs=(None,),
    files=(RECEIPT_FILE,),
    declares={"new-ids receipt": RECEIPT},
    audited="the ids and the order recounted in the released file; its name, rows and digest recomputed; the "
            "guarantee regenerated; with the original, the same records; with the key, derived again byte for byte",
)
