"""The demonstration release on the built-in census-like data.

:func:`run_demo` runs a list of steps (:data:`STEPS`), each a function that
reads and extends a shared :class:`DemoContext`: generate the data, design
the matrices, perturb the file, summarise.  Later capabilities (risk before
and after, estimates next to the truth, the HTML report) plug in as further
steps without touching the others.
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
from pramkit.codebook import categories_of
from pramkit.datasets import NY_ROWS, census
from pramkit.design.classic import randomized_response
from pramkit.errors import PramkitError
from pramkit.io import write_table
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
    assert ctx.data is not None
    per_variable = ctx.epsilon / len(PERTURBED)
    matrices = {
        name: randomized_response(categories_of(ctx.data[name]), per_variable) for name in PERTURBED
    }
    ctx.manifest = Manifest.of(matrices, input={"file": "census.csv"})
    path = ctx.out / "manifest.json"
    ctx.manifest.write(path, force=ctx.force)
    ctx.files["manifest"] = str(path)
    ctx.lines.append(
        f"design    randomized response, epsilon {per_variable:.4g} per variable "
        f"(record budget {ctx.epsilon:.4g} split equally)"
    )


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


#: The demo's steps, in order: (name, function).
STEPS: list[tuple[str, Callable[[DemoContext], None]]] = [
    ("generate", _generate),
    ("design", _design),
    ("perturb", _perturb),
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
    """Generate the census-like file, design and apply PRAM to three key variables,
    and write ``census.csv``, ``manifest.json``, ``released.csv`` and ``summary.json`` into ``out``."""
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
