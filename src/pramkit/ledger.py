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
``data_dependent``, in plain words, and the guarantee sentence says so.

The threat model and the list of public and private artifacts are in
``docs/privacy.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from typing import Any, Literal, Mapping, Sequence

from pramkit.errors import ManifestError, ParameterError
from pramkit.privacy.epsilon import record_epsilon

#: Largest share of the record budget that the default design step spends
#: (measured in docs/privacy.md).
DEFAULT_DESIGN_SHARE = 0.1
#: The default design step aims for noise whose standard deviation is at most this
#: share of a histogram's mean count n / K (docs/privacy.md).
DEFAULT_NOISE_SHARE = 0.05

#: Where a design's frequencies came from.
FrequencySource = Literal["dp_counts", "prior", "none", "exact"]
FREQUENCY_SOURCES: tuple[str, ...] = ("dp_counts", "prior", "none", "exact")

#: Where a variable's list of categories came from.
CategorySource = Literal["declared", "prior", "data"]
CATEGORY_SOURCES: tuple[str, ...] = ("declared", "prior", "data")


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

    def statement(self, variable_epsilons: Sequence[float], given: str | None = None) -> str:
        """The guarantee sentence, true for exactly what is published.

        ``given``: what a structure (strata, kept codes) releases exactly, in words; the
        epsilons are then each variable's epsilon given its block, and the sentence
        says that the guarantee holds among records that agree on it.

        Parameters
        ----------
        variable_epsilons : sequence of float
            Each variable's epsilon (given its block, with ``given``).
        given : str, optional
            What the structure releases exactly.

        Returns
        -------
        str
            One or more sentences: the factor ``e^epsilon`` that bounds what changing one
            record changes, what the epsilon covers, and what it does not.

        Examples
        --------
        >>> led = Ledger(frequencies="none")
        >>> led.statement([1.0, 0.5]).startswith("Changing one person's record in its perturbed variables")
        True
        >>> led.statement([1.0], given="the strata (region, released unperturbed)")[:56]
        'The released file shows exactly, as the original does: t'
        """
        total = self.total(variable_epsilons)
        if self.frequencies == "dp_counts":
            how = (f"the design step's noisy counts (epsilon {fmt_epsilon(self.design_epsilon)}) and the "
                   f"perturbation (epsilon {fmt_epsilon(record_epsilon(list(variable_epsilons)))})")
        elif self.frequencies == "prior":
            how = f"the perturbation alone (the design used the public prior {self.prior!r}, which costs nothing)"
        else:
            how = "the perturbation alone (the design did not read the data's frequencies)" \
                if self.frequencies == "none" else "the perturbation"
        if math.isinf(total):
            return ("The perturbation releases some original values exactly (infinite epsilon): no "
                    "differential-privacy guarantee holds for this release."
                    + ("" if self.covers_everything else " Also derived from the data: "
                       + "; ".join(self.data_dependent) + "."))
        factor = f"a factor of at most e^{fmt_epsilon(total)}" + (
            f" = {math.exp(total):.4g}" if total < 700 else ", more than 10^300: no practical bound")
        change, lead = "changing one person's record in its perturbed variables", ""
        if given:
            lead = f"The released file shows exactly, as the original does: {given}; no epsilon covers that. "
            change += ", keeping what is shown exactly,"
        rest = " Columns that are not perturbed are released as they are: no epsilon covers them."
        if self.covers_everything:
            return (f"{lead}{change[0].upper()}{change[1:]} changes the probability of "
                    f"anything published (the released file, the manifest, the public report) by {factor}; this "
                    f"record epsilon of {fmt_epsilon(total)} covers {how}.{rest}")
        return (f"{lead}Given the published manifest, {change} changes the probability "
                f"of the released file by {factor} ({how}). This does not cover the manifest itself: "
                + "; ".join(self.data_dependent) + "." + rest)

    def to_dict(self, variable_epsilons: Sequence[float], given: str | None = None) -> dict[str, Any]:
        """The manifest's ``ledger`` object (JSON-able); with ``given`` (see :meth:`statement`),
        ``record_epsilon`` is the epsilon given the structure and ``released_exactly`` says
        what the structure releases exactly.

        Parameters
        ----------
        variable_epsilons : sequence of float
            Each variable's epsilon (given its block, with ``given``).
        given : str, optional
            What the structure releases exactly.

        Returns
        -------
        dict
            The ledger's fields, the perturbation's and the record's epsilons (``"inf"``
            when infinite) and the :meth:`statement`.

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
        """
        return {
            "record_epsilon_budget": self.record_epsilon_budget,
            "design_epsilon": self.design_epsilon,
            "perturbation_epsilon": _json_eps(record_epsilon(list(variable_epsilons))),
            "record_epsilon": _json_eps(self.total(variable_epsilons)),
            **({"released_exactly": given, "record_epsilon_is_given_structure": True} if given else {}),
            "frequencies": self.frequencies,
            "prior": self.prior,
            "categories": dict(self.categories),
            "data_dependent": list(self.data_dependent),
            "dp_counts": {k: dict(v) for k, v in self.dp_counts.items()},
            "covers_everything_published": self.covers_everything,
            "statement": self.statement(variable_epsilons, given),
        }

    @classmethod
    def from_dict(cls, d: Any) -> "Ledger":
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
                       categories=cats, data_dependent=tuple(dep), dp_counts=counts)
        except ParameterError as exc:
            raise ManifestError(f"field 'ledger': {exc}") from None


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


def _json_eps(eps: float) -> float | str:
    return eps if math.isfinite(eps) else "inf"


#: Relative share of each variable's budget left for the engine's integer units: the law the engine
#: realises (:func:`pramkit.engine.realised_law`) can exceed a design's epsilon by a relative 1e-15 or
#: so where a matrix's doubles do not add up to 1 exactly, and the manifest states the larger.
REALISED_SLACK = 1e-12


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
