"""Singular and ill-conditioned matrices: detection (pramkit.estimate.identifiability)
and estimation of the identifiable quantities (pramkit.estimate.singular).

Checked against: matrices of known rank built as products ``B C`` of thin
stochastic factors; explicit null vectors written down by hand; the singular
values of randomized response in closed form; for the estimates, an
independent maximum-likelihood fit of the merged model (SciPy), the
pseudo-inverse of the dense Fisher information of the whole table, and the
spread of the estimates over simulated releases.  The check without the SVD
(pramkit.estimate.identifiability.estimability: form (8) in O(S), blocks one
by one) against NumPy's ``matrix_rank`` and ``cond`` and the SVD's groups on
the dense matrix, the closed form of randomized response at 100 000
categories, and identical rows checked on the entries.
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
from pramkit.design.dp.optimal import dp_optimal_for_column
from pramkit.errors import PramkitError
from pramkit.estimate import (
    EstimationWarning,
    estimate_table,
    identifiability,
    mle_estimate,
    moment_estimate,
    singular,
)
from pramkit.estimate.covariance import CountCovariance
from pramkit.estimate.identifiability import IdentifiabilityResult, estimability, largest_dense_part
from pramkit.estimate.singular import IdentifiableCovariance
from pramkit.io import read_table


def dense_rr(categories: list, epsilon: float) -> PramMatrix:
    """Randomized response stored densely (it is built compactly, as form (8))."""
    m = randomized_response(categories, epsilon)
    return PramMatrix(m.matrix, m.categories, m.provenance)


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


@pytest.mark.parametrize("batch", [singular.BATCH_ENTRIES, 1, 50])
@pytest.mark.parametrize("kind", ["multinomial", "pram"])
def test_factored_covariance_matches_the_dense_pseudo_inverse(kind, batch, monkeypatch):
    """A singular axis crossed with an invertible one and an unperturbed one: the
    variances of identifiable quantities against ``n g^T F^+ g - ...`` with the
    dense Fisher information ``F = M_K diag(1 / lam) M_K^T`` of the whole table;
    the blocks of the unperturbed cells taken all at once, one by one, or a few at a time."""
    monkeypatch.setattr(singular, "BATCH_ENTRIES", batch)
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
    # a stack of quantities at once: random ones projected on the identifiable space (with the dense
    # projector, made here), and random ones as they are (not identifiable)
    projector = big @ np.linalg.pinv(big)
    drawn = rng.normal(size=(7, *shape))
    inside = (drawn.reshape(7, -1) @ projector).reshape(drawn.shape)
    stacked = cov.variances(np.concatenate([inside, drawn]))
    assert stacked[:7] == pytest.approx([dense_variance(g.ravel()) for g in inside], rel=1e-6)
    assert np.isnan(stacked[7:]).all()


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
    from pramkit.design.dp.variance import dp_min_variance
    from pramkit.design.matrix_design import MAX_ESTIMABILITY_CATEGORIES, design_matrix, estimability_warnings

    rr_tiny = randomized_response([0, 1, 2], 1e-11)                  # condition number 1/(a - b) ~ 3e11
    (sentence,) = estimability_warnings(rr_tiny)
    assert "ill-conditioned" in sentence and "condition number 3e+11" in sentence
    assert "objective 'variance'" in sentence
    # the variance-optimal design at such a budget is the same matrix: the remedy is a larger epsilon
    (sentence,) = estimability_warnings(dp_min_variance(None, 1e-11, categories=[0, 1]))
    assert "ill-conditioned" in sentence and "larger epsilon" in sentence
    assert estimability_warnings(randomized_response([0, 1, 2], 1.0)) == []
    big = dense_rr(list(range(MAX_ESTIMABILITY_CATEGORIES + 1)), 1.0)
    (sentence,) = estimability_warnings(big)
    assert "not checked" in sentence
    # the --probs mode carries the warning: p = (0.05, 0.05, 0.9) at epsilon 1 gives two uniform rows
    d = design_matrix([0.05, 0.05, 0.9], epsilon=1.0)
    assert np.abs(d.matrix.matrix[0] - d.matrix.matrix[1]).max() <= 1e-15
    assert any("cannot separate" in w for w in d.warnings)
    assert not any("cannot separate" in w for w in
                   design_matrix([0.05, 0.05, 0.9], epsilon=1.0, options={"objective": "variance"}).warnings)


# -- estimability without the SVD: form (8) in O(S), block-diagonal matrices block by block ---------

def form8_from_d(d: np.ndarray) -> PramMatrix:
    """The row-stochastic form (8) matrix ``diag(d) + w 1^T`` with ``w = (1 - d) / S``
    (``q = d + w``); ``d_k = 0`` is a uniform row."""
    w = (1 - d) / d.size
    return PramMatrix.form8(d + w, w)


def form8_case(kind: str, s: int, rng: np.random.Generator) -> np.ndarray:
    """d for a random form (8) matrix of S categories: generic (non-negative entries need
    ``-1/(S-1) <= d_k <= 1``), with one or several uniform rows, with two nearly uniform rows,
    singular or nearly so through ``sum_k 1/d_k = 0`` (the determinant lemma's factor
    ``1 + sum_k w_k/d_k = sum_k (1/d_k) / S``), or randomized response near epsilon 0."""
    d = rng.uniform(-1 / (s - 1), 1, s)
    if kind == "one uniform row":
        d[rng.integers(s)] = 0
    elif kind == "uniform rows":
        d[rng.choice(s, int(rng.integers(2, min(s, 6) + 1)), replace=False)] = 0
    elif kind == "nearly uniform rows":
        d[rng.choice(s, 2, replace=False)] = rng.choice([1e-9, 1e-12, 1e-15]) * rng.uniform(0.5, 2, 2)
    elif kind == "sum of 1/d near 0":   # d_0 = -1 / sum_{k>0} 1/d_k >= -0.9 / (S - 1) as d_k <= 0.9: q_0 >= 0
        d = rng.uniform(0.2, 0.9, s)
        d[0] = -1 / np.sum(1 / d[1:]) * (1 + rng.choice([0.0, 1e-12, 1e-9, 1e-6, 1e-3]))
    elif kind == "randomized response near epsilon 0":
        d = np.full(s, rng.choice([1e-6, 1e-9, 1e-11])) * rng.uniform(1, 1.001, s)
    return d


def assert_same_verdict(res, dense: np.ndarray, reference) -> None:
    """The O(S) verdict against NumPy on the dense matrix: rank by ``matrix_rank``, the 2-norm condition
    number by ``cond`` (to NumPy's own accuracy: its smallest singular value is off by up to about
    ``S eps s_max``), and the groups against the SVD's."""
    size = dense.shape[0]
    assert res.rank == np.linalg.matrix_rank(dense)
    if res.rank == size:
        cond = np.linalg.cond(dense, 2)
        assert res.condition_number == pytest.approx(cond, rel=1e-9 + 50 * size * np.finfo(float).eps * cond)
    else:
        assert res.condition_number == np.inf
    assert res.status == reference.status
    assert ([(g.indices, g.categories, g.free_directions, g.identical_rows) for g in res.groups]
            == [(g.indices, g.categories, g.free_directions, g.identical_rows) for g in reference.groups])


@pytest.mark.parametrize("kind", ["generic", "one uniform row", "uniform rows", "nearly uniform rows",
                                  "sum of 1/d near 0", "randomized response near epsilon 0"])
def test_form8_verdict_matches_numpy(kind):
    rng = np.random.default_rng(sum(map(ord, kind)))
    statuses = set()
    for s in [2, 3, 4, 7, *rng.integers(8, 301, size=12)]:
        m = form8_from_d(form8_case(kind, int(s), rng))
        res = estimability(m)
        assert m.is_compact and not isinstance(res, IdentifiabilityResult)   # not the SVD
        assert_same_verdict(res, m.matrix, identifiability(m.matrix))
        statuses.add(res.status)
    expected = {"generic": {"identifiable"}, "one uniform row": {"identifiable"}, "uniform rows": {"singular"}}
    assert statuses == expected.get(kind, statuses)
    if kind in ("nearly uniform rows", "sum of 1/d near 0"):
        assert len(statuses) >= 2   # the cases cover more than one verdict


def test_form8_uniform_rows_are_the_group():
    """z >= 2 uniform rows: M^T v = 0 iff v lives on them and sums to zero, so the rank is
    S - z + 1 (checked by NumPy) and they form one group with z - 1 free directions."""
    d = np.linspace(0.2, 0.9, 40)
    d[[3, 17, 30]] = 0
    m = form8_from_d(d)
    assert np.linalg.matrix_rank(m.matrix) == 38
    res = estimability(m)
    assert res.rank == 38
    (group,) = res.groups
    assert group.indices == (3, 17, 30) and group.free_directions == 2 and group.identical_rows
    assert "only their total can be estimated" in res.message
    d[[17, 30]] = 0.5                                  # one uniform row: det M = w_3 prod_{j != 3} d_j != 0
    assert estimability(form8_from_d(d)).status == "identifiable"


def test_form8_randomized_response_of_any_size():
    """Randomized response ``M = (q - w) I + w J`` is symmetric with eigenvalues ``q + (S - 1) w``
    and ``q - w`` (S - 1 times): its condition number is their ratio, at 100 000 categories as at 3;
    when ``q - w`` is at most NumPy's rank tolerance ``s_max S eps`` its rank is 1."""
    from pramkit.design.matrix_design import estimability_warnings
    for s, keep_excess in [(3, 0.3), (100_000, 0.3), (100_000, 5e-11), (100_000, 1e-12)]:
        m = PramMatrix.from_diagonal(np.full(s, 1 / s + keep_excess))
        q, w = m.diagonal[0], m.form8_w[0]
        top, low = q + (s - 1) * w, q - w
        res = estimability(m)
        if low <= top * s * np.finfo(float).eps:
            assert res.status == "singular" and res.rank == 1
            assert [g.indices for g in res.groups] == [tuple(range(s))]
            continue
        assert res.rank == s
        assert res.condition_number == pytest.approx(top / low, rel=1e-12)
        if top / low <= 1e10:
            assert res.status == "identifiable" and estimability_warnings(m) == []
        else:
            assert res.status == "ill-conditioned"
            (sentence,) = estimability_warnings(m)
            assert f"condition number {top / low:.3g} > 1e+10" in sentence
            assert "nearly linearly dependent" in sentence and "not checked" not in sentence


def test_form8_uniform_rows_at_100000_categories():
    """Rows kept with probability 1/S are uniform, hence identical (checked on the entries): the
    warning names them instead of saying the matrix was not checked."""
    from pramkit.design.matrix_design import MAX_ESTIMABILITY_CATEGORIES, estimability_warnings
    s = 100_000
    assert s > MAX_ESTIMABILITY_CATEGORIES
    q = np.full(s, 0.4)
    q[[5, 70_000, 99_999]] = 1 / s
    m = PramMatrix.from_diagonal(q, [f"c{k}" for k in range(s)])
    for k in (70_000, 99_999):   # row k against row 5: columns 5, k and any other
        assert max(abs(m.diagonal[5] - m.form8_w[k]), abs(m.form8_w[5] - m.diagonal[k]),
                   abs(m.form8_w[5] - m.form8_w[k])) <= 1e-15
    res = estimability(m)
    assert res.singular and res.rank <= s - 2   # three identical rows
    assert [g.categories for g in res.groups] == [("c5", "c70000", "c99999")]
    (sentence,) = estimability_warnings(m)
    assert "categories c5, c70000 and c99999 have identical rows" in sentence and "cannot separate" in sentence


def test_dp_optimal_design_of_100000_categories_is_checked():
    from pramkit.design.dp.optimal import dp_optimal
    from pramkit.design.matrix_design import estimability_warnings
    s = 100_000
    p = 1 / np.arange(1, s + 1) ** 1.1
    m = dp_optimal(p / p.sum(), 1.0)
    assert m.is_compact and m.size == s
    res = estimability(m)
    assert res.status in ("identifiable", "ill-conditioned", "singular") and 1 <= res.condition_number
    assert not any("not checked" in w for w in estimability_warnings(m))


def random_blocks(rng: np.random.Generator, singular: bool) -> PramMatrix:
    """A block-diagonal matrix of 1 to 5 blocks, compact (form (8), with uniform rows when
    ``singular``) or dense (with two identical rows when ``singular``), its categories shuffled,
    sometimes nested (a block that is itself block-diagonal)."""
    parts = []
    for b in range(int(rng.integers(1, 6))):
        s = int(rng.integers(1, 60))
        labels = [f"b{b}:{k}" for k in range(s)]
        if rng.random() < 0.3:
            a = 0.5 * rng.dirichlet(np.ones(s), size=s) + 0.5 * np.eye(s)
            if singular and s >= 2 and rng.random() < 0.5:
                a[1] = a[0]
            parts.append(PramMatrix(a, labels))
        elif s == 1:
            parts.append(PramMatrix.identity(labels))
        else:
            d = rng.uniform(-1 / (s - 1), 1, s)
            if singular and rng.random() < 0.5:
                d[rng.choice(s, 2, replace=False)] = 0
            w = (1 - d) / s
            parts.append(PramMatrix.form8(d + w, w, labels))
    if len(parts) >= 3 and rng.random() < 0.5:
        parts = [PramMatrix.block_diagonal(parts[:2]), *parts[2:]]
    cats = [c for p in parts for c in p.categories]
    return PramMatrix.block_diagonal(parts, [cats[i] for i in rng.permutation(len(cats))])


@pytest.mark.parametrize("singular", [False, True])
def test_block_diagonal_verdict_matches_the_dense_matrix(singular):
    rng = np.random.default_rng(40 + singular)
    statuses = set()
    for _ in range(25):
        m = random_blocks(rng, singular)
        res = estimability(m)
        dense = m.matrix
        assert_same_verdict(res, dense, identifiability(PramMatrix(dense, m.categories)))
        statuses.add(res.status)
    assert statuses == ({"identifiable", "singular"} if singular else {"identifiable"})


def test_block_diagonal_ill_conditioned_blocks():
    """Randomized response near epsilon 0 as some blocks: the nearly dependent rows of each such block
    are a group of their own, the condition number is that of the whole."""
    rng = np.random.default_rng(12)
    for _ in range(10):
        parts = []
        for b in range(int(rng.integers(2, 5))):
            s = int(rng.integers(2, 40))
            d = (np.full(s, 1e-11) * rng.uniform(1, 1.001, s) if rng.random() < 0.5
                 else rng.uniform(0.1, 1, s))
            w = (1 - d) / s
            parts.append(PramMatrix.form8(d + w, w, [f"b{b}:{k}" for k in range(s)]))
        parts.append(PramMatrix([[0.8, 0.2], [0.3, 0.7]], ["x", "y"]))
        m = PramMatrix.block_diagonal(parts)
        dense = m.matrix
        assert_same_verdict(estimability(m), dense, identifiability(PramMatrix(dense, m.categories)))


def test_many_small_blocks():
    """5000 strata of five categories and 1000 kept codes: the singular values
    are those of the distinct blocks (NumPy on each), so the condition number is the largest s_max
    over the smallest s_min; a stratum with two uniform rows makes the whole singular."""
    from pramkit.design.matrix_design import estimability_warnings
    kinds = [np.array([0.9, 0.8, 0.7, 0.6, 0.5]), np.array([0.3, 0.95, 0.5, 0.5, 0.6])]
    strata = [PramMatrix.from_diagonal(kinds[b % 2], [(b, k) for k in range(5)]) for b in range(5000)]
    kept = [PramMatrix.identity([f"kept{k}"]) for k in range(1000)]
    m = PramMatrix.block_diagonal(strata + kept)
    values = [np.linalg.svd(PramMatrix.from_diagonal(q).matrix, compute_uv=False) for q in kinds] + [np.ones(1)]
    res = estimability(m)
    assert res.rank == m.size == 26_000
    assert res.condition_number == pytest.approx(max(v[0] for v in values) / min(v[-1] for v in values), rel=1e-10)
    assert estimability_warnings(m) == []
    uniform = PramMatrix.from_diagonal([0.2, 0.2, 0.9, 0.9, 0.9], [("u", k) for k in range(5)])
    res = estimability(PramMatrix.block_diagonal(strata + [uniform] + kept))
    assert res.rank == m.size + 5 - 1 and [g.categories for g in res.groups] == [(("u", 0), ("u", 1))]


def test_large_dense_block_is_not_checked():
    from pramkit.design.matrix_design import MAX_ESTIMABILITY_CATEGORIES, estimability_warnings

    big = dense_rr(list(range(MAX_ESTIMABILITY_CATEGORIES + 1)), 1.0)
    m = PramMatrix.block_diagonal([big, PramMatrix.identity(["kept"])])
    assert largest_dense_part(m) == MAX_ESTIMABILITY_CATEGORIES + 1
    (sentence,) = estimability_warnings(m)
    assert "not checked" in sentence and f"{MAX_ESTIMABILITY_CATEGORIES + 1}-category dense block" in sentence


def test_estimability_to_dict():
    d = np.array([0.0, 0.5, 0.0, 0.7])
    out = json.loads(json.dumps(to_jsonable(estimability(form8_from_d(d)).to_dict()), allow_nan=False))
    assert out["status"] == "singular" and out["rank"] == 3 and "singular_values" not in out
    assert out["groups"] == [{"categories": [0, 2], "indices": [0, 2], "free_directions": 1, "identical_rows": True}]
    assert out["identifiable_categories"] == [1, 3]
    with pytest.raises(PramkitError, match="max_condition"):
        estimability(form8_from_d(d), max_condition=1)
