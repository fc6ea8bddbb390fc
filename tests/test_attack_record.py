"""The Bayes ceiling of the whole released record (:func:`pramkit.risk.attack.bayes_ceiling`, its default
``scope="record"``): three perturbed copies of one answer worked by hand, the expectation over every draw against
the eight released patterns enumerated here, and over keys on sdcMicro's testdata the whole-record Bayes attacker of
``benchmarks/bench_attack_mc.py`` (its own code, not the library's) against the ceiling."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA, benchmark_module

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.errors import ParameterError
from pramkit.release.pipeline import design_release
from pramkit.risk.attack import bayes_ceiling

ROOT = Path(__file__).resolve().parents[1]
KEEP = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("0", "1"))


def _bench() -> ModuleType:
    return benchmark_module("bench_attack_mc")


def _copies(n: int = 1000) -> tuple[Manifest, pd.DataFrame]:
    return Manifest.of(dict.fromkeys("abc", KEEP)), pd.DataFrame({c: ["0", "1"] * (n // 2) for c in "abc"})


def test_three_copies_posteriors_by_hand() -> None:
    """Released (0, 0, 1): the all-0 and all-1 records weigh 3/4 * 3/4 * 1/4 and 1/4 * 1/4 * 3/4, so 0 has
    posterior 3/4; released (1, 1, 1): 27 / 28.  The target's own cell alone (scope="target") says 3/4 for both."""
    manifest, original = _copies(2)
    released = pd.DataFrame({"a": ["0", "1"], "b": ["0", "1"], "c": ["1", "1"]})
    c = bayes_ceiling(released, manifest, [], "a", prior=original, original=original)
    assert c.posterior.ravel().tolist() == pytest.approx([3 / 4, 1 / 4, 1 / 28, 27 / 28])
    assert c.conditioned_on == ("a", "b", "c") and c.not_conditioned_on == () and c.scope == "record"
    assert c.epsilon == pytest.approx(3 * math.log(3))  # the record's: odds up to 27 to 1
    own = bayes_ceiling(released, manifest, [], "a", prior=original, original=original, scope="target")
    assert own.posterior.ravel().tolist() == pytest.approx([3 / 4, 1 / 4, 1 / 4, 3 / 4])
    assert own.conditioned_on == ("a",) and own.not_conditioned_on == ("b", "c")
    assert own.epsilon == pytest.approx(math.log(3))


def test_three_copies_over_every_draw_is_the_majority_vote_enumerated() -> None:
    """Over every draw: the eight released patterns of a person, each with its probability given the true answer,
    and the right guess of the majority (the argmax): (3/4)^3 + 3 (3/4)^2 (1/4) = 0.84375 of the people."""
    manifest, original = _copies()
    by_hand = 0.0
    for z in itertools.product((0, 1), repeat=3):
        for x in (0, 1):
            p = math.prod(0.75 if zi == x else 0.25 for zi in z)
            by_hand += 0.5 * p * ((sum(z) >= 2) == x)
    assert by_hand == 0.84375
    released = pramkit.perturb_frame(original, manifest, key=bytes(32)).data
    c = bayes_ceiling(released, manifest, [], "a", prior=original, original=original)
    assert c.expected_over_draws == pytest.approx(by_hand * 1000, rel=1e-12)
    assert c.correct_over_draws == pytest.approx(by_hand * 1000, rel=1e-12)
    own = bayes_ceiling(released, manifest, [], "a", prior=original, original=original, scope="target")
    assert own.expected_over_draws == pytest.approx(750.0, rel=1e-12)  # the old, narrower figure


def test_a_prior_without_the_other_perturbed_columns_is_refused_in_one_line() -> None:
    manifest, original = _copies(4)
    with pytest.raises(ParameterError, match="the prior has no column 'b', 'c'"):
        bayes_ceiling(original, manifest, [], "a", prior=original[["a"]], original=original)
    with pytest.raises(ParameterError, match="scope must be one of record, target"):
        bayes_ceiling(original, manifest, [], "a", prior=original, scope="file")


@pytest.mark.skipif(not (SDC_DATA / "testdata.csv").is_file(), reason="../shared/data/sdcmicro is absent")
def test_over_keys_the_whole_record_attacker_averages_the_ceiling() -> None:
    """30 releases of 1000 real records, water, roof and walls perturbed (record epsilon 3): per key the benchmark's
    whole-record posterior (its own code) has the library's expected count, and its argmax's right guesses average
    the ceiling within Monte Carlo error (3 standard errors above at most, 4 either way)."""
    mc = _bench()
    columns = ["urbrur", "roof", "walls", "water", "sex", "relat"]
    known, targets = ["urbrur", "sex", "relat"], ["water", "roof", "walls"]
    data = pd.read_csv(SDC_DATA / "testdata.csv", dtype=str, keep_default_na=False)[columns]
    data = data.sample(1000, random_state=1).reset_index(drop=True)
    manifest = design_release(data, targets, epsilon=3.0, rng=random.Random(5))
    right: dict[str, list[float]] = {t: [] for t in targets}
    ceiling: dict[str, list[float]] = {t: [] for t in targets}
    for seed in range(30):
        released = pramkit.perturb_frame(data, manifest, key=bytes([seed]) * 32).data
        whole = mc.whole_record_posteriors(data, released, manifest, known, targets)
        for t in targets:
            c = bayes_ceiling(released, manifest, known, t, prior=data, original=data)
            assert c.not_conditioned_on == () and c.records == len(data)
            assert float(whole[t][1].sum()) == pytest.approx(c.expected_correct, rel=1e-9)
            right[t].append(float(whole[t][0].sum()))
            ceiling[t].append(c.expected_correct)
    for t in targets:
        d = np.subtract(right[t], ceiling[t])
        se = float(d.std(ddof=1)) / math.sqrt(len(d))
        assert d.mean() <= 3 * se and abs(d.mean()) <= 4 * se, (t, d.mean(), se)
