"""The specification of a record swap: every setting of ``pramkit swap`` declared once.

:class:`SwapSpec` holds the settings of a swap besides the file, its columns (the household id,
the geography, the risk variables and the similarity profiles) and the files written: the swap
rate, the k-anonymity threshold, the donor rule, the chunk size, how a CSV file is read and the
engine.  Each setting is declared by :func:`pramkit.settings.setting` with its type, its rule,
its help text and its flag; the flags of ``pramkit swap`` (and the plan's flags of ``pramkit
compare``) are made from it, :meth:`SwapSpec.check` refuses what the command line refuses before
any file is read, :meth:`SwapSpec.plan` is the swap plan of some columns
(:func:`pramkit.swap.plan_swap`) and :meth:`SwapSpec.swap` swaps a file on this machine or
on Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pramkit.defaults import CHUNK_ROWS, SWAP_DONOR_RULES
from pramkit.errors import ParameterError
from pramkit.release.apply_spec import at_least_one
from pramkit.settings import DataSettings, engine_setting, setting
from pramkit.validate import Checked, Choice

if TYPE_CHECKING:
    from pramkit.kernel.rng import SecretKey
    from pramkit.swap import SwapPlan


def _plan_value(value: Any, name: str) -> None:
    """A value of a swap plan's setting (``rate``, ``k``), refused as :func:`pramkit.swap.plan_swap`
    refuses it (its message)."""
    from pramkit.swap import plan_swap

    plan_swap("household", ["area"], **{name: value})


@dataclass(frozen=True)
class SwapSpec(DataSettings):
    """Every setting of ``pramkit swap DATA --hid H --geo L1,L2 --out OUT`` but the columns and the files.

    Examples
    --------
    >>> SwapSpec(rate=0.1, k=2).plan("hid", ["region", "area"], risk_vars=["age"]).k
    2
    >>> SwapSpec(rate=1.5).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the swap rate must lie in [0, 1] (a share of households), got 1.5
    """

    rate: float = setting(0.05, float, Checked(_plan_value, "a number in [0, 1]", 1.5),
                          "share of households swapped, in [0, 1] (default 0.05)", label="Swap rate")
    k: int = setting(3, int, Checked(_plan_value, "a whole number >= 1", 0),
                     "k-anonymity threshold, at least 1 (default 3)", label="k-anonymity threshold")
    donors: str = setting(
        "same-parent", str, Choice(SWAP_DONOR_RULES), "donor rule: same-parent (default): donors in another area "
        "under the same area above, households selected at a level never each other's donors; any-area: donors in "
        "any other area of the level swapped across, risky donors first (sdcMicro recordSwap's donor pool; each donor "
        "a fresh keyed draw, not recordSwap's scan of one priority order with the areas in code order)",
        parse_choices=True, label="Donor rule")
    chunk_rows: int = setting(CHUNK_ROWS, int, Checked(at_least_one, "a whole number >= 1", 0),
                              "rows per chunk (memory bound; the release is the same for any value; default "
                              "%(default)s)", label="Rows per chunk")
    engine: str = engine_setting("the swap drawn here, the records swapped by a Spark job writing a "
                                 "folder of part files")

    def plan(self, hid: str, geo: Sequence[str], *, risk_vars: Sequence[str] = (),
             similar: Sequence[Sequence[str]] = ()) -> SwapPlan:
        """The swap plan of these settings for the columns named (:func:`pramkit.swap.plan_swap`).

        ``hid``, ``geo`` (highest level first), ``risk_vars`` (none: a random swap) and ``similar`` (the
        profiles a donor shares, tried in order) name the file's columns, as
        :func:`pramkit.swap.plan_swap`'s do.
        """
        from pramkit.swap import plan_swap

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
            A setting its rule refuses, or ``manifest`` or ``partners`` with ``engine="spark"``.

        Examples
        --------
        >>> SwapSpec(engine="spark").swap("d.csv", SwapSpec().plan("hid", ["area"]), "out", manifest="m.json")
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --engine spark writes the swapped records and their receipt; --manifest and --partners are written by --engine local
        """
        keywords = self.keywords()
        if self.engine == "spark":
            if manifest is not None or partners is not None:
                raise ParameterError("--engine spark writes the swapped records and their receipt; --manifest and "
                                     "--partners are written by --engine local")
            from pramkit.swap.spark import swap_file_spark

            del keywords["chunk_rows"]
            return swap_file_spark(data, plan, out, master=self.spark_master, key=key, force=force, **keywords)
        from pramkit.swap import swap_file

        return swap_file(data, plan, out, key=key, force=force, manifest=manifest, partners=partners, **keywords)

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.swap.swap_file` these settings give (checked): how the file is
        read and chunked (``rate``, ``k`` and ``donors`` are the plan's: :meth:`plan`; ``engine`` and
        ``spark_master``: :meth:`swap`).

        Examples
        --------
        >>> SwapSpec(sep=";", chunk_rows=100).keywords()
        {'chunk_rows': 100, 'na_values': ('NA',), 'sep': ';', 'encoding': 'utf-8'}
        """
        self.check()
        return {"chunk_rows": self.chunk_rows, "na_values": self.na_values, "sep": self.sep,
                "encoding": self.encoding}


__all__ = ["SwapSpec"]
