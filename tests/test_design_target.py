"""``pramkit design --target matched=X%``: the largest budget whose release meets a disclosure target.

The figure the search holds is checked against releases drawn by the engine and scored as NIST's SDNist
scores unique exact matches (an implementation written here, apart from the search)."""

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
from pramkit.engine.rng import SecretKey

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
])
def test_bad_targets_are_one_line_and_write_nothing(acs_file: Path, tmp_path: Path, flags, message) -> None:
    before = acs_file.read_bytes()
    code, _, err = _run(["design", str(acs_file), "--vars", "MSP,EDU", "--epsilon", "5", "--method", "rr", *flags,
                         "--out", str(tmp_path / "m.json")])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == [] and acs_file.read_bytes() == before
