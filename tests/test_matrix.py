"""PramMatrix: validation, exact epsilon, form (8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pramkit.design.classic import randomized_response
from pramkit.errors import MatrixError, PramkitError
from pramkit.matrix import PramMatrix, Provenance


def brute_force_epsilon(m: np.ndarray) -> float:
    """max over j, k1, k2 of log(m[k1, j] / m[k2, j]) by enumeration (Shlomo & Skinner, sec. 4)."""
    best = 0.0
    s = m.shape[0]
    for j, k1, k2 in itertools.product(range(s), repeat=3):
        a, b = m[k1, j], m[k2, j]
        if a == 0 and b == 0:
            continue
        if b == 0:
            return math.inf
        best = max(best, math.log(a / b))
    return best


@pytest.mark.parametrize("seed", range(20))
def test_epsilon_matches_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = int(rng.integers(2, 7))
    m = rng.dirichlet(np.full(s, 0.7), size=s)
    if seed % 4 == 0:  # zeros in some entries
        m[rng.integers(s), rng.integers(s)] = 0.0
        m /= m.sum(axis=1, keepdims=True)
    assert PramMatrix(m).epsilon == pytest.approx(brute_force_epsilon(m), rel=1e-12, abs=1e-15)


def test_epsilon_infinite_iff_column_mixes_zero_and_positive() -> None:
    m = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.1, 0.9, 0.0]])
    assert math.isfinite(PramMatrix(m).epsilon)  # the all-zero column is never released
    assert PramMatrix(m).epsilon == pytest.approx(math.log(0.5 / 0.1))
    m2 = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert PramMatrix(m2).epsilon == math.inf
    assert PramMatrix.identity(["a", "b"]).epsilon == math.inf


def test_constant_columns_release_nothing() -> None:
    m = np.tile([0.2, 0.3, 0.5], (3, 1))
    assert PramMatrix(m).epsilon == 0.0


@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("s", [2, 3, 9])
def test_randomized_response_has_its_epsilon(eps: float, s: int) -> None:
    m = randomized_response(list(range(s)), eps)
    assert m.epsilon == pytest.approx(eps, rel=1e-12)
    assert m.is_bistochastic and m.is_truthful
    assert m.provenance.method == "randomized_response"


@pytest.mark.parametrize(
    "matrix, message",
    [
        ([[0.5, 0.4], [0.5, 0.5]], "row 0"),
        ([[1.2, -0.2], [0.5, 0.5]], "negative"),
        ([[np.nan, 1.0], [0.5, 0.5]], "finite"),
        ([[np.inf, 0.0], [0.5, 0.5]], "finite"),
        ([[0.5, 0.5]], "square"),
        ([], "square"),
        ([["a", "b"], ["c", "d"]], "numeric"),
    ],
)
def test_invalid_matrices_are_rejected(matrix, message: str) -> None:
    with pytest.raises(MatrixError, match=message):
        PramMatrix(matrix)


def test_row_sum_tolerance_is_1e_9() -> None:
    PramMatrix([[0.5 + 5e-10, 0.5], [0.5, 0.5]])
    with pytest.raises(MatrixError):
        PramMatrix([[0.5 + 5e-9, 0.5], [0.5, 0.5]])


def test_labels_unique_and_sized() -> None:
    with pytest.raises(MatrixError, match="twice"):
        PramMatrix(np.eye(2), ("a", "a"))
    with pytest.raises(MatrixError, match="3 category labels"):
        PramMatrix(np.eye(2), ("a", "b", "c"))
    # True and 1 are different labels
    assert PramMatrix(np.eye(2), (True, 1)).categories == (True, 1)
    assert PramMatrix(np.eye(2), (np.int64(3), "x")).categories == (3, "x")


def test_matrix_is_a_read_only_copy() -> None:
    a = np.eye(2)
    m = PramMatrix(a)
    a[0, 0] = 0.0
    assert m.matrix[0, 0] == 1.0
    with pytest.raises(ValueError):
        m.matrix[0, 0] = 0.5


def test_from_diagonal_is_form_8() -> None:
    q = np.array([0.9, 0.5, 0.2, 1.0])
    m = PramMatrix.from_diagonal(q, "abcd")
    expected = np.array([[q[k] if k == j else (1 - q[k]) / 3 for j in range(4)] for k in range(4)])
    np.testing.assert_allclose(m.matrix, expected, rtol=0, atol=1e-16)
    np.testing.assert_array_equal(m.form8_q, q)
    assert PramMatrix(np.array([[0.5, 0.3, 0.2]] * 3)).form8_q is None
    with pytest.raises(MatrixError):
        PramMatrix.from_diagonal([1.2, 0.5])


def test_truthful_and_bistochastic_flags() -> None:
    assert not PramMatrix.from_diagonal([0.2, 0.2, 0.2]).is_truthful  # off-diagonal 0.4 > 0.2
    assert PramMatrix.from_diagonal([0.9, 0.6]).is_truthful
    assert not PramMatrix.from_diagonal([0.9, 0.6]).is_bistochastic
    assert PramMatrix.from_diagonal([0.7, 0.7]).is_bistochastic


def test_provenance_travels_and_errors_are_pramkit_errors() -> None:
    prov = Provenance(method="x", parameters={"epsilon": 1.0}, objective=0.3, objective_name="mi_nats")
    m = PramMatrix(np.eye(2), provenance=prov)
    assert m.provenance.to_dict()["parameters"] == {"epsilon": 1.0}
    assert issubclass(MatrixError, PramkitError)
    with pytest.raises(PramkitError):
        randomized_response(["a", "b"], 0.0)
    with pytest.raises(PramkitError):
        randomized_response(["a", "b"], float("nan"))


def test_dense_construction_is_unchanged_and_from_diagonal_is_compact() -> None:
    m = PramMatrix([[0.75, 0.25], [0.25, 0.75]], ("a", "b"))
    assert not m.is_compact and m.form8_w is None
    np.testing.assert_array_equal(m.form8_q, [0.75, 0.75])
    d = PramMatrix.from_diagonal([0.75, 0.75], ("a", "b"), m.provenance)
    assert d.is_compact and d == m and m == d and d.epsilon == m.epsilon
    assert PramMatrix(matrix=np.eye(2), categories=("x", "y")).provenance == Provenance()
