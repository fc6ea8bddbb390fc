"""Keyed, counter-based randomness.

The uniform used for row ``i`` of variable ``v`` is a function of
``(key, v, i)`` only: Philox-4x64 (Salmon et al. 2011, as shipped by NumPy) is
keyed with a 128-bit key derived from the secret key and the variable's name
by keyed BLAKE2b, and row ``i`` consumes output word ``i`` of the stream
(counter block ``i // 4``, lane ``i % 4``).  Any chunking or partitioning of a
file therefore reproduces the same draws byte for byte.

The secret key is 32 bytes or more.  By default it comes from the operating
system's entropy source and is never stored: whoever knows the key can undo
the perturbation.  A key file gives reproducible runs.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pramkit.errors import KeyFileError

#: Minimum length of a secret key, in bytes (256 bits).
MIN_KEY_BYTES = 32

_PERSON = b"pramkit-rng-v1"


@dataclass(frozen=True, repr=False)
class SecretKey:
    """A secret key and a description of where it came from (never its value)."""

    material: bytes
    source: str

    def __post_init__(self) -> None:
        if len(self.material) < MIN_KEY_BYTES:
            raise KeyFileError(
                f"the key from {self.source} has {len(self.material)} bytes; "
                f"at least {MIN_KEY_BYTES} are needed (make one with `pramkit keygen FILE`)"
            )

    def __repr__(self) -> str:  # never print the key material
        return f"SecretKey(source={self.source!r})"

    @classmethod
    def generate(cls) -> "SecretKey":
        """A fresh key from the operating system's entropy source."""
        return cls(secrets.token_bytes(MIN_KEY_BYTES), "the operating system (not saved)")

    @classmethod
    def from_file(cls, path: str | Path) -> "SecretKey":
        """Read a key file: its whole content (at least 32 bytes) is the key."""
        p = Path(path)
        try:
            material = p.read_bytes()
        except FileNotFoundError:
            raise KeyFileError(f"key file {str(p)!r} does not exist (make one with `pramkit keygen {p}`)") from None
        except OSError as exc:
            raise KeyFileError(f"cannot read key file {str(p)!r}: {exc.strerror}") from None
        return cls(material, f"key file {str(p)!r}")

    def philox_key(self, variable: str) -> np.ndarray:
        """The 128-bit Philox key of one variable (two uint64 words)."""
        master = hashlib.blake2b(self.material, digest_size=64, person=_PERSON).digest()
        digest = hashlib.blake2b(variable.encode("utf-8"), key=master, digest_size=16, person=_PERSON).digest()
        return np.frombuffer(digest, dtype="<u8").astype(np.uint64)


def resolve_key(key: "SecretKey | bytes | str | Path | None") -> SecretKey:
    """A :class:`SecretKey` from what a caller passed.

    ``None``: a fresh key from the OS; ``bytes``: the key itself;
    ``str`` or ``Path``: a key file.
    """
    if key is None:
        return SecretKey.generate()
    if isinstance(key, SecretKey):
        return key
    if isinstance(key, (bytes, bytearray)):
        return SecretKey(bytes(key), "the key given by the caller")
    if isinstance(key, (str, Path)):
        return SecretKey.from_file(key)
    raise KeyFileError(f"a key must be bytes, a key file path or None, not {type(key).__name__}")


def write_key_file(path: str | Path) -> Path:
    """Write a new random key (64 hexadecimal characters, 256 bits) to a new file, mode 0600."""
    p = Path(path)
    data = (secrets.token_hex(MIN_KEY_BYTES) + "\n").encode("ascii")
    try:
        with open(p, "xb") as fh:
            fh.write(data)
    except FileExistsError:
        raise KeyFileError(f"{str(p)!r} exists; a key file is never overwritten") from None
    p.chmod(0o600)
    return p


def uniforms(key: SecretKey, variable: str, start: int, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """Uniforms on [0, 1) for rows ``start, ..., start + n - 1`` of ``variable``.

    Each value is ``(w >> 11) * 2**-53`` for the Philox output word ``w`` at
    position ``row`` of the variable's stream, exactly as NumPy's
    ``Generator(Philox(key)).random()`` would produce it from the start.
    """
    if start < 0 or n < 0:
        raise ValueError("start and n must be non-negative")
    block, lane = divmod(start, 4)
    counter = np.array([block & 0xFFFFFFFFFFFFFFFF, block >> 64, 0, 0], dtype=np.uint64)
    gen = np.random.Generator(np.random.Philox(key=key.philox_key(variable), counter=counter))
    if lane:
        gen.random(lane)
    if out is None:
        return gen.random(n)
    gen.random(out=out[:n])
    return out[:n]
