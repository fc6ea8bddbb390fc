"""Benedetti-Franconi individual risk (risk/individual.py) against its defining series and integral."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import nbinom

from pramkit.errors import DataError
from pramkit.risk.individual import benedetti_franconi, individual_risk


def _series(f: int, p: float) -> float:
    """sum_{h >= f} (1/h) P(F = h | f), F - f ~ NegBin(f, p), summed far into the tail."""
    h = np.arange(f, f + int((f + 40 * np.sqrt(f) + 40) / p))  # tail beyond ~40 sd is below 1e-16
    return float((nbinom.pmf(h - f, f, p) / h).sum())


def _integral(f: int, p: float) -> float:
    """p^f int_0^1 t^(f-1) (1 - (1-p) t)^(-f) dt by adaptive quadrature."""
    value, _ = quad(lambda t: t ** (f - 1) * (1 - (1 - p) * t) ** (-f), 0, 1, epsabs=0, epsrel=1e-12, limit=200)
    return p**f * value


@pytest.mark.parametrize("f", [1, 2, 3, 7, 30, 31, 60, 400])
@pytest.mark.parametrize("p", [0.002, 0.05, 0.3, 0.5, 0.8, 1.0])
def test_against_series(f, p):
    assert benedetti_franconi(f, f / p) == pytest.approx(_series(f, p), rel=1e-9)


@pytest.mark.parametrize("f, p", [(1, 1e-4), (2, 0.01), (5, 0.49), (12, 0.2)])
def test_against_integral(f, p):
    assert benedetti_franconi(f, f / p) == pytest.approx(_integral(f, p), rel=1e-9)


def test_sum_and_missing_records():
    f = np.array([1, 1, 2, 2, 0])
    F = np.array([100.0, 100.0, 150.0, 150.0, np.nan])
    res = individual_risk(f, F)
    assert np.isnan(res.risk[4])
    expected = 2 * _series(1, 0.01) + 2 * _series(2, 2 / 150)
    assert res.expected_reidentifications == pytest.approx(expected, rel=1e-9)
    assert res.max_risk == pytest.approx(max(_series(1, 0.01), _series(2, 2 / 150)), rel=1e-9)


def test_weights_below_sample_count():
    with pytest.raises(DataError, match="at least the sample count"):
        benedetti_franconi(3, 2.0)


def test_published_sdcmicro_output():
    # Per-record risks printed by sdcMicro for (f, F) = (2, 360), (1, 215), (2, 152), (1, 186)
    # (SDC Practice guide, "Measuring risk", table 1), to the 8 decimals shown there.
    got = benedetti_franconi([2, 1, 2, 1], [360.0, 215.0, 152.0, 186.0])
    np.testing.assert_allclose(got, [0.00542452, 0.02509644, 0.01256342, 0.02824728], atol=1.5e-8)
