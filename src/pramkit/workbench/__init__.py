"""The release workflow step by step, for an application: open, assess, design, apply, export.

:class:`~pramkit.workbench.session.Workbench` holds one release in progress in
a private work folder; each step calls the library and returns a view of plain
tables and images (:mod:`pramkit.workbench.views`).  The design step takes
:class:`~pramkit.release.choices.DesignChoices`, the flags of ``pramkit
design`` as one value, so the export's script (:mod:`pramkit.workbench.export`)
repeats exactly what was done.  ``pramkit app`` is its page in a browser.
"""

from __future__ import annotations

from pramkit.release.choices import DesignChoices
from pramkit.workbench.session import CENSUS_ROWS, Workbench
from pramkit.workbench.source import Source, VariableInfo
from pramkit.workbench.views import ApplyView, DesignView, ExportView, RiskView

__all__ = [
           "CENSUS_ROWS",
           "ApplyView",
           "DesignChoices",
           "DesignView",
           "ExportView",
           "RiskView",
           "Source",
           "VariableInfo",
           "Workbench",
]
