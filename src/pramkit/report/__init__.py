"""The release report: privacy ledger, disclosure risk before and after, utility, provenance.

:func:`build_report` collects the numbers into a frozen :class:`ReleaseReport`;
:func:`write_report` renders it as one self-contained HTML file.  See ``docs/report.md``.
"""

from pramkit.report.build import ReleaseReport, build_report
from pramkit.report.html import render_html, write_report

__all__ = ["ReleaseReport", "build_report", "render_html", "write_report"]
