"""The information a stratified design keeps is I(X; Z) of the variable itself, the strata mixed.

docs/tutorial.md's design with the age bands as strata: the design record's (and the command's)
I(X; Z) of status is checked against a computation made here per record from the public manifest's
matrix (pandas counts, the matrix's rows, the mutual information summed by hand), and against the
plug-in information between the original and the released status of releases drawn by the engine.
Before the fix the figure counted the age bands' entropy, I((X, S); (Z, S)): 2.047 nats for seven
statuses, more than log 7.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA

import pramkit
from pramkit.cli import main
from pramkit.kernel.rng import SecretKey

EUSILC = SDC_DATA / "eusilc_laeken.csv"
BANDS = ["0-15", "16-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75+"]


def _mutual_information(joint: np.ndarray) -> float:
    """I in nats of a joint table of proportions, summed cell by cell."""
    joint = joint / joint.sum()
    px, pz = joint.sum(axis=1), joint.sum(axis=0)
    return sum(joint[i, j] * math.log(joint[i, j] / (px[i] * pz[j]))
               for i in range(joint.shape[0]) for j in range(joint.shape[1]) if joint[i, j] > 0)


@pytest.fixture(scope="module")
def designed(tmp_path_factory) -> dict:
    """The tutorial's stratified design (status and citizenship, strata age, edit rules)."""
    if not EUSILC.is_file():
        pytest.skip(f"{EUSILC} (laeken's eusilc) is not available")
    folder = tmp_path_factory.mktemp("survey")
    raw = pd.read_csv(EUSILC)
    survey = pd.DataFrame({
        "age": pd.cut(raw["age"], [-2, 15, 24, 34, 44, 54, 64, 74, 200], labels=BANDS).astype(str),
        "status": raw["pl030"].map(lambda v: "-9" if pd.isna(v) else str(int(v))),
        "citizenship": raw["pb220a"].fillna("-9"),
    })
    survey.to_csv(folder / "survey.csv", index=False)
    (folder / "codebook.csv").write_text("variable,category\n" + "".join(f"status,{i}\n" for i in range(1, 8))
                                         + "citizenship,AT\ncitizenship,EU\ncitizenship,Other\n")
    (folder / "rules.csv").write_text("age,status\n16-24,5\n75+,1|2|3\n")
    return {"data": survey, "folder": folder,
            **_design(folder, "m", ["--strata", "age", "--forbid", str(folder / "rules.csv")])}


def _design(folder: Path, name: str, flags: list[str]) -> dict:
    """``pramkit design`` of the survey (variance objective: no frequencies read), its outputs."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["design", str(folder / "survey.csv"), "--vars", "status,citizenship", "--categories",
                     str(folder / "codebook.csv"), "--na-values", "-9", "--objective", "variance", "--epsilon", "3",
                     *flags, "--out", str(folder / f"{name}.json"), "--quiet"])
    assert code == 0
    return {"manifest": pramkit.Manifest.read(folder / f"{name}.json"), "printed": out.getvalue(),
            "record": json.loads((folder / f"{name}.design-record.json").read_text())}


def _exact(data: pd.DataFrame, manifest: pramkit.Manifest, name: str) -> float:
    """I(X; Z) from each record's row of the manifest's matrix, the released values' strata summed out."""
    v = manifest[name]
    cells = [tuple(c) for c in v.matrix.categories]
    matrix = v.matrix.matrix
    values = sorted({c[1] for c in cells})
    kept = data[data[name] != "-9"]
    joint = np.zeros((len(values), len(values)))
    for (age, x), n in kept.groupby(["age", name]).size().items():
        row = matrix[cells.index((age, x))]
        for j, (_, z) in enumerate(cells):
            joint[values.index(x), values.index(z)] += n * row[j]
    return _mutual_information(joint)


@pytest.mark.parametrize("name", ["status", "citizenship"])
def test_the_record_keeps_the_variables_own_information(designed: dict, name: str) -> None:
    figure = designed["record"]["per_variable"][name]["information_nats"]
    assert figure == pytest.approx(_exact(designed["data"], designed["manifest"], name), abs=1e-9)
    categories = 7 if name == "status" else 3
    assert 0 < figure < math.log(categories)
    # stratified: its local epsilon is infinite (the strata are shown exactly), as every surface says it
    assert (f"{name}: epsilon = local inf; 1.5 given the structure, I(X;Z) = {figure:.4g} nats on the data"
            in designed["printed"])
    total = designed["record"]["total_information_nats"]
    assert total == pytest.approx(sum(designed["record"]["information_nats"].values()))


def test_strata_without_rules_keep_what_no_strata_keep(designed: dict) -> None:
    """The variance objective reads no frequencies: every age band gets the matrix the file would get
    without strata, so the released status says as much of status with the strata as without them."""
    plain = _design(designed["folder"], "plain", [])["record"]["information_nats"]
    strata = _design(designed["folder"], "strata", ["--strata", "age"])["record"]["information_nats"]
    assert strata == pytest.approx(plain, abs=1e-9)


def test_the_entropy_is_the_variables_own(designed: dict) -> None:
    kept = designed["data"][designed["data"]["status"] != "-9"]["status"]
    shares = kept.value_counts(normalize=True).to_numpy()
    assert designed["record"]["per_variable"]["status"]["entropy_nats"] == pytest.approx(
        -float((shares * np.log(shares)).sum()), abs=1e-12)


@pytest.mark.slow
def test_releases_drawn_keep_that_information(designed: dict) -> None:
    """The plug-in I between the original and the released status of three releases (about 12 000
    records each: plug-in bias about (7 - 1)^2 / (2 n), 0.0015 nats) is the figure within 0.01."""
    data, manifest = designed["data"], designed["manifest"]
    kept = data["status"] != "-9"
    found = []
    for r in range(3):
        released = pramkit.perturb_frame(data.mask(data == "-9"), manifest,
                                         key=SecretKey(bytes([r + 1]) * 32, "mc")).data
        joint = pd.crosstab(data.loc[kept, "status"], released.loc[kept, "status"]).to_numpy(dtype=float)
        found.append(_mutual_information(joint))
    figure = designed["record"]["per_variable"]["status"]["information_nats"]
    assert abs(np.mean(found) - figure) < 0.01, (found, figure)


def test_a_joint_target_with_strata_mixes_them() -> None:
    """split joint with strata: the variable is the pair; checked by the same per-record sum."""
    from pramkit.datasets import CENSUS_VARIABLES, census

    data = census(3_000)[["ownership", "sex", "marital_status"]]
    plan = pramkit.plan_release(["sex", "marital_status"], epsilon=2.0, split="joint", strata="ownership",
                                categories={k: CENSUS_VARIABLES[k] for k in ("sex", "marital_status")})
    manifest, record = pramkit.design_planned(data, plan, rng=random.Random(1))
    v = manifest.variables[0]
    cells = [tuple(c) for c in v.matrix.categories]
    matrix = v.matrix.matrix
    pairs = sorted({c[1:] for c in cells})
    joint = np.zeros((len(pairs), len(pairs)))
    for (s, a, b), n in data.groupby(["ownership", "sex", "marital_status"]).size().items():
        row = matrix[cells.index((s, a, b))]
        for j, cell in enumerate(cells):
            joint[pairs.index((a, b)), pairs.index(cell[1:])] += n * row[j]
    figure = record.variables[v.name]["information_nats"]
    assert figure == pytest.approx(_mutual_information(joint), abs=1e-9)
    assert figure < math.log(len(pairs))
