"""Attack figures beside the guarantee: :func:`pramkit.risk.attack.attack` run on the applied release against the
file it was made from, in plain words (:func:`pramkit.risk.attack_words.attack_sentences`).

The figures come from the original: they are private, shown in the app and never written to ``public/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pramkit.errors import ParameterError


@dataclass(frozen=True)
class AttackView:
    """The attack's sentences (private), with the columns the attacker knows and what was not computed.

    Parameters
    ----------
    known : tuple of str
        The columns the attacker knows.
    sentences : tuple of str
        The figures in plain words, each against its baseline.
    notes : tuple of str
        What the attack did not compute, and why.
    key_fingerprint : str
        The release the attack was run on (its key's fingerprint): a release applied again needs a new attack.

    Examples
    --------
    >>> AttackView(("age",), ("An attacker ...",), (), "ab12").known
    ('age',)
    """

    known: tuple[str, ...]
    sentences: tuple[str, ...]
    notes: tuple[str, ...]
    key_fingerprint: str


def attack_view(original: Path, released: Path, known: Sequence[str], reading: dict[str, Any], *,
                manifest: Path | None, key_fingerprint: str, note: str = "") -> AttackView:
    """Run :func:`pramkit.risk.attack.attack` on ``released`` against ``original`` (both read as the workbench
    reads its file), knowing ``known``, every other column a target.

    Parameters
    ----------
    original, released : pathlib.Path
        The file the release was made from and the released file (same columns, same records in order).
    known : sequence of str
        The columns the attacker knows (at least one).
    reading : dict
        How the files are read (``na_values``, ``sep``, ``encoding``).
    manifest : pathlib.Path or None
        The release's manifest: adds the Bayes ceiling of each perturbed target (None: none).
    key_fingerprint : str
        The applied release's key fingerprint.
    note : str
        Why there is no manifest (said with the sentences).

    Returns
    -------
    AttackView

    Raises
    ------
    ParameterError
        No known column, or one not in the files (one line).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d, "a.csv")
    ...     _ = f.write_text("age,job\\n20,a\\n20,a\\n60,b\\n60,c\\n")
    ...     view = attack_view(f, f, ["age"], {}, manifest=None, key_fingerprint="ab")
    >>> view.sentences[0]
    'An attacker who knows age guesses job right for 75 % of people, against 50 % from the published margins alone.'
    """
    from pramkit.io import read_table
    from pramkit.manifest import Manifest
    from pramkit.risk.attack import attack
    from pramkit.risk.attack_words import attack_sentences

    known = [str(k) for k in known if str(k).strip()]
    if not known:
        raise ParameterError("choose at least one column the attacker knows")
    o, r = read_table(original, **reading), read_table(released, **reading)
    result = attack(o, r, known, None, None if manifest is None else Manifest.read(manifest))
    notes = tuple(result.notes) + ((note,) if note else ())
    return AttackView(tuple(known), tuple(attack_sentences(result)), notes, key_fingerprint)


__all__ = ["AttackView", "attack_view"]
