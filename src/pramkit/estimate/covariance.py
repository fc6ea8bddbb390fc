"""Covariance of the estimated original counts, never materialised.

The moment estimator of the original counts is ``t = A u`` with ``u`` the
released counts and ``A = (M^T)^{-1}`` (Ruiz and Domingo-Ferrer, appendix
A.1; Cator, Hensbergen and Rozenholc, section 3, estimator (4)); for a table
of independently perturbed variables ``A = ⊗_a (M_a^T)^{-1}``, so that
``A[c, d] = prod_a W_a[d_a, c_a]`` with ``W_a = M_a^{-1}`` (identity on an
unperturbed axis).

Two covariances are offered.

``"multinomial"`` (sampling + PRAM):
    the records are a sample from a population with cell probabilities p,
    so the released counts are multinomial, ``Cov(u) = n (diag(lam) - lam lam^T)``
    with ``lam = M^T p``, and ``Cov(t) = A Cov(u) A^T``.  Valid for inference
    on ``n p`` (the population proportions scaled to n).  Estimated by
    plugging in ``lam_hat = u / n``.
``"pram"`` (PRAM only, the original file fixed):
    ``Cov(t | x) = A [sum_i (diag(M[x_i]) - M[x_i]^T M[x_i])] A^T``, the
    variance Cator et al. use for the L2 loss l2(P).  Valid for inference on
    the original file's own counts.  It is linear in the original counts, so
    plugging in the unbiased ``t`` gives an unbiased estimate.

For a linear combination ``g . t`` (``v = A^T g``), with ``A M^T = I``:

    multinomial:  Var = sum_d v_d^2 u_d - (g . t)^2 / n
    pram:         Var = sum_d v_d^2 u_d - sum_c t_c g_c^2

and for single cells ``sum_d A[c, d]^2 u_d`` is ``u`` contracted with the
element-wise squares ``W_a ∘ W_a`` axis by axis: ``O(K sum_a S_a)`` for all
K cells instead of ``O(K^2)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pramkit.errors import ParameterError
from pramkit.estimate.axes import contract, squared, transposed

VarianceKind = Literal["multinomial", "pram"]
VARIANCE_KINDS: tuple[str, ...] = ("multinomial", "pram")


def check_variance_kind(kind: str, weighted: bool = False) -> None:
    """Check that ``kind`` names a covariance of this module, and that a weighted table (whose variance is
    the design's and PRAM's together) is not given one it would ignore.

    Parameters
    ----------
    kind : str
        ``"multinomial"`` or ``"pram"`` (:data:`VARIANCE_KINDS`).
    weighted : bool
        The table is weighted (survey weights, a design or replicate weights): only the default
        ``"multinomial"`` is accepted.

    Raises
    ------
    ParameterError
        For any other value.

    Examples
    --------
    >>> check_variance_kind("pram")
    >>> check_variance_kind("poisson")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: variance must be one of ['multinomial', 'pram'], not 'poisson'
    >>> check_variance_kind("pram", weighted=True)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: variance is for unweighted tables (--variance); with weights or a survey design the variance is the design's and PRAM's together
    """
    if kind not in VARIANCE_KINDS:
        raise ParameterError(f"variance must be one of {list(VARIANCE_KINDS)}, not {kind!r}")
    if weighted and kind != "multinomial":
        raise ParameterError("variance is for unweighted tables (--variance); with weights or a survey design the "
                             "variance is the design's and PRAM's together")


@dataclass(frozen=True, eq=False)
class CountCovariance:
    """The covariance of estimated counts ``t = A u`` in factored form.

    inverses: ``W_a = M_a^{-1}`` per axis (``None`` on an unperturbed axis)
    released: the released counts ``u`` (for the MLE: the fitted ``n M^T p_hat``)
    counts: the estimated original counts ``t``
    n: number of records
    kind: ``"multinomial"`` or ``"pram"`` (see the module docstring)

    Examples
    --------
    One variable, randomized response keeping with 3/4: 70 and 30 released
    records give ``t = (M^T)^{-1} u = (90, 10)``.  Under the multinomial
    covariance the two counts have the same variance (their sum is n), and
    the total has none:

    >>> from pramkit.estimate.axes import contract, inverses
    >>> w = inverses([np.array([[0.75, 0.25], [0.25, 0.75]])])
    >>> u = np.array([70.0, 30.0])
    >>> t = contract(u, w)
    >>> cov = CountCovariance(w, u, t, 100, "multinomial")
    >>> t.tolist(), cov.cell_variances().tolist(), cov.variance(np.ones(2))
    ([90.0, 10.0], [84.0, 84.0], 0.0)
    """

    inverses: tuple[np.ndarray | None, ...]
    released: np.ndarray
    counts: np.ndarray
    n: float
    kind: VarianceKind

    def variance(self, gradient: np.ndarray) -> float:
        """Variance of ``gradient . t`` (exact for a linear combination; the
        delta method for a smooth function whose gradient at ``t`` is given).

        ``sum_d v_d^2 u_d - (g . t)^2 / n`` (multinomial) or
        ``sum_d v_d^2 u_d - sum_c t_c g_c^2`` (PRAM only), ``v = A^T g``
        (module docstring), floored at 0.

        Parameters
        ----------
        gradient : numpy.ndarray
            The coefficients g, in the shape of the table.

        Returns
        -------
        float
            The variance, records squared for counts.

        Raises
        ------
        ParameterError
            If the gradient does not have the table's shape.

        Examples
        --------
        The variance of one count is its cell variance; the difference of
        the two counts of a binary variable (``t_1 - t_2 = 2 t_1 - n``) has
        four times it:

        >>> from pramkit.estimate.axes import contract, inverses
        >>> w = inverses([np.array([[0.75, 0.25], [0.25, 0.75]])])
        >>> u = np.array([70.0, 30.0])
        >>> cov = CountCovariance(w, u, contract(u, w), 100, "multinomial")
        >>> cov.variance(np.array([1.0, 0.0])), cov.variance(np.array([1.0, -1.0]))
        (84.0, 336.0)
        """
        g = np.asarray(gradient, dtype=float)
        if g.shape != self.counts.shape:
            raise ParameterError(f"a gradient of shape {g.shape} for a table of shape {self.counts.shape}")
        v = contract(g, transposed(self.inverses))
        quad = float(np.sum(v * v * self.released))
        if self.kind == "multinomial":
            value = quad - float(np.sum(g * self.counts)) ** 2 / self.n
        else:
            value = quad - float(np.sum(self.counts * g * g))
        return max(value, 0.0)

    def _second_moments(self) -> np.ndarray:
        """``sum_d A[c, d]^2 u_d`` for every cell c."""
        return contract(self.released, squared(self.inverses))

    def cell_variances(self, *, clip: bool = True) -> np.ndarray:
        """Variance of every estimated count.  The plug-in formula can dip below
        zero for tiny counts; ``clip`` (the default) sets those to zero, which
        the standard errors need, while ``clip=False`` keeps the raw estimate
        (unbiased for the ``"pram"`` variance, linear in the data).

        ``sum_d A[c, d]^2 u_d - t_c^2 / n`` (multinomial) or ``... - t_c``
        (PRAM only), computed axis by axis in ``O(K sum_a S_a)``.

        Parameters
        ----------
        clip : bool, default True
            Set negative values to zero.

        Returns
        -------
        numpy.ndarray
            The variance of each estimated count, in the shape of the table.

        Examples
        --------
        The PRAM-only variance leaves out the sampling variance, so it is
        smaller here (the file's own counts are fixed):

        >>> from pramkit.estimate.axes import contract, inverses
        >>> w = inverses([np.array([[0.75, 0.25], [0.25, 0.75]])])
        >>> u = np.array([70.0, 30.0])
        >>> t = contract(u, w)
        >>> CountCovariance(w, u, t, 100, "multinomial").cell_variances().tolist()
        [84.0, 84.0]
        >>> CountCovariance(w, u, t, 100, "pram").cell_variances().tolist()
        [75.0, 75.0]
        """
        d = self._second_moments()
        t = self.counts
        out = d - t * t / self.n if self.kind == "multinomial" else d - t
        return np.maximum(out, 0.0) if clip else out

    def share_variances(self, group_axes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Shares ``r_c = t_c / b_g`` within the groups defined by ``group_axes``
        (``b_g``: the estimated total of the group of cell c; the whole table
        when ``group_axes`` is empty) and their delta-method variances.

        With the gradient ``(e_c - r_c 1_g) / b_g`` and ``W 1 = 1``:
        ``b_g^2 Var(r_c) = D_c - 2 r_c X_c + r_c^2 G_g - [pram: t_c (1 - r_c)]``,
        where D contracts u with ``W∘W`` on every axis, X with ``W`` on the
        within-group axes and ``W∘W`` on the group axes, and G sums u over the
        within-group axes and contracts it with ``W∘W`` on the group axes.

        Parameters
        ----------
        group_axes : sequence of int
            The axes whose categories define the groups (the ``by`` variables).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            The shares and their variances, both in the shape of the table
            (NaN for a group whose estimated total is 0).

        Examples
        --------
        A perturbed answer (axis 0) by an unperturbed sex (axis 1): the
        shares within each sex sum to 1, and with two answers both shares of
        a group have the same variance.

        >>> from pramkit.estimate.axes import contract, inverses
        >>> w = inverses([np.array([[0.75, 0.25], [0.25, 0.75]]), None])
        >>> u = np.array([[30.0, 20.0], [15.0, 35.0]])
        >>> cov = CountCovariance(w, u, contract(u, w), 100, "multinomial")
        >>> r, var = cov.share_variances([1])
        >>> r.round(4).tolist()
        [[0.8333, 0.2273], [0.1667, 0.7727]]
        >>> np.allclose(r.sum(axis=0), 1.0), np.allclose(var[0], var[1])
        (True, True)

        Without groups the shares are of all n records, and their variances
        are those of the counts over ``n^2``:

        >>> r, var = cov.share_variances([])
        >>> np.allclose(var, cov.cell_variances() / 100**2)
        True
        """
        ndim = self.counts.ndim
        groups = set(group_axes)
        inner = tuple(a for a in range(ndim) if a not in groups)
        sq = squared(self.inverses)
        d = self._second_moments()
        x = contract(self.released, [sq[a] if a in groups else self.inverses[a] for a in range(ndim)])
        g = contract(self.released.sum(axis=inner, keepdims=True),
                     [sq[a] if a in groups else None for a in range(ndim)])
        b = self.counts.sum(axis=inner, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(b != 0, self.counts / b, np.nan)
            num = d - 2.0 * r * x + r * r * g
            if self.kind == "pram":
                num = num - self.counts * (1.0 - r)
            var = np.where(b != 0, np.maximum(num, 0.0) / (b * b), np.nan)
        return r, np.broadcast_to(var, self.counts.shape).copy()
