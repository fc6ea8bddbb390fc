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

Everything is written into a temporary folder beside ``OUT`` and moved into
place at the end, so a failed demo leaves nothing behind.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from pramkit._json import to_jsonable
from pramkit.atomic import write_text_atomic
from pramkit.datasets import CENSUS_VARIABLES, NY_ROWS, census
from pramkit.design.release import design_release
from pramkit.errors import ParameterError, PramkitError
from pramkit.estimate import estimate_table
from pramkit.io import write_table
from pramkit.ledger import fmt_epsilon
from pramkit.manifest import Manifest
from pramkit.perturb import ApplyResult, apply_file
from pramkit.receipt import receipt_path
from pramkit.rng import SecretKey

#: The key variables the demo perturbs.
PERTURBED = ("age", "sex", "marital_status")

#: Fewest rows the demo accepts (its report fits a log-linear model of five keys).
MIN_ROWS = 1_000

#: The two folders of a release.
PUBLIC, PRIVATE = "public", "private"


@dataclass
class DemoContext:
    """State shared by the demo's steps (``out``: the temporary folder being filled)."""

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
        """A file of the release, remembered under ``label`` by its final location."""
        self.files[label] = f"{folder}/{name}"
        return self.out / folder / name


def _generate(ctx: DemoContext) -> None:
    ctx.data = census(ctx.rows)
    write_table(ctx.data, ctx.path(PRIVATE, "census.csv", "original"))
    ctx.lines.append(f"data      {ctx.rows:,} persons x {ctx.data.shape[1]} variables (built-in census-like file)")


def _design(ctx: DemoContext) -> None:
    """DP-optimal matrices (Ayed, Battiston and Camerlenghi) from DP counts, the budget split equally."""
    assert ctx.data is not None
    ctx.manifest = design_release(ctx.data, list(PERTURBED), epsilon=ctx.epsilon, categories=CENSUS_VARIABLES)
    ctx.manifest.write(ctx.path(PUBLIC, "manifest.json", "manifest"))
    record = ctx.manifest.design_record
    record.write(ctx.path(PRIVATE, "design-record.json", "design_record"))
    ledger = ctx.manifest.ledger
    per_var = record.variables
    shares = ", ".join(f"{n} {fmt_epsilon(v['epsilon'])}" for n, v in per_var.items())
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
    ctx.lines.append(f"record epsilon {fmt_epsilon(ctx.manifest.record_epsilon)} (design step plus the perturbed "
                     "variables)")
    ctx.sections["perturbation"] = {
        "variables": [
            {"name": v.name, "changed": v.changed, "missing": v.missing, "rows": v.rows}
            for v in ctx.applied.variables
        ],
        "record_epsilon": ctx.manifest.record_epsilon,
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
    """What the demo did: the folder, its files (relative to it), the printed lines, the step times."""

    out: Path
    files: dict[str, str]
    sections: dict[str, Any]
    lines: list[str]
    seconds: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"out": str(self.out), "files": self.files, "seconds": self.seconds, **self.sections})


def _check_target(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise PramkitError(f"{str(out_dir)!r} exists and is not a folder")
    if not force:
        taken = [str(out_dir / f) for f in (PUBLIC, PRIVATE) if (out_dir / f).exists()]
        if taken:
            raise PramkitError(f"{taken[0]!r} exists (an earlier demo); pass --force to replace it")
    parent = out_dir.parent if str(out_dir.parent) else Path(".")
    if not parent.is_dir():
        raise PramkitError(f"the folder {str(parent)!r} of {str(out_dir)!r} does not exist")


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

    Examples
    --------
    >>> import tempfile
    >>> r = run_demo(tempfile.mkdtemp(), rows=2_000)
    >>> sorted(r.files)[:3], r.files["manifest"]
    (['design_record', 'manifest', 'original'], 'public/manifest.json')
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < MIN_ROWS:
        raise ParameterError(f"--rows must be a whole number of at least {MIN_ROWS:,} (the report fits a "
                             f"log-linear model of five keys), got {rows!r}")
    out_dir = Path(out)
    _check_target(out_dir, force)
    parent = out_dir.parent if str(out_dir.parent) else Path(".")
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.pramkit-tmp.", dir=parent))
    try:
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
        out_dir.mkdir(exist_ok=True)
        for folder in (PUBLIC, PRIVATE):
            if (out_dir / folder).exists():
                shutil.rmtree(out_dir / folder)
            (work / folder).rename(out_dir / folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return DemoResult(out_dir, ctx.files, ctx.sections, ctx.lines, ctx.seconds)
