"""The classic and bistochastic designs behind one signature, and one set of measures.

:data:`METHODS` maps a method name to ``f(categories, p, *, params) -> PramMatrix``
(p: observed counts or proportions of the categories; params: the options,
absent ones omitted or ``None``):

============================ ==============================================================
method                       params
============================ ==============================================================
``invariant``                ``pd`` (0.8), ``alpha`` (0.5), ``diagonal`` ("uniform" | "fixed",
                             default "uniform"), ``seed`` (int, optional) -- sdcMicro's
                             invariant PRAM (:func:`pramkit.design.classic.sdcmicro_pram`)
``keep``                     ``keep`` (required), ``bandwidth`` (int, optional) -- mu-ARGUS
``rr``                       ``epsilon`` or ``beta`` -- equation (2)
``kanon``                    ``k`` or ``beta``; ``gamma`` (optional floor) -- equation (3)
``tridiagonal``              ``alpha`` or ``beta``; ``gamma`` (optional floor) -- equation (7)
``circulant``                ``keep`` (p11) or ``beta`` -- equation (6) as in Table 1
``bistochastic-beta``        ``beta`` (required), ``family`` (rr | kanon | tridiagonal |
                             circulant | best; default best: the most I(X;Z) for p)
============================ ==============================================================

:func:`measure` puts any matrix on one scale: its exact epsilon (Shlomo and
Skinner 2012, section 4), its beta when bistochastic (Ruiz and Domingo-Ferrer,
Definition 1), the mutual information it keeps for p (nats), its smallest
diagonal entry, whether it is truthful, bistochastic, and invariant (p M = p).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from pramkit.design.bistochastic import (
    BETA_FAMILIES, circulant_keep, compare_families, fit_family, k_anonymity, tridiagonal, with_floor,
)
from pramkit.design.classic import keep_probability, randomized_response, sdcmicro_pram
from pramkit.errors import PramkitError
from pramkit.information import mutual_information
from pramkit.matrix import ROW_SUM_TOL, Label, PramMatrix
from pramkit.privacy.bistochastic import as_distribution, bistochastic_privacy, is_bistochastic

#: Signature shared by every entry of :data:`METHODS`.
Method = Callable[..., PramMatrix]


@dataclass(frozen=True)
class DesignMeasures:
    """What a PRAM matrix guarantees and keeps, on one scale (:func:`measure`).

    Attributes
    ----------
    epsilon : float
        Exact epsilon-DP per record (inf when a column mixes zeros and positives).
    beta : float or None
        beta-bistochastic privacy, H(P) / log2 r (None if not bistochastic).
    entropy_rate_bits : float or None
        H(P), equation (4) of Ruiz and Domingo-Ferrer, bits (None if not bistochastic).
    mutual_information_nats : float or None
        I(X; Z) for the given p, nats (None without p).
    min_diagonal : float
        Smallest keep probability M[k, k].
    truthful : bool
        Every M[k, k] is the largest entry of its row.
    bistochastic : bool
        Rows and columns sum to 1.
    invariant : bool or None
        p M = p within 1e-9 (None without p).

    Examples
    --------
    Two k-anonymous blocks of two categories: one bit of the two of perfect
    secrecy (beta = 1/2), but no finite epsilon:

    >>> from pramkit.design.bistochastic import k_anonymity
    >>> measure(k_anonymity("abcd", 2))   # doctest: +NORMALIZE_WHITESPACE
    DesignMeasures(epsilon=inf, beta=0.5, entropy_rate_bits=1.0, mutual_information_nats=None,
                   min_diagonal=0.5, truthful=True, bistochastic=True, invariant=None)
    """

    epsilon: float
    beta: float | None
    entropy_rate_bits: float | None
    mutual_information_nats: float | None
    min_diagonal: float
    truthful: bool
    bistochastic: bool
    invariant: bool | None


def measure(matrix: PramMatrix, p: ArrayLike | None = None) -> DesignMeasures:
    """Epsilon, beta, mutual information and the rest for one matrix (and proportions p).

    Parameters
    ----------
    matrix : PramMatrix
        The design.
    p : array_like, shape (S,), optional
        Counts or proportions of the categories, for I(X; Z) and invariance.

    Returns
    -------
    DesignMeasures
        The matrix's epsilon (Shlomo and Skinner 2012, section 4), beta and
        H(P) when bistochastic (Ruiz and Domingo-Ferrer, Definition 1 and
        equation (4)), I(X; Z) and invariance for p.

    Raises
    ------
    PramkitError
        If p is not a distribution of the matrix's S categories.

    Examples
    --------
    Randomized response is bistochastic but not invariant for a p that is
    not uniform; the invariant PRAM built from it is invariant but not
    bistochastic:

    >>> import math
    >>> from pramkit.design.classic import invariant_pram, randomized_response
    >>> p = [0.5, 0.3, 0.2]
    >>> rr = measure(randomized_response("abc", math.log(2)), p)
    >>> rr.epsilon <= math.log(2), rr.entropy_rate_bits, round(rr.beta, 4), rr.bistochastic, rr.invariant
    (True, 1.5, 0.9464, True, False)
    >>> inv = measure(invariant_pram(p, randomized_response("abc", math.log(2))), p)
    >>> inv.bistochastic, inv.invariant, inv.beta
    (False, True, None)
    """
    bi = is_bistochastic(matrix)
    priv = bistochastic_privacy(matrix) if bi and matrix.size >= 2 else None
    pv = None if p is None else as_distribution(p, matrix.size)
    return DesignMeasures(
        epsilon=matrix.epsilon,
        beta=None if priv is None else priv.beta,
        entropy_rate_bits=None if priv is None else priv.entropy_rate_bits,
        mutual_information_nats=None if pv is None else mutual_information(pv, matrix.matrix),
        min_diagonal=matrix.min_diagonal,
        truthful=matrix.is_truthful,
        bistochastic=bi,
        invariant=None if pv is None else bool(np.abs(pv @ matrix.matrix - pv).max() <= ROW_SUM_TOL),
    )


_REQUIRED = object()


def _options(method: str, params: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """The given options (``None`` = absent) merged with defaults; unknown or
    missing options raise an error naming the method's options."""
    given = {k: v for k, v in params.items() if v is not None}
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise PramkitError(f"method {method!r} does not take {', '.join(unknown)}; its options are {', '.join(spec)}")
    out = {**{k: v for k, v in spec.items() if v is not _REQUIRED}, **given}
    missing = [k for k, v in spec.items() if v is _REQUIRED and k not in out]
    if missing:
        raise PramkitError(f"method {method!r} needs {', '.join(missing)}")
    return out


def _one_of(method: str, opts: dict[str, Any], name: str) -> str:
    """Which of ``name`` and ``beta`` was given (exactly one must be)."""
    if (opts.get(name) is None) == (opts.get("beta") is None):
        raise PramkitError(f"method {method!r} needs exactly one of {name} and beta")
    return name if opts.get(name) is not None else "beta"


def _number(value: Any, name: str, kind: type = float) -> Any:
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise PramkitError(f"{name} must be a number, got {value!r}") from None
    if kind is int and out != float(value):
        raise PramkitError(f"{name} must be a whole number, got {value!r}")
    return out


def _invariant(categories: Sequence[Label], p: ArrayLike, *, params: Mapping[str, Any]) -> PramMatrix:
    o = _options("invariant", params, {"pd": 0.8, "alpha": 0.5, "diagonal": "uniform", "seed": None})
    seed = None if o.get("seed") is None else _number(o["seed"], "seed", int)
    return sdcmicro_pram(categories, p, pd=_number(o["pd"], "pd"), alpha=_number(o["alpha"], "alpha"),
                         diagonal=o["diagonal"], seed=seed)


def _keep(categories: Sequence[Label], p: ArrayLike, *, params: Mapping[str, Any]) -> PramMatrix:
    o = _options("keep", params, {"keep": _REQUIRED, "bandwidth": None})
    bw = None if o.get("bandwidth") is None else _number(o["bandwidth"], "bandwidth", int)
    return keep_probability(categories, _number(o["keep"], "keep"), bandwidth=bw)


def _family_method(family: str, name: str, build: Callable[[Sequence[Label], Any], PramMatrix],
                   kind: type, floor: bool) -> Method:
    """A METHODS entry for one bistochastic family: its own parameter or a target beta."""
    spec = {name: None, "beta": None, **({"gamma": None} if floor else {})}

    def method(categories: Sequence[Label], p: ArrayLike, *, params: Mapping[str, Any]) -> PramMatrix:
        o = _options(family, params, spec)
        if _one_of(family, o, name) == "beta":
            m = fit_family(family, categories, _number(o["beta"], "beta")).matrix
        else:
            m = build(categories, _number(o[name], name, kind))
        return m if o.get("gamma") is None else with_floor(m, _number(o["gamma"], "gamma"))

    method.__doc__ = f"Family {family!r}: give {name} or a target beta" + (" (optional floor gamma)." if floor else ".")
    return method


def _bistochastic_beta(categories: Sequence[Label], p: ArrayLike, *, params: Mapping[str, Any]) -> PramMatrix:
    o = _options("bistochastic-beta", params, {"beta": _REQUIRED, "family": "best"})
    beta = _number(o["beta"], "beta")
    if o["family"] == "best":
        return compare_families(categories, p, beta).fits[0].matrix
    if o["family"] not in BETA_FAMILIES:
        raise PramkitError(f"family must be best or one of {', '.join(BETA_FAMILIES)}, got {o['family']!r}")
    return fit_family(o["family"], categories, beta).matrix


#: Method name -> ``f(categories, p, *, params) -> PramMatrix``.
METHODS: dict[str, Method] = {
    "invariant": _invariant,
    "keep": _keep,
    "rr": _family_method("rr", "epsilon", randomized_response, float, floor=False),
    "kanon": _family_method("kanon", "k", k_anonymity, int, floor=True),
    "tridiagonal": _family_method("tridiagonal", "alpha", tridiagonal, float, floor=True),
    "circulant": _family_method("circulant", "keep", circulant_keep, float, floor=False),
    "bistochastic-beta": _bistochastic_beta,
}
