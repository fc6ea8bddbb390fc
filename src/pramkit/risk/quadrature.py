"""The quadrature of the expected risks after PRAM: integrals over ``s = -log t`` from 0 past 48.

The expected risk of a kept record (:func:`pramkit.risk.expected.expected_kept_risk`) and the
dependence of two members of a household (:func:`pramkit.risk.household_pairs.pair_moment`) are
integrals ``int_0^1 h(t) dt`` of a released count's generating function against the
Benedetti-Franconi kernel ``p / (p + (1 - p) t)`` (docs/risk.md).  In ``s = -log t`` the integrand
falls where the generating function ``G(e^-s) <= exp(-mu (1 - e^-s))`` does, on the scale
``1 / mu`` of the expected count ``mu``, and the kernel has a step at ``s = log((1 - p) / p)``;
:func:`kept_quadrature` places Gauss-Legendre panels on both scales.

Examples
--------
>>> import numpy as np
>>> s, w = kept_quadrature(100.0, 0.05)
>>> round(float(np.sum(w * np.exp(-s))), 12)      # int_0^inf e^-s ds
1.0
>>> exact = (1 - np.exp(-100.0)) / 100.0            # int_0^inf e^(-100 (1 - e^-s)) e^-s ds
>>> bool(abs(np.sum(w * np.exp(-100.0 * (1 - np.exp(-s))) * np.exp(-s)) - exact) < 1e-12)
True
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: Gauss-Legendre nodes per panel of :func:`kept_quadrature`.
NODES_PER_PANEL = 12


@functools.lru_cache(maxsize=4)
def legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (kept for the few sizes used).

    >>> x, w = legendre(3)
    >>> round(float(w.sum()), 12), round(float(np.sum(w * x ** 4)), 12)   # exact to degree 5: 2/5
    (2.0, 0.4)
    """
    return np.polynomial.legendre.leggauss(nodes)


def kept_quadrature(mu_max: float, p_min: float, nodes: int = NODES_PER_PANEL) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``s`` and weights of ``int_0^inf h(s) ds`` for the integrands of the expected risks.

    Panels double from ``2^-e`` (``e`` with ``mu_max 2^-e <= 1/64``) to 1, where the released count's
    generating function ``G(e^-s) <= exp(-mu (1 - e^-s))`` falls; panels of width 1 run past the
    kernel's step at ``s = log((1 - p) / p)``; then panels double until one ends at 48 or past it (the
    integrand is below ``e^-48`` there).

    Parameters
    ----------
    mu_max : float
        The largest expected released count among the cells integrated.
    p_min : float
        The smallest sampling fraction among them (in ``(0, 1]``).
    nodes : int
        Gauss-Legendre nodes per panel.

    Returns
    -------
    tuple of numpy.ndarray
        The nodes ``s`` and their weights.

    Examples
    --------
    >>> s, w = kept_quadrature(1.0, 1.0, nodes=4)
    >>> float(s.min()) > 0, float(s.max()) > 48, len(s) % 4
    (True, True, 0)
    """
    x, w = legendre(nodes)
    e = math.ceil(math.log2(max(mu_max, 1.0))) + 6
    edges = [0.0] + [2.0 ** k for k in range(-e, 1)]
    step = math.log((1.0 - p_min) / p_min) if p_min < 1.0 else 0.0
    while edges[-1] < max(step, 1.0) + 8.0:
        edges.append(edges[-1] + 1.0)
    while edges[-1] < 48.0:
        edges.append(edges[-1] * 2.0)
    a, b = np.array(edges[:-1]), np.array(edges[1:])
    half = (b - a)[:, None] / 2.0
    return ((a + b)[:, None] / 2.0 + half * x).ravel(), (half * w).ravel()
