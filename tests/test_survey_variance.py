"""Design-based covariance of weighted cell counts (:mod:`pramkit.estimate.survey`).

The Taylor (linearised) covariances and the replicate covariances are compared
with samplics (an independent implementation) on laeken's eusilc file: weights
rb050, strata db040 (the nine federal states), PSUs db030 (households),
categories pb220a (citizenship; its missing values are a cell of their own,
``"missing"``, in both).  The single-PSU rule ``center`` is compared with a
by-hand computation of R survey's ``lonely.psu = "adjust"``, and the ACS's
successive difference replication with its formula written out in the test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import SDC_DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.errors import DataError, ParameterError
from pramkit.estimate.survey import CellTotals, SurveyDesign, linearized_covariance, replicate_covariance, stratum_parts

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)     # samplics announces that it is archived
    samplics = pytest.importorskip("samplics")
from samplics.estimation import ReplicateEstimator, TaylorEstimator  # noqa: E402
from samplics.utils.types import PopParam, RepMethod, SinglePSUEst  # noqa: E402
from samplics.weighting import ReplicateWeight  # noqa: E402

#: samplics 0.6 calls pandas with arguments pandas 3 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")

RTOL = 1e-8
CATEGORIES = ["AT", "EU", "Other", "missing"]      # the order of samplics' dummies (sorted)
#: Uneven chunk sizes: the file is streamed, chunks cut through strata and PSUs.
CHUNKS = [0, 1000, 1001, 5000, 9000, 14827]


@pytest.fixture(scope="module")
def eusilc() -> pd.DataFrame:
    if not SDC_DATA.is_dir():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(SDC_DATA / "eusilc_laeken.csv", usecols=["db030", "db040", "rb050", "pb220a"])
    data["y"] = data["pb220a"].fillna("missing")
    data["cell"] = pd.Categorical(data["y"], categories=CATEGORIES).codes.astype(np.int64)
    psus = data.groupby("db040")["db030"].transform("nunique")
    records = data.groupby("db040")["db030"].transform("size")
    rank = data["db040"].map({s: i for i, s in enumerate(sorted(data["db040"].unique()))})
    data["fraction"] = 0.01 * (rank + 1)                 # a sampling fraction per stratum
    data["households"] = 20.0 * psus + rank              # a population count of PSUs per stratum
    data["persons"] = 50.0 * records + rank              # a population count of records per stratum
    return data


def _totals(data: pd.DataFrame, design: SurveyDesign, chunks=CHUNKS, replicates=None) -> CellTotals:
    totals = CellTotals(len(CATEGORIES), design, n_replicates=0 if replicates is None else replicates.shape[1])
    for a, b in zip(chunks[:-1], chunks[1:]):
        reps = None if replicates is None else replicates[a:b]
        totals.add_frame(data.iloc[a:b], data["cell"].to_numpy()[a:b], replicates=reps)
    return totals


def _samplics_cov(est) -> np.ndarray:
    return np.array([[est.covariance[a][b] for b in CATEGORIES] for a in CATEGORIES])


def _proportion_jacobian(t: np.ndarray) -> np.ndarray:
    """d(t / sum t) / dt = (I - p 1^T) / W."""
    w = t.sum()
    return (np.eye(t.size) - np.outer(t / w, np.ones(t.size))) / w


#: (our design, samplics keyword arguments as functions of the data)
TAYLOR_CASES = {
    "strata and PSUs": (SurveyDesign("rb050", strata="db040", psu="db030"),
                        lambda d: dict(stratum=d["db040"].to_numpy(), psu=d["db030"].to_numpy())),
    "strata, PSUs, fpc as fractions": (
        SurveyDesign("rb050", strata="db040", psu="db030", fpc="fraction"),
        lambda d: dict(stratum=d["db040"].to_numpy(), psu=d["db030"].to_numpy(),
                       fpc=1 - d["fraction"].to_numpy())),
    "strata, PSUs, fpc as PSU counts": (
        SurveyDesign("rb050", strata="db040", psu="db030", fpc="households"),
        lambda d: dict(stratum=d["db040"].to_numpy(), psu=d["db030"].to_numpy(),
                       fpc=1 - d.groupby("db040")["db030"].transform("nunique").to_numpy() / d["households"].to_numpy())),
    "records as PSUs": (SurveyDesign("rb050", strata="db040"), lambda d: dict(stratum=d["db040"].to_numpy())),
    "records as PSUs, fpc as counts": (
        SurveyDesign("rb050", strata="db040", fpc="persons"),
        lambda d: dict(stratum=d["db040"].to_numpy(),
                       fpc=1 - d.groupby("db040")["db030"].transform("size").to_numpy() / d["persons"].to_numpy())),
    "PSUs, no strata": (SurveyDesign("rb050", psu="db030"), lambda d: dict(psu=d["db030"].to_numpy())),
    "weights only": (SurveyDesign("rb050"), lambda d: dict()),
}


@pytest.mark.parametrize("case", list(TAYLOR_CASES))
def test_totals_and_their_covariance_equal_samplics(eusilc, case) -> None:
    design, kwargs = TAYLOR_CASES[case]
    totals = _totals(eusilc, design)
    sigma = linearized_covariance(totals)
    est = TaylorEstimator(PopParam.total)
    est.estimate(y=eusilc["y"].to_numpy(), samp_weight=eusilc["rb050"].to_numpy(), as_factor=True, **kwargs(eusilc))
    np.testing.assert_allclose(totals.total, [est.point_est[c] for c in CATEGORIES], rtol=1e-12)
    np.testing.assert_allclose(sigma, _samplics_cov(est), rtol=RTOL)
    np.testing.assert_allclose(np.sqrt(np.diag(sigma)), [est.stderror[c] for c in CATEGORIES], rtol=RTOL)


@pytest.mark.parametrize("case", list(TAYLOR_CASES))
def test_proportions_and_their_covariance_equal_samplics(eusilc, case) -> None:
    design, kwargs = TAYLOR_CASES[case]
    totals = _totals(eusilc, design)
    jac = _proportion_jacobian(totals.total)
    cov = jac @ linearized_covariance(totals) @ jac.T
    est = TaylorEstimator(PopParam.prop)
    est.estimate(y=eusilc["y"].to_numpy(), samp_weight=eusilc["rb050"].to_numpy(), **kwargs(eusilc))
    np.testing.assert_allclose(totals.total / totals.total.sum(), [est.point_est[c] for c in CATEGORIES], rtol=1e-12)
    np.testing.assert_allclose(cov, _samplics_cov(est), rtol=RTOL, atol=1e-12 * np.abs(cov).max())
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), [est.stderror[c] for c in CATEGORIES], rtol=RTOL)


def test_the_stratum_parts_add_up_with_their_fractions(eusilc) -> None:
    design = SurveyDesign("rb050", strata="db040", psu="db030", fpc="households")
    totals = _totals(eusilc, design)
    parts = stratum_parts(totals)
    n = eusilc.groupby("db040")["db030"].nunique()
    assert {p.label: p.n_psu for p in parts} == n.to_dict()
    pop = eusilc.groupby("db040")["households"].first()
    for p in parts:
        assert p.fraction == n[p.label] / pop[p.label]
    np.testing.assert_allclose(sum((1 - p.fraction) * p.covariance for p in parts), linearized_covariance(totals),
                               rtol=1e-14)


def test_a_stratum_sampled_whole_contributes_nothing(eusilc) -> None:
    """fpc 1 in a stratum: a census there (fraction 1, or one PSU out of one), also when it is lonely."""
    data = _lonely_file(eusilc)
    data["f"] = np.where(data["db040"] == "Burgenland", 1.0, 0.0)
    design = SurveyDesign("rb050", strata="db040", psu="db030", fpc="f")
    with_census = linearized_covariance(_totals(data, design, chunks=[0, 5000, len(data)]))
    rest = data[data["db040"] != "Burgenland"].reset_index(drop=True)
    without = linearized_covariance(_totals(rest, design, chunks=[0, len(rest)]))
    np.testing.assert_array_equal(with_census, without)
    parts = stratum_parts(_totals(eusilc.assign(f=1.0), design))
    assert all(p.fraction == 1 for p in parts)


def _lonely_file(eusilc: pd.DataFrame) -> pd.DataFrame:
    """eusilc with Burgenland reduced to its first household: a stratum with a single PSU."""
    burgenland = eusilc["db040"] == "Burgenland"
    first = eusilc.loc[burgenland, "db030"].iloc[0]
    return eusilc[~burgenland | (eusilc["db030"] == first)].reset_index(drop=True)


def test_a_single_psu_is_refused_by_default_naming_its_stratum(eusilc) -> None:
    data = _lonely_file(eusilc)
    totals = _totals(data, SurveyDesign("rb050", strata="db040", psu="db030"), chunks=[0, 5000, len(data)])
    with pytest.raises(ParameterError, match="stratum 'Burgenland' has a single PSU"):
        linearized_covariance(totals)


def test_a_single_psu_taken_with_certainty_equals_samplics_skip(eusilc) -> None:
    data = _lonely_file(eusilc)
    design = SurveyDesign("rb050", strata="db040", psu="db030", single_psu="certainty")
    sigma = linearized_covariance(_totals(data, design, chunks=[0, 5000, len(data)]))
    est = TaylorEstimator(PopParam.total)
    est.estimate(y=data["y"].to_numpy(), samp_weight=data["rb050"].to_numpy(), stratum=data["db040"].to_numpy(),
                 psu=data["db030"].to_numpy(), as_factor=True, single_psu=SinglePSUEst.skip)
    np.testing.assert_allclose(sigma, _samplics_cov(est), rtol=RTOL)


def _adjust_by_hand(y: np.ndarray, strata: np.ndarray, psu: np.ndarray) -> np.ndarray:
    """R survey's ultimate-cluster variance with lonely.psu = "adjust", PSU by PSU in plain loops:
    a stratum of several PSUs is centred on its own mean, a lonely PSU on the mean of all PSU totals."""
    psu_totals: dict = {}
    for row, s, p in zip(y, strata, psu):
        psu_totals.setdefault(s, {}).setdefault(p, np.zeros(y.shape[1]))
        psu_totals[s][p] = psu_totals[s][p] + row
    n_all = sum(len(v) for v in psu_totals.values())
    grand = y.sum(axis=0) / n_all
    out = np.zeros((y.shape[1], y.shape[1]))
    for by_psu in psu_totals.values():
        rows = np.array(list(by_psu.values()))
        if len(rows) == 1:
            out += np.outer(rows[0] - grand, rows[0] - grand)
        else:
            d = rows - rows.mean(axis=0)
            out += len(rows) / (len(rows) - 1) * sum(np.outer(r, r) for r in d)
    return out


def test_a_single_psu_centred_on_the_grand_mean_equals_the_formula(eusilc) -> None:
    data = _lonely_file(eusilc)
    design = SurveyDesign("rb050", strata="db040", psu="db030", single_psu="center")
    sigma = linearized_covariance(_totals(data, design, chunks=[0, 5000, len(data)]))
    y = np.eye(len(CATEGORIES))[data["cell"].to_numpy()] * data["rb050"].to_numpy()[:, None]
    np.testing.assert_allclose(sigma, _adjust_by_hand(y, data["db040"].to_numpy(), data["db030"].to_numpy()),
                               rtol=1e-10)


def test_a_single_psu_centred_reproduces_r_survey_on_a_small_design() -> None:
    """Three strata of 2, 1 and 3 PSUs (the single PSU lonely); the weighted mean of y and its
    standard error by R survey 4.5 (svymean, options(survey.lonely.psu = "adjust")):
    4.285714285714286 and 0.987121477399568.  The mean is linear in the weighted counts of
    the values of y, with gradient (v - mean) / W."""
    strata = np.array([1, 1, 1, 2, 2, 3, 3, 3, 3])
    psu = np.array([11, 11, 12, 21, 21, 31, 32, 33, 33])
    w = np.array([1.0, 2.0, 1.5, 1.0, 0.5, 2.0, 1.0, 1.0, 0.5])
    y = np.array([3, 5, 4, 10, 8, 1, 2, 6, 4])
    values = np.unique(y)
    totals = CellTotals(values.size, SurveyDesign("w", strata="s", psu="p", single_psu="center"))
    totals.add(np.searchsorted(values, y), w, strata=strata, psu=psu)
    t = totals.total
    mean = values @ t / t.sum()
    gradient = (values - mean) / t.sum()
    assert mean == pytest.approx(4.285714285714286, rel=1e-14)
    assert np.sqrt(gradient @ linearized_covariance(totals) @ gradient) == pytest.approx(0.987121477399568, rel=1e-12)


def test_records_as_psus_with_a_single_record_stratum(eusilc) -> None:
    """Without PSUs a stratum of one record is lonely; centred, it equals the formula with every
    record its own PSU."""
    data = eusilc.copy()
    data.loc[0, "db040"] = "alone"
    design = SurveyDesign("rb050", strata="db040", single_psu="center")
    sigma = linearized_covariance(_totals(data, design))
    y = np.eye(len(CATEGORIES))[data["cell"].to_numpy()] * data["rb050"].to_numpy()[:, None]
    np.testing.assert_allclose(sigma, _adjust_by_hand(y, data["db040"].to_numpy(), np.arange(len(data))),
                               rtol=1e-9)


# --------------------------------------------------------------------------------------------
# Replicates


def _samplics_replicates(data: pd.DataFrame, rw: ReplicateWeight, stratified: bool) -> np.ndarray:
    """samplics' replicate weights of ``data``, (n, R), matched to its records by (stratum, PSU).

    samplics returns its rows sorted by stratum, so its replicate factors are read per
    (stratum, PSU) and multiplied by the records' own weights here."""
    strata = data["db040"].to_numpy() if stratified else None
    out = rw.replicate(samp_weight=data["rb050"].to_numpy(), psu=data["db030"].to_numpy(), stratum=strata,
                       rep_coefs=True, psu_varname="db030", str_varname="db040")
    keys = ["db040", "db030"] if stratified else ["db030"]
    rep_cols = [c for c in out.columns if c not in keys and c != "_samp_weight"]
    factors = out[keys + rep_cols].drop_duplicates(subset=keys)
    matched = data[keys].merge(factors, on=keys, how="left", validate="many_to_one")
    return matched[rep_cols].to_numpy() * data["rb050"].to_numpy()[:, None]


@pytest.fixture(scope="module")
def two_states(eusilc) -> pd.DataFrame:
    """Burgenland and Vorarlberg: 496 households, a jackknife of one replicate per household."""
    return eusilc[eusilc["db040"].isin(["Burgenland", "Vorarlberg"])].reset_index(drop=True)


def _replicate_check(data, reps, method, rep_coefs, mse, ours_kwargs) -> None:
    """Totals and proportions of every category: our replicate covariance against samplics'."""
    design = SurveyDesign("rb050", strata="db040", psu="db030")
    n = len(data)
    totals = _totals(data, design, chunks=[0, n // 3, n], replicates=reps)
    cells = data["cell"].to_numpy()
    direct = np.stack([np.bincount(cells, reps[:, r], len(CATEGORIES)) for r in range(reps.shape[1])])
    np.testing.assert_allclose(totals.replicate_totals, direct, rtol=1e-12)
    cov_t = replicate_covariance(totals.total, totals.replicate_totals, method, mse=mse, **ours_kwargs)
    t_r = totals.replicate_totals
    cov_p = replicate_covariance(totals.total / totals.total.sum(), t_r / t_r.sum(axis=1, keepdims=True), method,
                                 mse=mse, **ours_kwargs)
    w = data["rb050"].to_numpy()
    for k, c in enumerate(CATEGORIES):
        est = ReplicateEstimator(method=rep_method(method), param=PopParam.total)
        est.estimate(y=(cells == k).astype(float), samp_weight=w, rep_weights=reps, rep_coefs=rep_coefs,
                     conservative=mse)
        assert cov_t[k, k] == pytest.approx(est.variance, rel=RTOL)
    est = ReplicateEstimator(method=rep_method(method), param=PopParam.prop)
    est.estimate(y=data["y"].to_numpy(), samp_weight=w, rep_weights=reps, rep_coefs=rep_coefs, conservative=mse)
    np.testing.assert_allclose(np.diag(cov_p), [est.variance[c] for c in CATEGORIES], rtol=RTOL)


def rep_method(method: str) -> RepMethod:
    return {"jk1": RepMethod.jackknife, "jkn": RepMethod.jackknife, "bootstrap": RepMethod.bootstrap}[method]


@pytest.mark.parametrize("mse", [True, False])
def test_jk1_delete_one_psu_equals_samplics(two_states, mse) -> None:
    rw = ReplicateWeight(RepMethod.jackknife, strat=False)
    reps = _samplics_replicates(two_states, rw, stratified=False)
    r = reps.shape[1]
    assert r == two_states["db030"].nunique()
    _replicate_check(two_states, reps, "jk1", np.full(r, (r - 1) / r), mse, {})


def test_jkn_stratified_jackknife_equals_samplics(two_states) -> None:
    rw = ReplicateWeight(RepMethod.jackknife, strat=True)
    reps = _samplics_replicates(two_states, rw, stratified=True)
    rscales = np.array(rw.rep_coefs)
    assert sorted(set(np.round(rscales, 12))) == sorted({round(225 / 226, 12), round(269 / 270, 12)})
    _replicate_check(two_states, reps, "jkn", rscales, True, {"rscales": rscales})


@pytest.mark.parametrize("mse", [True, False])
def test_bootstrap_equals_samplics(eusilc, mse) -> None:
    rw = ReplicateWeight(RepMethod.bootstrap, strat=True, nb_reps=40, rand_seed=20240601)
    reps = _samplics_replicates(eusilc, rw, stratified=True)
    assert reps.shape == (len(eusilc), 40)
    _replicate_check(eusilc, reps, "bootstrap", np.full(40, 1 / 40), mse, {})


def _paley_hadamard_80() -> np.ndarray:
    """A Hadamard matrix of order 80 (Paley's first construction, q = 79 = 3 mod 4)."""
    q = 79
    residues = {(i * i) % q for i in range(1, q)}
    chi = np.array([0] + [1 if k in residues else -1 for k in range(1, q)])
    jacobsthal = chi[(np.arange(q)[None, :] - np.arange(q)[:, None]) % q]
    h = np.zeros((q + 1, q + 1), dtype=int)
    h[0, 1:] = 1
    h[1:, 0] = -1
    h[1:, 1:] = jacobsthal
    return h + np.eye(q + 1, dtype=int)


def test_sdr_of_the_acs_equals_its_formula(eusilc) -> None:
    """80 successive-difference replicates built as the American Community Survey builds them:
    the households in file order, household k takes rows k and k+1 (mod 80) of a Hadamard
    matrix, factor 1 + 2^-1.5 H[k, r] - 2^-1.5 H[k+1, r]; variance 4/80 sum_r (X_r - X_0)^2."""
    h = _paley_hadamard_80()
    assert (h @ h.T == 80 * np.eye(80)).all()
    k = pd.factorize(eusilc["db030"])[0]
    factors = 1 + 2 ** -1.5 * h[k % 80] - 2 ** -1.5 * h[(k + 1) % 80]
    reps = factors * eusilc["rb050"].to_numpy()[:, None]
    totals = _totals(eusilc, SurveyDesign("rb050", strata="db040", psu="db030"), replicates=reps)
    cov = replicate_covariance(totals.total, totals.replicate_totals, "sdr")
    cells = eusilc["cell"].to_numpy()
    for c in range(len(CATEGORIES)):
        x0 = eusilc["rb050"].to_numpy()[cells == c].sum()
        xr = [reps[cells == c, r].sum() for r in range(80)]
        assert cov[c, c] == pytest.approx(4 / 80 * sum((x - x0) ** 2 for x in xr), rel=1e-10)


def test_brr_and_fay_scale_by_hand() -> None:
    full = np.array([10.0, 5.0])
    reps = np.array([[9.0, 5.0], [11.0, 6.0], [12.0, 4.0], [8.0, 5.0]])
    d = reps - full
    np.testing.assert_allclose(replicate_covariance(full, reps, "brr"), d.T @ d / 4)
    np.testing.assert_allclose(replicate_covariance(full, reps, "fay", rho=0.5), d.T @ d / (4 * 0.25))
    m = reps - reps.mean(axis=0)
    np.testing.assert_allclose(replicate_covariance(full, reps, "brr", mse=False), m.T @ m / 4)


# --------------------------------------------------------------------------------------------
# The accumulator: chunking and order do not matter


records = st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n),            # cells
    st.lists(st.integers(0, 50), min_size=n, max_size=n),           # integer weights: exact sums
    st.lists(st.sampled_from("abc"), min_size=n, max_size=n),       # strata
    st.lists(st.integers(0, 3), min_size=n, max_size=n),            # PSUs (labels reused across strata)
    st.lists(st.integers(1, 9), min_size=n, max_size=n),            # a second... replicate weight seed
))


def _accumulate(cells, weights, strata, psu, reps, cuts, with_psu) -> CellTotals:
    design = SurveyDesign("w", strata="s", psu="p" if with_psu else None, single_psu="certainty")
    totals = CellTotals(5, design, n_replicates=2)
    bounds = [0, *sorted(cuts), len(cells)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        totals.add(cells[a:b], weights[a:b], strata=strata[a:b], psu=psu[a:b] if with_psu else None,
                   replicates=reps[a:b])
    return totals


def _by_psu(totals: CellTotals) -> dict:
    return {key: tuple(row) for key, row in totals.by_psu().items()}


@settings(max_examples=60, deadline=None)
@given(data=records, cut_seed=st.lists(st.integers(0, 60), max_size=5), order_seed=st.integers(0, 2 ** 32 - 1),
       with_psu=st.booleans())
def test_chunking_and_record_order_change_nothing(data, cut_seed, order_seed, with_psu) -> None:
    cells, weights, strata, psu, rep = (np.array(a) for a in data)
    cells = cells.astype(np.int64)
    weights = weights.astype(float)
    reps = np.stack([weights * rep, weights + rep], axis=1)
    if not weights.any():
        weights[0] = 1.0
    whole = _accumulate(cells, weights, strata, psu, reps, [], with_psu)
    cuts = [c % (len(cells) + 1) for c in cut_seed]
    chunked = _accumulate(cells, weights, strata, psu, reps, cuts, with_psu)
    order = np.random.default_rng(order_seed).permutation(len(cells))
    permuted = _accumulate(cells[order], weights[order], strata[order], psu[order], reps[order], cuts, with_psu)
    for other in (chunked, permuted):
        np.testing.assert_array_equal(other.total, whole.total)
        np.testing.assert_array_equal(other.replicate_totals, whole.replicate_totals)
        if with_psu:
            assert _by_psu(other) == _by_psu(whole)
        np.testing.assert_allclose(linearized_covariance(other), linearized_covariance(whole), rtol=1e-12,
                                   atol=1e-9)


# --------------------------------------------------------------------------------------------
# Bad input: one line, naming the column or the stratum


def _frame(**columns) -> pd.DataFrame:
    base = {"w": [1.0, 2.0, 3.0, 4.0], "s": ["a", "a", "b", "b"], "p": [1, 2, 1, 2], "f": [0.1, 0.1, 0.2, 0.2]}
    base.update(columns)
    return pd.DataFrame(base)


FULL = SurveyDesign("w", strata="s", psu="p", fpc="f")
CELLS = np.array([0, 1, 0, 1])

BAD_FRAMES = [
    (FULL, _frame(w=[1.0, None, 3.0, 4.0]), DataError, "column 'w' has 1 missing value(s), the first at row 2"),
    (FULL, _frame(w=[1.0, 2.0, np.nan, 4.0]), DataError, "column 'w' has 1 missing value(s), the first at row 3"),
    (FULL, _frame(w=[1.0, -2.0, 3.0, 4.0]), DataError, "column 'w' must hold finite values >= 0; row 2 holds -2.0"),
    (FULL, _frame(w=[1.0, np.inf, 3.0, 4.0]), DataError, "column 'w' must hold finite values >= 0; row 2"),
    (FULL, _frame(w=["1", "two", "3", "4"]), DataError, "column 'w' must be numeric; row 2 holds 'two'"),
    (FULL, _frame(w=[True, False, True, True]), DataError, "column 'w' must be numeric"),
    (FULL, _frame(s=["a", None, "b", "b"]), DataError, "column 's' has 1 missing value(s), the first at row 2"),
    (FULL, _frame(p=[1, 2, None, 2]), DataError, "column 'p' has 1 missing value(s), the first at row 3"),
    (FULL, _frame(f=[0.1, 0.2, 0.2, 0.2]), DataError, "column 'f' must be constant within a stratum; stratum 'a'"),
    (FULL, _frame(f=[-0.1, -0.1, 0.2, 0.2]), DataError, "column 'f' must hold finite values >= 0; row 1"),
    (FULL, _frame().drop(columns="p"), DataError, "column(s) ['p'] of the survey design are not in the data"),
]


@pytest.mark.parametrize("design, frame, kind, message", BAD_FRAMES, ids=[m[:40] for *_, m in BAD_FRAMES])
def test_bad_design_columns(design, frame, kind, message) -> None:
    with pytest.raises(kind) as info:
        CellTotals(2, design).add_frame(frame, CELLS)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def _covariance_of(design: SurveyDesign, frame: pd.DataFrame, cells=CELLS) -> np.ndarray:
    totals = CellTotals(2, design)
    totals.add_frame(frame, cells)
    return linearized_covariance(totals)


BAD_TOTALS = [
    (SurveyDesign("w"), _frame(w=[0.0] * 4), DataError, "every weight in column 'w' is zero"),
    (SurveyDesign("w", strata="s", psu="p"), _frame(p=[1, 2, 1, 1]), ParameterError,
     "stratum 'b' has a single PSU"),
    (SurveyDesign("w", strata="s", psu="p", fpc="f"), _frame(f=[1.5, 1.5, 3.0, 3.0]), DataError,
     "stratum 'a' has 2 PSUs, more than its population count 1.5 in column 'f'"),
    (SurveyDesign("w", strata="s"), _frame(s=["a", "a", "a", "b"]), ParameterError, "stratum 'b' has a single PSU"),
]


@pytest.mark.parametrize("design, frame, kind, message", BAD_TOTALS, ids=[m[:40] for *_, m in BAD_TOTALS])
def test_bad_totals(design, frame, kind, message) -> None:
    with pytest.raises(kind) as info:
        _covariance_of(design, frame)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


BAD_CALLS = [
    (lambda: SurveyDesign(""), ParameterError, "weights must name a column"),
    (lambda: SurveyDesign("w", strata=3), ParameterError, "strata must name a column or be None"),
    (lambda: SurveyDesign("w", single_psu="combine"), ParameterError, "single_psu must be one of"),
    (lambda: CellTotals(0, FULL), ParameterError, "n_cells must be a positive integer"),
    (lambda: CellTotals(2, FULL, n_replicates=-1), ParameterError, "n_replicates must be an integer >= 0"),
    (lambda: CellTotals(2, FULL).add(np.array([0, 2]), np.ones(2), strata=np.zeros(2), psu=np.zeros(2),
                                     fpc=np.zeros(2)), DataError, "cell code 2 at row 2 is not in [0, 2)"),
    (lambda: CellTotals(2, FULL).add(np.array([0.0, 1.0]), np.ones(2)), ParameterError,
     "cells must be a 1-D integer array"),
    (lambda: CellTotals(2, FULL).add(np.array([0, 1]), np.ones(2)), ParameterError,
     "strata: the design needs strata (column 's')"),
    (lambda: CellTotals(2, SurveyDesign("w")).add(np.array([0, 1]), np.ones(2), psu=np.ones(2)), ParameterError,
     "psu: the design has no psu"),
    (lambda: CellTotals(2, SurveyDesign("w"), n_replicates=3).add(np.array([0, 1]), np.ones(2)), ParameterError,
     "replicates: the design needs replicates"),
    (lambda: CellTotals(2, SurveyDesign("w"), n_replicates=3).add(np.array([0, 1]), np.ones(2),
                                                                  replicates=np.ones((2, 2))),
     ParameterError, "replicates must have shape (2, 3), got (2, 2)"),
    (lambda: CellTotals(2, SurveyDesign("w"), n_replicates=2).add(np.array([0, 1]), np.ones(2),
                                                                  replicates=np.array([[1.0, 1], [1, np.nan]])),
     DataError, "replicate weight 2 at row 2 is nan, not a finite number"),
    (lambda: linearized_covariance(CellTotals(2, FULL)), DataError, "no records were added"),
    (lambda: CellTotals(2, SurveyDesign("w")).by_psu(), ParameterError, "the design has no psu column"),
    (lambda: replicate_covariance(np.ones(2), np.ones((4, 2)), "jk2"), ParameterError, "method must be one of"),
    (lambda: replicate_covariance(np.ones(2), np.ones((6, 2)), "brr"), ParameterError,
     "method 'brr' needs a number of replicates that is a multiple of 4"),
    (lambda: replicate_covariance(np.ones(2), np.ones((79, 2)), "sdr"), ParameterError,
     "method 'sdr' needs a number of replicates that is a multiple of 4"),
    (lambda: replicate_covariance(np.ones(2), np.ones((1, 2)), "jk1"), ParameterError,
     "method 'jk1' needs at least 2 replicates, got 1"),
    (lambda: replicate_covariance(np.ones(2), np.ones((4, 2)), "fay"), ParameterError,
     "rho (the Fay coefficient) is given exactly with method 'fay', and it was not"),
    (lambda: replicate_covariance(np.ones(2), np.ones((4, 2)), "fay", rho=1.0), ParameterError,
     "rho (the Fay coefficient) must lie strictly between 0 and 1, got 1.0"),
    (lambda: replicate_covariance(np.ones(2), np.ones((4, 2)), "brr", rho=0.5), ParameterError,
     "rho (the Fay coefficient) is given exactly with method 'fay'"),
    (lambda: replicate_covariance(np.ones(2), np.ones((4, 2)), "jkn"), ParameterError,
     "rscales are given exactly with method 'jkn', and they were not"),
    (lambda: replicate_covariance(np.ones(2), np.ones((4, 2)), "jkn", rscales=[0.5] * 3), ParameterError,
     "rscales must be 4 finite numbers > 0"),
    (lambda: replicate_covariance(np.ones(3), np.ones((4, 2)), "jk1"), ParameterError,
     "full must be (C,) and replicates (R, C)"),
    (lambda: replicate_covariance(np.ones(2), np.full((4, 2), np.nan), "jk1"), ParameterError,
     "full and replicates must be finite"),
]


@pytest.mark.parametrize("call, kind, message", BAD_CALLS, ids=[m[:40] for *_, m in BAD_CALLS])
def test_bad_calls(call, kind, message) -> None:
    with pytest.raises(kind) as info:
        call()
    assert message in str(info.value)
    assert "\n" not in str(info.value)
