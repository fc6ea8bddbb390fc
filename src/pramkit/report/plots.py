"""The report's figures as PNG bytes, and their embedding as ``data:`` URIs.

Figures are drawn with Matplotlib's Agg canvas (no display, no global
backend state) and embedded in the HTML as base64, so the report is one
self-contained file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pramkit._figure import new_figure, place_axes, png_bytes, text_boxes, text_inches, ytick_inches
from pramkit.report.build import VariableUtility
from pramkit.report.images import DPI, REPORT
from pramkit.utility import PrivacyUtilityCurve
from pramkit.utility.curve import curve_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def frequency_chart(utility: VariableUtility) -> bytes:
    """Grouped bars per category: original, released and estimated shares (%),
    the estimate with its 95 % interval as an error bar (:func:`frequency_figure` as a PNG).

    Parameters
    ----------
    utility : VariableUtility
        A variable of :attr:`ReleaseReport.utility`; the original bars are left out when its
        original shares are unknown (the public report).

    Returns
    -------
    bytes
        A PNG at :data:`DPI` dots per inch.

    Examples
    --------
    >>> import pandas as pd
    >>> from pramkit.report.build import VariableUtility
    >>> shares = pd.DataFrame({"category": ["f", "m"], "original": [50.0, 50.0], "released": [48.0, 52.0],
    ...                        "estimate": [46.0, 54.0], "ci_low": [40.0, 48.0], "ci_high": [52.0, 60.0]})
    >>> png = frequency_chart(VariableUtility("sex", 0.69, 0.1, shares, None, ""))
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    return png_bytes(frequency_figure(utility))


def frequency_figure(utility: VariableUtility) -> Figure:
    """The figure of :func:`frequency_chart`, at :data:`DPI`, its margins set for its labels."""
    f = utility.frequencies
    labels = ["(missing)" if c is None or (not isinstance(c, str) and bool(pd.isna(c))) else str(c)
              for c in f["category"]]
    x = np.arange(len(labels))
    width = 0.27
    fig = new_figure(REPORT, figsize=(max(6.0, 0.85 * len(labels) + 2.0), 3.4), dpi=DPI)  # refuses without matplotlib
    from matplotlib import rcParams

    ax = fig.subplots()
    if f["original"].notna().any():
        ax.bar(x - width, f["original"], width, label="original", color="#4c72b0")
    ax.bar(x, f["released"], width, label="released", color="#c0c0c0")
    err = np.vstack([f["estimate"] - f["ci_low"], f["ci_high"] - f["estimate"]])
    ax.bar(x + width, f["estimate"], width, yerr=err, capsize=3, label="estimated (95 % CI)",
           color="#dd8452", error_kw={"elinewidth": 1})
    turned = 30 if len(labels) > 5 else 0
    ax.set_xticks(x, labels, rotation=turned, ha="right" if turned else "center")
    ax.set_ylabel("share of records [%]")
    ax.set_title(f"{utility.name}: original, released and estimated frequencies")
    ax.grid(True, axis="y", alpha=0.3)
    highest = float(np.nanmax(np.concatenate([f["original"], f["released"], f["ci_high"]])))
    ax.set_ylim(0, 1.22 * highest if highest > 0 else 1)
    ax.legend(frameon=False, fontsize="small", loc="upper center", ncols=3)
    # margins in inches (place_axes): the labels below, turned, and the first of them reaching left of the axes
    boxes = text_boxes(fig, labels, size=rcParams["xtick.labelsize"], rotation=turned)
    left = 0.45 + ytick_inches(ax)
    if turned:  # a turned label ends at its tick: it reaches left by its width less the tick's distance in
        first, last = ax.get_xlim()
        span = fig.get_size_inches()[0] - left - 0.15
        left = max(left, float(np.max(boxes[:, 0] - (x - first) / (last - first) * span)) + 0.1)
    place_axes(fig, left=left, right=0.15, bottom=0.45 + float(boxes[:, 1].max()), top=0.4)
    return fig


def curve_chart(curve: PrivacyUtilityCurve) -> bytes:
    """The privacy-utility curve as :func:`pramkit.utility.plot_privacy_utility` draws it, as PNG bytes.

    Parameters
    ----------
    curve : PrivacyUtilityCurve
        From :func:`pramkit.utility.privacy_utility_curve`.

    Returns
    -------
    bytes
        The PNG at :data:`pramkit.utility.curve.CURVE_DPI` dots per inch, the axes labelled
        "epsilon of the variable [nats]".

    Examples
    --------
    >>> from pramkit.utility import privacy_utility_curve
    >>> curve = privacy_utility_curve([0.5, 0.3, 0.2], [0.5, 1.0, 2.0], n=1000, chosen=1.0)
    >>> png = curve_chart(curve)
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    return png_bytes(curve_figure(curve, xlabel="epsilon of the variable [nats]"))


#: Largest number of categories drawn as a heat map (a larger matrix is described, not drawn).
HEATMAP_MAX = 60


def matrix_heatmap(name: str, matrix: np.ndarray, categories: list[str]) -> bytes:
    """A PRAM matrix as a heat map: row k (original value) and column j (released value) coloured by M[k, j].

    Parameters
    ----------
    name : str
        The variable, for the title.
    matrix : numpy.ndarray
        The S x S matrix (S at most :data:`HEATMAP_MAX`).
    categories : list of str
        The category labels, in the matrix's order.

    Returns
    -------
    bytes
        A PNG at :data:`DPI` dots per inch; entries written in the cells when S is at most 12.

    Examples
    --------
    >>> png = matrix_heatmap("sex", np.array([[0.9, 0.1], [0.2, 0.8]]), ["f", "m"])
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    return png_bytes(heatmap_figure(name, matrix, categories))


def heatmap_figure(name: str, matrix: np.ndarray, categories: list[str]) -> Figure:
    """The figure of :func:`matrix_heatmap`, at :data:`DPI`, its margins set for its labels."""

    s = len(categories)
    side = min(7.5, 2.6 + 0.32 * s)
    fig = new_figure(REPORT, figsize=(side + 1.2, side), dpi=DPI)  # refuses without matplotlib
    from matplotlib import rcParams

    ax = fig.subplots()
    image = ax.imshow(matrix, cmap="Blues", vmin=0.0, vmax=1.0)
    ticks = np.arange(s)
    small = s <= 12
    named = categories if s <= 30 else []
    size = "small" if small else "x-small"
    ax.set_xticks(ticks, named, rotation=90, fontsize=size)
    ax.set_yticks(ticks, named, fontsize=size)
    if small:
        for k in range(s):
            for j in range(s):
                ax.text(j, k, f"{matrix[k, j]:.2f}", ha="center", va="center", fontsize="x-small",
                        color="white" if matrix[k, j] > 0.6 else "black")
    ax.set_xlabel("released value j")
    ax.set_ylabel("original value k")
    ax.set_title(f"{name}: M[k, j] = P(released j | original k)")
    # margins in inches (place_axes): the names beside and below (turned), then the colour bar's room
    wide = text_inches(fig, named, size=size)[0] if named else 0.0
    fig.set_size_inches(side + 1.2 + wide, side + wide)  # the names take room of their own, not the matrix's
    tick = rcParams["xtick.major.size"] / 72 + 0.05
    place_axes(fig, left=0.5 + tick + wide, right=0.15, bottom=0.5 + tick + wide, top=0.4)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig
