"""`pramkit design --recognition`: the written joint manifest protects the file, checked independently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.risk.recognition import recognition_risk

KEYS = ["age", "sex", "marital_status", "disability"]


def test_recognition_design_writes_a_protecting_joint_manifest(tmp_path: Path, capsys) -> None:
    data = census(4000, seed=11)[KEYS]
    csv = tmp_path / "d.csv"
    data.to_csv(csv, index=False)
    out = tmp_path / "m.json"
    code = main(["design", str(csv), "--keys", ",".join(KEYS), "--recognition", "0.2", "--out", str(out), "--json"])
    assert code == 0, capsys.readouterr().err
    res = json.loads(capsys.readouterr().out)
    (var,) = Manifest.read(out).variables
    assert var.columns == tuple(KEYS) and var.matrix.provenance.method == "recognition"
    assert res["worst_posterior"] <= 0.2 + 1e-9 and res["expected_changes_records"] > 0
    # the independent (C1) check of the risk module, with and without the design
    frame = data.astype(str)
    protected = recognition_risk(frame, KEYS, alpha=0.2, joint=var.matrix, reduce=False)
    assert protected.satisfied and protected.max_posterior <= 0.2 + 1e-9
    identity = PramMatrix(np.eye(var.matrix.size), var.matrix.categories)
    assert not recognition_risk(frame, KEYS, alpha=0.2, joint=identity, reduce=False).satisfied
    assert main(["apply", str(csv), "--manifest", str(out), "--out", str(tmp_path / "r.csv"), "--quiet"]) == 0


@pytest.mark.parametrize("extra, message", [
    (["--epsilon", "1"], "its own privacy model"),
    (["--combinations", "age,sex,nope"], "nope"),
])
def test_recognition_bad_input(tmp_path: Path, capsys, extra, message) -> None:
    csv = tmp_path / "d.csv"
    census(500, seed=1)[KEYS].to_csv(csv, index=False)
    code = main(["design", str(csv), "--keys", ",".join(KEYS), "--recognition", "0.2",
                 "--out", str(tmp_path / "m.json"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
