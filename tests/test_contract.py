"""One contract for every design family and every result the commands print.

Every family of :data:`pramkit.design.registry.FAMILIES` (and the recognition design)
goes through :func:`pramkit.design_release` and the same checks: a valid matrix per
variable with provenance, a manifest that survives a JSON round trip, a record epsilon
within the budget (exactly, in rational arithmetic of the stored doubles), and a
design record whose ``to_dict()`` is strict JSON.  Every result type with a
``to_dict()`` is strict JSON (no NaN, no infinity), which is what the CLI prints.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import numpy as np
import pytest

import pramkit
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.registry import FAMILIES
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix

VARS = ["sex", "marital_status"]
CODEBOOK = {v: CENSUS_VARIABLES[v] for v in VARS}

#: Each family with options that keep its epsilon finite, and a record budget that holds it.
CASES = {
    "dp": ({}, 2.0), "rr": ({}, 2.0), "invariant": ({"seed": 1}, 40.0), "keep": ({"keep": 0.8}, 40.0),
    "kanon": ({"k": 2, "gamma": 0.01}, 40.0), "tridiagonal": ({"alpha": 0.2, "gamma": 0.01}, 40.0),
    "circulant": ({"keep": 0.6}, 40.0), "bistochastic-beta": ({"beta": 0.5, "family": "rr"}, 40.0),
    "metric": ({"metric_epsilon": 0.5, "distances": "ordinal"}, 40.0),
}


def strict_json(obj: object) -> object:
    return json.loads(json.dumps(obj, allow_nan=False))


def exact_epsilon_at_most(m: PramMatrix, budget: float) -> bool:
    """max over columns of log(max / min) <= budget, decided on the stored doubles: the
    ratio as a fraction against e^budget bounded from below by a rational Taylor sum."""
    bound = sum((Fraction(budget) ** k / math.factorial(k) for k in range(300)), Fraction(0))  # < e^budget
    cols = m.matrix.T
    return all(Fraction(float(c.max())) <= bound * Fraction(float(c.min())) for c in cols if c.max() > 0)


def test_every_family_is_in_the_contract() -> None:
    assert set(CASES) == set(FAMILIES)


@pytest.mark.parametrize("method", sorted(CASES))
def test_every_family_designs_a_release_under_one_contract(method: str) -> None:
    options, budget = CASES[method]
    data = census(3_000, seed=7)
    plan = pramkit.plan_release(VARS, epsilon=budget, method=method, options=options, categories=CODEBOOK)
    m, private = pramkit.design_planned(data, plan, rng=random.Random(3))
    assert m.names == VARS and m.record_epsilon <= budget
    for v in m.variables:
        assert isinstance(v.matrix, PramMatrix) and v.matrix.provenance.method
        assert exact_epsilon_at_most(v.matrix, v.matrix.epsilon)
    # the record epsilon covers the design step and every variable, and stays within the budget exactly
    spent = Fraction(m.ledger.design_epsilon) + sum((Fraction(v.matrix.epsilon) for v in m.variables), Fraction(0))
    assert spent <= Fraction(budget)
    again = Manifest.from_dict(strict_json(m.to_dict()))
    assert again.names == m.names and again.record_epsilon == m.record_epsilon
    assert all(np.array_equal(a.matrix.matrix, b.matrix.matrix) for a, b in zip(again.variables, m.variables))
    record = strict_json(private.to_dict())
    assert record["method"] == method and set(record["per_variable"]) == set(VARS)
    strict_json(m.describe())


def test_the_recognition_design_meets_the_same_contract() -> None:
    m, private = pramkit.design_recognition(census(3_000, seed=7), VARS, alpha=0.5, combinations=2)
    (v,) = m.variables
    assert v.columns == tuple(VARS) and isinstance(v.matrix, PramMatrix)
    assert Manifest.from_dict(strict_json(m.to_dict())).names == m.names
    strict_json(private.to_dict())
    assert not m.ledger.covers_everything  # it reads the exact counts, and says so


def test_every_result_the_commands_print_is_strict_json(tmp_path) -> None:
    from pramkit.demo import run_demo

    data = census(3_000, seed=8)
    m = pramkit.design_release(data, VARS, epsilon=2.0, categories=CODEBOOK, rng=random.Random(4))
    released = pramkit.perturb_frame(data, m, key=pramkit.SecretKey(b"k" * 32, "a test key"))[0]
    strict_json(pramkit.estimate_table(released, m, ["sex"]).to_dict())
    strict_json(pramkit.identification_risk(data, VARS, sampling_fraction=0.1).to_dict())
    strict_json(run_demo(tmp_path / "demo", rows=2_000).to_dict())
