"""The truncated geometric mechanism stored by its rate: closed forms against the dense matrix
written out independently, and the table-free sampler against the rows by goodness of fit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from pramkit import Manifest, PramMatrix
from pramkit.engine.perturb import perturb_codes
from pramkit.engine.sampling import GeometricSampler
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import PerturbedVariable
from pramkit.privacy.epsilon import matrix_epsilon

KEY = SecretKey(b"geometric form test key 32 bytes", "test")


def plain(s: int, rate: float) -> np.ndarray:
    """M[x, z] = P(clamp(x + N) = z) by summing the two-sided geometric law over N, entry by entry."""
    a = math.exp(-rate)
    law = lambda k: (1 - a) / (1 + a) * a ** abs(k)  # noqa: E731
    m = np.zeros((s, s))
    for x in range(s):
        for k in range(-s - 60, s + 60):  # beyond +-(s + 60) the mass is below 1e-16 for these rates
            m[x, min(max(x + k, 0), s - 1)] += law(k)
    return m


@pytest.mark.parametrize("s, rate", [(2, 0.7), (3, 1.0), (7, 0.5), (12, 2.0)])
def test_the_entries_and_closed_forms_match_the_law_summed_out(s, rate):
    m = PramMatrix.truncated_geometric(rate, list(range(s)))
    dense = plain(s, rate)
    assert np.allclose(m.matrix, dense, rtol=1e-12, atol=1e-15)
    assert np.allclose(m.diagonal, np.diagonal(dense), rtol=1e-12)
    assert m.is_bistochastic == bool(np.allclose(dense.sum(axis=0), 1, atol=1e-9))
    assert m.is_truthful == bool(np.all(np.diagonal(dense) >= dense.max(axis=1) - 1e-15))
    exact = matrix_epsilon(dense)
    assert m.epsilon >= exact - 1e-12 and m.epsilon == pytest.approx(exact, rel=1e-9)
    assert m.epsilon == pytest.approx(rate * (s - 1), rel=1e-15)
    adjacent = np.max(np.abs(np.log(dense[1:] / dense[:-1])))
    assert adjacent == pytest.approx(rate, rel=1e-9)  # metric epsilon per step


@pytest.mark.parametrize("x", [0, 1, 4, 8])
def test_the_sampler_draws_each_row(x):
    s, rate, n = 9, 0.6, 200_000
    m = PramMatrix.truncated_geometric(rate, list(range(s)))
    rng = np.random.default_rng(x)
    out = np.empty(n, dtype=np.intp)
    GeometricSampler(s, rate).draw(np.full(n, x), rng.bit_generator.random_raw(n), out)
    observed = np.bincount(out, minlength=s)
    assert chisquare(observed, n * m.matrix[x]).pvalue > 1e-4
    wrong = PramMatrix.truncated_geometric(rate * 1.1, list(range(s))).matrix[x]  # power: 10 % off is rejected
    assert chisquare(observed, n * wrong).pvalue < 1e-6


def test_a_hundred_thousand_categories_need_no_table(tmp_path):
    s = 100_000
    m = PramMatrix.truncated_geometric(0.05, [f"c{i}" for i in range(s)])
    codes = np.random.default_rng(1).integers(0, s, 1_000_000)
    released = perturb_codes(codes, m, key=KEY, variable="v")
    moved = released - codes
    assert released.min() >= 0 and released.max() < s
    assert abs(np.mean(np.abs(moved)) - 2 * math.exp(-0.05) / (1 - math.exp(-2 * 0.05))) < 0.2  # E|N|
    path = Manifest((PerturbedVariable("v", m),)).write(tmp_path / "m.json")
    assert path.stat().st_size < 3_000_000
    data = json.loads(path.read_text())
    assert data["variables"][0]["form"] == "truncated_geometric"
    again = Manifest.read(path)["v"].matrix
    assert again == m and again.epsilon == m.epsilon
    assert np.array_equal(perturb_codes(codes, again, key=KEY, variable="v"), released)


@pytest.mark.parametrize("rate, s", [(0.0, 3), (-1.0, 3), (math.inf, 3), (1.0, 1)])
def test_bad_parameters(rate, s):
    with pytest.raises(Exception, match="truncated geometric"):
        PramMatrix.truncated_geometric(rate, list(range(s)))


@pytest.mark.parametrize("s", [4, 3048])
def test_the_metric_family_stores_a_geometric_design_by_its_rate(s):
    """At every size (4 and 3048 categories) the metric family's geometric design is stored by its rate,
    so the engine samples the formula itself (pramkit.engine.realised_law: exact)."""
    import pandas as pd

    from pramkit.engine import realised_law
    from pramkit.release.pipeline import design_release

    cats = [f"b{i:05d}" for i in range(s)]
    d = pd.DataFrame({"v": np.array(cats)[np.random.default_rng(2).integers(0, s, 50_000)]})
    m = design_release(d, ["v"], method="metric", options={"metric_epsilon": 0.3, "mechanism": "geometric"},
                       categories={"v": cats})
    v = m["v"].matrix
    assert v.geometric_rate == 0.3 and v.provenance.certificate["metric_dp_verified"] is True
    assert realised_law(v).exact
    assert m.record_epsilon == v.epsilon and v.epsilon == pytest.approx(0.3 * (s - 1))
    assert "e^" in m.guarantee
    again = Manifest.from_dict(json.loads(m.to_json()))
    assert again["v"].matrix.geometric_rate == 0.3
