"""pramkit's figures: matplotlib (the ``report`` extra) drawing off screen, imported when a figure is drawn.

Every figure of the reports, the risk and utility plots and the reproductions is made by
:func:`new_figure`: a :class:`matplotlib.figure.Figure` on the Agg canvas, so that no display
and no global state of ``matplotlib.pyplot`` is involved, and a missing matplotlib says which
extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
