"""tau1/tau2 (risk/identification.py, risk/misclassified.py): identities and Monte Carlo of the model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_codes
from pramkit.errors import PramkitError
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.risk.frequencies import frequencies
from pramkit.risk.identification import identification_risk
from pramkit.risk.loglinear import fit_loglinear
from pramkit.risk.misclassified import cell_risk

TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    b = (a + rng.choice(4, n, p=[0.7, 0.2, 0.07, 0.03])) % 4
    c = rng.choice(5, n, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    return pd.DataFrame({"a": a, "b": b, "c": c, "w": rng.uniform(20, 60, n)})


def test_textbook_formulas_on_sample_uniques():
    data = _data()
    res = identification_risk(data, ["a", "b", "c"], sampling_fraction=0.02, model="2way")
    counts = pd.crosstab([data.a, data.b], data.c).reindex(
        pd.MultiIndex.from_product([range(3), range(4)]), fill_value=0).to_numpy().reshape(3, 4, 5)
    fit = fit_loglinear(counts.astype(float), ["a", "b", "c"], model="2way", tol=1e-13)
    lam = fit.fitted[counts == 1] / 0.02
    # the fit runs until tau1 and tau2 are within tau_rtol = 1e-6 of their limits
    assert res.tau1 == pytest.approx(np.exp(-lam * 0.98).sum(), rel=1e-6)
    assert res.tau2 == pytest.approx(((1 - np.exp(-lam * 0.98)) / (lam * 0.98)).sum(), rel=1e-6)
    assert res.sample_uniques == int((counts == 1).sum())
    su = res.per_record["f"] == 1
    assert res.per_record.loc[su, "r2"].sum() == pytest.approx(res.tau2)
    assert res.per_record.loc[~su, "r2"].isna().all()
    assert res.tau1 < res.tau2 < res.sample_uniques


def test_weights_give_pi_and_individual_risk(sdc_data):
    data = pd.read_csv(sdc_data / "testdata.csv")
    res = identification_risk(data, TESTDATA_KEYS, weights="sampling_weight")
    assert res.sampling_fraction == pytest.approx(0.01)  # constant weight 100
    assert res.sample_uniques == 157 and res.combinations == 412
    freq = frequencies(data, TESTDATA_KEYS, weights="sampling_weight")
    # f = 1, p = 1/100: r = -p log p / (1 - p)
    r_unique = -0.01 * np.log(0.01) / 0.99
    np.testing.assert_allclose(res.per_record.loc[freq.f == 1, "individual_risk"], r_unique, rtol=1e-12)
    assert res.expected_reidentifications == pytest.approx(res.per_record["individual_risk"].sum())


def test_census_like_sampling_fraction_one():
    # a census (pi = 1): every sample unique is a population unique
    data = _data(500)
    res = identification_risk(data, ["a", "b", "c"], sampling_fraction=1.0)
    assert res.tau1 == pytest.approx(res.sample_uniques)
    assert res.tau2 == pytest.approx(res.sample_uniques)


@pytest.mark.parametrize("kwargs, match", [
    ({}, "exactly one of"),
    ({"sampling_fraction": 0.1, "weights": "w"}, "exactly one of"),
    ({"sampling_fraction": 0.0}, r"\(0, 1\]"),
    ({"sampling_fraction": 1.5}, r"\(0, 1\]"),
    ({"sampling_fraction": float("nan")}, r"\(0, 1\]"),
    ({"weights": np.full(2000, 0.5)}, "at least n"),
    ({"sampling_fraction": 0.1, "tau_rtol": 0.0}, "tau_rtol"),
    ({"weights": "w", "fractions": "rows"}, "'cell' or 'file'"),
])
def test_bad_sampling(kwargs, match):
    with pytest.raises(PramkitError, match=match):
        identification_risk(_data(), ["a", "b"], **kwargs)


def _simulate(lam, pi, matrices, key, reps, rng):
    """Mean over populations of the number of correct matches (and correct population-unique matches)
    among released sample uniques: F ~ Poisson(lambda), Bernoulli(pi_k) sample (pi one fraction or
    one per cell), PRAM per variable, the intruder picks one of the F_j population units of true cell j
    at random."""
    shape = lam.shape
    pi_cell = np.broadcast_to(pi, shape).ravel()
    hits2, hits1 = [], []
    for r in range(reps):
        F = rng.poisson(lam).ravel()
        cells = np.repeat(np.arange(F.size), F)
        sample = cells[rng.random(cells.size) < pi_cell[cells]]
        codes = np.unravel_index(sample, shape)
        released = [
            perturb_codes(c, m, key=key, variable=f"v{a}-rep{r}") if m is not None else c
            for a, (c, m) in enumerate(zip(codes, matrices))
        ]
        rel = np.ravel_multi_index(tuple(released), shape)
        counts = np.bincount(rel, minlength=F.size)
        unique = counts[rel] == 1
        correct = unique & (rel == sample)
        hits2.append(float((1.0 / F[sample[correct]]).sum()))
        hits1.append(float((F[sample[correct]] == 1).sum()))
    return np.array(hits1), np.array(hits2)


@pytest.mark.parametrize("perturbed, varying", [(False, False), (True, False), (True, True)])
def test_expected_correct_matches_by_simulation(perturbed, varying, key):
    pa = np.array([0.7, 0.25, 0.05])
    pb = np.array([0.8, 0.2])
    pc = np.array([0.6, 0.3, 0.08, 0.02])
    lam = 4000 * pa[:, None, None] * pb[None, :, None] * pc[None, None, :]
    # one fraction, or fractions varying over the cells of a and c (with c perturbed)
    pi = np.array([0.02, 0.05, 0.1])[:, None, None] * np.array([1.0, 0.5, 2.0, 1.5])[None, None, :] if varying else 0.04
    mats = [None, None, None]
    if perturbed:
        mats = [randomized_response([0, 1, 2], 1.5),
                None,
                PramMatrix(np.array([[0.9, 0.1, 0, 0], [0.05, 0.9, 0.05, 0], [0, 0.1, 0.8, 0.1], [0, 0, 0.2, 0.8]]))]
    risk = cell_risk(pi * lam, pi, [None if m is None else m.matrix for m in mats])
    hits1, hits2 = _simulate(lam, pi, mats, key, reps=600, rng=np.random.default_rng(11))
    for hits, expected in ((hits2, risk.expected_tau2()), (hits1, risk.expected_tau1())):
        se = hits.std(ddof=1) / np.sqrt(hits.size)
        assert abs(hits.mean() - expected) < 4 * se + 1e-9, (hits.mean(), expected, se)


def test_manifest_path_runs_em_on_released_keys(key):
    data = _data(300, seed=4)
    rr = randomized_response([0, 1, 2, 3, 4], 2.0)
    released = data.copy()
    released["c"] = perturb_codes(data["c"].to_numpy(), rr, key=key, variable="c")
    res = identification_risk(released, ["a", "b", "c"], sampling_fraction=0.05,
                              manifest=Manifest.of({"c": rr}))
    plain = identification_risk(released, ["a", "b", "c"], sampling_fraction=0.05)
    assert res.perturbed == ("c",) and res.model.converged
    # misclassification can only lower the chance that a released unique is a correct match
    assert res.tau2 < plain.tau2
    # the EM fit reproduces the released margins it was fitted to
    assert res.sample_uniques > 0
    assert res.model.fitted.sum() == pytest.approx(len(data), rel=1e-6)


def test_missing_keys_category_or_excluded():
    data = _data(400, seed=7).astype({"a": float})
    data.loc[[3, 10, 50], "a"] = np.nan
    cat = identification_risk(data, ["a", "b", "c"], sampling_fraction=0.1, missing="category")
    exc = identification_risk(data, ["a", "b", "c"], sampling_fraction=0.1, missing="exclude")
    assert cat.n == 400 and cat.cells == 4 * 4 * 5 and cat.missing == "category"
    assert exc.n == 397 and exc.excluded == 3 and exc.cells == 3 * 4 * 5
    assert exc.per_record.loc[[3, 10, 50], "r2"].isna().all()
    assert exc.per_record.loc[[3, 10, 50], "f"].eq(0).all()


@pytest.mark.slow
def test_census_two_way_fit_converges():
    from pramkit.datasets import census

    data = census()
    res = identification_risk(data, list(data.columns), sampling_fraction=0.05)
    assert res.model.converged and res.model.relative_margin_discrepancy <= 1e-4
    assert res.model.watched_distance <= 1e-6  # tau1, tau2 stable to 1e-6 (relative)
    assert res.cells == 2_566_080 and res.n == len(data)
    sizes = data.groupby(list(data.columns), observed=True).size()
    assert res.sample_uniques == int((sizes == 1).sum())
    assert 0 < res.tau1 < res.tau2 < res.sample_uniques


def test_original_file_route(key):
    data = _data(300, seed=8)
    rr = randomized_response([0, 1, 2, 3, 4], 1.5)
    released = data.copy()
    released["c"] = perturb_codes(data["c"].to_numpy(), rr, key=key, variable="c")
    manifest = Manifest.of({"c": rr})
    res = identification_risk(released, ["a", "b", "c"], sampling_fraction=0.02, manifest=manifest, original=data)
    assert res.fitted_to == "original"
    # by hand: model fitted to the original counts, pushed through M, summed over released uniques
    counts = np.zeros((3, 4, 5))
    np.add.at(counts, (data.a, data.b, data.c), 1)
    released_counts = np.zeros((3, 4, 5))
    np.add.at(released_counts, (released.a, released.b, released.c), 1)
    fit = fit_loglinear(counts, ["a", "b", "c"])
    risk = cell_risk(fit.fitted, 0.02, [None, None, rr.matrix])
    assert res.tau2 == pytest.approx(risk.r2[released_counts == 1].sum(), rel=1e-12)
    with pytest.raises(PramkitError, match="counted records"):
        identification_risk(released, ["a", "b", "c"], sampling_fraction=0.02, manifest=manifest,
                            original=data.iloc[:10])
    with pytest.raises(PramkitError, match="only used with a manifest"):
        identification_risk(released, ["a", "b", "c"], sampling_fraction=0.02, original=data)


def test_em_is_limited_to_small_tables(monkeypatch, key):
    import pramkit.risk.identification as ident

    monkeypatch.setattr(ident, "EM_MAX_CELLS", 10)
    data = _data(100)
    with pytest.raises(PramkitError, match="pass the original file"):
        identification_risk(data, ["a", "b", "c"], sampling_fraction=0.02,
                            manifest=Manifest.of({"c": randomized_response([0, 1, 2, 3, 4], 1.5)}))
