"""The Shlomo and Skinner (2012) reproduction (reproduce/shlomo2012.py) and the ``pramkit risk`` command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pramkit.cli import main
from pramkit.reproduce import shlomo2012


def test_model_share_against_cell_sum():
    p = shlomo2012.cell_probabilities()
    assert p.size == 2**16 and p.sum() == pytest.approx(1.0)
    lam = shlomo2012.N * p
    for pi in (0.005, 0.01):
        direct = (lam * np.exp(-lam)).sum() / (lam * np.exp(-pi * lam)).sum()
        assert shlomo2012.model_share(pi) == pytest.approx(direct, rel=1e-12)


def test_quick_run(tmp_path):
    res = shlomo2012.run(tmp_path, quick=True, quiet=True)
    assert round(res["threshold"], 1) == 77.3
    for row in res["samples"]:
        # a simulation lands near the Poisson-model share (20 samples: within 5 standard errors)
        assert abs(row["share_su_pu_mean"] - row["poisson_model_share"]) < 5 * row["share_su_pu_se"] + 1e-3
    for path in res["files"].values():
        assert (tmp_path / path.split("/")[-1]).exists()


def test_cli_risk_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": rng.integers(0, 4, 300), "b": rng.integers(0, 3, 300), "w": 50}).to_csv(path, index=False)
    assert main(["risk", str(path), "--keys", "a,b", "--weights", "w", "--json", "--plot", str(tmp_path / "f.png")]) == 0
    out = json.loads(capsys.readouterr().out)
    for field in ("n", "cells", "sample_uniques", "tau1", "tau2", "expected_reidentifications", "model", "seconds"):
        assert field in out
    assert out["n"] == 300 and out["cells"] == 12 and out["sampling_fraction"] == pytest.approx(0.02)
    assert main(["risk", str(path), "--keys", "a,zz", "--sampling-fraction", "0.1"]) == 2
    assert "zz" in capsys.readouterr().err


def test_cli_risk_with_manifest(tmp_path, capsys, key):
    from pramkit.design.classic import randomized_response
    from pramkit.engine.perturb import perturb_codes
    from pramkit.manifest import Manifest

    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 120)
    released = perturb_codes(a, randomized_response([0, 1, 2, 3], 1.0), key=key, variable="a")
    path = tmp_path / "released.csv"
    b = rng.choice(12, 120, p=np.arange(12, 0, -1) / 78)
    pd.DataFrame({"a": released, "b": b}).to_csv(path, index=False)
    Manifest.of({"a": randomized_response([0, 1, 2, 3], 1.0)}).write(tmp_path / "m.json")
    args = ["risk", str(path), "--keys", "a,b", "--sampling-fraction", "0.01"]
    assert main(args + ["--manifest", str(tmp_path / "m.json"), "--json"]) == 0
    with_m = json.loads(capsys.readouterr().out)
    assert main(args + ["--json"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert with_m["perturbed"] == ["a"] and without["perturbed"] == []
    assert with_m["sample_uniques"] == without["sample_uniques"] > 0
    assert with_m["tau2"] < without["tau2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "tau2" in text and "records" in text
