"""The library's messages in a page's words: its fields instead of the command line's flags, the officer's
file names instead of the workbench's private paths.

An error of the library is written for the command line (``--epsilon``, a file's path); an application
shows it after :func:`page_words`, which names the field a flag sets (:data:`FIELDS`) and each file of
the work folder by what it is to the officer (the name of the file uploaded, "the edit rules file").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

#: A flag of the command line -> the page's field that sets it.
FIELDS: dict[str, str] = {
    "--epsilon": "the field Record budget",
    "--split": "the field Budget split",
    "--method": "the field Method",
    "--objective": "the field Method",
    "--forbid": "the edit rules file",
    "--strata": "the field Strata",
    "--keep-codes": "the field Kept codes",
    "--household-vars": "the field Household variables",
    "--household": "the field Household id",
    "--prior": "the public frequencies file",
    "--categories": "the codebook",
    "--missing": "the field Missing values",
    "--na-values": "the field Texts meaning missing",
    "--sep": "the field CSV field separator",
    "--encoding": "the field CSV character encoding",
    "--key-file": "the key file",
    "--keys": "the field Key variables",
    "--sampling-fraction": "the field Sampling fraction",
    "--weights": "the field Weights",
    "--vars": "the field Variables to perturb",
    "--out": "the output folder",
    "--manifest": "the manifest",
    "--force": "another output folder",
}

#: A command of the command line that is not a step of the page -> what the page does instead.
COMMANDS: dict[str, str] = {"keygen": "Generate a key (step 4)", "estimate": "the estimation of step 4 (Apply)"}

#: Phrases of the library's messages that name flags together, as the page says them.
PHRASES: dict[str, str] = {
    "(objective 'variance', --objective variance of --method dp)":
        "(the Method 'DP: the least variance of the estimates')",
}

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")
_COMMAND = re.compile(r"`pramkit ([a-z]+)[^`]*`")


def page_words(message: str, *, hidden: Iterable[str | Path] = (), names: Mapping[str | Path, str] | None = None) -> str:
    """``message`` with each flag named by its field and no path inside the ``hidden`` folders.

    Parameters
    ----------
    message : str
        A library error's message.
    hidden : iterable of path
        Private folders (the app's work folder): a path inside one is shown by ``names``, else by
        its file name.
    names : mapping, optional
        Path -> how the page names it (the officer's upload by its name, an input file by what it is).

    Returns
    -------
    str

    Examples
    --------
    >>> page_words("file '/w/s1/original/survey.csv' is not utf-8 text; give its encoding with --encoding",
    ...            hidden=["/w"], names={"/w/s1/original/survey.csv": "survey 2026.csv"})
    "file 'survey 2026.csv' is not utf-8 text; give its encoding with the field CSV character encoding"
    >>> page_words("rule 2 of /w/s1/inputs/rules.csv: 'x' is not a category; see `pramkit design --help`",
    ...            hidden=["/w"])
    "rule 2 of rules.csv: 'x' is not a category; see the Design step's fields"
    >>> page_words("use --exact-frequencies or make one with `pramkit keygen FILE`")
    'use the method option exact_frequencies or make one with Generate a key (step 4)'
    >>> page_words("design with the variance-minimising objective (objective 'variance', --objective variance "
    ...            "of --method dp)")
    "design with the variance-minimising objective (the Method 'DP: the least variance of the estimates')"
    >>> page_words("so `pramkit estimate` falls back to maximum likelihood")
    'so the estimation of step 4 (Apply) falls back to maximum likelihood'
    """
    known = {str(k): v for k, v in (names or {}).items()}
    for phrase, words in PHRASES.items():
        message = message.replace(phrase, words)
    for path in sorted(known, key=len, reverse=True):
        message = message.replace(path, known[path])
    for folder in sorted({str(Path(f)) for f in hidden}, key=len, reverse=True):
        message = re.sub(re.escape(folder) + r"(?:/[^\s'\",;:)]*)?", lambda m: Path(m.group(0)).name, message)
    message = _COMMAND.sub(lambda m: COMMANDS.get(m.group(1), f"the {m.group(1).capitalize()} step's fields"),
                           message)
    return _FLAG.sub(lambda m: FIELDS.get(m.group(0), f"the method option {m.group(1).replace('-', '_')}"), message)
