"""The design step's noise drawn from a key: `pramkit design --key-file` designs the same manifest again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.engine.rng import KeyedRandom, SecretKey, write_key_file


def _dp_counts(path: Path) -> dict:
    return json.loads(path.read_text())["ledger"]["dp_counts"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("keyed")
    frame = census(5_000)
    frame.loc[::97, "marital_status"] = None            # missing values kept missing
    frame.to_csv(d / "census.csv", index=False)
    return d / "census.csv"


def _design(data: Path, out: Path, *extra: str) -> Path:
    code = main(["design", str(data), "--vars", "age,sex,marital_status", "--epsilon", "3", "--out", str(out),
                 "--quiet", *extra])
    assert code == 0
    return out


def test_the_same_key_designs_the_same_noisy_counts(data: Path, tmp_path: Path) -> None:
    key = write_key_file(tmp_path / "key")
    other = write_key_file(tmp_path / "other")
    a = _dp_counts(_design(data, tmp_path / "a.json", "--key-file", str(key)))
    b = _dp_counts(_design(data, tmp_path / "b.json", "--key-file", str(key)))
    c = _dp_counts(_design(data, tmp_path / "c.json", "--key-file", str(other)))
    assert a == b and set(a) == {"age", "sex", "marital_status"}
    assert a != c                                       # another key, other noise (P(equal) is negligible)


@pytest.mark.parametrize("extra", [["--probs", "0.5,0.5"], ["--recognition", "0.5", "--combinations", "2"]])
def test_key_file_is_refused_where_there_is_no_design_noise(data: Path, tmp_path: Path, extra: list[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    key = write_key_file(tmp_path / "key")
    args = ["design", *(["--probs", "0.5,0.5"] if extra[0] == "--probs" else
                        [str(data), "--vars", "age,sex", *extra, "--out", str(tmp_path / "m.json")]),
            "--key-file", str(key)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--key-file" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key"]


def test_keyed_bits_are_uniform_and_independent_of_the_perturbation_streams() -> None:
    """Bytes of the keyed stream pass a chi-square test of uniformity; the stream differs from Philox's."""
    r = KeyedRandom(bytes(range(64)))
    values = np.array([r.getrandbits(8) for _ in range(51_200)])
    observed = np.bincount(values, minlength=256)
    assert stats.chisquare(observed).pvalue > 1e-4
    odd = [r.getrandbits(13) for _ in range(20_000)]      # widths that straddle the 512-bit blocks
    assert max(odd) < 2**13 and abs(np.mean(odd) / (2**13 - 1) - 0.5) < 0.02
    key = SecretKey(bytes(32), "zeros")
    assert key.design_random().getrandbits(64) != int(key.philox_key("design step")[0])
