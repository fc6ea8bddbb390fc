"""Weighted estimates from a release whose matrix is singular: only what is identifiable gets a figure.

sdcMicro's testdata (4 580 persons in 1 000 households, two strata): ``walls`` released by a singular
matrix whose categories 2 and 9 have identical rows (as the DP-optimal design makes them), so that
only the count of 3 and the total of 2 and 9 are identifiable.  Checked against what the code under
test did not compute: the spread of the estimates over 2 000 releases of the same original (the
package's own perturbation, one key each) for the PRAM part; R's survey package for the design part,
with a matrix that keeps 3 as it is (its total and share are then plain weighted statistics of the
released file); the unweighted estimator (its own formulas, :mod:`pramkit.estimate.singular`)
for weights that are all 1; and the derivative of the maximum-likelihood estimate itself, by
central differences, for the linearisation the weighted variance carries the design through.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA

from pramkit import Manifest, PramMatrix, SecretKey, perturb_codes
from pramkit.cli import main
from pramkit.estimate import estimate_table
from pramkit.estimate.estimators import estimate_counts
from pramkit.estimate.mle import mle_estimate
from pramkit.estimate.singular import Linearisation
from pramkit.estimate.survey import SurveyDesign
from pramkit.estimate.weighted import Replicates

pytestmark = pytest.mark.filterwarnings("ignore::pramkit.estimate.result.EstimationWarning",
                                        "ignore::pramkit.engine.receipt.ReceiptWarning")

WALLS = (2, 3, 9)
#: A DP-optimal design of walls (epsilon 3 over roof, walls and water) as its manifest stores it: 2 and 9
#: released uniformly, their rows equal up to rounding (so that inverting the matrix does not fail, it
#: returns entries of 1e15).
SYMMETRIC = PramMatrix([[0.33333333333333326, 0.33333333333333337, 0.33333333333333337],
                        [0.1309762633686789, 0.7380474732626423, 0.1309762633686789],
                        [0.33333333333333337, 0.33333333333333337, 0.33333333333333326]], WALLS)
#: Rows of 2 and 9 identical up to rounding, their columns not.
SKEWED = PramMatrix([[0.5, 0.2, 0.3], [0.1, 0.8, 0.1], [0.5, 0.2, 0.30000000000000004]], WALLS)
#: 2 and 9 swapped at random, 3 kept: N3 and the share of 3 are weighted statistics of the released file.
KEEP_3 = PramMatrix([[0.5, 0.0, 0.5], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]], WALLS)
RSCRIPT = shutil.which("Rscript")
REQUIRE_R = bool(os.environ.get("PRAMKIT_REQUIRE_R"))
REPLICATES = 20


@functools.cache
def _original() -> pd.DataFrame:
    """testdata's design columns and walls (codes 0, 1, 2 for 2, 3, 9), weights of 1, bootstrap replicates
    of the households (within the strata)."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    d = pd.read_csv(SDC_DATA / "testdata.csv", usecols=["walls", "roof", "urbrur", "ori_hid", "sampling_weight",
                                                         "household_weights"])
    rng = np.random.default_rng(61)
    households = d[["ori_hid", "urbrur"]].drop_duplicates()
    for r in range(REPLICATES):  # Rao-Wu bootstrap: n_h - 1 households drawn with replacement in each stratum
        times = pd.Series(0.0, index=households["ori_hid"])
        for _, h in households.groupby("urbrur"):
            drawn = rng.choice(h["ori_hid"].to_numpy(), size=len(h) - 1)
            times[h["ori_hid"].to_numpy()] = np.bincount(np.searchsorted(h["ori_hid"].to_numpy(), drawn),
                                                         minlength=len(h)) * len(h) / (len(h) - 1)
        d[f"rw{r + 1}"] = d["household_weights"] * times[d["ori_hid"]].to_numpy()
    return d.assign(one=1.0, code=pd.Categorical(d["walls"], categories=WALLS).codes)


def _release(matrix: PramMatrix, seed: int) -> pd.DataFrame:
    """testdata with walls perturbed by ``matrix`` under a key of its own."""
    d = _original()
    z = perturb_codes(d["code"].to_numpy(), matrix, key=SecretKey(seed.to_bytes(32, "little"), "release"),
                      variable="walls")
    return d.assign(walls=np.asarray(WALLS)[z])


def _finite_positive(x: object) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


VARIANTS = {
    "weights": ["--vars", "walls", "--weights", "household_weights"],
    "strata and PSUs": ["--vars", "walls", "--weights", "household_weights", "--strata", "urbrur", "--psu", "ori_hid"],
    "by": ["--vars", "walls", "--by", "urbrur", "--weights", "household_weights"],
    "two variables": ["--vars", "walls,roof", "--weights", "sampling_weight"],
    "replicates": ["--vars", "walls", "--weights", "household_weights", "--replicate-weights", "rw",
                   "--replicate-method", "bootstrap"],
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_what_cannot_be_told_apart_has_no_figure(variant: str, tmp_path: Path, capsys) -> None:
    """Every cell flagged not identifiable has null standard errors, intervals (count, share) and PRAM part in
    JSON, and "n/a" in the text; every identifiable cell and group has finite positive ones; the group table
    of a weighted estimate is in the weighted unit, with PRAM's part.  Catches the inverse of the singular
    matrix (se about 1e19 on 2 and 9), a share se of 0 for 3, the unweighted formula for the groups."""
    manifest = tmp_path / "m.json"
    Manifest.of({"walls": SYMMETRIC}).write(manifest)
    _release(SYMMETRIC, 1).to_csv(tmp_path / "r.csv", index=False)
    args = ["estimate", str(tmp_path / "r.csv"), "--manifest", str(manifest), *VARIANTS[variant]]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    blank = ("se", "ci_low", "ci_high", "proportion_se", "proportion_ci_low", "proportion_ci_high", "pram_se")
    cells = out["cells"]
    assert {c["identifiable"] for c in cells} == {True, False}
    for c in cells:
        wanted = str(c["category"] if isinstance(c["category"], int) else c["category"][0]) != "3"
        assert c["identifiable"] is not wanted, c
        if not c["identifiable"]:
            assert all(c[k] is None for k in blank), c
        else:
            assert all(_finite_positive(c[k]) for k in ("se", "proportion_se", "pram_se")), c
            assert c["ci_low"] < c["estimate"] < c["ci_high"] and c["proportion_ci_low"] < c["proportion_ci_high"]
    assert out["groups"] and all(_finite_positive(g["se"]) and _finite_positive(g["pram_se"]) for g in out["groups"])
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "nan" not in text.lower() and "e+" not in text
    table, groups = text.split("Not identifiable:")
    assert all(line.count("n/a") == 5 for line in table.splitlines() if "not identifiable" in line)
    header = groups.splitlines()[1]
    assert "[records]" not in header and "estimate [weighted]" in header and "of which PRAM, se [weighted]" in header


def test_weights_of_one_are_the_unweighted_estimate() -> None:
    """All weights 1, records as PSUs: the same estimates and flags as without weights; standard errors (cells,
    groups, shares within by-groups) the unweighted multinomial ones times sqrt(n / (n - 1)) (the design
    estimator's factor), and PRAM's part the unweighted PRAM-only standard errors.  Exact for this matrix: the
    columns of 2 and 9 are equal too, so the released counts and the fitted ones give the same quadratic
    forms.  Catches a wrong linearisation of the MLE (its influence or its identifiable space), a wrong
    estimate of the squared weights' counts, a share gradient taken through the other cells."""
    frame = _release(SYMMETRIC, 2)
    manifest = Manifest.of({"walls": SYMMETRIC})
    factor = math.sqrt(len(frame) / (len(frame) - 1))
    for by in (None, "urbrur"):
        weighted = estimate_table(frame, manifest, "walls", by=by, weights="one")
        plain = estimate_table(frame, manifest, "walls", by=by)
        pram = estimate_table(frame, manifest, "walls", by=by, variance="pram")
        np.testing.assert_array_equal(weighted.table.counts, plain.table.counts)
        np.testing.assert_array_equal(weighted.table.identifiable, plain.table.identifiable)
        for ours, theirs in ((weighted.table.se, plain.table.se), (weighted.proportion_se, plain.proportion_se)):
            np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
            np.testing.assert_allclose(ours, factor * theirs, rtol=1e-7)
        np.testing.assert_allclose(np.sqrt(weighted.table.covariance.pram_cell_variances()), pram.table.se, rtol=1e-7)
        for ours, theirs, only_pram in zip(weighted.groups(), plain.groups(), pram.groups()):
            assert ours["estimate"] == pytest.approx(theirs["estimate"], rel=1e-12)
            assert ours["se"] == pytest.approx(factor * theirs["se"], rel=1e-7)
            assert ours["pram_se"] == pytest.approx(only_pram["se"], rel=1e-7)


def test_the_linearisation_is_the_derivative_of_the_mle() -> None:
    """Released counts where the model fits exactly (the expected released table of testdata's weighted walls by
    stratum): the derivative of the maximum-likelihood estimates of the identifiable totals (N3 and N_{2,9} in
    each stratum) with respect to each released count, by central differences of the MLE itself, is the
    linearisation the weighted variance uses (1e-6).  Catches a pseudo-inverse of the matrix instead (its
    derivative of N3 differs by 0.3 in the released 2s)."""
    d = _original()
    t = np.zeros((3, 2))
    np.add.at(t, (d["code"].to_numpy(), d["urbrur"].to_numpy() - 1), d["household_weights"].to_numpy())
    full = np.kron(SKEWED.matrix, np.eye(2))
    u = (full.T @ t.ravel()).reshape(3, 2)
    lin = Linearisation.of([SKEWED.matrix, None], u)
    gradients = np.array([[0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 1, 0], [0, 1, 0, 0, 0, 1]], float)
    step, derivative = 1.0, np.zeros((4, 6))
    for j in range(6):
        e = np.zeros(6)
        e[j] = step
        plus, minus = (mle_estimate(u + s * e.reshape(3, 2), [SKEWED, None], tol=1e-14).counts.ravel()
                       for s in (1, -1))
        derivative[:, j] = gradients @ (plus - minus) / (2 * step)
    assert lin.identifiable(gradients).all() and not lin.identifiable(np.eye(6)[[0, 4]]).any()
    np.testing.assert_allclose(gradients @ lin.influence, derivative, atol=1e-6)


def test_the_pram_part_is_the_spread_over_releases() -> None:
    """2 000 releases of the same original (one key each): the standard deviation of the identifiable totals
    weighted by the household weights (N3, N_{2,9}, and N3 in each stratum) is the reported PRAM part, and that
    of the unweighted shares of 3 within each stratum the PRAM-only standard error of the unweighted estimate
    with ``by``, to within the Monte Carlo error (1.6 %; 6 % allowed).  Catches the PRAM part of the inverse of
    the singular matrix (10 % off on N3) and the unweighted formula for the groups."""
    d = _original()
    x, y, w = d["code"].to_numpy(), d["urbrur"].to_numpy() - 1, d["household_weights"].to_numpy()
    draws = []
    for r in range(2_000):
        z = perturb_codes(x, SKEWED, key=SecretKey(r.to_bytes(32, "little"), "mc"), variable="walls")
        u, n = np.zeros((3, 2)), np.zeros((3, 2))
        np.add.at(u, (z, y), w)
        np.add.at(n, (z, y), 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, c = (estimate_counts(v, [SKEWED, None], estimator="mle").counts for v in (u, n))
        draws.append([t[1].sum(), t[[0, 2]].sum(), *t[1], *(c[1] / c.sum(axis=0))])
    spread = np.std(np.array(draws), axis=0, ddof=1)
    reported = []
    manifest = Manifest.of({"walls": SKEWED})
    for seed in (3, 4):
        release = _release(SKEWED, seed)
        whole = estimate_table(release, manifest, "walls", weights="household_weights")
        by = estimate_table(release, manifest, "walls", by="urbrur", weights="household_weights")
        shares = estimate_table(release, manifest, "walls", by="urbrur", variance="pram").proportion_se[1]
        reported.append([whole.cells()[1]["pram_se"], whole.groups()[0]["pram_se"],
                         *(c["pram_se"] for c in by.cells()[2:4]), *shares])
    np.testing.assert_allclose(np.mean(reported, axis=0), spread, rtol=0.06)


@pytest.fixture(scope="module")
def r_survey(tmp_path_factory) -> dict[str, list[float]]:
    """R's svytotal and svymean of walls == 3 and walls != 3 under each design: estimates and standard errors."""
    if RSCRIPT is None and not REQUIRE_R:
        pytest.skip("Rscript is not installed (CI installs r-base-core r-cran-survey)")
    directory = tmp_path_factory.mktemp("r-survey")
    _release(KEEP_3, 5).to_csv(directory / "r.csv", index=False)
    designs = {"weights": "svydesign(ids = ~1, weights = ~household_weights, data = d)",
               "clusters": "svydesign(ids = ~ori_hid, strata = ~urbrur, weights = ~household_weights, data = d)",
               "replicates": 'svrepdesign(data = d, weights = ~household_weights, repweights = "rw[0-9]+", '
                             'type = "bootstrap", scale = 1 / 20, rscales = 1, mse = TRUE)'}
    body = "\n".join(f'des <- {r}; t <- svytotal(~three + other, des); m <- svymean(~three, des)\n'
                     f'out[["{name}"]] <- c(coef(t), SE(t), coef(m), SE(m))' for name, r in designs.items())
    script = (f'suppressMessages(library(survey)); d <- read.csv("{directory / "r.csv"}")\n'
              'd$three <- as.numeric(d$walls == 3); d$other <- 1 - d$three; out <- list()\n'
              f'{body}\ncat(jsonlite::toJSON(lapply(out, unname), digits = NA))')
    run = subprocess.run([RSCRIPT or "Rscript", "-e", script], capture_output=True, text=True, timeout=300)
    if run.returncode != 0 and "there is no package" in run.stderr and not REQUIRE_R:
        pytest.skip("R's package survey (or jsonlite) is not installed")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("design", ["weights", "clusters", "replicates"])
def test_the_design_part_is_r_survey(design: str, r_survey: dict[str, list[float]]) -> None:
    """A singular matrix that keeps 3 as it is: N3 is the weighted count of the released 3s and N_{2,9} the
    rest, so their totals, standard errors and the share of 3 are R's svytotal and svymean of the released
    file, for records as PSUs, households in strata and bootstrap replicate weights (1e-8 relative); PRAM's
    part is 0.  Catches the strata, the PSUs or the replicates lost on the way through the MLE's
    linearisation, and a group standard error from another formula."""
    total3, other, se3, se_other, share, share_se = r_survey[design]
    kw = {"weights": {"weights": "household_weights"},
          "clusters": {"survey": SurveyDesign("household_weights", strata="urbrur", psu="ori_hid")},
          "replicates": {"weights": "household_weights",
                         "replicates": Replicates(tuple(f"rw{i + 1}" for i in range(REPLICATES)), "bootstrap")}}[design]
    res = estimate_table(_release(KEEP_3, 5), Manifest.of({"walls": KEEP_3}), "walls", **kw)
    n3, (group,) = res.cells()[1], res.groups()
    assert [c["identifiable"] for c in res.cells()] == [False, True, False]
    assert n3["estimate"] == pytest.approx(total3, rel=1e-10) and group["estimate"] == pytest.approx(other, rel=1e-10)
    assert n3["se"] == pytest.approx(se3, rel=1e-8) and group["se"] == pytest.approx(se_other, rel=1e-8)
    assert n3["proportion"] == pytest.approx(share, rel=1e-10)
    assert n3["proportion_se"] == pytest.approx(share_se, rel=1e-8)
    assert n3["pram_se"] <= 1e-9 * n3["se"] and group["pram_se"] <= 1e-9 * group["se"]

