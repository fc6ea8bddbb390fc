"""Table 1 of Ruiz and Domingo-Ferrer, *Bistochastic privacy*, recomputed.

Twelve 12 x 12 bistochastic matrices (section 4): epsilon-DP randomized
response, equation (2), for epsilon = 5, 3, 1; k-anonymity, equation (3),
for k = 2, 3, 6; tridiagonal, equation (7), for alpha = 0.1, 0.3, 0.4;
circulant, equation (6), for p11 = 0.9, 0.6, 0.2 with the rest of each row
equal.  For each: beta = H(P) / log2 12 (Definition 1, equation (4)) beside
the published percentage.  Where the rounded figure differs, the parameter
of the same family that gives the published figure is found (Brent's method
on the rising branch of beta, or the class size for k-anonymity), and for
the circulant rows the reading that reproduces all three published figures
is checked: off-diagonal entries ``(1 - p11) / 12`` instead of
``(1 - p11) / 11`` (rows then sum to less than 1).

The paper keeps the zeros of equations (3) and (7) as an infinitesimal gamma
("super doubly stochastic"); the column ``beta_super_pct`` evaluates formula
(4) with every zero replaced by gamma = 1e-9, unadjusted, to show it changes
nothing at the published precision.

Output: ``ruiz_table1.csv`` and ``ruiz_table1.md`` in the output folder.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pramkit.atomic import write_text_atomic
from pramkit.design.bistochastic.families import (
    circulant_keep,
    fit_family,
    k_anonymity,
    solve_monotone,
    tridiagonal,
    tridiagonal_peak,
)
from pramkit.design.classic import randomized_response
from pramkit.matrix import PramMatrix
from pramkit.privacy.bistochastic import bistochastic_privacy, entropy_rate

#: Number of categories of every matrix of Table 1.
R = 12

#: Table 1 as published: family -> (parameter name, [(parameter, beta in %), ...]).
PUBLISHED: dict[str, tuple[str, list[tuple[float, int]]]] = {
    "rr": ("epsilon", [(5, 17), (3, 60), (1, 97)]),
    "kanon": ("k", [(2, 28), (3, 56), (6, 72)]),
    "tridiagonal": ("alpha", [(0.1, 24), (0.3, 35), (0.4, 40)]),
    "circulant": ("p11", [(0.9, 21), (0.6, 63), (0.2, 93)]),
}

#: Row labels of Table 1.
LABELS = {"rr": "Differential privacy", "kanon": "K-anonymity",
          "tridiagonal": "Tridiagonal matrix", "circulant": "Circulant matrix"}

#: Stand-in for the paper's infinitesimal entries.
GAMMA = 1e-9

CATEGORIES = tuple(range(R))

BUILD: dict[str, Callable[[Any], PramMatrix]] = {
    "rr": lambda v: randomized_response(CATEGORIES, float(v)),
    "kanon": lambda v: k_anonymity(CATEGORIES, int(v)),
    "tridiagonal": lambda v: tridiagonal(CATEGORIES, float(v)),
    "circulant": lambda v: circulant_keep(CATEGORIES, float(v)),
}


def _pct(beta: float) -> int:
    """Percentage rounded half up, as printed in Table 1."""
    return math.floor(100.0 * beta + 0.5)


def _super_beta(m: PramMatrix) -> float:
    """Formula (4) with zeros replaced by GAMMA and the rest unadjusted."""
    return entropy_rate(np.where(m.matrix > 0, m.matrix, GAMMA), strict=False) / math.log2(R)


def circulant_over_r_beta(p11: float) -> float:
    """beta by formula (4) of the 'circulant' whose 11 off-diagonal entries are
    ``(1 - p11) / 12`` (the reading that reproduces Table 1's circulant row).

    Such rows sum to ``p11 + 11 (1 - p11) / 12 < 1``: not a transition
    matrix, but formula (4) evaluated on it gives the published figures.

    Parameters
    ----------
    p11 : float
        The diagonal entry.

    Returns
    -------
    float
        ``H / log2 12``, H by formula (4) without the bistochastic check.

    Examples
    --------
    Table 1 prints 21, 63 and 93 % for p11 = 0.9, 0.6 and 0.2; the
    bistochastic circulant (entries ``(1 - p11) / 11``) gives 22.73 % for 0.9:

    >>> [_pct(circulant_over_r_beta(p11)) for p11 in (0.9, 0.6, 0.2)]
    [21, 63, 93]
    >>> from pramkit.privacy.bistochastic import bistochastic_privacy
    >>> round(100 * bistochastic_privacy(circulant_keep(CATEGORIES, 0.9)).beta, 2)
    22.73
    """
    first = [p11] + [(1.0 - p11) / R] * (R - 1)
    idx = np.arange(R)
    m = np.asarray(first)[(idx[None, :] - idx[:, None]) % R]
    return entropy_rate(m, strict=False) / math.log2(R)


def _explain(family: str, value: float, published: int) -> tuple[str, str]:
    """(parameter giving the published figure, note) for a row that disagrees."""
    name = PUBLISHED[family][0]
    if family == "kanon":
        ks = [k for k in range(1, R + 1) if _pct(bistochastic_privacy(BUILD["kanon"](k)).beta) == published]
        classes = k_anonymity(CATEGORIES, ks[0]).provenance.parameters["classes"]
        assert isinstance(classes, list)  # k_anonymity records its classes as lists of labels
        sizes = sorted({len(c) for c in classes if isinstance(c, list)})
        return (f"k = {ks[0]}",
                f"{published}% is log2({sizes[0]})/log2(12): classes of {sizes[0]} categories "
                f"({R // sizes[0]} classes), not of {int(value)}")
    fit = fit_family(family, CATEGORIES, published / 100.0)
    found = f"{name} = {fit.parameter:.4f}"
    if family == "tridiagonal":
        peak, top = tridiagonal_peak(R)
        upper = solve_monotone(lambda a: bistochastic_privacy(tridiagonal(CATEGORIES, a)).beta,
                               peak, 0.5, published / 100.0, rising=False)
        return (found, f"beta is not monotone in alpha (maximum {100 * top:.1f}% at alpha = {peak:.4f}); "
                       f"{published}% is reached at alpha = {fit.parameter:.4f} or {upper:.4f}; "
                       f"alpha = 0.3 gives more entropy than 0.4")
    if family == "circulant":
        alt = circulant_over_r_beta(value)
        return (found, f"with off-diagonal entries (1 - p11)/12 instead of (1 - p11)/11 "
                       f"(rows summing to {value + (R - 1) * (1 - value) / R:.4f}) formula (4) gives "
                       f"{100 * alt:.2f}% -> {_pct(alt)}%")
    return found, ""


def table1() -> list[dict[str, Any]]:
    """The rows of Table 1, recomputed, beside the published figures.

    Returns
    -------
    list of dict
        One row per matrix (12): family, parameter, H(P) in bits, beta in %
        (Definition 1, equation (4)), beta with the zeros read as
        :data:`GAMMA`, the published %, whether the rounded figures agree,
        epsilon, and for a row that differs the parameter giving the
        published figure and why.

    Examples
    --------
    Randomized response (equation (2)) agrees with every published figure;
    five rows do not follow from their stated parameters:

    >>> rows = table1()
    >>> [(r["parameter"], r["beta_pct"], r["published_pct"]) for r in rows[:3]]
    [('epsilon = 5', 16.76, 17), ('epsilon = 3', 60.3, 60), ('epsilon = 1', 97.41, 97)]
    >>> [(r["family"], r["parameter"]) for r in rows if not r["agrees"]]   # doctest: +NORMALIZE_WHITESPACE
    [('K-anonymity', 'k = 3'), ('Tridiagonal matrix', 'alpha = 0.3'), ('Circulant matrix', 'p11 = 0.9'),
     ('Circulant matrix', 'p11 = 0.6'), ('Circulant matrix', 'p11 = 0.2')]
    """
    rows = []
    for family, (name, entries) in PUBLISHED.items():
        for value, published in entries:
            m = BUILD[family](value)
            priv = bistochastic_privacy(m)
            agrees = _pct(priv.beta) == published
            param, note = ("", "") if agrees else _explain(family, value, published)
            rows.append({
                "family": LABELS[family],
                "parameter": f"{name} = {value:g}",
                "entropy_rate_bits": round(priv.entropy_rate_bits, 4),
                "beta_pct": round(100 * priv.beta, 2),
                "beta_super_pct": round(100 * _super_beta(m), 2),
                "published_pct": published,
                "agrees": agrees,
                "epsilon": round(priv.epsilon, 4) if math.isfinite(priv.epsilon) else "inf",
                "parameter_for_published": param,
                "note": note,
            })
    return rows


def _csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _markdown(rows: list[dict[str, Any]]) -> str:
    head = ["Parametrisation", "Parameter", "H(P) (bits)", "beta (%)", "published (%)",
            "epsilon (natural log)", "parameter giving the published figure", "note"]
    lines = [
        "# Ruiz and Domingo-Ferrer, Table 1, recomputed",
        "",
        f"12 x 12 matrices; beta = H(P) / log2 12, log2 12 = {math.log2(R):.4f} bits.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        mark = "" if r["agrees"] else " **differs**"
        lines.append("| " + " | ".join(str(x) for x in [
            r["family"], r["parameter"], r["entropy_rate_bits"], f"{r['beta_pct']:.2f}{mark}",
            r["published_pct"], r["epsilon"], r["parameter_for_published"], r["note"],
        ]) + " |")
    return "\n".join(lines) + "\n"


def run(out: Path, *, quick: bool, quiet: bool) -> dict:
    """Write ruiz_table1.csv and ruiz_table1.md; return paths and key numbers.

    ``quick`` and ``quiet`` change nothing: there is no Monte Carlo and no progress.

    Parameters
    ----------
    out : pathlib.Path
        The output folder (files are overwritten).
    quick, quiet : bool
        Unused.

    Returns
    -------
    dict
        ``files`` (the CSV and Markdown tables), beta in % and the published
        % of each row, and a line for each row that differs.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = run(Path(out), quick=True, quiet=True)
    ...     print([Path(f).name for f in result["files"]], all(Path(f).stat().st_size > 0 for f in result["files"]))
    ['ruiz_table1.csv', 'ruiz_table1.md'] True
    >>> result["differ"][0]
    'K-anonymity k = 3: 44.21% vs 56%; k = 4 gives it'
    """
    rows = table1()
    csv_path = write_text_atomic(Path(out) / "ruiz_table1.csv", _csv(rows), force=True)
    md_path = write_text_atomic(Path(out) / "ruiz_table1.md", _markdown(rows), force=True)
    return {
        "files": [str(csv_path), str(md_path)],
        "beta_pct": {f"{r['family']} {r['parameter']}": r["beta_pct"] for r in rows},
        "published_pct": {f"{r['family']} {r['parameter']}": r["published_pct"] for r in rows},
        "differ": [f"{r['family']} {r['parameter']}: {r['beta_pct']:.2f}% vs {r['published_pct']}%"
                   + (f"; {r['parameter_for_published']} gives it" if r["parameter_for_published"] else "")
                   for r in rows if not r["agrees"]],
    }
