"""The specification of applying a design: every setting of ``pramkit apply`` declared once.

:class:`ApplySpec` holds the settings of :func:`pramkit.apply_file` besides the files and the key:
the chunk size, the threads, the shuffle, the release label, how a CSV file is read and the engine.
Each setting is declared by :func:`pramkit.settings.setting` with its type, its rule, its help text
and its flag; the ``pramkit apply`` command's flags are made from it, :meth:`ApplySpec.check`
refuses what the command line refuses, with the same message, before any file is read, and
:meth:`ApplySpec.apply` applies a manifest with these settings on this machine or on Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.defaults import CHUNK_ROWS
from pramkit.errors import ParameterError
from pramkit.settings import DataSettings, engine_setting, setting
from pramkit.validate import Checked, Flag, Instance

if TYPE_CHECKING:
    from pramkit.engine.perturb import ApplyResult
    from pramkit.kernel.rng import SecretKey
    from pramkit.manifest import Manifest


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
class ApplySpec(DataSettings):
    """Every setting of ``pramkit apply DATA --manifest M --out OUT`` but the files and the key.

    Examples
    --------
    >>> ApplySpec(shuffle=True, release="wave 2").check()
    >>> ApplySpec(chunk_rows=0).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: chunk_rows must be at least 1, not 0
    >>> ApplySpec(engine="dask").check()
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
    public_columns: str = setting(
        "", str, Instance((str,), "column names, comma-separated"),
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
        >>> ApplySpec().label(), ApplySpec(release="wave 2").label()
        ('', 'wave 2')
        """
        from pramkit.validate import release_label

        return "" if self.release is None else release_label(self.release, "--release")

    def apply(self, data: str | Path, manifest: Manifest | str | Path, out: str | Path, *,
              key: SecretKey | bytes | str | Path | None = None, force: bool = False,
              quiet: bool = True) -> ApplyResult:
        """Apply ``manifest`` to ``data`` with these settings and write ``out`` (:func:`pramkit.apply_file`, or
        :func:`pramkit.engine.spark.apply.apply_file_spark` with ``engine="spark"``, which reads no
        ``chunk_rows`` nor ``threads``); every setting checked before any file is read.

        Examples
        --------
        The same release as :func:`pramkit.apply_file` with the same settings as keywords:

        >>> import pathlib, tempfile
        >>> from pramkit import Manifest, apply_file
        >>> from pramkit.datasets import census
        >>> from pramkit.design.classic import randomized_response
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> census(200)[["sex"]].to_csv(folder / "census.csv", index=False)
        >>> _ = Manifest.of({"sex": randomized_response(sorted(census(200)["sex"].unique()), 1.0)}).write(
        ...     folder / "sex.json")
        >>> a = ApplySpec(chunk_rows=7).apply(folder / "census.csv", folder / "sex.json", folder / "a.csv", key=bytes(32))
        >>> b = apply_file(folder / "census.csv", folder / "sex.json", folder / "b.csv", key=bytes(32), quiet=True)
        >>> (folder / "a.csv").read_bytes() == (folder / "b.csv").read_bytes(), a.rows
        (True, 200)
        """
        keywords = self.keywords()
        common: dict[str, Any] = {"key": key, "force": force, "quiet": quiet}
        if self.engine == "spark":
            from pramkit.engine.spark.apply import apply_file_spark

            del keywords["chunk_rows"], keywords["threads"]
            return apply_file_spark(data, manifest, out, master=self.spark_master, **common, **keywords)
        from pramkit.engine.perturb import apply_file

        return apply_file(data, manifest, out, **common, **keywords)

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.apply_file` these settings give (checked): every setting but the
        engine's (``engine``, ``spark_master``: :meth:`apply` reads them).

        Examples
        --------
        >>> ApplySpec(public_columns="age, region", release="wave 2").keywords()["public_columns"]
        ('age', 'region')
        """
        self.check()
        public = tuple(c.strip() for c in self.public_columns.split(",") if c.strip())
        return {"chunk_rows": self.chunk_rows, "threads": self.threads, "na_values": self.na_values,
                "shuffle": self.shuffle, "public_columns": public, "release": self.label(), "sep": self.sep,
                "encoding": self.encoding}


__all__ = ["ApplySpec", "at_least_one", "release_flag"]
