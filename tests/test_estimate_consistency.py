"""Consistent estimators and the choice of estimator (pramkit.estimate.consistent,
.estimators; the ``estimator`` option of estimate_table and ``pramkit estimate``).

Checked against: the Euclidean projection onto {x >= 0, sum x = n} found by
trying every support, and Norm-Sub as Wang et al. describe it (zero the
negatives, subtract equally from the positives, repeat); the generic MLE (EM)
on randomized-response matrices; hand computations for S = 2; simulated
releases (consistency, unbiasedness, and the projection never increasing
the total squared error).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from pramkit import Manifest, PramMatrix
from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.design.dp.optimal import dp_optimal
from pramkit.errors import PramkitError
from pramkit.estimate import (
    ESTIMATORS,
    estimate_counts,
    estimate_table,
    mle_estimate,
    moment_estimate,
    norm_sub,
    norm_sub_estimate,
    rr_mle_estimate,
)


def brute_force_projection(v: np.ndarray, total: float) -> np.ndarray:
    """argmin ||x - v|| over {x >= 0, sum x = total}: for every candidate support A,
    the closest point of the affine set {x_A free, x elsewhere 0, sum = total} is
    v_A shifted by a constant; keep the feasible candidate nearest to v."""
    best, best_d = None, np.inf
    for k in range(1, v.size + 1):
        for support in itertools.combinations(range(v.size), k):
            idx = list(support)
            x = np.zeros_like(v)
            x[idx] = v[idx] - (v[idx].sum() - total) / k
            if x.min() < -1e-12:
                continue
            d = float(np.sum((x - v) ** 2))
            if d < best_d:
                best, best_d = x, d
    return best


def iterative_norm_sub(v: np.ndarray, total: float) -> np.ndarray:
    """Norm-Sub as described: zero the negatives, then subtract the same amount from
    each positive entry so that the sum is the total; repeat until none is negative."""
    x = v.astype(float).copy()
    while True:
        x[x < 0] = 0.0
        positive = x > 0
        x[positive] -= (x.sum() - total) / positive.sum()
        if x.min() >= -1e-12:
            return np.maximum(x, 0.0)


@pytest.mark.parametrize("seed", range(30))
def test_norm_sub_is_the_projection(seed):
    rng = np.random.default_rng(seed)
    s = int(rng.integers(2, 9))
    total = float(rng.integers(10, 500))
    v = rng.normal(total / s, total / 2, size=s)
    v += (total - v.sum()) / s  # an unbiased estimate sums to n
    out = norm_sub(v, total)
    assert out == pytest.approx(brute_force_projection(v, total), abs=1e-9)
    assert out == pytest.approx(iterative_norm_sub(v, total), abs=1e-9)
    assert out.min() >= 0 and out.sum() == pytest.approx(total)


def test_norm_sub_rows_and_edge_cases():
    rng = np.random.default_rng(3)
    v = rng.normal(10, 20, size=(4, 5))
    totals = np.array([50.0, 0.0, 10.0, 100.0])
    out = norm_sub(v, totals)
    for row, t, o in zip(v, totals, out):
        expected = np.zeros(5) if t == 0 else brute_force_projection(row, t)
        assert o == pytest.approx(expected, abs=1e-9)
    inside = np.array([10.0, 20.0, 70.0])  # already consistent: unchanged
    assert norm_sub(inside, 100.0) == pytest.approx(inside)
    with pytest.raises(PramkitError):
        norm_sub([1.0, np.nan], 1.0)
    with pytest.raises(PramkitError):
        norm_sub([1.0, 2.0], -1.0)


def test_norm_sub_estimate_keeps_the_known_totals_of_unperturbed_variables():
    rng = np.random.default_rng(4)
    m = randomized_response(list(range(5)), 0.5)
    u = rng.integers(0, 40, size=(5, 3)).astype(float)
    est = norm_sub_estimate(u, [m, None])
    base = moment_estimate(u, [m, None])
    assert est.estimator == "norm-sub" and est.method == "norm-sub" and np.all(np.isnan(est.se))
    assert (base.counts < 0).any()  # the case the projection is for
    for y in range(3):
        assert est.counts[:, y] == pytest.approx(brute_force_projection(base.counts[:, y], u[:, y].sum()), abs=1e-9)


def test_hand_computed_two_categories():
    """Keep with probability 3/4: the unbiased estimate of 90 "yes" of 100 is
    (0.9 - 1/4) / (1/2) = 130 "yes"; projected (and the MLE, whose likelihood
    0.9 log(1/4 + x/2) + 0.1 log(3/4 - x/2) increases up to x = 1): 100 and 0."""
    m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    u = np.array([90.0, 10.0])
    assert estimate_counts(u, [m], estimator="unbiased").counts == pytest.approx([130.0, -30.0])
    for name in ("norm-sub", "rr-mle"):
        assert estimate_counts(u, [m], estimator=name).counts == pytest.approx([100.0, 0.0], abs=1e-9)
    assert estimate_counts(u, [m], estimator="mle").counts == pytest.approx([100.0, 0.0], abs=0.01)
    # inside the simplex every estimator gives the unbiased estimate (70 -> 0.9 -> 90)
    for name in ESTIMATORS:
        assert estimate_counts(np.array([70.0, 30.0]), [m], estimator=name).counts == pytest.approx([90.0, 10.0], abs=1e-3)


@pytest.mark.parametrize("s, eps", [(2, 0.5), (3, 0.3), (4, 1.0), (6, 0.5), (9, 2.0), (11, 1.0)])
def test_rr_closed_form_equals_the_generic_mle(s, eps):
    rng = np.random.default_rng(s * 100 + int(10 * eps))
    m = randomized_response(list(range(s)), eps)
    for _ in range(5):
        p = rng.dirichlet(0.4 * np.ones(s))
        u = rng.multinomial(int(rng.integers(30, 2000)), p @ m.matrix).astype(float)
        closed = rr_mle_estimate(u, [m])
        em = mle_estimate(u, [m], tol=1e-11)
        assert closed.estimator == "rr-mle" and closed.method == "mle" and closed.iterations == 0
        assert closed.counts == pytest.approx(em.counts, abs=1e-6 * u.sum())
        assert closed.se == pytest.approx(em.se, rel=1e-5, abs=1e-6)
        assert closed.loglik >= em.loglik - 1e-9
        assert closed.loglik_gap <= 1e-9  # the KKT conditions hold at the closed form


def test_rr_closed_form_with_an_unperturbed_axis():
    rng = np.random.default_rng(9)
    m = randomized_response(list(range(4)), 0.7)
    u = rng.integers(0, 30, size=(3, 4)).astype(float)  # the perturbed variable second
    u[1] = 0  # an empty group of the unperturbed variable
    closed = rr_mle_estimate(u, [None, m])
    em = mle_estimate(u, [None, m], tol=1e-11)
    assert closed.counts == pytest.approx(em.counts, abs=1e-6 * u.sum())
    assert closed.counts.sum(axis=1) == pytest.approx(u.sum(axis=1))


def test_rr_closed_form_refuses_other_matrices():
    rr = randomized_response([0, 1, 2], 1.0)
    with pytest.raises(PramkitError, match="randomized-response"):
        rr_mle_estimate(np.ones(3), [dp_optimal([0.7, 0.2, 0.1], 0.5)])
    with pytest.raises(PramkitError, match="exactly one perturbed"):
        rr_mle_estimate(np.ones((3, 3)), [rr, rr])


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_monte_carlo_consistency_and_unbiasedness(eps):
    """Simulated releases of a fixed file (released counts: one multinomial draw
    per original category, independently of pramkit's perturbation engine)."""
    rng = np.random.default_rng(int(eps * 10))
    truth = np.array([400.0, 250.0, 200.0, 100.0, 40.0, 10.0])
    n = truth.sum()
    m = dp_optimal(truth / n, eps)
    reps = 600
    est = {name: [] for name in ("unbiased", "mle", "norm-sub")}
    for _ in range(reps):
        u = sum(rng.multinomial(int(t), row) for t, row in zip(truth, m.matrix)).astype(float)
        for name in est:
            est[name].append(estimate_counts(u, [m], estimator=name, variance="pram").counts)
    arr = {name: np.array(v) for name, v in est.items()}
    for name in ("mle", "norm-sub"):
        assert arr[name].min() >= 0 and arr[name].max() <= n
        assert arr[name].sum(axis=1) == pytest.approx(np.full(reps, n))
    # the projection is non-expansive and the truth is in the set: never a larger total squared error
    err_u = ((arr["unbiased"] - truth) ** 2).sum(axis=1)
    err_ns = ((arr["norm-sub"] - truth) ** 2).sum(axis=1)
    assert np.all(err_ns <= err_u + 1e-9)
    # the unbiased estimator is centred on the truth (Bonferroni over the cells)
    mean, sd = arr["unbiased"].mean(axis=0), arr["unbiased"].std(axis=0, ddof=1)
    assert np.all(np.abs(mean - truth) < 3.5 * sd / np.sqrt(reps))
    if eps == 0.5:
        assert (arr["unbiased"] < 0).any()  # the situation the consistent estimators are for


# -- estimate_table and the command line ----------------------------------------------


@pytest.fixture
def rare():
    """A released file whose unbiased estimate has a negative cell."""
    m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("yes", "no"))
    data = pd.DataFrame({"answer": ["yes"] * 90 + ["no"] * 10, "g": ["u", "v"] * 50})
    return data, Manifest.of({"answer": m})


def test_estimator_keyword_and_method_compatibility(rare):
    data, manifest = rare
    assert estimate_table(data, manifest, "answer").estimator == "unbiased"
    assert estimate_table(data, manifest, "answer", method="moment").estimator == "unbiased"
    assert estimate_table(data, manifest, "answer", method="mle").estimator == "mle"
    assert estimate_table(data, manifest, "answer", estimator="moment").estimator == "unbiased"
    res = estimate_table(data, manifest, "answer", estimator="norm-sub")
    assert res.estimator == "norm-sub" and res.table.counts == pytest.approx([100.0, 0.0])
    assert estimate_table(data, manifest, "answer", method="mle", estimator="mle").estimator == "mle"
    with pytest.raises(PramkitError, match="disagree"):
        estimate_table(data, manifest, "answer", method="mle", estimator="norm-sub")
    with pytest.raises(PramkitError, match="estimator must be one of"):
        estimate_table(data, manifest, "answer", estimator="bayes")


def test_out_of_range_cells_are_flagged(rare):
    data, manifest = rare
    res = estimate_table(data, manifest, "answer")
    cells = res.cells()
    assert [c["out_of_range"] for c in cells] == [True, True]  # 130 > n = 100 and -30 < 0
    assert res.to_dict()["out_of_range_cells"] == 2
    by = estimate_table(data, manifest, "answer", by="g")
    assert by.out_of_range.tolist() == ((by.table.counts < 0) | (by.table.counts > 100)
                                        | (by.proportion < 0) | (by.proportion > 1)).tolist()
    for name in ("mle", "norm-sub", "rr-mle"):
        assert not estimate_table(data, manifest, "answer", estimator=name).out_of_range.any()


def test_cli_estimator_option_and_warning(rare, tmp_path, capsys):
    data, manifest = rare
    data.to_csv(tmp_path / "r.csv", index=False)
    manifest.write(tmp_path / "m.json")
    args = ["estimate", str(tmp_path / "r.csv"), "--manifest", str(tmp_path / "m.json"), "--vars", "answer"]
    assert main(args + ["--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["estimator"] == "unbiased" and out["method"] == "moment" and not out["consistent"]
    assert [c["out_of_range"] for c in out["cells"]] == [True, True]
    assert "outside [0, n]" in captured.err and "norm-sub" in captured.err and "mle" in captured.err
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "out_of_range (> n)" in captured.out and "out_of_range (< 0)" in captured.out
    for name in ("norm-sub", "mle", "rr-mle"):
        assert main(args + ["--estimator", name, "--json"]) == 0
        captured = capsys.readouterr()
        out = json.loads(captured.out)
        assert out["estimator"] == name and out["consistent"] and out["out_of_range_cells"] == 0
        assert "outside [0, n]" not in captured.err
    assert main(args + ["--estimator", "norm-sub"]) == 0
    text = capsys.readouterr().out
    assert "estimator: norm-sub" in text and "n/a" in text and "nan" not in text.lower()
    assert main(args + ["--method", "mle", "--estimator", "norm-sub"]) == 2
    assert "disagree" in capsys.readouterr().err
