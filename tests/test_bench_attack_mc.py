"""benchmarks/bench_attack_mc.py: the Monte Carlo over keys on a slice of NIST's national2019, and its whole-record
attacker on files whose posteriors are written by hand or given by the library's own ceiling.

The ceiling and the baseline printed are checked against sums made here from the slice and the matrices (a
pandas groupby of the true table); the run is skipped when the shared NIST file is absent.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from conftest import benchmark_module

from pramkit import Manifest, PramMatrix
from pramkit.engine.perturb import perturb_frame
from pramkit.release.pipeline import design_release
from pramkit.risk.attack import bayes_ceiling

ROOT = Path(__file__).resolve().parents[1]
NIST = ROOT.parent / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
KNOWN = ["AGEP", "SEX", "RAC1P"]
TARGETS = ["MSP", "EDU", "OWN_RENT", "PINCP_DECILE"]


def _benchmark() -> ModuleType:
    return benchmark_module("bench_attack_mc")


mc = _benchmark()


def _tables(out: str) -> dict[str, list[list[str]]]:
    """Per target, the rows of its table (cells as text, the header and rule left out)."""
    tables: dict[str, list[list[str]]] = {}
    target = None
    for line in out.splitlines():
        found = re.match(r"epsilon \S+ \(record\), target (\S+) ", line)
        if found:
            target = found.group(1)
            tables[target] = []
        elif target and line.startswith("| ") and not line.startswith("| attack"):
            tables[target].append([c.strip() for c in line.strip("|").split("|")])
    return tables


def test_a_slice_gives_one_table_per_target_with_the_ceiling_made_here(capsys: pytest.CaptureFixture[str]) -> None:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    rows, seed, eps = 2000, 7, 2.0
    assert mc.main(["--data", str(NIST), "--rows", str(rows), "--keys", "2", "--epsilons", "2",
                    "--seed", str(seed)]) == 0
    out = capsys.readouterr().out
    tables = _tables(out)
    assert list(tables) == TARGETS
    data = pd.read_csv(NIST, dtype=str, keep_default_na=False).head(rows)
    manifest = design_release(data[list(mc.DEFAULT_FEATURES)], TARGETS, epsilon=eps, rng=random.Random(seed))
    releases = [perturb_frame(data[list(mc.DEFAULT_FEATURES)], manifest, key=mc.key_of(seed, k)).data for k in range(2)]
    for target, table in tables.items():
        assert [r[0] for r in table] == list(mc.ATTACKS)
        assert all(len(r) == 8 for r in table)
        ceiling, baseline = float(table[0][3]), float(table[0][4])
        assert all(float(r[3]) == ceiling and float(r[4]) == baseline for r in table)
        assert 0.0 <= baseline <= ceiling <= 100.0
        # by hand: the baseline sum_k max_x n(x, k)
        counts = data.groupby([*KNOWN, target]).size().unstack(fill_value=0)
        assert baseline == pytest.approx(100 * counts.max(axis=1).sum() / rows, abs=5e-4)
        # the ceiling, per key the whole record's sum_i max_x P(x | known_i, every released cell), by hand: among the
        # records sharing the person's known values, each weighs prod_v M_v[its value, the person's released value]
        assert ceiling == pytest.approx(np.mean([_whole_record_share(data, manifest, released, target)
                                                 for released in releases]), abs=5e-4)
        for r in table:
            assert 0.0 <= float(r[1]) <= 100.0 and r[7].startswith("n/a")  # 2 keys: no verdict
    assert "time per key" in out and "x the floor" in out


def _whole_record_share(data: pd.DataFrame, manifest: Manifest, released: pd.DataFrame, target: str) -> float:
    """100 sum_i max_x P(x | known_i, every released perturbed cell of record i) / records, record by record."""
    cats = {t: [str(c) for c in manifest[t].matrix.categories] for t in TARGETS}
    m = {t: np.asarray(manifest[t].matrix.matrix) for t in TARGETS}
    x = {t: np.array([cats[t].index(v) for v in data[t]]) for t in TARGETS}
    z = {t: np.array([cats[t].index(v) for v in released[t]]) for t in TARGETS}
    total = 0.0
    for rows in data.groupby(KNOWN).indices.values():
        for i in rows:
            weight = np.prod([m[t][x[t][rows], z[t][i]] for t in TARGETS], axis=0)
            post = np.bincount(x[target][rows], weights=weight, minlength=len(cats[target]))
            total += post.max() / post.sum()
    return 100 * total / len(data)


def test_an_absent_file_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mc.main(["--data", str(tmp_path / "absent.csv")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "absent" in out[0]


def test_the_whole_record_posterior_of_three_copies_is_the_one_written_by_hand() -> None:
    """Three copies of one answer, each kept with probability 3/4: released (0, 0, 1), the candidates all-0 and
    all-1 weigh 3/4 * 3/4 * 1/4 and 1/4 * 1/4 * 3/4, so the posterior of 0 is 3/4; released (1, 1, 1) gives
    27 / 28.  The target's own cell alone would give 3/4 for every record."""
    keep = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("0", "1"))
    manifest = Manifest.of(dict.fromkeys("abc", keep))
    original = pd.DataFrame({c: ["0", "1"] for c in "abc"})
    released = pd.DataFrame({"a": ["0", "1"], "b": ["0", "1"], "c": ["1", "1"]})
    right, top = mc.whole_record_posteriors(original, released, manifest, [], list("abc"))["a"]
    assert right.tolist() == [True, True]
    assert top == pytest.approx([3 / 4, 27 / 28])


def test_with_one_perturbed_column_the_whole_record_is_the_library_ceiling() -> None:
    """One target perturbed: the whole released record says nothing more than the target's cell, so the posterior
    is the library's exact one with the original as the prior."""
    rng = np.random.default_rng(3)
    original = pd.DataFrame({"k": rng.choice(["p", "q", "r"], 300), "t": rng.choice(["u", "v", "w"], 300)})
    original.loc[original.k == "p", "t"] = "u"  # a known value that fixes the target
    manifest = Manifest.of({"t": PramMatrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]], ("u", "v", "w"))})
    released = original.assign(t=rng.choice(["u", "v", "w"], 300))
    right, top = mc.whole_record_posteriors(original, released, manifest, ["k"], ["t"])["t"]
    c = bayes_ceiling(released, manifest, ["k"], "t", prior=original, original=original)
    assert top == pytest.approx(c.max_posterior, abs=1e-12)
    assert int(right.sum()) == c.realised_correct
