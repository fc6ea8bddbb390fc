"""The posteriors of condition (C1): how sure an intruder who knows the released file and the
matrix can be of a record's values (Cator, Hensbergen and Rozenholc, section 2).

For an occurring type m (a cell of the key variables' cross-classification X), a combination pi
of keys and a released value k0 of them, the posterior (1) is the probability that a record
released with ``k_pi = k0`` is of type m.  :func:`posteriors` computes every one of them for a
matrix P on the cells of X, one combination at a time; :func:`worst_posterior` finds the
largest, and :func:`posterior_bound` bounds it from above exactly (rational arithmetic on the
near-maximal ones).  The recognition design (:mod:`pramkit.recognition.design`) keeps them
below its threshold; the recognition risk (:mod:`pramkit.risk.recognition`) reports them.

References
----------
Cator, Hensbergen and Rozenholc, Protection against spontaneous recognition in PRAM, section 2.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from pramkit.errors import DataError
from pramkit.information import float_above
from pramkit.privacy.exact import rounding_bound
from pramkit.risk.space import KeySpace, as_csr, key_space  # noqa: F401 (used by the doctests)


@dataclass(frozen=True, eq=False)
class Posteriors:
    """The posteriors (1) of condition (C1) for one combination pi, by :func:`posteriors`.

    Only the pairs (type m, value k0) with a non-zero numerator are listed: every other
    posterior is 0.  The types are the occurring cells of X, in increasing order, and
    within a type the values k0 increase.

    Parameters
    ----------
    combination : tuple of int
        pi, as positions of keys.
    codes : numpy.ndarray
        The value ``k_pi`` of every cell k of X (the margin's C-order code).
    types : numpy.ndarray
        The type m (flat cell of X) of each posterior.
    k0 : numpy.ndarray
        The released value of each posterior (code in the margin's C order).
    values : numpy.ndarray
        The posteriors (numerator over denominator; 0 where the denominator is 0).

    Examples
    --------
    >>> space = key_space(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> (post,) = posteriors(space, np.eye(4), [(1,)])
    >>> post.types.tolist(), post.k0.tolist(), post.values.round(4).tolist()
    ([0, 1, 2, 3], [0, 1, 0, 1], [0.1429, 0.3333, 0.1429, 0.3333])
    """

    combination: tuple[int, ...]
    codes: np.ndarray
    types: np.ndarray
    k0: np.ndarray
    values: np.ndarray


def posteriors(
    space: KeySpace, transitions: np.ndarray | sp.spmatrix, combinations: Sequence[Sequence[int]]
) -> Iterator[Posteriors]:
    """Every posterior (1) of condition (C1) for ``P = transitions``, one combination at a time.

    For an occurring type m, a combination pi and a value k0 of its keys,

        sum_{k: k_pi = k0} P[m, k]  /  sum_l U_0(l) sum_{k: k_pi = k0} P[l, k]:

    numerators from the rows of the occurring types, denominators from
    ``v = P^T U_0`` summed over each margin cell; cost ``O(|Pi| (K + nnz))``.

    Parameters
    ----------
    space : KeySpace
        X and U_0.
    transitions : array or sparse matrix, shape (K, K)
        P on the cells of X (rows: original, columns: released).
    combinations : sequence of sequences of int
        Pi, as positions of keys.

    Yields
    ------
    Posteriors
        One per combination, in the order given.

    Raises
    ------
    DataError
        If P is not K x K (raised when the iteration starts).

    References
    ----------
    Cator, Hensbergen and Rozenholc, section 2, condition (C1), equation (1).

    Examples
    --------
    With P = I the posterior of a type is one over the count of its margin cell (section 2):

    >>> space = key_space(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> [float(p.values.max()) for p in posteriors(space, np.eye(4), [(0,), (0, 1)])]
    [0.25, 1.0]
    """
    p = as_csr(transitions)
    if p.shape != (space.cells, space.cells):
        raise DataError(f"the matrix is {p.shape[0]} x {p.shape[1]} but the key space has {space.cells} cells")
    v = np.asarray(p.T @ space.counts).ravel()
    rows = p[space.occurring].tocoo()
    for combo in combinations:
        codes, size = space.table.margin_codes(combo)
        den = np.bincount(codes, weights=v, minlength=size)
        num = sp.csr_matrix((rows.data, (rows.row, codes[rows.col])), shape=(rows.shape[0], size)).tocoo()
        ratio = np.divide(num.data, den[num.col], out=np.zeros_like(num.data), where=den[num.col] > 0)
        yield Posteriors(tuple(combo), codes, space.occurring[num.row], num.col, ratio)


@dataclass(frozen=True)
class WorstPosterior:
    """The largest left-hand side of (C1), equation (1), over occurring m, pi and k0
    (:func:`worst_posterior`).

    Attributes
    ----------
    value : float
        The posterior (probability).
    cell : int
        The type m attaining it (flat index into X).
    combination : tuple of int
        pi (key positions).
    k0 : int
        The value of ``x_pi`` (code in the margin's C-order).

    Examples
    --------
    Unperturbed, the record alone in cell (0, 1) is recognised for sure:

    >>> w = worst_posterior(key_space(np.array([[30.0, 1.0], [40.0, 20.0]])), np.eye(4), [(0, 1)])
    >>> w.value, w.cell, w.combination, w.k0
    (1.0, 1, (0, 1), 1)
    """

    value: float
    cell: int
    combination: tuple[int, ...]
    k0: int


def worst_posterior(
    space: KeySpace, transitions: np.ndarray | sp.spmatrix, combinations: Sequence[tuple[int, ...]]
) -> WorstPosterior:
    """Recompute every posterior of (C1) for ``P = transitions`` from scratch
    (:func:`posteriors`) and return the largest.

    Parameters
    ----------
    space, transitions, combinations
        X and U_0, P (K x K, dense or sparse) and Pi, as for
        :func:`posteriors`.

    Returns
    -------
    WorstPosterior

    Examples
    --------
    >>> space = key_space(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> worst_posterior(space, np.eye(4), [(0,), (1,)])       # 1 / U_pi(k0) at the rarest value
    WorstPosterior(value=0.3333333333333333, cell=1, combination=(1,), k0=1)
    """
    best = WorstPosterior(0.0, int(space.occurring[0]), tuple(combinations[0]), 0)
    for post in posteriors(space, transitions, combinations):
        if post.values.size and post.values.max() > best.value:
            i = int(post.values.argmax())
            best = WorstPosterior(float(post.values[i]), int(post.types[i]), post.combination, int(post.k0[i]))
    return best


def posterior_bound(
    space: KeySpace, transitions: np.ndarray | sp.spmatrix, combinations: Sequence[tuple[int, ...]]
) -> float:
    """An upper bound on the largest posterior of (C1), exact for the stored entries and counts.

    Each posterior is computed as a quotient of sums of at most ``2K + n``
    non-negative terms (K cells, n occurring types), so the computed value
    is within a relative ``delta = 2 (2K + n + 32) UNIT``
    (:func:`pramkit.privacy.exact.rounding_bound`) of the exact one.  The
    largest exact posterior is therefore among those computed within
    ``(1 + delta)^2`` of the largest; those are recomputed in rational
    arithmetic from the stored doubles, and the largest is rounded up.

    Parameters
    ----------
    space, transitions, combinations
        As for :func:`worst_posterior`.

    Returns
    -------
    float
        At least every posterior of (1).

    Examples
    --------
    >>> space = key_space(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> posterior_bound(space, np.eye(4), [(0, 1)]) == 1.0    # a unique record: posterior 1
    True
    """
    p = as_csr(transitions)
    slack = 2.0 * float(rounding_bound(1.0, 2 * space.cells + space.occurring.size))
    parts = list(posteriors(space, p, combinations))
    top = max((float(post.values.max()) for post in parts if post.values.size), default=0.0)
    columns = p.tocsc()
    counts = [Fraction(float(c)) for c in space.counts]
    worst = Fraction(0)
    for post in parts:
        denominators: dict[int, Fraction] = {}
        for i in np.flatnonzero(post.values >= top / (1.0 + slack) ** 2):
            k0 = int(post.k0[i])
            fibre = np.flatnonzero(post.codes == k0)
            if k0 not in denominators:
                block = columns[:, fibre].tocoo()
                denominators[k0] = sum((counts[l] * Fraction(x) for l, x in zip(block.row, block.data)), Fraction(0))
            row = p[int(post.types[i])][:, fibre]
            worst = max(worst, sum((Fraction(x) for x in row.data), Fraction(0)) / denominators[k0])
    return float_above(worst)
