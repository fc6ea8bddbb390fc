"""The demo's report step: ``report.html`` beside the demo's files."""

from __future__ import annotations

from pramkit.demo import PERTURBED, DemoContext
from pramkit.report.build import build_report
from pramkit.report.html import write_report

#: Key variables of the demo's risk assessment: the perturbed ones and two more.
DEMO_KEYS = (*PERTURBED, "race", "education")


def report_step(ctx: DemoContext) -> None:
    """Build the release report of the demo and write ``report.html`` into its folder."""
    assert ctx.data is not None and ctx.manifest is not None
    report = build_report(
        ctx.data, ctx.manifest, ctx.files["released"], DEMO_KEYS,
        source=ctx.files["original"], quiet=ctx.quiet,
    )
    path = write_report(report, ctx.out / "report.html", force=ctx.force)
    ctx.files["report"] = str(path)
    after = report.risk.after
    ctx.lines.append(
        f"report    {path} (tau2 {report.risk.before.tau2:.4g} -> "
        f"{'n/a' if after is None else f'{after.tau2:.4g}'} records on {len(DEMO_KEYS)} keys, "
        f"pi = {report.risk.sampling_fraction:g} assumed)"
    )
