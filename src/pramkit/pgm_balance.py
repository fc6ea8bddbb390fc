"""A balanced draw from the model pgm: the released records chosen among more draws so that every 3-way table
of the released file is as close to the model's as a keyed local search finds.

Drawing ``m`` records from a fitted model, even by systematic sampling along its junction tree
(:func:`pramkit.synthesize_pgm.draw`), leaves every table that is not one of the tree's cliques with the
sampling noise of ``m`` independent records: on a file of 27 000 records over 9 variables, about as much
total variation in the 3-way tables as the model's own error.  The balanced draw removes most of it:

1. **Pool.**  ``POOL`` times as many records as released are drawn from the model, by the same systematic
   sampling (every one allowed by every rule).
2. **Start.**  The first ``m`` records of the pool (a keyed order, so a sample of it) are the released draws.
3. **Search.**  ``STEPS`` times ``m`` times, a released draw and a pool record not released are picked at
   keyed uniforms, and they change places when that lowers the objective: the L1 distance, added up over
   every table of the workload (each 3-way marginal of the variables, every marginal when there are fewer
   than three), between the released counts (each draw counted ``share`` times) and the model's
   marginals scaled to the released records.  The counts and the marginals are held in fixed point (units
   of ``1 / ONE``), so a swap's change is summed exactly: whether it gains depends on no order of addition,
   machine or library.  The search runs compiled (:func:`pramkit.kernel._kernels.balance_swaps`).

Everything here reads the fitted model and the key only: it is post-processing of the noisy tables, and the
privacy guarantee is unchanged.  The search is deterministic given the key, so the audit's release made
again reproduces it.  It needs the pool's cell of each table in memory (``POOL`` times ``m`` times the tables,
4 bytes each) and time in proportion to ``STEPS`` times ``m`` times the tables, so the draw ``"auto"``
balances only below ``MOST_ENTRIES``: a large file's sampling noise is small anyway (relative noise
``1 / sqrt(cell count)``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pramkit.errors import DataError, ParameterError
from pramkit.kernel.rng import SecretKey, uniforms
from pramkit.synthesize_codes import cell_index

#: How the released records are drawn from the model pgm: ``"auto"`` (balanced when small enough, below),
#: ``"balanced"`` (this module) or ``"systematic"`` (along the junction tree only, as releases before it).
DRAWS = ("auto", "balanced", "systematic")
#: The pool's size over the released draws.
POOL = 4
#: The swaps proposed per released draw.
STEPS = 16
#: The most pool cells (pool records times tables) of a balanced draw under ``"auto"`` (about 160 MB).
MOST_ENTRIES = 40_000_000
#: The unit of the search's counts and goals (fixed point, so that a swap's change is exact in any order).
ONE = 2**20
#: The swaps proposed per call of the compiled search (between updates of the progress bar).
CHUNK = 1 << 20


def check_draw(draw: Any, model: Any = "pgm") -> str:
    """Check the draw setting before any data is read: one of :data:`DRAWS`, with the model pgm only
    (``None``: ``"auto"`` for the model pgm).

    Examples
    --------
    >>> check_draw(None), check_draw("balanced")
    ('auto', 'balanced')
    >>> check_draw("even")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: draw must be one of auto, balanced, systematic, got 'even'
    """
    if draw is None:
        return "auto"
    if draw not in DRAWS:
        raise ParameterError(f"draw must be one of {', '.join(DRAWS)}, got {draw!r}")
    if model != "pgm" and draw != "auto":
        raise ParameterError(f"draw needs the model pgm (the model {model} draws from its pool of candidates)")
    return str(draw)


def check_records_per_draw(value: Any, min_count: Any = 1, model: Any = "pgm") -> float | None:
    """Check the records given each draw on average before any data is read: ``None`` (the whole number
    ``min_count`` gives) or a number from 1 to 2, with the model pgm only, and below 2 with ``min_count`` 1
    only (min-count 2 gives every draw to two records).  A value equal to ``min_count`` is its default,
    ``None``, so that it names the same release.

    Examples
    --------
    >>> check_records_per_draw(1.25), check_records_per_draw(None), check_records_per_draw(2, min_count=2)
    (1.25, None, None)
    >>> check_records_per_draw(3)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: records_per_draw must be a number from 1 to 2, got 3
    >>> check_records_per_draw(1.5, min_count=2)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: records_per_draw 1.5 needs min_count 1 (min_count 2 gives every draw to two records)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not math.isfinite(float(value)) or not 1 <= float(value) <= 2:
        raise ParameterError(f"records_per_draw must be a number from 1 to 2, got {value!r}")
    if model != "pgm":
        raise ParameterError(f"records_per_draw needs the model pgm (the model {model} shares draws by pairs)")
    if min_count == 2 and float(value) != 2:
        raise ParameterError(f"records_per_draw {float(value):g} needs min_count 1 (min_count 2 gives every draw "
                             "to two records)")
    return None if float(value) == min_count else float(value)


def workload_tables(variables: int) -> list[tuple[int, ...]]:
    """The tables the balanced draw meets: every 3-way marginal of ``variables`` variables (every marginal of
    all of them when there are fewer than three), as column positions.

    Examples
    --------
    >>> workload_tables(4), workload_tables(2)
    ([(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)], [(0, 1)])
    """
    return list(itertools.combinations(range(variables), min(3, variables)))


def is_balanced(draw: str, draws: int, variables: int) -> bool:
    """Whether the draw setting ``draw`` balances a draw of ``draws`` records over ``variables`` variables:
    always under ``"balanced"``, never under ``"systematic"``, and under ``"auto"`` when the pool's cells
    (:data:`POOL` times ``draws`` times the tables) are at most :data:`MOST_ENTRIES`.  Reads only public
    figures (the released draws, the variables).

    Examples
    --------
    >>> is_balanced("auto", 27_000, 9), is_balanced("auto", 18_000_000, 12), is_balanced("systematic", 10, 3)
    (True, False, False)
    """
    if draw == "systematic" or draws < 2:
        return False
    return draw == "balanced" or POOL * draws * len(workload_tables(variables)) <= MOST_ENTRIES


def balance(pool: np.ndarray, m: int, share: int | np.ndarray, sizes: Sequence[int],
            marginal: Callable[[tuple[int, ...]], np.ndarray], key: SecretKey, quiet: bool = True) -> np.ndarray:
    """The positions in ``pool`` (records by variables, codes below ``sizes``) of ``m`` records, each to be
    released ``share`` times (or the draw in slot ``i`` ``share[i]`` times: a whole number each), whose tables
    meet the model's (module docstring); ``marginal(t)``: the model's table over the columns ``t`` (any scale).

    Examples
    --------
    >>> from pramkit.kernel.rng import resolve_key
    >>> pool = np.array([[0, 0], [0, 0], [0, 0], [1, 1], [1, 1], [1, 1]])
    >>> half = lambda t: np.array([[1.0, 0.0], [0.0, 1.0]])       # the model: half (0, 0), half (1, 1)
    >>> sorted(pool[balance(pool, 4, 1, [2, 2], half, resolve_key(bytes(32)))][:, 0].tolist())
    [0, 0, 1, 1]
    """
    from pramkit.kernel import _kernels
    from pramkit.progress import progress

    weights = np.broadcast_to(np.asarray(share, dtype=np.int64), (m,))
    n = int(weights.sum())
    tables = workload_tables(pool.shape[1])
    cells = sum(math.prod(sizes[i] for i in t) for t in tables)
    if cells >= 2**31:
        raise DataError(f"a balanced draw over {cells:,} cells of 3-way tables is too large (at most 2^31): "
                        "draw systematically")
    idx = np.empty((len(pool), len(tables)), dtype=np.int32)
    target = []
    offset = 0
    for k, t in enumerate(tables):
        p = np.clip(np.asarray(marginal(t), dtype=float), 0.0, None).ravel()
        total = p.sum()
        target.append(n * p / total if total > 0 else p)
        idx[:, k] = offset + cell_index([pool[:, i] for i in t], [sizes[i] for i in t])
        offset += p.size
    goal = np.rint(np.concatenate(target) * ONE).astype(np.int64)
    counts = np.bincount(idx[:m].ravel(), np.repeat(weights, len(tables)), minlength=offset).astype(np.int64) * ONE
    inside, outside = np.arange(m, dtype=np.int64), np.arange(m, len(pool), dtype=np.int64)
    steps = STEPS * m if len(outside) else 0
    pick_in = (uniforms(key, "@pgm|balance-in", 0, steps) * m).astype(np.int64)
    pick_out = (uniforms(key, "@pgm|balance-out", 0, steps) * max(1, len(outside))).astype(np.int64)
    units = weights * ONE
    with progress(total=steps, desc="balancing the draw", unit="swaps", quiet=quiet) as bar:
        for s in range(0, steps, CHUNK):
            picks = np.concatenate([pick_in[s:s + CHUNK], pick_out[s:s + CHUNK]])
            _kernels.balance_swaps(idx, counts, goal, inside, outside, picks, units, len(tables))
            bar.update(len(picks) // 2)
    return inside
