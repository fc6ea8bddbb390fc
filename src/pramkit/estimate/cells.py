"""The cells of a variable read from several columns (joint, or with strata), as positions in their columns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pramkit.codebook import canonical
from pramkit.labels import Label


def cell_positions(cells: Sequence[Sequence[Label]], levels: Sequence[Sequence[Label]]) -> np.ndarray:
    """The flat index of each cell in the cross-classification of its columns' levels.

    Parameters
    ----------
    cells : sequence of tuples
        The variable's cells (its matrix's categories), one label per column.
    levels : sequence of sequences
        Each column's levels, in the order the columns were counted.

    Returns
    -------
    numpy.ndarray
        One flat index (C order over the columns' levels) per cell.

    Examples
    --------
    >>> cell_positions([("0-9", "single"), ("10+", "married"), ("10+", "single")],
    ...                [("0-9", "10+"), ("married", "single")]).tolist()
    [1, 2, 3]
    """
    position = [{canonical(v): i for i, v in enumerate(column)} for column in levels]
    return np.ravel_multi_index(
        np.array([[position[i][canonical(v)] for i, v in enumerate(cell)] for cell in cells]).T,
        [len(column) for column in levels])
