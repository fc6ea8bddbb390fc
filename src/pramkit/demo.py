"""The demonstration release on the built-in census-like data.

:func:`run_demo` runs a list of steps (:data:`STEPS`), each a function that
reads and extends a shared :class:`DemoContext`: generate the data, design
the matrices (:func:`pramkit.design_release`, with the design step's counts
taken through the geometric mechanism), perturb the file, estimate a table
from the release, and write the internal and public reports.  A new
capability plugs in as one more step.

The demo writes two folders (docs/privacy.md):

* ``OUT/public/``: ``released.csv``, ``manifest.json``, ``report.html`` (the
  public report) — everything in it is safe to publish;
* ``OUT/private/``: ``census.csv`` (the original), ``design-record.json``,
  ``report.html`` (the internal report) and ``summary.json`` — never publish them.

Everything is written into a work folder inside ``OUT``
(``OUT/.demo.pramkit-tmp.PID.XXXXXXXX``, on the file system of the final
folders, so that ``OUT`` may be a mount point) and renamed into place at the
end, so a failed demo leaves nothing behind: the work folder is removed on
any error and on SIGINT and SIGTERM, and one left by a killed run (``kill
-9``) is removed by the next run, with a note (:func:`pramkit.atomic.temporary`).
With ``force`` an earlier demo's folders are replaced, but only when they hold
nothing else than the files that demo wrote, as its ``private/summary.json``
lists them (:func:`earlier_demo_files`): a folder holding an input (the key
file), a file of the user's, or an earlier demo without its summary is refused.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pramkit._extras import require_extra
from pramkit._json import to_jsonable
from pramkit.atomic import PathLike, make_folder, signals_deferred, temporary, write_text_atomic
from pramkit.datasets import CENSUS_VARIABLES, NY_ROWS, census
from pramkit.engine.perturb import ApplyResult, apply_file
from pramkit.engine.receipt import receipt_path
from pramkit.errors import ParameterError, WriteError
from pramkit.estimate import estimate_table
from pramkit.io import write_table
from pramkit.kernel.rng import SecretKey
from pramkit.ledger import fmt_epsilon
from pramkit.manifest import Manifest
from pramkit.release.folders import PRIVATE, PUBLIC, check_target, move_into_place
from pramkit.release.pipeline import design_planned
from pramkit.release.plan import plan_release

#: The key variables the demo perturbs.
PERTURBED = ("age", "sex", "marital_status")

#: Fewest rows the demo accepts (its report fits a log-linear model of five keys).
MIN_ROWS = 1_000


#: The work folder inside ``OUT`` is a temporary of ``OUT/WORK`` (:func:`pramkit.atomic.temporary`).
WORK = "demo"


@dataclass
class DemoContext:
    """State shared by the demo's steps (``out``: the temporary folder being filled).

    Each step reads what earlier steps left and adds its own.

    Parameters
    ----------
    out : pathlib.Path
        The work folder being filled (it holds ``public/`` and ``private/``).
    rows : int
        Persons to generate.
    epsilon : float
        The record budget (nats).
    key : pramkit.kernel.rng.SecretKey or None
        The secret key (``None``: a fresh one).
    quiet : bool
        No progress bars.
    data : pandas.DataFrame, optional
        The generated data (step ``generate``).
    manifest : pramkit.manifest.Manifest, optional
        The release's manifest (step ``design``).
    applied : pramkit.engine.perturb.ApplyResult, optional
        What perturbation did (step ``perturb``).
    files : dict
        Label -> path relative to ``out`` of every file written.
    sections : dict
        Per-step figures for ``summary.json``.
    lines : list of str
        The lines printed at the end.
    seconds : dict
        Wall-clock time of each step.

    Examples
    --------
    A step that adds a file:

    >>> import pathlib, tempfile
    >>> def note(ctx):
    ...     ctx.path(PRIVATE, "note.txt", "note").write_text(f"{ctx.rows} rows")
    ...     ctx.lines.append("note      written")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (pathlib.Path(d) / PRIVATE).mkdir()
    ...     ctx = DemoContext(out=pathlib.Path(d), rows=1_000, epsilon=6.0, key=None, quiet=True)
    ...     note(ctx)
    ...     print(ctx.files, ctx.lines, (pathlib.Path(d) / ctx.files["note"]).read_text())
    {'note': 'private/note.txt'} ['note      written'] 1000 rows
    """

    out: Path
    rows: int
    epsilon: float
    key: SecretKey | None
    quiet: bool
    data: pd.DataFrame | None = None
    manifest: Manifest | None = None
    applied: ApplyResult | None = None
    files: dict[str, str] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def path(self, folder: str, name: str, label: str) -> Path:
        """A file of the release, remembered under ``label`` by its final location.

        Parameters
        ----------
        folder : str
            :data:`PUBLIC` or :data:`PRIVATE`.
        name : str
            The file's name.
        label : str
            The key of :attr:`files` (and of the demo's summary) it is listed under.

        Returns
        -------
        pathlib.Path
            Where to write it now, inside the work folder.

        Examples
        --------
        >>> import pathlib
        >>> ctx = DemoContext(out=pathlib.Path("work"), rows=1_000, epsilon=6.0, key=None, quiet=True)
        >>> ctx.path(PUBLIC, "manifest.json", "manifest").as_posix(), ctx.files
        ('work/public/manifest.json', {'manifest': 'public/manifest.json'})
        """
        self.files[label] = f"{folder}/{name}"
        return self.out / folder / name


def _generate(ctx: DemoContext) -> None:
    ctx.data = census(ctx.rows)
    write_table(ctx.data, ctx.path(PRIVATE, "census.csv", "original"))
    ctx.lines.append(f"data      {ctx.rows:,} persons x {ctx.data.shape[1]} variables (built-in census-like file)")


def _design(ctx: DemoContext) -> None:
    """DP-optimal matrices (Ayed, Battiston and Camerlenghi) from DP counts, the budget split equally."""
    assert ctx.data is not None
    plan = plan_release(list(PERTURBED), epsilon=ctx.epsilon, categories=CENSUS_VARIABLES)
    ctx.manifest, record = design_planned(ctx.data, plan)
    ctx.manifest.write(ctx.path(PUBLIC, "manifest.json", "manifest"))
    record.write(ctx.path(PRIVATE, "design-record.json", "design_record"))
    ledger = ctx.manifest.ledger
    assert ledger is not None  # a designed release carries its ledger
    per_var = record.variables
    shares = ", ".join(f"{n} " + ("released exactly" if v["epsilon"] is None else fmt_epsilon(v["epsilon"]))
                       for n, v in per_var.items())
    ctx.lines.append(
        f"design    DP-optimal PRAM from noisy counts: design step epsilon {fmt_epsilon(ledger.design_epsilon)}, "
        f"then {shares} (record budget "
        f"{fmt_epsilon(ctx.epsilon)}); information kept {record.to_dict()['total_information_nats']:.4g} nats"
    )
    ctx.sections["design"] = {
        "method": "dp_optimal", "design_epsilon": ledger.design_epsilon,
        "epsilons": {n: v["epsilon"] for n, v in per_var.items()},
        "information_nats": {n: v["information_nats"] for n, v in per_var.items()},
    }


def _perturb(ctx: DemoContext) -> None:
    assert ctx.manifest is not None
    ctx.applied = apply_file(ctx.out / ctx.files["original"], ctx.manifest,
                             ctx.path(PUBLIC, "released.csv", "released"), key=ctx.key, quiet=ctx.quiet)
    ctx.files["receipt"] = f"{PUBLIC}/{receipt_path('released.csv').name}"
    ctx.lines.append(f"key       {ctx.applied.key_source}")
    for v in ctx.applied.variables:
        m = ctx.manifest[v.name].matrix
        ctx.lines.append(
            f"  {v.name:<15} S={m.size:<3} epsilon={fmt_epsilon(m.epsilon):<7} min diagonal={m.min_diagonal:.4f}  "
            f"changed {100 * v.changed_share:5.2f} % of {v.rows:,} values"
        )
    from pramkit.ledger import release_guarantee

    ctx.lines.append(release_guarantee(ctx.manifest, None if ctx.data is None else list(ctx.data.columns)).headline)
    ctx.sections["perturbation"] = {
        "variables": [
            {"name": v.name, "changed": v.changed, "missing": v.missing, "rows": v.rows}
            for v in ctx.applied.variables
        ],
        "record_epsilon": ctx.manifest.record_epsilon,
        "key": ctx.applied.key_source,
        "key_fingerprint": ctx.applied.key_fingerprint,
    }


#: The variable whose estimated distribution the demo shows next to the truth.
ESTIMATED = "marital_status"


def _estimate(ctx: DemoContext) -> None:
    """The original distribution of one perturbed variable estimated from the released file."""
    assert ctx.data is not None and ctx.manifest is not None
    result = estimate_table(ctx.out / ctx.files["released"], ctx.manifest, [ESTIMATED])
    frame = result.to_frame()
    truth = ctx.data[ESTIMATED].value_counts(normalize=True)
    released = frame["released"] / frame["released"].sum()
    ctx.lines.append(f"estimate  {ESTIMATED} from the released file [% of records]: "
                     "truth, released, estimate +/- 1.96 se")
    rows = []
    for (label, share, se), rel in zip(frame[[ESTIMATED, "proportion", "proportion_se"]].itertuples(index=False),
                                       released):
        ctx.lines.append(f"  {label:<25} {100 * truth[label]:6.2f} {100 * rel:6.2f} "
                         f"{100 * share:6.2f} +/- {196 * se:.2f}")
        rows.append({"category": label, "truth": float(truth[label]), "released": float(rel),
                     "estimate": float(share), "se": float(se)})
    ctx.sections["estimate"] = {"variable": ESTIMATED, "method": result.method, "cells": rows}


#: Key variables of the demo's risk assessment: the perturbed ones and two more.
DEMO_KEYS = (*PERTURBED, "race", "education")


def _report(ctx: DemoContext) -> None:
    """The internal report (private) and the public report."""
    from pramkit.report import build_public_report, build_report, write_report

    assert ctx.data is not None and ctx.manifest is not None
    released = ctx.out / ctx.files["released"]
    report = build_report(ctx.data, ctx.manifest, released, DEMO_KEYS, source=ctx.out / ctx.files["original"],
                          quiet=ctx.quiet)
    write_report(report, ctx.path(PRIVATE, "report.html", "internal_report"))
    write_report(build_public_report(ctx.manifest, released, quiet=ctx.quiet),
                 ctx.path(PUBLIC, "report.html", "public_report"))
    assert report.risk is not None  # the internal report assesses the risk on DEMO_KEYS
    after = report.risk.after
    ctx.lines.append(
        f"report    tau2 {report.risk.before.tau2:.4g} -> {'n/a' if after is None else f'{after.tau2:.4g}'} "
        f"records on {len(DEMO_KEYS)} keys (pi = {report.risk.sampling_fraction:g} assumed); internal report in "
        f"{PRIVATE}/, public report in {PUBLIC}/"
    )


#: The demo's steps, in order: (name, function).
STEPS: list[tuple[str, Callable[[DemoContext], None]]] = [
    ("generate", _generate),
    ("design", _design),
    ("perturb", _perturb),
    ("estimate", _estimate),
    ("report", _report),
]


@dataclass(frozen=True)
class DemoResult:
    """What the demo did: the folder, its files (relative to it), the printed lines, the step times.

    Parameters
    ----------
    out : pathlib.Path
        The folder holding ``public/`` and ``private/``.
    files : dict
        Label -> path relative to ``out``.
    sections : dict
        Per-step figures (design, perturbation, estimate).
    lines : list of str
        The lines the command prints.
    seconds : dict
        Wall-clock time of each step.

    Examples
    --------
    >>> import pathlib
    >>> result = DemoResult(pathlib.Path("demo"), {"manifest": "public/manifest.json"},
    ...                     {"design": {"epsilons": {"sex": 2.0}}}, ["design    ..."], {"design": 0.1})
    >>> result.files["manifest"], result.lines
    ('public/manifest.json', ['design    ...'])
    """

    out: Path
    files: dict[str, str]
    sections: dict[str, Any]
    lines: list[str]
    seconds: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain JSON values: ``out``, ``files``, ``seconds`` and each section.

        Returns
        -------
        dict
            The figures of ``private/summary.json`` with the folder ``out``
            (NumPy values converted, infinities as ``"inf"``;
            :func:`pramkit._json.to_jsonable`).

        Examples
        --------
        >>> import json, pathlib
        >>> import numpy as np
        >>> result = DemoResult(pathlib.Path("demo"), {"manifest": "public/manifest.json"},
        ...                     {"design": {"epsilons": {"sex": np.float64(np.inf)}}}, [], {"design": 0.1})
        >>> print(json.dumps(result.to_dict(), allow_nan=False))  # doctest: +NORMALIZE_WHITESPACE
        {"out": "demo", "files": {"manifest": "public/manifest.json"}, "seconds": {"design": 0.1},
         "design": {"epsilons": {"sex": "inf"}}}
        """
        return to_jsonable({"out": str(self.out), "files": self.files, "seconds": self.seconds, **self.sections})


def earlier_demo_files(out_dir: Path) -> set[str]:
    """The files an earlier demo in ``out_dir`` wrote, as its ``private/summary.json`` lists them
    (paths relative to ``out_dir``); empty if there is no readable summary.

    Parameters
    ----------
    out_dir : pathlib.Path
        The demo's folder (``--out``).

    Returns
    -------
    set of str
        ``public/...`` and ``private/...`` paths, the summary itself included.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(earlier_demo_files(Path(d)))
    ...     r = run_demo(d, rows=1_000)
    ...     print(sorted(earlier_demo_files(Path(d)))[:3])
    set()
    ['private/census.csv', 'private/design-record.json', 'private/report.html']
    """
    summary = out_dir / PRIVATE / "summary.json"
    try:
        listed = json.loads(summary.read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError, RecursionError):
        return set()
    if not isinstance(listed, dict):
        return set()
    return {str(f) for f in listed.values() if isinstance(f, str)} | {f"{PRIVATE}/summary.json"}


def _check_target(out_dir: Path, force: bool, inputs: list[PathLike | None]) -> None:
    """:func:`pramkit.release.folders.check_target`, and with ``force`` nothing in the way an earlier demo did not write."""
    check_target(out_dir, force=force, inputs=inputs)
    if force and out_dir.is_dir():
        _refuse_foreign(out_dir)


def _refuse_foreign(out_dir: Path) -> None:
    """Refuse to replace ``public/`` or ``private/`` when they hold anything an earlier demo did not write."""
    ours = earlier_demo_files(out_dir)
    for folder in (PUBLIC, PRIVATE):
        top = out_dir / folder
        if top.is_symlink() or not top.exists():
            if top.is_symlink():
                raise WriteError(f"{str(top)!r} is a link, not a folder an earlier demo wrote; --force replaces "
                                 "only the demo's own files: move it, or choose another --out")
            continue
        for entry in sorted(top.rglob("*")):
            name = entry.relative_to(out_dir).as_posix()
            if name not in ours or entry.is_symlink() or not entry.is_file():
                why = ("there is no earlier demo's private/summary.json listing the files it wrote" if not ours
                       else "an earlier demo did not write it")
                raise WriteError(f"{str(entry)!r} is in the way: {why}; --force replaces only the files of an "
                                 "earlier demo: move it, or choose another --out")


def run_demo(
    out: str | Path = "pramkit-demo",
    *,
    rows: int = NY_ROWS,
    epsilon: float = 6.0,
    key: SecretKey | None = None,
    force: bool = False,
    quiet: bool = True,
    progress_callback: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the demonstration release and write ``out/public/`` and ``out/private/`` (module docstring).

    Parameters
    ----------
    out : folder to write into (created if absent)
    rows : persons to generate (at least :data:`MIN_ROWS`)
    epsilon : the record budget, design step included (nats)
    key : the secret key (default: a fresh one from the operating system, never saved)
    force : replace the ``public/`` and ``private/`` folders of an earlier demo
    quiet : no progress bars
    progress_callback : called with each step's name before it runs

    Returns
    -------
    DemoResult
        The folder, the files written (relative to it), the figures of each
        step, the lines to print and the step times.

    Raises
    ------
    ParameterError
        ``rows`` is not a whole number of at least :data:`MIN_ROWS`, or ``out``
        holds an input (the key file) in ``public/`` or ``private/``.
    OutputExistsError
        An earlier demo's folders are there and ``force`` is false.
    WriteError
        ``out`` is a file, its parent folder does not exist, ``force`` would
        replace a file an earlier demo did not write, or a file or folder
        cannot be written; nothing is left behind.
    MissingExtraError
        matplotlib (the ``report`` extra), which draws the reports' figures, is not
        installed; nothing is written.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     r = run_demo(d, rows=2_000)
    ...     print(r.files["manifest"], r.files["internal_report"])
    ...     print(sorted(p.name for p in r.out.iterdir()))  # no work folder left
    public/manifest.json private/report.html
    ['private', 'public']
    """
    require_extra("report", "the demo (it writes the HTML reports)")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < MIN_ROWS:
        raise ParameterError(f"--rows must be a whole number of at least {MIN_ROWS:,} (the report fits a "
                             f"log-linear model of five keys), got {rows!r}")
    out_dir = Path(out)
    _check_target(out_dir, force, [None if key is None else key.path])
    created = not out_dir.exists()
    make_folder(out_dir)
    try:
        with temporary(out_dir / WORK, folder=True, label=f"the demo in {str(out_dir)!r}") as work:
            for folder in (PUBLIC, PRIVATE):
                (work / folder).mkdir()
            ctx = DemoContext(out=work, rows=rows, epsilon=epsilon, key=key, quiet=quiet)
            for name, step in STEPS:
                if progress_callback:
                    progress_callback(name)
                t0 = time.perf_counter()
                step(ctx)
                ctx.seconds[name] = time.perf_counter() - t0
            summary = {"files": ctx.files, "seconds": ctx.seconds, **ctx.sections}
            write_text_atomic(ctx.path(PRIVATE, "summary.json", "summary"),
                              json.dumps(to_jsonable(summary), indent=2) + "\n", force=True)
            with signals_deferred():  # an interrupted move would lose the earlier demo with the work folder
                move_into_place(work, out_dir)
    except BaseException:  # SIGINT and SIGTERM too: a folder the demo made stays only if it holds something
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()
        raise
    return DemoResult(out_dir, ctx.files, ctx.sections, ctx.lines, ctx.seconds)
