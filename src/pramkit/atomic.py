"""Atomic file output: write to a temporary file beside the target, then rename.

A crash leaves either the old file or no file, never a truncated one.  An
existing target is only replaced when ``force`` is true.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from pramkit.errors import OutputExistsError, PramkitError


def check_writable(path: str | Path, *, force: bool) -> Path:
    """Fail early (before any work) if ``path`` exists and ``force`` is false."""
    p = Path(path)
    if p.exists() and not force:
        raise OutputExistsError(f"{str(p)!r} exists; pass --force (force=True) to overwrite it")
    if p.exists() and p.is_dir():
        raise PramkitError(f"{str(p)!r} is a directory, not a file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise PramkitError(f"the folder {str(parent)!r} of the output {str(p)!r} does not exist")
    return p


def _default_mode() -> int:
    """Permissions of a new file under the current umask (``mkstemp`` makes 0600 files)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | Path, *, force: bool) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success rename it to ``path``
    (with the permissions an ordinary new file would get)."""
    target = check_writable(path, force=force)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if target.exists() and not force:  # appeared while we worked
            raise OutputExistsError(f"{str(target)!r} appeared while writing; pass --force to overwrite it")
        os.chmod(tmp_path, _default_mode())
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(path: str | Path, text: str, *, force: bool) -> Path:
    with atomic_path(path, force=force) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
