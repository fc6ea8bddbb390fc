"""The specification of a release design: every setting of ``pramkit design`` declared once.

:class:`ReleaseSpec` is one frozen value whose every field is a setting declared by
:func:`pramkit.settings.setting`: its type, its rule (:mod:`pramkit.validate`; a design
family's option takes its rule from the registry, :data:`pramkit.design.registry.FAMILIES`),
its help text, its flag and its label in the application.  From it are made the
``pramkit design`` command's flags (:func:`pramkit.settings.add_arguments`), the application's
design form (:func:`pramkit.app.fields.design_spec`), the command line that designs the same
release (:meth:`ReleaseSpec.to_args`, the reproducing script), the documentation's option table
and the checks: :meth:`ReleaseSpec.check` refuses a setting that its rule refuses, or a family's
setting given with another family, before any data is read, with the same one-line message
whichever of the library, the command line or the form gave it.

A new option is one more field here (and, for a family's option, one more rule in the registry).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.design.registry import DISTANCE_WEIGHTS, DP_FORMS, DP_OBJECTIVES, FAMILIES, family
from pramkit.errors import ParameterError
from pramkit.release.rules import RULES, check_split
from pramkit.settings import Setting, check_rules, checked, decimal_setting, is_checked, markers, setting, settings
from pramkit.settings import flags as spec_flags
from pramkit.validate import ENGINES, OPEN_PROBABILITY, SPARK_MASTER, Checked, Choice, Flag, Instance, Number, Rule

if TYPE_CHECKING:
    from pramkit.kernel.rng import SecretKey
    from pramkit.recognition.design import Method
    from pramkit.release.derive import DerivedRelease as Derived
    from pramkit.release.plan import ReleasePlan
    from pramkit.release.record import Release

#: The flags a derived release (``--derive-from``) takes besides ``--vars`` and ``--out``.
DERIVE_FLAGS = ("--derive-from", "--epsilon", "--prior", "--categories")
#: The classic and bistochastic families' options (their settings name them: ``option=``).
FAMILY_OPTIONS = ("beta", "pd", "alpha", "diagonal", "seed", "keep", "bandwidth", "k", "gamma")
#: ``needs=(name, GIVEN)``: the setting applies when setting ``name`` is given.
GIVEN = "given"
#: The groups of ``pramkit design --help`` (and of the documentation's table); the families named by the
#: registry (:attr:`pramkit.design.registry.DesignFamily.group`).
GROUPS = {
    "family": "classic and bistochastic families (--method " + "|".join(
        name for name, fam in FAMILIES.items() if fam.group == "family") + "; see docs/bistochastic.md)",
    "geo": "geographic and ordinal variables (see docs/geography.md)",
    "structure": "structure of the microdata (see docs/structure.md)",
    "recognition": "protection against spontaneous recognition (Cator, Hensbergen and Rozenholc; "
                   "see docs/design-recognition.md)",
}
_PATH = (str, os.PathLike)


def _per_variable(value: Any, name: str) -> None:
    per_variable(value)


def _keep_codes(value: Any, name: str) -> None:
    from pramkit.structure import parse_assignments

    parse_assignments(value, "--keep-codes", "education=n/a,age=0-9|10-17")


def _sampling(value: Any, name: str) -> None:
    from pramkit.privacy.amplification import Sampling

    Sampling.parse(value)


def _target(value: Any, name: str) -> None:
    from pramkit.release.tuned import parse_disclosure_target

    parse_disclosure_target(value)


def _text(what: str) -> Instance:
    return Instance((str,), what)


def _path(what: str = "a file path") -> Instance:
    return Instance(_PATH, what)


@dataclass(frozen=True)
class ReleaseSpec:
    """Every setting of ``pramkit design DATA --vars ...`` but the files it reads and writes.

    Each field is the flag of the same name (``keep_codes`` is ``--keep-codes``), with the
    flag's default and in the type the command line parses it to; see ``pramkit design --help``
    or :data:`pramkit.settings.KEY` in each field's metadata for what each means.

    Examples
    --------
    >>> spec = ReleaseSpec(epsilon=3.0, split="joint", strata="race")
    >>> spec.to_args()
    ['--epsilon', '3.0', '--strata', 'race', '--split', 'joint']
    >>> spec.options()
    {'truthful': False, 'form': 'diagonal', 'objective': None}
    >>> ReleaseSpec(method="rr", truthful=True).options()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --family, --truthful and --objective apply to --method dp
    >>> ReleaseSpec(split="optimal", objective="variance").plan(["age"])
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: split 'optimal' maximises information; use split equal with objective 'variance'
    """

    method: str = setting(
        "dp", str, RULES["method"].rule,
        "design family (default %(default)s: " + FAMILIES["dp"].help + ")",
        metavar="{" + ",".join(sorted(FAMILIES)) + "}", label="Method")
    epsilon: float | None = setting(
        None, float, RULES["epsilon"].rule, "the record's total privacy budget (nats), design step included; "
        "with --probs/--counts, the matrix's epsilon", noun=RULES["epsilon"].noun,
        label="Record budget (epsilon, nats; may be empty for the classic designs)")
    epsilon_per_variable: str | None = setting(
        None, str, Checked(_per_variable, "items V=E, e.g. age=1,sex=0.5", "age"),
        "explicit per-variable budgets, e.g. age=1,sex=0.5 (instead of a split of --epsilon)", metavar="V=E,...",
        label="Per-variable budgets", more=True)
    design_epsilon: float | None = setting(
        None, float, RULES["design_epsilon"].rule,
        "budget of the design step's DP counts (default: enough for noise of 5 %% of a category's mean count, at "
        "most 10 %% of --epsilon); part of --epsilon", metavar="E_D", noun=RULES["design_epsilon"].noun,
        label="Budget of the design step's counts", more=True)
    prior: Path | None = setting(
        None, Path, _path("a file path or a Prior"), "public frequencies (CSV: variable,category,frequency): the "
        "design reads no data frequencies and spends no design budget",
        label="Public frequencies (CSV variable,category,frequency)")
    categories: str | None = setting(
        None, str, _path(), "with --probs/--counts: comma-separated labels (default 0..S-1); with DATA: a "
        "codebook CSV (columns variable,category) declaring each variable's categories",
        label="Codebook (CSV variable,category)", widget="file")
    exact_frequencies: bool = setting(
        False, bool, Flag(), "design on the exact frequencies of DATA: no DP guarantee covers the design (the "
        "ledger says so); for data that are not sensitive or for comparison", label="Exact frequencies", more=True)
    beta: float | None = setting(None, float, None, "target beta-bistochastic privacy, H(P)/log2 r in (0, 1]",
                                 option="beta", group="family")
    keep: float | None = setting(None, float, None, "keep probability (keep: mu-ARGUS PRAM; circulant: p11)",
                                 option="keep", group="family", label="Keep probability")
    bandwidth: int | None = setting(None, int, None, "keep: move only to categories within this many codes",
                                    option="bandwidth", group="family")
    pd: float | None = setting(None, float, None, "invariant: lower bound of P's diagonal (default 0.8)",
                               option="pd", group="family")
    alpha: float | None = setting(None, float, None, "invariant: weight of R against the identity (default 0.5); "
                                  "tridiagonal: off-diagonal entry", option="alpha", group="family")
    diagonal: str | None = setting(None, str, None, "invariant: P's diagonal drawn from U(pd, 1) (default) or fixed "
                                   "at pd", option="diagonal", group="family", metavar="{uniform,fixed}")
    seed: int | None = setting(None, int, None, "invariant: seed of the diagonal draw", option="seed",
                               group="family")
    k: int | None = setting(None, int, None, "kanon: categories per class", option="k", group="family")
    gamma: float | None = setting(None, float, None, "kanon, tridiagonal: floor that removes zeros (finite epsilon)",
                                  option="gamma", group="family")
    off_diagonal: float | None = setting(
        None, float, None, "tridiagonal: the off-diagonal entry (also read as --alpha)", option="alpha",
        methods=("tridiagonal",), needs=("alpha", None), group="family",
        misuse="--off-diagonal is the tridiagonal family's entry: use it with --method tridiagonal, instead of "
               "--alpha")
    beta_family: str | None = setting(
        None, str, None, "bistochastic-beta: the family to fit (default best: most information for the data)",
        option="family", methods=("bistochastic-beta",), group="family",
        metavar="{rr,kanon,tridiagonal,circulant,best}", label="Family to fit")
    family: str = setting(
        "diagonal", str, None, "diagonal: form (8), any S, certificate in the output; general: any matrix, "
        "staircase LP (S <= 14; --probs/--counts only)", option="form", metavar="{" + ",".join(DP_FORMS) + "}",
        label="Form of the matrix")
    truthful: bool = setting(False, bool, None, "require q_k >= 1/S (form (8) only)", option="truthful")
    objective: str | None = setting(
        None, str, None, "--method dp: information (default: the most mutual information), variance (the least "
        "total variance of the unbiased estimator: randomized response, always invertible, reads no frequencies) "
        "or distance (the least expected distance moved, with --distances; a certified LP, S <= 3000)",
        option="objective", metavar="{" + ",".join(DP_OBJECTIVES) + "}")
    distances: str | None = setting(
        None, str, Instance((*_PATH, Mapping), "'ordinal', 'discrete', a CSV path or {variable: distances}"),
        "distances between categories: 'ordinal' (the declared order), 'discrete' (every change counts 1: for "
        "nominal variables) or a CSV: category,x,y (projected), category,lat,lon (km on the sphere), "
        "category,neighbour (borders crossed) or from,to,distance; with DATA, for every variable in --vars",
        metavar="ordinal|discrete|FILE", group="geo", more=True)
    metric_epsilon: float | None = setting(
        None, float, None, "--method metric: the metric-DP budget per unit of distance", option="metric_epsilon",
        metavar="E_D", group="geo")
    mechanism: str | None = setting(
        None, str, None, "--method metric: exponential (over --distances, the default), geometric (truncated "
        "geometric on the category order) or optimal (the least expected distance by LP, with the spanner "
        "reduction)", option="mechanism", metavar="{exponential,geometric,optimal}", group="geo")
    dilation: float | None = setting(
        None, float, None, "--mechanism optimal: the spanner's dilation for distances that are not a path metric",
        option="dilation", group="geo")
    distance_weights: str | None = setting(
        None, str, None, "--objective distance: minimise the expected distance over the frequencies (default), "
        "the average over categories, or the worst category's (the last two read no frequencies)",
        option="weights", needs=("objective", "distance"), metavar="{" + ",".join(DISTANCE_WEIGHTS) + "}",
        group="geo")
    invariant: bool = setting(
        False, bool, None, "--objective distance: keep the frequencies the design reads (DP counts or a prior) as "
        "the released law, p M = p, so the released file's counts estimate the original's as they are and an "
        "ordinal variable keeps all its values (S <= 300)", option="invariant", needs=("objective", "distance"),
        group="geo")
    forbid: Path | None = setting(
        None, Path, _path("a file path or rules"), "edit rules: a CSV whose columns are variables and whose rows are "
        "forbidden combinations (empty cell: any value; a|b: either); no released record holds one (public: no "
        "budget)", metavar="RULES.csv", group="structure", label="Edit rules (CSV of forbidden combinations)")
    strata: str | None = setting(
        None, str, _text("column names, comma-separated"), "stratum columns, released unperturbed: values move only "
        "within the values the record's stratum allows (those --forbid leaves it)", metavar="COL[,COL]",
        group="structure", label="Strata (released unperturbed)", widget="columns")
    keep_codes: str | None = setting(
        None, str, Checked(_keep_codes, "items V=CODE, e.g. education=n/a,age=0-9|10-17", "sex"),
        "codes that never change and into which nothing moves, e.g. education=n/a,age=0-9|10-17 (separate the "
        "items with ; when a code holds a comma)", metavar="V=CODE,...", group="structure", label="Kept codes (V=CODE,...)")
    household: str | None = setting(None, str, _text("a column name"), "household id column (with --household-vars)",
                                    metavar="COL", group="structure", label="Household id", widget="column")
    household_vars: str | None = setting(
        None, str, _text("column names, comma-separated"), "variables perturbed once per household: every member "
        "gets the household's released value", metavar="V[,V]", group="structure",
        label="Household variables (one draw per household)", widget="columns")
    rule_breaking: str = setting(
        "error", str, RULES["rule_breaking"].rule, "an original record that breaks a rule: an error naming the row "
        "(default), or kept unperturbed and reported", group="structure", noun=RULES["rule_breaking"].noun,
        label="A record breaking a rule", more=True)
    weights: str | None = setting(
        None, str, _text("column names, comma-separated"), "sampling weight columns released with the file, as they "
        "are: the ledger names them (a rare weight can single a person out; `pramkit risk --weights` measures it)",
        metavar="COL[,COL]", group="structure", label="Weight columns", widget="columns", more=True)
    missing: str = setting(
        "keep", str, RULES["missing"].rule, "missing values: kept missing, none made (default; which values "
        "are missing is released exactly and the guarantee sentence says so, a joint record missing some columns "
        "has the others perturbed by the matrix's margin), or a category perturbed like the others, for every "
        "variable and every column of a joint design", label="Missing values")
    split: str = setting(
        "equal", str, RULES["split"].rule, "how the record budget is shared by the variables "
        "(default %(default)s: every listed variable is perturbed); optimal: the most total information, which "
        "may give a variable epsilon 0 and leave it unperturbed; joint: one matrix on their cross-classification "
        "(methods dp and invariant; invariant keeps the joint table)", metavar="{optimal,equal,joint}",
        label="Budget split")
    recognition: float | None = setting(
        None, float, OPEN_PROBABILITY, "design one joint matrix over --keys with every posterior of condition (C1) "
        "at most ALPHA and the smallest L2 loss", metavar="ALPHA", group="recognition",
        label="Recognition bound (alpha)")
    combinations: str = setting(
        "3", str, _text("a size or groups of keys such as 'a,b,c;a,b,d'"), "key combinations checked: a size "
        "(default 3: every combination of three keys) or lists such as 'a,b,c;a,b,d'", group="recognition",
        label="Key combinations")
    recognition_gamma: float | None = setting(
        None, float, Number(low=0, high=1), "lower bound on the diagonal of the reductions (default 0.9)",
        metavar="GAMMA", needs=("recognition", GIVEN), group="recognition", label="Recognition: diagonal bound")
    recognition_method: Method = setting(
        "restricted", str, Choice(("restricted", "full")), "restricted: convex, certified gap (default); full: "
        "every entry free (small X only)", group="recognition", label="Recognition: solver")
    na_values: tuple[str, ...] = setting(
        NA_VALUES, markers, Instance((tuple, list), "texts, comma-separated"), "texts that mean missing in a CSV "
        "file, besides the empty field", shared=True, label="Missing-value codes")
    sep: str = setting(CSV_SEP, str, RULES["sep"].rule, "the field separator of a CSV file", shared=True,
                       noun=RULES["sep"].noun, label="Separator")
    encoding: str = setting(CSV_ENCODING, str, RULES["encoding"].rule, "the character encoding of a CSV file", shared=True,
                            label="Encoding")
    decimal: str = decimal_setting()  # a design reads no number (weights are named, released as they are)
    engine: str = setting(
        ENGINES[0], str, Choice(ENGINES), "local: streamed on this machine (default); spark: the data's counts "
        "aggregated by Spark (CSV or Parquet), the same design", shared=True, label="Engine")
    spark_master: str = setting(SPARK_MASTER, str, Instance((str,), "a Spark master URL"),
                                "Spark master URL for --engine spark", shared=True, label="Spark master")
    derive_from: Path | None = setting(
        None, Path, _path(), "design a second step applied to the file that manifest released (a public-use file "
        "from a scientific-use file), with record epsilon --epsilon; reads no data (docs/privacy.md)",
        metavar="SUF-MANIFEST", widget="none")
    sampling: str | None = setting(
        None, str, Checked(_sampling, "poisson:Q, srswor:M/N or stratified:Q1,Q2,...", "bogus"),
        "the file is a secret sample: srswor:M/N (M: the file's rows, checked), poisson:Q (with --population N) or "
        "stratified:Q1,Q2,... (the ledger states the amplified epsilon beside the local one)", metavar="DESIGN",
        label="Sampling design", more=True)
    population: int | None = setting(
        None, int, Number(int, low=0), "the population the file was drawn from: a simple random sample without "
        "replacement of its rows from N persons, or with --sampling poisson:Q the population of the Poisson "
        "sample", metavar="N", label="Population", more=True)
    target: str | None = setting(
        None, str, Checked(_target, "matched=X% or matched<=X%@Q", "bogus"), "design to a disclosure target: "
        "the largest record budget up to --epsilon whose release is expected to reproduce at most X %% of all "
        "records as unique records (matched=X%%: the mean over the draws of the key, which a release drawn with "
        "one key may exceed), or reproduces at most X %% in at least Q %% of releases (matched<=X%%@Q, e.g. "
        "matched<=5%%@95: a Chernoff bound over the draws of the key); the ledger says the budget was chosen "
        "from the data; the budgets explored go to the design record", metavar="matched=X%[@Q]",
        label="Disclosure target", more=True)
    target_keys: str | None = setting(
        None, str, _text("column names, comma-separated"), "--target: the columns on which a record is unique and "
        "reproduced (default: --strata and --vars)", metavar="COL[,COL]", needs=("target", GIVEN),
        label="Target's key columns", widget="columns", more=True)
    recoded_by: Path | None = setting(
        None, Path, _path(), "DATA was recoded by this map (`pramkit recode`): the manifest states it "
        "(input.recode, public: the map is declared, not read from the data); a perturbed variable's categories "
        "must be recoded already", metavar="MAP.json", widget="none")
    suppressed_by: Path | None = setting(
        None, Path, _path(), "DATA is the file `pramkit suppress` wrote with this receipt (its SHA-256 is checked): "
        "the manifest states the suppression (input.suppression: keys, k, rule, strata; public: settings, not "
        "data), and the guarantee sentence says what the released file keeps of it", metavar="RECEIPT.json",
        widget="none")

    @classmethod
    def from_namespace(cls, args: Any) -> ReleaseSpec:
        """The specification of a parsed ``pramkit design`` command line (its attributes of the fields' names).

        Examples
        --------
        >>> import argparse
        >>> ReleaseSpec.from_namespace(argparse.Namespace(method="rr", epsilon=2.0, other=1)).to_args()
        ['--method', 'rr', '--epsilon', '2.0']
        """
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})

    def flags(self) -> list[tuple[str, str | None]]:
        """The flags that give these settings to ``pramkit design`` (those that differ from the default), with
        their values as text (None: a switch; :func:`pramkit.settings.flags`).

        Numbers are written so that they parse back to the same value (``repr`` of a float).

        Examples
        --------
        >>> ReleaseSpec(method="kanon", k=3, exact_frequencies=True, na_values=("NA", "-9")).flags()
        [('--method', 'kanon'), ('--exact-frequencies', None), ('--k', '3'), ('--na-values', 'NA,-9')]
        """
        return spec_flags(self)

    def to_args(self) -> list[str]:
        """:meth:`flags` as a command line's arguments.

        Examples
        --------
        >>> ReleaseSpec(method="kanon", k=3, exact_frequencies=True).to_args()
        ['--method', 'kanon', '--exact-frequencies', '--k', '3']
        >>> ReleaseSpec(na_values=()).to_args()
        ['--na-values', '']
        """
        return [x for flag, value in self.flags() for x in ((flag,) if value is None else (flag, value))]

    def check(self) -> None:
        """Refuse a setting its rule refuses, or given where it does not apply; no data read.

        Every setting is checked by its rule (:func:`pramkit.settings.check_rules`); a design
        family's setting by the chosen family's rule for that option (the registry's), and only
        with a family that takes it (:meth:`check_family_flags`).  The checks between settings
        that need the variables (budgets, split, structure) are :func:`pramkit.release.plan.plan_release`'s.

        Raises
        ------
        ParameterError
            One line naming the setting and what to change.

        Examples
        --------
        >>> ReleaseSpec(method="kanon", k=0).check()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: k must be a whole number >= 1, got 0
        >>> ReleaseSpec(split="best").check()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: split must be one of 'equal', 'optimal', 'joint', got 'best'
        >>> ReleaseSpec(split="optimal", objective="variance").check()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: split 'optimal' maximises information; use split equal with objective 'variance'
        """
        if is_checked(self):  # inside a block of checked(self): checked on the way in
            return
        check_rules(self)
        self.check_family_flags()
        if self.engine != "local" and (self.recognition is not None or self.target is not None):
            raise ParameterError("--engine spark counts the data of a release designed with --epsilon; "
                                 "--recognition and --target read records on this machine: use --engine local")
        rules = FAMILIES[self.method].options
        for s in settings(self):
            value = getattr(self, s.name)
            if s.option is not None and s.given(value):
                rules[s.option].check(value, s.noun)
        check_split(self.split, self.method, {"objective": self.objective})

    def check_family_flags(self) -> None:
        """Refuse a setting given where it does not apply: a family's setting with another family
        (the families that take it are the registry's), or a setting that needs another one.

        Raises
        ------
        ParameterError
            One line naming the settings of the same kind and where they apply.

        Examples
        --------
        >>> ReleaseSpec(method="rr", mechanism="geometric").check_family_flags()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --metric-epsilon, --mechanism and --dilation apply to --method metric
        >>> ReleaseSpec(recognition_gamma=0.8).check_family_flags()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --recognition-gamma applies to --recognition
        """
        family(self.method)
        every = settings(self)
        for s in every:
            if s.needs is not None and s.given(getattr(self, s.name)) and not self._holds(s.needs):
                _misapplied(s, [t for t in every if t.needs == s.needs], _needed(s.needs))
        for s in every:
            if s.option is not None and s.given(getattr(self, s.name)) and self.method not in methods_of(s):
                _misapplied(s, [t for t in every if t.option is not None and t.needs == s.needs
                                and methods_of(t) == methods_of(s)], "--method " + ", ".join(methods_of(s)))

    def _holds(self, needs: tuple[str, Any]) -> bool:
        name, value = needs
        return getattr(self, name) is not None if value == GIVEN else bool(getattr(self, name) == value)

    def options(self) -> dict[str, Any]:
        """The chosen family's options, from its settings (checked by :meth:`check`): each one given, and those
        the family records at their defaults, in the family's order (:meth:`pramkit.design.registry.DesignFamily.record`).
        A new option of a family is its rule in the registry and its setting here (``option=``), nothing else.

        Examples
        --------
        >>> ReleaseSpec(method="tridiagonal", off_diagonal=0.1).options()
        {'alpha': 0.1}
        >>> ReleaseSpec(method="metric", metric_epsilon=0.5).options()
        {'metric_epsilon': 0.5, 'mechanism': None}
        """
        given: dict[str, Any] = {}
        defaults: dict[str, Any] = {}
        with checked(self):
            for s in settings(self):
                if s.option is not None and self.method in methods_of(s):
                    value = getattr(self, s.name)
                    if value is not None and s.given(value):
                        given[s.option] = value
                    defaults.setdefault(s.option, s.default)
        return FAMILIES[self.method].record(given, defaults)

    def plan(self, variables: Sequence[str]) -> ReleasePlan:
        """The release plan of these choices for ``variables`` (every parameter checked, no data read).

        Examples
        --------
        >>> plan = ReleaseSpec(epsilon=2.0, epsilon_per_variable=None).plan(["age", "sex"])
        >>> plan.budget
        2.0
        >>> ReleaseSpec(epsilon=0.0).plan(["age"])   # checked once, on the way in (pramkit.settings.checked)
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: epsilon (the record budget) must be a positive finite number, got 0.0
        """
        from pramkit.release.plan import plan_release
        from pramkit.structure import parse_assignments

        with checked(self):  # every setting checked once, here: plan_release checks what is between them
            return plan_release(
                list(variables), epsilon=self.epsilon, method=self.method, split=self.split,
                epsilon_per_variable=per_variable(self.epsilon_per_variable), design_epsilon=self.design_epsilon,
                prior=self.prior, categories=self.categories, exact_frequencies=self.exact_frequencies,
                options=self.options(), distances=self.distances, na_values=self.na_values,
                forbid=self.forbid, strata=self.strata or (), household=self.household,
                keep_codes=parse_assignments(self.keep_codes, "--keep-codes", "education=n/a,age=0-9|10-17"),
                household_vars=self.household_vars or (), rule_breaking=self.rule_breaking, missing=self.missing,
                weights=self.weights or (), sep=self.sep, encoding=self.encoding)

    def release(self, data: Any, variables: Sequence[str], *, key: SecretKey | None = None,
                quiet: bool = True, compare: bool = True) -> Release:
        """Design the release of these settings for ``variables`` of ``data``.

        Parameters
        ----------
        data : str, pathlib.Path, pandas.DataFrame or pyarrow.Table
            The original data (a file is streamed).
        variables : sequence of str
            The columns to perturb (the key variables of a recognition design).
        key : pramkit.kernel.rng.SecretKey, optional
            The design step's DP noise is drawn from it (:func:`pramkit.design_planned`).
        quiet : bool
            No progress bars.
        compare : bool
            Record a joint design against the best independent split (:func:`pramkit.design_planned`);
            ``False`` for a look only (the same manifest, sooner).

        Returns
        -------
        pramkit.release.record.Release

        Examples
        --------
        >>> from pramkit.datasets import census
        >>> from pramkit.kernel.rng import SecretKey
        >>> key = SecretKey(bytes(32), "a test key")
        >>> a = ReleaseSpec(epsilon=3.0).release(census(5_000), ["age", "sex"], key=key)
        >>> b = ReleaseSpec(epsilon=3.0).release(census(5_000), ["age", "sex"], key=key)
        >>> a.manifest.ledger.dp_counts == b.manifest.ledger.dp_counts, a.manifest.record_epsilon <= 3.0
        (True, True)

        A sampling statement (``sampling``, ``population``) is of the file's rows:

        >>> ReleaseSpec(epsilon=3.0, sampling="srswor:5000/100000").release(census(5_000), ["sex"]).manifest.input[
        ...     "sampling"]["rates"]
        [0.05]
        >>> ReleaseSpec(epsilon=3.0, sampling="srswor:500/100000").release(census(5_000), ["sex"])
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --sampling srswor:500/100000 states a sample of 500 records but a DataFrame in memory has 5,000 rows: M is the file's row count (write --sampling srswor:5000/100000, or --population 100000)
        """
        from pramkit.privacy.amplification import check_statement, declare_sampling

        check_statement(self.sampling, self.population)  # the rows are checked once read
        if self.recognition is not None:
            self._check_recognition(key)
        if self.recognition is not None or self.target is not None:
            self.check()  # every setting, before any data is read (a designed release's: by plan, once)
        if self.recognition is not None:
            release = self._recognition(data, variables, self.recognition)
        elif self.target is not None:
            release = self._to_target(data, variables, key, quiet).release
        else:
            from pramkit.release.pipeline import design_planned

            release = design_planned(data, self.plan(variables), key=key, quiet=quiet, engine=self.engine,
                                     spark_master=self.spark_master, compare=compare)
        if self.recoded_by is not None:
            from pramkit.recode import declare_recoding

            release = declare_recoding(release, self.recoded_by, data=data, na_values=self.na_values, sep=self.sep,
                                       encoding=self.encoding)
        if self.suppressed_by is not None:
            from pramkit.suppress import declare_suppression

            release = declare_suppression(release, self.suppressed_by, data=data, na_values=self.na_values,
                                          sep=self.sep, encoding=self.encoding)
        return declare_sampling(release, sampling=self.sampling, population=self.population)

    def derive(self, variables: Sequence[str] | None = None) -> Derived:
        """Design the public-use release derived from the release ``derive_from`` names
        (:func:`pramkit.release.derive.derive_release`): reads public inputs only.

        Parameters
        ----------
        variables : sequence of str, optional
            The variables of that release, as a check.

        Returns
        -------
        pramkit.release.derive.Derived

        Raises
        ------
        ParameterError
            A flag other than :data:`DERIVE_FLAGS`, no ``--epsilon``, or what
            :func:`pramkit.release.derive.derive_release` refuses.

        Examples
        --------
        >>> ReleaseSpec(derive_from=Path("suf.json"), epsilon=1.0, method="rr").derive()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --method does not apply to --derive-from: the second step is the most information under --epsilon, designed from public inputs (--prior, --categories)
        """
        from pramkit.release.derive import derive_release

        other = [flag for flag, _ in self.flags() if flag not in DERIVE_FLAGS]
        if other:
            raise ParameterError(f"{other[0]} does not apply to --derive-from: the second step is the most "
                                 "information under --epsilon, designed from public inputs (--prior, --categories)")
        self.check()
        if self.derive_from is None or self.epsilon is None:
            raise ParameterError("a derived release needs --derive-from and --epsilon (the public-use file's record "
                                 "epsilon)")
        return derive_release(self.derive_from, self.epsilon, variables=variables, prior=self.prior,
                              categories=self.categories)

    def _to_target(self, data: Any, variables: Sequence[str], key: SecretKey | None, quiet: bool) -> Any:
        """``--target``: the largest record budget up to ``--epsilon`` whose release meets the target
        (:func:`pramkit.release.tuned.design_to_target`), searched down to a hundredth of it."""
        import pandas as pd

        from pramkit.io import read_table
        from pramkit.release.tuned import design_to_target, parse_disclosure_target

        def names(text: str | None) -> list[str]:
            return [c.strip() for c in (text or "").split(",") if c.strip()]

        target = parse_disclosure_target(self.target or "")
        if self.epsilon is None or self.epsilon_per_variable is not None:
            raise ParameterError("--target searches the record budget: give --epsilon (the largest budget "
                                 "considered) and no --epsilon-per-variable")
        keys = names(self.target_keys) or list(dict.fromkeys([*names(self.strata), *variables]))
        self.plan(variables)  # the plan's checks between settings, before the data is read
        frame = data if isinstance(data, pd.DataFrame) else read_table(data, na_values=self.na_values, sep=self.sep,
                                                                       encoding=self.encoding)
        return design_to_target(frame, lambda e: dataclasses.replace(self, epsilon=e).plan(variables),
                                matched=target.matched, keys=keys, bounds=(self.epsilon / 100, self.epsilon), key=key,
                                quiet=quiet, level=target.level)

    def _check_recognition(self, key: SecretKey | None) -> None:
        """The recognition design (``--recognition``) is its own privacy model: no budget, no structure."""
        if self.target is not None:
            raise ParameterError("--target searches the record budget of --epsilon; the recognition design has none")
        structured = [f for f, v in (("--forbid", self.forbid), ("--strata", self.strata), ("--weights", self.weights),
                                     ("--keep-codes", self.keep_codes), ("--household", self.household),
                                     ("--missing category", self.missing == "category"),
                                     ("--key-file", key)) if v]
        if structured:
            raise ParameterError(f"{structured[0]} is not available with --recognition")
        if self.epsilon is not None or self.method != "dp":
            raise ParameterError("--recognition is its own privacy model: leave out --epsilon and --method")
        if self.gamma is not None:
            raise ParameterError("--gamma is the floor of kanon and tridiagonal; the recognition design's is "
                                 "--recognition-gamma")

    def _recognition(self, data: Any, variables: Sequence[str], alpha: float) -> Release:
        """The recognition design (``--recognition``), checked by :meth:`_check_recognition`."""
        from pramkit.release.recognition import design_recognition

        gamma = 0.9 if self.recognition_gamma is None else self.recognition_gamma
        return design_recognition(data, list(variables), alpha=alpha,
                                  combinations=combinations(self.combinations), solver=self.recognition_method,
                                  gamma=gamma, na_values=self.na_values, sep=self.sep, encoding=self.encoding)


def option_table() -> str:
    """The documentation's table of ``pramkit design``'s settings (:func:`pramkit.settings.option_table`), a
    family's option with each family's rule for it (the registry's).

    Examples
    --------
    >>> [line for line in option_table().splitlines() if line.startswith("| `--k`")]
    ['| `--k` | `k` |  | kanon: a whole number >= 1 | kanon: categories per class |']
    """
    from pramkit.settings import option_table as table

    def rules(s: Setting) -> str:
        return "; ".join(f"{m}: {FAMILIES[m].options[s.option].expects()}" for m in methods_of(s)
                         if s.option is not None)

    return table(ReleaseSpec, rules)


def methods_of(s: Setting) -> tuple[str, ...]:
    """The design families a setting applies to: its own ``methods``, else every family that takes its option.

    Examples
    --------
    >>> spec = {s.name: s for s in settings(ReleaseSpec)}
    >>> methods_of(spec["gamma"]), methods_of(spec["off_diagonal"]), methods_of(spec["epsilon"])
    (('kanon', 'tridiagonal'), ('tridiagonal',), ())
    """
    if s.methods is not None:
        return s.methods
    return tuple(name for name, fam in FAMILIES.items() if s.option in fam.options)


def family_rules(s: Setting) -> dict[str, Rule]:
    """The rule of each family a family's setting applies to, for the option it gives (the registry's).

    Examples
    --------
    >>> spec = {s.name: s for s in settings(ReleaseSpec)}
    >>> {m: r.expects() for m, r in family_rules(spec["gamma"]).items()}
    {'kanon': 'a number in [0, 1]', 'tridiagonal': 'a number in [0, 1]'}
    >>> family_rules(spec["epsilon"])
    {}
    """
    if s.option is None:
        return {}
    return {m: FAMILIES[m].options[s.option] for m in methods_of(s)}


def _misapplied(s: Setting, group: Sequence[Setting], where: str) -> None:
    """Refuse setting ``s`` given where it does not apply: its own message, or one naming its group."""
    if s.misuse is not None:
        raise ParameterError(s.misuse)
    names = [t.flag for t in group]
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    raise ParameterError(f"{text} {'applies' if len(names) == 1 else 'apply'} to {where}")


def _needed(needs: tuple[str, Any]) -> str:
    """Where a setting that needs another applies: ``--recognition``, ``--objective distance``."""
    name, value = needs
    flag = next(s.flag for s in settings(ReleaseSpec) if s.name == name)
    return flag if value in (GIVEN, None) else f"{flag} {value}"


def per_variable(text: str | None) -> dict[str, float] | None:
    """``--epsilon-per-variable`` (``age=1,sex=0.5``) as a mapping.

    Examples
    --------
    >>> per_variable("age=1, sex=0.5")
    {'age': 1.0, 'sex': 0.5}
    >>> per_variable("age")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --epsilon-per-variable must look like age=1,sex=0.5, got 'age'
    """
    if text is None:
        return None
    out: dict[str, float] = {}
    for part in (x.strip() for x in text.split(",") if x.strip()):
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise ParameterError(f"--epsilon-per-variable must look like age=1,sex=0.5, got {text!r}")
    return out


def combinations(text: str) -> int | list[list[str]]:
    """``--combinations``: a size, or groups of keys separated by ``;``.

    Examples
    --------
    >>> combinations("2"), combinations("age,sex; age,race")
    (2, [['age', 'sex'], ['age', 'race']])
    """
    if text.strip().isdigit():
        return int(text)
    return [[k.strip() for k in group.split(",") if k.strip()] for group in text.split(";") if group.strip()]
