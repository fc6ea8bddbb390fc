"""The two folders of a release, written all at once.

A release is written as ``OUT/public/`` (what may be published: the released
file, the manifest, the receipt, the public report) and ``OUT/private/``
(never published: the design record, the internal report, summaries).  Both
are assembled in a work folder inside ``OUT`` (:func:`pramkit.atomic.temporary`)
and renamed into place at the end (:func:`move_into_place`), so a failed or
cancelled run leaves nothing half-written.  ``private/`` is readable by its owner
only: folders 0700, files 0600 (:func:`make_private`), before it is moved into place.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from pramkit.atomic import PathLike, check_writable, file_error, refuse_inputs
from pramkit.defaults import PRIVATE_FOLDER, PUBLIC_FOLDER
from pramkit.errors import WriteError

#: The two folders of a release: publishable, and never to be published.
PUBLIC, PRIVATE = PUBLIC_FOLDER, PRIVATE_FOLDER


def check_target(out_dir: Path, *, force: bool, inputs: list[PathLike | None]) -> None:
    """Refuse, before any work, an ``OUT`` whose ``public/`` or ``private/`` holds an input or exists
    (without ``force``), an ``OUT`` that is a file, and a missing or read-only parent.

    Parameters
    ----------
    out_dir : pathlib.Path
        The folder to hold ``public/`` and ``private/`` (created later if absent).
    force : bool
        Existing ``public/`` and ``private/`` folders may be replaced.
    inputs : list of path or None
        Files the run reads (a key file, the original): never inside what it replaces.

    Raises
    ------
    OutputExistsError
        ``public/`` or ``private/`` exists and ``force`` is false.
    WriteError
        ``OUT`` is a file or cannot be written.
    ParameterError
        An input lies inside ``public/`` or ``private/``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.errors import OutputExistsError
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = pathlib.Path(d)
    ...     check_target(out / "new", force=False, inputs=[])      # absent: fine
    ...     (out / PUBLIC).mkdir()
    ...     try:
    ...         check_target(out, force=False, inputs=[])
    ...     except OutputExistsError:
    ...         print("refused")
    refused
    """
    if out_dir.is_dir():
        for folder in (PUBLIC, PRIVATE):  # first: force would not help
            refuse_inputs(out_dir / folder, inputs)
        for folder in (PUBLIC, PRIVATE):  # also checks that OUT is writable
            check_writable(out_dir / folder, force=force, folder=True)
    else:
        check_writable(out_dir, force=False, inputs=inputs, folder=True)


def make_private(folder: Path) -> None:
    """Make ``folder`` and everything in it its owner's only: folders 0700, files 0600 (links left alone).

    Parameters
    ----------
    folder : pathlib.Path
        A folder (it exists).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (pathlib.Path(d) / "inputs").mkdir(mode=0o755)
    ...     _ = (pathlib.Path(d) / "inputs" / "rules.csv").write_text("a,b\\n")
    ...     make_private(pathlib.Path(d))
    ...     [oct(p.stat().st_mode & 0o777) for p in (pathlib.Path(d), pathlib.Path(d) / "inputs",
    ...                                              pathlib.Path(d) / "inputs" / "rules.csv")]
    ['0o700', '0o700', '0o600']
    """
    folder.chmod(0o700)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(0o700)
        for name in files:
            path = Path(root) / name
            if stat.S_ISREG(path.lstat().st_mode):
                path.chmod(0o600)


def move_into_place(work: Path, out_dir: Path) -> None:
    """Rename the finished ``public/`` and ``private/`` from ``work`` into ``out_dir``.

    ``private/`` is made its owner's only first (:func:`make_private`).  Earlier
    folders of the same names are first renamed into ``work`` (removed with it);
    if a rename fails, what was moved is moved back.

    Parameters
    ----------
    work : pathlib.Path
        The work folder holding the finished ``public/`` and ``private/`` (on the file system of ``out_dir``).
    out_dir : pathlib.Path
        Their final folder.

    Raises
    ------
    WriteError
        A rename failed; ``out_dir`` is as it was.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     work = pathlib.Path(d) / "work"
    ...     for folder in (PUBLIC, PRIVATE):
    ...         (work / folder).mkdir(parents=True)
    ...     move_into_place(work, pathlib.Path(d))
    ...     sorted(p.name for p in pathlib.Path(d).iterdir()), list(work.iterdir())
    (['private', 'public', 'work'], [])
    """
    aside: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    try:
        if (work / PRIVATE).is_dir():
            make_private(work / PRIVATE)
        for folder in (PUBLIC, PRIVATE):
            final = out_dir / folder
            if final.exists() or final.is_symlink():
                earlier = work / f"earlier-{folder}"
                os.rename(final, earlier)
                aside.append((final, earlier))
            os.rename(work / folder, final)
            placed.append(final)
    except OSError as exc:
        for final in placed:
            with contextlib.suppress(OSError):
                os.rename(final, work / f"unfinished-{final.name}")
        for final, earlier in aside:
            with contextlib.suppress(OSError):
                os.rename(earlier, final)
        raise WriteError(file_error(exc, out_dir, "write")) from None
