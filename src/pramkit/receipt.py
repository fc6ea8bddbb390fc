"""Release receipts: which manifest made a released file.

``pramkit apply`` writes a small JSON receipt beside the released file,
``OUT.receipt.json``.  It is public, like the manifest, and holds only

* the SHA-256 digest of the manifest that made the release,
* the pramkit version that made it,
* the row count and the SHA-256 digest of the released file (no digest for a
  folder of part files written by Spark),

nothing computed from the original file.  Commands that read a release with
a manifest (``pramkit estimate``, ``risk``, ``report``) call
:func:`check_release`: a release made with another manifest is refused, and a
release without a receipt gets a note.

A release and its receipt are written together (:func:`receipt_after`): the
receipt is written to its temporary first and renamed into place right after
the released file, so a failed release never replaces the receipt of the
release it leaves in place.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from pramkit._version import __version__
from pramkit.atomic import PathLike, Staged, check_writable, staged_bytes, write_text_atomic
from pramkit.errors import PramkitError, WriteError
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
    text = receipt_text(p, manifest, rows=rows, digest=digest, folder=p.is_dir())
    return write_text_atomic(receipt_path(p), text, force=True, inputs=inputs)


def receipt_text(
    released: PathLike,
    manifest: Manifest | PathLike,
    *,
    rows: int,
    digest: str | None = None,
    folder: bool = False,
) -> str:
    """The JSON text of a receipt (see :func:`write_receipt`; ``folder``: a folder of part files, no digest).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> json.loads(receipt_text("out.csv", m, rows=3, digest="ab" * 32))["released_file"]
    'out.csv'
    """
    p = Path(released)
    digests = manifest_digests(manifest)
    primary = _primary_digest(manifest)
    receipt: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "pramkit_version": __version__,
        "released_file": p.name,
        "released_sha256": None if folder else digest if digest is not None else sha256_of(p),
        "rows": int(rows),
        "manifest_sha256": primary,
        "manifest_content_sha256": sorted(digests - {primary})[0] if len(digests) > 1 else primary,
    }
    return json.dumps(receipt, indent=2) + "\n"


class PendingReceipt:
    """The receipt of a release being written (see :func:`receipt_after`)."""

    def __init__(self, stack: contextlib.ExitStack, released: Path, manifest: Manifest | PathLike,
                 inputs: list[PathLike | None]) -> None:
        self._stack = stack
        self._released = released
        self._manifest = manifest
        self._inputs = inputs
        self._stage: Staged | None = None

    @property
    def filled(self) -> bool:
        """Whether :meth:`fill` has written the receipt's content."""
        return self._stage is not None

    def fill(self, *, rows: int, digest: str | None = None, folder: bool = False) -> None:
        """Write the receipt's content to its temporary: call it before the release is renamed into place.

        Parameters
        ----------
        rows : the released file's row count
        digest : the released file's SHA-256 (of its temporary, e.g.
            :attr:`pramkit.io.TableWriter.sha256`); ignored for a folder
        folder : the release is a folder of part files (no digest)
        """
        text = receipt_text(self._released, self._manifest, rows=rows, digest=digest, folder=folder)
        if self._stage is None:  # its temporary appears only now, once the release is written
            self._stage = self._stack.enter_context(
                staged_bytes(receipt_path(self._released), force=True, inputs=self._inputs))
        self._stage.write(text.encode("utf-8"))


@contextlib.contextmanager
def receipt_after(
    released: PathLike,
    manifest: Manifest | PathLike,
    *,
    inputs: Iterable[PathLike | None] = (),
    enabled: bool = True,
) -> Iterator[PendingReceipt | None]:
    """Write a release's receipt so that it appears right after the release, never before.

    Enter this block first and the release's own atomic block inside it;
    call :meth:`PendingReceipt.fill` before the inner block ends::

        with receipt_after(out, manifest) as pending:
            with TableWriter(out, force=True) as writer:
                ...
                writer.close()
                pending.fill(rows=writer.rows, digest=writer.sha256)
            # here the release is in place
        # here its receipt is

    The receipt's path is checked on entering (before any work).  If the
    release fails, its receipt is discarded and an earlier release keeps its
    receipt.  If the receipt cannot be renamed into place once the release is
    (a rare fault: its content was written already), the error says so and
    names the receipt that is now stale.

    Parameters
    ----------
    released : the released file (or folder)
    manifest : the manifest that makes it (its file, or the object)
    inputs : files the receipt may never overwrite
    enabled : ``False`` yields ``None`` and writes no receipt

    Raises
    ------
    WriteError
        the receipt could not be written; after the release is in place the
        message says that the release was written without its receipt

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.atomic import write_text_atomic
    >>> from pramkit.design.classic import randomized_response
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with receipt_after(d / "out.csv", m) as pending:
    ...     pending.fill(rows=1, digest=hashlib.sha256(b"sex\\nf\\n").hexdigest())
    ...     _ = write_text_atomic(d / "out.csv", "sex\\nf\\n", force=False)
    >>> check_release(d / "out.csv", m) is None
    True
    """
    if not enabled:
        yield None
        return
    p, inputs = Path(released), list(inputs)
    target = check_writable(receipt_path(p), force=True, inputs=inputs)
    earlier = target.exists()
    released_in_place = False
    try:
        with contextlib.ExitStack() as stack:
            pending = PendingReceipt(stack, p, manifest, inputs)
            yield pending
            assert pending.filled, "PendingReceipt.fill was not called before the release was renamed into place"
            released_in_place = True
    except PramkitError as exc:
        if not released_in_place:
            raise
        state = (f"the receipt {target.name} beside it is stale (it describes the earlier release)" if earlier
                 else "it has no receipt")
        raise WriteError(f"{str(p)!r} was written but its receipt was not ({exc}); {state}: "
                         "run the command again to write both") from None


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
