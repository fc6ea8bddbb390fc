"""Bistochastic families of section 4 and root finding for a target beta."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pramkit.design.bistochastic.families import (
    BETA_FAMILIES,
    BetaUnreachableError,
    anatomy_classes,
    circulant,
    circulant_keep,
    compare_families,
    fit_family,
    k_anonymity,
    tridiagonal,
    tridiagonal_peak,
    with_floor,
)
from pramkit.design.classic import randomized_response
from pramkit.errors import PramkitError
from pramkit.privacy.bistochastic import bistochastic_privacy, is_bistochastic

CATS = tuple(range(12))


def beta(m) -> float:
    return bistochastic_privacy(m).beta


def loop_mi(p: np.ndarray, m: np.ndarray) -> float:
    """I(X; Z) = H(Z) - H(Z | X) in nats, by loops."""
    r = len(p)
    lam = [sum(p[u] * m[u, v] for u in range(r)) for v in range(r)]
    hz = -sum(x * math.log(x) for x in lam if x > 0)
    hzx = -sum(p[u] * m[u, v] * math.log(m[u, v]) for u in range(r) for v in range(r) if m[u, v] > 0)
    return hz - hzx


def test_families_have_the_paper_form_and_are_bistochastic():
    r = 7
    e = math.exp(2.0)
    rr = randomized_response(range(r), 2.0).matrix  # equation (2)
    assert rr[0, 0] == pytest.approx(e / (r - 1 + e)) and rr[0, 1] == pytest.approx(1 / (r - 1 + e))
    tri = tridiagonal(range(r), [0.1, 0.2, 0.3, 0.4, 0.5, 0.2]).matrix  # equation (7)
    a = [0.1, 0.2, 0.3, 0.4, 0.5, 0.2]
    for i in range(r):
        left = a[i - 1] if i > 0 else 0.0
        right = a[i] if i < r - 1 else 0.0
        assert tri[i, i] == pytest.approx(1 - left - right)
        if i < r - 1:
            assert tri[i, i + 1] == tri[i + 1, i] == a[i]
    row = np.random.default_rng(0).dirichlet(np.ones(r))
    circ = circulant(range(r), row).matrix  # equation (6): each row the previous shifted right
    for u in range(r):
        for v in range(r):
            assert circ[u, v] == row[(v - u) % r]
    for m in (rr, tri, circ, k_anonymity(range(r), 3).matrix, circulant_keep(range(r), 0.4).matrix):
        assert is_bistochastic(m)


def test_paper_example_epsilon_2_on_three_categories():
    m = randomized_response(range(3), 2.0).matrix
    # Section 2.2 prints 0.78 and 0.11 (e^2 / (2 + e^2) = 0.787 is truncated there).
    assert m[0, 0] == pytest.approx(0.78, abs=0.01) and m[0, 1] == pytest.approx(0.11, abs=0.005)
    assert m[0, 0] + 2 * m[0, 1] == pytest.approx(1.0)


def test_anatomy_classes_partition_and_beta_is_monotone_in_k():
    for r in range(2, 21):
        betas = []
        for k in range(1, r + 1):
            classes = anatomy_classes(r, k)
            flat = [i for c in classes for i in c]
            assert flat == list(range(r))
            sizes = [len(c) for c in classes]
            assert min(sizes) >= k and max(sizes) - min(sizes) <= 1 and len(classes) == r // k
            betas.append(beta(k_anonymity(range(r), k)))
        assert all(b1 <= b2 + 1e-12 for b1, b2 in zip(betas, betas[1:]))
        assert betas[0] == 0 and betas[-1] == pytest.approx(1.0)


def test_k_anonymity_with_the_data_classes():
    m = k_anonymity("abcde", 2, classes=[[0, 3], [1, 2, 4]]).matrix
    assert m[0, 3] == 0.5 and m[1, 4] == pytest.approx(1 / 3) and m[0, 1] == 0
    with pytest.raises(PramkitError, match="fewer than k"):
        k_anonymity("abcde", 3, classes=[[0, 3], [1, 2, 4]])
    with pytest.raises(PramkitError, match="partition"):
        k_anonymity("abcde", classes=[[0, 1], [1, 2, 3, 4]])


def grid_betas(build, xs):
    return np.array([beta(build(x)) for x in xs])


def test_beta_along_each_family_is_concave_and_monotone_on_the_searched_branch():
    qs = np.linspace(1 / 12, 1, 60)
    b = grid_betas(lambda q: circulant_keep(CATS, q), qs)
    assert np.all(np.diff(b) < 0)
    eps = np.linspace(0.05, 12, 60)
    assert np.all(np.diff(grid_betas(lambda x: randomized_response(CATS, x), eps)) < 0)
    alphas = np.linspace(0, 0.5, 101)
    bt = grid_betas(lambda a: tridiagonal(CATS, a), alphas)
    assert np.all(np.diff(bt, 2) < 1e-12)  # concave
    peak, top = tridiagonal_peak(12)
    assert top == pytest.approx(bt.max(), abs=1e-4) and top >= bt.max() - 1e-12
    assert abs(peak - alphas[bt.argmax()]) <= 0.005
    rising = alphas <= peak
    assert np.all(np.diff(bt[rising]) > 0) and np.all(np.diff(bt[~rising]) < 0)


@pytest.mark.parametrize("family", ["rr", "circulant", "tridiagonal"])
@pytest.mark.parametrize("target", [0.05, 0.2, 0.4])
def test_fit_reaches_the_target_on_the_rising_branch(family, target):
    fit = fit_family(family, CATS, target)
    assert fit.beta == pytest.approx(target, abs=1e-9)
    assert beta(fit.matrix) == pytest.approx(target, abs=1e-9)
    if family == "rr":
        assert fit.matrix.epsilon == pytest.approx(fit.parameter, rel=1e-9)
    elif family == "circulant":
        assert fit.matrix.matrix[0, 0] == pytest.approx(fit.parameter) and fit.parameter > 1 / 12
    else:
        assert fit.parameter <= tridiagonal_peak(12)[0]


def test_kanon_fit_is_the_smallest_k_reaching_the_target():
    for target in (0.1, 0.3, 0.5, 0.9):
        fit = fit_family("kanon", CATS, target)
        k = int(fit.parameter)
        assert fit.beta >= target
        assert beta(k_anonymity(CATS, k - 1)) < target


def test_unreachable_and_invalid_targets():
    with pytest.raises(BetaUnreachableError, match="at most beta = 0.41"):
        fit_family("tridiagonal", CATS, 0.6)
    for bad in (0, 1, 1.5, -0.1, "0.5"):
        with pytest.raises(PramkitError):
            fit_family("rr", CATS, bad)
    with pytest.raises(PramkitError, match="unknown family"):
        fit_family("laplace", CATS, 0.5)


def test_compare_families_ranks_by_the_information_kept():
    p = np.array([30, 1, 1, 1, 20, 2, 2, 5, 5, 1, 1, 31], float)
    p /= p.sum()
    cmp = compare_families(CATS, p, 0.3)
    mis = {f.family: loop_mi(p, f.matrix.matrix) for f in cmp.fits}
    assert set(mis) == set(BETA_FAMILIES)
    for f in cmp.fits:
        assert f.mutual_information_nats == pytest.approx(mis[f.family], rel=1e-9)
    assert cmp.best == max(mis, key=mis.get) or mis[cmp.best] == pytest.approx(max(mis.values()))
    high = compare_families(CATS, p, 0.7)
    assert "tridiagonal" in high.unreachable and high.best != "tridiagonal"


def test_with_floor_keeps_bistochastic_and_bounds_epsilon():
    r, k, gamma = 12, 3, 1e-3
    m = with_floor(k_anonymity(range(r), k), gamma)
    assert is_bistochastic(m) and m.matrix.min() == pytest.approx(gamma)
    assert m.epsilon == pytest.approx(math.log(((1 - r * gamma) / k + gamma) / gamma))
    with pytest.raises(PramkitError):
        with_floor(m, 0.2)


def test_invalid_parameters_raise_project_errors():
    with pytest.raises(PramkitError):
        tridiagonal(CATS, 0.6)
    with pytest.raises(PramkitError):
        tridiagonal(CATS, [0.1, 0.2])
    with pytest.raises(PramkitError):
        circulant(CATS, [1.0])
    with pytest.raises(PramkitError):
        k_anonymity(CATS, 13)
    with pytest.raises(PramkitError):
        circulant_keep(CATS, 1.2)


def test_a_beta_too_small_for_randomized_response_is_a_clear_error():
    from pramkit.design.bistochastic.families import BetaUnreachableError, fit_family

    with pytest.raises(BetaUnreachableError, match="too small to fit"):
        fit_family("rr", range(3), 1e-16)
