"""The settings of a record swap, declared once: what :func:`pramkit.swap.swap_file` works from.

:class:`SwapSettings` holds the settings of a swap besides the file, its columns and the files written: the
swap rate, the k-anonymity threshold, the donor rule, the chunk size, how a CSV file is read and the engine.
Each setting is declared by :func:`pramkit.settings.setting` with its type, its rule, its help text and its
flag.  :func:`pramkit.swap.swap_file` works from one checked value of it (the one door: its keywords build
one, the rate, threshold and donor rule its plan's); :class:`pramkit.release.swap_spec.SwapSpec`, the
specification of ``pramkit swap``, is the same settings with the methods that make the plan and run the swap
on the engine they name.  The rate and the threshold are refused as :func:`pramkit.swap.plan.plan_swap`
refuses them, whose module this one imports alone (never :mod:`pramkit.swap.run`, which imports this one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pramkit.defaults import CHUNK_ROWS, SWAP_DONOR_RULES
from pramkit.engine.apply_spec import at_least_one
from pramkit.settings import DataSettings, engine_setting, setting
from pramkit.validate import Checked, Choice


def plan_value(value: Any, name: str) -> None:
    """A value of a swap plan's setting (``rate``, ``k``), refused as :func:`pramkit.swap.plan.plan_swap`
    refuses it (its message).

    Examples
    --------
    >>> plan_value(0.1, "rate")
    >>> plan_value(0, "k")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: k (the k-anonymity threshold) must be an integer of at least 1, got 0; for random swapping give no risk variables
    """
    from pramkit.swap.plan import plan_swap

    plan_swap("household", ["area"], **{name: value})


@dataclass(frozen=True)
class SwapSettings(DataSettings):
    """Every setting of ``pramkit swap DATA --hid H --geo L1,L2 --out OUT`` but the columns and the files
    (:class:`pramkit.release.swap_spec.SwapSpec` makes the plan and runs them).

    Examples
    --------
    >>> SwapSettings(rate=0.1, k=2).check()
    >>> SwapSettings(rate=1.5).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the swap rate must lie in [0, 1] (a share of households), got 1.5
    >>> SwapSettings(chunk_rows=0).check()
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: chunk_rows must be at least 1, not 0
    """

    rate: float = setting(0.05, float, Checked(plan_value, "a number in [0, 1]", 1.5),
                          "share of households swapped, in [0, 1] (default 0.05)", label="Swap rate")
    k: int = setting(3, int, Checked(plan_value, "a whole number >= 1", 0),
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

    def keywords(self) -> dict[str, Any]:
        """The keywords of :func:`pramkit.swap.swap_file` these settings give (checked): how the file is
        read and chunked (``rate``, ``k`` and ``donors`` are the plan's:
        :meth:`pramkit.release.swap_spec.SwapSpec.plan`; ``engine`` and ``spark_master``:
        :meth:`pramkit.release.swap_spec.SwapSpec.swap`).

        Examples
        --------
        >>> SwapSettings(sep=";", chunk_rows=100).keywords()
        {'chunk_rows': 100, 'na_values': ('NA',), 'sep': ';', 'encoding': 'utf-8'}
        """
        self.check()
        return {"chunk_rows": self.chunk_rows, "na_values": self.na_values, "sep": self.sep,
                "encoding": self.encoding}


__all__ = ["SwapSettings", "plan_value"]
