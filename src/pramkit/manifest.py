"""The release manifest: a versioned JSON file describing every perturbed variable.

It is published beside the released file, so analysts know exactly how the
data were perturbed (the matrix), what that guarantees (epsilon per variable
and per record) and how the matrix was designed (provenance).  The schema is
documented in ``docs/manifest.md``.  Reading a manifest validates every field
and names the first malformed one.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pramkit._json import read_json
from pramkit._version import __version__
from pramkit.atomic import write_text_atomic
from pramkit.errors import ManifestError
from pramkit.labels import Label, joint_cell
from pramkit.ledger import (
    NO_LEDGER,
    ExactFact,
    Ledger,
    epsilon_to_json,
    exact_words,
    kept_facts,
    kept_values,
    release_guarantee,
)
from pramkit.matrix import PramMatrix, Provenance
from pramkit.privacy.epsilon import record_epsilon
from pramkit.privacy.law import integer_epsilon, realised_law

FORMAT = "pramkit-manifest"
#: Version 5: the engine draws in integers on 62-bit uniforms, so that the law it realises is known
#: exactly (:mod:`pramkit.privacy.law`), and each variable states the epsilon of that law where it is
#: larger than its matrix's (``realised_law``).  Only this version is read: the same key released
#: other values under the earlier ones, which were never released.
VERSION = 5
MissingPolicy = Literal["keep", "category"]
_MISSING_POLICIES = ("keep", "category")
#: Most cells of a joint matrix whose margins (for records with some columns missing) are computed:
#: a margin is made from the dense matrix, 4096^2 entries being 134 MB.
MAX_MARGIN_CELLS = 4096
#: Relative tolerance when checking a stored epsilon against the matrix.
_EPS_TOL = 1e-9


@dataclass(frozen=True)
class PerturbedVariable:
    """One perturbed column of a release, or several columns perturbed jointly.

    Parameters
    ----------
    name : str
        The column's name in the data (for a joint variable, the name of its
        random stream, e.g. ``"age*sex*region"``).
    matrix : PramMatrix
        Its PRAM matrix, whose categories are the column's values; for a
        joint variable, tuples with one value per column (the cells of the
        cross-classification that the matrix covers).
    missing : {"keep", "category"}
        ``"keep"`` (missing values stay missing and are not perturbed, and no value
        becomes missing: which values are missing is released exactly, and the ledger
        says so; for a joint variable, a record with some columns missing keeps them
        missing and has its other columns perturbed by the matrix's margin over them,
        :meth:`margin`) or
        ``"category"`` (missing is a category, labelled ``None``, perturbed like
        the others; for a joint variable, a level of its columns).
    columns : tuple of str
        The columns perturbed jointly; empty (the default) means ``(name,)``.
    given : tuple of str
        Stratum columns, read and released unperturbed: the matrix's
        categories are then tuples ``(*given values, *column values)`` and the
        matrix is block-diagonal with a block per stratum, so that a value
        moves only within its stratum (:mod:`pramkit.structure`).
    unit : str or None
        The column identifying the unit of the draw (a household id): every
        record of a unit gets the same draw, so the members of a household,
        who share its original values, share its released values.
    applied_to : PramMatrix or None
        A derived release (``pramkit design --derive-from``): the matrix of the release this
        one perturbs again, on the same categories; the variable's epsilon is then that of
        the composed law (:func:`pramkit.privacy.law.composed_epsilon`).
    unpaired : mapping of str to tuple of labels
        For a joint variable whose missing values are kept: each perturbed column's values (with
        strata, ``(*strata values, value)`` tuples) that lie in no cell, because the edit rules
        forbid them with every value of the other columns.  The rules allow such a value only
        where another column is missing; a record holding one is released unperturbed (the
        ledger's fact ``"unpaired"``), where the matrix's margin has no row for it.

    Raises
    ------
    ManifestError
        A name is empty or repeated, the categories do not fit the columns (a tuple
        of one value per column for a joint variable, plain labels otherwise), or
        ``missing="category"`` without a ``None`` category.

    Examples
    --------
    Age and sex perturbed jointly: each category lists one value per column.

    >>> cells = [("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m")]
    >>> v = PerturbedVariable("age*sex", PramMatrix.form8([0.9] * 4, categories=cells), columns=("age", "sex"))
    >>> v.is_joint, v.read_columns, math.isclose(v.epsilon, math.log(0.9 / (0.1 / 3)))
    (True, ('age', 'sex'), True)
    >>> PerturbedVariable("age*sex", PramMatrix.form8([0.9, 0.9], categories=["a", "b"]), columns=("age", "sex"))
    Traceback (most recent call last):
    ...
    pramkit.errors.ManifestError: variable 'age*sex' reads 2 columns jointly, so each category must list 2 values; 'a' does not
    """

    name: str
    matrix: PramMatrix
    missing: MissingPolicy = "keep"
    columns: tuple[str, ...] = ()
    given: tuple[str, ...] = ()
    unit: str | None = None
    applied_to: PramMatrix | None = None
    unpaired: Mapping[str, tuple[Label, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ManifestError("a perturbed variable needs a non-empty name")
        if self.missing not in _MISSING_POLICIES:
            raise ManifestError(f"missing must be one of {_MISSING_POLICIES}, not {self.missing!r}")
        object.__setattr__(self, "columns", self._checked_columns())
        object.__setattr__(self, "given", self._checked_given())
        self._check_unit()
        self._check_categories()
        self._check_derived()
        object.__setattr__(self, "unpaired", self._checked_unpaired())
        self._check_missing_category()

    def _checked_columns(self) -> tuple[str, ...]:
        """:attr:`columns` as a tuple (the name's column when empty), distinct non-empty names."""
        columns = tuple(self.columns) or (self.name,)
        if not all(isinstance(c, str) and c for c in columns) or len(set(columns)) != len(columns):
            raise ManifestError(f"variable {self.name!r}: columns must be distinct non-empty names, got {columns}")
        return columns

    def _checked_given(self) -> tuple[str, ...]:
        """:attr:`given` as a tuple: distinct names other than the perturbed columns."""
        given = tuple(self.given)
        if not all(isinstance(c, str) and c for c in given) or set(given) & set(self.columns) \
                or len(set(given)) != len(given):
            raise ManifestError(f"variable {self.name!r}: the stratum columns must be distinct names other than "
                                f"the perturbed columns, got {given}")
        return given

    def _check_unit(self) -> None:
        """The unit (household id), if any, is a column other than the variable's own."""
        if self.unit is not None and (not isinstance(self.unit, str) or not self.unit
                                      or self.unit in self.columns + self.given):
            raise ManifestError(f"variable {self.name!r}: the unit must be a column other than the variable's own, "
                                f"got {self.unit!r}")

    def _check_categories(self) -> None:
        """A joint variable's categories list one value per read column; a single column's are plain labels."""
        if self.is_joint:
            width = len(self.given) + len(self.columns)
            bad = [c for c in self.matrix.categories if not (isinstance(c, tuple) and len(c) == width)]
            if bad:
                raise ManifestError(
                    f"variable {self.name!r} reads {width} columns jointly, so each category must "
                    f"list {width} values; {bad[0]!r} does not"
                )
        elif any(isinstance(c, tuple) for c in self.matrix.categories):
            raise ManifestError(f"variable {self.name!r}: tuple categories need several columns")

    def _check_derived(self) -> None:
        """A derived variable perturbs one column again, on the categories of the matrix it is applied to."""
        if self.applied_to is not None and (self.is_joint or self.unit is not None or self.applied_to.blocks
                                            or self.applied_to.categories != self.matrix.categories):
            raise ManifestError(f"variable {self.name!r}: a derived variable perturbs one column again, on the "
                                "categories of the matrix it is applied to, without strata, kept codes or households")

    def _check_missing_category(self) -> None:
        """``missing="category"`` needs a null among the variable's own values."""
        own = [c[len(self.given):] if isinstance(c, tuple) else (c,) for c in self.matrix.categories]
        if self.missing == "category" and not any(x is None for c in own for x in c):
            raise ManifestError(
                f"variable {self.name!r}: missing is declared a category, so null must be one of its categories"
            )

    def _checked_unpaired(self) -> dict[str, tuple[Label, ...]]:
        """:attr:`unpaired` as a plain dict of tuples, checked: own columns of a joint variable whose
        missing values are kept, each label a value (with strata, one per stratum column first) in no cell."""
        unpaired = {str(c): tuple(tuple(x) if isinstance(x, list) else x for x in values)
                    for c, values in dict(self.unpaired or {}).items() if values}
        if not unpaired:
            return {}
        from pramkit.codebook import canonical
        if not self.own_columns_joint or self.missing != "keep" or self.unit is not None:
            raise ManifestError(f"variable {self.name!r}: only a joint variable whose missing values are kept has "
                                "unpaired values (values the rules allow only with another column missing)")
        g = len(self.given)
        for column, values in unpaired.items():
            if column not in self.columns:
                raise ManifestError(f"variable {self.name!r}: unpaired values of {column!r}, which is not one of its "
                                    f"columns {list(self.columns)}")
            at = g + self.columns.index(column)
            cells = {tuple(canonical(x) for x in (*joint_cell(c)[:g], joint_cell(c)[at])) for c in self.matrix.categories}
            for x in values:
                self._check_unpaired_value(column, x, cells)
        return unpaired

    def _check_unpaired_value(self, column: str, x: Any, cells: set[tuple]) -> None:
        """One unpaired value ``x`` of ``column``: the strata's values then the column's, not missing,
        in no cell of ``cells`` (the canonical texts of the strata's and the column's values)."""
        from pramkit.codebook import canonical

        g = len(self.given)
        label = x if isinstance(x, tuple) else (x,)
        if len(label) != g + 1 or not all(v is None or isinstance(v, (str, int, float)) for v in label):
            raise ManifestError(f"variable {self.name!r}: an unpaired value of {column!r} must be "
                                + ("a value" if not g else f"a list of {g + 1} values, the strata first")
                                + f", got {x!r}")
        if label[-1] is None or tuple(canonical(v) for v in label) in cells:
            raise ManifestError(f"variable {self.name!r}: the unpaired value {x!r} of {column!r} is "
                                + ("missing" if label[-1] is None else "in a cell of the matrix"))

    def holds_unpaired(self, column: str, label: tuple) -> bool:
        """Whether ``label`` (the strata's values, then ``column``'s) is one of :attr:`unpaired`.

        Examples
        --------
        >>> cells = [("16+", "work"), ("16+", "none")]
        >>> v = PerturbedVariable("age*status", PramMatrix.form8([0.7, 0.7], categories=cells),
        ...                       columns=("age", "status"), unpaired={"age": ("0-15",)})
        >>> v.holds_unpaired("age", ("0-15",)), v.holds_unpaired("age", ("16+",))
        (True, False)
        """
        from pramkit.codebook import canonical

        texts = {tuple(canonical(v) for v in (x if isinstance(x, tuple) else (x,)))
                 for x in self.unpaired.get(column, ())}
        return tuple(canonical(v) for v in label) in texts

    def joint_levels(self) -> list[list[Label]]:
        """Each read column's values, as the engine encodes them: the cells' values in order of first
        appearance, then the column's unpaired values.

        Examples
        --------
        >>> cells = [("16+", "work"), ("16+", "none")]
        >>> PerturbedVariable("age*status", PramMatrix.form8([0.7, 0.7], categories=cells),
        ...                   columns=("age", "status"), unpaired={"age": ("0-15",)}).joint_levels()
        [['16+', '0-15'], ['work', 'none']]
        """
        from pramkit.codebook import canonical

        g = len(self.given)
        out: list[list[Label]] = []
        for i, column in enumerate(self.read_columns):
            seen: dict[str | None, Label] = {}
            for c in self.matrix.categories:
                seen.setdefault(canonical(joint_cell(c)[i]), joint_cell(c)[i])
            for x in self.unpaired.get(column, ()) if i >= g else ():
                value = x[-1] if isinstance(x, tuple) else x
                seen.setdefault(canonical(value), value)
            out.append(list(seen.values()))
        return out

    def joint_codebook(self) -> Any:
        """The :class:`pramkit.codebook.JointCodebook` of a joint variable: its cells, over the read
        columns' values (:meth:`joint_levels`: the cells', then the unpaired ones).

        Examples
        --------
        >>> cells = [("16+", "work"), ("16+", "none")]
        >>> v = PerturbedVariable("age*status", PramMatrix.form8([0.7, 0.7], categories=cells),
        ...                       columns=("age", "status"), unpaired={"age": ("0-15",)})
        >>> v.joint_codebook().levels
        [['16+', '0-15'], ['work', 'none']]
        """
        from pramkit.codebook import JointCodebook

        return JointCodebook([joint_cell(c) for c in self.matrix.categories], self.read_columns,
                             self.joint_levels() if self.unpaired else None)

    @property
    def is_joint(self) -> bool:
        """Categories are tuples: several columns perturbed jointly, or given strata."""
        return len(self.columns) + len(self.given) > 1

    @property
    def read_columns(self) -> tuple[str, ...]:
        """The columns a category's values come from: the strata, then the perturbed columns."""
        return self.given + self.columns

    @cached_property
    def epsilon(self) -> float:
        """The stated epsilon (computed once: a derived variable's is an S^3 product of integers): the matrix's, or the exact epsilon of the law the engine realises
        (:func:`pramkit.engine.realised_law`) where that is larger; infinite when its blocks (strata,
        kept codes) are released exactly; of a derived variable, the composed law's."""
        return _stated_epsilon(self.matrix, self.applied_to)

    @cached_property
    def release_matrix(self) -> PramMatrix:
        """The law from the original value to the released one, which estimates invert: the matrix, or,
        for a derived variable, the product of the matrix it is applied to and its own.

        Examples
        --------
        >>> rr = PramMatrix.form8([0.75, 0.75], categories=["f", "m"])
        >>> PerturbedVariable("sex", rr, applied_to=rr).release_matrix.matrix.tolist()
        [[0.625, 0.375], [0.375, 0.625]]
        """
        if self.applied_to is None:
            return self.matrix
        return PramMatrix(self.applied_to.matrix @ self.matrix.matrix, self.matrix.categories,
                          Provenance("composed", {"first": self.applied_to.provenance.method,
                                                  "second": self.matrix.provenance.method}))

    @property
    def block_epsilon(self) -> float:
        """Epsilon given the block of the value (its stratum, whether it is a kept code): the larger of
        :attr:`pramkit.PramMatrix.block_epsilon` and the realised law's (a derived variable: :attr:`epsilon`)."""
        if self.applied_to is not None:
            return self.epsilon
        return max(self.matrix.block_epsilon, realised_law(self.matrix).block_epsilon)

    @property
    def is_structured(self) -> bool:
        """The matrix has two blocks or more: some distinction (a stratum, a kept code) is released exactly."""
        blocks = self.matrix.blocks
        return blocks is not None and len(blocks) > 1

    def unchanged_values(self) -> list[Label]:
        """The variable's own values that its matrix never changes (blocks of one category:
        kept codes, or the one value a stratum allows), without repeats.

        Returns
        -------
        list of labels
            The variable's values (the strata's values left out); empty without blocks.

        Examples
        --------
        >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.8, 0.8]), PramMatrix.identity(["n/a"])])
        >>> PerturbedVariable("occupation", m).unchanged_values()
        ['n/a']
        """
        if self.matrix.blocks is None:
            return []
        return kept_values(self.matrix.categories, [idx for idx, _ in self.matrix.blocks], len(self.given))[0]

    def classes(self) -> list[list[Label]]:
        """The classes of the variable's values that its release shows exactly beyond its strata and
        the values it never changes: the blocks of its matrix (the classes of
        :func:`pramkit.design.bistochastic.families.k_anonymity`) that share a stratum and the same
        values never changed, so that nothing but the block tells them apart.

        A value of a perturbed column never changes when every block holding it holds no other
        value of that column (a kept code).  Blocks with the same strata and the same such values
        are what strata and kept codes explain only when there is one of them; when there are
        several, the block itself (the class) is released exactly.

        Returns
        -------
        list of list of labels
            Each such class's own values (the strata's left out), in the matrix's order, without
            repeats across strata; empty when the strata and kept codes explain every block.

        Examples
        --------
        >>> from pramkit.design.bistochastic.families import k_anonymity
        >>> PerturbedVariable("age", k_anonymity(["0-9", "10-19", "20-29", "30-39", "40+"], 2)).classes()
        [['0-9', '10-19', '20-29'], ['30-39', '40+']]
        >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.8, 0.8]), PramMatrix.identity(["n/a"])])
        >>> PerturbedVariable("occupation", m).classes()   # a kept code: explained
        []
        """
        blocks = self.matrix.blocks
        if blocks is None or len(blocks) < 2:
            return []
        g = len(self.given)
        rows = [c if isinstance(c, tuple) else (c,) for c in self.matrix.categories]
        moves = _moving_values(rows, [idx for idx, _ in blocks], g)
        groups: dict[tuple, list[np.ndarray]] = {}
        for idx, _ in blocks:
            groups.setdefault(_class_key(rows[int(idx[0])], g, moves), []).append(idx)
        own = [r[g:] if len(r) - g > 1 else r[g] for r in rows]
        found = [tuple(own[int(i)] for i in idx) for group in groups.values() if len(group) > 1 for idx in group]
        return [list(c) for c in dict.fromkeys(found)]

    def _class_words(self) -> str | None:
        """"which class of V's categories each value lies in (...)", or ``None`` without classes."""
        classes = self.classes()
        return ExactFact.of("block", (self.name,), values=classes).reveals if classes else None

    @property
    def own_columns_joint(self) -> bool:
        """Several perturbed columns (not counting strata): a record may miss some and not others."""
        return len(self.columns) > 1

    def margin(self, present: tuple[int, ...]) -> tuple[list[tuple], PramMatrix]:
        """The matrix's margin over the columns at positions ``present`` of :attr:`read_columns`:
        how a record whose other columns are missing is perturbed.

        Row ``c`` (a combination of the present columns' values) is the average, over the
        cells whose present values are ``c``, of their rows summed over the cells of each
        released combination.  Each row is a convex combination of rows of the matrix, so
        between two records of one block of the matrix its epsilon is at most the block's;
        :attr:`epsilon_given_shown` computes it for every margin when the matrix has blocks.

        Parameters
        ----------
        present : tuple of int
            Positions in :attr:`read_columns`, increasing, the strata's included.

        Returns
        -------
        labels : list of tuple
            The combinations of the present values, in the order of first appearance.
        matrix : PramMatrix
            The margin, over ``labels``.

        Raises
        ------
        DataError
            The matrix has more than :data:`MAX_MARGIN_CELLS` cells.

        Examples
        --------
        Randomized response on the four cells of age x sex: a record with sex missing gets
        age through the margin, randomized response on age at the same epsilon.

        >>> cells = [("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m")]
        >>> v = PerturbedVariable("age*sex", PramMatrix.form8([0.7] * 4, categories=cells), columns=("age", "sex"))
        >>> labels, m = v.margin((0,))
        >>> labels, m.matrix.round(4).tolist()
        ([('0-17',), ('18+',)], [[0.8, 0.2], [0.2, 0.8]])
        >>> m.epsilon <= v.epsilon
        True
        """
        cache = self._margins
        if present not in cache:
            from pramkit.errors import DataError

            cats = self.matrix.categories
            if len(cats) > MAX_MARGIN_CELLS:
                raise DataError(f"variable {self.name!r} has {len(cats):,} cells, more than {MAX_MARGIN_CELLS:,}: a "
                                "record with some of its columns missing cannot be perturbed by the matrix's margin; "
                                "code a missing value as a category")
            proj = [tuple(joint_cell(c)[i] for i in present) for c in cats]
            labels = list(dict.fromkeys(proj))
            pos = {label: i for i, label in enumerate(labels)}
            code = np.array([pos[p] for p in proj], dtype=np.intp)
            onehot = np.zeros((len(cats), len(labels)))
            onehot[np.arange(len(cats)), code] = 1.0
            summed = self.matrix.matrix @ onehot          # each cell's row, summed by released combination
            rows = np.zeros((len(labels), len(labels)))
            np.add.at(rows, code, summed)
            rows /= np.bincount(code, minlength=len(labels))[:, None]
            rows /= rows.sum(axis=1, keepdims=True)        # exact up to rounding: each row sums to 1
            cache[present] = (labels, PramMatrix(rows, [_label(x) for x in labels], self.matrix.provenance))
        return cache[present]

    @cached_property
    def _margins(self) -> dict[tuple[int, ...], tuple[list[tuple], PramMatrix]]:
        return {}

    def margin_patterns(self) -> list[tuple[int, ...]]:
        """The positions of :attr:`read_columns` present in a record that misses some perturbed columns
        but not all, nor a stratum (:meth:`margin`).

        Returns
        -------
        list of tuple of int
            Empty for a variable of one perturbed column.

        Examples
        --------
        >>> cells = [("n", "0-17", "f"), ("n", "18+", "m")]
        >>> v = PerturbedVariable("age*sex", PramMatrix.form8([0.7] * 2, categories=cells), columns=("age", "sex"),
        ...                       given=("region",))
        >>> v.margin_patterns()
        [(0, 1), (0, 2)]
        """
        own = range(len(self.given), len(self.read_columns))
        strata = tuple(range(len(self.given)))
        return [strata + kept for r in range(1, len(self.columns)) for kept in itertools.combinations(own, r)]

    @cached_property
    def epsilon_given_shown(self) -> float:
        """The variable's epsilon given what its release shows exactly: :attr:`block_epsilon`, or
        the largest epsilon of a connected part of a margin (:meth:`margin`) when it is larger.

        When the cells that agree on the present values always lie in one block (no blocks;
        strata; kept codes of a present column), each row of a margin is a convex combination
        of rows of one block, and the bound of the block holds as it is.  Otherwise (a kept
        code of a missing column) the margin mixes blocks and its epsilon is computed, a
        record being perturbed by one part of one margin (parallel composition).

        Examples
        --------
        Age x status with the code ``n/a`` of status kept: a record whose status is missing gets
        its age from a margin that mixes the kept block and the others, so its bound is larger.

        >>> cells = [(a, s) for a in ("child", "adult") for s in ("work", "none")] + [("child", "n/a")]
        >>> free = PramMatrix.form8([0.4] * 4, categories=cells[:4])
        >>> m = PramMatrix.block_diagonal([free, PramMatrix.identity([cells[4]])], cells)
        >>> v = PerturbedVariable("age*status", m, columns=("age", "status"))
        >>> v.epsilon_given_shown > v.block_epsilon
        True
        """
        eps = self.block_epsilon
        if not self.own_columns_joint or self.missing != "keep" or len(self.matrix.categories) > MAX_MARGIN_CELLS:
            return eps
        block = np.zeros(len(self.matrix.categories), dtype=np.intp)
        for b, (idx, _) in enumerate(self.matrix.blocks or ()):
            block[idx] = b
        for present in self.margin_patterns():
            # when the cells that agree on the present values lie in one block, each margin row is a convex
            # combination of rows of one block and the blocks' projections are disjoint: the matrix's bound
            # holds as is, and only the law the engine realises for the margin is computed
            seen: dict[tuple, int] = {}
            spans = any(seen.setdefault(tuple(joint_cell(c)[i] for i in present), int(b)) != b
                        for c, b in zip(self.matrix.categories, block))
            eps = max(eps, _component_epsilon(self.margin(present)[1], matrix=spans))
        return eps

    def exact_facts(self) -> list[ExactFact]:
        """What the release of this variable shows exactly (:class:`pramkit.ledger.ExactFact`),
        strata and household ids left to :attr:`Manifest.exact_facts`.

        Returns
        -------
        list of ExactFact

        Examples
        --------
        >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.8, 0.8]), PramMatrix.identity(["n/a"])])
        >>> [f.kind for f in PerturbedVariable("occupation", m).exact_facts()]
        ['kept_code', 'missing']
        """
        classes = self.classes()
        facts = [ExactFact.of("block", (self.name,), values=classes)] if classes else []
        facts += self._kept_facts()
        if self.missing == "keep":
            facts.append(ExactFact.of("joint_missing", (self.name,), values=self.columns) if self.own_columns_joint
                         else ExactFact.of("missing", (self.name,)))
        if self.given:
            facts.append(ExactFact.of("stratum_missing", (self.name,), values=self.columns, column=", ".join(self.given)))
        if self.unpaired:
            shown = tuple(f"{c}={x[-1] if isinstance(x, tuple) else x}" for c, xs in self.unpaired.items() for x in xs)
            facts.append(ExactFact.of("unpaired", (self.name,), values=tuple(dict.fromkeys(shown)),
                                      column=", ".join(self.columns)))
        return facts

    def _kept_facts(self) -> list[ExactFact]:
        """The variable's ``"kept_code"`` facts (:func:`pramkit.ledger.kept_facts`)."""
        if not self.is_structured:
            return []
        return kept_facts(self.name, self.matrix.categories, [idx for idx, _ in self.matrix.blocks or ()], self.given)

    def structure_words(self) -> str | None:
        """What a structured variable releases exactly, in words (``None`` if nothing).

        Returns
        -------
        str or None
            The strata and the values the matrix never changes, for the manifest's
            ``released_exactly`` and the guarantee sentence.

        Examples
        --------
        >>> m = PramMatrix.block_diagonal([PramMatrix.form8([0.8, 0.8]), PramMatrix.identity(["n/a"])])
        >>> PerturbedVariable("occupation", m).structure_words()
        "whether occupation is one of the values it never changes ('n/a')"
        """
        if not self.is_structured:
            return None
        parts = [f"the strata of {self.name} ({', '.join(self.given)})"] if self.given else []
        parts += [w for w in (self._class_words(), self._unchanged_words()) if w]
        return " and ".join(parts) if parts else f"the block of {self.name}'s value"

    def _unchanged_words(self) -> str | None:
        """"whether V is one of the values it never changes (...)" (and where), or ``None`` when there are none."""
        return " and ".join(f.reveals for f in self._kept_facts()) or None

    def to_dict(self) -> dict[str, Any]:
        """The variable as JSON values, its matrix written by :meth:`pramkit.PramMatrix.to_dict`
        in its form (:data:`pramkit.matrix.FORMS`: a form (8) matrix as ``"diagonal"`` with ``q``
        and ``w``, O(S); block by block; the truncated geometric and exponential mechanisms by
        their parameters; any other ``"dense"``, S x S).

        Returns
        -------
        dict
            The manifest's entry for the variable: its columns, categories (tuples as
            lists), entries, epsilon (``"inf"`` when infinite), flags and design provenance.

        Examples
        --------
        Form (8) is written in O(S), and its epsilon (Shlomo and Skinner 2012,
        section 4; Ayed, Battiston and Camerlenghi, condition (10)) is the largest
        log-ratio within a column:

        >>> d = PerturbedVariable("sex", PramMatrix.form8([0.8, 0.7], categories=["f", "m"])).to_dict()
        >>> d["form"], d["q"], [round(w, 12) for w in d["w"]]
        ('diagonal', [0.8, 0.7], [0.2, 0.3])
        >>> math.isclose(d["epsilon"], math.log(0.7 / 0.2))
        True
        >>> PerturbedVariable("age", PramMatrix.truncated_geometric(0.5, ["0-17", "18-64", "65+"])).to_dict()["rate"]
        0.5
        """
        m = self.matrix
        entries = m.to_dict()
        design = entries.pop("design")
        return {
            "name": self.name,
            "columns": list(self.columns),
            **({"given": list(self.given)} if self.given else {}),
            **({"unit": self.unit} if self.unit is not None else {}),
            **entries,
            "epsilon": epsilon_to_json(self.epsilon),
            "realised_law": _realised(m),
            **({"epsilon_given_block": epsilon_to_json(self.block_epsilon),
                "released_exactly": self.structure_words()} if self.is_structured else {}),
            "missing": self.missing,
            "bistochastic": m.is_bistochastic,
            "min_diagonal": m.min_diagonal,
            "design": design,
            **({"applied_to": self.applied_to.to_dict()} if self.applied_to is not None else {}),
            **({"unpaired": {c: [list(x) if isinstance(x, tuple) else x for x in xs]
                             for c, xs in self.unpaired.items()}} if self.unpaired else {}),
        }


def _stated_epsilon(matrix: PramMatrix, applied_to: PramMatrix | None) -> float:
    """A variable's epsilon: of its matrix or the realised law (the larger), or of the law composed
    with the matrix it is applied to."""
    if applied_to is None:
        return max(matrix.epsilon, realised_law(matrix).epsilon)
    from pramkit.privacy.law import composed_epsilon

    return composed_epsilon(applied_to, matrix)


def _moving_values(rows: list[tuple], blocks: list[np.ndarray], start: int) -> list[set]:
    """For each column from ``start`` on, the values that share a block with another value of it
    (the values a matrix can change)."""
    moves: list[set] = [set() for _ in rows[0]]
    for idx in blocks:
        for col in range(start, len(rows[0])):
            values = {rows[i][col] for i in idx}
            if len(values) > 1:
                moves[col] |= values
    return moves


def _class_key(first: tuple, start: int, moves: list[set]) -> tuple:
    """What tells a block apart besides itself, from its ``first`` row: its strata's values (the
    ``start`` first), then for each column whether its value moves (``moves``), and if not, which it is."""
    return first[:start] + tuple((False,) if first[c] in moves[c] else (True, first[c])
                                 for c in range(start, len(first)))


def _check_variable_columns(variables: tuple[PerturbedVariable, ...]) -> None:
    """Each variable's name once, each column perturbed by one variable and never also a stratum or a
    household id."""
    names = [v.name for v in variables]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ManifestError(f"variable(s) {sorted(dup)} appear more than once")
    columns = [c for v in variables for c in v.columns]
    dup = {c for c in columns if columns.count(c) > 1}
    if dup:
        raise ManifestError(f"column(s) {sorted(dup)} are perturbed by more than one variable")
    both = sorted({c for v in variables for c in (*v.given, *([v.unit] if v.unit else []))} & set(columns))
    if both:
        raise ManifestError(f"column(s) {both} are perturbed, so they cannot also be a stratum or a household id "
                            "(those are released unperturbed)")


def _realised(m: PramMatrix) -> dict[str, Any]:
    """What the manifest says of the law the engine realises (:func:`pramkit.engine.realised_law`)."""
    law = realised_law(m)
    if law.exact:
        return {"exact": True, "closed_form": law.closed_form, "epsilon": epsilon_to_json(law.epsilon)}
    return {"exact": False, "denominator": f"2^{law.bits}", "epsilon": epsilon_to_json(law.epsilon),
            **({"epsilon_given_block": epsilon_to_json(law.block_epsilon)} if law.form == "blocks" else {})}


def _label(values: tuple) -> Label:
    """A margin's category: the value itself for one column, else the tuple."""
    return values[0] if len(values) == 1 else values


def _component_epsilon(m: PramMatrix, *, matrix: bool = True) -> float:
    """The largest epsilon of the connected parts of a matrix's support (the blocks a record
    cannot leave), each part's rows and columns taken on their own: of the law the engine
    realises (:func:`pramkit.engine.realised_law`) and, with ``matrix``, of the matrix itself.

    Examples
    --------
    >>> _component_epsilon(PramMatrix([[1, 0, 0], [0, 0.8, 0.2], [0, 0.2, 0.8]]))  # doctest: +ELLIPSIS
    1.386...
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    dense = m.matrix
    law = realised_law(m)
    units = law.unit_matrix()
    n, label = connected_components(csr_matrix(dense > 0), directed=True, connection="weak")
    eps = 0.0
    for part in range(n):
        idx = np.flatnonzero(label == part)
        if idx.size > 1:
            sub = units[np.ix_(idx, idx)]
            eps = max(eps, integer_epsilon(sub.max(axis=0), sub.min(axis=0)))
            if matrix:
                sub = dense[np.ix_(idx, idx)]
                eps = max(eps, PramMatrix(sub / sub.sum(axis=1, keepdims=True)).epsilon)
    return eps


@dataclass(frozen=True)
class Manifest:
    """Every perturbed variable of a release, perturbed independently of each other.

    The record's epsilon is the design step's epsilon (the ledger's) plus the
    sum of the variables' epsilons (sequential composition, rounded outward);
    see :mod:`pramkit.ledger`.  A manifest is public: ``input`` and ``ledger``
    hold nothing computed from the original data outside the ledger (the holder's
    private :class:`pramkit.release.record.DesignRecord` is the other part of a
    :class:`pramkit.release.record.Release`, never an attribute of the manifest).

    Parameters
    ----------
    variables : sequence of PerturbedVariable
        At least one; no name or column twice.
    input : mapping
        Public facts about the design (method, split, budget, structure, ...).
    created : str
        UTC time stamp (ISO 8601); default: now.
    pramkit_version : str
        The version that wrote the manifest.
    ledger : Ledger, optional
        The privacy ledger; without one the design step counts nothing and the
        guarantee sentence says that nothing records how the matrices were designed.
    swapping : mapping, optional
        The public description of a record swap whose expected matrix is the variable's
        (:meth:`pramkit.swap.SwapPlan.section`), with its guarantee in words.

    Raises
    ------
    ManifestError
        No variable, a name or column twice, or a perturbed column that is also a
        stratum or a household id.

    Examples
    --------
    Two variables and a design step of 0.1: the record's epsilon is their sum.

    >>> from pramkit.ledger import ExactFact, Ledger, epsilon_to_json, exact_words
    >>> m = Manifest.of({"sex": PramMatrix.form8([0.8, 0.7], categories=["f", "m"]),
    ...                  "age": PramMatrix.truncated_geometric(math.log(2), ["0-17", "18-64", "65+"])},
    ...                 ledger=Ledger(design_epsilon=0.1, frequencies="dp_counts"))
    >>> math.isclose(m.record_epsilon, 0.1 + m["sex"].epsilon + m["age"].epsilon)
    True
    >>> m.names, m.columns
    (['sex', 'age'], ['sex', 'age'])
    """

    variables: tuple[PerturbedVariable, ...]
    input: Mapping[str, Any] = field(default_factory=dict)
    created: str = ""
    pramkit_version: str = __version__
    ledger: Ledger | None = None
    swapping: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        variables = tuple(self.variables)
        if not variables:
            raise ManifestError("a manifest needs at least one perturbed variable")
        _check_variable_columns(variables)
        object.__setattr__(self, "variables", variables)
        if not self.created:
            stamp = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
            object.__setattr__(self, "created", stamp)

    @classmethod
    def of(cls, matrices: Mapping[str, PramMatrix], **kwargs: Any) -> Manifest:
        """A manifest from ``{column name: matrix}`` (missing values kept).

        Parameters
        ----------
        matrices : mapping of str to PramMatrix
            One single-column variable per entry.
        **kwargs
            The other fields of :class:`Manifest` (``input``, ``ledger``, ...).

        Returns
        -------
        Manifest

        Examples
        --------
        >>> from pramkit.design.classic import randomized_response
        >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
        >>> m["sex"].missing, m.record_epsilon <= 1.0, m.ledger is None
        ('keep', True, True)
        """
        return cls(tuple(PerturbedVariable(n, m) for n, m in matrices.items()), **kwargs)

    @property
    def perturbation_epsilon(self) -> float:
        """The sum of the variables' epsilons (rounded outward)."""
        return record_epsilon([v.epsilon for v in self.variables])

    @property
    def record_epsilon(self) -> float:
        """The record's epsilon: the design step (ledger) plus the perturbation; infinite when
        a structure (strata, kept codes) releases some distinction exactly."""
        eps = [v.epsilon for v in self.variables]
        return record_epsilon(eps) if self.ledger is None else self.ledger.total(eps)

    @property
    def is_structured(self) -> bool:
        """Some variable releases its block (stratum, kept code) exactly."""
        return any(v.is_structured for v in self.variables)

    @property
    def structure_condition(self) -> str | None:
        """What the structure releases exactly, in words (``None`` without structure): the
        stratum columns (released unperturbed) and the values each variable never changes."""
        structured = [v for v in self.variables if v.is_structured]
        if not structured:
            return None
        strata = list(dict.fromkeys(c for v in structured for c in v.given))
        words = [f"the strata ({', '.join(strata)}, released unperturbed)"] if strata else []
        words += [w for v in structured for w in (v._class_words(), v._unchanged_words()) if w]
        return "; ".join(words) if words else "the block of each value"

    @property
    def record_epsilon_given_structure(self) -> float:
        """The record's epsilon among records that agree on what the release shows exactly
        (:attr:`exact_facts`: their strata, which values are kept codes, which are missing):
        the design step plus each variable's :attr:`PerturbedVariable.epsilon_given_shown`;
        :attr:`record_epsilon` without structure."""
        eps = [v.epsilon_given_shown for v in self.variables]
        return record_epsilon(eps) if self.ledger is None else self.ledger.total(eps)

    @property
    def exact_facts(self) -> tuple[ExactFact, ...]:
        """Every kind of value the release shows exactly, as the original holds it: the strata,
        kept codes, missingness (of a variable whose missing values stay missing), records
        with a missing stratum, rule breakers kept (``input.structure.rule_breaking``) and
        household ids.  Derived from the matrices and the structure, never read from a file;
        :meth:`pramkit.ledger.Ledger.statement` writes the guarantee sentence from them.

        Returns
        -------
        tuple of ExactFact

        Examples
        --------
        >>> from pramkit.design.classic import randomized_response
        >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
        >>> [(f.kind, f.reveals) for f in m.exact_facts]
        [('missing', 'which values of sex are missing')]
        """
        per_variable = [f for v in self.variables for f in v.exact_facts()]
        return (*self._strata_facts(),
                *(f for f in per_variable if f.kind in ("block", "kept_code")),
                *self._missing_facts(per_variable),
                *(f for f in per_variable if f.kind not in ("block", "kept_code", "missing")),
                *self._record_facts())

    def _strata_facts(self) -> list[ExactFact]:
        """The stratum columns, released unperturbed (one fact, or none)."""
        strata = list(dict.fromkeys(c for v in self.variables for c in v.given))
        return [ExactFact.of("stratum", tuple(strata))] if strata else []

    def _missing_facts(self, per_variable: list[ExactFact]) -> list[ExactFact]:
        """Which values are missing (the variables that keep them), and the missing codes that say so."""
        facts: list[ExactFact] = []
        missing = [f.variables[0] for f in per_variable if f.kind == "missing"]
        if missing:
            facts.append(ExactFact.of("missing", tuple(missing)))
        codes = self.input.get("missing_codes") if isinstance(self.input, Mapping) else None
        kept = missing + [f.variables[0] for f in per_variable if f.kind == "joint_missing"]
        if codes and kept:  # a format whose missing values are codes (io_stat.missing_code_words), named at design
            facts.append(ExactFact.of("missing_code", tuple(kept), values=(codes,)))
        return facts

    def _record_facts(self) -> list[ExactFact]:
        """What is released of the whole record: rule breakers kept, household ids, weights."""
        facts = [ExactFact.of("rule_breaker", tuple(self.names))] if self.keeps_rule_breakers else []
        units: dict[str, list[str]] = {}
        for v in self.variables:
            if v.unit:
                units.setdefault(v.unit, []).append(v.name)
        facts += [ExactFact.of("household", tuple(names), column=unit) for unit, names in units.items()]
        weights = self.input.get("weights") if isinstance(self.input, Mapping) else None
        if weights:
            facts.append(ExactFact.of("weights", (), column=", ".join(weights)))
        suppression = self.input.get("suppression") if isinstance(self.input, Mapping) else None
        if suppression:
            facts.append(self._suppressed_fact(suppression))
        return facts

    def _suppressed_fact(self, suppression: Mapping[str, Any]) -> ExactFact:
        """The local suppression the data went through (``input.suppression``): the keys released as they are
        keep k-anonymity in the released file, when no stratum of it is perturbed."""
        perturbed = {c for v in self.variables for c in v.columns}
        strata = tuple(suppression.get("strata") or ())
        exact = () if perturbed & set(strata) else tuple(c for c in suppression["keys"] if c not in perturbed)
        return ExactFact.of("suppressed", tuple(suppression["keys"]),
                            values=(int(suppression["k"]), str(suppression["missing"]), exact, strata))

    @property
    def released_exactly(self) -> str | None:
        """What the release shows exactly, in words (:attr:`exact_facts`; ``None`` if nothing)."""
        return exact_words(self.exact_facts)

    def _ledger(self) -> Ledger:
        return self.ledger if self.ledger is not None else NO_LEDGER

    @property
    def guarantee(self) -> str:
        """The guarantee sentence for what is published with this manifest
        (:meth:`pramkit.ledger.Ledger.statement` of its :attr:`exact_facts`): the manifest's
        ``ledger.statement``; :func:`pramkit.ledger.release_guarantee` (with the released file's
        columns, when known) is what every surface prints."""
        return release_guarantee(self).sentence

    def _ledger_dict(self) -> dict[str, Any]:
        from pramkit.privacy.amplification import sampled_ledger

        return {**self._ledger().to_dict([v.epsilon_given_shown for v in self.variables], facts=self.exact_facts),
                **sampled_ledger(self)}

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    @property
    def keeps_rule_breakers(self) -> bool:
        """The design kept the records that break an edit rule (``input.structure.rule_breaking`` is
        ``"keep"``): the engine releases a record outside its variable's cells unperturbed, and estimates
        take such a record's combination as released exactly.

        Examples
        --------
        >>> m = Manifest.of({"sex": PramMatrix.form8([0.8, 0.8], categories=["f", "m"])})
        >>> m.keeps_rule_breakers
        False
        """
        structure = self.input.get("structure") if isinstance(self.input, Mapping) else None
        return isinstance(structure, Mapping) and structure.get("rule_breaking") == "keep"

    @property
    def columns(self) -> list[str]:
        """Every perturbed column, in the order of the variables."""
        return [c for v in self.variables for c in v.columns]

    @property
    def read_columns(self) -> list[str]:
        """Every column perturbation reads: the perturbed ones, then the strata and household ids
        (read, never changed)."""
        extra = [c for v in self.variables for c in (*v.given, *([v.unit] if v.unit else []))]
        return list(dict.fromkeys([*self.columns, *extra]))

    def describe(self) -> dict[str, Any]:
        """What the manifest guarantees, variable by variable, with the ledger (``pramkit inspect``).

        Returns
        -------
        dict
            Per variable its epsilon and flags; the record's epsilons, the ledger, what the
            release shows exactly (:attr:`exact_facts`) and the guarantee sentence.

        Examples
        --------
        >>> from pramkit.design.classic import randomized_response
        >>> d = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}).describe()
        >>> [v["name"] for v in d["variables"]], d["design_epsilon"], "guarantee" in d
        (['sex'], 0.0, True)
        """
        ledger = None if self.ledger is None else self._ledger_dict()
        return {
            "variables": [
                {
                    "name": v.name,
                    "columns": list(v.columns),
                    "categories": [list(c) if isinstance(c, tuple) else c for c in v.matrix.categories],
                    "epsilon": epsilon_to_json(v.epsilon),
                    **({"epsilon_given_block": epsilon_to_json(v.block_epsilon),
                        "released_exactly": v.structure_words()} if v.is_structured else {}),
                    **({"given": list(v.given)} if v.given else {}),
                    **({"unit": v.unit} if v.unit else {}),
                    "bistochastic": v.matrix.is_bistochastic,
                    "min_diagonal": v.matrix.min_diagonal,
                    "truthful": v.matrix.is_truthful,
                    "missing": v.missing,
                    "method": v.matrix.provenance.method,
                }
                for v in self.variables
            ],
            "perturbation_epsilon": epsilon_to_json(self.perturbation_epsilon),
            "design_epsilon": 0.0 if self.ledger is None else self.ledger.design_epsilon,
            "record_epsilon": epsilon_to_json(self.record_epsilon),
            **({"record_epsilon_given_structure": epsilon_to_json(self.record_epsilon_given_structure)}
               if self.is_structured else {}),
            "ledger": ledger,
            "released_exactly_facts": [f.to_dict() for f in self.exact_facts],
            "guarantee": self.guarantee,
            **({"swapping": dict(self.swapping)} if self.swapping is not None else {}),
        }

    def __getitem__(self, name: str) -> PerturbedVariable:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """The manifest as JSON values (``docs/manifest.md``), without the design record.

        Returns
        -------
        dict
            ``format``, ``version`` (:data:`VERSION`), the epsilons of the record (design
            step plus perturbation), ``input``, the ``ledger`` (if any) and each variable's
            :meth:`PerturbedVariable.to_dict`.

        Examples
        --------
        >>> d = Manifest.of({"sex": PramMatrix.form8([0.8, 0.8], categories=["f", "m"])}).to_dict()
        >>> d["format"], d["version"], [v["name"] for v in d["variables"]]
        ('pramkit-manifest', 5, ['sex'])
        >>> math.isclose(d["record_epsilon"], math.log(0.8 / 0.2))
        True
        """
        return {
            "format": FORMAT,
            "version": VERSION,
            "pramkit_version": self.pramkit_version,
            "created": self.created,
            "composition": "independent variables: the record's epsilon is the design step's epsilon plus the "
                           "sum of the variables' epsilons",
            "record_epsilon": epsilon_to_json(self.record_epsilon),
            "perturbation_epsilon": epsilon_to_json(self.perturbation_epsilon),
            **({"record_epsilon_given_structure": epsilon_to_json(self.record_epsilon_given_structure)}
               if self.is_structured else {}),
            "input": dict(self.input),
            **({} if self.ledger is None else {"ledger": self._ledger_dict()}),
            "variables": [v.to_dict() for v in self.variables],
            **({} if self.swapping is None else {"swapping": dict(self.swapping)}),
        }

    def to_json(self) -> str:
        """The manifest as strict JSON text (no NaN nor infinity: :func:`epsilon_to_json`).

        Returns
        -------
        str
            :meth:`to_dict`, indented, with a final newline.

        Examples
        --------
        A round trip through JSON gives an equal manifest, compact matrices staying compact:

        >>> m = Manifest.of({"sex": PramMatrix.form8([0.8, 0.7], categories=["f", "m"]),
        ...                  "kept": PramMatrix.identity(["a", "b"])})
        >>> back = Manifest.from_dict(json.loads(m.to_json()))
        >>> back == m, back["sex"].matrix.is_compact, json.loads(m.to_json())["record_epsilon"]
        (True, True, 'inf')
        """
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def write(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the manifest atomically (never over an existing file unless ``force``).

        Parameters
        ----------
        path : str or Path
            The manifest file.
        force : bool
            Replace an existing file.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        OutputExistsError
            ``path`` exists and ``force`` is false.
        WriteError
            The file cannot be written.

        Examples
        --------
        >>> import os, tempfile
        >>> m = Manifest.of({"sex": PramMatrix.form8([0.8, 0.8], categories=["f", "m"])})
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = m.write(os.path.join(d, "manifest.json"))
        ...     Manifest.read(path) == m, m.write(path, force=True) == path
        (True, True)
        """
        return write_text_atomic(path, self.to_json(), force=force)

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        """Read and validate a manifest file (:meth:`from_dict`).

        Parameters
        ----------
        path : str or Path
            A manifest written by :meth:`write` (version :data:`VERSION`).

        Returns
        -------
        Manifest
            Without a design record.

        Raises
        ------
        ManifestError
            The file does not exist, cannot be read, is not strict JSON (``NaN`` or
            ``Infinity`` included), holds a number that overflows a float, is larger
            than 256 MiB or nested more than 64 levels (:func:`pramkit._json.read_json`),
            or a field is malformed (the message names it).

        Examples
        --------
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "manifest.json")
        ...     _ = open(path, "w").write('{"format": "pramkit-manifest", "version": 5, "variables": []}')
        ...     Manifest.read(path)
        Traceback (most recent call last):
        ...
        pramkit.errors.ManifestError: field 'variables' must be a non-empty list
        """
        p = Path(path)
        if p.is_dir():
            raise ManifestError(f"manifest {str(p)!r} is a folder, not a file")
        try:  # bounded: size, nesting depth, finite numbers (pramkit._json.read_json)
            data = read_json(p, f"manifest {str(p)!r}", ManifestError)
        except FileNotFoundError:
            raise ManifestError(f"manifest {str(p)!r} does not exist") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> Manifest:
        """Validate a parsed manifest; errors name the offending field.

        Every stated epsilon (the record's, each variable's and its epsilon given the
        block) must agree with the one computed from the matrices.

        Parameters
        ----------
        data : dict
            A parsed manifest (:meth:`to_dict` of a manifest, or ``json.load``).

        Returns
        -------
        Manifest

        Raises
        ------
        ManifestError
            The first malformed field, by name.

        Examples
        --------
        >>> m = Manifest.of({"sex": PramMatrix.form8([0.8, 0.8], categories=["f", "m"])})
        >>> d = json.loads(m.to_json())
        >>> Manifest.from_dict(d) == m
        True
        >>> d["variables"][0].update(q=[0.9, 0.9], w=[0.1, 0.1])  # entries edited, stated epsilon not
        >>> Manifest.from_dict(d)
        Traceback (most recent call last):
        ...
        pramkit.errors.ManifestError: field 'variables[0].epsilon' states 1.386294361119891 but the matrices give 2.1972245773362196
        """
        _check_format(data)
        raw_vars = data.get("variables")
        if not isinstance(raw_vars, list) or not raw_vars:
            raise ManifestError("field 'variables' must be a non-empty list")
        variables = tuple(_variable_from_dict(v, f"variables[{i}]") for i, v in enumerate(raw_vars))
        inp, created, version_str = _read_provenance(data)
        ledger = Ledger.from_dict(data["ledger"]) if "ledger" in data else None
        swapping = data.get("swapping")
        if swapping is not None and not isinstance(swapping, dict):
            raise ManifestError("field 'swapping' must be an object")
        try:
            manifest = cls(variables, input=inp, created=created or "unknown", pramkit_version=version_str,
                           ledger=ledger, swapping=swapping)
        except ManifestError as exc:
            raise ManifestError(f"field 'variables': {exc}") from None
        from pramkit.privacy.amplification import check_read_sampling

        check_read_sampling(manifest, data.get("ledger"))  # input.sampling, and the sampled epsilon it gives
        _check_stated_epsilons(data, manifest)
        return manifest


def _check_format(data: Any) -> None:
    """A JSON object of this format (not a synthesized release's) and version."""
    if not isinstance(data, dict):
        raise ManifestError("the manifest must be a JSON object")
    if data.get("format") != FORMAT:
        if data.get("format") == "pramkit.synthesis":
            raise ManifestError("this is the manifest of a synthesized release (pramkit synthesize): its file is "
                                "read as it is, with no matrices to correct by; pramkit audit checks it "
                                "(docs/synthesize.md)")
        raise ManifestError(f"field 'format' must be {FORMAT!r}, got {data.get('format')!r}")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ManifestError("field 'version' must be an integer")
    if version != VERSION:
        raise ManifestError(f"field 'version' is {version}; this pramkit reads version {VERSION} only "
                            "(design the release again)")


def _read_provenance(data: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """The fields ``input`` (an object), ``created`` and ``pramkit_version`` (strings)."""
    inp = data.get("input", {})
    if not isinstance(inp, dict):
        raise ManifestError("field 'input' must be an object")
    if "suppression" in inp:
        _read_suppression(inp["suppression"])
    created = data.get("created", "")
    if not isinstance(created, str):
        raise ManifestError("field 'created' must be a string")
    version_str = data.get("pramkit_version", "unknown")
    if not isinstance(version_str, str):
        raise ManifestError("field 'pramkit_version' must be a string")
    return inp, created, version_str


def _read_suppression(section: Any) -> None:
    """The field ``input.suppression`` (design --suppressed-by): keys, k, the rule for a missing value, strata."""
    from pramkit.ledger import MISSING_RULE_WORDS

    where = "input.suppression"
    if not isinstance(section, dict) or set(section) != {"keys", "k", "missing", "strata"}:
        raise ManifestError(f"field '{where}' must be an object of keys, k, missing and strata")
    k = section["k"]
    for name, least in (("keys", 1), ("strata", 0)):
        names = section[name]
        if not isinstance(names, list) or len(names) < least or not all(isinstance(x, str) and x for x in names):
            raise ManifestError(f"field '{where}.{name}' must be a {'non-empty ' if least else ''}list of column names")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ManifestError(f"field '{where}.k' must be a whole number of at least 2, got {k!r}")
    if section["missing"] not in MISSING_RULE_WORDS:
        raise ManifestError(f"field '{where}.missing' must be one of {', '.join(MISSING_RULE_WORDS)}, "
                            f"got {section['missing']!r}")


def _check_stated_epsilons(data: dict[str, Any], manifest: Manifest) -> None:
    """Every epsilon the file states of the record (at its top and in its ledger) is the one the
    matrices give."""
    for key in ("record_epsilon", "perturbation_epsilon", "record_epsilon_given_structure"):
        if key in data:  # each the manifest's property of that name
            _check_epsilon(data[key], getattr(manifest, key), key)
    if isinstance(data.get("ledger"), dict) and manifest.ledger is not None:
        stated = data["ledger"]
        for key, actual in (("record_epsilon", manifest.record_epsilon_given_structure),
                            ("perturbation_epsilon", manifest._ledger_dict()["perturbation_epsilon"])):
            if key in stated:
                _check_epsilon(stated[key], _epsilon_from_json(actual, f"ledger.{key}"), f"ledger.{key}")


def _epsilon_from_json(value: Any, where: str) -> float:
    if value == "inf":
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ManifestError(f"field '{where}' must be a non-negative number or \"inf\", got {value!r}")


def _check_epsilon(value: Any, actual: float, where: str) -> None:
    """Refuse a stated epsilon other than ``actual`` within :data:`_EPS_TOL`."""
    stated = _epsilon_from_json(value, where)
    if not (math.isinf(stated) == math.isinf(actual) and (
            math.isinf(actual) or abs(stated - actual) <= _EPS_TOL * max(1.0, abs(actual)))):
        raise ManifestError(
            f"field '{where}' states {value!r} but the matrices give {epsilon_to_json(actual)!r}"
        )


def _variable_from_dict(v: Any, where: str) -> PerturbedVariable:
    """One entry of ``variables``, checked field by field; ``where`` names it in messages."""
    if not isinstance(v, dict):
        raise ManifestError(f"field '{where}' must be an object")
    name, columns = _read_name_and_columns(v, where)
    cats = v.get("categories")
    if not isinstance(cats, list) or not cats:
        raise ManifestError(f"field '{where}.categories' must be a non-empty list")
    given, unit = _read_given_and_unit(v, where)
    _check_category_values(cats, len(columns) + len(given), bool(given), where)
    matrix = PramMatrix.from_dict(v, where)
    applied_to = _applied_to(v, matrix, where)
    _check_variable_epsilons(v, matrix, applied_to, where)
    missing, unpaired = _read_missing_and_unpaired(v, where)
    try:
        return PerturbedVariable(name, matrix, missing, tuple(columns), tuple(given), unit, applied_to, unpaired)
    except ManifestError as exc:
        raise ManifestError(f"field '{where}': {exc}") from None


def _read_name_and_columns(v: dict[str, Any], where: str) -> tuple[str, list[str]]:
    """The fields ``name`` (a non-empty string) and ``columns`` (column names; the name's by default)."""
    name = v.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"field '{where}.name' must be a non-empty string")
    columns = v.get("columns", [name])
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) and c for c in columns):
        raise ManifestError(f"field '{where}.columns' must be a non-empty list of column names")
    return name, columns


def _read_given_and_unit(v: dict[str, Any], where: str) -> tuple[list[str], str | None]:
    """The fields ``given`` (stratum column names) and ``unit`` (a column name, or absent)."""
    given = v.get("given", [])
    if not isinstance(given, list) or not all(isinstance(c, str) and c for c in given):
        raise ManifestError(f"field '{where}.given' must be a list of column names")
    unit = v.get("unit")
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise ManifestError(f"field '{where}.unit' must be a column name")
    return given, unit


def _check_category_values(cats: list[Any], width: int, stratified: bool, where: str) -> None:
    """Each category is a value (string, number or null), or a list of ``width`` values when the
    variable reads several columns."""
    for i, c in enumerate(cats):
        values = c if width > 1 and isinstance(c, list) else [c]
        if width > 1 and (not isinstance(c, list) or len(c) != width):
            raise ManifestError(f"field '{where}.categories[{i}]' must list {width} values, one per column"
                                + (" (the strata first)" if stratified else ""))
        if not all(x is None or isinstance(x, (str, int, float)) for x in values):
            raise ManifestError(f"field '{where}.categories[{i}]' must be a string, number or null")


def _check_variable_epsilons(v: dict[str, Any], matrix: PramMatrix, applied_to: PramMatrix | None,
                             where: str) -> None:
    """The variable's stated ``epsilon`` and ``epsilon_given_block``, where present, are the matrix's."""
    if "epsilon" in v:
        _check_epsilon(v["epsilon"], _stated_epsilon(matrix, applied_to), f"{where}.epsilon")
    if "epsilon_given_block" in v:
        _check_epsilon(v["epsilon_given_block"], max(matrix.block_epsilon, realised_law(matrix).block_epsilon),
                       f"{where}.epsilon_given_block")


def _read_missing_and_unpaired(v: dict[str, Any], where: str) -> tuple[Any, dict[str, Any]]:
    """The fields ``missing`` (a policy) and ``unpaired`` (column names to lists of values)."""
    missing = v.get("missing", "keep")
    if missing not in _MISSING_POLICIES:
        raise ManifestError(f"field '{where}.missing' must be one of {list(_MISSING_POLICIES)}, got {missing!r}")
    unpaired = v.get("unpaired", {})
    if not isinstance(unpaired, dict) or not all(isinstance(x, list) for x in unpaired.values()):
        raise ManifestError(f"field '{where}.unpaired' must map column names to lists of values")
    return missing, unpaired


def _applied_to(v: dict[str, Any], matrix: PramMatrix, where: str) -> PramMatrix | None:
    """The matrix a derived variable is applied to (``applied_to``), on the variable's categories."""
    if "applied_to" not in v:
        return None
    if not isinstance(v["applied_to"], dict):
        raise ManifestError(f"field '{where}.applied_to' must be an object")
    first = PramMatrix.from_dict(v["applied_to"], f"{where}.applied_to")
    if first.categories != matrix.categories:
        raise ManifestError(f"field '{where}.applied_to' must have the variable's categories, in order")
    return first
