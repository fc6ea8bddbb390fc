"""Tuning epsilon to a risk threshold (risk/tuning.py) and the risk figures (risk/plots.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pramkit.design.classic import randomized_response
from pramkit.errors import PramkitError
from pramkit.risk.frequencies import key_table
from pramkit.risk.loglinear import fit_loglinear
from pramkit.risk.misclassified import cell_risk
from pramkit.risk.plots import count_frequencies, plot_fit, plot_risk_curve
from pramkit.risk.recognition import recognition_risk
from pramkit.risk.tuning import tune_epsilon


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.choice(4, n, p=[0.5, 0.3, 0.15, 0.05]),
        "b": rng.choice(3, n, p=[0.6, 0.3, 0.1]),
        "c": rng.choice(5, n, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
    })


def _tau2_after(data, eps, perturb):
    """Expected tau2 after randomized response at eps / len(perturb) per variable, computed from its parts."""
    table = key_table(data, ["a", "b", "c"])
    mu = fit_loglinear(table.dense_counts(), ["a", "b", "c"]).fitted
    mats = [randomized_response(list(cats), eps / len(perturb)).matrix if k in perturb else None
            for k, cats in zip(["a", "b", "c"], table.categories)]
    return cell_risk(mu, 0.01, mats).expected_tau2()


def test_tau2_threshold_is_met_at_the_boundary():
    data = _data()
    top = _tau2_after(data, 50.0, ["a", "c"])
    threshold = 0.5 * top
    res = tune_epsilon(data, ["a", "b", "c"], perturb=["a", "c"], threshold=threshold, sampling_fraction=0.01,
                       bounds=(0.05, 50.0), rtol=1e-4)
    assert res.monotone and not res.at_upper_bound
    assert _tau2_after(data, res.epsilon, ["a", "c"]) <= threshold
    assert _tau2_after(data, res.epsilon * (1 + 2e-4), ["a", "c"]) > threshold
    assert res.matrices["a"].epsilon + res.matrices["c"].epsilon == pytest.approx(res.epsilon)


def test_c1_threshold():
    data = _data(300, 1)
    res = tune_epsilon(data, ["a", "b", "c"], perturb=["a", "b", "c"], threshold=0.2, measure="c1",
                       bounds=(0.1, 30.0), rtol=1e-3)
    post = recognition_risk(data, ["a", "b", "c"], alpha=0.2, matrices=res.matrices, reduce=False).max_posterior
    assert post <= 0.2
    assert res.monotone


def test_unreachable_threshold():
    with pytest.raises(PramkitError, match="even epsilon"):
        tune_epsilon(_data(), ["a", "b", "c"], perturb=["a"], threshold=1e-9, sampling_fraction=0.01)
    with pytest.raises(PramkitError, match="perturb must list"):
        tune_epsilon(_data(), ["a", "b", "c"], perturb=["zz"], threshold=1.0, sampling_fraction=0.01)


def test_count_frequencies_identity():
    # expected numbers of cells with counts 0..largest sum to at most the number of cells
    data = _data()
    fit = fit_loglinear(key_table(data, ["a", "b", "c"]).dense_counts(), ["a", "b", "c"], model="independence")
    c, observed, expected = count_frequencies(fit, largest=400)
    assert observed.sum() == fit.observed.size
    assert expected.sum() == pytest.approx(fit.observed.size, rel=1e-9)
    assert (c * expected).sum() == pytest.approx(len(data), rel=1e-6)


def test_figures_are_png(tmp_path):
    data = _data()
    fit = fit_loglinear(key_table(data, ["a", "b", "c"]).dense_counts(), ["a", "b", "c"])
    res = tune_epsilon(data, ["a", "b", "c"], perturb=["a"], threshold=1.0, sampling_fraction=0.01, grid=5)
    for path in (plot_fit(fit, tmp_path / "fit.png"), plot_risk_curve(res, tmp_path / "curve.png")):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
