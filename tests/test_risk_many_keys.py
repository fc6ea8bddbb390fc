"""Risk measures over many key variables: 20 keys of real EU-SILC records through SUDA and the
contributions without the product of their categories, and the refusals (one line, with the figure,
exit 2, nothing written) when a measure needs more than it may take."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import assert_refused

from pramkit.cli import main
from pramkit.errors import ParameterError
from pramkit.risk import contributions as contributions_module
from pramkit.risk import identification_risk, suda
from pramkit.risk.contributions import risk_contributions
from pramkit.risk.identification import independence_risk


def brute_independence(frame: pd.DataFrame, keys: list[str], pi: float) -> tuple[float, float, int]:
    """tau1, tau2 and the sample uniques under independence, written out from the definitions:
    mu = n prod of the keys' shares, lambda = mu / pi, over the records alone in their combination."""
    n = len(frame)
    cells = frame[keys].astype(object).where(frame[keys].notna(), "<missing>").apply(tuple, axis=1)
    counts = cells.value_counts()
    # each key's shares once (not once per unique record): the same values, in the same order of products
    shares = {key: frame[key].astype(object).where(frame[key].notna(), "<missing>").value_counts() / n
              for key in keys}
    tau1 = tau2 = 0.0
    for cell, f in counts.items():
        if f != 1:
            continue
        mu = float(n)
        for key, value in zip(keys, cell):
            mu *= shares[key][value]
        nu = mu / pi * (1 - pi)
        tau1 += math.exp(-nu)
        tau2 += -math.expm1(-nu) / nu
    return tau1, tau2, int((counts == 1).sum())


def test_independence_without_the_table_matches(silc20: pd.DataFrame) -> None:
    for keys in (["db040", "age", "rb090", "pl030"], list(silc20.columns[:6])):
        sparse = independence_risk(silc20, keys, sampling_fraction=0.02)
        fitted = identification_risk(silc20, keys, sampling_fraction=0.02, model="independence", tol=1e-12)
        tau1, tau2, uniques = brute_independence(silc20, keys, 0.02)
        assert sparse.sample_uniques == fitted.sample_uniques == uniques
        assert sparse.tau1 == pytest.approx(tau1, rel=1e-9) and sparse.tau2 == pytest.approx(tau2, rel=1e-9)
        assert sparse.tau1 == pytest.approx(fitted.tau1, rel=1e-6)
        assert sparse.expected_reidentifications == pytest.approx(fitted.expected_reidentifications, rel=1e-9)
    keys = list(silc20.columns)
    sparse = independence_risk(silc20, keys, sampling_fraction=0.02)
    tau1, tau2, uniques = brute_independence(silc20, keys, 0.02)
    assert sparse.cells > 10 ** 12 and sparse.sample_uniques == uniques
    assert sparse.tau1 == pytest.approx(tau1, rel=1e-9) and sparse.tau2 == pytest.approx(tau2, rel=1e-9)


def test_contributions_over_twenty_keys(silc20: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = list(silc20.columns)
    res = risk_contributions(silc20, keys, sampling_fraction=0.02, model="independence", max_size=3)
    assert res.suda.msu_counts.tolist() == suda(silc20, keys, max_size=3).msu_counts.tolist()
    tau1, _, _ = brute_independence(silc20, keys, 0.02)
    assert res.totals["tau1"] == pytest.approx(tau1, rel=1e-9)
    left = [k for k in keys if k != "age"]
    without_age, _, _ = brute_independence(silc20, left, 0.02)
    age = res.variables.set_index("variable").loc["age", "tau1"]
    assert age == pytest.approx(100 * (tau1 - without_age) / tau1, rel=1e-9)
    # on fewer keys the same route agrees with the fitted model (table made)
    few = ["db040", "age", "rb090", "pl030"]
    fitted = risk_contributions(silc20, few, sampling_fraction=0.02, model="independence")
    monkeypatch.setattr(contributions_module, "LOGLINEAR_MAX_CELLS", 10)
    sparse = risk_contributions(silc20, few, sampling_fraction=0.02, model="independence")
    for name in ("tau1", "tau2", "individual"):
        assert sparse.totals[name] == pytest.approx(fitted.totals[name], rel=1e-5)
        np.testing.assert_allclose(sparse.variables[name], fitted.variables[name], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(sparse.levels[name], fitted.levels[name], rtol=1e-4, atol=1e-6)


def test_contributions_refused_before_any_work(silc20: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("SUDA ran before the refusal")

    monkeypatch.setattr(contributions_module, "suda", no_search)
    with pytest.raises(ParameterError) as info:
        risk_contributions(silc20, list(silc20.columns), sampling_fraction=0.02, max_size=2)
    cells = math.prod(silc20[k].nunique() + silc20[k].isna().any() for k in silc20.columns)  # missing: a category
    assert cells == 5_393_690_394_624
    assert "5,393,690,394,624 cells" in str(info.value) and "--model independence" in str(info.value)


@pytest.fixture
def folder(tmp_path: Path, silc20: pd.DataFrame) -> Path:
    silc20.to_csv(tmp_path / "silc20.csv", index=False)
    return tmp_path


def test_cli_twenty_keys(folder: Path, silc20: pd.DataFrame, capsys: pytest.CaptureFixture[str]) -> None:
    keys = ",".join(silc20.columns)
    assert main(["risk", str(folder / "silc20.csv"), "--keys", keys, "--suda", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["msus_by_size"] == suda(silc20, list(silc20.columns)).msu_counts.sum(axis=0).tolist()
    assert main(["risk", str(folder / "silc20.csv"), "--keys", keys, "--contributions", "--max-size", "2",
                 "--sampling-fraction", "0.02", "--model", "independence", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [v["variable"] for v in out["before"]["variables"]] == list(silc20.columns)


REFUSED = [
    (["--contributions", "--max-size", "2", "--sampling-fraction", "0.02"], "5,393,690,394,624 cells"),
    (["--contributions", "--sampling-fraction", "0.02", "--weights", "rb090"], "not allowed with argument"),
    (["--contributions", "--weights", "hsize", "--model", "independence"], "--weights give per-cell fractions"),
    (["--sampling-fraction", "0.02"], "5,393,690,394,624 cells"),
    (["--sampling-fraction", "0.02", "--model", "independence"], "5,393,690,394,624 cells"),
    (["--suda", "--max-steps", "1000"], "1,048,575 subsets of keys"),
    (["--suda", "--max-steps", "0"], "--max-steps must be a positive number"),
    (["--suda", "--max-steps", "nan"], "--max-steps must be a positive number"),
    (["--suda", "--max-steps", "-5"], "--max-steps must be a positive number"),
    (["--sampling-fraction", "0.02", "--max-steps", "1e9"], "--max-steps"),
    (["--contributions", "--sampling-fraction", "0.02", "--model", "independence", "--max-steps", "1000"],
     "more than the limit of 1,000 steps"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_cli_refusals(folder: Path, silc20: pd.DataFrame, args: list[str], message: str,
                      capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(folder, ["risk", folder / "silc20.csv", "--keys", ",".join(silc20.columns), *args],
                   message, capsys)
