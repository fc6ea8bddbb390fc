"""The settings of applying a design, declared once: what :func:`pramkit.apply_file` works from.

:class:`ApplySettings` holds the settings of :func:`pramkit.apply_file` besides the files and the key:
the chunk size, the threads, the shuffle, the release label, how a CSV file is read and the engine.
Each setting is declared by :func:`pramkit.settings.setting` with its type, its rule, its help text
and its flag.  :func:`pramkit.apply_file` works from one checked value of it (the one door: its
keywords build one); :class:`pramkit.release.apply_spec.ApplySpec`, the specification of
``pramkit apply``, is the same settings with the method that runs them on the engine they name
(this machine or Spark), so they stand here, beside the engine that takes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pramkit.defaults import CHUNK_ROWS
from pramkit.errors import ParameterError
from pramkit.settings import DataSettings, engine_setting, setting
from pramkit.validate import Checked, Flag, Instance


def at_least_one(value: Any, name: str) -> None:
    """A count of at least 1 (rows per chunk, threads), refused as the library refuses it.

    Examples
    --------
    >>> at_least_one(2, "threads")
    >>> at_least_one(0, "threads")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: threads must be at least 1, not 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"{name} must be at least 1, not {value!r}")


def release_flag(value: Any, name: str = "--release") -> None:
    """``--release``: a label (:func:`pramkit.validate.release_label`), not an empty one.

    Examples
    --------
    >>> release_flag("wave 2")
    >>> release_flag("")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --release needs a label (leave the flag out for none)
    """
    from pramkit.validate import release_label

    if isinstance(value, str) and not value:
        raise ParameterError("--release needs a label (leave the flag out for none)")
    release_label(value, "--release")


@dataclass(frozen=True)
class ApplySettings(DataSettings):
    """Every setting of ``pramkit apply DATA --manifest M --out OUT`` but the files and the key
    (:class:`pramkit.release.apply_spec.ApplySpec` runs them).

    Examples
    --------
    >>> ApplySettings(shuffle=True, release="wave 2").check()
    >>> ApplySettings(chunk_rows=0).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: chunk_rows must be at least 1, not 0
    >>> ApplySettings(engine="dask").check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: engine must be one of 'local', 'spark', got 'dask'
    """

    chunk_rows: int = setting(CHUNK_ROWS, int, Checked(at_least_one, "a whole number >= 1", 0),
                              "rows per chunk (memory bound; default %(default)s)", label="Rows per chunk")
    threads: int | None = setting(
        None, int, Checked(at_least_one, "a whole number >= 1", 0),
        "threads that perturb a chunk (default: every core; the release is the same for any number)")
    engine: str = engine_setting("a Spark job writing a folder of part files")
    shuffle: bool = setting(
        False, bool, Flag(), "write the rows in an order drawn from the key (same release for any chunk size or "
        "engine); the summary and the receipt then state the file's central (epsilon, delta)")
    public_columns: str | tuple[str, ...] = setting(
        "", str, Instance((str, tuple, list), "column names, comma-separated"),
        "comma-separated unperturbed columns that the shuffled guarantee treats as public")
    release: str | None = setting(
        None, str, Checked(release_flag, "a label: printable, no blank at either end, at most 200 characters",
                           "wave\t2"),
        "a public label that tells this release apart from others made with the same key and manifest (a "
        "panel's next wave, a corrected file): each label draws anew; the receipt records it, and the release "
        "is made again only with it", metavar="LABEL", noun="--release", label="Release label")

    def label(self) -> str:
        """The release label (``""``: none), in Unicode NFC.

        Examples
        --------
        >>> ApplySettings().label(), ApplySettings(release="wave 2").label()
        ('', 'wave 2')
        """
        from pramkit.validate import release_label

        return "" if self.release is None else release_label(self.release, "--release")

    def columns(self) -> tuple[str, ...]:
        """The public columns (``public_columns``: comma-separated text, or the names themselves).

        Examples
        --------
        >>> ApplySettings(public_columns="age, region").columns(), ApplySettings(public_columns=("a,b",)).columns()
        (('age', 'region'), ('a,b',))
        """
        if isinstance(self.public_columns, str):
            return tuple(c.strip() for c in self.public_columns.split(",") if c.strip())
        return tuple(self.public_columns)

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.apply_file` these settings give (checked): every setting but the
        engine's (``engine``, ``spark_master``: :meth:`pramkit.release.apply_spec.ApplySpec.apply` reads
        them).

        Examples
        --------
        >>> ApplySettings(public_columns="age, region", release="wave 2").keywords()["public_columns"]
        ('age', 'region')
        """
        self.check()
        return {"chunk_rows": self.chunk_rows, "threads": self.threads, "na_values": self.na_values,
                "shuffle": self.shuffle, "public_columns": self.columns(), "release": self.label(), "sep": self.sep,
                "encoding": self.encoding}


__all__ = ["ApplySettings", "at_least_one", "release_flag"]
