"""Keyed counter-based draws: position-determined, keyed, reproducible."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from pramkit.errors import KeyFileError
from pramkit.rng import MIN_KEY_BYTES, SecretKey, resolve_key, uniforms, uniforms_at, write_key_file


def test_matches_numpy_philox_stream(key: SecretKey) -> None:
    """Row i is word i of NumPy's own Philox stream for the derived key."""
    ref = np.random.Generator(np.random.Philox(key=key.philox_key("age"))).random(1000)
    np.testing.assert_array_equal(uniforms(key, "age", 0, 1000), ref)


@pytest.mark.parametrize("start", [0, 1, 3, 4, 5, 1023, 4097])
def test_any_start_gives_the_same_values(key: SecretKey, start: int) -> None:
    whole = uniforms(key, "v", 0, 6000)
    np.testing.assert_array_equal(uniforms(key, "v", start, 6000 - start), whole[start:])


def test_variables_and_keys_give_different_streams(key: SecretKey) -> None:
    a = uniforms(key, "a", 0, 100)
    assert not np.array_equal(a, uniforms(key, "b", 0, 100))
    other = SecretKey(bytes(range(1, 33)), "other")
    assert not np.array_equal(a, uniforms(other, "a", 0, 100))
    assert not np.array_equal(SecretKey.generate().philox_key("a"), SecretKey.generate().philox_key("a"))


def test_key_files(tmp_path: Path) -> None:
    path = write_key_file(tmp_path / "k")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    k1, k2 = SecretKey.from_file(path), SecretKey.from_file(path)
    np.testing.assert_array_equal(uniforms(k1, "x", 0, 10), uniforms(k2, "x", 0, 10))
    with pytest.raises(KeyFileError, match="never overwritten"):
        write_key_file(path)
    with pytest.raises(KeyFileError, match="does not exist"):
        SecretKey.from_file(tmp_path / "absent")
    (tmp_path / "short").write_bytes(os.urandom(MIN_KEY_BYTES - 1))
    with pytest.raises(KeyFileError, match="at least 32"):
        SecretKey.from_file(tmp_path / "short")


def test_key_never_printed(key: SecretKey) -> None:
    assert bytes(range(32)).hex() not in repr(key)
    assert "test key" in repr(key)


def test_resolve_key(tmp_path: Path) -> None:
    assert resolve_key(None).source.startswith("the operating system")
    assert resolve_key(b"k" * 32).material == b"k" * 32
    write_key_file(tmp_path / "k")
    assert "key file" in resolve_key(tmp_path / "k").source
    with pytest.raises(KeyFileError):
        resolve_key(12345)  # type: ignore[arg-type]


def test_random_access_agrees_with_the_sequential_stream(key: SecretKey) -> None:
    n = 50_000
    whole = uniforms(key, "w", 0, n)
    rows = np.random.default_rng(0).permutation(n)[:7000]
    np.testing.assert_array_equal(uniforms_at(key, "w", rows), whole[rows])
    far = np.array([2**40 + 3, 10**12])
    np.testing.assert_array_equal(uniforms_at(key, "w", far[:1]), uniforms(key, "w", int(far[0]), 1))
    np.testing.assert_array_equal(uniforms_at(key, "w", far[1:]), uniforms(key, "w", int(far[1]), 1))
    assert uniforms_at(key, "w", np.array([], dtype=np.int64)).size == 0
