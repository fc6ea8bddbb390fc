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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from pramkit.errors import DataError, ParameterError
from pramkit.matrix import Label

#: Shares that miss 1 by at most this much are normalised with a note.
SHARE_TOL = 1e-6


@dataclass(frozen=True)
class Prior:
    """Public frequencies of some variables.

    name: what the ledger calls it (the file's name)
    distributions: variable -> (categories, probabilities summing to 1)
    notes: what was normalised
    """

    name: str
    distributions: Mapping[str, tuple[tuple[Label, ...], np.ndarray]]
    notes: tuple[str, ...] = field(default=())

    def categories(self, variable: str) -> tuple[Label, ...]:
        return self.distributions[variable][0]

    def p(self, variable: str) -> np.ndarray:
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
        cats = [r["category"] for r in group]
        dup = sorted({c for c in cats if cats.count(c) > 1})
        if dup:
            raise DataError(f"{what} {str(path)!r}: variable {var!r} lists category {dup[0]!r} twice")
    return out


def read_prior(path: str | Path) -> Prior:
    """Read a prior file (module docstring).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "prior.csv")
    >>> _ = open(f, "w").write("variable,category,frequency\\nsex,male,480\\nsex,female,520\\n")
    >>> read_prior(f).p("sex").tolist()
    [0.48, 0.52]
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

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "codebook.csv")
    >>> _ = open(f, "w").write("variable,category\\nsex,male\\nsex,female\\n")
    >>> read_codebook(f)
    {'sex': ('male', 'female')}
    """
    rows = _rows(path, ("variable", "category"), "codebook")
    return {var: tuple(r["category"] for r in group) for var, group in _grouped(rows, path, "codebook").items()}


def require_variables(declared: Mapping[str, object], variables: Sequence[str], what: str) -> None:
    """Every variable must be declared in a prior or codebook used for it."""
    absent = [v for v in variables if v not in declared]
    if absent:
        raise ParameterError(f"the {what} has no entry for {', '.join(map(repr, absent))}; "
                             f"it lists {', '.join(map(repr, declared)) or 'nothing'}")
