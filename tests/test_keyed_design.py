"""The design step's noise drawn from a key: `pramkit design --key-file` designs the same manifest again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.kernel.rng import KeyedRandom, SecretKey, write_key_file


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
    assert key.design_random("sex").getrandbits(64) != int(key.philox_key("sex")[0])


def test_keyed_noise_is_the_discrete_laplace_of_the_mechanism() -> None:
    """Over many keys, the keyed noise of a histogram follows P(k) = (1-q)/(1+q) q^|k|, q = exp(-eps/2)."""
    from pramkit.release.frequencies import dp_frequencies

    eps, true = 1.0, np.array([1_000, 1_000])
    noise = []
    for i in range(2_000):
        key = SecretKey(i.to_bytes(32, "little"), f"test key {i}")
        _, out = dp_frequencies({"x": true}, eps, None, keyed={"x": (key, ["a", "b"])})
        noise.extend(np.asarray(out["x"]["noisy"]) - true)
    q = np.exp(-eps / 2)
    ks = np.arange(-6, 7)
    pmf = (1 - q) / (1 + q) * q ** np.abs(ks)
    observed = np.array([np.sum(np.asarray(noise) == k) for k in ks] + [np.sum(np.abs(noise) > 6)])
    expected = np.append(pmf, 1 - pmf.sum()) * len(noise)
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_another_histogram_gets_independent_noise() -> None:
    """The same key measuring another histogram (other cells, or another epsilon) does not repeat its noise."""
    from pramkit.release.frequencies import dp_frequencies

    key = SecretKey(bytes(range(32)), "a test key")
    true = np.full(50, 10_000)

    def noise(labels: list[str], eps: float) -> np.ndarray:
        _, out = dp_frequencies({"x": true}, eps, None, keyed={"x": (key, labels)})
        return np.asarray(out["x"]["noisy"]) - true

    base = noise([str(i) for i in range(50)], 5.0)
    assert np.array_equal(base, noise([str(i) for i in range(50)], 5.0))
    assert not np.array_equal(base, noise([f"c{i}" for i in range(50)], 5.0))
    assert not np.array_equal(base, noise([str(i) for i in range(50)], 5.000001))
