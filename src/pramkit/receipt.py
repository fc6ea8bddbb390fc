"""Release receipts: which manifest made a released file.

``pramkit apply`` writes a small JSON receipt beside the released file,
``OUT.receipt.json``.  It is public, like the manifest, and holds only

* the SHA-256 digest of the manifest that made the release,
* the pramkit version that made it,
* the row count and the SHA-256 digest of the released file (no digest for a
  folder of part files written by Spark),

nothing computed from the original file.  Commands that read a release with
a manifest (``pramkit estimate``) call :func:`check_release`: a release made
with another manifest is refused, and a release without a receipt gets a note.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from pramkit._version import __version__
from pramkit.atomic import PathLike, write_text_atomic
from pramkit.errors import PramkitError
from pramkit.io import sha256_of
from pramkit.manifest import Manifest

FORMAT = "pramkit-release-receipt"
VERSION = 1
#: Appended to the released file's name.
SUFFIX = ".receipt.json"


def receipt_path(released: PathLike) -> Path:
    """Where the receipt of a released file (or folder) lives.

    Examples
    --------
    >>> receipt_path("out/released.csv").as_posix()
    'out/released.csv.receipt.json'
    """
    p = Path(released)
    return p.with_name(p.name + SUFFIX)


def manifest_digests(manifest: Manifest | PathLike) -> set[str]:
    """The SHA-256 digests that identify a manifest.

    For a file: the digest of its bytes, and the digest of its content as
    pramkit writes it (:meth:`Manifest.to_json`), so that a manifest object
    and the file it was written to are recognised as the same; for a
    :class:`Manifest` object, the latter only.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> len(manifest_digests(m)), len(next(iter(manifest_digests(m))))
    (1, 64)
    """
    if isinstance(manifest, Manifest):
        return {hashlib.sha256(manifest.to_json().encode("utf-8")).hexdigest()}
    return {sha256_of(manifest)} | manifest_digests(Manifest.read(manifest))


def _primary_digest(manifest: Manifest | PathLike) -> str:
    if isinstance(manifest, Manifest):
        return next(iter(manifest_digests(manifest)))
    return sha256_of(manifest)


def write_receipt(
    released: PathLike,
    manifest: Manifest | PathLike,
    *,
    rows: int,
    digest: str | None = None,
    inputs: Iterable[PathLike | None] = (),
) -> Path:
    """Write the receipt of a released file (atomically; it replaces an earlier release's receipt).

    Parameters
    ----------
    released : the released file, or folder of part files
    manifest : the manifest that made it (its file, or the object)
    rows : the released file's row count
    digest : the released file's SHA-256, if known (e.g. computed before the
        file was renamed into place); else computed from the file (none for a folder)
    inputs : files the receipt may never overwrite (see :func:`pramkit.atomic.check_writable`)

    Returns
    -------
    The receipt's path (:func:`receipt_path`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> _ = (d / "out.csv").write_text("sex\\nf\\n")
    >>> write_receipt(d / "out.csv", m, rows=1).name
    'out.csv.receipt.json'
    >>> check_release(d / "out.csv", m) is None
    True
    """
    p = Path(released)
    digests = manifest_digests(manifest)
    primary = _primary_digest(manifest)
    receipt: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "pramkit_version": __version__,
        "released_file": p.name,
        "released_sha256": digest if digest is not None or p.is_dir() else sha256_of(p),
        "rows": int(rows),
        "manifest_sha256": primary,
        "manifest_content_sha256": sorted(digests - {primary})[0] if len(digests) > 1 else primary,
    }
    return write_text_atomic(receipt_path(p), json.dumps(receipt, indent=2) + "\n", force=True, inputs=inputs)


def read_receipt(released: PathLike) -> dict[str, Any] | None:
    """The receipt of a released file, or ``None`` if it has none.

    Raises :class:`PramkitError` for a receipt that cannot be read.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> read_receipt(pathlib.Path(tempfile.mkdtemp()) / "released.csv") is None
    True
    """
    path = receipt_path(released)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PramkitError(f"the release receipt {str(path)!r} cannot be read: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PramkitError(f"{str(path)!r} is not a pramkit release receipt")
    return data


def check_release(released: PathLike, manifest: Manifest | PathLike) -> str | None:
    """Check that ``manifest`` is the manifest that made ``released``.

    Returns ``None`` when the release's receipt names this manifest (or the
    release does not exist: reading it will fail), and a note (one line) when
    it cannot be checked: no receipt, or a released file changed since its
    receipt was written.

    Raises
    ------
    PramkitError
        the receipt names another manifest (one line; analysing a release
        with the wrong manifest silently gives wrong estimates)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "out.csv").write_text("sex\\nf\\n")
    >>> from pramkit.design.classic import randomized_response
    >>> check_release(d / "out.csv", Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}))[:25]
    'no release receipt beside'
    """
    p = Path(released)
    if not p.exists():
        return None  # the command reading it says so
    where = receipt_path(p)
    label = "the manifest" if isinstance(manifest, Manifest) else repr(str(manifest))
    try:
        receipt = read_receipt(p)
    except PramkitError as exc:
        return f"{exc}: cannot check that {label} is the manifest that made {str(p)!r}"
    if receipt is None:
        return (f"no release receipt beside {str(p)!r} ({where.name}): cannot check that {label} "
                "is the manifest that made it")
    recorded = receipt.get("released_sha256")
    if recorded is not None and p.is_file() and sha256_of(p) != recorded:
        return (f"{str(p)!r} has changed since its receipt {where.name} was written: cannot check that "
                f"{label} is the manifest that made it")
    named = {receipt.get("manifest_sha256"), receipt.get("manifest_content_sha256")} - {None}
    if named & manifest_digests(manifest):
        return None
    shown = str(receipt.get("manifest_sha256", "?"))[:12]
    raise PramkitError(
        f"{str(p)!r} was released with another manifest (its receipt {where.name} names manifest "
        f"sha256 {shown}..., not {label}); use the manifest published with the release"
    )
