"""Where the workbench keeps what it makes, inside its private work folder.

* ``original/``: the built-in census or an uploaded file (exported into ``private/``);
* ``inputs/``: the files the design read (rules, prior, codebook; exported into ``private/inputs/``);
* ``release/``: the manifest, design record, released file and receipt of the release applied.
"""

from __future__ import annotations

#: The work folder's sub-folders.
ORIGINAL, INPUTS, RELEASE = "original", "inputs", "release"

#: Choices whose value is a file the design reads -> its name in ``inputs/``.
INPUT_FILES = {"forbid": "rules.csv", "prior": "prior.csv", "categories": "codebook.csv"}
