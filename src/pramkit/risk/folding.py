"""The table of the risk after PRAM: joint and stratified variables folded into one axis each.

A variable of the manifest that perturbs several key columns together (a joint design), or a column
within strata (whose matrix's categories are ``(*strata values, value)``), releases those columns
together: the risk model's table then has one axis for them, whose cells are the matrix's
categories.  :func:`pramkit.identification_risk` and :func:`pramkit.risk.expected.expected_release`
both fold the key table this way.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pramkit.errors import DataError, ParameterError
from pramkit.labels import joint_cell
from pramkit.manifest import Manifest

__all__ = ["Joint", "axis_categories", "fold", "folded_cells", "folded_shape", "folding", "perturbation"]


@dataclass(frozen=True)
class Joint:
    """Keys perturbed together by one variable of the manifest (several columns, or a column and its
    strata): one axis of the table, whose categories are the matrix's (tuples of the columns' values).

    Parameters
    ----------
    name : str
        The variable's name.
    positions : tuple of int
        Its read columns' positions among the keys, in the matrix's column order.
    cells : tuple of tuple
        Its categories, one value per read column.
    columns : tuple of str
        The columns it perturbs (not the strata).

    Examples
    --------
    >>> j = Joint("age*sex", (1, 2), (("0-17", "f"), ("18+", "f"), ("18+", "m")), ("age", "sex"))
    >>> j.axis_categories(0), j.axis_categories(1)
    (['0-17', '18+'], ['f', 'm'])
    """

    name: str
    positions: tuple[int, ...]  # of its read columns among the keys, in the matrix's column order
    cells: tuple[tuple[Any, ...], ...]
    columns: tuple[str, ...]  # the columns it perturbs (not the strata)

    def axis_categories(self, at: int) -> list[Any]:
        """The values of its ``at``-th read column, in the order of the matrix's categories."""
        return list(dict.fromkeys(cell[at] for cell in self.cells))


def perturbation(manifest: Manifest | None, keys: tuple[str, ...]) -> tuple[tuple[str, ...], list[Joint]]:
    """The keys a manifest perturbs alone, and the variables that perturb keys jointly (all of whose
    columns and strata must be keys: the released value of one depends on the others).

    Parameters
    ----------
    manifest : Manifest or None
        The release manifest (``None``: nothing perturbed).
    keys : tuple of str
        The key variables.

    Returns
    -------
    singles : tuple of str
        The keys perturbed one by one.
    joints : list of Joint
        The joint and stratified variables, one axis each of the folded table.

    Raises
    ------
    ParameterError
        A joint variable reads columns that are not keys, or two share a stratum.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.manifest import Manifest, PerturbedVariable
    >>> cells = [("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m")]
    >>> v = PerturbedVariable("age*sex", PramMatrix.form8([0.9] * 4, categories=cells), columns=("age", "sex"))
    >>> keys = ("region", "age", "sex")
    >>> singles, joints = perturbation(Manifest(variables=(v,)), keys)
    >>> singles, [(j.name, j.positions) for j in joints]
    ((), [('age*sex', (1, 2))])
    """
    if manifest is None:
        return (), []
    singles = tuple(k for k in keys if k in manifest.names and not manifest[k].is_joint)
    joints = []
    for v in manifest.variables:
        if not v.is_joint or not set(v.read_columns) & set(keys):
            continue
        absent = [c for c in v.read_columns if c not in keys]
        if absent:
            raise ParameterError(
                f"the manifest perturbs {list(v.columns)} jointly (variable {v.name!r}"
                + (f", strata {list(v.given)}" if v.given else "") + f"): the risk after PRAM needs all of "
                f"{list(v.read_columns)} among the keys; add {absent} to the keys or leave "
                f"{[c for c in v.read_columns if c in keys]} out")
        joints.append(Joint(v.name, tuple(keys.index(c) for c in v.read_columns),
                             tuple(joint_cell(c) for c in v.matrix.categories), v.columns))
    for a, b in itertools.combinations(joints, 2):
        shared = [keys[p] for p in a.positions if p in b.positions]
        if shared:
            raise ParameterError(f"the manifest perturbs {a.name!r} and {b.name!r} within the same strata {shared}: "
                                 "the risk after PRAM of variables that share a stratum is not computed yet; design "
                                 "them jointly (split joint) to assess them together")
    return singles, joints


def axis_categories(manifest: Manifest | None, keys: tuple[str, ...], singles: tuple[str, ...],
                     joints: list[Joint]) -> dict[str, Sequence[Any]]:
    """The declared categories of the perturbed keys: a matrix's, or a joint matrix's values of the key.

    Parameters
    ----------
    manifest : Manifest or None
        The release manifest.
    keys : tuple of str
        The key variables.
    singles, joints
        As :func:`perturbation` returns them.

    Returns
    -------
    dict
        Key to its categories, for the perturbed keys.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.manifest import Manifest
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.9, 0.9], ["f", "m"])})
    >>> keys = ("age", "sex")
    >>> axis_categories(manifest, keys, ("sex",), [])
    {'sex': ('f', 'm')}
    """
    declared: dict[str, Sequence[Any]] = {k: manifest[k].matrix.categories for k in singles} if manifest else {}
    for j in joints:
        # the engine's levels: the cells' values, then the unpaired ones (values the rules allow only with
        # another column missing, released as they are)
        assert manifest is not None  # joint variables come from the manifest
        levels = manifest[j.name].joint_levels()
        for at, position in enumerate(j.positions):
            declared[keys[position]] = levels[at]
    return declared


def folding(keys: tuple[str, ...], shape: Sequence[int], joints: list[Joint]) -> tuple[
        list[int], list[int], tuple[str, ...], list[tuple[int, np.ndarray]]]:
    """How the table over the keys becomes the table whose joint variables are one axis each: the
    axes' order, the folded shape before the cells are picked, the folded axes' names, and per joint
    axis (its position, the flat sub-cell of each of its categories).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    shape : sequence of int
        The table's shape over the keys.
    joints : list of Joint
        As :func:`perturbation` returns them.

    Returns
    -------
    tuple
        ``(order, merged, names, picks)``.

    Examples
    --------
    >>> keys, cells = ("region", "age", "sex"), (("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m"))
    >>> joints = [Joint("age*sex", (1, 2), cells, ("age", "sex"))]
    >>> order, merged, names, picks = folding(keys, (3, 2, 2), joints)
    >>> order, merged, names, [(axis, flat.tolist()) for axis, flat in picks]
    ([0, 1, 2], [3, 4], ('region', 'age*sex'), [(1, [0, 1, 2, 3])])
    """
    first = {min(j.positions): j for j in joints}
    inside = {p for j in joints for p in j.positions}
    order: list[int] = []
    merged: list[int] = []
    names: list[str] = []
    picks: list[tuple[int, np.ndarray]] = []
    for i, key in enumerate(keys):
        if i in first:
            j = first[i]
            sub = [shape[p] for p in j.positions]
            cats = [j.axis_categories(at) for at in range(len(j.positions))]
            flat = np.ravel_multi_index(
                np.array([[cats[at].index(cell[at]) for cell in j.cells] for at in range(len(sub))]), sub)
            order.extend(j.positions)
            picks.append((len(merged), flat))
            merged.append(math.prod(sub))
            names.append(j.name)
        elif i not in inside:
            order.append(i)
            merged.append(shape[i])
            names.append(key)
    return order, merged, tuple(names), picks


def outside_reasons(manifest: Manifest | None, missing: str | None) -> str:
    """What can put released records outside a joint variable's cells, for :func:`fold`'s refusal: the
    rule breakers a manifest keeps (released as they are), a missing value unless ``missing`` already
    leaves those records out, and a file released with another manifest.

    Examples
    --------
    >>> print(outside_reasons(None, "exclude"))
    a file not released with this manifest
    """
    reasons = []
    if manifest is not None and manifest.keeps_rule_breakers:
        reasons.append("rule breakers the design kept and released as they are, which the risk after PRAM does "
                       "not model yet (the risk without the manifest reads every record as released)")
    if missing != "exclude":
        reasons.append("a missing value, released as it is, which the risk after PRAM does not model yet (give "
                       "missing='exclude', --missing exclude, to leave those records out)")
    reasons.append("a file not released with this manifest")
    return ", ".join(reasons[:-1]) + (", or " if len(reasons) > 1 else "") + reasons[-1]


def fold(table: np.ndarray | None, keys: tuple[str, ...], joints: list[Joint], *,
         outside: str | None = None) -> np.ndarray | None:
    """The table with each joint variable's keys folded into one axis of its categories; records in
    a combination that is not one of them are refused (the manifest cannot have released them).

    Parameters
    ----------
    table : numpy.ndarray or None
        Counts (or weight sums) over the keys; ``None`` passes through.
    keys : tuple of str
        The key variables.
    joints : list of Joint
        As :func:`perturbation` returns them.
    outside : str, optional
        What can put records outside the cells, said in the refusal (default: :func:`outside_reasons` of no
        manifest, the missing values not left out).

    Returns
    -------
    numpy.ndarray or None
        The folded table (the table itself without joint variables).

    Raises
    ------
    DataError
        Records in a combination that is not a category of a joint variable.

    Examples
    --------
    >>> keys, cells = ("region", "age", "sex"), (("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m"))
    >>> joints = [Joint("age*sex", (1, 2), cells, ("age", "sex"))]
    >>> fold(np.arange(12.0).reshape(3, 2, 2), keys, joints).shape
    (3, 4)
    """
    if table is None or not joints:
        return table
    order, merged, _, picks = folding(keys, table.shape, joints)
    out = np.transpose(table, order).reshape(merged)
    for axis, flat in picks:
        out = np.take(out, flat, axis=axis)
    if not math.isclose(float(out.sum()), float(table.sum()), rel_tol=1e-9):
        j = joints[0]
        raise DataError(f"{float(table.sum() - out.sum()):g} record(s) hold combinations of "
                        f"{[keys[p] for p in j.positions]} that are not categories of the manifest's "
                        f"{j.name!r} (or of another joint variable): {outside or outside_reasons(None, None)}")
    return out


def folded_cells(codes: np.ndarray, shape: Sequence[int], keys: tuple[str, ...], joints: list[Joint]) -> np.ndarray:
    """Each record's flat cell in the folded table.

    Parameters
    ----------
    codes : numpy.ndarray
        ``(n, d)`` codes of the included records over the keys.
    shape : sequence of int
        The table's shape over the keys.
    keys : tuple of str
        The key variables.
    joints : list of Joint
        As :func:`perturbation` returns them.

    Returns
    -------
    numpy.ndarray
        Flat cells of the table :func:`fold` makes.

    Examples
    --------
    >>> keys, cells = ("region", "age", "sex"), (("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m"))
    >>> joints = [Joint("age*sex", (1, 2), cells, ("age", "sex"))]
    >>> folded_cells(np.array([[0, 1, 0], [2, 1, 1]]), (3, 2, 2), keys, joints).tolist()
    [2, 11]
    """
    order, _, _, picks = folding(keys, shape, joints)
    columns, axis = [], 0
    at = 0
    picked = dict(picks)
    while at < len(order):
        if axis in picked:
            j = next(j for j in joints if j.positions[0] == order[at])
            sub = [shape[p] for p in j.positions]
            lookup = np.full(math.prod(sub), -1, dtype=np.int64)
            lookup[picked[axis]] = np.arange(len(picked[axis]))
            columns.append(lookup[np.ravel_multi_index(codes[:, list(j.positions)].T, sub)])
            at += len(j.positions)
        else:
            columns.append(codes[:, order[at]])
            at += 1
        axis += 1
    return np.ravel_multi_index(np.column_stack(columns).T, folded_shape(keys, shape, joints))


def folded_shape(keys: tuple[str, ...], shape: Sequence[int], joints: list[Joint]) -> list[int]:
    """The shape of the folded table (a joint axis has one cell per category of its matrix).

    Parameters
    ----------
    keys : tuple of str
        The key variables.
    shape : sequence of int
        The table's shape over the keys.
    joints : list of Joint
        As :func:`perturbation` returns them.

    Returns
    -------
    list of int

    Examples
    --------
    >>> keys, cells = ("region", "age", "sex"), (("0-17", "f"), ("0-17", "m"), ("18+", "f"), ("18+", "m"))
    >>> joints = [Joint("age*sex", (1, 2), cells, ("age", "sex"))]
    >>> folded_shape(keys, (3, 2, 2), joints)
    [3, 4]
    """
    _, merged, _, picks = folding(keys, shape, joints)
    picked = dict(picks)
    return [len(picked[a]) if a in picked else m for a, m in enumerate(merged)]
