"""Amplification by sampling and by shuffling: published figures, brute force on small cases, properties.

Checked against what pramkit did not compute: the figures of Balle, Barthe and Gaboardi (2018)
(q = 0.05 at epsilon 3 gives 0.6700) and of Feldman, McMillan and Talwar (2021) (n = 10^5,
epsilon0 = 4, delta = 10^-6: between 0.1675 and 0.1728, their reference implementation's interval),
their closed-form Theorem 3.1, and the exact privacy of small shuffled releases (every histogram
of every neighbouring pair, enumerated).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.errors import ParameterError
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.privacy.amplification import (
    Sampling,
    by_sampling,
    by_shuffling,
    by_shuffling_matrix,
    closed_form_shuffling,
    matrix_total_variation,
    release_guarantees,
    sampling_of,
    shuffle_failures,
    shuffling_bound,
)
from pramkit.privacy.epsilon import matrix_epsilon

# -- sampling ---------------------------------------------------------------------------------------

def test_sampling_figure() -> None:
    """Balle, Barthe and Gaboardi (2018): ln(1 + q (e^eps - 1)); q = 0.05 at epsilon 3 gives 0.6700."""
    assert f"{by_sampling(3.0, 0.05):.4f}" == "0.6700"
    exact = math.log(1 + 0.05 * (math.exp(3) - 1))
    assert exact <= by_sampling(3.0, 0.05) <= exact * (1 + 1e-14)


@given(eps=st.floats(0, 30), q=st.floats(1e-6, 1))
@settings(max_examples=60, deadline=None)
def test_sampling_is_an_upper_bound_below_the_local(eps: float, q: float) -> None:
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 80 + max(0, -Decimal(eps).adjusted())      # e^eps - 1 to 80 digits, however small eps
        exact = (1 + Decimal(q) * (Decimal(eps).exp() - 1)).ln()
    amplified = by_sampling(eps, q)
    assert Decimal(amplified) >= exact
    assert amplified <= math.nextafter(eps, math.inf)


def _sampled_release_law(values: tuple[int, ...], n: int, eps: float, *, ordered: bool) -> dict:
    """The exact law of a release: n of the population's binary values drawn without replacement, each
    through randomized response at eps; the released rows as a set (a count of ones) or in population order."""
    keep = math.exp(eps) / (1 + math.exp(eps))
    subsets = list(itertools.combinations(range(len(values)), n))
    law: dict = {}
    for chosen in subsets:
        for z in itertools.product((0, 1), repeat=n):
            pr = math.prod(keep if zi == values[i] else 1 - keep for i, zi in zip(chosen, z))
            out = z if ordered else sum(z)
            law[out] = law.get(out, 0.0) + pr / len(subsets)
    return law


def _worst_log_ratio(population: int, n: int, eps: float, *, ordered: bool) -> float:
    worst = 0.0
    for values in itertools.product((0, 1), repeat=population):
        for i in range(population):
            other = values[:i] + (1 - values[i],) + values[i + 1:]              # one person's value replaced
            a = _sampled_release_law(values, n, eps, ordered=ordered)
            b = _sampled_release_law(other, n, eps, ordered=ordered)
            worst = max(worst, max(abs(math.log(a[k] / b[k])) for k in a))
    return worst


@pytest.mark.parametrize(("population", "n", "eps"), [(3, 1, 2.0), (4, 2, 2.0), (5, 2, 1.0), (5, 3, 3.0)])
def test_sampling_bound_on_every_small_population(population: int, n: int, eps: float) -> None:
    """Brute force over every binary population and every replaced value: the released set's privacy loss
    is at most ln(1 + (n/N)(e^eps - 1)) and reaches it; rows kept in population order lose more, which is why
    the conditions ask for rows in random order."""
    bound = by_sampling(eps, n / population)
    as_set = _worst_log_ratio(population, n, eps, ordered=False)
    assert as_set <= bound * (1 + 1e-12) and as_set == pytest.approx(bound, rel=1e-9)  # 1e-12: the enumeration's rounding
    if n > 1:
        assert _worst_log_ratio(population, n, eps, ordered=True) > bound * 1.05


def test_poisson_needs_its_population() -> None:
    """A Poisson sample of a population of one is the person's own randomized response whenever the file is
    not empty: no amplification at all, so a Poisson figure needs N and is stated given the size (n of N)."""
    eps, q = 2.0, 0.5
    drawn = {"empty": 1 - q, **{z: q * p for z, p in _sampled_release_law((1,), 1, eps, ordered=False).items()}}
    other = {"empty": 1 - q, **{z: q * p for z, p in _sampled_release_law((0,), 1, eps, ordered=False).items()}}
    loss = max(abs(math.log(drawn[k] / other[k])) for k in drawn)
    assert loss == pytest.approx(eps) and loss > by_sampling(eps, q)
    with pytest.raises(ParameterError, match="needs --population N"):
        sampling_of("poisson:0.5", None, 10)
    s = sampling_of("poisson:0.05", 40_000, 1_900)
    assert s.rate == 1_900 / 40_000 and "1,900 of them" in s.conditions()
    assert Sampling.from_dict(s.to_dict()) == s


@pytest.mark.parametrize("q", [0, -0.1, 1.5, float("nan"), float("inf")])
def test_sampling_rate_outside(q) -> None:
    with pytest.raises(ParameterError, match=r"\(0, 1\]"):
        by_sampling(1.0, q)


def test_stratified_takes_the_largest_rate() -> None:
    s = Sampling.parse("stratified:0.01,0.2,0.05")
    assert s.rate == 0.2
    assert "fixed before the data were seen" in s.conditions() and "Bun" in s.conditions()
    assert Sampling.parse(" srswor : 50/1000 ").rate == 0.05
    with pytest.raises(ParameterError, match="smaller than the file"):
        Sampling.parse("srswor:50/10")
    with pytest.raises(ParameterError, match="poisson:Q"):
        Sampling.parse("bernoulli:0.1")


# -- shuffling: published figures and the closed form -------------------------------------------------

def test_shuffling_published_figure() -> None:
    """FMT21's reference implementation: eps between 0.1675 and 0.1728 for n = 1e5, eps0 = 4, delta = 1e-6."""
    b = shuffling_bound(4.0, 100_000, 1e-6)
    assert 0.1675 <= b.lower <= b.upper <= 0.1728
    assert b.upper - b.lower < 1e-4          # the computation is exact up to rounding, not a grid
    assert by_shuffling(4.0, 100_000, 1e-6) == b.upper


def test_closed_form_figure_and_order() -> None:
    """Theorem 3.1 of the same paper, where it applies, is above the numerical bound."""
    closed = closed_form_shuffling(4.0, 100_000, 1e-6)
    p = math.exp(4.0)
    assert closed == pytest.approx(math.log1p((p - 1) / (p + 1) * (8 * math.sqrt(p * math.log(4e6)) / math.sqrt(1e5)
                                                                    + 8 * p / 1e5)))
    assert by_shuffling(4.0, 100_000, 1e-6) < closed
    assert closed_form_shuffling(6.0, 1_000, 1e-6) is None     # eps0 > ln(n / (16 ln(2 / delta)))


@given(eps0=st.floats(0.2, 5.0), n=st.integers(2_000, 60_000), delta=st.sampled_from([1e-4, 1e-6, 1e-8]))
@settings(max_examples=8, deadline=None)
def test_numerical_below_closed_form(eps0: float, n: int, delta: float) -> None:
    closed = closed_form_shuffling(eps0, n, delta)
    if closed is not None:
        assert by_shuffling(eps0, n, delta) <= closed


@given(eps0=st.floats(0.3, 5.0), n=st.integers(50, 20_000), more=st.integers(1, 20_000),
       up=st.floats(0.01, 1.0))
@settings(max_examples=10, deadline=None)
def test_monotone_in_n_and_epsilon(eps0: float, n: int, more: int, up: float) -> None:
    """More records never weaken the bound; a larger local epsilon never strengthens it; the upper
    figure is never below the bound's own lower figure, nor above the local epsilon."""
    delta = 1e-6
    b = shuffling_bound(eps0, n, delta)
    assert b.lower <= b.upper <= eps0
    assert by_shuffling(eps0, n + more, delta) <= b.upper
    assert by_shuffling(eps0 + up, n, delta) >= b.upper


# -- shuffling: exact privacy of small releases --------------------------------------------------------

def _histogram_law(m: np.ndarray, values: list[int], n: int) -> np.ndarray:
    """The law of the released histogram (counts of the first k - 1 categories) of records ``values``."""
    k = m.shape[0]
    law = np.zeros((n + 1,) * (k - 1))
    law[(0,) * (k - 1)] = 1.0
    for v in values:
        new = law * m[v, k - 1]
        for j in range(k - 1):
            to, frm = [slice(None)] * (k - 1), [slice(None)] * (k - 1)
            to[j], frm[j] = slice(1, None), slice(0, -1)
            shifted = np.zeros_like(law)
            shifted[tuple(to)] = law[tuple(frm)]
            new += shifted * m[v, j]
        law = new
    return law


def _exact_delta(m: np.ndarray, n: int, eps: float) -> float:
    """The largest hockey-stick divergence between the shuffled releases of two neighbouring files."""
    k, worst = m.shape[0], 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        for x0, x1 in itertools.permutations(range(k), 2):
            p = _histogram_law(m, [*others, x0], n)
            q = _histogram_law(m, [*others, x1], n)
            worst = max(worst, float(np.maximum(p - math.exp(eps) * q, 0.0).sum()))
    return worst


@pytest.mark.parametrize("matrix, n", [
    ([[0.7, 0.3], [0.3, 0.7]], 40),
    ([[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.25, 0.25, 0.5]], 14),    # not symmetric, not bistochastic
])
def test_bounds_hold_on_exact_small_releases(matrix, n: int) -> None:
    """Both bounds, at the epsilon they state, leave every neighbouring pair within delta, and they amplify."""
    m, delta = np.array(matrix), 0.05
    eps0 = matrix_epsilon(m)
    general, through_tv = by_shuffling(eps0, n, delta), by_shuffling_matrix(m, n, delta)
    assert through_tv <= general < eps0
    assert _exact_delta(m, n, general) <= delta
    assert _exact_delta(m, n, through_tv) <= delta


def test_total_variation_parameter() -> None:
    m = np.array([[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.25, 0.25, 0.5]])
    brute = max(0.5 * np.abs(m[i] - m[j]).sum() for i in range(3) for j in range(3))
    assert matrix_total_variation(m) == pytest.approx(brute, abs=1e-15)
    rr = randomized_response(list(range(6)), 2.0)
    p = math.exp(2.0)
    assert matrix_total_variation(rr.matrix) == pytest.approx((p - 1) / (p + 5))
    assert by_shuffling_matrix(PramMatrix.identity(["a", "b"]), 1000) == math.inf
    assert by_shuffling_matrix(np.full((3, 3), 1 / 3), 1000) == 0.0


@pytest.mark.parametrize("args, match", [
    ((-1.0, 100, 1e-6), "non-negative"), ((1.0, 0, 1e-6), "at least 1"), ((1.0, 10.5, 1e-6), "whole number"),
    ((1.0, 100, 0.0), "strictly between"), ((1.0, 100, 1.0), "strictly between"),
])
def test_shuffling_bad_parameters(args, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        shuffling_bound(*args)


# -- the guarantees of a release -------------------------------------------------------------------------

def test_unperturbed_key_column_gets_no_central_figure() -> None:
    """The census file perturbed in three variables: any other released column must be declared public."""
    frame = census(3_000)
    manifest = Manifest.of({"age": randomized_response(sorted(frame["age"].unique()), 2.0),
                            "sex": randomized_response(sorted(frame["sex"].unique()), 1.0)})
    columns = ["age", "sex", "education"]
    g = release_guarantees(manifest, columns=columns, shuffled=True, clones=3_000)
    assert g.shuffled is None and "'education'" in g.shuffle_conditions
    assert g.lines()[-1].startswith("shuffled: no central figure: column 'education'")
    g = release_guarantees(manifest, columns=columns, public_columns=["education"], shuffled=True, clones=3_000)
    assert g.shuffled is not None and g.shuffled < manifest.record_epsilon
    assert release_guarantees(manifest, columns=["age", "sex"], shuffled=False, clones=3_000).shuffled is None


def test_household_and_uncovered_facts_fail(sdc_data) -> None:
    """eusilc: a household id released, or a stratum's missing values released unperturbed, names the cause."""
    frame = pd.read_csv(sdc_data / "eusilc_laeken.csv", nrows=2_000)
    assert frame["pl030"].isna().any()                              # missing values, as the release keeps them
    failures = shuffle_failures(list(frame.columns[:4]), ["db040"], ["hsize", "rb030"], ["db030"], shuffled=True)
    assert failures == ["column 'db030' is a household or id column: released, it links records and identifies them"]
    assert shuffle_failures(["db040", "age"], ["db040"], [], [], shuffled=False)[0].startswith("the rows are in")


def test_sampled_and_local_side_by_side() -> None:
    manifest = Manifest.of({"sex": randomized_response(["f", "m"], 3.0)},
                           input={"sampling": Sampling.parse("srswor:5000/100000").to_dict()})
    g = release_guarantees(manifest)
    assert f"{g.sampled:.4f}" == "0.6700" and g.local == manifest.record_epsilon
    assert [line.split(":")[0] for line in g.lines()] == ["local", "sampled"]
    assert g.to_dict()["sampled_epsilon"] == g.sampled


def test_readme_demo_figure() -> None:
    """The README's census-demo sentence: local 6 (default design step plus perturbation), its three variables
    shuffled over 953 076 records, is the figure ``apply --shuffle`` states (the shuffled bound of the designed
    matrices plus the design step, rounded up as the ledger prints it)."""
    from pathlib import Path

    from pramkit import design_release
    from pramkit.datasets import CENSUS_VARIABLES, census
    from pramkit.ledger import fmt_epsilon
    from pramkit.privacy.amplification import release_guarantees

    names = ["age", "sex", "marital_status"]
    manifest = design_release(census(953_076)[names], names, epsilon=6.0, categories=CENSUS_VARIABLES)
    shuffled = release_guarantees(manifest, columns=names, shuffled=True, clones=953_075).shuffled
    central = fmt_epsilon(shuffled + manifest.ledger.design_epsilon)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f"central epsilon of {central} at delta 10^-6" in " ".join(readme.split())
