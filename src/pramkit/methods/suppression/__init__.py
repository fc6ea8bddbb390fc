"""Local suppression: key values made missing until every combination of the key variables is shared by k records
(``pramkit suppress``); the receipt states only what the released file shows."""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.suppression.fields import RECEIPT, RECEIPT_FILE

METHOD = ReleaseMethod(
    name="suppression",
    summary="key values suppressed until every combination of the keys appears k times: k-anonymity, no epsilon",
    commands=("suppress",),
    doors=("pramkit.suppress:suppress_file",),
    specs=(None,),
    files=(RECEIPT_FILE,),
    declares={"suppression receipt": RECEIPT},
    audited="k-anonymity recomputed on the released file; its name, rows and digest recomputed; the guarantee "
            "regenerated",
)
