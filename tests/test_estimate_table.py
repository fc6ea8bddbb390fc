"""estimate_table and ``pramkit estimate``: tables from a released DataFrame or file.

Checked against: the array-level estimator on a table counted independently
with pandas.crosstab; hand-computed shares; a numerically differentiated
delta method on the dense covariance; the real sdcMicro test file.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pramkit import Manifest, PerturbedVariable, PramMatrix, SecretKey, perturb_codes
from pramkit.cli import main
from pramkit.codebook import encode
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.design.classic import randomized_response
from pramkit.errors import DataError, PramkitError
from pramkit.estimate import estimate_table, moment_estimate
from pramkit.io import read_table

PERTURBED = {"sex": 1.0, "age": 2.0}


@pytest.fixture(scope="module")
def release():
    """A census extract with sex and age perturbed by randomized response, race untouched."""
    original = census(n_rows=4000, seed=3)[["sex", "age", "race"]]
    key = SecretKey(bytes(range(32)), "test key")
    matrices = {v: randomized_response(list(CENSUS_VARIABLES[v]), e) for v, e in PERTURBED.items()}
    released = original.astype(str)
    for v, m in matrices.items():
        codes = perturb_codes(original[v].cat.codes.to_numpy(), m, key=key, variable=v)
        released[v] = np.asarray(m.categories, dtype=object)[codes]
    return original, released, Manifest.of(matrices)


def test_matches_array_estimator_on_crosstab(release):
    _, released, manifest = release
    res = estimate_table(released, manifest, ["sex", "age"], by="race")
    races = sorted(released["race"].unique())
    assert res.categories == (CENSUS_VARIABLES["sex"], CENSUS_VARIABLES["age"], tuple(races))
    assert res.perturbed == (True, True, False) and res.n == 4000 and res.dropped == 0
    tab = pd.crosstab([released["sex"], released["age"]], released["race"], dropna=False)
    tab = tab.reindex(index=pd.MultiIndex.from_product([CENSUS_VARIABLES["sex"], CENSUS_VARIABLES["age"]]),
                      columns=races, fill_value=0)
    u = tab.to_numpy().reshape(2, 9, len(races))
    ref = moment_estimate(u, [manifest["sex"].matrix, manifest["age"].matrix, None])
    assert res.table.counts == pytest.approx(ref.counts)
    assert res.table.se == pytest.approx(ref.se)
    assert res.proportion.sum(axis=(0, 1)) == pytest.approx(np.ones(len(races)))
    # an unperturbed by-variable: shares within race have the group size known exactly
    group = u.sum(axis=(0, 1))
    assert res.proportion == pytest.approx(ref.counts / group)
    assert res.proportion_se == pytest.approx(np.sqrt(ref.se**2 + ref.counts**2 / 4000 - ref.counts**2 / group) / group)


def test_frame_and_cells(release):
    _, released, manifest = release
    res = estimate_table(released, manifest, "sex")
    frame = res.to_frame()
    for col in ("sex", "category", "estimate", "se", "ci_low", "ci_high", "proportion", "proportion_se"):
        assert col in frame.columns
    assert list(frame["category"]) == ["male", "female"]
    assert frame["estimate"].sum() == pytest.approx(4000)
    assert (frame["ci_high"] - frame["ci_low"]).to_numpy() == pytest.approx(2 * 1.959964 * frame["se"].to_numpy(), rel=1e-6)
    assert frame["proportion"].to_numpy() == pytest.approx(frame["estimate"].to_numpy() / 4000)
    two = estimate_table(released, manifest, ["sex", "race"]).cells()
    assert isinstance(two[0]["category"], list) and len(two[0]["category"]) == 2


def test_share_and_difference(release):
    _, released, manifest = release
    res = estimate_table(released, manifest, ["sex", "age"])
    old = ["65-74", "75+"]
    share = res.share({"age": old})
    t = res.table.counts
    assert share.estimate == pytest.approx(t[:, 7:].sum() / 4000)
    # a share of all records is linear: its se is the se of the summed count / n
    g = np.zeros_like(t)
    g[:, 7:] = 1
    assert share.se == pytest.approx(np.sqrt(res.table.covariance.variance(g)) / 4000)
    diff = res.difference({"age": old}, {"age": old}, within_first={"sex": "female"}, within_second={"sex": "male"})
    women = t[1, 7:].sum() / t[1].sum()
    men = t[0, 7:].sum() / t[0].sum()
    assert diff.estimate == pytest.approx(women - men)
    # delta method against a numerically differentiated function and a dense covariance
    a = np.linalg.inv(np.kron(manifest["sex"].matrix.matrix, manifest["age"].matrix.matrix).T)
    lam = res.table.released.ravel() / 4000
    cov = 4000 * a @ (np.diag(lam) - np.outer(lam, lam)) @ a.T

    def f(x):
        x = x.reshape(2, 9)
        return x[1, 7:].sum() / x[1].sum() - x[0, 7:].sum() / x[0].sum()

    h = 1e-3
    grad = np.array([(f(t.ravel() + h * e) - f(t.ravel() - h * e)) / (2 * h) for e in np.eye(18)])
    assert diff.se == pytest.approx(np.sqrt(grad @ cov @ grad), rel=1e-6)
    assert diff.ci_low < diff.estimate < diff.ci_high
    with pytest.raises(PramkitError, match="no category"):
        res.share({"age": "100+"})
    with pytest.raises(PramkitError, match="not a variable"):
        res.share({"race": "white"})


def test_missing_values_are_left_out(release):
    _, released, manifest = release
    holed = released.copy()
    holed.loc[:99, "sex"] = None
    res = estimate_table(holed, manifest, ["sex", "race"])
    assert res.dropped == 100 and res.n == 3900
    assert res.table.counts.sum() == pytest.approx(3900)


def test_missing_declared_a_category():
    m = PramMatrix([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], ("a", "b", None))
    manifest = Manifest((PerturbedVariable("x", m, "category"),))
    data = pd.DataFrame({"x": ["a"] * 50 + ["b"] * 30 + [None] * 20})
    res = estimate_table(data, manifest, "x")
    assert res.n == 100 and res.dropped == 0
    assert res.table.released.tolist() == [50, 30, 20]


def test_mle_method(release):
    _, released, manifest = release
    res = estimate_table(released, manifest, ["sex", "age"], method="mle")
    assert res.method == "mle" and res.table.converged
    assert np.all(res.table.counts >= 0)


def test_errors(release):
    _, released, manifest = release
    with pytest.raises(DataError, match=r"\['nope'\] are not in the data"):
        estimate_table(released, manifest, ["nope"])
    with pytest.raises(PramkitError, match="appears twice"):
        estimate_table(released, manifest, ["sex"], by="sex")
    with pytest.raises(PramkitError, match="method"):
        estimate_table(released, manifest, "sex", method="bayes")
    with pytest.raises(PramkitError, match="confidence"):
        estimate_table(released, manifest, "sex", confidence=95.0)
    bad = released.copy()
    bad.loc[5, "age"] = "90-99"
    with pytest.raises(DataError, match="'90-99'"):
        estimate_table(bad, manifest, "age")


def test_cli_json_and_text(release, tmp_path, capsys):
    _, released, manifest = release
    released.to_csv(tmp_path / "released.csv", index=False)
    manifest.write(tmp_path / "manifest.json")
    args = ["estimate", str(tmp_path / "released.csv"), "--manifest", str(tmp_path / "manifest.json"),
            "--vars", "sex,age", "--by", "race"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    api = estimate_table(read_table(tmp_path / "released.csv"), manifest, ["sex", "age"], by="race")
    assert out["method"] == "moment" and out["n"] == 4000
    assert len(out["cells"]) == api.table.counts.size
    first = out["cells"][0]
    assert first["category"] == list(api.to_frame()["category"][0])
    for field in ("estimate", "se", "ci_low", "ci_high", "proportion"):
        assert first[field] == pytest.approx(float(api.to_frame()[field][0]))
    assert main(args[:-2] + ["--method", "mle"]) == 0
    text = capsys.readouterr().out
    assert "[records]" in text and "[%]" in text and "MLE:" in text
    assert main(args[:4] + ["--vars", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_real_file_roof_by_urbrur(sdc_data):
    """sdcMicro's testdata: roof perturbed (randomized response), crossed with the
    unperturbed urbrur; every original count lies within 4.5 PRAM-only standard errors."""
    data = read_table(sdc_data / "testdata.csv", columns=["roof", "urbrur"])
    cats = sorted(int(v) for v in data["roof"].unique())
    m = randomized_response(cats, 2.0)
    codes = encode(data["roof"], cats, column="roof")
    released = data.copy()
    released["roof"] = np.asarray(cats)[perturb_codes(codes, m, key=SecretKey(b"r" * 32, "test"), variable="roof")]
    res = estimate_table(released, Manifest.of({"roof": m}), "roof", by="urbrur", variance="pram")
    original = pd.crosstab(data["roof"].astype(int), data["urbrur"].astype(int)).reindex(index=cats, fill_value=0)
    assert res.n == 4580
    assert np.all(np.abs(res.table.counts - original.to_numpy()) <= 4.5 * res.table.se)


def test_cli_singular_matrix_says_so(tmp_path, capsys):
    m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.2, 0.8]], ("a", "b", "c"))
    Manifest.of({"x": m}).write(tmp_path / "m.json")
    pd.DataFrame({"x": ["a"] * 30 + ["b"] * 38 + ["c"] * 32}).to_csv(tmp_path / "r.csv", index=False)
    code = main(["estimate", str(tmp_path / "r.csv"), "--manifest", str(tmp_path / "m.json"), "--vars", "x", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert "singular" in captured.err
    out = json.loads(captured.out)
    assert out["method"] == "mle" and "singular" in out["note"]
    assert out["estimator_requested"] == "unbiased" and out["estimator"] == "mle"
    # a and b have identical rows: no standard error, flagged; c is identifiable
    assert [c["se"] is None for c in out["cells"]] == [True, True, False]
    assert [c["identifiable"] for c in out["cells"]] == [False, False, True]
    assert sum(c["estimate"] for c in out["cells"]) == pytest.approx(100)
    # saturated fit: 0.8 t_c = 32; the merged model's Fisher information for the
    # share pi of {a, b} is n sum_j (row_a - row_c)_j^2 / lam_j
    lam, diff = np.array([0.30, 0.38, 0.32]), np.array([0.5, 0.3, -0.8])
    se = np.sqrt(100 / np.sum(diff**2 / lam))
    assert out["cells"][2]["estimate"] == pytest.approx(40.0, rel=1e-6)
    assert out["cells"][2]["se"] == pytest.approx(se, rel=1e-6)
    (group,) = out["groups"]
    assert group["category"] == ["a", "b"] and group["estimate"] == pytest.approx(60.0, rel=1e-6)
    assert group["se"] == pytest.approx(se, rel=1e-6)
    assert out["identifiability"]["x"]["groups"][0]["categories"] == ["a", "b"]
    # the text output says it instead of printing NaN
    assert main(["estimate", str(tmp_path / "r.csv"), "--manifest", str(tmp_path / "m.json"), "--vars", "x"]) == 0
    text = capsys.readouterr().out
    assert "nan" not in text.lower() and text.count("not identifiable") == 2 and "{a, b}" in text


def test_a_file_is_streamed_to_the_same_estimate(release, tmp_path):
    _, released, manifest = release
    path = tmp_path / "released.csv"
    released.to_csv(path, index=False)
    from_file = estimate_table(path, manifest, ["age"], by="sex")
    in_memory = estimate_table(released, manifest, ["age"], by="sex")
    np.testing.assert_allclose(from_file.table.counts, in_memory.table.counts)
    np.testing.assert_allclose(from_file.proportion_se, in_memory.proportion_se)
    assert from_file.categories == in_memory.categories
