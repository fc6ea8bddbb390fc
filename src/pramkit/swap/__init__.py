"""Record swapping of the geography, beside PRAM.

Targeted record swapping as Eurostat's method for the 2021 census rounds, with two
donor rules: ``same-parent`` (the default: donors under the same area of the level
above) and ``any-area`` (sdcMicro ``recordSwap``'s donor pool: donors from any other area
of the swap level, risky donors first, each a fresh keyed draw).  :mod:`~pramkit.swap.core` draws
who is swapped with whom, :mod:`~pramkit.swap.households` reads the
households of a file in chunks, :mod:`~pramkit.swap.run` writes the
released file, its receipt and (for random swapping) its manifest, and
:mod:`~pramkit.swap.implied` gives the misclassification matrix and the
epsilon the swap implies for the geography.  ``docs/swapping.md`` has the method,
the measurements and the comparison with PRAM.
"""

from pramkit.swap.implied import (
           random_swap_epsilon,
           random_swap_matrix,
           transition_table,
)
from pramkit.swap.run import (
           SwapPlan,
           SwapResult,
           partners_table,
           plan_swap,
           swap_file,
           swap_frame,
           swap_manifest,
)

__all__ = ["SwapPlan", "SwapResult", "partners_table", "plan_swap", "random_swap_epsilon", "random_swap_matrix",
           "swap_file", "swap_frame", "swap_manifest", "transition_table"]
