"""The DP-optimal certificate beyond Proposition 3.2: its claims checked in 50-digit arithmetic
against every arrangement of every vertex pattern at small S, and that it proves at S = 10 000."""

from __future__ import annotations

import itertools
import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.design.dp.optimal import dp_optimal, prop32_holds, vertex_patterns

_CTX = Context(prec=50)


def _xlogx(x: Fraction) -> Decimal:
    return Decimal(0) if x == 0 else _CTX.multiply(Decimal(x.numerator) / Decimal(x.denominator),
                                                   _CTX.ln(Decimal(x.numerator) / Decimal(x.denominator)))


def _exact_information(p: list[Fraction], q: list[Fraction]) -> Decimal:
    """Equation (9) for the exact doubles p and q: sum_x p_x sum_z M log M - sum_z m_z log m_z."""
    s = len(p)
    w = [(1 - qk) / (s - 1) for qk in q]
    rows = sum((Decimal(px.numerator) / Decimal(px.denominator)) * (_xlogx(qk) + (s - 1) * _xlogx(wk))
               for px, qk, wk in zip(p, q, w))
    big_w = sum(px * wk for px, wk in zip(p, w))
    return rows - sum(_xlogx(big_w + px * (qk - wk)) for px, qk, wk in zip(p, q, w))


def _feasible(q: list[Fraction], alpha: float) -> bool:
    """Every column's largest over smallest entry at most e^alpha (to a relative 1e-12, for levels
    computed in floating point on the boundary), in 50-digit arithmetic."""
    s = len(q)
    w = [(1 - qk) / (s - 1) for qk in q]
    bound = _CTX.exp(Decimal(alpha)) * (1 + Decimal("1e-12"))
    for j in range(s):
        col = [q[j]] + [w[k] for k in range(s) if k != j]
        ratio = max(col) / min(col) if min(col) > 0 else None
        if ratio is None or _CTX.divide(Decimal(ratio.numerator), Decimal(ratio.denominator)) > bound:
            return False
    return True


@given(st.integers(4, 6), st.lists(st.integers(1, 1000), min_size=6, max_size=6), st.floats(0.05, 8.0))
@settings(max_examples=10, deadline=None)
def test_certificate_claims_hold_against_every_arrangement(s, weights, beyond):
    p = np.array(weights[:s], dtype=float) / sum(weights[:s])
    alpha = math.log(s + math.sqrt(s * (s - 4)) - 2) - math.log(2) + beyond
    assert not prop32_holds(s, alpha)
    m = dp_optimal(p, alpha)
    cert = m.provenance.certificate
    pf = [Fraction(x) for x in p.tolist()]
    arrangements = {a for levels in vertex_patterns(s, alpha) for a in itertools.product(levels.tolist(), repeat=s)}
    feasible = [[Fraction(x) for x in a] for a in arrangements]
    best = max(_exact_information(pf, q) for q in feasible if _feasible(q, alpha))
    upper = Decimal(cert["upper_bound_nats"])
    assert best <= upper                                               # no vertex beats the bound
    stored = _exact_information(pf, [Fraction(x) for x in m.diagonal.tolist()])
    assert upper - stored <= Decimal(cert["certified_gap_nats"])       # the design is within the gap
    assert cert["optimal"] and cert["certified_gap_nats"] <= cert["tolerance_nats"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dirichlet", "zipf"])
def test_ten_thousand_categories_beyond_proposition_32_are_proved(kind):
    s = 10_000
    p = np.random.default_rng(3).dirichlet(np.ones(s)) if kind == "dirichlet" else 1.0 / np.arange(1, s + 1)
    p = p / p.sum()
    alpha = math.log(s) + 1.0
    assert not prop32_holds(s, alpha)
    m = dp_optimal(p, alpha)
    cert = m.provenance.certificate
    assert cert["optimal"] and cert["closed"] and cert["certified_gap_nats"] <= cert["tolerance_nats"]
    assert m.epsilon <= alpha
