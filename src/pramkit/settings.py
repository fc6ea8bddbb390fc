"""Settings declared once: a workflow's specification, from which its command line, form and checks are made.

A workflow's specification (:class:`pramkit.release.spec.ReleaseSpec`,
:class:`pramkit.estimate.spec.EstimateSpec`) is a frozen dataclass whose every field is
declared by :func:`setting`: its default, its type (how a command line or a form reads its
text), its rule (:mod:`pramkit.validate`), its help text, its flag and the label of its field
in the application.  From these declarations:

* :func:`add_arguments` adds the flags to a command's parser (the same names, defaults and help);
* :func:`from_namespace` builds the specification from the parsed flags, :func:`from_texts`
  from the texts of a form (the application's validator);
* :func:`check_rules` refuses a value its rule refuses, with one message for the library,
  the command line and the form;
* :func:`flags` writes the specification back as a command line (a reproducing script);
* :func:`option_table` is the documentation's table of the options;
* :func:`invalid_value` gives a value each rule refuses (for the tests).

Examples
--------
>>> import argparse, dataclasses
>>> from pramkit.validate import Number
>>> @dataclasses.dataclass(frozen=True)
... class Spec:
...     rate: float = setting(1.0, float, Number(low=0, low_open=True), "the rate", label="Rate")
...     fast: bool = setting(False, bool, None, "go fast")
>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser, Spec)
>>> spec = from_namespace(Spec, parser.parse_args(["--rate", "2", "--fast"]))
>>> spec, flags(spec)
(Spec(rate=2.0, fast=True), [('--rate', '2.0'), ('--fast', None)])
>>> check_rules(Spec(rate=-1.0))
Traceback (most recent call last):
...
pramkit.errors.ParameterError: rate must be a number > 0, got -1.0
>>> from_texts(Spec, {"rate": "-1"})
Traceback (most recent call last):
...
pramkit.errors.ParameterError: rate must be a number > 0, got -1.0
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import numbers
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pramkit.defaults import CONTRIBUTION_REPLICATES
from pramkit.errors import ParameterError
from pramkit.validate import Checked, Choice, Flag, Instance, Number, Rule

#: The metadata key of a field declared by :func:`setting`.
KEY = "pramkit.setting"


@dataclass(frozen=True)
class Setting:
    """One setting of a workflow: everything the command line, the form, the checks and the docs need.

    Attributes
    ----------
    name : str
        The field's name (filled in by :func:`settings`).
    default : object
        The value when it is not given.
    kind : callable
        How a text becomes the value (``float``, ``int``, ``str``, ``pathlib.Path``; ``bool``: a switch).
    rule : pramkit.validate.Rule or None
        What a value must be; ``None``: the rule is the design family's (``option``) or the
        workflow checks the value where it reads it (a file, a list of names).
    help : str
        The help text of the flag (``%(default)s`` is the default).
    flag : str
        The command line's flag (``--`` and the name with dashes unless given).
    label : str
        The label of its field in the application.
    noun : str
        How the messages name it.
    metavar : str or None
        The flag's placeholder in ``--help`` (a choice's values by default).
    group : str or None
        The flags' group in ``--help`` and the docs.
    option : str or None
        The design family's option this setting gives (:data:`pramkit.design.registry.FAMILIES`):
        its rule and the families that take it come from the registry.
    methods : tuple of str or None
        The families it applies to when not every family taking ``option`` does.
    needs : tuple or None
        ``(name, value)``: it applies only when setting ``name`` has ``value`` (``None``: is given).
    misuse : str or None
        The message when it is given where it does not apply (default: generated).
    shared : bool
        Its flag is added by a helper shared by every command (``--na-values``, ``--sep``), not here.
    widget : str or None
        Its field in the application when not the one its type gives (:func:`pramkit.app.fields.widget_of`):
        ``"columns"`` (some of the file's columns), ``"column"`` (one), ``"file"`` (an upload) or ``"none"``
        (no field: a setting the application sets itself or does not offer).
    more : bool
        Its field is among the form's further settings (folded away), not in its first part.
    parse_choices : bool
        The command line's parser itself refuses a value outside its rule's choices, with argparse's
        message ("invalid choice: ..."), as it did before the flag was declared here (users' scripts
        read it); the library and the form refuse it by the rule.
    """

    name: str
    default: Any
    kind: Callable[[str], Any]
    rule: Rule | None
    help: str
    flag: str
    label: str
    noun: str
    metavar: str | None = None
    group: str | None = None
    option: str | None = None
    methods: tuple[str, ...] | None = None
    needs: tuple[str, Any] | None = None
    misuse: str | None = None
    shared: bool = False
    widget: str | None = None
    more: bool = False
    parse_choices: bool = False

    @property
    def switch(self) -> bool:
        """A flag without a value (``--truthful``)."""
        return self.kind is bool

    def given(self, value: Any) -> bool:
        """Whether ``value`` is given (differs from the default)."""
        return bool(value != self.default)


def setting(default: Any, kind: Callable[[str], Any], rule: Rule | None, help: str, *, flag: str | None = None,
            label: str | None = None, noun: str | None = None, **more: Any) -> Any:
    """A dataclass field declaring one setting (:class:`Setting`; the name is the field's).

    Parameters
    ----------
    default : object
        The default (an immutable value).
    kind : callable
        How a text becomes the value.
    rule : Rule or None
        What a value must be.
    help : str
        The help text.
    flag, label, noun : str, optional
        The flag (default ``--`` and the name with dashes), the form's label (default the noun
        capitalised) and the messages' name (default the field's name).
    **more
        The other attributes of :class:`Setting`.

    Returns
    -------
    dataclasses.Field
    """
    return dataclasses.field(default=default, metadata={KEY: {
        "kind": kind, "rule": rule, "help": help, "flag": flag, "label": label, "noun": noun, **more}})


def na_values_setting() -> Any:
    """``--na-values``, a setting of every workflow that reads a CSV file (its flag is the shared one)."""
    from pramkit.defaults import NA_VALUES
    from pramkit.validate import Instance

    return setting(NA_VALUES, markers, Instance((tuple, list), "texts, comma-separated"), "texts that mean missing "
                   "in a CSV file, besides the empty field", shared=True, label="Missing-value codes")


def sep_setting() -> Any:
    """``--sep``, a setting of every workflow that reads a CSV file (its flag is the shared one)."""
    from pramkit.defaults import CSV_SEP
    from pramkit.validate import SEPARATOR

    return setting(CSV_SEP, str, SEPARATOR, "the field separator of a CSV file", shared=True,
                   noun="the separator (--sep)", label="Separator")


def encoding_setting() -> Any:
    """``--encoding``, a setting of every workflow that reads a CSV file (its flag is the shared one)."""
    from pramkit.defaults import CSV_ENCODING
    from pramkit.validate import ENCODING

    return setting(CSV_ENCODING, str, ENCODING, "the character encoding of a CSV file", shared=True,
                   label="Encoding")


def decimal_setting() -> Any:
    """``--decimal``, a setting of every workflow that reads a CSV file (its flag is the shared one): the decimal
    mark of the numbers it reads (weights, numeric covariates, breaks); categories stay text."""
    from pramkit.defaults import CSV_DECIMAL
    from pramkit.validate import DECIMAL

    return setting(CSV_DECIMAL, str, DECIMAL, "the decimal mark of a CSV file's numbers (weights, numeric columns): "
                   "'.' or ',' (categories stay text)", shared=True, noun="the decimal mark (--decimal)",
                   label="Decimal mark")


def engine_setting(spark: str) -> Any:
    """``--engine``, a setting of every workflow whose passes over records may run on Spark (``spark``: what
    ``--engine spark`` does for it; the flag is the shared one)."""
    from pramkit.validate import ENGINES

    return setting(ENGINES[0], str, Choice(ENGINES), f"local: streamed on this machine (default); spark: {spark}",
                   shared=True, label="Engine")


def spark_master_setting() -> Any:
    """``--spark-master``, beside :func:`engine_setting` (the flag is the shared one)."""
    from pramkit.validate import SPARK_MASTER, Instance

    return setting(SPARK_MASTER, str, Instance((str,), "a Spark master URL"), "Spark master URL for --engine spark",
                   shared=True, label="Spark master")


def settings(spec: Any) -> tuple[Setting, ...]:
    """The settings of a specification (a class or a value), in the order declared.

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> [s.flag for s in settings(EstimateSpec)][:3]
    ['--method', '--estimator', '--variance']
    """
    out = []
    for f in dataclasses.fields(spec):
        meta = dict(f.metadata[KEY])
        noun = meta.pop("noun") or f.name
        meta["flag"] = meta["flag"] or "--" + f.name.replace("_", "-")
        meta["label"] = meta["label"] or (noun[:1].upper() + noun[1:]).replace("_", " ")
        out.append(Setting(name=f.name, default=f.default, noun=noun, **meta))
    return tuple(out)


def markers(text: str) -> tuple[str, ...]:
    """The texts of a comma-separated list (``--na-values``), stripped, empty parts left out.

    Examples
    --------
    >>> markers("NA, -9,."), markers("")
    (('NA', '-9', '.'), ())
    """
    return tuple(t.strip() for t in text.split(",") if t.strip())


def comma_numbers(text: str, flag: str) -> list[float]:
    """The comma-separated numbers of a flag's value.

    Raises
    ------
    ParameterError
        A part is not a number (one line naming the flag).

    Examples
    --------
    >>> comma_numbers("0.5, 0.75", "--replicate-scales")
    [0.5, 0.75]
    >>> comma_numbers("0.5,x", "--probs")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --probs must be comma-separated numbers, got '0.5,x'
    """
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ParameterError(f"{flag} must be comma-separated numbers, got {text!r}") from None


def metavar(s: Setting) -> str | None:
    """The placeholder of a setting's flag: its own, or its choices as argparse writes them."""
    if s.metavar is None and isinstance(s.rule, Choice):
        return "{" + ",".join(s.rule.values) + "}"
    return s.metavar


def add_arguments(parser: argparse.ArgumentParser | argparse._ActionsContainer, spec: type,
                  groups: Mapping[str, str] | None = None,
                  names: Sequence[str] | None = None) -> None:
    """Add the flags of ``spec``'s settings to ``parser`` (those not ``shared``; only ``names`` when given).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser (or one of its groups: a group of flags that exclude each other).
    spec : type
        The specification.
    groups : mapping, optional
        ``{group: title}``: the argument groups of ``--help``.
    names : sequence of str, optional
        The settings to add (the others are added by further calls: a command whose ``--help`` lists its
        flags among others keeps their order).

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser, EstimateSpec)
    >>> parser.parse_args(["--confidence", "0.9"]).confidence, parser.parse_args([]).variance
    (0.9, 'multinomial')
    """
    made: dict[str, Any] = {}
    for s in settings(spec):
        if s.shared or (names is not None and s.name not in names):
            continue
        where: Any = parser
        if s.group is not None and groups is not None:
            if s.group not in made:
                made[s.group] = parser.add_argument_group(groups[s.group])
            where = made[s.group]
        if s.switch:
            where.add_argument(s.flag, action="store_true", dest=s.name, help=s.help)
        else:
            choices = s.rule.values if s.parse_choices and isinstance(s.rule, Choice) else None
            where.add_argument(s.flag, type=None if s.kind is str else s.kind, default=s.default, dest=s.name,
                               metavar=None if choices else metavar(s), help=s.help, choices=choices)


def from_namespace(spec: type, args: Any) -> Any:
    """The specification of parsed flags (the attributes of the fields' names; others ignored).

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> from_namespace(EstimateSpec, argparse.Namespace(confidence=0.9, other=1)).confidence
    0.9
    """
    return spec(**{f.name: getattr(args, f.name) for f in dataclasses.fields(spec) if hasattr(args, f.name)})


def parse_text(s: Setting, text: str) -> Any:
    """A setting's value written in a form's field (blank: the default), read as the command line reads it.

    Raises
    ------
    ParameterError
        The text is not of the setting's type (one line naming the setting).

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> confidence = {s.name: s for s in settings(EstimateSpec)}["confidence"]
    >>> parse_text(confidence, " 0.9 "), parse_text(confidence, "")
    (0.9, 0.95)
    >>> parse_text(confidence, "high")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: confidence must be a number, got 'high'
    """
    text = text.strip()
    if s.switch:
        if text.lower() not in ("", "true", "false", "yes", "no", "1", "0"):
            raise ParameterError(f"{s.noun} must be true or false, got {text!r}")
        return text.lower() in ("true", "yes", "1")
    if not text:
        return s.default
    try:
        return s.kind(text)
    except (TypeError, ValueError):
        names: dict[Any, str] = {float: "a number", int: "a whole number"}
        what = names.get(s.kind, "a " + getattr(s.kind, "__name__", "value"))
        raise ParameterError(f"{s.noun} must be {what}, got {text!r}") from None


def from_texts(spec: type, texts: Mapping[str, str], **values: Any) -> Any:
    """The specification of a form's fields (``{name: text}``, read by :func:`parse_text`) and of
    ``values`` given as they are, checked by its rules (:meth:`check` when the specification has one,
    else :func:`check_rules`): the application's validator.

    Raises
    ------
    ParameterError
        An unknown field, a text of the wrong type, or a value its rule refuses.
    """
    known = {s.name: s for s in settings(spec)}
    unknown = sorted(set(texts) - set(known))
    if unknown:
        raise ParameterError(f"unknown setting {unknown[0]!r}; the settings are {', '.join(known)}")
    value = spec(**{name: parse_text(known[name], text) for name, text in texts.items()}, **values)
    check = getattr(value, "check", None)
    check() if check is not None else check_rules(value)
    return value


def check_rules(value: Any, skip: Collection[str] = ()) -> None:
    """Refuse a setting of ``value`` that its rule refuses (settings at ``None`` are not given).

    Parameters
    ----------
    value : dataclass
        A specification.
    skip : collection of str
        The names of settings not checked here: those that a function the specification hands them to
        checks by the same rules (:meth:`pramkit.release.spec.ReleaseSpec.plan`: those of
        :func:`pramkit.plan_release`), so that each value is checked once on its way.

    Raises
    ------
    ParameterError
        The rule's message, naming the setting by its noun.

    Examples
    --------
    >>> from pramkit.release.spec import ReleaseSpec
    >>> check_rules(ReleaseSpec(split="best", population=-1), skip=("split",))
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: population must be a whole number >= 0, got -1
    """
    for s in settings(value):
        given = getattr(value, s.name)
        if s.rule is not None and given is not None and s.name not in skip:
            s.rule.check(given, s.noun)


#: The specifications checked in the blocks the current call runs in (:func:`checked`).
_CHECKED: ContextVar[tuple[Any, ...]] = ContextVar("pramkit_checked_specifications", default=())


@contextlib.contextmanager
def checked(spec: Any, by: Callable[[], None] | None = None) -> Iterator[Any]:
    """Check ``spec`` once (its ``check()``), then take it as checked inside the block: its own methods and the
    functions it hands its values to check them no more (as scikit-learn's ``_fit_context`` skips the validation
    of nested calls).  Each value is checked once on its way, with no unchecked twin of a public method.

    A workflow's library function works from one checked specification (the one door); given keywords, it
    builds the specification from them and checks them by its own documented rules (``by``: their messages
    are the function's), in place of the specification's ``check()``: either way, once.

    Parameters
    ----------
    spec : dataclass
        A specification with a ``check()`` that returns at once when :func:`is_checked` says so.
    by : callable, optional
        The check to run instead of ``spec.check()`` (no argument; raises a :class:`ParameterError`): a
        keyword function's checks of the keywords it built ``spec`` from.

    Yields
    ------
    dataclass
        ``spec``.

    Examples
    --------
    >>> from pramkit.release.spec import ReleaseSpec
    >>> spec = ReleaseSpec(epsilon=2.0)
    >>> with checked(spec):
    ...     is_checked(spec), sorted(handed_on() & {"epsilon", "split"})
    (True, ['epsilon', 'split'])
    >>> is_checked(spec), handed_on()
    (False, frozenset())
    >>> with checked(ReleaseSpec(split="best")):
    ...     pass
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: split must be one of 'equal', 'optimal', 'joint', got 'best'
    >>> def keywords_checked() -> None:
    ...     raise ParameterError("epsilon must be given")
    >>> with checked(ReleaseSpec(), by=keywords_checked):
    ...     pass
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: epsilon must be given
    """
    if not is_checked(spec):
        (spec.check if by is None else by)()
    token = _CHECKED.set((*_CHECKED.get(), spec))
    try:
        yield spec
    finally:
        _CHECKED.reset(token)


def is_checked(spec: Any) -> bool:
    """True inside a :func:`checked` block of this very specification."""
    return any(held is spec for held in _CHECKED.get())


def handed_on() -> frozenset[str]:
    """The names of the settings already checked by the :func:`checked` blocks the current call runs in: a function
    that takes them as keywords leaves them to the specification's check."""
    return frozenset(s.name for spec in _CHECKED.get() for s in settings(spec))


def check_values(spec: type, **values: Any) -> None:
    """Check ``values`` (``{setting: value}``) by the rules of ``spec``'s settings of those names (``None``: not
    given): a library function's keywords are checked as the command line's flags are.

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> check_values(EstimateSpec, variance="pram", confidence=0.9)
    >>> check_values(EstimateSpec, variance="bogus")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: variance must be one of ['multinomial', 'pram'], not 'bogus'
    """
    known = {s.name: s for s in settings(spec)}
    for name, value in values.items():
        s = known[name]
        if value is not None and s.rule is not None:
            s.rule.check(value, s.noun)


def flags(value: Any) -> list[tuple[str, str | None]]:
    """The flags giving ``value``'s settings that differ from the default, with their values as text
    (``None``: a switch; a float written so that it parses back to the same value).

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> flags(EstimateSpec(confidence=0.9, na_values=("NA", "-9")))
    [('--confidence', '0.9'), ('--na-values', 'NA,-9')]
    """
    out: list[tuple[str, str | None]] = []
    for s in settings(value):
        given = getattr(value, s.name)
        if given == s.default:
            continue
        if isinstance(given, bool):
            out.append((s.flag, None))
        elif isinstance(given, tuple):
            out.append((s.flag, ",".join(given)))
        else:
            out.append((s.flag, repr(given) if isinstance(given, float) else str(given)))
    return out


def invalid_value(s: Setting) -> Any:
    """A value of the right type that the setting's rule refuses, or ``None`` when none can be written
    on a command line (a switch, a path, a free text).

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> {s.name: invalid_value(s) for s in settings(EstimateSpec)}["confidence"]
    1.5
    """
    return None if s.rule is None or isinstance(s.rule, Flag) else s.rule.invalid()


def option_table(spec: type, rules: Callable[[Setting], str] | None = None) -> str:
    """The documentation's table of a specification's options (MyST Markdown): flag, default,
    what a value must be, help.

    Parameters
    ----------
    spec : type
        The specification.
    rules : callable, optional
        What a value must be, for the settings whose rule is not their own (a family's option).

    Examples
    --------
    >>> from pramkit.estimate.spec import EstimateSpec
    >>> print(option_table(EstimateSpec).splitlines()[0])
    | flag | library | default | value | meaning |
    """
    lines = ["| flag | library | default | value | meaning |", "|---|---|---|---|---|"]
    for s in settings(spec):
        what = ("a switch" if s.switch else s.rule.expects() if s.rule is not None
                else rules(s) if rules is not None else "")
        default = "" if s.default in (None, False) else f"`{s.default!r}`"
        text = s.help.replace("%(default)s", str(s.default)).replace("%%", "%").replace("|", "\\|")
        lines.append(f"| `{s.flag}` | `{s.name}` | {default} | {what.replace('|', chr(92) + '|')} | {text} |")
    return "\n".join(lines)


def only_spec(function: Callable[..., Any], given: Mapping[str, Any], spec: object) -> None:
    """Refuse a keyword of ``function`` given besides its ``spec`` (one that is not at its default): a
    workflow takes its settings as one specification or as keywords, not both.

    The keywords are a convenience that builds the specification (:func:`pramkit.apply_file` works from one
    checked specification either way: :func:`checked`); given a specification, no keyword may say otherwise.

    Parameters
    ----------
    function : callable
        The workflow, whose signature holds the keywords' defaults.
    given : mapping
        The keywords the specification also gives, as they were passed.
    spec : object
        The specification (its type names it in the message).

    Raises
    ------
    ParameterError
        A keyword of ``given`` not at its default (an array is never at it), named in one line.

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class RunSpec:
    ...     rows: int = 10
    >>> def run(data, *, rows=10, spec=None):
    ...     if spec is not None:
    ...         only_spec(run, {"rows": rows}, spec)
    >>> run("a.csv", rows=10, spec=RunSpec())
    >>> run("a.csv", rows=5, spec=RunSpec())
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: give the settings as a RunSpec or as keywords, not both (rows)
    """
    import inspect

    defaults = inspect.signature(function).parameters
    other = [name for name, value in given.items() if not _at_default(value, defaults[name].default)]
    if other:
        name = type(spec).__name__
        raise ParameterError(f"give the settings as {'an' if name[:1] in 'AEIOU' else 'a'} {name} or as keywords, "
                             f"not both ({', '.join(other)})")


def _at_default(value: Any, default: Any) -> bool:
    """A keyword left at its default (an array is never one)."""
    import numpy as np

    return value is default or (not isinstance(value, np.ndarray) and bool(value == default))


@dataclass(frozen=True)
class DataSettings:
    """How a workflow reads its data: the settings of every command that reads records (their flags are the
    shared ones).  A workflow's specification derives from it, and declares its own ``engine`` again to say
    what ``--engine spark`` does for it.

    Examples
    --------
    >>> DataSettings(sep=";").sep, [s.flag for s in settings(DataSettings)][:2]
    (';', ['--na-values', '--sep'])
    """

    na_values: tuple[str, ...] = na_values_setting()
    sep: str = sep_setting()
    encoding: str = encoding_setting()
    decimal: str = decimal_setting()
    engine: str = engine_setting("the passes over records run by Spark")
    spark_master: str = spark_master_setting()

    def check(self) -> None:
        """Refuse a setting its rule refuses (one line naming it); no file read; nothing inside a block of
        :func:`checked` of this very specification (checked on the way in)."""
        if not is_checked(self):
            check_rules(self)


#: The model of the key table of ``pramkit risk`` when none is given.
RISK_MODEL = "2way"
#: How the weights give the sampling fractions of ``pramkit risk`` when not said.
RISK_FRACTIONS = "cell"


def _fraction(value: Any, name: str) -> None:
    from pramkit.validate import check_fraction

    check_fraction(value)


def max_steps(value: Any, name: str = "--max-steps") -> None:
    """``--max-steps``: a positive finite number (the most steps the SUDA search may take).

    Examples
    --------
    >>> max_steps(2e10)
    >>> max_steps(0.0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --max-steps must be a positive number, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and float(value) > 0):
        shown = f"{value:g}" if isinstance(value, numbers.Real) else repr(value)
        raise ParameterError(f"--max-steps must be a positive number, got {shown}")


def _column(what: str = "a column name") -> Instance:
    return Instance((str,), what)


@dataclass(frozen=True)
class RiskSettings(DataSettings):
    """Every setting of ``pramkit risk DATA --keys ...`` but the key variables and the files: what
    :func:`pramkit.risk.identification.identification_risk` works from (the one door: its keywords build one).

    They stand here, below the risk floor that works from them, so that ``pramkit risk --help`` (whose
    specification, :class:`pramkit.release.risk_spec.RiskSpec`, is these settings with the method that runs
    them) loads no data library: the :mod:`pramkit.risk` package loads its modules, and pandas, when imported.

    Examples
    --------
    >>> RiskSettings(sampling_fraction=0.05).check()
    >>> RiskSettings(sampling_fraction=1.5).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the sampling fraction must lie in (0, 1], got 1.5
    """

    sampling_fraction: float | None = setting(None, float, Checked(_fraction, "a number in (0, 1]", 1.5),
                                              "the sampling fraction pi in (0, 1]", label="Sampling fraction")
    weights: str | None = setting(None, str, _column(), "survey weight column (per-cell pi = f / sum of weights, "
                                  "see --fractions)", label="Weights")
    fractions: str = setting(
        RISK_FRACTIONS, str, Choice(("cell", "file")), "with --weights: per-cell sampling fractions where the "
        "weights determine them (default) or one fraction n / sum of weights for every cell", parse_choices=True)
    model: str = setting(RISK_MODEL, str, _column("a model: independence, 2way or a formula"),
                         "independence, 2way (default) or a formula such as 'a*b + c'")
    household: str | None = setting(
        None, str, _column(), "household id column: report the household-level risk 1 - prod(1 - r) over the "
        "members' per-record risks r, as sdcMicro's hierarchical risk; with --manifest, the risks after PRAM (not "
        "with --original, --model, --fractions or --plot)", metavar="COL", label="Household id")
    missing: str = setting("category", str, Choice(("category", "exclude")), "missing key values: a category of "
                           "their own (default) or records excluded", parse_choices=True, label="Missing keys")
    suda: bool = setting(False, bool, Flag(), "the SUDA2 special uniques instead: minimal sample uniques, SUDA "
                         "scores (Elliot's weights), DIS-SUDA with --sampling-fraction, and the variables' and levels' "
                         "contributions", label="SUDA")
    contributions: bool = setting(
        False, bool, Flag(), "what each key variable and level contributes to SUDA, tau1, tau2 and the individual "
        "risk (left out, merged); with --manifest and --original, before and after PRAM and the share of the "
        "record epsilon each variable spends")
    max_size: int | None = setting(None, int, None, "with --suda or --contributions: the largest MSU size "
                                   "(default: the number of keys)", label="Largest MSU size")
    max_steps: float | None = setting(
        None, float, Checked(max_steps, "a positive number", 0.0), "with --suda or --contributions: the most "
        "steps the SUDA search may take, estimated before it starts (default 2e10); a larger estimate is refused "
        "with the figure", label="Most SUDA steps")
    replicates: int = setting(
        CONTRIBUTION_REPLICATES, int, None, "with --contributions and --manifest: perturbations drawn to estimate "
        "the expected SUDA contributions when they cannot be enumerated exactly "
        f"(default {CONTRIBUTION_REPLICATES})")
    k_anonymity: int | None = setting(
        None, int, Number(int, low=2), "the records and cells below k instead: the records whose combination of the "
        "keys fewer than K records share (sdcMicro's kAnon_violations; with --weights also by the weighted "
        "frequency), and the cells of every table of 1 to --max-dim keys counted fewer than K times (sdcMicro's "
        "riskyCells, its threshold K - 1)", metavar="K", noun="--k-anonymity", label="k-anonymity")
    max_dim: int | None = setting(None, int, Number(int, low=1), "with --k-anonymity: the most keys in a table of "
                                  "cells (default: all the keys)", metavar="D", noun="--max-dim",
                                  label="Largest table of cells")
    l_diversity: str | None = setting(
        None, str, _column("comma-separated column names"), "the l-diversity of these sensitive variables "
        "(comma-separated, none a key) within the classes of the keys: the distinct and the entropy l of every "
        "class, the smallest, and the records in classes below --l (sdcMicro's ldiversity)", metavar="S,...",
        noun="--l-diversity", label="Sensitive variables")
    l_threshold: int = setting(2, int, Number(int, low=2), "with --l-diversity: count the records in classes with "
                               "fewer than L distinct sensitive values (default 2)", flag="--l", metavar="L",
                               noun="--l", label="l")
    missing_rule: str = setting(
        "own", str, Choice(("own", "any")), "with --k-anonymity or --l-diversity: a missing key value is a value "
        "of its own (default) or matches any value (sdcMicro's rule, as pramkit suppress --missing any)",
        parse_choices=True, label="Missing key rule")
    engine: str = engine_setting("the key table and weight sums aggregated by Spark (CSV or Parquet), "
                                 "the same figures")

    def check(self) -> None:
        """Refuse a setting its rule refuses, or a mode the engine does not run (one line); no file read;
        nothing inside a block of :func:`checked` of this very specification (checked on the way in).

        Examples
        --------
        >>> RiskSettings(suda=True, engine="spark").check()
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --engine spark counts the key table of tau1, tau2 and the per-record risk; --suda, --contributions, --household, --k-anonymity and --l-diversity read records on this machine: use --engine local
        """
        if is_checked(self):
            return
        check_rules(self)
        if self.engine != "local" and (self.suda or self.contributions or self.household is not None
                                       or self.k_anonymity is not None or self.l_diversity is not None):
            raise ParameterError("--engine spark counts the key table of tau1, tau2 and the per-record risk; "
                                 "--suda, --contributions, --household, --k-anonymity and --l-diversity read records "
                                 "on this machine: use --engine local")

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.risk.identification.identification_risk` these settings give (checked).

        Examples
        --------
        >>> RiskSettings(weights="w", fractions="file").keywords()["fractions"]
        'file'
        """
        self.check()
        return {"sampling_fraction": self.sampling_fraction, "weights": self.weights, "model": self.model,
                "missing": self.missing, "fractions": self.fractions, "na_values": self.na_values, "sep": self.sep,
                "encoding": self.encoding, "decimal": self.decimal, "engine": self.engine,
                "spark_master": self.spark_master}


__all__ = [
    "RISK_FRACTIONS",
    "RISK_MODEL",
    "RiskSettings",
    "Setting",
    "add_arguments",
    "check_rules",
    "check_values",
    "comma_numbers",
    "decimal_setting",
    "encoding_setting",
    "engine_setting",
    "flags",
    "from_namespace",
    "from_texts",
    "invalid_value",
    "markers",
    "max_steps",
    "na_values_setting",
    "only_spec",
    "option_table",
    "parse_text",
    "sep_setting",
    "setting",
    "settings",
    "spark_master_setting",
]
