"""Release receipts: which manifest made a released file.

``pramkit apply`` writes a small JSON receipt beside the released file,
``OUT.receipt.json``.  It is public, like the manifest, and holds only

* the SHA-256 digest of the manifest that made the release,
* the pramkit version that made it,
* the row count and the SHA-256 digest of the released file (no digest for a
  folder of part files written by Spark),
* the release's label (``release``, ``apply --release``; ``""`` for none), which the
  release key is derived from with the manifest (:func:`release_digest`), so that the
  key, the manifest and the receipt make the release again,

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
import dataclasses
import hashlib
import json
import os
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit._json import read_json
from pramkit._version import __version__
from pramkit.atomic import PathLike, Staged, check_writable, staged_bytes, write_text_atomic
from pramkit.errors import DataError, ParameterError, PramkitError, PramkitWarning, WriteError
from pramkit.io import sha256_of
from pramkit.manifest import Manifest
from pramkit.source import Source
from pramkit.validate import release_label

if TYPE_CHECKING:
    from pramkit.privacy.amplification import Guarantees

FORMAT = "pramkit-release-receipt"
VERSION = 1
#: Appended to the released file's name.
SUFFIX = ".receipt.json"


def receipt_path(released: PathLike) -> Path:
    """Where the receipt of a released file (or folder) lives.

    Parameters
    ----------
    released : str or os.PathLike
        The released file, or folder of part files.

    Returns
    -------
    pathlib.Path
        ``released`` with :data:`SUFFIX` appended to its name, in the same folder.

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

    Parameters
    ----------
    manifest : Manifest, or str or os.PathLike
        The manifest object, or its file.

    Returns
    -------
    set of str
        Hexadecimal SHA-256 digests (one or two).

    Raises
    ------
    ManifestError
        The manifest file does not exist or is not a valid manifest.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> len(manifest_digests(m)), len(next(iter(manifest_digests(m))))
    (1, 64)

    The file pramkit wrote is the object; a copy laid out otherwise (other
    bytes, same content) is still recognised through its content:

    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = m.write(pathlib.Path(d) / "manifest.json")
    ...     print(manifest_digests(f) == manifest_digests(m))
    ...     _ = f.write_text(json.dumps(json.loads(f.read_text())))  # one line
    ...     print(len(manifest_digests(f)), manifest_digests(m) <= manifest_digests(f))
    True
    2 True
    """
    if isinstance(manifest, Manifest):
        return {per_manifest(_CONTENT_DIGESTS, manifest, _content_digest)}
    return {sha256_of(Path(manifest))} | manifest_digests(Manifest.read(Path(manifest)))


#: Digests of manifest objects by their identity (:func:`per_manifest`): the content digest, the release digest.
_CONTENT_DIGESTS: dict[int, tuple[weakref.ref, str]] = {}
_RELEASE_DIGESTS: dict[int, tuple[weakref.ref, str]] = {}


def _content_digest(manifest: Manifest) -> str:
    return hashlib.sha256(manifest.to_json().encode("utf-8")).hexdigest()


def per_manifest(cache: dict[int, tuple[weakref.ref, str]], manifest: Manifest,
                 compute: Callable[[Manifest], str]) -> str:
    """``compute(manifest)``, computed once per manifest object and kept in ``cache`` while the object lives.

    A manifest is frozen and its matrices are read-only, so what is computed from its content
    stays true of the object; writing it out as JSON takes longer than perturbing a million values
    of a variable of 10 000 categories, which :func:`pramkit.perturb_frame` would otherwise pay on
    every call.

    Parameters
    ----------
    cache : dict
        The cache of this ``compute`` (by ``id``, with a weak reference that drops the entry).
    manifest : Manifest
        The manifest.
    compute : callable
        What to compute from it.

    Returns
    -------
    str

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> cache, calls = {}, []
    >>> first = per_manifest(cache, m, lambda x: calls.append(1) or release_digest(x))
    >>> first == per_manifest(cache, m, lambda x: calls.append(1) or release_digest(x)), len(calls)
    (True, 1)
    >>> del m
    >>> cache
    {}
    """
    ident = id(manifest)
    entry = cache.get(ident)
    if entry is not None and entry[0]() is manifest:
        return entry[1]
    value = compute(manifest)
    cache[ident] = (weakref.ref(manifest, lambda _ref: cache.pop(ident, None)), value)
    return value


#: Fields of a manifest that differ between two runs of one design: when it was written, by which version of
#: pramkit, how long its steps took.
RUN_FIELDS = ("created", "pramkit_version", "seconds")


def release_digest(manifest: Manifest | PathLike) -> str:
    """The identity of the release a manifest makes: the digest its release key is derived from.

    The SHA-256 of the manifest's content as pramkit writes it
    (:meth:`Manifest.to_dict`, in canonical JSON), without the fields that only say
    when it was written, by which version and how long its steps took
    (:data:`RUN_FIELDS`): a manifest object and the file it was written to, or the
    file laid out otherwise, have one identity, and so do two runs of one design
    (the same key, data and settings design the same manifest, which makes the same
    release: redoing a release reveals nothing new).  Any other content, a matrix, a
    variable, a setting, the ledger, is another release, drawn from another stream
    (:meth:`pramkit.kernel.rng.SecretKey.for_release`).

    Parameters
    ----------
    manifest : Manifest, or str or os.PathLike
        The manifest object, or its file.

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    ManifestError
        The manifest file does not exist or is not a valid manifest.

    Examples
    --------
    >>> import dataclasses, pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = m.write(pathlib.Path(d) / "manifest.json")
    ...     print(release_digest(f) == release_digest(m))
    True
    >>> release_digest(dataclasses.replace(m, created="2020-01-01T00:00:00Z")) == release_digest(m)  # when: not what
    True
    >>> release_digest(Manifest.of({"sex": randomized_response(["f", "m"], 2.0)})) == release_digest(m)
    False
    """
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(Path(manifest))

    def content(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: content(v) for k, v in x.items() if k not in RUN_FIELDS}
        if isinstance(x, list):
            return [content(v) for v in x]
        return x

    text = json.dumps(content(man.to_dict()), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _primary_digest(manifest: Manifest | PathLike) -> str:
    if isinstance(manifest, Manifest):
        return next(iter(manifest_digests(manifest)))
    return sha256_of(Path(manifest))


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
    pathlib.Path
        The receipt's path (:func:`receipt_path`).

    Raises
    ------
    ParameterError
        The receipt's path is one of ``inputs``.
    DataError
        The released file cannot be read (to compute its digest).
    WriteError
        The receipt cannot be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "out.csv").write_text("sex\\nf\\n")
    ...     print(write_receipt(d / "out.csv", m, rows=1).name, check_release(d / "out.csv", m))
    out.csv.receipt.json None
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
    guarantees: Mapping[str, Any] | None = None,
    post_processing: Mapping[str, Any] | None = None,
    release: str = "",
    input_release: Mapping[str, Any] | bool | None = False,
) -> str:
    """The JSON text of a receipt (see :func:`write_receipt`; ``folder``: a folder of part files, no digest).

    Parameters
    ----------
    released : str or os.PathLike
        The released file (only its name is recorded).
    manifest : Manifest, or str or os.PathLike
        The manifest that made it.
    rows : int
        The released file's row count.
    digest : str, optional
        The released file's SHA-256; default computed from the file.
    folder : bool
        The release is a folder of part files: no digest is recorded.
    guarantees : mapping, optional
        The shuffled release's guarantees
        (:meth:`pramkit.privacy.amplification.Guarantees.to_dict`), recorded as ``guarantees``.
    post_processing : mapping, optional
        The file is computed from a release of ``manifest`` (not perturbed by it): what was done
        and to which release (:func:`pramkit.resample_release`), recorded as ``post_processing``;
        :func:`check_release` then refuses to correct it with the manifest.
    release : str
        The release's label (``apply --release``; ``""``: none), recorded as ``release``.
    input_release : mapping, None or False
        The release the file was made from, when ``manifest`` was applied to a released file
        (:func:`input_entry` of its receipt; ``None``: a file without a receipt), recorded as
        ``input_release``, which :func:`check_chain` follows; ``False`` (the default) records nothing.

    Returns
    -------
    str
        Indented JSON, ending with a newline.

    Examples
    --------
    The receipt holds digests and counts, nothing of the original records:

    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> receipt = json.loads(receipt_text("out/released.csv", m, rows=3, digest="ab" * 32))
    >>> sorted(receipt)  # doctest: +NORMALIZE_WHITESPACE
    ['format', 'manifest_content_sha256', 'manifest_sha256', 'pramkit_version', 'release', 'released_file',
     'released_sha256', 'rows', 'version']
    >>> receipt["released_file"], receipt["rows"], receipt["manifest_sha256"] in manifest_digests(m), receipt["release"]
    ('released.csv', 3, True, '')
    >>> json.loads(receipt_text("out/released.csv", m, rows=3, digest="ab" * 32, release="wave 2"))["release"]
    'wave 2'
    >>> json.loads(receipt_text("parts", m, rows=3, folder=True))["released_sha256"] is None
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
        "released_sha256": None if folder else digest if digest is not None else sha256_of(p),
        "rows": int(rows),
        "manifest_sha256": primary,
        "manifest_content_sha256": sorted(digests - {primary})[0] if len(digests) > 1 else primary,
        "release": release_label(release),
        **({"guarantees": dict(guarantees)} if guarantees else {}),
        **({"post_processing": dict(post_processing)} if post_processing else {}),
        **({} if input_release is False or input_release is True else
           {"input_release": None if input_release is None else dict(input_release)}),
    }
    return json.dumps(receipt, indent=2) + "\n"


class PendingReceipt:
    """The receipt of a release being written (see :func:`receipt_after`).

    Made by :func:`receipt_after`, not by the caller.

    Parameters
    ----------
    stack : contextlib.ExitStack
        The stack that renames the receipt into place when it closes.
    released : pathlib.Path
        The released file (or folder).
    manifest : Manifest, or str or os.PathLike
        The manifest that makes it.
    inputs : list of paths
        Files the receipt may never overwrite.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with receipt_after(pathlib.Path(d) / "out.csv", m) as pending:
    ...         print(type(pending).__name__, pending.filled)
    ...         pending.fill(rows=1, digest="ab" * 32)
    ...         print(pending.filled)
    PendingReceipt False
    True
    """

    def __init__(self, stack: contextlib.ExitStack, released: Path, manifest: Manifest | PathLike,
                 inputs: list[PathLike | None], release: str = "") -> None:
        self._stack = stack
        self._released = released
        self._manifest = manifest
        self._inputs = inputs
        self._release = release
        self._stage: Staged | None = None

    @property
    def filled(self) -> bool:
        """Whether :meth:`fill` has written the receipt's content."""
        return self._stage is not None

    def fill(self, *, rows: int, digest: str | None = None, folder: bool = False,
             guarantees: Mapping[str, Any] | None = None, post_processing: Mapping[str, Any] | None = None,
             input_release: Mapping[str, Any] | bool | None = False) -> None:
        """Write the receipt's content to its temporary: call it before the release is renamed into place.

        Parameters
        ----------
        rows : the released file's row count
        digest : the released file's SHA-256 (of its temporary, e.g.
            :attr:`pramkit.io.TableWriter.sha256`); ignored for a folder
        folder : the release is a folder of part files (no digest)
        guarantees : the shuffled release's guarantees (:func:`receipt_text`)
        post_processing : the file is post-processed from a release (:func:`receipt_text`)
        input_release : the release the file was made from (:func:`receipt_text`)

        Raises
        ------
        WriteError
            The receipt's temporary cannot be written.

        Examples
        --------
        The receipt is complete before the release is in place, and appears
        right after it:

        >>> import pathlib, tempfile
        >>> from pramkit.atomic import write_text_atomic
        >>> from pramkit.design.classic import randomized_response
        >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     d = pathlib.Path(tmp)
        ...     with receipt_after(d / "out.csv", m) as pending:
        ...         pending.fill(rows=1, digest=hashlib.sha256(b"sex\\nf\\n").hexdigest())
        ...         print(sorted(p.name for p in d.iterdir() if not p.name.startswith(".")))
        ...         _ = write_text_atomic(d / "out.csv", "sex\\nf\\n", force=False)
        ...     print(sorted(p.name for p in d.iterdir()), read_receipt(d / "out.csv")["rows"])
        []
        ['out.csv', 'out.csv.receipt.json'] 1
        """
        text = receipt_text(self._released, self._manifest, rows=rows, digest=digest, folder=folder,
                            guarantees=guarantees, post_processing=post_processing, release=self._release,
                            input_release=input_release)
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
    release: str = "",
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
    release : the release's label (:func:`receipt_text`)

    Yields
    ------
    PendingReceipt or None
        Call its :meth:`~PendingReceipt.fill` before the release is renamed
        into place; ``None`` when not ``enabled``.

    Raises
    ------
    ParameterError
        the receipt's path is one of ``inputs`` (on entering)
    WriteError
        the receipt's path is a folder (on entering), or the receipt could not be written; after the release is in place the
        message says that the release was written without its receipt

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.atomic import write_text_atomic
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     with receipt_after(d / "out.csv", m) as pending:
    ...         pending.fill(rows=1, digest=hashlib.sha256(b"sex\\nf\\n").hexdigest())
    ...         _ = write_text_atomic(d / "out.csv", "sex\\nf\\n", force=False)
    ...     print(check_release(d / "out.csv", m))
    None

    A release that fails leaves no receipt behind:

    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     try:
    ...         with receipt_after(d / "out.csv", m) as pending:
    ...             pending.fill(rows=1, digest="ab" * 32)
    ...             raise RuntimeError("the release failed")
    ...     except RuntimeError:
    ...         pass
    ...     print(list(d.iterdir()))
    []
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
            pending = PendingReceipt(stack, p, manifest, inputs, release)
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

    Parameters
    ----------
    released : str or os.PathLike
        The released file (or folder); its receipt is at :func:`receipt_path`.

    Returns
    -------
    dict or None
        The receipt's fields (:func:`receipt_text`), or ``None`` without a receipt.

    Raises
    ------
    DataError
        The receipt cannot be read, is not JSON, or is not a pramkit release receipt.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = pathlib.Path(tmp) / "released.csv"
    ...     print(read_receipt(out))
    ...     _ = out.write_text("sex\\nf\\nm\\n")
    ...     _ = write_receipt(out, m, rows=2)
    ...     receipt = read_receipt(out)
    ...     print(receipt["rows"], receipt["released_sha256"] == sha256_of(out))
    None
    2 True
    """
    path = receipt_path(released)
    if not path.is_file():
        return None
    try:  # bounded like a manifest (pramkit._json.read_json)
        data = read_json(path, f"the release receipt {str(path)!r}", DataError, max_bytes=2**20)
    except FileNotFoundError:
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DataError(f"{str(path)!r} is not a pramkit release receipt")
    return data


class ReceiptWarning(PramkitWarning):
    """A release whose receipt cannot say which manifest made it (none, unreadable, or the file
    changed since): :func:`pramkit.estimate_table` warns with the note of :func:`check_release`."""


#: The key of a released pandas frame's ``attrs`` that holds its receipt (:func:`mark_frame`).
FRAME_ATTR = "pramkit_release_receipt"


def mark_frame(frame: Any, manifest: Manifest, *, post_processing: Mapping[str, Any] | None = None,
               release: str = "", input_release: Mapping[str, Any] | bool | None = False) -> None:
    """Give a frame released in memory its receipt: the digest of the manifest that made it, in
    ``frame.attrs`` (:data:`FRAME_ATTR`), which :func:`check_release` reads.

    Parameters
    ----------
    frame : pandas.DataFrame
        The released frame (:func:`pramkit.perturb_frame`).
    manifest : Manifest
        The manifest that made it.
    post_processing : mapping, optional
        The frame is computed from a release of ``manifest`` (:func:`receipt_text`).
    release : str
        The release's label (``""``: none).
    input_release : mapping, None or False
        The release the frame was made from (:func:`receipt_text`); ``False`` records nothing.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> frame = pd.DataFrame({"sex": ["f", "m"]})
    >>> mark_frame(frame, m)
    >>> frame.attrs[FRAME_ATTR]["format"], check_release(frame, m) is None
    ('pramkit-release-receipt', True)
    """
    frame.attrs[FRAME_ATTR] = {"format": FORMAT, "manifest_content_sha256": _primary_digest(manifest),
                               "pramkit_version": __version__, "release": release,
                               **({"post_processing": dict(post_processing)} if post_processing else {}),
                               **({} if input_release is False or input_release is True else
                                  {"input_release": None if input_release is None else dict(input_release)})}


def check_release(released: Any, manifest: Manifest | PathLike) -> str | None:
    """Check that ``manifest`` is the manifest that made ``released``.

    Parameters
    ----------
    released : str or os.PathLike, or pandas.DataFrame
        The released file (or folder), or a frame released in memory (its receipt
        is in its ``attrs``, :func:`mark_frame`; a frame without one is not checked).
    manifest : Manifest, or str or os.PathLike
        The manifest the caller is about to analyse it with.

    Returns
    -------
    str or None
        ``None`` when the release's receipt names this manifest (or the
        release does not exist: reading it will fail; or a frame without a
        receipt), and a note (one line)
        when it cannot be checked: no receipt, an unreadable receipt, or a
        released file changed since its receipt was written.

    Raises
    ------
    DataError
        the receipt names another manifest (one line; analysing a release
        with the wrong manifest silently gives wrong estimates), or says that the
        file is post-processed from a release (:func:`pramkit.resample_release`): its
        values are not the manifest's perturbation of the original, so correcting them
        with the manifest would give wrong estimates

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> other = Manifest.of({"sex": randomized_response(["f", "m"], 2.0)})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = pathlib.Path(tmp) / "out.csv"
    ...     _ = out.write_text("sex\\nf\\n")
    ...     print(check_release(out, m)[:25])  # no receipt: a note
    ...     _ = write_receipt(out, m, rows=1)
    ...     print(check_release(out, m))  # the right manifest
    ...     try:
    ...         check_release(out, other)
    ...     except DataError as exc:
    ...         print(str(exc).split("; ")[-1])
    no release receipt beside
    None
    use the manifest published with the release
    """
    label = "the manifest" if isinstance(manifest, Manifest) else repr(str(manifest))
    if not isinstance(released, (str, os.PathLike)):
        receipt = getattr(released, "attrs", {}).get(FRAME_ATTR)
        if isinstance(receipt, dict) and receipt.get("post_processing"):
            raise DataError(post_processed_words("the data", receipt["post_processing"]))
        if isinstance(receipt, dict) and receipt.get("manifest_content_sha256") not in manifest_digests(manifest):
            raise DataError(f"the data were released with another manifest (their receipt names manifest sha256 "
                            f"{str(receipt.get('manifest_content_sha256'))[:12]}..., not {label}); use the "
                            "manifest that made the release")
        return None
    p = Path(released)
    if not p.exists():
        return None  # the command reading it says so
    where = receipt_path(p)
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
    if receipt.get("post_processing"):
        raise DataError(post_processed_words(repr(str(p)), receipt["post_processing"]))
    named = {receipt.get("manifest_sha256"), receipt.get("manifest_content_sha256")} - {None}
    if named & manifest_digests(manifest):
        return None
    shown = str(receipt.get("manifest_sha256", "?"))[:12]
    raise DataError(
        f"{str(p)!r} was released with another manifest (its receipt {where.name} names manifest "
        f"sha256 {shown}..., not {label}); use the manifest published with the release"
    )


def input_entry(receipt: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the receipt of a release made from a released file records of that file (``input_release``).

    The manifest digests, the release label, any post-processing and, in turn, its own
    ``input_release``: the whole chain of manifests applied one after the other, so that it can be
    checked from the last release alone (:func:`check_chain`).  Not the input's digest or row count:
    an intermediate file holds original values in the columns later steps perturb, and is not public.

    Parameters
    ----------
    receipt : mapping or None
        The input's receipt (:func:`read_receipt`, or a frame's :data:`FRAME_ATTR`).

    Returns
    -------
    dict or None
        ``None`` for an input without a receipt.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> first = json.loads(receipt_text("first.csv", m, rows=3, digest="ab" * 32, input_release=None))
    >>> sorted(input_entry(first)), input_entry(None)
    (['input_release', 'manifest_content_sha256', 'manifest_sha256', 'release'], None)
    """
    if not isinstance(receipt, Mapping):
        return None
    fields = ("manifest_sha256", "manifest_content_sha256", "release", "post_processing", "input_release")
    return {k: receipt[k] for k in fields if k in receipt}


def input_of(source: Any) -> dict[str, Any] | None:
    """:func:`input_entry` of what a manifest is about to be applied to: a file (or folder) with its
    receipt beside it, or a frame with its receipt in ``attrs``; ``None`` without a (readable) receipt.
    A :class:`pramkit.source.Source` is asked for its receipt once (:func:`check_derived_input` reads
    the same).

    Examples
    --------
    >>> import pandas as pd
    >>> input_of("nowhere.csv"), input_of(pd.DataFrame({"sex": ["f"]}))
    (None, None)
    """
    if isinstance(source, Source) and source.path is None:
        source = source.data
    if isinstance(source, (str, os.PathLike, Source)):
        try:
            receipt = _receipt_of(source)
        except PramkitError:  # an unreadable receipt names no release: the chain is not recorded
            receipt = None
    else:
        receipt = getattr(source, "attrs", {}).get(FRAME_ATTR)
    return input_entry(receipt)


def _receipt_of(data: PathLike | Source) -> dict[str, Any] | None:
    """:func:`read_receipt` of a file, or of a source's file, read once per source (the workflow's stages that
    ask for it, :func:`check_derived_input` and :func:`input_of`, read it once)."""
    if not isinstance(data, Source):
        return read_receipt(data)
    if "_receipt" not in data.__dict__:
        assert data.path is not None
        data.__dict__["_receipt"] = read_receipt(data.path)
    return data.__dict__["_receipt"]


def check_derived_input(manifest: Manifest, data: Any, label: str = "the manifest") -> None:
    """Refuse to apply a derived (public-use) manifest to anything but the release it derives from.

    A derived manifest's matrices are second steps: its stated epsilon is that of the
    composed law ``M1 M2``, which holds only for records that went through ``M1``.  Applied
    to the original file, its step alone realises far more than it states.  So ``data``
    must carry a release receipt (:mod:`pramkit.engine.receipt`; a frame released in memory
    carries it in its ``attrs``) that names the manifest ``ledger.derived_from`` names, and
    a released file must be as its receipt describes it.  Any other manifest passes.

    Parameters
    ----------
    manifest : pramkit.Manifest
        The manifest about to be applied.
    data : str, os.PathLike, a frame or a pramkit.source.Source
        What it is about to be applied to (a source's receipt and digest are read once per source).
    label : str
        The manifest, as the message names it.

    Raises
    ------
    DataError
        ``data`` has no receipt, its receipt names another manifest, or the file changed since
        its receipt was written (one line naming the file and both manifests).

    Examples
    --------
    >>> import os, tempfile
    >>> from pramkit.datasets import census
    >>> from pramkit.engine.perturb import apply_file
    >>> from pramkit.release.choices import DesignChoices
    >>> from pramkit.release.derive import derive_release
    >>> with tempfile.TemporaryDirectory() as d:
    ...     census(500).to_csv(os.path.join(d, "original.csv"), index=False)
    ...     suf = DesignChoices(epsilon=3.0).release(census(500), ["sex"]).manifest.write(os.path.join(d, "suf.json"))
    ...     _ = apply_file(os.path.join(d, "original.csv"), suf, os.path.join(d, "suf.csv"), key=bytes(32))
    ...     puf = derive_release(suf, 1.0).manifest
    ...     check_derived_input(puf, os.path.join(d, "suf.csv"))    # the release it derives from: passes
    ...     try:
    ...         check_derived_input(puf, os.path.join(d, "original.csv"))
    ...     except DataError as exc:
    ...         print(str(exc).split(": ", 1)[1])
    the manifest is derived from 'suf.json' and applies only to the file that manifest released (with its receipt), not to the original
    """
    led = manifest.ledger
    if led is None or not led.derived_from:
        return
    suf, named = led.derived_from["manifest"], led.derived_from["sha256"]
    only = f"{label} is derived from {suf!r} and applies only to the file that manifest released"
    if isinstance(data, (str, os.PathLike)):
        data = Source.open(Path(data))
    source = data if isinstance(data, Source) and data.path is not None else None  # else a frame
    path = None if source is None else source.path
    if path is not None and not path.exists():
        return  # reading it says so
    what = "the frame" if path is None else repr(str(path))
    frame = data.data if isinstance(data, Source) else data
    receipt = getattr(frame, "attrs", {}).get(FRAME_ATTR) if source is None else _receipt_of(source)
    if not isinstance(receipt, dict):
        raise DataError(f"{what} has no release receipt: {only} (with its receipt), not to the original")
    if named not in {receipt.get("manifest_sha256"), receipt.get("manifest_content_sha256")}:
        raise DataError(f"{what} was released with another manifest (its receipt names manifest sha256 "
                        f"{str(receipt.get('manifest_sha256'))[:12]}..., not {suf!r}, {named[:12]}...): {only}")
    recorded = receipt.get("released_sha256")
    if source is not None and path is not None and path.is_file() and recorded is not None \
            and source.digest != recorded:
        raise DataError(f"{what} has changed since its receipt {receipt_path(path).name} was written: {only}, as "
                        "it released it")


def check_chain(released: Any, manifests: Sequence[Manifest | PathLike]) -> str | None:
    """Check that ``manifests`` were applied one after the other, in this order, to make ``released``.

    One manifest: :func:`check_release`.  Several: the release's receipt must name the last one, and
    the releases its ``input_release`` records (:func:`input_entry`), one step back at a time, the
    others in turn; the first must have been applied to a file that is no release (the original).

    Parameters
    ----------
    released : str or os.PathLike, or pandas.DataFrame
        The last release (a file, or a frame released in memory).
    manifests : sequence of Manifest, or str or os.PathLike
        The manifests in the order they were applied.

    Returns
    -------
    str or None
        ``None`` when the chain is checked (or there is nothing to check: a frame without a receipt, a
        file that does not exist), a note (one line) when it cannot be checked: no receipt, a file
        changed since, or a receipt that does not record its input (an older pramkit's).

    Raises
    ------
    DataError
        A step of the chain is another manifest, missing, in another order, or post-processed; or a
        manifest is derived from the one before it (its matrices already compose both steps).
    ParameterError
        No manifest is given.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from pramkit.design.classic import randomized_response
    >>> first = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> second = Manifest.of({"smoker": randomized_response(["yes", "no"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = pathlib.Path(tmp) / "out.csv"
    ...     _ = out.write_text("sex,smoker\\nf,no\\n")
    ...     step = input_entry(json.loads(receipt_text("first.csv", first, rows=1, digest="ab" * 32,
    ...                                               input_release=None)))
    ...     _ = out.with_name("out.csv.receipt.json").write_text(
    ...         receipt_text(out, second, rows=1, input_release=step))
    ...     print(check_chain(out, [first, second]))
    ...     try:
    ...         check_chain(out, [second, second])      # the first step was another manifest
    ...     except DataError as exc:
    ...         print(str(exc).split(": ", 1)[1].split(" (sha256")[0])
    None
    manifest 2 was applied to a release of another manifest
    """
    steps = list(manifests)
    if not steps:
        raise ParameterError("give the manifest(s) that made the release")
    if len(steps) == 1:
        return check_release(released, steps[0])
    names = [f"manifest {i + 1}" + ("" if isinstance(m, Manifest) else f" ({str(m)!r})") for i, m in enumerate(steps)]
    unchecked = check_release(released, steps[-1])  # refuses a release whose last step is another manifest
    if unchecked:
        return unchecked
    if isinstance(released, (str, os.PathLike)):
        if not Path(released).exists():
            return None
        receipt, what = read_receipt(released), repr(str(released))
    else:
        receipt, what = getattr(released, "attrs", {}).get(FRAME_ATTR), "the data"
    if not isinstance(receipt, Mapping):
        return None
    if "input_release" not in receipt:
        return (f"the receipt of {what} does not record what {names[-1]} was applied to (an older pramkit wrote it): "
                f"cannot check that {', '.join(names[:-1])} made its input")
    order = "give the manifests in the order they were applied, every one of them"
    entry = receipt["input_release"]
    for k in range(len(steps) - 2, -1, -1):
        later, earlier = names[k + 1], names[k]
        if not isinstance(entry, Mapping):
            raise DataError(f"{what}: {later} was applied to a file without a release receipt, not to a release of "
                            f"{earlier}; {order}")
        if entry.get("post_processing"):
            raise DataError(f"{what}: {later} was applied to a post-processed file, not to a release of {earlier}; "
                            "a post-processed file is no perturbation of the original")
        digests = manifest_digests(steps[k])
        if not ({entry.get("manifest_sha256"), entry.get("manifest_content_sha256")} - {None}) & digests:
            raise DataError(f"{what}: {later} was applied to a release of another manifest (sha256 "
                            f"{str(entry.get('manifest_sha256'))[:12]}...), not of {earlier}; {order}")
        step = steps[k + 1]
        led = (step if isinstance(step, Manifest) else Manifest.read(Path(step))).ledger
        if led is not None and led.derived_from and led.derived_from.get("sha256") in digests:
            raise DataError(f"{later} is derived from {earlier}: its matrices are already the law of both steps; "
                            f"estimate with {later} alone")
        entry = entry.get("input_release")
    if entry is not None:
        raise DataError(f"{what}: {names[0]} was applied to a release of another manifest (sha256 "
                        f"{str(entry.get('manifest_sha256') if isinstance(entry, Mapping) else '?')[:12]}...), whose "
                        f"columns would be read as unperturbed; {order}")
    return None


def post_processed_words(what: str, post_processing: Any) -> str:
    """Why a post-processed file is not corrected with its release's manifest (one line).

    Examples
    --------
    >>> post_processed_words("'r.csv'", {"method": "resample", "release": "released.csv"})
    "'r.csv' is post-processed (resample) from the release released.csv: its values are draws from a model fitted to that release, not the manifest's perturbation of the original, so correcting them with the manifest would give wrong estimates; estimate from released.csv with its manifest, or read 'r.csv' as it is"
    """
    info = post_processing if isinstance(post_processing, Mapping) else {}
    source = str(info.get("release") or "the release it was made from")
    return (f"{what} is post-processed ({info.get('method', 'resample')}) from the release {source}: its values are "
            "draws from a model fitted to that release, not the manifest's perturbation of the original, so "
            f"correcting them with the manifest would give wrong estimates; estimate from {source} with its "
            f"manifest, or read {what} as it is")


def inspect_guarantees(manifest: Any, *, sampling: str | None = None, population: int | None = None,
                       released: Any = None) -> Guarantees:
    """The guarantees ``pramkit inspect`` shows: local, sampled (the manifest's design, or the one given)
    and shuffled (from the receipt of ``released``, a file that manifest made).

    Raises
    ------
    ParameterError
        ``released`` has no receipt or another manifest made it; see also :func:`pramkit.privacy.amplification.sampling_of`.

    Examples
    --------
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 3.0)})
    >>> f"{inspect_guarantees(m, sampling='stratified:0.05').sampled:.4f}"
    '0.6700'
    """
    from pramkit.privacy import amplification

    receipt = None
    if released is not None:
        receipt = read_receipt(released)
        if receipt is None:
            raise ParameterError(f"--released {str(released)!r} has no receipt (made by `pramkit apply`)")
        if receipt["manifest_sha256"] not in manifest_digests(manifest):
            raise ParameterError(f"--released {str(released)!r} was made by another manifest (its receipt says so)")
        amplification.stated_sampling(manifest, receipt["rows"], repr(str(released)))
    design = amplification.sampling_of(sampling, population, None if receipt is None else receipt["rows"],
                                       file=repr(str(released)))
    return _stated(amplification.release_guarantees(manifest, sampling=design), receipt, manifest, released)


def report_guarantees(manifest: Any, released: Any = None) -> Guarantees:
    """The guarantees a report shows: local, the manifest's sampled one, and the shuffled one when
    ``released`` is a file with a receipt of this manifest that states it (else no shuffled line).

    Examples
    --------
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> report_guarantees(Manifest.of({"sex": randomized_response(["f", "m"], 3.0)}), "nowhere.csv").shuffled is None
    True
    """
    from pramkit.privacy import amplification

    receipt = read_receipt(released) if isinstance(released, (str, os.PathLike)) else None
    if receipt is not None and receipt["manifest_sha256"] not in manifest_digests(manifest):
        receipt = None
    if receipt is not None:
        amplification.stated_sampling(manifest, receipt["rows"], repr(str(released)))
    return _stated(amplification.release_guarantees(manifest), receipt, manifest, released)


def _stated(base: Guarantees, receipt: Mapping[str, Any] | None, manifest: Any = None,
            released: Any = None) -> Guarantees:
    """``base`` with the shuffled guarantee of a release whose receipt states one (``base`` itself when it
    states none): recomputed from the manifest and the released records
    (:func:`pramkit.engine.shuffle.recomputed_guarantees`), never taken from the receipt, with a warning
    when the receipt states another."""
    shuffle = (receipt or {}).get("guarantees")
    if not shuffle:
        return base
    if manifest is not None and isinstance(released, (str, os.PathLike)):
        import warnings

        from pramkit._json import json_same
        from pramkit.engine.shuffle import recomputed_guarantees

        found = recomputed_guarantees(manifest, released, shuffle)
        if not json_same(found, dict(shuffle)):
            warnings.warn(PramkitWarning(
                f"the receipt of {str(released)!r} states other guarantees than its release has (a central epsilon "
                f"of {shuffle.get('shuffled_epsilon')!r}; recomputed from the manifest and the released records: "
                f"{found.get('shuffled_epsilon')!r}): the recomputed ones are shown; `pramkit audit` names the "
                "field"), stacklevel=2)
        shuffle = found
    central = shuffle["shuffled_epsilon"]
    return dataclasses.replace(base, shuffled=None if central is None else float(central),
                               delta=shuffle["shuffled_delta"], shuffle_conditions=shuffle["shuffle_conditions"],
                               clones=shuffle.get("shuffled_records"))


def table_columns(source: Any, *, sep: str = ",", encoding: str = "utf-8") -> list[str] | None:
    """The columns of a table, read from its header or schema alone: a file (CSV, Parquet, Stata,
    SPSS, SAS, Arrow IPC: :func:`pramkit.io.file_columns`), a folder of part files, or a frame in memory; ``None``
    when it cannot be read.
    ``sep`` and ``encoding``: how a CSV file is written (:func:`pramkit.io.csv_dialect`).

    Examples
    --------
    >>> import pandas as pd, pathlib, tempfile
    >>> table_columns(pd.DataFrame({"a": [1], "b": [2]})), table_columns(None)
    (['a', 'b'], None)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "r.csv").write_text("sex,age\\nm,31\\n")
    ...     print(table_columns(pathlib.Path(d) / "r.csv"), table_columns(pathlib.Path(d) / "none.csv"))
    ['sex', 'age'] None
    """
    from pramkit.frames import frame_columns, frame_kind

    if source is None:
        return None
    if frame_kind(source) is not None:
        return [str(c) for c in frame_columns(source)]
    from pramkit.io import file_columns

    try:  # a folder: its first part's (each part has the release's columns); by the reader of the file's format
        return file_columns(source, sep=sep, encoding=encoding)
    except (PramkitError, OSError, ValueError, TypeError):
        return None


def post_processing_of(released: Any) -> dict[str, Any] | None:
    """The ``post_processing`` section of a released file's receipt: what a file that is post-processing of a
    release (a resampled file) was computed from; ``None`` for a release itself, a frame, a file without a
    receipt or one whose receipt does not read.

    Examples
    --------
    >>> post_processing_of("nowhere.csv") is None, post_processing_of(None) is None
    (True, True)
    """
    if not isinstance(released, (str, os.PathLike)) or not Path(released).exists():
        return None
    try:
        receipt = read_receipt(released)
    except DataError:
        return None
    post = (receipt or {}).get("post_processing")
    return dict(post) if isinstance(post, Mapping) else None


def post_processing_chain(released: Any) -> dict[str, Any] | None:
    """Where a released file that is post-processing of a release (a resampled file) comes from, as its
    receipt names it, checked against the file beside it; ``None`` for a release itself or a file without a
    receipt.

    Parameters
    ----------
    released : path
        The file given as released.

    Returns
    -------
    dict or None
        ``method``, ``release`` (the file named), ``release_sha256`` (as the receipt states it), ``beside``
        (whether that file is beside this one) and ``digest_matches`` (whether its SHA-256 is the one stated;
        ``None`` when it is not beside it).

    Examples
    --------
    >>> post_processing_chain("nowhere.csv") is None
    True
    """
    post = post_processing_of(released)
    if post is None:
        return None
    parent = Path(released).parent / Path(str(post.get("release"))).name
    beside = parent.is_file()
    return {"method": post.get("method"), "release": parent.name, "release_sha256": post.get("release_sha256"),
            "beside": beside, "digest_matches": (sha256_of(parent) == post.get("release_sha256")) if beside else None}


def released_guarantee(manifest: Any, released: Any = None, *, sep: str = ",", encoding: str = "utf-8") -> Any:
    """The ledger's guarantee of a release (:func:`pramkit.ledger.release_guarantee`), with the columns of
    ``released`` (the released file, or the original: the release keeps its columns) when it can be read.

    Parameters
    ----------
    manifest : Manifest
        The release's manifest.
    released : path or frame, optional
        A table with the release's columns (:func:`table_columns`).
    sep, encoding : str
        How a CSV file is written (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    pramkit.ledger.Guarantee

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> released_guarantee(m, pd.DataFrame({"sex": ["f"], "id": [1]})).unperturbed
    ('id',)
    """
    from pramkit.ledger import release_guarantee

    return release_guarantee(manifest, table_columns(released, sep=sep, encoding=encoding))
