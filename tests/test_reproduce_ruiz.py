"""`pramkit reproduce ruiz`: Table 1 of Ruiz and Domingo-Ferrer, checked against closed forms."""

from __future__ import annotations

import csv
import json
import math

from pramkit.cli import main
from pramkit.reproduce import ruiz

LOG12 = math.log2(12)

#: Table 1 as printed in the paper (section 4).
PAPER = {
    ("Differential privacy", "epsilon = 5"): 17, ("Differential privacy", "epsilon = 3"): 60,
    ("Differential privacy", "epsilon = 1"): 97, ("K-anonymity", "k = 2"): 28, ("K-anonymity", "k = 3"): 56,
    ("K-anonymity", "k = 6"): 72, ("Tridiagonal matrix", "alpha = 0.1"): 24,
    ("Tridiagonal matrix", "alpha = 0.3"): 35, ("Tridiagonal matrix", "alpha = 0.4"): 40,
    ("Circulant matrix", "p11 = 0.9"): 21, ("Circulant matrix", "p11 = 0.6"): 63,
    ("Circulant matrix", "p11 = 0.2"): 93,
}


def h(*probs: float) -> float:
    """Entropy of one row, bits."""
    return -sum(x * math.log2(x) for x in probs if x > 0)


def keep_row_beta(q: float) -> float:
    """Every row (q, (1-q)/11, ..., (1-q)/11): equations (2) and (6)."""
    return h(q, *[(1 - q) / 11] * 11) / LOG12


def tri_beta(a: float) -> float:
    """Equation (7) with one alpha: 2 end rows (1-a, a), 10 inner rows (a, 1-2a, a)."""
    return (2 * h(1 - a, a) + 10 * h(a, 1 - 2 * a, a)) / 12 / LOG12


def closed_form(family: str, value: float) -> float:
    if family == "Differential privacy":
        return keep_row_beta(math.exp(value) / (11 + math.exp(value)))
    if family == "K-anonymity":
        return math.log2(value) / LOG12
    if family == "Tridiagonal matrix":
        return tri_beta(value)
    return keep_row_beta(value)


def test_table_1_against_closed_forms_and_the_paper(tmp_path):
    out = ruiz.run(tmp_path, quick=True, quiet=True)
    csv_path, md_path = (tmp_path / "ruiz_table1.csv"), (tmp_path / "ruiz_table1.md")
    assert sorted(out["files"]) == sorted([str(csv_path), str(md_path)])
    rows = list(csv.DictReader(csv_path.open()))
    assert {(r["family"], r["parameter"]): int(r["published_pct"]) for r in rows} == PAPER
    differ = set()
    for r in rows:
        value = float(r["parameter"].split("=")[1])
        beta = closed_form(r["family"], value)
        assert float(r["beta_pct"]) == round(100 * beta, 2)
        assert abs(float(r["beta_super_pct"]) - float(r["beta_pct"])) <= 0.01
        if math.floor(100 * beta + 0.5) != PAPER[(r["family"], r["parameter"])]:
            differ.add((r["family"], r["parameter"]))
        assert (r["agrees"] == "True") == ((r["family"], r["parameter"]) not in differ)
    # The rows whose published figure does not follow from the stated parameter.
    assert differ == {("K-anonymity", "k = 3"), ("Tridiagonal matrix", "alpha = 0.3"),
                      ("Circulant matrix", "p11 = 0.9"), ("Circulant matrix", "p11 = 0.6"),
                      ("Circulant matrix", "p11 = 0.2")}
    by = {(r["family"], r["parameter"]): r for r in rows}
    # The parameters found do give the published figures.
    assert by[("K-anonymity", "k = 3")]["parameter_for_published"] == "k = 4"
    alpha = float(by[("Tridiagonal matrix", "alpha = 0.3")]["parameter_for_published"].split("=")[1])
    assert abs(100 * tri_beta(alpha) - 35) < 0.01
    for p11, pub in ((0.9, 21), (0.6, 63), (0.2, 93)):
        found = float(by[("Circulant matrix", f"p11 = {p11:g}")]["parameter_for_published"].split("=")[1])
        assert abs(100 * keep_row_beta(found) - pub) < 0.01
        # Off-diagonal (1 - p11)/12 reproduces the printed figure.
        over12 = h(p11, *[(1 - p11) / 12] * 11) / LOG12
        assert math.floor(100 * over12 + 0.5) == pub
        assert abs(ruiz.circulant_over_r_beta(p11) - over12) < 1e-12
    assert "**differs**" in md_path.read_text()


def test_cli_runs_the_reproduction(tmp_path, capsys):
    assert main(["reproduce", "ruiz", "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed["differ"]) == 5 and (tmp_path / "out" / "ruiz_table1.csv").exists()
