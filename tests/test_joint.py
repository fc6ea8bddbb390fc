"""Joint perturbation of several columns by one matrix on their cross-classification."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pramkit.engine.perturb import apply_file, perturb_frame
from pramkit.errors import DataError, ManifestError
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

CELLS = [(r, s) for r, s in itertools.product([1, 2, 3], ["m", "f"])]


@pytest.fixture
def joint() -> PerturbedVariable:
    m = np.random.default_rng(4).dirichlet(np.ones(6), size=6) * 0.4 + 0.6 * np.eye(6)
    return PerturbedVariable("region*sex", PramMatrix(m, CELLS), columns=("region", "sex"))


def test_cell_transitions_match_the_matrix(joint, key) -> None:
    n = 60_000
    data = pd.DataFrame({
        "region": np.repeat([c[0] for c in CELLS], n),
        "sex": np.repeat([c[1] for c in CELLS], n),
        "other": np.arange(6 * n),
    })
    out, res = perturb_frame(data, Manifest((joint,)), key=key)
    assert (out["other"] == data["other"]).all()
    released = list(zip(out["region"], out["sex"]))
    index = {c: i for i, c in enumerate(CELLS)}
    codes = np.array([index[c] for c in released])
    for k in range(6):
        counts = np.bincount(codes[k * n:(k + 1) * n], minlength=6)
        p = stats.chisquare(counts, joint.matrix.matrix[k] * n).pvalue
        assert p > 1e-4 / 6, (k, p)
    changed = sum(a != b for a, b in zip(released, zip(data["region"], data["sex"])))
    assert res.variables[0].changed == changed


def test_missing_in_any_column_leaves_the_record(joint, key) -> None:
    data = pd.DataFrame({"region": [1.0, np.nan, 3.0] * 500, "sex": ["m", "f", None] * 500})
    out, res = perturb_frame(data, Manifest((joint,)), key=key)
    assert out["region"].isna().tolist() == data["region"].isna().tolist()
    assert out["sex"].isna().tolist() == data["sex"].isna().tolist()
    # the present value is drawn from the matrix's margin over its column (the average of the rows of its
    # cells, summed over the other column): computed here from the matrix's entries, not by the code under test
    dense = joint.matrix.matrix
    for rows, present, value, levels in ((slice(1, None, 3), "sex", "f", ["m", "f"]),
                                         (slice(2, None, 3), "region", 3, [1, 2, 3])):
        pos = 0 if present == "region" else 1
        cells = [i for i, c in enumerate(CELLS) if c[pos] == value]
        expected = [dense[cells][:, [j for j, c in enumerate(CELLS) if c[pos] == lv]].sum() / len(cells)
                    for lv in levels]
        counts = out.loc[rows, present].value_counts().reindex(levels, fill_value=0).to_numpy()
        assert stats.chisquare(counts, np.array(expected) * counts.sum()).pvalue > 1e-4
    assert res.variables[0].missing == 1000


def test_unknown_combination(key) -> None:
    m = PramMatrix(np.full((2, 2), 0.5), [(1, "m"), (2, "f")])
    man = Manifest((PerturbedVariable("rs", m, columns=("region", "sex")),))
    data = pd.DataFrame({"region": [1, 2, 1], "sex": ["m", "f", "f"]})
    with pytest.raises(DataError, match=r"row 3: the combination \(1, 'f'\)"):
        perturb_frame(data, man, key=key)


def test_manifest_round_trip_and_apply(tmp_path: Path, joint, key) -> None:
    man = Manifest((joint,))
    man.write(tmp_path / "m.json")
    back = Manifest.read(tmp_path / "m.json")
    assert back.variables[0].columns == ("region", "sex")
    assert back.variables[0].matrix.categories == tuple(CELLS)
    assert back.columns == ["region", "sex"]
    data = pd.DataFrame({"region": [1, 2, 3] * 1000, "sex": ["m", "f"] * 1500, "id": range(3000)})
    data.to_csv(tmp_path / "in.csv", index=False)
    apply_file(tmp_path / "in.csv", back, tmp_path / "a.csv", key=key)
    apply_file(tmp_path / "in.csv", back, tmp_path / "b.csv", key=key, chunk_rows=100)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    expected, _ = perturb_frame(data, back, key=key)
    got = pd.read_csv(tmp_path / "a.csv")
    assert (got["region"] == expected["region"]).all() and (got["sex"] == expected["sex"]).all()


def test_invalid_joint_variables() -> None:
    m = PramMatrix(np.eye(2), [(1, "m"), (2, "f")])
    with pytest.raises(ManifestError, match="tuple categories need several columns"):
        PerturbedVariable("x", m)
    with pytest.raises(ManifestError, match="must list 3 values"):
        PerturbedVariable("x", m, columns=("a", "b", "c"))
    with pytest.raises(ManifestError, match="more than one variable"):
        Manifest((PerturbedVariable("ab", m, columns=("a", "b")),
                  PerturbedVariable("a", PramMatrix(np.eye(2), [1, 2]))))
