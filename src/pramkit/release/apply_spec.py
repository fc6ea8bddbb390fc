"""The specification of applying a design: every setting of ``pramkit apply`` declared once.

:class:`ApplySpec` holds the settings of :func:`pramkit.apply_file` besides the files and the key:
the chunk size, the threads, the shuffle, the release label, how a CSV file is read and the engine.
Each setting is declared by :func:`pramkit.settings.setting` with its type, its rule, its help text
and its flag; the ``pramkit apply`` command's flags are made from it, :meth:`ApplySpec.check`
refuses what the command line refuses, with the same message, before any file is read, and
:meth:`ApplySpec.apply` applies a manifest with these settings on this machine or on Spark.  The settings
themselves are :class:`pramkit.engine.apply_spec.ApplySettings`, beside the engine that works from them
(:func:`pramkit.apply_file`, whose keywords build one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pramkit.engine.apply_spec import ApplySettings, at_least_one, release_flag

if TYPE_CHECKING:
    from pramkit.engine.perturb import ApplyResult
    from pramkit.kernel.rng import SecretKey
    from pramkit.manifest import Manifest


@dataclass(frozen=True)
class ApplySpec(ApplySettings):
    """Every setting of ``pramkit apply DATA --manifest M --out OUT`` but the files and the key
    (:class:`pramkit.engine.apply_spec.ApplySettings`), and the engine that runs them (:meth:`apply`).

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
        if self.engine == "spark":
            from pramkit.engine.spark.apply import apply_file_spark

            keywords = self.keywords()
            del keywords["chunk_rows"], keywords["threads"]
            return apply_file_spark(data, manifest, out, master=self.spark_master, key=key, force=force, quiet=quiet,
                                    **keywords)
        from pramkit.engine.perturb import apply_file

        return apply_file(data, manifest, out, key=key, force=force, quiet=quiet, spec=self)


__all__ = ["ApplySpec", "at_least_one", "release_flag"]
