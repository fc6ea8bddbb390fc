"""Every design family behind one signature, with its options declared as rules.

:data:`FAMILIES` maps a method name to a :class:`DesignFamily`, whose ``build``
designs one variable's matrix::

    build(categories, p, epsilon, options) -> PramMatrix

* ``categories``: the variable's categories (its codebook);
* ``p``: the frequencies the design may read (``None`` for a data-free family):
  DP counts, a public prior or, when asked for, the exact data (see
  :mod:`pramkit.ledger`); a family that does not read them never sees them;
* ``epsilon``: the variable's share of the record budget, for families designed
  to an epsilon (``takes_budget``); ``None`` for families whose parameters fix it;
* ``options``: the family's own parameters, numbers and names (not strings of
  numbers), each checked by its rule (:mod:`pramkit.validate`: :class:`~pramkit.validate.Number`,
  :class:`~pramkit.validate.Choice`, :class:`~pramkit.validate.Flag`,
  :class:`~pramkit.validate.Instance`); absent or ``None``: the rule's default.

A family declares its options (:attr:`DesignFamily.options`, name -> rule with
``describe()``), whether it reads frequencies (then the design step spends budget
or uses a prior), whether it is designed to a budget, and the most categories it
designs (:meth:`DesignFamily.max_categories`, checked before building).  A new family
is one more entry.

Randomized response, the dp family's least-variance design and keep-probability
PRAM without a bandwidth are form (8) and are stored compactly
(:meth:`pramkit.PramMatrix.form8`): O(S) memory, a closed-form epsilon, and the
engine's form (8) sampler.

Examples
--------
>>> fam = FAMILIES["rr"]
>>> m = fam.build(["a", "b", "c"], None, 1.0, {})
>>> round(m.epsilon, 12), fam.reads_frequencies({}), m.is_compact
(1.0, False, True)
>>> FAMILIES["kanon"].options["k"].describe()
'a whole number >= 1'
>>> FAMILIES["kanon"].build(["a", "b", "c"], None, None, {"k": "2"})
Traceback (most recent call last):
...
pramkit.errors.ParameterError: k must be a whole number >= 1, got the str '2'

The ``dp`` family's options (:func:`dp_options`) are ``form``, ``truthful`` and
``objective``: ``"information"`` (default) or ``"variance"``, the design with
the least variance of the unbiased estimator, which does not read p:

>>> dp = FAMILIES["dp"]
>>> v = dp.build(["a", "b", "c"], None, 1.0, {"objective": "variance"})
>>> v.provenance.method, dp.reads_frequencies({"objective": "variance"})
('dp_min_variance', False)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.matrix import PramMatrix
from pramkit.validate import Choice, Flag, Instance, Number, Rule, check_options

#: ``design(categories, p, epsilon, options) -> PramMatrix`` on checked options (defaults filled in).
Design = Callable[[Sequence[Label], "np.ndarray | None", "float | None", Mapping[str, Any]], PramMatrix]
#: A predicate or a limit on a family's checked options.
OnOptions = Callable[[Mapping[str, Any]], Any]


def _always(_: Mapping[str, Any]) -> bool:
    return True


def _never(_: Mapping[str, Any]) -> bool:
    return False


def _no_limit(_: Mapping[str, Any]) -> int | None:
    return None


def _as_given(given: Mapping[str, Any], checked: dict[str, Any]) -> dict[str, Any]:
    return checked


def _as_recorded(options: dict[str, Any]) -> dict[str, Any]:
    return options


@dataclass(frozen=True)
class DesignFamily:
    """One design family.

    Attributes
    ----------
    name : str
        The method's name (``--method``).
    help : str
        One line for ``--help``.
    options : mapping of str to Rule
        Each option's rule (:mod:`pramkit.validate`): type, range or choices, default.
    design : callable
        ``design(categories, p, epsilon, options)`` on checked options (call :meth:`build`).
    reads : callable
        Given the checked options, whether the design is a function of p.
    budgeted : callable
        Given the checked options, whether the design is built to a share of the budget.
    limit : callable
        Given the checked options, the most categories the family designs (``None``: no limit).
    coherent : callable
        ``coherent(given, checked)``: the checked options after the checks between options
        (``given``: the options given, ``None`` values left out).
    recorded : tuple of str
        The options a release records (the manifest's ``input.options``) even when they are not given,
        at their settings' defaults; the others are recorded when given (:meth:`record`).
    recording : callable
        The recorded options after what the options given imply (the ``dp`` family's form is not given
        with objective ``distance``, which designs any matrix).
    group : str
        The group of ``pramkit design --help`` that names the family (:data:`pramkit.release.spec.GROUPS`):
        ``"family"`` (the classic and bistochastic families, the default), ``"geo"``, or ``""`` (the
        default method, named by ``--method`` itself).

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
    >>> {name: rule.describe() for name, rule in rr.options.items()}
    {'beta': 'a number in (0, 1)'}
    """

    name: str
    help: str
    options: Mapping[str, Rule]
    design: Design
    reads: OnOptions = _never
    budgeted: OnOptions = _never
    limit: OnOptions = _no_limit
    coherent: Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]] = field(default=_as_given)
    recorded: tuple[str, ...] = ()
    recording: Callable[[dict[str, Any]], dict[str, Any]] = field(default=_as_recorded)
    group: str = "family"

    @property
    def budget_is_cap(self) -> bool:
        """Whether, whatever its options, the family's own parameters set the matrix, so that the record budget
        is only a cap, which may be left out (never for a family built to a share of the budget).

        >>> FAMILIES["kanon"].budget_is_cap, FAMILIES["rr"].budget_is_cap, FAMILIES["dp"].budget_is_cap
        (True, False, False)
        """
        return self.budgeted is _never

    def record(self, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
        """The options a release with these options records and passes to the family (the manifest's
        ``input.options``): each of :attr:`recorded` (``defaults`` when not given) in the order the family
        declares them (:attr:`options`), then each other option given, in the order given.

        Parameters
        ----------
        given : mapping
            The options given (``{option: value}``).
        defaults : mapping
            The default of each option's setting (:class:`pramkit.release.spec.ReleaseSpec`).

        Examples
        --------
        >>> FAMILIES["dp"].record({"objective": "variance"}, {"truthful": False, "form": "diagonal"})
        {'truthful': False, 'form': 'diagonal', 'objective': 'variance'}
        >>> FAMILIES["dp"].record({"objective": "distance", "weights": "worst"}, {"truthful": False, "form": "diagonal"})
        {'truthful': False, 'form': None, 'objective': 'distance', 'weights': 'worst'}
        >>> FAMILIES["tridiagonal"].record({"gamma": 0.01, "alpha": 0.1}, {})
        {'gamma': 0.01, 'alpha': 0.1}
        """
        recorded = {name: given.get(name, defaults.get(name)) for name in self.options if name in self.recorded}
        return self.recording({**recorded, **{name: v for name, v in given.items() if name not in recorded}})

    def check(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options checked by their rules and against each other, defaults filled in.

        Parameters
        ----------
        options : mapping of str to value
            The options given (``None``: absent).

        Returns
        -------
        dict
            Every option of the family.

        Raises
        ------
        ParameterError
            An unknown option (naming the family's options), a missing one, a value of the
            wrong type or out of range, or options that do not go together.

        Examples
        --------
        >>> FAMILIES["keep"].check({"keep": 0.8})
        {'keep': 0.8, 'bandwidth': None}
        >>> FAMILIES["keep"].check({"keep": 0.8, "width": 2})
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: method 'keep' does not take width; its options are keep, bandwidth
        """
        checked = check_options(f"method {self.name!r}", self.options, options)
        return self.coherent({k: v for k, v in options.items() if v is not None}, checked)

    def reads_frequencies(self, options: Mapping[str, Any]) -> bool:
        """Whether the design with these options is a function of p (:meth:`check` first).

        >>> FAMILIES["bistochastic-beta"].reads_frequencies({"beta": 0.5, "family": "rr"})
        False
        """
        return bool(self.reads(self.check(options)))

    def takes_budget(self, options: Mapping[str, Any]) -> bool:
        """Whether the design with these options is built to a share of the budget (:meth:`check` first).

        >>> FAMILIES["rr"].takes_budget({"beta": 0.3})
        False
        """
        return bool(self.budgeted(self.check(options)))

    def max_categories(self, options: Mapping[str, Any]) -> int | None:
        """The most categories the design with these options takes (``None``: no limit).

        >>> FAMILIES["dp"].max_categories({"form": "general"}), FAMILIES["rr"].max_categories({})
        (14, None)
        """
        return self.limit(self.check(options))

    def build(self, categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
              options: Mapping[str, Any], *, public_p: bool = False) -> PramMatrix:
        """Design one variable's matrix (module docstring): options checked, the size checked
        against :meth:`max_categories`, p passed only if the family reads it (or if it is public).

        Parameters
        ----------
        categories : sequence of labels
            The variable's categories.
        p : numpy.ndarray or None
            The frequencies the design may read.
        epsilon : float or None
            The variable's budget when the family takes one (:meth:`takes_budget`), else ``None``.
        options : mapping
            The family's options.
        public_p : bool
            p is a public input (a distribution the user gives, not counted from the data):
            passed to every family, so that a design that can weigh by it does (the metric
            family's least-distance mechanism).

        Returns
        -------
        PramMatrix

        Raises
        ------
        ParameterError
            Bad options (:meth:`check`), too many categories, or an epsilon given to a family
            that fixes its own (or missing for one built to a budget).

        Examples
        --------
        >>> FAMILIES["dp"].build(list(range(20)), None, 1.0, {"form": "general"})
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: method 'dp' with these options designs at most 14 categories, got 20
        """
        opts = self.check(options)
        limit = self.limit(opts)
        if limit is not None and len(categories) > limit:
            raise ParameterError(f"method {self.name!r} with these options designs at most {limit} categories, "
                                 f"got {len(categories)}")
        if self.budgeted(opts) and epsilon is None:
            raise ParameterError(f"method {self.name!r} is built to a budget: give epsilon")
        if not self.budgeted(opts) and epsilon is not None:
            raise ParameterError(f"method {self.name!r} fixes its epsilon by its options; it takes no share of "
                                 "the budget")
        return self.design(categories, p if public_p or self.reads(opts) else None, epsilon, opts)


# -- the dp family ---------------------------------------------------------------------------------

#: Values of the ``objective`` option of the ``dp`` family (the first is the default).
DP_OBJECTIVES = ("information", "variance", "distance")
#: Values of the ``form`` option of the ``dp`` family (the first is the default).
DP_FORMS = ("diagonal", "general")
#: Values of the ``weights`` option of objective ``distance`` (the first is the default).
DISTANCE_WEIGHTS = ("frequencies", "uniform", "worst")


def _distances_rule() -> Rule:
    from pramkit.distances import Distances

    return Instance((str, os.PathLike, Distances), "'ordinal', a CSV path or a Distances")


#: The ``dp`` family's option rules.
DP_OPTIONS: dict[str, Rule] = {
    "truthful": Flag(),
    "form": Choice(DP_FORMS),
    "objective": Choice(DP_OBJECTIVES),
    "distances": _distances_rule(),
    "weights": Choice(DISTANCE_WEIGHTS),
    "invariant": Flag(),
}


def _dp_coherent(given: Mapping[str, Any], o: dict[str, Any]) -> dict[str, Any]:
    """The checks between the dp family's options; objective ``distance`` is form ``general``."""
    if o["form"] == "general" and o["truthful"]:
        raise ParameterError("truthful applies to the diagonal form (8) only")
    if o["form"] == "general" and o["objective"] == "variance":
        raise ParameterError("objective 'variance' is a form (8) design: use form 'diagonal' with it")
    if o["objective"] != "distance":
        if "distances" in given or "weights" in given or o["invariant"]:
            raise ParameterError("distances, weights and invariant apply to objective 'distance'")
        return o
    if o["invariant"] and o["weights"] not in (None, "frequencies"):
        raise ParameterError("invariant keeps the frequencies as the released law: it takes weights 'frequencies'")
    if o["truthful"]:
        raise ParameterError("truthful applies to the diagonal form (8) only, not to objective 'distance'")
    if given.get("form", "general") != "general":
        raise ParameterError("objective 'distance' designs any matrix (an LP): leave form out or use 'general'")
    return {**o, "form": "general"}


def _dp_recorded(o: dict[str, Any]) -> dict[str, Any]:
    """Objective ``distance`` designs any matrix (an LP): the default form is not given with it."""
    if o.get("objective") == "distance" and o.get("form") == DP_FORMS[0]:
        return {**o, "form": None}
    return o


def dp_options(options: Mapping[str, Any]) -> tuple[str, str, bool]:
    """The ``dp`` family's options ``(form, objective, truthful)``, validated.

    * ``form``: ``"diagonal"`` (form (8), the default) or ``"general"`` (any
      row-stochastic matrix, staircase LP, at most
      :data:`pramkit.design.dp.general.MAX_CATEGORIES` categories);
    * ``objective``: ``"information"`` (the most mutual information, the
      default) or ``"variance"`` (the least total variance of the unbiased
      estimator, :func:`pramkit.design.dp.variance.dp_min_variance`: randomized
      response, stored compactly, always invertible, and independent of p);
    * ``objective="distance"``: the least expected distance moved
      (:func:`pramkit.design.dp.distance.dp_min_distance`, a certified LP over
      every matrix, at most :data:`pramkit.design.dp.distance.MAX_CATEGORIES`
      categories; ``form`` left out or ``"general"``), with ``distances``
      (``"ordinal"``, a CSV path or a :class:`pramkit.distances.Distances`;
      required when the design is built) and ``weights``: ``"frequencies"`` (p, the default),
      ``"uniform"`` (the average over categories) or ``"worst"`` (the largest expected distance
      from any one category); the last two read no frequencies; ``invariant``: the released
      law equals the frequencies the design reads (``p M = p``), so that the released file's
      counts estimate the original's as they are;
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
    o = FAMILIES["dp"].check(options)
    return o["form"], o["objective"], o["truthful"]


def _budget(epsilon: float | None) -> float:
    """The epsilon of a family that takes one (its design needs it)."""
    if epsilon is None:
        raise ParameterError("this design needs an epsilon (its share of the record budget)")
    return epsilon


def _frequencies(p: np.ndarray | None) -> np.ndarray:
    """The category frequencies of a design that reads them."""
    if p is None:
        raise ParameterError("this design needs the category frequencies (exact, DP counts or a prior)")
    return p


def _dp(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
        o: Mapping[str, Any]) -> PramMatrix:
    if o["objective"] == "distance":
        from pramkit.design.metric.mechanisms import build_distance

        return build_distance(categories, p, epsilon, _given(o))
    if o["objective"] == "variance":
        from pramkit.design.dp.variance import dp_min_variance

        return dp_min_variance(p, _budget(epsilon), categories=categories, truthful=o["truthful"])
    if o["form"] == "general":
        from pramkit.design.dp.general import dp_general

        return dp_general(_frequencies(p), _budget(epsilon), categories=categories)
    from pramkit.design.dp.optimal import dp_optimal

    return dp_optimal(_frequencies(p), _budget(epsilon), categories=categories, truthful=o["truthful"])


def _dp_reads(o: Mapping[str, Any]) -> bool:
    """The variance-optimal design does not depend on p, so it reads no frequencies; nor does the
    distance design with uniform or worst-case weights."""
    if o["objective"] == "distance":
        return o["weights"] == "frequencies"
    return o["objective"] != "variance"


def _dp_limit(o: Mapping[str, Any]) -> int | None:
    if o["objective"] == "distance":
        from pramkit.design.dp.distance import MAX_CATEGORIES

        return MAX_CATEGORIES
    if o["form"] == "general":
        from pramkit.design.dp.general import MAX_CATEGORIES

        return MAX_CATEGORIES
    return None


def _given(o: Mapping[str, Any]) -> dict[str, Any]:
    """The checked options without those left at ``None`` (for the designs that read a mapping)."""
    return {k: v for k, v in o.items() if v is not None}


# -- the metric family ------------------------------------------------------------------------------

#: The ``metric`` family's option rules.
METRIC_OPTIONS: dict[str, Rule] = {
    "distances": _distances_rule(),
    "metric_epsilon": Number(low=0, low_open=True, required=True),
    "mechanism": Choice(("exponential", "geometric", "optimal")),
    "unit": Instance((str,), "the name of the distances' unit"),
    "dilation": Number(low=1),
}


def _metric(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
            o: Mapping[str, Any]) -> PramMatrix:
    from pramkit.design.metric.mechanisms import build_metric

    return build_metric(categories, p, _given(o))


def _metric_limit(o: Mapping[str, Any]) -> int | None:
    if o["mechanism"] == "optimal":
        from pramkit.design.dp.distance import METRIC_LP_MAX

        return METRIC_LP_MAX
    return None


# -- the classic and bistochastic families ----------------------------------------------------------

#: The target beta of the bistochastic families (Ruiz and Domingo-Ferrer, Definition 1).
BETA = Number(low=0, high=1, low_open=True, high_open=True)
#: A floor that removes a matrix's zeros (at most 1/S, checked by the design).
GAMMA = Number(low=0, high=1)
#: A probability.
PROBABILITY = Number(low=0, high=1)


def _uniform_if_none(categories: Sequence[Label], p: np.ndarray | None) -> np.ndarray:
    return np.full(len(categories), 1.0 / len(categories)) if p is None else p


def _invariant(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
               o: Mapping[str, Any]) -> PramMatrix:
    from pramkit.design.classic import sdcmicro_pram

    return sdcmicro_pram(categories, _uniform_if_none(categories, p), pd=o["pd"], alpha=o["alpha"],
                         diagonal=o["diagonal"], seed=o["seed"])


def _keep(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
          o: Mapping[str, Any]) -> PramMatrix:
    from pramkit.design.classic import keep_probability

    return keep_probability(categories, o["keep"], bandwidth=o["bandwidth"])


def _rr(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
        o: Mapping[str, Any]) -> PramMatrix:
    if o["beta"] is not None:
        from pramkit.design.bistochastic.families import fit_family  # SciPy: imported when a fit runs

        return fit_family("rr", categories, o["beta"]).matrix
    from pramkit.design.classic import randomized_response

    return randomized_response(categories, _budget(epsilon))


def _one_of(name: str) -> Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]]:
    """The check that exactly one of option ``name`` and ``beta`` is given."""
    def coherent(given: Mapping[str, Any], o: dict[str, Any]) -> dict[str, Any]:
        if (name in given) == ("beta" in given):
            raise ParameterError(f"give exactly one of {name} and beta")
        return o

    return coherent


def _fitted(family: str, name: str) -> Design:
    """A bistochastic family: its own parameter ``name``, or fitted to a target beta; optional floor."""
    def design(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
               o: Mapping[str, Any]) -> PramMatrix:
        from pramkit.design.bistochastic.families import (
            circulant_keep,
            fit_family,
            k_anonymity,
            tridiagonal,
            with_floor,
        )

        if o["beta"] is not None:
            m = fit_family(family, categories, o["beta"]).matrix
        else:
            builders: dict[str, Callable[..., PramMatrix]] = {
                "kanon": k_anonymity, "tridiagonal": tridiagonal, "circulant": circulant_keep}
            build = builders[family]
            m = build(categories, o[name])
        return m if o.get("gamma") is None else with_floor(m, o["gamma"])

    return design


def _bistochastic_beta(categories: Sequence[Label], p: np.ndarray | None, epsilon: float | None,
                       o: Mapping[str, Any]) -> PramMatrix:
    from pramkit.design.bistochastic.families import compare_families, fit_family

    if o["family"] == "best":
        return compare_families(categories, _uniform_if_none(categories, p), o["beta"]).fits[0].matrix
    return fit_family(o["family"], categories, o["beta"]).matrix


def _beta_reads(o: Mapping[str, Any]) -> bool:
    return o["family"] == "best"


def _rr_budget(o: Mapping[str, Any]) -> bool:
    return o["beta"] is None


#: Method name -> :class:`DesignFamily`.
FAMILIES: dict[str, DesignFamily] = {
    "dp": DesignFamily(
        "dp", "epsilon-DP form (8) with maximal mutual information (Ayed, Battiston and Camerlenghi), or with the "
        "least variance of the unbiased estimator (objective variance), or the least expected distance moved "
        "(objective distance, with distances)",
        DP_OPTIONS, _dp, reads=_dp_reads, budgeted=_always, limit=_dp_limit, coherent=_dp_coherent,
        recorded=("truthful", "form", "objective"), recording=_dp_recorded, group=""),
    "metric": DesignFamily(
        "metric", "metric-DP: the exponential mechanism over distances, or the truncated geometric mechanism on the "
        "category order (metric_epsilon per unit of distance; reads no frequencies)",
        METRIC_OPTIONS, _metric, limit=_metric_limit, recorded=("metric_epsilon", "mechanism"), group="geo"),
    "invariant": DesignFamily(
        "invariant", "sdcMicro's invariant PRAM (reads p)",
        {"pd": Number(low=0, high=1, default=0.8), "alpha": Number(low=0, high=1, default=0.5),
         "diagonal": Choice(("uniform", "fixed")), "seed": Number(int, low=0)},
        _invariant, reads=_always),
    "keep": DesignFamily(
        "keep", "mu-ARGUS keep-probability PRAM (form (8) without a bandwidth)",
        {"keep": Number(low=0, high=1, required=True), "bandwidth": Number(int, low=1)}, _keep),
    "rr": DesignFamily(
        "rr", "randomized response at the variable's share of the budget (or a target beta), form (8)",
        {"beta": BETA}, _rr, budgeted=_rr_budget),
    "kanon": DesignFamily(
        "kanon", "k-anonymity blocks (Ruiz and Domingo-Ferrer, eq. 3)",
        {"k": Number(int, low=1), "beta": BETA, "gamma": GAMMA}, _fitted("kanon", "k"), coherent=_one_of("k")),
    "tridiagonal": DesignFamily(
        "tridiagonal", "tridiagonal bistochastic matrix (eq. 7)",
        {"alpha": Number(low=0, high=0.5), "beta": BETA, "gamma": GAMMA}, _fitted("tridiagonal", "alpha"),
        coherent=_one_of("alpha")),
    "circulant": DesignFamily(
        "circulant", "circulant bistochastic matrix (eq. 6)",
        {"keep": PROBABILITY, "beta": BETA}, _fitted("circulant", "keep"), coherent=_one_of("keep")),
    "bistochastic-beta": DesignFamily(
        "bistochastic-beta", "a bistochastic family fitted to a target beta (family best reads p)",
        {"beta": Number(low=0, high=1, low_open=True, high_open=True, required=True),
         "family": Choice(("best", "rr", "kanon", "tridiagonal", "circulant"))},
        _bistochastic_beta, reads=_beta_reads),
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
    >>> kanon.reads_frequencies({"k": 2}), kanon.takes_budget({"k": 2})
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
