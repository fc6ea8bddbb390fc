"""``pramkit design --target matched=X%``: the largest budget whose release meets a disclosure target.

The figure the search holds is checked against releases drawn by the engine and scored as NIST's SDNist
scores unique exact matches (an implementation written here, apart from the search).  The quantile target
``matched<=X%@Q`` is checked against many releases simulated here with NumPy from the manifest's matrices
(each record's released values drawn from its rows), and its Chernoff bound against the exact quantile of a
sum of independent indicators (a convolution written here)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pramkit
from pramkit.cli import main
from pramkit.kernel.rng import SecretKey
from pramkit.risk.matches import quantile_bound

NIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "nist-crc" / "national" / "national2019.csv"
FEATURES = ["AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU", "PINCP_DECILE", "DVET", "DEYE"]
PERTURBED = FEATURES[2:]


@pytest.fixture(scope="module")
def acs_file(tmp_path_factory) -> Path:
    if not NIST.is_file():
        pytest.skip("../shared/data/nist-crc is not available")
    path = tmp_path_factory.mktemp("acs") / "acs.csv"
    pd.read_csv(NIST, dtype=str, keep_default_na=False)[FEATURES].to_csv(path, index=False)
    return path


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _matched(original: pd.DataFrame, released: pd.DataFrame) -> float:
    counts = original.groupby(FEATURES).size()
    unique = set(counts[counts == 1].index)
    found = set(map(tuple, released[FEATURES].astype(str).itertuples(index=False)))
    return sum(u in found for u in unique) / len(original)


@pytest.mark.slow
def test_the_release_meets_its_target(acs_file: Path, tmp_path: Path) -> None:
    key = tmp_path / "k.key"
    key.write_text(bytes(range(32)).hex() + "\n")
    key.chmod(0o600)
    out = tmp_path / "m.json"
    code, printed, err = _run(["design", str(acs_file), "--vars", ",".join(PERTURBED), "--target-keys",
                               ",".join(FEATURES), "--objective", "distance", "--distances", "discrete", "--invariant",
                               "--epsilon", "20", "--target", "matched=5%", "--out", str(out), "--key-file",
                               str(key), "--quiet"])
    assert code == 0, err
    assert "<- kept" in printed
    record = json.loads((tmp_path / "m.design-record.json").read_text())
    found = record["target"]
    manifest = pramkit.Manifest.read(out)
    assert manifest.record_epsilon <= found["record_epsilon"] + 1e-9 < 20
    assert any("searched" in s for s in manifest.ledger.data_dependent)   # the choice is named, not hidden
    assert found["risk"]["expected"] <= 0.05
    original = pd.read_csv(acs_file, dtype=str, keep_default_na=False)
    shares = [_matched(original, pramkit.perturb_frame(original, manifest, key=SecretKey(bytes([r]) * 32, "mc")).data)
              for r in range(1, 6)]
    assert np.mean(shares) <= 0.05 + 3 * np.std(shares, ddof=1) / np.sqrt(len(shares)) + 1e-3
    assert abs(np.mean(shares) - found["risk"]["expected"]) < 0.01


@pytest.mark.parametrize(("flags", "message"), [
    (["--target", "tau1=3"], "--target must look like matched=5%"),
    (["--target", "matched=150%"], "between 0 and 100"),
    (["--target", "matched=5%", "--target-keys", "AGEP,nope"], "not columns of the data"),
    (["--target-keys", "AGEP"], "--target-keys applies to --target"),
    (["--target", "matched=0.001%"], "lower the first bound or raise the threshold"),
    (["--target", "matched<=5%@100"], "strictly between 0 and 100"),
    (["--target", "matched<=5%@0"], "strictly between 0 and 100"),
    (["--target", "matched<=5%@ninety"], "strictly between 0 and 100"),
    (["--target", "matched<=5@95%"], "between 0 and 100 %"),
    (["--target", "tau1=3@95"], "or matched<=5%@95"),
])
def test_bad_targets_are_one_line_and_write_nothing(acs_file: Path, tmp_path: Path, flags, message) -> None:
    before = acs_file.read_bytes()
    code, _, err = _run(["design", str(acs_file), "--vars", "MSP,EDU", "--epsilon", "5", "--method", "rr", *flags,
                         "--out", str(tmp_path / "m.json")])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == [] and acs_file.read_bytes() == before


def _exact_quantile(p: np.ndarray, level: float) -> int:
    """The smallest m with P(sum of independent Bernoulli(p) <= m) >= level, by convolving the indicators."""
    law = np.array([1.0])
    for q in p:
        law = np.append(law * (1 - q), 0.0) + np.append(0.0, law * q)
    return int(np.searchsorted(np.cumsum(law), level))


@pytest.mark.parametrize("level", [0.5, 0.95, 0.999])
def test_the_chernoff_bound_is_above_the_exact_quantile(level: float) -> None:
    """Independent indicators are negatively associated: the bound holds for them, and it is a bound,
    not an estimate (it lies at or above the exact quantile, and below the sure maximum)."""
    p = np.random.default_rng(7).beta(0.3, 3.0, 400)
    bound = quantile_bound(p, level)
    exact = _exact_quantile(p, level)
    assert exact <= bound <= np.count_nonzero(p)
    assert bound < p.sum() + 4 * np.sqrt((p * (1 - p)).sum()) * max(1.0, np.sqrt(-np.log1p(-level)))


def _simulated_shares(original: pd.DataFrame, manifest: pramkit.Manifest, releases: int) -> np.ndarray:
    """Shares of all records that are unique records reproduced exactly, over releases drawn here: each
    perturbed value from its row of the manifest's matrix (the first category whose cumulative probability
    in the record's row exceeds a uniform draw), the other key columns as they are."""
    rng = np.random.default_rng(2024)
    coded = {c: pd.factorize(original[c])[0] for c in FEATURES}
    cats = {c: pd.factorize(original[c])[1] for c in FEATURES}
    radix = [len(cats[c]) for c in FEATURES]

    def number(codes: dict[str, np.ndarray]) -> np.ndarray:
        return np.ravel_multi_index([codes[c] for c in FEATURES], radix)

    cells = number(coded)
    values, counts = np.unique(cells, return_counts=True)
    unique = pd.Index(values[counts == 1])  # the unique records' cells, looked up by hashing
    laws = []  # each perturbed variable: every record's row of cumulative probabilities, and the codes back
    for v in manifest.variables:
        matrix, order = v.release_matrix.matrix, [str(x) for x in v.release_matrix.categories]
        position = np.array([order.index(str(x)) for x in cats[v.name]])
        to_code = {x: i for i, x in enumerate(cats[v.name])}
        back = np.array([to_code.get(x, -1) for x in order])
        rows = np.cumsum(matrix[position], axis=1)
        rows[:, -1] = 1.0  # the last category takes what rounding leaves below the sum
        laws.append((v.name, rows[coded[v.name]], back))
    shares = np.empty(releases)
    for r in range(releases):
        drawn = dict(coded)
        for name, cumulative, back in laws:
            out = (cumulative > rng.random(len(original))[:, None]).argmax(axis=1)
            assert (back[out] >= 0).all()  # the categories are the data's (no other value to release)
            drawn[name] = back[out]
        at = unique.get_indexer(number(drawn))  # -1: a released record that is no unique record
        found = np.zeros(unique.size, dtype=bool)
        found[at[at >= 0]] = True
        shares[r] = found.sum() / len(original)
    return shares


@pytest.mark.slow
def test_a_quantile_target_holds_in_that_share_of_releases(acs_file: Path, tmp_path: Path) -> None:
    """``matched<=3.5%@95``: 400 releases simulated from the manifest stay under the quantile bound the
    record holds at least 95 % of the time, where the expected share is exceeded about half the time."""
    key = tmp_path / "k.key"
    key.write_text(bytes(range(32)).hex() + "\n")
    key.chmod(0o600)
    out = tmp_path / "m.json"
    code, printed, err = _run(["design", str(acs_file), "--vars", ",".join(PERTURBED), "--target-keys",
                               ",".join(FEATURES), "--method", "rr", "--epsilon", "20", "--target", "matched<=3.5%@95",
                               "--out", str(out), "--key-file", str(key), "--quiet"])
    assert code == 0, err
    assert "in at least 95 % of releases" in printed and "<- kept" in printed
    found = json.loads((tmp_path / "m.design-record.json").read_text())["target"]
    assert found["level"] == 0.95 and found["matched"] == 0.035
    risk = found["risk"]
    assert risk["expected"] < risk["quantile"] <= 0.035
    manifest = pramkit.Manifest.read(out)
    assert any("95 % of the draws of the key" in s for s in manifest.ledger.data_dependent)
    original = pd.read_csv(acs_file, dtype=str, keep_default_na=False)
    shares = _simulated_shares(original, manifest, 400)
    assert abs(shares.mean() - risk["expected"]) < 4 * shares.std(ddof=1) / np.sqrt(shares.size)  # the same law
    assert np.mean(shares <= risk["quantile"]) >= 0.95
    assert np.mean(shares <= risk["expected"]) < 0.8     # the expectation is no such bound
    engine = _matched(original, pramkit.perturb_frame(original, manifest, key=SecretKey(bytes([9]) * 32, "mc")).data)
    assert np.quantile(shares, 0.001) <= engine <= np.quantile(shares, 0.999)   # the engine draws the same law


def test_a_quantile_target_refuses_a_household_design(tmp_path: Path) -> None:
    """A household's variables are drawn once for all its members: their indicators are not negatively
    associated, so no Chernoff bound is claimed; the expected target still runs."""
    from conftest import SDC_DATA

    source = SDC_DATA / "eusilc_laeken.csv"
    if not source.is_file():
        pytest.skip(f"{source} (laeken's eusilc) is not available")
    data = tmp_path / "eusilc.csv"
    pd.read_csv(source)[["db030", "db040", "rb090", "hsize"]].astype(str).to_csv(data, index=False)
    flags = ["--vars", "db040,rb090", "--household", "db030", "--household-vars", "db040", "--target-keys",
             "db040,rb090,hsize", "--method", "rr", "--epsilon", "8"]
    code, _, err = _run(["design", str(data), *flags, "--target", "matched<=30%@95", "--out",
                         str(tmp_path / "q.json")])
    assert code == 2 and "needs records drawn independently" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "q.json").exists()
    code, printed, err = _run(["design", str(data), *flags, "--target", "matched=30%", "--out",
                               str(tmp_path / "e.json"), "--quiet"])
    assert code == 0 and "expected (mean over the draws of the key)" in printed, err
