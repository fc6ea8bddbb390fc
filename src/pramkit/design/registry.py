"""Every design family behind one signature.

:data:`FAMILIES` maps a method name to a :class:`DesignFamily`, whose ``build``
designs one variable's matrix::

    build(categories, p, epsilon, options) -> PramMatrix

* ``categories``: the variable's categories (its codebook);
* ``p``: the frequencies the design may read (``None`` for a data-free family):
  DP counts, a public prior or, when asked for, the exact data (see
  :mod:`pramkit.ledger`);
* ``epsilon``: the variable's share of the record budget, for families designed
  to an epsilon (``takes_budget``); ``None`` for families whose parameters fix it;
* ``options``: the family's own parameters (validated by the family; unknown
  ones are an error naming the family's options).

A family also says whether it reads frequencies (then the design step spends
budget or uses a prior) and whether it is designed to a budget.  A new family
is one more entry.

Examples
--------
>>> fam = FAMILIES["rr"]
>>> m = fam.build(["a", "b", "c"], None, 1.0, {})
>>> round(m.epsilon, 12), fam.reads_frequencies({})
(1.0, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pramkit.design.methods import METHODS
from pramkit.errors import ParameterError
from pramkit.matrix import Label, PramMatrix

#: ``build(categories, p, epsilon, options) -> PramMatrix``.
Build = Callable[[Sequence[Label], "np.ndarray | None", "float | None", Mapping[str, Any]], PramMatrix]


@dataclass(frozen=True)
class DesignFamily:
    """One design family.

    name: the method's name (``--method``)
    help: one line for ``--help``
    build: designs one variable (module docstring)
    reads_frequencies: given the options, whether the design is a function of p
    takes_budget: given the options, whether the design is built to a share of the budget
    """

    name: str
    help: str
    build: Build
    reads_frequencies: Callable[[Mapping[str, Any]], bool]
    takes_budget: Callable[[Mapping[str, Any]], bool]


def _always(_: Mapping[str, Any]) -> bool:
    return True


def _never(_: Mapping[str, Any]) -> bool:
    return False


def _dp(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
        options: Mapping[str, Any]) -> PramMatrix:
    from pramkit.design.dp_general import dp_general
    from pramkit.design.dp_optimal import dp_optimal

    unknown = sorted(set(options) - {"truthful", "form"})
    if unknown:
        raise ParameterError(f"method 'dp' does not take {', '.join(unknown)}; its options are truthful, form")
    form = options.get("form") or "diagonal"
    if form == "general":
        if options.get("truthful"):
            raise ParameterError("truthful applies to the diagonal form (8) only")
        return dp_general(p, epsilon, categories=categories)
    if form != "diagonal":
        raise ParameterError(f"form must be 'diagonal' or 'general', got {form!r}")
    return dp_optimal(p, epsilon, categories=categories, truthful=bool(options.get("truthful")))


def _classic(name: str) -> Build:
    """A family of :data:`pramkit.design.methods.METHODS`; rr gets its epsilon from the budget."""
    method = METHODS[name]

    def build(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
              options: Mapping[str, Any]) -> PramMatrix:
        if "epsilon" in options:
            raise ParameterError(f"method {name!r} takes its epsilon from the record budget "
                                 "(epsilon=, or epsilon_per_variable=), not from its options")
        params = dict(options)
        if epsilon is not None:
            params["epsilon"] = epsilon
        freq = np.full(len(categories), 1.0 / len(categories)) if p is None else p
        return method(categories, freq, params=params)

    return build


def _rr_budget(options: Mapping[str, Any]) -> bool:
    return options.get("beta") is None


def _beta_reads(options: Mapping[str, Any]) -> bool:
    return options.get("family") in (None, "best")


#: Method name -> :class:`DesignFamily`.
FAMILIES: dict[str, DesignFamily] = {
    "dp": DesignFamily("dp", "epsilon-DP with maximal mutual information (Ayed, Battiston and Camerlenghi)",
                       _dp, _always, _always),
    "invariant": DesignFamily("invariant", "sdcMicro's invariant PRAM (reads p)", _classic("invariant"),
                              _always, _never),
    "keep": DesignFamily("keep", "mu-ARGUS keep-probability PRAM", _classic("keep"), _never, _never),
    "rr": DesignFamily("rr", "randomized response at the variable's share of the budget (or a target beta)",
                       _classic("rr"), _never, _rr_budget),
    "kanon": DesignFamily("kanon", "k-anonymity blocks (Ruiz and Domingo-Ferrer, eq. 3)", _classic("kanon"),
                          _never, _never),
    "tridiagonal": DesignFamily("tridiagonal", "tridiagonal bistochastic matrix (eq. 7)", _classic("tridiagonal"),
                                _never, _never),
    "circulant": DesignFamily("circulant", "circulant bistochastic matrix (eq. 6)", _classic("circulant"),
                              _never, _never),
    "bistochastic-beta": DesignFamily("bistochastic-beta", "a bistochastic family fitted to a target beta "
                                      "(family best reads p)", _classic("bistochastic-beta"), _beta_reads, _never),
}


def family(name: str) -> DesignFamily:
    """The family called ``name``, or an error listing them."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ParameterError(f"unknown design method {name!r}; the methods are {', '.join(FAMILIES)}") from None
