"""The report's images: their resolution and how a page embeds them (no other pramkit module needed)."""

from __future__ import annotations

import base64

#: Dots per inch of every figure of the reports.
DPI = 90

#: What draws the reports' figures, for the message when matplotlib (the ``report`` extra) is missing.
REPORT = "the HTML report"


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:image/png;base64,...`` URI.

    Parameters
    ----------
    png : bytes
        The image.

    Returns
    -------
    str
        The URI, for the ``src`` of an ``<img>``: the report embeds its figures.

    Examples
    --------
    >>> import base64
    >>> uri = data_uri(b"\\x89PNG\\r\\n\\x1a\\n")
    >>> uri
    'data:image/png;base64,iVBORw0KGgo='
    >>> base64.b64decode(uri.split(",", 1)[1]) == b"\\x89PNG\\r\\n\\x1a\\n"     # nothing lost
    True
    """
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
