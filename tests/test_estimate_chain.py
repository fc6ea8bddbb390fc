"""Estimates from a release made by manifests applied one after the other (``pramkit.estimate.chain``).

Checked against what the estimator does not compute: the released table's expectation enumerated by
hand in exact fractions on a tiny case (the estimate must invert it exactly), the mean over 200 real
releases of a file of the sdcMicro test data (within 3 Monte Carlo standard errors of the original
counts), and the NIST release of the benchmark measured against the original file.  The receipt chain
is checked: manifests in another order, a missing or foreign step, the intermediate file: refused in
one line, nothing written.
"""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import assert_refused, sdnist_benchmark

import pramkit
from pramkit.engine.receipt import check_chain, read_receipt
from pramkit.errors import DataError, ParameterError
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

ROOT = Path(__file__).resolve().parents[1]
NIST = ROOT.parent / "shared" / "data" / "nist-crc"

# ------------------------------------------------------------------------------------------------
# A tiny case by hand: A perturbed by the first manifest, B by the second, both within a public S

F = Fraction
#: Each stratum's block, exact (rows: original, columns: released).
BLOCK_A = {"s": [[F(3, 4), F(1, 4)], [F(1, 4), F(3, 4)]], "t": [[F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]]}
BLOCK_B = {"s": [[F(1, 2), F(1, 4), F(1, 4)], [F(1, 4), F(1, 2), F(1, 4)], [F(0), F(1, 4), F(3, 4)]],
           "t": [[F(3, 4), F(1, 4), F(0)], [F(1, 4), F(3, 4), F(0)], [F(1, 4), F(1, 4), F(1, 2)]]}
A, B, S = ("a0", "a1"), ("b0", "b1", "b2"), ("s", "t")


def _stratified(name: str, values: tuple[str, ...], blocks: dict) -> PerturbedVariable:
    cells = [(s, v) for s in S for v in values]
    dense = np.zeros((len(cells), len(cells)))
    for i, (s, x) in enumerate(cells):
        for j, (s2, y) in enumerate(cells):
            if s == s2:
                dense[i, j] = float(blocks[s][values.index(x)][values.index(y)])
    return PerturbedVariable(name, PramMatrix(dense, cells), given=("S",))


def _original() -> dict[tuple[str, str, str], int]:
    """Original counts of (S, A, B), every one a multiple of 64 so that the expected release is whole."""
    return {(s, a, b): 64 * (1 + (3 * i + 5 * j + 7 * k) % 5)
            for (i, s), (j, a), (k, b) in product(enumerate(S), enumerate(A), enumerate(B))}


def _expected_release(x: dict) -> dict[tuple[str, str, str], Fraction]:
    """E[released count of (s, a', b')] = sum over a, b of x(s, a, b) P_A,s[a, a'] P_B,s[b, b']: the two
    steps draw independently given the original record, each within the record's stratum."""
    out: dict[tuple[str, str, str], Fraction] = {}
    for (s, a, b), count in x.items():
        for a2, b2 in product(A, B):
            p = BLOCK_A[s][A.index(a)][A.index(a2)] * BLOCK_B[s][B.index(b)][B.index(b2)]
            out[(s, a2, b2)] = out.get((s, a2, b2), F(0)) + count * p
    return out


@pytest.mark.parametrize("estimator", ["unbiased", "mle"])
def test_the_estimate_inverts_the_expected_release_exactly(estimator: str) -> None:
    x = _original()
    expected = _expected_release(x)
    assert all(v.denominator == 1 for v in expected.values())
    rows = [(s, a, b) for (s, a, b), v in expected.items() for _ in range(int(v))]
    released = pd.DataFrame(rows, columns=["S", "A", "B"])
    first = Manifest((_stratified("A", A, BLOCK_A),))
    second = Manifest((_stratified("B", B, BLOCK_B),))
    res = pramkit.estimate_table(released, [first, second], ["A", "B"], estimator=estimator)
    cells_a, cells_b = res.categories
    counts = res.table.counts.reshape(len(cells_a), len(cells_b))
    # the MLE is x too (the released table is its expectation); EM stops within 1e-3 nats of it
    tol = 1e-6 if estimator == "unbiased" else 0.05
    for i, (s, a) in enumerate(cells_a):
        for j, (s2, b) in enumerate(cells_b):
            assert counts[i, j] == pytest.approx(x[(s, a, b)] if s == s2 else 0, abs=tol)
    by = pramkit.estimate_table(released, [first, second], "A", by="B", estimator=estimator)
    assert np.allclose(by.table.counts, res.table.counts.reshape(by.table.counts.shape), atol=tol)


def test_a_column_perturbed_by_both_steps_has_the_law_of_their_product() -> None:
    m1 = [[F(3, 4), F(1, 4), F(0)], [F(0), F(3, 4), F(1, 4)], [F(1, 4), F(0), F(3, 4)]]
    m2 = [[F(1, 2), F(1, 2), F(0)], [F(0), F(1, 2), F(1, 2)], [F(1, 4), F(1, 4), F(1, 2)]]
    x = [128, 320, 192]
    law = [[sum(m1[i][k] * m2[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    expected = [sum(x[i] * law[i][j] for i in range(3)) for j in range(3)]
    assert all(v.denominator == 1 for v in expected)
    released = pd.DataFrame({"B": [b for b, v in zip(B, expected) for _ in range(int(v))]})
    steps = [Manifest.of({"B": PramMatrix([[float(v) for v in row] for row in m], B)}) for m in (m1, m2)]
    res = pramkit.estimate_table(released, steps, "B")
    assert res.table.counts.tolist() == pytest.approx(x, abs=1e-9)


def test_a_law_that_is_no_product_is_refused_in_one_line() -> None:
    released = pd.DataFrame({"S": ["s", "t"], "A": ["a0", "a1"], "B": ["b0", "b1"]})
    a_on_s = Manifest.of({"S": PramMatrix([[0.75, 0.25], [0.25, 0.75]], S)})  # perturbs the stratum of A
    within = Manifest((_stratified("A", A, BLOCK_A),))
    for steps in ([a_on_s, within], [within, a_on_s]):
        with pytest.raises(ParameterError, match="stratum 'S' of 'A'") as err:
            pramkit.estimate_table(released, steps, ["A"])
        assert "\n" not in str(err.value)
    joint = Manifest((PerturbedVariable("A*B", PramMatrix(np.eye(2), [("a0", "b0"), ("a1", "b1")]),
                                        columns=("A", "B")),))
    again = Manifest.of({"B": PramMatrix(np.eye(3), B)})
    with pytest.raises(ParameterError, match="perturbed by manifest 1") as err:
        pramkit.estimate_table(released, [joint, again], ["B"])
    assert "\n" not in str(err.value)
    assert pramkit.estimate_table(released, [a_on_s, within], ["S"]).table.n == 2  # S alone: its own law


# ------------------------------------------------------------------------------------------------
# 200 real releases of the sdcMicro test data: the unbiased estimate's mean is the original table

@pytest.fixture(scope="module")
def testdata() -> pd.DataFrame:
    path = ROOT.parent / "shared" / "data" / "sdcmicro" / "testdata.csv"
    if not path.is_file():
        pytest.skip("../shared/data/sdcmicro is not available")
    data = pd.read_csv(path, dtype=str).head(600)[["urbrur", "roof", "walls", "water", "sex"]]
    return data


def _steps(data: pd.DataFrame) -> tuple[Manifest, Manifest]:
    key = SecretKey(bytes(range(32)), "test key")
    first = pramkit.design_planned(data, pramkit.plan_release(["walls"], method="rr", epsilon=2.0), key=key).manifest
    second = pramkit.design_planned(data, pramkit.plan_release(["water", "roof"], method="rr", epsilon=4.0,
                                                               strata="urbrur"), key=key).manifest
    return first, second


@pytest.mark.slow
def test_the_mean_over_200_releases_is_the_original_table(testdata: pd.DataFrame) -> None:
    first, second = _steps(testdata)
    truth = testdata.groupby(["walls", "urbrur", "water"]).size()
    runs = []
    for r in range(200):
        key = SecretKey(r.to_bytes(2, "big") * 16, "mc")
        once = pramkit.perturb_frame(testdata, first, key=key).data
        twice = pramkit.perturb_frame(once, second, key=key).data
        res = pramkit.estimate_table(twice, [first, second], ["walls", "water"])
        walls = [str(c) for c in res.categories[0]]
        cells = [tuple(map(str, c)) for c in res.categories[1]]
        counts = res.table.counts.reshape(len(walls), len(cells))
        runs.append([counts[walls.index(w), cells.index((u, x))] for w, u, x in truth.index])
    runs_a = np.array(runs)
    se = runs_a.std(axis=0, ddof=1) / np.sqrt(len(runs))
    z = (runs_a.mean(axis=0) - truth.to_numpy()) / se
    assert np.abs(z).max() < 3, z


def test_perturb_frame_records_the_chain(testdata: pd.DataFrame) -> None:
    first, second = _steps(testdata)
    key = SecretKey(bytes(range(32)), "test key")
    once = pramkit.perturb_frame(testdata, first, key=key).data
    twice = pramkit.perturb_frame(once, second, key=key).data
    assert check_chain(twice, [first, second]) is None
    with pytest.raises(DataError, match="another manifest"):
        pramkit.estimate_table(twice, [second, first], ["walls"])
    with pytest.raises(DataError, match="a file without a release receipt"):
        check_chain(pramkit.perturb_frame(testdata, second, key=key).data, [first, second])


# ------------------------------------------------------------------------------------------------
# The command line: the chain given by --manifest twice; bad input is one line, nothing written

@pytest.fixture
def chain_files(tmp_path: Path, testdata: pd.DataFrame) -> Path:
    first, second = _steps(testdata)
    testdata.to_csv(tmp_path / "original.csv", index=False)
    first.write(tmp_path / "first.json")
    second.write(tmp_path / "second.json")
    key = bytes(range(32))
    pramkit.apply_file(tmp_path / "original.csv", tmp_path / "first.json", tmp_path / "step1.csv", key=key)
    pramkit.apply_file(tmp_path / "step1.csv", tmp_path / "second.json", tmp_path / "released.csv", key=key)
    return tmp_path


def test_the_receipt_names_the_release_it_was_applied_to(chain_files: Path) -> None:
    receipt = read_receipt(chain_files / "released.csv")
    first = read_receipt(chain_files / "step1.csv")
    assert receipt["input_release"]["manifest_sha256"] == first["manifest_sha256"]
    assert receipt["input_release"]["input_release"] is None
    assert "released_sha256" not in receipt["input_release"]  # the intermediate file is not public


def test_the_cli_estimates_across_the_chain(chain_files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pramkit.cli import main

    d = chain_files
    code = main(["estimate", str(d / "released.csv"), "--manifest", str(d / "first.json"), "--manifest",
                 str(d / "second.json"), "--vars", "walls,water", "--by", "sex", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "note" not in err  # the chain is checked: no note that it cannot be
    cells = json.loads(out)["cells"]
    res = pramkit.estimate_table(d / "released.csv", [Manifest.read(d / "first.json"),
                                                      Manifest.read(d / "second.json")],
                                 ["walls", "water"], by="sex")
    assert [c["estimate"] for c in cells] == pytest.approx(res.table.counts.ravel().tolist(), abs=1e-9)
    code = main(["estimate", str(d / "released.csv"), "--manifest", str(d / "second.json"), "--vars", "water"])
    assert code == 0  # one manifest: as before, the last step's own variables


@pytest.mark.parametrize(("args", "message"), [
    (["--manifest", "second.json", "--manifest", "first.json", "--vars", "walls"], "another manifest"),
    (["--manifest", "first.json", "--vars", "walls"], "another manifest"),
    (["--manifest", "second.json", "--manifest", "second.json", "--vars", "water"], "another manifest"),
    (["--manifest", "first.json", "--manifest", "second.json", "--vars", "nope"], "nope"),
    (["--manifest", "first.json", "--manifest", "second.json", "--vars", "walls", "--emit", "r", "--emit-out",
      "e.R"], "--emit reads one manifest"),
    (["--manifest", "first.json", "--manifest", "second.json", "--regress", "sex ~ walls"],
     "--regress reads one manifest"),
])
def test_bad_chains_are_one_line(chain_files: Path, args: list[str], message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    d = chain_files
    resolved = [str(d / a) if a.endswith(".json") else a for a in args]
    assert_refused(d, ["estimate", str(d / "released.csv"), *resolved], message, capsys)


def test_the_intermediate_file_is_no_release_of_both(chain_files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = chain_files
    assert_refused(d, ["estimate", str(d / "step1.csv"), "--manifest", str(d / "first.json"), "--manifest",
                       str(d / "second.json"), "--vars", "walls"], "another manifest", capsys)
    assert_refused(d, ["estimate", str(d / "released.csv"), "--manifest", str(d / "second.json"), "--manifest",
                       str(d / "first.json"), "--manifest", str(d / "second.json"), "--vars", "walls"],
                   "was applied to a file without a release receipt", capsys)


# ------------------------------------------------------------------------------------------------
# The benchmark's release: every two-way table corrected, closer to the original than the raw file


@pytest.mark.slow
def test_every_two_way_table_of_the_nist_release_in_two_steps_is_corrected(tmp_path: Path) -> None:
    data = NIST / "national" / "national2019.csv"
    if not data.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    bench = sdnist_benchmark()
    setup = bench.prepare(data, bench.FEATURES, bench.PUBLIC, 1, tmp_path, NIST / "data_dictionary.json")
    release = bench._dp_rules(setup, 10)
    assert [step for step, _ in release.steps] == ["housing", "person"]
    original = setup.frame  # the file itself, read independently of the estimates
    released = pd.read_csv(release.released, dtype=str, keep_default_na=False)
    manifests = [m for _, m in release.steps]
    corrected, raw = [], []
    pairs = [(a, b) for i, a in enumerate(bench.FEATURES) for b in bench.FEATURES[i + 1:]
             if not {a, b} <= set(bench.PUBLIC)]
    assert len(pairs) == 44
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in pairs:
            truth = pd.crosstab(original[a], original[b])
            est = bench.corrected_table(release.released, manifests, a, b, na_values=(), estimator="unbiased")
            corrected.append(_tv(truth, est))
            raw.append(_tv(truth, pd.crosstab(released[a], released[b])))
    assert len(corrected) == 44
    assert np.mean(corrected) < np.mean(raw)
    cross = [c for (a, b), c in zip(pairs, corrected)
             if {a, b} & {"HOUSING_TYPE", "OWN_RENT"} and {a, b} - {"HOUSING_TYPE", "OWN_RENT", *bench.PUBLIC}]
    assert len(cross) == 12 and np.mean(cross) < np.mean(raw)


def _tv(truth: pd.DataFrame, estimate: pd.DataFrame) -> float:
    """Total variation between two tables as shares, over the union of their cells (written here, apart from
    the benchmark's own)."""
    rows = sorted(set(truth.index) | set(estimate.index))
    cols = sorted(set(truth.columns) | set(estimate.columns))
    x = truth.reindex(index=rows, columns=cols, fill_value=0).to_numpy(float)
    y = estimate.reindex(index=rows, columns=cols, fill_value=0).to_numpy(float)
    return float(0.5 * np.abs(x / x.sum() - y / y.sum()).sum())
