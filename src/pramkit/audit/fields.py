"""Every field of every public file pramkit writes, declared once with how the audit checks it.

A public file is a JSON object: the manifest of a PRAM release (plain, joint, stratified, derived, or a
random swap's), the receipt beside a released file (with the shuffled guarantees of ``apply --shuffle``,
or the ``post_processing`` of ``pramkit resample``) and the manifest of ``pramkit synthesize``.  Each of
its fields is named by a path pattern (``variables[*].q``: ``[*]`` any item of a list, ``*`` any
key of an object) with one of three kinds:

* ``recomputed`` -- recomputed from the public files (the manifest, the receipt, the released file) and
  compared;
* ``rederived`` -- derived again from the original and the key (``--original``, ``--key-file``): the
  release made again, a noisy table drawn again from the original's exact table and the key's noise;
* ``free_text`` -- documentation (when the file was written, by which version, how long a step took):
  no reader draws a claim from it, and the audit ignores it.

Each release method declares the fields it publishes, in its package (:mod:`pramkit.methods`); this
module is the audit's view of them: :data:`FILES` maps a kind of public file to the declarations of every
method that writes it.  The audit walks the published JSON: a field that no pattern declares fails, and
each declared field is checked by the check its declaration names (:mod:`pramkit.audit.declared`).
:func:`field_table` renders them as the table of docs/audit.md.

Examples
--------
>>> f = PublicField("variables[*].epsilon", "recomputed", "regenerated", "the variable's epsilon")
>>> f.matches(("variables", 2, "epsilon")), path_text(("variables", 2, "epsilon"))
(True, 'variables[2].epsilon')
>>> FILES["synthesis manifest"] == SYNTHESIS
True
"""

from __future__ import annotations

from collections.abc import Iterator

from pramkit.methods import declared_fields, field_table, public_files
from pramkit.methods.contract import KINDS, PublicField, path_text, split_path, walk

__all__ = ["FILES", "KINDS", "MANIFEST", "RECEIPT", "RESAMPLE_RECEIPT", "SYNTHESIS", "PublicField", "declared",
           "field_table", "path_text", "split_path", "walk"]

#: Each kind of public file and its declarations, from every method that writes it.
FILES: dict[str, tuple[PublicField, ...]] = {kind: declared_fields(kind) for kind in public_files()}
#: The manifest of a PRAM release (plain, joint, stratified, derived, a swap's).
MANIFEST = FILES["manifest"]
#: The receipt beside a released file.
RECEIPT = FILES["receipt"]
#: The receipt of a resampled file.
RESAMPLE_RECEIPT = FILES["resample receipt"]
#: The manifest of a synthesized release.
SYNTHESIS = FILES["synthesis manifest"]


def declared(kind: str) -> Iterator[PublicField]:
    """The declarations of one kind of public file (:data:`FILES`).

    Examples
    --------
    >>> sum(1 for f in declared("receipt") if f.kind == "free_text")
    1
    """
    yield from FILES[kind]
