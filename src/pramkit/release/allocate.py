"""Stage 4 of the design workflow: the budget of each matrix.

What is left of the record budget after the design step is shared over the targets:

* ``equal`` (and ``joint``, one target): equal shares;
* ``optimal``: the most information (Ayed, Battiston and Camerlenghi, section 5),
  a variable may get none (it is then released unperturbed, with a warning);
* per-variable budgets, checked against the record budget;
* a family whose parameters fix its epsilon gets no share (``None``).

Every share is rounded down (:func:`pramkit.ledger.split_within`) so that the record
epsilon, rounded outward, never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pramkit.errors import ParameterError
from pramkit.ledger import Ledger, split_within
from pramkit.release.count import Counted
from pramkit.release.frequencies import DesignFrequencies
from pramkit.release.plan import ReleasePlan


@dataclass(frozen=True)
class Allocation:
    """The budget of each matrix to design.

    Parameters
    ----------
    epsilons : mapping of str to float or None
        Per target designed, its budget (``None``: the family's parameters fix it).  A
        variable left out gets epsilon 0 in the optimal split.
    extra : mapping
        The split's figures for the design record (the optimal split's bound and grid step).
    warnings : tuple of str
        What the holder should read before publishing.
    """

    epsilons: Mapping[str, float | None]
    extra: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def allocate(plan: ReleasePlan, counted: Counted, freqs: DesignFrequencies) -> Allocation:
    """Share the record budget over the targets.

    Parameters
    ----------
    plan : ReleasePlan
        The plan (budget, split, per-variable budgets).
    counted : Counted
        The targets.
    freqs : DesignFrequencies
        The design step's spend and the frequencies the optimal split reads.

    Returns
    -------
    Allocation

    Raises
    ------
    ParameterError
        The per-variable budgets and the design step exceed the record budget, or the
        optimal split is asked for the variance objective, or the optimal split funds no variable.

    Examples
    --------
    >>> import random
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> from pramkit.release.count import count_release
    >>> from pramkit.release.frequencies import design_frequencies
    >>> from pramkit.release.plan import plan_release
    >>> plan = plan_release(["age", "sex"], epsilon=2.0, categories=CENSUS_VARIABLES)
    >>> c = count_release(census(2_000), plan)
    >>> f = design_frequencies(plan, c, rng=random.Random(1))
    >>> a = allocate(plan, c, f)
    >>> a.epsilons["age"] == a.epsilons["sex"], f.design_epsilon + 2 * a.epsilons["age"] <= 2.0
    (True, True)
    """
    if not plan.takes_budget:  # found once by plan_release
        return Allocation(dict.fromkeys(counted.targets))
    if plan.per_variable is not None:
        return Allocation(_per_variable(plan, freqs.design_epsilon))
    if plan.split == "optimal":
        return _optimal(plan, counted, freqs)
    shares = split_within(_budget(plan), freqs.design_epsilon, [1.0] * len(counted.targets))
    return Allocation(dict(zip(counted.targets, shares)))


def _budget(plan: ReleasePlan) -> float:
    """The record budget of a plan without per-variable budgets (plan_release requires one of the two)."""
    assert plan.budget is not None
    return plan.budget


def _per_variable(plan: ReleasePlan, design_epsilon: float) -> dict[str, float]:
    """The per-variable budgets, checked against the record budget with the design step."""
    assert plan.per_variable is not None
    total = Ledger(design_epsilon).total(list(plan.per_variable.values()))
    if plan.budget is not None and total > plan.budget:
        raise ParameterError(f"the per-variable budgets and the design step add up to {total:.6g}, more than "
                             f"the record budget {plan.budget:g}")
    return dict(plan.per_variable)


def _optimal(plan: ReleasePlan, counted: Counted, freqs: DesignFrequencies) -> Allocation:
    """The split with the most information (Ayed, Battiston and Camerlenghi, section 5)."""
    from pramkit.design.dp.multivariate import split_budget

    room = split_within(_budget(plan), freqs.design_epsilon, [1.0])[0]
    design_p = {n: p for n in plan.names if (p := freqs.design_p[n]) is not None}
    if len(design_p) < len(plan.names):
        raise ParameterError(f"split 'optimal' weighs the variables by their frequencies, which method "
                             f"{plan.method!r} does not read; use split equal")
    best = split_budget(design_p, room, split="optimal",
                        truthful=bool(plan.options.get("truthful")),
                        categories={n: counted.targets[n].labels for n in plan.names})
    funded = {n: e for n, e in best.epsilons.items() if e > 0}
    if not funded:
        raise ParameterError("no variable gets a positive epsilon; nothing to design")
    fitted = split_within(_budget(plan), freqs.design_epsilon, list(funded.values()))
    left = [n for n in plan.names if n not in funded]
    warnings = () if not left else (
        f"variables {left} get no budget in the optimal split: they are released exactly (not perturbed), which "
        "suits only variables that are not sensitive; use split equal to perturb every variable",)
    return Allocation(dict(zip(funded, fitted)), {"split_upper_bound_nats": best.upper_bound_nats,
                                                  "split_grid_step": best.grid_step}, warnings)
