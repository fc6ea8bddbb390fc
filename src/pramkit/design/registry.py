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

The ``dp`` family's options (:func:`dp_options`) are ``form``, ``truthful`` and
``objective``: ``"information"`` (default) or ``"variance"``, the design with
the least variance of the unbiased estimator, which does not read p:

>>> dp = FAMILIES["dp"]
>>> v = dp.build(["a", "b", "c"], None, 1.0, {"objective": "variance"})
>>> v.provenance.method, dp.reads_frequencies({"objective": "variance"})
('dp_min_variance', False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pramkit.errors import ParameterError
from pramkit.matrix import Label, PramMatrix

#: ``build(categories, p, epsilon, options) -> PramMatrix``.
Build = Callable[[Sequence[Label], "np.ndarray | None", "float | None", Mapping[str, Any]], PramMatrix]


@dataclass(frozen=True)
class DesignFamily:
    """One design family.

    Attributes
    ----------
    name : str
        The method's name (``--method``).
    help : str
        One line for ``--help``.
    build : callable
        ``build(categories, p, epsilon, options) -> PramMatrix``: designs one
        variable (module docstring).
    reads_frequencies : callable
        Given the options, whether the design is a function of p.
    takes_budget : callable
        Given the options, whether the design is built to a share of the budget.

    Examples
    --------
    Randomized response is designed to its share of the budget unless a
    target beta fixes it; it never reads the frequencies:

    >>> rr = FAMILIES["rr"]
    >>> rr.takes_budget({}), rr.takes_budget({"beta": 0.5}), rr.reads_frequencies({})
    (True, False, False)
    >>> m = rr.build(["a", "b", "c"], None, None, {"beta": 0.5})
    >>> m.provenance.method, round(m.provenance.objective, 9)
    ('randomized_response', 0.5)
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


#: Values of the ``objective`` option of the ``dp`` family (the first is the default).
DP_OBJECTIVES = ("information", "variance", "distance")
#: Values of the ``form`` option of the ``dp`` family (the first is the default).
DP_FORMS = ("diagonal", "general")
#: Options of the ``dp`` family.
DP_OPTIONS = ("truthful", "form", "objective", "distances", "weights")
#: Values of the ``weights`` option of objective ``distance`` (the first is the default).
DISTANCE_WEIGHTS = ("frequencies", "uniform", "worst")


def _choice(options: Mapping[str, Any], name: str, allowed: Sequence[str]) -> str:
    """Option ``name`` of the dp family (absent or ``None``: the first allowed value), checked."""
    value = options.get(name)
    if value is None:
        return allowed[0]
    if value not in allowed:
        raise ParameterError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
    return str(value)


def dp_options(options: Mapping[str, Any]) -> tuple[str, str, bool]:
    """The ``dp`` family's options ``(form, objective, truthful)``, validated.

    * ``form``: ``"diagonal"`` (form (8), the default) or ``"general"`` (any
      row-stochastic matrix, staircase LP);
    * ``objective``: ``"information"`` (the most mutual information, the
      default) or ``"variance"`` (the least total variance of the unbiased
      estimator, :func:`pramkit.design.dp_variance.dp_min_variance`: always
      invertible, and independent of p);
    * ``objective="distance"``: the least expected distance moved
      (:func:`pramkit.design.dp_distance.dp_min_distance`, a certified LP over
      every matrix; ``form`` left out or ``"general"``), with ``distances``
      (``"ordinal"``, a CSV path or a :class:`pramkit.design.distances.Distances`;
      required when the design is built) and ``weights``: ``"frequencies"`` (p, the default),
      ``"uniform"`` (the average over categories) or ``"worst"`` (the largest expected distance
      from any one category); the last two read no frequencies;
    * ``truthful``: require ``q_k >= 1/S`` (form (8) only).  With
      ``objective="variance"`` it is accepted: the optimum (randomized
      response) is truthful anyway, and the certificate then covers the
      truthful matrices only.

    ``objective="variance"`` is a form (8) design: with ``form="general"`` it is
    an error (no certified variance-optimal general design exists here).

    Parameters
    ----------
    options : mapping of str to value
        The ``dp`` family's options (absent or ``None``: the default).

    Returns
    -------
    (str, str, bool)
        ``form``, ``objective`` and ``truthful``, with the defaults filled in
        (``objective="distance"`` always gives ``form="general"``).

    Raises
    ------
    ParameterError
        For an unknown option or value, naming the allowed ones.

    Examples
    --------
    >>> dp_options({})
    ('diagonal', 'information', False)
    >>> dp_options({"objective": "variance", "truthful": True})
    ('diagonal', 'variance', True)
    >>> dp_options({"objective": "distance", "distances": "ordinal"})
    ('general', 'distance', False)
    >>> dp_options({"objective": "entropy"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: objective must be one of 'information', 'variance', 'distance', got 'entropy'
    """
    unknown = sorted(set(options) - set(DP_OPTIONS))
    if unknown:
        raise ParameterError(f"method 'dp' does not take {', '.join(unknown)}; its options are {', '.join(DP_OPTIONS)}")
    form = _choice(options, "form", DP_FORMS)
    objective = _choice(options, "objective", DP_OBJECTIVES)
    truthful = options.get("truthful")
    if truthful not in (None, True, False):
        raise ParameterError(f"truthful must be True or False, got {truthful!r}")
    if form == "general" and truthful:
        raise ParameterError("truthful applies to the diagonal form (8) only")
    if form == "general" and objective == "variance":
        raise ParameterError("objective 'variance' is a form (8) design: use form 'diagonal' with it")
    if objective == "distance":
        if truthful:
            raise ParameterError("truthful applies to the diagonal form (8) only, not to objective 'distance'")
        if options.get("form") not in (None, "general"):
            raise ParameterError("objective 'distance' designs any matrix (an LP): leave form out or use 'general'")
        _choice(options, "weights", DISTANCE_WEIGHTS)
        form = "general"
    elif options.get("distances") is not None or options.get("weights") is not None:
        raise ParameterError("distances and weights apply to objective 'distance'")
    return form, objective, bool(truthful)


def _dp(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
        options: Mapping[str, Any]) -> PramMatrix:
    form, objective, truthful = dp_options(options)
    if objective == "distance":
        from pramkit.design.geo import build_distance

        weights = _choice(options, "weights", DISTANCE_WEIGHTS)
        return build_distance(categories, p if weights == "frequencies" else None, epsilon, options)
    if objective == "variance":
        from pramkit.design.dp_variance import dp_min_variance

        return dp_min_variance(p, epsilon, categories=categories, truthful=truthful)
    if form == "general":
        from pramkit.design.dp_general import dp_general

        return dp_general(p, epsilon, categories=categories)
    from pramkit.design.dp_optimal import dp_optimal

    return dp_optimal(p, epsilon, categories=categories, truthful=truthful)


def _dp_reads(options: Mapping[str, Any]) -> bool:
    """The variance-optimal design does not depend on p, so it reads no frequencies; nor does the
    distance design with uniform weights."""
    objective = dp_options(options)[1]
    if objective == "distance":
        return _choice(options, "weights", DISTANCE_WEIGHTS) == "frequencies"
    return objective != "variance"


def _metric(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
            options: Mapping[str, Any]) -> PramMatrix:
    from pramkit.design.geo import build_metric

    return build_metric(categories, p, epsilon, options)


def _classic(name: str) -> Build:
    """A family of :data:`pramkit.design.methods.METHODS`; rr gets its epsilon from the budget."""
    def build(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
              options: Mapping[str, Any]) -> PramMatrix:
        from pramkit.design.methods import METHODS  # SciPy: imported when a design runs

        method = METHODS[name]
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
    "dp": DesignFamily("dp", "epsilon-DP form (8) with maximal mutual information (Ayed, Battiston and "
                       "Camerlenghi), or with the least variance of the unbiased estimator (objective variance), "
                       "or the least expected distance moved (objective distance, with distances)",
                       _dp, _dp_reads, _always),
    "metric": DesignFamily("metric", "metric-DP: the exponential mechanism over distances, or the truncated "
                           "geometric mechanism on the category order (metric_epsilon per unit of distance; "
                           "reads no frequencies)", _metric, _never, _never),
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
    """The family called ``name``, or an error listing them.

    Parameters
    ----------
    name : str
        A key of :data:`FAMILIES`.

    Returns
    -------
    DesignFamily

    Raises
    ------
    ParameterError
        If no family has that name; the message lists them.

    Examples
    --------
    k-anonymity blocks (equation (3) of Ruiz and Domingo-Ferrer) are fixed by
    k: no budget, no frequencies.

    >>> kanon = family("kanon")
    >>> kanon.reads_frequencies({}), kanon.takes_budget({})
    (False, False)
    >>> kanon.build(["a", "b", "c", "d"], None, None, {"k": 2}).matrix.tolist()
    [[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]]
    >>> family("swap")   # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: unknown design method 'swap'; the methods are dp, metric, invariant,
    keep, rr, kanon, tridiagonal, circulant, bistochastic-beta
    """
    try:
        return FAMILIES[name]
    except KeyError:
        raise ParameterError(f"unknown design method {name!r}; the methods are {', '.join(FAMILIES)}") from None
