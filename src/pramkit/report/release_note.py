"""A one-page release note in Five Safes terms, from public things only.

The Five Safes (Desai, Ritchie and Welpton 2016) sort the questions a data holder answers before
giving access to data: safe projects, safe people, safe settings, safe data, safe outputs.  A release
perturbed by PRAM answers the data question with a guarantee that holds whoever uses the file and
wherever; the note says so in each of the five terms, and names what the guarantee does not cover.

The note is built from the manifest, its ledger's guarantee sentence
(:func:`pramkit.ledger.release_guarantee`) and the released file's column names (read from its header
alone): never from the original data, so it may be published beside the release.

References
----------
Desai, T., Ritchie, F. and Welpton, R. (2016). Five Safes: designing data access for research.
Economics Working Paper Series 1601, University of the West of England.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pramkit.errors import ParameterError

#: The file suffixes :func:`write_release_note` writes, and the format each chooses.
NOTE_FORMATS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}


@dataclass(frozen=True)
class ReleaseNote:
    """A release note: a title and the five sections (heading and paragraphs), all public.

    Attributes
    ----------
    title : str
        The note's title (names the released file).
    sections : tuple of (str, tuple of str)
        The Five Safes, in order: each heading with its paragraphs (plain text).
    """

    title: str
    sections: tuple[tuple[str, tuple[str, ...]], ...]

    def markdown(self) -> str:
        """The note as Markdown (headings and paragraphs; list items start with ``- ``).

        Examples
        --------
        >>> print(ReleaseNote("Release note: r.csv", (("Safe data", ("one *star*", "- a_b", "- c")),)).markdown())
        # Release note: r.csv
        <BLANKLINE>
        ## Safe data
        <BLANKLINE>
        one \\*star\\*
        <BLANKLINE>
        - a\\_b
        - c
        <BLANKLINE>
        """
        lines = [f"# {_md(self.title)}", ""]
        for heading, paragraphs in self.sections:
            lines += [f"## {_md(heading)}", ""]
            for i, text in enumerate(paragraphs):
                item = text.startswith("- ")
                lines.append("- " + _md(text[2:]) if item else _md(text))
                if not (item and i + 1 < len(paragraphs) and paragraphs[i + 1].startswith("- ")):
                    lines.append("")  # a list's items stay together
        return "\n".join(lines)

    def html(self) -> str:
        """The note as one self-contained HTML page (no script, no outside resource).

        Examples
        --------
        >>> page = ReleaseNote("Release note: <r>.csv", (("Safe data", ("a & b", "- item")),)).html()
        >>> "<h1>Release note: &lt;r&gt;.csv</h1>" in page, "<li>item</li>" in page, "<p>a &amp; b</p>" in page
        (True, True, True)
        """
        body = [f"<h1>{html.escape(self.title)}</h1>"]
        for heading, paragraphs in self.sections:
            body.append(f"<h2>{html.escape(heading)}</h2>")
            items: list[str] = []
            for text in (*paragraphs, ""):
                if text.startswith("- "):
                    items.append(f"<li>{html.escape(text[2:])}</li>")
                    continue
                if items:
                    body.append("<ul>" + "".join(items) + "</ul>")
                    items = []
                if text:
                    body.append(f"<p>{html.escape(text)}</p>")
        return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title>"
                "<style>body{font-family:sans-serif;max-width:46em;margin:2em auto;line-height:1.45}"
                "h2{margin-top:1.4em}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _md(text: str) -> str:
    """Markdown text that shows ``text`` as it is (the characters Markdown reads escaped)."""
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", text)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _estimate_command(m: Any, name: str, manifest: Any, sep: str, encoding: str) -> str:
    """The ``pramkit estimate`` command of a release, runnable as printed in the folder of its files: the
    released file read as it was written (its missing codes, separator and encoding).

    Examples
    --------
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}, input={"na_values": ["-9", "N"]})
    >>> _estimate_command(m, "released data.csv", "m.json", ";", "latin-1")
    "pramkit estimate 'released data.csv' --manifest m.json --vars sex --na-values=-9,N --sep ';' --encoding latin-1"
    """
    import shlex

    from pramkit.defaults import CSV_ENCODING, CSV_SEP, NA_VALUES
    from pramkit.manifest import Manifest

    uri = "MANIFEST" if isinstance(manifest, Manifest) else Path(manifest).name
    words = ["pramkit", "estimate", name, "--manifest", uri, "--vars", m.names[0]]
    codes = [str(c) for c in (m.input or {}).get("na_values") or ()]
    if "na_values" in (m.input or {}) and tuple(codes) != tuple(NA_VALUES):
        words.append("--na-values=" + ",".join(codes))  # "=": a code may begin with "-"
    if sep != CSV_SEP:
        words += ["--sep", sep]
    if encoding != CSV_ENCODING:
        words += ["--encoding", encoding]
    return shlex.join(words)


def release_note(manifest: Any, released: Any, *, sep: str = ",", encoding: str = "utf-8") -> ReleaseNote:
    """The release note of a release: the Five Safes, from the manifest and the released file's header.

    Parameters
    ----------
    manifest : pramkit.Manifest or path
        The release's manifest.
    released : path
        The released file (CSV, Parquet, Stata, SPSS, SAS, or a folder of part files): only its name and
        its column names are read.
    sep, encoding : str
        How a CSV file is written (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    ReleaseNote
        Its title and five sections; render with :meth:`ReleaseNote.markdown` or :meth:`ReleaseNote.html`,
        write with :func:`write_release_note`.

    Raises
    ------
    ManifestError
        The manifest cannot be read.
    DataError
        The released file's columns cannot be read.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "released.csv").write_text("sex,income\\nf,10\\n")
    ...     note = release_note(m, pathlib.Path(d) / "released.csv")
    >>> note.title
    'Release note: released.csv'
    >>> [heading for heading, _ in note.sections]
    ['Safe projects', 'Safe people', 'Safe settings', 'Safe data', 'Safe outputs']
    >>> any("income" in text for text in dict(note.sections)["Safe data"])
    True
    """
    from pramkit.engine.receipt import table_columns
    from pramkit.errors import DataError
    from pramkit.ledger import release_guarantee
    from pramkit.manifest import Manifest

    m = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    published = "the manifest" if isinstance(manifest, Manifest) else f"the manifest {Path(manifest).name}"
    columns = table_columns(released, sep=sep, encoding=encoding)
    if columns is None:
        raise DataError(f"cannot read the columns of the released file {str(released)!r}: give the file "
                        "`pramkit apply` wrote (CSV, Parquet, Stata, SPSS or SAS)")
    guarantee = release_guarantee(m, columns)
    info = m.describe()
    name = Path(released).name
    perturbed = [v["name"] for v in info["variables"]]
    figure = guarantee.headline[0].upper() + guarantee.headline[1:]
    loose = list(guarantee.unperturbed or ())
    from pramkit.ledger import described_epsilon_words
    from pramkit.recode import recoding_lines

    recoded = recoding_lines(m)
    variables = tuple(f"- {v['name']}: {len(v['categories'])} categories, {v['method']}, epsilon "
                      f"{described_epsilon_words(v)}" for v in info["variables"])
    projects = (
        f"{name} is released with its variables {_and(perturbed)} perturbed by the Post-Randomisation "
        f"Method (PRAM); the probabilities of every change are published in {published} beside it, so that "
        "tables and shares of these variables can be estimated without bias.",
        "The release does not depend on what a project does with it: the guarantee below holds for any "
        "analysis. Whether a project is in the public interest is for the data holder to state; the release "
        "itself is designed for statistical tables, not for finding out about individuals.",
    )
    people = (
        "No trust in the users is assumed for the perturbed variables: the guarantee holds against anyone "
        "who reads the file and the manifest, whatever else they know, except the data holder's secret key, "
        "which is never published.",
        ("The columns released as they are (" + _and(loose) + ") are covered by no epsilon: who may read them "
         "is the data holder's decision." if loose else
         "Every column of the released file is perturbed: no column relies on who the users are."),
    )
    settings = (
        "The file and its manifest may be used in any setting: the guarantee does not rely on a secure "
        "environment. The secret key that drove the perturbation stays with the data holder: whoever holds "
        "it can undo the perturbation.",
    )
    data = (
        f"{figure}. {guarantee.sentence}",
        "Perturbed variables:",
        *variables,
        *(("Recoded before PRAM (a global recoding the data holder declared, not read from the data):",
           *(f"- {line}" for line in recoded)) if recoded else ()),
        *(("Not covered by the guarantee:", *(f"- {text}" for text in guarantee.not_covered))
          if guarantee.not_covered else ()),
        f"Columns of the released file: {_and(columns)}." if columns else "The released file has no column.",
    )
    outputs = (
        "Any output computed from the released file and the manifest alone (a table, a model, a figure) "
        "carries the same guarantee, with the same exceptions: post-processing spends no privacy budget, so "
        "what such an output shows of the perturbed variables needs no further output checking.",
        "Corrected estimates with standard errors, as printed here for the first perturbed variable (any "
        f"of {_and(perturbed)}, comma-separated): {_estimate_command(m, name, manifest, sep, encoding)} "
        "(or any software that reads the matrices of the manifest).",
        *(("Outputs that show the columns released as they are need the usual output checks.",) if loose else ()),
    )
    sections = (("Safe projects", projects), ("Safe people", people), ("Safe settings", settings),
                ("Safe data", data), ("Safe outputs", outputs))
    return ReleaseNote(f"Release note: {name}", sections)


def note_format(path: str | Path) -> str:
    """The format a release note is written in, chosen by the file's suffix (:data:`NOTE_FORMATS`).

    Raises
    ------
    ParameterError
        Another suffix.

    Examples
    --------
    >>> note_format("note.md"), note_format("NOTE.HTML")
    ('markdown', 'html')
    >>> note_format("note.pdf")
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --release-note 'note.pdf': name a Markdown (.md) or HTML (.html) file
    """
    kind = NOTE_FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        raise ParameterError(f"--release-note {str(path)!r}: name a Markdown (.md) or HTML (.html) file")
    return kind


def write_release_note(note: ReleaseNote, path: str | Path, *, force: bool = False,
                       inputs: tuple[Any, ...] = ()) -> Path:
    """Write a release note atomically, as Markdown or HTML by the suffix of ``path``.

    Parameters
    ----------
    note : ReleaseNote
        The note (:func:`release_note`).
    path : str or Path
        The file to write: ``.md`` or ``.markdown`` for Markdown, ``.html`` or ``.htm`` for HTML.
    force : bool, default False
        Replace an existing file.
    inputs : tuple of paths
        Files the note may never be (the manifest, the released file).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ParameterError
        Another suffix, or ``path`` is one of ``inputs``.
    OutputExistsError, WriteError
        As :func:`pramkit.atomic.write_text_atomic`.

    Examples
    --------
    >>> import tempfile
    >>> note = ReleaseNote("Release note: r.csv", (("Safe data", ("epsilon 1",)),))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(write_release_note(note, Path(d) / "note.md").read_text(encoding="utf-8").splitlines()[0])
    # Release note: r.csv
    """
    from pramkit.atomic import write_text_atomic

    text = note.html() if note_format(path) == "html" else note.markdown()
    return write_text_atomic(path, text, force=force, inputs=inputs)
