"""Exceptions a user can cause.

Every error that bad input can trigger is a :class:`PramkitError`; its message
says what is wrong and what to change.  The command line prints the message on
one line and exits with status 2.  Any other exception is a bug in pramkit.
"""

from __future__ import annotations


class PramkitError(Exception):
    """Base class of all errors caused by the user's input.

    Catching it catches every error that bad input can cause, and nothing
    else: any other exception is a bug.  It is never raised itself: every
    error is one of its subclasses, which says what caused it.

    Examples
    --------
    >>> from pramkit.io import table_format
    >>> try:
    ...     table_format("survey.xlsx")
    ... except PramkitError as exc:
    ...     print(exc)
    cannot tell the format of 'survey.xlsx' from its suffix; use one of ['.arrow', '.csv', '.dta', '.feather', '.parquet', '.pq', '.sas7bdat', '.sav', '.tsv', '.txt', '.xpt', '.zsav']
    """


class MatrixError(PramkitError, ValueError):
    """A transition matrix is not a valid PRAM matrix.

    Examples
    --------
    A row that does not sum to 1 is not a row of probabilities:

    >>> from pramkit import PramMatrix
    >>> PramMatrix([[0.9, 0.2], [0.5, 0.5]], ["a", "b"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pramkit.errors.MatrixError: row 0 of the matrix sums to ...1.1..., not 1 (tolerance 1e-09); 1 row(s) are off
    >>> issubclass(MatrixError, ValueError)
    True
    """


class ManifestError(PramkitError, ValueError):
    """A manifest is malformed; the message names the offending field.

    Examples
    --------
    >>> from pramkit import Manifest
    >>> Manifest.from_dict({"format": "something-else"})
    Traceback (most recent call last):
    ...
    pramkit.errors.ManifestError: field 'format' must be 'pramkit-manifest', got 'something-else'
    """


class DataError(PramkitError, ValueError):
    """The data do not match what was declared (unknown category, missing column, ...).

    Examples
    --------
    The message names the column, the row (counted from 1) and the value:

    >>> from pramkit.codebook import encode
    >>> encode(["m", "f", "x"], ["f", "m"], column="sex")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: column 'sex', row 3: value 'x' is not one of its categories ('f', 'm')
    """


class KeyFileError(PramkitError):
    """A secret key is missing, unreadable or too short.

    Examples
    --------
    >>> from pramkit.kernel.rng import SecretKey
    >>> SecretKey(b"too short", "a test")
    Traceback (most recent call last):
    ...
    pramkit.errors.KeyFileError: the key from a test has 9 bytes; at least 32 are needed (make one with `pramkit keygen FILE`)
    """


class OutputExistsError(PramkitError, FileExistsError):
    """An output path exists and overwriting was not requested.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.atomic import write_text_atomic
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = pathlib.Path(d) / "out.txt"
    ...     _ = write_text_atomic(out, "first", force=False)
    ...     try:
    ...         write_text_atomic(out, "second", force=False)
    ...     except OutputExistsError:
    ...         print(out.read_text())  # the first content is kept
    first
    """


class ParameterError(PramkitError, ValueError):
    """A parameter (epsilon, a probability vector, a budget split, ...) is out of its domain.

    Examples
    --------
    >>> from pramkit.validate import probability
    >>> probability(1.5, "alpha")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: alpha must lie strictly between 0 and 1, got 1.5
    """


class WriteError(PramkitError):
    """A file could not be written (full disk, read-only folder, ...); an existing file is left as it was.

    Examples
    --------
    An atomic write whose content never reached the disk is refused before
    anything is renamed into place:

    >>> import pathlib, tempfile
    >>> from pramkit.atomic import staged_bytes
    >>> with tempfile.TemporaryDirectory() as d:
    ...     try:
    ...         with staged_bytes(pathlib.Path(d) / "out.bin", force=False):
    ...             pass  # stage.write(...) never called
    ...     except WriteError as exc:
    ...         print(str(exc).endswith("nothing was written"), sorted(p.name for p in pathlib.Path(d).iterdir()))
    True []
    """


class Cancelled(PramkitError):
    """The user stopped a long piece of work (a progress watcher raised it); nothing half-written is left.

    Examples
    --------
    >>> from pramkit.progress import progress, watching
    >>> def stop(desc, done, total):
    ...     if done >= 3:
    ...         raise Cancelled(f"{desc} cancelled at {done:g} of {total:g}")
    >>> with watching(stop):
    ...     with progress(total=10, desc="counting") as bar:
    ...         bar.update(3)
    Traceback (most recent call last):
    ...
    pramkit.errors.Cancelled: counting cancelled at 3 of 10
    """


class MissingExtraError(PramkitError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the extra to install.

    It is an :class:`ImportError`, so ``except ImportError`` around an import of an optional
    module keeps working (:func:`pramkit._extras.raise_missing_extra` raises it).

    Examples
    --------
    >>> from pramkit._extras import raise_missing_extra
    >>> try:
    ...     raise_missing_extra(ModuleNotFoundError("No module named 'sklearn'", name="sklearn"), "sklearn",
    ...                         "the scikit-learn transformer")
    ... except MissingExtraError as exc:
    ...     print(exc)
    the scikit-learn transformer needs sklearn, which is not installed: pip install "pramkit[sklearn]"
    >>> issubclass(MissingExtraError, ImportError)
    True
    """


class KernelMissingError(PramkitError, ImportError):
    """pramkit's compiled kernel (``pramkit.kernel._kernels``) is not installed: an installation from sources
    made without a C compiler, or a copy of the source tree that was never built.

    It is an :class:`ImportError` (``from pramkit.kernel import _kernels`` raises it) and a
    :class:`PramkitError`, so the command line says it in one line (exit 2).

    Examples
    --------
    >>> issubclass(KernelMissingError, ImportError), issubclass(KernelMissingError, PramkitError)
    (True, True)
    """


class PramkitWarning(UserWarning):
    """Something the user should know that does not stop the command; the command line prints it as one note line.

    Examples
    --------
    Removing the temporary file of a run that was killed is such a note:

    >>> import pathlib, tempfile, warnings
    >>> from pramkit.atomic import remove_stale_temporaries
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / ".out.csv.pramkit-tmp.999999999.0a1b2c3d").write_text("partial")
    ...     with warnings.catch_warnings(record=True) as caught:
    ...         warnings.simplefilter("always")
    ...         removed = remove_stale_temporaries(pathlib.Path(d) / "out.csv", label="out.csv")
    >>> removed, caught[0].category is PramkitWarning
    (1, True)
    >>> str(caught[0].message)
    'removed 1 temporary file(s) of out.csv left by an interrupted run (7 bytes)'
    """
