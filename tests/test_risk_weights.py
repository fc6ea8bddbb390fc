"""Identification risk with varying sampling weights: per-cell sampling fractions (risk/fractions.py)."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pramkit.risk.fractions as fractions_module
import pramkit.risk.identification as identification_module
import pramkit.risk.misclassified as misclassified_module
from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_codes
from pramkit.errors import DataError, PramkitError
from pramkit.io import read_table
from pramkit.manifest import Manifest
from pramkit.risk.fractions import sampling_fractions
from pramkit.risk.identification import identification_risk

FREE1_KEYS = ["REGION", "SEX", "AGE"]


def _independence_taus(data: pd.DataFrame, keys: list[str], pi_of_record: np.ndarray) -> tuple[float, float]:
    """tau1, tau2 under independence from first principles.  The MLE of the independence model
    is mu = n p_1 p_2 p_3 (products of the sample margins; with fractions that vary with a key
    of the model the offset is absorbed by its main effect); lambda = mu / pi;
    P(F = 1 | f = 1) = exp(-lambda (1 - pi)) and E(1/F | f = 1) = (1 - exp(-x)) / x, x = lambda (1 - pi),
    summed over the sample-unique combinations."""
    n = len(data)
    mu = np.full(n, float(n))
    for k in keys:
        mu *= data[k].map(data[k].value_counts() / n).to_numpy()
    f = data.groupby(keys)[keys[0]].transform("size").to_numpy()
    unique = f == 1
    x = mu[unique] / pi_of_record[unique] * (1 - pi_of_record[unique])
    return float(np.exp(-x).sum()), float(((1 - np.exp(-x)) / x).sum())


def test_free1_per_cell_fractions_from_first_principles(sdc_data: Path) -> None:
    # free1: weight constant within REGION (a key), 0.0024 to 0.0089 as fractions
    data = pd.read_csv(sdc_data / "free1.csv")
    res = identification_risk(data, FREE1_KEYS, weights="WEIGHT", model="independence")
    pi = 1.0 / data["WEIGHT"].to_numpy()
    tau1, tau2 = _independence_taus(data, FREE1_KEYS, pi)
    assert res.tau1 == pytest.approx(tau1, rel=1e-6)
    assert res.tau2 == pytest.approx(tau2, rel=1e-6)
    assert res.fractions == "cell" and res.fraction_strata == ("REGION",) and res.assumed_cells == 0
    assert res.sampling_fraction_range == pytest.approx((pi.min(), pi.max()), rel=1e-12)
    assert res.sampling_fraction == pytest.approx(len(data) / data["WEIGHT"].sum(), rel=1e-12)
    np.testing.assert_allclose(res.per_record["pi"], pi, rtol=1e-12)
    assert "per-cell" in res.sampling_assumption and "REGION" in res.sampling_assumption
    # one fraction for the file, asked for: n / sum of weights in every cell (the risk understated)
    one = identification_risk(data, FREE1_KEYS, weights="WEIGHT", model="independence", fractions="file")
    tau1_file, tau2_file = _independence_taus(data, FREE1_KEYS, np.full(len(data), res.sampling_fraction))
    assert one.tau1 == pytest.approx(tau1_file, rel=1e-6) and one.tau2 == pytest.approx(tau2_file, rel=1e-6)
    assert one.fractions == "file" and one.tau1 < res.tau1 and one.tau2 < res.tau2
    assert "range from" in one.sampling_assumption


def test_free1_streamed_equals_in_memory(sdc_data: Path) -> None:
    path = sdc_data / "free1.csv"
    streamed = identification_risk(path, FREE1_KEYS, weights="WEIGHT", model="independence")
    in_memory = identification_risk(read_table(path), FREE1_KEYS, weights="WEIGHT", model="independence")
    for name in ("tau1", "tau2", "expected_reidentifications", "sampling_fraction"):
        assert getattr(streamed, name) == pytest.approx(getattr(in_memory, name), rel=1e-9), name
    assert streamed.to_dict()["sampling_assumption"] == in_memory.to_dict()["sampling_assumption"]


def test_cli_states_the_assumption(sdc_data: Path, capsys) -> None:
    args = ["risk", str(sdc_data / "free1.csv"), "--keys", ",".join(FREE1_KEYS), "--weights", "WEIGHT",
            "--model", "independence"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fractions"] == "cell" and out["fraction_strata"] == ["REGION"]
    data = pd.read_csv(sdc_data / "free1.csv")
    assert out["sampling_fraction"] == pytest.approx(len(data) / data["WEIGHT"].sum(), rel=1e-12)  # kept
    assert out["sampling_assumption"].startswith("per-cell sampling fractions")
    assert main(args + ["--fractions", "file"]) == 0
    text = capsys.readouterr().out
    assert "sampling assumption: one sampling fraction for every cell" in text


def _records(weight_of, n=400, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({"a": rng.choice(3, n, p=[0.5, 0.3, 0.2]), "b": rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1]),
                         "c": rng.choice(5, n, p=[0.4, 0.3, 0.15, 0.1, 0.05])})
    data["w"] = weight_of(data, rng)
    return data


def test_constant_weights_are_one_fraction() -> None:
    data = _records(lambda d, rng: np.full(len(d), 50.0))
    weighted = identification_risk(data, ["a", "b", "c"], weights="w")
    given = identification_risk(data, ["a", "b", "c"], sampling_fraction=0.02)
    assert weighted.fractions == "file" and weighted.fraction_strata == () and weighted.sampling_fractions.known is None
    assert weighted.tau1 == pytest.approx(given.tau1, rel=1e-12)
    assert weighted.tau2 == pytest.approx(given.tau2, rel=1e-12)
    assert "the same in every cell" in weighted.sampling_assumption
    assert given.sampling_assumption == "one sampling fraction for every cell: pi = 0.02 (given)"


def test_strata_found_and_empty_cells_of_an_occupied_class() -> None:
    # the weight depends on (a, b): the fractions vary with a and b and not with c
    inverse = np.array([[10.0, 20.0, 40.0, 80.0], [15.0, 25.0, 35.0, 45.0], [60.0, 30.0, 90.0, 12.0]])
    data = _records(lambda d, rng: inverse[d.a, d.b])
    res = identification_risk(data, ["a", "b", "c"], weights="w", model="independence")
    assert res.fractions == "cell" and res.fraction_strata == ("a", "b")
    fr = res.sampling_fractions
    counts = np.zeros((3, 4, 5))
    np.add.at(counts, (data.a, data.b, data.c), 1)
    assert (counts == 0).any()
    # every cell, empty or not, gets the fraction of its (a, b) class
    cells = np.arange(counts.size)
    a, b, _ = np.unravel_index(cells, counts.shape)
    np.testing.assert_allclose(fr.at(cells, counts.shape), 1 / inverse[a, b], rtol=1e-12)
    assert res.assumed_cells == 0


def test_class_without_records_assumes_the_file_fraction() -> None:
    inverse = np.array([[10.0, 20.0, 40.0, 80.0], [15.0, 25.0, 35.0, 45.0], [60.0, 30.0, 90.0, 12.0]])
    data = _records(lambda d, rng: inverse[d.a, d.b])
    data = data[~((data.a == 2) & (data.b == 3))]  # the (2, 3) class has no record
    res = identification_risk(data, ["a", "b", "c"], weights="w", model="independence")
    overall = len(data) / data["w"].sum()
    fr = res.sampling_fractions
    assert fr.at(np.array([np.ravel_multi_index((2, 3, 0), (3, 4, 5))]), (3, 4, 5))[0] == pytest.approx(overall)
    # under independence the cells of the empty class still have a positive fitted mean
    assert res.assumed_cells == 5
    assert "5 cell(s)" in res.sampling_assumption and f"{overall:.6g}" in res.sampling_assumption


def test_weights_varying_within_cells() -> None:
    # record-level weights: each occupied cell gets f / sum of its weights (the Horvitz-Thompson F)
    data = _records(lambda d, rng: rng.uniform(20, 60, len(d)))
    res = identification_risk(data, ["a", "b", "c"], weights="w")
    assert res.fractions == "cell" and res.fraction_strata == ("a", "b", "c")
    grouped = data.groupby(["a", "b", "c"])["w"].agg(["size", "sum"])
    expected = (grouped["size"] / grouped["sum"]).to_numpy()
    cells = np.ravel_multi_index(tuple(np.array(i) for i in zip(*grouped.index)), (3, 4, 5))
    np.testing.assert_allclose(res.sampling_fractions.at(cells, (3, 4, 5)), expected, rtol=1e-12)
    assert res.per_record["pi"].to_numpy() == pytest.approx(
        data.groupby(["a", "b", "c"])["w"].transform(lambda w: len(w) / w.sum()).to_numpy(), rel=1e-12)


def test_weights_below_the_cell_count_are_refused() -> None:
    counts = np.array([[2.0, 1.0]])
    with pytest.raises(DataError, match="at least the records of every cell"):
        sampling_fractions(counts, ["a", "b"], weight_sums=np.array([[1.5, 400.0]]))
    with pytest.raises(PramkitError, match="'cell' or 'file'"):
        sampling_fractions(counts, ["a", "b"], weight_sums=counts * 10, by="rows")  # type: ignore[arg-type]


@pytest.mark.parametrize("stratum, per_cell", [("a", True), ("c", False)])
def test_release_fractions(stratum: str, per_cell: bool, key) -> None:
    # EM route (released counts alone): the fractions may vary only with keys that are not perturbed
    inverse = {"a": np.array([10.0, 40.0, 20.0]), "c": np.array([10.0, 40.0, 20.0, 30.0, 50.0])}[stratum]
    data = _records(lambda d, rng: inverse[d[stratum]], n=300, seed=3)
    rr = randomized_response([0, 1, 2, 3, 4], 2.0)
    released = data.copy()
    released["c"] = perturb_codes(data["c"].to_numpy(), rr, key=key, variable="c")
    manifest = Manifest.of({"c": rr})
    em = identification_risk(released, ["a", "b", "c"], weights="w", manifest=manifest, model="independence")
    assert em.fitted_to == "released (EM)" and em.fractions == ("cell" if per_cell else "file")
    if not per_cell:
        assert "vary with c" in em.sampling_assumption
    # with the original file the fractions are those of its true cells
    orig = identification_risk(released, ["a", "b", "c"], weights="w", manifest=manifest, original=data,
                               model="independence")
    assert orig.fitted_to == "original" and orig.fractions == "cell" and orig.fraction_strata == (stratum,)


def test_module_doctests() -> None:
    for module in (fractions_module, identification_module, misclassified_module):
        assert doctest.testmod(module).failed == 0, module.__name__
