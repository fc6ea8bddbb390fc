"""Applying a PRAM matrix to category codes with keyed, counter-based draws.

Row ``i`` of variable ``v`` is perturbed with the 64-bit word ``W(K, v, i)`` of
:mod:`pramkit.kernel.rng` (its integer uniform, :mod:`pramkit.engine.sampling`), so the result does not depend on how the rows are split
into chunks or partitions: pass the absolute row number of a chunk's first row
as ``start``.

``K`` is the release key (:func:`release_key`): the secret key's key for this
manifest and this label (``release=``, ``apply --release``), never the secret key
itself.  One key and one manifest make one release: two releases made with one key
from two manifests, or under two labels, share no draw, so comparing them says
nothing about whether the original changed; the same key, manifest and label make
the release again, byte for byte, however the file is chunked and on any engine.
A panel's next wave or a corrected re-release made with the same design needs
another label.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike

from pramkit.atomic import check_writable
from pramkit.codebook import MISSING, Codebook, JointCodebook, MissingCodes, canonical
from pramkit.engine.apply_spec import ApplySettings
from pramkit.engine.sampling import Sampler, release, sampler_for
from pramkit.errors import DataError, ParameterError
from pramkit.io import (
    CHUNK_ROWS,
    CSV_ENCODING,
    CSV_SEP,
    NA_VALUES,
    TableWriter,
    csv_dialect,
    require_columns,
)
from pramkit.kernel.rng import SecretKey, more_words, resolve_key, stream, words_at
from pramkit.kernel.utf8 import pool_array
from pramkit.labels import joint_cell
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.matrix import PramMatrix
from pramkit.privacy.amplification import DEFAULT_DELTA
from pramkit.progress import progress
from pramkit.settings import checked, only_spec
from pramkit.source import Source
from pramkit.validate import release_label

#: Rows in any order whose words :func:`pramkit.kernel.rng.words_at` evaluates at once.
SPAN = 1 << 18


def release_key(key: SecretKey, manifest: Manifest, release: str = "") -> SecretKey:
    """The key every draw of a release comes from: ``key`` derived for the manifest and the label.

    :meth:`pramkit.kernel.rng.SecretKey.for_release` of the manifest's
    :func:`pramkit.engine.receipt.release_digest` and ``release``.  A key that is
    already this release's key is returned as it is (so that a caller may derive it
    once and hand it on); a key derived for another release is refused.

    Parameters
    ----------
    key : pramkit.kernel.rng.SecretKey
        The secret key (or this release's key).
    manifest : pramkit.manifest.Manifest
        The release's manifest.
    release : str
        The release's label (``apply --release``; ``""``: none), public, written in the receipt.

    Returns
    -------
    pramkit.kernel.rng.SecretKey

    Raises
    ------
    ParameterError
        The label is not a label (:func:`pramkit.validate.release_label`), or ``key`` was
        derived for another release.

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.kernel.rng import SecretKey
    >>> key = SecretKey(bytes(32), "zeros")
    >>> m = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> k = release_key(key, m)
    >>> k.material != key.material, release_key(k, m) is k, k.material == release_key(key, m).material
    (True, True, True)
    >>> release_key(key, m, "wave 2").material == k.material
    False
    """
    from pramkit.engine.receipt import _RELEASE_DIGESTS, per_manifest, release_digest

    label = release_label(release)
    digest = per_manifest(_RELEASE_DIGESTS, manifest, release_digest)
    if key.release is None:
        return key.for_release(digest, label)
    if key.release != (digest, label):
        raise ParameterError("the key was derived for another release (another manifest or label): pass the "
                             "secret key itself")
    return key


def perturb_codes(
    codes: ArrayLike,
    matrix: PramMatrix | Sampler,
    *,
    key: SecretKey,
    variable: str,
    start: int = 0,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """Released codes for original ``codes`` (``-1`` = missing, kept missing).

    Parameters
    ----------
    codes : integer array of codes in ``-1..S-1``
    matrix : the PRAM matrix (or a sampler prepared from it, to reuse across chunks)
    key : the secret key (see :func:`pramkit.kernel.rng.resolve_key`)
    variable : the variable's name; it selects the variable's random stream
    start : absolute row number of ``codes[0]`` in the file
    rows : alternatively, the absolute row number of every value (in any order)

    Returns
    -------
    numpy.ndarray
        The released codes (``intp``): row ``i`` with original code ``k`` is
        released as ``j`` with probability ``M[k, j]``; ``-1`` stays ``-1``.

    Raises
    ------
    DataError
        ``codes`` is not a 1-D integer array, a code lies outside ``-1..S-1``,
        or ``rows`` does not give one row number per code.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.kernel.rng import SecretKey
    >>> key = SecretKey(bytes(32), "zeros")
    >>> m = PramMatrix.from_diagonal([0.8, 0.8, 0.8], ["a", "b", "c"])
    >>> codes = np.array([0, 1, 2, -1, 0, 1, 2, 0])
    >>> released = perturb_codes(codes, m, key=key, variable="x")
    >>> released.tolist()  # row 5 moved from b to c; the missing value stays missing
    [0, 1, 2, -1, 0, 2, 2, 0]

    The draw of a row depends on the key, the variable and the row only (``key`` is used as it is:
    :func:`perturb_frame` and :func:`apply_file` pass the release key), so
    chunks and shuffled rows give the same release:

    >>> chunks = [perturb_codes(codes[:3], m, key=key, variable="x"),
    ...           perturb_codes(codes[3:], m, key=key, variable="x", start=3)]
    >>> bool(np.array_equal(np.concatenate(chunks), released))
    True
    >>> perturb_codes(codes[[6, 5]], m, key=key, variable="x", rows=np.array([6, 5])).tolist()
    [2, 2]

    On many records the share kept is close to the diagonal:

    >>> round(float((perturb_codes(np.zeros(100_000, int), m, key=key, variable="x") == 0).mean()), 2)
    0.8
    """
    c = np.ascontiguousarray(codes)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer):
        raise DataError("codes must be a 1-D integer array")
    c = c.astype(np.intp, copy=False)
    sampler = sampler_for(matrix) if isinstance(matrix, PramMatrix) else matrix
    out = np.empty(c.size, dtype=np.intp)
    _draw(c, out, sampler, key=key, variable=variable, start=start, rows=rows)
    return out


def _more_at(key: SecretKey, variable: str, rows: np.ndarray, i: int) -> Iterator[int]:
    """Further words of the ``i``-th of ``rows`` (:func:`pramkit.kernel.rng.more_words`)."""
    return more_words(key, variable, int(rows[i]))


def _draw(codes: np.ndarray, out: np.ndarray, sampler: Sampler, *, key: SecretKey, variable: str, start: int,
          rows: np.ndarray | None, missing_code: int = MISSING) -> tuple[int, int]:
    """Write the released codes of ``codes`` (``intp``) into ``out``, which may be ``codes`` itself; return
    how many codes equal ``missing_code`` and how many changed.

    Consecutive rows read the variable's stream as they go
    (:func:`pramkit.engine.sampling.release`); rows in any order, the words of
    a span of :data:`SPAN` rows at a time.  A value that needs further words
    reads its row's own (:func:`pramkit.kernel.rng.more_words`).
    """
    if rows is not None and np.shape(rows) != codes.shape:
        raise DataError("rows must give one row number per code")
    try:
        if rows is None:
            return release(sampler, codes, stream(key, variable, start), out, missing_code,
                           lambda i: more_words(key, variable, start + i))
        missing = changed = 0
        for s in range(0, codes.size, SPAN):
            e = min(s + SPAN, codes.size)
            span = rows[s:e]
            counts = release(sampler, codes[s:e], words_at(key, variable, span), out[s:e], missing_code,
                             functools.partial(_more_at, key, variable, span))
            missing += counts[0]
            changed += counts[1]
        return missing, changed
    except ValueError as exc:
        raise DataError(str(exc)) from None


@dataclass(frozen=True)
class VariableSummary:
    """What perturbation did to one variable.

    Parameters
    ----------
    name : str
        The variable.
    rows : int
        Values seen.
    missing : int
        Missing values (left missing unless missing is a category).
    changed : int
        Values whose released category differs from the original.
    outside : int
        Records whose combination is not one of the matrix's cells (they break
        an edit rule), released unperturbed because the design said so
        (``rule_breaking`` ``"keep"``, :mod:`pramkit.structure`); they are also
        counted in ``missing``.

    Examples
    --------
    The share changed is among the values that could change (not missing):

    >>> VariableSummary("sex", rows=10, missing=2, changed=2).changed_share
    0.25
    """

    name: str
    rows: int
    missing: int
    changed: int
    outside: int = 0

    @property
    def changed_share(self) -> float:
        """``changed / (rows - missing)``: the share of the non-missing values released in another category."""
        valid = self.rows - self.missing
        return self.changed / valid if valid else 0.0


@dataclass(frozen=True)
class ApplyResult:
    """Outcome of perturbing a table or a file.

    Parameters
    ----------
    rows : int
        Records perturbed.
    variables : tuple of VariableSummary
        What perturbation did to each variable.
    key_source : str
        Where the secret key came from (never the key).
    record_epsilon : float
        The manifest's epsilon per record (nats).
    output : str, optional
        The released file (``None`` for a frame in memory).
    seconds : float
        Wall-clock time.
    perturbed : tuple of str
        The perturbed variables.
    key_fingerprint : str
        :attr:`pramkit.kernel.rng.SecretKey.fingerprint` of the key.
    receipt : str, optional
        The release receipt written beside ``output``.
    guarantees : pramkit.privacy.amplification.Guarantees, optional
        The local, sampled and shuffled guarantees of the file written (``pramkit apply --shuffle``).
    release : str
        The release's label (``release=``, ``apply --release``; ``""``: none).

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix, perturb_frame
    >>> data = pd.DataFrame({"sex": ["m", "f", None, "m"]})
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> result = perturb_frame(data, manifest, key=bytes(32)).result
    >>> result.rows, result.perturbed, result.variables[0].missing, round(result.record_epsilon, 4)  # log(0.8 / 0.2)
    (4, ('sex',), 1, 1.3863)
    >>> result.key_source, result.key_fingerprint == perturb_frame(data, manifest, key=bytes(32)).result.key_fingerprint
    ('the key given by the caller', True)
    """

    rows: int
    variables: tuple[VariableSummary, ...]
    key_source: str
    record_epsilon: float
    output: str | None = None
    seconds: float = 0.0
    perturbed: tuple[str, ...] = ()
    key_fingerprint: str = ""
    receipt: str | None = None
    guarantees: Any = None
    release: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The outcome as plain values: the JSON object that ``pramkit apply --json`` prints.

        Returns
        -------
        dict
            ``rows``, ``output``, ``receipt``, ``key`` (its source),
            ``key_fingerprint``, ``record_epsilon``, ``seconds`` and one entry
            per variable (``outside_kept`` only when records were kept outside the cells);
            ``release``, the label, when there is one.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix, perturb_frame
        >>> data = pd.DataFrame({"sex": ["m", "f", "f", "m"]})
        >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
        >>> summary = perturb_frame(data, manifest, key=bytes(32)).result.to_dict()
        >>> list(summary)
        ['rows', 'output', 'receipt', 'key', 'key_fingerprint', 'record_epsilon', 'seconds', 'variables']
        >>> summary["rows"], summary["output"], list(summary["variables"][0])
        (4, None, ['name', 'rows', 'missing', 'changed', 'changed_share'])
        """
        return {
            "rows": self.rows,
            "output": self.output,
            "receipt": self.receipt,
            "key": self.key_source,
            "key_fingerprint": self.key_fingerprint,
            **({"release": self.release} if self.release else {}),
            "record_epsilon": self.record_epsilon,
            "seconds": self.seconds,
            "variables": [
                {"name": v.name, "rows": v.rows, "missing": v.missing, "changed": v.changed,
                 "changed_share": v.changed_share, **({"outside_kept": v.outside} if v.outside else {})}
                for v in self.variables
            ],
            **({} if self.guarantees is None else {"guarantees": self.guarantees.to_dict()}),
        }


class _Perturber:
    """Per-variable state reused across chunks: codebook, sampler and running counts.

    Values that ``missing_codes`` declares missing (CSV markers such as ``NA``,
    SPSS user-missing codes) are treated as missing and written back as they
    were; a manifest category that is such a code is refused.
    """

    def __init__(self, variable: PerturbedVariable, key: SecretKey, missing_codes: MissingCodes | None = None,
                 keep_outside: bool = False) -> None:
        self.variable = variable
        self.keep_outside = keep_outside
        self.sampler, book = _prepared(variable)
        self.key = key
        self.joint = book if isinstance(book, JointCodebook) else None
        self.book = book if isinstance(book, Codebook) else None
        self.codes = missing_codes or MissingCodes()
        self.households = None if variable.unit is None else Households(variable)
        if self.codes:
            cats = variable.matrix.categories
            for i, column in enumerate(variable.read_columns):
                self.codes.refuse_categories(column, [joint_cell(c)[i] for c in cats] if self.joint is not None else cats)
        self.rows = self.missing = self.changed = self.outside = 0
        self.margin_samplers: dict[tuple[int, ...], Sampler] = {}

    def release(self, table: pa.Table, start: int, rows: np.ndarray | None = None,
                decode: Callable[[np.ndarray], Any] | None = None) -> tuple[list[Any], tuple[int, int, int, int]]:
        """Released arrays of the variable's columns of ``table``, and the counts (values, missing, changed,
        outside the cells).

        Safe to call from several threads at once (on different rows): the
        counts are returned, not accumulated (see :meth:`add`).  ``decode``, given for a variable of one
        column without missing-value markers, turns the released codes into the column (a polars Series)
        instead of :meth:`Codebook.decode`.
        """
        v = self.variable
        raw = [table.column(c) for c in v.read_columns]
        marks = [self.codes.found(c, values) for c, values in zip(v.read_columns, raw)]
        columns = [
            values if m is None else pc.if_else(pa.array(m), pa.scalar(None, values.type), values)
            for values, m in zip(raw, marks)
        ]
        outside = 0
        joint = self.joint
        if self.book is not None:
            codes = self.book.encode(columns[0], first_row=start, rows=rows, copy=False)
            missing_code = self.book.missing_code
        else:
            assert joint is not None  # a variable has a codebook or a joint one (__init__)
            codes, beyond = joint.encode_cells(columns, first_row=start, rows=rows)
            if beyond.any() and not self.keep_outside:
                joint.raise_outside(columns, beyond, first_row=start, rows=rows)
            outside = int(np.count_nonzero(beyond))  # released unperturbed, like a missing value
            missing_code = MISSING
        if codes.dtype != np.intp or not codes.flags.c_contiguous:
            codes = np.array(codes, dtype=np.intp)
        # drawn in place, or, from codes that are a read-only view (of a dictionary's indices), into new memory
        released = codes if codes.flags.writeable else pool_array(codes.size, np.intp)[1]
        stream, draw_rows = row_stream(v), rows
        if self.households is not None:  # one draw per household: keyed by its id, not by the row
            assert v.unit is not None  # households are kept exactly when the variable has a unit (__init__)
            units = unit_counters(table.column(v.unit), v.unit, start, rows)
            self.households.check(units, codes, table.column(v.unit))
            stream, draw_rows = unit_stream(v), units
        # one array of codes per chunk, counted block by block.  Encoding gives missing values (and only them)
        # the missing code; a joint record is missing if any value is, and stays missing
        missing, changed = _draw(codes, released, self.sampler, key=self.key, variable=stream, start=start,
                                 rows=draw_rows, missing_code=missing_code)
        counts = codes.size, missing, changed, outside
        if self.book is not None:
            if decode is not None and marks[0] is None:
                return [decode(released)], counts
            new = self.book.decode(released, like=columns[0].type)
            if marks[0] is not None:  # a missing code stays what it was
                keep = pa.array(marks[0] & _as_missing(new))
                new = pc.if_else(keep, raw[0], new)
            return [new], counts
        # a record with a missing value keeps its missing values; its present ones are drawn from the matrix's
        # margin over them (PerturbedVariable.margin), unless a stratum is missing; the strata are read only
        kept = pa.array(released == MISSING)
        assert joint is not None
        decoded = joint.decode(released, like=[c.type for c in columns])
        own = len(v.given)
        out = [pc.if_else(kept, original, new) for original, new in zip(raw[own:], decoded[own:])]
        partial = (codes == MISSING) & ~beyond
        if partial.any():
            out = self._margins(columns, out, partial, start, rows)
        return out, counts

    def _margins(self, columns: list[Any], out: list[Any], partial: np.ndarray, start: int,
                 rows: np.ndarray | None) -> list[Any]:
        """``out`` with the present values of the records in ``partial`` (some columns missing)
        drawn from the margin of the matrix over their present columns, each pattern of present
        columns from its own random stream (keyed by the row, as every draw)."""
        v, book = self.variable, self.joint
        assert book is not None  # only a joint variable has records with some columns missing
        where = np.flatnonzero(partial)
        row_of = (start + where) if rows is None else np.asarray(rows)[where]
        level = np.stack([b.encode(pc.take(c, pa.array(where)), rows=row_of) for b, c in zip(book.books, columns)])
        own = len(v.given)
        for present in v.margin_patterns():
            mask = (level[list(present)] >= 0).all(axis=0) & (np.count_nonzero(level >= 0, axis=0) == len(present))
            if not mask.any():
                continue
            labels, margin = v.margin(present)
            # each margin label as level codes of the present columns, and the reverse lookup (mixed radix)
            lab_codes = np.array([[book.books[i].lookup[canonical(x)] for i, x in zip(present, lab)]
                                  for lab in labels], dtype=np.intp).reshape(len(labels), len(present))
            shape = tuple(len(book.levels[i]) for i in present)
            lut = np.full(int(np.prod(shape)), MISSING, dtype=np.intp)
            lut[np.ravel_multi_index(lab_codes.T, shape)] = np.arange(len(labels))
            mcodes = lut[np.ravel_multi_index(level[list(present)][:, mask], shape)]
            # present values in no cell: released as they are when one of them is unpaired (the rules allow it
            # only with a missing column), or when the design kept rule breakers; else an error
            nowhere = np.flatnonzero(mask)[mcodes < 0]
            alone = self._unpaired(level, present, nowhere)
            if not alone.all() and not self.keep_outside:
                bad = int(nowhere[~alone][0])
                raise DataError(f"columns {book.columns}, row {int(row_of[bad]) + 1}: the values "
                                f"{[book.levels[i][level[i, bad]] for i in present]!r} of "
                                f"{[book.columns[i] for i in present]} are in none of the joint categories (they break "
                                "an edit rule, or leave their stratum)")
            drawn = np.empty_like(mcodes)
            if present not in self.margin_samplers:
                self.margin_samplers[present] = sampler_for(margin)
            _draw(mcodes, drawn, self.margin_samplers[present], key=self.key, variable=f"{v.name}|present={present}",
                  start=0, rows=row_of[mask], missing_code=MISSING)
            targets = np.flatnonzero(partial)[mask][mcodes >= 0]
            drawn = drawn[mcodes >= 0]
            for k, i in enumerate(present):
                if i < own:
                    continue
                values = book.books[i].decode(lab_codes[drawn, k], like=columns[i].type)
                flags = np.zeros(len(out[i - own]), dtype=bool)
                flags[targets] = True
                out[i - own] = pc.replace_with_mask(_combined(out[i - own]), pa.array(flags), values)
        return out

    def _unpaired(self, level: np.ndarray, present: tuple[int, ...], records: np.ndarray) -> np.ndarray:
        """Which of ``records`` (positions in ``level``, whose present values are in no cell) hold, in a
        present column, a value the manifest lists as unpaired (with its strata's values)."""
        v, book = self.variable, self.joint
        held = np.zeros(records.size, dtype=bool)
        if not v.unpaired or records.size == 0:
            return held
        assert book is not None  # only a joint variable has unpaired values
        g = len(v.given)
        for i in present:
            if i < g or v.read_columns[i] not in v.unpaired:
                continue
            at = [*range(g), i]
            sizes = [len(book.levels[j]) for j in at]
            labels = [x if isinstance(x, tuple) else (x,) for x in v.unpaired[v.read_columns[i]]]
            codes = [[book.books[j].lookup.get(canonical(x), -1) for j, x in zip(at, label)] for label in labels]
            codes = [c for c in codes if min(c) >= 0]  # a stratum value the cells never hold: no record has it
            if codes:
                listed = np.ravel_multi_index(np.array(codes, dtype=np.intp).T, sizes)
                held |= np.isin(np.ravel_multi_index(level[at][:, records], sizes), listed)
        return held

    def add(self, counts: tuple[int, int, int, int]) -> None:
        """Add the counts of one :meth:`release` to the running totals."""
        self.rows += counts[0]
        self.missing += counts[1]
        self.changed += counts[2]
        self.outside += counts[3]

    def summary(self) -> VariableSummary:
        return VariableSummary(self.variable.name, self.rows, self.missing, self.changed, self.outside)

    def codebook(self, column: str) -> Codebook:
        """The codebook of one of the variable's columns (of a joint variable: that column's own)."""
        if self.book is not None:
            return self.book
        assert self.joint is not None
        return self.joint.books[self.variable.read_columns.index(column)]


def row_stream(variable: PerturbedVariable) -> str:
    """The random stream of a variable's rows: its name, or, for a variable that perturbs a release
    again (``applied_to``), a stream of its own, so that a key used for both steps never draws the
    second with the first's uniforms (the composed law is the product of the two only when their
    draws are independent).

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.manifest import PerturbedVariable
    >>> first = PramMatrix.from_diagonal([0.9, 0.9], ["own", "rent"])
    >>> row_stream(PerturbedVariable("tenure", first)), row_stream(PerturbedVariable("tenure", first, applied_to=first))
    ('tenure', 'tenure|derived')
    """
    return variable.name if variable.applied_to is None else f"{variable.name}|derived"


def unit_stream(variable: PerturbedVariable) -> str:
    """The random stream of a variable drawn once per unit (household): its own, apart from the rows'.

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable
        A variable with a ``unit``.

    Returns
    -------
    str
        The stream's name, which :meth:`pramkit.kernel.rng.SecretKey.philox_key` hashes.

    Examples
    --------
    >>> from pramkit import PramMatrix
    >>> from pramkit.manifest import PerturbedVariable
    >>> tenure = PerturbedVariable("tenure", PramMatrix.from_diagonal([0.9, 0.9], ["own", "rent"]), unit="hid")
    >>> unit_stream(tenure)
    'tenure|unit=hid'
    """
    return f"{variable.name}|unit={variable.unit}"


def unit_counters(ids: pa.Array | pa.ChunkedArray, column: str, start: int,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """The draw counter of each record's unit: a 62-bit hash of the canonical text of its id
    (:func:`pramkit.codebook.canonical`, so ``12`` read as a number or as text is one unit),
    the same in every chunk, file format and engine.

    Parameters
    ----------
    ids : pyarrow.Array or pyarrow.ChunkedArray
        The unit (household) id of each record.
    column : str
        The id column's name, for messages.
    start : int
        The 0-based row number of the first record.
    rows : numpy.ndarray, optional
        Alternatively, each record's 0-based row number.

    Returns
    -------
    numpy.ndarray
        One non-negative ``int64`` counter per record; records of one unit share it.

    Raises
    ------
    DataError
        A record has no id (naming its row, counted from 1).

    Examples
    --------
    >>> c = unit_counters(pa.array(["h1", "h2", "h1"]), "hid", 0)
    >>> bool(c[0] == c[2]), bool(c[0] != c[1]), bool((c >= 0).all())
    (True, True, True)
    >>> bool(unit_counters(pa.array([12]), "hid", 0)[0] == unit_counters(pa.array(["12"]), "hid", 0)[0])
    True
    """
    from pramkit.codebook import canonical

    values = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    encoded = pc.dictionary_encode(values)
    if encoded.null_count:
        pos = int(np.flatnonzero(~np.asarray(encoded.is_valid().to_numpy(zero_copy_only=False)))[0])
        row = int(rows[pos]) if rows is not None else start + pos
        raise DataError(f"row {row + 1} has no household id ({column!r} is missing)")
    texts = np.array([canonical(v) for v in encoded.dictionary.to_pylist()], dtype=object)
    hashes = (pd.util.hash_array(texts, categorize=False) >> np.uint64(2)).astype(np.int64)
    return hashes[np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.intp)]


class Households:
    """Checks, across chunks and threads, that a household variable has one original value per
    household (its members share the household's draw, so they must share its value).

    Parameters
    ----------
    variable : pramkit.manifest.PerturbedVariable
        The household variable (with a ``unit``), for messages.

    Examples
    --------
    The members of a household share its draw, so they share the released value:

    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.manifest import PerturbedVariable
    >>> tenure = PerturbedVariable("tenure", PramMatrix.from_diagonal([0.5, 0.5], ["own", "rent"]), unit="hid")
    >>> data = pd.DataFrame({"hid": ["h1", "h1", "h2", "h2", "h3", "h3"],
    ...                      "tenure": ["own", "own", "rent", "rent", "own", "own"]})
    >>> released = perturb_frame(data, Manifest((tenure,)), key=bytes(32)).data
    >>> int(released.groupby("hid")["tenure"].nunique().max())
    1
    """

    def __init__(self, variable: PerturbedVariable) -> None:
        import threading

        self.variable = variable
        self.units = np.empty(0, dtype=np.int64)
        self.codes = np.empty(0, dtype=np.intp)
        self.lock = threading.Lock()

    def check(self, units: np.ndarray, codes: np.ndarray, ids: pa.Array | pa.ChunkedArray) -> None:
        """Raise :class:`DataError` naming a household whose records differ in the variable.

        The households seen are remembered, so a household split over
        several chunks is checked as a whole.

        Parameters
        ----------
        units : numpy.ndarray
            The unit counter of each record (:func:`unit_counters`).
        codes : numpy.ndarray
            The original code of each record.
        ids : pyarrow.Array or pyarrow.ChunkedArray
            The unit ids, for the message.

        Raises
        ------
        DataError
            A household has two original values (in this chunk, or against an earlier one).

        Examples
        --------
        >>> from pramkit import PramMatrix
        >>> from pramkit.manifest import PerturbedVariable
        >>> tenure = PerturbedVariable("tenure", PramMatrix.from_diagonal([0.9, 0.9], ["own", "rent"]), unit="hid")
        >>> households = Households(tenure)
        >>> ids = pa.array(["h1", "h1", "h2"])
        >>> households.check(unit_counters(ids, "hid", 0), np.array([0, 0, 1]), ids)  # consistent
        >>> later = pa.array(["h2"])  # a later chunk: h2 was "rent" (1)
        >>> households.check(unit_counters(later, "hid", 3), np.array([0]), later)
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: household 'h2' has several values of tenure; a household variable must be the same for every member (unit 'hid')
        """
        order = np.lexsort((codes, units))
        u, c = units[order], codes[order]
        first = np.r_[True, u[1:] != u[:-1]]
        clash = np.flatnonzero(~first & (c != np.r_[c[:1], c[:-1]]))
        if clash.size:
            self._raise(ids, int(order[clash[0]]))
        u, c, where = u[first], c[first], order[first]
        with self.lock:
            pos = np.searchsorted(self.units, u)
            seen = pos < self.units.size
            seen[seen] = self.units[pos[seen]] == u[seen]
            bad = np.flatnonzero(seen)[self.codes[pos[seen]] != c[seen]]
            if bad.size:
                self._raise(ids, int(where[bad[0]]))
            new = ~seen
            if new.any():
                units_all = np.concatenate([self.units, u[new]])
                keep = np.argsort(units_all, kind="stable")
                self.units = units_all[keep]
                self.codes = np.concatenate([self.codes, c[new]])[keep]

    def _raise(self, ids: pa.Array | pa.ChunkedArray, pos: int) -> None:
        v = self.variable
        raise DataError(f"household {ids[pos].as_py()!r} has several values of {', '.join(v.columns)}; a household "
                        f"variable must be the same for every member (unit {v.unit!r})")


#: Sampler and codebook of each matrix in use, by the matrix's identity (matrices are immutable).
_PREPARED: dict[tuple, tuple[weakref.ref, Sampler, Codebook | JointCodebook]] = {}


def _forget(key: tuple, _ref: weakref.ref) -> None:
    """Drop the entry of a matrix that was garbage-collected (the callback of its weak reference)."""
    _PREPARED.pop(key, None)


def _prepared(variable: PerturbedVariable) -> tuple[Sampler, Codebook | JointCodebook]:
    """The sampler and codebook of a variable, built once per matrix and reused by later calls.

    Building them is O(S) Python work (O(S^2) for an alias sampler), which a
    call on a million rows of a variable of 10 000 categories would otherwise
    pay every time.  An entry goes when its matrix is garbage-collected.
    """
    m = variable.matrix
    key = (id(m), variable.name, variable.columns, variable.missing)
    entry = _PREPARED.get(key)
    if entry is not None and entry[0]() is m:
        return entry[1], entry[2]
    book: Codebook | JointCodebook = (
        variable.joint_codebook() if variable.is_joint
        else Codebook(m.categories, column=variable.name, missing=variable.missing))
    sampler = sampler_for(m)
    _PREPARED[key] = (weakref.ref(m, functools.partial(_forget, key)), sampler, book)
    return sampler, book


def _combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _as_missing(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    mask = pc.is_null(values, nan_is_null=True)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


#: Fewest rows of one variable worth a thread of their own.
PARALLEL_ROWS = 1 << 17


def available_threads() -> int:
    """The number of cores this process may run on (the default number of threads).

    Returns
    -------
    int
        The CPU affinity of the process on Linux, else the number of cores; at least 1.

    Examples
    --------
    >>> n = available_threads()
    >>> isinstance(n, int), 1 <= n <= (os.cpu_count() or 1)
    (True, True)
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _joined(parts: list[Any], type: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Arrow parts of one column (arrays or chunked arrays), one after the other, as one column."""
    if len(parts) == 1:
        return parts[0]
    return pa.chunked_array([c for part in parts for c in (part.chunks if isinstance(part, pa.ChunkedArray)
                                                          else [part])], type=type)


@functools.cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pramkit-perturb")


class TablePerturber:
    """Perturbs the manifest's columns of Arrow tables, chunk after chunk.

    ``perturber(table, start)`` returns the table with its perturbed columns
    replaced; ``start`` is the absolute row number of the table's first row
    (or ``rows`` gives every row's number, for rows that arrive out of order).
    Per-variable counts accumulate over calls (:meth:`summaries`).
    ``missing_codes`` are the values the file declares missing although they
    are not null (:class:`pramkit.codebook.MissingCodes`): they are left as
    they are, and a manifest listing one as a category is refused.

    With ``threads`` above 1 (default: every core this process may use), the
    variables of a table and slices of :data:`PARALLEL_ROWS` rows or more run
    on that many threads (NumPy and Arrow release the GIL).  The release does
    not depend on it: row ``i`` always uses the draw ``(K, v, i)``, where ``K``
    is the release key (:func:`release_key` of ``key``, the manifest and
    ``release``), which :attr:`key` holds.

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        The variables to perturb and their matrices.
    key : pramkit.kernel.rng.SecretKey
        The secret key (or the release's key, :func:`release_key`).
    missing_codes : pramkit.codebook.MissingCodes, optional
        The file's missing codes.
    threads : int, optional
        Threads that perturb (default :func:`available_threads`).
    release : str
        The release's label (``""``: none; :func:`release_key`).

    Raises
    ------
    ParameterError
        ``threads`` is below 1, the label is not one, or ``key`` is another release's.
    DataError
        A manifest category is one of ``missing_codes``.

    Examples
    --------
    A file perturbed in two chunks is the file perturbed at once:

    >>> from pramkit import Manifest, PramMatrix
    >>> from pramkit.kernel.rng import SecretKey
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> key = SecretKey(bytes(32), "zeros")
    >>> table = pa.table({"sex": ["m", "f", "f", "m", "f", "m"], "age": ["31", "45", "27", "60", "19", "52"]})
    >>> chunked = TablePerturber(manifest, key, threads=1)
    >>> parts = [chunked(table.slice(0, 4), 0), chunked(table.slice(4), 4)]
    >>> whole = TablePerturber(manifest, key, threads=2)(table, 0)
    >>> pa.concat_tables(parts).equals(whole), whole.column("age").equals(table.column("age"))
    (True, True)
    >>> whole.column("sex").to_pylist()
    ['f', 'm', 'f', 'm', 'f', 'f']
    """

    def __init__(self, manifest: Manifest, key: SecretKey, missing_codes: MissingCodes | None = None,
                 *, threads: int | None = None, release: str = "") -> None:
        self.manifest = manifest
        self.key = release_key(key, manifest, release)
        self._perturbers = [_Perturber(v, self.key, missing_codes, manifest.keeps_rule_breakers)
                            for v in manifest.variables]
        self.threads = available_threads() if threads is None else int(threads)
        if self.threads < 1:
            raise ParameterError(f"threads must be at least 1, not {threads!r}")

    def check_columns(self, columns: list[str], where: str) -> None:
        """:class:`DataError` unless ``columns`` holds every column the manifest reads.

        Parameters
        ----------
        columns : list of str
            The columns of the data.
        where : str
            What holds them, for the message.

        Raises
        ------
        DataError
            Naming the manifest's columns that are not there.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> from pramkit.kernel.rng import SecretKey
        >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
        >>> perturber = TablePerturber(manifest, SecretKey(bytes(32), "zeros"), threads=1)
        >>> perturber.check_columns(["sex", "age"], "'data.csv'")  # all there: nothing happens
        >>> perturber.check_columns(["age"], "'data.csv'")
        Traceback (most recent call last):
        ...
        pramkit.errors.DataError: column(s) ['sex'] are not in 'data.csv'; its columns are ['age']
        """
        require_columns(self.manifest.read_columns, columns, where)

    def _slices(self, n: int) -> list[tuple[int, int]]:
        """Row ranges of one variable: enough for about two tasks per thread over all variables."""
        wanted = -(-2 * self.threads // max(len(self._perturbers), 1)) if self.threads > 1 else 1
        parts = max(1, min(wanted, n // PARALLEL_ROWS))
        bounds = [n * i // parts for i in range(parts + 1)]
        return list(itertools.pairwise(bounds))

    def __call__(self, table: pa.Table, start: int = 0, rows: np.ndarray | None = None) -> pa.Table:
        for name, parts in self.released(table, start, rows):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(i), _joined(parts, table.schema.field(i).type))
        return table

    def released(self, table: pa.Table, start: int = 0, rows: np.ndarray | None = None,
                 decoders: dict[str, Callable[[np.ndarray], Any]] | None = None) -> list[tuple[str, list[Any]]]:
        """The released columns of ``table``, each as its parts (one per slice of rows, in order), and
        the counts added to :meth:`summaries`: what :meth:`__call__` puts back into the table.

        ``decoders`` maps a perturbed column (of a variable of one column) to a function of its
        released codes (``-1`` or the missing category: missing) that gives the column's part in
        another frame's type (a polars Series, :func:`pramkit.frames.polars_gather`); the other
        columns' parts are Arrow arrays.
        """
        slices = self._slices(table.num_rows)
        tasks = [(p, a, b) for p in self._perturbers for a, b in slices]
        decoders = decoders or {}

        def run(task: tuple[_Perturber, int, int]) -> tuple[list[Any], tuple[int, int, int, int]]:
            p, a, b = task
            part = table if (a, b) == (0, table.num_rows) else table.slice(a, b - a)
            return p.release(part, start + a, None if rows is None else rows[a:b],
                             decoders.get(p.variable.columns[0]) if len(p.variable.columns) == 1 else None)

        if len(tasks) > 1 and self.threads > 1:
            futures = [_pool(self.threads).submit(run, t) for t in tasks]
            results = [f.result() for f in futures]  # in task order: the first error is the one a serial run meets
        else:
            results = [run(t) for t in tasks]
        out = []
        for k, p in enumerate(self._perturbers):
            per_slice = results[k * len(slices):(k + 1) * len(slices)]
            for _, counts in per_slice:
                p.add(counts)
            out += [(name, [released[j] for released, _ in per_slice]) for j, name in enumerate(p.variable.columns)]
        return out

    def summaries(self) -> tuple[VariableSummary, ...]:
        """What perturbation did to each variable, over every call so far.

        Returns
        -------
        tuple of VariableSummary
            One per variable of the manifest, in its order.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> from pramkit.kernel.rng import SecretKey
        >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
        >>> perturber = TablePerturber(manifest, SecretKey(bytes(32), "zeros"), threads=1)
        >>> _ = perturber(pa.table({"sex": ["m", "f", None]}), 0)
        >>> _ = perturber(pa.table({"sex": ["f", "m", "m"]}), 3)
        >>> perturber.summaries()
        (VariableSummary(name='sex', rows=6, missing=1, changed=3, outside=0),)
        """
        return tuple(p.summary() for p in self._perturbers)

    def codebook(self, column: str) -> Codebook:
        """The codebook of a perturbed column.

        Parameters
        ----------
        column : str
            A column the manifest perturbs.

        Returns
        -------
        pramkit.codebook.Codebook
            The codebook the perturber encodes it with (for a joint variable, that column's own).

        Raises
        ------
        StopIteration
            The manifest does not perturb ``column``.

        Examples
        --------
        >>> from pramkit import Manifest, PramMatrix
        >>> from pramkit.kernel.rng import SecretKey
        >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
        >>> TablePerturber(manifest, SecretKey(bytes(32), "zeros"), threads=1).codebook("sex").categories
        ['f', 'm']
        """
        return next(p.codebook(column) for p in self._perturbers if column in p.variable.columns)


@dataclass(frozen=True, eq=False)
class FrameResult:
    """What :func:`perturb_frame` returns: the released frame and what perturbation did.

    It unpacks and indexes as the pair ``(data, result)``, so that code
    written for the tuple :func:`perturb_frame` used to return keeps working.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The released frame, of the type of the original.
    result : ApplyResult or None
        What perturbation did (``None`` for a ``LazyFrame``: it perturbs when computed).

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> data = pd.DataFrame({"sex": ["m", "f", "f", "m"], "age": [31, 45, 27, 60]})
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> released = perturb_frame(data, manifest, key=bytes(32))
    >>> released.data["age"].tolist(), released.result.rows
    ([31, 45, 27, 60], 4)
    >>> frame, result = released
    >>> frame is released.data and result is released[1]
    True
    >>> released.to_dict() == result.to_dict()
    True
    """

    data: Any
    result: ApplyResult | None

    def to_dict(self) -> dict[str, Any]:
        """:meth:`ApplyResult.to_dict` of :attr:`result` (the frame itself is not JSON).

        Returns
        -------
        dict
            Plain values, ready for :func:`json.dumps`.

        Raises
        ------
        AttributeError
            :attr:`result` is ``None`` (a ``LazyFrame``: it perturbs when computed).

        Examples
        --------
        >>> import json
        >>> from pramkit import Manifest, PramMatrix
        >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
        >>> summary = perturb_frame(pd.DataFrame({"sex": ["m", "f"]}), manifest, key=bytes(32)).to_dict()
        >>> json.loads(json.dumps(summary))["variables"][0]["rows"]
        2
        """
        if self.result is None:
            raise AttributeError("a LazyFrame's release has no result until it is computed, so no to_dict()")
        return self.result.to_dict()

    def __iter__(self) -> Iterator[Any]:
        return iter((self.data, self.result))

    def __getitem__(self, index: int) -> Any:
        return (self.data, self.result)[index]


#: Whether a shallow copy of a frame keeps its columns apart from the frame's (copy-on-write, always on from pandas 3).
_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3


def perturb_frame(
    data: Any,
    manifest: Manifest,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    threads: int | None = None,
    chunk_rows: int = CHUNK_ROWS,
    release: str = "",
) -> FrameResult:
    """Perturb the manifest's columns of a DataFrame (a new frame; other columns untouched).

    Row ``i`` of the frame (by position) is row ``i`` of the release's keyed
    streams (:func:`release_key` of the key, the manifest and ``release``): the
    same key, manifest and label give the same release, as :func:`apply_file`
    writes it; another manifest or label, draws of its own.
    Each column is converted to codes once (pandas categorical codes, Arrow
    dictionaries, or one hash lookup of the column's values among the
    categories), perturbed, and taken back from the categories in the
    column's own dtype.

    A polars frame or an Arrow table is perturbed as Arrow, without pandas, and
    comes back as its own type (a polars frame converts only the columns the
    manifest reads).  A polars ``LazyFrame`` comes back as a ``LazyFrame`` that
    perturbs when polars computes it (``collect``, ``sink_parquet``, ...): the
    input is read in batches of at most ``chunk_rows`` rows, each perturbed as it
    comes, so memory is bounded by a batch; its counts are not known before, so
    ``result`` is then ``None``.

    Parameters
    ----------
    data : the original records: a pandas or polars DataFrame, a polars LazyFrame or an Arrow table
    manifest : the variables to perturb and their matrices
    key : the secret key (see :func:`pramkit.kernel.rng.resolve_key`; ``None``: a fresh one, never saved)
    threads : the threads that perturb (see :class:`TablePerturber`); the release does not depend on it
    chunk_rows : the most rows of a ``LazyFrame`` perturbed at once; the release does not depend on it
    release : the release's label (``""``: none), to tell apart releases made with one key and one manifest

    Returns
    -------
    FrameResult
        ``.data``, the released frame (same index, columns and dtypes; a
        categorical comes back with the matrix's categories), and
        ``.result``, the counts per variable (:class:`ApplyResult`).

    Raises
    ------
    DataError
        A column of the manifest is missing, the frame has no rows, or a
        value is not one of its variable's categories (from a ``LazyFrame``:
        when polars computes it); the manifest states a sampling design of
        another sample size than the frame's rows
        (:func:`pramkit.privacy.amplification.stated_sampling`); a derived
        manifest and a frame whose receipt (:func:`pramkit.engine.receipt.mark_frame`)
        does not name the manifest it derives from
        (:func:`pramkit.release.derive.check_derived_input`).
    KeyFileError
        The key is too short or its file cannot be read.
    ParameterError
        ``threads`` or ``chunk_rows`` is below 1, or ``release`` is not a label.

    Examples
    --------
    >>> from pramkit import Manifest, PramMatrix
    >>> data = pd.DataFrame({"region": pd.Categorical(["north", "south"] * 3)})
    >>> manifest = Manifest.of({"region": PramMatrix.from_diagonal([0.7, 0.7], ["north", "south"])})
    >>> released = perturb_frame(data, manifest, key=bytes(32))
    >>> released.data["region"].dtype == data["region"].dtype
    True
    >>> released.data.equals(perturb_frame(data, manifest, key=bytes(32)).data)  # the key fixes the release
    True
    >>> v = released.result.variables[0]
    >>> v.rows, v.changed == int((released.data["region"] != data["region"]).sum())
    (6, True)
    """
    t0 = time.perf_counter()
    secret = resolve_key(key)
    from pramkit.engine.receipt import check_derived_input
    from pramkit.frames import streamed
    from pramkit.privacy.amplification import stated_sampling

    check_derived_input(manifest, data)  # a derived manifest: the frame's receipt (attrs) names its release
    if streamed(data):
        return _perturb_arrow_frame(data, manifest, secret, threads, chunk_rows, release)
    require_columns(manifest.read_columns, list(data.columns), "the data")
    if len(data) == 0:
        raise DataError("the data have no rows")
    stated_sampling(manifest, len(data), "the frame")
    perturber = TablePerturber(manifest, secret, threads=threads, release=release)
    columns = manifest.read_columns
    perturbed = set(manifest.columns)
    arrays = [_arrow_column(data[name], perturber.codebook(name) if name in perturbed else None) for name in columns]
    released = perturber(pa.table(arrays, names=columns))
    out = data.copy(deep=not _COPY_ON_WRITE)
    for name in manifest.columns:
        out[name] = _as_column(released.column(name), data[name], perturber.codebook(name))
    assert perturber.key.release is not None  # the release's key (release_key)
    label = perturber.key.release[1]
    result = ApplyResult(
        rows=len(data), variables=perturber.summaries(), key_source=secret.source,
        record_epsilon=manifest.record_epsilon, seconds=time.perf_counter() - t0, perturbed=tuple(manifest.names),
        key_fingerprint=secret.fingerprint, release=label,
    )
    from pramkit.engine.receipt import input_of, mark_frame

    mark_frame(out, manifest, release=label, input_release=input_of(data))  # its receipt, in out.attrs: estimate_table refuses it with another manifest
    return FrameResult(out, result)


def _perturb_arrow_frame(data: Any, manifest: Manifest, key: SecretKey, threads: int | None,
                         chunk_rows: int, release: str = "") -> FrameResult:
    """:func:`perturb_frame` of a polars frame (eager or lazy) or an Arrow table, through Arrow: the same type
    out.

    >>> import polars as pl
    >>> from pramkit import PramMatrix
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> frame = pl.DataFrame({"sex": ["m", "f", "f", "m", None, "m"], "age": [31, 45, 27, 60, 19, 52]})
    >>> eager = perturb_frame(frame, manifest, key=bytes(32))
    >>> lazy = perturb_frame(frame.lazy(), manifest, key=bytes(32), chunk_rows=4)
    >>> eager.data["sex"].to_list(), eager.result.variables[0].missing
    (['f', 'm', 'f', 'm', None, 'f'], 1)
    >>> lazy.result is None, lazy.data.collect().equals(eager.data)
    (True, True)
    >>> lazy.data.head(3).collect().equals(eager.data.head(3))  # the first rows only, with the same draws
    True
    """
    from pramkit.frames import describe, frame_columns, frame_kind

    if chunk_rows < 1:
        raise ParameterError(f"chunk_rows must be at least 1, not {chunk_rows!r}")
    require_columns(manifest.read_columns, frame_columns(data), describe(data))
    if frame_kind(data) == "polars-lazy":
        stream = TablePerturber(manifest, key, threads=threads, release=release).key  # parameters checked now
        return FrameResult(_lazy_release(data, manifest, stream, threads, chunk_rows, release), None)
    rows = data.num_rows if isinstance(data, pa.Table) else data.height
    if rows == 0:
        raise DataError("the data have no rows")
    from pramkit.privacy.amplification import stated_sampling

    stated_sampling(manifest, rows, "the frame")
    perturber = TablePerturber(manifest, key, threads=threads, release=release)
    out = perturber(data, 0) if isinstance(data, pa.Table) else _polars_release(data, perturber, 0)
    return FrameResult(out, ApplyResult(
        rows=rows, variables=perturber.summaries(), key_source=key.source,
        record_epsilon=manifest.record_epsilon, perturbed=tuple(manifest.names), key_fingerprint=key.fingerprint,
        release=release_label(release)))


def _lazy_release(lazy: Any, manifest: Manifest, key: SecretKey, threads: int | None, chunk_rows: int,
                  release: str) -> Any:
    """A ``LazyFrame`` of ``lazy`` released batch by batch when polars computes it (a polars IO source)."""
    import polars as pl

    from pramkit.frames import polars_batches

    def source(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
               batch_size: int | None) -> Iterator[Any]:
        perturber = TablePerturber(manifest, key, threads=threads, release=release)  # each computation: from row 0
        start = sent = 0
        for batch in polars_batches(lazy, chunk_rows):
            released = _polars_release(batch, perturber, start)
            start += batch.height
            if with_columns is not None:
                released = released.select(with_columns)
            if predicate is not None:  # after the draws: row i keeps its draw whatever is filtered
                released = released.filter(predicate)
            if n_rows is not None:  # polars asks for the first n_rows only (head): the rest is not drawn
                released = released.head(n_rows - sent)
            sent += released.height
            yield released
            if n_rows is not None and sent >= n_rows:
                return
        if start == 0:
            raise DataError("the data have no rows")
        if n_rows is None:  # every row was read: its count is known only now
            from pramkit.privacy.amplification import stated_sampling

            stated_sampling(manifest, start, "the frame")

    return pl.io.plugins.register_io_source(source, schema=lazy.collect_schema(), explain_name="pramkit release")


def _polars_text(series: Any, p: _Perturber) -> tuple[Callable[[np.ndarray], Any], pa.Array] | None:
    """For a polars text column of a variable of its own (:func:`_polars_release`): what writes its released
    codes in its own dtype, and the column as Arrow (a ``String`` column as the string views polars holds,
    not copied); ``None`` for another column.  What writes the codes (and an ``Enum``'s categories as Arrow)
    is made once per codebook and dtype (:meth:`pramkit.codebook.Codebook.polars_entry`).  Refuses an ``Enum``
    without a label of the matrix."""
    import polars as pl

    from pramkit.frames import polars_text_kind

    kind = polars_text_kind(series)
    book = p.book
    if kind is None or book is None:
        return None
    name = series.name
    labels, categories = book.polars_entry(name, series.dtype, functools.partial(_polars_writer, book, series, kind))
    if labels is None:  # an Enum cannot hold a label the matrix may release: refused, never made missing
        lacking = sorted({t for t in book.texts if t is not None} - set(series.dtype.categories.to_list()))
        raise DataError(f"column {name!r} is a polars Enum without the categories {lacking} of its matrix; "
                        "cast it to an Enum that has them, or to Categorical or String")
    if kind == "string":
        return labels, series.to_arrow(compat_level=pl.CompatLevel.newest())
    from pramkit.frames import polars_dictionary, polars_gather

    return functools.partial(polars_gather, labels), polars_dictionary(series, categories)


def _polars_writer(book: Codebook, series: Any, kind: str) -> tuple[Any, pa.Array | None]:
    """What writes released codes in the dtype of the polars text column ``series`` (``None`` for an ``Enum``
    without a label of the matrix), and an ``Enum``'s categories as Arrow (a ``Categorical``'s grow, and are
    read with each column)."""
    from pramkit.frames import PolarsText, polars_categories, polars_labels

    text = book.labels(pa.large_string())
    if kind == "string":
        return PolarsText(text, series.name), None
    return polars_labels(text, series), polars_categories(series.dtype) if kind == "enum" else None


def _polars_release(frame: Any, perturber: TablePerturber, start: int) -> Any:
    """The release of an eager polars frame whose first row is row ``start`` of the release.

    The manifest's columns go to Arrow (text as the string views polars holds, read where they are;
    a ``Categorical`` or an ``Enum`` by its physical codes, :func:`pramkit.frames.polars_dictionary`)
    and are perturbed there; a text
    column of a variable of its own comes back by one gather of its labels, made once in the
    column's own dtype, by the released codes (:func:`pramkit.frames.polars_gather`; a ``String``
    column's by its labels' string views, :class:`pramkit.frames.PolarsText`), instead of
    as Arrow text that polars converts again.  Other columns (numbers, a joint variable's) come back
    through Arrow.  An ``Enum`` column without a label of its matrix is refused (:class:`DataError`):
    a released value it cannot hold would become missing.
    """
    import polars as pl

    from pramkit.frames import as_arrow, to_native

    single = {p.variable.columns[0]: p for p in perturber._perturbers
              if p.book is not None and list(p.variable.read_columns) == list(p.variable.columns)}
    decoders: dict[str, Callable[[np.ndarray], Any]] = {}
    fast: dict[str, pa.Array] = {}
    for name, p in single.items():
        text = _polars_text(frame.get_column(name), p)
        if text is not None:
            decoders[name], fast[name] = text
    others = [c for c in perturber.manifest.read_columns if c not in fast]
    table = as_arrow(frame.select(others)) if others else pa.table(fast)
    for name, array in fast.items() if others else ():
        table = table.append_column(name, array)
    columns, arrow = [], []
    for name, parts in perturber.released(table, start, decoders=decoders):
        if name in decoders:
            columns.append(parts[0] if len(parts) == 1 else pl.concat(parts, rechunk=False))
        else:
            arrow.append((table.schema.field(name), _joined(parts, table.schema.field(name).type)))
    if arrow:  # the columns read only (strata, households) went to Arrow, and stay as they are
        released = pa.table([c for _, c in arrow], schema=pa.schema([f for f, _ in arrow]))
        columns += to_native(released, frame).get_columns()
    return frame.with_columns(columns)


def _arrow_column(column: pd.Series, book: Codebook | None = None) -> pa.Array | pa.ChunkedArray:
    """A pandas column as Arrow, with the values :meth:`pyarrow.Table.from_pandas` gives it (an Arrow-backed
    column as it is).  Two kinds go faster as a dictionary array: a categorical without missing values, by its
    codes (no null mask to build), and a column of Python strings, by the codes of ``book`` (the column's
    codebook) where every value is missing or one of its labels, else by pandas' factorisation (Arrow converts
    the distinct strings only); :func:`_as_column` takes the released objects from the dictionary."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        if codes.size and codes.min() >= 0:
            empty = pa.array(column.iloc[:0])  # pyarrow's dictionary and type for the column
            return pa.DictionaryArray.from_arrays(pa.array(codes), empty.dictionary, ordered=empty.type.ordered,
                                                  safe=False)
    try:
        if column.dtype == object:
            known = None if book is None else book.text_dictionary_array(column.to_numpy(), na=(pd.NA, pd.NaT))
            if known is not None:
                return known
            codes, distinct = pd.factorize(column)  # a perturbed column has few distinct values, its categories
            if pd.api.types.infer_dtype(distinct, skipna=False) == "string":
                return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0),
                                                      pa.array(distinct, type=pa.string()))
        return pa.array(column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError) as exc:
        raise DataError(f"column {column.name!r}: cannot read its values ({exc})") from None


def _as_column(released: pa.ChunkedArray, original: pd.Series, book: Codebook) -> pd.Series:
    """Released values as a column like ``original``: its index, and its dtype where that can hold them.

    A pandas categorical comes back categorical, its categories those of the
    matrix (``book``'s, whose pandas dtype is built once); a column of Python
    strings as the matrix's labels (missing: NaN, as pandas converts a null);
    a column of an Arrow dtype wraps the released Arrow array as it is.
    """
    if isinstance(original.dtype, pd.ArrowDtype) and released.type == original.dtype.pyarrow_dtype:
        return pd.Series(pd.arrays.ArrowExtensionArray(released), index=original.index)
    categorical = isinstance(original.dtype, pd.CategoricalDtype)
    if (categorical or original.dtype == object) and pa.types.is_dictionary(released.type):
        dictionary = book.dictionary(released.type.value_type)
        if all(c.dictionary is dictionary or c.dictionary.equals(dictionary) for c in released.chunks):
            parts = [(c.indices.fill_null(-1) if c.null_count else c.indices).to_numpy() for c in released.chunks]
            codes = parts[0] if len(parts) == 1 else np.concatenate(parts)
            if categorical:
                return pd.Series(pd.Categorical.from_codes(codes, dtype=book.categorical_dtype(released.type),
                                                           validate=False), index=original.index)
            return pd.Series(book.dictionary_objects(codes, released.type.value_type), index=original.index,
                             dtype=object, copy=False)
    new = released.to_pandas()
    new.index = original.index
    if categorical:
        return new
    try:
        return new.astype(original.dtype)
    except (TypeError, ValueError):
        return new


def apply_file(
    data: str | Path | Source,
    manifest: Manifest | str | Path,
    out: str | Path,
    *,
    key: SecretKey | bytes | str | Path | None = None,
    force: bool = False,
    chunk_rows: int = CHUNK_ROWS,
    quiet: bool = True,
    na_values: Sequence[str] = NA_VALUES,
    receipt: bool = True,
    threads: int | None = None,
    shuffle: bool = False,
    public_columns: Sequence[str] = (),
    delta: float = DEFAULT_DELTA,
    release: str = "",
    sep: str = CSV_SEP,
    encoding: str = CSV_ENCODING,
    spec: Any = None,
) -> ApplyResult:
    """Perturb a file chunk by chunk into ``out`` (same columns, order and types).

    Memory is O(chunk).  The output is written atomically and does not depend
    on ``chunk_rows``: row ``i`` of variable ``v`` always uses draw ``(K, v, i)``
    of the release key ``K`` (:func:`release_key` of the key, the manifest and
    ``release``).  One key and one manifest make one release: the same key,
    manifest and label write the same file again, byte for byte; releasing
    other data with the same key and manifest (a panel's next wave, a corrected
    file) needs another ``release`` label, which the receipt records.

    ``na_values`` are the texts of a CSV file that are missing besides the
    empty field (default ``("NA",)``; ``()`` for none).  Missing values, those
    markers and SPSS user-missing codes are never perturbed and come out as
    they went in; SPSS user-missing declarations are kept.  No value is
    released as a missing code: a manifest listing one as a category is
    refused.  The output is never one of the inputs (data, manifest, key file),
    whatever ``force`` says.  ``sep`` and ``encoding`` say how a CSV file is
    written (:func:`pramkit.io.csv_dialect`); a CSV release of a CSV file is
    written with the same separator and encoding.

    With ``receipt`` (the default) a public release receipt
    ``OUT.receipt.json`` records which manifest made the release
    (:mod:`pramkit.engine.receipt`).  It is renamed into place right after the
    released file (:func:`pramkit.engine.receipt.receipt_after`): when the release
    fails, an earlier release keeps both its file and its receipt.

    ``threads``: the threads that perturb a chunk (default: every core this
    process may use; see :class:`TablePerturber`); the output does not
    depend on it.

    ``shuffle`` writes the rows in an order drawn from the key
    (:mod:`pramkit.engine.shuffle`, out of core: about one chunk in memory),
    the same for any chunk size; the result's ``guarantees`` and the receipt
    then state the central ``(epsilon, delta)`` of the shuffled file, or the
    condition that fails (:func:`pramkit.privacy.amplification.release_guarantees`).
    ``public_columns`` are columns released as they are that the guarantee
    treats as public knowledge.

    Parameters
    ----------
    data : str, pathlib.Path or pramkit.source.Source
        The original file (CSV, Parquet, Stata, SPSS or SAS), or a folder of part files
        (:func:`pramkit.io.dataset_parts`), or its :class:`pramkit.source.Source` (opened once: its
        records, receipt and digest are asked of it; it is read with its own ``na_values``, ``sep`` and
        ``encoding``, not these keywords').
    manifest : pramkit.manifest.Manifest, or str or pathlib.Path
        The manifest, or its file.
    out : str or pathlib.Path
        The released file; its suffix gives the format.
    key : SecretKey, bytes, str, pathlib.Path or None
        The secret key (:func:`pramkit.kernel.rng.resolve_key`; ``None``: a fresh one, never saved).
    force : bool
        Replace an existing output.
    chunk_rows : int
        Rows per chunk.
    quiet : bool
        No progress bar.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    receipt : bool
        Write the release receipt ``OUT.receipt.json``.
    threads : int, optional
        Threads that perturb a chunk.
    shuffle : bool
        Write the rows in the key's random order.
    public_columns : sequence of str
        Columns declared public (with ``shuffle`` only).
    delta : float
        The delta of the shuffled file's central guarantee.
    release : str
        The release's label (``""``: none; public, in the receipt), to tell apart releases
        made with one key and one manifest.
    sep, encoding : str
        The field separator and character encoding of a CSV file (default ``","``, ``"utf-8"``).
    spec : pramkit.release.apply_spec.ApplySpec, optional
        The settings above (``chunk_rows``, ``threads``, ``shuffle``, ``public_columns``, ``release``,
        ``na_values``, ``sep``, ``encoding``) as one specification instead of these keywords, checked as
        ``pramkit apply`` checks them (not both; its ``engine`` must be ``"local"``: ``spec.apply`` runs
        the others).

    Returns
    -------
    ApplyResult
        The counts per variable, the output and receipt paths, the key's
        source and fingerprint.

    Raises
    ------
    ParameterError
        ``out`` is an input, or ``chunk_rows`` is below 1, or the shuffle's columns do not fit
        (:func:`pramkit.privacy.amplification.check_shuffle`), or ``release`` is not a label.
    OutputExistsError
        ``out`` exists and ``force`` is false.
    DataError
        The file cannot be read, lacks a column, has no data rows, or holds
        a value that is not a category; its row count is not the sample the
        manifest's sampling design states (refused before the release is
        renamed into place); a derived manifest and a file whose receipt does
        not name the manifest it derives from
        (:func:`pramkit.release.derive.check_derived_input`).
    ManifestError, KeyFileError
        The manifest or the key cannot be read.
    WriteError
        ``out`` cannot be written there (a folder, or in a folder that does not
        exist), or the release or its receipt cannot be written.

    Examples
    --------
    The release does not depend on the chunk size, and the other columns
    and the missing marker ``NA`` come out as they went in:

    >>> import pathlib, tempfile
    >>> from pramkit import PramMatrix
    >>> from pramkit.io import read_table, sha256_of
    >>> manifest = Manifest.of({"sex": PramMatrix.from_diagonal([0.8, 0.8], ["f", "m"])})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text("sex,age\\nm,31\\nf,NA\\nNA,27\\nm,60\\nf,19\\n")
    ...     result = apply_file(d / "data.csv", manifest, d / "a.csv", key=bytes(32))
    ...     _ = apply_file(d / "data.csv", manifest, d / "b.csv", key=bytes(32), chunk_rows=2, receipt=False)
    ...     print(result.rows, result.variables[0].missing, sha256_of(d / "a.csv") == sha256_of(d / "b.csv"))
    ...     print(sorted(p.name for p in d.iterdir()))
    ...     print(read_table(d / "a.csv", na_values=()).age.tolist())
    5 1 True
    ['a.csv', 'a.csv.receipt.json', 'b.csv', 'data.csv']
    ['31', 'NA', '27', '60', '19']

    The settings may come as one :class:`pramkit.release.apply_spec.ApplySpec` (not both ways), the
    same release:

    >>> from pramkit.release.apply_spec import ApplySpec
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text("sex;age\\nm;31\\nf;NA\\nNA;27\\n")
    ...     _ = apply_file(d / "data.csv", manifest, d / "a.csv", key=bytes(32), sep=";", release="wave 2")
    ...     _ = apply_file(d / "data.csv", manifest, d / "b.csv", key=bytes(32),
    ...                    spec=ApplySpec(sep=";", release="wave 2", chunk_rows=1))
    ...     print(sha256_of(d / "a.csv") == sha256_of(d / "b.csv"))
    True
    >>> apply_file("data.csv", manifest, "c.csv", sep=";", spec=ApplySpec(sep=";"))
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: give the settings as an ApplySpec or as keywords, not both (sep)
    """
    if spec is not None:
        given = {"chunk_rows": chunk_rows, "threads": threads, "na_values": na_values, "shuffle": shuffle,
                 "public_columns": public_columns, "release": release, "sep": sep, "encoding": encoding}
        only_spec(_APPLY_FILE, given, spec)  # its own signature, even where apply_file is wrapped
        with checked(spec):  # checked first: a setting its rule refuses is refused so
            if getattr(spec, "engine", "local") != "local":
                raise ParameterError(f"apply_file applies on this machine, not with engine {spec.engine!r}: call "
                                     "spec.apply(data, manifest, out, key=...) to run the spec's engine")
            source = Source.open(data, na_values=spec.na_values, sep=spec.sep, encoding=spec.encoding)
            return _apply(source, manifest, out, spec, key=key, force=force, quiet=quiet, receipt=receipt,
                          delta=delta)
    made = ApplySettings(chunk_rows=chunk_rows, threads=threads, na_values=na_values,  # type: ignore[arg-type]
                         shuffle=shuffle, public_columns=tuple(public_columns), release=release or None, sep=sep,
                         encoding=encoding)

    def keywords_checked() -> None:  # the keywords' own rules and messages, in place of ApplySettings.check
        release_label(release)
        if chunk_rows < 1:
            raise ParameterError("chunk_rows must be at least 1")

    with checked(made, by=keywords_checked):
        source = Source.open(data, na_values=na_values, sep=sep, encoding=encoding)  # opened once, asked below
        return _apply(source, manifest, out, made, key=key, force=force, quiet=quiet, receipt=receipt, delta=delta)


#: :func:`apply_file` itself, whose signature holds the keywords' defaults (:func:`pramkit.settings.only_spec`).
_APPLY_FILE = apply_file


def _apply(source: Source, manifest: Manifest | str | Path, out: str | Path, spec: ApplySettings, *,
           key: SecretKey | bytes | str | Path | None, force: bool, quiet: bool, receipt: bool,
           delta: float) -> ApplyResult:
    """:func:`apply_file`'s one door: perturb the opened ``source`` into ``out`` by ``spec`` (checked: its rules
    are not run again here), the files and the key given beside it."""
    from pramkit.engine.receipt import check_derived_input, input_of, receipt_after, receipt_path
    from pramkit.engine.shuffle import CloneGroups, ShuffledWriter
    from pramkit.io_stat import check_codes_named
    from pramkit.privacy.amplification import check_shuffle, release_guarantees, stated_sampling

    t0 = time.perf_counter()
    man = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    secret = resolve_key(key)
    label, public_columns, chunk_rows = spec.label(), spec.columns(), spec.chunk_rows
    if source.path is None:
        raise ParameterError(f"apply_file reads a file or a folder of part files, not {source.described}; "
                             "perturb a frame in memory with perturb_frame")
    src, dst = source.path, Path(out)
    inputs = [src, None if isinstance(manifest, Manifest) else manifest, secret.path]
    check_writable(dst, force=force, inputs=inputs)
    csv_dialect(source.sep, source.encoding)  # the source's own (a Source given as data reads with its settings)
    named = "the manifest" if isinstance(manifest, Manifest) else f"manifest {str(manifest)!r}"
    check_derived_input(man, source, named)
    start = 0
    # exits in reverse order: the released file is renamed into place first, then its receipt
    with receipt_after(dst, manifest, inputs=inputs, enabled=receipt, release=label) as pending:
        meta, batches = source.batches(chunk_rows=chunk_rows, keep_missing_codes=True, flat=man.read_columns)
        check_codes_named(man, meta.missing, meta.labels, repr(str(src)))
        perturber = TablePerturber(man, secret, meta.missing, threads=spec.threads, release=label)
        perturber.check_columns(meta.columns, f"{str(src)!r}")
        check_shuffle(man, meta.columns, public_columns, shuffle=spec.shuffle)
        if meta.rows is not None:  # known before reading (Parquet, Stata, SPSS): refused before any work
            stated_sampling(man, meta.rows, repr(str(src)), named)
        groups = CloneGroups(list(public_columns), man.columns, meta.missing) if spec.shuffle else None
        with progress(total=meta.rows, desc="perturbing", unit="rows", quiet=quiet) as bar, \
                TableWriter(dst, force=force, meta=meta, inputs=inputs) as writer, \
                ShuffledWriter(writer, perturber.key if spec.shuffle else None, chunk_rows=chunk_rows,
                               rows=meta.rows, source=src, where=dst.parent) as out_rows:
            for table in batches:
                table = perturber(table, start)
                out_rows.write(table, start)
                if groups is not None:
                    groups.add(table)
                start += table.num_rows
                bar.update(table.num_rows)
            source.forget()  # a file read whole is held no more
            if start == 0:
                raise DataError(f"file {str(src)!r} has no data rows")
            stated_sampling(man, start, repr(str(src)), named)  # a CSV's rows are known now, before the rename
            out_rows.finish()
            guarantees = None if groups is None else release_guarantees(
                man, columns=meta.columns, public_columns=public_columns, shuffled=True, clones=groups.smallest,
                delta=delta)
            if pending is not None:  # the receipt's content now, with the digest of what will appear
                writer.close()
                pending.fill(rows=start, digest=writer.sha256,
                             guarantees=None if guarantees is None else guarantees.to_dict(),
                             input_release=input_of(source))  # a release of a release: the chain, for estimates
    return ApplyResult(
        rows=start, variables=perturber.summaries(), key_source=secret.source,
        record_epsilon=man.record_epsilon, output=str(dst), seconds=time.perf_counter() - t0,
        perturbed=tuple(man.names), key_fingerprint=secret.fingerprint,
        receipt=str(receipt_path(dst)) if receipt else None, guarantees=guarantees, release=label,
    )
