"""I(X; Z) for form (8) in O(S) against the O(S^2) definition."""

from __future__ import annotations

import numpy as np
import pytest

from pramkit.errors import PramkitError
from pramkit.information import entropy, mutual_information, mutual_information_form8
from pramkit.matrix import PramMatrix
from pramkit.validate import probabilities as check_probabilities


def _direct(p, q):
    return mutual_information(p, PramMatrix.from_diagonal(q).matrix)


@pytest.mark.parametrize("s", [2, 3, 5, 10, 40])
def test_closed_form_matches_definition(s):
    rng = np.random.default_rng(s)
    for _ in range(25):
        p = rng.dirichlet(np.full(s, rng.choice([0.2, 1.0, 5.0])))
        q = rng.uniform(size=s)
        assert mutual_information_form8(p, q) == pytest.approx(_direct(p, q), abs=1e-13)


def test_edges_zeros_in_p_and_q_at_0_or_1():
    rng = np.random.default_rng(7)
    for s in (2, 3, 6):
        for _ in range(30):
            p = rng.dirichlet(np.ones(s))
            p[rng.integers(s)] = 0.0
            p /= p.sum()
            q = rng.choice([0.0, 1.0, 0.5, rng.uniform()], size=s)
            assert mutual_information_form8(p, q) == pytest.approx(_direct(p, q), abs=1e-13)


def test_identity_gives_entropy_and_uniform_gives_zero():
    p = np.array([0.5, 0.25, 0.125, 0.125])
    # q = 1: Z = X, so I(X; Z) = H(X)
    assert mutual_information_form8(p, np.ones(4)) == pytest.approx(entropy(p), abs=1e-15)
    # q = 1/S: every row is uniform, Z is independent of X (section 3.1)
    assert mutual_information_form8(p, np.full(4, 0.25)) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("p, q", [
    ([0.5, 0.6], [0.5, 0.5]),            # does not sum to 1
    ([0.5, np.nan], [0.5, 0.5]),
    ([1.2, -0.2], [0.5, 0.5]),
    ([0.5, 0.5], [0.5, 1.5]),            # q outside [0, 1]
    ([0.5, 0.5], [0.5]),                 # wrong length
    ([], []),
])
def test_bad_input_raises_pramkit_error(p, q):
    with pytest.raises(PramkitError):
        mutual_information_form8(p, q)


def test_check_probabilities_message_says_what_to_change():
    with pytest.raises(PramkitError, match="sums to"):
        check_probabilities([1, 2, 3])
