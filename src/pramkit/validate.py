"""One rule per parameter: the checks of the numbers a user gives pramkit.

Every design, measure and command checks its parameters here, so that one
parameter has one rule and one wording of its error, a
:class:`pramkit.errors.ParameterError` (a ``ValueError`` too) whose message
names the parameter and says what to change:

* :func:`positive`: a finite number above 0 (budgets, scales);
* :func:`epsilon`: a privacy budget in nats (positive, finite, at most a given maximum);
* :func:`probabilities`: a probability vector (finite, non-negative, summing to 1);
* :func:`probability`: a probability strictly between 0 and 1 (alpha of condition C1);
* :func:`release_label`: the public label of a release (``apply --release``);
* :func:`csv_separator` and :func:`text_encoding`: how a CSV file is written (``--sep``, ``--encoding``);
* the option rules of the design families (:data:`pramkit.design.registry.FAMILIES`):
  :class:`Number` (a type, a range, a default), :class:`Choice`, :class:`Flag` and
  :class:`Instance`, each with ``check`` and ``describe``, applied together by
  :func:`check_options` (unknown options: one error naming the options).  Values are numbers,
  not strings of numbers: a command line converts its flags first.

Missing columns are :func:`pramkit.io.require_columns` (a data error, not a parameter's).

Examples
--------
>>> epsilon(0.5), positive(3, "rows")
(0.5, 3.0)
>>> epsilon(float("nan"))
Traceback (most recent call last):
...
pramkit.errors.ParameterError: epsilon must be a positive finite number, got nan
>>> probabilities([0.25, 0.75]).tolist()
[0.25, 0.75]
"""

from __future__ import annotations

import codecs
import math
import numbers
import unicodedata
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ParameterError

#: How far the sum of a probability vector may miss 1.
PROBABILITY_SUM_TOL = 1e-9


def positive(value: Any, name: str) -> float:
    """``value`` as a float after checking that it is a finite number above 0 (not a bool).

    >>> positive(2, "k")
    2.0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def epsilon(value: Any, name: str = "epsilon", *, maximum: float | None = None) -> float:
    """A privacy budget in nats: :func:`positive`, and at most ``maximum`` when given.

    >>> epsilon(1, maximum=700.0)
    1.0
    """
    e = positive(value, name)
    if maximum is not None and e > maximum:
        raise ParameterError(f"{name} = {e:g} is too large (at most {maximum:g}); beyond a few dozen nats it "
                             "protects nothing (a PRAM matrix is then the identity, a noisy count the count)")
    return e


def probabilities(p: ArrayLike, *, name: str = "p") -> np.ndarray:
    """``p`` as a float array after checking that it is a probability vector
    (1-D, non-empty, finite, non-negative, summing to 1 within :data:`PROBABILITY_SUM_TOL`).

    >>> probabilities([1, 0]).tolist()
    [1.0, 0.0]
    """
    try:
        pv = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a list of numbers, got {p!r}") from None
    if pv.ndim != 1 or pv.size == 0:
        raise ParameterError(f"{name} must be a non-empty 1-D list of probabilities, got shape {pv.shape}")
    if not np.all(np.isfinite(pv)):
        raise ParameterError(f"{name} contains {pv[~np.isfinite(pv)][0]!r}; probabilities must be finite")
    if np.any(pv < 0):
        raise ParameterError(f"{name} contains a negative probability ({pv[pv < 0][0]!r})")
    total = float(pv.sum())
    if abs(total - 1.0) > PROBABILITY_SUM_TOL:
        raise ParameterError(f"{name} sums to {total!r}, not 1; pass probabilities (or normalise counts first)")
    return pv


def probability(value: Any, name: str) -> float:
    """A probability strictly between 0 and 1 (the posterior bound alpha of condition C1).

    >>> probability(0.1, "alpha")
    0.1
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not (math.isfinite(value) and 0 < float(value) < 1):
        raise ParameterError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return float(value)


#: The longest release label, in characters.
MAX_RELEASE_LABEL = 200
#: Unicode categories a release label may not hold: controls, format characters (invisible, or
#: reordering the text), surrogates, private use, unassigned, line and paragraph separators.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def release_label(value: Any, name: str = "the release label") -> str:
    """The public label of a release (``apply --release``), in Unicode NFC; ``""`` is no label.

    A label tells two releases made with one key apart (a panel's waves, a corrected
    re-release): it is written in the receipt, so it must read as it is typed: at most
    :data:`MAX_RELEASE_LABEL` characters, no control or invisible characters, no blanks
    at either end.  Composed and decomposed accents are one label (NFC).

    >>> release_label("wave 2"), release_label("") == "", release_label("e\u0301te") == "\u00e9te"
    ('wave 2', True, True)
    >>> release_label(" wave 2")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the release label ' wave 2' begins or ends with a blank; give it without
    """
    if not isinstance(value, str):
        raise ParameterError(f"{name} must be text, not {type(value).__name__}")
    text = unicodedata.normalize("NFC", value)
    bad = next((c for c in text if unicodedata.category(c) in _UNPRINTABLE), None)
    if bad is not None:
        raise ParameterError(f"{name} {value!r} has a control or invisible character (U+{ord(bad):04X}); use "
                             "letters, digits, blanks and punctuation")
    if text != text.strip():
        raise ParameterError(f"{name} {value!r} begins or ends with a blank; give it without")
    if len(text) > MAX_RELEASE_LABEL:
        raise ParameterError(f"{name} has {len(text)} characters; at most {MAX_RELEASE_LABEL}")
    return text


#: The engines that run the passes over records: this machine, or Spark (:mod:`pramkit.engine.spark`).
ENGINES = ("local", "spark")
#: The Spark master URL used when none is given.
SPARK_MASTER = "local[2]"


def engine_name(value: Any, name: str = "engine") -> str:
    """An engine's name, one of :data:`ENGINES` (``name``: what the option is called, for the message).

    >>> engine_name("spark")
    'spark'
    >>> engine_name("dask")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: engine must be one of 'local', 'spark', got 'dask'
    >>> engine_name("dask", "backend")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: backend must be one of 'local', 'spark', got 'dask'
    """
    return str(Choice(ENGINES).check(value, name))


#: Names a CSV separator may be given by besides its character (a tab is hard to type on a command line).
SEP_NAMES = {"tab": "\t", "\\t": "\t", "semicolon": ";", "comma": ",", "pipe": "|", "space": " "}


def csv_separator(value: Any) -> str:
    """The field separator of a CSV file (``--sep``): one character, not a quote or a line break, or
    one of the names of :data:`SEP_NAMES` (``tab``, ``\\t``, ``semicolon``, ...).

    >>> csv_separator(";"), csv_separator("tab"), csv_separator("\\t")
    (';', '\\t', '\\t')
    >>> csv_separator(";;")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the separator (--sep) must be one character, such as ';' or tab, not ';;'
    """
    text = value if isinstance(value, str) else None
    char = SEP_NAMES.get(text.lower(), text) if text is not None and len(text) != 1 else text
    if char is None or len(char) != 1:
        raise ParameterError(f"the separator (--sep) must be one character, such as ';' or tab, not {value!r}")
    if char in ('"', "\n", "\r"):
        raise ParameterError(f"the separator (--sep) cannot be {char!r}, a quote or a line break: give the "
                             "character between the fields, such as ';' or tab")
    return char


def text_encoding(value: Any) -> str:
    """The character encoding of a CSV file (``--encoding``), as Python's codecs name it.

    >>> text_encoding("Latin-1"), text_encoding("UTF8"), text_encoding("cp1252")
    ('iso8859-1', 'utf-8', 'cp1252')
    >>> text_encoding("base64")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: unknown encoding 'base64' (--encoding): give a text encoding Python knows, such as utf-8, latin-1 or cp1252
    """
    try:
        info = codecs.lookup(str(value))
    except (LookupError, TypeError, ValueError):
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise ParameterError(f"unknown encoding {value!r} (--encoding): give a text encoding Python knows, such as "
                             "utf-8, latin-1 or cp1252")
    return str(info.name)


#: The decimal marks a CSV file's numbers may be written with (``--decimal``).
DECIMAL_MARKS = (".", ",")


def decimal_mark(value: Any, sep: Any = None) -> str:
    """The decimal mark of a CSV file's numbers (``--decimal``): ``"."`` or ``","``; with the separator ``sep``
    given, a decimal comma is refused in a comma-separated file (``12,5`` would be two fields).

    >>> decimal_mark("."), decimal_mark(",", ";")
    ('.', ',')
    >>> decimal_mark(";")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the decimal mark (--decimal) must be '.' or ',', not ';'
    >>> decimal_mark(",", ",")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --decimal , needs another field separator than ',' (a number such as 12,5 would be two fields): give the file's separator with --sep, such as ';'
    """
    if not isinstance(value, str) or value not in DECIMAL_MARKS:
        raise ParameterError(f"the decimal mark (--decimal) must be '.' or ',', not {value!r}")
    if value == "," and sep is not None and csv_separator(sep) == ",":
        raise ParameterError("--decimal , needs another field separator than ',' (a number such as 12,5 would be "
                             "two fields): give the file's separator with --sep, such as ';'")
    return value


# -- option rules ---------------------------------------------------------------------------------
# One rule per option of a design family (:data:`pramkit.design.registry.FAMILIES`): its type, its
# range or choices and its default, introspectable (``rule.describe()``) and checked by
# :func:`check_options`.  Values are numbers, not strings: a command line converts its flags first.


class Rule:
    """One option's rule: :meth:`check` a value, :meth:`describe` what is expected.

    Attributes
    ----------
    default : object
        The value of the option when it is absent (or ``None``).
    required : bool
        The option must be given.

    Examples
    --------
    >>> Number(float, low=0, high=1, default=0.8).describe()
    'a number in [0, 1] (default 0.8)'
    """

    default: Any = None
    required: bool = False

    def check(self, value: Any, name: str) -> Any:
        """``value`` checked (and converted to its plain Python type), or a :class:`ParameterError`
        naming ``name`` and what is expected."""
        raise NotImplementedError  # pragma: no cover - every rule defines it

    def expects(self) -> str:
        """What a value must be, in words (without the default)."""
        raise NotImplementedError  # pragma: no cover - every rule defines it

    def invalid(self) -> Any:
        """A value of the right type that the rule refuses (``None``: there is none), for the tests.

        >>> Number(int, low=1).invalid(), Choice(("a", "b")).invalid(), Flag().invalid()
        (0, 'bogus', None)
        """
        return None

    def describe(self) -> str:
        """What a value must be, and the default or ``required``.

        >>> Choice(("uniform", "fixed")).describe()
        "one of 'uniform', 'fixed' (default 'uniform')"
        """
        if self.required:
            return f"{self.expects()} (required)"
        return self.expects() if self.default is None else f"{self.expects()} (default {self.default!r})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()!r})"


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


class Number(Rule):
    """A finite number (``kind=int``: a whole number) within bounds.

    Parameters
    ----------
    kind : {float, int}
        The type of the value (an integral float such as ``3.0`` is accepted as an int).
    low, high : float, optional
        Bounds, inclusive unless ``low_open`` / ``high_open``.
    default : number, optional
        The value when absent.
    required : bool
        The option must be given.

    Examples
    --------
    >>> Number(int, low=1).check(3, "k"), Number(float, low=0, low_open=True).check(2, "rate")
    (3, 2.0)
    >>> Number(int, low=1).check("3", "k")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k must be a whole number >= 1, got the str '3'
    >>> Number(float, low=0, high=1).check(1.5, "keep")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: keep must be a number in [0, 1], got 1.5
    """

    def __init__(self, kind: type = float, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, default: Any = None,
                 required: bool = False) -> None:
        self.kind, self.low, self.high = kind, low, high
        self.low_open, self.high_open = low_open, high_open
        self.default, self.required = default, required

    def expects(self) -> str:
        what = "a whole number" if self.kind is int else "a number"
        if self.low is not None and self.high is not None:
            return f"{what} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{what} {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{what} {'<' if self.high_open else '<='} {self.high:g}"
        return what

    def invalid(self) -> Any:
        if self.low is not None:
            bad = self.low if self.low_open else self.low - 1
        elif self.high is not None:
            bad = self.high if self.high_open else self.high + 1
        else:
            return float("inf") if self.kind is not int else None
        return int(bad) if self.kind is int else float(bad)

    def _within(self, x: float) -> bool:
        above = self.low is None or (x > self.low if self.low_open else x >= self.low)
        below = self.high is None or (x < self.high if self.high_open else x <= self.high)
        return above and below

    def check(self, value: Any, name: str) -> Any:
        if not _is_number(value):
            raise ParameterError(f"{name} must be {self.expects()}, got the {type(value).__name__} {value!r}")
        x = float(value)
        whole = self.kind is not int or (math.isfinite(x) and x == math.floor(x))
        if not (math.isfinite(x) and whole and self._within(x)):
            raise ParameterError(f"{name} must be {self.expects()}, got {value!r}")
        return int(x) if self.kind is int else x


class Choice(Rule):
    """One of a few strings; the default is the first unless given.

    Examples
    --------
    >>> Choice(("information", "variance")).check("variance", "objective")
    'variance'
    >>> Choice(("information", "variance")).check("entropy", "objective")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: objective must be one of 'information', 'variance', got 'entropy'
    """

    def __init__(self, values: tuple[str, ...], *, default: str | None = None) -> None:
        self.values = tuple(values)
        self.default = self.values[0] if default is None else default

    def expects(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def invalid(self) -> Any:
        return "bogus"

    def check(self, value: Any, name: str) -> Any:
        if not isinstance(value, str) or value not in self.values:
            raise ParameterError(f"{name} must be {self.expects()}, got {value!r}")
        return value


class Flag(Rule):
    """``True`` or ``False`` (default ``False``).

    Examples
    --------
    >>> Flag().check(True, "truthful")
    True
    >>> Flag().check("yes", "truthful")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: truthful must be True or False, got 'yes'
    """

    default = False

    def expects(self) -> str:
        return "True or False"

    def check(self, value: Any, name: str) -> Any:
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterError(f"{name} must be {self.expects()}, got {value!r}")
        return bool(value)


class Instance(Rule):
    """A value of one of some types (e.g. a path or a table of distances), checked further by its user.

    Parameters
    ----------
    types : tuple of type
        The accepted types.
    text : str
        What the value is, in words.

    Examples
    --------
    >>> Instance((str,), "'ordinal' or a CSV path").check(3, "distances")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: distances must be 'ordinal' or a CSV path, got 3
    """

    def __init__(self, types: tuple[type, ...], text: str) -> None:
        self.types, self.text = types, text

    def expects(self) -> str:
        return self.text

    def check(self, value: Any, name: str) -> Any:
        if not isinstance(value, self.types):
            raise ParameterError(f"{name} must be {self.expects()}, got {value!r}")
        return value


class Checked(Rule):
    """A value checked by a function of this module or of the module that reads it (its message as it is).

    Parameters
    ----------
    check : callable
        ``check(value, name)``: raises a :class:`ParameterError`, else the value is accepted.
    text : str
        What the value must be, in words.
    bad : object, optional
        A value of the right type that ``check`` refuses (:meth:`Rule.invalid`).

    Examples
    --------
    >>> rule = Checked(positive, "a positive finite number", -1.0)
    >>> rule.check(2, "epsilon (the record budget)")
    2
    >>> rule.check(rule.invalid(), "epsilon (the record budget)")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: epsilon (the record budget) must be a positive finite number, got -1.0
    """

    def __init__(self, check: Any, text: str, bad: Any = None) -> None:
        self.function, self.text, self.bad = check, text, bad

    def expects(self) -> str:
        return self.text

    def invalid(self) -> Any:
        return self.bad

    def check(self, value: Any, name: str) -> Any:
        self.function(value, name)
        return value


#: A positive finite number (:func:`positive`).
POSITIVE = Checked(positive, "a positive finite number", -1.0)
#: A number strictly between 0 and 1 (:func:`probability`).
OPEN_PROBABILITY = Checked(probability, "a number strictly between 0 and 1", 1.5)
#: A CSV file's field separator (:func:`csv_separator`).
SEPARATOR = Checked(lambda value, name: csv_separator(value), "one character, or tab, semicolon, ...", ";;")
#: The decimal mark of a CSV file's numbers (:func:`decimal_mark`).
DECIMAL = Checked(lambda value, name: decimal_mark(value), "'.' or ','", ";")
#: A text encoding Python knows (:func:`text_encoding`).
ENCODING = Checked(lambda value, name: text_encoding(value), "an encoding such as utf-8, latin-1 or cp1252",
                   "base64")


def check_options(owner: str, rules: Mapping[str, Rule], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked against ``rules``: every option present, absent ones (or ``None``) at their default.

    Parameters
    ----------
    owner : str
        Who takes the options, for the messages (``"method 'rr'"``).
    rules : mapping of str to Rule
        One rule per option, in the order the messages list them.
    options : mapping of str to value
        The options given.

    Returns
    -------
    dict
        Every option of ``rules``, checked, defaults filled in.

    Raises
    ------
    ParameterError
        For an unknown option (one message naming the options), a missing required one, or a
        value its rule refuses.

    Examples
    --------
    >>> rules = {"keep": Number(low=0, high=1, required=True), "bandwidth": Number(int, low=1)}
    >>> check_options("method 'keep'", rules, {"keep": 0.8})
    {'keep': 0.8, 'bandwidth': None}
    >>> check_options("method 'keep'", rules, {"keep": 0.8, "width": 2})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: method 'keep' does not take width; its options are keep, bandwidth
    >>> check_options("method 'keep'", rules, {})
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: method 'keep' needs keep (a number in [0, 1])
    """
    unknown = sorted(set(options) - set(rules))
    if unknown:
        raise ParameterError(f"{owner} does not take {', '.join(unknown)}; its options are {', '.join(rules)}")
    out: dict[str, Any] = {}
    for name, rule in rules.items():
        value = options.get(name)
        if value is None:
            if rule.required:
                raise ParameterError(f"{owner} needs {name} ({rule.expects()})")
            out[name] = rule.default
        else:
            out[name] = rule.check(value, name)
    return out


def check_fraction(sampling_fraction: float) -> float:
    """A given sampling fraction as a float in (0, 1], else :class:`PramkitError`.

    Parameters
    ----------
    sampling_fraction : float
        ``pi``, the share of the population in the file (1: a census).

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        ``pi`` is not a finite number in (0, 1].

    Examples
    --------
    >>> check_fraction(0.05), check_fraction(1)
    (0.05, 1.0)
    >>> check_fraction(0)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the sampling fraction must lie in (0, 1], got 0
    """
    pi = float(sampling_fraction)
    if not (math.isfinite(pi) and 0 < pi <= 1):
        raise ParameterError(f"the sampling fraction must lie in (0, 1], got {sampling_fraction!r}")
    return pi
