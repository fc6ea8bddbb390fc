"""Risk after PRAM of a release whose manifest perturbs keys jointly (one matrix over the
cross-classification of two columns): against the risk written out from its definitions."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pramkit import Manifest, PramMatrix, perturb_frame
from pramkit.cli import main
from pramkit.errors import ParameterError
from pramkit.manifest import PerturbedVariable
from pramkit.risk import household_risk, identification_risk


@pytest.fixture
def release(sdc_data: Path) -> tuple[pd.DataFrame, pd.DataFrame, Manifest]:
    """1,500 EU-SILC persons; sex and region perturbed jointly (keep 0.8, else uniform over the other cells)."""
    data = pd.read_csv(sdc_data / "eusilc_laeken.csv").head(1500)
    frame = pd.DataFrame({"rb090": data["rb090"], "db040": data["db040"],
                          "age": pd.cut(data["age"], [-2, 15, 34, 54, 74, 120]).astype(str)})
    cells = [(s, r) for s in sorted(frame["rb090"].unique()) for r in sorted(frame["db040"].unique())]
    k = len(cells)
    matrix = np.full((k, k), 0.2 / (k - 1))
    np.fill_diagonal(matrix, 0.8)
    manifest = Manifest(variables=(PerturbedVariable("rb090*db040", PramMatrix(matrix, cells),
                                                     columns=("rb090", "db040")),))
    released = perturb_frame(frame, manifest, key=bytes(32)).data
    return frame, released, manifest


def by_definition(original: pd.DataFrame, released: pd.DataFrame, manifest: Manifest,
                  pi: float) -> tuple[float, float]:
    """tau1 and tau2 after PRAM under independence of the joint cell and age, written out: mu = n p_J p_age,
    M = kron(joint matrix, I), and the released uniques' risks of the module docstring."""
    v = manifest["rb090*db040"]
    cells = list(v.matrix.categories)
    ages = sorted(original["age"].unique())
    n = len(original)
    joint = [cells.index((s, r)) for s, r in zip(original["rb090"], original["db040"])]
    p_joint = np.bincount(joint, minlength=len(cells)) / n
    p_age = original["age"].map({a: i for i, a in enumerate(ages)}).value_counts(normalize=True).sort_index()
    mu = n * np.kron(p_joint, p_age.to_numpy())
    big = np.kron(np.asarray(v.matrix.matrix), np.eye(len(ages)))
    released_mean = mu @ big
    seen: dict[int, int] = {}
    for s, r, a in zip(released["rb090"], released["db040"], released["age"]):
        j = cells.index((s, r)) * len(ages) + ages.index(a)
        seen[j] = seen.get(j, 0) + 1
    tau1 = tau2 = 0.0
    for j, f in seen.items():
        if f != 1:
            continue
        share = mu[j] * big[j, j] / released_mean[j]
        nu = mu[j] / pi * (1 - pi * big[j, j])
        tau1 += share * math.exp(-nu)
        tau2 += share * -math.expm1(-nu) / nu
    return tau1, tau2


def test_joint_keys_count_as_perturbed(release: tuple[pd.DataFrame, pd.DataFrame, Manifest]) -> None:
    original, released, manifest = release
    keys = ["rb090", "db040", "age"]
    res = identification_risk(released, keys, sampling_fraction=0.05, manifest=manifest, original=original,
                              model="independence", tol=1e-12)
    tau1, tau2 = by_definition(original, released, manifest, 0.05)
    assert res.perturbed == ("rb090", "db040") and res.fitted_to == "original"
    assert res.tau1 == pytest.approx(tau1, rel=1e-8) and res.tau2 == pytest.approx(tau2, rel=1e-8)
    plain = identification_risk(released, keys, sampling_fraction=0.05, model="independence")
    assert res.tau2 < plain.tau2  # PRAM lowers the risk of the released uniques
    assert np.nansum(res.per_record["r2"]) == pytest.approx(res.tau2)


def test_joint_keys_from_files(release: tuple[pd.DataFrame, pd.DataFrame, Manifest], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    original, released, manifest = release
    original.to_csv(tmp_path / "original.csv", index=False)
    released.to_csv(tmp_path / "released.csv", index=False)
    manifest.write(tmp_path / "m.json")
    streamed = identification_risk(tmp_path / "released.csv", ["age", "rb090", "db040"], sampling_fraction=0.05,
                                   manifest=manifest, original=tmp_path / "original.csv", model="independence",
                                   tol=1e-12)
    tau1, tau2 = by_definition(original, released, manifest, 0.05)
    assert streamed.perturbed == ("rb090", "db040")
    assert streamed.tau1 == pytest.approx(tau1, rel=1e-8) and streamed.tau2 == pytest.approx(tau2, rel=1e-8)
    code = main(["risk", str(tmp_path / "released.csv"), "--keys", "rb090,db040,age", "--sampling-fraction", "0.05",
                 "--manifest", str(tmp_path / "m.json"), "--original", str(tmp_path / "original.csv")])
    out = capsys.readouterr().out
    assert code == 0 and "perturbed keys: rb090, db040; model fitted to the original counts" in out


def test_part_of_a_joint_variable_refused(release: tuple[pd.DataFrame, pd.DataFrame, Manifest]) -> None:
    _, released, manifest = release
    with pytest.raises(ParameterError, match=r"add \['db040'\] to the keys"):
        identification_risk(released, ["rb090", "age"], sampling_fraction=0.05, manifest=manifest)
    released = released.assign(hh=np.arange(len(released)) // 3)
    with pytest.raises(ParameterError, match="perturbed jointly"):
        household_risk(released, ["rb090", "db040", "age"], "hh", sampling_fraction=0.05, manifest=manifest)
