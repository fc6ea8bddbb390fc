"""The exact discrete Gaussian sampler and the zCDP accounting of the Gaussian and exponential mechanisms.

The references the code did not produce:

* the exact privacy profile of the Gaussian mechanism (Balle and Wang 2018, Theorem 8), evaluated with
  SciPy's normal log-cdf: a conversion of rho-zCDP to (epsilon, delta) is valid only if it is never below
  it, since the Gaussian mechanism of variance 1 / (2 rho) on a sensitivity-1 query is exactly rho-zCDP;
* the classical conversion ``epsilon = rho + 2 sqrt(rho log(1/delta))`` (Bun and Steinke 2016), which
  Corollary 13 of Canonne, Kamath and Steinke (2020) improves on;
* the bound of Corollary 13 written out naively here, and minimised over alpha by SciPy;
* the pmf of the discrete Gaussian normalised by summation here, for chi-square tests (seeded generators,
  so every run draws the same numbers; rejection at ALPHA = 1e-6).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats
from scipy.special import log_ndtr

from pramkit.errors import DataError, ParameterError
from pramkit.privacy.gaussian import MAX_SIGMA2, dg_counts, discrete_gaussian, gaussian_sigma2
from pramkit.privacy.geometric import discrete_laplace
from pramkit.privacy.zcdp import (
    best_alpha,
    delta_at,
    delta_of,
    exponential_epsilon,
    exponential_rho,
    rho_for,
)

ALPHA = 1e-6
RHOS = [1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.3, 1.0, 3.0, 10.0, 40.0]
EPSILONS = [1e-3, 0.01, 0.1, 0.3, 1.0, 2.0, 5.0, 10.0, 30.0]


def gaussian_profile(rho: float, epsilon: float) -> float:
    """The exact delta(epsilon) of the Gaussian mechanism at rho (Balle and Wang 2018, Theorem 8).

    With ``mu = sqrt(2 rho)``: ``Phi(-eps/mu + mu/2) - e**eps Phi(-eps/mu - mu/2)``, in logs so that
    tiny values keep their digits.
    """
    mu = math.sqrt(2.0 * rho)
    log_a = float(log_ndtr(-epsilon / mu + mu / 2.0))
    log_b = float(log_ndtr(-epsilon / mu - mu / 2.0))
    return math.exp(log_a) * -math.expm1(epsilon + log_b - log_a)


def classical_rho(epsilon: float, delta: float) -> float:
    """The rho solving ``epsilon = rho + 2 sqrt(rho log(1/delta))`` (Bun and Steinke 2016, Proposition 1.3)."""
    log_term = math.log(1.0 / delta)
    return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2


def naive_delta(rho: float, epsilon: float, alpha: float) -> float:
    """Corollary 13 as printed: ``exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)**a``, no logs, no cap."""
    return math.exp((alpha - 1) * (alpha * rho - epsilon)) / (alpha - 1) * (1 - 1 / alpha) ** alpha


def sane_factor(exact: float) -> float:
    """How far above the exact profile the conversion may be: 3 sqrt(1 + log10(1/delta)) (measured under it)."""
    return 3.0 * math.sqrt(1.0 + math.log10(1.0 / exact))


# --- the conversion of rho-zCDP to (epsilon, delta) -----------------------------------------------------

def test_never_below_the_gaussian_profile_and_within_a_sane_factor() -> None:
    checked = 0
    for rho in RHOS:
        for epsilon in EPSILONS:
            delta, alpha = delta_of(rho, epsilon)
            exact = gaussian_profile(rho, epsilon)
            assert alpha > 1
            assert delta >= exact * (1 - 1e-9), (rho, epsilon, delta, exact)
            if exact > 1e-300:
                assert delta <= min(1.0, sane_factor(exact) * exact), (rho, epsilon, delta, exact)
                checked += 1
    assert checked > 60


def test_delta_at_is_the_bound_as_printed() -> None:
    for rho, epsilon, alpha in [(0.1, 1.0, 6.0), (0.01, 0.5, 20.0), (1.0, 3.0, 2.5), (1e-4, 0.1, 400.0),
                                (2.0, 1.0, 1.01)]:
        expected = min(1.0, naive_delta(rho, epsilon, alpha))
        assert delta_at(rho, epsilon, alpha) == pytest.approx(expected, rel=1e-12)
    assert delta_at(5.0, 0.1, 2.0) == 1.0  # capped


def test_best_alpha_against_scipy_minimiser() -> None:
    for rho in [1e-3, 0.01, 0.1, 1.0, 5.0]:
        for epsilon in [0.1, 1.0, 4.0]:
            alpha = best_alpha(rho, epsilon)

            def log_delta(a: float, rho: float = rho, epsilon: float = epsilon) -> float:
                # the log of the bound as printed, term by term
                return (a - 1) * (a * rho - epsilon) - math.log(a - 1) + a * math.log(1 - 1 / a)

            found = optimize.minimize_scalar(log_delta, bounds=(1 + 1e-9, 10 * alpha + 10), method="bounded",
                                             options={"xatol": 1e-10})
            assert log_delta(alpha) <= found.fun + 1e-9
            assert delta_of(rho, epsilon) == (delta_at(rho, epsilon, alpha), alpha)


def test_rho_for_inverts_delta_of() -> None:
    for rho in RHOS:
        for epsilon in EPSILONS:
            delta = delta_of(rho, epsilon)[0]
            if not 1e-300 < delta < 0.99:
                continue
            found = rho_for(epsilon, delta)
            assert found == pytest.approx(rho, rel=1e-6), (rho, epsilon, delta)
            assert delta_of(found, epsilon)[0] <= delta


def test_rho_for_is_tighter_than_the_classical_conversion() -> None:
    for epsilon in EPSILONS:
        for delta in [1e-3, 1e-6, 1e-9, 1e-12, 1e-20]:
            rho = rho_for(epsilon, delta)
            assert rho >= classical_rho(epsilon, delta), (epsilon, delta)
            # and still valid: the Gaussian mechanism at rho meets (epsilon, delta)
            assert gaussian_profile(rho, epsilon) <= delta


def test_rho_for_a_known_value() -> None:
    # eps = 1, delta = 1e-6: the classical conversion gives 0.01747, Corollary 13 about 0.0244
    assert classical_rho(1.0, 1e-6) == pytest.approx(0.017469, abs=1e-6)
    assert rho_for(1.0, 1e-6) == pytest.approx(0.024356, abs=1e-6)


@pytest.mark.parametrize(("args", "word"), [
    ((0.0, 1e-6), "epsilon"), ((-1.0, 1e-6), "epsilon"), ((math.inf, 1e-6), "epsilon"), ((math.nan, 1e-6), "epsilon"),
    ((1.0, 0.0), "delta"), ((1.0, 1.0), "delta"), ((1.0, -0.1), "delta"), ((1.0, math.nan), "delta"),
    ((1.0, True), "delta"), ((True, 0.5), "epsilon"), ((1.0, "1e-6"), "delta"),
])
def test_rho_for_refuses(args: tuple, word: str) -> None:
    with pytest.raises(ParameterError, match=word) as info:
        rho_for(*args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("args", "word"), [
    ((0.0, 1.0, 2.0), "rho"), ((1.0, 0.0, 2.0), "epsilon"), ((1.0, 1.0, 1.0), "alpha"), ((1.0, 1.0, 0.5), "alpha"),
    ((1.0, 1.0, math.inf), "alpha"), ((math.nan, 1.0, 2.0), "rho"),
])
def test_delta_at_refuses(args: tuple, word: str) -> None:
    with pytest.raises(ParameterError, match=word):
        delta_at(*args)


log_rhos = st.floats(-12, 2.5).map(lambda x: 10.0**x)
log_epsilons = st.floats(-3, 1.8).map(lambda x: 10.0**x)


def test_near_alpha_one_keeps_its_digits() -> None:
    # rho well above epsilon: the best alpha is 1 + about exp(-(rho - epsilon)) and delta is 1 - (alpha - 1);
    # 1 - 1/alpha computed directly would lose those digits
    rho, epsilon = 10.0**1.5, 10.0**1.09375
    delta, alpha = delta_of(rho, epsilon)
    x = math.exp(-(rho - epsilon))
    assert alpha - 1 == pytest.approx(x, rel=1e-3)
    assert 1 - delta == pytest.approx(x, rel=1e-3)
    assert delta_at(rho, epsilon, 1 + x / 2) >= delta


@given(rho=log_rhos, epsilon=log_epsilons)
@settings(max_examples=150, deadline=None)
def test_property_conversion_valid_and_sane(rho: float, epsilon: float) -> None:
    delta, alpha = delta_of(rho, epsilon)
    exact = gaussian_profile(rho, epsilon)
    assert 0.0 <= delta <= 1.0 and alpha > 1
    assert delta >= exact * (1 - 1e-9)
    if exact > 1e-300:
        assert delta <= min(1.0, sane_factor(exact) * exact)
    # no other order gives less
    for other in (1 + (alpha - 1) / 2, 1 + (alpha - 1) * 1.01, alpha * 3, 1 + 1e-6):
        if 1 < other < 1e300:
            assert delta_at(rho, epsilon, other) >= delta * (1 - 1e-9)


@given(epsilon=log_epsilons, log_delta=st.floats(-250, -0.5))
@settings(max_examples=80, deadline=None)
def test_property_rho_for_is_the_largest(epsilon: float, log_delta: float) -> None:
    delta = 10.0**log_delta
    rho = rho_for(epsilon, delta)
    assert rho > 0
    assert delta_of(rho, epsilon)[0] <= delta
    assert delta_of(rho * (1 + 1e-7), epsilon)[0] > delta
    assert rho >= classical_rho(epsilon, delta)
    assert gaussian_profile(rho, epsilon) <= delta


# --- the exponential mechanism --------------------------------------------------------------------------

def test_exponential_rho_by_hand() -> None:
    assert exponential_rho(2.0) == Fraction(1, 2)
    assert exponential_rho(1) == Fraction(1, 8)
    assert exponential_rho(0.1) == Fraction(3602879701896397, 2**55) ** 2 / 8
    assert exponential_epsilon(Fraction(1, 2)) == 2.0
    assert exponential_epsilon(Fraction(1, 8)) == 1.0


@given(epsilon=st.floats(1e-150, 1e150))
@settings(max_examples=200, deadline=None)
def test_property_exponential_round_trip(epsilon: float) -> None:
    assert exponential_epsilon(exponential_rho(epsilon)) == epsilon


@given(num=st.integers(1, 10**40), den=st.integers(1, 10**40))
@settings(max_examples=200, deadline=None)
def test_property_exponential_epsilon_is_the_largest(num: int, den: int) -> None:
    rho = Fraction(num, den)
    eps = exponential_epsilon(rho)
    assert Fraction(eps) ** 2 / 8 <= rho < Fraction(math.nextafter(eps, math.inf)) ** 2 / 8
    assert exponential_epsilon(float(rho)) == pytest.approx(eps, rel=1e-15)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "0.5", Fraction(-1, 3)])
def test_exponential_refuses(bad: object) -> None:
    with pytest.raises(ParameterError):
        exponential_rho(bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        exponential_epsilon(bad)  # type: ignore[arg-type]


def test_exponential_epsilon_out_of_float_range() -> None:
    with pytest.raises(ParameterError, match="too small"):
        exponential_epsilon(Fraction(1, 10**700))
    with pytest.raises(ParameterError, match="too large"):
        exponential_epsilon(Fraction(10**700))


# --- the discrete Gaussian ------------------------------------------------------------------------------

def dg_pmf(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and pmf of N_Z(0, sigma2), normalised by summation over |x| <= 14 sigma + 10."""
    k = int(14 * math.sqrt(sigma2)) + 10
    x = np.arange(-k, k + 1)
    w = np.exp(-(x.astype(float) ** 2) / (2.0 * sigma2))
    return x, w / w.sum()


def cells(x: np.ndarray, pmf: np.ndarray, n: int) -> list[tuple[int, int, float]]:
    """Cells [lo, hi] of consecutive values with expected count >= 5 each (tails merged)."""
    out, lo, mass = [], int(x[0]), 0.0
    for value, p in zip(x.tolist(), pmf.tolist()):
        mass += p
        if mass * n >= 5 and (1.0 - pmf[x <= value].sum()) * n >= 5:
            out.append((lo, value, mass))
            lo, mass = value + 1, 0.0
    if mass * n >= 5:
        out.append((lo, int(x[-1]), mass))
    else:
        last_lo, _, last_mass = out.pop()
        out.append((last_lo, int(x[-1]), last_mass + mass))
    return out


@pytest.mark.parametrize(("sigma2", "n", "seed"), [(0.5, 60_000, 1), (2, 60_000, 2), (37.25, 60_000, 3),
                                                   (Fraction(10, 3), 40_000, 4)])
def test_goodness_of_fit(sigma2: float, n: int, seed: int) -> None:
    draws = discrete_gaussian(n, sigma2, rng=random.Random(seed))
    assert draws.dtype == np.int64 and draws.shape == (n,)
    x, pmf = dg_pmf(float(sigma2))
    groups = cells(x, pmf, n)
    observed = np.array([np.count_nonzero((draws >= lo) & (draws <= hi)) for lo, hi, _ in groups])
    probs = np.array([p for _, _, p in groups])
    assert observed.sum() == n
    assert len(groups) >= 5
    assert stats.chisquare(observed, n * probs / probs.sum()).pvalue > ALPHA
    # the variance against the pmf's (slightly below sigma2), with the sampling error of mean(x**2)
    variance = float((pmf * x**2).sum())
    fourth = float((pmf * x.astype(float) ** 4).sum())
    se = math.sqrt((fourth - variance**2) / n)
    assert abs(float(np.mean(draws.astype(float) ** 2)) - variance) < 5 * se
    assert variance <= float(sigma2) * (1 + 1e-12)
    # symmetry: the sign of the non-zero draws is a fair coin, and the mean is 0
    nonzero = draws[draws != 0]
    assert stats.binomtest(int(np.count_nonzero(nonzero > 0)), nonzero.size).pvalue > ALPHA
    assert abs(float(draws.mean())) < 5 * math.sqrt(variance / n)


def test_exact_rational_reading() -> None:
    # 37.25 is 149/4 exactly: the float, the fraction and the numpy float give the same draws
    draws = [discrete_gaussian(500, s, rng=random.Random(9)).tolist()
             for s in (37.25, Fraction(149, 4), np.float64(37.25))]
    assert draws[0] == draws[1] == draws[2]
    assert discrete_gaussian(0, 2).shape == (0,)


def test_large_sigma2_fits_int64() -> None:
    draws = discrete_gaussian(200, MAX_SIGMA2, rng=random.Random(5))
    sigma = 2.0**40
    assert draws.dtype == np.int64
    assert np.abs(draws).max() < 8 * sigma
    assert 0.5 * sigma < draws.astype(float).std() < 1.5 * sigma


def test_default_generator_is_the_system_one() -> None:
    draws = discrete_gaussian(2_000, 4.0)
    assert draws.dtype == np.int64 and 2.5 < draws.astype(float).var() < 5.5


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, -math.inf, True, np.bool_(True), "2", None,
                                 Fraction(-1, 2), 2.0**81])
def test_refuses_bad_sigma2(bad: object) -> None:
    with pytest.raises(ParameterError, match="sigma2") as info:
        discrete_gaussian(3, bad)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("size", [-1, 1.5, True, "3"])
def test_refuses_bad_size(size: object) -> None:
    with pytest.raises(ParameterError, match="size"):
        discrete_gaussian(size, 1.0)  # type: ignore[arg-type]


def test_gaussian_sigma2_by_hand() -> None:
    assert gaussian_sigma2(0.5) == 1
    assert gaussian_sigma2(Fraction(1, 8), 2) == 8
    assert gaussian_sigma2(0.125, sensitivity2=1) == 4
    assert gaussian_sigma2(0.1) == Fraction(2**55, 2 * 3602879701896397)
    for bad in (0, -0.5, math.nan, math.inf, True):
        with pytest.raises(ParameterError, match="rho"):
            gaussian_sigma2(bad)  # type: ignore[arg-type]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ParameterError, match="sensitivity2"):
            gaussian_sigma2(0.5, bad)  # type: ignore[arg-type]


def test_dg_counts() -> None:
    counts = np.array([[120, 45, 3], [0, 7, 1000]])
    noisy = dg_counts(counts, 9, rng=random.Random(3))
    assert noisy.dtype == np.int64 and noisy.shape == counts.shape
    assert noisy.tolist() == (counts + discrete_gaussian(6, 9, rng=random.Random(3)).reshape(2, 3)).tolist()
    assert np.abs(noisy - counts).max() < 30
    assert dg_counts([4.0, 5.0], 1, rng=random.Random(1)).dtype == np.int64
    for bad in ([], [-1, 2], [1.5], ["a"], [np.nan]):
        with pytest.raises(DataError):
            dg_counts(bad, 1.0)
    with pytest.raises(ParameterError, match="sigma2"):
        dg_counts([1, 2], 0)


def test_speed_is_of_the_order_of_the_discrete_laplace() -> None:
    """Not a timing: the number of random bits used per draw, against the discrete Laplace at the same scale."""

    class Counting(random.Random):
        used = 0

        def getrandbits(self, k: int) -> int:
            Counting.used += k
            return super().getrandbits(k)

    for sigma2 in (1, 100, 10_000):
        t = math.isqrt(sigma2) + 1
        Counting.used = 0
        discrete_gaussian(2_000, sigma2, rng=Counting(0))
        gauss = Counting.used
        Counting.used = 0
        discrete_laplace(2_000, 2 / t, rng=Counting(0))
        assert gauss < 6 * Counting.used, sigma2
