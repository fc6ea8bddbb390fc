"""The privacy ledger: everything a release spends, and on what.

A release publishes three things: the released file, the manifest and the
public report.  The ledger states, in the manifest, what protects each of
them:

* the **design step**: a data-dependent design (the DP-optimal matrix of Ayed,
  Battiston and Camerlenghi is a function of the category frequencies p) reads
  the data.  pramkit takes the frequencies through the geometric mechanism
  (:mod:`pramkit.privacy.geometric`) at ``design_epsilon``, from a public prior
  (no budget), or not at all (data-free designs such as randomized response);
* the **perturbation**: each perturbed variable's matrix is epsilon_j-DP per
  record (Shlomo and Skinner 2012, sec. 4).

Both steps touch every record, so they compose sequentially (replace-one
neighbours, the unit of PRAM's own epsilon)::

    record epsilon = design_epsilon + sum_j epsilon_j

and the sum is rounded outward (:func:`pramkit.privacy.epsilon.record_epsilon`).
Anything that reaches a public file from the data without a DP mechanism (a
list of categories read from the data, frequencies used exactly) is named in
``data_dependent``, in plain words, and the guarantee sentence says so.  Every
value the release shows exactly (a missing value kept missing, a stratum, the class
of a block-diagonal matrix, a kept code, a rule breaker kept, a household id) is an :class:`ExactFact`; the manifest
derives them from its matrices and its structure (:attr:`pramkit.Manifest.exact_facts`)
and :meth:`Ledger.statement`, the only writer of the guarantee sentence, builds the
sentence from them.

The threat model and the list of public and private artifacts are in
``docs/privacy.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from typing import Any, Literal

from pramkit.errors import ManifestError, ParameterError
from pramkit.privacy.epsilon import REALISED_SLACK, record_epsilon
from pramkit.privacy.kinds import GuaranteeFigure, guarantee_figures

#: Largest share of the record budget that the default design step spends
#: (measured in docs/privacy.md).
DEFAULT_DESIGN_SHARE = 0.1
#: The default design step aims for noise whose standard deviation is at most this
#: share of a histogram's mean count n / K (docs/privacy.md).
DEFAULT_NOISE_SHARE = 0.05

#: Where a design's frequencies came from.
FrequencySource = Literal["dp_counts", "prior", "none", "exact"]
FREQUENCY_SOURCES: tuple[str, ...] = ("dp_counts", "prior", "none", "exact")

#: What kinds of value a release can show exactly (:class:`ExactFact`), in the order the sentence names them.
FACT_KINDS: tuple[str, ...] = ("stratum", "block", "kept_code", "missing", "missing_code", "joint_missing",
                               "stratum_missing", "unpaired", "rule_breaker", "household", "weights", "suppressed")
#: How local suppression counts a missing key value (``pramkit suppress --missing``), in words.
MISSING_RULE_WORDS: dict[str, str] = {"own": "a missing value is a value of its own",
                                      "any": "a missing value matches any value"}

#: Where a variable's list of categories came from.
CategorySource = Literal["declared", "prior", "data"]
CATEGORY_SOURCES: tuple[str, ...] = ("declared", "prior", "data")


@dataclass(frozen=True)
class ExactFact:
    """One kind of value that a release shows exactly, as the original file holds it.

    Parameters
    ----------
    kind : str
        One of :data:`FACT_KINDS`: ``"stratum"`` (stratum columns, released unperturbed),
        ``"block"`` (which class of a variable's categories a value lies in: blocks of its matrix
        that no stratum nor kept code explains, as k-anonymity's classes),
        ``"kept_code"`` (whether a value is one the matrix never changes), ``"missing"``
        (whether a value is missing: kept missing, and nothing becomes missing), ``"missing_code"``
        (which missing code a missing value holds: Stata's .a-.z, SAS's .A-.Z and ._, SPSS's
        user-missing values, kept as they are),
        ``"joint_missing"`` (which columns of a joint variable are missing; the others are
        perturbed by the matrix's margin over them), ``"stratum_missing"`` (a record whose
        stratum is missing: its values of the variable are released unperturbed), ``"unpaired"``
        (a record holding a value that the edit rules allow only with another column of the joint
        variable missing: its values are released unperturbed),
        ``"rule_breaker"`` (records that break an edit rule, released unperturbed) or
        ``"household"`` (the household id, released as it is; the household variables are
        drawn once per household), ``"weights"`` (sampling weight columns, released as they
        are: a rare weight can single a person out) or ``"suppressed"`` (which key values local suppression
        made missing before the perturbation, chosen from the whole file: its ``values`` are k, the rule for
        a missing value, the keys released as they are and the stratum columns).
    variables : tuple of str
        The perturbed variables (or, for ``"stratum"`` and ``"household"``, the columns)
        the fact is about.
    reveals : str
        What the released file shows exactly, in words (a clause of the guarantee sentence).
    column : str or None
        The column the fact names when it is not a perturbed one (a household id).
    covered : bool
        True when an epsilon still bounds the values concerned given the fact (classes, kept codes,
        missingness: the epsilon given the block); False when the values themselves are
        released unperturbed (a missing stratum, a rule breaker): the sentence then states
        them apart, after the bound.

    Examples
    --------
    >>> f = ExactFact("missing", ("age",), "whether age is missing")
    >>> ExactFact.from_dict(f.to_dict()) == f
    True
    >>> ExactFact("guessed", ("age",), "x")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: a released-exactly fact's kind must be one of ('stratum', 'block', 'kept_code', 'missing', 'missing_code', 'joint_missing', 'stratum_missing', 'unpaired', 'rule_breaker', 'household', 'weights', 'suppressed'), got 'guessed'
    """

    kind: str
    variables: tuple[str, ...]
    reveals: str
    column: str | None = None
    covered: bool = True
    values: tuple[Any, ...] = ()
    strata: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in FACT_KINDS:
            raise ParameterError(f"a released-exactly fact's kind must be one of {FACT_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "values", _tuples(self.values))
        object.__setattr__(self, "strata", _tuples(self.strata))
        if not isinstance(self.reveals, str) or not self.reveals:
            raise ParameterError("a released-exactly fact needs its words (reveals)")

    @classmethod
    def of(cls, kind: str, variables: Sequence[str], *, values: Sequence[Any] = (), strata: Sequence[Any] = (),
           column: str | None = None) -> ExactFact:
        """The fact of ``kind`` with its words written from what it is about: the only writer of a
        fact's words (:func:`fact_words`), so that each clause of the guarantee sentence says what the
        matrices and the structure do.

        Parameters
        ----------
        kind : str
            One of :data:`FACT_KINDS`.
        variables : sequence of str
            The variables (for ``"stratum"``, the stratum columns).
        values : sequence
            What the fact is about: the values never changed (``"kept_code"``), the classes
            (``"block"``), the columns of a joint variable (``"joint_missing"``, ``"stratum_missing"``),
            the missing codes in words (``"missing_code"``).
        strata : sequence of tuple
            The strata (their values) in which a ``"kept_code"`` fact holds; empty: in every one.
        column : str, optional
            The column(s) named apart: the stratum columns of a ``"kept_code"`` fact that holds in some
            strata only, or of a ``"stratum_missing"`` fact; the household id; the weights.

        Returns
        -------
        ExactFact
            ``covered`` is false for the values released unperturbed (``"stratum_missing"``,
            ``"rule_breaker"``, ``"weights"``).

        Examples
        --------
        >>> ExactFact.of("kept_code", ["occupation"], values=["n/a"]).reveals
        "whether occupation is one of the values it never changes ('n/a')"
        >>> ExactFact.of("kept_code", ["marital"], values=["single"], strata=[("0-9",), ("10-17",)], column="age").reveals
        "whether marital is 'single' in a record whose age is '0-9' or '10-17' (it never changes there, and other strata change it)"
        >>> ExactFact.of("rule_breaker", ["age"]).covered
        False
        """
        fact = cls(kind, tuple(variables), "-", column, kind not in _UNCOVERED_KINDS, tuple(values), tuple(strata))
        object.__setattr__(fact, "reveals", fact_words(fact))
        return fact

    def to_dict(self) -> dict[str, Any]:
        """The fact as JSON values (the manifest's ``ledger.released_exactly_facts``)."""
        return {"kind": self.kind, "variables": list(self.variables), "reveals": self.reveals,
                **({"column": self.column} if self.column is not None else {}), "covered": self.covered,
                **({"values": _lists(self.values)} if self.values else {}),
                **({"strata": _lists(self.strata)} if self.strata else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExactFact:
        """The fact from :meth:`to_dict`."""
        return cls(d["kind"], tuple(d["variables"]), d["reveals"], d.get("column"), bool(d.get("covered", True)),
                   tuple(d.get("values", ())), tuple(d.get("strata", ())))


#: Kinds of fact whose values are released unperturbed: no epsilon covers them (stated after the bound).
_UNCOVERED_KINDS = ("stratum_missing", "unpaired", "rule_breaker", "weights", "suppressed")


def _tuples(x: Any) -> Any:
    """Lists (from JSON) as tuples, at every depth, so that a fact read back equals the one written."""
    return tuple(_tuples(v) for v in x) if isinstance(x, (list, tuple)) else x


def _lists(x: Any) -> Any:
    return [_lists(v) for v in x] if isinstance(x, (list, tuple)) else x


def listed(names: Sequence[Any]) -> str:
    """Names as a list in a sentence: ``a``, ``a and b``, ``a, b and c``.

    >>> listed(["age"]), listed(["age", "sex"]), listed(["age", "sex", "region"])
    ('age', 'age and sex', 'age, sex and region')
    """
    names = [str(n) for n in names]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _shown(values: Sequence[Any], most: int) -> str:
    return ", ".join(repr(x) for x in values[:most]) + (", ..." if len(values) > most else "")


def fact_words(fact: ExactFact) -> str:
    """What ``fact`` shows exactly, in words (a clause of the guarantee sentence), from its kind,
    variables, values, strata and column alone.

    Parameters
    ----------
    fact : ExactFact

    Returns
    -------
    str

    Examples
    --------
    >>> fact_words(ExactFact("missing", ("age", "sex", "region"), "-"))
    'which values of age, sex and region are missing'
    >>> fact_words(ExactFact("stratum", ("sex",), "-"))
    'the strata (sex, released unperturbed)'
    """
    k, v = fact.kind, fact.variables
    if k == "stratum":
        return f"the strata ({', '.join(v)}, released unperturbed)"
    if k == "block":
        shown = ", ".join("{" + _shown(c, 4) + "}" for c in fact.values[:3]) + (", ..." if len(fact.values) > 3 else "")
        return f"which class of {v[0]}'s categories each value lies in (the matrix's blocks: {shown})"
    if k == "kept_code" and not fact.strata:
        return f"whether {v[0]} is one of the values it never changes ({_shown(fact.values, 5)})"
    if k == "kept_code":
        where = " or ".join(repr(s[0] if len(s) == 1 else s) for s in fact.strata[:5]) + (
            " or ..." if len(fact.strata) > 5 else "")
        what = " or ".join(repr(x) for x in fact.values)
        return (f"whether {v[0]} is {what} in a record whose {fact.column} is {where} (it never changes there, "
                "and other strata change it)")
    if k == "missing":
        return f"which values of {listed(v)} are missing"
    if k == "missing_code":
        return f"which missing code each missing value of {listed(v)} holds ({fact.values[0]})"
    if k == "joint_missing":
        return (f"which of {', '.join(fact.values)} are missing in each record (they stay missing and no value "
                "becomes missing; the others are perturbed by the matrix's margin over them)")
    if k == "stratum_missing":
        return (f"the values of {', '.join(fact.values)} in a record whose stratum ({fact.column}) is missing are "
                "released unperturbed")
    if k == "unpaired":
        held = " or ".join(str(x) for x in fact.values)
        return (f"the values of {fact.column} in a record that holds {held}, which the edit rules allow only where "
                "another of them is missing, are released unperturbed")
    if k == "rule_breaker":
        return "records that break an edit rule are released unperturbed"
    if k == "household":
        return f"the household id {fact.column} (who lives with whom)"
    if k == "suppressed":
        least, rule, _, strata = fact.values
        return (f"which values {suppression_fragment('keys', v)}, chosen by local suppression from the whole file "
                f"before the perturbation so that every combination of the keys "
                f"{suppression_fragment('k', least)}{suppression_fragment('strata', strata)} "
                f"{suppression_fragment('missing', rule)}")
    return (f"the sampling weights ({fact.column}) are released as they are, and a rare weight can single a person "
            "out (pramkit risk --weights measures how far)")


def suppression_fragment(field: str, value: Any) -> str:
    """The words of the ``"suppressed"`` fact that state one setting of the manifest's ``input.suppression``
    (``keys``, ``k``, ``missing``, ``strata``), so that the audit ties each to the guarantee sentence on its own.

    Examples
    --------
    >>> f = ExactFact.of("suppressed", ["region", "age"], values=[3, "any", [], ["sex"]])
    >>> [suppression_fragment(n, v) in f.reveals for n, v in
    ...  (("keys", ["region", "age"]), ("k", 3), ("missing", "any"), ("strata", ["sex"]), ("k", 4))]
    [True, True, True, True, False]
    """
    if field == "keys":
        return f"of the keys {listed([str(x) for x in value])} are missing"
    if field == "k":
        return f"appeared at least {value} times"
    if field == "missing":
        return f"({MISSING_RULE_WORDS[value]})" if value in MISSING_RULE_WORDS else f"(the rule {value!r})"
    return f" within each stratum of {listed([str(x) for x in value])}" if value else ""


def suppression_words(fact: ExactFact) -> str:
    """The sentences a ``"suppressed"`` fact adds after the bound: the epsilon is of the records after suppression,
    and the keys released as they are keep k-anonymity in the released file (as
    ``pramkit audit`` recounts it there).

    Examples
    --------
    >>> f = ExactFact.of("suppressed", ["region", "age", "sex"], values=[3, "own", ["region", "sex"], []])
    >>> suppression_words(f)
    ' The epsilon is of the records after suppression. Every combination of region and sex, released as they are, appears at least 3 times in the released file (a missing value is a value of its own).'
    >>> suppression_words(ExactFact.of("suppressed", ["age"], values=[2, "any", [], []]))
    ' The epsilon is of the records after suppression.'
    """
    least, rule, exact, strata = fact.values
    words = " The epsilon is of the records after suppression."
    if exact:
        within = f" within each stratum of {listed(strata)}" if strata else ""
        words += (f" Every combination of {listed(exact)}, released as they are, appears at least {least} times{within} "
                  f"in the released file ({MISSING_RULE_WORDS[rule]}).")
    return words


def kept_values(categories: Sequence[Any], blocks: Sequence[Any], given: int
                ) -> tuple[list[Any], dict[Any, list[tuple[Any, ...]]]]:
    """The values a block-diagonal matrix never changes, and where the release shows them.

    A value never changes in a stratum when its cell is a block of its own (``M[k, k] = 1``, and no
    other cell moves into it).  The release shows it exactly where its stratum holds another block
    too (a stratum of one block shows nothing the stratum does not).

    Parameters
    ----------
    categories : sequence
        The matrix's categories: labels, or tuples whose first ``given`` values are the stratum's.
    blocks : sequence of sequence of int
        The positions of each block's categories.
    given : int
        The number of stratum columns.

    Returns
    -------
    never : list
        The variable's own values (a label, or a tuple for several columns) that no block of any
        stratum moves, in the matrix's order.
    shown : dict
        Value -> the strata (tuples of their values) where it is a block of its own beside other
        blocks: where the release shows exactly whether a value is it.

    Examples
    --------
    'single' is the only value age 0-9 allows (a block of one, the whole stratum), and age 10+
    moves it: it is not a value the matrix never changes, and nothing is shown beyond the stratum.

    >>> cats = [("0-9", "single"), ("10+", "single"), ("10+", "married"), ("10+", "n/a")]
    >>> kept_values(cats, [[0], [1, 2], [3]], 1)
    (['n/a'], {'n/a': [('10+',)]})
    >>> kept_values(cats + [("0-9", "n/a")], [[0], [1, 2], [3], [4]], 1)
    (['n/a'], {'single': [('0-9',)], 'n/a': [('10+',), ('0-9',)]})
    """
    cells = [c if isinstance(c, tuple) else (c,) for c in categories]
    block_of = {int(i): b for b, idx in enumerate(blocks) for i in idx}
    size = {b: len(idx) for b, idx in enumerate(blocks)}
    per_stratum: dict[tuple, set[int]] = {}
    for k, c in enumerate(cells):
        per_stratum.setdefault(c[:given], set()).add(block_of[k])

    def own(c: tuple) -> Any:
        return c[given] if len(c) - given == 1 else c[given:]

    moved = {own(c) for k, c in enumerate(cells) if size[block_of[k]] > 1}
    shown: dict[Any, list[tuple]] = {}
    for k, c in enumerate(cells):
        if size[block_of[k]] == 1 and len(per_stratum[c[:given]]) > 1:
            shown.setdefault(own(c), []).append(c[:given])
    never = list(dict.fromkeys(own(c) for c in cells if own(c) not in moved))
    return never, {x: list(dict.fromkeys(where)) for x, where in shown.items()}


def kept_facts(name: str, categories: Sequence[Any], blocks: Sequence[Any], given: Sequence[str]
               ) -> list[ExactFact]:
    """The ``"kept_code"`` facts of a variable (:func:`kept_values`): one for the values no stratum
    changes, one per value that some strata never change and others do, naming those strata.

    Examples
    --------
    >>> cats = [("0-9", "single"), ("10+", "single"), ("10+", "married"), ("10+", "n/a")]
    >>> [f.reveals for f in kept_facts("marital", cats, [[0], [1, 2], [3]], ["age"])]
    ["whether marital is one of the values it never changes ('n/a')"]
    """
    never, shown = kept_values(categories, blocks, len(given))
    everywhere = [x for x in never if x in shown]
    facts = [ExactFact.of("kept_code", (name,), values=everywhere)] if everywhere else []
    return facts + [ExactFact.of("kept_code", (name,), values=(x,), strata=where, column=", ".join(given))
                    for x, where in shown.items() if x not in never]


def exact_words(facts: Sequence[ExactFact]) -> str | None:
    """What ``facts`` show exactly, as one clause (``None`` without facts): the manifest's
    ``released_exactly``.

    Parameters
    ----------
    facts : sequence of ExactFact

    Returns
    -------
    str or None

    Examples
    --------
    >>> exact_words([ExactFact("missing", ("age",), "whether age is missing"),
    ...              ExactFact("stratum", ("sex",), "the strata (sex, released unperturbed)")])
    'the strata (sex, released unperturbed); whether age is missing'
    >>> exact_words([]) is None
    True
    """
    ordered = sorted(facts, key=lambda f: FACT_KINDS.index(f.kind))
    words = list(dict.fromkeys(f.reveals for f in ordered if f.kind != "household"))
    return "; ".join(words) if words else None


@dataclass(frozen=True)
class Ledger:
    """The privacy ledger of one release (published in the manifest).

    Parameters
    ----------
    design_epsilon : float
        Epsilon spent by the design step's DP counts (0 when none were taken), nats.
    frequencies : {"dp_counts", "prior", "none", "exact"}
        Where the design's frequencies came from: the geometric mechanism, a public
        prior, nowhere (a data-free design), or the exact data (no DP guarantee).
    record_epsilon_budget : float or None
        The record budget the holder gave (design step included), nats.
    prior : str or None
        The name of the public prior (``frequencies="prior"``).
    categories : mapping
        Column -> where its categories came from: ``"declared"`` (a codebook or the
        caller), ``"prior"`` or ``"data"`` (read from the original file: not covered
        by any epsilon).
    data_dependent : tuple of str
        Plain-words statements of what reaches the public files from the data
        without a DP mechanism.
    dp_counts : mapping
        Variable -> the DP output of the design step (``{"epsilon", "sensitivity",
        "counts"}``): public, since it is the mechanism's output.
    derived_from : mapping
        A derived release (``pramkit design --derive-from``): the release it perturbs again,
        ``{"manifest", "sha256", "record_epsilon"}`` (its manifest's file name, the SHA-256 of
        that file's bytes, its record epsilon); empty otherwise.  The pair of releases
        together has that record epsilon: the derived file is post-processing of the other.

    Raises
    ------
    ParameterError
        A negative or non-finite design epsilon, or an unknown source.

    Examples
    --------
    >>> led = Ledger(design_epsilon=0.1, frequencies="dp_counts", categories={"sex": "declared"})
    >>> led.total(split_within(1.0, 0.1, [1, 1])) <= 1.0
    True
    >>> led.covers_everything
    True
    """

    design_epsilon: float = 0.0
    frequencies: FrequencySource = "none"
    record_epsilon_budget: float | None = None
    prior: str | None = None
    categories: Mapping[str, CategorySource] = field(default_factory=dict)
    data_dependent: tuple[str, ...] = ()
    dp_counts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    derived_from: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (isinstance(self.design_epsilon, (int, float)) and math.isfinite(self.design_epsilon)
                and self.design_epsilon >= 0):
            raise ParameterError(f"design epsilon must be finite and >= 0, got {self.design_epsilon!r}")
        if self.frequencies not in FREQUENCY_SOURCES:
            raise ParameterError(f"frequencies must be one of {FREQUENCY_SOURCES}, got {self.frequencies!r}")
        budget = self.record_epsilon_budget
        if budget is not None and not (isinstance(budget, (int, float)) and math.isfinite(budget) and budget > 0):
            raise ParameterError(f"the record epsilon budget must be a positive finite number, got {budget!r}")
        bad = {c: s for c, s in self.categories.items() if s not in CATEGORY_SOURCES}
        if bad:
            raise ParameterError(f"category sources must be one of {CATEGORY_SOURCES}, got {bad}")
        object.__setattr__(self, "data_dependent", tuple(self.data_dependent))
        if self.derived_from and not (set(self.derived_from) == {"manifest", "sha256", "record_epsilon"}
                                      and isinstance(self.derived_from["sha256"], str)
                                      and isinstance(self.derived_from["record_epsilon"], (int, float))):
            raise ParameterError("derived_from must hold the manifest's name, its sha256 and its record epsilon")

    @property
    def covers_everything(self) -> bool:
        """True when nothing public comes from the data outside a DP mechanism."""
        return not self.data_dependent

    def total(self, variable_epsilons: Sequence[float]) -> float:
        """The record epsilon: design step plus every variable's epsilon, rounded outward.

        Parameters
        ----------
        variable_epsilons : sequence of float
            Each perturbed variable's epsilon (Shlomo and Skinner 2012, section 4), nats.

        Returns
        -------
        float
            The smallest double not below the exact sum (:func:`pramkit.privacy.epsilon.record_epsilon`);
            infinite if any term is.

        Examples
        --------
        Shares from :func:`split_within` stay within the budget once the design step is added:

        >>> led = Ledger(design_epsilon=0.1, frequencies="dp_counts")
        >>> led.total(split_within(2.0, 0.1, [1, 1, 1])) <= 2.0
        True
        >>> Ledger().total([0.1] * 10) > 1.0  # the doubles 0.1 add up to just over 1
        True
        >>> led.total([0.5, math.inf])
        inf
        """
        return record_epsilon([float(self.design_epsilon), *variable_epsilons])

    def statement(self, variable_epsilons: Sequence[float], given: str | None = None,
                  facts: Sequence[ExactFact] = (), unperturbed: Sequence[str] | None = None) -> str:
        """The guarantee sentence, true for exactly what is published: the only writer of it.

        ``facts`` (:class:`ExactFact`) are what the release shows exactly (missingness, strata,
        classes, kept codes, rule breakers, household ids); the epsilons are then each variable's epsilon
        given them, and the sentence says that the guarantee holds among records that agree on
        them.  ``given`` is an older way to say the same in words (a fact of its own).

        Parameters
        ----------
        variable_epsilons : sequence of float
            Each variable's epsilon (given what is shown exactly).
        given : str, optional
            What the release shows exactly, in words.
        facts : sequence of ExactFact
            What the release shows exactly (:attr:`pramkit.Manifest.exact_facts`).
        unperturbed : sequence of str, optional
            The released file's columns that are neither perturbed nor named by a fact (released as
            they are), when the file is known: the sentence names them (or, when there are none,
            says nothing of them); ``None``: the sentence speaks of such columns in general.

        Returns
        -------
        str
            One or more sentences: what is shown exactly, the factor ``e^epsilon`` that bounds
            what changing one record changes, what the epsilon covers, and what it does not.

        Examples
        --------
        >>> led = Ledger(frequencies="none")
        >>> led.statement([1.0, 0.5]).startswith("Changing one person's record in its perturbed variables")
        True
        >>> led.statement([1.0], given="the strata (region, released unperturbed)")[:56]
        'The released file shows exactly, as the original does: t'
        >>> text = led.statement([1.0], facts=[ExactFact("missing", ("age",), "which values of age are missing")])
        >>> text[:100]
        'The released file shows exactly, as the original does: which values of age are missing; no epsilon c'
        """
        total = self.total(variable_epsilons)
        pair = "" if not self.derived_from else (
            f" Published with the release it perturbs again (manifest {self.derived_from['manifest']!r}, SHA-256 "
            f"{self.derived_from['sha256']}), the pair's record epsilon is that release's, "
            f"{fmt_epsilon(float(self.derived_from['record_epsilon']))}, not the sum: this file is post-processing "
            "of it.")
        exactly = "; ".join(w for w in (given, exact_words([f for f in facts if f.covered])) if w) or None
        lead = f"The released file shows exactly, as the original does: {exactly}; no epsilon covers that. " \
            if exactly else ""
        tail = "".join(f" {f.reveals[0].upper()}{f.reveals[1:]}: no epsilon covers them." for f in facts
                       if not f.covered) + "".join(suppression_words(f) for f in facts if f.kind == "suppressed") + pair
        tail += "".join(f" The household variables {', '.join(f.variables)} are perturbed once per household "
                       f"({f.column}, released as it is): their epsilons, counted in every member's record epsilon, "
                       "bound what changing one household's values of them changes."
                       for f in facts if f.kind == "household")
        if self.frequencies == "dp_counts":
            how = (f"the design step's noisy counts (epsilon {fmt_epsilon(self.design_epsilon)}) and the "
                   f"perturbation (epsilon {fmt_epsilon(record_epsilon(list(variable_epsilons)))})")
        elif self.frequencies == "prior":
            how = f"the perturbation alone (the design used the public prior {self.prior!r}, which costs nothing)"
        else:
            how = "the perturbation alone (the design did not read the data's frequencies)" \
                if self.frequencies == "none" else "the perturbation"
        if math.isinf(total):
            return (lead + "The perturbation releases some original values exactly (infinite epsilon): no "
                    "differential-privacy guarantee holds for this release."
                    + ("" if self.covers_everything else " Also derived from the data: "
                       + "; ".join(self.data_dependent) + ".") + unperturbed_words(unperturbed) + tail)
        factor = f"a factor of at most e^{fmt_epsilon(total)}" + (
            f" = {math.exp(total):.4g}" if total < 700 else ", more than 10^300: no practical bound")
        change = "changing one person's record in its perturbed variables"
        if exactly:
            change += ", keeping what is shown exactly,"
        rest = unperturbed_words(unperturbed)
        if self.covers_everything:
            return (f"{lead}{change[0].upper()}{change[1:]} changes the probability of "
                    f"anything published (the released file, the manifest, the public report) by {factor}; this "
                    f"record epsilon of {fmt_epsilon(total)} covers {how}.{rest}{tail}")
        return (f"{lead}Given the published manifest, {change} changes the probability "
                f"of the released file by {factor} ({how}). This does not cover the manifest itself: "
                + "; ".join(self.data_dependent) + "." + rest + tail)

    def to_dict(self, variable_epsilons: Sequence[float], given: str | None = None,
                facts: Sequence[ExactFact] = ()) -> dict[str, Any]:
        """The manifest's ``ledger`` object (JSON-able); with ``given`` or ``facts`` (see
        :meth:`statement`), ``record_epsilon`` is the epsilon given what is shown exactly,
        ``released_exactly`` says it in words and ``released_exactly_facts`` lists the facts.

        Parameters
        ----------
        variable_epsilons : sequence of float
            Each variable's epsilon (given what is shown exactly).
        given : str, optional
            What the release shows exactly, in words.
        facts : sequence of ExactFact
            What the release shows exactly.

        Returns
        -------
        dict
            The ledger's fields, the perturbation's and the record's epsilons (``"inf"``
            when infinite), the facts and the :meth:`statement`.

        Examples
        --------
        A JSON round trip gives the same ledger, and the epsilons add up:

        >>> import json
        >>> led = Ledger(design_epsilon=0.1, frequencies="dp_counts", record_epsilon_budget=2.0,
        ...              categories={"age": "declared", "sex": "declared"})
        >>> d = json.loads(json.dumps(led.to_dict([0.9, 0.9])))
        >>> Ledger.from_dict(d) == led
        True
        >>> d["design_epsilon"], d["perturbation_epsilon"], d["record_epsilon"] <= d["record_epsilon_budget"]
        (0.1, 1.8, True)
        >>> d["covers_everything_published"], "e^1.901" in d["statement"]  # 1.9 and an ulp, rounded up
        (True, True)
        >>> fact = ExactFact("missing", ("age",), "which values of age are missing")
        >>> d = led.to_dict([0.9, 0.9], facts=[fact])
        >>> d["released_exactly"], d["released_exactly_facts"][0]["kind"]
        ('which values of age are missing', 'missing')
        """
        exactly = "; ".join(w for w in (given, exact_words(facts)) if w) or None
        return {
            "record_epsilon_budget": self.record_epsilon_budget,
            "design_epsilon": self.design_epsilon,
            "perturbation_epsilon": epsilon_to_json(record_epsilon(list(variable_epsilons))),
            "record_epsilon": epsilon_to_json(self.total(variable_epsilons)),
            **({"released_exactly": exactly, "record_epsilon_is_given_structure": True} if exactly else {}),
            "released_exactly_facts": [f.to_dict() for f in facts],
            "frequencies": self.frequencies,
            "prior": self.prior,
            "categories": dict(self.categories),
            "data_dependent": list(self.data_dependent),
            "dp_counts": {k: dict(v) for k, v in self.dp_counts.items()},
            **({"derived_from": dict(self.derived_from)} if self.derived_from else {}),
            "covers_everything_published": self.covers_everything,
            "statement": self.statement(variable_epsilons, given, facts),
        }

    @classmethod
    def from_dict(cls, d: Any) -> Ledger:
        """Validate the manifest's ``ledger`` object; errors name the field.

        The figures :meth:`to_dict` derives (the epsilons, the statement) are not read:
        a manifest recomputes them from its matrices.

        Parameters
        ----------
        d : dict
            The parsed ``ledger`` object.

        Returns
        -------
        Ledger

        Raises
        ------
        ManifestError
            A field is missing its type or holds a value a :class:`Ledger` refuses.

        Examples
        --------
        >>> Ledger.from_dict({"design_epsilon": 0.05, "frequencies": "dp_counts"}).design_epsilon
        0.05
        >>> Ledger.from_dict({"frequencies": "guessed"})
        Traceback (most recent call last):
        ...
        pramkit.errors.ManifestError: field 'ledger': frequencies must be one of ('dp_counts', 'prior', 'none', 'exact'), got 'guessed'
        """
        if not isinstance(d, dict):
            raise ManifestError("field 'ledger' must be an object")
        budget = d.get("record_epsilon_budget")
        if budget is not None and not (isinstance(budget, (int, float)) and not isinstance(budget, bool)):
            raise ManifestError("field 'ledger.record_epsilon_budget' must be a number or null")
        design = d.get("design_epsilon", 0.0)
        if isinstance(design, bool) or not isinstance(design, (int, float)):
            raise ManifestError("field 'ledger.design_epsilon' must be a number")
        cats = d.get("categories", {})
        dep = d.get("data_dependent", [])
        counts = d.get("dp_counts", {})
        prior = d.get("prior")
        if not isinstance(cats, dict) or not isinstance(dep, list) or not all(isinstance(x, str) for x in dep) \
                or not isinstance(counts, dict) or not (prior is None or isinstance(prior, str)):
            raise ManifestError("field 'ledger' is malformed (categories: object, data_dependent: list of "
                                "strings, dp_counts: object, prior: string or null)")
        try:
            return cls(design_epsilon=float(design), frequencies=d.get("frequencies", "none"),
                       record_epsilon_budget=None if budget is None else float(budget), prior=prior,
                       categories=cats, data_dependent=tuple(dep), dp_counts=counts,
                       derived_from=d.get("derived_from") or {})
        except ParameterError as exc:
            raise ManifestError(f"field 'ledger': {exc}") from None


def unperturbed_words(columns: Sequence[str] | None) -> str:
    """The sentence on the columns released as they are: in general (``None``: the file is not
    known), by name, or nothing when there are none.

    Examples
    --------
    >>> unperturbed_words(None)
    ' Columns that are not perturbed are released as they are: no epsilon covers them.'
    >>> unperturbed_words(["race", "education"])
    ' The columns race and education are released as they are (not perturbed): no epsilon covers them.'
    >>> unperturbed_words([])
    ''
    """
    if columns is None:
        return " Columns that are not perturbed are released as they are: no epsilon covers them."
    if not columns:
        return ""
    if len(columns) == 1:
        return f" The column {columns[0]} is released as it is (not perturbed): no epsilon covers it."
    return f" The columns {listed(columns)} are released as they are (not perturbed): no epsilon covers them."


#: The qualifier of a record epsilon that holds among records agreeing on what is shown exactly.
GIVEN_STRUCTURE = "given the structure"

#: What a variable asked for and not perturbed (the optimal split gave it no budget) is: never "epsilon 0".
RELEASED_EXACTLY = "released exactly (not perturbed): no epsilon covers it"

#: What the Export step and every surface say when nothing published escapes a DP mechanism.
ALL_COVERED = "Everything the public files tell about the data is covered by a DP mechanism."


@dataclass(frozen=True)
class Guarantee:
    """The guarantee of one release as every surface shows it: the CLI (``design``, ``apply``,
    ``inspect``), both reports, the workbench and the app print these fields and nothing else
    about the record epsilon (:func:`release_guarantee` is the only maker).

    Parameters
    ----------
    record_epsilon : float
        The record epsilon the sentence states: among records that agree on what is shown exactly
        (:attr:`pramkit.Manifest.record_epsilon_given_structure`), rounded outward.
    given_structure : bool
        The release shows a distinction exactly (strata, kept codes, classes): the figure holds
        given it, and says so (:data:`GIVEN_STRUCTURE`).
    sentence : str
        The guarantee sentence (:meth:`Ledger.statement`).
    not_covered : tuple of str
        Everything published that no epsilon covers, in the ledger's words: what is shown exactly,
        the columns released as they are, what reaches the manifest from the data.
    unperturbed : tuple of str or None
        The released file's columns released as they are (``None``: the file is not known).
    data_dependent : tuple of str
        What reaches the manifest from the data without a DP mechanism (:attr:`Ledger.data_dependent`).
    facts : tuple of ExactFact
        What the release shows exactly.
    kinds : tuple of GuaranteeFigure
        The figure of every privacy model the release states, variable by variable (and for the
        release where they combine): epsilon, metric epsilon, recognition bound, beta, k
        (:func:`pramkit.privacy.kinds.guarantee_figures`, one entry per model in
        :data:`pramkit.privacy.kinds.GUARANTEE_KINDS`).

    Examples
    --------
    >>> g = Guarantee(3.0, True, "...", ("the strata (age, released unperturbed)",), ())
    >>> g.headline
    'record epsilon: 3 given the structure (design step plus the perturbation)'
    >>> g.coverage
    'Not covered by a DP mechanism: the strata (age, released unperturbed).'
    >>> Guarantee(1.0, False, "...", (), ()).coverage == ALL_COVERED
    True
    """

    record_epsilon: float
    given_structure: bool
    sentence: str
    not_covered: tuple[str, ...]
    unperturbed: tuple[str, ...] | None
    data_dependent: tuple[str, ...] = ()
    facts: tuple[ExactFact, ...] = ()
    kinds: tuple[GuaranteeFigure, ...] = ()

    @property
    def figure(self) -> str:
        """The record epsilon for people, with its qualifier: ``"3 given the structure"``, ``"inf"``."""
        return epsilon_figure(self.record_epsilon, self.given_structure)

    @property
    def headline(self) -> str:
        """``record epsilon: FIGURE (design step plus the perturbation)``."""
        return f"record epsilon: {self.figure} (design step plus the perturbation)"

    @property
    def covered(self) -> bool:
        """Nothing published escapes a DP mechanism (never when the released file's columns are unknown)."""
        return not self.not_covered

    @property
    def coverage(self) -> str:
        """:data:`ALL_COVERED`, or ``Not covered by a DP mechanism: ...`` naming each thing."""
        return ALL_COVERED if self.covered else "Not covered by a DP mechanism: " + "; ".join(self.not_covered) + "."

    def lines(self) -> list[str]:
        """What a command prints: the headline, the coverage and the sentence."""
        return [self.headline, self.coverage, self.sentence]

    def to_dict(self) -> dict[str, Any]:
        """The guarantee as JSON values."""
        return {"record_epsilon": epsilon_to_json(self.record_epsilon), "given_structure": self.given_structure,
                "figure": self.figure, "headline": self.headline, "coverage": self.coverage,
                "not_covered": list(self.not_covered),
                "unperturbed_columns": None if self.unperturbed is None else list(self.unperturbed),
                "statement": self.sentence, "kinds": [f.to_dict() for f in self.kinds]}


def epsilon_figure(eps: float, given_structure: bool = False) -> str:
    """An epsilon for people (:func:`fmt_epsilon`) with its qualifier (:data:`GIVEN_STRUCTURE`).

    Examples
    --------
    >>> epsilon_figure(3.0, True), epsilon_figure(math.inf)
    ('3 given the structure', 'inf')
    """
    return fmt_epsilon(eps) + (f" {GIVEN_STRUCTURE}" if given_structure else "")


#: The ledger of a manifest without one: nothing records how its matrices were designed.
NO_LEDGER = Ledger(frequencies="exact", data_dependent=(
    "the manifest has no privacy ledger, so nothing records whether its matrices were designed from the data",))


def unperturbed_columns(manifest: Any, columns: Sequence[str]) -> tuple[str, ...]:
    """The columns of a released file that the manifest neither perturbs nor names in a fact (strata,
    household ids and weights are named by theirs): released as they are.

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> unperturbed_columns(Manifest.of({"sex": PramMatrix.form8([0.8, 0.8], categories=["f", "m"])}),
    ...                     ["id", "sex", "income"])
    ('id', 'income')
    """
    named = set(manifest.read_columns) | set(manifest.input.get("weights") or ())
    return tuple(c for c in columns if c not in named)


def release_guarantee(manifest: Any, columns: Sequence[str] | None = None) -> Guarantee:
    """The guarantee of a release: the one function every surface calls.

    Parameters
    ----------
    manifest : pramkit.Manifest
        The release's manifest.
    columns : sequence of str, optional
        The released file's columns (the original's: the release keeps them); ``None`` when no
        file is known (a manifest alone).

    Returns
    -------
    Guarantee
        Its figure, qualifier, sentence and what it does not cover, derived from the manifest's
        matrices, facts and ledger; the figure of every privacy model it states (``kinds``:
        :func:`pramkit.privacy.kinds.guarantee_figures`).

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> m = Manifest.of({"sex": PramMatrix.form8([0.8, 0.8], categories=["f", "m"])}, ledger=Ledger())
    >>> g = release_guarantee(m, ["sex", "income"])
    >>> g.figure, g.not_covered
    ('1.387', ('which values of sex are missing', 'the column income (released as it is)'))
    >>> release_guarantee(m).not_covered[-1]
    'the columns that are not perturbed (released as they are)'
    >>> [(f.kind, f.variable, f.words) for f in g.kinds if f.variable is not None]
    [('epsilon', 'sex', '1.387'), ('beta', 'sex', '0.7219')]
    """
    ledger = manifest.ledger if manifest.ledger is not None else NO_LEDGER
    facts = tuple(manifest.exact_facts)
    eps = [v.epsilon_given_shown for v in manifest.variables]
    unperturbed = None if columns is None else unperturbed_columns(manifest, columns)
    loose: tuple[str, ...] = ("the columns that are not perturbed (released as they are)",)
    if unperturbed is not None:
        loose = () if not unperturbed else (f"the column {unperturbed[0]} (released as it is)",) \
            if len(unperturbed) == 1 else (f"the columns {listed(unperturbed)} (released as they are)",)
    ordered = sorted(facts, key=lambda f: FACT_KINDS.index(f.kind))
    not_covered = tuple(dict.fromkeys([*(f.reveals for f in ordered), *loose, *ledger.data_dependent]))
    return Guarantee(ledger.total(eps), bool(manifest.is_structured),
                     ledger.statement(eps, facts=facts, unperturbed=unperturbed), not_covered, unperturbed,
                     tuple(ledger.data_dependent), facts, guarantee_figures(manifest))


def default_design_epsilon(budget: float, rows: int, cells: Sequence[int]) -> float:
    """The design step's default budget: just enough for accurate counts, at most a tenth of the budget.

    The design's histograms (``cells[h]`` categories each) share the design budget equally
    and each gets the geometric mechanism at ``eps_h`` with L1 sensitivity 2, whose noise
    has standard deviation ``1 / (sqrt(2) sinh(eps_h / 4)) <= 2 sqrt(2) / eps_h``.  Asking
    for at most ``DEFAULT_NOISE_SHARE`` of the mean count ``rows / cells[h]`` gives
    ``eps_h = 2 sqrt(2) cells[h] / (DEFAULT_NOISE_SHARE * rows)``; the default is their sum,
    capped at ``DEFAULT_DESIGN_SHARE * budget``.  It reads only public quantities: the
    number of rows (the released file has as many) and the number of categories
    (declared, or marked as data-derived by the ledger).

    Parameters
    ----------
    budget : float
        The record budget, nats.
    rows : int
        Rows of the file.
    cells : sequence of int
        Categories of each histogram the design reads.

    Returns
    -------
    float
        The design epsilon, nats, with 12 significant digits at most.

    Examples
    --------
    >>> default_design_epsilon(6.0, 953_076, [9, 2, 6])  # the census demo: 0.02 % of the budget
    0.0010090121065
    >>> default_design_epsilon(1.0, 2_000, [9, 2, 6])    # a small file: the cap, a tenth
    0.1
    """
    need = math.fsum(2.0 * math.sqrt(2.0) * k / (DEFAULT_NOISE_SHARE * max(int(rows), 1)) for k in cells)
    return float(f"{min(DEFAULT_DESIGN_SHARE * budget, need):.12g}")


def epsilon_words(epsilon: float, given_structure: float | None = None) -> str:
    """A perturbed variable's epsilon as every surface states it (the app's design page, ``pramkit design`` and
    ``inspect``, the reports, the release note, the DDI codebook).

    A variable with structure (strata, kept codes, rules) shows it exactly, so its local epsilon is
    infinite; among records that agree on what is shown, its epsilon is finite: both are stated, the
    second with the ledger's qualifier (:data:`pramkit.ledger.GIVEN_STRUCTURE`), never a bare figure.

    Parameters
    ----------
    epsilon : float
        The variable's (local) epsilon, possibly infinite.
    given_structure : float, optional
        Its epsilon given the structure (:attr:`pramkit.manifest.PerturbedVariable.block_epsilon`); None for
        a variable without structure.

    Returns
    -------
    str
        Rounded outward (:func:`pramkit.ledger.fmt_epsilon`).

    Examples
    --------
    >>> epsilon_words(1.5), epsilon_words(math.inf, 1.3499999999986503)
    ('1.5', 'local inf; 1.35 given the structure')
    """
    if given_structure is None:
        return fmt_epsilon(epsilon)
    return f"local {fmt_epsilon(epsilon)}; {fmt_epsilon(given_structure)} {GIVEN_STRUCTURE}"


def described_epsilon_words(variable: Mapping[str, Any]) -> str:
    """:func:`epsilon_words` of a variable as :meth:`pramkit.Manifest.describe` gives it (``"inf"`` as text, and
    ``epsilon_given_block`` where it has blocks).

    Examples
    --------
    >>> described_epsilon_words({"epsilon": 1.5}), described_epsilon_words({"epsilon": "inf", "epsilon_given_block": 1.8})
    ('1.5', 'local inf; 1.8 given the structure')
    """
    given = variable.get("epsilon_given_block")
    return epsilon_words(float(variable["epsilon"]), None if given is None else float(given))


def fmt_epsilon(eps: float) -> str:
    """An epsilon for people: four significant digits rounded up (a printed bound is
    never below the truth), ``inf`` spelled out.

    Parameters
    ----------
    eps : float
        A non-negative epsilon.

    Returns
    -------
    str

    Examples
    --------
    >>> fmt_epsilon(3.0), fmt_epsilon(2.9999999999999987), fmt_epsilon(1.23441), fmt_epsilon(math.inf)
    ('3', '3', '1.235', 'inf')
    >>> fmt_epsilon(19999.8)  # no exponent notation
    '20000'

    """
    if math.isinf(eps):
        return "inf"
    if eps == 0:
        return "0"
    d = Decimal(repr(float(eps)))
    exponent = d.adjusted() - 3
    up = d.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_CEILING)
    return f"{float(up):.4g}" if float(up) < 1e4 else f"{float(up):.0f}"


def swapping_statement(variable: str, targeted: bool, epsilon: float, rate: float, areas: int,
                       given: str | None = None, given_epsilon: float | None = None, *,
                       donors: str | None = None) -> str:
    """The guarantee of a record swap on ``variable`` (the lowest level of its geography), in words.

    Random swapping at rate s between A areas is a misclassification of the geography whose
    expected matrix has the epsilon given (:mod:`pramkit.swap.implied`); with a level
    above (``given``) that donors share (the donor rule ``same-parent``), it is released exactly
    and the epsilon holds given it.  Targeted swapping chooses its households from the data, so
    no matrix and no epsilon bounds it.  The donor rule, in words, ends the statement
    (:meth:`pramkit.swap.SwapPlan.donor_rule`), so that the statement says which rule
    was used.

    Parameters
    ----------
    variable : str
        The geography column whose values are swapped.
    targeted : bool
        Households were chosen by their risk (the data).
    epsilon : float
        The epsilon of the expected matrix (``inf`` for a targeted swap).
    rate : float
        The swap rate.
    areas : int
        The areas of the lowest level.
    given : str, optional
        The level above, which swaps keep (donors share it); ``None`` when they do not.
    given_epsilon : float, optional
        The epsilon of the expected matrix given the level above.
    donors : str, optional
        The donor rule in words, appended as its own sentence.

    Returns
    -------
    str

    Examples
    --------
    >>> swapping_statement("area", True, math.inf, 0.05, 300)[:62]
    'area was swapped by targeted record swapping: the households s'
    >>> swapping_statement("area", False, 8.6435, 0.05, 300)[-63:]
    'the released file as a whole (households are swapped in pairs).'
    >>> "region is released exactly" in swapping_statement("area", False, math.inf, 0.05, 300, "region", 4.2)
    True
    >>> swapping_statement("area", False, 3.2, 0.05, 300, donors="donors were drawn from any other area")[-73:]
    '(households are swapped in pairs). Donors were drawn from any other area.'
    """
    rule = "" if not donors else f" {donors[:1].upper()}{donors[1:].rstrip('.')}."
    if targeted:
        return (f"{variable} was swapped by targeted record swapping: the households swapped were chosen from "
                "the data (their risk), so no misclassification matrix is known and no epsilon bounds what the "
                "released geography reveals (epsilon infinite); tables of the geography cannot be corrected "
                "for the swap." + rule)
    bound = (f"epsilon {fmt_epsilon(epsilon)} per household" if given is None else
             f"epsilon {fmt_epsilon(epsilon)} per household, since {given} is released exactly (donors share "
             f"it), and epsilon {fmt_epsilon(given_epsilon if given_epsilon is not None else math.inf)} given it")
    return (f"{variable} was swapped by random record swapping at rate {rate:g} between {areas} areas: its "
            f"expected misclassification matrix (from the household counts per area, which the released file "
            f"shows) has {bound}; "
            "this is the epsilon of the matrix, not a differential privacy guarantee of the released file as "
            "a whole (households are swapped in pairs)." + rule)


def epsilon_to_json(eps: float) -> float | str:
    """JSON has no infinity: an infinite epsilon is written as the string ``"inf"``.

    Parameters
    ----------
    eps : float
        An epsilon, finite or infinite.

    Returns
    -------
    float or str
        ``eps`` itself when finite, else ``"inf"`` (read back as ``math.inf``).

    Examples
    --------
    >>> epsilon_to_json(1.5), epsilon_to_json(math.inf)
    (1.5, 'inf')
    >>> import json
    >>> json.dumps({"epsilon": epsilon_to_json(math.inf)}, allow_nan=False)  # strict JSON
    '{"epsilon": "inf"}'
    """
    if math.isnan(eps):
        raise ManifestError("an epsilon is NaN: no guarantee can be written for it")
    return eps if math.isfinite(eps) else "inf"




def split_within(budget: float, spent: float, weights: Sequence[float]) -> list[float]:
    """Share what is left of ``budget`` after ``spent`` in proportion to ``weights``, less
    :data:`REALISED_SLACK`, rounded down so that the outward-rounded total never exceeds the budget.

    Parameters
    ----------
    budget : float
        The record budget, nats.
    spent : float
        What is already spent (the design step), nats.
    weights : sequence of float
        Non-negative weights of the variables (equal weights: an equal split).

    Returns
    -------
    list of float
        One epsilon per weight whose exact sum with ``spent`` is at most the budget
        (so ``record_epsilon([spent, *out]) <= budget`` however it rounds outward).

    Raises
    ------
    ParameterError
        If nothing is left of the budget, or the weights sum to zero.

    Examples
    --------
    >>> eps = split_within(1.0, 0.1, [1, 1, 1])
    >>> record_epsilon([0.1, *eps]) <= 1.0
    True
    """
    if any(not (w >= 0 and math.isfinite(w)) for w in weights):
        raise ParameterError(f"the weights of a split must be finite and non-negative, got {list(weights)}")
    total_w = math.fsum(weights)
    left = budget - spent
    if not left > 0 or total_w <= 0:
        raise ParameterError(f"nothing of the record budget {budget:g} is left for the perturbation after "
                             f"the design step's {spent:g}")
    out = [left * w / total_w * (1.0 - REALISED_SLACK) for w in weights]
    # exact (rational) sum of the stored doubles: any outward rounding of it then stays <= budget
    while sum(map(Fraction, [spent, *out]), Fraction(0)) > Fraction(budget):
        out = [math.nextafter(e, 0.0) for e in out]
    return out
