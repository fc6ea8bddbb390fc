"""``pramkit.estimate.regression_moment``: the moment (corrected least-squares) regression, the default.

Checked against what the module does not compute: least squares and White's HC0 covariance by
statsmodels on the original records; an "expected release" (every record copied in proportion to
the rows of a non-symmetric matrix), on which an unbiased estimator of ``X^T X`` and ``X^T y``
must return least squares on the original file exactly; and Monte Carlo over 200 releases of
EU-SILC's employee income (the example of docs/analyst.md) and of the NIST CRC file's personal
income, drawn by pramkit's engine with distinct keys, whose 95 % intervals must cover the
original file's least-squares coefficients (statsmodels) 93-97 % of the time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from functools import cache

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from conftest import SDC_DATA

from pramkit.cli import main
from pramkit.design.classic import randomized_response
from pramkit.engine.perturb import perturb_codes
from pramkit.errors import DataError
from pramkit.estimate.regression import _problem, corrected_regression
from pramkit.estimate.regression_moment import moment_fit
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix

NIST = SDC_DATA.parent / "nist-crc" / "national" / "national2019.csv"
STATUS = [str(k) for k in range(1, 8)]
#: NIST's 12 education levels in 6 groups (no schooling to grade 8, grade 9-12, high school or GED, some
#: college or associate, bachelor, graduate): the finest levels hold 8 and 278 of the records with an income.
EDU_GROUPS = {"1": "1", "2": "1", "3": "1", "4": "2", "5": "3", "6": "3", "7": "4", "8": "4", "9": "5",
              "10": "6", "11": "6", "12": "6"}
Z95 = 1.959963984540054


def _key(k: int) -> SecretKey:
    return SecretKey(k.to_bytes(32, "big"), f"k{k}")


@cache
def _silc() -> pd.DataFrame:
    """EU-SILC's employee income, economic status and sex: the rows with a value of each (docs/analyst.md)."""
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    raw = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["pl030", "py010n", "rb090", "age"]).dropna()
    return pd.DataFrame({"py010n": raw["py010n"].to_numpy(), "pl030": raw["pl030"].astype(int).astype(str).to_numpy(),
                         "rb090": raw["rb090"].to_numpy(), "age": raw["age"].to_numpy(dtype=float)})


@cache
def _nist() -> pd.DataFrame:
    """NIST CRC national2019: personal income, education level and sex of the persons with an income."""
    if not NIST.is_file():
        pytest.skip(f"{NIST} is not available")
    raw = pd.read_csv(NIST, usecols=["PINCP", "EDU", "SEX"], dtype=str)
    raw = raw[(raw["PINCP"] != "N") & (raw["EDU"] != "N")]
    return pd.DataFrame({"PINCP": raw["PINCP"].astype(float).to_numpy(), "EDU": raw["EDU"].to_numpy(),
                         "SEX": np.where(raw["SEX"] == "1", "male", "female")})


def _ols(frame: pd.DataFrame, outcome: str, factors: list[str], numeric: tuple[str, ...] = ()) -> sm.regression.linear_model.RegressionResultsWrapper:
    """statsmodels' least squares of ``outcome`` on the factors (first sorted level the reference; levels
    sorted as numbers when they are) and numeric columns, with HC0 standard errors."""
    columns = [np.ones(len(frame))]
    for name in factors:
        levels = sorted(frame[name].unique(), key=lambda v: (not str(v).isdigit(), int(v) if str(v).isdigit() else 0, v))
        columns += [(frame[name] == level).to_numpy(float) for level in levels[1:]]
    columns += [frame[name].to_numpy(float) for name in numeric]
    return sm.OLS(frame[outcome].to_numpy(float), np.column_stack(columns)).fit(cov_type="HC0")


def _released(frame: pd.DataFrame, column: str, labels: list[str], matrix: PramMatrix, key: int) -> pd.DataFrame:
    codes = frame[column].map({label: i for i, label in enumerate(labels)}).to_numpy()
    out = frame.copy()
    out[column] = np.array(labels)[perturb_codes(codes, matrix, key=_key(key), variable=column)]
    return out


def test_with_identity_matrices_it_is_least_squares_with_hc0_standard_errors() -> None:
    """No perturbation: the coefficients are statsmodels' least squares and the default sandwich is its HC0
    covariance (not HC1: no n / (n - p)), to 1e-8; the PRAM-only variance is then 0 (PRAM adds nothing)."""
    frame = _silc()
    identity = Manifest.of({"pl030": PramMatrix.identity(STATUS)})
    fit = corrected_regression(frame, "py010n ~ pl030 + rb090 + age", identity)
    ols = _ols(frame, "py010n", ["pl030", "rb090"], ("age",))
    assert fit.estimator == "moment" and fit.variance == "multinomial"
    assert np.allclose(fit.coef, ols.params, rtol=1e-8, atol=1e-8 * np.abs(ols.params).max())
    assert np.allclose(fit.se, ols.bse, rtol=1e-8)
    assert np.allclose(fit.covariance, ols.cov_params(), rtol=1e-8, atol=1e-8 * np.abs(ols.cov_params()).max())
    assert np.allclose(fit.naive_coef, fit.coef, rtol=1e-12) and np.allclose(fit.naive_se, fit.se, rtol=1e-12)
    fixed = corrected_regression(frame, "py010n ~ pl030 + rb090 + age", identity, variance="pram")
    assert np.abs(fixed.covariance).max() <= 1e-9 * np.abs(fit.covariance).max()


def _skewed_matrix() -> np.ndarray:
    """A non-symmetric 7 x 7 matrix with entries in twentieths: keep 14/20, move 3/20 one category up, 2/20
    two up, 1/20 three up (circularly)."""
    m = np.zeros((7, 7))
    for k in range(7):
        for step, share in enumerate((14, 3, 2, 1)):
            m[k, (k + step) % 7] = share / 20
    return m


def test_on_the_expected_release_it_returns_least_squares_of_the_original_file() -> None:
    """Every record released 20 times, as each category in proportion to its row of a non-symmetric matrix:
    the released counts are their expectation, on which an unbiased estimate of X^T X and X^T y is exact.
    The fit must be least squares on the original records (statsmodels), every coefficient, the
    unperturbed sex and age included.  (Rows of M^-1 taken as columns, or M in place of M^-1, fail.)"""
    frame = _silc().iloc[::4].reset_index(drop=True)
    matrix = _skewed_matrix()
    codes = frame["pl030"].astype(int).to_numpy() - 1
    copies = np.repeat(np.arange(len(frame)), 20)
    shares = np.repeat(np.arange(4), (14, 3, 2, 1))                      # 20 copies: the steps 0, 1, 2, 3
    released = (codes[copies] + np.tile(shares, len(frame))) % 7
    expected = frame.iloc[copies].assign(pl030=np.array(STATUS)[released])
    manifest = Manifest.of({"pl030": PramMatrix(matrix, tuple(STATUS))})
    fit = corrected_regression(expected, "py010n ~ pl030 + rb090 + age", manifest)
    ols = _ols(frame, "py010n", ["pl030", "rb090"], ("age",))
    assert np.allclose(fit.coef, ols.params, rtol=1e-7, atol=1e-7 * np.abs(ols.params).max()), (fit.coef, ols.params)
    assert not np.allclose(fit.naive_coef, ols.params, rtol=1e-2)      # the released file as it is: biased


def test_the_docs_example_is_within_two_standard_errors_of_the_original_fit() -> None:
    """docs/analyst.md: py010n ~ pl030 + rb090, pl030 released by randomized response at epsilon 3, with two
    keys.  The corrected pl030[2] (the coefficient the example is read for) is within 2 standard errors of
    least squares on the original file, and every coefficient within 3 (16 comparisons); EM (a normal outcome
    of one variance) puts pl030[2] more than 5 of its standard errors away, and its check says that the
    income contradicts its model."""
    frame = _silc()
    matrix = randomized_response(STATUS, 3.0)
    manifest = Manifest.of({"pl030": matrix})
    ols = _ols(frame, "py010n", ["pl030", "rb090"])
    for key in (2, 4):
        released = _released(frame, "pl030", STATUS, matrix, key)
        fit = corrected_regression(released, "py010n ~ pl030 + rb090", manifest)
        assert fit.terms[1] == "pl030[2]" and fit.estimator == "moment"
        assert abs(fit.coef[1] - ols.params[1]) <= 2 * fit.se[1], (fit.coef[1], ols.params[1], fit.se[1])
        assert (np.abs(fit.coef - ols.params) <= 3 * fit.se).all(), ((fit.coef - ols.params) / fit.se)
        em = corrected_regression(released, "py010n ~ pl030 + rb090", manifest, method="em")
        assert abs(em.coef[1] - ols.params[1]) > 5 * em.se[1], (em.coef[1], ols.params[1], em.se[1])
        assert em.check is not None and em.check.source == "moment"
        assert len(em.warnings) == 1 and "contradicted" in em.warnings[0] and "skewness" in em.warnings[0]


def test_em_on_a_normal_outcome_of_one_variance_is_not_warned() -> None:
    """EU-SILC's statuses and sexes, an outcome drawn normal with one variance: EM's model holds, its check
    finds a small skewness and variance ratio, and no warning; the moment estimate agrees with EM's."""
    frame = _silc().iloc[:6000].copy()
    rng = np.random.default_rng(11)
    effect = np.array([0.0, -1.0, -2.0, -1.5, -2.5, -1.0, -2.0])
    frame["y"] = 3.0 + effect[frame["pl030"].astype(int) - 1] + 0.5 * (frame["rb090"] == "male") + rng.normal(size=6000)
    matrix = randomized_response(STATUS, 3.0)
    released = _released(frame, "pl030", STATUS, matrix, 7)
    manifest = Manifest.of({"pl030": matrix})
    em = corrected_regression(released, "y ~ pl030 + rb090", manifest, method="em")
    moment = corrected_regression(released, "y ~ pl030 + rb090", manifest)
    assert em.warnings == () and em.check is not None and em.check.warning is None, em.check
    assert (np.abs(em.coef - moment.coef) <= 2 * moment.se).all()


def test_an_unperturbed_covariate_is_not_biased_by_the_correction() -> None:
    """NIST CRC national2019, PINCP ~ EDU + SEX with the 12 education levels released by randomized response
    at epsilon 3: SEX, not perturbed, is within 2 standard errors of least squares on the original file
    (statsmodels), as the naive fit's is; EM's (a normal income) is not within 5 of its own."""
    frame = _nist()
    labels = [str(k) for k in range(1, 13)]
    matrix = randomized_response(labels, 3.0)
    manifest = Manifest.of({"EDU": matrix})
    ols = _ols(frame, "PINCP", ["EDU", "SEX"])
    released = _released(frame, "EDU", labels, matrix, 1)
    fit = corrected_regression(released, "PINCP ~ EDU + SEX", manifest)
    assert fit.terms[-1] == "SEX[male]"
    assert abs(fit.coef[-1] - ols.params[-1]) <= 2 * fit.se[-1], (fit.coef[-1], ols.params[-1], fit.se[-1])
    # the 8 records of education level 2 are too few to estimate its coefficient: the fit says so
    assert any("EDU=2" in w for w in fit.warnings), fit.warnings


def _coverage(frame: pd.DataFrame, outcome: str, column: str, labels: list[str], epsilon: float,
              variance: str, keys: range, target: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """(releases, p): whether each 95 % interval covers ``target``; the file's design is read once, each
    release perturbs ``column`` (of the records ``rows``, drawn with replacement, if given) by randomized
    response at ``epsilon`` with its key and is fitted by the estimator of ``corrected_regression``."""
    matrix = randomized_response(labels, epsilon)
    manifest = Manifest.of({column: matrix})
    other = [c for c in frame.columns if c not in (outcome, column)]
    problem, *_ = _problem(frame, outcome, [column, *other], manifest, "gaussian")
    covered = []
    for key in keys:
        p = problem if rows is None else dataclasses.replace(
            problem, y=problem.y[rows[key - keys.start]], base=problem.base[rows[key - keys.start]],
            codes=(problem.codes[0][rows[key - keys.start]],))
        released = perturb_codes(p.codes[0], matrix, key=_key(key), variable=column)
        fit = moment_fit(p.base, p.shift, dataclasses.replace(p, codes=(released,)).inverse_x(), p.y,
                         variance=variance)
        covered.append(np.abs(fit.beta - target) <= Z95 * np.sqrt(np.diag(fit.covariance)))
    return np.array(covered)


@pytest.mark.slow
def test_intervals_cover_the_original_least_squares_fit_over_200_releases() -> None:
    """200 releases each of EU-SILC (py010n ~ pl030 + rb090, pl030 at epsilon 3: the docs' example) and of
    8 000 NIST records (PINCP ~ EDU + SEX, 6 education groups at epsilon 2), variance 'pram' (the original
    file fixed): the intervals cover statsmodels' least squares on the original file 93-97 % of the time
    over all coefficients, and 90-99 % for each.  Then 200 samples of 5 000 EU-SILC records drawn with
    replacement and released: the default sandwich ('multinomial') covers the whole file's fit 93-97 %."""
    silc = _silc()[["py010n", "pl030", "rb090"]]
    nist = _nist().sample(8000, random_state=3).reset_index(drop=True)
    nist["EDU"] = nist["EDU"].map(EDU_GROUPS)
    runs = [(silc, "py010n", "pl030", STATUS, 3.0), (nist, "PINCP", "EDU", [str(k) for k in range(1, 7)], 2.0)]
    for frame, outcome, column, labels, epsilon in runs:
        target = _ols(frame, outcome, [column, frame.columns[2]]).params
        covered = _coverage(frame, outcome, column, labels, epsilon, "pram", range(200), target)
        assert 0.93 <= covered.mean() <= 0.97, (outcome, covered.mean(axis=0))
        assert ((covered.mean(axis=0) >= 0.90) & (covered.mean(axis=0) <= 0.99)).all(), covered.mean(axis=0)
    rows = np.random.default_rng(8).integers(0, len(silc), (200, 5000))
    covered = _coverage(silc, "py010n", "pl030", STATUS, 3.0, "multinomial", range(1000, 1200),
                        _ols(silc, "py010n", ["pl030", "rb090"]).params, rows)
    assert 0.93 <= covered.mean() <= 0.97, covered.mean(axis=0)


def _cli(tmp_path, *extra: str) -> tuple[int, str, str]:
    frame = _silc().iloc[:3000]
    matrix = randomized_response(STATUS, 3.0)
    if not (tmp_path / "m.json").exists():
        Manifest.of({"pl030": matrix}).write(tmp_path / "m.json")
        _released(frame, "pl030", STATUS, matrix, 3).to_csv(tmp_path / "released.csv", index=False)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["estimate", str(tmp_path / "released.csv"), "--manifest", str(tmp_path / "m.json"), *extra])
    return code, out.getvalue(), err.getvalue()


def test_cli_names_the_estimator_and_warns_about_em(tmp_path) -> None:
    code, out, err = _cli(tmp_path, "--regress", "py010n ~ pl030 + rb090")
    assert code == 0 and "estimator: moment" in out and "sandwich (multinomial)" in out and "EM assumes" not in err
    code, out, _ = _cli(tmp_path, "--regress", "py010n ~ pl030 + rb090", "--json", "--variance", "pram")
    result = json.loads(out)
    assert result["estimator"] == "moment" and result["variance"] == "pram" and result["loglik"] is None
    assert {"formula", "family", "n", "dropped", "perturbed", "event", "sigma", "iterations", "converged",
            "confidence", "method", "coefficients"} <= set(result)
    assert [c["category"] for c in result["model_check"]["categories"]] == [f"pl030={s}" for s in STATUS]
    code, out, err = _cli(tmp_path, "--regress", "py010n ~ pl030 + rb090", "--regress-method", "em", "--json")
    result = json.loads(out)
    assert code == 0 and result["estimator"] == "em" and result["warnings"]
    assert err.count("warning: the normal outcome of one variance that EM assumes is contradicted") == 1


@pytest.mark.parametrize("extra, message", [
    (["--regress", "py010n ~ pl030", "--regress-method", "mle"], "invalid choice: 'mle'"),
    (["--vars", "pl030", "--regress-method", "em"], "--regress-method goes with --regress"),
    (["--regress", "py010n ~ pl030", "--regress-method", "em", "--variance", "pram"], "moment estimator's"),
    (["--regress", "rb090 ~ pl030", "--regress-method", "moment"], "linear regression"),
    (["--regress", "py010n ~ pl030", "--variance", "fixed"], "variance"),
])
def test_cli_bad_regression_options_exit_2_with_one_line(tmp_path, extra, message) -> None:
    code, out, err = _cli(tmp_path, *extra)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err, err


def test_a_singular_matrix_is_refused_for_the_moment_estimator_in_one_line(tmp_path) -> None:
    """A matrix with two equal rows has no inverse: the moment estimator says so and names EM."""
    frame = _silc().iloc[:500].copy()
    frame["rb090"] = frame["rb090"].astype(str)
    manifest = Manifest.of({"rb090": PramMatrix([[0.5, 0.5], [0.5, 0.5]], ("female", "male"))})
    with pytest.raises(DataError, match=r"singular: the moment estimator needs its inverse.*--regress-method em"):
        corrected_regression(frame, "py010n ~ rb090", manifest)
