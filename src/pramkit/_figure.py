"""pramkit's figures: matplotlib (the ``report`` extra) drawing off screen, imported when a figure is drawn.

Every figure of the reports, the risk and utility plots and the reproductions is made by
:func:`new_figure`: a :class:`matplotlib.figure.Figure` on the Agg canvas, so that no display
and no global state of ``matplotlib.pyplot`` is involved, and a missing matplotlib says which
extra to install.  The reports' figures and the privacy-utility plot are written by
:func:`png_bytes`, which draws a figure once.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

from pramkit._extras import raise_missing_extra

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def new_figure(feature: str, **kwargs: Any) -> Figure:
    """A new figure drawn by matplotlib's Agg canvas (PNG without a display).

    Parameters
    ----------
    feature : str
        What draws it, for the message when matplotlib is missing ("the HTML report").
    **kwargs
        Passed to :class:`matplotlib.figure.Figure` (``figsize``, ``layout``, ...).

    Returns
    -------
    matplotlib.figure.Figure
        The figure; ``fig.savefig(path_or_buffer, format="png")`` writes it.

    Raises
    ------
    MissingExtraError
        matplotlib is not installed: the message says ``pip install "pramkit[report]"``.

    Examples
    --------
    >>> import io
    >>> fig = new_figure("an example", figsize=(2, 1))
    >>> fig.subplots().plot([0, 1], [1, 0])  # doctest: +ELLIPSIS
    [<matplotlib.lines.Line2D object at ...>]
    >>> buffer = io.BytesIO()
    >>> fig.savefig(buffer, format="png")
    >>> buffer.getvalue()[:4]
    b'\\x89PNG'
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as exc:
        raise_missing_extra(exc, "report", feature)
    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure as a PNG at its own resolution (``fig.dpi``), drawn once.

    ``fig.savefig`` draws a figure that has a layout engine twice: once, with the rendering
    switched off, only to run the layout, and once to render.  Drawing the Agg canvas runs the
    layout engine and renders in a single pass, with the same pixels when the figure was made at
    the resolution it is written at (``new_figure(..., dpi=...)``).  An opaque figure (every
    pixel's alpha 255, as with the default white background) is written as RGB without the
    constant alpha channel: the same image, encoded faster and smaller.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        From :func:`new_figure` (on the Agg canvas).

    Returns
    -------
    bytes
        The PNG, its physical resolution ``fig.dpi`` dots per inch.

    Examples
    --------
    >>> from PIL import Image
    >>> fig = new_figure("an example", figsize=(2, 1), dpi=50, layout="constrained")
    >>> fig.subplots().plot([0, 1], [1, 0])  # doctest: +ELLIPSIS
    [<matplotlib.lines.Line2D object at ...>]
    >>> png = png_bytes(fig)
    >>> image = Image.open(io.BytesIO(png))
    >>> png[:4], image.size, image.mode
    (b'\\x89PNG', (100, 50), 'RGB')
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # new_figure's canvas
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    pixels = rgba[..., :3] if bool((rgba[..., 3] == 255).all()) else rgba
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="png", dpi=(fig.dpi, fig.dpi))
    return buf.getvalue()


def place_axes(fig: Figure, *, left: float, right: float, bottom: float, top: float, wspace: float = 0.0) -> None:
    """Place a figure's subplots with margins in inches, without a layout engine.

    A layout engine (``layout="constrained"`` or ``"tight"``) measures every tick label
    of every axes several times before the figure is drawn; for the reports' figures that
    costs more than drawing them.  Their texts are known in advance, so their margins are
    set here: ``left``, ``right``, ``bottom`` and ``top`` from the figure's edges, and
    ``wspace`` between two subplots side by side, all in inches.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, its subplots made.
    left, right, bottom, top, wspace : float
        The margins, in inches.

    Examples
    --------
    >>> fig = new_figure("an example", figsize=(4, 2))
    >>> axes = fig.subplots(1, 2)
    >>> place_axes(fig, left=0.5, right=0.1, bottom=0.4, top=0.2, wspace=0.6)
    >>> [round(float(v), 3) for v in axes[0].get_position().bounds]
    [0.125, 0.2, 0.35, 0.7]
    """
    width, height = fig.get_size_inches()
    specs = [ax.get_subplotspec() for ax in fig.axes]
    columns = max((spec.get_gridspec().ncols for spec in specs if spec is not None), default=1)
    inner = width - left - right
    axes_width = (inner - wspace * (columns - 1)) / columns
    fig.subplots_adjust(left=left / width, right=1.0 - right / width, bottom=bottom / height, top=1.0 - top / height,
                        wspace=wspace / axes_width if columns > 1 else None)


def text_boxes(fig: Figure, texts: list[str], *, size: float | str, rotation: float = 0.0) -> np.ndarray:
    """The width and height, in inches, of each of ``texts`` drawn at ``size`` points and turned by
    ``rotation`` degrees (the box around the turned text), as the figure's Agg canvas renders them.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        From :func:`new_figure` (its canvas measures the texts at its resolution).
    texts : list of str
        The texts (plain, not mathtext).
    size : float or str
        The font size in points, or as matplotlib names it (``"small"``, ...).
    rotation : float, optional
        The angle in degrees.

    Returns
    -------
    numpy.ndarray
        Shape ``(len(texts), 2)``: each text's width and height.

    Examples
    --------
    >>> fig = new_figure("an example", figsize=(2, 1), dpi=100)
    >>> (short, low), (wide, high) = text_boxes(fig, ["a", "a much longer label"], size=10)
    >>> bool(short < 0.2 < 1.0 < wide < 1.5 and low < high < 0.2)  # "l" and "g" reach above and below "a"
    True
    >>> turned = text_boxes(fig, ["a much longer label"], size=10, rotation=90)[0, 0]
    >>> bool(np.isclose(turned, high))  # turned upright, its width is the height of the text
    True
    """
    from matplotlib.font_manager import FontProperties

    if not texts:
        return np.zeros((0, 2))
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    prop = FontProperties(size=size)
    measured = {t: renderer.get_text_width_height_descent(t, prop, ismath=False)[:2] for t in dict.fromkeys(texts)}
    boxes = np.array([measured[t] for t in texts], dtype=float).reshape(-1, 2)
    angle = np.deg2rad(rotation)
    c, s = abs(np.cos(angle)), abs(np.sin(angle))
    return np.column_stack([boxes[:, 0] * c + boxes[:, 1] * s, boxes[:, 0] * s + boxes[:, 1] * c]) / fig.dpi


def text_inches(fig: Figure, texts: list[str], *, size: float | str, rotation: float = 0.0) -> tuple[float, float]:
    """The largest width and the largest height, in inches, of :func:`text_boxes` (``(0, 0)`` without texts).

    Examples
    --------
    >>> fig = new_figure("an example", figsize=(2, 1), dpi=100)
    >>> wide, high = text_inches(fig, ["a", "a much longer label"], size=10)
    >>> 1.0 < wide < 1.5 and 0.1 < high < 0.2
    True
    """
    boxes = text_boxes(fig, texts, size=size, rotation=rotation)
    return (float(boxes[:, 0].max()), float(boxes[:, 1].max())) if len(boxes) else (0.0, 0.0)


def ytick_inches(ax: Any) -> float:
    """The width in inches of the widest label of ``ax``'s y ticks, as they will be drawn: the locator's
    ticks in the axes' limits, written by its formatter (no tick is made or drawn to find them).

    Examples
    --------
    >>> fig = new_figure("an example", figsize=(2, 1), dpi=100)
    >>> ax = fig.subplots()
    >>> ax.set_ylim(0, 1000)
    (0.0, 1000.0)
    >>> 0.2 < ytick_inches(ax) < 0.5
    True
    """
    from matplotlib import rcParams

    lo, hi = sorted(ax.get_ylim())
    locs = [v for v in ax.yaxis.get_majorticklocs() if lo <= v <= hi]
    labels = ax.yaxis.get_major_formatter().format_ticks(locs)
    return text_inches(ax.figure, [t for t in labels if t], size=rcParams["ytick.labelsize"])[0]


def plain_log(axis: Any) -> None:
    """Ticks of a log-scaled ``axis`` (``ax.xaxis`` or ``ax.yaxis``, its data plotted) at 1, 2 and 5
    times the powers of ten, or over more than three decades at the powers of ten alone, written as
    plain numbers (``1``, ``20``, ``0.5``), without minor ticks: each minor tick and each label in
    mathtext (``10^2``) costs more to draw than the data.

    Examples
    --------
    >>> fig = new_figure("an example", figsize=(4, 4))
    >>> ax = fig.subplots()
    >>> ax.set_yscale("log")
    >>> ax.set_ylim(1.0, 1000.0)
    (1.0, 1000.0)
    >>> plain_log(ax.yaxis)
    >>> ax.yaxis.get_major_formatter().format_ticks([1.0, 10.0, 1000.0])
    ['1', '10', '1000']
    >>> [float(v) for v in ax.yaxis.get_majorticklocs() if 1 <= v <= 20]
    [1.0, 2.0, 5.0, 10.0, 20.0]
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax = axis.axes
    low, high = sorted(ax.get_ylim() if axis is ax.yaxis else ax.get_xlim())  # the limits the data set
    decades = np.log10(high / low) if low > 0 else np.inf
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,), numticks=12))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
