"""The invariant least-distance DP design (``--objective distance --invariant``): p M = p.

Checked against what the code does not compute itself: the LP solved again over the S^3 pairwise
DP constraints (no floors, no duals), the matrix's epsilon from its column ratios, and the released
file of NIST's ACS excerpt read as it is.
"""

from __future__ import annotations

import contextlib
import io
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import pramkit
from pramkit.cli import main
from pramkit.design.dp.distance import dp_min_distance
from pramkit.distances import ordinal_distances
from pramkit.errors import ParameterError

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"


@pytest.fixture(scope="module")
def acs() -> pd.DataFrame:
    """NIST's national2019 ACS excerpt, every column as text ('N': not applicable)."""
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    return pd.read_csv(NIST, dtype=str)


def brute_optimum(p: np.ndarray, d: np.ndarray, epsilon: float) -> float:
    """The least expected distance over invariant epsilon-DP matrices: the LP over M itself, with every
    pairwise constraint M[x, z] <= e^eps M[x', z] written out (S^3 rows)."""
    s = p.size
    n = s * s
    ub_rows, ub_cols, ub_vals = [], [], []
    row = 0
    for z, x, x2 in product(range(s), range(s), range(s)):
        if x != x2:
            ub_rows += [row, row]
            ub_cols += [x * s + z, x2 * s + z]
            ub_vals += [1.0, -np.exp(epsilon)]
            row += 1
    a_ub = np.zeros((row, n))
    a_ub[ub_rows, ub_cols] = ub_vals
    a_eq = np.zeros((2 * s, n))
    for x in range(s):
        a_eq[x, x * s:(x + 1) * s] = 1.0
    for z in range(s):
        a_eq[s + z, z::s] = p
    res = linprog((p[:, None] * d).ravel(), A_ub=a_ub, b_ub=np.zeros(row), A_eq=a_eq,
                  b_eq=np.concatenate([np.ones(s), p]), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def column_epsilon(m: np.ndarray) -> float:
    """The largest log-ratio within a column (0 for columns that are all 0)."""
    worst = 0.0
    for col in m.T:
        if col.max() > 0:
            assert col.min() > 0, "a column mixes zero and positive entries: epsilon is infinite"
            worst = max(worst, float(np.log(col.max() / col.min())))
    return worst


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 6).flatmap(lambda s: st.tuples(
    st.lists(st.integers(0, 50), min_size=s, max_size=s).filter(lambda c: sum(c) > 0),
    st.floats(0.05, 6.0))))
@example(([10, 40, 1, 2, 49], 0.25))
@example(([12, 17, 0, 13, 41, 39], 5.9232434538370855))
def test_the_design_is_the_invariant_dp_optimum(case) -> None:
    counts, epsilon = case
    p = np.array(counts, dtype=float) / sum(counts)
    labels = [str(i) for i in range(p.size)]
    dist = ordinal_distances(labels)
    m = dp_min_distance(p, epsilon, dist, invariant=True)
    matrix = m.matrix
    cert = m.provenance.certificate
    best = brute_optimum(p, dist.matrix, epsilon)
    assert np.allclose(matrix.sum(axis=1), 1.0, atol=1e-12)
    assert np.abs(p @ matrix - p).max() <= 1e-8
    assert column_epsilon(matrix) <= epsilon + 1e-9
    assert m.provenance.objective <= best + 1e-7 * (1 + best)   # as good as the optimum over every matrix
    # the certificate's bound is a true lower bound: at most the optimum, which the brute-force LP (HiGHS, feasibility
    # tolerance 1e-7, its constraints slightly violated) finds to about 1e-7 relative, below it by up to that
    # (a Hypothesis case, counts 10, 40, 1, 2, 49 at epsilon 0.25, has the bound 1.5e-8 above the LP's optimum)
    assert cert["lower_bound"] <= best + 1e-7 * (1 + best)
    # the dual bound holds for every exactly invariant matrix; the stored doubles keep p only to the certificate's
    # invariance error, so their objective may sit below the bound by up to that error times sum |v| (the case counts
    # 12, 17, 0, 13, 41, 39 at epsilon 5.92: the bound 1.5e-16 above the exact upper bound, the allowance 3.5e-15)
    slack = float(np.abs(cert["dual_v"]).sum()) * cert["invariance_error"]
    assert cert["lower_bound"] <= cert["upper_bound"] + slack
    assert cert["lower_bound"] <= m.provenance.objective + slack + 1e-15 * m.provenance.objective
    assert cert["optimal"] and cert["invariant"]


def test_an_invariant_certificate_does_not_cover_the_plain_optimum() -> None:
    # The plain optimum is not invariant: its distance is below the invariant certificate's lower bound,
    # which is therefore a bound on the invariant matrices only.
    p = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    dist = ordinal_distances(list("abcde"))
    plain = dp_min_distance(p, 0.5, dist)
    inv = dp_min_distance(p, 0.5, dist, invariant=True)
    assert np.abs(p @ plain.matrix - p).max() > 0.05
    assert plain.provenance.objective < inv.provenance.certificate["lower_bound"]


def test_age_keeps_its_values_and_its_distribution(acs: pd.DataFrame) -> None:
    ages = sorted(acs["AGEP"].unique(), key=int)
    p = acs["AGEP"].value_counts().reindex(ages).to_numpy() / len(acs)
    dist = ordinal_distances(ages)
    plain = dp_min_distance(p, 3.0, dist).matrix
    inv = dp_min_distance(p, 3.0, dist, invariant=True).matrix
    assert int((p @ plain > 1e-3).sum()) <= 10              # the plain optimum remaps to a few ages
    assert int((p @ inv > 1e-3).sum()) >= 90                # the invariant one keeps (almost) all 96
    assert 0.5 * np.abs(p @ inv - p).sum() < 1e-9


def test_the_released_file_reads_as_the_original(acs: pd.DataFrame, key) -> None:
    data = acs[["AGEP", "SEX"]].astype({"AGEP": int})
    plan = pramkit.plan_release(["AGEP"], epsilon=3.0, method="dp", options={"objective": "distance", "invariant": True},
                                distances="ordinal")
    m = pramkit.design_planned(data, plan, key=key).manifest
    released = pramkit.perturb_frame(data, m, key=key).data
    assert m.record_epsilon <= 3.0
    original = data["AGEP"].astype(int)
    moved = released["AGEP"].astype(int)
    share = original.value_counts(normalize=True)
    tv = 0.5 * moved.value_counts(normalize=True).reindex(share.index, fill_value=0).sub(share).abs().sum()
    assert moved.nunique() >= 90
    assert tv < 0.06                                       # sampling noise of 27 253 draws and DP counts
    assert (moved != original).mean() > 0.5                # and most ages moved
    adults = original >= 18
    assert abs((moved >= 18).mean() - adults.mean()) < 0.02


def _run(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue()


@pytest.mark.parametrize(("flags", "message"), [
    (["--vars", "AGEP", "--invariant"], "--invariant apply to --objective distance"),
    (["--vars", "AGEP", "--objective", "distance", "--distances", "ordinal", "--invariant",
      "--distance-weights", "uniform"], "weights 'frequencies'"),
    (["--vars", "POVPIP", "--na-values", "N", "--objective", "distance", "--distances", "ordinal", "--invariant"],
     "above 300"),
    (["--vars", "AGEP", "--method", "rr", "--invariant"], "apply to --objective distance"),
])
def test_bad_input_is_one_line_and_writes_nothing(acs: pd.DataFrame, tmp_path: Path, flags, message) -> None:
    data = tmp_path / "acs.csv"
    acs[["AGEP", "POVPIP", "SEX"]].to_csv(data, index=False)
    before = data.read_bytes()
    code, err = _run(["design", str(data), *flags, "--epsilon", "3", "--out", str(tmp_path / "m.json"), "--quiet"])
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acs.csv"] and data.read_bytes() == before


def test_the_library_refuses_an_invariant_design_without_frequencies() -> None:
    with pytest.raises(ParameterError, match="give p"):
        dp_min_distance(None, 1.0, ordinal_distances(["a", "b", "c"]), invariant=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 5).flatmap(lambda s: st.tuples(
    st.lists(st.integers(1, 40), min_size=s, max_size=s), st.floats(0.1, 5.0))))
def test_discrete_distances_keep_the_most_values_invariantly(case) -> None:
    # With every change at distance 1 the expected distance is the probability of a change: the invariant
    # design keeps as many values as any invariant epsilon-DP matrix can.
    from pramkit.distances import read_distances

    counts, epsilon = case
    p = np.array(counts, dtype=float) / sum(counts)
    dist = read_distances("discrete", [f"c{i}" for i in range(p.size)])
    m = dp_min_distance(p, epsilon, dist, invariant=True)
    kept = float(p @ np.diagonal(m.matrix))
    assert abs((1 - kept) - brute_optimum(p, 1.0 - np.eye(p.size), epsilon)) < 1e-7
    assert column_epsilon(m.matrix) <= epsilon + 1e-9


def test_a_nominal_variable_keeps_its_law_in_the_released_file(acs: pd.DataFrame, tmp_path: Path, key) -> None:
    data = tmp_path / "acs.csv"
    acs[["MSP", "EDU", "SEX"]].to_csv(data, index=False)
    key_file = tmp_path / "k.key"
    key_file.write_text(key.material.hex() + "\n")
    key_file.chmod(0o600)
    code, err = _run(["design", str(data), "--vars", "MSP,EDU", "--objective", "distance", "--distances", "discrete",
                      "--invariant", "--epsilon", "4", "--key-file", str(key_file), "--out", str(tmp_path / "m.json"),
                      "--quiet"])
    assert code == 0, err
    code, err = _run(["apply", str(data), "--manifest", str(tmp_path / "m.json"), "--out", str(tmp_path / "r.csv"),
                      "--key-file", str(key_file)])
    assert code == 0, err
    released = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    for column in ("MSP", "EDU"):
        share = acs[column].value_counts(normalize=True)
        out = released[column].value_counts(normalize=True).reindex(share.index, fill_value=0)
        assert 0.5 * (out - share).abs().sum() < 0.03, column      # the law kept (DP counts, sampling)
        assert (released[column] != acs[column]).mean() > 0.3       # while many values changed


def test_strata_keep_the_law_within_each_stratum(acs: pd.DataFrame, key) -> None:
    # Ordinal distances with strata run along the age order within each sex (the cells are (sex, age));
    # each block is designed apart, so the released law is kept within every stratum.
    data = acs[["AGEP", "SEX"]].astype({"AGEP": int})
    plan = pramkit.plan_release(["AGEP"], epsilon=4.0, method="dp", strata="SEX", distances="ordinal",
                                options={"objective": "distance", "invariant": True})
    m = pramkit.design_planned(data, plan, key=key).manifest
    released = pramkit.perturb_frame(data, m, key=key).data
    assert (released["SEX"] == data["SEX"]).all()
    for sex, group in data.groupby("SEX"):
        share = group["AGEP"].value_counts(normalize=True)
        out = released.loc[group.index, "AGEP"].astype(int).value_counts(normalize=True)
        assert 0.5 * out.reindex(share.index, fill_value=0).sub(share).abs().sum() < 0.08, sex
    moved = (released["AGEP"].astype(int) - data["AGEP"]).abs().mean()
    assert 1.0 < moved < 12.0        # ages move along their order, not across the strata's cells


def test_a_joint_design_keeps_the_joint_law(acs: pd.DataFrame, key) -> None:
    # 'discrete' distances on the cross-classification: one invariant matrix on the joint cells, so the
    # released file keeps the three variables' joint law, not only their margins.
    data = acs[["MSP", "DVET", "DEYE"]]
    plan = pramkit.plan_release(["MSP", "DVET", "DEYE"], epsilon=5.0, method="dp", split="joint",
                                distances="discrete", options={"objective": "distance", "invariant": True})
    m = pramkit.design_planned(data, plan, key=key).manifest
    released = pramkit.perturb_frame(data, m, key=key).data
    cols = ["MSP", "DVET", "DEYE"]
    joint = data.groupby(cols).size() / len(data)
    out = released.groupby(cols).size() / len(released)
    assert 0.5 * joint.sub(out, fill_value=0).abs().sum() < 0.04
    assert m.record_epsilon <= 5.0
    assert (released[cols] != data[cols]).any(axis=1).mean() > 0.05


def test_ordinal_distances_are_refused_on_joint_cells() -> None:
    with pytest.raises(ParameterError, match="'discrete' to every variable of split joint"):
        pramkit.plan_release(["MSP", "EDU"], epsilon=5.0, method="dp", split="joint", distances="ordinal",
                             options={"objective": "distance"})
