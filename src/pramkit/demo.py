"""The demonstration release on the built-in census-like data.

:func:`run_demo` runs a list of steps (:data:`STEPS`), each a function that
reads and extends a shared :class:`DemoContext`: generate the data, design
the matrices, perturb the file, estimate a table from the release, and write
the release report (risk before and after, utility, provenance).  A new
capability plugs in as one more step.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from pramkit._json import to_jsonable
from pramkit.atomic import write_text_atomic
from pramkit.counts import count_frame
from pramkit.datasets import NY_ROWS, census
from pramkit.design.dp_multivariate import split_budget
from pramkit.errors import PramkitError
from pramkit.estimate import estimate_table
from pramkit.io import sha256_of, write_table
from pramkit.manifest import Manifest
from pramkit.perturb import ApplyResult, apply_file
from pramkit.rng import SecretKey

#: The key variables the demo perturbs.
PERTURBED = ("age", "sex", "marital_status")


@dataclass
class DemoContext:
    """State shared by the demo's steps."""

    out: Path
    rows: int
    epsilon: float
    key: SecretKey | None
    force: bool
    quiet: bool
    data: pd.DataFrame | None = None
    manifest: Manifest | None = None
    applied: ApplyResult | None = None
    files: dict[str, str] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def _generate(ctx: DemoContext) -> None:
    ctx.data = census(ctx.rows)
    path = ctx.out / "census.csv"
    write_table(ctx.data, path, force=ctx.force)
    ctx.files["original"] = str(path)
    ctx.lines.append(f"data      {ctx.rows:,} persons x {ctx.data.shape[1]} variables (built-in census-like file)")


def _design(ctx: DemoContext) -> None:
    """DP-optimal matrices (Ayed, Battiston and Camerlenghi) with the record budget split equally."""
    assert ctx.data is not None
    table = count_frame(ctx.data, list(PERTURBED))
    split = split_budget(
        {n: table.proportions(n) for n in PERTURBED}, ctx.epsilon, method="equal",
        categories=dict(zip(PERTURBED, table.categories)),
    )
    ctx.manifest = Manifest.of(split.matrices, input={"file": "census.csv", "sha256": sha256_of(ctx.files["original"])})
    path = ctx.out / "manifest.json"
    ctx.manifest.write(path, force=ctx.force)
    ctx.files["manifest"] = str(path)
    ctx.lines.append(
        f"design    DP-optimal PRAM, epsilon {ctx.epsilon / len(PERTURBED):.4g} per variable (record budget "
        f"{ctx.epsilon:.4g} split equally); information kept {split.total_nats:.4g} nats"
    )
    ctx.sections["design"] = {
        "method": "dp_optimal", "epsilons": split.epsilons, "information_nats": split.information_nats,
    }


def _perturb(ctx: DemoContext) -> None:
    assert ctx.manifest is not None
    path = ctx.out / "released.csv"
    ctx.applied = apply_file(
        ctx.files["original"], ctx.manifest, path, key=ctx.key, force=ctx.force, quiet=ctx.quiet
    )
    ctx.files["released"] = str(path)
    ctx.lines.append(f"key       {ctx.applied.key_source}")
    for v in ctx.applied.variables:
        m = ctx.manifest[v.name].matrix
        ctx.lines.append(
            f"  {v.name:<15} S={m.size:<3} epsilon={m.epsilon:<7.4g} min diagonal={m.min_diagonal:.4f}  "
            f"changed {100 * v.changed_share:5.2f} % of {v.rows:,} values"
        )
    ctx.lines.append(f"record epsilon {ctx.manifest.record_epsilon:.4g} (sum over the perturbed variables)")
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
    result = estimate_table(ctx.files["released"], ctx.manifest, [ESTIMATED])
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


#: The demo's steps, in order: (name, function).
STEPS: list[tuple[str, Callable[[DemoContext], None]]] = [
    ("generate", _generate),
    ("design", _design),
    ("perturb", _perturb),
    ("estimate", _estimate),
]


@dataclass(frozen=True)
class DemoResult:
    out: Path
    files: dict[str, str]
    sections: dict[str, Any]
    lines: list[str]
    seconds: dict[str, float]


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
    """Generate the census-like file, design DP-optimal PRAM for three key variables, perturb
    the file, estimate a table from the release, assess the risk, and write ``census.csv``,
    ``manifest.json``, ``released.csv``, ``report.html`` and ``summary.json`` into ``out``."""
    if rows < 1:
        raise PramkitError("--rows must be at least 1")
    if not epsilon > 0:
        raise PramkitError(f"epsilon must be positive, got {epsilon}")
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise PramkitError(f"{str(out_dir)!r} exists and is not a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = DemoContext(out=out_dir, rows=rows, epsilon=epsilon, key=key, force=force, quiet=quiet)
    for name, step in STEPS:
        if progress_callback:
            progress_callback(name)
        t0 = time.perf_counter()
        step(ctx)
        ctx.seconds[name] = time.perf_counter() - t0
    summary = {"files": ctx.files, "seconds": ctx.seconds, **ctx.sections}
    path = out_dir / "summary.json"
    write_text_atomic(path, json.dumps(to_jsonable(summary), indent=2) + "\n", force=True)
    ctx.files["summary"] = str(path)
    return DemoResult(out_dir, ctx.files, ctx.sections, ctx.lines, ctx.seconds)


# The report step reads this module (DemoContext, PERTURBED), so it is appended last.
from pramkit.report.demo_step import report_step  # noqa: E402

STEPS.append(("report", report_step))
