"""Weighted estimates from a released survey file: the design's variance and PRAM's together.

Checked against samplics (no PRAM: the identity matrix), a simulation of the whole chain (a synthetic
population, stratified cluster samples, PRAM: coverage of the intervals), the PRAM variance given the
sample computed from the true values, and the ACS replicate formula by hand.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from pramkit import Manifest, PramMatrix
from pramkit.cli import main
from pramkit.engine.perturb import perturb_codes
from pramkit.errors import DataError, ParameterError, PramkitError
from pramkit.estimate import estimate_table
from pramkit.estimate.survey import SurveyDesign
from pramkit.estimate.weighted import Replicates
from pramkit.kernel.rng import SecretKey

EUSILC = Path(__file__).resolve().parents[2] / "shared" / "data" / "sdcmicro" / "eusilc_laeken.csv"
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore:The inplace keyword",
                                        "ignore::DeprecationWarning")

#: Randomized response on four categories keeping 0.7 (the simulation's matrix).
CATS = ("a", "b", "c", "d")
RR = PramMatrix(np.full((4, 4), 0.1) + np.eye(4) * 0.6, CATS)


@pytest.fixture(scope="module")
def eusilc() -> pd.DataFrame:
    if not EUSILC.exists():
        pytest.skip("the shared eusilc file is absent")
    return pd.read_csv(EUSILC)


def test_without_pram_the_estimates_equal_samplics(eusilc: pd.DataFrame) -> None:
    """The identity matrix: weighted totals and proportions with strata and clusters, as samplics gives them."""
    samplics = pytest.importorskip("samplics")
    from samplics.estimation import TaylorEstimator
    from samplics.utils.types import PopParam

    manifest = Manifest.of({"pb220a": PramMatrix(np.eye(3), ("AT", "EU", "Other"))})
    design = SurveyDesign("rb050", strata="db040", psu="db030")
    res = estimate_table(eusilc, manifest, "rb090", survey=design)
    frame = res.to_frame().set_index("rb090")
    kw = dict(samp_weight=eusilc["rb050"].to_numpy(), stratum=eusilc["db040"].to_numpy(),
              psu=eusilc["db030"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        total = TaylorEstimator(PopParam.total)
        total.estimate(y=eusilc["rb090"].to_numpy(), as_factor=True, **kw)
        share = TaylorEstimator(PopParam.prop)
        share.estimate(y=eusilc["rb090"].to_numpy(), **kw)
    assert samplics is not None
    for sex in ("female", "male"):
        assert frame.loc[sex, "estimate"] == pytest.approx(total.point_est[sex], rel=1e-12)
        assert frame.loc[sex, "se"] == pytest.approx(total.stderror[sex], rel=1e-8)
        assert frame.loc[sex, "proportion"] == pytest.approx(share.point_est[sex], rel=1e-12)
        assert frame.loc[sex, "proportion_se"] == pytest.approx(share.stderror[sex], rel=1e-8)
        assert frame.loc[sex, "pram_se"] == 0.0                  # the identity adds nothing


def _population(seed: int = 7) -> pd.DataFrame:
    """10 strata x 40 clusters x 50 persons; the category depends on the stratum and the cluster."""
    rng = np.random.default_rng(seed)
    strata, clusters, size = 10, 40, 50
    rows = []
    for h in range(strata):
        base = rng.dirichlet(np.full(4, 2.0))
        for c in range(clusters):
            p = rng.dirichlet(40 * base)                          # clusters differ: a design effect
            rows.append(pd.DataFrame({"stratum": h, "cluster": f"{h}-{c}",
                                      "x": rng.choice(4, size=size, p=p)}))
    return pd.concat(rows, ignore_index=True)


def _clusters(pop: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The population's clusters in their order (it is stored cluster by cluster): names, first rows, sizes
    and strata."""
    codes, first = np.unique(pop["cluster"].to_numpy(), return_index=True)
    order = np.argsort(first)
    starts, clusters = first[order], codes[order]
    sizes = np.diff(np.append(starts, len(pop)))
    return clusters, starts, sizes, pop["stratum"].to_numpy()[starts]


def _sample(pop: pd.DataFrame, rng: np.random.Generator, per_stratum: int = 12,
            clusters: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """Clusters drawn with replacement in each stratum (the variance estimator's own model), weighted
    by the Hansen-Hurwitz weight (clusters in the stratum / clusters drawn); ``clusters`` is
    :func:`_clusters` of ``pop`` (made here when not given)."""
    names, starts, sizes, stratum = _clusters(pop) if clusters is None else clusters
    drawn = np.concatenate([rng.choice(np.flatnonzero(stratum == h), size=per_stratum)
                            for h in np.unique(stratum)])
    rows = np.concatenate([np.arange(starts[c], starts[c] + sizes[c]) for c in drawn])
    draw = np.repeat(np.arange(drawn.size), sizes[drawn])
    per = np.bincount(stratum)[stratum[drawn]] / per_stratum
    sample = pop.iloc[rows].reset_index(drop=True)
    psu = np.array([f"{names[c]}#{k}" for k, c in enumerate(drawn)], dtype=object)   # one label per draw
    return sample.assign(psu=list(psu[draw]), w=per[draw])


@pytest.mark.slow
def test_intervals_cover_the_population_and_need_both_parts() -> None:
    """500 samples and PRAM draws: the 95 % intervals of the totals cover the population's in 93-97 %
    of them; an interval that leaves out the design part, or the PRAM part, covers less."""
    pop = _population()
    truth = np.bincount(pop["x"], minlength=4).astype(float)
    manifest = Manifest.of({"x": RR})
    design = SurveyDesign("w", strata="stratum", psu="psu")
    clusters = _clusters(pop)                                     # the same for every sample
    rng = np.random.default_rng(2026)
    hits = np.zeros(4)
    design_only = np.zeros(4)
    pram_only = np.zeros(4)
    reps = 500
    for _ in range(reps):
        sample = _sample(pop, rng, clusters=clusters)
        released = perturb_codes(sample["x"].to_numpy(), RR, key=SecretKey(rng.bytes(32), "a draw"), variable="x")
        frame = sample.assign(x=pd.Categorical.from_codes(released, CATS))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = estimate_table(frame, manifest, "x", survey=design)
        est, se, pram = res.table.counts, res.table.se, res.table.covariance.pram_cell_variances()
        hits += np.abs(est - truth) <= 1.959964 * se
        design_only += np.abs(est - truth) <= 1.959964 * np.sqrt(np.maximum(se**2 - pram, 0.0))
        pram_only += np.abs(est - truth) <= 1.959964 * np.sqrt(pram)
    coverage = hits / reps
    assert ((coverage >= 0.93) & (coverage <= 0.97)).all(), coverage
    assert (design_only / reps < 0.93).all() and (pram_only / reps < 0.93).all(), (design_only, pram_only)


def test_the_pram_part_is_the_variance_of_the_pram_draws_for_a_fixed_sample() -> None:
    """For one weighted sample, the spread of the estimates over 4 000 PRAM draws is the PRAM part
    computed from the true values, and the plug-in estimate of it is right on average.  The draws are read
    as Arrow tables (about 40 % less time per estimate than pandas frames); the first is read as a pandas
    frame too, and gives the same estimates and PRAM covariance to the bit."""
    rng = np.random.default_rng(11)
    n = 400
    x = rng.choice(4, size=n, p=[0.5, 0.25, 0.15, 0.1])
    w = rng.uniform(1, 30, size=n)
    m = RR.matrix
    exact = sum(w[i] ** 2 * (np.diag(m[x[i]]) - np.outer(m[x[i]], m[x[i]])) for i in range(n))
    a = np.linalg.inv(m.T)
    exact_t = a @ exact @ a.T
    manifest = Manifest.of({"x": RR})
    estimates, plug_in = [], []
    cumulative = np.cumsum(m[x], axis=1)                          # each record's row of M, the same in every draw
    labels = pa.array(CATS)
    for draw in range(4_000):
        z = (rng.random(n)[:, None] > cumulative).sum(axis=1)
        table = pa.table({"x": pa.DictionaryArray.from_arrays(pa.array(z, pa.int8()), labels), "w": w})
        res = estimate_table(table, manifest, "x", weights="w")
        if draw == 0:
            frame = pd.DataFrame({"x": pd.Categorical.from_codes(z, CATS), "w": w})
            same = estimate_table(frame, manifest, "x", weights="w")
            assert np.array_equal(same.table.counts, res.table.counts)
            assert np.array_equal(same.table.covariance.pram, res.table.covariance.pram)
        estimates.append(res.table.counts)
        plug_in.append(np.diag(res.table.covariance.pram))
    spread = np.var(np.array(estimates), axis=0, ddof=1)
    np.testing.assert_allclose(spread, np.diag(exact_t), rtol=0.08)
    np.testing.assert_allclose(np.mean(plug_in, axis=0), np.diag(exact_t), rtol=0.03)
    truth = np.bincount(x, weights=w, minlength=4)
    np.testing.assert_allclose(np.mean(estimates, axis=0), truth, rtol=0.01)   # unbiased given the sample


def test_sdr_replicates_give_the_acs_formula(tmp_path: Path) -> None:
    """80 successive-difference replicates: 4/80 sum_r (T_r - T_0)^2, the PRAM correction inside each."""
    rng = np.random.default_rng(5)
    n = 2_000
    x = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    z = (rng.random(n)[:, None] > np.cumsum(RR.matrix[x], axis=1)).sum(axis=1)
    w = rng.uniform(5, 50, size=n)
    reps = w[:, None] * rng.choice([1 - 2**-1.5, 1 + 2**-1.5, 1.0], size=(n, 80))
    frame = pd.DataFrame({"x": np.array(CATS)[z], "w": w, **{f"rw{r + 1}": reps[:, r] for r in range(80)}})
    manifest = Manifest.of({"x": RR})
    path = tmp_path / "released.csv"
    frame.to_csv(path, index=False)
    res = estimate_table(path, manifest, "x", weights="w", replicates=Replicates.of("rw", list(frame.columns), "sdr"))
    a = np.linalg.inv(RR.matrix.T)
    full = a @ np.bincount(z, weights=w, minlength=4)
    each = np.array([a @ np.bincount(z, weights=reps[:, r], minlength=4) for r in range(80)])
    by_hand = 4 / 80 * ((each - full) ** 2).sum(axis=0)
    np.testing.assert_allclose(res.table.counts, full, rtol=1e-10)
    np.testing.assert_allclose(res.table.se ** 2, by_hand, rtol=1e-10)


def test_the_consistent_estimators_take_weighted_counts(eusilc: pd.DataFrame) -> None:
    manifest = Manifest.of({"pb220a": PramMatrix([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]],
                                                 ("AT", "EU", "Other"))})
    for name in ("mle", "norm-sub"):
        res = estimate_table(eusilc, manifest, "pb220a", estimator=name, weights="rb050")
        total = eusilc.loc[eusilc["pb220a"].notna(), "rb050"].sum()
        assert res.table.counts.sum() == pytest.approx(total, rel=1e-9)
        assert (res.table.counts >= -1e-9).all() and res.weights == "rb050"
    assert np.isnan(res.table.se).all()                     # norm-sub has no standard errors


@pytest.fixture
def released(tmp_path: Path) -> dict:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.choice(CATS, size=200), "w": rng.uniform(1, 9, 200),
                          "s": np.repeat(["n", "s"], 100), "c": np.repeat(np.arange(20), 10),
                          **{f"r{i}": rng.uniform(1, 9, 200) for i in range(1, 4)}})
    frame.loc[::17, "x"] = None
    path = tmp_path / "released.csv"
    frame.to_csv(path, index=False)
    manifest = tmp_path / "m.json"
    Manifest.of({"x": RR}).write(manifest)
    return {"path": path, "manifest": manifest, "frame": frame, "dir": tmp_path}


def _bad(released: dict, column: str, values: list) -> Path:
    frame = released["frame"].copy()
    frame[column] = values
    path = released["dir"] / f"bad-{column}.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("flags, message", [
    (["--strata", "s"], "--strata needs --weights"),
    (["--weights", "nope"], "nope"),
    (["--weights", "w", "--replicate-weights", "r"], "together"),
    (["--weights", "w", "--replicate-weights", "r", "--replicate-method", "sdr"], "multiple of 4"),
    (["--weights", "w", "--replicate-weights", "q", "--replicate-method", "jk1"], "starts with 'q'"),
    (["--weights", "w", "--variance", "pram"], "variance is for unweighted tables (--variance)"),
    (["--weights", "w", "--fay-rho", "0.5"], "--fay-rho goes with"),
    (["--weights", "w", "--strata", "s", "--psu", "s"], "single PSU"),
])
def test_bad_survey_flags_are_one_line(released: dict, flags: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.name for p in released["dir"].iterdir())
    code = main(["estimate", str(released["path"]), "--manifest", str(released["manifest"]), "--vars", "x", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert sorted(p.name for p in released["dir"].iterdir()) == before


@pytest.mark.parametrize("values, message", [
    ([-1.0] + [1.0] * 199, "finite values >= 0"),
    ([np.nan] + [1.0] * 199, "missing value"),
    (["heavy"] + [1.0] * 199, "must be numeric"),
    ([0.0] * 200, "empty"),
])
def test_bad_weights_are_one_line(released: dict, values: list, message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _bad(released, "w", values)
    code = main(["estimate", str(path), "--manifest", str(released["manifest"]), "--vars", "x", "--weights", "w"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err


def test_the_command_prints_weighted_totals_with_both_parts(released: dict,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", str(released["path"]), "--manifest", str(released["manifest"]), "--vars", "x",
                 "--weights", "w", "--strata", "s", "--psu", "c"])
    out = capsys.readouterr().out
    assert code == 0 and "weighted by w" in out and "of which PRAM" in out
    with pytest.raises((ParameterError, DataError, PramkitError)):
        estimate_table(released["path"], Manifest.read(released["manifest"]), "x", weights="w",
                       survey=SurveyDesign("c"))


def test_the_ledger_names_the_weight_columns(eusilc: pd.DataFrame, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`design --weights`: the guarantee sentence says the weights are released as they are; a column that is
    absent or perturbed is refused in one line and nothing is written."""
    data = tmp_path / "eusilc.csv"
    eusilc.to_csv(data, index=False)
    out = tmp_path / "m.json"
    assert main(["design", str(data), "--vars", "pl030", "--method", "rr", "--epsilon", "2", "--weights", "rb050",
                 "--out", str(out), "--quiet"]) == 0
    manifest = Manifest.read(out)
    assert manifest.input["weights"] == ["rb050"]
    assert [f.kind for f in manifest.exact_facts if not f.covered] == ["weights"]
    assert "The sampling weights (rb050) are released as they are" in manifest.guarantee
    capsys.readouterr()
    for weights, message in (("rb05", "not in the data"), ("pl030", "which is perturbed")):
        before = sorted(p.name for p in tmp_path.iterdir())
        code = main(["design", str(data), "--vars", "pl030", "--method", "rr", "--epsilon", "2", "--weights",
                     weights, "--out", str(tmp_path / "other.json"), "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and message in err[0], err
        assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_reports_and_the_workbench_weight_the_estimates(eusilc: pd.DataFrame, tmp_path: Path) -> None:
    from pramkit.kernel.rng import SecretKey
    from pramkit.release.choices import DesignChoices
    from pramkit.report import build_public_report
    from pramkit.workbench import Workbench

    data = tmp_path / "eusilc.csv"
    eusilc.to_csv(data, index=False)
    wb = Workbench(tmp_path / "work")
    wb.open_file(data)
    wb.risk(["db040", "rb090", "pl030"], weights="rb050")
    wb.design(["pl030"], DesignChoices(method="rr", epsilon=2.0, weights="rb050"))
    applied = wb.apply(SecretKey(bytes(32), "a test key"))
    released = tmp_path / "work" / "release" / "released.csv"
    manifest = Manifest.read(tmp_path / "work" / "release" / "manifest.json")
    weighted = estimate_table(released, manifest, "pl030", weights="rb050")
    shares = applied.estimates["estimate (%)"].to_numpy()
    np.testing.assert_allclose(shares, np.round(100 * weighted.proportion, 2))
    report = build_public_report(manifest, released, weights="rb050")
    assert "weighted by rb050" in report.utility_note
    (estimate,) = [u for u in report.utility if u.name == "pl030"]
    np.testing.assert_allclose(estimate.frequencies["estimate"], 100 * weighted.proportion)
    exported = wb.export(tmp_path / "out", confirmed=True)
    assert "--weights rb050" in exported.script


def test_a_household_variable_needs_psus_that_hold_households(eusilc: pd.DataFrame, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Members of a household share their draw: records as PSUs are refused, households as PSUs work."""
    data = tmp_path / "eusilc.csv"
    eusilc.to_csv(data, index=False)
    manifest, released = tmp_path / "m.json", tmp_path / "r.csv"
    assert main(["design", str(data), "--vars", "hsize", "--method", "rr", "--epsilon", "2", "--household", "db030",
                 "--household-vars", "hsize", "--out", str(manifest), "--quiet"]) == 0
    assert main(["apply", str(data), "--manifest", str(manifest), "--out", str(released), "--quiet"]) == 0
    capsys.readouterr()
    base = ["estimate", str(released), "--manifest", str(manifest), "--vars", "hsize", "--weights", "rb050"]
    assert main(base) == 2
    assert "once per household" in capsys.readouterr().err
    assert main([*base, "--strata", "db040", "--psu", "db030"]) == 0


def test_a_single_psu_stratum_is_treated_as_asked_with_a_note(released: dict,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", str(released["path"]), "--manifest", str(released["manifest"]), "--vars", "x",
                 "--weights", "w", "--strata", "s", "--psu", "s", "--single-psu", "certainty"])
    err = capsys.readouterr().err
    assert code == 0 and "has a single PSU" in err and "certainty" in err


@pytest.mark.parametrize("value, message", [("heavy", "row 1 holds 'heavy'"), (-2.0, "finite values >= 0")])
def test_a_bad_replicate_weight_is_one_line(released: dict, value: object, message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = _bad(released, "r2", [value] + [1.0] * 199)
    code = main(["estimate", str(path), "--manifest", str(released["manifest"]), "--vars", "x", "--weights", "w",
                 "--replicate-weights", "r", "--replicate-method", "bootstrap"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'r2'" in err[0] and message in err[0], err


def test_the_library_refuses_what_the_command_line_refuses() -> None:
    """A variance given with a survey design was accepted and ignored by the library (the command line refused it)."""
    import random

    import pramkit
    from pramkit.datasets import CENSUS_VARIABLES, census
    from pramkit.estimate.survey import SurveyDesign

    data = census(1_000)
    m = pramkit.design_release(data, ["sex"], epsilon=2.0, categories=CENSUS_VARIABLES, rng=random.Random(1))
    released = pramkit.perturb_frame(data, m, key=bytes(32)).data
    released["w"] = 2.0
    with pytest.raises(ParameterError, match="variance must be one of"):
        pramkit.estimate_table(released, m, "sex", survey=SurveyDesign(weights="w"), variance="bogus")
    with pytest.raises(ParameterError, match="variance is for unweighted tables"):
        pramkit.estimate_table(released, m, "sex", survey=SurveyDesign(weights="w"), variance="pram")
