"""Where the workbench keeps what it makes, inside its private work folder.

* ``original/``: the built-in census or an uploaded file (exported into ``private/``);
* ``inputs/``: the files the design read (rules, prior, codebook; exported into ``private/inputs/``);
* ``recoded/``: the file recoded before PRAM (:meth:`pramkit.workbench.Workbench.recoding`; exported into
  ``private/``), its map in ``inputs/`` (:data:`RECODE_MAP`);
* ``suppressed/N/``: the file made k-anonymous by local suppression, with its receipt
  (:meth:`pramkit.workbench.Workbench.suppress`; exported into ``private/`` where ``pramkit suppress`` writes them);
* ``release/``: the manifest, design record, released file and receipt of the release applied.
"""

from __future__ import annotations

#: The work folder's sub-folders.
ORIGINAL, INPUTS, RELEASE = "original", "inputs", "release"

#: The recoded copy's folder and the recoding map's name in ``inputs/``.
RECODED, RECODE_MAP = "recoded", "recode.json"

#: The suppressed copies' folder (one sub-folder per suppression run, so the copy keeps the name the script's
#: ``pramkit suppress`` gives it).
SUPPRESSED = "suppressed"

#: Choices whose value is a file the design reads -> its name in ``inputs/``.
INPUT_FILES = {"forbid": "rules.csv", "prior": "prior.csv", "categories": "codebook.csv", "recoded_by": "recode.json"}
