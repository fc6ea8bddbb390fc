"""Singular and ill-conditioned matrices: detection (pramkit.estimate.identifiability)
and estimation of the identifiable quantities (pramkit.estimate.singular).

Checked against: matrices of known rank built as products ``B C`` of thin
stochastic factors; explicit null vectors written down by hand; the singular
values of randomized response in closed form; for the estimates, an
independent maximum-likelihood fit of the merged model (SciPy), the
pseudo-inverse of the dense Fisher information of the whole table, and the
spread of the estimates over simulated releases.
"""

from __future__ import annotations

import doctest
import importlib
import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import xlogy

from pramkit import Manifest, PramMatrix, SecretKey, perturb_codes
from pramkit._json import to_jsonable
from pramkit.cli import main
from pramkit.codebook import encode
from pramkit.design.classic import randomized_response
from pramkit.design.dp_optimal import dp_optimal_for_column
from pramkit.errors import PramkitError
from pramkit.estimate import (
    EstimationWarning,
    estimate_table,
    identifiability,
    mle_estimate,
    moment_estimate,
)
from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.singular import IdentifiableCovariance
from pramkit.io import read_table


def low_rank(s: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """A row-stochastic S x S matrix of rank r: B (S x r) times C (r x S), both
    row-stochastic, so rank <= r, and = r for generic random factors."""
    b = rng.dirichlet(np.ones(r), size=s)
    c = rng.dirichlet(np.ones(s), size=r)
    return b @ c


@pytest.mark.parametrize("s, r", [(3, 2), (5, 2), (6, 4), (8, 7)])
def test_rank_of_products_of_thin_factors(s, r):
    rng = np.random.default_rng(s * 10 + r)
    res = identifiability(low_rank(s, r, rng))
    assert res.rank == r and res.singular and not res.identifiable
    assert res.status == "singular" and np.isinf(res.condition_number)
    # generic factors mix every category into the dependence: one group of all
    assert [g.indices for g in res.groups] == [tuple(range(s))]
    assert res.groups[0].free_directions == s - r
    assert res.identifiable_categories == ()


def test_identical_rows_form_groups():
    rng = np.random.default_rng(1)
    rows = rng.dirichlet(np.ones(6), size=3)
    # categories 0, 2 share row A; 1, 4, 5 share row B; 3 has its own row C
    m = np.array([rows[0], rows[1], rows[0], rows[2], rows[1], rows[1]])
    res = identifiability(PramMatrix(m, ("a", "b", "c", "d", "e", "f")))
    assert res.rank == 3
    assert [g.categories for g in res.groups] == [("a", "c"), ("b", "e", "f")]
    assert [g.free_directions for g in res.groups] == [1, 2]
    assert all(g.identical_rows for g in res.groups)
    assert res.identifiable_categories == ("d",)
    assert "categories a and c have identical rows" in res.message
    assert "categories b, e and f have identical rows" in res.message
    assert "only their total can be estimated" in res.message


def test_a_row_that_mixes_two_others():
    """Row 2 = (row 0 + row 1) / 2, so v = (1/2, 1/2, -1, 0) has M^T v = 0: the
    counts of 0, 1, 2 are not identifiable, their total (1_G . v = 0) and the
    contrast t_0 - t_1 ((1, -1, 0, 0) . v = 0) are, and category 3 (v_3 = 0) is."""
    r0, r1, r3 = np.array([0.7, 0.1, 0.1, 0.1]), np.array([0.1, 0.6, 0.2, 0.1]), np.array([0.0, 0.1, 0.1, 0.8])
    m = np.array([r0, r1, (r0 + r1) / 2, r3])
    v = np.array([0.5, 0.5, -1.0, 0.0])
    assert m.T @ v == pytest.approx(np.zeros(4), abs=1e-15)
    res = identifiability(m)
    assert res.rank == 3
    (group,) = res.groups
    assert group.indices == (0, 1, 2) and group.free_directions == 1 and not group.identical_rows
    assert res.identifiable_categories == (3,)
    assert "linearly dependent" in res.message and "total and some contrasts" in res.message
    # the estimator side agrees: cell 3 and the contrast are identifiable, cell 0 is not
    u = np.array([30.0, 25.0, 20.0, 25.0])
    with pytest.warns(EstimationWarning):
        est = moment_estimate(u, [PramMatrix(m)])
    cov = est.identifiability.covariance
    assert est.identifiable.tolist() == [False, False, False, True]
    assert cov.identifiable(np.array([1.0, -1.0, 0.0, 0.0])) and cov.identifiable(np.array([1.0, 1.0, 1.0, 0.0]))
    assert not cov.identifiable(np.array([1.0, 0.0, 0.0, 0.0]))
    assert np.isnan(cov.variance(np.array([1.0, 0.0, 0.0, 0.0])))
    assert cov.variance(np.array([1.0, -1.0, 0.0, 0.0])) > 0


@pytest.mark.parametrize("s, eps", [(2, 0.5), (3, 1.0), (6, 2.0)])
def test_randomized_response_condition_number(s, eps):
    """M = b J + (a - b) I is symmetric with eigenvalues 1 and a - b (S - 1 times),
    so its condition number is 1 / (a - b)."""
    m = randomized_response(list(range(s)), eps)
    a, b = np.exp(eps) / (np.exp(eps) + s - 1), 1 / (np.exp(eps) + s - 1)
    res = identifiability(m)
    assert res.status == "identifiable" and res.identifiable and res.rank == s and res.groups == ()
    assert res.condition_number == pytest.approx(1 / (a - b), rel=1e-9)
    assert res.message.startswith("identifiable")


def test_ill_conditioned():
    m = randomized_response([0, 1, 2], 1e-11)
    res = identifiability(m)
    assert res.status == "ill-conditioned" and res.identifiable and res.rank == 3
    assert res.condition_number > 1e10
    assert [g.indices for g in res.groups] == [(0, 1, 2)]
    assert "ill-conditioned" in res.message and "nearly" in res.message
    # the threshold is a parameter
    assert identifiability(m, max_condition=1e15).status == "identifiable"
    with pytest.raises(PramkitError, match="max_condition"):
        identifiability(m, max_condition=0.5)


def test_to_dict_and_message():
    third = 1 / 3
    res = identifiability(PramMatrix([[third] * 3, [0.1, 0.8, 0.1], [third] * 3], ("x", "y", "z")))
    out = json.loads(json.dumps(to_jsonable(res.to_dict()), allow_nan=False))
    assert out["status"] == "singular" and out["rank"] == 2 and out["size"] == 3
    assert out["groups"] == [{"categories": ["x", "z"], "indices": [0, 2], "free_directions": 1,
                              "identical_rows": True}]
    assert out["identifiable_categories"] == ["y"] and out["message"] == res.message
    assert "\n" not in res.message


def test_invalid_matrix_is_a_user_error():
    with pytest.raises(PramkitError):
        identifiability([[0.5, 0.6], [0.5, 0.5]])


def test_docstring_examples():
    for name in ("identifiability", "consistent", "estimators", "moment", "table"):
        module = importlib.import_module(f"pramkit.estimate.{name}")
        failures, tried = doctest.testmod(module)
        assert tried > 0 and failures == 0, name


# -- estimation with a singular matrix ---------------------------------------------


def merged_mle(u: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """MLE of the proportions of a model with one row per merged category (an
    independent fit: SciPy's SLSQP on the simplex)."""
    k = rows.shape[0]
    res = minimize(lambda x: -xlogy(u, x @ rows).sum(), np.full(k, 1 / k), method="SLSQP",
                   bounds=[(1e-12, 1)] * k, constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success
    return res.x


def test_identifiable_quantities_match_the_merged_model():
    """Categories 0 and 1 share a row; 2 and 3 do not.  Merging 0 and 1 gives a
    3 x 4 model with a unique MLE (not saturated: three parameters, four
    released categories); its estimates are the group total and the counts of
    2 and 3."""
    ra, r2, r3 = np.array([0.5, 0.3, 0.1, 0.1]), np.array([0.1, 0.2, 0.6, 0.1]), np.array([0.1, 0.1, 0.2, 0.6])
    m = PramMatrix(np.array([ra, ra, r2, r3]))
    u = np.array([120.0, 110.0, 90.0, 80.0])
    est = mle_estimate(u, [m], tol=1e-10)
    x = merged_mle(u, np.array([ra, r2, r3]))
    n = u.sum()
    assert est.counts[2:] == pytest.approx(n * x[1:], rel=1e-5)
    (group,) = est.identifiability.groups
    assert group.members == ((0, 1),) and group.estimate == pytest.approx(n * x[0], rel=1e-5)
    assert np.all(np.isnan(est.se[:2])) and np.all(np.isfinite(est.se[2:]))
    # standard errors: the inverse expected information of the merged model, on the
    # simplex, parametrised by (x_0, x_1) with x_2 = 1 - x_0 - x_1
    lam = x @ np.array([ra, r2, r3])
    d = np.array([ra - r3, r2 - r3])
    info = n * (d / lam) @ d.T
    cov = n**2 * np.linalg.inv(info)
    assert group.se == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-4)
    assert est.se[2] == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-4)
    # t_3 = n - (group + t_2)
    assert est.se[3] == pytest.approx(np.sqrt(cov.sum()), rel=1e-4)


@pytest.mark.parametrize("kind", ["multinomial", "pram"])
def test_factored_covariance_matches_the_dense_pseudo_inverse(kind):
    """A singular axis crossed with an invertible one and an unperturbed one: the
    variances of identifiable quantities against ``n g^T F^+ g - ...`` with the
    dense Fisher information ``F = M_K diag(1 / lam) M_K^T`` of the whole table."""
    rng = np.random.default_rng(5)
    ra = np.array([0.4, 0.3, 0.3])
    m1 = PramMatrix(np.array([ra, ra, [0.1, 0.1, 0.8]]))
    m2 = randomized_response([0, 1], 1.0)
    shape = (3, 2, 4)
    u = rng.integers(20, 80, size=shape).astype(float)
    est = mle_estimate(u, [m1, m2, None], tol=1e-10)
    n = u.sum()
    big = np.kron(np.kron(m1.matrix, m2.matrix), np.eye(4))
    p = est.counts.ravel() / n
    lam = p @ big
    fisher_pinv = np.linalg.pinv(big @ np.diag(1 / lam) @ big.T)
    t = est.counts.ravel()

    def dense_variance(g):
        quad = n * g @ fisher_pinv @ g
        return quad - (g @ t) ** 2 / n if kind == "multinomial" else quad - np.sum(t * g * g)

    cov = IdentifiableCovariance([m1.matrix, m2.matrix, None], lam.reshape(shape), est.counts, int(n), kind)
    ident = est.identifiable
    assert not ident[:2].any() and ident[2].all()  # category 2 of axis 0 only
    cells = cov.cell_variances(ident)
    for idx in np.ndindex(shape):
        if ident[idx]:
            g = np.zeros(shape)
            g[idx] = 1
            assert cells[idx] == pytest.approx(dense_variance(g.ravel()), rel=1e-6)
    for group in est.identifiability.groups:
        g = np.zeros(shape)
        g[np.ix_(*group.members)] = 1
        assert group.estimate == pytest.approx(float(np.sum(g * est.counts)))
        if kind == "multinomial":
            assert group.se ** 2 == pytest.approx(dense_variance(g.ravel()), rel=1e-6)
    assert len(est.identifiability.groups) == 2 * 4  # {0, 1} x each of 2 x 4 other cells
    # a contrast inside the group is not identifiable, a contrast across groups is
    g = np.zeros(shape)
    g[0, 0, 0], g[1, 0, 0] = 1, -1
    assert np.isnan(cov.variance(g))
    g = np.zeros(shape)
    g[:2, 0, 0], g[2, 1, 3] = 1, -1
    assert cov.variance(g) == pytest.approx(dense_variance(g.ravel()), rel=1e-6)


def test_invertible_matrix_gives_the_moment_form_covariance():
    """With r = S the factored identifiable covariance is the usual one (the
    MLE's CountCovariance at the fitted distribution)."""
    rng = np.random.default_rng(2)
    m = PramMatrix(0.6 * np.eye(4) + 0.4 * rng.dirichlet(np.ones(4), size=4))
    u = rng.integers(30, 90, size=(4, 3)).astype(float)
    est = mle_estimate(u, [m, None], tol=1e-10)
    fitted = est.counts / est.n
    fitted = np.einsum("ky,kj->jy", fitted, m.matrix)
    for kind in ("multinomial", "pram"):
        ident = IdentifiableCovariance([m.matrix, None], fitted, est.counts, est.n, kind)
        usual = CountCovariance((np.linalg.inv(m.matrix), None), est.n * fitted, est.counts, est.n, kind)
        assert ident.cell_variances(np.ones((4, 3), bool)) == pytest.approx(usual.cell_variances(), rel=1e-8)


def test_estimate_table_with_a_singular_by_variable_and_shares():
    """Shares within groups of an unperturbed by-variable: defined for the
    identifiable cells (delta method, checked against the variance of the
    gradient), NaN for the others; derived shares follow the same rule."""
    rng = np.random.default_rng(8)
    third = 1 / 3
    m = PramMatrix([[third] * 3, [0.1, 0.8, 0.1], [third] * 3], ("p", "q", "r"))
    data = pd.DataFrame({"x": rng.choice(["p", "q", "r"], size=600), "g": rng.choice(["u", "v"], size=600)})
    with pytest.warns(EstimationWarning):
        res = estimate_table(data, Manifest.of({"x": m}), "x", by="g")
    assert res.table.identifiable[:, 0].tolist() == [False, True, False]
    assert np.all(np.isnan(res.proportion_se[[0, 2]])) and np.all(np.isfinite(res.proportion_se[1]))
    for y, label in enumerate(["u", "v"]):
        b = res.table.counts[:, y].sum()
        grad = np.zeros((3, 2))
        grad[:, y] = -res.proportion[1, y] / b
        grad[1, y] += 1 / b
        assert res.proportion_se[1, y] == pytest.approx(np.sqrt(res.table.linear_variance(grad)), rel=1e-9)
        assert res.share({"x": "q"}, within={"g": label}).se == pytest.approx(res.proportion_se[1, y], rel=1e-9)
    assert np.isnan(res.share({"x": "p"}).se)
    assert np.isfinite(res.share({"x": ["p", "r"]}).se)
    groups = res.groups()
    assert [g["category"] for g in groups] == [[["p", "r"], ["u"]], [["p", "r"], ["v"]]]


def test_standard_errors_of_identifiable_quantities_by_simulation():
    """Over simulated releases from the population model, the reported standard
    errors of the group total and of the identifiable cell match the spread of
    the estimates, and the estimates are centred on the truth."""
    rng = np.random.default_rng(11)
    ra = np.array([0.5, 0.3, 0.1, 0.1])
    rows = np.array([ra, ra, [0.1, 0.2, 0.6, 0.1], [0.1, 0.1, 0.2, 0.6]])
    m = PramMatrix(rows)
    p = np.array([0.3, 0.2, 0.3, 0.2])
    n, reps = 2000, 400
    lam = p @ rows
    totals, cells, se_totals, se_cells = [], [], [], []
    for _ in range(reps):
        u = rng.multinomial(n, lam).astype(float)
        est = mle_estimate(u, [m])
        (group,) = est.identifiability.groups
        totals.append(group.estimate)
        se_totals.append(group.se)
        cells.append(est.counts[2])
        se_cells.append(est.se[2])
    for values, ses, truth in ((totals, se_totals, n * 0.5), (cells, se_cells, n * 0.3)):
        values = np.array(values)
        sd = values.std(ddof=1)
        assert abs(values.mean() - truth) < 4 * sd / np.sqrt(reps)
        assert np.mean(ses) == pytest.approx(sd, rel=0.12)  # the SD of an SD estimate over 400 draws is ~3.5%


def test_walls_of_testdata(sdc_data, tmp_path, capsys):
    """The DP-optimal design for sdcMicro's testdata ``walls`` at epsilon 1 is
    singular: the categories whose keep probability is 1/S have uniform rows.
    ``pramkit estimate`` then estimates their total (and the other category)
    and says which cells it cannot estimate, printing no NaN."""
    data = read_table(sdc_data / "testdata.csv", columns=["walls"])
    m = dp_optimal_for_column(data["walls"], 1.0, column="walls")
    uniform = [c for c, q in zip(m.categories, m.diagonal) if abs(q - 1 / m.size) < 1e-9]
    assert len(uniform) >= 2  # the design being what the issue describes
    res = identifiability(m)
    assert res.singular and [g.categories for g in res.groups] == [tuple(uniform)]
    cats = list(m.categories)
    codes = encode(data["walls"], cats, column="walls")
    released = data.copy()
    released["walls"] = np.asarray(cats)[perturb_codes(codes, m, key=SecretKey(b"w" * 32, "test"), variable="walls")]
    released.to_csv(tmp_path / "r.csv", index=False)
    Manifest.of({"walls": m}).write(tmp_path / "m.json")
    args = ["estimate", str(tmp_path / "r.csv"), "--manifest", str(tmp_path / "m.json"), "--vars", "walls"]
    assert main(args + ["--json"]) == 0
    captured = capsys.readouterr()
    assert "cannot be told apart" in captured.err
    out = json.loads(captured.out)
    truth = dict(zip(cats, np.bincount(codes, minlength=len(cats))))
    (group,) = out["groups"]
    assert sorted(group["category"]) == sorted(uniform)
    assert abs(group["estimate"] - sum(truth[c] for c in uniform)) < 4.5 * group["se"]
    for cell in out["cells"]:
        assert cell["identifiable"] == (cell["category"] not in uniform)
        if cell["identifiable"]:
            assert abs(cell["estimate"] - truth[cell["category"]]) < 4.5 * cell["se"]
    assert main(args) == 0
    assert "nan" not in capsys.readouterr().out.lower()


# -- the design's warning (pramkit.design.matrix_design.estimability_warnings) ----------------------

def test_estimability_warning_for_the_singular_walls_design(sdc_data):
    """The information-optimal design of testdata's walls at epsilon 1 has identical uniform rows
    (checked here directly on the entries); the warning names those categories, says what follows
    for estimation and gives the remedy, in one sentence.  The variance objective's design of the
    same variable is invertible and draws no warning."""
    from pramkit.design.matrix_design import estimability_warnings
    from pramkit.design.registry import FAMILIES

    data = read_table(sdc_data / "testdata.csv", columns=["walls"])
    m = dp_optimal_for_column(data["walls"], 1.0, column="walls")
    same = [c for i, c in enumerate(m.categories)                      # identical to rounding
            if any(j != i and np.abs(m.matrix[i] - m.matrix[j]).max() <= 1e-15 for j in range(m.size))]
    assert len(same) == 2
    (sentence,) = estimability_warnings(m)
    assert "\n" not in sentence and sentence.count(". ") == 0
    assert f"categories {same[0]} and {same[1]} have identical rows" in sentence
    assert "cannot separate" in sentence and "maximum likelihood of the identifiable totals" in sentence
    assert "objective 'variance'" in sentence and "--objective variance" in sentence
    variance = FAMILIES["dp"].build(list(m.categories), None, 1.0, {"objective": "variance"})
    assert np.linalg.matrix_rank(variance.matrix) == m.size
    assert estimability_warnings(variance) == []


def test_estimability_warnings_ill_conditioned_and_large():
    from pramkit.design.dp_variance import dp_min_variance
    from pramkit.design.matrix_design import MAX_ESTIMABILITY_CATEGORIES, design_matrix, estimability_warnings

    rr_tiny = randomized_response([0, 1, 2], 1e-11)                  # condition number 1/(a - b) ~ 3e11
    (sentence,) = estimability_warnings(rr_tiny)
    assert "ill-conditioned" in sentence and "condition number 3e+11" in sentence
    assert "objective 'variance'" in sentence
    # the variance-optimal design at such a budget is the same matrix: the remedy is a larger epsilon
    (sentence,) = estimability_warnings(dp_min_variance(None, 1e-11, categories=[0, 1]))
    assert "ill-conditioned" in sentence and "larger epsilon" in sentence
    assert estimability_warnings(randomized_response([0, 1, 2], 1.0)) == []
    big = randomized_response(list(range(MAX_ESTIMABILITY_CATEGORIES + 1)), 1.0)
    (sentence,) = estimability_warnings(big)
    assert "not checked" in sentence
    # the --probs mode carries the warning: p = (0.05, 0.05, 0.9) at epsilon 1 gives two uniform rows
    d = design_matrix([0.05, 0.05, 0.9], epsilon=1.0)
    assert np.abs(d.matrix.matrix[0] - d.matrix.matrix[1]).max() <= 1e-15
    assert any("cannot separate" in w for w in d.warnings)
    assert not any("cannot separate" in w for w in
                   design_matrix([0.05, 0.05, 0.9], epsilon=1.0, options={"objective": "variance"}).warnings)
