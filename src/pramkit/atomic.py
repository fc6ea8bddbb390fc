"""Safe file output: nothing lost, nothing half-written, no input overwritten.

Every file pramkit writes goes through :func:`atomic_path`:

1. :func:`check_writable` refuses, before any work, an output that is one of
   the command's inputs (even with ``force``), an output that exists (unless
   ``force``), and an output whose folder is missing or not writable.
2. Temporaries of the same output left behind by a run that was killed
   (``.NAME.pramkit-tmp.PID.XXXXXXXX`` whose process has ended) are removed,
   with a :class:`~pramkit.errors.PramkitWarning` saying so.
3. The content goes to a new temporary ``.NAME.pramkit-tmp.PID.XXXXXXXX``
   beside the target.
4. The writer's result is checked (``verify``; by default the file must not
   be empty), the file is flushed to disk (``fsync``), and only then renamed
   to the target.  Without ``force`` the rename never replaces a file that
   appeared in the meantime.
5. On any error the temporary is removed and an existing target keeps its old
   content.  SIGINT and SIGTERM remove the live temporaries before the process
   stops (exit status 130 and 143).

:func:`staged_bytes` separates writing from committing, for an output that
must appear only after another one (a release's receipt after the release),
and :func:`temporary` gives a work folder with the same naming, cleanup and
signal handling, for outputs assembled from several files (the demo).

Operating-system errors while writing become one :class:`~pramkit.errors.WriteError`
line: ``cannot write 'PATH': No space left on device``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import signal
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pramkit.errors import OutputExistsError, ParameterError, PramkitError, PramkitWarning, WriteError

#: What marks pramkit's temporary files: ``.NAME`` + TMP_TAG + ``PID.XXXXXXXX``.
TMP_TAG = ".pramkit-tmp."
#: Error numbers that can only come from writing.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
#: Reasons ``os.link`` fails on file systems without hard links (then rename after a check).
_NO_LINK = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}

PathLike = str | os.PathLike


def file_error(exc: OSError, path: PathLike | None = None, action: str | None = None) -> str:
    """One line for an operating-system error: ``cannot ACTION 'PATH': reason``.

    ``action`` defaults to ``write`` for errors only writing causes (disk
    full, read-only file system), ``read`` for a missing file, else ``access``.

    Parameters
    ----------
    exc : OSError
        The error.
    path : str or os.PathLike, optional
        The file to name; default the error's own file name (``?`` if it has none).
    action : str, optional
        What could not be done (``"write"``, ``"read"``, ``"create the folder"``, ...).

    Returns
    -------
    str
        The message, with the operating system's reason for the error number.

    Examples
    --------
    >>> import errno
    >>> file_error(OSError(errno.ENOSPC, "Error writing bytes"), "out.dta")
    "cannot write 'out.dta': No space left on device"
    >>> file_error(FileNotFoundError(errno.ENOENT, "No such file", "in.csv"))
    "cannot read 'in.csv': No such file or directory"
    """
    where = path if path is not None else (exc.filename if exc.filename is not None else "?")
    if action is None:
        action = "write" if exc.errno in _WRITE_ERRNOS else "read" if exc.errno == errno.ENOENT else "access"
    reason = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc) or type(exc).__name__)
    return f"cannot {action} {str(where)!r}: {reason}"


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether two paths name the same file (same inode, through links), or the same
    path once resolved when one of them does not exist yet.

    Parameters
    ----------
    a, b : str or os.PathLike
        The two paths (relative paths are resolved against the working folder).

    Returns
    -------
    bool
        Whether writing one would write the other.

    Examples
    --------
    >>> same_file("data.csv", "./data.csv")
    True
    >>> same_file("data.csv", "other.csv")
    False
    """
    try:
        return os.path.samefile(a, b)
    except OSError:
        try:
            return Path(a).resolve() == Path(b).resolve()
        except (OSError, RuntimeError):
            return False


def inside(path: PathLike, folder: PathLike) -> bool:
    """Whether ``path`` lies somewhere under ``folder`` (links and relative paths resolved).

    Parameters
    ----------
    path : str or os.PathLike
        A file or folder; it need not exist.
    folder : str or os.PathLike
        The folder.

    Returns
    -------
    bool
        ``True`` if ``folder`` is one of the parents of ``path`` (a folder is not inside itself).

    Examples
    --------
    >>> inside("out/private/key", "out"), inside("out/private/key", "out/public")
    (True, False)
    """
    try:
        return Path(folder).resolve() in Path(path).resolve().parents
    except (OSError, RuntimeError):
        return False


def refuse_inputs(path: PathLike, inputs: Iterable[PathLike | None]) -> None:
    """Refuse an output that is one of ``inputs``, or a folder holding one (whatever ``--force`` says).

    ``None`` entries of ``inputs`` are skipped; the comparison follows links
    (same inode) and resolves relative paths.

    Parameters
    ----------
    path : str or os.PathLike
        The output (a file, or a folder written as a whole).
    inputs : iterable of paths
        The files the command reads.

    Raises
    ------
    ParameterError
        writing ``path`` would overwrite or remove an input, or add a file to an input folder
        (a folder of part files is read as one table)

    Examples
    --------
    A hard link is the same file under another name:

    >>> import os, tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "key").write_bytes(bytes(32))
    ...     refuse_inputs(d / "out.csv", [d / "key", None])  # another file: allowed
    ...     os.link(d / "key", d / "key-link")
    ...     for out in (d / "key-link", d):  # the same file; a folder holding it
    ...         try:
    ...             refuse_inputs(out, [d / "key"])
    ...         except ParameterError as exc:
    ...             print(str(exc).endswith("not even with --force: choose another output name"))
    True
    True
    """
    p = Path(path)
    for given in inputs:
        if given is None:
            continue
        if same_file(p, given) or (p.is_dir() and inside(given, p)):
            raise ParameterError(
                f"the output {str(p)!r} would overwrite the input {str(given)!r}; pramkit never does, "
                "not even with --force: choose another output name"
            )
        if Path(given).is_dir() and inside(p, given):  # a folder of part files read as one table
            raise ParameterError(
                f"the output {str(p)!r} lies in the input folder {str(given)!r}, whose files are read as one "
                "table: it would become part of the input; write it outside that folder"
            )


def check_writable(
    path: PathLike,
    *,
    force: bool,
    inputs: Iterable[PathLike | None] = (),
    folder: bool = False,
) -> Path:
    """Fail early, before any work, if ``path`` cannot or must not be written.

    Parameters
    ----------
    path : the output file (or, with ``folder=True``, an output folder)
    force : whether an existing output may be replaced
    inputs : every file the command reads (data, manifest, key file, prior,
        ...; ``None`` entries are skipped).  The output may never be one of
        them, whatever ``force`` says; the comparison follows links (same
        inode) and resolves relative paths.
    folder : the output is a folder (written as a whole, e.g. by Spark)

    Returns
    -------
    The output path.

    Raises
    ------
    ParameterError
        the output is an input
    OutputExistsError
        the output exists and ``force`` is false
    WriteError
        the output is a folder where a file is expected (or the reverse), or
        its folder does not exist or is not writable

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text("a\\n1\\n")
    ...     print(check_writable(d / "out.csv", force=False, inputs=[d / "data.csv"]).name)
    ...     for force in (False, True):
    ...         try:
    ...             check_writable(d / "data.csv", force=force, inputs=[d / "data.csv"])
    ...         except PramkitError as exc:
    ...             print(type(exc).__name__, "not even with --force" in str(exc))
    out.csv
    ParameterError True
    ParameterError True
    """
    p = Path(path)
    refuse_inputs(p, inputs)
    if folder:
        if p.exists() and not p.is_dir():
            raise WriteError(f"{str(p)!r} exists and is not a folder")
    elif p.is_dir():
        raise WriteError(f"{str(p)!r} is a directory, not a file")
    if (p.exists() or p.is_symlink()) and not force:
        raise OutputExistsError(f"{str(p)!r} exists; pass --force (force=True) to overwrite it")
    parent = p.parent
    if not parent.is_dir():
        raise WriteError(f"the folder {str(parent)!r} of the output {str(p)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise WriteError(f"cannot write {str(p)!r}: the folder {str(parent)!r} is not writable")
    return p


def make_folder(path: PathLike) -> Path:
    """Create an output folder if needed, in a folder that exists (as for any output); one-line errors.

    Parameters
    ----------
    path : str or os.PathLike
        The folder; its parent must exist (folders are not created recursively).

    Returns
    -------
    pathlib.Path
        The folder, which exists now.

    Raises
    ------
    WriteError
        ``path`` is a file, its parent does not exist, or the folder cannot be
        created (read-only parent, ...).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     print(make_folder(d / "a").is_dir(), make_folder(d / "a").is_dir())  # a second call is fine
    ...     try:
    ...         make_folder(d / "b" / "c")
    ...     except WriteError as exc:
    ...         print(str(exc).replace(tmp, "D"))
    True True
    the folder 'D/b' of the output 'D/b/c' does not exist
    """
    p = Path(path)
    if p.is_dir():
        return p
    check_writable(p, force=False, folder=True)  # not a file; its folder exists and is writable
    try:
        p.mkdir(exist_ok=True)
    except OSError as exc:
        raise WriteError(file_error(exc, p, "create the folder")) from None
    return p


# ---------------------------------------------------------------- temporaries

_live: set[Path] = set()
_lock = threading.RLock()
_saved_handlers: dict[int, Any] = {}
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _remove(path: Path) -> int:
    """Remove a file or folder; its size in bytes (0 if it was already gone)."""
    try:
        if path.is_dir() and not path.is_symlink():
            size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            shutil.rmtree(path, ignore_errors=True)
            return size
        size = path.lstat().st_size
        path.unlink()
        return size
    except FileNotFoundError:
        return 0


def remove_live_temporaries() -> None:
    """Remove the temporaries this process is writing (what the SIGINT and SIGTERM handlers do first).

    Examples
    --------
    >>> remove_live_temporaries()  # none live: nothing to do
    """
    with _lock:
        for tmp in list(_live):
            with contextlib.suppress(OSError):
                _remove(tmp)


def _on_signal(signum: int, frame: Any) -> None:
    remove_live_temporaries()
    previous = _saved_handlers.get(signum, signal.SIG_DFL)
    if callable(previous):  # SIGINT's default raises KeyboardInterrupt
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        raise SystemExit(128 + signum)


def _register(tmp: Path) -> None:
    with _lock:
        _live.add(tmp)
        if not _saved_handlers and threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                if signal.getsignal(sig) == signal.SIG_IGN:
                    continue  # an ignored signal stays ignored (e.g. SIGINT of a background job)
                with contextlib.suppress(ValueError, OSError):
                    _saved_handlers[sig] = signal.signal(sig, _on_signal)


def _unregister(tmp: Path) -> None:
    with _lock:
        _live.discard(tmp)
        if not _live and _saved_handlers and threading.current_thread() is threading.main_thread():
            for sig, handler in _saved_handlers.items():
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            _saved_handlers.clear()


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends: for a few renames that must not be cut in half.

    A signal that arrives meanwhile is delivered when the block ends (its
    handler then removes the live temporaries as usual).  Outside the main
    thread, or where signals cannot be blocked, the block runs unprotected.

    Yields
    ------
    None
        The block runs with SIGINT and SIGTERM held.

    Examples
    --------
    Two renames that must happen together:

    >>> import os, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "new-a").write_text("a")
    ...     _ = (d / "new-b").write_text("b")
    ...     with signals_deferred():
    ...         os.rename(d / "new-a", d / "a")
    ...         os.rename(d / "new-b", d / "b")
    ...     print(sorted(p.name for p in d.iterdir()))
    ['a', 'b']
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def temporaries_of(target: PathLike) -> list[Path]:
    """The temporaries of ``target`` in its folder (pramkit's naming), live or stale.

    Parameters
    ----------
    target : str or os.PathLike
        The output whose temporaries are wanted.

    Returns
    -------
    list of pathlib.Path
        The temporaries, sorted; empty when the folder cannot be listed.

    Examples
    --------
    Only the temporaries of ``out.csv`` are its own:

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     for name in (".out.csv.pramkit-tmp.999999999.0a1b2c3d", ".other.csv.pramkit-tmp.1.0a1b2c3d", "out.csv"):
    ...         _ = (d / name).write_text("x")
    ...     [p.name for p in temporaries_of(d / "out.csv")]
    ['.out.csv.pramkit-tmp.999999999.0a1b2c3d']
    """
    t = Path(target)
    prefix = f".{t.name}"
    try:
        names = os.listdir(t.parent if str(t.parent) else ".")
    except OSError:
        return []
    found = []
    for name in names:
        rest = name[len(prefix):] if name.startswith(prefix) else None
        if rest is not None and rest.startswith(TMP_TAG):
            found.append(t.parent / name)
    return sorted(found)


def remove_stale_temporaries(target: PathLike, *, label: str | None = None) -> int:
    """Remove the temporaries of ``target`` left by runs that were killed; how many.

    A temporary is stale when the process named in it has ended.  A
    :class:`~pramkit.errors.PramkitWarning` says what was removed (naming
    ``label``, by default the target's path).

    Parameters
    ----------
    target : str or os.PathLike
        The output whose stale temporaries are removed.
    label : str, optional
        How the warning names the output.

    Returns
    -------
    int
        The number of temporaries removed.

    Examples
    --------
    The temporary of a process that has ended (no process 999999999 runs)
    goes; that of another process still running (here the parent of this
    one) stays, since that run may still be writing it:

    >>> import os, tempfile, pathlib, warnings
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / ".out.csv.pramkit-tmp.999999999.0a1b2c3d").write_text("x")
    ...     _ = (d / f".out.csv.pramkit-tmp.{os.getppid()}.0a1b2c3d").write_text("x")
    ...     with warnings.catch_warnings():
    ...         warnings.simplefilter("ignore")
    ...         print(remove_stale_temporaries(d / "out.csv"), [p.name for p in d.iterdir()] == [
    ...             f".out.csv.pramkit-tmp.{os.getppid()}.0a1b2c3d"])
    1 True
    """
    removed = size = 0
    for tmp in temporaries_of(target):
        rest = tmp.name[len(Path(target).name) + 1 + len(TMP_TAG):] if TMP_TAG in tmp.name else ""
        pid_text = rest.split(".", 1)[0]
        with _lock:
            if tmp in _live:
                continue
        if pid_text.isdigit() and int(pid_text) != os.getpid() and _pid_alive(int(pid_text)):
            continue  # another run is writing it now
        try:
            size += _remove(tmp)
        except OSError:
            continue
        removed += 1
    if removed:
        warnings.warn(
            f"removed {removed} temporary file(s) of {label or repr(str(target))} left by an interrupted run "
            f"({_bytes(size)})", PramkitWarning, stacklevel=3,
        )
    return removed


def _bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} bytes"  # pragma: no cover


def _new_temporary(target: Path, folder: bool) -> Path:
    parent = target.parent if str(target.parent) else Path(".")
    while True:
        tmp = parent / f".{target.name}{TMP_TAG}{os.getpid()}.{secrets.token_hex(4)}"
        try:
            if folder:
                os.mkdir(tmp, 0o700)
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            continue
        return tmp


def _default_mode(folder: bool) -> int:
    """Permissions of a new file or folder under the current umask (temporaries start private)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if folder else 0o666) & ~umask


def _fsync(path: Path) -> None:
    paths = [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
    for f in paths:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs folders
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _commit(tmp: Path, target: Path, *, force: bool, folder: bool) -> None:
    """Rename the finished temporary to the target (never over a file that appeared, without ``force``)."""
    appeared = OutputExistsError(f"{str(target)!r} appeared while writing; pass --force to overwrite it")
    if folder:
        if not target.exists():
            os.rename(tmp, target)
            return
        if not force:
            raise appeared
        old = _new_temporary(target, folder=True)
        os.rmdir(old)
        _register(old)
        try:
            os.rename(target, old)
            os.rename(tmp, target)
            _remove(old)
        finally:
            _unregister(old)
        return
    if force:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)  # fails if the target exists: a file that appeared is never replaced
    except FileExistsError:
        raise appeared from None
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        if target.exists():
            raise appeared from None
        os.replace(tmp, target)
        return
    tmp.unlink()


def _not_empty(tmp: Path) -> None:
    if tmp.stat().st_size == 0:
        raise OSError(errno.ENOSPC, "the writer left an empty file")


def _foreign(exc: OSError, tmp: Path, target: Path) -> bool:
    """An error about some other file (an input being read), not about the output."""
    return (
        exc.filename is not None
        and str(exc.filename) not in (str(tmp), str(target))
        and exc.errno not in _WRITE_ERRNOS
    )


@contextlib.contextmanager
def temporary(target: PathLike, *, folder: bool = False, label: str | None = None) -> Iterator[Path]:
    """Yield a new temporary of ``target`` (``.NAME.pramkit-tmp.PID.XXXXXXXX`` beside it), removed when the block ends.

    Stale temporaries of ``target`` (of runs that were killed) are removed
    first, with a note naming ``label`` (see :func:`remove_stale_temporaries`);
    SIGINT and SIGTERM remove the temporary before the process stops.  The
    temporary starts private (mode 0600, or 0700 for a folder).  Nothing is
    renamed into place: :func:`atomic_path` does that for one output, a caller
    assembling several outputs in a work ``folder`` moves them itself.

    Parameters
    ----------
    target : str or os.PathLike
        The output the temporary stands for (its folder holds the temporary).
    folder : bool
        Make a temporary folder instead of an empty file.
    label : str, optional
        How a note about stale temporaries names the output.

    Yields
    ------
    pathlib.Path
        The temporary, removed with its content when the block ends.

    Raises
    ------
    WriteError
        the temporary cannot be created (read-only folder, full disk, ...)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     with temporary(d / "work", folder=True) as work:
    ...         _ = (work / "part-0.csv").write_text("x\\n1\\n")
    ...         print(work.is_dir(), work.name.startswith(".work.pramkit-tmp."), oct(work.stat().st_mode & 0o777))
    ...     print(list(d.iterdir()))  # removed with its content
    True True 0o700
    []
    """
    t = Path(target)
    remove_stale_temporaries(t, label=label)
    try:
        tmp = _new_temporary(t, folder)
    except OSError as exc:
        raise WriteError(file_error(exc, t, "create the folder" if folder else "write")) from None
    _register(tmp)
    try:
        yield tmp
    finally:
        with contextlib.suppress(OSError):
            _remove(tmp)
        _unregister(tmp)


@contextlib.contextmanager
def atomic_path(
    path: PathLike,
    *,
    force: bool,
    inputs: Iterable[PathLike | None] = (),
    verify: Callable[[Path], None] | None = None,
    mode: int | None = None,
    folder: bool = False,
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds, check, sync and rename it.

    Parameters
    ----------
    path : the output
    force : replace an existing output
    inputs : the command's input files, never to be written over (see :func:`check_writable`)
    verify : called with the temporary once the block has finished, to check
        what the writer produced (raise on a short or unreadable file); by
        default a file must not be empty
    mode : permissions of the output (default: those of an ordinary new file)
    folder : the output is a folder; the block creates its content in the
        temporary folder

    Yields
    ------
    pathlib.Path
        The temporary to write (``.NAME.pramkit-tmp.PID.XXXXXXXX`` beside ``path``).

    Raises
    ------
    ParameterError
        ``path`` is an input (see :func:`check_writable`)
    OutputExistsError
        ``path`` exists, or appeared while writing, and ``force`` is false
    WriteError
        ``path`` is a folder where a file is expected, or in a folder that does
        not exist; the temporary cannot be written, is empty, or cannot be
        renamed (an existing output keeps its content)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     with atomic_path(d / "out.txt", force=False) as t:
    ...         _ = t.write_text("hello")
    ...     print((d / "out.txt").read_text(), [p.name for p in d.iterdir()])
    hello ['out.txt']

    A write that fails leaves the earlier output as it was, and no temporary:

    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "out.txt").write_text("old")
    ...     try:
    ...         with atomic_path(d / "out.txt", force=True) as t:
    ...             _ = t.write_text("half of the new")
    ...             raise RuntimeError("the writer failed")
    ...     except RuntimeError:
    ...         pass
    ...     print((d / "out.txt").read_text(), [p.name for p in d.iterdir()])
    old ['out.txt']
    """
    target = check_writable(path, force=force, inputs=inputs, folder=folder)
    with temporary(target, folder=folder) as tmp:
        try:
            yield tmp
            if verify is not None:
                verify(tmp)
            elif not folder:
                _not_empty(tmp)
            _fsync(tmp)
            os.chmod(tmp, _default_mode(folder) if mode is None else mode)
            _commit(tmp, target, force=force, folder=folder)
            _fsync_folder(target.parent)
        except PramkitError:
            raise
        except OSError as exc:
            if _foreign(exc, tmp, target):
                raise
            raise WriteError(file_error(exc, target, "write")) from None


class Staged:
    """Content written to an output's temporary now, renamed into place when its block ends (:func:`staged_bytes`).

    Parameters
    ----------
    target : pathlib.Path
        The output, for messages; :func:`staged_bytes` sets the temporary
        (``tmp``) it writes to.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with staged_bytes(pathlib.Path(tmp) / "receipt.json", force=False) as stage:
    ...         stage.write(b"{}")
    ...         print(type(stage).__name__, stage.size, stage.tmp.name.startswith(".receipt.json.pramkit-tmp."))
    Staged 2 True
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        self.tmp: Path | None = None
        self.size: int | None = None

    def write(self, data: bytes) -> None:
        """Write ``data`` to the temporary (replacing what an earlier call wrote).

        Parameters
        ----------
        data : bytes
            The whole content of the output.

        Raises
        ------
        WriteError
            the temporary cannot be written (the target is untouched)

        Examples
        --------
        The last write is the content:

        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with staged_bytes(pathlib.Path(tmp) / "out", force=False) as stage:
        ...         stage.write(b"draft")
        ...         stage.write(b"final")
        ...     print((pathlib.Path(tmp) / "out").read_bytes())
        b'final'
        """
        assert self.tmp is not None, "use Staged through staged_bytes"
        try:
            _write_file(self.tmp, data)
        except OSError as exc:
            raise WriteError(file_error(exc, self.target, "write")) from None
        self.size = len(data)

    def verify(self, tmp: Path) -> None:
        """Check that the temporary holds what :meth:`write` was given (a short write that did not raise).

        :func:`staged_bytes` calls it before the rename.

        Parameters
        ----------
        tmp : pathlib.Path
            The temporary written.

        Raises
        ------
        WriteError
            :meth:`write` was never called
        OSError
            the file is shorter than the content (``ENOSPC``; :func:`atomic_path`
            turns it into a :class:`~pramkit.errors.WriteError`)

        Examples
        --------
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     stage = Staged(pathlib.Path(tmp) / "out")
        ...     stage.tmp = pathlib.Path(tmp) / ".out.tmp"
        ...     stage.write(b"12345")
        ...     stage.verify(stage.tmp)  # complete: nothing happens
        ...     _ = stage.tmp.write_bytes(b"123")  # as if the disk had filled up
        ...     stage.verify(stage.tmp)
        Traceback (most recent call last):
        ...
        OSError: [Errno 28] the file written is shorter than its content
        """
        if self.size is None:
            raise WriteError(f"cannot write {str(self.target)!r}: nothing was written")
        if tmp.stat().st_size != self.size:
            raise OSError(errno.ENOSPC, "the file written is shorter than its content")


@contextlib.contextmanager
def staged_bytes(
    path: PathLike, *, force: bool, inputs: Iterable[PathLike | None] = (), mode: int | None = None,
) -> Iterator[Staged]:
    """Stage the content of ``path``: ``stage.write(data)`` in the block, renamed into place when it ends.

    Writing and committing are separate steps, so that an output can be
    written early and appear only after another one: nest the other output's
    block inside this one, and it is renamed into place first.  The checks,
    the naming of the temporary and the cleanup are those of
    :func:`atomic_path`; the written size is checked.

    Parameters
    ----------
    path : str or os.PathLike
        The output.
    force : bool
        Replace an existing output.
    inputs : iterable of paths
        Files the output may never be.
    mode : int, optional
        Permissions of the output (default: those of an ordinary new file).

    Yields
    ------
    Staged
        Call its ``write(data)`` once the content is known.

    Raises
    ------
    ParameterError, OutputExistsError, WriteError
        As :func:`atomic_path`; also :class:`~pramkit.errors.WriteError` when
        nothing was written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     with staged_bytes(d / "second", force=False) as stage:
    ...         stage.write(b"written first, renamed last")
    ...         _ = write_bytes_atomic(d / "first", b"1", force=False)
    ...         print(sorted(p.name for p in d.iterdir() if not p.name.startswith(".")))
    ...     print((d / "second").read_bytes())
    ['first']
    b'written first, renamed last'
    """
    stage = Staged(Path(path))
    with atomic_path(path, force=force, inputs=inputs, mode=mode, verify=lambda tmp: stage.verify(tmp)) as tmp:
        stage.tmp = tmp
        yield stage


def write_bytes_atomic(
    path: PathLike, data: bytes, *, force: bool, inputs: Iterable[PathLike | None] = (), mode: int | None = None,
) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`); the written size is checked.

    Parameters
    ----------
    path : str or os.PathLike
        The output.
    data : bytes
        Its whole content.
    force : bool
        Replace an existing output.
    inputs : iterable of paths
        Files the output may never be.
    mode : int, optional
        Permissions of the output (default: those of an ordinary new file).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ParameterError, OutputExistsError, WriteError
        As :func:`atomic_path`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_bytes_atomic(pathlib.Path(tmp) / "k", b"\\x00" * 32, force=False, mode=0o600)
    ...     print(out.stat().st_size, oct(out.stat().st_mode & 0o777), [p.name for p in out.parent.iterdir()])
    32 0o600 ['k']
    """
    with staged_bytes(path, force=force, inputs=inputs, mode=mode) as stage:
        stage.write(data)
    return Path(path)


def _write_file(path: Path, data: bytes) -> None:
    """The low-level write of :func:`write_bytes_atomic`."""
    with open(path, "wb") as fh:
        fh.write(data)


def write_text_atomic(
    path: PathLike, text: str, *, force: bool, inputs: Iterable[PathLike | None] = (), mode: int | None = None,
) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (see :func:`atomic_path`).

    Parameters
    ----------
    path : str or os.PathLike
        The output.
    text : str
        Its whole content, written as UTF-8.
    force : bool
        Replace an existing output.
    inputs : iterable of paths
        Files the output may never be.
    mode : int, optional
        Permissions of the output (default: those of an ordinary new file).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ParameterError, OutputExistsError, WriteError
        As :func:`atomic_path`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_text_atomic(pathlib.Path(tmp) / "a.json", "{\\"sex\\": \\"f\\u00e9minin\\"}\\n", force=False)
    ...     print(out.read_text(encoding="utf-8"), end="")
    ...     print(len(out.read_bytes()))  # é is two bytes in UTF-8
    {"sex": "féminin"}
    20
    """
    return write_bytes_atomic(path, text.encode("utf-8"), force=force, inputs=inputs, mode=mode)
