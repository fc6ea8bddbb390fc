"""The METHODS dispatch table and measure(): one signature, one scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pramkit.design.bistochastic import compare_families
from pramkit.design.classic import keep_probability, sdcmicro_pram
from pramkit.design.methods import METHODS, measure
from pramkit.errors import PramkitError
from pramkit.matrix import PramMatrix

CATS = tuple("abcdefghijkl")
P = np.array([40, 3, 3, 10, 8, 1, 1, 2, 12, 9, 6, 5], float)


def loop_mi(p: np.ndarray, m: np.ndarray) -> float:
    p = p / p.sum()
    r = len(p)
    lam = [sum(p[u] * m[u, v] for u in range(r)) for v in range(r)]
    return sum(p[u] * m[u, v] * math.log(m[u, v] / lam[v])
               for u in range(r) for v in range(r) if m[u, v] > 0 and p[u] > 0)


def test_every_method_is_in_the_table_and_returns_a_matrix():
    assert set(METHODS) == {"invariant", "keep", "rr", "kanon", "tridiagonal", "circulant", "bistochastic-beta"}
    examples = {
        "invariant": {"pd": 0.8, "alpha": 0.5, "seed": 1},
        "keep": {"keep": 0.8, "bandwidth": 2},
        "rr": {"epsilon": 2.0},
        "kanon": {"k": 3, "gamma": 1e-6},
        "tridiagonal": {"beta": 0.3},
        "circulant": {"keep": 0.6},
        "bistochastic-beta": {"beta": 0.3, "family": "best"},
    }
    for name, params in examples.items():
        m = METHODS[name](CATS, P, params=params)
        assert isinstance(m, PramMatrix) and m.categories == CATS


def test_methods_build_the_documented_designs():
    assert METHODS["rr"](CATS, P, params={"epsilon": 2.0}).epsilon == pytest.approx(2.0)
    assert measure(METHODS["rr"](CATS, P, params={"beta": 0.45})).beta == pytest.approx(0.45, abs=1e-9)
    assert METHODS["keep"](CATS, P, params={"keep": 0.7, "bandwidth": 1}) == keep_probability(CATS, 0.7, bandwidth=1)
    assert METHODS["invariant"](CATS, P, params={"seed": 5}) == sdcmicro_pram(CATS, P, pd=0.8, alpha=0.5, seed=5)
    kanon = METHODS["kanon"](CATS, P, params={"k": "3"})  # strings from a command line are accepted
    assert measure(kanon).beta == pytest.approx(math.log2(3) / math.log2(12))
    best = METHODS["bistochastic-beta"](CATS, P, params={"beta": 0.3})
    assert best == compare_families(CATS, P, 0.3).fits[0].matrix
    tri = METHODS["bistochastic-beta"](CATS, P, params={"beta": 0.3, "family": "tridiagonal"})
    assert tri.provenance.method == "tridiagonal"
    # None means "option not given".
    assert METHODS["rr"](CATS, P, params={"epsilon": 1.0, "beta": None}).epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("name,params,match", [
    ("rr", {"epsilon": 1.0, "beta": 0.5}, "exactly one"),
    ("rr", {}, "exactly one"),
    ("rr", {"k": 3, "epsilon": 1.0}, "does not take k"),
    ("keep", {}, "needs keep"),
    ("kanon", {"k": 2.5}, "whole number"),
    ("circulant", {"keep": "high"}, "must be a number"),
    ("bistochastic-beta", {"beta": 0.3, "family": "laplace"}, "family"),
    ("tridiagonal", {"beta": 0.9}, "at most"),
    ("invariant", {"pd": 1.5}, "pd"),
])
def test_bad_options_raise_messages_that_say_what_to_change(name, params, match):
    with pytest.raises(PramkitError, match=match):
        METHODS[name](CATS, P, params=params)


def test_measure_puts_old_settings_on_the_bistochastic_scale():
    inv = METHODS["invariant"](CATS, P, params={"pd": 0.8, "alpha": 1.0, "diagonal": "fixed"})
    mi = measure(inv, P)
    assert mi.invariant is True and mi.bistochastic is False and mi.beta is None
    assert mi.epsilon == inv.epsilon and math.isfinite(mi.epsilon)
    assert mi.mutual_information_nats == pytest.approx(loop_mi(P, inv.matrix), rel=1e-10)
    assert mi.min_diagonal < 0.8  # pd is not a floor on the released matrix's diagonal
    rr = measure(METHODS["rr"](CATS, P, params={"epsilon": 3.0}), P)
    assert rr.bistochastic and rr.truthful and rr.invariant is False
    assert rr.beta == pytest.approx(rr.entropy_rate_bits / math.log2(12))
    # A bistochastic matrix leaves the uniform distribution unchanged.
    assert measure(METHODS["tridiagonal"](CATS, P, params={"alpha": 0.2}), np.ones(12)).invariant is True
    bare = measure(PramMatrix.identity(CATS))
    assert bare.mutual_information_nats is None and bare.invariant is None and bare.beta == 0.0
    with pytest.raises(PramkitError):
        measure(inv, P[:5])
