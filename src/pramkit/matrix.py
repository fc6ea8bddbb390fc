"""The PRAM matrix: a validated row-stochastic matrix with labels and provenance.

Convention (used everywhere in pramkit): ``M[k, j] = P(Z = j | X = k)``.  Rows
are the original categories, columns the released ones, and both are indexed by
the same ordered list of category labels.

Every design returns a :class:`PramMatrix`; every measure and the perturbation
engine take one; the manifest (:mod:`pramkit.manifest`) serialises it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import MatrixError
from pramkit.privacy.epsilon import matrix_epsilon

#: Tolerance on row sums (and column sums for the bistochastic check).
ROW_SUM_TOL = 1e-9

#: A category label: a JSON scalar.  ``None`` labels the "missing" category of
#: a variable whose missing values are declared a category of their own.  A
#: matrix over the cross-classification of several variables (a joint
#: perturbation) has tuples of scalars as labels.
Label = Union[str, int, float, bool, None, tuple]

JSONValue = Union[None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]


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

    method: name of the design (``"randomized_response"``, ``"dp_optimal"``, ...)
    parameters: the design's inputs (epsilon, p, ...), JSON-serialisable
    objective: value of the design's objective at the returned matrix
    objective_name: what ``objective`` measures, with its unit
        (e.g. ``"mutual_information_nats"``)
    certificate: evidence of optimality (bound, dual values, gap, ...)
    seconds: wall-clock time of the design
    """

    method: str = "user"
    parameters: Mapping[str, JSONValue] = field(default_factory=dict)
    objective: float | None = None
    objective_name: str | None = None
    certificate: Mapping[str, JSONValue] | None = None
    seconds: float | None = None

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "method": self.method,
            "parameters": dict(self.parameters),
            "objective": self.objective,
            "objective_name": self.objective_name,
            "certificate": None if self.certificate is None else dict(self.certificate),
            "seconds": self.seconds,
        }


@dataclass(frozen=True, eq=False)
class PramMatrix:
    """A validated PRAM transition matrix.

    Parameters
    ----------
    matrix : array-like, shape (S, S)
        ``matrix[k, j] = P(released j | original k)``; finite, non-negative,
        each row summing to 1 within ``1e-9``.
    categories : sequence of labels, length S
        Unique labels of the categories, in the order of rows and columns.
        Defaults to ``0, 1, ..., S-1``.
    provenance : Provenance
        The design that produced the matrix.

    The stored array is a read-only float64 copy.

    References
    ----------
    Gouweleeuw, Kooiman, Willenborg and de Wolf (1998), Post randomisation for
    statistical disclosure control.  Shlomo and Skinner (2012), section 4.
    """

    matrix: np.ndarray
    categories: tuple[Label, ...] = ()
    provenance: Provenance = field(default_factory=Provenance)

    def __post_init__(self) -> None:
        try:
            m = np.array(self.matrix, dtype=float, copy=True)
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
        sums = m.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
        if bad.size:
            k = int(bad[0])
            raise MatrixError(
                f"row {k} of the matrix sums to {sums[k]!r}, not 1 "
                f"(tolerance {ROW_SUM_TOL:g}); {bad.size} row(s) are off"
            )
        m.setflags(write=False)
        s = m.shape[0]
        cats = tuple(range(s)) if len(self.categories) == 0 else tuple(
            _plain_label(c) for c in self.categories
        )
        if len(cats) != s:
            raise MatrixError(f"{len(cats)} category labels given for a {s} x {s} matrix")
        seen: set[Any] = set()
        for c in cats:
            # bool is an int subclass: keep True and 1 apart.
            token = tuple((type(x).__name__, x) for x in c) if isinstance(c, tuple) else (type(c).__name__, c)
            if token in seen:
                raise MatrixError(f"category label {c!r} appears twice")
            seen.add(token)
        if not isinstance(self.provenance, Provenance):
            raise MatrixError("provenance must be a pramkit.Provenance")
        object.__setattr__(self, "matrix", m)
        object.__setattr__(self, "categories", cats)

    # -- constructors -----------------------------------------------------
    @classmethod
    def from_diagonal(
        cls,
        q: ArrayLike,
        categories: Sequence[Label] = (),
        provenance: Provenance | None = None,
    ) -> "PramMatrix":
        """Form (8) of Ayed, Battiston and Camerlenghi: keep category k with
        probability ``q[k]``, otherwise release one of the other S-1
        categories uniformly at random: ``M[k, j] = (1 - q[k]) / (S - 1)``.
        """
        qv = np.asarray(q, dtype=float)
        if qv.ndim != 1 or qv.size == 0:
            raise MatrixError("q must be a non-empty 1-D array of keep probabilities")
        if not np.all(np.isfinite(qv)) or np.any(qv < 0) or np.any(qv > 1):
            raise MatrixError(f"keep probabilities must lie in [0, 1], got {qv.tolist()}")
        s = qv.size
        if s == 1:
            if qv[0] != 1:
                raise MatrixError("a single category can only be kept (q = 1)")
            m = np.ones((1, 1))
        else:
            m = np.repeat(((1.0 - qv) / (s - 1))[:, None], s, axis=1)
            np.fill_diagonal(m, qv)
        return cls(m, tuple(categories), provenance or Provenance(method="diagonal"))

    @classmethod
    def identity(cls, categories: Sequence[Label]) -> "PramMatrix":
        """No perturbation (epsilon infinite for S >= 2)."""
        return cls(np.eye(len(categories)), tuple(categories), Provenance(method="identity"))

    # -- properties -------------------------------------------------------
    @property
    def size(self) -> int:
        """Number of categories S."""
        return self.matrix.shape[0]

    @cached_property
    def epsilon(self) -> float:
        """Epsilon (Shlomo and Skinner 2012, section 4) of the stored entries,
        rounded outward: the smallest double not below the exact value
        (:func:`pramkit.privacy.epsilon.matrix_epsilon`); ``inf`` when a column
        mixes zeros and positive entries."""
        return matrix_epsilon(self.matrix)

    @property
    def diagonal(self) -> np.ndarray:
        """The keep probabilities ``M[k, k]``."""
        return np.diagonal(self.matrix)

    @property
    def min_diagonal(self) -> float:
        return float(self.diagonal.min())

    @property
    def is_bistochastic(self) -> bool:
        """Columns also sum to 1 (within ``1e-9``): the uniform distribution is invariant."""
        return bool(np.all(np.abs(self.matrix.sum(axis=0) - 1.0) <= ROW_SUM_TOL))

    @property
    def is_truthful(self) -> bool:
        """Every diagonal entry is at least as large as every other entry of its row
        (to 1e-15: a diagonal of exactly 1/S leaves off-diagonal entries 1 ulp above it)."""
        return bool(np.all(self.diagonal >= self.matrix.max(axis=1) - 1e-15))

    @cached_property
    def form8_q(self) -> np.ndarray | None:
        """The diagonal q if the matrix has form (8) (in each row the off-diagonal
        entries are equal, to 1e-12 relative), else ``None``."""
        s = self.size
        if s == 1:
            return self.diagonal.copy()
        m = self.matrix
        off = (1.0 - self.diagonal) / (s - 1)
        mask = ~np.eye(s, dtype=bool)
        expected = np.broadcast_to(off[:, None], m.shape)
        if np.allclose(m[mask], expected[mask], rtol=1e-12, atol=1e-15):
            return self.diagonal.copy()
        return None

    def index_of(self, label: Label) -> int:
        """Position of a category label (:class:`MatrixError` if unknown)."""
        try:
            return self.categories.index(label)
        except ValueError:
            raise MatrixError(f"unknown category {label!r}; categories are {list(self.categories)}") from None

    def with_provenance(self, provenance: Provenance) -> "PramMatrix":
        return PramMatrix(self.matrix, self.categories, provenance)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PramMatrix):
            return NotImplemented
        return (
            self.categories == other.categories
            and self.provenance == other.provenance
            and np.array_equal(self.matrix, other.matrix)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        eps = self.epsilon
        return (
            f"PramMatrix(S={self.size}, epsilon={eps:.6g}, min_diagonal={self.min_diagonal:.6g}, "
            f"method={self.provenance.method!r})"
        )
