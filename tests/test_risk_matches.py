"""Expected unique records reproduced exactly (pramkit.risk.matches), against the exact expectation
enumerated over every draw on small files and against releases drawn by the engine on NIST's ACS excerpt."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pramkit
from pramkit import Manifest, PramMatrix
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey
from pramkit.risk.matches import expected_matches

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"


def exact_share(data: pd.DataFrame, matrices: dict[str, PramMatrix], keys: list[str]) -> float:
    """E[unique records reproduced] / n, enumerating every joint outcome of the perturbed values."""
    n = len(data)
    rows = [tuple(r) for r in data[keys].itertuples(index=False)]
    unique = [r for r in rows if rows.count(r) == 1]
    options = []
    for r in rows:
        per = []
        for k, value in zip(keys, r):
            if k in matrices:
                m = matrices[k]
                i = m.categories.index(value)
                per.append([(m.categories[j], m.matrix[i, j]) for j in range(m.size) if m.matrix[i, j] > 0])
            else:
                per.append([(value, 1.0)])
        options.append([(tuple(v for v, _ in combo), float(np.prod([p for _, p in combo])))
                        for combo in itertools.product(*per)])
    expected = 0.0
    for outcome in itertools.product(*options):
        prob = float(np.prod([p for _, p in outcome]))
        released = {cell for cell, _ in outcome}
        expected += prob * sum(u in released for u in unique)
    return expected / n


def stochastic(draw, size: int) -> np.ndarray:
    rows = np.array([[draw(st.integers(1, 9)) for _ in range(size)] for _ in range(size)], dtype=float)
    return rows / rows.sum(axis=1, keepdims=True)


@st.composite
def small_releases(draw):
    n = draw(st.integers(2, 5))
    a = [draw(st.sampled_from("xyz")) for _ in range(n)]
    b = [draw(st.sampled_from("uv")) for _ in range(n)]
    c = [draw(st.sampled_from("pq")) for _ in range(n)]
    data = pd.DataFrame({"a": a, "b": b, "c": c})
    matrices = {"a": PramMatrix(stochastic(draw, 3), ("x", "y", "z"))}
    if draw(st.booleans()):
        matrices["b"] = PramMatrix(stochastic(draw, 2), ("u", "v"))
    return data, matrices


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_releases())
def test_the_bounds_hold_the_exact_expectation(case) -> None:
    data, matrices = case
    keys = ["a", "b", "c"]
    risk = expected_matches(data, Manifest.of(matrices), keys)
    exact = exact_share(data, matrices, keys)
    assert risk.lower - 1e-12 <= exact <= risk.upper + 1e-12
    assert risk.expected == pytest.approx(exact, abs=1e-12)


@pytest.fixture(scope="module")
def acs() -> pd.DataFrame:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    return pd.read_csv(NIST, dtype=str, keep_default_na=False)


def sdnist_matches(original: pd.DataFrame, released: pd.DataFrame, keys: list[str]) -> float:
    """Unique original records found exactly among the released ones, as a share of all records."""
    counts = original.groupby(keys).size()
    unique = set(counts[counts == 1].index)
    found = set(map(tuple, released[keys].astype(str).itertuples(index=False)))
    return sum(u in found for u in unique) / len(original)


@pytest.mark.slow
def test_releases_drawn_by_the_engine_fall_within_the_bounds(acs: pd.DataFrame) -> None:
    keys = ["AGEP", "SEX", "MSP", "EDU", "DEYE"]
    data = acs[keys]
    plan = pramkit.plan_release(["MSP", "EDU", "DEYE"], epsilon=8.0)
    manifest = pramkit.design_planned(data, plan, key=SecretKey(bytes(32), "t")).manifest
    risk = expected_matches(data, manifest, keys)
    shares = [sdnist_matches(data, pramkit.perturb_frame(data, manifest, key=SecretKey(bytes([r]) * 32, "mc")).data,
                             keys) for r in range(1, 9)]
    spread = 4 * np.std(shares, ddof=1) / np.sqrt(len(shares)) + 1e-3
    assert risk.lower - spread <= np.mean(shares) <= risk.upper + spread
    assert abs(np.mean(shares) - risk.expected) <= spread
    assert risk.lower < risk.expected < risk.upper


def test_bad_keys_are_one_line(acs: pd.DataFrame) -> None:
    data = acs[["AGEP", "SEX", "MSP"]]
    manifest = Manifest.of({"MSP": PramMatrix.identity(sorted(data["MSP"].unique()))})
    for keys, message in ((["AGEP", "nope"], "not columns"), (["AGEP", "SEX"], "outside the keys")):
        with pytest.raises(ParameterError, match=message) as err:
            expected_matches(data, manifest, keys)
        assert "\n" not in str(err.value)
