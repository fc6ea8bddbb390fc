"""The contract of every design family of :data:`pramkit.design.registry.FAMILIES`.

* its options are rules one can read (``FAMILIES[name].options[option].describe()``);
* a value of the wrong type (a string of a number included), out of range or not among the
  choices, and an unknown option, are each a ``ParameterError`` naming the option (table-driven,
  generated from the rules themselves);
* ``reads_frequencies`` and ``takes_budget`` say what ``build`` does: a family that does not read
  p gives the same matrix with ``p=None`` and with any p; one built to a budget needs epsilon and
  stays within it, one that fixes its epsilon refuses a budget;
* the compact families (randomized response, the least-variance design, keep-probability PRAM
  without a bandwidth) design S = 20 000 categories without an S x S array (tracemalloc), and at
  small S their entries and epsilon are those of the dense formula, computed here by brute force.
"""

from __future__ import annotations

import math
import tracemalloc
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from pramkit.design.measures import measure
from pramkit.design.registry import FAMILIES
from pramkit.errors import ParameterError
from pramkit.validate import Choice, Flag, Instance, Number, Rule

S = 5
CATS = list(range(S))

#: Options that design a matrix, per family (the first is the base of the table of bad options).
VALID: dict[str, list[dict[str, Any]]] = {
    "dp": [{}, {"objective": "variance"}, {"form": "general"}, {"truthful": True},
           {"objective": "distance", "distances": "ordinal"},
           {"objective": "distance", "distances": "ordinal", "weights": "uniform"}],
    "metric": [{"metric_epsilon": 0.5, "distances": "ordinal"},
               {"metric_epsilon": 0.5, "distances": "ordinal", "mechanism": "geometric"}],
    "invariant": [{"seed": 1}, {"pd": 0.7, "alpha": 0.4, "diagonal": "fixed"}],
    "keep": [{"keep": 0.8}, {"keep": 0.8, "bandwidth": 1}],
    "rr": [{}, {"beta": 0.5}],
    "kanon": [{"k": 2, "gamma": 0.01}, {"beta": 0.5}],
    "tridiagonal": [{"alpha": 0.2}, {"alpha": 0.2, "gamma": 0.05}],
    "circulant": [{"keep": 0.6}, {"beta": 0.4}],
    "bistochastic-beta": [{"beta": 0.5}, {"beta": 0.5, "family": "rr"}],
}


def _p(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(S))


def _epsilon(fam: Any, options: dict) -> float | None:
    return 1.0 if fam.takes_budget(options) else None


def test_every_family_has_valid_options_here() -> None:
    assert set(VALID) == set(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_options_are_rules_one_can_read(name: str) -> None:
    fam = FAMILIES[name]
    assert fam.options and all(isinstance(rule, Rule) for rule in fam.options.values())
    for option, rule in fam.options.items():
        text = rule.describe()
        assert isinstance(text, str) and text and "\n" not in text
        if rule.default is not None:  # a default obeys its own rule
            assert rule.check(rule.default, option) == rule.default
    assert set(fam.check(VALID[name][0])) == set(fam.options)  # every option present once checked


def _bad_values(rule: Rule) -> list[Any]:
    """Values a rule refuses, derived from the rule (so that a new option is covered too)."""
    if isinstance(rule, Number):
        bad: list[Any] = ["3", True, math.nan, [1]]
        if rule.low is not None:
            bad.append(rule.low if rule.low_open else rule.low - 1)
        if rule.high is not None:
            bad.append(rule.high if rule.high_open else rule.high + 1)
        if rule.kind is int:
            bad.append(2.5)
        return bad
    if isinstance(rule, Choice):
        return ["no such choice", 3]
    if isinstance(rule, Flag):
        return ["yes", 1]
    if isinstance(rule, Instance):
        return [3, 2.5]
    raise AssertionError(f"no bad values for {rule!r}: add them here")


BAD = [(name, option, value) for name in sorted(FAMILIES) for option, rule in FAMILIES[name].options.items()
       for value in _bad_values(rule)]


@pytest.mark.parametrize("name,option,value", BAD)
def test_a_bad_value_is_a_parameter_error_naming_the_option(name: str, option: str, value: Any) -> None:
    fam = FAMILIES[name]
    base = VALID[name][0]
    options = {**base, option: value}
    with pytest.raises(ParameterError, match=rf"^{option} must be ") as err:
        fam.build(CATS, _p(0), _epsilon(fam, base), options)
    assert "\n" not in str(err.value)
    for ask in (fam.reads_frequencies, fam.takes_budget, fam.max_categories):
        with pytest.raises(ParameterError, match=rf"^{option} must be "):
            ask(options)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_an_unknown_option_is_one_error_naming_the_options(name: str) -> None:
    fam = FAMILIES[name]
    with pytest.raises(ParameterError) as err:
        fam.build(CATS, _p(0), 1.0, {**VALID[name][0], "colour": 1})
    assert str(err.value) == f"method {name!r} does not take colour; its options are {', '.join(fam.options)}"


def test_a_string_of_a_number_is_refused_with_the_type_expected() -> None:
    with pytest.raises(ParameterError, match=r"^k must be a whole number >= 1, got the str '3'$"):
        FAMILIES["kanon"].build(CATS, None, None, {"k": "3"})


@pytest.mark.parametrize("name,options", [(n, o) for n in sorted(VALID) for o in VALID[n]])
def test_reads_and_budget_say_what_build_does(name: str, options: dict) -> None:
    fam = FAMILIES[name]
    eps = _epsilon(fam, options)
    first, second = fam.build(CATS, _p(1), eps, options), fam.build(CATS, _p(2), eps, options)
    if not fam.reads_frequencies(options):
        none = fam.build(CATS, None, eps, options)
        assert np.array_equal(none.matrix, first.matrix) and np.array_equal(none.matrix, second.matrix)
    if fam.takes_budget(options):
        assert first.epsilon <= eps
        with pytest.raises(ParameterError, match="give epsilon"):
            fam.build(CATS, _p(1), None, options)
    else:
        with pytest.raises(ParameterError, match="takes no share of the budget"):
            fam.build(CATS, _p(1), 1.0, options)


@pytest.mark.parametrize("name,options", [("dp", {}), ("invariant", {"seed": 1})])
def test_a_family_that_reads_p_depends_on_it(name: str, options: dict) -> None:
    fam = FAMILIES[name]
    eps = _epsilon(fam, options)
    assert fam.reads_frequencies(options)
    skewed = np.array([0.9, 0.04, 0.03, 0.02, 0.01])
    assert not np.allclose(fam.build(CATS, skewed, eps, options).matrix, fam.build(CATS, skewed[::-1].copy(), eps,
                                                                                      options).matrix)


@pytest.mark.parametrize("name,options,limit", [
    ("dp", {"form": "general"}, 14), ("dp", {"objective": "distance", "distances": "ordinal"}, 3000),
    ("metric", {"metric_epsilon": 0.5, "distances": "ordinal", "mechanism": "optimal"}, 300),
])
def test_a_size_limit_is_checked_before_building(name: str, options: dict, limit: int) -> None:
    fam = FAMILIES[name]
    assert fam.max_categories(options) == limit
    cats = list(range(limit + 1))
    with pytest.raises(ParameterError, match=rf"^method '{name}' with these options designs at most {limit} "
                                             rf"categories, got {limit + 1}$"):
        fam.build(cats, np.full(limit + 1, 1.0 / (limit + 1)), _epsilon(fam, options), options)


# -- the compact families ----------------------------------------------------------------------------

COMPACT = [("rr", {}, 1.0), ("dp", {"objective": "variance"}, 1.0), ("keep", {"keep": 0.7}, None)]


@pytest.mark.parametrize("name,options,epsilon", COMPACT)
def test_compact_families_design_20000_categories_without_a_square_array(name: str, options: dict,
                                                                         epsilon: float | None) -> None:
    s = 20_000
    cats = list(range(s))
    p = np.random.default_rng(5).dirichlet(np.ones(s))
    tracemalloc.start()
    try:
        m = FAMILIES[name].build(cats, None, epsilon, options)
        measured = measure(m, p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.is_compact and m.size == s
    assert peak < 200 * s * 8, peak          # O(S): S x S doubles would be 3.2 GB
    assert math.isfinite(measured.epsilon) and measured.truthful


def _dense(name: str, s: int, parameter: float) -> list[list[Fraction]]:
    """The family's matrix by its textbook formula, exactly (keep probability q on the diagonal,
    (1 - q) / (S - 1) elsewhere; randomized response: q = e^eps / (e^eps + S - 1))."""
    if name == "keep":
        q = Fraction(parameter)
    else:
        t = Fraction(math.exp(parameter))
        q = t / (t + s - 1)
    off = (1 - q) / (s - 1)
    return [[q if i == j else off for j in range(s)] for i in range(s)]


def _brute_epsilon(rows: list[list[Any]]) -> float:
    """max over columns of log(max / min), entry by entry."""
    cols = list(zip(*rows))
    return max(math.log(float(max(c) / min(c))) for c in cols)


@pytest.mark.parametrize("s", [2, 3, 7])
@pytest.mark.parametrize("name,options,epsilon", COMPACT + [("rr", {}, 0.05), ("dp", {"objective": "variance"}, 4.0),
                                                             ("keep", {"keep": 0.2}, None)])
def test_small_compact_matrices_equal_the_dense_formula(s: int, name: str, options: dict,
                                                        epsilon: float | None) -> None:
    m = FAMILIES[name].build(list(range(s)), None, epsilon, options)
    assert m.is_compact
    formula = _dense(name, s, options["keep"] if name == "keep" else epsilon)
    np.testing.assert_allclose(m.matrix, np.array(formula, dtype=float), rtol=1e-12, atol=0)
    stored = [[Fraction(float(x)) for x in row] for row in m.matrix]
    exact = max(max(c) / min(c) for c in zip(*stored))   # the stored doubles' epsilon, as a ratio
    assert Fraction(math.exp(m.epsilon)) >= exact * (1 - Fraction(1, 10 ** 12))   # stated >= exact (outward)
    assert m.epsilon == pytest.approx(_brute_epsilon(formula), rel=1e-12)
    q = float(formula[0][0])
    assert m.epsilon == pytest.approx(abs(math.log(q * (s - 1) / (1 - q))), rel=1e-12)   # the closed form
    if epsilon is not None:
        assert m.epsilon <= epsilon
