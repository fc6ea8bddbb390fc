"""The settings of a release design, as ``pramkit design`` takes them: one field per flag.

:class:`DesignChoices` is the one place where the design command's flags become
a plan (:meth:`DesignChoices.plan`), family options (:meth:`DesignChoices.options`)
and a designed release (:meth:`DesignChoices.release`).  The command line
builds it from its parsed arguments; an application builds it from its form
and writes the same choices back as a command line (:meth:`DesignChoices.to_args`),
so a script made from it designs the same release.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.design.recognition.design import Method
from pramkit.errors import ParameterError
from pramkit.validate import SPARK_MASTER, engine_name

if TYPE_CHECKING:
    from pramkit.engine.rng import SecretKey
    from pramkit.release.derive import Derived
    from pramkit.release.plan import ReleasePlan
    from pramkit.release.record import Release

#: The flags a derived release (``--derive-from``) takes besides ``--vars`` and ``--out``.
DERIVE_FLAGS = ("--derive-from", "--epsilon", "--prior", "--categories")
#: The families' own options, read from flags of the same names.
FAMILY_OPTIONS = ("beta", "pd", "alpha", "diagonal", "seed", "keep", "bandwidth", "k", "gamma")


@dataclass(frozen=True)
class DesignChoices:
    """Every setting of ``pramkit design DATA --vars ...`` but the files it reads and writes.

    Each field is the flag of the same name (``keep_codes`` is ``--keep-codes``), with the
    flag's default and in the type the command line parses it to; see ``pramkit design --help``
    for what each means.

    Examples
    --------
    >>> choices = DesignChoices(epsilon=3.0, split="joint", strata="race")
    >>> choices.to_args()
    ['--epsilon', '3.0', '--strata', 'race', '--split', 'joint']
    >>> choices.options()
    {'truthful': False, 'form': 'diagonal', 'objective': None}
    >>> DesignChoices(method="rr", truthful=True).options()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --truthful, --family and --objective apply to --method dp
    """

    method: str = "dp"
    epsilon: float | None = None
    epsilon_per_variable: str | None = None
    design_epsilon: float | None = None
    prior: Path | None = None
    categories: str | None = None
    exact_frequencies: bool = False
    beta: float | None = None
    keep: float | None = None
    bandwidth: int | None = None
    pd: float | None = None
    alpha: float | None = None
    diagonal: str | None = None
    seed: int | None = None
    k: int | None = None
    gamma: float | None = None
    off_diagonal: float | None = None
    beta_family: str | None = None
    family: str = "diagonal"
    truthful: bool = False
    objective: str | None = None
    distances: str | None = None
    metric_epsilon: float | None = None
    mechanism: str | None = None
    dilation: float | None = None
    distance_weights: str | None = None
    invariant: bool = False
    forbid: Path | None = None
    strata: str | None = None
    keep_codes: str | None = None
    household: str | None = None
    household_vars: str | None = None
    rule_breaking: str = "error"
    weights: str | None = None
    missing: str = "keep"
    split: str = "equal"
    recognition: float | None = None
    combinations: str = "3"
    recognition_gamma: float | None = None
    recognition_method: Method = "restricted"
    na_values: tuple[str, ...] = NA_VALUES
    sep: str = CSV_SEP
    encoding: str = CSV_ENCODING
    derive_from: Path | None = None
    sampling: str | None = None
    population: int | None = None
    target: str | None = None
    target_keys: str | None = None
    recoded_by: Path | None = None
    engine: str = "local"
    spark_master: str = SPARK_MASTER

    @classmethod
    def from_namespace(cls, args: Any) -> DesignChoices:
        """The choices of a parsed ``pramkit design`` command line (its attributes of the fields' names).

        Examples
        --------
        >>> import argparse
        >>> DesignChoices.from_namespace(argparse.Namespace(method="rr", epsilon=2.0, other=1)).to_args()
        ['--method', 'rr', '--epsilon', '2.0']
        """
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})

    def flags(self) -> list[tuple[str, str | None]]:
        """The flags that give these choices to ``pramkit design`` (those that differ from the default), with
        their values as text (None: a switch).

        Numbers are written so that they parse back to the same value (``repr`` of a float).

        Examples
        --------
        >>> DesignChoices(method="kanon", k=3, exact_frequencies=True, na_values=("NA", "-9")).flags()
        [('--method', 'kanon'), ('--exact-frequencies', None), ('--k', '3'), ('--na-values', 'NA,-9')]
        """
        out: list[tuple[str, str | None]] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                out.append((flag, None))
            elif isinstance(value, tuple):
                out.append((flag, ",".join(value)))
            else:
                out.append((flag, repr(value) if isinstance(value, float) else str(value)))
        return out

    def to_args(self) -> list[str]:
        """:meth:`flags` as a command line's arguments.

        Examples
        --------
        >>> DesignChoices(method="kanon", k=3, exact_frequencies=True).to_args()
        ['--method', 'kanon', '--exact-frequencies', '--k', '3']
        >>> DesignChoices(na_values=()).to_args()
        ['--na-values', '']
        """
        return [x for flag, value in self.flags() for x in ((flag,) if value is None else (flag, value))]

    def check_family_flags(self) -> None:
        """Refuse a family's flag given with another family.

        Raises
        ------
        ParameterError
            One line naming the flag and the family it belongs to.

        Examples
        --------
        >>> DesignChoices(method="rr", mechanism="geometric").check_family_flags()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --metric-epsilon, --mechanism and --dilation apply to --method metric
        """
        if self.recognition_gamma is not None and self.recognition is None:
            raise ParameterError("--recognition-gamma applies to --recognition")
        if self.off_diagonal is not None and (self.method != "tridiagonal" or self.alpha is not None):
            raise ParameterError("--off-diagonal is the tridiagonal family's entry: use it with --method tridiagonal, "
                                 "instead of --alpha")
        if self.method != "metric" and (self.metric_epsilon is not None or self.mechanism is not None
                                        or self.dilation is not None):
            raise ParameterError("--metric-epsilon, --mechanism and --dilation apply to --method metric")
        if (self.distance_weights is not None or self.invariant) and self.objective != "distance":
            raise ParameterError("--distance-weights and --invariant apply to --objective distance")
        if self.method != "dp" and (self.truthful or self.family != "diagonal" or self.objective is not None):
            raise ParameterError("--truthful, --family and --objective apply to --method dp")

    def options(self) -> dict[str, Any]:
        """The chosen family's options, from its flags (checked by :meth:`check_family_flags`).

        Examples
        --------
        >>> DesignChoices(method="tridiagonal", off_diagonal=0.1).options()
        {'alpha': 0.1}
        >>> DesignChoices(method="metric", metric_epsilon=0.5).options()
        {'metric_epsilon': 0.5, 'mechanism': None}
        """
        self.check_family_flags()
        if self.method == "dp":
            distance = self.objective == "distance"
            return {"truthful": self.truthful, "form": None if distance and self.family == "diagonal" else self.family,
                    "objective": self.objective,
                    **({"weights": self.distance_weights} if self.distance_weights else {}),
                    **({"invariant": True} if self.invariant else {})}
        if self.method == "metric":
            return {"metric_epsilon": self.metric_epsilon, "mechanism": self.mechanism,
                    **({"dilation": self.dilation} if self.dilation is not None else {})}
        opts = {name: getattr(self, name) for name in FAMILY_OPTIONS if getattr(self, name) is not None}
        if self.off_diagonal is not None:
            opts["alpha"] = self.off_diagonal
        if self.beta_family is not None:
            opts["family"] = self.beta_family
        return opts

    def plan(self, variables: Sequence[str]) -> ReleasePlan:
        """The release plan of these choices for ``variables`` (every parameter checked, no data read).

        Examples
        --------
        >>> plan = DesignChoices(epsilon=2.0, epsilon_per_variable=None).plan(["age", "sex"])
        >>> plan.budget
        2.0
        """
        from pramkit.release.plan import plan_release
        from pramkit.structure import parse_assignments

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
                quiet: bool = True) -> Release:
        """Design the release of these choices for ``variables`` of ``data``.

        Parameters
        ----------
        data : str, pathlib.Path, pandas.DataFrame or pyarrow.Table
            The original data (a file is streamed).
        variables : sequence of str
            The columns to perturb (the key variables of a recognition design).
        key : pramkit.engine.rng.SecretKey, optional
            The design step's DP noise is drawn from it (:func:`pramkit.design_planned`).
        quiet : bool
            No progress bars.

        Returns
        -------
        pramkit.release.record.Release

        Examples
        --------
        >>> from pramkit.datasets import census
        >>> from pramkit.engine.rng import SecretKey
        >>> key = SecretKey(bytes(32), "a test key")
        >>> a = DesignChoices(epsilon=3.0).release(census(5_000), ["age", "sex"], key=key)
        >>> b = DesignChoices(epsilon=3.0).release(census(5_000), ["age", "sex"], key=key)
        >>> a.manifest.ledger.dp_counts == b.manifest.ledger.dp_counts, a.manifest.record_epsilon <= 3.0
        (True, True)

        A sampling statement (``sampling``, ``population``) is of the file's rows:

        >>> DesignChoices(epsilon=3.0, sampling="srswor:5000/100000").release(census(5_000), ["sex"]).manifest.input[
        ...     "sampling"]["rates"]
        [0.05]
        >>> DesignChoices(epsilon=3.0, sampling="srswor:500/100000").release(census(5_000), ["sex"])
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --sampling srswor:500/100000 states a sample of 500 records but a DataFrame in memory has 5,000 rows: M is the file's row count (write --sampling srswor:5000/100000, or --population 100000)
        """
        from pramkit.privacy.amplification import check_statement, declare_sampling

        check_statement(self.sampling, self.population)  # the rows are checked once read
        if engine_name(self.engine) != "local" and (self.recognition is not None or self.target is not None):
            raise ParameterError("--engine spark counts the data of a release designed with --epsilon; "
                                 "--recognition and --target read records on this machine: use --engine local")
        if self.recognition is not None:
            if self.target is not None:
                raise ParameterError("--target searches the record budget of --epsilon; the recognition design "
                                     "has none")
            release = self._recognition(data, variables, key, self.recognition)
        elif self.target is not None:
            release = self._to_target(data, variables, key, quiet).release
        else:
            if self.target_keys is not None:
                raise ParameterError("--target-keys applies to --target")
            from pramkit.release.pipeline import design_planned

            release = design_planned(data, self.plan(variables), key=key, quiet=quiet, engine=self.engine,
                                     spark_master=self.spark_master)
        if self.recoded_by is not None:
            from pramkit.recode import declare_recoding

            release = declare_recoding(release, self.recoded_by)
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
        >>> DesignChoices(derive_from=Path("suf.json"), epsilon=1.0, method="rr").derive()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --method does not apply to --derive-from: the second step is the most information under --epsilon, designed from public inputs (--prior, --categories)
        """
        from pramkit.release.derive import derive_release

        other = [flag for flag, _ in self.flags() if flag not in DERIVE_FLAGS]
        if other:
            raise ParameterError(f"{other[0]} does not apply to --derive-from: the second step is the most "
                                 "information under --epsilon, designed from public inputs (--prior, --categories)")
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
        from pramkit.release.tuned import design_to_target, parse_target

        def names(text: str | None) -> list[str]:
            return [c.strip() for c in (text or "").split(",") if c.strip()]

        matched = parse_target(self.target or "")
        if self.epsilon is None or self.epsilon_per_variable is not None:
            raise ParameterError("--target searches the record budget: give --epsilon (the largest budget "
                                 "considered) and no --epsilon-per-variable")
        keys = names(self.target_keys) or list(dict.fromkeys([*names(self.strata), *variables]))
        frame = data if isinstance(data, pd.DataFrame) else read_table(data, na_values=self.na_values, sep=self.sep,
                                                                       encoding=self.encoding)
        self.plan(variables)  # every setting checked before the search designs anything
        return design_to_target(frame, lambda e: dataclasses.replace(self, epsilon=e).plan(variables),
                                matched=matched, keys=keys, bounds=(self.epsilon / 100, self.epsilon), key=key,
                                quiet=quiet)

    def _recognition(self, data: Any, variables: Sequence[str], key: SecretKey | None, alpha: float) -> Release:
        """The recognition design (``--recognition``): its own privacy model, no structure."""
        from pramkit.release.recognition import design_recognition

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
        gamma = 0.9 if self.recognition_gamma is None else self.recognition_gamma
        return design_recognition(data, list(variables), alpha=alpha,
                                  combinations=combinations(self.combinations), solver=self.recognition_method,
                                  gamma=gamma, na_values=self.na_values, sep=self.sep, encoding=self.encoding)


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
