"""Scale is part of the family contract: every family that should scale designs a release over
20 000 categories without an S x S array, with a manifest of at most 209 bytes a category (20 MB
at 100 000) and a design record within a small factor of it, and its matrix perturbs 10^6 values
with the law it states.

Memory is measured with :mod:`tracemalloc` (NumPy reports its buffers to it): an S x S array of
doubles at S = 20 000 is 3.2 GB, so a peak under :data:`PEAK` (about 10 KiB a category, 1 GiB at
100 000) proves none was built.  Tracing slows the design five-fold, so the contract is held at
20 000 categories, where a quadratic array is as unmistakable as at 100 000; times, and the
designs at 100 000, are ``benchmarks/bench_design_scale.py``'s.  The perturbation is checked
against the stated law: the share of values kept is within six standard deviations of
``sum_k n_k M[k, k] / n`` computed from the manifest's diagonal, and every released code is a
category.
"""

from __future__ import annotations

import random
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import pramkit
from pramkit.manifest import Manifest

#: Categories of the variable.
S = 20_000
#: Records of the file: every category occurs, most several times (missing values among them).
ROWS = 2 * S
#: Values perturbed through the engine.
APPLIED = 1_000_000
#: Largest traced allocation peak of one design, 10 737 bytes a category (1 GiB at S = 100 000; an S x S
#: array would be 3.2 GB).
PEAK = 10_737 * S
#: Largest manifest, 209 bytes a category (20 MB at S = 100 000).
MANIFEST_BYTES = 209 * S
#: Largest ratio of the design record's size to the manifest's (plus an allowance of 10 bytes a category, 1 MiB
#: at S = 100 000).
RECORD_FACTOR = 4

#: The families that scale, with the settings that select them and the record budget.  The two
#: families that fix their epsilon by their parameters get a budget that holds it: keep 0.7 on
#: 20 000 categories is log(0.7 (S - 1) / 0.3) = 10.75; the geometric mechanism's pure epsilon is
#: eps_d (S - 1) = 199.99 (its guarantee is the metric one, 0.01 per band).
FAMILIES = {
    "dp (form 8, DP counts)": {"method": "dp", "epsilon": 4.0},
    "dp least variance": {"method": "dp", "options": {"objective": "variance"}, "epsilon": 4.0},
    "randomized response": {"method": "rr", "epsilon": 4.0},
    "keep probability": {"method": "keep", "options": {"keep": 0.7}, "epsilon": 10.8},
    "metric, truncated geometric": {"method": "metric", "options": {"metric_epsilon": 0.01, "mechanism": "geometric"},
                                    "distances": {"band": "ordinal"}, "epsilon": 200.0},
}


@pytest.fixture(scope="module")
def survey() -> pd.DataFrame:
    """A file whose one key variable has S ordered bands, Zipf-like counts and missing values."""
    gen = np.random.default_rng(20261124)
    codes = np.concatenate([np.arange(S), gen.zipf(1.3, ROWS - S) % S])
    labels = np.array([f"b{k:06d}" for k in range(S)], dtype=object)
    band = pd.Series(labels[codes], dtype=object)
    band[gen.random(ROWS) < 0.01] = None            # 1 % missing: kept missing, named by the ledger
    return pd.DataFrame({"band": band, "weight": gen.uniform(0.5, 3.0, ROWS)})


@pytest.fixture(scope="module")
def categories() -> list[str]:
    return [f"b{k:06d}" for k in range(S)]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_family_designs_and_applies_20_000_categories(name: str, survey: pd.DataFrame, categories: list[str],
                                                         tmp_path) -> None:
    settings = {"categories": {"band": categories}, **FAMILIES[name]}
    plan = pramkit.plan_release(["band"], **settings)
    tracemalloc.start()
    try:
        release = pramkit.design_planned(survey, plan, rng=random.Random(7))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK, f"{name}: {peak / 2**20:.0f} MiB traced while designing"
    written = pramkit.write_design(release, tmp_path / "manifest.json")
    manifest_bytes = written.manifest_path.stat().st_size
    record_bytes = written.record_path.stat().st_size
    assert manifest_bytes < MANIFEST_BYTES, f"{name}: manifest {manifest_bytes / 2**20:.1f} MiB"
    assert record_bytes < RECORD_FACTOR * manifest_bytes + 10 * S, (name, record_bytes, manifest_bytes)

    manifest = Manifest.read(written.manifest_path)       # read back: the published matrix
    matrix = manifest["band"].matrix
    assert matrix.size == S and manifest.record_epsilon <= settings["epsilon"]
    gen = np.random.default_rng(5)
    codes = gen.integers(0, S, APPLIED)
    released = pramkit.perturb_codes(codes, matrix, key=pramkit.SecretKey(bytes(32), "a test key"), variable="band")
    assert released.min() >= 0 and released.max() < S
    kept = np.asarray(matrix.diagonal)[codes]
    share, expected = float(np.mean(released == codes)), float(kept.mean())
    sd = float(np.sqrt(np.sum(kept * (1 - kept)))) / APPLIED
    assert abs(share - expected) <= 6 * sd + 1e-12, (name, share, expected, sd)


#: Areas of the metric design over centroids.
AREAS = 10_000


def test_the_exponential_mechanism_over_10_000_areas_is_stored_by_its_centroids(tmp_path) -> None:
    """The metric design over 10 000 areas: no S x S array (800 MB) while designing, a manifest that
    holds the rate and the centroids (O(S)), and draws whose share kept matches the stated law."""
    from pramkit.distances import euclidean_distances

    side = int(np.ceil(np.sqrt(AREAS)))
    grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), axis=-1).reshape(-1, 2)[:AREAS].astype(float)
    xy = grid + np.random.default_rng(3).uniform(-0.3, 0.3, grid.shape)      # a jittered 1 km grid
    names = [f"A{i:05d}" for i in range(AREAS)]
    gen = np.random.default_rng(11)
    area = pd.Series(np.array(names, dtype=object)[gen.integers(0, AREAS, 60_000)], dtype=object)
    area[gen.random(area.size) < 0.02] = None
    data = pd.DataFrame({"area": area})
    plan = pramkit.plan_release(["area"], method="metric", categories={"area": names},
                                options={"metric_epsilon": 0.5},
                                distances={"area": euclidean_distances(names, xy, unit="km")})
    tracemalloc.start()
    try:
        release = pramkit.design_planned(data, plan)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < AREAS * AREAS * 8 / 4, f"{peak / 2**20:.0f} MiB traced while designing"
    written = pramkit.write_design(release, tmp_path / "manifest.json")
    assert written.manifest_path.stat().st_size < 4 << 20
    assert written.record_path.stat().st_size < RECORD_FACTOR * written.manifest_path.stat().st_size + (1 << 20)
    matrix = Manifest.read(written.manifest_path)["area"].matrix
    assert matrix.form == "exponential" and matrix.exponential_rate <= 0.5
    codes = np.random.default_rng(6).integers(0, AREAS, 200_000)
    released = pramkit.perturb_codes(codes, matrix, key=pramkit.SecretKey(bytes(32), "a test key"), variable="area")
    kept = np.asarray(matrix.diagonal)[codes]
    share, expected = float(np.mean(released == codes)), float(kept.mean())
    assert abs(share - expected) <= 6 * float(np.sqrt(np.sum(kept * (1 - kept)))) / codes.size
