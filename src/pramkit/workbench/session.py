"""One officer's release, step by step: :class:`Workbench`.

The workbench keeps a private work folder (the built-in census or an uploaded
file, the inputs of the design, the release applied) and the state of each
step; every step calls the library and returns a view
(:mod:`pramkit.workbench.views`).  :meth:`Workbench.export` writes the release
as the command line does, and :meth:`Workbench.script` the commands that make
it again, byte for byte, with the same key.

Long steps report progress through :func:`pramkit.progress.watching`, whose
callback may stop them by raising :class:`pramkit.errors.Cancelled`; outputs
are atomic, so a stopped step leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pramkit.atomic import write_bytes_atomic
from pramkit.datasets import CENSUS_VARIABLES, census
from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
from pramkit.errors import ParameterError
from pramkit.frames import pandas_table
from pramkit.io import TableWriter
from pramkit.kernel.rng import SecretKey
from pramkit.manifest import Manifest
from pramkit.progress import progress
from pramkit.release.choices import DesignChoices
from pramkit.release.record import Release
from pramkit.workbench.export import export, released_name, reproduce_script
from pramkit.workbench.heard import heard
from pramkit.workbench.layout import INPUT_FILES, INPUTS, ORIGINAL, RECODE_MAP, RECODED, RELEASE, SUPPRESSED
from pramkit.workbench.saved import Snapshot, read_session, restore, session_dict
from pramkit.workbench.source import Source, describe_file, shown_value
from pramkit.workbench.suppression import BelowK, Suppressed, SuppressSpec, SuppressView, below_k, key_frame
from pramkit.workbench.views import ApplyView, Designed, DesignView, ExportView, RiskView, design_view

#: Rows of the built-in census the workbench opens by default.
CENSUS_ROWS = 20_000

#: Changes of the settings :meth:`Workbench.undo` can take back, most recent last.
UNDO_DEPTH = 20

#: What Apply says when the design shown drew its noise from another key than the one it is applied with.
KEPT_DESIGN = ("the design shown was released as it is: its noise was drawn before this key was loaded, so the "
               "script copies its manifest (design again with this key loaded to have the script design it)")

#: Persons of the built-in census written at a time: each block is a progress update, where Cancel stops the work.
CENSUS_BLOCK = 100_000


def _keep(given: str | Path, kept: Path) -> None:
    """Copy an input file into the work folder, whole or not at all.

    The live preview designs in a thread of its own, beside the step a user runs, and both keep the inputs
    they read here: a copy written in place was seen empty by the other (an apply read a codebook with no
    header while the preview copied it again).  The copy is written beside and renamed over ``kept``, so a
    reader has the old file or the new, and an unchanged input is not written at all.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     given, kept = Path(d, "rules.csv"), Path(d, "kept.csv")
    ...     _ = given.write_text("age,marital_status\\n")
    ...     _keep(given, kept)
    ...     before = kept.stat().st_ino
    ...     _keep(given, kept)                  # the same bytes: left as it is
    ...     _keep(kept, kept)                   # the kept file itself
    ...     print(kept.read_text() == given.read_text(), kept.stat().st_ino == before)
    True True
    """
    if Path(given).resolve() != kept.resolve():
        _keep_bytes(Path(given).read_bytes(), kept)


def _keep_bytes(data: bytes, kept: Path) -> None:
    """Write ``data`` to ``kept`` as :func:`_keep` copies: renamed over it, and only if it differs."""
    if not (kept.is_file() and kept.read_bytes() == data):
        write_bytes_atomic(kept, data, force=True)


class Workbench:
    """One release in progress, kept in a private work folder.

    Parameters
    ----------
    work : str or pathlib.Path
        A private folder of the workbench's own (created if absent, mode 0700; never published).
    data_dirs : sequence of path, optional
        The folders a file may be opened from by its path (:meth:`open_file`); a relative
        path is taken in the first.  ``None``: any file this process can read.

    Examples
    --------
    The whole release on the built-in census, then the script that makes it again:

    >>> import tempfile
    >>> from pramkit.kernel.rng import SecretKey
    >>> with tempfile.TemporaryDirectory() as d:
    ...     wb = Workbench(d)
    ...     src = wb.open_census(rows=5_000)
    ...     risk = wb.risk(["age", "sex", "marital_status"], sampling_fraction=0.05)
    ...     key = SecretKey(bytes(32), "a test key")
    ...     view = wb.design(["age", "sex"], DesignChoices(epsilon=3.0), key=key)
    ...     applied = wb.apply(key)
    ...     print(src.rows, view.record_epsilon, view.uncovered, list(applied.changed["variable"]))
    ...     print(wb.script().splitlines()[0])
    5000 3 () ['age', 'sex']
    #!/bin/sh
    """

    def __init__(self, work: str | Path, *, data_dirs: Sequence[str | Path] | None = None) -> None:
        self.work = Path(work)
        self.data_dirs = None if data_dirs is None else tuple(Path(d).expanduser().resolve() for d in data_dirs)
        for folder in (ORIGINAL, INPUTS, RELEASE):
            (self.work / folder).mkdir(mode=0o700, parents=True, exist_ok=True)
        self.source: Source | None = None
        self.copied = False
        self.designed: Designed | None = None
        self.applied: ApplyView | None = None
        self.assessed: RiskView | None = None
        self.exported: ExportView | None = None
        self.risk_keys: tuple[str, ...] = ()
        self.sampling_fraction: float | None = None
        self.weights: str | None = None
        self.household: str | None = None
        self.recode: dict[str, dict[str, Any]] = {}
        self.opened: dict[str, Any] = {}  # how the file was opened (a session file says it again)
        self.base: Source | None = None  # the file as opened (``source`` is its recoded copy after a recoding)
        self.suppression: Suppressed | None = None  # the local suppression in force (``source``: its output)
        self._frames: dict[Path, pd.DataFrame] = {}  # the columns read for the live count, per file
        self._history: list[Snapshot] = []
        self.tried: list[Any] = []  # the designs previewed, for the risk-utility map (pramkit.workbench.preview)
        self._problem: tuple[Any, Any] | None = None  # the risk step's problem set, read once

    # -- step 1: the file -------------------------------------------------
    def open_census(self, rows: int = CENSUS_ROWS) -> Source:
        """Open the built-in census-like file (:func:`pramkit.datasets.census`), its categories declared.

        Parameters
        ----------
        rows : int
            Persons to generate (at least 1,000).

        Returns
        -------
        Source
        """
        if isinstance(rows, bool) or not isinstance(rows, int) or not 1_000 <= rows <= 10_000_000:
            raise ParameterError(f"the census needs a whole number of rows from 1,000 to 10,000,000, got {rows!r}")
        with self._staging() as staging:
            path = staging / "census.csv"
            _write_census(census(rows), path)
            codebook = self.work / INPUTS / "census-codebook.csv"
            _keep_bytes(pd.DataFrame([(v, c) for v, cats in CENSUS_VARIABLES.items() for c in cats],
                                     columns=["variable", "category"]).to_csv(index=False).encode(), codebook)
            described = describe_file(path, label=f"built-in census ({rows:,} persons)", categories=codebook)
        source = self._opened(self._in_place(described), copied=True)
        self.opened = {"kind": "census", "rows": rows}
        return source

    def open_file(self, path: str | Path, *, label: str | None = None, na_values: Sequence[str] = NA_VALUES,
                  upload: bool = False, sep: str = CSV_SEP, encoding: str = CSV_ENCODING) -> Source:
        """Open a data file (CSV, Parquet, Stata, SPSS), streamed.

        Parameters
        ----------
        path : str or pathlib.Path
            The file.
        label : str, optional
            Its name for the user (an upload's original name).
        na_values : sequence of str
            Texts that mean missing in a CSV file besides the empty field.
        upload : bool
            The file is an upload: it is moved into the work folder and exported into
            ``private/`` (the script reads it there); otherwise the script reads it where it is.
        sep, encoding : str
            The field separator and character encoding of a CSV file (:func:`pramkit.io.csv_dialect`):
            every step reads it so, and a CSV release is written so.

        Returns
        -------
        Source

        Raises
        ------
        DataError
            The file is missing, empty or unreadable.
        ParameterError
            The path is outside the workbench's data folders (:meth:`readable`).
        """
        p = Path(path)
        if not upload:
            described = describe_file(self.readable(p), label=label, na_values=na_values, sep=sep, encoding=encoding)
        else:
            with self._staging() as staging:
                kept = staging / (Path(label or p.name).name or "data.csv")
                shutil.copyfile(p, kept)
                described = describe_file(kept, label=label, na_values=na_values, sep=sep, encoding=encoding)
        source = self._opened(self._in_place(described) if upload else described, copied=upload)
        self.opened = {"kind": "upload"} if upload else {"kind": "path", "path": str(p)}
        return source

    @contextlib.contextmanager
    def _staging(self) -> Iterator[Path]:
        """A folder where a new file is made first: the file the steps read stays as it is until the new one is
        read through (a step cancelled or refused halfway leaves the release as it was, and no copy behind)."""
        staging = self.work / ORIGINAL / ".next"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        try:
            yield staging
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _in_place(self, source: Source) -> Source:
        """A file read through from :meth:`_staging`, moved into ``original/`` in place of the one before."""
        folder = self.work / ORIGINAL
        for old in folder.iterdir():
            if old.is_file():
                old.unlink()
        final = folder / source.path.name
        source.path.replace(final)
        source.path.parent.rmdir()
        return dataclasses.replace(source, path=final)

    def readable(self, path: str | Path) -> Path:
        """The file ``path`` names, resolved, if it lies in one of the data folders (links followed).

        Parameters
        ----------
        path : str or pathlib.Path
            A path typed by the user (relative: in the first data folder).

        Returns
        -------
        pathlib.Path
            The absolute path, links resolved.

        Raises
        ------
        ParameterError
            It lies outside every data folder (the message names the folders, not whether the file exists).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     data = pathlib.Path(d, "data")
        ...     wb = Workbench(pathlib.Path(d, "work"), data_dirs=[data])
        ...     print(wb.readable("survey.csv") == data.resolve() / "survey.csv")
        ...     try:
        ...         wb.readable(pathlib.Path(d, "data", "..", "elsewhere.csv"))
        ...     except ParameterError as exc:
        ...         print(str(exc).split(" (")[0].replace(d, "D"))
        True
        D/data/../elsewhere.csv is not in the folders this app may open files from
        """
        typed = Path(path).expanduser()
        if self.data_dirs is None:
            return typed.resolve()
        p = (typed if typed.is_absolute() else self.data_dirs[0] / typed).resolve()
        if not any(p == d or d in p.parents for d in self.data_dirs):
            folders = ", ".join(str(d) for d in self.data_dirs)
            raise ParameterError(f"{typed} is not in the folders this app may open files from ({folders}): "
                                 "move it into one of them or upload it")
        return p

    def _opened(self, source: Source, *, copied: bool) -> Source:
        """A new file: every later step starts again."""
        self.source, self.base, self.copied = source, source, copied
        self.designed = self.applied = self.assessed = self.exported = None
        self.risk_keys, self.sampling_fraction, self.weights, self.household = (), None, None, None
        self.recode, self._history, self.tried = {}, [], []
        self.suppression, self._frames = None, {}
        return source

    def _source(self) -> Source:
        if self.source is None:
            raise ParameterError("open a file first (or the built-in census)")
        return self.source

    def recoding(self, spec: Mapping[str, Any]) -> Source:
        """Recode the file before PRAM: merge categories, top and bottom code (:mod:`pramkit.recode`).

        Every later step reads the recoded copy (kept in the work folder, exported into ``private/``);
        the script makes it again with ``pramkit recode`` and the map (``private/inputs/recode.json``).
        An empty map goes back to the file as opened.  Undoable.

        Parameters
        ----------
        spec : mapping
            The recoding map, ``{column: {"merge": {old: new}, "top": {...}, "bottom": {...}}}``.

        Returns
        -------
        Source
            The recoded file (its variables, preview).

        Raises
        ------
        ParameterError
            The map is not written right or names a column the file does not have.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=2_000)
        ...     merged = {"married, spouse present": "married", "married, spouse absent": "married"}
        ...     src = wb.recoding({"marital_status": {"merge": merged}})
        ...     info = {v.name: v.distinct for v in src.variables}
        ...     print(info["marital_status"], wb.base.label == src.label, wb.is_recoded)
        5 True True
        """
        from pramkit.recode import Recoding, recode_file

        base = self.base
        if base is None:
            raise ParameterError("open a file first (or the built-in census)")
        recoding = Recoding.of(spec)
        recoding.check(base.names, base.label)
        with self._change():
            self.designed = self.applied = self.assessed = self.exported = None
            self.suppression = None  # made from the file before the recoding: suppress again if wanted
            if not recoding.rules:
                self.source, self.recode = base, {}
                (self.work / INPUTS / RECODE_MAP).unlink(missing_ok=True)
                return base
            folder = self.work / RECODED
            folder.mkdir(mode=0o700, exist_ok=True)
            out = folder / f"recoded-{len(list(folder.iterdir())) + 1}{base.path.suffix.lower() or '.csv'}"
            recode_file(base.path, out, recoding, **base.reading)
            import json

            (self.work / INPUTS / RECODE_MAP).write_text(json.dumps(recoding.to_dict(), indent=2, ensure_ascii=False)
                                                         + "\n", encoding="utf-8")
            recoded = describe_file(out, label=base.label, na_values=base.na_values, sep=base.sep,
                                    encoding=base.encoding)
            self.source = dataclasses.replace(recoded, categories=self._recoded_codebook(base, recoding))
            self.recode = recoding.to_dict()
            return self.source

    def _recoded_codebook(self, base: Source, recoding: Any) -> Path | None:
        """The file's codebook with the recoding applied to its categories (declared categories stay declared:
        the map is declared too), or None without a codebook."""
        if base.categories is None:
            return None
        book = pd.read_csv(base.categories, dtype=str, keep_default_na=False)
        for column, rule in recoding.rules.items():
            rows = book["variable"] == column
            book.loc[rows, "category"] = rule.recode(book.loc[rows, "category"])
        out = self.work / INPUTS / "recoded-codebook.csv"
        book.drop_duplicates().to_csv(out, index=False)
        return out

    @property
    def is_recoded(self) -> bool:
        """Whether the release reads a recoded copy of the file (the script then runs ``pramkit recode`` first)."""
        return bool(self.recode)

    # -- step 2b: local suppression (optional) ----------------------------
    @property
    def unsuppressed(self) -> Source:
        """The file a suppression reads: the file as opened, or its recoded copy (never a suppressed one)."""
        if self.suppression is not None:
            return self.suppression.before
        return self._source()

    def below_k(self, spec: SuppressSpec) -> BelowK:
        """The records whose combination of the spec's keys fewer than k records share in the file a suppression
        reads (:attr:`unsuppressed`), by its rule, within its strata: the live count, before anything is run.

        The file is read once per column (kept for the next count); nothing is written.

        Parameters
        ----------
        spec : SuppressSpec
            The settings (checked).

        Returns
        -------
        BelowK

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=2_000)
        ...     count = wb.below_k(SuppressSpec(keys=("age", "sex", "race"), k=5))
        ...     print(count.records, count.violating > 0, count.k)
        2000 True 5
        """
        spec.check()
        source = self.unsuppressed
        columns = [*spec.keys, *(spec.strata or ())]
        held = self._frames.get(source.path)
        wanted = [c for c in columns if held is None or c not in held.columns]
        if wanted:
            read = key_frame(source.path, wanted, source.reading)
            held = read if held is None else pd.concat([held, read], axis=1)
            self._frames = {source.path: held}
        assert held is not None
        return below_k(held[columns], spec)

    def suppress(self, spec: SuppressSpec) -> SuppressView:
        """Make the file k-anonymous by local suppression (:func:`pramkit.suppress.suppress_file`, as ``pramkit
        suppress`` with the same settings): the later steps read the suppressed file, the design states the
        suppression (``--suppressed-by``), the export keeps the suppressed file and its receipt in ``private/``
        (where the script's ``pramkit suppress`` writes them) and the script suppresses again.  Undoable.

        Parameters
        ----------
        spec : SuppressSpec
            The settings.

        Returns
        -------
        SuppressView
            The values suppressed per key (private), the lower bound, the records below k before and after.

        Raises
        ------
        ParameterError
            Bad settings (nothing run).

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=2_000)
        ...     view = wb.suppress(SuppressSpec(keys=("age", "sex", "race"), k=3, method="heuristic"))
        ...     print(view.before.violating > 0, view.after.violating, view.total >= view.lower_bound)
        ...     print(wb.source.path.name, wb.is_suppressed)
        True 0 True
        suppressed.csv True
        """
        from pramkit.suppress import suppress_file

        spec.check()
        before = self.unsuppressed
        counted = self.below_k(spec)
        with self._change():
            folder = self.work / SUPPRESSED
            folder.mkdir(mode=0o700, exist_ok=True)
            run = folder / str(len(list(folder.iterdir())) + 1)
            run.mkdir(mode=0o700)
            out = run / f"suppressed{before.path.suffix.lower() or '.csv'}"
            try:
                with heard() as said:
                    result = suppress_file(before.path, list(spec.keys), spec.k, out, **spec.keywords(),
                                           **before.reading)
                made = describe_file(out, label=before.label, na_values=before.na_values, sep=before.sep,
                                     encoding=before.encoding)
            except BaseException:
                shutil.rmtree(run, ignore_errors=True)
                raise
            self.source = dataclasses.replace(made, categories=before.categories)
            self.designed = self.applied = self.exported = None  # made from another file
            after = below_k(key_frame(out, [*spec.keys, *(spec.strata or ())], self.source.reading), spec)
            table = pd.DataFrame({"key": list(result.suppressed),
                                  "values suppressed": [int(n) for n in result.suppressed.values()]})
            import json

            receipt = json.loads(Path(result.receipt).read_text(encoding="utf-8"))
            view = SuppressView(spec, table, result.total, result.lower_bound, result.optimal, result.method,
                                counted, after, str(receipt["guarantee"]), result.blank_records, self.said(said))
            self.suppression = Suppressed(spec, view, Path(result.receipt), before)
            return view

    def unsuppress(self) -> Source:
        """Take the suppression back: the later steps read the file it was made from.  Undoable.

        Returns
        -------
        Source

        Raises
        ------
        ParameterError
            No suppression is in force.
        """
        if self.suppression is None:
            raise ParameterError("no suppression to take back: the steps read the file as opened")
        with self._change():
            self.source, self.suppression = self.suppression.before, None
            self.designed = self.applied = self.exported = None
            return self.source

    @property
    def is_suppressed(self) -> bool:
        """Whether the release reads a suppressed copy of the file (the script then runs ``pramkit suppress``)."""
        return self.suppression is not None

    # -- step 2: the risk before ------------------------------------------
    def risk(self, keys: Sequence[str], *, sampling_fraction: float | None = None, weights: str | None = None,
             household: str | None = None, contributions: bool = False) -> RiskView:
        """The identification risk of the original file on ``keys`` (:func:`pramkit.identification_risk`).

        Parameters
        ----------
        keys : sequence of str
            The key variables.
        sampling_fraction, weights : float or str
            Exactly one: the file's sampling fraction, or its weight column.
        household : str, optional
            A household id column: the household risk too (:func:`pramkit.household_risk`).
        contributions : bool
            Also what each key variable and level contributes to the risk
            (:func:`pramkit.risk.contributions.release_contributions`).

        Returns
        -------
        RiskView
        """

        source = self._source()
        keys = _names(keys, "key variables")
        with self._change():
            return self._risk(source, keys, sampling_fraction, weights, household, contributions)

    def _risk(self, source: Source, keys: list[str], sampling_fraction: float | None, weights: str | None,
              household: str | None, contributions: bool) -> RiskView:
        from pramkit.risk.household import household_risk
        from pramkit.risk.identification import identification_risk
        from pramkit.risk.plots import plot_fit

        with heard() as said:
            result = identification_risk(source.path, keys, sampling_fraction=sampling_fraction, weights=weights,
                                         **source.reading)
            figures = result.to_dict()
            if household:
                figures.update(household_risk(source.path, keys, household, sampling_fraction=sampling_fraction,
                                              weights=weights, **source.reading).to_dict())
            plot = self.work / RELEASE / "risk-fit.png"
            plot_fit(result.model, plot, force=True)
        self.risk_keys, self.sampling_fraction, self.weights = tuple(keys), sampling_fraction, weights
        self.household = household or None
        self.assessed = RiskView.of(figures, plot.read_bytes())
        if weights:
            self.assessed = dataclasses.replace(self.assessed, note=(
                f"Each record's sampling fraction is the inverse of its weight (column {weights}); a sampling "
                "fraction of the file is not used with weights."))
        if contributions:
            from pramkit.risk.contributions import release_contributions

            with heard() as more:
                explained = release_contributions(source.path, keys, sampling_fraction=sampling_fraction,
                                                  weights=weights, **source.reading)
            self.assessed, said = self.assessed.with_contributions(explained), said + more
        self.assessed = dataclasses.replace(self.assessed, warnings=self.said(said))
        return self.assessed

    # -- step 3: the design -----------------------------------------------
    def design(self, variables: Sequence[str], choices: DesignChoices, *, key: SecretKey | None = None) -> DesignView:
        """Design the release of ``variables`` with ``choices`` (the flags of ``pramkit design``).

        The files the choices name (rules, prior, codebook) are copied into the work
        folder first, so the export and the script hold what was used.  The design
        step's DP noise is drawn from ``key`` (default: the key of the earlier
        design, else a new one, which :meth:`apply` replaces by the key it is given).

        Parameters
        ----------
        variables : sequence of str
            The columns to perturb.
        choices : DesignChoices
            Everything else ``pramkit design`` takes.
        key : SecretKey, optional
            The secret key of the release.

        Returns
        -------
        DesignView
        """
        with self._change():
            return self._design(variables, choices, key=key)

    def preview(self, variables: Sequence[str], choices: DesignChoices, *, key: SecretKey | None = None) -> Any:
        """Design ``variables`` with ``choices`` for a look only: the expected risk after PRAM and the expected
        utility (:func:`pramkit.risk.expected.expected_release`), before anything is applied.

        The design is not made the release (nor an undoable change); it is added to :attr:`tried`, the
        designs of the risk-utility map.  The original file is read on the risk step's keys once
        (the problem set), so a change of the parameters costs the design and the matrices' work.

        Parameters
        ----------
        variables : sequence of str
            The columns to perturb.
        choices : DesignChoices
            As :meth:`design`.
        key : SecretKey, optional
            As :meth:`design` (the design's noise).

        Returns
        -------
        pramkit.workbench.preview.PreviewView

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=2_000)
        ...     _ = wb.risk(["age", "sex", "marital_status"], sampling_fraction=0.05)
        ...     one = wb.preview(["age"], DesignChoices(method="rr", epsilon=1.0))
        ...     two = wb.preview(["age"], DesignChoices(method="rr", epsilon=4.0))
        ...     print(one.expected.tau2 < two.expected.tau2 < two.expected.tau2_before, len(two.tried), wb.designed)
        True 2 None
        """
        from pramkit.workbench.preview import preview

        return preview(self, variables, choices, self._made(variables, choices, key, compare=False))

    def _made(self, variables: Sequence[str], choices: DesignChoices, key: SecretKey | None, *,
              compare: bool = True) -> tuple[Any, ...]:
        """The release designed with the choices: its variables, the choices as used, the key and the release
        (``compare``: with the record's comparison of a joint design, which a preview does not show)."""
        source = self._source()
        if self.recode and choices.recoded_by is None:  # the manifest states the recoding (public: it is declared)
            choices = dataclasses.replace(choices, recoded_by=self.work / INPUTS / RECODE_MAP)
        if self.suppression is not None:  # the manifest states the suppression: the guarantee is the combined one
            choices = dataclasses.replace(choices, suppressed_by=self.suppression.receipt)
        elif choices.suppressed_by is not None:
            choices = dataclasses.replace(choices, suppressed_by=None)
        names = tuple(_names(variables, "variables to perturb"))
        choices = self._kept_inputs(choices, source)
        key = key or (self.designed.key if self.designed and self.designed.key else SecretKey.generate())
        release = choices.release(source.path, names, key=None if choices.recognition is not None else key,
                                  compare=compare)
        return names, choices, key, release

    def _design(self, variables: Sequence[str], choices: DesignChoices, *, key: SecretKey | None = None) -> DesignView:
        source = self._source()
        with heard() as said:
            names, choices, key, release = self._made(variables, choices, key)
            view = design_view(release.manifest, release.record, _heatmaps(release.manifest),
                               _distances(release.manifest, release.record.variables, choices.distances),
                               columns=source.names)
        view = dataclasses.replace(view, notes=self.said(view.notes), warnings=self.said(said))
        noise = None if choices.recognition is not None else key.fingerprint  # the recognition design draws none
        self.designed, self.applied, self.exported = Designed(names, choices, key, view, noise_key=noise), None, None
        return view

    def use_manifest(self, path: str | Path, *, key: SecretKey | None = None) -> DesignView:
        """Release with a manifest made before (a design of the same file's columns), as it is.

        The manifest is kept in the work folder; applying writes it unchanged beside the
        released file, and the script copies it instead of designing.

        Parameters
        ----------
        path : str or pathlib.Path
            A manifest written by ``pramkit design`` (or an earlier release).
        key : SecretKey, optional
            The secret key of the release (default: the earlier one, else a new one).

        Returns
        -------
        DesignView
            Its ledger and matrices (no design record: the information kept is not known).

        Raises
        ------
        ManifestError
            The file is not a manifest pramkit reads.
        ParameterError
            The manifest perturbs or reads columns that the file does not have.
        """
        with self._change():
            return self._use_manifest(path, key=key)

    def _use_manifest(self, path: str | Path, *, key: SecretKey | None = None) -> DesignView:
        source = self._source()
        with heard() as said:
            manifest = Manifest.read(path)
        absent = [c for c in manifest.columns if c not in source.names]
        if absent:
            raise ParameterError(f"the manifest is for other columns: {', '.join(absent)} "
                                 f"{'is' if len(absent) == 1 else 'are'} not in {source.label}")
        kept = self.work / INPUTS / "manifest.json"
        _keep(path, kept)
        view = design_view(manifest, None, _heatmaps(manifest), {}, columns=source.names)
        view = dataclasses.replace(view, notes=self.said(view.notes), warnings=self.said(said))
        key = key or (self.designed.key if self.designed and self.designed.key else SecretKey.generate())
        names = tuple(v.name for v in manifest.variables)
        self.designed, self.applied, self.exported = Designed(names, None, key, view, kept), None, None
        return view

    def _kept_inputs(self, choices: DesignChoices, source: Source) -> DesignChoices:
        """The choices with their input files copied into the work folder (the census's codebook by default)."""
        if choices.categories is None and source.categories is not None:
            choices = dataclasses.replace(choices, categories=str(source.categories))
        if choices.na_values == NA_VALUES and source.na_values != NA_VALUES:
            choices = dataclasses.replace(choices, na_values=source.na_values)
        if (choices.sep, choices.encoding) == (CSV_SEP, CSV_ENCODING):
            choices = dataclasses.replace(choices, sep=source.sep, encoding=source.encoding)
        changed: dict[str, Any] = {}
        for name, target in INPUT_FILES.items():
            given = getattr(choices, name)
            if given is None:
                continue
            kept = self.work / INPUTS / target
            _keep(given, kept)
            changed[name] = type(given)(kept) if isinstance(given, Path) else str(kept)
        return dataclasses.replace(choices, **changed)

    # -- messages -----------------------------------------------------------
    def in_page_words(self, message: str, hidden: Sequence[str | Path] = ()) -> str:
        """A library error's message in a page's words (:func:`pramkit.workbench.words.page_words`): fields
        instead of flags, the officer's names of the files instead of the work folder's paths.

        Parameters
        ----------
        message : str
            The message.
        hidden : sequence of path
            Other private folders (the app's own), besides the work folder.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=1_000)
        ...     wb.in_page_words(f"cannot read '{wb.work}/inputs/rules.csv' (--forbid)")
        "cannot read 'the edit rules file' (the edit rules file)"
        """
        from pramkit.workbench.words import page_words

        names: dict[str | Path, str] = {self.work / INPUTS / target: words for target, words in (
            ("rules.csv", "the edit rules file"), ("prior.csv", "the public frequencies file"),
            ("codebook.csv", "the codebook"), ("recoded-codebook.csv", "the codebook"),
            ("census-codebook.csv", "the census's codebook"), ("manifest.json", "the manifest given"),
            (RECODE_MAP, "the recoding"))}
        if self.base is not None:
            names[self.base.path] = self.base.label
        if self.suppression is not None and self.source is not None:
            names[self.suppression.receipt] = "the suppression's receipt"
            names[self.source.path] = f"{self.base.label if self.base else 'the file'} (suppressed)"
            if self.suppression.before is not self.base:
                names[self.suppression.before.path] = f"{self.suppression.before.label} (recoded)"
        elif self.source is not None and self.source is not self.base:
            names[self.source.path] = f"{self.source.label} (recoded)"
        return page_words(message, hidden=[self.work, *hidden], names=names)

    # -- undo and sessions --------------------------------------------------
    @contextlib.contextmanager
    def _change(self) -> Iterator[None]:
        """A change of the settings: undoable once it succeeds; a failed one leaves the input files as they were."""
        before = Snapshot.of(self)
        try:
            yield
        except BaseException:
            before.put_back_inputs(self)  # the steps' results are as they were: they are set on success only
            raise
        self._history = [*self._history, before][-UNDO_DEPTH:]

    @property
    def can_undo(self) -> bool:
        """Whether :meth:`undo` has a change to take back."""
        return bool(self._history)

    def undo(self) -> None:
        """Take back the last change of the settings (a risk assessment, a design, a recoding, a suppression).

        The steps show again what they showed before it; a release applied since is forgotten
        (apply again, with the key: the workbench never keeps a key in its history).

        Raises
        ------
        ParameterError
            There is nothing to undo (opening a file starts the history again).

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=2_000)
        ...     _ = wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0))
        ...     _ = wb.design(["sex"], DesignChoices(method="rr", epsilon=2.0))
        ...     wb.undo()
        ...     print(wb.designed.view.record_epsilon, wb.can_undo)
        ...     wb.undo()
        ...     print(wb.designed, wb.can_undo)
        1 True
        None False
        """
        if not self._history:
            raise ParameterError("nothing to undo: no setting was changed since the file was opened")
        self._history.pop().put_back(self)

    def save_session(self, path: str | Path) -> Path:
        """Write the settings to a session file (JSON; no key, no original data: :mod:`pramkit.workbench.saved`),
        readable by its owner only (0600): it holds the designs tried, figures computed from the original.

        Parameters
        ----------
        path : str or pathlib.Path
            A new file (an existing one is never overwritten).

        Returns
        -------
        pathlib.Path

        Raises
        ------
        ParameterError
            No file is open.
        OutputExistsError
            ``path`` exists.
        """
        from pramkit.atomic import write_text_atomic

        return write_text_atomic(Path(path).expanduser(), self.session_json(), force=False, mode=0o600)

    def session_json(self) -> str:
        """The session file's text (:meth:`save_session`)."""
        import json

        return json.dumps(session_dict(self), indent=2, ensure_ascii=False) + "\n"

    def restore_session(self, path: str | Path) -> tuple[str, ...]:
        """Open a session file's data again (its digest checked) and run its steps again (:func:`restore`).

        A session file is settings: what would start a connection (the Spark engine) or read a file by a
        path it names (rules, codebook, prior, distances, a manifest to derive from) is not restored, and said.

        Parameters
        ----------
        path : str or pathlib.Path
            A session file (:meth:`save_session`).  For a session saved on an uploaded file, upload
            the file again first.

        Returns
        -------
        tuple of str
            What was not restored, and why.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(pathlib.Path(d, "a"))
        ...     _ = wb.open_census(rows=2_000)
        ...     _ = wb.risk(["age", "sex"], sampling_fraction=0.1)
        ...     _ = wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0))
        ...     saved = wb.save_session(pathlib.Path(d, "session.json"))
        ...     again = Workbench(pathlib.Path(d, "b"))
        ...     said = again.restore_session(saved)
        ...     print(again.risk_keys, again.designed.view.record_epsilon, again.source.rows, said)
        ('age', 'sex') 1 2000 ()
        """
        return restore(self, read_session(path))

    # -- step 4: apply ----------------------------------------------------
    def apply(self, key: SecretKey | None = None) -> ApplyView:
        """Perturb the file with ``key`` and estimate each perturbed variable from the release.

        The design shown is applied, its manifest unchanged, whichever key its noise was
        drawn from (:attr:`Designed.noise_key`).  When that is another key, the release is
        designed again with ``key`` and that design is kept if it is the same (a design
        that draws no noise); otherwise the design shown is kept, and the script copies its
        manifest instead of designing again (:func:`pramkit.workbench.export.reproduce_script`).

        Parameters
        ----------
        key : SecretKey, optional
            The secret key (default: the design's, unless a release was applied with it already).

        Returns
        -------
        ApplyView

        Raises
        ------
        ParameterError
            Nothing is designed, or no key is given once a release was applied: the workbench keeps
            no reference to a key after applying with it (its fingerprint only), so applying again
            needs the key again.
        """
        from pramkit.engine.perturb import apply_file
        from pramkit.release.record import write_design

        source = self._source()
        if self.designed is None:
            raise ParameterError("design the release first")
        if key is None and self.designed.key is None:
            raise ParameterError("give the key again: it is not kept once a release was applied with it")
        if key is not None and self.designed.noise_key not in (None, key.fingerprint):
            self._design_with(key)
        elif key is not None:
            self.designed = dataclasses.replace(self.designed, key=key)
        designed = self.designed
        assert designed is not None and designed.key is not None
        made = self.work / RELEASE
        (made / "design-record.json").unlink(missing_ok=True)
        if designed.manifest_file is not None:
            shutil.copyfile(designed.manifest_file, made / "manifest.json")
        else:
            assert designed.view.record is not None
            write_design(Release(designed.view.manifest, designed.view.record), made / "manifest.json",
                         design_record=made / "design-record.json", force=True)
        released = made / released_name(self)
        _ = (self.base or source).digest  # the original's SHA-256 as the release is made: the script checks it
        with heard() as said:
            result = apply_file(source.path, made / "manifest.json", released, key=designed.key, force=True,
                                **source.reading)
            changed = pd.DataFrame([{"variable": v.name, "values changed": f"{v.changed:,}",
                                     "changed (%)": f"{100 * v.changed_share:.1f}", "missing kept": f"{v.missing:,}"}
                                    for v in result.variables])
            written = Manifest.read(made / "manifest.json")  # the manifest the receipt names
            estimates, estimated = self._estimates(written, released)
            risk_after = self._risk_after(written, released)
        kept = [] if designed.noise_key in (None, designed.key.fingerprint) else [KEPT_DESIGN]
        self.applied = ApplyView(changed, estimates, designed.key.fingerprint, designed.view, risk_after,
                                 self.said([*kept, *said, *estimated]))
        self.designed, self.exported = dataclasses.replace(designed, key=None), None  # the key is dropped
        return self.applied

    def _design_with(self, key: SecretKey) -> None:
        """The design shown, its noise drawn from another key: designed again with ``key`` when that makes the
        same design (its manifest equal but for its time stamp: no noise of the key's in it), so that the script
        designs it again; else kept as it is, the release the page showed (the script then copies its manifest)."""
        designed, applied, exported = self.designed, self.applied, self.exported
        assert designed is not None and designed.choices is not None
        again = self._design(designed.variables, designed.choices, key=key)
        if _design_digest(again.manifest) != _design_digest(designed.view.manifest):
            self.designed, self.applied, self.exported = dataclasses.replace(designed, key=key), applied, exported

    def _estimates(self, manifest: Manifest, released: Path) -> tuple[pd.DataFrame, list[str]]:
        """Per perturbed variable and category (a joint or stratified variable: per cell): the original share
        (the design record's, private), the released share, and the estimate from the release with its 95 %
        interval, in percent, as ``pramkit estimate`` prints them (:func:`pramkit.estimate_table`'s cells, with
        the risk step's weights): "not identifiable" for a cell a singular matrix cannot tell apart from others,
        "n/a" for an interval the estimator has not; and the warnings of the estimates, each naming its variable
        (e.g. a singular matrix: the maximum-likelihood estimate instead of the unbiased one)."""
        from pramkit.estimate import estimate_table

        assert self.designed is not None and self.source is not None
        source, frames, warned = self.source, [], []
        for v in manifest.variables:
            with heard() as said:
                result = estimate_table(released, manifest, [v.name], **self.source.reading, weights=self.weights)
            warned += [f"the estimates of {v.name}: {w}" for w in said]
            record = self.designed.view.record
            p = None if record is None else record.variables.get(v.name, {}).get("p")
            frames.append(_estimate_rows(v.name, result, p,
                                         lambda c, cols=v.read_columns: _label(_cell(c), source, cols)))
        return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), warned

    def _risk_after(self, manifest: Manifest, released: Path) -> RiskView | None:
        """The risk of the released file on the risk step's keys, PRAM accounted for."""
        from pramkit.risk.identification import identification_risk

        assert self.source is not None
        if not self.risk_keys or (self.sampling_fraction is None and self.weights is None):
            return None
        keys = list(self.risk_keys)
        if not {c for v in manifest.variables for c in v.columns} & set(keys):
            return RiskView.not_computed("no key variable is perturbed: the risk is the risk before")
        try:  # stratified and joint variables are one axis of the risk model's table (identification_risk)
            result = identification_risk(released, keys, sampling_fraction=self.sampling_fraction,
                                         weights=self.weights, manifest=manifest, original=self.source.path,
                                         **self.source.reading)
        except ParameterError as exc:  # e.g. a joint variable whose columns are not all keys: say why
            return RiskView.not_computed(f"not computed: {exc}")
        return RiskView.of(result.to_dict())

    def attack(self, known: Sequence[str]) -> Any:
        """Attack the applied release (:func:`pramkit.risk.attack.attack`): the reconstruction, the linkage and,
        without a suppression, the Bayes ceiling of each perturbed column, knowing ``known``, every other column a
        target, against the file the release was made from (the file as opened, recoded if it was: the records
        the released file holds in their order).  The figures come from the original: private, never written to
        ``public/``.

        Parameters
        ----------
        known : sequence of str
            The columns the attacker knows.

        Returns
        -------
        pramkit.workbench.attacked.AttackView
            The figures in plain words (:func:`pramkit.risk.attack_words.attack_sentences`).

        Raises
        ------
        ParameterError
            Nothing is applied, or a known column is not in the file.

        Examples
        --------
        >>> import tempfile
        >>> from pramkit.kernel.rng import SecretKey
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     _ = wb.open_census(rows=1_000)
        ...     _ = wb.design(["sex"], DesignChoices(method="rr", epsilon=1.0))
        ...     _ = wb.apply(SecretKey(bytes(range(32)), "a test key"))
        ...     view = wb.attack(["age", "race"])
        >>> view.known, any("Bayes" in s or "joint law" in s for s in view.sentences)
        (('age', 'race'), True)
        """
        from pramkit.workbench.attacked import attack_view

        if self.applied is None or self.source is None:
            raise ParameterError("apply the release first: the attack reads the released file")
        absent = [c for c in known if c not in self.source.names]
        if absent:
            raise ParameterError(f"{absent[0]!r} is not a column of {self.source.label}")
        made = self.work / RELEASE
        original = self.unsuppressed
        note = ("no Bayes ceiling: the release was made from the suppressed file, whose missing values are not "
                "the original's" if self.suppression is not None else "")
        with heard():
            return attack_view(original.path, made / released_name(self), list(known), original.reading,
                               manifest=None if self.suppression is not None else made / "manifest.json",
                               key_fingerprint=self.applied.key_fingerprint, note=note)

    # -- step 5: export ---------------------------------------------------
    def script(self) -> str:
        """The shell script that makes this release again, byte for byte, with the same key.

        Returns
        -------
        str
            ``sh private/reproduce.sh KEY_FILE OUT`` (:func:`pramkit.workbench.export.reproduce_script`).
        """
        return reproduce_script(self)

    def export(self, out: str | Path, *, confirmed: bool = False) -> ExportView:
        """Write ``OUT/public/`` and ``OUT/private/`` as the command line does (:func:`pramkit.workbench.export.export`)."""
        with heard() as said:
            exported = export(self, Path(out), confirmed=confirmed)
        self.exported = dataclasses.replace(exported, warnings=self.said([*said, *exported.warnings]))
        return self.exported

    def said(self, messages: Sequence[str]) -> tuple[str, ...]:
        """What the library said during a step (:func:`pramkit.workbench.heard.heard`, a design's notes), each
        once and in the page's words (:meth:`in_page_words`): fields for flags, no path of the work folder.

        Parameters
        ----------
        messages : sequence of str
            The library's messages.

        Returns
        -------
        tuple of str

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     wb = Workbench(d)
        ...     wb.said([f"read {wb.work}/inputs/prior.csv; see --prior", "a note", "a note"])
        ('read the public frequencies file; see the public frequencies file', 'a note')
        """
        return tuple(dict.fromkeys(self.in_page_words(m) for m in messages))


def _write_census(frame: pd.DataFrame, path: Path) -> None:
    """Write the census to ``path`` in blocks of :data:`CENSUS_BLOCK` persons, a progress update after each (the
    same file as one :func:`pramkit.io.write_table`)."""
    table = pandas_table(frame)
    with progress(total=table.num_rows, desc="writing the census", unit="rows") as bar, \
            TableWriter(path, force=True) as writer:
        for start in range(0, table.num_rows, CENSUS_BLOCK):
            block = table.slice(start, CENSUS_BLOCK)
            writer.write(block)
            bar.update(block.num_rows)


def _names(names: Sequence[str], what: str) -> list[str]:
    """Column names given by a user: stripped, none empty, at least one, no repeats."""
    out = [str(n).strip() for n in names if str(n).strip()]
    if not out:
        raise ParameterError(f"choose at least one of the {what}")
    if len(set(out)) < len(out):
        raise ParameterError(f"the {what} repeat a column: {', '.join(out)}")
    return out


def _label(cell: Any, source: Source | None = None, columns: Sequence[str] = ()) -> str:
    """A category or a cell (a tuple of labels, one per column of ``columns``) as the page shows it: the
    value labels of ``source`` (a Stata or SPSS file) instead of codes, a missing value as "(missing)".

    Examples
    --------
    >>> _label(("0-9", "never married")), _label(None), _label(3), _label(float("nan"))
    ('0-9 | never married', '(missing)', '3', '(missing)')
    """
    if isinstance(cell, tuple):
        named = len(columns) == len(cell)
        return " | ".join(_label(c, source, (columns[i],) if named else ()) for i, c in enumerate(cell))
    if source is not None and len(columns) == 1:
        return source.shown(columns[0], cell)
    return shown_value(cell)


def _estimate_rows(name: str, result: Any, p: Sequence[float] | None, label: Any) -> pd.DataFrame:
    """The Apply step's rows of one variable from its :func:`pramkit.estimate_table` result: a row per cell
    (``p``: the design record's original shares), then, for a singular matrix, a row per group of cells it
    cannot tell apart, "{a, b}", with the estimated total of the group (identifiable), as ``pramkit estimate``
    prints them below its table; ``label`` names a category.

    Examples
    --------
    >>> import warnings
    >>> from pramkit import Manifest, PramMatrix, estimate_table
    >>> m = PramMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], ("a", "b", "c"))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # the moment estimator falls back to the MLE
    ...     res = estimate_table(pd.DataFrame({"x": ["a"] * 40 + ["b"] * 20 + ["c"] * 40}), Manifest.of({"x": m}), "x")
    >>> rows = _estimate_rows("x", res, None, str)
    >>> rows[["category", "estimate (%)", "95 % interval"]].values.tolist()  # doctest: +NORMALIZE_WHITESPACE
    [['a', 30.0, 'not identifiable'], ['b', 30.0, 'not identifiable'], ['c', 40.0, '30.40 .. 49.60'],
     ['{a, b}', 60.0, '50.40 .. 69.60']]
    """
    cells, groups, n = result.cells(), result.groups(), result.n
    original = [math.nan] * len(cells) if p is None or len(p) != len(cells) else [100 * x for x in p]
    total = sum(c["released"] for c in cells)
    rows = [{"category": label(c["category"]), "original (%)": round(o, 2),
             "released (%)": round(100 * c["released"] / total, 2), "estimate (%)": round(100 * c["proportion"], 2),
             "95 % interval": _interval(c["proportion_ci_low"], c["proportion_ci_high"], c["identifiable"])}
            for c, o in zip(cells, original)]
    where = {row["category"]: i for i, row in enumerate(rows)}
    for g in groups:
        members = [where[label(c)] for c in g["category"]]
        rows.append({"category": "{" + ", ".join(rows[i]["category"] for i in members) + "}",
                     "original (%)": round(sum(original[i] for i in members), 2),
                     "released (%)": round(100 * sum(cells[i]["released"] for i in members) / total, 2),
                     "estimate (%)": round(100 * g["estimate"] / n, 2),
                     "95 % interval": _interval(g["ci_low"] / n, g["ci_high"] / n)})
    return pd.DataFrame([{"variable": name, **row} for row in rows])


def _cell(category: Any) -> Any:
    """A cell of :meth:`pramkit.estimate.EstimateResult.cells` as the page labels it (a list: a tuple)."""
    return tuple(category) if isinstance(category, list) else category


def _percent(share: float) -> str:
    """A share in percent as ``pramkit estimate`` prints it (two decimals, "n/a" when there is none).

    Examples
    --------
    >>> _percent(0.13201), _percent(float("nan"))
    ('13.20', 'n/a')
    """
    return f"{100 * share:.2f}" if math.isfinite(share) else "n/a"


def _interval(lo: float, hi: float, identifiable: bool = True) -> str:
    """A 95 % interval of a share in percent as ``pramkit estimate`` prints it: "not identifiable" for a cell the
    matrix cannot tell apart from others (whatever numbers the estimator gave it), "n/a" without one.

    Examples
    --------
    >>> _interval(0.1, 0.2), _interval(-7e13, 7e13, False), _interval(float("nan"), 0.2)
    ('10.00 .. 20.00', 'not identifiable', 'n/a')
    """
    if not identifiable:
        return NOT_IDENTIFIABLE
    return f"{_percent(lo)} .. {_percent(hi)}" if math.isfinite(lo) and math.isfinite(hi) else "n/a"


#: What ``pramkit estimate`` says of a cell a singular matrix cannot tell apart from others (its flag).
NOT_IDENTIFIABLE = "not identifiable"


#: What differs between two runs of the same design: when the manifest was made and how long its steps took.
RUN_FIELDS = ("created", "seconds")


def _design_digest(manifest: Manifest) -> str:
    """The SHA-256 of a manifest's JSON without :data:`RUN_FIELDS` (at any depth): two designs are the same
    release iff equal.

    Examples
    --------
    >>> from pramkit.design.classic import randomized_response
    >>> one, two, other = (Manifest.of({"sex": randomized_response(["f", "m"], e)}) for e in (1.0, 1.0, 2.0))
    >>> _design_digest(one) == _design_digest(two), _design_digest(one) == _design_digest(other)
    (True, False)
    """
    import hashlib
    import json

    from pramkit._json import to_jsonable

    def facts(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: facts(v) for k, v in x.items() if k not in RUN_FIELDS}
        return [facts(v) for v in x] if isinstance(x, (list, tuple)) else x

    return hashlib.sha256(json.dumps(to_jsonable(facts(manifest.to_dict())), sort_keys=True).encode()).hexdigest()


def _heatmaps(manifest: Manifest) -> dict[str, bytes]:
    """Heat maps of the matrices small enough to draw."""
    from pramkit.report.plots import HEATMAP_MAX, matrix_heatmap

    return {v.name: matrix_heatmap(v.name, v.matrix.matrix, [str(c) for c in v.matrix.categories])
            for v in manifest.variables if v.matrix.size <= HEATMAP_MAX}


def _distances(manifest: Manifest, record: Mapping[str, Mapping[str, Any]], given: Any = None) -> dict[str, float]:
    """Expected distance moved over the exact proportions of the design record, for the variables whose
    manifest names distances (read from ``given``, the design's distances, when there are; the manifest
    names a distance file by its name only)."""
    from pramkit.design.metric.mechanisms import geo_utility
    from pramkit.distances import read_distances
    from pramkit.report.build import distance_specs

    out: dict[str, float] = {}
    for name, (spec, _) in distance_specs(manifest, given).items():
        v = manifest[name]
        try:
            dist = read_distances(spec, v.matrix.categories)
        except ParameterError:
            continue
        out[name] = geo_utility(v.matrix, dist, record.get(name, {}).get("p")).expected_distance
    return out
