"""The figures of ``pramkit attack`` in plain words (:class:`pramkit.risk.attack.AttackResult`).

One sentence per figure a reader needs, each with its baseline: the reconstruction of the features the
attack gains most on (against guessing each feature's most frequent released value: what the published
margins alone give), the Bayes ceiling of each perturbed target (against the prior alone), and the
linkage (unique records found, records unchanged in the release, distances against the holdout).
Private as the figures are: they come from the original.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pramkit.ledger import listed  # names as a list in a sentence, as the guarantee sentence writes them

if TYPE_CHECKING:
    from pramkit.risk.attack import AttackResult, BayesCeiling, ReconstructionResult
    from pramkit.risk.attack_linkage import LinkageResult

#: Features of the reconstruction put in words by default (those the attack gains most on).
FEATURES_IN_WORDS = 3


def percent(share: float | None) -> str:
    """A share as a percentage for a sentence: whole percents, one decimal near 0 and 100.

    Parameters
    ----------
    share : float or None
        A share in [0, 1]; None or NaN when unknown.

    Returns
    -------
    str

    Examples
    --------
    >>> [percent(x) for x in (0.6123, 0.004, 0.0, 0.9975, 1.0, None)]
    ['61 %', '0.4 %', '0 %', '99.8 %', '100 %', 'an unknown share']
    """
    if share is None or not math.isfinite(share):
        return "an unknown share"
    v = 100.0 * share
    if v in (0.0, 100.0) or 1.0 <= v <= 99.0:
        return f"{v:.0f} %"
    return f"{v:.1f} %"


def reconstruction_sentences(rec: ReconstructionResult, features: int | None = FEATURES_IN_WORDS) -> list[str]:
    """The reconstruction's features the attack gains most on, and all of them together.

    Parameters
    ----------
    rec : ReconstructionResult
        From :func:`pramkit.risk.attack.reconstruction_attack`.
    features : int or None
        The features put in words, those the attack gains most on (None: all); a sentence on all of
        them together follows when some are left out.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.attack import reconstruction_attack
    >>> o = pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "a", "b", "c"]})
    >>> reconstruction_sentences(reconstruction_attack(o, o, "age"))
    ['An attacker who knows age guesses job right for 75 % of people, against 50 % from the published margins alone.']
    """
    who = f"An attacker who knows {listed(rec.known)}"
    ranked = sorted(rec.per_feature, key=lambda f: -f.advantage)
    shown = ranked if features is None else ranked[:features]
    out = [f"{who} guesses {f.feature} right for {percent(f.accuracy)} of people, against "
           f"{percent(f.baseline)} from the published margins alone." for f in shown]
    if len(rec.per_feature) > len(shown):
        out.append(f"Over all {len(rec.per_feature)} features (those above are the {len(shown)} it gains most on) "
                   f"the attacker recovers {percent(rec.accuracy)} of the values, against {percent(rec.baseline)}; "
                   f"counting rare values more, {percent(rec.weighted_accuracy)} against "
                   f"{percent(rec.weighted_baseline)}.")
    return out


def ceiling_sentence(c: BayesCeiling, true_law: str) -> str:
    """One Bayes ceiling: the true law's (a ceiling) or an estimated prior's (the attacker's belief).

    Parameters
    ----------
    c : BayesCeiling
        From :func:`pramkit.risk.attack.bayes_ceiling`.
    true_law : str
        The prior label of the original's own table (:data:`pramkit.risk.attack.TRUE_LAW`).

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from pramkit.risk.attack import BayesCeiling
    >>> c = BayesCeiling(("y",), ("a",), "estimated (mle)", 4, 0, 1.0, 3.0, 2.0, 2, 2, 0, None, None,
    ...                  ("p", "q"), np.arange(4), np.full((4, 2), 0.5), np.full((4, 2), 0.5))
    >>> print(ceiling_sentence(c, "original"))  # doctest: +NORMALIZE_WHITESPACE
    An attacker who estimates the joint law of y and a from the release itself and reads the person's whole
    released record (nothing) believes a guess of y right for 75 % of people and is right for 50 %.
    >>> from dataclasses import replace
    >>> print(ceiling_sentence(replace(c, prior="original", conditioned_on=("y",), scope="target",
    ...                                not_conditioned_on=("z",)), "original"))  # doctest: +NORMALIZE_WHITESPACE
    Even knowing the true joint law of the file and a, and reading the person's released y only, the best guess
    of y is right for 75 % of people in expectation, against 50 % from a alone; this is no ceiling for an
    attacker who also reads z of the released record.
    """
    target, known = listed(c.target), listed(c.known)
    if c.prior == true_law:
        return (f"Even knowing the true joint law of the file and {known}, and reading the person's "
                f"{_reads(c)}, the best guess of {target} is right for {percent(c.share)} of people in expectation, "
                f"against {percent(c.baseline_share)} from {listed((*c.known, *c.given_exactly))} alone"
                f"{_unbounded(c)}.")
    realised = None if c.realised_correct is None or not c.records else c.realised_correct / c.records
    belief = (f"An attacker who estimates the joint law of {target} and {known} from the release itself and "
              f"reads the person's {_reads(c)} believes a guess of {target} right for {percent(c.share)} of "
              f"people")
    return belief + ("." if realised is None else f" and is right for {percent(realised)}.")


def _reads(c: BayesCeiling) -> str:
    """What of the released record the posterior reads, as words."""
    cells = listed(c.conditioned_on) if c.conditioned_on else "nothing"
    if c.scope == "record" and not c.not_conditioned_on:
        return f"whole released record ({cells})"
    return f"released {cells} only"


def _unbounded(c: BayesCeiling) -> str:
    """What the ceiling does not bound: an attack that also reads the columns it leaves out."""
    if not c.not_conditioned_on:
        return ""
    return (f"; this is no ceiling for an attacker who also reads {listed(c.not_conditioned_on)} of the released "
            f"record")


def linkage_sentences(link: LinkageResult) -> list[str]:
    """The linkage: unique records found, records unchanged in the release, distances against the holdout.

    Parameters
    ----------
    link : LinkageResult
        From :func:`pramkit.risk.attack_linkage.linkage_attack`.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.attack_linkage import linkage_attack
    >>> o = pd.DataFrame({"age": ["20", "20", "60", "70"], "job": ["a", "b", "b", "c"]})
    >>> linkage_sentences(linkage_attack(o, o, "age", key=bytes(32)))[0]  # doctest: +NORMALIZE_WHITESPACE
    '2 people (50 %) are the only ones in the original with their age; 2 of them share it with exactly
    one released record (a one-to-one link), 2 with at least one.'
    """
    known = listed(link.known)
    n = link.records
    out = [f"{link.unique_on_known:,} people ({percent(link.unique_on_known / n)}) are the only ones in the original "
           f"with their {known}; {link.unique_on_known_linked:,} of them share "
           f"{'it' if len(link.known) == 1 else 'them'} with exactly one released record (a one-to-one link), "
           f"{link.unique_on_known_found:,} with at least one."]
    out.append(f"{percent(link.share_at_zero)} of the original's records appear unchanged, every column, in the "
               f"released file; of the {link.unique_records:,} records no other record of the original equals, "
               f"{link.unique_records_found:,} do.")
    out.append(f"For half the people, the closest released record differs in at most {percent(link.median_dcr)} "
               f"of the {len(link.columns)} columns.")
    held = ("a keyed random half of the original" if link.holdout == "keyed half"
            else "the holdout file (records not used to make the release)")
    out.append(f"Against {held}: for {percent(link.closer_to_release)} of the {link.attacked:,} people compared, "
               f"a released record is closer than any held-out person (each set taken at {link.compared:,} "
               f"records), for {percent(link.closer_to_holdout)} a held-out person is closer, "
               f"{percent(link.tied)} tie.")
    return out


def attack_sentences(result: AttackResult, features: int | None = FEATURES_IN_WORDS) -> list[str]:
    """Every figure of an attack in plain words, each against its baseline.

    Parameters
    ----------
    result : AttackResult
        From :func:`pramkit.risk.attack.attack`.
    features : int or None
        The reconstruction's features put in words (those the attack gains most on); None for all.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.attack import attack
    >>> o = pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "a", "b", "c"]})
    >>> for s in attack_sentences(attack(o, o, "age", key=bytes(32)))[:2]:
    ...     print(s)
    An attacker who knows age guesses job right for 75 % of people, against 50 % from the published margins alone.
    0 people (0 %) are the only ones in the original with their age; 0 of them share it with exactly one released record (a one-to-one link), 0 with at least one.
    """
    from pramkit.risk.attack import TRUE_LAW

    out = reconstruction_sentences(result.reconstruction, features)
    if result.linkage is not None:
        out += linkage_sentences(result.linkage)
    out += [ceiling_sentence(c, TRUE_LAW) for c in result.ceilings]
    return out
