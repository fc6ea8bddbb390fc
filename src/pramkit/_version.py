"""pramkit's version, as every manifest, receipt and report records it (``pramkit.__version__``).

The build (setup.py, setuptools-scm) derives it from the git tags and writes it into
``_build_version.py``; an installed pramkit, from a wheel, an sdist or ``pip install -e``,
always has that file.  A source tree put on the path without being built has not: its version
is ``0+unknown`` (PEP 440: no version can be claimed for it).
"""

from __future__ import annotations

try:
    from pramkit._build_version import __version__ as _built
except ImportError:  # a source tree that was never built
    _built = "0+unknown"

#: The version of this pramkit (PEP 440), e.g. ``0.1.0`` or ``0.1.1.dev3+g1a2b3c4``.
__version__: str = _built
