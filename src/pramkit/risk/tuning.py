"""Tuning epsilon to a disclosure-risk threshold.

Ayed, Battiston and Camerlenghi, sec. 5 (future work): choose the privacy
parameter so that the estimated disclosure risk of the released file falls
below a threshold.  The risk after PRAM is one of

* ``"tau2"``: the expected number of correct matches among released sample
  uniques, ``sum_j mu~_j exp(-mu~_j) P(correct match | f~_j = 1)``
  (:mod:`pramkit.risk.misclassified`), with the log-linear model fitted once
  to the original file;
* ``"c1"``: the largest posterior identification probability of condition
  (C1) of Cator et al. (:mod:`pramkit.risk.recognition`).

Both grow with epsilon (less perturbation, more risk).  The curve is
evaluated on a log-spaced grid (and checked for monotonicity), then the
largest epsilon whose risk stays under the threshold is found by bisection
between the last grid point under it and the first above it.

epsilon is per record: by default each of the ``p`` perturbed variables gets
randomized response at ``epsilon / p`` (sequential composition).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from pramkit.design.classic import randomized_response
from pramkit.errors import ParameterError
from pramkit.matrix import PramMatrix
from pramkit.risk.fractions import sampling_fractions
from pramkit.risk.frequencies import MissingKeys, key_table, record_weights
from pramkit.risk.loglinear import fit_loglinear
from pramkit.risk.misclassified import cell_risk
from pramkit.risk.recognition import recognition_risk

Design = Callable[[float], Mapping[str, PramMatrix]]


@dataclass(frozen=True, eq=False)
class TuningResult:
    """The largest epsilon whose risk after PRAM stays under the threshold.

    The epsilon found is a function of the original file's exact risk, so publishing
    a release at that epsilon (or the epsilon itself) publishes something computed from
    the data that no DP mechanism covers: :attr:`data_dependent` says so in the ledger's
    words (pass it to :class:`pramkit.ledger.Ledger` as ``data_dependent``).

    Parameters
    ----------
    epsilon : float
        Per-record epsilon found (nats).
    risk : float
        The risk there.
    measure : str
        ``"tau2"`` (records) or ``"c1"`` (probability).
    threshold : float
        The bound.
    matrices : mapping
        The PRAM matrices at ``epsilon``.
    curve_epsilon, curve_risk : numpy.ndarray
        The grid of the risk-epsilon curve.
    monotone : bool
        Whether the curve was non-decreasing on the grid.
    at_upper_bound : bool
        The risk stays under the threshold on the whole range.
    evaluations : int
        Risk evaluations made.

    Examples
    --------
    >>> from pramkit.datasets import census
    >>> res = tune_epsilon(census(2_000), ["age", "sex", "race"], perturb=["age", "sex"], threshold=0.05,
    ...                    sampling_fraction=0.05)
    >>> round(res.epsilon, 2), res.risk <= res.threshold, res.monotone, res.at_upper_bound
    (4.81, True, True, False)
    >>> sorted(res.matrices), round(sum(m.epsilon for m in res.matrices.values()), 2)  # the budget split equally
    (['age', 'sex'], 4.81)
    >>> res.data_dependent.startswith("the record epsilon was tuned")
    True
    """

    epsilon: float
    risk: float
    measure: str
    threshold: float
    matrices: Mapping[str, PramMatrix]
    curve_epsilon: np.ndarray
    curve_risk: np.ndarray
    monotone: bool
    at_upper_bound: bool
    evaluations: int

    @property
    def data_dependent(self) -> str:
        """The ledger's plain-words statement of what the tuning reads from the data."""
        return (f"the record epsilon was tuned so that the original file's {self.measure} risk stays under "
                f"{self.threshold:g}, so the epsilon itself depends on the data and no DP guarantee covers "
                "that choice")


def randomized_response_design(categories: Mapping[str, Sequence]) -> Design:
    """Randomized response on every variable, the record's epsilon split equally.

    Each of the ``p`` variables gets the epsilon-DP randomized response of
    :func:`pramkit.design.classic.randomized_response` at ``epsilon / p``
    (equation (2) of Ruiz and Domingo-Ferrer; Ayed, Battiston and Camerlenghi,
    section 3.1), by sequential composition: the record's epsilon is their sum.

    Parameters
    ----------
    categories : mapping
        ``{variable: categories}`` of the variables to perturb.

    Returns
    -------
    callable
        ``epsilon -> {variable: PramMatrix}``.

    Examples
    --------
    >>> design = randomized_response_design({"sex": ["f", "m"], "age": ["young", "old", "older"]})
    >>> matrices = design(2.0)
    >>> {name: round(m.epsilon, 6) for name, m in matrices.items()}
    {'sex': 1.0, 'age': 1.0}
    >>> np.round(matrices["sex"].matrix, 4).tolist()  # keep with e / (e + 1)
    [[0.7311, 0.2689], [0.2689, 0.7311]]
    """
    def design(epsilon: float) -> dict[str, PramMatrix]:
        share = epsilon / len(categories)
        return {name: randomized_response(list(cats), share) for name, cats in categories.items()}
    return design


def tune_epsilon(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    perturb: Sequence[str],
    threshold: float,
    measure: Literal["tau2", "c1"] = "tau2",
    design: Design | None = None,
    sampling_fraction: float | None = None,
    weights: str | Sequence[float] | np.ndarray | None = None,
    model: str | Sequence[Sequence[str]] = "2way",
    alpha_combinations: Sequence[Sequence[str]] | None = None,
    bounds: tuple[float, float] = (0.05, 20.0),
    grid: int = 12,
    rtol: float = 1e-3,
    missing: MissingKeys = "category",
) -> TuningResult:
    """Largest epsilon in ``bounds`` with risk <= ``threshold``.

    The tuning Ayed, Battiston and Camerlenghi propose in sec. 5 (future
    work): choose the privacy parameter so that the disclosure risk after
    PRAM (tau2, their eq. (2); or condition (C1) of Cator et al.) falls
    below a threshold (module docstring).

    ``perturb``: the key variables to perturb; ``design``: epsilon -> {variable: matrix}
    (default :func:`randomized_response_design`); for ``measure="c1"`` the
    combinations checked are ``alpha_combinations`` (default all triples).

    Parameters
    ----------
    data : pandas.DataFrame
        The original records.
    keys : sequence of str
        The key variables.
    perturb : sequence of str
        The keys to perturb.
    threshold : float
        The bound on the risk: records (``"tau2"``) or a probability in (0, 1) (``"c1"``).
    measure : {"tau2", "c1"}
        ``E(tau2)`` after PRAM (:meth:`pramkit.risk.misclassified.CellRisk.expected_tau2`,
        the model fitted once to ``data``), or the largest posterior of
        condition (C1) (:func:`pramkit.risk.recognition.recognition_risk`).
    design : callable, optional
        ``epsilon -> {variable: PramMatrix}``.
    sampling_fraction, weights : float, or column name or one value per record
        Exactly one, for ``"tau2"`` (:func:`pramkit.risk.fractions.sampling_fractions`).
    model : str or sequence of sequences of str
        The log-linear model (``"tau2"``).
    alpha_combinations : sequence of sequences of str, optional
        The combinations of condition (C1) (``"c1"``).
    bounds : tuple of float
        The range of epsilon searched, ``0 < low < high``.
    grid : int
        Points of the log-spaced curve.
    rtol : float
        Relative width at which the bisection stops.
    missing : {"category", "exclude"}
        The missing-value policy of the keys.

    Returns
    -------
    TuningResult

    Raises
    ------
    ParameterError
        ``perturb`` lists no key or a variable that is not a key, bad
        ``bounds``, ``threshold`` or ``measure``, or the risk at the lowest
        epsilon is already above the threshold.
    DataError
        An invalid key or weight.

    Examples
    --------
    Condition (C1) at alpha = 1/2 on a small file:

    >>> data = pd.DataFrame({"a": [0, 0, 1, 1, 2, 2, 0, 1], "b": [0, 1, 0, 1, 0, 1, 0, 1],
    ...                      "c": [0, 0, 0, 1, 1, 1, 1, 0]})
    >>> res = tune_epsilon(data, ["a", "b", "c"], perturb=["a", "b"], threshold=0.5, measure="c1",
    ...                    grid=6, bounds=(0.1, 8.0))
    >>> round(res.epsilon, 3), round(res.risk, 3), res.risk <= 0.5
    (1.386, 0.5, True)
    >>> np.round(res.curve_risk, 3).tolist()  # it grows with epsilon
    [0.266, 0.289, 0.348, 0.5, 0.793, 0.981]
    """
    keys = list(keys)
    perturb = list(perturb)
    if not perturb or any(v not in keys for v in perturb):
        raise ParameterError(f"perturb must list key variables of {keys}, got {perturb}")
    lo, hi = map(float, bounds)
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ParameterError(f"bounds must satisfy 0 < low < high < inf, got {bounds}")
    if not (threshold > 0 and math.isfinite(threshold)):
        raise ParameterError(f"the threshold must be a positive number, got {threshold!r}")
    if measure not in ("tau2", "c1"):
        raise ParameterError(f"measure must be 'tau2' or 'c1', not {measure!r}")
    table = key_table(data, keys, missing=missing)
    if design is None:
        design = randomized_response_design({v: table.categories[keys.index(v)] for v in perturb})

    if measure == "tau2":
        counted = table.count(weights=None if weights is None else record_weights(data, weights))
        counts, sums = counted.counts.astype(float), counted.weight_sums
        fr = sampling_fractions(counts, keys, sampling_fraction=sampling_fraction, weight_sums=sums)
        mu = fit_loglinear(counts, keys, model=model, offset=fr.offset).fitted

        def risk(eps: float) -> float:
            mats = design(eps)
            return cell_risk(mu, fr.values, [mats[k].matrix if k in mats else None for k in keys]).expected_tau2()
    else:
        if not threshold < 1:
            raise ParameterError("for measure='c1' the threshold is a probability alpha in (0, 1)")

        def risk(eps: float) -> float:
            return recognition_risk(data, keys, alpha=threshold, matrices=design(eps),
                                    combinations=alpha_combinations, reduce=False, missing=missing).max_posterior

    found = search_epsilon(risk, (lo, hi), threshold, measure=measure, grid=grid, rtol=rtol)
    return TuningResult(
        epsilon=found.epsilon, risk=found.risk, measure=measure, threshold=float(threshold),
        matrices=design(found.epsilon), curve_epsilon=found.curve_epsilon, curve_risk=found.curve_risk,
        monotone=found.monotone, at_upper_bound=found.at_upper_bound, evaluations=found.evaluations,
    )


@dataclass(frozen=True, eq=False)
class Search:
    """The largest epsilon of a range whose risk stays under a threshold (:func:`search_epsilon`).

    Parameters
    ----------
    epsilon, risk : float
        The epsilon found and its risk.
    curve_epsilon, curve_risk : numpy.ndarray
        The log-spaced grid evaluated first, and its risks.
    monotone : bool
        Whether the risk was non-decreasing on the grid.
    at_upper_bound : bool
        The whole range stays under the threshold.
    evaluations : int
        Risk evaluations made (the grid's and the bisection's).
    """

    epsilon: float
    risk: float
    curve_epsilon: np.ndarray
    curve_risk: np.ndarray
    monotone: bool
    at_upper_bound: bool
    evaluations: int


def search_epsilon(risk: Callable[[float], float], bounds: tuple[float, float], threshold: float, *,
                   measure: str = "risk", grid: int = 12, rtol: float = 1e-3) -> Search:
    """The largest epsilon in ``bounds`` whose ``risk`` is at most ``threshold``: a log-spaced grid
    (checked for monotonicity), then bisection between the last grid point under the threshold and
    the first above it.

    Parameters
    ----------
    risk : callable
        ``epsilon -> risk``, non-decreasing in epsilon (more budget, less perturbation).
    bounds : tuple of float
        ``(low, high)``, ``0 < low < high``.
    threshold : float
        The bound on the risk.
    measure : str
        The risk's name, for the message.
    grid : int
        Points of the grid (both bounds among them).
    rtol : float
        Relative width at which the bisection stops.

    Returns
    -------
    Search

    Raises
    ------
    ParameterError
        A grid of fewer than two points, or a risk above the threshold already at the low bound.

    Examples
    --------
    >>> found = search_epsilon(lambda e: e / 10, (0.5, 8.0), 0.3, grid=5)
    >>> round(found.epsilon, 2), found.risk <= 0.3, found.at_upper_bound
    (3.0, True, False)
    """
    lo, hi = bounds
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 2:
        raise ParameterError(f"grid must be an integer of at least 2 (the bounds are both evaluated), got {grid!r}")
    eps_grid = np.geomspace(lo, hi, grid)
    values = np.array([risk(e) for e in eps_grid])
    evaluations = grid
    monotone = bool(np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]).clip(min=1e-300)))
    under = values <= threshold
    if not under[0]:
        raise ParameterError(
            f"even epsilon = {lo:g} gives {measure} = {values[0]:.4g} > {threshold:g}; "
            "lower the first bound or raise the threshold"
        )
    if under.all():
        return Search(hi, float(values[-1]), eps_grid, values, monotone, True, evaluations)
    first_over = int(np.argmax(~under))
    a, b = float(eps_grid[first_over - 1]), float(eps_grid[first_over])
    best_risk = float(values[first_over - 1])
    while b - a > rtol * a:
        mid = math.sqrt(a * b)
        r = risk(mid)
        evaluations += 1
        if r <= threshold:
            a, best_risk = mid, r
        else:
            b = mid
    return Search(a, best_risk, eps_grid, values, monotone, False, evaluations)
