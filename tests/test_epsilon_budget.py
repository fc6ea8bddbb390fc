"""Epsilon exactly within the budget (issue 14, part 2).

Every epsilon pramkit states must be an upper bound on the exact epsilon of
the stored doubles (Shlomo and Skinner 2012, section 4: the largest
``log(max / min)`` within a column), and every design for a budget E must
store a matrix whose exact epsilon is at most E.  The reference here is
independent of :mod:`pramkit.privacy.exact`: ratios of doubles as
fractions, and ``e**x`` enclosed between two fixed-point integers computed
from its Taylor series with a bound on the remainder.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

from pramkit.design.bistochastic.families import fit_family
from pramkit.design.classic import randomized_response
from pramkit.design.dp.general import dp_general
from pramkit.design.dp.multivariate import compare_joint, joint_table, split_budget
from pramkit.design.dp.optimal import dp_optimal, form8_epsilon
from pramkit.engine import realised_law
from pramkit.errors import ParameterError
from pramkit.matrix import PramMatrix
from pramkit.privacy.epsilon import matrix_epsilon, record_epsilon
from pramkit.privacy.exact import column_epsilon, fit_sum, sum_up, within_budget

#: Fractional bits of the fixed-point enclosure of e**x.
BITS = 400


def exp_enclosure(x: float) -> tuple[int, int]:
    """Integers (lo, hi) with ``lo / 2**BITS <= e**x <= hi / 2**BITS`` for a double ``0 <= x <= 800``.

    ``e**x = (e**y)**(2**k)`` with ``y = x / 2**k <= 1/2``; ``e**y`` is its
    Taylor polynomial of degree 60 (terms rounded down for lo, up for hi) plus,
    for hi, the remainder, at most twice the next term; the squarings round
    down (lo) and up (hi)."""
    k = 0
    while Fraction(x) > Fraction(2 ** k, 2):
        k += 1
    y = Fraction(x) / 2 ** k
    one = 1 << BITS
    lo = hi = one
    term = Fraction(1)
    for n in range(1, 61):
        term = term * y / n
        scaled = term * one
        lo += scaled.numerator // scaled.denominator
        hi += -(-scaled.numerator // scaled.denominator)
    tail = 2 * term * y / 61 * one
    hi += -(-tail.numerator // tail.denominator)
    for _ in range(k):
        lo = (lo * lo) >> BITS
        hi = -((-(hi * hi)) >> BITS)
    return lo, hi


def ratio_vs_exp(ratio: Fraction, x: float) -> int:
    """-1 if ``ratio < e**x`` (proved), +1 if ``ratio > e**x`` (proved), 0 if the enclosure cannot tell."""
    lo, hi = exp_enclosure(x)
    scaled = ratio * (1 << BITS)
    if scaled < lo:
        return -1
    if scaled > hi:
        return 1
    return 0


def exact_max_ratio(matrix: np.ndarray) -> Fraction | None:
    """The largest ``max / min`` over the released columns, exactly; None if a column mixes zeros."""
    hi, lo = matrix.max(axis=0), matrix.min(axis=0)
    best = Fraction(1)
    for h, l in zip(hi.tolist(), lo.tolist()):
        if h == 0:
            continue
        if l == 0:
            return None
        best = max(best, Fraction(h) / Fraction(l))
    return best


def assert_exact_epsilon_within(matrix: np.ndarray, budget: float) -> None:
    """The exact epsilon of the stored doubles is at most ``budget``."""
    ratio = exact_max_ratio(matrix)
    assert ratio is not None
    assert ratio == 1 or ratio_vs_exp(ratio, budget) == -1, (ratio, budget)


def assert_stated_is_tight_upper_bound(matrix: np.ndarray, stated: float) -> None:
    """``stated`` is not below the exact epsilon, and the double below it is."""
    ratio = exact_max_ratio(matrix)
    if ratio is None:
        assert stated == math.inf
        return
    if ratio == 1:
        assert stated == 0.0
        return
    assert ratio_vs_exp(ratio, stated) == -1, "stated epsilon below the exact one"
    assert ratio_vs_exp(ratio, math.nextafter(stated, 0.0)) == 1, "stated epsilon not the smallest upper bound"


def test_module_doctests():
    import doctest

    from pramkit.privacy import exact

    assert doctest.testmod(exact).failed == 0


def test_enclosure_of_exp():
    """The reference itself: tight and consistent with math.exp."""
    for x in (0.0, 1e-300, 1e-12, 0.3, 1.0, 2.0, 37.5, 700.0, 745.0):
        lo, hi = exp_enclosure(x)
        assert lo <= hi <= lo + (lo >> 300)
        if x < 709:
            assert float(Fraction(lo, 1 << BITS)) == pytest.approx(math.exp(x), rel=1e-15)


# -- the stated epsilon is an upper bound, to the last ulp -------------------------------------

def test_matrix_epsilon_is_the_smallest_double_above_the_exact_value():
    rng = np.random.default_rng(0)
    for i in range(300):
        s = int(rng.integers(2, 7))
        m = rng.dirichlet(np.full(s, rng.choice([0.05, 1.0, 50.0, 1e6])), size=s)
        if i % 5 == 0:
            m[rng.integers(s)] = 10.0 ** rng.uniform(-320, -250, size=s)      # subnormal / tiny entries
        if i % 7 == 0:
            m[:, 1] = m[:, 0] * (1 + 1e-15)                                   # near ties between columns
        if i % 11 == 0:
            m[0, 0] = 0.0                                                     # infinite epsilon
        assert_stated_is_tight_upper_bound(m, matrix_epsilon(m))


def test_designed_ratios_near_the_boundary():
    """Matrices whose exact epsilon is within ulps of a round budget: the naive
    float computation is one ulp under the truth for some of these."""
    rng = np.random.default_rng(1)
    under = 0
    for _ in range(300):
        e = float(rng.choice([0.5, 1.0, 2.0, 3.0])) * (1 + rng.uniform(-1e-15, 1e-15))
        s = int(rng.integers(2, 9))
        q = math.exp(e) / (math.exp(e) + s - 1)
        m = np.full((s, s), (1 - q) / (s - 1))
        np.fill_diagonal(m, q)
        stated = matrix_epsilon(m)
        naive = float(np.max(np.log(m.max(axis=0)) - np.log(m.min(axis=0))))
        assert_stated_is_tight_upper_bound(m, stated)
        ratio = exact_max_ratio(m)
        under += ratio_vs_exp(ratio, naive) == 1
    assert under > 0      # the check above is not vacuous: rounding to nearest does fall short


def test_form8_epsilon_is_the_dense_value():
    rng = np.random.default_rng(2)
    for _ in range(100):
        s = int(rng.integers(2, 12))
        q = rng.uniform(0.0, 1.0, size=s)
        assert form8_epsilon(q) == PramMatrix.from_diagonal(q).epsilon
        assert_stated_is_tight_upper_bound(PramMatrix.from_diagonal(q).matrix, form8_epsilon(q))


def test_epsilon_is_fast_for_large_s():
    """O(S) for the column extremes (S = 10^5), O(S^2) for a dense matrix (S = 2000)."""
    rng = np.random.default_rng(3)
    lo = rng.uniform(0.1, 0.2, size=100_000)
    hi = lo * rng.uniform(1.0, 2.0, size=lo.size)
    start = time.perf_counter()
    e = column_epsilon(hi, lo)
    assert time.perf_counter() - start < 1.0
    assert e >= math.log(float(np.max(hi / lo)))
    m = randomized_response(range(2000), 1.5).matrix
    start = time.perf_counter()
    assert matrix_epsilon(m) <= 1.5
    assert time.perf_counter() - start < 1.0


def test_record_epsilon_rounds_the_sum_upward():
    rng = np.random.default_rng(4)
    for _ in range(500):
        values = [float(v) for v in rng.uniform(0.0, 3.0, size=int(rng.integers(1, 8)))]
        total = record_epsilon(values)
        exact = sum((Fraction(v) for v in values), Fraction(0))
        assert Fraction(total) >= exact and Fraction(math.nextafter(total, 0.0)) < exact or Fraction(total) == exact
    assert record_epsilon([1.0, 0.75 * 2.0 ** -53]) == math.nextafter(1.0, math.inf)  # 1.0 + it rounds down
    assert record_epsilon([0.1, 0.2]) == 0.1 + 0.2                                      # this one rounds up
    assert record_epsilon([1.0, math.inf]) == math.inf and record_epsilon([]) == 0.0


def test_fit_sum_keeps_the_upward_sum_within_the_budget():
    rng = np.random.default_rng(5)
    for _ in range(300):
        budget = float(rng.uniform(0.01, 10.0))
        j = int(rng.integers(1, 6))
        parts = fit_sum([budget / j] * j, budget)
        assert sum_up(parts) <= budget
        assert sum((Fraction(v) for v in parts), Fraction(0)) <= Fraction(budget)
        assert all(0 <= (budget / j - v) / (budget / j) < 1e-14 for v in parts)


# -- every design lands within its budget, exactly -----------------------------------------------

def _random_p(rng: np.random.Generator, s: int) -> np.ndarray:
    p = rng.dirichlet(np.full(s, float(rng.choice([0.2, 1.0, 5.0]))))
    if rng.random() < 0.3:
        p[rng.integers(s)] = 10.0 ** rng.uniform(-14, -9)
    return p / p.sum()


def _random_budget(rng: np.random.Generator) -> float:
    if rng.random() < 0.4:
        return float(rng.choice([0.1, 0.5, 1.0, 2.0, 3.0, 5.0]))
    return float(np.exp(rng.uniform(np.log(0.01), np.log(9.0))))


def _check_design(m: PramMatrix, budget: float) -> None:
    assert m.epsilon <= budget
    assert_exact_epsilon_within(m.matrix, budget)
    assert_stated_is_tight_upper_bound(m.matrix, m.epsilon)
    assert np.all(np.abs(m.matrix.sum(axis=1) - 1.0) <= 1e-12)


def test_dp_optimal_designs_are_within_budget():
    rng = np.random.default_rng(6)
    for i in range(60):
        s = int(rng.integers(2, 25))
        budget = _random_budget(rng)
        m = dp_optimal(_random_p(rng, s), budget, truthful=i % 4 == 0)
        _check_design(m, budget)
        assert m.form8_q is not None


def test_dp_general_designs_are_within_budget():
    rng = np.random.default_rng(7)
    for _ in range(25):
        s = int(rng.integers(2, 6))
        budget = _random_budget(rng)
        _check_design(dp_general(_random_p(rng, s), budget), budget)


def test_randomized_response_is_within_budget():
    rng = np.random.default_rng(8)
    budgets = [1e-12, 1e-6, 700.0, 745.5, 900.0] + [_random_budget(rng) for _ in range(60)]
    for budget in budgets:
        s = int(rng.integers(2, 60))
        _check_design(randomized_response(range(s), budget), budget)


def test_bistochastic_rr_fitted_to_beta_is_within_its_epsilon():
    """fit_family('rr') reaches a beta through an epsilon; the matrix stays within it."""
    rng = np.random.default_rng(9)
    for _ in range(15):
        fit = fit_family("rr", list(range(int(rng.integers(2, 12)))), float(rng.uniform(0.05, 0.95)))
        _check_design(fit.matrix, fit.parameter)


def test_budget_splits_and_joint_designs_are_within_the_record_budget():
    rng = np.random.default_rng(10)
    for i in range(12):
        budget = _random_budget(rng)
        dists = {f"v{j}": _random_p(rng, int(rng.integers(2, 5))) for j in range(int(rng.integers(2, 4)))}
        split = split_budget(dists, budget, split="optimal" if i % 2 else "equal", grid=8)
        stated = [m.epsilon for m in split.matrices.values()]
        assert record_epsilon(list(split.epsilons.values())) <= budget
        assert sum((Fraction(e) for e in stated), Fraction(0)) <= Fraction(budget)
        for name, m in split.matrices.items():
            _check_design(m, split.epsilons[name])
        if split.upper_bound_nats is not None:
            assert split.upper_bound_nats >= split.total_nats
    import pandas as pd

    df = pd.DataFrame({"a": rng.choice(["x", "y"], 400), "b": rng.choice(["u", "v", "w"], 400)})
    table = joint_table(df, ["a", "b"])
    split = split_budget({n: table.marginal(n) for n in table.names}, 2.0, split="equal")
    _check_design(compare_joint(table, split).joint_matrix, 2.0)


def test_general_design_command_states_epsilon_within_the_budget(capsys):
    """The command of the issue: --family general reported 1.0000000000000004 for a budget of 1."""
    import json

    from pramkit.cli import main

    assert main(["design", "--probs", "0.6,0.3,0.1", "--epsilon", "1", "--family", "general", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon"] <= 1.0
    assert_exact_epsilon_within(np.array(out["matrix"]), 1.0)


# -- within_budget itself ------------------------------------------------------------------------

def test_within_budget_moves_only_what_rounding_put_out_of_budget():
    m = randomized_response(range(4), 1.0).matrix
    assert np.array_equal(within_budget(m, 1.0), m)                 # already within: untouched
    q = math.exp(1.0) / (math.exp(1.0) + 3)
    raw = np.full((4, 4), (1 - q) / 3)
    np.fill_diagonal(raw, q)
    fixed = within_budget(raw, 1.0)
    assert np.max(np.abs(fixed - raw)) <= 4 * np.spacing(raw.max())
    assert_exact_epsilon_within(fixed, 1.0)
    with pytest.raises(ParameterError, match="infinite"):
        within_budget(np.eye(3), 1.0)
    with pytest.raises(ParameterError, match="rounding"):
        within_budget(randomized_response(range(4), 2.0).matrix, 1.0)


# -- every family of the registry, exactly ---------------------------------------------------------

def _family_options(name: str, s: int, rng: np.random.Generator, largest: int | None = None) -> dict:
    """Random parameters of a family of FAMILIES that keep its epsilon finite (floors for the
    families with zeros; no bandwidth for keep), for variables of ``s`` to ``largest`` categories."""
    floor = float(rng.uniform(0.01, 1.0)) / (largest or s)
    if name == "dp":
        form = "general" if s <= 5 and rng.uniform() < 0.3 else "diagonal"
        objective = "variance" if form == "diagonal" and rng.uniform() < 0.4 else "information"
        return {"form": form, "objective": objective, "truthful": bool(form == "diagonal" and rng.uniform() < 0.3)}
    if name == "invariant":
        return {"pd": float(rng.uniform(0.5, 0.95)), "alpha": float(rng.uniform(0.1, 0.9)),
                "diagonal": str(rng.choice(["uniform", "fixed"])), "seed": int(rng.integers(1000))}
    if name == "keep":
        return {"keep": float(rng.uniform(0.3, 0.95))}
    if name == "rr":
        return {} if rng.uniform() < 0.6 else {"beta": float(rng.uniform(0.2, 0.9))}
    if name == "kanon":
        return {"k": int(rng.integers(1, s + 1)), "gamma": floor}
    if name == "tridiagonal":
        return {"alpha": float(rng.uniform(0.05, 0.5)), "gamma": floor}
    if name == "circulant":
        return {"keep": float(rng.uniform(0.2, 0.95))}
    if name == "bistochastic-beta":
        return {"beta": float(rng.uniform(0.2, 0.9)), "family": str(rng.choice(["rr", "circulant"]))}
    if name == "metric":
        return {"metric_epsilon": float(rng.uniform(0.1, 2.0)), "distances": "ordinal",
                "mechanism": str(rng.choice(["exponential", "geometric"]))}
    raise AssertionError(f"no parameters for the new family {name!r}: add them here")


def test_every_family_states_an_upper_bound_on_its_exact_epsilon():
    """Many random designs of every family of the registry: the stored epsilon is not below the
    exact epsilon of the stored entries (and is the smallest such double); families designed to
    a budget are within it exactly."""
    from pramkit.design.registry import FAMILIES

    rng = np.random.default_rng(11)
    for name, fam in FAMILIES.items():
        for _ in range(30 if name != "dp" else 60):
            s = int(rng.integers(2, 9))
            opts = _family_options(name, s, rng)
            budget = _random_budget(rng) if fam.takes_budget(opts) else None
            p = _random_p(rng, s) if fam.reads_frequencies(opts) else None
            m = fam.build(list(range(s)), p, budget, opts)
            if m.geometric_rate is not None:  # stored by its rate, sampled exactly: the formula's epsilon, rounded up
                exact = Fraction(m.geometric_rate) * (s - 1)
                assert Fraction(m.epsilon) >= exact > Fraction(math.nextafter(m.epsilon, 0.0))
            elif m.exponential_rate is not None:  # stored by its parameters, sampled exactly: a proved upper
                ratio = exact_max_ratio(m.matrix)  # bound of the formula (docs/perturbation.md), not the doubles'
                assert ratio == 1 or ratio_vs_exp(ratio, m.epsilon * (1 + 1e-12)) == -1
                assert m.epsilon <= m.exponential_rate * m.exponential_distances.max * (1 + 1e-15)
            else:
                assert_stated_is_tight_upper_bound(m.matrix, m.epsilon)
            assert math.isfinite(m.epsilon), (name, opts)
            if budget is not None:
                assert m.epsilon <= budget
                assert_exact_epsilon_within(m.matrix, budget)


def test_dp_min_variance_designs_are_within_budget():
    from pramkit.design.dp.variance import dp_min_variance

    rng = np.random.default_rng(12)
    budgets = [1e-6, 0.002, 700.0] + [_random_budget(rng) for _ in range(40)]
    for i, budget in enumerate(budgets):
        s = int(rng.integers(2, 40))
        m = dp_min_variance(_random_p(rng, s), budget, truthful=i % 3 == 0)
        _check_design(m, budget)


def _release_data(rng: np.random.Generator, rows: int = 300):
    import pandas as pd

    return pd.DataFrame({"a": rng.choice(["x", "y", "z"], rows), "b": rng.choice(list("uvwxy"), rows),
                         "c": rng.choice(["p", "q"], rows)})


def _assert_record_within(manifest, budget: float) -> None:
    """The record epsilon (design step plus the stated epsilons) is within the budget, exactly, and
    each stated epsilon bounds the exact epsilon of its matrix."""
    assert manifest.record_epsilon <= budget
    design = manifest.ledger.design_epsilon
    stated = [v.epsilon for v in manifest.variables]
    assert Fraction(design) + sum((Fraction(e) for e in stated), Fraction(0)) <= Fraction(budget)
    for v in manifest.variables:
        if v.matrix.geometric_rate is not None:  # stored by its rate and sampled exactly: the formula's epsilon
            assert Fraction(v.matrix.geometric_rate) * (v.matrix.size - 1) <= Fraction(v.epsilon)
            continue
        if v.matrix.exponential_rate is not None:  # sampled exactly: the formula, bounded by its closed form
            ratio = exact_max_ratio(v.matrix.matrix)
            assert realised_law(v.matrix).exact and (ratio == 1 or ratio_vs_exp(ratio, v.epsilon) == -1)
            continue
        law = realised_law(v.matrix)  # the units the engine draws with, as well as the stored doubles
        units = np.array([law.weights(k) for k in range(v.matrix.size)]).astype(object)
        for ratio in (exact_max_ratio(v.matrix.matrix), exact_max_ratio(units)):
            assert ratio is not None and (ratio == 1 or ratio_vs_exp(ratio, v.epsilon) == -1)


def test_design_release_never_exceeds_the_record_budget():
    """design_release with a record budget, every family (parameters with finite epsilon): the
    record epsilon never exceeds the budget; a family whose own parameters exceed it is refused."""
    from pramkit.design.registry import FAMILIES
    from pramkit.release.pipeline import design_release

    rng = np.random.default_rng(13)
    data = _release_data(rng)
    for name, fam in FAMILIES.items():
        within = 0
        for i in range(8):
            variables = ["a", "b", "c"][: int(rng.integers(1, 4))]
            sizes = [int(data[v].nunique()) for v in variables]
            opts = _family_options(name, min(sizes), rng, max(sizes))
            if name == "dp" and opts["form"] == "general" and "b" in variables:
                opts["form"] = "diagonal"
            budget = float(rng.uniform(0.5, 6.0)) * (len(variables) if not fam.takes_budget(opts) else 1)
            source = {} if not fam.reads_frequencies(opts) else \
                {"exact_frequencies": True} if i % 2 else {"design_epsilon": budget / 10}
            if name == "metric":  # ordinal distances read a declared order (text from the data has none)
                source["categories"] = {v: sorted(data[v].unique()) for v in variables}
            try:
                manifest = design_release(data, variables, epsilon=budget, method=name, options=opts, **source)
            except ParameterError as err:
                assert not fam.takes_budget(opts) and "more than the budget" in str(err), (name, opts, err)
                continue
            _assert_record_within(manifest, budget)
            within += 1
        assert within >= 3, name


def test_over_budget_family_parameters_are_refused():
    from pramkit.release.pipeline import design_release

    data = _release_data(np.random.default_rng(14))
    # keep 0.95 among 3 categories: log(0.95 / 0.025) = 3.64 > 1
    with pytest.raises(ParameterError, match="more than the budget"):
        design_release(data, ["a"], epsilon=1.0, method="keep", options={"keep": 0.95})
    # randomized response fitted to beta 0.3 among 5 categories has an epsilon above 0.5
    with pytest.raises(ParameterError, match="more than the budget"):
        design_release(data, ["b"], epsilon=0.5, method="rr", options={"beta": 0.3})
    # a per-variable budget above the record budget
    with pytest.raises(ParameterError, match="more than the record budget"):
        design_release(data, ["a", "b"], epsilon=1.0, method="rr", epsilon_per_variable={"a": 0.6, "b": 0.6})
