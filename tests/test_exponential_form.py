"""The exponential mechanism stored by its rate and the public distances (PramMatrix.exponential).

Checked against things built here: the dense formula, brute-force epsilons of the doubles, the
exact law's distribution function in fractions, and draws against each row's law.
"""

from __future__ import annotations

import json
import math
import pickle
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.design.metric.mechanisms import exponential_mechanism, row_measures
from pramkit.distances import Distances, euclidean_distances, great_circle_distances, ordinal_distances
from pramkit.engine import realised_law
from pramkit.engine.perturb import perturb_codes
from pramkit.engine.sampling import ExponentialSampler, sampler_for, words_of
from pramkit.errors import ManifestError
from pramkit.manifest import PerturbedVariable, _variable_from_dict
from pramkit.matrix import PramMatrix
from pramkit.privacy.metric import metric_epsilon


def _dense_formula(rate: float, d: np.ndarray) -> np.ndarray:
    w = np.exp(-rate * d / 2.0)
    return w / w.sum(axis=1, keepdims=True)


def _brute_epsilons(m: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """Pure and metric epsilon of a positive matrix, every triple (float logs)."""
    logm = np.log(m)
    diff = logm[:, None, :] - logm[None, :, :]          # [x, x', z]
    pure = float(diff.max())
    off = ~np.eye(len(m), dtype=bool)
    metric = float((diff.max(axis=2)[off] / d[off]).max())
    return pure, metric


def test_rows_are_the_formula_and_nothing_dense_is_stored() -> None:
    rng = np.random.default_rng(3)
    d = euclidean_distances([f"a{i}" for i in range(40)], rng.random((40, 2)) * 30, unit="km")
    m = PramMatrix.exponential(0.4, d)
    assert m.__dict__.get("_dense_cache") is None and d.points is not None
    dense = _dense_formula(0.4, np.hypot(*(d.points[:, None, :] - d.points[None, :, :]).transpose(2, 0, 1)))
    assert np.allclose(m.exponential_rows(np.arange(40)), dense, rtol=1e-13)
    assert np.array_equal(m.matrix, m.exponential_rows(np.arange(40)))
    assert np.allclose(m.diagonal, np.diagonal(dense), rtol=1e-13)
    assert m.is_truthful and m.form8_q is None and not m.is_bistochastic


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 14), st.floats(0.05, 3.0), st.integers(0, 2**32 - 1), st.sampled_from(["xy", "line", "sphere"]))
def test_closed_form_bounds_hold_on_random_metrics(s: int, rate: float, seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    cats = [f"c{i}" for i in range(s)]
    if kind == "xy":
        d = euclidean_distances(cats, rng.random((s, 2)) * rng.uniform(0.1, 10))
    elif kind == "line":
        d = ordinal_distances(cats, np.cumsum(rng.uniform(0.1, 3, s)))
    else:
        d = great_circle_distances(cats, np.column_stack([rng.uniform(-60, 60, s), rng.uniform(-170, 170, s)]))
    rate = min(rate, 600.0 / d.max)
    m = PramMatrix.exponential(rate, d)
    pure, metric = _brute_epsilons(_dense_formula(rate, d.matrix), d.matrix)
    slack = 1e-9 * max(1.0, pure)      # the brute force itself is in doubles
    assert m.epsilon >= pure - slack
    assert m.epsilon <= rate * d.max * (1 + 1e-12)
    assert metric_epsilon(m, d).value >= metric - 1e-9 * max(1.0, metric) / d.min_positive
    assert realised_law(m).exact and realised_law(m).epsilon == m.epsilon


def _exact_cdf(rate: float, drow: np.ndarray) -> list:
    """The exact law's distribution function bounds, by mpmath-free high precision: decimal at 60 digits."""
    from decimal import Context, Decimal

    ctx = Context(prec=60)
    w = [ctx.exp(ctx.minus(ctx.multiply(ctx.divide(Decimal(rate), 2), Decimal(x)))) for x in drow.tolist()]
    total = sum(w, Decimal(0))
    run, out = Decimal(0), []
    for x in w:
        run += x
        out.append(run / total)
    return out


def test_fast_and_exact_paths_agree_with_the_exact_cdf() -> None:
    d = ordinal_distances(range(60))
    m = PramMatrix.exponential(0.5, d)
    sampler = ExponentialSampler(m)
    cdf = _exact_cdf(m.exponential_rate, d.rows([7])[0])
    rng = np.random.default_rng(5)
    words = rng.bit_generator.random_raw(400)
    # words placed right at the boundaries of the law, where 62 bits may not decide
    edges = [int(float(c) * 2**62) << 2 for c in cdf[:-1]]
    words = np.concatenate([words, np.array(edges, dtype=np.uint64)])
    out = np.empty(words.size, dtype=np.intp)
    sampler.draw(np.full(words.size, 7), words, out, more=lambda i: iter(rng.bit_generator.random_raw(50).tolist()))
    for w, got in zip(words.tolist(), out.tolist()):
        u = (w >> 2) / 2**62
        first = next(z for z, c in enumerate(cdf) if u < float(c) or z == len(cdf) - 1)
        if abs(u - float(cdf[first])) > 1e-15 and (first == 0 or abs(u - float(cdf[first - 1])) > 1e-15):
            assert got == first
        exact = sampler._exact(7, w >> 2, iter(np.random.default_rng(1).bit_generator.random_raw(50).tolist()))
        assert abs(exact - got) <= 1 and (exact == got or abs(u - float(cdf[min(exact, got)])) < 1e-15)


def test_draws_follow_the_row_law_chi_square() -> None:
    from scipy.stats import chisquare

    d = euclidean_distances("abcdefgh", np.random.default_rng(8).random((8, 2)) * 4)
    m = PramMatrix.exponential(0.9, d)
    words = np.random.default_rng(9).bit_generator.random_raw(200_000)
    out = np.empty(words.size, dtype=np.intp)
    codes = np.repeat([2, 5], words.size // 2)
    sampler_for(m).draw(codes, words, out)
    for k in (2, 5):
        seen = np.bincount(out[codes == k], minlength=8)
        law = _dense_formula(m.exponential_rate, d.matrix)[k]
        assert chisquare(seen, law * seen.sum()).pvalue > 1e-4


def test_far_tails_no_longer_exceed_the_target() -> None:
    """200 ordinal categories at 0.5: the quantised dense law reached log 2; the exact law stays within."""
    d = ordinal_distances(range(200))
    m = exponential_mechanism(d, 0.5)
    assert m.exponential_rate is not None
    cert = m.provenance.certificate
    assert cert["metric_epsilon_realised"] <= 0.5 and cert["metric_dp_verified_realised"]
    dense = PramMatrix(m.matrix)
    assert metric_epsilon(realised_law(dense).units.astype(float), d).value > 0.6    # what the units did
    assert realised_law(m).exact


def test_design_and_law_use_no_s_by_s_array() -> None:
    s = 3000
    xy = np.random.default_rng(0).random((s, 2)) * 100
    tracemalloc.start()
    try:
        m = exponential_mechanism(euclidean_distances([f"a{i}" for i in range(s)], xy, unit="km"), 0.5)
        _ = m.epsilon, realised_law(m).epsilon, m.min_diagonal
        ExponentialSampler(m).cdf(np.arange(64))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < s * s * 8 / 4, peak


def test_manifest_round_trip_and_bad_input() -> None:
    d = euclidean_distances(["n", "s", "e", "w"], [[0, 1], [0, -1], [1, 0], [-1, 0]], unit="km")
    m = exponential_mechanism(d, 0.7)
    entry = json.loads(json.dumps(PerturbedVariable("area", m).to_dict()))
    assert entry["form"] == "exponential" and entry["realised_law"]["exact"]
    back = _variable_from_dict(entry, "variables[0]").matrix
    assert back == m and pickle.loads(pickle.dumps(back)) == m
    bad = [({"rate": "fast"}, "rate"), ({"distances": []}, "distances"),
           ({"distances": {**entry["distances"], "points": [[0, 1], [0, 1], [1, 0], [-1, 0]]}}, "= 0"),
           ({"distances": {**entry["distances"], "points": [[0, "x"]] * 4}}, "numbers"),
           ({"distances": {**entry["distances"], "edges": [[0, 1]]}}, "edges"),
           ({"epsilon": 0.1}, "epsilon")]
    for change, words in bad:
        with pytest.raises(ManifestError, match=words):
            _variable_from_dict({**entry, **change}, "variables[0]")


def test_real_ages_released_reproducibly(sdc_data, key) -> None:
    ages = pd.read_csv(sdc_data / "testdata.csv")["age"]
    cats = sorted(int(a) for a in ages.dropna().unique())
    m = exponential_mechanism(ordinal_distances(cats), 0.3)
    codes = np.array([cats.index(int(a)) if a == a else -1 for a in ages])
    first = perturb_codes(codes, m, key=key, variable="age")
    assert np.array_equal(first, perturb_codes(codes, m, key=key, variable="age"))
    assert np.array_equal(first[codes < 0], codes[codes < 0])
    moved = np.abs(first[codes >= 0] - codes[codes >= 0])
    rows = row_measures(m, ordinal_distances(cats))
    expected = float(rows.distance[codes[codes >= 0]].mean())
    assert abs(moved.mean() - expected) < 6 * moved.std() / math.sqrt(moved.size)
    steps = Distances(cats, None, "ordinal", "step", points=np.arange(len(cats)))
    assert steps.same(ordinal_distances(cats)) and not steps.same(ordinal_distances(cats, np.arange(len(cats)) * 2.0))
