"""The plan of a record swap: its parameters, checked before any data is read, and its public description.

:func:`plan_swap` checks the parameters of a swap (the household id, the levels of the geography, the risk
variables, the similarity profiles, the rate, the k-anonymity threshold and the donor rule) and returns a
:class:`SwapPlan`, whose :meth:`SwapPlan.section` is the public description of the swap (the receipt's and
the manifest's ``swapping``).  It reads no data and writes nothing: :mod:`pramkit.swap.run` swaps a file or a
frame by a plan, and the settings of ``pramkit swap`` (:mod:`pramkit.release.swap_settings`) check their
rate and threshold by :func:`plan_swap`'s own rules, importing this module alone.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pramkit.errors import ParameterError
from pramkit.ledger import swapping_statement
from pramkit.manifest import epsilon_to_json
from pramkit.swap.core import DONOR_RULES
from pramkit.swap.implied import random_swap_matrix


@dataclass(frozen=True)
class SwapPlan:
    """The parameters of a swap, checked (:func:`plan_swap`).

    Parameters
    ----------
    hid : str
        The household id column.
    geo : tuple of str
        The levels of the geography, highest first.
    risk_vars : tuple of str
        The risk variables of the k-anonymity rule (none: random swapping).
    similar : tuple of tuple of str
        The similarity profiles, tried in order.
    rate : float
        The share of households to swap, in [0, 1].
    k : int
        The k-anonymity threshold, at least 1.
    donors : {"same-parent", "any-area"}
        The donor rule (:data:`pramkit.swap.core.DONOR_RULES`): donors under the same area of
        the level above, or from any other area of the swap level with risky donors first (the donor
        pool of sdcMicro's ``recordSwap``, each donor a fresh keyed draw).
    """

    hid: str
    geo: tuple[str, ...]
    risk_vars: tuple[str, ...] = ()
    similar: tuple[tuple[str, ...], ...] = ()
    rate: float = 0.05
    k: int = 3
    donors: str = "same-parent"

    @property
    def keeps_parent(self) -> bool:
        """Donors share the area of the level above (rule ``same-parent`` with two levels or more)."""
        return self.donors == "same-parent" and len(self.geo) > 1

    def donor_rule(self) -> str:
        """The donor rule in words, and how it differs from sdcMicro's ``recordSwap``.

        Examples
        --------
        >>> plan_swap("hid", ["region", "area"]).donor_rule().split(" (")[0]
        'donors were drawn from another area of the same region'
        >>> plan_swap("hid", ["region", "area"], donors="any-area").donor_rule().split(" (")[0]
        'donors were drawn from any other area of the level swapped across, risky donors first'
        """
        if self.donors == "any-area":
            return ("donors were drawn from any other area of the level swapped across, risky donors first "
                    "(pramkit option any-area: the donor pool of sdcMicro's recordSwap, each donor a fresh keyed "
                    "draw and the areas in a keyed order, not recordSwap's scan of one priority order per level "
                    "with the areas in code order)")
        where = f"another area of the same {self.geo[-2]}" if len(self.geo) > 1 else "another area"
        return (f"donors were drawn from {where} (pramkit's rule same-parent, not sdcMicro's recordSwap, "
                "which draws them from any other area and prefers risky donors); households selected at a "
                "level were not each other's donors")

    @property
    def targeted(self) -> bool:
        """Households are chosen from the data (risk variables given): no matrix is known."""
        return bool(self.risk_vars)

    @property
    def columns(self) -> list[str]:
        """Every column the swap reads."""
        return list(dict.fromkeys([self.hid, *self.geo, *self.risk_vars, *(c for p in self.similar for c in p)]))

    def section(self, areas: Sequence[Any], parents: Sequence[Any] | None = None,
                households: Sequence[int] | None = None) -> dict[str, Any]:
        """The public description of the swap (the manifest's and the receipt's ``swapping``).

        Nothing in it is computed from the original data but the areas, the level above each and
        their household counts, which the released file shows exactly (a swap exchanges one
        household for another).

        Parameters
        ----------
        areas : sequence
            The areas of the lowest level.
        parents : sequence, optional
            The area of the level above each (two levels or more).
        households : sequence of int, optional
            Households per area (default: equal areas).

        Returns
        -------
        dict

        Examples
        --------
        >>> s = plan_swap("hid", ["region"], rate=0.1).section(["N", "S", "E"])
        >>> s["method"], s["epsilon"], s["matrix_known"]
        ('random record swapping', 2.890371757896165, True)
        """
        given = self.geo[-2] if self.keeps_parent else None
        matrix = None if self.targeted else random_swap_matrix(
            self.rate, areas, self.donor_parents(parents), households, donors=self.donors)
        eps = math.inf if matrix is None else matrix.epsilon
        given_eps = None if matrix is None or given is None else matrix.block_epsilon
        return {
            "method": "targeted record swapping" if self.targeted else "random record swapping",
            "semantics": ("Eurostat targeted record swapping with sdcMicro recordSwap's donor pool (any-area), "
                           "each donor a fresh keyed draw (not recordSwap's code-order scan)"
                          if self.donors == "any-area" else
                          "Eurostat targeted record swapping with pramkit's donor rule same-parent (donors share "
                          "the area above; sdcMicro recordSwap draws them from any other area)"),
            "donors": self.donors,
            "donor_rule": self.donor_rule(),
            "household_id": self.hid,
            "levels": list(self.geo),
            "variable": self.geo[-1],
            "areas": len(areas),
            "rate": self.rate,
            "k_anonymity": self.k if self.targeted else None,
            "risk_variables": list(self.risk_vars),
            "similar": [list(p) for p in self.similar],
            "matrix_known": not self.targeted,
            "epsilon": epsilon_to_json(eps),
            **({f"epsilon_given_{given}": epsilon_to_json(given_eps)} if given_eps is not None else {}),
            "guarantee": swapping_statement(self.geo[-1], self.targeted, eps, self.rate, len(areas),
                                            given, given_eps, donors=self.donor_rule()),
        }

    def donor_parents(self, parents: Sequence[Any] | None) -> Sequence[Any] | None:
        """The parents that bound the donors of a random swap (its expected matrix's blocks).

        Parameters
        ----------
        parents : sequence or None
            The area of the level above each area of the lowest level.

        Returns
        -------
        sequence or None
            ``parents`` under the rule ``same-parent``; ``None`` (one block: donors come from any
            other area) under ``any-area``.

        Examples
        --------
        >>> plan_swap("hid", ["region", "area"]).donor_parents(["N", "S"])
        ['N', 'S']
        >>> plan_swap("hid", ["region", "area"], donors="any-area").donor_parents(["N", "S"]) is None
        True
        """
        return parents if self.donors == "same-parent" else None


def plan_swap(hid: str, geo: Sequence[str], *, risk_vars: Sequence[str] = (), similar: Sequence[Sequence[str]] = (),
              rate: float = 0.05, k: int = 3, donors: str = "same-parent") -> SwapPlan:
    """Check the parameters of a swap before any data is read.

    Parameters
    ----------
    hid : str
        The household id column.
    geo : sequence of str
        The levels of the geography, highest first (county > municipality > district).
    risk_vars : sequence of str
        The risk variables; none: random swapping (no household is targeted).
    similar : sequence of sequence of str
        Similarity profiles: a donor shares the values of the first profile, or else of the next.
    rate : float
        The share of households swapped, in [0, 1] (a swap moves two households).
    k : int
        The k-anonymity threshold (a household is risky when a member's cell has fewer than k persons).
    donors : {"same-parent", "any-area"}
        The donor rule: ``same-parent`` (the default) draws donors under the same area of the level
        above, households selected at a level never being each other's donors; ``any-area`` draws them
        from any other area of the level swapped across, risky donors first (sdcMicro ``recordSwap``'s
        donor pool, each donor a fresh keyed draw).

    Returns
    -------
    SwapPlan

    Raises
    ------
    ParameterError
        A rate outside [0, 1], a k below 1 or not an integer, no level, a column named twice, or an
        unknown donor rule.

    Examples
    --------
    >>> plan_swap("hid", ["nuts2", "nuts3"], risk_vars=["age", "sex"], similar=[["hsize"]]).targeted
    True
    >>> plan_swap("hid", ["nuts2"], rate=1.5)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the swap rate must lie in [0, 1] (a share of households), got 1.5
    >>> plan_swap("hid", ["nuts2"], k=0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k (the k-anonymity threshold) must be an integer of at least 1, got 0; for random swapping give no risk variables
    >>> plan_swap("hid", ["nuts2"], donors="anywhere")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: unknown donor rule 'anywhere': use same-parent or any-area
    """
    if donors not in DONOR_RULES:
        raise ParameterError(f"unknown donor rule {donors!r}: use {' or '.join(DONOR_RULES)}")
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not (0.0 <= rate <= 1.0):
        raise ParameterError(f"the swap rate must lie in [0, 1] (a share of households), got {rate!r}")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ParameterError(f"k (the k-anonymity threshold) must be an integer of at least 1, got {k!r}; "
                             "for random swapping give no risk variables")
    levels = tuple(str(c) for c in geo)
    if not levels:
        raise ParameterError("the geography needs at least one level (--geo L1,L2,...)")
    named = [hid, *levels]
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        raise ParameterError(f"column(s) {twice} named twice among the household id and the geography levels")
    clash = sorted(set(named) & (set(risk_vars) | {c for p in similar for c in p}))
    if clash:
        raise ParameterError(f"column(s) {clash} are the household id or a geography level, so they cannot be a "
                             "risk or similarity variable")
    profiles = tuple(tuple(str(c) for c in p) for p in similar)
    if any(not p for p in profiles):
        raise ParameterError("a similarity profile needs at least one column")
    return SwapPlan(str(hid), levels, tuple(str(c) for c in risk_vars), profiles, float(rate), int(k), donors)


__all__ = ["SwapPlan", "plan_swap"]
