"""The classic and bistochastic families of the registry, and measure(): one signature, one scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pramkit.design.bistochastic.families import compare_families
from pramkit.design.classic import keep_probability, sdcmicro_pram
from pramkit.design.measures import measure
from pramkit.design.registry import FAMILIES
from pramkit.errors import ParameterError, PramkitError
from pramkit.matrix import PramMatrix

CATS = tuple("abcdefghijkl")
P = np.array([40, 3, 3, 10, 8, 1, 1, 2, 12, 9, 6, 5], float)
CLASSIC = ("invariant", "keep", "rr", "kanon", "tridiagonal", "circulant", "bistochastic-beta")


def build(name: str, options: dict, epsilon: float | None = None) -> PramMatrix:
    return FAMILIES[name].build(CATS, P / P.sum(), epsilon, options)


def loop_mi(p: np.ndarray, m: np.ndarray) -> float:
    p = p / p.sum()
    r = len(p)
    lam = [sum(p[u] * m[u, v] for u in range(r)) for v in range(r)]
    return sum(p[u] * m[u, v] * math.log(m[u, v] / lam[v])
               for u in range(r) for v in range(r) if m[u, v] > 0 and p[u] > 0)


def test_every_classic_family_is_registered_and_returns_a_matrix():
    assert set(CLASSIC) <= set(FAMILIES)
    examples = {
        "invariant": ({"pd": 0.8, "alpha": 0.5, "seed": 1}, None),
        "keep": ({"keep": 0.8, "bandwidth": 2}, None),
        "rr": ({}, 2.0),
        "kanon": ({"k": 3, "gamma": 1e-6}, None),
        "tridiagonal": ({"beta": 0.3}, None),
        "circulant": ({"keep": 0.6}, None),
        "bistochastic-beta": ({"beta": 0.3, "family": "best"}, None),
    }
    for name, (options, epsilon) in examples.items():
        m = build(name, options, epsilon)
        assert isinstance(m, PramMatrix) and m.categories == CATS


def test_families_build_the_documented_designs():
    assert build("rr", {}, 2.0).epsilon == pytest.approx(2.0)
    assert measure(build("rr", {"beta": 0.45})).beta == pytest.approx(0.45, abs=1e-9)
    assert build("keep", {"keep": 0.7, "bandwidth": 1}) == keep_probability(CATS, 0.7, bandwidth=1)
    assert build("invariant", {"seed": 5}) == sdcmicro_pram(CATS, P, pd=0.8, alpha=0.5, seed=5)
    kanon = build("kanon", {"k": 3})
    assert measure(kanon).beta == pytest.approx(math.log2(3) / math.log2(12))
    best = build("bistochastic-beta", {"beta": 0.3})
    assert best == compare_families(CATS, P, 0.3).fits[0].matrix
    tri = build("bistochastic-beta", {"beta": 0.3, "family": "tridiagonal"})
    assert tri.provenance.method == "tridiagonal"
    # None means "option not given".
    assert build("rr", {"beta": None}, 1.0).epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("name,params,epsilon,match", [
    ("rr", {"beta": 0.5}, 1.0, "takes no share of the budget"),
    ("rr", {}, None, "give epsilon"),
    ("rr", {"k": 3}, 1.0, "does not take k"),
    ("rr", {"epsilon": 1.0}, None, "does not take epsilon; its options are beta"),
    ("keep", {}, None, "needs keep"),
    ("kanon", {"k": 2.5}, None, "whole number"),
    ("kanon", {"k": "3"}, None, "k must be a whole number >= 1, got the str '3'"),
    ("kanon", {"k": 2, "beta": 0.5}, None, "exactly one of k and beta"),
    ("circulant", {"keep": "high"}, None, "keep must be a number in"),
    ("bistochastic-beta", {"beta": 0.3, "family": "laplace"}, None, "family must be one of"),
    ("invariant", {"pd": 1.5}, None, "pd must be a number in"),
])
def test_bad_options_raise_messages_that_say_what_to_change(name, params, epsilon, match):
    with pytest.raises(ParameterError, match=match):
        build(name, params, epsilon)


def test_a_beta_out_of_the_family_reach_is_said():
    with pytest.raises(PramkitError, match="at most"):
        build("tridiagonal", {"beta": 0.9})


def test_measure_puts_old_settings_on_the_bistochastic_scale():
    inv = build("invariant", {"pd": 0.8, "alpha": 1.0, "diagonal": "fixed"})
    mi = measure(inv, P)
    assert mi.invariant is True and mi.bistochastic is False and mi.beta is None
    assert mi.epsilon == inv.epsilon and math.isfinite(mi.epsilon)
    assert mi.mutual_information_nats == pytest.approx(loop_mi(P, inv.matrix), rel=1e-10)
    assert mi.min_diagonal < 0.8  # pd is not a floor on the released matrix's diagonal
    rr = measure(build("rr", {}, 3.0), P)
    assert rr.bistochastic and rr.truthful and rr.invariant is False
    assert rr.beta == pytest.approx(rr.entropy_rate_bits / math.log2(12))
    # A bistochastic matrix leaves the uniform distribution unchanged.
    assert measure(build("tridiagonal", {"alpha": 0.2}), np.ones(12)).invariant is True
    bare = measure(PramMatrix.identity(CATS))
    assert bare.mutual_information_nats is None and bare.invariant is None and bare.beta == 0.0
    with pytest.raises(PramkitError):
        measure(inv, P[:5])


@pytest.mark.parametrize("q,w", [
    ([0.8] * 5, [0.05] * 5),                                   # randomized response: bistochastic
    ([0.9, 0.5, 0.7, 0.6], [0.1 / 3, 0.5 / 3, 0.1, 0.4 / 3]),  # keep probabilities: not bistochastic
    ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]),                        # the identity: zeros
])
def test_measure_of_a_compact_matrix_is_that_of_its_dense_array(q, w):
    """The O(S) measures of a form (8) matrix against those of the same entries stored densely."""
    compact = PramMatrix.form8(q, w)
    dense = PramMatrix(compact.matrix)
    p = np.arange(1.0, len(q) + 1)
    for given in (None, p, np.ones(len(q))):
        a, b = measure(compact, given), measure(dense, given)
        for field in ("beta", "entropy_rate_bits", "mutual_information_nats"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None) == (y is None) and (x is None or x == pytest.approx(y, rel=1e-12, abs=1e-15)), field
        for field in ("epsilon", "min_diagonal", "truthful", "bistochastic", "invariant"):
            assert getattr(a, field) == getattr(b, field), field
