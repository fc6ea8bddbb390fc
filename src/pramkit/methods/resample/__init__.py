"""Resampling: a PRAM release post-processed into records drawn from a model fitted to the release alone
(``pramkit resample``): its guarantee is the release's."""

from __future__ import annotations

from pramkit.methods.contract import ReleaseMethod
from pramkit.methods.resample.fields import RECEIPT, RECEIPT_FILE

METHOD = ReleaseMethod(
    name="resample",
    summary="records drawn from a tree model fitted to a PRAM release: post-processing, the release's epsilon",
    commands=("resample",),
    doors=("pramkit.resample:resample_release",),
    specs=(None,),
    files=(RECEIPT_FILE,),
    declares={"resample receipt": RECEIPT},
    audited="its receipt tied to the release's by digest; the release audited in its place",
)
