"""The corrected regression with survey weights, strata and PSUs (``--regress`` with ``--weights``).

Checked against what pramkit does not compute: R's ``survey::svyglm`` on the real EU-SILC file
(personal weights ``rb050``, regions ``db040`` as strata, households ``db030`` as PSUs, employee
income ``py010n`` missing for a fifth of the persons, who stay in their household as a domain
estimate keeps them), with the economic status's matrix the identity; and a Monte Carlo over
releases of the status by randomized response at epsilon 3, the original file fixed, whose mean
must be statsmodels' weighted least squares of the original file and whose spread must be the
PRAM part of the variance that the fit reports.  CI sets PRAMKIT_REQUIRE_R=1, so that a missing R
or survey package fails there instead of skipping.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from conftest import SDC_DATA

from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.errors import DataError, ParameterError, PramkitWarning
from pramkit.estimate.regression import _problem, corrected_regression
from pramkit.estimate.regression_moment import SampleDesign, moment_fit
from pramkit.estimate.survey import SurveyDesign
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix

RSCRIPT = shutil.which("Rscript")
REQUIRE_R = bool(os.environ.get("PRAMKIT_REQUIRE_R"))
STATUS = [str(k) for k in range(1, 8)]
FORMULA = "py010n ~ pl030 + rb090 + age"
#: The designs compared with R: pramkit's SurveyDesign and the same design in R's svydesign.
DESIGNS = {
    "clusters": (SurveyDesign("rb050", strata="db040", psu="db030"),
                 "svydesign(ids = ~db030, strata = ~db040, weights = ~rb050, data = d)"),
    "records": (SurveyDesign("rb050"), "svydesign(ids = ~1, weights = ~rb050, data = d)"),
    "fpc": (SurveyDesign("rb050", strata="db040", psu="db030", fpc="households"),
            "svydesign(ids = ~db030, strata = ~db040, weights = ~rb050, fpc = ~households, data = d)"),
    "lone": (SurveyDesign("rb050", strata="stratum", psu="db030", single_psu="center"),
             "svydesign(ids = ~db030, strata = ~stratum, weights = ~rb050, data = d)"),
}
#: A formula of which the manifest perturbs nothing: the region (a stratum too) as a factor.
REGION = "py010n ~ db040 + rb090 + age"


@functools.cache  # R's start and the loading of survey take about 2.5 s: asked once per test process
def _r_has_survey() -> bool:
    if RSCRIPT is None:
        return False
    return subprocess.run([RSCRIPT, "-e", "library(survey)"], capture_output=True, timeout=120).returncode == 0


def _require_r() -> str:
    if (RSCRIPT is None or not _r_has_survey()) and not REQUIRE_R:
        pytest.skip("Rscript (or its package survey) is not installed (CI installs r-base-core r-cran-survey)")
    return RSCRIPT or "Rscript"


@functools.cache
def _silc() -> pd.DataFrame:
    """EU-SILC as released with nothing perturbed: the status as text (missing for children), the design's
    columns, three times each region's households as its population of PSUs (an fpc of 1/3), and a stratum
    of one household (its first) beside the regions."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    raw = pd.read_csv(SDC_DATA / "eusilc_laeken.csv",
                      usecols=["py010n", "pl030", "rb090", "age", "rb050", "db040", "db030"])
    raw["pl030"] = raw["pl030"].map(lambda v: None if pd.isna(v) else str(int(v)))
    raw["households"] = 3.0 * raw.groupby("db040")["db030"].transform("nunique")
    raw["stratum"] = raw["db040"].where(raw["db030"] != raw["db030"].iloc[0], "lone household")
    return raw


@functools.cache
def _svyglm(directory: Path) -> dict[str, dict[str, list[float]]]:
    """R's svyglm of FORMULA under each of DESIGNS, and of REGION under the clusters: coefficients and standard
    errors."""
    rscript = _require_r()
    _silc().to_csv(directory / "silc.csv", index=False)
    fits = "\n".join(f'fit <- svyglm({formula}, design = {r}); out[["{name}"]] <- list(coef = unname(coef(fit)), '
                     f'se = unname(SE(fit)))' for name, formula, r in
                     [*((name, FORMULA, r) for name, (_, r) in DESIGNS.items()),
                      ("region", REGION, DESIGNS["clusters"][1])])
    script = (f'suppressMessages(library(survey)); options(survey.lonely.psu = "adjust")\n'
              f'd <- read.csv("{directory / "silc.csv"}"); d$pl030 <- factor(d$pl030); out <- list()\n{fits}\n'
              'cat(jsonlite::toJSON(out, digits = NA))')
    run = subprocess.run([rscript, "-e", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def svyglm(tmp_path_factory) -> dict[str, dict[str, list[float]]]:
    return _svyglm(tmp_path_factory.mktemp("svyglm"))


@pytest.mark.parametrize("name", list(DESIGNS))
def test_with_the_identity_matrix_it_is_svyglm(svyglm, name) -> None:
    """The status's matrix the identity: coefficients and standard errors are R's svyglm to 1e-8 relative,
    for households in regions, records as PSUs, an fpc of 1/3 and a stratum of one household (R's
    lonely.psu 'adjust', pramkit's single_psu 'center').  The naive fit is the same; PRAM's part is 0.
    Catches: the weights left out of A or c, the strata or the PSUs ignored, the factor n_h / (n_h - 1)
    (7e-4 relative) or 1 - f_h dropped, the persons without an income left out of the design instead of
    adding 0 (records as PSUs: 8e-6 relative, n_h counts them), the lone household's term left out."""
    design = DESIGNS[name][0]
    manifest = Manifest.of({"pl030": PramMatrix.identity(STATUS)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PramkitWarning)
        fit = corrected_regression(_silc(), FORMULA, manifest, survey=design)
    assert [str(w.message).split(":")[0] for w in caught] == (
        ["stratum 'lone household' has a single PSU"] if name == "lone" else [])
    r_coef, r_se = np.array(svyglm[name]["coef"]), np.array(svyglm[name]["se"])
    assert fit.terms[1] == "pl030[2]" and fit.terms[-2:] == ("rb090[male]", "age") and fit.variance == "linearization"
    assert np.allclose(fit.coef, r_coef, rtol=1e-8, atol=0), (fit.coef - r_coef) / r_coef
    assert np.allclose(fit.se, r_se, rtol=1e-8, atol=0), (fit.se - r_se) / r_se
    assert np.allclose(fit.naive_coef, fit.coef, rtol=1e-12) and np.allclose(fit.naive_se, fit.se, rtol=1e-12)
    assert fit.pram_se is not None and (fit.pram_se <= 1e-4 * fit.se).all()


def test_nothing_perturbed_in_the_formula_and_the_command_line_give_svyglm_too(svyglm, tmp_path) -> None:
    """A manifest that perturbs no column of the formula (the region, a stratum too, as a factor), through
    ``pramkit estimate --regress --weights --strata --psu --json``: R's svyglm to 1e-8 relative, and the JSON
    names the design."""
    _silc().to_csv(tmp_path / "released.csv", index=False)
    Manifest.of({"hsize": PramMatrix([[0.9, 0.1], [0.1, 0.9]], ("1", "2"))}).write(tmp_path / "m.json")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["estimate", str(tmp_path / "released.csv"), "--manifest", str(tmp_path / "m.json"), "--regress",
                     REGION, "--weights", "rb050", "--strata", "db040", "--psu", "db030", "--json"])
    assert code == 0, err.getvalue()
    result = json.loads(out.getvalue())
    coef = np.array([c["coef"] for c in result["coefficients"]])
    se = np.array([c["se"] for c in result["coefficients"]])
    assert result["perturbed"] == [] and result["variance"] == "linearization"
    assert result["design"] == {"weights": "rb050", "strata": "db040", "psu": "db030", "fpc": None,
                                "single_psu": "error"}
    assert result["coefficients"][1]["term"] == "db040[Carinthia]"
    assert np.allclose(coef, svyglm["region"]["coef"], rtol=1e-8, atol=0)
    assert np.allclose(se, svyglm["region"]["se"], rtol=1e-8, atol=0)
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "schemas"
                         / "pramkit.estimate.regression.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(result)   # pram_se, design and variance 'linearization'


@functools.cache
def _complete() -> pd.DataFrame:
    """The persons with an income and a status, of every other household (a Monte Carlo fit takes half), the
    statuses 6 and 7 together: status 6 alone holds 87 of them, into which randomized response releases 4 % of
    the 6 000 others, and its coefficient, a ratio with so noisy a denominator, is biased by 0.13 of its
    standard error (3 Monte Carlo standard errors over 600 releases)."""
    frame = _silc().dropna(subset=["py010n", "pl030"])
    frame = frame[frame["db030"] % 2 == 0].reset_index(drop=True)
    return frame.assign(pl030=frame["pl030"].replace("7", "6"))


def test_over_releases_the_weighted_fit_is_centred_on_the_weighted_least_squares_of_the_original() -> None:
    """150 releases of the status by randomized response at epsilon 3 (drawn at once), the persons and
    their weights fixed.  The mean of the weighted moment estimates is statsmodels' weighted least squares
    of the original file, within 3 Monte Carlo standard errors for each of the 7 coefficients (the
    unweighted fit's mean, 9 of them away on the intercept, fails); their variance over the releases is the
    PRAM part that the fit reports (pram_se^2 averaged over the releases: a ratio in [0.8, 1.25] on average
    over the coefficients and in [0.7, 1.45] for each, measured 0.91 to 1.17; with the term
    sum_k q_ik u_ik u_ik^T left out of it the ratio is 0.48 to 0.80, with the weights w_i in place of
    w_i^2 hundreds); and the design's variance, averaged over the releases, is above the PRAM part and the
    releases' spread (1.3 to 2.1 times it: it holds PRAM's variance and the sample's; the PSU totals of
    unweighted scores, w_i^2 times smaller, fail)."""
    frame = _complete()
    labels = STATUS[:6]
    matrix = randomized_response(labels, 3.0)
    problem, names, *_ = _problem(frame, "py010n", ["pl030", "rb090"], Manifest.of({"pl030": matrix}), "gaussian")
    survey = SurveyDesign("rb050", strata="db040", psu="db030")
    sample = SampleDesign(survey, survey.read(frame), np.arange(len(frame)))
    design = problem.base + problem.shift[problem.released]                  # the original records' rows
    target = sm.WLS(frame["py010n"].to_numpy(float), design, weights=frame["rb050"].to_numpy(float)).fit().params
    cumulative = np.cumsum(np.asarray(matrix.matrix), axis=1)[problem.codes[0]]       # (n, 6)
    draws = np.random.default_rng(61).random((150, len(frame)))
    released = (draws[:, :, None] > cumulative[None, :, :]).sum(axis=2)
    fits = [moment_fit(problem.base, problem.shift, dataclasses.replace(problem, codes=(z,)).inverse_x(),
                       problem.y, design=sample) for z in released]
    beta = np.array([f.beta for f in fits])
    mc_se = beta.std(axis=0, ddof=1) / np.sqrt(len(fits))
    assert (np.abs(beta.mean(axis=0) - target) <= 3 * mc_se).all(), (names, (beta.mean(axis=0) - target) / mc_se)
    pram = np.array([np.diag(f.pram_covariance) for f in fits])
    ratio = beta.var(axis=0, ddof=1) / pram.mean(axis=0)
    assert 0.8 <= ratio.mean() <= 1.25 and ((ratio >= 0.7) & (ratio <= 1.45)).all(), dict(zip(names, ratio))
    full = np.array([np.diag(f.covariance) for f in fits])
    assert (full.mean(axis=0) > pram.mean(axis=0)).all() and (full.mean(axis=0) > beta.var(axis=0, ddof=1)).all()


def test_a_census_has_prams_variance_alone() -> None:
    """Every household sampled (--fpc 1 in each region): no sampling variance is left, and the standard
    errors are PRAM's part alone, which the Monte Carlo above measures (catches the fpc's share f_h of
    PRAM's variance left out, which gives 0)."""
    frame = _complete().assign(census=1.0)
    matrix = randomized_response(STATUS[:6], 3.0)
    codes = frame["pl030"].astype(int).to_numpy() - 1
    cumulative = np.cumsum(np.asarray(matrix.matrix), axis=1)[codes]
    released = (np.random.default_rng(5).random(len(frame))[:, None] > cumulative).sum(axis=1)
    frame["pl030"] = np.array(STATUS[:6])[released]
    manifest = Manifest.of({"pl030": matrix})
    fit = corrected_regression(frame, "py010n ~ pl030 + rb090", manifest,
                               survey=SurveyDesign("rb050", strata="db040", psu="db030", fpc="census"))
    sampled = corrected_regression(frame, "py010n ~ pl030 + rb090", manifest,
                                   survey=SurveyDesign("rb050", strata="db040", psu="db030"))
    assert fit.pram_se is not None and np.allclose(fit.se, fit.pram_se, rtol=1e-10, atol=0)
    assert np.allclose(fit.coef, sampled.coef, rtol=1e-12) and (sampled.se > 1.1 * fit.se).any()


def _cli(tmp_path, frame: pd.DataFrame, *extra: str) -> tuple[int, str, str]:
    frame.to_csv(tmp_path / "r.csv", index=False)
    Manifest.of({"pl030": randomized_response(STATUS, 3.0)}).write(tmp_path / "m.json")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["estimate", str(tmp_path / "r.csv"), "--manifest", str(tmp_path / "m.json"), *extra])
    return code, out.getvalue(), err.getvalue()


def _small() -> pd.DataFrame:
    return _silc().iloc[:3000].copy()


def _negative() -> pd.DataFrame:
    frame = _small()
    frame.loc[7, "rb050"] = -1.0
    return frame


@pytest.mark.parametrize("frame, extra, message", [
    (_small, ["--weights", "weight"], "column(s) ['weight'] are not in"),
    (_negative, ["--weights", "rb050"], "column 'rb050' must hold finite values >= 0; row 8 holds -1.0"),
    (_small, ["--weights", "rb050", "--regress-method", "em"], "EM maximises an unweighted likelihood"),
    (_small, ["--psu", "db030"], "--psu needs --weights"),
    (_small, ["--weights", "rb050", "--variance", "pram"], "--variance pram is for an unweighted regression"),
    (_small, ["--weights", "rb050", "--replicate-weights", "rb050", "--replicate-method", "jk1"],
     "leave out --replicate-weights"),
    (_small, ["--weights", "rb050", "--strata", "stratum", "--psu", "db030"], "has a single PSU"),
])
def test_bad_survey_input_exits_2_with_one_line(tmp_path, frame, extra, message) -> None:
    code, out, err = _cli(tmp_path, frame(), "--regress", "py010n ~ pl030 + rb090", *extra)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err, err


def test_a_lone_household_is_a_note_and_the_text_output_names_the_design(tmp_path) -> None:
    code, out, err = _cli(tmp_path, _small(), "--regress", "py010n ~ pl030 + rb090", "--weights", "rb050",
                          "--strata", "stratum", "--psu", "db030", "--single-psu", "certainty")
    assert code == 0 and "weighted by rb050" in out and "strata stratum, PSUs db030" in out
    assert "of which PRAM, se" in out
    assert err.count("has a single PSU") == 1, err


def test_the_python_interface_refuses_what_it_cannot_weight() -> None:
    frame = _small()
    manifest = Manifest.of({"pl030": randomized_response(STATUS, 3.0)})
    with pytest.raises(ParameterError, match="variance 'pram' is for an unweighted regression"):
        corrected_regression(frame, "py010n ~ pl030", manifest, weights="rb050", variance="pram")
    with pytest.raises(ParameterError, match="weights 'w' and the survey design's weights 'rb050' differ"):
        corrected_regression(frame, "py010n ~ pl030", manifest, weights="w", survey=SurveyDesign("rb050"))
    with pytest.raises(ParameterError, match="EM maximises an unweighted likelihood"):   # logistic: EM
        corrected_regression(frame, "rb090 ~ pl030", manifest, weights="rb050")
    frame["rb050"] = 0.0
    with pytest.raises(DataError, match="every weight in column 'rb050' of the records fitted is zero"):
        corrected_regression(frame, "py010n ~ pl030", manifest, weights="rb050")
