"""Keyed, counter-based randomness.

The uniform used for row ``i`` of variable ``v`` in release ``R`` is a function of
``(key, R, v, i)`` only: Philox-4x64 (Salmon et al. 2011, as shipped by NumPy) is
keyed with a 128-bit key derived from the *release key* and the variable's name
by keyed BLAKE2b, and row ``i`` consumes output word ``i`` of the stream
(counter block ``i // 4``, lane ``i % 4``).  Any chunking or partitioning of a
file therefore reproduces the same draws byte for byte.

One key, one release.  The release key is :meth:`SecretKey.for_release`: keyed
BLAKE2b of the release's identity (the digest of its manifest,
:func:`pramkit.engine.receipt.release_digest`, and an optional public label,
``apply --release``) under the secret key.  Two releases made with one key, from
two manifests or under two labels, therefore draw from independent streams: no
uniform is shared, so a value that changed between them says nothing about whether
the original changed.  The same key, manifest and label make the same release again,
byte for byte (that is what a key file is for).  The design step's keyed noise
(:meth:`SecretKey.design_random`) also depends on the data it measures: the same
question on the same data gets the same noise, on any other data independent noise.

NumPy's generator reads the stream sequentially; :func:`uniforms_at` evaluates
the same Philox-4x64-10 function directly at arbitrary row numbers (for rows
that arrive shuffled, as in a distributed job) and is tested to agree with it
word for word.

The secret key is 32 bytes or more.  By default it comes from the operating
system's entropy source and is never stored: whoever knows the key can undo
the perturbation.  A key file gives reproducible runs: ``pramkit keygen``
writes 64 hexadecimal digits, which are read as the 32 bytes they encode,
whatever whitespace, line endings or letter case the file picked up on the
way (see :func:`key_material`); any other content is the key byte for byte.
A key file must look like a key: text (a CSV file, JSON, a manifest), a data
file, a number written in decimal digits and a key of few distinct bytes are
refused (:func:`key_check`), so that a file picked by mistake never becomes the
key of a release.  A key's :attr:`SecretKey.fingerprint` tells keys apart
without revealing them.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import secrets
import stat
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pramkit.atomic import file_error, write_text_atomic
from pramkit.errors import KeyFileError, PramkitWarning

#: Minimum length of a secret key, in bytes (256 bits).
MIN_KEY_BYTES = 32
#: Most bytes read from a key file (a key is 32 to a few hundred bytes; anything longer is not a key file).
MAX_KEY_FILE_BYTES = 64 * 1024

_PERSON = b"pramkit-rng-v1"
#: Domain separation of the design step's random bits (never the perturbation's streams).
_DESIGN_PERSON = b"pramkit-design1"
#: Domain separation of the design step's bits that also depend on the data measured (:meth:`SecretKey.design_random`).
_MEASURED_PERSON = b"pramkit-design2"
#: Domain separation of release keys (:meth:`SecretKey.for_release`).
_RELEASE_PERSON = b"pramkit-release1"
#: Domain separation of the keyed digests of data that identify a release (:meth:`SecretKey.for_data`).
_DATA_PERSON = b"pramkit-data1"
#: Domain separation of key fingerprints (never the same hash as the stream keys).
_FINGERPRINT_PERSON = b"pramkit-keyfp-v1"
_HEX = re.compile(rb"[0-9a-fA-F]+")
_BOM = b"\xef\xbb\xbf"
#: Fewest distinct byte values a key may hold.  32 bytes from the operating system hold fewer with
#: probability 3.2e-17 (an occupancy count: tests/test_key_check.py computes it exactly).
MIN_DISTINCT_BYTES = 16
#: Share of printable characters above which content decoded as Unicode text is text, not a key.
TEXT_SHARE = 0.95
#: How data files begin (four bytes or more: a random key begins so with probability 2^-32 or less).
_DATA_MAGIC = ((b"PAR1", "a Parquet file"), (b"PK\x03\x04", "a ZIP archive (or a spreadsheet)"),
               (b"$FL2", "an SPSS file"), (b"$FL3", "an SPSS file"), (b"<stata_dta>", "a Stata file"),
               (b"%PDF", "a PDF document"), (b"\x89PNG", "a PNG image"))
_MAKE = "make one with `pramkit keygen FILE`"


def _as_text(content: bytes) -> str | None:
    """The content as Unicode text when it reads as text (UTF-8, or UTF-16 with its byte-order mark)."""
    try:
        if content.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = content.decode("utf-16")
        else:
            text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    shown = sum(c.isprintable() or c in "\t\n\r" for c in text)
    return text if text and shown >= TEXT_SHARE * len(text) else None


def _text_kind(text: str) -> str:
    """What a text file probably is, in words.

    Examples
    --------
    >>> _text_kind('{"format": "pramkit-manifest", "version": 1}'), _text_kind("[1, 2]")
    ('a pramkit manifest (JSON)', 'JSON text')
    >>> _text_kind("age,sex\\n0-9,f\\n"), _text_kind("my secret pass phrase, long enough")
    ('a CSV file', 'text')
    """
    body = text.strip()
    if body[:1] in "{[":
        return "a pramkit manifest (JSON)" if '"pramkit' in body[:400] else "JSON text"
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) > 1 and any(sep in lines[0] for sep in ",;\t|"):
        return "a CSV file"
    return "text"


def key_check(material: bytes, where: str = "the key file", *, content: bytes | None = None) -> bytes:
    """Refuse what does not look like a key: text, a data file, a decimal number, few distinct bytes.

    A key is random bytes.  ``pramkit keygen`` writes them as hexadecimal text;
    a file of other content is its bytes.  Text that is not hexadecimal (a CSV
    file, JSON, a manifest, a pass phrase), a data file (Parquet, SPSS, Stata,
    ZIP) and a key with fewer than :data:`MIN_DISTINCT_BYTES` distinct byte
    values (zeros, a repeated pattern) are refused; so is hexadecimal text made of
    decimal digits only (a number: 64 random hex digits are all decimal with
    probability 8.6e-14).  A key from the operating system passes except with
    probability below 1e-16.

    Parameters
    ----------
    material : bytes
        The key's bytes.
    where : str
        How messages name the file.
    content : bytes, optional
        The hexadecimal digits of the file when it holds hexadecimal text (decoded into ``material``).

    Returns
    -------
    bytes
        ``material``.

    Raises
    ------
    KeyFileError
        The file does not look like a key (the message says what it looks like).

    Examples
    --------
    >>> import os
    >>> key_check(bytes(range(32))) == bytes(range(32)), len(key_check(os.urandom(32)))
    (True, 32)
    >>> key_check(b"age,marital_status\\n0-9,married\\n" * 2)
    Traceback (most recent call last):
    ...
    pramkit.errors.KeyFileError: the key file is a CSV file, not a key: give the key file (make one with `pramkit keygen FILE`)
    >>> key_check(bytes(32))
    Traceback (most recent call last):
    ...
    pramkit.errors.KeyFileError: the key file holds 1 distinct byte value in 32 bytes: too regular to be a secret key; give the key file (make one with `pramkit keygen FILE`)
    """
    if content is not None:
        if content.isdigit():
            raise KeyFileError(f"{where} holds a number of {len(content)} decimal digits, not a key (64 hexadecimal "
                               f"digits): give the key file ({_MAKE})")
    else:
        text = _as_text(material)
        if text is not None:
            raise KeyFileError(f"{where} is {_text_kind(text)}, not a key: give the key file ({_MAKE})")
        for magic, kind in _DATA_MAGIC:
            if material.startswith(magic):
                raise KeyFileError(f"{where} is {kind}, not a key: give the key file ({_MAKE})")
    distinct = len(set(material))
    if distinct < MIN_DISTINCT_BYTES:
        values = "value" if distinct == 1 else "values"
        raise KeyFileError(f"{where} holds {distinct} distinct byte {values} in {len(material)} bytes: too regular "
                           f"to be a secret key; give the key file ({_MAKE})")
    return material


def key_material(content: bytes, where: str = "the key file") -> bytes:
    r"""The key bytes of a key file's content.

    Hexadecimal text (what ``pramkit keygen`` writes) is decoded: ASCII
    whitespace anywhere (spaces, line breaks, CR LF line endings), a UTF-8
    byte-order mark and the letter case do not matter, and it must encode at
    least 32 bytes (64 hex digits).  Any other content is the key itself, and
    must be at least 32 bytes long.  Either way it must look like a key
    (:func:`key_check`).

    Parameters
    ----------
    content : bytes
        The bytes of the key file.
    where : str
        How messages name the file.

    Returns
    -------
    bytes
        The key (at least :data:`MIN_KEY_BYTES` bytes).

    Raises
    ------
    KeyFileError
        The content is empty, an odd number of hex digits, too short, or not like a key.

    Examples
    --------
    >>> hex_key = bytes(range(32)).hex().upper()
    >>> key_material((hex_key + "\n").encode()) == key_material(("  " + hex_key.lower() + "\r\n").encode())
    True
    >>> len(key_material(hex_key.encode()))
    32
    >>> key_material(b"abcd")
    Traceback (most recent call last):
    ...
    pramkit.errors.KeyFileError: the key file holds 4 hex digits (2 bytes); a key needs at least 32 bytes (64 hex digits): make one with `pramkit keygen FILE`
    """
    text = content[len(_BOM):] if content.startswith(_BOM) else content
    compact = b"".join(text.split())
    if compact and _HEX.fullmatch(compact):
        if len(compact) % 2:
            raise KeyFileError(f"{where} holds {len(compact)} hex digits, an odd number: it is damaged or cut short")
        material = bytes.fromhex(compact.decode("ascii"))
        if len(material) < MIN_KEY_BYTES:
            raise KeyFileError(
                f"{where} holds {len(compact)} hex digits ({len(material)} bytes); a key needs at least "
                f"{MIN_KEY_BYTES} bytes ({2 * MIN_KEY_BYTES} hex digits): make one with `pramkit keygen FILE`"
            )
        return key_check(material, where, content=compact)
    if not compact:
        raise KeyFileError(f"{where} is empty: make a key with `pramkit keygen FILE`")
    if len(content) < MIN_KEY_BYTES:
        raise KeyFileError(
            f"{where} has {len(content)} bytes and is not hexadecimal text; a key needs at least "
            f"{MIN_KEY_BYTES} bytes (make one with `pramkit keygen FILE`)"
        )
    return key_check(content, where)


@dataclass(frozen=True, repr=False)
class SecretKey:
    """A secret key and a description of where it came from (never its value).

    Parameters
    ----------
    material : bytes
        The key, at least :data:`MIN_KEY_BYTES` bytes.
    source : str
        Where it came from, for messages and summaries.
    path : pathlib.Path, optional
        The key file it was read from (an input no output may overwrite).
    release : tuple of str, optional
        For a release key (:meth:`for_release`): the manifest digest and the label it was
        derived for; ``None`` for a user's key.

    Raises
    ------
    KeyFileError
        The key is shorter than :data:`MIN_KEY_BYTES` bytes.

    Examples
    --------
    The key is never shown, only where it came from:

    >>> key = SecretKey(bytes(32), "a test key")
    >>> key
    SecretKey(source='a test key')
    >>> str(bytes(32)) in str(key), key.path is None
    (False, True)
    """

    material: bytes
    source: str
    path: Path | None = None
    release: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if len(self.material) < MIN_KEY_BYTES:
            raise KeyFileError(
                f"the key from {self.source} has {len(self.material)} bytes; "
                f"at least {MIN_KEY_BYTES} are needed (make one with `pramkit keygen FILE`)"
            )

    def __repr__(self) -> str:  # never print the key material
        if self.release is None:
            return f"SecretKey(source={self.source!r})"
        digest, label = self.release
        return f"SecretKey(source={self.source!r}, release={digest[:12] + '...' + (' ' + label if label else '')!r})"

    @classmethod
    def generate(cls) -> SecretKey:
        """A fresh key from the operating system's entropy source.

        Returns
        -------
        SecretKey
            :data:`MIN_KEY_BYTES` random bytes, never stored anywhere.

        Examples
        --------
        >>> a, b = SecretKey.generate(), SecretKey.generate()
        >>> a, len(a.material), a.fingerprint != b.fingerprint
        (SecretKey(source='the operating system (not saved)'), 32, True)
        """
        return cls(secrets.token_bytes(MIN_KEY_BYTES), "the operating system (not saved)")

    @property
    def fingerprint(self) -> str:
        """16 hex digits that identify the key without revealing anything about it.

        A BLAKE2b hash of the key under its own domain-separation string: the
        holder of a key can tell which key made a release; nobody can learn
        the key, or the draws, from it.

        Examples
        --------
        >>> SecretKey(bytes(32), "zeros").fingerprint == SecretKey(bytes(32), "again").fingerprint
        True
        >>> len(SecretKey(bytes(32), "zeros").fingerprint)
        16
        """
        return hashlib.blake2b(self.material, digest_size=8, person=_FINGERPRINT_PERSON).hexdigest()

    @classmethod
    def from_file(cls, path: str | Path, *, name: str | None = None) -> SecretKey:
        """Read a key file (see :func:`key_material`); warn if other users can read it.

        Parameters
        ----------
        path : str or pathlib.Path
            The key file (``pramkit keygen`` writes one).
        name : str, optional
            How messages name the file (default: ``key file 'PATH'``); e.g. an uploaded file's own
            name, where ``path`` is a temporary copy the user never saw.

        Returns
        -------
        SecretKey
            The key, its ``source`` naming the file and its ``path`` the file.

        Raises
        ------
        KeyFileError
            The file does not exist, is a folder, cannot be read, is longer than
            :data:`MAX_KEY_FILE_BYTES` (``/dev/zero``, a pipe that never ends), or
            does not hold a key (:func:`key_material`).

        Warns
        -----
        PramkitWarning
            Other users may read or change the file (POSIX permissions).

        Examples
        --------
        A key file gives the same key, wherever it is read:

        >>> import os, pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     f = write_key_file(pathlib.Path(d) / "key")
        ...     a, b = SecretKey.from_file(f), SecretKey.from_file(str(f))
        ...     print(a.material == b.material, a.path == f, a.source.startswith("key file"))
        True True True
        """
        p = Path(path)
        where = f"key file {str(p)!r}" if name is None else name
        if p.is_dir():
            raise KeyFileError(f"{where} is a folder")
        try:
            with open(p, "rb") as fh:  # a bounded prefix: a device or pipe that never ends is refused
                content = fh.read(MAX_KEY_FILE_BYTES + 1)
            mode = p.stat().st_mode
        except FileNotFoundError:
            raise KeyFileError(f"{where} does not exist (make one with `pramkit keygen {p}`)") from None
        except OSError as exc:
            raise KeyFileError(file_error(exc, p, "read") if name is None else f"{where} cannot be read") from None
        if len(content) > MAX_KEY_FILE_BYTES:
            raise KeyFileError(f"{where} is longer than {MAX_KEY_FILE_BYTES // 1024} KiB (or never ends); "
                               "a key file holds one key, 64 hex digits: make one with `pramkit keygen FILE`")
        material = key_material(content, where)
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            can = "read" if mode & (stat.S_IRGRP | stat.S_IROTH) else "changed"
            warnings.warn(
                f"key file {str(p)!r} can be {can} by other users (mode {stat.S_IMODE(mode):04o}); "
                f"make it private with: chmod 600 {p}", PramkitWarning, stacklevel=2,
            )
        return cls(material, where, p)

    def text(self) -> str:
        """The content of a key file holding this key: its bytes as hexadecimal digits and a newline.

        For an application that offers a new key for download; a key read
        from a file that held other content is written as its bytes.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> key = SecretKey.generate()
        >>> with tempfile.TemporaryDirectory() as d:
        ...     f = pathlib.Path(d) / "key"
        ...     _ = f.write_text(key.text())
        ...     f.chmod(0o600)
        ...     SecretKey.from_file(f).fingerprint == key.fingerprint
        True
        """
        return self.material.hex() + "\n"

    def save(self, path: str | Path) -> Path:
        """Write this key to a new key file (:meth:`text`), mode 0600; a missing folder is made 0700.

        The file is written atomically and is private from its creation; an existing file is
        never overwritten.  For an application that offers a new key to keep: unlike a browser's
        download, which follows the user's umask, only the owner can read the file.

        Parameters
        ----------
        path : str or pathlib.Path
            The new key file (``~`` is the home folder).

        Returns
        -------
        pathlib.Path
            The file written.

        Raises
        ------
        KeyFileError
            ``path`` exists (a key file is never overwritten).
        WriteError
            It cannot be written.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> key = SecretKey.generate()
        >>> with tempfile.TemporaryDirectory() as d:
        ...     f = key.save(pathlib.Path(d) / "keys" / "release.key")
        ...     print(oct(f.stat().st_mode & 0o777), oct(f.parent.stat().st_mode & 0o777),
        ...           SecretKey.from_file(f).fingerprint == key.fingerprint)
        0o600 0o700 True
        """
        p = Path(path).expanduser()
        _refuse_existing(p)
        if not p.parent.exists():
            try:
                p.parent.mkdir(mode=0o700, parents=True)
            except OSError as exc:
                raise KeyFileError(file_error(exc, p.parent, "create the folder")) from None
        return _write_new_key(p, self.text())

    def design_random(self, query: str, measured: bytes | None = None) -> random.Random:
        """Random bits for one DP query of the design step (the noise of one histogram), from the key.

        The bits come from keyed BLAKE2b in counter mode under a key derived
        from the secret key, ``query`` and, when given, the exact answer being
        measured, with domain-separation strings of their own.  ``measured`` (the
        canonical bytes of the exact histogram) is hashed under the key, never
        stored nor published.  So the same key gives the same noise for the same
        query on the same data (a design made with a key file can be made again
        with it, and asking again reveals nothing new), and independent noise for
        another query *or other data*: two designs with one key never add one noise
        vector to two different histograms (overlapping files, two waves), which
        would publish the exact difference of their true counts.  Identical
        histograms get identical noisy counts: a pair of designs shows which
        histograms did not change at all.  Nothing here says anything about the
        perturbation's streams.

        Parameters
        ----------
        query : str
            What is measured, exactly (the histogram's name, cells and epsilon).
        measured : bytes, optional
            The exact answer measured (the histogram's counts); ``None`` for bits that
            depend on the key and the query only (Monte Carlo replicates of a private
            measure, which publish nothing).

        Returns
        -------
        random.Random
            A generator whose ``getrandbits`` and ``random`` read the keyed stream.

        Examples
        --------
        >>> key = SecretKey(bytes(32), "zeros")
        >>> a, b = key.design_random("sex|f,m|0.1"), key.design_random("sex|f,m|0.1")
        >>> a.getrandbits(64) == b.getrandbits(64), 0 <= a.random() < 1
        (True, True)
        >>> key.design_random("age|0-9,10-17|0.1").getrandbits(64) == key.design_random("sex|f,m|0.1").getrandbits(64)
        False

        The same question on other data gets independent noise; on the same data, the same:

        >>> counts, neighbour = np.array([966, 1034]).tobytes(), np.array([967, 1033]).tobytes()
        >>> key.design_random("sex", counts).getrandbits(64) == key.design_random("sex", counts).getrandbits(64)
        True
        >>> key.design_random("sex", counts).getrandbits(64) == key.design_random("sex", neighbour).getrandbits(64)
        False
        """
        master = hashlib.blake2b(self.material, digest_size=64, person=_DESIGN_PERSON).digest()
        if measured is None:
            return KeyedRandom(hashlib.blake2b(query.encode("utf-8"), key=master, digest_size=64,
                                               person=_DESIGN_PERSON).digest())
        answer = hashlib.blake2b(bytes(measured), key=master, digest_size=32, person=_MEASURED_PERSON).digest()
        return KeyedRandom(hashlib.blake2b(_framed(query.encode("utf-8"), answer), key=master, digest_size=64,
                                           person=_MEASURED_PERSON).digest())

    def for_release(self, digest: str, label: str = "") -> SecretKey:
        """The key of one release: every draw of the release comes from it, none from this key.

        Keyed BLAKE2b of the release's identity, ``digest`` (the manifest's,
        :func:`pramkit.engine.receipt.release_digest`) and ``label`` (``apply
        --release``, public, recorded in the receipt), under this key, with a
        domain-separation string of its own.  Two identities give independent
        keys, so two releases made with one key share no draw; the same identity
        gives the same key, so a release is made again byte for byte with its
        key, manifest and label.  The result keeps this key's ``source`` and
        ``path`` (messages, and the files an output may never overwrite); the
        fingerprint shown to users stays this key's.

        Parameters
        ----------
        digest : str
            What the release is (the manifest's digest; for a swap, the digest of what it swaps).
        label : str
            The release's label (``""``: none), checked by :func:`pramkit.validate.release_label`.

        Returns
        -------
        SecretKey
            A key of :data:`MIN_KEY_BYTES` bytes whose ``release`` is ``(digest, label)``.

        Raises
        ------
        ParameterError
            The label has control characters, blanks at either end, or is too long.

        Examples
        --------
        >>> key = SecretKey(bytes(32), "zeros")
        >>> a = key.for_release("ab" * 32)
        >>> a, a.release == ("ab" * 32, ""), a.material == key.for_release("ab" * 32).material
        (SecretKey(source='zeros', release='abababababab...'), True, True)
        >>> a.material == key.for_release("cd" * 32).material, a.material == key.for_release("ab" * 32, "wave 2").material
        (False, False)
        >>> key.for_release("ab" * 32, "wave\\n2")
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: the release label 'wave\\n2' has a control or invisible character (U+000A); use letters, digits, blanks and punctuation
        """
        from pramkit.validate import release_label

        text = release_label(label)
        master = hashlib.blake2b(self.material, digest_size=64, person=_RELEASE_PERSON).digest()
        material = hashlib.blake2b(_framed(str(digest).encode("utf-8"), text.encode("utf-8")), key=master,
                                   digest_size=MIN_KEY_BYTES, person=_RELEASE_PERSON).digest()
        return SecretKey(material, self.source, self.path, (str(digest), text))

    def for_data(self, kind: str, *parts: bytes | Pieces) -> SecretKey:
        """The key of a release whose identity is the data it releases (a swap, a numerical release).

        :meth:`for_release` of a keyed BLAKE2b digest of ``parts`` under this key (never
        stored nor published: the digest alone says nothing about the data), for releases
        drawn in one piece from data held whole, which have no manifest before they are
        drawn.  The same data and settings give the same key, so the release is made again
        byte for byte; any other data, an independent key, so two releases never share draws.

        Parameters
        ----------
        kind : str
            What is released (a domain-separation name, e.g. ``"swap"``).
        *parts : bytes or Pieces
            The canonical bytes of everything the release reads (data and settings); a large part may come as
            :class:`Pieces` (its length and its bytes in pieces), the same key as its bytes joined.

        Returns
        -------
        SecretKey

        Examples
        --------
        >>> key = SecretKey(bytes(32), "zeros")
        >>> a = key.for_data("swap", b"households", b"rate 0.1")
        >>> a.material == key.for_data("swap", b"households", b"rate 0.1").material
        True
        >>> a.material == key.for_data("swap", b"households", b"rate 0.2").material, a.release[0][:5]
        (False, 'swap:')
        >>> a.material == key.for_data("swap", Pieces(10, [b"house", b"holds"]), b"rate 0.1").material
        True
        """
        master = hashlib.blake2b(self.material, digest_size=64, person=_DATA_PERSON).digest()
        h = hashlib.blake2b(key=master, digest_size=32, person=_DATA_PERSON)
        for part in (kind.encode("utf-8"), *parts):
            pieces = part if isinstance(part, Pieces) else Pieces(len(part), (part,))
            h.update(pieces.length.to_bytes(8, "little"))
            written = 0
            for piece in pieces.chunks:
                h.update(piece)
                written += len(piece)
            if written != pieces.length:
                raise ValueError(f"a part of {pieces.length} bytes came as {written}")
        return self.for_release(f"{kind}:{h.hexdigest()}")

    def philox_key(self, variable: str) -> np.ndarray:
        """The 128-bit Philox key of one variable (two uint64 words).

        Keyed BLAKE2b of the variable's name under a hash of the secret key:
        each variable has a stream of its own, and the streams reveal nothing
        about the key or about each other.

        Parameters
        ----------
        variable : str
            The name of the stream (a variable, or a variable's household stream).

        Returns
        -------
        numpy.ndarray
            Two ``uint64`` words, the key of :class:`numpy.random.Philox`.

        Examples
        --------
        >>> key = SecretKey(bytes(32), "zeros")
        >>> words = key.philox_key("sex")
        >>> words.dtype, words.shape
        (dtype('uint64'), (2,))
        >>> bool((words == key.philox_key("sex")).all()), bool((words != key.philox_key("age")).all())
        (True, True)
        """
        master = hashlib.blake2b(self.material, digest_size=64, person=_PERSON).digest()
        digest = hashlib.blake2b(variable.encode("utf-8"), key=master, digest_size=16, person=_PERSON).digest()
        return np.frombuffer(digest, dtype="<u8").astype(np.uint64)


class Pieces(NamedTuple):
    """A part of :meth:`SecretKey.for_data` too large to join: its length in bytes and its bytes in pieces."""

    length: int
    chunks: Iterable[bytes]


def _framed(*parts: bytes) -> bytes:
    """``parts`` joined unambiguously: each prefixed with its length (8 bytes, little-endian)."""
    return b"".join(len(part).to_bytes(8, "little") + part for part in parts)


class KeyedRandom(random.Random):
    """Random bits from keyed BLAKE2b in counter mode (block ``i`` = BLAKE2b-512 of ``i`` under the key).

    Parameters
    ----------
    key : bytes
        The stream's key (64 bytes; :meth:`SecretKey.design_random` derives it).

    Examples
    --------
    >>> r = KeyedRandom(bytes(64))
    >>> first = r.getrandbits(1024)
    >>> first == KeyedRandom(bytes(64)).getrandbits(1024), first.bit_length() <= 1024
    (True, True)
    """

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._block = 0
        self._pool = 0
        self._bits = 0
        super().__init__()

    def seed(self, *args: object, **kw: object) -> None:
        """The stream is fixed by its key: seeding is ignored (``random.Random.__init__`` calls it)."""

    def getrandbits(self, k: int) -> int:
        """``k`` uniform random bits from the stream, as an integer."""
        while self._bits < k:
            block = hashlib.blake2b(self._block.to_bytes(16, "little"), key=self._key, digest_size=64).digest()
            self._pool |= int.from_bytes(block, "little") << self._bits
            self._bits += 512
            self._block += 1
        out = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._bits -= k
        return out

    def random(self) -> float:
        """A uniform double in [0, 1) from 53 bits of the stream."""
        return self.getrandbits(53) / (1 << 53)


def resolve_key(key: SecretKey | bytes | str | Path | None) -> SecretKey:
    """A :class:`SecretKey` from what a caller passed.

    ``None``: a fresh key from the OS; ``bytes``: the key itself;
    ``str`` or ``Path``: a key file.

    Parameters
    ----------
    key : SecretKey, bytes, str, pathlib.Path or None
        What the caller passed; a :class:`SecretKey` is returned as it is.

    Returns
    -------
    SecretKey

    Raises
    ------
    KeyFileError
        The bytes are too short, the key file cannot be read, or ``key`` has another type.

    Examples
    --------
    >>> resolve_key(bytes(32))
    SecretKey(source='the key given by the caller')
    >>> resolve_key(None)
    SecretKey(source='the operating system (not saved)')
    >>> resolve_key(32)
    Traceback (most recent call last):
    ...
    pramkit.errors.KeyFileError: a key must be bytes, a key file path or None, not int
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
    """Write a new random key (64 hexadecimal digits, 256 bits) to a new file, mode 0600.

    The file is written atomically and is private from its creation; an
    existing file is never overwritten.

    Parameters
    ----------
    path : str or pathlib.Path
        The new key file; its folder must exist.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    KeyFileError
        ``path`` exists (a key file is never overwritten).
    WriteError
        Its folder does not exist, or it cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = write_key_file(pathlib.Path(d) / "key")
    ...     text = f.read_text()
    ...     print(len(text.strip()), oct(f.stat().st_mode & 0o777), len(SecretKey.from_file(f).material))
    ...     try:
    ...         write_key_file(f)
    ...     except KeyFileError as exc:
    ...         print(str(exc).split("; ")[1], f.read_text() == text)
    64 0o600 32
    a key file is never overwritten True
    """
    p = Path(path)
    _refuse_existing(p)
    return _write_new_key(p, secrets.token_hex(MIN_KEY_BYTES) + "\n")


def _refuse_existing(p: Path) -> None:
    if p.exists() or p.is_symlink():
        raise KeyFileError(f"{str(p)!r} exists; a key file is never overwritten")


def _write_new_key(p: Path, text: str) -> Path:
    """``text`` into the new file ``p``, atomically, mode 0600 from its creation."""
    try:
        return write_text_atomic(p, text, force=False, mode=0o600)
    except FileExistsError:
        raise KeyFileError(f"{str(p)!r} exists; a key file is never overwritten") from None


def stream(key: SecretKey, variable: str, start: int) -> np.random.Generator:
    """The variable's stream positioned at row ``start``: its next ``random()`` values are the
    uniforms of rows ``start, start + 1, ...`` (:func:`uniforms`), drawn as they are needed.

    Parameters
    ----------
    key : SecretKey
        The secret key.
    variable : str
        The stream (:meth:`SecretKey.philox_key`).
    start : int
        The 0-based row number of the first value drawn.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> gen = stream(key, "sex", 5)
    >>> bool(np.array_equal(np.concatenate([gen.random(2), gen.random(3)]), uniforms(key, "sex", 5, 5)))
    True
    """
    start = int(start)  # a NumPy integer would overflow the 128-bit counter's arithmetic
    if start < 0:
        raise ValueError("start and n must be non-negative")
    block, lane = divmod(start, 4)
    counter = np.array([block & 0xFFFFFFFFFFFFFFFF, block >> 64, 0, 0], dtype=np.uint64)
    gen = np.random.Generator(np.random.Philox(key=key.philox_key(variable), counter=counter))
    if lane:
        gen.random(lane)
    return gen


def uniforms(key: SecretKey, variable: str, start: int, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """Uniforms on [0, 1) for rows ``start, ..., start + n - 1`` of ``variable``.

    Each value is ``(w >> 11) * 2**-53`` for the Philox output word ``w`` at
    position ``row`` of the variable's stream, exactly as NumPy's
    ``Generator(Philox(key)).random()`` would produce it from the start.

    Parameters
    ----------
    key : SecretKey
        The secret key.
    variable : str
        The stream (:meth:`SecretKey.philox_key`).
    start : int
        The absolute row number of the first uniform.
    n : int
        How many uniforms.
    out : numpy.ndarray, optional
        A float64 buffer of at least ``n`` values to fill (no allocation).

    Returns
    -------
    numpy.ndarray
        ``n`` uniforms (a view of ``out`` when given).

    Raises
    ------
    ValueError
        ``start`` or ``n`` is negative.

    Examples
    --------
    The draws of a row depend only on the key, the variable and the row, so
    any split of the rows into chunks gives the same draws:

    >>> key = SecretKey(bytes(32), "zeros")
    >>> u = uniforms(key, "sex", 0, 10)
    >>> np.round(u[:4], 4).tolist()
    [0.2981, 0.4472, 0.6309, 0.233]
    >>> bool(np.array_equal(np.concatenate([uniforms(key, "sex", 0, 3), uniforms(key, "sex", 3, 7)]), u))
    True
    >>> gen = np.random.Generator(np.random.Philox(key=key.philox_key("sex")))
    >>> bool(np.array_equal(gen.random(10), u))  # NumPy's own stream, read from the start
    True
    """
    n = int(n)
    if n < 0:
        raise ValueError("start and n must be non-negative")
    gen = stream(key, variable, start)
    if out is None:
        return gen.random(n)
    gen.random(out=out[:n])
    return out[:n]


# Philox-4x64-10 constants (Salmon, Moraes, Dror and Shaw 2011).
_M0, _M1 = np.uint64(0xD2E7470EE14C6C93), np.uint64(0xCA5A826395121157)
_W0, _W1 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBB67AE8584CAA73B)
_LOW32, _32 = np.uint64(0xFFFFFFFF), np.uint64(32)


def _mulhilo(a: np.uint64, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low 64-bit words of the 128-bit products a * b (32-bit limbs)."""
    a0, a1 = a & _LOW32, a >> _32
    b0, b1 = b & _LOW32, b >> _32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _32) + (p01 & _LOW32) + (p10 & _LOW32)
    return p11 + (p01 >> _32) + (p10 >> _32) + (mid >> _32), a * b


def _philox_words(counter: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Philox-4x64-10 of counters ``(c, 0, 0, 0)``: an array of shape (n, 4)."""
    x0 = counter.astype(np.uint64)
    x1 = np.zeros_like(x0)
    x2 = np.zeros_like(x0)
    x3 = np.zeros_like(x0)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    with np.errstate(over="ignore"):
        for _ in range(10):
            hi0, lo0 = _mulhilo(_M0, x0)
            hi1, lo1 = _mulhilo(_M1, x2)
            x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
            k0, k1 = k0 + _W0, k1 + _W1
    return np.stack([x0, x1, x2, x3], axis=1)


def words_at(key: SecretKey, variable: str, rows: np.ndarray) -> np.ndarray:
    """The 64-bit words of the variable's stream at arbitrary (non-negative) row numbers, in any order.

    Evaluates the Philox-4x64-10 function directly at each row's counter,
    for rows that arrive shuffled (a distributed job): word ``i`` is the one
    NumPy's ``Philox(key).random_raw()`` gives at position ``i``, the word
    that :func:`stream` positioned at ``i`` gives first.

    Parameters
    ----------
    key : SecretKey
        The secret key.
    variable : str
        The stream (:meth:`SecretKey.philox_key`).
    rows : array of int
        Absolute row numbers (repeats allowed).

    Returns
    -------
    numpy.ndarray of uint64
        One word per row, in the order of ``rows``.

    Raises
    ------
    ValueError
        A row number is negative.

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> rows = np.array([7, 2, 1_000_003, 2])
    >>> at = words_at(key, "sex", rows)
    >>> bool(np.array_equal(at, [stream(key, "sex", int(r)).bit_generator.random_raw() for r in rows]))
    True
    >>> bool(at[1] == at[3])  # the same row, the same draw
    True
    """
    r = np.asarray(rows, dtype=np.int64)
    if r.size and r.min() < 0:
        raise ValueError("row numbers must be non-negative")
    # NumPy's Philox increments its counter before each block: word i comes from block i // 4 + 1.
    words = _philox_words((r // 4 + 1).astype(np.uint64), key.philox_key(variable))
    return words[np.arange(r.size), r % 4]


def uniforms_at(key: SecretKey, variable: str, rows: np.ndarray) -> np.ndarray:
    """The uniforms of :func:`uniforms` at arbitrary (non-negative) row numbers, in any order:
    ``(w >> 11) 2^-53`` of :func:`words_at`.

    Parameters
    ----------
    key : SecretKey
        The secret key.
    variable : str
        The stream (:meth:`SecretKey.philox_key`).
    rows : array of int
        Absolute row numbers (repeats allowed).

    Returns
    -------
    numpy.ndarray
        One uniform per row, in the order of ``rows``.

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> rows = np.array([7, 2, 1_000_003, 2])
    >>> bool(np.array_equal(uniforms_at(key, "sex", rows), [uniforms(key, "sex", int(r), 1)[0] for r in rows]))
    True
    """
    return (words_at(key, variable, rows) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def more_words(key: SecretKey, variable: str, row: int) -> Iterator[int]:
    """Further 64-bit words of one row, for a draw that needs more than the row's own word (the exact
    geometric sampler, :class:`pramkit.engine.sampling.GeometricSampler`, about once in 10^12 values).

    A stream of its own per row: Philox keyed for ``variable`` (domain-separated from the row's
    stream) with the row number in the counter's second word, so that the words depend only on the
    key, the variable and the row, however the file is chunked.

    Parameters
    ----------
    key : SecretKey
        The secret key.
    variable : str
        The stream.
    row : int
        The absolute row number.

    Yields
    ------
    int
        Words, as many as asked for.

    Examples
    --------
    >>> key = SecretKey(bytes(32), "zeros")
    >>> a, b = more_words(key, "age", 5), more_words(key, "age", 5)
    >>> [next(a) for _ in range(3)] == [next(b) for _ in range(3)], next(more_words(key, "age", 6)) == next(a)
    (True, False)
    """
    row = int(row)
    if row < 0:
        raise ValueError("row numbers must be non-negative")
    counter = np.array([0, row & 0xFFFFFFFFFFFFFFFF, row >> 64, 0], dtype=np.uint64)
    bits = np.random.Philox(key=key.philox_key(variable + "\x00more"), counter=counter)
    while True:
        yield from (int(w) for w in bits.random_raw(4))
