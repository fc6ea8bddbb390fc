"""Splitting a record budget across variables, and the joint design (section 5 of Ayed et al.)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from pramkit.datasets import census
from pramkit.design.dp.multivariate import _allocate, compare_joint, joint_table, split_budget
from pramkit.design.dp.optimal import solve_form8
from pramkit.errors import DataError, PramkitError
from pramkit.privacy.epsilon import record_epsilon


def _info(p, e):
    return 0.0 if e <= 0 else solve_form8(p, e).mutual_information_nats


def test_allocation_dp_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        j, g = int(rng.integers(1, 4)), int(rng.integers(1, 9))
        values = [np.sort(rng.uniform(size=g + 1)) for _ in range(j)]
        total, alloc = _allocate(values, g)
        brute = max(sum(v[h] for v, h in zip(values, hs))
                    for hs in itertools.product(range(g + 1), repeat=j) if sum(hs) <= g)
        assert total == pytest.approx(brute, abs=1e-15)
        assert sum(alloc) <= g and sum(v[h] for v, h in zip(values, alloc)) == pytest.approx(total)


def test_optimal_split_is_feasible_and_bounded():
    rng = np.random.default_rng(1)
    ps = {"a": rng.dirichlet(np.ones(3)), "b": rng.dirichlet(np.ones(5)), "c": rng.dirichlet(np.ones(2))}
    sp = split_budget(ps, 2.0, grid=40)
    assert sum(sp.epsilons.values()) == pytest.approx(2.0)
    assert record_epsilon([m.epsilon for m in sp.matrices.values()]) <= 2.0 + 1e-9
    assert sp.total_nats == pytest.approx(sum(_info(ps[n], sp.epsilons[n]) for n in ps), abs=1e-12)
    assert sp.upper_bound_nats >= sp.total_nats
    # Monte Carlo of the claim: no random split of the budget beats the certified bound
    for w in rng.dirichlet(np.ones(3), size=60):
        total = sum(_info(ps[n], 2.0 * wi) for n, wi in zip(ps, w))
        assert total <= sp.upper_bound_nats + 1e-12
    eq = split_budget(ps, 2.0, split="equal")
    assert all(e == pytest.approx(2.0 / 3) for e in eq.epsilons.values())
    assert eq.total_nats <= sp.upper_bound_nats + 1e-12


def test_joint_table_matches_crosstab():
    df = census(3000, seed=5)
    t = joint_table(df, ["sex", "veteran"])
    ct = pd.crosstab(df["sex"], df["veteran"], normalize=True)
    assert t.p == pytest.approx(ct.loc[list(t.categories[0]), list(t.categories[1])].to_numpy())
    assert t.marginal("sex") == pytest.approx(df["sex"].value_counts(normalize=True)[list(t.categories[0])].to_numpy())


def test_independent_variables_information_adds_up():
    """For independent X_1, X_2 perturbed independently, I(X; Z) = I(X_1; Z_1) + I(X_2; Z_2)."""
    p1, p2 = np.array([0.2, 0.8]), np.array([0.5, 0.3, 0.2])
    n = 60000
    # an exactly independent table: every (u, v) cell has count n p1 p2
    rows = [(u, w) for u, pu in enumerate(p1) for w, pw in enumerate(p2) for _ in range(int(round(n * pu * pw)))]
    df = pd.DataFrame(rows, columns=["u", "v"])
    t = joint_table(df, ["u", "v"])
    sp = split_budget({"u": t.marginal("u"), "v": t.marginal("v")}, 1.0, split="equal")
    cmp = compare_joint(t, sp)
    assert cmp.independent_nats == pytest.approx(cmp.independent_sum_nats, abs=1e-12)
    assert cmp.cells == 6 and cmp.better in ("joint", "independent")
    assert cmp.joint_matrix.epsilon <= 1.0 + 1e-12


def test_bad_input():
    with pytest.raises(PramkitError):
        split_budget({}, 1.0)
    with pytest.raises(PramkitError):
        split_budget({"a": [0.5, 0.5]}, 0.0)
    with pytest.raises(PramkitError):
        split_budget({"a": [0.5, 0.5]}, 1.0, split="greedy")
    with pytest.raises(PramkitError):
        split_budget({"a": [0.5, 0.5]}, 1.0, grid=0)
    with pytest.raises(DataError, match="unknown column"):
        joint_table(census(100), ["sex", "nope"])


def test_cli_data_mode_writes_a_manifest_apply_reads(tmp_path, capsys):
    import json

    from pramkit.cli import main
    from pramkit.manifest import Manifest

    csv = tmp_path / "c.csv"
    census(3000, seed=2).to_csv(csv, index=False)
    out = tmp_path / "m.json"
    assert main(["design", str(csv), "--vars", "sex,marital_status", "--epsilon", "2", "--split", "equal",
                 "--out", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    man = Manifest.read(out)
    assert man.names == ["sex", "marital_status"]
    assert man.record_epsilon <= 2.0 + 1e-9 and res["record_epsilon"] == pytest.approx(man.record_epsilon)
    df = census(3000, seed=2)
    assert set(man["sex"].matrix.categories) == set(df["sex"].unique())
    # existing output without --force, a missing --out, unknown column: one-line errors, exit 2
    for argv in (["--split", "equal", "--out", str(out)], ["--split", "joint"]):
        assert main(["design", str(csv), "--vars", "sex", "--epsilon", "1", *argv]) == 2
    assert main(["design", str(csv), "--vars", "sex,nope", "--epsilon", "1", "--out", str(tmp_path / "n.json")]) == 2
    capsys.readouterr()
    joint_out = tmp_path / "j.json"
    assert main(["design", str(csv), "--vars", "sex,marital_status", "--epsilon", "1", "--split", "joint",
                 "--out", str(joint_out), "--json"]) == 0
    joint = json.loads(capsys.readouterr().out)["joint"]
    assert joint["cells"] == 2 * len(df["marital_status"].unique()) and joint["better"] in ("joint", "independent")
    jm = Manifest.read(joint_out)
    (var,) = jm.variables
    assert var.columns == ("sex", "marital_status") and var.matrix.size == joint["cells"]
    assert jm.record_epsilon <= 1.0 + 1e-12
    assert main(["apply", str(csv), "--manifest", str(joint_out), "--out", str(tmp_path / "r.csv"), "--quiet"]) == 0


@pytest.mark.parametrize("argv, method", [
    (["--method", "rr", "--epsilon", "1"], "randomized_response"),
    (["--method", "keep", "--keep", "0.8"], "keep_probability"),
    (["--method", "invariant", "--pd", "0.7", "--seed", "1", "--design-epsilon", "0.2"], "sdcmicro_pram"),
    (["--method", "bistochastic-beta", "--beta", "0.5", "--beta-family", "kanon"], "k_anonymity"),
    (["--method", "tridiagonal", "--alpha", "0.2"], "tridiagonal"),
])
def test_cli_family_methods_write_manifests(tmp_path, capsys, argv, method):
    import json

    from pramkit.cli import main
    from pramkit.information import mutual_information
    from pramkit.manifest import Manifest

    csv = tmp_path / "c.csv"
    census(2000, seed=3).to_csv(csv, index=False)
    out = tmp_path / "m.json"
    assert main(["design", str(csv), "--vars", "sex,marital_status", "--out", str(out), "--json", *argv]) == 0
    res = json.loads(capsys.readouterr().out)
    man = Manifest.read(out)
    assert man.names == ["sex", "marital_status"]
    assert all(method in v.matrix.provenance.method for v in man.variables)
    df = census(2000, seed=3)
    p = df["marital_status"].value_counts(normalize=True)[list(man["marital_status"].matrix.categories)].to_numpy()
    mi = mutual_information(p, man["marital_status"].matrix.matrix)
    assert res["measures"]["marital_status"]["mutual_information_nats"] == pytest.approx(mi, rel=1e-9)
    stated = res["measures"]["sex"]["epsilon"]
    assert (float("inf") if stated == "inf" else stated) == pytest.approx(man["sex"].matrix.epsilon)
