"""`pramkit reproduce cator`: the 48-cell example of section 4, checked by brute force."""

from __future__ import annotations

import itertools
import json

import numpy as np

from pramkit.cli import main
from pramkit.reproduce import cator


def test_example_file_has_the_papers_structure():
    counts = cator.example_counts()
    assert counts.shape == (2, 2, 2, 2, 3) and counts.sum() == 2500
    u0 = counts.reshape(-1)
    assert int(((u0 > 0) & (u0 < 10)).sum()) == 17
    pairs = problems = 0
    for combo in itertools.combinations(range(5), 3):
        margin = counts.sum(axis=tuple(a for a in range(5) if a not in combo)).reshape(-1)
        pairs += margin.size
        problems += int(((margin > 0) & (margin < 10)).sum())
    assert (pairs, problems) == (104, 5)


def test_quick_reproduction_writes_its_files_and_protects(tmp_path, capsys):
    assert main(["reproduce", "cator", "--out", str(tmp_path), "--quick", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = {p.split("/")[-1] for p in out["files"]}
    assert names == {"cator_summary.json", "cator_summary.md", "cator_destinations.csv", "cator_figure1.png"}
    assert (tmp_path / "cator_figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (design,) = out["designs"]
    assert design["worst_posterior"] <= 0.1
    assert design["l2_loss"] < out["baseline"]["l2_loss"]
    assert design["expected_changes_records"] < out["baseline"]["expected_changes_records"]
    # every change lands in a cell that covers a problem combination: (0, 0, 0, 0, *) here
    counts = cator.example_counts()
    for dest in design["destinations"]:
        cell = tuple(dest["cell"])
        covers = any(0 < counts.sum(axis=tuple(a for a in range(5) if a not in c))[tuple(cell[a] for a in c)] < 10
                     for c in itertools.combinations(range(5), 3))
        assert covers
    assert np.isclose(sum(d["share"] for d in design["destinations"]), 1.0)
