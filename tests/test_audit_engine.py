"""The engine audit (pramkit.audit.engine): an empirical epsilon lower bound of the real engine.

The reference for every bound is the closed form of the matrix (randomized response:
epsilon = log(q / (1 - q)) on two categories), never a number the audit computed.  The data:
the built-in census's categories, with its not-applicable code kept (a block of its own).
"""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pramkit.audit.engine import (
    audit_variable,
    real_engine,
    released_counts,
    trials_for,
)
from pramkit.audit.stats import clopper_pearson
from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_codes
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

AGES = sorted(census(1_000)["age"].astype(str).unique())


def _form8(epsilon: float, categories: list) -> PramMatrix:
    """The form (8) matrix with equal diagonal at the given epsilon: q / w = e^epsilon."""
    s = len(categories)
    q = math.exp(epsilon) / (math.exp(epsilon) + s - 1)
    return PramMatrix.form8([q] * s, categories=categories)


def test_randomized_response_at_1_with_a_million_trials():
    """k = 2, epsilon 1, 10^6 trials per input: within 0.02 of 1 and never above it."""
    check = audit_variable(PerturbedVariable("sex", randomized_response(["female", "male"], 1.0)), trials=10**6)
    assert check.passed and check.data["trials"] == 10**6
    assert 1.0 - 0.02 <= check.data["empirical_epsilon"] <= 1.0


def test_a_batch_row_is_the_one_record_run_at_that_row():
    """The law of the batched draws: row r of one call is the engine's run on the one-record file at row r."""
    m = _form8(2.0, AGES)
    key = SecretKey.generate()
    batch = real_engine(np.full(300, 4, dtype=np.intp), m, key, "age")
    single = [perturb_codes(np.array([4]), m, key=key, variable="age", start=r)[0] for r in range(300)]
    assert batch.tolist() == single


def test_fresh_keys_give_the_matrix_row():
    """Chi-square of 200 000 batched draws against M[k, .]: the batches are draws of the right law."""
    m = _form8(1.5, AGES)
    counts = released_counts(real_engine, m, "age", 2, 200_000)
    assert stats.chisquare(counts, 200_000 * m.matrix[2]).pvalue > 1e-4


def test_a_matrix_drawn_at_epsilon_plus_0_2_is_found():
    """The engine draws from a matrix at 2.2 while 2 is published: the bound, about 0.02 below 2.2,
    exceeds 2 (power: the bound falls below 2 only if it errs by 0.18, ten times its precision)."""
    stated, faulty = _form8(2.0, AGES), _form8(2.2, AGES)

    def engine(codes, matrix, key, variable):
        return perturb_codes(codes, faulty, key=key, variable=variable)

    check = audit_variable(PerturbedVariable("age", stated), engine=engine)
    assert not check.passed and check.data["empirical_epsilon"] > 2.0


def test_kept_codes_are_audited_within_their_block():
    """Employment with 'n/a' kept: the stated epsilon is the one given the block, and pairs are
    taken inside a block only."""
    m = PramMatrix.block_diagonal([randomized_response(["employed", "unemployed"], 1.0),
                                   PramMatrix.identity(["n/a"])])
    check = audit_variable(PerturbedVariable("employment", m), trials=200_000)
    assert check.passed and check.data["stated_epsilon"] == pytest.approx(1.0)
    assert all("n/a" not in pair["inputs"] for pair in check.data["pairs"])


def test_trials_follow_the_precision():
    e = math.exp(1.0)
    few, many = trials_for(e / (1 + e), 1 / (1 + e), 0.04, 1e-6), trials_for(e / (1 + e), 1 / (1 + e), 0.01, 1e-6)
    assert 3.5 < many / few <= 16.5           # the gap falls as 1 / sqrt(n)


@given(n=st.integers(1, 5_000), share=st.floats(0, 1), alpha=st.sampled_from([0.005, 0.025, 0.05]))
@settings(max_examples=80, deadline=None)
def test_clopper_pearson_is_scipys_exact_interval(n, share, alpha):
    k = round(share * n)
    lo, hi = clopper_pearson(k, n, alpha)
    ci = stats.binomtest(k, n).proportion_ci(1 - 2 * alpha, method="exact")
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


@pytest.mark.slow
def test_the_bound_errs_at_most_as_often_as_alpha():
    """200 audits at alpha 0.2 of randomized response at 1 with 5 000 trials: the bound exceeds 1 in
    at most about 20 % of them (Bonferroni makes it rarer)."""
    v = PerturbedVariable("sex", randomized_response(["female", "male"], 1.0))
    above = sum(audit_variable(v, trials=5_000, alpha=0.2).data["empirical_epsilon"] > 1.0 for _ in range(200))
    assert above / 200 <= 0.2 + 3 * math.sqrt(0.2 * 0.8 / 200)


def test_cli_engine_json(tmp_path):
    path = Manifest.of({"sex": randomized_response(["female", "male"], 1.0)}).write(tmp_path / "m.json")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["audit", "--manifest", str(path), "--engine", "--json"])
    result = json.loads(out.getvalue())
    assert code == 0 and result["audits"] == ["manifest", "engine"]
    assert 0.95 < result["empirical_epsilon"]["sex"] <= 1.0
    engine = next(c for c in result["checks"] if c["audit"] == "engine")
    assert engine["data"]["trials"] > 0 and "trials per input" in engine["detail"]
