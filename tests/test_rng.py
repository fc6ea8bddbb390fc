"""Keyed counter-based draws: position-determined, keyed, reproducible."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from pramkit.errors import KeyFileError
from pramkit.kernel.rng import MIN_KEY_BYTES, SecretKey, resolve_key, uniforms, uniforms_at, write_key_file


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


def test_hex_key_files_survive_line_endings_case_and_whitespace(tmp_path: Path) -> None:
    """A key file that went through another system or an e-mail client gives the same key."""
    path = write_key_file(tmp_path / "k")
    text = path.read_text().strip()
    assert len(text) == 64 and SecretKey.from_file(path).material == bytes.fromhex(text)
    variants = {
        "crlf": (text + "\r\n").encode(),
        "upper": text.upper().encode(),
        "no newline": text.encode(),
        "spaces": ("  " + text[:32] + "\n" + text[32:] + "  \n\n").encode(),
        "bom": b"\xef\xbb\xbf" + text.encode() + b"\r\n",
    }
    for name, content in variants.items():
        (tmp_path / name).write_bytes(content)
        (tmp_path / name).chmod(0o600)
        assert SecretKey.from_file(tmp_path / name).material == bytes.fromhex(text), name
        assert SecretKey.from_file(tmp_path / name).fingerprint == SecretKey.from_file(path).fingerprint


def test_other_key_files_are_raw_bytes(tmp_path: Path) -> None:
    raw = bytes(range(200, 240))  # not hex text: the bytes themselves
    (tmp_path / "raw").write_bytes(raw)
    (tmp_path / "raw").chmod(0o600)
    assert SecretKey.from_file(tmp_path / "raw").material == raw
    for content, message in [
        (b"ab" * 20, "at least 32 bytes"),  # hex, but only 20 bytes
        (b"a" * 65, "odd number"),
        (b" \r\n", "empty"),
        (b"\x00\x01", "at least 32"),
    ]:
        (tmp_path / "bad").write_bytes(content)
        with pytest.raises(KeyFileError, match=message):
            SecretKey.from_file(tmp_path / "bad")


def test_fingerprint_identifies_without_revealing(tmp_path: Path, key: SecretKey) -> None:
    fp = key.fingerprint
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fp == SecretKey(key.material, "again").fingerprint
    assert fp != SecretKey(bytes(range(1, 33)), "other").fingerprint
    assert fp not in key.material.hex() and key.material.hex()[:16] != fp
    # not the hash used for the random streams
    assert fp not in key.philox_key("x").tobytes().hex()


def test_readable_key_file_warns(tmp_path: Path) -> None:
    from pramkit.errors import PramkitWarning

    path = write_key_file(tmp_path / "k")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SecretKey.from_file(path)  # 0600: no warning
    path.chmod(0o644)
    with pytest.warns(PramkitWarning, match="can be read by other users"):
        SecretKey.from_file(path)
    path.chmod(0o620)  # group may write, not read: said as it is
    with pytest.warns(PramkitWarning, match="can be changed by other users"):
        SecretKey.from_file(path)


def test_key_file_is_private_from_the_start_and_complete(tmp_path: Path) -> None:
    path = write_key_file(tmp_path / "k")
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["k"]
    assert path.read_bytes().endswith(b"\n") and len(path.read_bytes()) == 65
