"""The engine audit: the empirical epsilon of the real engine, measured from the outside.

For a variable's matrix M, the audit picks, from M alone (before any draw), the columns j with
the largest ratio ``max_k M[k, j] / min_k M[k, j]`` and, for each, the two neighbouring one-record
inputs ``k1 = argmax``, ``k2 = argmin``.  Each input is released ``n`` times by the real keyed
engine (:func:`pramkit.engine.perturb.perturb_codes`) under fresh secret keys; ``c1`` and ``c2``
releases equal j.  With Clopper-Pearson bounds (:func:`pramkit.audit.stats.clopper_pearson`)
``p1 >= lo(c1)`` and ``p2 <= hi(c2)``, so

    epsilon >= log(lo(c1) / hi(c2))

with probability at least ``1 - alpha`` (Bonferroni over every bound of every candidate).  This
is the LDP-Auditor method (Arcolezi and Gambs, PETS 2024): a lower bound on the epsilon the engine
realises, which must not exceed the stated epsilon.  The number of trials is chosen for a target
precision (:func:`trials_for`).

The draws are batched: one call of the engine releases :data:`BATCH` copies of the one-record
input, at rows ``0 .. BATCH - 1`` under one fresh key, and every batch has a fresh key.  The
released value of a row depends on the key, the variable, the row number and the row's own code
only (the engine's contract, checked by ``tests/test_audit_engine.py``), so row r of a batch *is*
the run of the engine on the one-record file positioned at row r.  Under a uniformly random key,
the Philox words at distinct counters are independent uniform words (the generator's design
property, the same one the release's privacy rests on), so the rows of one batch are independent
runs with the same law as runs under separate fresh keys (docs/audit.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from scipy import special

from pramkit.audit.result import Check
from pramkit.audit.stats import clopper_pearson
from pramkit.engine.perturb import perturb_codes
from pramkit.errors import ParameterError
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix

#: Copies of the one-record input released per engine call, each call under a fresh key.
BATCH = 1 << 16
#: Columns of M audited at most (the largest ratios).
CANDIDATES = 3
#: Default error probability of the whole engine audit of one variable (a false alarm).
ALPHA = 1e-6
#: Default target precision (nats): the expected distance of the bound below the true epsilon.
PRECISION = 0.02
#: Largest matrix audited (its columns' extremes are read from the dense S x S matrix).
MAX_CATEGORIES = 3000
#: Fewest and most trials per input that :func:`trials_for` chooses.
MIN_TRIALS, MAX_TRIALS = 10_000, 4_000_000

#: ``engine(codes, matrix, key, variable) -> released codes``: the engine under audit.
Engine = Callable[[np.ndarray, PramMatrix, SecretKey, str], np.ndarray]


def real_engine(codes: np.ndarray, matrix: PramMatrix, key: SecretKey, variable: str) -> np.ndarray:
    """The engine of every release: :func:`pramkit.engine.perturb.perturb_codes`.

    Examples
    --------
    >>> m = PramMatrix.from_diagonal([0.9, 0.9], ["a", "b"])
    >>> real_engine(np.zeros(5, np.intp), m, SecretKey(bytes(32), "zeros"), "x").shape
    (5,)
    """
    return perturb_codes(codes, matrix, key=key, variable=variable)


def candidates(matrix: np.ndarray, count: int = CANDIDATES) -> list[tuple[int, int, int]]:
    """The ``(k1, k2, j)`` audited: the columns with the largest finite ratio of their largest
    to their smallest positive entry (ties: the first), chosen from M alone.

    Parameters
    ----------
    matrix : numpy.ndarray
        The dense matrix M.
    count : int
        How many columns at most.

    Returns
    -------
    list of tuple of int
        ``(k1, k2, j)`` with ``M[k1, j] >= M[k2, j] > 0``; empty when every column is constant.

    Examples
    --------
    >>> candidates(np.array([[0.7, 0.3], [0.2, 0.8]]), 1)
    [(0, 1, 0)]
    """
    positive = np.where(matrix > 0, matrix, np.inf)
    lo = positive.min(axis=0)
    hi = matrix.max(axis=0)
    ratio = np.where(np.isfinite(lo), hi / np.where(np.isfinite(lo), lo, 1.0), 1.0)
    order = [int(j) for j in np.argsort(-ratio, kind="stable")[:count] if ratio[j] > 1.0]
    return [(int(np.argmax(matrix[:, j])), int(np.argmin(positive[:, j])), j) for j in order]


def trials_for(p1: float, p2: float, precision: float, alpha: float) -> int:
    """Trials per input for which ``log(lo / hi)`` falls about ``precision`` below ``log(p1 / p2)``.

    The normal approximation of the Clopper-Pearson bounds: each bound lies about
    ``z sqrt(p (1 - p) / n)`` from p, ``z`` the normal quantile at ``1 - alpha``, so the gap is
    ``z (sqrt((1 - p1) / p1) + sqrt((1 - p2) / p2)) / sqrt(n)``; n is rounded up to a whole batch
    and kept within ``[MIN_TRIALS, MAX_TRIALS]``.

    Parameters
    ----------
    p1, p2 : float
        The probabilities of the event under the two inputs, in (0, 1].
    precision : float
        Target gap in nats.
    alpha : float
        Error probability of each bound.

    Returns
    -------
    int
        Trials per input.

    Examples
    --------
    Randomized response on two categories at epsilon 1, gap 0.02 at one-sided level 1e-6 / 4:

    >>> e = math.exp(1.0)
    >>> trials_for(e / (1 + e), 1 / (1 + e), 0.02, 1e-6 / 4)
    327680
    """
    z = -float(special.ndtri(alpha))  # the normal quantile of 1 - alpha
    spread = math.sqrt((1 - p1) / p1) + math.sqrt((1 - p2) / p2)
    n = math.ceil((z * spread / precision) ** 2)
    n = -(-n // BATCH) * BATCH
    return int(min(max(n, MIN_TRIALS), MAX_TRIALS))


def released_counts(engine: Engine, matrix: PramMatrix, variable: str, code: int, trials: int) -> np.ndarray:
    """How often the engine releases each category from ``trials`` one-record inputs of ``code``,
    in batches of :data:`BATCH` rows, each batch under a fresh key.

    Examples
    --------
    >>> m = PramMatrix.from_diagonal([1.0, 1.0], ["a", "b"])
    >>> released_counts(real_engine, m, "x", 1, 10).tolist()
    [0, 10]
    """
    counts = np.zeros(matrix.size, dtype=np.int64)
    for start in range(0, trials, BATCH):
        n = min(BATCH, trials - start)
        out = engine(np.full(n, code, dtype=np.intp), matrix, SecretKey.generate(), variable)
        counts += np.bincount(out, minlength=matrix.size)
    return counts


def audit_variable(variable: PerturbedVariable, *, precision: float = PRECISION, alpha: float = ALPHA,
                   trials: int | None = None, engine: Engine = real_engine) -> Check:
    """The engine audit of one variable: its empirical epsilon lower bound against its stated epsilon.

    The stated epsilon is the variable's (:attr:`pramkit.manifest.PerturbedVariable.epsilon`), or
    its epsilon given the block where blocks (strata, kept codes) are released exactly; only
    pairs within a block (positive entries of a column) are audited.

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable
        The variable and its matrix.
    precision : float
        Target gap of the bound below the true epsilon, nats (chooses the trials).
    alpha : float
        Probability that the bound exceeds the engine's true epsilon (a false alarm).
    trials : int, optional
        Trials per input (default: :func:`trials_for`).
    engine : callable
        The engine under audit (default :func:`real_engine`; tests pass a faulty one).

    Returns
    -------
    Check
        Passed when the bound is at most the stated epsilon; ``data`` holds
        ``empirical_epsilon``, ``stated_epsilon``, ``trials`` and the audited pairs.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> check = audit_variable(PerturbedVariable("sex", randomized_response(["f", "m"], 1.0)), trials=20_000)
    >>> check.passed, check.data["trials"], 0.8 < check.data["empirical_epsilon"] <= 1.0
    (True, 20000, True)
    """
    if not (0 < alpha < 1) or not precision > 0 or (trials is not None and trials < 1):
        raise ParameterError("the engine audit needs 0 < alpha < 1, precision > 0 and at least one trial")
    if variable.applied_to is not None:  # derived: the engine draws its second step alone, whose epsilon it states
        variable = dataclasses.replace(variable, applied_to=None)
    stated = variable.epsilon if math.isfinite(variable.epsilon) else variable.block_epsilon
    if variable.matrix.size > MAX_CATEGORIES:
        return Check("engine", variable.name, "empirical epsilon", True,
                     f"not audited: {variable.matrix.size} categories (more than {MAX_CATEGORIES})",
                     {"stated_epsilon": stated, "trials": 0, "pairs": []})
    m = variable.matrix.matrix
    pairs = candidates(m)
    each = alpha / (2 * max(len(pairs), 1))
    if not pairs:
        return Check("engine", variable.name, "empirical epsilon", True,
                     "no column holds two different positive entries: no two inputs to tell apart",
                     {"empirical_epsilon": 0.0, "stated_epsilon": stated, "trials": 0, "pairs": []})
    k1, k2, j = pairs[0]
    n = trials or trials_for(m[k1, j], m[k2, j], precision, each)
    counts = {k: released_counts(engine, variable.matrix, variable.name, k, n) for k in {k for p in pairs for k in p[:2]}}
    bound, audited = 0.0, []
    for k1, k2, j in pairs:
        lo = clopper_pearson(int(counts[k1][j]), n, each)[0]
        hi = clopper_pearson(int(counts[k2][j]), n, each)[1]
        value = math.log(lo / hi) if lo > 0 else 0.0
        bound = max(bound, value)
        cats = variable.matrix.categories
        audited.append({"inputs": [_label(cats[k1]), _label(cats[k2])], "released": _label(cats[j]),
                        "counts": [int(counts[k1][j]), int(counts[k2][j])], "bound": value})
    passed = bound <= stated
    detail = (f"empirical epsilon >= {bound:.4f} (Clopper-Pearson, error probability {alpha:g}, {n:,} trials per "
              f"input) {'<=' if passed else '>'} stated {stated:.6g}")
    return Check("engine", variable.name, "empirical epsilon", passed, detail,
                 {"empirical_epsilon": bound, "stated_epsilon": stated, "trials": n, "alpha": alpha,
                  "pairs": audited})


def _label(value: object) -> object:
    """A category as a JSON value (tuples as lists)."""
    return list(value) if isinstance(value, tuple) else value


def engine_audit(manifest: Manifest, *, precision: float = PRECISION, alpha: float = ALPHA,
                 trials: int | None = None, engine: Engine = real_engine) -> list[Check]:
    """The engine audit of every variable of a manifest (:func:`audit_variable`).

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> checks = engine_audit(Manifest.of({"sex": randomized_response(["f", "m"], 2.0)}), trials=20_000)
    >>> [(c.subject, c.passed) for c in checks]
    [('sex', True)]
    """
    return [audit_variable(v, precision=precision, alpha=alpha, trials=trials, engine=engine)
            for v in manifest.variables]
