"""The branch and bound over the split between the two middle levels
(pramkit.design.dp_split_bound): from no incumbent and from a wrong one,
against scoring every split; its certificate at large S against random
and single-move alternatives; the tangent envelope it rests on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pramkit.design import dp_optimal as dpo
from pramkit.design.dp_optimal import LEVEL_TOL, dp_optimal, solve_form8, vertex_patterns
from pramkit.design.dp_split_bound import _tangent_envelope, bound_split
from pramkit.information import form8_objective, mutual_information_form8


def random_p(rng, s, kind):
    if kind == 0:
        p = rng.dirichlet(np.ones(s))
    elif kind == 1:
        p = rng.dirichlet(np.full(s, 0.15))
    elif kind == 2:
        p = rng.uniform(0.4, 0.9) ** np.arange(s)
    elif kind == 3:
        p = rng.integers(0, 4, size=s).astype(float)   # ties and zeros
        p[0] += 1.0
    else:
        p = np.concatenate([[rng.uniform(5, 40)], np.ones(s - 1)])
    return p / p.sum()


def two_level_cases(rng, n, s_range):
    """(p, pattern values, singles, rest) for every placement of every
    pattern with two middle levels, random p and alpha (truthful sometimes)."""
    for i in range(n):
        s = int(rng.integers(*s_range))
        p = random_p(rng, s, i % 5)
        a = float(np.exp(rng.uniform(np.log(0.01), np.log(9.0))))
        for vals in vertex_patterns(s, a, truthful=i % 4 == 0):
            if vals[1] - vals[2] <= LEVEL_TOL:
                continue
            order = np.argsort(-p, kind="stable")
            for singles, rest in dpo._placements(p, vals, order):
                yield p, vals, [(z, float(vals[l])) for z, l in singles], rest


def every_split(p, vals, singles, rest):
    bits = (np.arange(2 ** rest.size)[:, None] >> np.arange(rest.size)[None, :]) & 1
    q = np.empty((len(bits), p.size))
    for z, level in singles:
        q[:, z] = level
    q[:, rest] = np.where(bits == 1, vals[1], vals[2])
    return form8_objective(p, q)


def test_bound_split_solves_from_no_incumbent():
    """With no incumbent the branch and bound is a solver: it must reach the
    best of all 2^|R| splits, and its bound must not be below it."""
    rng = np.random.default_rng(11)
    cases = 0
    for p, vals, singles, rest in two_level_cases(rng, 120, (4, 12)):
        best = float(every_split(p, vals, singles, rest).max())
        res = bound_split(p, singles, rest, float(vals[1]), float(vals[2]), -math.inf, 1e-12)
        assert res.closed
        assert res.best_value == pytest.approx(best, abs=1e-12)
        assert res.upper_bound >= best - 1e-12
        assert mutual_information_form8(p, res.best_q) == pytest.approx(best, abs=1e-12)
        cases += 1
    assert cases > 100


def test_bound_split_never_certifies_a_wrong_incumbent():
    """Given the second-best split's value as incumbent (as if another
    pattern had reached it), the search must still find the best split."""
    rng = np.random.default_rng(12)
    for p, vals, singles, rest in two_level_cases(rng, 60, (5, 11)):
        f = np.sort(every_split(p, vals, singles, rest))
        if f[-1] - f[-2] <= 1e-10:
            continue
        res = bound_split(p, singles, rest, float(vals[1]), float(vals[2]), float(f[-2]), 1e-13)
        assert res.best_q is not None and res.best_value == pytest.approx(f[-1], abs=1e-12)


def test_certificate_at_large_s():
    """S = 300: the certificate is closed with a gap within the tie tolerance,
    and random splits and single moves of the optimum never beat it."""
    rng = np.random.default_rng(14)
    p = rng.dirichlet(np.full(300, 0.3))
    m = dp_optimal(p, 0.7)
    cert = m.provenance.certificate
    assert cert["search"] == "branch_and_bound" and cert["optimal"] is True
    assert 0.0 <= cert["certified_gap_nats"] <= 1e-12 * max(1.0, m.provenance.objective)
    assert cert["upper_bound_nats"] >= m.provenance.objective
    assert cert["bound_nodes"] >= 1
    q = m.diagonal
    levels = sorted(set(np.round(q, 14)))
    hi, lo = max(levels), min(levels)
    for z in rng.choice(300, size=30, replace=False):
        moved = q.copy()
        moved[z] = lo if abs(q[z] - hi) < 1e-12 else hi
        assert mutual_information_form8(p, moved) <= m.provenance.objective + 1e-12
    for _ in range(200):
        rand = np.where(rng.random(300) < rng.random(), hi, lo)
        assert mutual_information_form8(p, rand) <= m.provenance.objective + 1e-12


def test_tangent_envelope_bounds_a_concave_function():
    """The envelope lies above the function it bounds, vertical tangents included."""
    rng = np.random.default_rng(15)
    for _ in range(200):
        c1, c2 = rng.uniform(0.01, 1.0, size=2)
        g = lambda x: -(x + c1) * np.log(x + c1) - c2 * x ** 2   # concave  # noqa: E731
        dg = lambda x: -1.0 - np.log(x + c1) - 2 * c2 * x         # noqa: E731
        lo, hi = sorted(rng.uniform(0.0, 2.0, size=2))
        x = np.linspace(lo, hi, 101)
        env = _tangent_envelope(x, lo, hi, g(lo), dg(lo), g(hi), dg(hi))
        assert np.all(env >= g(x) - 1e-12)
    # a vertical tangent at the left end (eta'(0) = -inf makes the slope +inf)
    x = np.linspace(0.0, 1.0, 51)
    f = lambda t: -t * np.log(np.maximum(t, 1e-300))   # noqa: E731
    env = _tangent_envelope(x, 0.0, 1.0, 0.0, math.inf, f(1.0), -1.0)
    assert np.all(env >= f(x) - 1e-12)


@pytest.mark.parametrize("alpha", [0.01, 1.0, 5.0, 40.0, 300.0])
def test_degenerate_distributions_are_proved(alpha):
    """A point mass, uniform p, two equal categories and zeros, one dominant
    category: released masses of exactly 0 (a point mass at large alpha)
    must not leave the bound infinite; the optimum equals exhaustive scoring."""
    s = 14
    for p in (np.eye(s)[0], np.full(s, 1 / s), np.r_[0.5, 0.5, np.zeros(s - 2)],
              np.r_[0.9, np.full(s - 1, 0.1 / (s - 1))]):
        bb = solve_form8(p, alpha, search="branch_and_bound")
        ex = solve_form8(p, alpha, search="exhaustive")
        assert bb.proved and math.isfinite(bb.upper_bound)
        assert bb.mutual_information_nats == pytest.approx(ex.mutual_information_nats, abs=1e-12)
