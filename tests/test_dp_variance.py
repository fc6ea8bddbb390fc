"""The epsilon-DP form (8) design with least estimator variance (issue 14, part 4).

Every reference here is written independently of the code under test: the
form (8) matrix and its DP check from the ratios of its columns, Cator,
Hensbergen and Rozenholc's L2 loss from their formula with a dense inverse,
the linear constraints (12)-(17) written from (10) by hand, vertex
enumeration by solving every square subsystem, a dense grid, a
general-purpose optimiser from many starts, and simulation of released data.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize
from test_epsilon_budget import BITS, exp_enclosure, ratio_vs_exp

from pramkit.design.dp.optimal import dp_optimal
from pramkit.design.dp.variance import (
    REGIONS,
    _Constants,
    _evaluator,
    dp_min_variance,
    form8_l2_loss,
    form8_variances,
    per_record_variance,
    rr_keep_probability,
    variance_lower_bound,
)
from pramkit.errors import PramkitError
from pramkit.estimate import moment_estimate
from pramkit.utility import l2_loss

# -- references ---------------------------------------------------------------------------------

def form8(q) -> np.ndarray:
    """Form (8): q on the diagonal, (1 - q_k)/(S - 1) elsewhere in row k (batched over leading axes)."""
    q = np.asarray(q, dtype=float)
    s = q.shape[-1]
    m = np.repeat(((1.0 - q) / (s - 1))[..., :, None], s, axis=-1)
    idx = np.arange(s)
    m[..., idx, idx] = q
    return m


def feasible(q, epsilon: float) -> np.ndarray:
    """Epsilon-DP of form (8) from the definition (Shlomo and Skinner, section 4): in every
    column, max <= e^eps min (to rounding); batched over the leading axes of q."""
    m = form8(q)
    return (m.max(axis=-2) <= math.exp(epsilon) * m.min(axis=-2) * (1 + 1e-12)).all(axis=-1)


def cator_l2(p, q, n: int = 1) -> np.ndarray:
    """l2(P) = (1/n^2) sum_i sum_{k,l} (P^-1_lk)^2 P_{xi(i) l} - 1/n with U_0 = n p (batched over q);
    inf where P is singular or badly conditioned."""
    m = form8(q)
    out = np.full(m.shape[:-2], np.inf)
    good = np.linalg.cond(m) < 1e12
    inv = np.linalg.inv(m[good])
    h = np.einsum("...ml,...lk->...m", m[good], inv * inv)        # sum_l P_ml sum_k (P^-1_lk)^2
    u0 = n * np.asarray(p, dtype=float)
    out[good] = (h @ u0) / n**2 - 1.0 / n
    return out


def constraints(s: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(10) as A q <= b, written from the three ratios for every ordered pair (k, l):
    (S-1) q_k <= t (1 - q_l);  1 - q_k <= t (S-1) q_l;  1 - q_k <= t (1 - q_l) (S >= 3); then 0 <= q <= 1."""
    t, c = math.exp(epsilon), s - 1
    rows, rhs = [], []
    for k, l in itertools.permutations(range(s), 2):
        for ak, al, b in ((c, t, t), (-1.0, -t * c, -1.0)) + (((-1.0, t, t - 1.0),) if s >= 3 else ()):
            r = np.zeros(s)
            r[k], r[l] = ak, al
            rows.append(r)
            rhs.append(b)
    rows += list(np.eye(s)) + list(-np.eye(s))
    rhs += [1.0] * s + [0.0] * s
    return np.array(rows), np.array(rhs)


def vertices(s: int, epsilon: float) -> np.ndarray:
    """Every vertex of {A q <= b}: solve each square subsystem, keep the feasible solutions."""
    a, b = constraints(s, epsilon)
    sub = np.array(list(itertools.combinations(range(len(a)), s)))
    mats = a[sub]
    ok = np.abs(np.linalg.det(mats)) > 1e-10
    x = np.linalg.solve(mats[ok], b[sub][ok][..., None])[..., 0]
    x = x[np.all(x @ a.T <= b + 1e-9, axis=1)]
    # a vertex on a bound 0 <= q_k <= 1 is exactly on it; the solve can land an ulp outside (-1e-18),
    # where a column of form (8) would hold a negative entry
    x = np.clip(x, 0.0, 1.0)
    _, first = np.unique(np.round(x, 9), axis=0, return_index=True)
    return x[np.sort(first)]


def rr(s: int, epsilon: float) -> float:
    return math.exp(epsilon) / (math.exp(epsilon) + s - 1)


# -- the closed forms ---------------------------------------------------------------------------

def test_form8_variances_match_a_dense_inverse():
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(400):
        s = int(rng.integers(2, 9))
        q = rng.uniform(0, 1, s)
        if rng.uniform() < 0.3:
            q[rng.integers(s)] = 1.0 / s            # one d = 0: the limit branch
        m = form8(q)
        if np.linalg.cond(m) > 1e8:
            continue
        inv = np.linalg.inv(m)
        psi = m @ (inv * inv).sum(axis=1) - 1.0
        np.testing.assert_allclose(form8_variances(q), psi, rtol=1e-9, atol=1e-12)
        p = rng.dirichlet(np.ones(s))
        assert form8_l2_loss(p, q, n=7) == pytest.approx(cator_l2(p, q, 7), rel=1e-9)
        checked += 1
    assert checked > 250


def test_singular_form8_has_infinite_variance():
    assert np.isinf(form8_variances([1 / 3, 1 / 3, 0.8])).all()             # two uniform rows
    assert np.isinf(form8_variances([0.5, 0.5])).all()                      # S = 2, d = 0 twice
    # d = (x, y, y) with 1/x + 2/y = 0: sigma = 0, singular without a uniform row
    x, y = 0.2, -0.4
    q = np.array([x, y, y]) * 2 / 3 + 1 / 3
    assert np.linalg.cond(form8(q)) > 1e12
    assert (form8_variances(q) > 1e20).all()             # singular up to the rounding of q


@pytest.mark.parametrize("s", [2, 3, 5, 9, 40])
@pytest.mark.parametrize("epsilon", [0.1, 0.7, 1.0, 3.0])
def test_randomized_response_value_is_independent_of_p(s, epsilon):
    rng = np.random.default_rng(s)
    q = np.full(s, rr(s, epsilon))
    for _ in range(3):
        p = rng.dirichlet(np.full(s, 0.4))
        assert per_record_variance(s, epsilon) == pytest.approx(cator_l2(p, q)[()], rel=1e-9)
    t = math.exp(epsilon)
    assert per_record_variance(s, epsilon) == pytest.approx((s - 1) * (2 * t + s - 2) / (t - 1) ** 2, rel=1e-12)
    assert rr_keep_probability(s, epsilon) == pytest.approx(rr(s, epsilon), rel=1e-14)


# -- global optimality: brute force, vertices, a general optimiser ------------------------------

@pytest.mark.parametrize("epsilon", [0.4, 1.0, 2.5])
def test_no_point_of_a_dense_grid_beats_the_design(epsilon):
    rng = np.random.default_rng(int(epsilon * 10))
    for s, steps in ((2, 301), (3, 61)):
        axis = np.linspace(0, 1, steps)
        grid = np.stack(np.meshgrid(*[axis] * s, indexing="ij"), axis=-1).reshape(-1, s)
        grid = grid[feasible(grid, epsilon)]
        for p in (rng.dirichlet(np.ones(s)), np.eye(s)[0], np.full(s, 1 / s)):
            design = dp_min_variance(p, epsilon)
            cert = design.provenance.certificate
            values = cator_l2(p, grid)
            assert values.min() >= design.provenance.objective * (1 - 1e-9)
            # the grid's symmetric point just below randomized response is feasible: the grid
            # minimum is at most its loss
            below = np.full(s, np.floor(rr(s, epsilon) * (steps - 1)) / (steps - 1))
            assert values.min() <= cator_l2(p, below)[()] * (1 + 1e-12)
            assert cert["optimal"] and cert["lower_bound"] <= values.min() * (1 + 1e-9)


@pytest.mark.parametrize("s", [2, 3, 4])
@pytest.mark.parametrize("epsilon", [0.5, math.log(2), 1.5, 4.0])
def test_vertex_enumeration(s, epsilon):
    verts = vertices(s, epsilon)
    assert feasible(verts + 0.0, epsilon).all()
    rng = np.random.default_rng(s)
    for p in (rng.dirichlet(np.ones(s)), np.full(s, 1 / s)):
        design = dp_min_variance(p, epsilon)
        values = cator_l2(p, verts)
        assert values.min() == pytest.approx(design.provenance.objective, rel=1e-9)
        # vertices are solved in floating point, within 1e-12 of the polytope: allow their rounding
        assert values.min() >= design.provenance.certificate["lower_bound"] * (1 - 1e-9)
        assert np.allclose(verts[np.argmin(values)], design.diagonal) or (s == 2)   # S = 2: the mirror ties


def test_a_second_optimum_for_a_point_mass_at_s4_epsilon_log2():
    """At S = 4, e^eps = 2 the vertex (4/7, 1/7, 1/7, 1/7) has the same variance as randomized
    response for a record of category 1 (18 each), so for p = e_1 both are optimal; for any p
    with mass elsewhere randomized response is strictly better.  The certificate is exact there."""
    eps = math.log(2)
    flipped = np.array([4, 1, 1, 1]) / 7
    assert feasible(flipped, eps)
    design = dp_min_variance([1, 0, 0, 0], eps)
    assert cator_l2([1, 0, 0, 0], flipped)[()] == pytest.approx(18.0, rel=1e-12)
    assert design.provenance.objective == pytest.approx(18.0, rel=1e-12)
    assert cator_l2(np.full(4, 0.25), flipped)[()] > 18.0 * 1.2
    assert design.provenance.certificate["optimal"]


def _random_feasible(s: int, epsilon: float, rng) -> np.ndarray:
    """A random point of the polytope: a random q pulled towards the strictly feasible 1/S
    just enough, then further by a random factor."""
    x = rng.uniform(0, 1, s)
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if feasible(1 / s + mid * (x - 1 / s), epsilon) else (lo, mid)
    return 1 / s + lo * rng.uniform(0.3, 1.0) * (x - 1 / s)


@pytest.mark.parametrize("s", [4, 6, pytest.param(8, marks=pytest.mark.slow)])
def test_general_optimiser_from_many_starts(s):
    rng = np.random.default_rng(100 + s)
    for epsilon in (0.6, 2.0):
        a, b = constraints(s, epsilon)
        p = rng.dirichlet(np.ones(s))

        def fun(q):    # the log of the loss: the loss itself spans many orders of magnitude
            v = cator_l2(p, q[None, :])[0]
            return math.log(v) if np.isfinite(v) and v > 0 else 50.0

        best = math.inf
        for _ in range(12):
            res = minimize(fun, _random_feasible(s, epsilon, rng), method="SLSQP",
                           constraints=[{"type": "ineq", "fun": lambda q: b - a @ q, "jac": lambda q: -a}],
                           options={"maxiter": 500, "ftol": 1e-15})
            if feasible(res.x, epsilon):
                best = min(best, math.exp(res.fun))
        design = dp_min_variance(p, epsilon)
        # the optimiser's points satisfy the constraints to 1e-12: allow that much below the optimum
        assert best >= design.provenance.objective * (1 - 1e-9)
        assert best <= design.provenance.objective * (1 + 1e-6)      # the optimiser finds it too


# -- the certificate's parts, checked against the exact variance --------------------------------

def test_every_box_bound_is_below_the_exact_variance():
    """Each region's bound (docs/design-variance.md, Lemmas 5-8), evaluated on a tiny box around
    the order statistics of a random feasible point, never exceeds that point's exact psi_k."""
    rng = np.random.default_rng(7)
    seen = dict.fromkeys(["positive_definite", "indefinite_top", "indefinite_bottom", "indefinite_middle",
                          "three_categories", "closed_form"], 0)
    for _ in range(300):
        s = int(rng.integers(3, 8))
        eps = float(np.exp(rng.uniform(math.log(0.05), math.log(8))))
        q = _random_feasible(s, eps, rng)
        if rng.uniform() < 0.5:   # push towards the boundary: a mixture with a random vertex-like point
            v = np.where(rng.uniform(size=s) < 0.5, 1 / (1 + (s - 1) * math.exp(eps)), rr(s, eps))
            if feasible(v, eps):
                q = v + rng.uniform(0, 0.3) * (q - v)
        m = form8(q)
        if np.linalg.cond(m) > 1e9:
            continue
        inv = np.linalg.inv(m)
        psi = m @ (inv * inv).sum(axis=1) - 1.0
        d = (s * q - 1) / (s - 1)
        sv = 1 - d
        proj = np.eye(s) - 1 / s
        w = np.linalg.eigvalsh(proj @ np.diag(d) @ proj)
        w = np.delete(w, np.argmin(np.abs(w)))           # the eigenvector 1 has eigenvalue 0
        c = _Constants.of(s, eps)
        order = np.argsort(-d, kind="stable")
        for k in range(s):
            if s == 3:
                region = "three_categories"
                rest = sorted((j for j in range(3) if j != k), key=lambda j: sv[j])
                box = [sv[k], sv[rest[0]], sv[rest[1]]]
            elif w.min() > 0 and d[k] >= 0:
                region, box = "positive_definite", [sv[k]]
            elif w.min() > 0:
                seen["closed_form"] += 1
                assert s / c.delta**2 <= psi[k] * (1 + 1e-9)
                continue
            else:
                srt = np.sort(sv)
                if k == order[0]:
                    region, box = "indefinite_top", [sv[k], srt[1], srt[-1]]
                elif k == order[-1]:
                    region, box = "indefinite_bottom", [srt[0], srt[1], sv[k]]
                else:
                    region, box = "indefinite_middle", [srt[0], srt[1], srt[-1], sv[k]]
            _, _, evaluate = _evaluator(c, region)
            box = np.array([box])
            _, _, bound = evaluate(box - 1e-12, box + 1e-12)
            assert bound.size == 1, (region, q)                 # the point's box is never pruned
            assert bound[0] <= psi[k] * (1 + 1e-9), (region, k, q, bound[0], psi[k])
            seen[region] += 1
    assert all(v > 10 for v in seen.values()), seen


# -- the certificate's rounding: outward, checked in rational arithmetic ---------------------------

def rational_psi(q: list[Fraction]) -> list[Fraction]:
    """psi_k = sum_j M[k, j] ||(M^-1)[j, :]||^2 - 1 for the form (8) matrix of the rationals q,
    exactly (Gauss-Jordan elimination in fractions)."""
    s = len(q)
    m = [[q[k] if j == k else (1 - q[k]) / (s - 1) for j in range(s)] for k in range(s)]
    aug = [row[:] + [Fraction(int(i == k)) for i in range(s)] for k, row in enumerate(m)]
    for col in range(s):
        piv = next(r for r in range(col, s) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        inv_p = 1 / aug[col][col]
        aug[col] = [x * inv_p for x in aug[col]]
        for r in range(s):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[col])]
    norms = [sum(x * x for x in aug[j][s:]) for j in range(s)]
    return [sum(m[k][j] * norms[j] for j in range(s)) - 1 for k in range(s)]


def exactly_feasible(q: list[Fraction], epsilon: float) -> bool:
    """Every column of the exact form (8) matrix has max / min < e^eps, proved (the reference
    enclosure of e^eps of tests/test_epsilon_budget.py)."""
    s = len(q)
    for j in range(s):
        col = [q[k] if k == j else (1 - q[k]) / (s - 1) for k in range(s)]
        if min(col) <= 0 or ratio_vs_exp(max(col) / min(col), epsilon) != -1:
            return False
    return True


def enclosing_box(values: list[Fraction]) -> np.ndarray:
    """The (1, n) box of doubles, one ulp either side of the exact values."""
    lo = [math.nextafter(float(v), -math.inf) for v in values]
    hi = [math.nextafter(float(v), math.inf) for v in values]
    assert all(Fraction(a) <= v <= Fraction(b) for a, b, v in zip(lo, hi, values))
    return np.array([lo]), np.array([hi])


def _feasible_next_to_rr(s: int, epsilon: float, rng, spread: bool) -> list[Fraction] | None:
    """Doubles a few ulps below the keep probability of randomized response (``spread``: a random
    number of ulps per category), then all lowered together until the exact matrix is epsilon-DP."""
    q = [float(x) for x in np.full(s, rr(s, epsilon))]
    for k, steps in enumerate(rng.integers(0, 4, s) if spread else np.zeros(s, dtype=int)):
        for _ in range(int(steps)):
            q[k] = math.nextafter(q[k], 0.0)
    for _ in range(60):
        exact = [Fraction(x) for x in q]
        if exactly_feasible(exact, epsilon):
            return exact
        q = [math.nextafter(x, 0.0) for x in q]
    return None


@pytest.mark.parametrize("s", [3, 4, 5, 6])
def test_box_bounds_hold_exactly_next_to_the_optimum(s):
    """Next to randomized response the Lemma 6 and Lemma 8 bounds are tight: psi_k - bound is a
    few ulps.  On a box one ulp wide around exactly feasible points a few ulps from it, every bound
    is at most the point's psi_k in rational arithmetic (no tolerance): the outward rounding is
    checked at the scale of an ulp (the same formulas evaluated with rounding to nearest and no
    margin exceed psi_k at one of these points: S = 4, epsilon = 30, by 5.5e-18
    relative)."""
    rng = np.random.default_rng(40 + s)
    checked = 0
    for epsilon in (1e-3, 0.3, 1.0, math.log(2), 4.0, 30.0):
        c = _Constants.of(s, epsilon)
        _, _, evaluate = _evaluator(c, "three_categories" if s == 3 else "positive_definite")
        for trial in range(8):
            q = _feasible_next_to_rr(s, epsilon, rng, spread=trial > 0)
            if q is None:
                continue
            psi = rational_psi(q)
            sv = [Fraction(s) * (1 - x) / (s - 1) for x in q]          # s = 1 - d, exactly
            for k in range(s if s == 3 else 1):
                if s == 3:
                    rest = sorted((j for j in range(3) if j != k), key=lambda j: sv[j])
                    lo, hi = enclosing_box([sv[k], sv[rest[0]], sv[rest[1]]])
                else:
                    lo, hi = enclosing_box([sv[k]])
                _, _, bound = evaluate(lo, hi)
                assert bound.size == 1
                assert Fraction(float(bound[0])) <= psi[k], (s, epsilon, k)
                assert float(bound[0]) >= float(psi[k]) * (1 - 1e-6)      # and the bound is tight there
                checked += 1
    assert checked >= 30


@pytest.mark.parametrize("s", [2, 3, 4, 7, 50])
def test_constants_enclose_the_exact_values(s):
    """t_lo <= e^eps <= t_hi, delta <= delta_hi, nu <= nu_hi and psi_lo <= psi_RR, proved against
    the rational enclosure of e^eps of tests/test_epsilon_budget.py (each constant is monotone in
    e^eps, so the comparison is one with e^eps)."""
    for epsilon in (1e-9, 1e-3, 0.5, 1.0, 3.0, 40.0, 700.0):
        c = _Constants.of(s, epsilon)
        assert ratio_vs_exp(Fraction(c.t_lo), epsilon) == -1 and ratio_vs_exp(Fraction(c.t_hi), epsilon) == 1
        d, n = Fraction(c.delta_hi), Fraction(c.nu_hi)
        # delta <= D iff e^eps <= (1 + (S-1) D)/(1 - D);  nu <= N iff e^eps <= (1 + N)/(1 - (S-1) N)
        assert d >= 1 or ratio_vs_exp((1 + (s - 1) * d) / (1 - d), epsilon) == 1      # (delta < 1 always)
        assert (s - 1) * n >= 1 or ratio_vs_exp((1 + n) / (1 - (s - 1) * n), epsilon) == 1
        # psi decreases in t = e^eps: its value at an upper bound of e^eps is below the exact one
        t_hi = Fraction(exp_enclosure(epsilon)[1], 1 << BITS)
        assert Fraction(c.psi_lo) <= (s - 1) * (2 * t_hi + s - 2) / (t_hi - 1) ** 2
        assert c.psi_lo <= c.psi <= c.psi_lo * (1 + 1e-13) + 1e-300


def test_regions_are_named():
    assert set(REGIONS) == {"positive_definite", "indefinite_top", "indefinite_bottom", "indefinite_middle",
                            "three_categories"}
    with pytest.raises(PramkitError):
        _evaluator(_Constants.of(4, 1.0), "elsewhere")


@pytest.mark.parametrize("s", [2, 3, 4, 6, 20, 300])
@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 3.0, 12.0])
def test_certificate_closes(s, epsilon):
    b = variance_lower_bound(s, epsilon)
    assert b.proved and b.lower_bound <= b.optimum
    assert b.gap <= 1e-8 * b.optimum + 1e-15
    tb = variance_lower_bound(s, epsilon, truthful=True)
    assert tb.proved and tb.optimum == b.optimum


def test_a_search_stopped_early_still_gives_a_valid_bound():
    b = variance_lower_bound(4, 0.3, max_nodes=3)
    assert not b.proved and 0 <= b.lower_bound <= b.optimum


# -- Monte Carlo: the estimator's empirical squared error ---------------------------------------

@pytest.mark.slow
def test_monte_carlo_matches_the_objective():
    rng = np.random.default_rng(2024)
    s, eps, n, reps = 5, 1.0, 400, 6000
    counts = np.array([180, 100, 60, 40, 20])
    p = counts / n
    design = dp_min_variance(p, eps, n=n)
    m = design.matrix
    inv = np.linalg.inv(m)
    # PRAM only: the original file fixed, each record released from its row
    released = sum(rng.multinomial(c, m[k], size=reps) for k, c in enumerate(counts))
    est = (released / n) @ inv                          # (M^T)^-1 lambda_hat, one row per replication
    err = ((est - p) ** 2).sum(axis=1)
    assert abs(err.mean() - design.provenance.objective) < 4 * err.std(ddof=1) / math.sqrt(reps)
    assert l2_loss(counts, design) == pytest.approx(design.provenance.objective, rel=1e-9)
    one = moment_estimate(released[0], [design])
    np.testing.assert_allclose(one.counts / n, est[0], rtol=1e-9, atol=1e-12)
    # sampling and PRAM: the file itself drawn from p
    files = rng.multinomial(n, p, size=reps)
    released = np.stack([sum(rng.multinomial(c, m[k]) for k, c in enumerate(f)) for f in files[:3000]])
    err = (((released / n) @ inv - p) ** 2).sum(axis=1)
    expected = design.provenance.certificate["sampling_and_pram_loss"]
    assert expected == pytest.approx(design.provenance.objective + (1 - (p * p).sum()) / n, rel=1e-12)
    assert abs(err.mean() - expected) < 4 * err.std(ddof=1) / math.sqrt(len(err))


def test_monte_carlo_small():
    rng = np.random.default_rng(5)
    counts = np.array([30, 15, 5])
    n = counts.sum()
    design = dp_min_variance(counts / n, 2.0, n=int(n))
    inv = np.linalg.inv(design.matrix)
    released = sum(rng.multinomial(c, design.matrix[k], size=4000) for k, c in enumerate(counts))
    err = (((released / n) @ inv - counts / n) ** 2).sum(axis=1)
    assert abs(err.mean() - design.provenance.objective) < 4 * err.std(ddof=1) / math.sqrt(4000)


# -- the design as a PramMatrix -----------------------------------------------------------------

def test_design_is_randomized_response_with_provenance():
    p = [0.5, 0.3, 0.15, 0.05]
    m = dp_min_variance(p, 1.2, categories=["a", "b", "c", "d"], n=250)
    q = rr(4, 1.2)
    np.testing.assert_allclose(m.diagonal, q, rtol=1e-12)
    np.testing.assert_allclose(m.form8_q, q, rtol=1e-12)
    assert m.categories == ("a", "b", "c", "d")
    assert m.epsilon <= 1.2
    prov = m.provenance
    assert prov.method == "dp_min_variance" and prov.objective_name == "l2_loss"
    assert prov.parameters == {"epsilon": 1.2, "p": p, "n": 250, "truthful": False}
    assert prov.objective == pytest.approx(cator_l2(p, np.full(4, q), 250)[()], rel=1e-9)
    cert = prov.certificate
    assert cert["optimal"] and cert["closed"] and not cert["depends_on_p"]
    assert cert["lower_bound"] <= prov.objective and cert["certified_gap"] <= cert["tolerance"]
    assert cert["per_record_loss"] == pytest.approx(250 * prov.objective, rel=1e-12)
    assert prov.seconds is not None and prov.seconds >= 0


def test_design_does_not_depend_on_p_and_scales_with_n():
    a = dp_min_variance([0.9, 0.05, 0.05], 0.8)
    b = dp_min_variance([0.2, 0.3, 0.5], 0.8, n=10)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert b.provenance.objective == pytest.approx(a.provenance.objective / 10, rel=1e-12)


def test_truthful_and_two_categories():
    m = dp_min_variance([0.3, 0.7], 0.5, truthful=True)
    assert m.is_truthful and m.provenance.certificate["optimal"]
    two = dp_min_variance([0.3, 0.7], 0.5)
    np.testing.assert_array_equal(two.matrix, m.matrix)
    assert "mirror" in two.provenance.certificate["ties"]
    # the mirror image is feasible and ties (S = 2)
    mirror = np.full(2, 1 - rr(2, 0.5))
    assert cator_l2([0.3, 0.7], mirror)[()] == pytest.approx(two.provenance.objective, rel=1e-9)


@pytest.mark.parametrize("epsilon", [2e-3, 40.0, 700.0])
def test_extreme_budgets(epsilon):
    m = dp_min_variance([0.2] * 5, epsilon)
    assert m.provenance.certificate["optimal"]
    assert m.epsilon <= epsilon
    assert np.allclose(m.matrix.sum(axis=1), 1.0)
    assert m.provenance.objective > 0 and math.isfinite(m.provenance.objective)


def test_information_optimum_can_be_singular_this_design_never_is():
    p = [0.05, 0.05, 0.9]
    info = dp_optimal(p, 1.0)
    assert np.isinf(form8_variances(info.diagonal)).all()        # two uniform rows
    var = dp_min_variance(p, 1.0)
    assert np.linalg.cond(var.matrix) < 10
    assert math.isfinite(var.provenance.objective)


def test_bad_input():
    for bad in (0.0, -1.0, float("nan"), float("inf"), "1", True, 701.0):
        with pytest.raises(PramkitError):
            dp_min_variance([0.5, 0.5], bad)
    for p in ([1.0], [0.5, 0.6], [-0.1, 1.1], [[0.5, 0.5]], [0.5, float("nan")]):
        with pytest.raises(PramkitError):
            dp_min_variance(p, 1.0)
    for n in (0, -3, 1.5, True, "10"):
        with pytest.raises(PramkitError):
            dp_min_variance([0.5, 0.5], 1.0, n=n)
    with pytest.raises(PramkitError):
        dp_min_variance([0.5, 0.5], 1.0, categories=["a"])
    with pytest.raises(PramkitError):
        dp_min_variance([0.5, 0.5], 1.0, truthful="yes")
    with pytest.raises(PramkitError):
        form8_variances([0.5])
    with pytest.raises(PramkitError):
        form8_l2_loss([0.5, 0.5], [0.5, 0.5, 0.5])
    with pytest.raises(PramkitError):
        variance_lower_bound(1, 1.0)
    with pytest.raises(PramkitError):
        variance_lower_bound(3, 1.0, max_nodes=0)


@pytest.mark.slow
def test_thousand_categories():
    rng = np.random.default_rng(3)
    m = dp_min_variance(rng.dirichlet(np.ones(1000)), 1.0)
    assert m.provenance.certificate["optimal"] and m.provenance.seconds < 10
    assert m.epsilon <= 1.0


# -- the dp family's objective option (pramkit.design.registry) ----------------------------------

def test_registry_objective_option():
    from pramkit.design.registry import FAMILIES, dp_options
    from pramkit.errors import ParameterError

    dp = FAMILIES["dp"]
    p, cats = np.array([0.05, 0.05, 0.9]), ["a", "b", "c"]
    info = dp.build(cats, p, 1.0, {})
    assert info.provenance.method == "dp_optimal" and dp.build(cats, p, 1.0, {"objective": "information"}) \
        .provenance.method == "dp_optimal"
    var = dp.build(cats, p, 1.0, {"objective": "variance"})
    assert var.provenance.method == "dp_min_variance" and var.categories == tuple(cats)
    np.testing.assert_array_equal(var.matrix, dp_min_variance(p, 1.0).matrix)
    # independent check: randomized response's keep probability, and a finite loss where the
    # information-optimal design is singular
    np.testing.assert_allclose(var.diagonal, rr(3, 1.0), rtol=1e-14)
    assert np.isinf(cator_l2(p, info.diagonal)[()]) and np.isfinite(cator_l2(p, var.diagonal)[()])
    # the variance design does not depend on p: the family reads no frequencies for it
    assert not dp.reads_frequencies({"objective": "variance"}) and dp.reads_frequencies({})
    assert dp.takes_budget({"objective": "variance"})
    np.testing.assert_array_equal(dp.build(cats, None, 1.0, {"objective": "variance"}).matrix, var.matrix)
    truthful = dp.build(cats, p, 1.0, {"objective": "variance", "truthful": True})
    assert truthful.provenance.certificate["truthful_required"] and truthful.provenance.certificate["optimal"]
    np.testing.assert_array_equal(truthful.matrix, var.matrix)
    assert dp_options({"form": None, "objective": None, "truthful": False}) == ("diagonal", "information", False)
    with pytest.raises(ParameterError, match="a distance-based design needs distances"):
        dp.build(cats, p, 1.0, {"objective": "distance"})
    for bad, message in (({"objective": "entropy"}, "objective must be one of 'information', 'variance', 'distance'"),
                         ({"objective": "variance", "form": "general"}, "form 'diagonal'"),
                         ({"form": "square"}, "form must be one of 'diagonal', 'general'"),
                         ({"truthful": True, "form": "general"}, "diagonal form"),
                         ({"truthful": "yes"}, "truthful must be True or False"),
                         ({"target": 1}, "its options are truthful, form, objective")):
        with pytest.raises(ParameterError, match=message):
            dp.build(cats, p, 1.0, bad)
        with pytest.raises(ParameterError, match=message):
            dp.reads_frequencies(bad)
