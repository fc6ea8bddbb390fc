"""The specification of a record swap: every setting of ``pramkit swap`` declared once.

:class:`SwapSpec` holds the settings of a swap besides the file, its columns (the household id,
the geography, the risk variables and the similarity profiles) and the files written: the swap
rate, the k-anonymity threshold, the donor rule, the chunk size, how a CSV file is read and the
engine.  Each setting is declared by :func:`pramkit.settings.setting` with its type, its rule,
its help text and its flag; the flags of ``pramkit swap`` (and the plan's flags of ``pramkit
compare``) are made from it, :meth:`SwapSpec.check` refuses what the command line refuses before
any file is read, :meth:`SwapSpec.plan` is the swap plan of some columns
(:func:`pramkit.swap.plan_swap`) and :meth:`SwapSpec.swap` swaps a file on this machine or
on Spark.  The settings themselves are :class:`pramkit.release.swap_settings.SwapSettings`, which
:func:`pramkit.swap.swap_file` works from (its keywords build one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.errors import ParameterError
from pramkit.release.swap_settings import SwapSettings

if TYPE_CHECKING:
    from pramkit.kernel.rng import SecretKey
    from pramkit.swap import SwapPlan


@dataclass(frozen=True)
class SwapSpec(SwapSettings):
    """Every setting of ``pramkit swap DATA --hid H --geo L1,L2 --out OUT`` but the columns and the files
    (:class:`pramkit.release.swap_settings.SwapSettings`), the plan they make (:meth:`plan`) and the engine that
    runs them (:meth:`swap`).

    Examples
    --------
    >>> SwapSpec(rate=0.1, k=2).plan("hid", ["region", "area"], risk_vars=["age"]).k
    2
    >>> SwapSpec(rate=1.5).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the swap rate must lie in [0, 1] (a share of households), got 1.5
    """

    def plan(self, hid: str, geo: Sequence[str], *, risk_vars: Sequence[str] = (),
             similar: Sequence[Sequence[str]] = ()) -> SwapPlan:
        """The swap plan of these settings for the columns named (:func:`pramkit.swap.plan_swap`).

        ``hid``, ``geo`` (highest level first), ``risk_vars`` (none: a random swap) and ``similar`` (the
        profiles a donor shares, tried in order) name the file's columns, as
        :func:`pramkit.swap.plan_swap`'s do.
        """
        from pramkit.swap.plan import plan_swap

        self.check()
        return plan_swap(hid, list(geo), risk_vars=list(risk_vars), similar=[list(s) for s in similar],
                         rate=self.rate, k=self.k, donors=self.donors)

    def swap(self, data: str | Path, plan: SwapPlan, out: str | Path, *,
             key: SecretKey | bytes | str | Path | None = None, manifest: str | Path | None = None,
             partners: str | Path | None = None, force: bool = False) -> Any:
        """Swap the households of ``data`` by ``plan`` into ``out`` with these settings
        (:func:`pramkit.swap.swap_file`, or the Spark engine's, which writes no manifest nor partners
        file and reads no ``chunk_rows``); every setting checked before any file is read.

        Raises
        ------
        ParameterError
            A setting its rule refuses, ``manifest`` or ``partners`` with ``engine="spark"``, or (on this machine,
            :func:`pramkit.swap.swap_file` given these settings as ``spec=``) a plan not made with their ``rate``,
            ``k`` and ``donors`` (:meth:`plan` makes it).

        Examples
        --------
        >>> SwapSpec(engine="spark").swap("d.csv", SwapSpec().plan("hid", ["area"]), "out", manifest="m.json")
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --engine spark writes the swapped records and their receipt; --manifest and --partners are written by --engine local
        """
        if self.engine == "spark":
            keywords = self.keywords()
            if manifest is not None or partners is not None:
                raise ParameterError("--engine spark writes the swapped records and their receipt; --manifest and "
                                     "--partners are written by --engine local")
            from pramkit.swap.spark import swap_file_spark

            del keywords["chunk_rows"]
            return swap_file_spark(data, plan, out, master=self.spark_master, key=key, force=force, **keywords)
        from pramkit.swap.run import swap_file

        return swap_file(data, plan, out, key=key, force=force, manifest=manifest, partners=partners, spec=self)


__all__ = ["SwapSpec"]
