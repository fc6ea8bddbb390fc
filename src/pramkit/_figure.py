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
