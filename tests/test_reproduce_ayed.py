"""The Ayed, Battiston and Camerlenghi reproduction (Tables 1-4, Figures 1-6)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pramkit.design.dp.optimal import dp_optimal, is_dp_feasible
from pramkit.information import form8_objective
from pramkit.reproduce import ayed2020 as ay


def test_scenarios_are_distributions_and_seeded():
    sc = ay.scenarios()
    assert [p.size for p in sc.values()] == [10, 10, 30, 30]
    for p in sc.values():
        assert p.sum() == pytest.approx(1.0, abs=1e-3) and np.all(p >= 0)
    assert np.array_equal(sc["III"], ay.scenarios()["III"])


def test_arrangements_are_all_distinct_assignments():
    rows = ay.arrangements((2, 1, 0, 1), 4)
    assert len(rows) == math.factorial(4) // (2 * 1 * 1)
    assert len({tuple(r) for r in rows}) == len(rows)
    assert all(sorted(r) == [0, 0, 1, 3] for r in rows)


def test_value_counts_classifies_proposition_32_values():
    va, vma, vmin, vmax = ay.special_values(10, 1.0)
    q = np.array([vmax] + [vma] * 8 + [0.3])
    assert ay.value_counts(q, 1.0) == (0, 8, 0, 1, 1)


def test_paper_counts_are_feasible_and_never_beat_the_optimum():
    """Every table entry: the paper's values (best placement) are alpha-DP
    vertices and score at most the exact optimum."""
    rng = np.random.default_rng(0)
    for name, p in ay.scenarios().items():
        for alpha in ay.ALPHAS:
            mi, q = ay.best_assignment(p, alpha, ay.PAPER_COUNTS[name][alpha])
            assert is_dp_feasible(q, alpha)
            assert mi <= dp_optimal(p, alpha).provenance.objective + 1e-12
            # the best placement beats random placements of the same values
            for _ in range(5):
                assert form8_objective(p, rng.permutation(q)) <= mi + 1e-15


def test_quick_run_writes_tables_and_figures(tmp_path):
    res = ay.run(tmp_path, quick=True, quiet=True)
    files = res["files"]
    for key in ("figure1", "figure2", "figure3", "figure4", "figure5", "figure6"):
        with open(files[key], "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    rows = json.loads((tmp_path / "ayed2020_tables.json").read_text())
    assert len(rows) == 16
    assert all(r["ours_mi_nats"] >= r["paper_mi_nats"] - 1e-12 for r in rows)
    assert "| I | 0.5 |" in (tmp_path / "ayed2020_tables.md").read_text()
    # figure 6: I(X; Z) is symmetric in q around 1/2 for S = 2 (f(q) = f(1 - q), section 3.2.1)
    mi = res["sex_mutual_information_nats"]
    assert mi["0.4875"] == pytest.approx(mi["0.5125"], rel=1e-9)
    json.dumps(res)  # the CLI prints it
