"""The release report: privacy ledger, disclosure risk before and after, utility, provenance.

:func:`build_report` collects the numbers of the internal report (original and released file) into a
frozen :class:`ReleaseReport`, :func:`build_public_report` those of the public report (manifest and
released file only);
:func:`write_report` renders it as one self-contained HTML file.  :func:`release_note` writes the
one-page release note in Five Safes terms (manifest and the released file's columns only).  See ``docs/report.md``.
"""

from pramkit.report.build import ReleaseReport, build_public_report, build_report
from pramkit.report.html import render_html, write_report
from pramkit.report.release_note import ReleaseNote, release_note, write_release_note

__all__ = ["ReleaseNote", "ReleaseReport", "build_public_report", "build_report", "release_note", "render_html",
           "write_release_note", "write_report"]
