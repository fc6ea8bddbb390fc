"""Tables of variables that share a stratum (``--strata`` on both): estimated on the variables' cells.

Checked against computations the estimator does not make: the inverse of each stratum's Kronecker product
applied to that stratum's released table (NumPy's solver), the one-way estimates the two-way table sums to,
and a Monte Carlo mean over keys.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pramkit
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"


@pytest.fixture(scope="module")
def release():
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    data = pd.read_csv(NIST, dtype=str, keep_default_na=False)[["SEX", "MSP", "DEYE", "HOUSING_TYPE"]]
    key = SecretKey(bytes(range(32)), "test key")
    plan = pramkit.plan_release(["MSP", "DEYE"], epsilon=6.0, strata="SEX")
    manifest = pramkit.design_planned(data, plan, key=key).manifest
    released = pramkit.perturb_frame(data, manifest, key=key).data
    return data, manifest, released


def _block(manifest, variable: str, stratum: str) -> tuple[list, np.ndarray]:
    m = manifest[variable].matrix
    idx = [i for i, c in enumerate(m.categories) if str(c[0]) == stratum]
    assert len(idx) >= 2
    return [str(m.categories[i][1]) for i in idx], m.matrix[np.ix_(idx, idx)]


def test_each_stratum_is_the_inverse_of_its_kronecker_product(release) -> None:
    _, manifest, released = release
    res = pramkit.estimate_table(released, manifest, ["MSP", "DEYE"])
    cells_a, cells_b = ([tuple(map(str, c)) for c in axis] for axis in res.categories)
    table = res.table.counts.reshape(len(cells_a), len(cells_b))
    for sex in ("1", "2"):
        msp, ma = _block(manifest, "MSP", sex)
        deye, mb = _block(manifest, "DEYE", sex)
        group = released[released["SEX"] == sex]
        observed = pd.crosstab(group["MSP"], group["DEYE"]).reindex(index=msp, columns=deye, fill_value=0)
        expected = np.linalg.solve(np.kron(ma, mb).T, observed.to_numpy(float).ravel()).reshape(len(msp), len(deye))
        ia = [cells_a.index((sex, v)) for v in msp]
        ib = [cells_b.index((sex, v)) for v in deye]
        assert np.allclose(table[np.ix_(ia, ib)], expected, atol=1e-6)
    mismatched = np.array([[a[0] != b[0] for b in cells_b] for a in cells_a])
    assert (table[mismatched] == 0).all() and (res.table.se.reshape(table.shape)[mismatched] == 0).all()


def test_the_two_way_table_sums_to_the_one_way_estimates(release) -> None:
    _, manifest, released = release
    two = pramkit.estimate_table(released, manifest, ["MSP", "DEYE"])
    one = pramkit.estimate_table(released, manifest, "MSP")
    shape = [len(c) for c in two.categories]
    assert np.allclose(two.table.counts.reshape(shape).sum(axis=1), one.table.counts, atol=1e-6)


@pytest.mark.slow
def test_the_estimate_is_unbiased_over_keys(release) -> None:
    data, manifest, _ = release
    truth = data.groupby(["SEX", "MSP", "DEYE"]).size()
    runs = []
    for r in range(40):
        released = pramkit.perturb_frame(data, manifest, key=SecretKey(bytes([r]) * 32, "mc")).data
        res = pramkit.estimate_table(released, manifest, ["MSP", "DEYE"])
        cells_a, cells_b = ([tuple(map(str, c)) for c in axis] for axis in res.categories)
        counts = res.table.counts.reshape(len(cells_a), len(cells_b))
        runs.append([counts[cells_a.index((s, m)), cells_b.index((s, d))] for s, m, d in truth.index])
    runs_a = np.array(runs)
    se = runs_a.std(axis=0, ddof=1) / np.sqrt(len(runs))
    z = (runs_a.mean(axis=0) - truth.to_numpy()) / np.maximum(se, 1e-9)
    assert np.abs(z).max() < 4.5


@pytest.mark.parametrize(("by", "weights"), [("SEX", None), (None, "HOUSING_TYPE")])
def test_what_cannot_be_crossed_is_one_line(release, by, weights) -> None:
    _, manifest, released = release
    with pytest.raises(ParameterError) as err:
        pramkit.estimate_table(released.assign(HOUSING_TYPE=1.0), manifest, ["MSP", "DEYE"], by=by, weights=weights)
    assert "\n" not in str(err.value)
