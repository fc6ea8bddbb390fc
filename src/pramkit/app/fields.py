"""The page's fields as the library's parameters: text parsed, then checked by :mod:`pramkit.validate`.

A field that cannot be read gives a :class:`pramkit.errors.ParameterError`
with a one-line message naming the field; the page shows it and runs nothing.
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pramkit.atomic import write_text_atomic
from pramkit.errors import ParameterError, PramkitError
from pramkit.settings import Setting, from_texts, parse_text, settings
from pramkit.settings import markers as markers  # the field of missing-value codes
from pramkit.structure import read_rules
from pramkit.validate import Choice, epsilon, positive


def number(text: str, name: str) -> float:
    """The number written in a text field.

    Parameters
    ----------
    text : str
        The field's content (blanks around it are ignored).
    name : str
        The field's name, for the message.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        The text is not a number.

    Examples
    --------
    >>> number(" 3 ", "the record budget")
    3.0
    >>> number("three", "the record budget")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the record budget must be a number, got 'three'
    """
    try:
        return float(text.strip())
    except ValueError:
        raise ParameterError(f"{name} must be a number, got {text.strip()!r}") from None


def budget(text: str) -> float:
    """The record budget (epsilon, nats): a positive finite number.

    Examples
    --------
    >>> budget("3")
    3.0
    >>> budget("-1")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the record budget must be a positive finite number, got -1.0
    """
    return epsilon(number(text, "the record budget"), "the record budget")


def fraction(text: str) -> float:
    """The sampling fraction of the file: a number in (0, 1].

    Examples
    --------
    >>> fraction("0.05")
    0.05
    >>> fraction("5")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the sampling fraction must lie in (0, 1], got 5
    """
    f = positive(number(text, "the sampling fraction"), "the sampling fraction")
    if f > 1:
        raise ParameterError(f"the sampling fraction must lie in (0, 1], got {f:g}")
    return f


def row_count(text: str) -> int:
    """A number of rows: a whole number above 0.

    Examples
    --------
    >>> row_count("20000"), row_count("2e4")
    (20000, 20000)
    >>> row_count("12.5")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the number of rows must be a whole number above 0, got 12.5
    """
    n = number(text, "the number of rows")
    if not (math.isfinite(n) and n == int(n) and n > 0):
        raise ParameterError(f"the number of rows must be a whole number above 0, got {n:g}")
    return int(n)


def options(text: str) -> dict[str, Any]:
    """A design family's options written ``name=value, ...``; numbers become numbers.

    The family checks the names and values (:func:`pramkit.validate.check_options`).

    Examples
    --------
    >>> options("beta=0.5, family=diagonal, k=3")
    {'beta': 0.5, 'family': 'diagonal', 'k': 3}
    >>> options("")
    {}
    >>> options("beta")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the options must be written name=value, got 'beta'
    """
    return {name: _value(value) for name, value in _items(text).items()}


def _items(text: str) -> dict[str, str]:
    """``name=value, ...`` as ``{name: value}`` (texts)."""
    found: dict[str, str] = {}
    for item in (t.strip() for t in text.split(",") if t.strip()):
        name, sep, value = (s.strip() for s in item.partition("="))
        if not (sep and name and value):
            raise ParameterError(f"the options must be written name=value, got {item!r}")
        found[name] = value
    return found


def design_options(text: str, form: Sequence[str] = ()) -> dict[str, Any]:
    """The design's options field, ``name=value, ...``: each a setting of :class:`pramkit.release.spec.ReleaseSpec`
    (not one of the form's own fields ``form``), its text read as the command line reads its flag.

    Examples
    --------
    >>> design_options("keep=0.8, bandwidth=2, combinations=2")
    {'keep': 0.8, 'bandwidth': 2, 'combinations': '2'}
    >>> design_options("colour=red")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: unknown method option 'colour' in the field Method options; the options are the design's parameters written name=value (e.g. beta=0.5, keep=0.8, k=3): ...
    >>> design_options("k=three")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k must be a whole number, got 'three'
    """
    from pramkit.release.spec import ReleaseSpec

    known = {s.name: s for s in settings(ReleaseSpec) if s.name not in form}
    given = _items(text)
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ParameterError(f"unknown method option {unknown[0]!r} in the field Method options; the options are "
                             "the design's parameters written name=value (e.g. beta=0.5, keep=0.8, k=3): "
                             + ", ".join(known))
    return {name: parse_text(known[name], value) for name, value in given.items()}


def design_spec(texts: Mapping[str, str], **values: Any) -> Any:
    """The application's validator of the design form: its fields' texts (``{setting: text}``, read as the
    command line reads the flags) and ``values`` given as they are, as a checked
    :class:`pramkit.release.spec.ReleaseSpec` (the same refusals, with the same messages, as the library and
    ``pramkit design``).

    Examples
    --------
    >>> design_spec({"epsilon": "3", "split": "joint"}).to_args()
    ['--epsilon', '3.0', '--split', 'joint']
    >>> design_spec({"split": "best"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: split must be one of 'equal', 'optimal', 'joint', got 'best'
    """
    from pramkit.release.spec import ReleaseSpec

    return from_texts(ReleaseSpec, texts, **values)


def design_labels() -> dict[str, tuple[str, str]]:
    """Each design setting's label and help in the form, from the specification: ``{setting: (label, help)}``.

    Examples
    --------
    >>> design_labels()["epsilon"][0]
    'Record budget (epsilon, nats; may be empty for the classic designs)'
    """
    from pramkit.release.spec import ReleaseSpec

    return {s.name: (s.label, s.help.replace("%(default)s", str(s.default)).replace("%%", "%"))
            for s in settings(ReleaseSpec)}


#: The designs the page offers: choice -> (its name in the page, the ``pramkit design`` settings it sets).  A
#: design family of the registry not named here is offered under its own name (:func:`methods`).
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "dp": ("DP-optimal: the most information at the budget", {"method": "dp"}),
    "dp-variance": ("DP: the least variance of the estimates", {"method": "dp", "objective": "variance"}),
    "dp-distance": ("DP: the least expected distance moved (option distances=ordinal or a file)",
                    {"method": "dp", "objective": "distance"}),
    "rr": ("randomized response", {"method": "rr"}),
    "metric": ("metric DP over distances (options metric_epsilon=..., distances=...)", {"method": "metric"}),
    "recognition": ("against spontaneous recognition (option recognition=ALPHA; no budget)", {"method": "dp"}),
    "keep": ("classic PRAM: keep probability (option keep=...)", {"method": "keep"}),
    "kanon": ("k-anonymity blocks (option k=...)", {"method": "kanon"}),
    "invariant": ("invariant PRAM", {"method": "invariant"}),
    "tridiagonal": ("tridiagonal", {"method": "tridiagonal"}),
    "circulant": ("circulant", {"method": "circulant"}),
    "bistochastic-beta": ("bistochastic at a beta (option beta=...)", {"method": "bistochastic-beta"}),
}

#: The settings of a group shown only with these designs of the page (the recognition design's own settings).
GROUP_METHODS = {"recognition": ("recognition",)}

#: The first value of a field where the page suggests one (the setting itself has no default).
FIRST_VALUES = {"epsilon": "3"}

#: The fields' ids the page had before its design form was made from the specification (the others are
#: ``design_`` and the setting's name).
FIELD_IDS = ("epsilon", "split", "forbid", "strata", "keep_codes", "household_vars", "prior", "categories", "missing")


def methods() -> dict[str, tuple[str, dict[str, Any]]]:
    """The designs the page offers: :data:`METHODS`, then every other family of the registry by its name.

    Examples
    --------
    >>> from pramkit.design.registry import FAMILIES
    >>> offered = {flags["method"] for _, flags in methods().values()}
    >>> offered == set(FAMILIES), list(methods())[0]
    (True, 'dp')
    """
    from pramkit.design.registry import FAMILIES

    named = {flags["method"] for _, flags in METHODS.values()}
    return {**METHODS, **{name: (f"{name}: {fam.help}", {"method": name}) for name, fam in FAMILIES.items()
                          if name not in named}}


@dataclass(frozen=True)
class Field:
    """One field of the design form, made from a setting of :class:`pramkit.release.spec.ReleaseSpec`.

    Attributes
    ----------
    setting : str
        The setting's name.
    id : str
        The field's id in the page.
    widget : str
        ``"text"``, ``"select"``, ``"checkbox"``, ``"file"`` (an upload), ``"columns"`` (some of the
        file's columns) or ``"column"`` (one of them, or none).
    label, help : str
        The setting's label and help text.
    choices : tuple of str
        A select's values (``""``: the default, when the setting has none).
    value : str
        The field's first value (the setting's default as text).
    methods : tuple of str or None
        The designs of the page (:func:`methods`) the setting applies to; ``None``: every one.
    more : bool
        Among the form's further settings (folded away).
    kind : callable
        How the setting reads a text (:attr:`pramkit.settings.Setting.kind`).
    """

    setting: str
    id: str
    widget: str
    label: str
    help: str
    choices: tuple[str, ...] = ()
    value: str = ""
    methods: tuple[str, ...] | None = None
    more: bool = False
    kind: Callable[[str], Any] = str

    def applies(self, method: str) -> bool:
        """Whether the setting applies to the page's design ``method`` (a field that does not is hidden, its
        value not read).

        Examples
        --------
        >>> fields = {f.setting: f for f in design_fields()}
        >>> fields["k"].applies("kanon"), fields["k"].applies("dp"), fields["split"].applies("rr")
        (True, False, True)
        """
        return self.methods is None or method in self.methods

    def condition(self) -> str | None:
        """The page's condition (JavaScript) under which the field is shown; ``None``: always.

        Examples
        --------
        >>> {f.setting: f for f in design_fields()}["k"].condition()
        '["kanon"].indexOf(input.method) >= 0'
        """
        if self.methods is None:
            return None
        return "[" + ",".join(f'"{m}"' for m in self.methods) + "].indexOf(input.method) >= 0"

    def text(self, value: Any) -> str:
        """A setting's value as this field shows it (a switch: ``"true"``/``"false"``; a list of columns:
        comma-separated; not given: empty).

        Examples
        --------
        >>> fields = {f.setting: f for f in design_fields()}
        >>> fields["keep"].text(0.8), fields["keep"].text(None), fields["strata"].text(["age", "sex"])
        ('0.8', '', 'age,sex')
        """
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)


def widget_of(s: Setting) -> str:
    """The field a setting gets in the form: its own (``widget=``), else a checkbox for a switch, a select for
    a choice (its rule's, or its family's), an upload for a path, a text field for the rest.

    Examples
    --------
    >>> from pramkit.release.spec import ReleaseSpec
    >>> spec = {s.name: s for s in settings(ReleaseSpec)}
    >>> [widget_of(spec[n]) for n in ("truthful", "split", "mechanism", "prior", "strata", "keep")]
    ['checkbox', 'select', 'select', 'file', 'columns', 'text']
    """
    if s.widget is not None:
        return s.widget
    if s.switch:
        return "checkbox"
    if _choices_of(s):
        return "select"
    return "file" if s.kind is Path else "text"


def _choices_of(s: Setting) -> tuple[str, ...]:
    """The values of a setting that is a choice (its rule's, or the rule of its family's option), the default
    first as ``""`` when the setting has none."""
    from pramkit.release.spec import family_rules

    rules = [s.rule] if s.option is None else list(family_rules(s).values())
    values = tuple(dict.fromkeys(v for r in rules if isinstance(r, Choice) for v in r.values))
    return ("", *values) if values and s.default is None else values


def design_fields() -> tuple[Field, ...]:
    """The design form's fields, one for each setting of :class:`pramkit.release.spec.ReleaseSpec` in the
    order declared, except the settings of the data step (``shared``), those the page's choice of a design
    sets (:func:`methods`) and those without a field (``widget="none"``): a new setting is a new field.

    A design family's setting applies to the page's designs of the families that take it (and whose settings
    meet what it ``needs``); a group's setting to the designs :data:`GROUP_METHODS` names.

    Examples
    --------
    >>> fields = {f.setting: f for f in design_fields()}
    >>> fields["epsilon"].label, fields["epsilon"].id, fields["household"].id, fields["k"].id
    ('Record budget (epsilon, nats; may be empty for the classic designs)', 'epsilon', 'design_household', 'design_k')
    >>> fields["split"].choices, fields["mechanism"].choices
    (('equal', 'optimal', 'joint'), ('', 'exponential', 'geometric', 'optimal'))
    >>> fields["distance_weights"].methods, fields["recognition"].methods, fields["missing"].methods
    (('dp-distance',), ('recognition',), None)
    >>> "method" in fields or "objective" in fields or "na_values" in fields
    False
    """
    from pramkit.release.spec import ReleaseSpec, methods_of

    offered = methods()
    preset = {name for _, flags in offered.values() for name in flags}
    own = {m for group in GROUP_METHODS.values() for m in group}
    out = []
    for s in settings(ReleaseSpec):
        if s.shared or s.name in preset or s.widget == "none":
            continue
        where: tuple[str, ...] | None = None
        if s.option is not None:  # a design of the page with a group of its own takes no family's setting
            where = tuple(m for m, (_, flags) in offered.items() if flags["method"] in methods_of(s)
                          and _meets(s.needs, flags, preset) and m not in own)
        elif s.group in GROUP_METHODS:
            where = GROUP_METHODS[s.group]
        elif s.needs is not None and s.needs[0] in preset:
            where = tuple(m for m, (_, flags) in offered.items() if _meets(s.needs, flags, preset))
        out.append(Field(
            s.name, s.name if s.name in FIELD_IDS else "design_" + s.name, widget_of(s), s.label,
            s.help.replace("%(default)s", str(s.default)).replace("%%", "%"), _choices_of(s),
            FIRST_VALUES.get(s.name, "" if s.default is None or s.switch else str(s.default)), where, s.more, s.kind))
    return tuple(out)


#: The risk step's fields and the design step's own (not made from a setting): id -> widget.
STEP_FIELDS = {"risk_keys": "columns", "sampling_fraction": "text", "risk_weights": "column",
               "risk_household": "column", "risk_contributions": "checkbox", "design_vars": "columns",
               "method": "select", "edit_rules": "text_area", "options": "text"}


def suppress_fields() -> tuple[Field, ...]:
    """The suppression step's fields, one for each setting of
    :class:`pramkit.release.suppress_spec.SuppressSpec` in the order declared (ids ``suppress_`` and the
    setting's name): a new setting is a new field.

    Examples
    --------
    >>> fields = {f.setting: f for f in suppress_fields()}
    >>> fields["keys"].id, fields["keys"].widget, fields["k"].value, fields["missing"].choices
    ('suppress_keys', 'columns', '3', ('own', 'any'))
    >>> fields["method"].widget, fields["importance"].widget, fields["time_limit"].more
    ('select', 'columns', False)
    """
    from pramkit.release.suppress_spec import SuppressSpec

    return tuple(Field(s.name, "suppress_" + s.name, widget_of(s), s.label,
                       s.help.replace("%(default)s", str(s.default)).replace("%%", "%"), _choices_of(s),
                       "" if s.default is None or isinstance(s.default, tuple) else str(s.default), None, s.more,
                       s.kind) for s in settings(SuppressSpec))


def suppress_spec(values: Mapping[str, Any]) -> Any:
    """The suppression step's settings from its fields (``{setting: what the field holds}``: a list of columns
    for a field of columns, else its text), each read as the command line reads its flag, checked.

    Raises
    ------
    ParameterError
        A field's text is not of its setting's type, or a setting its rule refuses (one line naming it).

    Examples
    --------
    >>> spec = suppress_spec({"keys": ["roof", "sex"], "k": "4", "missing": "any", "strata": []})
    >>> spec.keys, spec.k, spec.missing, spec.strata
    (('roof', 'sex'), 4, 'any', None)
    >>> suppress_spec({"keys": ["roof"], "k": "four"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k must be a whole number, got 'four'
    """
    from pramkit.release.suppress_spec import SuppressSpec

    known = {s.name: s for s in settings(SuppressSpec)}
    given = {name: parse_text(known[name], text if isinstance(text, str) else ",".join(text))
             for name, text in values.items() if name in known}
    spec = SuppressSpec(**{name: value for name, value in given.items() if value not in ((), None)})
    spec.check()
    return spec


def suppress_texts(spec: Any) -> dict[str, Any]:
    """The suppression step's fields (id -> value) as ``spec`` says (None: as the form starts).

    Examples
    --------
    >>> from pramkit.workbench.suppression import SuppressSpec
    >>> form = suppress_texts(SuppressSpec(keys=("a", "b"), k=2))
    >>> form["suppress_keys"], form["suppress_k"], form["suppress_strata"], form["suppress_missing"]
    (['a', 'b'], '2', [], 'own')
    """
    out: dict[str, Any] = {}
    for f in suppress_fields():
        value = None if spec is None else getattr(spec, f.setting)
        out[f.id] = list(value or ()) if f.widget == "columns" else (f.value if value is None else f.text(value))
    return out


def form_widgets() -> dict[str, str]:
    """The fields of the risk, suppression and design steps a tab keeps as filled in, by id, with their widget
    (:attr:`Field.widget`, or ``"text_area"``): every field of the three steps but the uploads (a file is
    uploaded again) and the buttons.

    Examples
    --------
    >>> widgets = form_widgets()
    >>> widgets["epsilon"], widgets["strata"], widgets["design_household"], widgets["edit_rules"]
    ('text', 'columns', 'column', 'text_area')
    >>> "forbid" in widgets or "manifest_upload" in widgets
    False
    """
    return {**STEP_FIELDS, **{f.id: f.widget for f in (*design_fields(), *suppress_fields()) if f.widget != "file"}}


def _meets(needs: tuple[str, Any] | None, flags: Mapping[str, Any], preset: set[str]) -> bool:
    """Whether a design of the page meets what a setting needs of the settings the designs set (a need of
    another setting is the spec's to check)."""
    if needs is None or needs[0] not in preset:
        return True
    from pramkit.release.spec import ReleaseSpec

    return bool(flags.get(needs[0], getattr(ReleaseSpec(), needs[0])) == needs[1])


def design_values(texts: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The settings of the design form's fields (``{setting: what the field holds}``) that apply to the page's
    design ``method``, each read as the command line reads its flag; a field left at its default is left out.

    Raises
    ------
    ParameterError
        A field's text is not of its setting's type (one line naming the setting).

    Examples
    --------
    >>> design_values({"k": "3", "keep": "0.8", "split": "equal", "strata": ["age"], "truthful": False}, "kanon")
    {'k': 3, 'strata': 'age'}
    >>> design_values({"k": "three"}, "kanon")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k must be a whole number, got 'three'
    """
    from pramkit.release.spec import ReleaseSpec

    known = {s.name: s for s in settings(ReleaseSpec)}
    out: dict[str, Any] = {}
    for f in design_fields():
        if f.setting not in texts or not f.applies(method):
            continue
        value = parse_text(known[f.setting], f.text(texts[f.setting]))
        if known[f.setting].given(value):
            out[f.setting] = value
    return out


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


#: How a line of the recoding field is written (the message of a line that is not).
RECODE_LINES = ("write each line COLUMN: old | old -> new (merge), COLUMN > NUMBER -> new (top code) or "
                "COLUMN < NUMBER -> new (bottom code)")


def recoding(text: str) -> dict[str, dict[str, Any]]:
    """The recoding field: one rule a line, as the map of :mod:`pramkit.recode`.

    Categories are separated by ``|`` (a category may hold a comma); ``->`` gives what they become.

    Examples
    --------
    >>> spec = recoding("marital_status: married, spouse present | married, spouse absent -> married\\n"
    ...                 "age > 80 -> 80+")
    >>> spec["marital_status"]["merge"], spec["age"]
    ({'married, spouse present': 'married', 'married, spouse absent': 'married'}, {'top': {'above': 80.0, 'value': '80+'}})
    >>> recoding("")
    {}
    >>> recoding("age 80+")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: line 1 of the recoding ('age 80+'): write each line COLUMN: old | old -> new (merge), COLUMN > NUMBER -> new (top code) or COLUMN < NUMBER -> new (bottom code)
    """
    spec: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        bad = ParameterError(f"line {number} of the recoding ({line!r}): {RECODE_LINES}")
        left, arrow, new = (t.strip() for t in line.rpartition("->"))
        if not arrow or not left or not new:
            raise bad
        code = re.fullmatch(r"(.+?)\s*([<>])\s*(\S+)", left)
        if ":" in left and not code:
            column, _, olds = (t.strip() for t in left.partition(":"))
            old = [t.strip() for t in olds.split("|") if t.strip()]
            if not column or not old:
                raise bad
            spec.setdefault(column, {}).setdefault("merge", {}).update(dict.fromkeys(old, new))
        elif code:
            column, sign, threshold = code.groups()
            value = number_in(threshold, f"the threshold on line {number} of the recoding")
            if sign == ">":
                spec.setdefault(column.strip(), {})["top"] = {"above": value, "value": new}
            else:
                spec.setdefault(column.strip(), {})["bottom"] = {"below": value, "value": new}
        else:
            raise bad
    return spec


#: How the page names the rules editor in a message.
RULES_FIELD = "the field Edit rules written here"


def rules(text: str, folder: Path) -> Path | None:
    """The edit rules written in the page, as a rules file read by the library's parser.

    The field holds a rules file's lines (:func:`pramkit.structure.read_rules`): a header of
    variables, then one forbidden combination a line; an empty cell means any value, ``a|b`` lists
    alternatives, a cell holding a comma is quoted.  Whether each column and value exists is checked
    by the design, against the file's categories.

    Parameters
    ----------
    text : str
        The field's content (blank: no rules).
    folder : Path
        The session's folder for the rules file (created when absent).

    Returns
    -------
    Path or None
        The rules file, None for an empty field.

    Raises
    ------
    ParameterError
        The lines are not a rules file; the message names the field, never the file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = rules("age,marital_status\\n0-9,widowed|divorced\\n", pathlib.Path(d) / "rules")
    ...     read_rules(path).rules[0].describe()
    'age=0-9 and marital_status=divorced|widowed'
    >>> rules("  ", pathlib.Path(".")) is None
    True
    >>> with tempfile.TemporaryDirectory() as d:
    ...     rules("age,sex\\n0-9,male,yes\\n", pathlib.Path(d))
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: line 2 of the field Edit rules written here has 3 fields; the header has 2
    """
    if not text.strip():
        return None
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = write_text_atomic(folder / "rules.csv", text.strip() + "\n", force=True, mode=0o600)
    try:
        read_rules(path)
    except PramkitError as exc:
        raise ParameterError(str(exc).replace(f"rules file {str(path)!r}", RULES_FIELD)
                             .replace(str(path), RULES_FIELD)) from None
    return path


def number_in(text: str, name: str) -> float:
    """A number written in a field (:func:`number`), finite."""
    n = number(text, name)
    if not math.isfinite(n):
        raise ParameterError(f"{name} must be a finite number, got {text.strip()!r}")
    return n


def upload(info: Mapping[str, Any], folder: Path) -> Path:
    """An uploaded file moved into ``folder`` under its own name (the name the library shows).

    The copy Shiny received is removed: one copy of an upload is left, in the session's folder.

    Parameters
    ----------
    info : mapping
        Shiny's description of the upload: ``name``, ``size`` and ``datapath``.
    folder : Path
        The session's folder for uploads (created when absent).

    Returns
    -------
    Path
        The copy.

    Raises
    ------
    ParameterError
        The file is empty (0 bytes).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     sent = pathlib.Path(d) / "0.csv"
    ...     _ = sent.write_text("a\\n1\\n")
    ...     copy = upload({"name": "../My survey.csv", "size": 4, "datapath": str(sent)}, pathlib.Path(d) / "up")
    ...     copy.name, copy.read_text(), sent.exists()
    ('My_survey.csv', 'a\\n1\\n', False)
    >>> upload({"name": "empty.csv", "size": 0, "datapath": "x"}, pathlib.Path("."))
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the uploaded file 'empty.csv' is empty (0 bytes)
    """
    if int(info["size"]) == 0:
        raise ParameterError(f"the uploaded file {info['name']!r} is empty (0 bytes)")
    name = re.sub(r"[^\w.\-]+", "_", Path(str(info["name"])).name).lstrip(".") or "upload"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return Path(shutil.move(info["datapath"], folder / name))
