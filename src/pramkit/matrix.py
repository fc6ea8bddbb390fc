"""The PRAM matrix: a validated row-stochastic matrix with labels and provenance.

Convention (used everywhere in pramkit): ``M[k, j] = P(Z = j | X = k)``.  Rows
are the original categories, columns the released ones, and both are indexed by
the same ordered list of category labels.

Every design returns a :class:`PramMatrix`; every measure and the perturbation
engine take one; the manifest (:mod:`pramkit.manifest`) serialises it.

A matrix of form (8) (each row's off-diagonal entries equal) can be stored
compactly, as its diagonal q and off-diagonal entries w (:meth:`PramMatrix.form8`):
O(S) memory and O(S) epsilon, flags and validation, so that a variable with
100 000 categories is cheap.  Its dense array is built only on request.

A matrix whose categories fall into blocks that never exchange values (strata,
codes kept as they are) is stored block by block (:meth:`PramMatrix.block_diagonal`):
each block is a matrix of its own, dense or form (8).  Its epsilon is infinite
(the block of a value is released exactly) and :attr:`PramMatrix.block_epsilon`
is the epsilon given the block, the largest of the blocks' epsilons.

The truncated geometric mechanism on an order of categories
(:meth:`PramMatrix.truncated_geometric`) is stored as its rate alone: O(1)
memory, closed-form epsilon and diagonal, and an exact inverse-CDF sampler, so
that an ordinal variable of 100 000 categories needs no S x S array.

The exponential mechanism over public distances (:meth:`PramMatrix.exponential`)
is stored as its rate and the distances (for centroids: their coordinates,
O(S)): each row ``M[x, z] = exp(-rate d(x, z) / 2) / Z_x`` is computed on
demand in O(S), every property in one O(S^2)-time, O(S)-memory pass or in
closed form, and the engine samples the formula exactly
(:class:`pramkit.engine.sampling.ExponentialSampler`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import ManifestError, MatrixError
from pramkit.labels import Label
from pramkit.privacy.epsilon import form8_matrix_epsilon, matrix_epsilon

#: Tolerance on row sums (and column sums for the bistochastic check).
ROW_SUM_TOL = 1e-9
#: Rows of an exponential mechanism computed at a time by its O(S^2)-time, O(S)-memory passes.
ROWS_PER_PASS = 64

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None


def _plain_label(value: Any) -> Label:
    """A label as a plain Python scalar (NumPy scalars unwrapped), or a tuple of them."""
    if isinstance(value, (tuple, list)):
        if any(isinstance(v, (tuple, list)) for v in value):
            raise MatrixError(f"category label {value!r} nests tuples; a joint label is a flat tuple")
        return tuple(_plain_label(v) for v in value)
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MatrixError(f"category label {value!r} is not a finite number")
        return value
    raise MatrixError(
        f"category label {value!r} has type {type(value).__name__}; "
        "labels must be strings, integers, finite numbers or null (or flat tuples of them)"
    )


@dataclass(frozen=True)
class Provenance:
    """Where a matrix came from.

    Parameters
    ----------
    method : str
        Name of the design (``"randomized_response"``, ``"dp_optimal"``, ...).
    parameters : mapping
        The design's inputs (epsilon, p, ...), JSON-serialisable.
    objective : float or None
        Value of the design's objective at the returned matrix.
    objective_name : str or None
        What ``objective`` measures, with its unit (e.g. ``"mutual_information_nats"``).
    certificate : mapping or None
        Evidence of optimality (bound, dual values, gap, ...).
    seconds : float or None
        Wall-clock time of the design.

    Examples
    --------
    >>> prov = Provenance("randomized_response", {"epsilon": 1.0})
    >>> m = PramMatrix.form8([0.9, 0.9], categories=["f", "m"], provenance=prov)
    >>> m.provenance.method, m.provenance.parameters
    ('randomized_response', {'epsilon': 1.0})
    >>> m == m.with_provenance(Provenance("randomized_response", {"epsilon": 2.0}))  # provenance counts
    False
    """

    method: str = "user"
    parameters: Mapping[str, JSONValue] = field(default_factory=dict)
    objective: float | None = None
    objective_name: str | None = None
    certificate: Mapping[str, JSONValue] | None = None
    seconds: float | None = None

    def to_dict(self) -> dict[str, JSONValue]:
        """The provenance as JSON values (NumPy scalars and arrays a design left in it converted).

        Returns
        -------
        dict
            ``method``, ``parameters``, ``objective``, ``objective_name``, ``certificate``
            and ``seconds``.

        Examples
        --------
        >>> import json
        >>> prov = Provenance("dp_optimal", {"epsilon": np.float64(1.0), "p": np.array([0.25, 0.75])},
        ...                   objective=np.float64(0.125), objective_name="mutual_information_nats")
        >>> d = prov.to_dict()
        >>> d["parameters"], d["objective"]
        ({'epsilon': 1.0, 'p': [0.25, 0.75]}, 0.125)
        >>> json.loads(json.dumps(d)) == d  # plain JSON values
        True
        """
        from pramkit._json import to_jsonable

        return to_jsonable({
            "method": self.method,
            "parameters": dict(self.parameters),
            "objective": self.objective,
            "objective_name": self.objective_name,
            "certificate": None if self.certificate is None else dict(self.certificate),
            "seconds": self.seconds,
        })

    @classmethod
    def from_dict(cls, d: Any, where: str = "design") -> Provenance:
        """Validate a provenance read from JSON (:meth:`to_dict`); absent fields take their defaults.

        Parameters
        ----------
        d : dict
            A parsed provenance.
        where : str
            The field's name, for the error messages.

        Returns
        -------
        Provenance

        Raises
        ------
        ManifestError
            A malformed field, by name.

        Examples
        --------
        >>> prov = Provenance("dp_optimal", {"epsilon": 1.0}, 0.25, "mutual_information_nats")
        >>> Provenance.from_dict(prov.to_dict()) == prov
        True
        >>> Provenance.from_dict({"method": "rr", "objective": "high"}, "variables[0].design")
        Traceback (most recent call last):
        ...
        pramkit.errors.ManifestError: field 'variables[0].design.objective' must be a number or null
        """
        if not isinstance(d, dict):
            raise ManifestError(f"field '{where}' must be an object")
        checks = (("method", str, False), ("parameters", dict, False), ("objective", (int, float), True),
                  ("objective_name", str, True), ("certificate", dict, True), ("seconds", (int, float), True))
        words = {str: "a string", dict: "an object", (int, float): "a number"}
        for key, kind, nullable in checks:
            value = d.get(key)
            if (value is None and (nullable or key not in d)) or (isinstance(value, kind) and not isinstance(value, bool)):
                continue
            raise ManifestError(f"field '{where}.{key}' must be {words[kind]}{' or null' if nullable else ''}")
        objective, seconds = d.get("objective"), d.get("seconds")
        return cls(method=d.get("method", "user"), parameters=d.get("parameters", {}),
                   objective=None if objective is None else float(objective), objective_name=d.get("objective_name"),
                   certificate=d.get("certificate"), seconds=None if seconds is None else float(seconds))


#: Attributes a :class:`PramMatrix` computes on demand (never pickled).
_LAZY = ("_dense_cache", "epsilon", "form8_q", "block_epsilon", "_realised", "_row_sums")


class PramMatrix:
    """A validated PRAM transition matrix, immutable.

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        ``matrix[k, j] = P(released j | original k)``; finite, non-negative,
        each row summing to 1 within ``1e-9``.
    categories : sequence of labels, length S
        Unique labels of the categories, in the order of rows and columns.
        Defaults to ``0, 1, ..., S-1``.
    provenance : Provenance
        The design that produced the matrix (default ``Provenance()``).

    Raises
    ------
    MatrixError
        If the matrix is not square, has a negative or non-finite entry or a row
        that does not sum to 1, or the labels are not unique JSON scalars (or flat
        tuples of them).

    Notes
    -----
    The stored array is a read-only float64 copy.

    A matrix of form (8) (row k keeps its category with probability ``q[k]``
    and puts ``w[k]`` on each of the other S - 1) can instead be stored
    compactly, as the two vectors q and w (:meth:`form8`, :meth:`from_diagonal`,
    :meth:`identity`): memory, validation and every property below are then
    O(S), and :attr:`matrix` builds the dense S x S array only when it is
    asked for (O(S^2) time and memory, once).  Both kinds behave the same way
    and compare equal when their entries, labels and provenance are equal.

    References
    ----------
    Gouweleeuw, Kooiman, Willenborg and de Wolf (1998), Post randomisation for
    statistical disclosure control.  Shlomo and Skinner (2012), section 4.
    Ayed, Battiston and Camerlenghi (2020), form (8).

    Examples
    --------
    >>> m = PramMatrix([[0.9, 0.1], [0.2, 0.8]], categories=["yes", "no"])
    >>> m.matrix.sum(axis=1).tolist()  # rows: original categories, each a distribution
    [1.0, 1.0]
    >>> math.isclose(m.epsilon, math.log(0.8 / 0.1))  # the largest log-ratio within a column
    True
    >>> PramMatrix([[0.9, 0.2], [0.2, 0.8]])
    Traceback (most recent call last):
    ...
    pramkit.errors.MatrixError: row 0 of the matrix sums to 1.1, not 1 (tolerance 1e-09); 1 row(s) are off
    """

    categories: tuple[Label, ...]
    provenance: Provenance

    def __init__(
        self,
        matrix: ArrayLike,
        categories: Sequence[Label] = (),
        provenance: Provenance | None = None,
    ) -> None:
        try:
            m = np.array(matrix, dtype=float, copy=True)
        except (TypeError, ValueError) as exc:
            raise MatrixError(f"the matrix is not numeric: {exc}") from None
        if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
            raise MatrixError(f"the matrix must be square and non-empty, got shape {m.shape}")
        if not np.all(np.isfinite(m)):
            k, j = np.argwhere(~np.isfinite(m))[0]
            raise MatrixError(f"entry [{k}, {j}] of the matrix is {m[k, j]} (entries must be finite)")
        if np.any(m < 0):
            k, j = np.argwhere(m < 0)[0]
            raise MatrixError(f"entry [{k}, {j}] of the matrix is negative ({m[k, j]!r})")
        _check_rows(m.sum(axis=1))
        m.setflags(write=False)
        self._setup(m, None, None, categories, provenance)

    def _setup(self, dense: np.ndarray | None, q: np.ndarray | None, w: np.ndarray | None,
               categories: Sequence[Label], provenance: Provenance | None) -> None:
        s = dense.shape[0] if dense is not None else q.size if q is not None else len(categories)
        cats = tuple(range(s)) if len(categories) == 0 else tuple(_plain_label(c) for c in categories)
        if len(cats) != s:
            raise MatrixError(f"{len(cats)} category labels given for a {s} x {s} matrix")
        seen: set[Any] = set()
        for c in cats:
            token = _token(c)
            if token in seen:
                raise MatrixError(f"category label {c!r} appears twice")
            seen.add(token)
        prov = Provenance() if provenance is None else provenance
        if not isinstance(prov, Provenance):
            raise MatrixError("provenance must be a pramkit.Provenance")
        state = self.__dict__
        state["_dense"], state["_q"], state["_w"] = dense, q, w
        state.setdefault("_blocks", None)
        state.setdefault("_rate", None)
        state.setdefault("_expo", None)
        state["categories"], state["provenance"] = cats, prov

    # -- immutability -----------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        """What pickling keeps: the stored entries, labels and provenance (not the caches)."""
        return {k: v for k, v in self.__dict__.items() if k not in _LAZY}

    # -- constructors -----------------------------------------------------
    @classmethod
    def form8(
        cls,
        q: ArrayLike,
        w: ArrayLike | None = None,
        categories: Sequence[Label] = (),
        provenance: Provenance | None = None,
    ) -> PramMatrix:
        """A matrix of form (8), stored compactly: ``M[k, k] = q[k]`` and
        ``M[k, j] = w[k]`` for every ``j != k``.

        Memory and validation are O(S): the entries must be finite and
        non-negative and every row ``q[k] + (S - 1) w[k]`` must sum to 1
        within :data:`ROW_SUM_TOL`.  Every property except :attr:`matrix`
        (which builds the dense array, O(S^2)) is computed in O(S).

        Parameters
        ----------
        q : array-like, shape (S,)
            The keep probabilities (the diagonal).
        w : array-like, shape (S,), optional
            The off-diagonal entry of each row; default ``(1 - q) / (S - 1)``
            (ignored, and stored as 0, when S = 1).
        categories : sequence of labels, length S
            As for :class:`PramMatrix`.
        provenance : Provenance, optional
            Default ``Provenance(method="diagonal")``.

        Returns
        -------
        PramMatrix
            The compact matrix.

        Raises
        ------
        MatrixError
            If q or w is malformed, or a row does not sum to 1.

        Examples
        --------
        >>> m = PramMatrix.form8([0.8, 0.6, 0.7], categories=["a", "b", "c"])
        >>> m.is_compact, m.size, m.form8_w.tolist()
        (True, 3, [0.09999999999999998, 0.2, 0.15000000000000002])
        >>> math.isclose(m.epsilon, math.log(0.7 / 0.1))  # column c: q = 0.7 against w = 0.1 of row a
        True
        >>> m == PramMatrix(m.matrix, ["a", "b", "c"], Provenance(method="diagonal"))
        True
        """
        qv = _vector(q, "q")
        s = qv.size
        if w is None:
            wv = np.zeros(1) if s == 1 else (1.0 - qv) / (s - 1)
        else:
            wv = _vector(w, "w")
            if wv.size != s:
                raise MatrixError(f"q has {s} entries but w has {wv.size}; give one of each per category")
        if s == 1:
            wv = np.zeros(1)  # a single row has no off-diagonal entry
        _at_most_one(qv, "q")
        _at_most_one(wv, "w")
        _check_rows(qv + (s - 1) * wv)
        qv.setflags(write=False)
        wv.setflags(write=False)
        out = cls.__new__(cls)
        out._setup(None, qv, wv, categories, Provenance(method="diagonal") if provenance is None else provenance)
        return out

    @classmethod
    def from_diagonal(
        cls,
        q: ArrayLike,
        categories: Sequence[Label] = (),
        provenance: Provenance | None = None,
    ) -> PramMatrix:
        """Form (8) of Ayed, Battiston and Camerlenghi: keep category k with
        probability ``q[k]``, otherwise release one of the other S-1
        categories uniformly at random: ``M[k, j] = (1 - q[k]) / (S - 1)``.

        Stored compactly (:meth:`form8`); q must lie in [0, 1] (and be 1
        when S = 1).

        Parameters
        ----------
        q : array-like, shape (S,)
            The keep probabilities.
        categories : sequence of labels, length S
            As for :class:`PramMatrix`.
        provenance : Provenance, optional
            Default ``Provenance(method="diagonal")``.

        Returns
        -------
        PramMatrix
            The compact matrix.

        Raises
        ------
        MatrixError
            If an entry of q is outside [0, 1], or S = 1 and q is not 1.

        Examples
        --------
        >>> m = PramMatrix.from_diagonal([0.9, 0.5])
        >>> m.is_compact, m.matrix.tolist()
        (True, [[0.9, 0.09999999999999998], [0.5, 0.5]])
        """
        qv = _vector(q, "q")
        bad = np.flatnonzero(qv > 1)
        if bad.size:
            raise MatrixError(f"keep probabilities must lie in [0, 1], got q[{bad[0]}] = {qv[bad[0]]!r}")
        if qv.size == 1 and qv[0] != 1:
            raise MatrixError("a single category can only be kept (q = 1)")
        return cls.form8(qv, None, categories, provenance)

    @classmethod
    def identity(cls, categories: Sequence[Label]) -> PramMatrix:
        """No perturbation (epsilon infinite for S >= 2); stored compactly.

        Parameters
        ----------
        categories : sequence of labels
            At least one.

        Returns
        -------
        PramMatrix
            ``q = 1``, ``w = 0``, with ``Provenance(method="identity")``.

        Raises
        ------
        MatrixError
            If ``categories`` is empty.

        Examples
        --------
        A kept code is a block of one category: the identity, which releases it exactly.

        >>> m = PramMatrix.identity(["a", "b"])
        >>> m.matrix.tolist(), m.epsilon, m.is_compact
        ([[1.0, 0.0], [0.0, 1.0]], inf, True)
        >>> PramMatrix.identity(["n/a"]).epsilon  # one category: nothing to distinguish
        0.0
        """
        s = len(categories)
        if s == 0:
            raise MatrixError("the matrix must be square and non-empty, got shape (0, 0)")
        return cls.form8(np.ones(s), np.zeros(s), tuple(categories), Provenance(method="identity"))

    @classmethod
    def block_diagonal(
        cls,
        parts: Sequence[PramMatrix],
        categories: Sequence[Label] = (),
        provenance: Provenance | None = None,
    ) -> PramMatrix:
        """A matrix whose categories fall into blocks that never exchange values.

        Block b is the matrix ``parts[b]`` over its own categories; every entry
        between two blocks is zero, so a value never leaves its block (a
        stratum, a code that is kept).  Stored block by block: memory is that
        of the parts (O(S) for form (8) parts), and :attr:`matrix` builds the
        dense array only on request.

        Parameters
        ----------
        parts : sequence of PramMatrix
            The blocks; their category labels, together, are the matrix's.  A part
            stored by blocks gives its own blocks.
        categories : sequence of labels, optional
            The order of the categories (a permutation of the parts' labels);
            default: the parts' labels one block after another.
        provenance : Provenance, optional
            Default ``Provenance(method="blocks")``.

        Returns
        -------
        PramMatrix
            With :attr:`blocks` set; its :attr:`epsilon` is infinite when there
            are two blocks or more, and :attr:`block_epsilon` is the epsilon
            given the block.

        Raises
        ------
        MatrixError
            If ``parts`` is empty or ``categories`` is not a permutation of the parts' labels.

        Examples
        --------
        >>> kept = PramMatrix.identity(["n/a"])
        >>> rest = PramMatrix.form8([0.8, 0.8, 0.8], categories=["a", "b", "c"])
        >>> m = PramMatrix.block_diagonal([rest, kept], categories=["a", "n/a", "b", "c"])
        >>> m.epsilon, math.isclose(m.block_epsilon, math.log(0.8 / 0.1)), m.matrix[1].tolist()
        (inf, True, [0.0, 1.0, 0.0, 0.0])
        """
        parts = tuple(parts)
        if not parts or not all(isinstance(p, PramMatrix) for p in parts):
            raise MatrixError("a block-diagonal matrix needs at least one block, each a PramMatrix")
        parts = tuple(b for p in parts for b in ((q for _, q in p.blocks) if p.blocks is not None else (p,)))
        labels = [c for p in parts for c in p.categories]
        order = list(labels) if len(categories) == 0 else [_plain_label(c) for c in categories]
        if len(order) != len(labels):
            raise MatrixError(f"{len(order)} category labels given for blocks of {len(labels)} categories")
        out = cls.__new__(cls)
        out.__dict__["_blocks"] = None
        out._setup(None, None, None, order, Provenance(method="blocks") if provenance is None else provenance)
        position = {_token(c): i for i, c in enumerate(out.categories)}
        index = []
        for p in parts:
            try:
                idx = np.fromiter((position[_token(c)] for c in p.categories), dtype=np.intp, count=p.size)
            except KeyError as exc:
                raise MatrixError(f"category {exc.args[0][-1]!r} of a block is not among the categories") from None
            idx.setflags(write=False)
            index.append(idx)
        if np.unique(np.concatenate(index)).size != len(order):
            raise MatrixError("a category belongs to two blocks; the blocks must partition the categories")
        out.__dict__["_blocks"] = tuple(zip(index, parts))
        return out

    @classmethod
    def truncated_geometric(
        cls,
        rate: float,
        categories: Sequence[Label],
        provenance: Provenance | None = None,
    ) -> PramMatrix:
        """The truncated geometric mechanism on the order of ``categories`` (Ghosh,
        Roughgarden and Sundararajan 2009), stored as its rate only.

        With ``a = exp(-rate)``, category x is released as ``x + N`` clamped to
        ``0 .. S-1``, where ``P(N = k) = (1 - a) / (1 + a) a^|k|``: ``M[x, z] =
        (1 - a) / (1 + a) a^|z - x|`` for the inner z, ``a^x / (1 + a)`` for z = 0
        and ``a^(S-1-x) / (1 + a)`` for z = S - 1.  The stored matrix is this
        formula in exact arithmetic at the stored ``rate``: adjacent rows differ by a
        factor of at most ``1 / a`` in every column (metric epsilon ``rate`` per step),
        and the pure :attr:`epsilon` is ``rate (S - 1)``, rounded outward.  Memory
        O(1); :attr:`matrix` builds the dense array only when asked.

        Parameters
        ----------
        rate : float
            The metric epsilon per step of the order (nats), positive and finite.
        categories : sequence of labels
            The categories in their order (at least two).
        provenance : Provenance, optional
            Default ``Provenance(method="truncated_geometric")``.

        Returns
        -------
        PramMatrix

        Raises
        ------
        MatrixError
            For a rate that is not positive and finite (or below about 5.6e-17: e^-rate rounds to 1),
            or fewer than two categories.

        Examples
        --------
        >>> m = PramMatrix.truncated_geometric(math.log(2), ["0-17", "18-34", "35-64", "65+"])
        >>> m.matrix[1].tolist()  # a = 1/2: (1 - a) / (1 + a) = 1/3 inside, a^x / (1 + a) at the ends
        [0.3333333333333333, 0.3333333333333333, 0.16666666666666666, 0.16666666666666666]
        >>> math.isclose(m.epsilon, 3 * math.log(2)), m.geometric_rate == math.log(2)
        (True, True)
        """
        r = float(rate)
        if not (math.isfinite(r) and r > 0):
            raise MatrixError(f"the rate of a truncated geometric matrix must be positive and finite, got {rate!r}")
        if math.exp(-r) == 1.0:  # a = e^-rate rounds to 1: the geometric series' 1 - a would be 0
            raise MatrixError(f"the rate of a truncated geometric matrix must be large enough that e^-rate is below 1 "
                              f"as a double (about 5.6e-17), got {rate!r}")
        if len(categories) < 2:
            raise MatrixError("a truncated geometric matrix needs at least two categories")
        out = cls.__new__(cls)
        out.__dict__["_rate"] = r
        out._setup(None, None, None, categories,
                   Provenance(method="truncated_geometric") if provenance is None else provenance)
        return out

    @property
    def geometric_rate(self) -> float | None:
        """The rate of a truncated geometric matrix (:meth:`truncated_geometric`), else ``None``."""
        return self.__dict__.get("_rate")

    @classmethod
    def exponential(
        cls,
        rate: float,
        distances: Any,
        provenance: Provenance | None = None,
    ) -> PramMatrix:
        """The exponential mechanism over public distances (McSherry and Talwar 2007), stored as
        its rate and the distances: ``M[x, z] = exp(-rate d(x, z) / 2) / Z_x`` with ``Z_x`` the
        row's sum.

        Memory O(S) for distances stored by their points
        (:class:`pramkit.distances.Distances`); each row is computed on demand in O(S)
        (:meth:`exponential_rows`, the same doubles :attr:`matrix` holds), the diagonal, the
        flags and the epsilon in one O(S^2)-time, O(S)-memory pass.  With ``a`` the distances'
        :attr:`~pramkit.distances.Distances.metric_error` the law is
        ``rate (1 + 3 a / d_min)``-metric-DP and its pure :attr:`epsilon` at most
        ``max over x != x' of rate (d(x, x') + 3 a) / 2 + log Z_x' - log Z_x``, never above
        ``rate`` times the diameter (docs/perturbation.md).

        Parameters
        ----------
        rate : float
            eps_d, the rate per unit of distance (positive; ``rate`` times the diameter at most 1400).
        distances : Distances
            The public distances, in the order of the categories (at least two).
        provenance : Provenance, optional
            Default ``Provenance(method="exponential_mechanism")``.

        Returns
        -------
        PramMatrix

        Raises
        ------
        MatrixError
            For a rate that is not positive and finite, too large for the diameter, or fewer than
            two categories.

        Examples
        --------
        >>> from pramkit.distances import ordinal_distances
        >>> m = PramMatrix.exponential(2 * math.log(2), ordinal_distances("abc"))   # exp(-rate d / 2) = 2^-d
        >>> m.exponential_rows([0]).tolist()   # 1, 1/2, 1/4 over 7/4
        [[0.5714285714285714, 0.2857142857142857, 0.14285714285714285]]
        >>> m.epsilon <= 2 * 2 * math.log(2), m.is_truthful, m.exponential_rate == 2 * math.log(2)
        (True, True, True)
        """
        r = float(rate)
        if not (math.isfinite(r) and r > 0):
            raise MatrixError(f"the rate of an exponential mechanism must be positive and finite, got {rate!r}")
        if distances.size < 2:
            raise MatrixError("an exponential mechanism needs at least two categories")
        if r * distances.max / 2.0 > 700.0:
            raise MatrixError(f"rate {r:g} times half the diameter {distances.max:g} exceeds 700: the far entries "
                              "would not be normal doubles")
        out = cls.__new__(cls)
        out.__dict__["_expo"] = (r, distances)
        out._setup(None, None, None, distances.categories,
                   Provenance(method="exponential_mechanism") if provenance is None else provenance)
        return out

    @property
    def exponential_rate(self) -> float | None:
        """The rate of an exponential mechanism stored by its parameters (:meth:`exponential`), else ``None``."""
        expo = self.__dict__.get("_expo")
        return None if expo is None else expo[0]

    @property
    def exponential_distances(self) -> Any:
        """The public distances of an exponential mechanism stored by its parameters, else ``None``."""
        expo = self.__dict__.get("_expo")
        return None if expo is None else expo[1]

    def exponential_rows(self, index: ArrayLike) -> np.ndarray:
        """Rows ``index`` of an exponential mechanism (:meth:`exponential`), O(S) time and memory
        each: ``w = exp(-rate d / 2)`` divided by its sum.

        Parameters
        ----------
        index : array-like of int
            Original categories (positions).

        Returns
        -------
        numpy.ndarray, shape (len(index), S)

        Raises
        ------
        MatrixError
            The matrix is not an exponential mechanism stored by its parameters.
        """
        expo = self.__dict__.get("_expo")
        if expo is None:
            raise MatrixError("not an exponential mechanism stored by its parameters")
        rate, dist = expo
        w = np.exp(dist.rows(index) * (-rate / 2.0))
        return w / w.sum(axis=1, keepdims=True)

    def _exponential_passes(self) -> Any:
        """``(index, rows)`` of an exponential mechanism, :data:`ROWS_PER_PASS` rows at a time."""
        s = self.size
        for start in range(0, s, ROWS_PER_PASS):
            idx = np.arange(start, min(start + ROWS_PER_PASS, s))
            yield idx, self.exponential_rows(idx)

    @cached_property
    def _row_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """An exponential mechanism's diagonal ``1 / Z_x`` (as :attr:`matrix` holds it) and column sums, one pass."""
        diag, cols = np.empty(self.size), np.zeros(self.size)
        for idx, rows in self._exponential_passes():
            diag[idx] = rows[np.arange(idx.size), idx]
            cols += rows.sum(axis=0)
        diag.setflags(write=False)
        return diag, cols

    def _exponential_epsilon(self) -> float:
        """The pure epsilon bound of :meth:`exponential`, rounded outward (docs/perturbation.md):
        ``max over x != x' of beta (d~(x, x') + 3 a) + L_x' - L_x`` with ``beta = rate / 2``,
        ``L = log Z`` (computed with a rigorous error bound), and never above ``rate`` times the
        diameter; ``a`` unknown (a table): ``rate`` times the diameter."""
        rate, dist = self.__dict__["_expo"]
        s, dmax = self.size, dist.max
        whole = Fraction(rate) * Fraction(dmax)  # 2 beta diam: both factors at most exp(beta diam)
        a = dist.metric_error
        if a is not None:
            beta = rate / 2.0
            logz = np.empty(s)
            for idx, block in dist.passes():
                logz[idx] = np.log(np.exp(block * -beta).sum(axis=1))
            best = -math.inf
            for idx, block in dist.passes():
                gap = beta * (block + 3.0 * a) + (logz[None, :] - logz[idx][:, None])
                gap[np.arange(idx.size), idx] = -math.inf
                best = max(best, float(gap.max()))
            u = 2.0 ** -53
            top = beta * (dmax + 3.0 * a)
            slack = 4.0 * u * ((s + top + 32.0) * 4.0 + 8.0 * (abs(float(logz.max())) + top))
            bound = Fraction(best) + Fraction(slack)
            whole = min(whole, max(bound, Fraction(0)))
        up = float(whole)
        return up if Fraction(up) >= whole else math.nextafter(up, math.inf)

    def _geometric_parts(self) -> tuple[float, float, float]:
        """``a``, the inner factor ``(1 - a) / (1 + a)`` and the end factor ``1 / (1 + a)``."""
        rate = self.__dict__["_rate"]
        a = math.exp(-rate)
        return a, math.tanh(rate / 2.0), 1.0 / (1.0 + a)

    # -- the entries ------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        """The dense S x S array ``M[k, j]`` (read-only).

        For a compact matrix it is built on first access and kept: O(S^2)
        time and memory (800 MB at S = 10 000).  Code that must scale uses
        :attr:`form8_q` / :attr:`form8_w` and the O(S) properties instead.
        """
        dense = self.__dict__["_dense"]
        if dense is not None:
            return dense
        cached = self.__dict__.get("_dense_cache")
        if cached is None:
            if self.blocks is not None:
                cached = np.zeros((self.size, self.size))
                for idx, part in self.blocks:
                    cached[np.ix_(idx, idx)] = part.matrix
            elif self.exponential_rate is not None:
                cached = self.exponential_rows(np.arange(self.size))
            elif self.geometric_rate is not None:
                rate, (_, inner, end), n = self.geometric_rate, self._geometric_parts(), self.size
                x = np.arange(n)
                with np.errstate(over="ignore"):  # rate x distance beyond a double: e^-inf is the 0 it tends to
                    cached = inner * np.exp(-rate * np.abs(x[None, :] - x[:, None]).astype(float))
                    cached[:, 0] = end * np.exp(-rate * x)
                    cached[:, n - 1] = end * np.exp(-rate * (n - 1 - x))
            else:
                q, w = self.__dict__["_q"], self.__dict__["_w"]
                cached = np.repeat(w[:, None], q.size, axis=1)
                np.fill_diagonal(cached, q)
            cached.setflags(write=False)
            self.__dict__["_dense_cache"] = cached
        return cached

    @property
    def is_compact(self) -> bool:
        """Stored as form (8) vectors q and w (O(S)) rather than as a dense array."""
        return self.__dict__["_q"] is not None

    @property
    def blocks(self) -> tuple[tuple[np.ndarray, PramMatrix], ...] | None:
        """For a block-diagonal matrix (:meth:`block_diagonal`), each block's category
        positions and its matrix; ``None`` for any other."""
        return self.__dict__.get("_blocks")

    @property
    def form8_w(self) -> np.ndarray | None:
        """The off-diagonal entry of each row of a compact matrix (read-only);
        ``None`` for a matrix stored densely."""
        return self.__dict__["_w"]

    # -- properties -------------------------------------------------------
    @property
    def size(self) -> int:
        """Number of categories S."""
        return len(self.categories)

    @cached_property
    def epsilon(self) -> float:
        """Epsilon (Shlomo and Skinner 2012, section 4) of the stored entries,
        rounded outward: the smallest double not below the exact value
        (:func:`pramkit.privacy.epsilon.matrix_epsilon`, or
        :func:`pramkit.privacy.epsilon.form8_matrix_epsilon` in O(S) for a
        compact matrix); ``inf`` when a column mixes zeros and positive entries,
        as in any matrix of two blocks or more."""
        if self.is_compact:
            return form8_matrix_epsilon(self.__dict__["_q"], self.__dict__["_w"])
        if self.blocks is not None:
            return self.block_epsilon if len(self.blocks) == 1 else math.inf
        if self.exponential_rate is not None:
            return self._exponential_epsilon()
        if self.geometric_rate is not None:  # rate (S - 1) in exact arithmetic, rounded up
            exact = Fraction(self.geometric_rate) * (self.size - 1)
            try:
                up = float(exact)
            except OverflowError:  # beyond the largest double: the outward bound is inf
                return math.inf
            return up if Fraction(up) >= exact else math.nextafter(up, math.inf)
        return matrix_epsilon(self.matrix)

    @cached_property
    def block_epsilon(self) -> float:
        """Epsilon given the block: the largest epsilon of the blocks of a
        block-diagonal matrix (each rounded outward), the guarantee among the
        values of one block when the block itself is released exactly; for
        any other matrix, :attr:`epsilon`."""
        if self.blocks is None:
            return self.epsilon
        return max(part.epsilon for _, part in self.blocks)

    @property
    def diagonal(self) -> np.ndarray:
        """The keep probabilities ``M[k, k]`` (read-only)."""
        if self.blocks is not None:
            out = np.empty(self.size)
            for idx, part in self.blocks:
                out[idx] = part.diagonal
            out.setflags(write=False)
            return out
        if self.exponential_rate is not None:
            return self._row_sums[0]
        if self.geometric_rate is not None:
            _, inner, end = self._geometric_parts()
            out = np.full(self.size, inner)
            out[[0, -1]] = end
            out.setflags(write=False)
            return out
        return self.__dict__["_q"] if self.is_compact else np.diagonal(self.matrix)

    @property
    def min_diagonal(self) -> float:
        """The smallest keep probability ``min_k M[k, k]``."""
        return float(self.diagonal.min())

    @property
    def is_bistochastic(self) -> bool:
        """Columns also sum to 1 (within ``1e-9``): the uniform distribution is invariant.

        Compact: column j sums to ``q[j] + sum_k w[k] - w[j]``."""
        if self.blocks is not None:
            return all(part.is_bistochastic for _, part in self.blocks)
        if self.is_compact:
            q, w = self.__dict__["_q"], self.__dict__["_w"]
            sums = q + (math.fsum(w.tolist()) - w)
        elif self.exponential_rate is not None:
            sums = self._row_sums[1]
        elif self.geometric_rate is not None:  # column z: sum over x of M[x, z], two geometric series
            a, inner, end = self._geometric_parts()
            n, z = self.size, np.arange(self.size)
            sums = inner * ((1 - a ** (z + 1)) + a * (1 - a ** (n - 1 - z))) / (1 - a)
            sums[[0, -1]] = end * (1 - a ** n) / (1 - a)
        else:
            sums = self.matrix.sum(axis=0)
        return bool(np.all(np.abs(sums - 1.0) <= ROW_SUM_TOL))

    @property
    def is_truthful(self) -> bool:
        """Every diagonal entry is at least as large as every other entry of its row
        (to 1e-15: a diagonal of exactly 1/S leaves off-diagonal entries 1 ulp above it).
        Compact: ``q[k] >= w[k]``."""
        if self.blocks is not None:
            return all(part.is_truthful for _, part in self.blocks)
        if self.exponential_rate is not None:  # exp(-rate d / 2) <= exp(0) = 1, the diagonal, over the same sum
            return True
        if self.geometric_rate is not None:  # row x: its largest entry is inner, or an end's a^d / (1 + a)
            a, inner, end = self._geometric_parts()
            x = np.arange(self.size)
            largest = np.maximum(end * a ** np.minimum(x, self.size - 1 - x), inner if self.size > 2 else 0.0)
            largest[[0, -1]] = end
            return bool(np.all(self.diagonal >= largest - 1e-15))
        if self.is_compact:
            q, w = self.__dict__["_q"], self.__dict__["_w"]
            return bool(np.all(q >= np.maximum(q, w) - 1e-15))
        return bool(np.all(self.diagonal >= self.matrix.max(axis=1) - 1e-15))

    @cached_property
    def form8_q(self) -> np.ndarray | None:
        """The diagonal q if the matrix has form (8) (in each row the off-diagonal
        entries are equal), else ``None``.  A compact matrix has form (8) by
        construction; a dense one when its off-diagonal entries equal
        ``(1 - q_k) / (S - 1)`` to 1e-12 relative (an O(S^2) check)."""
        if self.is_compact:
            return self.__dict__["_q"].copy()
        s = self.size
        if self.blocks is not None and len(self.blocks) > 1:
            return None if s > 1 else self.diagonal.copy()
        if self.geometric_rate is not None:  # two categories: both are ends, each row a^0 / (1 + a), a / (1 + a)
            return self.diagonal.copy() if s == 2 else None
        if s == 1:
            return self.diagonal.copy()
        if self.exponential_rate is not None:  # each row's off-diagonal entries equal, one pass
            for idx, rows in self._exponential_passes():
                off = (1.0 - rows[np.arange(idx.size), idx]) / (s - 1)
                mask = np.ones(rows.shape, dtype=bool)
                mask[np.arange(idx.size), idx] = False
                if not np.allclose(rows[mask], np.broadcast_to(off[:, None], rows.shape)[mask], rtol=1e-12,
                                   atol=1e-15):
                    return None
            return self.diagonal.copy()
        m = self.matrix
        off = (1.0 - self.diagonal) / (s - 1)
        mask = ~np.eye(s, dtype=bool)
        expected = np.broadcast_to(off[:, None], m.shape)
        if np.allclose(m[mask], expected[mask], rtol=1e-12, atol=1e-15):
            return self.diagonal.copy()
        return None

    def index_of(self, label: Label) -> int:
        """Position of a category label (:class:`MatrixError` if unknown).

        Parameters
        ----------
        label : label
            One of :attr:`categories`.

        Returns
        -------
        int
            Its row (and column) of the matrix.

        Raises
        ------
        MatrixError
            If ``label`` is not a category.

        Examples
        --------
        >>> m = PramMatrix([[0.9, 0.1], [0.2, 0.8]], categories=["yes", "no"])
        >>> float(m.matrix[m.index_of("no"), m.index_of("yes")])  # P(released yes | original no)
        0.2
        >>> m.index_of("maybe")
        Traceback (most recent call last):
        ...
        pramkit.errors.MatrixError: unknown category 'maybe'; categories are ['yes', 'no']
        """
        try:
            return self.categories.index(label)
        except ValueError:
            raise MatrixError(f"unknown category {label!r}; categories are {list(self.categories)}") from None

    def with_provenance(self, provenance: Provenance) -> PramMatrix:
        """The same entries and labels (same storage: compact stays compact) with another provenance.

        Parameters
        ----------
        provenance : Provenance
            The new provenance.

        Returns
        -------
        PramMatrix
            A new matrix; ``self`` is unchanged (immutable).

        Raises
        ------
        MatrixError
            If ``provenance`` is not a :class:`Provenance`.

        Examples
        --------
        >>> m = PramMatrix.form8([0.8, 0.7, 0.9], categories=["a", "b", "c"])
        >>> r = m.with_provenance(Provenance("dp_optimal", {"epsilon": 2.0}))
        >>> r.is_compact, r.epsilon == m.epsilon, r.provenance.method, m.provenance.method
        (True, True, 'dp_optimal', 'diagonal')
        >>> r == m.with_provenance(r.provenance)  # only the provenance told them apart
        True
        """
        if not isinstance(provenance, Provenance):
            raise MatrixError("provenance must be a pramkit.Provenance")
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__getstate__())
        out.__dict__["provenance"] = provenance
        for cached in ("epsilon", "_realised"):  # functions of the entries alone (pramkit.engine.realised_law)
            if cached in self.__dict__:
                out.__dict__[cached] = self.__dict__[cached]
        return out

    # -- JSON -------------------------------------------------------------
    @property
    def form(self) -> str:
        """How the matrix is stored, one of :data:`FORMS`: ``"blocks"`` (:meth:`block_diagonal`),
        ``"diagonal"`` (form (8), :meth:`form8`), ``"truncated_geometric"``, ``"exponential"``
        (stored by their parameters) or ``"dense"``."""
        if self.blocks is not None:
            return "blocks"
        if self.is_compact:
            return "diagonal"
        if self.geometric_rate is not None:
            return "truncated_geometric"
        return "dense" if self.exponential_rate is None else "exponential"

    def to_dict(self, *, dense_up_to: int = 0) -> dict[str, JSONValue]:
        """The matrix as JSON values, in its :attr:`form`: the serialiser of a matrix (the manifest,
        the design record and ``pramkit design --json`` write it).

        Parameters
        ----------
        dense_up_to : int
            For a form other than ``"dense"`` of at most this many categories, the dense
            ``matrix`` too, as a figure for readers (:meth:`from_dict` reads the form's own fields).

        Returns
        -------
        dict
            ``categories`` (tuples as lists), ``form``, the form's fields (:data:`FORMS`: O(S) or
            O(1) for every form but ``"dense"``), the figure, and ``design`` (:meth:`Provenance.to_dict`).

        Examples
        --------
        >>> m = PramMatrix.form8([0.8, 0.6], categories=["f", "m"])
        >>> m.to_dict()["form"], m.to_dict()["q"], [round(w, 12) for w in m.to_dict()["w"]]
        ('diagonal', [0.8, 0.6], [0.2, 0.4])
        >>> PramMatrix.from_dict(m.to_dict()) == m
        True
        >>> PramMatrix.truncated_geometric(0.5, ["low", "mid", "high"]).to_dict()["rate"]
        0.5
        >>> np.round(m.to_dict(dense_up_to=2)["matrix"], 12).tolist(), "matrix" in m.to_dict(dense_up_to=1)
        ([[0.8, 0.2], [0.4, 0.6]], False)
        """
        figure = self.form != "dense" and self.size <= dense_up_to
        return {"categories": [list(c) if isinstance(c, tuple) else c for c in self.categories],
                "form": self.form, **FORMS[self.form].write(self),
                **({"matrix": self.matrix.tolist()} if figure else {}), "design": self.provenance.to_dict()}

    @classmethod
    def from_dict(cls, d: Any, where: str = "matrix") -> PramMatrix:
        """Validate a matrix read from JSON (:meth:`to_dict`; ``form`` absent means ``"dense"``).

        Parameters
        ----------
        d : dict
            A parsed matrix: ``categories``, ``form`` and its fields, ``design`` (optional).
        where : str
            The field's name, for the error messages.

        Returns
        -------
        PramMatrix
            Stored in the form read (compact forms stay compact).

        Raises
        ------
        ManifestError
            The first malformed field, by name.

        Examples
        --------
        >>> d = {"categories": ["a", "b"], "form": "diagonal", "q": [0.75, 0.5], "w": [0.25, 0.5]}
        >>> m = PramMatrix.from_dict(d)
        >>> m.matrix.tolist(), m.provenance.method, m.is_compact
        ([[0.75, 0.25], [0.5, 0.5]], 'user', True)
        >>> PramMatrix.from_dict({**d, "w": [0.25, 0.25]}, "variables[0]")
        Traceback (most recent call last):
        ...
        pramkit.errors.ManifestError: fields 'variables[0].q' and 'variables[0].w': row 1 of the matrix sums to 0.75, not 1 (tolerance 1e-09); 1 row(s) are off
        """
        if not isinstance(d, dict):
            raise ManifestError(f"field '{where}' must be an object")
        cats = d.get("categories")
        if not isinstance(cats, list) or not cats:
            raise ManifestError(f"field '{where}.categories' must be a non-empty list")
        for i, c in enumerate(cats):
            if not all(x is None or isinstance(x, (str, int, float)) for x in (c if isinstance(c, list) else [c])):
                raise ManifestError(f"field '{where}.categories[{i}]' must be a string, number or null "
                                    "(or a list of them)")
        return _read_form(d, where, tuple(cats), Provenance.from_dict(d.get("design", {}), f"{where}.design"))

    def _equal_entries(self, other: PramMatrix) -> bool:
        if self.size != other.size:
            return False
        if self.geometric_rate is not None and other.geometric_rate is not None:
            return self.geometric_rate == other.geometric_rate
        if self.exponential_rate is not None and other.exponential_rate is not None:
            return (self.exponential_rate == other.exponential_rate
                    and self.exponential_distances.same(other.exponential_distances))
        if self.is_compact and other.is_compact:
            return bool(np.array_equal(self.__dict__["_q"], other.__dict__["_q"])
                        and np.array_equal(self.__dict__["_w"], other.__dict__["_w"]))
        if self.is_compact or other.is_compact:  # compare with the dense one without densifying the other
            c, d = (self, other.matrix) if self.is_compact else (other, self.matrix)
            q, w = c.__dict__["_q"], c.__dict__["_w"]
            same = d == w[:, None]
            np.fill_diagonal(same, True)
            return bool(np.array_equal(np.diagonal(d), q) and same.all())
        return bool(np.array_equal(self.matrix, other.matrix))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PramMatrix):
            return NotImplemented
        return (
            self.categories == other.categories
            and self.provenance == other.provenance
            and self._equal_entries(other)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        eps = self.epsilon
        return (
            f"PramMatrix(S={self.size}, epsilon={eps:.6g}, min_diagonal={self.min_diagonal:.6g}, "
            f"method={self.provenance.method!r})"
        )


def _token(label: Label) -> Any:
    """A label as a dictionary key that keeps ``True``, ``1`` and ``1.0`` apart (bool is an int subclass)."""
    return tuple((type(x).__name__, x) for x in label) if isinstance(label, tuple) else (type(label).__name__, label)


def _vector(values: ArrayLike, name: str) -> np.ndarray:
    """A non-empty 1-D float copy of finite non-negative values (:class:`MatrixError` naming the entry)."""
    try:
        v = np.array(values, dtype=float, copy=True)
    except (TypeError, ValueError) as exc:
        raise MatrixError(f"{name} is not numeric: {exc}") from None
    if v.ndim != 1 or v.size == 0:
        raise MatrixError(f"{name} must be a non-empty 1-D array, got shape {v.shape}")
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        raise MatrixError(f"entry {name}[{bad[0]}] is {v[bad[0]]} (entries must be finite)")
    bad = np.flatnonzero(v < 0)
    if bad.size:
        raise MatrixError(f"entry {name}[{bad[0]}] is negative ({v[bad[0]]!r})")
    return v


def _at_most_one(v: np.ndarray, name: str) -> None:
    """Refuse an entry above 1 (:class:`MatrixError` naming it): entries are probabilities, and a huge one
    would overflow a row's sum."""
    bad = np.flatnonzero(v > 1.0 + ROW_SUM_TOL)
    if bad.size:
        raise MatrixError(f"entry {name}[{bad[0]}] is {float(v[bad[0]])!r}, more than 1 (entries are probabilities)")


def _check_rows(sums: np.ndarray) -> None:
    """Every row sum within :data:`ROW_SUM_TOL` of 1 (:class:`MatrixError` naming the first row off)."""
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        k = int(bad[0])
        raise MatrixError(
            f"row {k} of the matrix sums to {float(sums[k])!r}, not 1 "
            f"(tolerance {ROW_SUM_TOL:g}); {bad.size} row(s) are off"
        )


# -- the forms of a matrix in JSON --------------------------------------------
@dataclass(frozen=True)
class MatrixForm:
    """How one form of matrix is written as JSON and read back.

    Parameters
    ----------
    stored : str
        What the form's fields hold (for the documentation).
    write : callable
        ``write(matrix) -> dict``: the form's fields.
    read : callable
        ``read(d, where, categories, provenance) -> PramMatrix``: the fields validated,
        :class:`pramkit.errors.ManifestError` naming the first malformed one.
    """

    stored: str
    write: Callable[[PramMatrix], dict[str, JSONValue]]
    read: Callable[[dict[str, Any], str, tuple, Provenance], PramMatrix]


def _read_form(d: dict[str, Any], where: str, cats: tuple, provenance: Provenance) -> PramMatrix:
    """The matrix of a parsed entry in its ``form`` (absent: ``"dense"``)."""
    form = d.get("form", "dense")
    if form not in FORMS:
        raise ManifestError(f"field '{where}.form' must be one of {list(FORMS)}, got {form!r}")
    return FORMS[form].read(d, where, cats, provenance)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _write_dense(m: PramMatrix) -> dict[str, JSONValue]:
    return {"matrix": m.matrix.tolist()}


def _read_dense(d: dict[str, Any], where: str, cats: tuple, provenance: Provenance) -> PramMatrix:
    """``matrix``: S rows of S numbers."""
    rows = d.get("matrix")
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ManifestError(f"field '{where}.matrix' must be a list of rows (lists of numbers)")
    for i, r in enumerate(rows):
        if len(r) != len(rows):
            raise ManifestError(f"field '{where}.matrix[{i}]' has {len(r)} entries; the matrix must be square")
        for j, x in enumerate(r):
            if not _is_number(x):
                raise ManifestError(f"field '{where}.matrix[{i}][{j}]' must be a number, got {x!r}")
    if len(rows) != len(cats):
        raise ManifestError(
            f"field '{where}.matrix' is {len(rows)} x {len(rows)} but '{where}.categories' has {len(cats)} labels"
        )
    try:
        return PramMatrix(rows, cats, provenance)
    except MatrixError as exc:
        raise ManifestError(f"field '{where}.matrix': {exc}") from None


def _write_diagonal(m: PramMatrix) -> dict[str, JSONValue]:
    w = m.form8_w
    assert w is not None, "a compact matrix is written as form (8)"
    return {"q": m.diagonal.tolist(), "w": w.tolist()}


def _read_diagonal(d: dict[str, Any], where: str, cats: tuple, provenance: Provenance) -> PramMatrix:
    """Form (8): ``q`` and ``w``, S numbers each, O(S)."""
    vectors = []
    for key in ("q", "w"):
        values = d.get(key)
        if not isinstance(values, list):
            raise ManifestError(f"field '{where}.{key}' must be a list of numbers (form 'diagonal')")
        if not all(map(_is_number, values)):
            i = next(i for i, x in enumerate(values) if not _is_number(x))
            raise ManifestError(f"field '{where}.{key}[{i}]' must be a number, got {values[i]!r}")
        if len(values) != len(cats):
            raise ManifestError(f"field '{where}.{key}' has {len(values)} entries but '{where}.categories' has "
                                f"{len(cats)} labels")
        vectors.append(values)
    try:
        return PramMatrix.form8(vectors[0], vectors[1], cats, provenance)
    except MatrixError as exc:
        raise ManifestError(f"fields '{where}.q' and '{where}.w': {exc}") from None


def _write_blocks(m: PramMatrix) -> dict[str, JSONValue]:
    """Each block's ``members`` (positions), then its own form's fields and ``design``."""
    out: list[JSONValue] = []
    for idx, part in m.blocks or ():
        entry = part.to_dict()
        del entry["categories"]  # the members' labels
        out.append({"members": idx.tolist(), **entry})
    return {"blocks": out}


def _read_blocks(d: dict[str, Any], where: str, cats: tuple, provenance: Provenance) -> PramMatrix:
    """``blocks``: each block's ``members`` and its matrix in a form other than ``"blocks"``."""
    blocks = d.get("blocks")
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        raise ManifestError(f"field '{where}.blocks' must be a non-empty list of objects (form 'blocks')")
    parts, seen = [], 0
    for i, b in enumerate(blocks):
        members = b.get("members")
        if not isinstance(members, list) or not members or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x < len(cats) for x in members):
            raise ManifestError(f"field '{where}.blocks[{i}].members' must be a non-empty list of positions in "
                                f"'{where}.categories' (0..{len(cats) - 1})")
        if b.get("form") == "blocks":
            raise ManifestError(f"field '{where}.blocks[{i}].form' must be 'dense' or 'diagonal'")
        part_provenance = Provenance.from_dict(b.get("design", {}), f"{where}.blocks[{i}].design")
        parts.append(_read_form(b, f"{where}.blocks[{i}]", tuple(cats[x] for x in members), part_provenance))
        seen += len(members)
    if seen != len(cats):
        raise ManifestError(f"field '{where}.blocks' covers {seen} positions but '{where}.categories' has "
                            f"{len(cats)} labels; each must be in exactly one block")
    try:
        return PramMatrix.block_diagonal(parts, cats, provenance)
    except MatrixError as exc:
        raise ManifestError(f"field '{where}.blocks': {exc}") from None


def _write_geometric(m: PramMatrix) -> dict[str, JSONValue]:
    return {"rate": m.geometric_rate}


def _read_geometric(d: dict[str, Any], where: str, cats: tuple, provenance: Provenance) -> PramMatrix:
    """``rate``: a positive number."""
    rate: Any = d.get("rate")
    if not _is_number(rate):
        raise ManifestError(f"field '{where}.rate' must be a number (form 'truncated_geometric')")
    try:
        return PramMatrix.truncated_geometric(float(rate), cats, provenance)
    except MatrixError as exc:
        raise ManifestError(f"field '{where}.rate': {exc}") from None


def _write_exponential(m: PramMatrix) -> dict[str, JSONValue]:
    """The rate and the public distances inline: their points (O(S)) or matrix, and edges for a path metric."""
    d = m.exponential_distances
    stored = {"points": d.points.tolist()} if d.points is not None else {"matrix": d.matrix.tolist()}
    return {"rate": m.exponential_rate,
            "distances": {"kind": d.kind, "unit": d.unit, "source": d.source, **stored,
                          **({"edges": d.edges.tolist()} if d.edges is not None else {})}}


def _read_exponential(d: dict[str, Any], where: str, cats: tuple, provenance: Provenance) -> PramMatrix:
    """``rate`` and the public ``distances`` (validated as when they were read:
    :class:`pramkit.distances.Distances`)."""
    from pramkit.errors import ParameterError

    rate: Any = d.get("rate")
    if not _is_number(rate):
        raise ManifestError(f"field '{where}.rate' must be a number (form 'exponential')")
    try:
        return PramMatrix.exponential(float(rate), _read_distances(d.get("distances"), where, cats), provenance)
    except (ParameterError, MatrixError) as exc:
        raise ManifestError(f"field '{where}.distances': {exc}") from None


def _read_distances(dist: Any, where: str, cats: tuple) -> Any:
    """An exponential mechanism's ``distances``: ``kind``, ``unit``, ``source``, ``points`` or
    ``matrix``, and ``edges`` only for the path metric they generate."""
    from pramkit.distances import Distances

    if not isinstance(dist, dict):
        raise ManifestError(f"field '{where}.distances' must be an object (form 'exponential')")
    for name in ("kind", "unit", "source"):
        if not isinstance(dist.get(name), str):
            raise ManifestError(f"field '{where}.distances.{name}' must be a string")
    if ("points" in dist) == ("matrix" in dist):
        raise ManifestError(f"field '{where}.distances' must give 'points' or 'matrix', one of the two")
    key = "points" if "points" in dist else "matrix"
    values, edges = _distance_values(dist[key], f"{where}.distances.{key}"), dist.get("edges")
    if edges is not None and not _positions(edges, len(cats)):
        raise ManifestError(f"field '{where}.distances.edges' must be pairs of positions in '{where}.categories'")
    public = (Distances(cats, None, dist["kind"], dist["unit"], edges, dist["source"], points=values)
              if key == "points" else Distances(cats, values, dist["kind"], dist["unit"], edges, dist["source"]))
    if edges is not None and not _path_metric(public):
        raise ManifestError(f"field '{where}.distances.edges' does not generate the distances (a path metric "
                            "is integer steps of the order, or hops of an adjacency graph)")
    return public


def _distance_values(values: Any, where: str) -> list:
    """Points or a distance matrix: a list of numbers, or of lists of numbers."""
    flat = values if isinstance(values, list) else None
    if flat is not None and any(isinstance(x, list) for x in flat):
        flat = [y for x in flat for y in (x if isinstance(x, list) else [None])]
    if flat is None or not all(_is_number(x) for x in flat):
        raise ManifestError(f"field '{where}' must be a list of numbers (or of lists of numbers)")
    return values


def _positions(edges: Any, n: int) -> bool:
    """Whether ``edges`` is a list of pairs of positions ``0 .. n-1``."""
    return isinstance(edges, list) and all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n
                                                     for i in e) for e in edges)


def _path_metric(dist: Any) -> bool:
    """Whether distances that claim edges are the path metric of those edges (steps or hops)."""
    from pramkit.distances import graph_distances, ordinal_distances

    if dist.kind == "ordinal":
        ref = ordinal_distances(dist.categories)
    elif dist.kind == "graph":
        ref = graph_distances(dist.categories, [(str(dist.categories[i]), str(dist.categories[j]))
                                                for i, j in dist.edges.tolist()])
    else:
        return False
    return dist.same(ref) and ref.edges is not None and np.array_equal(np.sort(np.sort(dist.edges, axis=1), axis=0),
                                             np.sort(np.sort(ref.edges, axis=1), axis=0))


#: The forms of a matrix in JSON (:meth:`PramMatrix.to_dict`, :meth:`PramMatrix.from_dict`), by ``form``.
FORMS: dict[str, MatrixForm] = {
    "dense": MatrixForm("matrix: S rows of S numbers", _write_dense, _read_dense),
    "diagonal": MatrixForm("q and w: form (8)'s diagonal and off-diagonal entry of each row, O(S)",
                           _write_diagonal, _read_diagonal),
    "blocks": MatrixForm("blocks: each block's members (positions in categories), form, fields and design",
                         _write_blocks, _read_blocks),
    "truncated_geometric": MatrixForm("rate: the mechanism on the order of the categories, O(1)",
                                      _write_geometric, _read_geometric),
    "exponential": MatrixForm("rate and the public distances inline (kind, unit, source, points or matrix, edges "
                              "of a path metric), O(S) by points", _write_exponential, _read_exponential),
}
