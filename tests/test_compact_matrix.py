"""The compact form (8) PramMatrix (q and w, O(S)) and its outward rounding (form8_within_budget)."""

from __future__ import annotations

import copy
import math
import pickle
from dataclasses import FrozenInstanceError
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest

from pramkit.errors import MatrixError, ParameterError
from pramkit.matrix import ROW_SUM_TOL, PramMatrix, Provenance
from pramkit.privacy.epsilon import form8_matrix_epsilon, matrix_epsilon
from pramkit.privacy.exact import (
    MAX_ROW_SHIFT,
    column_epsilon,
    form8_column_extremes,
    form8_within_budget,
    within_budget,
)

# ---------------------------------------------------------------------------
# exact references (Fractions and Decimal, independent of pramkit's code)
# ---------------------------------------------------------------------------

def dense(q: np.ndarray, w: np.ndarray) -> np.ndarray:
    m = np.repeat(np.asarray(w, dtype=float)[:, None], len(q), axis=1)
    np.fill_diagonal(m, q)
    return m


def ratio_at_most_exp(ratio: Fraction, eps: float) -> bool:
    """``ratio <= e**eps`` decided exactly: Decimal's exp is correctly rounded, so its
    error is below a relative 10**-(prec-1); the precision grows until that decides."""
    for prec in (60, 120, 240, 480):
        x = Fraction(Decimal(eps).exp(Context(prec=prec)))
        err = x / 10 ** (prec - 1)
        if ratio <= x - err:
            return True
        if ratio >= x + err:
            return False
    raise AssertionError("undecided")  # pragma: no cover


def exact_within(q: np.ndarray, w: np.ndarray, eps: float) -> bool:
    """The exact epsilon of the stored doubles (every column of the dense matrix as
    Fractions, Shlomo and Skinner section 4) is at most eps."""
    s = len(q)
    for j in range(s):
        col = [Fraction(float(q[j]))] + [Fraction(float(w[k])) for k in range(s) if k != j]
        hi, lo = max(col), min(col)
        if hi == 0:
            continue
        if lo == 0 or not ratio_at_most_exp(hi / lo, eps):
            return False
    return True


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance between a and b in units in the last place of b."""
    return int(np.max(np.abs(a - b) / np.spacing(np.maximum(np.abs(b), 5e-324)))) if a.size else 0


def random_q(rng: np.random.Generator, s: int, kind: str) -> np.ndarray:
    if kind == "uniform":
        return rng.uniform(0.0, 1.0, s)
    if kind == "tiny":       # some keep probabilities far below the others
        q = rng.uniform(0.05, 0.95, s)
        q[rng.integers(s)] = 10.0 ** -rng.integers(5, 300)
        return q
    if kind == "levels":     # a few repeated levels, like a vertex of the DP polytope
        return rng.choice(rng.uniform(0.0, 1.0, 3), s)
    if kind == "near_one":   # w tiny
        return 1.0 - 10.0 ** -rng.uniform(3, 12, s)
    raise ValueError(kind)


def naive_epsilon(q: np.ndarray, w: np.ndarray) -> float:
    """max log(max / min) over columns, rounded to nearest (may fall below the exact value)."""
    m = dense(q, w)
    return float(np.max(np.log(m.max(axis=0) / m.min(axis=0))))


# ---------------------------------------------------------------------------
# the compact matrix behaves like the dense one
# ---------------------------------------------------------------------------

CASES = [(seed, s) for seed in range(12) for s in (1, 2, 3, 5, 17)]


def compact_and_dense(seed: int, s: int) -> tuple[PramMatrix, PramMatrix]:
    rng = np.random.default_rng(seed)
    q = np.ones(1) if s == 1 else rng.uniform(0.0, 1.0, s)
    if seed % 3 == 0 and s > 1:
        q[rng.integers(s)] = 0.0            # a zero on the diagonal: epsilon infinite
    if seed % 4 == 1:
        q = np.full(s, 1.0 / s) if s > 1 else q   # uniform rows: bistochastic, epsilon 0
    w = np.zeros(1) if s == 1 else (1.0 - q) / (s - 1)
    if seed % 5 == 2 and s > 1:
        w = w + np.spacing(w)               # w not exactly (1 - q) / (S - 1)
    labels = [f"c{k}" for k in range(s)]
    prov = Provenance(method="test", parameters={"seed": seed})
    return PramMatrix.form8(q, w, labels, prov), PramMatrix(dense(q, w), labels, prov)


@pytest.mark.parametrize("seed, s", CASES)
def test_compact_properties_equal_the_dense_ones(seed: int, s: int) -> None:
    c, d = compact_and_dense(seed, s)
    assert c.is_compact and not d.is_compact
    assert c.size == d.size == s
    assert c.epsilon == d.epsilon                       # the same double, outward rounded
    np.testing.assert_array_equal(c.diagonal, d.diagonal)
    assert c.min_diagonal == d.min_diagonal
    assert c.is_bistochastic == d.is_bistochastic
    assert c.is_truthful == d.is_truthful
    assert repr(c) == repr(d)
    assert c == d and d == c
    np.testing.assert_array_equal(c.matrix, d.matrix)
    np.testing.assert_array_equal(c.form8_q, c.diagonal)
    if d.form8_q is not None:
        np.testing.assert_array_equal(c.form8_q, d.form8_q)


def test_properties_do_not_build_the_dense_matrix() -> None:
    s = 100_000
    q = np.linspace(0.5, 0.9, s)
    m = PramMatrix.from_diagonal(q, [f"c{k:05d}" for k in range(s)])
    values = (m.epsilon, m.min_diagonal, m.is_bistochastic, m.is_truthful, m.size, repr(m),
              m.with_provenance(Provenance(method="x")).epsilon, m == m, m.form8_q.size)
    assert "_dense_cache" not in m.__dict__
    w = (1.0 - q) / (s - 1)                                # decreasing: the smallest is the last
    w_min_others = np.where(np.arange(s) == s - 1, w[s - 2], w[s - 1])
    assert values[0] == pytest.approx(float(np.max(np.log(q / w_min_others))), rel=1e-12)
    assert values[4] == s and not values[2] and values[3]


def test_dense_matrix_is_built_once_and_read_only() -> None:
    m = PramMatrix.form8([0.6, 0.7, 0.8])
    a = m.matrix
    assert a is m.matrix
    np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    with pytest.raises(ValueError):
        a[0, 0] = 0.5
    with pytest.raises(ValueError):
        m.diagonal[0] = 0.5
    with pytest.raises(ValueError):
        m.form8_w[0] = 0.5


def test_compact_is_an_immutable_value() -> None:
    m = PramMatrix.form8([0.6, 0.7], categories=["a", "b"])
    with pytest.raises(FrozenInstanceError):
        m.categories = ("x", "y")  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del m.provenance
    with pytest.raises(TypeError):
        hash(m)
    q = np.array([0.6, 0.7])
    m2 = PramMatrix.form8(q)
    q[0] = 0.0
    assert m2.diagonal[0] == 0.6                         # a copy was stored
    for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert back == m and back.is_compact and back.epsilon == m.epsilon


def test_equality_compares_entries_labels_and_provenance() -> None:
    a = PramMatrix.form8([0.6, 0.7, 0.8])
    assert a == PramMatrix.from_diagonal([0.6, 0.7, 0.8])
    assert a != PramMatrix.from_diagonal([0.6, 0.7, 0.8], "abc")
    assert a != PramMatrix.from_diagonal([0.6, 0.7, 0.8], provenance=Provenance(method="other"))
    assert a != PramMatrix.form8([0.6, 0.7, 0.8], np.nextafter((1 - np.array([0.6, 0.7, 0.8])) / 2, 1))
    assert a != PramMatrix.form8([0.6, 0.7])
    off = a.matrix.copy()
    off[0, 1], off[0, 2] = off[0, 1] + 0.01, off[0, 2] - 0.01   # same diagonal, not form (8)
    assert a != PramMatrix(off, provenance=a.provenance)
    assert PramMatrix(a.matrix, provenance=a.provenance) == a


def test_with_provenance_keeps_the_compact_storage() -> None:
    m = PramMatrix.form8([0.9, 0.8], categories=["x", "y"])
    n = m.with_provenance(Provenance(method="renamed"))
    assert n.is_compact and n.provenance.method == "renamed" and n.categories == m.categories
    assert n.epsilon == m.epsilon and m.provenance.method == "diagonal"
    with pytest.raises(MatrixError, match="provenance"):
        m.with_provenance("x")  # type: ignore[arg-type]


def test_from_diagonal_and_identity_are_compact() -> None:
    m = PramMatrix.from_diagonal([0.9, 0.5, 0.2, 1.0], "abcd")
    assert m.is_compact and m.provenance.method == "diagonal"
    np.testing.assert_array_equal(m.form8_w, (1.0 - np.array([0.9, 0.5, 0.2, 1.0])) / 3)
    i = PramMatrix.identity(["a", "b", "c"])
    assert i.is_compact and i.epsilon == math.inf and i.is_bistochastic and i.is_truthful
    np.testing.assert_array_equal(i.matrix, np.eye(3))
    one = PramMatrix.identity(["a"])
    assert one.epsilon == 0.0 and one.form8_w.tolist() == [0.0]


def test_default_w_and_a_single_category() -> None:
    m = PramMatrix.form8([0.7, 0.6, 0.5, 0.4])
    np.testing.assert_array_equal(m.form8_w, (1.0 - np.array([0.7, 0.6, 0.5, 0.4])) / 3)
    assert PramMatrix.form8([1.0], [0.3]).form8_w.tolist() == [0.0]   # no off-diagonal entry
    with pytest.raises(MatrixError, match="row 0"):
        PramMatrix.form8([0.5])


@pytest.mark.parametrize(
    "q, w, message",
    [
        ([0.5, 0.4], [0.5, 0.5], r"row 1 of the matrix sums to"),
        ([0.5, np.nan], [0.5, 0.5], r"entry q\[1\] is nan"),
        ([0.5, 0.5], [np.inf, 0.5], r"entry w\[0\] is inf"),
        ([1.5, 0.5], [-0.5, 0.5], r"entry w\[0\] is negative"),
        ([0.5, 0.5], [0.5], r"q has 2 entries but w has 1"),
        ([[0.5, 0.5]], None, r"1-D"),
        ([], None, r"non-empty"),
        (["a", "b"], None, r"not numeric"),
    ],
)
def test_invalid_compact_matrices_are_rejected(q, w, message: str) -> None:
    with pytest.raises(MatrixError, match=message):
        PramMatrix.form8(q, w)


def test_row_tolerance_and_labels_as_for_dense() -> None:
    PramMatrix.form8([0.5 + 5e-10, 0.5], [0.5, 0.5])
    with pytest.raises(MatrixError, match="tolerance"):
        PramMatrix.form8([0.5 + 5e-9, 0.5], [0.5, 0.5])
    assert ROW_SUM_TOL == 1e-9
    with pytest.raises(MatrixError, match="twice"):
        PramMatrix.form8([0.5, 0.5], categories=("a", "a"))
    with pytest.raises(MatrixError, match="3 category labels"):
        PramMatrix.form8([0.5, 0.5], categories=("a", "b", "c"))
    with pytest.raises(MatrixError, match=r"\[0, 1\]"):
        PramMatrix.from_diagonal([1.2, 0.5])


def test_form8_matrix_epsilon_matches_the_dense_epsilon() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        s = int(rng.integers(1, 9))
        q = rng.uniform(0, 1, s) if s > 1 else np.ones(1)
        w = rng.uniform(0, 1, s)          # any non-negative entries: the epsilon does not need row sums
        if rng.random() < 0.2:
            w[rng.integers(s)] = 0.0
        hi, lo = form8_column_extremes(q, w)
        m = dense(q, w)
        if s > 1:
            np.testing.assert_array_equal(hi, m.max(axis=0))
            np.testing.assert_array_equal(lo, m.min(axis=0))
        assert form8_matrix_epsilon(q, w) == (matrix_epsilon(m) if s > 1 else 0.0)


# ---------------------------------------------------------------------------
# form8_within_budget: outward rounding of the compact form
# ---------------------------------------------------------------------------

ROUNDING_CASES = [(seed, s, kind) for seed in range(10) for s in (2, 3, 4, 7, 25)
                  for kind in ("uniform", "tiny", "levels", "near_one")]


@pytest.mark.parametrize("seed, s, kind", ROUNDING_CASES)
def test_form8_within_budget_is_exact(seed: int, s: int, kind: str) -> None:
    """Budgets a few ulps below the epsilon of the stored doubles: the adjusted
    entries have an exact epsilon (Fractions) at most the budget, every entry moved
    by a few ulps at most, rows still sum to 1, and pramkit states at most the budget."""
    rng = np.random.default_rng(1000 * seed + s)
    q = random_q(rng, s, kind)
    w = (1.0 - q) / (s - 1)
    exact = PramMatrix.form8(q, w).epsilon
    assert math.isfinite(exact)
    for eps in {naive_epsilon(q, w), exact, math.nextafter(exact, 0.0),
                float(np.nextafter(exact, 0.0) - 4 * np.spacing(exact))}:
        q2, w2 = form8_within_budget(q, w, eps)
        assert exact_within(q2, w2, eps), (q.tolist(), eps)
        # a budget d below the epsilon moves an entry by a relative d: d / 2**-52 ulps, and a few for rounding
        allowed = 4 + 2 * max(exact - eps, 0.0) / 2.0 ** -52
        assert ulps(q2, q) <= allowed and ulps(w2, w) <= allowed
        assert np.all(q2 >= q) and np.all(w2 >= w)            # entries are only raised
        assert np.max(np.abs(q2 + (s - 1) * w2 - 1.0)) <= ROW_SUM_TOL
        assert np.max((q2 - q) + (s - 1) * (w2 - w)) <= MAX_ROW_SHIFT
        stated = PramMatrix.form8(q2, w2).epsilon
        assert stated <= eps
        if exact_within(q, w, eps):
            np.testing.assert_array_equal(q2, q)
            np.testing.assert_array_equal(w2, w)


@pytest.mark.parametrize("seed", range(40))
def test_form8_within_budget_agrees_with_the_dense_rounding(seed: int) -> None:
    """The compact rounding and the dense within_budget reach the same stated epsilon
    (both at most the budget), on designs tight at the budget."""
    rng = np.random.default_rng(seed)
    s = int(rng.choice([2, 3, 4, 6, 11, 40]))
    eps = float(rng.choice([0.1, 0.7, 1.0, 2.5, 6.0]))
    if seed % 2:
        q = np.full(s, 1.0 / (1.0 + (s - 1) * math.exp(-eps)))       # randomized response: tight
    else:
        from pramkit.design.dp.optimal import solve_form8

        q = solve_form8(rng.dirichlet(np.ones(s)), eps).q               # a vertex of the DP polytope
    w = (1.0 - q) / (s - 1)
    q2, w2 = form8_within_budget(q, w, eps)
    m = within_budget(dense(q, w), eps)
    compact, dense_eps = form8_matrix_epsilon(q2, w2), PramMatrix(m).epsilon
    assert compact <= eps and dense_eps <= eps
    assert abs(compact - dense_eps) <= 4 * math.ulp(eps)
    assert exact_within(q2, w2, eps)
    # the largest row shift is the dense one's, to rounding
    shift = float(np.max((q2 - q) + (s - 1) * (w2 - w)))
    assert shift <= MAX_ROW_SHIFT
    assert abs(shift - float((m - dense(q, w)).sum(axis=1).max())) <= 1e-15


def test_form8_within_budget_at_scale_is_fast() -> None:
    s, eps = 100_000, 1.0
    q = np.full(s, 1.0 / (1.0 + (s - 1) * math.exp(-eps)))
    q[:10] = np.nextafter(q[:10], 1.0)                  # a few rows an ulp over the budget
    q2, w2 = form8_within_budget(q, (1.0 - q) / (s - 1), eps)
    assert column_epsilon(*form8_column_extremes(q2, w2)) <= eps
    assert PramMatrix.form8(q2, w2).epsilon <= eps


def test_form8_within_budget_refuses_what_rounding_cannot_fix() -> None:
    q = np.array([0.9, 0.8, 0.7])
    w = (1.0 - q) / 2
    with pytest.raises(ParameterError, match="would move a row sum"):
        form8_within_budget(q, w, 1.0)                 # epsilon log(0.9 / 0.1) > 2
    with pytest.raises(ParameterError, match="mixes zeros"):
        form8_within_budget([1.0, 0.5, 0.5], [0.0, 0.25, 0.25], 1.0)
    with pytest.raises(ParameterError, match="same positive length"):
        form8_within_budget([0.5, 0.5], [0.5], 1.0)
    with pytest.raises(ParameterError):
        form8_within_budget([0.5, 0.5], [0.5, 0.5], math.nan)
    q1, w1 = form8_within_budget([1.0], [0.0], 0.0)   # one column: epsilon 0
    assert q1.tolist() == [1.0] and w1.tolist() == [0.0]
