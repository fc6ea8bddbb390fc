"""identification_risk on a file path (streamed counts) equals the in-memory computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import apply_file
from pramkit.io import read_table
from pramkit.manifest import Manifest
from pramkit.risk.identification import identification_risk

FIELDS = ("n", "cells", "combinations", "sample_uniques", "sample_doubles", "excluded", "fitted_to")
FLOATS = ("tau1", "tau2", "expected_reidentifications", "sampling_fraction")


def same(a, b) -> None:
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    for f in FLOATS:
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-9, abs=1e-12), f
    assert a.per_record is None and b.per_record is not None


def test_weights_on_sdcmicro_testdata(sdc_data: Path) -> None:
    keys = ["urbrur", "roof", "walls", "water", "sex"]
    path = sdc_data / "testdata.csv"
    streamed = identification_risk(path, keys, weights="sampling_weight")
    in_memory = identification_risk(read_table(path), keys, weights="sampling_weight")
    same(streamed, in_memory)


@pytest.mark.parametrize("missing", ["category", "exclude"])
def test_missing_keys_and_a_release(tmp_path: Path, missing: str, key) -> None:
    data = census(20_000, seed=4)[["age", "sex", "marital_status", "race"]].astype(str)
    data.loc[::53, "race"] = None
    path = tmp_path / "d.csv"
    data.to_csv(path, index=False)
    keys = ["age", "sex", "marital_status", "race"]
    same(identification_risk(path, keys, sampling_fraction=0.05, missing=missing),
         identification_risk(read_table(path), keys, sampling_fraction=0.05, missing=missing))
    manifest = Manifest.of({"age": randomized_response(sorted(data["age"].unique()), 1.0)})
    released = tmp_path / "r.csv"
    apply_file(path, manifest, released, key=key)
    streamed = identification_risk(released, keys, sampling_fraction=0.05, manifest=manifest, original=path,
                                   missing=missing)
    in_memory = identification_risk(read_table(released), keys, sampling_fraction=0.05, manifest=manifest,
                                    original=read_table(path), missing=missing)
    same(streamed, in_memory)
    assert streamed.fitted_to == "original" and np.isfinite(streamed.tau2)
