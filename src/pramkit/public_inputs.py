"""Public inputs of a design: a prior of frequencies and a codebook of categories.

Both describe the population, not the file, so using them costs no privacy
budget (docs/privacy.md):

* a **prior** (``--prior FILE``): frequencies from a public source (a previous
  census, published tables), a CSV with columns ``variable,category,frequency``.
  Per variable the frequencies are counts (some value above 1: normalised) or
  shares (every value at most 1: they must sum to 1, normalised with a note
  when within :data:`SHARE_TOL`); every frequency must be positive;
* a **codebook** (``--categories FILE``): the categories of each variable, a CSV
  with columns ``variable,category``, in the order the matrices use.

Category labels are text; they match the data's values through
:func:`pramkit.codebook.canonical` (the CSV field ``1`` is the integer 1).
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pramkit.errors import DataError, ParameterError
from pramkit.labels import Label

#: Shares that miss 1 by at most this much are normalised with a note.
SHARE_TOL = 1e-6


@dataclass(frozen=True)
class Prior:
    """Public frequencies of some variables.

    Parameters
    ----------
    name : str
        What the ledger calls it (the file's name).
    distributions : mapping
        ``variable -> (categories, probabilities summing to 1)``.
    notes : tuple of str
        What was normalised.

    Examples
    --------
    >>> prior = Prior("census-1990.csv", {"sex": (("male", "female"), np.array([0.48, 0.52]))})
    >>> prior.categories("sex"), prior.p("sex").tolist(), prior.notes
    (('male', 'female'), [0.48, 0.52], ())
    """

    name: str
    distributions: Mapping[str, tuple[tuple[Label, ...], np.ndarray]]
    notes: tuple[str, ...] = field(default=())

    def categories(self, variable: str) -> tuple[Label, ...]:
        """The categories of one variable, in the prior's order.

        Parameters
        ----------
        variable : str
            A variable of the prior.

        Returns
        -------
        tuple
            Its category labels (text, as read from the file).

        Raises
        ------
        KeyError
            The prior has no entry for ``variable`` (check first with
            :func:`require_variables`).

        Examples
        --------
        >>> Prior("p.csv", {"sex": (("male", "female"), np.array([0.5, 0.5]))}).categories("sex")
        ('male', 'female')
        """
        return self.distributions[variable][0]

    def p(self, variable: str) -> np.ndarray:
        """The probabilities of one variable's categories, in the order of :meth:`categories`.

        Parameters
        ----------
        variable : str
            A variable of the prior.

        Returns
        -------
        numpy.ndarray
            Positive probabilities that sum to 1.

        Raises
        ------
        KeyError
            The prior has no entry for ``variable``.

        Examples
        --------
        >>> float(Prior("p.csv", {"sex": (("male", "female"), np.array([0.48, 0.52]))}).p("sex").sum())
        1.0
        """
        return self.distributions[variable][1]


def _rows(path: str | Path, columns: Sequence[str], what: str) -> list[dict[str, str]]:
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in (reader.fieldnames or [])]
            absent = [c for c in columns if c not in header]
            if absent:
                raise DataError(f"{what} {str(p)!r} needs the columns {', '.join(columns)}; "
                                f"it has {', '.join(header) or 'none'}")
            rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]
    except FileNotFoundError:
        raise DataError(f"{what} {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read {what} {str(p)!r}: {exc}") from None
    if not rows:
        raise DataError(f"{what} {str(p)!r} has no rows")
    return rows


def _grouped(rows: list[dict[str, str]], path: str | Path, what: str) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for i, row in enumerate(rows, start=2):
        if not row["variable"] or not row["category"]:
            raise DataError(f"{what} {str(path)!r}, line {i}: variable and category must not be empty")
        out.setdefault(row["variable"], []).append({**row, "_line": str(i)})
    for var, group in out.items():
        dup = sorted(c for c, n in Counter(r["category"] for r in group).items() if n > 1)
        if dup:
            raise DataError(f"{what} {str(path)!r}: variable {var!r} lists category {dup[0]!r} twice")
    return out


def read_prior(path: str | Path) -> Prior:
    """Read a prior file (module docstring).

    Parameters
    ----------
    path : str or pathlib.Path
        A CSV file with columns ``variable,category,frequency``.

    Returns
    -------
    Prior
        Named after the file; each variable's frequencies normalised to
        probabilities, and a note for shares that missed 1 by at most
        :data:`SHARE_TOL`.

    Raises
    ------
    DataError
        The file is missing, unreadable or empty, lacks a column, lists a
        category twice, or has a frequency that is not a positive number, or
        shares that do not sum to 1.

    Examples
    --------
    Counts are normalised; shares within :data:`SHARE_TOL` of 1 too, with a note:

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "prior.csv")
    ...     with open(f, "w") as fh:
    ...         _ = fh.write("variable,category,frequency\\nsex,male,480\\nsex,female,520\\n"
    ...                      "age,0-17,0.2000001\\nage,18+,0.8\\n")
    ...     prior = read_prior(f)
    >>> prior.name, prior.p("sex").tolist(), np.round(prior.p("age"), 6).tolist()
    ('prior.csv', [0.48, 0.52], [0.2, 0.8])
    >>> prior.notes
    ("prior shares of 'age' summed to 1.0000001; normalised to 1",)
    """
    rows = _rows(path, ("variable", "category", "frequency"), "prior")
    dists: dict[str, tuple[tuple[Label, ...], np.ndarray]] = {}
    notes = []
    for var, group in _grouped(rows, path, "prior").items():
        values = []
        for r in group:
            try:
                x = float(r["frequency"])
            except ValueError:
                raise DataError(f"prior {str(path)!r}, line {r['_line']}: frequency {r['frequency']!r} "
                                "is not a number") from None
            if not math.isfinite(x) or x <= 0:
                raise DataError(f"prior {str(path)!r}, line {r['_line']}: frequency {r['frequency']!r} must be "
                                "positive and finite (a category a design may release needs a frequency above 0)")
            values.append(x)
        f = np.array(values)
        total = math.fsum(values)
        if f.max() <= 1.0:  # shares
            if abs(total - 1.0) > SHARE_TOL:
                raise DataError(f"prior {str(path)!r}: the shares of {var!r} sum to {total:.10g}, not 1 "
                                "(give counts, or shares that sum to 1)")
            if total != 1.0:
                notes.append(f"prior shares of {var!r} summed to {total!r}; normalised to 1")
        dists[var] = (tuple(r["category"] for r in group), f / total)
    return Prior(Path(path).name, dists, tuple(notes))


def read_codebook(path: str | Path) -> dict[str, tuple[Label, ...]]:
    """Read a codebook file: ``{variable: categories}`` in file order.

    Parameters
    ----------
    path : str or pathlib.Path
        A CSV file with columns ``variable,category``.

    Returns
    -------
    dict
        ``{variable: categories}``, variables and categories in file order
        (the order the matrices use), labels as text.

    Raises
    ------
    DataError
        The file is missing, unreadable or empty, lacks a column, has an
        empty field, or lists a category of a variable twice.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "codebook.csv")
    ...     with open(f, "w") as fh:
    ...         _ = fh.write("variable,category\\nsex,male\\nsex,female\\nregion,2\\nregion,1\\n")
    ...     read_codebook(f)
    {'sex': ('male', 'female'), 'region': ('2', '1')}
    """
    rows = _rows(path, ("variable", "category"), "codebook")
    return {var: tuple(r["category"] for r in group) for var, group in _grouped(rows, path, "codebook").items()}


def require_variables(declared: Mapping[str, object], variables: Sequence[str], what: str) -> None:
    """Every variable must be declared in a prior or codebook used for it.

    Parameters
    ----------
    declared : mapping
        The variables the prior or codebook lists (its keys).
    variables : sequence of str
        The variables it is used for.
    what : str
        ``"prior"`` or ``"codebook"``, for the message.

    Raises
    ------
    ParameterError
        Some of ``variables`` are not declared; the message lists them and
        what is declared.

    Examples
    --------
    >>> require_variables({"sex": ("male", "female")}, ["sex"], "codebook")  # declared: nothing happens
    >>> require_variables({"sex": ("male", "female")}, ["sex", "age"], "codebook")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the codebook has no entry for 'age'; it lists 'sex'
    """
    absent = [v for v in variables if v not in declared]
    if absent:
        raise ParameterError(f"the {what} has no entry for {', '.join(map(repr, absent))}; "
                             f"it lists {', '.join(map(repr, declared)) or 'nothing'}")
