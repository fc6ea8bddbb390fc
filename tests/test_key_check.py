"""A key file must look like a key: text, data files, numbers and regular bytes are refused, by the library
(:func:`pramkit.kernel.rng.key_check`) and so by every command that reads a key file."""

from __future__ import annotations

import contextlib
import io
import json
import os
from fractions import Fraction
from functools import lru_cache
from math import comb, factorial
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pramkit.cli import main
from pramkit.datasets import census
from pramkit.design.classic import randomized_response
from pramkit.errors import KeyFileError
from pramkit.kernel.rng import MIN_DISTINCT_BYTES, SecretKey, key_check, key_material, write_key_file
from pramkit.manifest import Manifest

RULES = 'age,marital_status\n0-9,"married, spouse present|married, spouse absent|separated|divorced|widowed"\n'


@lru_cache(None)
def _stirling2(n: int, k: int) -> int:
    if n == k:
        return 1
    if k == 0 or k > n:
        return 0
    return k * _stirling2(n - 1, k) + _stirling2(n - 1, k - 1)


def test_a_key_from_the_operating_system_is_refused_with_negligible_probability() -> None:
    """P(fewer than 16 distinct values among 32 uniform bytes), exactly, by the occupancy law
    P(D = d) = C(256, d) S(32, d) d! / 256^32 (Stirling numbers of the second kind)."""
    n = 32
    refused = sum(Fraction(comb(256, d) * _stirling2(n, d) * factorial(d), 256 ** n)
                  for d in range(1, MIN_DISTINCT_BYTES))
    total = sum(Fraction(comb(256, d) * _stirling2(n, d) * factorial(d), 256 ** n) for d in range(1, n + 1))
    assert total == 1
    assert refused < Fraction(1, 10 ** 16)
    assert Fraction(10, 16) ** 64 < Fraction(1, 10 ** 13)    # 64 hex digits all decimal


def test_keys_written_by_keygen_and_random_keys_pass(tmp_path: Path) -> None:
    for i in range(200):
        path = write_key_file(tmp_path / f"k{i}")
        assert len(SecretKey.from_file(path).material) == 32
    for _ in range(2_000):
        material = os.urandom(32)
        assert key_check(material) == material


@pytest.mark.parametrize("content", [
    bytes(range(32)),                      # the test suite's raw key
    bytes(range(200, 240)),
    bytes(range(3, 35)),
    (bytes(range(32)).hex() + "\n").encode(),
    ("\ufeff" + bytes(range(1, 33)).hex().upper() + "\r\n").encode("utf-8"),
])
def test_the_test_suites_keys_pass(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "key"
    path.write_bytes(content)
    path.chmod(0o600)
    assert len(SecretKey.from_file(path).material) >= 32


def _manifest(tmp_path: Path) -> bytes:
    path = tmp_path / "other-manifest.json"
    Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).write(path)
    return path.read_bytes()


def _parquet(tmp_path: Path) -> bytes:
    census(50)[["sex"]].to_parquet(tmp_path / "d.parquet", index=False)
    return (tmp_path / "d.parquet").read_bytes()


BAD = {
    "rules CSV": (lambda d: RULES.encode(), "a CSV file"),
    "census CSV": (lambda d: census(200).to_csv(index=False).encode(), "a CSV file"),
    "manifest": (_manifest, "a pramkit manifest"),
    "JSON": (lambda d: json.dumps({"key": "0123456789abcdef" * 4}).encode(), "JSON text"),
    "pass phrase": (lambda d: b"correct horse battery staple, my key", "is text"),
    "UTF-16 text": (lambda d: "région,âge\nÎle-de-France,15-24\nNord,25-34\n".encode("utf-16"), "a CSV file"),
    "Parquet": (_parquet, "a Parquet file"),
    "zeros": (lambda d: bytes(64), "1 distinct byte value"),
    "pattern": (lambda d: b"\x01\x02\x03\x04" * 16, "4 distinct byte values"),
    "hex zeros": (lambda d: b"00" * 32 + b"\n", "decimal digits"),
    "hex ones": (lambda d: b"FF" * 32 + b"\n", "1 distinct byte value"),
    "hex pattern": (lambda d: b"ab" * 32, "too regular"),
    "decimal number": (lambda d: b"1234567890" * 7 + b"\n", "decimal digits"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_what_is_not_a_key_is_refused(tmp_path: Path, name: str) -> None:
    make, message = BAD[name]
    path = tmp_path / "key"
    path.write_bytes(make(tmp_path))
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match=message) as caught:
        SecretKey.from_file(path)
    assert "not a key" in str(caught.value) or "too regular" in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(KeyFileError, match=r"the uploaded file 'rules\.csv'"):
        SecretKey.from_file(path, name="the uploaded file 'rules.csv'")


@pytest.mark.parametrize("name", ["rules CSV", "manifest", "hex zeros", "Parquet"])
def test_the_command_line_refuses_them_in_one_line_and_writes_nothing(tmp_path: Path, name: str) -> None:
    data = tmp_path / "data.csv"
    census(300)[["sex", "age"]].to_csv(data, index=False)
    manifest = tmp_path / "m.json"
    assert main(["design", str(data), "--vars", "sex", "--method", "rr", "--epsilon", "1", "--out", str(manifest),
                 "--quiet"]) == 0
    key = tmp_path / "given.key"
    key.write_bytes(BAD[name][0](tmp_path))
    key.chmod(0o600)
    before = sorted(p.name for p in tmp_path.iterdir())
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(["apply", str(data), "--manifest", str(manifest), "--key-file", str(key),
                     "--out", str(tmp_path / "released.csv"), "--quiet"])
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
    assert BAD[name][1] in err.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=300))
def test_any_content_is_a_key_or_a_one_line_refusal(content: bytes) -> None:
    """What is accepted looks like a key: enough distinct bytes, and not Unicode text unless hexadecimal."""
    try:
        material = key_material(content)
    except KeyFileError as exc:
        assert "\n" not in str(exc)
        return
    assert len(material) >= 32 and len(set(material)) >= MIN_DISTINCT_BYTES
    compact = b"".join(content.split()).removeprefix(b"\xef\xbb\xbf")
    if material != content:                                        # decoded hexadecimal text
        assert bytes.fromhex(compact.decode()) == material and not compact.isdigit()


def test_a_pandas_frame_written_as_csv_is_never_a_key(tmp_path: Path) -> None:
    """Real data written by pandas (missing values, Unicode labels) is refused, whatever its size."""
    frame = pd.DataFrame({"région": ["Île-de-France", None, "Zürich"] * 20, "âge": ["15-24", "NA", ""] * 20})
    path = tmp_path / "survey.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(KeyFileError, match="a CSV file, not a key"):
        SecretKey.from_file(path)
