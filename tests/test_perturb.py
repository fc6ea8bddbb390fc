"""The perturbation engine: distribution, chunk invariance, missing values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

from pramkit.engine.perturb import perturb_codes, perturb_frame
from pramkit.engine.sampling import AliasSampler, DiagonalSampler, sampler_for
from pramkit.errors import DataError
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

DRAWS_PER_ROW = 400_000
ALPHA = 1e-4  # family-wise level of the goodness-of-fit tests


def row_pvalues(matrix: np.ndarray, released_from: PramMatrix, key: SecretKey) -> np.ndarray:
    """Chi-square goodness-of-fit p-value, per original category k, of the released
    categories of DRAWS_PER_ROW copies of k against ``matrix[k]``."""
    s = matrix.shape[0]
    codes = np.repeat(np.arange(s), DRAWS_PER_ROW)
    out = perturb_codes(codes, released_from, key=key, variable="gof")
    pvals = []
    for k in range(s):
        counts = np.bincount(out[k * DRAWS_PER_ROW:(k + 1) * DRAWS_PER_ROW], minlength=s)
        expected = matrix[k] * DRAWS_PER_ROW
        support = expected > 0
        assert counts[~support].sum() == 0, f"row {k} released an impossible category"
        if support.sum() > 1:
            pvals.append(stats.chisquare(counts[support], expected[support]).pvalue)
    return np.array(pvals)


def one_percent_off(m: np.ndarray) -> np.ndarray:
    """The same matrix with 1 % of the mass of one row's largest entry moved to its smallest positive one."""
    bad = m.copy()
    k = int(np.argmax(m.max(axis=1)))
    j_hi = int(np.argmax(m[k]))
    positive = np.where(m[k] > 0, m[k], np.inf)
    positive[j_hi] = np.inf
    j_lo = int(np.argmin(positive))
    shift = 0.01 * m[k, j_hi]
    bad[k, j_hi] -= shift
    bad[k, j_lo] += shift
    return bad


MATRICES = {
    "form8": PramMatrix.from_diagonal([0.9, 0.6, 0.3, 0.05, 1.0]),
    "general": PramMatrix(np.random.default_rng(7).dirichlet(np.ones(6), size=6)),
    "sparse-general": PramMatrix(np.array([[0.7, 0.3, 0.0], [0.0, 0.5, 0.5], [0.25, 0.0, 0.75]])),
}


@pytest.mark.parametrize("name", MATRICES)
def test_released_frequencies_match_the_matrix(name: str, key: SecretKey) -> None:
    m = MATRICES[name]
    pvals = row_pvalues(m.matrix, m, key)
    assert pvals.min() > ALPHA / pvals.size, pvals


@pytest.mark.parametrize("name", MATRICES)
def test_goodness_of_fit_detects_a_one_percent_error(name: str, key: SecretKey) -> None:
    """Power check: the test above would notice a kernel that is 1 % off."""
    m = MATRICES[name]
    pvals = row_pvalues(one_percent_off(m.matrix), m, key)
    assert pvals.min() < ALPHA / pvals.size


def test_kernel_choice() -> None:
    assert isinstance(sampler_for(MATRICES["form8"]), DiagonalSampler)
    assert isinstance(sampler_for(MATRICES["general"]), AliasSampler)


@pytest.mark.parametrize("name", MATRICES)
def test_chunking_does_not_change_the_output(name: str, key: SecretKey) -> None:
    m = MATRICES[name]
    rng = np.random.default_rng(1)
    codes = rng.integers(-1, m.size, size=200_003)
    whole = perturb_codes(codes, m, key=key, variable="x")
    for chunk in (1, 7, 4096, 32768, 65537, 100_000):
        parts = [
            perturb_codes(codes[s:s + chunk], m, key=key, variable="x", start=s)
            for s in range(0, codes.size, chunk)
        ] if chunk > 1000 else [
            perturb_codes(codes[s:s + chunk], m, key=key, variable="x", start=s) for s in range(0, 5000, chunk)
        ]
        joined = np.concatenate(parts)
        np.testing.assert_array_equal(joined, whole[:joined.size])


def test_missing_stays_missing(key: SecretKey) -> None:
    codes = np.array([-1, 0, 1, -1, 2] * 1000)
    out = perturb_codes(codes, MATRICES["sparse-general"], key=key, variable="m")
    np.testing.assert_array_equal(out == -1, codes == -1)


def test_degenerate_matrices(key: SecretKey) -> None:
    codes = np.arange(3).repeat(1000)
    np.testing.assert_array_equal(perturb_codes(codes, PramMatrix.identity("abc"), key=key, variable="i"), codes)
    moved = perturb_codes(codes, PramMatrix.from_diagonal([0.0, 0.0, 0.0]), key=key, variable="z")
    assert np.all(moved != codes)
    single = perturb_codes(np.zeros(10, int), PramMatrix(np.ones((1, 1))), key=key, variable="s")
    np.testing.assert_array_equal(single, 0)


def test_bad_codes(key: SecretKey) -> None:
    with pytest.raises(DataError, match="codes must lie"):
        perturb_codes(np.array([0, 5]), MATRICES["form8"], key=key, variable="x")
    with pytest.raises(DataError, match="integer"):
        perturb_codes(np.array([0.5]), MATRICES["form8"], key=key, variable="x")


def test_perturb_frame_keeps_other_columns_and_dtypes(key: SecretKey) -> None:
    df = pd.DataFrame({
        "id": np.arange(6, dtype=np.int32),
        "sex": pd.Categorical(["m", "f", "f", "m", None, "f"], categories=["m", "f"]),
        "region": [3, 1, 2, 2, 1, 3],
        "income": [1.5, 2.0, np.nan, 4.0, 5.0, 6.0],
    })
    man = Manifest.of({
        "sex": PramMatrix.from_diagonal([0.5, 0.5], ["m", "f"]),
        "region": PramMatrix.from_diagonal([0.5, 0.5, 0.5], [1, 2, 3]),
    })
    out, res = perturb_frame(df, man, key=key)
    assert list(out.columns) == list(df.columns)
    assert out.dtypes.tolist() == df.dtypes.tolist()
    pd.testing.assert_series_equal(out["id"], df["id"])
    pd.testing.assert_series_equal(out["income"], df["income"])
    assert out["sex"].isna().tolist() == df["sex"].isna().tolist()
    assert set(out["region"]) <= {1, 2, 3}
    summary = {v.name: v for v in res.variables}
    assert summary["sex"].missing == 1 and summary["sex"].rows == 6
    assert summary["sex"].changed == int(((out["sex"] != df["sex"]) & df["sex"].notna()).sum())


def test_missing_declared_a_category_is_perturbed(key: SecretKey) -> None:
    df = pd.DataFrame({"x": ["a", None, "b"] * 2000})
    m = PramMatrix.from_diagonal([0.5, 0.5, 0.5], ["a", "b", None])
    out, res = perturb_frame(df, Manifest((PerturbedVariable("x", m, "category"),)), key=key)
    was_missing = df["x"].isna()
    assert 0 < out["x"][was_missing].notna().sum() < was_missing.sum()  # some missing became a or b
    assert out["x"][~was_missing].isna().sum() > 0  # and some values became missing
    assert res.variables[0].missing == int(was_missing.sum())


def test_unknown_category_and_absent_column(key: SecretKey) -> None:
    df = pd.DataFrame({"x": ["a", "b", "c"]})
    man = Manifest.of({"x": PramMatrix.from_diagonal([0.5, 0.5], ["a", "b"])})
    with pytest.raises(DataError, match=r"column 'x', row 3: value 'c'"):
        perturb_frame(df, man, key=key)
    with pytest.raises(DataError, match=r"\['y'\]"):
        perturb_frame(df, Manifest.of({"y": PramMatrix.identity(["a"])}), key=key)


def test_rows_in_any_order_give_the_same_release(key: SecretKey) -> None:
    m = MATRICES["general"]
    codes = np.random.default_rng(2).integers(0, m.size, 30_000)
    whole = perturb_codes(codes, m, key=key, variable="r")
    order = np.random.default_rng(3).permutation(codes.size)
    shuffled = perturb_codes(codes[order], m, key=key, variable="r", rows=order)
    np.testing.assert_array_equal(shuffled, whole[order])


@pytest.mark.parametrize("seed", range(5))
def test_alias_tables_reconstruct_the_matrix(seed: int) -> None:
    """Exact check of the integer tables: each of the 2^b cells of a row holds C units of the row's move
    units, split at its threshold between its own category and its alias; with the keep units this gives
    back M to the resolution 2^-62, and no unit lands on a zero entry."""
    rng = np.random.default_rng(seed)
    s = int(rng.integers(3, 40))
    m = rng.dirichlet(np.full(s, 0.3), size=s)
    m[0] = np.eye(s)[0]  # a row that never moves
    m[1, 2:] = 0.0
    m[1, :2] = [0.25, 0.75]
    sampler = AliasSampler(m)
    b, d = sampler.bits, 1 << 62
    cells = sampler._cells.reshape(s, 1 << b)
    rebuilt = np.zeros((s, s), dtype=object)
    for k in range(s):
        c = (d - int(sampler._keep[k])) >> b
        rebuilt[k, k] += int(sampler._keep[k])
        for cell, entry in enumerate(cells[k].tolist()):
            threshold, alias = entry >> b, entry & ((1 << b) - 1)
            if cell < s:
                rebuilt[k, cell] += threshold
            rebuilt[k, alias] += c - threshold
    assert all(sum(row) == d for row in rebuilt.tolist())
    assert np.array_equal(rebuilt > 0, m > 0)
    np.testing.assert_allclose(rebuilt.astype(float) / d, m, rtol=0, atol=1e-15)


def test_missing_codes_are_kept_and_never_produced(key: SecretKey) -> None:
    """Values a file declares missing (CSV markers, SPSS user-missing) are left as they are."""
    from pramkit.codebook import MissingCodes
    from pramkit.design.classic import randomized_response
    from pramkit.engine.perturb import TablePerturber

    n = 6000
    region = pa.array(np.where(np.arange(n) % 7 == 0, "NA", (np.arange(n) % 3 + 1).astype(str)))
    sex = pa.array(np.where(np.arange(n) % 11 == 0, "NA", np.where(np.arange(n) % 2, "m", "f")))
    table = pa.table({"region": region, "sex": sex})
    codes = MissingCodes(texts=("NA",), source="test")
    single = Manifest.of({"region": randomized_response([1, 2, 3], 0.5)})
    out = TablePerturber(single, key, codes)(table)
    assert (np.asarray(out.column("region").to_pylist()) == "NA").tolist() == (np.arange(n) % 7 == 0).tolist()
    cells = [(r, s) for r in ("1", "2", "3") for s in ("m", "f")]
    joint = Manifest((PerturbedVariable("region*sex", PramMatrix(0.5 * np.eye(6) + 0.5 / 6, cells),
                                        columns=("region", "sex")),))
    out = TablePerturber(joint, key, codes)(table)
    # a missing code stays where it was; a record missing one column has the other drawn from the margin
    # (test_joint.py), so no other value is kept as such
    for col, kept in (("region", np.arange(n) % 7 == 0), ("sex", np.arange(n) % 11 == 0)):
        released, original = out.column(col).to_pylist(), table.column(col).to_pylist()
        assert [released[i] for i in np.flatnonzero(kept)] == [original[i] for i in np.flatnonzero(kept)]
        assert "NA" not in [released[i] for i in np.flatnonzero(~kept)]
    with pytest.raises(DataError, match="missing-value code"):
        TablePerturber(Manifest.of({"region": randomized_response(["1", "2", "NA"], 1.0)}), key, codes)
    bad_joint = Manifest((PerturbedVariable("region*sex", PramMatrix(np.eye(2), [("1", "NA"), ("2", "m")]),
                                            columns=("region", "sex")),))
    with pytest.raises(DataError, match="'NA'"):
        TablePerturber(bad_joint, key, codes)


def test_spans_of_uniforms_do_not_change_the_output(key: SecretKey) -> None:
    """perturb_codes draws SPAN uniforms at a time and works in BLOCKs: across span boundaries, any
    chunking and any order of the rows give the same release."""
    from pramkit.engine.perturb import SPAN

    m = MATRICES["general"]
    codes = np.random.default_rng(5).integers(-1, m.size, size=2 * SPAN + 1001)
    whole = perturb_codes(codes, m, key=key, variable="span")
    chunk = SPAN // 3 + 7
    parts = [perturb_codes(codes[s:s + chunk], m, key=key, variable="span", start=s)
             for s in range(0, codes.size, chunk)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    order = np.random.default_rng(6).permutation(codes.size)
    np.testing.assert_array_equal(perturb_codes(codes[order], m, key=key, variable="span", rows=order), whole[order])


def test_released_frame_follows_the_matrix_end_to_end(key: SecretKey) -> None:
    """Values to codes, kernel, codes back to labels, for text, object and categorical columns: the released
    labels of each original label follow its row of M (chi-square per row), and the same test rejects the
    release against a matrix 1 % off (power check)."""
    m = PramMatrix(np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]), ["x", "y", "z"])
    labels = np.array(m.categories, dtype=object)[np.arange(3 * 100_000) % 3]
    data = pd.DataFrame({"str": pd.Series(labels, dtype="str"), "object": pd.Series(labels, dtype=object),
                         "categorical": pd.Categorical(labels, categories=["z", "y", "x"])})
    out = perturb_frame(data, Manifest.of({c: m for c in data.columns}), key=key).data
    level = ALPHA / (3 * len(data.columns))
    for c in data.columns:
        counts = pd.crosstab(data[c].astype(str), out[c].astype(str)).reindex(
            index=m.categories, columns=m.categories, fill_value=0).to_numpy()
        for expected, passes in ((m.matrix, True), (one_percent_off(m.matrix), False)):
            pvals = [stats.chisquare(row, expected[k] * row.sum()).pvalue for k, row in enumerate(counts)]
            assert (min(pvals) > level) == passes, (c, pvals)


@pytest.mark.parametrize("missing", ["keep", "category"])
def test_object_columns_release_as_text_columns(key: SecretKey, missing: str) -> None:
    """A column of Python strings (the same objects, fresh equal objects, every kind of missing value) is
    released exactly as the same values in a ``str`` column, whose path shares none of its conversion code;
    a value that is no category, or not text, is refused naming its row."""
    rng = np.random.default_rng(8)
    pool = ["north", "south", "Zürich", "x" * 30]
    picks = [pool[i] for i in rng.integers(0, len(pool), 2000)]
    values: list = ["".join(list(v)) if i % 3 else v for i, v in enumerate(picks)]  # fresh objects too
    for i, na in zip(range(5, 2000, 97), [None, np.nan, pd.NA, float("nan")] * 10):
        values[i] = na
    categories = pool + ([None] if missing == "category" else [])
    matrix = PramMatrix.from_diagonal([0.6] * len(categories), categories)
    manifest = Manifest((PerturbedVariable("x", matrix, missing),))
    as_objects = perturb_frame(pd.DataFrame({"x": pd.Series(values, dtype=object)}), manifest, key=key)
    as_text = perturb_frame(pd.DataFrame({"x": pd.Series(values, dtype="str")}), manifest, key=key)
    assert as_objects.data["x"].dtype == object
    assert as_objects.data["x"].isna().tolist() == as_text.data["x"].isna().tolist()
    assert as_objects.data["x"].dropna().tolist() == as_text.data["x"].dropna().tolist()
    assert as_objects.result.variables == as_text.result.variables
    for bad, message in (("west", "row 11: value 'west' is not"), (7, "column 'x': cannot read its values")):
        wrong = pd.Series(values[:10] + [bad] + values[10:], dtype=object)
        with pytest.raises(DataError, match=message):
            perturb_frame(pd.DataFrame({"x": wrong}), manifest, key=key)


def test_released_values_are_pinned(key: SecretKey) -> None:
    """The release of row i depends on (release key, variable, i) only and stays the same from version to version:
    these are the values manifest version 5 (integer draws, pramkit.privacy.law) released with the test key's
    release key for this manifest (its release_digest: a change to what a manifest writes changes them), for each
    kind of column;
    perturb_codes, keyed directly, releases what versions 1 to 4 released for these rows with form (8)."""
    i = np.arange(24) % 3
    text = np.array(["a", "b", "c"], dtype=object)[i]
    holes = np.where(np.arange(24) % 7 == 3, None, text)
    data = pd.DataFrame({
        "str": pd.Series(holes, dtype="str"),
        "object": pd.Series(holes, dtype=object),
        "categorical": pd.Categorical(text, categories=["a", "b", "c"]),
        "arrow_dict": pd.array(pa.array(holes).dictionary_encode(),
                               dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))),
        "int": i * 10 + 10,
    })
    text_m = PramMatrix(np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]]), ["a", "b", "c"])
    manifest = Manifest.of({"str": text_m, "object": text_m, "categorical": text_m, "arrow_dict": text_m,
                            "int": PramMatrix.from_diagonal([0.5, 0.4, 0.3], [10, 20, 30])})
    out = perturb_frame(data, manifest, key=key).data
    shown = {c: "".join("." if pd.isna(v) else v for v in out[c]) for c in ("str", "object", "categorical", "arrow_dict")}
    assert shown == {"str": "bca.bcbbca.cabbac.bbaabb", "object": "abc.baabcb.caccac.bacabc",
                     "categorical": "acbabaacaaabcccbbcabcbac", "arrow_dict": "abb.cbcbca.bbbcab.acbaba"}
    assert out["int"].tolist() == [10, 10, 30, 30, 30, 20, 10, 10, 10, 30, 10, 20,
                                   10, 30, 10, 10, 10, 10, 30, 20, 20, 20, 10, 30]
    codes = perturb_codes(np.arange(20) % 5, MATRICES["form8"], key=key, variable="pin")
    assert codes.tolist() == [0, 4, 0, 0, 4, 2, 3, 2, 1, 4, 0, 1, 3, 4, 4, 0, 1, 1, 2, 4]


def test_perturb_frame_result_is_named_and_unpacks_as_before(key: SecretKey) -> None:
    data = pd.DataFrame({"x": ["a", "b", None, "a"] * 25, "w": range(100)})
    released = perturb_frame(data, Manifest.of({"x": PramMatrix.from_diagonal([0.7, 0.7], ["a", "b"])}), key=key)
    frame, result = released  # callers written when it returned a tuple
    assert frame is released.data is released[0] and result is released.result is released[1]
    v = result.variables[0]
    assert released.to_dict() == result.to_dict()
    assert result.to_dict()["variables"] == [
        {"name": "x", "rows": 100, "missing": 25, "changed": v.changed, "changed_share": v.changed / 75}]
    assert v.changed == int((frame["x"] != data["x"])[data["x"].notna()].sum()) > 0


def test_apply_json_is_the_result_to_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """``pramkit apply --json`` prints :meth:`ApplyResult.to_dict` of the release it made, nothing else."""
    import pramkit.engine.perturb
    from pramkit.cli import main

    made = []
    apply_file = pramkit.engine.perturb.apply_file
    monkeypatch.setattr(pramkit.engine.perturb, "apply_file", lambda *a, **k: made.append(apply_file(*a, **k)) or made[0])
    data, manifest = tmp_path / "data.csv", tmp_path / "m.json"
    pd.DataFrame({"x": ["a", "b", None] * 10, "w": range(30)}).to_csv(data, index=False)
    Manifest.of({"x": PramMatrix.from_diagonal([0.7, 0.7], ["a", "b"])}).write(manifest)
    assert main(["apply", str(data), "--manifest", str(manifest), "--out", str(tmp_path / "r.csv"), "--json",
                 "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out) == {"format": "pramkit.apply.result", "version": 1, **made[0].to_dict()}
