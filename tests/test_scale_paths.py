"""The fast paths of the design command's output: JSON conversion, a realised law's epsilon and the
duplicate check of public input files, each against a reference written element by element."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit._json import to_jsonable
from pramkit.errors import DataError
from pramkit.privacy.law import integer_epsilon
from pramkit.public_inputs import read_prior


def _reference(obj):
    """to_jsonable as specified, one element at a time."""
    if isinstance(obj, dict):
        return {str(k): _reference(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_reference(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _reference(obj.tolist())
    if isinstance(obj, np.generic):
        return _reference(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else None)
    return obj


def _same(a, b) -> bool:
    """Equal values of equal types, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


_scalars = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(-2**70, 2**70),
                     st.booleans(), st.none(), st.text(max_size=3),
                     st.floats(width=64).map(np.float64), st.integers(-5, 5).map(np.int64))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.one_of(st.integers(0, 3), st.text(max_size=2)), inner, max_size=4)), max_leaves=30)
_arrays = st.one_of(
    st.lists(st.floats(width=64), max_size=8).map(lambda v: np.array(v, dtype=float)),
    st.lists(st.floats(width=32, allow_nan=False), max_size=8).map(lambda v: np.array(v, dtype=np.float32)),
    st.lists(st.integers(-2**62, 2**62), max_size=8).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.booleans(), max_size=8).map(np.array))


@given(_values)
@settings(max_examples=300, deadline=None)
def test_to_jsonable_equals_the_elementwise_reference(value):
    assert _same(to_jsonable(value), _reference(value))


@given(_arrays, st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_to_jsonable_arrays_equal_the_elementwise_reference(arr, rows):
    table = np.tile(arr, (rows, 1))
    assert _same(to_jsonable(arr), _reference(arr)) and _same(to_jsonable(table), _reference(table))


def test_to_jsonable_copies_lists_and_sends_overflowing_sums_down_the_slow_path():
    floats = [0.5, 1.5]
    assert to_jsonable(floats) == floats and to_jsonable(floats) is not floats
    big = [1.7e308, 1.7e308, -1.0]                              # finite values whose sum overflows
    assert to_jsonable(big) == big
    assert to_jsonable([1.0, math.inf, -math.inf, math.nan]) == [1.0, "inf", "-inf", None]
    assert to_jsonable([True, 1.0]) == [True, 1.0] and type(to_jsonable([True])[0]) is bool


@given(st.lists(st.tuples(st.integers(1, 2**62), st.integers(1, 2**62)), min_size=1, max_size=12),
       st.integers(0, 11))
@settings(max_examples=300, deadline=None)
def test_integer_epsilon_is_the_largest_exact_ratio_rounded_up(pairs, tie):
    pairs = [(max(a, b), min(a, b)) for a, b in pairs]
    pairs.append(pairs[tie % len(pairs)])                      # a repeated column
    # near-ties: the same ratio scaled, and one unit more
    h, lw = pairs[0]
    if h < 2**61 and lw < 2**61:
        pairs += [(2 * h, 2 * lw), (h + 1, lw)] if h + 1 < 2**62 else [(2 * h, 2 * lw)]
    hi = np.array([a for a, _ in pairs], dtype=np.int64)
    lo = np.array([b for _, b in pairs], dtype=np.int64)
    best = max(Fraction(a, b) for a, b in pairs)
    eps = integer_epsilon(hi, lo)
    # the smallest double not below log(best): exp of it is at least best, of the double below it is not
    from decimal import Context, Decimal
    ctx = Context(prec=60)
    exact = Decimal(best.numerator).ln(ctx) - Decimal(best.denominator).ln(ctx)
    assert Decimal(eps) >= exact
    assert Decimal(math.nextafter(eps, -math.inf)) < exact or eps == 0.0


def test_integer_epsilon_many_tied_columns_of_a_form8_law():
    s = 200_000
    hi = np.full(s, 3 * 2**50, dtype=np.int64)
    lo = np.full(s, 2**50, dtype=np.int64)
    hi[7] += 1                                                 # the largest ratio, by one unit in 2**50
    expected = integer_epsilon(hi[[7]], lo[[7]])
    assert integer_epsilon(hi, lo) == expected > integer_epsilon(hi[:7], lo[:7])


def test_prior_with_a_repeated_category_names_it(tmp_path):
    rows = ["variable,category,frequency"] + [f"x,c{i},2" for i in range(3000)] + ["x,c17,3", "x,c5,2"]
    path = tmp_path / "prior.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError, match="variable 'x' lists category 'c17' twice"):
        read_prior(path)
    path.write_text("\n".join(rows[:-2]) + "\n")
    assert len(read_prior(path).distributions["x"][0]) == 3000


_plain = st.recursive(
    st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(), st.booleans(), st.none(),
              st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=3), inner, max_size=4)),
    max_leaves=40)


@given(_plain)
@settings(max_examples=300, deadline=None)
def test_dumps_parses_to_what_the_indented_standard_encoder_writes(value):
    import json

    from pramkit._json import dumps
    assert json.loads(dumps(value)) == json.loads(json.dumps(value, indent=2))


def test_dumps_refuses_non_finite_numbers():
    from pramkit._json import dumps
    with pytest.raises(ValueError):
        dumps({"a": [[1.0, math.inf]]})
