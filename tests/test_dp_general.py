"""General epsilon-DP matrices by the staircase LP (Kairouz, Oh and Viswanath 2016)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from pramkit.design.dp.general import MAX_CATEGORIES, column_utility, dp_general, staircase_patterns
from pramkit.design.dp.optimal import dp_optimal
from pramkit.errors import PramkitError
from pramkit.information import mutual_information


def test_column_utility_sums_to_mutual_information():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4))
    m = rng.dirichlet(np.ones(4), size=4)
    assert column_utility(p, m.T).sum() == pytest.approx(mutual_information(p, m), abs=1e-14)


def test_patterns_are_all_binary_vectors():
    b = staircase_patterns(3)
    assert b.shape == (8, 3) and len({tuple(r) for r in b}) == 8


@pytest.mark.parametrize("s", [2, 3, 5, 8])
def test_valid_exact_epsilon_and_at_least_form8(s):
    rng = np.random.default_rng(s)
    for a in (0.1, 1.0, 4.0):
        p = rng.dirichlet(np.ones(s))
        m = dp_general(p, a)
        cert = m.provenance.certificate
        assert m.epsilon <= a + 1e-12
        assert m.provenance.objective == pytest.approx(mutual_information(p, m.matrix), abs=1e-14)
        # LP optimality certificate: weak duality with the dual values
        assert cert["max_dual_violation"] <= 1e-7
        assert cert["dual_bound_nats"] == pytest.approx(cert["lp_objective_nats"], abs=1e-9)
        assert m.provenance.objective == pytest.approx(cert["lp_objective_nats"], abs=1e-9)
        form8 = dp_optimal(p, a).provenance.objective
        assert m.provenance.objective >= form8 - 1e-9
        if s == 2:  # every 2 x 2 matrix has form (8)
            assert m.provenance.objective == pytest.approx(form8, abs=1e-9)



@pytest.mark.parametrize("s", [2, 3])
def test_local_optimisation_over_general_dp_matrices_never_beats_the_lp(s):
    """SLSQP from random starts over all S x S row-stochastic matrices with
    the DP constraints M[k, j] <= e^a M[l, j]: an independent optimiser."""
    rng = np.random.default_rng(10 + s)
    for a in (0.5, 2.0):
        p = rng.dirichlet(np.ones(s))
        lp = dp_general(p, a).provenance.objective
        t = np.exp(a)
        pairs = [(k, l, j) for j in range(s) for k in range(s) for l in range(s) if k != l]
        cons = [
            {"type": "ineq", "fun": lambda x: np.array([t * x.reshape(s, s)[l, j] - x.reshape(s, s)[k, j]
                                                        for k, l, j in pairs])},
            {"type": "eq", "fun": lambda x: x.reshape(s, s).sum(axis=1) - 1},
        ]
        best = 0.0
        for _ in range(15):
            x0 = rng.dirichlet(np.ones(s), size=s).ravel()
            res = minimize(lambda x: -mutual_information(p, np.clip(x.reshape(s, s), 1e-300, 1)), x0,
                           constraints=cons, bounds=[(0, 1)] * (s * s), method="SLSQP")
            m = np.clip(res.x.reshape(s, s), 0, 1)
            m /= m.sum(axis=1, keepdims=True)
            ratios = m.max(axis=0) / np.maximum(m.min(axis=0), 1e-300)
            if np.all(ratios <= t * (1 + 1e-6)):
                best = max(best, mutual_information(p, m))
        assert best <= lp + 1e-6
        assert best >= lp - 0.05  # the local optimiser gets close: the LP is not loose


def test_random_dp_matrices_never_beat_the_lp():
    rng = np.random.default_rng(3)
    s, a = 3, 1.0
    p = rng.dirichlet(np.ones(s))
    lp = dp_general(p, a).provenance.objective
    m = rng.dirichlet(np.full(s, 30.0), size=(20000, s))
    eps = np.log(m.max(axis=1) / m.min(axis=1)).max(axis=1)
    ok = m[eps <= a]
    assert len(ok) > 100
    r = np.einsum("k,nkj->nj", p, ok)
    mi = (p[None, :, None] * ok * np.log(ok / r[:, None, :])).sum(axis=(1, 2))
    assert mi.max() <= lp + 1e-12


def test_form8_gap_reported():
    p = np.array([0.6, 0.3, 0.1])
    m = dp_general(p, 1.0)
    cert = m.provenance.certificate
    assert cert["form8_gap_nats"] == pytest.approx(m.provenance.objective - dp_optimal(p, 1.0).provenance.objective, abs=1e-12)


def test_bad_input():
    with pytest.raises(PramkitError, match="form \\(8\\)"):
        dp_general(np.full(MAX_CATEGORIES + 1, 1 / (MAX_CATEGORIES + 1)), 1.0)
    with pytest.raises(PramkitError):
        dp_general([0.5, 0.5], -1.0)
    with pytest.raises(PramkitError):
        dp_general([0.5, 0.6], 1.0)
