"""The internal report's section on what makes records risky: contributions before and after PRAM.

A bar chart with a group of bars per key variable (its share of the SUDA score
and of tau2 before PRAM, on the released file, and the SUDA share expected over
the perturbation), a table of the levels that carry the most special-unique
risk, and one plain sentence per top level
(:func:`pramkit.risk.contributions.contribution_sentences`).  The numbers come
from :func:`pramkit.risk.contributions.release_contributions`; the section is
private, as the rest of the internal report.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

import numpy as np

from pramkit._figure import new_figure, png_bytes
from pramkit.report.images import DPI, REPORT, data_uri
from pramkit.risk.contributions import ReleaseContributions

#: Levels shown in the table.
TOP_LEVELS = 10


def contributions_chart(result: ReleaseContributions) -> bytes:
    """Grouped bars per key variable: its SUDA and tau2 contributions before and after PRAM (percent).

    Parameters
    ----------
    result : ReleaseContributions
        From :func:`pramkit.risk.contributions.release_contributions`.

    Returns
    -------
    bytes
        A PNG at :data:`pramkit.report.images.DPI` dots per inch.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.contributions import release_contributions
    >>> data = pd.DataFrame({"a": [2, 1, 1, 3], "b": [0, 3, 0, 0]})
    >>> png = contributions_chart(release_contributions(data, ["a", "b"], sampling_fraction=0.1))
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """

    before = result.before.variables
    series = [("SUDA, before", before["suda"], "#4c72b0"), ("tau2, before", before["tau2"], "#8da0cb")]
    if result.after is not None:
        series.append(("SUDA, released file", result.after.variables["suda"], "#c0c0c0"))
        series.append(("tau2, released file", result.after.variables["tau2"], "#e0e0e0"))
    if result.expected is not None:
        series.append(("SUDA, expected after PRAM", result.expected.variables["suda"], "#dd8452"))
    labels = [str(v) for v in before["variable"]]
    x = np.arange(len(labels))
    width = 0.8 / len(series)
    fig = new_figure(REPORT, figsize=(max(6.0, 1.1 * len(labels) + 2.0), 3.6), dpi=DPI,
                     layout="constrained")
    ax = fig.subplots()
    for i, (label, values, color) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, np.nan_to_num(values.to_numpy(float)), width,
               label=label, color=color)
    ax.set_xticks(x, labels, rotation=30 if len(labels) > 5 else 0, ha="right" if len(labels) > 5 else "center")
    ax.set_ylabel("contribution [% of the measure]")
    ax.set_title("Contribution of each key variable")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize="small", loc="upper center", ncols=min(3, len(series)),
              bbox_to_anchor=(0.5, -0.18))
    return png_bytes(fig)


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.1f} %"


def contributions_section(result: ReleaseContributions,
                          table: Callable[[Sequence[str], list[list[str]], Sequence[bool]], str]) -> str:
    """The section's HTML: the chart, the table of top levels, the sentences.

    Parameters
    ----------
    result : ReleaseContributions
        From :func:`pramkit.risk.contributions.release_contributions`.
    table : callable
        The report's table writer ``(header, rows of escaped cells, numeric columns) -> HTML``.

    Returns
    -------
    str
        HTML (escaped).

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.risk.contributions import release_contributions
    >>> data = pd.DataFrame({"a": [2, 1, 1, 3], "b": [0, 3, 0, 0]})
    >>> from pramkit.report.html import _table
    >>> body = contributions_section(release_contributions(data, ["a", "b"], sampling_fraction=0.1), _table)
    >>> body.count("<img"), body.count("<li>"), "a = 2" in body
    (1, 3, True)
    """
    e = html.escape
    # rows as dicts of column -> value (the rows' named tuples type every field as any pandas scalar)
    after = {} if result.after is None else {(r["variable"], r["level"]): r
                                             for r in result.after.levels.to_dict("records")}
    expected = {} if result.expected is None else {(r["variable"], r["level"]): r
                                                   for r in result.expected.levels.to_dict("records")}
    top = result.before.levels.sort_values("suda", ascending=False, kind="stable").head(TOP_LEVELS)
    rows = []
    for r in top.to_dict("records"):
        a, x = after.get((r["variable"], r["level"])), expected.get((r["variable"], r["level"]))
        rows.append([e(str(r["variable"])), e(str(r["level"])), f"{r['records']:,}", _pct(r["suda"]),
                     "n/a" if x is None else _pct(x["suda"]) + (f" &plusmn; {x['se']:.1f}" if x["se"] > 0 else ""),
                     _pct(r["tau2"]), "n/a" if a is None else _pct(a["tau2"]),
                     _pct(r["individual"]), "n/a" if a is None else _pct(a["individual"]),
                     e(str(r["merged_into"]))])
    header = ["variable", "level", "records", "SUDA before", "SUDA expected after", "tau2 before", "tau2 after",
              "individual risk before", "individual risk after", "merged into"]
    levels = table(header, rows, [False, False, True, True, True, True, True, True, True, False])
    e_note = ""
    if result.expected is not None:
        e_note = (f" The SUDA shares after PRAM are expected over the perturbation ({result.expected.method}, "
                  f"{result.expected.outcomes} released files; &plusmn; one Monte Carlo standard error).")
    sentences = "".join(f"<li>{e(s)}</li>" for s in result.sentences)
    return (
        f'<img alt="contributions of the key variables" src="{data_uri(contributions_chart(result))}">'
        "<p>SUDA: the share of the total SUDA score held by minimal sample uniques (MSUs) containing the "
        "variable, or containing it in records with the level (an MSU counts for each of its variables, so "
        "the variables add up to at least 100 %). tau1, tau2, individual risk: the change when the variable "
        "is left out of the keys, or the level merged into the most frequent other level, in percent of the "
        "measure." + e_note + "</p>" + levels + f"<ul>{sentences}</ul>"
    )
