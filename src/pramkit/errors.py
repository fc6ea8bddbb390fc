"""Exceptions a user can cause.

Every error that bad input can trigger is a :class:`PramkitError`; its message
says what is wrong and what to change.  The command line prints the message on
one line and exits with status 2.  Any other exception is a bug in pramkit.
"""

from __future__ import annotations


class PramkitError(Exception):
    """Base class of all errors caused by the user's input."""


class MatrixError(PramkitError, ValueError):
    """A transition matrix is not a valid PRAM matrix."""


class ManifestError(PramkitError, ValueError):
    """A manifest is malformed; the message names the offending field."""


class DataError(PramkitError, ValueError):
    """The data do not match what was declared (unknown category, missing column, ...)."""


class KeyFileError(PramkitError):
    """A secret key is missing, unreadable or too short."""


class OutputExistsError(PramkitError, FileExistsError):
    """An output path exists and overwriting was not requested."""


class ParameterError(PramkitError, ValueError):
    """A parameter (epsilon, a probability vector, a budget split, ...) is out of its domain."""


class WriteError(PramkitError):
    """A file could not be written (full disk, read-only folder, ...); an existing file is left as it was."""


class PramkitWarning(UserWarning):
    """Something the user should know that does not stop the command; the command line prints it as one note line."""
