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
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from pramkit.errors import PramkitError
from pramkit.manifest import Manifest
from pramkit.matrix import Label, PramMatrix
from pramkit.risk.frequencies import KeyTable, MissingKeys, key_table
from pramkit.validate import probability


@dataclass(frozen=True)
class Violation:
    """One (combination, released value, record type) with posterior above alpha.

    combination: the key variables looked at together
    released: the released value k0 of those variables
    record_keys, record: the record type m (the combination's variables for
        per-variable matrices, all keys for a joint matrix) and its values
    records: number of records of that type
    posterior: the identification probability (1)
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

    alpha: the threshold; satisfied: no violation
    max_posterior: the largest posterior (1) among the pairs checked (with
        ``reduce=True`` pairs ruled out by the bounds are not evaluated, so a
        value <= alpha is then only known to be <= alpha)
    violations: every violating (combination, value, record type), largest posterior first
    combinations: the combinations checked; pairs_checked: (record type, value) pairs evaluated
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
            raise PramkitError(f"combination {list(c)} must list distinct key variables of {list(keys)}")
        out.append(tuple(keys.index(v) for v in c))
    return out


def _pi_counts(table: KeyTable, axes: Sequence[int]) -> np.ndarray:
    shape = tuple(table.shape[a] for a in axes)
    codes = table.codes[table.included][:, list(axes)]
    return np.bincount(np.ravel_multi_index(tuple(codes.T), shape), minlength=math.prod(shape)).astype(float)


def _labels(table: KeyTable, axes: Sequence[int], flat: int) -> tuple[Label, ...]:
    idx = np.unravel_index(flat, tuple(table.shape[a] for a in axes))
    return tuple(table.categories[a][int(i)] for a, i in zip(axes, idx))


def recognition_risk(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    alpha: float,
    matrices: Mapping[str, PramMatrix] | Manifest | None = None,
    joint: PramMatrix | None = None,
    combinations: Sequence[Sequence[str]] | None = None,
    size: int = 3,
    reduce: bool = True,
    missing: MissingKeys = "category",
) -> RecognitionResult:
    """Check (C1) for ``data`` released through per-variable ``matrices`` (a key not
    listed is released unchanged) or through one ``joint`` matrix on the
    cross-classified keys (rows in C order of the keys' categories).

    ``combinations``: the sets of variables a user looks at (default: all of ``size``).
    ``reduce``: skip the pairs the bounds rule out (the violations are the same).
    """
    probability(alpha, "alpha (the posterior bound of condition C1)")
    keys = list(keys)
    if isinstance(matrices, Manifest):
        matrices = {v.name: v.matrix for v in matrices.variables if v.name in keys}
    matrices = dict(matrices or {})
    if joint is not None and matrices:
        raise PramkitError("give per-variable matrices or one joint matrix, not both")
    categories = [matrices[k].categories if k in matrices else None for k in keys]
    if any(c is not None for c in categories):
        base = key_table(data, keys, missing=missing)
        categories = [c if c is not None else base.categories[i] for i, c in enumerate(categories)]
        table = key_table(data, keys, missing=missing, categories=categories)
    else:
        table = key_table(data, keys, missing=missing)
    combos = _combinations(keys, combinations, size)
    if joint is not None:
        if joint.size != table.cells:
            raise PramkitError(f"the joint matrix is {joint.size} x {joint.size}; the keys have {table.cells} cells")
        violations, best, pairs = _check_joint(table, joint.matrix, combos, alpha, reduce)
    else:
        violations, best, pairs = _check_kronecker(table, matrices, combos, alpha, reduce)
    violations.sort(key=lambda v: -v.posterior)
    return RecognitionResult(
        alpha=alpha,
        satisfied=not violations,
        max_posterior=best,
        violations=tuple(violations),
        combinations=tuple(tuple(keys[a] for a in c) for c in combos),
        pairs_checked=pairs,
    )


def _violations(
    table: KeyTable, post: np.ndarray, alpha: float, r_idx: np.ndarray, c_idx: np.ndarray,
    released_axes: tuple[int, ...], record_axes: tuple[int, ...], counts: np.ndarray,
) -> list[Violation]:
    """The (record type, released value) pairs of ``post`` above alpha, as violations."""
    names = tuple(table.keys[a] for a in released_axes)
    return [
        Violation(
            combination=names, released=_labels(table, released_axes, int(c_idx[j])),
            record_keys=tuple(table.keys[a] for a in record_axes),
            record=_labels(table, record_axes, int(r_idx[i])), records=int(counts[r_idx[i]]),
            posterior=float(post[i, j]),
        )
        for i, j in zip(*np.nonzero(post > alpha))
    ]


def _posteriors(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.divide(numerator, denominator[None, :], out=np.zeros_like(numerator), where=denominator[None, :] > 0)


def _check_kronecker(
    table: KeyTable, matrices: Mapping[str, PramMatrix], combos: Sequence[tuple[int, ...]], alpha: float, reduce: bool
) -> tuple[list[Violation], float, int]:
    violations: list[Violation] = []
    best = 0.0
    pairs = 0
    for axes in combos:
        names = tuple(table.keys[a] for a in axes)
        mats = [matrices[n].matrix if n in matrices else np.eye(table.shape[a]) for n, a in zip(names, axes)]
        joint = mats[0]
        for m in mats[1:]:
            joint = np.kron(joint, m)
        u = _pi_counts(table, axes)
        denominator = u @ joint
        rows = u > 0
        cols = np.ones(u.size, dtype=bool)
        if reduce:
            rows &= u < 1.0 / alpha
            gamma = math.prod(float(np.diagonal(m).min()) for m in mats)
            if gamma > 0:
                cols = u < 1.0 / (gamma * alpha)
        r_idx, c_idx = np.flatnonzero(rows), np.flatnonzero(cols)
        post = _posteriors(joint[np.ix_(r_idx, c_idx)], denominator[c_idx])
        pairs += post.size
        best = max(best, float(post.max())) if post.size else best
        violations += _violations(table, post, alpha, r_idx, c_idx, axes, axes, u)
    return violations, best, pairs


def _check_joint(
    table: KeyTable, p: np.ndarray, combos: Sequence[tuple[int, ...]], alpha: float, reduce: bool
) -> tuple[list[Violation], float, int]:
    u0 = table.dense_counts().ravel()
    coords = np.unravel_index(np.arange(table.cells), table.shape)
    all_axes = tuple(range(len(table.keys)))
    rows = u0 > 0
    if reduce:
        rows &= u0 < 1.0 / alpha
    gamma = float(np.diagonal(p).min())
    r_idx = np.flatnonzero(rows)
    violations: list[Violation] = []
    best = 0.0
    pairs = 0
    for axes in combos:
        shape = tuple(table.shape[a] for a in axes)
        projection = np.ravel_multi_index(tuple(coords[a] for a in axes), shape)
        q = p @ np.eye(math.prod(shape))[projection]  # Q[l, k0] = sum_{k: k_pi = k0} P[l, k]
        denominator = u0 @ q
        u_pi = np.bincount(projection, weights=u0, minlength=math.prod(shape))
        cols = np.ones(u_pi.size, dtype=bool)
        if reduce and gamma > 0:
            cols = u_pi < 1.0 / (gamma * alpha)
        c_idx = np.flatnonzero(cols)
        post = _posteriors(q[np.ix_(r_idx, c_idx)], denominator[c_idx])
        pairs += post.size
        best = max(best, float(post.max())) if post.size else best
        violations += _violations(table, post, alpha, r_idx, c_idx, axes, all_axes, u0)
    return violations, best, pairs
