"""The branch and bound over the arrangements of a vertex pattern
(pramkit.design.dp.split_bound): every placement of the singletons and every
split at once, against enumerating them all; each node's bound against the
best arrangement its window holds; a wrong incumbent; large S; the pieces
(singleton choice, multiplier search) against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_dp_optimal import every_arrangement

from pramkit.design.dp.optimal import LEVEL_TOL, dp_optimal, solve_form8, vertex_patterns
from pramkit.design.dp.split_bound import _best_singles, _minimise, _Problem, bound_split
from pramkit.errors import ParameterError
from pramkit.information import form8_objective, mutual_information_form8


def random_p(rng, s, kind):
    if kind == 0:
        p = rng.dirichlet(np.ones(s))
    elif kind == 1:
        p = rng.dirichlet(np.full(s, 0.15))
    elif kind == 2:
        p = rng.uniform(0.4, 0.9) ** np.arange(s)
    elif kind == 3:
        p = rng.integers(0, 4, size=s).astype(float)   # ties and zeros
        p[0] += 1.0
    else:
        p = np.concatenate([[rng.uniform(5, 40)], np.ones(s - 1)])
    return p / p.sum()


def random_alpha(rng, s):
    """From 0.01 to well beyond Proposition 3.2 (log(S - 2) + 1 and more), now and then extreme."""
    if rng.random() < 0.1:
        return float(rng.choice([25.0, 60.0, 700.0]))
    return float(np.exp(rng.uniform(np.log(0.01), np.log(math.log(max(s - 2, 2)) + 6.0))))


def shape(vals):
    return vals[0] - vals[1] > LEVEL_TOL, vals[1] - vals[2] > LEVEL_TOL, vals[2] - vals[3] > LEVEL_TOL


def all_placements(vals):
    """bound_split's arguments for a pattern with every placement of its singletons free."""
    top, two, bottom = shape(vals)
    singles = [(None, float(vals[l])) for l, present in ((0, top), (3, bottom)) if present]
    return singles, float(vals[1]), float(vals[2] if two else vals[1])


def pattern_cases(rng, n, s_range):
    for i in range(n):
        s = int(rng.integers(*s_range))
        p = random_p(rng, s, i % 5)
        a = random_alpha(rng, s)
        for vals in vertex_patterns(s, a, truthful=i % 4 == 0):
            if any(shape(vals)):
                yield p, a, vals


def test_search_reaches_the_best_of_every_placement_and_split():
    """From no incumbent the search is a solver over every placement of the
    singletons and every split at once: it must reach the best of all
    arrangements (enumerated here), bound it, and close; S = 4..9, every
    pattern, alpha from 0.01 to far beyond Proposition 3.2."""
    rng = np.random.default_rng(11)
    shapes = set()
    for p, a, vals in pattern_cases(rng, 70, (4, 10)):
        q = every_arrangement(p.size, vals)
        best = float(form8_objective(p, q).max())
        singles, big_b, small_b = all_placements(vals)
        res = bound_split(p, singles, np.arange(p.size), big_b, small_b, -math.inf, 1e-12)
        assert res.closed, (p, a, vals)
        assert res.best_value == pytest.approx(best, abs=1e-12), (p, a, vals)
        assert res.upper_bound >= best - 1e-15
        assert mutual_information_form8(p, res.best_q) == pytest.approx(best, abs=1e-12)
        shapes.add(shape(vals))
    # hypercube, one singleton with one or two middle levels, two singletons
    assert {(False, True, False), (True, True, False), (True, False, True), (True, False, False),
            (False, False, True)} <= shapes


def test_each_node_bound_holds_for_its_window():
    """The bound of a node -- over every placement at once, for the
    arrangements whose W lies in its window, with some levels fixed --
    against the best such arrangement, enumerated: random windows (from
    the whole range to narrow ones), random fixes."""
    rng = np.random.default_rng(12)
    checked = 0
    for p, a, vals in pattern_cases(rng, 40, (4, 9)):
        singles, big_b, small_b = all_placements(vals)
        levels = np.array(sorted({v for _, v in singles} | {big_b, small_b}, reverse=True))
        single = np.isin(levels, [v for _, v in singles])
        mask = (1 << len(levels)) - 1
        prob = _Problem(p, levels, single, np.full(p.size, mask, dtype=np.int64))
        q = every_arrangement(p.size, vals)
        f = form8_objective(p, q)
        w = ((1.0 - q) / (p.size - 1)) @ p
        code = np.searchsorted(-levels, -q)                 # level index of every entry
        for _ in range(6):
            lo, hi = np.sort(rng.choice(w, size=2)) + np.array([-1.0, 1.0]) * rng.uniform(0, 1e-3) * w.max()
            fixes = ()
            if rng.random() < 0.5:
                z = int(rng.integers(p.size))
                fixes = ((z, int(rng.integers(len(levels)))),)
            inside = (w > lo + 1e-15) & (w < hi - 1e-15)
            for z, l in fixes:
                inside &= code[:, z] == l
            node = prob.node(float(lo), float(hi), fixes, None)
            if inside.any():
                assert node.bound >= f[inside].max() - 1e-15, (p, a, vals, lo, hi, fixes)
                checked += 1
    assert checked > 100


def test_all_placements_bound_is_above_the_best_of_each_placement():
    """The root bound over all placements of the singletons at once (one
    node, no branching) is at least the true best of every placement."""
    rng = np.random.default_rng(13)
    checked = 0
    for p, a, vals in pattern_cases(rng, 60, (4, 9)):
        top, two, bottom = shape(vals)
        if not (top or bottom):
            continue
        singles, big_b, small_b = all_placements(vals)
        levels = np.array(sorted({v for _, v in singles} | {big_b, small_b}, reverse=True))
        prob = _Problem(p, levels, np.isin(levels, [v for _, v in singles]),
                        np.full(p.size, (1 << len(levels)) - 1, dtype=np.int64))
        root = prob.node(-math.inf, math.inf, (), None).bound
        q = every_arrangement(p.size, vals)
        f = form8_objective(p, q)
        hold = np.argmax(q == vals[0], axis=1) if top else np.argmax(q == vals[3], axis=1)
        for z in np.unique(hold):
            assert root >= f[hold == z].max() - 1e-15, (p, a, vals, z)
            checked += 1
    assert checked > 100


def test_wrong_incumbent_does_not_hide_the_best():
    """Given the second-best arrangement's value as incumbent (as if another
    pattern had reached it), the search must still find the best."""
    rng = np.random.default_rng(14)
    checked = 0
    for p, a, vals in pattern_cases(rng, 40, (5, 9)):
        f = np.unique(form8_objective(p, every_arrangement(p.size, vals)))
        if f.size < 2 or f[-1] - f[-2] <= 1e-10:
            continue
        singles, big_b, small_b = all_placements(vals)
        res = bound_split(p, singles, np.arange(p.size), big_b, small_b, float(f[-2]), 1e-13)
        assert res.best_q is not None and res.best_value == pytest.approx(f[-1], abs=1e-12)
        checked += 1
    assert checked > 20


def test_singleton_patterns_against_every_placement():
    """Patterns with singletons and one middle level, S = 14..60: every
    placement (and pair of placements) scored here against the search."""
    rng = np.random.default_rng(31)
    checked = 0
    for i in range(24):
        s = int(rng.integers(14, 61))
        p = random_p(rng, s, i % 5)
        for vals in vertex_patterns(s, float(rng.uniform(0.5, math.log(s - 2) + 3.0))):
            top, two, bottom = shape(vals)
            if two or not (top or bottom):
                continue
            best = float(form8_objective(p, every_arrangement(s, vals)).max())
            singles, big_b, small_b = all_placements(vals)
            res = bound_split(p, singles, np.arange(s), big_b, small_b, -math.inf, 1e-12)
            assert res.closed and res.best_value == pytest.approx(best, abs=1e-12)
            checked += 1
    assert checked >= 20


def test_fixed_singletons_and_a_subset_of_categories():
    """Singletons fixed on given categories, the others split: the search
    over one placement (as the certificates' tests call it)."""
    rng = np.random.default_rng(15)
    for p, a, vals in pattern_cases(rng, 20, (5, 9)):
        top, two, bottom = shape(vals)
        if not two or not top:
            continue
        i = int(rng.integers(p.size))
        rest = np.delete(np.arange(p.size), i)
        res = bound_split(p, [(i, float(vals[0]))], rest, float(vals[1]), float(vals[2]), -math.inf, 1e-12)
        q = every_arrangement(p.size, vals)
        best = float(form8_objective(p, q[q[:, i] == vals[0]]).max())
        assert res.closed and res.best_value == pytest.approx(best, abs=1e-12)


def test_certificate_at_large_s():
    """S = 300 at alpha = 0.7 and S = 2000 beyond Proposition 3.2: closed,
    a gap within the tolerance, and random splits, single moves and other
    placements of the optimum's levels never beat it."""
    rng = np.random.default_rng(16)
    for s, a in ((300, 0.7), (2000, math.log(1998) + 1.0)):
        p = rng.dirichlet(np.full(s, 0.3))
        m = dp_optimal(p, a)
        cert = m.provenance.certificate
        assert cert["search"] == "branch_and_bound" and cert["optimal"] is True
        assert 0.0 <= cert["certified_gap_nats"] <= 1e-12 * max(1.0, m.provenance.objective)
        assert cert["upper_bound_nats"] >= m.provenance.objective
        q = m.diagonal
        levels = np.unique(np.round(q, 14))
        for _ in range(60):
            moved = q.copy()
            z = rng.integers(s)
            moved[z] = rng.choice(levels)
            assert mutual_information_form8(p, moved) <= m.provenance.objective + 1e-12
            swap = q.copy()
            i, j = rng.choice(s, size=2, replace=False)
            swap[[i, j]] = swap[[j, i]]
            assert mutual_information_form8(p, swap) <= m.provenance.objective + 1e-12
        hi, lo = levels.max(), levels.min()
        for _ in range(100):
            rand = np.where(rng.random(s) < rng.random(), hi, lo)
            assert mutual_information_form8(p, rand) <= m.provenance.objective + 1e-12


@pytest.mark.parametrize("alpha", [0.01, 1.0, 5.0, 40.0, 300.0])
def test_degenerate_distributions_are_proved(alpha):
    """A point mass, uniform p, two equal categories and zeros, one dominant
    category: released masses of exactly 0 (a point mass at large alpha)
    must not leave the bound infinite; the optimum equals exhaustive scoring."""
    s = 14
    for p in (np.eye(s)[0], np.full(s, 1 / s), np.r_[0.5, 0.5, np.zeros(s - 2)],
              np.r_[0.9, np.full(s - 1, 0.1 / (s - 1))]):
        bb = solve_form8(p, alpha, search="branch_and_bound")
        ex = solve_form8(p, alpha, search="exhaustive")
        assert bb.proved and math.isfinite(bb.upper_bound)
        assert bb.mutual_information_nats == pytest.approx(ex.mutual_information_nats, abs=1e-12)


def test_bad_arguments():
    p = np.full(4, 0.25)
    for singles, rest, big_b, small_b in (
            ([], np.arange(3), 0.6, 0.1),               # category 3 in nothing
            ([(0, 0.9)], np.arange(4), 0.6, 0.1),       # category 0 twice
            ([(None, 0.6)], np.arange(4), 0.6, 0.1),    # singleton level = middle level
            ([], np.arange(4), 0.1, 0.6)):              # middle levels in the wrong order
        with pytest.raises(ParameterError):
            bound_split(p, singles, rest, big_b, small_b, -math.inf, 1e-12)


def test_best_singles_against_enumeration():
    """The best choice of distinct categories for one or two singleton
    levels, with categories that must be among them, against every choice."""
    rng = np.random.default_rng(17)
    for _ in range(400):
        n, k = int(rng.integers(1, 7)), int(rng.integers(1, 3))
        bonus = [np.where(rng.random(n) < 0.3, -math.inf, rng.normal(size=n)) for _ in range(k)]
        forced = rng.random(n) < (0.3 if k == 2 else 0.15)
        want = -math.inf
        for combo in itertools.product(range(n), repeat=k):
            if len(set(combo)) == k and set(np.flatnonzero(forced)) <= set(combo):
                want = max(want, sum(b[z] for b, z in zip(bonus, combo)))
        got, picks = _best_singles(bonus, forced)
        assert got == want
        if math.isfinite(want):
            assert sum(b[z] for b, z in zip(bonus, picks)) == want


def test_minimise_reaches_the_minimum_of_a_maximum_of_lines():
    """The multiplier search on convex piecewise-linear functions (a maximum
    of random lines, as the node's bound is in lambda), from far-off starts."""
    rng = np.random.default_rng(18)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        slope = rng.normal(size=n) * 10.0 ** rng.integers(-6, 1)
        slope[0], slope[1] = -abs(slope[0]) - 1e-9, abs(slope[1]) + 1e-9        # bounded below
        icpt = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)

        def f(lam, slope=slope, icpt=icpt):
            v = icpt + slope * lam
            k = int(np.argmax(v))
            return float(v[k]), float(slope[k]), 0

        cross = [(icpt[j] - icpt[i]) / (slope[i] - slope[j])
                 for i in range(n) for j in range(n) if slope[i] != slope[j]]
        best = min(f(c)[0] for c in cross)
        lam, _, _ = _minimise(f, float(rng.normal() * 10.0 ** rng.integers(0, 6)))
        assert f(lam)[0] <= best + 1e-9 * (1.0 + abs(best))
