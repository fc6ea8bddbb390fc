"""Protection against spontaneous recognition: condition (C1) of Cator, Hensbergen and Rozenholc, sec. 2.

A user looking at a combination ``pi`` of (usually three) key variables of
the released file sees the value ``k0`` and believes she recognises John,
whose original record type is ``m``.  Her posterior that the record is John is

    P(John | x_pi = k0) = sum_{k: k_pi = k0} P[m, k] / sum_l U0(l) sum_{k: k_pi = k0} P[l, k],   (1)

``U0(l)`` the number of records of original type ``l`` and ``P`` the PRAM
matrix of the cross-classified keys.  (C1) asks (1) <= alpha for every
record type present, every ``pi`` and every ``k0``.

Reductions (sec. 2 and 4): (1) <= 1/U0(m) (eq. 2), so only types with
``U0(m) < 1/alpha`` can violate; if every diagonal entry of ``P`` is at least
``gamma``, (1) <= 1/(gamma U_pi(k0)), so only values with
``U_pi(k0) < 1/(gamma alpha)`` can.  With per-variable matrices (``P`` their
Kronecker product) the numerator of (1) is ``prod_{v in pi} M_v[m_v, k0_v]``
and the denominator is the ``pi``-margin of the counts pushed through the
``M_v``: (1) depends on ``m`` only through ``m_pi``, and both bounds hold with
``U_pi(m_pi)`` and the ``pi``-part of the diagonal.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from pramkit.counts import CountTable, count_groups
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.labels import Label
from pramkit.manifest import Manifest
from pramkit.matrix import PramMatrix
from pramkit.risk.frequencies import MissingKeys, key_categories, key_table
from pramkit.risk.posterior import posteriors
from pramkit.risk.space import KeySpace
from pramkit.validate import probability


@dataclass(frozen=True)
class Violation:
    """One (combination, released value, record type) with posterior above alpha.

    Parameters
    ----------
    combination : tuple of str
        The key variables looked at together.
    released : tuple
        The released value k0 of those variables.
    record_keys : tuple of str
        The keys of the record type m (the combination's variables for
        per-variable matrices, all keys for a joint matrix).
    record : tuple
        Its values.
    records : int
        Number of records of that type, ``U0(m)``.
    posterior : float
        The identification probability (1).

    Examples
    --------
    >>> data = pd.DataFrame({"a": [0, 0, 1, 1, 1], "b": [0, 0, 1, 0, 0]})
    >>> v = recognition_risk(data, ["a", "b"], alpha=0.6, size=2).violations[0]
    >>> v.combination, v.released, v.record, v.records, v.posterior
    (('a', 'b'), (1, 1), (1, 1), 1, 1.0)
    """

    combination: tuple[str, ...]
    released: tuple[Label, ...]
    record_keys: tuple[str, ...]
    record: tuple[Label, ...]
    records: int
    posterior: float


@dataclass(frozen=True)
class RecognitionResult:
    """Condition (C1) checked on a file.

    Parameters
    ----------
    alpha : float
        The threshold.
    satisfied : bool
        No violation.
    max_posterior : float
        The largest posterior (1) among the pairs checked (with
        ``reduce=True`` pairs ruled out by the bounds are not evaluated, so a
        value <= alpha is then only known to be <= alpha).
    violations : tuple of Violation
        Every violating (combination, value, record type), largest posterior first.
    combinations : tuple of tuples of str
        The combinations checked.
    pairs_checked : int
        (record type, value) pairs evaluated.

    Examples
    --------
    The unique record type (1, 1), released through diagonal 0.7 on both keys:
    its posterior (1) is ``0.49 / (2 * 0.09 + 1 * 0.49 + 2 * 0.21)``, below alpha:

    >>> from pramkit import PramMatrix
    >>> data = pd.DataFrame({"a": [0, 0, 1, 1, 1], "b": [0, 0, 1, 0, 0]})
    >>> m = PramMatrix.from_diagonal([0.7, 0.7], [0, 1])
    >>> res = recognition_risk(data, ["a", "b"], alpha=0.6, size=2, matrices={"a": m, "b": m}, reduce=False)
    >>> res.satisfied, round(res.max_posterior, 4), round(0.49 / 1.09, 4), res.combinations, res.pairs_checked
    (True, 0.4495, 0.4495, (('a', 'b'),), 12)
    """

    alpha: float
    satisfied: bool
    max_posterior: float
    violations: tuple[Violation, ...]
    combinations: tuple[tuple[str, ...], ...]
    pairs_checked: int


def _combinations(keys: Sequence[str], combinations: Sequence[Sequence[str]] | None, size: int) -> list[tuple[int, ...]]:
    if combinations is None:
        return list(itertools.combinations(range(len(keys)), min(size, len(keys))))
    out = []
    for c in combinations:
        unknown = [v for v in c if v not in keys]
        if unknown or not c or len(set(c)) != len(c):
            raise ParameterError(f"combination {list(c)} must list distinct key variables of {list(keys)}")
        out.append(tuple(keys.index(v) for v in c))
    return out


def recognition_risk(
    data: pd.DataFrame | str | Path,
    keys: Sequence[str],
    *,
    alpha: float,
    matrices: Mapping[str, PramMatrix] | Manifest | None = None,
    joint: PramMatrix | None = None,
    combinations: Sequence[Sequence[str]] | None = None,
    size: int = 3,
    reduce: bool = True,
    missing: MissingKeys = "category",
    na_values: Sequence[str] = NA_VALUES,
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
) -> RecognitionResult:
    """Check (C1) for ``data`` released through per-variable matrices or one joint matrix.

    The posteriors (1) are those of :func:`pramkit.risk.posterior.posteriors`,
    which the recognition design verifies its matrices with.  With per-variable
    matrices (1) depends on a record only through its values on the combination,
    so each combination is checked on its margin, released through the Kronecker
    product of its variables' matrices.

    Parameters
    ----------
    data : pandas.DataFrame, str or Path
        The original records, or their file: then each combination's table is counted as the file
        is streamed (:func:`pramkit.counts.count_groups`), no record held.
    keys : sequence of str
        The key variables.
    alpha : float
        The bound on the posterior, in (0, 1).
    matrices : mapping or Manifest, optional
        Per-variable matrices (a key not listed is released unchanged).
    joint : PramMatrix, optional
        One matrix on the cross-classified keys (rows in C order of the keys' categories).
    combinations : sequence of sequences of str, optional
        The sets of variables a user looks at; default all those of ``size`` keys.
    size : int
        The size of the default combinations.
    reduce : bool
        Skip the pairs the bounds of the module docstring rule out (the violations are the same).
    missing : {"category", "exclude"}
        The missing-value policy (:func:`pramkit.risk.frequencies.key_table`).
    na_values, sep, encoding
        How a file is read (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    RecognitionResult

    Raises
    ------
    ParameterError
        ``alpha`` is not in (0, 1), both per-variable and joint matrices are
        given, a combination lists a variable that is not a key (or one twice),
        or the joint matrix does not have one row per cell.
    DataError
        An invalid key (:func:`pramkit.risk.frequencies.key_table`), or a
        value that is not a category of its matrix.

    Examples
    --------
    Three records, one of them alone in its cell: released unchanged, it is recognised for sure.

    >>> data = pd.DataFrame({"a": [0, 0, 1], "b": [0, 0, 1]})
    >>> res = recognition_risk(data, ["a", "b"], alpha=0.6, size=2)
    >>> res.satisfied, res.max_posterior, res.violations[0].record
    (False, 1.0, (1, 1))
    """
    probability(alpha, "alpha (the posterior bound of condition C1)")
    keys = list(keys)
    if isinstance(matrices, Manifest):
        matrices = {v.name: v.matrix for v in matrices.variables if v.name in keys}
    matrices = dict(matrices or {})
    if joint is not None and matrices:
        raise ParameterError("give per-variable matrices or one joint matrix, not both")
    categories = [matrices[k].categories if k in matrices else None for k in keys]
    combos = _combinations(keys, combinations, size)
    if isinstance(data, (str, Path)):  # a file: each combination's table counted chunk by chunk
        groups = [keys] if joint is not None else [[keys[a] for a in axes] for axes in combos]
        counted = count_groups(data, groups, columns=keys, missing=missing, na_values=na_values, sep=sep,
                               encoding=encoding, categories={k: c for k, c in zip(keys, categories) if c is not None})
        shape = tuple(len(c) for c in counted.categories)

        def of_file(axes: Sequence[int]) -> CountTable:
            return counted.group(*(keys[a] for a in axes))
        margin: Callable[[Sequence[int]], CountTable] = of_file
    else:
        if any(c is not None for c in categories):
            found = key_categories(data, keys, missing=missing)
            filled = [c if c is not None else found[i] for i, c in enumerate(categories)]
            table = key_table(data, keys, missing=missing, categories=filled)
        else:
            table = key_table(data, keys, missing=missing)
        shape, margin = table.shape, table.count
    if joint is not None:
        cells = math.prod(shape)
        if joint.size != cells:
            raise ParameterError(f"the joint matrix is {joint.size} x {joint.size}; the keys have {cells} cells")
        checked = [_check(KeySpace(margin(range(len(keys)))), joint.matrix, combos, alpha, reduce)]
    else:  # each combination on its margin, one (dense) Kronecker product at a time
        checked = [_check(KeySpace(margin(axes)), _kronecker(keys, shape, matrices, axes), [tuple(range(len(axes)))],
                          alpha, reduce) for axes in combos]
    violations = sorted((v for found, _, _ in checked for v in found), key=lambda v: -v.posterior)
    best = max((top for _, top, _ in checked), default=0.0)
    pairs = sum(n for _, _, n in checked)
    return RecognitionResult(
        alpha=alpha,
        satisfied=not violations,
        max_posterior=best,
        violations=tuple(violations),
        combinations=tuple(tuple(keys[a] for a in c) for c in combos),
        pairs_checked=pairs,
    )


def _kronecker(keys: Sequence[str], shape: Sequence[int], matrices: Mapping[str, PramMatrix],
               axes: Sequence[int]) -> sp.csr_matrix:
    """The matrix of the keys at ``axes`` released together: the Kronecker product of their
    matrices (the identity for a key without one), sparse, its entries in the order of a dense
    product's rows (a dense one of 300 areas by 18 ages would take 233 MB)."""
    names = [keys[a] for a in axes]
    mats = [sp.csr_matrix(matrices[n].matrix) if n in matrices else sp.identity(shape[a], format="csr")
            for n, a in zip(names, axes)]
    joint = mats[0]
    for m in mats[1:]:
        joint = sp.kron(joint, m, format="csr")
    joint.sort_indices()
    return joint


def _check(
    space: KeySpace, p: np.ndarray | sp.csr_matrix, combos: Sequence[tuple[int, ...]], alpha: float, reduce: bool
) -> tuple[list[Violation], float, int]:
    """The violations of (C1), the largest posterior and the number of (type, value) pairs
    checked, for the types of ``space`` released through ``p``.

    With ``reduce``, only the types with ``U0(m) < 1/alpha`` and the values with
    ``U_pi(k0) < 1/(gamma alpha)`` (gamma the smallest diagonal entry of ``p``) count."""
    u0 = space.counts
    rows = u0 > 0
    if reduce:
        rows &= u0 < 1.0 / alpha
    gamma = float(p.diagonal().min())
    violations: list[Violation] = []
    best = 0.0
    pairs = 0
    for post in posteriors(space, p, combos):
        u_pi = space.margin(post.combination)[1]
        cols = np.ones(u_pi.size, dtype=bool)
        if reduce and gamma > 0:
            cols = u_pi < 1.0 / (gamma * alpha)
        pairs += int(rows.sum()) * int(cols.sum())
        kept = rows[post.types] & cols[post.k0]
        values, types, k0 = post.values[kept], post.types[kept], post.k0[kept]
        best = max(best, float(values.max())) if values.size else best
        names = tuple(space.keys[a] for a in post.combination)
        violations += [
            Violation(combination=names, released=space.table.labels([k0[i]], post.combination)[0],
                      record_keys=space.keys, record=space.table.labels([types[i]])[0], records=int(u0[types[i]]),
                      posterior=float(values[i]))
            for i in np.flatnonzero(values > alpha)
        ]
    return violations, best, pairs
