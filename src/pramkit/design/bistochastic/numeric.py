"""Bistochastic perturbation of a numerical attribute (Ruiz and Domingo-Ferrer, section 3.2).

For a numerical attribute the N individuals are the categories: an N x N
bistochastic P acts on the vector x of values.  Its expected release is
``y = P x``; since P's rows sum to 1 each y_u is a weighted average of
values, and since its columns sum to 1, ``sum_u y_u = sum_v x_v``: the mean
is preserved (a merely row-stochastic P does not preserve it).

Two sparse families are supported, both acting on the individuals sorted by
value (ties in file order), so N x N is never formed:

* ``blocks`` -- equation (3) over individuals: classes of at least k
  consecutive ranks (:func:`pramkit.design.bistochastic.families.class_bounds`,
  ``floor(N/k)`` classes of nearly equal size).  The expected release is
  univariate microaggregation with groups of size k: each value replaced by
  its group's mean (end of section 3.1).
* ``tridiagonal`` -- equation (7) with one alpha over ranks: the expected
  release is ``(1 - 2 alpha) x_i + alpha (x_{i-1} + x_{i+1})`` (one
  neighbour at the ends).

With a key, the release is random instead: individual u reports the value of
an individual v drawn from row u of P (one keyed uniform per individual,
:mod:`pramkit.kernel.rng`).  Its expectation is ``P x``, so the mean is preserved
in expectation; each draw is a value of the data.

beta is that of P (Definition 1 with r = N): blocks give
``sum_l n_l log2 n_l / (N log2 N)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from pramkit.design.bistochastic.families import class_bounds
from pramkit.design.classic import float_array
from pramkit.errors import DataError, ParameterError
from pramkit.information import entropy
from pramkit.kernel.rng import SecretKey, uniforms

Family = Literal["blocks", "tridiagonal"]


@dataclass(frozen=True)
class NumericRelease:
    """A numerical attribute after a bistochastic matrix over individuals
    (:func:`bistochastic_numeric`).

    Attributes
    ----------
    values : numpy.ndarray
        Released values, in file order.
    family : str
        ``"blocks"`` (microaggregation) or ``"tridiagonal"``.
    parameter : float
        k (blocks) or alpha (tridiagonal).
    randomised : bool
        Drawn with a key (True) or the expected release P x (False).
    original_mean, released_mean : float
        Means of x and of the release.
    entropy_rate_bits : float
        H(P) of the N x N matrix, equation (4), bits.
    beta : float
        H(P) / log2 N (Definition 1).

    Examples
    --------
    Blocks of k = 2 over six individuals: every row of P has entropy 1 bit,
    so beta = ``log2 2 / log2 6``:

    >>> r = bistochastic_numeric([10.0, 50.0, 20.0, 40.0, 30.0, 60.0], family="blocks", k=2)
    >>> r.entropy_rate_bits, math.isclose(r.beta, 1 / math.log2(6)), r.randomised
    (1.0, True, False)
    """

    values: np.ndarray
    family: str
    parameter: float
    randomised: bool
    original_mean: float
    released_mean: float
    entropy_rate_bits: float
    beta: float


def bistochastic_numeric(
    values: ArrayLike,
    *,
    family: Family,
    k: int | None = None,
    alpha: float | None = None,
    key: SecretKey | None = None,
    variable: str | None = None,
) -> NumericRelease:
    """Apply a ``blocks`` (give k) or ``tridiagonal`` (give alpha) bistochastic
    matrix over the individuals ranked by value.

    Without ``key``: the expected release P x (deterministic).  With ``key``
    and ``variable``: one random release whose expectation is P x, drawn from the
    key derived for the values and the settings
    (:meth:`pramkit.kernel.rng.SecretKey.for_data`): the same values release the
    same way again; other values (a neighbouring file, the next wave) independently.

    Parameters
    ----------
    values : array_like, shape (N,)
        The numerical attribute, N >= 2 finite values.
    family : {"blocks", "tridiagonal"}
        Equation (3) over ranks (microaggregation) or equation (7) with one
        alpha.
    k : int, optional
        Smallest class size of ``blocks`` (``1 <= k <= N``).
    alpha : float, optional
        Off-diagonal entry of ``tridiagonal``, in [0, 1/2] (up to 1 for N = 2).
    key : SecretKey, optional
        Draw one random release instead of the expected one.
    variable : str, optional
        The variable's name, required with a key (it selects the random stream).

    Returns
    -------
    NumericRelease
        The released values, both means, and H(P) and beta of the N x N matrix.

    Raises
    ------
    pramkit.errors.DataError
        If the values are not a 1-D array of at least two finite numbers.
    ParameterError
        For an unknown family, the wrong parameter for the family, a k or
        alpha out of range, or a key without a variable name.

    References
    ----------
    Ruiz and Domingo-Ferrer, section 3.2 (numerical attributes), equations
    (3), (4) and (7).

    Examples
    --------
    Blocks of two consecutive ranks: each value is replaced by its pair's
    mean, as univariate microaggregation does; the mean is preserved (the
    columns of P sum to 1):

    >>> x = [10.0, 50.0, 20.0, 40.0, 30.0, 60.0]
    >>> r = bistochastic_numeric(x, family="blocks", k=2)
    >>> r.values.tolist(), r.original_mean, r.released_mean
    ([15.0, 55.0, 15.0, 35.0, 35.0, 55.0], 35.0, 35.0)

    Tridiagonal: ``(1 - 2 alpha) x_i + alpha (x_{i-1} + x_{i+1})`` over the
    sorted values (evenly spaced here, so only the two ends move):

    >>> bistochastic_numeric(x, family="tridiagonal", alpha=0.25).values.tolist()
    [12.5, 50.0, 20.0, 40.0, 30.0, 57.5]

    With a key each individual reports a value of its block, drawn at random:

    >>> from pramkit.kernel.rng import SecretKey
    >>> key = SecretKey(bytes(range(32)), "doc")
    >>> r = bistochastic_numeric(x, family="blocks", k=3, key=key, variable="income")
    >>> r.values.tolist(), r.randomised
    ([10.0, 60.0, 30.0, 50.0, 20.0, 40.0], True)
    """
    x = float_array(values, "the numerical values")
    if x.ndim != 1 or x.size < 2:
        raise DataError("give a 1-D numerical column of at least two values")
    if not np.all(np.isfinite(x)):
        raise DataError("numerical values must be finite: drop or impute missing values first")
    if key is not None and not variable:
        raise ParameterError("a random release needs the variable's name (it selects the random stream)")
    n = x.size
    order = np.argsort(x, kind="stable")
    xs = x[order]
    u = None if key is None or not variable else uniforms(  # a key comes with a name (above)
        key.for_data("bistochastic numeric", x.astype("<f8").tobytes(), repr((family, k, alpha)).encode()),
        variable, 0, n)
    if family == "blocks":
        if k is None or alpha is not None:
            raise ParameterError("the blocks family takes k (and no alpha)")
        ys, h, param = _blocks(xs, k, u)
    elif family == "tridiagonal":
        if alpha is None or k is not None:
            raise ParameterError("the tridiagonal family takes alpha (and no k)")
        ys, h, param = _tridiagonal(xs, alpha, u)
    else:
        raise ParameterError(f"family must be 'blocks' or 'tridiagonal', got {family!r}")
    y = np.empty(n)
    y[order] = ys
    return NumericRelease(y, family, param, key is not None, float(x.mean()), float(y.mean()),
                          h, h / math.log2(n))


def _blocks(xs: np.ndarray, k: int, u: np.ndarray | None) -> tuple[np.ndarray, float, float]:
    """Release over sorted values for equation (3); entropy rate in bits."""
    n = xs.size
    bounds = class_bounds(n, k)
    sizes = np.diff(bounds)
    start = np.repeat(bounds[:-1], sizes)
    width = np.repeat(sizes, sizes)
    if u is None:
        ys = np.repeat(np.add.reduceat(xs, bounds[:-1]) / sizes, sizes)
    else:
        ys = xs[start + np.minimum((u * width).astype(np.int64), width - 1)]
    h = float(np.sum(sizes * np.log2(sizes)) / n)
    return ys, h, float(k)


def _tridiagonal(xs: np.ndarray, alpha: float, u: np.ndarray | None) -> tuple[np.ndarray, float, float]:
    """Release over sorted values for equation (7) with one alpha; entropy rate in bits."""
    n = xs.size
    if not (isinstance(alpha, (int, float)) and 0 <= alpha <= (1.0 if n == 2 else 0.5)):
        raise ParameterError(f"alpha must lie in [0, 1/2] (alpha_(i-1) + alpha_i <= 1), got {alpha!r}")
    a = float(alpha)
    left = np.concatenate([[0.0], np.full(n - 1, a)])   # P[i, i-1]
    right = np.concatenate([np.full(n - 1, a), [0.0]])  # P[i, i+1]
    stay = 1.0 - left - right
    if u is None:
        ys = stay * xs
        ys[1:] += a * xs[:-1]
        ys[:-1] += a * xs[1:]
    else:
        idx = np.arange(n)
        step = np.where(u < left, -1, np.where(u < left + right, 1, 0))
        ys = xs[idx + step]
    rows = np.stack([left, stay, right], axis=1)
    h = entropy(rows.ravel()) / (n * math.log(2))
    return ys, h, a
