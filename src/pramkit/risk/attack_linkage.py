"""Linkage: the original's records found in a released file, exactly and by distance.

**Exact matches.**  A record of the original is *unique on the known columns* when no other record of the
original shares its values there; it is *found* when at least one released record has those values, and
*linked* when exactly one does (the one-to-one match an intruder holding the known columns would trust).
On all columns, a *unique record* is found when some released record equals it in every column.

**Distance to the closest released record (DCR).**  Every column is compared as a category (equal or not;
a missing value equals a missing value and nothing else).  The distance between two records is the number
of columns where they differ over the number of columns (the normalised Hamming distance, 0 to 1); the DCR
of a record of the original is its distance to the closest released record.

**Against a holdout.**  A DCR means little alone: other persons of the same population are close too.
SDMetrics' DCR overfitting protection compares the distance to the records a release was made from with
the distance to records held out of it.  Here a keyed random half of the original is held out (the
release was made from the whole original, held-out records included): for each record of the other half
(the *attacked* records), its DCR to the release is set against its distance to the closest held-out
record, a person of the same population who is not the record itself.  Nearest distances shrink as a set
grows, so both sets are made the same size: the release is compared through a keyed random sample of as
many released records as the holdout holds (or the holdout sampled to the release's size).  If the
release said nothing of the attacked records beyond what the population says (released records
exchangeable with held-out ones), a record would be closer to the sampled release as often as to the
holdout; ``closer_to_release`` far above ``closer_to_holdout`` says the release keeps records close to
the persons it was made from.  Because the held-out records were used to make the release too, the
comparison says nothing of *their* protection, and it is a comparison with other persons, not with a
release made without the attacked records.  With a holdout file (records of the same population *not*
used to make the release), every record of the original is attacked and the file is the holdout.

Distances are computed exactly, identical rows grouped first: the agreements of a block of records with
every released record are one matrix product of one-hot codes (the values many records share) plus the
pairs of records sharing a rare value, added one column at a time.

Private: every figure comes from the original; the per-record figures (:meth:`LinkageResult.per_record`)
name records and go only to a private file (:func:`write_per_record`).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit.defaults import PUBLIC_FOLDER
from pramkit.errors import DataError, ParameterError

#: The keyed stream of the holdout half and of the release's sample.
HOLDOUT_STREAM = "pramkit attack: holdout half and release sample"
#: Cells of the agreement block computed at once (records of a block times released records).
BLOCK_CELLS = 1 << 24
#: Most pairs of distinct records (original by released, attacked by held out) whose distance is computed: about
#: a minute on 2 cores (27 253 records by 27 253 released records: 0.74 billion, a few seconds).
MAX_PAIRS = 10_000_000_000
#: A value shared by more than (records x released records) / DENSE_SHARE pairs is a one-hot column of the
#: matrix product; a rarer one is added pair by pair.
DENSE_SHARE = 2000.0


@dataclass(frozen=True, eq=False)
class LinkageResult:
    """The linkage of the original's records to a released file (:func:`linkage_attack`).

    Parameters
    ----------
    known, columns : tuple of str
        The columns the attacker knows, and the columns the distances compare (every column of the files).
    records, released_rows : int
        Records of the original and of the released file.
    unique_on_known, unique_on_known_found, unique_on_known_linked : int
        Records of the original no other record shares the known values with; of them, those at least one
        released record shares them with, and those exactly one does.
    unique_records, unique_records_found : int
        Records of the original unique on every column; of them, those some released record equals.
    holdout : str
        ``"keyed half"`` (a keyed random half of the original held out) or ``"file"`` (a holdout file).
    attacked, holdout_records, compared : int
        Records whose distances are set against the holdout; records held out; the size of both sets
        compared (the release sampled to the holdout's size, or the holdout to the release's).
    closer_to_release, closer_to_holdout, tied : float
        Shares of the attacked records whose distance to the sampled release is smaller than, larger than,
        equal to their distance to the holdout.
    median_dcr, share_at_zero : float
        Over every record of the original: the median distance to the closest released record, and the
        share of records some released record equals.
    median_dcr_holdout : float
        Over the attacked records: the median distance to the closest held-out record.
    key_fingerprint : str or None
        The fingerprint of the key that drew the holdout half and the sample (never the key).
    dcr, dcr_sample, dcr_holdout : numpy.ndarray
        Per record of the original (private): the distance to the closest released record, to the closest
        record of the sampled release and to the closest held-out record (NaN for a held-out record).
    in_holdout, unique_known, unique_record : numpy.ndarray
        Per record (private): held out; unique on the known columns; unique on every column.
    agreeing_on_known : numpy.ndarray
        Per record (private): the released records that share its known values.
    """

    known: tuple[str, ...]
    columns: tuple[str, ...]
    records: int
    released_rows: int
    unique_on_known: int
    unique_on_known_found: int
    unique_on_known_linked: int
    unique_records: int
    unique_records_found: int
    holdout: str
    attacked: int
    holdout_records: int
    compared: int
    closer_to_release: float
    closer_to_holdout: float
    tied: float
    median_dcr: float
    share_at_zero: float
    median_dcr_holdout: float
    key_fingerprint: str | None
    dcr: np.ndarray = field(repr=False)
    dcr_sample: np.ndarray = field(repr=False)
    dcr_holdout: np.ndarray = field(repr=False)
    in_holdout: np.ndarray = field(repr=False)
    unique_known: np.ndarray = field(repr=False)
    unique_record: np.ndarray = field(repr=False)
    agreeing_on_known: np.ndarray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The totals as JSON values (no per-record figure).

        Examples
        --------
        >>> o = pd.DataFrame({"a": ["1", "1", "2", "3"], "b": ["x", "y", "y", "y"]})
        >>> d = linkage_attack(o, o, ["a"], key=bytes(32)).to_dict()
        >>> d["unique_on_known"], d["unique_on_known_linked"], d["share_at_zero"], "dcr" in d
        (2, 2, 1.0, False)
        """
        names = ("known", "columns", "records", "released_rows", "unique_on_known", "unique_on_known_found",
                 "unique_on_known_linked", "unique_records", "unique_records_found", "holdout", "attacked",
                 "holdout_records", "compared", "closer_to_release", "closer_to_holdout", "tied", "median_dcr",
                 "share_at_zero", "median_dcr_holdout", "key_fingerprint")
        out = {n: getattr(self, n) for n in names}
        out["known"], out["columns"] = list(self.known), list(self.columns)
        return out

    def per_record(self) -> pd.DataFrame:
        """One row per record of the original, in its order (private: it names records).

        Returns
        -------
        pandas.DataFrame
            ``row`` (0-based position in the original), ``holdout``, ``unique_on_known``,
            ``released_agreeing_on_known``, ``unique_record``, ``dcr``, ``dcr_release_sample``,
            ``dcr_holdout`` and ``closer`` (``release``, ``holdout``, ``tie``; empty for a held-out record).

        Examples
        --------
        >>> o = pd.DataFrame({"a": ["1", "1", "2", "3"], "b": ["x", "y", "y", "y"]})
        >>> r = pd.DataFrame({"a": ["1", "1", "2", "2"], "b": ["x", "x", "y", "y"]})
        >>> frame = linkage_attack(o, r, ["a"], key=bytes(32)).per_record()
        >>> frame[["row", "unique_on_known", "released_agreeing_on_known", "dcr"]].values.tolist()
        [[0, False, 2, 0.0], [1, False, 2, 0.5], [2, True, 2, 0.0], [3, True, 0, 0.5]]
        """
        attacked = ~self.in_holdout
        closer = np.full(self.records, "", dtype=object)
        closer[attacked & (self.dcr_sample < self.dcr_holdout)] = "release"
        closer[attacked & (self.dcr_sample > self.dcr_holdout)] = "holdout"
        closer[attacked & (self.dcr_sample == self.dcr_holdout)] = "tie"
        return pd.DataFrame({
            "row": np.arange(self.records), "holdout": self.in_holdout, "unique_on_known": self.unique_known,
            "released_agreeing_on_known": self.agreeing_on_known, "unique_record": self.unique_record,
            "dcr": self.dcr, "dcr_release_sample": self.dcr_sample, "dcr_holdout": self.dcr_holdout,
            "closer": closer})


# --- Codes ------------------------------------------------------------------------------------------------


def shared_codes(columns: Sequence[str], *frames: pd.DataFrame) -> list[np.ndarray]:
    """Each frame's records as integer codes, one codebook per column shared by every frame.

    Values are matched by their canonical text (:func:`pramkit.codebook.canonical`: ``1``, ``1.0`` and
    ``"1"`` are one value); a missing value is a value of its own.

    Parameters
    ----------
    columns : sequence of str
        The columns coded, in order.
    *frames : pandas.DataFrame
        Frames holding those columns.

    Returns
    -------
    list of numpy.ndarray
        Per frame, an ``int32`` array of shape (records, columns).

    Examples
    --------
    >>> a = pd.DataFrame({"x": ["1", None, "2"]})
    >>> b = pd.DataFrame({"x": [2, 1, None]})
    >>> [c[:, 0].tolist() for c in shared_codes(["x"], a, b)]
    [[0, 1, 2], [2, 0, 1]]
    """
    out = [np.zeros((len(f), len(columns)), dtype=np.int32) for f in frames]
    for j, column in enumerate(columns):
        book: dict[str | None, int] = {}  # codes in the order values first appear, frame after frame
        for f, codes in zip(frames, out):
            local, uniques = pd.factorize(f[column].astype(object), use_na_sentinel=False)
            lut = np.array([book.setdefault(_text(u), len(book)) for u in uniques], dtype=np.int32)
            if len(lut):
                codes[:, j] = lut[local]
    return out


def _text(value: Any) -> str | None:
    from pramkit.codebook import canonical

    return canonical(value)


# --- Distances --------------------------------------------------------------------------------------------


def closest(queries: np.ndarray, pool: np.ndarray, within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The fewest columns in which each query record differs from a record of the pool, exactly.

    Parameters
    ----------
    queries, pool : numpy.ndarray
        Integer codes of shape (records, columns), one codebook per column (:func:`shared_codes`).
    within : numpy.ndarray of bool, optional
        A subset of the pool (one flag per pool record): the fewest differences within it too.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Per query, the fewest differences with the whole pool, and within the subset (``columns + 1``
        when the subset is empty; the first array again without a subset).

    Examples
    --------
    >>> q = np.array([[0, 0, 0], [1, 1, 1]])
    >>> p = np.array([[0, 0, 1], [1, 1, 1], [0, 0, 0]])
    >>> [d.tolist() for d in closest(q, p, within=np.array([True, True, False]))]
    [[0, 0], [1, 0]]
    """
    c = queries.shape[1]
    if len(pool) == 0 or len(queries) == 0:
        none = np.full(len(queries), c + 1, dtype=np.int64)
        return none, none.copy()
    uq, q_inv = np.unique(queries, axis=0, return_inverse=True)
    up, p_inv = np.unique(pool, axis=0, return_inverse=True)
    if len(uq) * len(up) > MAX_PAIRS:
        raise ParameterError(f"the linkage would compare {len(uq):,} by {len(up):,} distinct records, more than "
                             f"{MAX_PAIRS:,} pairs: attack a sample of the original, or leave the linkage out "
                             f"(--no-linkage)")
    inside = np.ones(len(up), dtype=bool)
    if within is not None:
        inside = np.zeros(len(up), dtype=bool)
        inside[np.asarray(p_inv).reshape(-1)[within]] = True
    order = np.argsort(~inside, kind="stable")  # the subset first
    up, k = up[order], int(inside.sum())
    best_all, best_in = _most_agreements(uq, up, k)
    q_inv = np.asarray(q_inv).reshape(-1)
    whole = (c - best_all)[q_inv]
    return whole, (whole if within is None else (c - best_in)[q_inv])


def _most_agreements(x: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``x``, the most columns it shares with a row of ``y``, and with a row of ``y[:k]`` (-1 when
    ``k`` is 0)."""
    dense, sparse = _split_values(x, y)
    oh_y = _one_hot(y, dense)
    block = max(1, BLOCK_CELLS // len(y))
    best_all = np.empty(len(x), dtype=np.int64)
    best_in = np.full(len(x), -1, dtype=np.int64)
    for b0 in range(0, len(x), block):
        xb = x[b0:b0 + block]
        agree = _one_hot(xb, dense) @ oh_y.T
        for column, rare, order, count, start in sparse:
            _add_rare(agree, xb[:, column], rare, order, count, start)
        if k == len(y):
            best_all[b0:b0 + len(xb)] = best_in[b0:b0 + len(xb)] = agree.max(axis=1)
        elif k:  # one pass: the subset's best and the others'
            best_in[b0:b0 + len(xb)] = agree[:, :k].max(axis=1)
            best_all[b0:b0 + len(xb)] = np.maximum(best_in[b0:b0 + len(xb)], agree[:, k:].max(axis=1))
        else:
            best_all[b0:b0 + len(xb)] = agree.max(axis=1)
    return best_all, best_in


def _split_values(x: np.ndarray, y: np.ndarray) -> tuple[list[np.ndarray], list[tuple[Any, ...]]]:
    """Per column, the values shared by many pairs (one-hot columns; -1 elsewhere, the others' positions), and
    for the rarer shared values the pool's rows sorted by value (to list the pairs)."""
    threshold = len(x) * len(y) / DENSE_SHARE
    dense: list[np.ndarray] = []
    sparse: list[tuple[Any, ...]] = []
    offset = 0
    for j in range(x.shape[1]):
        size = int(max(x[:, j].max(), y[:, j].max())) + 1
        cx, cy = np.bincount(x[:, j], minlength=size), np.bincount(y[:, j], minlength=size)
        pairs = cx.astype(float) * cy
        lut = np.full(size, -1, dtype=np.int64)
        many = np.flatnonzero(pairs > threshold)
        lut[many] = offset + np.arange(len(many))
        offset += len(many)
        dense.append(lut)
        rare = (pairs > 0) & (pairs <= threshold)
        if rare.any():
            start = np.concatenate([[0], np.cumsum(cy)[:-1]])
            sparse.append((j, rare, np.argsort(y[:, j], kind="stable"), cy, start))
    return dense, sparse


def _one_hot(codes: np.ndarray, dense: list[np.ndarray]) -> np.ndarray:
    """Rows of ones at the one-hot columns of their values (float32: sums of at most 2^24 ones are exact)."""
    width = 1 + max((int(lut.max()) for lut in dense), default=-1)
    out = np.zeros((len(codes), width), dtype=np.float32)
    rows = np.arange(len(codes))
    for j, lut in enumerate(dense):
        at = lut[codes[:, j]]
        ok = at >= 0
        out[rows[ok], at[ok]] = 1.0
    return out


def _add_rare(agree: np.ndarray, values: np.ndarray, rare: np.ndarray, order: np.ndarray, count: np.ndarray,
              start: np.ndarray) -> None:
    """Add one to ``agree[i, j]`` for every pair of a block row ``i`` and a pool row ``j`` sharing a rare value of
    one column (a pair at most once per column: plain fancy indexing adds it)."""
    rows = np.flatnonzero(rare[values])
    if not len(rows):
        return
    n = count[values[rows]]
    total = int(n.sum())
    if not total:
        return
    i = np.repeat(rows, n)
    first = np.repeat(start[values[rows]] - (np.cumsum(n) - n), n)
    agree[i, order[first + np.arange(total)]] += 1.0


# --- The attack -------------------------------------------------------------------------------------------


def _check_holdout(original: pd.DataFrame, holdout: pd.DataFrame | None) -> None:
    if holdout is None:
        if len(original) < 2:
            raise DataError("a holdout half needs at least 2 records in the original; give --holdout FILE")
        return
    if sorted(map(str, holdout.columns)) != sorted(map(str, original.columns)):
        only_h = sorted(set(holdout.columns) - set(original.columns))
        only_o = sorted(set(original.columns) - set(holdout.columns))
        raise ParameterError("the holdout file's columns differ from the original's"
                             + (f"; only in the original: {', '.join(only_o)}" if only_o else "")
                             + (f"; only in the holdout: {', '.join(only_h)}" if only_h else ""))
    if len(holdout) == 0:
        raise DataError("the holdout file has no records")


def _draws(key: Any, records: int, released: int, held: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                              str]:
    """The keyed holdout half (flags over the original; none with a holdout file of ``held`` records) and the
    keyed samples of the release and of the holdout making both the same size."""
    from pramkit.kernel.rng import resolve_key

    secret = resolve_key(key)
    rng = np.random.default_rng(secret.design_random(HOLDOUT_STREAM).getrandbits(128))
    in_holdout = np.zeros(records, dtype=bool)
    if held is None:
        in_holdout[rng.permutation(records)[:records // 2]] = True
        held = int(in_holdout.sum())
    size = min(released, held)
    release_sample = np.zeros(released, dtype=bool)
    release_sample[rng.permutation(released)[:size]] = True
    holdout_sample = np.zeros(held, dtype=bool)
    holdout_sample[rng.permutation(held)[:size]] = True
    return in_holdout, release_sample, holdout_sample, secret.fingerprint


def _uniques(codes: np.ndarray, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per record: unique among ``codes``, and how many rows of ``pool`` share its values."""
    both = np.vstack([codes, pool])
    _, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    n = len(codes)
    own = np.bincount(inverse[:n], minlength=inverse.max(initial=-1) + 1)
    other = np.bincount(inverse[n:], minlength=len(own))
    return own[inverse[:n]] == 1, other[inverse[:n]]


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if len(values) else math.nan


def linkage_attack(original: pd.DataFrame, released: pd.DataFrame, known: str | Sequence[str], *,
                   holdout: pd.DataFrame | None = None, key: Any = None) -> LinkageResult:
    """Find the original's records in the released file: exact matches of unique records, and distances.

    Parameters
    ----------
    original : pandas.DataFrame
        The original records (private).
    released : pandas.DataFrame
        The released file (by any method), with the original's columns.
    known : str or sequence of str
        The columns the attacker knows of each person.
    holdout : pandas.DataFrame, optional
        Records of the same population not used to make the release (the original's columns); default a
        keyed random half of the original (module docstring: what the comparison then means).
    key : pramkit.kernel.rng.SecretKey, bytes, str, pathlib.Path or None
        The key of the holdout half and of the samples (a key file for a reproducible split; default a
        fresh key from the operating system).

    Returns
    -------
    LinkageResult

    Raises
    ------
    ParameterError
        Files with other columns (the holdout file too), a known column they lack, no known column, more
        than :data:`MAX_PAIRS` pairs of distinct records to compare.
    DataError
        A file without records, an original of one record without a holdout file.

    Examples
    --------
    A release that is the original: every record is found, at distance 0.

    >>> o = pd.DataFrame({"age": ["20", "20", "60", "60"], "job": ["a", "b", "b", "c"]})
    >>> r = linkage_attack(o, o, "age", key=bytes(32))
    >>> r.unique_on_known, r.unique_records, r.unique_records_found, r.share_at_zero, r.dcr.tolist()
    (0, 4, 4, 1.0, [0.0, 0.0, 0.0, 0.0])
    """
    known = (known,) if isinstance(known, str) else tuple(known)
    if not known:
        raise ParameterError("give at least one known column")
    absent = [k for k in known if k not in original.columns or k not in released.columns]
    if absent:
        raise ParameterError(f"no known column {', '.join(map(repr, absent))} in the files")
    if sorted(map(str, original.columns)) != sorted(map(str, released.columns)):
        raise ParameterError("the released file's columns differ from the original's")
    if len(original) == 0 or len(released) == 0:
        raise DataError("the original and the released file need records")
    _check_holdout(original, holdout)
    columns = tuple(original.columns)
    frames = [original, released] + ([] if holdout is None else [holdout])
    codes = shared_codes(columns, *frames)
    o, r = codes[0], codes[1]
    kn = [columns.index(k) for k in known]
    unique_known, agreeing = _uniques(o[:, kn], r[:, kn])
    unique_record, _ = _uniques(o, o[:0])
    held = None if holdout is None else len(holdout)
    in_holdout, release_sample, holdout_sample, fingerprint = _draws(key, len(o), len(r), held)
    h = o[in_holdout] if holdout is None else codes[2]
    c = len(columns)
    whole, sampled = closest(o, r, release_sample)
    attacked = ~in_holdout
    to_holdout, _ = closest(o[attacked], h[holdout_sample])
    dcr = whole / c
    dcr_sample = np.full(len(o), np.nan)
    dcr_sample[attacked] = sampled[attacked] / c
    dcr_holdout = np.full(len(o), np.nan)
    dcr_holdout[attacked] = to_holdout / c
    a_s, a_h = dcr_sample[attacked], dcr_holdout[attacked]
    n_a = max(int(attacked.sum()), 1)
    found_known = unique_known & (agreeing > 0)
    return LinkageResult(
        known=known, columns=columns, records=len(o), released_rows=len(r),
        unique_on_known=int(unique_known.sum()), unique_on_known_found=int(found_known.sum()),
        unique_on_known_linked=int((unique_known & (agreeing == 1)).sum()),
        unique_records=int(unique_record.sum()), unique_records_found=int((unique_record & (whole == 0)).sum()),
        holdout="keyed half" if holdout is None else "file", attacked=int(attacked.sum()),
        holdout_records=len(h), compared=int(holdout_sample.sum()),
        closer_to_release=float((a_s < a_h).sum() / n_a), closer_to_holdout=float((a_s > a_h).sum() / n_a),
        tied=float((a_s == a_h).sum() / n_a), median_dcr=_median(dcr), share_at_zero=float((whole == 0).mean()),
        median_dcr_holdout=_median(a_h), key_fingerprint=fingerprint, dcr=dcr, dcr_sample=dcr_sample,
        dcr_holdout=dcr_holdout, in_holdout=in_holdout, unique_known=unique_known, unique_record=unique_record,
        agreeing_on_known=agreeing)


# --- The per-record file ----------------------------------------------------------------------------------


def refuse_public(path: str | Path) -> None:
    """Refuse a private output inside a folder that may be published (one named :data:`PUBLIC_FOLDER`).

    Parameters
    ----------
    path : str or pathlib.Path
        The output (links and relative paths resolved).

    Raises
    ------
    ParameterError
        A folder holding ``path`` is named ``public``.

    Examples
    --------
    >>> refuse_public("out/private/linkage.csv")
    >>> refuse_public("out/public/linkage.csv")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the per-record file 'out/public/linkage.csv' names records of the original (private): it cannot go inside the public folder 'out/public'; write it elsewhere, e.g. under private/
    """
    p = Path(path)
    try:
        parents = p.resolve().parents
    except (OSError, RuntimeError):
        parents = p.absolute().parents
    given = [p.parent, *p.parent.parents]
    for folder in [*given, *parents]:
        if folder.name.casefold() == PUBLIC_FOLDER:
            shown = next((g for g in given if g.name.casefold() == PUBLIC_FOLDER), folder)
            raise ParameterError(f"the per-record file {str(p)!r} names records of the original (private): it "
                                 f"cannot go inside the public folder {str(shown)!r}; write it elsewhere, e.g. "
                                 f"under private/")


def per_record_bytes(result: LinkageResult) -> bytes:
    """The per-record figures as CSV bytes (UTF-8; full precision).

    Parameters
    ----------
    result : LinkageResult

    Returns
    -------
    bytes
        :meth:`LinkageResult.per_record` as CSV, a header line first.

    Examples
    --------
    >>> o = pd.DataFrame({"a": ["1", "2"]})
    >>> per_record_bytes(linkage_attack(o, o, "a", key=bytes(32))).decode().splitlines()[0]
    'row,holdout,unique_on_known,released_agreeing_on_known,unique_record,dcr,dcr_release_sample,dcr_holdout,closer'
    """
    buffer = io.StringIO()
    result.per_record().to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue().encode("utf-8")


def write_per_record(result: LinkageResult, path: str | Path, *, force: bool = False,
                     inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write the per-record figures to a private CSV file (mode 0600), atomically: all of it or nothing.

    Parameters
    ----------
    result : LinkageResult
    path : str or pathlib.Path
        The file; never inside a ``public`` folder (:func:`refuse_public`).
    force : bool
        Replace an existing file.
    inputs : iterable of paths
        The files read (never written over).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError, OutputExistsError, WriteError
        A public folder, an input, an existing file without ``force``, a failed write (nothing left behind).

    Examples
    --------
    >>> import tempfile
    >>> o = pd.DataFrame({"a": ["1", "2"]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = write_per_record(linkage_attack(o, o, "a", key=bytes(32)), Path(d) / "links.csv")
    ...     print(oct(out.stat().st_mode & 0o777), len(out.read_text().splitlines()))
    0o600 3
    """
    from pramkit.atomic import write_bytes_atomic

    refuse_public(path)
    return write_bytes_atomic(path, per_record_bytes(result), force=force, inputs=inputs, mode=0o600)
