"""Stage 1 of the design workflow: the plan, every parameter checked before any data is read.

:func:`plan_release` turns the keywords of :func:`pramkit.design_release` into one
:class:`ReleasePlan` value: the variables, the design family and its options, the
record budget and its split, where the design's frequencies come from, the distances,
the structure (edit rules, strata, kept codes, households: one
:class:`pramkit.release.targets.Shape`) and how missing values are treated.  A
mistake is a :class:`pramkit.errors.ParameterError` naming what to change; nothing is
read from the data until the plan is whole.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.design.registry import DesignFamily, family
from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.ledger import FrequencySource
from pramkit.public_inputs import Prior, read_codebook, read_prior, require_variables
from pramkit.release.rules import check_settings, check_split
from pramkit.release.targets import Shape, structure
from pramkit.settings import handed_on
from pramkit.structure import Rules
from pramkit.validate import (
    csv_separator,
    positive,
    text_encoding,
)


@dataclass(frozen=True)
class ReleasePlan:
    """A release's design, every parameter checked (:func:`plan_release`); no data read yet.

    Parameters
    ----------
    names : tuple of str
        The variables to perturb.
    method : str
        The design family's name.
    options : mapping
        The family's own options.
    split : str
        One of :data:`pramkit.release.rules.SPLITS`.
    budget : float or None
        The record's total budget (nats), design step included.
    per_variable : mapping or None
        Explicit per-variable budgets.
    design_epsilon : float or None
        The design step's budget as given (``None``: the default, once the data is counted).
    source : str
        Where the design's frequencies come from (:data:`pramkit.release.rules.SOURCES`).
    prior : Prior or None
        The public prior.
    categories : mapping or None
        Declared categories (a codebook).
    distances : mapping
        ``{variable: spec}``: the distances given.
    shape : Shape
        The structure.
    missing : str
        One of :data:`pramkit.release.rules.MISSING`.
    na_values : tuple of str
        Texts that mean missing in a CSV file.
    notes : tuple of str
        What the holder should know (the prior's notes, an unspent design epsilon).
    weights : tuple of str
        The sampling weight columns released with the file.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`).
    takes_budget : bool
        Whether the family with these options is built to a share of the budget
        (:meth:`pramkit.design.registry.DesignFamily.takes_budget`, found once by :func:`plan_release`
        and handed down to the allocation).

    Examples
    --------
    >>> plan = plan_release(["age", "sex"], epsilon=1.0)
    >>> plan.source, plan.counted, plan.takes_budget
    ('dp_counts', ('age', 'sex'), True)
    >>> plan_release(["age"], method="kanon", options={"k": 2}).takes_budget
    False
    """

    names: tuple[str, ...]
    method: str
    options: Mapping[str, Any]
    split: str = "equal"
    budget: float | None = None
    per_variable: Mapping[str, float] | None = None
    design_epsilon: float | None = None
    source: FrequencySource = "dp_counts"
    prior: Prior | None = None
    categories: Mapping[str, Sequence[Label]] | None = None
    distances: Mapping[str, Any] = field(default_factory=dict)
    shape: Shape = field(default_factory=Shape)
    missing: str = "keep"
    na_values: tuple[str, ...] = NA_VALUES
    notes: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()
    sep: str = CSV_SEP
    encoding: str = CSV_ENCODING
    takes_budget: bool = True

    @property
    def reading(self) -> dict[str, Any]:
        """How the original file is read: ``na_values``, ``sep`` and ``encoding``, as keyword arguments."""
        return {"na_values": self.na_values, "sep": self.sep, "encoding": self.encoding}

    @property
    def family(self) -> DesignFamily:
        """The design family."""
        return family(self.method)

    @property
    def counted(self) -> tuple[str, ...]:
        """The columns counted: the strata, then the variables."""
        return (*self.shape.strata, *self.names)

    @property
    def uses_distances(self) -> bool:
        """Whether the family designs with the distances (not only measures with them)."""
        return self.method == "metric" or (self.method == "dp" and self.options.get("objective") == "distance")


class PlanSettings(TypedDict, total=False):
    """The keyword settings of :func:`plan_release`, as one type: ``design_release(data, vars, **settings)``
    is checked by a type checker against it, so a misspelt setting (``epsilom=3.0``) is an error before it
    runs (it is refused in one line when it runs).  Each key is a keyword of :func:`plan_release`, with its
    type (tests/test_plan_settings.py holds the two together).

    Examples
    --------
    >>> sorted(PlanSettings.__annotations__)[:3]
    ['categories', 'design_epsilon', 'distances']
    """

    epsilon: float | None
    method: str
    split: str
    epsilon_per_variable: Mapping[str, float] | None
    design_epsilon: float | None
    prior: Prior | str | Path | None
    categories: Mapping[str, Sequence[Label]] | str | Path | None
    exact_frequencies: bool
    options: Mapping[str, Any] | None
    distances: Mapping[str, Any] | str | Path | None
    na_values: Sequence[str]
    forbid: Rules | str | Path | Sequence[Mapping[str, Any]] | None
    strata: str | Sequence[str]
    keep_codes: Mapping[str, Any] | None
    household: str | None
    household_vars: str | Sequence[str]
    rule_breaking: str
    missing: str
    weights: str | Sequence[str]
    sep: str
    encoding: str


def plan_release(
    variables: str | Sequence[str],
    spec: Any = None,
    *,
    epsilon: float | None = None,
    method: str = "dp",
    split: str = "equal",
    epsilon_per_variable: Mapping[str, float] | None = None,
    design_epsilon: float | None = None,
    prior: Prior | str | Path | None = None,
    categories: Mapping[str, Sequence[Label]] | str | Path | None = None,
    exact_frequencies: bool = False,
    options: Mapping[str, Any] | None = None,
    distances: Mapping[str, Any] | str | Path | None = None,
    na_values: Sequence[str] = NA_VALUES,
    forbid: Rules | str | Path | Sequence[Mapping[str, Any]] | None = None,
    strata: str | Sequence[str] = (),
    keep_codes: Mapping[str, Any] | None = None,
    household: str | None = None,
    household_vars: str | Sequence[str] = (),
    rule_breaking: str = "error",
    missing: str = "keep",
    weights: str | Sequence[str] = (),
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> ReleasePlan:
    """Check every parameter of a release's design, before any data is read.

    Parameters
    ----------
    variables : str or sequence of str
        The columns to perturb.
    spec : pramkit.release.spec.ReleaseSpec, optional
        Every setting in one value (:meth:`pramkit.release.spec.ReleaseSpec.plan`), instead of the
        keywords below (give one or the other).
    epsilon : float, optional
        The record's total budget (nats), design step included.  Required for the
        families designed to a budget (dp, rr) unless ``epsilon_per_variable`` is given;
        for the others it is checked.
    method : str
        A family of :data:`pramkit.design.registry.FAMILIES`.
    split : {"equal", "optimal", "joint"}
        How the perturbation's budget is shared (module docstring).  ``"joint"``: one matrix over
        the cells of the variables' cross-classification that the rules allow, for method ``dp``
        (at the whole budget) and ``invariant`` (sdcMicro's construction on the joint cells'
        frequencies, so that the released joint table equals the original in expectation).
    epsilon_per_variable : mapping, optional
        ``{variable: epsilon}``: explicit per-variable budgets instead of a split.
    design_epsilon : float, optional
        Budget of the design step's DP counts (default: :func:`pramkit.ledger.default_design_epsilon`).
    prior : Prior or path, optional
        Public frequencies (and categories): no design budget is spent.
    categories : mapping or path, optional
        Declared categories (a codebook): ``{variable: labels}`` or a codebook CSV.
    exact_frequencies : bool
        Design on the exact frequencies: no DP guarantee covers the design (the ledger says so).
    options : mapping, optional
        The family's own parameters (e.g. ``{"truthful": True}``, ``{"keep": 0.8}``).
    distances : str, Path, Distances or mapping, optional
        Distances between the categories (:func:`pramkit.distances.read_distances`:
        ``"ordinal"`` or a CSV of centroids, adjacencies or a table), for every variable or as
        ``{variable: spec}``: the ``dp`` family's ``objective="distance"`` and the ``metric``
        family design with them, and the design record gives each such variable's
        ``expected_distance`` (on the exact frequencies, in the distances' unit) for any method.
    na_values : sequence of str
        Texts that mean missing in a CSV file besides the empty field (default ``("NA",)``);
        the manifest's ``input`` records them, and ``pramkit apply`` must read the file the same way.
    sep, encoding : str
        The field separator and character encoding of a CSV file (default ``","`` and ``"utf-8"``;
        :func:`pramkit.io.csv_dialect`).
    forbid : Rules, path or list of mappings, optional
        Edit rules (:mod:`pramkit.structure`): forbidden combinations, public knowledge that
        costs no budget.  No released record holds one: with ``split="joint"`` the matrix
        covers the allowed cells only; a rule naming a single variable (or a variable and
        strata) removes cells from that variable's matrix; a rule coupling two variables
        perturbed independently is an error that points to ``split="joint"``.
    strata : str or sequence of str
        Stratum columns, released unperturbed: each variable's values move only within the
        values its record's stratum allows (those the rules leave it), by a block-diagonal
        matrix with a block per stratum, each designed at the variable's budget (its epsilon
        given the stratum).
    keep_codes : mapping, optional
        ``{variable: code or codes}``: codes that never change and into which nothing
        moves; membership in a kept code is released exactly and the ledger says so.
    household, household_vars : str, sequence of str
        The household id column and the variables perturbed once per household (every member
        gets the household's draw); each must be constant within a household, and their
        design counts households, not persons.
    rule_breaking : {"error", "keep"}
        An original record that breaks a rule: an error naming the row (default), or kept
        as it is (unperturbed) and counted in the design record's notes.
    missing : {"keep", "category"}
        ``"keep"`` (default): missing values stay missing and no value becomes missing, so which
        values are missing is released exactly (the ledger says so; a joint record missing some
        columns has the others perturbed by the matrix's margin over them).  ``"category"``:
        missing is a category of every variable (a level of every column of a joint design),
        designed and perturbed like the others, whether or not the file holds a missing value.
    weights : str or sequence of str
        Sampling weight columns released with the file (as they are): the ledger names them,
        since a rare weight can single a person out (:func:`pramkit.identification_risk` with
        ``weights=``), and the design checks that they are in the file.

    Returns
    -------
    ReleasePlan

    Raises
    ------
    ParameterError
        A parameter is malformed or inconsistent with another (budget, split, method,
        prior, distances, structure, missing).

    Examples
    --------
    >>> plan_release(["age"], method="rr", epsilon=1.0, split="optimal")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: split 'optimal' is for method 'dp'; method 'rr' designs each variable on its own (split equal)
    >>> plan_release(["age", "sex"], method="invariant", split="joint", design_epsilon=0.1).split
    'joint'
    >>> plan_release(["age"], epsilon=1.0, design_epsilon=1.0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the design epsilon 1 must be smaller than the record budget 1, which also pays for the perturbation

    The same settings as one specification (the command line's, checked by the same rules):

    >>> from pramkit.release.spec import ReleaseSpec
    >>> plan_release(["age", "sex"], ReleaseSpec(epsilon=1.0)).budget
    1.0
    >>> plan_release(["age"], ReleaseSpec(epsilon=1.0), split="joint")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: give the settings as a ReleaseSpec or as keywords, not both (split)
    """
    if spec is not None:
        return _from_spec(variables, spec, locals())
    check_settings(method=method, epsilon=epsilon, design_epsilon=design_epsilon, split=split, missing=missing,
                   rule_breaking=rule_breaking)  # each value once: the spec hands these to this check
    sep, _ = csv_separator(sep), text_encoding(encoding)  # the rules of sep and encoding, the separator named
    names = variable_names(variables)
    fam = family(method)
    opts = dict(options or {})
    if "split" not in handed_on():  # a specification's check has checked it (pramkit.settings.checked)
        check_split(split, method, opts)
    dist = _distance_specs(distances, names, split, opts)
    budget = None if epsilon is None else float(epsilon)  # checked by its rule above
    per_var = _per_variable(epsilon_per_variable, names, split)
    takes_budget = _check_budgets(fam, opts, budget, per_var)
    shape = structure(names, split, forbid, strata, keep_codes, household, household_vars, rule_breaking)
    prior = read_prior(prior) if isinstance(prior, (str, Path)) else prior
    if prior is not None:
        require_variables(prior.distributions, names, "prior")
    if exact_frequencies and prior is not None:
        raise ParameterError("give a prior or exact frequencies, not both")
    source = _source(fam.reads_frequencies(opts), prior, exact_frequencies)
    if source == "prior":
        assert prior is not None  # the source is the prior only when one is given (_source)
        require_variables(prior.distributions, list(shape.strata), "prior (the strata)")
    notes = [*(prior.notes if prior is not None else ()), *_design_epsilon_notes(design_epsilon, source, method)]
    _check_design_epsilon(design_epsilon, source, budget, per_var, method)
    declared = read_codebook(categories) if isinstance(categories, (str, Path)) else categories
    weight_columns = _weights(weights, names, shape)
    return ReleasePlan(tuple(names), method, opts, split, budget, per_var, design_epsilon, source, prior,
                       declared, dist, shape, missing, tuple(na_values), tuple(notes), weight_columns,
                       sep, encoding, takes_budget)


def _from_spec(variables: str | Sequence[str], spec: Any, given: Mapping[str, Any]) -> ReleasePlan:
    """The plan of ``spec`` (:meth:`pramkit.release.spec.ReleaseSpec.plan`), no keyword given besides it."""
    defaults = inspect.signature(plan_release).parameters
    other = [k for k, p in defaults.items() if p.kind is p.KEYWORD_ONLY and given[k] != p.default]
    if other:
        raise ParameterError(f"give the settings as a ReleaseSpec or as keywords, not both ({', '.join(other)})")
    return spec.plan(variable_names(variables))


def _weights(weights: str | Sequence[str], names: Sequence[str], shape: Shape) -> tuple[str, ...]:
    """The sampling weight columns released with the file: named, none perturbed nor a stratum.

    Examples
    --------
    >>> _weights("rb050", ["age"], Shape()), _weights((), ["age"], Shape())
    (('rb050',), ())
    >>> _weights("age", ["age"], Shape())
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: weights names 'age', which is perturbed: a weight column is released as it is
    """
    columns = tuple(c.strip() for c in weights.split(",")) if isinstance(weights, str) else tuple(weights)
    if not all(isinstance(c, str) and c for c in columns):
        raise ParameterError(f"weights must name columns, got {weights!r}")
    for c in columns:
        if c in names or c in shape.strata:
            what = "perturbed" if c in names else "a stratum"
            raise ParameterError(f"weights names {c!r}, which is {what}: a weight column is released as it is")
    return columns


def variable_names(variables: str | Sequence[str]) -> list[str]:
    """The variables to perturb, as a list: at least one, each a name, none twice.

    Examples
    --------
    >>> variable_names("sex"), variable_names(["age", "sex"])
    (['sex'], ['age', 'sex'])
    >>> variable_names(["age", "age"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: a variable is listed twice: ['age', 'age']
    """
    names = [variables] if isinstance(variables, str) else list(variables)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ParameterError("give at least one variable (column name) to perturb")
    if len(set(names)) != len(names):
        raise ParameterError(f"a variable is listed twice: {names}")
    return names


def _distance_specs(distances: Mapping[str, Any] | str | Path | None, names: list[str], split: str,
                    options: Mapping[str, Any]) -> dict[str, Any]:
    """``{variable: spec}`` of the distances given, checked against the variables and split."""
    if distances is None:
        return {}
    specs = dict(distances) if isinstance(distances, Mapping) else dict.fromkeys(names, distances)
    if set(specs) - set(names):
        raise ParameterError(f"distances name {sorted(set(specs) - set(names))}, which are not among the "
                             f"variables {names}")
    if "distances" in options:
        raise ParameterError("give distances once: as distances=, not also as an option")
    discrete = all(isinstance(v, str) and v.strip().lower() == "discrete" for v in specs.values())
    if split == "joint" and discrete and set(specs) == set(names):
        return {"*".join(names): "discrete"}      # the joint cells, every change counting 1
    if split != "equal":
        raise ParameterError("distances apply to split equal (one matrix per variable), or 'discrete' to every "
                             "variable of split joint")
    return specs


def _per_variable(given: Mapping[str, float] | None, names: list[str], split: str) -> dict[str, float] | None:
    if given is None:
        return None
    per_var = {n: positive(e, f"epsilon of {n!r}") for n, e in given.items()}
    require_variables(per_var, names, "per-variable budget")
    if set(per_var) - set(names):
        raise ParameterError(f"per-variable budgets name {sorted(set(per_var) - set(names))}, "
                             f"which are not among the variables {names}")
    if split != "equal":
        raise ParameterError("give either per-variable budgets or a split, not both")
    return per_var


def _check_budgets(fam: DesignFamily, options: Mapping[str, Any], budget: float | None,
                   per_var: Mapping[str, float] | None) -> bool:
    """Whether the family with these options is built to a share of the budget, the budgets checked against it."""
    takes_budget = fam.takes_budget(options)
    if takes_budget and budget is None and per_var is None:
        raise ParameterError(f"method {fam.name!r} needs epsilon (the record budget) or per-variable budgets")
    if not takes_budget and per_var is not None:
        raise ParameterError(f"method {fam.name!r} fixes each variable's epsilon by its own parameters; "
                             "per-variable budgets do not apply")
    return takes_budget


def _source(reads: bool, prior: Prior | None, exact: bool) -> FrequencySource:
    """Where the design's frequencies come from (:data:`pramkit.release.rules.SOURCES`)."""
    return "none" if not reads else "prior" if prior is not None else "exact" if exact else "dp_counts"


def _check_design_epsilon(design_epsilon: float | None, source: str, budget: float | None,
                          per_var: Mapping[str, float] | None, method: str) -> None:
    if design_epsilon is None:
        if source == "dp_counts" and budget is None and not per_var:
            raise ParameterError(f"method {method!r} reads frequencies: give epsilon (the record budget), "
                                 "design_epsilon, or a public prior")
        return
    if source == "dp_counts" and design_epsilon == 0:  # a non-negative finite number by its rule (check_settings)
        raise ParameterError(f"design epsilon must be a positive finite number, got {design_epsilon!r}")
    if budget is not None and not design_epsilon < budget:
        raise ParameterError(f"the design epsilon {design_epsilon:g} must be smaller than the record budget "
                             f"{budget:g}, which also pays for the perturbation")


def _design_epsilon_notes(design_epsilon: float | None, source: str, method: str) -> list[str]:
    """A note when a design epsilon is given but no DP counts spend it."""
    if design_epsilon is None or source == "dp_counts":
        return []
    why = {"none": f"method {method!r} reads no frequencies", "prior": "the design uses the public prior",
           "exact": "the design uses the exact frequencies"}[source]
    return [f"design epsilon not spent: {why}"]
