"""The structure of real microdata that a release respects.

Four kinds of public knowledge shape a design (see ``docs/structure.md``):

* **edit rules** (structural zeros, :class:`Rules`, :func:`read_rules`): combinations
  that cannot exist, such as a married person under ten.  A rules file states
  what cannot exist, not what does, so it costs no privacy budget;
* **strata**: columns released unperturbed within which values move (a stratum's
  allowed values are those the rules leave it);
* **kept codes**: codes of a variable that never change and into which nothing moves
  (not-applicable codes, codes an agency must release as they are);
* **households**: variables perturbed once per household (see
  :class:`pramkit.manifest.PerturbedVariable`'s ``unit``).

:func:`cells_and_blocks` turns rules, strata and kept codes into what a design
needs: the cells a matrix covers (the allowed combinations) and the blocks that
never exchange values, for :meth:`pramkit.PramMatrix.block_diagonal`.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pramkit.codebook import canonical
from pramkit.defaults import RULE_BREAKING as RULE_BREAKING  # the treatments of rule breakers, public here
from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label

#: What to do with an original record that breaks a rule: stop with an error naming the
#: row, or keep the record as it is (released unperturbed, and counted in the result).
#: Separates the alternatives of one cell of a rules file (``0-4|5-9``).
ALTERNATIVES = "|"


@dataclass(frozen=True)
class Rule:
    """One forbidden combination: a record is forbidden when, for every column named,
    its value is one of the values listed (canonical texts, :func:`pramkit.codebook.canonical`).

    Parameters
    ----------
    values : mapping of str to frozenset of str
        Column -> the canonical texts of its forbidden values.  A column not named
        may hold any value.

    Examples
    --------
    A married child under ten: forbidden whatever the other columns hold.

    >>> rule = Rule({"age": frozenset({"0-4", "5-9"}), "marital_status": frozenset({"married"})})
    >>> rule.describe()
    'age=0-4|5-9 and marital_status=married'
    >>> Rules((rule,)).forbidden(("age", "marital_status"), [("5-9", "married"), ("5-9", "single")]).tolist()
    [True, False]
    """

    values: Mapping[str, frozenset[str]]

    def to_dict(self) -> dict[str, list[str]]:
        """The rule as JSON: column -> its forbidden values, sorted.

        Returns
        -------
        dict of str to list of str
            Read back by :meth:`Rules.of`.

        Examples
        --------
        >>> rule = Rule({"age": frozenset({"5-9", "0-4"}), "marital_status": frozenset({"married"})})
        >>> rule.to_dict()
        {'age': ['0-4', '5-9'], 'marital_status': ['married']}
        >>> Rules.of([rule.to_dict()]).rules[0] == rule
        True
        """
        return {c: sorted(v) for c, v in self.values.items()}

    def describe(self) -> str:
        """The rule in words: ``age=0-4|5-9 and marital_status=married``.

        Returns
        -------
        str
            Each column with its forbidden values (``|`` between alternatives), joined by ``and``.

        Examples
        --------
        >>> Rules.of([{"marital_status": "widowed|divorced", "age": "0-9"}]).rules[0].describe()
        'marital_status=divorced|widowed and age=0-9'
        """
        return " and ".join(f"{c}={ALTERNATIVES.join(sorted(v))}" for c, v in self.values.items())


@dataclass(frozen=True)
class Rules:
    """Edit rules: forbidden combinations of values (structural zeros).

    Parameters
    ----------
    rules : sequence of Rule
        The forbidden combinations.
    source : str
        Where they came from (a file's path), for messages and the manifest.

    Examples
    --------
    >>> r = Rules.of([{"age": "0-9", "marital_status": "married"}, {"age": "0-9", "employed": "yes"}])
    >>> r.columns
    ('age', 'marital_status', 'employed')
    >>> r.forbidden(("age", "marital_status"), [("0-9", "single"), ("0-9", "married"), ("30-39", "married")]).tolist()
    [False, True, False]
    """

    rules: tuple[Rule, ...]
    source: str = "rules"

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]], source: str = "rules") -> Rules:
        """Rules from mappings ``{column: value}``: a value is a label, a list of labels, or a
        text with alternatives separated by ``|``; ``None`` or an empty text means any value
        (the column is left out of the rule).

        Parameters
        ----------
        rows : iterable of mappings
            One mapping per forbidden combination.
        source : str
            Where the rules came from, for messages and the manifest.

        Returns
        -------
        Rules

        Raises
        ------
        ParameterError
            A column has no name, a rule lists no value (it would forbid every record),
            or there is no rule.

        Examples
        --------
        >>> r = Rules.of([{"age": "0-4|5-9", "marital_status": ["married", "widowed"], "sex": None}])
        >>> r.rules[0].to_dict()  # sex (None) is left out: any value
        {'age': ['0-4', '5-9'], 'marital_status': ['married', 'widowed']}
        >>> Rules.of([{"age": "", "sex": None}])
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: rule 1 of rules has no value: it would forbid every record
        """
        out = []
        for i, row in enumerate(rows, 1):
            values: dict[str, frozenset[str]] = {}
            for column, value in row.items():
                if not isinstance(column, str) or not column.strip():
                    raise ParameterError(f"rule {i} of {source} names a column without a name")
                items = alternatives(value)
                if items:
                    values[column.strip()] = items
            if not values:
                raise ParameterError(f"rule {i} of {source} has no value: it would forbid every record")
            out.append(Rule(values))
        if not out:
            raise ParameterError(f"{source} has no rules")
        return cls(tuple(out), source)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the rules name, in order of first appearance."""
        return tuple(dict.fromkeys(c for r in self.rules for c in r.values))

    def to_dict(self) -> dict[str, Any]:
        """The rules as JSON (public: they describe what cannot exist).

        Returns
        -------
        dict
            ``source`` (a file's name only: a public manifest does not say where the holder keeps
            its files, and a release made from a copy of the rules is the same release) and
            ``forbidden`` (each rule's :meth:`Rule.to_dict`).

        Examples
        --------
        >>> import json
        >>> r = Rules.of([{"age": "0-4|5-9", "marital_status": "married"}])
        >>> r.to_dict()
        {'source': 'rules', 'forbidden': [{'age': ['0-4', '5-9'], 'marital_status': ['married']}]}
        >>> Rules(r.rules, "/home/officer/survey/rules.csv").to_dict()["source"]
        'rules.csv'
        >>> Rules.of(json.loads(json.dumps(r.to_dict()))["forbidden"]) == r  # a JSON round trip
        True
        """
        return {"source": Path(self.source).name, "forbidden": [r.to_dict() for r in self.rules]}

    def check(self, categories: Mapping[str, Sequence[Label]]) -> None:
        """Every column a rule names is among ``categories`` and every value it lists is one of
        that column's categories; else a :class:`ParameterError` naming the rule.

        Parameters
        ----------
        categories : mapping
            Each perturbed variable's and each stratum's categories.

        Raises
        ------
        ParameterError
            A rule names a column not in ``categories``, or a value that is not one of its
            categories (a typo would otherwise forbid nothing).

        Examples
        --------
        >>> r = Rules.of([{"age": "0-9", "marital_status": "widowed"}])
        >>> r.check({"age": ["0-9", "10-19"], "marital_status": ["single", "married", "widowed"]})
        >>> r.check({"age": ["0-9", "10-19"], "marital_status": ["single", "married"]})
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: rule 1 of rules: 'widowed' is not a category of 'marital_status' (its categories: 'single', 'married')
        """
        for i, rule in enumerate(self.rules, 1):
            for column, values in rule.values.items():
                if column not in categories:
                    raise ParameterError(f"rule {i} of {self.source} names {column!r}, which is neither perturbed "
                                         f"nor a stratum (columns: {', '.join(categories)})")
                known = {canonical(c) for c in categories[column]}
                unknown = sorted(values - known)
                if unknown:
                    raise ParameterError(f"rule {i} of {self.source}: {unknown[0]!r} is not a category of "
                                         f"{column!r} (its categories: {_shown(categories[column])})")

    def within(self, columns: Sequence[str]) -> Rules | None:
        """The rules that name only ``columns`` (``None`` if there are none).

        Parameters
        ----------
        columns : sequence of str
            The columns a matrix covers.

        Returns
        -------
        Rules or None
            The rules a matrix over ``columns`` can honour, with the same ``source``.

        Examples
        --------
        >>> r = Rules.of([{"age": "0-9", "marital_status": "married"}, {"age": "0-9", "employed": "yes"}])
        >>> r.within(["age", "marital_status"]).to_dict()["forbidden"]
        [{'age': ['0-9'], 'marital_status': ['married']}]
        >>> r.within(["age"]) is None
        True
        """
        kept = tuple(r for _, r in self._applicable(columns))
        return Rules(kept, self.source) if kept else None

    def forbidden(self, columns: Sequence[str], cells: Sequence[tuple]) -> np.ndarray:
        """Which ``cells`` (tuples of values of ``columns``) a rule forbids; rules naming
        another column do not apply.

        Parameters
        ----------
        columns : sequence of str
            The columns of a cell, in order.
        cells : sequence of tuples
            The cells, one value per column.

        Returns
        -------
        numpy.ndarray of bool
            One flag per cell.

        Examples
        --------
        Over the whole cross-classification, the rule forbids exactly the cells it names:

        >>> r = Rules.of([{"age": "0-4|5-9", "marital_status": "married"}])
        >>> cells = list(itertools.product(["0-4", "5-9", "30-34"], ["single", "married"]))
        >>> [c for c, no in zip(cells, r.forbidden(("age", "marital_status"), cells)) if no]
        [('0-4', 'married'), ('5-9', 'married')]
        >>> r.forbidden(("age",), [("0-4",)]).tolist()  # the rule also names marital_status
        [False]
        """
        out = np.zeros(len(cells), dtype=bool)
        texts = [[canonical(v) for v in cell] for cell in cells]
        for _, rule in self._applicable(columns):
            at = [(columns.index(c), v) for c, v in rule.values.items()]
            out |= np.fromiter((all(t[i] in v for i, v in at) for t in texts), dtype=bool, count=len(cells))
        return out

    def first_breaking(self, frame: Any, columns: Sequence[str]) -> tuple[int, int] | None:
        """The first row of a DataFrame (position) that a rule forbids, and the rule's number
        (from 1); ``None`` if no row breaks a rule.  Rules naming another column do not apply.

        Parameters
        ----------
        frame : pandas.DataFrame
            The records (at least ``columns``).
        columns : sequence of str
            The columns the rules may name.

        Returns
        -------
        tuple of int or None
            ``(row position, rule number)``, for an error message that names both.

        Examples
        --------
        >>> import pandas as pd
        >>> r = Rules.of([{"age": "0-9", "employed": "yes"}, {"age": "0-9", "marital_status": "married"}])
        >>> frame = pd.DataFrame({"age": ["30-39", "0-9", "0-9"], "marital_status": ["married", "single", "married"]})
        >>> r.first_breaking(frame, ["age", "marital_status"])  # row 2 breaks rule 2
        (2, 2)
        >>> r.first_breaking(frame.head(2), ["age", "marital_status"]) is None
        True
        """
        firsts = [(int(np.argmax(hits)), i) for i, hits in self._hits(frame, columns) if hits.any()]
        return min(firsts) if firsts else None

    def breaking(self, frame: Any, columns: Sequence[str]) -> np.ndarray:
        """Which rows of a DataFrame a rule forbids (a boolean array).

        Values are compared as canonical texts, so ``5`` in the data matches ``"5"`` in a
        rules file; a missing value never matches.  Rules naming another column do not apply.

        Parameters
        ----------
        frame : pandas.DataFrame
            The records (at least ``columns``).
        columns : sequence of str
            The columns the rules may name.

        Returns
        -------
        numpy.ndarray of bool
            One flag per row.

        Examples
        --------
        >>> import pandas as pd
        >>> r = Rules.of([{"age": "0-4|5-9", "marital_status": "married"}])
        >>> frame = pd.DataFrame({"age": ["30-34", "0-4", "5-9", None],
        ...                       "marital_status": ["married", "single", "married", "married"]})
        >>> r.breaking(frame, ["age", "marital_status"]).tolist()
        [False, False, True, False]
        """
        out = np.zeros(len(frame), dtype=bool)
        for _, hits in self._hits(frame, columns):
            out |= hits
        return out

    def _applicable(self, columns: Sequence[str]) -> Iterator[tuple[int, Rule]]:
        """The rules (numbered from 1) that name only ``columns``."""
        return ((i, r) for i, r in enumerate(self.rules, 1) if set(r.values) <= set(columns))

    def _hits(self, frame: Any, columns: Sequence[str]) -> Iterator[tuple[int, np.ndarray]]:
        """Each applicable rule's number and the rows of ``frame`` it forbids."""
        for i, rule in self._applicable(columns):
            hit = np.ones(len(frame), dtype=bool)
            for c, values in rule.values.items():
                texts = {v: canonical(v) for v in frame[c].dropna().unique()}
                hit &= frame[c].map(lambda v, t=texts, vs=values: t.get(v) in vs).fillna(False).to_numpy(dtype=bool)
            yield i, hit


def alternatives(value: Any) -> frozenset[str]:
    """The canonical texts a rule's cell lists (empty: any value).

    Parameters
    ----------
    value : label, list of labels, str or None
        A text may list alternatives separated by ``|`` (:data:`ALTERNATIVES`); spaces
        around them are dropped.

    Returns
    -------
    frozenset of str
        Canonical texts (:func:`pramkit.codebook.canonical`); empty for ``None`` or an
        empty text.

    Examples
    --------
    >>> sorted(alternatives("0-4 | 5-9")), sorted(alternatives([1, "a"])), alternatives(None)
    (['0-4', '5-9'], ['1', 'a'], frozenset())
    """
    if value is None:
        return frozenset()
    items = list(value) if isinstance(value, (list, tuple, set, frozenset)) else \
        str(value).split(ALTERNATIVES) if isinstance(value, str) else [value]
    return frozenset(t for t in (canonical(x.strip() if isinstance(x, str) else x) for x in items) if t)


def _shown(labels: Sequence[Label], most: int = 8) -> str:
    """Categories listed for a message, each quoted: a category holding a comma stays one.

    Examples
    --------
    >>> _shown(["married, spouse present", "widowed", 3])
    "'married, spouse present', 'widowed', 3"
    """
    shown = ", ".join(repr(c) for c in list(labels)[:most])
    return shown + (", ..." if len(labels) > most else "")


def read_rules(path: str | Path) -> Rules:
    """Read a rules file: a CSV whose columns are variable names and whose rows are forbidden
    combinations; an empty cell means any value, ``a|b`` lists alternatives.

    Parameters
    ----------
    path : str or Path
        The CSV file (UTF-8, a byte-order mark allowed).

    Returns
    -------
    Rules
        With ``source`` the file's path.

    Raises
    ------
    DataError
        The file cannot be read or is not such a CSV.
    ParameterError
        A rule forbids every record (no value), or there is no rule.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "rules.csv")
    ...     _ = open(p, "w").write("age,marital_status\\n0-4|5-9,married\\n0-4|5-9,widowed\\n")
    ...     read_rules(p).rules[0].describe()
    'age=0-4|5-9 and marital_status=married'
    """
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise DataError(f"rules file {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read rules file {str(p)!r}: {exc}") from None
    rows = [r for r in rows if r and r != [""]]  # blank lines; a line of empty fields is a rule (refused below)
    if not rows:
        raise DataError(f"rules file {str(p)!r} is empty: give a header of variable names and one row per "
                        "forbidden combination")
    header = [h.strip() for h in rows[0]]
    if not all(header) or len(set(header)) != len(header):
        raise DataError(f"the header of rules file {str(p)!r} must name distinct variables, got {rows[0]}")
    records = []
    for line, r in enumerate(rows[1:], 2):
        if len(r) > len(header):
            raise DataError(f"line {line} of rules file {str(p)!r} has {len(r)} fields; the header has {len(header)}")
        records.append(dict(zip(header, r)))
    return Rules.of(records, source=str(p))


def as_rules(forbid: Rules | str | Path | Sequence[Mapping[str, Any]] | None) -> Rules | None:
    """Rules from a :class:`Rules`, a rules file's path or a list of mappings (:meth:`Rules.of`).

    Parameters
    ----------
    forbid : Rules, str, Path, sequence of mappings or None
        What a caller gave as ``forbid=``.

    Returns
    -------
    Rules or None
        ``None`` when no rules are given; a :class:`Rules` as it is.

    Raises
    ------
    DataError
        A rules file cannot be read (:func:`read_rules`).
    ParameterError
        A rule is malformed (:meth:`Rules.of`).

    Examples
    --------
    >>> as_rules(None) is None
    True
    >>> r = as_rules([{"age": "0-9", "marital_status": "married"}])
    >>> r.source, as_rules(r) is r
    ('the rules given', True)
    """
    if forbid is None or isinstance(forbid, Rules):
        return forbid
    if isinstance(forbid, (str, Path)):
        return read_rules(forbid)
    return Rules.of(forbid, source="the rules given")


def kept_codes(keep: Mapping[str, Any] | None, categories: Mapping[str, Sequence[Label]]) -> dict[str, frozenset[str]]:
    """Each variable's kept codes as canonical texts, checked against its categories.

    Parameters
    ----------
    keep : mapping, optional
        ``{variable: code or list of codes}`` (a text may list codes separated by ``|``).
    categories : mapping
        Each perturbed variable's categories.

    Returns
    -------
    dict of str to frozenset of str
        Variable -> its kept codes as canonical texts (empty without ``keep``).

    Raises
    ------
    ParameterError
        A variable is not perturbed, a code is not one of its categories, or no code is given.

    Examples
    --------
    >>> sorted(kept_codes({"age": "0-4|5-9"}, {"age": ["0-4", "5-9", "10-14"]})["age"])
    ['0-4', '5-9']

    A list's texts list alternatives too (what ``--keep-codes age=0-4|5-9,age=10-14`` gives), unless a
    text is a category itself:

    >>> sorted(kept_codes({"age": ["0-4|5-9", "10-14"]}, {"age": ["0-4", "5-9", "10-14", "15+"]})["age"])
    ['0-4', '10-14', '5-9']
    >>> sorted(kept_codes({"flag": ["a|b"]}, {"flag": ["a|b", "c"]})["flag"])
    ['a|b']
    """
    out: dict[str, frozenset[str]] = {}
    for name, codes in (keep or {}).items():
        if name not in categories:
            raise ParameterError(f"kept codes name {name!r}, which is not among the perturbed variables "
                                 f"({', '.join(categories)})")
        known = {canonical(c) for c in categories[name]}
        texts = listed_codes(codes, known)
        unknown = sorted(texts - known)
        if unknown:
            raise ParameterError(f"kept code {unknown[0]!r} is not a category of {name!r} "
                                 f"(its categories: {_shown(categories[name])})")
        if not texts:
            raise ParameterError(f"give at least one kept code for {name!r}")
        out[name] = texts
    return out


def listed_codes(codes: Any, known: Iterable[str | None] = ()) -> frozenset[str]:
    """The canonical texts of kept codes given as a label, a text or a list of them: a text lists
    alternatives separated by ``|`` (``0-4|5-9``, as ``--keep-codes`` gives it) unless it is one of
    ``known`` (a category whose label holds a ``|``).

    Parameters
    ----------
    codes : label, str or list of them
        What a caller gave for one variable.
    known : iterable of str, optional
        Canonical texts of the variable's categories (``None``, missing, matches no text).

    Returns
    -------
    frozenset of str

    Examples
    --------
    >>> sorted(listed_codes(["0-4|5-9", "10-14"])), sorted(listed_codes("a|b", {"a|b"}))
    (['0-4', '10-14', '5-9'], ['a|b'])
    """
    whole = set(known)
    items = list(codes) if isinstance(codes, (list, tuple, set, frozenset)) else [codes]
    return frozenset().union(*(alternatives(x) if isinstance(x, str) and canonical(x.strip()) not in whole
                               else alternatives([x]) for x in items))


def parse_assignments(text: str | None, flag: str, example: str) -> dict[str, list[str]] | None:
    """``a=1,b=x|y,a=2`` as ``{"a": ["1", "2"], "b": ["x|y"]}``: a command-line list of
    variable=value items (a variable may repeat), separated by commas, or by semicolons when
    a value holds a comma.

    Parameters
    ----------
    text : str or None
        The option's value.
    flag : str
        The option's name, for the message.
    example : str
        A well-formed value, for the message.

    Returns
    -------
    dict of str to list of str or None
        ``None`` when ``text`` is ``None``.

    Raises
    ------
    ParameterError
        An item is not ``variable=value``, or there is none.

    Examples
    --------
    >>> parse_assignments("age=0-4|5-9,sex=f", "--keep-codes", "age=0-4")
    {'age': ['0-4|5-9'], 'sex': ['f']}
    >>> parse_assignments("marital=married, spouse absent;age=0-4", "--keep-codes", "age=0-4")
    {'marital': ['married, spouse absent'], 'age': ['0-4']}
    """
    if text is None:
        return None
    out: dict[str, list[str]] = {}
    for part in (x.strip() for x in text.split(";" if ";" in text else ",") if x.strip()):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ParameterError(f"{flag} must look like {example}, got {text!r}")
        out.setdefault(name.strip(), []).append(value.strip())
    if not out:
        raise ParameterError(f"{flag} must look like {example}, got {text!r}")
    return out


@dataclass(frozen=True)
class Cells:
    """What one structured matrix covers (:func:`cells_and_blocks`).

    Parameters
    ----------
    columns : tuple of str
        The columns of a cell, strata first.
    cells : list of labels
        The allowed combinations (tuples, or plain labels for one column).
    index : numpy.ndarray
        Each cell's position in the full cross-classification (C order).
    blocks : list of numpy.ndarray
        The cells' positions grouped by block (a stratum, a kept code); one group
        when nothing separates them.

    Examples
    --------
    Two regions (strata) and an age with a kept code ``n/a``: four blocks that
    partition the cells, and the forbidden cell left out of ``index``:

    >>> r = Rules.of([{"region": "south", "age": "10-19"}])
    >>> c = cells_and_blocks(["region", "age"], [["north", "south"], ["0-9", "10-19", "n/a"]], strata=1,
    ...                      rules=r, keep={"age": frozenset({"n/a"})})
    >>> c.index.tolist(), [b.tolist() for b in c.blocks]
    ([0, 1, 2, 3, 5], [[0, 1], [2], [3], [4]])
    >>> sorted(np.concatenate(c.blocks).tolist()) == list(range(len(c.cells)))
    True
    """

    columns: tuple[str, ...]
    cells: list[Label]
    index: np.ndarray
    blocks: list[np.ndarray] = field(default_factory=list)


def cells_and_blocks(
    columns: Sequence[str],
    categories: Sequence[Sequence[Label]],
    *,
    strata: int = 0,
    rules: Rules | None = None,
    keep: Mapping[str, frozenset[str]] | None = None,
) -> Cells:
    """The allowed cells of a cross-classification and its blocks.

    Parameters
    ----------
    columns : sequence of str
        The columns, the ``strata`` stratum columns first.
    categories : sequence of sequences
        Each column's categories.
    strata : int
        How many of the first columns are strata (released unperturbed).
    rules : Rules, optional
        Forbidden combinations; those naming other columns do not apply.
    keep : mapping, optional
        Each column's kept codes (canonical texts, :func:`kept_codes`).

    Returns
    -------
    Cells
        A cell's block is its strata and, for each column with kept codes, its value if
        it is a kept code: cells of one block exchange values, other cells never do.

    Raises
    ------
    ParameterError
        If the rules forbid every combination, or every value of some stratum.

    Examples
    --------
    >>> r = Rules.of([{"age": "0-9", "marital_status": "married"}])
    >>> c = cells_and_blocks(["age", "marital_status"], [["0-9", "10-19"], ["single", "married"]], rules=r)
    >>> c.cells, len(c.blocks)
    ([('0-9', 'single'), ('10-19', 'single'), ('10-19', 'married')], 1)
    >>> c = cells_and_blocks(["region", "age"], [["north", "south"], ["0-9", "10-19", "n/a"]], strata=1,
    ...                      keep={"age": frozenset({"n/a"})})
    >>> [[c.cells[i] for i in b] for b in c.blocks][:2]
    [[('north', '0-9'), ('north', '10-19')], [('north', 'n/a')]]
    """
    columns = tuple(columns)
    full = list(itertools.product(*categories))
    allowed = np.ones(len(full), dtype=bool)
    if rules is not None:
        allowed &= ~rules.forbidden(columns, full)
    if not allowed.any():
        where = "" if rules is None else f" of {rules.source}"
        raise ParameterError(f"the rules{where} forbid every combination of {', '.join(columns)}")
    index = np.flatnonzero(allowed)
    kept = [(i, keep[c]) for i, c in enumerate(columns) if keep and c in keep and i >= strata]
    keys: dict[tuple, list[int]] = {}
    for pos, at in enumerate(index):
        cell = full[at]
        key = cell[:strata] + tuple(canonical(cell[i]) if canonical(cell[i]) in codes else None for i, codes in kept)
        keys.setdefault(key, []).append(pos)
    if strata:
        present = {k[:strata] for k in keys}
        for stratum in itertools.product(*categories[:strata]):
            if tuple(stratum) not in present:
                words = ", ".join(f"{c}={v}" for c, v in zip(columns, stratum))
                raise ParameterError(f"the rules of {rules.source if rules else 'the design'} forbid every value "
                                     f"of {', '.join(columns[strata:])} in the stratum {words}")
    cells: list[Label] = [full[i] if len(columns) > 1 else full[i][0] for i in index]
    return Cells(columns, cells, index, [np.asarray(v, dtype=np.intp) for v in keys.values()])
