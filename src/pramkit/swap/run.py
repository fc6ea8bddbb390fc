"""Swap a file or a frame: plan, read the households, draw, write the released file, its receipt and manifest.

Two passes over the file, both in chunks: the first reads only the columns the swap
needs (:func:`pramkit.swap.households.read_households`: per person, the household
number and a code per risk variable; the rest per household), the second streams every
column and replaces the geography of each record by its household partner's (memory
O(chunk) beside the household arrays).
Outputs are atomic: the released file appears first, then its receipt
``OUT.receipt.json`` (the public description of the swap), then the manifest if one
is asked for, then the partners file if one is asked for (private: who was swapped
with whom); on failure nothing new is left.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from pramkit._version import __version__
from pramkit.atomic import check_writable, staged_bytes
from pramkit.defaults import CHUNK_ROWS, CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.engine.receipt import receipt_path, receipt_text
from pramkit.errors import ParameterError
from pramkit.frames import pandas_table
from pramkit.io import TableWriter, csv_dialect
from pramkit.kernel.rng import SecretKey, resolve_key
from pramkit.ledger import Ledger
from pramkit.manifest import Manifest, PerturbedVariable
from pramkit.release.swap_settings import SwapSettings
from pramkit.settings import checked, only_spec
from pramkit.source import Source
from pramkit.swap.core import SwapDraw, draw_swaps
from pramkit.swap.households import SwapHouseholds, read_households
from pramkit.swap.implied import random_swap_matrix
from pramkit.swap.plan import SwapPlan as SwapPlan  # the plan's module, imported alone by the settings' rules
from pramkit.swap.plan import plan_swap as plan_swap

#: Format name of a swap receipt.
RECEIPT_FORMAT = "pramkit-swap-receipt"


@dataclass(frozen=True)
class SwapResult:
    """What a swap did (private: counts from the original data).

    Parameters
    ----------
    rows, households : int
        Records and households of the file.
    swapped_households, swapped_records : int
        Households (records) whose geography changed hands.
    quota : int
        ``round(rate * H / 2)``, the swaps the rate asks for.
    targeted : list of int
        Per level, the risky households swapped across it.
    unswappable : int
        Selected households left unswapped: no donor shares a similarity profile.
    section : dict
        The public description (:meth:`SwapPlan.section`).
    output, receipt, manifest : str or None
        The files written.
    key_source, key_fingerprint : str
        Where the key came from and its fingerprint.
    seconds : float
        Wall time.
    frame : pandas.DataFrame or None
        The released frame (:func:`swap_frame`).
    transitions : pandas.DataFrame or None
        The realised transition table of the lowest level, its cells that are not empty:
        ``original``, ``released`` (areas) and ``households`` (private).
    partners : str or None
        The partners file written (private).
    pairs : pandas.DataFrame or None
        Who was swapped with whom (private): one row per swapped household, as the partners file
        (:func:`partners_table`).
    """

    rows: int
    households: int
    swapped_households: int
    swapped_records: int
    quota: int
    targeted: list[int]
    unswappable: int
    section: dict[str, Any]
    key_source: str
    key_fingerprint: str
    seconds: float
    output: str | None = None
    receipt: str | None = None
    manifest: str | None = None
    frame: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    transitions: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    partners: str | None = None
    pairs: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values (the frame, the transition table and the pairs left out)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("frame", "transitions", "pairs")}


@dataclass(frozen=True)
class _Swapped:
    """The draw on the households, with what writing needs."""

    households: SwapHouseholds
    draw: SwapDraw

    def released_codes(self, level: int) -> np.ndarray:
        """Household -> its released area code at ``level``."""
        return self.households.geo[level][self.draw.partner]

    def areas(self) -> tuple[list[Any], list[Any] | None, list[int]]:
        """The lowest level's areas, the area above each (``None`` for one level) and their households."""
        hh = self.households
        areas = hh.labels[-1].to_pylist()
        counts = np.bincount(hh.geo[-1], minlength=len(areas)).tolist()
        if not hh.parents:
            return areas, None, counts
        return areas, hh.labels[-2].take(pa.array(hh.parents[-1])).to_pylist(), counts

    def transitions(self) -> pd.DataFrame:
        """The non-empty cells of the lowest level's transition table, in households."""
        hh = self.households
        codes = hh.geo[-1] * len(hh.labels[-1]) + self.released_codes(len(hh.geo) - 1)
        cells, counts = np.unique(codes, return_counts=True)
        labels = hh.labels[-1]
        return pd.DataFrame({
            "original": labels.take(pa.array(cells // len(labels))).to_pylist(),
            "released": labels.take(pa.array(cells % len(labels))).to_pylist(),
            "households": counts,
        })

    def rows_changed(self) -> int:
        moved = self.draw.partner != np.arange(self.draw.partner.size)
        return int(moved[self.households.member].sum())

    def partners(self, geo: Sequence[str]) -> pa.Table:
        """The partners table (:func:`partners_table`)."""
        hh, draw = self.households, self.draw
        moved = pa.array(np.flatnonzero(draw.partner != np.arange(draw.partner.size)))
        partner = pa.array(draw.partner).take(moved)
        level_names = pa.array(list(geo)).take(pa.array(draw.level).take(moved))
        columns: dict[str, pa.Array] = {
            "household_id": hh.ids.take(moved),
            "partner_id": hh.ids.take(partner),
            "level": level_names,
            "role": pa.array(np.where(draw.donor, "donor", "selected")).take(moved),
        }
        for h, name in enumerate(geo):
            columns[f"{name}_before"] = hh.labels[h].take(pa.array(hh.geo[h]).take(moved))
            columns[f"{name}_after"] = hh.labels[h].take(pa.array(hh.geo[h]).take(partner))
        return pa.table(columns)


def partners_table(result: SwapResult) -> pd.DataFrame:
    """Who was swapped with whom (private): the pairs of a swap, as its partners file holds them.

    One row per swapped household, in file order of the households: ``household_id``, ``partner_id``
    (the household whose geography it received, and which received its own), ``level`` (the level of
    the geography the swap crossed: the swap level of the household selected), ``role``
    (``selected`` or ``donor``), then ``L_before`` and ``L_after`` for each level ``L`` of the
    geography.  Every pair appears twice, once from each side.

    Parameters
    ----------
    result : SwapResult
        The result of :func:`swap_file` or :func:`swap_frame`.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ParameterError
        The result holds no pairs.

    Examples
    --------
    >>> data = pd.DataFrame({"hid": [1, 1, 2, 3, 4], "region": ["N", "N", "S", "N", "S"]})
    >>> pairs = partners_table(swap_frame(data, plan_swap("hid", ["region"], rate=1.0), key=bytes(32)))
    >>> pairs[["household_id", "partner_id", "level", "role", "region_before", "region_after"]].values.tolist()
    [[1, 2, 'region', 'selected', 'N', 'S'], [2, 1, 'region', 'donor', 'S', 'N'], [3, 4, 'region', 'donor', 'N', 'S'], [4, 3, 'region', 'selected', 'S', 'N']]
    """
    if result.pairs is None:
        raise ParameterError("this swap result holds no pairs")
    return result.pairs


def _draw(tables: Iterable[pa.Table], plan: SwapPlan, key: SecretKey, where: str) -> _Swapped:
    hh = read_households(tables, plan.hid, plan.geo, plan.risk_vars, plan.similar, plan.k, where)
    return _Swapped(hh, draw_swaps(hh.geo, hh.profiles, hh.risky_level, hh.weight, plan.rate, key,
                                   donors=plan.donors, level_weight=hh.donor_weight))


def _release(table: pa.Table, swapped: _Swapped, plan: SwapPlan, start: int,
             released: list[np.ndarray]) -> pa.Table:
    """A chunk with each record's geography replaced by its household's released areas."""
    member = swapped.households.member[start:start + table.num_rows]
    for level, column in enumerate(plan.geo):
        labels = swapped.households.labels[level]
        values = labels.take(pa.array(released[level][member]))
        i = table.schema.get_field_index(column)
        target = table.schema.field(i).type
        values = values.cast(target) if not pa.types.is_dictionary(target) else values.dictionary_encode()
        table = table.set_column(i, column, values)
    return table


def _result(plan: SwapPlan, swapped: _Swapped, key: SecretKey, t0: float, **files: Any) -> SwapResult:
    hh, draw = swapped.households, swapped.draw
    return SwapResult(
        rows=int(hh.member.size), households=hh.count, swapped_households=draw.swapped,
        swapped_records=swapped.rows_changed(), quota=draw.quota, targeted=draw.targeted.tolist(),
        unswappable=draw.unswappable, section=plan.section(*swapped.areas()),
        key_source=key.source, key_fingerprint=key.fingerprint, seconds=time.perf_counter() - t0,
        transitions=swapped.transitions(), pairs=swapped.partners(plan.geo).to_pandas(), **files,
    )


def swap_manifest(plan: SwapPlan, areas: Sequence[Any], parents: Sequence[Any] | None = None,
                  households: Sequence[int] | None = None, *, na_values: Sequence[str] | None = None) -> Manifest:
    """The manifest of a random swap: the lowest level's expected matrix and the ``swapping`` section.

    Parameters
    ----------
    plan : SwapPlan
        A random swap (no risk variables).
    areas : sequence
        The areas of the lowest level.
    parents : sequence, optional
        The area of the level above each (two levels or more).
    households : sequence of int, optional
        Households per area (default: equal areas).
    na_values : sequence of str, optional
        The codes the file was read with as missing, recorded as ``input.na_values`` (as a PRAM manifest
        records them) so that the release's metadata can declare them.

    Returns
    -------
    Manifest
        ``estimate`` corrects tables of the lowest level with it.

    Raises
    ------
    ParameterError
        The swap is targeted: no matrix is known.

    Examples
    --------
    >>> m = swap_manifest(plan_swap("hid", ["region"], rate=0.1), ["N", "S", "E"])
    >>> m.names, m.swapping["method"], round(m.record_epsilon, 6)
    (['region'], 'random record swapping', 2.890372)
    >>> counted = swap_manifest(plan_swap("hid", ["region"], rate=0.1), ["N", "S", "E"], households=[100, 50, 30])
    >>> counted.ledger.frequencies, "households per area" in counted.ledger.data_dependent[1]
    ('exact', True)
    """
    if plan.targeted:
        raise ParameterError("targeted swapping chooses households from the data: no matrix is known, so there is "
                             "no manifest to write (drop --manifest, or swap at random: no --risk-vars)")
    matrix = random_swap_matrix(plan.rate, list(areas), plan.donor_parents(parents), households, donors=plan.donors)
    variable = PerturbedVariable(plan.geo[-1], matrix, unit=plan.hid)
    counted = () if households is None else (
        f"the expected matrix is computed from the households per area of {plan.geo[-1]} in the original file, "
        "which the released file shows exactly (a swap exchanges one household for another)",)
    donors_from = (f"any other area of {plan.geo[-1]}" if plan.donors == "any-area" else
                   f"the other areas of {plan.geo[-1]} under the same {plan.geo[-2]}" if len(plan.geo) > 1 else
                   f"the other areas of {plan.geo[-1]}")
    ledger = Ledger(frequencies="none" if households is None else "exact", categories={plan.geo[-1]: "data"},
                    data_dependent=(
        (f"the households of {plan.geo[-1]} are swapped in pairs, in numbers fixed per area (rate x households / 2), "
         "so the epsilon is that of the swap's expected matrix, not a guarantee of the released file as a whole"),
        *counted,
        (f"the expected matrix is computed for the donor rule {plan.donors}: a household is selected with "
         f"probability rate / 2, its donor drawn uniformly among the households not yet swapped of {donors_from}")))
    read = {} if na_values is None else {"na_values": [str(code) for code in na_values]}
    return Manifest((variable,), input={"method": "record swapping", **read}, ledger=ledger,
                    swapping=plan.section(list(areas), parents, households))


def swap_file(data: str | Path, plan: SwapPlan, out: str | Path, *, key: SecretKey | bytes | str | Path | None = None,
              manifest: str | Path | None = None, force: bool = False, chunk_rows: int = CHUNK_ROWS,
              na_values: Sequence[str] = NA_VALUES, partners: str | Path | None = None, sep: str = CSV_SEP,
              encoding: str = CSV_ENCODING, spec: Any = None) -> SwapResult:
    """Swap the geography of a file's households into ``out``, with its receipt (and manifest, and partners file).

    Parameters
    ----------
    data : str or pathlib.Path
        The original file (CSV, Parquet, Stata, SPSS or SAS), or a folder of part files
        (:func:`pramkit.io.dataset_parts`).
    plan : SwapPlan
        The swap (:func:`plan_swap`).
    out : str or pathlib.Path
        The released file; ``OUT.receipt.json`` beside it holds the public description.
    key : SecretKey, bytes, str, pathlib.Path or None
        The secret key (:func:`pramkit.kernel.rng.resolve_key`).
    manifest : str or pathlib.Path, optional
        Write the manifest of a random swap here (:func:`swap_manifest`).
    force : bool
        Replace existing outputs.
    chunk_rows : int
        Rows per chunk; the output does not depend on it.
    na_values : sequence of str
        The texts of a CSV file that are missing besides the empty field.
    partners : str or pathlib.Path, optional
        Write who was swapped with whom here (:func:`partners_table`; ``.csv`` or ``.parquet``, readable
        by its owner only).  Private: with it anyone can undo the swap, so keep it with the key, away from
        the released files; it is never written unless asked for.
    sep, encoding : str
        The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`); a CSV
        release of a CSV file is written with them.
    spec : pramkit.release.swap_spec.SwapSpec, optional
        ``chunk_rows``, ``na_values``, ``sep`` and ``encoding`` as one specification instead of these
        keywords, checked as ``pramkit swap`` checks them (not both); its ``rate``, ``k`` and ``donors``
        must be the plan's (:meth:`~pramkit.release.swap_spec.SwapSpec.plan` makes it) and its ``engine``
        ``"local"`` (:meth:`~pramkit.release.swap_spec.SwapSpec.swap` runs the others).

    Returns
    -------
    SwapResult

    Raises
    ------
    ParameterError
        ``chunk_rows`` below 1, an output that is an input or another output, a manifest for a targeted
        swap, a partners file that is neither ``.csv`` nor ``.parquet``, or data that is no file (a frame in
        memory: :func:`swap_frame` swaps it).
    DataError
        As :func:`pramkit.swap.households.read_households`, or an unreadable file.
    OutputExistsError, WriteError
        An output exists (without ``force``) or cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit.io import read_table
    >>> rows = "hid,region,size\\n" + "".join(f"{i},{'NS'[i % 2]},1\\n" for i in range(20))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text(rows)
    ...     r = swap_file(d / "data.csv", plan_swap("hid", ["region"], rate=0.5), d / "out.csv", key=bytes(32))
    ...     back = read_table(d / "out.csv")
    ...     print(r.swapped_households, sorted(p.name for p in d.iterdir()))
    10 ['data.csv', 'out.csv', 'out.csv.receipt.json']

    The settings may come as one :class:`pramkit.release.swap_spec.SwapSpec` (not both ways), whose plan
    is the one swapped:

    >>> from pramkit.release.swap_spec import SwapSpec
    >>> spec = SwapSpec(rate=0.5, chunk_rows=3)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text(rows)
    ...     r = swap_file(d / "data.csv", spec.plan("hid", ["region"]), d / "a.csv", key=bytes(32), spec=spec)
    ...     _ = swap_file(d / "data.csv", plan_swap("hid", ["region"], rate=0.5), d / "b.csv", key=bytes(32))
    ...     print(r.swapped_households, (d / "a.csv").read_bytes() == (d / "b.csv").read_bytes())
    10 True
    >>> swap_file("data.csv", plan_swap("hid", ["region"]), "out.csv", spec=spec)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the plan was not made with the spec's rate 0.5 (it has 0.05): make it with spec.plan(...)
    >>> swap_file("data.csv", spec.plan("hid", ["region"]), "out.csv", chunk_rows=3, spec=spec)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: give the settings as a SwapSpec or as keywords, not both (chunk_rows)
    """
    if spec is not None:
        return _swap_by_spec(data, plan, out, spec, key=key, manifest=manifest, force=force, partners=partners,
                             given={"chunk_rows": chunk_rows, "na_values": na_values, "sep": sep,
                                    "encoding": encoding})
    made = SwapSettings(rate=plan.rate, k=plan.k, donors=plan.donors, chunk_rows=chunk_rows,
                        na_values=na_values, sep=sep, encoding=encoding)  # type: ignore[arg-type]

    def keywords_checked() -> None:  # the keywords' own rules and messages, in place of SwapSettings.check
        if chunk_rows < 1:
            raise ParameterError("chunk_rows must be at least 1")

    with checked(made, by=keywords_checked):
        source = Source.open(data, na_values=na_values, sep=sep, encoding=encoding)  # opened once, asked below
        return _swap(source, plan, out, made, key=key, manifest=manifest, force=force, partners=partners)


#: :func:`swap_file` itself, whose signature holds the keywords' defaults (:func:`pramkit.settings.only_spec`).
_SWAP_FILE = swap_file


def _swap(source: Source, plan: SwapPlan, out: str | Path, settings: SwapSettings, *,
          key: SecretKey | bytes | str | Path | None, manifest: str | Path | None, force: bool,
          partners: str | Path | None) -> SwapResult:
    """:func:`swap_file`'s one door: swap the households of the opened ``source`` by ``plan`` into ``out`` with
    ``settings`` (checked: its rules are not run again here), the key and the files written given beside them."""
    t0 = time.perf_counter()
    secret = resolve_key(key)
    if source.path is None:
        raise ParameterError(f"swap_file reads a file or a folder of part files, not {source.described}; "
                             "swap a frame in memory with swap_frame")
    src, dst = source.path, Path(out)
    inputs = [src, secret.path]
    check_writable(dst, force=force, inputs=inputs)
    check_writable(receipt_path(dst), force=True, inputs=inputs)
    if manifest is not None:
        check_writable(manifest, force=force, inputs=[*inputs, dst])
        if plan.targeted:
            swap_manifest(plan, [])
    if partners is not None:
        _partners_format(partners)
        check_writable(partners, force=force, inputs=[*inputs, dst, receipt_path(dst), manifest])
    csv_dialect(source.sep, source.encoding)  # the source's own (a Source given as data reads with its settings)
    where = repr(str(src))
    _, tables = source.batches(plan.columns, chunk_rows=settings.chunk_rows)
    swapped = _draw(tables, plan, secret, where)
    source.forget()  # a file read whole: its records of the plan's columns are held no more
    released = [swapped.released_codes(h) for h in range(len(plan.geo))]
    areas, parents, counts = swapped.areas()
    with contextlib.ExitStack() as stack:
        pairs_stage = (stack.enter_context(staged_bytes(partners, force=force, inputs=inputs, mode=0o600))
                       if partners is not None else None)
        man_stage = stack.enter_context(staged_bytes(manifest, force=force, inputs=inputs)) if manifest else None
        receipt_stage = stack.enter_context(staged_bytes(receipt_path(dst), force=True, inputs=inputs))
        meta, batches = source.batches(chunk_rows=settings.chunk_rows, keep_missing_codes=True)
        start = 0
        with TableWriter(dst, force=force, meta=meta, inputs=inputs) as writer:
            for table in batches:
                writer.write(_release(table, swapped, plan, start, released))
                start += table.num_rows
            writer.close()
            man = (swap_manifest(plan, areas, parents, counts, na_values=settings.na_values) if man_stage is not None
                   else None)
            section = plan.section(areas, parents, counts)
            receipt_stage.write(_receipt(dst, start, writer.sha256, section, man).encode())
            if man_stage is not None and man is not None:
                man_stage.write(man.to_json().encode())
            if pairs_stage is not None and partners is not None:
                pairs_stage.write(_partners_bytes(swapped.partners(plan.geo), partners))
    return _result(plan, swapped, secret, t0, output=str(dst), receipt=str(receipt_path(dst)),
                   manifest=None if manifest is None else str(manifest),
                   partners=None if partners is None else str(partners))



def _swap_by_spec(data: str | Path, plan: SwapPlan, out: str | Path, spec: Any, *, given: dict[str, Any],
                  **files: Any) -> SwapResult:
    """:func:`swap_file` with the settings of ``spec`` (none of ``given`` besides it), whose plan ``plan`` is."""
    only_spec(_SWAP_FILE, given, spec)  # its own signature, even where swap_file is wrapped
    with checked(spec):  # checked first: a setting its rule refuses is refused so
        if spec.engine != "local":
            raise ParameterError(f"swap_file swaps on this machine, not with engine {spec.engine!r}: call "
                                 "spec.swap(data, plan, out, key=...) to run the spec's engine")
        differ = [f"{name} {getattr(spec, name)!r} (it has {getattr(plan, name)!r})"
                  for name in ("rate", "k", "donors") if getattr(spec, name) != getattr(plan, name)]
        if differ:
            raise ParameterError(f"the plan was not made with the spec's {', '.join(differ)}: make it with "
                                 "spec.plan(...)")
        source = Source.open(data, na_values=spec.na_values, sep=spec.sep, encoding=spec.encoding)
        return _swap(source, plan, out, spec, **files)


def _partners_format(path: str | Path) -> str:
    """``csv`` or ``parquet``, from the partners file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ParameterError(f"the partners file {str(path)!r} must end in .csv or .parquet (it is written as "
                             "CSV or Parquet)")
    return suffix[1:]


def _partners_bytes(table: pa.Table, path: str | Path) -> bytes:
    """The partners table as CSV or Parquet bytes."""
    sink = io.BytesIO()
    if _partners_format(path) == "csv":
        pa_csv.write_csv(table, sink)
    else:
        pq.write_table(table, sink)
    return sink.getvalue()


def _receipt(released: Path, rows: int, digest: str | None, section: dict[str, Any],
             manifest: Manifest | None) -> str:
    """The receipt: the released file's digest and the public description of the swap; with a manifest,
    pramkit's release receipt (:func:`pramkit.engine.receipt.receipt_text`, which ``estimate`` checks)
    with the description added."""
    if manifest is not None:
        receipt = json.loads(receipt_text(released, manifest, rows=rows, digest=digest))
    else:
        receipt = {"format": RECEIPT_FORMAT, "version": 1, "pramkit_version": __version__,
                   "released_file": released.name, "released_sha256": digest, "rows": rows}
    return json.dumps({**receipt, "swapping": section}, indent=2) + "\n"


def swap_frame(frame: pd.DataFrame, plan: SwapPlan, *, key: SecretKey | bytes | str | Path | None = None,
               chunk_rows: int = CHUNK_ROWS) -> SwapResult:
    """Swap the geography of a DataFrame's households (the frame is not changed).

    Parameters
    ----------
    frame : pandas.DataFrame
        The original records.
    plan : SwapPlan
        The swap.
    key : SecretKey, bytes, str, pathlib.Path or None
        The secret key.
    chunk_rows : int
        Rows per chunk read (the result does not depend on it).

    Returns
    -------
    SwapResult
        ``frame`` holds the released records (categorical geography stays categorical).

    Examples
    --------
    >>> data = pd.DataFrame({"hid": [1, 1, 2, 3, 4], "region": ["N", "N", "S", "N", "S"]})
    >>> r = swap_frame(data, plan_swap("hid", ["region"], rate=1.0), key=bytes(32))
    >>> r.swapped_households, r.swapped_records, r.frame["region"].tolist()
    (4, 5, ['S', 'S', 'N', 'S', 'N'])
    """
    t0 = time.perf_counter()
    secret = resolve_key(key)
    missing = [c for c in plan.columns if c not in frame.columns]
    if missing:
        raise ParameterError(f"the frame has no column(s) {missing}")
    table = pandas_table(frame[plan.columns])
    swapped = _draw(_chunks(table, chunk_rows), plan, secret, "the frame")
    out = frame.copy()
    member = swapped.households.member
    for level, column in enumerate(plan.geo):
        values = swapped.households.labels[level].take(pa.array(swapped.released_codes(level)[member]))
        series = pd.Series(values.to_pandas(), index=frame.index, name=column)
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            series = series.astype(frame[column].dtype)
        out[column] = series.astype(frame[column].dtype) if not isinstance(series.dtype, pd.CategoricalDtype) else series
    return _result(plan, swapped, secret, t0, frame=out)


def _chunks(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    for start in range(0, max(table.num_rows, 1), max(int(rows), 1)):
        yield table.slice(start, rows)

